//! The storage seam: every byte the journal and its projections put on or take off disk
//! passes through `Storage`, so tests can put a simulated disk (one that loses unsynced
//! writes, tears a write at any byte, or fails a sync) where the real one is.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::platform;
use crate::platform::fs::Symlink;

/// An open file. Writes are visible to reads at once; they are durable only after
/// `sync_data` returns Ok (and, for a new name, after `sync_dir` of its folder).
pub trait StorageFile: Send + Sync {
    fn len(&self) -> io::Result<u64>;
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Reads up to `buf.len()` bytes at `offset`; fewer only at the end of the file.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Appends all of `bytes` at the end of the file in one write call.
    fn append(&self, bytes: &[u8]) -> io::Result<()>;
    /// Writes `bytes` at `offset`, in place.
    fn write_at(&self, bytes: &[u8], offset: u64) -> io::Result<()>;
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// `fdatasync`: data and the size needed to read it back.
    fn sync_data(&self) -> io::Result<()>;
    /// Which file this is, so a handle kept open can tell whether its path still names
    /// it; `None` (the default) when the storage cannot say, and then nothing is kept open.
    fn identity(&self) -> io::Result<Option<FileId>> {
        Ok(None)
    }
    /// Whether the file still has a name in some folder (false once unlinked or renamed
    /// over). Only asked of files whose `identity` is known; true by default.
    fn is_linked(&self) -> io::Result<bool> {
        Ok(true)
    }
    /// Claims the file for this writer alone, without waiting: an exclusive lock held
    /// until the handle is dropped, plus the facts that tell whether it is safe to write
    /// (a plain file of this user's with one name). `None` when another writer holds it
    /// or the storage has no such lock (the default), and the caller writes elsewhere.
    fn try_claim(&self) -> io::Result<Option<FileFacts>> {
        Ok(None)
    }
}

/// A file's identity on its storage (device and inode on a real disk).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

/// What the journal needs to know about a path before it trusts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileFacts {
    pub is_file: bool,
    pub is_dir: bool,
    pub is_symlink: bool,
    pub uid: u32,
    pub mode: u32,
    pub len: u64,
    /// `None` when the storage cannot say (see [`StorageFile::identity`]).
    pub id: Option<FileId>,
    /// Names the file has (hard links); 1 where the storage has no such notion.
    pub links: u64,
}

// SPEC §1's rule for files abcd trusts: a regular file owned by this user, not writable by
// group or others, not a symlink. Journals obey it too, wherever they live.

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

/// What the person runs to make a file [`untrusted_reason`] refused trusted again, in words
/// for the refusal: the command for the two a person makes by accident (a `chmod`, a link
/// put in the file's place), and who may fix the rest. abcd runs none of it: the file may
/// have been changed by whoever could write it, and only the person can judge that.
pub fn untrusted_remedy(path: &Path, reason: &str) -> String {
    let quoted = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    match reason {
        "it is writable by other users" => {
            format!("if no one else should write it, run `chmod go-w {}`, then run the command again", quoted(path))
        }
        "it is a symbolic link" => match std::fs::read_link(path) {
            Ok(target) => {
                let target = path.parent().map_or(target.clone(), |dir| dir.join(&target));
                format!(
                    "abcd follows no link to its own files: put the file it names in its place with `mv {} {}`, then run the command again",
                    quoted(&target),
                    quoted(path)
                )
            }
            Err(_) => "abcd follows no link to its own files: put the file it names in its place, then run the command again".into(),
        },
        "it is owned by another user" => "run abcd as the user who owns it".into(),
        _ => "move it away, then run the command again".into(),
    }
}

/// True when a home-store file exists and passes the rule; false when absent or failing.
pub fn home_file_ok(storage: &dyn Storage, path: &Path) -> io::Result<bool> {
    Ok(match storage.facts(path)? {
        Some(f) => untrusted_reason(&f).is_none(),
        None => false,
    })
}

/// The user abcd runs as, whose files it trusts.
pub fn current_uid() -> u32 {
    crate::platform::process::effective_uid()
}

pub trait Storage: Send + Sync {
    /// Opens an existing file for reading and appending.
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    /// Opens an existing file for reading only.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    /// Creates a file that must not exist yet (mode 0600).
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    /// Creates the file if missing, never truncating it (mode 0600).
    fn open_or_create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    /// Renames atomically; durable after `sync_dir` of the target's folder.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// fsync of a folder, making the names in it durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Creates a folder and its parents with the given mode.
    fn create_dir_all(&self, dir: &Path, mode: u32) -> io::Result<()>;
    /// Facts about the path itself (a symlink is not followed); `None` when absent.
    fn facts(&self, path: &Path) -> io::Result<Option<FileFacts>>;
    /// Names in a folder (for checkpoints and quarantine listings).
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// Removes a file that is a cache (a stale temp file, a checkpoint); never the journal.
    fn remove_cache_file(&self, path: &Path) -> io::Result<()>;
    /// Swaps two names atomically (`renameat2` with `RENAME_EXCHANGE`); `Unsupported` where
    /// the storage cannot, and then `write_replacing` renames as `write_atomic` does.
    fn rename_exchange(&self, _a: &Path, _b: &Path) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
    /// Renames unless `to` exists (`RENAME_NOREPLACE`); `Unsupported` where it cannot.
    fn rename_noreplace(&self, _from: &Path, _to: &Path) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
    /// The path with every symlink and `..` resolved (a journal's scope names its working
    /// copy's canonical root). A storage with no links answers the path unchanged.
    fn canonical(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(path.to_owned())
    }
    /// Opens an existing file to write in place: its `write_at` lands at the offset given
    /// (a file from `open_rw` appends, and on Linux `pwrite` then writes at the end).
    /// `Unsupported` where the storage cannot, and the appender refuses to go on.
    fn open_in_place(&self, _path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

pub type SharedStorage = Arc<dyn Storage>;

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealDisk;

impl RealDisk {
    pub fn shared() -> SharedStorage {
        Arc::new(RealDisk)
    }
}

struct RealFile(File);

impl StorageFile for RealFile {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match platform::fs::read_at(&self.0, &mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
    fn append(&self, bytes: &[u8]) -> io::Result<()> {
        // The file is opened O_APPEND, so the offset argument is ignored by the kernel and
        // the write lands at the end in one call; a short write is an error to report, not
        // to paper over with a second write that could interleave.
        let n = loop {
            match (&self.0).write_at_end(bytes) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        if n != bytes.len() {
            return Err(io::Error::new(io::ErrorKind::WriteZero, format!("short write: {n} of {} bytes", bytes.len())));
        }
        Ok(())
    }
    fn write_at(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        platform::fs::write_all_at(&self.0, bytes, offset)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        platform::fs::sync_data(&self.0)
    }
    fn identity(&self) -> io::Result<Option<FileId>> {
        let i = platform::fs::inode(&self.0.metadata()?);
        Ok(Some(FileId { dev: i.dev, ino: i.ino }))
    }
    fn is_linked(&self) -> io::Result<bool> {
        Ok(platform::fs::inode(&self.0.metadata()?).links > 0)
    }
    fn try_claim(&self) -> io::Result<Option<FileFacts>> {
        match <File as fs4::FileExt>::try_lock(&self.0) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => return Ok(None),
            Err(fs4::TryLockError::Error(e)) => return Err(e),
        }
        Ok(Some(facts_of(&self.0.metadata()?)))
    }
}

fn facts_of(m: &std::fs::Metadata) -> FileFacts {
    let i = platform::fs::inode(m);
    FileFacts {
        is_file: m.file_type().is_file(),
        is_dir: m.file_type().is_dir(),
        is_symlink: m.file_type().is_symlink(),
        uid: i.uid,
        mode: i.mode,
        len: m.len(),
        id: Some(FileId { dev: i.dev, ino: i.ino }),
        links: i.links,
    }
}

trait WriteAtEnd {
    fn write_at_end(self, bytes: &[u8]) -> io::Result<usize>;
}

impl WriteAtEnd for &File {
    fn write_at_end(self, bytes: &[u8]) -> io::Result<usize> {
        use std::io::Write;
        let mut f = self;
        f.write(bytes)
    }
}

impl Storage for RealDisk {
    // Every open of an existing name is of a regular file only, and never waits: a FIFO or
    // a device where a journal, projection or checkpoint should be is an error, not a hang.
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let f = platform::fs::open_regular(OpenOptions::new().read(true).append(true), path, Symlink::Refuse)?;
        Ok(Box::new(RealFile(f)))
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let f = platform::fs::open_regular(OpenOptions::new().read(true), path, Symlink::Refuse)?;
        Ok(Box::new(RealFile(f)))
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let f = platform::fs::created_mode(OpenOptions::new().read(true).write(true).create_new(true), 0o600).open(path)?;
        Ok(Box::new(RealFile(f)))
    }
    fn open_or_create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let mut opts = OpenOptions::new();
        platform::fs::created_mode(opts.read(true).write(true).create(true).truncate(false), 0o600);
        let f = platform::fs::open_regular(&opts, path, Symlink::Refuse)?;
        Ok(Box::new(RealFile(f)))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        platform::fs::sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path, mode: u32) -> io::Result<()> {
        platform::fs::create_dir_all(dir, mode)
    }
    fn facts(&self, path: &Path) -> io::Result<Option<FileFacts>> {
        match std::fs::symlink_metadata(path) {
            Ok(m) => Ok(Some(facts_of(&m))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        match std::fs::read_dir(dir) {
            Ok(rd) => rd.map(|e| e.map(|e| e.path())).collect(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }
    fn remove_cache_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn rename_exchange(&self, a: &Path, b: &Path) -> io::Result<()> {
        platform::fs::rename_exchange(a, b)
    }
    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()> {
        platform::fs::rename_noreplace(from, to)
    }
    fn open_in_place(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let f = platform::fs::open_regular(OpenOptions::new().read(true).write(true), path, Symlink::Refuse)?;
        Ok(Box::new(RealFile(f)))
    }
    fn canonical(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }
}

/// Reads the whole of a small file through the seam, refusing one over `cap` bytes.
pub fn read_small(storage: &dyn Storage, path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let f = storage.open_read(path)?;
    let len = f.len()?;
    if len > cap {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{} is {len} bytes, over its {cap}-byte cap", path.display())));
    }
    let mut buf = vec![0u8; len as usize];
    let n = f.read_at(&mut buf, 0)?;
    buf.truncate(n);
    Ok(buf)
}

/// Removes temp files `write_atomic` left in `dir` when its writer was killed: names
/// `.<name>.tmp-<pid>-<n>` whose pid is no longer alive. Returns how many it removed.
/// Only caches are written this way besides a journal's creation and its copy made anew
/// (`Journal::make_anew`), whose temp file never became the journal, so nothing
/// acknowledged is lost.
pub fn remove_stale_temp_files(storage: &dyn Storage, dir: &Path) -> io::Result<usize> {
    let mut removed = 0;
    for path in storage.list_dir(dir)? {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
        let Some(pid) = stale_temp_pid(name) else { continue };
        let alive = platform::process::pid_exists(pid);
        if !alive && storage.remove_cache_file(&path).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// The pid in a `write_atomic` temp name, if `name` is one.
fn stale_temp_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    let (_, tail) = rest.rsplit_once(".tmp-")?;
    let (pid, n) = tail.split_once('-')?;
    n.bytes().all(|c| c.is_ascii_digit()).then_some(())?;
    // A pid is a positive C int.
    pid.parse().ok().filter(|p| (1..=i32::MAX as u32).contains(p))
}

/// Replaces `path` atomically: a temp file in the same folder, then a rename. With
/// `durable`, the temp file is synced before the rename and the folder after it.
pub fn write_atomic(storage: &dyn Storage, path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = temp_path(path);
    let f = storage.create_new(&tmp)?;
    let result = (|| {
        f.write_at(bytes, 0)?;
        if durable {
            f.sync_data()?;
        }
        storage.rename(&tmp, path)?;
        if durable {
            storage.sync_dir(dir)?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = storage.remove_cache_file(&tmp);
    }
    result
}

/// Replaces a cache file (a projection; never synced) atomically, as `write_atomic` does
/// without `durable`, but reusing the replaced version's file instead of freeing it.
///
/// Why: on a file system mounted with `discard`, freeing a file's blocks sends a discard to
/// the device before the call returns, so a rename over a projection costs most of
/// `abcd checklist add`'s own time. Here the new version is
/// written into `.<name>.spare` (the version before last, claimed with a lock taken
/// without waiting: see `write_into_spare`) and swapped in with `RENAME_EXCHANGE`, which
/// leaves the replaced version under the spare's name for the next call: one rename per
/// write. A writer that cannot claim the spare writes a fresh temp file, swaps it in, and
/// offers the replaced version as the spare (`RENAME_NOREPLACE`, so two writers never free
/// each other's). Readers see one whole version or the other, as with a rename. A reader
/// still reading a version after it became the spare can see it rewritten by the next
/// writer; every projection carries a digest, so such a read is refused and the reader
/// folds from the journal. Without exchange or the lock (another file system, the
/// simulated disk) it is `write_atomic`.
pub fn write_replacing(storage: &dyn Storage, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let spare = dir.join(format!(".{name}.spare"));
    if let Some(written) = write_into_spare(storage, &spare, path, bytes) {
        return written;
    }
    let tmp = temp_path(path);
    let result = storage.create_new(&tmp).and_then(|f| {
        f.write_at(bytes, 0)?;
        f.set_len(bytes.len() as u64)?;
        match storage.rename_exchange(&tmp, path) {
            Ok(()) => {
                // `tmp` now holds the version just replaced: the next call's spare, unless
                // another writer returned one first.
                if storage.rename_noreplace(&tmp, &spare).is_err() {
                    let _ = storage.remove_cache_file(&tmp);
                }
                Ok(())
            }
            // Nothing there yet to swap with, or no exchange on this file system.
            Err(_) => storage.rename(&tmp, path),
        }
    });
    if result.is_err() {
        let _ = storage.remove_cache_file(&tmp);
    }
    result
}

/// Writes `bytes` into the spare and swaps it in, when this writer can claim it: the
/// spare's lock taken without waiting (a writer holding it has it to itself), the file a
/// plain one of this user's with no other name, and the spare's name still naming the
/// file locked (so it is not a version another writer already swapped in). `None` when it
/// cannot; the caller then writes a fresh file. Once the swap is done, the spare's name
/// holds the replaced version, the next call's spare.
fn write_into_spare(storage: &dyn Storage, spare: &Path, path: &Path, bytes: &[u8]) -> Option<io::Result<()>> {
    // A symlink planted as the spare is refused here (O_NOFOLLOW).
    let f = storage.open_or_create(spare).ok()?;
    let facts = f.try_claim().ok()??;
    // A planted hard link or a foreign file is never written through. Nor is a file with
    // no name left (0 links: another writer's swap and rename moved it on after the open).
    // The name is not removed here: by now it may name another writer's claimed spare.
    if untrusted_reason(&facts).is_some() || facts.links != 1 {
        return None;
    }
    if storage.facts(spare).ok()?.and_then(|n| n.id) != facts.id || facts.id.is_none() {
        return None;
    }
    let written = f.write_at(bytes, 0).and_then(|()| f.set_len(bytes.len() as u64));
    Some(written.and_then(|()| match storage.rename_exchange(spare, path) {
        Ok(()) => Ok(()),
        // Nothing there yet to swap with: the spare becomes the file.
        Err(e) if e.kind() == io::ErrorKind::NotFound => storage.rename(spare, path),
        Err(e) => Err(e),
    }))
}

/// A journal's bytes held in memory, read-only: for readers of bytes that never were a
/// file (format vectors, tests). Writes fail with `PermissionDenied`.
pub struct BytesFile(pub Vec<u8>);

impl StorageFile for BytesFile {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = offset.min(self.0.len() as u64) as usize;
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }
    fn append(&self, _: &[u8]) -> io::Result<()> {
        Err(io::ErrorKind::PermissionDenied.into())
    }
    fn write_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        Err(io::ErrorKind::PermissionDenied.into())
    }
    fn set_len(&self, _: u64) -> io::Result<()> {
        Err(io::ErrorKind::PermissionDenied.into())
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
}

/// Bytes one step of [`copy_range`] moves.
const COPY_CHUNK_BYTES: usize = 256 * 1024;

/// Fills `buf` from `offset` as far as the file goes; returns how many bytes it read (short
/// only at the end of the file).
pub fn read_fully_at(file: &dyn StorageFile, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let n = file.read_at(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

/// Copies `[from, from + len)` of `src` to `dst` at `to`; a source that ends first is an
/// `UnexpectedEof` (the file shrank under the copy).
pub fn copy_range(src: &dyn StorageFile, dst: &dyn StorageFile, from: u64, len: u64, to: u64) -> io::Result<()> {
    let mut buf = vec![0u8; (len as usize).min(COPY_CHUNK_BYTES)];
    let mut done = 0u64;
    while done < len {
        let want = ((len - done) as usize).min(buf.len());
        let n = src.read_at(&mut buf[..want], from + done)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file shrank while it was copied"));
        }
        dst.write_at(&buf[..n], to + done)?;
        done += n as u64;
    }
    Ok(())
}

/// A fresh temp name beside `path`: `.<name>.tmp-<pid>-<n>`, the shape
/// `remove_stale_temp_files` sweeps once its writer is gone.
pub fn temp_path(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir.join(format!(".{name}.tmp-{}-{}", std::process::id(), unique_suffix()))
}

fn unique_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

// ---------------------------------------------------------------------------------------
// Fault doubles (test builds only)
// ---------------------------------------------------------------------------------------

/// A storage double written as "this other storage, except …": every method goes to
/// `inner` unless the double overrides it, and every file `inner` opens passes through
/// `file`, so a double states only what it faults. Whatever implements it is a `Storage`.
#[cfg(feature = "test-support")]
pub trait Delegate: Send + Sync {
    /// The storage every call not overridden goes to.
    fn inner(&self) -> &dyn Storage;
    /// Each file `inner` opens, on its way out (the default: as it is).
    fn file(&self, file: Box<dyn StorageFile>) -> Box<dyn StorageFile> {
        file
    }
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(self.file(self.inner().open_rw(path)?))
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(self.file(self.inner().open_read(path)?))
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(self.file(self.inner().create_new(path)?))
    }
    fn open_or_create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(self.file(self.inner().open_or_create(path)?))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner().rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner().sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path, mode: u32) -> io::Result<()> {
        self.inner().create_dir_all(dir, mode)
    }
    fn facts(&self, path: &Path) -> io::Result<Option<FileFacts>> {
        self.inner().facts(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner().list_dir(dir)
    }
    fn remove_cache_file(&self, path: &Path) -> io::Result<()> {
        self.inner().remove_cache_file(path)
    }
    fn rename_exchange(&self, a: &Path, b: &Path) -> io::Result<()> {
        self.inner().rename_exchange(a, b)
    }
    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner().rename_noreplace(from, to)
    }
    fn open_in_place(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(self.file(self.inner().open_in_place(path)?))
    }
}

#[cfg(feature = "test-support")]
impl<T: Delegate> Storage for T {
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Delegate::open_rw(self, path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Delegate::open_read(self, path)
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Delegate::create_new(self, path)
    }
    fn open_or_create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Delegate::open_or_create(self, path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        Delegate::rename(self, from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        Delegate::sync_dir(self, dir)
    }
    fn create_dir_all(&self, dir: &Path, mode: u32) -> io::Result<()> {
        Delegate::create_dir_all(self, dir, mode)
    }
    fn facts(&self, path: &Path) -> io::Result<Option<FileFacts>> {
        Delegate::facts(self, path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        Delegate::list_dir(self, dir)
    }
    fn remove_cache_file(&self, path: &Path) -> io::Result<()> {
        Delegate::remove_cache_file(self, path)
    }
    fn rename_exchange(&self, a: &Path, b: &Path) -> io::Result<()> {
        Delegate::rename_exchange(self, a, b)
    }
    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()> {
        Delegate::rename_noreplace(self, from, to)
    }
    fn open_in_place(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Delegate::open_in_place(self, path)
    }
}

/// An open file's double, as [`Delegate`] is the storage's: every method goes to `inner`
/// unless the double overrides it. Whatever implements it is a `StorageFile`.
#[cfg(feature = "test-support")]
pub trait DelegateFile: Send + Sync {
    /// The file every call not overridden goes to.
    fn inner(&self) -> &dyn StorageFile;
    fn len(&self) -> io::Result<u64> {
        self.inner().len()
    }
    fn is_empty(&self) -> io::Result<bool> {
        self.inner().is_empty()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner().read_at(buf, offset)
    }
    fn append(&self, bytes: &[u8]) -> io::Result<()> {
        self.inner().append(bytes)
    }
    fn write_at(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        self.inner().write_at(bytes, offset)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner().set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner().sync_data()
    }
    fn identity(&self) -> io::Result<Option<FileId>> {
        self.inner().identity()
    }
    fn is_linked(&self) -> io::Result<bool> {
        self.inner().is_linked()
    }
    fn try_claim(&self) -> io::Result<Option<FileFacts>> {
        self.inner().try_claim()
    }
}

#[cfg(feature = "test-support")]
impl<T: DelegateFile> StorageFile for T {
    fn len(&self) -> io::Result<u64> {
        DelegateFile::len(self)
    }
    fn is_empty(&self) -> io::Result<bool> {
        DelegateFile::is_empty(self)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        DelegateFile::read_at(self, buf, offset)
    }
    fn append(&self, bytes: &[u8]) -> io::Result<()> {
        DelegateFile::append(self, bytes)
    }
    fn write_at(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        DelegateFile::write_at(self, bytes, offset)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        DelegateFile::set_len(self, len)
    }
    fn sync_data(&self) -> io::Result<()> {
        DelegateFile::sync_data(self)
    }
    fn identity(&self) -> io::Result<Option<FileId>> {
        DelegateFile::identity(self)
    }
    fn is_linked(&self) -> io::Result<bool> {
        DelegateFile::is_linked(self)
    }
    fn try_claim(&self) -> io::Result<Option<FileFacts>> {
        DelegateFile::try_claim(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn write_replacing_reuses_the_replaced_version_as_the_next_spare() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checklist.json");
        let spare = dir.path().join(".checklist.json.spare");
        write_replacing(&RealDisk, &path, b"one").unwrap();
        assert!(!spare.exists(), "nothing was replaced yet");
        let first = std::fs::metadata(&path).unwrap().ino();
        write_replacing(&RealDisk, &path, b"two, longer").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two, longer");
        assert_eq!(std::fs::metadata(&spare).unwrap().ino(), first, "the replaced version is kept as the spare, not freed");
        write_replacing(&RealDisk, &path, b"3").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"3", "a shorter version is cut to its length");
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), first, "the spare was written and swapped in");
        assert_eq!(names_in(dir.path()), vec![".checklist.json.spare", "checklist.json"], "no temp file is left");
    }

    /// The appender rewrites bytes of the journal where they are (gap G1) through
    /// `open_in_place`: a file from `open_rw` is opened to append, and Linux's `pwrite`
    /// then writes at the end whatever the offset.
    #[test]
    fn open_in_place_writes_at_the_offset_where_open_rw_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        std::fs::write(&path, b"abcdef").unwrap();
        RealDisk.open_in_place(&path).unwrap().write_at(b"XY", 1).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"aXYdef");
        RealDisk.open_rw(&path).unwrap().write_at(b"Z", 0).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"aXYdefZ");
    }

    #[test]
    fn write_replacing_never_writes_through_a_planted_spare() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        write_replacing(&RealDisk, &path, b"v1").unwrap();
        let spare = dir.path().join(".state.json.spare");
        std::fs::hard_link(&victim, &spare).unwrap();
        write_replacing(&RealDisk, &path, b"v2").unwrap();
        std::fs::remove_file(&spare).ok();
        std::os::unix::fs::symlink(&victim, &spare).unwrap();
        write_replacing(&RealDisk, &path, b"v3").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "neither a hard link nor a symlink as the spare is written through");
        assert_eq!(std::fs::read(&path).unwrap(), b"v3");
    }

    /// A spare another writer holds (its lock) is left to it: this call writes a fresh
    /// file, and the held spare's bytes are untouched.
    #[test]
    fn write_replacing_never_writes_a_spare_another_writer_holds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checklist.json");
        let spare = dir.path().join(".checklist.json.spare");
        write_replacing(&RealDisk, &path, b"v1").unwrap();
        write_replacing(&RealDisk, &path, b"v2").unwrap();
        assert_eq!(std::fs::read(&spare).unwrap(), b"v1", "the replaced version is the spare");
        let held = std::fs::OpenOptions::new().read(true).write(true).open(&spare).unwrap();
        <File as fs4::FileExt>::try_lock(&held).unwrap();
        write_replacing(&RealDisk, &path, b"v3").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"v3");
        let mut seen = Vec::new();
        std::io::Read::read_to_end(&mut &held, &mut seen).unwrap();
        assert_eq!(seen, b"v1", "the held spare was not written");
        drop(held);
        write_replacing(&RealDisk, &path, b"v4").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"v4");
        assert_eq!(names_in(dir.path()), vec![".checklist.json.spare", "checklist.json"], "no temp file is left");
    }

    /// The real disk, except that opening the spare lets "another writer" swap it in
    /// right after the open: the file opened is then the live one, and must not be
    /// written or swapped back out.
    struct SwapAfterOpen {
        path: PathBuf,
    }

    impl Delegate for SwapAfterOpen {
        fn inner(&self) -> &dyn Storage {
            &RealDisk
        }
        fn open_or_create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
            let f = RealDisk.open_or_create(path)?;
            if path.to_string_lossy().ends_with(".spare") {
                // Another writer's claim, write and swap, all between this open and the lock.
                std::fs::write(path, b"the other writer's version").unwrap();
                RealDisk.rename_exchange(path, &self.path).unwrap();
            }
            Ok(f)
        }
    }

    /// The real disk, except that folder syncs fail and every file counts its data syncs.
    struct FailingDirSyncs {
        file_syncs: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    struct CountedFile {
        inner: Box<dyn StorageFile>,
        syncs: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl DelegateFile for CountedFile {
        fn inner(&self) -> &dyn StorageFile {
            self.inner.as_ref()
        }
        fn sync_data(&self) -> io::Result<()> {
            self.syncs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.inner.sync_data()
        }
    }

    impl Delegate for FailingDirSyncs {
        fn inner(&self) -> &dyn Storage {
            &RealDisk
        }
        fn file(&self, inner: Box<dyn StorageFile>) -> Box<dyn StorageFile> {
            Box::new(CountedFile { inner, syncs: self.file_syncs.clone() })
        }
        fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
            Err(io::Error::from_raw_os_error(libc::EIO))
        }
    }

    #[test]
    fn a_delegating_double_changes_only_what_it_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let syncs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let disk = FailingDirSyncs { file_syncs: syncs.clone() };
        let err = write_atomic(&disk, &dir.path().join("state.json"), b"v1", true).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "the overridden folder sync is the one called");
        assert_eq!(syncs.load(std::sync::atomic::Ordering::SeqCst), 1, "the opened file went through `file`");
        assert_eq!(std::fs::read(dir.path().join("state.json")).unwrap(), b"v1", "the rename reached the real disk");
        let f = Storage::open_read(&disk, &dir.path().join("state.json")).unwrap();
        assert!(f.identity().unwrap().is_some(), "what no double overrides is the real disk's answer");
    }

    #[test]
    fn a_spare_swapped_in_by_another_writer_after_the_open_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checklist.json");
        write_replacing(&RealDisk, &path, b"v1").unwrap();
        write_replacing(&RealDisk, &path, b"v2").unwrap();
        write_replacing(&SwapAfterOpen { path: path.clone() }, &path, b"v3").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"v3", "this writer's version is the file, whole");
        assert_eq!(names_in(dir.path()), vec![".checklist.json.spare", "checklist.json"], "no temp file is left");
    }

    #[test]
    fn concurrent_write_replacing_leaves_one_whole_version_and_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checklist.json");
        let version = |w: usize, n: usize| format!("writer {w} version {n} {}", "x".repeat(3000 + 700 * w)).into_bytes();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let missing = std::sync::atomic::AtomicUsize::new(0);
        write_replacing(&RealDisk, &path, &version(0, 0)).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if std::fs::metadata(&path).is_err() {
                        missing.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
            let writers: Vec<_> = (0..6)
                .map(|w| {
                    let (path, version) = (&path, &version);
                    s.spawn(move || (0..150).for_each(|n| write_replacing(&RealDisk, path, &version(w, n)).unwrap()))
                })
                .collect();
            // Stop the watcher before any writer's failure is raised, or the scope would
            // wait for it forever.
            let joined: Vec<_> = writers.into_iter().map(|h| h.join()).collect();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            joined.into_iter().for_each(|j| j.unwrap());
        });
        assert_eq!(missing.load(std::sync::atomic::Ordering::Relaxed), 0, "the file is always there: swapped, never removed");
        let last = std::fs::read(&path).unwrap();
        assert!((0..6).any(|w| last == version(w, 149)), "one writer's last version, whole");
        let names = names_in(dir.path());
        assert!(names.iter().all(|n| n == "checklist.json" || n == ".checklist.json.spare"), "no temp file left: {names:?}");
    }

    #[test]
    fn stale_temp_files_of_dead_writers_are_swept_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        // pid 0x7fff_fff0 is above any real pid on Linux (pid_max is at most 4194304).
        let dead = dir.path().join(".checklist.json.tmp-2147483632-0");
        let live = dir.path().join(format!(".state.json.tmp-{}-3", std::process::id()));
        let other = dir.path().join("journal.jsonl");
        for p in [&dead, &live, &other] {
            std::fs::write(p, b"x").unwrap();
        }
        assert_eq!(remove_stale_temp_files(&RealDisk, dir.path()).unwrap(), 1);
        assert!(!dead.exists() && live.exists() && other.exists());
        assert_eq!(stale_temp_pid(".a.tmp-12-0"), Some(12));
        assert_eq!(stale_temp_pid("a.tmp-12-0"), None);
        assert_eq!(stale_temp_pid(".a.tmp-x-0"), None);
    }
}
