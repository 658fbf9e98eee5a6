//! When the person must hear (docs/notify.md): the notify command's rules, the summary
//! it is given, the once-per-kind-per-hour rule folded from `away.notified`, and the host
//! notifications kept while away. Pure: plain values in, no clock read.

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use super::{AwayState, Window, check_line, error_type_ok, open_mut, reject};
use crate::checklist::item::Rejection;
pub use crate::event::notify::{AwayNotificationRecorded, AwayNotified, NotifyKind};
use crate::secrets::{Bound, one_line_after_scan};

/// The notify command, at most, in characters: a command line, not a script.
pub const NOTIFY_COMMAND_MAX_CHARS: usize = 1_000;
/// The one-line summary the command gets as its argument, at most, in characters.
pub const NOTIFY_SUMMARY_MAX_CHARS: usize = 200;
/// The command runs at most once per event kind in this span.
pub const NOTIFY_EVERY: SignedDuration = SignedDuration::from_hours(1);
/// How long the command may run before its supervisor kills it (with all it started).
pub const NOTIFY_RUN_BOUND: SignedDuration = SignedDuration::from_secs(30);
/// The API error types that are a rate or usage limit: the ones that notify. Claude Code's
/// StopFailure words first, then Codex CLI's (`codex_error_info` in its rollout, read at
/// SessionEnd: docs/hosts.md).
pub const NOTIFY_ERROR_TYPES: &[&str] =
    &["rate_limit", "billing_error", "usage_limit_exceeded", "rate_limit_exceeded", "session_budget_exceeded"];
/// Notifications sent, kept per window; past it, the oldest goes (the journal keeps all).
pub const NOTIFIED_MAX: usize = 64;
/// Host notifications kept per window; past it, the oldest goes (counted).
pub const NOTIFICATIONS_MAX: usize = 64;
/// A host notification's message line, at most, in characters.
pub const NOTIFICATION_LINE_MAX_CHARS: usize = 200;

/// A notification sent, as the window keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notified {
    pub kind: NotifyKind,
    pub summary: String,
    pub at: Timestamp,
}

/// A host notification seen while away, as the window keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationSeen {
    pub notification_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    pub at: Timestamp,
}

/// The notify command: one line, no secret, at most [`NOTIFY_COMMAND_MAX_CHARS`].
pub fn check_notify_command(command: &str) -> Result<(), Rejection> {
    check_line("notify", command, NOTIFY_COMMAND_MAX_CHARS)
}

pub fn check_notified(n: &AwayNotified) -> Result<(), Rejection> {
    check_line("summary", &n.summary, NOTIFY_SUMMARY_MAX_CHARS)?;
    check_line("working_copy", &n.working_copy, super::WORKING_COPY_MAX_CHARS)
}

/// A host notification type has the shape of an API error type (`[a-z][a-z0-9_]{0,63}`).
pub fn check_notification(n: &AwayNotificationRecorded) -> Result<(), Rejection> {
    if !error_type_ok(&n.notification_type) {
        return Err(reject("notification_type", "is not a notification type ([a-z][a-z0-9_]{0,63})"));
    }
    if let Some(line) = &n.line {
        check_line("line", line, NOTIFICATION_LINE_MAX_CHARS)?;
    }
    check_line("working_copy", &n.working_copy, super::WORKING_COPY_MAX_CHARS)
}

/// Whether the command may run for `kind` at `now`: no notification of that kind within
/// [`NOTIFY_EVERY`] before it. One dated after `now` (a clock set back) does not hold it off.
pub fn notify_due(notified: &[Notified], kind: NotifyKind, now: Timestamp) -> bool {
    !notified.iter().any(|n| n.kind == kind && n.at <= now && now.duration_since(n.at) < NOTIFY_EVERY)
}

/// The window's command, when the person is away at `now` and `kind` is due.
pub fn command_due(state: &AwayState, kind: NotifyKind, now: Timestamp) -> Option<&str> {
    let w = state.holding(now)?;
    let command = w.notify.as_deref()?;
    notify_due(&w.notified, kind, now).then_some(command)
}

/// The one-line summary: `abcd: <what happened> in <repository folder>[: <detail>]`, its
/// whitespace folded, cut to [`NOTIFY_SUMMARY_MAX_CHARS`] once scanned whole; a detail that
/// carries a secret is left out, and a folder name that carries one leaves the place out.
/// The detail is only ever an error type, a count or a branch or item title.
pub fn summary(kind: NotifyKind, place: &str, detail: Option<&str>) -> String {
    let bound = Bound::Chars(NOTIFY_SUMMARY_MAX_CHARS);
    let head = format!("abcd: {} in {place}", kind.words());
    let detail = detail.map(super::fold_whitespace).filter(|d| !d.is_empty() && crate::secrets::scan(d).is_none());
    let text = match detail {
        Some(d) => format!("{head}: {d}"),
        None => head,
    };
    one_line_after_scan(&text, bound)
        .or_else(|_| one_line_after_scan(&format!("abcd: {}", kind.words()), bound))
        .unwrap_or_else(|_| "abcd".to_string())
}

/// A host notification's message as one bounded line; `None` when empty or a secret.
pub fn notification_line(message: &str) -> Option<String> {
    let line = one_line_after_scan(message, Bound::Chars(NOTIFICATION_LINE_MAX_CHARS)).ok()?;
    check_line("line", &line, NOTIFICATION_LINE_MAX_CHARS).ok().map(|()| line)
}

/// `away.notified`: kept in the open window (the newest [`NOTIFIED_MAX`]), at the time its
/// data names.
pub fn fold_notified(state: &mut AwayState, n: AwayNotified) -> Result<(), Rejection> {
    check_notified(&n)?;
    let window = open_mut(state, "a notification sent")?;
    if window.notified.len() >= NOTIFIED_MAX {
        window.notified.remove(0);
    }
    window.notified.push(Notified { kind: n.kind, summary: n.summary, at: n.at });
    Ok(())
}

/// `away.notification_recorded`: kept in the open window (the newest [`NOTIFICATIONS_MAX`]).
pub fn fold_notification(state: &mut AwayState, n: AwayNotificationRecorded, at: Timestamp) -> Result<(), Rejection> {
    check_notification(&n)?;
    let window = open_mut(state, "a notification recorded")?;
    if window.notifications.len() >= NOTIFICATIONS_MAX {
        window.notifications.remove(0);
        window.dropped_notifications += 1;
    }
    window.notifications.push(NotificationSeen { notification_type: n.notification_type, line: n.line, at });
    Ok(())
}

/// Whether the window's notify texts pass the fold's checks (a cache read back).
pub fn shown_text_passes(w: &Window) -> bool {
    w.notify.as_deref().is_none_or(|c| check_notify_command(c).is_ok())
        && w.notified.iter().all(|n| check_line("summary", &n.summary, NOTIFY_SUMMARY_MAX_CHARS).is_ok())
        && w.notifications.iter().all(|n| {
            error_type_ok(&n.notification_type)
                && n.line.as_deref().is_none_or(|l| check_line("line", l, NOTIFICATION_LINE_MAX_CHARS).is_ok())
        })
}

#[cfg(test)]
mod tests;
