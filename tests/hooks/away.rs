//! The away mode end to end through the built binary (issue 6, acceptance 4 and 5): real
//! git repositories in temp folders, the clock set through `ABCD_TEST_NOW`, a stub `gh`
//! on PATH that counts its calls, and payloads shaped as the host documents them.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::repo::{self, TestRepo};
use serde_json::{Value, json};

/// The instant every test's clock reads, in UTC so the shown times are fixed.
const NOW: &str = "2026-12-01T18:00:00Z";

struct Repo {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    bin: PathBuf,
    now: String,
}

impl Repo {
    fn new() -> Repo {
        let TestRepo { dir, root, home } = TestRepo::new();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let repo = Repo { home, root, bin, _dir: dir, now: NOW.into() };
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
        std::fs::write(&path, format!("#!/bin/sh\necho called >> '{}'\ncat <<'EOF'\n{answer}\nEOF\n", calls.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn gh_calls(&self) -> usize {
        std::fs::read_to_string(self.bin.join("gh-calls")).map(|t| t.lines().count()).unwrap_or(0)
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
            .env_remove("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")
            .env_remove("CLAUDECODE")
            .env_remove("CODEX_TOOL_CALL_ID");
        cmd
    }

    fn abcd(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn hook(&self, event: &str, payload: Value, env: &[(&str, &str)]) -> Output {
        let mut cmd = self.command(&["hook", event]);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "a hook always exits 0");
        out
    }

    fn stop(&self, active: bool, message: &str, env: &[(&str, &str)]) -> Output {
        let payload = json!({"session_id": "s1", "cwd": self.root, "hook_event_name": "Stop", "stop_hook_active": active,
            "last_assistant_message": message, "background_tasks": [], "session_crons": []});
        self.hook("stop", payload, env)
    }

    fn repository_journal(&self) -> PathBuf {
        let repos = self.home.join("repos");
        let entry = std::fs::read_dir(&repos).unwrap().next().unwrap().unwrap();
        entry.path().join("journal.jsonl")
    }

    fn repository_kinds(&self) -> Vec<String> {
        kinds(&self.repository_journal())
    }
}

fn kinds(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].as_str().unwrap().to_string())
        .collect()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

fn reply(out: &Output) -> Option<Value> {
    let text = stdout(out);
    (!text.trim().is_empty()).then(|| serde_json::from_str(text.trim()).unwrap())
}

fn block_reason(out: &Output) -> String {
    let r = reply(out).unwrap_or_else(|| panic!("expected a block, got nothing; stderr: {}", stderr(out)));
    assert_eq!(r["hookSpecificOutput"]["hookEventName"], "Stop", "a block is the host's Stop feedback: {r}");
    r["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_string()
}

/// An own branch (created through the pre-tool-use recorder, as a session would) with one
/// commit that was never pushed.
fn own_unpushed_branch(repo: &Repo, branch: &str) {
    let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": format!("git switch -c {branch}")}});
    assert_eq!(reply(&repo.hook("pre-tool-use", payload, &[])), None);
    repo.git(&["switch", "-q", "-c", branch]);
    std::fs::write(repo.root.join("parser.rs"), "fn parse() {}\n").unwrap();
    repo.git(&["add", "parser.rs"]);
    repo.git(&["commit", "-q", "-m", "parser"]);
}

#[test]
fn away_the_stop_is_blocked_until_the_person_is_back() {
    let repo = Repo::new();
    own_unpushed_branch(&repo, "feat/x");
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    let set = repo.abcd(&["mode", "autonomous", "--until", "+8h"]);
    assert!(set.status.success(), "{}", stderr(&set));
    assert!(stdout(&set).contains("away until 2026-12-02 02:00"), "{}", stdout(&set));

    // The first stop is blocked, naming the next item and the others.
    let reason = block_reason(&repo.stop(false, "Done for now.", &[]));
    assert!(reason.contains("work is owed (2 items)"), "{reason}");
    assert!(reason.contains("Next: branch feat/x has commits not pushed"), "{reason}");
    assert!(reason.contains("checklist item 1 (Write the parser) is working"), "{reason}");
    assert!(reason.contains("push if your standing instruction allows"), "{reason}");
    assert!(repo.gh_calls() >= 1, "while away the forge is listed");

    // A queued push stays owed without --hold-pushes.
    let q = repo.abcd(&["mode", "queue", "push feat/x"]);
    assert!(q.status.success(), "{}", stderr(&q));
    let reason = block_reason(&repo.stop(true, "Queued the push.", &[]));
    assert!(reason.contains("A push for branch feat/x is already queued, and a queued push stays owed"), "{reason}");

    // The question tool is refused with the one reason, whatever it asks.
    for input in [
        json!({"questions": [{"question": "Which framework?", "header": "F", "options": [{"label": "A"}], "multiSelect": false}]}),
        json!("garbage"),
    ] {
        let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion", "tool_input": input});
        let r = reply(&repo.hook("pre-tool-use", payload, &[])).unwrap();
        let out = &r["hookSpecificOutput"];
        assert_eq!(out["permissionDecision"], "deny");
        let why = out["permissionDecisionReason"].as_str().unwrap();
        assert!(
            why.starts_with("abcd: the person is away, so no question reaches them")
                && why.contains("abcd mode queue")
                && why.contains("abcd decide")
        );
    }
    // A prose question is blocked once per message.
    let reason = block_reason(&repo.stop(true, "Which parser should I use?", &[]));
    assert!(reason.contains("the question your last message ends on reaches no one"), "{reason}");
    let reason = block_reason(&repo.stop(true, "Which parser should I use?", &[]));
    assert!(!reason.contains("reaches no one"), "the same message is not blocked twice for its question: {reason}");

    // The block past the cap (2 here) records the stop, labelled.
    for _ in 0..3 {
        block_reason(&repo.stop(true, "still here", &[("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "2")]));
    }
    assert!(repo.repository_kinds().contains(&"away.stop_recorded".to_string()));
    assert!(
        repo.abcd(&["decide", "Use a hand-written parser", "--grounds", "no new dependency", "--undo", "revert the parser commit"])
            .status
            .success()
    );

    // The prompt hook: the away block to the model, one line to the person.
    let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "UserPromptSubmit", "prompt": "status?"});
    let r = reply(&repo.hook("user-prompt-submit", payload, &[])).unwrap();
    let block = r["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(block.contains("no right to push") && block.contains("Full rules: `abcd mode`."), "{block}");
    let line = r["systemMessage"].as_str().unwrap();
    assert!(line.contains("away until") && line.contains("1 step queued") && line.contains("`abcd mode back`"), "{line}");
    // Bare `abcd mode`, where the block points: the state, then the rules in full.
    let mode = stdout(&repo.abcd(&["mode"]));
    let (status, rules) = mode.split_once('\n').unwrap();
    assert!(status.starts_with("away until 2026-12-02 02:00"), "{mode}");
    assert!(rules.starts_with("abcd: the person is away until") && rules.contains("grants no rights"), "{mode}");
    assert!(rules.contains("a release sign-off") && rules.contains("1 step queued for the person so far"), "{mode}");

    // Back: every queued step, recorded stop and decision, then the mode ends.
    let back = repo.abcd(&["mode", "back"]);
    assert!(back.status.success(), "{}", stderr(&back));
    let text = stdout(&back);
    assert!(text.contains("queued: push feat/x"), "{text}");
    assert!(text.contains("stop: stopped with work owed, possibly forced by the cap"), "{text}");
    assert!(text.contains("decided: Use a hand-written parser (grounds: no new dependency; undo: revert the parser commit)"), "{text}");
    assert!(text.contains("away mode ended by Pat Person"), "{text}");
    let present = stdout(&repo.abcd(&["mode"]));
    assert!(present.starts_with("present") && present.lines().count() == 1, "no rules once back: {present}");
    // Present again: the stop is allowed with one line.
    let r = reply(&repo.stop(false, "Done.", &[])).unwrap();
    assert!(
        r.get("hookSpecificOutput").is_none() && r["systemMessage"].as_str().unwrap().starts_with("abcd: stopped with work owed"),
        "{r}"
    );
}

/// The away record a hook read in full is kept beside the repository journal and answers
/// the next hooks while none of its files changed; a queued step, damage and the person's
/// return show on the very next hook all the same.
#[test]
fn a_kept_away_record_gives_way_to_the_next_change_of_the_record() {
    use abcd::command::hook::away_kept::{AWAY_KEPT_FILE, RACY_WITHIN};
    use std::os::unix::fs::MetadataExt;
    let repo = Repo::new();
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+8h"]).status.success());
    let kept = repo.repository_journal().with_file_name(AWAY_KEPT_FILE);
    let prompt = || {
        let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "UserPromptSubmit", "prompt": "status?"});
        reply(&repo.hook("user-prompt-submit", payload, &[])).unwrap()["systemMessage"].as_str().unwrap_or_default().to_string()
    };
    let settle = || std::thread::sleep(RACY_WITHIN + std::time::Duration::from_millis(100));
    let written = || std::fs::metadata(&kept).map(|m| (m.ino(), m.mtime(), m.mtime_nsec())).unwrap();
    let journal_facts = || std::fs::metadata(repo.repository_journal()).map(|m| (m.ino(), m.len(), m.ctime(), m.ctime_nsec())).unwrap();
    settle();
    let settled = journal_facts();
    block_reason(&repo.stop(false, "Done for now.", &[]));
    let first = written();
    assert_eq!(journal_facts(), settled, "the Stop kept a record it did not change: {:?}", repo.repository_kinds());
    // Taken, not read again: the record's files settled and unchanged since, a read in full
    // would write it anew.
    let line = prompt();
    assert!(line.contains("away until") && line.contains("0 steps queued"), "{line}");
    assert_eq!(written(), first, "the prompt took the kept record");
    // A step queued: the next hook reads it.
    assert!(repo.abcd(&["mode", "queue", "ask for the release sign-off"]).status.success());
    assert!(prompt().contains("1 step queued"));
    // Settled and kept again, then damaged in place: the next hook reads it as damaged.
    settle();
    block_reason(&repo.stop(true, "Done for now.", &[]));
    assert_ne!(written(), first);
    let journal = repo.repository_journal();
    let mut bytes = std::fs::read(&journal).unwrap();
    let second_line = bytes.iter().position(|&b| b == b'\n').unwrap() + 20;
    bytes[second_line] ^= 0x01;
    std::fs::write(&journal, &bytes).unwrap();
    let _ = std::fs::remove_file(journal.with_file_name("state.json"));
    let out = repo.stop(false, "Done.", &[]);
    assert!(reply(&out).unwrap().get("hookSpecificOutput").is_none(), "a damaged record reads as not away");
    assert!(stderr(&out).contains("away record"), "{}", stderr(&out));
    bytes[second_line] ^= 0x01;
    std::fs::write(&journal, &bytes).unwrap();
    // Whole again and settled, then the person is back: the next Stop is allowed.
    settle();
    block_reason(&repo.stop(true, "Done for now.", &[]));
    assert!(repo.abcd(&["mode", "back"]).status.success());
    let r = reply(&repo.stop(false, "Done.", &[])).unwrap();
    assert!(r.get("hookSpecificOutput").is_none(), "present again: {r}");
}

#[test]
fn present_the_stop_is_allowed_with_one_line_and_no_forge_call() {
    let repo = Repo::new();
    own_unpushed_branch(&repo, "feat/y");
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    let r = reply(&repo.stop(false, "Done.", &[])).unwrap();
    assert_eq!(r.as_object().unwrap().len(), 1, "only the person's line: {r}");
    let line = r["systemMessage"].as_str().unwrap();
    assert!(line.starts_with("abcd: stopped with work owed (2 items); next: branch feat/y has commits not pushed"), "{line}");
    assert_eq!(repo.gh_calls(), 0, "no forge call while the person is present");
    // Nothing owed: allowed silently.
    let repo = Repo::new();
    assert_eq!(reply(&repo.stop(false, "Done.", &[])), None);
}

#[test]
fn with_hold_pushes_a_queued_push_of_a_finished_branch_hands_it_back_once() {
    let repo = Repo::new();
    own_unpushed_branch(&repo, "feat/x");
    assert!(repo.abcd(&["mode", "autonomous", "--hold-pushes"]).status.success());
    let reason = block_reason(&repo.stop(false, "ok", &[]));
    assert!(reason.contains("The person has said pushes wait"), "{reason}");
    assert!(repo.abcd(&["mode", "queue", "push feat/x"]).status.success());
    // Handed back: nothing else owed, and no wake, so row 7 asks for the next ready item.
    let reason = block_reason(&repo.stop(true, "queued", &[]));
    assert!(reason.contains("nothing is owed"), "{reason}");
    block_reason(&repo.stop(true, "queued", &[]));
    let handed: Vec<_> = repo.repository_kinds().into_iter().filter(|k| k == "away.handed_back").collect();
    assert_eq!(handed.len(), 1, "recorded once per branch and head");
    let back = stdout(&repo.abcd(&["mode", "back"]));
    assert!(back.contains("handed back: branch feat/x"), "{back}");
}

#[test]
fn a_wake_releases_an_unchanged_set_twice_then_blocks() {
    let repo = Repo::new();
    own_unpushed_branch(&repo, "feat/x");
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let with_cron = |active: bool| {
        let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "Stop", "stop_hook_active": active,
            "last_assistant_message": "waiting", "session_crons": [{"id": "c", "schedule": "*/10 * * * *", "recurring": true, "prompt": "look"}]});
        repo.hook("stop", payload, &[])
    };
    block_reason(&with_cron(false));
    assert_eq!(reply(&with_cron(true)), None, "first wake allows");
    assert_eq!(reply(&with_cron(false)), None, "second wake allows");
    let reason = block_reason(&with_cron(false));
    assert!(reason.contains("has not moved over 2 wakes"), "{reason}");
}

#[test]
fn the_lapsed_window_line_shows_while_anything_is_unread() {
    let mut repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+1h"]).status.success());
    assert!(repo.abcd(&["mode", "queue", "merge pull request 4"]).status.success());
    repo.now = "2026-12-01T20:00:00Z".into();
    let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "UserPromptSubmit", "prompt": "hi"});
    let r = reply(&repo.hook("user-prompt-submit", payload.clone(), &[])).unwrap();
    let line = r["systemMessage"].as_str().unwrap();
    assert!(line.contains("the away window ended at 2026-12-01 19:00") && line.contains("1 step queued"), "{line}");
    assert!(r["hookSpecificOutput"].is_null(), "no away block once lapsed: {r}");
    let refused = repo.abcd(&["mode", "queue", "another"]);
    assert_eq!(refused.status.code(), Some(2), "a lapsed window takes no step");
    let back = stdout(&repo.abcd(&["mode", "back"]));
    assert!(back.contains("queued: merge pull request 4") && back.contains("closed the away window that lapsed"), "{back}");
    // Closed: the first prompt carries the return lists once (issue 23), then nothing.
    let first = reply(&repo.hook("user-prompt-submit", payload.clone(), &[])).unwrap();
    let lists = first["systemMessage"].as_str().unwrap();
    assert!(lists.contains("back from the away window") && lists.contains("merge pull request 4"), "{lists}");
    assert_eq!(reply(&repo.hook("user-prompt-submit", payload, &[])), None, "closed and shown: no line");
}

#[test]
fn session_start_carries_the_away_block_on_every_source() {
    let repo = Repo::new();
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let start = |source: &str| {
        let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "SessionStart", "source": source});
        let r = reply(&repo.hook("session-start", payload, &[])).unwrap();
        common::unmarked(r["hookSpecificOutput"]["additionalContext"].as_str().unwrap())
    };
    let mut last = String::new();
    for source in ["startup", "resume", "clear", "compact"] {
        let context = start(source);
        assert!(context.starts_with("abcd: the person is away until"), "{source}: {context}");
        assert!(context.contains("\n1: Write the parser\n"), "{source}: the checklist follows");
        assert!(context.chars().count() <= 9_500);
        last = context;
    }
    // The first start away rendered the checklist for the budget the away block leaves and
    // kept that render: the next starts read it (and not `checklist.json`), the same text.
    let checklist = repo.root.join(".abcd/.work.local/checklist.json");
    std::fs::remove_file(&checklist).unwrap();
    assert_eq!(start("startup"), last);
    assert!(!checklist.exists(), "read from the render kept for the away budget");
}

#[test]
fn until_in_the_past_or_past_seven_days_is_refused_with_nothing_written() {
    let repo = Repo::new();
    for until in ["2026-12-01T17:59:00Z", "2026-12-08T18:00:01Z", "yesterday"] {
        let out = repo.abcd(&["mode", "autonomous", "--until", until]);
        assert_eq!(out.status.code(), Some(2), "{until}");
        assert!(stderr(&out).contains("nothing was written"), "{}", stderr(&out));
    }
    assert!(!repo.home.join("repos").exists() || repo.repository_kinds().is_empty(), "nothing was written");
    assert!(repo.abcd(&["mode", "autonomous", "--until", "2026-12-08T18:00:00Z"]).status.success(), "exactly 7 days is allowed");
    let long = "x".repeat(501);
    assert_eq!(repo.abcd(&["mode", "queue", &long]).status.code(), Some(2));
    assert!(repo.abcd(&["mode", "queue", &"x".repeat(500)]).status.success());
}

#[test]
fn a_session_id_outside_the_rule_allows_with_a_stderr_line() {
    let repo = Repo::new();
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let before = kinds(&repo.root.join(".abcd/.work.local/journal.jsonl")).len();
    for id in ["../etc", "a b", &"x".repeat(129)] {
        let payload = json!({"session_id": id, "cwd": repo.root, "hook_event_name": "Stop", "stop_hook_active": false});
        let out = repo.hook("stop", payload, &[]);
        assert_eq!(reply(&out), None, "allowed");
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).contains("session id"));
    }
    assert_eq!(kinds(&repo.root.join(".abcd/.work.local/journal.jsonl")).len(), before, "nothing recorded");
}

#[test]
fn a_corrupt_or_foreign_writable_away_journal_is_not_away_for_hooks_and_refused_by_verbs() {
    for damage in ["corrupt", "writable-by-others"] {
        let repo = Repo::new();
        assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
        assert!(repo.abcd(&["mode", "autonomous"]).status.success());
        assert!(repo.abcd(&["mode", "queue", "step one"]).status.success());
        assert!(repo.abcd(&["mode", "queue", "step two"]).status.success());
        let path = repo.repository_journal();
        match damage {
            "corrupt" => {
                let mut bytes = std::fs::read(&path).unwrap();
                let second_line = bytes.iter().position(|&b| b == b'\n').unwrap() + 20;
                bytes[second_line] ^= 0x01;
                std::fs::write(&path, bytes).unwrap();
                let _ = std::fs::remove_file(path.with_file_name("state.json"));
            }
            _ => {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
            }
        }
        let out = repo.stop(false, "Done.", &[]);
        let r = reply(&out).unwrap();
        assert!(r.get("hookSpecificOutput").is_none(), "{damage}: read as not away, so the present rows: {r}");
        assert!(stderr(&out).contains("away record"), "{damage}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1);
        for verb in [vec!["mode"], vec!["mode", "queue", "x"], vec!["mode", "back"]] {
            let out = repo.abcd(&verb);
            assert_eq!(out.status.code(), Some(2), "{damage} {verb:?}: {}", stderr(&out));
            assert!(stderr(&out).contains(&path.display().to_string()), "{damage} {verb:?} names the file: {}", stderr(&out));
        }
    }
}

#[test]
fn racing_queue_calls_keep_every_step() {
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let children: Vec<_> =
        (0..6).map(|i| repo.command(&["mode", "queue", &format!("step {i}")]).stdout(Stdio::null()).spawn().unwrap()).collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let out = stdout(&repo.abcd(&["mode", "--json"]));
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let mut steps: Vec<String> = v["window"]["queue"].as_array().unwrap().iter().map(|q| q["step"].as_str().unwrap().to_string()).collect();
    steps.sort();
    assert_eq!(steps, (0..6).map(|i| format!("step {i}")).collect::<Vec<_>>());
}

#[test]
fn a_stop_after_mode_back_does_not_turn_the_mode_back_on() {
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    assert!(repo.abcd(&["mode", "back"]).status.success());
    let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "StopFailure", "error": "rate_limit"});
    assert_eq!(reply(&repo.hook("stop-failure", payload, &[])), None);
    block_or_allow_present(&repo);
    assert!(stdout(&repo.abcd(&["mode"])).starts_with("present"));
    assert!(!repo.repository_kinds().contains(&"away.stop_recorded".to_string()));
}

fn block_or_allow_present(repo: &Repo) {
    let out = repo.stop(false, "Done.", &[]);
    assert!(reply(&out).is_none_or(|r| r.get("hookSpecificOutput").is_none()));
}

#[test]
fn stop_failure_while_away_records_the_error_type() {
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    for error in ["rate_limit", "Not A Type!"] {
        let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "StopFailure", "error": error});
        assert_eq!(reply(&repo.hook("stop-failure", payload, &[])), None);
    }
    let back = stdout(&repo.abcd(&["mode", "back"]));
    assert!(back.contains("stop: stopped on an API error (rate_limit)"), "{back}");
    assert!(back.contains("stop: stopped on an API error (unknown)"), "{back}");
}

#[test]
fn the_ninth_block_in_a_row_records_the_stop_and_the_hosts_variable_moves_the_cap() {
    for (cap, blocks_before_record) in [(None, 8), (Some("3"), 3)] {
        let repo = Repo::new();
        assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
        assert!(repo.abcd(&["mode", "autonomous"]).status.success());
        let env: Vec<(&str, &str)> = cap.map(|c| ("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", c)).into_iter().collect();
        let recorded = || repo.repository_kinds().iter().filter(|k| *k == "away.stop_recorded").count();
        for i in 0..blocks_before_record {
            block_reason(&repo.stop(i > 0, "working", &env));
            assert_eq!(recorded(), 0, "cap {cap:?}: block {} records nothing", i + 1);
        }
        block_reason(&repo.stop(true, "working", &env));
        assert_eq!(recorded(), 1, "cap {cap:?}: the block past the cap records the stop");
    }
}

#[test]
fn an_empty_abcd_gh_lists_no_forge_while_away() {
    let repo = Repo::new();
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let out = repo.stop(false, "done", &[("ABCD_GH", "")]);
    block_reason(&out);
    assert_eq!(repo.gh_calls(), 0);
    assert!(stderr(&out).is_empty(), "no note: {}", stderr(&out));
    block_reason(&repo.stop(true, "done", &[]));
    assert_eq!(repo.gh_calls(), 1, "unset, the gh on PATH is listed once per stop");
}

#[test]
fn a_working_copy_lock_not_had_allows_the_stop_loudly() {
    let repo = Repo::new();
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let lock = repo.root.join(".abcd/.work.local/journal.jsonl.lock");
    let mut holder = Command::new("flock").arg("-x").arg(&lock).args(["sleep", "30"]).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = repo.stop(false, "Shall I?", &[]);
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(reply(&out), None, "the verdict's state cannot be saved, so the stop is allowed");
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn a_fresh_checkout_with_no_journal_yet_is_judged_not_allowed() {
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    assert!(!repo.root.join(".abcd/.work.local/journal.jsonl").exists());
    let reason = block_reason(&repo.stop(false, "Nothing to do.", &[]));
    assert!(reason.contains("nothing is owed"), "row 7: {reason}");
}

#[test]
fn a_forged_away_cache_is_not_believed() {
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    assert!(repo.abcd(&["mode", "queue", "merge pull request 4"]).status.success());
    let state_path = repo.repository_journal().with_file_name("state.json");
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let forge = |file: &mut Value, set_by: &str, step: &str| {
        file["state"]["away"]["window"]["set_by"] = json!(set_by);
        file["state"]["away"]["window"]["queue"][0]["step"] = json!(step);
        *file = serde_json::from_slice(&abcd::store::projection::seal_state_json(file)).unwrap();
    };
    // A secret in what the record shows: not believed, whatever the digest says.
    forge(&mut file, "Pat Person", &format!("push with {token}"));
    std::fs::write(&state_path, abcd::store::projection::seal_state_json(&file)).unwrap();
    let shown = stdout(&repo.abcd(&["mode", "--json"]));
    assert!(!shown.contains("ghp_0123"), "{shown}");
    assert!(shown.contains("merge pull request 4"), "re-folded from the journal: {shown}");
    // A cache others can write: not believed either.
    forge(&mut file, "Mallory", "merge pull request 4");
    std::fs::write(&state_path, abcd::store::projection::seal_state_json(&file)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&state_path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let shown = stdout(&repo.abcd(&["mode", "--json"]));
    assert!(!shown.contains("Mallory") && shown.contains("Pat Person"), "{shown}");
}

#[test]
fn a_background_task_never_counts_as_a_wake() {
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "waiting on the build",
        "background_tasks": [{"id": "t1", "type": "shell", "status": "running", "description": "build", "command": "make"}],
        "session_crons": []});
    let reason = block_reason(&repo.hook("stop", payload, &[]));
    assert!(reason.contains("nothing is owed") && reason.contains("schedule a wake"), "row 7 despite the running task: {reason}");
}

#[test]
fn a_linked_worktree_on_an_orphan_branch_shares_the_repositorys_record() {
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let linked = repo.root.parent().unwrap().join("pages");
    repo.git(&["worktree", "add", "-q", "--orphan", "-b", "gh-pages", linked.to_str().unwrap()]);
    let git_in = |args: &[&str]| {
        repo::git(&linked, args);
    };
    std::fs::write(linked.join("index.html"), "<p>hi</p>\n").unwrap();
    git_in(&["add", "index.html"]);
    git_in(&["commit", "-q", "-m", "pages"]);
    let out = repo.command(&["mode"]).current_dir(&linked).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("away until"), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_new_away_window_starts_the_sessions_counts_afresh() {
    let mut repo = Repo::new();
    own_unpushed_branch(&repo, "feat/x");
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let with_cron = |repo: &Repo, active: bool| {
        let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "Stop", "stop_hook_active": active,
            "last_assistant_message": "waiting", "session_crons": [{"id": "c", "schedule": "*/10 * * * *", "recurring": true, "prompt": "look"}]});
        repo.hook("stop", payload, &[])
    };
    block_reason(&with_cron(&repo, false));
    assert_eq!(reply(&with_cron(&repo, true)), None, "a wake releases the unchanged set");
    // Back, and away again with no present stop between: the new window's first stop with
    // the same owed set is its first block (row 2), not a release by the old window's wake.
    assert!(repo.abcd(&["mode", "back"]).status.success());
    repo.now = "2026-12-01T18:30:00Z".into();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let reason = block_reason(&with_cron(&repo, false));
    assert!(reason.contains("work is owed (1 item)"), "row 2 of the new window: {reason}");
}

/// Issue 35: the away mode is the person's act. PreToolUse refuses every route to setting
/// or ending it that a Bash command line shows, and every shell write into abcd's own files
/// (the away store is in the home store); what merely mentions the verb, the other verbs,
/// and writes to a lane's own source stay allowed. The refusal never echoes the command.
#[test]
fn away_no_agent_route_to_setting_or_ending_the_mode_passes_pre_tool_use() {
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    std::fs::write(repo.root.join("go.sh"), "#!/bin/sh\nset -e\nabcd mode back\n").unwrap();
    std::fs::write(repo.root.join("ok.sh"), "#!/bin/sh\nabcd checklist\n").unwrap();
    let lane = repo.home.join("lanes/wc-0123/r1/impl");
    std::fs::create_dir_all(lane.join("src")).unwrap();
    std::fs::write(lane.join(".git"), "gitdir: /nowhere\n").unwrap();
    let home = repo.home.display().to_string();
    let away_store = format!("{home}/repos/x/away.json");
    let git_binary = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH");
    let refused = [
        "abcd mode autonomous --until +8h".to_string(),
        "abcd mode back".into(),
        "/usr/local/bin/abcd mode back".into(),
        "./target/release/abcd mode autonomous".into(),
        "cargo run --release -- mode back".into(),
        "cargo run -q --bin abcd -- mode autonomous".into(),
        "sh -c 'abcd mode autonomous'".into(),
        "bash -lc \"abcd mode back\"".into(),
        "env X=1 abcd mode back".into(),
        "env -S 'abcd mode back'".into(),
        "X=1 Y=2 abcd mode back".into(),
        "nohup abcd mode back &".into(),
        "timeout 10s abcd mode back".into(),
        "echo ok && abcd --json mode back".into(),
        "echo $(abcd mode back)".into(),
        "echo `abcd mode back`".into(),
        "eval 'abcd mode back'".into(),
        "sh go.sh".into(),
        "./go.sh".into(),
        "bash -c 'sh -c \"abcd mode back\"'".into(),
        format!("echo '{{}}' >> {away_store}"),
        "echo x > $ABCD_HOME/repos/x/away.json".into(),
        format!("tee -a {away_store} < /dev/null"),
        format!("rm -f {away_store}"),
        format!("cp /tmp/x {away_store}"),
        "echo x > .abcd/.work.local/checklist.json".into(),
        "sed -i s/a/b/ .abcd/.work.local/journal.jsonl".into(),
    ];
    let allowed = [
        "abcd mode".to_string(),
        "abcd mode queue 'push feat/x'".into(),
        "abcd decide 'x' --grounds g --undo u".into(),
        "abcd checklist add 'Write the parser'".into(),
        "abcd replay".into(),
        "echo \"abcd mode autonomous\"".into(),
        "git commit -m \"abcd mode back\"".into(),
        "grep -r 'abcd mode back' docs".into(),
        "sh ok.sh".into(),
        format!("echo fn main() {{}} > {}/src/main.rs", lane.display()),
        format!("cp /tmp/x {}/src/lib.rs", lane.display()),
        format!("cat {away_store}"),
        "cp .abcd/.work.local/checklist.json /tmp/copy.json".into(),
        // A program binary named by its path is no script to read (its bytes hold
        // "abcdef…" and "mode" as any binary may).
        format!("{} status", git_binary.display()),
    ];
    let pre = |command: &str| {
        let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}});
        reply(&repo.hook("pre-tool-use", payload, &[]))
    };
    for command in &refused {
        let r = pre(command).unwrap_or_else(|| panic!("allowed: {command}"));
        let out = &r["hookSpecificOutput"];
        assert_eq!(out["permissionDecision"], "deny", "{command}");
        let why = out["permissionDecisionReason"].as_str().unwrap();
        assert!(why.starts_with("abcd refuses this command") && why.contains("abcd mode queue"), "{command}: {why}");
        assert!(command.starts_with("abcd mode") || !why.contains(command.as_str()), "the command is not echoed: {why}");
    }
    for command in &allowed {
        let r = pre(command);
        assert!(r.as_ref().is_none_or(|r| r["hookSpecificOutput"].get("permissionDecision").is_none()), "refused: {command}: {r:?}");
    }
    assert!(refused.len() + allowed.len() >= 20);
}

/// Issue 35: the verb itself refuses in a process a host's tool started (Claude Code marks
/// every process it starts with `CLAUDECODE=1`, Codex its shell tool's with
/// `CODEX_TOOL_CALL_ID`), whatever route led there; nothing is written, and the refusal
/// says what the agent does instead. Another value of the mark is no mark.
#[test]
fn the_mode_verbs_refuse_in_a_process_a_hosts_tool_started() {
    let repo = Repo::new();
    let journal = repo.root.join(".abcd/.work.local/journal.jsonl");
    for (name, value) in [("CLAUDECODE", "1"), ("CODEX_TOOL_CALL_ID", "call_7")] {
        let before = std::fs::read(&journal).unwrap_or_default();
        let out = repo.command(&["mode", "autonomous", "--until", "+8h"]).env(name, value).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("only the person sets or ends the away mode") && err.contains("abcd mode queue") && err.contains(name),
            "{err}"
        );
        assert_eq!(std::fs::read(&journal).unwrap_or_default(), before, "{name}: nothing written");
        assert!(stdout(&repo.abcd(&["mode"])).starts_with("present"), "{name}");
    }
    let out = repo.command(&["mode", "autonomous"]).env("CLAUDECODE", "0").output().unwrap();
    assert!(out.status.success(), "CLAUDECODE=0 is no mark: {}", stderr(&out));
    let out = repo.command(&["mode", "back"]).env("CLAUDECODE", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stdout(&repo.abcd(&["mode"])).starts_with("away"), "still away: {}", stdout(&repo.abcd(&["mode"])));
    // The agent's own verbs stay open to it.
    assert!(repo.command(&["mode", "queue", "push feat/x"]).env("CLAUDECODE", "1").output().unwrap().status.success());
    assert!(repo.abcd(&["mode", "back"]).status.success(), "the person's own terminal");
}

/// The worktree abcd would make for lane `implementer` of loop `run`: a linked worktree of
/// the repository at `<home>/lanes/<repo>/<run>/implementer`, on the lane's branch, with an
/// own branch `feat/x` made there through the pre-tool-use recorder and one commit never
/// pushed.
fn loop_lane(repo: &Repo, run: &str) -> PathBuf {
    let lane = repo.home.join(format!("lanes/repo-0123/{run}/implementer"));
    std::fs::create_dir_all(lane.parent().unwrap()).unwrap();
    repo.git(&["worktree", "add", "-q", "-b", &format!("abcd/{run}/implementer"), lane.to_str().unwrap()]);
    let payload = json!({"session_id": "s1", "cwd": lane, "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "git switch -c feat/x"}});
    assert_eq!(reply(&repo.hook("pre-tool-use", payload, &[])), None);
    repo::git(&lane, &["switch", "-q", "-c", "feat/x"]);
    std::fs::write(lane.join("parser.rs"), "fn parse() {}\n").unwrap();
    repo::git(&lane, &["add", "parser.rs"]);
    repo::git(&lane, &["commit", "-q", "-m", "parser"]);
    lane
}

impl Repo {
    /// A Stop of session `s1` in `dir`, as the host sends it.
    fn stop_in(&self, dir: &Path, message: &str, env: &[(&str, &str)]) -> Output {
        let payload = json!({"session_id": "s1", "cwd": dir, "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": message, "background_tasks": [], "session_crons": []});
        self.hook("stop", payload, env)
    }
}

fn rows_in(dir: &Path) -> Vec<String> {
    let journal = std::fs::read_to_string(dir.join(".abcd/.work.local/journal.jsonl")).unwrap_or_default();
    journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == "session.judged")
        .map(|e| e["data"]["row"].as_str().unwrap().to_string())
        .collect()
}

/// A loop turn's agent ends its turn with its reply: the loop driver takes the next step, so
/// while away its Stop in the loop's own worktree is allowed (row `loop_turn`) whatever is
/// owed, where a session of its own would be blocked (issue 33's night: the real client's
/// implementer was held by row 7 until the host's cap). A question is the turn's reply too:
/// the driver hands it to the other agent, never to the person. A malformed loop
/// environment is no loop turn.
#[test]
fn away_a_loop_turns_stop_is_allowed_for_the_driver_to_take_the_next_step() {
    let repo = Repo::new();
    let lane = loop_lane(&repo, "night");
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let turn = loop_env("3", "feedback");
    let out = repo.stop_in(&lane, "Added the doc comment.", &turn);
    assert_eq!(reply(&out), None, "allowed, nothing printed: {}", stdout(&out));
    assert_eq!(rows_in(&lane).last().map(String::as_str), Some("loop_turn"));
    assert_eq!(reply(&repo.stop_in(&lane, "Could you add a doc comment to greet?", &loop_env("2", "review"))), None);
    // Without the loop's environment, or with a malformed one, the same stop is blocked.
    let reason = block_reason(&repo.stop_in(&lane, "Added the doc comment.", &[]));
    assert!(reason.contains("feat/x"), "{reason}");
    let mut bad = turn;
    bad[1] = ("ABCD_LOOP_TURN", "three");
    assert!(block_reason(&repo.stop_in(&lane, "Added the doc comment.", &bad)).contains("feat/x"));
    // The environment of another loop's turn is no turn of this one.
    let mut other = turn;
    other[0] = ("ABCD_LOOP_RUN", "day");
    assert!(block_reason(&repo.stop_in(&lane, "Added the doc comment.", &other)).contains("feat/x"));
}

fn loop_env(turn: &'static str, step: &'static str) -> [(&'static str, &'static str); 5] {
    [("ABCD_LOOP_RUN", "night"), ("ABCD_LOOP_TURN", turn), ("ABCD_LOOP_PHASE", "1"), ("ABCD_LOOP_ROUND", "1"), ("ABCD_LOOP_STEP", step)]
}

/// `abcd replay` words every row of the stop table: a loop turn's stop while away is an
/// away stop, never "present, nothing owed" (the audit's fallback for rows without words).
#[test]
fn replay_words_a_loop_turns_stop_as_away() {
    let repo = Repo::new();
    let lane = loop_lane(&repo, "night");
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    assert_eq!(reply(&repo.stop_in(&lane, "Added the doc comment.", &loop_env("3", "feedback"))), None);
    let audit = stdout(&repo.command(&["replay"]).current_dir(&lane).output().unwrap());
    let line = audit.lines().find(|l| l.contains("stop judged for session s1")).unwrap_or_else(|| panic!("{audit}"));
    assert!(!line.contains("present"), "the person was away: {line}");
    assert!(line.contains("away, a loop turn's end"), "{line}");
}

/// The allowance needs the loop's own worktree, not only the environment: a session in the person's own checkout,
/// where no loop named `night` was ever started (no loop record, no run in the ledger, not a
/// lane worktree), is judged a loop turn because ABCD_LOOP_* reached it (inherited from a
/// loop agent's Bash tool, a nested `claude -p`, an `abcd launch` made from a loop turn, or a
/// shell where someone exported them). Its owed work is then dropped silently while away.
#[test]
fn away_a_loop_environment_naming_no_loop_here_is_no_loop_turn() {
    let repo = Repo::new();
    own_unpushed_branch(&repo, "feat/x");
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let out = repo.stop(false, "Done for tonight.", &loop_env("3", "feedback"));
    let journal = std::fs::read_to_string(repo.root.join(".abcd/.work.local/journal.jsonl")).unwrap();
    let rows: Vec<String> = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == "session.judged")
        .map(|e| e["data"]["row"].as_str().unwrap().to_string())
        .collect();
    assert_ne!(rows.last().map(String::as_str), Some("loop_turn"), "no loop `night` runs here: {rows:?}");
    assert!(block_reason(&out).contains("feat/x"));
}

/// A reviewer's reply is addressed to the implementer, and the driver hands the reviewer's
/// last message on as the feedback. A review that ends in a question ("Could you …?") is
/// rerouted by row 1 as if it were asked of the person: the reviewer is kept working, told to
/// queue or decide for the person, and whatever it says next replaces the feedback the
/// implementer receives.
#[test]
fn away_a_reviewers_question_to_the_implementer_is_its_reply() {
    let repo = Repo::new();
    let lane = loop_lane(&repo, "night");
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let out = repo.stop_in(&lane, "greet has no doc comment. Could you add one?", &loop_env("2", "review"));
    assert_eq!(reply(&out), None, "the review is the turn's reply: {}", stdout(&out));
}

/// docs/loop.md: "What is owed stays owed for the loop's next turns and for `abcd mode
/// back`". A loop turn's stop with work owed records nothing (no `away.stop_recorded`), so
/// when the loop ends or pauses with work owed, `abcd mode back` says nothing of it; before
/// the allowance the turn was held to the cap and recorded with its next item.
#[test]
fn mode_back_names_the_work_a_loop_turn_left_owed() {
    let repo = Repo::new();
    let lane = loop_lane(&repo, "night");
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    assert_eq!(reply(&repo.stop_in(&lane, "Phase 1 implemented.", &loop_env("5", "advance"))), None);
    let back = stdout(&repo.abcd(&["mode", "back"]));
    assert!(back.contains("feat/x"), "the owed work the night left: {back}");
}

// ---------------------------------------------------------------------------------------
// When the person must hear (issue 23, acceptance 6; docs/notify.md)
// ---------------------------------------------------------------------------------------

/// Polls `done` until it holds, failing after a generous while (a rule, not a timing).
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !done() {
        assert!(std::time::Instant::now() < until, "still waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

impl Repo {
    /// A notify script in the test's bin folder; `--notify` runs it with the summary.
    fn notify_script(&self, body: &str) -> String {
        let path = self.bin.join("notify.sh");
        std::fs::write(&path, format!("#!/bin/sh\nd=\"$(dirname \"$0\")\"\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        format!("{} \"$1\"", path.display())
    }

    fn stop_failure(&self, error: &str, env: &[(&str, &str)]) -> Output {
        let payload = json!({"session_id": "s1", "cwd": self.root, "hook_event_name": "StopFailure", "error": error});
        let out = self.hook("stop-failure", payload, env);
        assert_eq!(reply(&out), None, "StopFailure has no output");
        out
    }

    /// The repository journal's events of `kind`'s data (none before the journal exists).
    fn data_of(&self, kind: &str) -> Vec<Value> {
        let Some(entry) = std::fs::read_dir(self.home.join("repos")).ok().and_then(|mut d| d.next()) else { return Vec::new() };
        std::fs::read_to_string(entry.unwrap().path().join("journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["kind"] == kind)
            .map(|e| e["data"].clone())
            .collect()
    }

    fn notified(&self) -> Vec<Value> {
        self.data_of("away.notified")
    }

    fn notify_log(&self) -> String {
        std::fs::read_to_string(self.repository_journal().parent().unwrap().join("notify.log")).unwrap_or_default()
    }

    fn place(&self) -> String {
        self.root.file_name().unwrap().to_string_lossy().into_owned()
    }
}

#[test]
fn the_notify_command_runs_once_for_a_stop_failure_while_away_and_never_while_present() {
    let repo = Repo::new();
    let command = repo.notify_script(r#"printf '%s\n' "$1" >> "$d/calls""#);
    let calls = repo.bin.join("calls");
    // Present: a rate limit notifies no one.
    repo.stop_failure("rate_limit", &[]);
    assert!(repo.notified().is_empty());
    // Away without a command: recorded as before, nothing run.
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    repo.stop_failure("rate_limit", &[]);
    assert!(repo.notified().is_empty());

    let out = repo.abcd(&["mode", "autonomous", "--notify", &command]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("when you must hear, abcd runs"), "{}", stdout(&out));
    let shown = stdout(&repo.abcd(&["mode"]));
    assert!(shown.contains(&format!("when you must hear, abcd runs: sh -c '{command}'")), "{shown}");
    let summary = format!("abcd: a turn ended on a rate or usage limit in {}: rate_limit", repo.place());
    repo.stop_failure("rate_limit", &[]);
    wait_for("the notify command's line", || std::fs::read_to_string(&calls).is_ok_and(|t| !t.is_empty()));
    assert_eq!(std::fs::read_to_string(&calls).unwrap(), format!("{summary}\n"), "the summary is its one argument");
    let recorded = json!({"kind": "stop_failure", "at": NOW, "summary": summary, "working_copy": repo.root.display().to_string()});
    assert_eq!(repo.notified(), vec![recorded]);
    // Within the hour (the test clock stands still): recorded as a stop, not notified again.
    repo.stop_failure("rate_limit", &[]);
    repo.stop_failure("billing_error", &[]);
    // Not a limit: no notification.
    repo.stop_failure("server_error", &[]);
    assert_eq!(repo.notified().len(), 1, "once per kind per hour");
    // An hour later it is due again.
    let later = Repo { now: "2026-12-01T19:00:00Z".into(), ..repo };
    later.stop_failure("billing_error", &[]);
    assert_eq!(later.notified().len(), 2);
    wait_for("the second run", || std::fs::read_to_string(&calls).is_ok_and(|t| t.lines().count() == 2));
    assert!(std::fs::read_to_string(&calls).unwrap().ends_with(": billing_error\n"));

    let back = stdout(&later.abcd(&["mode", "back"]));
    assert!(back.contains(&format!("notified you at 2026-12-01 18:00 UTC: {summary}")), "{back}");
    // Present again: nothing.
    later.stop_failure("rate_limit", &[]);
    assert_eq!(later.notified().len(), 2);
    let audit = stdout(&later.abcd(&["replay", "--repo"]));
    assert!(audit.contains("with a notify command"), "{audit}");
    let runs = audit.lines().filter(|l| l.contains("the person's notify command was run (a turn ended on a rate or usage limit)")).count();
    assert_eq!(runs, 2, "{audit}");
}

#[test]
fn the_hook_does_not_wait_for_the_notify_command() {
    let repo = Repo::new();
    let command =
        repo.notify_script(r#"touch "$d/started"; while [ ! -e "$d/release" ]; do sleep 0.02; done; printf '%s\n' "$1" > "$d/got""#);
    assert!(repo.abcd(&["mode", "autonomous", "--notify", &command]).status.success());
    repo.stop_failure("rate_limit", &[]);
    // The hook has answered; the command runs on and cannot end until released.
    wait_for("the command to start", || repo.bin.join("started").exists());
    assert!(!repo.bin.join("got").exists());
    assert_eq!(repo.notify_log(), "", "its supervisor is still waiting on it");
    std::fs::write(repo.bin.join("release"), "").unwrap();
    wait_for("the command to finish", || repo.notify_log().contains("exited with 0"));
    assert!(std::fs::read_to_string(repo.bin.join("got")).unwrap().contains("rate or usage limit"));
}

#[test]
fn a_hanging_notify_command_is_killed_at_its_bound() {
    let repo = Repo::new();
    let command = repo.notify_script(r#"echo $$ > "$d/pid.tmp"; mv "$d/pid.tmp" "$d/pid"; exec sleep 600"#);
    assert!(repo.abcd(&["mode", "autonomous", "--notify", &command]).status.success());
    repo.stop_failure("rate_limit", &[("ABCD_TEST_NOTIFY_BOUND_MS", "300")]);
    wait_for("the supervisor's line", || !repo.notify_log().is_empty());
    assert!(repo.notify_log().contains("still running at its bound of 300 ms and was killed"), "{}", repo.notify_log());
    let pid = std::fs::read_to_string(repo.bin.join("pid")).unwrap().trim().to_string();
    let stat = std::path::PathBuf::from(format!("/proc/{pid}/stat"));
    // Killed: gone, or dead and waiting for init to reap it.
    wait_for("the killed command to be gone", || {
        std::fs::read_to_string(&stat)
            .map_or(true, |s| s.rsplit(')').next().is_some_and(|rest| matches!(rest.trim_start().chars().next(), Some('Z' | 'X' | 'x'))))
    });
}

#[test]
fn a_stop_forced_by_the_cap_and_every_item_handed_back_notify_by_kind() {
    let repo = Repo::new();
    let command = repo.notify_script(r#"printf '%s\n' "$1" >> "$d/calls""#);
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    assert!(repo.abcd(&["mode", "autonomous", "--notify", &command]).status.success());
    let env = [("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "2")];
    block_reason(&repo.stop(false, "working", &env));
    block_reason(&repo.stop(true, "working", &env));
    assert!(repo.notified().is_empty(), "blocks within the cap notify no one");
    block_reason(&repo.stop(true, "working", &env));
    let kinds: Vec<Value> = repo.notified().iter().map(|n| n["kind"].clone()).collect();
    assert_eq!(kinds, [json!("cap_forced")]);
    let summary = repo.notified()[0]["summary"].as_str().unwrap().to_string();
    assert!(summary.contains("Write the parser"), "the item's title, no more: {summary}");
    block_reason(&repo.stop(true, "working", &env));
    assert_eq!(repo.notified().len(), 1, "once per kind per hour: {:?}", repo.notified());

    // Every owed item handed back to the person: the third kind.
    let repo = Repo::new();
    let command = repo.notify_script(r#"printf '%s\n' "$1" >> "$d/calls""#);
    own_unpushed_branch(&repo, "feat/x");
    assert!(repo.abcd(&["mode", "autonomous", "--hold-pushes", "--notify", &command]).status.success());
    block_reason(&repo.stop(false, "ok", &[]));
    assert!(repo.notified().is_empty(), "an item the session can still move notifies no one");
    assert!(repo.abcd(&["mode", "queue", "push feat/x"]).status.success());
    repo.stop(true, "queued", &[]);
    repo.stop(true, "queued", &[]);
    let notified = repo.notified();
    assert_eq!(notified.len(), 1, "{notified:?}");
    assert_eq!(notified[0]["kind"], "all_blocked");
    assert!(notified[0]["summary"].as_str().unwrap().ends_with("1 handed back: feat/x"), "{notified:?}");
    wait_for("the command's line", || std::fs::read_to_string(repo.bin.join("calls")).is_ok_and(|t| t.contains("feat/x")));
}

#[test]
fn a_notify_command_that_looks_like_a_secret_or_is_too_long_is_refused() {
    let repo = Repo::new();
    let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0".repeat(2).get(..36).unwrap());
    for (command, says) in
        [(format!("curl -H 'Authorization: token {token}' https://ntfy.example/abcd"), "script"), ("a".repeat(1001), "at most 1000")]
    {
        let out = repo.abcd(&["mode", "autonomous", "--notify", &command]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("--notify") && err.contains(says) && err.contains("nothing was written"), "{err}");
        assert!(!err.contains(&token), "the secret is never echoed: {err}");
    }
    assert!(repo.data_of("away.set").is_empty());
    assert!(repo.abcd(&["mode", "autonomous", "--notify", &"a".repeat(1000)]).status.success(), "at the limit");
}

#[test]
fn the_hosts_notification_is_recorded_while_away_and_shown_by_mode_back() {
    let repo = Repo::new();
    let notification = |message: &str, kind: &str| {
        let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "Notification",
            "transcript_path": "/nonexistent/t.jsonl", "message": message, "title": "Claude Code", "notification_type": kind});
        let out = repo.hook("notification", payload, &[]);
        assert_eq!(reply(&out), None, "a Notification hook has no output");
        assert_eq!(stderr(&out), "");
    };
    let recorded = || repo.data_of("away.notification_recorded").len();
    // Present: nothing written.
    notification("Claude is waiting for your input", "idle_prompt");
    assert_eq!(recorded(), 0);
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    notification("Claude is waiting\nfor your input", "idle_prompt");
    let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0".repeat(2).get(..36).unwrap());
    notification(&format!("Claude needs your permission to use {token}"), "permission_prompt");
    notification("x", "Not A Type");
    assert_eq!(recorded(), 3);
    let journal = std::fs::read_to_string(repo.repository_journal()).unwrap();
    assert!(!journal.contains(&token), "a message carrying a secret is not kept");
    let back = stdout(&repo.abcd(&["mode", "back"]));
    // The time shown is the line's own (wall clock), as for recorded stops.
    let lines: Vec<&str> = back.lines().filter(|l| l.starts_with("host notification: ")).collect();
    assert_eq!(lines.len(), 3, "{back}");
    assert!(
        lines[0].starts_with("host notification: idle_prompt at ") && lines[0].ends_with(" UTC: Claude is waiting for your input"),
        "{back}"
    );
    assert!(
        lines[1].starts_with("host notification: permission_prompt at ") && lines[1].ends_with(" UTC"),
        "the message is left out: {back}"
    );
    assert!(lines[2].starts_with("host notification: unknown at "), "{back}");
    // Present again, and a window that lapsed: nothing written.
    notification("Claude is waiting for your input", "idle_prompt");
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+1h"]).status.success());
    let lapsed = Repo { now: "2026-12-01T19:00:01Z".into(), ..repo };
    let payload = json!({"session_id": "s1", "cwd": lapsed.root, "hook_event_name": "Notification", "message": "m", "notification_type": "idle_prompt"});
    lapsed.hook("notification", payload, &[]);
    assert_eq!(lapsed.data_of("away.notification_recorded").len(), 3, "recorded only while away");
    let audit = stdout(&lapsed.abcd(&["replay", "--repo"]));
    assert!(audit.contains("host notification recorded while away: permission_prompt"), "{audit}");
}

#[test]
fn the_notify_command_does_not_inherit_the_stop_failure_hooks_ignored_sigterm() {
    let repo = Repo::new();
    let command = repo.notify_script(r#"kill -TERM $$; echo survived > "$d/survived""#);
    assert!(repo.abcd(&["mode", "autonomous", "--notify", &command]).status.success());
    repo.stop_failure("rate_limit", &[]);
    wait_for("the supervisor's line", || !repo.notify_log().is_empty());
    // The script died of the signal (its shell reports 128 + 15, or the signal itself).
    let log = repo.notify_log();
    assert!(log.contains("ended by a signal") || log.contains("exited with 143"), "{log}");
    assert!(!repo.bin.join("survived").exists());
}

#[test]
fn a_failing_notify_command_changes_nothing_for_the_hook() {
    let repo = Repo::new();
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    assert!(repo.abcd(&["mode", "autonomous", "--notify", "/nonexistent/page-me \"$1\""]).status.success());
    let out = repo.stop_failure("rate_limit", &[]);
    assert_eq!(stderr(&out), "", "the hook does not wait to learn how the command ends");
    wait_for("the supervisor's line", || !repo.notify_log().is_empty());
    assert!(repo.notify_log().contains("exited with 127"), "{}", repo.notify_log());
    // The Stop check's answer is the same with the command failing: blocked, work owed.
    let env = [("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "1")];
    block_reason(&repo.stop(false, "working", &env));
    let out = repo.stop(true, "working", &env);
    assert!(block_reason(&out).contains("Write the parser"));
    assert_eq!(repo.notified().len(), 2, "{:?}", repo.notified());
}

/// The supervisor's log starts over once it is past `NOTIFY_LOG_MAX_BYTES`, and not at it.
#[test]
fn the_notify_log_starts_over_past_its_bound_and_not_at_it() {
    use abcd::command::notify::NOTIFY_LOG_MAX_BYTES;
    let repo = Repo::new();
    let command = repo.notify_script("true");
    assert!(repo.abcd(&["mode", "autonomous", "--notify", &command]).status.success());
    let log = repo.repository_journal().parent().unwrap().join("notify.log");
    let old_line = |n: u64| format!("{}\n", "x".repeat(n as usize - 1));
    // At the bound: kept, and the run's line follows it.
    std::fs::write(&log, old_line(NOTIFY_LOG_MAX_BYTES)).unwrap();
    repo.stop_failure("rate_limit", &[]);
    wait_for("the first run's line", || repo.notify_log().contains("exited with 0"));
    assert!(repo.notify_log().starts_with(&old_line(NOTIFY_LOG_MAX_BYTES)), "kept at the bound");
    // One byte past it: started over, so only the new run's line is there.
    std::fs::write(&log, old_line(NOTIFY_LOG_MAX_BYTES + 1)).unwrap();
    let later = Repo { now: "2026-12-01T19:00:00Z".into(), ..repo };
    later.stop_failure("rate_limit", &[]);
    wait_for("the second run's line", || later.notify_log().contains("exited with 0"));
    let text = later.notify_log();
    assert!(!text.contains("xxx") && text.lines().count() == 1, "started over: {} bytes", text.len());
}

// ---------------------------------------------------------------------------------------
// One scan, whole, before any cut (issue 34)
// ---------------------------------------------------------------------------------------

use common::secret_corpus::{corpus, leaked_run};

#[test]
fn a_token_straddling_a_notification_cut_never_reaches_the_journal_or_mode_back() {
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    // The token ends 6 characters past each cut (the 200-character line and the
    // 1,000-character message the host adapter reads): most of its random part is before it.
    for (token, _) in corpus() {
        for cut in [200, 1_000] {
            let before = cut + 6 - token.chars().count();
            let words = format!("{}{}", "w".repeat(before % 5), "word ".repeat(before / 5));
            let message = format!("{words}{token} and more words after it");
            let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "Notification",
                "message": message, "notification_type": "permission_prompt"});
            repo.hook("notification", payload, &[]);
        }
    }
    assert_eq!(repo.data_of("away.notification_recorded").len(), corpus().len() * 2, "each is recorded, its line left out");
    let journal = std::fs::read_to_string(repo.repository_journal()).unwrap();
    let back = stdout(&repo.abcd(&["mode", "back"]));
    for (token, random) in corpus() {
        assert_eq!(leaked_run(&journal, &random), None, "the journal holds part of {token}");
        assert_eq!(leaked_run(&back, &random), None, "mode back shows part of {token}: {back}");
    }
}

#[test]
fn a_token_straddling_the_summary_cut_in_the_folder_name_never_reaches_the_notify_command() {
    for (token, random) in corpus() {
        let mut repo = Repo::new();
        let command = repo.notify_script(r#"printf '%s\n' "$1" >> "$d/calls""#);
        assert!(repo.abcd(&["mode", "autonomous", "--notify", &command]).status.success());
        // The summary's head is `abcd: a turn ended on a rate or usage limit in `: a folder
        // name that puts the token across the 200-character cut.
        let head = "abcd: a turn ended on a rate or usage limit in ".chars().count();
        // A space before the token: a `-` would join it to the run before for the scanner's
        // Slack and GitLab rules, whose bodies hold `-`.
        let name = format!("{} {token}", "p".repeat(200 - 10 - head - 1));
        let moved = repo.root.parent().unwrap().join(&name);
        std::fs::rename(&repo.root, &moved).unwrap();
        repo.root = moved;
        repo.stop_failure("rate_limit", &[]);
        // The command may or may not run: wait for its supervisor's line when it does.
        let ran = !repo.notified().is_empty();
        if ran {
            wait_for("the supervisor's line", || !repo.notify_log().is_empty());
        }
        let calls = std::fs::read_to_string(repo.bin.join("calls")).unwrap_or_default();
        let journal = std::fs::read_to_string(repo.repository_journal()).unwrap_or_default();
        let back = stdout(&repo.abcd(&["mode", "back"]));
        for (what, text) in
            [("the notify command", &calls), ("the journal", &journal), ("mode back", &back), ("notify.log", &repo.notify_log())]
        {
            assert_eq!(leaked_run(text, &random), None, "{what} holds part of {token}: {text}");
        }
    }
}

/// Issue 35's trip-ups: the first away Stop in a fresh linked worktree (no `abcd init`
/// there, no local tier yet) writes the forge listing's cache without a word on stderr.
#[test]
fn the_first_away_stop_in_a_fresh_linked_worktree_says_nothing_on_stderr() {
    let repo = Repo::new();
    let linked = repo.root.parent().unwrap().join("second");
    repo.git(&["worktree", "add", "-q", "-b", "second", linked.to_str().unwrap()]);
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+8h"]).status.success());
    assert!(!linked.join(".abcd").exists(), "a fresh worktree has no local tier");
    let payload = json!({"session_id": "s1", "cwd": linked, "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "Done for now.", "background_tasks": [], "session_crons": []});
    let mut child = repo
        .command(&["hook", "stop"])
        .current_dir(&linked)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stderr(&out), "", "no warning at a fresh worktree's first stop");
    assert_eq!(repo.gh_calls(), 1);
    assert!(linked.join(".abcd/.work.local/forge-listing.json").exists(), "the listing is cached");
}

/// Issue 35's trip-ups: after a window the session saw was replaced by one it did not see,
/// and that one lapsed, the model's line and the person's name the same end.
#[test]
fn after_a_lapsed_window_the_model_and_the_person_are_told_the_same_end() {
    let mut repo = Repo::new();
    let prompt = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "UserPromptSubmit", "prompt": "hi"});
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+1h"]).status.success());
    assert!(reply(&repo.hook("user-prompt-submit", prompt.clone(), &[])).is_some(), "the session sees the window ending 19:00");
    repo.now = "2026-12-01T18:10:00Z".into();
    assert!(repo.abcd(&["mode", "back"]).status.success());
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+1h"]).status.success());
    assert!(repo.abcd(&["mode", "queue", "merge pull request 4"]).status.success());
    repo.now = "2026-12-01T20:00:00Z".into();
    let r = reply(&repo.hook("user-prompt-submit", prompt, &[])).unwrap();
    let person = r["systemMessage"].as_str().unwrap();
    let model = r["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_default();
    assert!(person.contains("the away window ended at 2026-12-01 19:10"), "{person}");
    assert!(model.contains("2026-12-01 19:10") && !model.contains("19:00"), "the model is told the end the person is: {model}");
}

/// Issue 35's trip-ups: `checklist render --budget` below what the away block and the
/// smallest checklist need is refused, naming the least budget; at that budget it fits.
#[test]
fn a_render_budget_below_the_away_blocks_need_is_refused_naming_the_least() {
    let repo = Repo::new();
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+8h"]).status.success());
    let stats: Value = serde_json::from_slice(&repo.abcd(&["checklist", "render", "--stats", "--json"]).stdout).unwrap();
    let block = stats["away_block"].as_u64().unwrap() as usize;
    let least = block + 200;
    let below = repo.abcd(&["checklist", "render", "--budget", &(least - 1).to_string()]);
    assert_eq!(below.status.code(), Some(2), "{}", stderr(&below));
    assert!(stderr(&below).contains(&format!("`abcd checklist render --budget {least}`")), "{}", stderr(&below));
    assert!(stdout(&below).is_empty());
    let at = repo.abcd(&["checklist", "render", "--budget", &least.to_string()]);
    assert!(at.status.success(), "{}", stderr(&at));
    assert!(stdout(&at).chars().count() <= least, "{} of {least}", stdout(&at).chars().count());
    assert!(stdout(&at).starts_with("abcd: the person is away until"), "{}", stdout(&at));
}

/// Issue 35: one forge listing serves every away stop of the working copy, whichever
/// session stops, for `FORGE_LISTING_REUSE` (60 s) after it was made; at the bound the forge
/// is listed again, and a kept listing dated after the clock (set back) is not reused.
#[test]
fn one_forge_listing_serves_the_stops_of_every_session_within_its_reuse_bound() {
    let mut repo = Repo::new();
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+8h"]).status.success());
    let stop_as = |repo: &Repo, session: &str| {
        let payload = json!({"session_id": session, "cwd": repo.root, "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": "Done for now.", "background_tasks": [], "session_crons": []});
        let out = repo.hook("stop", payload, &[]);
        assert!(block_reason(&out).contains("Write the parser"), "{}", stdout(&out));
    };
    for session in ["s1", "s2", "s3", "s4", "s5"] {
        stop_as(&repo, session);
    }
    assert_eq!(repo.gh_calls(), 1, "five stops in one second: one listing");
    repo.now = "2026-12-01T18:00:59Z".into();
    stop_as(&repo, "s6");
    assert_eq!(repo.gh_calls(), 1, "a second inside the bound: still the kept listing");
    repo.now = "2026-12-01T18:01:00Z".into();
    stop_as(&repo, "s1");
    assert_eq!(repo.gh_calls(), 2, "at the bound: listed again");
    stop_as(&repo, "s2");
    assert_eq!(repo.gh_calls(), 2, "the new listing is kept in turn");
    repo.now = "2026-12-01T18:00:30Z".into();
    stop_as(&repo, "s3");
    assert_eq!(repo.gh_calls(), 3, "a listing dated after the clock is not reused");
}

/// Issue 35 (seed 003, fix round 1): `abcd mode back` on an away record abcd cannot trust
/// (writable by others, or a symbolic link) refuses, naming the command that makes it
/// trusted again, and writes nothing; once the person runs it, `mode back` closes the
/// window and prints what it held.
#[test]
fn mode_back_on_an_untrusted_record_names_the_fix_and_closes_the_window_after_it() {
    for damage in ["writable-by-others", "symlink"] {
        let repo = Repo::new();
        assert!(repo.abcd(&["mode", "autonomous"]).status.success());
        assert!(repo.abcd(&["mode", "queue", "step one"]).status.success());
        let path = repo.repository_journal();
        let real = path.with_file_name("journal-elsewhere.jsonl");
        let fix = match damage {
            "writable-by-others" => {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
                format!("chmod go-w '{}'", path.display())
            }
            _ => {
                std::fs::rename(&path, &real).unwrap();
                std::os::unix::fs::symlink(&real, &path).unwrap();
                format!("mv '{}' '{}'", real.display(), path.display())
            }
        };
        let before = std::fs::read(&real).or_else(|_| std::fs::read(&path)).unwrap();
        let refused = repo.abcd(&["mode", "back"]);
        assert_eq!(refused.status.code(), Some(2), "{damage}: {}", stderr(&refused));
        assert!(stderr(&refused).contains(&fix), "{damage}: the refusal names the fix: {}", stderr(&refused));
        assert_eq!(std::fs::read(&real).or_else(|_| std::fs::read(&path)).unwrap(), before, "{damage}: nothing written");
        assert!(Command::new("sh").args(["-c", &fix]).status().unwrap().success(), "{fix}");
        let back = repo.abcd(&["mode", "back"]);
        assert!(back.status.success(), "{damage}: {}", stderr(&back));
        assert!(stdout(&back).contains("queued: step one"), "{damage}: {}", stdout(&back));
        assert!(stdout(&repo.abcd(&["mode"])).starts_with("present"), "{damage}: closed");
    }
}

/// A PreToolUse call of the Bash tool, as the host sends it, from session `session`.
fn pre_bash(repo: &Repo, session: &str, command: &str) -> Option<Value> {
    let payload = json!({"session_id": session, "cwd": repo.root, "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}});
    reply(&repo.hook("pre-tool-use", payload, &[]))
}

fn denied(r: &Option<Value>) -> bool {
    r.as_ref().is_some_and(|r| r["hookSpecificOutput"]["permissionDecision"] == "deny")
}

/// The repository journal's `away.mode_refused` events' data, oldest first.
fn refusals(repo: &Repo) -> Vec<Value> {
    std::fs::read_to_string(repo.repository_journal())
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == "away.mode_refused")
        .map(|e| e["data"].clone())
        .collect()
}

/// Issue 35: each refused attempt is recorded in the repository journal (the route, the
/// action, the session, the working copy; never the command, which may carry a secret) and
/// `abcd mode` shows it. What the guard lets through records nothing.
#[test]
fn a_refused_bash_call_is_recorded_without_its_command_and_shown_by_mode() {
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
    let secret_command = format!("GH_TOKEN={token} abcd mode back");
    assert!(denied(&pre_bash(&repo, "s1", &secret_command)));
    let recorded = refusals(&repo);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(
        recorded[0],
        json!({"route": "shell_rule", "action": "back", "session": "s1", "working_copy": repo.root.canonicalize().unwrap().display().to_string()})
    );
    let journal = std::fs::read_to_string(repo.repository_journal()).unwrap();
    assert!(!journal.contains(&token) && !journal.contains("GH_TOKEN"), "the command is not recorded");
    // What the guard allows records nothing.
    for command in ["abcd mode queue 'push feat/x'", "echo \"abcd mode autonomous\"", "abcd mode", "git commit -m \"abcd mode back\""] {
        assert!(!denied(&pre_bash(&repo, "s1", command)), "{command}");
    }
    assert_eq!(refusals(&repo).len(), 1, "allowed shapes record nothing");
    // The file tool's rule on abcd's own files records its route.
    let away_store = repo.repository_journal();
    let payload = json!({"session_id": "s2", "cwd": repo.root, "hook_event_name": "PreToolUse", "tool_name": "Write",
        "tool_input": {"file_path": away_store, "content": "{}"}});
    assert!(denied(&reply(&repo.hook("pre-tool-use", payload, &[]))));
    let recorded = refusals(&repo);
    assert_eq!((recorded.len(), &recorded[1]["route"], &recorded[1]["action"]), (2, &json!("file_tool_rule"), &json!("own_file_write")));
    let shown = stdout(&repo.abcd(&["mode"]));
    assert!(shown.contains("2 refused attempts by an agent"), "{shown}");
    assert!(shown.contains("`abcd mode back` (session s1, its shell command refused before it ran"), "{shown}");
    assert!(shown.contains("a write into abcd's own files (session s2, its file tool refused before it ran"), "{shown}");
    assert!(!shown.contains(&token), "{shown}");
    let json: Value = serde_json::from_str(stdout(&repo.abcd(&["mode", "--json"])).trim()).unwrap();
    assert_eq!(json["refused"]["count"], 2, "{json}");
    assert_eq!(json["refused"]["latest"][0]["session"], "s2", "newest first: {json}");
}

/// Issue 35: the verb's own refusal (a host's tool started the process) is recorded too,
/// with the mark's variable name and never its value; `abcd mode back` lists every
/// refused attempt of the window, and the next period starts with none.
#[test]
fn the_verbs_refusal_is_recorded_and_mode_back_lists_the_windows_refusals() {
    let repo = Repo::new();
    let out = repo.command(&["mode", "autonomous"]).env("CLAUDECODE", "1").env("CLAUDE_CODE_SESSION_ID", "s9").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let recorded = refusals(&repo);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!((&recorded[0]["route"], &recorded[0]["action"]), (&json!("verb"), &json!("autonomous")));
    assert_eq!((&recorded[0]["mark"], &recorded[0]["session"]), (&json!("CLAUDECODE"), &json!("s9")));
    assert!(stdout(&repo.abcd(&["mode"])).contains("1 refused attempt by an agent"), "{}", stdout(&repo.abcd(&["mode"])));
    // The person sets the mode: a new period, which starts with no refusal.
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    assert!(!stdout(&repo.abcd(&["mode"])).contains("refused attempt"), "{}", stdout(&repo.abcd(&["mode"])));
    let out = repo.command(&["mode", "back"]).env("CODEX_TOOL_CALL_ID", "call_value_7").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(denied(&pre_bash(&repo, "s1", "sh -c 'abcd mode back'")));
    let journal = std::fs::read_to_string(repo.repository_journal()).unwrap();
    assert!(!journal.contains("call_value_7"), "the mark's value is not recorded");
    assert_eq!(refusals(&repo).len(), 3);
    let back = repo.abcd(&["mode", "back"]);
    assert!(back.status.success(), "{}", stderr(&back));
    let text = stdout(&back);
    assert!(text.contains("2 refused attempts by an agent"), "{text}");
    assert!(text.contains("`abcd mode back` (no session named, the verb refused: CODEX_TOOL_CALL_ID was set"), "{text}");
    assert!(text.contains("`abcd mode back` (session s1, its shell command refused before it ran"), "{text}");
    assert!(!stdout(&repo.abcd(&["mode"])).contains("refused attempt"), "shown on return, then a new period");
    // The audit words each one; the journal keeps what the period's list no longer shows.
    let audit = stdout(&repo.abcd(&["replay", "--repo"]));
    assert_eq!(audit.matches("refused an agent's attempt: ").count(), 3, "{audit}");
    assert!(audit.contains("refused an agent's attempt: `abcd mode back` (the verb refused: CODEX_TOOL_CALL_ID was set;"), "{audit}");
}

/// Issue 35: a looping model does not flood the journal. The first
/// `REFUSALS_RECORDED_MAX` refused attempts of a period are recorded; every one after is
/// still refused, by the hook and by the verb, and not recorded; `abcd mode` says so and
/// shows the count and the latest few.
#[test]
fn refused_attempts_are_recorded_up_to_the_limit_and_refused_past_it() {
    use abcd::away::refusals::{REFUSALS_RECORDED_MAX, REFUSALS_SHOWN};
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous"]).status.success());
    for n in 1..=REFUSALS_RECORDED_MAX {
        assert!(denied(&pre_bash(&repo, &format!("s{n}"), "abcd mode back")));
        assert_eq!(refusals(&repo).len(), n, "attempt {n} is recorded");
    }
    assert!(denied(&pre_bash(&repo, "late", "abcd mode back")), "past the limit, still refused");
    let out = repo.command(&["mode", "back"]).env("CLAUDECODE", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "past the limit, the verb still refuses: {}", stderr(&out));
    assert_eq!(refusals(&repo).len(), REFUSALS_RECORDED_MAX, "and neither is recorded");
    let shown = stdout(&repo.abcd(&["mode"]));
    assert!(shown.contains(&format!("{REFUSALS_RECORDED_MAX} refused attempts by an agent")), "{shown}");
    assert!(shown.contains("later attempts are refused but not recorded"), "{shown}");
    let listed = shown.lines().filter(|l| l.starts_with("  refused at ")).count();
    assert_eq!(listed, REFUSALS_SHOWN, "{shown}");
    assert!(shown.contains(&format!("session s{REFUSALS_RECORDED_MAX},")) && !shown.contains("session s1,"), "the latest: {shown}");
}

impl Repo {
    /// `abcd hook <event> --host codex` with a payload shaped as Codex CLI 0.171.0 sends it.
    fn codex_hook(&self, event: &str, payload: Value) -> Output {
        let mut cmd = self.command(&["hook", event, "--host", "codex"]);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "a hook always exits 0");
        out
    }

    fn codex_stop(&self, active: bool) -> Output {
        let payload = json!({"session_id": "01a248c6-5deb-78b3-8899-37bf1a17441e", "turn_id": "01a248c6-5e00-7721-88aa-a72d0718b758",
            "transcript_path": null, "cwd": self.root, "hook_event_name": "Stop", "model": "gpt-lab",
            "permission_mode": "bypassPermissions", "stop_hook_active": active, "last_assistant_message": "Still on it."});
        self.codex_hook("stop", payload)
    }

    fn codex_tool(&self, tool: &str, input: Value) -> Option<Value> {
        let payload = json!({"session_id": "01a248c6-60f8-76a3-9b36-c9d416a962c6", "turn_id": "01a248c6-610c-7740-9d58-40206109e436",
            "transcript_path": null, "cwd": self.root, "hook_event_name": "PreToolUse", "model": "gpt-lab",
            "permission_mode": "bypassPermissions", "tool_name": tool, "tool_input": input, "tool_use_id": "call_9d7d59ed"});
        reply(&self.codex_hook("pre-tool-use", payload))
    }
}

/// Issue 38: on Codex, which has no cap on Stop blocks, the away Stop blocks with Codex's
/// `decision`/`reason` up to abcd's own bound, then allows the stop itself; the record and
/// `abcd mode back` say it was abcd's bound, not a host's cap.
#[test]
fn codex_the_away_stop_blocks_to_abcds_bound_then_ends_recorded_as_abcds() {
    let repo = Repo::new();
    own_unpushed_branch(&repo, "feat/x");
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+8h"]).status.success());
    for n in 1..=abcd::host::codex::STOP_BLOCK_BOUND {
        let r = reply(&repo.codex_stop(n > 1)).unwrap_or_else(|| panic!("block {n} expected"));
        assert_eq!(r["decision"], "block", "block {n}: {r}");
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["decision", "reason"], "only the fields Codex's Stop takes: {r}");
        assert!(r["reason"].as_str().unwrap().contains("Next: branch feat/x has commits not pushed"), "{r}");
    }
    let past = repo.codex_stop(true);
    let r = reply(&past).unwrap();
    assert_eq!(r.get("decision"), None, "the stop past the bound is allowed: {r}");
    let line = r["systemMessage"].as_str().unwrap();
    assert!(line.contains("after 8 consecutive blocks (abcd's own bound; this host has no cap)"), "{line}");
    let journal = std::fs::read_to_string(repo.repository_journal()).unwrap();
    let stops: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == "away.stop_recorded")
        .map(|e| e["data"]["stop"].clone())
        .collect();
    assert_eq!(stops.len(), 1, "{stops:?}");
    assert_eq!(stops[0]["abcd_bound"], 8);
    assert_eq!(stops[0]["possibly_forced_by_cap"], false);
    let back = stdout(&repo.abcd(&["mode", "back"]));
    assert!(
        back.contains("stop: stopped with work owed, ended by abcd's own bound of 8 consecutive blocks (the host has no cap)"),
        "{back}"
    );
    assert!(!back.contains("possibly forced by the cap"), "{back}");
}

/// Issue 38: Codex's question tool is refused while away with the reroute; `apply_patch` is
/// refused on abcd's own file and allowed on a source file, and a patch abcd cannot read is
/// refused; every refusal in Codex's PreToolUse shape.
#[test]
fn codex_the_question_tool_and_patches_meet_the_same_guards() {
    let repo = Repo::new();
    own_unpushed_branch(&repo, "feat/x");
    assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+8h"]).status.success());
    let deny = |r: Option<Value>| {
        let r = r.expect("a refusal");
        let out = &r["hookSpecificOutput"];
        assert_eq!((out["hookEventName"].as_str(), out["permissionDecision"].as_str()), (Some("PreToolUse"), Some("deny")), "{r}");
        out["permissionDecisionReason"].as_str().unwrap().to_string()
    };
    let questions = json!({"questions": [{"id": "branch", "header": "Branch", "question": "Which branch should I use?",
        "options": [{"label": "main", "description": "the default branch"}]}]});
    let why = deny(repo.codex_tool("request_user_input", questions));
    assert!(why.starts_with("abcd: the person is away, so no question reaches them") && why.contains("abcd mode queue"), "{why}");

    let journal = repo.repository_journal();
    let own = format!("*** Begin Patch\n*** Add File: notes.md\n+x\n*** Update File: {}\n@@\n-a\n+b\n*** End Patch\n", journal.display());
    let why = deny(repo.codex_tool("apply_patch", json!({"command": own})));
    assert!(why.starts_with(&format!("abcd refuses apply_patch on {}", journal.display())), "{why}");
    let source = "*** Begin Patch\n*** Add File: src/parser.rs\n+fn parse() {}\n*** End Patch\n";
    // Allowed: no decision (the blocker sweep's ask may ride the call as context).
    let allowed = repo.codex_tool("apply_patch", json!({"command": source}));
    assert!(allowed.as_ref().is_none_or(|r| r["hookSpecificOutput"].get("permissionDecision").is_none()), "{allowed:?}");
    let why = deny(repo.codex_tool("apply_patch", json!({"command": "rewrite everything"})));
    assert!(why.starts_with("abcd refuses apply_patch: it cannot read which files this call writes"), "{why}");

    // A patch sent through the shell, which Codex applies itself: by absolute path, and
    // relative after a `cd` into the local tier.
    let through_shell = |patch: &str| repo.codex_tool("Bash", json!({"command": patch}));
    let absolute = format!("apply_patch <<'EOF'\n{own}EOF\n");
    let why = deny(through_shell(&absolute));
    assert!(why.starts_with("abcd refuses apply_patch (through the shell) on"), "{why}");
    let after_cd =
        "cd .abcd/.work.local && apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: journal.jsonl\n@@\n-a\n+b\n*** End Patch\nEOF\n";
    let why = deny(through_shell(after_cd));
    assert!(why.contains("journal.jsonl"), "{why}");
    let allowed = through_shell(&format!("apply_patch <<'EOF'\n{source}EOF\n"));
    assert!(allowed.as_ref().is_none_or(|r| r["hookSpecificOutput"].get("permissionDecision").is_none()), "{allowed:?}");

    // A refused path is the payload's text: a secret in it is never shown, not even a part.
    for (token, random) in corpus() {
        let patch = format!("*** Begin Patch\n*** Add File: .abcd/.work.local/{token}.json\n+x\n*** End Patch\n");
        let why = deny(repo.codex_tool("apply_patch", json!({"command": patch})));
        assert!(why.contains("a path that carries a secret (not shown)"), "{why}");
        assert_eq!(leaked_run(&why, &random), None, "{why}");
    }
}
