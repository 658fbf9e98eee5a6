//! Where a lane's agent runs, and what abcd may touch there (SPEC §7). A lane runs in a git
//! worktree abcd makes for it under the home store, on a branch of its own, recorded in
//! `lane.worktree_created`; only there does abcd save aside and reset on its own. A folder
//! named with `--cwd` that abcd did not make is the person's, and its uncommitted work is
//! touched only when the person says `--save-aside`. abcd's own files are never part of a
//! lane's work: they are neither saved nor removed.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{CommandError, caller_event};
use crate::event::{self, Scope};
use crate::git::worktree::{self, WorktreeError};
use crate::journal::storage::RealDisk;
use crate::ledger::{self, LaneWorktreeCreated, LaneWorktreeRemoved, WorkSavedAside};
use crate::places::{self, Place, PlaceError};
use crate::refusal::{Refusal, RefusalKind as K};
use crate::store::Store;

/// Paths in a checkout that are abcd's own: its folder, and the host settings `abcd init`
/// writes its hooks into.
pub const ABCD_OWN_PATHS: &[&str] = &[".abcd", crate::host::claude_settings::PROJECT_SETTINGS];

/// Whether `path` (relative to a work tree's root) is one of abcd's own files.
pub fn is_abcd_own(path: &str) -> bool {
    ABCD_OWN_PATHS.iter().any(|own| path == *own || path.strip_prefix(own).is_some_and(|rest| rest.starts_with('/')))
}

/// The lane's work among a worktree's changed paths: everything but abcd's own files and
/// the receipts its agents wrote there (a receipt is the agent's word to abcd, collected
/// into the journal, not work to save).
pub fn lane_work(changed: &[String], receipts: &[String]) -> Vec<String> {
    changed.iter().filter(|p| !is_abcd_own(p) && !receipts.contains(p)).cloned().collect()
}

/// Where `receipt` lies inside the work tree at `root`, relative to it; None outside it.
pub fn receipt_inside(receipt: &str, root: &Path) -> Option<String> {
    let receipt = Path::new(receipt);
    let dir = canonical(receipt.parent()?);
    let inside = dir.strip_prefix(canonical(root)).ok()?.join(receipt.file_name()?);
    inside.to_str().map(str::to_string)
}

/// The receipts of the kept launches of `lanes` that lie inside `worktree`, relative to it.
pub fn receipts_inside<'a>(lanes: impl IntoIterator<Item = &'a ledger::Lane>, worktree: &Path) -> Vec<String> {
    lanes.into_iter().flat_map(|l| &l.launches).filter_map(|launch| receipt_inside(&launch.receipt, worktree)).collect()
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// What stands at a lane's worktree place when it is not the worktree abcd made there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotTheLane {
    /// Nothing is there: the folder was deleted (abcd makes it again on the lane's branch).
    Missing,
    /// Something else is there, in words ("a symbolic link to …", "a worktree on branch …").
    Other(String),
}

impl std::fmt::Display for NotTheLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotTheLane::Missing => f.write_str("nothing (the folder is gone)"),
            NotTheLane::Other(what) => f.write_str(what),
        }
    }
}

/// The one test abcd puts a lane folder to before it saves aside, resets, removes or
/// starts an agent there: the folder is exactly the worktree abcd made for `run`'s `lane`
/// of the working copy at `root`. Its recorded path is the lane's own place
/// ([`places::lane_worktree`]); no folder from the home store's lanes folder down to it is
/// a symbolic link; git reads it as a linked work tree, rooted there, of the working
/// copy's own repository; and its HEAD is on `abcd/<run>/<lane>`. Anything else is the
/// person's or nobody's, and abcd leaves it as it is.
pub fn verify_own_worktree(root: &Path, run: &str, lane: &str, own: &ledger::OwnWorktree) -> Result<worktree::WorktreeStatus, NotTheLane> {
    let other = |what: String| Err(NotTheLane::Other(what));
    let place = places::lane_worktree(root, run, lane).map_err(|e| NotTheLane::Other(format!("no lane place can be named ({e})")))?;
    let branch = ledger::lane_branch(run, lane);
    if own.branch != branch {
        return other(format!("a worktree the journal records on {}, not on {branch}", crate::secrets::shown_name(&own.branch)));
    }
    let lanes_root =
        places::home_dir().map(|h| h.join(places::LANES_DIR)).map_err(|e| NotTheLane::Other(format!("no home store ({e})")))?;
    let Ok(below) = place.strip_prefix(&lanes_root) else {
        return other(format!("a folder outside the home store's lanes folder {}", lanes_root.display()));
    };
    // The home store may be named through a link, today or when the lane was made: the
    // lanes folder is compared resolved; below it, no link is allowed.
    let recorded_root = prefix_before(Path::new(&own.path), below);
    let resolved = |p: &Path| std::fs::canonicalize(p).ok();
    if recorded_root.is_none_or(|r| resolved(&r) != resolved(&lanes_root) || resolved(&lanes_root).is_none()) {
        return other(format!(
            "a worktree the journal records at {} on {}, not at the lane's own place {place} on {branch}",
            own.path,
            own.branch,
            place = place.display()
        ));
    }
    let mut walked = lanes_root.clone();
    for part in below.components() {
        walked.push(part);
        match std::fs::symlink_metadata(&walked) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(NotTheLane::Missing),
            Err(e) => return other(format!("a path that cannot be looked at ({e})")),
            Ok(m) if m.file_type().is_symlink() => {
                // A link's target is the person's text: named only when it holds no secret.
                let to = std::fs::read_link(&walked).map(|t| t.display().to_string()).ok();
                let to = match to {
                    Some(t) if crate::secrets::scan(&t).is_none() => t,
                    Some(_) => "a target not shown (it looks like a secret)".into(),
                    None => "somewhere unreadable".into(),
                };
                return other(format!("a symbolic link at {} to {to}", walked.display()));
            }
            Ok(m) if !m.is_dir() => return other(format!("a file at {}, not a folder", walked.display())),
            Ok(_) => {}
        }
    }
    let status = match worktree::status(&place) {
        Ok(s) => s,
        Err(e) => return other(format!("a folder git does not read as a work tree ({e})")),
    };
    if !status.is_worktree {
        return other("a repository's main work tree, not a worktree abcd made".into());
    }
    // git's own record of the worktree names this folder, so a copy of a worktree (or one
    // moved away with another put in its place) is not taken for it.
    let recorded = crate::platform::fs::read_regular(&status.git_dir.join("gitdir"), ledger::PATH_MAX_BYTES as u64 + 1)
        .ok()
        .map(|b| crate::platform::fs::path_from_bytes(b.trim_ascii_end()));
    let here = std::fs::canonicalize(place.join(".git")).ok();
    if recorded.as_deref().and_then(|r| std::fs::canonicalize(r).ok()) != here || here.is_none() {
        return other("a worktree git records at another folder (a copy, or one moved here)".into());
    }
    match worktree::common_dir(root) {
        Ok(common) if common == status.common_dir => {}
        Ok(_) => return other(format!("a worktree of another repository (its git folder is {})", status.common_dir.display())),
        Err(e) => return other(format!("a worktree whose repository cannot be compared with this one's ({e})")),
    }
    match status.branch.as_deref() {
        Some(b) if b == branch => Ok(status),
        Some(b) => other(format!("a worktree on branch {}, not on {branch}", crate::secrets::shown_name(b))),
        None => other(format!("a worktree with a detached HEAD, not on {branch}")),
    }
}

/// `path` less its last components when they are `tail`'s; None when they are not.
fn prefix_before(path: &Path, tail: &Path) -> Option<PathBuf> {
    let (mut p, mut t) = (path.components().rev(), tail.components().rev());
    loop {
        let Some(a) = t.next() else { return Some(p.rev().collect()) };
        if p.next() != Some(a) {
            return None;
        }
    }
}

/// The lane of `run` whose recorded worktree is `dir` (a loop's reviewer works in its
/// implementer's), when that folder passes [`verify_own_worktree`].
pub fn own_worktree_at(state: &ledger::LedgerState, root: &Path, run: &str, dir: &Path) -> Option<worktree::WorktreeStatus> {
    let r = state.runs.get(run)?;
    let (lane, own) =
        r.lanes.iter().find_map(|(name, l)| l.own_worktree.as_ref().filter(|w| Path::new(&w.path) == dir).map(|w| (name, w)))?;
    verify_own_worktree(root, run, lane, own).ok()
}

/// How long a verb waits for another to let a lane go: a launch holds its lane from its
/// first look until its intent is recorded (making the lane's worktree and reading its
/// status: a few git calls, each under its own deadline), and a save aside while it saves
/// and resets.
pub const LANE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A lane held by this process: an exclusive `flock` on `runs/<run>/<lane>.lane.lock` in
/// the working copy's local tier. A launch holds it until its intent is on the record (then
/// the record holds the lane); a save aside holds it while it saves and resets. So no two
/// verbs make, save or reset in one lane's folder at once; the journal's record still
/// decides who may (this lock only orders them). Let go when dropped, and by the kernel
/// when the process dies.
pub struct LaneLock(#[allow(dead_code)] crate::journal::lock::JournalLock);

/// Takes `run`'s `lane`, waiting at most [`LANE_LOCK_WAIT`] for another verb to let it go.
pub fn lock_lane(journal_dir: &Path, run: &str, lane: &str) -> Result<LaneLock, CommandError> {
    let dir = run_folder(journal_dir, run).map_err(CommandError::failed)?;
    let path = dir.join(format!("{lane}.lane.lock"));
    crate::journal::lock::JournalLock::acquire(&path, LANE_LOCK_WAIT).map(LaneLock).map_err(|e| {
        CommandError::from(
            Refusal::new(
                K::LaneBusy,
                format!("lane {run}/{lane}"),
                format!("it is held by another abcd verb, a launch or a save aside, for over {} s ({e})", LANE_LOCK_WAIT.as_secs()),
            )
            .instead("try again once it is done"),
        )
    })
}

/// The working copy a lane belongs to: its journal and its root.
#[derive(Clone, Copy)]
pub struct LaneHome<'a> {
    pub store: &'a Store,
    pub scope: &'a Scope,
    pub root: &'a Path,
}

impl<'a> LaneHome<'a> {
    pub fn of(wc: &'a WorkingCopy) -> LaneHome<'a> {
        LaneHome { store: &wc.store, scope: &wc.scope, root: &wc.root }
    }
}

/// The worktree abcd made for `run`'s `lane`, made now (and recorded) when the lane has none.
/// A recorded worktree whose folder was deleted is made again on its branch; a folder at
/// the lane's place that git shows on the lane's branch (made, and not recorded, by a
/// launch that crashed in between) is recorded as it stands. The lane must exist: callers
/// look at the ledger first.
pub fn own_worktree(home: LaneHome<'_>, run: &str, lane: &str) -> Result<PathBuf, CommandError> {
    let state = home.store.current_state()?;
    let branch = ledger::lane_branch(run, lane);
    let recorded = state.state.ledger.runs.get(run).and_then(|r| r.lanes.get(lane)).and_then(|l| l.own_worktree.clone());
    if let Some(own) = recorded {
        let path = PathBuf::from(&own.path);
        match verify_own_worktree(home.root, run, lane, &own) {
            Ok(_) => return Ok(path),
            Err(NotTheLane::Missing) => {}
            Err(NotTheLane::Other(what)) => {
                return Err(Refusal::new(
                    K::NotAbcds,
                    format!("the worktree of {run}/{lane}"),
                    format!(
                        "it is recorded at {}, but what is there is {what}; abcd saves aside, resets and starts agents only in the worktree it made, so it leaves this as it is",
                        path.display()
                    ),
                )
                .nothing_recorded()
                .instead("move it away (abcd makes the lane's worktree again there) or finish the run")
                .into());
            }
        }
        worktree::prune_worktrees(home.root).map_err(|e| gone_refusal(&path, &e))?;
        worktree::add_lane_worktree_on(home.root, &path, &own.branch).map_err(|e| gone_refusal(&path, &e))?;
        record_created(home, run, lane, &path, &own.base)?;
        return Ok(path);
    }
    let path = places::lane_worktree(home.root, run, lane)?;
    if std::fs::symlink_metadata(&path).is_ok() {
        // Made by a launch that crashed before recording it, or something else: only the
        // first is recorded.
        let unrecorded = ledger::OwnWorktree { path: path.display().to_string(), branch: branch.clone(), base: String::new() };
        let found = verify_own_worktree(home.root, run, lane, &unrecorded);
        let Some(base) = found.as_ref().ok().and_then(|s| s.head.clone()) else {
            let what = found.err().map_or_else(|| "a worktree with no commit".to_string(), |w| w.to_string());
            return Err(Refusal::new(
                K::NotAbcds,
                format!("the worktree of {run}/{lane}"),
                format!("{} is where abcd makes it, but what is there is {what}", path.display()),
            )
            .nothing_recorded()
            .instead("move it away")
            .into());
        };
        record_created(home, run, lane, &path, &base)?;
        return Ok(path);
    }
    let base = match worktree::head_commit(home.root) {
        Ok(Some(base)) => base,
        Ok(None) => {
            return Err(Refusal::new(
                K::NoCommit,
                format!("the worktree of {run}/{lane}"),
                format!("{} has no commit yet, and a lane's worktree starts at one", home.root.display()),
            )
            .nothing_recorded()
            .instead(format!("make a first commit (`{}`) and launch again", places::FIRST_COMMIT))
            .into());
        }
        Err(e) => {
            return Err(Refusal::new(
                K::GitState,
                format!("the worktree of {run}/{lane}"),
                format!("the working copy's HEAD cannot be read ({e})"),
            )
            .nothing_recorded()
            .instead(format!("see what git says with `git -C {} rev-parse HEAD`", worktree::shell_quote(&home.root.display().to_string())))
            .into());
        }
    };
    if let Some(parent) = path.parent() {
        crate::platform::fs::create_dir_all(parent, 0o700).map_err(CommandError::failed)?;
    }
    if let Err(e) = worktree::add_lane_worktree(home.root, &path, &branch, &base) {
        return Err(Refusal::new(K::GitState, format!("the worktree of {run}/{lane}"), format!("it cannot be made at {} ({e})", path.display()))
            .nothing_recorded()
            .instead(format!(
                "if a branch {branch} is left from an earlier run, keep its commits under another name (`git branch -m {branch} NEW-NAME`) or name the run differently"
            ))
            .into());
    }
    record_created(home, run, lane, &path, &base)?;
    Ok(path)
}

fn gone_refusal(path: &Path, e: &WorktreeError) -> Refusal {
    Refusal::new(K::GitState, format!("the lane's worktree {}", path.display()), format!("it is gone and cannot be made again ({e})"))
        .nothing_recorded()
        .instead("`git worktree prune` forgets a folder deleted by hand, then launch again")
}

fn record_created(home: LaneHome<'_>, run: &str, lane: &str, path: &Path, base: &str) -> Result<(), CommandError> {
    let data = LaneWorktreeCreated {
        run: run.into(),
        lane: lane.into(),
        worktree: path.display().to_string(),
        branch: ledger::lane_branch(run, lane),
        base: base.into(),
    };
    home.store.append_with(Some(home.scope), |_| (vec![caller_event(event::LANE_WORKTREE_CREATED, json!(data))], ()))?;
    Ok(())
}

/// What `abcd run finish` did with one worktree abcd made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorktreeEnd {
    /// Removed; the branch went too when it held no commit. `kept` names where the lane's
    /// own journal folder and collected receipts were moved, when there were any.
    Removed { lane: String, path: String, branch: String, branch_deleted: bool, kept: Option<String> },
    /// Kept, and why, with what to do.
    Kept { lane: String, path: String, why: String },
}

/// Removes each worktree abcd made for `run` that holds nothing of the lane's (no live
/// agent, no uncommitted work, no receipt waiting, HEAD on the lane's branch) and records
/// it; keeps, and says why, every other. Before removing, the lane's own journal folder (a
/// hook's local tier there) and its collected receipts move to the run's folder, so
/// nothing of abcd's is lost with the tree. A branch with commits stays: it holds the
/// lane's work.
pub fn remove_own_worktrees(home: LaneHome<'_>, run: &str) -> Result<Vec<WorktreeEnd>, CommandError> {
    let state = home.store.current_state()?;
    let Some(r) = state.state.ledger.runs.get(run) else { return Ok(vec![]) };
    let runs_dir = run_folder(home.store.journal().paths().dir(), run).map_err(CommandError::failed)?;
    let mut ends = vec![];
    for (lane, l) in &r.lanes {
        let Some(own) = &l.own_worktree else { continue };
        let path = Path::new(&own.path);
        let kept = |why: String| WorktreeEnd::Kept { lane: lane.clone(), path: own.path.clone(), why };
        // Any lane of the run may work there (a loop's reviewer shares its implementer's).
        let alive = r.lanes.values().filter_map(|x| x.last()).find(|x| {
            canonical(Path::new(&x.worktree)) == canonical(path)
                && x.exited.is_none()
                && x.started.is_some_and(|p| crate::platform::process::is_alive(&p))
        });
        if let Some(agent) = alive {
            let pid = agent.started.map_or(0, |p| p.pid);
            ends.push(kept(format!("its agent (pid {pid}) is alive; run `abcd run finish {run}` again once it has exited")));
            continue;
        }
        let status = match verify_own_worktree(home.root, run, lane, own) {
            Ok(s) => s,
            Err(NotTheLane::Missing) => {
                // Deleted by hand: git forgets it, the branch stays as it is.
                let _ = worktree::prune_worktrees(home.root);
                ends.push(record_removed(home, run, lane, &own.path, &own.branch, false, None)?);
                continue;
            }
            Err(NotTheLane::Other(what)) => {
                ends.push(kept(format!(
                    "what is there is {what}, and abcd removes only the worktree it made, on its branch; if it holds commits, put them on a branch (`git -C {} branch NAME`), then move it away or back, and run `abcd run finish {run}` again",
                    worktree::shell_quote(&own.path)
                )));
                continue;
            }
        };
        let tip = worktree::branch_tip(home.root, &own.branch).ok().flatten();
        if status.head.is_none() || status.head != tip {
            ends.push(kept(format!(
                "its HEAD is not at the tip of {}, and commits there would be lost with it; put them on a branch (`git -C {} branch NAME`), switch back, and run `abcd run finish {run}` again",
                own.branch,
                worktree::shell_quote(&own.path)
            )));
            continue;
        }
        let receipts = receipts_inside(r.lanes.values(), path);
        let work = lane_work(&status.changed, &receipts);
        if !work.is_empty() {
            ends.push(kept(format!(
                "it holds uncommitted work ({} file(s)); commit it on {} or save it aside with `abcd run save-aside --run {run} --lane {lane}`, then run `abcd run finish {run}` again",
                work.len(),
                own.branch
            )));
            continue;
        }
        let waiting = r
            .lanes
            .values()
            .filter_map(|x| x.last())
            .any(|x| x.collected.is_none() && receipt_inside(&x.receipt, path).is_some_and(|rel| path.join(rel).is_file()));
        if waiting {
            ends.push(kept(format!("a receipt in it waits uncollected; `abcd collect --run {run} --lane LANE` it, then finish again")));
            continue;
        }
        let moved = match keep_abcd_files(path, &receipts, &runs_dir.join(format!("{lane}.worktree"))) {
            Ok(moved) => moved,
            Err(why) => {
                ends.push(kept(why));
                continue;
            }
        };
        match worktree::remove_lane_worktree(home.root, path, &own.branch, &own.base) {
            Ok(branch_deleted) => ends.push(record_removed(home, run, lane, &own.path, &own.branch, branch_deleted, moved)?),
            Err(e) => ends.push(kept(format!(
                "git did not remove it ({e}); look at it, remove it with `git worktree remove {}` if nothing in it is wanted, and run `abcd run finish {run}` again",
                worktree::shell_quote(&own.path)
            ))),
        }
    }
    Ok(ends)
}

/// Moves what is abcd's inside a lane worktree about to be removed (the local tier a hook
/// made there, and the collected receipts) to `into` in the main local tier. Says where,
/// when anything moved; an error (nothing removed then) when a move fails.
fn keep_abcd_files(worktree: &Path, receipts: &[String], into: &Path) -> Result<Option<String>, String> {
    let mut sources: Vec<(PathBuf, PathBuf)> = vec![];
    let tier = worktree.join(places::LOCAL_TIER);
    if tier.is_dir() {
        sources.push((tier, into.join("work.local")));
    }
    for rel in receipts {
        let from = worktree.join(rel);
        if from.is_file() {
            sources.push((from, into.join("receipts").join(rel)));
        }
    }
    if sources.is_empty() {
        return Ok(None);
    }
    for (from, to) in &sources {
        let moved = to.parent().map_or(Ok(()), |p| crate::platform::fs::create_dir_all(p, 0o700)).and_then(|()| move_path(from, to));
        if let Err(e) = moved {
            return Err(format!("{} could not be moved to {} ({e}), so the worktree stays", from.display(), to.display()));
        }
    }
    Ok(Some(into.display().to_string()))
}

/// A rename, or, across file systems, a copy of the files then their removal.
fn move_path(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
            copy_tree(from, to)?;
            if from.is_dir() { std::fs::remove_dir_all(from) } else { std::fs::remove_file(from) }
        }
        Err(e) => Err(e),
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    if !from.is_dir() {
        return std::fs::copy(from, to).map(|_| ());
    }
    crate::platform::fs::create_dir_all(to, 0o700)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        copy_tree(&entry.path(), &to.join(entry.file_name()))?;
    }
    Ok(())
}

fn record_removed(
    home: LaneHome<'_>,
    run: &str,
    lane: &str,
    path: &str,
    branch: &str,
    branch_deleted: bool,
    kept: Option<String>,
) -> Result<WorktreeEnd, CommandError> {
    let data = LaneWorktreeRemoved { run: run.into(), lane: lane.into(), worktree: path.into(), branch_deleted };
    home.store.append_with(Some(home.scope), |_| (vec![caller_event(event::LANE_WORKTREE_REMOVED, json!(data))], ()))?;
    Ok(WorktreeEnd::Removed { lane: lane.into(), path: path.into(), branch: branch.into(), branch_deleted, kept })
}

/// A working copy's journal, opened for a verb, and the working copy's root.
pub struct WorkingCopy {
    pub store: Store,
    pub scope: Scope,
    pub root: PathBuf,
}

/// The working copy at `place`, its journal opened for a verb.
pub fn open(place: &Place) -> Result<WorkingCopy, PlaceError> {
    let (paths, scope) = place.working_copy()?;
    let root = place.root()?;
    Ok(WorkingCopy { store: Store::new(place.open_scoped_for_verb(RealDisk::shared(), paths, &scope)?), scope, root })
}

/// The working copy at `dir`, one other than the verb's own (a lane's worktree, a run the
/// machine journal lists, the watcher's).
pub fn open_at(dir: &Path) -> Result<WorkingCopy, PlaceError> {
    open(&Place::at(dir))
}

/// The run's folder in the local tier (`runs/<run>/`, 0700), for the agents' output.
pub fn run_folder(journal_dir: &Path, run: &str) -> std::io::Result<PathBuf> {
    let dir = journal_dir.join("runs").join(run);
    crate::platform::fs::create_dir_all(&dir, 0o700)?;
    Ok(dir)
}

/// Saves a lane's uncommitted work to a ref, records it, and returns the lane to its last
/// commit only after the save is verified and recorded. The line says what was done and
/// how to bring the work back; the error, why nothing (or only the save) was done.
pub fn save_aside(wc: &WorkingCopy, run: &str, lane: &str, tree: &Path) -> Result<String, String> {
    let now = crate::clock::now().map_err(|e| e.to_string())?;
    // The receipts agents wrote inside the tree are theirs to abcd, not work to save.
    let ledger_now = wc.store.current_state().map_err(|e| e.to_string())?.state.ledger;
    let receipts = receipts_inside(ledger_now.runs.get(run).into_iter().flat_map(|r| r.lanes.values()), tree);
    let keep = |p: &str| is_abcd_own(p) || receipts.iter().any(|r| r == p);
    // The folder saved is the folder reset: one swapped for another (or for a link to
    // another) while git reads it is found before anything is recorded or reset.
    let identity = |t: &Path| std::fs::metadata(t).ok().map(|m| crate::platform::fs::inode(&m)).map(|i| (i.dev, i.ino));
    let before = identity(tree);
    let unchanged = || {
        if before.is_some() && identity(tree) == before {
            Ok(())
        } else {
            Err(format!("{} changed while its work was being saved (another folder now stands there); nothing was reset", tree.display()))
        }
    };
    let saved = worktree::save_aside(tree, run, lane, now, &keep).map_err(|e| format!("{e}; nothing was reset"))?;
    unchanged()?;
    // Only names a record may hold are listed: a name with a newline or a secret would
    // make the fold skip the whole record, leaving the save known only by its ref.
    let (listed, files_not_listed) = ledger::listable_files(&saved.files);
    let data = WorkSavedAside {
        run: run.into(),
        lane: lane.into(),
        worktree: tree.display().to_string(),
        ref_name: saved.ref_name.clone(),
        commit: saved.commit.clone(),
        files_not_listed,
        files: listed,
    };
    wc.store
        .append_with(Some(&wc.scope), |_| (vec![caller_event(event::WORK_SAVED_ASIDE, json!(data))], ()))
        .map_err(|e| format!("the save {} is made but was not recorded ({e}); nothing was reset", saved.ref_name))?;
    unchanged().map_err(|why| format!("saved to {} but {why}", saved.ref_name))?;
    worktree::return_to_last_commit(tree, &saved.files, &keep)
        .map_err(|e| format!("saved to {} but the lane was not reset: {e}", saved.ref_name))?;
    Ok(format!(
        "saved {} uncommitted file(s) of {run}/{lane} to {}; the lane is back at its last commit. Bring the work back with: {}",
        saved.files.len(),
        saved.ref_name,
        saved.restore_command
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abcd_own_files_are_its_folder_and_the_settings_it_writes() {
        for own in [".abcd", ".abcd/x", ".abcd/.work.local/journal.jsonl", ".claude/settings.json"] {
            assert!(is_abcd_own(own), "{own}");
        }
        for theirs in [".abcdef", ".abcd.txt", ".claude/settings.local.json", ".claude/settings.json.bak", "src/.abcd", "README"] {
            assert!(!is_abcd_own(theirs), "{theirs}");
        }
        let changed = [".abcd/a".into(), "a.rs".into(), ".claude/settings.json".into(), "R".into()];
        assert_eq!(lane_work(&changed, &["R".into()]), vec!["a.rs".to_string()]);
    }
}
