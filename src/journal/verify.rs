//! Whole-journal verification: every line from genesis (checkpoints are never trusted
//! here), the genesis record, and the head anchor in the home store.

use std::io;
use std::path::{Path, PathBuf};

use super::anchor::{Anchor, AnchorStore, Holds, PathReplaced};
pub use super::append::open_trusted;
use super::append::{JournalError, anchor_disagreement, read_genesis};
use super::format::{Event, Hash};
use super::genesis::Scope;
use super::scan::{self, Head, LinePos, ScanError, StartPoint, Verdict};
use super::storage::Storage;

/// How the journal compares with what the home store remembers of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnchorCheck {
    /// No home store was given.
    NotKept,
    /// The home store has no anchor for this journal id.
    Absent,
    Agrees {
        seq: u64,
    },
    /// The anchor names a seq past the first corruption; the corruption is the finding.
    PastCorruption {
        seq: u64,
    },
    Disagrees(String),
}

#[derive(Clone, Debug)]
pub struct VerifyReport {
    pub path: PathBuf,
    pub file_len: u64,
    pub events: u64,
    pub head: Option<Head>,
    pub journal_id: Option<String>,
    pub scope: Option<Scope>,
    pub verdict: Verdict,
    pub anchor: AnchorCheck,
    /// Set when the path is recorded as holding another journal than what it holds now
    /// (another id, nothing, or only a first line cut short).
    pub replaced: Option<PathReplaced>,
}

impl VerifyReport {
    /// Nothing corrupt and nothing contradicting the anchor. A torn tail is allowed: it
    /// was never acknowledged.
    pub fn is_ok(&self) -> bool {
        !matches!(self.verdict, Verdict::Corrupt(_)) && !matches!(self.anchor, AnchorCheck::Disagrees(_)) && self.replaced.is_none()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError<E> {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Visitor(E),
}

/// Verifies the journal at `path`, handing every verified event to `visit` in order.
pub fn verify<E>(
    storage: &dyn Storage,
    path: &Path,
    anchors: Option<&AnchorStore>,
    mut visit: impl FnMut(&Event, LinePos) -> Result<(), E>,
) -> Result<VerifyReport, VerifyError<E>> {
    let io_err = |source: io::Error| JournalError::Io { what: "reading", path: path.to_owned(), source };
    let file = match open_trusted(storage, path) {
        Ok(file) => file,
        Err(JournalError::Missing { path: missing }) => {
            // No file where the home store knows a journal lived: the loss is the finding.
            let finding = match anchors {
                Some(a) => a.path_replaced(storage, path, Holds::Nothing).map_err(io_err)?,
                None => None,
            };
            let Some(finding) = finding else { return Err(JournalError::Missing { path: missing }.into()) };
            return Ok(VerifyReport {
                path: path.to_owned(),
                file_len: 0,
                events: 0,
                head: None,
                journal_id: None,
                scope: None,
                verdict: Verdict::Clean,
                anchor: AnchorCheck::Absent,
                replaced: Some(finding),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let genesis = read_genesis(file.as_ref(), path).ok();
    let anchor: Option<Anchor> = match (anchors, &genesis) {
        (Some(a), Some(g)) => a.load(storage, &g.journal_id).map_err(io_err)?,
        _ => None,
    };
    let mut hash_at_anchor: Option<Hash> = None;
    let report = scan::scan(file.as_ref(), StartPoint::GENESIS, |event, pos| {
        let (seq, hash) = event.chain_position();
        if anchor.is_some_and(|a| a.seq == seq) {
            hash_at_anchor = Some(hash);
        }
        visit(event, pos)
    })
    .map_err(|e| match e {
        ScanError::Io(source) => VerifyError::Journal(io_err(source)),
        ScanError::Visitor(v) => VerifyError::Visitor(v),
    })?;
    let anchor_check = match (anchors, anchor, report.head) {
        (None, _, _) => AnchorCheck::NotKept,
        (Some(_), None, _) => AnchorCheck::Absent,
        (Some(_), Some(a), None) => {
            AnchorCheck::Disagrees(format!("the home store's anchor says seq {} was acknowledged, and no event verifies", a.seq))
        }
        (Some(_), Some(a), Some(head)) if a.seq > head.seq && matches!(report.verdict, Verdict::Corrupt(_)) => {
            AnchorCheck::PastCorruption { seq: a.seq }
        }
        (Some(_), Some(a), Some(head)) => {
            // The scan already knows the hash at the anchor's seq; the line check in
            // `anchor_disagreement` is the appender's O(1) version of the same question.
            let detail = if a.seq <= head.seq && hash_at_anchor.is_some_and(|h| h != a.hash) {
                Some(format!(
                    "seq {} has hash {} but its head anchor says {}: the journal was replaced or rewritten",
                    a.seq,
                    hash_at_anchor.expect("checked"),
                    a.hash
                ))
            } else {
                anchor_disagreement(file.as_ref(), Some(a), head).map_err(io_err)?
            };
            match detail {
                Some(d) => AnchorCheck::Disagrees(d),
                None => AnchorCheck::Agrees { seq: a.seq },
            }
        }
    };
    // What the path holds, as its record is checked against it; a first line that does
    // not verify names no id, and its corruption is the finding.
    let holds = match (&genesis, report.head, &report.verdict) {
        (Some(g), _, _) => Some(Holds::Journal(g.journal_id.clone())),
        (None, None, _) if report.file_len == 0 => Some(Holds::Nothing),
        (None, None, Verdict::TornTail(_)) => Some(Holds::CutGenesis),
        _ => None,
    };
    let replaced = match (anchors, holds) {
        (Some(a), Some(holds)) => a.path_replaced(storage, path, holds).map_err(io_err)?,
        _ => None,
    };
    // Counted, not read off the head's seq: seqs a repair lost are not events.
    let events = if genesis.is_some() { report.events_seen } else { 0 };
    let verdict = match (&genesis, report.verdict) {
        // A first line that verifies but does not name a journal id and scope.
        (None, Verdict::Clean | Verdict::TornTail(_)) if report.head.is_some() => Verdict::Corrupt(scan::Corruption {
            seq: 0,
            offset: 0,
            problem: scan::Problem::Line(super::format::LineFault::Field {
                field: "data",
                rule: "journal.opened names a journal_id and a scope",
            }),
        }),
        (_, v) => v,
    };
    Ok(VerifyReport {
        path: path.to_owned(),
        file_len: report.file_len,
        events,
        head: report.head,
        journal_id: genesis.as_ref().map(|g| g.journal_id.clone()),
        scope: genesis.map(|g| g.scope),
        verdict,
        anchor: anchor_check,
        replaced,
    })
}

/// `verify` with nothing to visit: the chain, the genesis and the anchor only.
pub fn verify_chain(storage: &dyn Storage, path: &Path, anchors: Option<&AnchorStore>) -> Result<VerifyReport, JournalError> {
    verify(storage, path, anchors, |_, _| Ok::<(), std::convert::Infallible>(())).map_err(|e| match e {
        VerifyError::Journal(j) => j,
        VerifyError::Visitor(never) => match never {},
    })
}
