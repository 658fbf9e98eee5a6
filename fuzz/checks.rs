//! The invariants the fuzz targets check, written once. The fuzz targets include this file
//! with `#[path = "../checks.rs"]`; `tests/journal/fuzz_corpus.rs` includes it with
//! `#[path = "../../fuzz/checks.rs"]` and replays every committed corpus input through the
//! same functions, so an ordinary `cargo test` re-checks every input a fuzzer ever kept.
//!
//! Every check panics on a broken invariant: that is what libFuzzer reports as a crash.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use abcd::checklist::render;
use abcd::event;
use abcd::fold::checklist::{Item, check_item};
use abcd::fold::{self, FoldedState, audit};
use abcd::host::{self, HookEvent, HookReply, RequestDetail, StartSource, ToolCall};
use abcd::journal::format::{self, Actor, Event, Hash, NewEvent};
use abcd::journal::scan::{self, Head, LinePos, ScanReport, StartPoint, Tail, Verdict};
use abcd::journal::storage::{FileFacts, Storage, StorageFile};
use abcd::secrets;
use abcd::store::checkpoint;
use abcd::store::projection::{self, ChecklistFile, ChecklistFileRejected};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// In-memory storage: a read-only file and a one-file store, so no target touches a disk.
// ---------------------------------------------------------------------------------------

/// A read-only in-memory journal or projection file: the library's own.
pub use abcd::journal::storage::BytesFile as MemFile;

fn read_only() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "the fuzz harness's files are read-only")
}

/// A store holding exactly one file, at `MemStorage::PATH`.
pub struct MemStorage(pub Arc<Vec<u8>>);

impl MemStorage {
    pub const PATH: &'static str = "/fuzz/checklist.json";

    fn only(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        if path == Path::new(Self::PATH) { Ok(Box::new(MemFile(self.0.to_vec()))) } else { Err(io::ErrorKind::NotFound.into()) }
    }
}

impl Storage for MemStorage {
    fn open_rw(&self, _: &Path) -> io::Result<Box<dyn StorageFile>> {
        Err(read_only())
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.only(path)
    }
    fn create_new(&self, _: &Path) -> io::Result<Box<dyn StorageFile>> {
        Err(read_only())
    }
    fn open_or_create(&self, _: &Path) -> io::Result<Box<dyn StorageFile>> {
        Err(read_only())
    }
    fn rename(&self, _: &Path, _: &Path) -> io::Result<()> {
        Err(read_only())
    }
    fn sync_dir(&self, _: &Path) -> io::Result<()> {
        Ok(())
    }
    fn create_dir_all(&self, _: &Path, _: u32) -> io::Result<()> {
        Err(read_only())
    }
    fn facts(&self, path: &Path) -> io::Result<Option<FileFacts>> {
        Ok((path == Path::new(Self::PATH)).then(|| FileFacts {
            is_file: true,
            is_dir: false,
            is_symlink: false,
            uid: 0,
            mode: 0o100600,
            len: self.0.len() as u64,
            id: None,
            links: 1,
        }))
    }
    fn list_dir(&self, _: &Path) -> io::Result<Vec<PathBuf>> {
        Ok(vec![PathBuf::from(Self::PATH)])
    }
    fn remove_cache_file(&self, _: &Path) -> io::Result<()> {
        Err(read_only())
    }
}

fn load_checklist_bytes(bytes: &[u8]) -> Result<ChecklistFile, ChecklistFileRejected> {
    projection::load_checklist(&MemStorage(Arc::new(bytes.to_vec())), Path::new(MemStorage::PATH))
}

// ---------------------------------------------------------------------------------------
// Target `journal_reader`: arbitrary bytes as a journal.
// ---------------------------------------------------------------------------------------

/// What reading one journal found, for the targets that check more.
pub struct JournalOutcome {
    pub report: ScanReport,
    pub events: Vec<Event>,
    pub positions: Vec<LinePos>,
}

/// Arbitrary bytes as a journal.
pub fn journal_reader(bytes: &[u8]) {
    check_journal(bytes);
}

/// Scans `bytes` as a journal, checks every reader invariant and folds what verified.
pub fn check_journal(bytes: &[u8]) -> JournalOutcome {
    let file = MemFile(bytes.to_vec());
    let len = bytes.len() as u64;
    let mut events: Vec<Event> = Vec::new();
    let mut positions: Vec<LinePos> = Vec::new();
    let report = scan::scan(&file, StartPoint::GENESIS, |e, pos| {
        events.push(e.clone());
        positions.push(pos);
        Ok::<(), std::convert::Infallible>(())
    })
    .expect("an in-memory scan cannot fail");

    // The report describes this file, and every verified event is where it says.
    assert_eq!(report.file_len, len, "file_len");
    assert_eq!(report.events_seen, events.len() as u64, "events_seen counts the visits");
    let mut expected_offset = 0u64;
    let mut prev = Hash::genesis_prev();
    let mut next_seq = 0u64;
    for (i, (e, pos)) in events.iter().zip(&positions).enumerate() {
        assert_eq!(e.seq, next_seq, "events are consecutive from 0, but for seqs a gap record stands in for");
        assert_eq!(e.prev, prev, "each event chains onto the one before (a gap record's next_prev after one)");
        assert_eq!(pos.offset, expected_offset, "verified lines are contiguous from byte 0");
        assert!(pos.len > 0 && pos.offset + pos.len <= len, "a line lies inside the file");
        let line = &bytes[pos.offset as usize..(pos.offset + pos.len) as usize];
        assert_eq!(format::verify_line(line).as_ref(), Ok(e), "the visited event is its line's");
        assert_eq!(e.kind == format::GENESIS_KIND, i == 0, "journal.opened is event 0 and only event 0");
        let gap = e.gap();
        assert_eq!(
            gap.is_some(),
            e.kind == format::REPAIRED_KIND && e.data.get("lost_to").is_some(),
            "a gap record is a repair naming lost seqs"
        );
        (next_seq, prev) = {
            let (seq, hash) = e.chain_position();
            (seq + 1, hash)
        };
        expected_offset = pos.offset + pos.len;
    }
    match (&report.head, events.last(), positions.last()) {
        (None, None, None) => {}
        (Some(h), Some(e), Some(pos)) => {
            let (seq, hash) = e.chain_position();
            assert_eq!(
                (h.seq, h.hash, h.offset, h.end),
                (seq, hash, pos.offset, pos.offset + pos.len),
                "head is the last event's chain position"
            );
        }
        _ => panic!("head {:?} disagrees with {} visited events", report.head, events.len()),
    }
    let verified_end = report.head.map_or(0, |h| h.end);
    match &report.verdict {
        Verdict::Clean => assert_eq!(verified_end, len, "a clean journal is verified lines to its last byte"),
        Verdict::TornTail(t) => {
            assert_eq!(t.offset, verified_end, "a torn tail starts right after the last verified line");
            assert!(t.len > 0 && t.offset + t.len == len, "a torn tail runs to the end: {t:?}, file {len}");
            assert!(t.len <= scan::MAX_TORN_TAIL_BYTES, "a torn tail is at most one crashed append: {}", t.len);
            if report.head.is_none() {
                assert!(t.len <= format::MAX_LINE_BYTES as u64, "a torn genesis is at most one line");
            }
        }
        Verdict::Corrupt(c) => {
            assert_eq!(c.offset, verified_end, "corruption is named where the verified prefix stops");
            assert!(c.offset < len, "corruption lies inside the file");
            assert_eq!(c.seq, next_seq, "corruption names the seq the bad line should have had");
        }
    }

    check_tail_agrees(&file, &report);
    check_scan_from_every_kind_of_start(&file, &report, &events, &positions);
    check_fold(&events, report.head, Some(&file));
    JournalOutcome { report, events, positions }
}

/// `read_tail` (the appender's bounded read) agrees with the full scan.
fn check_tail_agrees(file: &MemFile, report: &ScanReport) {
    let len = report.file_len;
    let tail = scan::read_tail(file).expect("an in-memory tail read cannot fail");
    match (&tail, &report.verdict, &report.head) {
        (Tail::Empty, _, _) => assert_eq!(len, 0, "read_tail says Empty only for an empty file"),
        (Tail::Good { head, torn }, Verdict::Clean, Some(h)) => {
            assert_eq!(head, h, "read_tail's head is the scan's");
            assert_eq!(torn, &None, "no torn region in a clean journal");
        }
        (Tail::Good { head, torn }, Verdict::TornTail(t), Some(h)) => {
            assert_eq!(head, h, "read_tail's head is the scan's");
            let torn = torn.as_ref().expect("read_tail sees the torn tail the scan sees");
            assert_eq!((torn.offset, torn.len), (t.offset, t.len), "the same torn region");
        }
        (Tail::Good { head, torn }, Verdict::Corrupt(c), _) => {
            // By design the bounded read does not see damage before its window: the
            // smallest window is the last 4 KiB, and it drops its first piece (maybe part
            // of a line). A bad line inside the window, or a line out of place whose
            // predecessor is inside it, must be seen.
            let window_start = len.saturating_sub(4096);
            let first_seen = match c.problem {
                scan::Problem::Line(_) => c.offset,
                _ => report.head.map_or(0, |h| h.offset),
            };
            assert!(len > 4096 && first_seen <= window_start, "read_tail missed corruption inside its window: {c:?}, file {len}");
            assert!(head.end <= len && head.offset < head.end, "read_tail's head lies inside the file");
            let mut line = vec![0u8; (head.end - head.offset) as usize];
            file.read_at(&mut line, head.offset).unwrap();
            let e = format::verify_line(&line).expect("read_tail's head verifies");
            assert_eq!(e.chain_position(), (head.seq, head.hash), "read_tail's head is that line");
            if let Some(t) = torn {
                assert!(t.offset == head.end && t.offset + t.len == len && t.len <= scan::MAX_TORN_TAIL_BYTES, "torn {t:?}");
            }
        }
        (Tail::TornGenesis(t), Verdict::TornTail(s), None) => assert_eq!(t, s, "a torn genesis is the scan's torn tail"),
        (Tail::Corrupt(c), Verdict::Corrupt(s), _) => assert_eq!(c, s, "read_tail names the scan's corruption"),
        (tail, verdict, head) => panic!("read_tail {tail:?} disagrees with the scan: {verdict:?}, head {head:?}"),
    }
}

/// A scan that starts after a known-good line (a checkpoint) ends exactly as one from genesis.
fn check_scan_from_every_kind_of_start(file: &MemFile, report: &ScanReport, events: &[Event], positions: &[LinePos]) {
    if events.is_empty() {
        return;
    }
    // The first event and the middle one: two start points are enough to catch a drift.
    for i in [0, events.len() / 2] {
        let (seq, hash) = events[i].chain_position();
        let after = Head { seq, hash, offset: positions[i].offset, end: positions[i].offset + positions[i].len };
        let mut seen = 0u64;
        let from = scan::scan(file, StartPoint { after: Some(after) }, |e, _| {
            assert_eq!(e, &events[i + 1 + seen as usize], "the same events after the start point");
            seen += 1;
            Ok::<(), std::convert::Infallible>(())
        })
        .expect("an in-memory scan cannot fail");
        assert_eq!(from.head, report.head, "a scan from a start point finds the same head");
        assert_eq!(from.verdict, report.verdict, "a scan from a start point reaches the same verdict");
        assert_eq!(from.events_seen, (events.len() - i - 1) as u64, "and visits only what follows it");
    }
}

// ---------------------------------------------------------------------------------------
// Folds and projections: what a reader shows never carries an invalid item or a secret.
// ---------------------------------------------------------------------------------------

fn no_secret(what: &str, text: &str) {
    if let Some(kind) = secrets::scan(text) {
        panic!("{what} carries a secret ({kind})");
    }
}

fn check_shown_item(item: &Item) {
    if let Err(r) = check_item(&item.fields) {
        panic!("item {:?} fails its own checks: {:?} {}", item.fields.id, r.field, r.reason);
    }
    for (field, text) in abcd::checklist::item::scannable_fields(&item.fields) {
        no_secret(field, text);
    }
}

/// Folds `events` (verified and in order) from nothing, checks the state, and when `head`
/// is given checks that every cache written from the state reads back as the same state.
pub fn check_fold(events: &[Event], head: Option<Head>, file: Option<&MemFile>) -> FoldedState {
    let mut state = FoldedState::default();
    for e in events {
        fold::fold_event(&mut state, e);
        let line = audit::audit_line(e);
        no_secret("an audit line's actor", &line.actor);
        no_secret("an audit line", &line.what);
    }
    check_state(&state);
    if let Some(head) = head {
        check_caches(&state, head, file);
    }
    state
}

fn check_state(state: &FoldedState) {
    let c = &state.checklist;
    for item in &c.items {
        check_shown_item(item);
    }
    let mut ids: Vec<&str> = c.items.iter().map(|i| i.fields.id.as_str()).collect();
    ids.sort_unstable();
    assert!(ids.windows(2).all(|w| w[0] != w[1]), "item ids are unique");
    if let Some(by) = &c.updated_by {
        no_secret("updated_by", by);
    }
    if let Some(r) = &c.last_refusal {
        for t in [&r.verb, &r.field, &r.kind] {
            no_secret("a refusal record", t);
        }
    }
    let j = &state.journal;
    if let Some(scope) = &j.scope {
        no_secret("the scope", &scope.to_string());
    }
    for s in &j.skipped {
        no_secret("a skipped event's note", &s.to_string());
    }
    for r in &j.repairs {
        if let Some(q) = &r.quarantine_file {
            assert!(fold::quarantine_name_ok(q), "a repair record names a quarantine file abcd writes");
        }
    }
    for b in &state.work.branches {
        no_secret("a branch", b);
    }
    if let Some(s) = &state.work.last_session {
        no_secret("the last session", s);
    }
    // The render stays within its budget (for any budget the hooks use) and shows only
    // checked items, so it carries no secret either.
    let now: jiff::Timestamp = "2027-01-01T00:00:00Z".parse().unwrap();
    let notes: Vec<String> = j.skipped.iter().map(|s| s.to_string()).collect();
    for budget in [render::MIN_BUDGET_CHARS, render::DEFAULT_BUDGET_CHARS] {
        let out = render::render(&c.items, &notes, budget, now);
        assert!(out.chars().count() <= budget, "the render is {} chars, over its {budget} budget", out.chars().count());
    }
}

/// Every cache written from a folded state reads back as that state: the checklist
/// projection (and last-good, the same format), the state file and a checkpoint.
fn check_caches(state: &FoldedState, head: Head, file: Option<&MemFile>) {
    let checklist = ChecklistFile::from_state(state, head);
    let loaded = load_checklist_bytes(&checklist.render());
    assert_eq!(loaded.as_ref(), Ok(&checklist), "a checklist projection written from a fold reads back");

    let state_bytes = projection::render_state(state, head);
    let storage = MemStorage(Arc::new(state_bytes));
    let (back, named) =
        projection::load_state_any(&storage, Path::new(MemStorage::PATH)).expect("a state file written from a fold reads back");
    assert_eq!((&back, named), (state, head), "the state file round-trips");

    let cp = checkpoint::Checkpoint {
        format: checkpoint::CHECKPOINT_FORMAT.into(),
        journal_id: state.journal.journal_id.clone().unwrap_or_default(),
        seq: head.seq,
        hash: head.hash,
        line_offset: head.offset,
        next_offset: head.end,
        state: state.clone(),
    };
    assert_eq!(checkpoint::decode(&checkpoint::encode(&cp)).as_ref(), Ok(&cp), "a checkpoint round-trips");
    if let Some(file) = file {
        let matched = checkpoint::matches_journal(&cp, &cp.journal_id, file).expect("in memory");
        assert_eq!(matched, Ok(()), "a checkpoint of the head matches its journal");
    }
}

// ---------------------------------------------------------------------------------------
// Target `journal_mutations`: structured damage to one valid journal.
// ---------------------------------------------------------------------------------------

/// The valid journal every mutation starts from, its lines, and what wrote them.
pub struct BaseJournal {
    pub bytes: Vec<u8>,
    /// `(offset, len)` of each line.
    pub lines: Vec<(usize, usize)>,
    pub events: Vec<(NewEvent, jiff::Timestamp)>,
    pub hashes: Vec<Hash>,
}

/// The small base (a dozen lines, one over the first 4 KiB tail window), or the same with
/// two long lines after it whose merge (a damaged newline) is over the 64 KiB line limit.
pub fn base_journal(long_tail: bool) -> &'static BaseJournal {
    static SMALL: OnceLock<BaseJournal> = OnceLock::new();
    static LONG: OnceLock<BaseJournal> = OnceLock::new();
    if long_tail { LONG.get_or_init(|| build_base(true)) } else { SMALL.get_or_init(|| build_base(false)) }
}

fn build_base(long_tail: bool) -> BaseJournal {
    let item = |id: &str, title: &str| json!({"id": id, "title": title, "state": "working"});
    let mut datas: Vec<(&str, Value)> = vec![
        (
            "journal.opened",
            json!({"journal_id": "0123456789abcdef0123456789abcdef", "scope": {"kind": "working_copy", "root": "/work/repo"}}),
        ),
        ("session.started", json!({"session": "s-1", "source": "startup", "working_copy": "/work/repo"})),
        ("checklist.item_added", json!({"item": item("fix-login", "Fix login")})),
        (
            "checklist.item_added",
            json!({"item": {"id": "ship-export", "title": "Ship the export", "state": "waiting", "waits_on": "pr:12",
                "next_look": "2026-12-02T09:00:00Z", "promise": "CI green => merge it", "owner_refs": ["feat/export", "pr:12"],
                "credential": {"kind": "github_token", "scope": "repo", "expiry": "2027-01-01T00:00:00Z"}}}),
        ),
        ("checklist.item_changed", json!({"id": "fix-login", "changes": {"state": "waiting", "waits_on": "person:reviewer"}})),
        ("branch.created", json!({"branch": "fix/login", "command": "git switch -c"})),
        ("checklist.write_refused", json!({"verb": "add", "field": "title", "kind": "github_token"})),
        ("compaction.recorded", json!({"session": "s-1", "trigger": "auto"})),
        ("future.kind", json!({"anything": [1, 2, 3]})),
        ("checklist.item_changed", json!({"id": "fix-login", "changes": {"state": "done", "waits_on": null}})),
        ("decision.recorded", json!({"text": "long ".repeat(700), "grounds": "a line over the first 4 KiB tail window"})),
        ("checklist.item_added", json!({"item": item("last-one", "The last one")})),
    ];
    if long_tail {
        datas.push(("decision.recorded", json!({"text": "a".repeat(40_000)})));
        datas.push(("decision.recorded", json!({"text": "b".repeat(30_000)})));
    }
    let t0: jiff::Timestamp = "2026-12-01T09:00:00.000Z".parse().unwrap();
    let mut bytes = Vec::new();
    let mut lines = Vec::new();
    let mut events = Vec::new();
    let mut hashes = Vec::new();
    let mut prev = Hash::genesis_prev();
    for (i, (kind, data)) in datas.into_iter().enumerate() {
        let ev = NewEvent { kind: kind.into(), actor: Actor { session: Some("s-1".into()), pid: 4242, tool: "abcd/fuzz".into() }, data };
        let t = t0.checked_add(jiff::SignedDuration::from_secs(61 * i as i64)).unwrap();
        let (line, hash) = format::encode_line(i as u64, t, &ev, &prev).unwrap();
        lines.push((bytes.len(), line.len()));
        bytes.extend_from_slice(&line);
        events.push((ev, t));
        hashes.push(hash);
        prev = hash;
    }
    BaseJournal { bytes, lines, events, hashes }
}

/// One mutation; its parameters are reduced modulo the current size when applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    Truncate {
        at: u32,
    },
    FlipBit {
        at: u32,
        bit: u8,
    },
    DuplicateLine {
        line: u8,
    },
    SwapLines {
        a: u8,
        b: u8,
    },
    InsertGarbage {
        at: u32,
        bytes: Vec<u8>,
    },
    ZeroRange {
        at: u32,
        len: u16,
    },
    AppendZeros {
        len: u16,
    },
    TruncateToLines {
        keep: u8,
    },
    DeleteLine {
        line: u8,
    },
    /// Replaces a line with a valid line of the same seq and prev but other bytes: a
    /// forked history (valid on its own, chains onto nothing after it).
    ForkLine {
        line: u8,
    },
}

const MAX_MUTATIONS: usize = 16;
/// Mutations that grow the file stop applying past this size.
const MAX_MUTATED_BYTES: usize = 512 * 1024;

/// Reads the mutation list a fuzz input spells: an opcode byte, then its parameters.
pub fn decode_mutations(input: &[u8]) -> Vec<Mutation> {
    fn u32_le(r: &mut impl Iterator<Item = u8>) -> Option<u32> {
        Some(u32::from_le_bytes([r.next()?, r.next()?, r.next()?, r.next()?]))
    }
    let mut r = input.iter().copied();
    let mut out = Vec::new();
    while out.len() < MAX_MUTATIONS {
        let Some(op) = r.next() else { break };
        let m = match op % 10 {
            0 => u32_le(&mut r).map(|at| Mutation::Truncate { at }),
            1 => u32_le(&mut r).and_then(|at| Some(Mutation::FlipBit { at, bit: r.next()? % 8 })),
            2 => r.next().map(|line| Mutation::DuplicateLine { line }),
            3 => r.next().and_then(|a| Some(Mutation::SwapLines { a, b: r.next()? })),
            4 => u32_le(&mut r).and_then(|at| {
                let n = r.next()? as usize % 64 + 1;
                let bytes: Vec<u8> = r.by_ref().take(n).collect();
                Some(Mutation::InsertGarbage { at, bytes })
            }),
            5 => u32_le(&mut r).and_then(|at| Some(Mutation::ZeroRange { at, len: u16::from_le_bytes([r.next()?, r.next()?]) })),
            6 => r.next().and_then(|a| Some(Mutation::AppendZeros { len: u16::from_le_bytes([a, r.next()?]) })),
            7 => r.next().map(|keep| Mutation::TruncateToLines { keep }),
            8 => r.next().map(|line| Mutation::DeleteLine { line }),
            _ => r.next().map(|line| Mutation::ForkLine { line }),
        };
        match m {
            Some(m) => out.push(m),
            None => break,
        }
    }
    out
}

/// `(offset, len)` of each piece ending in `\n` (and a last piece without one).
fn split_lines(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for nl in abcd::byte_search::byte_positions(b'\n', bytes) {
        out.push((start, nl + 1 - start));
        start = nl + 1;
    }
    if start < bytes.len() {
        out.push((start, bytes.len() - start));
    }
    out
}

fn modulo(x: u32, n: usize) -> usize {
    if n == 0 { 0 } else { x as usize % n }
}

/// The bytes of the base journal's line `i` forked: same seq, prev, kind and data, another
/// writer pid, so another hash.
fn forked_line(base: &BaseJournal, i: usize) -> Vec<u8> {
    let (ev, t) = &base.events[i];
    let mut ev = ev.clone();
    ev.actor.pid += 1;
    let prev = if i == 0 { Hash::genesis_prev() } else { base.hashes[i - 1] };
    format::encode_line(i as u64, *t, &ev, &prev).unwrap().0
}

pub fn apply_mutation(base: &BaseJournal, bytes: &mut Vec<u8>, m: &Mutation) {
    let needs_lines = matches!(
        m,
        Mutation::DuplicateLine { .. }
            | Mutation::SwapLines { .. }
            | Mutation::TruncateToLines { .. }
            | Mutation::DeleteLine { .. }
            | Mutation::ForkLine { .. }
    );
    let lines = if needs_lines { split_lines(bytes) } else { Vec::new() };
    let line = |i: u8| lines.get(i as usize % lines.len().max(1)).copied();
    match m {
        Mutation::Truncate { at } => bytes.truncate(modulo(*at, bytes.len() + 1)),
        Mutation::FlipBit { at, bit } => {
            if !bytes.is_empty() {
                let i = modulo(*at, bytes.len());
                bytes[i] ^= 1 << bit;
            }
        }
        Mutation::DuplicateLine { line: i } => {
            if let Some((off, len)) = line(*i) {
                let copy = bytes[off..off + len].to_vec();
                bytes.splice(off + len..off + len, copy);
            }
        }
        Mutation::SwapLines { a, b } => {
            if let (Some(x), Some(y)) = (line(*a), line(*b)) {
                let (x, y) = if x.0 <= y.0 { (x, y) } else { (y, x) };
                if x != y {
                    let mut out = bytes[..x.0].to_vec();
                    out.extend_from_slice(&bytes[y.0..y.0 + y.1]);
                    out.extend_from_slice(&bytes[x.0 + x.1..y.0]);
                    out.extend_from_slice(&bytes[x.0..x.0 + x.1]);
                    out.extend_from_slice(&bytes[y.0 + y.1..]);
                    *bytes = out;
                }
            }
        }
        Mutation::InsertGarbage { at, bytes: garbage } => {
            let at = modulo(*at, bytes.len() + 1);
            bytes.splice(at..at, garbage.iter().copied());
        }
        Mutation::ZeroRange { at, len } => {
            if !bytes.is_empty() {
                let at = modulo(*at, bytes.len());
                let end = (at + *len as usize).min(bytes.len());
                bytes[at..end].fill(0);
            }
        }
        Mutation::AppendZeros { len } => bytes.resize(bytes.len() + *len as usize, 0),
        Mutation::TruncateToLines { keep } => {
            let keep = *keep as usize % (lines.len() + 1);
            let end = lines[..keep].last().map_or(0, |&(o, l)| o + l);
            bytes.truncate(end);
        }
        Mutation::DeleteLine { line: i } => {
            if let Some((off, len)) = line(*i) {
                bytes.drain(off..off + len);
            }
        }
        Mutation::ForkLine { line: i } => {
            if let Some((off, len)) = line(*i) {
                let n = (*i as usize % lines.len()).min(base.events.len() - 1);
                bytes.splice(off..off + len, forked_line(base, n));
            }
        }
    }
}

/// Structured mutations of a valid journal: every reader invariant, and what each kind
/// of damage on its own must be classified as. The input's first byte picks the base
/// journal (odd: the one with a long tail), the rest spells the mutations.
pub fn journal_mutations(input: &[u8]) {
    let (long_tail, ops) = match input.split_first() {
        Some((&first, rest)) => (first % 2 == 1, rest),
        None => (false, input),
    };
    let base = base_journal(long_tail);
    let mutations = decode_mutations(ops);
    let mut bytes = base.bytes.clone();
    for m in &mutations {
        // Past the tail reader's widest window, growing the file only slows the fuzzer.
        let grows = matches!(m, Mutation::DuplicateLine { .. } | Mutation::InsertGarbage { .. } | Mutation::AppendZeros { .. });
        if !(grows && bytes.len() > MAX_MUTATED_BYTES) {
            apply_mutation(base, &mut bytes, m);
        }
    }
    let out = check_journal(&bytes);
    let report = &out.report;
    let n = base.lines.len();
    let start = |i: usize| base.lines[i].0 as u64;
    let end = |i: usize| (base.lines[i].0 + base.lines[i].1) as u64;
    let head_seq = report.head.map(|h| h.seq);

    // Truncations alone never look like corruption: what is left is the longest verified
    // prefix, clean or followed by a torn line.
    let truncation = |m: &Mutation| matches!(m, Mutation::Truncate { .. } | Mutation::TruncateToLines { .. });
    if mutations.iter().all(truncation) {
        let len = bytes.len() as u64;
        let whole = (0..n).take_while(|&i| end(i) <= len).count();
        assert_eq!(head_seq, whole.checked_sub(1).map(|s| s as u64), "a truncation keeps every whole line before the cut");
        let kept_end = whole.checked_sub(1).map_or(0, end);
        match &report.verdict {
            Verdict::Clean => assert_eq!(kept_end, len),
            Verdict::TornTail(t) => assert_eq!((t.offset, t.offset + t.len), (kept_end, len)),
            Verdict::Corrupt(c) => panic!("a truncation to {len} bytes was called corruption: {c:?}"),
        }
        return;
    }
    let [m] = mutations.as_slice() else { return };
    let corrupt = |seq: usize, offset: u64| match &report.verdict {
        Verdict::Corrupt(c) => assert_eq!((c.seq, c.offset), (seq as u64, offset), "{m:?}: corruption named at the wrong place"),
        v => panic!("{m:?} must be corruption at seq {seq}, found {v:?}"),
    };
    let seq_out_of_order = |found: usize| match &report.verdict {
        Verdict::Corrupt(c) => assert_eq!(c.problem, scan::Problem::SeqOutOfOrder { found: found as u64 }, "{m:?}"),
        v => panic!("{m:?}: {v:?}"),
    };
    match *m {
        Mutation::FlipBit { at, .. } => {
            let at = modulo(at, base.bytes.len());
            let i = base.lines.iter().position(|&(o, l)| at < o + l).unwrap();
            if i + 1 < n {
                // A flipped bit in a complete line with lines after it.
                corrupt(i, start(i));
            } else {
                // In the last line: indistinguishable from a torn write, never acknowledged.
                assert_eq!(head_seq, Some(i as u64 - 1), "{m:?}");
                assert!(matches!(&report.verdict, Verdict::TornTail(t) if t.offset == start(i)), "{m:?}: {:?}", report.verdict);
            }
        }
        Mutation::DuplicateLine { line } => {
            let i = line as usize % n;
            corrupt(i + 1, end(i));
            seq_out_of_order(i);
        }
        Mutation::SwapLines { a, b } => {
            let (a, b) = (a as usize % n, b as usize % n);
            if a != b {
                let (i, j) = (a.min(b), a.max(b));
                corrupt(i, start(i));
                seq_out_of_order(j);
            } else {
                assert_eq!((head_seq, &report.verdict), (Some(n as u64 - 1), &Verdict::Clean), "swapping a line with itself");
            }
        }
        Mutation::DeleteLine { line } => {
            let i = line as usize % n;
            if i + 1 == n {
                assert_eq!((head_seq, &report.verdict), (Some(i as u64 - 1), &Verdict::Clean), "{m:?} is a truncation");
            } else {
                corrupt(i, start(i));
                seq_out_of_order(i + 1);
            }
        }
        Mutation::ForkLine { line } => {
            let i = line as usize % n;
            let forked = forked_line(base, i);
            if i + 1 == n {
                // Undetectable from the file alone: the head anchor's job.
                assert_eq!(report.verdict, Verdict::Clean, "{m:?}");
                assert_eq!(report.head.map(|h| h.hash), Some(format::verify_line(&forked).unwrap().hash), "{m:?}");
            } else {
                corrupt(i + 1, start(i) + forked.len() as u64);
                assert!(matches!(&report.verdict, Verdict::Corrupt(c) if c.problem == scan::Problem::PrevMismatch), "{m:?}");
            }
        }
        Mutation::AppendZeros { len } if len > 0 => {
            // What a crash leaves after a size extension: a torn tail, never corruption.
            assert_eq!(head_seq, Some(n as u64 - 1), "{m:?}");
            assert!(matches!(&report.verdict, Verdict::TornTail(t) if t.offset == base.bytes.len() as u64), "{m:?}: {:?}", report.verdict);
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Target `hook_payload`: the host's payload parser and the reply renderer.
// ---------------------------------------------------------------------------------------

/// Arbitrary bytes as the payload of every hook event.
pub fn hook_payload(bytes: &[u8]) {
    for (event, adapter) in HookEvent::ALL.into_iter().flat_map(|e| host::Host::ALL.map(|h| (e, h))) {
        let parsed = adapter.parse(event, bytes);
        assert_eq!(parsed, adapter.parse(event, bytes), "parsing is deterministic");
        let Ok(req) = parsed else { continue };
        assert_eq!(req.event, event, "the request is for the event asked");
        assert!(!req.cwd.as_os_str().is_empty(), "a request always has a cwd");
        if let Some(s) = &req.session_id {
            assert!(!s.is_empty() && s.len() <= 128, "session ids are short and non-empty");
        }
        // Texts from the payload, in every reply slot, must render as valid JSON objects.
        let mut texts = vec![req.cwd.to_string_lossy().into_owned(), req.session_id.clone().unwrap_or_default()];
        match &req.detail {
            RequestDetail::SessionStart { source } => {
                assert_eq!(event, HookEvent::SessionStart);
                if let StartSource::Other(s) = source {
                    assert!(s.chars().count() <= 32 && !matches!(s.as_str(), "startup" | "resume" | "clear" | "compact"), "{s:?}");
                }
                texts.push(source.name().to_string());
            }
            RequestDetail::UserPromptSubmit => assert_eq!(event, HookEvent::UserPromptSubmit),
            RequestDetail::PreToolUse { call } => {
                assert_eq!(event, HookEvent::PreToolUse);
                match call {
                    ToolCall::WritesFile { tool, path } => texts.extend([tool.clone(), path.clone()]),
                    ToolCall::WritesFiles { tool, paths } => {
                        assert!(!paths.is_empty() && paths.len() <= host::codex::PATCH_FILES_MAX, "{paths:?}");
                        texts.push(tool.clone());
                        texts.extend(paths.iter().cloned());
                    }
                    ToolCall::WritesUnknown { tool, why, instead } => texts.extend([tool.clone(), why.clone(), instead.clone()]),
                    ToolCall::Shell { command, writes } => {
                        assert!(writes.len() <= host::codex::PATCH_FILES_MAX * (1 + host::codex::SHELL_PATCH_CD_MAX), "{writes:?}");
                        texts.push(command.clone());
                        texts.extend(writes.iter().cloned());
                    }
                    ToolCall::Question => {}
                    ToolCall::Other { tool } => texts.push(tool.clone()),
                }
            }
            RequestDetail::Compact { trigger } => {
                assert!(matches!(event, HookEvent::PreCompact | HookEvent::PostCompact));
                assert!(trigger == "manual" || trigger == "auto", "trigger {trigger:?}");
            }
            RequestDetail::Stop { last_assistant_message, .. } => {
                assert_eq!(event, HookEvent::Stop);
                texts.extend(last_assistant_message.clone());
            }
            RequestDetail::StopFailure { error } => {
                assert_eq!(event, HookEvent::StopFailure);
                assert!(error.chars().count() <= 64);
                texts.push(error.clone());
            }
            RequestDetail::SessionEnd => assert_eq!(event, HookEvent::SessionEnd),
            RequestDetail::Notification { notification_type, message } => {
                assert_eq!(event, HookEvent::Notification);
                assert!(notification_type.chars().count() <= 64);
                texts.push(notification_type.clone());
                texts.extend(message.clone());
            }
        }
        for text in &texts {
            let replies = [
                HookReply { context: Some(text.clone()), ..Default::default() },
                HookReply { system_message: Some(text.clone()), ..Default::default() },
                HookReply { deny: Some(text.clone()), ..Default::default() },
                HookReply { block: Some(text.clone()), ..Default::default() },
                HookReply {
                    context: Some(text.clone()),
                    system_message: Some(text.clone()),
                    deny: Some(text.clone()),
                    block: Some(text.clone()),
                },
            ];
            for reply in &replies {
                for out_event in HookEvent::ALL {
                    let Some(out) = adapter.render(out_event, reply) else { continue };
                    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("render gave invalid JSON ({e}): {out}"));
                    assert!(v.is_object(), "render gives one JSON object");
                    assert!(!out.contains('\n'), "one line of output");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Target `checklist_reader`: checklist.json / last-good, and event data through the fold.
// ---------------------------------------------------------------------------------------

/// Arbitrary bytes as a checklist file, as the same file re-signed (a valid digest over
/// whatever it says, as a hand edit with a recomputed digest would be), and as the `data`
/// of every checklist event kind folded onto a small valid history.
pub fn checklist_reader(bytes: &[u8]) {
    if let Ok(file) = load_checklist_bytes(bytes) {
        check_loaded(&file);
    }
    if let Ok(file) = serde_json::from_slice::<ChecklistFile>(bytes) {
        check_resigned(&file);
    }
    if let Ok(Value::Object(data)) = serde_json::from_slice::<Value>(bytes) {
        check_event_data(&Value::Object(data));
    }
}

/// A checklist file the reader accepted: everything it shows is checked. The reader shows
/// the items, `updated_by`, and each skipped event as a note (`store::reader`).
fn check_loaded(file: &ChecklistFile) {
    assert_eq!(file.schema, projection::CHECKLIST_SCHEMA);
    for item in &file.items {
        check_shown_item(item);
    }
    if let Some(by) = &file.updated_by {
        no_secret("an accepted checklist file's updated_by", by);
    }
    for s in &file.skipped {
        no_secret("an accepted checklist file's skipped note", &s.to_string());
    }
}

/// The file's content with a digest that matches it: the reader's item checks are then
/// all that stands between the file and a render.
fn check_resigned(file: &ChecklistFile) {
    let head: Head = file.journal.into();
    let state = FoldedState {
        checklist: file.to_state(),
        journal: fold::JournalSummary { skipped: file.skipped.clone(), ..Default::default() },
        ..Default::default()
    };
    let signed = ChecklistFile::from_state(&state, head);
    let loaded = load_checklist_bytes(&signed.render());
    // The loader also refuses a file whose updated_by or skipped notes carry a secret (F2).
    let shown_clean = signed
        .updated_by
        .iter()
        .chain(signed.skipped.iter().flat_map(|s| [&s.kind, &s.reason].into_iter().chain(s.field.as_ref())))
        .all(|t| abcd::secrets::scan(t).is_none());
    let all_pass = shown_clean && signed.items.iter().all(|i| check_item(&i.fields).is_ok());
    match &loaded {
        Ok(f) => {
            assert!(all_pass, "a file with an item that fails its checks, or a secret in what is shown, was accepted");
            assert_eq!(f, &signed, "what was loaded is what was written");
            check_loaded(f);
        }
        Err(ChecklistFileRejected::BadItem { .. }) => assert!(!all_pass, "every item passes, yet the file was refused"),
        Err(e) => panic!("a re-signed checklist file was refused: {e}"),
    }
}

/// The event kinds whose data the fold reads, and two it does not.
const DATA_KINDS: &[&str] = &[
    event::CHECKLIST_ITEM_ADDED,
    event::CHECKLIST_ITEM_CHANGED,
    event::CHECKLIST_WRITE_REFUSED,
    event::JOURNAL_REPAIRED,
    event::SESSION_STARTED,
    event::COMPACTION_RECORDED,
    event::BRANCH_CREATED,
    "session.judged",
    "future.kind",
];

/// `data` as each kind's data, on a well-formed line after a genesis and one item: the
/// fold never panics and never lets an invalid or secret-bearing field through.
fn check_event_data(data: &Value) {
    let base = base_journal(false);
    // Genesis, a session, and two items: enough state for a change to apply to.
    let prefix = 4;
    let history: Vec<Event> = (0..prefix)
        .map(|i| {
            let (o, l) = base.lines[i];
            format::verify_line(&base.bytes[o..o + l]).unwrap()
        })
        .collect();
    // The writer's session (updated_by) may come from the data too.
    let session = data.get("session").and_then(Value::as_str).map(str::to_owned);
    for kind in DATA_KINDS {
        let ev = NewEvent {
            kind: (*kind).into(),
            actor: Actor { session: session.clone(), pid: 1, tool: "abcd/fuzz".into() },
            data: data.clone(),
        };
        let t: jiff::Timestamp = "2026-12-01T10:00:00.000Z".parse().unwrap();
        let Ok((line, hash)) = format::encode_line(prefix as u64, t, &ev, &base.hashes[prefix - 1]) else { continue };
        let e = format::verify_line(&line).expect("an encoded line verifies");
        assert_eq!(e.hash, hash);
        // `decode` is total: a typed value or a named error.
        let _ = event::decode(kind, data);
        let mut events = history.clone();
        events.push(e);
        let head = Head { seq: prefix as u64, hash, offset: 0, end: line.len() as u64 };
        check_fold(&events, Some(head), None);
    }
}

// ---------------------------------------------------------------------------------------
// Target `cron`: the five-field cron parser and the next-match search of the stop verdict.
// ---------------------------------------------------------------------------------------

/// Zones as POSIX TZ strings (no tz database needed, so the replay is the same anywhere):
/// UTC, a fixed odd offset, and daylight-saving rules north and south, whole and half hour.
const CRON_ZONES: &[&str] = &[
    "UTC0",
    "<+0545>-5:45",
    "EST5EDT,M3.2.0,M11.1.0",
    "GMT0BST,M3.5.0/1,M10.5.0",
    "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
    "<-03>3<-02>,M3.5.0/-2,M10.5.0/-1",
];

/// The input: a zone selector byte, four bytes of seconds after 2026-01-01 (the instant
/// `after`), a flags byte (bit 0: recurring), then the expression's text.
pub fn cron(input: &[u8]) {
    use abcd::cron::{self as c, SessionCron};
    let (head, text) = input.split_at(input.len().min(6));
    let mut head = head.to_vec();
    head.resize(6, 0);
    let text = String::from_utf8_lossy(text);
    let tz = jiff::tz::TimeZone::posix(CRON_ZONES[head[0] as usize % CRON_ZONES.len()]).expect("a valid POSIX TZ string");
    let secs = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
    let recurring = head[5] & 1 == 1;
    let base: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    let after = base.checked_add(jiff::SignedDuration::from_secs(i64::from(secs))).unwrap().to_zoned_datetime(tz.clone());

    let parsed = c::parse(&text);
    assert_eq!(parsed, c::parse(&text), "parsing is deterministic");
    if text.len() > c::MAX_EXPR_LEN {
        assert!(matches!(parsed, Err(c::CronError::TooLong { .. })), "an over-long expression is refused as such");
    }
    if text.split_ascii_whitespace().count() != 5 {
        assert!(parsed.is_err(), "only five fields parse");
    }
    let cron = SessionCron { schedule: text.to_string(), recurring };
    let latest = c::latest_fire(&cron, &after);
    let Ok(expr) = parsed else {
        assert_eq!(latest, None, "an expression that does not parse never fires");
        return;
    };
    let next = c::next_match(&expr, &after);
    let Some(next) = next else {
        assert_eq!(latest, None, "an expression with no next match never fires");
        return;
    };
    let t = next.timestamp();
    assert!(t > after.timestamp(), "the next match is strictly after: {next} after {after}");
    assert_eq!(next.time_zone(), &tz, "the next match is in the zone asked");
    assert_eq!((next.second(), next.subsec_nanosecond()), (0, 0), "matches fall on whole minutes: {next}");
    // It is the first: asking again from any instant before it (and after `after`) finds it.
    let just_before = t.checked_sub(jiff::SignedDuration::from_secs(1)).unwrap().to_zoned_datetime(tz.clone());
    assert_eq!(c::next_match(&expr, &just_before).as_ref(), Some(&next), "the match is found again from one second before it");
    let half = after.timestamp().duration_until(t) / 2;
    let midway = after.timestamp().checked_add(half).unwrap().to_zoned_datetime(tz.clone());
    assert_eq!(c::next_match(&expr, &midway).as_ref(), Some(&next), "no match lies between `after` and the next match");
    if let Some(following) = c::next_match(&expr, &next) {
        assert!(following.timestamp() > t, "the following match is later");
    }
    let latest = latest.expect("a parsed expression with a next match fires");
    let lateness = t.duration_until(latest.timestamp());
    assert!(lateness >= jiff::SignedDuration::ZERO && lateness <= c::LATENESS_CAP, "lateness {lateness:?} is within the cap");
    if !recurring || cron.schedule == c::NO_LATENESS_SCHEDULE {
        assert_eq!(lateness, jiff::SignedDuration::ZERO, "a one-shot (and `*/5 * * * *`) is never late");
    }
    assert!(c::qualifies(&cron, &after, latest.timestamp()), "a wake qualifies for a deadline at its latest fire");
    if let Ok(earlier) = latest.timestamp().checked_sub(jiff::SignedDuration::from_secs(1)) {
        assert!(!c::qualifies(&cron, &after, earlier), "and not for one a second earlier");
    }
}
