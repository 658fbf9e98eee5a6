//! Which of this working copy's own branches hold commits not pushed (SPEC §6), read from
//! git under the shared budget, and which of those a queued push hands back.
//!
//! Own: created here (`branch.created`), or checked out here (this worktree's HEAD reflog,
//! or now) with a commit by this checkout's `user.email` made or rewritten in the last
//! [`RECENT_OWN_COMMIT`]. Never the default branch; a branch only checked out here is not
//! own while another worktree holds it, but one created here stays own wherever it is checked
//! out (a branch cut with `git worktree add -b` is the cutting copy's, docs/own-work.md).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use jiff::Timestamp;

use super::git_answers;
use super::{
    AwayQuery, BRANCHES_EXAMINED_MAX, CHILD_OUTPUT_MAX, HandBack, OWN_COMMITS_SCANNED_MAX, OwnBranch, RECENT_OWN_COMMIT, REFLOG_ENTRIES_MAX,
};
use crate::git::run::{self, Ran, RunError};
use crate::verdict::stop::{Owed, QUEUED_STEPS_SCANNED_MAX};

pub(super) struct BranchQuery<'a> {
    pub root: &'a Path,
    pub created_here: &'a [String],
    pub now: Timestamp,
    /// The budget's end: every git read is killed there.
    pub deadline: Instant,
    pub away: Option<&'a AwayQuery<'a>>,
    /// Only which branches are own: no upstream, landing or base reads.
    pub own_only: bool,
    /// The working copy's local tier, where git's answers are kept between hooks (None:
    /// git is asked, and nothing is kept).
    pub tier: Option<&'a Path>,
}

#[derive(Debug, Default)]
pub(super) struct BranchReading {
    pub items: Vec<Owed>,
    /// Every own branch examined, owed or not.
    pub own: Vec<OwnBranch>,
    pub handed_back: Vec<HandBack>,
    pub notes: Vec<String>,
    pub incomplete: bool,
    /// Some branch is own only for a recent commit of this checkout's: the reading stands
    /// until the first such branch's newest such commit ages past [`RECENT_OWN_COMMIT`].
    pub own_until: Option<Timestamp>,
}

/// Why the reading stopped.
enum Stop {
    /// The budget ran out: what was read stands, the rest is left out.
    Budget,
    /// Git could not answer: named in a note.
    Failed(String),
}

/// Reads the own unpushed branches. A budget cut keeps what was read and marks the
/// reading incomplete; a git failure is a note. With a tier, a reading kept there under
/// the repository's files as they stand now is the answer and git is not run; a whole
/// reading git gives is kept.
pub(super) fn read(q: &BranchQuery<'_>) -> BranchReading {
    let asked = git_answers::Asked {
        root: q.root,
        created_here: q.created_here,
        own_only: q.own_only,
        away: q.away.map(|a| (a.hold_pushes, a.queued)),
    };
    // Keyed before git runs: a change while it runs leaves the answer under a stale key.
    let kept_in = q.tier.and_then(|tier| Some((tier, git_answers::key(&asked)?)));
    if let Some((tier, key)) = &kept_in
        && let Some(kept) = git_answers::kept(tier, key, q.now)
    {
        let git_answers::Kept { items, own, handed_back, own_until } = kept;
        return BranchReading { items, own, handed_back, own_until, ..BranchReading::default() };
    }
    let r = read_through(q, run::Git::new(q.root), Reads::Batched);
    if let Some((tier, key)) = &kept_in
        && !r.incomplete
        && r.notes.is_empty()
    {
        let kept =
            git_answers::Kept { items: r.items.clone(), own: r.own.clone(), handed_back: r.handed_back.clone(), own_until: r.own_until };
        git_answers::keep(tier, key, q.now, kept);
    }
    r
}

/// How the per-branch questions are put to git.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Reads {
    /// One git run per question for all candidates at once, falling back to one run per
    /// branch where the batched answer is not certain or git cannot give it.
    Batched,
    /// One git run per question per branch (the fallback alone; for tests).
    #[cfg_attr(not(test), allow(dead_code))]
    PerBranch,
}

/// [`read`] with the git program (a test's logging wrapper) and the way of reading named.
#[cfg(test)]
fn read_with(q: &BranchQuery<'_>, program: &std::ffi::OsStr, reads: Reads) -> BranchReading {
    read_through(q, run::Git::with_program(program, q.root), reads)
}

/// [`read`] through `git` and the way of reading named.
fn read_through(q: &BranchQuery<'_>, git: run::Git<'_>, reads: Reads) -> BranchReading {
    let mut r = BranchReading::default();
    let git = Git { git, deadline: q.deadline, reads };
    match examine(q, &git, &mut r) {
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
    git: run::Git<'a>,
    deadline: Instant,
    reads: Reads,
}

impl Git<'_> {
    /// Runs git; a nonzero exit is the caller's to judge.
    fn run(&self, args: &[&str]) -> Result<Ran, Stop> {
        self.run_with_input(args, None)
    }

    /// Runs git with `input` on its stdin (when some), killed at the budget's end or past
    /// [`CHILD_OUTPUT_MAX`] bytes; a nonzero exit is the caller's to judge.
    fn run_with_input(&self, args: &[&str], input: Option<Vec<u8>>) -> Result<Ran, Stop> {
        self.git.run(args, input, self.deadline, CHILD_OUTPUT_MAX).map_err(|e| match e {
            RunError::Deadline { .. } => Stop::Budget,
            other => Stop::Failed(other.to_string()),
        })
    }

    /// Whether the candidates in `which` are asked about in one run: only when batching
    /// and more than one (for one, the per-branch run is as few and reads less).
    fn batches(&self, which: &[usize]) -> bool {
        self.reads == Reads::Batched && which.len() > 1
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

/// A local branch: its head, its head's tree and its head's committer time.
struct Head {
    oid: String,
    tree: String,
    committed: Option<jiff::Timestamp>,
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

fn examine(q: &BranchQuery<'_>, git: &Git<'_>, r: &mut BranchReading) -> Result<(), Stop> {
    // The worktree listing also says whether HEAD names a commit here, so no `rev-parse`
    // is run unless it cannot tell; its own failure is reported where it is needed.
    let here = canonical(q.root);
    let worktrees = match git.run(&["worktree", "list", "--porcelain"]) {
        Err(Stop::Budget) => return Err(Stop::Budget),
        Ok(ran) if ran.code == Some(0) => Ok(ran.out),
        Ok(_) => Err(Stop::Failed("git worktree failed".into())),
        Err(failed) => Err(failed),
    };
    let head_named = worktrees.as_deref().ok().and_then(|out| head_names_a_commit(out, &here));
    let has_commit = match head_named {
        Some(named) => named,
        None => git.run(&["rev-parse", "-q", "--verify", "HEAD"])?.code == Some(0),
    };
    if !has_commit {
        return Err(Stop::Failed("git found no commit here (not a repository, or no commit yet)".into()));
    }
    let config = read_config(git)?;
    let init_default = config.get("init.defaultbranch").cloned();

    // One listing answers which branches exist, their heads, and origin/HEAD's target.
    let mut patterns = vec!["refs/heads/".to_string(), "refs/remotes/origin/HEAD".into()];
    for name in ["main", "master"].into_iter().chain(init_default.as_deref()) {
        patterns.push(format!("refs/remotes/origin/{name}"));
    }
    let mut args = vec!["for-each-ref", "--format=%(refname)%00%(objectname)%00%(tree)%00%(symref)%00%(committerdate:raw)"];
    args.extend(patterns.iter().map(String::as_str));
    let listing = git.ok(&args)?;
    let mut refs: HashMap<String, (Head, String)> = HashMap::new();
    for line in split_lines(&listing) {
        let mut f = line.split('\0');
        if let (Some(name), Some(oid), Some(tree), Some(symref)) = (f.next(), f.next(), f.next(), f.next()) {
            let committed = f.next().and_then(raw_date);
            refs.insert(name.to_string(), (Head { oid: oid.into(), tree: tree.into(), committed }, symref.to_string()));
        }
    }
    let (default, base) = default_and_base(&refs, init_default);
    let heads: HashMap<&str, &Head> = refs.iter().filter_map(|(name, (head, _))| Some((name.strip_prefix("refs/heads/")?, head))).collect();

    let held_elsewhere = held_by_other_worktrees(&worktrees?, &here);
    let current = crate::git::branch::current_branch(q.root);
    let reflog = git.run(&["reflog", "show", "--format=%gs", &format!("-n{REFLOG_ENTRIES_MAX}"), "HEAD", "--"])?;
    // A HEAD without a reflog (logging off) names nothing checked out; that is no failure.
    let checked_out = if reflog.code == Some(0) { checkout_names(&String::from_utf8_lossy(&reflog.out)) } else { vec![] };

    let mut candidates: Vec<(String, Route)> = Vec::new();
    let mut seen = HashSet::new();
    let created = q.created_here.iter().map(|b| (b.as_str(), Route::Created));
    let here_names = current.iter().chain(checked_out.iter()).map(|b| (b.as_str(), Route::CheckedOut));
    for (name, route) in created.chain(here_names) {
        // A branch this copy created stays its own in whichever worktree holds it (seed 003's
        // stacked drain branches); one only checked out here is the holding copy's.
        let held = route == Route::CheckedOut && held_elsewhere.contains(name);
        let never = Some(name) == default.as_deref() || held || !heads.contains_key(name);
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

    let tracking = if q.own_only { HashMap::new() } else { read_tracking(git, candidates.iter().map(|(b, _)| b.as_str()))? };
    let email = config.get("user.email").map(|e| e.trim().to_string()).filter(|e| !e.is_empty());
    let since = q.now.as_second().saturating_sub(RECENT_OWN_COMMIT.as_secs() as i64);
    let steps = q.away.filter(|a| a.hold_pushes).map(|a| &a.queued[a.queued.len().saturating_sub(QUEUED_STEPS_SCANNED_MAX)..]);

    let mut cands: Vec<Cand<'_>> = candidates
        .iter()
        .filter_map(|(branch, route)| {
            let head = heads.get(branch.as_str())?;
            Some(Cand {
                branch,
                refname: format!("refs/heads/{branch}"),
                head,
                route: *route,
                state: State::Open,
                own: false,
                recent: None,
            })
        })
        .collect();
    let facts = Facts { tracking: &tracking, base: base.as_ref(), email: email.as_deref(), since };
    // What was judged stands even when the budget cuts the rest.
    let judged = judge_all(git, &mut cands, &facts, q.own_only);
    r.own = cands
        .iter()
        .filter(|c| c.own)
        .map(|c| OwnBranch { name: c.branch.to_string(), head: c.head.oid.clone(), committed_at: c.head.committed })
        .collect();
    r.own_until = cands
        .iter()
        .filter(|c| c.own && c.route == Route::CheckedOut)
        .filter_map(|c| c.recent)
        .min()
        .map(|later| Timestamp::from_second(later.saturating_add(RECENT_OWN_COMMIT.as_secs() as i64)).unwrap_or(Timestamp::MIN));
    for cand in &cands {
        let branch = cand.branch;
        let contains_base = match &cand.state {
            State::Open | State::NotOwed => continue,
            State::Failed(why) => {
                r.notes.push(format!("branch {branch} was not judged: {why}"));
                continue;
            }
            State::Owed { contains_base } => *contains_base,
        };
        // With no default branch at all there is no local work to do first but the push.
        let next_act_is_push = contains_base || base.is_none();
        if contains_base && steps.is_some_and(|steps| steps.iter().any(|s| crate::verdict::stop::names_branch(s, branch))) {
            r.handed_back.push(HandBack { branch: branch.to_string(), head: cand.head.oid.clone() });
        } else {
            r.items.push(Owed::Unpushed { branch: branch.to_string(), next_act_is_push });
        }
    }
    judged
}

/// Whether `HEAD <oid>` names a commit in the porcelain worktree listing's entry for the
/// worktree at `here`: None when no entry is this worktree's or it names no HEAD (bare).
fn head_names_a_commit(listing: &[u8], here: &Path) -> Option<bool> {
    let mut ours = false;
    for line in String::from_utf8_lossy(listing).lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            ours = canonical(Path::new(p)) == here;
        } else if let Some(oid) = line.strip_prefix("HEAD ")
            && ours
        {
            // An unborn branch is listed with the null id.
            let oid = oid.trim();
            return Some(!oid.is_empty() && !oid.bytes().all(|b| b == b'0'));
        }
    }
    None
}

/// One candidate being judged.
struct Cand<'a> {
    branch: &'a str,
    refname: String,
    head: &'a Head,
    route: Route,
    state: State,
    /// Created here, or checked out here with a recent commit of this checkout's.
    own: bool,
    /// Own for a recent commit: the newest such commit's later date (unix seconds).
    recent: Option<i64>,
}

/// Where a candidate's judgment stands.
enum State {
    /// Not yet decided (a budget cut leaves it out).
    Open,
    NotOwed,
    /// A git read for this branch alone failed: named in a note.
    Failed(String),
    /// Owed; whether its head contains the base's last-fetched tip.
    Owed {
        contains_base: bool,
    },
}

/// What every branch is judged against.
struct Facts<'a> {
    tracking: &'a HashMap<String, (String, String)>,
    base: Option<&'a Base>,
    email: Option<&'a str>,
    since: i64,
}

/// Commits a batched `rev-list` or `log` lists at most; past this its answer is taken as
/// partial and the branches it leaves open are read one by one.
const BATCH_COMMITS_LISTED_MAX: usize = 10_000;

/// Judges every candidate, in steps each of which puts one question to git for all the
/// candidates still open (SPEC §6): unpushed (own upstream, else every commit in some
/// remote-tracking ref, else landed in the base); own (created here, or for a branch only
/// checked out here a recent commit of this checkout's, asked of every such branch, pushed
/// or not, since an own branch's pull request and the behind check read it); then, for the
/// own unpushed, whether the head contains the base's tip. With `own_only` only own is
/// asked. Only a budget cut is returned; a failure for one branch is that branch's
/// `State::Failed`.
fn judge_all(git: &Git<'_>, cands: &mut [Cand<'_>], facts: &Facts<'_>, own_only: bool) -> Result<(), Stop> {
    let mut unpushed = Vec::new();
    if !own_only {
        let mut to_remotes = Vec::new();
        for (i, cand) in cands.iter_mut().enumerate() {
            match by_own_upstream(facts.tracking.get(cand.branch), facts.base) {
                Some(true) => unpushed.push(i),
                Some(false) => cand.state = State::NotOwed,
                None => to_remotes.push(i),
            }
        }
        let beyond = beyond_remotes(git, cands, &to_remotes)?;
        match facts.base {
            None => unpushed.extend(beyond),
            Some(base) => unpushed.extend(not_landed(git, cands, &beyond, base)?),
        }
        unpushed.sort_unstable();
    }

    let mut to_scan = Vec::new();
    for (i, cand) in cands.iter_mut().enumerate() {
        match (cand.route, facts.email) {
            (Route::Created, _) => cand.own = true,
            (Route::CheckedOut, Some(_)) => to_scan.push(i),
            (Route::CheckedOut, _) => {}
        }
    }
    if let Some(email) = facts.email {
        for (i, later) in recent_own(git, cands, &to_scan, facts.base, email, facts.since)? {
            cands[i].own = true;
            cands[i].recent = Some(later);
        }
    }
    if own_only {
        return Ok(());
    }
    let own: Vec<usize> = unpushed.into_iter().filter(|&i| cands[i].own && matches!(cands[i].state, State::Open)).collect();
    match facts.base {
        None => own.into_iter().for_each(|i| cands[i].state = State::Owed { contains_base: false }),
        Some(base) => contains_base(git, cands, &own, base)?,
    }
    Ok(())
}

/// Takes one branch's answer: a failure becomes the branch's `State::Failed` (None), a
/// budget cut goes up.
fn for_one<T>(cand: &mut Cand<'_>, got: Result<T, Stop>) -> Result<Option<T>, Stop> {
    match got {
        Ok(v) => Ok(Some(v)),
        Err(Stop::Failed(why)) => {
            cand.state = State::Failed(why);
            Ok(None)
        }
        Err(Stop::Budget) => Err(Stop::Budget),
    }
}

/// A batched read's output when git gave one (exit 0, within the cap); None when it did
/// not, so the caller asks branch by branch. A budget cut goes up.
fn batched(got: Result<Ran, Stop>) -> Result<Option<Vec<u8>>, Stop> {
    match got {
        Ok(ran) if ran.code == Some(0) => Ok(Some(ran.out)),
        Ok(_) | Err(Stop::Failed(_)) => Ok(None),
        Err(Stop::Budget) => Err(Stop::Budget),
    }
}

/// With an upstream of its own that exists (not gone, not the default branch's tip a
/// branch cut from `origin/main` tracks), whether the branch is ahead of it; None when it
/// has none such and is judged by the remote-tracking refs and the base instead.
fn by_own_upstream(tracking: Option<&(String, String)>, base: Option<&Base>) -> Option<bool> {
    let (upstream, track) = tracking?;
    (!upstream.is_empty() && track != "gone" && base.is_none_or(|b| b.refname != *upstream)).then(|| ahead(track) > 0)
}

/// Of `which`, the candidates holding a commit in no remote-tracking ref (pushed without
/// `-u` is pushed); the others are not owed. For more than one, one `rev-list` of all
/// their heads against `--remotes`: a branch holds such a commit exactly when its head is
/// one (a head in a remote-tracking ref has all its ancestors there), and then the head is
/// listed. When the listing was cut at its bound, a head it did not list is asked about
/// alone, as is every head when git gives no listing.
fn beyond_remotes(git: &Git<'_>, cands: &mut [Cand<'_>], which: &[usize]) -> Result<Vec<usize>, Stop> {
    if which.is_empty() {
        return Ok(vec![]);
    }
    let listed = if git.batches(which) {
        let count = format!("-n{}", BATCH_COMMITS_LISTED_MAX + 1);
        let mut args = vec!["rev-list", count.as_str()];
        args.extend(which.iter().map(|&i| cands[i].head.oid.as_str()));
        args.extend(["--not", "--remotes", "--"]);
        batched(git.run(&args))?.map(|out| {
            let oids: HashSet<String> = split_lines(&out).map(|l| l.trim().to_string()).collect();
            let whole = split_lines(&out).count() <= BATCH_COMMITS_LISTED_MAX;
            (oids, whole)
        })
    } else {
        None
    };
    let mut beyond = Vec::new();
    for &i in which {
        let cand = &mut cands[i];
        let is_beyond = match &listed {
            Some((oids, _)) if oids.contains(&cand.head.oid) => true,
            Some((_, true)) => false,
            _ => {
                let got = beyond_remotes_one(git, &cand.refname);
                match for_one(cand, got)? {
                    Some(is_beyond) => is_beyond,
                    None => continue,
                }
            }
        };
        if is_beyond {
            beyond.push(i);
        } else {
            cand.state = State::NotOwed;
        }
    }
    Ok(beyond)
}

/// Whether one branch holds a commit in no remote-tracking ref.
fn beyond_remotes_one(git: &Git<'_>, refname: &str) -> Result<bool, Stop> {
    let out = git.ok(&["rev-list", "-n1", refname, "--not", "--remotes", "--"])?;
    Ok(split_lines(&out).next().is_some())
}

/// Of `which`, the candidates not landed in the base's last-fetched tip; the landed are
/// not owed. Landed means merging the branch changes nothing or, when that merge
/// conflicts, `git cherry` finds every commit upstream. All the merges are made by one
/// `git merge-tree --stdin` (git 2.40 or later; an older git refuses the option, so this
/// is found out by the error, not by asking the version); when git gives no answer for
/// every merge, each branch is merged alone. The `cherry` is per branch, for conflicts
/// only.
fn not_landed(git: &Git<'_>, cands: &mut [Cand<'_>], which: &[usize], base: &Base) -> Result<Vec<usize>, Stop> {
    if which.is_empty() {
        return Ok(vec![]);
    }
    let merged = if git.batches(which) {
        let input: String = which.iter().map(|&i| format!("{} {}\n", base.oid, cands[i].refname)).collect();
        let args = ["merge-tree", "--write-tree", "--stdin", "--name-only", "--no-messages"];
        batched(git.run_with_input(&args, Some(input.into_bytes())))?.and_then(|out| merge_results(&out, which.len()))
    } else {
        None
    };
    let mut not_landed = Vec::new();
    for (n, &i) in which.iter().enumerate() {
        let cand = &mut cands[i];
        let got = match merged.as_ref().map(|m| &m[n]) {
            // A clean merge: landed exactly when it changes nothing.
            Some(Merged::Clean(tree)) => Ok(*tree != base.tree),
            Some(Merged::NotClean) => by_cherry(git, &cand.refname, base),
            None => not_landed_one(git, &cand.refname, base),
        };
        match for_one(cand, got)? {
            Some(true) => not_landed.push(i),
            Some(false) => cand.state = State::NotOwed,
            None => {}
        }
    }
    Ok(not_landed)
}

/// One merge's outcome from `git merge-tree --stdin`.
enum Merged {
    /// Clean, with this tree.
    Clean(String),
    /// Conflicted, or git could not merge.
    NotClean,
}

/// Reads `git merge-tree --stdin --name-only --no-messages` output (NUL-separated fields:
/// per merge the status, 1 for clean, the tree, the conflicted paths and an empty field).
/// None unless it holds exactly `count` merges.
fn merge_results(out: &[u8], count: usize) -> Option<Vec<Merged>> {
    // Every field ends with a NUL: dropping the last leaves them NUL-separated.
    let mut fields = out.strip_suffix(b"\0")?.split(|&b| b == 0).map(|f| std::str::from_utf8(f).ok());
    let mut results = Vec::with_capacity(count);
    while results.len() < count {
        let status = fields.next()??;
        let tree = fields.next()??.trim();
        // The conflicted paths, up to the empty field that ends this merge.
        while !fields.next()??.is_empty() {}
        results.push(if status == "1" && !tree.is_empty() { Merged::Clean(tree.to_string()) } else { Merged::NotClean });
    }
    // Nothing may follow.
    fields.next().is_none().then_some(results)
}

/// Whether one branch is not landed, merging it alone.
fn not_landed_one(git: &Git<'_>, refname: &str, base: &Base) -> Result<bool, Stop> {
    let merged = git.run(&["merge-tree", "--write-tree", &base.oid, refname])?;
    let tree = String::from_utf8_lossy(&merged.out).lines().next().unwrap_or("").trim().to_string();
    if merged.code == Some(0) && !tree.is_empty() {
        return Ok(tree != base.tree);
    }
    // A conflicting merge (or a git without merge-tree --write-tree): by patch id.
    by_cherry(git, refname, base)
}

/// For a branch whose merge into the base conflicts: landed (false) when `git cherry`
/// finds every commit upstream; otherwise not judged, a note and not an item (seed 003):
/// a squash-merged branch whose base later changed the same lines reads exactly so, and
/// holding it owed would block a session on a stop it cannot clear.
fn by_cherry(git: &Git<'_>, refname: &str, base: &Base) -> Result<bool, Stop> {
    let cherry = git.ok(&["cherry", &base.oid, refname])?;
    if String::from_utf8_lossy(&cherry).lines().any(|l| l.starts_with('+')) {
        return Err(Stop::Failed(
            "its merge with the default branch conflicts and git cherry finds commits not upstream, so it is not held owed (merge the default branch into it to have it judged)".into(),
        ));
    }
    Ok(false)
}

/// Of `which` (branches only checked out here), the candidates holding a recent commit of
/// this checkout's among their newest [`OWN_COMMITS_SCANNED_MAX`] beyond the default
/// branch; the others are not own (so not owed).
///
/// One `git log` lists every commit beyond the base of all their heads with its parents;
/// a branch's commits are then exactly those reachable from its head within that listing
/// (a commit in the base has all its ancestors there too). A branch with at most
/// [`OWN_COMMITS_SCANNED_MAX`] such commits is answered from them, order aside; one with
/// more, or every one when the listing passes its bound or fails, is scanned alone, as
/// only git's own order says which are the newest.
fn recent_own(
    git: &Git<'_>,
    cands: &mut [Cand<'_>],
    which: &[usize],
    base: Option<&Base>,
    email: &str,
    since: i64,
) -> Result<Vec<(usize, i64)>, Stop> {
    if which.is_empty() {
        return Ok(vec![]);
    }
    let listing = if git.batches(which) {
        let count = format!("-n{}", BATCH_COMMITS_LISTED_MAX + 1);
        let mut args = vec!["log", count.as_str(), "--format=%H%x00%P%x00%ae%x00%at%x00%ct"];
        args.extend(which.iter().map(|&i| cands[i].head.oid.as_str()));
        let not = base.map(|b| format!("^{}", b.oid));
        args.extend(not.as_deref());
        args.push("--");
        batched(git.run(&args))?.and_then(|out| CommitGraph::read(&out, email, since))
    } else {
        None
    };
    let mut own = Vec::new();
    for &i in which {
        let cand = &mut cands[i];
        let from_listing = listing.as_ref().and_then(|graph| graph.newest_within(&cand.head.oid, OWN_COMMITS_SCANNED_MAX));
        let got = match from_listing {
            Some(found) => Ok(found),
            None => has_recent_own_commit(git, &cand.refname, base, email, since),
        };
        // Own-ness is asked whatever the earlier reads found: a branch they could not judge
        // keeps that note, and one they found pushed stays not owed.
        match got {
            Ok(Some(later)) => own.push((i, later)),
            Ok(None) if matches!(cand.state, State::Open) => cand.state = State::NotOwed,
            Ok(None) => {}
            Err(Stop::Failed(why)) if !matches!(cand.state, State::Failed(_)) => cand.state = State::Failed(why),
            Err(Stop::Failed(_)) => {}
            Err(Stop::Budget) => return Err(Stop::Budget),
        }
    }
    Ok(own)
}

/// The commits a batched `git log --format=%H%x00%P%x00%ae%x00%at%x00%ct` listed: each
/// one's parents and whether it is a recent one of this checkout's.
struct CommitGraph {
    /// Each commit's parents, and its later date when it is a recent one of this checkout's.
    commits: HashMap<String, (Vec<String>, Option<i64>)>,
}

impl CommitGraph {
    /// None when the listing passed [`BATCH_COMMITS_LISTED_MAX`] commits (so it may lack
    /// some).
    fn read(out: &[u8], email: &str, since: i64) -> Option<CommitGraph> {
        let mut commits = HashMap::new();
        for line in out.split(|&b| b == b'\n') {
            let mut f = line.split(|&b| b == 0);
            let (Some(oid), Some(parents), Some(author), Some(at), Some(ct)) = (f.next(), f.next(), f.next(), f.next(), f.next()) else {
                continue;
            };
            let text = |field: &[u8]| String::from_utf8_lossy(field).into_owned();
            let parents = text(parents).split_whitespace().map(str::to_owned).collect();
            // A line that is not UTF-8 is no match, as in the per-branch scan; the commit
            // still links its parents.
            let mine = match (std::str::from_utf8(author), std::str::from_utf8(at), std::str::from_utf8(ct)) {
                (Ok(author), Ok(at), Ok(ct)) => recent_by(author, at, ct, email, since),
                _ => None,
            };
            commits.insert(text(oid).trim().to_string(), (parents, mine));
            if commits.len() > BATCH_COMMITS_LISTED_MAX {
                return None;
            }
        }
        Some(CommitGraph { commits })
    }

    /// Whether a commit reachable from `head` within the listing is a recent one of this
    /// checkout's; None when more than `max` are reachable (only git's order can say which
    /// `max` it would scan).
    #[cfg(test)]
    fn any_within(&self, head: &str, max: usize) -> Option<bool> {
        self.newest_within(head, max).map(|newest| newest.is_some())
    }

    /// [`Self::any_within`] with the newest such commit's later date.
    fn newest_within(&self, head: &str, max: usize) -> Option<Option<i64>> {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut stack: Vec<&str> = vec![head];
        let mut found: Option<i64> = None;
        while let Some(oid) = stack.pop() {
            let Some((parents, mine)) = self.commits.get(oid) else { continue };
            if !seen.insert(oid) {
                continue;
            }
            if seen.len() > max {
                return None;
            }
            found = found.max(*mine);
            stack.extend(parents.iter().map(String::as_str));
        }
        Some(found)
    }
}

/// Of `which`, each owed, with whether its head contains the base's last-fetched tip: one
/// `for-each-ref --contains` for all, else (one branch, or no answer) `merge-base
/// --is-ancestor` per branch.
fn contains_base(git: &Git<'_>, cands: &mut [Cand<'_>], which: &[usize], base: &Base) -> Result<(), Stop> {
    if which.is_empty() {
        return Ok(());
    }
    let containing = if git.batches(which) {
        let contains = format!("--contains={}", base.oid);
        let mut args = vec!["for-each-ref", "--format=%(refname)", contains.as_str()];
        args.extend(which.iter().map(|&i| cands[i].refname.as_str()));
        batched(git.run(&args))?.map(|out| split_lines(&out).map(str::to_owned).collect::<HashSet<String>>())
    } else {
        None
    };
    for &i in which {
        let cand = &mut cands[i];
        let got = match &containing {
            Some(refs) => Ok(refs.contains(&cand.refname)),
            None => contains_base_one(git, &cand.head.oid, base),
        };
        if let Some(contains_base) = for_one(cand, got)? {
            cand.state = State::Owed { contains_base };
        }
    }
    Ok(())
}

/// Whether one head contains the base's tip.
fn contains_base_one(git: &Git<'_>, head: &str, base: &Base) -> Result<bool, Stop> {
    let ran = git.run(&["merge-base", "--is-ancestor", &base.oid, head])?;
    match ran.code {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err(Stop::Failed("git merge-base failed".into())),
    }
}

/// A `%(committerdate:raw)` value (`<unix seconds> <zone>`) as an instant.
fn raw_date(raw: &str) -> Option<jiff::Timestamp> {
    jiff::Timestamp::from_second(raw.split_whitespace().next()?.parse().ok()?).ok()
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

/// Branches checked out in a worktree other than the one at `here`, from the porcelain
/// worktree listing.
fn held_by_other_worktrees(listing: &[u8], here: &Path) -> HashSet<String> {
    let mut held = HashSet::new();
    let mut path: Option<PathBuf> = None;
    for line in String::from_utf8_lossy(listing).lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(canonical(Path::new(p)));
        } else if let Some(b) = line.strip_prefix("branch refs/heads/")
            && path.as_deref() != Some(here)
        {
            held.insert(b.to_string());
        }
    }
    held
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

/// The `ahead N` count of an `%(upstream:track)` value; 0 when in step or only behind.
fn ahead(track: &str) -> u64 {
    track.split(", ").find_map(|part| part.strip_prefix("ahead ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// Whether the branch holds, beyond the default branch, a commit authored by `email` whose
/// later date (author or committer, so a rebase counts) is at or after `since`.
fn has_recent_own_commit(git: &Git<'_>, refname: &str, base: Option<&Base>, email: &str, since: i64) -> Result<Option<i64>, Stop> {
    let count = format!("-n{OWN_COMMITS_SCANNED_MAX}");
    let mut args = vec!["log", count.as_str(), "--format=%ae%x00%at%x00%ct", refname];
    let not = base.map(|b| format!("^{}", b.oid));
    args.extend(not.as_deref());
    args.push("--");
    let out = git.ok(&args)?;
    Ok(split_lines(&out)
        .filter_map(|line| {
            let mut f = line.split('\0');
            let (Some(author), Some(at), Some(ct)) = (f.next(), f.next(), f.next()) else { return None };
            recent_by(author, at, ct, email, since)
        })
        .max())
}

/// The later date of a commit with these `%ae`, `%at` and `%ct` when it is by `email`
/// with that date at or after `since`.
fn recent_by(author: &str, at: &str, ct: &str, email: &str, since: i64) -> Option<i64> {
    let later = at.trim().parse::<i64>().unwrap_or(i64::MIN).max(ct.trim().parse::<i64>().unwrap_or(i64::MIN));
    // Email addresses compare without case, as mail does in practice.
    (author.trim().eq_ignore_ascii_case(email) && later >= since).then_some(later)
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

    #[test]
    fn merge_tree_stdin_output_is_read_merge_by_merge() {
        let tree = "7a66085c2c851a62538dd357fb18f3c2758b7a25";
        let out = format!("0\0{tree}\0f\0g\0\01\0{tree}\0\0");
        let got = merge_results(out.as_bytes(), 2).unwrap();
        assert!(matches!(&got[0], Merged::NotClean));
        assert!(matches!(&got[1], Merged::Clean(t) if t == tree));
        // Fewer merges than asked, more, or a cut-off one: not read.
        assert!(merge_results(out.as_bytes(), 3).is_none());
        assert!(merge_results(out.as_bytes(), 1).is_none());
        assert!(merge_results(format!("1\0{tree}\0").as_bytes(), 1).is_none());
        assert!(merge_results(b"", 1).is_none());
        // A failed merge's status is no clean merge.
        assert!(matches!(&merge_results(format!("-1\0{tree}\0\0").as_bytes(), 1).unwrap()[0], Merged::NotClean));
    }

    #[test]
    fn the_worktree_listing_says_whether_this_worktrees_head_names_a_commit() {
        let dir = tempfile::tempdir().unwrap();
        let (here, there) = (dir.path().join("here"), dir.path().join("there"));
        std::fs::create_dir_all(&here).unwrap();
        std::fs::create_dir_all(&there).unwrap();
        let here = canonical(&here);
        let listing = |head: &str| {
            format!(
                "worktree {}\nHEAD 1111111111111111111111111111111111111111\nbranch refs/heads/a\n\nworktree {}\n{head}\n\n",
                there.display(),
                here.display()
            )
        };
        let oid = "2222222222222222222222222222222222222222";
        assert_eq!(head_names_a_commit(listing(&format!("HEAD {oid}\ndetached")).as_bytes(), &here), Some(true));
        assert_eq!(head_names_a_commit(listing(&format!("HEAD {}\nbranch refs/heads/b", "0".repeat(40))).as_bytes(), &here), Some(false));
        // Bare, or no entry for this worktree: the listing cannot tell.
        assert_eq!(head_names_a_commit(listing("bare").as_bytes(), &here), None);
        assert_eq!(head_names_a_commit(listing(&format!("HEAD {oid}")).as_bytes(), &dir.path().join("elsewhere")), None);
        let held = held_by_other_worktrees(listing(&format!("HEAD {oid}\nbranch refs/heads/b")).as_bytes(), &here);
        assert_eq!(held, HashSet::from(["a".to_string()]));
    }

    #[test]
    fn a_branch_is_answered_from_the_listed_commits_only_up_to_the_scan_bound() {
        let line = |oid: &str, parents: &str, email: &str, at: i64| format!("{oid}\0{parents}\0{email}\0{at}\0{at}\n");
        // c3 -> c2 -> c1, and m (a merge of c3 and x) with x; c1's parent is not listed.
        let out = [
            line("m", "c3 x", "o@x", 5),
            line("x", "", "me@x", 100),
            line("c3", "c2", "o@x", 5),
            line("c2", "c1", "o@x", 5),
            line("c1", "base", "ME@X", 100),
        ]
        .concat();
        let graph = CommitGraph::read(out.as_bytes(), "me@x", 100).unwrap();
        assert_eq!(graph.any_within("c3", 3), Some(true));
        assert_eq!(CommitGraph::read(out.as_bytes(), "me@x", 101).unwrap().any_within("c3", 3), Some(false));
        assert_eq!(graph.any_within("c3", 2), None, "three commits, two scanned: git's order decides");
        assert_eq!(graph.any_within("m", 5), Some(true));
        assert_eq!(graph.any_within("base", 5), Some(false), "a head in the base has no commit beyond it");
        // A line that is not UTF-8 matches nothing but still links its parents.
        let odd = [line("c3", "c2", "o@x", 5).as_bytes(), b"c2\x00c1\x00me\xff@x\x00100\x00100\n", line("c1", "", "me@x", 100).as_bytes()]
            .concat();
        assert_eq!(CommitGraph::read(&odd, "me@x", 100).unwrap().any_within("c3", 3), Some(true));
        assert_eq!(CommitGraph::read(&odd, "me@x", 100).unwrap().any_within("c3", 2), None);
        let long: String = (0..=BATCH_COMMITS_LISTED_MAX).map(|i| line(&format!("c{i}"), "", "o@x", 1)).collect();
        assert!(CommitGraph::read(long.as_bytes(), "me@x", 0).is_none());
    }

    // Against real git: the batched reads give what the per-branch ones give, in a
    // constant number of git runs.

    const GIT_ISOLATED: [(&str, &str); 2] = [("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1")];

    fn sh_in(dir: &Path, script: &str) {
        let out = std::process::Command::new("/bin/sh")
            .args(["-ec", script])
            .current_dir(dir)
            .envs(GIT_ISOLATED)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// A `git` that logs each run's arguments to `<dir>/calls` and runs the real one
    /// without global or system config; with `no_stdin`, it refuses `merge-tree --stdin`
    /// as a git older than 2.40 does.
    fn logging_git(dir: &Path, name: &str, no_stdin: bool) -> (PathBuf, PathBuf) {
        let (path, calls) = (dir.join(name), dir.join(format!("{name}.calls")));
        let refuse = if no_stdin { "case \" $* \" in *\" merge-tree \"*\" --stdin \"*) exit 129;; esac\n" } else { "" };
        let script = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\n{refuse}GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 exec git \"$@\"\n",
            calls.display()
        );
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        (path, calls)
    }

    /// The runs logged, each without abcd's global options, which every run must carry.
    fn calls(log: &Path) -> Vec<String> {
        let global = format!("{} ", run::GLOBAL_ARGS.join(" "));
        let calls = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .map(|c| c.strip_prefix(&global).unwrap_or_else(|| panic!("a git run without abcd's global options: {c}")).to_owned())
            .collect();
        std::fs::remove_file(log).ok();
        calls
    }

    const LAB: &str = r#"
        git init -q --bare -b main origin.git
        git init -q -b main wc
        cd wc
        git config user.name T
        git config user.email me@example.com
        git remote add origin ../origin.git
        c() { echo "$2" > "$1"; git add "$1"; git commit -qm "$1"; }
        other() { GIT_AUTHOR_EMAIL=other@example.com GIT_COMMITTER_EMAIL=other@example.com c "$@"; }
        old() { GIT_AUTHOR_DATE='@1000000000 +0000' GIT_COMMITTER_DATE='@1000000000 +0000' c "$@"; }
        c f.txt a
        git push -q -u origin main
        git symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/main
    "#;

    /// A working copy with one branch of every kind the reading tells apart.
    fn varied_lab(dir: &Path) -> PathBuf {
        let script = format!(
            r#"{LAB}
            git switch -q -c cr/other; other cr-other.txt x; git switch -q main
            git switch -q -c cr/pushed; c cr-pushed.txt x; git push -q -u origin cr/pushed; git switch -q main
            git switch -q -c cr/ahead; c cr-ahead.txt x; git push -q -u origin cr/ahead; c cr-ahead2.txt y; git switch -q main
            git switch -q -c cr/track origin/main; c cr-track.txt x; git push -q origin cr/track; git switch -q main
            git switch -q -c cr/track2 origin/main; c cr-track2.txt x; git switch -q main
            git switch -q -c cr/gone; c cr-gone.txt x; git push -q -u origin cr/gone; git push -q origin :cr/gone; git switch -q main
            git switch -q -c cr/merged; c cr-merged.txt x; git switch -q main; git merge -q --no-ff --no-edit cr/merged; git push -q
            git switch -q -c cr/squashed; c sq1.txt x; c sq2.txt y; git switch -q main
            git merge -q --squash cr/squashed; git commit -qm squashed; git push -q
            for b in cr/picked cr/clash; do git switch -q -c $b main; echo $b > f.txt; git commit -qam $b; done
            git switch -q main; c g.txt g; git cherry-pick cr/picked >/dev/null; echo moved > f.txt; git commit -qam moved; git push -q
            git switch -q -c co/mine; c co-mine.txt x; git switch -q main
            git switch -q -c co/mine-child; c co-mine-child.txt x; git switch -q co/mine; git switch -q main
            git switch -q -c co/theirs; other co-theirs.txt x; git switch -q main
            git switch -q -c co/old; old co-old.txt x; git switch -q main
            git switch -q -c co/empty; git switch -q main
            git switch -q -c co/theirs-on-mine co/mine; other co-tom.txt x; git switch -q main
            git switch -q -c co/landed; c co-landed.txt x; git switch -q main; git merge -q --no-edit co/landed; git push -q
            git switch -q -c co/pushed; c co-pushed.txt x; git push -q origin co/pushed; git switch -q main
            git worktree add -q -b wt/held ../wt2; (cd ../wt2 && c wt.txt x)
            c main-moves.txt x; git push -q
            git switch -q -c cr/fresh; c cr-fresh.txt x; git switch -q main
            git switch -q -c co/fresh; c co-fresh.txt x; git switch -q main
            now=$(date +%s)
            for n in 999 1000; do
                {{ printf 'commit refs/heads/co/deep%s\ncommitter Me <me@example.com> %s +0000\ndata 2\nme\nfrom refs/heads/main\nM 100644 inline deep%s.txt\ndata 5\nmine\n\n' $n $now $n
                  i=0; while [ $i -lt $n ]; do
                    printf 'commit refs/heads/co/deep%s\ncommitter O <other@example.com> %s +0000\ndata 1\no\n\n' $n $now; i=$((i+1)); done
                }} | git fast-import --quiet
                git switch -q co/deep$n; git switch -q main
            done
        "#
        );
        sh_in(dir, &script);
        dir.join("wc")
    }

    fn query<'a>(root: &'a Path, created: &'a [String], away: Option<&'a AwayQuery<'a>>) -> BranchQuery<'a> {
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        BranchQuery { root, created_here: created, now: crate::clock::wall_now(), deadline, away, own_only: false, tier: None }
    }

    fn unpushed_of(r: &BranchReading) -> Vec<(String, bool)> {
        r.items
            .iter()
            .filter_map(|i| match i {
                Owed::Unpushed { branch, next_act_is_push } => Some((branch.clone(), *next_act_is_push)),
                _ => None,
            })
            .collect()
    }

    /// Reads batched (with `batched_git`) and per branch, and checks they agree.
    fn read_both(q: &BranchQuery<'_>, batched_git: &Path, per_branch_git: &Path) -> BranchReading {
        let batched = read_with(q, batched_git.as_os_str(), Reads::Batched);
        let per_branch = read_with(q, per_branch_git.as_os_str(), Reads::PerBranch);
        assert_eq!(batched.items, per_branch.items);
        assert_eq!(batched.handed_back, per_branch.handed_back);
        assert_eq!(batched.notes, per_branch.notes);
        assert!(!batched.incomplete && !per_branch.incomplete);
        batched
    }

    /// Sequences of repository changes the kept-answers property runs (more with
    /// `ABCD_GIT_ANSWERS_CASES`); each runs every change of [`REPOSITORY_CHANGES`] once, in
    /// an order of its own, then [`GIT_ANSWERS_EXTRA_STEPS`] more picked at random.
    fn git_answers_cases() -> u64 {
        std::env::var("ABCD_GIT_ANSWERS_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3)
    }
    const GIT_ANSWERS_EXTRA_STEPS: u64 = 4;
    const REPOSITORY_CHANGES: u64 = 16;

    /// Change `pick` of those a session, the person or a colleague makes, as a shell step
    /// in `wc` (LAB's `c` and `other` defined, `../peer` a clone of the same origin); `n`
    /// makes names fresh. Most change one kind of file alone (a ref, a reflog, the config).
    fn repository_change(pick: u64, n: u64) -> String {
        let some = |list: &str| {
            format!(
                "b=$(git for-each-ref --format='%(refname:short)' {list} | sed -n \"$(( {n} % $(git for-each-ref {list} | wc -l | tr -d ' ') + 1 ))p\")"
            )
        };
        match pick % REPOSITORY_CHANGES {
            0 => format!("git switch -q -c b{n} main; c b{n}.txt x"),
            1 => format!("c f{n}.txt {n}"),
            2 => format!("other o{n}.txt {n}"),
            3 => "git push -q -u origin HEAD 2>/dev/null || true".into(),
            4 => format!("{}; git switch -q \"$b\" 2>/dev/null || true", some("refs/heads/")),
            5 => "if [ \"$(git config user.email)\" = me@example.com ]; then git config user.email other@example.com; else git config user.email me@example.com; fi".into(),
            6 => format!("git worktree add -q -b w{n} ../w{n}; (cd ../w{n} && c w{n}.txt x)"),
            7 => "cur=$(git branch --show-current); [ \"$cur\" != main ] && [ -n \"$cur\" ] && git switch -q main && git merge -q --no-edit \"$cur\" && git push -q && git switch -q \"$cur\" || true".into(),
            8 => "git pack-refs --all".into(),
            9 => format!("{}; [ \"$b\" != \"$(git branch --show-current)\" ] && [ \"$b\" != main ] && git branch -q -D \"$b\" 2>/dev/null || true", some("refs/heads/")),
            // A colleague's work reaches origin, and a fetch brings it: remote refs alone.
            10 => format!("(cd ../peer && git pull -q --no-rebase && other p{n}.txt x && git push -q origin HEAD:main); git fetch -q origin"),
            11 => format!("git commit -q --amend -m amended{n} 2>/dev/null || true"),
            // A branch pushed without switching to it: one remote-tracking ref changes.
            12 => format!("{}; git push -q origin \"$b\" 2>/dev/null || true", some("refs/heads/")),
            // A branch made by plumbing, where no reflog of HEAD shows it.
            13 => format!("git update-ref refs/heads/b{n} HEAD"),
            // HEAD pointed elsewhere by plumbing: HEAD alone changes, no reflog line.
            14 => format!("{}; git symbolic-ref HEAD \"refs/heads/$b\"", some("refs/heads/")),
            _ => ":".into(),
        }
    }

    /// Issue 37 acceptance 3: through random sequences of branch creations, commits (own,
    /// another's, amended), pushes to a bare remote, checkouts the reflog shows, config
    /// changes, worktree adds, merges, packed refs, deletions and fetches, the reading a
    /// hook takes (kept answers where the files are unchanged) equals git's reading at
    /// every step, own-only and whole, present and away.
    #[test]
    fn kept_answers_equal_gits_answers_through_random_repository_changes() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let hits_before = super::git_answers::HITS.with(|h| h.get());
        for case in 0..git_answers_cases() {
            let dir = tempfile::tempdir().unwrap();
            // `mine` is own only for its recent commit of this checkout's (checked out, not
            // created here), so the config's user.email decides it.
            sh_in(
                dir.path(),
                &format!(
                    "{LAB}\ngit switch -q -c mine; c mine.txt x\ncd ..; git clone -q origin.git peer; cd peer; git config user.email other@example.com"
                ),
            );
            let wc = dir.path().join("wc");
            let tier = dir.path().join("tier");
            std::fs::create_dir(&tier).unwrap();
            let mut order: Vec<u64> = (0..REPOSITORY_CHANGES).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            order.extend((0..GIT_ANSWERS_EXTRA_STEPS).map(|_| next()));
            // Branches this copy "created": every other name the steps make.
            let created: Vec<String> = (0..order.len() as u64).filter(|s| s % 2 == 0).map(|s| format!("b{}", case * 100 + s)).collect();
            let queued = vec![format!("push b{}", case * 100)];
            let away = AwayQuery { hold_pushes: true, queued: &queued };
            let mut done = Vec::new();
            for (step, pick) in order.into_iter().enumerate() {
                let change = repository_change(pick, case * 100 + step as u64);
                let defs = "c() { echo \"$2\" > \"$1\"; git add \"$1\"; git commit -qm \"$1\"; }\n\
                            other() { GIT_AUTHOR_EMAIL=other@example.com GIT_COMMITTER_EMAIL=other@example.com c \"$@\"; }\n";
                sh_in(&wc, &format!("{defs}{change}"));
                done.push(change);
                for (own_only, away) in [(true, None), (false, None), (false, Some(&away))] {
                    let q = |tier| BranchQuery { own_only, tier, ..query(&wc, &created, away) };
                    let by_git = read(&q(None));
                    // Twice: the first may ask git and keep, the second takes what was kept.
                    for _ in 0..2 {
                        let kept = read(&q(Some(&tier)));
                        let what = format!("case {case}, own_only {own_only}, away {}, after {done:#?}", away.is_some());
                        assert_eq!(kept.own, by_git.own, "{what}");
                        assert_eq!(kept.items, by_git.items, "{what}");
                        assert_eq!(kept.handed_back, by_git.handed_back, "{what}");
                        assert_eq!((kept.incomplete, &kept.notes), (by_git.incomplete, &by_git.notes), "{what}");
                    }
                }
            }
        }
        assert!(super::git_answers::HITS.with(|h| h.get()) > hits_before, "the kept route was taken");
    }

    #[test]
    fn batched_reads_answer_as_the_per_branch_reads_do() {
        let dir = tempfile::tempdir().unwrap();
        let wc = varied_lab(dir.path());
        let (git, log) = logging_git(dir.path(), "git", false);
        let (old_git, old_log) = logging_git(dir.path(), "git-no-stdin", true);
        let (per_git, _) = logging_git(dir.path(), "git-per-branch", false);
        let created: Vec<String> = [
            "cr/other",
            "cr/pushed",
            "cr/ahead",
            "cr/track",
            "cr/track2",
            "cr/gone",
            "cr/merged",
            "cr/squashed",
            "cr/picked",
            "cr/clash",
            "cr/fresh",
            "cr/never-made",
            "wt/held",
            "main",
            "co/theirs",
        ]
        .map(String::from)
        .to_vec();
        let queued = vec!["push cr/fresh".to_string(), "push co/fresh and cr/other".to_string()];
        let hold = AwayQuery { hold_pushes: true, queued: &queued };
        let expected_items = [
            ("cr/other", false),
            ("cr/ahead", false),
            ("cr/track2", false),
            ("co/theirs", false),
            ("co/mine-child", false),
            ("co/mine", false),
            ("co/theirs-on-mine", false),
            ("cr/gone", false),
            ("co/deep999", true),
            // Created here and cut into another worktree: still this copy's (seed 003).
            ("wt/held", false),
        ];
        for away in [None, Some(&hold)] {
            let q = query(&wc, &created, away);
            let reading = read_both(&q, &git, &per_git);
            let mut expected: Vec<(String, bool)> = expected_items.iter().map(|(b, p)| (b.to_string(), *p)).collect();
            let fresh = [("cr/fresh".to_string(), true), ("co/fresh".to_string(), true)];
            if away.is_none() {
                expected.extend(fresh.clone());
            } else {
                let handed: Vec<&str> = reading.handed_back.iter().map(|h| h.branch.as_str()).collect();
                assert_eq!(handed, ["cr/fresh", "co/fresh"]);
            }
            let mut got = unpushed_of(&reading);
            got.sort();
            expected.sort();
            assert_eq!(got, expected);
            // Own, owed or not: a pushed branch checked out here with a recent commit of this
            // checkout's is own; an old, empty, never-made or default one is not.
            let own: Vec<&str> = reading.own.iter().map(|b| b.name.as_str()).collect();
            for b in ["co/pushed", "cr/pushed", "wt/held", "co/mine", "cr/clash"] {
                assert!(own.contains(&b), "{b} not own: {own:?}");
            }
            for b in ["co/old", "co/empty", "co/landed", "cr/never-made", "main"] {
                assert!(!own.contains(&b), "{b} own: {own:?}");
            }
            // cr/clash conflicts with a patch not upstream: a note, not an item.
            assert_eq!(reading.notes.len(), 1, "{:?}", reading.notes);
            assert!(
                reading.notes[0].starts_with("branch cr/clash was not judged: its merge with the default branch conflicts"),
                "{:?}",
                reading.notes
            );
            let batched_calls = calls(&log);
            // A git without `merge-tree --stdin` answers the same, merging one by one.
            let old = read_with(&q, old_git.as_os_str(), Reads::Batched);
            assert_eq!(
                (old.items, old.handed_back, old.notes),
                (reading.items.clone(), reading.handed_back.clone(), reading.notes.clone())
            );
            let old_calls = calls(&old_log);
            let merges = |calls: &[String]| calls.iter().filter(|c| c.starts_with("merge-tree")).count();
            assert_eq!(merges(&batched_calls), 1, "{batched_calls:#?}");
            assert!(merges(&old_calls) > 2, "{old_calls:#?}");
            // The branch with more own-scanned commits than the bound is read alone.
            let logs: Vec<&String> = batched_calls.iter().filter(|c| c.starts_with("log")).collect();
            assert_eq!(logs.len(), 2, "{logs:#?}");
            assert!(logs[1].contains("refs/heads/co/deep1000"), "{logs:#?}");
        }
    }

    #[test]
    fn the_own_only_reading_finds_the_same_own_branches_with_no_upstream_or_landing_reads() {
        let dir = tempfile::tempdir().unwrap();
        let wc = varied_lab(dir.path());
        let (git, log) = logging_git(dir.path(), "git", false);
        let created: Vec<String> = ["cr/pushed", "cr/fresh", "cr/never-made", "wt/held", "main"].map(String::from).to_vec();
        let full = read_with(&query(&wc, &created, None), git.as_os_str(), Reads::Batched);
        calls(&log);
        let own_only = BranchQuery { own_only: true, ..query(&wc, &created, None) };
        let only = read_with(&own_only, git.as_os_str(), Reads::Batched);
        let names = |r: &BranchReading| r.own.iter().map(|b| b.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&only), names(&full));
        assert!(names(&only).contains(&"co/pushed".to_string()) && names(&only).contains(&"wt/held".to_string()), "{:?}", names(&only));
        assert!(only.items.is_empty() && only.notes.is_empty() && !only.incomplete, "{only:?}");
        // Every own branch's head time comes from the one ref listing.
        assert!(only.own.iter().all(|b| b.committed_at.is_some()), "{:?}", only.own);
        let runs = calls(&log);
        assert!(
            !runs
                .iter()
                .any(|c| c.starts_with("rev-list") || c.starts_with("merge-tree") || c.contains("upstream") || c.contains("--contains")),
            "{runs:#?}"
        );
    }

    #[test]
    fn listings_past_their_bound_leave_the_branches_they_cannot_answer_to_be_read_alone() {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            r#"{LAB}
            git switch -q -c cr/pushed; c cr-pushed.txt x; git push -q origin cr/pushed; git switch -q main
            git switch -q -c cr/small; c cr-small.txt x; git switch -q main
            git switch -q -c co/mine; c co-mine.txt x; git switch -q main
            now=$(date +%s)
            {{ printf 'commit refs/heads/co/huge\ncommitter O <other@example.com> %s +0000\ndata 1\no\nfrom refs/heads/main\nM 100644 inline huge.txt\ndata 5\nhuge\n\n' $now
              i=0; while [ $i -lt {BATCH_COMMITS_LISTED_MAX} ]; do
                printf 'commit refs/heads/co/huge\ncommitter O <other@example.com> %s +0000\ndata 1\no\n\n' $now; i=$((i+1)); done
            }} | git fast-import --quiet
            git switch -q co/huge; git switch -q main
        "#
        );
        sh_in(dir.path(), &script);
        let wc = dir.path().join("wc");
        let (git, log) = logging_git(dir.path(), "git", false);
        let (per_git, _) = logging_git(dir.path(), "git-per-branch", false);
        let created = vec!["cr/pushed".to_string(), "cr/small".to_string()];
        let reading = read_both(&query(&wc, &created, None), &git, &per_git);
        let mut got = unpushed_of(&reading);
        got.sort();
        assert_eq!(got, [("co/mine".to_string(), true), ("cr/small".to_string(), true)]);
        let calls = calls(&log);
        let alone = |prefix: &str| calls.iter().filter(|c| c.starts_with(prefix)).count();
        // cr/pushed's head is in no listing cut at its bound: it is asked about alone.
        assert!(calls.iter().any(|c| c == "rev-list -n1 refs/heads/cr/pushed --not --remotes --"), "{calls:#?}");
        assert_eq!(alone("rev-list -n10001"), 1);
        // Past the bound, the batched log answers no branch: both checked-out ones are
        // scanned alone.
        assert_eq!(alone("log -n10001"), 1);
        assert_eq!(alone("log -n1000 "), 2, "{calls:#?}");
    }

    /// `count` branches b000… checked out here (named in the reflog) or created here, every
    /// other one, each with one commit of its own beyond main.
    fn many_lab(dir: &Path, count: usize) -> (PathBuf, Vec<String>) {
        let script = format!(
            r#"{LAB}
            i=0
            while [ $i -lt {count} ]; do
                b=$(printf 'b%03d' $i)
                git switch -q -c $b main; c $b.txt $b; git switch -q main
                if [ $((i % 5)) = 0 ]; then git push -q origin $b; fi
                i=$((i+1))
            done
        "#
        );
        sh_in(dir, &script);
        let created = (0..count).filter(|i| i % 2 == 0).map(|i| format!("b{i:03}")).collect();
        (dir.join("wc"), created)
    }

    #[test]
    fn the_git_runs_do_not_grow_with_the_branches_examined() {
        let dir = tempfile::tempdir().unwrap();
        let (git, log) = logging_git(dir.path(), "git", false);
        let mut runs = Vec::new();
        for count in [10, 40] {
            let lab = dir.path().join(format!("lab{count}"));
            std::fs::create_dir_all(&lab).unwrap();
            let (wc, created) = many_lab(&lab, count);
            let q = query(&wc, &created, None);
            let reading = read_both(&q, &git, &git);
            calls(&log);
            // Every fifth is pushed; the rest are owed.
            assert_eq!(reading.items.len(), count - count / 5, "{:?}", reading.items);
            read_with(&q, git.as_os_str(), Reads::Batched);
            let batched = calls(&log);
            read_with(&q, git.as_os_str(), Reads::PerBranch);
            let per_branch = calls(&log);
            runs.push((batched, per_branch.len()));
        }
        let (at_10, at_40) = (&runs[0].0, &runs[1].0);
        assert_eq!(at_10.len(), at_40.len(), "{at_10:#?}\n{at_40:#?}");
        // worktree, config, for-each-ref, reflog, for-each-ref (upstreams), rev-list,
        // merge-tree, log, for-each-ref --contains.
        assert_eq!(at_40.len(), 9, "{at_40:#?}");
        assert!(runs[1].1 > 2 * 40, "per branch: {} runs", runs[1].1);
    }
}
