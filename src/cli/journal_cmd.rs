//! `abcd journal verify|repair|checkpoint`.

use serde_json::json;

use super::{EXIT_FAILURE, EXIT_OK, EXIT_REFUSED, JournalChoice};
use crate::journal::repair::{self, RepairOutcome};
use crate::journal::scan::Verdict;
use crate::journal::storage::RealDisk;
use crate::journal::verify::{self, AnchorCheck, VerifyReport};
use crate::places;
use crate::store::Store;

pub fn verify(choice: &JournalChoice, json_out: bool) -> anyhow::Result<i32> {
    let (paths, _) = choice.resolve()?;
    let anchors = places::anchors()?;
    let report = verify::verify_chain(&RealDisk, &paths.journal, Some(&anchors))?;
    if json_out {
        println!("{}", verify_json(&report));
    } else {
        print!("{}", verify_text(&report));
    }
    Ok(if report.is_ok() { EXIT_OK } else { EXIT_FAILURE })
}

pub fn verify_json(r: &VerifyReport) -> serde_json::Value {
    let verdict = match &r.verdict {
        Verdict::Clean => json!({"state": "clean"}),
        Verdict::TornTail(t) => json!({"state": "torn_tail", "offset": t.offset, "len": t.len, "fault": t.fault.to_string()}),
        Verdict::Corrupt(c) => json!({"state": "corrupt", "seq": c.seq, "offset": c.offset, "problem": c.problem.to_string()}),
    };
    let anchor = match &r.anchor {
        AnchorCheck::NotKept => json!({"state": "not_kept"}),
        AnchorCheck::Absent => json!({"state": "absent"}),
        AnchorCheck::Agrees { seq } => json!({"state": "agrees", "seq": seq}),
        AnchorCheck::PastCorruption { seq } => json!({"state": "past_corruption", "seq": seq}),
        AnchorCheck::Disagrees(d) => json!({"state": "disagrees", "detail": d}),
    };
    json!({
        "type": "verify",
        "path": r.path.display().to_string(),
        "ok": r.is_ok(),
        "journal_id": r.journal_id,
        "scope": r.scope,
        "events": r.events,
        "bytes": r.file_len,
        "head": r.head.map(|h| json!({"seq": h.seq, "hash": h.hash, "offset": h.offset})),
        "verdict": verdict,
        "anchor": anchor,
        "replaced": r.replaced,
    })
}

pub fn verify_text(r: &VerifyReport) -> String {
    let mut out = verify_details(r);
    out += if r.is_ok() { "verdict: ok\n" } else { "verdict: FAILED\n" };
    out
}

/// The report without its verdict line.
pub fn verify_details(r: &VerifyReport) -> String {
    let mut out = String::new();
    let id = r.journal_id.as_deref().unwrap_or("unknown");
    let scope = r.scope.as_ref().map_or("unknown scope".to_string(), |s| s.to_string());
    out += &format!("journal {} (id {id}, {scope})\n", r.path.display());
    out += &format!("  events:  {} verified, {} bytes\n", r.events, r.file_len);
    match &r.verdict {
        Verdict::Clean => out += "  chain:   every line verifies\n",
        Verdict::TornTail(t) => {
            out += &format!(
                "  chain:   verifies, then a torn tail of {} bytes at byte {} ({}): never acknowledged; the next append moves it to quarantine/\n",
                t.len, t.offset, t.fault
            )
        }
        Verdict::Corrupt(c) => {
            out += &format!("  chain:   CORRUPT at seq {}, byte offset {}: {}\n", c.seq, c.offset, c.problem);
            out += "           readers fold the valid prefix; appends are refused; run `abcd journal repair`\n";
        }
    }
    match &r.anchor {
        AnchorCheck::NotKept => {}
        AnchorCheck::Absent => out += "  anchor:  none in the home store for this journal id\n",
        AnchorCheck::Agrees { seq } => out += &format!("  anchor:  agrees (seq {seq})\n"),
        AnchorCheck::PastCorruption { seq } => out += &format!("  anchor:  seq {seq} was acknowledged; it lies past the corruption\n"),
        AnchorCheck::Disagrees(d) => {
            out += &format!("  anchor:  DISAGREES: {d}\n           run `abcd journal repair` to accept the journal as it is\n")
        }
    }
    if let Some(r) = &r.replaced {
        out += &format!("  path:    {r}\n");
    }
    out
}

pub fn repair(choice: &JournalChoice, json_out: bool) -> anyhow::Result<i32> {
    let journal = choice.open()?;
    let outcome = repair::repair(&journal, session_from_env())?;
    // Projections and last-good may name lines the repair moved aside: rebuild them from
    // the repaired journal so every cache agrees with it again.
    let swept = crate::journal::storage::remove_stale_temp_files(&RealDisk, journal.paths().dir()).unwrap_or(0);
    if swept > 0 {
        eprintln!("abcd: removed {swept} temp file(s) left by killed writers");
    }
    if outcome != RepairOutcome::NothingToRepair {
        let store = Store::new(journal);
        let current = store.current_state()?;
        store.write_projection(&current)?;
        store.write_last_good(&current)?;
    }
    let (text, value) = describe_repair(&outcome);
    if json_out {
        println!("{value}");
    } else {
        println!("{text}");
    }
    Ok(EXIT_OK)
}

pub fn describe_repair(outcome: &RepairOutcome) -> (String, serde_json::Value) {
    match outcome {
        RepairOutcome::NothingToRepair => {
            ("nothing to repair: the journal verifies and agrees with its anchor".into(), json!({"type": "repair", "outcome": "nothing"}))
        }
        RepairOutcome::TornTailCut { quarantine, bytes } => (
            format!("cut a torn tail of {bytes} bytes (never acknowledged); a copy is in {}", quarantine.display()),
            json!({"type": "repair", "outcome": "torn_tail_cut", "bytes": bytes, "quarantine": quarantine.display().to_string()}),
        ),
        RepairOutcome::CorruptionQuarantined { quarantine, bytes, lines, repaired } => (
            format!(
                "moved {bytes} bytes ({lines} lines) from the first bad line on to {}; the chain continues with journal.repaired at seq {}",
                quarantine.display(),
                repaired.seq
            ),
            json!({"type": "repair", "outcome": "corruption_quarantined", "bytes": bytes, "lines": lines, "quarantine": quarantine.display().to_string(), "repaired_seq": repaired.seq}),
        ),
        RepairOutcome::AnchorAccepted { detail, repaired } => (
            format!("accepted the journal as it is ({detail}); recorded as journal.repaired at seq {}", repaired.seq),
            json!({"type": "repair", "outcome": "anchor_accepted", "detail": detail, "repaired_seq": repaired.seq}),
        ),
    }
}

pub fn checkpoint(choice: &JournalChoice, json_out: bool) -> anyhow::Result<i32> {
    let store = Store::new(choice.open()?);
    let current = store.current_state()?;
    if let Some(c) = &current.degraded {
        eprintln!(
            "abcd: refusing to checkpoint: the journal is corrupt at seq {}, byte offset {} ({}); run `abcd journal repair` first",
            c.seq, c.offset, c.problem
        );
        return Ok(EXIT_REFUSED);
    }
    // A checkpoint names only durable lines (a killed writer may have left unsynced ones).
    crate::journal::storage::Storage::open_read(&RealDisk, &store.journal().paths().journal)?.sync_data()?;
    let path = store.write_checkpoint(&current)?;
    if json_out {
        println!("{}", json!({"type": "checkpoint", "seq": current.head.seq, "path": path.display().to_string()}));
    } else {
        println!("wrote checkpoint {} (state after seq {})", path.display(), current.head.seq);
    }
    Ok(EXIT_OK)
}

/// The host session id, when a hook or the host's shell tool passes one.
pub fn session_from_env() -> Option<String> {
    std::env::var("CLAUDE_SESSION_ID").ok().filter(|s| !s.is_empty() && s.len() <= 128)
}
