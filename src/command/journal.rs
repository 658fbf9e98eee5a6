//! The journal verbs' work: `abcd journal repair` (quarantine first, continue the chain,
//! then rebuild every cache from the repaired journal) and `abcd journal checkpoint`.
//! Verification is the journal's own (`journal::verify`); the CLI formats its report.

use std::path::PathBuf;

use super::CommandError;
use crate::event::Scope;
use crate::journal::Journal;
use crate::journal::repair::{self, RepairOutcome};
use crate::journal::storage::{self, RealDisk, Storage};
use crate::store::Store;

/// A repair's outcome, and how many temp files killed writers had left.
pub struct Repaired {
    pub outcome: RepairOutcome,
    pub temp_files_removed: usize,
}

/// Repairs the journal and sweeps the temp files killed writers left; the caches are
/// rebuilt next, by [`rebuild_caches`]. `create`: the scope of a new journal, when the
/// path's journal was lost and repair starts afresh.
pub fn repair(journal: &Journal, create: Option<&Scope>, session: Option<String>) -> Result<Repaired, CommandError> {
    let outcome = repair::repair(journal, create, session)?;
    let temp_files_removed = storage::remove_stale_temp_files(&RealDisk, journal.paths().dir()).unwrap_or(0);
    Ok(Repaired { outcome, temp_files_removed })
}

/// Projections and last-good may name lines a repair moved aside: rebuilds them from the
/// repaired journal so every cache agrees with it again.
pub fn rebuild_caches(journal: Journal, repaired: &Repaired) -> Result<(), CommandError> {
    if repaired.outcome != RepairOutcome::NothingToRepair {
        let store = Store::new(journal);
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
