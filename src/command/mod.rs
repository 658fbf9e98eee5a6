//! The command layer: one module per verb family, doing the work a verb or a hook asks
//! for and returning a typed outcome. Commands append through the store and read through
//! it; they never print, never pick an exit code and never parse arguments (`cli` does).
//!
//! - [`error`]: the one error type, and whether the person can fix what stopped the work.
//! - [`away`]: `abcd mode` and `abcd decide`: the away record in the repository journal.
//! - [`checklist`]: `abcd checklist` add, set, show and render.
//! - [`design_done`]: trade-offs tied to checklist items, the person's answers, and
//!   `abcd checklist design-done`.
//! - [`hook`]: `abcd hook <event>`: each Claude Code hook's logic over host-neutral
//!   requests and replies (the host adapter, `host`, speaks the host's JSON).
//! - [`init`]: `abcd init`: the repository managed and the hooks installed.
//! - [`journal`]: `abcd journal repair` and `checkpoint`.
//! - [`replay`]: `abcd replay`, the audit and its checks of every cache.
//! - [`run`]: `abcd run`, `collect` and `resume`: the runs this machine drives, their
//!   receipts, and the resume listing with its safe moves.
//! - [`lane`]: the working copy a run belongs to (`WorkingCopy`, opened from a `Place`),
//!   and where a lane's agent runs: the worktree abcd makes for it, and what abcd may save
//!   aside and reset there.
//! - [`lane_start`]: what a lane's agent starts with: abcd's hooks and its assignment.
//! - [`launch`]: why a lane may not launch now, and the watcher's start under the lock.
//! - [`status_line`]: `abcd status-line`: the one line the host's status bar shows.
//! - [`own_file`]: the one predicate every guard asks: is this path abcd's own file? And
//!   the path a tool would write, resolved as that predicate judges it.
//! - [`mode_refusals`]: each refused attempt to set or end the away mode, recorded.
//! - [`notify`]: the Notification hook's handler, and the person's notify command started
//!   and supervised while away.
//! - [`sweep`]: the blocker sweep's read of every working copy of the repository.
//! - [`mirror`]: `abcd mirror`: the journals pushed to and fetched from git refs.
//! - [`loops`]: `abcd loop` start, drive, control, stop and status, and the turn runner
//!   `__loop-turn`.
//! - [`loop_driver`]: the phased loop's driver: reading the record, starting turns,
//!   collecting replies, resuming after a crash.

pub mod away;
pub mod checklist;
pub mod design_done;
pub mod error;
pub mod hook;
pub mod init;
pub mod init_codex;
pub mod journal;
pub mod lane;
pub mod lane_start;
pub mod launch;
pub mod loop_driver;
pub mod loops;
pub mod mirror;
pub mod mode_refusals;
pub mod notify;
pub mod own_file;
pub mod replay;
pub mod run;
pub mod status_line;
pub mod sweep;

pub use error::{Blame, CommandError};

/// An event this process writes outside any host session.
pub(crate) fn new_event(kind: &str, data: serde_json::Value) -> crate::journal::NewEvent {
    crate::journal::NewEvent { kind: kind.into(), actor: crate::journal::Actor::this_process(None), data }
}

/// An event a person's verb writes: its actor names the host session the verb runs in, when
/// the host names one, so the record says on whose word the change was made.
pub(crate) fn caller_event(kind: &str, data: serde_json::Value) -> crate::journal::NewEvent {
    crate::journal::NewEvent { kind: kind.into(), actor: crate::journal::Actor::this_process(crate::host::session_from_env()), data }
}
