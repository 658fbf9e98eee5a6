//! The verbs through the built binary: the checklist, init (for Claude Code and Codex), the demo, man pages, hints,
//! design-done, the status line, output to failing streams, the binary's own start,
//! terminal safety, the session-start context's budget, and the mirror's verbs.

#[path = "../common/mod.rs"]
mod common;

mod checklist;
mod codex_init;
mod context_budget;
mod demo;
mod design_done;
mod hints;
mod init;
mod man;
mod mirror;
mod mirror_restore;
mod mirror_review;
mod mirror_rules;
mod mirror_saved;
mod output_streams;
mod process_start;
mod status_line;
mod terminal_safety;
