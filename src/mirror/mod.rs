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
//! - [`folded`]: a verified mirror's folded state, kept so a status folds each line once.
//! - [`own`]: this machine's own mirror of a journal read back as verified lines, verbatim
//!   (what repair, restore and a mirror restart take lost lines back from).

pub mod build;
pub mod folded;
pub mod judge;
pub mod own;
pub mod read;
pub mod redaction;
pub mod segment;

use serde::{Deserialize, Serialize};

use crate::event::Scope;
use crate::git::objects::{Batch, GitError, Repo, TreeEntry};

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

/// The `segments/` tree object of a mirror is at most this many bytes (an entry is at most
/// 66: mode, name, a SHA-256 id): checked before the tree is read, so a forged tree of a
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

/// Reads a mirror commit's `mirror.json` and segment list, holding them to §3–§5's shape,
/// through one `git cat-file --batch-command` child.
pub fn read_commit(repo: &Repo, commit: &str) -> Result<MirrorCommit, ShapeError> {
    read_commit_in(&mut Batch::new(repo), commit)
}

/// [`read_commit`] through `batch`, whose child the caller goes on to read segments with.
/// Each tree's size is asked before the tree is read (`ROOT_TREE_MAX_BYTES`,
/// `SEGMENTS_TREE_MAX_BYTES`), and the trees are read as git stores them.
pub fn read_commit_in(batch: &mut Batch<'_>, commit: &str) -> Result<MirrorCommit, ShapeError> {
    let bad = |why: String| ShapeError::Bad(why);
    let no_shape = || bad("its tree holds no segments/ tree beside mirror.json, or entries other than mirror.json and segments/".into());
    let root_spec = format!("{commit}^{{tree}}");
    let sizes = (batch.info(&root_spec)?, batch.info(&format!("{commit}:{SEGMENTS_DIR}"))?);
    let (Some((root_kind, root_size)), Some((kind, size))) = sizes else { return Err(no_shape()) };
    if root_kind != "tree" || kind != "tree" {
        return Err(no_shape());
    }
    if size > SEGMENTS_TREE_MAX_BYTES || root_size > ROOT_TREE_MAX_BYTES {
        return Err(bad(format!("its segments/ tree is over {SEGMENTS_TREE_MAX_BYTES} bytes: more segments than a mirror may hold")));
    }
    let tree = |batch: &mut Batch<'_>, spec: &str, max: u64| -> Result<Vec<TreeEntry>, ShapeError> {
        let object = batch.read(spec, max as usize)?.filter(|o| o.kind == "tree").ok_or_else(no_shape)?;
        parse_tree(&object.bytes, id_bytes(commit)).ok_or_else(|| bad("a tree of it is not shaped as git writes trees".into()))
    };
    let root = tree(batch, &root_spec, ROOT_TREE_MAX_BYTES)?;
    let names: Vec<(&str, &str)> = root.iter().map(|e| (e.name.as_str(), e.kind.as_str())).collect();
    if names != [(MIRROR_JSON, "blob"), (SEGMENTS_DIR, "tree")] {
        return Err(bad(format!("its tree holds {} entries other than mirror.json and segments/", root.len())));
    }
    let listed = tree(batch, &root[1].id, SEGMENTS_TREE_MAX_BYTES)?;
    let mut segments = Vec::with_capacity(listed.len());
    for e in listed {
        if !(e.kind == "blob" && e.mode == "100644" && segment_seq(&e.name).is_some()) {
            let path = format!("{SEGMENTS_DIR}/{}", e.name);
            return Err(bad(format!("segments/ holds {}, not a segment named <20 digits>.jsonl", crate::secrets::shown_name(&path))));
        }
        segments.push(e);
    }
    if segments.is_empty() || segments.len() > MIRROR_MAX_SEGMENTS {
        return Err(bad(format!("it holds {} segments; a mirror holds 1 to {MIRROR_MAX_SEGMENTS}", segments.len())));
    }
    let json = match batch.read(&root[0].id, MIRROR_JSON_MAX_BYTES) {
        Ok(Some(o)) => o.bytes,
        Ok(None) => return Err(no_shape()),
        Err(GitError::TooLarge { .. } | GitError::Unreadable { .. }) => {
            return Err(bad(format!("mirror.json is over {MIRROR_JSON_MAX_BYTES} bytes")));
        }
        Err(other) => return Err(ShapeError::Git(other)),
    };
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

/// Bytes of an object id in a tree, for a repository whose ids are `id`'s length in hex
/// (SHA-1's 20, SHA-256's 32).
fn id_bytes(id: &str) -> usize {
    id.len() / 2
}

/// A tree object's entries (`<mode> <name>\0<id>`, the id `id_len` bytes), kinds named as
/// `git ls-tree` names them; None when the bytes are not shaped so.
fn parse_tree(bytes: &[u8], id_len: usize) -> Option<Vec<TreeEntry>> {
    let mut entries = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ')?;
        let nul = space + rest[space..].iter().position(|&b| b == 0)?;
        let mode = std::str::from_utf8(&rest[..space]).ok()?;
        let name = std::str::from_utf8(&rest[space + 1..nul]).ok()?;
        let id = rest.get(nul + 1..nul + 1 + id_len)?;
        let (mode, kind) = match mode {
            "40000" => ("040000".to_string(), "tree"),
            "160000" => (mode.to_string(), "commit"),
            m if !m.is_empty() && m.bytes().all(|b| (b'0'..=b'7').contains(&b)) => (m.to_string(), "blob"),
            _ => return None,
        };
        if name.is_empty() {
            return None;
        }
        let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
        entries.push(TreeEntry { mode, kind: kind.into(), id, name: name.into() });
        rest = &rest[nul + 1 + id_len..];
    }
    Some(entries)
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
