//! Group commit on a real disk: many threads through one handle, fewer syncs than
//! appends, nothing lost, and a failed sync fails its whole batch and every later append.

use crate::common;

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use abcd::journal::group::SharedJournal;
use abcd::journal::group_sync::{GroupCommit, SPIN_WAIT_MAX, waits_yield};
use abcd::journal::scan::{self, StartPoint, Verdict};
use abcd::journal::storage::{Delegate, DelegateFile, RealDisk, Storage, StorageFile};
use abcd::journal::{Journal, JournalError};
use common::{TempJournal, event};
use std::sync::Mutex as StdMutex;
use std::time::{Duration, Instant};

/// The real disk, counting data syncs, and able to fail them on demand.
struct CountingDisk {
    syncs: Arc<AtomicUsize>,
    fail_syncs: Arc<AtomicBool>,
}

struct CountingFile {
    inner: Box<dyn StorageFile>,
    syncs: Arc<AtomicUsize>,
    fail_syncs: Arc<AtomicBool>,
}

impl DelegateFile for CountingFile {
    fn inner(&self) -> &dyn StorageFile {
        self.inner.as_ref()
    }
    fn sync_data(&self) -> io::Result<()> {
        if self.fail_syncs.load(Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        self.syncs.fetch_add(1, Ordering::SeqCst);
        self.inner.sync_data()
    }
}

impl Delegate for CountingDisk {
    fn inner(&self) -> &dyn Storage {
        &RealDisk
    }
    fn file(&self, inner: Box<dyn StorageFile>) -> Box<dyn StorageFile> {
        Box::new(CountingFile { inner, syncs: self.syncs.clone(), fail_syncs: self.fail_syncs.clone() })
    }
}

const THREADS: u64 = 16;
const APPENDS_PER_THREAD: u64 = 50;

fn counting_journal(tj: &TempJournal) -> (SharedJournal, Arc<AtomicUsize>, Arc<AtomicBool>) {
    let syncs = Arc::new(AtomicUsize::new(0));
    let fail = Arc::new(AtomicBool::new(false));
    let disk = Arc::new(CountingDisk { syncs: syncs.clone(), fail_syncs: fail.clone() });
    let journal = Journal::new(disk, tj.paths.clone(), Some(abcd::journal::anchor::AnchorStore::new(&tj.home)));
    (SharedJournal::new(journal, Some(tj.scope())), syncs, fail)
}

#[test]
fn sixteen_threads_share_syncs_and_lose_nothing() {
    let tj = TempJournal::new();
    let (shared, syncs, _) = counting_journal(&tj);
    shared.append(event("compaction.recorded", 0)).unwrap();
    let before = syncs.load(Ordering::SeqCst);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let shared = &shared;
            s.spawn(move || {
                for i in 0..APPENDS_PER_THREAD {
                    let mut e = event("compaction.recorded", i);
                    e.data["thread"] = t.into();
                    shared.append(e).unwrap();
                }
            });
        }
    });
    let appends = (THREADS * APPENDS_PER_THREAD) as usize;
    let used = syncs.load(Ordering::SeqCst) - before;
    assert!(used < appends, "{used} syncs for {appends} appends: no batching happened");
    let file = RealDisk.open_read(tj.path()).unwrap();
    let mut count = 0;
    let report = scan::scan(file.as_ref(), StartPoint::GENESIS, |_, _| {
        count += 1;
        Ok::<(), ()>(())
    })
    .unwrap();
    assert_eq!(report.verdict, Verdict::Clean);
    assert_eq!(count, appends + 2);
    eprintln!("{appends} appends from {THREADS} threads took {used} syncs");
}

#[test]
fn a_failed_sync_fails_the_append_and_every_later_one_on_that_journal() {
    let tj = TempJournal::new();
    let (shared, _, fail) = counting_journal(&tj);
    shared.append(event("compaction.recorded", 0)).unwrap();
    fail.store(true, Ordering::SeqCst);
    let err = shared.append(event("compaction.recorded", 1)).unwrap_err();
    assert!(matches!(*err, JournalError::SyncFailed { .. }), "{err}");
    assert!(err.to_string().contains("not acknowledged"), "{err}");
    fail.store(false, Ordering::SeqCst);
    // The disk works again, but this process must not append: the failed sync may have
    // dropped pages the kernel will never report again.
    let err = shared.append(event("compaction.recorded", 2)).unwrap_err();
    assert!(matches!(*err, JournalError::Poisoned { .. }), "{err}");
    let err = tj.journal().append(event("compaction.recorded", 3), None).unwrap_err();
    assert!(matches!(err, JournalError::Poisoned { .. }), "{err}");
}

// The gather of group_sync with real threads and real time (the loom model cannot time out).
fn record(batches: &StdMutex<Vec<Vec<u32>>>, pause: Duration) -> impl FnMut(Vec<u32>) -> Vec<Result<u32, ()>> + '_ {
    move |batch: Vec<u32>| {
        std::thread::sleep(pause);
        batches.lock().unwrap().push(batch.clone());
        batch.into_iter().map(Ok).collect()
    }
}

#[test]
fn a_lone_submitter_never_waits_to_gather() {
    let group = GroupCommit::<u32, u32, ()>::new(16, usize::MAX, 64);
    let batches = StdMutex::new(Vec::new());
    let started = Instant::now();
    // The gather bound is long, so one wait for it stands out from any load.
    const GATHER: Duration = Duration::from_secs(20);
    for i in 0..50 {
        assert_eq!(group.submit(i, 1, GATHER, record(&batches, Duration::ZERO)), Ok(i));
    }
    assert!(started.elapsed() < GATHER, "no submit waited for the 20 s gather: {:?}", started.elapsed());
    assert_eq!(batches.lock().unwrap().len(), 50);
}

#[test]
fn a_thread_that_stops_submitting_costs_one_bounded_wait_then_is_forgotten() {
    // Long enough that a wait for it stands out from a loaded machine's delays.
    const GATHER: Duration = Duration::from_secs(3);
    let group = GroupCommit::<u32, u32, ()>::new(16, usize::MAX, 64);
    let batches = StdMutex::new(Vec::new());
    std::thread::scope(|s| {
        // A leads batch [1] and holds it for 100 ms, long enough for B to queue 2.
        let a = s.spawn(|| group.submit(1, 1, GATHER, record(&batches, Duration::from_millis(100))));
        std::thread::sleep(Duration::from_millis(30));
        let b = s.spawn(|| group.submit(2, 1, GATHER, record(&batches, Duration::ZERO)));
        assert_eq!(a.join().unwrap(), Ok(1));
        assert_eq!(b.join().unwrap(), Ok(2));
    });
    // B (which wrote the last batch) never submits again; this thread's next request
    // waits for it once, at most the gather bound, and the one after does not wait.
    let last_writer_gone = Instant::now();
    assert_eq!(group.submit(3, 1, GATHER, record(&batches, Duration::ZERO)), Ok(3));
    let first = last_writer_gone.elapsed();
    let again = Instant::now();
    assert_eq!(group.submit(4, 1, GATHER, record(&batches, Duration::ZERO)), Ok(4));
    let second = again.elapsed();
    assert!(first < GATHER + GATHER / 2, "bounded by the gather wait: {first:?}");
    assert!(second < GATHER / 2, "the thread that left is no longer waited for: {second:?}");
    let all: Vec<u32> = batches.lock().unwrap().iter().flatten().copied().collect();
    assert_eq!(all.len(), 4, "each request written once: {all:?}");
}

/// Waiters yield for at most `SPIN_WAIT_MAX` and then sleep; one still waiting when its
/// result comes is woken (watched failing with the sleeping flag left unset: the waiters
/// never returned).
#[test]
fn waiters_past_their_yield_budget_sleep_and_are_woken() {
    let group = Arc::new(GroupCommit::<u32, u32, ()>::new(16, usize::MAX, 64).yielding_from(0));
    let batches = Arc::new(StdMutex::new(Vec::new()));
    let slow_write = SPIN_WAIT_MAX * 40;
    let (done, results) = std::sync::mpsc::channel();
    for i in 0..4 {
        let (group, batches, done) = (group.clone(), batches.clone(), done.clone());
        // Detached: a waiter never woken fails the test below instead of hanging it.
        std::thread::spawn(move || {
            // Zero: the last write was short, so waiting threads yield first.
            let _ = done.send(group.submit(i, 1, Duration::ZERO, record(&batches, slow_write)));
        });
    }
    let mut got: Vec<u32> =
        (0..4).map(|_| results.recv_timeout(Duration::from_secs(10)).expect("every waiter is woken").unwrap()).collect();
    got.sort();
    assert_eq!(got, vec![0, 1, 2, 3]);
    assert!(batches.lock().unwrap().len() >= 2, "the first leader wrote alone while the others waited past their budget");
}

/// The yield policy, as plain values: waiters yield only while the gather wait is short
/// and the last batch held at least the threshold, which by default is one more thread
/// than there are CPUs (two threads would otherwise keep a whole CPU busy through every
/// sync).
#[test]
fn waiters_yield_only_when_batches_outnumber_the_cpus() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let default = GroupCommit::<u32, u32, ()>::new(64, usize::MAX, 64).yield_threshold();
    assert_eq!(default, cpus + 1);
    assert!(!waits_yield(Duration::ZERO, cpus, default), "no more threads than CPUs: none yields");
    assert!(waits_yield(Duration::ZERO, cpus + 1, default), "more threads than CPUs: they yield");
    assert!(waits_yield(SPIN_WAIT_MAX, cpus + 1, default), "at the gather wait's bound, still");
    assert!(!waits_yield(SPIN_WAIT_MAX + Duration::from_nanos(1), cpus + 1, default), "past it, they sleep");
    assert!(waits_yield(Duration::ZERO, 0, 0), "a threshold of 0 always yields");
    assert!(!waits_yield(Duration::ZERO, usize::MAX - 1, usize::MAX), "one of usize::MAX never does");
}

/// The group applies the policy to every submit, counted (not timed: a thread's CPU time
/// depends on the load): allowed from a batch of 0, every submit yields; never allowed, or
/// with no more threads than CPUs in any batch, none does, however the threads interleave.
#[test]
fn a_group_counts_yielding_waits_by_its_policy() {
    // One round: `threads` submits released together, each write 2 ms.
    let round = |group: &GroupCommit<u32, u32, ()>, threads: u32| {
        let batches = StdMutex::new(Vec::new());
        let start = std::sync::Barrier::new(threads as usize);
        std::thread::scope(|s| {
            for i in 0..threads {
                let (group, batches, start) = (group, &batches, &start);
                s.spawn(move || {
                    start.wait();
                    group.submit(i, 1, Duration::ZERO, record(batches, Duration::from_millis(2)))
                });
            }
        });
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let always = GroupCommit::new(64, usize::MAX, 64).yielding_from(0);
    round(&always, 2);
    assert_eq!(always.yielding_waits(), 2, "allowed: every submit yields");
    let never = GroupCommit::new(64, usize::MAX, 64).yielding_from(usize::MAX);
    round(&never, 4);
    assert_eq!(never.yielding_waits(), 0, "never: none yields");
    let few = GroupCommit::new(64, usize::MAX, 64);
    for _ in 0..5 {
        round(&few, 2.min(cpus as u32));
    }
    assert_eq!(few.yielding_waits(), 0, "no more threads than CPUs: none yields");
}

/// A leader whose write panics wakes every waiter, and every later submit says why (found
/// by review: the old check panicked while holding the lock, so later submitters failed on
/// a poisoned mutex instead).
#[test]
fn after_a_leader_panics_every_waiter_and_every_later_submit_says_so() {
    let group = &GroupCommit::<u32, u32, ()>::new(16, usize::MAX, 64);
    let message = |r: Result<Result<u32, ()>, Box<dyn std::any::Any + Send>>| -> String {
        let payload = r.expect_err("the submit panics");
        payload.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| payload.downcast_ref::<String>().cloned()).unwrap_or_default()
    };
    std::thread::scope(|s| {
        let leader = s.spawn(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                group.submit(0, 1, Duration::ZERO, |_| {
                    std::thread::sleep(Duration::from_millis(150));
                    panic!("the disk caught fire")
                })
            }))
        });
        std::thread::sleep(Duration::from_millis(30));
        let waiters: Vec<_> = (1..4)
            .map(|i| {
                s.spawn(move || {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        group.submit(i, 1, Duration::ZERO, |b| b.into_iter().map(Ok).collect())
                    }))
                })
            })
            .collect();
        assert!(message(leader.join().unwrap()).contains("caught fire"));
        for w in waiters {
            assert_eq!(message(w.join().unwrap()), "the group commit leader panicked");
        }
    });
    for i in 10..12 {
        let later = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            group.submit(i, 1, Duration::ZERO, |b| b.into_iter().map(Ok).collect())
        }));
        assert_eq!(message(later), "the group commit leader panicked", "submit {i} after the panic");
    }
}

/// A leader that panics while its waiters are still yielding (well inside their budget)
/// tells them too: each panics with the leader's message instead of waiting (the review
/// found no test of this path; the panic test above has its waiters long asleep). A round
/// in which no waiter queued before the panic checks nothing, so rounds repeat until one did.
#[test]
fn waiters_still_yielding_when_the_leader_panics_are_told() {
    let mut rounds_with_a_yielding_waiter = 0;
    for _round in 0..20 {
        let group = Arc::new(GroupCommit::<u32, u32, ()>::new(16, usize::MAX, 64).yielding_from(0));
        let (done, results) = std::sync::mpsc::channel();
        let (writing, leader_writes) = std::sync::mpsc::channel();
        let leader = {
            let group = group.clone();
            std::thread::spawn(move || {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    group.submit(0, 1, Duration::ZERO, |_| {
                        writing.send(()).unwrap();
                        // Long enough for the waiters to queue, short of their yield budget.
                        std::thread::sleep(SPIN_WAIT_MAX * 3 / 5);
                        panic!("the disk caught fire")
                    })
                }));
            })
        };
        leader_writes.recv_timeout(Duration::from_secs(10)).expect("the leader writes");
        for i in 1..4 {
            let (group, done) = (group.clone(), done.clone());
            // Detached: a waiter never told fails the test below instead of hanging it.
            std::thread::spawn(move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    group.submit(i, 1, Duration::ZERO, |b| b.into_iter().map(Ok).collect())
                }));
                let _ = done.send(r.err().and_then(|p| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default());
            });
        }
        leader.join().unwrap();
        for _ in 1..4 {
            let message = results.recv_timeout(Duration::from_secs(10)).expect("every waiter is told");
            assert_eq!(message, "the group commit leader panicked");
        }
        // The leader's own submit counts once; any more were waiters queued before the panic.
        if group.yielding_waits() >= 2 {
            rounds_with_a_yielding_waiter += 1;
            break;
        }
    }
    assert_eq!(rounds_with_a_yielding_waiter, 1, "in 20 rounds no waiter queued while the leader wrote");
}
