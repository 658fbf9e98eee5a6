//! `abcd replay`: the audit. Verifies from genesis without trusting checkpoints, prints
//! one line per event as it streams, then compares every checkpoint and projection on
//! disk with the fold at the seq each names.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::{EXIT_FAILURE, EXIT_OK, EXIT_REFUSED, JournalChoice};
use crate::fold::{self, FoldNote, FoldedState, audit};
use crate::journal::scan::Head;
use crate::journal::storage::{RealDisk, Storage};
use crate::journal::verify;
use crate::places;
use crate::store::checkpoint::{self, Checkpoint, CheckpointRejected};
use crate::store::projection::{self, ChecklistFile};

/// Projections `--projection` can name: (name, file).
const PROJECTIONS: &[(&str, &str)] =
    &[("state", projection::STATE_FILE), ("checklist", projection::CHECKLIST_FILE), ("checklist-last-good", projection::LAST_GOOD_FILE)];

#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    choice: JournalChoice,
    /// Print the projections as they were right after event SEQ (time travel), instead
    /// of the audit
    #[arg(long, value_name = "SEQ")]
    at: Option<u64>,
    /// Print newline-delimited JSON for scripts
    #[arg(long)]
    json: bool,
    /// Only this projection: state, checklist or checklist-last-good
    #[arg(long, value_name = "NAME")]
    projection: Option<String>,
}

/// One comparison of a cache on disk with the fold.
struct Check {
    what: String,
    agrees: bool,
    detail: String,
}

/// A projection file as found on disk: the line it names and what it holds.
enum OnDisk {
    State(Box<FoldedState>, Head),
    Checklist(ChecklistFile),
    Unusable(String),
}

impl OnDisk {
    fn seq(&self) -> Option<u64> {
        match self {
            OnDisk::State(_, h) => Some(h.seq),
            OnDisk::Checklist(f) => Some(f.journal.seq),
            OnDisk::Unusable(_) => None,
        }
    }
}

fn render_projection(name: &str, state: &FoldedState, head: Head) -> anyhow::Result<serde_json::Value> {
    Ok(match name {
        "state" => serde_json::from_slice(&projection::render_state(state, head))?,
        _ => serde_json::to_value(ChecklistFile::from_state(state, head))?,
    })
}

pub fn run(args: &ReplayArgs) -> anyhow::Result<i32> {
    if let Some(name) = &args.projection
        && !PROJECTIONS.iter().any(|(n, _)| n == name)
    {
        let known: Vec<&str> = PROJECTIONS.iter().map(|(n, _)| *n).collect();
        eprintln!("abcd: no projection named `{name}`; known projections: {}", known.join(", "));
        return Ok(EXIT_REFUSED);
    }
    let selected: Vec<(&str, &str)> =
        PROJECTIONS.iter().copied().filter(|(n, _)| args.projection.as_deref().is_none_or(|p| p == *n)).collect();
    let (paths, _) = args.choice.resolve()?;
    let storage = RealDisk;
    let anchors = places::anchors()?;

    let checkpoints: Vec<(PathBuf, Result<Checkpoint, CheckpointRejected>)> = checkpoint::list(&storage, &paths.checkpoints)?
        .into_iter()
        .map(|(_, p)| {
            let loaded = checkpoint::load(&storage, &p).unwrap_or_else(|e| Err(CheckpointRejected::Undecodable(e.to_string())));
            (p, loaded)
        })
        .collect();
    let mut on_disk: Vec<(&str, PathBuf, OnDisk)> = Vec::new();
    for (name, file) in &selected {
        let path = paths.dir().join(file);
        if storage.facts(&path)?.is_none() {
            continue;
        }
        let found = if *name == "state" {
            match projection::load_state_any(&storage, &path) {
                Some((s, h)) => OnDisk::State(Box::new(s), h),
                None => OnDisk::Unusable(
                    "unreadable, or its digest does not match its content (edited by hand, or written by an abcd older than 2026-11-30)"
                        .into(),
                ),
            }
        } else {
            match projection::load_checklist(&storage, &path) {
                Ok(f) => OnDisk::Checklist(f),
                Err(why) => OnDisk::Unusable(why.to_string()),
            }
        };
        on_disk.push((name, path, found));
    }

    let mut wanted: Vec<u64> = checkpoints.iter().filter_map(|(_, c)| c.as_ref().ok().map(|c| c.seq)).collect();
    wanted.extend(on_disk.iter().filter_map(|(_, _, d)| d.seq()));
    wanted.extend(args.at);

    let mut state = FoldedState::default();
    let mut snapshots: BTreeMap<u64, (Head, FoldedState)> = BTreeMap::new();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let print_audit = args.at.is_none();
    let report = verify::verify(&storage, &paths.journal, Some(&anchors), |event, pos| {
        let note = fold::fold_event(&mut state, event);
        if wanted.contains(&event.seq) {
            let head = Head { seq: event.seq, hash: event.hash, offset: pos.offset, end: pos.offset + pos.len };
            snapshots.insert(event.seq, (head, state.clone()));
        }
        if print_audit {
            let mut line = audit::audit_line(event);
            // The audit line speaks of the event as written; when the fold skipped it, say
            // that instead, so a refused change never reads as done.
            if let FoldNote::Skipped(s) = &note {
                line.what =
                    format!("{} skipped by the fold: {} {}", event.kind, s.field.clone().unwrap_or_default(), s.reason).replace("  ", " ");
            }
            if args.json {
                writeln!(out, "{}", json!({"type": "event", "audit": line}))?;
            } else {
                writeln!(out, "{line}")?;
            }
            let warning = match note {
                FoldNote::UnknownKind(kind) => {
                    Some(format!("kind `{kind}` is unknown to this abcd (written by a newer one?); kept and skipped by folds"))
                }
                FoldNote::Skipped(_) => None,
                FoldNote::Folded => None,
            };
            if let Some(w) = warning {
                if args.json {
                    writeln!(out, "{}", json!({"type": "warning", "seq": event.seq, "message": w}))?;
                } else {
                    writeln!(out, "        warning: {w}")?;
                }
            }
        }
        Ok::<(), std::io::Error>(())
    })
    .map_err(|e| match e {
        verify::VerifyError::Journal(j) => anyhow::Error::new(j),
        verify::VerifyError::Visitor(io) => anyhow::Error::new(io),
    })?;

    if let Some(at) = args.at {
        let Some((head, st)) = snapshots.get(&at) else {
            eprintln!("abcd: the journal has no verified event {at} (it holds seq 0..{})", report.events.saturating_sub(1));
            return Ok(EXIT_REFUSED);
        };
        for (name, _) in &selected {
            let value = json!({"type": "projection", "name": name, "at": at, "content": render_projection(name, st, *head)?});
            if args.json {
                writeln!(out, "{value}")?;
            } else {
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
            }
        }
        out.flush()?;
        return Ok(if report.is_ok() { EXIT_OK } else { EXIT_FAILURE });
    }

    let head_seq = report.head.map(|h| h.seq);
    let mut checks = Vec::new();
    for (path, loaded) in &checkpoints {
        let what = format!("checkpoint {}", path.display());
        let (agrees, detail) = match loaded {
            Err(why) => (false, format!("unusable: {why}")),
            Ok(cp) if Some(&cp.journal_id) != report.journal_id.as_ref() => (false, format!("belongs to journal {}", cp.journal_id)),
            Ok(cp) => match snapshots.get(&cp.seq) {
                None => (false, format!("names seq {}, which the journal does not hold verified", cp.seq)),
                Some((h, _)) if h.hash != cp.hash => {
                    (false, format!("names seq {} with hash {}, the journal has {}", cp.seq, cp.hash, h.hash))
                }
                Some((_, s)) if *s != cp.state => (false, format!("its state differs from the fold at seq {}", cp.seq)),
                Some(_) => (true, format!("agrees with the fold at seq {}", cp.seq)),
            },
        };
        checks.push(Check { what, agrees, detail });
    }
    for (name, path, found) in &on_disk {
        let what = format!("projection {}", path.display());
        let (agrees, detail) = match found {
            OnDisk::Unusable(why) => (false, format!("unusable: {why}")),
            found => {
                let seq = found.seq().expect("usable projections name a seq");
                match snapshots.get(&seq) {
                    None => (false, format!("names seq {seq}, which the journal does not hold verified")),
                    Some((head, st)) => {
                        let same = match found {
                            OnDisk::State(s, h) => h == head && **s == *st,
                            OnDisk::Checklist(f) => *f == ChecklistFile::from_state(st, *head),
                            OnDisk::Unusable(_) => unreachable!("handled above"),
                        };
                        if !same {
                            (false, format!("differs from the fold at seq {seq}"))
                        } else if Some(seq) == head_seq {
                            (true, format!("agrees with the fold at the head, seq {seq}"))
                        } else {
                            let behind = head_seq.unwrap_or(0) - seq;
                            let why = if *name == "checklist-last-good" {
                                "written after successful writes only"
                            } else {
                                "a reader folds what follows it"
                            };
                            (true, format!("agrees with the fold at seq {seq}, behind the head by {behind} ({why})"))
                        }
                    }
                }
            }
        };
        checks.push(Check { what, agrees, detail });
    }

    let all_agree = checks.iter().all(|c| c.agrees);
    if args.json {
        for c in &checks {
            writeln!(out, "{}", json!({"type": "check", "what": c.what, "agrees": c.agrees, "detail": c.detail}))?;
        }
        let mut v = super::journal_cmd::verify_json(&report);
        v["type"] = json!("verdict");
        v["ok"] = json!(report.is_ok() && all_agree);
        writeln!(out, "{v}")?;
    } else {
        writeln!(out)?;
        for c in &checks {
            writeln!(out, "{}: {}", c.what, if c.agrees { c.detail.clone() } else { format!("DISAGREES: {}", c.detail) })?;
        }
        write!(out, "{}", super::journal_cmd::verify_details(&report))?;
        match (report.is_ok(), all_agree) {
            (true, true) => writeln!(out, "verdict: ok")?,
            (true, false) => writeln!(out, "verdict: FAILED (a cache on disk disagrees with the journal; the journal is the truth)")?,
            (false, _) => writeln!(out, "verdict: FAILED")?,
        }
    }
    out.flush()?;
    Ok(if report.is_ok() && all_agree { EXIT_OK } else { EXIT_FAILURE })
}
