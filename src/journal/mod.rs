//! The journal: an fsynced, hash-chained JSONL file that is the only source of truth.
//! `format` is one line's bytes and hash rule; `scan` reads lines back and tells a torn
//! tail from corruption; `append` writes durably under `lock`; `group` batches threads'
//! appends into one sync; `anchor` remembers the head outside the journal's folder;
//! `checkpoint` caches folded state; `verify` and `repair` serve the CLI; `storage` is the
//! seam every byte passes through; `utc_time` reads the timestamps lines and projections
//! carry.

pub mod anchor;
pub mod append;
pub mod format;
pub mod genesis;
pub mod group;
pub mod group_sync;
pub mod lock;
pub mod proof;
pub mod repair;
pub mod scan;
pub mod scope;
#[cfg(feature = "test-support")]
pub mod simdisk;
pub mod storage;
pub mod verify;

/// The primitives `group_sync` is written against; loom's in the model test.
pub(crate) mod sync {
    use std::sync::MutexGuard;
    pub use std::sync::{Arc, Condvar, Mutex};
    pub use std::thread::ThreadId;

    pub fn current_thread() -> ThreadId {
        std::thread::current().id()
    }
    pub use std::thread::yield_now;

    /// Waiting threads yield only when a batch held more threads than there are CPUs.
    pub fn yield_from_batch() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get()) + 1
    }
    use std::time::{Duration, Instant};

    /// A bounded busy wait: `budget_left` says whether to yield once more.
    pub struct Spin {
        until: Option<Instant>,
    }

    impl Spin {
        pub fn new(budget: Duration) -> Spin {
            Spin { until: (!budget.is_zero()).then(|| Instant::now() + budget) }
        }

        pub fn budget_left(&mut self) -> bool {
            self.until.is_some_and(|until| Instant::now() < until)
        }
    }

    /// Waits on `cv` (paired with `_mutex`) for at most `limit`; returns the guard and how
    /// long it waited.
    pub fn wait_timeout<'a, T>(
        cv: &Condvar,
        _mutex: &'a Mutex<T>,
        guard: MutexGuard<'a, T>,
        limit: Duration,
    ) -> (MutexGuard<'a, T>, Duration) {
        let started = Instant::now();
        let (guard, _) = cv.wait_timeout(guard, limit).unwrap_or_else(|e| e.into_inner());
        (guard, started.elapsed())
    }
}

pub use append::{Appended, Journal, JournalError, JournalPaths, WriterLock};
pub use format::{Actor, Event, Hash, NewEvent};
