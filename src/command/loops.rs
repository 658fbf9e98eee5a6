//! `abcd loop start|status|pause|resume|stop|skip|retry|drive` (SPEC §8) and the hidden
//! turn runner `__loop-turn`: the loop recorded, controlled and listed, its driver started
//! or claimed, and one agent turn run. The loop's logic is in `crate::phased`; the driver
//! is `loop_driver`. Every change is decided under the journal's writer lock from the
//! folded record.

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::CommandError;
use super::caller_event as new_event;
use super::lane::{self, WorkingCopy};
use super::loop_driver::{self, DriveEnd, Driver};
use super::run::with_causes;
use crate::event;
use crate::ledger::{self, Driver as LedgerDriver, RunNamed, RunStarted};
use crate::phased::agent::{self, Reader, ReplyFile};
use crate::phased::{
    self, AgentSpec, Config, Control, IMPLEMENTER_LANE, LOOP_STARTED, LOOP_STOPPED, LoopListing, LoopRecord, LoopStarted, LoopStopped,
    PauseReason, PendingTurn, REVIEWER_LANE, RunState, StopReason,
};
use crate::places::Place;
use crate::platform::process::{self, ProcessId};
use crate::refusal::{Refusal, RefusalKind as K};

/// How long a detached driver waits for the `abcd loop start` that started it to exit
/// before it claims the run.
pub const STARTER_EXIT_WAIT: Duration = Duration::from_secs(10);
/// How often a detached driver looks whether its starter has exited.
const STARTER_POLL: Duration = Duration::from_millis(10);

/// An error the person cannot fix by asking differently, worded as the CLI prints one: the
/// error and every cause under it.
fn failed(e: &dyn std::error::Error) -> CommandError {
    CommandError::Failed(with_causes(e))
}

fn current_exe() -> Result<PathBuf, CommandError> {
    std::env::current_exe().map_err(|e| failed(&e))
}

fn this_process() -> Result<ProcessId, CommandError> {
    process::this_process().map_err(|e| failed(&e))
}

fn no_loop(what: &str, run: &str) -> Refusal {
    Refusal::new(K::NotFound, what, format!("no loop named {} in this working copy", ledger::shown_name(run)))
        .instead("`abcd loop status` lists them")
}

/// Splits a template the way a POSIX shell splits words: white space separates, single
/// quotes keep everything, double quotes keep all but `\"` and `\\`, a backslash outside
/// quotes keeps the next character. No expansion of any kind.
pub fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err("has an unclosed single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\')) => cur.push(x),
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => return Err("has an unclosed double quote".into()),
                        },
                        Some(x) => cur.push(x),
                        None => return Err("has an unclosed double quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(x) => cur.push(x),
                    None => return Err("ends with a lone backslash".into()),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// One agent of a loop as asked for: its command template (one string, split like a shell
/// does), its reader, and where it runs (default: the working copy's root).
pub struct AgentRequest {
    pub template: String,
    pub reader: Reader,
    pub cwd: Option<PathBuf>,
}

/// `abcd loop start` as asked for.
pub struct StartRequest {
    pub implementer: AgentRequest,
    pub reviewer: AgentRequest,
    pub checklist: Option<String>,
    pub max_rounds: u32,
    pub max_turns: u64,
    pub completion_signal: String,
    pub review_stop_signal: String,
    /// Default: seed 001's, naming the completion signal.
    pub advance_prompt: Option<String>,
    /// Default: seed 001's, naming the review stop signal.
    pub review_prompt: Option<String>,
    pub feedback_prompt: String,
    /// Default: loop-<UTC second>, with `-2`, `-3`, … when that run exists.
    pub run: Option<String>,
    pub detach: bool,
}

/// A loop recorded by `abcd loop start`.
pub struct Started {
    pub run: String,
    pub how: StartedHow,
}

pub enum StartedHow {
    /// Its driver runs in the background.
    Detached { pid: ProcessId, log: PathBuf },
    /// This process drives it: [`drive_started`] next.
    Here(Box<WorkingCopy>),
}

/// How a drive ended, with the loop's summary line as it stands then.
pub enum LoopEnd {
    Finished { reason: StopReason, summary: String },
    Paused { reason: PauseReason, summary: String },
}

/// `abcd loop start`: checks the templates, folders, checklist and config, records the run
/// (lanes implementer and reviewer, this process its driver) and the loop in one batch,
/// tells the machine index, and with `detach` starts the driver in the background.
/// `on_index_problem` is told at once when the machine index could not learn of the run
/// (best effort: `abcd resume` run in the working copy still finds the loop).
pub fn start(place: &Place, a: StartRequest, on_index_problem: &mut dyn FnMut(&str)) -> Result<Started, CommandError> {
    let here = place.cwd().to_path_buf();
    let wc = match lane::open(place) {
        Ok(wc) => wc,
        Err(e) => {
            return Err(Refusal::new(K::NotInRepository, "loop start", format!("{e:#}"))
                .instead("run `abcd loop start` in a working copy `abcd init` made managed")
                .into());
        }
    };
    let mut agents = vec![];
    let mut own_worktree_asked = false;
    // The two agents share one folder unless both are named: an agent without one works
    // where the other was told to, and abcd's own worktree is for when neither was.
    let (mut implementer, mut reviewer) = (a.implementer, a.reviewer);
    match (&implementer.cwd, &reviewer.cwd) {
        (Some(d), None) => reviewer.cwd = Some(d.clone()),
        (None, Some(d)) => implementer.cwd = Some(d.clone()),
        _ => {}
    }
    for (field, asked) in [("implementer", implementer), ("reviewer", reviewer)] {
        let words = split_words(&asked.template)
            .map_err(|why| Refusal::new(K::BadValue, "loop start", format!("the {field} template {why}")).nothing_recorded())?;
        if let Err(e) = agent::check_template(field, &words) {
            return Err(Refusal::new(K::BadValue, "loop start", format!("the {e}"))
                .nothing_recorded()
                .instead(format!("for example --{field} \"claude -p {{prompt}} --resume {{session}} --output-format json\""))
                .into());
        }
        if process::resolve_program(std::ffi::OsStr::new(&words[0])).is_none() {
            return Err(Refusal::new(
                K::NotAProgram,
                "loop start",
                format!("the {field}'s program {:?} is not an executable program (not found on PATH)", words[0]),
            )
            .nothing_recorded()
            .into());
        }
        let dir = match asked.cwd {
            Some(d) if d.is_absolute() => d,
            Some(d) => here.join(d),
            None => {
                // Filled in under the lock, once the run's name is chosen.
                own_worktree_asked = true;
                agents.push(AgentSpec { template: words, reader: asked.reader, worktree: String::new() });
                continue;
            }
        };
        if !dir.is_dir() {
            return Err(Refusal::new(K::WrongPath, "loop start", format!("the {field}'s folder {} is not a folder", dir.display()))
                .nothing_recorded()
                .into());
        }
        agents.push(AgentSpec { template: words, reader: asked.reader, worktree: dir.display().to_string() });
    }
    let reviewer = agents.pop().expect("two agents");
    let implementer = agents.pop().expect("two agents");
    if let Some(c) = &a.checklist
        && !here.join(c).is_file()
    {
        return Err(Refusal::new(K::WrongPath, "loop start", format!("the checklist {c} is not a file")).nothing_recorded().into());
    }
    if own_worktree_asked {
        own_worktree_possible(&wc, &here, a.checklist.as_deref())?;
    }
    let config = Config {
        implementer,
        reviewer,
        advance_prompt: a.advance_prompt.unwrap_or_else(|| agent::default_advance_prompt(&a.completion_signal, a.checklist.as_deref())),
        review_prompt: a.review_prompt.unwrap_or_else(|| agent::default_review_prompt(&a.review_stop_signal)),
        checklist: a.checklist,
        max_rounds: a.max_rounds,
        max_turns: a.max_turns,
        completion_signal: a.completion_signal,
        review_stop_signal: a.review_stop_signal,
        feedback_prompt: a.feedback_prompt,
    };
    // The check sees a stand-in for an own worktree's path; the real one is filled in
    // under the lock.
    let mut checked = config.clone();
    for agent in [&mut checked.implementer, &mut checked.reviewer] {
        if agent.worktree.is_empty() {
            agent.worktree = wc.root.display().to_string();
        }
    }
    if let Err(e) = phased::check_config(&checked) {
        return Err(Refusal::new(K::BadValue, "loop start", format!("--{e}")).nothing_recorded().into());
    }
    if let Some(run) = &a.run
        && let Err(r) = ledger::check_name("run", run)
    {
        return Err(Refusal::new(K::BadName, "loop start", format!("the run name {}", r.reason)).nothing_recorded().into());
    }
    let at = crate::clock::now()?;
    let me = this_process()?;
    let driver = LedgerDriver { session: crate::host::session_from_env(), process: me };
    let working_copy = wc.root.display().to_string();
    // The name is chosen under the writer lock, so a default name is free when it lands.
    let written = wc.store.append_with(Some(&wc.scope), |state| {
        let taken = |name: &str| state.ledger.runs.contains_key(name) || state.loops.loops.contains_key(name);
        let run = match a.run {
            Some(run) if taken(&run) => {
                return (
                    vec![],
                    Err(Refusal::new(K::NameTaken, "loop start", format!("a run named {run} exists in this working copy"))
                        .instead("name the loop with --run NEW-NAME")),
                );
            }
            Some(run) => run,
            None => match phased::default_run_name(at, taken) {
                Some(run) => run,
                None => {
                    return (
                        vec![],
                        Err(Refusal::new(
                            K::NameTaken,
                            "loop start",
                            format!("the {} default loop names of this second are taken", phased::DEFAULT_NAMES_PER_SECOND),
                        )
                        .instead("name the loop with --run NEW-NAME")),
                    );
                }
            },
        };
        let mut config = config;
        if own_worktree_asked {
            // Both agents share the implementer lane's worktree, as they would share a
            // checkout: the reviewer reads the work where it was done.
            let path = match crate::places::lane_worktree(&wc.root, &run, IMPLEMENTER_LANE) {
                Ok(p) => p.display().to_string(),
                Err(e) => return (vec![], Err(Refusal::new(K::BadName, "loop start", e.to_string()).nothing_recorded())),
            };
            for agent in [&mut config.implementer, &mut config.reviewer] {
                if agent.worktree.is_empty() {
                    agent.worktree = path.clone();
                }
            }
        }
        let started = RunStarted { run: run.clone(), working_copy, lanes: vec![IMPLEMENTER_LANE.into(), REVIEWER_LANE.into()], driver };
        let data = LoopStarted { run, config };
        (vec![new_event(event::RUN_STARTED, json!(started)), new_event(LOOP_STARTED, json!(data))], Ok(started))
    })?;
    let started = written.outcome?;
    let run = started.run.clone();
    if own_worktree_asked && let Err(e) = super::lane::own_worktree(super::lane::LaneHome::of(&wc), &run, IMPLEMENTER_LANE) {
        // The worktree's own refusal says how to clear its cause (a branch left from an
        // earlier run, a folder in the way): that comes first, then how the loop goes on.
        let (kind, cause, fix) = match e.refusal() {
            Some(r) => (r.kind, format!("{}: {}", r.what, r.why), r.instead.clone()),
            None => (K::GitState, e.to_string(), None),
        };
        let go_on = format!("`abcd loop drive {run}` makes it and carries on, or `abcd loop stop {run}` ends the loop");
        let instead = match fix {
            Some(fix) => format!("{fix}; then {go_on}"),
            None => format!("once the cause is fixed {go_on}"),
        };
        return Err(Refusal::new(kind, "loop start", format!("the loop {run} is recorded, but its worktree could not be made ({cause})"))
            .instead(instead)
            .into());
    }
    if let Err(e) = index_started(&started) {
        on_index_problem(&with_causes(&e));
    }
    if !a.detach {
        return Ok(Started { run, how: StartedHow::Here(Box::new(wc)) });
    }
    let dir = lane::run_folder(wc.store.journal().paths().dir(), &run).map_err(|e| failed(&e))?;
    let log = dir.join("driver.log");
    let args: Vec<OsString> =
        ["loop".into(), "drive".into(), run.clone().into(), "--starter-pid".into(), me.pid.to_string().into()].into_iter().collect();
    let pid = process::spawn_detached(&current_exe()?, &args, &wc.root, &log, &log, &[]).map_err(|e| failed(&e))?;
    Ok(Started { run, how: StartedHow::Detached { pid, log } })
}

/// Refuses, before anything is recorded, a loop whose agents could not run in a worktree
/// of their own: the checkout has no commit, or the checklist they work through is not
/// committed (a worktree made from HEAD holds only committed files).
fn own_worktree_possible(wc: &WorkingCopy, here: &std::path::Path, checklist: Option<&str>) -> Result<(), CommandError> {
    let refused = |kind, why: String| CommandError::from(Refusal::new(kind, "loop start", why).nothing_recorded());
    match crate::git::worktree::head_commit(&wc.root) {
        Ok(Some(_)) => {}
        Ok(None) => {
            return Err(refused(
                K::NoCommit,
                format!(
                    "{} has no commit yet, and the loop's agents run in a worktree made from HEAD; make a first commit (`{}`)",
                    wc.root.display(),
                    crate::places::FIRST_COMMIT
                ),
            ));
        }
        Err(e) => return Err(refused(K::GitState, format!("the working copy's HEAD cannot be read ({e})"))),
    }
    let Some(c) = checklist else { return Ok(()) };
    let full = std::fs::canonicalize(here.join(c)).map_err(|e| refused(K::WrongPath, format!("the checklist {c} cannot be read ({e})")))?;
    let root = std::fs::canonicalize(&wc.root).unwrap_or_else(|_| wc.root.clone());
    let inside = full.strip_prefix(&root).ok().and_then(|p| p.to_str()).map(str::to_string);
    let committed = inside.as_deref().is_some_and(|rel| crate::git::worktree::committed_at_head(&wc.root, rel).unwrap_or(false));
    if !committed {
        return Err(refused(
            K::UncommittedWork,
            format!(
                "the checklist {c} is not committed, and the loop's agents run in a worktree of their own made from HEAD, which holds only committed files; commit it, or run the agents here with --implementer-cwd . --reviewer-cwd ."
            ),
        ));
    }
    Ok(())
}

/// Where a loop's agents work when abcd made the worktree, and how it goes: the loop's
/// result is often uncommitted there, under the home store, where nobody would look.
fn own_worktree_words(ledger: &ledger::LedgerState, run: &str) -> Option<String> {
    let own = ledger.runs.get(run)?.lanes.get(IMPLEMENTER_LANE)?.own_worktree.as_ref()?;
    Some(format!(
        "its agents work in {} on branch {}; `abcd run finish {run}` removes that worktree once its work is committed there",
        own.path, own.branch
    ))
}

/// The machine index learns of the run.
fn index_started(started: &RunStarted) -> Result<(), CommandError> {
    let (paths, scope) = crate::places::machine_journal()?;
    let machine =
        crate::store::Store::new(crate::places::open_scoped_for_verb(crate::journal::storage::RealDisk::shared(), paths, &scope)?);
    machine.append_with(Some(&scope), |state| {
        if state.ledger.index.contains_key(&started.run) { (vec![], ()) } else { (vec![new_event(event::RUN_STARTED, json!(started))], ()) }
    })?;
    Ok(())
}

/// Drives the loop `start` recorded in this process, passing each line the driver says to
/// `say` as it is said.
pub fn drive_started(wc: &WorkingCopy, run: &str, say: &mut dyn FnMut(&str)) -> Result<LoopEnd, CommandError> {
    run_driver(wc, run, say)
}

fn run_driver(wc: &WorkingCopy, run: &str, say: &mut dyn FnMut(&str)) -> Result<LoopEnd, CommandError> {
    let mut d = Driver::new(&wc.store, &wc.scope, wc.root.clone(), run.to_string(), current_exe()?);
    let end = d.drive(say)?;
    let summary = phased::listing(&d.record()?).summary;
    let summary = match own_worktree_words(&wc.store.current_state()?.state.ledger, run) {
        Some(words) => format!("{summary}; {words}"),
        None => summary,
    };
    Ok(match end {
        DriveEnd::Finished(reason) => LoopEnd::Finished { reason, summary },
        DriveEnd::Paused(reason) => LoopEnd::Paused { reason, summary },
    })
}

/// `abcd loop drive`: claims a loop whose driver is gone (after waiting for the `loop start
/// --detach` that started this process, when `starter` names it) and drives it.
pub fn drive(place: &Place, run: &str, starter: Option<u32>, say: &mut dyn FnMut(&str)) -> Result<LoopEnd, CommandError> {
    let wc = lane::open(place)?;
    let me = this_process()?;
    if let Some(pid) = starter {
        // The starter recorded itself as the driver and exits right after starting this
        // process; wait for it to be gone so the claim below is a plain takeover.
        let deadline = Instant::now() + STARTER_EXIT_WAIT;
        while process::identify(pid).is_some() && Instant::now() < deadline {
            std::thread::sleep(STARTER_POLL);
        }
    }
    let loops = wc.store.current_state()?.state.loops;
    let Some(record) = loops.loops.get(run) else {
        return Err(no_loop("loop drive", run).into());
    };
    if record.state == RunState::Stopped {
        return Err(Refusal::new(
            K::LoopState,
            "loop drive",
            format!("loop {run} has stopped ({}); there is nothing to drive", phased::stop_words(record)),
        )
        .into());
    }
    let d = Driver::new(&wc.store, &wc.scope, wc.root.clone(), run.to_string(), current_exe()?);
    d.claim(me)?;
    run_driver(&wc, run, say)
}

/// A control recorded: which (a resume after a phase that did not converge is a retry),
/// the loop's driver when it is alive (looked at for every control but a pause), and the
/// loop's summary line.
pub struct Controlled {
    pub control: Control,
    pub driver: Option<ProcessId>,
    pub summary: String,
}

/// `abcd loop pause|resume|skip|retry`.
pub fn control(place: &Place, run: &str, asked: Control) -> Result<Controlled, CommandError> {
    let wc = lane::open(place)?;
    let written = wc.store.append_with(Some(&wc.scope), |state| {
        let Some(r) = state.loops.loops.get(run) else { return (vec![], Err(no_loop(&format!("loop {}", asked.name()), run))) };
        // A resume after non-convergence is a retry (seed 001 §7).
        let control =
            if asked == Control::Resume && r.paused_reason == Some(PauseReason::PhaseNotConverged) { Control::Retry } else { asked };
        match phased::control_refusal(r, control) {
            Some(why) => (vec![], Err(Refusal::new(K::LoopState, format!("loop {}", asked.name()), why))),
            None => (vec![new_event(control.kind(), json!(phased::LoopNamed { run: run.into() }))], Ok(control)),
        }
    })?;
    let control = written.outcome?;
    let record = wc.store.current_state()?.state.loops.loops.remove(run).expect("just recorded");
    let driver = if control == Control::Pause { None } else { driver_alive(&wc, run) };
    Ok(Controlled { control, driver, summary: phased::listing(&record).summary })
}

fn driver_alive(wc: &WorkingCopy, run: &str) -> Option<ProcessId> {
    let state = wc.store.current_state().ok()?;
    let r = state.state.ledger.runs.get(run)?;
    process::is_alive(&r.driver.process).then_some(r.driver.process)
}

/// `abcd loop stop`: the loop stopped (manual) and its run finished, in the working copy
/// and the machine index. Returns the turn that was in flight, if one was: its agent is
/// not killed.
pub fn stop(place: &Place, run: &str) -> Result<Option<PendingTurn>, CommandError> {
    let wc = lane::open(place)?;
    let root = wc.root.display().to_string();
    let written = wc.store.append_with(Some(&wc.scope), |state| {
        let Some(r) = state.loops.loops.get(run) else { return (vec![], Err(no_loop("loop stop", run))) };
        if r.state == RunState::Stopped {
            return (
                vec![],
                Err(Refusal::new(K::LoopState, "loop stop", format!("loop {run} has already stopped ({})", phased::stop_words(r)))),
            );
        }
        let mut events = vec![new_event(LOOP_STOPPED, json!(LoopStopped { run: run.into(), reason: StopReason::Manual, detail: None }))];
        if state.ledger.runs.get(run).is_some_and(|l| !l.finished) {
            events.push(new_event(event::RUN_FINISHED, json!(RunNamed { run: run.into(), working_copy: Some(root.clone()) })));
        }
        (events, Ok(r.pending.clone()))
    })?;
    let pending = written.outcome?;
    // Best effort, as `abcd run finish`: a run missing there is still read from its working copy.
    let _ = loop_driver::finish_in_index(run, &root);
    Ok(pending)
}

/// One loop as `abcd loop status` shows it.
pub struct LoopStatus {
    pub record: LoopRecord,
    pub listing: LoopListing,
    /// Its run's driver and whether it is alive, when the ledger holds the run.
    pub driver: Option<(ProcessId, bool)>,
}

/// `abcd loop status`: the loop named, or every loop of this working copy.
pub fn status(place: &Place, run: Option<&str>) -> Result<Vec<LoopStatus>, CommandError> {
    let wc = lane::open(place)?;
    // A working copy whose journal has no event yet has no loop either.
    let state = match wc.store.current_state() {
        Ok(s) => s.state,
        Err(crate::journal::JournalError::Missing { .. }) => Default::default(),
        Err(e) => return Err(e.into()),
    };
    let (mut loops, ledger) = (state.loops.loops, state.ledger);
    let chosen: Vec<LoopRecord> = match run {
        Some(r) => vec![loops.remove(r).ok_or_else(|| no_loop("loop status", r))?],
        None => loops.into_values().collect(),
    };
    Ok(chosen
        .into_iter()
        .map(|record| {
            let driver = ledger.runs.get(&record.run).map(|l| (l.driver.process, process::is_alive(&l.driver.process)));
            let mut listing = phased::listing(&record);
            if let Some(words) = own_worktree_words(&ledger, &record.run) {
                listing.summary = format!("{}; {words}", listing.summary);
            }
            LoopStatus { listing, record, driver }
        })
        .collect())
}

/// One turn as the driver's launch asks the turn runner for it.
pub struct TurnRequest {
    pub run: String,
    pub turn: u64,
    pub phase: u64,
    pub round: u32,
    pub kind: String,
    pub reader: Reader,
    pub prompt_file: PathBuf,
    pub reply_file: PathBuf,
    pub session: Option<String>,
    pub template: Vec<String>,
}

/// What the turn runner tells the agent of its turn, in its environment (docs/loop.md); a
/// loop turn's session start reads them back (`hook::loop_turn`).
pub const LOOP_RUN_ENV: &str = "ABCD_LOOP_RUN";
pub const LOOP_TURN_ENV: &str = "ABCD_LOOP_TURN";
pub const LOOP_PHASE_ENV: &str = "ABCD_LOOP_PHASE";
pub const LOOP_ROUND_ENV: &str = "ABCD_LOOP_ROUND";
pub const LOOP_STEP_ENV: &str = "ABCD_LOOP_STEP";

/// How a turn ended. Only `Replied` wrote the reply file.
pub enum TurnOutcome {
    Replied,
    PromptUnreadable {
        prompt_file: PathBuf,
        error: std::io::Error,
    },
    /// The agent's program could not be started.
    NotStarted {
        program: String,
        error: std::io::Error,
    },
    OutputUnreadable(std::io::Error),
    /// The agent did not exit 0; `code` is its exit code, or 128 + the signal that ended it.
    AgentFailed {
        status: ExitStatus,
        code: i32,
    },
    ReplyUnreadable(String),
}

/// The turn runner (what each turn's ledger launch runs, in the lane's folder): fills the
/// template, runs the agent with its output piped, reads the reply with the agent's
/// reader, and writes the reply file (temp file, sync, rename) only when the agent
/// exited 0 and its reply could be read.
pub fn run_turn(t: TurnRequest) -> Result<TurnOutcome, CommandError> {
    let prompt = match loop_driver::read_bounded(&t.prompt_file, agent::PROMPT_MAX_BYTES as u64) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(error) => return Ok(TurnOutcome::PromptUnreadable { prompt_file: t.prompt_file, error }),
    };
    let words = agent::fill_template(&t.template, &prompt, t.session.as_deref());
    let mut command = Command::new(&words[0]);
    command
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .env(LOOP_RUN_ENV, &t.run)
        .env(LOOP_TURN_ENV, t.turn.to_string())
        .env(LOOP_PHASE_ENV, t.phase.to_string())
        .env(LOOP_ROUND_ENV, t.round.to_string())
        .env(LOOP_STEP_ENV, &t.kind);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(error) => return Ok(TurnOutcome::NotStarted { program: words[0].clone(), error }),
    };
    let mut out = Vec::new();
    let read = child.stdout.take().expect("piped").take(agent::REPLY_MAX_BYTES as u64 + 1).read_to_end(&mut out);
    // Drain what is beyond the limit so the agent is not blocked writing it.
    if let Some(mut rest) = child.stdout.take() {
        let _ = std::io::copy(&mut rest, &mut std::io::sink());
    }
    let status = child.wait().map_err(|e| failed(&e))?;
    if let Err(e) = read {
        return Ok(TurnOutcome::OutputUnreadable(e));
    }
    if !status.success() {
        let code = status.code().unwrap_or_else(|| 128 + process::exit_signal(&status).unwrap_or(0));
        return Ok(TurnOutcome::AgentFailed { status, code });
    }
    let reply = match agent::read_reply(t.reader, &out) {
        Ok(r) => r,
        Err(why) => return Ok(TurnOutcome::ReplyUnreadable(why)),
    };
    let bytes = serde_json::to_vec(&ReplyFile::new(reply.reply, reply.session)).map_err(|e| failed(&e))?;
    crate::journal::storage::write_atomic(&crate::journal::storage::RealDisk, &t.reply_file, &bytes, true).map_err(|e| failed(&e))?;
    Ok(TurnOutcome::Replied)
}

#[cfg(test)]
mod tests {
    use super::split_words;
    use crate::command::loop_driver::DriveError;
    use crate::command::{Blame, CommandError};
    use crate::journal::JournalError;

    #[test]
    fn a_drive_error_holding_a_journal_error_is_a_failure() {
        // `abcd loop drive` exits 1 on a driver's failure, even one holding a journal error
        // that is a refusal elsewhere; its words are the inner error's. (The driver's own
        // refusal stays a refusal: loop_driver's tests.)
        let e = CommandError::from(DriveError::Journal(JournalError::BatchTooLarge));
        assert_eq!(e.blame(), Blame::Failed);
        assert_eq!(e.to_string(), JournalError::BatchTooLarge.to_string());
    }

    #[test]
    fn templates_split_like_a_shell() {
        assert_eq!(split_words("claude -p {prompt}").unwrap(), ["claude", "-p", "{prompt}"]);
        assert_eq!(split_words("  a   'b c'  \"d \\\" e\" f\\ g ").unwrap(), ["a", "b c", "d \" e", "f g"]);
        assert_eq!(split_words("x '' y").unwrap(), ["x", "", "y"]);
        assert!(split_words("a 'b").is_err());
        assert!(split_words("a \"b").is_err());
        assert!(split_words("a \\").is_err());
        assert_eq!(split_words("").unwrap(), Vec::<String>::new());
    }
}
