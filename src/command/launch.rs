//! One launch path for `abcd launch` and the loop driver: why a lane may not launch now
//! (judged from the folded ledger under the writer lock), the detached watcher's command
//! line, and the watcher's start of the agent, decided and recorded under the lock.
//!
//! The watcher checks, under the lock, that its launch is intended and has neither
//! started nor exited, starts the agent, and records `launch.started`, all before it lets
//! the lock go. So a successor that finds a launch intended but never started can record
//! it `not_started` under the lock and know no watcher will ever start it afterwards.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::event::{self, Scope};
use crate::journal::JournalError;
use crate::journal::format::{Actor, NewEvent};
use crate::ledger::{ExitStatus, LaunchExited, LaunchStarted, LedgerState};
use crate::platform::process::{self, ProcessId, SpawnError, SpawnedChild};
use crate::store::Store;

/// The hidden subcommand that runs the watcher.
pub const WATCH_SUBCOMMAND: &str = "__watch-launch";

/// Why a lane may not launch now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaneRefusal {
    NoRun {
        run: String,
    },
    Finished {
        run: String,
    },
    Halted {
        run: String,
    },
    NoLane {
        run: String,
        lane: String,
        lanes: Vec<String>,
    },
    /// The lane's last agent is alive.
    Alive {
        run: String,
        lane: String,
        launch: u64,
        pid: u32,
    },
    /// The lane's last receipt is there, not collected.
    ReceiptWaiting {
        run: String,
        lane: String,
        launch: u64,
        receipt: String,
    },
}

impl std::fmt::Display for LaneRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaneRefusal::NoRun { run } => {
                write!(f, "refused: no run named {} in this working copy; `abcd resume` lists the runs", crate::secrets::shown_name(run))
            }
            LaneRefusal::Finished { run } => write!(f, "refused: run {run} is finished"),
            LaneRefusal::Halted { run } => write!(f, "refused: run {run} is halted; `abcd run lift --run {run}` lifts it"),
            LaneRefusal::NoLane { run, lane, lanes } => {
                write!(f, "refused: run {run} has no lane {} (its lanes: {})", crate::secrets::shown_name(lane), lanes.join(", "))
            }
            LaneRefusal::Alive { run, lane, launch, pid } => {
                write!(f, "refused: launch {launch} of {run}/{lane} is alive (pid {pid}); wait for it to end")
            }
            LaneRefusal::ReceiptWaiting { run, lane, launch, receipt } => write!(
                f,
                "refused: the receipt of launch {launch} of {run}/{lane} is waiting at {receipt}; collect it first with `abcd collect --run {run} --lane {lane}`"
            ),
        }
    }
}

/// The lane's next launch number, or why it may not launch now.
pub fn lane_refusal(state: &LedgerState, run: &str, lane: &str) -> Result<u64, LaneRefusal> {
    let Some(r) = state.runs.get(run) else {
        return Err(LaneRefusal::NoRun { run: run.into() });
    };
    if r.finished {
        return Err(LaneRefusal::Finished { run: run.into() });
    }
    if r.halted {
        return Err(LaneRefusal::Halted { run: run.into() });
    }
    let Some(l) = r.lanes.get(lane) else {
        return Err(LaneRefusal::NoLane { run: run.into(), lane: lane.into(), lanes: r.lanes.keys().cloned().collect() });
    };
    if let Some(last) = l.last() {
        if let Some(p) = last.started
            && last.exited.is_none()
            && process::is_alive(&p)
        {
            return Err(LaneRefusal::Alive { run: run.into(), lane: lane.into(), launch: last.launch, pid: p.pid });
        }
        if last.collected.is_none() && Path::new(&last.receipt).exists() {
            return Err(LaneRefusal::ReceiptWaiting {
                run: run.into(),
                lane: lane.into(),
                launch: last.launch,
                receipt: last.receipt.clone(),
            });
        }
    }
    Ok(l.launches_total + 1)
}

/// The run's folder in the local tier (`runs/<run>/`, 0700), for the agents' output.
pub fn run_folder(journal_dir: &Path, run: &str) -> std::io::Result<PathBuf> {
    let dir = journal_dir.join("runs").join(run);
    crate::platform::fs::create_dir_all(&dir, 0o700)?;
    Ok(dir)
}

/// What the watcher of one launch is told.
#[derive(Clone, Debug)]
pub struct WatchSpec {
    pub working_copy: PathBuf,
    pub run: String,
    pub lane: String,
    pub launch: u64,
    /// The agent's program, resolved.
    pub program: PathBuf,
    pub cwd: PathBuf,
    /// The agent's arguments (the command's words after the program).
    pub args: Vec<OsString>,
}

impl WatchSpec {
    /// The watcher's command line, after the abcd executable.
    pub fn watcher_args(&self) -> Vec<OsString> {
        [
            WATCH_SUBCOMMAND.into(),
            "--working-copy".into(),
            self.working_copy.clone().into_os_string(),
            "--run".into(),
            self.run.clone().into(),
            "--lane".into(),
            self.lane.clone().into(),
            "--launch".into(),
            self.launch.to_string().into(),
            "--program".into(),
            self.program.clone().into_os_string(),
            "--cwd".into(),
            self.cwd.clone().into_os_string(),
            "--".into(),
        ]
        .into_iter()
        .chain(self.args.iter().cloned())
        .collect()
    }

    /// Starts the watcher detached (abcd itself, `exe`), its own output to `log`.
    pub fn spawn_watcher(&self, exe: &Path, log: &Path) -> Result<ProcessId, SpawnError> {
        process::spawn_detached(exe, &self.watcher_args(), &self.cwd, log, log, &[])
    }
}

fn new_event(kind: &str, data: serde_json::Value) -> NewEvent {
    NewEvent { kind: kind.into(), actor: Actor::this_process(None), data }
}

/// What the watcher's start came to.
#[derive(Debug)]
pub enum WatchStart {
    /// Started and recorded; wait on it.
    Started(SpawnedChild),
    /// The program could not be run; recorded as `not_started`.
    NotStarted(SpawnError),
    /// The launch is not one to start: not intended (yet, or ever), or already started
    /// or ended (a successor recorded it `not_started`). Nothing was started.
    NotMine(String),
}

/// The watcher's start: under the writer lock, checks the launch is intended and has
/// neither started nor exited, starts the agent, and records `launch.started` (or
/// `launch.exited` `not_started` when the program cannot be run).
pub fn start_recorded(store: &Store, scope: &Scope, spec: &WatchSpec, stdout: &Path, stderr: &Path) -> Result<WatchStart, JournalError> {
    let written = store.append_with(Some(scope), |state| {
        let launch = state
            .ledger
            .runs
            .get(&spec.run)
            .and_then(|r| r.lanes.get(&spec.lane))
            .and_then(|l| l.launches.iter().find(|x| x.launch == spec.launch));
        match launch {
            None => {
                return (
                    vec![],
                    WatchStart::NotMine(format!("launch {} of {}/{} is not recorded as intended", spec.launch, spec.run, spec.lane)),
                );
            }
            Some(l) if l.started.is_some() || l.exited.is_some() => {
                return (
                    vec![],
                    WatchStart::NotMine(format!("launch {} of {}/{} has already started or ended", spec.launch, spec.run, spec.lane)),
                );
            }
            Some(_) => {}
        }
        match process::spawn_in_new_session(&spec.program, &spec.args, &spec.cwd, stdout, stderr, &[]) {
            Ok(child) => {
                let data = LaunchStarted {
                    run: spec.run.clone(),
                    lane: spec.lane.clone(),
                    launch: spec.launch,
                    process: child.id,
                    stdout: stdout.display().to_string(),
                    stderr: stderr.display().to_string(),
                };
                (vec![new_event(event::LAUNCH_STARTED, json!(data))], WatchStart::Started(child))
            }
            Err(e) => {
                let data =
                    LaunchExited { run: spec.run.clone(), lane: spec.lane.clone(), launch: spec.launch, status: ExitStatus::NotStarted };
                (vec![new_event(event::LAUNCH_EXITED, json!(data))], WatchStart::NotStarted(e))
            }
        }
    })?;
    Ok(written.outcome)
}

/// Records how a started agent ended.
pub fn record_exit(store: &Store, scope: &Scope, run: &str, lane: &str, launch: u64, status: ExitStatus) -> Result<(), JournalError> {
    let data = LaunchExited { run: run.into(), lane: lane.into(), launch, status };
    store.append_with(Some(scope), |_| (vec![new_event(event::LAUNCH_EXITED, json!(data))], ()))?;
    Ok(())
}

/// A waited-for child's end as the ledger records it.
pub fn exit_status(report: process::ExitReport) -> ExitStatus {
    match report {
        process::ExitReport::Code(code) => ExitStatus::Code { code },
        process::ExitReport::Signal(signal) => ExitStatus::Signal { signal },
        process::ExitReport::Unknown => ExitStatus::Unknown,
    }
}
