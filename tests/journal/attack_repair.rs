//! Attacks on the salvaging repair by the rule of proof (issue 31, journal-format §10):
//! forged or damaged input, a hostile anchor, a crash at a step, a blowup. Each doc comment
//! gives the attack's reproduction, what a repair that falls for it does, and what §10
//! expects, which the test holds. An ignored test names the known limit or open item it
//! documents (docs/decisions.md).

use crate::common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use abcd::journal::anchor::{Anchor, AnchorStore};
use abcd::journal::format::{self, Actor, Event, Hash, NewEvent};
use abcd::journal::repair::{self, RepairError, RepairOutcome};
use abcd::journal::scan::Verdict;
use abcd::journal::storage::RealDisk;
use abcd::journal::{Journal, JournalPaths, verify};
use common::{TempJournal, event, journal_with};
use serde_json::json;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

fn ev(line: &[u8]) -> Event {
    format::verify_line(line).expect("a line valid on its own")
}

fn journal_id(tj: &TempJournal) -> String {
    let ls = lines(&tj.bytes());
    ev(&ls[0]).data["journal_id"].as_str().expect("the genesis names its id").to_string()
}

fn anchors(tj: &TempJournal) -> AnchorStore {
    AnchorStore::new(&tj.home)
}

fn anchor_file(tj: &TempJournal) -> PathBuf {
    tj.home.join("anchors").join(format!("{}.anchor", journal_id(tj)))
}

fn load_anchor(tj: &TempJournal) -> Option<Anchor> {
    anchors(tj).load(&RealDisk, &journal_id(tj)).unwrap()
}

/// The head anchor set to line `index` of `bytes` (as a stale anchor would be left).
fn anchor_at_line(tj: &TempJournal, bytes: &[u8], index: usize, marked: bool) {
    let ls = lines(bytes);
    let offset: usize = ls[..index].iter().map(Vec::len).sum();
    let e = ev(&ls[index]);
    let (seq, hash) = e.chain_position();
    let a = Anchor { seq, offset: offset as u64, end: (offset + ls[index].len()) as u64, hash, damage_found: marked };
    anchors(tj).store(&RealDisk, &journal_id(tj), a).unwrap();
}

fn set_anchor(tj: &TempJournal, seq: u64, hash: Hash, offset: u64, end: u64) {
    anchors(tj).store(&RealDisk, &journal_id(tj), Anchor { seq, offset, end, hash, damage_found: false }).unwrap();
}

/// One byte in the middle of line `index` flipped: its hash no longer verifies.
fn flip(ls: &mut [Vec<u8>], index: usize) {
    let mid = ls[index].len() / 2;
    ls[index][mid] ^= 0x01;
}

fn actor() -> Actor {
    Actor { session: None, pid: 7, tool: "abcd/0.1.0".into() }
}

/// A line written whole (its hash verifies) at `seq` onto `prev`, as any program can write.
fn forged(seq: u64, prev: Hash, kind: &str, data: serde_json::Value) -> (Vec<u8>, Hash) {
    let e = NewEvent { kind: kind.into(), actor: actor(), data };
    format::encode_line(seq, format::now_ms(), &e, &prev).expect("the forged line encodes")
}

/// A gap record (§5.4) at `seq` onto `prev`, standing in for `seq..=lost_to`.
fn gap_record(seq: u64, prev: Hash, lost_to: u64, next_prev: Hash) -> (Vec<u8>, Hash) {
    forged(
        seq,
        prev,
        format::REPAIRED_KIND,
        json!({
            "cause": "corruption", "from_offset": 0, "to_offset": 0, "lines": 0, "quarantine_file": null,
            "quarantine_blake3": null, "anchor_seq": null, "anchor_hash": null, "problem": "forged",
            "lost_from": seq, "lost_to": lost_to, "next_prev": next_prev.to_hex(),
        }),
    )
}

fn repair_it(tj: &TempJournal) -> Result<RepairOutcome, RepairError> {
    repair::repair(&tj.journal(), Some(&tj.scope()), None)
}

/// Repair, with a panic turned into a test failure that says so.
fn repair_no_panic(tj: &TempJournal) -> Result<RepairOutcome, RepairError> {
    match catch_unwind(AssertUnwindSafe(|| repair_it(tj))) {
        Ok(r) => r,
        Err(p) => {
            let why = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            panic!("repair PANICKED on this input (it must refuse or salvage, never crash): {why}")
        }
    }
}

fn salvaged(out: Result<RepairOutcome, RepairError>) -> repair::Salvage {
    match out {
        Ok(RepairOutcome::Salvaged(s)) => s,
        // A journal built in a folder another test journal's path record names: salvaged,
        // then accepted as the path's own in the same repair (one repair, one answer).
        Ok(RepairOutcome::RepairedAndAccepted { salvage: Some(s), .. }) => s,
        other => panic!("expected a salvage, got {other:?}"),
    }
}

/// The journal's lines as events, in file order.
fn events(tj: &TempJournal) -> Vec<Event> {
    lines(&tj.bytes()).iter().map(|l| ev(l)).collect()
}

/// The seqs of the lines that are not `journal.repaired`, in file order.
fn data_seqs(tj: &TempJournal) -> Vec<u64> {
    events(tj).iter().filter(|e| e.kind != format::REPAIRED_KIND).map(|e| e.seq).collect()
}

fn first_ten(tj: &TempJournal) -> Vec<u64> {
    data_seqs(tj).into_iter().take(10).collect()
}

fn hashes(tj: &TempJournal) -> Vec<Hash> {
    events(tj).iter().map(|e| e.hash).collect()
}

fn assert_verifies_clean(tj: &TempJournal) {
    let report = verify::verify_chain(&RealDisk, tj.path(), Some(&anchors(tj))).unwrap();
    assert!(matches!(report.verdict, Verdict::Clean), "the repaired journal verifies: {:?}", report.verdict);
}

fn write(tj: &TempJournal, ls: &[Vec<u8>]) {
    std::fs::write(tj.path(), ls.concat()).unwrap();
}

fn quarantine_files(tj: &TempJournal) -> Vec<(String, Vec<u8>)> {
    let dir = tj.paths.quarantine.clone();
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap()).map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())).collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// What `abcd journal verify` does before it prints: the full read, then the damage mark
/// (cli/journal_cmd.rs `mark_damage`).
fn verify_like_the_cli(tj: &TempJournal) {
    let report = verify::verify_chain(&RealDisk, tj.path(), Some(&anchors(tj))).unwrap();
    if let (Verdict::Corrupt(_), Some(id), Some(head)) = (&report.verdict, &report.journal_id, report.head) {
        tj.journal().record_damage_found(id, head).unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// Finding: running `abcd journal verify` (or any full read) before repair costs every
// acknowledged line after the damage, when the home store had no anchor.
// ---------------------------------------------------------------------------------------

/// Reproduction: a journal of seqs 0-10 whose home store has no anchor (a fresh
/// `ABCD_HOME`, a lost cache), seq 5 damaged by one flipped bit. Repair alone keeps 6-10 (a
/// run that alone fits past the forward chain, rule 4 without an anchor). But a full read
/// first (`abcd journal verify`, a reader's fold, the session start: each marks the damage)
/// writes an `abcd-damage/v1` anchor naming the last verified line, seq 4, *when there was no
/// anchor* (SPEC §11: "or, with none, the last verified line"). Repair then sees an anchor on
/// the forward chain, takes rule 3's "With an anchor on F: no gap", and moves seqs 6-10 to
/// quarantine as lines "neither chain reaches"; the next append reuses seq 6.
/// Expected (§10 "every provable line is in the journal afterwards", §11 "a stale anchor
/// only says less"): the same result as without the mark: 6-10 kept, seq 5 named lost.
#[test]
fn a_verify_before_repair_must_not_cost_the_lines_after_the_damage() {
    let build = || {
        let tj = journal_with(10);
        std::fs::remove_file(anchor_file(&tj)).unwrap();
        let mut ls = lines(&tj.bytes());
        flip(&mut ls, 5);
        write(&tj, &ls);
        tj
    };
    // Control: repair alone.
    let control = build();
    let s = salvaged(repair_no_panic(&control));
    assert_eq!(s.lost(), [(5, 5)]);
    assert_eq!(data_seqs(&control), [0, 1, 2, 3, 4, 6, 7, 8, 9, 10], "repair alone keeps 6-10");

    // The same journal, verified first (as every doc says to do).
    let tj = build();
    verify_like_the_cli(&tj);
    let marked = load_anchor(&tj).expect("the full read marked the damage");
    // With no anchor in the home store the mark names the genesis (format §11), which bounds
    // nothing for the rule of proof (§10); the last verified line would read as the head.
    assert!(marked.damage_found && marked.seq == 0, "the mark names the genesis: {marked:?}");
    let s = salvaged(repair_no_panic(&tj));
    assert_verifies_clean(&tj);
    assert_eq!(
        data_seqs(&tj),
        [0, 1, 2, 3, 4, 6, 7, 8, 9, 10],
        "a verify before the repair must not cost seqs 6-10 (lost: {:?}, regions: {:?})",
        s.lost(),
        s.regions
    );
}

/// Reproduction: seqs 0-10 acknowledged, but the home store's anchor is stale at seq 5 (it
/// is never synced: a power cut after the appends of 6-10 leaves it behind, §11), and seq 7
/// is damaged. The forward chain reaches 6; the anchor is on it, so rule 3 allows no gap and
/// 8-10 (acknowledged, whole, chaining) go to quarantine with a record that names no lost
/// seq; the next append is given seq 8 again, a seq that was acknowledged for another event.
/// Expected: 8-10 kept behind a gap record for seq 7 (as with no anchor at all); at the very
/// least no acknowledged seq is ever reused.
#[test]
fn a_stale_anchor_before_the_damage_must_not_cost_the_acknowledged_lines_after_it() {
    let tj = journal_with(10);
    let clean = tj.bytes();
    anchor_at_line(&tj, &clean, 5, false);
    let mut ls = lines(&clean);
    let acknowledged_8 = ev(&ls[8]).hash;
    flip(&mut ls, 7);
    write(&tj, &ls);
    let s = salvaged(repair_no_panic(&tj));
    assert_verifies_clean(&tj);
    let next = tj.journal().append(event("compaction.recorded", 99), Some(&tj.scope())).unwrap();
    assert!(
        hashes(&tj).contains(&acknowledged_8) || next.seq > 10,
        "seq 8 was acknowledged; after the repair it is neither kept nor named lost, and the next append reuses seq {} (lost {:?}, kept {:?})",
        next.seq,
        s.lost(),
        data_seqs(&tj)
    );
    assert_eq!(first_ten(&tj), [0, 1, 2, 3, 4, 5, 6, 8, 9, 10], "8-10 chain, verify, and were acknowledged");
}

/// Reproduction: seqs 0-10, the anchor stale at seq 8, and seq 8 itself damaged. Rule 3 names
/// a lost tail 7..=8 ... up to the anchor with `next_prev` = the anchor's hash; seqs 9 and 10 name
/// exactly that hash as prev (they chain onto the anchor's position), yet rule 4 lets a run
/// end only at A − 1, so 9-10 go to quarantine and the next append reuses seq 9.
/// Expected: 9-10 continue the lost tail's gap record (its position is (8, a), their prev is
/// a), so they are provable and kept.
#[test]
fn lines_that_chain_onto_a_damaged_anchor_line_are_kept() {
    let tj = journal_with(10);
    let clean = tj.bytes();
    anchor_at_line(&tj, &clean, 8, false);
    let mut ls = lines(&clean);
    flip(&mut ls, 8);
    write(&tj, &ls);
    let s = salvaged(repair_no_panic(&tj));
    assert_verifies_clean(&tj);
    assert_eq!(s.lost(), [(8, 8)]);
    assert_eq!(first_ten(&tj), [0, 1, 2, 3, 4, 5, 6, 7, 9, 10], "9 and 10 chain onto the anchor's (8, hash): {:?}", s.regions);
}

// ---------------------------------------------------------------------------------------
// Finding: repair panics (the "a salvaged journal verifies" assert, or an overflow) on a
// chain that reaches seq 2^64 − 1.
// ---------------------------------------------------------------------------------------

/// Reproduction: seqs 0-2, then a gap record at seq 3 with `lost_to` = 2^64 − 2 (allowed by
/// §5.4: `lost_to` < 2^64 − 1), a line at seq 2^64 − 1 onto its `next_prev`, then any line
/// written whole that does not chain (here a seq 5 onto nothing). Verify: corrupt. Repair:
/// the plan keeps 0..=u64::MAX and the stray line gets a region record at the end, written
/// at seq `position.0 + 1`, which overflows (wraps to 0 in release: `encode_line` refuses a
/// `journal.repaired` at seq 0 and `expect("a repair record fits a line")` panics; in a debug
/// build the `+ 1` panics).
/// Expected: repair refuses (as an append must refuse a journal whose seqs are used up) or
/// salvages; it never panics.
#[test]
fn a_chain_that_reaches_the_last_seq_does_not_make_repair_panic() {
    let tj = journal_with(2);
    let clean = tj.bytes();
    let mut ls = lines(&clean);
    let h2 = ev(&ls[2]).hash;
    let x = Hash([0x42; 32]);
    let (g, _) = gap_record(3, h2, u64::MAX - 1, x);
    let (last, _) = forged(u64::MAX, x, "compaction.recorded", json!({"n": "last"}));
    let (stray, _) = forged(5, Hash([0x11; 32]), "compaction.recorded", json!({"n": "stray"}));
    ls.push(g);
    ls.push(last);
    ls.push(stray);
    write(&tj, &ls);
    let before = tj.bytes();
    let out = repair_no_panic(&tj);
    if out.is_err() {
        assert_eq!(tj.bytes(), before, "a refusal changes nothing");
    } else {
        assert_verifies_clean(&tj);
    }
}

/// Reproduction: seqs 0-10, a head anchor (check-valid, as anyone can write one) naming
/// seq 2^64 − 2, seq 3 damaged, seqs 5 and 6 swapped (a "moved" record) and a copy of seq 1
/// after seq 8 (a region no gap names: a region record). The plan ends with a lost tail up
/// to 2^64 − 2; the two records after it are written at 2^64 − 1 and 2^64 (overflow).
/// Expected: no panic.
#[test]
fn an_anchor_near_the_last_seq_does_not_make_repair_panic() {
    let tj = journal_with(10);
    let clean = tj.bytes();
    set_anchor(&tj, u64::MAX - 1, Hash([0x33; 32]), 0, 1);
    let mut ls = lines(&clean);
    flip(&mut ls, 3);
    ls.swap(5, 6);
    let copy_of_1 = ls[1].clone();
    ls.insert(9, copy_of_1);
    write(&tj, &ls);
    let before = tj.bytes();
    let out = repair_no_panic(&tj);
    if out.is_err() {
        assert_eq!(tj.bytes(), before, "a refusal changes nothing");
    } else {
        assert_verifies_clean(&tj);
    }
}

/// Reproduction: seqs 0-10, seq 3 damaged, and a head anchor naming seq 2^64 − 1 (valid
/// record, check included). `plan` guards `a_seq < u64::MAX` and falls to `Range::None`: no
/// lost tail, no hole, no `anchor_mismatch` (rule 6 looks only for a line with seq A), so
/// seqs 4-10 are quarantined as unproven and the anchor's claim disappears without a record
/// when the anchor is written anew.
/// Expected (§10: "nothing the anchor vouched for disappears without a record"): a record
/// names what the anchor said (anchor_seq 2^64 − 1), and 4-10 are kept as they are without
/// an anchor.
#[test]
fn an_anchor_naming_the_last_seq_is_not_dropped_without_a_record() {
    let tj = journal_with(10);
    let clean = tj.bytes();
    set_anchor(&tj, u64::MAX, Hash([0x44; 32]), 0, 1);
    let mut ls = lines(&clean);
    flip(&mut ls, 3);
    write(&tj, &ls);
    let _ = salvaged(repair_no_panic(&tj));
    assert_verifies_clean(&tj);
    let named = events(&tj).iter().any(|e| e.kind == format::REPAIRED_KIND && e.data["anchor_seq"] == json!(u64::MAX));
    assert!(named, "the anchor's seq 2^64-1 is named by some record: {:?}", events(&tj).iter().map(|e| &e.data).collect::<Vec<_>>());
    assert_eq!(first_ten(&tj), [0, 1, 2, 4, 5, 6, 7, 8, 9, 10]);
}

// ---------------------------------------------------------------------------------------
// Finding: one repair, one answer (issue 31) does not hold for a damaged journal whose
// path record names another journal.
// ---------------------------------------------------------------------------------------

/// Reproduction: seqs 0-6, seq 3 damaged, and the path's record (anchors/paths/<k>) naming
/// another journal id (a journal copied over this path from elsewhere, then damaged). The
/// first repair salvages (quarantine, rewrite) and returns `Salvaged` without a word about
/// the path record; verify still fails ("replaced"), the appender still refuses, and only a
/// second repair accepts the journal (`AnchorAccepted`).
/// Expected (issue 31, "One repair, one answer: repair finishes its job in one run"): after
/// one repair the journal verifies (`report.is_ok()`), and a second repair has nothing to do.
#[test]
fn a_damaged_journal_at_a_path_recorded_for_another_journal_needs_one_repair() {
    let tj = journal_with(6);
    anchors(&tj).set_id_at_path(&RealDisk, tj.path(), "00112233445566778899aabbccddeeff").unwrap();
    let mut ls = lines(&tj.bytes());
    flip(&mut ls, 3);
    write(&tj, &ls);
    let _ = repair_no_panic(&tj).expect("the first repair does its job");
    let report = verify::verify_chain(&RealDisk, tj.path(), Some(&anchors(&tj))).unwrap();
    assert!(
        report.is_ok(),
        "one repair and the journal verifies: verdict {:?}, anchor {:?}, replaced {:?}",
        report.verdict,
        report.anchor,
        report.replaced
    );
    let second = repair_no_panic(&tj).unwrap();
    assert_eq!(second, RepairOutcome::NothingToRepair, "a second repair has nothing to do");
}

// ---------------------------------------------------------------------------------------
// Finding: a journal salvaged before (a gap record in it) can never get its lost lines back
// from the mirror: the gap record and the restored lines are a "fork".
// ---------------------------------------------------------------------------------------

/// Reproduction: seqs 0-10 with the anchor at 10; an earlier salvage replaced seqs 3-4 by a
/// gap record (lost_from 3, lost_to 4, next_prev = seq 4's hash), exactly as §5.4 writes it;
/// then seq 8 is damaged. This machine's mirror holds the original lines 3, 4 and 8 and is
/// handed to `repair_with`. Seq 8 is restored, but seqs 3-4 are not: the gap record
/// (position (4, h4)) and the mirror's line 3 are both successors of seq 2, a "fork" (rule 1),
/// so F stops at 2; B from the anchor stops at 5, which has two predecessors (line 4 and the
/// gap record, same position). A new gap record for 3-4 is written and the old one goes to
/// quarantine.
/// Expected (issue 31: "Repair reads them ... and restores, byte for byte, every lost line
/// they hold that fits the chain, before it writes any gap record"; §10: "every provable line
/// is in the journal afterwards"): lines 3 and 4 fit the hole the gap record names exactly
/// (2 → 3 → 4 → 5 by hash) and are restored; no seq is named lost.
#[test]
fn mirror_lines_fill_the_hole_an_earlier_gap_record_stands_for() {
    let tj = journal_with(10);
    let clean = tj.bytes();
    let orig = lines(&clean);
    let (h2, h4) = (ev(&orig[2]).hash, ev(&orig[4]).hash);
    let (g, _) = gap_record(3, h2, 4, h4);
    let mut ls: Vec<Vec<u8>> = orig[..3].to_vec();
    ls.push(g);
    ls.extend_from_slice(&orig[5..]);
    write(&tj, &ls);
    // The old salvage's file verifies clean and agrees with the anchor at seq 10.
    assert_eq!(verify::verify_chain(&RealDisk, tj.path(), Some(&anchors(&tj))).unwrap().verdict, Verdict::Clean);
    // New damage: seq 8 (index 7 in the salvaged file).
    flip(&mut ls, 7);
    write(&tj, &ls);
    let mirror = vec![orig[3].clone(), orig[4].clone(), orig[8].clone()];
    let out =
        catch_unwind(AssertUnwindSafe(|| repair::repair_with(&tj.journal(), Some(&tj.scope()), None, None, &mirror))).expect("no panic");
    let s = salvaged(out);
    assert_verifies_clean(&tj);
    assert_eq!(s.lost(), [], "the mirror holds every lost line: restored {}, regions {:?}", s.restored_lines, s.regions);
    assert_eq!(data_seqs(&tj), (0..=10).collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------------------
// Finding: a line of another journal that lands in a hole is adopted, even with an anchor;
// and one such line knocks out the journal's own provable run.
// ---------------------------------------------------------------------------------------

/// Reproduction: journal a, seqs 0-10, anchor at 10. A misdirected block overwrote seqs 4-6
/// with bytes of journal b, whose lines there happen to be b's seq 5 (two journals of the
/// same age: two worktrees of one repository). F = 0-3, B = 7-10, and b's seq 5 is a run that
/// "alone fits" 5..5 (one lost seq on each side, rule 4), so it is written into a's journal:
/// b's event becomes a's (a checklist item of another repository, in a's plan).
/// Expected (issue 31 acceptance 1: "no line of another journal or repository is" in the
/// journal; §10: "a line is kept because the chain proves where it belongs"): nothing chains
/// b's line to a (its prev is b's seq 4, which no line of a has), so it goes to quarantine
/// and seqs 4-6 are one gap.
#[test]
#[ignore = "a known limit of the rule of proof (journal-format §10 rule 4, docs/decisions.md): another journal's run that alone fits a hole cannot be told from the journal's own"]
fn a_line_of_another_journal_in_a_hole_is_not_adopted_even_with_an_anchor() {
    let a = journal_with(10);
    let b = journal_with(10);
    let la = lines(&a.bytes());
    let lb = lines(&b.bytes());
    let foreign = ev(&lb[5]).hash;
    let mut ls: Vec<Vec<u8>> = la[..4].to_vec();
    ls.push(lb[5].clone());
    ls.extend_from_slice(&la[7..]);
    write(&a, &ls);
    let s = salvaged(repair_no_panic(&a));
    assert_verifies_clean(&a);
    assert!(!hashes(&a).contains(&foreign), "journal b's seq 5 was written into journal a (lost {:?})", s.lost());
    assert_eq!(s.lost(), [(4, 6)]);
}

/// Reproduction: journal a, seqs 0-10, anchor at 10, seqs 3 and 7 damaged: 4-6 is a run
/// that alone fits between F (0-2) and B (8-10), and is kept. Now one line of another
/// journal b (its seq 5, say the last line of a `tail -1 b >> a`) is appended at the end of
/// the file. b's line is a fitting run 5..5 that overlaps a's own 4-6, so neither is "the
/// only run that fits" and a's own acknowledged, hash-verified seqs 4-6 go to quarantine.
/// Expected: one stray line of another journal (which nothing chains to a) does not cost
/// the journal three provable lines: 4-6 are kept, b's line quarantined, lost seqs 3 and 7.
#[test]
#[ignore = "a known limit of the rule of proof (journal-format §10 rule 4, docs/decisions.md): two runs that touch are both unproven, whichever journal one comes from"]
fn one_foreign_line_does_not_cost_a_run_of_the_journal_its_place() {
    let a = journal_with(10);
    let b = journal_with(10);
    let la = lines(&a.bytes());
    let lb = lines(&b.bytes());
    let mut ls = la.clone();
    flip(&mut ls, 3);
    flip(&mut ls, 7);
    // Without the foreign line, 4-6 are kept (the rule's own test, two_runs_that_touch…).
    ls.push(lb[5].clone());
    write(&a, &ls);
    let s = salvaged(repair_no_panic(&a));
    assert_verifies_clean(&a);
    assert_eq!(s.lost(), [(3, 3), (7, 7)], "b's single line cost a's seqs 4-6");
    assert_eq!(data_seqs(&a), [0, 1, 2, 4, 5, 6, 8, 9, 10]);
}

// ---------------------------------------------------------------------------------------
// A crash (power cut) before every update a salvage makes, on the simulated disk.
// ---------------------------------------------------------------------------------------

mod sim {
    use super::*;
    use abcd::journal::simdisk::{Faults, Keep, SimDisk};
    use abcd::journal::storage::Storage;
    use std::sync::atomic::{AtomicU64, Ordering};

    static NEXT: AtomicU64 = AtomicU64::new(1);

    pub struct Proc {
        pub view: SimDisk,
        pub journal: Journal,
        pub paths: JournalPaths,
        pub anchors: AnchorStore,
    }

    /// A fresh process (its own mount, so poisoning after a failed sync is its own).
    pub fn process(disk: &SimDisk, lock: &Path) -> Proc {
        let mount = PathBuf::from(format!("/attack{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        let view = disk.with_mount(&mount);
        let mut paths = JournalPaths::beside(&mount.join("wc/.abcd/.work.local/journal.jsonl"));
        paths.lock = lock.to_owned();
        let anchors = AnchorStore::new(&mount.join("home"));
        let journal = Journal::new(view.shared(), paths.clone(), Some(anchors.clone()));
        Proc { view, journal, paths, anchors }
    }

    pub fn scope() -> abcd::event::Scope {
        abcd::event::Scope::WorkingCopy { root: "/wc".into() }
    }

    /// A disk holding `journal` (durable) and, in the home store, `anchor` for `id`.
    pub fn disk_with(seed: u64, journal: &[u8], id: &str, anchor: &[u8]) -> SimDisk {
        let disk = SimDisk::new(seed);
        disk.setup_file(Path::new("/wc/.abcd/.work.local/journal.jsonl"), journal).unwrap();
        disk.setup_file(&Path::new("/home/anchors").join(format!("{id}.anchor")), anchor).unwrap();
        disk
    }

    pub fn events_of(p: &Proc) -> Vec<Event> {
        let bytes = p.view.read(&p.paths.journal).unwrap_or_default();
        lines(&bytes).iter().filter_map(|l| format::verify_line(l).ok()).collect()
    }

    pub fn verify_of(p: &Proc) -> verify::VerifyReport {
        verify::verify_chain(&*p.view.shared(), &p.paths.journal, Some(&p.anchors)).unwrap()
    }

    pub fn set_faults(p: &Proc, k: u64) {
        p.view.set_faults(Faults { power_cut_before_update: Some(k), ..Faults::default() });
    }

    pub fn injected(p: &Proc) -> bool {
        !p.view.injected().is_empty()
    }

    pub fn crash(disk: &SimDisk, seed: u64, keep: Keep) -> SimDisk {
        disk.crash_with(seed, keep)
    }

    pub fn storage(p: &Proc) -> std::sync::Arc<dyn Storage> {
        p.view.shared()
    }
}

/// Reproduction: seqs 0-10 (anchor at 10), seq 3 damaged and a copy of seq 1 after seq 6 (a
/// gap record and a region record at the end: the salvaged head moves past the anchor and
/// the lines before it move). For every update k the salvage makes, the power is cut just
/// before update k, the disk keeps {nothing unsynced, everything, a random subset}, and a
/// new process runs repair again, then verify, then an append.
/// Expected (§10: "A crash before the rename leaves the old journal as it was ... the repair
/// runs again"; after the rename the new journal is the journal): every line the uncrashed
/// salvage keeps is in the journal afterwards, it verifies with the anchor agreeing, and the
/// append after it goes through; and the second repair never calls the journal "rewritten or
/// replaced" (`AnchorAccepted`): nothing but the salvage itself changed it.
#[test]
#[ignore = "open (docs/decisions.md): a crash between the salvage's rename and its anchor write leaves the old anchor naming moved offsets, and the next repair records it as a rewrite; no line is lost"]
fn a_power_cut_before_any_update_of_a_salvage_loses_nothing_and_needs_no_acceptance() {
    use abcd::journal::simdisk::Keep;
    let tj = journal_with(10);
    let id = journal_id(&tj);
    let anchor = std::fs::read(anchor_file(&tj)).unwrap();
    let mut ls = lines(&tj.bytes());
    flip(&mut ls, 3);
    let copy = ls[1].clone();
    ls.insert(7, copy);
    let damaged = ls.concat();
    let lock_dir = tempfile::tempdir().unwrap();
    let lock = lock_dir.path().join("journal.lock");

    // The salvage without a fault: what must survive.
    let disk = sim::disk_with(1, &damaged, &id, &anchor);
    let p = sim::process(&disk, &lock);
    let reference = salvaged(repair::repair(&p.journal, Some(&sim::scope()), None));
    let kept: Vec<Hash> = sim::events_of(&p).iter().filter(|e| e.kind != format::REPAIRED_KIND).map(|e| e.hash).collect();
    assert_eq!(kept.len(), 10, "{reference:?}");

    let mut problems = vec![];
    for keep in [Keep::Nothing, Keep::Everything, Keep::Random] {
        for k in 1.. {
            let disk = sim::disk_with(k, &damaged, &id, &anchor);
            let p = sim::process(&disk, &lock);
            sim::set_faults(&p, k);
            let first = repair::repair(&p.journal, Some(&sim::scope()), None);
            if !sim::injected(&p) {
                assert!(first.is_ok(), "no fault, k={k}: {first:?}");
                break;
            }
            let after = sim::crash(&disk, k * 7 + 3, keep);
            let q = sim::process(&after, &lock);
            let second = repair::repair(&q.journal, Some(&sim::scope()), None);
            let second_kind = match &second {
                Ok(RepairOutcome::AnchorAccepted { detail, .. }) => {
                    problems.push(format!("{keep:?} k={k}: the second repair accepted the journal as rewritten: {detail}"));
                    "accepted"
                }
                Ok(_) => "ok",
                Err(e) => {
                    problems.push(format!("{keep:?} k={k}: the second repair failed: {e}"));
                    continue;
                }
            };
            let report = sim::verify_of(&q);
            if !report.is_ok() {
                problems.push(format!(
                    "{keep:?} k={k}: after the second repair ({second_kind}) verify fails: {:?} {:?}",
                    report.verdict, report.anchor
                ));
            }
            let now: Vec<Hash> = sim::events_of(&q).iter().map(|e| e.hash).collect();
            let missing = kept.iter().filter(|h| !now.contains(h)).count();
            if missing > 0 {
                problems.push(format!("{keep:?} k={k}: {missing} line(s) the salvage keeps are gone"));
            }
            if let Err(e) = q.journal.append(event("compaction.recorded", 1000 + k), Some(&sim::scope())) {
                problems.push(format!("{keep:?} k={k}: the append after the second repair ({second_kind}) fails: {e}"));
            }
            let _ = sim::storage(&q);
        }
    }
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Blowups: memory per damaged piece, work quadratic in damaged regions.
// ---------------------------------------------------------------------------------------

/// A journal of seqs 0..=n built in memory (no fsync per line): the genesis of `tj`, then
/// forged lines, as an appender writes them.
fn long_chain(tj: &TempJournal, n: u64) -> Vec<Vec<u8>> {
    let mut ls = vec![lines(&tj.bytes())[0].clone()];
    let mut prev = ev(&ls[0]).hash;
    for seq in 1..=n {
        let (l, h) = forged(seq, prev, "compaction.recorded", json!({"n": seq}));
        ls.push(l);
        prev = h;
    }
    ls
}

fn collected(tj: &TempJournal) -> abcd::journal::proof::Collected {
    use abcd::journal::storage::Storage;
    let file = RealDisk.open_read(tj.path()).unwrap();
    abcd::journal::proof::Collected::from_file(file.as_ref(), tj.path()).unwrap()
}

/// Reproduction: seqs 0-3, then 1,000,000 bytes of `\n` (a zeroed-then-newlined block, or
/// any run of empty lines), then seqs 4-10. That damage is ONE region (§10: "damaged bytes
/// that run together form one region"), yet `Collected::from_file` keeps one `BadSpan` (with
/// its own `String` problem) per piece: 1,000,000 of them, about 100 bytes of memory per
/// byte of file. MAX_PLAN_LINES bounds candidates only; nothing bounds `bad`, so an 8 GiB
/// journal (allowed, §2) of empty lines makes repair (and every reader that folds the plan)
/// run out of memory instead of refusing.
/// Expected: memory bounded by regions (adjacent bad pieces merged as they are read) or a
/// refusal past a bound, like TooManyLines.
#[test]
fn adjacent_damaged_pieces_are_held_as_one_span_not_one_per_piece() {
    let tj = journal_with(10);
    let ls = lines(&tj.bytes());
    let mut bytes = ls[..4].concat();
    bytes.extend(std::iter::repeat_n(b'\n', 1_000_000));
    bytes.extend(ls[4..].concat());
    std::fs::write(tj.path(), &bytes).unwrap();
    let c = collected(&tj);
    assert!(c.bad.len() <= 16, "one region of damage is held as {} separate BadSpans (each with a String)", c.bad.len());
}

/// Reproduction: seqs 0..=N, each line followed by a 2-byte piece `x\n` (N separate damaged
/// regions, more than MAX_DAMAGED_REGIONS). Repair must refuse (TooDamaged); it does, but only
/// after `damaged_regions` has computed every region, and for each region it scans the whole
/// `why` list (`why.iter().filter(inside).any(..)` and `.find(inside)`): O(regions × pieces),
/// quadratic before the bound is checked. Counted: N = 4,000 → 16e6 closure calls;
/// N = 64,000 → 4.1e9. An 8 GiB file of alternating short pieces holds ~2e9 regions: 4e18.
/// Measured here as the ratio of two runs 8× apart in size: linear work gives ~8×,
/// quadratic ~64×.
/// Expected: the refusal (more than 1,024 regions) is reached in time linear in the file.
#[test]
fn a_journal_with_too_many_damaged_regions_is_refused_in_linear_time() {
    let time_for = |n: u64| {
        let tj = journal_with(1);
        let ls = long_chain(&tj, n);
        let mut bytes = Vec::new();
        for l in &ls {
            bytes.extend_from_slice(l);
            bytes.extend_from_slice(b"x\n");
        }
        std::fs::write(tj.path(), &bytes).unwrap();
        let started = std::time::Instant::now();
        let out = repair_no_panic(&tj);
        let took = started.elapsed();
        assert!(matches!(out, Err(RepairError::TooDamaged { .. })), "{out:?}");
        took
    };
    let small = time_for(8_000);
    let large = time_for(64_000);
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    eprintln!("8,000 regions: {small:?}; 64,000 regions: {large:?}; ratio {ratio:.1}");
    assert!(ratio < 24.0, "8× the regions took {ratio:.1}× the time ({small:?} → {large:?}): quadratic before the refusal");
}

/// PASSES (kept as a regression test; the attack needs more than 101 quarantine files
/// created within one millisecond, and the simulated disk does ~6 per ms): the name
/// scheme can still collide on a fast enough disk, see below.
/// Reproduction: seqs 0-1000 with the second half moved before the first (file order: 0,
/// 500-1000, 1-499: a moved block, which repair writes back in chain order) and a 2-byte
/// piece `x\n` after each of seqs 1-499: 499 regions, under MAX_DAMAGED_REGIONS. Every
/// region's quarantine name is `corrupt-<S>-<stamp>.bin` with S "one past the seq of the line
/// kept just before it in the file", computed as the maximum so far (1001 for all of them),
/// and `quarantine_range` tries only `-1` .. `-100` on a name collision. More than 101
/// regions quarantined within one millisecond (an in-memory disk, a fast SSD) makes repair
/// fail with "creating …: File exists" after it has written 101 quarantine files; it fails
/// the same way every time it is run.
/// Expected: a salvage within the region bound completes; quarantine names never collide
/// (S of the line kept just before it in the file, or a counter over the whole repair).
#[test]
fn many_regions_after_a_moved_block_do_not_exhaust_quarantine_names() {
    use abcd::journal::simdisk::SimDisk;
    let tj = journal_with(1);
    let chain = long_chain(&tj, 1000);
    let mut file: Vec<u8> = chain[0].clone();
    for l in &chain[500..] {
        file.extend_from_slice(l);
    }
    for l in &chain[1..500] {
        file.extend_from_slice(l);
        file.extend_from_slice(b"x\n");
    }
    // On the simulated disk (in memory, as fast as a disk whose syncs cost nothing).
    let lock_dir = tempfile::tempdir().unwrap();
    let disk = SimDisk::new(3);
    disk.setup_file(Path::new("/wc/.abcd/.work.local/journal.jsonl"), &file).unwrap();
    let p = sim::process(&disk, &lock_dir.path().join("journal.lock"));
    let started = std::time::Instant::now();
    let out = catch_unwind(AssertUnwindSafe(|| repair::repair(&p.journal, Some(&sim::scope()), None))).expect("no panic");
    eprintln!("repair took {:?}", started.elapsed());
    let s = salvaged(out);
    assert_eq!(s.regions.len(), 498, "the last `x\\n` is a torn tail");
    assert_eq!(s.moved.first(), Some(&500));
    assert_eq!(s.kept_lines, 1001);
}

// ---------------------------------------------------------------------------------------
// Attacks that failed: kept as regression tests (they pass).
// ---------------------------------------------------------------------------------------

/// Every byte of `before` is in a kept line of the journal now or in a quarantine file.
fn bytes_accounted(tj: &TempJournal, before: &[u8]) {
    let now = tj.bytes();
    let kept: usize = lines(&now).iter().filter(|l| before.windows(l.len()).any(|w| w == l.as_slice())).map(Vec::len).sum();
    let quarantined: usize = quarantine_files(tj).iter().map(|(_, b)| b.len()).sum();
    assert_eq!(kept + quarantined, before.len(), "every damaged byte is in quarantine and every other byte in a kept line");
}

/// One repair does the job: it salvages (or cuts a torn tail), the journal verifies with
/// its anchor, a second repair has nothing to do, and no byte is gone without a copy.
fn one_repair_does_it(tj: &TempJournal, shape: &str) {
    let before = tj.bytes();
    let out = match catch_unwind(AssertUnwindSafe(|| repair_it(tj))) {
        Ok(r) => r,
        Err(_) => panic!("{shape}: repair panicked"),
    };
    assert!(matches!(out, Ok(RepairOutcome::Salvaged(_) | RepairOutcome::TornTailCut { .. })), "{shape}: {out:?}");
    let report = verify::verify_chain(&RealDisk, tj.path(), Some(&anchors(tj))).unwrap();
    assert!(report.is_ok(), "{shape}: verify after one repair: {:?} {:?}", report.verdict, report.anchor);
    assert_eq!(repair_it(tj).unwrap(), RepairOutcome::NothingToRepair, "{shape}: a second repair");
    bytes_accounted(tj, &before);
    tj.journal().append(event("compaction.recorded", 77), Some(&tj.scope())).unwrap_or_else(|e| panic!("{shape}: append after: {e}"));
}

/// PASSES (regression): sixteen damage shapes on seqs 0-12 with the anchor at 12 (bit
/// flip, swapped pair, a copy of the last line after seq 3, a NUL run between good lines,
/// merged lines, the genesis repeated later, garbage before a line, an over-long piece
/// embedding a line, two lines removed, the whole file repeated, another journal appended,
/// another journal's seq 4 in place of seq 4, first and last line damaged, last line damaged
/// with garbage after it, a cut at a line boundary plus damage, 5,000 copies of one line):
/// each needs exactly one repair, verifies with its anchor after it, a second repair has
/// nothing to do, every byte of the damaged file is in a kept line or in quarantine, and
/// the next append goes through.
#[test]
fn a_battery_of_damage_shapes_needs_one_repair_and_loses_no_byte() {
    type Damage = fn(&mut Vec<Vec<u8>>, &[Vec<u8>]);
    let shapes: Vec<(&str, Damage)> = vec![
        ("bit flip", |ls, _| flip(ls, 5)),
        ("swapped pair", |ls, _| ls.swap(4, 5)),
        ("copy of the last line after seq 3", |ls, _| {
            let c = ls[12].clone();
            ls.insert(4, c)
        }),
        ("NUL run between good lines", |ls, _| ls.insert(7, vec![0; 100])),
        ("merged lines", |ls, _| *ls[4].last_mut().unwrap() = b'x'),
        ("genesis repeated later", |ls, _| {
            let g = ls[0].clone();
            ls.insert(9, g)
        }),
        ("garbage before a line", |ls, _| ls[6].splice(0..0, b"garbage".iter().copied()).for_each(drop)),
        ("over-long piece embedding a line", |ls, _| ls[7].splice(0..0, std::iter::repeat_n(b'a', 70_000)).for_each(drop)),
        ("two lines removed by a tool", |ls, _| {
            ls.drain(5..7);
        }),
        ("whole file repeated", |ls, _| {
            let again = ls.clone();
            ls.extend(again)
        }),
        ("another journal appended", |ls, other| ls.extend_from_slice(other)),
        ("another journal's seq 4 in place of seq 4", |ls, other| ls[4] = other[4].clone()),
        ("first and last line after genesis damaged", |ls, _| {
            flip(ls, 1);
            flip(ls, 12)
        }),
        ("last line damaged, garbage after it", |ls, _| {
            flip(ls, 12);
            ls.push(b"\0\0\0garbage".to_vec())
        }),
        ("cut at a line boundary and damage", |ls, _| {
            ls.pop();
            flip(ls, 3)
        }),
        ("many copies of one line together", |ls, _| {
            let c = ls[3].clone();
            for _ in 0..5000 {
                ls.insert(4, c.clone());
            }
        }),
    ];
    let other = lines(&journal_with(12).bytes());
    for (shape, damage) in shapes {
        let tj = journal_with(12);
        let mut ls = lines(&tj.bytes());
        damage(&mut ls, &other);
        write(&tj, &ls);
        one_repair_does_it(&tj, shape);
    }
}

/// PASSES (regression). A line of another journal with this journal's seq filling a one-seq hole exactly (its
/// prev is the other journal's) is never kept: a run must leave a lost seq on each side.
#[test]
fn a_foreign_line_filling_a_one_seq_hole_exactly_is_not_kept() {
    let a = journal_with(10);
    let b = journal_with(10);
    let (la, lb) = (lines(&a.bytes()), lines(&b.bytes()));
    let mut ls = la.clone();
    ls[4] = lb[4].clone();
    write(&a, &ls);
    let s = salvaged(repair_no_panic(&a));
    assert_eq!(s.lost(), [(4, 4)]);
    assert!(!hashes(&a).contains(&ev(&lb[4]).hash));
    assert_eq!(data_seqs(&a), [0, 1, 2, 3, 5, 6, 7, 8, 9, 10], "seq 4 is a gap record");
    // Without an anchor too.
    let a = journal_with(10);
    std::fs::remove_file(anchor_file(&a)).unwrap();
    write(&a, &ls);
    let s = salvaged(repair_no_panic(&a));
    assert_eq!(s.lost(), [(4, 4)]);
}

/// PASSES (regression). A journal an earlier salvage left (a gap record for seq 3), whose gap record is then
/// damaged: the backward chain from the anchor reaches seq 4, a new gap record stands for
/// seq 3, the old one goes to quarantine; nothing else moves.
#[test]
fn a_damaged_gap_record_of_an_earlier_salvage_is_salvaged_again() {
    let tj = journal_with(10);
    let orig = lines(&tj.bytes());
    let (h2, h3) = (ev(&orig[2]).hash, ev(&orig[3]).hash);
    let (g, _) = gap_record(3, h2, 3, h3);
    let mut ls = orig.clone();
    ls[3] = g;
    write(&tj, &ls);
    assert_eq!(verify::verify_chain(&RealDisk, tj.path(), Some(&anchors(&tj))).unwrap().verdict, Verdict::Clean);
    flip(&mut ls, 3);
    write(&tj, &ls);
    let s = salvaged(repair_no_panic(&tj));
    assert_eq!(s.lost(), [(3, 3)]);
    assert_eq!(data_seqs(&tj), [0, 1, 2, 4, 5, 6, 7, 8, 9, 10]);
    assert_eq!(repair_it(&tj).unwrap(), RepairOutcome::NothingToRepair);
}

/// Attack. Reproduction: seqs 0-10, anchor at 10, and one more line: a gap
/// record at seq 3 onto seq 2 with lost_to 4 and next_prev = seq 4's hash (what an earlier
/// salvage writes when it lost 3-4; here beside the lines it names: lines put back from
/// quarantine by a person, or a gap record copied in), placed after seq 5. Its chain
/// position (4, h4) is line 4's. So seq 2 has two successors (line 3, the gap record): F stops
/// at 2; seq 5 has two predecessors (line 4, the gap record): B stops at 5. Lines 3 and 4,
/// whole, verified, acknowledged, chaining 2 → 3 → 4 → 5, go to quarantine and are named
/// lost; a new gap record stands for them.
/// Expected (§10: "every provable line is in the journal afterwards"): a gap record only
/// stands in for lines that are missing; when the lines it names are there and chain
/// exactly onto its own prev and next_prev, they are kept and the gap record is the damage.
#[test]
fn a_gap_record_whose_position_collides_with_real_lines_does_not_cost_them() {
    let tj = journal_with(10);
    let orig = lines(&tj.bytes());
    let (h2, h4) = (ev(&orig[2]).hash, ev(&orig[4]).hash);
    let (g, gh) = gap_record(3, h2, 4, h4);
    let mut ls = orig.clone();
    ls.insert(6, g);
    write(&tj, &ls);
    let s = salvaged(repair_no_panic(&tj));
    assert!(s.lost().is_empty(), "{:?}", s.regions);
    assert!(!hashes(&tj).contains(&gh));
    assert_eq!(data_seqs(&tj)[..11], (0..=10).collect::<Vec<_>>()[..]);
}

// ---------------------------------------------------------------------------------------
// The first finding through the binary, as a person meets it.
// ---------------------------------------------------------------------------------------

mod cli {
    use super::*;
    use common::repo::{TestRepo, abcd};

    fn run(repo: &TestRepo, args: &[&str]) -> std::process::Output {
        abcd(&repo.root, &repo.home).args(args).output().expect("abcd runs")
    }

    fn ok(repo: &TestRepo, args: &[&str]) -> String {
        let out = run(repo, args);
        assert!(out.status.success(), "abcd {args:?}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn items(repo: &TestRepo) -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(&ok(repo, &["checklist", "--json", "--all"])).unwrap();
        v["items"].as_array().unwrap().iter().map(|i| i["title"].as_str().unwrap().to_string()).collect()
    }

    /// Ten items, the home store's anchor gone (a new `ABCD_HOME`, a lost cache), one byte
    /// of item 5's line flipped.
    fn damaged_repo() -> TestRepo {
        let repo = TestRepo::folder().managed();
        for i in 1..=10 {
            ok(&repo, &["checklist", "add", &format!("item number {i}")]);
        }
        let path = repo.root.join(".abcd/.work.local/journal.jsonl");
        let mut ls = lines(&std::fs::read(&path).unwrap());
        let id = ev(&ls[0]).data["journal_id"].as_str().unwrap().to_string();
        std::fs::remove_file(repo.home.join("anchors").join(format!("{id}.anchor"))).unwrap();
        let i = ls.iter().position(|l| l.windows(13).any(|w| w == b"item number 5")).unwrap();
        let at = ls[i].windows(13).position(|w| w == b"item number 5").unwrap() + 2;
        ls[i][at] ^= 0x01;
        std::fs::write(&path, ls.concat()).unwrap();
        repo
    }

    /// Attack. Reproduction through the binary: `damaged_repo()`, then
    /// `abcd journal repair` keeps 9 items (item 5 lost); the same repo with
    /// `abcd journal verify` run first (exit 1: it marks the damage, writing an anchor at
    /// the last verified line because there was none) keeps 4: items 6-10 go to quarantine
    /// with a record that names no lost seq, and the next `checklist add` reuses their seqs.
    /// Expected: verify before repair changes nothing: 9 items.
    #[test]
    fn verify_then_repair_keeps_what_repair_alone_keeps_through_the_binary() {
        let control = damaged_repo();
        ok(&control, &["journal", "repair"]);
        assert_eq!(items(&control).len(), 9, "repair alone: {:?}", items(&control));

        let repo = damaged_repo();
        let verified = run(&repo, &["journal", "verify"]);
        assert_eq!(verified.status.code(), Some(1));
        let words = ok(&repo, &["journal", "repair"]);
        let titles = items(&repo);
        assert_eq!(titles.len(), 9, "after verify + repair: {titles:?}\nrepair said: {words}");
    }
}

/// Attack. Reproduction: journal a, seqs 0-10, anchor at 10; a's seq 10
/// damaged (one flipped byte) and journal b (another journal, 15 events) appended after it.
/// The lost tail 10..10 is recorded correctly, but rule 6 ("the file holds a line written
/// whole with seq A") is met by b's seq 10, so repair also appends a `journal.repaired`
/// cause `anchor_mismatch` saying "the journal was rewritten or replaced there": a false
/// record, since a's own line 10 was only damaged and b's lines are quarantined as foreign.
/// Expected: a rewrite is found only from a line that could have been this journal's seq A
/// (one the chain from genesis or the backward chain reaches, or at least one whose prev
/// chains), not from any line of another journal that happens to carry seq A.
#[test]
#[ignore = "a known limit (journal-format §10 rule 6, docs/decisions.md): a line at the anchor's seq with another hash is recorded as a rewrite or replacement, whichever journal wrote it"]
fn another_journals_line_at_the_anchors_seq_is_not_called_a_rewrite() {
    let a = journal_with(10);
    let b = journal_with(15);
    let mut ls = lines(&a.bytes());
    flip(&mut ls, 10);
    ls.extend(lines(&b.bytes()));
    write(&a, &ls);
    let s = salvaged(repair_no_panic(&a));
    assert_eq!(s.lost(), [(10, 10)]);
    assert_eq!(s.rewritten, None, "a false anchor_mismatch record: {:?}", events(&a).last().map(|e| &e.data["problem"]));
}

// ---------------------------------------------------------------------------------------
// Random hostile journals: repair never panics, and what it writes verifies.
// ---------------------------------------------------------------------------------------

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// A chain onto `genesis`: (line, event) per seq, salted so two chains differ.
fn chain_on(genesis: &[u8], n: u64, salt: &str) -> Vec<Vec<u8>> {
    let mut ls = vec![genesis.to_vec()];
    let mut prev = ev(genesis).hash;
    for seq in 1..=n {
        let (l, h) = forged(seq, prev, "compaction.recorded", json!({"n": seq, "salt": salt}));
        ls.push(l);
        prev = h;
    }
    ls
}

/// FUZZ (`ATTACK_CASES`, default 400). Random journals (5-40 events), one to four kinds of
/// damage from {bit flip, swap, copy elsewhere, foreign line, forged gap record (random
/// range, real or random next_prev), line removed, cut at a line boundary, NUL run, merged
/// lines, garbage at the end, a line at seq near 2^64}, and an anchor that is {absent, at the
/// head, stale, marked, at a random seq up to 2^64 − 1 with a random hash}. Properties: repair
/// never panics; a refusal leaves the file as it was; after a salvage the journal verifies
/// clean, every byte is in a kept line or in quarantine, and a second repair has nothing to do.
/// FAILS today (32 of 400): every failure is one of the classes with their own tests above
/// (a line or an anchor near 2^64: panics; an anchor with a hash no line has plus a torn
/// tail: two repairs). With `ATTACK_TAME=1` (those classes left out) 3,000 cases PASS: no
/// other panic, no salvaged journal that fails verify, no byte lost without a copy, no
/// second repair with something to do.
#[test]
fn random_hostile_journals_never_make_repair_panic_or_write_a_journal_that_fails() {
    let cases: u64 = std::env::var("ATTACK_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    let base = journal_with(1);
    let genesis = lines(&base.bytes())[0].clone();
    let id = journal_id(&base);
    // ATTACK_TAME=1 leaves out the classes already reported (seqs and anchors near 2^64,
    // anchors with a hash no line has), to look for other failures.
    let tame = std::env::var_os("ATTACK_TAME").is_some();
    let mut failures = vec![];
    for case in 0..cases {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (case + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
        let n = 5 + rng.below(36);
        let own = chain_on(&genesis, n, "own");
        let foreign = chain_on(&genesis, n + 5, "foreign");
        let mut ls = own.clone();
        let mut story = vec![format!("n={n}")];
        for _ in 0..1 + rng.below(4) {
            if ls.len() < 2 {
                break;
            }
            let len = ls.len() as u64;
            let i = 1 + rng.below(len - 1) as usize;
            match rng.below(11) {
                0 => {
                    flip(&mut ls, i);
                    story.push(format!("flip {i}"));
                }
                1 if i + 1 < ls.len() => {
                    ls.swap(i, i + 1);
                    story.push(format!("swap {i}"));
                }
                2 => {
                    let c = ls[i].clone();
                    let to = 1 + rng.below(len) as usize;
                    ls.insert(to.min(ls.len()), c);
                    story.push(format!("copy {i} to {to}"));
                }
                3 => {
                    let f = foreign[1 + rng.below(foreign.len() as u64 - 1) as usize].clone();
                    ls.insert(i, f);
                    story.push(format!("foreign at {i}"));
                }
                4 => {
                    let seq = 1 + rng.below(n);
                    let prev = ev(&own[seq as usize - 1]).hash;
                    let to = match rng.below(3) {
                        0 => seq + rng.below(3),
                        1 if !tame => u64::MAX - 1 - rng.below(2),
                        _ => seq + rng.below(1000),
                    };
                    let next_prev = if to <= n && rng.below(2) == 0 { ev(&own[to as usize]).hash } else { Hash([rng.next() as u8; 32]) };
                    let (g, _) = gap_record(seq, prev, to, next_prev);
                    let at = 1 + rng.below(len) as usize;
                    ls.insert(at.min(ls.len()), g);
                    story.push(format!("gap record {seq}..{to} at {at}"));
                }
                5 if ls.len() > 2 => {
                    ls.remove(i);
                    story.push(format!("remove {i}"));
                }
                6 if ls.len() > 2 => {
                    ls.truncate(i.max(1));
                    story.push(format!("cut at {i}"));
                }
                7 => {
                    ls.insert(i, vec![0; 1 + rng.below(5000) as usize]);
                    story.push(format!("NULs at {i}"));
                }
                8 => {
                    *ls[i].last_mut().unwrap() = b'#';
                    story.push(format!("merge {i}"));
                }
                9 => {
                    ls.push(b"garbage without newline".to_vec());
                    story.push("garbage at end".into());
                }
                10 if !tame => {
                    let seq = u64::MAX - rng.below(2);
                    let (l, _) = forged(seq, Hash([rng.next() as u8; 32]), "compaction.recorded", json!({}));
                    ls.insert(i, l);
                    story.push(format!("line at seq {seq} at {i}"));
                }
                _ => {}
            }
        }
        let tj = TempJournal::new();
        std::fs::create_dir_all(tj.path().parent().unwrap()).unwrap();
        write(&tj, &ls);
        let store = AnchorStore::new(&tj.home);
        let head_at = |k: usize| {
            let offset: usize = own[..k].iter().map(Vec::len).sum();
            let e = ev(&own[k]);
            Anchor { seq: e.seq, offset: offset as u64, end: (offset + own[k].len()) as u64, hash: e.hash, damage_found: false }
        };
        let anchor = match rng.below(if tame { 4 } else { 6 }) {
            0 => None,
            1 => Some(head_at(own.len() - 1)),
            2 => Some(head_at(rng.below(own.len() as u64) as usize)),
            3 => Some(Anchor { damage_found: true, ..head_at(rng.below(own.len() as u64) as usize) }),
            4 => Some(Anchor { seq: u64::MAX - rng.below(3), offset: 0, end: 1, hash: Hash([rng.next() as u8; 32]), damage_found: false }),
            _ => Some(Anchor { seq: rng.below(2 * n), offset: 0, end: 1, hash: Hash([rng.next() as u8; 32]), damage_found: false }),
        };
        if let Some(a) = anchor {
            store.store(&RealDisk, &id, a).unwrap();
        }
        story.push(format!("anchor {:?}", anchor.map(|a| (a.seq, a.damage_found))));
        let before = tj.bytes();
        let out = catch_unwind(AssertUnwindSafe(|| repair_it(&tj)));
        let out = match out {
            Err(p) => {
                let why =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
                failures.push(format!("case {case} [{}]: PANIC {why}", story.join(", ")));
                continue;
            }
            Ok(out) => out,
        };
        match out {
            Err(e) => {
                if tj.bytes() != before {
                    failures.push(format!("case {case} [{}]: refused ({e}) but changed the file", story.join(", ")));
                }
            }
            Ok(o) => {
                let report = verify::verify_chain(&RealDisk, tj.path(), Some(&store)).unwrap();
                if !report.is_ok() {
                    failures.push(format!(
                        "case {case} [{}]: after {o:?} verify: {:?} {:?}",
                        story.join(", "),
                        report.verdict,
                        report.anchor
                    ));
                    continue;
                }
                if let RepairOutcome::Salvaged(_) = o {
                    let now = tj.bytes();
                    let kept: usize = lines(&now).iter().filter(|l| before.windows(l.len()).any(|w| w == l.as_slice())).map(Vec::len).sum();
                    let quarantined: usize = quarantine_files(&tj).iter().map(|(_, b)| b.len()).sum();
                    if kept + quarantined != before.len() {
                        failures.push(format!(
                            "case {case} [{}]: {} bytes before, {kept} kept + {quarantined} quarantined",
                            story.join(", "),
                            before.len()
                        ));
                    }
                }
                match catch_unwind(AssertUnwindSafe(|| repair_it(&tj))) {
                    Ok(Ok(RepairOutcome::NothingToRepair)) => {}
                    Ok(other) => failures.push(format!("case {case} [{}]: second repair: {other:?}", story.join(", "))),
                    Err(_) => failures.push(format!("case {case} [{}]: second repair PANIC", story.join(", "))),
                }
            }
        }
    }
    // Group by first words so the report is readable.
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// Attack. Reproduction: seqs 0-20, no anchor in the home
/// store, and ONE line written whole claiming seq 2^64 − 1 (any prev) inserted after seq 2,
/// as any program can write. Without an anchor a run is kept when it "alone fits" past F
/// (Range::Unbounded), so this line is kept, behind a gap record 21..2^64 − 2; it was before
/// seqs 3-20 in the file, so it is "moved", and the `journal.repaired` for the move is
/// written at seq 2^64 (`position.0 + 1` wraps to 0): `expect("a repair record fits a line")`
/// PANICS.
/// Expected: no panic; and a line nothing chains to is never written back at all.
#[test]
fn one_stray_line_at_the_last_seq_does_not_make_repair_panic() {
    let tj = journal_with(20);
    std::fs::remove_file(anchor_file(&tj)).unwrap();
    let mut ls = lines(&tj.bytes());
    let (stray, _) = forged(u64::MAX, Hash([0x55; 32]), "compaction.recorded", json!({}));
    ls.insert(3, stray);
    write(&tj, &ls);
    let out = repair_no_panic(&tj);
    assert!(out.is_ok(), "{out:?}");
    assert_verifies_clean(&tj);
}

/// Attack. Reproduction: seqs 0-20, no anchor, one line written whole with
/// seq 2^64 − 1 and a random prev appended at the end (`echo '<line>' >> journal.jsonl`).
/// Repair keeps it (a run that "alone fits" past F without an anchor) behind a gap record
/// naming seqs 21..2^64 − 2 lost: the journal's head is now seq 2^64 − 1, so every later
/// append must fail (no seq is left), and replay lists 2^64 − 22 seqs as LOST.
/// Expected: a single line nothing chains to is quarantined, not adopted; the journal goes
/// on at seq 21.
#[test]
fn one_stray_line_at_the_last_seq_does_not_use_up_the_journal() {
    let tj = journal_with(20);
    std::fs::remove_file(anchor_file(&tj)).unwrap();
    let mut ls = lines(&tj.bytes());
    let (stray, stray_hash) = forged(u64::MAX, Hash([0x55; 32]), "compaction.recorded", json!({}));
    ls.push(stray);
    write(&tj, &ls);
    let out = repair_no_panic(&tj);
    let s = salvaged(out);
    assert!(!hashes(&tj).contains(&stray_hash), "the stray line was adopted at seq 2^64-1; lost {:?}", s.lost());
    let next = tj.journal().append(event("compaction.recorded", 1), Some(&tj.scope()));
    // Seq 21 is the record of the quarantined stray line; the journal goes on after it.
    assert!(matches!(next, Ok(ref a) if a.seq == 22), "{next:?}");
}

/// Attack. Reproduction: seqs 0-21, a head anchor (check-valid) naming seq 2^64 − 2
/// with a hash no line has, and one line written whole with seq 2^64 − 2 (any prev) inserted
/// after seq 7. The lost tail's range is Below(A + 1 = 2^64 − 1); the stray line's run fits
/// because `r1.saturating_add(2) <= upper` saturates (2^64 − 2 + 2 → 2^64 − 1 ≤ 2^64 − 1),
/// is kept, and `assert!(a_seq > at.0, "a lost tail lies past every kept line")` in
/// proof::plan PANICS.
/// Expected: no panic (a run ending at A is the anchor's seq: it does not fit, as rule 4
/// says: r1 ≤ A − 1).
#[test]
fn a_line_at_the_anchors_seq_near_the_end_of_seqs_does_not_make_the_plan_panic() {
    let tj = journal_with(21);
    set_anchor(&tj, u64::MAX - 1, Hash([0x66; 32]), 0, 1);
    let mut ls = lines(&tj.bytes());
    let (stray, _) = forged(u64::MAX - 1, Hash([0x77; 32]), "compaction.recorded", json!({}));
    ls.insert(7, stray);
    write(&tj, &ls);
    let _ = repair_no_panic(&tj);
}

/// Attack. Reproduction: seqs 0-35, the anchor at seq 9 with another hash
/// (the journal was rolled back or replaced there: §11 "replaced or rewritten"), and a torn
/// tail (23 bytes without a newline) at the end. Repair cuts the torn tail and returns
/// `TornTailCut`; verify still fails (anchor disagrees) and appends are refused; a second
/// repair returns `AnchorAccepted`.
/// Expected (issue 31, "one repair, one answer"): one repair cuts the tail and records the
/// anchor disagreement; a second repair has nothing to do.
#[test]
fn a_torn_tail_on_a_journal_that_disagrees_with_its_anchor_needs_one_repair() {
    let tj = journal_with(35);
    set_anchor(&tj, 9, Hash([0x9c; 32]), 0, 1);
    let mut ls = lines(&tj.bytes());
    ls.push(b"garbage without newline".to_vec());
    write(&tj, &ls);
    let first = repair_no_panic(&tj).unwrap();
    let report = verify::verify_chain(&RealDisk, tj.path(), Some(&anchors(&tj))).unwrap();
    assert!(report.is_ok(), "after one repair ({first:?}): {:?} {:?}", report.verdict, report.anchor);
    assert_eq!(repair_it(&tj).unwrap(), RepairOutcome::NothingToRepair);
}

/// The same journal as the power-cut test, with the repairing process KILLED (SIGKILL)
/// before each update k instead: its unsynced writes stay in the page cache, and a new
/// process repairs again, verifies and appends.
/// Expected as there: nothing kept is lost, no false `anchor_mismatch`, the append goes
/// through.
#[test]
#[ignore = "open (docs/decisions.md): a crash between the salvage's rename and its anchor write leaves the old anchor naming moved offsets, and the next repair records it as a rewrite; no line is lost"]
fn a_kill_before_any_update_of_a_salvage_loses_nothing_and_needs_no_acceptance() {
    use abcd::journal::simdisk::Faults;
    let tj = journal_with(10);
    let id = journal_id(&tj);
    let anchor = std::fs::read(anchor_file(&tj)).unwrap();
    let mut ls = lines(&tj.bytes());
    flip(&mut ls, 3);
    let copy = ls[1].clone();
    ls.insert(7, copy);
    let damaged = ls.concat();
    let lock_dir = tempfile::tempdir().unwrap();
    let lock = lock_dir.path().join("journal.lock");
    let disk = sim::disk_with(1, &damaged, &id, &anchor);
    let p = sim::process(&disk, &lock);
    let _ = salvaged(repair::repair(&p.journal, Some(&sim::scope()), None));
    let kept: Vec<Hash> = sim::events_of(&p).iter().filter(|e| e.kind != format::REPAIRED_KIND).map(|e| e.hash).collect();
    let mut problems = vec![];
    for k in 1.. {
        let disk = sim::disk_with(k, &damaged, &id, &anchor);
        let p = sim::process(&disk, &lock);
        p.view.set_faults(Faults { kill_before_update: Some(k), ..Faults::default() });
        let first = repair::repair(&p.journal, Some(&sim::scope()), None);
        if !sim::injected(&p) {
            assert!(first.is_ok(), "no fault, k={k}: {first:?}");
            break;
        }
        let q = sim::process(&disk, &lock);
        let second = repair::repair(&q.journal, Some(&sim::scope()), None);
        match &second {
            Ok(RepairOutcome::AnchorAccepted { detail, .. }) => problems.push(format!("k={k}: accepted as rewritten: {detail}")),
            Ok(_) => {}
            Err(e) => {
                problems.push(format!("k={k}: the second repair failed: {e}"));
                continue;
            }
        }
        let report = sim::verify_of(&q);
        if !report.is_ok() {
            problems.push(format!("k={k}: verify fails: {:?} {:?}", report.verdict, report.anchor));
        }
        let now: Vec<Hash> = sim::events_of(&q).iter().map(|e| e.hash).collect();
        let missing = kept.iter().filter(|h| !now.contains(h)).count();
        if missing > 0 {
            problems.push(format!("k={k}: {missing} kept line(s) gone"));
        }
        if let Err(e) = q.journal.append(event("compaction.recorded", 1000 + k), Some(&sim::scope())) {
            problems.push(format!("k={k}: the append after fails: {e}"));
        }
    }
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

mod two_homes {
    use super::*;
    use common::repo::{TestRepo, abcd};

    fn ok_with(repo: &TestRepo, home: &Path, args: &[&str]) -> String {
        let out = abcd(&repo.root, home).args(args).output().expect("abcd runs");
        assert!(out.status.success(), "abcd {args:?}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn titles(repo: &TestRepo, home: &Path) -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(&ok_with(repo, home, &["checklist", "--json", "--all"])).unwrap();
        v["items"].as_array().unwrap().iter().map(|i| i["title"].as_str().unwrap().to_string()).collect()
    }

    /// Attack. the stale-anchor finding as it arises with no crash at all: the same
    /// working copy used with two home stores (a hook environment whose `ABCD_HOME` differs
    /// from the terminal's, a second user account, a sandbox). Items 1-5 are added with home
    /// A, items 6-10 with home B; both stores accept the journal (home A's anchor names a line
    /// before the head, which §11 accepts: A < H and the line is there). One byte of item 8's
    /// line flips. `abcd journal repair` run with home B keeps 9 items; run with home A (whose
    /// anchor sits before the damage, on the forward chain) keeps 7: items 9 and 10, whole and
    /// acknowledged, go to quarantine, no seq is named lost, and the next add reuses their
    /// seqs. Expected: the result does not depend on which home store repairs: 9 items.
    #[test]
    fn repair_from_a_home_store_whose_anchor_is_behind_keeps_every_provable_line() {
        let build = || {
            let repo = TestRepo::folder().managed();
            let home_b = repo.home.with_file_name("home-b");
            for i in 1..=5 {
                ok_with(&repo, &repo.home, &["checklist", "add", &format!("item number {i}")]);
            }
            for i in 6..=10 {
                ok_with(&repo, &home_b, &["checklist", "add", &format!("item number {i}")]);
            }
            assert_eq!(titles(&repo, &repo.home).len(), 10, "home A reads the journal");
            let path = repo.root.join(".abcd/.work.local/journal.jsonl");
            let mut ls = lines(&std::fs::read(&path).unwrap());
            let i = ls.iter().position(|l| l.windows(13).any(|w| w == b"item number 8")).unwrap();
            let at = ls[i].windows(13).position(|w| w == b"item number 8").unwrap() + 2;
            ls[i][at] ^= 0x01;
            std::fs::write(&path, ls.concat()).unwrap();
            (repo, home_b)
        };
        // Control: home B's repair (its anchor is the head).
        let (control, control_b) = build();
        ok_with(&control, &control_b, &["journal", "repair"]);
        assert_eq!(titles(&control, &control_b).len(), 9, "repair with home B keeps 9");

        let (repo, _home_b) = build();
        // Home A's repair.
        let words_a = ok_with(&repo, &repo.home, &["journal", "repair"]);
        let with_a = titles(&repo, &repo.home);
        assert_eq!(with_a.len(), 9, "repair with home A: {with_a:?}\n{words_a}");
    }
}

/// PASSES (regression). A journal salvaged once with a lost tail (its head is a gap record
/// standing for the acknowledged seq 10 that was cut off), damaged again at seq 4: the second
/// salvage keeps the old gap record as the head (its chain position is the anchor's), writes
/// a gap record for seq 4, verifies, and the third repair has nothing to do; the next append
/// is seq 11.
#[test]
fn a_journal_ending_in_a_lost_tail_gap_record_is_salvaged_again() {
    let tj = journal_with(10);
    let mut ls = lines(&tj.bytes());
    ls.pop();
    write(&tj, &ls);
    let s = salvaged(repair_no_panic(&tj));
    assert_eq!(s.lost(), [(10, 10)]);
    let mut ls = lines(&tj.bytes());
    flip(&mut ls, 4);
    write(&tj, &ls);
    let s = salvaged(repair_no_panic(&tj));
    assert_eq!(s.lost(), [(4, 4)]);
    assert_verifies_clean(&tj);
    assert_eq!(repair_it(&tj).unwrap(), RepairOutcome::NothingToRepair);
    let next = tj.journal().append(event("compaction.recorded", 1), Some(&tj.scope())).unwrap();
    assert_eq!(next.seq, 11);
}

/// Attack. A hostile
/// repository commits `.abcd/.work.local/quarantine` as a symlink to a folder of its
/// choosing (here a folder outside the working copy, as `/tmp/shared` or a synced folder
/// would be). Repair follows it: the damaged journal bytes (the user's agent state) are
/// written outside the working copy, into the attacker's folder. The journal itself is
/// refused when it is a symlink (§2); its quarantine is not.
/// Expected: quarantine refuses a folder that is a symlink (or not owned by the user), as
/// the journal and the home store's files are refused.
#[test]
fn repair_does_not_write_quarantine_through_a_symlinked_folder() {
    let tj = journal_with(6);
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &tj.paths.quarantine).unwrap();
    let mut ls = lines(&tj.bytes());
    flip(&mut ls, 3);
    write(&tj, &ls);
    let _ = repair_no_panic(&tj);
    let leaked: Vec<_> = std::fs::read_dir(elsewhere.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(leaked.is_empty(), "journal bytes written through the symlink into {}: {leaked:?}", elsewhere.path().display());
}

// ---------------------------------------------------------------------------------------
// The same findings on `proof::plan` alone (no I/O), for the fix: candidates built by hand.
// ---------------------------------------------------------------------------------------

mod plan_only {
    use super::*;
    use abcd::journal::proof::{Candidate, Fate, HeadAnchor, Plan, Source, Step, plan};

    fn h(salt: &str, seq: u64, prev: Hash) -> Hash {
        Hash(*blake3::hash(format!("{salt}/{seq}/{}", prev.to_hex()).as_bytes()).as_bytes())
    }

    /// (seq, prev, hash) for chain `salt`, seqs 0..=last.
    fn chain(salt: &str, last: u64) -> Vec<(u64, Hash, Hash)> {
        let mut out = vec![];
        let mut prev = Hash::genesis_prev();
        for seq in 0..=last {
            let hash = if seq == 0 { h("genesis", 0, prev) } else { h(salt, seq, prev) };
            out.push((seq, prev, hash));
            prev = hash;
        }
        out
    }

    fn file(lines: &[(u64, Hash, Hash)]) -> Vec<Candidate> {
        lines
            .iter()
            .enumerate()
            .map(|(i, &(seq, prev, hash))| Candidate {
                seq,
                prev,
                hash,
                position: (seq, hash),
                source: Source::File { offset: i as u64 * 100, len: 100 },
            })
            .collect()
    }

    fn kept(p: &Plan, c: &[Candidate]) -> Vec<u64> {
        p.steps.iter().filter_map(|s| if let Step::Line(i) = s { Some(c[*i].seq) } else { None }).collect()
    }

    /// Attack. a stale anchor on F (seq 5), seq 7 missing: 8-10 are dropped.
    #[test]
    fn a_stale_anchor_on_the_forward_chain_leaves_a_hole_past_it() {
        let own = chain("a", 10);
        let mut lines = own.clone();
        lines.remove(7);
        let c = file(&lines);
        let p = plan(&c, Some(HeadAnchor { seq: own[5].0, hash: own[5].2, marked: false }));
        assert_eq!(kept(&p, &c), [0, 1, 2, 3, 4, 5, 6, 8, 9, 10], "fates {:?}", p.fates);
        assert_eq!(p.lost(), [(7, 7)]);
    }

    /// Attack. the anchor's own line (seq 8) missing, 9-10 chain onto (8, a).
    #[test]
    fn lines_continuing_a_lost_tail_are_kept() {
        let own = chain("a", 10);
        let mut lines = own.clone();
        lines.remove(8);
        let c = file(&lines);
        let p = plan(&c, Some(HeadAnchor { seq: own[8].0, hash: own[8].2, marked: false }));
        assert_eq!(kept(&p, &c), [0, 1, 2, 3, 4, 5, 6, 7, 9, 10]);
        assert_eq!(p.lost(), [(8, 8)]);
    }

    /// Attack. a candidate at seq 2^64 − 2 and an anchor (2^64 − 2, x) with no line:
    /// the run "fits" through `saturating_add` and the plan's lost-tail assert panics.
    #[test]
    fn a_run_at_the_anchors_seq_near_the_end_does_not_panic() {
        let own = chain("a", 5);
        let mut c = file(&own);
        c.push(Candidate {
            seq: u64::MAX - 1,
            prev: Hash([1; 32]),
            hash: Hash([2; 32]),
            position: (u64::MAX - 1, Hash([2; 32])),
            source: Source::File { offset: 600, len: 100 },
        });
        let p = catch_unwind(AssertUnwindSafe(|| plan(&c, Some(HeadAnchor { seq: u64::MAX - 1, hash: Hash([3; 32]), marked: false }))));
        assert!(p.is_ok(), "plan panicked");
    }

    /// Attack. a gap-record candidate at seq 3 whose position is line 4's own
    /// (lost_to 4, next_prev h4) costs lines 3 and 4, which chain exactly.
    #[test]
    fn a_gap_record_sharing_a_real_lines_position_does_not_cost_the_real_lines() {
        let own = chain("a", 10);
        let mut c = file(&own);
        let g = h("gap", 3, own[2].2);
        c.push(Candidate { seq: 3, prev: own[2].2, hash: g, position: (4, own[4].2), source: Source::File { offset: 1100, len: 100 } });
        let p = plan(&c, Some(HeadAnchor { seq: own[10].0, hash: own[10].2, marked: false }));
        assert_eq!(kept(&p, &c), (0..=10).collect::<Vec<_>>());
        assert_eq!(p.fates[11], Fate::Unproven);
    }
}
