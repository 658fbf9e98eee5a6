//! The launch ledger end to end through the built binary (issue 7): real git repositories
//! in temp folders and real child processes (`sleep`, small `sh` scripts as fake agents).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use abcd::event::Scope;
use abcd::journal::anchor::AnchorStore;
use abcd::journal::storage::RealDisk;
use abcd::journal::{Actor, Journal, JournalPaths, NewEvent};
use common::repo::{self, README};
use serde_json::Value;

struct Copy {
    root: PathBuf,
    home: PathBuf,
}

struct Lab {
    dir: tempfile::TempDir,
    home: PathBuf,
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        Lab { dir, home }
    }

    fn copy(&self, name: &str) -> Copy {
        let root = self.dir.path().join(name);
        repo::create(&root, &[README, (".gitignore", "*.log\nreceipts/\n")]);
        let c = Copy { root, home: self.home.clone() };
        assert!(c.abcd(&["init"]).status.success());
        // The hooks `abcd init` installed are part of the project: committed, so the lane
        // starts clean.
        c.git(&["add", ".claude"]);
        c.git(&["commit", "-q", "-m", "abcd hooks"]);
        c
    }
}

impl Copy {
    fn git(&self, args: &[&str]) -> String {
        repo::git(&self.root, args)
    }

    fn abcd(&self, args: &[&str]) -> Output {
        self.abcd_env(args, &[])
    }

    fn abcd_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
        cmd.args(args).current_dir(&self.root).env("ABCD_HOME", &self.home).env_remove("CLAUDE_SESSION_ID");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// `abcd launch --run RUN --lane LANE --role ROLE --receipt RECEIPT [--cwd DIR] -- COMMAND…`
    fn launch(&self, run: &str, lane: &str, role: &str, receipt: &Path, cwd: Option<&Path>, command: &[&str]) -> Output {
        let receipt = receipt.to_str().unwrap();
        let mut args = vec!["launch", "--run", run, "--lane", lane, "--role", role, "--receipt", receipt];
        if let Some(dir) = cwd {
            args.extend(["--cwd", dir.to_str().unwrap()]);
        }
        args.push("--");
        args.extend_from_slice(command);
        self.abcd(&args)
    }

    fn receipt(&self, name: &str) -> PathBuf {
        self.root.join("receipts").join(name)
    }

    fn resume_json(&self) -> Value {
        let out = self.abcd(&["resume", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn lane(&self, run: &str, lane: &str) -> Value {
        let v = self.resume_json();
        let r = v["runs"].as_array().unwrap().iter().find(|r| r["run"] == run).unwrap_or_else(|| panic!("{run} not listed: {v}")).clone();
        r["lanes"].as_array().unwrap().iter().find(|l| l["lane"] == lane).unwrap().clone()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn sleeper() -> std::process::Child {
    Command::new("sleep").arg("60").spawn().unwrap()
}

/// Waits until `cond` holds, at most 10 s.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_second_driver_is_refused_while_the_first_lives_and_a_gone_one_is_taken_over() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let mut driver = sleeper();
    let pid = driver.id().to_string();
    let out = c.abcd(&["run", "start", "r1", "--lane", "impl", "--driver-pid", &pid]);
    assert!(out.status.success(), "{}", stderr(&out));
    let again = c.abcd(&["run", "start", "r1", "--lane", "impl"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains(&format!("pid {pid}")), "names the live driver: {}", stderr(&again));
    assert_eq!(c.abcd(&["run", "takeover", "r1"]).status.code(), Some(2), "no takeover while the driver lives");
    driver.kill().unwrap();
    driver.wait().unwrap();
    let v = c.resume_json();
    assert_eq!(v["runs"][0]["driver_alive"], false);
    let mut successor = sleeper();
    let out = c.abcd(&["run", "takeover", "r1", "--driver-pid", &successor.id().to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(c.resume_json()["runs"][0]["driver"]["process"]["pid"].as_u64(), Some(u64::from(successor.id())));
    successor.kill().unwrap();
    successor.wait().unwrap();
}

#[test]
fn a_reused_pid_is_not_taken_for_the_driver() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    // A run whose recorded driver has the pid of a live process but another start time:
    // what a reused pid looks like. Written through abcd's own journal API, as a run
    // started before the pid was reused would have left it.
    let mut stranger = sleeper();
    let journal = Journal::new(
        RealDisk::shared(),
        JournalPaths::beside(&c.root.join(".abcd/.work.local/journal.jsonl")),
        Some(AnchorStore::new(&c.home)),
    );
    let data = serde_json::json!({"run": "r1", "working_copy": c.root, "lanes": ["impl"],
        "driver": {"session": null, "process": {"pid": stranger.id(), "start_ticks": 1}}});
    let scope = Scope::WorkingCopy { root: c.root.display().to_string() };
    journal.append_batch(&[NewEvent { kind: "run.started".into(), actor: Actor::this_process(None), data }], Some(&scope)).unwrap();
    let v = c.resume_json();
    assert_eq!(v["runs"][0]["driver_alive"], false, "a live process under the pid is not the driver: {v}");
    let out = c.abcd(&["run", "takeover", "r1", "--driver-pid", &std::process::id().to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    stranger.kill().unwrap();
    stranger.wait().unwrap();
}

#[test]
fn collect_before_launch_and_no_launch_over_a_live_agent() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let mut driver = sleeper();
    assert!(c.abcd(&["run", "start", "r1", "--lane", "impl", "--driver-pid", &driver.id().to_string()]).status.success());
    let receipt = c.receipt("impl-1.json");
    std::fs::create_dir_all(receipt.parent().unwrap()).unwrap();
    let script = format!("sleep 0.3; echo '{{\"done\":true}}' > '{}'", receipt.display());
    let out = c.launch("r1", "impl", "implementer", &receipt, None, &["sh", "-c", &script]);
    assert!(out.status.success(), "{}", stderr(&out));
    // While it runs, a second launch is refused naming its pid.
    let lane = c.lane("r1", "impl");
    let pid = lane["agent"]["pid"].as_u64().unwrap();
    let second = c.launch("r1", "impl", "implementer", &receipt, None, &["true"]);
    if lane["agent_alive"] == true {
        assert_eq!(second.status.code(), Some(2));
        assert!(stderr(&second).contains(&format!("pid {pid}")), "{}", stderr(&second));
    }
    // It wrote its receipt and exited with nobody watching: listed as waiting.
    eventually("the receipt to be waiting", || c.lane("r1", "impl")["receipt_waiting"] == true);
    let refused = c.launch("r1", "impl", "implementer", &receipt, None, &["true"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("abcd collect --run r1 --lane impl"), "{}", stderr(&refused));
    let collected = c.abcd(&["collect", "--run", "r1", "--lane", "impl"]);
    assert!(collected.status.success(), "{}", stderr(&collected));
    assert!(c.lane("r1", "impl")["stage"].as_str().unwrap().contains("receipt collected"));
    eventually("the exit to be recorded", || {
        std::fs::read_to_string(c.root.join(".abcd/.work.local/journal.jsonl")).unwrap().contains("launch.exited")
    });
    let next = c.launch("r1", "impl", "implementer", &c.receipt("impl-2.json"), None, &["true"]);
    assert!(next.status.success(), "after collect the lane launches again: {}", stderr(&next));
    driver.kill().unwrap();
    driver.wait().unwrap();
}

#[test]
fn uncommitted_work_is_saved_aside_named_and_the_lane_reset_before_the_agent_starts() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let mut driver = sleeper();
    assert!(c.abcd(&["run", "start", "r1", "--lane", "impl", "--driver-pid", &driver.id().to_string()]).status.success());
    std::fs::write(c.root.join("README"), "changed\n").unwrap();
    std::fs::write(c.root.join("added.rs"), "fn a() {}\n").unwrap();
    c.git(&["add", "added.rs"]);
    std::fs::create_dir_all(c.root.join("src")).unwrap();
    std::fs::write(c.root.join("src/untracked.rs"), "fn u() {}\n").unwrap();
    std::fs::write(c.root.join("build.log"), "ignored\n").unwrap();
    let listed = c.lane("r1", "impl");
    assert_eq!(listed["uncommitted"], Value::Array(vec![]), "no launch yet, so no worktree is known");
    let out = c.launch("r1", "impl", "implementer", &c.receipt("r.json"), None, &["true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let ref_name = text.split_whitespace().find(|w| w.starts_with("refs/abcd/saved/r1/impl/")).unwrap().trim_end_matches(';').to_string();
    assert!(text.contains("Bring the work back with:"), "{text}");
    let names = c.git(&["diff", "--name-only", "HEAD", &ref_name]);
    let mut names: Vec<&str> = names.lines().collect();
    names.sort();
    assert_eq!(names, vec!["README", "added.rs", "src/untracked.rs"]);
    assert_eq!(c.git(&["status", "--porcelain"]).trim(), "", "the lane is back at its last commit");
    assert!(c.root.join("build.log").exists(), "ignored files stay");
    let journal = std::fs::read_to_string(c.root.join(".abcd/.work.local/journal.jsonl")).unwrap();
    let saved = journal.find("work.saved_aside").unwrap();
    let intended = journal.find("launch.intended").unwrap();
    assert!(saved < intended, "saved aside and recorded before the launch is");
    driver.kill().unwrap();
    driver.wait().unwrap();
}

#[test]
fn a_launcher_killed_after_its_intent_leaves_a_listing_that_says_so() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let mut driver = sleeper();
    assert!(c.abcd(&["run", "start", "r1", "--lane", "impl", "--driver-pid", &driver.id().to_string()]).status.success());
    let receipt = c.receipt("r.json");
    let out = c.abcd_env(
        &["launch", "--run", "r1", "--lane", "impl", "--role", "implementer", "--receipt", receipt.to_str().unwrap(), "--", "true"],
        &[("ABCD_TEST_KILL_AFTER_INTENT", "1")],
    );
    assert_eq!(out.status.code(), None, "killed by SIGKILL");
    let lane = c.lane("r1", "impl");
    assert!(lane["stage"].as_str().unwrap().contains("intended, never started"), "{lane}");
    // resume does not start it on its own, not even with --step.
    assert!(c.abcd(&["resume", "--step"]).status.success());
    let journal = std::fs::read_to_string(c.root.join(".abcd/.work.local/journal.jsonl")).unwrap();
    assert!(!journal.contains("launch.started"));
    // A new launch checks the receipt path first: had the agent run and written it, it is
    // collected before anything starts again.
    std::fs::create_dir_all(receipt.parent().unwrap()).unwrap();
    std::fs::write(&receipt, "{}").unwrap();
    let refused = c.launch("r1", "impl", "implementer", &receipt, None, &["true"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("collect it first"));
    driver.kill().unwrap();
    driver.wait().unwrap();
}

#[test]
fn resume_lists_two_runs_in_two_working_copies_and_step_does_only_the_safe_moves() {
    let lab = Lab::new();
    let a = lab.copy("a");
    let b = lab.copy("b");
    let mut driver = sleeper();
    let pid = driver.id().to_string();
    assert!(a.abcd(&["run", "start", "ra", "--lane", "impl", "--driver-pid", &pid]).status.success());
    assert!(b.abcd(&["run", "start", "rb", "--lane", "impl", "--lane", "review", "--driver-pid", &pid]).status.success());
    let receipt = b.receipt("done.json");
    let script = format!("mkdir -p '{}'; echo ok > '{}'; echo work > notes.txt", receipt.parent().unwrap().display(), receipt.display());
    assert!(b.launch("rb", "impl", "implementer", &receipt, None, &["sh", "-c", &script]).status.success());
    eventually("rb's receipt to wait", || b.lane("rb", "impl")["receipt_waiting"] == true);
    assert!(a.abcd(&["run", "halt", "--run", "ra"]).status.success());
    // From a: both runs, with their drivers, lanes, receipts and uncommitted work.
    let v = a.resume_json();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    let rb = runs.iter().find(|r| r["run"] == "rb").unwrap();
    assert_eq!((rb["driver_alive"].as_bool(), rb["halted"].as_bool()), (Some(true), Some(false)));
    let ra = runs.iter().find(|r| r["run"] == "ra").unwrap();
    assert_eq!(ra["halted"], true);
    let impl_lane = rb["lanes"].as_array().unwrap().iter().find(|l| l["lane"] == "impl").unwrap();
    assert_eq!(impl_lane["receipt_waiting"], true);
    assert_eq!(impl_lane["uncommitted"], serde_json::json!(["notes.txt"]));
    // Halted: launch refused until lift.
    let refused = a.launch("ra", "impl", "implementer", &a.receipt("x"), None, &["true"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("halted"));
    // --step: collects the receipt, saves aside the work, starts nothing.
    let step = a.abcd(&["resume", "--step"]);
    assert!(step.status.success(), "{}", stderr(&step));
    let lane = b.lane("rb", "impl");
    assert!(lane["stage"].as_str().unwrap().contains("receipt collected"), "{lane}");
    assert_eq!(lane["uncommitted"], serde_json::json!([]));
    assert_eq!(lane["saved_aside"].as_array().unwrap().len(), 1);
    let journal = std::fs::read_to_string(b.root.join(".abcd/.work.local/journal.jsonl")).unwrap();
    assert_eq!(journal.matches("launch.intended").count(), 1, "nothing started");
    assert!(a.abcd(&["run", "lift", "--run", "ra"]).status.success());
    let ok = a.launch("ra", "impl", "implementer", &a.receipt("x"), None, &["true"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    driver.kill().unwrap();
    driver.wait().unwrap();
}

#[test]
fn bad_input_is_refused_with_exit_2_and_nothing_recorded() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let mut driver = sleeper();
    assert!(c.abcd(&["run", "start", "r1", "--lane", "impl", "--driver-pid", &driver.id().to_string()]).status.success());
    let journal = c.root.join(".abcd/.work.local/journal.jsonl");
    let before = std::fs::read_to_string(&journal).unwrap().lines().count();
    std::fs::create_dir_all(c.root.join("a-folder")).unwrap();
    let not_git = lab.dir.path().join("plain");
    std::fs::create_dir_all(&not_git).unwrap();
    let r = c.receipt("r.json");
    let r = r.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["launch", "--run", "r1", "--lane", "impl", "--role", "implementer", "--receipt", "a-folder", "--", "true"], "is a folder"),
        (
            vec!["launch", "--run", "r1", "--lane", "impl", "--role", "implementer", "--receipt", r, "--", "no-such-program-xyz"],
            "not an executable",
        ),
        (vec!["launch", "--run", "nope", "--lane", "impl", "--role", "implementer", "--receipt", r, "--", "true"], "no run named"),
        (vec!["launch", "--run", "r1", "--lane", "nope", "--role", "implementer", "--receipt", r, "--", "true"], "no lane"),
        (
            vec![
                "launch",
                "--run",
                "r1",
                "--lane",
                "impl",
                "--role",
                "implementer",
                "--receipt",
                r,
                "--cwd",
                not_git.to_str().unwrap(),
                "--",
                "true",
            ],
            "not a git worktree",
        ),
        (
            vec![
                "launch",
                "--run",
                "r1",
                "--lane",
                "impl",
                "--role",
                "implementer",
                "--receipt",
                r,
                "--",
                "deploy",
                "--token",
                "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
            ],
            "secret",
        ),
        (vec!["run", "start", "a/b"], "run name"),
        (vec!["collect", "--run", "r1", "--lane", "impl"], "launched nothing"),
    ];
    for (args, words) in cases {
        let out = c.abcd(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(words), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("ghp_0123"), "no secret echoed");
    }
    assert_eq!(std::fs::read_to_string(&journal).unwrap().lines().count(), before, "nothing recorded");
    driver.kill().unwrap();
    driver.wait().unwrap();
}

/// Every listing asks git afresh: work written after a listing shows in the next one (the
/// early read of the previous listing's worktrees runs each time), a worktree the previous
/// listing did not name is read too, and one that is gone is named, not shown as clean.
#[test]
fn every_listing_reads_the_worktrees_afresh() {
    let lab = Lab::new();
    let a = lab.copy("a");
    let mut driver = sleeper();
    let pid = driver.id().to_string();
    assert!(a.abcd(&["run", "start", "r", "--lane", "impl", "--lane", "review", "--driver-pid", &pid]).status.success());
    let launch = |lane: &str, cwd: &std::path::Path, script: &str| {
        let receipt = a.receipt(&format!("{lane}.json"));
        let out = a.launch("r", lane, "agent", &receipt, Some(cwd), &["sh", "-c", script]);
        assert!(out.status.success(), "{}", stderr(&out));
    };
    launch("impl", &a.root, "true");
    eventually("impl to exit", || a.lane("r", "impl")["stage"].as_str().unwrap().contains("exited"));
    assert_eq!(a.lane("r", "impl")["uncommitted"], serde_json::json!([]));
    std::fs::write(a.root.join("later.txt"), "x\n").unwrap();
    assert_eq!(a.lane("r", "impl")["uncommitted"], serde_json::json!(["later.txt"]), "written after the last listing");

    let review_tree = lab.dir.path().join("review-tree");
    a.git(&["worktree", "add", "-q", "-b", "review", review_tree.to_str().unwrap()]);
    launch("review", &review_tree, "echo x > r.txt");
    eventually("review to exit", || a.lane("r", "review")["stage"].as_str().unwrap().contains("exited"));
    // Without the previous listing nothing is read early: every worktree is read after the
    // journals (a listing's own early guess comes from resume.json).
    std::fs::remove_file(a.root.join(".abcd/.work.local/resume.json")).unwrap();
    let review = a.lane("r", "review");
    assert_eq!(review["uncommitted"], serde_json::json!(["r.txt"]), "{review}");
    assert_eq!(review["worktree_problem"], Value::Null);
    assert_eq!(a.lane("r", "impl")["uncommitted"], serde_json::json!(["later.txt"]));

    std::fs::remove_dir_all(&review_tree).unwrap();
    let review = a.lane("r", "review");
    assert_eq!(review["uncommitted"], serde_json::json!([]));
    assert!(review["worktree_problem"].as_str().is_some_and(|p| !p.is_empty()), "a gone worktree is named: {review}");
    let text = stdout(&a.abcd(&["resume"]));
    assert!(text.contains("worktree cannot be read"), "{text}");
    assert_eq!(a.lane("r", "impl")["uncommitted"], serde_json::json!(["later.txt"]), "the other lane still reads");
    driver.kill().unwrap();
    driver.wait().unwrap();
}

/// A run, lane or role name that is a token is refused by `run start` and `launch` with
/// exit 2, naming the kind of secret and never the text, and nothing is journaled.
#[test]
fn names_that_are_secrets_are_refused_and_never_echoed() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let token = format!("ghp_{}", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5");
    let secret_part = &token[4..];
    let runs = [
        c.abcd(&["run", "start", &token, "--lane", "impl"]),
        c.abcd(&["run", "start", "r1", "--lane", &token]),
        c.launch(&token, "impl", "implementer", &c.receipt("a"), None, &["true"]),
        c.launch("r1", &token, "implementer", &c.receipt("b"), None, &["true"]),
        c.launch("r1", "impl", &token, &c.receipt("c"), None, &["true"]),
    ];
    for (i, out) in runs.iter().enumerate() {
        assert_eq!(out.status.code(), Some(2), "case {i}: {}", stderr(out));
        let said = format!("{}{}", stdout(out), stderr(out));
        assert!(said.contains("GitHub token"), "case {i} names the kind: {said}");
        assert!(!said.contains(secret_part), "case {i} echoes the secret: {said}");
    }
    // Verbs that look a name up say it is not there, without repeating it (found by review).
    assert!(c.abcd(&["run", "start", "r1", "--lane", "impl"]).status.success());
    let lookups: [&[&str]; 9] = [
        &["run", "takeover", &token],
        &["run", "halt", "--run", &token],
        &["run", "lift", "--run", &token],
        &["run", "finish", &token],
        &["collect", "--run", &token, "--lane", "impl"],
        &["collect", "--run", "r1", "--lane", &token],
        &["loop", "status", &token],
        &["loop", "drive", &token],
        &["loop", "stop", &token],
    ];
    for args in lookups {
        let out = c.abcd(args);
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(!said.contains(secret_part), "{args:?} echoes the secret: {said}");
    }
    let v = c.resume_json();
    assert!(!v.to_string().contains(secret_part), "nothing with the secret was recorded: {v}");
}
