//! The writer lock: an exclusive `flock` (fs4) on a lock file beside the journal that is
//! never removed, so every writer locks the same inode. The wait is bounded; a writer
//! that times out names the holder's pid, which the kernel lists (Linux: `/proc/locks`; see
//! `platform::fs::flock_holder`), so a holder writes nothing into the lock file; taking the
//! lock is no more than its `flock` and, for a kept lock file, a stat of its path.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fs4::FileExt;

use crate::platform;

/// How long a writer waits for the lock before refusing (SPEC §5: two seconds).
pub const LOCK_WAIT: Duration = Duration::from_secs(2);
/// First pause between tries; doubles up to `LOCK_POLL_MAX`.
const LOCK_POLL_FIRST: Duration = Duration::from_micros(50);
const LOCK_POLL_MAX: Duration = Duration::from_millis(20);

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("the journal lock {} is held by {holder} and was not released within {waited_ms} ms", path.display())]
    Timeout { path: PathBuf, holder: String, waited_ms: u128 },
    #[error("cannot open the journal lock {}: {source}", path.display())]
    Open { path: PathBuf, source: std::io::Error },
}

/// Held while this value lives; dropping it unlocks.
pub struct JournalLock {
    file: Arc<File>,
}

/// A lock file a long-lived journal handle keeps open between appends. It counts as the
/// lock only while the lock path still names it (the lock file is never removed or moved,
/// but a person can do either, and two writers locking two inodes would both "hold" the
/// lock); the journal handle also drops it whenever the journal's path names another file
/// than the one it kept (a folder moved or replaced).
pub struct KeptLockFile {
    file: Arc<File>,
    /// Device and inode when opened.
    id: (u64, u64),
}

/// The clock a wait for the lock reads, and its pause between tries: the real ones, or in
/// a test a clock that moves only when the wait pauses (so a test can put a release just
/// before or after the wait's end without racing the scheduler).
pub trait WaitClock {
    fn elapsed(&self) -> Duration;
    fn pause(&mut self, pause: Duration);
}

struct RealClock(Instant);

impl WaitClock for RealClock {
    fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }

    fn pause(&mut self, pause: Duration) {
        std::thread::sleep(pause);
    }
}

impl JournalLock {
    pub fn acquire(path: &Path, wait: Duration) -> Result<JournalLock, LockError> {
        Self::acquire_by(path, wait, &mut RealClock(Instant::now()))
    }

    /// `acquire`, the wait measured and paused by `clock`.
    pub fn acquire_by(path: &Path, wait: Duration, clock: &mut dyn WaitClock) -> Result<JournalLock, LockError> {
        let file = Arc::new(open_lock_file(path)?);
        wait_for(&file, path, wait, clock)?;
        Ok(JournalLock { file })
    }

    /// Like `acquire`, reusing the lock file `kept` holds while its path still names it,
    /// and leaving the file it locked in `kept` for next time. Saves an open and a close
    /// per append for a handle that appends many times.
    pub fn acquire_kept(kept: &mut Option<KeptLockFile>, path: &Path, wait: Duration) -> Result<JournalLock, LockError> {
        if let Some(k) = kept.take() {
            wait_for(&k.file, path, wait, &mut RealClock(Instant::now()))?;
            // A stat of the path, after locking: a link count would miss a lock file
            // moved aside, and a check before locking could be raced.
            if std::fs::symlink_metadata(path).map(|m| platform::fs::inode(&m)).is_ok_and(|i| (i.dev, i.ino) == k.id) {
                let lock = JournalLock { file: k.file.clone() };
                *kept = Some(k);
                return Ok(lock);
            }
            // Unlinked, moved or replaced: this lock excludes nobody. Drop it (the unlock
            // comes with the close) and lock what the path names.
        }
        let file = Arc::new(open_lock_file(path)?);
        let m = file.metadata().map_err(|source| LockError::Open { path: path.to_owned(), source })?;
        let i = platform::fs::inode(&m);
        wait_for(&file, path, wait, &mut RealClock(Instant::now()))?;
        *kept = Some(KeptLockFile { file: file.clone(), id: (i.dev, i.ino) });
        Ok(JournalLock { file })
    }
}

fn open_lock_file(path: &Path) -> Result<File, LockError> {
    let mut opts = OpenOptions::new();
    platform::fs::created_mode(opts.read(true).write(true).create(true).truncate(false), 0o600);
    platform::fs::open_regular(&opts, path, platform::fs::Symlink::Refuse)
        .map_err(|source| LockError::Open { path: path.to_owned(), source })
}

/// Takes the exclusive lock on `file`, polling with a growing pause for at most `wait`.
/// The last pause ends at `wait` and is followed by a last try, so a lock released by then
/// is had and one held past it is refused.
fn wait_for(file: &File, path: &Path, wait: Duration, clock: &mut dyn WaitClock) -> Result<(), LockError> {
    let mut pause = LOCK_POLL_FIRST;
    loop {
        match FileExt::try_lock(file) {
            Ok(()) => break,
            Err(fs4::TryLockError::WouldBlock) => {}
            Err(fs4::TryLockError::Error(source)) => return Err(LockError::Open { path: path.to_owned(), source }),
        }
        let elapsed = clock.elapsed();
        if elapsed >= wait {
            let holder = platform::fs::flock_holder(file).map_or("another process".to_string(), |pid| format!("pid {pid}"));
            return Err(LockError::Timeout { path: path.to_owned(), holder, waited_ms: elapsed.as_millis() });
        }
        clock.pause(pause.min(wait - elapsed));
        pause = (pause * 2).min(LOCK_POLL_MAX);
    }
    Ok(())
}

impl Drop for JournalLock {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&*self.file);
    }
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
