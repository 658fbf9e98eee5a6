//! Context injections and their receipts: every text a hook puts into the model's context
//! carries a marker and is recorded (`context.injected`); later hooks read the host's
//! transcript (`host::transcript`) and record what became of it; one not delivered is sent
//! again, once, by the next prompt hook. Also what a prompt says of the away window after
//! the session was first told of it: only what changed, in one line.

use std::time::Instant;

use serde_json::json;

use crate::away::Window;
use crate::event::context::source_ok;
use crate::event::{self, AwayShown, ContextInjected, ContextReceipt, ReceiptKind};
use crate::fold::context::SessionContext;
use crate::host::transcript::{self, Finding, Unreadable};
use crate::journal::format::{Actor, NewEvent};

/// A text ready for the host, and the event that records it (none outside a session abcd
/// can key by: such a text goes unmarked and unrecorded).
pub struct Injection {
    pub text: String,
    pub marker: Option<String>,
    pub event: Option<NewEvent>,
}

/// What an injection says about itself, besides its text.
pub struct Injecting<'a> {
    pub session: Option<&'a str>,
    pub source: &'a str,
    pub covers_seq: Option<u64>,
    pub away: Option<AwayShown>,
    pub reinjects: Option<String>,
}

/// Marks `text` and makes its record.
pub fn inject(text: &str, how: Injecting<'_>, actor: &Actor) -> Injection {
    let Some(session) = how.session.filter(|s| event::session_id_ok(s)) else {
        return Injection { text: text.to_string(), marker: None, event: None };
    };
    let marker = new_marker(session, text);
    let marked = transcript::marked(text, &marker);
    let source = if source_ok(how.source) { how.source.to_string() } else { "other".to_string() };
    let data = ContextInjected {
        session: session.to_string(),
        source,
        marker: marker.clone(),
        digest: blake3::hash(marked.as_bytes()).to_hex().to_string(),
        covers_seq: how.covers_seq,
        chars: marked.chars().count() as u64,
        away: how.away,
        reinjects: how.reinjects,
    };
    let event = NewEvent { kind: event::CONTEXT_INJECTED.into(), actor: actor.clone(), data: json!(data) };
    Injection { text: marked, marker: Some(marker), event: Some(event) }
}

/// A marker no other injection of the session shares: the session, this process, the
/// instant and the text, hashed.
fn new_marker(session: &str, text: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(session.as_bytes());
    h.update(&std::process::id().to_le_bytes());
    h.update(&crate::clock::wall_now().as_nanosecond().to_le_bytes());
    h.update(text.as_bytes());
    h.finalize().to_hex()[..event::context::MARKER_HEX_LEN].to_string()
}

/// The source word of a session start (`session_start:<host's word>`).
pub fn start_source(host_word: &str) -> String {
    format!("session_start:{host_word}")
}

/// What a window shows a session: a change to any of it is news.
pub fn away_shown(w: &Window) -> AwayShown {
    AwayShown { end: w.end, hold_pushes: w.hold_pushes, queued: w.queue.len() as u64 }
}

/// When a hook reads the transcript: a prompt's hook runs before its request, so an
/// injection it cannot find yet may still be sent; by the turn's end every request is in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    Prompt,
    TurnEnd,
}

/// The receipts the transcript settles for the session's pending injections.
pub fn settle(
    host: crate::host::Host,
    session: &SessionContext,
    transcript_path: Option<&std::path::Path>,
    moment: Moment,
) -> Vec<ContextReceipt> {
    let pending: Vec<&str> = session.pending().map(|i| i.marker.as_str()).collect();
    if pending.is_empty() {
        return Vec::new();
    }
    let tail = transcript::read_tail(transcript_path, Instant::now() + transcript::READ_BUDGET);
    let mut receipts = Vec::new();
    for marker in pending {
        let reason = match &tail {
            Err(Unreadable::Missing) if moment == Moment::Prompt => None,
            Err(Unreadable::Missing) => Some("no_transcript"),
            Err(Unreadable::NotReadable) => Some("unreadable"),
            Err(Unreadable::OverBudget) => Some("over_budget"),
            Ok(tail) => match host.judge_transcript(tail, marker) {
                Finding::Sent => Some("sent"),
                Finding::Cut => Some("cut"),
                Finding::Compacted => Some("compacted"),
                Finding::SentWithout => Some("sent_without"),
                Finding::NotATranscript => Some("unreadable"),
                // At a prompt the host may not have written the start yet: wait for the
                // turn's end, when every request of the turn is written.
                Finding::NotFound | Finding::NotYet if moment == Moment::Prompt => None,
                Finding::NotFound if !tail.whole => Some("out_of_window"),
                Finding::NotFound | Finding::NotYet => Some("not_found"),
            },
        };
        if let Some(reason) = reason {
            receipts.push(ContextReceipt { session: session.session.clone(), marker: marker.to_string(), reason: reason.into() });
        }
    }
    receipts
}

/// The receipt kind a reason belongs to.
pub fn receipt_kind(reason: &str) -> ReceiptKind {
    match reason {
        "sent" => ReceiptKind::Delivered,
        "cut" | "compacted" | "sent_without" => ReceiptKind::NotDelivered,
        _ => ReceiptKind::Unknown,
    }
}

/// The status a reason settles an injection to.
pub fn delivery_of(reason: &str) -> crate::fold::context::Delivery {
    use crate::fold::context::Delivery;
    match receipt_kind(reason) {
        ReceiptKind::Delivered => Delivery::Delivered,
        ReceiptKind::NotDelivered => Delivery::NotDelivered,
        ReceiptKind::Unknown => Delivery::Unknown,
    }
}

pub fn receipt_event(r: &ContextReceipt, actor: &Actor) -> NewEvent {
    NewEvent { kind: receipt_kind(&r.reason).event_kind().into(), actor: actor.clone(), data: json!(r) }
}

/// What a prompt says of the away window to a session last told `before` of it (`None`:
/// told nothing of a window, or outside a session abcd can key by): the short block the
/// first time, one line when something changed, one line when it is over, else nothing.
/// `last` is the record's newest window (lapsed or closed): an ended window is named by the
/// end it ran to, which the person's line names too, not by what the session last saw (a
/// window replaced after the session's last prompt ran to another end).
pub fn away_news(
    before: Option<&AwayShown>,
    now: Option<&Window>,
    last: Option<&Window>,
    show: crate::away::text::Show<'_>,
) -> Option<String> {
    match (before, now) {
        (None, Some(w)) => Some(crate::away::text::away_block(w, show)),
        (Some(b), Some(w)) => {
            let n = away_shown(w);
            if *b == n {
                return None;
            }
            let mut changes = Vec::new();
            if b.end != n.end {
                changes.push(format!("away until {} (was {})", show(n.end), show(b.end)));
            }
            if b.hold_pushes != n.hold_pushes {
                changes.push(if n.hold_pushes {
                    "pushes now wait for the person's return".into()
                } else {
                    "pushes are no longer held".into()
                });
            }
            if b.queued != n.queued {
                changes.push(format!("{} queued for the person (was {})", n.queued, b.queued));
            }
            Some(format!("abcd: the away window changed: {}; the rest of its rules stand (`abcd mode` prints them).", changes.join("; ")))
        }
        (Some(b), None) => Some(format!(
            "abcd: the away window that ran until {} is over: its rules no longer apply; the person is treated as present.",
            show(last.map_or(b.end, |w| w.ended.as_ref().map_or(w.end, |e| e.at.min(w.end))))
        )),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_text_carries_its_token_at_both_ends() {
        let actor = Actor::this_process(Some("s1".into()));
        let how = |session| Injecting { session, source: "user_prompt", covers_seq: None, away: None, reinjects: None };
        let made = inject("the plan", how(Some("s1")), &actor);
        let marker = made.marker.clone().unwrap();
        let token = transcript::token(&marker);
        assert!(made.text.starts_with(&token) && made.text.ends_with(&token), "{}", made.text);
        let data: ContextInjected = serde_json::from_value(made.event.unwrap().data).unwrap();
        assert_eq!(data.chars, made.text.chars().count() as u64);
        assert_eq!(data.digest, blake3::hash(made.text.as_bytes()).to_hex().to_string());
        let other = inject("the plan", how(Some("s1")), &actor);
        assert_ne!(other.marker, made.marker, "each injection has its own marker");
        let outside = inject("the plan", how(Some("not a session id")), &actor);
        assert_eq!((outside.text.as_str(), outside.event.is_none()), ("the plan", true));
    }
}
