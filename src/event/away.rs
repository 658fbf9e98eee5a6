//! The away family (repository journal): `away.set`, `queued`, `stop_recorded`,
//! `handed_back`, `ended`, `sweep_started`, `sweep_answered`, `return_shown`,
//! `decision.recorded` and `decision.answered`. Their limits and fold live in `away`.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// `data` of `away.set`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwaySet {
    pub set_by: String,
    pub working_copy: String,
    pub start: Timestamp,
    pub end: Timestamp,
    pub hold_pushes: bool,
    /// The person's notify command (`--notify`); absent: none (docs/notify.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<String>,
}

/// `data` of `away.queued`: a step for the person.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwayQueued {
    pub step: String,
    pub working_copy: String,
}

/// Why a stop was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopLabel {
    /// Stopped with work owed (the host's cap overrode abcd's block, or, on a host with no
    /// cap, abcd's own bound ended the run: `RecordedStop::abcd_bound`).
    WorkOwed,
    /// Stopped with nothing owed and no next look.
    NoNextLook,
    /// The host ended the turn on an API error (StopFailure).
    ApiError,
    /// The owed-work check was cut short, so the stop was allowed unjudged.
    CheckIncomplete,
}

impl StopLabel {
    pub fn words(self) -> &'static str {
        match self {
            StopLabel::WorkOwed => "stopped with work owed",
            StopLabel::NoNextLook => "stopped with no next look",
            StopLabel::ApiError => "stopped on an API error",
            StopLabel::CheckIncomplete => "stopped with the owed-work check cut short",
        }
    }
}

/// One recorded stop, without time or count: two equal ones are the same stop.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedStop {
    pub label: StopLabel,
    #[serde(default)]
    pub possibly_forced_by_cap: bool,
    /// The next owed item, in plain words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// The host's API error type (`rate_limit`, …) for [`StopLabel::ApiError`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// abcd's own bound on consecutive Stop blocks ended this stop, after this many, on a
    /// host with no cap of its own (Codex CLI): abcd allowed it. Left out otherwise, so a
    /// stop without it is written byte for byte as before the key existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abcd_bound: Option<u32>,
}

impl RecordedStop {
    /// What ended the run of blocks, when a bound did: words for `abcd mode back` and the
    /// audit that say whose bound it was.
    pub fn bound_words(&self) -> Option<String> {
        match (self.abcd_bound, self.possibly_forced_by_cap) {
            (Some(n), _) => Some(format!("ended by abcd's own bound of {n} consecutive blocks (the host has no cap)")),
            (None, true) => Some("possibly forced by the cap".into()),
            (None, false) => None,
        }
    }
}

/// `data` of `away.stop_recorded`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwayStopRecorded {
    pub stop: RecordedStop,
    pub working_copy: String,
}

/// `data` of `away.handed_back`: an own branch whose queued push handed its item back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwayHandedBack {
    pub branch: String,
    pub head: String,
    pub working_copy: String,
}

/// `data` of `away.ended`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwayEnded {
    pub ended_by: String,
    pub working_copy: String,
}

/// `data` of `decision.recorded`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionRecorded {
    pub text: String,
    pub grounds: String,
    pub undo: String,
    pub working_copy: String,
    /// The trade-off it settles, if it is one (`abcd decide --tradeoff`); left out while none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tradeoff: Option<Tradeoff>,
    /// The checklist item of `working_copy` the trade-off is tied to (`abcd decide --item`),
    /// which `abcd checklist design-done` holds until the person answers it. Left out while
    /// none, so a decision without it is written byte for byte as before the key existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
}

/// `data` of `decision.answered`: the person's answer (`abcd decide --answer <seq>
/// keep|undo`) to the trade-off decision recorded at `seq` of the same repository journal,
/// given from `working_copy`. A later answer to the same seq replaces the earlier one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionAnswered {
    pub seq: u64,
    pub answer: Answer,
    pub working_copy: String,
}

/// The person's answer to a trade-off: keep it, or have it undone (the session's next work).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Keep,
    Undo,
}

impl Answer {
    pub const ALL: [Answer; 2] = [Answer::Keep, Answer::Undo];

    pub fn name(self) -> &'static str {
        match self {
            Answer::Keep => "keep",
            Answer::Undo => "undo",
        }
    }

    pub fn parse(text: &str) -> Option<Answer> {
        Answer::ALL.into_iter().find(|a| a.name() == text)
    }
}

/// The kind of trade-off a decision settles (seed 000: decided overnight, listed first on
/// the person's return).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tradeoff {
    Security,
    Speed,
    Compatibility,
}

impl Tradeoff {
    pub const ALL: [Tradeoff; 3] = [Tradeoff::Security, Tradeoff::Speed, Tradeoff::Compatibility];

    pub fn name(self) -> &'static str {
        match self {
            Tradeoff::Security => "security",
            Tradeoff::Speed => "speed",
            Tradeoff::Compatibility => "compatibility",
        }
    }

    pub fn parse(text: &str) -> Option<Tradeoff> {
        Tradeoff::ALL.into_iter().find(|t| t.name() == text)
    }
}

/// `data` of `away.sweep_started`: setting the away mode asks every working copy's live
/// session, at its next hook, to bring in what could stop it, until `deadline`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwaySweepStarted {
    pub start: Timestamp,
    pub deadline: Timestamp,
    /// Where the mode was set from.
    pub working_copy: String,
}

/// `data` of `away.sweep_answered`: a hook in `working_copy` answered the sweep that began
/// at `sweep_start` (its session is live and was asked to mark its blockers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwaySweepAnswered {
    pub sweep_start: Timestamp,
    pub working_copy: String,
}

/// `data` of `away.return_shown`: the return lists of the window that began at
/// `window_start` were shown on a prompt in `working_copy` (once per working copy).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwayReturnShown {
    pub window_start: Timestamp,
    pub working_copy: String,
}
