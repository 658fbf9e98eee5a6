//! The event kinds of format v1 and the typed `data` of each kind this build folds.
//! The journal carries `data` as JSON; these types are how the folds read it. A kind
//! not in `V1_KINDS` was written by a newer abcd: verified, kept, and skipped by folds.

use serde::{Deserialize, Serialize};

pub use crate::away::{AwayEnded, AwayHandedBack, AwayQueued, AwaySet, AwayStopRecorded, DecisionRecorded};
use crate::checklist::item::{ChangeSet, ItemFields};
use crate::verdict::stop::{Judged, Row, SessionState, StopState};

pub const JOURNAL_OPENED: &str = "journal.opened";
pub const JOURNAL_REPAIRED: &str = "journal.repaired";
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
    // The phased loop's kinds (SPEC §8): typed and folded by `crate::phased`, not here.
    crate::phased::LOOP_STARTED,
    crate::phased::LOOP_TURN_INTENDED,
    crate::phased::LOOP_TURN_REPLIED,
    crate::phased::LOOP_TURN_ABANDONED,
    crate::phased::LOOP_PAUSED,
    crate::phased::LOOP_RESUMED,
    crate::phased::LOOP_RETRIED,
    crate::phased::LOOP_SKIPPED,
    crate::phased::LOOP_STOPPED,
];

pub fn is_v1_kind(kind: &str) -> bool {
    V1_KINDS.contains(&kind)
}

/// What a journal is the journal of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Scope {
    /// One working copy, named by its root folder.
    WorkingCopy { root: String },
    /// A repository, named by its first root commit.
    Repository { root_commit: String },
    /// This machine's index of runs.
    Machine {},
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scope::WorkingCopy { root } => write!(f, "working copy {root}"),
            Scope::Repository { root_commit } => write!(f, "repository {root_commit}"),
            Scope::Machine {} => f.write_str("machine"),
        }
    }
}

/// `data` of `journal.opened`, event 0.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalOpened {
    /// 32 lowercase hex characters from the OS's random source.
    pub journal_id: String,
    pub scope: Scope,
}

/// Why `abcd journal repair` continued the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairCause {
    /// Lines from the first bad one to the end were moved to quarantine.
    Corruption,
    /// The journal was behind or unlike its head anchor and a person accepted it as is.
    AnchorMismatch,
}

/// `data` of `journal.repaired`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalRepaired {
    pub cause: RepairCause,
    /// The byte range moved out of the journal (`from == to` when nothing was moved).
    pub from_offset: u64,
    pub to_offset: u64,
    /// Newline-terminated lines in the moved range (a last line without one counts too).
    pub lines: u64,
    /// The quarantine file's name, and the BLAKE3 of its bytes, when bytes were moved.
    pub quarantine_file: Option<String>,
    pub quarantine_blake3: Option<String>,
    /// For `anchor_mismatch`: what the anchor said.
    pub anchor_seq: Option<u64>,
    pub anchor_hash: Option<String>,
    /// What the verifier reported at the first bad place.
    pub problem: String,
}

/// `data` of `checklist.item_added`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemAdded {
    pub item: ItemFields,
}

/// `data` of `checklist.item_changed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemChanged {
    pub id: String,
    pub changes: ChangeSet,
}

/// `data` of `checklist.write_refused`: what was refused and by which pattern kind,
/// never the value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteRefused {
    /// `add` or `set`.
    pub verb: String,
    pub field: String,
    pub kind: String,
}

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
}

impl SessionJudged {
    pub fn new(session: String, j: Judged, window_start: Option<jiff::Timestamp>) -> SessionJudged {
        SessionJudged {
            window_start,
            session,
            row: j.row,
            state: j.state,
            next_look: j.next_look,
            block_count: j.block_count,
            wake_count: j.wake_count,
            owed_fingerprint: j.owed_fingerprint,
            capped_fingerprint: j.capped_fingerprint,
            question_hash: j.question_hash,
        }
    }

    /// What the next verdict for this session reads back.
    pub fn session_state(&self) -> SessionState {
        SessionState {
            block_count: self.block_count,
            wake_count: self.wake_count,
            owed_fingerprint: self.owed_fingerprint.clone(),
            capped_fingerprint: self.capped_fingerprint.clone(),
            question_hash: self.question_hash.clone(),
            next_look: self.next_look,
        }
    }
}

/// The typed view of an event this build understands.
#[derive(Clone, Debug, PartialEq)]
pub enum Known {
    Opened(JournalOpened),
    Repaired(JournalRepaired),
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
    RunStarted(crate::ledger::RunStarted),
    DriverClaimed(crate::ledger::DriverClaimed),
    RunHalted(crate::ledger::RunNamed),
    RunLifted(crate::ledger::RunNamed),
    RunFinished(crate::ledger::RunNamed),
    LaunchIntended(crate::ledger::LaunchIntended),
    LaunchStarted(crate::ledger::LaunchStarted),
    LaunchExited(crate::ledger::LaunchExited),
    ReceiptCollected(crate::ledger::ReceiptCollected),
    WorkSavedAside(crate::ledger::WorkSavedAside),
    /// A v1 kind that no fold of this build reads yet.
    Unfolded,
}

/// Why an event's data cannot be read as its kind says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("kind `{0}` is not a v1 kind (written by a newer abcd?)")]
    UnknownKind(String),
    #[error("data of `{kind}` does not match its schema: {reason}")]
    BadData { kind: String, reason: String },
}

pub fn decode(kind: &str, data: &serde_json::Value) -> Result<Known, DecodeError> {
    fn typed<T: for<'de> Deserialize<'de>>(kind: &str, data: &serde_json::Value) -> Result<T, DecodeError> {
        T::deserialize(data).map_err(|e| DecodeError::BadData { kind: kind.to_string(), reason: e.to_string() })
    }
    match kind {
        JOURNAL_OPENED => {
            let opened: JournalOpened = typed(kind, data)?;
            if opened.journal_id.len() != 32 || !opened.journal_id.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
                return Err(DecodeError::BadData { kind: kind.into(), reason: "journal_id is not 32 lowercase hex".into() });
            }
            Ok(Known::Opened(opened))
        }
        JOURNAL_REPAIRED => Ok(Known::Repaired(typed(kind, data)?)),
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
        k if is_v1_kind(k) => Ok(Known::Unfolded),
        k => Err(DecodeError::UnknownKind(k.to_string())),
    }
}

/// A host session id abcd keys state by: `[A-Za-z0-9_-]{1,128}` (SPEC §6). Anything
/// else is refused, so an id can never name a path or carry text into a reason.
pub const SESSION_ID_MAX_BYTES: usize = 128;

pub fn session_id_ok(id: &str) -> bool {
    (1..=SESSION_ID_MAX_BYTES).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A fresh journal id: 16 bytes from the OS's random source, as hex.
pub fn new_journal_id() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
