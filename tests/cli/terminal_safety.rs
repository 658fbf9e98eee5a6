//! Every value abcd prints reaches a terminal safe: controls, DEL, C1, bidi controls and
//! line separators show as `\uXXXX` escapes instead of acting. JSON output
//! stays valid and decodes to the same values; a hook's texts carry the visible escape.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use common::repo::{self, TestRepo};
use serde_json::Value;

/// Characters a terminal acts on that a title may hold (control characters are refused at
/// the door, so these come in through titles; the others through payloads and paths).
const BIDI: [char; 6] = ['\u{202E}', '\u{2066}', '\u{2069}', '\u{200F}', '\u{061C}', '\u{202A}'];

/// Any character the output must never hold raw.
fn acts(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{9}' | '\u{B}'..='\u{1F}' | '\u{7F}'..='\u{9F}' | '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

fn assert_safe(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes);
    let raw: Vec<String> = text.chars().filter(|&c| acts(c)).map(|c| format!("U+{:04X}", c as u32)).collect();
    assert!(raw.is_empty(), "{what} printed {raw:?} raw:\n{text}");
}

fn abcd(root: &Path, home: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = repo::abcd(root, home);
    cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin.unwrap_or_default());
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "abcd {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn title() -> String {
    format!("pay {}fdp.exe {}x{} {}{}{}", BIDI[0], BIDI[1], BIDI[2], BIDI[3], BIDI[4], BIDI[5])
}

/// A managed working copy holding one item whose title is [`title`]; its id.
fn bidi_item() -> (TestRepo, String) {
    let repo = TestRepo::folder().managed();
    let out = abcd(&repo.root, &repo.home, &["checklist", "add", &title()], None);
    assert_eq!(out.status.code(), Some(0));
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    (repo, id)
}

fn session_start(root: &Path, session: &str) -> Vec<u8> {
    serde_json::json!({"session_id": session, "cwd": root.display().to_string(), "hook_event_name": "SessionStart", "source": "startup"})
        .to_string()
        .into_bytes()
}

#[test]
fn bidi_controls_in_a_title_show_as_escapes_in_every_listing() {
    let (repo, id) = bidi_item();
    for args in [&["checklist"][..], &["checklist", "show", &id], &["checklist", "render"], &["replay"], &["checklist", "add", &title()]] {
        let out = abcd(&repo.root, &repo.home, args, None);
        assert_safe(&out.stdout, &format!("abcd {args:?}"));
        assert_safe(&out.stderr, &format!("abcd {args:?} (stderr)"));
        let text = String::from_utf8_lossy(&out.stdout);
        if args[..] != ["checklist", "add", &title()][..] {
            assert!(text.contains(r"pay \u202efdp.exe \u2066x\u2069 \u200f\u061c\u202a"), "abcd {args:?}:\n{text}");
        }
    }
}

#[test]
fn json_output_keeps_the_title_and_is_safe_on_a_terminal() {
    let (repo, _) = bidi_item();
    let out = abcd(&repo.root, &repo.home, &["checklist", "--json"], None);
    assert_safe(&out.stdout, "checklist --json");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["items"][0]["title"], title(), "decodes to the title as written");
    for args in [&["replay", "--json"][..], &["replay", "--at", "1"], &["checklist", "render", "--json"]] {
        let out = abcd(&repo.root, &repo.home, args, None);
        assert_safe(&out.stdout, &format!("abcd {args:?}"));
        let text = String::from_utf8(out.stdout).unwrap();
        let values: Vec<Value> = serde_json::Deserializer::from_str(&text).into_iter().map(Result::unwrap).collect();
        assert!(values.iter().any(|v| v.to_string().contains(&title())), "abcd {args:?} decodes to the title:\n{text}");
    }
}

#[test]
fn the_hook_shows_the_model_the_escape_not_the_override() {
    let (repo, _) = bidi_item();
    let out = abcd(&repo.root, &repo.home, &["hook", "session-start"], Some(&session_start(&repo.root, "abc123")));
    assert_safe(&out.stdout, "hook session-start");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let context = answer["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(!context.chars().any(acts), "the decoded context holds no bidi control: {context:?}");
    assert!(context.contains(r"pay \u202efdp.exe"), "{context}");
}

/// A session id comes from the host's payload as it is; in the audit it stays on its line.
#[test]
fn a_session_id_with_controls_cannot_forge_a_replay_line() {
    let repo = TestRepo::folder().managed();
    let session = "s\u{1b}[2J\rforged\nfake line\u{2028}";
    let out = abcd(&repo.root, &repo.home, &["hook", "session-start"], Some(&session_start(&repo.root, session)));
    assert_eq!(out.status.code(), Some(0));
    let out = abcd(&repo.root, &repo.home, &["replay"], None);
    assert_safe(&out.stdout, "replay");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(r"session s\u001b[2J\u000dforged\u000afake line\u2028 (pid"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("fake line")), "{text}");
}

/// A working copy's path is shown as it is everywhere but for what a terminal acts on (a
/// newline or a control character in it is refused before the ledger records it).
#[test]
fn the_resume_listing_escapes_a_working_copy_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("w\u{202E}c \u{2066}x");
    let home = dir.path().join("home");
    repo::create(&root, &[repo::README]);
    repo::abcd_init(&root, &home);
    let pid = std::process::id().to_string();
    let out = abcd(&root, &home, &["run", "start", "r1", "--lane", "l1", "--driver-pid", &pid], None);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_safe(&out.stdout, "run start");
    let out = abcd(&root, &home, &["resume"], None);
    assert_safe(&out.stdout, "resume");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(r"w\u202ec \u2066x: driver alive"), "{text}");
    let out = abcd(&root, &home, &["resume", "--json"], None);
    assert_safe(&out.stdout, "resume --json");
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listing["runs"][0]["working_copy"], root.display().to_string());
}
