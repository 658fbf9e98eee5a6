//! The owed-work reader against real git repositories (SPEC §6, issue 6 acceptance item 3).
//! Each test has its own working copy with a local bare repository as `origin`, so push and
//! fetch stay offline, and a stub `gh` written into its temp dir stands in for the forge.

use crate::common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use abcd::checklist::item::{ItemFields, ItemState};
use abcd::fold::checklist::Item;
use abcd::owed::{
    AwayQuery, BRANCHES_EXAMINED_MAX, CHILD_OUTPUT_MAX, FORGE_DEADLINE, HandBack, OWED_BUDGET, OWN_COMMITS_SCANNED_MAX, OwedQuery,
    OwedReading, RECENT_OWN_COMMIT, REFLOG_ENTRIES_MAX, read_owed,
};
use abcd::verdict::stop::{Owed, PrWhy};
use common::repo;
use jiff::Timestamp;

const ME: &str = "me@example.com";
const OTHER: &str = "other@example.com";

/// One home store and no global or system git config for the whole binary, set before
/// any test starts a child (every test calls this first; the `OnceLock` makes the others
/// wait until it is done).
fn setup() {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| {
        let home = tempfile::tempdir().unwrap();
        // SAFETY: done once, before this binary's tests start any child or read these
        // variables; other tests block on the OnceLock until it returns.
        unsafe {
            std::env::set_var("ABCD_HOME", home.path());
            std::env::set_var("GIT_CONFIG_GLOBAL", "/dev/null");
            std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        }
        home
    });
}

fn git_in(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> String {
    repo::git_with(dir, args, envs).trim().to_string()
}

fn git(dir: &Path, args: &[&str]) -> String {
    git_in(dir, args, &[])
}

struct Lab {
    dir: tempfile::TempDir,
    /// The working copy read.
    wc: PathBuf,
    origin: PathBuf,
}

impl Lab {
    /// A working copy on `main` with one pushed commit, `origin/HEAD` set.
    fn new() -> Lab {
        setup();
        let dir = tempfile::tempdir().unwrap();
        let origin = dir.path().join("origin.git");
        let wc = dir.path().join("wc");
        git(dir.path(), &["init", "-q", "--bare", "-b", "main", origin.to_str().unwrap()]);
        repo::init(&wc);
        configure(&wc, ME);
        git(&wc, &["remote", "add", "origin", origin.to_str().unwrap()]);
        let lab = Lab { dir, wc, origin };
        lab.commit(&lab.wc, "README", "hello\n", "first");
        git(&lab.wc, &["push", "-q", "-u", "origin", "main"]);
        git(&lab.wc, &["symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"]);
        lab
    }

    /// Another clone of origin, as a second person's checkout.
    fn other_clone(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        git(self.dir.path(), &["clone", "-q", self.origin.to_str().unwrap(), path.to_str().unwrap()]);
        configure(&path, OTHER);
        path
    }

    fn commit(&self, dir: &Path, file: &str, text: &str, message: &str) -> String {
        std::fs::write(dir.join(file), text).unwrap();
        git(dir, &["add", file]);
        git(dir, &["commit", "-q", "-m", message]);
        git(dir, &["rev-parse", "HEAD"])
    }

    fn commit_as(&self, dir: &Path, email: &str, when: Option<(i64, i64)>, file: &str, text: &str) -> String {
        std::fs::write(dir.join(file), text).unwrap();
        git(dir, &["add", file]);
        let dates = when.map(|(at, ct)| (format!("@{at} +0000"), format!("@{ct} +0000")));
        let mut envs = vec![("GIT_AUTHOR_EMAIL", email), ("GIT_COMMITTER_EMAIL", email)];
        if let Some((at, ct)) = &dates {
            envs.push(("GIT_AUTHOR_DATE", at));
            envs.push(("GIT_COMMITTER_DATE", ct));
        }
        git_in(dir, &["commit", "-q", "-m", file], &envs);
        git(dir, &["rev-parse", "HEAD"])
    }

    fn stub_gh(&self, body: &str) -> Stub {
        Stub::new(self.dir.path(), body)
    }
}

fn configure(repo: &Path, email: &str) {
    git(repo, &["config", "user.name", "Test Person"]);
    git(repo, &["config", "user.email", email]);
}

/// A `gh` stand-in: a shell script that appends its arguments and directory to `calls`
/// on every run, then runs `body`.
struct Stub {
    path: PathBuf,
    calls: PathBuf,
    dir: PathBuf,
}

impl Stub {
    fn new(parent: &Path, body: &str) -> Stub {
        let dir = parent.join(format!("bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gh");
        let calls = dir.join("calls");
        let script = format!("#!/bin/sh\nprintf '%s|%s\\n' \"$*\" \"$(pwd)\" >> '{}'\n{body}\n", calls.display());
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Stub { path, calls, dir }
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.calls).unwrap_or_default().lines().map(str::to_owned).collect()
    }
}

struct Ask<'a> {
    created: Vec<String>,
    away: Option<AwayQuery<'a>>,
    gh: Option<&'a Path>,
    now: Timestamp,
    started: Instant,
    checklist: Vec<Item>,
}

impl<'a> Ask<'a> {
    fn new() -> Ask<'a> {
        Ask { created: vec![], away: None, gh: None, now: abcd::clock::wall_now(), started: Instant::now(), checklist: vec![] }
    }

    fn created(mut self, names: &[&str]) -> Self {
        self.created = names.iter().map(|s| s.to_string()).collect();
        self
    }

    fn away(mut self, away: AwayQuery<'a>, gh: Option<&'a Path>) -> Self {
        self.away = Some(away);
        self.gh = gh;
        self
    }

    fn read(&self, root: &Path) -> OwedReading {
        read_owed(&OwedQuery {
            root,
            checklist: &self.checklist,
            created_here: &self.created,
            away: self.away,
            now: self.now,
            started: self.started,
            gh: self.gh,
            listing_cache: None,
        })
    }
}

fn unpushed(reading: &OwedReading) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = reading
        .items
        .iter()
        .filter_map(|i| match i {
            Owed::Unpushed { branch, next_act_is_push } => Some((branch.clone(), *next_act_is_push)),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

fn branches(reading: &OwedReading) -> Vec<String> {
    unpushed(reading).into_iter().map(|(b, _)| b).collect()
}

fn pull_requests(reading: &OwedReading) -> Vec<Owed> {
    reading.items.iter().filter(|i| matches!(i, Owed::PullRequest { .. })).cloned().collect()
}

fn away(hold_pushes: bool, queued: &[String]) -> AwayQuery<'_> {
    AwayQuery { hold_pushes, queued }
}

/// A branch `name` cut from main in `lab.wc` with one commit by `email`, main checked
/// out again afterwards (so `name` is in this copy's reflog).
fn branch_with_commit(lab: &Lab, name: &str, email: &str) -> String {
    git(&lab.wc, &["switch", "-q", "-c", name, "main"]);
    let head = lab.commit_as(&lab.wc, email, None, &format!("{}.txt", name.replace('/', "-")), "work\n");
    git(&lab.wc, &["switch", "-q", "main"]);
    head
}

// 1. Created here.

#[test]
fn a_branch_created_here_with_an_unpushed_commit_is_owed() {
    let lab = Lab::new();
    // Another email's commit, so the reflog route alone would not make it own.
    branch_with_commit(&lab, "feat/new", OTHER);
    let reading = Ask::new().created(&["feat/new", "feat/never-made"]).read(&lab.wc);
    assert_eq!(unpushed(&reading), [("feat/new".to_string(), true)]);
    assert!(reading.notes.is_empty(), "{:?}", reading.notes);
    assert!(!reading.incomplete && !reading.forge_called);
    // Not recorded as created, and holding none of this checkout's commits: not own.
    assert!(branches(&Ask::new().read(&lab.wc)).is_empty());
}

#[test]
fn a_branch_with_an_upstream_is_owed_only_while_ahead_of_it() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/up", ME);
    git(&lab.wc, &["push", "-q", "-u", "origin", "feat/up"]);
    let ask = Ask::new().created(&["feat/up"]);
    assert!(branches(&ask.read(&lab.wc)).is_empty(), "pushed in full");
    git(&lab.wc, &["switch", "-q", "feat/up"]);
    lab.commit(&lab.wc, "more.txt", "more\n", "more");
    assert_eq!(unpushed(&ask.read(&lab.wc)), [("feat/up".to_string(), true)]);
    git(&lab.wc, &["push", "-q"]);
    assert!(branches(&ask.read(&lab.wc)).is_empty());
}

// 2. Squash-merged, upstream gone.

#[test]
fn a_squash_merged_branch_whose_upstream_is_gone_is_not_owed() {
    let lab = Lab::new();
    git(&lab.wc, &["switch", "-q", "-c", "feat/sq"]);
    lab.commit(&lab.wc, "a.txt", "a\n", "a");
    lab.commit(&lab.wc, "b.txt", "b\n", "b");
    git(&lab.wc, &["push", "-q", "-u", "origin", "feat/sq"]);
    git(&lab.wc, &["switch", "-q", "main"]);
    let ask = Ask::new().created(&["feat/sq"]);
    assert!(branches(&ask.read(&lab.wc)).is_empty(), "pushed");

    // The forge squash-merges it into main and deletes the branch.
    let other = lab.other_clone("forge");
    git(&other, &["merge", "-q", "--squash", "origin/feat/sq"]);
    git(&other, &["commit", "-q", "-m", "feat/sq (squashed)"]);
    git(&other, &["push", "-q", "origin", "main", ":feat/sq"]);
    git(&lab.wc, &["fetch", "-q", "--prune"]);
    assert!(git(&lab.wc, &["for-each-ref", "--format=%(upstream:track)", "refs/heads/feat/sq"]).contains("gone"));
    let reading = ask.read(&lab.wc);
    assert!(branches(&reading).is_empty(), "landed by squash: {:?}", reading.items);
    assert!(reading.notes.is_empty(), "{:?}", reading.notes);

    // A commit made on it after the merge is not on the default branch: owed again.
    git(&lab.wc, &["switch", "-q", "feat/sq"]);
    lab.commit(&lab.wc, "c.txt", "c\n", "c");
    git(&lab.wc, &["switch", "-q", "main"]);
    assert_eq!(unpushed(&ask.read(&lab.wc)), [("feat/sq".to_string(), false)], "main moved on: merging comes first");
}

#[test]
fn a_conflicting_branch_is_landed_only_when_git_cherry_finds_every_commit_upstream() {
    let lab = Lab::new();
    lab.commit(&lab.wc, "f.txt", "a\n", "f");
    git(&lab.wc, &["push", "-q"]);
    // Two branches change f the same way; one's patch is then picked onto main.
    for name in ["feat/picked", "feat/mine"] {
        git(&lab.wc, &["switch", "-q", "-c", name, "main"]);
        std::fs::write(lab.wc.join("f.txt"), if name == "feat/picked" { "b\n" } else { "mine\n" }).unwrap();
        git(&lab.wc, &["commit", "-q", "-am", name]);
    }
    git(&lab.wc, &["switch", "-q", "main"]);
    // main moves first, so the pick is a new commit rather than feat/picked's own.
    lab.commit(&lab.wc, "g.txt", "g\n", "g");
    git(&lab.wc, &["cherry-pick", "feat/picked"]);
    std::fs::write(lab.wc.join("f.txt"), "c\n").unwrap();
    git(&lab.wc, &["commit", "-q", "-am", "main moves on"]);
    git(&lab.wc, &["push", "-q"]);
    // Both merges into main now conflict; only feat/picked's patch is upstream.
    for name in ["feat/picked", "feat/mine"] {
        let out = Command::new("git").args(["merge-tree", "--write-tree", "main", name]).current_dir(&lab.wc).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "merging {name} conflicts");
    }
    let reading = Ask::new().created(&["feat/picked", "feat/mine"]).read(&lab.wc);
    // feat/picked is landed; feat/mine cannot be told from a squash merge the base moved
    // on from, so it is a note, not an item (seed 003), and never blocks a stop forever.
    assert_eq!(unpushed(&reading), []);
    assert!(
        reading.notes.iter().any(|n| n.starts_with("branch feat/mine was not judged: its merge with the default branch conflicts")),
        "{:?}",
        reading.notes
    );
    assert!(!reading.notes.iter().any(|n| n.contains("feat/picked")), "{:?}", reading.notes);
}

// 3. Held by another worktree.

#[test]
fn a_branch_cut_into_another_worktree_is_owed_by_the_copy_that_cut_it() {
    let lab = Lab::new();
    let wt = lab.dir.path().join("wt2");
    git(&lab.wc, &["worktree", "add", "-q", "-b", "feat/wt", wt.to_str().unwrap()]);
    lab.commit(&wt, "wt.txt", "wt\n", "in the worktree");
    // Recorded as created here (the pre-tool-use hook saw `git worktree add -b`): this
    // copy's, though another worktree holds it (seed 003's stacked drain branches).
    let ask = Ask::new().created(&["feat/wt"]);
    assert_eq!(branches(&ask.read(&lab.wc)), ["feat/wt"]);
    assert_eq!(ask.read(&lab.wc).own.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(), ["feat/wt"]);
    // Read from the worktree that holds it (checked out there with a recent commit of this
    // checkout's), it is that copy's too.
    assert_eq!(branches(&Ask::new().read(&wt)), ["feat/wt"]);
    // Once no worktree holds it, it is still owed here.
    git(&lab.wc, &["worktree", "remove", wt.to_str().unwrap()]);
    assert_eq!(branches(&ask.read(&lab.wc)), ["feat/wt"]);
}

#[test]
fn a_branch_only_checked_out_here_is_not_own_while_another_worktree_holds_it() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/visit", ME);
    // Checked out here once (in this copy's reflog), with a recent commit of this checkout's.
    assert_eq!(branches(&Ask::new().read(&lab.wc)), ["feat/visit"]);
    let wt = lab.dir.path().join("wt3");
    git(&lab.wc, &["worktree", "add", "-q", wt.to_str().unwrap(), "feat/visit"]);
    let reading = Ask::new().read(&lab.wc);
    assert!(branches(&reading).is_empty() && reading.own.is_empty(), "{:?}", reading);
    assert_eq!(branches(&Ask::new().read(&wt)), ["feat/visit"]);
}

// 4. The default branch.

#[test]
fn the_default_branch_is_never_owed_even_with_unpushed_commits() {
    let lab = Lab::new();
    lab.commit(&lab.wc, "local.txt", "local\n", "not pushed");
    let reading = Ask::new().created(&["main"]).read(&lab.wc);
    assert!(branches(&reading).is_empty(), "{:?}", reading.items);

    // origin/HEAD names the default even when it is not called main.
    git(&lab.wc, &["switch", "-q", "-c", "trunk"]);
    git(&lab.wc, &["push", "-q", "-u", "origin", "trunk"]);
    git(&lab.wc, &["symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk"]);
    lab.commit(&lab.wc, "trunk.txt", "t\n", "on trunk, not pushed");
    let reading = Ask::new().created(&["main", "trunk"]).read(&lab.wc);
    assert_eq!(branches(&reading), ["main"], "trunk is the default now, main is not");
}

#[test]
fn without_a_remote_the_local_default_is_the_base() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    let wc = dir.path().join("wc");
    git(dir.path(), &["init", "-q", "-b", "master", wc.to_str().unwrap()]);
    configure(&wc, ME);
    let lab = Lab { wc: wc.clone(), origin: dir.path().join("none"), dir };
    lab.commit(&wc, "README", "x\n", "first");
    git(&wc, &["switch", "-q", "-c", "feat/local"]);
    lab.commit(&wc, "f.txt", "f\n", "work");
    git(&wc, &["switch", "-q", "master"]);
    let reading = Ask::new().created(&["master", "feat/local"]).read(&wc);
    assert_eq!(unpushed(&reading), [("feat/local".to_string(), true)]);
    lab.commit(&wc, "m.txt", "m\n", "master moves");
    assert_eq!(unpushed(&Ask::new().created(&["feat/local"]).read(&wc)), [("feat/local".to_string(), false)]);
    // Merged into master: landed, although it never had an upstream.
    git(&wc, &["merge", "-q", "--no-edit", "feat/local"]);
    assert!(branches(&Ask::new().created(&["feat/local"]).read(&wc)).is_empty());
}

#[test]
fn without_origin_head_origins_main_is_the_default_and_its_tip_the_base() {
    let lab = Lab::new();
    git(&lab.wc, &["symbolic-ref", "-d", "refs/remotes/origin/HEAD"]);
    git(&lab.wc, &["switch", "-q", "-c", "feat/a"]);
    lab.commit(&lab.wc, "a.txt", "a\n", "a");
    let other = lab.other_clone("forge");
    lab.commit(&other, "new.txt", "new\n", "main moves");
    git(&other, &["push", "-q", "origin", "main"]);
    git(&lab.wc, &["fetch", "-q"]);
    // Judged against origin/main, not the stale local main: it lacks main's new tip, so
    // merging comes first.
    let ask = Ask::new().created(&["feat/a"]);
    assert_eq!(unpushed(&ask.read(&lab.wc)), [("feat/a".to_string(), false)]);
    // With no local main at all, origin's still names the default.
    git(&lab.wc, &["branch", "-q", "-D", "main"]);
    assert_eq!(unpushed(&ask.read(&lab.wc)), [("feat/a".to_string(), false)]);
}

#[test]
fn a_branch_tracking_the_default_branch_is_judged_as_one_without_an_upstream() {
    let lab = Lab::new();
    // Cut from origin/main, it tracks origin/main (git's default branch.autoSetupMerge).
    git(&lab.wc, &["switch", "-q", "-c", "feat/track", "origin/main"]);
    assert_eq!(git(&lab.wc, &["for-each-ref", "--format=%(upstream)", "refs/heads/feat/track"]), "refs/remotes/origin/main");
    lab.commit(&lab.wc, "t.txt", "t\n", "t");
    git(&lab.wc, &["switch", "-q", "main"]);
    let ask = Ask::new().created(&["feat/track"]);
    assert_eq!(unpushed(&ask.read(&lab.wc)), [("feat/track".to_string(), true)]);
    // Pushed under its own name without -u: every commit is in a remote-tracking ref.
    git(&lab.wc, &["push", "-q", "origin", "feat/track"]);
    assert!(branches(&ask.read(&lab.wc)).is_empty());
}

// 5. A hung forge.

fn alive(pid: u32) -> bool {
    // A zombie nobody has reaped yet is dead for this purpose.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
}

#[test]
fn a_hung_forge_listing_is_cut_at_ten_seconds_and_the_disk_items_stand() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/disk", ME);
    let pids = lab.dir.path().join("pids");
    let stub = lab.stub_gh(&format!("echo $$ >> '{0}'\nsleep 60 &\necho $! >> '{0}'\nwait", pids.display()));
    let queued = vec![];
    let ask = Ask::new().created(&["feat/disk"]).away(away(false, &queued), Some(&stub.path));
    let started = Instant::now();
    let reading = ask.read(&lab.wc);
    let took = started.elapsed();
    // Cut at the deadline, not after the stub's 60 s (the upper bound leaves room for a
    // loaded machine; load adds time, it never takes it away).
    assert!(took >= FORGE_DEADLINE && took < FORGE_DEADLINE + Duration::from_secs(20), "took {took:?}");
    assert!(reading.forge_called);
    assert_eq!(reading.notes, ["the forge listing was cut at 10 s; decided from disk"]);
    assert!(!reading.incomplete, "the listing's own deadline is not the budget");
    assert_eq!(unpushed(&reading), [("feat/disk".to_string(), true)]);
    assert!(pull_requests(&reading).is_empty());
    assert_eq!(stub.calls().len(), 1);
    let pids: Vec<u32> = std::fs::read_to_string(&pids).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(pids.len(), 2);
    let gone = (0..100).any(|_| {
        let any = pids.iter().any(|&p| alive(p));
        if any {
            std::thread::sleep(Duration::from_millis(20));
        }
        !any
    });
    assert!(gone, "the stub or its sleep survived");
    eprintln!("hung forge: read_owed took {took:?}");
}

#[test]
fn a_forge_listing_past_the_budget_is_cut_there_and_the_reading_is_incomplete() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/disk", ME);
    let stub = lab.stub_gh("sleep 60");
    let queued = vec![];
    // 4 s of budget left: less than the listing's own 10 s.
    let mut ask = Ask::new().created(&["feat/disk"]).away(away(false, &queued), Some(&stub.path));
    ask.started = Instant::now() - (OWED_BUDGET - Duration::from_secs(4));
    let started = Instant::now();
    let reading = ask.read(&lab.wc);
    let took = started.elapsed();
    // Cut at the 4 s left, not at the listing's own 10 s (a wide upper bound: a loaded
    // machine adds to the time, it never takes away).
    assert!(took >= Duration::from_millis(3_900) && took < Duration::from_secs(9), "took {took:?}");
    assert_eq!(reading.notes, ["the forge listing was cut at the 14 s budget; decided from disk"]);
    assert!(reading.incomplete && reading.forge_called);
    assert_eq!(branches(&reading), ["feat/disk"]);
    eprintln!("budget-cut forge: read_owed took {took:?}");
}

#[test]
fn a_spent_budget_reads_no_git_and_starts_no_forge_and_says_so() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/disk", ME);
    let stub = lab.stub_gh("echo '[]'");
    let queued = vec![];
    let mut ask = Ask::new().created(&["feat/disk"]).away(away(false, &queued), Some(&stub.path));
    ask.checklist = vec![item("doing", ItemState::Working, None)];
    ask.started = Instant::now() - OWED_BUDGET;
    let reading = ask.read(&lab.wc);
    assert!(reading.incomplete && !reading.forge_called);
    assert!(stub.calls().is_empty());
    // Nothing of the world's part was read; the checklist's part needs no read of git.
    assert!(reading.items.is_empty(), "{:?}", reading.items);
    assert_eq!(abcd::fold::owed::ChecklistOwed::read_at(&ask.checklist, ask.now).part.count, 1);
    assert_eq!(
        reading.notes,
        [
            "the git reads were cut at the 14 s budget; branches not yet read were left out",
            "the forge listing was not made: the 14 s budget was spent; decided from disk",
        ]
    );
    // Present, with no forge to cut, the git cut alone marks it incomplete.
    let mut present = Ask::new().created(&["feat/disk"]);
    present.started = Instant::now() - OWED_BUDGET;
    let reading = present.read(&lab.wc);
    assert!(reading.incomplete && branches(&reading).is_empty());
    // With the budget not yet spent, the same reading is complete.
    ask.started = Instant::now() - (OWED_BUDGET - Duration::from_secs(5));
    let reading = ask.read(&lab.wc);
    assert!(!reading.incomplete && reading.forge_called && reading.notes.is_empty(), "{:?}", reading.notes);
    assert_eq!(branches(&reading), ["feat/disk"]);
}

// 6. The forge's answers.

const LISTING: &str = r#"[
  {"number":1,"headRefName":"b1","mergeStateStatus":"BEHIND","statusCheckRollup":[{"__typename":"CheckRun","conclusion":"SUCCESS","status":"COMPLETED"}]},
  {"number":2,"headRefName":"b2","mergeStateStatus":"DIRTY","statusCheckRollup":[]},
  {"number":3,"headRefName":"b3","mergeStateStatus":"BEHIND","statusCheckRollup":[{"__typename":"CheckRun","conclusion":"FAILURE","status":"COMPLETED"}]},
  {"number":4,"headRefName":"b4","mergeStateStatus":"UNKNOWN","statusCheckRollup":[]},
  {"number":5,"headRefName":"b5","mergeStateStatus":"CLEAN","statusCheckRollup":[{"__typename":"StatusContext","state":"SUCCESS"}]}
]"#;

#[test]
fn the_forge_listing_gives_behind_dirty_and_failing_and_nothing_for_unknown() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/disk", ME);
    // The pull requests' heads are own branches (created here; nothing unpushed on them).
    for b in ["b1", "b2", "b3", "b4", "b5"] {
        git(&lab.wc, &["branch", b, "main"]);
    }
    let answer = lab.dir.path().join("answer.json");
    std::fs::write(&answer, LISTING).unwrap();
    let stub = lab.stub_gh(&format!("cat '{}'", answer.display()));
    let queued = vec![];
    let created = ["feat/disk", "b1", "b2", "b3", "b4", "b5"];
    let reading = Ask::new().created(&created).away(away(false, &queued), Some(&stub.path)).read(&lab.wc);
    assert_eq!(
        pull_requests(&reading),
        [
            Owed::PullRequest { number: 1, why: PrWhy::Behind },
            Owed::PullRequest { number: 2, why: PrWhy::Dirty },
            Owed::PullRequest { number: 3, why: PrWhy::Failing },
        ]
    );
    assert_eq!(branches(&reading), ["feat/disk"]);
    assert!(reading.forge_called && !reading.incomplete && reading.notes.is_empty(), "{:?}", reading.notes);
    // Exactly one listing, with these arguments, run in the working copy's root.
    let root = lab.wc.canonicalize().unwrap();
    assert_eq!(
        stub.calls(),
        [format!(
            "pr list --state open --author @me --json number,headRefName,state,mergeStateStatus,statusCheckRollup --limit 200|{}",
            root.display()
        )]
    );
}

#[test]
fn a_failing_or_garbled_forge_listing_is_a_note_and_the_disk_items_stand() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/disk", ME);
    let queued = vec![];
    for (body, why) in [
        ("echo 'not json at all'", "its output was not the listing's JSON"),
        ("echo '[{\"number\":1}' ; exit 0", "its output was not the listing's JSON"),
        ("echo '[]'; exit 4", "gh exited with 4"),
        ("kill -9 $$", "gh was ended by a signal"),
    ] {
        let stub = lab.stub_gh(body);
        let reading = Ask::new().created(&["feat/disk"]).away(away(false, &queued), Some(&stub.path)).read(&lab.wc);
        assert!(reading.forge_called && !reading.incomplete);
        assert_eq!(reading.notes.len(), 1, "{body}: {:?}", reading.notes);
        let note = &reading.notes[0];
        assert!(note.starts_with("the forge listing failed (") && note.ends_with("); decided from disk") && note.contains(why), "{note}");
        assert!(pull_requests(&reading).is_empty());
        assert_eq!(branches(&reading), ["feat/disk"]);
    }
}

#[test]
fn the_forge_output_is_read_up_to_the_cap_and_refused_past_it() {
    let lab = Lab::new();
    let queued = vec![];
    let answer = lab.dir.path().join("answer.json");
    let stub = lab.stub_gh(&format!("cat '{}'", answer.display()));
    branch_with_commit(&lab, "feat/nine", ME);
    let listing = r#"[{"number":9,"headRefName":"feat/nine","mergeStateStatus":"BEHIND"}]"#;
    for (size, read) in [(CHILD_OUTPUT_MAX, true), (CHILD_OUTPUT_MAX + 1, false)] {
        let mut file = std::fs::File::create(&answer).unwrap();
        file.write_all(listing.as_bytes()).unwrap();
        file.write_all(&vec![b' '; size - listing.len()]).unwrap();
        drop(file);
        let reading = Ask::new().away(away(false, &queued), Some(&stub.path)).read(&lab.wc);
        if read {
            assert_eq!(pull_requests(&reading), [Owed::PullRequest { number: 9, why: PrWhy::Behind }]);
            assert!(reading.notes.is_empty(), "{:?}", reading.notes);
        } else {
            assert!(pull_requests(&reading).is_empty());
            assert_eq!(
                reading.notes,
                [format!("the forge listing failed (it printed more than {CHILD_OUTPUT_MAX} bytes); decided from disk")]
            );
        }
    }
}

#[test]
fn only_pull_requests_whose_head_is_an_own_branch_are_owed() {
    let lab = Lab::new();
    // feat/cut: cut by this copy into another worktree (recorded as created here).
    let wt = lab.dir.path().join("wt-cut");
    git(&lab.wc, &["worktree", "add", "-q", "-b", "feat/cut", wt.to_str().unwrap()]);
    lab.commit(&wt, "cut.txt", "cut\n", "cut");
    git(&wt, &["push", "-q", "-u", "origin", "feat/cut"]);
    // feat/sibling: a sibling worktree's own branch, never checked out or created here.
    let sibling = lab.dir.path().join("wt-sibling");
    git(&lab.origin, &["branch", "feat/sibling", "main"]);
    git(&lab.wc, &["fetch", "-q", "origin"]);
    git(&lab.wc, &["worktree", "add", "-q", sibling.to_str().unwrap(), "-b", "feat/sibling", "origin/feat/sibling"]);
    lab.commit(&sibling, "sib.txt", "sib\n", "sibling");
    // feat/mine: checked out here with a commit of this checkout's, pushed.
    branch_with_commit(&lab, "feat/mine", ME);
    git(&lab.wc, &["push", "-q", "-u", "origin", "feat/mine"]);
    let listing = r#"[
      {"number":11,"headRefName":"feat/cut","mergeStateStatus":"BEHIND"},
      {"number":12,"headRefName":"feat/sibling","mergeStateStatus":"BEHIND"},
      {"number":13,"headRefName":"feat/elsewhere","mergeStateStatus":"BEHIND"},
      {"number":14,"headRefName":"feat/mine","mergeStateStatus":"DIRTY"},
      {"number":15,"mergeStateStatus":"BEHIND"}
    ]"#;
    let answer = lab.dir.path().join("answer.json");
    std::fs::write(&answer, listing).unwrap();
    let stub = lab.stub_gh(&format!("cat '{}'", answer.display()));
    let queued = vec![];
    let reading = Ask::new().created(&["feat/cut"]).away(away(false, &queued), Some(&stub.path)).read(&lab.wc);
    assert_eq!(
        pull_requests(&reading),
        [Owed::PullRequest { number: 11, why: PrWhy::Behind }, Owed::PullRequest { number: 14, why: PrWhy::Dirty }]
    );
    assert!(branches(&reading).is_empty(), "every own branch is pushed: {:?}", reading.items);
    // Without the creation record feat/cut is only the other worktree's: its pull request
    // is that copy's to move.
    let reading = Ask::new().away(away(false, &queued), Some(&stub.path)).read(&lab.wc);
    assert_eq!(pull_requests(&reading), [Owed::PullRequest { number: 14, why: PrWhy::Dirty }]);
}

// 7. Present: no forge.

#[test]
fn while_present_the_forge_is_never_called() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/disk", ME);
    let stub = lab.stub_gh(&format!("echo '{LISTING}'"));
    let mut ask = Ask::new().created(&["feat/disk"]);
    ask.gh = Some(&stub.path);
    let reading = ask.read(&lab.wc);
    assert!(!reading.forge_called);
    assert!(stub.calls().is_empty(), "the stub ran: {:?}", stub.calls());
    assert!(!stub.calls.exists());
    assert_eq!(branches(&reading), ["feat/disk"]);
    assert!(pull_requests(&reading).is_empty());
    // The same stub, away, is called once: the counter works.
    let queued = vec![];
    let reading = Ask::new().away(away(false, &queued), Some(&stub.path)).read(&lab.wc);
    assert!(reading.forge_called);
    assert_eq!(stub.calls().len(), 1);
    assert!(stub.dir.is_dir());
}

// 8. Hand-backs.

#[test]
fn a_queued_push_hands_back_a_ready_branch_only_with_hold_pushes_and_only_by_its_whole_name() {
    let lab = Lab::new();
    let head_x = branch_with_commit(&lab, "feat/x", ME);
    branch_with_commit(&lab, "feat/x-2", ME);
    let created = ["feat/x", "feat/x-2"];
    let queued = vec!["push feat/x.".to_string()];

    let held = Ask::new().created(&created).away(away(true, &queued), None).read(&lab.wc);
    assert_eq!(held.handed_back, [HandBack { branch: "feat/x".into(), head: head_x.clone() }]);
    assert_eq!(unpushed(&held), [("feat/x-2".to_string(), true)], "feat/x-2 is not named by a step naming feat/x");

    let not_held = Ask::new().created(&created).away(away(false, &queued), None).read(&lab.wc);
    assert!(not_held.handed_back.is_empty());
    assert_eq!(branches(&not_held), ["feat/x", "feat/x-2"]);

    let present = Ask::new().created(&created).read(&lab.wc);
    assert!(present.handed_back.is_empty());
    assert_eq!(branches(&present), ["feat/x", "feat/x-2"]);

    // A step naming only feat/x-2 hands back feat/x-2, not feat/x.
    let queued_2 = vec!["push feat/x-2 when you can".to_string()];
    let held_2 = Ask::new().created(&created).away(away(true, &queued_2), None).read(&lab.wc);
    assert_eq!(held_2.handed_back.iter().map(|h| h.branch.as_str()).collect::<Vec<_>>(), ["feat/x-2"]);
    assert_eq!(branches(&held_2), ["feat/x"]);
}

#[test]
fn a_queued_push_hands_nothing_back_while_the_branch_lacks_its_bases_last_fetched_tip() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/x", ME);
    // main moves on at the forge and is fetched: feat/x must merge it first.
    let other = lab.other_clone("forge");
    lab.commit(&other, "new.txt", "new\n", "main moves");
    git(&other, &["push", "-q", "origin", "main"]);
    git(&lab.wc, &["fetch", "-q"]);
    let queued = vec!["push feat/x".to_string()];
    let reading = Ask::new().created(&["feat/x"]).away(away(true, &queued), None).read(&lab.wc);
    assert!(reading.handed_back.is_empty());
    assert_eq!(unpushed(&reading), [("feat/x".to_string(), false)]);
    // Merged with the fetched tip, it is handed back.
    git(&lab.wc, &["switch", "-q", "feat/x"]);
    git(&lab.wc, &["merge", "-q", "--no-edit", "origin/main"]);
    let head = git(&lab.wc, &["rev-parse", "HEAD"]);
    git(&lab.wc, &["switch", "-q", "main"]);
    let reading = Ask::new().created(&["feat/x"]).away(away(true, &queued), None).read(&lab.wc);
    assert_eq!(reading.handed_back, [HandBack { branch: "feat/x".into(), head }]);
    assert!(reading.items.is_empty());
}

// 9. Checked out here, with a recent commit of this checkout's.

#[test]
fn a_branch_checked_out_here_is_own_only_with_a_recent_commit_by_this_users_email() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/mine", ME);
    branch_with_commit(&lab, "feat/review", OTHER);
    // Checked out now, never switched away from: the current branch counts too.
    git(&lab.wc, &["switch", "-q", "-c", "feat/current", "main"]);
    lab.commit_as(&lab.wc, ME, None, "cur.txt", "cur\n");
    let reading = Ask::new().read(&lab.wc);
    assert_eq!(branches(&reading), ["feat/current", "feat/mine"]);
    // With no reflog left, the branch checked out now is still read.
    std::fs::write(lab.wc.join(".git/logs/HEAD"), "").unwrap();
    assert_eq!(branches(&Ask::new().read(&lab.wc)), ["feat/current"]);
}

#[test]
fn the_recency_window_holds_on_both_sides_and_takes_the_later_date() {
    let lab = Lab::new();
    let t = 1_750_000_000_i64;
    let window = RECENT_OWN_COMMIT.as_secs() as i64;
    // (branch, author date, committer date, author email)
    let cases = [
        ("feat/edge", t, t, ME),
        ("feat/old", t - 1, t - 1, ME),
        ("feat/rebased", t - 10 * window, t, ME),
        ("feat/upper", t, t, "ME@EXAMPLE.COM"),
        ("feat/theirs", t, t, OTHER),
    ];
    for (name, at, ct, email) in cases {
        git(&lab.wc, &["switch", "-q", "-c", name, "main"]);
        lab.commit_as(&lab.wc, email, Some((at, ct)), &format!("{}.txt", name.replace('/', "-")), "x\n");
        git(&lab.wc, &["switch", "-q", "main"]);
    }
    let mut ask = Ask::new();
    ask.now = Timestamp::from_second(t + window).unwrap();
    assert_eq!(branches(&ask.read(&lab.wc)), ["feat/edge", "feat/rebased", "feat/upper"]);
}

// Limits.

/// `count` branches named b0000… pointing at one commit beyond main, made with one
/// update-ref, so no reflog names them.
fn many_branches(lab: &Lab, count: usize) -> Vec<String> {
    git(&lab.wc, &["switch", "-q", "-c", "side"]);
    let oid = lab.commit(&lab.wc, "side.txt", "side\n", "side");
    git(&lab.wc, &["switch", "-q", "main"]);
    git(&lab.wc, &["branch", "-q", "-D", "side"]);
    let names: Vec<String> = (0..count).map(|i| format!("b{i:04}")).collect();
    let mut child =
        Command::new("git").args(["update-ref", "--stdin"]).current_dir(&lab.wc).stdin(std::process::Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for name in &names {
        writeln!(stdin, "create refs/heads/{name} {oid}").unwrap();
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    names
}

#[test]
fn at_most_branches_examined_max_own_branches_are_examined() {
    let lab = Lab::new();
    let names = many_branches(&lab, BRANCHES_EXAMINED_MAX + 1);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let started = Instant::now();
    let at = Ask::new().created(&refs[..BRANCHES_EXAMINED_MAX]).read(&lab.wc);
    assert_eq!(at.items.len(), BRANCHES_EXAMINED_MAX);
    assert!(at.notes.is_empty(), "{:?}", at.notes);
    let past = Ask::new().created(&refs).read(&lab.wc);
    assert_eq!(past.items.len(), BRANCHES_EXAMINED_MAX);
    assert!(!branches(&past).contains(&names[BRANCHES_EXAMINED_MAX]));
    assert_eq!(past.notes, [format!("1 of the own branches were not examined (at most {BRANCHES_EXAMINED_MAX} are)")]);
    eprintln!("two readings of {} branches took {:?}", BRANCHES_EXAMINED_MAX, started.elapsed());
}

#[test]
fn the_reflog_is_read_up_to_its_newest_reflog_entries_max_entries() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/old", ME);
    let main = git(&lab.wc, &["rev-parse", "main"]);
    let log = lab.wc.join(".git/logs/HEAD");
    let entry = |message: &str| format!("{main} {main} Test Person <{ME}> 1750000000 +0000\t{message}\n");
    for (fillers, own) in [(REFLOG_ENTRIES_MAX - 1, true), (REFLOG_ENTRIES_MAX, false)] {
        // The checkout of feat/old is the oldest entry, behind `fillers` newer ones.
        let mut text = entry("checkout: moving from main to feat/old");
        text.push_str(&entry("commit: filler").repeat(fillers));
        std::fs::write(&log, text).unwrap();
        let reading = Ask::new().read(&lab.wc);
        assert_eq!(branches(&reading) == ["feat/old"], own, "{fillers} newer entries: {:?}", reading.items);
    }
}

#[test]
fn at_most_own_commits_scanned_max_commits_are_scanned_for_one_of_this_checkouts() {
    let lab = Lab::new();
    let main = git(&lab.wc, &["rev-parse", "main"]);
    let now = abcd::clock::wall_now().as_second();
    for (others, own) in [(OWN_COMMITS_SCANNED_MAX - 1, true), (OWN_COMMITS_SCANNED_MAX, false)] {
        let name = format!("feat/deep{others}");
        // My commit first, then `others` newer ones by another email, in one fast-import.
        let mut stream = format!(
            "commit refs/heads/{name}\ncommitter Me <{ME}> {now} +0000\ndata 2\nme\nfrom {main}\nM 100644 inline mine.txt\ndata 5\nmine\n\n"
        );
        for _ in 0..others {
            stream.push_str(&format!("commit refs/heads/{name}\ncommitter O <{OTHER}> {now} +0000\ndata 1\no\n\n"));
        }
        let mut child =
            Command::new("git").args(["fast-import", "--quiet"]).current_dir(&lab.wc).stdin(std::process::Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(stream.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
        git(&lab.wc, &["switch", "-q", &name]);
        git(&lab.wc, &["switch", "-q", "main"]);
        let reading = Ask::new().read(&lab.wc);
        assert_eq!(branches(&reading).contains(&name), own, "{others} newer commits: {:?}", reading.items);
    }
}

// Git failing.

#[test]
fn no_repository_or_no_commit_is_a_note_not_an_incomplete_reading() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("plain");
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&bare).unwrap();
    git(dir.path(), &["init", "-q", empty.to_str().unwrap()]);
    for root in [&bare, &empty] {
        let mut ask = Ask::new().created(&["feat/x"]);
        ask.checklist = vec![item("doing", ItemState::Working, None)];
        let reading = ask.read(root);
        // The world's part is empty; the checklist's, the caller's, needs no git.
        assert!(reading.items.is_empty(), "{:?}", reading.items);
        assert!(!reading.incomplete);
        assert_eq!(reading.notes, ["branches were not read: git found no commit here (not a repository, or no commit yet)"]);
    }
}

fn item(id: &str, state: ItemState, next_look: Option<Timestamp>) -> Item {
    let at: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    Item {
        fields: ItemFields {
            id: id.into(),
            title: id.into(),
            state,
            waits_on: None,
            next_look,
            promise: None,
            owner_refs: vec![],
            credential: None,
            blocker: None,
        },
        created_at: at,
        updated_at: at,
        added_seq: 1,
        changed_seq: 1,
        promise_fired: None,
        promised_by: None,
    }
}

/// The reading holds the world's items only; the checklist's part, read from the items,
/// composes with it to the view of every item, and every waiting look is reported.
#[test]
fn checklist_items_join_the_branch_items_and_every_waiting_look_is_reported() {
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/disk", ME);
    let mut ask = Ask::new().created(&["feat/disk"]);
    let past = ask.now - jiff::SignedDuration::from_mins(1);
    let future = ask.now + jiff::SignedDuration::from_mins(1);
    ask.checklist = vec![
        item("doing", ItemState::Working, None),
        item("due", ItemState::Waiting, Some(past)),
        item("later", ItemState::Waiting, Some(future)),
        item("done", ItemState::Done, Some(past)),
    ];
    let reading = ask.read(&lab.wc);
    assert_eq!(reading.items, [Owed::Unpushed { branch: "feat/disk".into(), next_act_is_push: true }]);
    let checklist = abcd::fold::owed::ChecklistOwed::read_at(&ask.checklist, ask.now);
    assert_eq!(checklist.looks, [past, future]);
    let every = [
        Owed::Working { id: "doing".into(), title: "doing".into(), added_seq: 1, promised: false },
        Owed::LookDue { id: "due".into(), title: "due".into(), added_seq: 1 },
        Owed::Unpushed { branch: "feat/disk".into(), next_act_is_push: true },
    ];
    let composed = abcd::verdict::stop::OwedView::compose(&checklist.part, &abcd::verdict::stop::OwedPart::of(&reading.items));
    assert_eq!(composed, abcd::verdict::stop::OwedView::of(&every));
    assert_eq!(composed.len(), 3);
}

/// The prompt hook reads the own branches (the behind note) under the host's 10 s timeout
/// for a hook other than Stop (`HOOK_TIMEOUT_SECS`), not under the Stop hook's 14 s
/// `OWED_BUDGET`: a read still running at the host's timeout is killed with the hook, and
/// with it the prompt's context. The budget holds on both sides of its edge.
#[test]
fn the_prompt_hooks_own_reading_is_cut_inside_the_hosts_hook_timeout() {
    use abcd::host::claude_settings::HOOK_TIMEOUT_SECS;
    use abcd::owed::{OWN_BUDGET, OwnQuery, read_own};
    let lab = Lab::new();
    branch_with_commit(&lab, "feat/disk", ME);
    let created = vec!["feat/disk".to_string()];
    let read = |ago: Duration| {
        read_own(&OwnQuery {
            root: &lab.wc,
            created_here: &created,
            now: abcd::clock::wall_now(),
            started: Instant::now() - ago,
            tier: None,
        })
    };
    // A hook the host would already have killed starts no read.
    let at_timeout = read(Duration::from_secs(HOOK_TIMEOUT_SECS));
    assert!(at_timeout.incomplete && at_timeout.own.is_empty(), "{at_timeout:?}");
    // The budget's edge: spent, nothing is read; 5 s short of it, the branch is read whole.
    let spent = read(OWN_BUDGET);
    assert!(spent.incomplete && spent.own.is_empty(), "{spent:?}");
    let left = read(OWN_BUDGET.saturating_sub(Duration::from_secs(5)));
    assert!(!left.incomplete, "{left:?}");
    assert_eq!(left.own.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(), ["feat/disk"]);
    assert!(OWN_BUDGET < Duration::from_secs(HOOK_TIMEOUT_SECS), "the reads end before the host's timeout");
}
