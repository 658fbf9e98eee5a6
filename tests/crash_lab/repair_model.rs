//! Issue 31, acceptance 2: a model of the rule of proof (journal-format/SPEC.md §10) against
//! `abcd journal repair` on random damage.
//!
//! Each case builds a real journal of 20 to 2,000 events with the library (its head anchor
//! written by the appends, in a home store of its own), damages it in one to three places
//! with any of nine kinds of damage (bit flip, duplicate, swap, foreign append, foreign
//! splice, misdirected block, clean cut, NUL run, merged lines; lines of "another journal"
//! come from a second, independent journal), runs one repair, and compares what repair did
//! with what the model says it must do.
//!
//! The model is written from the SPEC text, not from `src/journal/repair.rs`: it knows the
//! bytes of every line either journal ever wrote (the ground truth), finds the candidates
//! of §10 in the damaged file by those bytes (a piece that is a line, or a piece that ends
//! in one: §6.4 A's embedded line), and applies steps 1-6 to them: the forward chain F, the
//! backward chain B from the anchor with the lines after it, the range a gap may take, the
//! runs that fit uniquely, the chain order, and the `anchor_mismatch` of a rewrite hidden
//! by damage. It also decides, by §6, whether the damaged file is clean, torn or corrupt,
//! since only corruption (or a torn tail past the anchor) is salvaged by the rule.
//!
//! After one repair every case must show:
//!
//! - the lines of the old file in the new one are exactly the lines the model keeps, byte
//!   for byte, in chain order: no provable line lost, no line of the other journal and no
//!   unprovable line kept (the only lines added are `journal.repaired` records);
//! - `verify` clean, and the anchor agreeing;
//! - the gap records name exactly the seqs the model loses (`lost_from`, `lost_to`,
//!   `next_prev`, and the anchor for a lost tail);
//! - every byte of the old file outside a kept line is in quarantine: the quarantine files
//!   are, as a multiset, exactly the damaged regions, and each region is named by one
//!   `journal.repaired` (its `from_offset`, `to_offset`, `lines`, `quarantine_file`,
//!   `quarantine_blake3`), but for a torn tail (copied, no record: §9, §10);
//! - lines moved into chain order named by one record of no bytes, and the
//!   `anchor_mismatch` record exactly when §10 step 6 (or the clean-journal case) asks for one;
//! - a second repair finds nothing to do.
//!
//! Readings of the rule where the text left a choice (told to the lead, issue 31):
//!
//! - "the previously kept line" (which copy of a repeated line is kept) is read as the line
//!   written just before it in the new file, that is the one before it in chain order; the
//!   genesis is always the piece at offset 0.
//! - A run that fits uniquely is kept whatever journal it came from: the rule cannot tell a
//!   run of another journal whose seqs fall in a gap from the journal's own lines, and this
//!   test follows the rule (it counts and shows such cases under `ABCD_REPAIR_MODEL_STATS=1`);
//!   the issue's "no foreign line is kept" holds for every other shape. In the random cases
//!   they all sit in a lost tail, whose range (f + 1 .. A) is as wide as the cut: a journal
//!   cut short, with another journal's lines whose seqs fall below the anchor's.
//! - A clean journal cut short at a line boundary (a clean cut of the last lines, nothing
//!   else) is salvaged like a damaged one: its lost tail gets a gap record up to the anchor's
//!   seq, so no acknowledged seq is given again. That is the issue's "a lost-tail gap record
//!   even when its bytes are gone" and what the repair on main does; SPEC §10's text still
//!   lists such a journal under "Clean, but the journal disagrees with its head anchor"
//!   (accepted with an `anchor_mismatch` record and no gap), which should follow.
//! - The record of moved lines is checked for existence (one, of no bytes, no gap keys)
//!   when the kept lines are out of file order, not for which offset it names.
//! - When B does not fit after F (b ≤ f + 1, only reachable with a fork), the case is not
//!   judged (counted as unmodelled); the damage here never makes one.
//!
//! The genesis is never damaged (repair refuses then: §10's last case), so every damage
//! lands after line 0.
//!
//! `cargo test` runs `QUICK_CASES`; `ABCD_REPAIR_MODEL_CASES=10000` runs more (use
//! `--release`). Every case runs, and a failure lists each failing case's seed, shape and
//! what was lost or adopted, grouped by the kinds of damage with the smallest example of
//! each; `ABCD_REPAIR_MODEL_SEED=<seed>` replays one case and prints its shape.

use crate::common;

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::{self, AssertUnwindSafe};
use std::sync::OnceLock;

use abcd::journal::anchor::AnchorStore;
use abcd::journal::repair::{self, RepairOutcome};
use abcd::journal::scan::Verdict;
use abcd::journal::storage::RealDisk;
use abcd::journal::verify::{self, AnchorCheck};
use common::{TempJournal, event};
use serde_json::Value;

/// Cases in `cargo test`; `ABCD_REPAIR_MODEL_CASES` overrides.
const QUICK_CASES: u64 = 200;
const CASES_VAR: &str = "ABCD_REPAIR_MODEL_CASES";
const SEED_VAR: &str = "ABCD_REPAIR_MODEL_SEED";
const STATS_VAR: &str = "ABCD_REPAIR_MODEL_STATS";
/// The seeds of a run are derived from this one and the case number: every run is the same.
const BASE_SEED: u64 = 0x0031_2026_1206;
const EVENTS_MIN: u64 = 20;
const EVENTS_MAX: u64 = 2_000;
/// The other journal, whose lines are spliced and appended.
const FOREIGN_EVENTS: u64 = 2_000;
/// The pid the events carry (`event` would give this process's, whose digits vary).
const FIXED_PID: u32 = 4242;
/// Events per append while building (well under `MAX_BATCH` bytes).
const BATCH: u64 = 500;
/// SPEC §1.
const MAX_TORN: usize = 266_240;
const GENESIS_PREV: &str = "a82b5c6a4cd7ae224ea602c69be4347376663ffabf51f7cf1fc43e2a02b94254";
const LF: u8 = b'\n';
/// Where a line in the writer's layout starts (§6.4 A).
const LINE_START: &[u8] = b"{\"v\":1,\"seq\":";

/// splitmix64: small, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        self.next() % n
    }

    /// `lo..=hi`.
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
}

// ---------------------------------------------------------------------------------------
// Ground truth: every line either journal wrote, by its bytes.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Id {
    /// A line of the journal under repair, by its seq.
    Own(u64),
    /// A line of the other journal, by its seq there.
    Foreign(u64),
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Own(s) => write!(f, "own {s}"),
            Id::Foreign(s) => write!(f, "foreign {s}"),
        }
    }
}

#[derive(Clone, Debug)]
struct Line {
    id: Id,
    seq: u64,
    prev: String,
    hash: String,
}

fn json_of(line: &[u8]) -> Value {
    serde_json::from_slice(&line[..line.len() - 1]).expect("a line abcd wrote is JSON")
}

fn lines_of(bytes: &[u8], id: fn(u64) -> Id) -> (Vec<Vec<u8>>, HashMap<Vec<u8>, Line>) {
    let lines: Vec<Vec<u8>> = bytes.split_inclusive(|&b| b == LF).map(<[u8]>::to_vec).collect();
    let mut map = HashMap::new();
    for l in &lines {
        let v = json_of(l);
        let seq = v["seq"].as_u64().expect("seq");
        let line =
            Line { id: id(seq), seq, prev: v["prev"].as_str().expect("prev").into(), hash: v["hash"].as_str().expect("hash").into() };
        map.insert(l.clone(), line);
    }
    (lines, map)
}

struct Foreign {
    lines: Vec<Vec<u8>>,
    map: HashMap<Vec<u8>, Line>,
}

/// The other journal: built once per test binary, with its own id and home store.
fn foreign() -> &'static Foreign {
    static FOREIGN: OnceLock<Foreign> = OnceLock::new();
    FOREIGN.get_or_init(|| {
        let tj = build_journal(FOREIGN_EVENTS);
        let (lines, map) = lines_of(&tj.bytes(), Id::Foreign);
        Foreign { lines, map }
    })
}

fn build_journal(events: u64) -> TempJournal {
    let tj = TempJournal::new();
    let j = tj.journal();
    let mut n = 0;
    while n < events {
        let k = (events - n).min(BATCH);
        let batch: Vec<_> = (n..n + k)
            .map(|i| {
                // One pid for every run, so a seed replays the same bytes in another process
                // (only the genesis, written by the library, carries this process's pid).
                let mut e = event("compaction.recorded", i);
                e.actor.pid = FIXED_PID;
                e
            })
            .collect();
        j.append_batch(&batch, Some(&tj.scope())).expect("append");
        n += k;
    }
    tj
}

struct Truth {
    own: HashMap<Vec<u8>, Line>,
    foreign: &'static Foreign,
}

impl Truth {
    fn line(&self, bytes: &[u8]) -> Option<&Line> {
        self.own.get(bytes).or_else(|| self.foreign.map.get(bytes))
    }

    /// A piece's line: the piece itself, or the line embedded at its end (§6.4 A), with
    /// the offset inside the piece where that line starts.
    fn in_piece(&self, piece: &[u8]) -> Option<(usize, &Line)> {
        if piece.last() != Some(&LF) {
            return None;
        }
        if let Some(l) = self.line(piece) {
            return Some((0, l));
        }
        (1..piece.len().saturating_sub(LINE_START.len() - 1))
            .filter(|&p| piece[p..].starts_with(LINE_START))
            .find_map(|p| self.line(&piece[p..]).map(|l| (p, l)))
    }

    fn describe(&self, piece: &[u8]) -> String {
        match self.in_piece(piece) {
            Some((0, l)) => format!("{}", l.id),
            Some((p, l)) => format!("{p} damaged bytes + {}", l.id),
            None => format!("{} damaged bytes", piece.len()),
        }
    }
}

/// §6.1: each piece runs to and including its LF; the last one to the end of the file.
fn pieces(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = vec![];
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == LF {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        out.push((start, bytes.len()));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Damage.

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    BitFlip,
    Duplicate,
    Swap,
    ForeignAppend,
    ForeignSplice,
    MisdirectedBlock,
    CleanCut,
    NulRun,
    MergedLines,
}

const KINDS: [Kind; 9] = [
    Kind::BitFlip,
    Kind::Duplicate,
    Kind::Swap,
    Kind::ForeignAppend,
    Kind::ForeignSplice,
    Kind::MisdirectedBlock,
    Kind::CleanCut,
    Kind::NulRun,
    Kind::MergedLines,
];

/// A slice of the other journal: from its genesis (as `cat b >> a` does) or from anywhere.
fn foreign_slice(rng: &mut Rng, from_genesis: bool) -> (Vec<u8>, String) {
    let f = foreign();
    let start = if from_genesis { 0 } else { rng.index(f.lines.len()) };
    let most = (f.lines.len() - start) as u64;
    let k = if rng.chance(3, 4) { rng.between(1, most.min(40)) } else { rng.between(1, most) } as usize;
    (f.lines[start..start + k].concat(), format!("foreign seqs {}-{}", start, start + k - 1))
}

/// Applies one damage of `kind` after the genesis (which ends at `len0`); `None` when the
/// file has no place for it.
fn apply(kind: Kind, rng: &mut Rng, buf: &mut Vec<u8>, len0: usize, truth: &Truth) -> Option<String> {
    let ps = pieces(buf);
    let after0: Vec<(usize, usize)> = ps.iter().copied().filter(|&(s, _)| s >= len0).collect();
    let whole: Vec<(usize, usize)> = ps.iter().copied().filter(|&(_, e)| buf[e - 1] == LF).collect();
    let whole_after0: Vec<(usize, usize)> = whole.iter().copied().filter(|&(s, _)| s >= len0).collect();
    let boundaries: Vec<usize> = (len0..=buf.len()).filter(|&p| buf[p - 1] == LF).collect();
    let name = |buf: &[u8], (s, e): (usize, usize)| truth.describe(&buf[s..e]);
    // A byte after the genesis: a piece, then a byte in it (offsets relative to the pieces,
    // so a seed replays the same damage whatever the genesis's length in this process).
    let pick_byte = |rng: &mut Rng| {
        let (s, e) = after0[rng.index(after0.len())];
        (s + rng.index(e - s), (s, e))
    };
    match kind {
        Kind::BitFlip => {
            if after0.is_empty() {
                return None;
            }
            let (at, piece) = pick_byte(rng);
            let bit = rng.below(8);
            let what = name(buf, piece);
            buf[at] ^= 1 << bit;
            Some(format!("bit flip: bit {bit} of byte {at} (in {what})"))
        }
        Kind::Duplicate => {
            let src = whole[rng.index(whole.len())];
            let at = if rng.chance(1, 2) && src.1 >= len0 { src.1 } else { boundaries[rng.index(boundaries.len())] };
            let copy = buf[src.0..src.1].to_vec();
            let what = name(buf, src);
            buf.splice(at..at, copy);
            Some(format!("duplicate: a copy of {what} inserted at byte {at}"))
        }
        Kind::Swap => {
            if whole_after0.len() < 2 {
                return None;
            }
            let i = rng.index(whole_after0.len() - 1);
            let d = if rng.chance(3, 4) { 1 } else { rng.between(1, 4.min(whole_after0.len() - 1 - i) as u64) as usize };
            let (a, b) = (whole_after0[i], whole_after0[i + d]);
            let what = format!("{} and {}", name(buf, a), name(buf, b));
            let mut out = buf[..a.0].to_vec();
            out.extend_from_slice(&buf[b.0..b.1]);
            out.extend_from_slice(&buf[a.1..b.0]);
            out.extend_from_slice(&buf[a.0..a.1]);
            out.extend_from_slice(&buf[b.1..]);
            *buf = out;
            Some(format!("swap: {what} (bytes {} and {})", a.0, b.0))
        }
        Kind::ForeignAppend => {
            let from_genesis = rng.chance(1, 2);
            let (bytes, what) = foreign_slice(rng, from_genesis);
            let at = buf.len();
            buf.extend_from_slice(&bytes);
            Some(format!("foreign append: {what} at byte {at}"))
        }
        Kind::ForeignSplice => {
            let from_genesis = rng.chance(1, 4);
            let (bytes, what) = foreign_slice(rng, from_genesis);
            let at = boundaries[rng.index(boundaries.len())];
            buf.splice(at..at, bytes);
            Some(format!("foreign splice: {what} inserted at byte {at}"))
        }
        Kind::MisdirectedBlock if rng.chance(1, 2) => {
            // A block written over another block of the same file (a misdirected write).
            // Blocks are counted from the genesis's end, so a seed replays the same damage
            // whatever the genesis's length.
            let bs = if rng.chance(1, 2) { 512 } else { 4096 };
            let blocks = (buf.len() - len0).div_ceil(bs);
            if blocks < 2 {
                return None;
            }
            let t = rng.index(blocks);
            let s = loop {
                let s = rng.index(blocks);
                if s != t {
                    break s;
                }
            };
            let (from, to) = (len0 + s * bs, len0 + t * bs);
            let src = buf[from..(from + bs).min(buf.len())].to_vec();
            let n = src.len().min(buf.len() - to);
            buf[to..to + n].copy_from_slice(&src[..n]);
            Some(format!(
                "misdirected block: {n} bytes of block {s} written over block {t} ({bs}-byte blocks from byte {len0}, bytes {to}..{})",
                to + n
            ))
        }
        Kind::MisdirectedBlock => {
            // A run of whole lines written a second time at another place.
            if whole.len() < 2 {
                return None;
            }
            let i = rng.index(whole.len() - 1);
            let k = rng.between(2, 16.min(whole.len() - i) as u64) as usize;
            let (s, e) = (whole[i].0, whole[i + k - 1].1);
            let what = format!("{} .. {}", name(buf, whole[i]), name(buf, whole[i + k - 1]));
            let copy = buf[s..e].to_vec();
            let at = boundaries[rng.index(boundaries.len())];
            buf.splice(at..at, copy);
            Some(format!("misdirected block: {k} lines ({what}) copied to byte {at}"))
        }
        Kind::CleanCut => {
            if after0.is_empty() {
                return None;
            }
            let i = rng.index(after0.len());
            if rng.chance(1, 3) {
                let what = name(buf, after0[i]);
                let at = after0[i].0;
                buf.truncate(at);
                Some(format!("clean cut: the file cut at byte {at}, from {what} on"))
            } else {
                let k = rng.between(1, 5.min(after0.len() - i) as u64) as usize;
                let (s, e) = (after0[i].0, after0[i + k - 1].1);
                let what = format!("{} .. {}", name(buf, after0[i]), name(buf, after0[i + k - 1]));
                buf.drain(s..e);
                Some(format!("clean cut: {k} pieces ({what}) removed at byte {s}"))
            }
        }
        Kind::NulRun => {
            let most = if rng.chance(1, 2) { 200 } else { 4096 };
            if rng.chance(1, 3) || after0.is_empty() {
                let n = rng.between(1, most) as usize;
                let at = buf.len();
                buf.resize(at + n, 0);
                Some(format!("NUL run: {n} NUL bytes appended at byte {at}"))
            } else {
                let (at, piece) = pick_byte(rng);
                let n = rng.between(1, most.min((buf.len() - at) as u64)) as usize;
                let what = name(buf, piece);
                buf[at..at + n].fill(0);
                Some(format!("NUL run: {n} bytes zeroed at byte {at} (from inside {what})"))
            }
        }
        Kind::MergedLines => {
            let merge: Vec<(usize, usize)> = whole_after0.iter().copied().filter(|&(_, e)| e < buf.len()).collect();
            if merge.is_empty() {
                return None;
            }
            let p = merge[rng.index(merge.len())];
            let what = format!("{} and the piece after it", name(buf, p));
            if rng.chance(1, 2) {
                let b = rng.below(255) as u8;
                let b = if b >= LF { b + 1 } else { b };
                buf[p.1 - 1] = b;
                Some(format!("merged lines: the LF of {what} (byte {}) made {b:#04x}", p.1 - 1))
            } else {
                buf.remove(p.1 - 1);
                Some(format!("merged lines: the LF of {what} (byte {}) removed", p.1 - 1))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The model.

/// A line of the damaged file that is a candidate (§10), one per hash, with every copy.
struct Cand {
    line: Line,
    /// `[start, end)` of each copy, in file order.
    copies: Vec<(usize, usize)>,
}

struct PieceInfo {
    start: usize,
    end: usize,
    /// The piece is a line, or ends in an embedded one: something in it was written whole.
    line: Option<(usize, Id)>,
}

struct Scan {
    cands: Vec<Cand>,
    pieces: Vec<PieceInfo>,
}

fn scan(bytes: &[u8], truth: &Truth) -> Scan {
    let mut cands: Vec<Cand> = vec![];
    let mut by_hash: HashMap<String, usize> = HashMap::new();
    let mut infos = vec![];
    for (s, e) in pieces(bytes) {
        let found = truth.in_piece(&bytes[s..e]);
        if let Some((p, line)) = found {
            let i = *by_hash.entry(line.hash.clone()).or_insert_with(|| {
                cands.push(Cand { line: line.clone(), copies: vec![] });
                cands.len() - 1
            });
            cands[i].copies.push((s + p, e));
        }
        infos.push(PieceInfo { start: s, end: e, line: found.map(|(p, l)| (p, l.id)) });
    }
    Scan { cands, pieces: infos }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Clean,
    /// A torn tail from this offset, after the line of this seq.
    Torn(usize, u64),
    Corrupt,
}

/// §6: what the verifier says of the damaged file (its genesis is intact).
fn classify(bytes: &[u8], s: &Scan, truth: &Truth) -> Class {
    let mut pos: Option<(u64, String)> = None;
    for (k, p) in s.pieces.iter().enumerate() {
        let whole = match p.line {
            Some((0, _)) => truth.line(&bytes[p.start..p.end]),
            _ => None,
        };
        match whole {
            Some(l) => {
                let fits = match &pos {
                    None => l.seq == 0 && l.prev == GENESIS_PREV,
                    Some((seq, hash)) => l.seq == seq + 1 && &l.prev == hash,
                };
                if !fits {
                    return Class::Corrupt;
                }
                pos = Some((l.seq, l.hash.clone()));
            }
            None => {
                let written_whole = s.pieces[k..].iter().any(|q| q.line.is_some());
                let head = pos.expect("the genesis is intact").0;
                return if written_whole || bytes.len() - p.start > MAX_TORN { Class::Corrupt } else { Class::Torn(p.start, head) };
            }
        }
    }
    Class::Clean
}

#[derive(Clone, Debug)]
struct Gap {
    from: u64,
    to: u64,
    next_prev: String,
    /// Where the line kept before the gap ends in the old file: the gap's region starts here.
    after: usize,
    /// A lost tail, which names the anchor.
    anchor: bool,
}

#[derive(Default)]
struct Model {
    /// The old file's lines the new one holds, in its order, with the copy kept.
    kept: Vec<(Id, (usize, usize))>,
    gaps: Vec<Gap>,
    /// Every run of bytes outside a kept line, in file order.
    regions: Vec<(usize, usize)>,
    /// The region moved aside as a torn tail, without a record.
    torn: Option<(usize, usize)>,
    anchor_mismatch: bool,
    moved: bool,
    /// Why the case is not judged (a shape the rule leaves open).
    unmodelled: Option<String>,
    /// For the report: F's end, B's start, the runs, what the rule decided.
    notes: Vec<String>,
    /// Lines of the other journal the rule keeps (a run that fits uniquely).
    foreign_kept: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Range {
    /// With B: seqs f + 1 .. b − 1.
    Between(u64),
    /// f + 1 .. A, all acknowledged.
    LostTail,
    NoGap,
}

fn model(bytes: &[u8], s: &Scan, truth: &Truth, anchor: (u64, &str)) -> Model {
    let class = classify(bytes, s, truth);
    let (a_seq, a_hash) = anchor;
    let mut m = Model::default();
    match class {
        Class::Clean => {
            let head = s.pieces.last().map(|p| truth.line(&bytes[p.start..p.end]).unwrap().clone()).unwrap();
            if head.seq < a_seq {
                // Cut short at a line boundary: salvaged like a damaged file, so the seqs
                // the anchor vouched for get a lost-tail gap record (issue 31: "a lost-tail
                // gap record even when its bytes are gone"; the repair on main does this,
                // SPEC §10's clean case still reads as an anchor_mismatch acceptance).
                m.notes.push(format!("clean, cut short before the anchor's seq {a_seq}: salvage"));
                return salvage_model(bytes, s, anchor, m);
            }
            m.notes.push("clean".into());
            m.kept = s.pieces.iter().map(|p| (p.line.expect("a clean file is lines").1, (p.start, p.end))).collect();
            m.anchor_mismatch = head.seq != a_seq || head.hash != a_hash;
            return m;
        }
        Class::Torn(at, head) if a_seq <= head => {
            m.notes.push(format!("torn tail at byte {at}, not past the anchor"));
            m.kept = s.pieces.iter().take_while(|p| p.start < at).map(|p| (p.line.unwrap().1, (p.start, p.end))).collect();
            m.regions = vec![(at, bytes.len())];
            m.torn = Some((at, bytes.len()));
            return m;
        }
        Class::Torn(at, _) => m.notes.push(format!("torn tail at byte {at}, the anchor past it: salvage")),
        Class::Corrupt => m.notes.push("corrupt: salvage".into()),
    }
    salvage_model(bytes, s, anchor, m)
}

fn salvage_model(bytes: &[u8], s: &Scan, (a_seq, a_hash): (u64, &str), mut m: Model) -> Model {
    let c = &s.cands;
    let n = c.len();
    // A line's successors: the candidates with seq + 1 naming its hash; its predecessors:
    // the candidates whose position is (seq − 1, prev). (No line here is a gap record, so a
    // position is (seq, hash).)
    let mut succ: HashMap<(u64, &str), Vec<usize>> = HashMap::new();
    let mut at_pos: HashMap<(u64, &str), Vec<usize>> = HashMap::new();
    for (i, cand) in c.iter().enumerate() {
        if cand.line.seq > 0 {
            succ.entry((cand.line.seq - 1, cand.line.prev.as_str())).or_default().push(i);
        }
        at_pos.entry((cand.line.seq, cand.line.hash.as_str())).or_default().push(i);
    }
    let none: Vec<usize> = vec![];
    let succ_of = |i: usize| succ.get(&(c[i].line.seq, c[i].line.hash.as_str())).unwrap_or(&none);
    let pred_of =
        |i: usize| if c[i].line.seq == 0 { &none } else { at_pos.get(&(c[i].line.seq - 1, c[i].line.prev.as_str())).unwrap_or(&none) };

    // 1. F, from the piece at offset 0.
    let genesis = (0..n).find(|&i| c[i].copies.iter().any(|&(o, _)| o == 0)).expect("the genesis is intact");
    let mut on_f = vec![false; n];
    let mut f_chain = vec![genesis];
    on_f[genesis] = true;
    loop {
        let next = succ_of(*f_chain.last().unwrap());
        if next.len() != 1 || on_f[next[0]] {
            break;
        }
        on_f[next[0]] = true;
        f_chain.push(next[0]);
    }
    let f = c[*f_chain.last().unwrap()].line.seq;
    m.notes.push(format!("F: 0..={f}"));

    // 2. B, from the anchor line back, and the lines after it forward.
    let anchor_line = at_pos.get(&(a_seq, a_hash)).and_then(|v| v.first().copied());
    let mut on_b = vec![false; n];
    let mut b_chain: Vec<usize> = vec![];
    // 3. The range a gap may take.
    let range = match anchor_line {
        Some(al) if on_f[al] => {
            m.notes.push(format!("anchor {a_seq} on F"));
            Range::NoGap
        }
        Some(al) => {
            b_chain.push(al);
            on_b[al] = true;
            loop {
                let p = pred_of(b_chain[0]);
                if p.len() != 1 || on_f[p[0]] || on_b[p[0]] {
                    break;
                }
                on_b[p[0]] = true;
                b_chain.insert(0, p[0]);
            }
            loop {
                let next = succ_of(*b_chain.last().unwrap());
                if next.len() != 1 || on_f[next[0]] || on_b[next[0]] {
                    break;
                }
                on_b[next[0]] = true;
                b_chain.push(next[0]);
            }
            let b = c[b_chain[0]].line.seq;
            m.notes.push(format!("B: {b}..={} (anchor {a_seq})", c[*b_chain.last().unwrap()].line.seq));
            if b <= f + 1 {
                m.unmodelled = Some(format!("B starts at {b}, which does not fit after F's end {f}"));
                return m;
            }
            Range::Between(b)
        }
        None if a_seq > f => {
            m.notes.push(format!("anchor line {a_seq} not a candidate: lost tail {}..={a_seq}", f + 1));
            Range::LostTail
        }
        None => {
            m.notes.push(format!("anchor line {a_seq} not a candidate, at or before F's end"));
            Range::NoGap
        }
    };

    // 4. Runs: maximal sequences of lines in neither chain, each the only successor of the
    // one before and that one its only predecessor.
    let free = |i: usize| !on_f[i] && !on_b[i];
    let link = |i: usize| -> Option<usize> {
        let next = succ_of(i);
        (next.len() == 1 && free(next[0]) && pred_of(next[0]).len() == 1).then(|| next[0])
    };
    let mut linked_to = vec![false; n];
    for i in (0..n).filter(|&i| free(i)) {
        if let Some(j) = link(i) {
            linked_to[j] = true;
        }
    }
    let mut runs: Vec<Vec<usize>> = vec![];
    for i in (0..n).filter(|&i| free(i) && !linked_to[i]) {
        let mut run = vec![i];
        while let Some(j) = link(*run.last().unwrap()) {
            run.push(j);
        }
        runs.push(run);
    }
    let span = |run: &[usize]| (c[run[0]].line.seq, c[*run.last().unwrap()].line.seq);
    let fits = |run: &[usize]| {
        let (r0, r1) = span(run);
        match range {
            Range::Between(b) => r0 >= f + 2 && r1 + 2 <= b,
            Range::LostTail => r0 >= f + 2 && r1 < a_seq,
            Range::NoGap => false,
        }
    };
    let fitting: Vec<&Vec<usize>> = runs.iter().filter(|r| fits(r)).collect();
    let mut kept_runs: Vec<&Vec<usize>> = vec![];
    for (k, run) in fitting.iter().enumerate() {
        let (r0, r1) = span(run);
        let alone = fitting.iter().enumerate().all(|(j, other)| {
            let (s0, s1) = span(other);
            j == k || s1 + 1 < r0 || s0 > r1 + 1
        });
        let who = c[run[0]].line.id;
        m.notes.push(format!("run {r0}..={r1} ({who}..): fits, {}", if alone { "kept" } else { "not alone: damage" }));
        if alone {
            kept_runs.push(run);
            m.foreign_kept += run.iter().filter(|&&i| matches!(c[i].line.id, Id::Foreign(_))).count();
        }
    }
    let unfit = runs.len() - fitting.len();
    if unfit > 0 {
        m.notes.push(format!("{unfit} runs that do not fit (damage)"));
    }
    kept_runs.sort_by_key(|r| c[r[0]].line.seq);

    // 5. Chain order, a gap record before each part that does not continue the one before.
    let mut parts: Vec<&[usize]> = vec![&f_chain];
    parts.extend(kept_runs.iter().map(|r| r.as_slice()));
    if !b_chain.is_empty() {
        parts.push(&b_chain);
    }
    let order: Vec<usize> = parts.iter().flat_map(|p| p.iter().copied()).collect();
    // The copy of each line: the first after the line kept before it, else the first.
    let mut copy_of: HashMap<usize, (usize, usize)> = HashMap::new();
    let mut last_offset: Option<usize> = None;
    for &i in &order {
        let copy = if i == genesis {
            *c[i].copies.iter().find(|&&(o, _)| o == 0).unwrap()
        } else {
            let after = c[i].copies.iter().copied().find(|&(o, _)| last_offset.is_some_and(|l| o > l));
            after.unwrap_or(c[i].copies[0])
        };
        copy_of.insert(i, copy);
        last_offset = Some(copy.0);
    }
    let mut before = *f_chain.last().unwrap();
    for part in &parts[1..] {
        let first = &c[part[0]].line;
        let prev = &c[before].line;
        if first.seq != prev.seq + 1 || first.prev != prev.hash {
            m.gaps.push(Gap {
                from: prev.seq + 1,
                to: first.seq - 1,
                next_prev: first.prev.clone(),
                after: copy_of[&before].1,
                anchor: false,
            });
        }
        before = *part.last().unwrap();
    }
    if range == Range::LostTail {
        let from = c[before].line.seq + 1;
        m.gaps.push(Gap { from, to: a_seq, next_prev: a_hash.to_string(), after: copy_of[&before].1, anchor: true });
    }
    m.kept = order.iter().map(|&i| (c[i].line.id, copy_of[&i])).collect();
    m.moved = m.kept.windows(2).any(|w| w[1].1.0 < w[0].1.0);

    // 6. A rewrite hidden by damage.
    m.anchor_mismatch = anchor_line.is_none() && (a_seq <= f || c.iter().any(|x| x.line.seq == a_seq && x.line.hash != a_hash));

    // Every byte outside a kept line is damage; bytes that run together are one region.
    let mut kept_copies: Vec<(usize, usize)> = m.kept.iter().map(|k| k.1).collect();
    kept_copies.sort();
    let mut at = 0;
    for (s0, e0) in kept_copies {
        if s0 > at {
            m.regions.push((at, s0));
        }
        at = at.max(e0);
    }
    if at < bytes.len() {
        m.regions.push((at, bytes.len()));
    }
    // The region at the end is a torn tail when nothing in it was written whole, it is at
    // most MAX_TORN bytes and no gap record names it.
    if let Some(&(rs, re)) = m.regions.last()
        && re == bytes.len()
        && re - rs <= MAX_TORN
        && !m.gaps.iter().any(|g| g.after == rs)
        && !s.pieces.iter().any(|p| p.start >= rs && p.line.is_some())
    {
        m.torn = Some((rs, re));
    }
    m
}

// ---------------------------------------------------------------------------------------
// One case.

struct Case {
    seed: u64,
    events: u64,
    damage: Vec<(Kind, String)>,
}

impl Case {
    fn shape(&self) -> String {
        let mut s = format!(
            "seed {:#x} ({SEED_VAR}={:#x}): {} events (seqs 0..={}), anchor at seq {}",
            self.seed, self.seed, self.events, self.events, self.events
        );
        for (_, d) in &self.damage {
            s += &format!("\n    - {d}");
        }
        s
    }

    fn kinds(&self) -> String {
        let mut k: Vec<Kind> = self.damage.iter().map(|d| d.0).collect();
        k.sort();
        k.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join("+")
    }
}

#[derive(Default)]
struct Stats {
    cases: u64,
    clean: u64,
    torn: u64,
    salvaged: u64,
    gaps: u64,
    lost_tails: u64,
    moved: u64,
    anchor_mismatch: u64,
    foreign_kept_by_rule: u64,
    unmodelled: u64,
}

struct Outcome {
    case: Case,
    model_notes: Vec<String>,
    problems: Vec<String>,
}

thread_local! {
    /// Panics inside the repair under test are caught and reported; not printed each time.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

fn seqs(ids: &[Id]) -> String {
    let mut own: Vec<u64> = ids.iter().filter_map(|i| if let Id::Own(s) = i { Some(*s) } else { None }).collect();
    let mut foreign: Vec<u64> = ids.iter().filter_map(|i| if let Id::Foreign(s) = i { Some(*s) } else { None }).collect();
    own.sort();
    foreign.sort();
    let ranges = |v: &[u64]| {
        let mut out: Vec<String> = vec![];
        let mut i = 0;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            out.push(if i == j { format!("{}", v[i]) } else { format!("{}-{}", v[i], v[j]) });
            i = j + 1;
        }
        out.join(",")
    };
    let mut parts = vec![];
    if !own.is_empty() {
        parts.push(format!("own seqs {}", ranges(&own)));
    }
    if !foreign.is_empty() {
        parts.push(format!("foreign seqs {}", ranges(&foreign)));
    }
    parts.join("; ")
}

fn run_case(seed: u64, stats: &mut Stats) -> Outcome {
    let mut rng = Rng(seed);
    let events = if rng.chance(1, 2) { rng.between(EVENTS_MIN, 100) } else { rng.between(EVENTS_MIN, EVENTS_MAX) };
    let tj = build_journal(events);
    let clean = tj.bytes();
    let (own_lines, own) = lines_of(&clean, Id::Own);
    assert_eq!(own_lines.len() as u64, events + 1);
    let truth = Truth { own, foreign: foreign() };
    let genesis = json_of(&own_lines[0]);
    let journal_id = genesis["data"]["journal_id"].as_str().expect("a journal id").to_string();
    let anchor = AnchorStore::new(&tj.home).load(&RealDisk, &journal_id).expect("the anchor reads").expect("appends wrote the anchor");
    let last = truth.own[own_lines.last().unwrap()].clone();
    assert_eq!((anchor.seq, anchor.hash.to_hex()), (last.seq, last.hash.clone()), "the anchor names the last line");
    let len0 = own_lines[0].len();

    let mut damaged = clean.clone();
    let places = rng.between(1, 3);
    let mut damage = vec![];
    for _ in 0..places {
        for _ in 0..20 {
            let kind = KINDS[rng.index(KINDS.len())];
            if let Some(d) = apply(kind, &mut rng, &mut damaged, len0, &truth) {
                damage.push((kind, d));
                break;
            }
        }
    }
    let case = Case { seed, events, damage };
    std::fs::write(tj.path(), &damaged).expect("the damaged journal is written");

    let sc = scan(&damaged, &truth);
    let m = model(&damaged, &sc, &truth, (anchor.seq, &last.hash));
    stats.cases += 1;
    if let Some(why) = &m.unmodelled {
        stats.unmodelled += 1;
        return Outcome { case, model_notes: vec![why.clone()], problems: vec![] };
    }
    let mut notes = m.notes.clone();
    notes.push(format!(
        "model: keeps {} lines, loses {}, {} regions{}{}{}",
        m.kept.len(),
        if m.gaps.is_empty() {
            "nothing".to_string()
        } else {
            m.gaps.iter().map(|g| format!("{}-{}", g.from, g.to)).collect::<Vec<_>>().join(",")
        },
        m.regions.len(),
        if m.torn.is_some() { ", the last a torn tail" } else { "" },
        if m.moved { ", lines moved into chain order" } else { "" },
        if m.anchor_mismatch { ", anchor_mismatch" } else { "" },
    ));
    let class = classify(&damaged, &sc, &truth);
    // The model's §6 verdict is the verifier's (read without the home store, so the anchor
    // carries no damage mark into the repair).
    let verdict = verify::verify_chain(&RealDisk, tj.path(), None).expect("verify runs").verdict;
    let agree = match (&class, &verdict) {
        (Class::Clean, Verdict::Clean) | (Class::Corrupt, Verdict::Corrupt(_)) => true,
        (Class::Torn(at, _), Verdict::TornTail(t)) => t.offset == *at as u64,
        _ => false,
    };
    if !agree {
        return Outcome {
            case,
            model_notes: notes,
            problems: vec![format!("the model reads the damaged file as {class:?}, verify as {verdict:?}")],
        };
    }
    match class {
        Class::Clean => stats.clean += 1,
        Class::Torn(_, head) if anchor.seq <= head => stats.torn += 1,
        _ => stats.salvaged += 1,
    }
    stats.gaps += m.gaps.len() as u64;
    stats.lost_tails += m.gaps.iter().filter(|g| g.anchor).count() as u64;
    stats.moved += m.moved as u64;
    stats.anchor_mismatch += m.anchor_mismatch as u64;
    stats.foreign_kept_by_rule += (m.foreign_kept > 0) as u64;
    if m.foreign_kept > 0 && std::env::var_os(STATS_VAR).is_some() {
        eprintln!("the rule keeps {} lines of the other journal here:\n{}", m.foreign_kept, case.shape());
    }

    QUIET.with(|q| q.set(true));
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| repair::repair(&tj.journal(), Some(&tj.scope()), None)));
    QUIET.with(|q| q.set(false));
    let problems = match outcome {
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            vec![format!("repair panicked: {msg}")]
        }
        Ok(Err(e)) => vec![format!("repair failed: {e}")],
        Ok(Ok(_)) => judge(&tj, &damaged, &truth, &m, (anchor.seq, &last.hash)),
    };
    Outcome { case, model_notes: notes, problems }
}

/// What the repaired journal, its records and the quarantine show, against the model.
fn judge(tj: &TempJournal, old: &[u8], truth: &Truth, m: &Model, (a_seq, a_hash): (u64, &str)) -> Vec<String> {
    let mut problems = vec![];
    let new = tj.bytes();
    let mut got: Vec<Id> = vec![];
    let mut records: Vec<Value> = vec![];
    for (s, e) in pieces(&new) {
        let line = &new[s..e];
        if let Some(l) = truth.line(line) {
            got.push(l.id);
        } else if line.last() == Some(&LF)
            && let Ok(v) = serde_json::from_slice::<Value>(&line[..line.len() - 1])
            && v["kind"] == "journal.repaired"
        {
            records.push(v["data"].clone());
        } else {
            problems.push(format!("the new file holds a piece at byte {s} that is neither a line of the old file nor a repair record"));
        }
    }

    // The lines: exactly the model's, in chain order.
    let want: Vec<Id> = m.kept.iter().map(|k| k.0).collect();
    let (got_set, want_set): (HashSet<Id>, HashSet<Id>) = (got.iter().copied().collect(), want.iter().copied().collect());
    let lost: Vec<Id> = want.iter().copied().filter(|i| !got_set.contains(i)).collect();
    if !lost.is_empty() {
        problems.push(format!("provable lines lost: {}", seqs(&lost)));
    }
    let foreign_kept: Vec<Id> = got.iter().copied().filter(|i| matches!(i, Id::Foreign(_)) && !want_set.contains(i)).collect();
    if !foreign_kept.is_empty() {
        problems.push(format!("lines of another journal kept: {}", seqs(&foreign_kept)));
    }
    let unproven: Vec<Id> = got.iter().copied().filter(|i| matches!(i, Id::Own(_)) && !want_set.contains(i)).collect();
    if !unproven.is_empty() {
        problems.push(format!("own lines kept that the rule does not prove: {}", seqs(&unproven)));
    }
    if got.len() != got_set.len() {
        problems.push("a line is in the new file twice".into());
    }
    if lost.is_empty() && foreign_kept.is_empty() && unproven.is_empty() && got != want {
        problems.push(format!("the kept lines are not in chain order: {:?}", got.iter().take(40).collect::<Vec<_>>()));
    }

    // verify: clean, the anchor agreeing.
    match verify::verify_chain(&RealDisk, tj.path(), Some(&AnchorStore::new(&tj.home))) {
        Ok(r) => {
            if r.verdict != Verdict::Clean || !matches!(r.anchor, AnchorCheck::Agrees { .. }) || r.replaced.is_some() {
                problems.push(format!("verify after the repair: {:?}, anchor {:?}, replaced {:?}", r.verdict, r.anchor, r.replaced));
            }
        }
        Err(e) => problems.push(format!("verify after the repair failed: {e}")),
    }

    // The quarantine: exactly the damaged regions.
    let qdir = tj.paths.dir().join("quarantine");
    let mut qfiles: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(&qdir) {
        for e in rd {
            let e = e.unwrap();
            qfiles.insert(e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap());
        }
    }
    let mut q_bytes: Vec<&Vec<u8>> = qfiles.values().collect();
    q_bytes.sort();
    let mut region_bytes: Vec<Vec<u8>> = m.regions.iter().map(|&(s, e)| old[s..e].to_vec()).collect();
    region_bytes.sort();
    if q_bytes.iter().map(|b| b.as_slice()).ne(region_bytes.iter().map(|b| b.as_slice())) {
        problems.push(format!(
            "the quarantine holds {} files of {:?} bytes; the damaged regions are {:?}",
            qfiles.len(),
            qfiles.values().map(Vec::len).collect::<Vec<_>>(),
            m.regions.iter().map(|&(s, e)| format!("{s}..{e}")).collect::<Vec<_>>()
        ));
    }
    if let Some((s, e)) = m.torn
        && !qfiles.iter().any(|(name, b)| name.starts_with("torn-") && b[..] == old[s..e])
    {
        problems.push(format!("the torn tail {s}..{e} is not in a torn- quarantine file"));
    }

    // The records.
    let region_at = |from: usize| m.regions.iter().copied().find(|&(s, _)| s == from);
    let names_region = |r: &Value, (s, e): (usize, usize), problems: &mut Vec<String>, what: &str| {
        let file = r["quarantine_file"].as_str().unwrap_or_default();
        let bytes = &old[s..e];
        let lines = bytes.iter().filter(|&&b| b == LF).count() + usize::from(bytes.last() != Some(&LF));
        let ok = r["from_offset"].as_u64() == Some(s as u64)
            && r["to_offset"].as_u64() == Some(e as u64)
            && r["lines"].as_u64() == Some(lines as u64)
            && qfiles.get(file).is_some_and(|q| q[..] == *bytes)
            && file.starts_with("corrupt-")
            && r["quarantine_blake3"].as_str() == Some(blake3::hash(bytes).to_hex().as_str());
        if !ok {
            problems.push(format!("{what}: the record does not name region {s}..{e} ({lines} lines): {r}"));
        }
    };
    let gap_records: Vec<&Value> = records.iter().filter(|r| r.get("lost_from").is_some()).collect();
    let got_gaps: Vec<(u64, u64, String)> = gap_records
        .iter()
        .map(|r| {
            (r["lost_from"].as_u64().unwrap_or(0), r["lost_to"].as_u64().unwrap_or(0), r["next_prev"].as_str().unwrap_or("").to_string())
        })
        .collect();
    let want_gaps: Vec<(u64, u64, String)> = m.gaps.iter().map(|g| (g.from, g.to, g.next_prev.clone())).collect();
    if got_gaps != want_gaps {
        let show = |v: &[(u64, u64, String)]| v.iter().map(|g| format!("{}-{}", g.0, g.1)).collect::<Vec<_>>().join(",");
        problems.push(format!("lost seqs: repair says [{}], the model [{}]", show(&got_gaps), show(&want_gaps)));
    } else {
        for (g, r) in m.gaps.iter().zip(&gap_records) {
            match region_at(g.after) {
                Some(region) => names_region(r, region, &mut problems, &format!("gap {}-{}", g.from, g.to)),
                None => {
                    if r["from_offset"].as_u64() != Some(g.after as u64)
                        || r["to_offset"] != r["from_offset"]
                        || !r["quarantine_file"].is_null()
                    {
                        problems.push(format!("gap {}-{}: a region of no bytes at {} expected: {r}", g.from, g.to, g.after));
                    }
                }
            }
            let anchor_named = (r["anchor_seq"].as_u64(), r["anchor_hash"].as_str());
            let want_anchor = if g.anchor { (Some(a_seq), Some(a_hash)) } else { (None, None) };
            if anchor_named != want_anchor {
                problems.push(format!("gap {}-{}: names the anchor as {anchor_named:?}, want {want_anchor:?}", g.from, g.to));
            }
        }
    }
    let mismatch = records.iter().filter(|r| r["cause"] == "anchor_mismatch").count();
    if mismatch != usize::from(m.anchor_mismatch) {
        problems.push(format!("{mismatch} anchor_mismatch records, the model wants {}", usize::from(m.anchor_mismatch)));
    }
    let plain: Vec<&Value> = records.iter().filter(|r| r["cause"] == "corruption" && r.get("lost_from").is_none()).collect();
    let (moved, named): (Vec<&Value>, Vec<&Value>) =
        plain.into_iter().partition(|r| r["quarantine_file"].is_null() && r["lines"] == 0 && r["from_offset"] == r["to_offset"]);
    if moved.len() != usize::from(m.moved) {
        problems.push(format!("{} records of lines moved into chain order, the model wants {}", moved.len(), usize::from(m.moved)));
    }
    let by_gap: HashSet<usize> = m.gaps.iter().map(|g| g.after).collect();
    let mut want_named: Vec<(usize, usize)> =
        m.regions.iter().copied().filter(|&(s, _)| !by_gap.contains(&s) && Some((s, old.len())) != m.torn).collect();
    want_named.sort();
    let mut got_named: Vec<(usize, usize, &Value)> = named
        .iter()
        .map(|r| (r["from_offset"].as_u64().unwrap_or(u64::MAX) as usize, r["to_offset"].as_u64().unwrap_or(0) as usize, *r))
        .collect();
    got_named.sort_by_key(|x| (x.0, x.1));
    if got_named.iter().map(|x| (x.0, x.1)).ne(want_named.iter().copied()) {
        problems.push(format!(
            "regions named without a gap: repair {:?}, the model {:?}",
            got_named.iter().map(|x| format!("{}..{}", x.0, x.1)).collect::<Vec<_>>(),
            want_named.iter().map(|x| format!("{}..{}", x.0, x.1)).collect::<Vec<_>>()
        ));
    } else {
        for (&region, (_, _, r)) in want_named.iter().zip(&got_named) {
            names_region(r, region, &mut problems, "region");
        }
    }

    // One repair, one answer.
    QUIET.with(|q| q.set(true));
    let again = panic::catch_unwind(AssertUnwindSafe(|| repair::repair(&tj.journal(), Some(&tj.scope()), None)));
    QUIET.with(|q| q.set(false));
    match again {
        Ok(Ok(RepairOutcome::NothingToRepair)) => {}
        Ok(Ok(other)) => problems.push(format!("a second repair did more: {other:?}")),
        Ok(Err(e)) => problems.push(format!("a second repair failed: {e}")),
        Err(_) => problems.push("a second repair panicked".into()),
    }
    problems
}

fn cases() -> u64 {
    std::env::var(CASES_VAR).ok().and_then(|v| v.parse().ok()).unwrap_or(QUICK_CASES)
}

fn seed_of(case: u64) -> u64 {
    let mut r = Rng(BASE_SEED ^ case.wrapping_mul(0xa076_1d64_78bd_642f));
    r.next()
}

fn replay_seed() -> Option<u64> {
    let text = std::env::var(SEED_VAR).ok()?;
    let text = text.trim();
    Some(match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).expect("ABCD_REPAIR_MODEL_SEED is hex after 0x"),
        None => text.parse().expect("ABCD_REPAIR_MODEL_SEED is a number"),
    })
}

fn report(o: &Outcome) -> String {
    let mut s = o.case.shape();
    for n in &o.model_notes {
        s += &format!("\n    . {n}");
    }
    for p in &o.problems {
        s += &format!("\n    ! {p}");
    }
    s
}

#[test]
fn one_repair_keeps_exactly_what_the_rule_of_proof_proves() {
    let default_hook = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if !QUIET.with(Cell::get) {
            default_hook(info);
        }
    }));
    let _ = foreign();
    let mut stats = Stats::default();
    let seeds: Vec<u64> = match replay_seed() {
        Some(seed) => vec![seed],
        None => (0..cases()).map(seed_of).collect(),
    };
    let mut failed: Vec<Outcome> = vec![];
    for &seed in &seeds {
        let o = run_case(seed, &mut stats);
        if seeds.len() == 1 {
            eprintln!("{}", report(&o));
        }
        if !o.problems.is_empty() {
            failed.push(o);
        }
    }
    if std::env::var_os(STATS_VAR).is_some() {
        eprintln!(
            "repair_model: {} cases; damaged file clean {}, torn {}, salvaged {}; gap records {} (lost tails {}); lines moved in {} cases; anchor_mismatch in {}; a run of the other journal kept by the rule in {}; not judged {}",
            stats.cases,
            stats.clean,
            stats.torn,
            stats.salvaged,
            stats.gaps,
            stats.lost_tails,
            stats.moved,
            stats.anchor_mismatch,
            stats.foreign_kept_by_rule,
            stats.unmodelled
        );
    }
    if failed.is_empty() {
        return;
    }
    // Grouped by the kinds of damage, the smallest case of each first.
    let mut groups: BTreeMap<String, Vec<&Outcome>> = BTreeMap::new();
    for o in &failed {
        groups.entry(o.case.kinds()).or_default().push(o);
    }
    let mut text = format!("{} of {} cases broke the rule of proof\n", failed.len(), stats.cases);
    for (kinds, os) in &groups {
        let smallest = os.iter().min_by_key(|o| (o.case.damage.len(), o.case.events)).unwrap();
        text += &format!("\n{kinds}: {} cases; the smallest:\n{}\n", os.len(), report(smallest));
    }
    panic!("{text}");
}

/// The model on the issue's own shapes, so a misreading of the rule shows here first.
#[test]
fn the_model_reads_the_issues_shapes_as_the_rule_does() {
    let tj = build_journal(12);
    let clean = tj.bytes();
    let (lines, own) = lines_of(&clean, Id::Own);
    let truth = Truth { own, foreign: foreign() };
    let anchor = truth.own[&lines[12]].clone();
    let run = |bytes: Vec<u8>| {
        let s = scan(&bytes, &truth);
        let m = model(&bytes, &s, &truth, (anchor.seq, &anchor.hash));
        (m.kept.iter().map(|k| k.0).collect::<Vec<_>>(), m.gaps.iter().map(|g| (g.from, g.to)).collect::<Vec<_>>(), m)
    };
    let all: Vec<Id> = (0..=12).map(Id::Own).collect();
    // A copy of seq 12 after seq 3: nothing lost, the copy is damage.
    let mut dup = lines[..4].concat();
    dup.extend_from_slice(&lines[12]);
    dup.extend_from_slice(&lines[4..].concat());
    let (kept, gaps, m) = run(dup);
    assert_eq!((kept, gaps), (all.clone(), vec![]));
    assert_eq!(m.regions.len(), 1);
    // Seqs 5 and 6 swapped: moved, not lost.
    let mut swapped = lines.clone();
    swapped.swap(5, 6);
    let (kept, gaps, m) = run(swapped.concat());
    assert_eq!((kept, gaps), (all.clone(), vec![]));
    assert!(m.moved && m.regions.is_empty());
    // The other journal appended: none of it kept.
    let mut appended = clean.clone();
    appended.extend_from_slice(&foreign().lines[..15].concat());
    let (kept, gaps, m) = run(appended);
    assert_eq!((kept, gaps), (all.clone(), vec![]));
    assert_eq!(m.regions.len(), 1);
    assert!(m.torn.is_none(), "lines written whole are no torn tail");
    // Seq 12 cut off and seq 3 damaged: 3 lost, 4..=11 a run that fits, 12 a lost tail.
    let mut cut = lines[..12].to_vec();
    cut[3][40] ^= 1;
    let (kept, gaps, m) = run(cut.concat());
    assert_eq!(kept, [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11].map(Id::Own));
    assert_eq!(gaps, [(3, 3), (12, 12)]);
    assert!(m.gaps[1].anchor && !m.anchor_mismatch);
    // Only cut short at a line boundary (the file verifies clean): the anchor's seqs past
    // the cut are a lost tail, recorded with no bytes.
    let (kept, gaps, m) = run(lines[..8].concat());
    assert_eq!((kept, gaps), (all[..8].to_vec(), vec![(8, 12)]));
    assert!(m.gaps[0].anchor && m.regions.is_empty() && !m.anchor_mismatch);
    // Two damaged lines: F to 2, a run 4..=7, B from 9 to the anchor.
    let mut two = lines.clone();
    two[3][40] ^= 1;
    two[8][40] ^= 1;
    let (kept, gaps, _) = run(two.concat());
    assert_eq!(kept, [0, 1, 2, 4, 5, 6, 7, 9, 10, 11, 12].map(Id::Own));
    assert_eq!(gaps, [(3, 3), (8, 8)]);
    // The same, with a slice of the other journal whose seqs overlap the run: neither fits
    // alone, so both are damage.
    let mut overlap = two.concat();
    let at = lines[..10].concat().len();
    overlap.splice(at..at, foreign().lines[5..7].concat());
    let (kept, gaps, _) = run(overlap);
    assert_eq!(kept, [0, 1, 2, 9, 10, 11, 12].map(Id::Own));
    assert_eq!(gaps, [(3, 8)]);
    // Seqs 3 to 8 zeroed (a lost page) and the other journal's seqs 5 and 6 spliced in
    // there: nothing of this journal fits 4..=7 any more, so the rule keeps the foreign
    // run, which fits alone. The rule cannot tell it from the journal's own lines (the
    // issue's "no foreign line is kept" does not hold for this shape; told to the lead).
    let mut zeroed = lines.concat();
    let (from, to) = (lines[..3].concat().len(), lines[..9].concat().len());
    zeroed[from..to - 1].fill(0);
    zeroed.splice(to..to, foreign().lines[5..7].concat());
    let (kept, gaps, m) = run(zeroed);
    assert_eq!(
        kept,
        [Id::Own(0), Id::Own(1), Id::Own(2), Id::Foreign(5), Id::Foreign(6), Id::Own(9), Id::Own(10), Id::Own(11), Id::Own(12)]
    );
    assert_eq!(gaps, [(3, 4), (7, 8)]);
    assert_eq!(m.foreign_kept, 2);
    // The same in a lost tail, the shape every such random case had: the journal cut after
    // seq 7 (the anchor's line 12 gone with the rest) and the other journal's seqs 9 and 10
    // appended. They fit 8..=12 alone and are kept between two gaps.
    let mut cut_short = lines[..8].concat();
    cut_short.extend_from_slice(&foreign().lines[9..11].concat());
    let (kept, gaps, m) = run(cut_short);
    assert_eq!(kept, [(0..8).map(Id::Own).collect::<Vec<_>>(), vec![Id::Foreign(9), Id::Foreign(10)]].concat());
    assert_eq!(gaps, [(8, 8), (11, 12)]);
    assert!(m.gaps[1].anchor && m.regions.is_empty());
    // The anchor's line damaged and a line of the other journal with its seq in the file:
    // a lost tail, and the rewrite hidden by damage is recorded (step 6).
    let mut hidden = lines.clone();
    hidden[12][40] ^= 1;
    let mut hidden = hidden.concat();
    hidden.extend_from_slice(&foreign().lines[12]);
    let (kept, gaps, m) = run(hidden);
    assert_eq!((kept, gaps), (all[..12].to_vec(), vec![(12, 12)]));
    assert!(m.gaps[0].anchor && m.anchor_mismatch);
    assert_eq!(m.regions.len(), 1, "the damaged line and the foreign one run together");
}
