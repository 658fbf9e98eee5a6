//! Own work only, and the behind check at the turn's end (issue 23, acceptance 1 and 5),
//! through the built binary: real git repositories with a local bare `origin`, the clock
//! set through `ABCD_TEST_NOW`, commit dates set explicitly, and a stub `gh` on PATH that
//! counts its calls and prints a fixed listing.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::repo::{self, TestRepo};
use serde_json::{Value, json};

/// The instant the hooks' clock reads (the checklist's writes carry it).
const NOW: &str = "2026-12-01T18:00:00Z";
/// A commit date before [`NOW`], and one after it.
const BEFORE_NOW: &str = "2026-12-01T17:00:00Z";
const AFTER_NOW: &str = "2026-12-01T18:30:00Z";
/// `FORGE_LISTING_REUSE` (60 s) after [`NOW`]: a listing kept at `NOW` is made again.
const LISTING_REUSED_UNTIL: &str = "2026-12-01T18:01:00Z";

struct Repo {
    dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    bin: PathBuf,
    now: String,
}

impl Repo {
    /// A managed working copy on `main`, pushed to a bare `origin` beside it.
    fn new() -> Repo {
        let TestRepo { dir, root, home } = TestRepo::new();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let origin = dir.path().join("origin.git");
        repo::git(dir.path(), &["init", "-q", "--bare", "-b", "main", origin.to_str().unwrap()]);
        repo::git(&root, &["remote", "add", "origin", origin.to_str().unwrap()]);
        repo::git(&root, &["push", "-q", "-u", "origin", "main"]);
        let repo = Repo { dir, home, root, bin, now: NOW.into() };
        assert!(repo.abcd(&["init"]).status.success());
        repo.stub_gh("[]");
        repo
    }

    fn git(&self, args: &[&str]) {
        repo::git(&self.root, args);
    }

    /// A `gh` that appends a line to `gh-calls` and prints `answer`.
    fn stub_gh(&self, answer: &str) {
        let path = self.bin.join("gh");
        let calls = self.bin.join("gh-calls");
        std::fs::write(&path, format!("#!/bin/sh\necho \"$*\" >> '{}'\ncat <<'EOF'\n{answer}\nEOF\n", calls.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn gh_calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.bin.join("gh-calls")).unwrap_or_default().lines().map(str::to_owned).collect()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
        let path = format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap_or_default());
        cmd.args(args)
            .current_dir(&self.root)
            .env("ABCD_HOME", &self.home)
            .env("ABCD_TEST_NOW", &self.now)
            .env("TZ", "UTC")
            .env("PATH", path)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP");
        cmd
    }

    fn abcd(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) {
        let out = self.abcd(args);
        assert!(out.status.success(), "abcd {args:?}: {}", repo::text(&out));
    }

    fn hook(&self, event: &str, payload: Value) -> Output {
        let mut cmd = self.command(&["hook", event]);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "a hook always exits 0");
        out
    }

    /// The pre-tool-use hook sees the session run `command` (the recorder records a branch
    /// it creates) and lets it through; the command itself is not run. While the away
    /// mode's blocker sweep is open, the first tool call carries its ask (docs/sweep.md).
    fn session_runs(&self, command: &str) {
        let payload = json!({"session_id": "s1", "cwd": self.root, "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}});
        if let Some(r) = reply(&self.hook("pre-tool-use", payload)) {
            let ask = r["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_default();
            assert!(
                ask.starts_with("abcd: the person is leaving and collects") && r["hookSpecificOutput"].get("permissionDecision").is_none(),
                "{r}"
            );
        }
    }

    /// A Stop; with `wake`, a `*/5` session cron that qualifies as a wake.
    fn stop(&self, active: bool, wake: bool) -> Output {
        let crons = if wake { json!([{"id": "c", "schedule": "*/5 * * * *", "recurring": true, "prompt": "look"}]) } else { json!([]) };
        let payload = json!({"session_id": "s1", "cwd": self.root, "hook_event_name": "Stop", "stop_hook_active": active,
            "last_assistant_message": "Done for now.", "background_tasks": [], "session_crons": crons});
        self.hook("stop", payload)
    }

    /// The prompt hook's context for the model, when it gives one.
    fn prompt(&self) -> Option<String> {
        let payload = json!({"session_id": "s1", "cwd": self.root, "hook_event_name": "UserPromptSubmit", "prompt": "go on"});
        let r = reply(&self.hook("user-prompt-submit", payload))?;
        r["hookSpecificOutput"]["additionalContext"].as_str().map(common::unmarked)
    }
}

/// Commits a new file in `dir` dated `when` (author and committer).
fn commit_at(dir: &Path, file: &str, when: &str) {
    std::fs::write(dir.join(file), format!("{file}\n")).unwrap();
    repo::git(dir, &["add", file]);
    repo::git_with(dir, &["commit", "-q", "-m", file], &[("GIT_AUTHOR_DATE", when), ("GIT_COMMITTER_DATE", when)]);
}

/// A branch the session creates (recorded by the pre-tool-use hook, then made by git) with
/// one commit dated `when`, pushed, and `main` checked out again.
fn own_pushed_branch(repo: &Repo, branch: &str, when: &str) {
    repo.session_runs(&format!("git switch -c {branch}"));
    repo.git(&["switch", "-q", "-c", branch]);
    commit_at(&repo.root, &format!("{}.txt", branch.replace('/', "-")), when);
    repo.git(&["push", "-q", "-u", "origin", branch]);
    repo.git(&["switch", "-q", "main"]);
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn reply(out: &Output) -> Option<Value> {
    let text = stdout(out);
    (!text.trim().is_empty()).then(|| serde_json::from_str(text.trim()).unwrap())
}

fn block_reason(out: &Output) -> String {
    let r = reply(out).unwrap_or_else(|| panic!("expected a block, got nothing; stderr: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(r["hookSpecificOutput"]["hookEventName"], "Stop", "a block is the host's Stop feedback: {r}");
    r["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_string()
}

const BEHIND: &str = "the checklist is behind this session's work";

/// Acceptance 1: an unlisted own branch blocks the first away Stop, naming it, and not the
/// second; a new unlisted branch blocks once more.
#[test]
fn away_an_unlisted_own_branch_blocks_the_first_stop_and_not_the_second() {
    let repo = Repo::new();
    own_pushed_branch(&repo, "feat/a", BEFORE_NOW);
    repo.ok(&["mode", "autonomous"]);
    // Nothing is owed (the branch is pushed) and a wake qualifies: only the behind check
    // can block.
    let reason = block_reason(&repo.stop(false, true));
    assert!(reason.starts_with(&format!("abcd: the person is away and {BEHIND}: no item names feat/a in its owner refs")), "{reason}");
    assert_eq!(reply(&repo.stop(true, true)), None, "the same unlisted set blocks one stop");
    assert_eq!(reply(&repo.stop(false, true)), None);
    own_pushed_branch(&repo, "feat/b", BEFORE_NOW);
    let reason = block_reason(&repo.stop(false, true));
    assert!(reason.contains("no item names feat/a, feat/b in its owner refs"), "{reason}");
    assert_eq!(reply(&repo.stop(true, true)), None);
    // Listed: not behind, so nothing blocks.
    repo.ok(&["checklist", "add", "Parser", "--owner-ref", "feat/a", "--owner-ref", "feat/b"]);
    repo.ok(&["checklist", "set", "1", "--state", "done"]);
    assert_eq!(reply(&repo.stop(false, true)), None);
    // No wake: the stop is blocked anyway (nothing owed, row 7), and the behind set rides
    // that block once.
    own_pushed_branch(&repo, "feat/c", BEFORE_NOW);
    let reason = block_reason(&repo.stop(false, false));
    assert!(reason.contains("nothing is owed") && reason.contains(&format!("Also, {BEHIND}: no item names feat/c")), "{reason}");
    let reason = block_reason(&repo.stop(true, false));
    assert!(!reason.contains(BEHIND), "{reason}");
}

/// Acceptance 1: a commit on an own branch after the last checklist write is named; while
/// present the note rides the next prompt and the Stop is not blocked for it.
#[test]
fn a_commit_after_the_last_checklist_write_is_named() {
    let repo = Repo::new();
    own_pushed_branch(&repo, "feat/a", BEFORE_NOW);
    repo.ok(&["checklist", "add", "Parser", "--owner-ref", "feat/a"]);
    repo.ok(&["checklist", "set", "1", "--state", "waiting", "--next-look", "+2h"]);
    // The journal stamps a write with the machine's clock: the commits are dated from it.
    let listed: Value = serde_json::from_slice(&repo.abcd(&["checklist", "--json"]).stdout).unwrap();
    let written: jiff::Timestamp = listed["items"][0]["updated_at"].as_str().unwrap().parse().unwrap();
    let second = |s: i64| jiff::Timestamp::from_second(written.as_second() + s).unwrap().to_string();
    // Listed, and no commit since the write: no note.
    assert_eq!(repo.prompt(), None);
    repo.git(&["switch", "-q", "feat/a"]);
    commit_at(&repo.root, "later.txt", &second(1));
    // Present: the note rides the prompt, every prompt while it holds.
    for _ in 0..2 {
        let context = repo.prompt().expect("the behind note");
        assert!(context.contains(&format!("abcd: {BEHIND}: feat/a has commits after the checklist's last write")), "{context}");
        // The fix is updating the item that names it, not adding one (issue 35).
        assert!(context.contains("`abcd checklist set <id>`") && !context.contains("Adding an item"), "{context}");
    }
    // Present: the stop is not blocked for it (only the person's line for the unpushed
    // commit), and no forge is called.
    let r = reply(&repo.stop(false, false)).unwrap();
    assert!(r.get("hookSpecificOutput").is_none() && !r.to_string().contains(BEHIND), "{r}");
    assert!(repo.gh_calls().is_empty(), "no forge call while present");
    // Away: the first stop names it, the second does not block for it.
    repo.git(&["push", "-q"]);
    repo.ok(&["mode", "autonomous"]);
    let reason = block_reason(&repo.stop(false, true));
    assert!(reason.contains("feat/a has commits after the checklist's last write"), "{reason}");
    assert_eq!(reply(&repo.stop(true, true)), None);
    // A head committed in the write's own second (git keeps whole seconds) is not named.
    let date = second(0);
    repo::git_with(&repo.root, &["commit", "-q", "--amend", "--no-edit"], &[("GIT_AUTHOR_DATE", &date), ("GIT_COMMITTER_DATE", &date)]);
    assert_eq!(repo.prompt().filter(|c| c.contains(BEHIND)), None);
}

/// Acceptance 1: a branch git never made, or one deleted, is never named.
#[test]
fn a_branch_that_does_not_exist_is_never_named() {
    let repo = Repo::new();
    // Recorded (the session ran a command that would create it) but never made by git.
    repo.session_runs("git switch -c feat/ghost");
    assert_eq!(repo.prompt(), None);
    // Made, then deleted.
    own_pushed_branch(&repo, "feat/gone", BEFORE_NOW);
    assert!(repo.prompt().expect("the behind note").contains("no item names feat/gone"));
    repo.git(&["branch", "-q", "-D", "feat/gone"]);
    assert_eq!(repo.prompt(), None);
    repo.ok(&["mode", "autonomous"]);
    assert_eq!(reply(&repo.stop(false, true)), None, "neither is named at an away stop");
    let reason = block_reason(&repo.stop(false, false));
    assert!(!reason.contains("feat/ghost") && !reason.contains("feat/gone") && !reason.contains(BEHIND), "{reason}");
}

const LISTING: &str = r#"[
  {"number":21,"headRefName":"feat/elsewhere","mergeStateStatus":"BEHIND","statusCheckRollup":[]},
  {"number":22,"headRefName":"feat/cut","mergeStateStatus":"BEHIND","statusCheckRollup":[]}
]"#;

/// Acceptance 5: an open pull request of the person's whose head is no own branch of this
/// working copy is not owed at an away stop; a branch this copy cut into another worktree
/// with `git worktree add -b` is owed here, its unpushed commits and its pull request.
#[test]
fn only_own_branches_and_their_pull_requests_are_owed_and_a_cut_worktree_branch_is_the_cutters() {
    let mut repo = Repo::new();
    repo.stub_gh(&LISTING.replace("feat/cut", "feat/not-yet"));
    repo.ok(&["mode", "autonomous"]);
    // Neither pull request's head is a branch of this copy's: nothing is owed.
    assert_eq!(reply(&repo.stop(false, true)), None);
    assert_eq!(repo.gh_calls().len(), 1, "the forge was listed: {:?}", repo.gh_calls());
    assert!(repo.gh_calls()[0].contains("--author @me"), "{:?}", repo.gh_calls());

    // Another worktree's branch (cut without this session's recorder, committed there):
    // the branch exists here, but is not this copy's, so its pull request is not owed.
    let sibling = repo.dir.path().join("sibling");
    repo.git(&["worktree", "add", "-q", "-b", "feat/elsewhere", sibling.to_str().unwrap()]);
    commit_at(&sibling, "elsewhere.txt", AFTER_NOW);
    repo::git(&sibling, &["push", "-q", "-u", "origin", "feat/elsewhere"]);
    assert_eq!(reply(&repo.stop(false, true)), None, "another copy's branch and pull request are not owed here");

    // The session cuts feat/cut into another worktree, as the drain's stacked branches were.
    let other = repo.dir.path().join("other");
    repo.session_runs(&format!("git worktree add -b feat/cut {}", other.display()));
    repo.git(&["worktree", "add", "-q", "-b", "feat/cut", other.to_str().unwrap()]);
    commit_at(&other, "cut.txt", BEFORE_NOW);
    repo.stub_gh(LISTING);
    // The forge's new answer is read once the kept listing is past its reuse bound.
    repo.now = LISTING_REUSED_UNTIL.into();
    let reason = block_reason(&repo.stop(false, false));
    assert!(reason.contains("Next: pull request #22 is behind its base."), "{reason}");
    assert!(reason.contains("Also owed: branch feat/cut has commits not pushed"), "{reason}");
    assert!(!reason.contains("#21") && !reason.contains("feat/elsewhere"), "{reason}");
    // Pushed: its pull request alone is owed, still here.
    repo::git(&other, &["push", "-q", "-u", "origin", "feat/cut"]);
    let reason = block_reason(&repo.stop(true, false));
    assert!(reason.contains("work is owed (1 item). Next: pull request #22 is behind its base."), "{reason}");
}

/// A session keeps the copy it started in (seed 003 "Which copy"): started at the
/// repository's root while away, with three own pull requests owed, it cuts a worktree,
/// commits there and `cd`s into it. Its Stop payload's `cwd` is the worktree, but the host's
/// `CLAUDE_PROJECT_DIR` still names the root: the Stop counts the root's 4 owed items (the
/// three pull requests and the cut branch's unpushed commits), not the worktree's 1. A host
/// that names no project folder is judged the same way through the session index its
/// SessionStart wrote; a session whose start was not seen, by its payload's `cwd`.
#[test]
fn a_session_that_moved_into_a_worktree_is_judged_by_its_start_copy() {
    let repo = Repo::new();
    for branch in ["feat/a", "feat/b", "feat/c"] {
        own_pushed_branch(&repo, branch, BEFORE_NOW);
    }
    repo.stub_gh(
        r#"[{"number":31,"headRefName":"feat/a","mergeStateStatus":"BEHIND","statusCheckRollup":[]},
            {"number":32,"headRefName":"feat/b","mergeStateStatus":"BEHIND","statusCheckRollup":[]},
            {"number":33,"headRefName":"feat/c","mergeStateStatus":"BEHIND","statusCheckRollup":[]}]"#,
    );
    repo.ok(&["mode", "autonomous"]);
    let cut = repo.dir.path().join("cut");
    repo.session_runs(&format!("git worktree add -b feat/cut {}", cut.display()));
    repo.git(&["worktree", "add", "-q", "-b", "feat/cut", cut.to_str().unwrap()]);
    commit_at(&cut, "cut.txt", BEFORE_NOW);
    let hook_in = |event: &str, session: &str, cwd: &Path, project_dir: Option<&Path>| {
        let payload = match event {
            "stop" => json!({"session_id": session, "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": false,
                "last_assistant_message": "Done for now.", "background_tasks": [], "session_crons": []}),
            _ => json!({"session_id": session, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}),
        };
        let mut cmd = repo.command(&["hook", event]);
        cmd.current_dir(cwd).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        match project_dir {
            Some(dir) => cmd.env("CLAUDE_PROJECT_DIR", dir),
            None => cmd.env_remove("CLAUDE_PROJECT_DIR"),
        };
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    // The host names the start copy: judged there, all four.
    let reason = block_reason(&hook_in("stop", "s1", &cut, Some(&repo.root)));
    assert!(reason.contains("work is owed (4 items)"), "{reason}");
    assert!(reason.contains("pull request #31") && reason.contains("feat/cut has commits not pushed"), "{reason}");
    // The verdict is recorded in the start copy's journal, not the worktree's.
    let judged = |dir: &Path| {
        std::fs::read_to_string(dir.join(".abcd/.work.local/journal.jsonl")).unwrap_or_default().matches("\"session.judged\"").count()
    };
    assert_eq!((judged(&repo.root), judged(&cut)), (1, 0));
    // No project folder, and a start not seen: the payload's cwd, as before (the worktree's one).
    let reason = block_reason(&hook_in("stop", "s2", &cut, None));
    assert!(reason.contains("work is owed (1 item)"), "{reason}");
    // No project folder, and a start seen at the root: the session index names the root.
    let out = hook_in("session-start", "s3", &repo.root, None);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", repo::text(&out));
    let reason = block_reason(&hook_in("stop", "s3", &cut, None));
    assert!(reason.contains("work is owed (4 items)"), "{reason}");
}
