//! The phased loop family (SPEC §8): `loop.*`, with the configuration and turn records
//! they carry. The step machine that folds them lives in `phased`.

use serde::{Deserialize, Serialize};

pub const LOOP_STARTED: &str = "loop.started";
pub const LOOP_TURN_INTENDED: &str = "loop.turn_intended";
pub const LOOP_TURN_REPLIED: &str = "loop.turn_replied";
pub const LOOP_TURN_ABANDONED: &str = "loop.turn_abandoned";
pub const LOOP_TURN_LOST: &str = "loop.turn_lost";
pub const LOOP_PAUSED: &str = "loop.paused";
pub const LOOP_RESUMED: &str = "loop.resumed";
pub const LOOP_RETRIED: &str = "loop.retried";
pub const LOOP_SKIPPED: &str = "loop.skipped";
pub const LOOP_STOPPED: &str = "loop.stopped";

/// Every `loop.*` kind.
pub const KINDS: &[&str] = &[
    LOOP_STARTED,
    LOOP_TURN_INTENDED,
    LOOP_TURN_REPLIED,
    LOOP_TURN_ABANDONED,
    LOOP_TURN_LOST,
    LOOP_PAUSED,
    LOOP_RESUMED,
    LOOP_RETRIED,
    LOOP_SKIPPED,
    LOOP_STOPPED,
];

/// The ledger lanes of a loop's run: one per agent.
pub const IMPLEMENTER_LANE: &str = "implementer";
pub const REVIEWER_LANE: &str = "reviewer";

/// How an agent's reply is read from what it printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reader {
    /// Standard output is the reply; no session is kept.
    Plain,
    /// `claude -p … --output-format json`: the reply is `result`, the session `session_id`.
    ClaudeJson,
}

impl Reader {
    pub fn name(self) -> &'static str {
        match self {
            Reader::Plain => "plain",
            Reader::ClaudeJson => "claude-json",
        }
    }

    pub fn from_name(name: &str) -> Option<Reader> {
        match name {
            "plain" => Some(Reader::Plain),
            "claude-json" => Some(Reader::ClaudeJson),
            _ => None,
        }
    }
}

/// Who takes a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Implementer,
    Reviewer,
}

impl Role {
    pub fn lane(self) -> &'static str {
        match self {
            Role::Implementer => IMPLEMENTER_LANE,
            Role::Reviewer => REVIEWER_LANE,
        }
    }
}

/// What a turn is: the advance prompt, a review round, or feedback relayed to the
/// implementer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnKind {
    Advance,
    Review,
    Feedback,
}

impl TurnKind {
    pub fn role(self) -> Role {
        match self {
            TurnKind::Advance | TurnKind::Feedback => Role::Implementer,
            TurnKind::Review => Role::Reviewer,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TurnKind::Advance => "advance",
            TurnKind::Review => "review",
            TurnKind::Feedback => "feedback",
        }
    }
}

/// An agent: its command template, how its reply is read, where it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub template: Vec<String>,
    pub reader: Reader,
    pub worktree: String,
}

/// Turns a loop runs on one word of a person (its start, a resume, a retry or a skip)
/// before it pauses `max_turns`, by default; also what a `loop.started` written before the
/// bound existed means.
pub const DEFAULT_MAX_TURNS: u64 = 200;

fn default_max_turns() -> u64 {
    DEFAULT_MAX_TURNS
}

/// A loop's configuration, fixed for its whole life (seed 001 §4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub implementer: AgentSpec,
    pub reviewer: AgentSpec,
    pub checklist: Option<String>,
    pub max_rounds: u32,
    /// Turns replied on one word of a person before the loop pauses `max_turns`: the bound
    /// on a loop whose implementer never says the completion signal.
    #[serde(default = "default_max_turns")]
    pub max_turns: u64,
    pub completion_signal: String,
    pub review_stop_signal: String,
    pub advance_prompt: String,
    pub review_prompt: String,
    pub feedback_prompt: String,
}

impl Config {
    pub fn agent(&self, role: Role) -> &AgentSpec {
        match role {
            Role::Implementer => &self.implementer,
            Role::Reviewer => &self.reviewer,
        }
    }
}

/// `data` of `loop.started` (same batch as the ledger's `run.started`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopStarted {
    pub run: String,
    pub config: Config,
}

/// `data` of `loop.turn_intended` (same batch as the ledger's `launch.intended`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnIntended {
    pub run: String,
    /// 1, 2, … over the run: the turns replied so far plus one.
    pub turn: u64,
    pub phase: u64,
    /// The review round (0 for an advance turn).
    pub round: u32,
    pub kind: TurnKind,
    /// The ledger launch of the turn's lane.
    pub launch: u64,
    /// BLAKE3 of the prompt sent, and its length.
    pub prompt_blake3: String,
    pub prompt_bytes: u64,
    /// The receipt: where the turn's reply file will be.
    pub reply_file: String,
}

/// `data` of `loop.turn_replied` (same batch as the ledger's `receipt.collected`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnReplied {
    pub run: String,
    pub turn: u64,
    pub launch: u64,
    pub reply_blake3: String,
    pub reply_bytes: u64,
    /// The turn's signal was given: the completion signal alone (advance), the stop signal
    /// on a line (review); always false for feedback.
    pub signal: bool,
    /// The session id the agent's reply named (claude-json), kept for its next turn.
    pub session: Option<String>,
}

/// `data` of `loop.turn_abandoned`: a turn whose launch never started (no watcher took it;
/// recorded with the ledger's `launch.exited` `not_started` under the lock, which no
/// watcher starts after), so the same step is launched again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnAbandoned {
    pub run: String,
    pub turn: u64,
    pub launch: u64,
}

/// How a lost turn's agent was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LostHow {
    /// Its launch ended by a signal (the ledger's `launch.exited` status `signal`).
    Signal,
    /// Its launch's process is gone and no exit was recorded for it (its watcher was
    /// killed with it, or the machine went down).
    Gone,
}

/// `data` of `loop.turn_lost`: a turn whose agent was lost (its launch started, then
/// ended by a signal or went with its exit unrecorded, and left no reply), so the same
/// step runs again as a new launch; at most `phased::LOST_TURN_RERUNS` times for one turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnLost {
    pub run: String,
    pub turn: u64,
    pub launch: u64,
    pub how: LostHow,
    /// The signal that ended the launch, with `how` `signal`; null with `gone`.
    pub signal: Option<i32>,
}

/// `data` of `loop.resumed`, `loop.retried` and `loop.skipped`, and of a `loop.paused` by
/// hand.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopNamed {
    pub run: String,
}

/// `data` of `loop.paused`: a person's pause (no reason, or `manual`) or the driver's at
/// the loop's `max_turns` bound.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopPaused {
    pub run: String,
    /// Absent for a pause by hand, so such a pause reads as it always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PauseReason>,
}

/// Why a run stopped (seed 001 §3; `session_trashed` and `server_restarted` have no
/// counterpart when agents are processes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The implementer answered the advance prompt with the completion signal alone.
    Completed,
    /// A person stopped it.
    Manual,
    /// An agent's turn failed: it exited non-zero, could not start, or left no readable reply.
    PeerError,
}

/// Why a run is paused (seed 001 §3; `pair_stopped` and `review_start_failed` have no
/// counterpart without a pair primitive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseReason {
    Manual,
    PhaseNotConverged,
    /// `max_turns` turns were replied since the loop last ran on a person's word.
    MaxTurns,
}

/// `data` of `loop.stopped` (manual or peer_error; completion is the reply itself).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopStopped {
    pub run: String,
    pub reason: StopReason,
    pub detail: Option<String>,
}
