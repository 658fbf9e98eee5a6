//! Two Stop hooks of one session at once: both read the session's state
//! before either records its verdict. The hook's two halves (`stop::read`, then
//! `PendingStop::finish`) are called in that interleaving, so the race is the same on every
//! run: no sleeps, no second process to schedule.
//!
//! One test in this module: it sets the environment the library reads (`ABCD_HOME`, the
//! test clock, the block cap) before anything in it runs. It ends with the Stop's cost on
//! the disk: the turn's receipts and the verdict in one append (one sync), and the state
//! read once.

use crate::common;

use abcd::command::hook::stop::{self, StopPayload, StopRead};
use abcd::event::SESSION_JUDGED;
use abcd::journal::storage::{Delegate, DelegateFile, RealDisk, Storage, StorageFile};
use abcd::places;
use abcd::store::Store;
use common::repo::{TestRepo, abcd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
        host: abcd::host::Host::Claude,
        transcript_path: None,
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

/// The real disk, counting the journal's data syncs and the reads of `state.json`.
#[derive(Default)]
struct Counted {
    journal_syncs: Arc<AtomicUsize>,
    state_reads: AtomicUsize,
}

struct CountedJournal {
    inner: Box<dyn StorageFile>,
    syncs: Arc<AtomicUsize>,
}

impl DelegateFile for CountedJournal {
    fn inner(&self) -> &dyn StorageFile {
        &*self.inner
    }
    fn sync_data(&self) -> std::io::Result<()> {
        self.syncs.fetch_add(1, Ordering::SeqCst);
        self.inner.sync_data()
    }
}

impl Delegate for Counted {
    fn inner(&self) -> &dyn Storage {
        &RealDisk
    }
    fn open_rw(&self, path: &std::path::Path) -> std::io::Result<Box<dyn StorageFile>> {
        let file = RealDisk.open_rw(path)?;
        Ok(if path.ends_with("journal.jsonl") { Box::new(CountedJournal { inner: file, syncs: self.journal_syncs.clone() }) } else { file })
    }
    fn open_read(&self, path: &std::path::Path) -> std::io::Result<Box<dyn StorageFile>> {
        if path.ends_with("state.json") {
            self.state_reads.fetch_add(1, Ordering::SeqCst);
        }
        RealDisk.open_read(path)
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
    let store = Store::new(places::open_journal(RealDisk::shared(), paths.clone()).unwrap());
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
    // A prompt while away sends the away news: an injection the Stop settles. The receipt
    // and the verdict reach the journal in one append, and the Stop reads the state once:
    // under the lock the journal has not moved since its read.
    let prompt = serde_json::json!({"session_id": SESSION, "cwd": repo.root, "hook_event_name": "UserPromptSubmit", "prompt": "go on"});
    let mut cmd = abcd(&repo.root, &repo.home);
    cmd.args(["hook", "user-prompt-submit"]).env("ABCD_TEST_NOW", NOW).env("TZ", "UTC");
    let out = common::repo::output_with_stdin(&mut cmd, prompt.to_string().as_bytes());
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let counted = Arc::new(Counted::default());
    let counted_store = Store::new(places::open_journal(counted.clone(), paths.clone()).unwrap());
    let pending = read(&counted_store, &repo.root, true);
    let state_reads_before_lock = counted.state_reads.load(Ordering::SeqCst);
    let judged = pending.finish(&counted_store, &scope, &repo.root).unwrap();
    assert!(judged.reply.block.is_some(), "{:?}", judged.warning);
    let text = std::fs::read_to_string(&store.journal().paths().journal).unwrap();
    let kinds: Vec<String> =
        text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].as_str().unwrap().into()).collect();
    assert_eq!(
        kinds[kinds.len() - 3..],
        ["context.injected", "context.unknown", "session.judged"],
        "the prompt's injection, then the Stop's receipt and verdict"
    );
    assert_eq!(counted.journal_syncs.load(Ordering::SeqCst), 1, "the receipt and the verdict in one append");
    assert_eq!(counted.state_reads.load(Ordering::SeqCst), state_reads_before_lock, "the state is not read again under the lock");

    let back = abcd(&repo.root, &repo.home).args(["mode", "back"]).env("ABCD_TEST_NOW", NOW).env("TZ", "UTC").output().unwrap();
    let text = String::from_utf8_lossy(&back.stdout);
    assert!(text.contains("stop: stopped with work owed, possibly forced by the cap"), "{text}");
}
