//! The slow tier: the crash lab (the binary killed at random moments), the simulated disk's
//! crash and fault properties, and the rule of proof's model on random damage. Each runs a
//! quick mode by default (what CI runs) and a long mode when its environment variable asks
//! (docs/testing.md, "How to run each tier").

#[path = "../common/mod.rs"]
mod common;

mod crash_lab;
mod repair_model;
mod sim_properties;
