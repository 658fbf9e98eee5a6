//! The Linux port of [`Os`](super::os::Os): processes from `/proc/<pid>/stat` and `comm`, the
//! `flock` holder from `/proc/locks`, `fdatasync`, and `renameat2`'s exchange and
//! no-replace renames.

use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use super::os::{Os, ProcessError, Stat};

/// This port.
pub struct Linux;

/// `/proc/stat` read for the boot time, at most, in bytes (its per-CPU and interrupt lines
/// grow with the machine; `btime` follows them).
const PROC_STAT_MAX_BYTES: u64 = 1 << 20;

impl Os for Linux {
    fn read_stat(pid: u32) -> Result<Option<Stat>, ProcessError> {
        let Some(bytes) = read_proc(pid, "stat")? else { return Ok(None) };
        parse_stat(&String::from_utf8_lossy(&bytes)).map(Some).ok_or(ProcessError::Malformed { pid })
    }

    fn started_unix_seconds(start_ticks: u64) -> Option<i64> {
        use std::io::Read;
        let mut text = String::new();
        std::fs::File::open("/proc/stat").ok()?.take(PROC_STAT_MAX_BYTES).read_to_string(&mut text).ok()?;
        let boot: i64 = text.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()?;
        // SAFETY: sysconf reads a constant of the running system and has no preconditions.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let per_second = u64::try_from(per_second).ok().filter(|t| *t > 0)?;
        boot.checked_add(i64::try_from(start_ticks / per_second).ok()?)
    }

    fn command_name(pid: u32) -> Option<String> {
        let bytes = read_proc(pid, "comm").ok()??;
        Some(String::from_utf8_lossy(&bytes).trim_end_matches('\n').to_string())
    }

    fn flock_holder(file: &File) -> Option<u32> {
        let m = file.metadata().ok()?;
        // The kernel lists the locks afresh on each read call, so a listing read in many small
        // reads can skip a lock while other locks come and go. One read call into a buffer of the whole
        // bound lists in one pass as far as it fits; a second look, only on this refusal path,
        // covers a listing read mid-change anyway.
        // A lock listed on the same inode under another device number is taken only when
        // that process holds the file open: another file system's file with the same
        // inode number is not the one asked about.
        let opens_it = |pid: u32| holds_open(pid, m.dev(), m.ino());
        (0..PROC_LOCKS_LOOKS).find_map(|_| {
            let text = read_proc_locks()?;
            holder_in_proc_locks(&text, libc::major(m.dev()), libc::minor(m.dev()), m.ino(), &opens_it)
        })
    }

    fn sync_data(file: &File) -> io::Result<()> {
        file.sync_data()
    }

    fn sync_dir(dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn rename_exchange(a: &Path, b: &Path) -> io::Result<()> {
        renameat2(a, b, libc::RENAME_EXCHANGE)
    }

    fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
        renameat2(from, to, libc::RENAME_NOREPLACE)
    }
}

/// Tries at reading a `/proc` file before a failure other than "no such process" is
/// reported: a failure there is transient (out of file descriptors or memory), and a
/// retry is cheaper than an unknown.
pub const READ_ATTEMPTS: usize = 3;

/// The pause between two tries, long enough for a descriptor or memory shortage to pass.
pub const READ_RETRY_PAUSE: Duration = Duration::from_millis(10);

/// Field numbers of `/proc/<pid>/stat` (`man 5 proc`), counted from 1.
const STAT_STATE: usize = 3;
const STAT_PPID: usize = 4;
const STAT_STARTTIME: usize = 22;
/// The first field after the parenthesised command name, which holds spaces and
/// parentheses of its own and so is cut out by its last `)` rather than split.
const STAT_FIRST_AFTER_COMM: usize = 3;

/// `/proc/locks` is read this far at most when naming a holder (a line is about 60 bytes).
const PROC_LOCKS_READ_MAX: u64 = 1 << 20;

/// How many times a refusal reads `/proc/locks` looking for the holder.
const PROC_LOCKS_LOOKS: usize = 2;

/// Parses one `/proc/<pid>/stat` line: `pid (comm) state ppid pgrp session … starttime …`.
fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| rest.get(n - STAT_FIRST_AFTER_COMM).copied();
    let mut state = field(STAT_STATE)?.chars();
    let (Some(state), None) = (state.next(), state.next()) else { return None };
    Some(Stat { comm, state, ppid: field(STAT_PPID)?.parse().ok()?, start_ticks: field(STAT_STARTTIME)?.parse().ok()? })
}

/// True when the error says the process is not there (its directory is gone, or it
/// exited between the open and the read).
fn no_such_process(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH)
}

/// Reads a `/proc/<pid>/…` file: `Ok(None)` when the process does not exist, an error when
/// it may exist but the file could not be read (tried [`READ_ATTEMPTS`] times).
fn read_proc(pid: u32, file: &str) -> Result<Option<Vec<u8>>, ProcessError> {
    let path = format!("/proc/{pid}/{file}");
    let mut last = None;
    for attempt in 0..READ_ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(READ_RETRY_PAUSE);
        }
        match std::fs::read(&path) {
            Ok(bytes) => return Ok(Some(bytes)),
            // Without /proc every pid would read as gone, live ones too.
            Err(e) if no_such_process(&e) => return if Path::new("/proc/self").exists() { Ok(None) } else { Err(ProcessError::NoProc) },
            Err(e) => last = Some(e),
        }
    }
    let source = last.unwrap_or_else(|| io::Error::other("not read"));
    // A read error on a pid whose directory is gone is the process leaving mid-read.
    match std::fs::symlink_metadata(format!("/proc/{pid}")) {
        Err(e) if no_such_process(&e) => Ok(None),
        _ => Err(ProcessError::Unreadable { pid, source }),
    }
}

/// `/proc/locks` in one read call, at most `PROC_LOCKS_READ_MAX` bytes.
fn read_proc_locks() -> Option<String> {
    use std::io::Read;
    let mut buf = vec![0u8; PROC_LOCKS_READ_MAX as usize];
    let n = File::open("/proc/locks").ok()?.read(&mut buf).ok()?;
    buf.truncate(n);
    String::from_utf8(buf).ok()
}

/// The pid holding the `flock` on the file at `major:minor:ino`, from a `/proc/locks`
/// listing (`1: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF`; lines of
/// waiters start `->` and are skipped).
fn holder_in_proc_locks(text: &str, major: u32, minor: u32, ino: u64, opens_it: &dyn Fn(u32) -> bool) -> Option<u32> {
    let exact = format!("{major:02x}:{minor:02x}:{ino}");
    let same_inode = format!(":{ino}");
    let mut others = vec![];
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // `N: FLOCK ADVISORY WRITE pid dev:ino start end`; a waiter has `->` after `N:`.
        let [_, "FLOCK", _, _, pid, file, ..] = fields[..] else { continue };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if file == exact {
            return Some(pid);
        }
        // Some file systems report another device number there than `stat` does.
        if file.ends_with(&same_inode) {
            others.push(pid);
        }
    }
    others.into_iter().find(|&pid| opens_it(pid))
}

/// Descriptors of a process looked at, at most, to confirm it holds a file open.
const FD_LOOKS_MAX: usize = 4_096;

/// Whether process `pid` has the file `dev`:`ino` open (its `/proc/<pid>/fd` links,
/// followed, at most [`FD_LOOKS_MAX`] of them); false when they cannot be read.
fn holds_open(pid: u32, dev: u64, ino: u64) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.take(FD_LOOKS_MAX).filter_map(Result::ok).any(|fd| std::fs::metadata(fd.path()).is_ok_and(|m| m.dev() == dev && m.ino() == ino))
}

fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput));
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: two valid NUL-terminated paths, relative to the working directory.
    let rc = unsafe { libc::renameat2(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), flags) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parses_a_name_with_spaces_and_parentheses() {
        let line = "4242 (tmux: (a) b) S 17 4242 4240 34816 4242 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 1 2 3\n";
        let s = parse_stat(line).unwrap();
        assert_eq!(s, Stat { comm: "tmux: (a) b".into(), state: 'S', ppid: 17, start_ticks: 987654 });
        assert!(!s.exited());
        let zombie = line.replace(") S ", ") Z ");
        assert!(parse_stat(&zombie).unwrap().exited());
    }

    #[test]
    fn stat_refuses_what_linux_does_not_write() {
        assert_eq!(parse_stat(""), None);
        assert_eq!(parse_stat("4242 (x) S 17 4242 4240"), None);
        assert_eq!(parse_stat("4242 x S 17 4242 4240 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5"), None);
        assert_eq!(parse_stat("4242 (x) SS 17 4242 4240 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5"), None);
        assert_eq!(parse_stat("4242 (x) S 17 4242 4240 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 -5"), None);
        assert!(parse_stat("4242 (x) S 17 4242 4240 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5").is_some());
    }

    #[test]
    fn the_holder_is_read_from_proc_locks_by_device_and_inode() {
        let text = "1: FLOCK  ADVISORY  WRITE 4242 fe:00:10010775 0 EOF\n\
                    1: -> FLOCK  ADVISORY  WRITE 77 fe:00:10010775 0 EOF\n\
                    2: POSIX  ADVISORY  WRITE 99 fe:00:555 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 31 08:01:555 0 EOF\n";
        let yes = |_: u32| true;
        assert_eq!(holder_in_proc_locks(text, 0xfe, 0, 10010775, &yes), Some(4242));
        assert_eq!(holder_in_proc_locks(text, 8, 1, 555, &yes), Some(31), "the POSIX lock on the same inode is not a flock");
        assert_eq!(holder_in_proc_locks(text, 0xfe, 0, 555, &yes), Some(31), "same inode, another device number: the fallback");
        assert_eq!(
            holder_in_proc_locks(text, 0xfe, 0, 555, &|_| false),
            None,
            "not when that process does not hold the file open (another file system's file)"
        );
        assert_eq!(holder_in_proc_locks(text, 0xfe, 0, 1, &yes), None);
        assert_eq!(holder_in_proc_locks("", 0xfe, 0, 1, &yes), None);
    }
}
