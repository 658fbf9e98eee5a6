//! The binary's own start (`src/main.rs` starts from C's `main`, not Rust's runtime start):
//! what the runtime start did for abcd must still hold.

use crate::common;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::repo::{TestRepo, abcd};

/// A managed working copy in a temp folder, with its own home store.
fn managed() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let TestRepo { dir, root, home } = TestRepo::folder().managed();
    (dir, root, home)
}

/// Holds the working copy's journal lock while `abcd checklist add` runs with the given
/// standard streams closed (`>&-` and the like), so that abcd waits for the lock with its
/// files open; then reads what its fds 0, 1 and 2 name.
fn streams_while_waiting_for_the_lock(closing: &str) -> Vec<PathBuf> {
    let (_dir, root, home) = managed();
    let tier = root.join(".abcd/.work.local");
    let lock =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(tier.join("journal.jsonl.lock")).unwrap();
    // SAFETY: flock on a file this test holds open.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    let script = format!("exec \"$0\" checklist add 'Written with {closing}' {closing}");
    // `sh` runs the binary as `$0`, with the environment `abcd()` gives it.
    let abcd_env = abcd(&root, &home);
    let mut child = Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_abcd")])
        .current_dir(&root)
        .envs(abcd_env.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))))
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let proc_dir = PathBuf::from(format!("/proc/{}", child.id()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // abcd is waiting once it has the lock file open.
    let waiting = || {
        std::fs::read_dir(proc_dir.join("fd"))
            .map(|fds| fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p.ends_with("journal.jsonl.lock"))))
            .unwrap_or(false)
    };
    while !waiting() {
        assert!(std::time::Instant::now() < deadline, "abcd never opened the lock file");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let streams = (0..3).map(|fd| std::fs::read_link(proc_dir.join(format!("fd/{fd}"))).unwrap_or_default()).collect();
    drop(lock);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "abcd checklist add with {closing}");
    let verify = abcd(&root, &home).args(["journal", "verify"]).output().unwrap();
    assert!(verify.status.success(), "with {closing}: {}", String::from_utf8_lossy(&verify.stdout));
    streams
}

#[test]
fn a_closed_stdout_gets_dev_null_not_a_journal_file() {
    let streams = streams_while_waiting_for_the_lock(">&-");
    assert_eq!(streams[1], Path::new("/dev/null"), "fd 1 names {:?}", streams[1]);
}

#[test]
fn all_three_closed_standard_streams_get_dev_null() {
    let streams = streams_while_waiting_for_the_lock("<&- >&- 2>&-");
    assert!(streams.iter().all(|s| s == Path::new("/dev/null")), "fds 0-2 name {streams:?}");
}

#[test]
fn a_closed_pipe_on_stdout_does_not_kill_the_process_by_signal() {
    // abcd writes its help into a pipe whose reading end is already closed.
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) returns.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: pipe(2) just returned these two open descriptors, each owned once here.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_abcd")).arg("--help").stdout(Stdio::from(writer)).output().unwrap();
    assert_eq!(out.status.signal(), None, "abcd was killed by a signal writing to a closed pipe: {:?}", out.status);
}

#[test]
fn a_panic_exits_101_as_under_the_runtime_start() {
    // A test build panics before any verb runs when `ABCD_TEST_PANIC` is set.
    let (_dir, root, home) = managed();
    let out = abcd(&root, &home).args(["checklist"]).env("ABCD_TEST_PANIC", "1").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(101), "{stderr}");
    assert!(stderr.contains("panicked") && stderr.contains("panic injected by ABCD_TEST_PANIC"), "{stderr}");
}

/// `build.rs` links the binary at a fixed address when it can (Linux with glibc, not a
/// cross build, no static C runtime, not `ABCD_PIE=1`) and then sets `abcd_fixed_address`:
/// the ELF type must be `ET_EXEC`, not the position-independent `ET_DYN`, so the dynamic
/// loader has almost nothing to relocate at each start.
#[test]
#[cfg(abcd_fixed_address)]
fn the_binary_is_linked_at_a_fixed_address() {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_abcd")).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    // e_ident[EI_DATA]: 1 little-endian, 2 big-endian.
    let e_type = match bytes[5] {
        1 => u16::from_le_bytes([bytes[16], bytes[17]]),
        _ => u16::from_be_bytes([bytes[16], bytes[17]]),
    };
    assert_eq!(e_type, 2, "ELF type {e_type}: 2 is a fixed-address executable, 3 a position-independent one");
}
