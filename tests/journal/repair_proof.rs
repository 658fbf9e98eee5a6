//! Issue 31: repair never guesses. Each reproduction of the issue, step by step through the
//! binary: after one repair every provable line is in the journal in chain order, no line of
//! another journal is, the quarantine holds exactly the rest, verify exits 0, replay names
//! what was lost, and the exit status is 0.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use abcd::journal::format;
use common::line_starts;
use common::repo::{TestRepo, abcd};

fn run(repo: &TestRepo, args: &[&str]) -> Output {
    abcd(&repo.root, &repo.home).args(args).output().expect("abcd runs")
}

fn ok(repo: &TestRepo, args: &[&str]) -> String {
    let out = run(repo, args);
    assert!(out.status.success(), "abcd {args:?}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn journal_path(repo: &TestRepo) -> PathBuf {
    repo.root.join(".abcd/.work.local/journal.jsonl")
}

fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

/// Every quarantine file's bytes, by name.
fn quarantined(journal: &Path) -> Vec<Vec<u8>> {
    let dir = journal.parent().unwrap().join("quarantine");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap()).map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())).collect()
        })
        .unwrap_or_default();
    files.sort();
    files.into_iter().map(|(_, b)| b).collect()
}

fn items(repo: &TestRepo) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(&ok(repo, &["checklist", "--json", "--all"])).expect("checklist --json is JSON");
    v["items"].as_array().expect("items").iter().map(|i| i["title"].as_str().expect("a title").to_string()).collect()
}

fn managed_with(n: usize, prefix: &str) -> TestRepo {
    let repo = TestRepo::folder().managed();
    for i in 1..=n {
        ok(&repo, &["checklist", "add", &format!("{prefix} item {i}")]);
    }
    repo
}

/// One repair, exit 0, verify exits 0 afterwards; returns repair's words.
fn repair_once(repo: &TestRepo) -> String {
    let out = run(repo, &["journal", "repair"]);
    let words = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "one repair does its job and says so: {words}");
    let verified = run(repo, &["journal", "verify"]);
    assert_eq!(verified.status.code(), Some(0), "verify after one repair: {}", String::from_utf8_lossy(&verified.stdout));
    words
}

/// The journal's seqs in file order, with the lines that are not `journal.repaired`.
fn seqs(path: &Path) -> Vec<u64> {
    lines(&std::fs::read(path).unwrap()).iter().map(|l| format::verify_line(l).expect("a repaired journal verifies").seq).collect()
}

#[test]
fn a_copy_of_seq_12_written_after_seq_3_loses_nothing() {
    let repo = managed_with(12, "dup");
    let path = journal_path(&repo);
    let clean = std::fs::read(&path).unwrap();
    let ls = lines(&clean);
    assert_eq!(format::verify_line(&ls[12]).unwrap().seq, 12);
    let mut damaged = ls[..=3].concat();
    damaged.extend_from_slice(&ls[12]);
    damaged.extend_from_slice(&ls[4..].concat());
    std::fs::write(&path, &damaged).unwrap();

    let words = repair_once(&repo);
    assert!(!words.contains("lost seqs"), "nothing was lost: {words}");
    assert_eq!(items(&repo).len(), 12, "all twelve items: {words}");
    let after = std::fs::read(&path).unwrap();
    assert!(after.starts_with(&clean), "the journal is the clean one, byte for byte, and the records after it");
    assert_eq!(quarantined(&path), [ls[12].clone()], "the quarantine holds the misplaced copy, no more");
    let replay = ok(&repo, &["replay"]);
    assert!(!replay.contains("LOST"), "{replay}");
}

#[test]
fn two_adjacent_lines_swapped_are_both_kept_in_chain_order() {
    let repo = managed_with(8, "swap");
    let path = journal_path(&repo);
    let clean = std::fs::read(&path).unwrap();
    let mut ls = lines(&clean);
    ls.swap(4, 5);
    std::fs::write(&path, ls.concat()).unwrap();

    let words = repair_once(&repo);
    assert!(!words.contains("lost seqs"), "{words}");
    assert_eq!(items(&repo).len(), 8);
    assert!(std::fs::read(&path).unwrap().starts_with(&clean), "written back in chain order");
    assert!(quarantined(&path).is_empty(), "nothing was damaged, so nothing is in quarantine");
    let replay = ok(&repo, &["replay"]);
    assert!(replay.contains("out of chain order"), "the move is on record: {replay}");
}

#[test]
fn another_journal_appended_is_never_adopted() {
    let a = managed_with(5, "a");
    let b = managed_with(15, "b");
    let a_path = journal_path(&a);
    let a_clean = std::fs::read(&a_path).unwrap();
    let b_bytes = std::fs::read(journal_path(&b)).unwrap();
    let mut damaged = a_clean.clone();
    damaged.extend_from_slice(&b_bytes);
    std::fs::write(&a_path, &damaged).unwrap();

    let words = repair_once(&a);
    assert!(!words.contains("lost seqs"), "a lost nothing: seq 6 was never acknowledged there: {words}");
    let titles = items(&a);
    assert_eq!(titles.len(), 5, "{titles:?}");
    assert!(titles.iter().all(|t| t.starts_with("a item")), "no item of b: {titles:?}");
    assert!(std::fs::read(&a_path).unwrap().starts_with(&a_clean));
    assert_eq!(quarantined(&a_path).concat(), b_bytes, "b's journal is in quarantine, whole");
    // The Stop hook owes none of b's items: the plan holds a's five only.
    let stop = run(&a, &["checklist"]);
    assert!(!String::from_utf8_lossy(&stop.stdout).contains("b item"));
}

#[test]
fn a_cut_last_line_behind_damage_is_named_lost() {
    let repo = managed_with(6, "cut");
    let path = journal_path(&repo);
    let clean = std::fs::read(&path).unwrap();
    let starts = line_starts(&clean);
    // Seq 6 removed at a line boundary, and a bit of seq 3 flipped.
    let mut damaged = clean[..starts[6]].to_vec();
    damaged[starts[3] + 100] ^= 0x01;
    std::fs::write(&path, &damaged).unwrap();
    let before = run(&repo, &["journal", "verify"]);
    assert_ne!(before.status.code(), Some(0));

    let words = repair_once(&repo);
    assert!(words.contains("lost seqs: 3, 6"), "{words}");
    assert_eq!(seqs(&path)[..6], [0, 1, 2, 3, 4, 5], "seq 3 is a gap record, 4 and 5 are kept");
    let replay = ok(&repo, &["replay"]);
    assert!(replay.contains("LOST seq 3") && replay.contains("LOST seq 6"), "{replay}");
    assert_eq!(quarantined(&path), [damaged[starts[3]..starts[4]].to_vec()]);
    // The next add continues after the lost seq 6.
    ok(&repo, &["checklist", "add", "after the repair"]);
    assert_eq!(*seqs(&path).last().unwrap(), 7);
}

#[test]
fn a_rewrite_from_seq_2_hidden_by_damage_is_recorded_against_the_anchor() {
    let repo = managed_with(6, "orig");
    let path = journal_path(&repo);
    let clean = std::fs::read(&path).unwrap();
    let ls = lines(&clean);
    // Seqs 2-6 written anew onto seq 1 (another history), then seq 4 of it damaged.
    let mut prev = format::verify_line(&ls[1]).unwrap().hash;
    let mut rewritten = ls[..2].concat();
    let mut starts = vec![];
    for seq in 2..=6u64 {
        let event = format::NewEvent {
            kind: "test.rewritten".into(),
            actor: format::Actor { session: None, pid: 1, tool: "test".into() },
            data: serde_json::json!({"n": seq}),
        };
        let (line, hash) = format::encode_line(seq, format::now_ms(), &event, &prev).unwrap();
        starts.push(rewritten.len());
        rewritten.extend_from_slice(&line);
        prev = hash;
    }
    rewritten[starts[2] + 90] ^= 0x01;
    std::fs::write(&path, &rewritten).unwrap();

    repair_once(&repo);
    let journal = std::fs::read(&path).unwrap();
    let records: Vec<serde_json::Value> =
        lines(&journal).iter().map(|l| format::verify_line(l).unwrap()).filter(|e| e.kind == "journal.repaired").map(|e| e.data).collect();
    assert!(
        records.iter().any(|d| d["cause"] == "anchor_mismatch" && d["anchor_seq"] == 6),
        "the rewrite the damage hid is on record: {records:?}"
    );
    let replay = ok(&repo, &["replay"]);
    assert!(replay.contains("LOST seqs 4-6"), "{replay}");
}

fn hook(repo: &TestRepo, event: &str, payload: &str) -> Output {
    common::repo::hook(&repo.root, &repo.home, event, payload)
}

/// Readers fold what repair would keep, without writing: one byte changed in seq 2's title
/// of five items, and the session start, `abcd checklist` and `checklist --all` show items 1,
/// 3, 4 and 5 with one line naming the damaged seq and the repair; the journal is untouched
/// and appends stay refused until the repair.
#[test]
fn readers_of_mid_file_damage_show_every_provable_item() {
    let repo = managed_with(5, "shown");
    let path = journal_path(&repo);
    let clean = std::fs::read(&path).unwrap();
    let starts = line_starts(&clean);
    let line2 = &clean[starts[2]..starts[3]];
    let at = starts[2] + line2.windows(12).position(|w| w == b"shown item 2").expect("seq 2 adds item 2") + 1;
    let mut damaged = clean.clone();
    damaged[at] ^= 0x01;
    std::fs::write(&path, &damaged).unwrap();

    let cwd = repo.root.display().to_string();
    let payload = format!(r#"{{"session_id":"abc123","cwd":"{cwd}","hook_event_name":"SessionStart","source":"compact"}}"#);
    let out = hook(&repo, "session-start", &payload);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let injected = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    for i in [1, 3, 4, 5] {
        assert!(injected.contains(&format!("shown item {i}")), "item {i} is provable and injected: {injected}");
    }
    assert!(!injected.contains("shown item 2"), "{injected}");
    assert!(
        injected.contains("damaged or missing seqs: 2") && injected.contains("abcd journal repair"),
        "one line names the damaged seq and the repair: {injected}"
    );

    let listed = run(&repo, &["checklist"]);
    let all = format!("{}{}", String::from_utf8_lossy(&listed.stdout), String::from_utf8_lossy(&listed.stderr));
    for i in [1, 3, 4, 5] {
        assert!(all.contains(&format!("shown item {i}")), "abcd checklist shows item {i}: {all}");
    }
    assert!(all.contains("damaged or missing seqs: 2"), "{all}");
    let history = run(&repo, &["checklist", "--all"]);
    let history = format!("{}{}", String::from_utf8_lossy(&history.stdout), String::from_utf8_lossy(&history.stderr));
    assert!(history.contains("shown item 5") && history.contains("damaged or missing seqs: 2"), "{history}");

    assert_eq!(std::fs::read(&path).unwrap(), damaged, "a reader writes nothing to the journal");
    let refused = run(&repo, &["checklist", "add", "while damaged"]);
    assert_ne!(refused.status.code(), Some(0), "appends stay refused until repair");
    repair_once(&repo);
    assert_eq!(items(&repo), ["shown item 1", "shown item 3", "shown item 4", "shown item 5"]);
}

/// Upgrades (docs/decisions.md): a journal the greedy walk of an older build salvaged, with
/// another journal's lines adopted behind its gap record, verifies clean and is left as it
/// is: repair does not revisit it, since its records cannot say which kept lines were
/// adopted and a revisit could only guess.
#[test]
fn a_journal_the_old_walk_salvaged_is_left_as_it_is() {
    let a = managed_with(5, "a");
    let b = managed_with(15, "b");
    let path = journal_path(&a);
    let own = std::fs::read(&path).unwrap();
    let foreign = lines(&std::fs::read(journal_path(&b)).unwrap());
    let last_own = format::verify_line(lines(&own).last().unwrap()).unwrap();
    let b7 = format::verify_line(&foreign[7]).unwrap();
    // What the greedy walk wrote for `cat b >> a`: a gap record at seq 6 naming b's seq 6 as
    // lost, then b's seqs 7-15 kept.
    let record = format::NewEvent {
        kind: "journal.repaired".into(),
        actor: format::Actor { session: None, pid: 1, tool: "abcd/0.0.9".into() },
        data: serde_json::json!({
            "anchor_hash": null, "anchor_seq": null, "cause": "corruption", "from_offset": own.len(),
            "lines": 7, "lost_from": 6, "lost_to": 6, "next_prev": b7.prev.to_hex(),
            "problem": "seq 6 at byte 0: seq out of order", "quarantine_blake3": null,
            "quarantine_file": null, "to_offset": own.len()
        }),
    };
    let (gap, _) = format::encode_line(6, format::now_ms(), &record, &last_own.hash).unwrap();
    let mut old_walk = own.clone();
    old_walk.extend_from_slice(&gap);
    old_walk.extend_from_slice(&foreign[7..].concat());
    std::fs::write(&path, &old_walk).unwrap();

    let verified = run(&a, &["journal", "verify"]);
    assert_eq!(verified.status.code(), Some(0), "{}", String::from_utf8_lossy(&verified.stdout));
    let words = repair_once(&a);
    assert!(words.contains("nothing to repair"), "{words}");
    assert_eq!(std::fs::read(&path).unwrap(), old_walk, "the file is left byte for byte");
}
