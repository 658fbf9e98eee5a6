//! The writer lock: an exclusive `flock` (fs4) on a lock file beside the journal that is
//! never removed, so every writer locks the same inode. The wait is bounded; a writer
//! that times out names the holder's pid, which each holder writes into the lock file.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs4::FileExt;

/// How long a writer waits for the lock before refusing (SPEC §5: two seconds).
pub const LOCK_WAIT: Duration = Duration::from_secs(2);
/// First pause between tries; doubles up to `LOCK_POLL_MAX`.
const LOCK_POLL_FIRST: Duration = Duration::from_micros(50);
const LOCK_POLL_MAX: Duration = Duration::from_millis(20);
/// The holder's pid record is at most this long.
const HOLDER_RECORD_MAX_BYTES: u64 = 32;

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("the journal lock {} is held by {holder} and was not released within {waited_ms} ms", path.display())]
    Timeout { path: PathBuf, holder: String, waited_ms: u128 },
    #[error("cannot open the journal lock {}: {source}", path.display())]
    Open { path: PathBuf, source: std::io::Error },
}

/// Held while this value lives; dropping it unlocks.
pub struct JournalLock {
    file: File,
}

impl JournalLock {
    pub fn acquire(path: &Path, wait: Duration) -> Result<JournalLock, LockError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|source| LockError::Open { path: path.to_owned(), source })?;
        let started = Instant::now();
        let mut pause = LOCK_POLL_FIRST;
        loop {
            match FileExt::try_lock(&file) {
                Ok(()) => break,
                Err(fs4::TryLockError::WouldBlock) => {}
                Err(fs4::TryLockError::Error(source)) => return Err(LockError::Open { path: path.to_owned(), source }),
            }
            if started.elapsed() >= wait {
                let holder = read_holder(&mut file).map_or("another process".to_string(), |pid| format!("pid {pid}"));
                return Err(LockError::Timeout { path: path.to_owned(), holder, waited_ms: started.elapsed().as_millis() });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(LOCK_POLL_MAX);
        }
        // Best effort: the pid only improves a timeout message, so a failure is not fatal.
        let _ = write_holder(&mut file);
        Ok(JournalLock { file })
    }
}

impl Drop for JournalLock {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&self.file);
    }
}

fn write_holder(file: &mut File) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt as _;
    let record = format!("{:<20}\n", std::process::id());
    file.write_all_at(record.as_bytes(), 0)
}

fn read_holder(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(HOLDER_RECORD_MAX_BYTES).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_times_out_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.lock");
        let _held = JournalLock::acquire(&path, LOCK_WAIT).unwrap();
        let started = Instant::now();
        // flock locks belong to the open file description, so a second open in the same
        // process contends like another process would.
        let err = JournalLock::acquire(&path, Duration::from_millis(100)).err().unwrap();
        assert!(started.elapsed() >= Duration::from_millis(100));
        let text = err.to_string();
        assert!(text.contains(&format!("pid {}", std::process::id())), "{text}");
    }

    #[test]
    fn the_lock_is_free_again_after_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.lock");
        drop(JournalLock::acquire(&path, LOCK_WAIT).unwrap());
        JournalLock::acquire(&path, Duration::from_millis(10)).unwrap();
        assert!(path.exists(), "the lock file is never removed");
    }
}
