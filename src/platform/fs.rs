//! Files as abcd relies on them beyond `std`'s portable calls: opens that refuse a symlink,
//! opens of regular files only (never waiting on a FIFO or a device), the mode a file or
//! folder is created with, positioned reads and writes, what `stat`
//! says of ownership and identity, durable syncs, atomic exchange and no-replace renames,
//! and the pid holding a file's `flock`.
//!
//! The POSIX parts are written here once; syncs, renames and the lock holder come from the
//! port (`Os`), whose doc says what each promises.

use std::ffi::OsStr;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::This;
use super::os::Os;

/// What `stat` says of a file beyond `std`'s portable metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inode {
    /// The device holding the file; with `ino`, names the file while it exists.
    pub dev: u64,
    pub ino: u64,
    /// The owner's user id.
    pub uid: u32,
    /// File type and permission bits, as `st_mode`.
    pub mode: u32,
    /// Names the file has (hard links); 0 once the last is removed.
    pub links: u64,
}

/// A path's bytes as the OS takes them (a Unix path is bytes, not necessarily UTF-8).
pub fn path_bytes(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}

/// The path these bytes name, byte for byte (as a program such as git prints it).
pub fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(bytes))
}

/// The [`Inode`] facts of `m` (from `stat`, `lstat` or `fstat`, as `m` was read).
pub fn inode(m: &Metadata) -> Inode {
    Inode { dev: m.dev(), ino: m.ino(), uid: m.uid(), mode: m.mode(), links: m.nlink() }
}

/// What changes when a file is written, replaced or touched, from `m` (`stat` or `lstat`):
/// its device, inode, size, mode, and modification and change times to the nanosecond.
/// Equal identities of one path mean it was not changed, up to the file system's timestamp
/// granularity (a file replaced by a same-size one on a reused inode within one tick).
pub fn change_identity(m: &Metadata) -> [u8; 64] {
    let mut out = [0u8; 64];
    let fields =
        [m.dev(), m.ino(), m.size(), m.mode() as u64, m.mtime() as u64, m.mtime_nsec() as u64, m.ctime() as u64, m.ctime_nsec() as u64];
    for (chunk, v) in out.chunks_exact_mut(8).zip(fields) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// When `m`'s file last changed, in nanoseconds since the epoch: the later of its
/// modification and change times (a `chmod` moves only the change time).
pub fn changed_at_nanos(m: &Metadata) -> i128 {
    let at = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    at(m.mtime(), m.mtime_nsec()).max(at(m.ctime(), m.ctime_nsec()))
}

/// What names a folder, from `m`: its device, inode and mode, without the times its
/// entries' comings and goings change.
pub fn folder_identity(m: &Metadata) -> [u8; 24] {
    let mut out = [0u8; 24];
    for (chunk, v) in out.chunks_exact_mut(8).zip([m.dev(), m.ino(), m.mode() as u64]) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// Makes an open refuse a symlink as the path's last component (`O_NOFOLLOW`): the open
/// fails (`ELOOP` on Linux) instead of reaching whatever the link names.
pub fn no_follow(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts.custom_flags(libc::O_NOFOLLOW)
}

/// Whether an open of a regular file may go through a symlink as the path's last component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symlink {
    Follow,
    /// The open fails (`ELOOP` on Linux), as with [`no_follow`].
    Refuse,
}

/// What an open found that is not a regular file; carried inside the `io::Error`
/// [`open_regular`] returns (kind `InvalidInput`), so a caller can tell it from others with
/// [`is_not_regular`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("it is {0}, not a regular file (abcd reads only regular files; remove it or move it aside)")]
pub struct NotRegular(pub &'static str);

/// Whether `e` is the refusal of a file that is not a regular file.
pub fn is_not_regular(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<NotRegular>())
}

/// Opens `path` as `opts` says (read, write, append, create, mode), only if it is a regular
/// file. The open itself never waits (`O_NONBLOCK`: a FIFO with no writer, a device) and
/// never makes a terminal this process's controlling one (`O_NOCTTY`); then `fstat` of what
/// was opened must say "regular file", else the file is closed unread and the error is
/// [`NotRegular`]. The returned file blocks as usual (the flag is cleared). `opts` must not
/// carry custom flags of its own ([`no_follow`]); `symlink` says that instead.
/// What a file that is not a regular one is, in words ("a folder", "a FIFO (named pipe)", …).
pub fn kind_words(kind: &std::fs::FileType) -> &'static str {
    if kind.is_file() {
        "a file"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "of an unknown type"
    }
}

pub fn open_regular(opts: &OpenOptions, path: &Path, symlink: Symlink) -> io::Result<File> {
    let mut opts = opts.clone();
    let refuse = if symlink == Symlink::Refuse { libc::O_NOFOLLOW } else { 0 };
    opts.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | refuse);
    let file = opts.open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, NotRegular(kind_words(&kind))));
    }
    set_blocking(&file)?;
    Ok(file)
}

/// Clears `O_NONBLOCK` on an open file (Linux ignores it on regular files, but another file
/// system or OS may not).
fn set_blocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is open for as long as `file` is borrowed; F_GETFL/F_SETFL touch only its
    // status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_NONBLOCK != 0 && unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// At most `limit` bytes from the start of the regular file at `path` ([`open_regular`] for
/// reading, symlinks followed): a caller that must tell "over its cap" asks for one more
/// byte than the cap.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(OpenOptions::new().read(true), path, Symlink::Follow)?;
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// [`read_regular`] as UTF-8 text; invalid UTF-8 is an `InvalidData` error.
pub fn read_regular_text(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_regular(path, limit)?).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The permission bits a file this open creates gets (less the umask); no effect on a
/// file that exists.
pub fn created_mode(opts: &mut OpenOptions, mode: u32) -> &mut OpenOptions {
    opts.mode(mode)
}

/// Sets an open file's permission bits (`fchmod`), whatever the umask: a file written in
/// place of another takes the replaced one's mode.
pub fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
}

/// Creates a folder and its missing parents, each one created with `mode` (less the umask).
pub fn create_dir_all(dir: &Path, mode: u32) -> io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(mode).create(dir)
}

/// Reads at `offset` without moving the file's position (one `pread`); fewer bytes than
/// `buf` holds at the end of the file, or when the call returns early.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    file.read_at(buf, offset)
}

/// Writes all of `bytes` at `offset` without moving the file's position (`pwrite` until
/// done); on a file opened to append, Linux writes at the end instead.
pub fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    file.write_all_at(bytes, offset)
}

/// Makes the file's data durable (see `Os::sync_data`; Linux: `fdatasync`).
pub fn sync_data(file: &File) -> io::Result<()> {
    This::sync_data(file)
}

/// Makes the names in a folder durable (see `Os::sync_dir`).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    This::sync_dir(dir)
}

/// Swaps two names atomically (see `Os::rename_exchange`; Linux: `renameat2` with
/// `RENAME_EXCHANGE`).
pub fn rename_exchange(a: &Path, b: &Path) -> io::Result<()> {
    This::rename_exchange(a, b)
}

/// Renames unless `to` exists (see `Os::rename_noreplace`; Linux: `renameat2` with
/// `RENAME_NOREPLACE`).
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    This::rename_noreplace(from, to)
}

/// The pid holding an exclusive `flock` on `file`, `None` when it cannot be told (see
/// `Os::flock_holder`; Linux: `/proc/locks`).
pub fn flock_holder(file: &File) -> Option<u32> {
    This::flock_holder(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exchange_swaps_both_names_and_needs_both() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"one").unwrap();
        std::fs::write(&b, b"two").unwrap();
        rename_exchange(&a, &b).unwrap();
        assert_eq!((std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap()), (b"two".to_vec(), b"one".to_vec()));
        let missing = dir.path().join("missing");
        assert_eq!(rename_exchange(&a, &missing).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(std::fs::read(&a).unwrap(), b"two", "a failed exchange moves nothing");
    }

    #[test]
    fn a_noreplace_rename_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("from"), dir.path().join("to"));
        std::fs::write(&from, b"new").unwrap();
        std::fs::write(&to, b"kept").unwrap();
        assert_eq!(rename_noreplace(&from, &to).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!((std::fs::read(&from).unwrap(), std::fs::read(&to).unwrap()), (b"new".to_vec(), b"kept".to_vec()));
        std::fs::remove_file(&to).unwrap();
        rename_noreplace(&from, &to).unwrap();
        assert!(!from.exists() && std::fs::read(&to).unwrap() == b"new");
    }

    #[test]
    fn no_follow_refuses_a_symlink_and_created_mode_sets_the_bits() {
        let dir = tempfile::tempdir().unwrap();
        let (target, link) = (dir.path().join("target"), dir.path().join("link"));
        std::fs::write(&target, b"x").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(no_follow(OpenOptions::new().read(true)).open(&link).is_err());
        assert!(no_follow(OpenOptions::new().read(true)).open(&target).is_ok());
        let made = dir.path().join("made");
        created_mode(OpenOptions::new().write(true).create_new(true), 0o600).open(&made).unwrap();
        assert_eq!(inode(&std::fs::metadata(&made).unwrap()).mode & 0o777, 0o600);
    }

    /// A FIFO with no writer: an open that waited for one would never return.
    fn fifo(path: &Path) {
        let c = std::ffi::CString::new(path_bytes(path)).unwrap();
        // SAFETY: a NUL-terminated path; mkfifo touches nothing else.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
    }

    /// How long a test waits for an open that must not wait at all: generous, so that only an
    /// open that waits forever misses it.
    const OPEN_RETURNS_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

    /// `open_regular(opts, path, Follow)` on another thread; panics if it has not returned by
    /// [`OPEN_RETURNS_WITHIN`] (a regression then fails instead of hanging the run).
    fn returned(opts: &OpenOptions, path: &Path) -> io::Result<File> {
        let (opts, path) = (opts.clone(), path.to_owned());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(open_regular(&opts, &path, Symlink::Follow)));
        rx.recv_timeout(OPEN_RETURNS_WITHIN).expect("the open returned")
    }

    #[test]
    fn open_regular_opens_only_a_regular_file_and_never_waits_on_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let (file, pipe, link) = (dir.path().join("file"), dir.path().join("pipe"), dir.path().join("link"));
        std::fs::write(&file, b"text").unwrap();
        fifo(&pipe);
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let read = OpenOptions::new().read(true).clone();
        let rw = OpenOptions::new().read(true).write(true).create(true).truncate(false).clone();
        // A folder opens for reading only; any open of it for writing fails on its own.
        let refusals =
            [(&read, pipe.as_path(), "a FIFO (named pipe)"), (&rw, pipe.as_path(), "a FIFO (named pipe)"), (&read, dir.path(), "a folder")];
        for (opts, path, what) in refusals {
            let e = returned(opts, path).unwrap_err();
            assert!(is_not_regular(&e), "{what}: {e}");
            assert_eq!(
                e.to_string(),
                format!("it is {what}, not a regular file (abcd reads only regular files; remove it or move it aside)")
            );
        }
        let dev_null = Path::new("/dev/null");
        assert_eq!(
            open_regular(&read, dev_null, Symlink::Follow).unwrap_err().to_string(),
            "it is a character device, not a regular file (abcd reads only regular files; remove it or move it aside)"
        );
        assert!(
            !is_not_regular(&open_regular(&read, &dir.path().join("missing"), Symlink::Follow).unwrap_err()),
            "absent is another error"
        );
        let mut text = String::new();
        open_regular(&read, &file, Symlink::Refuse).unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "text");
        assert!(open_regular(&read, &link, Symlink::Refuse).is_err(), "a symlink is refused when asked");
        let through = open_regular(&read, &link, Symlink::Follow).unwrap();
        // SAFETY: the descriptor is open while `through` lives.
        let flags = unsafe { libc::fcntl(through.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0, "the file returned blocks as usual");
        let (tx, rx) = std::sync::mpsc::channel();
        let p = pipe.clone();
        std::thread::spawn(move || tx.send(read_regular(&p, 10).map_err(|e| is_not_regular(&e))));
        assert_eq!(rx.recv_timeout(OPEN_RETURNS_WITHIN).expect("the read returned"), Err(true));
        assert_eq!(read_regular(&file, 3).unwrap(), b"tex", "at most the limit");
        assert_eq!(read_regular_text(&link, 10).unwrap(), "text");
    }

    #[test]
    fn the_flock_holder_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = File::create(&path).unwrap();
        <File as fs4::FileExt>::try_lock(&held).unwrap();
        assert_eq!(flock_holder(&File::open(&path).unwrap()), Some(std::process::id()));
        // Unlocked, not only closed: a child another test forks in this process shares the
        // open file (and with it the lock) until it execs, so a close alone leaves the lock
        // held for that moment, by that child.
        <File as fs4::FileExt>::unlock(&held).unwrap();
        drop(held);
        assert_eq!(flock_holder(&File::open(&path).unwrap()), None, "no lock, no holder");
    }
}
