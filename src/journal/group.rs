//! A journal handle many threads append through at once: concurrent appends are
//! batched into one write and one sync (group commit, `group_sync`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::append::{Appended, Journal, JournalError, MAX_BATCH_EVENTS};
use super::format::{self, NewEvent, PreEncoded};
use super::genesis::Scope;
use super::group_sync::{GROUP_QUEUE_MAX, GroupCommit};
use super::scan::MAX_BATCH_BYTES;

/// A leader waits for its batch to fill at most the last batch's write time divided by
/// this: the threads it waits for need a few context switches each to come back. Measured
/// with benchmark 3 on this 2-CPU machine's fast disk (three runs each): 1 gave 16.0 events
/// per sync and 42–48k events/s, 2 gave 15.5–16.0 and 41–42k. A straggler that never comes
/// back costs one such wait.
const GATHER_WAIT_DIVISOR: u32 = 1;
/// And never longer than this, however slow the disk.
pub const GATHER_WAIT_MAX: Duration = Duration::from_millis(2);

/// How long a leader waits for its batch to fill, after a write that took `last_write`.
/// Public so benchmark 3's floor batches by the same policy.
pub fn gather_wait_after(last_write: Duration) -> Duration {
    (last_write / GATHER_WAIT_DIVISOR).min(GATHER_WAIT_MAX)
}

pub struct SharedJournal {
    journal: Journal,
    create: Option<Scope>,
    group: GroupCommit<PreEncoded, Appended, Arc<JournalError>>,
    /// How long the last batch's write and sync took, in nanoseconds.
    last_write_nanos: AtomicU64,
}

impl SharedJournal {
    /// With `create`, a missing journal is created with that scope on the first append.
    pub fn new(journal: Journal, create: Option<Scope>) -> SharedJournal {
        SharedJournal {
            journal,
            create,
            group: GroupCommit::new(MAX_BATCH_EVENTS, MAX_BATCH_BYTES, GROUP_QUEUE_MAX),
            last_write_nanos: AtomicU64::new(0),
        }
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Appends one event; returns once the batch holding it is synced.
    pub fn append(&self, event: NewEvent) -> Result<Appended, Arc<JournalError>> {
        // Serialized and checked here, by the submitting thread, in parallel with the others
        // and with the batch being synced: the leader only frames it.
        let event = format::pre_encode(&event).map_err(|e| Arc::new(JournalError::Encode(e)))?;
        let cost = event.line_bytes_max();
        let last_write = Duration::from_nanos(self.last_write_nanos.load(Ordering::Relaxed));
        let gather_wait = gather_wait_after(last_write);
        self.group.submit(event, cost, gather_wait, |batch| {
            let n = batch.len();
            let started = Instant::now();
            let written = self.journal.append_pre_encoded(&batch, self.create.as_ref());
            self.last_write_nanos.store(started.elapsed().as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
            match written {
                Ok((appended, _)) => appended.into_iter().map(Ok).collect(),
                Err(e) => {
                    let e = Arc::new(e);
                    (0..n).map(|_| Err(e.clone())).collect()
                }
            }
        })
    }
}
