//! The hooks through the real binary, fed payloads shaped as the host documents them
//! (`tests/fixtures/hooks/`). Each test has its own working copy and ABCD_HOME.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::repo::TestRepo;
use serde_json::{Value, json};

/// A hook must answer before the host's timeout (`HOOK_TIMEOUT_SECS`, 10 s) kills it; the
/// bound leaves room for a loaded machine, and the lock a test holds is held far longer, so
/// waiting for it would still show.
const HOOK_DEADLINE: Duration = Duration::from_secs(8);

struct Repo {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Repo {
    fn new(managed: bool) -> Repo {
        let folder = TestRepo::folder();
        let TestRepo { dir, root, home } = if managed { folder.managed() } else { folder };
        Repo { home, root, _dir: dir }
    }

    /// A managed working copy in a git repository (the away record is the repository's).
    fn in_git() -> Repo {
        let TestRepo { dir, root, home } = TestRepo::new().managed();
        Repo { _dir: dir, root, home }
    }

    fn abcd(&self, args: &[&str]) -> Output {
        self.abcd_with(args, &[])
    }

    fn abcd_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
        cmd.args(args).current_dir(&self.root).env("ABCD_HOME", &self.home);
        cmd.envs(env.iter().copied()).output().unwrap()
    }

    fn journal(&self) -> PathBuf {
        self.root.join(".abcd/.work.local/journal.jsonl")
    }

    fn kinds(&self) -> Vec<String> {
        std::fs::read_to_string(self.journal())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].as_str().unwrap().to_string())
            .collect()
    }

    /// The data of the last event of `kind`.
    fn data_of_kind(&self, kind: &str) -> Value {
        let text = std::fs::read_to_string(self.journal()).unwrap();
        let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        events.into_iter().rev().find(|e| e["kind"] == kind).unwrap()["data"].clone()
    }

    fn last_data(&self) -> Value {
        let text = std::fs::read_to_string(self.journal()).unwrap();
        serde_json::from_str::<Value>(text.lines().last().unwrap()).unwrap()["data"].clone()
    }
}

fn fixture(name: &str, vars: &[(&str, &str)]) -> Vec<u8> {
    let mut text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks").join(name)).unwrap();
    for (k, v) in vars {
        text = text.replace(k, &v.replace('\\', "\\\\").replace('"', "\\\""));
    }
    text.into_bytes()
}

/// Runs `abcd hook <event>` with `payload` on stdin; returns output and how long it took.
fn hook(repo: &Repo, event: &str, payload: &[u8], env: &[(&str, &str)]) -> (Output, Duration) {
    let started = Instant::now();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
    cmd.args(["hook", event])
        .current_dir(&repo.root)
        .env("ABCD_HOME", &repo.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The hook may stop reading early (a payload over the cap): a broken pipe is fine.
    let _ = stdin.write_all(payload);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    (out, started.elapsed())
}

fn stdout_json(out: &Output) -> Option<Value> {
    let text = String::from_utf8_lossy(&out.stdout);
    (!text.trim().is_empty()).then(|| serde_json::from_str(text.trim()).unwrap())
}

fn cwd(repo: &Repo) -> String {
    repo.root.display().to_string()
}

#[test]
fn session_start_reinjects_the_checklist_for_every_source_and_records_the_start() {
    let repo = Repo::new(true);
    assert!(repo.abcd(&["checklist", "add", "Fix the login bug", "--owner-ref", "feat/login"]).status.success());
    for source in ["startup", "resume", "clear", "compact"] {
        let (out, took) = hook(&repo, "session-start", &fixture(&format!("session-start-{source}.json"), &[("$CWD", &cwd(&repo))]), &[]);
        assert_eq!(out.status.code(), Some(0));
        assert!(took < HOOK_DEADLINE);
        assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
        let expected_context = "abcd keeps this checklist across compaction; edit: `abcd checklist add|set <id>`.\n\
working (1):\n\
1: Fix the login bug · refs: feat/login\n";
        let reply = stdout_json(&out).unwrap();
        assert_eq!(reply["hookSpecificOutput"]["hookEventName"], "SessionStart");
        assert_eq!(common::unmarked(reply["hookSpecificOutput"]["additionalContext"].as_str().unwrap()), expected_context);
        let kinds = repo.kinds();
        assert_eq!(kinds[kinds.len() - 2..], ["session.started", "context.injected"]);
        let started = repo.data_of_kind("session.started");
        assert_eq!(started, json!({"session": "abc123", "source": source, "working_copy": cwd(&repo)}));
    }
}

/// The Stop reads the checklist's owed part summed up in `prompt-state.json` (written with
/// the plan), not the plan, present or away: shown by a summary forged, and sealed as abcd
/// seals one, to name other items. Past the summary's span (a look falls due), or with a
/// clock before it, the plan decides.
#[test]
fn the_stop_reads_the_checklists_owed_part_from_the_prompt_state() {
    use abcd::verdict::stop::{Owed, OwedPart};
    let repo = Repo::in_git();
    let vars = [("$CWD", cwd(&repo))];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert!(repo.abcd(&["checklist", "add", "Ship it"]).status.success());
    let stop = |env: &[(&str, &str)]| stdout_json(&hook(&repo, "stop", &fixture("stop.json", &vars), env).0).unwrap();
    let planned = json!({"systemMessage": "abcd: stopped with work owed (1 item); next: checklist item 1 (Ship it) is working."});
    assert_eq!(stop(&[]), planned);

    let path = repo.root.join(".abcd/.work.local").join(abcd::store::projection::PROMPT_STATE_FILE);
    let mut file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let as_of: jiff::Timestamp = file["owed"]["as_of"].as_str().unwrap().parse().unwrap();
    let forged: Vec<Owed> =
        (0..7).map(|i| Owed::Working { id: format!("forged-{i}"), title: "Forged".into(), added_seq: i, promised: false }).collect();
    file["owed"]["part"] = serde_json::to_value(OwedPart::of(&forged)).unwrap();
    std::fs::write(&path, abcd::store::projection::seal_prompt_state_json(&file)).unwrap();
    let now = (as_of + jiff::SignedDuration::from_mins(1)).to_string();
    let from_summary =
        json!({"systemMessage": "abcd: stopped with work owed (7 items); next: checklist item forged-0 (Forged) is working."});
    assert_eq!(stop(&[("ABCD_TEST_NOW", &now)]), from_summary, "the present Stop reads the summary");

    // The span ends at the first waiting look after `as_of`: past it, the plan decides.
    file["owed"]["until"] = json!((as_of + jiff::SignedDuration::from_secs(30)).to_string());
    std::fs::write(&path, abcd::store::projection::seal_prompt_state_json(&file)).unwrap();
    assert_eq!(stop(&[("ABCD_TEST_NOW", &now)]), planned, "past until");
    file["owed"]["until"] = Value::Null;
    std::fs::write(&path, abcd::store::projection::seal_prompt_state_json(&file)).unwrap();
    assert_eq!(stop(&[("ABCD_TEST_NOW", &now)]), from_summary);
    let before = (as_of - jiff::SignedDuration::from_mins(1)).to_string();
    assert_eq!(stop(&[("ABCD_TEST_NOW", &before)]), planned, "a clock before as_of");

    // Away, the verdict is decided, and recorded, from the summary too. (The Stop with the
    // clock before the summary wrote it again from the plan: it is forged again.)
    assert!(repo.abcd(&["mode", "autonomous", "--until", "+2h"]).status.success());
    std::fs::write(&path, abcd::store::projection::seal_prompt_state_json(&file)).unwrap();
    let judged = || repo.kinds().iter().filter(|k| *k == "session.judged").count();
    let before = judged();
    let away = stop(&[]);
    let reason = away["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_default().to_string()
        + away["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("work is owed (7 items)") && reason.contains("forged-0"), "{away}");
    assert_eq!(judged(), before + 1, "the away verdict is recorded");
}

/// A summary that no longer holds (a waiting item's look fell due since the plan's write)
/// is summed up again by the Stop that read the plan for it, so the next Stop reads the
/// summary again; the look due is counted either way.
#[test]
fn a_stop_past_the_summarys_span_sums_it_up_again() {
    let repo = Repo::in_git();
    let vars = [("$CWD", cwd(&repo))];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let look = "2026-12-01T12:00:00Z";
    let written = "2026-12-01T11:00:00Z";
    let add = |args: &[&str]| {
        let out = repo.abcd_with(args, &[("ABCD_TEST_NOW", written)]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    add(&["checklist", "add", "Ship it"]);
    add(&["checklist", "add", "Review the pull request", "--waits-on", "pr:7", "--next-look", look]);
    let path = repo.root.join(".abcd/.work.local").join(abcd::store::projection::PROMPT_STATE_FILE);
    let summary = || -> Value { serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap()).unwrap()["owed"].clone() };
    assert_eq!((summary()["as_of"].as_str(), summary()["until"].as_str()), (Some(written), Some(look)));
    let later = "2026-12-01T12:01:00Z";
    let stop = || stdout_json(&hook(&repo, "stop", &fixture("stop.json", &vars), &[("ABCD_TEST_NOW", later)]).0).unwrap();
    let both = "abcd: stopped with work owed (2 items); next: checklist item 1 (Ship it) is working.";
    assert_eq!(stop()["systemMessage"], both);
    assert_eq!((summary()["as_of"].as_str(), summary()["until"].clone()), (Some(later), Value::Null), "summed up again at the stop");
    assert_eq!(summary()["part"]["count"], 2);
    assert_eq!(stop()["systemMessage"], both, "the next stop reads the new summary");
}

#[test]
fn compaction_stop_and_prompt_hooks_answer_as_the_host_expects() {
    let repo = Repo::new(true);
    let vars = [("$CWD", cwd(&repo))];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let (out, _) = hook(&repo, "pre-compact", &fixture("pre-compact.json", &vars), &[]);
    assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), None));
    assert_eq!(repo.kinds().last().unwrap(), "compaction.recorded");
    assert_eq!(repo.last_data(), json!({"session": "abc123", "trigger": "manual"}));
    let events = repo.kinds().len();

    let (out, _) = hook(&repo, "post-compact", &fixture("post-compact.json", &vars), &[]);
    assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), None));
    let (out, _) = hook(&repo, "stop-failure", &fixture("stop-failure.json", &vars), &[]);
    assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), None));
    // Nothing owed: the present-mode stop allows silently.
    let (out, _) = hook(&repo, "stop", &fixture("stop.json", &vars), &[]);
    assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), None));
    let (out, _) = hook(&repo, "user-prompt-submit", &fixture("user-prompt-submit.json", &vars), &[]);
    assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), None));
    assert_eq!(repo.kinds().len(), events, "these hooks record nothing while the person is present");

    // With working items, stop allows and names them in one line for the person.
    assert!(repo.abcd(&["checklist", "add", "Ship it"]).status.success());
    let (out, _) = hook(&repo, "stop", &fixture("stop.json", &vars), &[]);
    assert_eq!(
        stdout_json(&out).unwrap(),
        json!({"systemMessage": "abcd: stopped with work owed (1 item); next: checklist item 1 (Ship it) is working."})
    );

    // A branch creation the recorder saw but git never made (this folder has no history at
    // all) is never named: the behind note reads the own branches from git
    // (tests/hooks/own_work.rs has the cases with real git).
    let (out, _) = hook(
        &repo,
        "pre-tool-use",
        &fixture("pre-tool-use-bash.json", &[("$CWD", &cwd(&repo)), ("$COMMAND", "git switch -c feat/x")]),
        &[],
    );
    assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), None));
    assert_eq!(repo.kinds().last().unwrap(), "branch.created");
    let (out, _) = hook(&repo, "user-prompt-submit", &fixture("user-prompt-submit.json", &vars), &[]);
    assert_eq!(stdout_json(&out), None, "a branch git never made is never named");
}

fn assert_fails_open(repo: &Repo, event: &str, payload: &[u8], env: &[(&str, &str)], what: &str) {
    let (out, took) = hook(repo, event, payload, env);
    assert_eq!(out.status.code(), Some(0), "{what}");
    assert!(took < HOOK_DEADLINE, "{what}: took {took:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("\"deny\"") && !stdout.contains("\"block\""), "{what}: {stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{what}: one line on stderr, got {stderr:?}");
    assert!(stderr.starts_with(&format!("abcd hook {event}:")), "{what}: {stderr}");
}

#[test]
fn every_fault_fails_open_loudly_before_the_hosts_timeout() {
    let repo = Repo::new(true);
    assert!(repo.abcd(&["checklist", "add", "An item"]).status.success());
    let good = fixture("stop.json", &[("$CWD", &cwd(&repo))]);
    let huge = {
        let mut v = br#"{"cwd":"/tmp","pad":""#.to_vec();
        v.extend(std::iter::repeat_n(b'a', 20 << 20));
        v.extend_from_slice(b"\"}");
        v
    };
    for event in
        ["session-start", "user-prompt-submit", "pre-tool-use", "pre-compact", "post-compact", "stop", "stop-failure", "notification"]
    {
        assert_fails_open(&repo, event, b"", &[], &format!("{event}: empty stdin"));
        assert_fails_open(&repo, event, b"{not json", &[], &format!("{event}: invalid JSON"));
        assert_fails_open(&repo, event, b"[1,2]", &[], &format!("{event}: a JSON array"));
        assert_fails_open(&repo, event, &huge, &[], &format!("{event}: a 20 MiB payload"));
        assert_fails_open(&repo, event, br#"{"session_id":"s"}"#, &[], &format!("{event}: missing cwd"));
        assert_fails_open(&repo, event, br#"{"cwd":"/no/such/folder/anywhere"}"#, &[], &format!("{event}: a cwd that does not exist"));
        assert_fails_open(&repo, event, &good, &[("ABCD_HOOK_FAULT", "panic")], &format!("{event}: a panic"));
    }
    assert_fails_open(&repo, "session-start", &good, &[], "a payload for another event");
}

#[test]
fn an_unreadable_journal_or_a_held_lock_still_lets_the_session_through() {
    let repo = Repo::new(true);
    assert!(repo.abcd(&["checklist", "add", "Kept in last good"]).status.success());
    let start = fixture("session-start-startup.json", &[("$CWD", &cwd(&repo))]);
    // A lock held for 30 s by another process.
    let lock = repo.root.join(".abcd/.work.local/journal.jsonl.lock");
    let mut holder = Command::new("flock").args([lock.to_str().unwrap(), "sleep", "30"]).spawn().unwrap();
    // Held once a non-blocking try fails, however long the holder took to start.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while Command::new("flock").args(["-n", lock.to_str().unwrap(), "true"]).status().unwrap().success() {
        assert!(std::time::Instant::now() < deadline, "the holder never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (out, took) = hook(&repo, "session-start", &start, &[]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(out.status.code(), Some(0));
    assert!(took < HOOK_DEADLINE, "took {took:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    let context = stdout_json(&out).unwrap()["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_string();
    assert!(context.contains("Kept in last good"), "the checklist is still re-injected: {context}");

    // An unreadable journal: the context falls back to last-good, with one line why.
    std::fs::write(repo.journal(), b"\x00\x01 garbage").unwrap();
    let (out, took) = hook(&repo, "session-start", &start, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(took < HOOK_DEADLINE);
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    let context = stdout_json(&out).unwrap()["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_string();
    assert!(context.contains("Kept in last good") && context.contains("could not be read"), "{context}");
}

#[test]
fn outside_a_managed_checkout_every_hook_is_silent_and_writes_nothing() {
    for managed_repo in [false] {
        let plain_repo = Repo::new(managed_repo);
        let no_repo_dir = tempfile::tempdir().unwrap();
        for dir in [plain_repo.root.clone(), no_repo_dir.path().to_path_buf()] {
            let before: Vec<PathBuf> = walk(&dir);
            for (event, file) in [
                ("session-start", "session-start-startup.json"),
                ("user-prompt-submit", "user-prompt-submit.json"),
                ("pre-compact", "pre-compact.json"),
                ("post-compact", "post-compact.json"),
                ("stop", "stop.json"),
                ("stop-failure", "stop-failure.json"),
                ("notification", "notification.json"),
            ] {
                let payload = fixture(file, &[("$CWD", &dir.display().to_string())]);
                let (out, _) = hook(&plain_repo, event, &payload, &[]);
                assert_eq!(out.status.code(), Some(0));
                assert!(
                    out.stdout.is_empty() && out.stderr.is_empty(),
                    "{event} in {}: {}",
                    dir.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let payload = fixture("pre-tool-use-bash.json", &[("$CWD", &dir.display().to_string()), ("$COMMAND", "git switch -c x")]);
            let (out, _) = hook(&plain_repo, "pre-tool-use", &payload, &[]);
            assert!(out.stdout.is_empty() && out.stderr.is_empty());
            assert_eq!(walk(&dir), before, "a hook wrote into {}", dir.display());
            assert!(!plain_repo.home.exists(), "a hook created the home store");
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out.sort();
    out
}

#[test]
fn five_hundred_long_items_stay_within_the_hosts_cap_and_name_what_was_left_out() {
    let repo = Repo::new(true);
    let journal = abcd::journal::Journal::new(
        abcd::journal::storage::RealDisk::shared(),
        abcd::journal::JournalPaths::beside(&repo.journal()),
        Some(abcd::journal::anchor::AnchorStore::new(&repo.home)),
    );
    let store = abcd::store::Store::new(journal);
    let scope = abcd::event::Scope::WorkingCopy { root: cwd(&repo) };
    for chunk in (0..500).collect::<Vec<u32>>().chunks(100) {
        let events: Vec<abcd::journal::NewEvent> = chunk
            .iter()
            .map(|n| {
                let title: String =
                    format!("{n:03} {}", "words of a long title ".repeat(10)).chars().take(200).collect::<String>().trim_end().to_string();
                abcd::journal::NewEvent {
                    kind: "checklist.item_added".into(),
                    actor: abcd::journal::Actor::this_process(None),
                    data: json!({"item": {"id": format!("item-{n}"), "title": title, "state": "working", "owner_refs": []}}),
                }
            })
            .collect();
        store.append(&events, Some(&scope)).unwrap();
    }
    let (out, _) = hook(&repo, "session-start", &fixture("session-start-compact.json", &[("$CWD", &cwd(&repo))]), &[]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.chars().count() <= 10_000, "the whole hook output is {} characters", stdout.chars().count());
    let context = serde_json::from_str::<Value>(&stdout).unwrap()["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_string();
    let context = common::unmarked(&context);
    let shown = context.lines().filter(|l| l.starts_with("item-")).count();
    assert!(shown > 10, "{shown} items shown");
    assert!(context.ends_with(&format!("({} more items not shown; run `abcd checklist` to see them)\n", 500 - shown)), "{context}");
}

#[test]
fn the_file_tools_are_refused_on_abcds_own_files_and_allowed_elsewhere() {
    let repo = Repo::new(true);
    assert!(repo.abcd(&["checklist", "add", "x"]).status.success());
    std::fs::create_dir_all(repo.root.join("src")).unwrap();
    let link = repo.root.parent().unwrap().join("linked-wc");
    std::os::unix::fs::symlink(&repo.root, &link).unwrap();
    let tier = repo.root.join(".abcd/.work.local");
    let protected = [
        tier.join("journal.jsonl").display().to_string(),
        tier.join("checklist.json").display().to_string(),
        tier.join("checklist.last-good.json").display().to_string(),
        tier.join("state.json").display().to_string(),
        repo.root.join("src/../.abcd/.work.local/checklist.json").display().to_string(),
        link.join(".abcd/.work.local/journal.jsonl").display().to_string(),
        ".abcd/.work.local/checklist.json".to_string(),
        repo.home.join("anchors/x.anchor").display().to_string(),
    ];
    for tool in ["Write", "Edit", "MultiEdit", "NotebookEdit"] {
        let key = if tool == "NotebookEdit" { "notebook_path" } else { "file_path" };
        for path in &protected {
            let payload = fixture("pre-tool-use-write.json", &[("$CWD", &cwd(&repo)), ("$TOOL", tool), ("$PATHKEY", key), ("$PATH", path)]);
            let (out, _) = hook(&repo, "pre-tool-use", &payload, &[]);
            let v = stdout_json(&out).unwrap_or_else(|| panic!("{tool} {path} was allowed"));
            assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
            assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{tool} {path}");
            assert!(v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().contains("abcd checklist add|set"));
        }
        for path in [repo.root.join("src/main.rs").display().to_string(), "README.md".to_string()] {
            let payload =
                fixture("pre-tool-use-write.json", &[("$CWD", &cwd(&repo)), ("$TOOL", tool), ("$PATHKEY", key), ("$PATH", &path)]);
            let (out, _) = hook(&repo, "pre-tool-use", &payload, &[]);
            assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), None), "{tool} {path} must be allowed");
        }
    }
}

#[test]
fn the_branch_recorder_records_every_creation_form_and_nothing_for_an_existing_branch() {
    let repo = Repo::new(true);
    std::fs::write(repo.root.join(".git/refs/heads/main"), "0123456789012345678901234567890123456789\n").unwrap();
    std::fs::write(repo.root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    assert!(repo.abcd(&["checklist", "add", "Start the journal"]).status.success());
    let cases = [
        ("git switch -c feat/a", Some(("feat/a", "git switch -c"))),
        ("git switch -C feat/b main", Some(("feat/b", "git switch -C"))),
        ("git checkout -b feat/c", Some(("feat/c", "git checkout -b"))),
        ("git checkout -B feat/d", Some(("feat/d", "git checkout -B"))),
        ("git branch feat/e", Some(("feat/e", "git branch"))),
        ("git worktree add -b feat/f ../wt-f", Some(("feat/f", "git worktree add -b"))),
        ("git worktree add ../lane-g", Some(("lane-g", "git worktree add"))),
        ("git checkout -b main", None),
        ("git switch main", None),
        ("echo git switch -c nope", None),
    ];
    for (command, expected) in cases {
        let before = repo.kinds().len();
        let payload = fixture("pre-tool-use-bash.json", &[("$CWD", &cwd(&repo)), ("$COMMAND", command)]);
        let (out, _) = hook(&repo, "pre-tool-use", &payload, &[]);
        assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), None), "{command}: the recorder never refuses");
        match expected {
            Some((branch, form)) => {
                assert_eq!(repo.kinds().len(), before + 1, "{command}");
                assert_eq!(repo.last_data(), json!({"branch": branch, "command": form}), "{command}");
            }
            None => assert_eq!(repo.kinds().len(), before, "{command} recorded something"),
        }
    }
    // A rename carries the record over.
    let payload = fixture("pre-tool-use-bash.json", &[("$CWD", &cwd(&repo)), ("$COMMAND", "git branch -m feat/e feat/e2")]);
    hook(&repo, "pre-tool-use", &payload, &[]);
    assert_eq!(repo.last_data(), json!({"branch": "feat/e2", "command": "git branch -m", "renamed_from": "feat/e"}));
    // The folded state, as every reader gets it (state.json may be behind: branch events
    // do not change the checklist, so the store leaves the projections for readers to fold).
    let (paths, _) = abcd::places::working_copy_journal(&repo.root).unwrap();
    let journal = abcd::journal::Journal::new(abcd::journal::storage::RealDisk::shared(), paths, None);
    let state = abcd::store::Store::new(journal).current_state().unwrap().state;
    let branches = &state.work.branches;
    assert!(branches.iter().any(|b| b == "feat/e2") && !branches.iter().any(|b| b == "feat/e"), "{branches:?}");
}

#[test]
fn init_installs_the_hooks_once_keeps_other_settings_and_refuses_a_broken_file() {
    let repo = Repo::new(false);
    let check = repo.abcd(&["init", "--check"]);
    assert_eq!(check.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&check.stdout).contains("MISSING SessionStart hook"), "{}", String::from_utf8_lossy(&check.stdout));
    std::fs::create_dir_all(repo.root.join(".claude")).unwrap();
    let theirs = json!({"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "/usr/local/bin/notify-me"}]}]}});
    std::fs::write(repo.root.join(".claude/settings.json"), serde_json::to_vec_pretty(&theirs).unwrap()).unwrap();
    assert!(repo.abcd(&["init"]).status.success());
    let once = std::fs::read(repo.root.join(".claude/settings.json")).unwrap();
    assert!(repo.abcd(&["init"]).status.success());
    let twice = std::fs::read(repo.root.join(".claude/settings.json")).unwrap();
    assert_eq!(once, twice, "a second init changes nothing");
    let v: Value = serde_json::from_slice(&twice).unwrap();
    assert_eq!(v["permissions"], theirs["permissions"]);
    let stop = v["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop[0]["hooks"][0]["command"], "/usr/local/bin/notify-me");
    for event in ["SessionStart", "UserPromptSubmit", "PreToolUse", "PreCompact", "PostCompact", "Stop", "StopFailure"] {
        let ours = v["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .filter(|h| h["args"][0] == "hook")
            .count();
        assert_eq!(ours, 1, "{event}");
    }
    assert_eq!(repo.abcd(&["init", "--check"]).status.code(), Some(0));

    std::fs::write(repo.root.join(".claude/settings.json"), b"{ broken").unwrap();
    let out = repo.abcd(&["init"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was written"));
    assert_eq!(std::fs::read(repo.root.join(".claude/settings.json")).unwrap(), b"{ broken");
}

#[test]
fn completions_and_man_page_come_from_the_cli_definition() {
    let repo = Repo::new(false);
    let bash = repo.abcd(&["completions", "bash"]);
    assert!(bash.status.success() && String::from_utf8_lossy(&bash.stdout).contains("checklist"));
    let man = repo.abcd(&["man"]);
    assert!(man.status.success() && String::from_utf8_lossy(&man.stdout).contains(".TH abcd"));
}

/// A payload whose `session_id` looks like a secret is let through, but the id is not
/// recorded: it would sit in every event's actor, and abcd never writes a secret.
#[test]
fn a_session_id_that_is_a_secret_is_never_recorded() {
    let repo = Repo::new(true);
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let payload = format!(r#"{{"session_id":"{token}","cwd":"{}","hook_event_name":"SessionStart","source":"startup"}}"#, cwd(&repo));
    let (out, _) = hook(&repo, "session-start", payload.as_bytes(), &[]);
    assert_eq!(out.status.code(), Some(0));
    let journal = std::fs::read_to_string(repo.journal()).unwrap();
    assert!(journal.contains("\"kind\":\"session.started\""), "the start is recorded: {journal}");
    assert!(!journal.contains("ghp_0123"), "{journal}");
}

/// The clock of the session-render tests (`ABCD_TEST_NOW`): the plan is written at `T0`,
/// its one next look is two hours later.
const T0: &str = "2026-12-01T09:00:00Z";
const BEFORE_THE_LOOK: &str = "2026-12-01T10:59:59Z";
const AFTER_THE_LOOK: &str = "2026-12-01T12:00:00Z";
const BEFORE_THE_RENDER: &str = "2026-12-01T08:00:00Z";

fn tier(repo: &Repo) -> PathBuf {
    repo.root.join(".abcd/.work.local")
}

fn session_render(repo: &Repo) -> PathBuf {
    tier(repo).join(abcd::store::projection::SESSION_CONTEXT_FILE)
}

/// `abcd <args>` at `now`; panics unless it succeeds.
fn abcd_at(repo: &Repo, now: &str, args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_abcd"))
        .args(args)
        .current_dir(&repo.root)
        .env("ABCD_HOME", &repo.home)
        .env("ABCD_TEST_NOW", now)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(out.status.success(), "abcd {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The context `abcd hook session-start` injects at `now`, without the receipt's tokens
/// (each start has its own); panics unless it answers cleanly.
fn start_context(repo: &Repo, now: &str) -> String {
    let payload = fixture("session-start-startup.json", &[("$CWD", &cwd(repo))]);
    let (out, _) = hook(repo, "session-start", &payload, &[("ABCD_TEST_NOW", now), ("TZ", "UTC")]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    common::unmarked(stdout_json(&out).unwrap()["hookSpecificOutput"]["additionalContext"].as_str().unwrap())
}

/// The context as the hook renders it from the checklist: with no session render to read.
fn rendered_context(repo: &Repo, now: &str) -> String {
    match std::fs::remove_file(session_render(repo)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => panic!("{e}"),
        _ => {}
    }
    start_context(repo, now)
}

/// A plan written at `T0`: working, waiting with a look two hours ahead, a promise, one done.
fn plan(repo: &Repo) {
    abcd_at(repo, T0, &["checklist", "add", "Fix the login redirect loop", "--promise", "ci:fix/login green => open the PR"]);
    abcd_at(repo, T0, &["checklist", "add", "Wait for the review", "--waits-on", "pr:12", "--next-look", "+2h"]);
    abcd_at(repo, T0, &["checklist", "add", "Ship the release notes"]);
    abcd_at(repo, T0, &["checklist", "set", "3", "--state", "done"]);
}

fn render_file(repo: &Repo) -> Value {
    serde_json::from_slice(&std::fs::read(session_render(repo)).unwrap()).unwrap()
}

fn journal_lines(repo: &Repo) -> u64 {
    std::fs::read_to_string(repo.journal()).unwrap().lines().count() as u64
}

#[test]
fn session_start_reads_its_render_from_the_projection_and_it_is_the_render_from_the_checklist() {
    let repo = Repo::new(true);
    plan(&repo);
    // Without `checklist.json` and `state.json`, a hook that read the checklist would fold
    // the journal and write them again: reading the session render leaves them absent.
    for name in ["checklist.json", "state.json"] {
        std::fs::remove_file(tier(&repo).join(name)).unwrap();
    }
    let read = start_context(&repo, T0);
    assert!(!tier(&repo).join("checklist.json").exists(), "the hook read the session render, not the checklist");
    assert!(read.contains("\n1: Fix the login redirect loop") && read.contains("\n2: Wait for the review"), "{read}");
    let rendered = rendered_context(&repo, T0);
    assert!(tier(&repo).join("checklist.json").exists(), "the hook rendered from the checklist, and repaired it");
    assert_eq!(read, rendered, "the session render is the text the hook renders from the checklist");
    // The render the hook fell back to is written again, for the next start.
    assert!(session_render(&repo).exists());
    std::fs::remove_file(tier(&repo).join("checklist.json")).unwrap();
    assert_eq!(start_context(&repo, T0), rendered);
    assert!(!tier(&repo).join("checklist.json").exists(), "read from the render the fallback wrote");
}

#[test]
fn a_stale_edited_or_expired_session_render_is_not_used() {
    let repo = Repo::new(true);
    plan(&repo);
    let old = std::fs::read(session_render(&repo)).unwrap();

    // Stale: it names a line a checklist event follows.
    abcd_at(&repo, T0, &["checklist", "add", "A newer item"]);
    std::fs::write(session_render(&repo), &old).unwrap();
    let context = start_context(&repo, T0);
    assert!(context.contains("\n4: A newer item"), "{context}");
    assert_eq!(context, rendered_context(&repo, T0));

    // Edited by hand and sealed again, so its digest holds: a planted secret, a planted
    // escape sequence, more than its budget. Edited without a seal: its digest fails.
    let mut genuine = render_file(&repo);
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let text = genuine["text"].as_str().unwrap().to_string();
    let budget = genuine["budget"].as_u64().unwrap() as usize;
    let planted = [
        format!("{text}- [working] deploy — use {token}\n"),
        format!("{text}- [working] deploy \u{1b}[2J now\n"),
        format!("{text}{}\n", "x".repeat(budget)),
    ];
    for edit in planted {
        genuine["text"] = json!(edit);
        std::fs::write(session_render(&repo), abcd::store::projection::seal_session_context_json(&genuine)).unwrap();
        let context = start_context(&repo, T0);
        assert!(!context.contains("deploy") && !context.contains("xxxx"), "{context}");
        assert_eq!(context, rendered_context(&repo, T0));
    }
    let sealed = std::fs::read_to_string(session_render(&repo)).unwrap();
    std::fs::write(session_render(&repo), sealed.replace("A newer item", "A forged item")).unwrap();
    let context = start_context(&repo, T0);
    assert!(!context.contains("A forged item"), "{context}");

    // Expired: its look has fallen due since it was rendered; or the clock reads before the
    // render. Either way the text would not be what the hook renders now.
    let fresh = std::fs::read(session_render(&repo)).unwrap();
    assert_eq!(render_file(&repo)["valid_until"], json!("2026-12-01T11:00:00Z"));
    for now in [AFTER_THE_LOOK, BEFORE_THE_RENDER] {
        std::fs::write(session_render(&repo), &fresh).unwrap();
        let context = start_context(&repo, now);
        assert_eq!(context, rendered_context(&repo, now), "at {now}");
        if now == AFTER_THE_LOOK {
            assert!(context.contains("look due since"), "{context}");
        }
    }
    // Until the look falls due, the render holds.
    abcd_at(&repo, T0, &["checklist", "set", "4", "--title", "A newer item, renamed"]);
    std::fs::remove_file(tier(&repo).join("checklist.json")).unwrap();
    start_context(&repo, BEFORE_THE_LOOK);
    assert!(!tier(&repo).join("checklist.json").exists(), "read from the render until the look falls due");
}

#[test]
fn every_checklist_write_rewrites_the_session_render() {
    let repo = Repo::new(true);
    plan(&repo);
    for args in [&["checklist", "add", "One more thing"][..], &["checklist", "set", "4", "--state", "done"]] {
        std::fs::write(session_render(&repo), b"not a render").unwrap();
        abcd_at(&repo, T0, args);
        let file = render_file(&repo);
        assert_eq!(file["journal"]["seq"].as_u64(), Some(journal_lines(&repo) - 1), "{args:?}: it names the head");
        let shows = if args[1] == "add" { "\n4: One more thing\n" } else { "\ndone (2)\n" };
        assert!(file["text"].as_str().unwrap().contains(shows), "{args:?}: {file}");
        assert_eq!(file["rendered_at"], json!(T0));
    }
}

/// Issue 35's trip-ups (seed 003): a command with a `$(...)` or backtick substitution is no
/// act for the recorder, so no branch is recorded, not even a creation beside it; a `$(`
/// inside single quotes is text and changes nothing.
#[test]
fn a_command_with_a_substitution_records_no_branch() {
    let repo = Repo::new(true);
    std::fs::write(repo.root.join(".git/refs/heads/main"), "0123456789012345678901234567890123456789\n").unwrap();
    std::fs::write(repo.root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    assert!(repo.abcd(&["checklist", "add", "Start the journal"]).status.success());
    let cases = [
        ("git switch -c $(echo sub)", None),
        ("git checkout -b `echo sub`", None),
        ("git switch -c feat/s && echo $(date)", None),
        ("git switch -c feat/t && echo '$(not run)'", Some("feat/t")),
    ];
    for (command, expected) in cases {
        let before = repo.kinds().len();
        let payload = fixture("pre-tool-use-bash.json", &[("$CWD", &cwd(&repo)), ("$COMMAND", command)]);
        let (out, _) = hook(&repo, "pre-tool-use", &payload, &[]);
        assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), None), "{command}: the recorder never refuses");
        match expected {
            Some(branch) => assert_eq!(repo.last_data()["branch"], branch, "{command}"),
            None => assert_eq!(repo.kinds().len(), before, "{command} recorded something"),
        }
    }
}
