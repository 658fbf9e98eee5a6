//! abcd keeps AI coding agents' working state crash-safe: every state change is an
//! fsynced, hash-chained JSONL event, and every file a person or hook reads is a
//! projection folded from the journal. The library never prints and never exits; the
//! `abcd` binary (`cli`) is a thin layer over it.

pub mod away;
pub mod byte_search;
pub mod checklist;
pub mod cli;
pub mod clock;
pub mod command;
pub mod cron;
pub mod event;
pub mod fold;
pub mod git;
pub mod host;
pub mod journal;
pub mod ledger;
pub mod mirror;
pub mod owed;
pub mod phased;
pub mod places;
pub mod platform;
pub mod ref_name;
pub mod refusal;
pub mod secrets;
pub mod store;
pub mod utc_time;
pub mod verdict;
