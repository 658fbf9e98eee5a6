//! Where a lane's agent runs, and what abcd may touch there (SPEC §7). A lane runs in a git
//! worktree abcd makes for it under the home store, on a branch of its own, recorded in
//! `lane.worktree_created`; only there does abcd save aside and reset on its own. A folder
//! named with `--cwd` that abcd did not make is the person's, and its uncommitted work is
//! touched only when the person says `--save-aside`. abcd's own files are never part of a
//! lane's work: they are neither saved nor removed.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::run::WorkingCopy;
use super::{CommandError, new_event};
use crate::event;
use crate::git::worktree::{self, WorktreeError};
use crate::ledger::{self, LaneWorktreeCreated, LaneWorktreeRemoved};
use crate::places;

/// Paths in a checkout that are abcd's own: its folder, and the host settings `abcd init`
/// writes its hooks into.
pub const ABCD_OWN_PATHS: &[&str] = &[".abcd", ".claude/settings.json"];

/// Whether `path` (relative to a work tree's root) is one of abcd's own files.
pub fn is_abcd_own(path: &str) -> bool {
    ABCD_OWN_PATHS.iter().any(|own| path == *own || path.strip_prefix(own).is_some_and(|rest| rest.starts_with('/')))
}

/// The lane's work among a worktree's changed paths: everything but abcd's own files.
pub fn lane_work(changed: &[String]) -> Vec<String> {
    changed.iter().filter(|p| !is_abcd_own(p)).cloned().collect()
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Whether `dir` is the worktree abcd made for `run`'s `lane` and has not removed.
pub fn is_own_worktree(state: &ledger::LedgerState, run: &str, lane: &str, dir: &Path) -> bool {
    let own = state.runs.get(run).and_then(|r| r.lanes.get(lane)).and_then(|l| l.own_worktree.as_ref());
    own.is_some_and(|w| canonical(Path::new(&w.path)) == canonical(dir))
}

fn refused(msg: String) -> CommandError {
    CommandError::Refused(msg)
}

/// The worktree abcd made for `run`'s `lane`, made now (and recorded) when the lane has none.
/// A recorded worktree whose folder was deleted is made again on its branch; a folder at
/// the lane's place that git shows on the lane's branch (made, and not recorded, by a
/// launch that crashed in between) is recorded as it stands. The lane must exist: callers
/// look at the ledger first.
pub fn own_worktree(wc: &WorkingCopy, run: &str, lane: &str) -> Result<PathBuf, CommandError> {
    let state = wc.store.current_state()?;
    let branch = ledger::lane_branch(run, lane);
    let recorded = state.state.ledger.runs.get(run).and_then(|r| r.lanes.get(lane)).and_then(|l| l.own_worktree.clone());
    if let Some(own) = recorded {
        let path = PathBuf::from(&own.path);
        if path.is_dir() {
            return Ok(path);
        }
        worktree::prune_worktrees(&wc.root).map_err(|e| refused(gone_refusal(&path, &e)))?;
        worktree::add_lane_worktree_on(&wc.root, &path, &own.branch).map_err(|e| refused(gone_refusal(&path, &e)))?;
        record_created(wc, run, lane, &path, &own.base)?;
        return Ok(path);
    }
    let path = places::lane_worktree(&wc.root, run, lane)?;
    if path.exists() {
        let status = worktree::status(&path).ok();
        let ours = status.as_ref().is_some_and(|s| s.is_worktree && s.branch.as_deref() == Some(branch.as_str()));
        let (true, Some(base)) = (ours, status.and_then(|s| s.head)) else {
            return Err(refused(format!(
                "refused: {} is where abcd makes the worktree of {run}/{lane}, but something else is there; move it away; nothing was recorded",
                path.display()
            )));
        };
        record_created(wc, run, lane, &path, &base)?;
        return Ok(path);
    }
    let base = match worktree::head_commit(&wc.root) {
        Ok(Some(base)) => base,
        Ok(None) => {
            return Err(refused(format!(
                "refused: {} has no commit yet, and a lane's worktree starts at one; make a first commit (`git commit --allow-empty -m start`) and launch again; nothing was recorded",
                wc.root.display()
            )));
        }
        Err(e) => return Err(refused(format!("refused: the working copy's HEAD cannot be read ({e}); nothing was recorded"))),
    };
    if let Some(parent) = path.parent() {
        crate::platform::fs::create_dir_all(parent, 0o700).map_err(CommandError::failed)?;
    }
    if let Err(e) = worktree::add_lane_worktree(&wc.root, &path, &branch, &base) {
        return Err(refused(format!(
            "refused: the worktree of {run}/{lane} cannot be made at {} ({e}); if a branch {branch} is left from an earlier run, delete it (`git branch -D {branch}`) or name the run differently; nothing was recorded",
            path.display()
        )));
    }
    record_created(wc, run, lane, &path, &base)?;
    Ok(path)
}

fn gone_refusal(path: &Path, e: &WorktreeError) -> String {
    format!("refused: the lane's worktree {} is gone and cannot be made again ({e}); nothing was recorded", path.display())
}

fn record_created(wc: &WorkingCopy, run: &str, lane: &str, path: &Path, base: &str) -> Result<(), CommandError> {
    let data = LaneWorktreeCreated {
        run: run.into(),
        lane: lane.into(),
        worktree: path.display().to_string(),
        branch: ledger::lane_branch(run, lane),
        base: base.into(),
    };
    wc.store.append_with(Some(&wc.scope), |_| (vec![new_event(event::LANE_WORKTREE_CREATED, json!(data))], ()))?;
    Ok(())
}

/// What `abcd run finish` did with one worktree abcd made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorktreeEnd {
    /// Removed; the branch went too when it held no commit.
    Removed { lane: String, path: String, branch: String, branch_deleted: bool },
    /// Kept, and why (uncommitted work, or git refused).
    Kept { lane: String, path: String, why: String },
}

/// Removes each clean worktree abcd made for `run` and records it; keeps (and says why)
/// any with uncommitted work. A branch with commits stays: it holds the lane's work.
pub fn remove_own_worktrees(wc: &WorkingCopy, run: &str) -> Result<Vec<WorktreeEnd>, CommandError> {
    let state = wc.store.current_state()?;
    let Some(r) = state.state.ledger.runs.get(run) else { return Ok(vec![]) };
    let mut ends = vec![];
    for (lane, l) in &r.lanes {
        let Some(own) = &l.own_worktree else { continue };
        let path = Path::new(&own.path);
        let kept = |why: String| WorktreeEnd::Kept { lane: lane.clone(), path: own.path.clone(), why };
        if path.is_dir() {
            match worktree::status(path) {
                Ok(s) if !lane_work(&s.changed).is_empty() => {
                    ends.push(kept(format!("it holds uncommitted work ({} file(s))", lane_work(&s.changed).len())));
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    ends.push(kept(e.to_string()));
                    continue;
                }
            }
        }
        let branch_deleted = if path.is_dir() {
            match worktree::remove_lane_worktree(&wc.root, path, &own.branch, &own.base) {
                Ok(deleted) => deleted,
                Err(e) => {
                    ends.push(kept(e.to_string()));
                    continue;
                }
            }
        } else {
            // Deleted by hand: git forgets it, the branch stays as it is.
            let _ = worktree::prune_worktrees(&wc.root);
            false
        };
        let data = LaneWorktreeRemoved { run: run.into(), lane: lane.clone(), worktree: own.path.clone(), branch_deleted };
        wc.store.append_with(Some(&wc.scope), |_| (vec![new_event(event::LANE_WORKTREE_REMOVED, json!(data))], ()))?;
        ends.push(WorktreeEnd::Removed { lane: lane.clone(), path: own.path.clone(), branch: own.branch.clone(), branch_deleted });
    }
    Ok(ends)
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
        assert_eq!(lane_work(&[".abcd/a".into(), "a.rs".into(), ".claude/settings.json".into()]), vec!["a.rs".to_string()]);
    }
}
