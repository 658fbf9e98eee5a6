//! Issue 20: no acknowledged event is lost to a repair. Damage goes to quarantine, every
//! line the damage did not touch stays, lost seqs are named by a gap record, and damage a
//! full read found stops appends until the repair.

use crate::common;

use std::path::Path;
use std::process::Output;

use abcd::journal::anchor::AnchorStore;
use abcd::journal::repair::{self, RepairOutcome};
use abcd::journal::storage::RealDisk;
use abcd::journal::verify;
use abcd::store::Store;
use common::repo::{TestRepo, abcd};
use common::{TempJournal, event, journal_with, line_starts};

fn run(repo: &TestRepo, args: &[&str]) -> Output {
    abcd(&repo.root, &repo.home).args(args).output().expect("abcd runs")
}

fn ok(repo: &TestRepo, args: &[&str]) -> String {
    let out = run(repo, args);
    assert!(out.status.success(), "abcd {args:?}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn journal_path(repo: &TestRepo) -> std::path::PathBuf {
    repo.root.join(".abcd/.work.local/journal.jsonl")
}

fn quarantined(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir.join("quarantine"))
        .map(|rd| {
            rd.map(|e| {
                let e = e.unwrap();
                (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
            })
            .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn item_titles(repo: &TestRepo) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(&ok(repo, &["checklist", "--json"])).expect("checklist --json is JSON");
    v["items"].as_array().expect("items").iter().map(|i| i["title"].as_str().expect("a title").to_string()).collect()
}

/// The issue's measurement, step by step: 120 items, one bit flipped inside the title of
/// seq 5, five more adds (acknowledged: the damage is behind the appender's window), one
/// repair. Before salvage the repair left 4 items.
#[test]
fn a_bit_flipped_in_seq_5_of_120_items_costs_only_that_item() {
    let repo = TestRepo::folder().managed();
    for i in 1..=120 {
        ok(&repo, &["checklist", "add", &format!("item number {i}")]);
    }
    let path = journal_path(&repo);
    let clean = std::fs::read(&path).unwrap();
    let starts = line_starts(&clean);
    let line5 = &clean[starts[5]..starts[6]];
    let line5_event = abcd::journal::format::verify_line(line5).expect("seq 5 verifies");
    assert_eq!(line5_event.seq, 5);
    let title = line5_event.data["item"]["title"].as_str().expect("seq 5 adds an item").to_string();
    let at = starts[5] + line5.windows(title.len()).position(|w| w == title.as_bytes()).expect("the title is in the line") + 2;
    let mut damaged = clean.clone();
    damaged[at] ^= 0x01;
    std::fs::write(&path, &damaged).unwrap();
    for i in 1..=5 {
        ok(&repo, &["checklist", "add", &format!("late item {i}")]);
    }
    let before_repair = std::fs::read(&path).unwrap();
    let repaired = ok(&repo, &["journal", "repair"]);
    assert!(repaired.contains("lost seqs: 5"), "{repaired}");
    let verified = run(&repo, &["journal", "verify"]);
    assert_eq!(verified.status.code(), Some(0), "{}", String::from_utf8_lossy(&verified.stdout));

    let titles = item_titles(&repo);
    assert_eq!(titles.len(), 124, "119 early items and the 5 late ones: {titles:?}");
    assert!(!titles.contains(&title), "the damaged item is the only one lost");
    for i in 1..=5 {
        assert!(titles.contains(&format!("late item {i}")), "late item {i} was acknowledged and is kept");
    }
    // The quarantine holds exactly the damaged line's bytes.
    let q = quarantined(path.parent().unwrap());
    assert_eq!(q.len(), 1, "{:?}", q.iter().map(|(n, _)| n).collect::<Vec<_>>());
    assert_eq!(q[0].1, damaged[starts[5]..starts[6]], "the quarantine holds the damaged line, no more");
    // Every other line of the journal before the repair is in the journal after it.
    let after = std::fs::read(&path).unwrap();
    let lines_before: Vec<&[u8]> = before_repair.split_inclusive(|&b| b == b'\n').collect();
    let lines_after: Vec<&[u8]> = after.split_inclusive(|&b| b == b'\n').collect();
    assert_eq!(lines_after.len(), lines_before.len(), "the damaged line is replaced by one record");
    for (i, (b, a)) in lines_before.iter().zip(&lines_after).enumerate() {
        if i != 5 {
            assert_eq!(b, a, "line {i} is kept byte for byte");
        }
    }
    let replay = ok(&repo, &["replay"]);
    assert!(replay.contains("LOST seq 5"), "replay names the lost seq: {replay}");
}

/// A small deterministic generator: the offsets are random, and the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

const EVENTS: usize = 5_000;
const FLIPS: usize = 20;

/// A bit flipped at 20 random offsets (each in its own line) across a 5,000-event journal:
/// one repair keeps every other line, the quarantine holds exactly the damaged lines, the
/// fold folds every intact event, and replay names the 20 lost seqs.
#[test]
fn twenty_flipped_bits_across_5000_events_cost_exactly_their_lines() {
    let tj = TempJournal::new();
    let j = tj.journal();
    for batch in 0..EVENTS / 500 {
        let events: Vec<_> = (0..500).map(|i| event("compaction.recorded", (batch * 500 + i) as u64)).collect();
        j.append_batch(&events, Some(&tj.scope())).unwrap();
    }
    let clean = tj.bytes();
    let starts = line_starts(&clean);
    assert_eq!(starts.len(), EVENTS + 1);
    let mut rng = Lcg(0x2026_1202);
    let mut damaged_lines = std::collections::BTreeSet::new();
    let mut damaged = clean.clone();
    while damaged_lines.len() < FLIPS {
        // Not the genesis (nothing to chain from) and not the last line.
        let at = starts[1] + rng.next((starts[EVENTS] - starts[1]) as u64) as usize;
        let line = starts.partition_point(|&s| s <= at) - 1;
        if damaged_lines.contains(&line)
            || damaged_lines.contains(&(line + 1))
            || line == 0
            || (line > 0 && damaged_lines.contains(&(line - 1)))
        {
            continue;
        }
        // A flip that keeps the newline where it is (a flipped newline is another case).
        if damaged[at] == b'\n' {
            continue;
        }
        damaged[at] ^= 1 << rng.next(8);
        if abcd::journal::format::verify_line(&damaged[starts[line]..starts[line + 1]]).is_ok() {
            damaged[at] = clean[at];
            continue;
        }
        damaged_lines.insert(line);
    }
    std::fs::write(tj.path(), &damaged).unwrap();
    let outcome = repair::repair(&tj.journal(), Some(&tj.scope()), None).expect("repair runs");
    let RepairOutcome::Salvaged(salvage) = outcome else { panic!("a salvage, not {outcome:?}") };
    let lost: Vec<u64> = salvage.lost().iter().flat_map(|&(a, b)| a..=b).collect();
    assert_eq!(lost, damaged_lines.iter().map(|&l| l as u64).collect::<Vec<_>>(), "exactly the damaged seqs are lost");

    let anchors = AnchorStore::new(&tj.home);
    let report = verify::verify_chain(&RealDisk, tj.path(), Some(&anchors)).unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.events, (EVENTS + 1 - FLIPS) as u64 + FLIPS as u64, "every intact line and one record per damaged line");

    let after = tj.bytes();
    let after_lines: std::collections::HashSet<&[u8]> = after.split_inclusive(|&b| b == b'\n').collect();
    for line in 0..=EVENTS {
        let bytes = &clean[starts[line]..starts.get(line + 1).copied().unwrap_or(clean.len())];
        assert_eq!(after_lines.contains(bytes), !damaged_lines.contains(&line), "line {line}");
    }
    let mut expected_q: Vec<u8> = Vec::new();
    for &line in &damaged_lines {
        expected_q.extend_from_slice(&damaged[starts[line]..starts[line + 1]]);
    }
    let mut regions = salvage.regions.clone();
    regions.sort_by_key(|r| r.offset);
    let got_q: Vec<u8> = regions.iter().flat_map(|r| std::fs::read(r.quarantine.as_ref().expect("bytes moved")).unwrap()).collect();
    assert_eq!(got_q, expected_q, "the quarantine holds exactly the damaged bytes");

    let current = Store::new(tj.journal()).current_state().unwrap();
    assert!(current.degraded.is_none());
    assert_eq!(current.state.journal.by_kind["compaction.recorded"], (EVENTS - FLIPS) as u64, "every intact event is folded");
    let folded_lost: Vec<u64> = current.state.journal.lost.iter().flat_map(|l| l.from..=l.to).collect();
    assert_eq!(folded_lost, lost);

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_abcd"))
        .args(["replay", "--journal"])
        .arg(tj.path())
        .env("ABCD_HOME", &tj.home)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for seq in &lost {
        assert!(text.contains(&format!("LOST seq {seq} ")), "replay names lost seq {seq}");
    }
}

/// Two separated damaged lines and a damaged acknowledged last line: one repair, and the
/// journal verifies, names three lost seqs and goes on from the anchor's seq.
#[test]
fn two_damaged_lines_and_a_damaged_last_line_need_one_repair() {
    let tj = journal_with(40);
    let j = tj.journal();
    let clean = tj.bytes();
    let starts = line_starts(&clean);
    let mut damaged = clean.clone();
    for line in [7usize, 23, 40] {
        damaged[starts[line] + 30] ^= 0x04;
    }
    std::fs::write(tj.path(), &damaged).unwrap();
    let RepairOutcome::Salvaged(salvage) = repair::repair(&tj.journal(), Some(&tj.scope()), None).unwrap() else { panic!("salvage") };
    assert_eq!(salvage.lost(), [(7, 7), (23, 23), (40, 40)]);
    let anchors = AnchorStore::new(&tj.home);
    let report = verify::verify_chain(&RealDisk, tj.path(), Some(&anchors)).unwrap();
    assert!(report.is_ok(), "one repair does the whole job: {report:?}");
    assert_eq!(repair::repair(&tj.journal(), Some(&tj.scope()), None).unwrap(), RepairOutcome::NothingToRepair);
    let next = j.append(event("compaction.recorded", 99), None).unwrap();
    assert_eq!(next.seq, 41, "seqs are never given twice: the lost seq 40 stays lost");
    let current = Store::new(tj.journal()).current_state().unwrap();
    assert_eq!(current.state.journal.by_kind["compaction.recorded"], 40 - 3 + 1);
}

/// A damaged last line without an anchor naming it (it may never have been acknowledged)
/// is still a torn tail: cut, nothing recorded as lost.
#[test]
fn a_damaged_last_line_no_anchor_names_is_a_torn_tail() {
    let tj = journal_with(5);
    let clean = tj.bytes();
    let starts = line_starts(&clean);
    let mut damaged = clean.clone();
    damaged[starts[5] + 30] ^= 0x04;
    std::fs::write(tj.path(), &damaged).unwrap();
    std::fs::remove_dir_all(tj.home.join("anchors")).unwrap();
    let outcome = repair::repair(&tj.journal(), Some(&tj.scope()), None).unwrap();
    assert!(matches!(outcome, RepairOutcome::TornTailCut { .. }), "{outcome:?}");
    assert_eq!(tj.bytes(), clean[..starts[5]]);
}

/// Damage behind the appender's window and the newest checkpoint: appends go on until a
/// full read finds it; from then on they are refused (a hook lets the session through) until the repair.
#[test]
fn damage_a_full_read_found_refuses_appends_until_repair() {
    let repo = TestRepo::folder().managed();
    for i in 1..=40 {
        ok(&repo, &["checklist", "add", &format!("item number {i}")]);
    }
    // A checkpoint at the head: readers and the appender start there and never read
    // the early lines again.
    ok(&repo, &["journal", "checkpoint"]);
    let path = journal_path(&repo);
    let mut bytes = std::fs::read(&path).unwrap();
    let starts = line_starts(&bytes);
    bytes[starts[3] + 40] ^= 0x02;
    std::fs::write(&path, &bytes).unwrap();
    ok(&repo, &["checklist", "add", "behind the window"]);
    let verified = run(&repo, &["journal", "verify"]);
    assert_eq!(verified.status.code(), Some(1));
    let refused = run(&repo, &["checklist", "add", "after the verify"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "an append after damage was found is refused");
    assert!(err.contains("abcd journal repair") && err.contains("damage"), "{err}");
    let hook = abcd(&repo.root, &repo.home)
        .args(["hook", "user-prompt-submit"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(br#"{"session_id":"s-1","hook_event_name":"UserPromptSubmit","prompt":"go on","cwd":"."}"#)?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(hook.status.code(), Some(0), "a hook fails open: {}", String::from_utf8_lossy(&hook.stderr));
    ok(&repo, &["journal", "repair"]);
    ok(&repo, &["checklist", "add", "after the repair"]);
    let titles = item_titles(&repo);
    assert!(titles.contains(&"behind the window".to_string()) && titles.contains(&"after the repair".to_string()), "{titles:?}");
    assert_eq!(titles.len(), 41, "40 + 2 added, less the damaged one: {titles:?}");
}

fn hook(repo: &TestRepo, event: &str, payload: &str) -> Output {
    common::repo::hook(&repo.root, &repo.home, event, payload)
}

/// A gap record inside the reader's tail window, with `checklist.json` left behind by
/// events that do not change it: the reader counts lines by seq only where no gap is, and
/// shows the list (it asserted consecutive seqs before, and stopped).
#[test]
fn a_gap_record_near_the_head_is_read_like_any_line() {
    let repo = TestRepo::folder().managed();
    for i in 1..=10 {
        ok(&repo, &["checklist", "add", &format!("item number {i}")]);
    }
    let path = journal_path(&repo);
    let mut bytes = std::fs::read(&path).unwrap();
    let starts = line_starts(&bytes);
    let last = starts.len() - 1;
    // Two lines next to each other: one gap record stands in for two seqs.
    bytes[starts[last - 2] + 40] ^= 0x02;
    bytes[starts[last - 1] + 40] ^= 0x02;
    std::fs::write(&path, &bytes).unwrap();
    let repaired = ok(&repo, &["journal", "repair"]);
    assert!(repaired.contains(&format!("lost seqs: {}-{}", last - 2, last - 1)), "{repaired}");
    let cwd = repo.root.display().to_string();
    for _ in 0..2 {
        let payload = format!(r#"{{"session_id":"abc123","cwd":"{cwd}","hook_event_name":"SessionStart","source":"startup"}}"#);
        let out = hook(&repo, "session-start", &payload);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let out = run(&repo, &["checklist"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(item_titles(&repo).len(), 8);
}

/// A mark whose damage is gone (a good copy put back, or unsynced bytes a crash dropped)
/// stops nothing: the appender that finds it reads the whole journal, finds it clean,
/// clears the mark and appends.
#[test]
fn a_mark_whose_damage_is_gone_is_cleared_by_the_next_append() {
    let repo = TestRepo::folder().managed();
    for i in 1..=12 {
        ok(&repo, &["checklist", "add", &format!("item number {i}")]);
    }
    let path = journal_path(&repo);
    let good = std::fs::read(&path).unwrap();
    let mut bad = good.clone();
    bad[line_starts(&good)[3] + 40] ^= 0x02;
    std::fs::write(&path, &bad).unwrap();
    assert_eq!(run(&repo, &["journal", "verify"]).status.code(), Some(1));
    let anchor_file = || {
        let dir = repo.home.join("anchors");
        let entry =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|x| x == "anchor")).unwrap();
        std::fs::read(entry).unwrap()
    };
    assert!(anchor_file().starts_with(b"abcd-damage/v1 "), "verify marked the anchor");
    std::fs::write(&path, &good).unwrap();
    ok(&repo, &["checklist", "add", "after the copy was put back"]);
    assert!(anchor_file().starts_with(b"abcd-anchor/v1 "), "the append cleared the mark");
    assert_eq!(item_titles(&repo).len(), 13);
}

/// A flipped newline merging two long lines into one piece over 64 KiB (gap F1's shape):
/// the line at its end is intact and kept; only the first line's bytes are damage.
#[test]
fn a_merged_piece_over_the_line_limit_keeps_the_line_at_its_end() {
    let tj = TempJournal::new();
    let j = tj.journal();
    let big = |n: u64| abcd::journal::NewEvent {
        kind: "compaction.recorded".into(),
        actor: abcd::journal::Actor::this_process(None),
        data: serde_json::json!({"n": n, "pad": "x".repeat(40_000)}),
    };
    j.append(event("compaction.recorded", 0), Some(&tj.scope())).unwrap();
    j.append(big(1), None).unwrap();
    j.append(big(2), None).unwrap();
    j.append(event("compaction.recorded", 3), None).unwrap();
    let clean = tj.bytes();
    let starts = line_starts(&clean);
    let mut damaged = clean.clone();
    damaged[starts[3] - 1] = b' ';
    std::fs::write(tj.path(), &damaged).unwrap();
    let RepairOutcome::Salvaged(salvage) = repair::repair(&tj.journal(), Some(&tj.scope()), None).unwrap() else { panic!("salvage") };
    assert_eq!(salvage.lost(), [(2, 2)], "only the line whose newline was flipped is lost");
    let after = tj.bytes();
    let line3 = &clean[starts[3]..starts[4]];
    assert!(after.windows(line3.len()).any(|w| w == line3), "the long line after the damage is kept");
    let q = std::fs::read(salvage.regions[0].quarantine.as_ref().unwrap()).unwrap();
    assert_eq!(q, damaged[starts[2]..starts[3]], "the quarantine holds the damaged line and its flipped newline");
}
