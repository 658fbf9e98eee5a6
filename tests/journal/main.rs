//! The journal layer: its on-disk format (vectors, schemas, golden replays, the fuzz corpus),
//! appends and group commit (properties, loom), and what a damaged or lost journal becomes
//! (salvage, the rule of proof's reproductions and attacks, scope, lost journals,
//! projections left behind), through the library and through `abcd journal`/`abcd replay`.
//! The slow randomised crash and damage models are in the `crash_lab` binary.

#[path = "../common/mod.rs"]
mod common;

mod attack_repair;
mod cli_journal;
mod cli_replay;
mod fuzz_corpus;
mod golden_replays;
mod group_commit;
mod loom_group_commit;
mod lost_journal;
mod projection_lag;
mod properties;
mod repair_proof;
mod salvage;
mod schemas;
mod scope;
mod vectors;
