//! Group commit's synchronization, apart from any I/O so loom can model it: threads
//! queue requests; whoever finds no leader becomes one, takes a bounded batch off the
//! queue, writes it with one sync outside the lock, posts each result, and wakes the rest.
//! This file uses only `super::sync`, so `tests/loom_group_commit.rs` compiles the same
//! source against loom's primitives.
//!
//! A leader that finds fewer requests queued than there are threads inside `submit` first
//! waits a little for the rest (bounded by the caller's `gather_wait`, a fraction of the
//! last batch's write time). Those threads were just handed their results and are about to
//! submit again; without the wait the first of them leads a small batch while the others
//! queue behind its sync, and the writers split into two groups that take turns, each
//! batch half the size it could be (PostgreSQL's `commit_delay` idea).

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use super::sync::{Condvar, Mutex, wait_timeout};

/// The most requests waiting at once; a submitter past it waits (back-pressure).
pub const GROUP_QUEUE_MAX: usize = 4096;
/// Batches one leader writes in a row before it returns to its own caller.
pub const LEADER_ROUNDS_MAX: usize = 8;

pub struct GroupCommit<Req, Out, Err> {
    state: Mutex<State<Req, Out, Err>>,
    wake: Condvar,
    /// Signalled when a request is queued while a leader gathers.
    queued: Condvar,
    max_batch: usize,
    max_batch_cost: usize,
    max_queue: usize,
}

struct State<Req, Out, Err> {
    queue: VecDeque<(u64, usize, Req)>,
    next_ticket: u64,
    leader_active: bool,
    leader_panicked: bool,
    /// A leader is waiting for its batch to fill (`queued` wakes it).
    gathering: bool,
    /// Threads inside `submit`: queued, being written, or holding a result not yet taken.
    inside: usize,
    results: HashMap<u64, Result<Out, Err>>,
}

impl<Req, Out, Err> GroupCommit<Req, Out, Err> {
    /// `max_batch` requests and `max_batch_cost` cost units at most per batch (a batch
    /// always takes at least one request), `max_queue` requests waiting at most.
    pub fn new(max_batch: usize, max_batch_cost: usize, max_queue: usize) -> Self {
        assert!(max_batch >= 1 && max_queue >= 1);
        GroupCommit {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                next_ticket: 0,
                leader_active: false,
                leader_panicked: false,
                gathering: false,
                inside: 0,
                results: HashMap::new(),
            }),
            wake: Condvar::new(),
            queued: Condvar::new(),
            max_batch,
            max_batch_cost,
            max_queue,
        }
    }

    /// Queues `req` and returns its result once a leader has written it. `write_batch`
    /// gets requests in submission order and returns one result per request, in order.
    /// A leader waits at most `gather_wait` for its batch to fill before writing it.
    pub fn submit(
        &self,
        req: Req,
        cost: usize,
        gather_wait: Duration,
        mut write_batch: impl FnMut(Vec<Req>) -> Vec<Result<Out, Err>>,
    ) -> Result<Out, Err> {
        let mut state = self.state.lock().unwrap();
        while state.queue.len() >= self.max_queue {
            state = self.wake.wait(state).unwrap();
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.queue.push_back((ticket, cost, req));
        state.inside += 1;
        self.wake_gatherer_if_full(&state);
        loop {
            assert!(!state.leader_panicked, "the group commit leader panicked");
            if let Some(result) = state.results.remove(&ticket) {
                state.inside -= 1;
                self.wake_gatherer_if_full(&state);
                return result;
            }
            if state.leader_active {
                state = self.wake.wait(state).unwrap();
                continue;
            }
            state.leader_active = true;
            // Gather: wait (bounded) until every thread inside has queued again.
            if !gather_wait.is_zero() && !self.batch_is_full(&state) {
                state.gathering = true;
                let mut waited = Duration::ZERO;
                while !self.batch_is_full(&state) && waited < gather_wait {
                    let (next, slept) = wait_timeout(&self.queued, &self.state, state, gather_wait - waited);
                    state = next;
                    waited += slept;
                }
                state.gathering = false;
            }
            // The leader keeps serving while requests wait (up to a bound), so the ones
            // that queued during its sync go out together in the next batch instead of
            // each new arrival leading a batch of one.
            for _round in 0..LEADER_ROUNDS_MAX {
                let mut tickets = Vec::new();
                let mut batch = Vec::new();
                let mut total = 0usize;
                while let Some(&(_, c, _)) = state.queue.front() {
                    if !batch.is_empty() && (batch.len() == self.max_batch || total + c > self.max_batch_cost) {
                        break;
                    }
                    let (t, c, r) = state.queue.pop_front().expect("front exists");
                    tickets.push(t);
                    batch.push(r);
                    total += c;
                }
                drop(state);
                let guard = LeaderGuard { group: self, armed: true };
                let outs = write_batch(batch);
                assert_eq!(outs.len(), tickets.len(), "one result per request");
                guard.disarm();
                state = self.state.lock().unwrap();
                for (t, out) in tickets.into_iter().zip(outs) {
                    state.results.insert(t, out);
                }
                self.wake.notify_all();
                if state.queue.is_empty() {
                    break;
                }
            }
            state.leader_active = false;
            self.wake.notify_all();
        }
    }
}

impl<Req, Out, Err> GroupCommit<Req, Out, Err> {
    /// Whether a batch taken now would hold every thread inside (or the most a batch can).
    fn batch_is_full(&self, state: &State<Req, Out, Err>) -> bool {
        state.queue.len() >= state.inside.min(self.max_batch)
    }

    fn wake_gatherer_if_full(&self, state: &State<Req, Out, Err>) {
        if state.gathering && self.batch_is_full(state) {
            self.queued.notify_one();
        }
    }
}

/// Wakes every waiter if the leader's write panics, so none waits forever.
struct LeaderGuard<'a, Req, Out, Err> {
    group: &'a GroupCommit<Req, Out, Err>,
    armed: bool,
}

impl<Req, Out, Err> LeaderGuard<'_, Req, Out, Err> {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl<Req, Out, Err> Drop for LeaderGuard<'_, Req, Out, Err> {
    fn drop(&mut self) {
        if self.armed {
            let mut state = match self.group.state.lock() {
                Ok(s) => s,
                Err(p) => p.into_inner(),
            };
            state.leader_panicked = true;
            state.leader_active = false;
            self.group.wake.notify_all();
        }
    }
}
