//! One plain-words audit line per event, for `abcd replay`. Pure.

use serde::Serialize;

use crate::event::{self, Known};
use crate::journal::format::{Event, format_time};

/// One audit row; the text form is `seq time actor what`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditLine {
    pub seq: u64,
    pub time: String,
    pub actor: String,
    pub kind: String,
    pub what: String,
}

impl std::fmt::Display for AuditLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:>6}  {}  {}  {}", self.seq, self.time, self.actor, self.what)
    }
}

pub fn actor_label(event: &Event) -> String {
    match &event.actor.session {
        Some(s) => format!("session {s} (pid {}, {})", event.actor.pid, event.actor.tool),
        None => format!("pid {} ({})", event.actor.pid, event.actor.tool),
    }
}

pub fn audit_line(event: &Event) -> AuditLine {
    let what = match event::decode(&event.kind, &event.data) {
        Ok(Known::Opened(o)) => format!("opened journal {} for the {}", o.journal_id, o.scope),
        Ok(Known::Repaired(r)) => match r.quarantine_file {
            Some(q) => format!(
                "repaired the journal ({:?}): moved bytes {}..{} ({} lines) to quarantine/{} after: {}",
                r.cause, r.from_offset, r.to_offset, r.lines, q, r.problem
            ),
            None => format!("repaired the journal ({:?}): accepted it as it is after: {}", r.cause, r.problem),
        },
        Ok(Known::Unfolded) => format!("{} (not folded by this build)", event.kind),
        Err(event::DecodeError::UnknownKind(k)) => format!("{k} (unknown kind, kept and skipped)"),
        Err(e) => format!("{} skipped: {e}", event.kind),
    };
    AuditLine { seq: event.seq, time: format_time(event.time), actor: actor_label(event), kind: event.kind.clone(), what }
}
