//! The notify kinds (repository journal): `away.notified`, the person's notify command run
//! once, and `away.notification_recorded`, a host notification seen while away. Their
//! limits, checks and fold live in `away::notify`; docs/notify.md says why.

use serde::{Deserialize, Serialize};

/// What the person was told of: the event kinds the once-per-hour rule counts apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyKind {
    /// The host ended a turn on a rate or usage limit (StopFailure).
    StopFailure,
    /// The host's continuation cap forced a stop while work was owed.
    CapForced,
    /// Every item the session owed waits on a step queued for the person.
    AllBlocked,
    /// abcd's own bound on consecutive Stop blocks (on a host with no cap) ended a stop
    /// while work was owed.
    BoundReached,
}

impl NotifyKind {
    pub fn words(self) -> &'static str {
        match self {
            NotifyKind::StopFailure => "a turn ended on a rate or usage limit",
            NotifyKind::CapForced => "the host's cap forced a stop with work owed",
            NotifyKind::AllBlocked => "every owed item waits on a queued step",
            NotifyKind::BoundReached => "abcd's bound on consecutive stop blocks ended a stop with work owed",
        }
    }
}

/// `data` of `away.notified`: the notify command was started for `kind` at `at` (abcd's
/// clock, which the once-per-hour rule reads; a line's own time is never read by a rule),
/// with `summary` as its argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwayNotified {
    pub kind: NotifyKind,
    pub at: jiff::Timestamp,
    pub summary: String,
    pub working_copy: String,
}

/// `data` of `away.notification_recorded`: the host's Notification hook fired while away.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwayNotificationRecorded {
    /// The host's `notification_type` (`idle_prompt`, `agent_needs_input`, …).
    pub notification_type: String,
    /// The host's message, one bounded line; absent when it was empty or carried a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    pub working_copy: String,
}
