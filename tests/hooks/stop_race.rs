//! Two Stop hooks of one session at once: both read the session's state
//! before either records its verdict. The hook's two halves (`stop::read`, then
//! `PendingStop::finish`) are called in that interleaving, so the race is the same on every
//! run: no sleeps, no second process to schedule.
//!
//! One test in this binary: it sets the environment the library reads (`ABCD_HOME`, the
//! test clock, the block cap) before anything else runs.

use crate::common;

use abcd::command::hook::stop::{self, StopPayload, StopRead};
use abcd::event::SESSION_JUDGED;
use abcd::journal::storage::RealDisk;
use abcd::places;
use abcd::store::Store;
use common::repo::{TestRepo, abcd};

const NOW: &str = "2026-12-01T18:00:00Z";
const SESSION: &str = "s1";

fn payload(stop_hook_active: bool) -> StopPayload<'static> {
    StopPayload {
        bound: abcd::host::StopBound::HostCap,
        wakes: true,
        session_id: Some(SESSION),
        stop_hook_active,
        last_assistant_message: Some("Still on it."),
        session_crons: &[],
    }
}

fn read(store: &Store, root: &std::path::Path, active: bool) -> Box<stop::PendingStop> {
    let place = places::Place::at(root);
    let away = abcd::command::hook::away::AwayOnce::new(&place);
    match stop::read(store, root, &away, &payload(active), std::time::Instant::now()).unwrap() {
        StopRead::ToJudge(pending) => pending,
        StopRead::Answered(o) => panic!("answered without a verdict: {:?} {:?}", o.reply, o.warning),
    }
}

/// The block counts of this session's `session.judged` events, in journal order.
fn judged_counts(store: &Store) -> Vec<u64> {
    let text = std::fs::read_to_string(&store.journal().paths().journal).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["kind"] == SESSION_JUDGED && e["data"]["session"] == SESSION)
        .map(|e| e["data"]["block_count"].as_u64().unwrap())
        .collect()
}

#[test]
fn two_stop_hooks_of_one_session_racing_both_count() {
    let repo = TestRepo::new().managed();
    // SAFETY: the only test of this binary, and nothing else runs yet: no thread reads the
    // environment while it is set.
    unsafe {
        std::env::set_var("ABCD_HOME", &repo.home);
        std::env::set_var("ABCD_TEST_NOW", NOW);
        std::env::set_var("TZ", "UTC");
        std::env::set_var(stop::FORGE_PROGRAM_VAR, "");
        std::env::set_var(stop::BLOCK_CAP_VAR, "2");
    }
    let run = |args: &[&str]| {
        let out = abcd(&repo.root, &repo.home).args(args).env("ABCD_TEST_NOW", NOW).env("TZ", "UTC").output().unwrap();
        assert!(out.status.success(), "abcd {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(&["checklist", "add", "Write the parser"]);
    run(&["mode", "autonomous", "--until", "+8h"]);

    let (paths, scope) = places::working_copy_journal(&repo.root).unwrap();
    let store = Store::new(places::open_journal(RealDisk::shared(), paths).unwrap());
    let first = read(&store, &repo.root, false).finish(&store, &scope, &repo.root).unwrap();
    assert!(first.reply.block.is_some(), "away with work owed: blocked");
    assert_eq!(judged_counts(&store), [1]);

    // Both read the count 1; each records its verdict only after the other's read.
    let a = read(&store, &repo.root, true);
    let b = read(&store, &repo.root, true);
    let a = a.finish(&store, &scope, &repo.root).unwrap();
    let b = b.finish(&store, &scope, &repo.root).unwrap();
    assert!(a.reply.block.is_some() && b.reply.block.is_some(), "{:?} {:?}", a.warning, b.warning);
    assert_eq!(judged_counts(&store), [1, 2, 3], "each verdict builds on the one recorded before it");
    let state = store.current_state().unwrap().state;
    assert_eq!(state.sessions[SESSION].state.block_count, 3);

    // The third block passes the cap of 2: the later verdict, decided from the count
    // under the lock, records the stop in the away record.
    let back = abcd(&repo.root, &repo.home).args(["mode", "back"]).env("ABCD_TEST_NOW", NOW).env("TZ", "UTC").output().unwrap();
    let text = String::from_utf8_lossy(&back.stdout);
    assert!(text.contains("stop: stopped with work owed, possibly forced by the cap"), "{text}");
}
