//! The operating system behind one seam: what abcd asks of the kernel beyond portable
//! `std` calls. Every other module reaches the OS through here (`tests/platform_seam.rs`
//! holds that), so a port (macOS) is one new file implementing `Os` plus its tests (and
//! its `cfg` lines below), and the rest of the crate compiles unchanged. `docs/platform.md`
//! lists the contract.
//!
//! Two kinds of code live here:
//! - the public modules, which callers use and which are written once for every Unix
//!   (POSIX calls: `O_NOFOLLOW`, file modes, `pread`/`pwrite`, `kill`, `setsid`, process
//!   groups, signals):
//!   - [`process`]: a process is named by its pid and its start time (`ProcessId`), so a
//!     reused pid reads as gone; liveness, a process's parent, detached starts in their own
//!     session, program lookup on `PATH`, and this process's own uid and signals.
//!   - [`child`]: one bounded child: its own process group, stdout capped, stderr kept to a
//!     bound, killed with its group at a deadline.
//!   - [`fs`]: opens that refuse a symlink, created modes, positioned reads and writes,
//!     durable syncs of data and of folders, atomic exchange and no-replace renames, and
//!     the pid holding a file's `flock`.
//! - one port per OS (`linux.rs`), implementing `Os`: what no POSIX call gives alike
//!   everywhere. Only the public modules call it.

pub mod child;
pub mod fs;
pub mod process;

use std::fs::File;
use std::io;
use std::path::Path;

use process::{ProcessError, Stat};

#[cfg(target_os = "linux")]
mod linux;
/// The port this build uses.
#[cfg(target_os = "linux")]
type This = linux::Linux;

#[cfg(not(target_os = "linux"))]
compile_error!("abcd has no platform port for this OS: add src/platform/<os>.rs implementing platform::Os (see docs/platform.md)");

/// What a port provides: one file per OS, each function keeping the promise written here.
/// None of them may say "gone" or "done" when it could not tell: a failure is an error (or
/// `None` where the doc says so), never a guess.
trait Os {
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
