//! One lane worktree as git sees it, for the launch ledger (SPEC §7).
//!
//! Reads what a lane holds uncommitted, saves that work aside under
//! `refs/abcd/saved/<run>/<lane>/<time>` (checked to hold all of it before anyone may build
//! over it), returns the lane to its last commit, and says how far its base has moved
//! behind the default branch.
//!
//! The save never touches the work tree or the real index: it builds its tree in a
//! temporary index (HEAD plus exactly the paths `git status` names), commits that tree on
//! top of HEAD and creates the ref only where none exists. Every git child is started by
//! [`super::run`] (no shell, stdin closed, prompts and hooks off, a process group of its
//! own), is killed after [`GIT_DEADLINE`], and has its stdout read up to [`GIT_OUTPUT_MAX`]
//! bytes; the first line of its stderr is the error a person reads.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jiff::Timestamp;

use super::refs::DEFAULT_REFS;
use super::run::{self, GIT_DEADLINE, GIT_OUTPUT_MAX, Ran, RunError, first_line, subcommand};

/// `git worktree add` and `remove` are killed after this: they write or delete a whole tree,
/// which on a large repository takes far longer than a read.
pub const GIT_WORKTREE_DEADLINE: Duration = Duration::from_secs(600);
/// A run or lane name is 1 to this many of `[A-Za-z0-9._-]`.
pub const NAME_LEN_MAX: usize = 64;
/// Paths handed to one git child at most, so an argument list stays far below the
/// system's limit however many files a lane changed.
pub const PATHS_PER_CHILD: usize = 256;
/// Saves of one lane named for the same millisecond at most (`<time>`, `<time>-2`, …).
pub const SAME_TIME_SAVES_MAX: u32 = 100;
/// Where saved-aside work lives: `<prefix>/<run>/<lane>/<utc-compact-time>`.
pub const SAVED_REF_PREFIX: &str = "refs/abcd/saved";

/// The saved commit is abcd's own, so it does not depend on (or borrow) the person's
/// identity being configured.
const SAVER_NAME: &str = "abcd";
const SAVER_EMAIL: &str = "abcd@localhost";
/// How many worktrees the resume listing reads at once, each on a thread of its own with
/// its git children: the listing's wall time is then about one worktree's, not their sum.
pub const LISTING_PARALLEL: usize = 8;

/// What a lane worktree holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorktreeStatus {
    /// True for a linked worktree (`git worktree add`), false for a repository's main
    /// working tree. A folder that is neither is [`WorktreeError::NotAWorktree`].
    pub is_worktree: bool,
    /// HEAD's commit; None on a branch with no commit yet.
    pub head: Option<String>,
    /// The branch checked out (`main`, not `refs/heads/main`); None when detached.
    pub branch: Option<String>,
    /// Modified, added, deleted and untracked paths (ignored ones aside), relative to the
    /// worktree's root, sorted, each once. An untracked nested repository ends in `/`.
    pub changed: Vec<String>,
    /// The repository's common git folder, resolved: two work trees of one repository
    /// share it.
    pub common_dir: PathBuf,
    /// The work tree's own git folder, resolved; a linked work tree's holds `gitdir`, git's
    /// record of where that work tree is.
    pub git_dir: PathBuf,
}

/// Work saved aside by [`save_aside`], verified to hold all of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedAside {
    /// `refs/abcd/saved/<run>/<lane>/<time>` (with `-<n>` when that name was taken).
    pub ref_name: String,
    /// The saved commit; its one parent is the HEAD the work was on.
    pub commit: String,
    /// The paths saved, as [`WorktreeStatus::changed`] listed them.
    pub files: Vec<String>,
    /// The one shell command that brings the work back onto the lane's work tree, as
    /// unstaged changes and untracked files (deletions included). It applies the save's
    /// changes as a three-way merge, so it also works after the lane moved on, and git
    /// refuses it rather than overwrite local changes.
    pub restore_command: String,
}

/// How far a lane's base has moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseDrift {
    /// The default branch's full ref as read, e.g. `refs/remotes/origin/main`.
    pub default_ref: String,
    /// Commits on it that the lane's HEAD does not hold.
    pub behind: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("the {what} name {} is refused: {why}", crate::secrets::shown_name(name))]
    BadName { what: &'static str, name: String, why: &'static str },
    #[error("{} is not a git worktree: {why}", path.display())]
    NotAWorktree { path: PathBuf, why: String },
    #[error("{} has no commit yet, so there is no last commit to save its work on top of", path.display())]
    NoCommit { path: PathBuf },
    #[error("{} holds no uncommitted work; nothing was saved", path.display())]
    NothingToSave { path: PathBuf },
    #[error("the work in {} cannot be saved aside, so nothing was saved: {path} {why}", worktree.display())]
    CannotHold { worktree: PathBuf, path: String, why: &'static str },
    #[error("git {command} did not finish within its deadline ({} s, {} s for a whole work tree) and was killed", GIT_DEADLINE.as_secs(), GIT_WORKTREE_DEADLINE.as_secs())]
    Deadline { command: String },
    #[error("git {command} failed: {why}")]
    Git { command: String, why: String },
    #[error(
        "the work saved at {ref_name} does not hold all of it ({why}); {}",
        if *ref_removed { "the ref was removed again and nothing else was touched" } else { "removing the ref failed too: remove it with `git update-ref -d` before trusting it" }
    )]
    Unverified { ref_name: String, why: String, ref_removed: bool },
    #[error("{} still holds uncommitted work after returning to its last commit: {}", path.display(), some_paths(changed))]
    NotClean { path: PathBuf, changed: Vec<String> },
    #[error("no temporary folder for the save: {0}")]
    Temp(std::io::Error),
}

/// At most a few paths for a one-line message, then how many more.
pub fn some_paths(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = paths.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if paths.len() > SHOWN {
        s.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    s
}

/// Reads what the worktree at `worktree` (its root) holds.
pub fn status(worktree: &Path) -> Result<WorktreeStatus, WorktreeError> {
    let place = locate(worktree)?;
    let reading = read_status(&Git::new(&place.root))?;
    Ok(WorktreeStatus {
        is_worktree: place.linked,
        head: reading.head,
        branch: reading.branch,
        changed: reading.changed.into_keys().collect(),
        common_dir: place.common,
        git_dir: place.git_dir,
    })
}

/// The common git folder, resolved, of the repository whose work tree has its root at `root`.
pub fn common_dir(root: &Path) -> Result<PathBuf, WorktreeError> {
    Ok(locate(root)?.common)
}

/// Saves every modified, added (staged or not), deleted and untracked file (ignored files
/// aside) into a commit whose parent is HEAD, under
/// `refs/abcd/saved/<run>/<lane>/<utc-compact-time>`, without touching the work tree or
/// the real index, then verifies the ref holds all of it before returning.
///
/// Run and lane names are `[A-Za-z0-9._-]{1,64}`, not starting with `.` or `-`, with no
/// `..` and no `.lock` ending (git refuses those in a ref), checked before any git runs. An existing
/// ref is never overwritten: a second save for the same lane and time gets `-2`, `-3`, ….
/// A worktree with nothing changed is refused ([`WorktreeError::NothingToSave`]) rather
/// than given an empty save, so every saved ref holds work. A nested repository or
/// submodule with changes is refused ([`WorktreeError::CannotHold`]): a tree can name only
/// its commit, not its work.
///
/// The tree is HEAD's plus exactly the paths `git status` names, each read from the work
/// tree (an index entry staged but changed again in the work tree is saved as the work
/// tree has it). Verification then checks, independently of how the tree was built, that
/// the ref names the commit, its one parent is HEAD, no path outside those differs from
/// HEAD's tree, and each path's entry equals `git hash-object` of the work-tree file (or
/// the link's target for a symlink), or is absent for a deletion. Any mismatch deletes the
/// ref again and errs.
pub fn save_aside(worktree: &Path, run: &str, lane: &str, now: Timestamp, keep: Keep<'_>) -> Result<SavedAside, WorktreeError> {
    save_with(worktree, run, lane, now, keep, None)
}

/// Replaces the built commit before it is stored: a seam for the verification test only.
type Swap<'a> = &'a dyn Fn(&Path, &str) -> String;

fn save_with(
    worktree: &Path,
    run: &str,
    lane: &str,
    now: Timestamp,
    keep: Keep<'_>,
    swap: Option<Swap<'_>>,
) -> Result<SavedAside, WorktreeError> {
    check_name("run", run)?;
    check_name("lane", lane)?;
    let place = locate(worktree)?;
    let root = place.root.as_path();
    // The restore command names the worktree in shell words, which a non-UTF-8 name has
    // no faithful spelling in.
    let Some(root_text) = root.to_str() else {
        return Err(WorktreeError::CannotHold { worktree: root.into(), path: String::new(), why: "(its folder's name is not UTF-8)" });
    };
    let git = Git::new(root);
    let mut reading = read_status(&git)?;
    reading.changed.retain(|p, _| !keep(p));
    let head = reading.head.ok_or_else(|| WorktreeError::NoCommit { path: root.into() })?;
    if reading.changed.is_empty() {
        return Err(WorktreeError::NothingToSave { path: root.into() });
    }
    if let Some((path, why)) = reading.changed.iter().find_map(|(p, why)| why.map(|w| (p, w))) {
        return Err(WorktreeError::CannotHold { worktree: root.into(), path: path.clone(), why });
    }
    let files: Vec<String> = reading.changed.into_keys().collect();

    let temp = tempfile::Builder::new().prefix("abcd-save-").tempdir().map_err(WorktreeError::Temp)?;
    let mut commit = build(&git, temp.path(), &head, &files, run, lane, now)?;
    if let Some(swap) = swap {
        commit = swap(root, &commit);
    }
    let ref_name = create_ref(&git, run, lane, now, &commit)?;
    if let Err(why) = verify(&git, temp.path(), &ref_name, &head, &commit, &files) {
        // Only our own commit is removed: a ref someone moved since is left alone.
        let ref_removed = git.run(&["update-ref", "-d", &ref_name, &commit]).is_ok_and(|r| r.code == Some(0));
        return Err(WorktreeError::Unverified { ref_name, why, ref_removed });
    }
    let wt = shell_quote(root_text);
    let restore_command = format!("git -C {wt} cherry-pick --no-commit {ref_name} && git -C {wt} reset -q");
    Ok(SavedAside { ref_name, commit, files, restore_command })
}

/// Paths a save and a reset leave alone: abcd's own files in a checkout (its folder, the
/// host settings `abcd init` wrote), which are not a lane's work.
pub type Keep<'a> = &'a dyn Fn(&str) -> bool;

/// Returns the lane to its last commit for exactly the paths [`save_aside`] saved and
/// verified: each one HEAD has is checked out from HEAD (index and work tree), each one it
/// has not is unstaged and deleted, with the folders that leaves empty. Nothing else is
/// touched: ignored files, abcd's own files and anything changed after the save stay.
/// Checks afterwards that only `keep`'s paths (and none of the lane's work) remain changed.
pub fn return_to_last_commit(worktree: &Path, saved: &[String], keep: Keep<'_>) -> Result<(), WorktreeError> {
    let place = locate(worktree)?;
    let root = place.root.as_path();
    let git = Git::new(root);
    let saved: Vec<&String> = saved.iter().filter(|p| !keep(p)).collect();
    let mut in_head: BTreeSet<String> = BTreeSet::new();
    for chunk in saved.chunks(PATHS_PER_CHILD) {
        let mut args: Vec<&str> = vec!["ls-tree", "-r", "-z", "--name-only", "HEAD", "--"];
        args.extend(chunk.iter().map(|p| p.as_str()));
        let out = git.ok(&args)?;
        in_head.extend(out.split(|&b| b == 0).filter(|n| !n.is_empty()).map(|n| String::from_utf8_lossy(n).into_owned()));
    }
    let (tracked, new): (Vec<&String>, Vec<&String>) = saved.into_iter().partition(|p| in_head.contains(p.as_str()));
    // New paths go first, so a file that replaced a folder of HEAD's (or the reverse) is
    // out of the way before HEAD's entries come back.
    for chunk in new.chunks(PATHS_PER_CHILD) {
        // Exactly these index entries, if staged: no folder is taken recursively.
        let mut args: Vec<&str> = vec!["update-index", "--force-remove", "--"];
        args.extend(chunk.iter().map(|p| p.as_str()));
        git.ok(&args)?;
    }
    for p in &new {
        remove_with_empty_parents(root, p)?;
    }
    for chunk in tracked.chunks(PATHS_PER_CHILD) {
        let mut args: Vec<&str> = vec!["checkout", "-q", "HEAD", "--"];
        args.extend(chunk.iter().map(|p| p.as_str()));
        git.ok(&args)?;
    }
    let left: Vec<String> = read_status(&git)?.changed.into_keys().filter(|p| !keep(p)).collect();
    if left.is_empty() { Ok(()) } else { Err(WorktreeError::NotClean { path: place.root, changed: left }) }
}

/// Deletes one untracked file (or link) of the lane and the folders under `root` that it
/// leaves empty. A path already gone is fine; a folder is never removed with content.
fn remove_with_empty_parents(root: &Path, relative: &str) -> Result<(), WorktreeError> {
    let gone = |e: std::io::Error| WorktreeError::Git { command: "clean".into(), why: format!("removing {relative}: {e}") };
    let path = root.join(relative);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => std::fs::remove_file(&path).map_err(gone)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(gone(e)),
    }
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| *d != root && d.starts_with(root)) {
        if std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
    Ok(())
}

/// Makes a lane worktree at `path` on a new branch `branch` started at `base`, from the
/// repository whose work tree is `repo`. An existing branch of that name is refused by git,
/// so no one's branch is ever moved.
pub fn add_lane_worktree(repo: &Path, path: &Path, branch: &str, base: &str) -> Result<(), WorktreeError> {
    let git = Git::for_whole_tree(repo);
    let path_arg = path.as_os_str();
    git.ok(&[
        OsStr::new("worktree"),
        OsStr::new("add"),
        OsStr::new("-q"),
        OsStr::new("-b"),
        OsStr::new(branch),
        path_arg,
        OsStr::new(base),
    ])?;
    Ok(())
}

/// Makes a lane worktree at `path` on the existing branch `branch` (a recorded lane
/// worktree whose folder was deleted by hand).
pub fn add_lane_worktree_on(repo: &Path, path: &Path, branch: &str) -> Result<(), WorktreeError> {
    Git::for_whole_tree(repo).ok(&[OsStr::new("worktree"), OsStr::new("add"), OsStr::new("-q"), path.as_os_str(), OsStr::new(branch)])?;
    Ok(())
}

/// Lets git forget worktrees whose folders are gone.
pub fn prune_worktrees(repo: &Path) -> Result<(), WorktreeError> {
    Git::new(repo).ok(&["worktree", "prune"])?;
    Ok(())
}

/// Removes a clean lane worktree abcd made (git refuses one with changes or untracked
/// files; its ignored files, build output, go with it), and its branch when the branch
/// still points at `base` (no commit was made on it). Says whether the branch went.
pub fn remove_lane_worktree(repo: &Path, path: &Path, branch: &str, base: &str) -> Result<bool, WorktreeError> {
    Git::for_whole_tree(repo).ok(&[OsStr::new("worktree"), OsStr::new("remove"), path.as_os_str()])?;
    let git = Git::new(repo);
    let full = format!("refs/heads/{branch}");
    let tip = resolve_id(&git, &format!("{full}^{{commit}}"))?;
    if tip.as_deref() != Some(base) {
        return Ok(false);
    }
    // update-ref with the old value deletes only if the branch is still where it was read.
    Ok(git.run(&["update-ref", "-d", &full, base])?.code == Some(0))
}

/// The commit the branch `branch` (`abcd/…`, not `refs/heads/…`) points at, None when it
/// does not exist.
pub fn branch_tip(repo: &Path, branch: &str) -> Result<Option<String>, WorktreeError> {
    resolve_id(&Git::new(repo), &format!("refs/heads/{branch}^{{commit}}"))
}

/// Whether HEAD of the work tree at `root` holds the file `path` (relative to `root`).
pub fn committed_at_head(root: &Path, path: &str) -> Result<bool, WorktreeError> {
    let ran = Git::new(root).run(&["cat-file", "-e", &format!("HEAD:{path}")])?;
    Ok(ran.code == Some(0))
}

/// The commit `HEAD` names in the work tree at `dir`, None before the first commit.
pub fn head_commit(dir: &Path) -> Result<Option<String>, WorktreeError> {
    resolve_id(&Git::new(dir), "HEAD^{commit}")
}

/// How far the lane's base has moved: commits on the default branch as last fetched
/// (`origin/HEAD`'s target, else `origin/main` or `origin/master`, else the local `main` or
/// `master`) that the lane's HEAD does not hold. None when no default branch is found.
/// Nothing is fetched: this reads what the last fetch left.
pub fn base_drift(worktree: &Path) -> Result<Option<BaseDrift>, WorktreeError> {
    let place = locate(worktree)?;
    let git = Git::new(&place.root);
    let Some((default_ref, base)) = default_branch_by_git(&git)? else { return Ok(None) };
    let head = resolve_id(&git, "HEAD^{commit}")?;
    let behind = count_behind(&git, &base, head.as_deref())?;
    Ok(Some(BaseDrift { default_ref, behind }))
}

/// The default branch's ref and commit, as git resolves them (see [`base_drift`]).
fn default_branch_by_git(git: &Git<'_>) -> Result<Option<(String, String)>, WorktreeError> {
    let mut tried: Vec<String> = Vec::with_capacity(DEFAULT_REFS.len() + 1);
    let origin_head = git.run(&["symbolic-ref", "-q", "refs/remotes/origin/HEAD"])?;
    if origin_head.code == Some(0) {
        tried.push(text(&origin_head.out).trim().to_string());
    }
    tried.extend(DEFAULT_REFS.iter().map(|r| r.to_string()));
    for r in tried {
        if let Some(id) = resolve_id(git, &format!("{r}^{{commit}}"))? {
            return Ok(Some((r, id)));
        }
    }
    Ok(None)
}

/// Commits reachable from `base` and not from `head` (all of `base`'s when HEAD has no
/// commit yet).
fn count_behind(git: &Git<'_>, base: &str, head: Option<&str>) -> Result<u64, WorktreeError> {
    let out = match head {
        Some(head) => git.ok(&["rev-list", "--count", base, &format!("^{head}"), "--"])?,
        None => git.ok(&["rev-list", "--count", base, "--"])?,
    };
    text(&out)
        .trim()
        .parse()
        .map_err(|_| WorktreeError::Git { command: "rev-list".into(), why: "its count did not read as a number".into() })
}

/// What the resume listing shows of one worktree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListingFacts {
    /// As [`WorktreeStatus::changed`].
    pub changed: Vec<String>,
    /// As [`base_drift`].
    pub drift: Option<BaseDrift>,
    /// Why the drift could not be read, when it could not (the changed files still stand).
    pub drift_problem: Option<String>,
}

/// Behind counts already measured, keyed by [`drift_key`]. A count is a pure function of
/// two commit ids (commits never change), so an entry never goes stale; the listing keeps
/// them between runs so a lane whose HEAD and base did not move costs no `rev-list`.
pub type DriftCounts = BTreeMap<String, u64>;

/// `<base id> <head id>`, or `<base id> -` when HEAD has no commit.
pub fn drift_key(base: &str, head: Option<&str>) -> String {
    format!("{base} {}", head.unwrap_or("-"))
}

/// The listing's facts for each of `worktrees` (in order), read [`LISTING_PARALLEL`] at a
/// time. Each worktree costs one `git status`, whose header also names HEAD; the default
/// branch is read from git's ref files ([`super::refs`]) and asked of git only when
/// they are not plain; the behind count comes from `known` when it holds the pair, else
/// from one `git rev-list`. Counts measured here are returned for the caller to keep.
///
/// Unlike [`status`], a worktree is not first checked to be a work tree's root (one more
/// git child each): `launch` checked that when it recorded the lane, and a folder that
/// stopped being a worktree fails its `git status` here.
pub fn listing_facts(worktrees: &[PathBuf], known: &DriftCounts) -> (Vec<Result<ListingFacts, WorktreeError>>, DriftCounts) {
    let mut facts = Vec::with_capacity(worktrees.len());
    let mut measured = DriftCounts::new();
    for chunk in worktrees.chunks(LISTING_PARALLEL) {
        std::thread::scope(|scope| {
            let readers: Vec<_> = chunk.iter().map(|w| scope.spawn(move || listing_facts_one(w, known))).collect();
            for reader in readers {
                let (one, new_count) = reader.join().unwrap_or_else(|_| {
                    (Err(WorktreeError::Git { command: "status".into(), why: "the reading thread panicked".into() }), None)
                });
                measured.extend(new_count);
                facts.push(one);
            }
        });
    }
    (facts, measured)
}

type NewCount = Option<(String, u64)>;

fn listing_facts_one(worktree: &Path, known: &DriftCounts) -> (Result<ListingFacts, WorktreeError>, NewCount) {
    let git = Git::new(worktree);
    let reading = match read_status(&git) {
        Ok(r) => r,
        Err(e) => return (Err(e), None),
    };
    let changed: Vec<String> = reading.changed.into_keys().collect();
    match drift_of(&git, worktree, reading.head.as_deref(), known) {
        Ok((drift, new_count)) => (Ok(ListingFacts { changed, drift, drift_problem: None }), new_count),
        // The status stands: a base that cannot be measured never hides uncommitted work.
        Err(e) => (Ok(ListingFacts { changed, drift: None, drift_problem: Some(e.to_string()) }), None),
    }
}

/// The drift of a worktree whose HEAD is `head`, and the count measured, if one was.
fn drift_of(
    git: &Git<'_>,
    worktree: &Path,
    head: Option<&str>,
    known: &DriftCounts,
) -> Result<(Option<BaseDrift>, NewCount), WorktreeError> {
    let common = super::refs::common_dir(worktree);
    let default = match common.as_deref().ok_or(()).and_then(super::refs::default_branch) {
        Ok(found) => found,
        Err(()) => default_branch_by_git(git)?,
    };
    let Some((default_ref, base)) = default else { return Ok((None, None)) };
    // A count is the same in every repository only where history is whole: a shallow
    // clone, grafts or replace refs change it, so those are counted afresh every time.
    let cacheable = common.as_deref().is_some_and(super::refs::history_is_plain);
    let key = drift_key(&base, head);
    if cacheable && let Some(n) = known.get(&key) {
        return Ok((Some(BaseDrift { default_ref, behind: *n }), None));
    }
    let behind = count_behind(git, &base, head)?;
    Ok((Some(BaseDrift { default_ref, behind }), cacheable.then_some((key, behind))))
}

/// Refuses a run or lane name that is not one safe ref component.
fn check_name(what: &'static str, name: &str) -> Result<(), WorktreeError> {
    let bad = |why| Err(WorktreeError::BadName { what, name: name.into(), why });
    if name.is_empty() || name.len() > NAME_LEN_MAX {
        return bad("it must be 1 to 64 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        return bad("only letters, digits, '.', '_' and '-' are allowed");
    }
    // git refuses the first three in any ref name component; a leading '-' would read as
    // an option wherever the name is a word of a command.
    if name.starts_with('.') || name.contains("..") || name.ends_with(".lock") || name.starts_with('-') {
        return bad("it may not start with '.' or '-', hold '..' or end with '.lock'");
    }
    Ok(())
}

/// A worktree's root, found by git.
struct Place {
    root: PathBuf,
    linked: bool,
    /// The repository's common git folder, resolved (links followed).
    common: PathBuf,
    /// This work tree's own git folder, resolved (`<common>/worktrees/<id>` for a linked one).
    git_dir: PathBuf,
}

/// Asks git whether `worktree` is a work tree's root, and whether a linked one. A folder
/// inside a work tree but not its root is refused, so a mistyped lane path can never reset
/// the checkout around it.
fn locate(worktree: &Path) -> Result<Place, WorktreeError> {
    let not = |why: String| WorktreeError::NotAWorktree { path: worktree.into(), why };
    if !worktree.is_dir() {
        return Err(not("there is no such folder".into()));
    }
    let ran = Git::new(worktree).run(&[
        "rev-parse",
        "--path-format=absolute",
        "--is-inside-work-tree",
        "--show-toplevel",
        "--git-dir",
        "--git-common-dir",
    ])?;
    if ran.code != Some(0) {
        return Err(not(first_line(&ran.err).unwrap_or_else(|| "git rev-parse failed".into())));
    }
    let mut lines = ran.out.split(|&b| b == b'\n');
    let mut next = || lines.next().map(crate::platform::fs::path_from_bytes);
    let (Some(inside), Some(top), Some(git_dir), Some(common)) = (next(), next(), next(), next()) else {
        return Err(not("git rev-parse answered less than asked".into()));
    };
    if inside.as_os_str() != "true" {
        return Err(not("it is not inside a work tree".into()));
    }
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if canon(worktree) != canon(&top) {
        return Err(not(format!("it lies inside the work tree at {}, not at its root", top.display())));
    }
    Ok(Place { root: top, linked: canon(&git_dir) != canon(&common), common: canon(&common), git_dir: canon(&git_dir) })
}

/// What `git status` reads.
struct Reading {
    head: Option<String>,
    branch: Option<String>,
    /// Each changed path, with why it cannot be saved aside when it cannot.
    changed: BTreeMap<String, Option<&'static str>>,
}

fn read_status(git: &Git<'_>) -> Result<Reading, WorktreeError> {
    // --untracked-files=all lists files, not folders, and overrides a config hiding
    // untracked files; --ignore-submodules=none so a changed submodule is seen, not
    // silently left behind.
    let out =
        git.ok(&["status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--ignore-submodules=none", "--no-renames"])?;
    parse_status(&out).map_err(|why| WorktreeError::Git { command: "status".into(), why })
}

const NESTED_REPO: &str = "is a nested repository or submodule, whose work a saved tree cannot hold";
const NOT_UTF8: &str = "(shown lossily) has a name that is not UTF-8";

/// Parses `git status --porcelain=v2 -z --branch`.
fn parse_status(bytes: &[u8]) -> Result<Reading, String> {
    let mut r = Reading { head: None, branch: None, changed: BTreeMap::new() };
    let mut add = |raw: &[u8], mut why: Option<&'static str>| {
        let path = match std::str::from_utf8(raw) {
            Ok(p) => p.to_string(),
            Err(_) => {
                why = why.or(Some(NOT_UTF8));
                String::from_utf8_lossy(raw).into_owned()
            }
        };
        let slot = r.changed.entry(path).or_insert(None);
        *slot = slot.or(why);
    };
    let mut records = bytes.split(|&b| b == 0).filter(|rec| !rec.is_empty());
    while let Some(rec) = records.next() {
        // Ordinary (1), renamed (2) and unmerged (u) entries: fixed fields, then the path.
        let fields = match rec.first() {
            Some(b'#') => {
                let line = String::from_utf8_lossy(rec);
                if let Some(oid) = line.strip_prefix("# branch.oid ") {
                    r.head = (oid != "(initial)").then(|| oid.to_string());
                } else if let Some(name) = line.strip_prefix("# branch.head ") {
                    r.branch = (name != "(detached)").then(|| name.to_string());
                }
                continue;
            }
            Some(b'?') => {
                let path = rec.get(2..).ok_or("an untracked entry has no path")?;
                // -uall names files; only a nested repository is listed as a folder.
                add(path, path.ends_with(b"/").then_some(NESTED_REPO));
                continue;
            }
            Some(b'!') => continue,
            Some(b'1') => 9,
            Some(b'2') => 10,
            Some(b'u') => 11,
            _ => return Err(format!("an unexpected entry {:?}", String::from_utf8_lossy(&rec[..rec.len().min(40)]))),
        };
        let parts: Vec<&[u8]> = rec.splitn(fields, |&b| b == b' ').collect();
        let [_, _, sub, modes @ ..] = parts.as_slice() else { return Err("a short entry".into()) };
        let Some(path) = parts.get(fields - 1).filter(|_| parts.len() == fields) else { return Err("a short entry".into()) };
        let mode_count = if rec[0] == b'u' { 4 } else { 3 };
        let gitlink = modes.iter().take(mode_count).any(|m| *m == b"160000");
        add(path, (sub.first() == Some(&b'S') || gitlink).then_some(NESTED_REPO));
        if rec[0] == b'2' {
            // A rename's source path follows as its own record; both sides changed.
            let orig = records.next().ok_or("a rename without its source path")?;
            add(orig, None);
        }
    }
    Ok(r)
}

/// Builds the saved commit: HEAD's tree in a temporary index, then each changed path as
/// the work tree has it (a missing one removed), written as a tree and committed on HEAD.
/// Only `changed` is read from disk, so the cost is the change, not the lane's size, and
/// paths outside a sparse checkout are not mistaken for deletions.
fn build(
    git: &Git<'_>,
    temp: &Path,
    head: &str,
    changed: &[String],
    run: &str,
    lane: &str,
    now: Timestamp,
) -> Result<String, WorktreeError> {
    let index = git.with_env("GIT_INDEX_FILE", temp.join("index").into_os_string());
    index.ok(&["read-tree", head])?;
    // Sorted order puts a replaced file `a` before the files now under `a/`, which
    // update-index needs; --replace lets a file and a folder swap places.
    for chunk in changed.chunks(PATHS_PER_CHILD) {
        let mut args: Vec<&str> = vec!["update-index", "--add", "--remove", "--replace", "--"];
        args.extend(chunk.iter().map(String::as_str));
        index.ok(&args)?;
    }
    let tree = text(&index.ok(&["write-tree"])?).trim().to_string();
    let date = OsString::from(format!("@{} +0000", now.as_second()));
    let saver = git
        .with_env("GIT_AUTHOR_NAME", SAVER_NAME.into())
        .with_env("GIT_AUTHOR_EMAIL", SAVER_EMAIL.into())
        .with_env("GIT_AUTHOR_DATE", date.clone())
        .with_env("GIT_COMMITTER_NAME", SAVER_NAME.into())
        .with_env("GIT_COMMITTER_EMAIL", SAVER_EMAIL.into())
        .with_env("GIT_COMMITTER_DATE", date);
    let message = format!(
        "abcd: work saved aside from lane {lane} of run {run}\n\n{} changed paths on {head}, saved {}.\n",
        changed.len(),
        now.strftime("%Y-%m-%dT%H:%M:%S.%3fZ")
    );
    let commit = saver.ok(&["commit-tree", "--no-gpg-sign", &tree, "-p", head, "-m", &message])?;
    Ok(text(&commit).trim().to_string())
}

/// Creates the first free `refs/abcd/saved/<run>/<lane>/<time>[-n]` at `commit`. The empty
/// old value makes git refuse a ref that exists, so a save never replaces another even
/// when two race.
fn create_ref(git: &Git<'_>, run: &str, lane: &str, now: Timestamp, commit: &str) -> Result<String, WorktreeError> {
    let base = format!("{SAVED_REF_PREFIX}/{run}/{lane}/{}", now.strftime("%Y%m%dT%H%M%S%3fZ"));
    for n in 1..=SAME_TIME_SAVES_MAX {
        let name = if n == 1 { base.clone() } else { format!("{base}-{n}") };
        let ran = git.run(&["update-ref", "-m", "abcd: work saved aside", &name, commit, ""])?;
        if ran.code == Some(0) {
            return Ok(name);
        }
        if !resolves(git, &name)? {
            return Err(WorktreeError::Git {
                command: "update-ref".into(),
                why: first_line(&ran.err).unwrap_or_else(|| "it failed".into()),
            });
        }
    }
    Err(WorktreeError::Git {
        command: "update-ref".into(),
        why: format!("{base} and its {} numbered successors are all taken", SAME_TIME_SAVES_MAX - 1),
    })
}

/// Checks the save holds the work, reading everything back through the ref. Err says
/// what is missing or extra.
fn verify(git: &Git<'_>, temp: &Path, ref_name: &str, head: &str, commit: &str, changed: &[String]) -> Result<(), String> {
    let fail = |e: WorktreeError| e.to_string();
    let at = git.ok(&["rev-parse", "-q", "--verify", &format!("{ref_name}^{{commit}}")]).map_err(fail)?;
    if text(&at).trim() != commit {
        return Err(format!("the ref does not name commit {commit}"));
    }
    let parents = git.ok(&["rev-parse", &format!("{commit}^@")]).map_err(fail)?;
    if text(&parents).split_whitespace().collect::<Vec<_>>() != [head] {
        return Err(format!("its parent is not HEAD {head}"));
    }
    let wanted: BTreeSet<&str> = changed.iter().map(String::as_str).collect();
    let differ = git.ok(&["diff-tree", "-r", "-z", "--no-renames", "--name-only", head, commit, "--"]).map_err(fail)?;
    for path in differ.split(|&b| b == 0).filter(|p| !p.is_empty()) {
        let path = String::from_utf8_lossy(path);
        if !wanted.contains(path.as_ref()) {
            return Err(format!("{path} differs from HEAD but was not among the changed paths"));
        }
    }

    // The saved tree's entry for each changed path: (mode, object).
    let mut saved: HashMap<String, (String, String)> = HashMap::with_capacity(changed.len());
    for chunk in changed.chunks(PATHS_PER_CHILD) {
        let mut args: Vec<&str> = vec!["ls-tree", "-z", "--full-tree", commit, "--"];
        args.extend(chunk.iter().map(String::as_str));
        let out = git.ok(&args).map_err(fail)?;
        for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
            let entry = String::from_utf8_lossy(entry);
            let Some((meta, path)) = entry.split_once('\t') else { return Err("ls-tree answered an unreadable entry".into()) };
            let mut meta = meta.split(' ');
            let (Some(mode), Some(_kind), Some(oid)) = (meta.next(), meta.next(), meta.next()) else {
                return Err("ls-tree answered an unreadable entry".into());
            };
            saved.insert(path.to_string(), (mode.to_string(), oid.to_string()));
        }
    }

    // What the work tree holds at each changed path: files are hashed as `git add` would
    // (filters applied), a symlink as its target's text, which is what git stores for it.
    let root = git.git.dir();
    let mut files: Vec<&str> = Vec::new();
    let mut links: Vec<(&str, PathBuf)> = Vec::new();
    for path in changed {
        let saved_here = saved.get(path.as_str());
        match std::fs::symlink_metadata(root.join(path)) {
            // Not a directory: a folder on the way became a file, so this path is gone too.
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
                if saved_here.is_some() {
                    return Err(format!("{path} was deleted but the save still holds it"));
                }
            }
            Err(e) => return Err(format!("{path} could not be read: {e}")),
            // A file replaced by a folder: the folder's files are changed paths of their own.
            Ok(m) if m.is_dir() => {
                if saved_here.is_some_and(|(mode, _)| mode != "040000") {
                    return Err(format!("{path} is a folder but the save holds a file there"));
                }
            }
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(root.join(path)).map_err(|e| format!("{path} could not be read: {e}"))?;
                let copy = temp.join(format!("link-{}", links.len()));
                std::fs::write(&copy, crate::platform::fs::path_bytes(&target)).map_err(|e| format!("no room to check {path}: {e}"))?;
                links.push((path, copy));
            }
            Ok(m) if m.is_file() => files.push(path),
            Ok(_) => return Err(format!("{path} is neither a file, a symlink nor a folder")),
        }
    }
    let mut expect: Vec<(&str, &'static [&'static str], String)> = Vec::with_capacity(files.len() + links.len());
    for chunk in files.chunks(PATHS_PER_CHILD) {
        let mut args: Vec<&str> = vec!["hash-object", "--"];
        args.extend(chunk.iter().copied());
        let out = git.ok(&args).map_err(fail)?;
        let oids: Vec<String> = text(&out).lines().map(str::to_string).collect();
        if oids.len() != chunk.len() {
            return Err("hash-object answered fewer hashes than asked".into());
        }
        expect.extend(chunk.iter().zip(oids).map(|(p, oid)| (*p, &["100644", "100755"][..], oid)));
    }
    for chunk in links.chunks(PATHS_PER_CHILD) {
        let mut args: Vec<OsString> = ["hash-object", "--no-filters", "--"].iter().map(OsString::from).collect();
        args.extend(chunk.iter().map(|(_, copy)| copy.clone().into_os_string()));
        let out = git.ok(&args).map_err(fail)?;
        let oids: Vec<String> = text(&out).lines().map(str::to_string).collect();
        if oids.len() != chunk.len() {
            return Err("hash-object answered fewer hashes than asked".into());
        }
        expect.extend(chunk.iter().zip(oids).map(|((p, _), oid)| (*p, &["120000"][..], oid)));
    }
    for (path, modes, oid) in expect {
        match saved.get(path) {
            None => return Err(format!("{path} is not in the save")),
            Some((mode, _)) if !modes.contains(&mode.as_str()) => {
                return Err(format!("{path} is saved as the wrong kind of entry ({mode})"));
            }
            Some((_, held)) if *held != oid => return Err(format!("{path} is saved with other content than the work tree holds")),
            Some(_) => {}
        }
    }
    Ok(())
}

/// Quotes `s` as one POSIX shell word.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_./=:,+@%-".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Whether `rev` names an object (`rev-parse --verify`, quietly).
fn resolves(git: &Git<'_>, rev: &str) -> Result<bool, WorktreeError> {
    Ok(git.run(&["rev-parse", "-q", "--verify", rev])?.code == Some(0))
}

/// The object id `rev` names, if any (`rev-parse --verify`, quietly).
fn resolve_id(git: &Git<'_>, rev: &str) -> Result<Option<String>, WorktreeError> {
    let ran = git.run(&["rev-parse", "-q", "--verify", rev])?;
    Ok((ran.code == Some(0)).then(|| text(&ran.out).trim().to_string()).filter(|id| !id.is_empty()))
}

fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// git in one worktree, with extra environment and the deadline its steps get.
struct Git<'a> {
    git: run::Git<'a>,
    deadline: Duration,
}

impl From<RunError> for WorktreeError {
    fn from(e: RunError) -> WorktreeError {
        match e {
            RunError::Deadline { command } => WorktreeError::Deadline { command },
            other => WorktreeError::Git { command: other.command().to_string(), why: other.why() },
        }
    }
}

impl<'a> Git<'a> {
    fn new(root: &'a Path) -> Self {
        Git { git: run::Git::new(root), deadline: GIT_DEADLINE }
    }

    /// For a command that checks out or deletes a whole work tree: killed midway it would
    /// leave one half made (or locked), so it gets [`GIT_WORKTREE_DEADLINE`].
    fn for_whole_tree(root: &'a Path) -> Self {
        Git { deadline: GIT_WORKTREE_DEADLINE, ..Git::new(root) }
    }

    fn with_env(&self, key: &'static str, value: OsString) -> Git<'a> {
        Git { git: self.git.clone().env(key, value), deadline: self.deadline }
    }

    /// Runs git and takes its stdout only when it exits 0.
    fn ok<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Vec<u8>, WorktreeError> {
        let ran = self.run(args)?;
        if ran.code == Some(0) {
            return Ok(ran.out);
        }
        let why = ran.first_err_line().unwrap_or_else(|| ran.ended());
        Err(WorktreeError::Git { command: subcommand(args), why })
    }

    /// Runs git in the worktree (see [`super::run`]); kills it after this step's deadline
    /// or when its stdout passes [`GIT_OUTPUT_MAX`] bytes. A nonzero exit is the caller's
    /// to judge.
    fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Ran, WorktreeError> {
        Ok(self.git.run(args, None, Instant::now() + self.deadline, GIT_OUTPUT_MAX)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// git for the test's own set-up, with no system or global config.
    fn sh_git(dir: &Path, args: &[&str], envs: &[(&str, &OsStr)]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .envs(envs.iter().copied())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    #[test]
    fn a_save_missing_one_file_is_refused_and_its_ref_removed() {
        let dir = tempfile::tempdir().unwrap();
        let wt = dir.path().join("wt");
        std::fs::create_dir(&wt).unwrap();
        sh_git(&wt, &["init", "-q", "-b", "main"], &[]);
        std::fs::write(wt.join("kept.txt"), "kept\n").unwrap();
        sh_git(&wt, &["add", "."], &[]);
        sh_git(&wt, &["commit", "-qm", "init"], &[]);
        std::fs::write(wt.join("kept.txt"), "changed\n").unwrap();
        std::fs::write(wt.join("new.txt"), "new\n").unwrap();

        // Stores a commit holding the modification but not the new file.
        let scratch = tempfile::tempdir().unwrap();
        let index = scratch.path().join("index");
        let swap = |root: &Path, commit: &str| {
            let env = [("GIT_INDEX_FILE", index.as_os_str())];
            sh_git(root, &["read-tree", commit], &env);
            sh_git(root, &["update-index", "--force-remove", "new.txt"], &env);
            let tree = sh_git(root, &["write-tree"], &env);
            sh_git(root, &["commit-tree", &tree, "-p", "HEAD", "-m", "short"], &[])
        };
        let now: Timestamp = "2026-11-04T10:00:00Z".parse().unwrap();
        let err = save_with(&wt, "r1", "l1", now, &|_| false, Some(&swap)).unwrap_err();
        match &err {
            WorktreeError::Unverified { why, ref_removed: true, .. } => assert!(why.contains("new.txt"), "{why}"),
            other => panic!("expected Unverified with the ref removed, got {other:?}"),
        }
        assert_eq!(sh_git(&wt, &["for-each-ref", "refs/abcd/"], &[]), "");
        assert_eq!(std::fs::read_to_string(wt.join("new.txt")).unwrap(), "new\n");
    }

    #[test]
    fn the_status_parser_reads_every_entry_kind() {
        let z = "# branch.oid 1111111111111111111111111111111111111111\0# branch.head lane-a\0\
                 1 .M N... 100644 100644 100644 aa aa file one\0\
                 1 .M S.M. 160000 160000 160000 bb bb vendor/sub\0\
                 2 R. N... 100644 100644 100644 cc cc R100 new name\0old name\0\
                 u UU N... 100644 100644 100644 100644 dd ee ff both\0\
                 ? dir/untracked x\0? nested/\0! ignored.log\0";
        let r = parse_status(z.as_bytes()).unwrap();
        assert_eq!(r.head.as_deref(), Some("1111111111111111111111111111111111111111"));
        assert_eq!(r.branch.as_deref(), Some("lane-a"));
        let got: Vec<(&str, bool)> = r.changed.iter().map(|(p, why)| (p.as_str(), why.is_some())).collect();
        assert_eq!(
            got,
            [
                ("both", false),
                ("dir/untracked x", false),
                ("file one", false),
                ("nested/", true),
                ("new name", false),
                ("old name", false),
                ("vendor/sub", true)
            ]
        );
        let fresh = parse_status(b"# branch.oid (initial)\0# branch.head (detached)\0").unwrap();
        assert_eq!((fresh.head, fresh.branch, fresh.changed.len()), (None, None, 0));
        assert!(parse_status(b"1 .M N...\0").is_err());
        assert!(parse_status(b"Z what\0").is_err());
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_quote("/tmp/lane-1"), "/tmp/lane-1");
        assert_eq!(shell_quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(shell_quote("/tmp/it's"), r"'/tmp/it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
