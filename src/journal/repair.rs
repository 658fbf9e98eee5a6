//! `abcd journal repair`: the one operation that removes bytes from a journal, and only
//! after copying them to quarantine. Corruption is salvaged: only the damaged bytes move
//! aside, every later line whose own bytes verify is kept, and where seqs were lost a
//! `journal.repaired` gap record stands in for them so the chain stays checkable (format
//! §10). A journal that disagrees with its head anchor is accepted as it is, with a
//! `journal.repaired` saying so.
//! A path whose record names a journal it no longer holds (none, or only a cut first
//! line) gets a new journal whose first event after genesis records the loss.

use std::path::PathBuf;

use super::anchor::{Anchor, Holds, PathReplaced};
use super::append::{
    Appended, Journal, JournalError, WriterLock, poison, quarantine_range, read_genesis, sync_before_reading, truncate_durably,
};
use super::format::{self, Actor, Hash, LineFault, NewEvent};
use super::genesis::{self, JournalRepaired, RepairCause, Scope};
use super::scan::{self, Head, MAX_TORN_TAIL_BYTES, Piece, ScanError, StartPoint, Verdict};
use super::storage::{self, StorageFile};
use super::verify::{self, AnchorCheck, VerifyReport};

/// Damaged regions one repair moves aside; a journal with more is not salvaged line by line
/// (the person moves it aside and looks at it).
pub const MAX_DAMAGED_REGIONS: usize = 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepairOutcome {
    NothingToRepair,
    /// An unacknowledged torn tail was moved to quarantine and cut.
    TornTailCut {
        quarantine: PathBuf,
        bytes: u64,
    },
    /// Damaged bytes were moved to quarantine, every intact line was kept, and each region
    /// is recorded by a `journal.repaired` (in place of lost seqs, or at the end).
    Salvaged(Salvage),
    /// Damaged bytes were salvaged (or a torn tail cut: `salvage` is then `None`) from a
    /// journal at a path whose record named another journal, and in the same repair the
    /// journal was accepted as this path's, the finding on record (`detail`, `repaired`).
    RepairedAndAccepted {
        salvage: Option<Salvage>,
        torn: Option<(PathBuf, u64)>,
        detail: String,
        repaired: Appended,
    },
    /// The journal disagreed with its anchor (or the path's record) and was accepted.
    AnchorAccepted {
        detail: String,
        repaired: Appended,
    },
    /// The path's record named a journal the path no longer held (none, or only a cut
    /// first line, copied to `quarantine`): a new journal was started, its loss on record.
    StartedAfresh {
        detail: String,
        journal_id: String,
        quarantine: Option<PathBuf>,
        repaired: Appended,
    },
}

/// What a salvaging repair did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Salvage {
    /// The damaged regions, in file order, as they were in the journal before the repair.
    pub regions: Vec<SalvagedRegion>,
    /// Verified lines kept from the old file (the genesis included).
    pub kept_lines: u64,
    /// A torn tail after the last intact line (never acknowledged), moved aside too.
    pub torn: Option<(PathBuf, u64)>,
    /// The `journal.repaired` lines written, in file order.
    pub records: Vec<Appended>,
}

impl Salvage {
    /// Every seq lost, as inclusive ranges in order.
    pub fn lost(&self) -> Vec<(u64, u64)> {
        self.regions.iter().filter_map(|r| r.lost).collect()
    }
}

/// One run of damaged bytes and what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SalvagedRegion {
    /// Where the bytes were in the journal before the repair.
    pub offset: u64,
    pub len: u64,
    /// Their copy; `None` for a region of no bytes (lines a tool removed: only seqs lost).
    pub quarantine: Option<PathBuf>,
    /// The seqs lost with it (inclusive); `None` when the chain lost nothing there.
    pub lost: Option<(u64, u64)>,
    /// The seq of the `journal.repaired` that records it.
    pub record_seq: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("cannot repair {}: not even its first line verifies, so there is no chain to continue; move the file aside (abcd deletes nothing) and abcd starts a new journal", path.display())]
    NoGenesis { path: PathBuf },
    #[error("cannot repair {}: it holds more than {MAX_DAMAGED_REGIONS} separate damaged regions, which is not damage a line-by-line salvage should guess through; copy the file aside and look at it (`abcd journal verify` names the first bad line)", path.display())]
    TooDamaged { path: PathBuf },
    #[error("cannot start a new journal at {}: a journal named by --journal has no known scope; run `abcd journal repair` inside its working copy (or with --repo or --machine)", path.display())]
    NoScope { path: PathBuf },
}

/// `create`: the scope a new journal gets when the path's journal was lost and repair
/// starts afresh (`None` when unknown, as for a journal named by path).
pub fn repair(journal: &Journal, create: Option<&Scope>, session: Option<String>) -> Result<RepairOutcome, RepairError> {
    repair_noting(journal, create, session, None)
}

/// [`repair`], with `note` (what the caller did to the path first, such as a journal of
/// another scope set aside) added to the record of a fresh start, so the new journal says
/// why its path held nothing.
pub fn repair_noting(
    journal: &Journal,
    create: Option<&Scope>,
    session: Option<String>,
    note: Option<&str>,
) -> Result<RepairOutcome, RepairError> {
    let lock = journal.lock()?;
    let storage = journal.storage().clone();
    let paths = journal.paths().clone();
    let path = &paths.journal;
    // What is read must be what is on the disk: bytes a failed writer left only in the
    // page cache are made durable, or the failure is seen, before anything is kept. (A file
    // that cannot be opened is the verifier's to name.)
    if let Ok(file) = storage.open_rw(path) {
        sync_before_reading(file.as_ref(), path)?;
    }
    let report = verify::verify_chain(&*storage, path, journal.anchors())?;
    if report.head.is_none()
        && let Some(lost) = &report.replaced
    {
        return start_afresh(&lock, journal, create, session, lost, &report, note);
    }
    let file = storage.open_rw(path).map_err(|source| JournalError::Io { what: "opening", path: path.clone(), source })?;
    let Some(head) = report.head else {
        if let Verdict::TornTail(t) = report.verdict {
            // Only a genesis cut short: keep a copy, empty the file, and let the next
            // append create the journal anew.
            let quarantine = cut_torn_genesis(journal, file.as_ref(), &t)?;
            return Ok(RepairOutcome::TornTailCut { quarantine, bytes: t.len });
        }
        return Err(RepairError::NoGenesis { path: path.clone() });
    };
    let genesis = read_genesis(file.as_ref(), path).map_err(|_| RepairError::NoGenesis { path: path.clone() })?;
    let anchor = journal.anchors().and_then(|a| a.load(&*storage, &genesis.journal_id).ok().flatten());
    let acknowledged_past_head = anchor.filter(|a| a.seq > head.seq);
    let repaired_event = |data: JournalRepaired| repaired_event(session.clone(), data);
    // A path whose record names another journal: the repair that mends the bytes also
    // accepts the journal as this path's, so one run leaves a journal every reader takes
    // (docs/decisions.md, "One repair, one answer").
    let path_finding = report.replaced.as_ref().filter(|r| matches!(r.now, Holds::Journal(_))).map(ToString::to_string);
    let outcome = match report.verdict {
        Verdict::Corrupt(_) => RepairOutcome::Salvaged(salvage(journal, file.as_ref(), &genesis.journal_id, anchor, &repaired_event)?),
        // A damaged last line that was acknowledged reads as a torn tail; the anchor
        // says otherwise, so its seqs are named lost, in one repair.
        Verdict::TornTail(_) if acknowledged_past_head.is_some() => {
            RepairOutcome::Salvaged(salvage(journal, file.as_ref(), &genesis.journal_id, anchor, &repaired_event)?)
        }
        Verdict::TornTail(t) => {
            let q = quarantine_range(&*storage, file.as_ref(), &paths, "torn", head.seq + 1, t.offset, t.len)?;
            truncate_durably(file.as_ref(), path, t.offset)?;
            RepairOutcome::TornTailCut { quarantine: q.path, bytes: t.len }
        }
        Verdict::Clean => {
            let detail = match (&report.anchor, &report.replaced) {
                (AnchorCheck::Disagrees(d), _) => d.clone(),
                (_, Some(r)) => r.to_string(),
                _ => return Ok(RepairOutcome::NothingToRepair),
            };
            let data = JournalRepaired::accepted(report.file_len, anchor.map(|a| (a.seq, a.hash.to_hex())), detail.clone());
            let repaired = lock.append(file.as_ref(), head, &genesis.journal_id, &[repaired_event(data)])?[0];
            if let Some(anchors) = journal.anchors() {
                let _ = anchors.set_id_at_path(&*storage, path, &genesis.journal_id);
            }
            return Ok(RepairOutcome::AnchorAccepted { detail, repaired });
        }
    };
    let Some(detail) = path_finding else { return Ok(outcome) };
    // The file was rewritten (salvage) or cut: its head is read again, under the same lock.
    let file = storage.open_rw(path).map_err(JournalError::io("opening", path))?;
    let head = match scan::read_tail(file.as_ref()).map_err(JournalError::io("reading the tail of", path))? {
        scan::Tail::Good { head, torn: None } => head,
        // Checked clean before the rename (salvage) or cut to its last line, under this
        // lock: another tail is bytes written past the lock, which nothing is built on.
        _ => {
            return Err(JournalError::Io {
                what: "reading the repaired tail of",
                path: path.clone(),
                source: std::io::Error::other("it does not end with the line the repair left; run `abcd journal repair` again"),
            }
            .into());
        }
    };
    let anchor = journal.anchors().and_then(|a| a.load(&*storage, &genesis.journal_id).ok().flatten());
    let data = JournalRepaired::accepted(head.end, anchor.map(|a| (a.seq, a.hash.to_hex())), detail.clone());
    let repaired = lock.append(file.as_ref(), head, &genesis.journal_id, &[repaired_event(data)])?[0];
    // Only with the finding on record does the path name this journal.
    if let Some(anchors) = journal.anchors() {
        let _ = anchors.set_id_at_path(&*storage, path, &genesis.journal_id);
    }
    let (salvage, torn) = match outcome {
        RepairOutcome::Salvaged(s) => (Some(s), None),
        RepairOutcome::TornTailCut { quarantine, bytes } => (None, Some((quarantine, bytes))),
        _ => (None, None),
    };
    Ok(RepairOutcome::RepairedAndAccepted { salvage, torn, detail, repaired })
}

/// The path holds no journal (no file, an empty one, or only a first line cut short) and
/// its record names the one that was lost: the cut bytes go to quarantine, a new journal is
/// made, and its first event after genesis, `journal.repaired` with cause
/// `anchor_mismatch`, names the lost journal and what its anchor said. Only then does the
/// path's record name the new journal (journal-format/SPEC.md §10, §11).
fn start_afresh(
    lock: &WriterLock<'_>,
    journal: &Journal,
    create: Option<&Scope>,
    session: Option<String>,
    lost: &PathReplaced,
    report: &VerifyReport,
    note: Option<&str>,
) -> Result<RepairOutcome, RepairError> {
    let storage = journal.storage().clone();
    let paths = journal.paths();
    let path = &paths.journal;
    let Some(scope) = create else { return Err(RepairError::NoScope { path: path.clone() }) };
    let mut quarantine = None;
    if let Verdict::TornTail(t) = &report.verdict {
        let file = storage.open_rw(path).map_err(JournalError::io("opening", path))?;
        quarantine = Some(cut_torn_genesis(journal, file.as_ref(), t)?);
    }
    let (file, head, journal_id) = lock.create_afresh(scope)?;
    let mut detail = format!("{lost}; started journal {journal_id} here");
    if let Some(name) = quarantine.as_ref().and_then(|q| q.file_name()) {
        detail += &format!(" (the cut first line is in quarantine/{})", name.to_string_lossy());
    }
    if let Some(note) = note {
        detail += &format!("; {note}");
    }
    let data = JournalRepaired::accepted(head.end, lost.anchor.map(|a| (a.seq, a.hash.to_hex())), detail.clone());
    let repaired = lock.append(file.as_ref(), head, &journal_id, &[repaired_event(session, data)])?[0];
    if let Some(anchors) = journal.anchors() {
        let _ = anchors.set_id_at_path(&*storage, path, &journal_id);
    }
    Ok(RepairOutcome::StartedAfresh { detail, journal_id, quarantine, repaired })
}

/// A file holding only a genesis cut short: a synced copy to quarantine, then the file
/// emptied. Returns the copy's path.
fn cut_torn_genesis(journal: &Journal, file: &dyn StorageFile, torn: &scan::TornTail) -> Result<PathBuf, JournalError> {
    let paths = journal.paths();
    let q = quarantine_range(&**journal.storage(), file, paths, "torn", 0, torn.offset, torn.len)?;
    truncate_durably(file, &paths.journal, 0)?;
    Ok(q.path)
}

/// A `journal.repaired` event with `data`, by this process (and the host session, if any).
fn repaired_event(session: Option<String>, data: JournalRepaired) -> NewEvent {
    NewEvent {
        kind: genesis::JOURNAL_REPAIRED.into(),
        actor: Actor::this_process(session),
        data: serde_json::to_value(data).expect("plain data serializes"),
    }
}

/// A stretch of the old file the new one holds, or a record written in its place.
enum Part {
    Keep {
        offset: u64,
        len: u64,
    },
    /// The gap record of region `region` (at its first lost seq), chained onto `prev`.
    Gap {
        region: usize,
        prev: Hash,
    },
}

/// A damaged region as the walk finds it.
struct Damage {
    offset: u64,
    len: u64,
    /// The first bad line's problem, in words.
    problem: String,
    /// The seq the chain expected at its first byte.
    seq: u64,
    /// Some piece in it was written whole (its hash verifies, or it holds an embedded
    /// line): not what a crashed append leaves.
    whole_line_inside: bool,
    lost: Option<(u64, u64, Hash)>,
    /// For a tail lost after the last intact line: the anchor that names it acknowledged.
    anchor: Option<Anchor>,
}

/// The walk over the old file: which lines stay, which bytes go, which seqs were lost.
struct SalvagePlan {
    parts: Vec<Part>,
    regions: Vec<Damage>,
    /// Regions that lost no seq, recorded after the last line.
    at_end: Vec<usize>,
    /// A torn tail (never acknowledged), moved aside without a record.
    torn: Option<usize>,
    kept_lines: u64,
    /// Where the chain stands after the last kept line or gap record.
    next_seq: u64,
    next_prev: Hash,
}

struct Walk {
    plan: SalvagePlan,
    pending: Option<Damage>,
}

impl Walk {
    fn damage(&mut self, offset: u64, len: u64, problem: String, whole_line: bool) {
        match &mut self.pending {
            Some(d) => {
                assert_eq!(d.offset + d.len, offset, "a damaged region is one run of bytes");
                d.len += len;
                d.whole_line_inside |= whole_line;
            }
            None => {
                self.pending =
                    Some(Damage { offset, len, problem, seq: self.plan.next_seq, whole_line_inside: whole_line, lost: None, anchor: None })
            }
        }
    }

    fn keep(&mut self, offset: u64, len: u64) {
        match self.plan.parts.last_mut() {
            Some(Part::Keep { offset: o, len: l }) if *o + *l == offset => *l += len,
            _ => self.plan.parts.push(Part::Keep { offset, len }),
        }
        self.plan.kept_lines += 1;
    }

    /// Ends the pending damage (if any) before a kept line; `lost` when seqs are missing.
    fn close(&mut self, at: u64, lost: Option<(u64, u64, Hash)>) -> Result<(), TooMany> {
        let damage = match self.pending.take() {
            Some(d) => Some(d),
            // Lines a tool removed without leaving bytes: only the seqs are lost.
            None if lost.is_some() => Some(Damage {
                offset: at,
                len: 0,
                problem: "lines are missing here".into(),
                seq: self.plan.next_seq,
                whole_line_inside: false,
                lost: None,
                anchor: None,
            }),
            None => None,
        };
        let Some(mut damage) = damage else { return Ok(()) };
        if self.plan.regions.len() == MAX_DAMAGED_REGIONS {
            return Err(TooMany);
        }
        damage.lost = lost;
        let region = self.plan.regions.len();
        match lost {
            Some((from, to, next_prev)) => {
                assert_eq!(from, self.plan.next_seq, "a gap starts where the chain stands");
                self.plan.parts.push(Part::Gap { region, prev: self.plan.next_prev });
                (self.plan.next_seq, self.plan.next_prev) = (to + 1, next_prev);
            }
            None => self.plan.at_end.push(region),
        }
        self.plan.regions.push(damage);
        Ok(())
    }

    fn verified(&mut self, event: format::Event, offset: u64, len: u64) -> Result<(), TooMany> {
        let (want_seq, want_prev) = (self.plan.next_seq, self.plan.next_prev);
        if event.seq == want_seq && event.prev == want_prev {
            self.close(offset, None)?;
        } else if event.seq > want_seq && want_seq > 0 {
            // The line names the seqs before it and the hash the last of them had: the
            // gap record attests exactly that.
            self.close(offset, Some((want_seq, event.seq - 1, event.prev)))?;
        } else {
            // A line written whole that does not belong here: a repeat, another journal's.
            let problem =
                if event.seq == want_seq { scan::Problem::PrevMismatch } else { scan::Problem::SeqOutOfOrder { found: event.seq } };
            self.damage(offset, len, problem.to_string(), true);
            return Ok(());
        }
        self.keep(offset, len);
        (self.plan.next_seq, self.plan.next_prev) = {
            let (seq, hash) = event.chain_position();
            (seq + 1, hash)
        };
        Ok(())
    }

    fn piece(&mut self, piece: Piece<'_>) -> Result<(), TooMany> {
        let fault = if piece.too_long { Err(LineFault::TooLong) } else { format::verify_line(piece.bytes) };
        let fault = match fault {
            Ok(event) => return self.verified(event, piece.offset, piece.len),
            Err(fault) => fault,
        };
        // Of an over-long piece only its end is kept: the longest line that can be embedded.
        let kept_from = piece.offset + piece.len - piece.bytes.len() as u64;
        if let Some(at) = format::embedded_line_at(piece.bytes) {
            // Two lines merged by a damaged newline, or garbage over the start of a line:
            // only the bytes before the embedded line are damage.
            let at_file = kept_from + at as u64;
            self.damage(piece.offset, at_file - piece.offset, fault.to_string(), true);
            let rest = &piece.bytes[at..];
            let (offset, len) = (at_file, piece.offset + piece.len - at_file);
            return match format::verify_line(rest) {
                Ok(event) => self.verified(event, offset, len),
                Err(f) => {
                    self.damage(offset, len, f.to_string(), true);
                    Ok(())
                }
            };
        }
        let whole = !piece.too_long && format::hash_verifies(piece.bytes);
        self.damage(piece.offset, piece.len, fault.to_string(), whole);
        Ok(())
    }

    /// Ends the walk: damage after the last intact line is a lost tail when the anchor
    /// names seqs past it, a torn tail when it is what a crashed append leaves, and
    /// otherwise damage that cost no seq.
    fn finish(mut self, anchor: Option<Anchor>, file_len: u64) -> Result<SalvagePlan, TooMany> {
        let Some(tail) = self.pending.take() else { return Ok(self.plan) };
        let next_seq = self.plan.next_seq;
        match anchor.filter(|a| a.seq >= next_seq) {
            Some(a) => {
                self.pending = Some(Damage { anchor: Some(a), ..tail });
                self.close(file_len, Some((next_seq, a.seq, a.hash)))?;
            }
            None if !tail.whole_line_inside && tail.len <= MAX_TORN_TAIL_BYTES => {
                self.plan.regions.push(tail);
                self.plan.torn = Some(self.plan.regions.len() - 1);
            }
            None => {
                self.pending = Some(tail);
                self.close(file_len, None)?;
            }
        }
        Ok(self.plan)
    }
}

struct TooMany;

fn plan_salvage(file: &dyn StorageFile, path: &std::path::Path, anchor: Option<Anchor>) -> Result<SalvagePlan, RepairError> {
    let plan = SalvagePlan {
        parts: vec![],
        regions: vec![],
        at_end: vec![],
        torn: None,
        kept_lines: 0,
        next_seq: 0,
        next_prev: Hash::genesis_prev(),
    };
    let mut walk = Walk { plan, pending: None };
    let too_many = || RepairError::TooDamaged { path: path.to_owned() };
    match scan::for_each_piece(file, 0, |piece| walk.piece(piece)) {
        Ok(()) => {}
        Err(ScanError::Io(source)) => return Err(JournalError::Io { what: "reading", path: path.to_owned(), source }.into()),
        Err(ScanError::Visitor(TooMany)) => return Err(too_many()),
    }
    let file_len = file.len().map_err(|source| JournalError::Io { what: "inspecting", path: path.to_owned(), source })?;
    let plan = walk.finish(anchor, file_len).map_err(|TooMany| too_many())?;
    assert!(plan.kept_lines > 0 && matches!(plan.parts.first(), Some(Part::Keep { offset: 0, .. })), "the genesis verified, so it is kept");
    Ok(plan)
}

/// Moves every damaged region to quarantine, writes the kept lines and the records into a
/// new file beside the journal, and renames it over the journal (format §10).
fn salvage(
    journal: &Journal,
    file: &dyn StorageFile,
    journal_id: &str,
    anchor: Option<Anchor>,
    repaired_event: &dyn Fn(JournalRepaired) -> NewEvent,
) -> Result<Salvage, RepairError> {
    let storage = journal.storage().clone();
    let paths = journal.paths().clone();
    let path = &paths.journal;
    let plan = plan_salvage(file, path, anchor)?;
    // Quarantine first: nothing leaves the journal without a synced copy.
    let mut copies: Vec<Option<super::append::Quarantined>> = Vec::with_capacity(plan.regions.len());
    for (i, region) in plan.regions.iter().enumerate() {
        let label = if plan.torn == Some(i) { "torn" } else { "corrupt" };
        let copy = (region.len > 0)
            .then(|| quarantine_range(&*storage, file, &paths, label, region.seq, region.offset, region.len))
            .transpose()?;
        copies.push(copy);
    }
    let record = |i: usize| {
        let (region, copy) = (&plan.regions[i], copies[i].as_ref());
        JournalRepaired {
            cause: RepairCause::Corruption,
            from_offset: region.offset,
            to_offset: region.offset + region.len,
            lines: copy.map_or(0, |q| q.lines),
            quarantine_file: copy.and_then(|q| q.path.file_name()).map(|n| n.to_string_lossy().into_owned()),
            quarantine_blake3: copy.map(|q| q.blake3.clone()),
            anchor_seq: region.anchor.map(|a| a.seq),
            anchor_hash: region.anchor.map(|a| a.hash.to_hex()),
            problem: format!("seq {} at byte {}: {}", region.seq, region.offset, region.problem),
            lost_from: region.lost.map(|l| l.0),
            lost_to: region.lost.map(|l| l.1),
            next_prev: region.lost.map(|l| l.2.to_hex()),
        }
    };
    let dir = paths.dir();
    let tmp = storage::temp_path(path);
    let out = storage.create_new(&tmp).map_err(JournalError::io("creating", &tmp))?;
    // The seq of the record written for each region (none for the torn tail).
    let mut record_seq = vec![None; plan.regions.len()];
    let written = (|| -> Result<(Vec<Appended>, Head), JournalError> {
        let mut at = 0u64;
        let mut records = vec![];
        let mut last: Option<Head> = None;
        let time = format::now_ms();
        let mut write_record = |at: &mut u64, region: usize, seq: u64, prev: Hash| -> Result<Head, JournalError> {
            let (line, hash) = format::encode_line(seq, time, &repaired_event(record(region)), &prev).expect("a repair record fits a line");
            out.write_at(&line, *at).map_err(JournalError::io("writing", &tmp))?;
            let appended = Appended { seq, hash, offset: *at, end: *at + line.len() as u64 };
            records.push(appended);
            record_seq[region] = Some(seq);
            *at += line.len() as u64;
            let event = format::verify_line(&line).expect("abcd writes lines that verify");
            let (chain_seq, chain_hash) = event.chain_position();
            Ok(Head { seq: chain_seq, hash: chain_hash, offset: appended.offset, end: appended.end })
        };
        for part in &plan.parts {
            match *part {
                Part::Keep { offset, len } => {
                    storage::copy_range(file, out.as_ref(), offset, len, at).map_err(JournalError::io("copying", path))?;
                    at += len;
                    last = None;
                }
                Part::Gap { region, prev } => {
                    let seq = plan.regions[region].lost.expect("a gap record's region lost seqs").0;
                    last = Some(write_record(&mut at, region, seq, prev)?);
                }
            }
        }
        let (mut seq, mut prev) = (plan.next_seq, plan.next_prev);
        for &region in &plan.at_end {
            let head = write_record(&mut at, region, seq, prev)?;
            (seq, prev) = (head.seq + 1, head.hash);
            last = Some(head);
        }
        out.sync_data().map_err(|source| JournalError::SyncFailed { path: tmp.clone(), source })?;
        let head = match last {
            Some(head) => head,
            None => match scan::read_tail(out.as_ref()).map_err(JournalError::io("reading", &tmp))? {
                scan::Tail::Good { head, torn: None } => head,
                other => panic!("a salvaged journal ends in an intact line: {other:?}"),
            },
        };
        Ok((records, head))
    })();
    let (records, head) = match written {
        Ok(done) => done,
        Err(e) => {
            let _ = storage.remove_cache_file(&tmp);
            return Err(e.into());
        }
    };
    // Sanity before the rename: the new file verifies from genesis to the head just written.
    let check = scan::scan_all(out.as_ref(), StartPoint::GENESIS);
    assert!(matches!(check, Ok(ref r) if r.verdict == Verdict::Clean && r.head == Some(head)), "a salvaged journal verifies: {check:?}");
    storage.rename(&tmp, path).map_err(JournalError::io("renaming", &tmp))?;
    storage.sync_dir(dir).map_err(|source| {
        poison(path);
        JournalError::SyncFailed { path: dir.to_owned(), source }
    })?;
    journal.forget_known_tail();
    if let Some(anchors) = journal.anchors() {
        // Written after the rename was made durable, and synced: the old anchor names
        // offsets that moved, and must not come back after a crash.
        let _ = anchors.store_durably(&*storage, journal_id, Anchor::from(head));
    }
    let regions = plan
        .regions
        .iter()
        .zip(&copies)
        .zip(&record_seq)
        .filter_map(|((r, copy), seq)| {
            // The torn tail is the one region without a record.
            Some(SalvagedRegion {
                offset: r.offset,
                len: r.len,
                quarantine: copy.as_ref().map(|q| q.path.clone()),
                lost: r.lost.map(|l| (l.0, l.1)),
                record_seq: (*seq)?,
            })
        })
        .collect::<Vec<_>>();
    assert_eq!(regions.len(), records.len(), "one record per region but the torn tail");
    let torn = plan.torn.map(|i| (copies[i].as_ref().expect("a torn tail has bytes").path.clone(), plan.regions[i].len));
    Ok(Salvage { regions, kept_lines: plan.kept_lines, torn, records })
}
