//! Reads a repository's default branch from git's own files, without starting git.
//!
//! The resume listing needs, for every lane, the commit its base would be measured against.
//! A git child costs milliseconds of wall time and a file read microseconds, so the
//! listing reads the files-backend refs (gitrepository-layout(5): loose ref files,
//! then `packed-refs`) itself. Whatever it does not fully understand — a reftable
//! repository, a ref file of another shape, a symref chain too deep — answers
//! [`RefAnswer::Unsure`], and the caller asks git as before. It never guesses.

use std::path::{Path, PathBuf};

/// A loose ref file or a `.git` file is a line; more than this is not one we understand.
pub const REF_FILE_MAX: u64 = 4096;
/// `packed-refs` larger than this is left to git (a repository with millions of refs).
pub const PACKED_REFS_MAX: u64 = 64 << 20;
/// git itself follows at most 5 levels of symbolic refs.
pub const SYMREF_DEPTH_MAX: usize = 5;

/// The default-branch candidates after `origin/HEAD`'s target, in the order git's path tries
/// them (see [`super::worktree::base_drift`]).
pub const DEFAULT_REFS: &[&str] = &["refs/remotes/origin/main", "refs/remotes/origin/master", "refs/heads/main", "refs/heads/master"];

/// What the files say of a ref.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefAnswer {
    /// The ref resolves to this object id (40 or 64 lowercase hex digits).
    Found(String),
    /// Neither a loose file nor a `packed-refs` line names it.
    Absent,
    /// The files are of a shape this reader does not vouch for: ask git.
    Unsure,
}

/// The repository's common git dir (where refs live) for the work tree rooted at
/// `worktree`: its `.git` folder, or for a linked worktree the folder its `.git` file's
/// `gitdir`'s `commondir` names. None when the layout is not one of those two.
pub fn common_dir(worktree: &Path) -> Option<PathBuf> {
    let dotgit = worktree.join(".git");
    let meta = std::fs::symlink_metadata(&dotgit).ok()?;
    if meta.is_dir() {
        // A main worktree's git dir is its common dir, unless it says otherwise.
        let plain = !dotgit.join("commondir").exists() && dotgit.join("HEAD").is_file() && dotgit.join("refs").is_dir();
        return plain.then_some(dotgit);
    }
    if !meta.is_file() {
        return None;
    }
    let gitdir = read_small(&dotgit)?;
    let gitdir = PathBuf::from(gitdir.trim_end_matches('\n').strip_prefix("gitdir: ")?);
    let gitdir = if gitdir.is_absolute() { gitdir } else { worktree.join(gitdir) };
    let common = read_small(&gitdir.join("commondir"))?;
    let common = PathBuf::from(common.trim_end_matches('\n'));
    let common = if common.is_absolute() { common } else { gitdir.join(common) };
    // A common dir named wrongly (a stray CR, say) must not read as "no refs at all".
    (common.join("HEAD").is_file() && common.join("refs").is_dir()).then_some(common)
}

/// Whether commit counts in this repository are those of its plain history: no shallow
/// boundary (`shallow`), no grafts (`info/grafts`) and no replace refs (`refs/replace/`,
/// loose or packed). Anything unreadable answers no.
pub fn history_is_plain(common: &Path) -> bool {
    let absent = |rel: &str| matches!(std::fs::symlink_metadata(common.join(rel)), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    let packed_has_replace = match PackedRefs::read(common) {
        Ok(p) => p.text.lines().any(|l| l.split_once(' ').is_some_and(|(_, n)| n.starts_with("refs/replace/"))),
        Err(()) => true,
    };
    absent("shallow") && absent("info/grafts") && absent("refs/replace") && !packed_has_replace
}

/// The default branch as last fetched, read from files: `origin/HEAD`'s target when it is
/// a symbolic ref, else the first of [`DEFAULT_REFS`] that exists. `Ok(None)`: none
/// exists. `Err(())`: unsure, ask git.
#[allow(clippy::result_unit_err)]
pub fn default_branch(common: &Path) -> Result<Option<(String, String)>, ()> {
    if common.join("reftable").exists() {
        return Err(());
    }
    let mut candidates: Vec<String> = Vec::with_capacity(DEFAULT_REFS.len() + 1);
    match loose(common, "refs/remotes/origin/HEAD")? {
        Some(Loose::Symbolic(target)) => candidates.push(target),
        // A plain id or no file: git's `symbolic-ref -q` names nothing then; packed-refs
        // cannot hold a symbolic ref.
        Some(Loose::Id(_)) | None => {}
    }
    candidates.extend(DEFAULT_REFS.iter().map(|r| r.to_string()));
    for name in candidates {
        match resolve(common, &name, 0) {
            RefAnswer::Found(id) => return Ok(Some((name, id))),
            RefAnswer::Absent => continue,
            RefAnswer::Unsure => return Err(()),
        }
    }
    Ok(None)
}

/// A ref as git reads it: the loose file first, then `packed-refs`, read only after that
/// miss. The order matters: `git pack-refs` writes the new `packed-refs` before it removes
/// the loose files, so a loose file missing at one moment is in any `packed-refs` read
/// after it.
fn resolve(common: &Path, name: &str, depth: usize) -> RefAnswer {
    if depth >= SYMREF_DEPTH_MAX
        || !name.starts_with("refs/")
        || name.split('/').any(|c| c.is_empty() || c == "." || c == "..")
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return RefAnswer::Unsure;
    }
    match loose(common, name) {
        Err(()) => RefAnswer::Unsure,
        Ok(Some(Loose::Id(id))) => RefAnswer::Found(id),
        Ok(Some(Loose::Symbolic(target))) => resolve(common, &target, depth + 1),
        Ok(None) => match PackedRefs::read(common) {
            Err(()) => RefAnswer::Unsure,
            Ok(packed) => match packed.find(name) {
                Some(id) => RefAnswer::Found(id.to_string()),
                None => RefAnswer::Absent,
            },
        },
    }
}

enum Loose {
    Id(String),
    Symbolic(String),
}

/// A loose ref file: `Ok(None)` when there is none.
fn loose(common: &Path, name: &str) -> Result<Option<Loose>, ()> {
    let path = common.join(name);
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // A folder of that name (refs/remotes/origin/main/ holding refs) means no such ref.
        Ok(m) if m.is_dir() => return Ok(None),
        Ok(m) if m.is_file() => {}
        _ => return Err(()),
    }
    let text = read_small(&path).ok_or(())?;
    let line = text.strip_suffix('\n').unwrap_or(&text);
    if let Some(target) = line.strip_prefix("ref: ") {
        return Ok(Some(Loose::Symbolic(target.to_string())));
    }
    if super::repo::is_commit_id(line) { Ok(Some(Loose::Id(line.to_string()))) } else { Err(()) }
}

/// `packed-refs`: `<id> <refname>` lines, `^<id>` peel lines and one `#` header.
struct PackedRefs {
    text: String,
}

impl PackedRefs {
    fn read(common: &Path) -> Result<PackedRefs, ()> {
        let path = common.join("packed-refs");
        let text = match crate::platform::fs::read_regular_text(&path, PACKED_REFS_MAX + 1) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(PackedRefs { text: String::new() }),
            Err(_) => return Err(()),
            Ok(text) => text,
        };
        if text.len() as u64 > PACKED_REFS_MAX {
            return Err(());
        }
        for line in text.lines() {
            let understood = line.starts_with('#')
                || line.strip_prefix('^').is_some_and(super::repo::is_commit_id)
                || line.split_once(' ').is_some_and(|(id, name)| super::repo::is_commit_id(id) && name.starts_with("refs/"));
            if !understood {
                return Err(());
            }
        }
        Ok(PackedRefs { text })
    }

    fn find(&self, name: &str) -> Option<&str> {
        self.text.lines().filter_map(|l| l.split_once(' ')).find(|(_, n)| *n == name).map(|(id, _)| id)
    }
}

fn read_small(path: &Path) -> Option<String> {
    let text = crate::platform::fs::read_regular_text(path, REF_FILE_MAX + 1).ok()?;
    (text.len() as u64 <= REF_FILE_MAX).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    fn repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".git/refs/remotes/origin")).unwrap();
        std::fs::create_dir_all(d.path().join(".git/refs/heads")).unwrap();
        std::fs::write(d.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        d
    }

    #[test]
    fn a_symref_target_with_whitespace_or_a_common_dir_that_is_not_one_is_unsure() {
        let d = repo();
        let common = common_dir(d.path()).unwrap();
        put(d.path(), ".git/refs/remotes/origin/HEAD", "ref: refs/remotes/origin/main\r\n");
        put(d.path(), ".git/refs/remotes/origin/main", &format!("{A}\n"));
        assert_eq!(default_branch(&common), Err(()), "a CR is not part of a ref name git would write");
        // A linked worktree whose commondir names no git dir.
        put(d.path(), ".git/worktrees/lane/commondir", "../..\r\n");
        let lane = d.path().join("lane");
        put(&lane, ".git", &format!("gitdir: {}\n", d.path().join(".git/worktrees/lane").display()));
        assert!(common_dir(&lane).is_none());
    }

    #[test]
    fn history_is_plain_unless_shallow_grafted_or_replaced() {
        let d = repo();
        let common = common_dir(d.path()).unwrap();
        assert!(history_is_plain(&common));
        put(d.path(), ".git/packed-refs", &format!("{A} refs/replace/{B}\n"));
        assert!(!history_is_plain(&common), "a packed replace ref");
        std::fs::remove_file(d.path().join(".git/packed-refs")).unwrap();
        put(d.path(), ".git/shallow", &format!("{A}\n"));
        assert!(!history_is_plain(&common), "a shallow clone");
    }

    fn put(d: &Path, rel: &str, text: &str) {
        let p = d.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn origin_head_target_wins_over_the_fixed_list() {
        let d = repo();
        put(d.path(), ".git/refs/remotes/origin/HEAD", "ref: refs/remotes/origin/trunk\n");
        put(d.path(), ".git/refs/remotes/origin/trunk", &format!("{A}\n"));
        put(d.path(), ".git/refs/heads/main", &format!("{B}\n"));
        let common = common_dir(d.path()).unwrap();
        assert_eq!(default_branch(&common), Ok(Some(("refs/remotes/origin/trunk".into(), A.into()))));
    }

    #[test]
    fn packed_refs_are_read_and_a_loose_file_overrides_them() {
        let d = repo();
        put(d.path(), ".git/packed-refs", &format!("# pack-refs with: peeled fully-peeled sorted \n{A} refs/remotes/origin/main\n^{B}\n"));
        let common = common_dir(d.path()).unwrap();
        assert_eq!(default_branch(&common), Ok(Some(("refs/remotes/origin/main".into(), A.into()))));
        put(d.path(), ".git/refs/remotes/origin/main", &format!("{B}\n"));
        assert_eq!(default_branch(&common), Ok(Some(("refs/remotes/origin/main".into(), B.into()))));
    }

    #[test]
    fn no_candidate_is_none_and_odd_files_are_unsure() {
        let d = repo();
        let common = common_dir(d.path()).unwrap();
        assert_eq!(default_branch(&common), Ok(None));
        put(d.path(), ".git/refs/heads/master", "not an id\n");
        assert_eq!(default_branch(&common), Err(()));
        std::fs::remove_file(d.path().join(".git/refs/heads/master")).unwrap();
        put(d.path(), ".git/packed-refs", "garbage line\n");
        assert_eq!(default_branch(&common), Err(()));
        std::fs::remove_file(d.path().join(".git/packed-refs")).unwrap();
        std::fs::create_dir(d.path().join(".git/reftable")).unwrap();
        assert_eq!(default_branch(&common), Err(()));
    }

    #[test]
    fn symref_depth_is_limited_on_both_sides() {
        let d = repo();
        // origin/HEAD -> s1 -> s2 -> ... : SYMREF_DEPTH_MAX hops of symrefs after origin/HEAD
        // is one too many; one fewer resolves.
        let chain = |hops: usize| {
            put(d.path(), ".git/refs/remotes/origin/HEAD", "ref: refs/remotes/origin/s0\n");
            for i in 0..hops {
                put(d.path(), &format!(".git/refs/remotes/origin/s{i}"), &format!("ref: refs/remotes/origin/s{}\n", i + 1));
            }
            put(d.path(), &format!(".git/refs/remotes/origin/s{hops}"), &format!("{A}\n"));
        };
        let common = common_dir(d.path()).unwrap();
        chain(SYMREF_DEPTH_MAX - 1);
        assert_eq!(default_branch(&common), Ok(Some(("refs/remotes/origin/s0".into(), A.into()))));
        chain(SYMREF_DEPTH_MAX);
        assert_eq!(default_branch(&common), Err(()));
    }

    #[test]
    fn a_linked_worktree_finds_the_common_dir() {
        let d = repo();
        put(d.path(), ".git/worktrees/lane/commondir", "../..\n");
        let lane = d.path().join("lane");
        put(&lane, ".git", &format!("gitdir: {}\n", d.path().join(".git/worktrees/lane").display()));
        let common = common_dir(&lane).unwrap();
        assert_eq!(common.canonicalize().unwrap(), d.path().join(".git").canonicalize().unwrap());
        assert!(common_dir(&d.path().join("nowhere")).is_none());
    }

    #[test]
    fn a_ref_file_at_the_size_limit_is_read_and_one_byte_more_is_not() {
        let d = repo();
        let f = d.path().join("f");
        std::fs::write(&f, vec![b'a'; REF_FILE_MAX as usize]).unwrap();
        assert!(read_small(&f).is_some());
        std::fs::write(&f, vec![b'a'; REF_FILE_MAX as usize + 1]).unwrap();
        assert!(read_small(&f).is_none());
    }
}
