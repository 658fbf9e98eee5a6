//! Properties of the journal, checked with quickcheck on a real disk in a temp folder.
//! `ABCD_QUICKCHECK_TESTS` raises the case count for a long run (default 64 in CI).

use crate::common;

use abcd::fold::FoldedState;
use abcd::journal::repair::{self, RepairOutcome};
use abcd::journal::scan::{self, Problem, StartPoint, Verdict};
use abcd::journal::storage::RealDisk;
use abcd::journal::{Event, NewEvent};
use abcd::store::checkpoint;
use abcd::store::{self, Store};
use common::{TempJournal, event, journal_with, line_starts};
use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult};
use serde_json::json;

fn cases() -> u64 {
    std::env::var("ABCD_QUICKCHECK_TESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(64)
}

fn check<A: quickcheck::Testable>(prop: A) {
    QuickCheck::new().tests(cases()).max_tests(cases() * 10).quickcheck(prop);
}

fn scan_all(path: &std::path::Path) -> (scan::ScanReport, Vec<Event>) {
    let file = abcd::journal::storage::Storage::open_read(&RealDisk, path).unwrap();
    let mut events = Vec::new();
    let report = scan::scan(file.as_ref(), StartPoint::GENESIS, |e, _| {
        events.push(e.clone());
        Ok::<(), ()>(())
    })
    .unwrap();
    (report, events)
}

/// Event payloads quickcheck varies: any kind from a small set, any string data.
#[derive(Clone, Debug)]
struct Payload {
    kind: &'static str,
    text: String,
    number: i64,
}

impl Arbitrary for Payload {
    fn arbitrary(g: &mut Gen) -> Self {
        let kinds = ["compaction.recorded", "session.started", "branch.created", "future.kind_unknown"];
        Payload { kind: g.choose(&kinds).unwrap(), text: String::arbitrary(g), number: i64::arbitrary(g) }
    }
}

#[test]
fn appended_events_read_back_identical() {
    fn prop(payloads: Vec<Payload>) -> TestResult {
        // No payload means no append and no journal file: nothing to read back.
        if payloads.is_empty() || payloads.len() > 40 {
            return TestResult::discard();
        }
        let tj = TempJournal::new();
        let j = tj.journal();
        let sent: Vec<NewEvent> = payloads
            .iter()
            .map(|p| NewEvent { kind: p.kind.into(), actor: event("x.y", 0).actor, data: json!({"text": p.text, "number": p.number}) })
            .collect();
        for e in &sent {
            j.append(e.clone(), Some(&tj.scope())).unwrap();
        }
        let (report, events) = scan_all(tj.path());
        let read: Vec<NewEvent> =
            events[1..].iter().map(|e| NewEvent { kind: e.kind.clone(), actor: e.actor.clone(), data: e.data.clone() }).collect();
        TestResult::from_bool(report.verdict == Verdict::Clean && read == sent)
    }
    check(prop as fn(Vec<Payload>) -> TestResult);
}

/// One sample journal per test binary; quickcheck takes plain `fn`s, not closures.
fn sample_bytes() -> &'static [u8] {
    static SAMPLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    SAMPLE.get_or_init(|| journal_with(12).bytes())
}

fn scan_bytes(bytes: &[u8]) -> (scan::ScanReport, Vec<Event>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("case.jsonl");
    std::fs::write(&path, bytes).unwrap();
    scan_all(&path)
}

/// What a cut at `cut` must read as: the whole lines before it, clean at a line
/// boundary and a torn tail (never corruption) inside a line.
fn cut_reads_as_prefix(bytes: &[u8], cut: usize) -> bool {
    let (report, events) = scan_bytes(&bytes[..cut]);
    let whole_lines = bytes[..cut].iter().filter(|&&b| b == b'\n').count();
    let at_boundary = cut == 0 || bytes[cut - 1] == b'\n';
    let last_start = bytes[..cut].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let verdict_ok = match &report.verdict {
        Verdict::Clean => at_boundary,
        Verdict::TornTail(t) => !at_boundary && t.offset as usize == last_start && t.len as usize == cut - last_start,
        Verdict::Corrupt(_) => false,
    };
    verdict_ok && events.len() == whole_lines
}

#[test]
fn a_journal_cut_at_any_byte_reads_as_its_longest_verified_prefix() {
    fn prop(cut: usize) -> bool {
        let bytes = sample_bytes();
        cut_reads_as_prefix(bytes, cut % (bytes.len() + 1))
    }
    check(prop as fn(usize) -> bool);
    // Every offset too, not only the sampled ones: the file is small.
    let bytes = sample_bytes();
    for cut in 0..=bytes.len() {
        assert!(cut_reads_as_prefix(bytes, cut), "cut at {cut}");
    }
}

#[test]
fn a_flipped_bit_in_any_complete_non_final_line_is_corruption_at_that_seq() {
    fn prop(at: usize, bit: u8) -> bool {
        let bytes = sample_bytes();
        let starts = line_starts(bytes);
        let at = at % *starts.last().unwrap();
        let mut bad = bytes.to_vec();
        bad[at] ^= 1 << (bit % 8);
        let (report, _) = scan_bytes(&bad);
        let seq = starts.iter().filter(|&&s| s <= at).count() - 1;
        matches!(report.verdict, Verdict::Corrupt(ref c) if c.seq == seq as u64 && c.offset == starts[seq] as u64 && matches!(c.problem, Problem::Line(_)))
    }
    check(prop as fn(usize, u8) -> bool);
}

#[test]
fn replay_from_a_checkpoint_equals_replay_from_genesis() {
    fn prop(n: u8, at: u8) -> TestResult {
        let n = (n % 40) as usize + 1;
        let at = (at as usize) % (n + 1);
        let tj = journal_with(n);
        let store = Store::new(tj.journal());
        // A checkpoint of the state after seq `at`, as the store would write it.
        let file = abcd::journal::storage::Storage::open_read(&RealDisk, tj.path()).unwrap();
        let mut state = FoldedState::default();
        let mut head = None;
        scan::scan(file.as_ref(), StartPoint::GENESIS, |e, pos| {
            if e.seq <= at as u64 {
                abcd::fold::fold_event(&mut state, e);
                head = Some(scan::Head { seq: e.seq, hash: e.hash, offset: pos.offset, end: pos.offset + pos.len });
            }
            Ok::<(), ()>(())
        })
        .unwrap();
        let head = head.unwrap();
        let id = state.journal.journal_id.clone().unwrap();
        let from_genesis =
            store::fold_from(file.as_ref(), FoldedState::default(), StartPoint::GENESIS, store::StateBase::Genesis, id.clone()).unwrap();
        let cp = checkpoint::Checkpoint {
            format: checkpoint::CHECKPOINT_FORMAT.into(),
            journal_id: id.clone(),
            seq: head.seq,
            hash: head.hash,
            line_offset: head.offset,
            next_offset: head.end,
            state,
        };
        checkpoint::write(&RealDisk, &tj.paths.checkpoints, &cp).unwrap();
        let usable =
            checkpoint::newest_usable(&RealDisk, &tj.paths.checkpoints, &id, file.as_ref(), None).unwrap().expect("the checkpoint matches");
        let from_cp = store::fold_from(
            file.as_ref(),
            usable.state.clone(),
            StartPoint { after: Some(usable.head()) },
            store::StateBase::Checkpoint { seq: usable.seq },
            id,
        )
        .unwrap();
        // And through the store's reader, with no projection on disk.
        let _ = std::fs::remove_file(tj.paths.dir().join(abcd::store::projection::STATE_FILE));
        let via_store = store.current_state().unwrap();
        TestResult::from_bool(
            from_cp.state == from_genesis.state && from_cp.head == from_genesis.head && via_store.state == from_genesis.state,
        )
    }
    check(prop as fn(u8, u8) -> TestResult);
}

/// Damage somewhere after genesis: up to 16 bytes of garbage at `at` (a flipped bit when
/// there is no garbage). Returns the damaged bytes and the damaged span.
fn damage(original: &[u8], at: usize, garbage: &[u8]) -> (Vec<u8>, std::ops::Range<usize>) {
    let mut b = original.to_vec();
    let genesis_end = b.iter().position(|&c| c == b'\n').unwrap() + 1;
    let at = genesis_end + at % (b.len() - genesis_end);
    let mut end = at;
    for (i, g) in garbage.iter().take(16).enumerate() {
        if at + i < b.len() {
            b[at + i] = *g;
            end = at + i + 1;
        }
    }
    if garbage.is_empty() {
        b[at] ^= 0x20;
        end = at + 1;
    }
    (b, at..end)
}

#[test]
fn repair_never_deletes_a_byte() {
    fn prop(n: u8, at: usize, garbage: Vec<u8>) -> TestResult {
        let n = (n % 20) as usize + 3;
        let tj = journal_with(n);
        let (original, _) = damage(&tj.bytes(), at, &garbage);
        std::fs::write(tj.path(), &original).unwrap();
        let outcome = match repair::repair(&tj.journal(), Some(&tj.scope()), None) {
            Ok(o) => o,
            Err(e) => panic!("repair failed: {e}"),
        };
        let kept = tj.bytes();
        let (report, _) = scan_all(tj.path());
        if report.verdict != Verdict::Clean {
            return TestResult::error(format!("the repaired journal does not verify: {:?}", report.verdict));
        }
        let salvage = match outcome {
            RepairOutcome::NothingToRepair => return TestResult::from_bool(kept == original),
            RepairOutcome::TornTailCut { quarantine, .. } => {
                let mut rebuilt = kept.clone();
                rebuilt.extend_from_slice(&std::fs::read(quarantine).unwrap());
                return TestResult::from_bool(rebuilt == original);
            }
            RepairOutcome::Salvaged(s) => s,
            RepairOutcome::AnchorAccepted { .. } => return TestResult::failed(),
            RepairOutcome::StartedAfresh { .. } => return TestResult::failed(),
            // This property's journals have no path record naming another journal.
            RepairOutcome::RepairedAndAccepted { .. } => return TestResult::failed(),
        };
        // Every moved region is in its quarantine file, byte for byte.
        let mut moved: Vec<(u64, u64)> = salvage.regions.iter().map(|r| (r.offset, r.len)).collect();
        for r in &salvage.regions {
            let copy = r.quarantine.as_ref().map(|q| std::fs::read(q).unwrap()).unwrap_or_default();
            if copy != original[r.offset as usize..(r.offset + r.len) as usize] {
                return TestResult::error(format!("quarantine of the region at byte {} differs from what was there", r.offset));
            }
        }
        if let Some((q, len)) = &salvage.torn {
            let start = original.len() as u64 - len;
            if std::fs::read(q).unwrap() != original[start as usize..] {
                return TestResult::error("the torn tail's copy differs");
            }
            moved.push((start, *len));
        }
        // Every other byte is in the repaired journal, in order, with only the repair's
        // records added between.
        moved.sort();
        let mut outside = Vec::new();
        let mut at = 0u64;
        for (offset, len) in moved {
            outside.extend_from_slice(&original[at as usize..offset as usize]);
            at = offset + len;
        }
        outside.extend_from_slice(&original[at as usize..]);
        let mut without_records = Vec::new();
        let mut at = 0u64;
        for r in &salvage.records {
            without_records.extend_from_slice(&kept[at as usize..r.offset as usize]);
            at = r.end;
        }
        without_records.extend_from_slice(&kept[at as usize..]);
        TestResult::from_bool(outside == without_records)
    }
    check(prop as fn(u8, usize, Vec<u8>) -> TestResult);
}

/// The salvage rule: a line the damage did not touch is in the journal after repair,
/// whatever happened before or after it.
#[test]
fn repair_keeps_every_line_whose_own_hash_verifies() {
    fn prop(n: u8, at: usize, garbage: Vec<u8>, second: Option<(usize, Vec<u8>)>) -> TestResult {
        let n = (n % 20) as usize + 3;
        let tj = journal_with(n);
        let clean = tj.bytes();
        let (mut damaged, first) = damage(&clean, at, &garbage);
        let mut spans = vec![first];
        if let Some((at2, garbage2)) = second {
            let (again, span) = damage(&damaged, at2, &garbage2);
            damaged = again;
            spans.push(span);
        }
        std::fs::write(tj.path(), &damaged).unwrap();
        if let Err(e) = repair::repair(&tj.journal(), Some(&tj.scope()), None) {
            return TestResult::error(format!("repair failed: {e}"));
        }
        let kept = tj.bytes();
        let (report, _) = scan_all(tj.path());
        if report.verdict != Verdict::Clean {
            return TestResult::error(format!("the repaired journal does not verify: {:?}", report.verdict));
        }
        let starts = line_starts(&clean);
        for (i, &start) in starts.iter().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(clean.len());
            let untouched = spans.iter().all(|s| s.end <= start || s.start >= end);
            let line = &clean[start..end];
            if untouched && !kept.windows(line.len()).any(|w| w == line) {
                return TestResult::error(format!("line {i} (bytes {start}..{end}) was not damaged and is gone after repair"));
            }
        }
        TestResult::passed()
    }
    check(prop as fn(u8, usize, Vec<u8>, Option<(usize, Vec<u8>)>) -> TestResult);
}

/// Exhaustive over the two lines before the last, where a damaged newline merges a line
/// into the final one: the merged line must still read as corruption, not a torn tail.
#[test]
fn every_flipped_bit_near_the_end_is_corruption_at_that_seq() {
    let bytes = sample_bytes();
    let starts = line_starts(bytes);
    let n = starts.len();
    for seq in n - 3..n - 1 {
        for at in starts[seq]..starts[seq + 1] {
            for bit in 0..8 {
                let mut bad = bytes.to_vec();
                bad[at] ^= 1 << bit;
                let (report, _) = scan_bytes(&bad);
                assert!(
                    matches!(report.verdict, Verdict::Corrupt(ref c) if c.seq == seq as u64 && c.offset == starts[seq] as u64),
                    "flip at byte {at} bit {bit}: {:?}",
                    report.verdict
                );
            }
        }
    }
}
