//! Runs, lanes and the phased loop through the built binary and real processes: the launch
//! ledger, process identity, a lane worktree's save-aside, one agent per lane (with its
//! adversary's attacks), and the loop and its read path.

#[path = "../common/mod.rs"]
mod common;

mod attack_lanes;
mod lanes;
mod ledger;
mod ledger_process;
mod ledger_worktree;
mod r#loop;
mod loop_fold;
