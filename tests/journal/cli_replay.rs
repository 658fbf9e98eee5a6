//! `abcd replay` through the binary: audit lines, cache comparison, time travel.

use crate::common;

use std::process::{Command, Output};

use abcd::store::Store;
use common::{TempJournal, event};

fn abcd(tj: &TempJournal, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_abcd")).args(args).env("ABCD_HOME", &tj.home).output().expect("abcd runs")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A journal written through the store, so its projection is on disk, plus a checkpoint.
fn stored_journal(n: u64) -> TempJournal {
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    for i in 0..n {
        store.append(&[event("compaction.recorded", i)], Some(&tj.scope())).unwrap();
    }
    // These events leave the projections behind (Store::project); bring them to the head,
    // as the next checklist write would, so every cache names it.
    store.write_projection(&store.current_state().unwrap()).unwrap();
    let out = abcd(&tj, &["journal", "checkpoint", "--journal", tj.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    tj
}

#[test]
fn replay_prints_one_audit_line_per_event_and_agrees_with_every_cache() {
    let tj = stored_journal(5);
    let out = abcd(&tj, &["replay", "--journal", tj.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let audit: Vec<&str> = stdout.lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(audit.len(), 6, "{stdout}");
    assert!(audit[0].contains("opened journal"), "{stdout}");
    assert!(audit[5].contains("compaction.recorded"), "{stdout}");
    assert!(stdout.contains("checkpoint") && stdout.contains("agrees with the fold at seq 5"), "{stdout}");
    assert!(stdout.contains("agrees with the fold at the head, seq 5"), "{stdout}");

    let json = abcd(&tj, &["replay", "--journal", tj.path().to_str().unwrap(), "--json"]);
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&json.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.iter().filter(|v| v["type"] == "event").count(), 6);
    assert_eq!(lines.last().unwrap()["type"], "verdict");
    assert_eq!(lines.last().unwrap()["ok"], true);
}

#[test]
fn a_hand_edited_projection_or_checkpoint_fails_the_replay() {
    let tj = stored_journal(3);
    let projection = tj.paths.dir().join(abcd::store::projection::STATE_FILE);
    let edited = std::fs::read_to_string(&projection).unwrap().replace("\"events\": 4", "\"events\": 5");
    std::fs::write(&projection, edited).unwrap();
    let out = abcd(&tj, &["replay", "--journal", tj.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("DISAGREES"), "{}", text(&out));
    // The store never trusts it: a reader re-folds and gets the true count.
    let current = Store::new(tj.journal()).current_state().unwrap();
    assert_eq!(current.state.journal.events, 4);

    let tj = stored_journal(3);
    let cp = std::fs::read_dir(&tj.paths.checkpoints).unwrap().next().unwrap().unwrap().path();
    let mut bytes = std::fs::read(&cp).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&cp, bytes).unwrap();
    let out = abcd(&tj, &["replay", "--journal", tj.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("unusable"), "{}", text(&out));
}

#[test]
fn replay_at_a_seq_prints_the_projection_as_it_was_then() {
    let tj = stored_journal(6);
    let out = abcd(&tj, &["replay", "--journal", tj.path().to_str().unwrap(), "--at", "2", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let names: Vec<&str> = lines.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["state", "checklist", "checklist-last-good"]);
    let v = &lines[0];
    assert_eq!(v["at"], 2);
    assert_eq!(v["content"]["state"]["journal"]["events"], 3);
    assert_eq!(v["content"]["journal"]["seq"], 2);
    assert_eq!(lines[1]["content"]["schema"], "abcd/checklist/v1");
    let one = abcd(&tj, &["replay", "--journal", tj.path().to_str().unwrap(), "--at", "2", "--projection", "checklist", "--json"]);
    assert_eq!(String::from_utf8_lossy(&one.stdout).lines().count(), 1);
    let out = abcd(&tj, &["replay", "--journal", tj.path().to_str().unwrap(), "--at", "99"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = abcd(&tj, &["replay", "--journal", tj.path().to_str().unwrap(), "--projection", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn replay_of_a_corrupt_journal_names_seq_and_offset_and_exits_1() {
    let tj = stored_journal(4);
    let mut bytes = tj.bytes();
    let second = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    bytes[second + 40] ^= 0x02;
    std::fs::write(tj.path(), &bytes).unwrap();
    let out = abcd(&tj, &["replay", "--journal", tj.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains(&format!("CORRUPT at seq 1, byte offset {second}")), "{}", text(&out));
}

#[test]
fn outside_a_managed_working_copy_the_default_journal_is_refused_naming_init() {
    let tj = TempJournal::new();
    let out =
        Command::new(env!("CARGO_BIN_EXE_abcd")).args(["replay"]).current_dir(tj.dir.path()).env("ABCD_HOME", &tj.home).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("is not inside a git repository; run this inside one, or name a journal file with --journal PATH"),
        "{}",
        text(&out)
    );
    std::fs::create_dir(tj.dir.path().join(".git")).unwrap();
    let out =
        Command::new(env!("CARGO_BIN_EXE_abcd")).args(["replay"]).current_dir(tj.dir.path()).env("ABCD_HOME", &tj.home).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("abcd init"), "{}", text(&out));
}
