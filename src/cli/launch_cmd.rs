//! `abcd launch … -- <command…>` and its watcher (SPEC §7): every agent is in the ledger
//! before it starts. The launcher checks the lane under the writer lock (no live agent, no
//! receipt waiting, not halted), makes the lane's own worktree or takes the folder --cwd
//! names, saves uncommitted work aside where it may, records `launch.intended`,
//! then starts a detached watcher; the watcher starts the agent in its own session,
//! records `launch.started` with its pid and start time, waits, and records
//! `launch.exited`. A launcher killed after the intent leaves a ledger that says so.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::EXIT_OK;
use crate::command::launch::{self, LaunchRequest, Launched, WatchSpec, Watched};

#[derive(Args, Debug)]
#[command(
    about = "Start an agent for a lane, recorded in the ledger before it starts",
    long_about = "Start an agent for a lane of a run, recorded in the ledger before it starts.\n\n\
Refused while an earlier agent of the lane is alive, while a receipt from an earlier launch waits \
uncollected (`abcd collect` first), or while the run is halted.\n\n\
The lane runs in a git worktree of its own, which abcd makes on the lane's first launch (on a new \
branch abcd/<run>/<lane> started at this checkout's HEAD, under the home store's lanes/ folder), \
records, and removes at `abcd run finish` when it is clean; your own checkout is never the lane \
unless --cwd names it. Uncommitted work left in the lane's worktree (with no live agent) is saved \
aside first to a ref under refs/abcd/saved/, checked to hold all of it, recorded, and those files \
returned to their last commit; the output names the ref and the command that brings the work back. \
In a folder abcd did not make, uncommitted work is refused unless --save-aside says so. abcd's own \
files (.abcd/, .claude/settings.json) and ignored files are never saved or removed.\n\n\
The agent runs detached, its output in the run's folder in the local tier; its exit is recorded \
when it ends."
)]
pub struct LaunchArgs {
    /// The run, as `abcd run start` recorded it
    #[arg(long)]
    run: String,
    /// The lane of the run the agent works in
    #[arg(long)]
    lane: String,
    /// What the agent is (implementer, reviewer, …)
    #[arg(long)]
    role: String,
    /// Where the agent writes its receipt when done
    #[arg(long, value_name = "PATH")]
    receipt: PathBuf,
    /// Run the lane in this folder, a git work tree's root, instead of the worktree abcd
    /// makes for it (default: abcd's own worktree for the lane)
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// With --cwd: uncommitted work in that folder may be saved aside to a ref and its files
    /// reset before the agent starts (without it, such work is refused and left alone)
    #[arg(long, requires = "cwd")]
    save_aside: bool,
    /// Print JSON for scripts
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

pub fn run_launch(args: LaunchArgs) -> anyhow::Result<i32> {
    let here = super::place_here()?;
    let request = LaunchRequest {
        run: args.run.clone(),
        lane: args.lane.clone(),
        role: args.role,
        receipt: args.receipt,
        cwd: args.cwd,
        save_aside: args.save_aside,
        command: args.command,
    };
    let Launched { launch: n, process: p, stdout, stderr, worktree, branch, receipt } =
        launch::launch(&request, &here, &mut |line| outln!("{line}"))?;
    if args.json {
        outln!(
            "{}",
            json!({"run": args.run, "lane": args.lane, "launch": n, "process": p, "stdout": stdout, "stderr": stderr,
                "worktree": worktree, "branch": branch, "receipt": receipt})
        );
    } else {
        outln!("launch {n} of {}/{} started: pid {}; output in {}", args.run, args.lane, p.pid, stdout.unwrap_or_default());
        match branch {
            Some(b) => outln!("  it runs in {} (abcd's worktree for the lane, branch {b})", worktree.display()),
            None => outln!("  it runs in {}", worktree.display()),
        }
        outln!("  its receipt is expected at {}", receipt.display());
    }
    Ok(EXIT_OK)
}

pub fn run_watch(args: WatchArgs) -> anyhow::Result<i32> {
    let spec = WatchSpec {
        working_copy: args.working_copy,
        run: args.run,
        lane: args.lane,
        launch: args.launch,
        program: args.program,
        cwd: args.cwd,
        args: args.args,
    };
    Ok(match launch::watch(&spec)? {
        Watched::Exited => EXIT_OK,
        Watched::NotStarted(e) => {
            errln!("abcd watcher: {e}");
            super::EXIT_FAILURE
        }
        Watched::NotMine(why) => {
            errln!("abcd watcher: nothing started: {why}");
            super::EXIT_FAILURE
        }
    })
}
