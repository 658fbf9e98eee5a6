//! Pure folds: journal events in, state out, no I/O. Everything a projection, a
//! checkpoint or an audit line shows is computed here from plain values, so these
//! functions are tested with plain values and quickcheck.

pub mod audit;
pub mod checklist;
pub mod context;
pub mod owed;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::away;
use crate::event::{self, DecodeError, Known, RepairCause, Scope};
use crate::journal::format::{Event, Hash};
use crate::journal::proof::Folded;
use crate::ledger;
use crate::phased;

/// Skipped events kept by name for each view that shows them (the checklist's, the away
/// record's, the rest): the first this many, so one view's skips never crowd out another's...
pub const MAX_SKIPPED_KEPT: usize = 64;
/// ...and the latest this many after those, so the newest skip is always named. Skips in
/// between are only counted (`skipped_total`); `abcd replay` names every one.
pub const MAX_SKIPPED_LATEST_KEPT: usize = 64;

/// Everything folded from one journal. Checkpoints store it; projections render it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldedState {
    pub journal: JournalSummary,
    pub checklist: checklist::ChecklistState,
    #[serde(default)]
    pub work: WorkState,
    /// The away record (repository journals only).
    #[serde(default)]
    pub away: crate::away::AwayState,
    /// Each host session's stop-verdict state (working copy journals only).
    #[serde(default)]
    pub sessions: BTreeMap<String, SessionSlot>,
    /// Runs and launches (working copy journals); the run index (the machine journal).
    #[serde(default)]
    pub ledger: crate::ledger::LedgerState,
    /// Every phased loop's record (working copy journals only). Left out of `state.json`
    /// and checkpoints while empty, so a state without loops is written byte for byte as
    /// before loops were folded.
    #[serde(default, skip_serializing_if = "crate::phased::LoopRecords::is_empty")]
    pub loops: crate::phased::LoopRecords,
    /// What abcd injected into each host session's context and what became of it
    /// (working copy journals only). Left out while empty, like `loops`.
    #[serde(default, skip_serializing_if = "context::ContextState::is_empty")]
    pub context: context::ContextState,
}

/// Sessions whose verdict state is kept; past it, the one judged least recently goes.
pub const MAX_SESSIONS_KEPT: usize = 256;

/// A session's state as its last `session.judged` left it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSlot {
    pub state: crate::verdict::stop::SessionState,
    pub row: Option<crate::verdict::stop::Row>,
    pub stop_state: Option<crate::verdict::stop::StopState>,
    pub judged_seq: u64,
    /// The away window the state belongs to (its start); none while present.
    #[serde(default)]
    pub window_start: Option<jiff::Timestamp>,
}

/// Branches created here and sessions seen: what the hooks need to tell whether the
/// checklist is behind the session's own work (SPEC §3 "Behind").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkState {
    /// Branches created in this working copy, oldest first, each once.
    pub branches: Vec<String>,
    pub sessions_started: u64,
    pub compactions: u64,
    pub last_session: Option<String>,
}

/// Own branches kept by name; older ones beyond this are forgotten first.
pub const MAX_BRANCHES_KEPT: usize = 1_000;

/// What the journal itself says about its history.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalSummary {
    pub journal_id: Option<String>,
    pub scope: Option<Scope>,
    /// The seq the next event must carry: events folded so far, plus seqs a repair lost.
    pub events: u64,
    pub last_hash: Option<Hash>,
    pub by_kind: BTreeMap<String, u64>,
    pub repairs: Vec<RepairRecord>,
    /// Skipped events by name, in seq order, within [`MAX_SKIPPED_KEPT`] and
    /// [`MAX_SKIPPED_LATEST_KEPT`] per view.
    pub skipped: Vec<Skipped>,
    pub skipped_total: u64,
    /// Seqs a salvaging repair could not keep, as inclusive ranges, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<LostSeqs>,
    /// Lost ranges beyond `MAX_LOST_RANGES_KEPT`: counted, not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost_ranges_not_kept: u64,
}

/// Added to the reason of a change to an item the checklist does not hold, in a journal
/// a repair lost seqs of.
pub const LOST_ADD_NOTE: &str = " (a repair lost seqs before it: the item's add may have been one of them)";

/// Lost ranges kept by number in the state; later ones are only counted.
pub const MAX_LOST_RANGES_KEPT: usize = 256;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Seqs `from..=to` were acknowledged once and lost to damage; a `journal.repaired` at
/// seq `from` stands in for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostSeqs {
    pub from: u64,
    pub to: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairRecord {
    pub seq: u64,
    pub cause: RepairCause,
    pub lines_moved: u64,
    pub quarantine_file: Option<String>,
}

/// An event a fold passed over, and why: the field and the rule or pattern kind that
/// refused it, never the value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub seq: u64,
    pub kind: String,
    pub field: Option<String>,
    pub reason: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "seq {} ({}) skipped: {field} {}", self.seq, self.kind, self.reason),
            None => write!(f, "seq {} ({}) skipped: {}", self.seq, self.kind, self.reason),
        }
    }
}

/// What a fold step has to say about an event it did not use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FoldNote {
    Folded,
    /// First sighting of a kind this build does not know; later ones are silent.
    UnknownKind(String),
    Skipped(Skipped),
}

/// `journal.moved`: the working copy's root becomes `to`, when the move starts at the root
/// the journal names now (`from`); a move of another journal's root, or in a journal that is
/// not a working copy's, is skipped and named. A `to` that carries a secret is not kept in a
/// projection, as for the genesis's scope.
fn fold_moved(summary: &mut JournalSummary, m: crate::event::JournalMoved) -> Result<(), checklist::Rejection> {
    match &summary.scope {
        Some(Scope::WorkingCopy { root }) if *root == m.from => {
            summary.scope = crate::secrets::scan(&m.to).is_none().then_some(Scope::WorkingCopy { root: m.to });
            Ok(())
        }
        Some(Scope::WorkingCopy { .. }) => {
            Err(checklist::Rejection { field: Some("from".into()), reason: "is not the root the journal names".into() })
        }
        _ => Err(checklist::Rejection { field: None, reason: "belongs in a working copy's journal".into() }),
    }
}

/// Applies one verified event. The journal guarantees order; the assertion catches a
/// caller that folds out of order or twice.
pub fn fold_event(state: &mut FoldedState, event: &Event) -> FoldNote {
    fold_event_keeping_retired(state, event, &mut Vec::new())
}

/// Steps the fold over seqs `from..=to` that no provable line holds, as a gap record would
/// (a reader of a damaged journal folds the plan repair would write, without writing it):
/// the next event must carry seq `to + 1` and chain onto `next_prev`.
pub fn fold_lost(state: &mut FoldedState, from: u64, to: u64, next_prev: Hash) {
    let summary = &mut state.journal;
    assert_eq!(from, summary.events, "lost seqs start where the fold stands");
    assert!(to >= from && to < u64::MAX, "a lost range names at least one seq, and a seq after it");
    summary.events = to + 1;
    summary.last_hash = Some(next_prev);
    if summary.lost.len() < MAX_LOST_RANGES_KEPT {
        summary.lost.push(LostSeqs { from, to });
    } else {
        summary.lost_ranges_not_kept += 1;
    }
}

/// Folds one step of a damaged journal's plan (journal-format §10): a kept line as
/// [`fold_event_keeping_retired`] does, lost seqs as [`fold_lost`].
pub fn fold_kept(state: &mut FoldedState, step: Folded<'_>, retired: &mut Vec<checklist::Item>) {
    match step {
        Folded::Line(event) => {
            fold_event_keeping_retired(state, event, retired);
        }
        Folded::Lost(gap) => fold_lost(state, gap.from, gap.to, gap.next_prev),
    }
}

/// [`fold_event`], handing every closed item it retires from the checklist (past
/// [`checklist::CLOSED_ITEMS_KEPT`]) to `retired`, as it was when it left: what
/// `abcd checklist --all` shows beside the working state.
pub fn fold_event_keeping_retired(state: &mut FoldedState, event: &Event, retired: &mut Vec<checklist::Item>) -> FoldNote {
    let summary = &mut state.journal;
    assert_eq!(event.seq, summary.events, "events are folded in seq order, each once");
    if let Some(prev) = summary.last_hash {
        assert_eq!(event.prev, prev, "each event chains onto the one folded before it");
    }
    let (chain_seq, chain_hash) = event.chain_position();
    summary.events = chain_seq + 1;
    summary.last_hash = Some(chain_hash);
    if let Some(gap) = event.gap() {
        if summary.lost.len() < MAX_LOST_RANGES_KEPT {
            summary.lost.push(LostSeqs { from: gap.lost_from, to: gap.lost_to });
        } else {
            summary.lost_ranges_not_kept += 1;
        }
    }
    let first_of_kind = !summary.by_kind.contains_key(&event.kind);
    *summary.by_kind.entry(event.kind.clone()).or_insert(0) += 1;
    if event.kind == event::DECISION_RECORDED || event.kind == event::DECISION_ANSWERED {
        state.away.decision_events_seen += 1;
    }
    if event.kind == event::AWAY_MODE_REFUSED {
        state.away.mode_refused_seen += 1;
    }
    let folded = match event::decode(&event.kind, &event.data) {
        Ok(Known::Opened(opened)) => {
            summary.journal_id = Some(opened.journal_id);
            // A scope naming a path that carries a secret is not kept in a projection.
            summary.scope = crate::secrets::scan(&opened.scope.to_string()).is_none().then_some(opened.scope);
            Ok(())
        }
        Ok(Known::Moved(m)) => fold_moved(summary, m),
        Ok(Known::Repaired(r)) if !r.quarantine_file.as_deref().is_none_or(quarantine_name_ok) => {
            Err(checklist::Rejection { field: Some("quarantine_file".into()), reason: "is not a quarantine file name abcd writes".into() })
        }
        Ok(Known::Repaired(r)) => {
            summary.repairs.push(RepairRecord { seq: event.seq, cause: r.cause, lines_moved: r.lines, quarantine_file: r.quarantine_file });
            Ok(())
        }
        Ok(Known::ItemAdded(added)) => checklist::fold_added(&mut state.checklist, event, &added, retired),
        Ok(Known::ItemChanged(changed)) => checklist::fold_changed(&mut state.checklist, event, &changed, retired),
        Ok(Known::WriteRefused(refused)) => checklist::fold_refused(&mut state.checklist, event, &refused),
        Ok(Known::PromiseFired(fired)) => checklist::fold_promise_fired(&mut state.checklist, event, &fired, retired),
        Ok(Known::SessionStarted(s)) => {
            state.work.sessions_started += 1;
            state.work.last_session = s.session.filter(|id| crate::event::session_id_ok(id) && crate::secrets::scan(id).is_none());
            Ok(())
        }
        Ok(Known::CompactionRecorded(_)) => {
            state.work.compactions += 1;
            Ok(())
        }
        Ok(Known::BranchCreated(b)) => fold_branch(&mut state.work, b),
        Ok(Known::SessionJudged(j)) => fold_judged(state, j, event.seq),
        Ok(Known::AwaySet(x)) => in_repository(state).and_then(|away| away::fold_set(away, x)),
        Ok(Known::AwayQueued(x)) => in_repository(state).and_then(|away| away::fold_queued(away, x, event.time)),
        Ok(Known::AwayStopRecorded(x)) => in_repository(state).and_then(|away| away::fold_stop(away, x, event.time)),
        Ok(Known::AwayHandedBack(x)) => in_repository(state).and_then(|away| away::fold_handed_back(away, x, event.time)),
        Ok(Known::AwayEnded(x)) => in_repository(state).and_then(|away| away::fold_ended(away, x, event.time)),
        Ok(Known::DecisionRecorded(x)) => in_repository(state).and_then(|away| away::fold_decision(away, x, event.time, event.seq)),
        Ok(Known::DecisionAnswered(x)) => in_repository(state).and_then(|away| away::fold_answered(away, x)),
        Ok(Known::AwaySweepStarted(x)) => in_repository(state).and_then(|away| away::fold_sweep_started(away, x)),
        Ok(Known::AwaySweepAnswered(x)) => in_repository(state).and_then(|away| away::fold_sweep_answered(away, x, event.time)),
        Ok(Known::AwayReturnShown(x)) => in_repository(state).and_then(|away| away::fold_return_shown(away, x)),
        Ok(Known::AwayModeRefused(x)) => in_repository(state).and_then(|away| away::refusals::fold_refused(away, x, event.time)),
        Ok(Known::RunStarted(x)) => {
            let machine = matches!(state.journal.scope, Some(Scope::Machine {}));
            in_ledger(state, true).and_then(|l| ledger::fold_run_started(l, x, event.time, machine))
        }
        Ok(Known::RunFinished(x)) => {
            let machine = matches!(state.journal.scope, Some(Scope::Machine {}));
            in_ledger(state, true).and_then(|l| ledger::fold_finished(l, x, machine))
        }
        Ok(Known::DriverClaimed(x)) => in_ledger(state, false).and_then(|l| ledger::fold_driver_claimed(l, x)),
        Ok(Known::RunHalted(x)) => in_ledger(state, false).and_then(|l| ledger::fold_halted(l, x, true)),
        Ok(Known::RunLifted(x)) => in_ledger(state, false).and_then(|l| ledger::fold_halted(l, x, false)),
        Ok(Known::LaunchIntended(x)) => in_ledger(state, false).and_then(|l| ledger::fold_intended(l, x, event.time)),
        Ok(Known::LaunchStarted(x)) => in_ledger(state, false).and_then(|l| ledger::fold_started(l, x)),
        Ok(Known::LaunchExited(x)) => in_ledger(state, false).and_then(|l| ledger::fold_exited(l, x)),
        Ok(Known::ReceiptCollected(x)) => in_ledger(state, false).and_then(|l| ledger::fold_collected(l, x)),
        Ok(Known::WorkSavedAside(x)) => in_ledger(state, false).and_then(|l| ledger::fold_saved(l, x, event.time)),
        Ok(Known::LaneWorktreeCreated(x)) => in_ledger(state, false).and_then(|l| ledger::fold_worktree_created(l, x)),
        Ok(Known::LaneWorktreeRemoved(x)) => in_ledger(state, false).and_then(|l| ledger::fold_worktree_removed(l, x)),
        Ok(Known::ContextInjected(x)) => in_working_copy(state).and_then(|c| context::fold_injected(c, event.seq, x)),
        Ok(Known::ContextReceipt(kind, x)) => in_working_copy(state).and_then(|c| context::fold_receipt(c, event.seq, kind, x)),
        Ok(Known::AwayNotified(x)) => in_repository(state).and_then(|away| away::notify::fold_notified(away, x)),
        Ok(Known::AwayNotificationRecorded(x)) => {
            in_repository(state).and_then(|away| away::notify::fold_notification(away, x, event.time))
        }
        Ok(Known::Unfolded) if event.kind.starts_with(LOOP_PREFIX) => fold_loop(state, event),
        Ok(Known::Unfolded) => Ok(()),
        Err(DecodeError::UnknownKind(kind)) => {
            return if first_of_kind { FoldNote::UnknownKind(kind) } else { FoldNote::Folded };
        }
        Err(DecodeError::BadData { reason, .. }) => Err(checklist::Rejection { field: None, reason: event::data_reason(&reason) }),
    };
    match folded {
        Ok(()) => FoldNote::Folded,
        Err(mut rejection) => {
            if !state.journal.lost.is_empty() && rejection.field.as_deref() == Some("id") && event.kind.starts_with("checklist.") {
                // Never guessed: the item may have been added in an event a repair lost.
                rejection.reason.push_str(LOST_ADD_NOTE);
            }
            let skipped = Skipped { seq: event.seq, kind: event.kind.clone(), field: rejection.field, reason: rejection.reason };
            let summary = &mut state.journal;
            summary.skipped_total += 1;
            keep_skipped(&mut summary.skipped, skipped.clone());
            FoldNote::Skipped(skipped)
        }
    }
}

/// The view a skipped event is named in: `checklist.json`, `away.json`, or only `state.json`
/// (`store::projection` picks each view's skips by the same prefixes).
fn skip_view(kind: &str) -> u8 {
    if kind.starts_with("checklist.") {
        0
    } else if kind.starts_with("away.") || kind.starts_with("decision.") {
        1
    } else {
        2
    }
}

/// Keeps `skipped` by name, in seq order: per view its first [`MAX_SKIPPED_KEPT`] and its
/// latest [`MAX_SKIPPED_LATEST_KEPT`]; once a view holds both, its oldest latest one goes.
fn keep_skipped(kept: &mut Vec<Skipped>, skipped: Skipped) {
    let view = skip_view(&skipped.kind);
    let (mut same, mut oldest_latest) = (0, None);
    for (i, _) in kept.iter().enumerate().filter(|(_, s)| skip_view(&s.kind) == view) {
        if same == MAX_SKIPPED_KEPT {
            oldest_latest = Some(i);
        }
        same += 1;
    }
    if same >= MAX_SKIPPED_KEPT + MAX_SKIPPED_LATEST_KEPT
        && let Some(i) = oldest_latest
    {
        kept.remove(i);
    }
    kept.push(skipped);
}

/// The away record lives in the repository journal (SPEC §1): an away event anywhere
/// else was not written by abcd and is skipped.
fn in_repository(state: &mut FoldedState) -> Result<&mut away::AwayState, checklist::Rejection> {
    match state.journal.scope {
        Some(Scope::Repository { .. }) => Ok(&mut state.away),
        _ => Err(checklist::Rejection { field: None, reason: "belongs in a repository journal".into() }),
    }
}

/// Context injections are recorded in the working copy journal of the session's checkout.
fn in_working_copy(state: &mut FoldedState) -> Result<&mut context::ContextState, checklist::Rejection> {
    match state.journal.scope {
        Some(Scope::WorkingCopy { .. }) => Ok(&mut state.context),
        _ => Err(checklist::Rejection { field: None, reason: "belongs in a working copy journal".into() }),
    }
}

/// Runs and launches live in a working copy journal; the machine journal only indexes runs
/// (`run.started`, `run.finished`). Anything else is skipped as not abcd's.
fn in_ledger(state: &mut FoldedState, machine_too: bool) -> Result<&mut crate::ledger::LedgerState, checklist::Rejection> {
    match state.journal.scope {
        Some(Scope::WorkingCopy { .. }) => Ok(&mut state.ledger),
        Some(Scope::Machine {}) if machine_too => Ok(&mut state.ledger),
        _ => Err(checklist::Rejection { field: None, reason: "belongs in a working copy journal".into() }),
    }
}

/// The phased loop's kinds all start so (`phased::KINDS`).
const LOOP_PREFIX: &str = "loop.";

/// A loop event folds into the loop records of a working copy journal (a loop is a run of
/// its ledger); anything else is skipped as not abcd's. Every `loop.started` is counted,
/// folded or refused (`LoopRecords::starts_seen`).
fn fold_loop(state: &mut FoldedState, event: &Event) -> Result<(), checklist::Rejection> {
    let folded = match state.journal.scope {
        Some(Scope::WorkingCopy { .. }) => phased::fold_loop_event(&mut state.loops, &event.kind, &event.data, event.time),
        _ => Err(checklist::Rejection { field: None, reason: "belongs in a working copy journal".into() }),
    };
    if folded.is_err() && event.kind == phased::LOOP_STARTED {
        state.loops.starts_refused += 1;
    }
    folded
}

fn fold_judged(state: &mut FoldedState, j: crate::event::SessionJudged, seq: u64) -> Result<(), checklist::Rejection> {
    if !matches!(state.journal.scope, Some(Scope::WorkingCopy { .. })) {
        return Err(checklist::Rejection { field: None, reason: "belongs in a working copy journal".into() });
    }
    if !crate::event::session_id_ok(&j.session) {
        return Err(checklist::Rejection { field: Some("session".into()), reason: "is not a session id ([A-Za-z0-9_-]{1,128})".into() });
    }
    let hex64 =
        |f: &Option<String>| f.as_deref().is_none_or(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
    if !(hex64(&j.owed_fingerprint) && hex64(&j.capped_fingerprint) && hex64(&j.question_hash) && hex64(&j.behind_fingerprint)) {
        return Err(checklist::Rejection { field: None, reason: "a fingerprint is not 64 lowercase hex".into() });
    }
    let sessions = &mut state.sessions;
    if !sessions.contains_key(&j.session) && sessions.len() >= MAX_SESSIONS_KEPT {
        let stalest = sessions.iter().min_by_key(|(_, slot)| slot.judged_seq).map(|(id, _)| id.clone()).expect("full, so not empty");
        sessions.remove(&stalest);
    }
    let slot = SessionSlot {
        state: j.session_state(),
        row: Some(j.row),
        stop_state: Some(j.state),
        judged_seq: seq,
        window_start: j.window_start,
    };
    sessions.insert(j.session, slot);
    Ok(())
}

fn fold_branch(work: &mut WorkState, b: crate::event::BranchCreated) -> Result<(), checklist::Rejection> {
    if !crate::ref_name::branch_name_ok(&b.branch) || crate::secrets::scan(&b.branch).is_some() {
        return Err(checklist::Rejection { field: Some("branch".into()), reason: "is not a branch name abcd records".into() });
    }
    if let Some(old) = &b.renamed_from {
        work.branches.retain(|x| x != old);
    }
    if !work.branches.contains(&b.branch) {
        if work.branches.len() >= MAX_BRANCHES_KEPT {
            work.branches.remove(0);
        }
        work.branches.push(b.branch);
    }
    Ok(())
}

/// A quarantine file name as abcd writes it: `torn-` or `corrupt-`, a seq, a compact UTC
/// time, maybe a `-<n>` suffix, `.bin`.
pub fn quarantine_name_ok(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("torn-").or_else(|| name.strip_prefix("corrupt-")) else { return false };
    name.len() <= 96 && rest.ends_with(".bin") && rest.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
}

/// What a state read from a cache (`state.json`, a checkpoint) may show passes the fold's
/// checks again: the checklist, the away record, the recorded branches, the launch ledger,
/// the loop records and the session slots' ids. Those caches'
/// digests have no key, so a recomputed digest is no proof that abcd wrote them
/// (docs/reliability.md, F3 and F4). Session slots hold ids, enums and numbers: their ids
/// are checked as `fold_judged` checks them.
///
/// A cache must also account for every `loop.started` its journal summary counts: one
/// written by a build that did not fold loops counts them with no record, and would show
/// a journal's loops as absent (docs/decisions.md, "Loop records in the folded state").
/// And it holds at most `CLOSED_ITEMS_KEPT` closed items: one written by a build that did
/// not retire them holds every closed item, which this fold would not (docs/decisions.md,
/// "Closed items leave the working state"). Every `away.mode_refused`, `decision.recorded` and
/// `decision.answered` the journal counts was handed to the away fold (one from a build that
/// knew none of them keeps no refusals, seqs or answers).
pub fn cached_state_passes(state: &FoldedState) -> bool {
    let c = &state.checklist;
    checklist::shown_text_passes(&c.items, &c.updated_by, &state.journal.skipped, c.last_refusal.as_ref()).is_ok()
        && c.closed_held() <= checklist::CLOSED_ITEMS_KEPT
        && state.away.shown_text_passes()
        && state.work.branches.iter().all(|b| crate::ref_name::branch_name_ok(b) && crate::secrets::scan(b).is_none())
        && state.ledger.shown_text_passes()
        && state.sessions.keys().all(|s| crate::event::session_id_ok(s))
        && loops_accounted_for(state)
        && state.loops.shown_text_passes()
        && decisions_accounted_for(state)
        && state.journal.by_kind.get(event::AWAY_MODE_REFUSED).copied().unwrap_or(0) == state.away.mode_refused_seen
}

/// Every `decision.recorded` and `decision.answered` the journal summary counts was handed
/// to the away fold: a cache from a build that kept no seqs or answers has none counted.
fn decisions_accounted_for(state: &FoldedState) -> bool {
    let counted = |kind: &str| state.journal.by_kind.get(kind).copied().unwrap_or(0);
    counted(event::DECISION_RECORDED) + counted(event::DECISION_ANSWERED) == state.away.decision_events_seen
}

/// Every `loop.started` the journal summary counts is a record or a refusal of the loop
/// records.
fn loops_accounted_for(state: &FoldedState) -> bool {
    state.journal.by_kind.get(phased::LOOP_STARTED).copied().unwrap_or(0) == state.loops.starts_seen()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::format::{Actor, NewEvent, encode_line, verify_line};
    use serde_json::json;

    /// A cached state is believed only when all it may show passes the fold's checks: a
    /// secret or a bad name in any shown part fails it, each part on its own.
    #[test]
    fn a_cached_state_is_believed_only_when_what_it_shows_passes_the_folds_checks() {
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let mut good = FoldedState::default();
        good.checklist.items.push(checklist::Item {
            fields: crate::checklist::item::ItemFields::working("ship-it", "Ship it"),
            created_at: jiff::Timestamp::UNIX_EPOCH,
            updated_at: jiff::Timestamp::UNIX_EPOCH,
            added_seq: 1,
            changed_seq: 1,
            promise_fired: None,
            promised_by: None,
        });
        good.work.branches.push("fix/parser".into());
        good.checklist.last_refusal =
            Some(checklist::RefusalRecord { seq: 2, verb: "add".into(), field: "title".into(), kind: "github_token".into() });
        use crate::ledger::{Driver, LaunchIntended, RunStarted, fold_intended, fold_run_started};
        use crate::platform::process::ProcessId;
        let driver = Driver { session: Some("s1".into()), process: ProcessId { pid: 7, start_ticks: 100 } };
        let run = RunStarted { run: "night".into(), working_copy: "/w".into(), lanes: vec!["impl".into()], driver };
        fold_run_started(&mut good.ledger, run, jiff::Timestamp::UNIX_EPOCH, false).unwrap();
        let launch = LaunchIntended {
            run: "night".into(),
            lane: "impl".into(),
            launch: 1,
            role: "implementer".into(),
            command: vec!["claude".into(), "-p".into()],
            receipt: "/w/r.json".into(),
            worktree: "/w".into(),
            launcher: None,
        };
        fold_intended(&mut good.ledger, launch, jiff::Timestamp::UNIX_EPOCH).unwrap();
        good.sessions.insert("s1".into(), SessionSlot::default());
        assert!(cached_state_passes(&good));
        type Forgery<'a> = Box<dyn Fn(&mut FoldedState) + 'a>;
        let forgeries: Vec<Forgery> = vec![
            Box::new(|s| s.checklist.items[0].fields.title = format!("Push with {token}")),
            Box::new(|s| s.checklist.updated_by = Some(token.into())),
            Box::new(|s| {
                s.journal.skipped.push(Skipped { seq: 3, kind: "checklist.item_added".into(), field: None, reason: token.into() })
            }),
            Box::new(|s| s.checklist.last_refusal.as_mut().unwrap().field = "the value was hunter2".into()),
            Box::new(|s| s.work.branches.push(format!("feature/{token}"))),
            Box::new(|s| s.work.branches.push("not a branch name".into())),
            Box::new(|s| {
                let run = s.ledger.runs.remove("night").unwrap();
                s.ledger.runs.insert("../night".into(), run);
            }),
            Box::new(|s| s.ledger.runs.get_mut("night").unwrap().lanes.get_mut("impl").unwrap().launches[0].command.push(token.into())),
            Box::new(|s| s.ledger.runs.get_mut("night").unwrap().working_copy = format!("/w/{token}")),
            Box::new(|s| {
                s.sessions.insert("not a session id".into(), SessionSlot::default());
            }),
        ];
        for (n, forge) in forgeries.iter().enumerate() {
            let mut state = good.clone();
            forge(&mut state);
            assert!(!cached_state_passes(&state), "forgery {n} was believed");
        }
    }

    fn events(kinds: &[(&str, serde_json::Value)]) -> Vec<Event> {
        let mut prev = Hash::genesis_prev();
        let t: jiff::Timestamp = "2026-11-30T00:00:00.000Z".parse().unwrap();
        kinds
            .iter()
            .enumerate()
            .map(|(i, (k, d))| {
                let ev = NewEvent { kind: k.to_string(), actor: Actor { session: None, pid: 1, tool: "abcd/t".into() }, data: d.clone() };
                let (line, hash) = encode_line(i as u64, t, &ev, &prev).unwrap();
                prev = hash;
                verify_line(&line).unwrap()
            })
            .collect()
    }

    /// A change to an item whose add a repair lost is skipped and named, never applied
    /// to a guess; the events around the gap fold as usual.
    #[test]
    fn a_change_after_a_lost_add_is_skipped_and_names_the_loss() {
        let t: jiff::Timestamp = "2026-11-30T00:00:00.000Z".parse().unwrap();
        let actor = Actor { session: None, pid: 1, tool: "abcd/t".into() };
        let item = |id: &str| json!({"item": {"credential": null, "id": id, "next_look": null, "owner_refs": [], "promise": null, "state": "working", "title": id, "waits_on": null}});
        let lost_hash = Hash([9; 32]);
        let plan: Vec<(&str, serde_json::Value)> = vec![
            ("journal.opened", json!({"journal_id": "0123456789abcdef0123456789abcdef", "scope": {"kind": "working_copy", "root": "/w"}})),
            ("checklist.item_added", item("kept-item")),
            (
                "journal.repaired",
                json!({"cause": "corruption", "from_offset": 1, "to_offset": 2, "lines": 1, "quarantine_file": null,
                "quarantine_blake3": null, "anchor_seq": null, "anchor_hash": null, "problem": "p", "lost_from": 2, "lost_to": 3, "next_prev": lost_hash.to_hex()}),
            ),
            ("checklist.item_changed", json!({"id": "lost-item", "changes": {"state": "done"}})),
            ("checklist.item_changed", json!({"id": "kept-item", "changes": {"state": "done"}})),
        ];
        let (mut prev, mut seq) = (Hash::genesis_prev(), 0u64);
        let mut s = FoldedState::default();
        let mut notes = vec![];
        for (kind, data) in plan {
            let (line, _) = encode_line(seq, t, &NewEvent { kind: kind.into(), actor: actor.clone(), data }, &prev).unwrap();
            let event = verify_line(&line).unwrap();
            notes.push(fold_event(&mut s, &event));
            let (chain_seq, chain_hash) = event.chain_position();
            (seq, prev) = (chain_seq + 1, chain_hash);
        }
        assert_eq!(s.journal.lost, [LostSeqs { from: 2, to: 3 }]);
        assert_eq!(s.journal.events, 6, "the next seq is past the lost ones");
        let FoldNote::Skipped(skipped) = &notes[3] else { panic!("{notes:?}") };
        assert_eq!(skipped.seq, 4);
        assert!(skipped.reason.contains("names no item `lost-item`") && skipped.reason.ends_with(LOST_ADD_NOTE), "{skipped}");
        assert_eq!(notes[4], FoldNote::Folded);
        assert_eq!(s.checklist.items.len(), 1, "nothing is made up for the lost item");
        assert_eq!(s.checklist.items[0].fields.state.name(), "done");
    }

    #[test]
    fn unknown_kinds_warn_once_and_are_counted() {
        let evs = events(&[
            ("journal.opened", json!({"journal_id": "0123456789abcdef0123456789abcdef", "scope": {"kind": "machine"}})),
            ("future.thing", json!({})),
            ("future.thing", json!({})),
        ]);
        let mut s = FoldedState::default();
        let notes: Vec<_> = evs.iter().map(|e| fold_event(&mut s, e)).collect();
        assert_eq!(notes[1], FoldNote::UnknownKind("future.thing".into()));
        assert_eq!(notes[2], FoldNote::Folded);
        assert_eq!(s.journal.by_kind["future.thing"], 2);
        assert_eq!(s.journal.events, 3);
        assert_eq!(s.journal.scope, Some(Scope::Machine {}));
    }

    #[test]
    fn bad_data_of_a_known_kind_is_skipped_and_named() {
        let evs = events(&[
            ("journal.opened", json!({"journal_id": "0123456789abcdef0123456789abcdef", "scope": {"kind": "machine"}})),
            ("journal.repaired", json!({"nonsense": true})),
        ]);
        let mut s = FoldedState::default();
        fold_event(&mut s, &evs[0]);
        let FoldNote::Skipped(sk) = fold_event(&mut s, &evs[1]) else { panic!() };
        assert_eq!(sk.seq, 1);
        assert!(s.journal.repairs.is_empty());
    }

    /// A working copy journal of `skips`: each kind given, that many events the fold skips
    /// (their data is not the kind's), in order. The kept seqs of each kind.
    fn kept_skips(skips: &[(&'static str, usize)]) -> (FoldedState, Vec<Vec<u64>>) {
        let mut kinds = vec![wc_genesis()];
        for &(kind, n) in skips {
            kinds.extend((0..n).map(|i| (kind, json!({"n": i}))));
        }
        let mut s = FoldedState::default();
        for e in events(&kinds) {
            fold_event(&mut s, &e);
        }
        let kept = skips.iter().map(|(kind, _)| s.journal.skipped.iter().filter(|k| k.kind == *kind).map(|k| k.seq).collect()).collect();
        (s, kept)
    }

    /// Each view's first skips are named whatever other views skipped before them.
    #[test]
    fn skips_of_other_kinds_never_crowd_out_a_skipped_checklist_event() {
        let (s, kept) = kept_skips(&[("session.judged", 500), ("away.set", 500), ("checklist.item_added", 1)]);
        assert_eq!(s.journal.skipped_total, 1_001);
        assert_eq!(kept[2], [1_001], "the checklist event is named");
        assert_eq!(kept[0].len(), MAX_SKIPPED_KEPT + MAX_SKIPPED_LATEST_KEPT);
        assert_eq!(kept[1].len(), MAX_SKIPPED_KEPT + MAX_SKIPPED_LATEST_KEPT);
        assert_eq!(s.journal.skipped.len(), 2 * (MAX_SKIPPED_KEPT + MAX_SKIPPED_LATEST_KEPT) + 1, "memory stays bounded");
        assert!(s.journal.skipped.windows(2).all(|w| w[0].seq < w[1].seq), "in seq order");
    }

    /// Up to the first and latest bounds every skip of a view is named; one more, and the
    /// oldest of the latest goes, so the first ones and the newest stay named.
    #[test]
    fn a_views_first_and_latest_skips_are_named_on_both_sides_of_the_bound() {
        let both = MAX_SKIPPED_KEPT + MAX_SKIPPED_LATEST_KEPT;
        let seqs = |n: usize| (1..=n as u64).collect::<Vec<_>>();
        let (_, kept) = kept_skips(&[("checklist.item_added", both)]);
        assert_eq!(kept[0], seqs(both), "every one, up to the bound");
        for over in [1, 2, 500] {
            let (s, kept) = kept_skips(&[("checklist.item_added", both + over)]);
            let first = seqs(MAX_SKIPPED_KEPT);
            let latest: Vec<u64> = seqs(both + over).split_off(MAX_SKIPPED_KEPT + over);
            assert_eq!(kept[0], [first, latest].concat(), "{over} past the bound");
            assert_eq!(s.journal.skipped_total, (both + over) as u64);
        }
    }

    fn loop_config() -> phased::Config {
        use crate::phased::agent::{DEFAULT_COMPLETION_SIGNAL, DEFAULT_REVIEW_STOP_SIGNAL, default_advance_prompt, default_review_prompt};
        let agent = |role: &str| phased::AgentSpec {
            template: vec!["agent".into(), role.into(), "{prompt}".into()],
            reader: phased::Reader::Plain,
            worktree: "/w".into(),
        };
        phased::Config {
            implementer: agent("implementer"),
            reviewer: agent("reviewer"),
            checklist: None,
            max_rounds: 3,
            max_turns: phased::DEFAULT_MAX_TURNS,
            completion_signal: DEFAULT_COMPLETION_SIGNAL.into(),
            review_stop_signal: DEFAULT_REVIEW_STOP_SIGNAL.into(),
            advance_prompt: default_advance_prompt(DEFAULT_COMPLETION_SIGNAL, None),
            review_prompt: default_review_prompt(DEFAULT_REVIEW_STOP_SIGNAL),
            feedback_prompt: "Feedback:".into(),
        }
    }

    const WC_OPENED: &str = "journal.opened";

    fn wc_genesis() -> (&'static str, serde_json::Value) {
        (WC_OPENED, json!({"journal_id": "0123456789abcdef0123456789abcdef", "scope": {"kind": "working_copy", "root": "/w"}}))
    }

    fn hex(c: char) -> String {
        std::iter::repeat_n(c, 64).collect()
    }

    /// A loop started, its advance intended and replied, its review intended: the events
    /// `abcd loop start` and the driver append, with a ledger event between them.
    fn loop_events() -> Vec<(&'static str, serde_json::Value)> {
        vec![
            wc_genesis(),
            (phased::LOOP_STARTED, json!(phased::LoopStarted { run: "night".into(), config: loop_config() })),
            ("session.started", json!({"session": "s1", "source": "startup", "working_copy": "/w"})),
            (
                phased::LOOP_TURN_INTENDED,
                json!({"run": "night", "turn": 1, "phase": 1, "round": 0, "kind": "advance", "launch": 1,
                       "prompt_blake3": hex('a'), "prompt_bytes": 10, "reply_file": "/w/implementer-1.reply.json"}),
            ),
            (
                phased::LOOP_TURN_REPLIED,
                json!({"run": "night", "turn": 1, "launch": 1, "reply_blake3": hex('b'), "reply_bytes": 7,
                       "signal": false, "session": "sess-impl"}),
            ),
            (
                phased::LOOP_TURN_INTENDED,
                json!({"run": "night", "turn": 2, "phase": 1, "round": 1, "kind": "review", "launch": 1,
                       "prompt_blake3": hex('c'), "prompt_bytes": 12, "reply_file": "/w/reviewer-1.reply.json"}),
            ),
        ]
    }

    /// The central fold keeps each loop's record, as `phased::fold_loop_event` folds it,
    /// beside the other families; the journal's other events do not disturb it.
    #[test]
    fn the_folded_state_carries_a_loops_record_after_its_events() {
        let evs = events(&loop_events());
        let mut s = FoldedState::default();
        let notes: Vec<_> = evs.iter().map(|e| fold_event(&mut s, e)).collect();
        assert!(notes.iter().all(|n| *n == FoldNote::Folded), "{notes:?}");
        let r = &s.loops.loops["night"];
        assert_eq!(
            (r.run.as_str(), r.state, r.step, r.round, r.turns, r.phases_done),
            ("night", phased::RunState::Running, phased::StepName::Review, 1, 1, 0)
        );
        assert_eq!(r.config, loop_config());
        assert_eq!(r.sessions.implementer.as_deref(), Some("sess-impl"));
        assert_eq!(r.phases.len(), 1);
        assert_eq!((r.phases[0].n, r.phases[0].status, r.phases[0].turns.len()), (1, phased::PhaseStatus::Running, 1));
        assert_eq!(r.phases[0].turns[0].reply_blake3, hex('b'));
        let p = r.pending.as_ref().expect("the review is in flight");
        assert_eq!((p.turn, p.kind, p.launch, p.reply_file.as_str()), (2, phased::TurnKind::Review, 1, "/w/reviewer-1.reply.json"));
        assert_eq!(s.loops.starts_refused, 0);
        assert_eq!(s.work.sessions_started, 1, "the other families fold as before");
        // The same record as the loop's own fold gives from the loop events alone.
        let mut alone = phased::LoopRecords::default();
        for e in evs.iter().filter(|e| e.kind.starts_with("loop.")) {
            phased::fold_loop_event(&mut alone, &e.kind, &e.data, e.time).unwrap();
        }
        assert_eq!(s.loops, alone);
        assert!(cached_state_passes(&s), "a state folded here is believed when read back");
    }

    /// A cache is believed only when every `decision.recorded` and `decision.answered` the
    /// journal counts was handed to the away fold: one written by a build that kept no seqs
    /// or answers for its decisions is folded anew.
    #[test]
    fn a_cache_that_did_not_fold_the_decisions_it_counts_is_not_believed() {
        let repo = (
            "journal.opened",
            json!({"journal_id": "0123456789abcdef0123456789abcdef", "scope": {"kind": "repository", "root_commit": "ab".repeat(20)}}),
        );
        let recorded = json!({"text": "t", "grounds": "g", "undo": "u", "working_copy": "/w", "tradeoff": "speed", "item": "x"});
        let kinds = vec![
            repo,
            (event::DECISION_RECORDED, recorded),
            (event::DECISION_ANSWERED, json!({"seq": 1, "answer": "keep", "working_copy": "/w"})),
        ];
        let mut s = FoldedState::default();
        let notes: Vec<_> = events(&kinds).iter().map(|e| fold_event(&mut s, e)).collect();
        assert!(notes.iter().all(|n| *n == FoldNote::Folded), "{notes:?}");
        assert_eq!(s.away.decision_events_seen, 2);
        assert!(cached_state_passes(&s));
        let mut older = s.clone();
        older.away.decision_events_seen = 0;
        older.away.tradeoffs.clear();
        assert!(!cached_state_passes(&older), "a cache from a build that kept no answers");
        older.away.decision_events_seen = 1;
        assert!(!cached_state_passes(&older), "one event short");
    }

    /// ATTACK (adversary, issue 35): a cache written by a build that knew no
    /// `away.mode_refused` counts the events (its summary counts every kind) but keeps no
    /// refusals; believed, `abcd mode` would show none and the writers would record a
    /// period's limit over again. It is folded anew.
    #[test]
    fn a_cache_that_did_not_fold_the_refusals_it_counts_is_not_believed() {
        let repo = (
            "journal.opened",
            json!({"journal_id": "0123456789abcdef0123456789abcdef", "scope": {"kind": "repository", "root_commit": "ab".repeat(20)}}),
        );
        let refused = json!({"route": "shell_rule", "action": "back", "session": "s1", "working_copy": "/w"});
        let kinds = vec![repo, (event::AWAY_MODE_REFUSED, refused.clone()), (event::AWAY_MODE_REFUSED, refused)];
        let mut s = FoldedState::default();
        let notes: Vec<_> = events(&kinds).iter().map(|e| fold_event(&mut s, e)).collect();
        assert!(notes.iter().all(|n| *n == FoldNote::Folded), "{notes:?}");
        assert_eq!(s.away.refusals.len(), 2);
        assert!(cached_state_passes(&s));
        // The older build's record: what it wrote, read back by this build.
        let mut written = serde_json::to_value(&s.away).unwrap();
        let away = written.as_object_mut().unwrap();
        away.retain(|k, _| k != "refusals" && k != "mode_refused_seen");
        let mut older = s.clone();
        older.away = serde_json::from_value(written).unwrap();
        assert!(older.away.refusals.is_empty());
        assert!(!cached_state_passes(&older), "a cache from a build that kept no refusals");
    }

    /// A loop event the loop's fold refuses is skipped and named like any other refused
    /// event, never with the value; a refused `loop.started` is still accounted for. Loop
    /// events outside a working copy journal are not abcd's.
    #[test]
    fn refused_loop_events_are_skipped_and_named_and_every_start_is_accounted_for() {
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let mut kinds = loop_events();
        kinds.push((phased::LOOP_STARTED, json!(phased::LoopStarted { run: "night".into(), config: loop_config() })));
        kinds.push((phased::LOOP_STARTED, json!({"run": token, "config": "not a configuration"})));
        kinds.push((phased::LOOP_STOPPED, json!({"run": "night", "reason": "manual", "detail": format!("a {token}")})));
        let evs = events(&kinds);
        let mut s = FoldedState::default();
        let notes: Vec<_> = evs.iter().map(|e| fold_event(&mut s, e)).collect();
        let skipped: Vec<&Skipped> = notes.iter().filter_map(|n| if let FoldNote::Skipped(k) = n { Some(k) } else { None }).collect();
        assert_eq!(skipped.iter().map(|k| k.seq).collect::<Vec<_>>(), [6, 7, 8], "{skipped:?}");
        assert_eq!(skipped[0].field.as_deref(), Some("run"), "a second start of a run");
        assert_eq!(skipped[2].field.as_deref(), Some("detail"));
        assert!(skipped.iter().all(|k| !k.reason.contains(token) && !k.reason.contains("not a configuration")), "{skipped:?}");
        assert_eq!((s.loops.loops.len(), s.loops.starts_refused, s.journal.by_kind[phased::LOOP_STARTED]), (1, 2, 3));
        assert_eq!(s.loops.loops["night"].state, phased::RunState::Running, "the refused stop changed nothing");
        assert!(cached_state_passes(&s));

        let mut machine = vec![(WC_OPENED, json!({"journal_id": "0123456789abcdef0123456789abcdef", "scope": {"kind": "machine"}}))];
        machine.extend(loop_events().into_iter().skip(1).filter(|(k, _)| k.starts_with("loop.")));
        let mut s = FoldedState::default();
        let notes: Vec<_> = events(&machine).iter().map(|e| fold_event(&mut s, e)).collect();
        assert!(
            notes[1..].iter().all(|n| matches!(n, FoldNote::Skipped(k) if k.reason == "belongs in a working copy journal")),
            "{notes:?}"
        );
        assert!(s.loops.loops.is_empty());
        assert_eq!(s.loops.starts_refused, 1);
        assert!(cached_state_passes(&s));
    }

    /// A cached state that counts `loop.started` events without their records was written
    /// by a build that did not fold loops (or forged): it is not believed, so the reader
    /// folds the journal again. One whose loop records show what the fold refuses is not
    /// believed either.
    #[test]
    fn a_cache_counting_loop_starts_without_their_records_or_with_refused_text_is_not_believed() {
        let mut good = FoldedState::default();
        for e in events(&loop_events()) {
            fold_event(&mut good, &e);
        }
        good.loops.loops.get_mut("night").unwrap().stop_detail = Some("launch 3 of the implementer ended".into());
        assert!(cached_state_passes(&good));
        let mut older = good.clone();
        older.loops = phased::LoopRecords::default();
        assert!(!cached_state_passes(&older), "a state from before loops were folded is not believed");
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        type Forgery<'a> = Box<dyn Fn(&mut phased::LoopRecord) + 'a>;
        let forgeries: Vec<Forgery> = vec![
            Box::new(|r| r.run = "other".into()),
            Box::new(|r| r.config.implementer.template.push(token.into())),
            Box::new(|r| r.config.reviewer.worktree = format!("/w/{token}")),
            Box::new(|r| r.config.advance_prompt = format!("Say COMPLETED; {token}")),
            Box::new(|r| r.stop_detail = Some(format!("ended {token}"))),
            Box::new(|r| r.stop_detail = Some("two\nlines".into())),
            Box::new(|r| r.sessions.reviewer = Some("not a session id".into())),
            Box::new(|r| r.sessions.implementer = Some(token.into())),
            Box::new(|r| r.last_replies.implementer.as_mut().unwrap().reply_file = format!("/w/{token}")),
            Box::new(|r| r.pending.as_mut().unwrap().reply_file = String::new()),
            Box::new(|r| r.phases[0].turns[0].session = Some("not a session id".into())),
            Box::new(|r| r.phases[0].turns[0].reply_blake3 = "not hex".into()),
            Box::new(|r| r.completion = Some(phased::TurnRecord { reply_file: format!("/w/{token}"), ..r.phases[0].turns[0].clone() })),
        ];
        for (n, forge) in forgeries.iter().enumerate() {
            let mut state = good.clone();
            forge(state.loops.loops.get_mut("night").unwrap());
            assert!(!cached_state_passes(&state), "forgery {n} was believed");
        }
        let mut renamed = good.clone();
        let r = renamed.loops.loops.remove("night").unwrap();
        renamed.loops.loops.insert("../night".into(), phased::LoopRecord { run: "../night".into(), ..r });
        assert!(!cached_state_passes(&renamed), "a run name the fold refuses");
    }

    /// A state without loops is written exactly as before loops were folded (the golden
    /// replays' `state.json` and checkpoints hold none), and reads back the same.
    #[test]
    fn a_state_without_loops_serializes_without_the_field() {
        let mut s = FoldedState::default();
        for e in events(&[wc_genesis()]) {
            fold_event(&mut s, &e);
        }
        let text = serde_json::to_string(&s).unwrap();
        assert!(!text.contains("loops"), "{text}");
        assert_eq!(serde_json::from_str::<FoldedState>(&text).unwrap(), s);
        for e in events(&loop_events()).iter().skip(1) {
            fold_event(&mut s, e);
        }
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("\"loops\":{\"loops\":{\"night\""), "{text}");
        assert!(!text.contains("starts_refused"), "a zero count is left out too: {text}");
        assert_eq!(serde_json::from_str::<FoldedState>(&text).unwrap(), s);
    }

    #[test]
    #[should_panic(expected = "seq order")]
    fn folding_out_of_order_is_a_bug() {
        let evs = events(&[
            ("journal.opened", json!({"journal_id": "0123456789abcdef0123456789abcdef", "scope": {"kind": "machine"}})),
            ("x.y", json!({})),
        ]);
        let mut s = FoldedState::default();
        fold_event(&mut s, &evs[1]);
    }
}
