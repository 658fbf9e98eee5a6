//! A fetched mirror commit judged (MIRROR.md §7–§8): its shape, its chain, its claims, its
//! repository, and its history against the last verified copy. Only the bytes after the
//! verified copy's head are verified again; the rest is compared by blob id.

use crate::event::Scope;
use crate::git::objects::{Batch, GitError, Repo};
use crate::journal::format;
use crate::journal::genesis;

use super::read::{Walk, WalkError, each_segment, read_segment, walk_segment};
use super::{MirrorCommit, ShapeError, machine_name_ok, read_commit_in};

/// What a fetch says of one mirrored journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Verified,
    Unchanged,
    Rewritten(String),
    RolledBack,
    JournalChanged(String),
    Foreign(String),
    /// A mirror of this machine's own journal holding lines this machine never wrote.
    Forged(String),
    Gone,
}

impl Verdict {
    /// The verdict's name as MIRROR.md §8 and `--json` give it.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Verified => "verified",
            Verdict::Unchanged => "unchanged",
            Verdict::Rewritten(_) => "rewritten",
            Verdict::RolledBack => "rolled_back",
            Verdict::JournalChanged(_) => "journal_changed",
            Verdict::Foreign(_) => "foreign",
            Verdict::Forged(_) => "forged",
            Verdict::Gone => "gone",
        }
    }

    /// What was found, in words, for the verdicts that need them.
    pub fn why(&self) -> Option<String> {
        match self {
            Verdict::Rewritten(w) | Verdict::JournalChanged(w) | Verdict::Foreign(w) | Verdict::Forged(w) => Some(w.clone()),
            Verdict::RolledBack => Some("the remote's ref was moved back to an older commit; the newer verified copy is kept".into()),
            Verdict::Gone => Some("the remote no longer has this ref; the last verified copy is kept".into()),
            Verdict::Verified | Verdict::Unchanged => None,
        }
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, Verdict::Verified | Verdict::Unchanged)
    }
}

/// A verdict, the commit's claims when its shape could be read, and the redaction records
/// (§11) among the lines this judgement verified: how many, and the first one's seq.
#[derive(Clone, Debug)]
pub struct Judged {
    pub verdict: Verdict,
    pub mirror: Option<MirrorCommit>,
    pub redacted: (u64, Option<u64>),
}

/// Judges `incoming`, fetched for `refs/abcd/journals/<journal_id>`, against the verified
/// copy `verified` (if this machine holds one) for the repository whose first root commit
/// is `repository`. A git failure is an error, not a verdict: nothing was learned.
pub fn judge(repo: &Repo, journal_id: &str, incoming: &str, verified: Option<&str>, repository: &str) -> Result<Judged, GitError> {
    judge_in(&mut Batch::new(repo), journal_id, incoming, verified, repository)
}

/// [`judge`] with every object read through `batch`, which the caller may go on to judge
/// other mirrors with: one git child for any number of them.
pub fn judge_in(
    batch: &mut Batch<'_>,
    journal_id: &str,
    incoming: &str,
    verified: Option<&str>,
    repository: &str,
) -> Result<Judged, GitError> {
    let verdict = |v: Verdict| Ok(Judged { verdict: v, mirror: None, redacted: (0, None) });
    if verified == Some(incoming) {
        return verdict(Verdict::Unchanged);
    }
    if let Some(v) = verified {
        match placed(batch, incoming, v)? {
            Placed::FastForward => {}
            Placed::RolledBack => return verdict(Verdict::RolledBack),
            Placed::Apart => {
                return verdict(Verdict::Rewritten(format!(
                    "its commit {} does not descend from the verified copy {}: the remote's history was rewritten",
                    short(incoming),
                    short(v)
                )));
            }
        }
    }
    let mirror = match read_commit_in(batch, incoming) {
        Ok(m) => m,
        Err(ShapeError::Bad(why)) => {
            return verdict(Verdict::Rewritten(format!("its commit {} is not a mirror commit: {why}", short(incoming))));
        }
        Err(ShapeError::Git(g)) => return Err(g),
    };
    let judged = |v: Verdict, mirror: MirrorCommit| Ok(Judged { verdict: v, mirror: Some(mirror), redacted: (0, None) });
    let meta = &mirror.meta;
    if meta.journal_id != journal_id {
        let why = format!("mirror.json names journal {}, the ref names {journal_id}", crate::secrets::shown_name(&meta.journal_id));
        return judged(Verdict::JournalChanged(why), mirror);
    }
    if meta.repository != repository {
        let why =
            format!("it belongs to repository {}, not this one ({})", crate::secrets::shown_name(&meta.repository), short(repository));
        return judged(Verdict::Foreign(why), mirror);
    }
    if !machine_name_ok(&meta.machine) {
        return judged(Verdict::Rewritten("mirror.json's machine name is not 1 to 64 printable characters".into()), mirror);
    }
    if meta.path.is_empty() || meta.path.len() > super::PATH_CLAIM_MAX_BYTES {
        return judged(Verdict::Rewritten(format!("mirror.json's path is empty or over {} bytes", super::PATH_CLAIM_MAX_BYTES)), mirror);
    }

    // From the verified copy's head when there is one, else from genesis.
    let mut walk = Walk::default();
    let (mut index, mut from, mut first_bytes) = (0usize, 0usize, None);
    if let Some(v) = verified {
        match resume_point(batch, v, &mirror) {
            Ok(Some((w, i, f, bytes))) => (walk, index, from, first_bytes) = (w, i, f, Some(bytes)),
            Ok(None) => {}
            Err(Resume::Changed(why)) => return judged(Verdict::Rewritten(why), mirror),
            Err(Resume::Genesis(why)) => return judged(Verdict::JournalChanged(why), mirror),
            Err(Resume::Git(g)) => return Err(g),
        }
    }
    let mut genesis_fault: Option<Verdict> = None;
    let mut check_genesis = |event: &format::Event| {
        if event.seq != 0 || genesis_fault.is_some() {
            return;
        }
        genesis_fault = match genesis::decode_opened(&event.data) {
            Err(why) => Some(Verdict::JournalChanged(format!("its first line is not a journal.opened this build reads: {why}"))),
            Ok(o) if o.journal_id != journal_id => Some(Verdict::JournalChanged(format!(
                "its journal.opened names journal {}, the ref names {journal_id}",
                crate::secrets::shown_name(&o.journal_id)
            ))),
            Ok(o) if o.scope != meta.scope => {
                Some(Verdict::JournalChanged("its journal.opened names another scope than mirror.json".into()))
            }
            Ok(genesis::JournalOpened { scope: Scope::Repository { root_commit }, .. }) if root_commit != repository => {
                Some(Verdict::Foreign(format!("its journal.opened names repository {}", crate::secrets::shown_name(&root_commit))))
            }
            Ok(_) => None,
        };
    };
    let mut rest = mirror.segments.get(index..).unwrap_or_default();
    let mut walked = Ok(());
    if let (Some(bytes), Some((entry, after))) = (first_bytes, rest.split_first()) {
        walked = walk_segment(&bytes, &entry.name, from, &mut walk, &mut check_genesis);
        rest = after;
    }
    let walked =
        walked.and_then(|()| each_segment(batch, rest, |entry, bytes| walk_segment(&bytes, &entry.name, 0, &mut walk, &mut check_genesis)));
    match walked {
        Ok(()) => {}
        Err(WalkError::Broken(why)) => return judged(Verdict::Rewritten(why), mirror),
        Err(WalkError::Git(g)) => return Err(g),
    }
    if let Some(fault) = genesis_fault {
        return judged(fault, mirror);
    }
    if let Some(seq) = walk.unconfirmed {
        let why = format!("it ends with a redaction record (seq {seq}) that no line after it confirms (MIRROR.md §11)");
        return judged(Verdict::Rewritten(why), mirror);
    }
    if walk.redacted > 0 && meta.format == super::MIRROR_FORMAT {
        let why = format!(
            "its mirror.json names {}, which holds no redaction record, and seq {} is one (MIRROR.md §11)",
            super::MIRROR_FORMAT,
            walk.first_redacted.unwrap_or_default()
        );
        return judged(Verdict::Rewritten(why), mirror);
    }
    let claims_hold = walk.last.is_some_and(|(seq, hash, time)| {
        seq == meta.head_seq && hash.to_hex() == meta.head_hash && format::format_time(time) == meta.head_time
    }) && walk.bytes == meta.bytes;
    if !claims_hold {
        return judged(Verdict::Rewritten("mirror.json's head or length is not what its segments hold".into()), mirror);
    }
    Ok(Judged { verdict: Verdict::Verified, mirror: Some(mirror), redacted: (walk.redacted, walk.first_redacted) })
}

/// Commits of one side's history a judgement reads through its batch to place the
/// incoming commit against the verified copy; past them it asks `git merge-base`. A push
/// adds one commit, so a fetch after a few pushes reads a few.
pub const ANCESTRY_WALK_MAX: usize = 64;
/// A commit's own bytes (headers and message) as that walk reads them, at most: a mirror
/// commit's are about 300; a larger one is left to `git merge-base`.
const COMMIT_READ_MAX_BYTES: usize = 64 << 10;

/// Where the incoming commit stands against the verified copy.
enum Placed {
    FastForward,
    RolledBack,
    Apart,
}

/// Where `incoming` stands against the verified copy `v` (not equal): `v` among its
/// ancestors, it among `v`'s, or neither, as `git merge-base` would say. Each side's
/// history is read through `batch` while it runs through commits of one parent, up to
/// [`ANCESTRY_WALK_MAX`]; a merge, a longer history or an unreadable commit is left to
/// `git merge-base`.
fn placed(batch: &mut Batch<'_>, incoming: &str, v: &str) -> Result<Placed, GitError> {
    let walked = match reaches(batch, incoming, v)? {
        Some(true) => Some(Placed::FastForward),
        Some(false) => match reaches(batch, v, incoming)? {
            Some(true) => Some(Placed::RolledBack),
            Some(false) => Some(Placed::Apart),
            None => None,
        },
        None => None,
    };
    if let Some(p) = walked {
        return Ok(p);
    }
    let base = batch.repo().merge_base(incoming, v)?;
    Ok(if base.as_deref() == Some(incoming) {
        Placed::RolledBack
    } else if base.as_deref() == Some(v) {
        Placed::FastForward
    } else {
        Placed::Apart
    })
}

/// Some(true) when `target` is `from` or one of its ancestors, Some(false) when `from`'s
/// history ends in a root without it (every commit on the way of one parent, so there is
/// no other path), None when the walk cannot tell within its bound.
fn reaches(batch: &mut Batch<'_>, from: &str, target: &str) -> Result<Option<bool>, GitError> {
    let mut at = from.to_string();
    for _ in 0..ANCESTRY_WALK_MAX {
        if at == target {
            return Ok(Some(true));
        }
        let object = match batch.read(&at, COMMIT_READ_MAX_BYTES) {
            Ok(Some(o)) if o.kind == "commit" => o,
            Ok(_) | Err(GitError::Unreadable { .. } | GitError::TooLarge { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let parents = commit_parents(&object.bytes);
        match parents.as_slice() {
            [] => return Ok(Some(false)),
            [one] => at = one.clone(),
            _ => return Ok(None),
        }
    }
    Ok((at == target).then_some(true))
}

/// The `parent` ids of a commit object's headers, in order.
fn commit_parents(bytes: &[u8]) -> Vec<String> {
    let headers = bytes.split(|b| *b == b'\n').take_while(|l| !l.is_empty());
    headers.filter_map(|l| l.strip_prefix(b"parent ")).map(|id| String::from_utf8_lossy(id).into_owned()).collect()
}

/// Where a fast-forward's verification resumes: the walk so far, the segment's index, the
/// byte in it, and that segment's bytes.
type Resumed = (Walk, usize, usize, Vec<u8>);

enum Resume {
    Changed(String),
    Genesis(String),
    Git(GitError),
}

/// Where verifying a fast-forward of the verified copy `v` starts: every segment of `v`
/// but its last unchanged by id, and its last a byte prefix of the same-named segment.
/// None when `v` cannot be read as a mirror (the whole chain is then verified). Also hands
/// back the new commit's segment of that name, read for the comparison.
fn resume_point(batch: &mut Batch<'_>, v: &str, new: &MirrorCommit) -> Result<Option<Resumed>, Resume> {
    let old = match read_commit_in(batch, v) {
        Ok(m) => m,
        Err(ShapeError::Git(g)) => return Err(Resume::Git(g)),
        Err(ShapeError::Bad(_)) => return Ok(None),
    };
    // The genesis is not walked again, so the claims it was checked against must not move.
    if old.meta.scope != new.meta.scope {
        return Err(Resume::Genesis("mirror.json names another scope than the verified copy's journal.opened".into()));
    }
    // The lines not walked again may hold redaction records: a mirror never goes back to
    // the format that holds none.
    if old.meta.format != super::MIRROR_FORMAT && new.meta.format == super::MIRROR_FORMAT {
        return Err(Resume::Changed(format!(
            "its mirror.json names {}, and the verified copy's names {}: a format that may hold redaction records never goes back (MIRROR.md §11)",
            new.meta.format, old.meta.format
        )));
    }
    let changed = |name: &str| Resume::Changed(format!("segment {name} differs from the verified copy's: a mirrored line was rewritten"));
    let Some((old_last, old_full)) = old.segments.split_last() else { return Ok(None) };
    for (i, e) in old_full.iter().enumerate() {
        match new.segments.get(i) {
            Some(n) if n.name == e.name && n.id == e.id => {}
            _ => return Err(changed(&e.name)),
        }
    }
    let index = old_full.len();
    let Some(new_last) = new.segments.get(index).filter(|n| n.name == old_last.name) else { return Err(changed(&old_last.name)) };
    let mut read = |id: &str| {
        read_segment(batch, id).map_err(|e| match e {
            WalkError::Git(g) => Resume::Git(g),
            WalkError::Broken(why) => Resume::Changed(why),
        })
    };
    let old_bytes = read(&old_last.id)?;
    let new_bytes = if new_last.id == old_last.id { old_bytes.clone() } else { read(&new_last.id)? };
    if !new_bytes.starts_with(&old_bytes) {
        return Err(changed(&old_last.name));
    }
    // The verified copy's last line gives the chain position to continue from.
    let line_start = old_bytes[..old_bytes.len().saturating_sub(1)].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let Ok(head) = format::verify_line(&old_bytes[line_start..]) else { return Ok(None) };
    let walk = Walk {
        position: Some(head.chain_position()),
        last: Some((head.seq, head.hash, head.time)),
        bytes: old.meta.bytes,
        ..Walk::default()
    };
    Ok(Some((walk, index, old_bytes.len(), new_bytes)))
}

/// The first 12 hex digits of a commit, for messages.
fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root commit of the empty tree whose object is exactly `size` bytes, its message
    /// padded to it (`commit-tree` keeps a message as given).
    fn root_commit_of(repo: &Repo, size: usize) -> String {
        let tree = repo.write_tree(&[]).unwrap();
        let probe = repo.write_commit(&tree, None, "x", 0).unwrap();
        let (_, probe_size) = Batch::new(repo).info(&probe).unwrap().unwrap();
        let message = "x".repeat(size + 1 - probe_size as usize);
        repo.write_commit(&tree, None, &message, 0).unwrap()
    }

    /// The ancestry walk reads a commit of exactly its bound (a root without the target:
    /// it tells `Some(false)` itself); one byte more is left to `git merge-base`, which
    /// places the two apart all the same.
    #[test]
    fn the_ancestry_walk_reads_a_commit_of_its_bound_and_leaves_one_byte_more_to_merge_base() {
        let (_dir, repo) = crate::git::objects::tests::repo();
        let tree = repo.write_tree(&[]).unwrap();
        let other = repo.write_commit(&tree, None, "another root", 1).unwrap();
        for (size, walked) in [(COMMIT_READ_MAX_BYTES, Some(false)), (COMMIT_READ_MAX_BYTES + 1, None)] {
            let commit = root_commit_of(&repo, size);
            let mut batch = Batch::new(&repo);
            assert_eq!(batch.info(&commit).unwrap(), Some(("commit".to_string(), size as u64)));
            assert_eq!(reaches(&mut batch, &commit, &other).unwrap(), walked, "a commit of {size} bytes");
            assert!(matches!(placed(&mut batch, &commit, &other).unwrap(), Placed::Apart), "a commit of {size} bytes");
        }
    }
}
