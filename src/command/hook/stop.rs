//! The Stop and StopFailure hooks (SPEC §6): gather the verdict's inputs (the away
//! record, the owed set, the session's folded state, the payload, the clock), call the
//! pure verdict, record `session.judged` and, while away, what the record keeps, and turn
//! the verdict into the host-neutral reply. Every fault of abcd's allows the stop.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{HookError, HookOutcome, away};
use crate::away::{RecordedStop, StopLabel, error_type_ok};
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
    pub session_id: Option<&'a str>,
    pub stop_hook_active: bool,
    pub last_assistant_message: Option<&'a str>,
    pub session_crons: &'a [SessionCron],
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

pub fn stop(store: &Store, scope: &Scope, root: &Path, p: &StopPayload<'_>, started: Instant) -> Result<HookOutcome, HookError> {
    let Some(session) = p.session_id.filter(|id| session_id_ok(id)) else { return Ok(bad_session(p.session_id)) };
    let now = crate::clock::now_zoned().map_err(|e| HookError::Clock(e.to_string()))?;
    let now_ts = now.timestamp();
    let record = away::read(root);
    let mut warnings: Vec<String> = record.warning.iter().cloned().collect();
    let window = record.holding(now_ts).cloned();
    let queued = window.as_ref().map(|w| w.queued_steps()).unwrap_or_default();

    // A journal not created yet is an empty one: nothing recorded, nothing owed from it.
    let current = match store.current_state() {
        Ok(c) => Some(c),
        Err(crate::journal::JournalError::Missing { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let empty = crate::fold::FoldedState::default();
    let folded = current.as_ref().map_or(&empty, |c| &c.state);
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
    });
    let note = (!reading.notes.is_empty()).then(|| reading.notes.join("; "));

    if reading.incomplete {
        // A read cut short: the stop is allowed, said, and while away recorded.
        let line = format!(
            "abcd: the owed-work check was cut short ({}); the stop is allowed unjudged.",
            note.as_deref().unwrap_or("out of time")
        );
        if window.is_some() {
            let stop = RecordedStop { label: StopLabel::CheckIncomplete, possibly_forced_by_cap: false, next: None, error_type: None };
            warnings.extend(record.record_stop(stop, root, Some(session), now_ts));
        }
        return Ok(outcome(HookReply { system_message: Some(line), ..Default::default() }, warnings));
    }

    // The counts and fingerprints belong to one away window: a state judged in another
    // (or while present) starts afresh, so a new window's first owed stop is its first block.
    let window_start = window.as_ref().map(|w| w.start);
    let before: SessionState = folded
        .sessions
        .get(session)
        .filter(|slot| window_start.is_none() || slot.window_start == window_start)
        .map(|s| s.state.clone())
        .unwrap_or_default();
    let deadline = stop::deadline(!reading.items.is_empty(), reading.waiting_next_looks.iter().copied(), now_ts);
    let wake = stop::qualifying_wake(p.session_crons, &now, deadline);
    let judgement = stop::judge(&StopInput {
        away: window.as_ref().map(|w| AwayTerms { hold_pushes: w.hold_pushes, queued: &queued }),
        owed: &reading.items,
        stop_hook_active: p.stop_hook_active,
        last_assistant_message: p.last_assistant_message,
        session: &before,
        now: &now,
        deadline,
        qualifying_wake: wake,
        block_cap: block_cap(),
    });

    // While present with nothing to reset from an away window, there is nothing to keep:
    // no journal write on the person's common path.
    let judged = SessionJudged::new(session.to_string(), judgement.judged.clone(), window_start);
    if window.is_some() || before != judged.session_state() {
        let event = NewEvent { kind: event::SESSION_JUDGED.into(), actor: Actor::this_process(Some(session.into())), data: json!(judged) };
        if let Some(w) = super::record(store, scope, event) {
            // The verdict's state is not saved, so the next stop would judge from a stale
            // count: a fault of abcd's, so the stop is allowed (fail open, loudly).
            warnings.push(w);
            return Ok(outcome(HookReply::default(), warnings));
        }
    }
    if window.is_some() {
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
                .map(|n| n.chars().take(crate::away::STOP_NEXT_MAX_CHARS).collect::<String>())
                .filter(|n| crate::away::check_line("next", n, crate::away::STOP_NEXT_MAX_CHARS).is_ok());
            let stop = RecordedStop { label, possibly_forced_by_cap: r.possibly_forced_by_cap, next, error_type: None };
            warnings.extend(record.record_stop(stop, root, Some(session), now_ts));
        }
        for h in &reading.handed_back {
            warnings.extend(record.record_hand_back(&h.branch, &h.head, root, Some(session), now_ts));
        }
    }

    let reply = match judgement.verdict {
        Verdict::Block { reason } => {
            let reason = match &note {
                Some(n) => format!("{reason} (Note: {n}.)"),
                None => reason,
            };
            HookReply { block: Some(reason), ..Default::default() }
        }
        Verdict::Allow { system_message, .. } => {
            // An allowed stop needs no note for the model; the person's stderr has it.
            warnings.extend(note);
            HookReply { system_message, ..Default::default() }
        }
    };
    Ok(outcome(reply, warnings))
}

/// StopFailure: the host ended the turn on an API error. While away, recorded with the
/// error type (one the host's shape allows, else `unknown`); the host ignores any output.
pub fn stop_failure(root: &Path, session_id: Option<&str>, error: &str) -> Result<HookOutcome, HookError> {
    let now = crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?;
    let record = away::read(root);
    let mut warnings: Vec<String> = record.warning.iter().cloned().collect();
    if record.holding(now).is_some() {
        let error_type = if error_type_ok(error) { error.to_string() } else { "unknown".to_string() };
        let stop = RecordedStop { label: StopLabel::ApiError, possibly_forced_by_cap: false, next: None, error_type: Some(error_type) };
        let session = session_id.filter(|id| session_id_ok(id));
        warnings.extend(record.record_stop(stop, root, session, now));
    }
    Ok(outcome(HookReply::default(), warnings))
}

fn outcome(reply: HookReply, warnings: Vec<String>) -> HookOutcome {
    HookOutcome { reply, warning: (!warnings.is_empty()).then(|| warnings.join("; ")) }
}
