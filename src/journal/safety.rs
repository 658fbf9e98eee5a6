//! SPEC §1's rule for files abcd trusts: a regular file owned by this user, not writable
//! by group or others, not a symlink. Journals obey it too, wherever they live.

use std::io;
use std::path::Path;

use super::storage::{FileFacts, Storage};

/// Group- or other-writable bits.
const FOREIGN_WRITE_BITS: u32 = 0o022;

/// Why a path fails the rule; `None` when it passes.
pub fn untrusted_reason(facts: &FileFacts) -> Option<&'static str> {
    if facts.is_symlink {
        Some("it is a symbolic link")
    } else if facts.is_dir {
        Some("it is a folder, not a file")
    } else if !facts.is_file {
        Some("it is not a regular file")
    } else if facts.uid != current_uid() {
        Some("it is owned by another user")
    } else if facts.mode & FOREIGN_WRITE_BITS != 0 {
        Some("it is writable by other users")
    } else {
        None
    }
}

/// True when a home-store file exists and passes the rule; false when absent or failing.
pub fn home_file_ok(storage: &dyn Storage, path: &Path) -> io::Result<bool> {
    Ok(match storage.facts(path)? {
        Some(f) => untrusted_reason(&f).is_none(),
        None => false,
    })
}

pub fn current_uid() -> u32 {
    crate::platform::process::effective_uid()
}
