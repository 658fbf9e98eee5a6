//! The real-host tier: the real Claude Code client and the real Codex CLI against abcd's
//! hooks (docs/real-host.md). Skips without a client unless `ABCD_REAL_HOST=require` (CI)
//! makes that a failure.

#[path = "../common/mod.rs"]
mod common;

mod codex;
mod real_host;
