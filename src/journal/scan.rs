//! Reading a journal back: the streaming verifier (every line, constant memory) and the
//! tail reader the appender uses (a bounded read from the end, never the whole file).
//! Both classify what they find with one rule: a torn tail is an unacknowledged write,
//! anything else that fails is corruption (see `journal-format/SPEC.md` §5).

use std::io;

use super::format::{self, Event, Hash, LineFault, MAX_LINE_BYTES};
use super::storage::StorageFile;

/// The most bytes one append writes in a single `write` (a group commit batch).
pub const MAX_BATCH_BYTES: usize = 256 * 1024;
/// A crashed append leaves at most one batch of torn bytes, plus the rest of the file
/// system block a size extension may have zero-filled. A longer bad tail is corruption.
pub const MAX_TORN_TAIL_BYTES: u64 = MAX_BATCH_BYTES as u64 + 4096;
/// The first tail read: the last dozen lines of an ordinary journal, every one of them
/// verified in full before an append chains onto the last.
const TAIL_FIRST_READ_BYTES: u64 = 4 * 1024;
/// The widest tail read: the torn region, the last good line and the one before it.
const TAIL_MAX_READ_BYTES: u64 = MAX_TORN_TAIL_BYTES + 2 * MAX_LINE_BYTES as u64 + 1;
/// Read size of the streaming verifier.
const SCAN_BUFFER_BYTES: usize = 256 * 1024;

/// What is wrong at the first bad place of a journal.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("{0}")]
    Line(LineFault),
    #[error("the line verifies but carries seq {found}")]
    SeqOutOfOrder { found: u64 },
    #[error("the line verifies but its prev does not name the hash of the line before it")]
    PrevMismatch,
}

/// Mid-file damage: a bad line with good lines after it, or a good line out of place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corruption {
    /// The seq the bad line should have had.
    pub seq: u64,
    /// Byte offset of the bad line's first byte.
    pub offset: u64,
    pub problem: Problem,
}

/// Bytes after the last verified line that a crashed append left; never acknowledged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    pub offset: u64,
    pub len: u64,
    /// Why the first line of the region failed.
    pub fault: LineFault,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every byte belongs to a verified line (an empty file is clean, with no events).
    Clean,
    TornTail(TornTail),
    Corrupt(Corruption),
}

/// The last verified line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub seq: u64,
    pub hash: Hash,
    /// Offset of the line's first byte.
    pub offset: u64,
    /// Offset just past its `\n`: where the next line starts.
    pub end: u64,
}

/// Where a line sits in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinePos {
    pub offset: u64,
    pub len: u64,
}

/// Where a scan starts: genesis, or just after a line already known good (a checkpoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartPoint {
    pub after: Option<Head>,
}

impl StartPoint {
    pub const GENESIS: StartPoint = StartPoint { after: None };
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanReport {
    pub head: Option<Head>,
    pub verdict: Verdict,
    pub file_len: u64,
    /// Verified events visited by this scan.
    pub events_seen: u64,
}

/// A visitor stopped the scan, or the file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScanError<E> {
    #[error("reading the journal failed: {0}")]
    Io(#[from] io::Error),
    #[error(transparent)]
    Visitor(E),
}

/// What a reader keeps of a line over the limit: its last bytes, enough to hold any line
/// embedded at its end (at most `MAX_LINE_BYTES`, and after the line's first byte), which
/// is all the torn-or-corrupt rule looks for in it (journal-format/SPEC.md §6.4 A).
pub const KEPT_OF_LONG_LINE_BYTES: usize = MAX_LINE_BYTES + 1;

/// One line as found in the file; `bytes` is the whole line, or for a line over the limit
/// (`too_long`) its last [`KEPT_OF_LONG_LINE_BYTES`].
struct RawLine<'a> {
    offset: u64,
    len: u64,
    bytes: &'a [u8],
    too_long: bool,
}

impl RawLine<'_> {
    fn verify(&self) -> Result<Event, LineFault> {
        if self.too_long {
            return Err(LineFault::TooLong);
        }
        format::verify_line(self.bytes)
    }
}

/// Reads lines with constant memory: a line over the limit is measured, and only its last
/// [`KEPT_OF_LONG_LINE_BYTES`] are kept.
struct LineReader<'f> {
    file: &'f dyn StorageFile,
    file_len: u64,
    buf: Vec<u8>,
    buf_offset: u64,
    start: usize,
    end: usize,
    line: Vec<u8>,
}

impl<'f> LineReader<'f> {
    fn new(file: &'f dyn StorageFile, file_len: u64, from: u64) -> Self {
        // No bigger than what is left to read: a reader of the last few lines (a projection
        // behind by some events) would otherwise fault in 64 pages of buffer on every read.
        let size = file_len.saturating_sub(from).min(SCAN_BUFFER_BYTES as u64) as usize;
        LineReader { file, file_len, buf: vec![0; size], buf_offset: from, start: 0, end: 0, line: Vec::new() }
    }

    fn next_line(&mut self) -> io::Result<Option<RawLine<'_>>> {
        let offset = self.buf_offset + self.start as u64;
        if offset >= self.file_len {
            return Ok(None);
        }
        self.line.clear();
        let mut len = 0u64;
        let mut too_long = false;
        loop {
            if self.start == self.end {
                self.buf_offset += self.end as u64;
                let want = (self.file_len - self.buf_offset).min(self.buf.len() as u64) as usize;
                let n = self.file.read_at(&mut self.buf[..want], self.buf_offset)?;
                self.start = 0;
                self.end = n;
                if n == 0 {
                    break;
                }
            }
            let avail = &self.buf[self.start..self.end];
            let (chunk, found) = match crate::byte_search::find_byte(b'\n', avail) {
                Some(i) => (&avail[..=i], true),
                None => (avail, false),
            };
            len += chunk.len() as u64;
            too_long |= len > MAX_LINE_BYTES as u64;
            if chunk.len() >= KEPT_OF_LONG_LINE_BYTES && too_long {
                self.line.clear();
                self.line.extend_from_slice(&chunk[chunk.len() - KEPT_OF_LONG_LINE_BYTES..]);
            } else {
                self.line.extend_from_slice(chunk);
                if self.line.len() > KEPT_OF_LONG_LINE_BYTES {
                    self.line.drain(..self.line.len() - KEPT_OF_LONG_LINE_BYTES);
                }
            }
            self.start += chunk.len();
            if found {
                break;
            }
        }
        Ok(Some(RawLine { offset, len, bytes: &self.line, too_long }))
    }
}

/// Streams the journal from `start`, verifying every line and its chain position and
/// handing each verified event to `visit`. Memory stays bounded by one line and the
/// read buffer, whatever the file's size.
pub fn scan<E>(
    file: &dyn StorageFile,
    start: StartPoint,
    mut visit: impl FnMut(&Event, LinePos) -> Result<(), E>,
) -> Result<ScanReport, ScanError<E>> {
    let file_len = file.len()?;
    let mut head = start.after;
    let mut events_seen = 0u64;
    let from = head.map_or(0, |h| h.end);
    let mut lines = LineReader::new(file, file_len, from);
    loop {
        let Some(raw) = lines.next_line()? else {
            return Ok(ScanReport { head, verdict: Verdict::Clean, file_len, events_seen });
        };
        let (expected_seq, expected_prev) = next_position(head);
        match raw.verify() {
            Ok(event) => {
                let problem = if event.seq != expected_seq {
                    Some(Problem::SeqOutOfOrder { found: event.seq })
                } else if event.prev != expected_prev {
                    Some(Problem::PrevMismatch)
                } else {
                    None
                };
                if let Some(problem) = problem {
                    let verdict = Verdict::Corrupt(Corruption { seq: expected_seq, offset: raw.offset, problem });
                    return Ok(ScanReport { head, verdict, file_len, events_seen });
                }
                let pos = LinePos { offset: raw.offset, len: raw.len };
                visit(&event, pos).map_err(ScanError::Visitor)?;
                events_seen += 1;
                let (seq, hash) = event.chain_position();
                head = Some(Head { seq, hash, offset: raw.offset, end: raw.offset + raw.len });
            }
            Err(fault) => {
                let first = BadLine {
                    offset: raw.offset,
                    seq: expected_seq,
                    // A line whose hash verifies was written whole (no crash forges a
                    // 256-bit hash): if it fails a later check it is damage or a newer
                    // format, never a torn tail.
                    embedded: format::holds_embedded_line(raw.bytes) || (!raw.too_long && format::hash_verifies(raw.bytes)),
                    genesis_prefix: !raw.too_long && format::is_genesis_prefix(raw.bytes),
                    fault,
                };
                let verdict = classify_bad_region(&mut lines, head.is_some(), first)?;
                return Ok(ScanReport { head, verdict, file_len, events_seen });
            }
        }
    }
}

/// One line as §6.1 of the format splits the file; `bytes` is the whole line, or for a
/// line over `MAX_LINE_BYTES` (`too_long`) its last [`KEPT_OF_LONG_LINE_BYTES`].
pub struct Piece<'a> {
    pub offset: u64,
    pub len: u64,
    pub bytes: &'a [u8],
    pub too_long: bool,
}

/// Hands every line of the file from byte `from` to `visit`, in order, with the memory
/// `scan` uses: the salvaging repair's walk, which goes on past damage.
pub fn for_each_piece<E>(file: &dyn StorageFile, from: u64, mut visit: impl FnMut(Piece<'_>) -> Result<(), E>) -> Result<(), ScanError<E>> {
    let file_len = file.len()?;
    let mut lines = LineReader::new(file, file_len, from);
    while let Some(raw) = lines.next_line()? {
        visit(Piece { offset: raw.offset, len: raw.len, bytes: raw.bytes, too_long: raw.too_long }).map_err(ScanError::Visitor)?;
    }
    Ok(())
}

fn next_position(head: Option<Head>) -> (u64, Hash) {
    match head {
        Some(h) => (h.seq + 1, h.hash),
        None => (0, Hash::genesis_prev()),
    }
}

/// The first line of a bad region, as the classifier needs it.
struct BadLine {
    offset: u64,
    seq: u64,
    embedded: bool,
    genesis_prefix: bool,
    fault: LineFault,
}

/// Decides whether the bytes from the first bad line on are a torn tail or corruption:
/// torn only when nothing after the last verified line verifies (not even a line merged
/// into a bad one) and the region is no longer than one crashed append can leave.
fn classify_bad_region(lines: &mut LineReader<'_>, have_genesis: bool, first: BadLine) -> io::Result<Verdict> {
    let corrupt = Verdict::Corrupt(Corruption { seq: first.seq, offset: first.offset, problem: Problem::Line(first.fault.clone()) });
    if first.embedded {
        return Ok(corrupt);
    }
    // abcd creates a journal with its genesis whole (temp file and rename). A file whose
    // first line fails is torn only if it is a genesis cut short; anything else there was
    // never a journal.
    if !have_genesis {
        let torn = first.genesis_prefix && lines.file_len - first.offset <= MAX_LINE_BYTES as u64;
        return Ok(if torn {
            Verdict::TornTail(TornTail { offset: first.offset, len: lines.file_len - first.offset, fault: first.fault })
        } else {
            corrupt
        });
    }
    while let Some(raw) = lines.next_line()? {
        if (!raw.too_long && format::hash_verifies(raw.bytes)) || format::holds_embedded_line(raw.bytes) {
            return Ok(corrupt);
        }
    }
    let region = lines.file_len - first.offset;
    if region > MAX_TORN_TAIL_BYTES {
        return Ok(corrupt);
    }
    Ok(Verdict::TornTail(TornTail { offset: first.offset, len: region, fault: first.fault }))
}

/// What the appender learns from the end of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tail {
    /// A zero-length file.
    Empty,
    /// The last verified line, and a torn region after it if there is one.
    Good { head: Head, torn: Option<TornTail> },
    /// The file holds only a genesis line cut short, and no event.
    TornGenesis(TornTail),
    /// The tail is damaged beyond what a crashed append leaves.
    Corrupt(Corruption),
}

/// Reads only the end of the file (4 KiB in the ordinary case, never more than
/// `TAIL_MAX_READ_BYTES`), verifies every complete line in it and checks that they chain
/// to the last good line. Only when that finds damage does it fall back to a full scan,
/// to name the exact place.
pub fn read_tail(file: &dyn StorageFile) -> io::Result<Tail> {
    Ok(read_tail_seen(file)?.0)
}

/// A line the tail read verified, and chained to the head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenLine {
    pub line: Head,
    pub kind: String,
}

/// [`read_tail`], with the lines it verified in its window when the tail is good, oldest
/// first and ending with the head: a reader that needs their kinds (`still_shows`) does
/// not read and verify them again.
pub fn read_tail_seen(file: &dyn StorageFile) -> io::Result<(Tail, Vec<SeenLine>)> {
    read_tail_window(file, TAIL_FIRST_READ_BYTES)
}

/// As [`read_tail`], with a first window of `first` bytes (at most `TAIL_MAX_READ_BYTES`):
/// every complete line in it is verified and chained, so a wider first window finds damage
/// that lies further back than the ordinary one reaches.
pub fn read_tail_from(file: &dyn StorageFile, first: u64) -> io::Result<Tail> {
    Ok(read_tail_window(file, first)?.0)
}

fn read_tail_window(file: &dyn StorageFile, first: u64) -> io::Result<(Tail, Vec<SeenLine>)> {
    let len = file.len()?;
    if len == 0 {
        return Ok((Tail::Empty, vec![]));
    }
    let mut window = first.clamp(1, TAIL_MAX_READ_BYTES).min(len);
    loop {
        let start = len - window;
        let mut buf = vec![0u8; window as usize];
        let n = file.read_at(&mut buf, start)?;
        if (n as u64) != window {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the journal shrank while its tail was read"));
        }
        match judge_window(&buf, start, len) {
            WindowJudgement::Good { head, torn, seen } => return Ok((Tail::Good { head, torn }, seen)),
            WindowJudgement::Damaged => return Ok((full_scan_verdict(file)?, vec![])),
            WindowJudgement::NeedMore if window < TAIL_MAX_READ_BYTES.min(len) => {
                window = (window * 4).min(TAIL_MAX_READ_BYTES).min(len);
            }
            WindowJudgement::NeedMore => return Ok((full_scan_verdict(file)?, vec![])),
        }
    }
}

enum WindowJudgement {
    Good { head: Head, torn: Option<TornTail>, seen: Vec<SeenLine> },
    Damaged,
    NeedMore,
}

/// Complete lines (with `\n`) of a window whose first byte is at file offset `start`;
/// when `start > 0` the first piece may be the end of an earlier line and is dropped.
fn window_lines(buf: &[u8], start: u64) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut line_start = 0usize;
    let mut first = start > 0;
    for nl in crate::byte_search::byte_positions(b'\n', buf) {
        if !first {
            out.push((start + line_start as u64, &buf[line_start..=nl]));
        }
        first = false;
        line_start = nl + 1;
    }
    out
}

fn judge_window(buf: &[u8], start: u64, len: u64) -> WindowJudgement {
    let lines = window_lines(buf, start);
    // The last line that fully verifies is the head; what follows it is the torn region.
    let Some((i, last)) = lines.iter().enumerate().rev().find_map(|(i, &(_, bytes))| format::verify_line(bytes).ok().map(|e| (i, e)))
    else {
        return if start == 0 { WindowJudgement::Damaged } else { WindowJudgement::NeedMore };
    };
    let (offset, bytes) = lines[i];
    let end = offset + bytes.len() as u64;
    let (head_seq, head_hash) = last.chain_position();
    let head = Head { seq: head_seq, hash: head_hash, offset, end };
    let torn_len = len - end;
    if torn_len > MAX_TORN_TAIL_BYTES {
        return WindowJudgement::Damaged;
    }
    let region = &buf[(end - start) as usize..];
    if region.split_inclusive(|&b| b == b'\n').any(|piece| format::holds_embedded_line(piece) || format::hash_verifies(piece)) {
        return WindowJudgement::Damaged;
    }
    let torn = (torn_len > 0).then(|| TornTail { offset: end, len: torn_len, fault: first_fault(region) });
    let mut seen = vec![SeenLine { line: head, kind: last.kind }];
    if last.seq == 0 {
        let genesis_ok = offset == 0 && last.prev == Hash::genesis_prev();
        return if genesis_ok { WindowJudgement::Good { head, torn, seen } } else { WindowJudgement::Damaged };
    }
    if i == 0 {
        return if offset == 0 { WindowJudgement::Damaged } else { WindowJudgement::NeedMore };
    }
    // Every complete line before the head in the window must verify as `scan` verifies
    // it, and chain: damage in the recent past refuses the append instead of being built
    // upon (readers would stop at it and never see what came after).
    let (mut want_seq, mut want_hash) = (last.seq, last.prev);
    for &(line_offset, bytes) in lines[..i].iter().rev() {
        match format::verify_line(bytes) {
            Ok(e) if want_seq > 0 && e.chain_position() == (want_seq - 1, want_hash) => {
                (want_seq, want_hash) = (e.seq, e.prev);
                let (seq, hash) = e.chain_position();
                let line = Head { seq, hash, offset: line_offset, end: line_offset + bytes.len() as u64 };
                seen.push(SeenLine { line, kind: e.kind });
            }
            _ => return WindowJudgement::Damaged,
        }
        if (want_seq == 0) != (line_offset == 0) || (want_seq == 0 && want_hash != Hash::genesis_prev()) {
            return WindowJudgement::Damaged;
        }
    }
    seen.reverse();
    WindowJudgement::Good { head, torn, seen }
}

/// True when the line `head` names (its offset and end) is in the file and verifies with
/// the seq and hash `head` records: the O(1) check behind checkpoints, projections and
/// the head anchor.
pub fn line_is_at(file: &dyn StorageFile, head: Head) -> io::Result<bool> {
    let len = head.end.saturating_sub(head.offset);
    if len == 0 || len > MAX_LINE_BYTES as u64 || head.end > file.len()? {
        return Ok(false);
    }
    let mut line = vec![0u8; len as usize];
    if file.read_at(&mut line, head.offset)? != line.len() {
        return Ok(false);
    }
    Ok(format::verify_line(&line).is_ok_and(|e| e.chain_position() == (head.seq, head.hash)))
}

/// The fault of the first line in a torn region.
fn first_fault(region: &[u8]) -> LineFault {
    let line = match crate::byte_search::find_byte(b'\n', region) {
        Some(i) => &region[..=i],
        None => region,
    };
    format::verify_line(line).err().unwrap_or(LineFault::NoNewline)
}

/// [`scan`] with nothing to visit: the verdict and head of the lines after `start`.
pub fn scan_all(file: &dyn StorageFile, start: StartPoint) -> io::Result<ScanReport> {
    scan(file, start, |_, _| Ok::<(), std::convert::Infallible>(())).map_err(|e| match e {
        ScanError::Io(e) => e,
        ScanError::Visitor(never) => match never {},
    })
}

fn full_scan_verdict(file: &dyn StorageFile) -> io::Result<Tail> {
    let report = scan_all(file, StartPoint::GENESIS)?;
    match (report.verdict, report.head) {
        (Verdict::Corrupt(c), _) => Ok(Tail::Corrupt(c)),
        (Verdict::Clean, Some(head)) => Ok(Tail::Good { head, torn: None }),
        (Verdict::TornTail(t), Some(head)) => Ok(Tail::Good { head, torn: Some(t) }),
        (Verdict::TornTail(t), None) => Ok(Tail::TornGenesis(t)),
        (Verdict::Clean, None) => Ok(Tail::Empty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::format::{Actor, NewEvent};
    use crate::journal::storage::BytesFile;

    fn line(seq: u64, prev: &Hash, text: &str) -> (Vec<u8>, Hash) {
        let (kind, data) = if seq == 0 {
            ("journal.opened", serde_json::json!({"journal_id": "ab".repeat(16), "scope": {"kind": "machine"}}))
        } else {
            ("future.widget_spun", serde_json::json!({ "text": text }))
        };
        let event = NewEvent { kind: kind.into(), actor: Actor { session: None, pid: 1, tool: "abcd/test".into() }, data };
        format::encode_line(seq, "2026-11-30T06:00:00Z".parse().unwrap(), &event, prev).unwrap()
    }

    /// A line of exactly `len` bytes whose hash matches its bytes: up to `MAX_LINE_BYTES`
    /// as abcd writes it, longer with its text grown and its hash computed over it (the
    /// encoder refuses such a line).
    fn line_of_len(seq: u64, prev: &Hash, len: usize) -> Vec<u8> {
        let base = line(seq, prev, "").0.len();
        let written = line(seq, prev, &"a".repeat(len.min(MAX_LINE_BYTES) - base)).0;
        let mut body = written[..written.len() - 1 - format::HASH_SUFFIX_LEN].to_vec();
        let at = body.windows(8).position(|w| w == b"\"text\":\"").unwrap() + 8;
        body.splice(at..at, std::iter::repeat_n(b'a', len - written.len().min(len)));
        let hash = format::hash_body(&body);
        [body, format!(",\"hash\":\"{}\"}}\n", hash.to_hex()).into_bytes()].concat()
    }

    fn verdict(bytes: Vec<u8>) -> Verdict {
        scan(&BytesFile(bytes), StartPoint::GENESIS, |_, _| Ok::<(), std::convert::Infallible>(())).unwrap().verdict
    }

    /// A line over the limit is searched for an embedded line in its last
    /// `KEPT_OF_LONG_LINE_BYTES` (SPEC §6.4 A): a line of `MAX_LINE_BYTES` that ends it,
    /// after one byte of garbage, needs every one of them. One byte longer, that piece is no
    /// line (too long), nothing verifies, and the region is torn.
    #[test]
    fn an_over_long_line_is_searched_for_a_line_embedded_at_its_end() {
        let (genesis, g) = line(0, &Hash::genesis_prev(), "");
        let at = genesis.len() as u64;
        let embedded = line_of_len(1, &g, MAX_LINE_BYTES);
        assert_eq!(embedded.len(), MAX_LINE_BYTES);
        let merged = [genesis.clone(), b"x".to_vec(), embedded.clone()].concat();
        assert_eq!(merged.len() - genesis.len(), MAX_LINE_BYTES + 1);
        assert_eq!(verdict(merged), Verdict::Corrupt(Corruption { seq: 1, offset: at, problem: Problem::Line(LineFault::TooLong) }));

        let over = line_of_len(1, &g, MAX_LINE_BYTES + 1);
        assert_eq!(over.len(), MAX_LINE_BYTES + 1);
        let torn = [genesis.clone(), b"x".to_vec(), over].concat();
        assert!(matches!(verdict(torn), Verdict::TornTail(TornTail { offset, fault: LineFault::TooLong, .. }) if offset == at));

        // Later lines of a bad region are searched too (§6.4 C): a short bad line, then
        // the long one holding the embedded line.
        let later = [genesis, b"x\n".to_vec(), b"y".repeat(1000), embedded].concat();
        assert_eq!(verdict(later), Verdict::Corrupt(Corruption { seq: 1, offset: at, problem: Problem::Line(LineFault::NoHashSuffix) }));
    }
}
