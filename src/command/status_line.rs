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
use crate::places::{Place, PlaceError};
use crate::refusal::{Refusal, RefusalKind as K};
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
        return Err(Refusal::new(K::BadValue, "status-line", format!("the status line's payload is over {MAX_PAYLOAD_BYTES} bytes")).into());
    }
    let value: serde_json::Value = serde_json::from_slice(payload)
        .map_err(|e| Refusal::new(K::BadValue, "status-line", format!("the status line's payload is not JSON ({e})")))?;
    let named = value.pointer("/workspace/current_dir").and_then(|v| v.as_str()).or_else(|| value.get("cwd").and_then(|v| v.as_str()));
    match named.map(std::path::PathBuf::from) {
        Some(p) if p.is_absolute() => Ok(p),
        _ => {
            Err(Refusal::new(K::BadValue, "status-line", "the status line's payload names no absolute workspace.current_dir or cwd").into())
        }
    }
}

/// What `place` shows: `None` outside a working copy abcd manages (nothing to say there).
pub fn read(place: &Place) -> Result<Option<Seen>, CommandError> {
    let (paths, scope) = match place.working_copy() {
        Ok(found) => found,
        Err(PlaceError::NotInWorkingCopy { .. } | PlaceError::NotManaged { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let plan = Store::new(place.open_scoped(RealDisk::shared(), paths, &scope)?).plan_status();
    let (away, away_unreadable) = match place.repository_cached()? {
        None => (AwayState::default(), false),
        Some((paths, scope)) => match Store::new(place.open_scoped(RealDisk::shared(), paths, &scope)?).current_state() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::projection::OpenCounts;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    /// Away until 20:00, set by `who`, with `working` items owed.
    fn away(who: &str, working: u64) -> Seen {
        let mut state = AwayState::default();
        let set = serde_json::from_value(serde_json::json!({"set_by": who, "working_copy": "/wc",
            "start": "2026-12-01T18:00:00Z", "end": "2026-12-01T20:00:00Z", "hold_pushes": false}))
        .unwrap();
        crate::away::fold_set(&mut state, set).unwrap();
        Seen { away: state, away_unreadable: false, plan: PlanStatus { open: OpenCounts { working, waiting: 0 }, degraded: false } }
    }

    fn show(t: Timestamp) -> String {
        t.to_string()
    }

    #[test]
    fn the_line_is_cut_to_its_cap_only_past_it() {
        let now = at("2026-12-01T19:00:00Z");
        let short = line(&away("Ana", 2), now, &show).unwrap();
        assert_eq!(short, "abcd: away until 2026-12-01T20:00:00Z, set by Ana · 2 owed");
        // The line without the name is this long; a name that makes it exactly the cap is
        // kept whole, one character more is cut.
        let bare = short.chars().count() - "Ana".len();
        let exact = "N".repeat(LINE_MAX_CHARS - bare);
        let whole = line(&away(&exact, 2), now, &show).unwrap();
        assert_eq!(whole.chars().count(), LINE_MAX_CHARS);
        assert!(whole.ends_with(" · 2 owed"), "{whole}");
        let over = line(&away(&format!("{exact}N"), 2), now, &show).unwrap();
        assert!(over.chars().count() <= LINE_MAX_CHARS, "{over}");
        assert!(!over.ends_with(" · 2 owed"), "cut: {over}");
    }

    #[test]
    fn a_line_carrying_a_secret_is_not_shown() {
        let now = at("2026-12-01T19:00:00Z");
        let mut seen = away("Ana", 1);
        seen.away.window.as_mut().unwrap().set_by = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB".into();
        assert_eq!(line(&seen, now, &show), None);
    }

    #[test]
    fn the_payloads_folder_is_read_up_to_its_cap() {
        let mut at_cap = br#"{"cwd":"/a","workspace":{"current_dir":"/b"}}"#.to_vec();
        at_cap.resize(MAX_PAYLOAD_BYTES, b' ');
        assert_eq!(folder_of(&at_cap).unwrap(), std::path::PathBuf::from("/b"), "workspace.current_dir first");
        let mut over = at_cap.clone();
        over.push(b' ');
        assert!(folder_of(&over).is_err());
        assert_eq!(folder_of(br#"{"cwd":"/a"}"#).unwrap(), std::path::PathBuf::from("/a"));
    }
}
