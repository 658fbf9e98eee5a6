//! The Stop and StopFailure hooks (SPEC §6): gather the verdict's inputs (the away
//! record, the owed set, the session's folded state, the payload, the clock), call the
//! pure verdict, record `session.judged` and, while away, what the record keeps, and turn
//! the verdict into the host-neutral reply. The reads take no lock; the verdict that is
//! recorded is decided again under the writer lock from the session's state there, so
//! concurrent Stop hooks of one session keep each other's counts. Every fault of abcd's
//! allows the stop.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::away;
use super::outcome::{HookError, HookOutcome};
use crate::away::notify::NotifyKind;
use crate::away::{RecordedStop, StopLabel, error_type_ok};
use crate::command::notify::notify_if_due;
use crate::cron::SessionCron;
use crate::event::{self, Scope, SessionJudged, session_id_ok};
use crate::host::HookReply;
use crate::journal::format::{Actor, NewEvent};
use crate::owed::{self, AwayQuery, OwedQuery};
use crate::store::Store;
use crate::verdict::stop::{self, AwayTerms, SessionState, StopInput, StopKind, Verdict};

/// The host's cap on consecutive Stop blocks, as the host reads it (SPEC §6 "Counts").
pub const BLOCK_CAP_VAR: &str = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP";

/// Names the `gh` program the stop hook runs while away; set empty, no forge is listed
/// (the demo's setting: nothing reaches the network). Unset: `gh` from PATH.
pub const FORGE_PROGRAM_VAR: &str = "ABCD_GH";

/// The Stop payload's fields the verdict reads.
pub struct StopPayload<'a> {
    /// Who bounds consecutive blocks: the host's cap, or abcd's own on a host with none.
    pub bound: crate::host::StopBound,
    /// The host can wake the session later (session crons).
    pub wakes: bool,
    pub session_id: Option<&'a str>,
    pub stop_hook_active: bool,
    pub last_assistant_message: Option<&'a str>,
    pub session_crons: &'a [SessionCron],
    /// The host, whose reader reads its transcript, and the transcript, where the turn's
    /// injections are settled.
    pub host: crate::host::Host,
    pub transcript_path: Option<&'a Path>,
}

/// The cap in force: the host's variable when it is a number, else the default.
pub fn block_cap() -> u32 {
    std::env::var(BLOCK_CAP_VAR).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(stop::DEFAULT_BLOCK_CAP)
}

fn bad_session(id: Option<&str>) -> HookOutcome {
    let what = if id.is_some() { "is not [A-Za-z0-9_-]{1,128}" } else { "is missing" };
    HookOutcome {
        reply: HookReply::default(),
        warning: Some(format!("the payload's session id {what}, so no state can be kept for it; allowing the stop")),
    }
}

/// The Stop hook: the reads, then the verdict decided and recorded under the writer lock.
pub fn stop(
    store: &Store,
    scope: &Scope,
    root: &Path,
    away: &away::AwayOnce<'_>,
    p: &StopPayload<'_>,
    started: Instant,
) -> Result<HookOutcome, HookError> {
    match read(store, root, away, p, started)? {
        StopRead::Answered(outcome) => Ok(outcome),
        StopRead::ToJudge(pending) => pending.finish(store, scope, root),
    }
}

/// A Stop hook's reads, taken without the writer lock (the owed-work check runs git and
/// the forge for seconds): either the answer already, or everything the verdict decides on.
pub enum StopRead {
    /// Answered without a verdict: a session id abcd cannot keep state for, or an owed-work
    /// check cut short.
    Answered(HookOutcome),
    ToJudge(Box<PendingStop>),
}

/// The verdict's inputs as read, and the session's state as the unlocked read found it.
/// [`PendingStop::finish`] judges again from the session's state under the lock before
/// it records, so two Stop hooks of one session each build on the other's verdict.
pub struct PendingStop {
    session: String,
    now: jiff::ZonedDateTime,
    record: std::rc::Rc<away::AwayView>,
    window: Option<crate::away::Window>,
    queued: Vec<String>,
    reading: owed::OwedReading,
    /// The owed set as the verdict reads it: the checklist's part and the world's.
    owed: stop::OwedView,
    /// The own branches the checklist is behind (git only, docs/own-work.md).
    behind: Vec<stop::BehindRef>,
    note: Option<String>,
    warnings: Vec<String>,
    deadline: jiff::Timestamp,
    wake: Option<jiff::Timestamp>,
    stop_hook_active: bool,
    last_assistant_message: Option<String>,
    block_cap: u32,
    /// `block_cap` is abcd's own bound: the host has no cap.
    own_bound: bool,
    /// The host can wake the session later.
    wakes: bool,
    /// The session runs one turn of an `abcd loop` ([`super::loop_turn::is_loop_turn`]).
    loop_turn: bool,
    /// This session's state in the unlocked read.
    before: SessionState,
    /// The unlocked read: the state under the lock when the journal has not moved since.
    read: Option<crate::store::CurrentState>,
    /// The prompt's state read instead of the whole state (the checklist's owed part held):
    /// the verdict is recorded from it.
    kept: Option<crate::store::PromptState>,
    /// The turn's injections the transcript settles, recorded with the verdict in one
    /// append (one sync for the hook).
    receipts: Vec<NewEvent>,
}

/// Everything but the recording: see [`stop`].
pub fn read(store: &Store, root: &Path, away: &away::AwayOnce<'_>, p: &StopPayload<'_>, started: Instant) -> Result<StopRead, HookError> {
    let Some(session) = p.session_id.filter(|id| session_id_ok(id)) else { return Ok(StopRead::Answered(bad_session(p.session_id))) };
    let now = crate::clock::now_zoned().map_err(|e| HookError::Clock(e.to_string()))?;
    let now_ts = now.timestamp();
    let record = away.shared();
    let mut warnings: Vec<String> = record.warning.iter().cloned().collect();
    let window = record.holding(now_ts).cloned();
    let queued = window.as_ref().map(|w| w.queued_steps()).unwrap_or_default();

    // The prompt's state (the items the hooks read) and the checklist's owed part, both
    // written with the plan, stand for the plan while the part holds at this clock; the
    // verdict and the receipts are then recorded from them too
    // (`Store::append_with_prompt_state`). Otherwise the whole state is read, and the
    // append reuses this read.
    let prompt_state = store.prompt_state();
    let summary_was_there = prompt_state.is_some();
    let kept = prompt_state.and_then(|p| p.owed.at(now_ts).map(|part| (p, part)));
    let (current, kept, kept_part) = match kept {
        Some((p, part)) => (None, Some(p), Some(part)),
        // A journal not created yet is an empty one: nothing recorded, nothing owed from it.
        None => match store.current_state() {
            Ok(mut c) => {
                // The summary no longer holds (a look fell due since the plan's write): it is
                // summed up again from this read, so the next stop reads it, not the plan. A
                // cache: a failure to write it changes nothing for this stop.
                if summary_was_there {
                    let _ = store.refresh_view(&mut c);
                }
                (Some(c), None, None)
            }
            Err(crate::journal::JournalError::Missing { .. }) => (None, None, None),
            Err(e) => return Err(e.into()),
        },
    };
    let empty = crate::fold::FoldedState::default();
    let folded = kept.as_ref().map(|p| &p.state).or(current.as_ref().map(|c| &c.state)).unwrap_or(&empty);
    let actor = Actor::this_process(Some(session.to_string()));
    let receipts: Vec<NewEvent> = folded
        .context
        .session(session)
        .map(|known| super::context::settle(p.host, known, p.transcript_path, super::context::Moment::TurnEnd))
        .unwrap_or_default()
        .iter()
        .map(|r| super::context::receipt_event(r, &actor))
        .collect();
    let checklist = &folded.checklist.items;
    let forge_program = std::env::var_os(FORGE_PROGRAM_VAR).map(std::path::PathBuf::from);
    let reading = owed::read_owed(&OwedQuery {
        root,
        checklist,
        created_here: &folded.work.branches,
        away: window.as_ref().map(|w| AwayQuery { hold_pushes: w.hold_pushes, queued: &queued }),
        now: now_ts,
        started,
        gh: forge_program.as_deref(),
        listing_cache: Some(store.journal().paths().dir()),
    });
    // Promises fire from the listing just made (or its cache); what they became is owed,
    // and named first (the verdict's order, docs/decisions.md).
    let (fired, fired_warning) =
        super::promises::fire_due(store, None, root, &actor, now_ts, reading.forge_facts.as_ref(), Some(checklist));
    warnings.extend(fired_warning);
    let checklist_part = match kept_part {
        Some(part) if fired.is_empty() => part,
        // What fired joined the plan, which the summary predates: the part is read from the
        // plan as it is now.
        Some(_) => crate::fold::owed::ChecklistOwed::read_at(&store.current_state()?.state.checklist.items, now_ts),
        // The plan read before the fire, and the items the fire made.
        None => {
            let made = fired.into_iter().map(|f| stop::Owed::Working { id: f.id, title: f.title, added_seq: f.added_seq, promised: true });
            crate::fold::owed::ChecklistOwed::read_at_with(checklist, made.collect(), now_ts)
        }
    };
    let owed = stop::OwedView::compose(&checklist_part.part, &stop::OwedPart::of(&reading.items));
    let note = (!reading.notes.is_empty()).then(|| reading.notes.join("; "));

    if reading.incomplete {
        // A read cut short: the stop is allowed, said, and while away recorded.
        let line = format!(
            "abcd: the owed-work check was cut short ({}); the stop is allowed unjudged.",
            note.as_deref().unwrap_or("out of time")
        );
        if window.is_some() {
            let stop = RecordedStop {
                label: StopLabel::CheckIncomplete,
                possibly_forced_by_cap: false,
                next: None,
                error_type: None,
                abcd_bound: None,
            };
            warnings.extend(record.record_stop(stop, root, Some(session), now_ts));
        }
        warnings.extend(super::record_settled(store, None, current.as_ref(), receipts).0);
        return Ok(StopRead::Answered(outcome(HookReply { system_message: Some(line), ..Default::default() }, warnings)));
    }

    let behind = owed::behind(checklist, folded.checklist.updated_at, &reading.own);
    let before = session_state(folded, session, window.as_ref().map(|w| w.start));
    let deadline = stop::deadline(!owed.is_empty(), checklist_part.looks.iter().copied(), now_ts);
    let wake = stop::qualifying_wake(p.session_crons, &now, deadline);
    Ok(StopRead::ToJudge(Box::new(PendingStop {
        session: session.to_string(),
        now,
        record,
        window,
        queued,
        reading,
        owed,
        behind,
        note,
        warnings,
        deadline,
        wake,
        stop_hook_active: p.stop_hook_active,
        last_assistant_message: p.last_assistant_message.map(String::from),
        block_cap: match p.bound {
            crate::host::StopBound::HostCap => block_cap(),
            crate::host::StopBound::Abcd(n) => n,
        },
        own_bound: matches!(p.bound, crate::host::StopBound::Abcd(_)),
        wakes: p.wakes,
        loop_turn: super::loop_turn::is_loop_turn(root),
        before,
        read: current,
        kept,
        receipts,
    })))
}

/// This session's state in `folded`. The counts and fingerprints belong to one away window:
/// a state judged in another (or while present) starts afresh, so a new window's first
/// owed stop is its first block.
fn session_state(folded: &crate::fold::FoldedState, session: &str, window_start: Option<jiff::Timestamp>) -> SessionState {
    folded
        .sessions
        .get(session)
        .filter(|slot| window_start.is_none() || slot.window_start == window_start)
        .map(|s| s.state.clone())
        .unwrap_or_default()
}

impl PendingStop {
    fn judge(&self, session: &SessionState) -> stop::Judgement {
        stop::judge(&StopInput {
            away: self.window.as_ref().map(|w| AwayTerms { hold_pushes: w.hold_pushes, queued: &self.queued }),
            owed: &self.owed,
            stop_hook_active: self.stop_hook_active,
            last_assistant_message: self.last_assistant_message.as_deref(),
            session,
            now: &self.now,
            deadline: self.deadline,
            qualifying_wake: self.wake,
            block_cap: self.block_cap,
            own_bound: self.own_bound,
            wakes: self.wakes,
            behind: &self.behind,
            loop_turn: self.loop_turn,
        })
    }

    /// Whether a verdict leaves anything to keep: while present with nothing to reset from
    /// an away window there is not, so the person's common path writes nothing.
    fn keeps(&self, before: &SessionState, judgement: &stop::Judgement) -> bool {
        self.window.is_some() || *before != judgement.judged.session_state()
    }

    /// Judges, records `session.judged` (decided again from the session's state under the
    /// writer lock) and, while away, what the away record keeps; the host's reply.
    pub fn finish(mut self, store: &Store, scope: &Scope, root: &Path) -> Result<HookOutcome, HookError> {
        let mut warnings = std::mem::take(&mut self.warnings);
        let window_start = self.window.as_ref().map(|w| w.start);
        let mut judgement = self.judge(&self.before);
        let receipts = std::mem::take(&mut self.receipts);
        let keeps = self.keeps(&self.before, &judgement);
        if keeps || !receipts.is_empty() {
            // Another Stop hook of this session may have recorded its verdict since the
            // read: the state under the lock decides, so neither verdict is lost.
            let decide = |state: &crate::fold::FoldedState| {
                let latest = session_state(state, &self.session, window_start);
                let judgement = self.judge(&latest);
                let judged = SessionJudged::new(self.session.clone(), judgement.judged.clone(), window_start);
                let data = json!(judged);
                let event = NewEvent { kind: event::SESSION_JUDGED.into(), actor: Actor::this_process(Some(self.session.clone())), data };
                // Each injection is settled once: a receipt another hook wrote meanwhile
                // is not written again.
                let mut events: Vec<NewEvent> = receipts.into_iter().filter(|r| super::receipt_still_pending(state, r)).collect();
                events.extend(self.keeps(&latest, &judgement).then_some(event));
                (events, judgement)
            };
            let written = match &self.kept {
                Some(kept) => store.append_with_prompt_state(Some(scope), Some(kept), decide).map(|(_, outcome, after)| (outcome, after)),
                None => store.append_with_read(Some(scope), self.read.as_ref(), decide).map(|w| (w.outcome, w.after.err())),
            };
            match written {
                Ok((outcome, after)) => {
                    judgement = outcome;
                    if let Some(e) = after {
                        warnings.push(format!(
                            "the {} event is saved but the files derived from the journal were not rewritten: {e}",
                            event::SESSION_JUDGED
                        ));
                    }
                }
                Err(e) if keeps => {
                    // The verdict's state is not saved, so the next stop would judge from a
                    // stale count: a fault of abcd's, so the stop is allowed (fail open, loudly).
                    warnings.push(format!("the {} event was not recorded: {e}", event::SESSION_JUDGED));
                    return Ok(outcome(HookReply::default(), warnings));
                }
                // Only the turn's receipts were to be written: the verdict, which keeps
                // nothing, stands as judged (a receipt not saved is settled at a later hook).
                Err(e) => warnings.push(format!("the context record was not saved: {e}")),
            }
        }
        let (session, now_ts) = (self.session.as_str(), self.now.timestamp());
        if self.window.is_some() {
            if let Some(r) = &judgement.record_stop {
                let label = match r.kind {
                    StopKind::WorkOwed => StopLabel::WorkOwed,
                    StopKind::NoNextLook => StopLabel::NoNextLook,
                };
                // A name the record cannot hold (a branch carrying a secret) is left out, so the
                // fold keeps the stop rather than skip it whole.
                let next = r
                    .next
                    .as_ref()
                    .and_then(|n| crate::secrets::cut_after_scan(n, crate::secrets::Bound::Chars(crate::away::STOP_NEXT_MAX_CHARS)).ok())
                    .filter(|n| crate::away::check_line("next", n, crate::away::STOP_NEXT_MAX_CHARS).is_ok());
                let forced = (r.possibly_forced_by_cap || r.abcd_bound.is_some()) && label == StopLabel::WorkOwed;
                let stop = RecordedStop {
                    label,
                    possibly_forced_by_cap: r.possibly_forced_by_cap,
                    next: next.clone(),
                    error_type: None,
                    abcd_bound: r.abcd_bound,
                };
                warnings.extend(self.record.record_stop(stop, root, Some(session), now_ts));
                if forced {
                    let kind = if r.abcd_bound.is_some() { NotifyKind::BoundReached } else { NotifyKind::CapForced };
                    warnings.extend(notify_if_due(&self.record, kind, next.as_deref(), root, Some(session), now_ts));
                }
            }
            for h in &self.reading.handed_back {
                warnings.extend(self.record.record_hand_back(&h.branch, &h.head, root, Some(session), now_ts));
            }
            // Every item this session owed waits on a step queued for the person: nothing
            // moves until they act (docs/notify.md, "blocks every item").
            if self.owed.is_empty() && !self.reading.handed_back.is_empty() {
                let branches: Vec<&str> = self.reading.handed_back.iter().map(|h| h.branch.as_str()).collect();
                let detail = format!("{} handed back: {}", branches.len(), branches.join(", "));
                warnings.extend(notify_if_due(&self.record, NotifyKind::AllBlocked, Some(&detail), root, Some(session), now_ts));
            }
        }

        let reply = match judgement.verdict {
            Verdict::Block { reason } => {
                let reason = match &self.note {
                    Some(n) => format!("{reason} (Note: {n}.)"),
                    None => reason,
                };
                HookReply { block: Some(reason), ..Default::default() }
            }
            Verdict::Allow { system_message, .. } => {
                // An allowed stop needs no note for the model; the person's stderr has it.
                warnings.extend(self.note);
                HookReply { system_message, ..Default::default() }
            }
        };
        Ok(outcome(reply, warnings))
    }
}

/// StopFailure: the host ended the turn on an API error. While away, recorded with the
/// error type (one the host's shape allows, else `unknown`); the host ignores any output.
pub fn stop_failure(root: &Path, away: &away::AwayOnce<'_>, session_id: Option<&str>, error: &str) -> Result<HookOutcome, HookError> {
    let now = crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?;
    let record = away.get();
    let mut warnings: Vec<String> = record.warning.iter().cloned().collect();
    if record.holding(now).is_some() {
        let error_type = if error_type_ok(error) { error.to_string() } else { "unknown".to_string() };
        let stop = RecordedStop {
            label: StopLabel::ApiError,
            possibly_forced_by_cap: false,
            next: None,
            error_type: Some(error_type),
            abcd_bound: None,
        };
        let session = session_id.filter(|id| session_id_ok(id));
        warnings.extend(record.record_stop(stop, root, session, now));
        if crate::away::notify::NOTIFY_ERROR_TYPES.contains(&error) {
            warnings.extend(notify_if_due(record, NotifyKind::StopFailure, Some(error), root, session, now));
        }
    }
    Ok(outcome(HookReply::default(), warnings))
}

fn outcome(reply: HookReply, warnings: Vec<String>) -> HookOutcome {
    HookOutcome { reply, warning: (!warnings.is_empty()).then(|| warnings.join("; ")) }
}
