//! Files as abcd relies on them beyond `std`'s portable calls: opens that refuse a symlink,
//! the mode a file or folder is created with, positioned reads and writes, what `stat`
//! says of ownership and identity, durable syncs, atomic exchange and no-replace renames,
//! and the pid holding a file's `flock`.
//!
//! The POSIX parts are written here once; syncs, renames and the lock holder come from the
//! port (`Os`), whose doc says what each promises.

use std::ffi::OsStr;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::{Os, This};

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

/// Makes an open refuse a symlink as the path's last component (`O_NOFOLLOW`): the open
/// fails (`ELOOP` on Linux) instead of reaching whatever the link names.
pub fn no_follow(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts.custom_flags(libc::O_NOFOLLOW)
}

/// The permission bits a file this open creates gets (less the umask); no effect on a
/// file that exists.
pub fn created_mode(opts: &mut OpenOptions, mode: u32) -> &mut OpenOptions {
    opts.mode(mode)
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

    #[test]
    fn the_flock_holder_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = File::create(&path).unwrap();
        <File as fs4::FileExt>::try_lock(&held).unwrap();
        assert_eq!(flock_holder(&File::open(&path).unwrap()), Some(std::process::id()));
        drop(held);
        assert_eq!(flock_holder(&File::open(&path).unwrap()), None, "no lock, no holder");
    }
}
