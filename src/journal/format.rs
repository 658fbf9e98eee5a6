//! The byte layout of one journal line and the hash rule (normative text:
//! `journal-format/SPEC.md`). Encoding and verification of a single line live here;
//! everything about sequences of lines lives in `scan`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The format version every v1 line carries in its `v` field.
pub const FORMAT_VERSION: u32 = 1;
/// A line, including its terminating `\n`, is at most this many bytes.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// A `kind` is at most this many bytes (dotted lowercase words).
pub const MAX_KIND_BYTES: usize = 64;
/// Hex characters in a BLAKE3-256 hash.
pub const HASH_HEX_LEN: usize = 64;
/// Every line ends with `,"hash":"<64 lowercase hex>"}` and then `\n`.
const HASH_SUFFIX_HEAD: &[u8] = b",\"hash\":\"";
const HASH_SUFFIX_TAIL: &[u8] = b"\"}";
/// Length of `,"hash":"<64 hex>"}` (the newline not included).
pub const HASH_SUFFIX_LEN: usize = HASH_SUFFIX_HEAD.len() + HASH_HEX_LEN + HASH_SUFFIX_TAIL.len();
/// BLAKE3 `derive_key` context for event hashes: domain separation, so no other BLAKE3
/// use (checkpoints, quarantine digests) can produce a value that passes as a line hash.
pub const EVENT_HASH_CONTEXT: &str = "abcd journal v1 event hash";
/// BLAKE3 `derive_key` context whose hash of the empty input is the genesis `prev`.
pub const GENESIS_PREV_CONTEXT: &str = "abcd journal v1 genesis prev";
/// The kind of event 0, and of no other event.
pub const GENESIS_KIND: &str = "journal.opened";
/// The kind `abcd journal repair` writes; one that names lost seqs is a gap record.
pub const REPAIRED_KIND: &str = "journal.repaired";
/// The rule a gap record's data breaks, in words (problem code `bad_gap`).
pub const GAP_RULE: &str = "a gap names lost_from (its own seq), lost_to (at least lost_from) and next_prev, all three or none";
/// `time` is always this long: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub const TIME_LEN: usize = 24;

/// A BLAKE3-256 digest, shown as 64 lowercase hex characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hash(pub [u8; 32]);

impl Hash {
    /// Parses exactly 64 lowercase hex characters; anything else is `None`.
    pub fn from_hex(text: &[u8]) -> Option<Hash> {
        if text.len() != HASH_HEX_LEN {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in text.chunks_exact(2).enumerate() {
            out[i] = (hex_digit(pair[0])? << 4) | hex_digit(pair[1])?;
        }
        Some(Hash(out))
    }

    pub fn to_hex(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(HASH_HEX_LEN);
        for b in self.0 {
            s.push(DIGITS[(b >> 4) as usize] as char);
            s.push(DIGITS[(b & 15) as usize] as char);
        }
        s
    }

    /// The fixed `prev` of every genesis event.
    pub fn genesis_prev() -> Hash {
        Hash(*blake3::Hasher::new_derive_key(GENESIS_PREV_CONTEXT).finalize().as_bytes())
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash({})", self.to_hex())
    }
}

impl Serialize for Hash {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Hash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Hash::from_hex(text.as_bytes()).ok_or_else(|| serde::de::Error::custom("not 64 lowercase hex characters"))
    }
}

/// The hash of a line's body: everything before `,"hash":"`.
pub fn hash_body(body: &[u8]) -> Hash {
    // The context key is derived once per process, not once per line.
    static KEYED: std::sync::LazyLock<blake3::Hasher> = std::sync::LazyLock::new(|| blake3::Hasher::new_derive_key(EVENT_HASH_CONTEXT));
    let mut hasher = KEYED.clone();
    hasher.update(body);
    Hash(*hasher.finalize().as_bytes())
}

/// Who wrote an event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Actor {
    /// The host session id, when the writer knows it.
    pub session: Option<String>,
    pub pid: u32,
    /// `abcd/<version>` of the writer.
    pub tool: String,
}

impl Actor {
    /// This process, with the host session id when one is known.
    pub fn this_process(session: Option<String>) -> Actor {
        Actor { session, pid: std::process::id(), tool: concat!("abcd/", env!("CARGO_PKG_VERSION")).to_string() }
    }
}

/// One verified event as read back from a line.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub seq: u64,
    pub time: jiff::Timestamp,
    pub kind: String,
    pub actor: Actor,
    pub data: serde_json::Value,
    pub prev: Hash,
    pub hash: Hash,
}

/// Seqs a repair could not keep, stood in for by a `journal.repaired` line at the first of
/// them: the line after it carries seq `lost_to + 1` and, as `prev`, `next_prev` (the hash
/// the lost line `lost_to` had), so the chain stays checkable across the hole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gap {
    pub lost_from: u64,
    pub lost_to: u64,
    pub next_prev: Hash,
}

/// The gap a `journal.repaired` line at `seq` names, if it names one; a line that names
/// part of one breaks the gap rule.
pub fn read_gap(seq: u64, data: &serde_json::Value) -> Result<Option<Gap>, LineFault> {
    let bad = LineFault::Field { field: "data", rule: GAP_RULE };
    let (from, to, next) = (data.get("lost_from"), data.get("lost_to"), data.get("next_prev"));
    if from.is_none() && to.is_none() && next.is_none() {
        return Ok(None);
    }
    let (Some(from), Some(to), Some(next)) = (from.and_then(|v| v.as_u64()), to.and_then(|v| v.as_u64()), next.and_then(|v| v.as_str()))
    else {
        return Err(bad);
    };
    let next_prev = Hash::from_hex(next.as_bytes()).ok_or(bad.clone())?;
    // The seq after the gap must exist: lost_to + 1 fits in 64 bits.
    if from != seq || to < from || to == u64::MAX {
        return Err(bad);
    }
    Ok(Some(Gap { lost_from: from, lost_to: to, next_prev }))
}

impl Event {
    /// Where the chain stands after this line: the seq and hash the next line's `seq - 1`
    /// and `prev` must name. A line's own, except for a gap record (see [`Gap`]).
    pub fn chain_position(&self) -> (u64, Hash) {
        match self.gap() {
            Some(gap) => (gap.lost_to, gap.next_prev),
            None => (self.seq, self.hash),
        }
    }

    /// The gap this line stands in for; `verify_line` has already checked the rule.
    pub fn gap(&self) -> Option<Gap> {
        if self.kind != REPAIRED_KIND {
            return None;
        }
        read_gap(self.seq, &self.data).ok().flatten()
    }
}

/// What a line's writer supplies; seq, prev and hash are the journal's to give.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvent {
    pub kind: String,
    pub actor: Actor,
    pub data: serde_json::Value,
}

/// Why one line is not a valid v1 event on its own (chain position is checked elsewhere).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineFault {
    #[error("the line does not end in a newline")]
    NoNewline,
    #[error("the line is longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    #[error("the line is not UTF-8")]
    NotUtf8,
    #[error("the line does not end in the hash field")]
    NoHashSuffix,
    #[error("the hash does not match the line's bytes")]
    HashMismatch,
    #[error("the line is not a v1 event object: {0}")]
    NotAnEvent(String),
    #[error("format version {0} is not 1")]
    Version(u32),
    #[error("field `{field}` is malformed: {rule}")]
    Field { field: &'static str, rule: &'static str },
}

/// Why an event cannot be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("the encoded event is {bytes} bytes, over the {MAX_LINE_BYTES}-byte line limit")]
    TooLong { bytes: usize },
    #[error("field `{field}` is malformed: {rule}")]
    Field { field: &'static str, rule: &'static str },
    #[error("the encoded line would not verify: {0}")]
    Unreadable(String),
}

#[derive(Serialize)]
struct WireBody<'a> {
    v: u32,
    seq: u64,
    time: &'a str,
    kind: &'a str,
    actor: &'a Actor,
    data: &'a serde_json::Value,
    prev: &'a Hash,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireEvent {
    v: u32,
    seq: u64,
    time: String,
    kind: String,
    actor: Actor,
    data: serde_json::Value,
    prev: Hash,
    hash: Hash,
}

/// Formats a timestamp the one way lines carry it: UTC, milliseconds, `Z`.
pub fn format_time(t: jiff::Timestamp) -> String {
    // jiff's strftime, only for years four digits cannot hold (no line carries one).
    crate::utc_time::format_utc_millis(t).unwrap_or_else(|| t.strftime("%Y-%m-%dT%H:%M:%S.%3fZ").to_string())
}

/// The current time, truncated to the milliseconds a line can carry. The wall clock, never
/// a test instant: a line's time records when it was written.
pub fn now_ms() -> jiff::Timestamp {
    let now = crate::clock::wall_now();
    jiff::Timestamp::from_millisecond(now.as_millisecond()).expect("a current time is in range")
}

fn parse_time(text: &str) -> Option<jiff::Timestamp> {
    // Exactly what the writer produces: milliseconds, `Z`, every field in range (no leap
    // second). A test holds this equal to "jiff parses it and formats it back the same".
    match crate::utc_time::parse_utc(text) {
        Some((t, Some(3))) if text.len() == TIME_LEN => Some(t),
        _ => None,
    }
}

/// A kind is dotted lowercase words: `checklist.item_added`.
pub fn kind_is_valid(kind: &str) -> bool {
    kind.len() <= MAX_KIND_BYTES
        && kind.contains('.')
        && kind.split('.').all(|w| !w.is_empty() && w.bytes().all(|c| c.is_ascii_lowercase() || c == b'_'))
}

/// Encodes one event as its full line (with `\n`) and returns the line and its hash.
pub fn encode_line(seq: u64, time: jiff::Timestamp, event: &NewEvent, prev: &Hash) -> Result<(Vec<u8>, Hash), EncodeError> {
    if !kind_is_valid(&event.kind) {
        return Err(EncodeError::Field { field: "kind", rule: "dotted lowercase words, at most 64 bytes" });
    }
    if (seq == 0) != (event.kind == GENESIS_KIND) {
        return Err(EncodeError::Field { field: "kind", rule: "journal.opened is event 0 and only event 0" });
    }
    if !event.data.is_object() {
        return Err(EncodeError::Field { field: "data", rule: "must be a JSON object" });
    }
    let time = format_time(time);
    let body = WireBody { v: FORMAT_VERSION, seq, time: &time, kind: &event.kind, actor: &event.actor, data: &event.data, prev };
    let mut line = serde_json::to_vec(&body).expect("serializing plain values cannot fail");
    // Drop the closing brace: the hash covers everything before `,"hash":"`.
    assert_eq!(line.pop(), Some(b'}'));
    let hash = hash_body(&line);
    line.extend_from_slice(HASH_SUFFIX_HEAD);
    line.extend_from_slice(hash.to_hex().as_bytes());
    line.extend_from_slice(HASH_SUFFIX_TAIL);
    line.push(b'\n');
    if line.len() > MAX_LINE_BYTES {
        return Err(EncodeError::TooLong { bytes: line.len() });
    }
    // Assert on the write side of the disk: a line the verifier would refuse (data nested
    // deeper than the parser's limit, say) must never be acknowledged, or the next
    // appender would take it for a torn tail and cut it. The hash was just computed over
    // these very bytes, so only the rest of the verifier's checks run again.
    if let Err(fault) = verify_line_hashed(&line, hash) {
        return Err(EncodeError::Unreadable(fault.to_string()));
    }
    Ok((line, hash))
}

/// An event's fields that do not depend on its place in the journal, serialized and
/// checked ahead of the batch it goes out in: `"kind":…,"actor":…,"data":…`. Group
/// commit's submitters encode their own events this way, in parallel and while the last
/// batch syncs, so the leader only frames them (seq, time, prev, hash) under the lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreEncoded {
    middle: Vec<u8>,
}

impl PreEncoded {
    /// The most bytes the line framed from this can take.
    pub fn line_bytes_max(&self) -> usize {
        self.middle.len() + FRAME_BYTES_MAX
    }
}

/// A well-formed time for the trial line; every time a line carries has this length.
const TRIAL_TIME: &str = "2000-01-01T00:00:00.000Z";
/// Bytes a line holds besides its pre-encoded middle, at most (a 20-digit seq).
const FRAME_BYTES_MAX: usize = b"{\"v\":1,\"seq\":".len()
    + MAX_SEQ_DIGITS
    + b",\"time\":\"\",".len()
    + TIME_LEN
    + b",\"prev\":\"\"".len()
    + HASH_HEX_LEN
    + HASH_SUFFIX_LEN
    + 1;

/// Serializes and checks an event for `encode_pre_encoded`. The write-side assertion of
/// `encode_line` runs here, once: the line this event makes with the widest seq (and the
/// fixed-width time and prev) must verify; a real line differs from it only in those
/// digits, so it verifies too and is no longer.
pub fn pre_encode(event: &NewEvent) -> Result<PreEncoded, EncodeError> {
    if !kind_is_valid(&event.kind) {
        return Err(EncodeError::Field { field: "kind", rule: "dotted lowercase words, at most 64 bytes" });
    }
    if event.kind == GENESIS_KIND {
        return Err(EncodeError::Field { field: "kind", rule: "journal.opened is event 0 and only event 0" });
    }
    if !event.data.is_object() {
        return Err(EncodeError::Field { field: "data", rule: "must be a JSON object" });
    }
    let mut middle = Vec::with_capacity(256);
    middle.extend_from_slice(b"\"kind\":");
    serde_json::to_writer(&mut middle, &event.kind).expect("serializing plain values cannot fail");
    middle.extend_from_slice(b",\"actor\":");
    serde_json::to_writer(&mut middle, &event.actor).expect("serializing plain values cannot fail");
    middle.extend_from_slice(b",\"data\":");
    serde_json::to_writer(&mut middle, &event.data).expect("serializing plain values cannot fail");
    let pre = PreEncoded { middle };
    // The trial line carries a placeholder hash; only the rest of the checks matter here.
    let placeholder = Hash([0; 32]);
    let (trial, _) = frame_line(u64::MAX, TRIAL_TIME, &pre, &placeholder, |_| placeholder);
    if trial.len() > MAX_LINE_BYTES {
        return Err(EncodeError::TooLong { bytes: trial.len() });
    }
    if let Err(fault) = verify_line_hashed(&trial, placeholder) {
        return Err(EncodeError::Unreadable(fault.to_string()));
    }
    Ok(pre)
}

/// The line (with `\n`) and hash of a pre-encoded event at `seq` (never 0: genesis is
/// written by `encode_line`). Byte for byte what `encode_line` makes of the same event.
pub fn encode_pre_encoded(seq: u64, time: jiff::Timestamp, pre: &PreEncoded, prev: &Hash) -> (Vec<u8>, Hash) {
    assert!(seq > 0, "a pre-encoded event is never genesis");
    let (line, hash) = frame_line(seq, &format_time(time), pre, prev, hash_body);
    assert!(line.len() <= MAX_LINE_BYTES, "no longer than the trial line pre_encode checked");
    (line, hash)
}

// The frame spells the version out.
const _: () = assert!(FORMAT_VERSION == 1);

fn frame_line(seq: u64, time: &str, pre: &PreEncoded, prev: &Hash, hash_of: impl FnOnce(&[u8]) -> Hash) -> (Vec<u8>, Hash) {
    debug_assert_eq!(time.len(), TIME_LEN);
    let mut line = Vec::with_capacity(pre.line_bytes_max());
    line.extend_from_slice(b"{\"v\":1,\"seq\":");
    line.extend_from_slice(seq.to_string().as_bytes());
    line.extend_from_slice(b",\"time\":\"");
    line.extend_from_slice(time.as_bytes());
    line.extend_from_slice(b"\",");
    line.extend_from_slice(&pre.middle);
    line.extend_from_slice(b",\"prev\":\"");
    line.extend_from_slice(prev.to_hex().as_bytes());
    line.push(b'"');
    let hash = hash_of(&line);
    line.extend_from_slice(HASH_SUFFIX_HEAD);
    line.extend_from_slice(hash.to_hex().as_bytes());
    line.extend_from_slice(HASH_SUFFIX_TAIL);
    line.push(b'\n');
    (line, hash)
}

/// Verifies one line on its own: framing, the byte-exact hash, and the field shapes.
/// `line` includes its `\n` when it has one.
pub fn verify_line(line: &[u8]) -> Result<Event, LineFault> {
    if line.len() > MAX_LINE_BYTES {
        return Err(LineFault::TooLong);
    }
    let Some(content) = line.strip_suffix(b"\n") else {
        return Err(LineFault::NoNewline);
    };
    let claimed = claimed_hash(content).ok_or(LineFault::NoHashSuffix)?;
    let body = &content[..content.len() - HASH_SUFFIX_LEN];
    if hash_body(body) != claimed {
        return Err(LineFault::HashMismatch);
    }
    verify_line_hashed(line, claimed)
}

/// `verify_line` for a line whose body is known to hash to `claimed`: every check but
/// the hash computation.
fn verify_line_hashed(line: &[u8], claimed: Hash) -> Result<Event, LineFault> {
    if line.len() > MAX_LINE_BYTES {
        return Err(LineFault::TooLong);
    }
    let Some(content) = line.strip_suffix(b"\n") else {
        return Err(LineFault::NoNewline);
    };
    if claimed_hash(content) != Some(claimed) {
        return Err(LineFault::NoHashSuffix);
    }
    let text = std::str::from_utf8(content).map_err(|_| LineFault::NotUtf8)?;
    let wire: WireEvent = serde_json::from_str(text).map_err(|e| LineFault::NotAnEvent(e.to_string()))?;
    if wire.v != FORMAT_VERSION {
        return Err(LineFault::Version(wire.v));
    }
    // The parsed `hash` field is the suffix itself unless the object names `hash` twice,
    // which serde refuses; the check keeps that reasoning honest.
    if wire.hash != claimed {
        return Err(LineFault::HashMismatch);
    }
    let time = parse_time(&wire.time)
        .ok_or(LineFault::Field { field: "time", rule: "RFC 3339 UTC with milliseconds, YYYY-MM-DDTHH:MM:SS.mmmZ" })?;
    if !kind_is_valid(&wire.kind) {
        return Err(LineFault::Field { field: "kind", rule: "dotted lowercase words, at most 64 bytes" });
    }
    if (wire.seq == 0) != (wire.kind == GENESIS_KIND) {
        return Err(LineFault::Field { field: "kind", rule: "journal.opened is event 0 and only event 0" });
    }
    if !wire.data.is_object() {
        return Err(LineFault::Field { field: "data", rule: "must be a JSON object" });
    }
    if wire.kind == REPAIRED_KIND {
        read_gap(wire.seq, &wire.data)?;
    }
    Ok(Event { seq: wire.seq, time, kind: wire.kind, actor: wire.actor, data: wire.data, prev: wire.prev, hash: wire.hash })
}

/// The chain facts of a line whose hash verifies, read from their fixed places
/// without parsing JSON: every line abcd writes starts `{"v":1,"seq":<n>,` and its
/// body ends `,"prev":"<64 hex>"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub seq: u64,
    pub prev: Hash,
    pub hash: Hash,
}

const FRAME_HEAD: &[u8] = b"{\"v\":1,\"seq\":";
const FRAME_PREV: &[u8] = b",\"prev\":\"";
/// Digits in a u64 at most.
const MAX_SEQ_DIGITS: usize = 20;

/// Checks a line's framing and hash and reads its seq and prev: the cheap check the
/// appender runs over the tail window. `verify_line` is the full check.
pub fn quick_frame(line: &[u8]) -> Result<Frame, LineFault> {
    if line.len() > MAX_LINE_BYTES {
        return Err(LineFault::TooLong);
    }
    let content = line.strip_suffix(b"\n").ok_or(LineFault::NoNewline)?;
    let hash = claimed_hash(content).ok_or(LineFault::NoHashSuffix)?;
    let body = &content[..content.len() - HASH_SUFFIX_LEN];
    if hash_body(body) != hash {
        return Err(LineFault::HashMismatch);
    }
    let malformed = LineFault::Field { field: "seq", rule: "the line starts {\"v\":1,\"seq\":<n>, and ends its body with prev" };
    let digits_and_rest = body.strip_prefix(FRAME_HEAD).ok_or(malformed.clone())?;
    let n_digits = digits_and_rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if n_digits == 0 || n_digits > MAX_SEQ_DIGITS || digits_and_rest.get(n_digits) != Some(&b',') {
        return Err(malformed);
    }
    let seq = std::str::from_utf8(&digits_and_rest[..n_digits]).ok().and_then(|d| d.parse().ok()).ok_or(malformed.clone())?;
    let prev_field_len = FRAME_PREV.len() + HASH_HEX_LEN + 1;
    if body.len() < prev_field_len {
        return Err(malformed);
    }
    let prev_field = &body[body.len() - prev_field_len..];
    let prev = (prev_field.starts_with(FRAME_PREV) && prev_field.ends_with(b"\""))
        .then(|| Hash::from_hex(&prev_field[FRAME_PREV.len()..FRAME_PREV.len() + HASH_HEX_LEN]))
        .flatten()
        .ok_or(malformed)?;
    Ok(Frame { seq, prev, hash })
}

/// True when a line ends in a well-formed hash suffix that matches its bytes: checks 1-4
/// of the format, whatever version or layout the rest has. Such a line was written whole;
/// no crash produces it.
pub fn hash_verifies(line: &[u8]) -> bool {
    let Some(content) = line.strip_suffix(b"\n") else { return false };
    line.len() <= MAX_LINE_BYTES
        && claimed_hash(content).is_some_and(|claimed| hash_body(&content[..content.len() - HASH_SUFFIX_LEN]) == claimed)
}

/// The first bytes of every genesis line.
const GENESIS_HEAD: &[u8] = b"{\"v\":1,\"seq\":0,";

/// True when `bytes` could be the start of a genesis line cut short: what a copy or
/// truncation that stopped inside event 0 leaves (abcd itself creates genesis whole).
pub fn is_genesis_prefix(bytes: &[u8]) -> bool {
    let n = bytes.len().min(GENESIS_HEAD.len());
    n > 0 && bytes[..n] == GENESIS_HEAD[..n] && !bytes.contains(&b'\n')
}

/// True when a line that fails holds, after its first byte, the start of a line that
/// verifies on its own up to the next newline: two lines merged by a damaged newline, or
/// garbage written over the start of a good line. Such bytes are damage, never torn.
pub fn holds_embedded_line(bytes: &[u8]) -> bool {
    embedded_line_at(bytes).is_some()
}

/// Where the first embedded line of `bytes` starts (see `holds_embedded_line`): the
/// salvaging repair keeps the line from there and moves only the bytes before it aside.
pub fn embedded_line_at(bytes: &[u8]) -> Option<usize> {
    crate::byte_search::sub_positions(bytes, FRAME_HEAD).filter(|&p| p > 0).find(|&p| {
        let rest = &bytes[p..];
        let line = match crate::byte_search::find_byte(b'\n', rest) {
            Some(i) => &rest[..=i],
            None => rest,
        };
        quick_frame(line).is_ok()
    })
}

/// The hash a line's suffix claims, if the line ends in a well-formed suffix.
pub fn claimed_hash(content: &[u8]) -> Option<Hash> {
    if content.len() < HASH_SUFFIX_LEN + 1 || content[0] != b'{' {
        return None;
    }
    let suffix = &content[content.len() - HASH_SUFFIX_LEN..];
    let (head, rest) = suffix.split_at(HASH_SUFFIX_HEAD.len());
    let (hex, tail) = rest.split_at(HASH_HEX_LEN);
    if head != HASH_SUFFIX_HEAD || tail != HASH_SUFFIX_TAIL {
        return None;
    }
    Hash::from_hex(hex)
}

#[cfg(test)]
mod tests {

    /// What `parse_time` took before it read the text itself: the shape, then jiff's parse,
    /// then the text formatted back must be the same.
    fn parse_time_by_jiff(text: &str) -> Option<jiff::Timestamp> {
        let b = text.as_bytes();
        let shape_ok = b.len() == TIME_LEN
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b'T'
            && b[13] == b':'
            && b[16] == b':'
            && b[19] == b'.'
            && b[23] == b'Z';
        let t: jiff::Timestamp = if shape_ok { text.parse().ok()? } else { return None };
        (t.strftime("%Y-%m-%dT%H:%M:%S.%3fZ").to_string() == text).then_some(t)
    }

    #[test]
    fn a_line_time_is_taken_exactly_when_jiff_reads_it_and_formats_it_back_the_same() {
        fn same(year: u16, month: u8, day: u8, hms: (u8, u8, u8), millis: u16, sep: bool) -> bool {
            let (h, m, s) = hms;
            let text = format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}{:03}Z",
                year % 10_000,
                month % 14,
                day % 33,
                h % 26,
                m % 62,
                s % 62,
                if sep { "." } else { "," },
                millis % 1000
            );
            parse_time(&text) == parse_time_by_jiff(&text)
        }
        quickcheck::QuickCheck::new().tests(50_000).quickcheck(same as fn(u16, u8, u8, (u8, u8, u8), u16, bool) -> bool);
        for text in ["2026-11-30T10:00:00.123Z", "0000-01-01T00:00:00.000Z", "0999-12-31T23:59:59.999Z", "2026-06-30T23:59:60.000Z"] {
            assert_eq!(parse_time(text), parse_time_by_jiff(text), "{text}");
        }
    }
    use super::*;
    use serde_json::json;

    fn event(kind: &str) -> NewEvent {
        NewEvent { kind: kind.into(), actor: Actor { session: None, pid: 7, tool: "abcd/test".into() }, data: json!({"a": 1}) }
    }

    #[test]
    fn a_pre_encoded_event_frames_to_the_same_bytes_as_encode_line() {
        let t = jiff::Timestamp::from_millisecond(1_700_000_000_123).unwrap();
        let prev = Hash([0xab; 32]);
        let events = [
            event("checklist.item_added"),
            NewEvent {
                kind: "session.started".into(),
                actor: Actor { session: Some("s-1 \"quoted\" \u{e9}\u{1F600}\n".into()), pid: u32::MAX, tool: "abcd/x".into() },
                data: json!({"text": "tab\there, \\ backslash, </script>, \u{0}", "n": -1.5e300, "nested": {"a": [1, null, true, {}]}}),
            },
            NewEvent { kind: "x.y".into(), actor: Actor { session: None, pid: 0, tool: String::new() }, data: json!({}) },
        ];
        for e in &events {
            let pre = pre_encode(e).unwrap();
            for seq in [1, 9, 10, 12345, u64::MAX] {
                let want = encode_line(seq, t, e, &prev).unwrap();
                assert_eq!(encode_pre_encoded(seq, t, &pre, &prev), want, "seq {seq}, {e:?}");
                assert!(want.0.len() <= pre.line_bytes_max());
            }
        }
    }

    #[test]
    fn pre_encode_refuses_what_encode_line_refuses() {
        assert!(matches!(pre_encode(&event("Bad.Kind")), Err(EncodeError::Field { field: "kind", .. })));
        assert!(matches!(pre_encode(&event(GENESIS_KIND)), Err(EncodeError::Field { field: "kind", .. })));
        let mut not_object = event("a.b");
        not_object.data = json!([1]);
        assert!(matches!(pre_encode(&not_object), Err(EncodeError::Field { field: "data", .. })));
        // Too deep for the verifier's parser: refused before it could be acknowledged.
        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!([deep]);
        }
        let mut too_deep = event("a.b");
        too_deep.data = json!({ "d": deep });
        assert!(matches!(pre_encode(&too_deep), Err(EncodeError::Unreadable(_))));
        assert!(matches!(encode_line(1, jiff::Timestamp::UNIX_EPOCH, &too_deep, &Hash([0; 32])), Err(EncodeError::Unreadable(_))));
        // Over the line limit with the widest seq.
        let mut long = event("a.b");
        long.data = json!({ "t": "x".repeat(MAX_LINE_BYTES) });
        assert!(matches!(pre_encode(&long), Err(EncodeError::TooLong { .. })));
    }

    fn t0() -> jiff::Timestamp {
        "2026-11-30T05:54:42.123Z".parse().unwrap()
    }

    #[test]
    fn encoded_line_verifies_and_round_trips() {
        let (line, hash) = encode_line(3, t0(), &event("checklist.item_added"), &Hash::genesis_prev()).unwrap();
        let ev = verify_line(&line).unwrap();
        assert_eq!(ev.seq, 3);
        assert_eq!(ev.hash, hash);
        assert_eq!(ev.time, t0());
        assert_eq!(ev.kind, "checklist.item_added");
        assert!(line.ends_with(b"\"}\n"));
    }

    #[test]
    fn the_line_layout_is_pinned() {
        let (line, _) = encode_line(0, t0(), &event("journal.opened"), &Hash::genesis_prev()).unwrap();
        let text = String::from_utf8(line).unwrap();
        assert!(text.starts_with(r#"{"v":1,"seq":0,"time":"2026-11-30T05:54:42.123Z","kind":"journal.opened","actor":{"session":null,"pid":7,"tool":"abcd/test"},"data":{"a":1},"prev":""#), "{text}");
    }

    #[test]
    fn every_single_bit_flip_is_caught() {
        let (line, _) = encode_line(5, t0(), &event("x.y"), &Hash::genesis_prev()).unwrap();
        for i in 0..line.len() {
            for bit in 0..8 {
                let mut bad = line.clone();
                bad[i] ^= 1 << bit;
                assert!(verify_line(&bad).is_err(), "flip at byte {i} bit {bit} verified");
            }
        }
    }

    #[test]
    fn missing_newline_and_uppercase_hex_are_refused() {
        let (line, _) = encode_line(1, t0(), &event("x.y"), &Hash::genesis_prev()).unwrap();
        assert_eq!(verify_line(&line[..line.len() - 1]), Err(LineFault::NoNewline));
        let upper = String::from_utf8(line.clone()).unwrap();
        let n = upper.len();
        let upper = format!("{}{}", &upper[..n - 67], upper[n - 67..].to_uppercase());
        assert!(verify_line(upper.as_bytes()).is_err());
    }

    #[test]
    fn the_line_limit_holds_on_both_sides() {
        let base = encode_line(1, t0(), &NewEvent { data: json!({"p": ""}), ..event("x.y") }, &Hash::genesis_prev()).unwrap().0.len();
        let fits = "a".repeat(MAX_LINE_BYTES - base);
        let (line, _) = encode_line(1, t0(), &NewEvent { data: json!({"p": fits}), ..event("x.y") }, &Hash::genesis_prev()).unwrap();
        assert_eq!(line.len(), MAX_LINE_BYTES);
        assert!(verify_line(&line).is_ok());
        let over = "a".repeat(MAX_LINE_BYTES - base + 1);
        let err = encode_line(1, t0(), &NewEvent { data: json!({"p": over}), ..event("x.y") }, &Hash::genesis_prev());
        assert_eq!(err, Err(EncodeError::TooLong { bytes: MAX_LINE_BYTES + 1 }));
    }

    #[test]
    fn quick_frame_agrees_with_the_full_check() {
        let prev = hash_body(b"something");
        let (line, hash) = encode_line(12345, t0(), &event("x.y"), &prev).unwrap();
        assert_eq!(quick_frame(&line), Ok(Frame { seq: 12345, prev, hash }));
        for i in 0..line.len() {
            let mut bad = line.clone();
            bad[i] ^= 0x04;
            assert!(quick_frame(&bad).is_err(), "flip at {i} passed the quick frame check");
        }
    }

    #[test]
    fn data_too_deep_to_read_back_is_refused_at_encode() {
        let deep = (0..130).fold(json!(0), |inner, _| json!([inner]));
        let err = encode_line(1, t0(), &NewEvent { data: json!({"deep": deep}), ..event("x.y") }, &Hash::genesis_prev());
        assert!(matches!(err, Err(EncodeError::Unreadable(_))), "{err:?}");
        let shallow = (0..100).fold(json!(0), |inner, _| json!([inner]));
        assert!(encode_line(1, t0(), &NewEvent { data: json!({"deep": shallow}), ..event("x.y") }, &Hash::genesis_prev()).is_ok());
    }

    #[test]
    fn genesis_kind_is_only_at_seq_zero() {
        assert!(encode_line(1, t0(), &event("journal.opened"), &Hash::genesis_prev()).is_err());
        assert!(encode_line(0, t0(), &event("x.y"), &Hash::genesis_prev()).is_err());
    }

    #[test]
    fn kinds_are_dotted_lowercase() {
        assert!(kind_is_valid("checklist.item_added"));
        assert!(!kind_is_valid("Checklist.x"));
        assert!(!kind_is_valid("nodot"));
        assert!(!kind_is_valid("a..b"));
        assert!(!kind_is_valid(&format!("a.{}", "b".repeat(MAX_KIND_BYTES))));
    }
}
