//! Lanes an agent can work in (issue 33), through the built binary against real git
//! repositories: the one "abcd's own file" rule lets a lane's agent write its own files
//! and still refuses every kind of abcd's own file; a worktree whose git link is broken is
//! named by every hook; a lane whose base commit lacks abcd's hooks still gets them, and its
//! session start says where the agent is.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::repo::{self, README};
use serde_json::{Value, json};

struct Copy {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

/// A managed working copy; with `commit_hooks`, the settings `abcd init` wrote are committed
/// (so a lane's worktree holds them).
fn copy(commit_hooks: bool) -> Copy {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let home = dir.path().join("home");
    repo::create(&root, &[README]);
    let c = Copy { _dir: dir, root, home };
    let out = c.abcd(&["init"]);
    assert!(out.status.success(), "{}", repo::text(&out));
    if commit_hooks {
        repo::git(&c.root, &["add", ".claude"]);
        repo::git(&c.root, &["commit", "-q", "-m", "abcd hooks"]);
    }
    c
}

impl Copy {
    fn command(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
        cmd.args(args)
            .current_dir(dir)
            .env("ABCD_HOME", &self.home)
            .env("ABCD_GH", "")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("CLAUDE_CODE_SESSION_ID");
        cmd
    }

    fn abcd(&self, args: &[&str]) -> Output {
        self.command(&self.root, args).output().unwrap()
    }

    /// `abcd hook <event>` run in `dir` with `payload`; a hook always exits 0.
    fn hook(&self, dir: &Path, event: &str, payload: &Value) -> Output {
        use std::io::Write;
        let mut child = self
            .command(dir, &["hook", event])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "a hook always exits 0: {}", repo::text(&out));
        out
    }

    /// Starts run `r1` with lane `impl` (driven by a live `sleep`) and launches `command`
    /// in the lane's own worktree; the worktree's path once the agent has exited.
    fn lane(&self, command: &[&str]) -> (PathBuf, Driver) {
        let driver = Driver(Command::new("sleep").arg("60").spawn().unwrap());
        let pid = driver.0.id().to_string();
        let out = self.abcd(&["run", "start", "r1", "--lane", "impl", "--driver-pid", &pid]);
        assert!(out.status.success(), "{}", repo::text(&out));
        let mut args = vec!["launch", "--run", "r1", "--lane", "impl", "--role", "implementer", "--receipt", "RECEIPT.md", "--"];
        args.extend_from_slice(command);
        let out = self.abcd(&args);
        assert!(out.status.success(), "{}", repo::text(&out));
        let listing = || -> Value { serde_json::from_slice(&self.abcd(&["resume", "--json"]).stdout).unwrap() };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let v = listing();
            let lane = &v["runs"][0]["lanes"][0];
            if lane["stage"].as_str().is_some_and(|s| s.contains("exited") || s.contains("receipt")) {
                return (PathBuf::from(lane["worktree"].as_str().unwrap()), driver);
            }
            assert!(Instant::now() < deadline, "the lane's agent never exited: {v}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A run's live driver, killed and reaped when the test ends.
struct Driver(std::process::Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn write_payload(dir: &Path, tool: &str, path: &Path) -> Value {
    json!({"session_id": "lane-s1", "cwd": dir, "hook_event_name": "PreToolUse", "tool_name": tool,
        "tool_input": {"file_path": path, "content": "x", "old_string": "a", "new_string": "b"}})
}

fn deny_reason(out: &Output) -> Option<String> {
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(text.trim()).ok()?;
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    Some(v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().to_string())
}

/// Rule 1: in the lane's worktree under the home store, the agent's Write and Edit of the
/// lane's source files are allowed; every kind of abcd's own file is still refused: the
/// home store's journals, projections, anchors, checkpoints and settings, the lanes folder
/// outside a lane, and abcd's own paths inside the lane (its local tier, `.abcd/`, the host
/// settings).
#[test]
fn a_lanes_source_files_are_its_agents_and_abcds_own_files_stay_refused() {
    let c = copy(true);
    let (lane, _driver) = c.lane(&["true"]);
    assert!(lane.starts_with(&c.home), "{}", lane.display());
    for tool in ["Write", "Edit"] {
        for rel in ["src/lane_note.rs", "README", "docs/new/deep.md"] {
            let out = c.hook(&lane, "pre-tool-use", &write_payload(&lane, tool, &lane.join(rel)));
            assert_eq!(deny_reason(&out), None, "{tool} {rel} in the lane is the agent's: {}", repo::text(&out));
            assert!(out.stderr.is_empty(), "{}", repo::text(&out));
        }
    }
    let root_commit = repo::git(&c.root, &["rev-list", "--max-parents=0", "HEAD"]);
    let repo_home = c.home.join("repos").join(root_commit.trim());
    let lanes_of_copy = lane.parent().unwrap().parent().unwrap();
    let own = [
        repo_home.join("journal.jsonl"),
        repo_home.join("state.json"),
        repo_home.join("checkpoints/00000000000000000001.json"),
        repo_home.join("mirror-auto.json"),
        c.home.join("machine.jsonl"),
        c.home.join("anchors/x.anchor"),
        lanes_of_copy.join("r1/notes.md"),
        lanes_of_copy.join("notes.md"),
        lane.join(".abcd/.work.local/journal.jsonl"),
        lane.join(".abcd/.work.local/checklist.json"),
        lane.join(".abcd/config.toml"),
        lane.join(".claude/settings.json"),
        lane.join(".claude/settings.local.json"),
        c.root.join(".abcd/.work.local/state.json"),
    ];
    for tool in ["Write", "Edit"] {
        for path in &own {
            let out = c.hook(&lane, "pre-tool-use", &write_payload(&lane, tool, path));
            let reason = deny_reason(&out).unwrap_or_else(|| panic!("{tool} {} was allowed", path.display()));
            assert!(reason.starts_with(&format!("abcd refuses {tool} on {}", path.display())), "{reason}");
            assert!(reason.contains("`abcd checklist add|set`"), "the refusal says what to run instead: {reason}");
        }
    }
}

/// Rule 2: a linked worktree whose `.git` file names a git folder that is gone (the main
/// checkout was moved): every hook prints one line on stderr naming the folder and
/// `git worktree repair`, and still allows (exit 0, no reply).
#[test]
fn a_broken_worktree_link_is_named_on_stderr_by_every_hook() {
    let c = copy(true);
    let linked = c.root.parent().unwrap().join("linked");
    repo::git(&c.root, &["worktree", "add", "-q", "-b", "feat/linked", linked.to_str().unwrap()]);
    // The hooks work there while the link holds.
    let start = json!({"session_id": "s1", "cwd": linked, "hook_event_name": "SessionStart", "source": "startup"});
    let out = c.hook(&linked, "session-start", &start);
    assert!(out.stderr.is_empty() && !out.stdout.is_empty(), "{}", repo::text(&out));
    std::fs::rename(&c.root, c.root.with_file_name("repo-moved")).unwrap();
    let payloads = [
        ("session-start", start),
        ("user-prompt-submit", json!({"session_id": "s1", "cwd": linked, "hook_event_name": "UserPromptSubmit", "prompt": "go"})),
        ("pre-tool-use", write_payload(&linked, "Write", &linked.join("src/x.rs"))),
        ("pre-compact", json!({"session_id": "s1", "cwd": linked, "hook_event_name": "PreCompact", "trigger": "manual"})),
        ("post-compact", json!({"session_id": "s1", "cwd": linked, "hook_event_name": "PostCompact", "trigger": "manual"})),
        (
            "stop",
            json!({"session_id": "s1", "cwd": linked, "hook_event_name": "Stop", "stop_hook_active": false,
                "last_assistant_message": "done", "background_tasks": [], "session_crons": []}),
        ),
        ("stop-failure", json!({"session_id": "s1", "cwd": linked, "hook_event_name": "StopFailure", "error": "rate_limit"})),
        (
            "notification",
            json!({"session_id": "s1", "cwd": linked, "hook_event_name": "Notification", "notification_type": "idle_prompt",
                "message": "waiting"}),
        ),
    ];
    for (event, payload) in payloads {
        let out = c.hook(&linked, event, &payload);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{event}: one line: {stderr}");
        assert!(stderr.contains(&linked.display().to_string()) && stderr.contains("git worktree repair"), "{event}: {stderr}");
        assert!(out.stdout.is_empty(), "{event}: it allows, with no reply: {}", repo::text(&out));
    }
}

/// The abcd handlers (`abcd hook <event>`) a settings file holds, by event name.
fn abcd_handlers(settings: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(settings) else { return vec![] };
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut events = vec![];
    for (event, groups) in v["hooks"].as_object().into_iter().flatten() {
        let ours = groups
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
            .any(|h| h["args"][0] == "hook");
        if ours {
            events.push(event.clone());
        }
    }
    events.sort();
    events
}

/// Rule 4: a lane cut from a base with no committed settings: `abcd launch` gives the lane's
/// agent abcd's hooks in the lane's `.claude/settings.local.json` (every event the person's
/// checkout has), kept out of git, the person's checkout untouched; the lane's session start
/// says where the agent is (run, lane, role, the receipt and where). With the hooks
/// committed, nothing is written.
#[test]
fn a_lane_whose_base_lacks_the_hooks_gets_them_and_its_start_says_where_it_is() {
    let c = copy(false);
    let person_status = repo::git(&c.root, &["status", "--porcelain"]);
    assert!(person_status.contains(".claude/"), "the settings are not committed: {person_status}");
    let (lane, _driver) = c.lane(&["true"]);
    assert!(!lane.join(".claude/settings.json").exists(), "the base commit holds no settings");
    let expected = abcd_handlers(&c.root.join(".claude/settings.json"));
    assert_eq!(expected.len(), 8, "{expected:?}");
    assert_eq!(abcd_handlers(&lane.join(".claude/settings.local.json")), expected, "the lane's agent runs with every hook");
    assert_eq!(repo::git(&lane, &["status", "--porcelain"]), "", "the local settings are kept out of git");
    assert_eq!(repo::git(&c.root, &["status", "--porcelain"]), person_status, "the person's checkout is as it was");

    let start = json!({"session_id": "lane-s1", "cwd": lane, "hook_event_name": "SessionStart", "source": "startup"});
    let out = c.hook(&lane, "session-start", &start);
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", repo::text(&out)));
    let context = reply["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(
        context.contains("implementer of lane r1/impl: do the lane's work here, then write the receipt RECEIPT.md · refs: abcd/r1/impl"),
        "{context}"
    );
    let journal = std::fs::read_to_string(lane.join(".abcd/.work.local/journal.jsonl")).unwrap();
    assert_eq!(journal.matches("\"session.started\"").count(), 1, "the lane's session is journaled in the lane");

    // Committed hooks: the lane's settings hold them, and no local settings are written.
    let c = copy(true);
    let (lane, _driver) = c.lane(&["true"]);
    assert_eq!(abcd_handlers(&lane.join(".claude/settings.json")).len(), 8);
    assert!(!lane.join(".claude/settings.local.json").exists());
}

/// Rule 4, a loop's turn: the turn runner's `ABCD_LOOP_*` reach the hooks through the host's
/// environment, and the session start names the loop, the turn, the phase, the round and
/// the step before the lane's plan.
#[test]
fn a_loop_turns_session_start_names_the_turn() {
    let c = copy(true);
    let (lane, _driver) = c.lane(&["true"]);
    let start = json!({"session_id": "lane-s2", "cwd": lane, "hook_event_name": "SessionStart", "source": "startup"});
    // The lane is run r1's: the environment counts only in a worktree of the run it names.
    let turn = [
        ("ABCD_LOOP_RUN", "r1"),
        ("ABCD_LOOP_TURN", "3"),
        ("ABCD_LOOP_PHASE", "2"),
        ("ABCD_LOOP_ROUND", "1"),
        ("ABCD_LOOP_STEP", "advance"),
    ];
    use std::io::Write;
    let mut child = c
        .command(&lane, &["hook", "session-start"])
        .envs(turn)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(start.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", repo::text(&out)));
    let context = common::unmarked(reply["hookSpecificOutput"]["additionalContext"].as_str().unwrap());
    assert!(
        context.starts_with("abcd: this session is turn 3 of loop r1 (phase 2, round 1, the advance step), in the loop's lane worktree"),
        "{context}"
    );
    assert!(context.contains("implementer of lane r1/impl"), "the lane's plan follows: {context}");
}
