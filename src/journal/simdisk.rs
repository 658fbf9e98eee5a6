//! A simulated disk for crash and fault tests: an implementation of the storage seam
//! (`Storage`, `StorageFile`) that keeps what was written apart from what is durable, and
//! at a crash keeps only what a real file system may keep. Everything it decides comes from
//! a seed, so a failure found with one seed is found again with it.
//!
//! # The model
//!
//! Each file (an inode) has its **durable** bytes, its **current** bytes (what reads see)
//! and the list of **unsynced writes** since its last `sync_data`. Each folder has its
//! **durable** names, its **current** names and the list of **unsynced name changes** since
//! its last `sync_dir`. A folder's own name is a name in its parent. As on ext4 and POSIX,
//! a file's `sync_data` makes its bytes durable, never its name: a new name is durable only
//! once its folder is synced. `crash(seed)` builds the disk a power loss leaves, as a new
//! `SimDisk`; the old one is off for good (every later call fails).
//!
//! | operation | until synced | what `crash` can do with it | made durable by | journal-format/SPEC.md |
//! |---|---|---|---|---|
//! | `append`, `write_at` | read back at once; kept as an unsynced write | drop it; keep it whole; tear it at any byte (a prefix); tear it and zero-fill the rest up to its end (the size reached the disk, the data did not: what delayed allocation leaves). A file's kept writes are applied in any order. In block mode each 512-byte or 4 KiB piece is decided alone, so a middle page can be lost and a later one kept | `sync_data` of the file | §8.3 steps 8-9, "power loss before the sync": NULs, fragments, lines; corruption when a kept line follows a lost page (§6.5) |
//! | `set_len` | the length changes at once | kept or dropped, in any order with the writes | `sync_data` | §8.3 step 6, §9 step 4: the cut of a torn tail |
//! | `create_new`, `open_or_create` (a new name) | the name is there at once | the name kept or dropped; a file whose name is dropped is gone, synced data and all | `sync_dir` of its folder (not the file's `sync_data`) | §8.1 / §8.3 last row: a temp file, no journal |
//! | `rename` | both names change at once | kept or dropped as one change (both names move or neither); a kept rename of a file whose bytes were never synced leaves an empty, torn or zero-filled file under the new name | `sync_dir` of the target's folder (a move across folders: each folder's half with its own sync) | §8.1: the genesis renamed over the name; projections |
//! | `remove_cache_file` | the name is gone at once | kept or dropped; a dropped removal brings the file back with its durable bytes | `sync_dir` | §12: pruned checkpoints |
//! | `create_dir_all` | the folders are there at once | each new folder's name in its parent kept or dropped; a dropped folder loses everything under it | `sync_dir` of the parent | §9 step 1: `quarantine/` |
//! | `sync_data` | durable = durable + every unsynced write, in order | — | — | §8.2 steps 3 and 9 |
//! | `sync_data` failing (EIO, injected) | fsyncgate: each unsynced write either reached the disk or is dropped for good, while reads still see it until the crash; the error is reported once, and a later sync of the file succeeds without writing what was dropped | the dropped writes are never on the disk | — | §8.3 step 9, "`fdatasync` fails" |
//! | `sync_dir` failing (EIO, injected) | each unsynced name change reached the disk or is dropped for good; reported once | the dropped changes are never on the disk | — | §8.1 |
//! | `append`, `write_at` failing (EIO, injected) | a random prefix of the bytes (perhaps none) reached the page cache, as an unsynced write | as for any unsynced write | `sync_data` | §8.3 step 8, "partial write" |
//! | `set_len` failing (EIO, injected) | nothing changes | — | — | — |
//! | kill before the Nth update (injected: SIGKILL) | every later call through that process's mount fails; its unsynced writes stay in the page cache for the next process | as for any unsynced write | the next process's `sync_data` | §8.2 step 3: the next appender syncs first |
//! | power cut before the Nth update (injected) | that call and every later one fail, reads included: the machine is off | `crash(seed)` builds the disk from the state at the cut | — | §8.3, every row |
//!
//! A crash decides, per crash: how likely each unsynced change is to be kept (never, a
//! quarter, half, three quarters, always: the extremes come up often), whether writes are
//! decided whole (a third of crashes) or per 512-byte or 4 KiB block, whether kept writes
//! are applied in order, and whether they tear. `crash_with` forces
//! "keep nothing" or "keep everything" for tests that need one case.
//!
//! Not modelled: bit rot, misdirected writes, symlinks, hard links, renaming folders, other
//! users. Paths are absolute; `..` is refused. `with_mount(prefix)` gives a view of the
//! same disk whose paths all start with `prefix` (stripped before lookup), so a test can
//! give each simulated process its own spelling of the same paths: abcd's poisoning after
//! a failed sync is per process and keyed by the journal path.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::storage::{FileFacts, FileId, SharedStorage, Storage, StorageFile};

/// The trace keeps this many most recent lines.
const TRACE_LINES_MAX: usize = 400;
/// Block sizes a crash may decide writes by (512 twice as often: more pieces per write).
const CRASH_BLOCK_SIZES: [u64; 3] = [512, 512, 4096];

/// SplitMix64: small, fast, and the same on every platform. Tests use it too, so every
/// decision of a simulated run comes from one seed.
#[derive(Clone, Debug)]
pub struct SimRng(u64);

impl SimRng {
    pub fn new(seed: u64) -> SimRng {
        SimRng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// What a failed sync does with the changes it was asked to make durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailedSync {
    /// Linux since 4.13 (fsyncgate): each unsynced change either reached the disk or is
    /// dropped for good; reads keep seeing dropped data until the crash; reported once.
    #[default]
    Fsyncgate,
    /// Every unsynced change is dropped for good.
    DropAll,
    /// Nothing is lost: the changes stay unsynced and a later sync may still write them.
    KeepDirty,
}

/// Faults to inject, counted from the moment they are set (1 = the next one).
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Which `sync_data` calls fail with EIO.
    pub fail_sync_data: Vec<u64>,
    /// Which `sync_dir` calls fail with EIO.
    pub fail_sync_dir: Vec<u64>,
    /// Which data writes (`append`, `write_at`, `set_len`) fail with EIO.
    pub fail_write: Vec<u64>,
    /// The machine loses power just before this update (a write, `set_len`, a sync, a
    /// create, a rename, a removal or a new folder).
    pub power_cut_before_update: Option<u64>,
    /// The process making this update is killed just before it (SIGKILL): every later
    /// call through its mount fails, while its unsynced writes stay in the page cache.
    pub kill_before_update: Option<u64>,
    /// The power goes, or the calling process is killed, just before this `sync_data`
    /// call: the moment a write waits for its sync (§8.3 steps 8-9).
    pub power_cut_before_sync_data: Option<u64>,
    pub kill_before_sync_data: Option<u64>,
    pub failed_sync: FailedSync,
}

/// How many calls of each kind the disk has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub updates: u64,
    pub sync_data: u64,
    pub sync_dir: u64,
    pub writes: u64,
}

/// A fault the disk injected, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Injected {
    SyncData(PathBuf),
    SyncDir(PathBuf),
    Write(PathBuf),
    PowerCut,
    /// The process using this mount was killed.
    Kill(PathBuf),
}

/// Which unsynced changes a crash keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Decided from the seed (see the module comment).
    Random,
    /// Only what was synced survives.
    Nothing,
    /// Everything written survives, in order, untorn (a clean shutdown).
    Everything,
}

#[derive(Clone, Debug)]
enum DataOp {
    Write { offset: u64, bytes: Vec<u8> },
    SetLen(u64),
}

#[derive(Clone, Debug, Default)]
struct Inode {
    durable: Vec<u8>,
    current: Vec<u8>,
    unsynced: Vec<DataOp>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    File(u64),
    Dir,
}

#[derive(Clone, Debug)]
enum NameChange {
    Link { name: OsString, entry: Entry },
    Unlink { name: OsString, entry: Entry },
}

#[derive(Clone, Debug)]
struct NameOp {
    /// Both halves of a rename carry one id: a crash keeps both or neither.
    id: u64,
    change: NameChange,
}

#[derive(Clone, Debug, Default)]
struct Dir {
    durable: BTreeMap<OsString, Entry>,
    current: BTreeMap<OsString, Entry>,
    unsynced: Vec<NameOp>,
}

#[derive(Debug)]
struct State {
    rng: SimRng,
    inodes: HashMap<u64, Inode>,
    next_ino: u64,
    /// Every folder by its full path; "/" always exists.
    dirs: BTreeMap<PathBuf, Dir>,
    next_name_op: u64,
    faults: Faults,
    /// The counts when `faults` were set.
    fault_base: Counts,
    counts: Counts,
    off: Option<&'static str>,
    /// Mounts whose process was killed.
    dead: BTreeSet<PathBuf>,
    injected: Vec<Injected>,
    trace: VecDeque<String>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
}

/// The simulated disk. Clones share one disk.
#[derive(Clone, Debug)]
pub struct SimDisk {
    shared: Arc<Shared>,
    mount: Option<PathBuf>,
}

fn eio() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

fn power_off_error(why: &str) -> io::Error {
    io::Error::other(format!("simulated disk: {why}; the machine is off"))
}

fn apply_name_change(names: &mut BTreeMap<OsString, Entry>, change: &NameChange) {
    match change {
        NameChange::Link { name, entry } => {
            names.insert(name.clone(), *entry);
        }
        NameChange::Unlink { name, entry } => {
            if names.get(name) == Some(entry) {
                names.remove(name);
            }
        }
    }
}

fn write_into(image: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let offset = offset as usize;
    if image.len() < offset {
        image.resize(offset, 0);
    }
    let overlap = (image.len() - offset).min(bytes.len());
    image[offset..offset + overlap].copy_from_slice(&bytes[..overlap]);
    image.extend_from_slice(&bytes[overlap..]);
}

fn apply_data_op(image: &mut Vec<u8>, op: &DataOp) {
    match op {
        DataOp::Write { offset, bytes } => write_into(image, *offset, bytes),
        DataOp::SetLen(len) => image.resize(*len as usize, 0),
    }
}

impl State {
    fn new(seed: u64) -> State {
        let mut dirs = BTreeMap::new();
        dirs.insert(PathBuf::from("/"), Dir::default());
        State {
            rng: SimRng::new(seed),
            inodes: HashMap::new(),
            next_ino: 1,
            dirs,
            next_name_op: 1,
            faults: Faults::default(),
            fault_base: Counts::default(),
            counts: Counts::default(),
            off: None,
            dead: BTreeSet::new(),
            injected: Vec::new(),
            trace: VecDeque::new(),
        }
    }

    fn note(&mut self, line: String) {
        if self.trace.len() == TRACE_LINES_MAX {
            self.trace.pop_front();
        }
        self.trace.push_back(line);
    }

    /// Fails when the machine is off or the calling process (its mount) was killed.
    fn check_on(&self, mount: &Path) -> io::Result<()> {
        match self.off {
            Some(why) => Err(power_off_error(why)),
            None if self.dead.contains(mount) => {
                Err(io::Error::other(format!("simulated disk: the process using {} was killed", mount.display())))
            }
            None => Ok(()),
        }
    }

    /// Every update passes here first: a power cut or a kill lands before the update it
    /// names.
    fn begin_update(&mut self, what: &str, mount: &Path) -> io::Result<()> {
        self.check_on(mount)?;
        self.counts.updates += 1;
        let n = self.counts.updates - self.fault_base.updates;
        if self.faults.power_cut_before_update == Some(n) {
            self.off = Some("power cut");
            self.injected.push(Injected::PowerCut);
            self.note(format!("POWER CUT before update {} ({what})", self.counts.updates));
            return Err(power_off_error("power cut"));
        }
        if self.faults.kill_before_update == Some(n) {
            self.dead.insert(mount.to_owned());
            self.injected.push(Injected::Kill(mount.to_owned()));
            self.note(format!("KILL of the process using {} before update {} ({what})", mount.display(), self.counts.updates));
            return self.check_on(mount);
        }
        Ok(())
    }

    fn lookup(&self, path: &Path) -> Option<Entry> {
        if path == Path::new("/") {
            return Some(Entry::Dir);
        }
        let parent = path.parent()?;
        let name = path.file_name()?;
        self.dirs.get(parent)?.current.get(name).copied()
    }

    fn new_name_op(&mut self) -> u64 {
        self.next_name_op += 1;
        self.next_name_op
    }

    fn link(&mut self, path: &Path, entry: Entry, id: u64) {
        let parent = path.parent().expect("not the root");
        let name = path.file_name().expect("has a name").to_owned();
        let dir = self.dirs.get_mut(parent).expect("parent exists");
        dir.current.insert(name.clone(), entry);
        dir.unsynced.push(NameOp { id, change: NameChange::Link { name, entry } });
    }

    fn unlink(&mut self, path: &Path, entry: Entry, id: u64) {
        let parent = path.parent().expect("not the root");
        let name = path.file_name().expect("has a name").to_owned();
        let dir = self.dirs.get_mut(parent).expect("parent exists");
        dir.current.remove(&name);
        dir.unsynced.push(NameOp { id, change: NameChange::Unlink { name, entry } });
    }

    fn parent_dir_exists(&self, path: &Path) -> io::Result<()> {
        let parent = path.parent().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the root is not a file"))?;
        match self.lookup(parent) {
            Some(Entry::Dir) => Ok(()),
            Some(Entry::File(_)) => Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
            None => Err(io::Error::new(io::ErrorKind::NotFound, format!("{}: no such folder", parent.display()))),
        }
    }

    fn new_file(&mut self, path: &Path) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(ino, Inode::default());
        let id = self.new_name_op();
        self.link(path, Entry::File(ino), id);
        ino
    }

    /// Whether the `n`th call of a kind (counted since the faults were set) must fail.
    fn fault_due(list: &[u64], count: u64, base: u64) -> bool {
        list.contains(&(count - base))
    }

    /// What a failed sync leaves of the unsynced changes: those that reached the disk
    /// (`true`) and those dropped for good (`false`); `None` keeps them all unsynced.
    fn failed_sync_fates(&mut self, n: usize) -> Option<Vec<bool>> {
        match self.faults.failed_sync {
            FailedSync::KeepDirty => None,
            FailedSync::DropAll => Some(vec![false; n]),
            FailedSync::Fsyncgate => Some((0..n).map(|_| self.rng.chance(1, 3)).collect()),
        }
    }

    fn sync_data(&mut self, ino: u64, path: &Path, mount: &Path) -> io::Result<()> {
        self.check_on(mount)?;
        let n = self.counts.sync_data + 1 - self.fault_base.sync_data;
        if self.faults.power_cut_before_sync_data == Some(n) {
            self.faults.power_cut_before_update = Some(self.counts.updates + 1 - self.fault_base.updates);
        }
        if self.faults.kill_before_sync_data == Some(n) {
            self.faults.kill_before_update = Some(self.counts.updates + 1 - self.fault_base.updates);
        }
        self.begin_update("sync_data", mount)?;
        self.counts.sync_data += 1;
        let fail = Self::fault_due(&self.faults.fail_sync_data, self.counts.sync_data, self.fault_base.sync_data);
        let n = self.inodes[&ino].unsynced.len();
        if fail {
            let fates = self.failed_sync_fates(n);
            let inode = self.inodes.get_mut(&ino).expect("open inode exists");
            if let Some(fates) = &fates {
                for (op, &reached) in std::mem::take(&mut inode.unsynced).iter().zip(fates) {
                    if reached {
                        apply_data_op(&mut inode.durable, op);
                    }
                }
            }
            self.injected.push(Injected::SyncData(path.to_owned()));
            self.note(format!("sync_data {} FAILED (EIO): {n} unsynced writes, fates {fates:?}", path.display()));
            return Err(eio());
        }
        let inode = self.inodes.get_mut(&ino).expect("open inode exists");
        for op in std::mem::take(&mut inode.unsynced) {
            apply_data_op(&mut inode.durable, &op);
        }
        let len = inode.durable.len();
        self.note(format!("sync_data {} ({n} writes durable, {len} bytes)", path.display()));
        Ok(())
    }

    fn sync_dir(&mut self, path: &Path, mount: &Path) -> io::Result<()> {
        self.begin_update("sync_dir", mount)?;
        self.counts.sync_dir += 1;
        let fail = Self::fault_due(&self.faults.fail_sync_dir, self.counts.sync_dir, self.fault_base.sync_dir);
        let n = self.dirs[path].unsynced.len();
        let fates = if fail { self.failed_sync_fates(n) } else { Some(vec![true; n]) };
        let dir = self.dirs.get_mut(path).expect("checked");
        if let Some(fates) = &fates {
            for (op, &reached) in std::mem::take(&mut dir.unsynced).iter().zip(fates) {
                if reached {
                    apply_name_change(&mut dir.durable, &op.change);
                }
            }
        }
        if fail {
            self.injected.push(Injected::SyncDir(path.to_owned()));
            self.note(format!("sync_dir {} FAILED (EIO): {n} unsynced name changes, fates {fates:?}", path.display()));
            return Err(eio());
        }
        self.note(format!("sync_dir {} ({n} name changes durable)", path.display()));
        Ok(())
    }

    /// Checks a data write against the fault plan; `Some(kept)` when it must fail after
    /// `kept` of its bytes reached the page cache.
    fn write_fault(&mut self, len: usize, mount: &Path) -> io::Result<Option<usize>> {
        self.begin_update("write", mount)?;
        self.counts.writes += 1;
        if Self::fault_due(&self.faults.fail_write, self.counts.writes, self.fault_base.writes) {
            return Ok(Some(self.rng.below(len as u64 + 1) as usize));
        }
        Ok(None)
    }

    fn write(&mut self, ino: u64, path: &Path, mount: &Path, offset: Option<u64>, bytes: &[u8]) -> io::Result<()> {
        let fault = self.write_fault(bytes.len(), mount)?;
        let inode = self.inodes.get_mut(&ino).expect("open inode exists");
        let offset = offset.unwrap_or(inode.current.len() as u64);
        let kept = fault.unwrap_or(bytes.len());
        if kept > 0 {
            write_into(&mut inode.current, offset, &bytes[..kept]);
            inode.unsynced.push(DataOp::Write { offset, bytes: bytes[..kept].to_vec() });
        }
        if fault.is_some() {
            self.injected.push(Injected::Write(path.to_owned()));
            self.note(format!("write {} at {offset}: {} bytes FAILED (EIO) after {kept}", path.display(), bytes.len()));
            return Err(eio());
        }
        self.note(format!("write {} at {offset}: {} bytes", path.display(), bytes.len()));
        Ok(())
    }

    fn set_len(&mut self, ino: u64, path: &Path, mount: &Path, len: u64) -> io::Result<()> {
        if self.write_fault(0, mount)?.is_some() {
            self.injected.push(Injected::Write(path.to_owned()));
            self.note(format!("set_len {} to {len} FAILED (EIO)", path.display()));
            return Err(eio());
        }
        let inode = self.inodes.get_mut(&ino).expect("open inode exists");
        inode.current.resize(len as usize, 0);
        inode.unsynced.push(DataOp::SetLen(len));
        self.note(format!("set_len {} to {len}", path.display()));
        Ok(())
    }

    /// The disk a power loss leaves (see the module comment).
    fn crashed(&self, seed: u64, keep: Keep) -> State {
        let mut rng = SimRng::new(seed);
        let (keep_num, keep_den) = match keep {
            Keep::Nothing => (0, 1),
            Keep::Everything => (1, 1),
            Keep::Random => *rng.pick(&[(0, 1), (1, 4), (1, 2), (3, 4), (1, 1)]),
        };
        let block = match keep {
            Keep::Random if rng.chance(2, 3) => Some(*rng.pick(&CRASH_BLOCK_SIZES)),
            _ => None,
        };
        let tear = keep == Keep::Random && rng.chance(2, 3);
        let reorder = keep == Keep::Random && rng.chance(1, 2);
        let mut notes = vec![format!(
            "CRASH seed {seed:#x}: keep {keep_num}/{keep_den} of unsynced changes, blocks {block:?}, tear {tear}, reorder {reorder}"
        )];

        // Names: each unsynced change kept or dropped (both halves of a rename alike),
        // applied in order onto the durable names.
        let mut kept_ops: HashMap<u64, bool> = HashMap::new();
        let mut names: BTreeMap<PathBuf, BTreeMap<OsString, Entry>> = BTreeMap::new();
        for (path, dir) in &self.dirs {
            let mut n = dir.durable.clone();
            let (mut kept, mut lost) = (Vec::new(), Vec::new());
            for op in &dir.unsynced {
                let keep_it = *kept_ops.entry(op.id).or_insert_with(|| rng.chance(keep_num, keep_den));
                let word = match &op.change {
                    NameChange::Link { name, .. } => format!("+{}", name.to_string_lossy()),
                    NameChange::Unlink { name, .. } => format!("-{}", name.to_string_lossy()),
                };
                if keep_it {
                    apply_name_change(&mut n, &op.change);
                    kept.push(word);
                } else {
                    lost.push(word);
                }
            }
            if !dir.unsynced.is_empty() {
                notes.push(format!("  {}: names kept [{}] lost [{}]", path.display(), kept.join(" "), lost.join(" ")));
            }
            names.insert(path.clone(), n);
        }
        // What is still reachable from the root.
        let mut dirs = BTreeMap::new();
        let mut files = BTreeSet::new();
        let mut queue = vec![PathBuf::from("/")];
        while let Some(path) = queue.pop() {
            let Some(entries) = names.remove(&path) else { continue };
            for (name, entry) in &entries {
                match entry {
                    Entry::Dir => queue.push(path.join(name)),
                    Entry::File(ino) => {
                        files.insert(*ino);
                    }
                }
            }
            dirs.insert(path, Dir { durable: entries.clone(), current: entries, unsynced: Vec::new() });
        }
        // Bytes: durable, then the kept unsynced writes, in order or not, torn or not.
        let mut inodes = HashMap::new();
        for ino in files {
            let inode = &self.inodes[&ino];
            let mut image = inode.durable.clone();
            let mut pieces: Vec<DataOp> = Vec::new();
            for op in &inode.unsynced {
                match (op, block) {
                    (DataOp::Write { offset, bytes }, Some(block)) => {
                        let mut at = 0usize;
                        while at < bytes.len() {
                            let off = offset + at as u64;
                            let room = (block - off % block) as usize;
                            let take = room.min(bytes.len() - at);
                            pieces.push(DataOp::Write { offset: off, bytes: bytes[at..at + take].to_vec() });
                            at += take;
                        }
                    }
                    _ => pieces.push(op.clone()),
                }
            }
            let total = pieces.len();
            pieces.retain(|_| rng.chance(keep_num, keep_den));
            if reorder {
                rng.shuffle(&mut pieces);
            }
            let kept = pieces.len();
            for piece in pieces {
                match piece {
                    DataOp::Write { offset, bytes } if tear => match rng.below(4) {
                        0 | 1 => write_into(&mut image, offset, &bytes),
                        2 => {
                            let k = rng.below(bytes.len() as u64) as usize;
                            if k > 0 {
                                write_into(&mut image, offset, &bytes[..k]);
                            }
                        }
                        _ => {
                            let k = rng.below(bytes.len() as u64) as usize;
                            write_into(&mut image, offset, &bytes[..k]);
                            let end = (offset as usize) + bytes.len();
                            if image.len() < end {
                                image.resize(end, 0);
                            }
                        }
                    },
                    other => apply_data_op(&mut image, &other),
                }
            }
            if total > 0 {
                notes.push(format!(
                    "  inode {ino}: {kept} of {total} unsynced pieces kept, {} -> {} bytes",
                    inode.durable.len(),
                    image.len()
                ));
            }
            inodes.insert(ino, Inode { durable: image.clone(), current: image, unsynced: Vec::new() });
        }
        let mut state = State::new(seed ^ 0x5EED_0FC4_A54E_D100);
        state.inodes = inodes;
        state.next_ino = self.next_ino;
        state.dirs = dirs;
        state.next_name_op = self.next_name_op;
        for n in notes {
            state.note(n);
        }
        state
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SimDisk {
    /// An empty disk (only "/") whose injected faults decide from `seed`.
    pub fn new(seed: u64) -> SimDisk {
        SimDisk { shared: Arc::new(Shared { state: Mutex::new(State::new(seed)) }), mount: None }
    }

    /// This disk as the storage seam.
    pub fn shared(&self) -> SharedStorage {
        Arc::new(self.clone())
    }

    /// A view of the same disk in which every path starts with `mount`.
    pub fn with_mount(&self, mount: &Path) -> SimDisk {
        SimDisk { shared: self.shared.clone(), mount: Some(mount.to_owned()) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// The mount as the kill list names it ("" for the whole disk).
    fn mount_key(&self) -> PathBuf {
        self.mount.clone().unwrap_or_default()
    }

    /// Whether the process using this mount was killed (`Faults::kill_before_update`).
    pub fn is_killed(&self) -> bool {
        self.state().dead.contains(&self.mount_key())
    }

    /// The disk's own path for a caller's path: the mount stripped, `.` and `//` dropped.
    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        let rest = match &self.mount {
            None => path,
            Some(m) => path.strip_prefix(m).map_err(|_| {
                io::Error::new(io::ErrorKind::NotFound, format!("{} is outside the simulated disk's mount {}", path.display(), m.display()))
            })?,
        };
        let mut out = PathBuf::from("/");
        for c in rest.components() {
            match c {
                Component::RootDir | Component::CurDir => {}
                Component::Normal(n) => out.push(n),
                Component::ParentDir | Component::Prefix(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("the simulated disk refuses `..`: {}", path.display()),
                    ));
                }
            }
        }
        if self.mount.is_none() && !path.is_absolute() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the simulated disk needs absolute paths: {}", path.display()),
            ));
        }
        Ok(out)
    }

    /// Sets the faults to inject, counted from now; clears the list of injected faults.
    pub fn set_faults(&self, faults: Faults) {
        let mut st = self.state();
        st.fault_base = st.counts;
        st.faults = faults;
        st.injected.clear();
    }

    pub fn counts(&self) -> Counts {
        self.state().counts
    }

    /// The faults injected since the last `set_faults`.
    pub fn injected(&self) -> Vec<Injected> {
        self.state().injected.clone()
    }

    /// Cuts the power now: every later call fails until `crash` builds the next disk.
    pub fn power_off(&self) {
        let mut st = self.state();
        if st.off.is_none() {
            st.off = Some("power cut");
            st.note("POWER CUT".into());
        }
    }

    pub fn is_off(&self) -> bool {
        self.state().off.is_some()
    }

    /// The disk a power loss at this instant leaves, decided from `seed`. This disk is off
    /// afterwards: handles opened on it fail, as a dead process's would.
    pub fn crash(&self, seed: u64) -> SimDisk {
        self.crash_with(seed, Keep::Random)
    }

    pub fn crash_with(&self, seed: u64, keep: Keep) -> SimDisk {
        let mut st = self.state();
        st.off = Some("crashed");
        let next = st.crashed(seed, keep);
        SimDisk { shared: Arc::new(Shared { state: Mutex::new(next) }), mount: None }
    }

    /// The last lines of the disk's log: every update, fault and crash decision.
    pub fn trace(&self) -> Vec<String> {
        self.state().trace.iter().cloned().collect()
    }

    /// Test setup: folders that exist and are durable, as if made long ago.
    pub fn setup_dir(&self, path: &Path) -> io::Result<()> {
        let path = self.resolve(path)?;
        self.setup_dir_at(&path)
    }

    fn setup_dir_at(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state();
        let mut at = PathBuf::from("/");
        for c in path.components().skip(1) {
            let child = at.join(c);
            match st.lookup(&child) {
                Some(Entry::Dir) => {}
                Some(Entry::File(_)) => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
                None => {
                    let name = child.file_name().expect("a component").to_owned();
                    let dir = st.dirs.get_mut(&at).expect("walked");
                    dir.current.insert(name.clone(), Entry::Dir);
                    dir.durable.insert(name, Entry::Dir);
                    st.dirs.insert(child.clone(), Dir::default());
                }
            }
            at = child;
        }
        Ok(())
    }

    /// Test setup: a file with these bytes, durable with its name.
    pub fn setup_file(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let path = self.resolve(path)?;
        self.setup_dir_at(path.parent().unwrap_or(Path::new("/")))?;
        let mut st = self.state();
        let ino = st.next_ino;
        st.next_ino += 1;
        st.inodes.insert(ino, Inode { durable: bytes.to_vec(), current: bytes.to_vec(), unsynced: Vec::new() });
        let name = path.file_name().expect("a file name").to_owned();
        let dir = st.dirs.get_mut(path.parent().expect("not the root")).expect("made above");
        dir.current.insert(name.clone(), Entry::File(ino));
        dir.durable.insert(name, Entry::File(ino));
        Ok(())
    }

    /// What a read of the whole file returns now (works on a disk that is off).
    pub fn read(&self, path: &Path) -> Option<Vec<u8>> {
        let path = self.resolve(path).ok()?;
        let st = self.state();
        match st.lookup(&path)? {
            Entry::File(ino) => Some(st.inodes[&ino].current.clone()),
            Entry::Dir => None,
        }
    }

    /// Whether a name exists now.
    pub fn exists(&self, path: &Path) -> bool {
        self.resolve(path).is_ok_and(|p| self.state().lookup(&p).is_some())
    }

    /// Whether a crash keeps the file's bytes as reads see them now: no unsynced write, and
    /// nothing a failed sync dropped. True for a missing file.
    pub fn bytes_are_durable(&self, path: &Path) -> bool {
        let Ok(path) = self.resolve(path) else { return false };
        let st = self.state();
        match st.lookup(&path) {
            Some(Entry::File(ino)) => {
                let inode = &st.inodes[&ino];
                inode.unsynced.is_empty() && inode.current == inode.durable
            }
            _ => true,
        }
    }

    /// Whether a crash keeps the name for sure: it and every folder above it are durable
    /// names in their folders (what only `sync_dir` of each parent guarantees).
    pub fn name_is_durable(&self, path: &Path) -> bool {
        let Ok(path) = self.resolve(path) else { return false };
        let st = self.state();
        let mut at = PathBuf::from("/");
        for c in path.components().skip(1) {
            let Some(dir) = st.dirs.get(&at) else { return false };
            if !dir.durable.contains_key(c.as_os_str()) {
                return false;
            }
            at.push(c);
        }
        true
    }

    fn open(&self, path: &Path, writable: bool) -> io::Result<Box<dyn StorageFile>> {
        let path = self.resolve(path)?;
        let st = self.state();
        st.check_on(&self.mount_key())?;
        match st.lookup(&path) {
            Some(Entry::File(ino)) => Ok(Box::new(SimFile { shared: self.shared.clone(), ino, path, mount: self.mount_key(), writable })),
            Some(Entry::Dir) => Err(io::Error::from_raw_os_error(libc::EISDIR)),
            None => Err(io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file", path.display()))),
        }
    }
}

impl Storage for SimDisk {
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.open(path, true)
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.open(path, false)
    }

    /// Every simulated file writes in place (`append` is its own call).
    fn open_in_place(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.open(path, true)
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let path = self.resolve(path)?;
        let mut st = self.state();
        st.check_on(&self.mount_key())?;
        st.parent_dir_exists(&path)?;
        if st.lookup(&path).is_some() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} exists", path.display())));
        }
        st.begin_update("create", &self.mount_key())?;
        let ino = st.new_file(&path);
        st.note(format!("create {} (inode {ino})", path.display()));
        Ok(Box::new(SimFile { shared: self.shared.clone(), ino, path, mount: self.mount_key(), writable: true }))
    }

    fn open_or_create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let resolved = self.resolve(path)?;
        let exists = {
            let st = self.state();
            st.check_on(&self.mount_key())?;
            st.lookup(&resolved).is_some()
        };
        if exists { self.open(path, true) } else { self.create_new(path) }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from, to) = (self.resolve(from)?, self.resolve(to)?);
        let mut st = self.state();
        st.check_on(&self.mount_key())?;
        let entry = match st.lookup(&from) {
            Some(e @ Entry::File(_)) => e,
            Some(Entry::Dir) => return Err(io::Error::new(io::ErrorKind::Unsupported, "the simulated disk does not rename folders")),
            None => return Err(io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file", from.display()))),
        };
        st.parent_dir_exists(&to)?;
        if st.lookup(&to) == Some(Entry::Dir) {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        }
        if from == to {
            return Ok(());
        }
        st.begin_update("rename", &self.mount_key())?;
        let id = st.new_name_op();
        st.unlink(&from, entry, id);
        st.link(&to, entry, id);
        st.note(format!("rename {} -> {}", from.display(), to.display()));
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let dir = self.resolve(dir)?;
        let mut st = self.state();
        st.check_on(&self.mount_key())?;
        match st.lookup(&dir) {
            Some(Entry::Dir) => st.sync_dir(&dir, &self.mount_key()),
            Some(Entry::File(_)) => Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
            None => Err(io::Error::new(io::ErrorKind::NotFound, format!("{}: no such folder", dir.display()))),
        }
    }

    fn create_dir_all(&self, dir: &Path, _mode: u32) -> io::Result<()> {
        let dir = self.resolve(dir)?;
        let mut st = self.state();
        st.check_on(&self.mount_key())?;
        let mut at = PathBuf::from("/");
        for c in dir.components().skip(1) {
            let child = at.join(c);
            match st.lookup(&child) {
                Some(Entry::Dir) => {}
                Some(Entry::File(_)) => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
                None => {
                    st.begin_update("mkdir", &self.mount_key())?;
                    st.dirs.insert(child.clone(), Dir::default());
                    let id = st.new_name_op();
                    st.link(&child, Entry::Dir, id);
                    st.note(format!("mkdir {}", child.display()));
                }
            }
            at = child;
        }
        Ok(())
    }

    fn facts(&self, path: &Path) -> io::Result<Option<FileFacts>> {
        let path = self.resolve(path)?;
        let st = self.state();
        st.check_on(&self.mount_key())?;
        let uid = super::storage::current_uid();
        Ok(st.lookup(&path).map(|e| match e {
            Entry::File(ino) => FileFacts {
                is_file: true,
                is_dir: false,
                is_symlink: false,
                uid,
                mode: 0o100_600,
                len: st.inodes[&ino].current.len() as u64,
                id: Some(FileId { dev: 0, ino }),
                links: 1,
            },
            Entry::Dir => {
                FileFacts { is_file: false, is_dir: true, is_symlink: false, uid, mode: 0o040_700, len: 4096, id: None, links: 1 }
            }
        }))
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let resolved = self.resolve(dir)?;
        let st = self.state();
        st.check_on(&self.mount_key())?;
        match st.lookup(&resolved) {
            Some(Entry::Dir) => Ok(st.dirs[&resolved].current.keys().map(|n| dir.join(n)).collect()),
            Some(Entry::File(_)) => Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
            None => Ok(Vec::new()),
        }
    }

    fn remove_cache_file(&self, path: &Path) -> io::Result<()> {
        let path = self.resolve(path)?;
        let mut st = self.state();
        st.check_on(&self.mount_key())?;
        match st.lookup(&path) {
            Some(e @ Entry::File(_)) => {
                st.begin_update("remove", &self.mount_key())?;
                let id = st.new_name_op();
                st.unlink(&path, e, id);
                st.note(format!("remove {}", path.display()));
                Ok(())
            }
            Some(Entry::Dir) => Err(io::Error::from_raw_os_error(libc::EISDIR)),
            None => Err(io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file", path.display()))),
        }
    }
}

/// An open file on the simulated disk: an inode, which outlives its name.
struct SimFile {
    shared: Arc<Shared>,
    ino: u64,
    /// The disk's path it was opened by, for the trace.
    path: PathBuf,
    /// The mount of the process that opened it.
    mount: PathBuf,
    writable: bool,
}

impl SimFile {
    fn writable(&self) -> io::Result<()> {
        if self.writable { Ok(()) } else { Err(io::Error::from_raw_os_error(libc::EBADF)) }
    }
}

impl StorageFile for SimFile {
    fn len(&self) -> io::Result<u64> {
        let st = self.shared.lock();
        st.check_on(&self.mount)?;
        Ok(st.inodes[&self.ino].current.len() as u64)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let st = self.shared.lock();
        st.check_on(&self.mount)?;
        let data = &st.inodes[&self.ino].current;
        let start = (offset as usize).min(data.len());
        let n = (data.len() - start).min(buf.len());
        buf[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }

    fn append(&self, bytes: &[u8]) -> io::Result<()> {
        self.writable()?;
        self.shared.lock().write(self.ino, &self.path, &self.mount, None, bytes)
    }

    fn write_at(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        self.writable()?;
        self.shared.lock().write(self.ino, &self.path, &self.mount, Some(offset), bytes)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.writable()?;
        self.shared.lock().set_len(self.ino, &self.path, &self.mount, len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.shared.lock().sync_data(self.ino, &self.path, &self.mount)
    }

    fn identity(&self) -> io::Result<Option<FileId>> {
        self.shared.lock().check_on(&self.mount)?;
        Ok(Some(FileId { dev: 0, ino: self.ino }))
    }

    fn is_linked(&self) -> io::Result<bool> {
        let st = self.shared.lock();
        st.check_on(&self.mount)?;
        Ok(st.dirs.values().any(|d| d.current.values().any(|e| *e == Entry::File(self.ino))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn disk() -> SimDisk {
        let d = SimDisk::new(1);
        d.setup_dir(&p("/d")).unwrap();
        d
    }

    #[test]
    fn synced_data_and_synced_names_always_survive() {
        for seed in 0..300 {
            let d = disk();
            let f = d.create_new(&p("/d/f")).unwrap();
            f.append(b"hello ").unwrap();
            f.sync_data().unwrap();
            d.sync_dir(&p("/d")).unwrap();
            f.append(b"world, maybe").unwrap();
            let after = d.crash(seed);
            let bytes = after.read(&p("/d/f")).expect("a synced name survives");
            assert!(bytes.starts_with(b"hello "), "seed {seed}: {bytes:?}");
        }
    }

    #[test]
    fn a_file_sync_does_not_make_its_new_name_durable() {
        let d = disk();
        let f = d.create_new(&p("/d/f")).unwrap();
        f.append(b"data").unwrap();
        assert!(!d.bytes_are_durable(&p("/d/f")));
        f.sync_data().unwrap();
        assert!(d.bytes_are_durable(&p("/d/f")));
        assert!(d.exists(&p("/d/f")) && !d.name_is_durable(&p("/d/f")));
        let after = d.crash_with(7, Keep::Nothing);
        assert!(!after.exists(&p("/d/f")), "the name was never synced");
        let after = d.crash_with(7, Keep::Everything);
        assert_eq!(after.read(&p("/d/f")).unwrap(), b"data");
    }

    #[test]
    fn an_unsynced_rename_can_be_lost_and_a_kept_one_is_atomic() {
        let (mut lost, mut kept) = (0, 0);
        for seed in 0..200 {
            let d = disk();
            d.setup_file(&p("/d/x"), b"old").unwrap();
            let t = d.create_new(&p("/d/.x.tmp")).unwrap();
            t.write_at(b"new", 0).unwrap();
            t.sync_data().unwrap();
            d.rename(&p("/d/.x.tmp"), &p("/d/x")).unwrap();
            let after = d.crash(seed);
            let x = after.read(&p("/d/x")).expect("x is durable either way");
            let tmp = after.read(&p("/d/.x.tmp"));
            match x.as_slice() {
                b"old" => {
                    lost += 1;
                    // The temp file's own name may or may not have reached the folder.
                    assert!(tmp.is_none() || tmp.as_deref() == Some(b"new"), "seed {seed}");
                }
                b"new" => {
                    kept += 1;
                    assert!(tmp.is_none(), "seed {seed}: a kept rename moves the name");
                }
                other => panic!("seed {seed}: {other:?}"),
            }
        }
        assert!(lost > 0 && kept > 0, "lost {lost}, kept {kept}");
    }

    #[test]
    fn a_rename_of_unsynced_data_can_leave_an_empty_or_torn_file() {
        let mut saw_short = false;
        for seed in 0..300 {
            let d = disk();
            let t = d.create_new(&p("/d/.x.tmp")).unwrap();
            t.write_at(b"0123456789", 0).unwrap();
            d.rename(&p("/d/.x.tmp"), &p("/d/x")).unwrap();
            d.sync_dir(&p("/d")).unwrap();
            let x = d.crash(seed).read(&p("/d/x")).expect("the name is durable");
            assert!(x.len() <= 10, "seed {seed}");
            saw_short |= x.as_slice() != b"0123456789";
        }
        assert!(saw_short);
    }

    #[test]
    fn a_torn_write_is_a_prefix_perhaps_zero_filled() {
        // 200 bytes at offset 4: inside one block whatever the crash's block size, so the
        // write is one piece: dropped, whole, a prefix, or a prefix and then zeros.
        let data: Vec<u8> = (1..=200u8).collect();
        let (mut torn, mut zeroed) = (0, 0);
        for seed in 0..500 {
            let d = disk();
            d.setup_file(&p("/d/f"), b"head").unwrap();
            let f = d.open_rw(&p("/d/f")).unwrap();
            f.append(&data).unwrap();
            let got = d.crash(seed).read(&p("/d/f")).unwrap();
            assert!(got.starts_with(b"head"), "seed {seed}");
            let tail = &got[4..];
            assert!(tail.len() <= data.len(), "seed {seed}");
            let k = tail.iter().zip(&data).take_while(|(a, b)| a == b).count();
            assert!(tail[k..].iter().all(|&b| b == 0), "seed {seed}: not a prefix then zeros: {tail:?}");
            torn += usize::from(!tail.is_empty() && k < data.len());
            zeroed += usize::from(k < tail.len());
        }
        assert!(torn > 0 && zeroed > 0, "torn {torn}, zeroed {zeroed}");
    }

    #[test]
    fn in_block_mode_a_later_page_can_survive_an_earlier_one() {
        let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8 + 1).collect();
        let mut hole_then_data = false;
        for seed in 0..500 {
            let d = disk();
            d.setup_file(&p("/d/f"), b"").unwrap();
            d.open_rw(&p("/d/f")).unwrap().append(&data).unwrap();
            let got = d.crash(seed).read(&p("/d/f")).unwrap();
            // Every byte is the written byte or zero, in its place.
            for (i, &b) in got.iter().enumerate() {
                assert!(b == data[i] || b == 0, "seed {seed}: byte {i} is {b}");
            }
            hole_then_data |= got.len() > 1024 && got[..512].iter().all(|&b| b == 0) && got[got.len() - 1] != 0;
        }
        assert!(hole_then_data, "a lost first page with a kept later one never came up");
    }

    #[test]
    fn crashes_are_reproducible_from_their_seed() {
        let build = || {
            let d = disk();
            let f = d.create_new(&p("/d/f")).unwrap();
            for i in 0..20u8 {
                f.append(&[i; 300]).unwrap();
            }
            d.create_new(&p("/d/g")).unwrap().append(b"g").unwrap();
            d
        };
        for seed in [0, 1, 99, u64::MAX] {
            let (a, b) = (build().crash(seed), build().crash(seed));
            assert_eq!(a.read(&p("/d/f")), b.read(&p("/d/f")));
            assert_eq!(a.read(&p("/d/g")), b.read(&p("/d/g")));
            assert_eq!(a.trace(), b.trace());
        }
    }

    #[test]
    fn unsynced_writes_of_two_files_survive_independently() {
        let mut combos = BTreeSet::new();
        for seed in 0..300 {
            let d = disk();
            d.setup_file(&p("/d/a"), b"").unwrap();
            d.setup_file(&p("/d/b"), b"").unwrap();
            d.open_rw(&p("/d/a")).unwrap().append(b"A").unwrap();
            d.open_rw(&p("/d/b")).unwrap().append(b"B").unwrap();
            let after = d.crash(seed);
            combos.insert((after.read(&p("/d/a")).unwrap(), after.read(&p("/d/b")).unwrap()));
        }
        // The later write can survive without the earlier one: no order across files.
        assert!(combos.contains(&(b"".to_vec(), b"B".to_vec())), "{combos:?}");
        assert!(combos.contains(&(b"A".to_vec(), b"".to_vec())), "{combos:?}");
    }

    #[test]
    fn a_new_folder_needs_its_parent_synced() {
        let d = disk();
        d.create_dir_all(&p("/d/q"), 0o700).unwrap();
        let f = d.create_new(&p("/d/q/copy")).unwrap();
        f.append(b"bytes").unwrap();
        f.sync_data().unwrap();
        d.sync_dir(&p("/d/q")).unwrap();
        let after = d.crash_with(3, Keep::Nothing);
        assert!(!after.exists(&p("/d/q/copy")), "q's own name in /d was never synced");
        d.sync_dir(&p("/d")).unwrap_err(); // the old disk is off
    }

    #[test]
    fn a_failed_sync_is_reported_once_and_may_drop_the_data_for_good() {
        let d = disk();
        d.setup_file(&p("/d/f"), b"durable;").unwrap();
        let f = d.open_rw(&p("/d/f")).unwrap();
        d.set_faults(Faults { fail_sync_data: vec![1], failed_sync: FailedSync::DropAll, ..Faults::default() });
        f.append(b"lost").unwrap();
        let e = f.sync_data().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
        assert_eq!(d.injected(), vec![Injected::SyncData(p("/d/f"))]);
        // Reads still see the dropped bytes; the next sync succeeds without writing them.
        assert_eq!(d.read(&p("/d/f")).unwrap(), b"durable;lost");
        f.sync_data().unwrap();
        assert!(!d.bytes_are_durable(&p("/d/f")));
        f.append(b"+later").unwrap();
        f.sync_data().unwrap();
        let after = d.crash_with(5, Keep::Everything);
        assert_eq!(after.read(&p("/d/f")).unwrap(), b"durable;\0\0\0\0+later");
    }

    #[test]
    fn a_failed_write_leaves_a_prefix_in_the_page_cache() {
        for seed in 0..50 {
            let d = SimDisk::new(seed);
            d.setup_file(&p("/f"), b"").unwrap();
            let f = d.open_rw(&p("/f")).unwrap();
            d.set_faults(Faults { fail_write: vec![1], ..Faults::default() });
            assert_eq!(f.append(b"abcdef").unwrap_err().raw_os_error(), Some(libc::EIO));
            let now = d.read(&p("/f")).unwrap();
            assert!(b"abcdef".starts_with(&now), "seed {seed}: {now:?}");
        }
    }

    #[test]
    fn after_a_power_cut_every_call_fails_until_the_crash() {
        let d = disk();
        let f = d.create_new(&p("/d/f")).unwrap();
        d.set_faults(Faults { power_cut_before_update: Some(2), ..Faults::default() });
        f.append(b"one").unwrap();
        f.append(b"two").unwrap_err();
        assert!(d.is_off());
        assert!(f.len().is_err() && d.facts(&p("/d")).is_err());
        assert_eq!(d.injected(), vec![Injected::PowerCut]);
        let after = d.crash_with(1, Keep::Everything);
        assert_eq!(after.read(&p("/d/f")).unwrap(), b"one");
    }

    #[test]
    fn a_killed_process_fails_but_its_writes_stay_in_the_page_cache() {
        let d = disk();
        let (a, b) = (d.with_mount(&p("/a")), d.with_mount(&p("/b")));
        let f = a.create_new(&p("/a/d/f")).unwrap();
        d.set_faults(Faults { kill_before_update: Some(2), ..Faults::default() });
        f.append(b"half").unwrap();
        f.sync_data().unwrap_err();
        assert!(a.is_killed() && !b.is_killed() && !d.is_off());
        assert!(a.facts(&p("/a/d/f")).is_err());
        let g = b.open_rw(&p("/b/d/f")).unwrap();
        assert_eq!(d.read(&p("/d/f")).unwrap(), b"half");
        g.sync_data().unwrap();
        b.sync_dir(&p("/b/d")).unwrap();
        assert_eq!(d.crash_with(0, Keep::Nothing).read(&p("/d/f")).unwrap(), b"half");
    }

    #[test]
    fn a_mount_is_a_view_of_the_same_disk() {
        let d = disk();
        let m = d.with_mount(&p("/proc7"));
        m.create_new(&p("/proc7/d/f")).unwrap().append(b"x").unwrap();
        assert_eq!(d.read(&p("/d/f")).unwrap(), b"x");
        assert_eq!(m.list_dir(&p("/proc7/d")).unwrap(), vec![p("/proc7/d/f")]);
        assert!(m.facts(&p("/elsewhere/d")).is_err());
        assert!(d.facts(&p("/d/../d")).is_err());
    }
}
