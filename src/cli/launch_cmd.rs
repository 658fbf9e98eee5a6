//! `abcd launch … -- <command…>` and its watcher (SPEC §7): every agent is in the ledger
//! before it starts. The launcher checks the lane under the writer lock (no live agent, no
//! receipt waiting, not halted), saves uncommitted work aside, records `launch.intended`,
//! then starts a detached watcher; the watcher starts the agent in its own session,
//! records `launch.started` with its pid and start time, waits, and records
//! `launch.exited`. A launcher killed after the intent leaves a ledger that says so.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;

use super::run_cmd::{self, WorkingCopy};
use super::{EXIT_OK, EXIT_REFUSED};
use crate::event;
use crate::journal::format::{Actor, NewEvent};
use crate::ledger::process;
use crate::ledger::{self, ExitStatus, LaunchExited, LaunchIntended, LaunchStarted, worktree};

/// How long the launcher waits for the watcher to record the start.
pub const START_CONFIRM_WAIT: Duration = Duration::from_secs(10);
/// How often the launcher looks for the watcher's record of the start.
const START_POLL: Duration = Duration::from_millis(20);
/// The hidden subcommand the launcher starts the watcher with.
pub const WATCH_SUBCOMMAND: &str = "__watch-launch";
/// Test seam: the launcher kills itself with SIGKILL right after recording the intent, as
/// a crash between `launch.intended` and `launch.started` would.
pub const KILL_AFTER_INTENT_VAR: &str = "ABCD_TEST_KILL_AFTER_INTENT";

#[derive(Args, Debug)]
#[command(
    about = "Start an agent for a lane, recorded in the ledger before it starts",
    long_about = "Start an agent for a lane of a run, recorded in the ledger before it starts.\n\n\
Refused while an earlier agent of the lane is alive, while a receipt from an earlier launch waits \
uncollected (`abcd collect` first), or while the run is halted. Uncommitted work in the lane's \
worktree (with no live agent) is saved aside first to a ref under refs/abcd/saved/, checked to hold \
all of it, recorded, and the lane returned to its last commit; the output names the ref and the \
command that brings the work back. The agent runs detached, its output in the run's folder in the \
local tier; its exit is recorded when it ends."
)]
pub struct LaunchArgs {
    #[arg(long)]
    run: String,
    #[arg(long)]
    lane: String,
    /// What the agent is (implementer, reviewer, …)
    #[arg(long)]
    role: String,
    /// Where the agent writes its receipt when done
    #[arg(long, value_name = "PATH")]
    receipt: PathBuf,
    /// The lane's worktree (default: the current folder)
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    #[arg(long)]
    json: bool,
    /// The agent's command
    #[arg(last = true, required = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

#[derive(Args, Debug)]
pub struct WatchArgs {
    #[arg(long)]
    working_copy: PathBuf,
    #[arg(long)]
    run: String,
    #[arg(long)]
    lane: String,
    #[arg(long)]
    launch: u64,
    #[arg(long)]
    program: PathBuf,
    #[arg(long)]
    cwd: PathBuf,
    #[arg(last = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

fn refuse(msg: String) -> anyhow::Result<i32> {
    eprintln!("abcd: {msg}");
    Ok(EXIT_REFUSED)
}

fn new_event(kind: &str, data: serde_json::Value) -> NewEvent {
    NewEvent { kind: kind.into(), actor: Actor::this_process(None), data }
}

fn absolute(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() { p.to_path_buf() } else { base.join(p) }
}

/// Why the lane may not launch now, judged from the folded ledger.
fn lane_refusal(state: &ledger::LedgerState, run: &str, lane: &str) -> Result<u64, String> {
    let Some(r) = state.runs.get(run) else {
        return Err(format!("refused: no run named {run:?} in this working copy; `abcd resume` lists the runs"));
    };
    if r.finished {
        return Err(format!("refused: run {run} is finished"));
    }
    if r.halted {
        return Err(format!("refused: run {run} is halted; `abcd run lift --run {run}` lifts it"));
    }
    let Some(l) = r.lanes.get(lane) else {
        let lanes: Vec<&str> = r.lanes.keys().map(String::as_str).collect();
        return Err(format!("refused: run {run} has no lane {lane:?} (its lanes: {})", lanes.join(", ")));
    };
    if let Some(last) = l.last() {
        if let Some(p) = last.started
            && last.exited.is_none()
            && process::is_alive(&p)
        {
            return Err(format!("refused: launch {} of {run}/{lane} is alive (pid {}); wait for it to end", last.launch, p.pid));
        }
        if last.collected.is_none() && Path::new(&last.receipt).exists() {
            return Err(format!(
                "refused: the receipt of launch {} of {run}/{lane} is waiting at {}; collect it first with `abcd collect --run {run} --lane {lane}`",
                last.launch, last.receipt
            ));
        }
    }
    Ok(l.launches_total + 1)
}

pub fn run_launch(args: LaunchArgs) -> anyhow::Result<i32> {
    let here = std::env::current_dir()?;
    for (field, name) in [("run", &args.run), ("lane", &args.lane), ("role", &args.role)] {
        if let Err(r) = ledger::check_name(field, name) {
            return refuse(format!("refused: the {field} name {}; nothing was recorded", r.reason));
        }
    }
    let Some(words) = args.command.iter().map(|w| w.to_str().map(String::from)).collect::<Option<Vec<String>>>() else {
        return refuse("refused: the command is not valid UTF-8; nothing was recorded".into());
    };
    if let Err(r) = ledger::check_command(&words) {
        return refuse(format!("refused: the command {}; nothing was recorded", r.reason));
    }
    let Some(program) = process::resolve_program(&args.command[0]) else {
        return refuse(format!(
            "refused: the command {:?} is not an executable program (not found on PATH); nothing was recorded",
            words[0]
        ));
    };
    let lane_dir = match &args.cwd {
        Some(dir) => absolute(&here, dir),
        None => here.clone(),
    };
    let receipt = absolute(&lane_dir, &args.receipt);
    if receipt.is_dir() {
        return refuse(format!("refused: the receipt path {} is a folder; name the file the agent will write", receipt.display()));
    }
    let status = match worktree::status(&lane_dir) {
        Ok(s) => s,
        Err(_) => return refuse(format!("refused: {} is not a git worktree; pass the lane's worktree with --cwd", lane_dir.display())),
    };
    let wc = run_cmd::open_at(&here)?;

    // First look: refuse before touching the lane.
    let first = wc.store.append_with(Some(&wc.scope), |state| (vec![], lane_refusal(&state.ledger, &args.run, &args.lane)))?;
    if let Err(why) = first.outcome {
        return refuse(why);
    }
    if !status.changed.is_empty() {
        match run_cmd::save_aside(&wc, &args.run, &args.lane, &lane_dir) {
            Ok(line) => println!("{line}"),
            Err(why) => {
                return refuse(format!("refused: the lane's uncommitted work could not be saved aside ({why}); nothing was started"));
            }
        }
    }
    let intent = |n: u64| LaunchIntended {
        run: args.run.clone(),
        lane: args.lane.clone(),
        launch: n,
        role: args.role.clone(),
        command: words.clone(),
        receipt: receipt.display().to_string(),
        worktree: lane_dir.display().to_string(),
    };
    let written = wc.store.append_with(Some(&wc.scope), |state| match lane_refusal(&state.ledger, &args.run, &args.lane) {
        Err(why) => (vec![], Err(why)),
        Ok(n) => (vec![new_event(event::LAUNCH_INTENDED, json!(intent(n)))], Ok(n)),
    })?;
    let n = match written.outcome {
        Err(why) => return refuse(why),
        Ok(n) => n,
    };
    if std::env::var_os(KILL_AFTER_INTENT_VAR).is_some() {
        // SAFETY: kill and getpid have no preconditions; this ends the process at once.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }

    let outputs = run_folder(&wc, &args.run)?;
    let watcher_args: Vec<OsString> = [
        WATCH_SUBCOMMAND.into(),
        "--working-copy".into(),
        wc.root.clone().into_os_string(),
        "--run".into(),
        args.run.clone().into(),
        "--lane".into(),
        args.lane.clone().into(),
        "--launch".into(),
        n.to_string().into(),
        "--program".into(),
        program.into_os_string(),
        "--cwd".into(),
        lane_dir.clone().into_os_string(),
        "--".into(),
    ]
    .into_iter()
    .chain(args.command.iter().skip(1).cloned())
    .collect();
    let log = outputs.join(format!("{}-{n}.watcher.log", args.lane));
    let exe = std::env::current_exe()?;
    if let Err(e) = process::spawn_detached(&exe, &watcher_args, &lane_dir, &log, &log, &[]) {
        let data = LaunchExited { run: args.run.clone(), lane: args.lane.clone(), launch: n, status: ExitStatus::NotStarted };
        wc.store.append_with(Some(&wc.scope), |_| (vec![new_event(event::LAUNCH_EXITED, json!(data))], ()))?;
        return refuse(format!("the watcher could not be started ({e}); launch {n} is recorded as never started"));
    }
    let deadline = Instant::now() + START_CONFIRM_WAIT;
    loop {
        let state = wc.store.current_state()?;
        let last = state
            .state
            .ledger
            .runs
            .get(&args.run)
            .and_then(|r| r.lanes.get(&args.lane))
            .and_then(|l| l.launches.iter().find(|x| x.launch == n))
            .cloned();
        match last {
            Some(l) if l.started.is_some() => {
                let p = l.started.expect("checked");
                if args.json {
                    println!(
                        "{}",
                        json!({"run": args.run, "lane": args.lane, "launch": n, "process": p, "stdout": l.stdout, "stderr": l.stderr})
                    );
                } else {
                    println!("launch {n} of {}/{} started: pid {}; output in {}", args.run, args.lane, p.pid, l.stdout.unwrap_or_default());
                }
                return Ok(EXIT_OK);
            }
            Some(l) if l.exited == Some(ExitStatus::NotStarted) => {
                return refuse(format!("launch {n} of {}/{} could not start its command; see {}", args.run, args.lane, log.display()));
            }
            _ if Instant::now() >= deadline => {
                return refuse(format!(
                    "launch {n} of {}/{} is recorded as intended but its start was not confirmed within {} s; `abcd resume` shows it",
                    args.run,
                    args.lane,
                    START_CONFIRM_WAIT.as_secs()
                ));
            }
            _ => std::thread::sleep(START_POLL),
        }
    }
}

/// The run's folder in the local tier, for the agents' output.
fn run_folder(wc: &WorkingCopy, run: &str) -> anyhow::Result<PathBuf> {
    let dir = wc.store.journal().paths().dir().join("runs").join(run);
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
    Ok(dir)
}

use std::os::unix::fs::DirBuilderExt;

/// The watcher: starts the agent in its own session, records its start and its exit.
pub fn run_watch(args: WatchArgs) -> anyhow::Result<i32> {
    let wc = run_cmd::open_at(&args.working_copy)?;
    let outputs = run_folder(&wc, &args.run)?;
    let stdout = outputs.join(format!("{}-{}.out", args.lane, args.launch));
    let stderr = outputs.join(format!("{}-{}.err", args.lane, args.launch));
    let exited = |status: ExitStatus| LaunchExited { run: args.run.clone(), lane: args.lane.clone(), launch: args.launch, status };
    let child = match process::spawn_in_new_session(&args.program, &args.args, &args.cwd, &stdout, &stderr, &[]) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("abcd watcher: {e}");
            wc.store
                .append_with(Some(&wc.scope), |_| (vec![new_event(event::LAUNCH_EXITED, json!(exited(ExitStatus::NotStarted)))], ()))?;
            return Ok(super::EXIT_FAILURE);
        }
    };
    let started = LaunchStarted {
        run: args.run.clone(),
        lane: args.lane.clone(),
        launch: args.launch,
        process: child.id,
        stdout: stdout.display().to_string(),
        stderr: stderr.display().to_string(),
    };
    wc.store.append_with(Some(&wc.scope), |_| (vec![new_event(event::LAUNCH_STARTED, json!(started))], ()))?;
    let status = match child.wait() {
        process::ExitReport::Code(code) => ExitStatus::Code { code },
        process::ExitReport::Signal(signal) => ExitStatus::Signal { signal },
        process::ExitReport::Unknown => ExitStatus::Unknown,
    };
    wc.store.append_with(Some(&wc.scope), |_| (vec![new_event(event::LAUNCH_EXITED, json!(exited(status)))], ()))?;
    Ok(EXIT_OK)
}
