//! Where things live on disk (SPEC §1): the working copy's local tier, the home store,
//! the repository and machine journals. Finding them reads the file system only; the
//! repository's root commit is the one fact that needs `git`.

use std::path::{Path, PathBuf};

use crate::event::Scope;
use crate::git;
use crate::journal::anchor::AnchorStore;
use crate::journal::storage::SharedStorage;
use crate::journal::{Journal, JournalPaths};

pub const LOCAL_TIER: &str = ".abcd/.work.local";
pub const JOURNAL_FILE: &str = "journal.jsonl";
/// How many folders up the search for a working copy's root goes.
const MAX_ROOT_SEARCH_DEPTH: usize = 64;

#[derive(Clone, Debug, thiserror::Error)]
pub enum PlaceError {
    #[error(
        "{} is not inside a git repository; cd into one (or make one here with `git init`), run `abcd init` there, and run this again",
        cwd.display()
    )]
    NotInWorkingCopy { cwd: PathBuf },
    #[error("{} is not managed by abcd (no .abcd/ at its root); run `abcd init` there first", root.display())]
    NotManaged { root: PathBuf },
    #[error("no home store: set ABCD_HOME or HOME")]
    NoHome,
    /// A relative home would be a different folder in every working copy (and inside it).
    #[error("ABCD_HOME is {}, a relative path; set it to an absolute one (for example `export ABCD_HOME=\"$HOME/.abcd\"`)", crate::secrets::shown_name(&home.display().to_string()))]
    RelativeHome { home: PathBuf },
    #[error("cannot learn the repository's root commit in {}: {why}", root.display())]
    NoRootCommit { root: PathBuf, why: String },
    #[error(
        "{} has no commit yet, and abcd finds the repository's record by its first commit; make a first commit (`{FIRST_COMMIT}`) and run this again",
        root.display()
    )]
    NoCommitYet { root: PathBuf },
    /// The path is never shown: it is what carries the secret.
    #[error(
        "this folder's path carries {} (not shown); abcd writes a working copy's path into its journals and mirrors them to the remote, so it keeps no record where the path carries a secret; move the working copy to a folder whose path carries none (`mv`, or `git worktree move` for a linked worktree) and run this again",
        kind.describe()
    )]
    PathCarriesSecret { kind: crate::secrets::SecretKind },
}

/// The rule for paths: a folder whose path (as given, as found, or canonical) carries a
/// secret is no working copy abcd keeps a record for, because every journal names the
/// working copy's path and journals leave the machine.
fn path_passes(path: &Path) -> Result<(), PlaceError> {
    match crate::secrets::scan(&path.to_string_lossy()) {
        Some(kind) => Err(PlaceError::PathCarriesSecret { kind }),
        None => Ok(()),
    }
}

/// The command a refusal names for a repository with no commit yet: it commits nothing of
/// the person's work (no file is staged), only gives the repository its first commit.
pub const FIRST_COMMIT: &str = "git commit --allow-empty -m 'first commit'";

/// `$ABCD_HOME`, else `~/.abcd`. A relative `ABCD_HOME` is refused: resolved against the
/// current folder it would put the home store inside each checkout it ran in.
pub fn home_dir() -> Result<PathBuf, PlaceError> {
    if let Some(h) = std::env::var_os("ABCD_HOME").filter(|h| !h.is_empty()) {
        let home = PathBuf::from(h);
        if home.is_relative() {
            return Err(PlaceError::RelativeHome { home });
        }
        return Ok(home);
    }
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".abcd")).ok_or(PlaceError::NoHome)
}

/// The home store's folder of lane worktrees abcd makes: outside every checkout, since a
/// work tree nested in the person's project would be found by build tools looking upward.
pub const LANES_DIR: &str = "lanes";
/// Characters of the working copy's folder name kept in its lanes folder's name.
pub const LANES_NAME_MAX: usize = 32;
/// Hex digits of the working copy root's BLAKE3 in its lanes folder's name.
pub const LANES_KEY_HEX: usize = 12;

/// Where abcd makes the worktree of `run`'s `lane` for the working copy at `root`:
/// `<home>/lanes/<folder name>-<key>/<run>/<lane>`, the key telling apart working copies
/// with the same folder name.
pub fn lane_worktree(root: &Path, run: &str, lane: &str) -> Result<PathBuf, PlaceError> {
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect())
        .unwrap_or_default();
    // A folder name that carries a secret is not kept in a path other tools show.
    let name = crate::secrets::cut_after_scan(name.trim_start_matches(['.', '-']), crate::secrets::Bound::CharsUnmarked(LANES_NAME_MAX))
        .unwrap_or_default();
    let name = if name.is_empty() { "checkout".to_string() } else { name };
    let key = blake3::hash(crate::platform::fs::path_bytes(root)).to_hex();
    Ok(home_dir()?.join(LANES_DIR).join(format!("{name}-{}", &key[..LANES_KEY_HEX])).join(run).join(lane))
}

pub fn anchors() -> Result<AnchorStore, PlaceError> {
    Ok(AnchorStore::new(&home_dir()?))
}

/// The top of the git work tree containing `cwd`, and the root that holds `.abcd/`
/// (the main worktree's, for a linked worktree).
pub fn working_copy_root(cwd: &Path) -> Result<(PathBuf, PathBuf), PlaceError> {
    path_passes(cwd)?;
    let mut dir = cwd.to_path_buf();
    for _ in 0..MAX_ROOT_SEARCH_DEPTH {
        let dotgit = dir.join(".git");
        if dotgit.is_dir() {
            return Ok((dir.clone(), dir));
        }
        if dotgit.is_file() {
            let main = git::repo::main_worktree_of(&dotgit).unwrap_or_else(|| dir.clone());
            path_passes(&main)?;
            return Ok((dir, main));
        }
        if !dir.pop() {
            break;
        }
    }
    Err(PlaceError::NotInWorkingCopy { cwd: cwd.to_owned() })
}

/// The work tree around `cwd` whose git link cannot be followed (see
/// [`git::repo::worktree_link_broken`]): git fails there, and abcd cannot tell which
/// repository it belongs to. None when the nearest `.git` is a folder or a link that holds.
pub fn broken_worktree_link(cwd: &Path) -> Option<PathBuf> {
    let mut dir = cwd.to_path_buf();
    for _ in 0..MAX_ROOT_SEARCH_DEPTH {
        let dotgit = dir.join(".git");
        if dotgit.is_dir() {
            return None;
        }
        if dotgit.is_file() {
            return git::repo::worktree_link_broken(&dotgit).then_some(dir);
        }
        if !dir.pop() {
            break;
        }
    }
    None
}

/// The managed working copy's journal paths and scope.
pub fn working_copy_journal(cwd: &Path) -> Result<(JournalPaths, Scope), PlaceError> {
    let (root, main_root) = working_copy_root(cwd)?;
    journal_of(&root, &main_root)
}

/// The working copy journal of the work tree at `root` whose `.abcd/` is at `main_root`.
fn journal_of(root: &Path, main_root: &Path) -> Result<(JournalPaths, Scope), PlaceError> {
    if !main_root.join(".abcd").is_dir() {
        return Err(PlaceError::NotManaged { root: main_root.to_owned() });
    }
    let tier = root.join(LOCAL_TIER);
    // The scope names the root canonical, so the same folder reached through a symlinked
    // path is the same working copy, and a moved one is told from it (format §11).
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
    path_passes(&canonical)?;
    Ok((JournalPaths::beside(&tier.join(JOURNAL_FILE)), Scope::WorkingCopy { root: canonical.display().to_string() }))
}

/// The cache of the repository's first root commit, in the main worktree's local tier.
pub const ROOT_COMMIT_CACHE: &str = "repository-root-commit";
/// The cache holds one commit id and a newline; it is read this far at most.
const ROOT_COMMIT_CACHE_MAX_BYTES: u64 = 4096;

/// The repository journal in the home store of `home`, for the repository whose main
/// worktree is `main_root`, keyed by the first root commit of its HEAD. The commit is looked
/// up once (one `git rev-list`) and cached in the main worktree's local tier, so hooks spawn
/// no git for it and every linked worktree (an orphan branch's included) finds the same
/// record.
fn repository_of(main_root: &Path, home: impl FnOnce() -> Result<PathBuf, PlaceError>) -> Result<(JournalPaths, Scope), PlaceError> {
    let cache = main_root.join(LOCAL_TIER).join(ROOT_COMMIT_CACHE);
    let commit = match read_root_commit_cache(&cache) {
        Some(c) => c,
        None => {
            let c = git::repo::root_commit(main_root).map_err(|why| no_root_commit(main_root, why))?;
            if main_root.join(LOCAL_TIER).is_dir() {
                // A cache: a failed write only means the next call asks git again.
                let _ =
                    crate::journal::storage::write_atomic(&crate::journal::storage::RealDisk, &cache, format!("{c}\n").as_bytes(), false);
            }
            c
        }
    };
    Ok(repository_at(&home()?, commit))
}

/// [`repository_of`] from the root-commit cache alone: `None` when the cache is not there
/// yet. For the status line, which runs every few hundred milliseconds and starts no git; a
/// hook or a verb writes the cache the first time it asks git.
fn repository_cached_of(
    main_root: &Path,
    home: impl FnOnce() -> Result<PathBuf, PlaceError>,
) -> Result<Option<(JournalPaths, Scope)>, PlaceError> {
    let Some(commit) = read_root_commit_cache(&main_root.join(LOCAL_TIER).join(ROOT_COMMIT_CACHE)) else { return Ok(None) };
    Ok(Some(repository_at(&home()?, commit)))
}

/// The home store's folder of the repositories' journals, each under its first root commit.
pub const REPOS_DIR: &str = "repos";

/// The journal of the repository whose first root commit is `commit`, in `home`.
fn repository_at(home: &Path, commit: String) -> (JournalPaths, Scope) {
    let dir = home.join(REPOS_DIR).join(&commit);
    (JournalPaths::beside(&dir.join(JOURNAL_FILE)), Scope::Repository { root_commit: commit })
}

/// Why the root commit is unknown: a HEAD on a branch that does not exist yet (read from
/// git's files) is a repository with no commit, which the person fixes with a first commit.
fn no_root_commit(main_root: &Path, why: String) -> PlaceError {
    let unborn = git::branch::current_branch(main_root).is_some_and(|b| !git::branch::branch_exists(main_root, &b));
    if unborn {
        PlaceError::NoCommitYet { root: main_root.to_owned() }
    } else {
        PlaceError::NoRootCommit { root: main_root.to_owned(), why }
    }
}

fn read_root_commit_cache(path: &Path) -> Option<String> {
    let text = crate::platform::fs::read_regular_text(path, ROOT_COMMIT_CACHE_MAX_BYTES).ok()?;
    let c = text.trim();
    git::repo::is_commit_id(c).then(|| c.to_string())
}

/// This machine's index of runs.
pub fn machine_journal() -> Result<(JournalPaths, Scope), PlaceError> {
    Ok((JournalPaths::beside(&home_dir()?.join("machine.jsonl")), Scope::Machine {}))
}

/// How long a verb a person ran waits for the writer lock. Hooks wait the 2 s of SPEC §5
/// and then fail open; a person would rather wait a little longer than be refused while
/// other writers (eight at once, on a loaded machine) take their turns.
pub const VERB_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// [`open_journal_for_verb`] for the journal of `scope`.
pub fn open_scoped_for_verb(storage: SharedStorage, paths: JournalPaths, scope: &Scope) -> Result<Journal, PlaceError> {
    Ok(open_journal_for_verb(storage, paths)?.expecting(scope.clone()))
}

/// A journal handle with the home store's anchors, for a hook (the 2 s lock wait).
pub fn open_journal(storage: SharedStorage, paths: JournalPaths) -> Result<Journal, PlaceError> {
    Ok(Journal::new(storage, paths, Some(anchors()?)))
}

/// A journal handle for a verb a person ran (`VERB_LOCK_WAIT`).
pub fn open_journal_for_verb(storage: SharedStorage, paths: JournalPaths) -> Result<Journal, PlaceError> {
    Ok(open_journal(storage, paths)?.with_lock_wait(VERB_LOCK_WAIT))
}

/// This machine's name as a mirror records it: `ABCD_MACHINE` when set, else the host
/// name, kept to printable characters and `MACHINE_NAME_MAX` bytes.
pub fn machine_name() -> String {
    let raw = std::env::var("ABCD_MACHINE").ok().filter(|m| !m.is_empty()).or_else(crate::platform::process::host_name).unwrap_or_default();
    let graphic: String = raw.chars().filter(|c| c.is_ascii_graphic()).collect();
    // The name leaves the machine in every mirror: one that carries a secret, scanned whole
    // before the cut, never does.
    match crate::secrets::cut_after_scan(&graphic, crate::secrets::Bound::CharsUnmarked(crate::mirror::MACHINE_NAME_MAX)) {
        Ok(name) if !name.is_empty() => name,
        _ => "unnamed".to_string(),
    }
}

/// One folder's places, found once at the edge (a verb a person ran, a hook's payload) and
/// passed down as `&Place`: the work tree's root and the repository's (its main worktree),
/// the local tier, the home store and both journals. Each answer is what the free function
/// of the same concern answers for the folder, the same error in the same order, so a
/// command refuses the same way whichever way it reached the folder. The repository journal is
/// learned on first ask and kept: learning it may start `git` and write the root-commit
/// cache, which a command that never asks must not do.
#[derive(Clone, Debug)]
pub struct Place {
    cwd: PathBuf,
    roots: Result<(PathBuf, PathBuf), PlaceError>,
    working_copy: Result<(JournalPaths, Scope), PlaceError>,
    repository: std::sync::OnceLock<Result<(JournalPaths, Scope), PlaceError>>,
    home: Result<PathBuf, PlaceError>,
}

impl Place {
    /// The places of the folder the process runs in.
    pub fn here() -> std::io::Result<Place> {
        Ok(Place::at(&std::env::current_dir()?))
    }

    /// The places of `cwd`, with the home store of the environment ([`home_dir`]).
    pub fn at(cwd: &Path) -> Place {
        Place::with_home(cwd, home_dir())
    }

    /// The places of `cwd` with the home store given: what a test builds from plain values.
    pub fn with_home(cwd: &Path, home: Result<PathBuf, PlaceError>) -> Place {
        let roots = working_copy_root(cwd);
        let working_copy = roots.clone().and_then(|(root, main_root)| journal_of(&root, &main_root));
        Place { cwd: cwd.to_owned(), roots, working_copy, repository: std::sync::OnceLock::new(), home }
    }

    /// The folder the places were found from.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The top of the work tree and the root that holds `.abcd/` ([`working_copy_root`]).
    pub fn roots(&self) -> Result<(PathBuf, PathBuf), PlaceError> {
        self.roots.clone()
    }

    /// The top of the work tree.
    pub fn root(&self) -> Result<PathBuf, PlaceError> {
        Ok(self.roots()?.0)
    }

    /// The repository's root: its main worktree's top.
    pub fn main_root(&self) -> Result<PathBuf, PlaceError> {
        Ok(self.roots()?.1)
    }

    /// The managed working copy's journal paths and scope ([`working_copy_journal`]).
    pub fn working_copy(&self) -> Result<(JournalPaths, Scope), PlaceError> {
        self.working_copy.clone()
    }

    /// The repository journal's paths and scope ([`repository_of`]), learned once.
    pub fn repository(&self) -> Result<(JournalPaths, Scope), PlaceError> {
        self.repository
            .get_or_init(|| {
                let (_, main_root) = self.roots()?;
                repository_of(&main_root, || self.home.clone())
            })
            .clone()
    }

    /// [`Place::repository`] from the root-commit cache alone ([`repository_cached_of`]).
    pub fn repository_cached(&self) -> Result<Option<(JournalPaths, Scope)>, PlaceError> {
        if let Some(found) = self.repository.get() {
            return found.clone().map(Some);
        }
        let (_, main_root) = self.roots()?;
        repository_cached_of(&main_root, || self.home.clone())
    }

    /// The home store ([`home_dir`]).
    pub fn home(&self) -> Result<PathBuf, PlaceError> {
        self.home.clone()
    }

    /// The home store's folder of one repository (`repos/<root-commit>`).
    pub fn repository_home(&self, root_commit: &str) -> Result<PathBuf, PlaceError> {
        Ok(self.home()?.join(REPOS_DIR).join(root_commit))
    }

    /// A journal handle with this place's home store's anchors (a hook's 2 s lock wait)
    /// for the journal of `scope`: one of another scope there is refused by readers and
    /// appends, and set aside by repair (journal-format/SPEC.md §11).
    pub fn open_scoped(&self, storage: SharedStorage, paths: JournalPaths, scope: &Scope) -> Result<Journal, PlaceError> {
        Ok(Journal::new(storage, paths, Some(AnchorStore::new(&self.home()?))).expecting(scope.clone()))
    }

    /// [`open_scoped_for_verb`] with this place's home store's anchors.
    pub fn open_scoped_for_verb(&self, storage: SharedStorage, paths: JournalPaths, scope: &Scope) -> Result<Journal, PlaceError> {
        Ok(self.open_scoped(storage, paths, scope)?.with_lock_wait(VERB_LOCK_WAIT))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A root commit the cache may hold: with it, the repository journal is found without git.
    pub(crate) const CACHED_COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    /// A working copy made of plain folders (no git run): `.git/`, `.abcd/`, its local tier
    /// with the root-commit cache, and a home store beside it.
    pub(crate) struct Folder {
        pub dir: tempfile::TempDir,
    }

    impl Folder {
        pub(crate) fn managed() -> Folder {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(dir.path().join("copy/.git")).unwrap();
            std::fs::create_dir_all(dir.path().join("copy").join(LOCAL_TIER)).unwrap();
            std::fs::create_dir_all(dir.path().join("home")).unwrap();
            std::fs::write(dir.path().join("copy").join(LOCAL_TIER).join(ROOT_COMMIT_CACHE), format!("{CACHED_COMMIT}\n")).unwrap();
            Folder { dir }
        }

        pub(crate) fn copy(&self) -> PathBuf {
            self.dir.path().join("copy")
        }

        pub(crate) fn home(&self) -> PathBuf {
            self.dir.path().join("home")
        }

        pub(crate) fn place(&self, within: &str) -> Place {
            let dir = if within.is_empty() { self.copy() } else { self.copy().join(within) };
            Place::with_home(&dir, Ok(self.home()))
        }
    }

    #[test]
    fn a_place_names_the_roots_the_journals_and_the_home_it_was_given() {
        let f = Folder::managed();
        std::fs::create_dir_all(f.copy().join("src/deep")).unwrap();
        let place = f.place("src/deep");
        assert_eq!(place.cwd(), f.copy().join("src/deep"));
        assert_eq!(place.roots().unwrap(), (f.copy(), f.copy()));
        let (paths, scope) = place.working_copy().unwrap();
        assert_eq!(paths.journal, f.copy().join(LOCAL_TIER).join(JOURNAL_FILE));
        let canonical = std::fs::canonicalize(f.copy()).unwrap().display().to_string();
        assert_eq!(scope, Scope::WorkingCopy { root: canonical });
        let (paths, scope) = place.repository().unwrap();
        assert_eq!(paths.journal, f.home().join("repos").join(CACHED_COMMIT).join(JOURNAL_FILE));
        assert_eq!(scope, Scope::Repository { root_commit: CACHED_COMMIT.into() });
        assert_eq!(place.repository_cached().unwrap().map(|(p, _)| p.journal), Some(paths.journal));
        assert_eq!(place.repository_home(CACHED_COMMIT).unwrap(), f.home().join("repos").join(CACHED_COMMIT));
    }

    #[test]
    fn a_place_refuses_as_the_folder_functions_do() {
        let f = Folder::managed();
        let outside = Place::with_home(f.dir.path(), Ok(f.home()));
        // A temporary folder may sit inside a repository on some machines; the rule holds
        // only where it does not.
        if working_copy_root(f.dir.path()).is_err() {
            assert!(matches!(outside.roots(), Err(PlaceError::NotInWorkingCopy { .. })));
            assert!(matches!(outside.working_copy(), Err(PlaceError::NotInWorkingCopy { .. })));
            assert!(matches!(outside.repository(), Err(PlaceError::NotInWorkingCopy { .. })));
        }
        std::fs::remove_dir_all(f.copy().join(".abcd")).unwrap();
        let unmanaged = f.place("");
        assert!(matches!(unmanaged.working_copy(), Err(PlaceError::NotManaged { .. })));
        let homeless = Place::with_home(&f.copy(), Err(PlaceError::NoHome));
        assert!(matches!(homeless.home(), Err(PlaceError::NoHome)));
    }

    #[test]
    fn the_repository_journal_is_learned_once_per_place() {
        let f = Folder::managed();
        let place = f.place("");
        let first = place.repository().unwrap();
        // The cache gone, a new look would ask git (and fail here, with no repository): the
        // place answers what it learned.
        std::fs::remove_file(f.copy().join(LOCAL_TIER).join(ROOT_COMMIT_CACHE)).unwrap();
        assert_eq!(place.repository().unwrap(), first);
        assert_eq!(place.repository_cached().unwrap(), Some(first));
    }

    /// The calls that find a folder's places again. A command takes the `&Place` its verb
    /// or hook resolved; it finds another working copy's through `Place::at`.
    const RESOLVING_CALLS: &[&str] =
        &["working_copy_root(", "working_copy_journal(", "repository_journal(", "repository_journal_cached(", "env::current_dir("];

    /// The source without its test items (`#[cfg(test)]` and the item after it, to its
    /// closing brace or semicolon) and without line comments.
    fn product_code(text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find("#[cfg(test)]") {
            out.push_str(&rest[..at]);
            let after = &rest[at..];
            let (mut depth, mut end) = (0usize, after.len());
            // The braces by code point: a source scan that counts braces reads this one whole.
            let (open, close) = ('\u{7b}', '\u{7d}');
            for (i, c) in after.char_indices() {
                if c == open {
                    depth += 1;
                } else if c == close && depth == 1 {
                    end = i + 1;
                    break;
                } else if c == close {
                    depth -= 1;
                } else if c == ';' && depth == 0 {
                    end = i + 1;
                    break;
                }
            }
            rest = &after[end..];
        }
        out.push_str(rest);
        out.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
    }

    /// Each `file: call` under `root/command` that resolves a folder again.
    fn resolving_in_commands(root: &Path) -> Vec<String> {
        let mut found = Vec::new();
        let mut dirs = vec![root.join("command")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
                    // A `tests.rs` is a test module's file (`#[cfg(test)] mod tests;`).
                    let code = product_code(&std::fs::read_to_string(&path).unwrap());
                    for call in RESOLVING_CALLS.iter().filter(|c| code.contains(**c)) {
                        found.push(format!("{}: {call}", path.strip_prefix(root).unwrap().display()));
                    }
                }
            }
        }
        found.sort();
        found
    }

    #[test]
    fn no_command_resolves_a_folder_again() {
        let found = resolving_in_commands(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
        assert!(found.is_empty(), "a command resolves a folder itself; take the verb's `&Place` instead:\n{}", found.join("\n"));
    }

    #[test]
    fn a_command_resolving_a_folder_is_caught_and_test_code_is_not() {
        let tree = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tree.path().join("command/hook")).unwrap();
        std::fs::write(tree.path().join("command/run.rs"), "fn f() { let c = std::env::current_dir(); }\n").unwrap();
        std::fs::write(
            tree.path().join("command/hook/mod.rs"),
            "// places::working_copy_root(cwd) in a comment\nfn g() { crate::places::repository_journal(x); }\n#[cfg(test)]\nmod tests {\n    fn t() { if y { places::working_copy_journal(x); } }\n}\n#[cfg(test)]\nmod more;\nfn h() {}\n",
        )
        .unwrap();
        assert_eq!(
            resolving_in_commands(tree.path()),
            vec!["command/hook/mod.rs: repository_journal(", "command/run.rs: env::current_dir("]
        );
    }
}
