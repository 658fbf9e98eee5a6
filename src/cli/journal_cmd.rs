//! `abcd journal verify|repair|checkpoint`: parses, calls `journal::verify` and
//! `command::journal`, prints (and owns the verify report's text and JSON).

use serde_json::json;

use super::{EXIT_FAILURE, EXIT_OK, JournalChoice};
use crate::command::journal::{self as journal_cmd, Checkpointed};
use crate::journal::repair::{RepairOutcome, Salvage};
use crate::journal::scan::Verdict;
use crate::journal::scope::ScopeFinding;
use crate::journal::storage::RealDisk;
use crate::journal::verify::{self, AnchorCheck, VerifyReport};
use crate::places;

pub fn verify(choice: &JournalChoice, json_out: bool) -> anyhow::Result<i32> {
    let (paths, scope) = choice.resolve()?;
    let anchors = places::anchors()?;
    let report = verify::verify_chain(&RealDisk, &paths.journal, Some(&anchors))?;
    mark_damage(&paths, &anchors, &report);
    // Whose journal it is, where the place says whose it must be (format §11).
    let finding = match scope {
        Some(scope) => {
            let journal = crate::journal::Journal::new(RealDisk::shared(), paths.clone(), Some(anchors.clone())).expecting(scope);
            crate::store::Store::new(journal).scope_finding()?
        }
        None => ScopeFinding::Same,
    };
    let ok = report.is_ok() && !matches!(finding, ScopeFinding::Foreign(_));
    if json_out {
        let mut value = verify_json(&report);
        value["ok"] = json!(ok);
        value["scope_finding"] = match &finding {
            ScopeFinding::Same => json!({"state": "same"}),
            ScopeFinding::Moved(m) => json!({"state": "moved", "from": m.from, "to": m.to}),
            ScopeFinding::Foreign(f) => json!({"state": "foreign", "detail": f.to_string()}),
        };
        outln!("{value}");
    } else {
        let mut text = verify_details(&report);
        match &finding {
            ScopeFinding::Same => {}
            ScopeFinding::Moved(m) => {
                text += &format!(
                    "  scope:   the working copy moved from {} to {}: the journal is kept; the next write records the move\n",
                    m.from, m.to
                )
            }
            ScopeFinding::Foreign(f) => text += &format!("  scope:   FOREIGN: {f}\n           {}\n", f.remedy()),
        }
        text += if ok { "verdict: ok\n" } else { "verdict: FAILED\n" };
        out!("{text}");
    }
    Ok(if ok { EXIT_OK } else { EXIT_FAILURE })
}

/// Damage a full read found is recorded where the appender sees it (best effort: the
/// report is what this command owes, and the next full read marks it again).
pub fn mark_damage(paths: &crate::journal::JournalPaths, anchors: &crate::journal::anchor::AnchorStore, report: &VerifyReport) {
    if let (Verdict::Corrupt(_), Some(id), Some(head)) = (&report.verdict, &report.journal_id, report.head) {
        let journal = crate::journal::Journal::new(RealDisk::shared(), paths.clone(), Some(anchors.clone()));
        let _ = journal.record_damage_found(id, head);
    }
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
        "replaced": r.replaced.as_ref().map(|f| f.to_string()),
    })
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
        // Only a first line cut short where the home store knows a journal lived: the next
        // append refuses it, and repair moves it aside.
        Verdict::TornTail(t) if r.head.is_none() && r.replaced.is_some() => {
            out += &format!(
                "  chain:   only a first line cut short, {} bytes ({}); `abcd journal repair` moves it to quarantine/\n",
                t.len, t.fault
            )
        }
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
        AnchorCheck::Absent if r.journal_id.is_none() => out += "  anchor:  none looked up (no journal id to look one up by)\n",
        AnchorCheck::Absent => out += "  anchor:  none in the home store for this journal id\n",
        AnchorCheck::Agrees { seq } => out += &format!("  anchor:  agrees (seq {seq})\n"),
        AnchorCheck::PastCorruption { seq } => out += &format!("  anchor:  seq {seq} was acknowledged; it lies past the corruption\n"),
        AnchorCheck::Disagrees(d) => {
            out += &format!("  anchor:  DISAGREES: {d}\n           run `abcd journal repair` to accept the journal as it is\n")
        }
    }
    if let Some(f) = &r.replaced {
        out += &format!("  path:    {f}\n           appends are refused: {}\n", f.remedy());
    }
    out
}

pub fn repair(choice: &JournalChoice, json_out: bool) -> anyhow::Result<i32> {
    let here = places::Place::here()?;
    let (paths, scope) = choice.resolve_at(&here)?;
    let journal = places::open_journal_for_verb(RealDisk::shared(), paths)?;
    let journal = match &scope {
        Some(scope) => journal.expecting(scope.clone()),
        None => journal,
    };
    let store = crate::store::Store::new(journal);
    let repaired = journal_cmd::repair(&store, scope.as_ref(), crate::host::session_from_env(), &here)?;
    if let Some(why) = &repaired.mirror_unread {
        errln!("abcd: repaired without this machine's mirror: {why}");
    }
    if repaired.temp_files_removed > 0 {
        errln!("abcd: removed {} temp file(s) left by killed writers", repaired.temp_files_removed);
    }
    // What the repair did is said first: it is done and durable whatever the caches do.
    let (mut text, mut value) = describe_repair(&repaired.outcome);
    if let Some(set) = &repaired.set_aside {
        // Said first: it is why the rest happened.
        let then = match repaired.outcome {
            RepairOutcome::NothingToRepair => "nothing else to repair: the next write here starts this path's journal".to_string(),
            _ => text.clone(),
        };
        text = format!(
            "set aside {}: {}; it is in {}, whole, with nothing deleted; {}\n{then}",
            store.journal().paths().journal.display(),
            set.finding,
            set.aside.display(),
            set.finding.way_back(&set.aside)
        );
        value["set_aside"] = json!({"finding": set.finding.to_string(), "journal_id": set.finding.journal_id,
            "quarantine": set.aside.display().to_string(), "belongs_at": set.finding.home.as_ref().map(|h| h.display().to_string())});
    }
    if let Some(m) = &repaired.moved {
        text.push_str(&format!(
            "\nthe working copy moved from {} to {}: its journal is kept here, the move recorded as journal.moved",
            m.from, m.to
        ));
        value["moved"] = json!({"from": m.from, "to": m.to});
    }
    if json_out {
        outln!("{value}");
    } else {
        outln!("{text}");
    }
    if let Err(e) = journal_cmd::rebuild_caches(&store, &repaired) {
        // Projections and last-good are caches the next read rebuilds; the repair stands.
        errln!("abcd: the repair is done, but its caches were not rebuilt ({e}); the next read rebuilds them");
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
        RepairOutcome::Salvaged(salvage) => describe_salvage(salvage),
        RepairOutcome::StartedAfresh { detail, journal_id, quarantine, repaired } => (
            format!("started a new journal here: {detail}; the loss is recorded as journal.repaired at seq {}", repaired.seq),
            json!({"type": "repair", "outcome": "started_afresh", "detail": detail, "journal_id": journal_id, "quarantine": quarantine.as_ref().map(|q| q.display().to_string()), "repaired_seq": repaired.seq}),
        ),
        RepairOutcome::RepairedAndAccepted { salvage, torn, detail, repaired } => {
            let (mut text, mut value) = match (salvage, torn) {
                (Some(s), _) => describe_salvage(s),
                (None, Some((quarantine, bytes))) => {
                    describe_repair(&RepairOutcome::TornTailCut { quarantine: quarantine.clone(), bytes: *bytes })
                }
                (None, None) => (String::new(), json!({"type": "repair"})),
            };
            text.push_str(&format!(
                "\nand accepted the journal as this path's own ({detail}); recorded as journal.repaired at seq {}",
                repaired.seq
            ));
            value["accepted"] = json!({"detail": detail, "repaired_seq": repaired.seq});
            (text, value)
        }
        RepairOutcome::AnchorAccepted { detail, repaired } => (
            format!("accepted the journal as it is ({detail}); recorded as journal.repaired at seq {}", repaired.seq),
            json!({"type": "repair", "outcome": "anchor_accepted", "detail": detail, "repaired_seq": repaired.seq}),
        ),
    }
}

fn describe_salvage(salvage: &Salvage) -> (String, serde_json::Value) {
    let bytes: u64 = salvage.regions.iter().map(|r| r.len).sum();
    let lost = salvage.lost();
    let mut text = format!(
        "salvaged: moved {bytes} damaged bytes in {} region(s) to quarantine and kept all {} provable lines",
        salvage.regions.iter().filter(|r| r.len > 0).count(),
        salvage.kept_lines
    );
    if salvage.restored_lines > 0 {
        text.push_str(&format!(" ({} of them restored from this machine's mirror)", salvage.restored_lines));
    }
    if let (Some(first), Some(last)) = (salvage.moved.first(), salvage.moved.last()) {
        text.push_str(&format!(
            "\n  {} line(s) (seqs {first} to {last}) were out of chain order in the file and are written back in chain order",
            salvage.moved.len()
        ));
    }
    if let Some(seq) = salvage.rewritten {
        text.push_str(&format!(
            "\n  the head anchor vouched for a line the file no longer holds in its place: the journal was rewritten or replaced there; recorded as journal.repaired (anchor mismatch) at seq {seq}"
        ));
    }
    for r in &salvage.regions {
        let at = match r.lost {
            Some((from, to)) if from == to => format!("seq {from} lost"),
            Some((from, to)) => format!("seqs {} lost", seq_range(from, to)),
            None => "no seq lost".into(),
        };
        let copy = r.quarantine.as_ref().map_or("no bytes".into(), |q| format!("copy in {}", q.display()));
        text.push_str(&format!(
            "\n  byte {} ({} bytes): {at}; {copy}; recorded by journal.repaired at seq {}",
            r.offset, r.len, r.record_seq
        ));
    }
    if let Some((q, len)) = &salvage.torn {
        text.push_str(&format!("\n  a torn tail of {len} bytes (never acknowledged) after the last intact line; copy in {}", q.display()));
    }
    if lost.is_empty() {
        text.push_str("\nno acknowledged event was lost");
    } else {
        let named: Vec<String> = lost.iter().map(|&(a, b)| seq_range(a, b)).collect();
        text.push_str(&format!("\nlost seqs: {} (their bytes are in quarantine; `abcd replay` lists them)", named.join(", ")));
    }
    let regions: Vec<serde_json::Value> = salvage
        .regions
        .iter()
        .map(|r| {
            json!({"offset": r.offset, "bytes": r.len, "quarantine": r.quarantine.as_ref().map(|q| q.display().to_string()),
                "lost": r.lost.map(|(a, b)| json!([a, b])), "repaired_seq": r.record_seq})
        })
        .collect();
    let value = json!({"type": "repair", "outcome": "salvaged", "bytes": bytes, "kept_lines": salvage.kept_lines,
        "restored_lines": salvage.restored_lines, "moved": salvage.moved, "rewritten_seq": salvage.rewritten, "regions": regions,
        "lost": lost.iter().map(|&(a, b)| json!([a, b])).collect::<Vec<_>>(),
        "torn": salvage.torn.as_ref().map(|(q, len)| json!({"bytes": len, "quarantine": q.display().to_string()}))});
    (text, value)
}

fn seq_range(from: u64, to: u64) -> String {
    if from == to { from.to_string() } else { format!("{from}-{to}") }
}

pub fn checkpoint(choice: &JournalChoice, json_out: bool) -> anyhow::Result<i32> {
    let Checkpointed { path, seq } = journal_cmd::checkpoint(choice.open()?)?;
    if json_out {
        outln!("{}", json!({"type": "checkpoint", "seq": seq, "path": path.display().to_string()}));
    } else {
        outln!("wrote checkpoint {} (state after seq {seq})", path.display());
    }
    Ok(EXIT_OK)
}

pub fn restore(choice: &JournalChoice, id: Option<&str>, json_out: bool) -> anyhow::Result<i32> {
    // The mirror refs are the repository's: outside a managed checkout there is nothing to
    // restore from, whatever journal is named.
    let here = super::place_here()?;
    let place = crate::command::mirror::MirrorPlace::of(&here)?;
    let (paths, scope) = choice.resolve_at(&here)?;
    let journal = places::open_journal_for_verb(RealDisk::shared(), paths)?;
    let restored = journal_cmd::restore(&journal, scope.as_ref(), &place.repo, id, crate::host::session_from_env())?;
    journal_cmd::rebuild_projections(journal)?;
    let (text, value) = describe_restore(&restored);
    if json_out {
        outln!("{value}");
    } else {
        outln!("{text}");
    }
    Ok(EXIT_OK)
}

pub fn describe_restore(r: &journal_cmd::Restored) -> (String, serde_json::Value) {
    use super::terminal::{Lines, terminal_safe};
    let short = &r.commit[..r.commit.len().min(12)];
    let mut text = format!(
        "restored journal {} at {} ({}) from this machine's mirror {short}: {} lines through seq {}, byte for byte",
        r.journal_id,
        r.path.display(),
        r.found.word(),
        r.lines,
        r.head_seq
    );
    if let Some(q) = &r.quarantine {
        text.push_str(&format!("\n  what the path held is in {}", q.display()));
    }
    if let Some(why) = &r.mirror_stopped {
        text.push_str(&format!("\n  the mirror's lines stop early: {}", terminal_safe(why, Lines::One)));
    }
    if let (Some((from, to)), Some(seq)) = (r.lost, r.record_seq) {
        text.push_str(&format!(
            "\n  seqs {} were acknowledged but neither the file nor the mirror holds them: recorded by journal.repaired at seq {seq}",
            seq_range(from, to)
        ));
    } else {
        text.push_str("\nno acknowledged event was lost");
    }
    let value = json!({
        "type": "restore",
        "journal_id": r.journal_id,
        "path": r.path.display().to_string(),
        "found": r.found,
        "commit": r.commit,
        "lines": r.lines,
        "head_seq": r.head_seq,
        "quarantine": r.quarantine.as_ref().map(|q| q.display().to_string()),
        "mirror_stopped": r.mirror_stopped,
        "lost": r.lost.map(|(a, b)| json!([a, b])),
        "repaired_seq": r.record_seq,
    });
    (text, value)
}
