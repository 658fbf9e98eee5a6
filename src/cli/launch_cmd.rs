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

use super::{EXIT_OK, new_event, refuse};
use crate::command::launch::{self, LaneRefusal, WatchSpec, WatchStart};
use crate::command::run::{self as run_cmd, WorkingCopy};
use crate::event;
use crate::git::worktree;
use crate::ledger::{self, ExitStatus, LaunchExited, LaunchIntended};
use crate::platform::process;

/// How long the launcher waits for the watcher to record the start.
pub const START_CONFIRM_WAIT: Duration = Duration::from_secs(10);
/// How often the launcher looks for the watcher's record of the start.
const START_POLL: Duration = Duration::from_millis(20);
/// Test seam (test builds only): the launcher kills itself with SIGKILL right after
/// recording the intent, as a crash between `launch.intended` and `launch.started` would.
#[cfg(feature = "test-support")]
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

fn absolute(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() { p.to_path_buf() } else { base.join(p) }
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
    let first = wc.store.append_with(Some(&wc.scope), |state| (vec![], launch::lane_refusal(&state.ledger, &args.run, &args.lane)))?;
    if let Err(why) = first.outcome {
        return refuse(why.to_string());
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
    let written = wc.store.append_with(Some(&wc.scope), |state| match launch::lane_refusal(&state.ledger, &args.run, &args.lane) {
        Err(why) => (vec![], Err::<u64, LaneRefusal>(why)),
        Ok(n) => (vec![new_event(event::LAUNCH_INTENDED, json!(intent(n)))], Ok(n)),
    })?;
    let n = match written.outcome {
        Err(why) => return refuse(why.to_string()),
        Ok(n) => n,
    };
    #[cfg(feature = "test-support")]
    if std::env::var_os(KILL_AFTER_INTENT_VAR).is_some() {
        crate::platform::process::kill_this_process();
    }

    let outputs = run_folder(&wc, &args.run)?;
    let spec = WatchSpec {
        working_copy: wc.root.clone(),
        run: args.run.clone(),
        lane: args.lane.clone(),
        launch: n,
        program,
        cwd: lane_dir.clone(),
        args: args.command.iter().skip(1).cloned().collect(),
    };
    let log = outputs.join(format!("{}-{n}.watcher.log", args.lane));
    let exe = std::env::current_exe()?;
    if let Err(e) = spec.spawn_watcher(&exe, &log) {
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
    Ok(launch::run_folder(wc.store.journal().paths().dir(), run)?)
}

/// The watcher: starts the agent in its own session and records its start, both under the
/// writer lock and only while its launch is intended and neither started nor ended; then
/// waits and records the exit.
pub fn run_watch(args: WatchArgs) -> anyhow::Result<i32> {
    let wc = run_cmd::open_at(&args.working_copy)?;
    let outputs = run_folder(&wc, &args.run)?;
    let stdout = outputs.join(format!("{}-{}.out", args.lane, args.launch));
    let stderr = outputs.join(format!("{}-{}.err", args.lane, args.launch));
    let spec = WatchSpec {
        working_copy: args.working_copy.clone(),
        run: args.run.clone(),
        lane: args.lane.clone(),
        launch: args.launch,
        program: args.program.clone(),
        cwd: args.cwd.clone(),
        args: args.args.clone(),
    };
    let child = match launch::start_recorded(&wc.store, &wc.scope, &spec, &stdout, &stderr)? {
        WatchStart::Started(child) => child,
        WatchStart::NotStarted(e) => {
            eprintln!("abcd watcher: {e}");
            return Ok(super::EXIT_FAILURE);
        }
        WatchStart::NotMine(why) => {
            eprintln!("abcd watcher: nothing started: {why}");
            return Ok(super::EXIT_FAILURE);
        }
    };
    let status = launch::exit_status(child.wait());
    launch::record_exit(&wc.store, &wc.scope, &args.run, &args.lane, args.launch, status)?;
    Ok(EXIT_OK)
}
