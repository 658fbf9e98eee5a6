//! `abcd journal repair`: the one operation that removes bytes from a journal, and only
//! after copying them to quarantine. Corruption: everything from the first bad line is
//! moved aside and the chain continues with `journal.repaired`. A journal that disagrees
//! with its head anchor is accepted as it is, with a `journal.repaired` saying so.

use std::path::PathBuf;

use super::append::{Appended, Journal, JournalError, quarantine_range, read_genesis, truncate_durably};
use super::format::{Actor, NewEvent};
use super::genesis::{self, JournalRepaired, RepairCause};
use super::scan::{self, StartPoint, Verdict};
use super::verify::{self, AnchorCheck};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepairOutcome {
    NothingToRepair,
    /// An unacknowledged torn tail was moved to quarantine and cut.
    TornTailCut {
        quarantine: PathBuf,
        bytes: u64,
    },
    /// Damaged lines were moved to quarantine and the chain continued.
    CorruptionQuarantined {
        quarantine: PathBuf,
        bytes: u64,
        lines: u64,
        repaired: Appended,
    },
    /// The journal disagreed with its anchor (or the path's record) and was accepted.
    AnchorAccepted {
        detail: String,
        repaired: Appended,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("cannot repair {}: not even its first line verifies, so there is no chain to continue; move the file aside (abcd deletes nothing) and abcd starts a new journal", path.display())]
    NoGenesis { path: PathBuf },
}

pub fn repair(journal: &Journal, session: Option<String>) -> Result<RepairOutcome, RepairError> {
    let lock = journal.lock()?;
    let storage = journal.storage().clone();
    let paths = journal.paths().clone();
    let path = &paths.journal;
    let report =
        verify::verify(&*storage, path, journal.anchors(), |_, _| Ok::<(), std::convert::Infallible>(())).map_err(|e| match e {
            verify::VerifyError::Journal(j) => j,
            verify::VerifyError::Visitor(never) => match never {},
        })?;
    let file = storage.open_rw(path).map_err(|source| JournalError::Io { what: "opening", path: path.clone(), source })?;
    let Some(head) = report.head else {
        if let Verdict::TornTail(t) = report.verdict {
            // Only a genesis cut short: keep a copy, empty the file, and let the next
            // append create the journal anew.
            let q = quarantine_range(&*storage, file.as_ref(), &paths, "torn", 0, t.offset, t.len)?;
            truncate_durably(file.as_ref(), path, 0)?;
            return Ok(RepairOutcome::TornTailCut { quarantine: q.path, bytes: t.len });
        }
        return Err(RepairError::NoGenesis { path: path.clone() });
    };
    let genesis = read_genesis(file.as_ref(), path).map_err(|_| RepairError::NoGenesis { path: path.clone() })?;
    let repaired_event = |data: JournalRepaired| NewEvent {
        kind: genesis::JOURNAL_REPAIRED.into(),
        actor: Actor::this_process(session.clone()),
        data: serde_json::to_value(data).expect("plain data serializes"),
    };
    match report.verdict {
        Verdict::Corrupt(c) => {
            let len = report.file_len - c.offset;
            let q = quarantine_range(&*storage, file.as_ref(), &paths, "corrupt", c.seq, c.offset, len)?;
            truncate_durably(file.as_ref(), path, c.offset)?;
            // Sanity: after the cut the journal must end exactly at the last good line.
            let after = scan::scan(file.as_ref(), StartPoint::GENESIS, |_, _| Ok::<(), std::convert::Infallible>(()));
            assert!(matches!(after, Ok(ref r) if r.verdict == Verdict::Clean && r.head == Some(head)), "repair cut at the first bad line");
            let data = JournalRepaired {
                cause: RepairCause::Corruption,
                from_offset: c.offset,
                to_offset: report.file_len,
                lines: q.lines,
                quarantine_file: q.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                quarantine_blake3: Some(q.blake3.clone()),
                anchor_seq: None,
                anchor_hash: None,
                problem: format!("seq {} at byte {}: {}", c.seq, c.offset, c.problem),
            };
            let repaired = lock.append(file.as_ref(), head, &genesis.journal_id, &[repaired_event(data)])?[0];
            Ok(RepairOutcome::CorruptionQuarantined { quarantine: q.path, bytes: len, lines: q.lines, repaired })
        }
        Verdict::TornTail(t) => {
            let q = quarantine_range(&*storage, file.as_ref(), &paths, "torn", head.seq + 1, t.offset, t.len)?;
            truncate_durably(file.as_ref(), path, t.offset)?;
            Ok(RepairOutcome::TornTailCut { quarantine: q.path, bytes: t.len })
        }
        Verdict::Clean => {
            let detail = match (&report.anchor, &report.replaced) {
                (AnchorCheck::Disagrees(d), _) => d.clone(),
                (_, Some(r)) => r.clone(),
                _ => return Ok(RepairOutcome::NothingToRepair),
            };
            let anchor = journal.anchors().and_then(|a| a.load(&*storage, &genesis.journal_id).ok().flatten());
            let data = JournalRepaired {
                cause: RepairCause::AnchorMismatch,
                from_offset: report.file_len,
                to_offset: report.file_len,
                lines: 0,
                quarantine_file: None,
                quarantine_blake3: None,
                anchor_seq: anchor.map(|a| a.seq),
                anchor_hash: anchor.map(|a| a.hash.to_hex()),
                problem: detail.clone(),
            };
            let repaired = lock.append(file.as_ref(), head, &genesis.journal_id, &[repaired_event(data)])?[0];
            if let Some(anchors) = journal.anchors() {
                let _ = anchors.set_id_at_path(&*storage, path, &genesis.journal_id);
            }
            Ok(RepairOutcome::AnchorAccepted { detail, repaired })
        }
    }
}
