//! The operating system behind one seam: what abcd asks of the kernel beyond portable
//! `std` calls. Every other module reaches the OS through here, so a port (macOS) is a new
//! file per submodule plus its tests, and the rest of the crate compiles unchanged.
//!
//! The contract each port keeps:
//! - [`process`]: a process is named by its pid and its start time (`ProcessId`), so a
//!   reused pid reads as gone; liveness, a process's parent, detached starts in their own
//!   session, and program lookup on `PATH`.
//! - [`child`]: one bounded child: its own process group, stdout capped, stderr kept to a
//!   bound, killed with its group at a deadline.

pub mod child;
pub mod process;
