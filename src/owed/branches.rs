//! Which of this working copy's own branches hold commits not pushed (SPEC §6), read from
//! git under the shared budget, and which of those a queued push hands back.
//!
//! Own: created here (`branch.created`), or checked out here (this worktree's HEAD reflog,
//! or now) with a commit by this checkout's `user.email` made or rewritten in the last
//! [`RECENT_OWN_COMMIT`]. Never the default branch, never a branch another worktree holds.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Instant;

use jiff::Timestamp;

use super::{
    AwayQuery, BRANCHES_EXAMINED_MAX, CHILD_OUTPUT_MAX, HandBack, OWN_COMMITS_SCANNED_MAX, RECENT_OWN_COMMIT, REFLOG_ENTRIES_MAX, RunFail,
    run_bounded,
};
use crate::verdict::stop::{Owed, QUEUED_STEPS_SCANNED_MAX};

pub(super) struct BranchQuery<'a> {
    pub root: &'a Path,
    pub created_here: &'a [String],
    pub now: Timestamp,
    /// The budget's end: every git read is killed there.
    pub deadline: Instant,
    pub away: Option<&'a AwayQuery<'a>>,
}

#[derive(Debug, Default)]
pub(super) struct BranchReading {
    pub items: Vec<Owed>,
    pub handed_back: Vec<HandBack>,
    pub notes: Vec<String>,
    pub incomplete: bool,
}

/// Why the reading stopped.
enum Stop {
    /// The budget ran out: what was read stands, the rest is left out.
    Budget,
    /// Git could not answer: named in a note.
    Failed(String),
}

/// Reads the own unpushed branches. A budget cut keeps what was read and marks the
/// reading incomplete; a git failure is a note.
pub(super) fn read(q: &BranchQuery<'_>) -> BranchReading {
    let mut r = BranchReading::default();
    match examine(q, &mut r) {
        Ok(()) => {}
        Err(Stop::Budget) => {
            r.incomplete = true;
            r.notes.push("the git reads were cut at the 14 s budget; branches not yet read were left out".into());
        }
        Err(Stop::Failed(why)) => r.notes.push(format!("branches were not read: {why}")),
    }
    r
}

struct Git<'a> {
    root: &'a Path,
    deadline: Instant,
}

impl Git<'_> {
    /// Runs git; a nonzero exit is the caller's to judge.
    fn run(&self, args: &[&str]) -> Result<super::Ran, Stop> {
        let what = args.first().copied().unwrap_or("");
        match run_bounded(OsStr::new("git"), args, self.root, self.deadline, CHILD_OUTPUT_MAX) {
            Ok(ran) => Ok(ran),
            Err(RunFail::Deadline) => Err(Stop::Budget),
            Err(RunFail::TooLong) => Err(Stop::Failed(format!("git {what} printed more than {CHILD_OUTPUT_MAX} bytes"))),
            Err(RunFail::Read) => Err(Stop::Failed(format!("the output of git {what} could not be read"))),
            Err(RunFail::Spawn(why)) => Err(Stop::Failed(format!("git could not be started: {why}"))),
        }
    }

    /// Runs git and takes its stdout only when it exits 0.
    fn ok(&self, args: &[&str]) -> Result<Vec<u8>, Stop> {
        let ran = self.run(args)?;
        match ran.code {
            Some(0) => Ok(ran.out),
            _ => Err(Stop::Failed(format!("git {} failed", args.first().copied().unwrap_or("")))),
        }
    }
}

/// A local branch: its head and its head's tree.
struct Head {
    oid: String,
    tree: String,
}

/// The default branch's last-fetched tip: `origin/<default>`, else the local default.
struct Base {
    /// The ref it was read from, e.g. `refs/remotes/origin/main`.
    refname: String,
    oid: String,
    tree: String,
}

/// How a candidate is own.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    /// Created here: own without the recency rule.
    Created,
    /// Checked out here: own only with a recent commit of this checkout's.
    CheckedOut,
}

fn examine(q: &BranchQuery<'_>, r: &mut BranchReading) -> Result<(), Stop> {
    let git = Git { root: q.root, deadline: q.deadline };
    let head = git.run(&["rev-parse", "-q", "--verify", "HEAD"])?;
    if head.code != Some(0) {
        return Err(Stop::Failed("git found no commit here (not a repository, or no commit yet)".into()));
    }
    let config = read_config(&git)?;
    let init_default = config.get("init.defaultbranch").cloned();

    // One listing answers which branches exist, their heads, and origin/HEAD's target.
    let mut patterns = vec!["refs/heads/".to_string(), "refs/remotes/origin/HEAD".into()];
    for name in ["main", "master"].into_iter().chain(init_default.as_deref()) {
        patterns.push(format!("refs/remotes/origin/{name}"));
    }
    let mut args = vec!["for-each-ref", "--format=%(refname)%00%(objectname)%00%(tree)%00%(symref)"];
    args.extend(patterns.iter().map(String::as_str));
    let listing = git.ok(&args)?;
    let mut refs: HashMap<String, (Head, String)> = HashMap::new();
    for line in split_lines(&listing) {
        let mut f = line.split('\0');
        if let (Some(name), Some(oid), Some(tree), Some(symref)) = (f.next(), f.next(), f.next(), f.next()) {
            refs.insert(name.to_string(), (Head { oid: oid.into(), tree: tree.into() }, symref.to_string()));
        }
    }
    let (default, base) = default_and_base(&refs, init_default);
    let heads: HashMap<&str, &Head> = refs.iter().filter_map(|(name, (head, _))| Some((name.strip_prefix("refs/heads/")?, head))).collect();

    let held_elsewhere = held_by_other_worktrees(&git, q.root)?;
    let current = crate::hook::git::current_branch(q.root);
    let reflog = git.run(&["reflog", "show", "--format=%gs", &format!("-n{REFLOG_ENTRIES_MAX}"), "HEAD", "--"])?;
    // A HEAD without a reflog (logging off) names nothing checked out; that is no failure.
    let checked_out = if reflog.code == Some(0) { checkout_names(&String::from_utf8_lossy(&reflog.out)) } else { vec![] };

    let mut candidates: Vec<(String, Route)> = Vec::new();
    let mut seen = HashSet::new();
    let created = q.created_here.iter().map(|b| (b.as_str(), Route::Created));
    let here = current.iter().chain(checked_out.iter()).map(|b| (b.as_str(), Route::CheckedOut));
    for (name, route) in created.chain(here) {
        let never = Some(name) == default.as_deref() || held_elsewhere.contains(name) || !heads.contains_key(name);
        if !never && seen.insert(name) {
            candidates.push((name.to_string(), route));
        }
    }
    if candidates.len() > BRANCHES_EXAMINED_MAX {
        let left = candidates.len() - BRANCHES_EXAMINED_MAX;
        r.notes.push(format!("{left} of the own branches were not examined (at most {BRANCHES_EXAMINED_MAX} are)"));
        candidates.truncate(BRANCHES_EXAMINED_MAX);
    }
    if candidates.is_empty() {
        return Ok(());
    }

    let tracking = read_tracking(&git, candidates.iter().map(|(b, _)| b.as_str()))?;
    let email = config.get("user.email").map(|e| e.trim().to_string()).filter(|e| !e.is_empty());
    let since = q.now.as_second().saturating_sub(RECENT_OWN_COMMIT.as_secs() as i64);
    let steps = q.away.filter(|a| a.hold_pushes).map(|a| &a.queued[a.queued.len().saturating_sub(QUEUED_STEPS_SCANNED_MAX)..]);

    for (branch, route) in &candidates {
        let Some(head) = heads.get(branch.as_str()) else { continue };
        let facts = Facts { tracking: tracking.get(branch.as_str()), base: base.as_ref(), email: email.as_deref(), since };
        let contains_base = match judge(&git, branch, head, *route, &facts) {
            Ok(Some(contains_base)) => contains_base,
            Ok(None) => continue,
            Err(Stop::Failed(why)) => {
                r.notes.push(format!("branch {branch} was not judged: {why}"));
                continue;
            }
            Err(stop) => return Err(stop),
        };
        // With no default branch at all there is no local work to do first but the push.
        let next_act_is_push = contains_base || base.is_none();
        if contains_base && steps.is_some_and(|steps| steps.iter().any(|s| crate::verdict::stop::names_branch(s, branch))) {
            r.handed_back.push(HandBack { branch: branch.clone(), head: head.oid.clone() });
        } else {
            r.items.push(Owed::Unpushed { branch: branch.clone(), next_act_is_push });
        }
    }
    Ok(())
}

/// What every branch is judged against.
struct Facts<'a> {
    tracking: Option<&'a (String, String)>,
    base: Option<&'a Base>,
    email: Option<&'a str>,
    since: i64,
}

/// Whether one candidate is owed: None when not, else whether its head contains the
/// base's last-fetched tip. A failure here is this branch's alone.
fn judge(git: &Git<'_>, branch: &str, head: &Head, route: Route, facts: &Facts<'_>) -> Result<Option<bool>, Stop> {
    let refname = format!("refs/heads/{branch}");
    if !unpushed(git, &refname, facts.tracking, facts.base)? {
        return Ok(None);
    }
    if route == Route::CheckedOut {
        let Some(email) = facts.email else { return Ok(None) };
        if !has_recent_own_commit(git, &refname, facts.base, email, facts.since)? {
            return Ok(None);
        }
    }
    let Some(base) = facts.base else { return Ok(Some(false)) };
    let ran = git.run(&["merge-base", "--is-ancestor", &base.oid, &head.oid])?;
    match ran.code {
        Some(0) => Ok(Some(true)),
        Some(1) => Ok(Some(false)),
        _ => Err(Stop::Failed("git merge-base failed".into())),
    }
}

/// `user.email` and `init.defaultBranch` (keys lowercased, the last value winning, as git
/// reads them).
fn read_config(git: &Git<'_>) -> Result<HashMap<String, String>, Stop> {
    let ran = git.run(&["config", "-z", "--get-regexp", r"^(user\.email|init\.defaultbranch)$"])?;
    let mut out = HashMap::new();
    // Exit 1 is "none set".
    if ran.code == Some(0) {
        for entry in ran.out.split(|&b| b == 0) {
            let entry = String::from_utf8_lossy(entry);
            if let Some((key, value)) = entry.split_once('\n') {
                out.insert(key.to_ascii_lowercase(), value.to_string());
            }
        }
    } else if ran.code != Some(1) {
        return Err(Stop::Failed("git config failed".into()));
    }
    Ok(out)
}

/// The default branch's name and its last-fetched tip: origin/HEAD's target, else `main`
/// or `master` (whichever exists locally), else `init.defaultBranch`; the tip is
/// `origin/<name>` when fetched, else the local branch.
fn default_and_base(refs: &HashMap<String, (Head, String)>, init_default: Option<String>) -> (Option<String>, Option<Base>) {
    let base_of = |refname: &str, head: &Head| Base { refname: refname.to_string(), oid: head.oid.clone(), tree: head.tree.clone() };
    if let Some((head, symref)) = refs.get("refs/remotes/origin/HEAD")
        && let Some(name) = symref.strip_prefix("refs/remotes/origin/")
    {
        return (Some(name.to_string()), Some(base_of(symref, head)));
    }
    // A copy holding only feature branches still has origin's main or master.
    let exists = |n: &str| refs.contains_key(&format!("refs/heads/{n}")) || refs.contains_key(&format!("refs/remotes/origin/{n}"));
    let name = ["main", "master"].into_iter().find(|n| exists(n)).map(str::to_owned).or(init_default);
    let Some(name) = name else { return (None, None) };
    let base = [format!("refs/remotes/origin/{name}"), format!("refs/heads/{name}")]
        .into_iter()
        .find_map(|refname| refs.get(&refname).map(|(head, _)| base_of(&refname, head)));
    (Some(name), base)
}

/// Branches checked out in a worktree other than the one at `root`.
fn held_by_other_worktrees(git: &Git<'_>, root: &Path) -> Result<HashSet<String>, Stop> {
    let out = git.ok(&["worktree", "list", "--porcelain"])?;
    let here = canonical(root);
    let mut held = HashSet::new();
    let mut path: Option<PathBuf> = None;
    for line in String::from_utf8_lossy(&out).lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(canonical(Path::new(p)));
        } else if let Some(b) = line.strip_prefix("branch refs/heads/")
            && path.as_ref() != Some(&here)
        {
            held.insert(b.to_string());
        }
    }
    Ok(held)
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Both ends of every `checkout: moving from A to B` line, newest first (commit ids too;
/// the caller keeps only names of existing branches).
fn checkout_names(reflog: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in reflog.lines() {
        if let Some((from, to)) = line.strip_prefix("checkout: moving from ").and_then(|rest| rest.split_once(" to ")) {
            names.push(to.trim().to_string());
            names.push(from.trim().to_string());
        }
    }
    names
}

/// Each candidate's upstream and how it tracks (`ahead 2`, `gone`, …), in one read.
fn read_tracking<'b>(git: &Git<'_>, branches: impl Iterator<Item = &'b str>) -> Result<HashMap<String, (String, String)>, Stop> {
    let refs: Vec<String> = branches.map(|b| format!("refs/heads/{b}")).collect();
    let mut args = vec!["for-each-ref", "--format=%(refname)%00%(upstream)%00%(upstream:track,nobracket)"];
    args.extend(refs.iter().map(String::as_str));
    let out = git.ok(&args)?;
    let mut tracking = HashMap::new();
    for line in split_lines(&out) {
        let mut f = line.split('\0');
        if let (Some(name), Some(upstream), Some(track)) = (f.next(), f.next(), f.next())
            && let Some(branch) = name.strip_prefix("refs/heads/")
        {
            tracking.insert(branch.to_string(), (upstream.to_string(), track.to_string()));
        }
    }
    Ok(tracking)
}

/// Whether the branch holds commits not pushed. With an upstream of its own that exists:
/// commits not in it. With none, one that is gone, or the default branch as upstream (a
/// branch cut from `origin/main` tracks it): not when every commit is in some
/// remote-tracking ref (pushed without `-u`), nor when landed in the default branch's
/// last-fetched tip, where landed means merging the branch changes nothing or, when that
/// merge conflicts, `git cherry` finds every commit upstream.
fn unpushed(git: &Git<'_>, refname: &str, tracking: Option<&(String, String)>, base: Option<&Base>) -> Result<bool, Stop> {
    if let Some((upstream, track)) = tracking
        && !upstream.is_empty()
        && track != "gone"
        && base.is_none_or(|b| b.refname != *upstream)
    {
        return Ok(ahead(track) > 0);
    }
    let beyond_remotes = git.ok(&["rev-list", "-n1", refname, "--not", "--remotes", "--"])?;
    if split_lines(&beyond_remotes).next().is_none() {
        return Ok(false);
    }
    let Some(base) = base else { return Ok(true) };
    let merged = git.run(&["merge-tree", "--write-tree", &base.oid, refname])?;
    let tree = String::from_utf8_lossy(&merged.out).lines().next().unwrap_or("").trim().to_string();
    if merged.code == Some(0) && !tree.is_empty() {
        return Ok(tree != base.tree);
    }
    // A conflicting merge (or a git without merge-tree --write-tree): by patch id.
    let cherry = git.ok(&["cherry", &base.oid, refname])?;
    Ok(String::from_utf8_lossy(&cherry).lines().any(|l| l.starts_with('+')))
}

/// The `ahead N` count of an `%(upstream:track)` value; 0 when in step or only behind.
fn ahead(track: &str) -> u64 {
    track.split(", ").find_map(|part| part.strip_prefix("ahead ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// Whether the branch holds, beyond the default branch, a commit authored by `email` whose
/// later date (author or committer, so a rebase counts) is at or after `since`.
fn has_recent_own_commit(git: &Git<'_>, refname: &str, base: Option<&Base>, email: &str, since: i64) -> Result<bool, Stop> {
    let count = format!("-n{OWN_COMMITS_SCANNED_MAX}");
    let mut args = vec!["log", count.as_str(), "--format=%ae%x00%at%x00%ct", refname];
    let not = base.map(|b| format!("^{}", b.oid));
    args.extend(not.as_deref());
    args.push("--");
    let out = git.ok(&args)?;
    Ok(split_lines(&out).any(|line| {
        let mut f = line.split('\0');
        let (Some(author), Some(at), Some(ct)) = (f.next(), f.next(), f.next()) else { return false };
        let later = at.trim().parse::<i64>().unwrap_or(i64::MIN).max(ct.trim().parse::<i64>().unwrap_or(i64::MIN));
        // Email addresses compare without case, as mail does in practice.
        author.trim().eq_ignore_ascii_case(email) && later >= since
    }))
}

fn split_lines(bytes: &[u8]) -> impl Iterator<Item = &str> {
    bytes.split(|&b| b == b'\n').filter_map(|l| std::str::from_utf8(l).ok()).filter(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::stop::names_branch;

    #[test]
    fn a_step_names_a_branch_only_as_a_whole_name() {
        assert!(names_branch("push feat/p", "feat/p"));
        assert!(names_branch("push feat/p.", "feat/p"));
        assert!(names_branch("push feat/p, then rest", "feat/p"));
        assert!(names_branch("(feat/p)", "feat/p"));
        assert!(names_branch("feat/p-2 and feat/p", "feat/p"));
        assert!(!names_branch("push feat/p-2", "feat/p"));
        assert!(!names_branch("push feat/p.2", "feat/p"));
        assert!(!names_branch("push feat/p_x", "feat/p"));
        assert!(!names_branch("push xfeat/p", "feat/p"));
        assert!(!names_branch("push origin/feat/p", "feat/p"));
        assert!(!names_branch("push feat/pé", "feat/p"));
        assert!(!names_branch("anything", ""));
    }

    #[test]
    fn both_ends_of_each_checkout_line_are_read_newest_first() {
        let reflog = "commit: x\ncheckout: moving from main to feat/a\nrebase (finish): returning to refs/heads/z\n\
                      checkout: moving from 0123abc to main\n";
        assert_eq!(checkout_names(reflog), ["feat/a", "main", "main", "0123abc"]);
    }

    #[test]
    fn ahead_reads_the_track_value() {
        assert_eq!(ahead("ahead 3"), 3);
        assert_eq!(ahead("ahead 2, behind 5"), 2);
        assert_eq!(ahead("behind 5"), 0);
        assert_eq!(ahead(""), 0);
        assert_eq!(ahead("gone"), 0);
    }
}
