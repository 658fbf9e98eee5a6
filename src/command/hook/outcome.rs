//! What a hook hands back besides its reply, and the errors it allows past: their own file,
//! so the hooks' handlers (stop, the Notification hook's) and the dispatcher in `mod.rs`
//! all import it and it imports none of them.

use std::path::PathBuf;

use crate::host::HookReply;
use crate::places::PlaceError;

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("the payload's cwd {0} is not an existing folder")]
    NoSuchCwd(PathBuf),
    #[error(transparent)]
    Place(#[from] PlaceError),
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    #[error("{0}")]
    Clock(String),
    #[error(
        "{}'s .git file names a git folder that is gone or moved, so abcd cannot tell which repository this is and records nothing here; run `git worktree repair {}` from the repository's main checkout (or `git worktree repair` there for all its worktrees)",
        .0.display(), .0.display()
    )]
    BrokenWorktreeLink(PathBuf),
}

/// What a hook did besides its reply: a failure it allowed past (printed on stderr).
pub struct HookOutcome {
    pub reply: HookReply,
    pub warning: Option<String>,
}
