//! One bounded child process: started in a process group of its own, its stdout capped,
//! its stderr kept up to a bound, killed (with whatever it started) when a deadline
//! passes. Every git child (built by `git::run`) and the forge's `gh` (`owed`) run
//! through here; each caller sets its own program, arguments, folder and environment,
//! and judges the exit code itself. A [`Session`] is the same bounds for a
//! child spoken to while it runs (`git cat-file --batch-command`): its stdin and stdout
//! stay open, and the deadline kills it wherever the conversation stands.

use std::io::{BufReader, Read};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// How long a killed child is waited for, to reap it.
pub const REAP_WAIT: Duration = Duration::from_millis(500);
/// The first nap while a child whose stdout closed is polled for its exit (doubling).
const EXIT_POLL_FIRST: Duration = Duration::from_micros(200);
/// The longest nap between those polls.
const EXIT_POLL_MAX: Duration = Duration::from_millis(20);

/// Why a child gave nothing usable.
#[derive(Debug, PartialEq, Eq)]
pub enum ChildFail {
    /// It could not be started.
    Spawn(String),
    /// The deadline passed (before it started, or while it ran): it was killed.
    Deadline,
    /// It printed more than the cap: it was killed.
    TooLong,
    /// Its output could not be read.
    Read,
}

/// A finished child: its exit code (None when a signal ended it), its stdout, and the
/// start of its stderr.
#[derive(Debug)]
pub struct Finished {
    pub code: Option<i32>,
    pub out: Vec<u8>,
    pub err: Vec<u8>,
}

/// Runs `cmd` as set up by the caller (program, arguments, folder, environment). This sets
/// the rest: stdin closed, or fed `input` and then closed; stdout piped and read up to
/// `out_cap` bytes (past that the child is killed); stderr kept up to `err_kept` bytes,
/// in whole lines, and the rest drained (discarded unread when `err_kept` is 0); a process group of its
/// own, so a kill at `deadline` reaches whatever it started.
pub fn run(mut cmd: Command, input: Option<Vec<u8>>, deadline: Instant, out_cap: usize, err_kept: usize) -> Result<Finished, ChildFail> {
    if Instant::now() >= deadline {
        return Err(ChildFail::Deadline);
    }
    cmd.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::piped()).stderr(if err_kept > 0 {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    in_own_group(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| ChildFail::Spawn(e.to_string()))?;
    let Some(mut stdout) = child.stdout.take() else {
        kill_group(&mut child);
        return Err(ChildFail::Read);
    };
    // The input is written on its own thread, so a child that prints before it has read
    // everything cannot deadlock against us; the pipe closes when the thread ends.
    if let Some(input) = input {
        let Some(mut stdin) = child.stdin.take() else {
            kill_group(&mut child);
            return Err(ChildFail::Read);
        };
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&input);
        });
    }
    // Each pipe is drained on a thread of its own so the deadline holds while the child
    // prints nothing and a chatty stderr never blocks it; a thread left blocked after a
    // kill ends when the pipe closes.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let ok = (&mut stdout).take(out_cap as u64 + 1).read_to_end(&mut out).is_ok();
        let _ = tx.send((ok, out));
    });
    let err_rx = child.stderr.take().map(|stderr| keep_stderr(stderr, err_kept));
    let out = match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok((true, out)) if out.len() <= out_cap => out,
        Ok((true, _)) => {
            kill_group(&mut child);
            return Err(ChildFail::TooLong);
        }
        Ok((false, _)) | Err(mpsc::RecvTimeoutError::Disconnected) => {
            kill_group(&mut child);
            return Err(ChildFail::Read);
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            kill_group(&mut child);
            return Err(ChildFail::Deadline);
        }
    };
    // The pipe closed, so the child is ending: poll its exit briefly, backing off.
    let mut nap = EXIT_POLL_FIRST;
    let code = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(nap.min(deadline.saturating_duration_since(Instant::now())));
                nap = (nap * 2).min(EXIT_POLL_MAX);
            }
            Ok(None) => {
                kill_group(&mut child);
                return Err(ChildFail::Deadline);
            }
            Err(_) => {
                kill_group(&mut child);
                return Err(ChildFail::Read);
            }
        }
    };
    let err =
        err_rx.map(|erx| erx.recv_timeout(deadline.saturating_duration_since(Instant::now())).unwrap_or_default()).unwrap_or_default();
    Ok(Finished { code, out, err })
}

/// A session's stdout is read in pieces of this size (a pipe's capacity on Linux).
const SESSION_READ_BUFFER: usize = 64 << 10;

/// A child spoken to while it runs: requests written to its stdin, answers read from its
/// stdout as they come, its stderr kept up to a bound. A watcher kills its process group
/// when the deadline passes (reads then end early and [`Session::timed_out`] says why);
/// dropping the session kills and reaps it.
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stop_watch: Option<mpsc::Sender<()>>,
    watch: Option<std::thread::JoinHandle<()>>,
    fired: Arc<AtomicBool>,
    err: Option<mpsc::Receiver<Vec<u8>>>,
}

/// Starts `cmd` as a [`Session`]: stdin and stdout piped, stderr kept up to `err_kept`
/// bytes in whole lines, a process group of its own, killed at `deadline`.
pub fn start(mut cmd: Command, deadline: Instant, err_kept: usize) -> Result<Session, ChildFail> {
    if Instant::now() >= deadline {
        return Err(ChildFail::Deadline);
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    in_own_group(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| ChildFail::Spawn(e.to_string()))?;
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
        kill_group(&mut child);
        return Err(ChildFail::Read);
    };
    let err = Some(keep_stderr(stderr, err_kept));
    let fired = Arc::new(AtomicBool::new(false));
    let (stop_watch, stopped) = mpsc::channel::<()>();
    let pid = child.id();
    let watch_fired = Arc::clone(&fired);
    // The watcher is joined before the child is reaped (`Drop`), so the group it kills is
    // never a reused pid's.
    let watch = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            watch_fired.store(true, Ordering::SeqCst);
            kill_pid_group(pid);
        }
    });
    Ok(Session {
        child,
        stdin: Some(stdin),
        stdout: BufReader::with_capacity(SESSION_READ_BUFFER, stdout),
        stop_watch: Some(stop_watch),
        watch: Some(watch),
        fired,
        err,
    })
}

impl Session {
    /// The child's stdin, None once closed.
    pub fn input(&mut self) -> Option<&mut ChildStdin> {
        self.stdin.as_mut()
    }

    /// The child's stdout, buffered.
    pub fn output(&mut self) -> &mut BufReader<ChildStdout> {
        &mut self.stdout
    }

    /// True when the deadline passed and the child was killed.
    pub fn timed_out(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// Closes stdin, kills the child (it has said all it will be asked for), and hands back
    /// the start of its stderr, for the one line an error names.
    pub fn stderr(mut self) -> Vec<u8> {
        self.stdin = None;
        self.stop();
        let err = self.err.take();
        err.and_then(|rx| rx.recv_timeout(REAP_WAIT).ok()).unwrap_or_default()
    }

    /// Kills and reaps the child once: a second kill could reach a reused pid's group.
    fn stop(&mut self) {
        self.stop_watch = None;
        if let Some(w) = self.watch.take() {
            let _ = w.join();
            kill_group(&mut self.child);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stdin = None;
        self.stop();
    }
}

/// Drains `stderr` on a thread, keeping its first `err_kept` bytes in whole lines.
fn keep_stderr(mut stderr: std::process::ChildStderr, err_kept: usize) -> mpsc::Receiver<Vec<u8>> {
    let (etx, erx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut stderr).take(err_kept as u64).read_to_end(&mut kept);
        // Whole lines only: a line cut at the bound could end inside a token, which its
        // reader would then scan in part. Each kept line is scanned where it is shown.
        if kept.len() >= err_kept {
            let whole = kept.iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1);
            kept.truncate(whole);
        }
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        let _ = etx.send(kept);
    });
    erx
}

/// Kills the process group `pid` leads.
fn kill_pid_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) takes no pointers. The caller has not reaped the child, so its
        // pid (and the group it leads) cannot have been reused.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

/// Starts `cmd`'s child as the leader of a process group of its own, so [`kill_group`]
/// reaches whatever it starts.
pub fn in_own_group(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0)
}

/// Kills the child's process group (and the child), then reaps it, waiting at most
/// [`REAP_WAIT`].
pub fn kill_group(child: &mut Child) {
    // The child is not reaped yet, so its pid (and the group it leads) is still its own.
    kill_pid_group(child.id());
    let _ = child.kill();
    let until = Instant::now() + REAP_WAIT;
    while Instant::now() < until {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
