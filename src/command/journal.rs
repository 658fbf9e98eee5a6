//! The journal verbs' work: `abcd journal repair` (quarantine first, continue the chain,
//! then rebuild every cache from the repaired journal) and `abcd journal checkpoint`.
//! Verification is the journal's own (`journal::verify`); the CLI formats its report.

use std::path::PathBuf;

use super::CommandError;
use crate::event::{JournalMoved, Scope};
use crate::journal::repair::{self, RepairError, RepairOutcome};
use crate::journal::scope::{ForeignJournal, ScopeFinding};
use crate::journal::storage::{self, RealDisk, Storage};
use crate::journal::{Journal, JournalError};
use crate::store::Store;

/// A repair's outcome, and how many temp files killed writers had left.
pub struct Repaired {
    pub outcome: RepairOutcome,
    /// A journal of another scope found at the path, moved whole to quarantine first.
    pub set_aside: Option<SetAside>,
    /// A working copy's journal found at the root its checkout was moved to: the move,
    /// recorded after the repair.
    pub moved: Option<JournalMoved>,
    pub temp_files_removed: usize,
}

/// A journal of another scope set aside: what it is, and where it went.
pub struct SetAside {
    pub finding: ForeignJournal,
    pub aside: PathBuf,
}

/// Repairs the journal and sweeps the temp files killed writers left; the caches are
/// rebuilt next, by [`rebuild_caches`]. `create`: the scope of a new journal, when the
/// path's journal was lost and repair starts afresh.
///
/// A journal whose genesis names another scope than `store`'s handle expects is never
/// repaired or accepted: it is moved whole to quarantine first, and then the path is
/// repaired as one holding nothing (a new journal on the record when the home store
/// recorded one here, else nothing until the next append creates one). A working copy's
/// journal moved here with its checkout is repaired as usual and its move recorded.
pub fn repair(store: &Store, create: Option<&Scope>, session: Option<String>) -> Result<Repaired, CommandError> {
    let journal = store.journal();
    let set_aside = match store.scope_finding()? {
        ScopeFinding::Foreign(finding) => {
            let aside = store.set_aside(&finding)?;
            Some(SetAside { finding, aside })
        }
        _ => None,
    };
    let note = set_aside.as_ref().map(|s| {
        let name = s.aside.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        format!("before, journal {} of {} was found in its place and set aside to quarantine/{name}", s.finding.journal_id, s.finding.names)
    });
    let outcome = match repair::repair_noting(journal, create, session, note.as_deref()) {
        Ok(outcome) => outcome,
        // Set aside where the home store recorded no journal: the path is simply free.
        Err(RepairError::Journal(JournalError::Missing { .. })) if set_aside.is_some() => RepairOutcome::NothingToRepair,
        Err(e) => return Err(e.into()),
    };
    let moved = if set_aside.is_none() { store.settle_scope()? } else { None };
    let temp_files_removed = storage::remove_stale_temp_files(&RealDisk, journal.paths().dir()).unwrap_or(0);
    Ok(Repaired { outcome, set_aside, moved, temp_files_removed })
}

/// Projections and last-good may name lines a repair moved aside: rebuilds them from the
/// repaired journal so every cache agrees with it again.
pub fn rebuild_caches(store: &Store, repaired: &Repaired) -> Result<(), CommandError> {
    let journal_there = store.journal().paths().journal.exists();
    if repaired.outcome != RepairOutcome::NothingToRepair || (repaired.moved.is_some() && journal_there) {
        let current = store.current_state()?;
        store.write_projection(&current)?;
        store.write_last_good(&current)?;
    }
    Ok(())
}

/// A checkpoint written: its file and the seq it holds the state after.
pub struct Checkpointed {
    pub path: PathBuf,
    pub seq: u64,
}

pub fn checkpoint(journal: Journal) -> Result<Checkpointed, CommandError> {
    let store = Store::new(journal);
    let current = store.current_state()?;
    if let Some(c) = &current.degraded {
        return Err(CommandError::Refused(format!(
            "refusing to checkpoint: the journal is corrupt at seq {}, byte offset {} ({}); run `abcd journal repair` first",
            c.seq, c.offset, c.problem
        )));
    }
    // A checkpoint names only durable lines (a killed writer may have left unsynced ones).
    let path = &store.journal().paths().journal;
    RealDisk.open_read(path).and_then(|f| f.sync_data()).map_err(|e| CommandError::Failed(e.to_string()))?;
    let path = store.write_checkpoint(&current)?;
    Ok(Checkpointed { path, seq: current.head.seq })
}
