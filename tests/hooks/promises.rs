//! Promises end to end through the built binary (issue 23, acceptance 2): real git
//! repositories in temp folders, the clock set through `ABCD_TEST_NOW`, and a stub `gh` on
//! PATH whose answer each test sets.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::repo::{self, TestRepo};
use serde_json::{Value, json};

const NOW: &str = "2026-12-01T18:00:00Z";
/// The forge listing's reuse bound (60 s) after [`NOW`]: a listing kept at `NOW` is made again.
const A_MINUTE_LATER: &str = "2026-12-01T18:01:00Z";

struct Repo {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    bin: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let TestRepo { dir, root, home } = TestRepo::new();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let repo = Repo { home, root, bin, _dir: dir };
        assert!(repo.abcd(&["init"]).status.success());
        repo.stub_gh("[]");
        repo
    }

    /// A `gh` that lists the pull requests in `answer` as the forge would: every one for
    /// `--state all`, the open ones otherwise.
    fn stub_gh(&self, answer: &str) {
        let path = self.bin.join("gh");
        let every: Vec<Value> = serde_json::from_str(answer).expect("a listing");
        let open: Vec<&Value> = every.iter().filter(|pr| pr["state"].as_str().is_none_or(|s| s == "OPEN")).collect();
        let open = serde_json::to_string(&open).unwrap();
        let script =
            format!("#!/bin/sh\ncase \"$*\" in\n*'--state all'*) cat <<'EOF'\n{answer}\nEOF\n;;\n*) cat <<'EOF'\n{open}\nEOF\n;;\nesac\n");
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn command(&self, args: &[&str], now: &str) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
        let path = format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap_or_default());
        cmd.args(args)
            .current_dir(&self.root)
            .env("ABCD_HOME", &self.home)
            .env("ABCD_TEST_NOW", now)
            .env("TZ", "UTC")
            .env("PATH", path)
            .env_remove("ABCD_GH")
            .env_remove("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP");
        cmd
    }

    fn abcd(&self, args: &[&str]) -> Output {
        self.command(args, NOW).output().unwrap()
    }

    fn must(&self, args: &[&str]) -> String {
        let out = self.abcd(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn hook(&self, event: &str, payload: Value, now: &str) -> Option<Value> {
        let mut cmd = self.command(&["hook", event], now);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "a hook always exits 0");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("promise_fired"), "no warning about the record: {stderr}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (!text.trim().is_empty()).then(|| serde_json::from_str(text.trim()).unwrap())
    }

    fn context(&self, event: &str, payload: Value, now: &str) -> String {
        let r = self.hook(event, payload, now).unwrap_or_else(|| panic!("{event}: no reply"));
        common::unmarked(r["hookSpecificOutput"]["additionalContext"].as_str().unwrap())
    }

    fn stop_reason(&self) -> String {
        self.stop_reason_at(NOW)
    }

    fn stop_reason_at(&self, now: &str) -> String {
        let payload = json!({"session_id": "s1", "cwd": self.root, "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": "done", "background_tasks": [], "session_crons": []});
        let r = self.hook("stop", payload, now).expect("a block");
        r["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_string()
    }

    fn session_start(&self, now: &str) -> String {
        let payload = json!({"session_id": "s1", "cwd": self.root, "hook_event_name": "SessionStart", "source": "startup"});
        self.context("session-start", payload, now)
    }

    fn fired(&self) -> Vec<Value> {
        journal_events(&self.root.join(".abcd/.work.local/journal.jsonl"), "checklist.promise_fired")
    }
}

fn journal_events(path: &Path, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == kind)
        .collect()
}

fn pr7(state: &str) -> String {
    format!(r#"[{{"number":7,"headRefName":"feat/parser","state":"{state}","mergeStateStatus":"CLEAN","statusCheckRollup":[]}}]"#)
}

/// The render's working section, its item lines in order.
fn working_lines(render: &str) -> Vec<&str> {
    render.lines().skip_while(|l| !l.starts_with("working (")).skip(1).take_while(|l| !l.ends_with("):")).collect()
}

#[test]
fn a_promise_on_a_merged_pull_request_fires_once_is_rendered_first_and_is_owed_at_stop() {
    let repo = Repo::new();
    repo.must(&["checklist", "add", "Land the parser", "--waits-on", "pr:7", "--promise", "pr:7 merged => add the wrapper"]);
    repo.must(&["checklist", "add", "Write the docs"]);
    repo.stub_gh(&pr7("OPEN"));
    repo.must(&["mode", "autonomous", "--until", "+8h"]);

    // Open: nothing fires; the listing is cached with its time.
    let reason = repo.stop_reason();
    assert!(!reason.contains("add the wrapper"), "{reason}");
    assert!(repo.fired().is_empty());
    let cache: Value = serde_json::from_slice(&std::fs::read(repo.root.join(".abcd/.work.local/forge-listing.json")).unwrap()).unwrap();
    assert_eq!(cache["listed_at"], NOW);
    assert_eq!(cache["pull_requests"][0]["state"], "open");

    // Merged (read once the kept listing is past its 60 s reuse): the promise fires at
    // this stop, and what it became is owed.
    repo.stub_gh(&pr7("MERGED"));
    let reason = repo.stop_reason_at(A_MINUTE_LATER);
    assert!(reason.contains("checklist item 3 (add the wrapper) is working"), "{reason}");
    let fired = repo.fired();
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0]["data"]["id"], "1");
    assert_eq!(fired[0]["data"]["trigger"], "pr:7 merged");
    assert_eq!(fired[0]["data"]["item"]["owner_refs"], json!(["pr:7"]));

    // Recorded once, whatever reads it again.
    repo.stop_reason();
    repo.session_start(NOW);
    assert_eq!(repo.fired().len(), 1, "recorded once");

    // Rendered first, though an item added after it is newer.
    repo.must(&["checklist", "add", "Write the tests"]);
    let render = repo.must(&["checklist", "render"]);
    let working = working_lines(&render);
    assert!(working[0].starts_with("3: add the wrapper · promised by 1 (pr:7 merged held)"), "{render}");
    assert!(working[1].starts_with("4: Write the tests"), "{render}");
    assert!(render.contains("promise: pr:7 merged => add the wrapper (fired: 3)"), "{render}");
    let replay = repo.must(&["replay"]);
    assert!(replay.contains("promise of checklist item 1 fired (pr:7 merged): added item 3: add the wrapper"), "{replay}");
}

#[test]
fn a_time_promise_fires_after_its_time_under_the_clock_seam() {
    let repo = Repo::new();
    repo.must(&["checklist", "add", "Start the nightly run", "--promise", "at 2026-12-01T20:00:00Z => check the nightly run"]);
    repo.must(&["checklist", "add", "Write the docs"]);
    let before = repo.session_start("2026-12-01T19:59:59Z");
    assert!(!before.contains("3: check the nightly run"), "{before}");
    assert!(repo.fired().is_empty(), "not before its time");
    let at = repo.session_start("2026-12-01T20:00:00Z");
    assert_eq!(repo.fired().len(), 1, "at its time");
    assert!(working_lines(&at)[0].starts_with("3: check the nightly run"), "rendered first: {at}");
}

#[test]
fn a_pushed_branch_fires_at_the_prompt_a_wake_brings() {
    let repo = Repo::new();
    repo.must(&["checklist", "add", "Push the parser", "--promise", "branch:feat/parser pushed => open the parser PR"]);
    let prompt = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "UserPromptSubmit", "prompt": "wake"});
    assert!(repo.hook("user-prompt-submit", prompt.clone(), NOW).is_none(), "not pushed: nothing to say");
    assert!(repo.fired().is_empty());
    // git's remote-tracking ref is what shows it pushed: no network.
    repo::git(&repo.root, &["update-ref", "refs/remotes/origin/feat/parser", "HEAD"]);
    let context = repo.context("user-prompt-submit", prompt.clone(), NOW);
    assert!(context.contains("abcd: a promise fired; its item is the next work: 2: open the parser PR."), "{context}");
    assert_eq!(repo.fired().len(), 1);
    assert!(repo.hook("user-prompt-submit", prompt, NOW).is_none(), "said once: it fired once");
}

#[test]
fn a_promise_add_or_set_cannot_parse_is_refused_naming_the_grammar() {
    let repo = Repo::new();
    for bad in ["CI green => merge", "pr:7 approved => merge", "at tomorrow => look"] {
        let out = repo.abcd(&["checklist", "add", "x", "--promise", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("a promise reads `<trigger> => <title of the next item>`"), "{bad}: {err}");
    }
    assert!(repo.fired().is_empty());
}

#[test]
fn resume_lists_the_pull_requests_waiting_on_the_lanes_branches_from_the_cached_listing() {
    let repo = Repo::new();
    // A `gh` that would leave a mark if anything called it.
    let calls = repo.bin.join("gh-called");
    std::fs::write(repo.bin.join("gh"), format!("#!/bin/sh\ntouch '{}'\necho '[]'\n", calls.display())).unwrap();
    let mut driver = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = driver.id().to_string();
    repo.must(&["run", "start", "r1", "--lane", "impl", "--driver-pid", &pid]);
    let receipt = repo.root.join("receipt.json");
    repo.must(&["launch", "--run", "r1", "--lane", "impl", "--role", "implementer", "--receipt", receipt.to_str().unwrap(), "--", "true"]);
    // The listing an away stop left: one open pull request on the lane's branch (abcd made
    // the lane's worktree on abcd/r1/impl), one merged, one open on another branch.
    let listing = json!({"listed_at": "2026-12-01T17:30:00Z", "pull_requests": [
        {"number": 12, "head": "abcd/r1/impl", "state": "open", "checks": "pending"},
        {"number": 11, "head": "abcd/r1/impl", "state": "merged", "checks": "green"},
        {"number": 13, "head": "feat/other", "state": "open", "checks": "green"}]});
    std::fs::write(repo.root.join(".abcd/.work.local/forge-listing.json"), listing.to_string()).unwrap();

    let v: Value = serde_json::from_str(&repo.must(&["resume", "--json"])).unwrap();
    let run = v["runs"].as_array().unwrap().iter().find(|r| r["run"] == "r1").unwrap().clone();
    assert_eq!(run["pull_requests"], json!([{"lane": "impl", "number": 12, "branch": "abcd/r1/impl", "checks": "pending"}]), "{v}");
    assert_eq!(run["forge_listed_at"], "2026-12-01T17:30:00Z");
    let text = repo.must(&["resume"]);
    assert!(text.contains("    pull request #12 waiting on abcd/r1/impl (checks: pending)"), "{text}");
    assert!(text.contains("pull requests waiting: 1, as the forge listing of 2026-12-01 17:30 UTC saw them"), "{text}");
    assert!(!calls.exists(), "resume calls no forge");
    let _ = driver.kill();
    let _ = driver.wait();
}

/// Issue 35, owed work in order: the away stop names the working items in the order they
/// were added (not their ids sorted as text, where 10 and 11 come before 2), and an item a
/// promise fires at this very stop comes before everything else owed.
#[test]
fn the_away_stop_names_items_in_the_order_added_and_a_promise_fired_at_this_stop_first() {
    let repo = Repo::new();
    repo.must(&["checklist", "add", "Land the parser", "--waits-on", "pr:7", "--promise", "pr:7 merged => add the wrapper"]);
    for n in 2..=11 {
        repo.must(&["checklist", "add", &format!("Task {n}")]);
    }
    // Item 1 waits on the pull request, so it is not owed; items 2 to 11 are working.
    repo.must(&["mode", "autonomous", "--until", "+8h"]);
    let reason = repo.stop_reason();
    assert!(reason.contains("work is owed (10 items). Next: checklist item 2 (Task 2) is working."), "{reason}");
    assert!(
        reason.contains(
            "Also owed: checklist item 3 (Task 3) is working; checklist item 4 (Task 4) is working; \
             checklist item 5 (Task 5) is working; checklist item 6 (Task 6) is working; and 5 more."
        ),
        "{reason}"
    );

    // The promise fires at this stop: what it became is named next, before the oldest item.
    repo.stub_gh(&pr7("MERGED"));
    let reason = repo.stop_reason_at(A_MINUTE_LATER);
    assert!(reason.contains("work is owed (11 items). Next: checklist item 12 (add the wrapper) is working."), "{reason}");
    assert!(reason.contains("Also owed: checklist item 2 (Task 2) is working; checklist item 3 (Task 3)"), "{reason}");
}
