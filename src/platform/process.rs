//! Process identity for the launch ledger (SPEC §7): a pid plus its start time, as the
//! port reads them (Linux: `/proc/<pid>/stat`).
//!
//! It names a process, tells whether a named one still lives, and starts the processes
//! abcd launches, each in a session of its own.
//!
//! Liveness is judged so that it never says "alive" for a different process and never says
//! "gone" for a live one because a read failed:
//! - a process is the one recorded only when its pid exists, it has not exited (a zombie,
//!   state `Z`, or a dead task, `X`, has exited and only waits to be reaped), and its start
//!   time equals the recorded one; a reused pid starts later, so it never matches;
//! - it is gone when no process holds the pid (on Linux: `/proc/<pid>` does not exist
//!   while `/proc` itself is mounted), when it has exited, or when another process now
//!   holds its pid;
//! - any other failure to read (after the port's retries) is [`Liveness::Unknown`]:
//!   neither. [`is_alive`], which must answer yes or no, counts unknown as alive, because
//!   every decision the ledger takes on "gone" (a takeover, saving work aside, a fresh
//!   launch) is the one that cannot be undone.
//!
//! Starts come in two kinds, for the two hops of a launch: [`spawn_in_new_session`] for a
//! process the caller waits on (the watcher waits on its agent for the exit status), and
//! [`spawn_detached`] for one the caller never waits on (the launcher starts the watcher
//! and returns). Both put the child in a new session (`setsid`), so the terminal or the
//! host's shell tool that ran abcd can neither hang up on it nor kill it with its process
//! group, and point its output at files, so nobody waits for a pipe to close.
//!
//! What is read of a process comes from the port (`Os::read_stat`); the rest (starts,
//! program lookup, signals) is POSIX, written once here.

use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use super::This;
pub use super::os::ProcessError;
use super::os::{Os, Stat};

/// Programs that only pass a command along and end with it: shells and the wrappers a
/// shell line puts in front of a command. The driver a run records by default is the
/// nearest ancestor *not* named here, so `abcd run start` typed into a host's shell tool
/// (host → `bash -c` → abcd) names the host, whose life is the session's, and not the
/// shell, which ends with the one command. Matched against `/proc/<pid>/comm` (the kernel
/// keeps its first 15 bytes; every name here is shorter).
///
/// In: the POSIX shells and their kin; `busybox` (its applets run under its own name when
/// it is called as `busybox sh`); `env`, `nice`, `nohup`, `stdbuf`, `setsid`, `timeout`,
/// `time`, `flock` (run one command and end with it); `sudo`, `doas`, `su` (a host may run
/// abcd as another user; the privilege wrapper ends with the command like any other).
/// Out: terminal multiplexers, `sshd`, `login`, `systemd`, editors and language runtimes:
/// they outlive one command, so one of them is a fair driver when no host is above.
pub const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "ash", "yash", "tcsh", "csh", "busybox", "env", "nice", "nohup", "stdbuf",
    "setsid", "timeout", "time", "flock", "sudo", "doas", "su",
];

/// Ancestors examined at most, the parent being the first. A real chain of shells is a
/// handful deep; the bound keeps a pathological one (or a parent loop a pid race could
/// show) from walking forever.
pub const ANCESTOR_WALK_MAX: usize = 32;

/// The search path `exec` uses when `PATH` is not set (glibc's `execvp` default).
pub const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// Permission bits of the output files a start creates: the owner's alone, since an
/// agent's output may quote anything it read.
pub const OUTPUT_MODE: u32 = 0o600;

/// pid 1 adopts orphans and outlives every session, so the ancestor walk stops below it:
/// a driver that never ends would hold its run forever.
const INIT_PID: u32 = 1;

/// A process as the ledger names it: pid plus its start time, so a reused pid reads as gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessId {
    pub pid: u32,
    /// When the process started, in the port's unit (Linux: field 22 of `/proc/<pid>/stat`,
    /// clock ticks after boot). Compared only for equality with what the same port read;
    /// shown to people as a time through [`started_unix_seconds`].
    pub start_ticks: u64,
}

/// What can be said of a recorded process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// The very process recorded, still running.
    Alive,
    /// It exited (reaped or a zombie), or its pid now names another process.
    Gone,
    /// Its `/proc` entry exists but could not be read: it cannot be told either way.
    Unknown,
}

impl Liveness {
    /// The yes-or-no answer: only [`Liveness::Gone`] is "not alive", so a process is never
    /// declared gone because a read failed.
    pub fn counts_as_alive(self) -> bool {
        self != Liveness::Gone
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// Only the program is named, never its arguments: they may hold secrets.
    #[error("`{}` was not found (on PATH, when it has no `/`)", program.display())]
    NotFound { program: PathBuf },
    #[error("`{}` is not an executable file", path.display())]
    NotExecutable { path: PathBuf },
    #[error("the working directory {} is not a directory: {source}", path.display())]
    Cwd { path: PathBuf, source: io::Error },
    #[error("cannot open the output file {}: {source}", path.display())]
    Output { path: PathBuf, source: io::Error },
    #[error("`{}` could not be started: {source}", program.display())]
    Start { program: PathBuf, source: io::Error },
    /// It started but its start time could not be read, so it could not be recorded; it
    /// was killed (with its process group) rather than left running unrecorded.
    #[error("`{}` started but could not be named, so it was stopped: {source}", program.display())]
    Unidentified { program: PathBuf, source: ProcessError },
}

/// How a waited-for child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitReport {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it (its number).
    Signal(i32),
    /// Waiting failed, so the end is not known.
    Unknown,
}

/// A child started in its own session, which the caller waits on (see [`spawn_in_new_session`]).
#[derive(Debug)]
pub struct SpawnedChild {
    pub id: ProcessId,
    child: Child,
}

impl SpawnedChild {
    /// Waits for the exit (for the watcher process that started it): the code, or the
    /// signal that ended it.
    pub fn wait(mut self) -> ExitReport {
        match self.child.wait() {
            Ok(status) => match (status.code(), exit_signal(&status)) {
                (Some(code), _) => ExitReport::Code(code),
                (None, Some(signal)) => ExitReport::Signal(signal),
                (None, None) => ExitReport::Unknown,
            },
            Err(_) => ExitReport::Unknown,
        }
    }
}

/// The process's stat, zombies included; `Ok(None)` when no process has the pid.
fn read_stat(pid: u32) -> Result<Option<Stat>, ProcessError> {
    // pid 0 is the scheduler (the kernel itself on macOS), never a process abcd names.
    if pid == 0 {
        return Ok(None);
    }
    This::read_stat(pid)
}

/// The process now holding `pid`, or `Ok(None)` when none does or it has exited (a zombie
/// counts as gone); an error when the OS could not tell.
pub fn try_identify(pid: u32) -> Result<Option<ProcessId>, ProcessError> {
    Ok(read_stat(pid)?.filter(|s| !s.exited()).map(|s| ProcessId { pid, start_ticks: s.start_ticks }))
}

/// The process now holding `pid`; None when there is none, it has exited (a zombie counts
/// as gone), or the OS could not tell (see [`try_identify`] for why).
pub fn identify(pid: u32) -> Option<ProcessId> {
    try_identify(pid).ok().flatten()
}

/// Whether the recorded process still runs (see the module doc for how each answer is
/// reached).
pub fn liveness(p: &ProcessId) -> Liveness {
    judge(p, read_stat(p.pid))
}

/// The judgement behind [`liveness`], over what reading the pid's stat gave.
fn judge(p: &ProcessId, read: Result<Option<Stat>, ProcessError>) -> Liveness {
    match read {
        Ok(Some(s)) if !s.exited() && s.start_ticks == p.start_ticks => Liveness::Alive,
        Ok(_) => Liveness::Gone,
        Err(_) => Liveness::Unknown,
    }
}

/// The pid exists, has not exited, and started when recorded. Unknown counts as alive: a
/// process is never declared gone because a read failed (see the module doc).
pub fn is_alive(p: &ProcessId) -> bool {
    liveness(p).counts_as_alive()
}

/// When the recorded process started, in seconds since the Unix epoch, for people to read;
/// `None` when the OS cannot tell.
pub fn started_unix_seconds(p: &ProcessId) -> Option<i64> {
    This::started_unix_seconds(p.start_ticks)
}

/// This process, named.
pub fn this_process() -> Result<ProcessId, ProcessError> {
    let pid = std::process::id();
    try_identify(pid)?.ok_or(ProcessError::Gone { pid })
}

/// The parent's pid (Linux: field 4 of `/proc/<pid>/stat`); None when the process is gone
/// or unreadable (0 for a process whose parent is outside its pid namespace, and for pid 1).
pub fn parent_of(pid: u32) -> Option<u32> {
    read_stat(pid).ok().flatten().map(|s| s.ppid)
}

/// The command name as the OS keeps it (Linux: `/proc/<pid>/comm` without its newline, the
/// kernel keeping its first 15 bytes).
pub fn command_name(pid: u32) -> Option<String> {
    This::command_name(pid)
}

/// Whether `comm` is one of [`SHELLS`].
pub fn is_shell(comm: &str) -> bool {
    SHELLS.contains(&comm)
}

/// The walk behind [`nearest_non_shell_ancestor`], over any reader of a pid's command name
/// and parent (None: no such process). From `start`'s parent upward, the first process
/// whose name is not a shell, looking at most [`ANCESTOR_WALK_MAX`] ancestors and never at
/// pid 1 or beyond; when none is found that way (only shells up to pid 1, an ancestor that
/// cannot be read, or the bound reached), `start`'s parent itself (pid 1 too, when it is
/// the parent), so a run driven from a bare shell names that shell. None only when `start`
/// has no parent to name (its parent pid reads 0).
fn nearest_non_shell_in(start: u32, mut read: impl FnMut(u32) -> Option<(String, u32)>) -> Option<u32> {
    let (_, parent) = read(start)?;
    if parent == 0 {
        return None;
    }
    let mut pid = parent;
    for _ in 0..ANCESTOR_WALK_MAX {
        if pid <= INIT_PID {
            break;
        }
        let Some((comm, ppid)) = read(pid) else { break };
        if !is_shell(&comm) {
            return Some(pid);
        }
        pid = ppid;
    }
    Some(parent)
}

/// The driver by default (SPEC §7): the nearest ancestor of this process whose name is not
/// in [`SHELLS`], so a command a host runs through its shell tool names the host's
/// process. Walks at most [`ANCESTOR_WALK_MAX`] levels and never past pid 1, which it
/// names only as the parent itself; failing that, the parent.
pub fn nearest_non_shell_ancestor() -> Result<ProcessId, ProcessError> {
    let read = |pid: u32| read_stat(pid).ok().flatten().map(|s| (s.comm, s.ppid));
    let pid = nearest_non_shell_in(std::process::id(), read).ok_or(ProcessError::NoParent)?;
    try_identify(pid)?.ok_or(ProcessError::Gone { pid })
}

/// Why a program could not be resolved.
enum Unresolved {
    NotFound,
    /// A file by that name exists but this process may not execute it.
    NotExecutable(PathBuf),
}

/// A regular file (after symlinks) this process may execute, as `exec` judges with the
/// effective ids.
fn executable(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    let may = unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::X_OK, libc::AT_EACCESS) } == 0;
    may && std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// `program` resolved the way `exec` would, with `path_var` as `PATH`. A name with a `/` is
/// taken as it is, made absolute against this process's directory so the child's working
/// directory does not change which file it names; a bare name is searched in each `PATH`
/// entry in order (empty entries, an old spelling of the current directory, are skipped).
fn resolve_in(program: &OsStr, path_var: Option<&OsStr>) -> Result<PathBuf, Unresolved> {
    if program.is_empty() {
        return Err(Unresolved::NotFound);
    }
    if program.as_bytes().contains(&b'/') {
        let path = Path::new(program);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir().map_or_else(|_| path.to_path_buf(), |d| d.join(path))
        };
        return match (executable(&path), path.exists()) {
            (true, _) => Ok(path),
            (false, true) => Err(Unresolved::NotExecutable(path)),
            (false, false) => Err(Unresolved::NotFound),
        };
    }
    let mut seen = None;
    for dir in std::env::split_paths(path_var.unwrap_or(OsStr::new(DEFAULT_PATH))) {
        if dir.as_os_str().is_empty() {
            continue;
        }
        let candidate = dir.join(program);
        if executable(&candidate) {
            return Ok(candidate);
        }
        if seen.is_none() && candidate.is_file() {
            seen = Some(candidate);
        }
    }
    Err(seen.map_or(Unresolved::NotFound, Unresolved::NotExecutable))
}

/// `program` resolved on this process's `PATH` the way exec would (a path with a `/` is
/// taken as is, made absolute), checked to be an executable file, so a launch can be
/// refused before anything is recorded.
pub fn resolve_program(program: &OsStr) -> Option<PathBuf> {
    resolve_in(program, std::env::var_os("PATH").as_deref()).ok()
}

/// An output file opened for appending, created [`OUTPUT_MODE`]; a symlink is refused, so
/// the run's folder cannot be used to write elsewhere, and so is anything but a regular
/// file (a FIFO there would hold the start until a reader came).
fn open_output(path: &Path) -> Result<File, SpawnError> {
    super::fs::open_regular(OpenOptions::new().append(true).create(true).mode(OUTPUT_MODE), path, super::fs::Symlink::Refuse)
        .map_err(|source| SpawnError::Output { path: path.to_path_buf(), source })
}

/// Reads a just-started child's start time: the child cannot be reaped before this
/// process waits on it, so its stat stays there (a zombie's too) and names this very child.
fn identify_child(pid: u32) -> Result<ProcessId, ProcessError> {
    let s = read_stat(pid)?.ok_or(ProcessError::Gone { pid })?;
    Ok(ProcessId { pid, start_ticks: s.start_ticks })
}

/// The signals a detached child gets back at their default disposition, whatever this
/// process set: the ones a stop or a closed pipe sends.
pub const DEFAULTED_SIGNALS: [libc::c_int; 5] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE];

/// Starts `program args` in its own session (`setsid`: it leads a new session and process
/// group, with no controlling terminal), stdin `/dev/null`, stdout and stderr appended to
/// the files given (created [`OUTPUT_MODE`]), in `cwd`, with `env` set over this process's
/// environment (its `PATH`, when given, is the one `program` is looked up on). The caller
/// waits on it with [`SpawnedChild::wait`]; the watcher uses this for the agent.
///
/// The program is resolved and checked, and `cwd` too, before any file is opened or
/// anything started. Errors name the program, never its arguments.
pub fn spawn_in_new_session(
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    stdout: &Path,
    stderr: &Path,
    env: &[(OsString, OsString)],
) -> Result<SpawnedChild, SpawnError> {
    let path_var = env.iter().rev().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone()).or_else(|| std::env::var_os("PATH"));
    let resolved = resolve_in(program.as_os_str(), path_var.as_deref()).map_err(|e| match e {
        Unresolved::NotFound => SpawnError::NotFound { program: program.to_path_buf() },
        Unresolved::NotExecutable(path) => SpawnError::NotExecutable { path },
    })?;
    match std::fs::metadata(cwd) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(SpawnError::Cwd { path: cwd.to_path_buf(), source: io::Error::from_raw_os_error(libc::ENOTDIR) }),
        Err(source) => return Err(SpawnError::Cwd { path: cwd.to_path_buf(), source }),
    }
    let (out, err) = (open_output(stdout)?, open_output(stderr)?);
    let mut command = Command::new(&resolved);
    command.arg0(program).args(args).current_dir(cwd).stdin(Stdio::null()).stdout(out).stderr(err).envs(env.iter().map(|(k, v)| (k, v)));
    // SAFETY: runs in the forked child before exec; setsid and signal are
    // async-signal-safe and the closure allocates nothing (a raw OS error holds no heap data).
    unsafe {
        command.pre_exec(|| {
            // A disposition ignored here (a hook ignores SIGTERM to finish its append) would
            // pass through exec: a detached child starts with the defaults instead.
            for signal in DEFAULTED_SIGNALS {
                libc::signal(signal, libc::SIG_DFL);
            }
            if libc::setsid() == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
        });
    }
    // spawn returns once the exec happened (or with the exec's error), so the pid below
    // already runs the program.
    let mut child = command.spawn().map_err(|source| SpawnError::Start { program: program.to_path_buf(), source })?;
    match identify_child(child.id()) {
        Ok(id) => Ok(SpawnedChild { id, child }),
        Err(source) => {
            // Unrecorded, it would run with nobody accountable for it: stop it and all it
            // started (it leads its own process group).
            // SAFETY: plain syscall on a pid this process has not reaped, so not reused.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
            Err(SpawnError::Unidentified { program: program.to_path_buf(), source })
        }
    }
}

/// Starts `program args` as [`spawn_in_new_session`] does, for a caller that never waits on
/// it (the launcher starting the watcher), and returns its name at once.
///
/// Not a double fork: the child stays this process's child, and a background thread reaps
/// it when it ends, so it is never left a zombie while this process lives; when this
/// process exits first, the child is adopted by init (or the nearest subreaper), which
/// reaps it. Keeping it as a child is what lets its start time be read without a race: no
/// one else can reap it, so its pid cannot be reused before it is named. A double fork
/// hands the grandchild to init at once, and a fast one could be reaped before it is named.
pub fn spawn_detached(
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    stdout: &Path,
    stderr: &Path,
    env: &[(OsString, OsString)],
) -> Result<ProcessId, SpawnError> {
    let SpawnedChild { id, mut child } = spawn_in_new_session(program, args, cwd, stdout, stderr, env)?;
    // If no thread can be had, the child is dropped unwaited: a zombie only until this
    // process exits, which for the launcher is at once.
    let _ = std::thread::Builder::new().name("abcd-reaper".into()).spawn(move || {
        let _ = child.wait();
    });
    Ok(id)
}

/// The host's name (`gethostname`), when it has one that is UTF-8.
pub fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, and gethostname writes at most that.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8(buf[..end].to_vec()).ok().filter(|n| !n.is_empty())
}

/// Whether any process holds `pid` (`kill(pid, 0)`): true while it runs or waits to be
/// reaped, and when it runs as another user (`EPERM`); false when no process has the pid,
/// and for a number beyond the OS's pid range. Says nothing of which process it is: see
/// [`liveness`] for that.
pub fn pid_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: kill with signal 0 only checks whether the pid exists.
    (unsafe { libc::kill(pid, 0) }) == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// This process's effective user id, the one the kernel checks file access against.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The signal that ended a child, when one did (None when it exited with a code).
pub fn exit_signal(status: &ExitStatus) -> Option<i32> {
    status.signal()
}

/// Ends this process at once with `SIGKILL`, as a kill from outside would: no destructor,
/// no buffered output flushed, no exit code of its own.
pub fn kill_this_process() {
    // SAFETY: kill and getpid have no preconditions; this ends the process at once.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
}

/// Ends this process by `signal`, as the signal would have ended it: its default action
/// restored and the signal unblocked first, and no core dump left behind (this process did
/// not crash; its child did). A signal whose default action does not end a process
/// (`SIGCHLD`, `SIGSTOP`, …) or a number that is no signal leaves it running, so then it
/// exits with `128 + signal`, as a shell reports a child the signal ended.
pub fn end_by_signal(signal: i32) -> ! {
    // SAFETY: setrlimit, signal(2) with SIG_DFL, sigprocmask and raise take plain values
    // and install no handler code; the sigset is initialised by sigemptyset before use.
    unsafe {
        let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
    std::process::exit(128 + signal)
}

/// Restores `SIGTERM`'s default action, for a process started by one that ignored it (a
/// StopFailure hook's detached children inherit the ignore through exec).
pub fn default_sigterm() {
    // SAFETY: signal(2) with SIG_DFL installs no handler code.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
}

/// Ignores `SIGTERM` from here on, so this process finishes what it is doing when told to
/// stop. Only for work that is bounded in time (a hook's append).
pub fn ignore_sigterm() {
    // SAFETY: signal(2) with SIG_IGN installs no handler code.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
    }
}

#[cfg(test)]
mod tests {
    /// This test process started after boot and before now, within the last day: the
    /// boot time and the tick rate are read right.
    #[test]
    fn a_process_start_reads_as_a_time() {
        let started = started_unix_seconds(&this_process().unwrap()).expect("linux tells");
        let now = crate::clock::now().unwrap().as_second();
        assert!(started <= now && started > now - 86_400, "started {started}, now {now}");
    }

    use super::*;
    use std::collections::HashMap;

    /// A process table for the walk: pid → (comm, ppid).
    fn table(rows: &[(u32, &str, u32)]) -> impl FnMut(u32) -> Option<(String, u32)> {
        let map: HashMap<u32, (String, u32)> = rows.iter().map(|(pid, comm, ppid)| (*pid, (comm.to_string(), *ppid))).collect();
        move |pid| map.get(&pid).cloned()
    }

    /// A chain: pid `start` (abcd) under `shells` shells (pids start+1, …) under a `node`
    /// host, under init.
    fn chain(start: u32, shells: usize) -> Vec<(u32, &'static str, u32)> {
        let mut rows = vec![(start, "abcd", start + 1)];
        let top = start + 1 + shells as u32;
        for i in 0..shells as u32 {
            rows.push((start + 1 + i, "bash", start + 2 + i));
        }
        rows.push((top, "node", 1));
        rows.push((1, "systemd", 0));
        rows
    }

    #[test]
    fn the_walk_skips_shells_to_the_host() {
        let rows = [(100, "abcd", 99), (99, "bash", 98), (98, "timeout", 97), (97, "claude", 50), (50, "sshd", 1)];
        assert_eq!(nearest_non_shell_in(100, table(&rows)), Some(97));
    }

    #[test]
    fn the_walk_names_a_non_shell_parent() {
        let rows = [(100, "abcd", 40), (40, "cargo", 30), (30, "bash", 1)];
        assert_eq!(nearest_non_shell_in(100, table(&rows)), Some(40));
    }

    #[test]
    fn the_walk_never_names_init_and_falls_back_to_the_parent() {
        let rows = [(100, "abcd", 99), (99, "sh", 98), (98, "bash", 1), (1, "tini", 0)];
        assert_eq!(nearest_non_shell_in(100, table(&rows)), Some(99));
    }

    #[test]
    fn the_walk_falls_back_to_the_parent_when_an_ancestor_cannot_be_read() {
        let rows = [(100, "abcd", 99), (99, "sh", 98)];
        assert_eq!(nearest_non_shell_in(100, table(&rows)), Some(99));
    }

    #[test]
    fn the_walk_has_nothing_without_a_parent() {
        assert_eq!(nearest_non_shell_in(100, table(&[])), None);
        assert_eq!(nearest_non_shell_in(100, table(&[(100, "abcd", 0)])), None);
        // A parent that is init itself is named: it is the only parent there is.
        assert_eq!(nearest_non_shell_in(100, table(&[(100, "abcd", 1), (1, "systemd", 0)])), Some(1));
    }

    #[test]
    fn the_walk_reaches_exactly_its_bound() {
        // The host is ancestor number ANCESTOR_WALK_MAX: found.
        let rows = chain(1000, ANCESTOR_WALK_MAX - 1);
        assert_eq!(nearest_non_shell_in(1000, table(&rows)), Some(1000 + ANCESTOR_WALK_MAX as u32));
        // One shell more puts it beyond the bound: the parent is named.
        let rows = chain(1000, ANCESTOR_WALK_MAX);
        assert_eq!(nearest_non_shell_in(1000, table(&rows)), Some(1001));
    }

    #[test]
    fn the_walk_ends_on_a_parent_loop() {
        let rows = [(100, "abcd", 99), (99, "sh", 98), (98, "bash", 99)];
        let mut reads = 0;
        let mut inner = table(&rows);
        let read = |pid| {
            reads += 1;
            inner(pid)
        };
        assert_eq!(nearest_non_shell_in(100, read), Some(99));
        assert_eq!(reads, ANCESTOR_WALK_MAX + 1);
    }

    #[test]
    fn every_shell_name_fits_comm() {
        // The kernel keeps 15 bytes of a name; a longer entry could never match.
        assert!(SHELLS.iter().all(|s| !s.is_empty() && s.len() <= 15));
        assert!(is_shell("bash") && is_shell("sudo") && !is_shell("node") && !is_shell("bash "));
    }

    #[test]
    fn this_process_stat_is_read() {
        let s = read_stat(std::process::id()).unwrap().unwrap();
        assert_eq!(s.ppid, std::os::unix::process::parent_id());
        assert!(!s.exited());
        assert_eq!(read_stat(0).unwrap(), None);
    }

    #[test]
    fn liveness_is_judged_from_what_was_read() {
        let p = ProcessId { pid: 42, start_ticks: 1000 };
        let stat = |state, start_ticks| Ok(Some(Stat { comm: "agent".into(), state, ppid: 1, start_ticks }));
        assert_eq!(judge(&p, stat('S', 1000)), Liveness::Alive);
        assert_eq!(judge(&p, stat('R', 1000)), Liveness::Alive);
        assert_eq!(judge(&p, stat('S', 1001)), Liveness::Gone);
        assert_eq!(judge(&p, stat('Z', 1000)), Liveness::Gone);
        assert_eq!(judge(&p, stat('X', 1000)), Liveness::Gone);
        assert_eq!(judge(&p, Ok(None)), Liveness::Gone);
        // A read that failed says nothing either way, and is_alive's yes-or-no keeps it
        // from reading as gone.
        let unreadable = ProcessError::Unreadable { pid: 42, source: io::Error::from_raw_os_error(libc::EMFILE) };
        assert_eq!(judge(&p, Err(unreadable)), Liveness::Unknown);
        assert_eq!(judge(&p, Err(ProcessError::NoProc)), Liveness::Unknown);
        assert_eq!(judge(&p, Err(ProcessError::Malformed { pid: 42 })), Liveness::Unknown);
        assert!(Liveness::Unknown.counts_as_alive());
        assert!(Liveness::Alive.counts_as_alive());
        assert!(!Liveness::Gone.counts_as_alive());
    }

    #[test]
    fn a_pid_beyond_pid_max_is_gone() {
        // Linux's pid_max is at most 2^22; u32::MAX is never a pid.
        let nobody = ProcessId { pid: u32::MAX, start_ticks: 1 };
        assert_eq!(liveness(&nobody), Liveness::Gone);
        assert!(!is_alive(&nobody));
        assert_eq!(try_identify(u32::MAX).unwrap(), None);
    }
}
