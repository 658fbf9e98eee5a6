//! The real-host tier: the real Claude Code client against abcd's hooks (docs/real-host.md).
//! Skips without the client unless `ABCD_REAL_HOST=require` (CI) makes that a failure.

#[path = "../common/mod.rs"]
mod common;

mod real_host;
