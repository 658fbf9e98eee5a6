//! Issue 23's blocker sweep and return lists through the built binary (acceptance 3 and 4):
//! real git repositories with linked worktrees in temp folders, the clock set through
//! `ABCD_TEST_NOW`, and hook payloads shaped as the host documents them.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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

    /// A second working copy of the same repository (`git worktree add`).
    fn linked(&self, name: &str) -> PathBuf {
        let path = self.root.parent().unwrap().join(name);
        repo::git(&self.root, &["worktree", "add", "-q", "-b", name, path.to_str().unwrap()]);
        path
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

    fn hook(&self, cwd: &Path, now: &str, event: &str, payload: Value) -> Option<Value> {
        let mut child =
            self.command(cwd, now, &["hook", event]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "a hook always exits 0");
        assert!(out.stderr.is_empty(), "no warning: {}", repo::text(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        (!text.trim().is_empty()).then(|| serde_json::from_str(text.trim()).unwrap())
    }

    fn prompt(&self, cwd: &Path, now: &str, session: &str) -> Option<Value> {
        let payload = json!({"session_id": session, "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": "go on"});
        self.hook(cwd, now, "user-prompt-submit", payload)
    }

    fn session_start(&self, cwd: &Path, now: &str, session: &str) -> Option<Value> {
        let payload = json!({"session_id": session, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"});
        self.hook(cwd, now, "session-start", payload)
    }

    fn repository_kinds(&self) -> Vec<String> {
        let repos = self.home.join("repos");
        let entry = std::fs::read_dir(&repos).unwrap().next().unwrap().unwrap();
        let text = std::fs::read_to_string(entry.path().join("journal.jsonl")).unwrap();
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].as_str().unwrap().to_string()).collect()
    }
}

fn context(reply: &Option<Value>) -> String {
    reply.as_ref().and_then(|r| r["hookSpecificOutput"]["additionalContext"].as_str()).unwrap_or_default().to_string()
}

fn person(reply: &Option<Value>) -> String {
    reply.as_ref().and_then(|r| r["systemMessage"].as_str()).unwrap_or_default().to_string()
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

/// Acceptance 3: two working copies of one repository, a live session in each. Setting the
/// away mode sweeps both and prints one list without waiting; the copy whose session runs a
/// hook answers (once, with the ask for its model) and the one whose session runs none is
/// listed as not reporting after the deadline, with its last known blockers.
#[test]
fn the_sweep_lists_every_working_copy_and_names_the_stale_one_not_reporting() {
    let repo = Repo::new();
    let (a, b) = (repo.root.clone(), repo.linked("second"));
    // A live session in each copy (a hook has run), each with a blocked item.
    // Journal lines carry the machine's own time, so the sweep is set ahead of it: the
    // checklist writes here come before the sweep began, as a person's would.
    const NOW: &str = "2036-12-01T18:00:00Z";
    repo.session_start(&a, NOW, "sa");
    repo.session_start(&b, NOW, "sb");
    repo.ok(&a, NOW, &["checklist", "add", "Choose the cache key", "--blocker", "decision"]);
    repo.ok(&b, NOW, &["checklist", "add", "Renew the deploy key", "--blocker", "credential"]);
    repo.ok(&b, NOW, &["checklist", "add", "Write the parser"]);

    let set = repo.ok(&a, NOW, &["mode", "autonomous", "--until", "+8h"]);
    assert!(set.contains("blocker sweep:") && set.contains("answers until 2036-12-01 18:10 UTC (0 of 2 working copies answered)"), "{set}");
    assert!(set.contains(&format!("{} (asked, no answer yet):\n  - 1: Choose the cache key (decision:", a.display())), "{set}");
    assert!(set.contains(&format!("{} (asked, no answer yet):\n  - 1: Renew the deploy key (credential:", b.display())), "{set}");
    assert!(!set.contains("Write the parser"), "only blocked items: {set}");
    assert!(set.contains("does not wait for the answers"), "{set}");

    // A's session runs a hook: it answers, and its model is asked to mark its blockers.
    let later = "2036-12-01T18:03:00Z";
    let first = context(&repo.prompt(&a, later, "sa"));
    assert!(
        first.contains("collects, until 2036-12-01 18:10 UTC, what could stop the sessions") && first.contains("--blocker KIND"),
        "{first}"
    );
    let second = context(&repo.prompt(&a, later, "sa"));
    assert!(!second.contains("--blocker"), "asked once per working copy: {second}");
    assert_eq!(repo.repository_kinds().iter().filter(|k| *k == "away.sweep_answered").count(), 1);

    // Before the deadline B is still awaited; after it, B is not reporting, with its items.
    let before = repo.ok(&a, "2036-12-01T18:09:59Z", &["mode"]);
    assert!(before.contains(&format!("{} (answered at ", a.display())), "{before}");
    assert!(before.contains(&format!("{} (asked, no answer yet)", b.display())), "{before}");
    let after = repo.ok(&a, "2036-12-01T18:10:00Z", &["mode"]);
    assert!(after.contains("(1 of 2 working copies answered)"), "{after}");
    assert!(
        after.contains(&format!(
            "{} (not reporting: no hook and no checklist write since the sweep began at 2036-12-01 18:00 UTC; last known blockers):\n  - 1: Renew the deploy key (credential: a credential missing or expiring)",
            b.display()
        )),
        "{after}"
    );
    let json: Value = serde_json::from_str(&repo.ok(&a, "2036-12-01T18:10:00Z", &["mode", "--json"])).unwrap();
    let states: Vec<&Value> = json["sweep"]["copies"].as_array().unwrap().iter().map(|c| &c["reporting"]["state"]).collect();
    assert_eq!(states, [&json!("answered"), &json!("not_reporting")], "{json}");
    // A hook in B after the deadline does not answer a closed sweep.
    assert!(!context(&repo.prompt(&b, "2036-12-01T18:11:00Z", "sb")).contains("--blocker"));
    assert_eq!(repo.repository_kinds().iter().filter(|k| *k == "away.sweep_answered").count(), 1);
}

/// The sweep's ask also rides a tool call, and not a session start (whose context is the
/// plan `abcd checklist render` shows); a deadline outside the bounds is refused and nothing
/// is written.
#[test]
fn the_ask_rides_a_tool_call_not_a_session_start_and_the_deadline_is_bounded() {
    let repo = Repo::new();
    let root = repo.root.clone();
    for (flag, ok) in [("+59s", false), ("+1m", true), ("+60m", true), ("+61m", false)] {
        let out = repo.abcd(&root, NOW, &["mode", "autonomous", "--sweep-deadline", flag]);
        assert_eq!(out.status.code(), Some(if ok { 0 } else { 2 }), "{flag}: {}", repo::text(&out));
    }
    let sets = repo.repository_kinds().iter().filter(|k| *k == "away.sweep_started").count();
    assert_eq!(sets, 2, "a refused deadline writes nothing");
    let payload =
        json!({"session_id": "s1", "cwd": root, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}});
    let tool = context(&repo.hook(&root, NOW, "pre-tool-use", payload.clone()));
    assert!(tool.contains("--blocker KIND"), "{tool}");
    assert_eq!(repo.hook(&root, NOW, "pre-tool-use", payload), None, "asked once");
    let other = repo.linked("other");
    let start = context(&repo.session_start(&other, NOW, "s2"));
    assert!(start.contains("the person is away") && !start.contains("--blocker KIND"), "{start}");
    assert!(context(&repo.prompt(&other, NOW, "s2")).contains("--blocker KIND"), "its first prompt answers");
}

/// Acceptance 4: the first prompt after `abcd mode back`, in a second working copy, shows
/// the model and the person the steps only the person can do, then the window's decisions
/// with grounds and undo, trade-offs first; the second prompt does not.
#[test]
fn the_first_prompt_after_back_in_a_second_copy_shows_the_return_lists_and_the_second_does_not() {
    let repo = Repo::new();
    let (a, b) = (repo.root.clone(), repo.linked("second"));
    repo.session_start(&b, NOW, "sb");
    repo.ok(&b, NOW, &["checklist", "add", "Sign the release", "--blocker", "hands"]);
    repo.ok(&b, NOW, &["checklist", "add", "Wait for the lint session", "--blocker", "session"]);
    repo.ok(&a, NOW, &["mode", "autonomous", "--until", "+8h"]);
    repo.ok(&a, NOW, &["mode", "queue", "push feat/x"]);
    repo.ok(&a, NOW, &["decide", "Keep the old parser", "--grounds", "its tests pass", "--undo", "git revert HEAD"]);
    repo.ok(&b, NOW, &["decide", "Cache in memory", "--grounds", "a 3x faster build", "--undo", "drop the cache", "--tradeoff", "speed"]);
    let refused = repo.abcd(&a, NOW, &["decide", "x", "--grounds", "y", "--undo", "z", "--tradeoff", "cost"]);
    assert_eq!(refused.status.code(), Some(2), "{}", repo::text(&refused));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--tradeoff must be one of security, speed, compatibility"));

    // While away, no return lists.
    assert!(!context(&repo.prompt(&b, "2026-12-01T18:20:00Z", "sb")).contains("Steps only the person can do"));
    let back = "2026-12-01T21:00:00Z";
    let report = repo.ok(&a, back, &["mode", "back"]);
    let tagged = report.find("decided (speed trade-off): Cache in memory").unwrap_or_else(|| panic!("{report}"));
    assert!(tagged < report.find("decided: Keep the old parser").unwrap(), "trade-offs first: {report}");

    let first = repo.prompt(&b, back, "sb");
    let (model, shown) = (context(&first), person(&first));
    for text in [&model, &shown] {
        let steps = text.find("Steps only the person can do:").unwrap_or_else(|| panic!("{text}"));
        let decided = text.find("Decided while they were away (trade-offs first)").unwrap_or_else(|| panic!("{text}"));
        assert!(steps < decided, "steps first: {text}");
        assert!(text.contains(&format!("- queued from {}: push feat/x", a.display())), "{text}");
        assert!(text.contains("item 1 (hands: a step only the person's hands can do): Sign the release"), "{text}");
        assert!(!text.contains("Wait for the lint session"), "another session's dependency is not the person's step: {text}");
        let tradeoff = text.find("- speed trade-off: Cache in memory (grounds: a 3x faster build; undo: drop the cache)").unwrap();
        let plain = text.find("- Keep the old parser (grounds: its tests pass; undo: git revert HEAD)").unwrap();
        assert!(tradeoff < plain, "trade-offs first: {text}");
    }
    assert!(model.contains("] abcd: the person is back from the away window."), "{model}");
    let again = repo.prompt(&b, back, "sb");
    assert!(!context(&again).contains("Steps only the person can do") && !person(&again).contains("back from the away window"));
    // The first copy gets its own, once.
    assert!(context(&repo.prompt(&a, back, "sa")).contains("Steps only the person can do"));
    assert!(!context(&repo.prompt(&a, back, "sa")).contains("Steps only the person can do"));
    assert_eq!(repo.repository_kinds().iter().filter(|k| *k == "away.return_shown").count(), 2);
}

/// Issue 35's trip-ups: away right after `abcd init`, with no working copy that has a
/// journal yet, the sweep's line says there is none to ask instead of "0 of 0".
#[test]
fn right_after_init_the_sweep_says_no_working_copy_to_ask() {
    let repo = Repo::new();
    let out = repo.ok(&repo.root, NOW, &["mode", "autonomous"]);
    assert!(!out.contains("0 of 0"), "{out}");
    assert!(out.contains("(no working copy to ask yet: none has a journal)"), "{out}");
    // One working copy with a journal: counted as before.
    repo.ok(&repo.root, NOW, &["checklist", "add", "Write the parser"]);
    let mode = repo.ok(&repo.root, NOW, &["mode"]);
    assert!(mode.contains("(1 of 1 working copy answered)"), "{mode}");
}

/// Issue 35: the sweep's deadline is a machine setting (`abcd mode sweep-deadline MINUTES`,
/// 1 to 60, kept in the home store), used when `--sweep-deadline` is not given; whichever
/// sets it, the deadline never runs past the window's end.
#[test]
fn the_sweep_deadline_is_a_machine_setting_clamped_to_the_window() {
    let repo = Repo::new();
    let root = repo.root.clone();
    for (minutes, ok) in [("0", false), ("1", true), ("60", true), ("61", false)] {
        let out = repo.abcd(&root, NOW, &["mode", "sweep-deadline", minutes]);
        assert_eq!(out.status.code(), Some(if ok { 0 } else { 2 }), "{minutes}: {}", repo::text(&out));
    }
    let set = repo.ok(&root, NOW, &["mode", "sweep-deadline", "20"]);
    assert!(set.contains("20 minutes"), "{set}");
    assert!(repo.ok(&root, NOW, &["mode", "sweep-deadline"]).contains("20 minutes"), "it is kept");
    // The machine's setting.
    let out = repo.ok(&root, NOW, &["mode", "autonomous", "--until", "+2h"]);
    assert!(out.contains("answers until 2026-12-01 18:20 UTC"), "{out}");
    // A window shorter than the setting: the sweep ends with the window.
    let out = repo.ok(&root, NOW, &["mode", "autonomous", "--until", "+5m"]);
    assert!(out.contains("answers until 2026-12-01 18:05 UTC"), "{out}");
    // So does one given on the command line.
    let out = repo.ok(&root, NOW, &["mode", "autonomous", "--until", "+15m", "--sweep-deadline", "+30m"]);
    assert!(out.contains("answers until 2026-12-01 18:15 UTC"), "{out}");
    // A window at the bound ends the sweep with it; one shorter than a sweep's least
    // length starts none (no session could answer in it).
    let out = repo.ok(&root, NOW, &["mode", "autonomous", "--until", "+1m"]);
    assert!(out.contains("answers until 2026-12-01 18:01 UTC"), "{out}");
    let out = repo.ok(&root, NOW, &["mode", "autonomous", "--until", "+59s"]);
    assert!(!out.contains("answers until") && out.contains("no blocker sweep: the window is shorter than 1 minute"), "{out}");
}
