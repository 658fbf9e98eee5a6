//! The context family: `context.injected` (abcd put text into a host session's context)
//! and its receipts `context.delivered`, `context.not_delivered` and `context.unknown`
//! (what the host's transcript says became of it).

use serde::{Deserialize, Serialize};

/// A marker is this many lowercase hex digits; the injected text carries it at its start
/// and at its end, so a transcript that holds it twice holds the whole text.
pub const MARKER_HEX_LEN: usize = 8;
/// The characters an injection's two tokens (`[abcd:<marker>]`, one before the text and a
/// space, one after a newline) add to its text.
pub const MARKED_EXTRA_CHARS: usize = 2 * ("[abcd:]".len() + MARKER_HEX_LEN) + 2;
/// A source names where the text went in: `session_start:<host's word>`, `user_prompt`
/// or `reinject`; at most this many bytes of `[a-z0-9_:-]`.
pub const SOURCE_MAX_BYTES: usize = 64;
/// A receipt's reason is one word of `[a-z_]`, at most this many bytes.
pub const REASON_MAX_BYTES: usize = 32;

/// `data` of `context.injected`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextInjected {
    pub session: String,
    pub source: String,
    pub marker: String,
    /// BLAKE3 of the text as injected (markers included), 64 lowercase hex.
    pub digest: String,
    /// The journal seq the checklist shown names; none when the text shows no checklist.
    #[serde(default)]
    pub covers_seq: Option<u64>,
    /// Characters injected, as the host counts them.
    pub chars: u64,
    /// The away window as the session has now been told of it; none: told it is present.
    #[serde(default)]
    pub away: Option<AwayShown>,
    /// The marker of an injection not delivered that this one sends again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reinjects: Option<String>,
}

/// What a session was told of an away window: a change to any of these is news.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwayShown {
    pub end: jiff::Timestamp,
    pub hold_pushes: bool,
    pub queued: u64,
}

/// `data` of `context.delivered`, `context.not_delivered` and `context.unknown`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextReceipt {
    pub session: String,
    pub marker: String,
    /// Why, in one word: `sent` (delivered); `cut`, `compacted`, `sent_without`
    /// (not delivered); `no_transcript`, `unreadable`, `not_found`, `out_of_window`,
    /// `over_budget` (unknown).
    pub reason: String,
}

pub fn marker_ok(marker: &str) -> bool {
    marker.len() == MARKER_HEX_LEN && marker.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

pub fn source_ok(source: &str) -> bool {
    (1..=SOURCE_MAX_BYTES).contains(&source.len())
        && source.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b':' | b'-'))
}

pub fn reason_ok(reason: &str) -> bool {
    (1..=REASON_MAX_BYTES).contains(&reason.len()) && reason.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_sources_and_reasons_hold_their_limits_on_both_sides() {
        assert!(marker_ok(&"a".repeat(MARKER_HEX_LEN)));
        assert!(!marker_ok(&"a".repeat(MARKER_HEX_LEN - 1)) && !marker_ok(&"a".repeat(MARKER_HEX_LEN + 1)));
        assert!(!marker_ok("ABCDEF0123") && !marker_ok("g123456789"));
        assert!(source_ok(&"s".repeat(SOURCE_MAX_BYTES)) && !source_ok(&"s".repeat(SOURCE_MAX_BYTES + 1)));
        assert!(source_ok("session_start:compact") && !source_ok("") && !source_ok("Session start"));
        assert!(reason_ok(&"r".repeat(REASON_MAX_BYTES)) && !reason_ok(&"r".repeat(REASON_MAX_BYTES + 1)));
        assert!(reason_ok("sent_without") && !reason_ok("sent without") && !reason_ok(""));
    }
}
