//! The audit's work (`abcd replay`): verifies from genesis without trusting checkpoints,
//! hands one audit line per event to the caller as it streams, then compares every
//! checkpoint and projection on disk with the fold at the seq each names. With `at`, it
//! renders the projections as they were right after that event instead.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::CommandError;
use crate::fold::audit::{self, AuditLine};
use crate::fold::{self, FoldNote, FoldedState};
use crate::journal::JournalPaths;
use crate::journal::scan::{Head, Verdict};
use crate::journal::storage::{RealDisk, Storage};
use crate::journal::verify::{self, VerifyReport};
use crate::places;
use crate::refusal::{Refusal, RefusalKind as K};
use crate::store::checkpoint::{self, Checkpoint, CheckpointRejected};
use crate::store::projection::{self, ChecklistFile};

/// Projections `--projection` can name: (name, file).
pub const PROJECTIONS: &[(&str, &str)] =
    &[("state", projection::STATE_FILE), ("checklist", projection::CHECKLIST_FILE), ("checklist-last-good", projection::LAST_GOOD_FILE)];

/// One comparison of a cache on disk with the fold.
pub struct Check {
    pub what: String,
    pub agrees: bool,
    pub detail: String,
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

fn render_projection(name: &str, state: &FoldedState, head: Head) -> Result<serde_json::Value, serde_json::Error> {
    Ok(match name {
        "state" => serde_json::from_slice(&projection::render_state(state, head))?,
        _ => serde_json::to_value(ChecklistFile::from_state(state, head))?,
    })
}

/// What the audit hands its caller while it streams.
pub enum Streamed {
    /// One event's audit line.
    Event(AuditLine),
    /// A note on the event just handed over.
    Warning { seq: u64, message: String },
}

/// What the replay found: the verifier's report, and either the checks of every cache on
/// disk (the audit) or the projections at the asked seq.
pub struct Replayed {
    pub report: VerifyReport,
    pub checks: Vec<Check>,
    /// `(name, content)` of each selected projection, for `at`.
    pub projections_at: Vec<(String, serde_json::Value)>,
}

impl Replayed {
    pub fn all_agree(&self) -> bool {
        self.checks.iter().all(|c| c.agrees)
    }
}

/// The selected projections: the one named, or all of them; a name not known is refused.
pub fn select_projections(name: Option<&str>) -> Result<Vec<(&'static str, &'static str)>, CommandError> {
    if let Some(name) = name
        && !PROJECTIONS.iter().any(|(n, _)| *n == name)
    {
        let known: Vec<&str> = PROJECTIONS.iter().map(|(n, _)| *n).collect();
        // The argument is echoed only when it is no secret (a person may paste anything).
        return Err(Refusal::new(K::NotFound, "replay", format!("no derived file named {}", crate::secrets::shown_name(name)))
            .instead(format!("the known ones: {}", known.join(", ")))
            .into());
    }
    Ok(PROJECTIONS.iter().copied().filter(|(n, _)| name.is_none_or(|p| p == *n)).collect())
}

/// Replays the journal at `paths`; `on_line` receives the audit as it streams (nothing when
/// `at` is given), and an error from it stops the replay.
pub fn replay(
    paths: &JournalPaths,
    selected: &[(&str, &str)],
    at: Option<u64>,
    mut on_line: impl FnMut(Streamed) -> std::io::Result<()>,
) -> Result<Replayed, CommandError> {
    let failed = |e: std::io::Error| CommandError::Failed(e.to_string());
    let storage = RealDisk;
    let anchors = places::anchors()?;

    let checkpoints: Vec<(PathBuf, Result<Checkpoint, CheckpointRejected>)> = checkpoint::list(&storage, &paths.checkpoints)
        .map_err(failed)?
        .into_iter()
        .map(|(_, p)| {
            let loaded = checkpoint::load(&storage, &p).unwrap_or_else(|e| Err(CheckpointRejected::Unreadable(e.to_string())));
            (p, loaded)
        })
        .collect();
    let mut on_disk: Vec<(&str, PathBuf, OnDisk)> = Vec::new();
    for (name, file) in selected {
        let path = paths.dir().join(file);
        if storage.facts(&path).map_err(failed)?.is_none() {
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
    wanted.extend(at);

    let mut state = FoldedState::default();
    let mut snapshots: BTreeMap<u64, (Head, FoldedState)> = BTreeMap::new();
    let print_audit = at.is_none();
    let report = verify::verify(&storage, &paths.journal, Some(&anchors), |event, pos| {
        let note = fold::fold_event(&mut state, event);
        // A gap record's place in the chain is the last seq it stands in for.
        let (seq, hash) = event.chain_position();
        if wanted.contains(&seq) {
            let head = Head { seq, hash, offset: pos.offset, end: pos.offset + pos.len };
            snapshots.insert(seq, (head, state.clone()));
        }
        if print_audit {
            let mut line = audit::audit_line(event);
            // The audit line speaks of the event as written; when the fold skipped it, say
            // that instead, so a refused change never reads as done.
            if let FoldNote::Skipped(s) = &note {
                line.what =
                    format!("{} skipped by the fold: {} {}", event.kind, s.field.clone().unwrap_or_default(), s.reason).replace("  ", " ");
            }
            on_line(Streamed::Event(line))?;
            let warning = match note {
                FoldNote::UnknownKind(kind) => {
                    Some(format!("kind `{kind}` is unknown to this abcd (written by a newer one?); kept and skipped by folds"))
                }
                FoldNote::Skipped(_) => None,
                FoldNote::Folded => None,
            };
            if let Some(message) = warning {
                on_line(Streamed::Warning { seq: event.seq, message })?;
            }
        }
        Ok::<(), std::io::Error>(())
    })
    .map_err(|e| match e {
        verify::VerifyError::Journal(j) => CommandError::Journal(j),
        verify::VerifyError::Visitor(io) => CommandError::Output(io),
    })?;

    if let (Verdict::Corrupt(_), Some(id), Some(head)) = (&report.verdict, &report.journal_id, report.head) {
        // Damage this full read found is recorded where the appender sees it (best effort).
        let journal = crate::journal::Journal::new(RealDisk::shared(), paths.clone(), Some(anchors.clone()));
        let _ = journal.record_damage_found(id, head);
    }

    if let Some(at) = at {
        let Some((head, st)) = snapshots.get(&at) else {
            return Err(Refusal::new(
                K::NotFound,
                "replay --at",
                format!(
                    "the journal has no verified event {at} (it holds seq 0..{}{})",
                    report.head.map_or(0, |h| h.seq),
                    if state.journal.lost.is_empty() { "" } else { ", less the seqs a repair lost" }
                ),
            )
            .into());
        };
        let mut projections_at = vec![];
        for (name, _) in selected {
            let content = render_projection(name, st, *head).map_err(|e| CommandError::Failed(e.to_string()))?;
            projections_at.push((name.to_string(), content));
        }
        return Ok(Replayed { report, checks: vec![], projections_at });
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

    Ok(Replayed { report, checks, projections_at: vec![] })
}
