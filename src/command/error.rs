//! The one error every command returns. It says whether the person can fix what stopped
//! the work (a refusal) or the work failed; `cli` turns that into exit code 2 or 1 and
//! prints the message. No other module picks an exit code.

use crate::clock::BadTestNow;
use crate::journal::JournalError;
use crate::journal::repair::RepairError;
use crate::places::PlaceError;
use crate::refusal::Refusal;

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// What was refused, why, and what to run instead, in the one shape the CLI prints.
    /// Never carries a secret.
    #[error("{0}")]
    Refused(Refusal),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Place(#[from] PlaceError),
    #[error(transparent)]
    Repair(#[from] RepairError),
    #[error(transparent)]
    Clock(#[from] BadTestNow),
    /// A failure of a lower step (the loop's driver: a journal write, a reply file, a record
    /// it cannot find) told by that error's own words and causes; the CLI answers it as a
    /// failure, whatever it holds.
    #[error(transparent)]
    FailedBy(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// Writing what the command streams to its caller failed (a closed pipe, a full disk).
    #[error(transparent)]
    Output(std::io::Error),
    /// The work failed for a reason the person cannot fix by changing the request.
    #[error("{0}")]
    Failed(String),
}

/// Who can end the trouble: the person, by asking differently, or nobody right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blame {
    /// Refused: the request, the place or the journal's state stops it (exit 2).
    Refused,
    /// Failed: I/O, a sync, a file that is not a journal (exit 1).
    Failed,
}

impl From<Refusal> for CommandError {
    fn from(r: Refusal) -> CommandError {
        CommandError::Refused(r)
    }
}

impl CommandError {
    /// A failure told by its error's own words.
    pub fn failed(e: impl std::fmt::Display) -> CommandError {
        CommandError::Failed(e.to_string())
    }

    /// The refusal this error is, if it is one.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            CommandError::Refused(r) => Some(r),
            _ => None,
        }
    }

    pub fn blame(&self) -> Blame {
        match self {
            CommandError::Refused(_) | CommandError::Place(_) | CommandError::Clock(_) => Blame::Refused,
            CommandError::Journal(j) => journal_blame(j),
            // As the CLI has always answered: a repair that could not run is the person's to look at.
            CommandError::Repair(_) => Blame::Refused,
            CommandError::Output(_) | CommandError::FailedBy(_) | CommandError::Failed(_) => Blame::Failed,
        }
    }
}

/// The blame of an error anywhere in a chain of causes, when it is one abcd knows.
pub fn blame_of(cause: &(dyn std::error::Error + 'static)) -> Option<Blame> {
    if let Some(c) = cause.downcast_ref::<CommandError>() {
        return Some(c.blame());
    }
    if cause.downcast_ref::<PlaceError>().is_some() || cause.downcast_ref::<BadTestNow>().is_some() {
        return Some(Blame::Refused);
    }
    if let Some(j) = cause.downcast_ref::<JournalError>() {
        return Some(journal_blame(j));
    }
    if cause.downcast_ref::<RepairError>().is_some() {
        return Some(Blame::Refused);
    }
    None
}

/// A journal the person must look at (missing, corrupt, replaced, locked, over its cap) is a refusal;
/// a write or sync that failed is a failure.
fn journal_blame(j: &JournalError) -> Blame {
    use JournalError as J;
    match j {
        J::Missing { .. }
        | J::Untrusted { .. }
        | J::Lock(_)
        | J::TooLarge { .. }
        | J::Corrupt { .. }
        | J::AnchorMismatch { .. }
        | J::Replaced { .. }
        | J::Foreign { .. }
        | J::Poisoned { .. }
        | J::Encode(_)
        | J::BatchTooLarge => Blame::Refused,
        J::NotAJournal { .. } => Blame::Failed,
        J::Io { source, .. } if source.kind() == std::io::ErrorKind::IsADirectory => Blame::Refused,
        J::Io { .. } | J::SyncFailed { .. } => Blame::Failed,
    }
}
