//! The phased checklist loop (SPEC §8, seed 001): an implementer and a reviewer agent, one
//! phase at a time. Advance (the implementer implements the next phase) → probe (its reply
//! is the completion signal alone: the run is complete) → review rounds (the reviewer's
//! stop signal on a line converges the phase; otherwise its feedback goes to the
//! implementer, whose reply goes back to the reviewer) up to `max_rounds`, then a pause.
//!
//! Everything here is pure: the `loop.*` events, the run record folded from them
//! ([`fold_loop_event`]), and the step machine ([`next_step`]) that says what the driver
//! does next. Every agent turn is one ledger launch (SPEC §7); its `loop.turn_intended` is
//! appended in the same batch as the ledger's `launch.intended`, and its
//! `loop.turn_replied` in the same batch as `receipt.collected`, so the two records can
//! never disagree after a crash.
//!
//! - [`agent`]: templates, readers, signals and prompts (pure).
//!
//! The driver (the I/O: starting turns, collecting replies, resuming after a crash) is a
//! command: `command::loop_driver`.

pub mod agent;

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::checklist::item::Rejection;
pub use crate::event::loops::{
    AgentSpec, Config, DEFAULT_MAX_TURNS, IMPLEMENTER_LANE, KINDS, LOOP_PAUSED, LOOP_RESUMED, LOOP_RETRIED, LOOP_SKIPPED, LOOP_STARTED,
    LOOP_STOPPED, LOOP_TURN_ABANDONED, LOOP_TURN_INTENDED, LOOP_TURN_LOST, LOOP_TURN_REPLIED, LoopNamed, LoopPaused, LoopStarted,
    LoopStopped, LostHow, PauseReason, REVIEWER_LANE, Reader, Role, StopReason, TurnAbandoned, TurnIntended, TurnKind, TurnLost,
    TurnReplied,
};

/// Review rounds a phase may take before the run pauses, by default (seed 001 §8).
pub const DEFAULT_MAX_ROUNDS: u32 = 10;
/// Review rounds a phase may be given, at most.
pub const MAX_ROUNDS_CAP: u32 = 100;
/// `--max-turns` may be at most this (a loop meant to run longer is resumed now and then).
pub const MAX_TURNS_CAP: u64 = 10_000;
/// Losses of one turn that are run again: an agent lost (ended by a signal, or gone with
/// its exit unrecorded, and no reply) runs its turn again this many times at most; one
/// loss more stops the run `peer_error`, so an agent killed on every run cannot keep the
/// loop going for ever.
pub const LOST_TURN_RERUNS: u32 = 2;
/// A stop's detail text, at most, in bytes.
pub const DETAIL_MAX_BYTES: usize = 512;

/// Default loop names one start may try: `loop-<UTC second>`, then `-2`, `-3`, … up to
/// this many in all, before the start is refused (name the loop with `--run` then).
pub const DEFAULT_NAMES_PER_SECOND: u32 = 1000;

/// The default name of a loop started at `at`: the first of `loop-<UTC second>`,
/// `loop-<UTC second>-2`, … (at most [`DEFAULT_NAMES_PER_SECOND`]) that `taken` does not
/// hold; `None` when every one is. `abcd loop start` asks under the journal's writer lock,
/// so two starts in the same second get two names.
pub fn default_run_name(at: Timestamp, taken: impl Fn(&str) -> bool) -> Option<String> {
    let base = format!("loop-{}", at.strftime("%Y%m%dT%H%M%SZ"));
    std::iter::once(base.clone()).chain((2..=DEFAULT_NAMES_PER_SECOND).map(|n| format!("{base}-{n}"))).find(|name| !taken(name))
}

/// A typed refusal of the library; the CLI turns it into exit 2 with what to run instead.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    #[error("{field} {reason}")]
    Refused { field: String, reason: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Running,
    Paused,
    Stopped,
}

/// The step of seed 001 §5: `advance` (the advance prompt is next), `probe` (it was sent;
/// its reply is awaited), `review` (a review round is next or running), `feedback` (the
/// reviewer's feedback is next or running at the implementer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepName {
    Advance,
    Probe,
    Review,
    Feedback,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseStatus {
    Running,
    Converged,
    NotConverged,
    Skipped,
    /// Superseded by a retry from a manual pause (a retry after non-convergence leaves
    /// `not_converged`).
    Retried,
    /// The run stopped during it.
    Stopped,
}

/// One replied turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRecord {
    pub turn: u64,
    pub kind: TurnKind,
    pub round: u32,
    pub launch: u64,
    pub reply_file: String,
    pub reply_blake3: String,
    pub reply_bytes: u64,
    pub signal: bool,
    pub session: Option<String>,
    pub replied_at: Timestamp,
}

/// One attempt at a phase; a retry appends another with the same `n` (seed 001 §6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseRecord {
    pub n: u64,
    pub status: PhaseStatus,
    /// Review rounds taken in this attempt.
    pub rounds: u32,
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    pub turns: Vec<TurnRecord>,
}

/// The turn in flight: intended, its reply not yet recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingTurn {
    pub turn: u64,
    pub phase: u64,
    pub round: u32,
    pub kind: TurnKind,
    pub launch: u64,
    pub reply_file: String,
    pub intended_at: Timestamp,
}

impl PendingTurn {
    pub fn role(&self) -> Role {
        self.kind.role()
    }
}

/// A reply a later prompt quotes: its turn and file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyRef {
    pub turn: u64,
    pub reply_file: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerRole<T> {
    pub implementer: Option<T>,
    pub reviewer: Option<T>,
}

impl<T> Default for PerRole<T> {
    fn default() -> Self {
        PerRole { implementer: None, reviewer: None }
    }
}

impl<T> PerRole<T> {
    pub fn get(&self, role: Role) -> Option<&T> {
        match role {
            Role::Implementer => self.implementer.as_ref(),
            Role::Reviewer => self.reviewer.as_ref(),
        }
    }

    fn set(&mut self, role: Role, v: T) {
        match role {
            Role::Implementer => self.implementer = Some(v),
            Role::Reviewer => self.reviewer = Some(v),
        }
    }
}

/// A loop's run record, folded from its events (seed 001 §9.1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopRecord {
    pub run: String,
    pub config: Config,
    pub started_at: Timestamp,
    pub state: RunState,
    pub step: StepName,
    /// The review round of the phase under review (0 before its first).
    pub round: u32,
    pub paused_reason: Option<PauseReason>,
    pub stop_reason: Option<StopReason>,
    pub stop_detail: Option<String>,
    pub stopped_at: Option<Timestamp>,
    /// Phases advanced past: converged or skipped (seed 001 §12.3).
    pub phases_done: u64,
    pub phases: Vec<PhaseRecord>,
    /// The implementer's completion reply, when it gave one.
    pub completion: Option<TurnRecord>,
    /// Each agent's session id, as its last reply named it.
    pub sessions: PerRole<String>,
    /// Each agent's last reply: what the next review or feedback prompt quotes.
    pub last_replies: PerRole<ReplyRef>,
    /// Turns replied.
    pub turns: u64,
    /// `turns` when the loop last ran on a person's word (its start, a resume, a retry or
    /// a skip): the `max_turns` bound counts the turns replied since.
    #[serde(default)]
    pub turns_at_resume: u64,
    pub pending: Option<PendingTurn>,
    /// Launches abandoned because they never started (each was launched again).
    pub abandoned: u64,
    /// Turns whose agent was lost (ended by a signal, or gone with its exit unrecorded,
    /// without a reply), each run again as a new launch.
    #[serde(default)]
    pub lost: u64,
    /// Losses of the turn due (`turns + 1`, at the step the loop is at): at most
    /// [`LOST_TURN_RERUNS`] are run again. A reply, a retry or a skip starts the count anew.
    #[serde(default)]
    pub due_turn_losses: u32,
}

impl LoopRecord {
    pub fn current_phase(&self) -> Option<&PhaseRecord> {
        self.phases.last().filter(|p| matches!(p.status, PhaseStatus::Running | PhaseStatus::NotConverged))
    }
}

/// Every loop of one working copy journal, by run name: part of the central fold's state
/// (`fold::FoldedState::loops`), so a reader gets it from `state.json` or a checkpoint and
/// the events after it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopRecords {
    pub loops: BTreeMap<String, LoopRecord>,
    /// `loop.started` events the fold refused. With the records they account for every
    /// `loop.started` of the journal, which tells a cached state folded before loops were
    /// folded from one that folded them (`fold::cached_state_passes`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub starts_refused: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl LoopRecords {
    /// Nothing folded: a state without loops serializes as it did before they were folded.
    pub fn is_empty(&self) -> bool {
        self.loops.is_empty() && self.starts_refused == 0
    }

    /// `loop.started` events folded or refused: what the journal's count of that kind must be.
    pub fn starts_seen(&self) -> u64 {
        self.loops.len() as u64 + self.starts_refused
    }

    /// What a cached copy of the records may show passes the fold's checks again: run
    /// names, the configuration, session ids, reply files and hashes, the stop detail. A
    /// cache's digest has no key, so this is what keeps a forged one from showing text the
    /// fold would have refused.
    pub fn shown_text_passes(&self) -> bool {
        let turn_ok = |t: &TurnRecord| {
            check_path("reply_file", &t.reply_file).is_ok()
                && check_hex64("reply_blake3", &t.reply_blake3).is_ok()
                && t.session.as_deref().is_none_or(session_ok)
        };
        self.loops.iter().all(|(name, r)| {
            *name == r.run
                && crate::ledger::check_name("run", &r.run).is_ok()
                && check_config(&r.config).is_ok()
                && r.turns_at_resume <= r.turns
                && r.due_turn_losses <= LOST_TURN_RERUNS
                && u64::from(r.due_turn_losses) <= r.lost
                && r.stop_detail.as_deref().is_none_or(detail_ok)
                && [&r.sessions.implementer, &r.sessions.reviewer].into_iter().flatten().all(|s| session_ok(s))
                && [&r.last_replies.implementer, &r.last_replies.reviewer]
                    .into_iter()
                    .flatten()
                    .all(|x| check_path("reply_file", &x.reply_file).is_ok())
                && r.pending.as_ref().is_none_or(|p| check_path("reply_file", &p.reply_file).is_ok())
                && r.completion.as_ref().is_none_or(turn_ok)
                && r.phases.iter().all(|p| p.turns.iter().all(turn_ok))
        })
    }
}

/// A session id a reply may name (and the record keep).
fn session_ok(s: &str) -> bool {
    crate::event::session_id_ok(s) && crate::secrets::scan(s).is_none()
}

/// A stop's detail the record may keep: one line, within [`DETAIL_MAX_BYTES`], no secret.
fn detail_ok(d: &str) -> bool {
    !d.is_empty() && d.len() <= DETAIL_MAX_BYTES && !d.chars().any(char::is_control) && crate::secrets::scan(d).is_none()
}

/// The next turn to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnPlan {
    pub turn: u64,
    pub phase: u64,
    pub round: u32,
    pub kind: TurnKind,
    /// The reply the prompt quotes (none for an advance).
    pub quotes: Option<ReplyRef>,
    /// The agent's session, for `{session}`.
    pub session: Option<String>,
}

/// What the driver does next (the step machine, seed 001 §5–§7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// The run is over.
    Finished(StopReason),
    /// A turn is in flight: wait for it and collect its reply (even while paused).
    Await(PendingTurn),
    /// Paused, nothing in flight: the driver stops until a person resumes, retries or skips.
    Paused(PauseReason),
    /// Running, nothing in flight, and a bound reached: the driver records `loop.paused`
    /// with this reason (then the loop is [`Next::Paused`]).
    RecordPause(PauseReason),
    Turn(TurnPlan),
}

/// The step machine: what comes next for `r`, from the record alone.
pub fn next_step(r: &LoopRecord) -> Next {
    if r.state == RunState::Stopped {
        return Next::Finished(r.stop_reason.unwrap_or(StopReason::Manual));
    }
    if let Some(p) = &r.pending {
        return Next::Await(p.clone());
    }
    if r.state == RunState::Paused {
        return Next::Paused(r.paused_reason.unwrap_or(PauseReason::Manual));
    }
    if turn_bound_reached(r) {
        return Next::RecordPause(PauseReason::MaxTurns);
    }
    let turn = r.turns + 1;
    let (kind, phase, round, quotes) = match r.step {
        // Probe with nothing in flight is not reached (an abandoned or lost advance returns
        // to advance); treat it as advance all the same.
        StepName::Advance | StepName::Probe => (TurnKind::Advance, r.phases_done + 1, 0, None),
        StepName::Review => {
            (TurnKind::Review, r.phases.last().map_or(r.phases_done + 1, |p| p.n), r.round, r.last_replies.implementer.clone())
        }
        StepName::Feedback => {
            (TurnKind::Feedback, r.phases.last().map_or(r.phases_done + 1, |p| p.n), r.round, r.last_replies.reviewer.clone())
        }
    };
    let session = r.sessions.get(kind.role()).cloned();
    Next::Turn(TurnPlan { turn, phase, round, kind, quotes, session })
}

/// Turns replied since the loop last ran on a person's word.
pub fn turns_since_resume(r: &LoopRecord) -> u64 {
    r.turns.saturating_sub(r.turns_at_resume)
}

/// The loop has run `max_turns` turns on one word of a person: no further turn starts
/// before a person's next one.
fn turn_bound_reached(r: &LoopRecord) -> bool {
    turns_since_resume(r) >= r.config.max_turns
}

fn reject(field: &str, reason: impl Into<String>) -> Rejection {
    Rejection { field: Some(field.to_string()), reason: reason.into() }
}

fn check_hex64(field: &str, h: &str) -> Result<(), Rejection> {
    if h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(reject(field, "is not 64 lowercase hex"))
    }
}

fn check_path(field: &str, p: &str) -> Result<(), Rejection> {
    if p.is_empty() || p.len() > crate::ledger::PATH_MAX_BYTES || p.chars().any(char::is_control) {
        return Err(reject(field, format!("must be a path of 1 to {} bytes without control characters", crate::ledger::PATH_MAX_BYTES)));
    }
    if let Some(kind) = crate::secrets::scan(p) {
        return Err(reject(field, format!("carries {} ({})", kind.describe(), kind.name())));
    }
    Ok(())
}

fn from_loop_error(e: LoopError) -> Rejection {
    match e {
        LoopError::Refused { field, reason } => Rejection { field: Some(field), reason },
    }
}

/// A configuration the loop accepts: what `abcd loop start` checks before recording, and
/// the fold again for every `loop.started`.
pub fn check_config(c: &Config) -> Result<(), LoopError> {
    agent::check_template("implementer", &c.implementer.template)?;
    agent::check_template("reviewer", &c.reviewer.template)?;
    for (field, p) in [("implementer worktree", &c.implementer.worktree), ("reviewer worktree", &c.reviewer.worktree)] {
        check_path(field, p).map_err(|r| LoopError::Refused { field: field.into(), reason: r.reason })?;
    }
    if let Some(p) = &c.checklist {
        check_path("checklist", p).map_err(|r| LoopError::Refused { field: "checklist".into(), reason: r.reason })?;
    }
    if c.max_rounds == 0 || c.max_rounds > MAX_ROUNDS_CAP {
        return Err(LoopError::Refused {
            field: "max-rounds".into(),
            reason: format!("must be 1 to {MAX_ROUNDS_CAP} (a phase needs at least one review)"),
        });
    }
    if c.max_turns == 0 || c.max_turns > MAX_TURNS_CAP {
        return Err(LoopError::Refused {
            field: "max-turns".into(),
            reason: format!("must be 1 to {MAX_TURNS_CAP} (turns run before the loop pauses until a person resumes it)"),
        });
    }
    agent::check_signal("completion-signal", &c.completion_signal)?;
    agent::check_signal("review-stop-signal", &c.review_stop_signal)?;
    agent::check_prompt("advance-prompt", &c.advance_prompt)?;
    agent::check_prompt("review-prompt", &c.review_prompt)?;
    agent::check_prompt("feedback-prompt", &c.feedback_prompt)?;
    // The prompt must name the signal the loop waits for, or the two drift apart and the
    // loop waits for a word nobody was told to say.
    if !agent::names_signal(&c.advance_prompt, &c.completion_signal) {
        return Err(LoopError::Refused {
            field: "advance-prompt".into(),
            reason: format!(
                "does not name the completion signal {}; say in it when to reply {} alone",
                c.completion_signal, c.completion_signal
            ),
        });
    }
    if !agent::names_signal(&c.review_prompt, &c.review_stop_signal) {
        return Err(LoopError::Refused {
            field: "review-prompt".into(),
            reason: format!(
                "does not name the review stop signal {}; say in it when to reply {}",
                c.review_stop_signal, c.review_stop_signal
            ),
        });
    }
    Ok(())
}

fn loop_mut<'a>(records: &'a mut LoopRecords, run: &str) -> Result<&'a mut LoopRecord, Rejection> {
    records.loops.get_mut(run).ok_or_else(|| reject("run", "names no started loop"))
}

fn live_mut<'a>(records: &'a mut LoopRecords, run: &str) -> Result<&'a mut LoopRecord, Rejection> {
    let r = loop_mut(records, run)?;
    if r.state == RunState::Stopped {
        return Err(reject("run", "names a loop that has stopped"));
    }
    Ok(r)
}

/// Folds one event into the loop records: `loop.*` kinds only (others are not the loop's
/// and are passed over). Each rule the driver decides by is checked again, so an event
/// appended behind abcd's back that breaks one is refused, never applied.
pub fn fold_loop_event(records: &mut LoopRecords, kind: &str, data: &serde_json::Value, at: Timestamp) -> Result<(), Rejection> {
    fn typed<T: for<'de> Deserialize<'de>>(data: &serde_json::Value) -> Result<T, Rejection> {
        T::deserialize(data).map_err(|e| Rejection { field: None, reason: crate::event::data_reason(&e.to_string()) })
    }
    match kind {
        LOOP_STARTED => fold_started(records, typed(data)?, at),
        LOOP_TURN_INTENDED => fold_intended(records, typed(data)?, at),
        LOOP_TURN_REPLIED => fold_replied(records, typed(data)?, at),
        LOOP_TURN_ABANDONED => fold_abandoned(records, typed(data)?),
        LOOP_TURN_LOST => fold_lost(records, typed(data)?),
        LOOP_PAUSED => fold_paused(records, typed(data)?, at),
        LOOP_RESUMED => fold_control(records, typed(data)?, Control::Resume, at),
        LOOP_RETRIED => fold_control(records, typed(data)?, Control::Retry, at),
        LOOP_SKIPPED => fold_control(records, typed(data)?, Control::Skip, at),
        LOOP_STOPPED => fold_stopped(records, typed(data)?, at),
        _ => Ok(()),
    }
}

fn fold_started(records: &mut LoopRecords, s: LoopStarted, at: Timestamp) -> Result<(), Rejection> {
    crate::ledger::check_name("run", &s.run)?;
    check_config(&s.config).map_err(from_loop_error)?;
    if records.loops.contains_key(&s.run) {
        return Err(reject("run", "was already started"));
    }
    records.loops.insert(
        s.run.clone(),
        LoopRecord {
            run: s.run,
            config: s.config,
            started_at: at,
            state: RunState::Running,
            step: StepName::Advance,
            round: 0,
            paused_reason: None,
            stop_reason: None,
            stop_detail: None,
            stopped_at: None,
            phases_done: 0,
            phases: vec![],
            completion: None,
            sessions: PerRole::default(),
            last_replies: PerRole::default(),
            turns: 0,
            turns_at_resume: 0,
            pending: None,
            abandoned: 0,
            lost: 0,
            due_turn_losses: 0,
        },
    );
    Ok(())
}

fn fold_intended(records: &mut LoopRecords, t: TurnIntended, at: Timestamp) -> Result<(), Rejection> {
    check_hex64("prompt_blake3", &t.prompt_blake3)?;
    check_path("reply_file", &t.reply_file)?;
    if t.launch == 0 {
        return Err(reject("launch", "is not a launch number (they start at 1)"));
    }
    let r = live_mut(records, &t.run)?;
    let Next::Turn(plan) = next_step(r) else {
        return Err(reject("turn", "is not due: the loop is paused or a turn is already in flight"));
    };
    if (plan.turn, plan.phase, plan.round, plan.kind) != (t.turn, t.phase, t.round, t.kind) {
        return Err(reject("turn", "is not the step the loop is at"));
    }
    if t.kind == TurnKind::Advance {
        r.step = StepName::Probe;
    }
    r.pending = Some(PendingTurn {
        turn: t.turn,
        phase: t.phase,
        round: t.round,
        kind: t.kind,
        launch: t.launch,
        reply_file: t.reply_file,
        intended_at: at,
    });
    Ok(())
}

fn pending_named(r: &LoopRecord, turn: u64, launch: u64) -> Result<&PendingTurn, Rejection> {
    match &r.pending {
        Some(p) if p.turn == turn && p.launch == launch => Ok(p),
        _ => Err(reject("turn", "is not the turn in flight")),
    }
}

fn fold_replied(records: &mut LoopRecords, t: TurnReplied, at: Timestamp) -> Result<(), Rejection> {
    check_hex64("reply_blake3", &t.reply_blake3)?;
    if let Some(s) = &t.session
        && !session_ok(s)
    {
        return Err(reject("session", "is not a session id ([A-Za-z0-9_-]{1,128})"));
    }
    let r = live_mut(records, &t.run)?;
    let p = pending_named(r, t.turn, t.launch)?.clone();
    if p.kind == TurnKind::Feedback && t.signal {
        return Err(reject("signal", "is never set on a feedback turn"));
    }
    let record = TurnRecord {
        turn: t.turn,
        kind: p.kind,
        round: p.round,
        launch: t.launch,
        reply_file: p.reply_file.clone(),
        reply_blake3: t.reply_blake3,
        reply_bytes: t.reply_bytes,
        signal: t.signal,
        session: t.session.clone(),
        replied_at: at,
    };
    let role = p.kind.role();
    r.pending = None;
    r.turns = t.turn;
    r.due_turn_losses = 0;
    if let Some(s) = t.session {
        r.sessions.set(role, s);
    }
    r.last_replies.set(role, ReplyRef { turn: t.turn, reply_file: p.reply_file });
    match p.kind {
        TurnKind::Advance if t.signal => {
            r.completion = Some(record);
            r.state = RunState::Stopped;
            r.stop_reason = Some(StopReason::Completed);
            r.stopped_at = Some(at);
            r.paused_reason = None;
        }
        TurnKind::Advance => {
            r.phases.push(PhaseRecord {
                n: p.phase,
                status: PhaseStatus::Running,
                rounds: 0,
                started_at: at,
                ended_at: None,
                turns: vec![record],
            });
            r.step = StepName::Review;
            r.round = 1;
        }
        TurnKind::Review => {
            let max = r.config.max_rounds;
            let phase = r.phases.last_mut().ok_or_else(|| reject("turn", "reviews no phase"))?;
            phase.turns.push(record);
            phase.rounds = p.round;
            if t.signal {
                phase.status = PhaseStatus::Converged;
                phase.ended_at = Some(at);
                r.phases_done += 1;
                r.step = StepName::Advance;
                r.round = 0;
            } else if p.round >= max {
                phase.status = PhaseStatus::NotConverged;
                phase.ended_at = Some(at);
                r.state = RunState::Paused;
                r.paused_reason = Some(PauseReason::PhaseNotConverged);
            } else {
                r.step = StepName::Feedback;
            }
        }
        TurnKind::Feedback => {
            let phase = r.phases.last_mut().ok_or_else(|| reject("turn", "answers feedback in no phase"))?;
            phase.turns.push(record);
            r.step = StepName::Review;
            r.round = p.round + 1;
        }
    }
    Ok(())
}

fn fold_abandoned(records: &mut LoopRecords, t: TurnAbandoned) -> Result<(), Rejection> {
    let r = live_mut(records, &t.run)?;
    let p = pending_named(r, t.turn, t.launch)?.clone();
    r.pending = None;
    r.abandoned += 1;
    if p.kind == TurnKind::Advance {
        r.step = StepName::Advance;
    }
    Ok(())
}

fn fold_lost(records: &mut LoopRecords, t: TurnLost) -> Result<(), Rejection> {
    match (t.how, t.signal) {
        (LostHow::Signal, Some(n)) if n >= 1 => {}
        (LostHow::Signal, _) => return Err(reject("signal", "must name the signal (1 or more) that ended the launch")),
        (LostHow::Gone, None) => {}
        (LostHow::Gone, Some(_)) => return Err(reject("signal", "is null for a launch gone with its exit unrecorded")),
    }
    let r = live_mut(records, &t.run)?;
    let p = pending_named(r, t.turn, t.launch)?.clone();
    if r.due_turn_losses >= LOST_TURN_RERUNS {
        return Err(reject(
            "turn",
            format!("was lost {LOST_TURN_RERUNS} times already: one loss more stops the run peer_error, it does not run the turn again"),
        ));
    }
    r.pending = None;
    r.lost += 1;
    r.due_turn_losses += 1;
    if p.kind == TurnKind::Advance {
        r.step = StepName::Advance;
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Pause,
    Resume,
    Retry,
    Skip,
}

impl Control {
    pub fn name(self) -> &'static str {
        match self {
            Control::Pause => "pause",
            Control::Resume => "resume",
            Control::Retry => "retry",
            Control::Skip => "skip",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Control::Pause => LOOP_PAUSED,
            Control::Resume => LOOP_RESUMED,
            Control::Retry => LOOP_RETRIED,
            Control::Skip => LOOP_SKIPPED,
        }
    }
}

/// Why a control may not apply to `r` now, in words a person acts on; `None` when it may.
/// `abcd loop` decides with this under the writer lock, and the fold checks it again.
pub fn control_refusal(r: &LoopRecord, control: Control) -> Option<String> {
    let run = &r.run;
    if r.state == RunState::Stopped {
        return Some(format!("loop {run} has stopped ({}); start a new one with `abcd loop start`", stop_words(r)));
    }
    match control {
        Control::Pause if r.state == RunState::Paused => Some(format!("loop {run} is already paused; `abcd loop resume {run}` resumes it")),
        Control::Pause => None,
        Control::Resume if r.state == RunState::Running => Some(format!("loop {run} is running, not paused")),
        // A resume after non-convergence is a retry (seed 001 §7); the CLI records it so.
        Control::Resume if r.paused_reason == Some(PauseReason::PhaseNotConverged) => control_refusal(r, Control::Retry),
        Control::Resume => None,
        Control::Retry | Control::Skip if r.state != RunState::Paused => {
            Some(format!("loop {run} is running; pause it first with `abcd loop pause {run}`"))
        }
        Control::Retry | Control::Skip if r.pending.is_some() => {
            let p = r.pending.as_ref().expect("checked");
            Some(format!(
                "turn {} ({} of phase {}) of loop {run} is in flight; wait for its reply (`abcd loop status {run}`), or drive the loop to collect it with `abcd loop drive {run}`",
                p.turn,
                p.kind.name(),
                p.phase
            ))
        }
        Control::Retry | Control::Skip if r.current_phase().is_none() || r.step == StepName::Advance => {
            Some(format!("loop {run} has no phase under way (the next phase has not been started); `abcd loop resume {run}` starts it"))
        }
        Control::Retry if r.last_replies.implementer.is_none() => Some(format!("loop {run} has no implementer reply to review again")),
        Control::Retry | Control::Skip => None,
    }
}

fn fold_paused(records: &mut LoopRecords, p: LoopPaused, at: Timestamp) -> Result<(), Rejection> {
    match p.reason {
        None | Some(PauseReason::Manual) => fold_control(records, LoopNamed { run: p.run }, Control::Pause, at),
        Some(PauseReason::MaxTurns) => {
            let r = live_mut(records, &p.run)?;
            if next_step(r) != Next::RecordPause(PauseReason::MaxTurns) {
                return Err(reject(
                    "reason",
                    "max_turns is recorded only when the loop runs, nothing is in flight and its max_turns bound is reached",
                ));
            }
            r.state = RunState::Paused;
            r.paused_reason = Some(PauseReason::MaxTurns);
            Ok(())
        }
        Some(PauseReason::PhaseNotConverged) => {
            Err(reject("reason", "phase_not_converged is recorded by the review reply itself, never by loop.paused"))
        }
    }
}

fn fold_control(records: &mut LoopRecords, c: LoopNamed, control: Control, at: Timestamp) -> Result<(), Rejection> {
    let r = loop_mut(records, &c.run)?;
    if let Some(why) = control_refusal(r, control) {
        return Err(reject("run", why));
    }
    if control == Control::Resume && r.paused_reason == Some(PauseReason::PhaseNotConverged) {
        return Err(reject("run", "is paused after non-convergence: it resumes by loop.retried"));
    }
    match control {
        Control::Pause => {
            r.state = RunState::Paused;
            r.paused_reason = Some(PauseReason::Manual);
        }
        Control::Resume => {
            r.state = RunState::Running;
            r.paused_reason = None;
            r.turns_at_resume = r.turns;
        }
        Control::Retry => {
            let last = r.phases.last_mut().expect("control_refusal checked a phase is under way");
            let n = last.n;
            if last.status == PhaseStatus::Running {
                last.status = PhaseStatus::Retried;
                last.ended_at = Some(at);
            }
            r.phases.push(PhaseRecord { n, status: PhaseStatus::Running, rounds: 0, started_at: at, ended_at: None, turns: vec![] });
            r.step = StepName::Review;
            r.round = 1;
            r.state = RunState::Running;
            r.paused_reason = None;
            r.turns_at_resume = r.turns;
            r.due_turn_losses = 0;
        }
        Control::Skip => {
            let last = r.phases.last_mut().expect("control_refusal checked a phase is under way");
            last.status = PhaseStatus::Skipped;
            last.ended_at.get_or_insert(at);
            r.phases_done += 1;
            r.step = StepName::Advance;
            r.round = 0;
            r.state = RunState::Running;
            r.paused_reason = None;
            r.turns_at_resume = r.turns;
            r.due_turn_losses = 0;
        }
    }
    Ok(())
}

fn fold_stopped(records: &mut LoopRecords, s: LoopStopped, at: Timestamp) -> Result<(), Rejection> {
    if s.reason == StopReason::Completed {
        return Err(reject("reason", "completed is recorded by the completion reply itself, never by loop.stopped"));
    }
    if let Some(d) = &s.detail
        && !detail_ok(d)
    {
        return Err(reject("detail", format!("must be 1 to {DETAIL_MAX_BYTES} bytes of one line without a secret")));
    }
    let r = live_mut(records, &s.run)?;
    if let Some(phase) = r.phases.last_mut()
        && phase.status == PhaseStatus::Running
    {
        phase.status = PhaseStatus::Stopped;
        phase.ended_at = Some(at);
    }
    r.state = RunState::Stopped;
    r.stop_reason = Some(s.reason);
    r.stop_detail = s.detail;
    r.stopped_at = Some(at);
    r.paused_reason = None;
    Ok(())
}

/// "once", "twice", "n times".
pub fn times(n: u64) -> String {
    match n {
        1 => "once".into(),
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

/// A stopped run's reason in words.
pub fn stop_words(r: &LoopRecord) -> String {
    match (r.stop_reason, &r.stop_detail) {
        (Some(StopReason::Completed), _) => "completed: the implementer had no phase left".into(),
        (Some(StopReason::Manual), _) => "stopped by hand".into(),
        (Some(StopReason::PeerError), Some(d)) => format!("peer_error: {d}"),
        (Some(StopReason::PeerError), None) => "peer_error".into(),
        (None, _) => "not stopped".into(),
    }
}

/// A loop as `abcd loop status` and `abcd resume` show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoopListing {
    pub run: String,
    pub state: RunState,
    pub step: StepName,
    pub phase: Option<u64>,
    pub round: u32,
    pub max_rounds: u32,
    pub max_turns: u64,
    pub phases_done: u64,
    pub paused_reason: Option<PauseReason>,
    pub stop_reason: Option<StopReason>,
    pub turns: u64,
    /// Turns whose agent was lost and that were run again.
    pub lost: u64,
    /// The turn in flight: its number, kind and ledger launch.
    pub in_flight: Option<(u64, TurnKind, u64)>,
    pub sessions: PerRole<String>,
    /// One line for people.
    pub summary: String,
}

/// The listing of one loop record.
pub fn listing(r: &LoopRecord) -> LoopListing {
    let phase = match r.step {
        StepName::Advance | StepName::Probe => r.pending.as_ref().map(|p| p.phase).or(Some(r.phases_done + 1)),
        _ => r.phases.last().map(|p| p.n),
    };
    let doing = match (r.state, r.step) {
        (RunState::Stopped, _) => stop_words(r),
        (_, StepName::Advance) => format!("phase {} next", r.phases_done + 1),
        (_, StepName::Probe) => format!("phase {} asked for (advance sent, reply awaited)", phase.unwrap_or(0)),
        (_, StepName::Review) => format!("phase {} in review (round {} of {})", phase.unwrap_or(0), r.round, r.config.max_rounds),
        (_, StepName::Feedback) => format!("phase {} back at the implementer with feedback (round {})", phase.unwrap_or(0), r.round),
    };
    let state = match (r.state, r.paused_reason) {
        (RunState::Running, _) => "running".to_string(),
        (RunState::Paused, Some(PauseReason::PhaseNotConverged)) => format!(
            "PAUSED: phase {} did not converge in {} rounds (`abcd loop retry {}` or `abcd loop skip {}`)",
            phase.unwrap_or(0),
            r.config.max_rounds,
            r.run,
            r.run
        ),
        (RunState::Paused, Some(PauseReason::MaxTurns)) => format!(
            "PAUSED: {} turns ran without the completion signal, its --max-turns bound (`abcd loop resume {}` allows {} more, `abcd loop stop {}` ends it)",
            turns_since_resume(r),
            r.run,
            r.config.max_turns,
            r.run
        ),
        (RunState::Paused, _) => format!("PAUSED by hand (`abcd loop resume {}`)", r.run),
        (RunState::Stopped, _) => "stopped".to_string(),
    };
    let again = match r.due_turn_losses {
        0 => String::new(),
        n => format!(", run again after its agent was lost {} ({n} of at most {LOST_TURN_RERUNS})", times(u64::from(n))),
    };
    let flight = match &r.pending {
        Some(p) => format!("; turn {} ({} of the {}) in flight{again}", p.turn, p.kind.name(), p.kind.role().lane()),
        None => String::new(),
    };
    let summary = if r.state == RunState::Stopped {
        format!("loop {}: {doing}; {} phase(s) done in {} turn(s)", r.run, r.phases_done, r.turns)
    } else {
        format!("loop {}: {state}; {doing}; {} phase(s) done{flight}", r.run, r.phases_done)
    };
    LoopListing {
        run: r.run.clone(),
        state: r.state,
        step: r.step,
        phase,
        round: r.round,
        max_rounds: r.config.max_rounds,
        max_turns: r.config.max_turns,
        phases_done: r.phases_done,
        paused_reason: r.paused_reason,
        stop_reason: r.stop_reason,
        turns: r.turns,
        lost: r.lost,
        in_flight: r.pending.as_ref().map(|p| (p.turn, p.kind, p.launch)),
        sessions: r.sessions.clone(),
        summary,
    }
}

/// For `abcd resume`: the loop listing of run `run`, from the loop records of the run's
/// working copy journal (its folded state's `loops`); `None` when the run is not a loop.
pub fn resume_listing(run: &str, loops: &LoopRecords) -> Option<LoopListing> {
    loops.loops.get(run).map(listing)
}

#[cfg(test)]
mod tests;
