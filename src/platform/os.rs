//! What a port provides, and the facts of a process it reads: the public modules (`fs`,
//! `process`) call the port through `Os`, and the port speaks these types, so none of the
//! three files imports another that imports it back.

use std::fs::File;
use std::io;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot read /proc/{pid}/stat: {source}")]
    Unreadable { pid: u32, source: io::Error },
    #[error("/proc/{pid}/stat is not in the form Linux writes")]
    Malformed { pid: u32 },
    #[error("/proc is not mounted, so no process can be named")]
    NoProc,
    #[error("process {pid} ended while it was being named")]
    Gone { pid: u32 },
    #[error("this process has no parent to name as its driver; pass --driver-pid")]
    NoParent,
}

/// What a port reads of a process (Linux: from `/proc/<pid>/stat`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Stat {
    /// The command name as the OS keeps it.
    pub(super) comm: String,
    /// The state letter as `ps` shows it: `Z` for a zombie, `X` (`x` on old Linux kernels)
    /// for a dead task.
    pub(super) state: char,
    /// The parent's pid (0 when the parent is outside this pid namespace, and for pid 1).
    pub(super) ppid: u32,
    /// See [`ProcessId::start_ticks`](super::process::ProcessId::start_ticks).
    pub(super) start_ticks: u64,
}

impl Stat {
    /// Exited and waiting to be reaped (`Z`), or already dead (`X`, `x` on old kernels).
    pub(super) fn exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// What a port provides: one file per OS, each function keeping the promise written here.
/// None of them may say "gone" or "done" when it could not tell: a failure is an error (or
/// `None` where the doc says so), never a guess.
pub(super) trait Os {
    /// What the OS says of the process holding `pid` (never 0), zombies included:
    /// `Ok(None)` when no process holds it; an error when it may exist but could not be
    /// read (a transient failure is retried first), when the OS's answer is not in the form
    /// expected, or when the OS cannot name processes at all (`/proc` not mounted), since
    /// reading "no such process" there would call live processes gone.
    fn read_stat(pid: u32) -> Result<Option<Stat>, ProcessError>;

    /// The process's command name as the OS keeps it (Linux: `comm`, its first 15 bytes),
    /// without a trailing newline; `None` when gone or unreadable.
    fn command_name(pid: u32) -> Option<String>;

    /// The pid holding an exclusive `flock` on `file` (another open file description of the
    /// same file), looked up from what the kernel lists; `None` when it cannot be told. It
    /// only improves a message, so it may be slow, but it must never name a waiter.
    fn flock_holder(file: &File) -> Option<u32>;

    /// Makes the file's data, and the size needed to read it back, durable before
    /// returning Ok (Linux: `fdatasync`). An error means nothing about what reached the
    /// disk, and the caller treats every write since the last Ok as possibly lost.
    fn sync_data(file: &File) -> io::Result<()>;

    /// Makes the names in a folder durable (creations, renames, removals in it).
    fn sync_dir(dir: &Path) -> io::Result<()>;

    /// Swaps the two names atomically: a reader of either name sees one file or the other,
    /// never neither. `NotFound` when either is missing; another error (`Unsupported`,
    /// `EINVAL` on a file system without it) when the exchange cannot be done, and the
    /// caller renames instead.
    fn rename_exchange(a: &Path, b: &Path) -> io::Result<()>;

    /// When a process whose `start_ticks` this port read started, in seconds since the Unix
    /// epoch (Linux: the boot time `btime` of `/proc/stat` plus the ticks over `CLK_TCK`);
    /// `None` when it cannot be told. For people to read; identity stays the ticks.
    fn started_unix_seconds(start_ticks: u64) -> Option<i64>;

    /// Renames `from` to `to` atomically unless `to` exists (`AlreadyExists` then), with no
    /// window in which an existing `to` is replaced.
    fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()>;
}
