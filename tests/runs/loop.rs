//! The phased checklist loop end to end through the built binary (issue 8): real git
//! repositories in temp folders, scripted fake agents (small `sh` scripts that read their
//! replies from a file and log every run to a side log), and a driver killed with SIGKILL
//! at random moments.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::repo::{self, README};
use serde_json::{Value, json};

/// The scripted agent: `agent ROLE {prompt}`. Its nth run replies line n of
/// `$FAKE_DIR/ROLE.replies` (`\n` in a line is a newline; `EXIT k` exits k with no
/// reply; `KILL` ends it by SIGKILL; `BLOCK text` writes `pid parent-pid` to
/// `$FAKE_DIR/ROLE.pid.n`, then waits for the file `$FAKE_DIR/ROLE.go.n` before it
/// replies `text`), after logging `turn step phase round` to `$FAKE_DIR/ROLE.log` and its
/// prompt to `$FAKE_DIR/ROLE.prompts`.
const AGENT: &str = r#"#!/bin/sh
role=$1
log="$FAKE_DIR/$role.log"
n=$(( $(cat "$log" 2>/dev/null | wc -l) + 1 ))
echo "$ABCD_LOOP_TURN $ABCD_LOOP_STEP $ABCD_LOOP_PHASE $ABCD_LOOP_ROUND" >> "$log"
pwd >> "$FAKE_DIR/$role.pwd"
printf '%s\n---\n' "$2" >> "$FAKE_DIR/$role.prompts"
sleep "${FAKE_SLEEP:-0}"
line=$(sed -n "${n}p" "$FAKE_DIR/$role.replies")
case "$line" in
  EXIT*) exit ${line#EXIT };;
  KILL) kill -9 $$;;
  BLOCK\ *)
    echo "$$ $PPID" > "$FAKE_DIR/$role.pid.$n.tmp"
    mv "$FAKE_DIR/$role.pid.$n.tmp" "$FAKE_DIR/$role.pid.$n"
    until [ -e "$FAKE_DIR/$role.go.$n" ]; do sleep 0.01; done
    line=${line#BLOCK };;
esac
printf '%b\n' "$line"
"#;

/// A fake `claude`: logs its arguments, one line per run, and prints a
/// `--output-format json` result whose `result` is the next reply line and whose
/// `session_id` is `sess-<role>`.
const CLAUDE: &str = r#"#!/bin/sh
log="$FAKE_DIR/claude.args"
n=$(( $(cat "$log" 2>/dev/null | wc -l) + 1 ))
echo "$*" | tr '\n' ' ' >> "$log"; echo >> "$log"
line=$(sed -n "${n}p" "$FAKE_DIR/claude.replies")
text=$(printf '%b' "$line")
printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":12,"num_turns":1,"result":"%s","session_id":"sess-impl-1","total_cost_usd":0.01}\n' "$text"
"#;

struct Lab {
    dir: tempfile::TempDir,
    home: PathBuf,
}

struct Copy {
    root: PathBuf,
    home: PathBuf,
    fake: PathBuf,
    extra_path: Option<PathBuf>,
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        Lab { dir, home }
    }

    /// A managed git working copy with its own fake agents' folder.
    fn copy(&self, name: &str, implementer: &[&str], reviewer: &[&str]) -> Copy {
        let root = self.dir.path().join(name);
        let fake = self.dir.path().join(format!("{name}-fake"));
        repo::create(&root, &[README]);
        std::fs::create_dir_all(&fake).unwrap();
        let c = Copy { root, home: self.home.clone(), fake, extra_path: None };
        assert!(c.abcd(&["init"]).status.success());
        write_script(&self.dir.path().join("agent"), AGENT);
        std::fs::write(c.fake.join("implementer.replies"), lines(implementer)).unwrap();
        std::fs::write(c.fake.join("reviewer.replies"), lines(reviewer)).unwrap();
        c
    }

    fn agent(&self) -> PathBuf {
        self.dir.path().join("agent")
    }
}

fn lines(replies: &[&str]) -> String {
    replies.iter().map(|l| format!("{l}\n")).collect()
}

fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

impl Copy {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
        cmd.args(args)
            .current_dir(&self.root)
            .env("ABCD_HOME", &self.home)
            .env("FAKE_DIR", &self.fake)
            .env("FAKE_SLEEP", "0")
            .env_remove("CLAUDE_CODE_SESSION_ID");
        if let Some(p) = &self.extra_path {
            cmd.env("PATH", format!("{}:{}", p.display(), std::env::var("PATH").unwrap_or_default()));
        }
        cmd
    }

    fn abcd(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn status(&self, run: &str) -> Value {
        let out = self.abcd(&["loop", "status", run, "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn record(&self, run: &str) -> Value {
        self.status(run)["record"].clone()
    }

    /// The record, or `None` while the loop is not recorded yet.
    fn try_record(&self, run: &str) -> Option<Value> {
        let out = self.abcd(&["loop", "status", run, "--json"]);
        out.status.success().then(|| serde_json::from_slice::<Value>(&out.stdout).unwrap()["record"].clone())
    }

    /// Every run of the fake agent of `role`: `(turn, step, phase, round)`.
    fn runs_of(&self, role: &str) -> Vec<(u64, String, u64, u64)> {
        let text = std::fs::read_to_string(self.fake.join(format!("{role}.log"))).unwrap_or_default();
        text.lines()
            .map(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                (w[0].parse().unwrap(), w[1].to_string(), w[2].parse().unwrap(), w[3].parse().unwrap())
            })
            .collect()
    }

    fn journal(&self) -> String {
        std::fs::read_to_string(self.root.join(".abcd/.work.local/journal.jsonl")).unwrap_or_default()
    }

    fn start(&self, lab: &Lab, run: &str, extra: &[&str]) -> Output {
        let agent = lab.agent().display().to_string();
        let imp = format!("{agent} implementer {{prompt}}");
        let rev = format!("{agent} reviewer {{prompt}}");
        let mut args = vec!["loop", "start", "--run", run, "--implementer", &imp, "--reviewer", &rev];
        args.extend_from_slice(extra);
        self.abcd(&args)
    }
}

fn phases(record: &Value) -> Vec<(u64, String, u64)> {
    record["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["n"].as_u64().unwrap(), p["status"].as_str().unwrap().to_string(), p["rounds"].as_u64().unwrap()))
        .collect()
}

/// Each turn the record holds ran exactly once, as the step the record says.
fn assert_each_turn_ran_once(c: &Copy, record: &Value) {
    let mut ran: BTreeMap<u64, usize> = BTreeMap::new();
    for role in ["implementer", "reviewer"] {
        for (turn, ..) in c.runs_of(role) {
            *ran.entry(turn).or_default() += 1;
        }
    }
    let turns = record["turns"].as_u64().unwrap();
    // The turn in flight may have run already, or not yet.
    let in_flight = record["pending"]["turn"].as_u64();
    assert!(ran.values().all(|n| *n == 1), "a turn ran twice: {ran:?}");
    assert!((1..=turns).all(|t| ran.contains_key(&t)), "a replied turn never ran: {ran:?}");
    assert!(ran.keys().all(|t| *t <= turns || Some(*t) == in_flight), "a turn ran that the record does not hold: {ran:?} {record}");
}

fn assert_verifies(c: &Copy) {
    let out = c.abcd(&["journal", "verify"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn three_phases_converge_in_one_two_and_three_rounds_then_complete() {
    let lab = Lab::new();
    let c = lab.copy(
        "wc",
        &["did phase 1", "did phase 2", "fixed 2", "did phase 3", "fixed 3a", "fixed 3b", "COMPLETED"],
        &["LGTM", "fix the tests", "looks good now\\nLGTM", "no", "still no", "  lgtm  "],
    );
    let out = c.start(&lab, "three", &[]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("completed"), "{}", stdout(&out));
    let r = c.record("three");
    assert_eq!(r["state"], "stopped");
    assert_eq!(r["stop_reason"], "completed");
    assert_eq!(phases(&r), [(1, "converged".into(), 1), (2, "converged".into(), 2), (3, "converged".into(), 3)]);
    assert_eq!(r["phases_done"], 3);
    assert_eq!(r["turns"], 13);
    assert_each_turn_ran_once(&c, &r);
    let imp: Vec<String> = c.runs_of("implementer").into_iter().map(|(t, s, p, _)| format!("{t}:{s}:{p}")).collect();
    assert_eq!(imp, ["1:advance:1", "3:advance:2", "5:feedback:2", "7:advance:3", "9:feedback:3", "11:feedback:3", "13:advance:4"]);
    // The reviewer saw the implementer's reply; the implementer saw the reviewer's feedback.
    let prompts = std::fs::read_to_string(c.fake.join("implementer.prompts")).unwrap();
    assert!(prompts.contains("Feedback:\n\nfix the tests"), "{prompts}");
    assert!(prompts.contains("reply with exactly COMPLETED on its own line"), "{prompts}");
    let prompts = std::fs::read_to_string(c.fake.join("reviewer.prompts")).unwrap();
    assert!(prompts.contains("reply with LGTM on its own line") && prompts.contains("did phase 2"), "{prompts}");
    // The ledger: every turn a launch whose receipt was collected, and the run finished.
    let journal = c.journal();
    assert_eq!(journal.matches("\"kind\":\"launch.intended\"").count(), 13);
    assert_eq!(journal.matches("\"kind\":\"receipt.collected\"").count(), 13);
    assert_eq!(journal.matches("\"kind\":\"run.finished\"").count(), 1);
    assert_verifies(&c);
    // Finished: controls and drive are refused.
    for args in [&["loop", "pause", "three"][..], &["loop", "stop", "three"], &["loop", "skip", "three"], &["loop", "drive", "three"]] {
        let out = c.abcd(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains("stopped"), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn work_with_the_completion_word_on_another_line_is_reviewed_not_taken_as_completion() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did the last phase\\nCOMPLETED", "COMPLETED"], &["LGTM"]);
    let out = c.start(&lab, "last", &["--detach"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let deadline = Instant::now() + Duration::from_secs(60);
    let r = loop {
        let r = c.record("last");
        if r["state"] == "stopped" || Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(r["stop_reason"], "completed");
    assert_eq!(phases(&r), [(1, "converged".into(), 1)], "the reply with work was reviewed");
    assert_eq!(r["phases_done"], 1);
    assert_eq!(r["turns"], 3);
    assert_each_turn_ran_once(&c, &r);
}

#[test]
fn a_phase_that_never_converges_pauses_at_max_rounds_and_resumes_by_retry() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "fixed 1", "COMPLETED"], &["no", "still no", "LGTM"]);
    let out = c.start(&lab, "stuck", &["--max-rounds", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("did not converge in 2 rounds"), "{}", stdout(&out));
    let r = c.record("stuck");
    assert_eq!((r["state"].as_str(), r["paused_reason"].as_str()), (Some("paused"), Some("phase_not_converged")));
    assert_eq!(phases(&r), [(1, "not_converged".into(), 2)]);
    assert_eq!(r["turns"], 4);
    // Paused: drive ends at once; a retry (or a resume) re-reviews from the current output.
    let out = c.abcd(&["loop", "drive", "stuck"]);
    assert!(out.status.success() && stdout(&out).contains("PAUSED"), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(c.record("stuck")["turns"], 4, "nothing ran while paused");
    // `abcd resume` shows the loop; `--step` leaves a paused loop's work where its next
    // turn will build on it.
    let out = c.abcd(&["resume", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = listing["runs"].as_array().unwrap().iter().find(|r| r["run"] == "stuck").unwrap().clone();
    assert_eq!(
        (run["loop"]["state"].as_str(), run["loop"]["paused_reason"].as_str()),
        (Some("paused"), Some("phase_not_converged")),
        "{run}"
    );
    assert!(stdout(&c.abcd(&["resume"])).contains("loop: "), "the text listing names the loop");
    // The loop's agents work in the worktree abcd made for it.
    let lanes = run["lanes"].as_array().unwrap();
    let tree = PathBuf::from(lanes.iter().find(|l| l["lane"] == "implementer").unwrap()["worktree"].as_str().unwrap());
    assert!(tree.starts_with(&c.home), "{}", tree.display());
    std::fs::write(tree.join("wip.txt"), "the implementer's work\n").unwrap();
    let out = c.abcd(&["resume", "--step"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("the loop stuck is not stopped"), "{}", stdout(&out));
    assert!(tree.join("wip.txt").exists() && !c.journal().contains("work.saved_aside"), "nothing saved aside or reset");
    let out = c.abcd(&["loop", "retry", "stuck"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("`abcd loop drive stuck`"), "{}", stdout(&out));
    let out = c.abcd(&["loop", "drive", "stuck"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let r = c.record("stuck");
    assert_eq!(r["stop_reason"], "completed");
    assert_eq!(phases(&r), [(1, "not_converged".into(), 2), (1, "converged".into(), 1)], "the retry is a second record with the same n");
    assert_eq!(r["phases_done"], 1);
    let prompts = std::fs::read_to_string(c.fake.join("reviewer.prompts")).unwrap();
    assert_eq!(prompts.matches("fixed 1").count(), 2, "round 2 and the retry both review the implementer's current output");
    assert_each_turn_ran_once(&c, &r);
}

#[test]
fn resume_after_non_convergence_is_a_retry() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "COMPLETED"], &["no", "LGTM"]);
    assert!(c.start(&lab, "r", &["--max-rounds", "1"]).status.success());
    let out = c.abcd(&["loop", "resume", "r"]);
    assert!(out.status.success() && stdout(&out).contains("retried"), "{}{}", stdout(&out), stderr(&out));
    assert!(c.journal().contains("\"kind\":\"loop.retried\""));
    assert!(c.abcd(&["loop", "drive", "r"]).status.success());
    assert_eq!(phases(&c.record("r")), [(1, "not_converged".into(), 1), (1, "converged".into(), 1)]);
}

#[test]
fn skip_counts_the_phase_and_advances() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "did 2", "COMPLETED"], &["no", "LGTM"]);
    assert!(c.start(&lab, "sk", &["--max-rounds", "1"]).status.success());
    // Skip and retry are refused while running or unknown; here the loop is paused.
    let out = c.abcd(&["loop", "skip", "sk"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = c.abcd(&["loop", "skip", "sk"]);
    assert_eq!(out.status.code(), Some(2), "a second skip: the loop is running again");
    assert!(stderr(&out).contains("pause it first"), "{}", stderr(&out));
    assert!(c.abcd(&["loop", "drive", "sk"]).status.success());
    let r = c.record("sk");
    assert_eq!(r["stop_reason"], "completed");
    assert_eq!(phases(&r), [(1, "skipped".into(), 1), (2, "converged".into(), 1)]);
    assert_eq!(r["phases_done"], 2, "a skip counts toward phases_done");
    assert_each_turn_ran_once(&c, &r);
}

/// A loop whose worktree cannot be made (a branch of its name left from an earlier run)
/// is refused with the worktree's own way out, then how the loop goes on.
#[test]
fn a_loop_whose_worktree_cannot_be_made_says_how_to_clear_the_cause() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1"], &["LGTM"]);
    let made = Command::new("git").args(["branch", "abcd/left/implementer"]).current_dir(&c.root).output().unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    let out = c.start(&lab, "left", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("refused [git-state]: loop start: the loop left is recorded"), "{said}");
    assert!(said.contains("`git branch -m abcd/left/implementer NEW-NAME`"), "the worktree's way out is lost: {said}");
    assert!(said.contains("`abcd loop drive left` makes it and carries on"), "{said}");
}

/// The hidden turn runner refuses a reader it does not know, names the ones it does, and
/// never echoes a value that looks like a token.
#[test]
fn the_turn_runner_refuses_an_unknown_reader_naming_the_known_ones() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1"], &["LGTM"]);
    let token = format!("ghp_{}", "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d");
    let (prompt, reply) = (c.root.join("p.txt"), c.root.join("r.txt"));
    let (prompt, reply) = (prompt.to_str().unwrap(), reply.to_str().unwrap());
    let args = ["__loop-turn", "--run", "t", "--turn", "1", "--phase", "1", "--round", "1", "--kind", "advance"];
    let tail = ["--prompt-file", prompt, "--reply-file", reply, "--", "true"];
    for reader in ["nope", token.as_str()] {
        let all: Vec<&str> = args.iter().copied().chain(["--reader", reader]).chain(tail.iter().copied()).collect();
        let out = c.abcd(&all);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let said = stderr(&out);
        assert!(said.contains("refused [bad-value]: turn: unknown reader"), "{said}");
        assert!(said.contains("(plain, claude-json) with --reader"), "{said}");
        assert!(!said.contains("ghp_"), "{said}");
    }
}

#[test]
fn stop_ends_the_loop_with_manual() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "did 2"], &["no", "LGTM"]);
    assert!(c.start(&lab, "st", &["--max-rounds", "1"]).status.success());
    let out = c.abcd(&["loop", "stop", "st"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = c.record("st");
    assert_eq!((r["state"].as_str(), r["stop_reason"].as_str()), (Some("stopped"), Some("manual")));
    assert_eq!(phases(&r), [(1, "not_converged".into(), 1)]);
    let out = c.abcd(&["loop", "resume", "st"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("has stopped (stopped by hand)"), "{}", stderr(&out));
    // The ledger run is finished too: it leaves the resume listing.
    let out = c.abcd(&["resume", "--json"]);
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listing["runs"].as_array().unwrap().len(), 0, "{listing}");
}

#[test]
fn pause_while_running_stops_new_turns_and_resume_carries_on() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "COMPLETED"], &["LGTM"]);
    let mut driver = c
        .command(&[
            "loop",
            "start",
            "--run",
            "p",
            "--implementer",
            &format!("{} implementer {{prompt}}", lab.agent().display()),
            "--reviewer",
            &format!("{} reviewer {{prompt}}", lab.agent().display()),
        ])
        .env("FAKE_SLEEP", "0.5")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Pause as soon as the loop exists (the first turn is then in flight or about to be).
    let deadline = Instant::now() + Duration::from_secs(30);
    while !c.journal().contains("\"kind\":\"loop.started\"") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = c.abcd(&["loop", "pause", "p"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let status = driver.wait().unwrap();
    assert!(status.success());
    let r = c.record("p");
    assert_eq!((r["state"].as_str(), r["paused_reason"].as_str()), (Some("paused"), Some("manual")));
    assert!(r["turns"].as_u64().unwrap() <= 1, "at most the turn in flight was collected: {r}");
    let out = c.abcd(&["loop", "pause", "p"]);
    assert_eq!(out.status.code(), Some(2), "already paused");
    assert!(c.abcd(&["loop", "resume", "p"]).status.success());
    assert!(c.abcd(&["loop", "drive", "p"]).status.success());
    let r = c.record("p");
    assert_eq!(r["stop_reason"], "completed");
    assert_each_turn_ran_once(&c, &r);
}

#[test]
fn an_implementer_that_exits_non_zero_stops_the_run_with_peer_error() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "EXIT 3"], &["no"]);
    let out = c.start(&lab, "pe", &[]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let r = c.record("pe");
    assert_eq!((r["state"].as_str(), r["stop_reason"].as_str()), (Some("stopped"), Some("peer_error")));
    let detail = r["stop_detail"].as_str().unwrap();
    assert!(detail.contains("exit code 3") && detail.contains("without a reply"), "{detail}");
    assert_eq!(phases(&r), [(1, "stopped".into(), 1)]);
    // An agent that exited by itself with a code is not lost: its turn is not run again.
    assert_eq!(c.runs_of("implementer").len(), 2);
    assert_eq!(r["lost"], 0, "{r}");
    assert!(events_of(&c, "loop.turn_lost").is_empty());
    assert_verifies(&c);
}

/// SIGKILL, to a process the test found (its own child, or one the journal or the fake
/// agent named while it was alive and blocked).
fn sigkill(pid: u32) {
    // SAFETY: a plain kill of a process that is alive and waiting on the test.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
}

/// SIGKILL to the process group `leader` leads: the turn runner (started in a session of
/// its own) and the agent it started.
fn sigkill_group(leader: u32) {
    // SAFETY: as `sigkill`; the group's leader is alive, so its group id is not reused.
    unsafe { libc::kill(-(leader as libc::pid_t), libc::SIGKILL) };
}

impl Copy {
    /// `abcd loop start` of the fake agents, in the background.
    fn spawn_start(&self, lab: &Lab, run: &str) -> std::process::Child {
        let agent = lab.agent().display().to_string();
        let (imp, rev) = (format!("{agent} implementer {{prompt}}"), format!("{agent} reviewer {{prompt}}"));
        self.command(&["loop", "start", "--run", run, "--implementer", &imp, "--reviewer", &rev])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// Waits for the `n`th run of `role`'s fake agent to block on a `BLOCK` reply: its pid
    /// and its parent's (the turn runner).
    fn blocked(&self, role: &str, n: usize) -> (u32, u32) {
        let file = self.fake.join(format!("{role}.pid.{n}"));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(text) = std::fs::read_to_string(&file) {
                let w: Vec<u32> = text.split_whitespace().map(|w| w.parse().unwrap()).collect();
                return (w[0], w[1]);
            }
            assert!(Instant::now() < deadline, "run {n} of the {role} never blocked");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `(turn, step)` of each run of `role`'s fake agent.
    fn turns_of(&self, role: &str) -> Vec<(u64, String)> {
        self.runs_of(role).into_iter().map(|(turn, step, ..)| (turn, step)).collect()
    }
}

/// Issue 33: the whole process tree of a turn SIGKILLed mid-turn, as a machine crash
/// leaves it: the driver, the watcher, the turn runner and the agent. `abcd resume` names
/// the turn in flight; `abcd loop drive` finds its agent lost (gone, its exit never
/// recorded, no reply), records so, and runs that turn again, once; no earlier turn runs
/// again.
#[test]
fn a_turn_whose_whole_process_tree_was_killed_runs_again_once() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "BLOCK COMPLETED", "COMPLETED"], &["LGTM"]);
    let mut driver = c.spawn_start(&lab, "crash");
    let (_, runner) = c.blocked("implementer", 2);
    // The turn runner is the launch's recorded process, and its parent is the watcher.
    let started = events_of(&c, "launch.started");
    assert_eq!(started.last().unwrap()["data"]["process"]["pid"], runner, "{started:?}");
    let watcher = abcd::platform::process::parent_of(runner).expect("the watcher waits on the turn runner");
    sigkill(driver.id());
    driver.wait().unwrap();
    sigkill(watcher);
    sigkill_group(runner);
    let listing = stdout(&c.abcd(&["resume"]));
    assert!(listing.contains("turn 3 (advance of the implementer) in flight") && listing.contains("`abcd loop drive crash`"), "{listing}");
    let out = c.abcd(&["loop", "drive", "crash"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("lost"), "{}", stdout(&out));
    let r = c.record("crash");
    assert_eq!(r["stop_reason"], "completed", "{r}");
    assert_eq!(r["lost"], 1, "{r}");
    assert_eq!(c.turns_of("implementer"), [(1, "advance".into()), (3, "advance".into()), (3, "advance".into())]);
    assert_eq!(c.turns_of("reviewer"), [(2, "review".into())]);
    let lost = events_of(&c, "loop.turn_lost");
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0]["data"], json!({"run": "crash", "turn": 3, "launch": 2, "how": "gone", "signal": null}));
    assert_verifies(&c);
}

/// Issue 33: only the driver SIGKILLed mid-turn; its agent goes on and replies. `abcd loop
/// drive` collects that reply and never runs the turn again.
#[test]
fn a_turn_whose_driver_alone_was_killed_is_collected_not_run_again() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "BLOCK COMPLETED"], &["LGTM"]);
    let mut driver = c.spawn_start(&lab, "dk");
    c.blocked("implementer", 2);
    sigkill(driver.id());
    driver.wait().unwrap();
    std::fs::write(c.fake.join("implementer.go.2"), "").unwrap();
    let out = c.abcd(&["loop", "drive", "dk"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let r = c.record("dk");
    assert_eq!(r["stop_reason"], "completed", "{r}");
    assert_eq!(r["lost"], 0, "{r}");
    assert_eq!(c.turns_of("implementer"), [(1, "advance".into()), (3, "advance".into())]);
    assert_eq!(c.turns_of("reviewer"), [(2, "review".into())]);
    assert!(events_of(&c, "loop.turn_lost").is_empty());
    assert_verifies(&c);
}

/// An agent ended by a signal is lost: its turn runs again, at most `LOST_TURN_RERUNS`
/// times; one loss more stops the run `peer_error`, naming the count. The turn runner ends
/// by the agent's signal, so the ledger records the signal, not a code.
#[test]
fn a_turn_lost_more_than_lost_turn_reruns_times_stops_the_run() {
    let reruns = abcd::phased::LOST_TURN_RERUNS as usize;
    let lab = Lab::new();
    let mut within = vec!["KILL"; reruns];
    within.push("COMPLETED");
    let c = lab.copy("within", &within, &[]);
    let out = c.start(&lab, "w", &[]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let r = c.record("w");
    assert_eq!((r["stop_reason"].as_str(), r["lost"].as_u64()), (Some("completed"), Some(reruns as u64)), "{r}");
    assert_eq!(c.turns_of("implementer"), vec![(1, "advance".to_string()); reruns + 1]);
    let exits: Vec<Value> = events_of(&c, "launch.exited").iter().map(|e| e["data"]["status"].clone()).collect();
    // The replied launch's exit may land after its reply was collected; the lost ones'
    // exits come first.
    assert_eq!(exits[..reruns], vec![json!({"kind": "signal", "signal": 9}); reruns], "the watcher records the agent's signal");
    assert!(exits[reruns..].iter().all(|e| *e == json!({"kind": "code", "code": 0})), "{exits:?}");
    let lost = events_of(&c, "loop.turn_lost");
    assert_eq!(lost.len(), reruns);
    assert_eq!(lost[0]["data"], json!({"run": "w", "turn": 1, "launch": 1, "how": "signal", "signal": 9}));
    assert_verifies(&c);

    let mut over = vec!["KILL"; reruns + 1];
    over.push("COMPLETED");
    let c = lab.copy("over", &over, &[]);
    let out = c.start(&lab, "o", &[]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let r = c.record("o");
    assert_eq!(r["stop_reason"], "peer_error", "{r}");
    let detail = r["stop_detail"].as_str().unwrap();
    assert!(detail.contains(&format!("lost {} times", reruns + 1)) && detail.contains("killed by signal 9"), "{detail}");
    assert_eq!(c.turns_of("implementer").len(), reruns + 1);
    assert_eq!(events_of(&c, "loop.turn_lost").len(), reruns);
    assert_verifies(&c);
}

/// Issue 32: a NUL byte in the implementer's reply cannot travel in the reviewer's
/// command line. It is refused where it is read, as the implementer's failure: the run
/// stops `peer_error` naming the implementer's launch, and the reviewer never runs.
#[test]
fn a_reply_holding_a_nul_byte_is_its_writers_failure_not_the_next_agents() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1\\0 and more"], &["LGTM"]);
    let out = c.start(&lab, "nul", &[]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let r = c.record("nul");
    assert_eq!((r["state"].as_str(), r["stop_reason"].as_str()), (Some("stopped"), Some("peer_error")), "{r}");
    let detail = r["stop_detail"].as_str().unwrap();
    assert!(detail.contains("of the implementer ended") && detail.contains("without a reply"), "{detail}");
    assert!(c.runs_of("reviewer").is_empty(), "the reviewer never ran");
    let log = std::fs::read_dir(c.root.join(".abcd/.work.local/runs/nul"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".err"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect::<String>();
    assert!(log.contains("the reply of the implementer agent (turn 1) cannot be read: the reply holds a NUL byte"), "{log}");
    assert_verifies(&c);
}

#[test]
fn claude_json_reads_the_reply_and_passes_the_session_back_with_resume() {
    let lab = Lab::new();
    let mut c = lab.copy("wc", &[], &["LGTM"]);
    let bin = lab.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    write_script(&bin.join("claude"), CLAUDE);
    std::fs::write(c.fake.join("claude.replies"), "did phase 1\nCOMPLETED\n").unwrap();
    c.extra_path = Some(bin);
    let rev = format!("{} reviewer {{prompt}}", lab.agent().display());
    let out = c.abcd(&[
        "loop",
        "start",
        "--run",
        "cj",
        "--implementer",
        "claude -p {prompt} --resume {session} --output-format json",
        "--implementer-reader",
        "claude-json",
        "--reviewer",
        &rev,
    ]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let r = c.record("cj");
    assert_eq!(r["stop_reason"], "completed");
    assert_eq!(r["sessions"]["implementer"], "sess-impl-1");
    assert_eq!(r["sessions"]["reviewer"], Value::Null);
    let args = std::fs::read_to_string(c.fake.join("claude.args")).unwrap();
    let calls: Vec<&str> = args.lines().collect();
    assert_eq!(calls.len(), 2, "{args}");
    assert!(calls[0].starts_with("-p Implement the next phase") && !calls[0].contains("--resume"), "first turn: {}", calls[0]);
    assert!(calls[0].ends_with("--output-format json "), "{}", calls[0]);
    assert!(calls[1].contains("--resume sess-impl-1 --output-format json"), "second turn: {}", calls[1]);
    // The reviewer saw the `result` text, not the JSON around it.
    let prompts = std::fs::read_to_string(c.fake.join("reviewer.prompts")).unwrap();
    assert!(prompts.contains("did phase 1") && !prompts.contains("session_id"), "{prompts}");
}

#[test]
fn bad_input_is_refused_with_exit_2_and_nothing_recorded() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["x"], &["LGTM"]);
    let agent = lab.agent().display().to_string();
    let good = format!("{agent} reviewer {{prompt}}");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--implementer".into(), format!("{agent} implementer"), "--reviewer".into(), good.clone()], "has no {prompt} placeholder"),
        (vec!["--implementer".into(), "no-such-agent-xyz {prompt}".into(), "--reviewer".into(), good.clone()], "not found on PATH"),
        (
            vec![
                "--implementer".into(),
                format!("{agent} i {{prompt}}"),
                "--reviewer".into(),
                good.clone(),
                "--max-rounds".into(),
                "0".into(),
            ],
            "--max-rounds must be 1 to 100",
        ),
        (
            vec![
                "--implementer".into(),
                format!("{agent} i {{prompt}}"),
                "--reviewer".into(),
                good.clone(),
                "--max-rounds".into(),
                "101".into(),
            ],
            "--max-rounds must be 1 to 100",
        ),
        (
            vec![
                "--implementer".into(),
                format!("{agent} i {{prompt}}"),
                "--reviewer".into(),
                good.clone(),
                "--completion-signal".into(),
                "DONE".into(),
                "--advance-prompt".into(),
                "Do the next phase; say COMPLETED when none is left.".into(),
            ],
            "does not name the completion signal DONE",
        ),
        (vec!["--implementer".into(), format!("{agent} 'i {{prompt}}"), "--reviewer".into(), good.clone()], "unclosed single quote"),
    ];
    for (args, message) in cases {
        let mut all = vec!["loop".to_string(), "start".into()];
        all.extend(args);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = c.abcd(&refs);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message) && stderr(&out).contains("nothing was recorded"), "{all:?}: {}", stderr(&out));
    }
    // Limits on both sides: 100 rounds is taken.
    let out = c.start(&lab, "edge", &["--max-rounds", "100", "--detach"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(c.journal().matches("\"kind\":\"loop.started\"").count(), 1, "only the good start was recorded");
    for control in ["pause", "resume", "stop", "skip", "retry", "drive", "status"] {
        let out = c.abcd(&["loop", control, "nope"]);
        assert_eq!(out.status.code(), Some(2), "{control}");
        assert!(stderr(&out).contains("no loop named \"nope\""), "{control}: {}", stderr(&out));
    }
    let out = c.start(&lab, "edge", &[]);
    assert_eq!(out.status.code(), Some(2), "a second loop of the same name");
    assert!(stderr(&out).contains("--run NEW-NAME"), "{}", stderr(&out));
}

/// Normalizes a record for comparison between runs: drops times, ledger launch numbers
/// (an abandoned, never-started launch takes one), paths and the abandoned count.
fn normalized(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "started_at"
                            | "stopped_at"
                            | "replied_at"
                            | "intended_at"
                            | "ended_at"
                            | "launch"
                            | "reply_file"
                            | "abandoned"
                            | "config"
                    )
                })
                .map(|(k, v)| (k.clone(), normalized(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

/// A scenario long enough to be killed in: phases converging in 1, 2, 3, 1, 2, 3, … rounds.
fn long_scenario(phases: usize) -> (Vec<String>, Vec<String>) {
    let (mut imp, mut rev) = (vec![], vec![]);
    for p in 1..=phases {
        let rounds = (p - 1) % 3 + 1;
        imp.push(format!("did phase {p}"));
        for r in 1..=rounds {
            if r < rounds {
                rev.push(format!("phase {p} round {r}: not yet"));
                imp.push(format!("fixed phase {p} round {r}"));
            } else {
                rev.push(format!("phase {p}: good\\nLGTM"));
            }
        }
    }
    imp.push("COMPLETED".into());
    (imp, rev)
}

/// Acceptance 2: the driver SIGKILLed at random moments, `abcd loop drive` resuming each
/// time; no agent turn ever runs twice, and the final record equals an uninterrupted run's.
/// `ABCD_LOOP_KILLS=500` for the long run (default 50).
#[test]
fn the_driver_killed_at_random_moments_resumes_without_running_a_turn_twice() {
    let kills: usize = std::env::var("ABCD_LOOP_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let phases = (kills / 2).max(12);
    let (imp, rev) = long_scenario(phases);
    let imp: Vec<&str> = imp.iter().map(String::as_str).collect();
    let rev: Vec<&str> = rev.iter().map(String::as_str).collect();
    let lab = Lab::new();

    let calm = lab.copy("calm", &imp, &rev);
    let out = calm.start(&lab, "k", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = calm.record("k");
    assert_eq!(expected["stop_reason"], "completed");

    let c = lab.copy("killed", &imp, &rev);
    let began = Instant::now();
    let mut seed: u64 = abcd::clock::wall_now().as_nanosecond() as u64 | 1;
    eprintln!("kill seed {seed}");
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let agent = lab.agent().display().to_string();
    let (imp_t, rev_t) = (format!("{agent} implementer {{prompt}}"), format!("{agent} reviewer {{prompt}}"));
    let mut landed = 0;
    let mut attempts = 0;
    while landed < kills {
        attempts += 1;
        assert!(attempts < kills * 20, "the run ended before {kills} kills landed ({landed} did)");
        // A start killed before it recorded the loop is started again.
        let mut cmd = if c.try_record("k").is_none() {
            c.command(&["loop", "start", "--run", "k", "--implementer", &imp_t, "--reviewer", &rev_t])
        } else {
            c.command(&["loop", "drive", "k"])
        };
        let mut child = cmd.env("FAKE_SLEEP", "0.01").stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(next() % 80_000));
        let running = child.try_wait().unwrap().is_none();
        // SAFETY: a plain kill of our own child, not yet reaped, so its pid is not reused.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
        let _ = child.wait();
        if running {
            landed += 1;
        }
        let Some(r) = c.try_record("k") else { continue };
        assert_each_turn_ran_once(&c, &r);
        if r["state"] == "stopped" {
            break;
        }
    }
    // Whatever is left, uninterrupted.
    let r = c.record("k");
    if r["state"] != "stopped" {
        let out = c.abcd(&["loop", "drive", "k"]);
        assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    }
    let got = c.record("k");
    eprintln!(
        "{landed} kills landed in {attempts} drives over {} turns ({} launches abandoned) in {:.1} s",
        got["turns"],
        got["abandoned"],
        began.elapsed().as_secs_f64()
    );
    assert!(landed >= kills, "only {landed} kills landed before the run ended");
    assert_eq!(normalized(&got), normalized(&expected));
    assert_each_turn_ran_once(&c, &got);
    let implemented: Vec<u64> = c.runs_of("implementer").iter().map(|r| r.0).collect();
    let calm_implemented: Vec<u64> = calm.runs_of("implementer").iter().map(|r| r.0).collect();
    assert_eq!(implemented, calm_implemented);
    assert_verifies(&c);
}

/// The journal's events of `kind`, as JSON.
fn events_of(c: &Copy, kind: &str) -> Vec<Value> {
    c.journal().lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|e| e["kind"] == kind).collect()
}

/// Claude Code names its session in `CLAUDE_CODE_SESSION_ID` for the commands its tools
/// run: a run or a loop started there, and a loop driven on from there, names that session
/// as its driver's (and as the author of the events).
#[test]
fn a_driver_started_in_a_host_session_names_it() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1"], &["no"]);
    let (first, second) = ("0b5c1f2e-7a4d-4c1b-9e3f-2d6a8b9c0d1e", "sess-2");
    let agent = lab.agent().display().to_string();
    let (imp, rev) = (format!("{agent} implementer {{prompt}}"), format!("{agent} reviewer {{prompt}}"));
    let in_session = |session: &str, args: &[&str]| {
        let out = c.command(args).env("CLAUDE_CODE_SESSION_ID", session).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}{}", stdout(&out), stderr(&out));
    };
    // The loop pauses after its first review round, its driver gone with `loop start`.
    in_session(first, &["loop", "start", "--run", "l", "--implementer", &imp, "--reviewer", &rev, "--max-rounds", "1"]);
    in_session(first, &["run", "start", "r", "--lane", "a"]);
    let started = events_of(&c, "run.started");
    assert_eq!(started.len(), 2, "{started:?}");
    for e in &started {
        assert_eq!((&e["data"]["driver"]["session"], &e["actor"]["session"]), (&json!(first), &json!(first)), "{e}");
    }
    let out = c.abcd(&["resume", "--json"]);
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = listing["runs"].as_array().unwrap().iter().find(|r| r["run"] == "r").unwrap().clone();
    assert_eq!(r["driver"]["session"], first, "{r}");
    // Driving the loop on from another session claims it for that session.
    in_session(second, &["loop", "drive", "l"]);
    let claimed = events_of(&c, "run.driver_claimed");
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    assert_eq!(claimed[0]["data"]["driver"]["session"], second, "{}", claimed[0]);
}

/// `abcd resume` names the loop's own verbs for a loop's run whose driver is gone, never
/// `abcd run takeover` (which would make the caller the driver, and `abcd loop drive` then
/// refuses while the caller lives).
#[test]
fn resume_suggests_the_loops_verbs_for_a_loops_run() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "COMPLETED"], &["no", "LGTM"]);
    assert!(c.start(&lab, "l", &["--max-rounds", "1"]).status.success(), "the loop pauses and its driver exits");
    let listing = stdout(&c.abcd(&["resume"]));
    assert!(listing.contains("driver gone") && listing.contains("`abcd loop resume l`, then `abcd loop drive l`"), "{listing}");
    assert!(!listing.contains("takeover"), "{listing}");
    // Neither a takeover nor a second start is the way in: both name `loop drive`.
    for args in [&["run", "takeover", "l"][..], &["run", "start", "l", "--lane", "implementer"][..]] {
        let refused = c.abcd(args);
        assert_eq!(refused.status.code(), Some(2), "{args:?}: {}", stderr(&refused));
        assert!(stderr(&refused).contains("`abcd loop drive l`"), "{args:?}: {}", stderr(&refused));
    }
    assert!(!c.journal().contains("run.driver_claimed"), "nothing claimed");
    assert!(c.abcd(&["loop", "resume", "l"]).status.success());
    let listing = stdout(&c.abcd(&["resume"]));
    assert!(listing.contains("driver gone") && listing.contains("(`abcd loop drive l` carries the loop on)"), "{listing}");
    assert!(!listing.contains("takeover"), "{listing}");
    // What it suggests works: the loop is driven on to its end.
    let out = c.abcd(&["loop", "drive", "l"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(c.record("l")["stop_reason"], "completed");
    // A run that is no loop's is still claimed with `abcd run takeover`.
    let mut driver = Command::new("sleep").arg("60").spawn().unwrap();
    assert!(c.abcd(&["run", "start", "plain", "--lane", "a", "--driver-pid", &driver.id().to_string()]).status.success());
    driver.kill().unwrap();
    driver.wait().unwrap();
    let listing = stdout(&c.abcd(&["resume"]));
    assert!(listing.contains("(claim it with `abcd run takeover plain`)"), "{listing}");
}

/// Two `abcd loop start` in the same second without `--run` get two loops: the second
/// default name takes a suffix (the clock is pinned with the test seam `ABCD_TEST_NOW`).
#[test]
fn two_loops_started_in_the_same_second_get_two_names() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["COMPLETED", "COMPLETED"], &[]);
    let agent = lab.agent().display().to_string();
    let (imp, rev) = (format!("{agent} implementer {{prompt}}"), format!("{agent} reviewer {{prompt}}"));
    let mut said = vec![];
    for _ in 0..2 {
        let out = c
            .command(&["loop", "start", "--implementer", &imp, "--reviewer", &rev])
            .env("ABCD_TEST_NOW", "2026-12-01T09:00:00.25Z")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
        said.push(stdout(&out).lines().next().unwrap_or_default().to_string());
    }
    assert_eq!(said, ["loop loop-20261201T090000Z started", "loop loop-20261201T090000Z-2 started"]);
    let status = c.abcd(&["loop", "status", "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    let names: Vec<&str> = status["loops"].as_array().unwrap().iter().map(|l| l["record"]["run"].as_str().unwrap()).collect();
    assert_eq!(names, ["loop-20261201T090000Z", "loop-20261201T090000Z-2"]);
    assert_eq!(events_of(&c, "run.started").len(), 2);
    for name in names {
        assert_eq!(c.record(name)["stop_reason"], "completed", "{name}");
    }
}

/// An implementer that never says the completion signal is bounded: the loop pauses at
/// `--max-turns`, recorded with its reason, and a resume allows as many turns again.
#[test]
fn a_loop_whose_implementer_never_completes_pauses_at_max_turns() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "did 2", "did 3", "did 4"], &["LGTM", "LGTM", "LGTM", "LGTM"]);
    let out = c.start(&lab, "endless", &["--max-turns", "4"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("4 turns ran without the completion signal (--max-turns 4): paused"), "{}", stdout(&out));
    let r = c.record("endless");
    assert_eq!((r["state"].as_str(), r["paused_reason"].as_str(), r["turns"].as_u64()), (Some("paused"), Some("max_turns"), Some(4)));
    assert_eq!(r["config"]["max_turns"], 4);
    assert_eq!(c.runs_of("implementer").len() + c.runs_of("reviewer").len(), 4, "no turn ran past the bound");
    let paused = events_of(&c, "loop.paused");
    assert_eq!(paused.len(), 1);
    assert_eq!(paused[0]["data"], json!({"run": "endless", "reason": "max_turns"}));
    let status = stdout(&c.abcd(&["loop", "status", "endless"]));
    assert!(status.contains("PAUSED: 4 turns ran without the completion signal"), "{status}");
    // Drive ends at once while paused; a resume allows four more turns.
    assert!(c.abcd(&["loop", "drive", "endless"]).status.success());
    assert_eq!(c.record("endless")["turns"], 4);
    assert!(c.abcd(&["loop", "resume", "endless"]).status.success());
    let out = c.abcd(&["loop", "drive", "endless"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let r = c.record("endless");
    assert_eq!((r["paused_reason"].as_str(), r["turns"].as_u64(), r["phases_done"].as_u64()), (Some("max_turns"), Some(8), Some(4)));
    assert_each_turn_ran_once(&c, &r);
    assert_verifies(&c);
}

/// `--max-turns` has a default, said in `--help`, and is refused outside 1 to 10000.
#[test]
fn max_turns_has_a_default_and_limits_on_both_sides() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["COMPLETED", "COMPLETED"], &[]);
    let help = stdout(&c.abcd(&["loop", "start", "--help"]));
    assert!(help.contains("--max-turns <N>") && help.contains("[default: 200]"), "{help}");
    for bad in ["0", "10001"] {
        let out = c.start(&lab, "b", &["--max-turns", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            stderr(&out).contains("--max-turns must be 1 to 10000") && stderr(&out).contains("nothing was recorded"),
            "{}",
            stderr(&out)
        );
    }
    assert!(c.start(&lab, "edge", &["--max-turns", "10000"]).status.success());
    assert_eq!(c.record("edge")["config"]["max_turns"], 10_000);
    assert!(c.start(&lab, "d", &[]).status.success());
    assert_eq!(c.record("d")["config"]["max_turns"], 200, "the default");
}

/// A loop started with every default runs both agents in one worktree abcd made for it
/// (issue 19), never in the person's checkout, whose files stay as they were; a checklist
/// the agents could not see there (not committed) is refused before anything is recorded.
#[test]
fn a_loops_agents_run_in_a_worktree_of_their_own() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "COMPLETED"], &["LGTM"]);
    std::fs::write(c.root.join("README"), "the person's edit\n").unwrap();
    std::fs::write(c.root.join("plan.md"), "- [ ] one\n").unwrap();
    let journal_before = c.journal();
    let refused = c.start(&lab, "l", &["--checklist", "plan.md"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("the checklist plan.md is not committed"), "{}", stderr(&refused));
    assert_eq!(c.journal(), journal_before, "nothing recorded");

    let out = c.start(&lab, "l", &[]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(c.record("l")["stop_reason"], "completed");
    let tree = c.home.join("lanes");
    for role in ["implementer", "reviewer"] {
        let pwds = std::fs::read_to_string(c.fake.join(format!("{role}.pwd"))).unwrap();
        for pwd in pwds.lines() {
            assert!(Path::new(pwd).starts_with(&tree) && pwd.ends_with("/l/implementer"), "{role} ran in {pwd}");
        }
    }
    assert_eq!(std::fs::read_to_string(c.root.join("README")).unwrap(), "the person's edit\n");
    assert!(c.root.join("plan.md").exists());
    let journal = c.journal();
    assert!(journal.find("lane.worktree_created").unwrap() < journal.find("launch.intended").unwrap());
}

/// The loop's worktree deleted by hand (or never made, after a crash right after the loop
/// was recorded) is made again by the driver before the next turn, and the loop carries on;
/// its summary names where the agents work and how that worktree goes.
#[test]
fn the_driver_makes_the_loops_worktree_again_when_it_is_gone() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did 1", "COMPLETED"], &["no", "LGTM"]);
    let out = c.start(&lab, "l", &["--max-rounds", "1"]);
    assert!(out.status.success() && stdout(&out).contains("did not converge"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("its agents work in ") && stdout(&out).contains("`abcd run finish l` removes that worktree"),
        "{}",
        stdout(&out)
    );
    let tree = PathBuf::from(c.record("l")["config"]["implementer"]["worktree"].as_str().unwrap());
    std::fs::remove_dir_all(&tree).unwrap();
    assert!(c.abcd(&["loop", "retry", "l"]).status.success());
    let out = c.abcd(&["loop", "drive", "l"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(c.record("l")["stop_reason"], "completed", "{}{}", stdout(&out), stderr(&out));
    assert!(tree.is_dir(), "made again");
    assert_eq!(c.journal().matches("\"kind\":\"lane.worktree_created\"").count(), 2);
}

/// Issue 33: a loop whose checkout never committed `.claude/settings.json` runs its agents
/// in a worktree of HEAD, which holds no settings: before the first turn the driver gives
/// that worktree abcd's hooks in its `.claude/settings.local.json` (every event the
/// person's checkout has), kept out of git.
#[test]
fn a_loop_whose_base_lacks_the_hooks_gives_its_agents_them() {
    let lab = Lab::new();
    let c = lab.copy("wc", &["did phase 1", "COMPLETED"], &["LGTM"]);
    let out = c.start(&lab, "hooked", &[]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let pwd = std::fs::read_to_string(c.fake.join("implementer.pwd")).unwrap();
    let tree = PathBuf::from(pwd.lines().next().unwrap());
    assert!(tree.starts_with(c.home.canonicalize().unwrap()) && tree.ends_with("hooked/implementer"), "{}", tree.display());
    assert!(!tree.join(".claude/settings.json").exists(), "the base holds no settings");
    let local: Value = serde_json::from_str(&std::fs::read_to_string(tree.join(".claude/settings.local.json")).unwrap()).unwrap();
    let person: Value = serde_json::from_str(&std::fs::read_to_string(c.root.join(".claude/settings.json")).unwrap()).unwrap();
    assert_eq!(local["hooks"], person["hooks"], "the agents run with the person's abcd hooks");
    assert_eq!(repo::git(&tree, &["status", "--porcelain", "--", ".claude"]), "", "kept out of git");
}

/// Attack on e07bf2b (branch attack-night): the loop turn's Stop allowance is read from
/// `ABCD_LOOP_*` alone, and every process a turn's agent starts inherits them. An
/// implementer that delegates with `abcd launch` hands them to the launched lane's agent,
/// a session of its own in another run's worktree: while the person is away its Stop is
/// judged `loop_turn` (allowed, whatever row 7 or 2 would say), and its start would name a
/// loop turn it is not.
#[test]
fn an_agent_launched_from_a_loop_turn_is_not_a_loop_turn() {
    let lab = Lab::new();
    let c = lab.copy("wc", &[], &["LGTM"]);
    assert!(c.abcd(&["mode", "autonomous"]).status.success());
    let bin = lab.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_abcd"), bin.join("abcd")).unwrap();
    // The side lane's agent: its Stop, as its host would send it, and its environment.
    let side = lab.dir.path().join("side-agent");
    write_script(
        &side,
        r#"#!/bin/sh
printf '{"session_id":"side-1","cwd":"%s","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done.","background_tasks":[],"session_crons":[]}' "$PWD" | abcd hook stop > "$FAKE_DIR/side.stop" 2>&1
env | grep '^ABCD_LOOP_' > "$FAKE_DIR/side.env"
mv "$FAKE_DIR/side.env" "$FAKE_DIR/side.done"
"#,
    );
    // The implementer delegates from the person's checkout, then says it is done.
    let implementer = lab.dir.path().join("delegating-implementer");
    write_script(
        &implementer,
        &format!(
            "#!/bin/sh\ncd '{}' && abcd run start side --lane a > \"$FAKE_DIR/run.out\" 2>&1 && abcd launch --run side --lane a --role agent --receipt \"$FAKE_DIR/side.receipt\" -- '{}' > \"$FAKE_DIR/launch.out\" 2>&1\necho COMPLETED\n",
            c.root.display(),
            side.display()
        ),
    );
    let mut c = c;
    c.extra_path = Some(bin);
    let imp = format!("{} {{prompt}}", implementer.display());
    let rev = format!("{} reviewer {{prompt}}", lab.agent().display());
    let out = c.abcd(&["loop", "start", "--run", "l", "--implementer", &imp, "--reviewer", &rev]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let done = c.fake.join("side.done");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done.exists() {
        let launched = std::fs::read_to_string(c.fake.join("launch.out")).unwrap_or_default();
        assert!(Instant::now() < deadline, "the side lane's agent never ran: {launched}{}", stderr(&out));
        std::thread::sleep(Duration::from_millis(20));
    }
    let inherited = std::fs::read_to_string(&done).unwrap();
    let stop = std::fs::read_to_string(c.fake.join("side.stop")).unwrap();
    // It inherits the variables (every process the turn's agent starts does), but its
    // worktree is another run's lane, so it is judged as a session of its own.
    assert!(!inherited.is_empty(), "the variables travel: {inherited:?}");
    assert!(
        !stop.trim().is_empty(),
        "a launched lane's agent is judged as a session of its own (blocked away, nothing owed, no wake); \
         it inherited {inherited:?} and its Stop printed {stop:?}"
    );
}
