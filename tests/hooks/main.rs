//! The hooks and the away mode through the built binary: every hook's payload, the stop
//! verdict, owed work read from real git, own work, promises, the blocker sweep, injection
//! receipts, and two Stop hooks racing.

#[path = "../common/mod.rs"]
mod common;

mod away;
mod git_children;
mod hooks;
mod owed_git;
mod own_work;
mod promises;
mod receipt;
mod stop_race;
mod sweep;
