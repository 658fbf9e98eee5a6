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
use crate::journal::checkpoint::{self, Checkpoint, CheckpointRejected};
use crate::journal::format::Hash;
use crate::journal::storage::{RealDisk, Storage};
use crate::journal::verify;
use crate::places;
use crate::store::projection;

/// Projections `--projection` can name.
const PROJECTION_NAMES: &[&str] = &["state"];

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
    /// Only this projection (one of: state, checklist)
    #[arg(long, value_name = "NAME")]
    projection: Option<String>,
}

/// One comparison of a cache on disk with the fold.
struct Check {
    what: String,
    agrees: bool,
    detail: String,
}

pub fn run(args: &ReplayArgs) -> anyhow::Result<i32> {
    if let Some(name) = &args.projection
        && !PROJECTION_NAMES.contains(&name.as_str())
    {
        eprintln!("abcd: no projection named `{name}`; known projections: {}", PROJECTION_NAMES.join(", "));
        return Ok(EXIT_REFUSED);
    }
    let (paths, _) = args.choice.resolve()?;
    let storage = RealDisk;
    let anchors = places::anchors()?;
    let projection_path = paths.dir().join(projection::STATE_FILE);

    let checkpoints: Vec<(PathBuf, Result<Checkpoint, CheckpointRejected>)> = checkpoint::list(&storage, &paths.checkpoints)?
        .into_iter()
        .map(|(_, p)| {
            let loaded = checkpoint::load(&storage, &p).unwrap_or_else(|e| Err(CheckpointRejected::Undecodable(e.to_string())));
            (p, loaded)
        })
        .collect();
    let on_disk_projection = storage.facts(&projection_path)?.map(|_| projection::load_state_any(&storage, &projection_path));

    let mut wanted: Vec<u64> = checkpoints.iter().filter_map(|(_, c)| c.as_ref().ok().map(|c| c.seq)).collect();
    if let Some(Some((_, head))) = &on_disk_projection {
        wanted.push(head.seq);
    }
    wanted.extend(args.at);

    let mut state = FoldedState::default();
    let mut snapshots: BTreeMap<u64, (Hash, FoldedState)> = BTreeMap::new();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let print_audit = args.at.is_none();
    let report = verify::verify(&storage, &paths.journal, Some(&anchors), |event, _| {
        let note = fold::fold_event(&mut state, event);
        if wanted.contains(&event.seq) {
            snapshots.insert(event.seq, (event.hash, state.clone()));
        }
        if print_audit {
            let line = audit::audit_line(event);
            if args.json {
                writeln!(out, "{}", json!({"type": "event", "audit": line}))?;
            } else {
                writeln!(out, "{line}")?;
            }
            if let FoldNote::UnknownKind(kind) = note {
                let warning =
                    format!("warning: kind `{kind}` is unknown to this abcd (written by a newer one?); kept and skipped by folds");
                if args.json {
                    writeln!(out, "{}", json!({"type": "warning", "seq": event.seq, "message": warning}))?;
                } else {
                    writeln!(out, "        {warning}")?;
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
        let Some((hash, st)) = snapshots.get(&at) else {
            eprintln!("abcd: the journal has no verified event {at} (it holds seq 0..{})", report.events.saturating_sub(1));
            return Ok(EXIT_REFUSED);
        };
        let head = crate::journal::scan::Head { seq: at, hash: *hash, offset: 0, end: 0 };
        let rendered: serde_json::Value = serde_json::from_slice(&projection::render_state(st, head))?;
        let value = json!({"type": "projection", "name": "state", "at": at, "content": rendered});
        if args.json {
            writeln!(out, "{value}")?;
        } else {
            writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
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
                Some((h, _)) if *h != cp.hash => (false, format!("names seq {} with hash {}, the journal has {h}", cp.seq, cp.hash)),
                Some((_, s)) if *s != cp.state => (false, format!("its state differs from the fold at seq {}", cp.seq)),
                Some(_) => (true, format!("agrees with the fold at seq {}", cp.seq)),
            },
        };
        checks.push(Check { what, agrees, detail });
    }
    let what = format!("projection {}", projection_path.display());
    match &on_disk_projection {
        None => checks.push(Check { what, agrees: true, detail: "absent (rebuilt on the next read)".into() }),
        Some(None) => checks.push(Check {
            what,
            agrees: false,
            detail: "unreadable, or its digest does not match its content (edited by hand?)".into(),
        }),
        Some(Some((st, named))) => {
            let (agrees, detail) = match snapshots.get(&named.seq) {
                None => (false, format!("names seq {}, which the journal does not hold verified", named.seq)),
                Some((h, _)) if *h != named.hash => {
                    (false, format!("names seq {} with hash {}, the journal has {h}", named.seq, named.hash))
                }
                Some((_, s)) if s != st => (false, format!("its state differs from the fold at seq {}", named.seq)),
                Some(_) if Some(named.seq) == head_seq => (true, format!("agrees with the fold at the head, seq {}", named.seq)),
                Some(_) => (
                    true,
                    format!(
                        "agrees with the fold at seq {}, behind the head by {} (rebuilt on the next read)",
                        named.seq,
                        head_seq.unwrap_or(0) - named.seq
                    ),
                ),
            };
            checks.push(Check { what, agrees, detail });
        }
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
        write!(out, "{}", super::journal_cmd::verify_text(&report))?;
        if report.is_ok() && !all_agree {
            writeln!(out, "verdict: FAILED (a cache on disk disagrees with the journal; the journal is the truth)")?;
        }
    }
    out.flush()?;
    Ok(if report.is_ok() && all_agree { EXIT_OK } else { EXIT_FAILURE })
}
