//! The journals of a repository mirrored in git refs on its own remote
//! (`journal-format/MIRROR.md`): the mirror commit's layout and limits, the segment plan,
//! building a mirror commit from a local journal, and judging a fetched one. It reads
//! journals as bytes and talks to git through `git::objects`; finding the journals and
//! pushing or fetching them is the command layer's.
//!
//! - [`segment`]: which new lines go into which segment (pure).
//! - [`build`]: a local journal's next mirror commit, written to the local object store.
//! - [`judge`]: a fetched mirror commit against the rules and the last verified copy.
//! - [`read`]: a verified mirror's events, one segment at a time.
//! - [`own`]: this machine's own mirror of a journal read back as verified lines, verbatim
//!   (what repair, restore and a mirror restart take lost lines back from).

pub mod build;
pub mod judge;
pub mod own;
pub mod read;
pub mod redaction;
pub mod segment;

use serde::{Deserialize, Serialize};

use crate::event::Scope;
use crate::git::objects::{GitError, Repo, TreeEntry};

/// The `format` of a `mirror.json` whose segments hold no redaction record: what every
/// abcd before §11 reads.
pub const MIRROR_FORMAT: &str = "abcd-mirror/1";
/// The `format` of a `mirror.json` whose segments hold a redaction record (§11): an abcd
/// that reads only `abcd-mirror/1` refuses it whole rather than misread it.
pub const MIRROR_FORMAT_REDACTED: &str = "abcd-mirror/2";
/// A segment holds at most this many lines...
pub const SEGMENT_MAX_LINES: usize = 1024;
/// ...and at most this many bytes.
pub const SEGMENT_MAX_BYTES: usize = 1 << 20;
/// Segments of one mirror at most: 64 Mi events at full segments.
pub const MIRROR_MAX_SEGMENTS: usize = 65_536;
/// `mirror.json` is read this far at most.
pub const MIRROR_JSON_MAX_BYTES: usize = 64 << 10;
/// Digits of a segment's name (a seq with leading zeros), before `.jsonl`.
pub const SEGMENT_NAME_DIGITS: usize = 20;
/// A machine's name as a mirror records it, at most.
pub const MACHINE_NAME_MAX: usize = 64;

/// A mirror commit's whole listing (`ls-tree -r -t`) is read this far at most: an entry is
/// at most about 110 bytes (a SHA-256 id and a segment's name), so a listing past this holds
/// more segments than a mirror may, and is refused before it is held in memory.
pub const LISTING_MAX_BYTES: usize = (MIRROR_MAX_SEGMENTS + 2) * 128;

/// The `segments/` tree object of a mirror is at most this many bytes (an entry is at most
/// 66: mode, name, a SHA-256 id): checked before the tree is listed, so a forged tree of a
/// million entries costs neither abcd nor its git child its size in memory.
pub const SEGMENTS_TREE_MAX_BYTES: u64 = MIRROR_MAX_SEGMENTS as u64 * 72;

/// A mirror commit's root tree (two entries) is at most this many bytes.
pub const ROOT_TREE_MAX_BYTES: u64 = 256;

/// `mirror.json`'s path is at most this long.
pub const PATH_CLAIM_MAX_BYTES: usize = 4096;

pub const JOURNALS_PREFIX: &str = "refs/abcd/journals/";
pub const SAVED_PREFIX: &str = "refs/abcd/saved/";
pub const MIRROR_JSON: &str = "mirror.json";
pub const SEGMENTS_DIR: &str = "segments";

/// The ref of a journal's mirror, here and on the remote.
pub fn journal_ref(journal_id: &str) -> String {
    format!("{JOURNALS_PREFIX}{journal_id}")
}

/// Where a fetch from `remote` puts what it found, not yet judged.
pub fn incoming_prefix(remote: &str) -> String {
    format!("refs/abcd/incoming/{}/journals/", crate::git::objects::remote_part(remote))
}

/// Where the last verified copy from `remote` stays.
pub fn verified_prefix(remote: &str) -> String {
    format!("refs/abcd/verified/{}/journals/", crate::git::objects::remote_part(remote))
}

/// Where saved-aside refs fetched from `remote` go.
pub fn remote_saved_prefix(remote: &str) -> String {
    format!("refs/abcd/remotes/{}/saved/", crate::git::objects::remote_part(remote))
}

/// A segment's blob name for the seq of its first line.
pub fn segment_name(first_seq: u64) -> String {
    format!("{first_seq:0width$}.jsonl", width = SEGMENT_NAME_DIGITS)
}

/// The first seq a segment name stands for, when it is shaped as §4 says.
pub fn segment_seq(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".jsonl")?;
    (digits.len() == SEGMENT_NAME_DIGITS && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// `mirror.json`: the pusher's claims, each checked against the segments by a verifier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MirrorMeta {
    pub format: String,
    pub journal_id: String,
    pub scope: Scope,
    pub repository: String,
    pub machine: String,
    pub path: String,
    pub head_seq: u64,
    pub head_hash: String,
    pub head_time: String,
    pub bytes: u64,
}

/// A machine name kept to printable characters and the limit: it is shown to people on
/// other machines and is a claim, never trusted.
pub fn machine_name_ok(name: &str) -> bool {
    !name.is_empty() && name.len() <= MACHINE_NAME_MAX && name.bytes().all(|b| b.is_ascii_graphic())
}

/// A mirror commit as read back: its claims and its segments in order.
#[derive(Clone, Debug)]
pub struct MirrorCommit {
    pub commit: String,
    pub meta: MirrorMeta,
    pub segments: Vec<TreeEntry>,
}

/// Why a mirror commit's shape is not §3's.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{0}")]
    Bad(String),
}

/// Checks a fetched commit's trees are small enough to list (`SEGMENTS_TREE_MAX_BYTES`)
/// before [`read_commit`] lists them.
pub fn check_sizes(repo: &Repo, commit: &str) -> Result<(), ShapeError> {
    let segments = format!("{commit}:{SEGMENTS_DIR}");
    let sizes = repo.object_sizes(&[&format!("{commit}^{{tree}}"), &segments])?;
    match &sizes[..] {
        [Some((root, root_size)), Some((kind, size))] if root == "tree" && kind == "tree" => {
            if *size > SEGMENTS_TREE_MAX_BYTES || *root_size > ROOT_TREE_MAX_BYTES {
                return Err(ShapeError::Bad(format!(
                    "its segments/ tree is over {SEGMENTS_TREE_MAX_BYTES} bytes: more segments than a mirror may hold"
                )));
            }
            Ok(())
        }
        _ => Err(ShapeError::Bad(
            "its tree holds no segments/ tree beside mirror.json, or entries other than mirror.json and segments/".into(),
        )),
    }
}

/// Reads a mirror commit's `mirror.json` and segment list, holding them to §3–§5's shape.
pub fn read_commit(repo: &Repo, commit: &str) -> Result<MirrorCommit, ShapeError> {
    let bad = |why: String| ShapeError::Bad(why);
    // One listing of the whole tree: the two root entries, then the segments under `segments/`.
    let all = repo.ls_tree_all(commit, LISTING_MAX_BYTES).map_err(|e| match e {
        GitError::Unreadable { .. } => bad(format!("its tree lists more than {MIRROR_MAX_SEGMENTS} segments")),
        other => ShapeError::Git(other),
    })?;
    let (root, under): (Vec<TreeEntry>, Vec<TreeEntry>) = all.into_iter().partition(|e| !e.name.contains('/'));
    let names: Vec<(&str, &str)> = root.iter().map(|e| (e.name.as_str(), e.kind.as_str())).collect();
    if names != [(MIRROR_JSON, "blob"), (SEGMENTS_DIR, "tree")] {
        return Err(bad(format!("its tree holds {} entries other than mirror.json and segments/", root.len())));
    }
    let mut segments = Vec::with_capacity(under.len());
    for mut e in under {
        let name = e.name.strip_prefix("segments/").filter(|n| !n.contains('/')).map(str::to_string);
        match name {
            Some(n) if e.kind == "blob" && e.mode == "100644" && segment_seq(&n).is_some() => {
                e.name = n;
                segments.push(e);
            }
            _ => {
                return Err(bad(format!("segments/ holds {}, not a segment named <20 digits>.jsonl", crate::secrets::shown_name(&e.name))));
            }
        }
    }
    if segments.is_empty() || segments.len() > MIRROR_MAX_SEGMENTS {
        return Err(bad(format!("it holds {} segments; a mirror holds 1 to {MIRROR_MAX_SEGMENTS}", segments.len())));
    }
    let json = repo.read_blob(&root[0].id, MIRROR_JSON_MAX_BYTES).map_err(|e| match e {
        GitError::Unreadable { .. } => bad(format!("mirror.json is over {MIRROR_JSON_MAX_BYTES} bytes")),
        other => ShapeError::Git(other),
    })?;
    // serde's own words can quote the forged value or field name: only a missing field (one
    // of §5's own names) is named.
    let meta: MirrorMeta = serde_json::from_slice(&json).map_err(|e| {
        let said = e.to_string();
        let what = if said.starts_with("missing field") {
            said.split(" at line").next().unwrap_or("missing field").to_string()
        } else if said.starts_with("unknown field") {
            "an unknown field".to_string()
        } else {
            "not JSON, or a field of another type".to_string()
        };
        bad(format!("mirror.json is not §5's object: {what}"))
    })?;
    if meta.format != MIRROR_FORMAT && meta.format != MIRROR_FORMAT_REDACTED {
        return Err(bad(format!(
            "mirror.json names format {}, not {MIRROR_FORMAT} or {MIRROR_FORMAT_REDACTED}",
            crate::secrets::shown_name(&meta.format)
        )));
    }
    Ok(MirrorCommit { commit: commit.to_string(), meta, segments })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_sort_as_their_seqs_and_read_back() {
        assert_eq!(segment_name(0), "00000000000000000000.jsonl");
        assert_eq!(segment_name(1024), "00000000000000001024.jsonl");
        assert_eq!(segment_name(u64::MAX), "18446744073709551615.jsonl");
        assert!(segment_name(999) < segment_name(1000));
        for seq in [0, 7, 1024, u64::MAX] {
            assert_eq!(segment_seq(&segment_name(seq)), Some(seq));
        }
        for bad in [
            "0.jsonl",
            "0000000000000000000a.jsonl",
            "00000000000000000000.json",
            "000000000000000000000.jsonl",
            "99999999999999999999.jsonl",
        ] {
            assert_eq!(segment_seq(bad), None, "{bad}");
        }
    }

    #[test]
    fn machine_names_are_printable_and_bounded() {
        assert!(machine_name_ok("laptop-1"));
        assert!(machine_name_ok(&"m".repeat(MACHINE_NAME_MAX)));
        assert!(!machine_name_ok(&"m".repeat(MACHINE_NAME_MAX + 1)));
        assert!(!machine_name_ok(""));
        assert!(!machine_name_ok("a b"));
        assert!(!machine_name_ok("a\x1b[31m"));
    }
}
