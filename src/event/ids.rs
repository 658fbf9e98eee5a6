//! Ids the events carry and abcd keys state by.

/// A host session id abcd keys state by: `[A-Za-z0-9_-]{1,128}` (SPEC §6). Anything
/// else is refused, so an id can never name a path or carry text into a reason.
pub const SESSION_ID_MAX_BYTES: usize = 128;

pub fn session_id_ok(id: &str) -> bool {
    (1..=SESSION_ID_MAX_BYTES).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
