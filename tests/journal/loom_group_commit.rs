//! Model-checks group commit's synchronization with loom: the same source file as the
//! library (`src/journal/group_sync.rs`), compiled against loom's Mutex and Condvar, so
//! loom explores every interleaving of submitters, leaders and wake-ups.

mod sync {
    pub use loom::thread::ThreadId;

    pub fn current_thread() -> ThreadId {
        loom::thread::current().id()
    }
    pub use loom::thread::yield_now;

    /// Under loom every wait may yield (from the first submit on), so the models explore
    /// the yielding path whatever the batch sizes.
    pub fn yield_from_batch() -> usize {
        0
    }

    /// A bounded busy wait has no clock under loom: a non-zero budget allows one yield,
    /// so the models explore a waiter that yields, looks again, and then sleeps.
    pub struct Spin {
        left: u8,
    }

    impl Spin {
        pub fn new(budget: Duration) -> Spin {
            Spin { left: u8::from(!budget.is_zero()) }
        }

        pub fn budget_left(&mut self) -> bool {
            let left = self.left > 0;
            self.left = self.left.saturating_sub(1);
            left
        }
    }
    use loom::sync::MutexGuard;
    pub use loom::sync::{Arc, Condvar, Mutex};
    use std::time::Duration;

    /// loom's `wait_timeout` never times out, which would hang a leader gathering for
    /// requests no thread will send. Model the timeout instead: release the lock, let
    /// every other thread run (loom explores each interleaving of that), then report the
    /// whole limit as spent, so a gathering leader always goes on to write.
    pub fn wait_timeout<'a, T>(
        _cv: &Condvar,
        mutex: &'a Mutex<T>,
        guard: MutexGuard<'a, T>,
        limit: Duration,
    ) -> (MutexGuard<'a, T>, Duration) {
        drop(guard);
        loom::thread::yield_now();
        (mutex.lock().unwrap(), limit)
    }
}

#[path = "../../src/journal/group_sync.rs"]
#[allow(dead_code)]
mod group_sync;

use group_sync::GroupCommit;

/// Any non-zero wait turns gathering on; the model's `wait_timeout` ignores its length.
/// Within `SPIN_WAIT_MAX`, waiting threads and the gathering leader yield before they
/// sleep; past it they sleep at once. Each model runs both ways.
const GATHER_WAITS: [std::time::Duration; 2] = [group_sync::SPIN_WAIT_MAX, std::time::Duration::from_secs(1)];
use loom::sync::{Arc, Mutex};

/// Every request is written exactly once, in one batch, and every submitter gets the
/// result of its own request, whatever the interleaving.
/// Two submitters are explored exhaustively; three with at most three preemptions, which
/// keeps the suite in seconds (most concurrency bugs need two). `ABCD_LOOM_FULL=1` lifts
/// the bound (minutes).
fn run_model(submitters: u64, max_batch: usize, max_queue: usize) {
    let full = std::env::var_os("ABCD_LOOM_FULL").is_some();
    let bound = if submitters <= 2 || full { None } else { Some(3) };
    run_model_bounded(submitters, max_batch, max_queue, bound);
}

/// With `preemptions`, loom explores only schedules with at most that many preemptions
/// (the bound that keeps four threads tractable; most concurrency bugs need two).
fn run_model_bounded(submitters: u64, max_batch: usize, max_queue: usize, preemptions: Option<usize>) {
    for gather_wait in GATHER_WAITS {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = preemptions;
        builder.check(move || model(submitters, max_batch, max_queue, gather_wait));
    }
}

fn model(submitters: u64, max_batch: usize, max_queue: usize, gather_wait: std::time::Duration) {
    {
        let group = Arc::new(GroupCommit::<u64, u64, ()>::new(max_batch, usize::MAX, max_queue));
        let written = Arc::new(Mutex::new(Vec::<Vec<u64>>::new()));
        let handles: Vec<_> = (1..submitters)
            .map(|i| {
                let (group, written) = (group.clone(), written.clone());
                loom::thread::spawn(move || submit(&group, &written, i, gather_wait))
            })
            .collect();
        let mine = submit(&group, &written, 0, gather_wait);
        assert_eq!(mine, Ok(0));
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join().unwrap(), Ok((i as u64 + 1) * 10));
        }
        let batches = written.lock().unwrap();
        let mut all: Vec<u64> = batches.iter().flatten().copied().collect();
        assert!(batches.iter().all(|b| !b.is_empty() && b.len() <= max_batch));
        all.sort();
        assert_eq!(all, (0..submitters).collect::<Vec<_>>(), "each request written exactly once");
    }
}

fn submit(
    group: &GroupCommit<u64, u64, ()>,
    written: &Mutex<Vec<Vec<u64>>>,
    req: u64,
    gather_wait: std::time::Duration,
) -> Result<u64, ()> {
    group.submit(req, 1, gather_wait, |batch| {
        written.lock().unwrap().push(batch.clone());
        batch.into_iter().map(|r| Ok(r * 10)).collect()
    })
}

#[test]
fn two_submitters_batch_and_each_gets_its_own_result() {
    run_model(2, 8, 8);
}

#[test]
fn three_submitters_with_batches_of_one() {
    run_model(3, 1, 8);
}

#[test]
fn back_pressure_with_a_queue_of_one_never_deadlocks() {
    run_model(3, 2, 1);
}

#[test]
fn one_leader_writes_for_two_waiters_and_wakes_both() {
    run_model(3, 8, 8);
}

/// Four submitters: the smallest case where a leader posts results for two waiters that
/// are both asleep, so waking only one of them would strand the other.
#[test]
fn four_submitters_every_waiter_is_woken() {
    run_model_bounded(4, 8, 8, Some(2));
}

/// Threads that submit again after their first result: the gather's count of the last
/// batch's threads coming back, and leadership handed to a queued request, are exercised
/// (each thread submitting once never re-queues). Two threads, two submits each.
#[test]
fn threads_that_submit_again_are_each_written_once_and_answered() {
    for gather_wait in GATHER_WAITS {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(move || {
            let group = Arc::new(GroupCommit::<u64, u64, ()>::new(8, usize::MAX, 8));
            let written = Arc::new(Mutex::new(Vec::<Vec<u64>>::new()));
            let other = {
                let (group, written) = (group.clone(), written.clone());
                loom::thread::spawn(move || [submit(&group, &written, 10, gather_wait), submit(&group, &written, 11, gather_wait)])
            };
            assert_eq!([submit(&group, &written, 0, gather_wait), submit(&group, &written, 1, gather_wait)], [Ok(0), Ok(10)]);
            assert_eq!(other.join().unwrap(), [Ok(100), Ok(110)]);
            let mut all: Vec<u64> = written.lock().unwrap().iter().flatten().copied().collect();
            all.sort();
            assert_eq!(all, vec![0, 1, 10, 11], "each request written exactly once");
        });
    }
}
