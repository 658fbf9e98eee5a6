//! Refused attempts to set or end the away mode (issue 35): every choke point that refuses
//! an agent's attempt (the PreToolUse shell rule, the file-tool rule, the verb under a
//! host's tool mark) records it as `away.mode_refused`, and the record keeps those of the
//! current period for `abcd mode` and `abcd mode back` to show.
//!
//! A period runs from one mode change to the next: from `abcd mode back` (or the first
//! event) to the `abcd mode autonomous` that opens a window, and from there, through any
//! re-set of the open window, to `abcd mode back`. So the refusals of one absence are the
//! ones `mode back` lists on return, and those while present are the ones `abcd mode`
//! shows until the person next leaves.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::{AwayState, WORKING_COPY_MAX_CHARS, check_line, reject};
use crate::checklist::item::Rejection;
pub use crate::event::refusal::{AwayModeRefused, RefusalRoute, RefusedAction};

/// Refused attempts a period records at most; every later one is still refused, and not
/// recorded, so a model that loops on the verb cannot flood the repository journal.
pub const REFUSALS_RECORDED_MAX: usize = 20;
/// How many of the latest refused attempts `abcd mode` and `abcd mode back` list.
pub const REFUSALS_SHOWN: usize = 3;
/// A host's mark, by its variable's name, at most, in bytes.
pub const MARK_MAX_BYTES: usize = 64;

/// One refused attempt as the record keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub at: Timestamp,
    pub route: RefusalRoute,
    pub action: RefusedAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub working_copy: String,
}

impl Refusal {
    fn data(&self) -> AwayModeRefused {
        AwayModeRefused {
            route: self.route,
            action: self.action,
            mark: self.mark.clone(),
            session: self.session.clone(),
            working_copy: self.working_copy.clone(),
        }
    }
}

/// A variable name as a shell writes one: `[A-Z_][A-Z0-9_]*`, at most [`MARK_MAX_BYTES`].
fn mark_ok(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() <= MARK_MAX_BYTES
        && bytes.next().is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The rules of `away.mode_refused`: a plain working copy; a session id abcd keys by and
/// no secret; a mark only and always on the verb's route, a variable's name; the verb
/// refuses only `autonomous` and `back`, the file-tool rule only a write to abcd's files.
pub fn check_refused(r: &AwayModeRefused) -> Result<(), Rejection> {
    check_line("working_copy", &r.working_copy, WORKING_COPY_MAX_CHARS)?;
    if let Some(session) = &r.session
        && (!crate::event::session_id_ok(session) || crate::secrets::scan(session).is_some())
    {
        return Err(reject("session", "is not a session id abcd records"));
    }
    match (&r.mark, r.route) {
        (Some(mark), RefusalRoute::Verb) if mark_ok(mark) => {}
        (Some(_), RefusalRoute::Verb) => return Err(reject("mark", "is not a variable's name ([A-Z_][A-Z0-9_]{0,63})")),
        (None, RefusalRoute::Verb) => return Err(reject("mark", "is missing on the verb's refusal")),
        (Some(_), _) => return Err(reject("mark", "is only recorded on the verb's refusal")),
        (None, _) => {}
    }
    match (r.route, r.action) {
        (RefusalRoute::Verb, RefusedAction::OwnFileWrite | RefusedAction::Unreadable) => {
            Err(reject("action", "is not one the verb refuses (autonomous or back)"))
        }
        (RefusalRoute::FileToolRule, a) if a != RefusedAction::OwnFileWrite => {
            Err(reject("action", "is not one the file-tool rule refuses (own_file_write)"))
        }
        _ => Ok(()),
    }
}

/// Whether the period has room for one more recorded refusal.
pub fn has_room(state: &AwayState) -> bool {
    state.refusals.len() < REFUSALS_RECORDED_MAX
}

/// `away.mode_refused`: kept in the period's list, up to [`REFUSALS_RECORDED_MAX`]; the
/// writers record no more, and the fold refuses one past it, so no journal shows more.
pub fn fold_refused(state: &mut AwayState, r: AwayModeRefused, at: Timestamp) -> Result<(), Rejection> {
    check_refused(&r)?;
    if !has_room(state) {
        return Err(Rejection { field: None, reason: format!("the period already records {REFUSALS_RECORDED_MAX} refused attempts") });
    }
    state.refusals.push(Refusal { at, route: r.route, action: r.action, mark: r.mark, session: r.session, working_copy: r.working_copy });
    Ok(())
}

/// Whether every kept refusal passes the fold's rules (a cache read back is held to them).
pub fn shown_text_passes(state: &AwayState) -> bool {
    state.refusals.len() <= REFUSALS_RECORDED_MAX && state.refusals.iter().all(|r| check_refused(&r.data()).is_ok())
}

fn action_words(action: RefusedAction) -> &'static str {
    match action {
        RefusedAction::Autonomous => "`abcd mode autonomous`",
        RefusedAction::Back => "`abcd mode back`",
        RefusedAction::OwnFileWrite => "a write into abcd's own files",
        RefusedAction::Unreadable => "a command naming `abcd` and `mode` too long or too deeply nested to read",
    }
}

fn route_words(route: RefusalRoute, mark: Option<&str>) -> String {
    match route {
        RefusalRoute::ShellRule => "its shell command refused before it ran".into(),
        RefusalRoute::FileToolRule => "its file tool refused before it ran".into(),
        RefusalRoute::Verb => format!("the verb refused: {} was set", mark.unwrap_or("a host's mark")),
    }
}

/// The period's refused attempts as lines: a count, then the latest [`REFUSALS_SHOWN`],
/// newest first; nothing when there are none.
pub fn lines(refusals: &[Refusal], show: &dyn Fn(Timestamp) -> String) -> Vec<String> {
    let n = refusals.len();
    if n == 0 {
        return Vec::new();
    }
    let mut head =
        format!("{n} refused attempt{} by an agent to set or end the away mode or write abcd's own files", if n == 1 { "" } else { "s" });
    if n >= REFUSALS_RECORDED_MAX {
        head.push_str(&format!(
            " ({REFUSALS_RECORDED_MAX} is the most recorded until the mode next changes: later attempts are refused but not recorded)"
        ));
    }
    head.push_str(if n > REFUSALS_SHOWN { "; the latest:" } else { ":" });
    let mut out = vec![head];
    for r in latest(refusals) {
        let session = r.session.as_deref().map_or("no session named".to_string(), |s| format!("session {s}"));
        out.push(format!(
            "  refused at {}: {} ({session}, {}; in {})",
            show(r.at),
            action_words(r.action),
            route_words(r.route, r.mark.as_deref()),
            r.working_copy
        ));
    }
    out
}

/// The latest [`REFUSALS_SHOWN`] refused attempts, newest first.
pub fn latest(refusals: &[Refusal]) -> impl Iterator<Item = &Refusal> {
    refusals.iter().rev().take(REFUSALS_SHOWN)
}

/// The period's refused attempts for `--json`: the count, the limit, the latest few.
pub fn json(refusals: &[Refusal]) -> serde_json::Value {
    serde_json::json!({"count": refusals.len(), "limit": REFUSALS_RECORDED_MAX, "latest": latest(refusals).collect::<Vec<_>>()})
}

/// The attempt in plain words for `abcd replay`.
pub fn audit_words(r: &AwayModeRefused) -> String {
    format!("refused an agent's attempt: {} ({}; in {})", action_words(r.action), route_words(r.route, r.mark.as_deref()), r.working_copy)
}
