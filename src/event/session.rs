//! The session family: `session.started`, `compaction.recorded`, `branch.created` and
//! `session.judged`, with the stop verdict's row and state as they are recorded.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// `data` of `session.started`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionStarted {
    pub session: Option<String>,
    /// startup, resume, clear or compact (or a newer host's value).
    pub source: String,
    pub working_copy: String,
}

/// `data` of `compaction.recorded`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionRecorded {
    pub session: Option<String>,
    /// manual or auto.
    pub trigger: String,
}

/// `data` of `branch.created`: a branch this working copy's session created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BranchCreated {
    pub branch: String,
    /// The command form that created it, e.g. `git switch -c`.
    pub command: String,
    /// For a rename: the branch whose record this one carries on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
}

/// `data` of `session.judged`: the stop verdict for one host session, and the state the
/// next verdict reads back (SPEC §6 "Counts").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionJudged {
    pub session: String,
    pub row: Row,
    pub state: StopState,
    #[serde(default)]
    pub next_look: Option<jiff::Timestamp>,
    pub block_count: u32,
    pub wake_count: u32,
    #[serde(default)]
    pub owed_fingerprint: Option<String>,
    #[serde(default)]
    pub capped_fingerprint: Option<String>,
    #[serde(default)]
    pub question_hash: Option<String>,
    /// The start of the away window the verdict was made in (none while present): a new
    /// window starts the session's counts afresh.
    #[serde(default)]
    pub window_start: Option<jiff::Timestamp>,
    /// The set of references the checklist was behind when a stop last said so
    /// (docs/own-work.md); absent while none was said or the checklist caught up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_fingerprint: Option<String>,
}

/// The state a session is in after a verdict (`session.judged`'s `state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopState {
    /// The stop is blocked: the session goes on.
    Working,
    /// The stop is allowed with a qualifying wake: the session looks again at its next look.
    Waiting,
    /// The turn ends with no wake: while present, or by the host's cap overriding a block.
    Stopped,
}

/// Which row decided (`session.judged`'s `row`). Rows 1–7 are SPEC §6's away rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Row {
    /// 1: a question not yet blocked for this message.
    Question,
    /// 2: owed, and the owed set changed or no owed set was seen yet this session.
    OwedChanged,
    /// 3: owed, unchanged, a qualifying wake, and no capped item or wakes to spare.
    WakeReleased,
    /// 4: owed, unchanged, a qualifying wake, a capped item, and the wakes spent.
    WakesSpent,
    /// 5: owed, unchanged, no qualifying wake.
    NoWake,
    /// 6: nothing owed, a qualifying wake.
    NothingOwedWake,
    /// 7: nothing owed, no qualifying wake.
    NothingOwedNoWake,
    /// Present, work owed: allowed with one line for the person.
    PresentOwed,
    /// Present, nothing owed: allowed silently.
    PresentNothingOwed,
    /// Away: a stop rows 3 or 6 would allow, blocked once for a checklist behind the
    /// session's own work (docs/own-work.md).
    Behind,
    /// Away: a loop turn's agent ends its turn with its reply, allowed whatever is owed
    /// (a question is still rerouted first), because the loop's driver takes the next step
    /// (docs/loop.md).
    LoopTurn,
}

impl Row {
    /// The row's number in SPEC §6's away table; `None` for the present rows.
    pub fn number(self) -> Option<u8> {
        match self {
            Row::Question => Some(1),
            Row::OwedChanged => Some(2),
            Row::WakeReleased => Some(3),
            Row::WakesSpent => Some(4),
            Row::NoWake => Some(5),
            Row::NothingOwedWake => Some(6),
            Row::NothingOwedNoWake => Some(7),
            Row::PresentOwed | Row::PresentNothingOwed | Row::Behind | Row::LoopTurn => None,
        }
    }
}

/// What the verdict carries from one stop to the next, folded from the last
/// `session.judged` event (the default before any).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionState {
    /// Consecutive blocks as abcd counts them (0 after an allow).
    #[serde(default)]
    pub block_count: u32,
    /// Qualifying wakes that released an unchanged set holding a capped item.
    #[serde(default)]
    pub wake_count: u32,
    /// The owed set last judged by rows 2–7; `None` before any such verdict this window.
    #[serde(default)]
    pub owed_fingerprint: Option<String>,
    /// The capped items of that set, which alone reset the wake count.
    #[serde(default)]
    pub capped_fingerprint: Option<String>,
    /// The last assistant message last blocked for its question ([`message_hash`]).
    #[serde(default)]
    pub question_hash: Option<String>,
    /// When the session looks again: the qualifying wake's next match, while waiting.
    #[serde(default)]
    pub next_look: Option<Timestamp>,
    /// The behind set a stop last named ([`crate::verdict::stop::behind_fingerprint`]),
    /// so the same set blocks once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_fingerprint: Option<String>,
}
