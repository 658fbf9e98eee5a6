//! Group commit's synchronization, apart from any I/O so loom can model it: threads
//! queue requests; whoever finds no leader becomes one, takes a bounded batch off the
//! queue, writes it with one sync outside the lock, and hands each request's result to
//! its own slot, waking only that request's thread. This file uses only `super::sync`, so
//! `tests/journal/loom_group_commit.rs` compiles the same source against loom's primitives.
//!
//! Why a slot per request: on a 2-CPU machine, waking every waiter on one condition
//! variable to let each look for its result under one mutex costs more context switches
//! than the sync it saves (a herd of 16 threads queueing on that mutex). A waiter sleeps on
//! its own slot, and a returning thread never touches the shared state again.
//!
//! A leader first waits a little (bounded by the caller's `gather_wait`, a fraction of the
//! last batch's write time) until every thread whose request was in the last batch has
//! queued again. Those threads were just handed their results and are about to submit
//! again; without the wait the first of them leads a small batch while the others queue
//! behind its sync, and the writers split into two groups that take turns, each batch half
//! the size it could be (PostgreSQL's `commit_delay` idea). A thread that does not come
//! back costs one wait; the next batch no longer counts it.
//!
//! When a leader stops (its rounds done or the queue empty) with requests still queued, it
//! hands leadership to the thread of the first of them, so there is always exactly one
//! leader while anything is queued.
//!
//! Waiting threads yield the CPU in a loop before they sleep, when the last write was short
//! (at most `SPIN_WAIT_MAX`) and the last batch held more threads than there are CPUs: a
//! sleeping thread's wake-up is a futex call by the waker and often an interrupt to an idle
//! virtual CPU, several microseconds each, and a batch of sixteen paid sixteen of them
//! before the next batch could fill. A thread that yields is
//! found running, and is told without a wake-up. It costs CPU time: a yield gives way to
//! the process's other runnable threads, but the scheduler hardly lets other processes in.
//! The figures behind both are in docs/benchmarks.md (benchmark 3) and docs/decisions.md.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::sync::{Arc, Condvar, Mutex, Spin, ThreadId, current_thread, wait_timeout, yield_from_batch, yield_now};

/// The most requests waiting at once; a submitter past it waits (back-pressure).
pub const GROUP_QUEUE_MAX: usize = 4096;

/// A thread waiting for its result, or a leader waiting for its batch to fill, yields the
/// CPU in a loop for at most this long before it sleeps, and only while the last write took
/// no longer (past that a sleep's wake-up is small next to the wait) and the last batch held
/// more threads than there are CPUs (`yielding_from`).
pub const SPIN_WAIT_MAX: Duration = Duration::from_micros(500);

/// Whether a submitter's wait yields the CPU rather than sleeping: only when the gather wait
/// is short and the last batch held at least `yield_from_batch` threads (by default more
/// than there are CPUs). Then each batch costs that many wake-ups, while with fewer a
/// yielding waiter would only keep a CPU busy through the sync.
pub fn waits_yield(gather_wait: Duration, last_batch_threads: usize, yield_from_batch: usize) -> bool {
    gather_wait <= SPIN_WAIT_MAX && last_batch_threads >= yield_from_batch
}

pub struct GroupCommit<Req, Out, Err> {
    state: Mutex<State<Req, Out, Err>>,
    /// Signalled when the queue fills while a leader gathers.
    queued: Condvar,
    /// Signalled when a full queue gets room.
    room: Condvar,
    max_batch: usize,
    max_batch_cost: usize,
    max_queue: usize,
    /// Waiting threads yield (see `SPIN_WAIT_MAX`) once the last batch held this many.
    yield_from_batch: usize,
    /// How many waits have yielded the CPU at least once (a statistic, not synchronization).
    yielded_waits: AtomicU64,
}

struct State<Req, Out, Err> {
    queue: VecDeque<Queued<Req, Out, Err>>,
    /// A leader is running, or leadership was handed to a queued request's thread.
    leader_active: bool,
    leader_panicked: bool,
    /// A leader is waiting for its batch to fill (`queued` wakes it).
    gathering: bool,
    /// The slots of the batch being written, to wake if the write panics.
    in_flight: Vec<Arc<Slot<Out, Err>>>,
    /// The threads whose requests the last batch held (a thread has one request at a time).
    last_batch: Vec<ThreadId>,
    /// How many of them have queued a request since.
    returned: usize,
}

struct Queued<Req, Out, Err> {
    thread: ThreadId,
    cost: usize,
    req: Req,
    slot: Arc<Slot<Out, Err>>,
}

/// Where one request's thread waits for what happens to its request.
struct Slot<Out, Err> {
    state: Mutex<SlotState<Out, Err>>,
    ready: Condvar,
}

struct SlotState<Out, Err> {
    news: News<Out, Err>,
    /// The thread sleeps on `ready` (it stopped yielding): telling it must wake it.
    asleep: bool,
}

enum News<Out, Err> {
    Waiting,
    /// Leadership was handed to this thread.
    Lead,
    /// The request's result, and other requests' results this thread passes on before it
    /// returns (see `deliver`).
    Done(Result<Out, Err>, Vec<Delivery<Out, Err>>),
    LeaderPanicked,
}

type Delivery<Out, Err> = (Arc<Slot<Out, Err>>, Result<Out, Err>);

/// Hands results to their threads: a thread still yielding is told at once, and the
/// sleeping ones as a tree: the caller wakes a few threads, each of which wakes a share of
/// the rest before it returns. A wake-up costs a few microseconds on a small virtual
/// machine; sixteen of them in a row were most of the time the next batch spent gathering,
/// while a tree takes about log2(16) rounds, run on every CPU at once. A yielding thread
/// needs no wake-up, and passing its result down a tree would make it wait for other
/// threads' turns on the CPU.
fn deliver<Out, Err>(list: Vec<Delivery<Out, Err>>) {
    let mut list: Vec<Delivery<Out, Err>> =
        list.into_iter().filter_map(|(slot, out)| slot.tell_if_awake(out).map(|out| (slot, out))).collect();
    while let Some(first) = (!list.is_empty()).then(|| list.remove(0)) {
        let (slot, out) = first;
        // The woken thread passes on the first half of the rest; this one keeps the other.
        let keep = list.split_off(list.len() / 2);
        slot.tell(News::Done(out, std::mem::replace(&mut list, keep)));
    }
}

impl<Out, Err> Slot<Out, Err> {
    fn new() -> Slot<Out, Err> {
        Slot { state: Mutex::new(SlotState { news: News::Waiting, asleep: false }), ready: Condvar::new() }
    }

    /// Hands `out` over when the thread is not asleep; gives it back when it is.
    fn tell_if_awake(&self, out: Result<Out, Err>) -> Option<Result<Out, Err>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.asleep {
            return Some(out);
        }
        state.news = News::Done(out, Vec::new());
        None
    }

    fn tell(&self, news: News<Out, Err>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.news = news;
        // A thread still yielding finds the news when it next looks: no wake-up to pay.
        if state.asleep {
            self.ready.notify_one();
        }
    }

    /// Waits for news, yielding the CPU while `spin` lasts, then sleeping.
    fn wait(&self, mut spin: Spin) -> News<Out, Err> {
        let mut state = self.state.lock().unwrap();
        loop {
            match std::mem::replace(&mut state.news, News::Waiting) {
                News::Waiting if spin.budget_left() => {
                    drop(state);
                    yield_now();
                    state = self.state.lock().unwrap();
                }
                News::Waiting => {
                    state.asleep = true;
                    state = self.ready.wait(state).unwrap();
                    state.asleep = false;
                }
                news => return news,
            }
        }
    }
}

impl<Req, Out, Err> GroupCommit<Req, Out, Err> {
    /// `max_batch` requests and `max_batch_cost` cost units at most per batch (a batch
    /// always takes at least one request), `max_queue` requests waiting at most.
    pub fn new(max_batch: usize, max_batch_cost: usize, max_queue: usize) -> Self {
        assert!(max_batch >= 1 && max_queue >= 1);
        GroupCommit {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                leader_active: false,
                leader_panicked: false,
                gathering: false,
                in_flight: Vec::new(),
                last_batch: Vec::new(),
                returned: 0,
            }),
            queued: Condvar::new(),
            room: Condvar::new(),
            max_batch,
            max_batch_cost,
            max_queue,
            yield_from_batch: yield_from_batch(),
            yielded_waits: AtomicU64::new(0),
        }
    }

    /// Waiting threads yield once the last batch held `batch` threads or more (by default
    /// one more than the CPUs); 0 always, `usize::MAX` never.
    pub fn yielding_from(mut self, batch: usize) -> Self {
        self.yield_from_batch = batch;
        self
    }

    /// The batch size from which waiting threads yield (see [`Self::yielding_from`]).
    pub fn yield_threshold(&self) -> usize {
        self.yield_from_batch
    }

    /// How many submits have waited by yielding the CPU first (whether or not they then
    /// needed to wait at all).
    pub fn yielding_waits(&self) -> u64 {
        self.yielded_waits.load(Ordering::Relaxed)
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
        let slot = Arc::new(Slot::new());
        let thread = current_thread();
        let mut state = self.state.lock().unwrap();
        loop {
            if state.leader_panicked {
                // Unlock first: a panic while holding the lock would poison it, and later
                // submitters would fail on that instead of this message.
                drop(state);
                panic!("the group commit leader panicked");
            }
            if state.queue.len() < self.max_queue {
                break;
            }
            state = self.room.wait(state).unwrap();
        }
        state.queue.push_back(Queued { thread, cost, req, slot: slot.clone() });
        if state.last_batch.contains(&thread) {
            state.returned += 1;
        }
        self.wake_gatherer_if_full(&state);
        let mut lead = !state.leader_active;
        state.leader_active = true;
        let yielding = waits_yield(gather_wait, state.last_batch.len(), self.yield_from_batch);
        drop(state);
        let spin = if yielding { SPIN_WAIT_MAX } else { Duration::ZERO };
        if yielding {
            self.yielded_waits.fetch_add(1, Ordering::Relaxed);
        }
        loop {
            if lead {
                self.lead(gather_wait, spin, &mut write_batch);
            }
            match slot.wait(Spin::new(spin)) {
                News::Waiting => unreachable!("wait returns only news"),
                News::Lead => lead = true,
                News::Done(result, pass_on) => {
                    deliver(pass_on);
                    return result;
                }
                News::LeaderPanicked => panic!("the group commit leader panicked"),
            }
        }
    }

    /// Leads: gathers, writes one batch (its own request first in it), and hands
    /// leadership to the thread of the first request still queued, if any. One batch per
    /// leader, so no thread is kept from its own next request while it writes others'; and
    /// the thread woken to lead would have been woken for its result anyway.
    fn lead(&self, gather_wait: Duration, spin: Duration, write_batch: &mut impl FnMut(Vec<Req>) -> Vec<Result<Out, Err>>) {
        let mut state = self.state.lock().unwrap();
        assert!(state.leader_active && !state.queue.is_empty(), "a leader starts with something to write");
        if !spin.is_zero() {
            // Yields while the threads it waits for come back: they need the CPU, and a
            // leader found running needs no wake-up when the last of them queues.
            let mut spin = Spin::new(gather_wait);
            while !self.batch_is_full(&state) && spin.budget_left() {
                drop(state);
                yield_now();
                state = self.state.lock().unwrap();
            }
        } else if !gather_wait.is_zero() && !self.batch_is_full(&state) {
            state.gathering = true;
            let mut waited = Duration::ZERO;
            while !self.batch_is_full(&state) && waited < gather_wait {
                let (next, slept) = wait_timeout(&self.queued, &self.state, state, gather_wait - waited);
                state = next;
                waited += slept;
            }
            state.gathering = false;
        }
        let was_full = state.queue.len() >= self.max_queue;
        let mut batch = Vec::new();
        let mut slots = Vec::new();
        let mut threads = Vec::new();
        let mut total = 0usize;
        while let Some(front) = state.queue.front() {
            if !batch.is_empty() && (batch.len() == self.max_batch || total + front.cost > self.max_batch_cost) {
                break;
            }
            let q = state.queue.pop_front().expect("front exists");
            total += q.cost;
            batch.push(q.req);
            slots.push(q.slot);
            threads.push(q.thread);
        }
        // Anything still queued came from other threads (one request per thread).
        state.last_batch = threads;
        state.returned = 0;
        if was_full {
            self.room.notify_all();
        }
        state.in_flight = slots.clone();
        drop(state);
        let guard = LeaderGuard { group: self, armed: true };
        let outs = write_batch(batch);
        assert_eq!(outs.len(), slots.len(), "one result per request");
        guard.disarm();
        let mut state = self.state.lock().unwrap();
        state.in_flight.clear();
        match state.queue.front() {
            Some(next) => next.slot.tell(News::Lead),
            None => state.leader_active = false,
        }
        drop(state);
        deliver(slots.into_iter().zip(outs).collect());
    }

    /// Whether every thread of the last batch has queued again (or a batch is full).
    fn batch_is_full(&self, state: &State<Req, Out, Err>) -> bool {
        state.returned >= state.last_batch.len() || state.queue.len() >= self.max_batch
    }

    fn wake_gatherer_if_full(&self, state: &State<Req, Out, Err>) {
        if state.gathering && self.batch_is_full(state) {
            self.queued.notify_one();
        }
    }
}

/// Tells every waiting thread if the leader's write panics, so none waits forever.
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
            let state = &mut *state;
            for slot in state.in_flight.drain(..).chain(state.queue.drain(..).map(|q| q.slot)) {
                slot.tell(News::LeaderPanicked);
            }
            self.group.room.notify_all();
        }
    }
}
