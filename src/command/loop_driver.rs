//! The loop's I/O: the driver that starts each turn as a ledger launch, collects its reply,
//! and resumes after a crash. The record is read from the working copy's folded state
//! (`FoldedState::loops`), as the store reads any state: a projection or checkpoint and
//! the events after it.
//!
//! Every decision is taken under the journal's writer lock from the record and the ledger
//! as the journal holds them then, and appended with the ledger event it goes with in one
//! batch: `loop.turn_intended` with `launch.intended`, `loop.turn_replied` with
//! `receipt.collected`, `loop.turn_abandoned` with `launch.exited` `not_started`. A driver
//! killed at any moment leaves a journal from which the next one carries on:
//!
//! - a turn intended and started, its agent alive: wait for it;
//! - its reply file there: collect it, never run the turn again;
//! - started, then ended by a signal or gone with its exit unrecorded, no reply: the agent
//!   was lost (a crash, a kill of the process tree); `loop.turn_lost` is recorded and the
//!   same step launched again, at most `LOST_TURN_RERUNS` times for one turn, then the run
//!   stops `peer_error`;
//! - started, exited with a code (or its end unknown), no reply: the run stops `peer_error`;
//! - intended, never started, no reply: record the launch `not_started` under the lock
//!   (the watcher starts an agent only under the same lock, and only while its launch has
//!   neither started nor ended, so none starts after this) and launch the same step again.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::command::launch::{self, LaneRefusal, WatchSpec};
use crate::event::{self, Scope};
use crate::journal::{Journal, JournalError};
use crate::ledger::{ExitStatus, LaunchIntended, LedgerState, ReceiptCollected, RunNamed};
use crate::phased::agent::{self, ReplyFile};
use crate::phased::{
    LOOP_PAUSED, LOOP_STOPPED, LOOP_TURN_ABANDONED, LOOP_TURN_INTENDED, LOOP_TURN_LOST, LOOP_TURN_REPLIED, LOST_TURN_RERUNS, LoopPaused,
    LoopRecord, LoopStopped, LostHow, Next, PauseReason, PendingTurn, Role, StopReason, TurnAbandoned, TurnIntended, TurnKind, TurnLost,
    TurnPlan, TurnReplied, next_step,
};
use crate::platform::process::{self, ProcessId};
use crate::refusal::{Refusal, RefusalKind as K};
use crate::store::Store;

use super::new_event;

/// The hidden subcommand that runs one agent turn (fills the template, reads the reply,
/// writes the reply file).
pub const TURN_SUBCOMMAND: &str = "__loop-turn";
/// How often the driver looks at a turn in flight.
pub const POLL: Duration = Duration::from_millis(25);
/// How long a turn this driver launched may stay intended without its watcher recording a
/// start; after it, the launch is recorded `not_started` and the step launched again
/// (safe: the watcher only starts under the lock, while the launch has not ended).
pub const START_WAIT: Duration = Duration::from_secs(10);
/// How long an agent found gone may stay without its recorded exit: its watcher records the
/// exit right after reaping it, so the driver gives it this long before it calls the exit
/// unrecorded (a watcher killed with its agent never records one).
pub const EXIT_RECORD_WAIT: Duration = Duration::from_secs(5);
/// A reply file read back, at most, in bytes (the reply and its JSON quoting).
pub const REPLY_FILE_MAX_BYTES: u64 = 8 * agent::REPLY_MAX_BYTES as u64;

#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Driving cannot go on; the refusal says why and what to run.
    #[error("{0}")]
    Refused(Refusal),
}

impl From<DriveError> for super::CommandError {
    /// The driver's refusal stays a refusal (exit 2, its one shape); anything else is a
    /// failure told by the driver's own words.
    fn from(e: DriveError) -> super::CommandError {
        match e {
            DriveError::Refused(refusal) => super::CommandError::Refused(refusal),
            other => super::CommandError::FailedBy(Box::new(other)),
        }
    }
}

/// The driver's refusal (the loop's driver cannot go on), `why`.
fn stopped(why: String) -> DriveError {
    DriveError::Refused(Refusal::new(K::DriveStopped, "loop", why))
}

/// A command's error met by the driver: its refusal as it is, anything else in its words.
fn drive_refusal(e: super::CommandError) -> DriveError {
    match e {
        super::CommandError::Refused(r) => DriveError::Refused(r),
        other => stopped(other.to_string()),
    }
}

/// How a drive ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DriveEnd {
    Finished(StopReason),
    Paused(PauseReason),
}

/// BLAKE3 of a file's bytes (at most `max`), its length and the bytes.
pub fn read_bounded(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let bytes = crate::platform::fs::read_regular(path, max + 1)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other(format!("it is over {max} bytes")));
    }
    Ok(bytes)
}

fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// One loop's driver.
pub struct Driver<'a> {
    pub store: &'a Store,
    pub scope: &'a Scope,
    /// The working copy's root (the watcher opens its journal from there).
    pub root: PathBuf,
    pub run: String,
    /// abcd itself: the watcher and the turn runner.
    pub exe: PathBuf,
    /// Launches whose watcher this process started, and when (a crash loses this, which is
    /// why a successor never waits for a start it did not ask for).
    spawned: HashMap<(String, u64), Instant>,
    /// Launches whose agent was found gone before its exit was recorded, and when.
    gone_unrecorded: HashMap<(String, u64), Instant>,
    /// This process, recorded as the launcher of every launch it intends: while it lives
    /// no other launch of the lane starts.
    process: Option<ProcessId>,
}

impl<'a> Driver<'a> {
    pub fn new(store: &'a Store, scope: &'a Scope, root: PathBuf, run: String, exe: PathBuf) -> Driver<'a> {
        let process = process::this_process().ok();
        Driver { store, scope, root, run, exe, spawned: HashMap::new(), gone_unrecorded: HashMap::new(), process }
    }

    fn journal(&self) -> &Journal {
        self.store.journal()
    }

    fn run_dir(&self) -> std::io::Result<PathBuf> {
        crate::command::lane::run_folder(self.journal().paths().dir(), &self.run)
    }

    /// The record as the journal holds it now.
    pub fn record(&self) -> Result<LoopRecord, DriveError> {
        self.store.current_state()?.state.loops.loops.remove(&self.run).ok_or_else(|| {
            DriveError::Refused(
                Refusal::new(K::NotFound, "loop", format!("no loop named {:?} in this working copy", self.run))
                    .instead("`abcd loop status` lists them"),
            )
        })
    }

    /// Claims the run for this process: refused while another driver of it lives; a gone
    /// driver's run is taken over on the record (`run.driver_claimed`).
    pub fn claim(&self, me: ProcessId) -> Result<(), DriveError> {
        let run = self.run.clone();
        let written = self.store.append_with(Some(self.scope), |state| {
            let Some(r) = state.ledger.runs.get(&run) else {
                return (
                    vec![],
                    Err(Refusal::new(K::NotFound, "loop drive", format!("no run named {run:?} in this working copy"))
                        .instead("`abcd loop status` lists the loops")),
                );
            };
            if r.driver.process == me {
                return (vec![], Ok(()));
            }
            if process::is_alive(&r.driver.process) {
                return (
                    vec![],
                    Err(Refusal::new(
                        K::RunDriven,
                        "loop drive",
                        format!("loop {run} is driven by a live process (pid {}); a second driver is not started", r.driver.process.pid),
                    )
                    .instead(format!("`abcd loop status {run}` shows it"))),
                );
            }
            let data = crate::ledger::DriverClaimed {
                run: run.clone(),
                driver: crate::ledger::Driver { session: crate::host::session_from_env(), process: me },
                previous: r.driver.clone(),
            };
            (vec![new_event(event::RUN_DRIVER_CLAIMED, json!(data))], Ok(()))
        })?;
        written.outcome.map_err(DriveError::Refused)
    }

    /// Drives the loop until it stops or pauses. `say` gets one line per step taken.
    pub fn drive(&mut self, say: &mut dyn FnMut(&str)) -> Result<DriveEnd, DriveError> {
        loop {
            let record = self.record()?;
            match next_step(&record) {
                Next::Finished(reason) => {
                    self.finish_ledger_run()?;
                    return Ok(DriveEnd::Finished(reason));
                }
                Next::Paused(reason) => return Ok(DriveEnd::Paused(reason)),
                Next::RecordPause(reason) => {
                    if let Some(line) = self.record_pause(&record, reason)? {
                        say(&line);
                    }
                }
                Next::Await(p) => {
                    if let Some(line) = self.await_turn(&record, &p)? {
                        say(&line);
                    }
                }
                Next::Turn(plan) => {
                    if let Some(line) = self.start_turn(&record, &plan)? {
                        say(&line);
                    }
                }
            }
        }
    }

    /// Records the pause the step machine asks for, under the lock and only while it still
    /// asks for it (a control from another process may have got in first).
    fn record_pause(&self, record: &LoopRecord, reason: PauseReason) -> Result<Option<String>, DriveError> {
        let run = self.run.clone();
        let written = self.store.append_with(Some(self.scope), |state| {
            if state.loops.loops.get(&run).map(next_step) != Some(Next::RecordPause(reason)) {
                return (vec![], false);
            }
            (vec![new_event(LOOP_PAUSED, json!(LoopPaused { run: run.clone(), reason: Some(reason) }))], true)
        })?;
        Ok(written.outcome.then(|| match reason {
            PauseReason::MaxTurns => format!(
                "{} turns ran without the completion signal (--max-turns {}): paused",
                crate::phased::turns_since_resume(record),
                record.config.max_turns
            ),
            PauseReason::Manual | PauseReason::PhaseNotConverged => "paused".to_string(),
        }))
    }

    fn ledger(&self) -> Result<LedgerState, DriveError> {
        Ok(self.store.current_state()?.state.ledger)
    }

    /// Starts `plan` as a ledger launch: the prompt file first (it is the same for the same
    /// step, so one left by a crash is simply written again), then, under the lock and only
    /// if the record still says this step, `launch.intended` with `loop.turn_intended`, then
    /// the watcher.
    fn start_turn(&mut self, record: &LoopRecord, plan: &TurnPlan) -> Result<Option<String>, DriveError> {
        let role = plan.kind.role();
        let lane = role.lane();
        let agent_spec = record.config.agent(role).clone();
        self.ensure_own_worktree(&agent_spec.worktree)?;
        super::lane_start::ensure_loop_hooks(&self.root, &self.run, Path::new(&agent_spec.worktree)).map_err(drive_refusal)?;
        let quoted = match &plan.quotes {
            None => None,
            Some(q) => {
                let bytes = read_bounded(Path::new(&q.reply_file), REPLY_FILE_MAX_BYTES)
                    .map_err(|e| stopped(format!("the reply of turn {} at {} cannot be read ({e})", q.turn, q.reply_file)))?;
                let reply = ReplyFile::parse(&bytes).map_err(|e| stopped(format!("the reply file {} {e}", q.reply_file)))?;
                Some((reply.reply, q.reply_file.clone()))
            }
        };
        let prompt = agent::build_prompt(&record.config, plan.kind, quoted.as_ref().map(|(t, f)| (t.as_str(), f.as_str())));
        let run_dir = self.run_dir()?;
        let turns_dir = run_dir.join("turns");
        std::fs::create_dir_all(&turns_dir)?;
        let prompt_file = turns_dir.join(format!("turn-{}.prompt", plan.turn));
        crate::journal::storage::write_atomic(&crate::journal::storage::RealDisk, &prompt_file, prompt.as_bytes(), true)?;
        // The turn runner would find out too, but only after the turn is on the record.
        if process::resolve_program(std::ffi::OsStr::new(&agent_spec.template[0])).is_none() {
            return Err(DriveError::Refused(
                Refusal::new(
                    K::NotAProgram,
                    "loop",
                    format!(
                        "the {lane}'s program {:?} is not an executable program (not found on PATH) any more; the loop waits at turn {}",
                        agent_spec.template[0], plan.turn
                    ),
                )
                .instead(format!("`abcd loop drive {}` when it is back", self.run)),
            ));
        }
        let run = self.run.clone();
        let command = |n: u64| -> Vec<String> {
            let mut words = vec![
                self.exe.display().to_string(),
                TURN_SUBCOMMAND.to_string(),
                "--run".into(),
                run.clone(),
                "--turn".into(),
                plan.turn.to_string(),
                "--phase".into(),
                plan.phase.to_string(),
                "--round".into(),
                plan.round.to_string(),
                "--kind".into(),
                plan.kind.name().into(),
                "--reader".into(),
                agent_spec.reader.name().into(),
                "--prompt-file".into(),
                prompt_file.display().to_string(),
                "--reply-file".into(),
                reply_path(&run_dir, lane, n).display().to_string(),
            ];
            if let Some(s) = &plan.session {
                words.push("--session".into());
                words.push(s.clone());
            }
            words.push("--".into());
            words.extend(agent_spec.template.iter().cloned());
            words
        };
        let written = self.store.append_with(Some(self.scope), |state| {
            match state.loops.loops.get(&run).map(next_step) {
                Some(Next::Turn(now)) if now == *plan => {}
                // A control or another driver got in first: look again.
                _ => return (vec![], Err(Retry::Again)),
            }
            let free = match launch::lane_refusal(&state.ledger, &run, lane) {
                Ok(free) => free,
                Err(LaneRefusal::Alive { .. } | LaneRefusal::Starting { .. }) => return (vec![], Err(Retry::Wait)),
                Err(why) => {
                    let mut refusal = why.refusal("loop");
                    refusal.why = format!("turn {} cannot start: {}", plan.turn, refusal.why);
                    return (vec![], Err(Retry::Fail(DriveError::Refused(refusal))));
                }
            };
            let n = free.next;
            let words = command(n);
            if let Err(r) = crate::ledger::check_command(&words) {
                return (vec![], Err(Retry::Fail(stopped(format!("turn {}: the command {}", plan.turn, r.reason)))));
            }
            let reply_file = reply_path(&run_dir, lane, n).display().to_string();
            let intended = LaunchIntended {
                run: run.clone(),
                lane: lane.into(),
                launch: n,
                role: lane.into(),
                command: words,
                receipt: reply_file.clone(),
                worktree: agent_spec.worktree.clone(),
                launcher: self.process,
            };
            let turn = TurnIntended {
                run: run.clone(),
                turn: plan.turn,
                phase: plan.phase,
                round: plan.round,
                kind: plan.kind,
                launch: n,
                prompt_blake3: blake3_hex(prompt.as_bytes()),
                prompt_bytes: prompt.len() as u64,
                reply_file,
            };
            let mut events = free.abandoned_events(&run, lane);
            events.extend([new_event(event::LAUNCH_INTENDED, json!(intended)), new_event(LOOP_TURN_INTENDED, json!(turn))]);
            (events, Ok(intended))
        })?;
        let intended = match written.outcome {
            Ok(i) => i,
            Err(Retry::Again) => return Ok(None),
            Err(Retry::Wait) => {
                std::thread::sleep(POLL);
                return Ok(None);
            }
            Err(Retry::Fail(e)) => return Err(e),
        };
        let spec = WatchSpec {
            working_copy: self.root.clone(),
            run: run.clone(),
            lane: lane.into(),
            launch: intended.launch,
            program: self.exe.clone(),
            cwd: PathBuf::from(&agent_spec.worktree),
            args: intended.command.iter().skip(1).map(OsString::from).collect(),
        };
        let log = run_dir.join(format!("{lane}-{}.watcher.log", intended.launch));
        self.spawned.insert((lane.to_string(), intended.launch), Instant::now());
        if let Err(e) = spec.spawn_watcher(&self.exe, &log) {
            // Nothing started: record it so, and let the next look launch the step again.
            self.abandon(plan.turn, role, intended.launch)?;
            return Err(stopped(format!("the watcher of turn {} could not be started ({e}); nothing ran", plan.turn)));
        }
        Ok(Some(format!(
            "turn {}: {} of phase {}{} sent to the {lane} (launch {})",
            plan.turn,
            plan.kind.name(),
            plan.phase,
            if plan.round > 0 { format!(", round {}", plan.round) } else { String::new() },
            intended.launch
        )))
    }

    /// One look at the turn in flight: collect its reply, stop on its failure, abandon a
    /// launch that never started, or wait a moment.
    fn await_turn(&mut self, record: &LoopRecord, p: &PendingTurn) -> Result<Option<String>, DriveError> {
        let lane = p.role().lane();
        let ledger = self.ledger()?;
        let launch = ledger
            .runs
            .get(&self.run)
            .and_then(|r| r.lanes.get(lane))
            .and_then(|l| l.launches.iter().find(|x| x.launch == p.launch))
            .cloned();
        let Some(launch) = launch else {
            return self.stop_peer_error(p, format!("launch {} of the {lane} is not in the ledger", p.launch)).map(Some);
        };
        let receipt = Path::new(&launch.receipt);
        if launch.collected.is_some() || receipt.is_file() {
            return self.collect(record, p).map(Some);
        }
        let alive = launch.started.is_some_and(|pid| launch.exited.is_none() && process::is_alive(&pid));
        if alive {
            std::thread::sleep(POLL);
            return Ok(None);
        }
        if launch.started.is_none() && launch.exited == Some(ExitStatus::NotStarted) {
            // Settled as never started by someone else (a launch of the lane, or a finish,
            // that found its launcher gone): no agent ran, so the step goes again.
            return self.abandon(p.turn, p.role(), p.launch).map(Some);
        }
        if launch.started.is_none() && launch.exited.is_none() {
            // Only a start this process asked for is waited for, and for START_WAIT of
            // elapsed (monotonic) time: a wall clock set back must not stretch the wait.
            let waiting = self.spawned.get(&(lane.to_string(), p.launch)).is_some_and(|asked| asked.elapsed() < START_WAIT);
            if waiting {
                std::thread::sleep(POLL);
                return Ok(None);
            }
            return self.abandon(p.turn, p.role(), p.launch).map(Some);
        }
        // Ended (or gone): the reply file is written before the turn runner exits, so look
        // once more before calling it failed.
        if receipt.is_file() {
            return Ok(None);
        }
        let how = match launch.exited {
            // Killed, not failed: a crash or a kill of its process tree took the agent.
            Some(ExitStatus::Signal { signal }) => return self.lose(p, LostHow::Signal, Some(signal)).map(Some),
            Some(status) => crate::ledger::exit_words(status),
            None => {
                // The agent can be reaped a moment before its watcher appends the exit.
                let since = *self.gone_unrecorded.entry((lane.to_string(), p.launch)).or_insert_with(Instant::now);
                if since.elapsed() < EXIT_RECORD_WAIT {
                    std::thread::sleep(POLL);
                    return Ok(None);
                }
                // Its watcher went with it (a machine crash, a kill of the whole tree).
                return self.lose(p, LostHow::Gone, None).map(Some);
            }
        };
        let detail = format!(
            "turn {} ({} of phase {}): launch {} of the {lane} ended ({how}) without a reply",
            p.turn,
            p.kind.name(),
            p.phase,
            p.launch
        );
        self.stop_peer_error(p, detail).map(Some)
    }

    /// The turn's agent was lost: under the lock, only while the turn is still the one in
    /// flight and its launch still reads as lost (started; ended by that signal, or with no
    /// exit recorded and its process gone; no reply), records `loop.turn_lost` so the step
    /// runs again; or, when the turn was lost [`LOST_TURN_RERUNS`] times already, stops the
    /// run `peer_error` naming the count.
    fn lose(&mut self, p: &PendingTurn, how: LostHow, signal: Option<i32>) -> Result<String, DriveError> {
        let run = self.run.clone();
        let lane = p.role().lane();
        let words = match signal {
            Some(signal) => crate::ledger::exit_words(ExitStatus::Signal { signal }),
            None => "gone, its exit not recorded".to_string(),
        };
        let at = format!("turn {} ({} of phase {}): launch {} of the {lane}", p.turn, p.kind.name(), p.phase, p.launch);
        let root = self.root.display().to_string();
        let written = self.store.append_with(Some(self.scope), |state| {
            let Some(record) = state.loops.loops.get(&run).filter(|r| r.pending.as_ref() == Some(p)) else {
                return (vec![], None);
            };
            let found =
                state.ledger.runs.get(&run).and_then(|r| r.lanes.get(lane)).and_then(|l| l.launches.iter().find(|x| x.launch == p.launch));
            let still_lost = found.is_some_and(|l| {
                let ended = match (how, l.exited) {
                    (LostHow::Signal, Some(ExitStatus::Signal { signal: n })) => Some(n) == signal,
                    (LostHow::Gone, None) => l.started.is_some_and(|pid| !process::is_alive(&pid)),
                    _ => false,
                };
                ended && l.started.is_some() && l.collected.is_none() && !Path::new(&l.receipt).exists()
            });
            if !still_lost {
                return (vec![], None);
            }
            let losses = record.due_turn_losses + 1;
            if record.due_turn_losses >= LOST_TURN_RERUNS {
                let detail = format!(
                    "{at} was lost ({words}) without a reply; the turn's agent was lost {} (a turn runs again after at most {LOST_TURN_RERUNS})",
                    crate::phased::times(u64::from(losses))
                );
                let detail = crate::secrets::one_line_after_scan(&detail, crate::secrets::Bound::Bytes(crate::phased::DETAIL_MAX_BYTES)).ok();
                let stopped = LoopStopped { run: run.clone(), reason: StopReason::PeerError, detail: detail.clone() };
                let finished = RunNamed { run: run.clone(), working_copy: Some(root.clone()) };
                let events = vec![new_event(LOOP_STOPPED, json!(stopped)), new_event(event::RUN_FINISHED, json!(finished))];
                return (events, Some(Err(detail.unwrap_or_else(|| "a turn's agent was lost too often".into()))));
            }
            let lost = TurnLost { run: run.clone(), turn: p.turn, launch: p.launch, how, signal };
            (vec![new_event(LOOP_TURN_LOST, json!(lost))], Some(Ok(losses)))
        })?;
        self.spawned.remove(&(lane.to_string(), p.launch));
        self.gone_unrecorded.remove(&(lane.to_string(), p.launch));
        Ok(match written.outcome {
            None => format!("turn {}: its launch {} moved on; looking again", p.turn, p.launch),
            Some(Ok(losses)) => format!(
                "{at} was lost ({words}) without a reply; recorded so, and the turn runs again (loss {losses} of at most {LOST_TURN_RERUNS} run again)"
            ),
            Some(Err(detail)) => {
                self.index_finished();
                format!("stopped (peer_error): {detail}")
            }
        })
    }

    /// Records launch `launch` (turn `turn`, of `role`) `not_started` and the turn
    /// abandoned, under the lock and only if it still has neither started nor ended.
    fn abandon(&mut self, turn: u64, role: Role, launch: u64) -> Result<String, DriveError> {
        let run = self.run.clone();
        let lane = role.lane();
        let written = self.store.append_with(Some(self.scope), |state| {
            let found =
                state.ledger.runs.get(&run).and_then(|r| r.lanes.get(lane)).and_then(|l| l.launches.iter().find(|x| x.launch == launch));
            let in_flight =
                state.loops.loops.get(&run).and_then(|r| r.pending.as_ref()).is_some_and(|p| p.turn == turn && p.launch == launch);
            match found {
                Some(l) if l.started.is_none() && l.exited.is_none() && !Path::new(&l.receipt).exists() => {
                    let abandoned = TurnAbandoned { run: run.clone(), turn, launch };
                    let mut events = launch::not_started_events(&run, lane, &[launch]);
                    events.push(new_event(LOOP_TURN_ABANDONED, json!(abandoned)));
                    (events, true)
                }
                // Already recorded never started: only the turn is left to abandon.
                Some(l)
                    if in_flight && l.started.is_none() && l.exited == Some(ExitStatus::NotStarted) && !Path::new(&l.receipt).exists() =>
                {
                    let abandoned = TurnAbandoned { run: run.clone(), turn, launch };
                    (vec![new_event(LOOP_TURN_ABANDONED, json!(abandoned))], true)
                }
                _ => (vec![], false),
            }
        })?;
        self.spawned.remove(&(lane.to_string(), launch));
        Ok(if written.outcome {
            format!("turn {}: launch {} of the {lane} never started (no agent ran); recorded so, and the step goes again", turn, launch)
        } else {
            format!("turn {}: launch {} of the {lane} started after all; waiting for it", turn, launch)
        })
    }

    /// Collects the turn's reply: `receipt.collected` (unless someone collected it already)
    /// with `loop.turn_replied`, under the lock, only while the turn is still the one in
    /// flight. A reply that cannot be read stops the run `peer_error`.
    fn collect(&mut self, record: &LoopRecord, p: &PendingTurn) -> Result<String, DriveError> {
        let lane = p.role().lane();
        let bytes = match read_bounded(Path::new(&p.reply_file), REPLY_FILE_MAX_BYTES) {
            Ok(b) => b,
            Err(e) => {
                return self.stop_peer_error(p, format!("turn {}: the reply file of launch {} cannot be read ({e})", p.turn, p.launch));
            }
        };
        let reply = match ReplyFile::parse(&bytes) {
            Ok(r) => r,
            Err(e) => return self.stop_peer_error(p, format!("turn {}: the reply file of launch {} {e}", p.turn, p.launch)),
        };
        let signal = match p.kind {
            TurnKind::Advance => agent::is_completion(&reply.reply, &record.config.completion_signal),
            TurnKind::Review => agent::has_stop_signal(&reply.reply, &record.config.review_stop_signal),
            TurnKind::Feedback => false,
        };
        let hash = blake3_hex(&bytes);
        let run = self.run.clone();
        let written = self.store.append_with(Some(self.scope), |state| {
            let still = state.loops.loops.get(&run).and_then(|r| r.pending.clone());
            if still.as_ref() != Some(p) {
                return (vec![], false);
            }
            let mut events = vec![];
            let launch =
                state.ledger.runs.get(&run).and_then(|r| r.lanes.get(lane)).and_then(|l| l.launches.iter().find(|x| x.launch == p.launch));
            if launch.is_some_and(|l| l.collected.is_none()) {
                let c = ReceiptCollected {
                    run: run.clone(),
                    lane: lane.into(),
                    launch: p.launch,
                    blake3: hash.clone(),
                    bytes: bytes.len() as u64,
                    hashed_bytes: None,
                };
                events.push(new_event(event::RECEIPT_COLLECTED, json!(c)));
            }
            let replied = TurnReplied {
                run: run.clone(),
                turn: p.turn,
                launch: p.launch,
                reply_blake3: hash.clone(),
                reply_bytes: bytes.len() as u64,
                signal,
                session: reply.session.clone(),
            };
            events.push(new_event(LOOP_TURN_REPLIED, json!(replied)));
            if p.kind == TurnKind::Advance && signal {
                events.push(new_event(
                    event::RUN_FINISHED,
                    json!(RunNamed { run: run.clone(), working_copy: Some(self.root.display().to_string()) }),
                ));
            }
            (events, true)
        })?;
        self.spawned.remove(&(lane.to_string(), p.launch));
        if !written.outcome {
            return Ok(format!("turn {}: already recorded", p.turn));
        }
        if p.kind == TurnKind::Advance && signal {
            self.index_finished();
        }
        let what = match (p.kind, signal) {
            (TurnKind::Advance, true) => "the completion signal: no phase left".to_string(),
            (TurnKind::Advance, false) => format!("phase {} implemented", p.phase),
            (TurnKind::Review, true) => format!("phase {} converged in round {}", p.phase, p.round),
            (TurnKind::Review, false) if p.round >= record.config.max_rounds => {
                format!("phase {} did not converge in {} rounds: paused", p.phase, p.round)
            }
            (TurnKind::Review, false) => format!("feedback on phase {} (round {})", p.phase, p.round),
            (TurnKind::Feedback, _) => format!("feedback on phase {} answered", p.phase),
        };
        Ok(format!("turn {}: the {lane} replied ({} bytes): {what}", p.turn, reply.reply.len()))
    }

    /// Stops the run `peer_error` (and finishes its ledger run), under the lock, if the
    /// turn is still the one in flight.
    fn stop_peer_error(&mut self, p: &PendingTurn, detail: String) -> Result<String, DriveError> {
        let run = self.run.clone();
        // Scanned whole, as it arrived and as one line, before the cut: a detail that
        // carries a secret is left out.
        let detail = crate::secrets::one_line_after_scan(&detail, crate::secrets::Bound::Bytes(crate::phased::DETAIL_MAX_BYTES)).ok();
        let written = self.store.append_with(Some(self.scope), |state| {
            let still = state.loops.loops.get(&run).and_then(|r| r.pending.clone());
            if still.as_ref() != Some(p) {
                return (vec![], false);
            }
            let stopped = LoopStopped { run: run.clone(), reason: StopReason::PeerError, detail: detail.clone() };
            let finished = RunNamed { run: run.clone(), working_copy: Some(self.root.display().to_string()) };
            (vec![new_event(LOOP_STOPPED, json!(stopped)), new_event(event::RUN_FINISHED, json!(finished))], true)
        })?;
        if written.outcome {
            self.index_finished();
        }
        Ok(format!("stopped (peer_error): {}", detail.unwrap_or_else(|| "a turn failed".into())))
    }

    /// The ledger run of a stopped loop is finished too (a stop by another process
    /// records both; this covers a journal where only the loop's stop landed).
    fn finish_ledger_run(&self) -> Result<(), DriveError> {
        let run = self.run.clone();
        let root = self.root.display().to_string();
        let written = self.store.append_with(Some(self.scope), |state| match state.ledger.runs.get(&run) {
            Some(r) if !r.finished => {
                (vec![new_event(event::RUN_FINISHED, json!(RunNamed { run: run.clone(), working_copy: Some(root.clone()) }))], true)
            }
            _ => (vec![], false),
        })?;
        if written.outcome {
            self.index_finished();
        }
        Ok(())
    }

    /// Makes the loop's own worktree when its folder is missing: a crash between recording
    /// the loop and making it, or a folder deleted by hand. A folder the person named is
    /// theirs and is never made.
    fn ensure_own_worktree(&self, folder: &str) -> Result<(), DriveError> {
        let lane = crate::phased::Role::Implementer.lane();
        let own = crate::places::lane_worktree(&self.root, &self.run, lane).ok();
        if Path::new(folder).is_dir() || own.as_deref() != Some(Path::new(folder)) {
            return Ok(());
        }
        let home = super::lane::LaneHome { store: self.store, scope: self.scope, root: &self.root };
        super::lane::own_worktree(home, &self.run, lane).map(|_| ()).map_err(drive_refusal)
    }

    /// The machine index learns the run is over (best effort, as `abcd run finish` does:
    /// a run missing there is still read from its own working copy).
    fn index_finished(&self) {
        let _ = finish_in_index(&self.run, &self.root.display().to_string());
    }
}

/// Records `run.finished` in the machine index, unless it is there.
pub fn finish_in_index(run: &str, root: &str) -> Result<(), super::CommandError> {
    let (paths, scope) = crate::places::machine_journal()?;
    let machine = Store::new(crate::places::open_scoped_for_verb(crate::journal::storage::RealDisk::shared(), paths, &scope)?);
    let data = RunNamed { run: run.into(), working_copy: Some(root.into()) };
    machine.append_with(Some(&scope), |state| match state.ledger.index.get(run) {
        Some(entry) if !entry.finished => (vec![new_event(event::RUN_FINISHED, json!(data))], ()),
        _ => (vec![], ()),
    })?;
    Ok(())
}

/// Where launch `n` of `lane` writes its reply.
pub fn reply_path(run_dir: &Path, lane: &str, n: u64) -> PathBuf {
    run_dir.join(format!("{lane}-{n}.reply.json"))
}

enum Retry {
    /// The record moved on: look again.
    Again,
    /// The lane's last agent is still alive: wait a moment.
    Wait,
    Fail(DriveError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::error::Blame;

    #[test]
    fn the_drivers_refusal_stays_a_refusal_and_its_failure_a_failure() {
        let refused = super::super::CommandError::from(DriveError::Refused(Refusal::new(K::NotFound, "loop", "no loop named \"x\"")));
        assert_eq!(refused.blame(), Blame::Refused, "{refused}");
        assert!(refused.to_string().starts_with("refused [not-found]: loop: "), "{refused}");
        let stopped = super::super::CommandError::from(stopped("a reply file is gone".into()));
        assert_eq!(stopped.blame(), Blame::Refused, "{stopped}");
        let failed = super::super::CommandError::from(DriveError::Io(std::io::Error::other("the disk is full")));
        assert_eq!(failed.blame(), Blame::Failed, "{failed}");
    }
}
