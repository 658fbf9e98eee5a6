//! `abcd loop start|status|pause|resume|stop|skip|retry|drive` (SPEC §8) and the hidden
//! turn runner `__loop-turn`: parses, calls `command::loops`, prints and picks exit codes.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use super::{EXIT_FAILURE, EXIT_OK, place_here};
use crate::command::loops::{self, AgentRequest, LoopEnd, StartRequest, StartedHow, TurnOutcome, TurnRequest};
use crate::phased::agent::{self, Reader};
use crate::phased::{Control, DEFAULT_MAX_ROUNDS, DEFAULT_MAX_TURNS, PauseReason, RunState, StopReason, TurnKind};

/// The turn runner's exit code when the agent's program cannot be started (as a shell's).
const TURN_NOT_STARTED: i32 = 127;
/// The turn runner's exit code when the agent exited 0 but its reply cannot be read.
const TURN_REPLY_UNREADABLE: i32 = 3;

#[derive(Subcommand, Debug)]
pub enum LoopAction {
    /// Start a loop: record it (a run with the lanes implementer and reviewer) and drive it
    /// here until it completes, pauses or stops (--detach: drive it in the background)
    Start(Box<StartArgs>),
    /// The loop's record: state, step, phases, rounds, sessions (every loop without RUN)
    Status {
        /// Only this loop
        run: Option<String>,
        /// Print JSON for scripts
        #[arg(long)]
        json: bool,
    },
    /// Pause: no new turn starts (a turn in flight is still collected)
    Pause {
        /// The loop's name, as `abcd loop status` lists it
        run: String,
    },
    /// Resume a paused loop (after a phase that did not converge, this is a retry); it may
    /// run its --max-turns turns again
    Resume {
        /// The loop's name, as `abcd loop status` lists it
        run: String,
    },
    /// Stop the loop for good (reason manual); a running agent is not killed
    Stop {
        /// The loop's name, as `abcd loop status` lists it
        run: String,
    },
    /// Skip the paused phase: it counts as done and the next phase is asked for
    Skip {
        /// The loop's name, as `abcd loop status` lists it
        run: String,
    },
    /// Review the paused phase again from the implementer's current output, fresh rounds
    Retry {
        /// The loop's name, as `abcd loop status` lists it
        run: String,
    },
    /// Drive a loop whose driver is gone (after a crash): replays the record and carries on
    /// without running again any turn whose reply arrived
    Drive {
        /// The loop's name, as `abcd loop status` lists it
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
    /// How the reviewer's reply is read: plain (stdout) or claude-json
    #[arg(long, default_value = "plain", value_parser = ["plain", "claude-json"])]
    reviewer_reader: String,
    /// Where the implementer runs (default: the reviewer's folder when --reviewer-cwd is
    /// given, else a git worktree abcd makes for the loop on a branch
    /// abcd/<run>/implementer from this checkout's HEAD, shared with the reviewer)
    #[arg(long, value_name = "DIR")]
    implementer_cwd: Option<PathBuf>,
    /// Where the reviewer runs (default: the implementer's folder)
    #[arg(long, value_name = "DIR")]
    reviewer_cwd: Option<PathBuf>,
    /// The checklist file the implementer works through (named in the default advance prompt)
    #[arg(long, value_name = "PATH")]
    checklist: Option<String>,
    /// Review rounds per phase before the loop pauses
    #[arg(long, default_value_t = DEFAULT_MAX_ROUNDS)]
    max_rounds: u32,
    /// Turns the loop runs (each agent reply is one) before it pauses until a person
    /// resumes it: the bound on an implementer that never says the completion signal; each
    /// resume, retry or skip allows as many again (1 to 10000)
    #[arg(long, default_value_t = DEFAULT_MAX_TURNS, value_name = "N")]
    max_turns: u64,
    /// What the implementer replies, alone, when no phase is left: the loop completes
    #[arg(long, default_value = agent::DEFAULT_COMPLETION_SIGNAL)]
    completion_signal: String,
    /// What the reviewer says on a line of its own when the phase needs no more changes
    #[arg(long, default_value = agent::DEFAULT_REVIEW_STOP_SIGNAL)]
    review_stop_signal: String,
    /// The prompt that asks the implementer for the next phase (default: a built-in one
    /// naming the completion signal; a custom one must name it too)
    #[arg(long)]
    advance_prompt: Option<String>,
    /// The prompt that asks the reviewer to review the phase (default: a built-in one
    /// naming the review stop signal; a custom one must name it too)
    #[arg(long)]
    review_prompt: Option<String>,
    /// The words before the reviewer's reply in the prompt that hands it to the implementer
    #[arg(long, default_value = agent::DEFAULT_FEEDBACK_PROMPT)]
    feedback_prompt: String,
    /// The loop's (and its run's) name (default: loop-<UTC second>, with -2, -3, … when a
    /// loop started in the same second has it)
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
        LoopAction::Drive { run, starter_pid } => {
            let end = loops::drive(&place_here()?, &run, starter_pid, &mut |line| outln!("{line}"))?;
            Ok(print_end(&run, end))
        }
    }
}

fn start(a: StartArgs) -> anyhow::Result<i32> {
    let agent = |template: String, reader: &str, cwd: Option<PathBuf>| AgentRequest {
        template,
        reader: Reader::from_name(reader).expect("clap checked the reader"),
        cwd,
    };
    let asked = StartRequest {
        implementer: agent(a.implementer, &a.implementer_reader, a.implementer_cwd),
        reviewer: agent(a.reviewer, &a.reviewer_reader, a.reviewer_cwd),
        checklist: a.checklist,
        max_rounds: a.max_rounds,
        max_turns: a.max_turns,
        completion_signal: a.completion_signal,
        review_stop_signal: a.review_stop_signal,
        advance_prompt: a.advance_prompt,
        review_prompt: a.review_prompt,
        feedback_prompt: a.feedback_prompt,
        run: a.run,
        detach: a.detach,
    };
    let started = loops::start(&place_here()?, asked, &mut |why| {
        errln!("abcd: the machine index was not updated ({why}); `abcd resume` run in this working copy still finds the loop")
    })?;
    let run = &started.run;
    match &started.how {
        StartedHow::Detached { pid, log } => {
            outln!(
                "loop {run} started; driven in the background (pid {}, log {}); `abcd loop status {run}` shows it",
                pid.pid,
                log.display()
            );
            Ok(EXIT_OK)
        }
        StartedHow::Here(wc) => {
            outln!("loop {run} started");
            let end = loops::drive_started(wc, run, &mut |line| outln!("{line}"))?;
            Ok(print_end(run, end))
        }
    }
}

/// The loop's summary once its drive ended; a loop stopped by a peer error exits 1.
fn print_end(run: &str, end: LoopEnd) -> i32 {
    match end {
        LoopEnd::Finished { reason, summary } => {
            outln!("{summary}");
            if reason == StopReason::PeerError { EXIT_FAILURE } else { EXIT_OK }
        }
        LoopEnd::Paused { reason, summary } => {
            let what = match reason {
                PauseReason::PhaseNotConverged => format!("`abcd loop retry {run}` reviews it again, `abcd loop skip {run}` moves on"),
                PauseReason::Manual | PauseReason::MaxTurns => {
                    format!("`abcd loop resume {run}` then `abcd loop drive {run}` carries on")
                }
            };
            outln!("{summary}; {what}");
            EXIT_OK
        }
    }
}

fn control(run: &str, asked: Control) -> anyhow::Result<i32> {
    let c = loops::control(&place_here()?, run, asked)?;
    let done = match c.control {
        Control::Pause => "paused: no new turn starts (a turn in flight is still collected)",
        Control::Resume => "resumed",
        Control::Retry => "retried: the phase is reviewed again from the implementer's current output, with fresh rounds",
        Control::Skip => "skipped: the phase counts as done; the next one is asked for",
    };
    outln!("loop {run} {done}");
    if c.control != Control::Pause {
        match c.driver {
            Some(p) => outln!("its driver (pid {}) carries on", p.pid),
            None => outln!("no driver is running it: `abcd loop drive {run}` carries on"),
        }
    }
    outln!("{}", c.summary);
    Ok(EXIT_OK)
}

fn stop(run: &str) -> anyhow::Result<i32> {
    let pending = loops::stop(&place_here()?, run)?;
    outln!("loop {run} stopped (manual)");
    if let Some(p) = pending {
        outln!(
            "turn {} ({} of the {}) was in flight: its agent is not killed, and its reply will not be used",
            p.turn,
            p.kind.name(),
            p.role().lane()
        );
    }
    Ok(EXIT_OK)
}

fn status(run: Option<&str>, json_out: bool) -> anyhow::Result<i32> {
    let chosen = loops::status(&place_here()?, run)?;
    if json_out {
        let items: Vec<serde_json::Value> = chosen
            .iter()
            .map(|s| {
                json!({"record": s.record, "listing": s.listing, "driver": s.driver.map(|(p, alive)| json!({"process": p, "alive": alive}))})
            })
            .collect();
        match run {
            Some(_) => outln!("{}", items[0]),
            None => outln!("{}", json!({"schema": "abcd/loop-status/v1", "loops": items})),
        }
        return Ok(EXIT_OK);
    }
    if chosen.is_empty() {
        outln!("no loop in this working copy; `abcd loop start` starts one");
    }
    for s in chosen {
        let r = &s.record;
        outln!("{}", s.listing.summary);
        match s.driver {
            Some((p, true)) if r.state != RunState::Stopped => outln!("  driver: pid {} alive", p.pid),
            Some((p, false)) if r.state != RunState::Stopped => {
                outln!("  driver: pid {} gone; `abcd loop drive {}` carries on", p.pid, r.run)
            }
            _ => {}
        }
        for p in &r.phases {
            let status = serde_json::to_value(p.status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
            outln!("  phase {}: {status}, {} round(s), {} turn(s)", p.n, p.rounds, p.turns.len());
        }
        if let Some(s) = &r.sessions.implementer {
            outln!("  implementer session: {s}");
        }
        if let Some(s) = &r.sessions.reviewer {
            outln!("  reviewer session: {s}");
        }
        if r.lost > 0 {
            outln!("  lost agents: {} turn(s) run again after their agent was lost (killed, or gone in a crash)", r.lost);
        }
        if let Some(p) = &r.pending {
            outln!(
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

/// The turn runner (what each turn's ledger launch runs, in the lane's folder). Its exit
/// code is the agent's, and a signal that ended the agent ends it too; the driver reads
/// them and these stderr lines.
pub fn run_turn(args: TurnArgs) -> anyhow::Result<i32> {
    let Some(reader) = Reader::from_name(&args.reader) else {
        let why = format!("unknown reader {}", crate::secrets::shown_name(&args.reader));
        let readers = [Reader::Plain, Reader::ClaudeJson].map(Reader::name).join(", ");
        let refusal = crate::refusal::Refusal::new(crate::refusal::RefusalKind::BadValue, "turn", why)
            .instead(format!("name one of the readers ({readers}) with --reader"));
        return Err(crate::command::CommandError::from(refusal).into());
    };
    // The agent named by its lane, so a reply's fault is laid at its writer's door.
    let agent = [TurnKind::Advance, TurnKind::Review, TurnKind::Feedback]
        .into_iter()
        .find(|kind| kind.name() == args.kind)
        .map_or("", |kind| kind.role().lane());
    let turn_number = args.turn;
    let turn = TurnRequest {
        run: args.run,
        turn: args.turn,
        phase: args.phase,
        round: args.round,
        kind: args.kind,
        reader,
        prompt_file: args.prompt_file,
        reply_file: args.reply_file,
        session: args.session,
        template: args.template,
    };
    Ok(match loops::run_turn(turn)? {
        TurnOutcome::Replied => EXIT_OK,
        TurnOutcome::PromptUnreadable { prompt_file, error } => {
            errln!("abcd turn: the prompt {} cannot be read ({error})", prompt_file.display());
            EXIT_FAILURE
        }
        TurnOutcome::NotStarted { program, error } => {
            errln!("abcd turn: `{program}` could not be started ({error})");
            TURN_NOT_STARTED
        }
        TurnOutcome::OutputUnreadable(e) => {
            errln!("abcd turn: the agent's output could not be read ({e})");
            EXIT_FAILURE
        }
        TurnOutcome::AgentFailed { status, code } => {
            errln!("abcd turn: the agent exited {status}; no reply is written");
            // A signal ended the agent: the turn runner ends by it too, so its watcher
            // records the signal (the driver runs a lost turn again) and never a code that
            // reads as the agent's own exit.
            if let Some(signal) = crate::platform::process::exit_signal(&status) {
                crate::platform::process::end_by_signal(signal);
            }
            if code == 0 { EXIT_FAILURE } else { code }
        }
        TurnOutcome::ReplyUnreadable(why) => {
            errln!("abcd turn: the reply of the {agent} agent (turn {turn_number}) cannot be read: {why}; no reply is written");
            TURN_REPLY_UNREADABLE
        }
    })
}
