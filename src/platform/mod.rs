//! The operating system behind one seam: what abcd asks of the kernel beyond portable
//! `std` calls. Every other module reaches the OS through here (`tests/structure/platform_seam.rs`
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
//! - one port per OS (`linux.rs`), implementing `Os` (`os.rs`, with the process facts a
//!   port reads): what no POSIX call gives alike everywhere. Only the public modules call it.

pub mod child;
pub mod fs;
mod os;
pub mod process;

#[cfg(target_os = "linux")]
mod linux;
/// The port this build uses.
#[cfg(target_os = "linux")]
type This = linux::Linux;

#[cfg(not(target_os = "linux"))]
compile_error!("abcd has no platform port for this OS: add src/platform/<os>.rs implementing platform::Os (see docs/platform.md)");
