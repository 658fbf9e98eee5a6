//! The context fold: per host session, what abcd injected and what became of it, and
//! what the session was last told of the away window. Pure; bounded in sessions and in
//! injections per session.

use serde::{Deserialize, Serialize};

use super::checklist::Rejection;
use crate::event::context::{marker_ok, reason_ok, source_ok};
use crate::event::{AwayShown, ContextInjected, ContextReceipt, ReceiptKind};

/// Sessions whose injections are kept; past it, the one heard from least recently goes.
pub const CONTEXT_SESSIONS_KEPT: usize = 64;
/// Injections kept per session, newest; an older one still pending then goes unsettled.
pub const INJECTIONS_KEPT: usize = 4;
/// The most characters an injection can have: the host's cap on one hook's output is
/// 10,000, so anything far past it was not written by abcd.
pub const INJECTED_CHARS_MAX: u64 = 1_000_000;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextState {
    pub sessions: Vec<SessionContext>,
}

impl ContextState {
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    pub fn session(&self, id: &str) -> Option<&SessionContext> {
        self.sessions.iter().find(|s| s.session == id)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionContext {
    pub session: String,
    /// The away window as the session was last told of it; none: told it is present.
    pub away: Option<AwayShown>,
    /// Oldest first, at most [`INJECTIONS_KEPT`].
    pub injections: Vec<Injection>,
    /// The seq of the last context event about this session.
    pub last_seq: u64,
}

impl SessionContext {
    /// Injections whose fate is not known yet, oldest first.
    pub fn pending(&self) -> impl Iterator<Item = &Injection> {
        self.injections.iter().filter(|i| i.status == Delivery::Pending)
    }

    /// The plan to send again, once: the newest injection that carried the plan (a session
    /// start's or a re-injection), when it was not delivered, is not itself a re-injection
    /// and was not sent again yet. `settled_now`: receipts made but not folded yet, by
    /// marker. A newer plan makes an older loss moot; a prompt's one line does not.
    pub fn owed_reinjection<'a>(&'a self, settled_now: &[(&str, Delivery)]) -> Option<&'a Injection> {
        let status = |i: &Injection| settled_now.iter().find(|(m, _)| *m == i.marker).map_or(i.status, |(_, d)| *d);
        let newest_plan = self.injections.iter().rev().find(|i| i.carries_plan())?;
        (status(newest_plan) == Delivery::NotDelivered && newest_plan.reinjects.is_none() && !newest_plan.reinjected).then_some(newest_plan)
    }
}

impl Injection {
    /// Whether the text was the whole plan (what a re-injection sends again).
    pub fn carries_plan(&self) -> bool {
        self.source.starts_with("session_start") || self.source == "reinject"
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Injection {
    pub seq: u64,
    pub marker: String,
    pub source: String,
    pub chars: u64,
    pub status: Delivery,
    /// Why the status is what it is (the receipt's reason); none while pending.
    pub reason: Option<String>,
    /// Sent again after it was not delivered.
    pub reinjected: bool,
    /// The marker this injection sent again, when it is a re-injection.
    pub reinjects: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    Pending,
    Delivered,
    NotDelivered,
    Unknown,
}

const MARKER_RULE: &str = "is not 8 lowercase hex digits";

/// The two fields every context event carries, checked alike.
fn session_and_marker(session: &str, marker: &str) -> Result<(), Rejection> {
    if !crate::event::session_id_ok(session) {
        return Err(reject("session", "is not a session id ([A-Za-z0-9_-]{1,128})"));
    }
    if !marker_ok(marker) {
        return Err(reject("marker", MARKER_RULE));
    }
    Ok(())
}

fn reject(field: &str, reason: &str) -> Rejection {
    Rejection { field: Some(field.into()), reason: reason.into() }
}

pub fn fold_injected(state: &mut ContextState, seq: u64, injected: ContextInjected) -> Result<(), Rejection> {
    session_and_marker(&injected.session, &injected.marker)?;
    if injected.reinjects.as_deref().is_some_and(|m| !marker_ok(m)) {
        return Err(reject("marker", MARKER_RULE));
    }
    if !source_ok(&injected.source) {
        return Err(reject("source", "is not a source abcd writes"));
    }
    if injected.digest.len() != 64 || !injected.digest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(reject("digest", "is not 64 lowercase hex"));
    }
    if injected.chars > INJECTED_CHARS_MAX {
        return Err(reject("chars", "is past the most abcd injects"));
    }
    let session = session_slot(state, &injected.session, seq);
    if session.injections.iter().any(|i| i.marker == injected.marker) {
        return Err(reject("marker", "names an injection already recorded for this session"));
    }
    if let Some(sent_again) = &injected.reinjects
        && let Some(lost) = session.injections.iter_mut().find(|i| &i.marker == sent_again)
    {
        lost.reinjected = true;
    }
    session.away = injected.away;
    session.injections.push(Injection {
        seq,
        marker: injected.marker,
        source: injected.source,
        chars: injected.chars,
        status: Delivery::Pending,
        reason: None,
        reinjected: false,
        reinjects: injected.reinjects,
    });
    if session.injections.len() > INJECTIONS_KEPT {
        session.injections.remove(0);
    }
    Ok(())
}

/// A receipt's own fields, as the fold checks them before looking for its injection.
pub fn receipt_checked(receipt: &ContextReceipt) -> Result<(), Rejection> {
    session_and_marker(&receipt.session, &receipt.marker)?;
    if !reason_ok(&receipt.reason) {
        return Err(reject("reason", "is not one lowercase word"));
    }
    Ok(())
}

pub fn fold_receipt(state: &mut ContextState, seq: u64, kind: ReceiptKind, receipt: ContextReceipt) -> Result<(), Rejection> {
    receipt_checked(&receipt)?;
    let Some(session) = state.sessions.iter_mut().find(|s| s.session == receipt.session) else {
        return Err(reject("session", "names no session with an injection"));
    };
    let Some(injection) = session.injections.iter_mut().find(|i| i.marker == receipt.marker) else {
        return Err(reject("marker", "names no injection kept for this session"));
    };
    if injection.status != Delivery::Pending {
        // A receipt settles an injection once: abcd decides it under the writer lock.
        return Err(reject("marker", "names an injection already settled"));
    }
    injection.status = match kind {
        ReceiptKind::Delivered => Delivery::Delivered,
        ReceiptKind::NotDelivered => Delivery::NotDelivered,
        ReceiptKind::Unknown => Delivery::Unknown,
    };
    injection.reason = Some(receipt.reason);
    session.last_seq = seq;
    Ok(())
}

/// The session's slot, made (dropping the one heard from least recently when full).
fn session_slot<'s>(state: &'s mut ContextState, id: &str, seq: u64) -> &'s mut SessionContext {
    let index = match state.sessions.iter().position(|s| s.session == id) {
        Some(i) => i,
        None => {
            if state.sessions.len() >= CONTEXT_SESSIONS_KEPT {
                let stalest = (0..state.sessions.len()).min_by_key(|&i| state.sessions[i].last_seq).expect("full, so not empty");
                state.sessions.remove(stalest);
            }
            state.sessions.push(SessionContext { session: id.into(), away: None, injections: Vec::new(), last_seq: seq });
            state.sessions.len() - 1
        }
    };
    let slot = &mut state.sessions[index];
    slot.last_seq = seq;
    slot
}

#[cfg(test)]
mod tests {
    use super::*;

    fn injected(session: &str, marker: &str) -> ContextInjected {
        ContextInjected {
            session: session.into(),
            source: "session_start:startup".into(),
            marker: marker.into(),
            digest: "ab".repeat(32),
            covers_seq: Some(3),
            chars: 1_000,
            away: None,
            reinjects: None,
        }
    }

    fn receipt(session: &str, marker: &str, reason: &str) -> ContextReceipt {
        ContextReceipt { session: session.into(), marker: marker.into(), reason: reason.into() }
    }

    fn marker(n: u64) -> String {
        format!("{n:08x}")
    }

    #[test]
    fn an_injection_is_pending_until_one_receipt_settles_it() {
        let mut state = ContextState::default();
        fold_injected(&mut state, 1, injected("s1", &marker(1))).unwrap();
        assert_eq!(state.session("s1").unwrap().pending().count(), 1);
        fold_receipt(&mut state, 2, ReceiptKind::NotDelivered, receipt("s1", &marker(1), "cut")).unwrap();
        let s = state.session("s1").unwrap();
        assert_eq!(s.injections[0].status, Delivery::NotDelivered);
        assert_eq!(s.owed_reinjection(&[]).map(|i| i.marker.as_str()), Some(marker(1).as_str()));
        assert_eq!(s.owed_reinjection(&[(&marker(1), Delivery::Delivered)]), None, "what a receipt just said counts");
        let again = fold_receipt(&mut state, 3, ReceiptKind::Delivered, receipt("s1", &marker(1), "sent"));
        assert!(again.unwrap_err().reason.contains("already settled"));
        assert!(fold_receipt(&mut state, 3, ReceiptKind::Delivered, receipt("s2", &marker(1), "sent")).is_err());
        assert!(fold_receipt(&mut state, 3, ReceiptKind::Delivered, receipt("s1", &marker(9), "sent")).is_err());
    }

    #[test]
    fn a_reinjection_is_owed_once() {
        let mut state = ContextState::default();
        fold_injected(&mut state, 1, injected("s1", &marker(1))).unwrap();
        fold_receipt(&mut state, 2, ReceiptKind::NotDelivered, receipt("s1", &marker(1), "cut")).unwrap();
        let again = ContextInjected { reinjects: Some(marker(1)), source: "reinject".into(), ..injected("s1", &marker(2)) };
        fold_injected(&mut state, 3, again).unwrap();
        fold_receipt(&mut state, 4, ReceiptKind::NotDelivered, receipt("s1", &marker(2), "cut")).unwrap();
        assert_eq!(state.session("s1").unwrap().owed_reinjection(&[]), None, "a re-injection is never sent a third time");
    }

    #[test]
    fn a_newer_plan_makes_an_older_loss_moot() {
        let mut state = ContextState::default();
        fold_injected(&mut state, 1, injected("s1", &marker(1))).unwrap();
        fold_receipt(&mut state, 2, ReceiptKind::NotDelivered, receipt("s1", &marker(1), "compacted")).unwrap();
        let compact = ContextInjected { source: "session_start:compact".into(), ..injected("s1", &marker(2)) };
        fold_injected(&mut state, 3, compact).unwrap();
        assert_eq!(state.session("s1").unwrap().owed_reinjection(&[]), None, "the newer plan is pending");
        let line = ContextInjected { source: "user_prompt".into(), ..injected("s1", &marker(3)) };
        fold_injected(&mut state, 4, line).unwrap();
        let second = marker(2);
        let lost = [(second.as_str(), Delivery::NotDelivered)];
        let owed = state.session("s1").unwrap().owed_reinjection(&lost).map(|i| i.marker.clone());
        assert_eq!(owed, Some(marker(2)), "a prompt's one line is no plan: the lost plan is still owed");
    }

    #[test]
    fn sessions_and_injections_stay_within_their_bounds_on_both_sides() {
        let mut state = ContextState::default();
        for n in 0..INJECTIONS_KEPT as u64 {
            fold_injected(&mut state, n + 1, injected("s", &marker(n))).unwrap();
        }
        assert_eq!(state.session("s").unwrap().injections.len(), INJECTIONS_KEPT);
        fold_injected(&mut state, 99, injected("s", &marker(99))).unwrap();
        let kept: Vec<&str> = state.session("s").unwrap().injections.iter().map(|i| i.marker.as_str()).collect();
        assert_eq!(kept.len(), INJECTIONS_KEPT);
        assert!(!kept.contains(&marker(0).as_str()) && kept.contains(&marker(99).as_str()), "the oldest goes");
        let mut state = ContextState::default();
        for n in 0..CONTEXT_SESSIONS_KEPT as u64 {
            fold_injected(&mut state, n + 1, injected(&format!("s{n}"), &marker(n))).unwrap();
        }
        assert_eq!(state.sessions.len(), CONTEXT_SESSIONS_KEPT);
        fold_injected(&mut state, 1_000, injected("new", &marker(1_000))).unwrap();
        assert_eq!(state.sessions.len(), CONTEXT_SESSIONS_KEPT);
        assert!(state.session("s0").is_none() && state.session("new").is_some(), "the session heard from least recently goes");
    }

    #[test]
    fn malformed_fields_are_refused_by_name() {
        let mut state = ContextState::default();
        let field = |r: Result<(), Rejection>| r.unwrap_err().field.unwrap();
        assert_eq!(field(fold_injected(&mut state, 1, injected("a b", &marker(1)))), "session");
        assert_eq!(field(fold_injected(&mut state, 1, injected("s", "XYZ"))), "marker");
        assert_eq!(
            field(fold_injected(&mut state, 1, ContextInjected { source: "Start Up".into(), ..injected("s", &marker(1)) })),
            "source"
        );
        assert_eq!(field(fold_injected(&mut state, 1, ContextInjected { digest: "ab".into(), ..injected("s", &marker(1)) })), "digest");
        let huge = ContextInjected { chars: INJECTED_CHARS_MAX + 1, ..injected("s", &marker(1)) };
        assert_eq!(field(fold_injected(&mut state, 1, huge)), "chars");
        let at_max = ContextInjected { chars: INJECTED_CHARS_MAX, ..injected("s", &marker(1)) };
        assert!(fold_injected(&mut state, 1, at_max).is_ok());
        assert_eq!(field(fold_injected(&mut state, 2, injected("s", &marker(1)))), "marker", "a marker is recorded once");
        assert_eq!(field(fold_receipt(&mut state, 3, ReceiptKind::Unknown, receipt("s", &marker(1), "Not Found"))), "reason");
    }
}
