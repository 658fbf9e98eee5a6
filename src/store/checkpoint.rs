//! CBOR checkpoints: the folded state after a given line, so a reader folds only what
//! came after it. A checkpoint is a cache: it is used only when its own digest holds and
//! the journal line it names verifies with the hash it records; otherwise it is ignored.
//!
//! File layout: `ABCDCKP1` (8 bytes) | BLAKE3 of the CBOR body (32 bytes) | CBOR body.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fold::FoldedState;
use crate::journal::format::Hash;
use crate::journal::scan::Head;
use crate::journal::storage::{self, Storage, StorageFile};

/// A checkpoint is written after every this many events.
pub const CHECKPOINT_EVERY_EVENTS: u64 = 1000;
/// Checkpoint files kept; older ones are removed after a new one is written.
pub const CHECKPOINTS_KEPT: usize = 3;
/// The largest checkpoint file read.
pub const MAX_CHECKPOINT_BYTES: u64 = 64 << 20;
const MAGIC: &[u8; 8] = b"ABCDCKP1";
const DIGEST_CONTEXT: &str = "abcd checkpoint v1 body digest";
pub const CHECKPOINT_FORMAT: &str = "abcd/checkpoint/v4";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub format: String,
    pub journal_id: String,
    /// The last event folded into `state`.
    pub seq: u64,
    pub hash: Hash,
    /// Offset of that event's line, and of the line after it.
    pub line_offset: u64,
    pub next_offset: u64,
    pub state: FoldedState,
}

impl Checkpoint {
    pub fn head(&self) -> Head {
        Head { seq: self.seq, hash: self.hash, offset: self.line_offset, end: self.next_offset }
    }
}

pub fn path_for(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq}.cbor"))
}

pub fn encode(cp: &Checkpoint) -> Vec<u8> {
    let mut body = Vec::new();
    ciborium::into_writer(cp, &mut body).expect("CBOR encoding into a Vec cannot fail");
    let digest = blake3::Hasher::new_derive_key(DIGEST_CONTEXT).update(&body).finalize();
    let mut out = Vec::with_capacity(8 + 32 + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(digest.as_bytes());
    out.extend_from_slice(&body);
    out
}

/// Why a checkpoint was not used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointRejected {
    #[error("it cannot be read: {0}")]
    Unreadable(String),
    #[error("it is not a v1 checkpoint file")]
    NotACheckpoint,
    #[error("its digest does not match its body")]
    DigestMismatch,
    #[error("its body does not decode: {0}")]
    Undecodable(String),
    #[error("it belongs to journal {0}")]
    OtherJournal(String),
    #[error("the journal line it names (seq {seq} at byte {offset}) does not verify with its hash")]
    LineMismatch { seq: u64, offset: u64 },
}

pub fn decode(bytes: &[u8]) -> Result<Checkpoint, CheckpointRejected> {
    if bytes.len() < 40 || &bytes[..8] != MAGIC {
        return Err(CheckpointRejected::NotACheckpoint);
    }
    let body = &bytes[40..];
    let digest = blake3::Hasher::new_derive_key(DIGEST_CONTEXT).update(body).finalize();
    if digest.as_bytes() != &bytes[8..40] {
        return Err(CheckpointRejected::DigestMismatch);
    }
    let cp: Checkpoint = ciborium::from_reader(body).map_err(|e| CheckpointRejected::Undecodable(e.to_string()))?;
    if cp.format != CHECKPOINT_FORMAT || cp.state.journal.events != cp.seq + 1 || cp.state.journal.last_hash != Some(cp.hash) {
        return Err(CheckpointRejected::Undecodable("its fields disagree with each other".into()));
    }
    // Its digest has no key: what a reader may show from it is checked as the fold would.
    if !crate::fold::cached_state_passes(&cp.state) {
        return Err(CheckpointRejected::Undecodable("it holds what the fold would refuse".into()));
    }
    Ok(cp)
}

/// Checks that the journal line a checkpoint names is there and verifies (O(1)).
pub fn matches_journal(cp: &Checkpoint, journal_id: &str, file: &dyn StorageFile) -> io::Result<Result<(), CheckpointRejected>> {
    if cp.journal_id != journal_id {
        return Ok(Err(CheckpointRejected::OtherJournal(cp.journal_id.clone())));
    }
    Ok(if crate::journal::scan::line_is_at(file, cp.head())? {
        Ok(())
    } else {
        Err(CheckpointRejected::LineMismatch { seq: cp.seq, offset: cp.line_offset })
    })
}

/// Checkpoint files in the folder, newest (highest seq) first.
pub fn list(storage: &dyn Storage, dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut found: Vec<(u64, PathBuf)> = storage
        .list_dir(dir)?
        .into_iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?;
            let seq = name.strip_suffix(".cbor")?.parse().ok()?;
            Some((seq, p))
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    Ok(found)
}

pub fn load(storage: &dyn Storage, path: &Path) -> io::Result<Result<Checkpoint, CheckpointRejected>> {
    let bytes = storage::read_small(storage, path, MAX_CHECKPOINT_BYTES)?;
    Ok(decode(&bytes))
}

/// The newest checkpoint that is intact and matches the journal, if any.
pub fn newest_usable(
    storage: &dyn Storage,
    dir: &Path,
    journal_id: &str,
    file: &dyn StorageFile,
    newer_than: Option<u64>,
) -> io::Result<Option<Checkpoint>> {
    newest_usable_where(storage, dir, journal_id, file, newer_than, |_| Ok(true))
}

/// [`newest_usable`], of the checkpoints `also` accepts too.
pub fn newest_usable_where(
    storage: &dyn Storage,
    dir: &Path,
    journal_id: &str,
    file: &dyn StorageFile,
    newer_than: Option<u64>,
    mut also: impl FnMut(&Checkpoint) -> io::Result<bool>,
) -> io::Result<Option<Checkpoint>> {
    // Newest first: once at or below `newer_than`, none left can be newer.
    for (_, path) in list(storage, dir)?.into_iter().take_while(|(seq, _)| newer_than.is_none_or(|n| *seq > n)) {
        let Ok(Ok(cp)) = load(storage, &path) else { continue };
        if matches_journal(&cp, journal_id, file)?.is_ok() && also(&cp)? {
            return Ok(Some(cp));
        }
    }
    Ok(None)
}

/// Writes a checkpoint atomically (not synced: a lost checkpoint costs only speed),
/// then prunes all but the newest `CHECKPOINTS_KEPT`.
pub fn write(storage: &dyn Storage, dir: &Path, cp: &Checkpoint) -> io::Result<PathBuf> {
    storage.create_dir_all(dir, 0o700)?;
    let path = path_for(dir, cp.seq);
    storage::write_atomic(storage, &path, &encode(cp), false)?;
    for (_, old) in list(storage, dir)?.into_iter().skip(CHECKPOINTS_KEPT) {
        let _ = storage.remove_cache_file(&old);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        let mut state = FoldedState::default();
        state.journal.events = 5;
        state.journal.last_hash = Some(Hash([3; 32]));
        Checkpoint {
            format: CHECKPOINT_FORMAT.into(),
            journal_id: "ab".repeat(16),
            seq: 4,
            hash: Hash([3; 32]),
            line_offset: 100,
            next_offset: 400,
            state,
        }
    }

    #[test]
    fn round_trips_and_any_flipped_bit_is_rejected() {
        let bytes = encode(&sample());
        assert_eq!(decode(&bytes), Ok(sample()));
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode(&bad).is_err(), "flip at {i} accepted");
        }
    }
}
