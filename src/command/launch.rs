//! One launch path for `abcd launch`, its watcher and the loop driver: why a lane may not
//! launch now (judged from the folded ledger under the writer lock), the launch itself
//! (recorded before anything starts), the detached watcher's command line, and the
//! watcher's start of the agent, decided and recorded under the lock.
//!
//! The watcher checks, under the lock, that its launch is intended and has neither
//! started nor exited, starts the agent, and records `launch.started`, all before it lets
//! the lock go. So a successor that finds a launch intended but never started can record
//! it `not_started` under the lock and know no watcher will ever start it afterwards.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{CommandError, lane, new_event};
use crate::event::{self, Scope};
use crate::git::worktree;
use crate::journal::JournalError;
use crate::ledger::{self, ExitStatus, LaunchExited, LaunchIntended, LaunchStarted, LedgerState};
use crate::places::Place;

pub use super::lane_start::LaunchRequest;
use crate::platform::process::{self, ProcessId, SpawnError, SpawnedChild};
use crate::refusal::{Refusal, RefusalKind as K};
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
    /// A launch of the lane is recorded as intended, neither started nor ended, and the
    /// process that recorded it is alive: it is starting.
    Starting {
        run: String,
        lane: String,
        launch: u64,
        launcher: u32,
    },
    /// An agent of the lane is alive.
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
    /// Something that is not a file stands where the lane's last receipt belongs.
    ReceiptNotAFile {
        run: String,
        lane: String,
        launch: u64,
        receipt: String,
        what: &'static str,
    },
}

impl LaneRefusal {
    /// The refusal of `what` (a launch, a loop's turn) this says.
    pub fn refusal(&self, what: &str) -> Refusal {
        match self {
            LaneRefusal::NoRun { run } => {
                Refusal::new(K::NotFound, what, format!("no run named {} in this working copy", crate::secrets::shown_name(run)))
                    .instead("`abcd resume` lists the runs")
            }
            LaneRefusal::Finished { run } => {
                // A loop's turns refuse as "loop": a new loop, not a bare run, is what goes on.
                let again = if what == "loop" { "start a loop under a new name (`abcd loop start --run NEW-NAME`)" } else { "start a run under a new name" };
                Refusal::new(K::RunFinished, what, format!("run {run} is finished")).instead(again)
            }
            LaneRefusal::Halted { run } => {
                Refusal::new(K::RunHalted, what, format!("run {run} is halted")).instead(format!("`abcd run lift --run {run}` lifts it"))
            }
            LaneRefusal::NoLane { run, lane, lanes } => Refusal::new(
                K::NotFound,
                what,
                format!("run {run} has no lane {} (its lanes: {})", crate::secrets::shown_name(lane), lanes.join(", ")),
            )
            .instead("name one of its lanes"),
            LaneRefusal::Starting { run, lane, launch, launcher } => Refusal::new(
                K::LaneBusy,
                what,
                format!(
                    "launch {launch} of {run}/{lane} is starting (its launcher, pid {launcher}, is alive); one agent runs in a lane at a time"
                ),
            )
            .instead("wait for it to end"),
            LaneRefusal::Alive { run, lane, launch, pid } => {
                Refusal::new(K::LaneBusy, what, format!("launch {launch} of {run}/{lane} is alive (pid {pid})")).instead("wait for it to end")
            }
            LaneRefusal::ReceiptWaiting { run, lane, launch, receipt } => {
                Refusal::new(K::ReceiptState, what, format!("the receipt of launch {launch} of {run}/{lane} is waiting at {receipt}"))
                    .instead(format!("collect it first with `abcd collect --run {run} --lane {lane}`"))
            }
            LaneRefusal::ReceiptNotAFile { run, lane, launch, receipt, what: there } => Refusal::new(
                K::ReceiptState,
                what,
                format!("where launch {launch} of {run}/{lane} writes its receipt, {receipt}, there is {there}, not a receipt"),
            )
            .instead("move it away, then launch again"),
        }
    }

    /// What to run, or do, so what holds the lane lets it go: for a refusal of another verb
    /// (`run finish`, a save aside).
    pub fn next_step(&self, run: &str, lane: &str) -> String {
        match self {
            LaneRefusal::ReceiptWaiting { .. } => format!("collect it with `abcd collect --run {run} --lane {lane}`"),
            LaneRefusal::ReceiptNotAFile { .. } => "move it away".to_string(),
            _ => "wait for it to end".to_string(),
        }
    }

    /// What holds the lane, in words, for a refusal of another verb (`run finish`).
    pub fn what_holds(&self) -> String {
        match self {
            LaneRefusal::Starting { run, lane, launch, launcher } => {
                format!("launch {launch} of {run}/{lane} is starting (its launcher, pid {launcher}, is alive)")
            }
            LaneRefusal::Alive { run, lane, launch, pid } => format!("launch {launch} of {run}/{lane} is alive (pid {pid})"),
            LaneRefusal::ReceiptWaiting { run, lane, launch, receipt } => {
                format!("the receipt of launch {launch} of {run}/{lane} is waiting at {receipt}")
            }
            LaneRefusal::ReceiptNotAFile { run, lane, launch, receipt, what } => {
                format!("where launch {launch} of {run}/{lane} writes its receipt, {receipt}, there is {what}")
            }
            other => other.refusal("").why,
        }
    }
}

/// What stands at a receipt's path: one judgement shared by `abcd launch`, `abcd collect`
/// and `abcd resume`, so no verb calls waiting what another cannot collect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReceiptAt {
    /// Nothing (a link to nothing counts as nothing).
    Absent,
    /// A file, of this many bytes: it has arrived.
    File { bytes: u64 },
    /// Something a receipt cannot be: a folder, a pipe, a socket, a device, or a path
    /// that cannot be looked at.
    NotAFile { what: &'static str },
}

/// Looks at a receipt's path, following links as the collect's read does.
pub fn receipt_at(path: &Path) -> ReceiptAt {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => ReceiptAt::Absent,
        Err(_) => ReceiptAt::NotAFile { what: "a path that cannot be looked at" },
        Ok(m) if m.is_file() => ReceiptAt::File { bytes: m.len() },
        Ok(m) => ReceiptAt::NotAFile { what: crate::platform::fs::kind_words(&m.file_type()) },
    }
}

/// A lane free to launch: its next launch number, and the launches to record
/// `not_started` in the same locked step (intended, neither started nor ended, their
/// launcher gone: no watcher of theirs starts an agent once that is recorded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneFree {
    pub next: u64,
    pub abandoned: Vec<u64>,
}

impl LaneFree {
    /// The `launch.exited` `not_started` events for [`LaneFree::abandoned`].
    pub fn abandoned_events(&self, run: &str, lane: &str) -> Vec<crate::journal::NewEvent> {
        not_started_events(run, lane, &self.abandoned)
    }
}

/// `launch.exited` `not_started` for each of `launches` of `run`'s `lane`: the one record of
/// a launch no agent ran for, whoever settles it (its launcher, its watcher, or the next
/// verb that takes the lane).
pub fn not_started_events(run: &str, lane: &str, launches: &[u64]) -> Vec<crate::journal::NewEvent> {
    launches
        .iter()
        .map(|&launch| {
            let data = LaunchExited { run: run.into(), lane: lane.into(), launch, status: ExitStatus::NotStarted };
            new_event(event::LAUNCH_EXITED, json!(data))
        })
        .collect()
}

/// Whether the lane may launch now, judged from the folded ledger; callers judge and
/// append `launch.intended` in one step under the writer lock, so of launches that race
/// exactly one is recorded. Every launch the ledger keeps is looked at, not only the last:
/// one started and not ended whose agent lives, or one intended whose launcher lives,
/// holds the lane.
pub fn lane_refusal(state: &LedgerState, run: &str, lane: &str) -> Result<LaneFree, LaneRefusal> {
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
    let abandoned = lane_busy(run, lane, l)?;
    Ok(LaneFree { next: l.launches_total + 1, abandoned })
}

/// What holds a lane, whatever its run's state: an agent alive, a launch starting, a
/// receipt waiting (or something else standing where it belongs). When nothing does, the
/// launches to record `not_started` (see [`LaneFree::abandoned`]).
pub fn lane_busy(run: &str, lane: &str, l: &ledger::Lane) -> Result<Vec<u64>, LaneRefusal> {
    lane_busy_with(run, lane, l, &process::is_alive)
}

/// [`lane_busy`] with the liveness of processes as a parameter (the model test runs it
/// against processes of its own).
pub fn lane_busy_with(run: &str, lane: &str, l: &ledger::Lane, is_alive: &dyn Fn(&ProcessId) -> bool) -> Result<Vec<u64>, LaneRefusal> {
    let mut abandoned = vec![];
    for x in l.launches.iter().filter(|x| x.exited.is_none()) {
        match x.started {
            Some(p) if is_alive(&p) => {
                return Err(LaneRefusal::Alive { run: run.into(), lane: lane.into(), launch: x.launch, pid: p.pid });
            }
            Some(_) => {}
            None => match x.launcher {
                Some(p) if is_alive(&p) => {
                    return Err(LaneRefusal::Starting { run: run.into(), lane: lane.into(), launch: x.launch, launcher: p.pid });
                }
                _ => abandoned.push(x.launch),
            },
        }
    }
    if let Some(last) = l.last().filter(|last| last.collected.is_none()) {
        let refusal = match receipt_at(Path::new(&last.receipt)) {
            ReceiptAt::Absent => None,
            ReceiptAt::File { .. } => {
                Some(LaneRefusal::ReceiptWaiting { run: run.into(), lane: lane.into(), launch: last.launch, receipt: last.receipt.clone() })
            }
            ReceiptAt::NotAFile { what } => Some(LaneRefusal::ReceiptNotAFile {
                run: run.into(),
                lane: lane.into(),
                launch: last.launch,
                receipt: last.receipt.clone(),
                what,
            }),
        };
        if let Some(refusal) = refusal {
            return Err(refusal);
        }
    }
    Ok(abandoned)
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

/// Whether a watcher may start launch `launch` of `run`'s `lane` now: it is recorded as
/// intended, has neither started nor ended, and its run is not finished. Judged under the
/// writer lock with the start's record appended in the same step, so a launch recorded
/// `not_started` by anyone is never started afterwards. The why, when not.
pub fn may_start(state: &LedgerState, run: &str, lane: &str, launch: u64) -> Result<(), String> {
    let r = state.runs.get(run);
    if r.is_some_and(|r| r.finished) {
        return Err(format!("run {run} is finished; launch {launch} of its lane {lane} is not started"));
    }
    match r.and_then(|r| r.lanes.get(lane)).and_then(|l| l.launches.iter().find(|x| x.launch == launch)) {
        None => Err(format!("launch {launch} of {run}/{lane} is not recorded as intended")),
        Some(l) if l.started.is_some() || l.exited.is_some() => {
            Err(format!("launch {launch} of {run}/{lane} has already started or ended"))
        }
        Some(_) => Ok(()),
    }
}

/// The watcher's start: under the writer lock, checks the launch is intended and has
/// neither started nor exited, starts the agent, and records `launch.started` (or
/// `launch.exited` `not_started` when the program cannot be run).
pub fn start_recorded(store: &Store, scope: &Scope, spec: &WatchSpec, stdout: &Path, stderr: &Path) -> Result<WatchStart, JournalError> {
    let written = store.append_with(Some(scope), |state| {
        if let Err(why) = may_start(&state.ledger, &spec.run, &spec.lane, spec.launch) {
            return (vec![], WatchStart::NotMine(why));
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
            Err(e) => (not_started_events(&spec.run, &spec.lane, &[spec.launch]), WatchStart::NotStarted(e)),
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

/// How long the launcher waits for the watcher to record the start.
pub const START_CONFIRM_WAIT: Duration = Duration::from_secs(10);
/// How often the launcher looks for the watcher's record of the start.
const START_POLL: Duration = Duration::from_millis(20);
/// Test seam: the launcher kills itself with SIGKILL right after recording the intent, as
/// a crash between `launch.intended` and `launch.started` would.
#[cfg(feature = "test-support")]
pub const KILL_AFTER_INTENT_VAR: &str = "ABCD_TEST_KILL_AFTER_INTENT";
/// Test seam: the launcher kills itself with SIGKILL right after starting the watcher,
/// before it sees the start recorded.
#[cfg(feature = "test-support")]
pub const KILL_AFTER_WATCHER_VAR: &str = "ABCD_TEST_KILL_AFTER_WATCHER";

/// A launch whose start the watcher recorded.
pub struct Launched {
    pub launch: u64,
    pub process: ProcessId,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// Where the agent runs.
    pub worktree: PathBuf,
    /// The branch of the worktree abcd made for the lane; None in a folder named with --cwd.
    pub branch: Option<String>,
    /// Where abcd looks for the receipt.
    pub receipt: PathBuf,
}

fn absolute(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() { p.to_path_buf() } else { base.join(p) }
}

/// Records the launch before anything starts, then starts its detached watcher (this
/// binary's hidden subcommand) and waits for the watcher's record of the start. The lane
/// runs in the worktree abcd makes for it unless `cwd` names a folder. Uncommitted work
/// there is saved aside first (in a folder abcd did not make, only with `save_aside`), and
/// `on_saved` is told the line that names it, as it is told a note when the lane's plan
/// could not be given its assignment.
pub fn launch(request: &LaunchRequest, place: &Place, on_saved: &mut dyn FnMut(&str)) -> Result<Launched, CommandError> {
    let here = place.cwd();
    for (field, name) in [("run", &request.run), ("lane", &request.lane), ("role", &request.role)] {
        if let Err(r) = ledger::check_name(field, name) {
            return Err(Refusal::new(K::BadName, "launch", format!("the {field} name {}", r.reason)).nothing_recorded().into());
        }
    }
    let Some(words) = request.command.iter().map(|w| w.to_str().map(String::from)).collect::<Option<Vec<String>>>() else {
        return Err(Refusal::new(K::BadValue, "launch", "the command is not valid UTF-8").nothing_recorded().into());
    };
    if let Err(r) = ledger::check_command(&words) {
        return Err(Refusal::new(K::BadValue, "launch", format!("the command {}", r.reason)).nothing_recorded().into());
    }
    let Some(program) = process::resolve_program(&request.command[0]) else {
        return Err(Refusal::new(
            K::NotAProgram,
            "launch",
            format!("the command {:?} is not an executable program (not found on PATH)", words[0]),
        )
        .nothing_recorded()
        .into());
    };
    let folder_refusal = |receipt: &Path| -> CommandError {
        Refusal::new(K::WrongPath, "launch", format!("the receipt path {} is a folder", receipt.display()))
            .instead("name the file the agent will write")
            .into()
    };
    // A receipt path that does not depend on the lane's folder is checked before any is made.
    let early_receipt =
        request.cwd.as_ref().map(|dir| absolute(here, dir)).map_or(request.receipt.clone(), |d| absolute(&d, &request.receipt));
    if early_receipt.is_absolute() && early_receipt.is_dir() {
        return Err(folder_refusal(&early_receipt));
    }
    let wc = lane::open(place)?;
    let (run_name, lane) = (&request.run, &request.lane);
    // Held from the first look until the intent is recorded: racing launches look, make
    // the lane's worktree and judge its work one after another. From the intent on, the
    // record holds the lane (a launch starting), so each later one is refused naming it.
    let held = lane::lock_lane(wc.store.journal().paths().dir(), run_name, lane)?;

    // First look: refuse before making or touching any folder.
    let first = wc.store.append_with(Some(&wc.scope), |state| (vec![], lane_refusal(&state.ledger, run_name, lane)))?;
    if let Err(why) = first.outcome {
        return Err(why.refusal("launch").into());
    }
    let lane_dir = match &request.cwd {
        Some(dir) => absolute(here, dir),
        None => lane::own_worktree(lane::LaneHome::of(&wc), run_name, lane)?,
    };
    let receipt = absolute(&lane_dir, &request.receipt);
    if receipt.is_dir() {
        return Err(folder_refusal(&receipt));
    }
    let status = worktree::status(&lane_dir).map_err(|_| {
        Refusal::new(K::NotInRepository, "launch", format!("{} is not a git worktree", lane_dir.display()))
            .instead("pass the lane's worktree with --cwd")
    })?;
    super::lane_start::prepare(request, &lane_dir, &receipt, on_saved)?;
    let ledger_now = wc.store.current_state()?.state.ledger;
    let receipts = lane::receipts_inside(ledger_now.runs.get(run_name.as_str()).into_iter().flat_map(|r| r.lanes.values()), &lane_dir);
    let work = lane::lane_work(&status.changed, &receipts);
    if !work.is_empty() {
        // The worktree abcd made passed its test in `own_worktree`; a folder named with
        // --cwd is abcd's only when it is a lane's own worktree by the same test.
        let owned = request.cwd.is_none() || lane::own_worktree_at(&ledger_now, &wc.root, run_name, &lane_dir).is_some();
        if !owned && !request.save_aside {
            // Only names a record may hold are shown: a file name can be a secret.
            let (shown, unshown) = ledger::listable_files(&work);
            let more = if unshown > 0 { format!(" and {unshown} not shown") } else { String::new() };
            return Err(Refusal::new(
                K::UncommittedWork,
                "launch",
                format!(
                    "{} holds uncommitted work ({} file(s): {}{more}) and is not a worktree abcd made for {run_name}/{lane}, so abcd leaves it as it is",
                    lane_dir.display(),
                    work.len(),
                    worktree::some_paths(&shown)
                ),
            )
            .nothing_recorded()
            .instead("commit or stash it, pass --save-aside to save it to a ref and reset those files, or drop --cwd to run the lane in a worktree of its own")
            .into());
        }
    }
    let launcher = process::this_process().map_err(CommandError::failed)?;
    let intent = |n: u64| LaunchIntended {
        run: run_name.clone(),
        lane: lane.clone(),
        launch: n,
        role: request.role.clone(),
        command: words.clone(),
        receipt: receipt.display().to_string(),
        worktree: lane_dir.display().to_string(),
        launcher: Some(launcher),
    };
    // The decision and the intent are one step under the writer lock: of launches that
    // race, one is recorded and every other is refused naming it.
    let written = wc.store.append_with(Some(&wc.scope), |state| match lane_refusal(&state.ledger, run_name, lane) {
        Err(why) => (vec![], Err::<u64, Refusal>(why.refusal("launch"))),
        Ok(free) => {
            // Another lane's agent alive or starting in this very folder holds it too.
            let others = state.ledger.runs.get(run_name.as_str()).into_iter().flat_map(|r| &r.lanes).filter(|(name, _)| *name != lane);
            for (name, l) in others {
                if !l.launches.iter().any(|x| Path::new(&x.worktree) == lane_dir) {
                    continue;
                }
                if let Err(why @ (LaneRefusal::Alive { .. } | LaneRefusal::Starting { .. })) = lane_busy(run_name, name, l) {
                    return (
                        vec![],
                        Err(Refusal::new(
                            K::LaneBusy,
                            "launch",
                            format!("{} in {}; one agent works in a folder at a time", why.what_holds(), lane_dir.display()),
                        )),
                    );
                }
            }
            let mut events = free.abandoned_events(run_name, lane);
            events.push(super::caller_event(event::LAUNCH_INTENDED, json!(intent(free.next))));
            (events, Ok(free.next))
        }
    })?;
    drop(held);
    let n = written.outcome?;
    #[cfg(feature = "test-support")]
    if std::env::var_os(KILL_AFTER_INTENT_VAR).is_some() {
        crate::platform::process::kill_this_process();
    }
    // Checked again now the lane is held: a folder swapped since the first check is not
    // saved, reset or started in.
    let not_started = |mut why: Refusal| -> Result<Launched, CommandError> {
        wc.store.append_with(Some(&wc.scope), |_| (not_started_events(run_name, lane, &[n]), ()))?;
        why.why = format!("{}; launch {n} is recorded as never started", why.why);
        Err(why.into())
    };
    let changed = |why: String| Refusal::new(K::NotAbcds, "launch", why);
    let recheck = || -> Result<(), Refusal> {
        let state = wc.store.current_state().map_err(|e| changed(e.to_string()))?.state.ledger;
        let own = state.runs.get(run_name.as_str()).and_then(|r| r.lanes.get(lane.as_str())).and_then(|l| l.own_worktree.clone());
        match (&request.cwd, own) {
            (None, Some(own)) => lane::verify_own_worktree(&wc.root, run_name, lane, &own).map(|_| ()).map_err(|what| {
                changed(format!("the worktree of {run_name}/{lane} changed after it was checked: what is there now is {what}"))
            }),
            (None, None) => Err(changed(format!("the worktree of {run_name}/{lane} is no longer on the record"))),
            (Some(_), _) => Ok(()),
        }
    };
    if let Err(why) = recheck() {
        return not_started(why);
    }
    // Saved aside only by the launch that won the lane, while its intent holds the lane:
    // launches that race never save and reset the same folder at once.
    if !work.is_empty() {
        match lane::save_aside(&wc, run_name, lane, &lane_dir) {
            Ok(line) => on_saved(&line),
            Err(why) => {
                return not_started(Refusal::new(
                    K::UncommittedWork,
                    "launch",
                    format!("the lane's uncommitted work could not be saved aside ({why})"),
                ));
            }
        }
        if let Err(why) = recheck() {
            return not_started(why);
        }
    }

    let outputs = lane::run_folder(wc.store.journal().paths().dir(), run_name).map_err(CommandError::failed)?;
    let spec = WatchSpec {
        working_copy: wc.root.clone(),
        run: run_name.clone(),
        lane: lane.clone(),
        launch: n,
        program,
        cwd: lane_dir.clone(),
        args: request.command.iter().skip(1).cloned().collect(),
    };
    let log = outputs.join(format!("{lane}-{n}.watcher.log"));
    let exe = std::env::current_exe().map_err(CommandError::failed)?;
    if let Err(e) = spec.spawn_watcher(&exe, &log) {
        return not_started(Refusal::new(K::DriveStopped, "launch", format!("the watcher could not be started ({e})")));
    }
    #[cfg(feature = "test-support")]
    if std::env::var_os(KILL_AFTER_WATCHER_VAR).is_some() {
        crate::platform::process::kill_this_process();
    }
    let deadline = Instant::now() + START_CONFIRM_WAIT;
    loop {
        let state = wc.store.current_state()?;
        let last = state
            .state
            .ledger
            .runs
            .get(run_name)
            .and_then(|r| r.lanes.get(lane))
            .and_then(|l| l.launches.iter().find(|x| x.launch == n))
            .cloned();
        match last {
            Some(l) if l.started.is_some() => {
                let process = l.started.expect("checked");
                let branch = request.cwd.is_none().then(|| ledger::lane_branch(run_name, lane));
                return Ok(Launched {
                    launch: n,
                    process,
                    stdout: l.stdout,
                    stderr: l.stderr,
                    worktree: lane_dir.clone(),
                    branch,
                    receipt: receipt.clone(),
                });
            }
            Some(l) if l.exited == Some(ExitStatus::NotStarted) => {
                return Err(Refusal::new(K::NotAProgram, "launch", format!("launch {n} of {run_name}/{lane} could not start its command"))
                    .instead(format!("see {}", log.display()))
                    .into());
            }
            _ if Instant::now() >= deadline => {
                // Settled by the launcher itself, under the lock: a watcher that has not
                // started the agent by now never will, so the lane is not held by a start
                // nobody waits for.
                let settled = wc.store.append_with(Some(&wc.scope), |state| {
                    let pending = state
                        .ledger
                        .runs
                        .get(run_name)
                        .and_then(|r| r.lanes.get(lane))
                        .and_then(|l| l.launches.iter().find(|x| x.launch == n))
                        .is_some_and(|x| x.started.is_none() && x.exited.is_none());
                    if pending { (not_started_events(run_name, lane, &[n]), true) } else { (vec![], false) }
                })?;
                if !settled.outcome {
                    continue;
                }
                return Err(Refusal::new(
                    K::DriveStopped,
                    "launch",
                    format!(
                        "launch {n} of {run_name}/{lane}: its start was not confirmed within {} s, so it is recorded as never started",
                        START_CONFIRM_WAIT.as_secs()
                    ),
                )
                .instead(format!("see {} and launch again", log.display()))
                .into());
            }
            _ => std::thread::sleep(START_POLL),
        }
    }
}

/// How a watcher's work ended.
pub enum Watched {
    /// The agent ran and its exit is recorded.
    Exited,
    /// The agent could not be started (recorded `not_started`): why.
    NotStarted(String),
    /// The launch was not this watcher's to start (started or ended already): why.
    NotMine(String),
}

/// The watcher: starts the agent in its own session and records its start, both under the
/// writer lock and only while its launch is intended and neither started nor ended; then
/// waits and records the exit.
pub fn watch(spec: &WatchSpec) -> Result<Watched, CommandError> {
    let wc = lane::open_at(&spec.working_copy)?;
    let outputs = lane::run_folder(wc.store.journal().paths().dir(), &spec.run).map_err(CommandError::failed)?;
    let stdout = outputs.join(format!("{}-{}.out", spec.lane, spec.launch));
    let stderr = outputs.join(format!("{}-{}.err", spec.lane, spec.launch));
    let child = match start_recorded(&wc.store, &wc.scope, spec, &stdout, &stderr)? {
        WatchStart::Started(child) => child,
        WatchStart::NotStarted(e) => return Ok(Watched::NotStarted(e.to_string())),
        WatchStart::NotMine(why) => return Ok(Watched::NotMine(why.to_string())),
    };
    let status = exit_status(child.wait());
    record_exit(&wc.store, &wc.scope, &spec.run, &spec.lane, spec.launch, status)?;
    Ok(Watched::Exited)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod refusal_kinds {
    use super::LaneRefusal;
    use crate::refusal::RefusalKind as K;

    #[test]
    fn each_reason_a_lane_may_not_launch_is_its_kind_and_names_what_to_do() {
        let (run, lane) = (String::from("r"), String::from("b"));
        let receipt = String::from("/w/receipt.json");
        let cases = [
            (LaneRefusal::NoRun { run: run.clone() }, K::NotFound),
            (LaneRefusal::Finished { run: run.clone() }, K::RunFinished),
            (LaneRefusal::Halted { run: run.clone() }, K::RunHalted),
            (LaneRefusal::NoLane { run: run.clone(), lane: lane.clone(), lanes: vec!["a".into()] }, K::NotFound),
            (LaneRefusal::Starting { run: run.clone(), lane: lane.clone(), launch: 2, launcher: 7 }, K::LaneBusy),
            (LaneRefusal::Alive { run: run.clone(), lane: lane.clone(), launch: 2, pid: 8 }, K::LaneBusy),
            (LaneRefusal::ReceiptWaiting { run: run.clone(), lane: lane.clone(), launch: 2, receipt: receipt.clone() }, K::ReceiptState),
            (LaneRefusal::ReceiptNotAFile { run, lane, launch: 2, receipt, what: "a folder" }, K::ReceiptState),
        ];
        for (why, kind) in cases {
            let r = why.refusal("launch");
            assert_eq!(r.kind, kind, "{why:?}");
            assert!(r.to_string().starts_with(&format!("refused [{}]: launch: ", kind.code())), "{r}");
            assert!(r.instead.as_deref().is_some_and(|i| !i.is_empty()), "{why:?} names what to do instead");
        }
    }

    #[test]
    fn a_finished_run_sends_a_launch_to_a_new_run_and_a_loops_turn_to_a_new_loop() {
        let finished = LaneRefusal::Finished { run: "r".into() };
        assert_eq!(finished.refusal("launch").instead.as_deref(), Some("start a run under a new name"));
        let for_loop = finished.refusal("loop").instead.unwrap_or_default();
        assert!(for_loop.contains("`abcd loop start --run NEW-NAME`"), "{for_loop}");
    }

    #[test]
    fn a_run_or_lane_name_that_looks_like_a_secret_is_never_echoed() {
        let token = format!("ghp_{}", "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d");
        let no_run = LaneRefusal::NoRun { run: token.clone() }.refusal("launch").to_string();
        let no_lane = LaneRefusal::NoLane { run: "r".into(), lane: token, lanes: vec![] }.refusal("launch").to_string();
        assert!(!no_run.contains("ghp_") && !no_lane.contains("ghp_"), "{no_run}\n{no_lane}");
    }
}
