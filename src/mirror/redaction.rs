//! The redaction record (MIRROR.md §11): what a mirror carries in the place of a line the
//! push's secret scan flags, once the person recorded the decision (`abcd mirror redact`,
//! event `mirror.line_redacted`). It names the line's seq, `prev` and `hash`, never its
//! text, and is padded with spaces to the line's own length, so a mirror's byte offsets
//! stay the journal's. Pure: bytes in, bytes out.

use crate::journal::format::Hash;

/// The kind of the journal event that records a person's decision to redact a line.
pub const LINE_REDACTED: &str = crate::event::MIRROR_LINE_REDACTED;

/// Every redaction record starts with these bytes; no journal line does (a line whose
/// first key is `redacted` is not an event: SPEC §3.2 allows no such field).
pub const RECORD_PREFIX: &[u8] = b"{\"redacted\":{\"seq\":";

/// The bytes between `hash`'s value and the padding.
const PAD_OPEN: &[u8] = b"\"},\"pad\":\"";
/// The bytes after the padding.
const RECORD_END: &[u8] = b"\"}\n";

/// A redaction record read back: the chain position it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub seq: u64,
    pub prev: Hash,
    pub hash: Hash,
}

/// The record for a line of `len` bytes (its `LF` included), or None when the line is too
/// short to hold one (never for a line that verifies: see MIRROR.md §11).
pub fn encode(record: &Record, len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(RECORD_PREFIX);
    out.extend_from_slice(record.seq.to_string().as_bytes());
    out.extend_from_slice(b",\"prev\":\"");
    out.extend_from_slice(record.prev.to_hex().as_bytes());
    out.extend_from_slice(b"\",\"hash\":\"");
    out.extend_from_slice(record.hash.to_hex().as_bytes());
    out.extend_from_slice(PAD_OPEN);
    let pad = len.checked_sub(out.len() + RECORD_END.len())?;
    out.resize(out.len() + pad, b' ');
    out.extend_from_slice(RECORD_END);
    Some(out)
}

/// True when `line` starts as a redaction record does (whether or not it is well formed).
pub fn is_record(line: &[u8]) -> bool {
    line.starts_with(RECORD_PREFIX)
}

/// Reads a redaction record (its `LF` included). It must be exactly the bytes [`encode`]
/// gives for its own fields and length: one spelling only, so no two records stand for the
/// same line.
pub fn decode(line: &[u8]) -> Result<Record, &'static str> {
    const BAD: &str = "it is not shaped as MIRROR.md §11 says";
    let rest = line.strip_prefix(RECORD_PREFIX).ok_or(BAD)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let seq: u64 = std::str::from_utf8(&rest[..digits]).ok().and_then(|s| s.parse().ok()).ok_or(BAD)?;
    let rest = rest[digits..].strip_prefix(b",\"prev\":\"".as_slice()).ok_or(BAD)?;
    let prev = rest.get(..64).and_then(Hash::from_hex).ok_or(BAD)?;
    let rest = rest[64..].strip_prefix(b"\",\"hash\":\"".as_slice()).ok_or(BAD)?;
    let hash = rest.get(..64).and_then(Hash::from_hex).ok_or(BAD)?;
    let record = Record { seq, prev, hash };
    // Leading zeros, uppercase hex, another padding byte: not the one spelling.
    if encode(&record, line.len()).as_deref() != Some(line) {
        return Err(BAD);
    }
    Ok(record)
}

/// True when `mirrored` (whole lines) is what a pusher makes of `journal`'s bytes: the same
/// bytes, but for lines in whose place a redaction record stands, of the same length, for
/// a line of `journal` that verifies with the record's seq, prev and hash.
pub fn stands_for(mirrored: &[u8], journal: &[u8]) -> bool {
    if mirrored == journal {
        return true;
    }
    if mirrored.len() != journal.len() {
        return false;
    }
    let theirs = journal.split_inclusive(|b| *b == b'\n');
    mirrored.split_inclusive(|b| *b == b'\n').zip(theirs).all(|(m, j)| {
        m == j
            || (m.len() == j.len()
                && decode(m).is_ok_and(|r| {
                    crate::journal::format::verify_line(j).is_ok_and(|e| (e.seq, e.prev, e.hash) == (r.seq, r.prev, r.hash))
                }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record { seq: 7, prev: Hash([1; 32]), hash: Hash([0xab; 32]) }
    }

    #[test]
    fn a_record_reads_back_at_every_length_it_fits() {
        let min = (0..400).find(|n| encode(&record(), *n).is_some()).unwrap();
        assert!(encode(&record(), min - 1).is_none());
        for len in [min, min + 1, 4096] {
            let bytes = encode(&record(), len).unwrap();
            assert_eq!(bytes.len(), len);
            assert!(is_record(&bytes));
            assert_eq!(decode(&bytes), Ok(record()));
            let text: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(text["redacted"]["seq"], 7, "it is JSON");
        }
    }

    /// MIRROR.md §11's sizes: a record of a one-digit seq is 180 bytes at least, and the
    /// shortest line that verifies (each field at its shortest) is 249: every line has room.
    #[test]
    fn every_line_that_verifies_has_room_for_its_record() {
        assert!(encode(&record(), 180).is_some());
        assert!(encode(&record(), 179).is_none());
        let prev = Hash([1; 32]).to_hex();
        let body = format!(
            "{{\"v\":1,\"seq\":7,\"time\":\"2026-11-30T06:00:00.000Z\",\"kind\":\"a.b\",\"actor\":{{\"pid\":0,\"tool\":\"\"}},\"data\":{{}},\"prev\":\"{prev}\""
        );
        let hash = crate::journal::format::hash_body(body.as_bytes()).to_hex();
        let line = format!("{body},\"hash\":\"{hash}\"}}\n");
        assert!(crate::journal::format::verify_line(line.as_bytes()).is_ok(), "{line}");
        assert_eq!(line.len(), 249);
    }

    #[test]
    fn only_the_one_spelling_is_a_record() {
        let good = encode(&record(), 300).unwrap();
        let text = String::from_utf8(good.clone()).unwrap();
        let other_spellings = [
            text.replacen("\"seq\":7", "\"seq\":07", 1).replacen("  ", " ", 1),
            text.replacen(&"ab".repeat(32), &"AB".repeat(32), 1),
            text.replacen("  ", " x", 1).replacen("  ", " ", 1),
            text.replacen("\"}\n", "\"}", 1) + " \n",
            text.trim_end().to_string(),
        ];
        for bad in other_spellings {
            assert!(decode(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
