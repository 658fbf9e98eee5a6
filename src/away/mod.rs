//! The away record (SPEC §6): the repository journal's `away.*` and `decision.recorded`
//! events folded into one window — who set it, from which working copy, start, end,
//! hold-pushes, the queue, recorded stops, hand-backs, decisions, who ended it. Pure: the
//! fold and the checks take plain values and read no clock (`now` is passed in), so they
//! are tested with plain values and quickcheck. The words shown to the model and the
//! person are in [`text`].
//!
//! The fold re-validates and re-scans every event, as the checklist fold does: a line a
//! shell appended (with a correct hash) that breaks a rule or carries a secret is skipped
//! and named, and never reaches the away block or `abcd mode back`.

pub mod notify;
pub mod refusals;
pub mod sweep;
pub mod text;

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::checklist::item::Rejection;
use crate::checklist::time_input::{ahead_rule, span_words};
pub use crate::event::away::{Answer, AwayReturnShown, AwaySweepAnswered, AwaySweepStarted, DecisionAnswered, Tradeoff};
pub use crate::event::away::{AwayEnded, AwayHandedBack, AwayQueued, AwaySet, AwayStopRecorded, DecisionRecorded, RecordedStop, StopLabel};

/// The longest window: without `--until` the mode lapses after this, and `--until` may
/// name no later time (SPEC §6).
pub const MAX_WINDOW: SignedDuration = SignedDuration::from_hours(7 * 24);
/// A queued step, at most, in characters (SPEC §6).
pub const STEP_MAX_CHARS: usize = 500;
/// Queued steps a window holds at most; the next is refused (a step is the person's to
/// read, so none is ever dropped).
pub const QUEUE_MAX_STEPS: usize = 100;
/// Distinct recorded stops kept; past it, the one seen least recently goes (counted).
pub const STOPS_MAX: usize = 64;
/// Hand-backs kept; past it, the oldest goes (counted).
pub const HANDED_BACK_MAX: usize = 64;
/// Decisions kept per window; past it, the oldest goes (counted; the journal keeps all).
pub const DECISIONS_MAX: usize = 256;
/// A decision's text, grounds and undo, each at most, in characters.
pub const DECISION_FIELD_MAX_CHARS: usize = 1_000;
/// Who set or ended the mode, at most, in characters.
pub const PERSON_MAX_CHARS: usize = 200;
/// A working copy's path, at most, in characters.
pub const WORKING_COPY_MAX_CHARS: usize = 4_096;
/// A next item's description in a recorded stop, at most, in characters.
pub const STOP_NEXT_MAX_CHARS: usize = 400;
/// How long the blocker sweep waits for the sessions' answers unless told otherwise
/// (seed 000: "10 minutes by default").
pub const SWEEP_DEADLINE_DEFAULT: SignedDuration = SignedDuration::from_mins(10);
/// The sweep's deadline, at least and at most after its start: long enough for a session
/// to reach its next hook, short enough that the person does not wait past their leaving.
pub const SWEEP_DEADLINE_MIN: SignedDuration = SignedDuration::from_mins(1);
pub const SWEEP_DEADLINE_MAX: SignedDuration = SignedDuration::from_hours(1);
/// Working copies a sweep records answers from, and a window records its return lists
/// shown in; past it, the next is skipped (a repository has far fewer worktrees).
pub const SWEEP_ANSWERS_MAX: usize = 256;
pub const RETURN_SHOWN_MAX: usize = 256;
/// Trade-off decisions the record keeps for their answers (design-done). Past it, the
/// oldest answered one goes (an answered trade-off holds no item back); when every kept one
/// is unanswered, the next trade-off is refused, as a step past the queue's cap is: each is
/// the person's to answer, so none is ever dropped unanswered.
pub const TRADEOFFS_KEPT: usize = 4_096;

/// A queued step as the record keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedStep {
    pub step: String,
    pub at: Timestamp,
    pub working_copy: String,
}

/// A recorded stop with how often and when it was seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopEntry {
    pub stop: RecordedStop,
    pub count: u64,
    pub first_at: Timestamp,
    pub last_at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandedBack {
    pub branch: String,
    pub head: String,
    pub at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub text: String,
    pub grounds: String,
    pub undo: String,
    pub at: Timestamp,
    pub working_copy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tradeoff: Option<Tradeoff>,
    /// The seq of its `decision.recorded`: what the person answers a trade-off by. Left out
    /// of a record only when read from a cache written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The checklist item the trade-off is tied to, and the person's answer once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
}

/// A trade-off decision as design-done reads it: kept across windows, with the person's
/// answer once given (the latest, when answered twice).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TradeoffRecord {
    pub seq: u64,
    pub tradeoff: Tradeoff,
    pub text: String,
    pub working_copy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
}

/// The blocker sweep that setting the away mode started, and who answered it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sweep {
    pub start: Timestamp,
    pub deadline: Timestamp,
    pub working_copy: String,
    /// The working copies whose hook answered, each once, in the order they did.
    pub answers: Vec<SweepAnswer>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepAnswer {
    pub working_copy: String,
    pub at: Timestamp,
}

impl Sweep {
    /// Whether hooks are still asked at `now`.
    pub fn is_open(&self, now: Timestamp) -> bool {
        now < self.deadline
    }

    pub fn answer_of(&self, working_copy: &str) -> Option<&SweepAnswer> {
        self.answers.iter().find(|a| a.working_copy == working_copy)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ended {
    pub by: String,
    pub working_copy: String,
    pub at: Timestamp,
}

/// One away window and everything recorded in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub set_by: String,
    pub working_copy: String,
    pub start: Timestamp,
    pub end: Timestamp,
    pub hold_pushes: bool,
    pub queue: Vec<QueuedStep>,
    pub stops: Vec<StopEntry>,
    pub handed_back: Vec<HandedBack>,
    pub decisions: Vec<Decision>,
    #[serde(default)]
    pub dropped_stops: u64,
    #[serde(default)]
    pub dropped_handed_back: u64,
    #[serde(default)]
    pub dropped_decisions: u64,
    /// Set by `abcd mode back`; a closed window is kept only to say who ended it.
    pub ended: Option<Ended>,
    /// The blocker sweep setting this window started. Left out while none, as are the
    /// working copies the return lists were shown in, so a record without them is written
    /// as before they existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub return_shown: Vec<String>,
    /// The person's notify command (docs/notify.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notified: Vec<notify::Notified>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<notify::NotificationSeen>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_notifications: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Where the record stands at a given instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// No window was ever set, or the last one was ended by `abcd mode back`.
    Present,
    /// A window holds: the person is away.
    Away,
    /// The window's end has passed and `abcd mode back` has not closed it yet.
    Lapsed,
}

impl Window {
    pub fn status(&self, now: Timestamp) -> Status {
        match (&self.ended, now < self.end) {
            (Some(_), _) => Status::Present,
            (None, true) => Status::Away,
            (None, false) => Status::Lapsed,
        }
    }

    /// Anything `abcd mode back` has still to print.
    pub fn unread(&self) -> usize {
        self.queue.len() + self.stops.len() + self.handed_back.len() + self.decisions.len() + self.notifications.len()
    }

    /// Whether a hand-back of this branch at this head was already recorded.
    pub fn handed_back_already(&self, branch: &str, head: &str) -> bool {
        self.handed_back.iter().any(|h| h.branch == branch && h.head == head)
    }

    pub fn queued_steps(&self) -> Vec<String> {
        self.queue.iter().map(|q| q.step.clone()).collect()
    }
}

/// The fold of the repository journal's away events.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AwayState {
    /// The current window, or the last one (closed) to say who ended it.
    pub window: Option<Window>,
    /// Decisions recorded while no window was open: counted (the journal keeps them).
    #[serde(default)]
    pub decisions_outside_window: u64,
    /// The refused attempts of the current period (`refusals`): left out while none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusals: Vec<refusals::Refusal>,
    /// Every trade-off decision, in seq order, within [`TRADEOFFS_KEPT`]. Left out while
    /// empty, as is the count below, so a record without them is written as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tradeoffs: Vec<TradeoffRecord>,
    /// `decision.recorded` and `decision.answered` events this fold was handed, taken or
    /// not: a cache whose count is not the journal's (one written by a build that kept no
    /// seqs or answers) is not believed (`fold::cached_state_passes`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub decision_events_seen: u64,
    /// `away.mode_refused` events this fold was handed, recorded or not: a cache whose count
    /// is not the journal's (one written by a build that knew no refusals) is not believed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mode_refused_seen: u64,
}

impl AwayState {
    /// Whether every text the record would show passes the fold's checks: a cache read
    /// back (`state.json`) is held to what the fold let in.
    pub fn shown_text_passes(&self) -> bool {
        if !refusals::shown_text_passes(self) {
            return false;
        }
        let tradeoffs_pass = self.tradeoffs.len() <= TRADEOFFS_KEPT
            && self.tradeoffs.iter().all(|t| {
                check_line("text", &t.text, DECISION_FIELD_MAX_CHARS).is_ok()
                    && check_line("working_copy", &t.working_copy, WORKING_COPY_MAX_CHARS).is_ok()
                    && t.item.as_deref().is_none_or(|i| check_item(i).is_ok())
            });
        if !tradeoffs_pass {
            return false;
        }
        let Some(w) = &self.window else { return true };
        let line = |field: &str, text: &str, max: usize| check_line(field, text, max).is_ok();
        line("set_by", &w.set_by, PERSON_MAX_CHARS)
            && line("working_copy", &w.working_copy, WORKING_COPY_MAX_CHARS)
            && w.queue.iter().all(|q| check_step(&q.step).is_ok())
            && w.stops.iter().all(|e| e.stop.next.as_deref().is_none_or(|n| line("next", n, STOP_NEXT_MAX_CHARS)))
            && w.stops.iter().all(|e| e.stop.error_type.as_deref().is_none_or(error_type_ok))
            && w.handed_back.iter().all(|h| crate::ref_name::branch_name_ok(&h.branch) && crate::secrets::scan(&h.branch).is_none())
            && w.decisions.iter().all(|d| {
                line("text", &d.text, DECISION_FIELD_MAX_CHARS)
                    && line("grounds", &d.grounds, DECISION_FIELD_MAX_CHARS)
                    && line("undo", &d.undo, DECISION_FIELD_MAX_CHARS)
                    && d.item.as_deref().is_none_or(|i| check_item(i).is_ok())
            })
            && w.ended.as_ref().is_none_or(|e| line("ended_by", &e.by, PERSON_MAX_CHARS))
            && w.sweep.as_ref().is_none_or(|s| {
                line("working_copy", &s.working_copy, WORKING_COPY_MAX_CHARS)
                    && s.answers.iter().all(|a| line("working_copy", &a.working_copy, WORKING_COPY_MAX_CHARS))
            })
            && w.return_shown.iter().all(|c| line("working_copy", c, WORKING_COPY_MAX_CHARS))
            && notify::shown_text_passes(w)
    }

    pub fn status(&self, now: Timestamp) -> Status {
        self.window.as_ref().map_or(Status::Present, |w| w.status(now))
    }

    /// The window while it is not closed (away or lapsed).
    pub fn open_window(&self) -> Option<&Window> {
        self.window.as_ref().filter(|w| w.ended.is_none())
    }

    /// The window while the person is away at `now`.
    pub fn holding(&self, now: Timestamp) -> Option<&Window> {
        self.window.as_ref().filter(|w| w.status(now) == Status::Away)
    }

    /// The trade-off decision recorded at `seq`, if the record keeps one there.
    pub fn tradeoff_at(&self, seq: u64) -> Option<&TradeoffRecord> {
        self.tradeoffs.binary_search_by_key(&seq, |t| t.seq).ok().map(|i| &self.tradeoffs[i])
    }

    /// Every trade-off tied to checklist item `item` of `working_copy`, in seq order.
    pub fn tied_to<'a>(&'a self, working_copy: &'a str, item: &'a str) -> impl Iterator<Item = &'a TradeoffRecord> + 'a {
        self.tradeoffs.iter().filter(move |t| t.working_copy == working_copy && t.item.as_deref() == Some(item))
    }

    /// Whether one more trade-off can be kept: the record has room, or holds an answered one
    /// to let go.
    pub fn tradeoff_has_room(&self) -> bool {
        self.tradeoffs.len() < TRADEOFFS_KEPT || self.tradeoffs.iter().any(|t| t.answer.is_some())
    }
}

fn reject(field: &str, reason: impl Into<String>) -> Rejection {
    Rejection { field: Some(field.to_string()), reason: reason.into() }
}

/// A one-line text field: not empty, no control characters, at most `max` characters, no
/// secret. The rule is named, never the value.
pub fn check_line(field: &str, text: &str, max: usize) -> Result<(), Rejection> {
    if let Some(kind) = crate::secrets::scan(text) {
        return Err(reject(field, format!("carries {} ({})", kind.describe(), kind.name())));
    }
    if text.trim().is_empty() {
        return Err(reject(field, "is empty"));
    }
    if text.chars().any(char::is_control) {
        return Err(reject(field, "must be one line with no control characters"));
    }
    let n = text.chars().count();
    if n > max {
        return Err(reject(field, format!("is {n} characters; at most {max}")));
    }
    Ok(())
}

/// Whitespace runs (newlines included) folded to one space and the ends trimmed, so a
/// step typed over several lines prints as one.
pub fn fold_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The rules of `away.set`: the people and places are plain lines, and the window is
/// not empty and no longer than [`MAX_WINDOW`].
pub fn check_set(set: &AwaySet) -> Result<(), Rejection> {
    check_line("set_by", &set.set_by, PERSON_MAX_CHARS)?;
    check_line("working_copy", &set.working_copy, WORKING_COPY_MAX_CHARS)?;
    if let Some(command) = &set.notify {
        notify::check_notify_command(command)?;
    }
    if set.end <= set.start {
        return Err(reject("end", "is not after the start"));
    }
    if set.end.duration_since(set.start) > MAX_WINDOW {
        return Err(reject("end", format!("is more than {} after the start", span_words(MAX_WINDOW))));
    }
    Ok(())
}

/// The rules of `--until` against now: in the future, and within [`MAX_WINDOW`].
pub fn check_until(until: Timestamp, now: Timestamp) -> Result<(), Rejection> {
    if until <= now {
        return Err(reject("--until", "is not in the future"));
    }
    if until.duration_since(now) > MAX_WINDOW {
        return Err(reject("--until", format!("is too far ahead: it may be {}", ahead_rule(MAX_WINDOW))));
    }
    Ok(())
}

pub fn check_step(step: &str) -> Result<(), Rejection> {
    check_line("step", step, STEP_MAX_CHARS)
}

pub fn check_decision(d: &DecisionRecorded) -> Result<(), Rejection> {
    check_line("text", &d.text, DECISION_FIELD_MAX_CHARS)?;
    check_line("grounds", &d.grounds, DECISION_FIELD_MAX_CHARS)?;
    check_line("undo", &d.undo, DECISION_FIELD_MAX_CHARS)?;
    check_line("working_copy", &d.working_copy, WORKING_COPY_MAX_CHARS)?;
    match (&d.item, d.tradeoff) {
        (Some(_), None) => Err(reject("item", "is only recorded on a trade-off")),
        (Some(item), Some(_)) => check_item(item),
        (None, _) => Ok(()),
    }
}

/// A tied item's id: a checklist id (a slug) that carries no secret.
pub fn check_item(item: &str) -> Result<(), Rejection> {
    crate::checklist::item::validate_id(item).map_err(|_| reject("item", "is not a checklist item id"))?;
    match crate::secrets::scan(item) {
        Some(kind) => Err(reject("item", format!("carries {} ({})", kind.describe(), kind.name()))),
        None => Ok(()),
    }
}

pub fn check_queued(q: &AwayQueued) -> Result<(), Rejection> {
    check_step(&q.step)?;
    check_line("working_copy", &q.working_copy, WORKING_COPY_MAX_CHARS)
}

/// The largest bound on consecutive Stop blocks a recorded stop may name (a bound past
/// this is no bound a session would run to).
pub const ABCD_BOUND_MAX: u32 = 1_000;

/// A recorded stop: its next item a plain line, an error type (only and always on an API
/// error stop) in the host's shape, and abcd's bound only on a stop it ended.
pub fn check_stop_recorded(s: &AwayStopRecorded) -> Result<(), Rejection> {
    if let Some(next) = &s.stop.next {
        check_line("next", next, STOP_NEXT_MAX_CHARS)?;
    }
    match (&s.stop.error_type, s.stop.label) {
        (Some(kind), StopLabel::ApiError) if error_type_ok(kind) => {}
        (Some(_), StopLabel::ApiError) => return Err(reject("error_type", "is not an API error type ([a-z][a-z0-9_]{0,63})")),
        (None, StopLabel::ApiError) => return Err(reject("error_type", "is missing on an API error stop")),
        (Some(_), _) => return Err(reject("error_type", "is only recorded on an API error stop")),
        (None, _) => {}
    }
    match (s.stop.abcd_bound, s.stop.label) {
        (Some(n), StopLabel::WorkOwed | StopLabel::NoNextLook) if (1..=ABCD_BOUND_MAX).contains(&n) && !s.stop.possibly_forced_by_cap => {}
        (Some(_), StopLabel::WorkOwed | StopLabel::NoNextLook) => {
            return Err(reject("abcd_bound", format!("is not a bound of 1 to {ABCD_BOUND_MAX} blocks on a stop no host's cap forced")));
        }
        (Some(_), _) => return Err(reject("abcd_bound", "is only recorded on a stop with work owed or with no next look")),
        (None, _) => {}
    }
    check_line("working_copy", &s.working_copy, WORKING_COPY_MAX_CHARS)
}

pub fn check_handed_back(h: &AwayHandedBack) -> Result<(), Rejection> {
    if !crate::ref_name::branch_name_ok(&h.branch) {
        return Err(reject("branch", "is not a branch name abcd records"));
    }
    if let Some(kind) = crate::secrets::scan(&h.branch) {
        return Err(reject("branch", format!("carries {} ({})", kind.describe(), kind.name())));
    }
    if !(h.head.len() == 40 || h.head.len() == 64) || !h.head.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(reject("head", "is not a full commit id"));
    }
    check_line("working_copy", &h.working_copy, WORKING_COPY_MAX_CHARS)
}

pub fn check_ended(e: &AwayEnded) -> Result<(), Rejection> {
    check_line("ended_by", &e.ended_by, PERSON_MAX_CHARS)?;
    check_line("working_copy", &e.working_copy, WORKING_COPY_MAX_CHARS)
}

/// An API error type as the host names them: `[a-z][a-z0-9_]{0,63}`.
pub fn error_type_ok(kind: &str) -> bool {
    let mut bytes = kind.bytes();
    kind.len() <= 64
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Whether the queue has room for one more step.
pub fn queue_has_room(window: &Window) -> bool {
    window.queue.len() < QUEUE_MAX_STEPS
}

/// `away.set`: a new window. What the open one holds unread (queue, stops, hand-backs,
/// decisions) is carried over; a closed window's items were printed and are not.
pub fn fold_set(state: &mut AwayState, set: AwaySet) -> Result<(), Rejection> {
    check_set(&set)?;
    let carried = state.window.take().filter(|w| w.ended.is_none());
    if carried.is_none() {
        // Leaving starts a new period of refused attempts (`refusals`).
        state.refusals.clear();
    }
    let mut window = Window {
        set_by: set.set_by,
        working_copy: set.working_copy,
        start: set.start,
        end: set.end,
        hold_pushes: set.hold_pushes,
        queue: Vec::new(),
        stops: Vec::new(),
        handed_back: Vec::new(),
        decisions: Vec::new(),
        dropped_stops: 0,
        dropped_handed_back: 0,
        dropped_decisions: 0,
        ended: None,
        sweep: None,
        return_shown: Vec::new(),
        notify: set.notify,
        notified: Vec::new(),
        notifications: Vec::new(),
        dropped_notifications: 0,
    };
    if let Some(old) = carried {
        window.queue = old.queue;
        window.stops = old.stops;
        window.handed_back = old.handed_back;
        window.decisions = old.decisions;
        window.dropped_stops = old.dropped_stops;
        window.dropped_handed_back = old.dropped_handed_back;
        window.dropped_decisions = old.dropped_decisions;
        window.notified = old.notified;
        window.notifications = old.notifications;
        window.dropped_notifications = old.dropped_notifications;
    }
    state.window = Some(window);
    Ok(())
}

fn open_mut<'a>(state: &'a mut AwayState, what: &str) -> Result<&'a mut Window, Rejection> {
    state
        .window
        .as_mut()
        .filter(|w| w.ended.is_none())
        .ok_or_else(|| Rejection { field: None, reason: format!("{what} with no open away window") })
}

/// `away.queued`: one more step, within the queue's cap.
pub fn fold_queued(state: &mut AwayState, q: AwayQueued, at: Timestamp) -> Result<(), Rejection> {
    check_queued(&q)?;
    let window = open_mut(state, "a step queued")?;
    if !queue_has_room(window) {
        return Err(Rejection { field: None, reason: format!("the queue already holds {QUEUE_MAX_STEPS} steps") });
    }
    window.queue.push(QueuedStep { step: q.step, at, working_copy: q.working_copy });
    Ok(())
}

/// `away.stop_recorded`: an identical stop adds to its entry's count and last time; a new
/// one past [`STOPS_MAX`] pushes out the entry seen least recently.
pub fn fold_stop(state: &mut AwayState, s: AwayStopRecorded, at: Timestamp) -> Result<(), Rejection> {
    check_stop_recorded(&s)?;
    let window = open_mut(state, "a stop recorded")?;
    if let Some(entry) = window.stops.iter_mut().find(|e| e.stop == s.stop) {
        entry.count += 1;
        entry.last_at = entry.last_at.max(at);
        return Ok(());
    }
    if window.stops.len() >= STOPS_MAX {
        let stalest = (0..window.stops.len()).min_by_key(|&i| window.stops[i].last_at).expect("the list is full, so not empty");
        window.stops.remove(stalest);
        window.dropped_stops += 1;
    }
    window.stops.push(StopEntry { stop: s.stop, count: 1, first_at: at, last_at: at });
    Ok(())
}

/// `away.handed_back`: recorded once per branch and head.
pub fn fold_handed_back(state: &mut AwayState, h: AwayHandedBack, at: Timestamp) -> Result<(), Rejection> {
    check_handed_back(&h)?;
    let window = open_mut(state, "a hand-back recorded")?;
    if window.handed_back_already(&h.branch, &h.head) {
        return Ok(());
    }
    if window.handed_back.len() >= HANDED_BACK_MAX {
        window.handed_back.remove(0);
        window.dropped_handed_back += 1;
    }
    window.handed_back.push(HandedBack { branch: h.branch, head: h.head, at });
    Ok(())
}

/// `away.ended`: closes the open window (away or lapsed).
pub fn fold_ended(state: &mut AwayState, e: AwayEnded, at: Timestamp) -> Result<(), Rejection> {
    check_ended(&e)?;
    let window = open_mut(state, "an end recorded")?;
    window.ended = Some(Ended { by: e.ended_by, working_copy: e.working_copy, at });
    // Coming back starts a new period of refused attempts: `mode back` listed the window's.
    state.refusals.clear();
    Ok(())
}

/// `decision.recorded` at `seq`: a trade-off is kept for its answer (within
/// [`TRADEOFFS_KEPT`]); every decision is kept in the open window for `abcd mode back`;
/// outside one, only counted (the journal keeps it for the audit).
pub fn fold_decision(state: &mut AwayState, d: DecisionRecorded, at: Timestamp, seq: u64) -> Result<(), Rejection> {
    check_decision(&d)?;
    if let Some(tradeoff) = d.tradeoff {
        if !state.tradeoff_has_room() {
            return Err(Rejection {
                field: None,
                reason: format!("the record already holds {TRADEOFFS_KEPT} trade-offs, none of them answered"),
            });
        }
        if state.tradeoffs.len() >= TRADEOFFS_KEPT {
            let answered = state.tradeoffs.iter().position(|t| t.answer.is_some()).expect("room means one is answered");
            state.tradeoffs.remove(answered);
        }
        state.tradeoffs.push(TradeoffRecord {
            seq,
            tradeoff,
            text: d.text.clone(),
            working_copy: d.working_copy.clone(),
            item: d.item.clone(),
            answer: None,
        });
    }
    let Some(window) = state.window.as_mut().filter(|w| w.ended.is_none()) else {
        state.decisions_outside_window += 1;
        return Ok(());
    };
    if window.decisions.len() >= DECISIONS_MAX {
        window.decisions.remove(0);
        window.dropped_decisions += 1;
    }
    window.decisions.push(Decision {
        text: d.text,
        grounds: d.grounds,
        undo: d.undo,
        at,
        working_copy: d.working_copy,
        tradeoff: d.tradeoff,
        seq: Some(seq),
        item: d.item,
        answer: None,
    });
    Ok(())
}

/// The rules of `decision.answered` its data is held to alone: a plain working copy (its
/// seq is held to the record by [`fold_answered`]).
pub fn check_answered(a: &DecisionAnswered) -> Result<(), Rejection> {
    check_line("working_copy", &a.working_copy, WORKING_COPY_MAX_CHARS)
}

/// `decision.answered`: the person's answer to the trade-off recorded at its seq, replacing
/// an earlier answer; shown beside the decision in the window that holds it.
pub fn fold_answered(state: &mut AwayState, a: DecisionAnswered) -> Result<(), Rejection> {
    check_answered(&a)?;
    let Ok(i) = state.tradeoffs.binary_search_by_key(&a.seq, |t| t.seq) else {
        return Err(reject("seq", "names no trade-off decision the record keeps"));
    };
    state.tradeoffs[i].answer = Some(a.answer);
    if let Some(d) = state.window.as_mut().and_then(|w| w.decisions.iter_mut().find(|d| d.seq == Some(a.seq))) {
        d.answer = Some(a.answer);
    }
    Ok(())
}

/// The rules of `away.sweep_started`: a plain working copy, and a deadline from
/// [`SWEEP_DEADLINE_MIN`] to [`SWEEP_DEADLINE_MAX`] after the start.
pub fn check_sweep_started(s: &AwaySweepStarted) -> Result<(), Rejection> {
    check_line("working_copy", &s.working_copy, WORKING_COPY_MAX_CHARS)?;
    check_sweep_span(s.deadline.duration_since(s.start)).map_err(|why| reject("deadline", why))
}

/// A sweep's length against its bounds; `Err` says which, in words.
pub fn check_sweep_span(span: SignedDuration) -> Result<(), String> {
    if span < SWEEP_DEADLINE_MIN {
        return Err(format!("is less than {} after the start", span_words(SWEEP_DEADLINE_MIN)));
    }
    if span > SWEEP_DEADLINE_MAX {
        return Err(format!("is more than {} after the start", span_words(SWEEP_DEADLINE_MAX)));
    }
    Ok(())
}

/// `away.sweep_started`: the open window's sweep, replacing one a carried-over window had.
pub fn fold_sweep_started(state: &mut AwayState, s: AwaySweepStarted) -> Result<(), Rejection> {
    check_sweep_started(&s)?;
    let window = open_mut(state, "a sweep started")?;
    window.sweep = Some(Sweep { start: s.start, deadline: s.deadline, working_copy: s.working_copy, answers: Vec::new() });
    Ok(())
}

/// `away.sweep_answered`: once per working copy, for the open window's sweep only.
pub fn fold_sweep_answered(state: &mut AwayState, a: AwaySweepAnswered, at: Timestamp) -> Result<(), Rejection> {
    check_line("working_copy", &a.working_copy, WORKING_COPY_MAX_CHARS)?;
    let window = open_mut(state, "a sweep answered")?;
    let Some(sweep) = window.sweep.as_mut().filter(|s| s.start == a.sweep_start) else {
        return Err(reject("sweep_start", "names no sweep of the open window"));
    };
    if sweep.answer_of(&a.working_copy).is_some() {
        return Ok(());
    }
    if sweep.answers.len() >= SWEEP_ANSWERS_MAX {
        return Err(Rejection { field: None, reason: format!("the sweep already holds {SWEEP_ANSWERS_MAX} answers") });
    }
    sweep.answers.push(SweepAnswer { working_copy: a.working_copy, at });
    Ok(())
}

/// Whether the return lists of the closed window are still to be shown in `working_copy`.
pub fn return_owed<'a>(state: &'a AwayState, working_copy: &str) -> Option<&'a Window> {
    let w = state.window.as_ref().filter(|w| w.ended.is_some())?;
    (!w.return_shown.iter().any(|c| c == working_copy) && w.return_shown.len() < RETURN_SHOWN_MAX).then_some(w)
}

/// `away.return_shown`: once per working copy, for the closed window it names.
pub fn fold_return_shown(state: &mut AwayState, r: AwayReturnShown) -> Result<(), Rejection> {
    check_line("working_copy", &r.working_copy, WORKING_COPY_MAX_CHARS)?;
    let Some(window) = state.window.as_mut().filter(|w| w.ended.is_some() && w.start == r.window_start) else {
        return Err(reject("window_start", "names no closed away window"));
    };
    if window.return_shown.contains(&r.working_copy) {
        return Ok(());
    }
    if window.return_shown.len() >= RETURN_SHOWN_MAX {
        return Err(Rejection { field: None, reason: format!("the window already records {RETURN_SHOWN_MAX} working copies") });
    }
    window.return_shown.push(r.working_copy);
    Ok(())
}

#[cfg(test)]
mod tests;
