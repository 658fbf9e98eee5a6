//! Adversarial review of issue 32 (one agent per lane; a lane folder is the lane's or
//! nothing; receipts judged alike). Each test is one attack: those that hold guard the
//! rule; those that fail are findings, their doc comment saying what should happen.
//! Concurrent actors are placed at an exact moment with a `git` on PATH that passes every
//! call to the real git, and acts once (swaps a folder, or waits for the test's word)
//! before a chosen call.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::repo::{self, README};
use serde_json::Value;

struct Lab {
    dir: tempfile::TempDir,
    home: PathBuf,
}

struct Copy {
    root: PathBuf,
    home: PathBuf,
    /// More environment for every abcd this copy runs (PATH with the fake git, say).
    env: Vec<(String, String)>,
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
        let c = Copy { root, home: self.home.clone(), env: vec![] };
        assert!(c.abcd(&["init"]).status.success());
        c.git(&["add", ".claude"]);
        c.git(&["commit", "-q", "-m", "abcd hooks"]);
        c
    }
}

impl Copy {
    fn git(&self, args: &[&str]) -> String {
        repo::git(&self.root, args)
    }

    fn cmd(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
        cmd.args(args).current_dir(&self.root).env("ABCD_HOME", &self.home).env_remove("CLAUDE_CODE_SESSION_ID");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    fn abcd(&self, args: &[&str]) -> Output {
        self.abcd_env(args, &[])
    }

    fn abcd_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.cmd(args, env).output().unwrap()
    }

    fn launch_b(&self, receipt: &str, command: &[&str]) -> Output {
        self.abcd(&launch_args(receipt, command))
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

    fn journal(&self) -> PathBuf {
        self.root.join(".abcd/.work.local/journal.jsonl")
    }

    fn events_of(&self, kind: &str) -> Vec<Value> {
        std::fs::read_to_string(self.journal())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["kind"] == kind)
            .map(|e| e["data"].clone())
            .collect()
    }

    fn start_run(&self, run: &str, lanes: &[&str]) -> Killed {
        let driver = Killed(Command::new("sleep").arg("120").spawn().unwrap());
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

    /// One launch of r/b whose agent writes its receipt and ends, collected: the lane's
    /// worktree exists afterwards. Its path.
    fn one_collected_launch(&self) -> PathBuf {
        let out = self.launch_b("R", &["sh", "-c", "echo done > R"]);
        assert!(out.status.success(), "{}", stderr(&out));
        eventually("the receipt to arrive", || self.lane("r", "b")["receipt_waiting"] == true);
        let collected = self.abcd(&["collect", "--run", "r", "--lane", "b"]);
        assert!(collected.status.success(), "{}", stderr(&collected));
        eventually("the exit to be recorded", || !self.events_of("launch.exited").is_empty());
        PathBuf::from(self.lane("r", "b")["worktree"].as_str().unwrap())
    }
}

fn launch_args<'a>(receipt: &'a str, command: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["launch", "--run", "r", "--lane", "b", "--role", "agent", "--receipt", receipt, "--"];
    args.extend_from_slice(command);
    args
}

/// A child killed and reaped when the test ends, failing or not.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Kills a pid when the test ends (an agent abcd started).
struct KillPid(Option<u64>);

impl Drop for KillPid {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn real_git() -> String {
    let out = Command::new("sh").args(["-c", "command -v git"]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A folder holding a `git` that runs `before` (sh) and then the real git; PATH with it first.
fn fake_git(dir: &Path, before: &str) -> String {
    let bin = dir.join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!("#!/bin/sh\n{before}\nexec '{}' \"$@\"\n", real_git());
    let path = bin.join("git");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

// ---- Lane folders: checked, then swapped ----

/// ATTACK (FINDING): the lane's folder is checked by `verify_own_worktree` in
/// `lane::own_worktree`, before the launch takes the lane; the save aside, the reset and the
/// agent's start come after the intent, through the same path. A folder swapped for a link
/// to the person's checkout in that window (here: just as the first git call after the
/// intent runs, as another process renaming folders would) leads the save, the reset and
/// the agent into the person's checkout. What should happen: once the lane is held, the
/// folder is checked again and used by what was checked (its canonical path, its identity
/// unchanged), so a swap is refused and the person's files stay as they were.
#[test]
fn a_lane_folder_swapped_for_a_link_after_its_check_never_resets_the_persons_checkout() {
    let lab = Lab::new();
    let mut c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let place = c.one_collected_launch();
    // The lane has work, so the winning launch saves aside and resets.
    std::fs::write(place.join("README"), "the lane's work\n").unwrap();
    // The person's own uncommitted work in their checkout.
    std::fs::write(c.root.join("README"), "the person's edit\n").unwrap();
    std::fs::write(c.root.join("mine.txt"), "the person's own\n").unwrap();
    let before = repo::person_files(&c.root);
    let mark = lab.dir.path().join("swapped");
    let swap = format!(
        "if [ ! -e '{mark}' ] && [ \"$(grep -c '\"launch.intended\"' '{journal}')\" -ge 2 ]; then\n  touch '{mark}'\n  mv '{place}' '{place}.moved'\n  ln -s '{root}' '{place}'\n  cd '{place}' || exit 1\nfi",
        mark = mark.display(),
        journal = c.journal().display(),
        place = place.display(),
        root = c.root.display()
    );
    c.env = vec![("PATH".into(), fake_git(lab.dir.path(), &swap))];
    let out = c.launch_b("R2", &["sh", "-c", "echo agent > launched.txt"]);
    assert!(mark.exists(), "the swap happened after the intent: {}", stderr(&out));
    std::thread::sleep(Duration::from_millis(500));
    assert!(!c.root.join("launched.txt").exists(), "no agent ran in the person's checkout: {}{}", stdout(&out), stderr(&out));
    assert_eq!(repo::person_files(&c.root), before, "the person's checkout was saved aside and reset: {}{}", stdout(&out), stderr(&out));
}

/// ATTACK (FINDING): `abcd run save-aside` judges the lane free (no agent alive or
/// starting) from a state read outside the writer lock, and holds nothing while it saves
/// and resets. A launch of the lane in that time wins the lane, saves the same work aside
/// itself, and starts its agent; then save-aside's reset (`checkout HEAD -- <files>`) runs
/// under the live agent and undoes its edit. What should happen: save-aside holds the lane
/// while it saves and resets (decided and recorded under the lock, as a launch's intent
/// is), so the launch is refused naming it, or save-aside re-judges under the lock and
/// stops; an agent's work is never reset under it.
#[test]
fn run_save_aside_racing_a_launch_never_resets_under_a_live_agent() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let place = c.one_collected_launch();
    std::fs::write(place.join("README"), "the lane's work\n").unwrap();
    let go = lab.dir.path().join("go");
    let held = lab.dir.path().join("held");
    // Waits for the test's word at save-aside's reset (its `ls-tree --name-only HEAD`).
    let hold = format!(
        "case \" $* \" in *' ls-tree '*'--name-only'*) touch '{held}'; while [ ! -e '{go}' ]; do sleep 0.05; done;; esac",
        held = held.display(),
        go = go.display()
    );
    let path = fake_git(lab.dir.path(), &hold);
    let save = c
        .cmd(&["run", "save-aside", "--run", "r", "--lane", "b"], &[("PATH", &path)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually("save-aside to reach its reset", || held.exists());
    let launch = c.launch_b("R2", &["sh", "-c", "echo 'the agent edit' > README; sleep 30"]);
    let mut agent = KillPid(None);
    if launch.status.success() {
        agent.0 = c.lane("r", "b")["agent"]["pid"].as_u64();
        eventually("the agent to edit", || std::fs::read_to_string(place.join("README")).unwrap_or_default() == "the agent edit\n");
    }
    std::fs::write(&go, "").unwrap();
    let saved = save.wait_with_output().unwrap();
    if launch.status.success() {
        assert_eq!(
            std::fs::read_to_string(place.join("README")).unwrap(),
            "the agent edit\n",
            "save-aside reset the lane under the live agent (launch said: {}; save-aside said: {}{})",
            stdout(&launch),
            stdout(&saved),
            stderr(&saved)
        );
    }
    drop(agent);
}

/// A token of GitHub's shape, made here (never a real one).
const TOKEN: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";

/// ATTACK (FINDING): a link at the lane's place whose target text is a secret (a link's
/// target need not exist: any process that can write the lanes folder can plant one). The
/// new refusals name "a symbolic link at … to <target>", and `<target>` is printed as it
/// is, by `launch`, `run save-aside` and `run finish`. What should happen: a refusal never
/// echoes a secret (the branch name in the same test goes through `shown_name`; the link's
/// target, and every other path a refusal names, should too).
#[test]
fn a_link_at_the_lane_place_whose_target_is_a_secret_is_never_echoed() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let place = c.one_collected_launch();
    std::fs::remove_dir_all(&place).unwrap();
    c.git(&["worktree", "prune"]);
    std::os::unix::fs::symlink(format!("/tmp/{TOKEN}"), &place).unwrap();
    for args in [launch_args("R2", &["true"]), vec!["run", "save-aside", "--run", "r", "--lane", "b"]] {
        let out = c.abcd(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("symbolic link"), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("ghp_0123"), "{args:?}: a secret echoed: {}", stderr(&out));
    }
    let finish = c.abcd(&["run", "finish", "r"]);
    let said = format!("{}{}", stdout(&finish), stderr(&finish));
    assert!(!said.contains("ghp_0123"), "run finish: a secret echoed: {said}");
}

/// ATTACK (held, guards): the home store reached through a symbolic link (ABCD_HOME a link
/// to the real folder, as a home on a linked volume is) is a legitimate set-up: the lane's
/// worktree passes its test there, launches, and its work is saved aside and reset.
#[test]
fn a_home_store_reached_through_a_link_still_launches_and_saves_aside() {
    let lab = Lab::new();
    let real = lab.dir.path().join("home-real");
    std::fs::create_dir_all(&real).unwrap();
    std::os::unix::fs::symlink(&real, &lab.home).unwrap();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let place = c.one_collected_launch();
    std::fs::write(place.join("README"), "the lane's work\n").unwrap();
    let saved = c.abcd(&["run", "save-aside", "--run", "r", "--lane", "b"]);
    assert!(saved.status.success(), "{}", stderr(&saved));
    std::fs::write(place.join("README"), "more of the lane's work\n").unwrap();
    let out = c.launch_b("R2", &["sh", "-c", "echo done > R2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("saved 1 uncommitted file(s)"), "{}", stdout(&out));
}

/// ATTACK (FINDING): the same home store named two ways (ABCD_HOME once through a link,
/// once by its real path, as a shell with HOME=/home/pat and a job with its resolved path
/// do). The lane's worktree is recorded under the first spelling; under the second,
/// `verify_own_worktree` compares the recorded path with the lane's place as text, calls
/// the lane's own worktree "a worktree the journal records at …, not at the lane's own
/// place", and no verb gets past it: moving the folder away does not help (the recorded
/// path still differs), and `run finish` keeps it. What should happen: the lane's place is
/// compared after resolving the home store's own path (links above the lanes folder are
/// the person's set-up; only those from the lanes folder down are refused), so the lane
/// launches under either spelling.
#[test]
fn the_same_home_store_named_through_a_link_and_by_its_path_keeps_its_lanes() {
    let lab = Lab::new();
    let real = lab.dir.path().join("home-real");
    std::fs::create_dir_all(&real).unwrap();
    std::os::unix::fs::symlink(&real, &lab.home).unwrap();
    let mut c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    c.one_collected_launch();
    c.home = real.clone();
    let out = c.launch_b("R2", &["sh", "-c", "echo done > R2"]);
    assert!(out.status.success(), "the lane's own worktree, its home named by its real path: {}", stderr(&out));
}

/// ATTACK (FINDING): the lane's place is a copy of the lane's worktree (its `.git`
/// file, its files), while git's own record of that worktree names another folder (the
/// original, moved with `git worktree move`, where the person keeps staged work in the
/// index the two share). The rule asks for "git's own worktree record for it"; a save
/// aside and reset in the copy would rewrite the shared index under the person's folder.
/// `verify_own_worktree` asks git only what the folder reads as (linked, same common
/// folder, HEAD on the lane's branch), which a copy answers like the original: the save
/// and reset run, and the moved worktree's staged file is unstaged. What should happen:
/// refused (git's record, `<gitdir>/gitdir`, must name this very folder), the moved
/// worktree's index untouched.
#[test]
fn a_copy_of_the_lanes_worktree_at_its_place_is_not_the_lane() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let place = c.one_collected_launch();
    let moved = lab.dir.path().join("moved-lane");
    c.git(&["worktree", "move", place.to_str().unwrap(), moved.to_str().unwrap()]);
    // The person's staged work in the moved worktree.
    std::fs::write(moved.join("staged.txt"), "staged by the person\n").unwrap();
    repo::git(&moved, &["add", "staged.txt"]);
    // A copy of it at the lane's place, with the lane's work in it.
    let cp = Command::new("cp").args(["-a", moved.to_str().unwrap(), place.to_str().unwrap()]).status().unwrap();
    assert!(cp.success());
    std::fs::write(place.join("README"), "work in the copy\n").unwrap();
    let save = c.abcd(&["run", "save-aside", "--run", "r", "--lane", "b"]);
    let staged = repo::git(&moved, &["diff", "--cached", "--name-only"]);
    assert_eq!(
        staged.trim(),
        "staged.txt",
        "the moved worktree's staged work was unstaged by a reset in a copy: {}{}",
        stdout(&save),
        stderr(&save)
    );
    assert_eq!(save.status.code(), Some(2), "a copy is not git's worktree of the lane: {}", stdout(&save));
}

// ---- Launchers: zombies, reused pids, journals from before the launcher ----

/// The state letter of a pid's /proc stat.
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next())
}

/// ATTACK (held, guards): a launcher killed right after its intent and never reaped by its
/// parent (a zombie: its pid and start time still in /proc) does not hold the lane as
/// "starting": the next launch records it `not_started` and starts.
#[test]
fn a_zombie_launcher_does_not_hold_its_lane() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    c.one_collected_launch();
    let mut zombie = c
        .cmd(&launch_args("R2", &["true"]), &[("ABCD_TEST_KILL_AFTER_INTENT", "1")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = zombie.id();
    eventually("the launcher to be a zombie", || proc_state(pid) == Some('Z'));
    assert_eq!(c.events_of("launch.intended").len(), 2);
    let out = c.launch_b("R3", &["sh", "-c", "echo done > R3"]);
    let _ = zombie.wait();
    assert!(out.status.success(), "a dead launcher's intent is not a start: {}", stderr(&out));
    let settled: Vec<u64> =
        c.events_of("launch.exited").iter().filter(|e| e["status"]["kind"] == "not_started").filter_map(|e| e["launch"].as_u64()).collect();
    assert_eq!(settled, vec![2], "launch 2 recorded not_started");
}

/// Appends one event through abcd's own journal API, as an older abcd would have.
fn append_raw(c: &Copy, kind: &str, data: Value) {
    use abcd::journal::anchor::AnchorStore;
    use abcd::journal::storage::RealDisk;
    use abcd::journal::{Actor, Journal, JournalPaths, NewEvent};
    let journal = Journal::new(RealDisk::shared(), JournalPaths::beside(&c.journal()), Some(AnchorStore::new(&c.home)));
    let scope = abcd::event::Scope::WorkingCopy { root: c.root.display().to_string() };
    journal.append_batch(&[NewEvent { kind: kind.into(), actor: Actor::this_process(None), data }], Some(&scope)).unwrap();
}

/// ATTACK (held, guards): a journal written before the launcher was recorded holds a
/// pending launch (intended, neither started nor ended, no `launcher`); a launch whose
/// launcher is recorded with a live pid but another start time (a reused pid). Neither
/// holds the lane; the next launch records both `not_started` in its locked step, and the
/// listing does not call either starting.
#[test]
fn pending_launches_without_a_launcher_or_with_a_reused_pid_are_settled_by_the_next_launch() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let place = c.one_collected_launch();
    let intent = |launch: u64| {
        serde_json::json!({"run": "r", "lane": "b", "launch": launch, "role": "agent", "command": ["true"],
            "receipt": place.join(format!("R{launch}")).display().to_string(), "worktree": place.display().to_string()})
    };
    append_raw(&c, "launch.intended", intent(2));
    let stranger = Killed(Command::new("sleep").arg("60").spawn().unwrap());
    let mut reused = intent(3);
    reused["launcher"] = serde_json::json!({"pid": stranger.0.id(), "start_ticks": 1});
    append_raw(&c, "launch.intended", reused);
    let stage = c.lane("r", "b")["stage"].as_str().unwrap().to_string();
    assert!(!stage.contains("is starting") && !stage.contains(": starting"), "{stage}");
    let out = c.launch_b("R4", &["sh", "-c", "echo done > R4"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut settled: Vec<u64> =
        c.events_of("launch.exited").iter().filter(|e| e["status"]["kind"] == "not_started").filter_map(|e| e["launch"].as_u64()).collect();
    settled.sort();
    assert_eq!(settled, vec![2, 3]);
}

// ---- Receipts that are not files ----

/// `abcd ARGS` that must end within `secs`; its output, or a failure naming the hang.
fn within(c: &Copy, args: &[&str], secs: u64) -> Output {
    let mut child = c.cmd(args, &[]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("abcd {args:?} hung for {secs} s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// ATTACK (held, guards): the lane's receipt is a link to /dev/zero (endless bytes), a
/// named pipe with no writer (an open for reading would block), and a link to a pipe.
/// `collect`, `launch`, `resume` and `run finish` each end at once, refuse alike ("there is
/// …, not a receipt; move it away"), and nothing is collected.
#[test]
fn receipts_that_are_links_to_dev_zero_or_pipes_never_hang_a_verb() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let place = c.one_collected_launch();
    let out = c.launch_b("R2", &["true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    eventually("the agent to exit", || c.lane("r", "b")["stage"].as_str().unwrap().contains("exited"));
    let receipt = place.join("R2");
    let pipe = lab.dir.path().join("pipe");
    assert!(Command::new("mkfifo").arg(&pipe).status().unwrap().success());
    type Make<'a> = Box<dyn Fn() + 'a>;
    let shapes: [(&str, Make); 3] = [
        ("a character device", Box::new(|| std::os::unix::fs::symlink("/dev/zero", &receipt).unwrap())),
        ("a FIFO (named pipe)", Box::new(|| assert!(Command::new("mkfifo").arg(&receipt).status().unwrap().success()))),
        ("a FIFO (named pipe)", Box::new(|| std::os::unix::fs::symlink(&pipe, &receipt).unwrap())),
    ];
    for (what, make) in shapes {
        make();
        let words = format!("there is {what}, not a receipt: move it away");
        for args in [&["collect", "--run", "r", "--lane", "b"][..], &launch_args("R3", &["true"]), &["run", "finish", "r"]] {
            let out = within(&c, args, 20);
            assert_eq!(out.status.code(), Some(2), "{what}: {args:?}: {}", stderr(&out));
            assert!(stderr(&out).contains(&format!("there is {what}")), "{what}: {args:?}: {}", stderr(&out));
        }
        let listing = within(&c, &["resume"], 20);
        assert!(stdout(&listing).contains(&words), "{what}: {}", stdout(&listing));
        assert!(c.events_of("receipt.collected").len() == 1, "{what}: nothing collected");
        std::fs::remove_file(&receipt).unwrap();
    }
}

// ---- Finished runs ----

/// ATTACK (held, guards): `resume --step` after the run is finished with a kept worktree
/// holding work: the finished run is out of the listing, so `--step` saves and resets
/// nothing of it; `run save-aside` still can, and a launch into the finished run is refused.
#[test]
fn resume_step_leaves_a_finished_runs_kept_worktree_alone() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let place = c.one_collected_launch();
    std::fs::write(place.join("kept.txt"), "kept work\n").unwrap();
    let finish = c.abcd(&["run", "finish", "r"]);
    assert!(finish.status.success(), "{}", stderr(&finish));
    let step = c.abcd(&["resume", "--step"]);
    assert!(step.status.success(), "{}", stderr(&step));
    assert!(c.events_of("work.saved_aside").is_empty(), "{}", stdout(&step));
    assert_eq!(std::fs::read_to_string(place.join("kept.txt")).unwrap(), "kept work\n");
    let launch = c.launch_b("R2", &["true"]);
    assert_eq!(launch.status.code(), Some(2), "{}", stderr(&launch));
    assert!(c.abcd(&["run", "save-aside", "--run", "r", "--lane", "b"]).status.success());
    assert!(!place.join("kept.txt").exists());
}

/// ATTACK (FINDING): `abcd resume --step` judges the lane free (`agent_alive`, `starting`)
/// outside the writer lock and holds nothing while it saves and resets, like `run
/// save-aside`: a launch that wins the lane meanwhile starts its agent, and the step's
/// reset undoes the agent's edit under it. What should happen: the step's save aside holds
/// the lane (or re-judges under the lock), so no agent's work is reset while it lives.
#[test]
fn resume_step_racing_a_launch_never_resets_under_a_live_agent() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let place = c.one_collected_launch();
    std::fs::write(place.join("README"), "the lane's work\n").unwrap();
    let go = lab.dir.path().join("go");
    let held = lab.dir.path().join("held");
    let hold = format!(
        "case \" $* \" in *' ls-tree '*'--name-only'*) touch '{held}'; while [ ! -e '{go}' ]; do sleep 0.05; done;; esac",
        held = held.display(),
        go = go.display()
    );
    let path = fake_git(lab.dir.path(), &hold);
    let step = c.cmd(&["resume", "--step"], &[("PATH", &path)]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    eventually("the step to reach its reset", || held.exists());
    let launch = c.launch_b("R2", &["sh", "-c", "echo 'the agent edit' > README; sleep 30"]);
    let mut agent = KillPid(None);
    if launch.status.success() {
        agent.0 = c.lane("r", "b")["agent"]["pid"].as_u64();
        eventually("the agent to edit", || std::fs::read_to_string(place.join("README")).unwrap_or_default() == "the agent edit\n");
    }
    std::fs::write(&go, "").unwrap();
    let stepped = step.wait_with_output().unwrap();
    if launch.status.success() {
        assert_eq!(
            std::fs::read_to_string(place.join("README")).unwrap(),
            "the agent edit\n",
            "resume --step reset the lane under the live agent (step said: {}{})",
            stdout(&stepped),
            stderr(&stepped)
        );
    }
    drop(agent);
}

/// `n` launches of r/b at once, each waited for.
fn race(c: &Copy, n: usize, receipt: &str, command: &[&str]) -> Vec<Output> {
    let children: Vec<_> =
        (0..n).map(|_| c.cmd(&launch_args(receipt, command), &[]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()).collect();
    children.into_iter().map(|child| child.wait_with_output().unwrap()).collect()
}

/// Exactly one of `outs` started an agent; every other was refused (exit 2) naming the
/// launch that won, and none was told to rename a branch. The winner's agent pid.
fn one_winner(c: &Copy, outs: &[Output], shape: &str) -> Option<u64> {
    let won = outs.iter().filter(|o| o.status.success()).count();
    let all: Vec<String> = outs.iter().map(|o| format!("{}{}", stdout(o), stderr(o))).collect();
    assert_eq!(won, 1, "{shape}: {all:#?}");
    let winner = c.events_of("launch.started").last().unwrap()["launch"].as_u64().unwrap();
    let pid = c.events_of("launch.started").last().unwrap()["process"]["pid"].as_u64();
    for out in outs.iter().filter(|o| !o.status.success()) {
        assert_eq!(out.status.code(), Some(2), "{shape}: {}", stderr(out));
        assert!(!stderr(out).contains("git branch -m"), "{shape}: a loser told to rename the winner's branch: {}", stderr(out));
        assert!(stderr(out).contains(&format!("launch {winner} of r/b ")), "{shape}: the refusal names the winner: {}", stderr(out));
    }
    pid
}

fn racing_to_make_the_worktree(shape: &str) {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    if shape == "worktree deleted" {
        let place = c.one_collected_launch();
        std::fs::remove_dir_all(&place).unwrap();
    }
    let outs = race(&c, 6, "R9", &["sleep", "15"]);
    let _agent = KillPid(one_winner(&c, &outs, shape));
}

/// ATTACK (FINDING): the run's very first launches, racing: no worktree is made yet. The
/// first look passes for all before any holds the lane, so all race to `git worktree add
/// -b`, and the losers are told "keep its commits under another name (`git branch -m
/// abcd/r/b NEW-NAME`)": the issue's own reproduction, still there for a lane's first
/// launch. What should happen: the loser is refused naming the launch that won (the
/// worktree is made under the lane's hold, or a failed add re-judges the lane under the
/// lock before it words its refusal).
#[test]
fn first_launches_racing_to_make_the_lanes_worktree_start_one_and_name_it() {
    racing_to_make_the_worktree("first launch");
}

/// ATTACK: as above, for a lane whose worktree the person deleted (abcd makes it again on
/// the lane's branch): one starts, each other is refused naming it.
#[test]
fn launches_racing_to_remake_a_deleted_lane_worktree_start_one_and_name_it() {
    racing_to_make_the_worktree("worktree deleted");
}

/// ATTACK (held, guards): `run finish` racing a launch whose launcher was killed just after
/// starting its watcher: whichever comes first, no agent of the run starts after its
/// `run.finished`, and a finish that went through recorded the pending launch
/// `not_started` in the same step.
#[test]
fn run_finish_racing_an_orphaned_watcher_never_leaves_an_agent_of_a_finished_run() {
    for _ in 0..5 {
        let lab = Lab::new();
        let c = lab.copy("wc");
        let _driver = c.start_run("r", &["b"]);
        c.one_collected_launch();
        let out = c.abcd_env(&launch_args("R2", &["sleep", "20"]), &[("ABCD_TEST_KILL_AFTER_WATCHER", "1")]);
        assert!(!out.status.success());
        let finish = c.abcd(&["run", "finish", "r"]);
        std::thread::sleep(Duration::from_millis(1500));
        let lines: Vec<Value> =
            std::fs::read_to_string(c.journal()).unwrap().lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect();
        let finished_at = lines.iter().position(|e| e["kind"] == "run.finished");
        let started_2 = lines.iter().position(|e| e["kind"] == "launch.started" && e["data"]["launch"] == 2);
        let _agent = KillPid(started_2.and_then(|i| lines[i]["data"]["process"]["pid"].as_u64()));
        match (finished_at, started_2) {
            (Some(f), Some(s)) => assert!(s < f, "an agent started after its run finished: {}", stderr(&finish)),
            (Some(_), None) => {
                let settled = c.events_of("launch.exited").iter().any(|e| e["launch"] == 2 && e["status"]["kind"] == "not_started");
                assert!(settled, "the finish settled the pending launch");
            }
            (None, _) => assert_eq!(finish.status.code(), Some(2), "{}", stderr(&finish)),
        }
    }
}

/// ATTACK (FINDING): `abcd launch --lane b --cwd <the worktree abcd made for lane c>` of the
/// same run while lane c's agent lives and has uncommitted work there. `own_worktree_at`
/// calls the folder abcd's (lane c's, passing the lane test), so lane b's launch saves
/// aside and resets it without `--save-aside`, under lane c's live agent, and starts a
/// second agent in the same folder; only lane b is judged. `run save-aside` refuses the
/// same reset ("any lane of the run may work there"). What should happen: a launch into a
/// folder where another lane's agent is alive or starting is refused naming it, and that
/// agent's work is left as it is.
#[test]
fn a_launch_into_another_lanes_worktree_never_resets_under_its_live_agent() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b", "c"]);
    let out = c.abcd(&[
        "launch",
        "--run",
        "r",
        "--lane",
        "c",
        "--role",
        "agent",
        "--receipt",
        "RC",
        "--",
        "sh",
        "-c",
        "echo 'c at work' > c.txt; sleep 30",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let _c_agent = KillPid(c.lane("r", "c")["agent"]["pid"].as_u64());
    let c_tree = PathBuf::from(c.lane("r", "c")["worktree"].as_str().unwrap());
    eventually("lane c's agent to write", || c_tree.join("c.txt").exists());
    let out = c.abcd(&[
        "launch",
        "--run",
        "r",
        "--lane",
        "b",
        "--role",
        "agent",
        "--receipt",
        "RB",
        "--cwd",
        c_tree.to_str().unwrap(),
        "--",
        "sleep",
        "30",
    ]);
    let _b_agent = KillPid(out.status.success().then(|| c.lane("r", "b")["agent"]["pid"].as_u64()).flatten());
    assert!(
        c_tree.join("c.txt").exists(),
        "lane c's live agent's work was saved aside and reset by lane b's launch: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
}

/// ATTACK (held, guards): the lane's place holds a worktree of another repository, on a
/// branch named like the lane's (`abcd/r/b`), with that repository's work uncommitted:
/// its common git folder is not this working copy's, so `run save-aside`, `resume --step`
/// and `launch` refuse, and the other repository's files stay as they were.
#[test]
fn a_worktree_of_another_repository_on_the_lanes_branch_name_is_not_the_lane() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let place = c.one_collected_launch();
    std::fs::remove_dir_all(&place).unwrap();
    c.git(&["worktree", "prune"]);
    let other = lab.dir.path().join("other");
    repo::create(&other, &[README]);
    repo::git(&other, &["worktree", "add", "-q", "-b", "abcd/r/b", place.to_str().unwrap()]);
    std::fs::write(place.join("README"), "the other repository's work\n").unwrap();
    let before = repo::person_files(&place);
    let save = c.abcd(&["run", "save-aside", "--run", "r", "--lane", "b"]);
    assert_eq!(save.status.code(), Some(2), "{}", stdout(&save));
    assert!(stderr(&save).contains("another repository"), "{}", stderr(&save));
    assert!(c.abcd(&["resume", "--step"]).status.success());
    let launch = c.launch_b("R2", &["sh", "-c", "echo hi > launched.txt"]);
    assert_eq!(launch.status.code(), Some(2), "{}", stdout(&launch));
    assert_eq!(repo::person_files(&place), before);
    assert!(c.events_of("work.saved_aside").is_empty());
}

// ---- The loop's lanes and `abcd launch` ----

/// The loop's scripted agent: its nth run replies line n of `$FAKE_DIR/ROLE.replies`.
const LOOP_AGENT: &str = "#!/bin/sh\nrole=$1\nlog=\"$FAKE_DIR/$role.log\"\nn=$(( $(cat \"$log\" 2>/dev/null | wc -l) + 1 ))\necho x >> \"$log\"\nline=$(sed -n \"${n}p\" \"$FAKE_DIR/$role.replies\")\nprintf '%b\\n' \"$line\"\n";

/// ATTACK (FINDING): a loop's reviewer turn is intended (its `launch.intended` and
/// `loop.turn_intended`, one batch) by a driver that died before its watcher started it.
/// The person then runs `abcd launch` on the reviewer lane: its locked step records the
/// loop's launch `not_started` (its launcher is gone) and starts its own agent. The next
/// `abcd loop drive` finds its turn's launch ended without a reply and stops the loop
/// `peer_error`, blaming the reviewer, where its own abandon path (`Driver::abandon`,
/// `launch.exited` with `loop.turn_abandoned`) would have run the step again. What should
/// happen: a launch settled `not_started` by someone else is treated like one the driver
/// abandoned (the turn runs again), or `abcd launch` refuses a lane of a live loop's pending
/// turn, or records `loop.turn_abandoned` with the `not_started`.
#[test]
fn a_loop_turn_settled_not_started_by_abcd_launch_is_run_again_not_blamed_on_the_reviewer() {
    let (drive, record) = loop_with_an_orphaned_review_turn(true);
    assert_ne!(
        record["record"]["stop_reason"],
        "peer_error",
        "the loop stopped blaming the reviewer for a launch abcd launch settled: {}{}",
        stdout(&drive),
        stderr(&drive)
    );
}

/// The control for the attack above (held): the same orphaned turn with no `abcd launch`
/// in between is abandoned by `abcd loop drive` and run again (the forged state is one the
/// driver knows).
#[test]
fn a_loop_turn_orphaned_by_its_driver_is_run_again_by_the_next_drive() {
    let (drive, record) = loop_with_an_orphaned_review_turn(false);
    assert!(
        stdout(&drive).contains("never started (no agent ran); recorded so, and the step goes again"),
        "{}{}",
        stdout(&drive),
        stderr(&drive)
    );
    assert_ne!(record["record"]["stop_reason"], "peer_error", "{}{}", stdout(&drive), stderr(&drive));
}

/// A loop paused after its first turn, resumed, with its reviewer turn 2 intended by a
/// driver now gone and never started; then, when `manual`, `abcd launch` on the reviewer
/// lane; then `abcd loop drive`. The drive's output and the loop's status.
fn loop_with_an_orphaned_review_turn(manual: bool) -> (Output, Value) {
    let lab = Lab::new();
    let mut c = lab.copy("wc");
    let fake = lab.dir.path().join("fake");
    std::fs::create_dir_all(&fake).unwrap();
    let agent = lab.dir.path().join("agent");
    std::fs::write(&agent, LOOP_AGENT).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(fake.join("implementer.replies"), "phase one done\nCOMPLETED\n").unwrap();
    std::fs::write(fake.join("reviewer.replies"), "LGTM\n").unwrap();
    c.env = vec![("FAKE_DIR".into(), fake.display().to_string())];
    let a = agent.display().to_string();
    let (imp, rev) = (format!("{a} implementer {{prompt}}"), format!("{a} reviewer {{prompt}}"));
    let out = c.abcd(&["loop", "start", "--run", "L", "--implementer", &imp, "--reviewer", &rev, "--max-turns", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(c.abcd(&["loop", "resume", "L"]).status.success());
    // The driver's turn 2, intended by a driver now gone, its watcher never run.
    let first = c.events_of("launch.intended")[0].clone();
    let worktree = first["worktree"].as_str().unwrap().to_string();
    let runs = PathBuf::from(first["receipt"].as_str().unwrap()).parent().unwrap().to_path_buf();
    let reply = runs.join("reviewer-1.reply.json").display().to_string();
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    let exe = env!("CARGO_BIN_EXE_abcd");
    let command: Vec<String> =
        [exe, "__loop-turn", "--run", "L", "--turn", "2", "--phase", "1", "--round", "1", "--kind", "review", "--reader", "plain"]
            .iter()
            .map(|s| s.to_string())
            .chain([
                "--prompt-file".into(),
                runs.join("turns/turn-2.prompt").display().to_string(),
                "--reply-file".into(),
                reply.clone(),
                "--".into(),
                a.clone(),
                "reviewer".into(),
                "{prompt}".into(),
            ])
            .collect();
    {
        use abcd::journal::anchor::AnchorStore;
        use abcd::journal::storage::RealDisk;
        use abcd::journal::{Actor, Journal, JournalPaths, NewEvent};
        let journal = Journal::new(RealDisk::shared(), JournalPaths::beside(&c.journal()), Some(AnchorStore::new(&c.home)));
        let scope = abcd::event::Scope::WorkingCopy { root: c.root.display().to_string() };
        let intended = serde_json::json!({"run": "L", "lane": "reviewer", "launch": 1, "role": "reviewer", "command": command,
            "receipt": reply, "worktree": worktree, "launcher": {"pid": gone_pid, "start_ticks": 1}});
        let turn = serde_json::json!({"run": "L", "turn": 2, "phase": 1, "round": 1, "kind": "review", "launch": 1,
            "prompt_blake3": "0".repeat(64), "prompt_bytes": 10, "reply_file": reply});
        let actor = Actor::this_process(None);
        journal
            .append_batch(
                &[
                    NewEvent { kind: "launch.intended".into(), actor: actor.clone(), data: intended },
                    NewEvent { kind: "loop.turn_intended".into(), actor, data: turn },
                ],
                Some(&scope),
            )
            .unwrap();
    }
    if manual {
        let launch = c.abcd(&["launch", "--run", "L", "--lane", "reviewer", "--role", "reviewer", "--receipt", "RV", "--", "true"]);
        eprintln!("abcd launch on the loop's reviewer lane: {}{}", stdout(&launch), stderr(&launch));
        eventually("the manual agent to end", || {
            c.events_of("launch.exited").iter().filter(|e| e["lane"] == "reviewer").count() >= 2 || !launch.status.success()
        });
    }
    let drive = c.abcd(&["loop", "drive", "L"]);
    let status = c.abcd(&["loop", "status", "L", "--json"]);
    (drive, serde_json::from_slice(&status.stdout).unwrap())
}

/// ATTACK (held, guards): while a launch that won the lane is saving its work aside (its
/// launcher alive, held at its reset), `run finish`, `run save-aside`, `resume --step` and
/// a second launch all see the lane as starting: each refuses (or leaves it alone), and
/// nothing of theirs is recorded.
#[test]
fn a_launch_starting_holds_its_lane_against_finish_save_aside_step_and_launch() {
    let lab = Lab::new();
    let c = lab.copy("wc");
    let _driver = c.start_run("r", &["b"]);
    let place = c.one_collected_launch();
    std::fs::write(place.join("README"), "the lane's work\n").unwrap();
    let go = lab.dir.path().join("go");
    let held = lab.dir.path().join("held");
    let hold = format!(
        "case \" $* \" in *' ls-tree '*'--name-only'*) touch '{held}'; while [ ! -e '{go}' ]; do sleep 0.05; done;; esac",
        held = held.display(),
        go = go.display()
    );
    let path = fake_git(lab.dir.path(), &hold);
    let starting = c
        .cmd(&launch_args("R2", &["sh", "-c", "echo done > R2"]), &[("PATH", &path)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually("the launch to reach its reset", || held.exists());
    let saved = c.events_of("work.saved_aside").len();
    let finish = c.abcd(&["run", "finish", "r"]);
    assert_eq!(finish.status.code(), Some(2), "{}", stdout(&finish));
    assert!(stderr(&finish).contains("launch 2 of r/b is starting"), "{}", stderr(&finish));
    let save = c.abcd(&["run", "save-aside", "--run", "r", "--lane", "b"]);
    assert_eq!(save.status.code(), Some(2), "{}", stdout(&save));
    assert!(c.abcd(&["resume", "--step"]).status.success());
    let second = c.launch_b("R3", &["true"]);
    assert_eq!(second.status.code(), Some(2), "{}", stdout(&second));
    assert!(stderr(&second).contains("launch 2 of r/b is starting"), "{}", stderr(&second));
    assert_eq!(c.events_of("work.saved_aside").len(), saved, "only the starting launch saved");
    assert!(c.events_of("run.finished").is_empty());
    std::fs::write(&go, "").unwrap();
    let out = starting.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}
