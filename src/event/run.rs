//! The run and launch family (SPEC §7): `run.*`, `launch.*`, `receipt.collected` and
//! `work.saved_aside`. Their checks and fold live in `ledger`.

use serde::{Deserialize, Serialize};

pub use crate::platform::process::ProcessId;

/// Who drives a run: the host session (when known) and its process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Driver {
    #[serde(default)]
    pub session: Option<String>,
    pub process: ProcessId,
}

/// `data` of `run.started` (in the working copy journal, and as the index entry in the
/// machine journal).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStarted {
    pub run: String,
    pub working_copy: String,
    pub lanes: Vec<String>,
    pub driver: Driver,
}

/// `data` of `run.driver_claimed`: a takeover of a run whose driver is gone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverClaimed {
    pub run: String,
    pub driver: Driver,
    pub previous: Driver,
}

/// `data` of `run.halted`, `run.lifted` and `run.finished` (also `run.finished` in the
/// machine journal, so the index knows the run is over).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunNamed {
    pub run: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_copy: Option<String>,
}

/// `data` of `launch.intended`: recorded before anything starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchIntended {
    pub run: String,
    pub lane: String,
    /// 1, 2, … within the lane.
    pub launch: u64,
    pub role: String,
    pub command: Vec<String>,
    pub receipt: String,
    pub worktree: String,
    /// The process that recorded the intent and starts the launch's watcher (`abcd launch`,
    /// or the loop's driver). While it lives, the launch is starting and the lane is taken;
    /// once it is gone with the launch neither started nor ended, the next launch of the
    /// lane records it `not_started`. Absent in journals written before it was recorded:
    /// such a launch counts as abandoned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<ProcessId>,
}

/// `data` of `launch.started`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchStarted {
    pub run: String,
    pub lane: String,
    pub launch: u64,
    pub process: ProcessId,
    pub stdout: String,
    pub stderr: String,
}

/// How a launched agent ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ExitStatus {
    Code {
        code: i32,
    },
    Signal {
        signal: i32,
    },
    /// It did not start at all (the program could not be run).
    NotStarted,
    Unknown,
}

/// `data` of `launch.exited`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchExited {
    pub run: String,
    pub lane: String,
    pub launch: u64,
    pub status: ExitStatus,
}

/// `data` of `receipt.collected`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptCollected {
    pub run: String,
    pub lane: String,
    pub launch: u64,
    /// BLAKE3 of the receipt's bytes (of its first `hashed_bytes` when that is set), 64 hex.
    pub blake3: String,
    pub bytes: u64,
    /// Set only for a receipt over the collect's read bound (`command::run::RECEIPT_MAX_BYTES`):
    /// the bytes the digest covers, its first ones. Such a receipt is collected all the
    /// same (the lane goes on), and the record says how much of it the digest vouches for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hashed_bytes: Option<u64>,
}

/// `data` of `work.saved_aside`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkSavedAside {
    pub run: String,
    pub lane: String,
    pub worktree: String,
    pub ref_name: String,
    pub commit: String,
    pub files: Vec<String>,
    /// Files beyond [`SAVED_FILES_LISTED_MAX`], counted.
    #[serde(default)]
    pub files_not_listed: u64,
}

/// `data` of `lane.worktree_created`: abcd made a git worktree of its own for a lane, on a
/// branch of its own started at `base`. Only such a worktree does abcd save aside and
/// reset without being told to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaneWorktreeCreated {
    pub run: String,
    pub lane: String,
    pub worktree: String,
    /// The branch checked out in it, `abcd/<run>/<lane>`.
    pub branch: String,
    /// The commit the branch started at: the working copy's HEAD when it was made.
    pub base: String,
}

/// `data` of `lane.worktree_removed`: abcd removed a clean worktree it had made (at `abcd
/// run finish`); the branch goes too only when it holds no commit beyond its base.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaneWorktreeRemoved {
    pub run: String,
    pub lane: String,
    pub worktree: String,
    pub branch_deleted: bool,
}
