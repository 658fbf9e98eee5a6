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
use super::format::{self, Actor, Hash, NewEvent};
use super::genesis::{self, JournalRepaired, RepairCause, Scope};
use super::proof::{self, CollectError, Collected, Fate, Plan, PlannedGap, Source, Step};
use super::scan::{self, Head, MAX_TORN_TAIL_BYTES, StartPoint, Verdict};
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
    /// Provable lines kept (the genesis included), those restored from elsewhere among them.
    pub kept_lines: u64,
    /// Lines restored from the extra lines handed in (this machine's mirror).
    pub restored_lines: u64,
    /// Seqs of lines that were out of chain order in the file and were moved, not lost.
    pub moved: Vec<u64>,
    /// The seq of the `anchor_mismatch` record of a rewrite the damage hid, if any.
    pub rewritten: Option<u64>,
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
    /// Their copy; `None` for a region of no bytes (lines a tool removed, or an
    /// acknowledged tail that is gone: only seqs lost).
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
    #[error("cannot repair {}: it holds more than {} lines, more than one salvage plan holds in memory; copy the file aside and look at it (`abcd journal verify` names the first bad line)", path.display(), super::proof::MAX_PLAN_LINES)]
    TooLarge { path: PathBuf },
    #[error("cannot start a new journal at {}: a journal named by --journal has no known scope; run `abcd journal repair` inside its working copy (or with --repo or --machine)", path.display())]
    NoScope { path: PathBuf },
}

/// `create`: the scope a new journal gets when the path's journal was lost and repair
/// starts afresh (`None` when unknown, as for a journal named by path).
pub fn repair(journal: &Journal, create: Option<&Scope>, session: Option<String>) -> Result<RepairOutcome, RepairError> {
    repair_with(journal, create, session, None, &[])
}

/// [`repair`], with `note` (what the caller did to the path first, such as a journal of
/// another scope set aside) added to the record of a fresh start, so the new journal says
/// why its path held nothing; and `extra`: lines of this journal kept elsewhere (this
/// machine's own mirror), verbatim with their `LF`, of which a salvage writes back each one
/// the chain proves fits.
pub fn repair_with(
    journal: &Journal,
    create: Option<&Scope>,
    session: Option<String>,
    note: Option<&str>,
    extra: &[Vec<u8>],
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
    let salvaged = |file: &dyn StorageFile| -> Result<RepairOutcome, RepairError> {
        Ok(RepairOutcome::Salvaged(salvage(journal, file, &genesis.journal_id, anchor, extra, &repaired_event)?))
    };
    // A path whose record names another journal: the repair that mends the bytes also
    // accepts the journal as this path's, so one run leaves a journal every reader takes
    // (docs/decisions.md, "One repair, one answer").
    let path_finding = report.replaced.as_ref().filter(|r| matches!(r.now, Holds::Journal(_))).map(ToString::to_string);
    let outcome = match report.verdict {
        Verdict::Corrupt(_) => salvaged(file.as_ref())?,
        // A damaged last line that was acknowledged reads as a torn tail, and a file cut
        // short at a line boundary reads clean; the anchor says otherwise, so the seqs it
        // vouched for are restored (from `extra`) or named lost, in one repair.
        Verdict::TornTail(_) | Verdict::Clean if acknowledged_past_head.is_some() => salvaged(file.as_ref())?,
        Verdict::TornTail(t) => {
            let q = quarantine_range(&*storage, file.as_ref(), &paths, "torn", head.seq + 1, t.offset, t.len)?;
            truncate_durably(file.as_ref(), path, t.offset)?;
            // A journal that also disagrees with its anchor is accepted in the same repair:
            // one repair, one answer.
            if let AnchorCheck::Disagrees(detail) = &report.anchor {
                let data = JournalRepaired::accepted(t.offset, anchor.map(|a| (a.seq, a.hash.to_hex())), detail.clone());
                let repaired = lock.append(file.as_ref(), head, &genesis.journal_id, &[repaired_event(data)])?[0];
                return Ok(RepairOutcome::AnchorAccepted {
                    detail: format!("{detail}; a torn tail of {} bytes was cut first, copy in {}", t.len, q.path.display()),
                    repaired,
                });
            }
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

/// A run of the old file's bytes that no kept line holds.
struct Region {
    offset: u64,
    len: u64,
    /// One past the seq of the line kept just before it in the file.
    seq: u64,
    /// The first thing wrong in it, in words.
    problem: String,
    /// Some of it was written whole: not what a crashed append leaves.
    written_whole: bool,
}

/// The file's bytes no kept line holds, as runs in file order, each with the first thing
/// wrong in it.
fn damaged_regions(collected: &Collected, plan: &Plan) -> Vec<Region> {
    let candidates = &collected.candidates;
    let mut kept: Vec<(u64, u64, u64)> = plan
        .steps
        .iter()
        .filter_map(|s| match *s {
            Step::Line(i) => match candidates[i].source {
                Source::File { offset, len } => Some((offset, len, candidates[i].position.0)),
                Source::Extra(_) => None,
            },
            Step::Gap(_) => None,
        })
        .collect();
    kept.sort_unstable();
    // Why each unkept piece is out, by offset.
    let mut why: Vec<(u64, String, bool)> = collected.bad.iter().map(|b| (b.offset, b.problem.clone(), b.written_whole)).collect();
    for (c, fate) in candidates.iter().zip(&plan.fates) {
        if let (Source::File { offset, .. }, Fate::Repeat | Fate::Unproven) = (c.source, fate) {
            let words = match fate {
                Fate::Repeat => format!("a repeat of seq {}, which is kept once", c.seq),
                _ => format!("a line of seq {} that neither chain reaches and no hole it alone fits", c.seq),
            };
            why.push((offset, words, true));
        }
    }
    why.sort_by_key(|w| w.0);
    let mut regions = vec![];
    let (mut at, mut seq_before) = (0u64, 0u64);
    // Regions and reasons both go in file order: one walk over each.
    let mut next_why = 0usize;
    let mut push = |from: u64, to: u64, seq: u64| {
        if to > from {
            while why.get(next_why).is_some_and(|w| w.0 < from) {
                next_why += 1;
            }
            let first = next_why;
            let mut written_whole = false;
            while let Some(w) = why.get(next_why).filter(|w| w.0 < to) {
                written_whole |= w.2;
                next_why += 1;
            }
            let problem = why[first..next_why].first().map_or_else(|| "damaged bytes".to_string(), |w| w.1.clone());
            regions.push(Region { offset: from, len: to - from, seq, problem, written_whole });
        }
    };
    for &(offset, len, seq) in &kept {
        push(at, offset, seq_before);
        at = at.max(offset + len);
        // One past the line kept just before the next region in the file (§10).
        seq_before = seq + 1;
    }
    push(at, collected.file_len, seq_before);
    regions
}

/// A `journal.repaired` the salvage writes.
enum RecordOf {
    /// A gap, for the region right after the line kept before it (if one starts there).
    Gap { gap: PlannedGap, region: Option<usize>, at: u64 },
    /// A region no gap names: it cost no seq.
    Region(usize),
    /// Lines moved into chain order.
    Moved { at: u64 },
    /// A rewrite the damage hid (rule 6).
    Rewritten,
}

/// Moves every damaged region to quarantine, writes the provable lines in chain order and
/// the records into a new file beside the journal, and renames it over the journal (format
/// §10). `extra` lines (this machine's mirror) fill holes they fit.
fn salvage(
    journal: &Journal,
    file: &dyn StorageFile,
    journal_id: &str,
    anchor: Option<Anchor>,
    extra: &[Vec<u8>],
    repaired_event: &dyn Fn(JournalRepaired) -> NewEvent,
) -> Result<Salvage, RepairError> {
    let storage = journal.storage().clone();
    let paths = journal.paths().clone();
    let path = &paths.journal;
    let too_large = |e: CollectError| match e {
        CollectError::Journal(e) => RepairError::Journal(e),
        CollectError::TooManyLines => RepairError::TooLarge { path: path.clone() },
    };
    let mut collected = Collected::from_file(file, path).map_err(too_large)?;
    collected.add_extra(extra).map_err(too_large)?;
    let candidates = &collected.candidates;
    let plan = proof::plan(candidates, anchor.map(proof::HeadAnchor::from));
    let regions = damaged_regions(&collected, &plan);
    if regions.len() > MAX_DAMAGED_REGIONS {
        return Err(RepairError::TooDamaged { path: path.clone() });
    }

    // Which record names which region: a gap takes the region that starts right after the
    // line kept before it; the rest are recorded at the end, but for a torn tail.
    let mut named = vec![false; regions.len()];
    let mut records: Vec<RecordOf> = vec![];
    let mut end_of_previous = 0u64;
    for step in &plan.steps {
        match *step {
            Step::Line(i) => {
                if let Source::File { offset, len } = candidates[i].source {
                    end_of_previous = offset + len;
                }
            }
            Step::Gap(gap) => {
                // Regions are in file order: found by offset in log time, however many gaps.
                let region = regions.binary_search_by_key(&end_of_previous, |r| r.offset).ok().filter(|&r| !named[r]);
                if let Some(r) = region {
                    named[r] = true;
                }
                records.push(RecordOf::Gap { gap, region, at: end_of_previous });
            }
        }
    }
    let torn = regions.len().checked_sub(1).filter(|&last| {
        let r = &regions[last];
        !named[last] && r.offset + r.len == collected.file_len && !r.written_whole && r.len <= MAX_TORN_TAIL_BYTES
    });
    for (r, _) in regions.iter().enumerate().filter(|(r, _)| !named[*r] && torn != Some(*r)) {
        records.push(RecordOf::Region(r));
    }
    if let Some(&first) = plan.moved.first() {
        let at = plan.steps.iter().find_map(|s| match *s {
            Step::Line(i) if candidates[i].seq == first => match candidates[i].source {
                Source::File { offset, .. } => Some(offset),
                Source::Extra(_) => None,
            },
            _ => None,
        });
        records.push(RecordOf::Moved { at: at.expect("a moved line is in the file") });
    }
    if plan.rewritten {
        records.push(RecordOf::Rewritten);
    }

    // Quarantine first: nothing leaves the journal without a synced copy.
    let mut copies: Vec<super::append::Quarantined> = Vec::with_capacity(regions.len());
    for (i, region) in regions.iter().enumerate() {
        let label = if torn == Some(i) { "torn" } else { "corrupt" };
        copies.push(quarantine_range(&*storage, file, &paths, label, region.seq, region.offset, region.len)?);
    }
    let file_len = collected.file_len;
    let data_of = |record: &RecordOf| -> JournalRepaired {
        let of_region = |r: usize, lost: Option<PlannedGap>| {
            let (region, copy) = (&regions[r], &copies[r]);
            JournalRepaired {
                cause: RepairCause::Corruption,
                from_offset: region.offset,
                to_offset: region.offset + region.len,
                lines: copy.lines,
                quarantine_file: copy.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                quarantine_blake3: Some(copy.blake3.clone()),
                anchor_seq: None,
                anchor_hash: None,
                problem: format!("seq {} at byte {}: {}", region.seq, region.offset, region.problem),
                lost_from: lost.map(|g| g.from),
                lost_to: lost.map(|g| g.to),
                next_prev: lost.map(|g| g.next_prev.to_hex()),
            }
        };
        let no_bytes = |at: u64, problem: String| JournalRepaired {
            cause: RepairCause::Corruption,
            from_offset: at,
            to_offset: at,
            lines: 0,
            quarantine_file: None,
            quarantine_blake3: None,
            anchor_seq: None,
            anchor_hash: None,
            problem,
            lost_from: None,
            lost_to: None,
            next_prev: None,
        };
        match *record {
            RecordOf::Gap { gap, region, at } => {
                let mut data = match region {
                    Some(r) => of_region(r, Some(gap)),
                    None => {
                        let words = if gap.lost_tail {
                            format!(
                                "seq {} at byte {at}: acknowledged (the head anchor names seq {}) and in no line of the file",
                                gap.from, gap.to
                            )
                        } else {
                            format!("seq {} at byte {at}: lines are missing here", gap.from)
                        };
                        JournalRepaired {
                            lost_from: Some(gap.from),
                            lost_to: Some(gap.to),
                            next_prev: Some(gap.next_prev.to_hex()),
                            ..no_bytes(at, words)
                        }
                    }
                };
                if gap.lost_tail {
                    (data.anchor_seq, data.anchor_hash) = (Some(gap.to), Some(gap.next_prev.to_hex()));
                }
                data
            }
            RecordOf::Region(r) => of_region(r, None),
            RecordOf::Moved { at } => {
                let (first, last) = (plan.moved[0], plan.moved[plan.moved.len() - 1]);
                no_bytes(
                    at,
                    format!(
                        "seq {first} at byte {at}: {} line(s) (seqs {first} to {last}) were out of chain order in the file and are written back in chain order",
                        plan.moved.len()
                    ),
                )
            }
            RecordOf::Rewritten => {
                let a = anchor.expect("a rewrite is found against the anchor");
                JournalRepaired::accepted(
                    file_len,
                    Some((a.seq, a.hash.to_hex())),
                    format!(
                        "the head anchor names seq {} with hash {}, which no kept line holds, while the file (or this machine's mirror) holds another line at that seq, reaches past it, or the seq is past any journal's reach: the journal was rewritten or replaced there, or the anchor is not this journal's head",
                        a.seq,
                        a.hash.to_hex()
                    ),
                )
            }
        }
    };

    let dir = paths.dir();
    let tmp = storage::temp_path(path);
    let out = storage.create_new(&tmp).map_err(JournalError::io("creating", &tmp))?;
    let written = (|| -> Result<(Vec<Appended>, Head), JournalError> {
        let mut at = 0u64;
        let mut appended = vec![];
        let mut head: Option<Head> = None;
        let mut position = (0u64, Hash::genesis_prev());
        let time = format::now_ms();
        let mut write_record = |at: &mut u64, seq: u64, prev: Hash, data: JournalRepaired| -> Result<Head, JournalError> {
            let (line, hash) = format::encode_line(seq, time, &repaired_event(data), &prev).expect("a repair record fits a line");
            out.write_at(&line, *at).map_err(JournalError::io("writing", &tmp))?;
            let record = Appended { seq, hash, offset: *at, end: *at + line.len() as u64 };
            appended.push(record);
            *at += line.len() as u64;
            let event = format::verify_line(&line).expect("abcd writes lines that verify");
            let (chain_seq, chain_hash) = event.chain_position();
            Ok(Head { seq: chain_seq, hash: chain_hash, offset: record.offset, end: record.end })
        };
        let mut gaps = records.iter().filter(|r| matches!(r, RecordOf::Gap { .. }));
        for step in &plan.steps {
            let written = match *step {
                Step::Line(i) => {
                    let c = &candidates[i];
                    let len = match c.source {
                        Source::File { offset, len } => {
                            storage::copy_range(file, out.as_ref(), offset, len, at).map_err(JournalError::io("copying", path))?;
                            len
                        }
                        Source::Extra(n) => {
                            out.write_at(&extra[n], at).map_err(JournalError::io("writing", &tmp))?;
                            extra[n].len() as u64
                        }
                    };
                    at += len;
                    Head { seq: c.position.0, hash: c.position.1, offset: at - len, end: at }
                }
                Step::Gap(gap) => {
                    let record = gaps.next().expect("one record per gap");
                    write_record(&mut at, gap.from, position.1, data_of(record))?
                }
            };
            position = (written.seq, written.hash);
            head = Some(written);
        }
        for record in records.iter().filter(|r| !matches!(r, RecordOf::Gap { .. })) {
            let written = write_record(&mut at, position.0 + 1, position.1, data_of(record))?;
            position = (written.seq, written.hash);
            head = Some(written);
        }
        out.sync_data().map_err(|source| JournalError::SyncFailed { path: tmp.clone(), source })?;
        Ok((appended, head.expect("the genesis is kept")))
    })();
    let (appended, head) = match written {
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
    let mut out_regions = vec![];
    let mut rewritten = None;
    for (record, written) in records.iter().zip(&appended) {
        match *record {
            RecordOf::Gap { gap, region, at } => out_regions.push(SalvagedRegion {
                offset: region.map_or(at, |r| regions[r].offset),
                len: region.map_or(0, |r| regions[r].len),
                quarantine: region.map(|r| copies[r].path.clone()),
                lost: Some((gap.from, gap.to)),
                record_seq: written.seq,
            }),
            RecordOf::Region(r) => out_regions.push(SalvagedRegion {
                offset: regions[r].offset,
                len: regions[r].len,
                quarantine: Some(copies[r].path.clone()),
                lost: None,
                record_seq: written.seq,
            }),
            RecordOf::Moved { .. } => {}
            RecordOf::Rewritten => rewritten = Some(written.seq),
        }
    }
    let restored_lines =
        plan.steps.iter().filter(|s| matches!(s, Step::Line(i) if matches!(candidates[*i].source, Source::Extra(_)))).count() as u64;
    let torn = torn.map(|i| (copies[i].path.clone(), regions[i].len));
    Ok(Salvage {
        regions: out_regions,
        kept_lines: plan.kept_lines() as u64,
        restored_lines,
        moved: plan.moved.clone(),
        rewritten,
        torn,
        records: appended,
    })
}
