//! Every wire type: the event kinds of format v1 and the typed `data` of each, split by
//! family. The journal carries `data` as JSON; these types are how the folds read it. A
//! kind not in `V1_KINDS` was written by a newer abcd: verified, kept, and skipped by folds.
//! This is a leaf: it imports only the journal's own genesis kinds and leaf utilities, and
//! every domain module takes its event types from here.

pub mod away;
pub mod checklist;
pub mod context;
pub mod ids;
pub mod loops;
pub mod mirror;
pub mod notify;
pub mod refusal;
pub mod run;
pub mod session;

use serde::{Deserialize, Serialize};

pub use self::away::{Answer, AwayReturnShown, AwaySweepAnswered, AwaySweepStarted, DecisionAnswered, Tradeoff};
pub use self::away::{AwayEnded, AwayHandedBack, AwayQueued, AwaySet, AwayStopRecorded, DecisionRecorded};
pub use self::checklist::{ItemAdded, ItemChanged, PromiseFired, WriteRefused};
pub use self::context::{AwayShown, ContextInjected, ContextReceipt};
pub use self::ids::{SESSION_ID_MAX_BYTES, session_id_ok};
pub use self::notify::{AwayNotificationRecorded, AwayNotified, NotifyKind};
pub use self::refusal::{AWAY_MODE_REFUSED, AwayModeRefused, RefusalRoute, RefusedAction};
pub use self::session::{BranchCreated, CompactionRecorded, SessionJudged, SessionStarted};
use crate::journal::genesis;
pub use crate::journal::genesis::{
    JOURNAL_MOVED, JOURNAL_OPENED, JOURNAL_REPAIRED, JournalMoved, JournalOpened, JournalRepaired, RepairCause, Scope, new_journal_id,
};

pub const CHECKLIST_ITEM_ADDED: &str = "checklist.item_added";
pub const CHECKLIST_ITEM_CHANGED: &str = "checklist.item_changed";
pub const CHECKLIST_WRITE_REFUSED: &str = "checklist.write_refused";
pub const SESSION_STARTED: &str = "session.started";
pub const COMPACTION_RECORDED: &str = "compaction.recorded";
pub const BRANCH_CREATED: &str = "branch.created";
pub const SESSION_JUDGED: &str = "session.judged";
pub const AWAY_SET: &str = "away.set";
pub const AWAY_QUEUED: &str = "away.queued";
pub const AWAY_STOP_RECORDED: &str = "away.stop_recorded";
pub const AWAY_HANDED_BACK: &str = "away.handed_back";
pub const AWAY_ENDED: &str = "away.ended";
pub const DECISION_RECORDED: &str = "decision.recorded";
pub const RUN_STARTED: &str = "run.started";
pub const RUN_DRIVER_CLAIMED: &str = "run.driver_claimed";
pub const RUN_HALTED: &str = "run.halted";
pub const RUN_LIFTED: &str = "run.lifted";
pub const RUN_FINISHED: &str = "run.finished";
pub const LAUNCH_INTENDED: &str = "launch.intended";
pub const LAUNCH_STARTED: &str = "launch.started";
pub const LAUNCH_EXITED: &str = "launch.exited";
pub const RECEIPT_COLLECTED: &str = "receipt.collected";
pub const WORK_SAVED_ASIDE: &str = "work.saved_aside";
pub const LANE_WORKTREE_CREATED: &str = "lane.worktree_created";
pub const LANE_WORKTREE_REMOVED: &str = "lane.worktree_removed";
pub const CONTEXT_INJECTED: &str = "context.injected";
pub const CONTEXT_DELIVERED: &str = "context.delivered";
pub const CONTEXT_NOT_DELIVERED: &str = "context.not_delivered";
pub const CONTEXT_UNKNOWN: &str = "context.unknown";
pub const AWAY_SWEEP_STARTED: &str = "away.sweep_started";
pub const AWAY_SWEEP_ANSWERED: &str = "away.sweep_answered";
pub const AWAY_RETURN_SHOWN: &str = "away.return_shown";
pub const AWAY_NOTIFIED: &str = "away.notified";
pub const AWAY_NOTIFICATION_RECORDED: &str = "away.notification_recorded";
pub const MIRROR_LINE_REDACTED: &str = "mirror.line_redacted";
pub const CHECKLIST_PROMISE_FIRED: &str = "checklist.promise_fired";
pub const DECISION_ANSWERED: &str = "decision.answered";

/// Every kind format v1 defines (SPEC §2), whether or not this build folds it yet.
pub const V1_KINDS: &[&str] = &[
    JOURNAL_OPENED,
    JOURNAL_REPAIRED,
    CHECKLIST_ITEM_ADDED,
    CHECKLIST_ITEM_CHANGED,
    CHECKLIST_WRITE_REFUSED,
    SESSION_STARTED,
    SESSION_JUDGED,
    COMPACTION_RECORDED,
    BRANCH_CREATED,
    AWAY_SET,
    AWAY_QUEUED,
    AWAY_STOP_RECORDED,
    AWAY_HANDED_BACK,
    AWAY_ENDED,
    DECISION_RECORDED,
    RUN_STARTED,
    RUN_DRIVER_CLAIMED,
    RUN_HALTED,
    RUN_LIFTED,
    RUN_FINISHED,
    LAUNCH_INTENDED,
    LAUNCH_STARTED,
    LAUNCH_EXITED,
    RECEIPT_COLLECTED,
    WORK_SAVED_ASIDE,
    LANE_WORKTREE_CREATED,
    LANE_WORKTREE_REMOVED,
    CONTEXT_INJECTED,
    CONTEXT_DELIVERED,
    CONTEXT_NOT_DELIVERED,
    CONTEXT_UNKNOWN,
    // The phased loop's kinds (SPEC §8): typed in `loops`, folded by `phased`.
    loops::LOOP_STARTED,
    loops::LOOP_TURN_INTENDED,
    loops::LOOP_TURN_REPLIED,
    loops::LOOP_TURN_ABANDONED,
    loops::LOOP_TURN_LOST,
    loops::LOOP_PAUSED,
    loops::LOOP_RESUMED,
    loops::LOOP_RETRIED,
    loops::LOOP_SKIPPED,
    loops::LOOP_STOPPED,
    // The blocker sweep and the return lists (issue 23, docs/sweep.md).
    AWAY_SWEEP_STARTED,
    AWAY_SWEEP_ANSWERED,
    AWAY_RETURN_SHOWN,
    AWAY_NOTIFIED,
    AWAY_NOTIFICATION_RECORDED,
    CHECKLIST_PROMISE_FIRED,
    // A working copy's journal accepted at the root it was moved to (issue 31).
    JOURNAL_MOVED,
    // A person's decision to mirror a flagged line as a redaction record (issue 34,
    // MIRROR.md §11): read by the push, not folded.
    MIRROR_LINE_REDACTED,
    // An agent's refused attempt to set or end the away mode (issue 35).
    AWAY_MODE_REFUSED,
    // The person's answer to a trade-off decision (issue 35, design-done).
    DECISION_ANSWERED,
];

pub fn is_v1_kind(kind: &str) -> bool {
    V1_KINDS.contains(&kind)
}

/// The typed view of an event this build understands.
#[derive(Clone, Debug, PartialEq)]
pub enum Known {
    Opened(JournalOpened),
    Repaired(JournalRepaired),
    Moved(JournalMoved),
    ItemAdded(ItemAdded),
    ItemChanged(ItemChanged),
    WriteRefused(WriteRefused),
    SessionStarted(SessionStarted),
    CompactionRecorded(CompactionRecorded),
    BranchCreated(BranchCreated),
    SessionJudged(SessionJudged),
    AwaySet(AwaySet),
    AwayQueued(AwayQueued),
    AwayStopRecorded(AwayStopRecorded),
    AwayHandedBack(AwayHandedBack),
    AwayEnded(AwayEnded),
    DecisionRecorded(DecisionRecorded),
    DecisionAnswered(DecisionAnswered),
    RunStarted(run::RunStarted),
    DriverClaimed(run::DriverClaimed),
    RunHalted(run::RunNamed),
    RunLifted(run::RunNamed),
    RunFinished(run::RunNamed),
    LaunchIntended(run::LaunchIntended),
    LaunchStarted(run::LaunchStarted),
    LaunchExited(run::LaunchExited),
    ReceiptCollected(run::ReceiptCollected),
    WorkSavedAside(run::WorkSavedAside),
    LaneWorktreeCreated(run::LaneWorktreeCreated),
    LaneWorktreeRemoved(run::LaneWorktreeRemoved),
    ContextInjected(ContextInjected),
    /// `context.delivered`, `context.not_delivered` or `context.unknown`, with which.
    ContextReceipt(ReceiptKind, ContextReceipt),
    AwaySweepStarted(AwaySweepStarted),
    AwaySweepAnswered(AwaySweepAnswered),
    AwayReturnShown(AwayReturnShown),
    AwayNotified(AwayNotified),
    AwayNotificationRecorded(AwayNotificationRecorded),
    PromiseFired(PromiseFired),
    AwayModeRefused(AwayModeRefused),
    /// A v1 kind that no fold of this build reads yet.
    Unfolded,
}

/// Which receipt a `context.*` receipt event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptKind {
    Delivered,
    NotDelivered,
    Unknown,
}

impl ReceiptKind {
    pub fn event_kind(self) -> &'static str {
        match self {
            ReceiptKind::Delivered => CONTEXT_DELIVERED,
            ReceiptKind::NotDelivered => CONTEXT_NOT_DELIVERED,
            ReceiptKind::Unknown => CONTEXT_UNKNOWN,
        }
    }
}

/// Why an event's data cannot be read as its kind says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("kind `{0}` is not a v1 kind (written by a newer abcd?)")]
    UnknownKind(String),
    #[error("data of `{kind}` does not match its schema: {reason}")]
    BadData { kind: String, reason: String },
}

/// A fold's reason for refusing data that does not match its kind: serde's message names
/// the offending field but may quote a value, so only the part before any quoted text is
/// kept, and no value from the file reaches a projection.
pub fn data_reason(serde_message: &str) -> String {
    let cut = serde_message.find(['`', '"', '\'']).unwrap_or(serde_message.len());
    format!("its data does not match the kind's schema ({})", serde_message[..cut].trim_end())
}

pub fn decode(kind: &str, data: &serde_json::Value) -> Result<Known, DecodeError> {
    fn typed<T: for<'de> Deserialize<'de>>(kind: &str, data: &serde_json::Value) -> Result<T, DecodeError> {
        T::deserialize(data).map_err(|e| DecodeError::BadData { kind: kind.to_string(), reason: e.to_string() })
    }
    match kind {
        JOURNAL_OPENED => {
            genesis::decode_opened(data).map(Known::Opened).map_err(|reason| DecodeError::BadData { kind: kind.into(), reason })
        }
        JOURNAL_REPAIRED => Ok(Known::Repaired(typed(kind, data)?)),
        JOURNAL_MOVED => Ok(Known::Moved(typed(kind, data)?)),
        CHECKLIST_ITEM_ADDED => Ok(Known::ItemAdded(typed(kind, data)?)),
        CHECKLIST_ITEM_CHANGED => Ok(Known::ItemChanged(typed(kind, data)?)),
        CHECKLIST_WRITE_REFUSED => Ok(Known::WriteRefused(typed(kind, data)?)),
        SESSION_STARTED => Ok(Known::SessionStarted(typed(kind, data)?)),
        COMPACTION_RECORDED => Ok(Known::CompactionRecorded(typed(kind, data)?)),
        BRANCH_CREATED => Ok(Known::BranchCreated(typed(kind, data)?)),
        SESSION_JUDGED => Ok(Known::SessionJudged(typed(kind, data)?)),
        AWAY_SET => Ok(Known::AwaySet(typed(kind, data)?)),
        AWAY_QUEUED => Ok(Known::AwayQueued(typed(kind, data)?)),
        AWAY_STOP_RECORDED => Ok(Known::AwayStopRecorded(typed(kind, data)?)),
        AWAY_HANDED_BACK => Ok(Known::AwayHandedBack(typed(kind, data)?)),
        AWAY_ENDED => Ok(Known::AwayEnded(typed(kind, data)?)),
        DECISION_RECORDED => Ok(Known::DecisionRecorded(typed(kind, data)?)),
        DECISION_ANSWERED => Ok(Known::DecisionAnswered(typed(kind, data)?)),
        RUN_STARTED => Ok(Known::RunStarted(typed(kind, data)?)),
        RUN_DRIVER_CLAIMED => Ok(Known::DriverClaimed(typed(kind, data)?)),
        RUN_HALTED => Ok(Known::RunHalted(typed(kind, data)?)),
        RUN_LIFTED => Ok(Known::RunLifted(typed(kind, data)?)),
        RUN_FINISHED => Ok(Known::RunFinished(typed(kind, data)?)),
        LAUNCH_INTENDED => Ok(Known::LaunchIntended(typed(kind, data)?)),
        LAUNCH_STARTED => Ok(Known::LaunchStarted(typed(kind, data)?)),
        LAUNCH_EXITED => Ok(Known::LaunchExited(typed(kind, data)?)),
        RECEIPT_COLLECTED => Ok(Known::ReceiptCollected(typed(kind, data)?)),
        WORK_SAVED_ASIDE => Ok(Known::WorkSavedAside(typed(kind, data)?)),
        LANE_WORKTREE_CREATED => Ok(Known::LaneWorktreeCreated(typed(kind, data)?)),
        LANE_WORKTREE_REMOVED => Ok(Known::LaneWorktreeRemoved(typed(kind, data)?)),
        CONTEXT_INJECTED => Ok(Known::ContextInjected(typed(kind, data)?)),
        CONTEXT_DELIVERED => Ok(Known::ContextReceipt(ReceiptKind::Delivered, typed(kind, data)?)),
        CONTEXT_NOT_DELIVERED => Ok(Known::ContextReceipt(ReceiptKind::NotDelivered, typed(kind, data)?)),
        CONTEXT_UNKNOWN => Ok(Known::ContextReceipt(ReceiptKind::Unknown, typed(kind, data)?)),
        AWAY_SWEEP_STARTED => Ok(Known::AwaySweepStarted(typed(kind, data)?)),
        AWAY_SWEEP_ANSWERED => Ok(Known::AwaySweepAnswered(typed(kind, data)?)),
        AWAY_RETURN_SHOWN => Ok(Known::AwayReturnShown(typed(kind, data)?)),
        AWAY_NOTIFIED => Ok(Known::AwayNotified(typed(kind, data)?)),
        AWAY_NOTIFICATION_RECORDED => Ok(Known::AwayNotificationRecorded(typed(kind, data)?)),
        CHECKLIST_PROMISE_FIRED => Ok(Known::PromiseFired(typed(kind, data)?)),
        AWAY_MODE_REFUSED => Ok(Known::AwayModeRefused(typed(kind, data)?)),
        k if is_v1_kind(k) => Ok(Known::Unfolded),
        k => Err(DecodeError::UnknownKind(k.to_string())),
    }
}
