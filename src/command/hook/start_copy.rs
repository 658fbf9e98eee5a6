//! Which working copy a session's hooks speak for: the one the session started in (seed 003
//! "Which copy"). A session that `cd`s into a worktree it just cut is still the session of
//! its start copy: its owed work, counts and verdicts are that copy's. Found without
//! guessing, in this order: the host's project folder (Claude Code's `CLAUDE_PROJECT_DIR`,
//! given to every hook, never moved by `cd`); else the session index in the home store,
//! written at the session's start by a host that names no project folder (Codex); else the
//! payload's `cwd`, as before. `docs/own-work.md` states the rule.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::host::{HookRequest, RequestDetail, StartSource};
use crate::places;

/// The home store's folder of the session index: one file per session id, holding the
/// start copy's root.
pub const SESSIONS_DIR: &str = "sessions";
/// The most sessions the index keeps; writing one more removes the oldest first.
pub const SESSION_INDEX_MAX_ENTRIES: usize = 1024;
/// An entry holds one path; one longer than this is not read.
pub const SESSION_ENTRY_MAX_BYTES: u64 = 4096;

/// The request as the hooks judge it: `cwd` set to the session's start copy when the host
/// names one, or the index holds one, that is managed (or whose git link is broken); and
/// the place it speaks from, resolved once for the whole hook, or the work tree whose git
/// link is broken, which the hook names (such a tree would otherwise read as unmanaged,
/// silently).
pub fn at_start_copy(req: &HookRequest) -> (HookRequest, Result<places::Place, PathBuf>) {
    let named = req.project_dir.as_deref().and_then(|dir| Some((dir.to_path_buf(), speaks_for(dir)?)));
    // A fresh start is where its payload says: the index is what it writes, not what it reads.
    let start = named.or_else(|| {
        let index = index_dir()?;
        let dir = (req.project_dir.is_none() && !fresh_start(req)).then(|| indexed(&index, req.session_id.as_deref()?)).flatten()?;
        let speaks = speaks_for(&dir)?;
        Some((dir, speaks))
    });
    let Some((dir, speaks)) = start else {
        let place = places::broken_worktree_link(&req.cwd).map_or_else(|| Ok(places::Place::at(&req.cwd)), Err);
        return (req.clone(), place);
    };
    let place = match speaks {
        Speaks::Managed(place) => Ok(*place),
        Speaks::BrokenLink(folder) => Err(folder),
    };
    let req = if dir == req.cwd { req.clone() } else { HookRequest { cwd: dir, ..req.clone() } };
    (req, place)
}

/// A session start that begins a session (`startup`, `clear`, or a source this build does
/// not know), not one that continues it (`resume`, `compact`).
fn fresh_start(req: &HookRequest) -> bool {
    matches!(&req.detail, RequestDetail::SessionStart { source } if !matches!(source, StartSource::Resume | StartSource::Compact))
}

/// A folder the hooks may speak for.
enum Speaks {
    /// A managed working copy, with its place as resolved (boxed: a place is large).
    Managed(Box<places::Place>),
    /// A folder whose git link is broken: the hook names the work tree.
    BrokenLink(PathBuf),
}

/// Whether the hooks may speak for `dir`, and how.
fn speaks_for(dir: &Path) -> Option<Speaks> {
    if !dir.is_dir() {
        return None;
    }
    if let Some(folder) = places::broken_worktree_link(dir) {
        return Some(Speaks::BrokenLink(folder));
    }
    let place = places::Place::at(dir);
    place.working_copy().is_ok().then(|| Speaks::Managed(Box::new(place)))
}

fn index_dir() -> Option<PathBuf> {
    places::home_dir().ok().map(|h| h.join(SESSIONS_DIR))
}

/// The start copy the index holds for `session`, if any.
pub fn indexed(index: &Path, session: &str) -> Option<PathBuf> {
    if !crate::event::session_id_ok(session) {
        return None;
    }
    let text = crate::platform::fs::read_regular_text(&index.join(session), SESSION_ENTRY_MAX_BYTES + 1).ok()?;
    if text.len() as u64 > SESSION_ENTRY_MAX_BYTES {
        return None;
    }
    let path = PathBuf::from(text.trim_end_matches('\n'));
    path.is_absolute().then_some(path)
}

/// At a session's start on a host that names no project folder: the index learns the
/// session's start copy. A fresh start writes it; a resume or a compaction keeps the entry
/// there. A cache of what `session.started` records: a failure to write only leaves later
/// hooks with the payload's `cwd`, so it is not reported.
pub fn record_start(req: &HookRequest, root: &Path) {
    let (None, Some(session), Some(index)) = (&req.project_dir, req.session_id.as_deref(), index_dir()) else { return };
    let _ = record_in(&index, session, root, SESSION_INDEX_MAX_ENTRIES, fresh_start(req));
}

/// Writes `session`'s entry into `index` (over an earlier one only with `replace`),
/// keeping at most `max` entries.
pub fn record_in(index: &Path, session: &str, root: &Path, max: usize, replace: bool) -> std::io::Result<bool> {
    if !crate::event::session_id_ok(session) || crate::secrets::scan(session).is_some() {
        return Ok(false);
    }
    let entry = index.join(session);
    if entry.exists() {
        if !replace || indexed(index, session).as_deref() == Some(root) {
            return Ok(false);
        }
        std::fs::remove_file(&entry)?;
    }
    crate::platform::fs::create_dir_all(index, 0o700)?;
    prune(index, max.saturating_sub(1))?;
    let creating = std::fs::OpenOptions::new().write(true).create_new(true).clone();
    let mut file = match crate::platform::fs::open_regular(&creating, &entry, crate::platform::fs::Symlink::Refuse) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e),
    };
    file.write_all(format!("{}\n", root.display()).as_bytes())?;
    Ok(true)
}

/// Removes the oldest entries (by modification time) until at most `keep` are left.
fn prune(index: &Path, keep: usize) -> std::io::Result<()> {
    let mut entries: Vec<(std::time::SystemTime, PathBuf)> =
        std::fs::read_dir(index)?.filter_map(|e| e.ok()).filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path()))).collect();
    if entries.len() <= keep {
        return Ok(());
    }
    entries.sort();
    let excess = entries.len() - keep;
    for (_, path) in entries.into_iter().take(excess) {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
    }

    /// SESSION_INDEX_MAX_ENTRIES on both sides: the index fills to the bound with nothing
    /// removed, and one more session removes the oldest entry only.
    #[test]
    fn the_index_keeps_at_most_its_bound_and_drops_the_oldest() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join(SESSIONS_DIR);
        let root = Path::new("/work/repo");
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        assert!(record_in(&index, "oldest", root, SESSION_INDEX_MAX_ENTRIES, false).unwrap());
        std::fs::File::options().write(true).open(index.join("oldest")).unwrap().set_modified(old).unwrap();
        for n in 1..SESSION_INDEX_MAX_ENTRIES {
            assert!(record_in(&index, &format!("s{n}"), root, SESSION_INDEX_MAX_ENTRIES, false).unwrap());
        }
        assert_eq!(count(&index), SESSION_INDEX_MAX_ENTRIES);
        assert_eq!(indexed(&index, "oldest").as_deref(), Some(root));
        assert!(record_in(&index, "newest", root, SESSION_INDEX_MAX_ENTRIES, false).unwrap());
        assert_eq!(count(&index), SESSION_INDEX_MAX_ENTRIES);
        assert_eq!(indexed(&index, "oldest"), None, "the oldest went");
        assert_eq!(indexed(&index, "newest").as_deref(), Some(root));
    }

    /// A resume keeps the entry, a fresh start replaces it; an id abcd would not key state by,
    /// or a secret, is not written;
    /// an entry over SESSION_ENTRY_MAX_BYTES is not read, one at it is.
    #[test]
    fn an_entry_is_written_once_and_read_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join(SESSIONS_DIR);
        assert!(record_in(&index, "s1", Path::new("/a"), 8, false).unwrap());
        assert!(!record_in(&index, "s1", Path::new("/b"), 8, false).unwrap(), "a resume keeps the first start");
        assert_eq!(indexed(&index, "s1").as_deref(), Some(Path::new("/a")));
        assert!(record_in(&index, "s1", Path::new("/b"), 8, true).unwrap(), "a fresh start replaces it");
        assert_eq!(indexed(&index, "s1").as_deref(), Some(Path::new("/b")));
        assert!(!record_in(&index, "../escape", Path::new("/a"), 8, true).unwrap());
        assert!(!record_in(&index, "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", Path::new("/a"), 8, true).unwrap());
        let at = format!("/{}\n", "a".repeat(SESSION_ENTRY_MAX_BYTES as usize - 2));
        std::fs::write(index.join("at"), &at).unwrap();
        assert!(indexed(&index, "at").is_some());
        std::fs::write(index.join("over"), format!("{at}x")).unwrap();
        assert_eq!(indexed(&index, "over"), None);
    }
}
