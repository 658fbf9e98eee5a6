//! Issue 23's blocker sweep and return lists through the built binary (acceptance 3 and 4):
//! real git repositories with linked worktrees in temp folders, the clock set through
//! `ABCD_TEST_NOW`, and hook payloads shaped as the host documents them.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::repo::{self, TestRepo};
use serde_json::{Value, json};

/// The instant the tests' clock reads, in UTC so the shown times are fixed.
const NOW: &str = "2026-12-01T18:00:00Z";

/// One repository: its main working copy and the home store its copies share.
struct Repo {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let TestRepo { dir, root, home } = TestRepo::new();
        let repo = Repo { home, root, _dir: dir };
        let init = repo.abcd(&repo.root, NOW, &["init"]);
        assert!(init.status.success(), "{}", repo::text(&init));
        repo
    }

    fn command(&self, cwd: &Path, now: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
        cmd.args(args)
            .current_dir(cwd)
            .env("ABCD_HOME", &self.home)
            .env("ABCD_TEST_NOW", now)
            .env("TZ", "UTC")
            .env("PATH", "/usr/bin:/bin")
            .env_remove("CLAUDE_CODE_SESSION_ID");
        cmd
    }

    fn abcd(&self, cwd: &Path, now: &str, args: &[&str]) -> Output {
        self.command(cwd, now, args).output().unwrap()
    }

    /// Runs `args`, which must succeed; its stdout.
    fn ok(&self, cwd: &Path, now: &str, args: &[&str]) -> String {
        let out = self.abcd(cwd, now, args);
        assert!(out.status.success(), "abcd {args:?}: {}", repo::text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// `--blocker` on add and set: stored, shown, cleared with "", and a word outside the four
/// refused with exit 2 naming them; an item without one is written without the key.
#[test]
fn a_blocker_is_set_shown_cleared_and_refused_outside_the_four_kinds() {
    let repo = Repo::new();
    let root = &repo.root;
    let id = repo.ok(root, NOW, &["checklist", "add", "Choose the cache key", "--blocker", "decision"]);
    let id = id.trim();
    let plain = repo.ok(root, NOW, &["checklist", "add", "Write the parser"]);
    let shown = repo.ok(root, NOW, &["checklist", "show", id]);
    assert!(shown.contains("blocked: decision (a design decision only the person can make)"), "{shown}");
    let journal = std::fs::read_to_string(root.join(".abcd/.work.local/journal.jsonl")).unwrap();
    let plain_line = journal.lines().find(|l| l.contains("Write the parser")).unwrap();
    assert!(!plain_line.contains("blocker"), "no key without a blocker: {plain_line}");
    repo.ok(root, NOW, &["checklist", "set", plain.trim(), "--blocker", "hands"]);
    let listed: Value = serde_json::from_str(&repo.ok(root, NOW, &["checklist", "--json"])).unwrap();
    let blockers: Vec<&Value> = listed["items"].as_array().unwrap().iter().map(|i| &i["blocker"]).collect();
    assert_eq!(blockers, [&json!("decision"), &json!("hands")]);
    repo.ok(root, NOW, &["checklist", "set", id, "--blocker", ""]);
    assert!(!repo.ok(root, NOW, &["checklist", "show", id]).contains("blocked"));
    let refused = repo.abcd(root, NOW, &["checklist", "add", "Rotate the key", "--blocker", "person"]);
    assert_eq!(refused.status.code(), Some(2), "{}", repo::text(&refused));
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains("--blocker must be one of decision, hands, session, credential"), "{why}");
    let refused = repo.abcd(root, NOW, &["checklist", "set", id, "--blocker", "Decision"]);
    assert_eq!(refused.status.code(), Some(2), "{}", repo::text(&refused));
}
