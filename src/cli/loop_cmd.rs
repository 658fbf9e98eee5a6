//! `abcd loop start|status|pause|resume|stop|skip|retry|drive` (SPEC §8) and the hidden
//! turn runner `__loop-turn`. The loop's logic is in `crate::phased`; this file parses,
//! prints and picks exit codes.

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::json;

use super::{EXIT_FAILURE, EXIT_OK, EXIT_REFUSED, new_event, refuse};
use crate::command::loop_driver::{self, DriveEnd, Driver};
use crate::command::run::{self as run_cmd, WorkingCopy};
use crate::event;
use crate::ledger::{self, Driver as LedgerDriver, RunNamed, RunStarted};
use crate::phased::agent::{self, Reader, ReplyFile};
use crate::phased::{
    self, AgentSpec, Config, Control, DEFAULT_MAX_ROUNDS, IMPLEMENTER_LANE, LOOP_STARTED, LOOP_STOPPED, LoopRecord, LoopStarted,
    LoopStopped, PauseReason, REVIEWER_LANE, RunState, StopReason,
};
use crate::platform::process::{self, ProcessId};

/// How long a detached driver waits for the `abcd loop start` that started it to exit
/// before it claims the run.
pub const STARTER_EXIT_WAIT: Duration = Duration::from_secs(10);

#[derive(Subcommand, Debug)]
pub enum LoopAction {
    /// Start a loop: record it (a run with the lanes implementer and reviewer) and drive it
    /// here until it completes, pauses or stops (--detach: drive it in the background)
    Start(Box<StartArgs>),
    /// The loop's record: state, step, phases, rounds, sessions (every loop without RUN)
    Status {
        run: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Pause: no new turn starts (a turn in flight is still collected)
    Pause { run: String },
    /// Resume a paused loop (after a phase that did not converge, this is a retry)
    Resume { run: String },
    /// Stop the loop for good (reason manual); a running agent is not killed
    Stop { run: String },
    /// Skip the paused phase: it counts as done and the next phase is asked for
    Skip { run: String },
    /// Review the paused phase again from the implementer's current output, fresh rounds
    Retry { run: String },
    /// Drive a loop whose driver is gone (after a crash): replays the record and carries on
    /// without running again any turn whose reply arrived
    Drive {
        run: String,
        /// (internal) the `loop start --detach` process to wait for before claiming
        #[arg(long, hide = true, value_name = "PID")]
        starter_pid: Option<u32>,
    },
}

#[derive(Args, Debug)]
pub struct StartArgs {
    /// The implementer's command template, one string split like a shell does (quotes
    /// group words); must hold {prompt}; {session} is its session id once known
    #[arg(long, value_name = "TEMPLATE")]
    implementer: String,
    /// The reviewer's command template (as --implementer)
    #[arg(long, value_name = "TEMPLATE")]
    reviewer: String,
    /// How the implementer's reply is read: plain (stdout) or claude-json
    #[arg(long, default_value = "plain", value_parser = ["plain", "claude-json"])]
    implementer_reader: String,
    #[arg(long, default_value = "plain", value_parser = ["plain", "claude-json"])]
    reviewer_reader: String,
    /// Where the implementer runs (default: this working copy's root)
    #[arg(long, value_name = "DIR")]
    implementer_cwd: Option<PathBuf>,
    /// Where the reviewer runs (default: this working copy's root)
    #[arg(long, value_name = "DIR")]
    reviewer_cwd: Option<PathBuf>,
    /// The checklist file the implementer works through (named in the default advance prompt)
    #[arg(long, value_name = "PATH")]
    checklist: Option<String>,
    /// Review rounds per phase before the loop pauses
    #[arg(long, default_value_t = DEFAULT_MAX_ROUNDS)]
    max_rounds: u32,
    #[arg(long, default_value = agent::DEFAULT_COMPLETION_SIGNAL)]
    completion_signal: String,
    #[arg(long, default_value = agent::DEFAULT_REVIEW_STOP_SIGNAL)]
    review_stop_signal: String,
    /// Default: seed 001's, naming the completion signal (a custom one must name it too)
    #[arg(long)]
    advance_prompt: Option<String>,
    /// Default: seed 001's, naming the review stop signal (a custom one must name it too)
    #[arg(long)]
    review_prompt: Option<String>,
    #[arg(long, default_value = agent::DEFAULT_FEEDBACK_PROMPT)]
    feedback_prompt: String,
    /// The loop's (and its run's) name (default: loop-<UTC time>)
    #[arg(long)]
    run: Option<String>,
    /// Drive in the background and return at once
    #[arg(long)]
    detach: bool,
}

/// The hidden turn runner's arguments.
#[derive(Args, Debug)]
pub struct TurnArgs {
    #[arg(long)]
    run: String,
    #[arg(long)]
    turn: u64,
    #[arg(long)]
    phase: u64,
    #[arg(long)]
    round: u32,
    #[arg(long)]
    kind: String,
    #[arg(long)]
    reader: String,
    #[arg(long)]
    prompt_file: PathBuf,
    #[arg(long)]
    reply_file: PathBuf,
    #[arg(long)]
    session: Option<String>,
    #[arg(last = true, required = true, allow_hyphen_values = true)]
    template: Vec<String>,
}

pub fn run_loop(action: LoopAction) -> anyhow::Result<i32> {
    match action {
        LoopAction::Start(a) => start(*a),
        LoopAction::Status { run, json } => status(run.as_deref(), json),
        LoopAction::Pause { run } => control(&run, Control::Pause),
        LoopAction::Resume { run } => control(&run, Control::Resume),
        LoopAction::Skip { run } => control(&run, Control::Skip),
        LoopAction::Retry { run } => control(&run, Control::Retry),
        LoopAction::Stop { run } => stop(&run),
        LoopAction::Drive { run, starter_pid } => drive(&run, starter_pid),
    }
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

fn this_process() -> anyhow::Result<ProcessId> {
    Ok(process::this_process()?)
}

fn start(a: StartArgs) -> anyhow::Result<i32> {
    let here = std::env::current_dir()?;
    let wc = match run_cmd::open_at(&here) {
        Ok(wc) => wc,
        Err(e) => return refuse(format!("refused: {e:#}; run `abcd loop start` in a working copy `abcd init` made managed")),
    };
    let mut agents = vec![];
    for (field, template, reader, cwd) in [
        ("implementer", &a.implementer, &a.implementer_reader, &a.implementer_cwd),
        ("reviewer", &a.reviewer, &a.reviewer_reader, &a.reviewer_cwd),
    ] {
        let words = match split_words(template) {
            Ok(w) => w,
            Err(why) => return refuse(format!("refused: the {field} template {why}; nothing was recorded")),
        };
        if let Err(e) = agent::check_template(field, &words) {
            return refuse(format!(
                "refused: the {e}; nothing was recorded (example: --{field} \"claude -p {{prompt}} --resume {{session}} --output-format json\")"
            ));
        }
        if process::resolve_program(std::ffi::OsStr::new(&words[0])).is_none() {
            return refuse(format!(
                "refused: the {field}'s program {:?} is not an executable program (not found on PATH); nothing was recorded",
                words[0]
            ));
        }
        let dir = match cwd {
            Some(d) if d.is_absolute() => d.clone(),
            Some(d) => here.join(d),
            None => wc.root.clone(),
        };
        if !dir.is_dir() {
            return refuse(format!("refused: the {field}'s folder {} is not a folder; nothing was recorded", dir.display()));
        }
        let reader = Reader::from_name(reader).expect("clap checked the reader");
        agents.push(AgentSpec { template: words, reader, worktree: dir.display().to_string() });
    }
    let reviewer = agents.pop().expect("two agents");
    let implementer = agents.pop().expect("two agents");
    if let Some(c) = &a.checklist
        && !here.join(c).is_file()
    {
        return refuse(format!("refused: the checklist {c} is not a file; nothing was recorded"));
    }
    let config = Config {
        implementer,
        reviewer,
        checklist: a.checklist.clone(),
        max_rounds: a.max_rounds,
        advance_prompt: a
            .advance_prompt
            .clone()
            .unwrap_or_else(|| agent::default_advance_prompt(&a.completion_signal, a.checklist.as_deref())),
        review_prompt: a.review_prompt.clone().unwrap_or_else(|| agent::default_review_prompt(&a.review_stop_signal)),
        completion_signal: a.completion_signal.clone(),
        review_stop_signal: a.review_stop_signal.clone(),
        feedback_prompt: a.feedback_prompt.clone(),
    };
    if let Err(e) = phased::check_config(&config) {
        return refuse(format!("refused: --{e}; nothing was recorded"));
    }
    let run = match &a.run {
        Some(r) => r.clone(),
        None => {
            let now = crate::clock::now()?;
            format!("loop-{}", now.strftime("%Y%m%dT%H%M%SZ"))
        }
    };
    if let Err(r) = ledger::check_name("run", &run) {
        return refuse(format!("refused: the run name {}; nothing was recorded", r.reason));
    }
    let me = this_process()?;
    let driver = LedgerDriver { session: None, process: me };
    let started = RunStarted {
        run: run.clone(),
        working_copy: wc.root.display().to_string(),
        lanes: vec![IMPLEMENTER_LANE.into(), REVIEWER_LANE.into()],
        driver: driver.clone(),
    };
    let data = LoopStarted { run: run.clone(), config };
    let written = wc.store.append_with(Some(&wc.scope), |state| {
        if state.ledger.runs.contains_key(&run) {
            return (vec![], Err(format!("refused: a run named {run} exists in this working copy; name the loop with --run NEW-NAME")));
        }
        (vec![new_event(event::RUN_STARTED, json!(started)), new_event(LOOP_STARTED, json!(data))], Ok(()))
    })?;
    if let Err(why) = written.outcome {
        return refuse(why);
    }
    index_started(&started);
    if a.detach {
        let dir = crate::command::launch::run_folder(wc.store.journal().paths().dir(), &run)?;
        let log = dir.join("driver.log");
        let args: Vec<OsString> =
            ["loop".into(), "drive".into(), run.clone().into(), "--starter-pid".into(), me.pid.to_string().into()].into_iter().collect();
        let exe = std::env::current_exe()?;
        let pid = process::spawn_detached(&exe, &args, &wc.root, &log, &log, &[])?;
        println!(
            "loop {run} started; driven in the background (pid {}, log {}); `abcd loop status {run}` shows it",
            pid.pid,
            log.display()
        );
        return Ok(EXIT_OK);
    }
    println!("loop {run} started");
    run_driver(&wc, &run)
}

/// The machine index learns of the run (best effort: `abcd resume` still finds it from its
/// working copy).
fn index_started(started: &RunStarted) {
    let result = (|| -> anyhow::Result<()> {
        let (paths, scope) = crate::places::machine_journal()?;
        let machine = crate::store::Store::new(crate::places::open_journal_for_verb(crate::journal::storage::RealDisk::shared(), paths)?);
        machine.append_with(Some(&scope), |state| {
            if state.ledger.index.contains_key(&started.run) {
                (vec![], ())
            } else {
                (vec![new_event(event::RUN_STARTED, json!(started))], ())
            }
        })?;
        Ok(())
    })();
    if let Err(e) = result {
        eprintln!("abcd: the machine index was not updated ({e:#}); `abcd resume` run in this working copy still finds the loop");
    }
}

fn run_driver(wc: &WorkingCopy, run: &str) -> anyhow::Result<i32> {
    let exe = std::env::current_exe()?;
    let mut d = Driver::new(&wc.store, &wc.scope, wc.root.clone(), run.to_string(), exe);
    let end = d.drive(&mut |line| println!("{line}"));
    match end {
        Ok(DriveEnd::Finished(reason)) => {
            let record = d.record()?;
            println!("{}", phased::listing(&record).summary);
            Ok(if reason == StopReason::PeerError { EXIT_FAILURE } else { EXIT_OK })
        }
        Ok(DriveEnd::Paused(reason)) => {
            let what = match reason {
                PauseReason::PhaseNotConverged => format!("`abcd loop retry {run}` reviews it again, `abcd loop skip {run}` moves on"),
                PauseReason::Manual => format!("`abcd loop resume {run}` then `abcd loop drive {run}` carries on"),
            };
            let record = d.record()?;
            println!("{}; {what}", phased::listing(&record).summary);
            Ok(EXIT_OK)
        }
        Err(loop_driver::DriveError::Refused(why)) => refuse(why),
        Err(e) => Err(e.into()),
    }
}

fn drive(run: &str, starter: Option<u32>) -> anyhow::Result<i32> {
    let wc = run_cmd::open_at(&std::env::current_dir()?)?;
    let me = this_process()?;
    if let Some(pid) = starter {
        // The starter recorded itself as the driver and exits right after starting this
        // process; wait for it to be gone so the claim below is a plain takeover.
        let deadline = Instant::now() + STARTER_EXIT_WAIT;
        while process::identify(pid).is_some() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let loops = wc.store.current_state()?.state.loops;
    let Some(record) = loops.loops.get(run) else {
        return refuse(format!("refused: no loop named {} in this working copy; `abcd loop status` lists them", ledger::shown_name(run)));
    };
    if record.state == RunState::Stopped {
        return refuse(format!("refused: loop {run} has stopped ({}); there is nothing to drive", phased::stop_words(record)));
    }
    let exe = std::env::current_exe()?;
    let d = Driver::new(&wc.store, &wc.scope, wc.root.clone(), run.to_string(), exe);
    if let Err(e) = d.claim(me) {
        return match e {
            loop_driver::DriveError::Refused(why) => refuse(format!("refused: {why}")),
            e => Err(e.into()),
        };
    }
    run_driver(&wc, run)
}

fn open_here() -> anyhow::Result<WorkingCopy> {
    Ok(run_cmd::open_at(&std::env::current_dir()?)?)
}

fn driver_alive(wc: &WorkingCopy, run: &str) -> Option<ProcessId> {
    let state = wc.store.current_state().ok()?;
    let r = state.state.ledger.runs.get(run)?;
    process::is_alive(&r.driver.process).then_some(r.driver.process)
}

fn no_loop(run: &str) -> String {
    format!("refused: no loop named {} in this working copy; `abcd loop status` lists them", ledger::shown_name(run))
}

fn control(run: &str, asked: Control) -> anyhow::Result<i32> {
    let wc = open_here()?;
    let written = wc.store.append_with(Some(&wc.scope), |state| {
        let Some(r) = state.loops.loops.get(run) else { return (vec![], Err(no_loop(run))) };
        // A resume after non-convergence is a retry (seed 001 §7).
        let control =
            if asked == Control::Resume && r.paused_reason == Some(PauseReason::PhaseNotConverged) { Control::Retry } else { asked };
        match phased::control_refusal(r, control) {
            Some(why) => (vec![], Err(format!("refused: {why}"))),
            None => (vec![new_event(control.kind(), json!(phased::LoopNamed { run: run.into() }))], Ok(control)),
        }
    })?;
    let control = match written.outcome {
        Err(why) => return refuse(why),
        Ok(c) => c,
    };
    let record = wc.store.current_state()?.state.loops.loops.remove(run).expect("just recorded");
    let done = match control {
        Control::Pause => "paused: no new turn starts (a turn in flight is still collected)",
        Control::Resume => "resumed",
        Control::Retry => "retried: the phase is reviewed again from the implementer's current output, with fresh rounds",
        Control::Skip => "skipped: the phase counts as done; the next one is asked for",
    };
    println!("loop {run} {done}");
    if control != Control::Pause {
        match driver_alive(&wc, run) {
            Some(p) => println!("its driver (pid {}) carries on", p.pid),
            None => println!("no driver is running it: `abcd loop drive {run}` carries on"),
        }
    }
    println!("{}", phased::listing(&record).summary);
    Ok(EXIT_OK)
}

fn stop(run: &str) -> anyhow::Result<i32> {
    let wc = open_here()?;
    let root = wc.root.display().to_string();
    let written = wc.store.append_with(Some(&wc.scope), |state| {
        let Some(r) = state.loops.loops.get(run) else { return (vec![], Err(no_loop(run))) };
        if r.state == RunState::Stopped {
            return (vec![], Err(format!("refused: loop {run} has already stopped ({})", phased::stop_words(r))));
        }
        let mut events = vec![new_event(LOOP_STOPPED, json!(LoopStopped { run: run.into(), reason: StopReason::Manual, detail: None }))];
        if state.ledger.runs.get(run).is_some_and(|l| !l.finished) {
            events.push(new_event(event::RUN_FINISHED, json!(RunNamed { run: run.into(), working_copy: Some(root.clone()) })));
        }
        (events, Ok(r.pending.clone()))
    })?;
    let pending = match written.outcome {
        Err(why) => return refuse(why),
        Ok(p) => p,
    };
    let _ = loop_driver::finish_in_index(run, &root);
    println!("loop {run} stopped (manual)");
    if let Some(p) = pending {
        println!(
            "turn {} ({} of the {}) was in flight: its agent is not killed, and its reply will not be used",
            p.turn,
            p.kind.name(),
            p.role().lane()
        );
    }
    Ok(EXIT_OK)
}

fn status(run: Option<&str>, json_out: bool) -> anyhow::Result<i32> {
    let wc = open_here()?;
    let state = wc.store.current_state()?.state;
    let (loops, ledger) = (state.loops, state.ledger);
    let chosen: Vec<&LoopRecord> = match run {
        Some(r) => match loops.loops.get(r) {
            Some(rec) => vec![rec],
            None => return refuse(no_loop(r)),
        },
        None => loops.loops.values().collect(),
    };
    let entry = |r: &LoopRecord| {
        let driver = ledger.runs.get(&r.run).map(|l| (l.driver.process, process::is_alive(&l.driver.process)));
        (driver, phased::listing(r))
    };
    if json_out {
        let items: Vec<serde_json::Value> = chosen
            .iter()
            .map(|r| {
                let (driver, listing) = entry(r);
                json!({"record": r, "listing": listing, "driver": driver.map(|(p, alive)| json!({"process": p, "alive": alive}))})
            })
            .collect();
        match run {
            Some(_) => println!("{}", items[0]),
            None => println!("{}", json!({"schema": "abcd/loop-status/v1", "loops": items})),
        }
        return Ok(EXIT_OK);
    }
    if chosen.is_empty() {
        println!("no loop in this working copy; `abcd loop start` starts one");
    }
    for r in chosen {
        let (driver, listing) = entry(r);
        println!("{}", listing.summary);
        match driver {
            Some((p, true)) if r.state != RunState::Stopped => println!("  driver: pid {} alive", p.pid),
            Some((p, false)) if r.state != RunState::Stopped => {
                println!("  driver: pid {} gone; `abcd loop drive {}` carries on", p.pid, r.run)
            }
            _ => {}
        }
        for p in &r.phases {
            let status = serde_json::to_value(p.status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
            println!("  phase {}: {status}, {} round(s), {} turn(s)", p.n, p.rounds, p.turns.len());
        }
        if let Some(s) = &r.sessions.implementer {
            println!("  implementer session: {s}");
        }
        if let Some(s) = &r.sessions.reviewer {
            println!("  reviewer session: {s}");
        }
        if let Some(p) = &r.pending {
            println!(
                "  in flight: turn {} ({} of phase {}), launch {} of the {}; reply at {}",
                p.turn,
                p.kind.name(),
                p.phase,
                p.launch,
                p.role().lane(),
                p.reply_file
            );
        }
    }
    Ok(EXIT_OK)
}

/// The turn runner (what each turn's ledger launch runs, in the lane's folder): fills the
/// template, runs the agent with its output piped, reads the reply with the agent's
/// reader, and writes the reply file (temp file, sync, rename) only when the agent
/// exited 0 and its reply could be read. Its exit code is the agent's.
pub fn run_turn(args: TurnArgs) -> anyhow::Result<i32> {
    let Some(reader) = Reader::from_name(&args.reader) else {
        eprintln!("abcd turn: unknown reader {:?}", args.reader);
        return Ok(EXIT_REFUSED);
    };
    let prompt = match loop_driver::read_bounded(&args.prompt_file, agent::PROMPT_MAX_BYTES as u64) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            eprintln!("abcd turn: the prompt {} cannot be read ({e})", args.prompt_file.display());
            return Ok(EXIT_FAILURE);
        }
    };
    let words = agent::fill_template(&args.template, &prompt, args.session.as_deref());
    let mut command = Command::new(&words[0]);
    command
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .env("ABCD_LOOP_RUN", &args.run)
        .env("ABCD_LOOP_TURN", args.turn.to_string())
        .env("ABCD_LOOP_PHASE", args.phase.to_string())
        .env("ABCD_LOOP_ROUND", args.round.to_string())
        .env("ABCD_LOOP_STEP", &args.kind);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("abcd turn: `{}` could not be started ({e})", words[0]);
            return Ok(127);
        }
    };
    let mut out = Vec::new();
    let read = child.stdout.take().expect("piped").take(agent::REPLY_MAX_BYTES as u64 + 1).read_to_end(&mut out);
    // Drain what is beyond the limit so the agent is not blocked writing it.
    if let Some(mut rest) = child.stdout.take() {
        let _ = std::io::copy(&mut rest, &mut std::io::sink());
    }
    let status = child.wait()?;
    if let Err(e) = read {
        eprintln!("abcd turn: the agent's output could not be read ({e})");
        return Ok(EXIT_FAILURE);
    }
    if !status.success() {
        let code = status.code().unwrap_or_else(|| 128 + crate::platform::process::exit_signal(&status).unwrap_or(0));
        eprintln!("abcd turn: the agent exited {status}; no reply is written");
        return Ok(if code == 0 { EXIT_FAILURE } else { code });
    }
    let reply = match agent::read_reply(reader, &out) {
        Ok(r) => r,
        Err(why) => {
            eprintln!("abcd turn: the reply cannot be read: {why}; no reply is written");
            return Ok(3);
        }
    };
    let bytes = serde_json::to_vec(&ReplyFile::new(reply.reply, reply.session))?;
    crate::journal::storage::write_atomic(&crate::journal::storage::RealDisk, &args.reply_file, &bytes, true)?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::split_words;

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
