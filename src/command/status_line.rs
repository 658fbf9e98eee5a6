//! `abcd status-line`: the one line Claude Code shows under the prompt (docs/status-line.md).
//! The host runs it on every update of the conversation, so it reads small files only: the
//! repository's away record through its projection, and the working copy's open counts from
//! `session-context.json`. It starts no git: the repository journal is found through the
//! root-commit cache a hook or verb wrote, and without that cache nothing is shown.
//!
//! While the person is present and the plan is whole it shows nothing: the line is for what
//! the person must not miss (the away mode on, a window that ended and is not closed, a
//! degraded plan).

use jiff::Timestamp;

use super::CommandError;
use crate::away::{AwayState, Status};
use crate::journal::JournalError;
use crate::journal::storage::RealDisk;
use crate::places::{self, PlaceError};
use crate::secrets::{self, Bound};
use crate::store::Store;
use crate::store::reader::PlanStatus;

/// The most of the host's payload read (the host sends a few KiB); one byte more is refused.
pub const MAX_PAYLOAD_BYTES: usize = 256 << 10;
/// The line's length at most, in characters: a status bar is one terminal row.
pub const LINE_MAX_CHARS: usize = 160;

/// What the line is made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub away: AwayState,
    /// The repository's away record could not be read whole (damaged, unreadable).
    pub away_unreadable: bool,
    pub plan: PlanStatus,
}

/// The folder the payload names: `workspace.current_dir`, else `cwd`; absolute only.
pub fn folder_of(payload: &[u8]) -> Result<std::path::PathBuf, CommandError> {
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(CommandError::Refused(format!("the status line's payload is over {MAX_PAYLOAD_BYTES} bytes")));
    }
    let value: serde_json::Value =
        serde_json::from_slice(payload).map_err(|e| CommandError::Refused(format!("the status line's payload is not JSON ({e})")))?;
    let named = value.pointer("/workspace/current_dir").and_then(|v| v.as_str()).or_else(|| value.get("cwd").and_then(|v| v.as_str()));
    match named.map(std::path::PathBuf::from) {
        Some(p) if p.is_absolute() => Ok(p),
        _ => Err(CommandError::Refused("the status line's payload names no absolute workspace.current_dir or cwd".into())),
    }
}

/// What `folder` shows: `None` outside a working copy abcd manages (nothing to say there).
pub fn read(folder: &std::path::Path) -> Result<Option<Seen>, CommandError> {
    let (paths, scope) = match places::working_copy_journal(folder) {
        Ok(found) => found,
        Err(PlaceError::NotInWorkingCopy { .. } | PlaceError::NotManaged { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let plan = Store::new(places::open_scoped(RealDisk::shared(), paths, &scope)?).plan_status();
    let (away, away_unreadable) = match places::repository_journal_cached(folder)? {
        None => (AwayState::default(), false),
        Some((paths, scope)) => match Store::new(places::open_scoped(RealDisk::shared(), paths, &scope)?).current_state() {
            Ok(current) if current.degraded.is_none() => (current.state.away, false),
            Ok(_) => (AwayState::default(), true),
            Err(JournalError::Missing { .. }) => (AwayState::default(), false),
            Err(_) => (AwayState::default(), true),
        },
    };
    Ok(Some(Seen { away, away_unreadable, plan }))
}

/// The line for `seen` at `now`, times made readable by `show`; `None` when there is
/// nothing to say, or when the text carries a secret (a status bar never shows one, and
/// the cut to [`LINE_MAX_CHARS`] happens only after the scan).
pub fn line(seen: &Seen, now: Timestamp, show: &dyn Fn(Timestamp) -> String) -> Option<String> {
    let mut parts = Vec::new();
    let owed = seen.plan.open.working;
    let waiting = if seen.plan.open.waiting > 0 { format!(", {} waiting", seen.plan.open.waiting) } else { String::new() };
    match seen.away.window.as_ref().map(|w| (w, w.status(now))) {
        Some((w, Status::Away)) => {
            parts.push(format!("away until {}, set by {}", show(w.end), w.set_by));
            parts.push(format!("{owed} owed{waiting}"));
        }
        Some((w, Status::Lapsed)) => {
            parts.push(format!("away window ended {}, not closed: `abcd mode back`", show(w.end)));
            parts.push(format!("{owed} owed{waiting}"));
        }
        Some((_, Status::Present)) | None => {}
    }
    if seen.away_unreadable {
        parts.push("away record unreadable: `abcd mode`".into());
    }
    if seen.plan.degraded {
        parts.push("plan degraded: `abcd journal verify`".into());
    }
    if parts.is_empty() {
        return None;
    }
    secrets::one_line_after_scan(&format!("abcd: {}", parts.join(" · ")), Bound::Chars(LINE_MAX_CHARS)).ok()
}
