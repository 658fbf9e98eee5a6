//! When the person must hear (docs/notify.md): the hook side records `away.notified` under
//! the writer lock and starts `abcd __notify-run` detached; that supervisor runs the
//! person's command through `sh -c` with the summary as `$1` and kills it, with all it
//! started, at [`NOTIFY_RUN_BOUND`]. The hook never waits for either, and every failure
//! here is a warning: the hook's answer is never changed by a notification.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::away::notify::{self, AwayNotified, NOTIFY_RUN_BOUND, NotifyKind};
use crate::command::hook::away::AwayView;

/// The supervisor's log, beside the repository journal: one line per run, never the
/// command's own output (which may carry what the person would not have kept).
pub const NOTIFY_LOG_FILE: &str = "notify.log";
/// Past this size the log starts over.
pub const NOTIFY_LOG_MAX_BYTES: u64 = 64 << 10;
/// The shell the command line runs in.
pub const SHELL: &str = "/bin/sh";
/// The `$0` the command's shell sees.
pub const SHELL_NAME_ARG: &str = "abcd-notify";
/// The supervisor's hidden verb.
pub const SUPERVISOR_VERB: &str = "__notify-run";
/// How often the supervisor looks whether the command has ended.
const POLL: Duration = Duration::from_millis(20);

/// Test seam (test builds only): the bound in milliseconds, so a test of the cut need not
/// wait the real bound.
#[cfg(feature = "test-support")]
pub const BOUND_TEST_VAR: &str = "ABCD_TEST_NOTIFY_BOUND_MS";

/// The bound the supervisor enforces.
pub fn run_bound() -> Duration {
    #[cfg(feature = "test-support")]
    if let Some(ms) = std::env::var(BOUND_TEST_VAR).ok().and_then(|v| v.parse::<u64>().ok()) {
        return Duration::from_millis(ms);
    }
    NOTIFY_RUN_BOUND.unsigned_abs()
}

/// Runs the person's notify command for `kind` when the window has one and the kind is due;
/// a warning when something failed. `detail` is an error type, a count or titles only.
pub fn notify_if_due(
    view: &AwayView,
    kind: NotifyKind,
    detail: Option<&str>,
    root: &Path,
    session: Option<&str>,
    now: jiff::Timestamp,
) -> Option<String> {
    // The common path (no command, or notified within the hour) takes no lock.
    notify::command_due(&view.state, kind, now)?;
    let place = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "this repository".into());
    let summary = notify::summary(kind, &place, detail);
    let data = AwayNotified { kind, at: now, summary: summary.clone(), working_copy: root.display().to_string() };
    let (command, warning) = view.record_notified(data, session, now);
    let started = command.map(|c| start(view, root, &c, &summary)).and_then(Result::err);
    match (warning, started) {
        (None, None) => None,
        (w, s) => Some(w.into_iter().chain(s).collect::<Vec<_>>().join("; ")),
    }
}

/// Starts the supervisor detached, its own output to [`NOTIFY_LOG_FILE`].
fn start(view: &AwayView, root: &Path, command: &str, summary: &str) -> Result<(), String> {
    // The record just written names the repository journal; its folder holds the log.
    let folder = view.repository_folder().ok_or("the notify command was not run: the repository journal has no folder")?;
    let log = folder.join(NOTIFY_LOG_FILE);
    if std::fs::symlink_metadata(&log).is_ok_and(|m| m.len() > NOTIFY_LOG_MAX_BYTES) {
        let _ = crate::journal::storage::write_atomic(&crate::journal::storage::RealDisk, &log, b"", false);
    }
    let exe = std::env::current_exe().map_err(|e| format!("the notify command was not run: abcd's own path is unknown: {e}"))?;
    let args: Vec<OsString> = [SUPERVISOR_VERB, "--", command, summary].iter().map(OsString::from).collect();
    crate::platform::process::spawn_detached(&exe, &args, root, &log, &log, &[])
        .map(|_| ())
        .map_err(|e| format!("the notify command was not run: its supervisor could not start: {e}"))
}

/// How a supervised run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Supervised {
    Exited(i32),
    Signalled,
    /// Still running at the bound: killed, with its process group.
    Cut(Duration),
    NotStarted(String),
}

impl Supervised {
    pub fn words(&self) -> String {
        match self {
            Supervised::Exited(code) => format!("the notify command exited with {code}"),
            Supervised::Signalled => "the notify command was ended by a signal".into(),
            Supervised::Cut(bound) => {
                format!("the notify command was still running at its bound of {} ms and was killed", bound.as_millis())
            }
            Supervised::NotStarted(why) => format!("the notify command could not start: {why}"),
        }
    }
}

/// The supervisor: `/bin/sh -c <command> abcd-notify <summary>` in its own process group, no
/// input, its output discarded, killed with its group once `bound` has passed.
pub fn supervise(command: &str, summary: &str, bound: Duration) -> Supervised {
    // Started from a StopFailure hook, this process inherited SIGTERM ignored; the person's
    // command gets the default back.
    crate::platform::process::default_sigterm();
    let deadline = Instant::now() + bound;
    // The shell by its POSIX path, not looked up on the hook's PATH.
    let mut cmd = std::process::Command::new(SHELL);
    cmd.args(["-c", command, SHELL_NAME_ARG, summary])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    crate::platform::child::in_own_group(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Supervised::NotStarted(e.to_string()),
    };
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.code().map_or(Supervised::Signalled, Supervised::Exited),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))),
            Ok(None) | Err(_) => {
                crate::platform::child::kill_group(&mut child);
                return Supervised::Cut(bound);
            }
        }
    }
}

/// The Notification hook: while away, the host's notification type and one bounded,
/// scanned line of its message are recorded for `abcd mode back`; while present, nothing.
pub fn notification(
    root: &Path,
    away: &crate::command::hook::away::AwayOnce<'_>,
    session_id: Option<&str>,
    notification_type: &str,
    message: Option<&str>,
) -> Result<crate::command::hook::outcome::HookOutcome, crate::command::hook::outcome::HookError> {
    use crate::command::hook::outcome::{HookError, HookOutcome};
    let now = crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?;
    let record = away.get();
    let mut warnings: Vec<String> = record.warning.iter().cloned().collect();
    if record.holding(now).is_some() {
        let notification_type =
            if crate::away::error_type_ok(notification_type) { notification_type.to_string() } else { "unknown".to_string() };
        let data = notify::AwayNotificationRecorded {
            notification_type,
            line: message.and_then(notify::notification_line),
            working_copy: root.display().to_string(),
        };
        let session = session_id.filter(|id| crate::event::session_id_ok(id));
        warnings.extend(record.record_notification(data, session, now));
    }
    Ok(HookOutcome { reply: crate::host::HookReply::default(), warning: (!warnings.is_empty()).then(|| warnings.join("; ")) })
}
