//! Injection receipts end to end through the built binary (issue 21): what a hook injects
//! is recorded with its marker; a later hook reads a transcript written as the host writes
//! it (tests/real_host/real_host.rs proves the shapes against the real client) and records whether
//! the text reached the model; one not delivered is sent again once; hostile transcripts
//! leave the hook allowed and the receipt unknown. While away, a prompt carries only what
//! changed of the away window.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::repo::TestRepo;
use serde_json::{Value, json};

const NOW: &str = "2026-12-01T18:00:00Z";

struct Repo {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    scratch: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let TestRepo { dir, root, home } = TestRepo::new();
        let scratch = dir.path().join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        let repo = Repo { _dir: dir, root, home, scratch };
        assert!(repo.abcd(&["init"]).status.success());
        assert!(repo.abcd(&["checklist", "add", "Write the parser"]).status.success());
        repo
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
        cmd.args(args).current_dir(&self.root).env("ABCD_HOME", &self.home).env("ABCD_TEST_NOW", NOW).env("TZ", "UTC");
        cmd
    }

    fn abcd(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs a hook; every hook exits 0 and, here, says nothing on stderr.
    fn hook(&self, event: &str, payload: Value) -> Option<Value> {
        let mut child = self.command(&["hook", event]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "a hook always exits 0");
        assert!(out.stderr.is_empty(), "{event}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        (!text.trim().is_empty()).then(|| serde_json::from_str(text.trim()).unwrap())
    }

    fn start(&self, session: &str) -> String {
        let r = self.hook(
            "session-start",
            json!({"session_id": session, "cwd": self.root, "hook_event_name": "SessionStart", "source": "startup"}),
        );
        r.unwrap()["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_string()
    }

    fn prompt(&self, session: &str, transcript: Option<&Path>) -> Option<Value> {
        self.hook(
            "user-prompt-submit",
            json!({"session_id": session, "cwd": self.root, "hook_event_name": "UserPromptSubmit", "prompt": "go on", "transcript_path": transcript}),
        )
    }

    fn stop(&self, session: &str, transcript: Option<&Path>) {
        let payload = json!({"session_id": session, "cwd": self.root, "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": "Done.", "background_tasks": [], "session_crons": [], "transcript_path": transcript});
        self.hook("stop", payload);
    }

    fn events(&self) -> Vec<Value> {
        let journal = self.root.join(".abcd/.work.local/journal.jsonl");
        std::fs::read_to_string(journal).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// The receipts recorded, as (kind, marker, reason).
    fn receipts(&self) -> Vec<(String, String, String)> {
        self.events()
            .into_iter()
            .filter(|e| e["kind"].as_str().is_some_and(|k| k.starts_with("context.") && k != "context.injected"))
            .map(|e| (s(&e["kind"]), s(&e["data"]["marker"]), s(&e["data"]["reason"])))
            .collect()
    }

    fn injections(&self) -> Vec<Value> {
        self.events().into_iter().filter(|e| e["kind"] == "context.injected").map(|e| e["data"].clone()).collect()
    }

    fn transcript(&self, name: &str, lines: &[String]) -> PathBuf {
        let path = self.scratch.join(name);
        std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        path
    }
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn marker_of(text: &str) -> String {
    text[6..14].to_string()
}

// The transcript lines as the pinned client writes them (the fields read, and a few beside).
fn attached(text: &str) -> String {
    json!({"parentUuid": "a", "type": "attachment", "attachment": {"type": "hook_additional_context", "content": [text], "hookName": "SessionStart"}}).to_string()
}

fn hook_success(text: &str) -> String {
    let stdout = json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}).to_string();
    json!({"type": "attachment", "attachment": {"type": "hook_success", "stdout": stdout}}).to_string()
}

fn blob(text: &str) -> String {
    let content = [json!({"type": "text", "text": format!("SessionStart hook additional context: {text}\n\nToday's date is 2026-12-01.")})];
    json!({"type": "api-request-blob", "sessionId": "s", "hash": "ab", "message": {"role": "system", "content": content}}).to_string()
}

fn request() -> String {
    json!({"type": "api-request", "sessionId": "s", "id": "r1", "params": {"model": "m"}}).to_string()
}

fn preview(text: &str) -> String {
    let head: String = text.chars().take(2_000).collect();
    format!(
        "<persisted-output>\nOutput too large (11.7KB). Full output saved to: /tmp/x/hook-SessionStart-additionalContext.txt\n\nPreview (first 2KB):\n{head}\n...\n</persisted-output>"
    )
}

#[test]
fn the_turns_end_records_an_injection_the_transcript_shows_sent_whole() {
    let repo = Repo::new();
    let text = repo.start("s1");
    let marker = marker_of(&text);
    let injected = repo.injections();
    assert_eq!(injected.len(), 1);
    assert_eq!((s(&injected[0]["marker"]), s(&injected[0]["source"])), (marker.clone(), "session_start:startup".into()));
    assert_eq!(injected[0]["chars"], text.chars().count() as u64);

    // The hook's own stdout and the attachment are no proof: nothing is recorded yet.
    let not_yet = repo.transcript("t1.jsonl", &[hook_success(&text), attached(&text)]);
    assert_eq!(repo.prompt("s1", Some(&not_yet)), None);
    assert!(repo.receipts().is_empty(), "{:?}", repo.receipts());

    let sent = repo.transcript("t1.jsonl", &[hook_success(&text), attached(&text), blob(&text), request()]);
    repo.stop("s1", Some(&sent));
    assert_eq!(repo.receipts(), [("context.delivered".into(), marker.clone(), "sent".into())]);
    repo.stop("s1", Some(&sent));
    assert_eq!(repo.receipts().len(), 1, "settled once");

    let replay = String::from_utf8(repo.abcd(&["replay"]).stdout).unwrap();
    assert!(replay.contains(&format!("injected context {marker} into session s1 (session start:startup)")), "{replay}");
    assert!(replay.contains(&format!("context {marker} reached session s1's model")), "{replay}");
}

#[test]
fn a_cut_context_is_recorded_and_the_plan_sent_again_once() {
    let repo = Repo::new();
    let text = repo.start("s1");
    let first = marker_of(&text);
    let cut = repo.transcript("t.jsonl", &[hook_success(&text), attached(&preview(&text)), blob(&preview(&text)), request()]);
    let again = repo.prompt("s1", Some(&cut));
    let again = again.expect("the plan is sent again");
    let again = s(&again["hookSpecificOutput"]["additionalContext"]);
    assert!(common::unmarked(&again).contains("Write the parser"), "{again}");
    let second = marker_of(&again);
    assert_ne!(first, second);
    assert_eq!(repo.receipts(), [("context.not_delivered".into(), first.clone(), "cut".into())]);
    let injected = repo.injections();
    assert_eq!((s(&injected[1]["source"]), s(&injected[1]["reinjects"])), ("reinject".into(), first.clone()));

    // The next prompt sends nothing again, and neither does a cut of the second.
    assert_eq!(repo.prompt("s1", Some(&cut)), None);
    let cut_again = repo.transcript("t.jsonl", &[attached(&preview(&text)), attached(&preview(&again)), request()]);
    assert_eq!(repo.prompt("s1", Some(&cut_again)), None, "a re-injection is never sent a third time");
    assert_eq!(repo.receipts().last().unwrap(), &("context.not_delivered".into(), second, "cut".into()));
    assert_eq!(repo.injections().len(), 2);
}

#[test]
fn hostile_transcripts_leave_the_hook_allowed_and_the_receipt_unknown() {
    let repo = Repo::new();
    let huge = repo.scratch.join("huge.jsonl");
    std::fs::File::create(&huge).unwrap().set_len(64 << 20).unwrap();
    let binary = repo.scratch.join("binary.jsonl");
    std::fs::write(&binary, (0..=255u8).cycle().take(100_000).collect::<Vec<u8>>()).unwrap();
    let zero = repo.scratch.join("zero.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let cases: Vec<(&str, Option<PathBuf>, &str)> = vec![
        ("none", None, "no_transcript"),
        ("missing", Some(repo.scratch.join("missing.jsonl")), "no_transcript"),
        ("huge", Some(huge), "out_of_window"),
        ("binary", Some(binary), "unreadable"),
        ("zero", Some(zero), "unreadable"),
        ("truncated", None, "not_found"),
    ];
    for (session, path, reason) in cases {
        let text = repo.start(session);
        let path = path.or_else(|| {
            (session == "truncated").then(|| {
                let whole = blob(&text);
                let t = repo.transcript("truncated.jsonl", &[attached(&text)]);
                let mut f = std::fs::OpenOptions::new().append(true).open(&t).unwrap();
                f.write_all(&whole.as_bytes()[..whole.len() / 2]).unwrap();
                t
            })
        });
        repo.prompt(session, path.as_deref());
        repo.stop(session, path.as_deref());
        let receipt = repo.receipts().into_iter().find(|r| r.1 == marker_of(&text));
        assert_eq!(receipt, Some(("context.unknown".into(), marker_of(&text), reason.into())), "{session}");
    }
}

#[test]
fn while_away_a_prompt_carries_the_away_block_once_then_only_what_changed() {
    let repo = Repo::new();
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+8h"]).status.success());
    let start = repo.start("s1");
    assert!(common::unmarked(&start).starts_with("abcd: the person is away until"), "{start}");
    let context = |r: Option<Value>| r.map(|r| s(&r["hookSpecificOutput"]["additionalContext"])).filter(|c| !c.is_empty());
    // Told at the start: nothing new but the blocker sweep's ask, once per working copy (issue 23).
    let ask = common::unmarked(&context(repo.prompt("s1", None)).expect("the sweep's ask"));
    assert!(ask.starts_with("abcd: the person is leaving") && ask.contains("--blocker KIND"), "{ask}");
    assert_eq!(context(repo.prompt("s1", None)), None, "nothing new");

    assert!(repo.abcd(&["mode", "queue", "push feat/parser"]).status.success());
    let news = context(repo.prompt("s1", None)).expect("the change, in one line");
    let news = common::unmarked(&news);
    assert!(!news.contains('\n') && news.contains("1 queued for the person (was 0)"), "{news}");
    assert_eq!(context(repo.prompt("s1", None)), None, "said once");

    // A session told nothing yet gets the block; the end of the window is one line.
    let other = context(repo.prompt("s2", None)).unwrap();
    assert!(common::unmarked(&other).starts_with("abcd: the person is away until"), "{other}");
    assert!(repo.abcd(&["mode", "back"]).status.success());
    // The first prompt after back carries the return lists once (issue 23), then the window's
    // end in one line.
    let over = common::unmarked(&context(repo.prompt("s1", None)).unwrap());
    let (lists, end) = over.rsplit_once("\n\n").unwrap();
    assert!(lists.contains("the person is back") && lists.contains("push feat/parser"), "{over}");
    assert!(end.contains("is over") && !end.contains('\n'), "{over}");
    assert_eq!(context(repo.prompt("s1", None)), None);
}

/// A Stop whose verdict leaves nothing to keep (present, nothing changed) and whose turn
/// settles an injection: when the journal refuses the receipt, the verdict still reaches
/// the person, and the warning names what was not recorded (the receipt, not a verdict
/// that was never to be written).
#[test]
fn a_receipt_the_journal_refuses_leaves_the_stops_verdict_and_names_the_receipt() {
    let repo = Repo::new();
    let text = repo.start("s1");
    let sent = repo.transcript("t.jsonl", &[blob(&text), request()]);
    // A journal rolled back behind its head anchor: reads fold what it holds, appends are
    // refused until a person accepts it.
    let journal = repo.root.join(".abcd/.work.local/journal.jsonl");
    let kept = std::fs::read(&journal).unwrap();
    assert!(repo.abcd(&["checklist", "add", "Write the tests"]).status.success());
    std::fs::write(&journal, kept).unwrap();
    let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "Done.", "background_tasks": [], "session_crons": [], "transcript_path": sent});
    let mut child = repo.command(&["hook", "stop"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "a hook always exits 0");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("stopped with work owed (1 item)"), "the verdict is the person's: {stdout} / {stderr}");
    assert!(stderr.contains("the context record was not saved"), "{stderr}");
    assert!(!stderr.contains("session.judged"), "no verdict was to be recorded: {stderr}");
}
