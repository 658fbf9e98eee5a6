//! Whose journal is this? A journal's genesis names its scope (a working copy's root, a
//! repository's first root commit, the machine), and a journal found at a path is used only
//! when that scope is the path's (journal-format/SPEC.md §11). A working copy's journal
//! follows its checkout when the person moves it: the move is shown by the file system (the
//! root the journal names now leads here) or by this home store (it knows the journal, and
//! the old root no longer holds it), and it is recorded (`journal.moved`), never refused.
//! Anything else (another repository's journal, a copy of another checkout's) is foreign:
//! no reader folds it, no append builds on it, and repair sets it aside.

use std::path::{Path, PathBuf};

use super::anchor::AnchorStore;
use super::append::{JournalError, JournalPaths, read_genesis};
use super::format;
pub use super::genesis::{ForeignJournal, ForeignWhy};
use super::genesis::{JournalMoved, Scope};
use super::storage::Storage;

/// What a journal's scope says about the path it was found at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScopeFinding {
    /// The scope the journal names (its genesis's, or the root its last move named) is
    /// this path's.
    Same,
    /// A working copy's journal at the root its checkout was moved to: accepted, and the
    /// move recorded.
    Moved(JournalMoved),
    /// The journal of another scope.
    Foreign(ForeignJournal),
}

/// Judges a journal (`journal_id`, naming `named`: its genesis's scope, or for a working
/// copy the root its last `journal.moved` named) found at `paths`, whose scope is `here`
/// (a working copy's root canonical).
pub fn judge(
    storage: &dyn Storage,
    anchors: Option<&AnchorStore>,
    paths: &JournalPaths,
    journal_id: &str,
    named: &Scope,
    here: &Scope,
) -> ScopeFinding {
    if named == here {
        return ScopeFinding::Same;
    }
    let foreign = |why, home| {
        ScopeFinding::Foreign(ForeignJournal { journal_id: journal_id.into(), names: named.clone(), here: here.clone(), why, home })
    };
    let (Scope::WorkingCopy { root: from }, Scope::WorkingCopy { root: to }) = (named, here) else {
        let home = match (named, here) {
            (Scope::Repository { root_commit: theirs }, Scope::Repository { root_commit: ours }) => {
                same_place_under(&paths.journal, ours, theirs)
            }
            _ => None,
        };
        return foreign(ForeignWhy::OtherScope, home);
    };
    let moved = ScopeFinding::Moved(JournalMoved { from: from.clone(), to: to.clone() });
    // The root it names leads here (a symlink left where the checkout was, or a path that
    // was never canonical): the same folder, reached another way.
    if storage.canonical(Path::new(from)).is_ok_and(|c| c == Path::new(to)) {
        return moved;
    }
    let old_journal = journal_relative_to_root(storage, &paths.journal, to).map(|rel| Path::new(from).join(rel));
    let known = anchors.is_some_and(|a| {
        a.load(storage, journal_id).ok().flatten().is_some()
            || old_journal.as_ref().is_some_and(|old| a.id_at_path(storage, old).ok().flatten().as_deref() == Some(journal_id))
    });
    if !known {
        return foreign(ForeignWhy::Unknown, old_journal);
    }
    let still_there = old_journal.as_ref().is_some_and(|old| {
        storage.open_read(old).ok().and_then(|f| read_genesis(f.as_ref(), old).ok()).is_some_and(|g| g.journal_id == journal_id)
    });
    if still_there {
        return foreign(ForeignWhy::StillThere, None);
    }
    moved
}

/// The journal's path below its working copy's root `root` (canonical): `.abcd/…` for abcd's
/// layout, found without knowing it.
fn journal_relative_to_root(storage: &dyn Storage, journal: &Path, root: &str) -> Option<PathBuf> {
    if let Ok(rel) = journal.strip_prefix(root) {
        return Some(rel.to_owned());
    }
    // Reached through a symlinked path: its folder resolved, the name kept.
    let dir = storage.canonical(journal.parent()?).ok()?;
    dir.join(journal.file_name()?).strip_prefix(root).ok().map(Path::to_owned)
}

/// `journal`'s path with the folder named `ours` replaced by `theirs` (the repository
/// journal's `repos/<root commit>/`).
fn same_place_under(journal: &Path, ours: &str, theirs: &str) -> Option<PathBuf> {
    let dir = journal.parent()?;
    (dir.file_name()? == ours).then(|| dir.with_file_name(theirs).join(journal.file_name().expect("a journal path names a file")))
}

/// Moves a foreign journal out of its path, whole: synced, then renamed into `quarantine/`
/// as `foreign-<journal id>-<stamp>.jsonl`, and both folders synced. Nothing is copied or
/// deleted: the file the person put there is the one kept. The caller holds the lock.
pub fn set_aside(storage: &dyn Storage, paths: &JournalPaths, foreign: &ForeignJournal) -> Result<PathBuf, JournalError> {
    let path = &paths.journal;
    let file = storage.open_rw(path).map_err(JournalError::io("opening", path))?;
    // A file put there by `cp` may not be on the disk yet: it is, before its name moves.
    file.sync_data().map_err(|source| JournalError::SyncFailed { path: path.clone(), source })?;
    drop(file);
    let qdir = &paths.quarantine;
    storage.create_dir_all(qdir, 0o700).map_err(JournalError::io("creating", qdir))?;
    let stamp = format::now_ms().strftime("%Y%m%dT%H%M%S%3fZ").to_string();
    let mut attempt = 0u32;
    let aside = loop {
        let name = match attempt {
            0 => format!("foreign-{}-{stamp}.jsonl", foreign.journal_id),
            n => format!("foreign-{}-{stamp}-{n}.jsonl", foreign.journal_id),
        };
        let to = qdir.join(name);
        let renamed = match storage.rename_noreplace(path, &to) {
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => match storage.facts(&to) {
                // Under the journal lock nothing else names files in quarantine/ at once.
                Ok(None) => storage.rename(path, &to),
                Ok(Some(_)) => Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists)),
                Err(e) => Err(e),
            },
            other => other,
        };
        match renamed {
            Ok(()) => break to,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(source) => return Err(JournalError::Io { what: "moving aside", path: path.clone(), source }),
        }
    };
    for dir in [qdir.as_path(), paths.dir()] {
        storage.sync_dir(dir).map_err(|source| JournalError::SyncFailed { path: dir.to_owned(), source })?;
    }
    Ok(aside)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::storage::RealDisk;

    fn wc(root: &Path) -> Scope {
        Scope::WorkingCopy { root: root.display().to_string() }
    }

    #[test]
    fn a_repository_journal_of_another_root_commit_is_foreign_and_knows_its_home() {
        let paths = JournalPaths::beside(Path::new("/h/repos/bbbb/journal.jsonl"));
        let named = Scope::Repository { root_commit: "aaaa".into() };
        let here = Scope::Repository { root_commit: "bbbb".into() };
        let ScopeFinding::Foreign(f) = judge(&RealDisk, None, &paths, "ab12", &named, &here) else { panic!("foreign") };
        assert_eq!(f.why, ForeignWhy::OtherScope);
        assert_eq!(f.home.as_deref(), Some(Path::new("/h/repos/aaaa/journal.jsonl")));
        assert!(f.to_string().starts_with("this is the journal of repository aaaa (journal ab12), not of repository bbbb"), "{f}");
        assert_eq!(judge(&RealDisk, None, &paths, "ab12", &here, &here), ScopeFinding::Same);
        let machine = judge(&RealDisk, None, &paths, "ab12", &Scope::Machine {}, &here);
        assert!(matches!(machine, ScopeFinding::Foreign(ForeignJournal { why: ForeignWhy::OtherScope, .. })));
    }

    #[test]
    fn a_working_copy_journal_is_moved_only_when_the_move_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (old, new) = (base.join("old"), base.join("new"));
        std::fs::create_dir_all(new.join(".abcd")).unwrap();
        let paths = JournalPaths::beside(&new.join(".abcd/journal.jsonl"));
        let anchors = AnchorStore::new(&base.join("home"));
        // Unknown to the home store: foreign, whatever the old root holds.
        let unknown = judge(&RealDisk, Some(&anchors), &paths, "ab12", &wc(&old), &wc(&new));
        assert!(matches!(unknown, ScopeFinding::Foreign(ForeignJournal { why: ForeignWhy::Unknown, .. })), "{unknown:?}");
        // Known, and the old root is gone: moved.
        anchors.set_id_at_path(&RealDisk, &old.join(".abcd/journal.jsonl"), "ab12").unwrap();
        let moved = judge(&RealDisk, Some(&anchors), &paths, "ab12", &wc(&old), &wc(&new));
        assert_eq!(moved, ScopeFinding::Moved(JournalMoved { from: old.display().to_string(), to: new.display().to_string() }));
        // The old root a symlink to the new one: moved, known or not.
        std::os::unix::fs::symlink(&new, &old).unwrap();
        assert!(matches!(judge(&RealDisk, None, &paths, "ab12", &wc(&old), &wc(&new)), ScopeFinding::Moved(_)));
    }
}
