//! The owed reads' limits: the budgets from the hook's start, the one forge listing's
//! deadline and size, and what one child or one walk reads at most.

use std::time::Duration;

/// All git and forge reads share this budget from the hook's start (SPEC §6).
pub const OWED_BUDGET: Duration = Duration::from_secs(14);
/// The prompt hook's own-branch reads (the behind note) end this long after the hook's
/// start: well inside the host's 10 s timeout for a hook other than Stop, which would kill
/// the hook and its whole context with it.
pub const OWN_BUDGET: Duration = Duration::from_secs(6);
/// The one forge listing's deadline.
pub const FORGE_DEADLINE: Duration = Duration::from_secs(10);
/// A commit by this checkout's user.email this recent makes a checked-out branch own.
pub const RECENT_OWN_COMMIT: Duration = Duration::from_secs(14 * 24 * 60 * 60);
/// Pull requests listed at most.
pub const FORGE_LIST_MAX: usize = 200;
/// Own branches examined at most; the rest are named in a note, not read.
pub const BRANCHES_EXAMINED_MAX: usize = 256;
/// Bytes read from one child's stdout at most; a child printing more is killed and its
/// read counts as failed.
pub const CHILD_OUTPUT_MAX: usize = 4 << 20;
/// HEAD reflog entries read at most (the newest), for the branches checked out here.
pub const REFLOG_ENTRIES_MAX: usize = 10_000;
/// Commits beyond the default branch scanned at most (the newest) for one of this
/// checkout's, per checked-out branch.
pub const OWN_COMMITS_SCANNED_MAX: usize = 1_000;
