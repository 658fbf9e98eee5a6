//! `abcd run start|takeover|halt|lift|finish`, `abcd collect` and `abcd resume`: parses,
//! calls `command::run`, prints.

use clap::{Args, Subcommand};
use serde_json::json;

use super::terminal::{Lines, terminal_safe};
use super::{EXIT_OK, place_here};
use crate::command::lane::WorktreeEnd;
use crate::command::run::{self as run_cmd, RESUME_SCHEMA, ResumeFile, RunListing, StepMove, driver_words};
use crate::phased::RunState;

#[derive(Subcommand, Debug)]
pub enum RunAction {
    /// Record a run and its live driver (refused while another driver of it lives)
    Start {
        /// The run's name
        run: String,
        /// A lane of the run; repeatable
        #[arg(long = "lane", value_name = "LANE")]
        lanes: Vec<String>,
        /// The driver's pid (default: the nearest ancestor of abcd that is not a shell)
        #[arg(long, value_name = "PID")]
        driver_pid: Option<u32>,
        /// Print JSON for scripts
        #[arg(long)]
        json: bool,
    },
    /// Claim a run whose driver is gone, on the record
    Takeover {
        /// The run to claim, as `abcd resume` lists it
        run: String,
        /// The new driver's pid (default: the nearest ancestor of abcd that is not a shell)
        #[arg(long, value_name = "PID")]
        driver_pid: Option<u32>,
        /// Print JSON for scripts
        #[arg(long)]
        json: bool,
    },
    /// Make every later `abcd launch` of the run (every run of this working copy without
    /// --run) refuse until `abcd run lift`
    Halt {
        /// Only this run (default: every unfinished run of this working copy)
        #[arg(long)]
        run: Option<String>,
    },
    /// Lift a halt
    Lift {
        /// Only this run (default: every unfinished run of this working copy)
        #[arg(long)]
        run: Option<String>,
    },
    /// Record that a run is over (it leaves the resume listing); refused while an agent of
    /// it is alive or starting or a receipt waits
    Finish {
        /// The run that is over
        run: String,
    },
    /// Save a lane's uncommitted work aside to a ref and return its worktree to its last
    /// commit; only in the worktree abcd made for the lane, finished run or not, with no
    /// agent of the lane alive
    SaveAside {
        /// The run the lane belongs to
        #[arg(long)]
        run: String,
        /// The lane whose worktree's work is saved
        #[arg(long)]
        lane: String,
    },
}

#[derive(Args, Debug)]
#[command(about = "Record a lane's receipt as collected (its hash), so the lane may launch again")]
pub struct CollectArgs {
    /// The run the lane belongs to
    #[arg(long)]
    run: String,
    /// The lane whose receipt arrived
    #[arg(long)]
    lane: String,
    /// Print JSON for scripts
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
#[command(
    about = "List every run this machine drives: drivers, lanes, agents, receipts, uncommitted work, base drift",
    long_about = "The resume listing (also written as resume.json in this working copy's local tier): every run \
this machine drives (found through the machine journal), its driver alive or gone, each lane's stage, each agent \
alive or lost (pid and start time, so a reused pid reads as gone), each receipt that arrived uncollected, each \
lane's uncommitted work, how far each lane's base has moved behind the default branch, and whether the run is \
halted.\n\n--step does only the safe moves: collects arrived receipts and saves aside the uncommitted work of \
lanes with no live agent, then prints the listing again. It never starts anything."
)]
pub struct ResumeArgs {
    /// Print JSON for scripts
    #[arg(long)]
    json: bool,
    /// Collect arrived receipts and save aside uncommitted work of lanes with no live agent
    #[arg(long)]
    step: bool,
}

pub fn run_run(action: RunAction) -> anyhow::Result<i32> {
    match action {
        RunAction::Start { run, lanes, driver_pid, json } => {
            let started = run_cmd::start(&place_here()?, &run, lanes, driver_pid)?;
            if json {
                outln!("{}", json!({"run": run, "driver": started.driver, "working_copy": started.working_copy, "lanes": started.lanes}));
            } else {
                outln!("run {run} started, driven by {}; lanes: {}", driver_words(&started.driver), started.lanes.join(", "));
            }
        }
        RunAction::Takeover { run, driver_pid, json } => {
            let taken = run_cmd::takeover(&place_here()?, &run, driver_pid)?;
            if json {
                outln!("{}", json!({"run": run, "driver": taken.driver, "previous": taken.previous}));
            } else {
                outln!("run {run} taken over by {} (its driver {} was gone)", driver_words(&taken.driver), driver_words(&taken.previous));
            }
        }
        RunAction::Halt { run } => print_halted(&run_cmd::halt(&place_here()?, run.as_deref(), true)?, true),
        RunAction::Lift { run } => print_halted(&run_cmd::halt(&place_here()?, run.as_deref(), false)?, false),
        RunAction::Finish { run } => {
            let ends = run_cmd::finish(&place_here()?, &run)?;
            outln!("run {run} finished");
            for end in ends {
                match end {
                    WorktreeEnd::Removed { lane, path, branch, branch_deleted, kept } => {
                        let branch_words = if branch_deleted {
                            format!("its branch {branch} held no commit and was deleted")
                        } else {
                            format!("its branch {branch} keeps the lane's commits")
                        };
                        let kept_words =
                            kept.map(|k| format!("; abcd's files from it (its journal, receipts) are in {k}")).unwrap_or_default();
                        outln!("  lane {lane}: worktree {path} removed; {branch_words}{kept_words}")
                    }
                    WorktreeEnd::Kept { lane, path, why } => outln!("  lane {lane}: worktree {path} kept: {why}"),
                }
            }
        }
        RunAction::SaveAside { run, lane } => outln!("{}", run_cmd::save_lane_aside(&place_here()?, &run, &lane)?),
    }
    Ok(EXIT_OK)
}

fn print_halted(names: &[String], halted: bool) {
    if names.is_empty() {
        outln!("no run in this working copy");
    } else {
        let what = if halted { "halted: every later launch is refused until `abcd run lift`" } else { "lifted" };
        outln!("{} {what}", names.join(", "));
    }
}

pub fn run_collect(args: CollectArgs) -> anyhow::Result<i32> {
    let c = run_cmd::collect_here(&place_here()?, &args.run, &args.lane)?;
    if args.json {
        outln!("{}", json!(c));
    } else {
        outln!("collected the receipt of launch {} of {}/{} ({} bytes, blake3 {})", c.launch, c.run, c.lane, c.bytes, c.blake3);
    }
    Ok(EXIT_OK)
}

/// The listing, one line per fact: a value holding a newline (a path, a file name) shows it
/// as an escape instead of starting a line of its own.
fn print_listing(listings: &[RunListing]) {
    let line = |text: String| outln!("{}", terminal_safe(&text, Lines::One));
    if listings.is_empty() {
        outln!("no run is in progress on this machine");
    }
    for r in listings {
        let driver = match (&r.driver, r.driver_alive) {
            (Some(d), true) => format!("driver alive: {}", driver_words(d)),
            (Some(d), false) => format!("driver gone: {} ({})", driver_words(d), gone_driver_hint(r)),
            (None, _) => "driver unknown".to_string(),
        };
        let halted = if r.halted { "; HALTED (`abcd run lift` to launch again)" } else { "" };
        line(format!("run {} in {}: {driver}{halted}", r.run, r.working_copy));
        if let Some(p) = &r.problem {
            line(format!("  cannot be read: {p}"));
        }
        if let Some(l) = &r.loop_record {
            line(format!("  loop: {}", l.summary));
        }
        for l in &r.lanes {
            line(format!("  lane {}: {}", l.lane, l.stage));
            if !l.uncommitted.is_empty() {
                let shown: Vec<&str> = l.uncommitted.iter().take(10).map(String::as_str).collect();
                let more = l.uncommitted.len().saturating_sub(shown.len());
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                line(format!("    uncommitted: {}{more}", shown.join(", ")));
            }
            if let Some(why) = &l.worktree_problem {
                line(format!("    worktree cannot be read: {why}"));
            }
            if let Some(why) = &l.base_problem {
                line(format!("    base drift cannot be measured: {why}"));
            }
            if let Some(n) = l.behind_default.filter(|n| *n > 0) {
                line(format!("    base: {n} commit(s) behind the default branch as last fetched"));
            }
            for s in &l.saved_aside {
                line(format!("    saved aside: {s}"));
            }
            for p in r.pull_requests.iter().filter(|p| p.lane == l.lane) {
                let checks = serde_json::to_value(p.checks).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
                line(format!("    pull request #{} waiting on {} (checks: {checks})", p.number, p.branch));
            }
        }
        if let Some(at) = r.forge_listed_at {
            let waiting = r.pull_requests.len();
            line(format!(
                "  pull requests waiting: {waiting}, as the forge listing of {} saw them (not listed again by resume)",
                at.strftime("%Y-%m-%d %H:%M UTC")
            ));
        }
    }
}

/// What to run for a run whose driver is gone. A loop's run is carried on by the loop's
/// own verbs: `abcd run takeover` would make the caller its driver, and `abcd loop drive`
/// then refuses while that caller lives.
fn gone_driver_hint(r: &RunListing) -> String {
    let run = &r.run;
    match r.loop_record.as_ref().map(|l| l.state) {
        None => format!("claim it with `abcd run takeover {run}`"),
        Some(RunState::Running) => format!("`abcd loop drive {run}` carries the loop on"),
        Some(RunState::Paused) => format!("the loop is paused: `abcd loop resume {run}`, then `abcd loop drive {run}` carries it on"),
        Some(RunState::Stopped) => format!("the loop has stopped: `abcd run finish {run}` takes the run off this listing"),
    }
}

pub fn run_resume(args: ResumeArgs) -> anyhow::Result<i32> {
    // Outside a working copy (or in a folder gone) the listing still shows every run.
    let here = place_here().ok();
    let listings = run_cmd::resume(here.as_ref(), args.step, &mut print_move)?;
    if args.json {
        outln!("{}", serde_json::to_string(&ResumeFile { schema: RESUME_SCHEMA, runs: &listings })?);
    } else {
        print_listing(&listings);
    }
    Ok(EXIT_OK)
}

/// One line per move of `abcd resume --step`, as it is made.
fn print_move(step: StepMove) {
    match step {
        StepMove::Collected { run, lane, launch } => outln!("collected the receipt of launch {launch} of {run}/{lane}"),
        StepMove::NotCollected { run, lane, why } => outln!("not collected ({run}/{lane}): {why}"),
        StepMove::LoopNotStopped { run, lane } => {
            outln!("not saved aside ({run}/{lane}): the loop {run} is not stopped; its next turn builds on this work")
        }
        StepMove::SavedAside(line) => outln!("{line}"),
        StepMove::NotSavedAside { run, lane, why } => outln!("not saved aside ({run}/{lane}): {why}"),
    }
}
