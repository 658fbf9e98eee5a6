//! A verified mirror's folded state, kept by this machine beside the fetch record so a
//! `mirror status` folds each mirrored line once (MIRROR.md §7, "What a status reads
//! again"). The file is a cache, never a verdict: the verdict is the fetch's, and the
//! lines are the verified copy's. It is used only for the very commit it names (git's
//! object id is the hash of the commit's content, so the same id is the same lines), or as
//! the start of a fold of a later commit whose segments hold its segments unchanged by id
//! (the last one as a byte prefix), as a fetch resumes from its verified copy. A file that
//! is missing, damaged (its digest), of another journal or another commit, or whose state
//! disagrees with the mirror head it names, is read as absent: the whole mirror is folded.
//!
//! File layout: `ABCDMFS1` (8 bytes) | BLAKE3 of the CBOR body (32 bytes) | CBOR body.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fold::FoldedState;
use crate::git::objects::{Batch, GitError, Repo};
use crate::journal::format::{Event, Hash};

use super::read::{Walk, WalkError, each_segment, read_segment, walk_segment};
use super::{MirrorCommit, MirrorMeta, ShapeError, read_commit_in};

/// The folder of the repository's home folder that holds one file per remote and mirror:
/// `mirror-folded/<remote>/<journal-id>.cbor`.
pub const FOLDED_DIR: &str = "mirror-folded";
/// A kept state is read this far at most (a checkpoint's bound, for the same state): a
/// longer file is cut there, fails its digest, and the mirror is folded whole.
pub const FOLDED_MAX_BYTES: u64 = 64 << 20;
/// The `format` a kept state names.
pub const FOLDED_FORMAT: &str = "abcd/mirror-folded/v1";
const MAGIC: &[u8; 8] = b"ABCDMFS1";
const DIGEST_CONTEXT: &str = "abcd mirror folded state v1 body digest";

/// What is kept: the mirror commit folded, its claims, its last segment (to resume a fold
/// of a later commit inside it), and the state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Kept {
    format: String,
    journal_id: String,
    commit: String,
    meta: MirrorMeta,
    last_segment: String,
    last_segment_id: String,
    last_segment_len: u64,
    state: FoldedState,
}

/// Where the state of `journal_id`'s mirror from `remote` is kept under `home`.
pub fn kept_path(home: &Path, remote: &str, journal_id: &str) -> PathBuf {
    home.join(FOLDED_DIR).join(crate::git::objects::remote_part(remote)).join(format!("{journal_id}.cbor"))
}

fn encode(kept: &Kept) -> Vec<u8> {
    let mut body = Vec::new();
    ciborium::into_writer(kept, &mut body).expect("CBOR encoding into a Vec cannot fail");
    let digest = blake3::Hasher::new_derive_key(DIGEST_CONTEXT).update(&body).finalize();
    [MAGIC.as_slice(), digest.as_bytes(), &body].concat()
}

/// The kept state of `journal_id`, when the bytes are one whole and self-consistent: the
/// digest holds, the journal is the one asked for, and the state ends on the head its
/// claims name.
fn decode(bytes: &[u8], journal_id: &str) -> Option<Kept> {
    let (magic, rest) = bytes.split_at_checked(MAGIC.len())?;
    let (digest, body) = rest.split_at_checked(32)?;
    if magic != MAGIC || blake3::Hasher::new_derive_key(DIGEST_CONTEXT).update(body).finalize().as_bytes() != digest {
        return None;
    }
    let kept: Kept = ciborium::from_reader(body).ok()?;
    let head = Hash::from_hex(kept.meta.head_hash.as_bytes())?;
    let consistent = kept.format == FOLDED_FORMAT
        && kept.journal_id == journal_id
        && kept.meta.journal_id == journal_id
        && kept.state.journal.events == kept.meta.head_seq.checked_add(1)?
        && kept.state.journal.last_hash == Some(head)
        && crate::fold::cached_state_passes(&kept.state);
    consistent.then_some(kept)
}

/// The state kept at `path` for `journal_id`, read up to [`FOLDED_MAX_BYTES`]: a longer
/// file is cut there and fails its digest.
fn read_kept(path: &Path, journal_id: &str) -> Option<Kept> {
    crate::platform::fs::read_regular(path, FOLDED_MAX_BYTES).ok().and_then(|b| decode(&b, journal_id))
}

/// Why a mirror's state could not be had.
#[derive(Debug, thiserror::Error)]
pub enum FoldError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{0}")]
    Broken(String),
}

impl From<ShapeError> for FoldError {
    fn from(e: ShapeError) -> FoldError {
        match e {
            ShapeError::Git(g) => FoldError::Git(g),
            ShapeError::Bad(why) => FoldError::Broken(why),
        }
    }
}

impl From<WalkError> for FoldError {
    fn from(e: WalkError) -> FoldError {
        match e {
            WalkError::Git(g) => FoldError::Git(g),
            WalkError::Broken(why) => FoldError::Broken(why),
        }
    }
}

/// The claims and the folded state of the verified mirror commit `commit` of
/// `journal_id` from `remote`: from the state kept under `home` when it names `commit`
/// (no git child at all), else folded from the kept state's end when `commit` holds its
/// segments, else from genesis; then kept for the next call. Every object read comes
/// through one `git cat-file --batch-command` child.
pub fn state_of(repo: &Repo, home: &Path, remote: &str, journal_id: &str, commit: &str) -> Result<(MirrorMeta, FoldedState), FoldError> {
    let path = kept_path(home, remote, journal_id);
    let kept = read_kept(&path, journal_id);
    if let Some(k) = kept.as_ref().filter(|k| k.commit == commit) {
        return Ok((k.meta.clone(), k.state.clone()));
    }
    let mut batch = Batch::new(repo);
    let mirror = read_commit_in(&mut batch, commit)?;
    let resumed = match kept {
        Some(k) => resume(&mut batch, k, &mirror)?,
        None => None,
    };
    let (state, last_len) = match resumed {
        Some(done) => done,
        None => fold_from(&mut batch, &mirror, FoldedState::default(), Walk::default(), 0, 0, None)?,
    };
    let head = Hash::from_hex(mirror.meta.head_hash.as_bytes());
    if Some(state.journal.events) != mirror.meta.head_seq.checked_add(1) || state.journal.last_hash != head || head.is_none() {
        return Err(FoldError::Broken("its segments do not end on the head mirror.json names".into()));
    }
    let last = mirror.segments.last().expect("a mirror commit holds a segment");
    let kept = Kept {
        format: FOLDED_FORMAT.into(),
        journal_id: journal_id.into(),
        commit: commit.into(),
        meta: mirror.meta.clone(),
        last_segment: last.name.clone(),
        last_segment_id: last.id.clone(),
        last_segment_len: last_len,
        state,
    };
    // A cache: a file that cannot be written only means the next status folds again.
    if let Some(dir) = path.parent()
        && crate::platform::fs::create_dir_all(dir, 0o700).is_ok()
    {
        let _ = crate::journal::storage::write_atomic(&crate::journal::storage::RealDisk, &path, &encode(&kept), false);
    }
    Ok((kept.meta, kept.state))
}

/// The fold of `new` continued from `kept` when `new` holds the kept commit's segments
/// (every one but its last under the same name with the same blob id, the last a byte
/// prefix of `new`'s of the same name): only what is new is read. None when it does not,
/// or when the kept commit cannot be read (the whole mirror is folded then).
fn resume(batch: &mut Batch<'_>, kept: Kept, new: &MirrorCommit) -> Result<Option<(FoldedState, u64)>, FoldError> {
    if kept.meta.scope != new.meta.scope || kept.meta.head_seq > new.meta.head_seq {
        return Ok(None);
    }
    let old = match read_commit_in(batch, &kept.commit) {
        Ok(m) => m,
        Err(ShapeError::Git(g)) => return Err(g.into()),
        Err(ShapeError::Bad(_)) => return Ok(None),
    };
    let Some((old_last, old_full)) = old.segments.split_last() else { return Ok(None) };
    if old.meta != kept.meta || old_last.name != kept.last_segment || old_last.id != kept.last_segment_id {
        return Ok(None);
    }
    let same = old_full.iter().zip(&new.segments).all(|(o, n)| o.name == n.name && o.id == n.id);
    let index = old_full.len();
    let Some(new_last) = new.segments.get(index).filter(|n| same && n.name == old_last.name) else { return Ok(None) };
    let from = kept.last_segment_len;
    // The kept state's head is the chain position the next line follows.
    let Some(head) = Hash::from_hex(kept.meta.head_hash.as_bytes()) else { return Ok(None) };
    let walk = Walk { position: Some((kept.meta.head_seq, head)), bytes: kept.meta.bytes, ..Walk::default() };
    let first = if new_last.id == old_last.id {
        None
    } else {
        let (old_bytes, new_bytes) = (read_segment(batch, &old_last.id)?, read_segment(batch, &new_last.id)?);
        if old_bytes.len() as u64 != from || !new_bytes.starts_with(&old_bytes) {
            return Ok(None);
        }
        Some(new_bytes)
    };
    let folded = fold_from(batch, new, kept.state, walk, index, from as usize, first)?;
    Ok(Some(folded))
}

/// Folds `mirror`'s lines onto `state` from byte `from` of segment `index` (whose bytes
/// are `first` when the caller read them; a segment wholly folded already when None and
/// `from` is its length), each line verified and chained onto `walk` as it goes. Returns
/// the state and the length of the last segment.
fn fold_from(
    batch: &mut Batch<'_>,
    mirror: &MirrorCommit,
    mut state: FoldedState,
    mut walk: Walk,
    index: usize,
    from: usize,
    first: Option<Vec<u8>>,
) -> Result<(FoldedState, u64), FoldError> {
    let mut fold = |event: &Event| {
        // A redacted line (MIRROR.md §11) is not in the mirror: the fold steps over its seq
        // as over any seq it cannot read, chained by the next line's prev.
        let at = state.journal.events;
        if at > 0 && event.seq > at {
            crate::fold::fold_lost(&mut state, at, event.seq - 1, event.prev);
        }
        crate::fold::fold_event(&mut state, event);
    };
    let mut last_len = from as u64;
    let mut rest = mirror.segments.get(index..).unwrap_or_default();
    if from > 0 || first.is_some() {
        let Some((entry, after)) = rest.split_first() else { return Err(FoldError::Broken("no segment to resume in".into())) };
        if let Some(bytes) = first {
            walk_segment(&bytes, &entry.name, from, &mut walk, &mut fold)?;
            last_len = bytes.len() as u64;
        }
        rest = after;
    }
    each_segment(batch, rest, |entry, bytes| {
        last_len = bytes.len() as u64;
        walk_segment(&bytes, &entry.name, 0, &mut walk, &mut fold)
    })?;
    Ok((state, last_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept() -> Kept {
        let mut state = FoldedState::default();
        state.journal.events = 1;
        state.journal.last_hash = Some(Hash([7; 32]));
        Kept {
            format: FOLDED_FORMAT.into(),
            journal_id: "0".repeat(32),
            commit: "c".repeat(40),
            meta: MirrorMeta {
                format: super::super::MIRROR_FORMAT.into(),
                journal_id: "0".repeat(32),
                scope: crate::event::Scope::Machine {},
                repository: "r".repeat(40),
                machine: "m".into(),
                path: "/p".into(),
                head_seq: 0,
                head_hash: Hash([7; 32]).to_hex(),
                head_time: "2026-12-06T00:00:00.000Z".into(),
                bytes: 10,
            },
            last_segment: super::super::segment_name(0),
            last_segment_id: "b".repeat(40),
            last_segment_len: 10,
            state,
        }
    }

    #[test]
    fn a_kept_state_of_exactly_the_most_bytes_is_read_and_one_byte_more_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.cbor");
        let mut k = kept();
        // The path claim pads the file; its CBOR length header is 5 bytes at either size.
        k.meta.path = "p".repeat(70_000);
        let overhead = encode(&k).len() as u64 - 70_000;
        for (extra, read) in [(0u64, true), (1, false)] {
            k.meta.path = "p".repeat((FOLDED_MAX_BYTES - overhead + extra) as usize);
            let bytes = encode(&k);
            assert_eq!(bytes.len() as u64, FOLDED_MAX_BYTES + extra);
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(read_kept(&path, &k.journal_id).is_some(), read, "{} bytes", bytes.len());
        }
    }

    #[test]
    fn a_kept_state_reads_back_only_whole_for_its_journal_and_its_head() {
        let k = kept();
        let bytes = encode(&k);
        assert_eq!(decode(&bytes, &k.journal_id), Some(k.clone()));
        assert_eq!(decode(&bytes, &"1".repeat(32)), None, "another journal's");
        for at in [0, 8, 40, bytes.len() - 1] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1;
            assert_eq!(decode(&damaged, &k.journal_id), None, "a byte changed at {at}");
        }
        assert_eq!(decode(&bytes[..bytes.len() - 1], &k.journal_id), None, "cut short");
        let mut off_head = k.clone();
        off_head.meta.head_seq = 1;
        assert_eq!(decode(&encode(&off_head), &k.journal_id), None, "a state that does not end on the head named");
        let mut other_hash = k;
        other_hash.meta.head_hash = Hash([8; 32]).to_hex();
        assert_eq!(decode(&encode(&other_hash), &other_hash.journal_id.clone()), None, "a state whose last hash is not the head's");
    }
}
