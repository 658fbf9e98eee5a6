//! A mirror's segments read as one chain (MIRROR.md §7 rule 2), one segment in memory at a
//! time: each segment's lines verified and chained onto the one before, and handed on. The
//! segments come through one `git cat-file --batch-command` child ([`Batch`]), whatever
//! their number.

use crate::git::objects::{Batch, GitError, TreeEntry};
use crate::journal::format::{self, Event};
use crate::journal::scan::{self, Head, StartPoint, Verdict};
use crate::journal::storage::BytesFile;

use super::{MirrorCommit, SEGMENT_MAX_BYTES, SEGMENT_MAX_LINES, redaction, segment_seq};

/// Where a walk over segments stands: the chain position the next line must follow, the
/// last line's own seq, hash and time, and the bytes walked.
#[derive(Clone, Debug, Default)]
pub struct Walk {
    pub position: Option<(u64, format::Hash)>,
    pub last: Option<(u64, format::Hash, jiff::Timestamp)>,
    pub bytes: u64,
    pub events: u64,
    /// Redaction records walked (MIRROR.md §11), the first one's seq, and the seq of one no
    /// line after it has confirmed yet (its hash is the next line's `prev`).
    pub redacted: u64,
    pub first_redacted: Option<u64>,
    pub unconfirmed: Option<u64>,
}

/// Why a segment breaks the rules; the words say where.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{0}")]
    Broken(String),
}

/// Verifies `segment` (named `name`) from byte `from` on, chained onto `walk`, handing each
/// event to `visit`. Bytes before `from` are ones the caller already holds as verified.
pub fn walk_segment(segment: &[u8], name: &str, from: usize, walk: &mut Walk, visit: &mut dyn FnMut(&Event)) -> Result<(), WalkError> {
    walk_segment_lines(segment, name, from, walk, &mut |event, _| visit(event))
}

/// [`walk_segment`], handing each event with its line's own bytes (its `LF` included), as
/// a restore copies them. A redaction record (§11) is checked in the chain and counted in
/// `walk`, never handed on: it is not an event.
pub fn walk_segment_lines(
    segment: &[u8],
    name: &str,
    from: usize,
    walk: &mut Walk,
    visit: &mut dyn FnMut(&Event, &[u8]),
) -> Result<(), WalkError> {
    let broken = |why: String| WalkError::Broken(format!("segment {name}: {why}"));
    let first_seq = segment_seq(name).ok_or_else(|| broken("not a segment name".into()))?;
    if segment.is_empty() || segment.last() != Some(&b'\n') {
        return Err(broken("it is empty or does not end with a line feed".into()));
    }
    if segment.len() > SEGMENT_MAX_BYTES {
        return Err(broken(format!("it is over {SEGMENT_MAX_BYTES} bytes")));
    }
    if walk.position.is_none() && from > 0 {
        return Err(broken("a walk that starts inside a segment needs the chain position before it".into()));
    }
    let mut lines = crate::byte_search::byte_positions(b'\n', &segment[..from]).count();
    let mut first = from == 0;
    let mut at = from;
    // Runs of journal lines, verified as a journal, between redaction records.
    while at < segment.len() {
        let record_at = redaction_at_or_after(segment, at);
        let end = record_at.unwrap_or(segment.len());
        if end > at {
            walk_run(&segment[at..end], at, first_seq, &mut first, &mut lines, walk, visit).map_err(broken)?;
        }
        let Some(r) = record_at else { break };
        let line_end = r + segment[r..].iter().position(|b| *b == b'\n').expect("a segment ends with a line feed") + 1;
        let record = redaction::decode(&segment[r..line_end]).map_err(|why| broken(format!("the redaction record at byte {r}: {why}")))?;
        let (expected_seq, expected_prev) = match walk.position {
            Some((seq, hash)) => (seq.wrapping_add(1), hash),
            None => (0, format::Hash::genesis_prev()),
        };
        let seq = record.seq;
        let fault = if seq == 0 {
            Some("stands for seq 0: the genesis names the journal and is never redacted".to_string())
        } else if first && seq != first_seq {
            Some("is the segment's first line, and its seq is not the seq the segment's name gives".to_string())
        } else if seq != expected_seq {
            Some(format!("follows seq {}, not seq {}", expected_seq.wrapping_sub(1), seq.wrapping_sub(1)))
        } else if record.prev != expected_prev {
            Some("names a prev that is not the hash of the line before it".to_string())
        } else {
            None
        };
        if let Some(why) = fault {
            return Err(broken(format!("the redaction record of seq {seq} {why}")));
        }
        first = false;
        lines += 1;
        if lines > SEGMENT_MAX_LINES {
            return Err(broken(format!("it holds more than {SEGMENT_MAX_LINES} lines")));
        }
        walk.position = Some((seq, record.hash));
        walk.unconfirmed = Some(seq);
        walk.redacted += 1;
        walk.first_redacted.get_or_insert(seq);
        at = line_end;
    }
    walk.bytes += (segment.len() - from) as u64;
    Ok(())
}

/// The offset of the first line at or after `at` (a line's start) that is a redaction record.
fn redaction_at_or_after(segment: &[u8], at: usize) -> Option<usize> {
    let mut start = at;
    while start < segment.len() {
        if redaction::is_record(&segment[start..]) {
            return Some(start);
        }
        start += segment[start..].iter().position(|b| *b == b'\n')? + 1;
    }
    None
}

/// Verifies `run` (journal lines only, starting at byte `base` of its segment) chained onto
/// `walk`. The words of an error say where, in the segment's bytes.
fn walk_run(
    run: &[u8],
    base: usize,
    first_seq: u64,
    first: &mut bool,
    lines: &mut usize,
    walk: &mut Walk,
    visit: &mut dyn FnMut(&Event, &[u8]),
) -> Result<(), String> {
    let after = walk.position.map(|(seq, hash)| Head { seq, hash, offset: 0, end: 0 });
    let mut fault = None;
    let report = scan::scan(&BytesFile(run.to_vec()), StartPoint { after }, |event, pos| {
        if *first && event.seq != first_seq {
            fault = Some(format!("its first line has seq {}, not the seq its name gives", event.seq));
            return Err(());
        }
        *first = false;
        *lines += 1;
        if *lines > SEGMENT_MAX_LINES {
            fault = Some(format!("it holds more than {SEGMENT_MAX_LINES} lines"));
            return Err(());
        }
        walk.last = Some((event.seq, event.hash, event.time));
        walk.events += 1;
        walk.unconfirmed = None;
        visit(event, &run[pos.offset as usize..(pos.offset + pos.len) as usize]);
        Ok(())
    });
    let report = match report {
        Ok(r) => r,
        Err(scan::ScanError::Visitor(())) => return Err(fault.unwrap_or_default()),
        Err(scan::ScanError::Io(e)) => return Err(e.to_string()),
    };
    match report.verdict {
        Verdict::Clean => {}
        Verdict::Corrupt(c) if c.offset == 0 && walk.unconfirmed.is_some() => {
            let seq = walk.unconfirmed.unwrap_or_default();
            return Err(format!("the redaction record of seq {seq} is not confirmed by the line after it: {}", c.problem));
        }
        Verdict::TornTail(t) => return Err(format!("the line at byte {} does not verify: {}", base as u64 + t.offset, t.fault)),
        Verdict::Corrupt(c) => return Err(format!("seq {} does not verify: {}", c.seq, c.problem)),
    }
    if let Some(h) = report.head {
        walk.position = Some((h.seq, h.hash));
    }
    Ok(())
}

/// Reads a segment's blob, held to the size limit.
pub fn read_segment(batch: &mut Batch<'_>, id: &str) -> Result<Vec<u8>, WalkError> {
    let mut bytes = None;
    each_segment(
        batch,
        std::slice::from_ref(&TreeEntry { mode: String::new(), kind: String::new(), id: id.into(), name: String::new() }),
        |_, b| {
            bytes = Some(b);
            Ok(())
        },
    )?;
    bytes.ok_or_else(|| WalkError::Broken(format!("segment blob {id} is missing")))
}

/// Reads `segments` in order through `batch`, handing each one's bytes to `each` (one
/// segment in memory at a time): a blob over the size limit, missing, or not a blob is
/// broken. An error from `each` ends the reading and is returned.
pub fn each_segment(
    batch: &mut Batch<'_>,
    segments: &[TreeEntry],
    mut each: impl FnMut(&TreeEntry, Vec<u8>) -> Result<(), WalkError>,
) -> Result<(), WalkError> {
    let ids: Vec<&str> = segments.iter().map(|e| e.id.as_str()).collect();
    let mut handed = 0;
    let read = batch.read_each(&ids, SEGMENT_MAX_BYTES, |k, object| {
        handed = k + 1;
        let entry = &segments[k];
        match object {
            Some(o) if o.kind == "blob" => each(entry, o.bytes),
            _ => Err(WalkError::Broken(format!("segment blob {} is missing", entry.id))),
        }
    });
    match read {
        Err(WalkError::Git(GitError::TooLarge { .. })) => {
            let id = segments.get(handed).map_or("", |e| e.id.as_str());
            Err(WalkError::Broken(format!("segment blob {id} is over {SEGMENT_MAX_BYTES} bytes")))
        }
        other => other,
    }
}

/// Every event of a mirror commit in order, verified as it goes, its segments read through
/// `batch`.
pub fn each_event(batch: &mut Batch<'_>, mirror: &MirrorCommit, visit: &mut dyn FnMut(&Event)) -> Result<Walk, WalkError> {
    let mut walk = Walk::default();
    each_segment(batch, &mirror.segments, |entry, bytes| walk_segment(&bytes, &entry.name, 0, &mut walk, visit))?;
    Ok(walk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::format::{Actor, NewEvent, encode_line};

    fn chain(n: u64) -> Vec<Vec<u8>> {
        let mut prev = format::Hash::genesis_prev();
        let t = jiff::Timestamp::from_second(1_800_000_000).unwrap();
        (0..n)
            .map(|seq| {
                let (kind, data) = if seq == 0 {
                    ("journal.opened", serde_json::json!({"journal_id": "0".repeat(32), "scope": {"kind": "machine"}}))
                } else {
                    ("test.note", serde_json::json!({"n": seq}))
                };
                let actor = Actor { session: None, pid: 1, tool: "abcd/test".into() };
                let (line, hash) = encode_line(seq, t, &NewEvent { kind: kind.into(), actor, data }, &prev).unwrap();
                prev = hash;
                line
            })
            .collect()
    }

    #[test]
    fn segments_chain_onto_each_other_and_a_walk_may_resume_inside_one() {
        let lines = chain(5);
        let (a, b) = (lines[..3].concat(), lines[3..].concat());
        let mut walk = Walk::default();
        walk_segment(&a, &super::super::segment_name(0), 0, &mut walk, &mut |_| {}).unwrap();
        walk_segment(&b, &super::super::segment_name(3), 0, &mut walk, &mut |_| {}).unwrap();
        assert_eq!((walk.events, walk.last.unwrap().0, walk.bytes), (5, 4, (a.len() + b.len()) as u64));

        // Resuming after the first two lines of `a` sees only the third.
        let mut resumed = Walk::default();
        walk_segment(&lines[..2].concat(), &super::super::segment_name(0), 0, &mut resumed, &mut |_| {}).unwrap();
        let mut seen = Vec::new();
        walk_segment(&a, &super::super::segment_name(0), lines[..2].concat().len(), &mut resumed, &mut |e| seen.push(e.seq)).unwrap();
        assert_eq!(seen, vec![2]);
    }

    #[test]
    fn a_segment_misnamed_cut_or_out_of_chain_is_broken() {
        let lines = chain(4);
        let mut walk = Walk::default();
        let err = walk_segment(&lines[..2].concat(), &super::super::segment_name(1), 0, &mut walk, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("first line has seq 0"), "{err}");

        let cut = &lines[..2].concat()[..lines[0].len() + 10];
        let err = walk_segment(cut, &super::super::segment_name(0), 0, &mut Walk::default(), &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("line feed"), "{err}");

        // Line 3 after line 1 skips seq 2.
        let mut walk = Walk::default();
        walk_segment(&lines[..2].concat(), &super::super::segment_name(0), 0, &mut walk, &mut |_| {}).unwrap();
        let err = walk_segment(&lines[3], &super::super::segment_name(3), 0, &mut walk, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("does not verify"), "{err}");

        // One byte of a line changed.
        let mut flipped = lines[..2].concat();
        let at = lines[0].len() + 40;
        flipped[at] ^= 1;
        let err = walk_segment(&flipped, &super::super::segment_name(0), 0, &mut Walk::default(), &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("does not verify"), "{err}");
    }
}
