//! The last forge listing, kept in the working copy's local tier (`forge-listing.json`)
//! with the time it was made: what promises fire from between listings and what
//! `abcd resume` shows, so neither calls the forge. A cache: written atomically, bounded,
//! and read as absent when it is missing, too big or not its shape.

use std::path::Path;

use crate::checklist::promise::ForgeFacts;
use crate::journal::storage::{RealDisk, write_atomic};

/// The cache's file name in the local tier.
pub const FORGE_CACHE_FILE: &str = "forge-listing.json";
/// The cache is written and read up to this many bytes: a full listing of
/// `FORGE_LIST_MAX` pull requests with 200-byte branch names fits.
pub const FORGE_CACHE_MAX_BYTES: usize = 128 << 10;

/// Why the cache was not written.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("the forge listing's cache would be {0} bytes, over its {FORGE_CACHE_MAX_BYTES}-byte bound; it is not written")]
    TooBig(usize),
    #[error("the forge listing's cache could not be written: {0}")]
    Io(#[from] std::io::Error),
}

/// A kept listing stands for a fresh one this long after it was made: every away stop of
/// the working copy's sessions within it reads the kept one, so stops in quick succession
/// (several sessions, or a session blocked again at once) make one `gh pr list` call, and
/// what the forge says (a check run finishing, a base moving) is at most this old.
pub const FORGE_LISTING_REUSE: std::time::Duration = std::time::Duration::from_secs(60);

/// The kept listing in `tier` when it can stand for a fresh one at `now`: made at or
/// before `now` and less than [`FORGE_LISTING_REUSE`] before it (a listing from a clock
/// set back is not), and in every state when `all_states` is asked.
pub fn reusable(tier: &Path, now: jiff::Timestamp, all_states: bool) -> Option<ForgeFacts> {
    let facts = read(tier)?;
    let age = now.duration_since(facts.listed_at);
    let fresh = !age.is_negative() && age < jiff::SignedDuration::try_from(FORGE_LISTING_REUSE).ok()?;
    (fresh && (facts.all_states || !all_states)).then_some(facts)
}

/// Writes the listing into `tier` (the working copy's local tier), replacing the last.
pub fn write(tier: &Path, facts: &ForgeFacts) -> Result<(), CacheError> {
    let bytes = serde_json::to_vec(facts).expect("plain data serializes");
    if bytes.len() > FORGE_CACHE_MAX_BYTES {
        return Err(CacheError::TooBig(bytes.len()));
    }
    // A fresh linked worktree's first away stop lists before its journal makes the tier:
    // the folder is made here as the journal makes it (0700), so the first listing is kept.
    crate::journal::storage::Storage::create_dir_all(&RealDisk, tier, 0o700)?;
    write_atomic(&RealDisk, &tier.join(FORGE_CACHE_FILE), &bytes, false)?;
    Ok(())
}

/// The last listing written into `tier`, if there is one that reads.
pub fn read(tier: &Path) -> Option<ForgeFacts> {
    super::read_cache(&tier.join(FORGE_CACHE_FILE), FORGE_CACHE_MAX_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checklist::promise::{Checks, PrFact, PrState};

    fn listing(head_bytes: usize, count: usize) -> ForgeFacts {
        let pr = |n: usize| PrFact {
            number: n as u64,
            head: "h".repeat(head_bytes),
            state: PrState::Open,
            checks: Checks::Green,
            merge: Some(crate::checklist::promise::Merge::Behind),
        };
        ForgeFacts { listed_at: "2026-12-02T10:00:00Z".parse().unwrap(), pull_requests: (1..=count).map(pr).collect(), all_states: true }
    }

    #[test]
    fn a_listing_round_trips_and_a_missing_or_broken_cache_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), None);
        let facts = listing(12, 3);
        write(dir.path(), &facts).unwrap();
        assert_eq!(read(dir.path()), Some(facts));
        std::fs::write(dir.path().join(FORGE_CACHE_FILE), b"{not json").unwrap();
        assert_eq!(read(dir.path()), None);
    }

    #[test]
    fn a_full_listing_fits_and_the_bound_holds_on_both_sides() {
        let dir = tempfile::tempdir().unwrap();
        let full = listing(200, super::super::FORGE_LIST_MAX);
        assert!(serde_json::to_vec(&full).unwrap().len() <= FORGE_CACHE_MAX_BYTES);
        // Grow one branch name until the JSON is exactly at the bound, then one byte past.
        let mut at = listing(1, 1);
        let base = serde_json::to_vec(&at).unwrap().len();
        at.pull_requests[0].head = "h".repeat(FORGE_CACHE_MAX_BYTES - base + 1);
        assert_eq!(serde_json::to_vec(&at).unwrap().len(), FORGE_CACHE_MAX_BYTES);
        write(dir.path(), &at).unwrap();
        assert_eq!(read(dir.path()), Some(at.clone()));
        at.pull_requests[0].head.push('h');
        assert!(matches!(write(dir.path(), &at), Err(CacheError::TooBig(n)) if n == FORGE_CACHE_MAX_BYTES + 1));
        // A file past the bound (written by hand) reads as none.
        std::fs::write(dir.path().join(FORGE_CACHE_FILE), serde_json::to_vec(&at).unwrap()).unwrap();
        assert_eq!(read(dir.path()), None);
    }
}
