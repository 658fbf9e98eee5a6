//! `abcd demo`: the journal at work in a temporary folder, narrated. It never touches
//! the real home store: the demo's anchors live in its own temporary folder.

use std::io::Write;

use serde_json::json;

use super::journal_cmd::{describe_repair, verify_text};
use crate::event::Scope;
use crate::fold::audit;
use crate::journal::anchor::AnchorStore;
use crate::journal::repair;
use crate::journal::storage::RealDisk;
use crate::journal::verify;
use crate::journal::{Actor, Journal, JournalPaths, NewEvent};
use crate::places::{JOURNAL_FILE, LOCAL_TIER};
use crate::store::Store;

pub fn run() -> anyhow::Result<i32> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().join("working-copy");
    let home = tmp.path().join("home");
    let paths = JournalPaths::beside(&root.join(LOCAL_TIER).join(JOURNAL_FILE));
    let anchors = AnchorStore::new(&home);
    // Each step opens the journal afresh, as each `abcd` command is a new process.
    let store = || Store::new(Journal::new(RealDisk::shared(), paths.clone(), Some(anchors.clone())));
    let scope = Scope::WorkingCopy { root: root.display().to_string() };
    let session = Some("demo-session".to_string());
    let event = |kind: &str, data: serde_json::Value| NewEvent { kind: kind.into(), actor: Actor::this_process(session.clone()), data };
    let verify_now = || -> anyhow::Result<verify::VerifyReport> {
        verify::verify(&RealDisk, &paths.journal, Some(&anchors), |_, _| Ok::<(), std::convert::Infallible>(())).map_err(|e| match e {
            verify::VerifyError::Journal(j) => anyhow::Error::new(j),
            verify::VerifyError::Visitor(never) => match never {},
        })
    };

    step("1. Durable appends: each one is fsynced before it is acknowledged");
    let batch = [
        event("session.started", json!({"session": "demo-session", "source": "startup", "working_copy": root.display().to_string()})),
        event("compaction.recorded", json!({"session": "demo-session", "trigger": "auto"})),
        event("session.started", json!({"session": "demo-session", "source": "compact", "working_copy": root.display().to_string()})),
    ];
    for e in batch {
        let (appended, notes, _) = store().append(std::slice::from_ref(&e), Some(&scope))?;
        if notes.created {
            println!("   created {} with its genesis event (seq 0)", paths.journal.display());
        }
        println!("   appended seq {} {:<22} hash {}…", appended[0].seq, e.kind, &appended[0].hash.to_hex()[..16]);
    }

    step("2. A crash mid-write leaves half a line: a torn tail, never acknowledged");
    let torn = br#"{"v":1,"seq":4,"time":"2026-11-30T06:00:00.000Z","kind":"compaction.rec"#;
    std::fs::OpenOptions::new().append(true).open(&paths.journal)?.write_all(torn)?;
    print!("{}", indent(&verify_text(&verify_now()?)));
    let (appended, notes, _) =
        store().append(&[event("compaction.recorded", json!({"session": "demo-session", "trigger": "manual"}))], None)?;
    if let Some((t, q)) = notes.torn_quarantined {
        println!("   the next append copied the {} torn bytes to {} and cut them,", t.len, q.display());
        println!("   then appended seq {}", appended[0].seq);
    }

    step("3. A flipped bit in the middle of the file is corruption, not a crash");
    let mut bytes = std::fs::read(&paths.journal)?;
    let line_starts: Vec<usize> =
        std::iter::once(0).chain(bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1)).collect();
    let flip_at = line_starts[3] + 30;
    bytes[flip_at] ^= 0x01;
    std::fs::write(&paths.journal, &bytes)?;
    print!("{}", indent(&verify_text(&verify_now()?)));
    match store().append(&[event("compaction.recorded", json!({"session": "demo-session", "trigger": "auto"}))], None) {
        Err(e) => println!("   an append is refused: {e}"),
        Ok(_) => anyhow::bail!("an append to a corrupt journal was accepted"),
    }

    step("4. `abcd journal repair` moves the damage to quarantine and continues the chain");
    let outcome = repair::repair(store().journal(), session.clone())?;
    println!("   {}", describe_repair(&outcome).0);
    print!("{}", indent(&verify_text(&verify_now()?)));

    step("5. Checkpoints and projections are caches folded from the journal");
    let current = store().current_state()?;
    let cp = store().write_checkpoint(&current)?;
    println!("   checkpoint {} holds the state after seq {}", cp.display(), current.head.seq);
    std::fs::remove_file(paths.dir().join(crate::store::projection::STATE_FILE))?;
    let again = store().current_state()?;
    println!(
        "   with the projection deleted, a reader folds from {:?} and gets the same state: {}",
        again.base,
        again.state == current.state
    );

    step("6. A journal rolled back to an older copy of itself is named through the head anchor");
    let before = std::fs::read(&paths.journal)?;
    store().append(&[event("compaction.recorded", json!({"session": "demo-session", "trigger": "auto"}))], None)?;
    std::fs::write(&paths.journal, &before)?;
    print!("{}", indent(&verify_text(&verify_now()?)));

    step("7. The audit: `abcd replay` prints one line per event");
    verify::verify(&RealDisk, &paths.journal, Some(&anchors), |e, _| {
        println!("   {}", audit::audit_line(e));
        Ok::<(), std::convert::Infallible>(())
    })
    .map_err(|e| match e {
        verify::VerifyError::Journal(j) => anyhow::Error::new(j),
        verify::VerifyError::Visitor(never) => match never {},
    })?;
    println!("\ndemo done; the temporary folder {} is removed now.", tmp.path().display());
    Ok(super::EXIT_OK)
}

fn step(title: &str) {
    println!("\n{title}");
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("   {l}\n")).collect()
}
