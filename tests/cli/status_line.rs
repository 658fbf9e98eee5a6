//! `abcd status-line` through the binary (issue 35, the status line) with the payload the
//! host documents (docs/status-line.md): the away mode's line, nothing while present, a
//! lapsed window, a degraded plan, and nothing on stdout (exit 0) on abcd's own faults.

use crate::common;
use crate::common::status_line_payload;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use abcd::command::status_line::MAX_PAYLOAD_BYTES;
use common::repo::{self, TestRepo};
use serde_json::json;
use status_line_payload::payload;

/// The instant the clock reads (UTC, so the shown times are fixed).
const NOW: &str = "2026-12-01T18:00:00Z";

fn abcd(t: &TestRepo, now: &str, args: &[&str]) -> Command {
    let mut cmd = repo::abcd(&t.root, &t.home);
    cmd.args(args).env("HOME", t.dir.path()).env("ABCD_TEST_NOW", now).env("TZ", "UTC");
    cmd
}

fn ok(t: &TestRepo, args: &[&str]) {
    let out = abcd(t, NOW, args).output().unwrap();
    assert!(out.status.success(), "abcd {args:?}: {}", repo::text(&out));
}

fn status_line(t: &TestRepo, now: &str, input: &[u8]) -> Output {
    let mut child = abcd(t, now, &["status-line"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // The command may stop reading at its cap: a closed pipe is not this test's failure.
    let _ = child.stdin.take().unwrap().write_all(input);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "the status line always exits 0: {}", repo::text(&out));
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A managed working copy with two working items and one waiting.
fn with_plan() -> TestRepo {
    let t = TestRepo::new().managed();
    ok(&t, &["checklist", "add", "Write the parser"]);
    ok(&t, &["checklist", "add", "Test the parser"]);
    let out = abcd(&t, NOW, &["checklist", "add", "Ask for the schema"]).output().unwrap();
    let id = stdout(&out).trim().to_string();
    ok(&t, &["checklist", "set", &id, "--state", "waiting", "--next-look", "2026-12-02T09:00:00Z"]);
    t
}

#[test]
fn away_the_line_says_until_when_by_whom_and_what_is_owed() {
    let t = with_plan();
    repo::git(&t.root, &["config", "user.name", "Ana Lima"]);
    ok(&t, &["mode", "autonomous", "--until", "+2h"]);
    let out = status_line(&t, NOW, &payload(&t.root));
    assert_eq!(stdout(&out), "abcd: away until 2026-12-01 20:00 UTC, set by Ana Lima · 2 owed, 1 waiting\n", "{}", repo::text(&out));
    assert!(out.stderr.is_empty(), "{}", repo::text(&out));
    // `cwd` alone finds the working copy too (a payload without `workspace`).
    let out = status_line(&t, NOW, json!({"cwd": t.root}).to_string().as_bytes());
    assert!(stdout(&out).starts_with("abcd: away until 2026-12-01 20:00 UTC"), "{}", repo::text(&out));
}

#[test]
fn present_the_line_is_empty() {
    let t = with_plan();
    let out = status_line(&t, NOW, &payload(&t.root));
    assert_eq!(stdout(&out), "", "{}", repo::text(&out));
    assert!(out.stderr.is_empty(), "{}", repo::text(&out));
    // Back from a window: present again.
    ok(&t, &["mode", "autonomous", "--until", "+2h"]);
    ok(&t, &["mode", "back"]);
    let out = status_line(&t, NOW, &payload(&t.root));
    assert_eq!(stdout(&out), "", "{}", repo::text(&out));
}

#[test]
fn a_lapsed_window_says_it_ended_and_is_not_closed() {
    let t = with_plan();
    ok(&t, &["mode", "autonomous", "--until", "+2h"]);
    let out = status_line(&t, "2026-12-01T20:00:00Z", &payload(&t.root));
    assert_eq!(
        stdout(&out),
        "abcd: away window ended 2026-12-01 20:00 UTC, not closed: `abcd mode back` · 2 owed, 1 waiting\n",
        "the window's end itself is lapsed: {}",
        repo::text(&out)
    );
    let out = status_line(&t, "2026-12-01T19:59:59Z", &payload(&t.root));
    assert!(stdout(&out).starts_with("abcd: away until"), "a second before the end is away: {}", repo::text(&out));
}

#[test]
fn a_degraded_plan_is_named_away_or_present() {
    let t = with_plan();
    let journal = t.root.join(abcd::places::LOCAL_TIER).join(abcd::places::JOURNAL_FILE);
    // The journal is lost where the home store recorded one: the plan shown is last-good's.
    std::fs::remove_file(&journal).unwrap();
    let out = status_line(&t, NOW, &payload(&t.root));
    assert_eq!(stdout(&out), "abcd: plan degraded: `abcd journal verify`\n", "{}", repo::text(&out));
    ok(&t, &["mode", "autonomous", "--until", "+2h"]);
    let out = status_line(&t, NOW, &payload(&t.root));
    let line = stdout(&out);
    assert!(line.starts_with("abcd: away until 2026-12-01 20:00 UTC, set by "), "{line}");
    assert!(line.ends_with(" · plan degraded: `abcd journal verify`\n"), "{line}");
}

#[test]
fn abcds_own_faults_print_nothing_on_stdout_and_exit_0() {
    let t = with_plan();
    ok(&t, &["mode", "autonomous", "--until", "+2h"]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("not JSON", b"{not json".to_vec()),
        ("no folder", br#"{"session_id":"s"}"#.to_vec()),
        ("a relative folder", br#"{"cwd":"wc","workspace":{"current_dir":"wc"}}"#.to_vec()),
        ("over the cap", {
            let mut p = payload(&t.root);
            p.resize(MAX_PAYLOAD_BYTES + 1, b' ');
            p
        }),
    ];
    for (what, input) in cases {
        let out = status_line(&t, NOW, &input);
        assert_eq!(stdout(&out), "", "{what}: {}", repo::text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{what}: one stderr line: {}", repo::text(&out));
        assert!(err.starts_with("abcd status-line: "), "{what}: {err}");
    }
    // At the cap itself the payload is read.
    let mut p = payload(&t.root);
    p.resize(MAX_PAYLOAD_BYTES, b' ');
    let out = status_line(&t, NOW, &p);
    assert!(stdout(&out).starts_with("abcd: away until"), "{}", repo::text(&out));
    // A folder abcd does not manage: nothing to say, and no complaint.
    let other = tempfile::tempdir().unwrap();
    let out = status_line(&t, NOW, &payload(other.path()));
    assert_eq!((stdout(&out).as_str(), out.stderr.is_empty()), ("", true), "{}", repo::text(&out));
}
