//! The blocker sweep's reads (issue 23, docs/sweep.md): every working copy of the
//! repository (`git worktree list`, as the mirror finds them) and the open items each one's
//! checklist marks blocked, read from its journal on disk. A copy with no journal has had
//! no session abcd saw and is left out.

use std::path::{Path, PathBuf};

use jiff::Timestamp;

use super::CommandError;
use crate::away::Sweep;
use crate::away::sweep::{BlockedItem, CopyReport, Reporting, reporting};
use crate::journal::storage::RealDisk;
use crate::places::Place;
use crate::store::Store;

/// One working copy as found on disk.
#[derive(Clone, Debug)]
pub struct Found {
    /// Its root as `git worktree list` names it.
    pub working_copy: String,
    /// The same root as hooks record it in the away record ([`copy_key`]).
    pub key: String,
    pub items: Vec<BlockedItem>,
    /// When its checklist was last written.
    pub updated_at: Option<Timestamp>,
    pub unreadable: Option<String>,
}

impl Found {
    /// Its part of the sweep's list at `now`.
    pub fn report(&self, sweep: &Sweep, now: Timestamp) -> CopyReport {
        CopyReport {
            working_copy: self.working_copy.clone(),
            reporting: reporting(sweep, &self.key, self.updated_at, now),
            items: self.items.clone(),
            unreadable: self.unreadable.clone(),
        }
    }

    /// Its blocked items, whatever the sweep (the return lists).
    pub fn items_only(&self) -> CopyReport {
        CopyReport {
            working_copy: self.working_copy.clone(),
            reporting: Reporting::Waiting,
            items: self.items.clone(),
            unreadable: self.unreadable.clone(),
        }
    }
}

/// How a working copy's root is named in the away record: resolved through symlinks, so the
/// path a hook's payload gives and the one git lists meet.
pub fn copy_key(root: &Path) -> String {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()).display().to_string()
}

/// Every working copy of the repository `place` is in and that has a journal, with the
/// open items its checklist marks blocked.
pub fn collect(place: &Place) -> Result<Vec<Found>, CommandError> {
    let main_root = place.main_root()?;
    let roots: Vec<PathBuf> = crate::git::objects::Repo::at(&main_root).worktrees().map_err(CommandError::failed)?;
    let mut found = Vec::new();
    for root in roots {
        // Each other working copy is a place of its own, in the same home store.
        let copy = Place::with_home(&root, place.home());
        let Ok((paths, scope)) = copy.working_copy() else { continue };
        if !paths.journal.exists() {
            continue;
        }
        let (items, updated_at, unreadable) = match copy.open_scoped(RealDisk::shared(), paths, &scope) {
            Ok(journal) => {
                let view = Store::new(journal).checklist_view();
                let items = view
                    .checklist
                    .items
                    .iter()
                    .filter(|i| i.fields.state.is_open())
                    .filter_map(|i| {
                        let blocker = i.fields.blocker?;
                        Some(BlockedItem { id: i.fields.id.clone(), title: i.fields.title.clone(), blocker })
                    })
                    .collect();
                // A fallback view is the last known; a note says why it is not the journal's.
                let note =
                    (!matches!(view.source, crate::store::reader::ViewSource::Projection | crate::store::reader::ViewSource::Journal))
                        .then(|| view.notes.join("; "))
                        .filter(|n| !n.is_empty());
                (items, view.checklist.updated_at, note)
            }
            Err(e) => (Vec::new(), None, Some(e.to_string())),
        };
        found.push(Found { working_copy: root.display().to_string(), key: copy_key(&root), items, updated_at, unreadable });
    }
    Ok(found)
}
