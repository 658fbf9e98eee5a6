//! Group commit's synchronization, apart from any I/O so loom can model it: threads
//! queue requests; whoever finds no leader becomes one, takes a bounded batch off the
//! queue, writes it with one sync outside the lock, posts each result, and wakes the rest.
//! This file uses only `super::sync`, so `tests/loom_group_commit.rs` compiles the same
//! source against loom's primitives.

use std::collections::{HashMap, VecDeque};

use super::sync::{Condvar, Mutex};

/// The most requests waiting at once; a submitter past it waits (back-pressure).
pub const GROUP_QUEUE_MAX: usize = 4096;
/// Batches one leader writes in a row before it returns to its own caller.
pub const LEADER_ROUNDS_MAX: usize = 8;

pub struct GroupCommit<Req, Out, Err> {
    state: Mutex<State<Req, Out, Err>>,
    wake: Condvar,
    max_batch: usize,
    max_batch_cost: usize,
    max_queue: usize,
}

struct State<Req, Out, Err> {
    queue: VecDeque<(u64, usize, Req)>,
    next_ticket: u64,
    leader_active: bool,
    leader_panicked: bool,
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
                results: HashMap::new(),
            }),
            wake: Condvar::new(),
            max_batch,
            max_batch_cost,
            max_queue,
        }
    }

    /// Queues `req` and returns its result once a leader has written it. `write_batch`
    /// gets requests in submission order and returns one result per request, in order.
    pub fn submit(&self, req: Req, cost: usize, mut write_batch: impl FnMut(Vec<Req>) -> Vec<Result<Out, Err>>) -> Result<Out, Err> {
        let mut state = self.state.lock().unwrap();
        while state.queue.len() >= self.max_queue {
            state = self.wake.wait(state).unwrap();
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.queue.push_back((ticket, cost, req));
        loop {
            assert!(!state.leader_panicked, "the group commit leader panicked");
            if let Some(result) = state.results.remove(&ticket) {
                return result;
            }
            if state.leader_active {
                state = self.wake.wait(state).unwrap();
                continue;
            }
            state.leader_active = true;
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
