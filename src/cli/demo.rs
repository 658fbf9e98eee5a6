//! `abcd demo`: the whole story in a temporary repository, narrated, by running the real
//! commands. It never touches the real home store: `ABCD_HOME` points into the temporary
//! folder for every command it runs. Each command is shown as a shell would take it
//! (words quoted where needed, a hook's payload piped in), so it can be pasted.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use super::shell_word;

struct Demo {
    exe: std::path::PathBuf,
    root: std::path::PathBuf,
    home: std::path::PathBuf,
}

impl Demo {
    /// Runs `abcd <args>` in the demo repository, echoing the command and its output.
    fn run(&self, args: &[&str]) -> anyhow::Result<i32> {
        let shown: Vec<String> = args.iter().map(|a| shell_word(a)).collect();
        outln!("   $ abcd {}", shown.join(" "));
        let out = Command::new(&self.exe)
            .args(args)
            .current_dir(&self.root)
            .env("ABCD_HOME", &self.home)
            .env_remove("CLAUDE_CODE_SESSION_ID")
            // The demo's story sets and ends the away mode in its own folder, as the person
            // would: run from an agent's shell, it must not read as the agent's act.
            .env_remove(crate::host::claude::TOOL_PROCESS_ENV)
            .env_remove(crate::host::CODEX_TOOL_CALL_ENV)
            .output()?;
        for line in String::from_utf8_lossy(&out.stdout).lines().chain(String::from_utf8_lossy(&out.stderr).lines()) {
            outln!("     {line}");
        }
        let code = out.status.code().unwrap_or(-1);
        if code != 0 {
            outln!("     (exit {code})");
        }
        Ok(code)
    }

    /// Runs `abcd hook <event>` with a payload shaped as Claude Code sends it, and shows
    /// the context the host would hand the model.
    fn hook(&self, event: &str, payload: serde_json::Value) -> anyhow::Result<()> {
        self.hook_shown(event, payload, Shown::AsTheHostTakesIt)
    }

    fn hook_shown(&self, event: &str, payload: serde_json::Value, shown: Shown) -> anyhow::Result<()> {
        outln!("   $ echo {} | abcd hook {event}", shell_word(&payload.to_string()));
        let mut child = self.hook_command(event).spawn()?;
        child.stdin.take().expect("piped").write_all(payload.to_string().as_bytes())?;
        let out = child.wait_with_output()?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        match serde_json::from_str::<serde_json::Value>(stdout.trim()) {
            Ok(v) => {
                let stop_feedback = v["hookSpecificOutput"]["hookEventName"] == "Stop";
                if let (Some(reason), true) = (v["hookSpecificOutput"]["additionalContext"].as_str(), stop_feedback) {
                    match shown {
                        Shown::AsTheHostTakesIt => outln!("     the stop is blocked, with this reason for the model:"),
                        Shown::PastTheCap => outln!(
                            "     abcd's answer is a block again, but the host, past its cap, ends the turn anyway; the reason it would have given:"
                        ),
                    }
                    outln!("       | {reason}");
                } else if let Some(ctx) = v["hookSpecificOutput"]["additionalContext"].as_str() {
                    outln!("     additionalContext for the model:");
                    ctx.lines().for_each(|l| outln!("       | {l}"));
                } else if let Some(reason) = v["hookSpecificOutput"]["permissionDecisionReason"].as_str() {
                    outln!("     refused, with this reason for the model:");
                    outln!("       | {reason}");
                } else {
                    outln!("     {v}");
                }
            }
            Err(_) if stdout.trim().is_empty() => outln!("     (no output: nothing to add, nothing refused)"),
            Err(_) => outln!("     {stdout}"),
        }
        for line in String::from_utf8_lossy(&out.stderr).lines() {
            outln!("     {line}");
        }
        Ok(())
    }

    /// Runs a hook without showing it (the demo repeats one call to reach the host's cap).
    fn hook_quiet(&self, event: &str, payload: serde_json::Value) -> anyhow::Result<()> {
        let mut child = self.hook_command(event).spawn()?;
        child.stdin.take().expect("piped").write_all(payload.to_string().as_bytes())?;
        child.wait_with_output()?;
        Ok(())
    }

    fn hook_command(&self, event: &str) -> Command {
        let mut cmd = Command::new(&self.exe);
        cmd.args(["hook", event])
            .current_dir(&self.root)
            .env("ABCD_HOME", &self.home)
            // The demo lists no forge: it has no remote, and nothing reaches the network.
            .env("ABCD_GH", "")
            .env_remove("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd
    }

    fn journal(&self) -> std::path::PathBuf {
        self.root.join(crate::places::LOCAL_TIER).join(crate::places::JOURNAL_FILE)
    }
}

/// How a hook's answer reaches the model.
#[derive(Clone, Copy)]
enum Shown {
    /// The host acts on it.
    AsTheHostTakesIt,
    /// A Stop block past the host's cap: the host ends the turn whatever abcd answers.
    PastTheCap,
}

fn step(title: &str) {
    outln!("\n{title}");
}

fn expect(code: i32, want: i32, what: &str) -> anyhow::Result<()> {
    anyhow::ensure!(code == want, "demo step `{what}` exited {code}, expected {want}");
    Ok(())
}

pub fn run() -> anyhow::Result<i32> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().join("repo");
    std::fs::create_dir_all(&root)?;
    let has_git = make_git_repository(&root);
    if !has_git {
        // Without git the checklist story still runs; the away mode needs the repository's
        // first commit to find its record, so its step is skipped.
        std::fs::create_dir_all(root.join(".git"))?;
    }
    let demo = Demo { exe: std::env::current_exe()?, root, home: tmp.path().join("home") };
    outln!("abcd demo: a temporary repository at {}", demo.root.display());
    outln!(
        "(every command below runs in it, with ABCD_HOME={} so your own home store is never touched; the folder is removed at the end)",
        shell_word(&demo.home.display().to_string())
    );

    step("1. Make the repository managed");
    expect(demo.run(&["init"])?, 0, "init")?;

    step("2. The session writes its plan; every change is an fsynced, hash-chained event");
    expect(
        demo.run(&["checklist", "add", "Fix the login bug", "--promise", "ci:feat/login green => merge", "--owner-ref", "feat/login"])?,
        0,
        "add",
    )?;
    expect(demo.run(&["checklist", "add", "Get PR 12 reviewed", "--waits-on", "pr:12", "--next-look", "+2h"])?, 0, "add")?;
    expect(demo.run(&["checklist", "add", "Write the release notes"])?, 0, "add")?;

    step("3. A secret never gets in: refused by field and kind, never echoed, and the refusal is recorded");
    let fake_token = format!("ghp_{}", "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d");
    expect(demo.run(&["checklist", "add", &format!("use {fake_token} for the deploy")])?, 2, "secret refused")?;

    step("4. Context compaction: the host compacts, then its SessionStart hook puts the plan back");
    let cwd = demo.root.display().to_string();
    demo.hook("pre-compact", serde_json::json!({"session_id": "demo-session", "cwd": cwd, "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""}))?;
    demo.hook(
        "session-start",
        serde_json::json!({"session_id": "demo-session", "cwd": cwd, "hook_event_name": "SessionStart", "source": "compact"}),
    )?;

    step("5. A writer killed mid-append leaves half a line: a torn tail, never acknowledged");
    outln!("   (the demo writes the half line itself, as a SIGKILL between write and fdatasync leaves it)");
    std::fs::OpenOptions::new()
        .append(true)
        .open(demo.journal())?
        .write_all(br#"{"v":1,"seq":8,"time":"2026-11-30T06:00:00.000Z","kind":"checkl"#)?;
    expect(demo.run(&["journal", "verify"])?, 0, "verify torn")?;
    outln!("   the next write copies the torn bytes to quarantine/ and cuts them:");
    expect(demo.run(&["checklist", "set", "1", "--state", "done"])?, 0, "set")?;

    step("6. A hand-edited checklist.json is never trusted: the reader rebuilds the list from the journal");
    let projection = demo.root.join(crate::places::LOCAL_TIER).join(crate::store::projection::CHECKLIST_FILE);
    let edited = std::fs::read_to_string(&projection)?.replace("Write the release notes", "Skip the release notes");
    std::fs::write(&projection, edited)?;
    outln!("   (checklist.json now says \"Skip the release notes\")");
    expect(demo.run(&["checklist"])?, 0, "list")?;

    step("7. A line appended behind abcd's back, with a correct hash and a token in it, is skipped and named");
    shell_append_secret(&demo.journal(), &fake_token)?;
    expect(demo.run(&["checklist", "render", "--budget", "700"])?, 0, "render")?;

    step("8. A flipped bit mid-file is corruption: readers keep the valid prefix, writes are refused");
    let lines = std::fs::read(demo.journal())?.iter().filter(|&&b| b == b'\n').count();
    let damaged = lines - 2;
    let line = std::fs::read_to_string(demo.journal())?.lines().nth(damaged).map(str::to_owned).unwrap_or_default();
    anyhow::ensure!(line.contains("\"kind\":\"checklist.item_changed\""), "the demo's seq {damaged} is not step 5's change");
    outln!("   (a bit flips in seq {damaged}, the line of step 5 that marked item 1, Fix the login bug, done)");
    flip_a_bit_in_line(&demo.journal(), damaged)?;
    expect(demo.run(&["journal", "verify"])?, 1, "verify corrupt")?;
    expect(demo.run(&["checklist", "add", "Another item"])?, 2, "append refused")?;

    step("9. Repair moves only the damaged line to quarantine (nothing is deleted), keeps every line after it, and names the lost seq");
    expect(demo.run(&["journal", "repair"])?, 0, "repair")?;
    expect(demo.run(&["checklist"])?, 0, "list")?;
    outln!(
        "   item 1 is working again: the change that marked it done was the damaged line, now in quarantine/; \
a journal.repaired record stands in for its seq, and the line after it (the one appended in step 7) is kept. The session marks it done again:"
    );
    expect(demo.run(&["checklist", "set", "1", "--state", "done"])?, 0, "set again")?;

    step("10. A journal rolled back to an older copy of itself is named through the head anchor");
    let before = std::fs::read(demo.journal())?;
    expect(demo.run(&["checklist", "add", "Tag the release"])?, 0, "add")?;
    std::fs::write(demo.journal(), &before)?;
    outln!("   (the journal file is put back to the copy taken just before that add, as a backup restore or a file sync can do)");
    expect(demo.run(&["checklist"])?, 0, "list after rollback")?;
    outln!("   item 4 is gone, and nothing in the file says so; the head anchor in the home store remembers the add:");
    expect(demo.run(&["journal", "verify"])?, 1, "verify rollback")?;
    outln!("   accepting it records the loss on the chain (the item is gone unless added again):");
    expect(demo.run(&["journal", "repair"])?, 0, "accept")?;

    step("11. The audit: one line per event, and every file derived from the journal checked against it");
    expect(demo.run(&["replay"])?, 0, "replay")?;

    if has_git {
        away_story(&demo, &cwd)?;
        ledger_story(&demo)?;
    } else {
        outln!("\n12. (skipped: git is not on PATH, and the away mode and the ledger need a repository with a commit)");
    }

    outln!("\ndemo done; the temporary folder is removed now.");
    Ok(super::EXIT_OK)
}

/// The person steps away: the stop is blocked while work is owed, the question tool is
/// refused, and `abcd mode back` prints what the window collected.
fn away_story(demo: &Demo, cwd: &str) -> anyhow::Result<()> {
    step("12. The person steps away: every session works or waits with a wake, and asks no one");
    expect(demo.run(&["mode", "autonomous", "--until", "+8h"])?, 0, "mode autonomous")?;
    let stop = |active: bool, message: &str| {
        serde_json::json!({"session_id": "demo-session", "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": active,
            "last_assistant_message": message, "background_tasks": [], "session_crons": []})
    };
    outln!("   the session tries to end its turn with work owed:");
    demo.hook("stop", stop(false, "That is all for now."))?;
    outln!("   it asks a question instead of deciding:");
    demo.hook(
        "pre-tool-use",
        serde_json::json!({"session_id": "demo-session", "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion",
            "tool_input": {"questions": [{"question": "Which parser?", "header": "Parser", "options": [{"label": "hand-written"}], "multiSelect": false}]}}),
    )?;
    outln!("   so it decides what is its to decide, and queues what is the person's:");
    expect(
        demo.run(&["decide", "Use a hand-written parser", "--grounds", "no new dependency", "--undo", "revert the parser commit"])?,
        0,
        "decide",
    )?;
    expect(demo.run(&["mode", "queue", "push feat/login once CI is green"])?, 0, "queue")?;
    let cap = crate::verdict::stop::DEFAULT_BLOCK_CAP;
    outln!(
        "   the session keeps trying: {} more stops are blocked (not shown), {cap} in a row, the host's cap. At the next one the host \
ends the turn whatever abcd answers, and abcd records that stop for the person:",
        cap - 1
    );
    for _ in 1..cap {
        demo.hook_quiet("stop", stop(true, "Still working on it."))?;
    }
    demo.hook_shown("stop", stop(true, "Still working on it."), Shown::PastTheCap)?;
    step("13. The person is back: one line per queued step, recorded stop and decision");
    expect(demo.run(&["mode", "back"])?, 0, "mode back")?;
    Ok(())
}

/// How long the demo waits for its fake agent's receipt and for the watcher to record the
/// exit (the agent itself takes 0.2 s).
const DEMO_AGENT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A run with one lane: an agent launched through the ledger, its receipt waiting, the
/// resume listing a successor reads, and the receipt collected.
fn ledger_story(demo: &Demo) -> anyhow::Result<()> {
    step("14. A run drives an agent; a successor reads everything from the ledger");
    // The hooks `abcd init` installed are part of the project: committed, so the lane is
    // clean and nothing needs saving aside.
    let git = |args: &[&str]| {
        Command::new("git")
            .args(["-c", "user.name=Demo Person", "-c", "user.email=demo@example.invalid"])
            .args(args)
            .current_dir(&demo.root)
            .stdin(std::process::Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success())
    };
    anyhow::ensure!(git(&["add", ".claude"]) && git(&["commit", "-q", "-m", "abcd hooks"]), "the demo could not commit the hooks");
    expect(demo.run(&["run", "start", "demo-run", "--lane", "impl"])?, 0, "run start")?;
    let receipt = demo.root.join(".abcd/.work.local/demo-receipt.json");
    let script = format!("sleep 0.2; echo done > {}", shell_word(&receipt.display().to_string()));
    let receipt_arg = receipt.display().to_string();
    expect(
        demo.run(&[
            "launch",
            "--run",
            "demo-run",
            "--lane",
            "impl",
            "--role",
            "implementer",
            "--receipt",
            &receipt_arg,
            "--",
            "sh",
            "-c",
            &script,
        ])?,
        0,
        "launch",
    )?;
    let deadline = std::time::Instant::now() + DEMO_AGENT_WAIT;
    while !receipt.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    outln!("   the agent wrote its receipt and ended while nobody watched; a fresh session runs:");
    expect(demo.run(&["resume"])?, 0, "resume")?;
    outln!("   a second launch now would be refused until the receipt is collected:");
    expect(demo.run(&["collect", "--run", "demo-run", "--lane", "impl"])?, 0, "collect")?;
    expect(demo.run(&["run", "finish", "demo-run"])?, 0, "finish")?;
    // The watcher records the agent's exit; wait for it, so nothing outlives the demo.
    let deadline = std::time::Instant::now() + DEMO_AGENT_WAIT;
    while !std::fs::read_to_string(demo.journal())?.contains("\"launch.exited\"") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(())
}

/// Makes `root` a git repository with one commit; false when git cannot be run.
fn make_git_repository(root: &Path) -> bool {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(["-c", "user.name=Demo Person", "-c", "user.email=demo@example.invalid", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success())
    };
    git(&["init", "-q"]) && git(&["commit", "-q", "--allow-empty", "-m", "first"]) && git(&["config", "user.name", "Demo Person"])
}

/// Appends a valid, hash-chained `checklist.item_added` whose title carries `token`, the
/// way a shell script that knew the format could.
fn shell_append_secret(journal: &Path, token: &str) -> anyhow::Result<()> {
    use crate::journal::format::{self, Actor, NewEvent};
    let text = std::fs::read_to_string(journal)?;
    let last = format::verify_line(format!("{}\n", text.lines().last().unwrap_or_default()).as_bytes())?;
    let item = serde_json::json!({"item": {"id": "leak", "title": format!("deploy with {token}"), "state": "working", "owner_refs": []}});
    let event = NewEvent { kind: "checklist.item_added".into(), actor: Actor::this_process(None), data: item };
    let (line, _) = format::encode_line(last.seq + 1, format::now_ms(), &event, &last.hash)?;
    std::fs::OpenOptions::new().append(true).open(journal)?.write_all(&line)?;
    outln!("   (appended seq {} directly to the journal file)", last.seq + 1);
    Ok(())
}

/// Flips one bit inside the `n`-th line (0-based) of the file.
fn flip_a_bit_in_line(path: &Path, n: usize) -> anyhow::Result<()> {
    let mut bytes = std::fs::read(path)?;
    let start = std::iter::once(0)
        .chain(bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1))
        .nth(n)
        .expect("the journal has that line");
    bytes[start + 30] ^= 0x01;
    std::fs::write(path, &bytes)?;
    Ok(())
}
