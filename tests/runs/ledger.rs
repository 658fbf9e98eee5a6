//! The launch ledger end to end through the built binary (issue 7): real git repositories
//! in temp folders and real child processes (`sleep`, small `sh` scripts as fake agents).

use crate::common;

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
        cmd.args(args).current_dir(&self.root).env("ABCD_HOME", &self.home).env_remove("CLAUDE_CODE_SESSION_ID");
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

/// A run's live driver (a `sleep`), killed and reaped when the test ends, failing or not.
struct LiveDriver(std::process::Child);

impl Drop for LiveDriver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Copy {
    /// `abcd run start RUN --lane L…` driven by a fresh live process, checked to succeed.
    fn start_run(&self, run: &str, lanes: &[&str]) -> LiveDriver {
        let driver = LiveDriver(sleeper());
        let pid = driver.0.id().to_string();
        let mut args = vec!["run", "start", run];
        for lane in lanes {
            args.extend(["--lane", lane]);
        }
        args.extend(["--driver-pid", &pid]);
        let out = self.abcd(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        driver
    }
}

/// Waits until `cond` holds, at most 60 s (a bound for a stuck test, not a timing rule).
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
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
    let _driver = c.start_run("r1", &["impl"]);
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
    assert!(stderr(&refused).contains("refused [receipt-state]: launch: "), "{}", stderr(&refused));
    let collected = c.abcd(&["collect", "--run", "r1", "--lane", "impl"]);
    assert!(collected.status.success(), "{}", stderr(&collected));
    assert!(c.lane("r1", "impl")["stage"].as_str().unwrap().contains("receipt collected"));
    eventually("the exit to be recorded", || {
        std::fs::read_to_string(c.root.join(".abcd/.work.local/journal.jsonl")).unwrap().contains("launch.exited")
    });
    let next = c.launch("r1", "impl", "implementer", &c.receipt("impl-2.json"), None, &["true"]);
    assert!(next.status.success(), "after collect the lane launches again: {}", stderr(&next));
}

/// Issue 19's first acceptance item: with the settings `abcd init` wrote still untracked and
/// the person's own work uncommitted, `run start` and `launch` with every default leave the
/// checkout exactly as it was; the agent runs in a worktree abcd made and recorded.
#[test]
fn a_launch_with_defaults_leaves_the_persons_checkout_untouched_and_runs_in_its_own_worktree() {
    let lab = Lab::new();
    let root = lab.dir.path().join("mine");
    repo::create(&root, &[README, (".gitignore", "*.log\n")]);
    let c = Copy { root, home: lab.home.clone() };
    assert!(c.abcd(&["init"]).status.success());
    assert!(c.git(&["status", "--porcelain"]).contains(".claude/"), "the settings are untracked");
    std::fs::write(c.root.join("README"), "my edit\n").unwrap();
    std::fs::write(c.root.join("draft.rs"), "fn draft() {}\n").unwrap();
    std::fs::write(c.root.join("staged.rs"), "fn staged() {}\n").unwrap();
    c.git(&["add", "staged.rs"]);
    std::fs::write(c.root.join("build.log"), "ignored\n").unwrap();
    let before = repo::person_files(&c.root);
    let status_before = c.git(&["status", "--porcelain"]);

    let _driver = c.start_run("r1", &["a"]);
    let out = c.abcd(&[
        "launch",
        "--run",
        "r1",
        "--lane",
        "a",
        "--role",
        "impl",
        "--receipt",
        "R",
        "--",
        "sh",
        "-c",
        "pwd > where.txt; echo done > R",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("saved"), "nothing of the person's is saved aside: {}", stdout(&out));
    eventually("the agent to exit", || c.lane("r1", "a")["stage"].as_str().unwrap().contains("receipt waiting"));

    assert_eq!(repo::person_files(&c.root), before, "every file of the person's is unchanged");
    assert_eq!(c.git(&["status", "--porcelain"]), status_before, "and so is what git sees");
    let check = c.abcd(&["init", "--check"]);
    assert!(check.status.success(), "everything installed: {}", stdout(&check));
    let lane = c.lane("r1", "a");
    let tree = PathBuf::from(lane["worktree"].as_str().unwrap());
    assert!(tree.starts_with(&c.home), "abcd's worktree lives in its home store: {}", tree.display());
    assert_eq!(
        std::fs::read_to_string(tree.join("where.txt")).unwrap().trim(),
        tree.canonicalize().unwrap().to_str().unwrap(),
        "the agent ran there"
    );
    assert_eq!(repo::git(&tree, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "abcd/r1/a");
    let journal = std::fs::read_to_string(c.root.join(".abcd/.work.local/journal.jsonl")).unwrap();
    assert!(
        journal.find("lane.worktree_created").unwrap() < journal.find("launch.intended").unwrap(),
        "made and recorded before the launch"
    );
}

/// In its own worktree, work an agent left uncommitted is saved aside on the next launch,
/// and the worktree goes at `run finish` once clean, its branch too when it has no commit.
#[test]
fn work_left_in_the_lanes_own_worktree_is_saved_aside_and_the_worktree_goes_at_finish() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r1", &["impl", "keep", "done"]);
    let receipt = c.receipt("r.json");
    let script = format!(
        "echo changed > README; echo new > notes.txt; echo x > out.log; mkdir -p '{0}'; echo ok > '{1}'",
        receipt.parent().unwrap().display(),
        receipt.display()
    );
    assert!(c.launch("r1", "impl", "implementer", &receipt, None, &["sh", "-c", &script]).status.success());
    eventually("the receipt", || c.lane("r1", "impl")["receipt_waiting"] == true);
    let tree = PathBuf::from(c.lane("r1", "impl")["worktree"].as_str().unwrap());
    assert!(c.abcd(&["collect", "--run", "r1", "--lane", "impl"]).status.success());

    let out = c.launch("r1", "impl", "implementer", &c.receipt("r2.json"), None, &["true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let ref_name = text.split_whitespace().find(|w| w.starts_with("refs/abcd/saved/r1/impl/")).unwrap().trim_end_matches(';').to_string();
    let names = repo::git(&tree, &["diff", "--name-only", "HEAD", &ref_name]);
    assert_eq!(names.lines().collect::<Vec<_>>(), vec!["README", "notes.txt"]);
    assert_eq!(repo::git(&tree, &["status", "--porcelain"]).trim(), "", "the lane is back at its last commit");
    assert!(tree.join("out.log").exists(), "ignored files stay");
    assert_eq!(std::fs::read_to_string(c.root.join("README")).unwrap(), "hello\n", "the person's checkout is not the lane");
    eventually("the second agent to exit", || c.lane("r1", "impl")["stage"].as_str().unwrap().contains("exited"));

    // A lane whose agent committed keeps its branch; one with uncommitted work keeps its worktree.
    let keep_receipt = c.receipt("k.json");
    assert!(c.launch("r1", "keep", "implementer", &keep_receipt, None, &["sh", "-c", "echo wip > wip.txt"]).status.success());
    eventually("keep's agent to exit", || c.lane("r1", "keep")["stage"].as_str().unwrap().contains("exited"));
    let keep_tree = PathBuf::from(c.lane("r1", "keep")["worktree"].as_str().unwrap());
    let commit = "echo c > c.txt && git add c.txt && git -c user.name=A -c user.email=a@example.com commit -qm c";
    assert!(c.launch("r1", "done", "implementer", &c.receipt("d.json"), None, &["sh", "-c", commit]).status.success());
    eventually("done's agent to exit", || c.lane("r1", "done")["stage"].as_str().unwrap().contains("exited"));
    let finish = c.abcd(&["run", "finish", "r1"]);
    assert!(finish.status.success(), "{}", stderr(&finish));
    let said = stdout(&finish);
    assert!(
        said.contains("lane impl: worktree") && said.contains("removed; its branch abcd/r1/impl held no commit and was deleted"),
        "{said}"
    );
    assert!(said.contains("lane keep: worktree") && said.contains("kept: it holds uncommitted work (1 file(s))"), "{said}");
    assert!(!tree.exists(), "the clean worktree is gone");
    assert!(keep_tree.join("wip.txt").exists(), "the one with work stays");
    assert!(said.contains("lane done: worktree") && said.contains("removed; its branch abcd/r1/done keeps the lane's commits"), "{said}");
    let branches = c.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads/abcd/"]);
    assert_eq!(branches.lines().collect::<Vec<_>>(), vec!["abcd/r1/done", "abcd/r1/keep"]);
    let replay = stdout(&c.abcd(&["replay"]));
    assert!(replay.contains("worktree of r1/impl made at") && replay.contains("worktree of r1/impl at"), "{replay}");
}

/// A folder named with --cwd that abcd did not make is the person's: its uncommitted work
/// is refused (nothing recorded) unless --save-aside says so, and then saved, named and
/// reset, abcd's own files and ignored files staying.
#[test]
fn uncommitted_work_in_a_named_folder_is_saved_aside_only_when_the_person_says_so() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r1", &["impl"]);
    std::fs::write(c.root.join("README"), "changed\n").unwrap();
    std::fs::write(c.root.join("added.rs"), "fn a() {}\n").unwrap();
    c.git(&["add", "added.rs"]);
    std::fs::create_dir_all(c.root.join("src")).unwrap();
    std::fs::write(c.root.join("src/untracked.rs"), "fn u() {}\n").unwrap();
    std::fs::write(c.root.join("build.log"), "ignored\n").unwrap();
    let settings = std::fs::read(c.root.join(".claude/settings.json")).unwrap();
    std::fs::write(c.root.join(".claude/settings.json"), [settings.as_slice(), b"\n"].concat()).unwrap();
    let journal_path = c.root.join(".abcd/.work.local/journal.jsonl");
    let lines = std::fs::read_to_string(&journal_path).unwrap().lines().count();
    let listed = c.lane("r1", "impl");
    assert_eq!(listed["uncommitted"], Value::Array(vec![]), "no launch yet, so no worktree is known");

    let refused = c.launch("r1", "impl", "implementer", &c.receipt("r.json"), Some(&c.root), &["true"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("holds uncommitted work (3 file(s): README, added.rs, src/untracked.rs) and is not a worktree abcd made"),
        "{}",
        stderr(&refused)
    );
    assert!(stderr(&refused).contains("pass --save-aside"), "{}", stderr(&refused));
    assert_eq!(std::fs::read_to_string(&journal_path).unwrap().lines().count(), lines, "nothing recorded");
    assert_eq!(std::fs::read_to_string(c.root.join("README")).unwrap(), "changed\n", "nothing touched");

    let root = c.root.to_str().unwrap();
    let receipt = c.receipt("r.json");
    let out = c.abcd(&[
        "launch",
        "--run",
        "r1",
        "--lane",
        "impl",
        "--role",
        "implementer",
        "--receipt",
        receipt.to_str().unwrap(),
        "--cwd",
        root,
        "--save-aside",
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let ref_name = text.split_whitespace().find(|w| w.starts_with("refs/abcd/saved/r1/impl/")).unwrap().trim_end_matches(';').to_string();
    assert!(text.contains("Bring the work back with:"), "{text}");
    let names = c.git(&["diff", "--name-only", "HEAD", &ref_name]);
    let mut names: Vec<&str> = names.lines().collect();
    names.sort();
    assert_eq!(names, vec!["README", "added.rs", "src/untracked.rs"], "abcd's own settings are not the lane's work");
    assert_eq!(
        c.git(&["status", "--porcelain"]).trim(),
        "M .claude/settings.json",
        "the lane is back at its last commit but for abcd's own file"
    );
    assert!(c.root.join("build.log").exists(), "ignored files stay");
    let journal = std::fs::read_to_string(&journal_path).unwrap();
    // The launch holds the lane with its intent first, so no racing launch saves and
    // resets the same folder; the work is saved and recorded before the agent starts.
    let saved = journal.find("work.saved_aside").unwrap();
    let intended = journal.find("launch.intended").unwrap();
    let started = journal.find("launch.started").unwrap();
    assert!(intended < saved && saved < started, "saved aside under the launch's intent, before its start");
    assert!(!journal.contains("lane.worktree_created"), "a named folder is not made");
}

#[test]
fn a_launcher_killed_after_its_intent_leaves_a_listing_that_says_so() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r1", &["impl"]);
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
    assert!(stderr(&refused).contains("refused [run-halted]: launch: "), "{}", stderr(&refused));
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
    let _driver = c.start_run("r1", &["impl"]);
    let journal = c.root.join(".abcd/.work.local/journal.jsonl");
    let before = std::fs::read_to_string(&journal).unwrap().lines().count();
    std::fs::create_dir_all(c.root.join("a-folder")).unwrap();
    let not_git = lab.dir.path().join("plain");
    std::fs::create_dir_all(&not_git).unwrap();
    let r = c.receipt("r.json");
    let r = r.to_str().unwrap();
    let a_folder = c.root.join("a-folder");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["launch", "--run", "r1", "--lane", "impl", "--role", "implementer", "--receipt", a_folder.to_str().unwrap(), "--", "true"],
            "is a folder",
        ),
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

/// A checkout `abcd init` just made has no journal yet: the listings say there is nothing,
/// with exit 0, rather than refusing over the missing file.
#[test]
fn a_fresh_checkout_lists_no_loop_and_no_run() {
    let lab = Lab::new();
    let c = lab.copy("fresh");
    let status = c.abcd(&["loop", "status"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    assert!(stdout(&status).contains("no loop in this working copy"), "{}", stdout(&status));
    let resume = c.abcd(&["resume"]);
    assert_eq!(resume.status.code(), Some(0), "{}", stderr(&resume));
}

/// `run finish` removes a worktree abcd made only when nothing of the lane's is in it: a
/// live agent, commits on a detached HEAD, or work keep it; a relative receipt (inside the
/// worktree) and the lane's own journal folder are not work, and move to the run's folder.
#[test]
fn finish_keeps_a_worktree_with_anything_of_the_lanes_and_moves_abcds_files_out() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r1", &["live", "detached", "clean"]);
    let launch_in_own = |lane: &str, script: &str| {
        let out = c.abcd(&["launch", "--run", "r1", "--lane", lane, "--role", "agent", "--receipt", "R", "--", "sh", "-c", script]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains(&format!("(abcd's worktree for the lane, branch abcd/r1/{lane})")), "{}", stdout(&out));
        PathBuf::from(c.lane("r1", lane)["worktree"].as_str().unwrap())
    };
    let live = launch_in_own("live", "sleep 30");
    let live_agent = c.lane("r1", "live")["agent"]["pid"].as_u64().unwrap().to_string();
    let commit =
        "git checkout -q --detach && echo c > c.txt && git add c.txt && git -c user.name=A -c user.email=a@example.com commit -qm c";
    let detached = launch_in_own("detached", commit);
    let clean = launch_in_own("clean", "echo done > R");
    for lane in ["detached", "clean"] {
        eventually("the agent to exit", || {
            c.lane("r1", lane)["stage"].as_str().unwrap().contains("exited") || c.lane("r1", lane)["receipt_waiting"] == true
        });
    }
    assert_eq!(c.lane("r1", "clean")["uncommitted"], serde_json::json!([]), "a receipt is not the lane's work");
    assert!(c.abcd(&["collect", "--run", "r1", "--lane", "clean"]).status.success());
    // What a hook run in the lane would have left: its own local tier.
    std::fs::create_dir_all(clean.join(".abcd/.work.local")).unwrap();
    std::fs::write(clean.join(".abcd/.work.local/journal.jsonl"), "lane's journal\n").unwrap();

    // A run with an agent alive does not finish: it would leave `abcd resume` while the
    // agent works.
    let refused = c.abcd(&["run", "finish", "r1"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains(&format!("launch 1 of r1/live is alive (pid {live_agent}); wait for it to end")),
        "{}",
        stderr(&refused)
    );
    assert!(stderr(&refused).contains("refused [lane-busy]: run finish: "), "{}", stderr(&refused));
    assert!(c.lane("r1", "live")["agent_alive"] == true, "still listed");
    let _ = Command::new("kill").arg(&live_agent).status();
    eventually("the live agent to exit", || c.lane("r1", "live")["stage"].as_str().unwrap().contains("exited"));

    let finish = c.abcd(&["run", "finish", "r1"]);
    assert!(finish.status.success(), "{}", stderr(&finish));
    let said = stdout(&finish);
    assert!(said.contains("lane live: worktree") && said.contains("removed"), "{said}");
    assert!(
        said.contains("lane detached: worktree") && said.contains("a worktree with a detached HEAD, not on abcd/r1/detached"),
        "{said}"
    );
    assert!(said.contains("lane clean: worktree") && said.contains("abcd's files from it (its journal, receipts) are in"), "{said}");
    assert!(!live.exists() && detached.is_dir() && !clean.exists());
    let moved = c.root.join(".abcd/.work.local/runs/r1/clean.worktree");
    assert_eq!(std::fs::read_to_string(moved.join("work.local/journal.jsonl")).unwrap(), "lane's journal\n");
    assert_eq!(std::fs::read_to_string(moved.join("receipts/R")).unwrap(), "done\n");
}

/// The crash windows and leftovers around the worktree abcd makes: one made but never
/// recorded is recorded as it stands; one deleted by hand is made again on its branch;
/// anything else at its place, or a branch of its name, is refused with what to do, and a
/// file whose name is a secret is never echoed.
#[test]
fn a_lanes_worktree_is_recovered_or_refused_as_it_stands() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r1", &["a", "b", "c"]);
    let launch = |lane: &str| c.abcd(&["launch", "--run", "r1", "--lane", lane, "--role", "agent", "--receipt", "R", "--", "true"]);
    // Made (as a crashed launch would have) but not recorded.
    let out = launch("a");
    assert!(out.status.success(), "{}", stderr(&out));
    let a = PathBuf::from(c.lane("r1", "a")["worktree"].as_str().unwrap());
    let place = |lane: &str| a.parent().unwrap().join(lane);
    c.git(&["worktree", "add", "-q", "-b", "abcd/r1/b", place("b").to_str().unwrap()]);
    let out = launch("b");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(c.lane("r1", "b")["worktree"].as_str().unwrap(), place("b").to_str().unwrap());
    // Deleted by hand: made again on its branch.
    eventually("a's agent to exit", || c.lane("r1", "a")["stage"].as_str().unwrap().contains("exited"));
    std::fs::remove_dir_all(&a).unwrap();
    let out = launch("a");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(a.is_dir() && repo::git(&a, &["rev-parse", "--abbrev-ref", "HEAD"]).trim() == "abcd/r1/a");
    // Something else at the place, then a branch of the name.
    std::fs::create_dir_all(place("c")).unwrap();
    let out = launch("c");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("but what is there is a folder git does not read as a work tree"), "{}", stderr(&out));
    assert!(stderr(&out).contains("; move it away"), "{}", stderr(&out));
    std::fs::remove_dir_all(place("c")).unwrap();
    c.git(&["branch", "abcd/r1/c"]);
    let out = launch("c");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`git branch -m abcd/r1/c NEW-NAME`"), "{}", stderr(&out));
    // A --cwd folder with a file named like a token: refused without the name.
    std::fs::write(c.root.join("ghp_0123456789abcdefghijklmnopqrstuvwxyzAB.txt"), "x\n").unwrap();
    let root = c.root.to_str().unwrap();
    let out = c.abcd(&["launch", "--run", "r1", "--lane", "c", "--role", "agent", "--receipt", "R", "--cwd", root, "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("1 not shown") && !stderr(&out).contains("ghp_0123"), "{}", stderr(&out));
}

/// `abcd mode` and `abcd decide` record the host session they run in, as every verb a
/// session runs does, so the audit says on whose word the away record changed.
#[test]
fn away_changes_and_decisions_name_the_session() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let session = [("CLAUDE_CODE_SESSION_ID", "sess-decider-1")];
    let out = c.abcd_env(&["mode", "autonomous", "--until", "+2h"], &session);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = c.abcd_env(&["decide", "Use the new parser", "--grounds", "tests pass", "--undo", "git revert HEAD"], &session);
    assert!(out.status.success(), "{}", stderr(&out));
    let audit = stdout(&c.abcd(&["replay", "--repo"]));
    for kind in ["away mode set by", "decided: Use the new parser"] {
        let line = audit.lines().find(|l| l.contains(kind)).unwrap_or_else(|| panic!("{kind} in {audit}"));
        assert!(line.contains("session sess-decider-1"), "{line}");
    }
}

// ---- One agent per lane (issue 32): racing launches, lane folders, receipts, finish ----

/// Every event of `kind` in the working copy's journal, its `data`.
fn events_of(c: &Copy, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(c.root.join(".abcd/.work.local/journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"] == kind)
        .map(|e| e["data"].clone())
        .collect()
}

/// `abcd launch --run r --lane b --role agent --receipt RECEIPT -- COMMAND…`, waited for.
fn launch_b(c: &Copy, receipt: &str, command: &[&str]) -> Output {
    let mut args = vec!["launch", "--run", "r", "--lane", "b", "--role", "agent", "--receipt", receipt, "--"];
    args.extend_from_slice(command);
    c.abcd(&args)
}

/// `abcd launch --run r --lane b --role agent --receipt RECEIPT -- COMMAND…`, started (not
/// waited).
fn spawn_launch(c: &Copy, receipt: &str, command: &[&str]) -> std::process::Child {
    let mut args = vec!["launch", "--run", "r", "--lane", "b", "--role", "agent", "--receipt", receipt, "--"];
    args.extend_from_slice(command);
    Command::new(env!("CARGO_BIN_EXE_abcd"))
        .args(&args)
        .current_dir(&c.root)
        .env("ABCD_HOME", &c.home)
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// `n` launches of r/b started at once, each waited for. The receipt is one no launch
/// has written yet, so a stale receipt file does not hold the lane by accident.
fn race(c: &Copy, n: usize, receipt: &str, command: &[&str]) -> Vec<Output> {
    let children: Vec<_> = (0..n).map(|_| spawn_launch(c, receipt, command)).collect();
    children.into_iter().map(|child| child.wait_with_output().unwrap()).collect()
}

/// One launch of r/b whose agent writes its receipt and ends, collected: the lane's
/// worktree exists afterwards, so git's refusal to make it twice saves nothing by accident.
fn one_collected_launch(c: &Copy) {
    let out = launch_b(c, "R", &["sh", "-c", "echo done > R"]);
    assert!(out.status.success(), "{}", stderr(&out));
    eventually("the receipt to arrive", || c.lane("r", "b")["receipt_waiting"] == true);
    let collected = c.abcd(&["collect", "--run", "r", "--lane", "b"]);
    assert!(collected.status.success(), "{}", stderr(&collected));
}

/// Issue 32, the first reproduction: six launches of one lane at once, after one that
/// ended and was collected. Exactly one starts; every other is refused naming it; the
/// listing shows the one that runs.
#[test]
fn launches_of_one_lane_that_race_start_one_agent_and_the_others_name_it() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    one_collected_launch(&c);
    let outs = race(&c, 6, "R2", &["sleep", "15"]);
    let started = events_of(&c, "launch.started");
    let agents: Vec<&Value> = started.iter().filter(|s| s["launch"].as_u64() != Some(1)).collect();
    assert_eq!(agents.len(), 1, "one agent started: {started:?}");
    let winner = agents[0]["launch"].as_u64().unwrap();
    let pid = agents[0]["process"]["pid"].as_u64().unwrap().to_string();
    assert_eq!(outs.iter().filter(|o| o.status.success()).count(), 1, "one launch succeeded");
    for out in outs.iter().filter(|o| !o.status.success()) {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
        assert!(stderr(out).contains(&format!("launch {winner} of r/b is ")), "the refusal names the winner: {}", stderr(out));
    }
    let lane = c.lane("r", "b");
    assert_eq!((lane["launch"].as_u64(), lane["agent_alive"].as_bool()), (Some(winner), Some(true)), "{lane}");
    let _ = Command::new("kill").arg(&pid).status();
}

/// Issue 32's stress test: 8 launches of one lane at once, round after round, each round
/// after the last agent ended and its receipt was collected. Exactly one agent a round,
/// every other launch refused naming it, the listing naming the agent that started.
/// `ABCD_LANE_RACE_ROUNDS` sets the rounds (200 by default; docs/reliability.md holds a
/// 2,000-round run).
#[test]
fn eight_launches_at_once_round_after_round_start_exactly_one_agent_each() {
    let rounds: u64 = std::env::var("ABCD_LANE_RACE_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    one_collected_launch(&c);
    let mut refused = 0;
    for round in 0..rounds {
        let receipt = format!("R-{round}");
        let outs = race(&c, 8, &receipt, &["sh", "-c", &format!("echo done > {receipt}")]);
        let won: Vec<&Output> = outs.iter().filter(|o| o.status.success()).collect();
        assert_eq!(won.len(), 1, "round {round}: {:?}", outs.iter().map(stderr).collect::<Vec<_>>());
        let started = events_of(&c, "launch.started");
        assert_eq!(started.len() as u64, round + 2, "round {round}: one more agent started");
        let winner = started.last().unwrap()["launch"].as_u64().unwrap();
        for out in outs.iter().filter(|o| !o.status.success()) {
            assert_eq!(out.status.code(), Some(2), "round {round}: {}", stderr(out));
            assert!(stderr(out).contains(&format!("launch {winner} of r/b ")), "round {round}: {}", stderr(out));
            refused += 1;
        }
        let lane = c.lane("r", "b");
        assert_eq!(lane["launch"].as_u64(), Some(winner), "round {round}: the listing names the agent that started: {lane}");
        assert!(lane["agent"]["pid"].is_u64(), "round {round}: {lane}");
        eventually("the receipt to arrive", || c.lane("r", "b")["receipt_waiting"] == true);
        let collected = c.abcd(&["collect", "--run", "r", "--lane", "b"]);
        assert!(collected.status.success(), "round {round}: {}", stderr(&collected));
        eventually("the exit to be recorded", || events_of(&c, "launch.exited").len() as u64 == round + 2);
    }
    assert_eq!(refused, rounds * 7);
    eprintln!("{rounds} rounds of 8 racing launches: {rounds} agents started, {refused} launches refused");
}

/// The shapes a lane folder can be found in (issue 32, acceptance 3). Each gets the
/// person's uncommitted work where the folder leads; `abcd run save-aside`, `abcd resume
/// --step` and `abcd launch` then run. Only the lane's own worktree is ever saved aside,
/// reset or launched into; every other shape is refused naming what is there, and the
/// person's files stay as they were.
#[test]
fn only_the_lanes_own_worktree_is_saved_aside_reset_or_launched_into() {
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Shape {
        LinkToCheckout,
        LinkToAnotherWorktree,
        WorktreeOfAnotherBranch,
        PlainFolder,
        LaneNamedFolderElsewhere,
        TheLanesOwn,
    }
    for shape in [
        Shape::LinkToCheckout,
        Shape::LinkToAnotherWorktree,
        Shape::WorktreeOfAnotherBranch,
        Shape::PlainFolder,
        Shape::LaneNamedFolderElsewhere,
        Shape::TheLanesOwn,
    ] {
        let lab = Lab::new();
        let c = lab.copy("wc");
        let _driver = c.start_run("r", &["b"]);
        one_collected_launch(&c);
        let place = PathBuf::from(c.lane("r", "b")["worktree"].as_str().unwrap());
        let forget = |c: &Copy| {
            std::fs::remove_dir_all(&place).unwrap();
            c.git(&["worktree", "prune"]);
        };
        let person_work = |dir: &Path| {
            std::fs::write(dir.join("README"), "the person's edit\n").unwrap();
            std::fs::write(dir.join("mine.txt"), "the person's own\n").unwrap();
        };
        // Where the person's files are, whatever the shape does to the lane's place.
        let watched: PathBuf = match shape {
            Shape::LinkToCheckout => {
                forget(&c);
                std::os::unix::fs::symlink(&c.root, &place).unwrap();
                c.root.clone()
            }
            Shape::LinkToAnotherWorktree => {
                let other = lab.dir.path().join("feature-tree");
                c.git(&["worktree", "add", "-q", "-b", "feature", other.to_str().unwrap()]);
                forget(&c);
                std::os::unix::fs::symlink(&other, &place).unwrap();
                other
            }
            Shape::WorktreeOfAnotherBranch => {
                forget(&c);
                c.git(&["worktree", "add", "-q", "-b", "feature", place.to_str().unwrap()]);
                place.clone()
            }
            Shape::PlainFolder => {
                forget(&c);
                std::fs::create_dir_all(&place).unwrap();
                std::fs::write(place.join("README"), "hello\n").unwrap();
                place.clone()
            }
            Shape::LaneNamedFolderElsewhere => {
                // The run's folder moved elsewhere and linked back: the lane-named folder
                // is a real worktree on the lane's branch, but not at the lane's place.
                let run_dir = place.parent().unwrap().to_path_buf();
                let elsewhere = lab.dir.path().join("elsewhere");
                std::fs::create_dir_all(&elsewhere).unwrap();
                std::fs::rename(&run_dir, elsewhere.join("r")).unwrap();
                std::os::unix::fs::symlink(elsewhere.join("r"), &run_dir).unwrap();
                c.git(&["worktree", "repair", elsewhere.join("r/b").to_str().unwrap()]);
                elsewhere.join("r/b")
            }
            Shape::TheLanesOwn => place.clone(),
        };
        person_work(&watched);
        let before = repo::person_files(&watched);
        let saved_before = events_of(&c, "work.saved_aside").len();
        let started_before = events_of(&c, "launch.started").len();

        let save = c.abcd(&["run", "save-aside", "--run", "r", "--lane", "b"]);
        let step = c.abcd(&["resume", "--step"]);
        assert!(step.status.success(), "{shape:?}: {}", stderr(&step));
        if shape == Shape::TheLanesOwn {
            assert!(save.status.success(), "{shape:?}: {}", stderr(&save));
            assert!(stdout(&save).contains("saved 2 uncommitted file(s) of r/b"), "{shape:?}: {}", stdout(&save));
            assert_eq!(events_of(&c, "work.saved_aside").len(), saved_before + 1);
            person_work(&watched);
        } else {
            assert_eq!(save.status.code(), Some(2), "{shape:?}: {}", stderr(&save));
            assert!(stderr(&save).contains("but what is there is "), "{shape:?}: {}", stderr(&save));
            assert_eq!(events_of(&c, "work.saved_aside").len(), saved_before, "{shape:?}: nothing saved");
            assert_eq!(repo::person_files(&watched), before, "{shape:?}: nothing of the person's changed");
        }
        let launch = launch_b(&c, "R", &["sh", "-c", "echo hi > launched.txt"]);
        if shape == Shape::TheLanesOwn {
            assert!(launch.status.success(), "{shape:?}: {}", stderr(&launch));
            assert!(stdout(&launch).contains("saved 2 uncommitted file(s)"), "{shape:?}: {}", stdout(&launch));
            assert_eq!(events_of(&c, "launch.started").len(), started_before + 1);
        } else {
            assert_eq!(launch.status.code(), Some(2), "{shape:?}: {}", stderr(&launch));
            assert!(stderr(&launch).contains("but what is there is "), "{shape:?}: {}", stderr(&launch));
            assert_eq!(repo::person_files(&watched), before, "{shape:?}: nothing of the person's changed");
            assert_eq!(events_of(&c, "work.saved_aside").len(), saved_before, "{shape:?}: nothing saved");
            assert_eq!(events_of(&c, "launch.started").len(), started_before, "{shape:?}: nothing started");
            assert!(!watched.join("launched.txt").exists(), "{shape:?}");
        }
    }
}

/// A receipt over the collect's read bound is collected all the same, its record saying
/// how much of it the digest covers; one at the bound is collected whole. `launch`,
/// `collect` and `resume` judge a receipt's path alike: something not a file there is
/// named by all three with the same way out.
#[test]
fn every_receipt_has_a_way_out_judged_alike_by_launch_collect_and_resume() {
    const BOUND: u64 = 64 << 20;
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    for (size, over) in [(BOUND, false), (BOUND + 1, true)] {
        let out = launch_b(&c, "R", &["true"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let tree = PathBuf::from(c.lane("r", "b")["worktree"].as_str().unwrap());
        eventually("the agent to exit", || c.lane("r", "b")["stage"].as_str().unwrap().contains("exited"));
        std::fs::File::create(tree.join("R")).unwrap().set_len(size).unwrap();
        let refused = launch_b(&c, "R", &["true"]);
        assert_eq!(refused.status.code(), Some(2));
        assert!(stderr(&refused).contains("collect it first"), "{}", stderr(&refused));
        let collected = c.abcd(&["collect", "--run", "r", "--lane", "b", "--json"]);
        assert!(collected.status.success(), "{size}: {}", stderr(&collected));
        let record = events_of(&c, "receipt.collected").last().unwrap().clone();
        assert_eq!(record["bytes"].as_u64(), Some(size));
        assert_eq!(record["hashed_bytes"].as_u64(), over.then_some(BOUND), "{record}");
        std::fs::remove_file(tree.join("R")).unwrap();
    }
    // A folder where the receipt belongs.
    let out = launch_b(&c, "R", &["mkdir", "R"]);
    assert!(out.status.success(), "{}", stderr(&out));
    eventually("the agent to exit", || c.lane("r", "b")["stage"].as_str().unwrap().contains("there is a folder"));
    let words = "there is a folder, not a receipt; move it away";
    let launch = launch_b(&c, "R", &["true"]);
    let collect = c.abcd(&["collect", "--run", "r", "--lane", "b"]);
    assert_eq!((launch.status.code(), collect.status.code()), (Some(2), Some(2)));
    assert!(stderr(&launch).contains(words) && stderr(&collect).contains(words), "{}\n{}", stderr(&launch), stderr(&collect));
    let tree = PathBuf::from(c.lane("r", "b")["worktree"].as_str().unwrap());
    std::fs::remove_dir(tree.join("R")).unwrap();
    let again = launch_b(&c, "R", &["true"]);
    assert!(again.status.success(), "moved away, the lane launches: {}", stderr(&again));
}

/// `run finish` refuses while a receipt waits, naming `abcd collect`; a finished run's
/// worktree kept for its uncommitted work is saved aside by `abcd run save-aside`, after
/// which the finish removes it.
#[test]
fn a_run_finishes_only_when_no_lane_is_held_and_its_kept_work_can_still_be_saved() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let out = launch_b(&c, "R", &["sh", "-c", "echo work > new.txt; echo done > R"]);
    assert!(out.status.success(), "{}", stderr(&out));
    eventually("the receipt to arrive", || c.lane("r", "b")["receipt_waiting"] == true);
    let refused = c.abcd(&["run", "finish", "r"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("collect it with `abcd collect --run r --lane b`"), "{}", stderr(&refused));
    assert!(events_of(&c, "run.finished").is_empty());
    assert!(c.abcd(&["collect", "--run", "r", "--lane", "b"]).status.success());
    let finish = c.abcd(&["run", "finish", "r"]);
    assert!(finish.status.success(), "{}", stderr(&finish));
    assert!(stdout(&finish).contains("`abcd run save-aside --run r --lane b`"), "{}", stdout(&finish));
    assert!(c.resume_json()["runs"].as_array().unwrap().is_empty(), "the finished run is not listed");
    let saved = c.abcd(&["run", "save-aside", "--run", "r", "--lane", "b"]);
    assert!(saved.status.success(), "{}", stderr(&saved));
    let ref_name = events_of(&c, "work.saved_aside")[0]["ref_name"].as_str().unwrap().to_string();
    assert_eq!(c.git(&["show", &format!("{ref_name}:new.txt")]), "work\n");
    let again = c.abcd(&["run", "finish", "r"]);
    assert!(again.status.success() && stdout(&again).contains("removed"), "{}", stdout(&again));
}
