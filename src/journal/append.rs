//! Durable appends. One batch of events becomes one `write` of whole lines and one
//! `fdatasync`, under the writer lock, after the tail was read and checked:
//!
//! lock → open → rewrite the bytes past the head anchor in place, then fdatasync (so
//! nothing chains onto bytes a crashed predecessor left unsynced, or a failed sync dropped;
//! both skipped when the file ends exactly at the synced line this handle or the head
//! anchor names) → read the tail → check the head anchor → quarantine a torn tail → write →
//! fdatasync → store the anchor → unlock. Success is reported only after the sync returned.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::anchor::{Anchor, AnchorStore, Holds, KeptAnchor, PathReplaced};
use super::format::{self, EncodeError, Hash, MAX_LINE_BYTES, NewEvent, PreEncoded};
use super::genesis::{self, JournalOpened, Scope};
use super::lock::{JournalLock, KeptLockFile, LOCK_WAIT, LockError};
use super::scan::{self, Corruption, Head, MAX_BATCH_BYTES, Tail, TornTail};
use super::storage::{self, FileId, SharedStorage, StorageFile};

/// The largest journal abcd appends to; past it, appends are refused.
pub const MAX_JOURNAL_BYTES: u64 = 8 << 30;
/// Events in one batch at most (a group commit splits larger queues).
pub const MAX_BATCH_EVENTS: usize = 1024;
/// Genesis lines are small; the first read looks at this many bytes.
const GENESIS_FIRST_READ_BYTES: usize = 4096;

/// Where a journal and its companions live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalPaths {
    pub journal: PathBuf,
    /// The writer lock; never removed.
    pub lock: PathBuf,
    pub quarantine: PathBuf,
    pub checkpoints: PathBuf,
}

impl JournalPaths {
    /// Companions beside the journal: `<name>.lock`, `quarantine/`, `checkpoints/`.
    pub fn beside(journal: &Path) -> JournalPaths {
        let dir = journal.parent().unwrap_or(Path::new("."));
        let name = journal.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "journal".into());
        JournalPaths {
            journal: journal.to_owned(),
            lock: dir.join(format!("{name}.lock")),
            quarantine: dir.join("quarantine"),
            checkpoints: dir.join("checkpoints"),
        }
    }

    pub fn dir(&self) -> &Path {
        self.journal.parent().unwrap_or(Path::new("."))
    }
}

/// One acknowledged event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    pub seq: u64,
    pub hash: Hash,
    pub offset: u64,
    pub end: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("{what} {} failed: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: io::Error },
    #[error(
        "fdatasync of {} failed ({source}); the append was not acknowledged and this process will append nothing more to this journal; the next abcd process re-checks its tail",
        path.display()
    )]
    SyncFailed { path: PathBuf, source: io::Error },
    #[error("refusing to append to {}: an earlier write or sync failed in this process (run the command again in a new process)", path.display())]
    Poisoned { path: PathBuf },
    #[error(
        "refusing to append to {}: corruption at seq {} (byte offset {}): {}; run `abcd journal repair` to move the damaged part to quarantine and continue",
        path.display(), corruption.seq, corruption.offset, corruption.problem
    )]
    Corrupt { path: PathBuf, corruption: Corruption },
    #[error(
        "refusing to append to {}: {detail}; run `abcd journal verify` to see it, and `abcd journal repair` to accept the journal as it is",
        path.display()
    )]
    AnchorMismatch { path: PathBuf, detail: String },
    #[error("no journal at {} yet: nothing has been recorded there (the first checklist change, hook or run writes it)", path.display())]
    Missing { path: PathBuf },
    /// The home store records another journal at this path (journal-format/SPEC.md §11).
    #[error("refusing to {action} {}: {finding}; {}; `abcd journal verify` shows the finding", path.display(), finding.remedy())]
    Replaced { action: &'static str, path: PathBuf, finding: Box<PathReplaced> },
    /// The journal's genesis names another scope than this path's, and no move of a
    /// checkout explains it (journal-format/SPEC.md §11).
    #[error("refusing to {action} {}: {finding}; {}", path.display(), finding.remedy())]
    Foreign { action: &'static str, path: PathBuf, finding: Box<super::genesis::ForeignJournal> },
    #[error("refusing to use {}: {reason}; {}", path.display(), storage::untrusted_remedy(path, reason))]
    Untrusted { path: PathBuf, reason: &'static str },
    #[error("{} is not an abcd journal: {reason}", path.display())]
    NotAJournal { path: PathBuf, reason: String },
    #[error("refusing to append to {}: the journal is over its {MAX_JOURNAL_BYTES}-byte cap", path.display())]
    TooLarge { path: PathBuf },
    #[error("the event cannot be written: {0}")]
    Encode(#[from] EncodeError),
    #[error("a batch holds at most {MAX_BATCH_EVENTS} events and {MAX_BATCH_BYTES} bytes")]
    BatchTooLarge,
}

impl JournalError {
    pub(super) fn io<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> JournalError + 'p {
        move |source| JournalError::Io { what, path: path.to_owned(), source }
    }
}

/// Journals this process must not append to again (a failed sync cannot be retried
/// safely: the kernel may have dropped the dirty pages and cleared the error).
static POISONED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

fn is_poisoned(path: &Path) -> bool {
    POISONED.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|s| s.contains(path))
}

pub(super) fn poison(path: &Path) {
    POISONED.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashSet::new).insert(path.to_owned());
}

/// What the journal's first line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Genesis {
    pub journal_id: String,
    pub scope: Scope,
    pub head: Head,
}

/// A handle for appending to one journal. Cheap to create; holds no file open until its
/// first `append_batch`, and from then on the files of `KeptFiles`.
pub struct Journal {
    storage: SharedStorage,
    paths: JournalPaths,
    anchors: Option<AnchorStore>,
    /// The scope this path's journal must name (journal-format/SPEC.md §11); `None` for a
    /// journal named only by its path.
    expected: Option<Scope>,
    lock_wait: Duration,
    /// The tail this handle last acknowledged, to skip re-reading it when unchanged.
    known_tail: Mutex<Option<(Head, String)>>,
    /// Held for the whole of an `append_batch`, so the handle's own appends also exclude
    /// each other in-process (a `flock` on one shared descriptor would not).
    kept: Mutex<KeptFiles>,
}

/// The files a handle keeps open between its appends: the lock file, the journal and its
/// anchor record. The lock file and the journal are used only while their paths still name
/// them (one stat each per append); the anchor record is not re-checked (one deleted under
/// the handle goes stale, which only says less). All are dropped after any failed append. A
/// process that appends once opens them as before; a long-lived handle saves, per append,
/// an open and a close of each and the anchors folder's mkdir.
#[derive(Default)]
struct KeptFiles {
    lock: Option<KeptLockFile>,
    journal: Option<(Arc<dyn StorageFile>, FileId)>,
    anchor: Option<KeptAnchor>,
}

/// What an append found and did under the lock, besides the events themselves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppendNotes {
    /// A torn tail moved to quarantine before this append.
    pub torn_quarantined: Option<(TornTail, PathBuf)>,
    /// The journal was created by this append.
    pub created: bool,
}

/// The writer lock of one journal, held until dropped. It borrows the journal it locks,
/// so the steps it allows run against that journal only.
pub struct WriterLock<'j> {
    journal: &'j Journal,
    _held: JournalLock,
}

impl WriterLock<'_> {
    /// [`Journal::record_damage_found`] with the lock this guard holds.
    pub fn mark_damage_found(&self, journal_id: &str, before_damage: Head) -> Result<(), JournalError> {
        self.journal.mark_damage_locked(journal_id, before_damage)
    }

    /// Opens (or creates) the journal, makes its tail safe to chain onto, and returns the
    /// file, its head and its id.
    pub fn open_for_append(
        &self,
        create: Option<&Scope>,
        notes: &mut AppendNotes,
    ) -> Result<(Arc<dyn StorageFile>, Head, String), JournalError> {
        self.journal.open_for_append(create, notes)
    }

    /// Writes the batch after `head` (the tail [`Self::open_for_append`] made safe) and
    /// syncs it.
    pub fn append(&self, file: &dyn StorageFile, head: Head, journal_id: &str, events: &[NewEvent]) -> Result<Vec<Appended>, JournalError> {
        self.journal.append_locked(file, head, journal_id, events)
    }

    /// Creates a new journal where the path holds none (no file, or an empty one) although
    /// the path's record names a lost one: `abcd journal repair` starting afresh on a
    /// person's word. The record still names the lost journal afterwards: the caller
    /// appends the event recording the loss and only then records the new id, so a crash
    /// in between leaves the path refused as replaced, never silently new.
    pub fn create_afresh(&self, scope: &Scope) -> Result<(Arc<dyn StorageFile>, Head, String), JournalError> {
        let path = &self.journal.paths.journal;
        let facts = self.journal.storage.facts(path).map_err(JournalError::io("inspecting", path))?;
        if facts.is_some_and(|f| f.len > 0) {
            return Err(JournalError::NotAJournal {
                path: path.clone(),
                reason:
                    "bytes appeared in it while repair held its lock, so no new journal is made over them; run `abcd journal repair` again"
                        .into(),
            });
        }
        self.journal.create(scope)?;
        let file = self.journal.open_and_keep(None)?;
        let genesis = read_genesis(file.as_ref(), path)?;
        Ok((file, genesis.head, genesis.journal_id))
    }
}

impl Journal {
    pub fn new(storage: SharedStorage, paths: JournalPaths, anchors: Option<AnchorStore>) -> Journal {
        Journal {
            storage,
            paths,
            anchors,
            expected: None,
            lock_wait: LOCK_WAIT,
            known_tail: Mutex::new(None),
            kept: Mutex::new(KeptFiles::default()),
        }
    }

    /// The handle of the journal of `scope`: readers and the store's appends refuse a
    /// journal of another scope there, and repair sets it aside.
    pub fn expecting(mut self, scope: Scope) -> Journal {
        self.expected = Some(scope);
        self
    }

    /// The scope this path's journal must name, when known.
    pub fn expected_scope(&self) -> Option<&Scope> {
        self.expected.as_ref()
    }

    pub fn with_lock_wait(mut self, wait: Duration) -> Journal {
        self.lock_wait = wait;
        self
    }

    /// How long this handle waits for the writer lock before refusing.
    pub fn lock_wait(&self) -> Duration {
        self.lock_wait
    }

    pub fn paths(&self) -> &JournalPaths {
        &self.paths
    }

    pub fn storage(&self) -> &SharedStorage {
        &self.storage
    }

    pub fn anchors(&self) -> Option<&AnchorStore> {
        self.anchors.as_ref()
    }

    /// Appends `events` as one durable batch. With `create`, a missing or empty journal
    /// is created with that scope first.
    pub fn append_batch(&self, events: &[NewEvent], create: Option<&Scope>) -> Result<(Vec<Appended>, AppendNotes), JournalError> {
        if events.is_empty() || events.len() > MAX_BATCH_EVENTS {
            return Err(JournalError::BatchTooLarge);
        }
        let encoded = events.iter().map(format::pre_encode).collect::<Result<Vec<_>, _>>()?;
        self.append_pre_encoded(&encoded, create)
    }

    /// `append_batch` for events already serialized and checked (`format::pre_encode`),
    /// as group commit's submitters hand them over.
    pub fn append_pre_encoded(&self, events: &[PreEncoded], create: Option<&Scope>) -> Result<(Vec<Appended>, AppendNotes), JournalError> {
        if events.is_empty() || events.len() > MAX_BATCH_EVENTS {
            return Err(JournalError::BatchTooLarge);
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let result = (|| {
            loop {
                let lock = self.lock_with(Some(&mut kept.lock))?;
                let mut notes = AppendNotes::default();
                let Some((file, head, journal_id)) = self.open_with(create, &mut notes, Some(&mut kept.journal))? else {
                    // The journal's path names another file than the one kept: the folder
                    // may have moved, and the kept lock file with it. Start over with
                    // every file opened by its path (which cannot come back here).
                    drop(lock);
                    *kept = KeptFiles::default();
                    continue;
                };
                let appended = self.append_locked_with(file.as_ref(), head, &journal_id, events, Some(&mut kept.anchor))?;
                return Ok((appended, notes));
            }
        })();
        if result.is_err() {
            // Whatever failed, the next append starts from freshly opened files.
            *kept = KeptFiles::default();
        }
        result
    }

    /// Appends one event.
    pub fn append(&self, event: NewEvent, create: Option<&Scope>) -> Result<Appended, JournalError> {
        Ok(self.append_batch(std::slice::from_ref(&event), create)?.0[0])
    }

    /// Forgets the tail this handle last chained onto: the file was rewritten under it.
    pub(super) fn forget_known_tail(&self) {
        *self.known_tail.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Marks this journal's anchor: a full read found damage at or after `before_damage`
    /// (the last line that verified), which the appender's tail window may never reach.
    /// Taken under the lock, or an append could rewrite the anchor over the mark; a reader
    /// that cannot have the lock quickly leaves the mark to the next full read.
    pub fn record_damage_found(&self, journal_id: &str, before_damage: Head) -> Result<(), JournalError> {
        let _held = JournalLock::acquire(&self.paths.lock, DAMAGE_MARK_LOCK_WAIT)?;
        self.mark_damage_locked(journal_id, before_damage)
    }

    /// The mark itself, for a caller that holds the writer lock.
    fn mark_damage_locked(&self, journal_id: &str, before_damage: Head) -> Result<(), JournalError> {
        let Some(anchors) = &self.anchors else { return Ok(()) };
        let path = &self.paths.journal;
        let anchor = anchors.load(&*self.storage, journal_id).map_err(JournalError::io("reading the head anchor of", path))?;
        if anchor.is_some_and(|a| a.damage_found) {
            return Ok(());
        }
        let marked = match anchor {
            Some(anchor) => Anchor { damage_found: true, ..anchor },
            // No head was acknowledged here that the home store knows of: the mark names the
            // genesis, which bounds nothing for the rule of proof (format §10, §11), and not
            // `before_damage`, which would read as an acknowledged head.
            None => {
                let file = open_trusted(&*self.storage, path)?;
                let genesis = read_genesis(file.as_ref(), path).map(|g| g.head).unwrap_or(before_damage);
                Anchor { damage_found: true, ..Anchor::from(genesis) }
            }
        };
        anchors.store(&*self.storage, journal_id, marked).map_err(JournalError::io("writing the head anchor of", path))
    }

    /// Takes the writer lock. The guard is the only way to the append steps
    /// ([`WriterLock::open_for_append`], [`WriterLock::append`]), so "the lock is held" is
    /// a value the compiler checks, not a comment.
    pub fn lock(&self) -> Result<WriterLock<'_>, JournalError> {
        Ok(WriterLock { journal: self, _held: self.lock_with(None)? })
    }

    fn lock_with(&self, mut kept: Option<&mut Option<KeptLockFile>>) -> Result<JournalLock, JournalError> {
        if is_poisoned(&self.paths.journal) {
            return Err(JournalError::Poisoned { path: self.paths.journal.clone() });
        }
        let mut acquire = || match kept.as_deref_mut() {
            Some(k) => JournalLock::acquire_kept(k, &self.paths.lock, self.lock_wait),
            None => JournalLock::acquire(&self.paths.lock, self.lock_wait),
        };
        match acquire() {
            Err(LockError::Open { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                // The folder does not exist yet: this is the journal's first append.
                let dir = self.paths.dir();
                self.storage.create_dir_all(dir, 0o700).map_err(JournalError::io("creating the folder", dir))?;
                Ok(acquire()?)
            }
            other => Ok(other?),
        }
    }

    /// With the lock held: opens (or creates) the journal, makes its tail safe to chain
    /// onto, and returns the file, its head and its id.
    fn open_for_append(
        &self,
        create: Option<&Scope>,
        notes: &mut AppendNotes,
    ) -> Result<(Arc<dyn StorageFile>, Head, String), JournalError> {
        Ok(self.open_with(create, notes, None)?.expect("nothing kept, so nothing to find moved"))
    }

    /// `open_for_append`, reusing the journal file `kept` holds while the path still
    /// names it and leaving the file it used there. `None` when a file was kept and the
    /// path names another one (or none) now: the caller starts over with nothing kept.
    #[allow(clippy::type_complexity)]
    fn open_with(
        &self,
        create: Option<&Scope>,
        notes: &mut AppendNotes,
        mut kept: Option<&mut Option<(Arc<dyn StorageFile>, FileId)>>,
    ) -> Result<Option<(Arc<dyn StorageFile>, Head, String)>, JournalError> {
        let path = &self.paths.journal;
        let facts = self.storage.facts(path).map_err(JournalError::io("inspecting", path))?;
        let still_kept = match (kept.as_deref(), &facts) {
            (Some(Some((file, id))), Some(f)) if f.id == Some(*id) => Some(file.clone()),
            (Some(Some(_)), _) => {
                // What this handle knew of the kept file's tail says nothing about this one.
                *self.known_tail.lock().unwrap_or_else(|e| e.into_inner()) = None;
                return Ok(None);
            }
            _ => None,
        };
        match facts {
            None => {}
            Some(f) if storage::untrusted_reason(&f).is_some() => {
                let reason = storage::untrusted_reason(&f).expect("checked");
                return Err(JournalError::Untrusted { path: path.clone(), reason });
            }
            Some(f) if f.len == 0 => {}
            Some(f) => {
                if f.len > MAX_JOURNAL_BYTES {
                    return Err(JournalError::TooLarge { path: path.clone() });
                }
                // The length the stat saw is the kept file's (same identity, and the lock
                // keeps other writers out); a file opened just now is asked again.
                let known_len = still_kept.is_some().then_some(f.len);
                let file = match still_kept {
                    Some(file) => file,
                    None => self.open_and_keep(kept.as_deref_mut())?,
                };
                if let Some((head, id, unanchored)) = self.safe_tail(file.as_ref(), notes, known_len)? {
                    if !unanchored {
                        return Ok(Some((file, head, id)));
                    }
                    let file = self.make_anew(file.as_ref(), kept.as_deref_mut())?;
                    return Ok(Some((file, head, id)));
                }
                // Only a genesis cut short was there; it is in quarantine now.
            }
        }
        // A path the home store records as holding a journal gets no new one: the loss is
        // named instead (journal-format/SPEC.md §8.1, §11).
        self.refuse_if_recorded(Holds::Nothing)?;
        let Some(scope) = create else {
            return Err(JournalError::Missing { path: path.clone() });
        };
        self.create(scope)?;
        notes.created = true;
        if let Some(k) = kept.as_deref_mut() {
            *k = None;
        }
        let file = self.open_and_keep(kept)?;
        let genesis = read_genesis(file.as_ref(), path)?;
        Ok(Some((file, genesis.head, genesis.journal_id)))
    }

    /// Refuses when the home store records another journal at this path than what it
    /// holds (`now`).
    fn refuse_if_recorded(&self, now: Holds) -> Result<(), JournalError> {
        let Some(anchors) = &self.anchors else { return Ok(()) };
        let path = &self.paths.journal;
        match anchors.path_replaced(&*self.storage, path, now).map_err(JournalError::io("reading the path record of", path))? {
            Some(finding) => Err(JournalError::Replaced { action: "append to", path: path.clone(), finding: Box::new(finding) }),
            None => Ok(()),
        }
    }

    fn open_and_keep(&self, kept: Option<&mut Option<(Arc<dyn StorageFile>, FileId)>>) -> Result<Arc<dyn StorageFile>, JournalError> {
        let path = &self.paths.journal;
        let file: Arc<dyn StorageFile> = Arc::from(self.storage.open_rw(path).map_err(JournalError::io("opening", path))?);
        if let Some(k) = kept {
            *k = file.identity().map_err(JournalError::io("inspecting", path))?.map(|id| (file.clone(), id));
        }
        Ok(file)
    }

    /// Makes the tail safe to chain onto and returns the head and journal id, and whether
    /// the journal has no head anchor (then the caller makes it anew: `make_anew`); `None`
    /// when the file held only a torn genesis, now quarantined and cut to zero bytes.
    fn safe_tail(
        &self,
        file: &dyn StorageFile,
        notes: &mut AppendNotes,
        known_len: Option<u64>,
    ) -> Result<Option<(Head, String, bool)>, JournalError> {
        let path = &self.paths.journal;
        if let Some((head, id)) = self.unchanged_since_last_append(file, known_len)? {
            // The file ends with this handle's own acknowledged, synced line and is as long
            // as it left it: no foreign unsynced bytes to sync, and a tail this handle
            // verified when it chained onto it. (Damage written in place behind a live
            // handle is the full verifier's to find, as for any line before the window.)
            return Ok(Some((head, id, false)));
        }
        // Sync before reading: bytes a crashed writer left in the page cache, or a failed
        // sync dropped (rewritten first), are made durable (or the failure is seen) before
        // anything is chained onto them. Not when the file ends exactly at the line the
        // head anchor names and that line verifies: a writer synced it (and everything
        // before it) before writing the anchor, so nothing unsynced is there. A new
        // process's first append (every hook and verb) saves a device flush; the tail
        // window is still read and checked below, and anything but that same head with no
        // torn bytes after it is synced and read again.
        let mut look = FirstLook::default();
        let anchored = self.acknowledged_by_anchor(file, &mut look)?;
        if anchored.is_none() {
            self.rewrite_past_anchor(file, &look)?;
            sync_before_reading(file, path)?;
        }
        let mut tail = scan::read_tail(file).map_err(JournalError::io("reading the tail of", path))?;
        if let Some((anchor_head, _)) = anchored
            && !matches!(tail, Tail::Good { head, torn: None } if head == anchor_head)
        {
            sync_before_reading(file, path)?;
            tail = scan::read_tail(file).map_err(JournalError::io("reading the tail of", path))?;
        }
        let (head, torn) = match tail {
            Tail::Empty => return Ok(None),
            Tail::TornGenesis(torn) => {
                // Creation is atomic, so a cut first line at a path that held a journal is
                // that journal lost, not a creation to finish: refused, the bytes untouched.
                self.refuse_if_recorded(Holds::CutGenesis)?;
                let moved = quarantine_range(&*self.storage, file, &self.paths, "torn", 0, torn.offset, torn.len)?;
                truncate_durably(file, path, 0)?;
                notes.torn_quarantined = Some((torn, moved.path));
                return Ok(None);
            }
            Tail::Corrupt(corruption) => return Err(JournalError::Corrupt { path: path.clone(), corruption }),
            Tail::Good { head, torn } => (head, torn),
        };
        let genesis = match look.genesis.take() {
            Some(genesis) => genesis,
            None => read_genesis(file, path)?,
        };
        let unanchored = self.check_anchor(file, &genesis.journal_id, head, look.anchor)?;
        let journal_id = genesis.journal_id;
        if let Some(torn) = torn {
            let moved = quarantine_range(&*self.storage, file, &self.paths, "torn", head.seq + 1, torn.offset, torn.len)?;
            truncate_durably(file, path, torn.offset)?;
            notes.torn_quarantined = Some((torn, moved.path));
        }
        Ok(Some((head, journal_id, unanchored)))
    }

    /// The ordinary case for a long-lived handle: the file ends exactly where this handle's
    /// last acknowledged (so synced) line ended, with that line's hash.
    fn unchanged_since_last_append(&self, file: &dyn StorageFile, known_len: Option<u64>) -> Result<Option<(Head, String)>, JournalError> {
        let known = self.known_tail.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some((head, id)) = known else { return Ok(None) };
        let path = &self.paths.journal;
        let len = match known_len {
            Some(len) => len,
            None => file.len().map_err(JournalError::io("inspecting", path))?,
        };
        if len != head.end || head.end - head.offset < format::HASH_SUFFIX_LEN as u64 + 1 {
            return Ok(None);
        }
        let mut suffix = [0u8; format::HASH_SUFFIX_LEN + 1];
        let at = head.end - suffix.len() as u64;
        file.read_at(&mut suffix, at).map_err(JournalError::io("reading", path))?;
        let line_end = &suffix[..suffix.len() - 1];
        let mut framed = Vec::with_capacity(line_end.len() + 1);
        framed.push(b'{');
        framed.extend_from_slice(line_end);
        Ok((format::claimed_hash(&framed) == Some(head.hash) && suffix[suffix.len() - 1] == b'\n').then_some((head, id)))
    }

    /// The head the anchor names, when the file ends exactly at the end of that line and
    /// the line verifies with the anchor's seq and hash. Anchors are written only after
    /// the line they name was synced (see `append_locked` and `create`), so such a tail
    /// holds nothing unsynced. Anything else (no anchor, a longer or shorter file, another
    /// line there) answers None and the caller syncs and reads the tail as usual.
    fn acknowledged_by_anchor(&self, file: &dyn StorageFile, look: &mut FirstLook) -> Result<Option<(Head, String)>, JournalError> {
        let Some(anchors) = &self.anchors else { return Ok(None) };
        let path = &self.paths.journal;
        let Ok(genesis) = read_genesis(file, path) else { return Ok(None) };
        let loaded = anchors.load(&*self.storage, &genesis.journal_id);
        let journal_id = genesis.journal_id.clone();
        look.genesis = Some(genesis);
        // A failed load is not kept: `check_anchor` loads again and reports it.
        let Ok(loaded) = loaded else { return Ok(None) };
        look.anchor = Some(loaded);
        let Some(anchor) = loaded else { return Ok(None) };
        let head = Head::from(anchor);
        let len = file.len().map_err(JournalError::io("inspecting", path))?;
        if len != head.end || !scan::line_is_at(file, head).map_err(JournalError::io("reading", path))? {
            return Ok(None);
        }
        Ok(Some((head, journal_id)))
    }

    /// Before the sync that makes the tail safe: writes every byte past the line the head
    /// anchor names again, in place and unchanged, and the file's length with them
    /// (reliability gap G1). A sync alone is not enough: one that failed (fsyncgate) may
    /// have dropped dirty pages that reads still show, and every later sync, this one
    /// included, succeeds without writing them. Rewritten, they are dirty again and the
    /// sync writes them. The anchored line and all before it are durable already: an
    /// anchor is stored only after an append's sync, which came after this same step.
    ///
    /// Without an anchor nothing says where the durable bytes end, and the whole file is
    /// copied anew instead (`make_anew`). With an anchor the journal does not hold, nothing
    /// is rewritten: the append is refused.
    /// A handle without an anchor store (tests and benches only) keeps the sync alone.
    fn rewrite_past_anchor(&self, file: &dyn StorageFile, look: &FirstLook) -> Result<(), JournalError> {
        let path = &self.paths.journal;
        // No anchor: the whole file is copied under its name (`make_anew`). No anchor
        // store, or its load failed: `check_anchor` reports that.
        let Some(Some(a)) = look.anchor else { return Ok(()) };
        if !scan::line_is_at(file, Head::from(a)).map_err(JournalError::io("reading", path))? {
            return Ok(());
        }
        let from = a.end;
        let len = file.len().map_err(JournalError::io("inspecting", path))?;
        if from >= len {
            return Ok(());
        }
        let writer = self.storage.open_in_place(path).map_err(JournalError::io("opening to rewrite in place", path))?;
        let same = writer.identity().and_then(|w| Ok(w == file.identity()?)).map_err(JournalError::io("inspecting", path))?;
        if !same {
            return Err(JournalError::Io {
                what: "rewriting in place",
                path: path.clone(),
                source: io::Error::other(
                    "the path names another file than the one being appended to; run the command again, and `abcd journal verify` if this recurs",
                ),
            });
        }
        let failed = |source| {
            poison(path);
            JournalError::Io { what: "writing to", path: path.clone(), source }
        };
        storage::copy_range(file, writer.as_ref(), from, len - from, from).map_err(failed)?;
        // A cut that a failed sync dropped would leave the disk's copy longer than reads show.
        writer.set_len(len).map_err(failed)
    }

    /// `preloaded`: the anchor as `acknowledged_by_anchor` loaded it for this journal id
    /// under the same lock (no writer could have changed it since). True when the home
    /// store holds no anchor for the journal.
    fn check_anchor(
        &self,
        file: &dyn StorageFile,
        journal_id: &str,
        head: Head,
        preloaded: Option<Option<Anchor>>,
    ) -> Result<bool, JournalError> {
        let Some(anchors) = &self.anchors else { return Ok(false) };
        let path = &self.paths.journal;
        let mut anchor = match preloaded {
            Some(anchor) => anchor,
            None => anchors.load(&*self.storage, journal_id).map_err(JournalError::io("reading the head anchor of", path))?,
        };
        match anchors.id_at_path(&*self.storage, path).map_err(JournalError::io("reading the path record of", path))? {
            // A creation killed between its rename and its records, or a journal moved
            // here: record the path now, under the lock, or a later loss or replacement of
            // this journal would go unnoticed. (A best effort, like every anchor write.)
            None => {
                let _ = anchors.set_id_at_path(&*self.storage, path, journal_id);
            }
            Some(recorded) => {
                if let Some(finding) = anchors.compare_record(&*self.storage, recorded, Holds::Journal(journal_id.to_owned())) {
                    return Err(JournalError::Replaced { action: "append to", path: path.clone(), finding: Box::new(finding) });
                }
            }
        }
        if let Some(marked) = anchor.filter(|a| a.damage_found) {
            // A full read found damage the tail window may not reach: look at the whole
            // journal before building on it (rare, so the O(n) read costs the ordinary
            // append nothing).
            let report = scan::scan_all(file, scan::StartPoint::GENESIS).map_err(JournalError::io("reading", path))?;
            if let scan::Verdict::Corrupt(corruption) = report.verdict {
                return Err(JournalError::Corrupt { path: path.clone(), corruption });
            }
            // The damage is gone (repaired, put back from a copy, or unsynced bytes a crash
            // dropped): so is the mark.
            let cleared = Anchor { damage_found: false, ..marked };
            let _ = anchors.store(&*self.storage, journal_id, cleared);
            anchor = Some(cleared);
        }
        if let Some(detail) = anchor_disagreement(file, anchor, head).map_err(JournalError::io("reading", path))? {
            return Err(JournalError::AnchorMismatch { path: path.clone(), detail });
        }
        match anchor {
            Some(a) if a.seq < head.seq => self.check_unacknowledged(file, a, head)?,
            Some(_) => {}
            None => self.check_without_anchor(file)?,
        }
        Ok(anchor.is_none())
    }

    /// No anchor (a fresh home store, or anchors lost with a crash): nothing says where
    /// the acknowledged lines end, so the appender reads the widest first window the tail
    /// reader allows (a torn region and two maximal lines) and refuses on damage in it.
    /// Rare, so the wider read costs the ordinary append nothing.
    fn check_without_anchor(&self, file: &dyn StorageFile) -> Result<(), JournalError> {
        let path = &self.paths.journal;
        if let Tail::Corrupt(corruption) = scan::read_tail_from(file, u64::MAX).map_err(JournalError::io("reading the tail of", path))? {
            return Err(JournalError::Corrupt { path: path.clone(), corruption });
        }
        Ok(())
    }

    /// With no anchor, the journal is made anew under its name before anything chains onto
    /// it: copied into a temp file that is synced, renamed over the name, and the folder
    /// synced; the file returned (and kept) is the copy.
    ///
    /// Why (reliability gap G2): an anchor is stored only after a creation's folder sync
    /// or an acknowledged append, so without one the name may never have been made
    /// durable: its creator was killed before that sync, or the sync failed and dropped
    /// the name for good while it stays visible, and then a folder sync now succeeds
    /// without it. Only a new name change (the rename) gives that sync something to write.
    /// A hard link renamed over the name would not do: a rename between two names of one
    /// file does nothing. The copy's bytes are durable too, whatever a failed sync dropped
    /// from the old file's pages (gap G1). Rare (a fresh home store, or anchors a crash
    /// lost), and once: the append that follows stores an anchor.
    fn make_anew(
        &self,
        file: &dyn StorageFile,
        kept: Option<&mut Option<(Arc<dyn StorageFile>, FileId)>>,
    ) -> Result<Arc<dyn StorageFile>, JournalError> {
        let path = &self.paths.journal;
        let dir = self.paths.dir();
        let len = file.len().map_err(JournalError::io("inspecting", path))?;
        let tmp = storage::temp_path(path);
        let copy = self.storage.create_new(&tmp).map_err(JournalError::io("creating", &tmp))?;
        let copied = (|| {
            storage::copy_range(file, copy.as_ref(), 0, len, 0).map_err(JournalError::io("copying", path))?;
            // A failed sync here says this process appends nothing more: it must hold.
            copy.sync_data().map_err(|source| {
                poison(path);
                JournalError::SyncFailed { path: tmp.clone(), source }
            })?;
            // Only over the file that was copied: a file a person put at the path since
            // is theirs, and stays.
            let named = self.storage.facts(path).map_err(JournalError::io("inspecting", path))?.and_then(|f| f.id);
            let copied_id = file.identity().map_err(JournalError::io("inspecting", path))?;
            if named.is_none() || named != copied_id {
                return Err(JournalError::Io {
                    what: "renaming a copy over",
                    path: path.clone(),
                    source: io::Error::other("the path names another file than the one copied; run the command again"),
                });
            }
            self.storage.rename(&tmp, path).map_err(JournalError::io("renaming a copy over", path))
        })();
        if let Err(e) = copied {
            let _ = self.storage.remove_cache_file(&tmp);
            return Err(e);
        }
        // Past the rename the name may still not be durable: as for a failed creation, this
        // process appends nothing more, and the next one finds no anchor and does this again.
        self.storage.sync_dir(dir).map_err(|source| {
            poison(path);
            JournalError::SyncFailed { path: dir.to_owned(), source }
        })?;
        self.open_and_keep(kept)
    }

    /// The lines after the anchored (last acknowledged) line were never acknowledged: a
    /// writer died before its anchor, or a power cut kept some pages of a batch and lost
    /// others. The tail window can miss a hole near its start (reliability gap G4),
    /// so when that region is at most [`UNACKNOWLEDGED_CHECK_MAX`] bytes every line of it
    /// is verified and chained from the anchored line before anything is chained on.
    /// Larger (anchors lagging far behind) it is left to the full verifier.
    fn check_unacknowledged(&self, file: &dyn StorageFile, anchor: Anchor, head: Head) -> Result<(), JournalError> {
        let path = &self.paths.journal;
        if head.end.saturating_sub(anchor.end) > UNACKNOWLEDGED_CHECK_MAX {
            return Ok(());
        }
        let from = Head::from(anchor);
        let report = scan::scan_all(file, scan::StartPoint { after: Some(from) }).map_err(JournalError::io("reading", path))?;
        match report.verdict {
            scan::Verdict::Corrupt(corruption) => Err(JournalError::Corrupt { path: path.clone(), corruption }),
            _ => Ok(()),
        }
    }

    /// With the lock held and the tail made safe: writes the batch and syncs it.
    fn append_locked(
        &self,
        file: &dyn StorageFile,
        head: Head,
        journal_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<Appended>, JournalError> {
        let encoded = events.iter().map(format::pre_encode).collect::<Result<Vec<_>, _>>()?;
        self.append_locked_with(file, head, journal_id, &encoded, None)
    }

    fn append_locked_with(
        &self,
        file: &dyn StorageFile,
        head: Head,
        journal_id: &str,
        events: &[PreEncoded],
        kept_anchor: Option<&mut Option<KeptAnchor>>,
    ) -> Result<Vec<Appended>, JournalError> {
        let path = &self.paths.journal;
        let time = format::now_ms();
        let mut buf = Vec::new();
        let mut appended = Vec::with_capacity(events.len());
        let (mut seq, mut prev, mut offset) = (head.seq, head.hash, head.end);
        for event in events {
            seq += 1;
            let (line, hash) = format::encode_pre_encoded(seq, time, event, &prev);
            let end = offset + line.len() as u64;
            appended.push(Appended { seq, hash, offset, end });
            buf.extend_from_slice(&line);
            (prev, offset) = (hash, end);
        }
        if buf.len() > MAX_BATCH_BYTES {
            return Err(JournalError::BatchTooLarge);
        }
        if let Err(source) = file.append(&buf) {
            // Part of the batch may be in the file; the next appender sees it as a torn
            // tail. This process cannot know what reached the disk, so it stops here.
            poison(path);
            return Err(JournalError::Io { what: "writing to", path: path.clone(), source });
        }
        if let Err(source) = file.sync_data() {
            poison(path);
            *self.known_tail.lock().unwrap_or_else(|e| e.into_inner()) = None;
            return Err(JournalError::SyncFailed { path: path.clone(), source });
        }
        let last = *appended.last().expect("a batch is never empty");
        let new_head = Head { seq: last.seq, hash: last.hash, offset: last.offset, end: last.end };
        debug_assert_eq!(new_head.seq, head.seq + events.len() as u64);
        if let Some(anchors) = &self.anchors {
            // The anchor is a cache of an already durable fact; failing to refresh it only
            // weakens rollback detection, so it never fails an acknowledged append.
            let _ = match kept_anchor {
                Some(kept) => anchors.store_kept(&*self.storage, kept, journal_id, Anchor::from(new_head)),
                None => anchors.store(&*self.storage, journal_id, Anchor::from(new_head)),
            };
        }
        *self.known_tail.lock().unwrap_or_else(|e| e.into_inner()) = Some((new_head, journal_id.to_owned()));
        Ok(appended)
    }

    /// Creates the journal with its genesis in place: a temp file synced, renamed over the
    /// name, and the folder synced. No reader ever sees a journal without a whole genesis.
    fn create(&self, scope: &Scope) -> Result<(), JournalError> {
        let path = &self.paths.journal;
        let journal_id = genesis::new_journal_id().map_err(JournalError::io("reading random bytes for", path))?;
        let opened = JournalOpened { journal_id: journal_id.clone(), scope: scope.clone() };
        let genesis = NewEvent {
            kind: genesis::JOURNAL_OPENED.into(),
            actor: format::Actor::this_process(None),
            data: serde_json::to_value(&opened).expect("plain data serializes"),
        };
        let (line, hash) = format::encode_line(0, format::now_ms(), &genesis, &Hash::genesis_prev())?;
        if let Err(source) = super::storage::write_atomic(&*self.storage, path, &line, true) {
            // Failed after the rename, the name is visible and may still not be durable (a
            // failed folder sync can drop it, and a later sync would then succeed without
            // it): this process appends nothing more here; the next one finds no anchor
            // and makes the journal anew (`make_anew`). Failed before it, nothing is there
            // to protect.
            if self.storage.facts(path).ok().flatten().is_some() {
                poison(path);
            }
            return Err(JournalError::Io { what: "creating", path: path.clone(), source });
        }
        if let Some(anchors) = &self.anchors {
            let head = Head { seq: 0, hash, offset: 0, end: line.len() as u64 };
            let _ = anchors.store(&*self.storage, &journal_id, Anchor::from(head));
            // A record is there only when repair starts afresh in place of a lost journal:
            // it moves to the new id after the loss is on record (`create_afresh`).
            if anchors.id_at_path(&*self.storage, path).ok().flatten().is_none() {
                let _ = anchors.set_id_at_path(&*self.storage, path, &journal_id);
            }
        }
        Ok(())
    }
}

/// What an append's first look found at the journal's start and in its anchor, so the
/// checks after it do not read them again: a genesis line never changes, and the anchor
/// is written only under the lock this append holds.
#[derive(Default)]
struct FirstLook {
    genesis: Option<Genesis>,
    /// The anchor as loaded for `genesis`'s journal id, when the load itself succeeded.
    anchor: Option<Option<Anchor>>,
}

/// How long a reader that found damage waits for the lock to mark the anchor.
pub const DAMAGE_MARK_LOCK_WAIT: Duration = Duration::from_millis(100);

/// Unacknowledged bytes after the anchored line that an append verifies in full: the
/// most one killed writer's batch can leave (the torn-tail bound of journal-format §9).
pub const UNACKNOWLEDGED_CHECK_MAX: u64 = scan::MAX_TORN_TAIL_BYTES;

/// The sync before a tail is read; a failure poisons the journal for this process.
pub(super) fn sync_before_reading(file: &dyn StorageFile, path: &Path) -> Result<(), JournalError> {
    file.sync_data().map_err(|source| {
        poison(path);
        JournalError::SyncFailed { path: path.to_path_buf(), source }
    })
}

/// Reads and checks event 0.
pub fn read_genesis(file: &dyn StorageFile, path: &Path) -> Result<Genesis, JournalError> {
    let not_journal = |reason: String| JournalError::NotAJournal { path: path.to_owned(), reason };
    let len = file.len().map_err(JournalError::io("inspecting", path))?;
    let mut want = GENESIS_FIRST_READ_BYTES;
    loop {
        let take = (want as u64).min(len) as usize;
        let mut buf = vec![0u8; take];
        let n = file.read_at(&mut buf, 0).map_err(JournalError::io("reading", path))?;
        buf.truncate(n);
        let Some(nl) = crate::byte_search::find_byte(b'\n', &buf) else {
            if take as u64 == len || want >= MAX_LINE_BYTES {
                return Err(not_journal("its first line is not a complete event".into()));
            }
            want = MAX_LINE_BYTES;
            continue;
        };
        let line = &buf[..=nl];
        let event = format::verify_line(line).map_err(|f| not_journal(format!("its first line does not verify: {f}")))?;
        if event.seq != 0 || event.prev != Hash::genesis_prev() {
            return Err(not_journal("its first line is not a genesis event".into()));
        }
        let Some(opened) = (event.kind == genesis::JOURNAL_OPENED).then(|| genesis::decode_opened(&event.data).ok()).flatten() else {
            return Err(not_journal("its genesis does not name a journal id and scope".into()));
        };
        let head = Head { seq: 0, hash: event.hash, offset: 0, end: line.len() as u64 };
        return Ok(Genesis { journal_id: opened.journal_id, scope: opened.scope, head });
    }
}

/// Compares the journal with its head anchor; a description of the disagreement, if any.
pub fn anchor_disagreement(file: &dyn StorageFile, anchor: Option<Anchor>, head: Head) -> io::Result<Option<String>> {
    let Some(a) = anchor else { return Ok(None) };
    if a.seq > head.seq {
        return Ok(Some(format!(
            "the journal ends at seq {} but its head anchor in the home store says seq {} (hash {}) was acknowledged: it was cut short or rolled back",
            head.seq, a.seq, a.hash
        )));
    }
    if a.seq == head.seq {
        return Ok((a.hash != head.hash).then(|| {
            format!("seq {} has hash {} but its head anchor says {}: the journal was replaced or rewritten", a.seq, head.hash, a.hash)
        }));
    }
    let line_ok = scan::line_is_at(file, Head::from(a))?;
    Ok((!line_ok).then(|| {
        format!(
            "the head anchor says seq {} (hash {}) at byte {}, and the journal holds no such line there: it was replaced or rewritten",
            a.seq, a.hash, a.offset
        )
    }))
}

/// A range of the journal copied aside.
pub struct Quarantined {
    pub path: PathBuf,
    pub blake3: String,
    pub lines: u64,
}

/// Copies `[offset, offset+len)` to `quarantine/<label>-<seq>-<time>.bin`, synced, before
/// anything truncates it: nothing is ever deleted without a copy.
pub fn quarantine_range(
    storage: &dyn super::storage::Storage,
    file: &dyn StorageFile,
    paths: &JournalPaths,
    label: &str,
    seq: u64,
    offset: u64,
    len: u64,
) -> Result<Quarantined, JournalError> {
    let journal = &paths.journal;
    let qdir = &paths.quarantine;
    storage.create_dir_all(qdir, 0o700).map_err(JournalError::io("creating", qdir))?;
    // A repository can commit `quarantine` as a symlink to a folder of its choosing: the
    // journal's bytes (a person's agent state) must not be written there.
    match storage.facts(qdir).map_err(JournalError::io("inspecting", qdir))? {
        Some(f) if f.is_dir && !f.is_symlink => {}
        _ => {
            return Err(JournalError::Untrusted {
                path: qdir.clone(),
                reason: "the quarantine folder is a symlink or not a folder, so nothing is copied through it; move it aside (abcd deletes nothing) and run the command again",
            });
        }
    }
    // The copy must survive a crash that keeps the cut: make `quarantine/` itself durable
    // in the journal's folder, not only the file inside it.
    storage.sync_dir(paths.dir()).map_err(|source| {
        poison(journal);
        JournalError::SyncFailed { path: paths.dir().to_owned(), source }
    })?;
    let stamp = format::now_ms().strftime("%Y%m%dT%H%M%S%3fZ").to_string();
    let mut attempt = 0u32;
    let (qpath, qfile) = loop {
        let name = if attempt == 0 { format!("{label}-{seq}-{stamp}.bin") } else { format!("{label}-{seq}-{stamp}-{attempt}.bin") };
        let qpath = qdir.join(name);
        match storage.create_new(&qpath) {
            Ok(f) => break (qpath, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => return Err(JournalError::Io { what: "creating", path: qpath, source: e }),
        }
    };
    let mut hasher = blake3::Hasher::new();
    let mut lines = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    let mut done = 0u64;
    while done < len {
        let want = ((len - done) as usize).min(buf.len());
        let n = file.read_at(&mut buf[..want], offset + done).map_err(JournalError::io("reading", journal))?;
        if n == 0 {
            break;
        }
        qfile.write_at(&buf[..n], done).map_err(JournalError::io("writing", &qpath))?;
        hasher.update(&buf[..n]);
        lines += crate::byte_search::byte_positions(b'\n', &buf[..n]).count() as u64;
        done += n as u64;
    }
    assert_eq!(done, len, "the range to quarantine lies inside the file");
    if len > 0 && {
        let mut last = [0u8; 1];
        file.read_at(&mut last, offset + len - 1).map_err(JournalError::io("reading", journal))?;
        last[0] != b'\n'
    } {
        lines += 1;
    }
    // A failed sync here is a failed sync like any other: nothing more is appended by this
    // process, as the error says.
    qfile.sync_data().map_err(|source| {
        poison(journal);
        JournalError::SyncFailed { path: qpath.clone(), source }
    })?;
    storage.sync_dir(qdir).map_err(|source| {
        poison(journal);
        JournalError::SyncFailed { path: qdir.clone(), source }
    })?;
    Ok(Quarantined { path: qpath, blake3: hasher.finalize().to_hex().to_string(), lines })
}

/// Cuts the journal at `len` and syncs the cut.
pub fn truncate_durably(file: &dyn StorageFile, path: &Path, len: u64) -> Result<(), JournalError> {
    file.set_len(len).map_err(JournalError::io("truncating", path))?;
    file.sync_data().map_err(|source| {
        poison(path);
        JournalError::SyncFailed { path: path.to_owned(), source }
    })
}

/// Refuses what SPEC §1 forbids before any byte is read.
pub fn open_trusted(storage: &dyn storage::Storage, path: &Path) -> Result<Box<dyn StorageFile>, JournalError> {
    let facts = storage
        .facts(path)
        .map_err(|source| JournalError::Io { what: "inspecting", path: path.to_owned(), source })?
        .ok_or_else(|| JournalError::Missing { path: path.to_owned() })?;
    if let Some(reason) = super::storage::untrusted_reason(&facts) {
        return Err(JournalError::Untrusted { path: path.to_owned(), reason });
    }
    if facts.len > MAX_JOURNAL_BYTES {
        return Err(JournalError::TooLarge { path: path.to_owned() });
    }
    storage.open_read(path).map_err(|source| JournalError::Io { what: "opening", path: path.to_owned(), source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::format::Actor;
    use crate::journal::storage::{RealDisk, Storage};

    struct Place {
        dir: tempfile::TempDir,
        paths: JournalPaths,
        home: PathBuf,
    }

    impl Place {
        fn new() -> Place {
            let dir = tempfile::tempdir().unwrap();
            let paths = JournalPaths::beside(&dir.path().join("wc/.abcd/.work.local/journal.jsonl"));
            let home = dir.path().join("home");
            Place { dir, paths, home }
        }

        /// Another journal path with the same home store.
        fn beside(&self, name: &str) -> Journal {
            let paths = JournalPaths::beside(&self.dir.path().join(name).join("journal.jsonl"));
            Journal::new(RealDisk::shared(), paths, Some(self.anchors()))
        }

        fn anchors(&self) -> AnchorStore {
            AnchorStore::new(&self.home)
        }

        fn journal(&self) -> Journal {
            Journal::new(RealDisk::shared(), self.paths.clone(), Some(self.anchors()))
        }

        fn id(&self) -> String {
            let file = RealDisk.open_read(&self.paths.journal).unwrap();
            read_genesis(file.as_ref(), &self.paths.journal).unwrap().journal_id
        }

        fn bytes(&self) -> Option<Vec<u8>> {
            std::fs::read(&self.paths.journal).ok()
        }
    }

    fn scope() -> Scope {
        Scope::WorkingCopy { root: "/wc".into() }
    }

    fn event(n: u64) -> NewEvent {
        NewEvent { kind: "compaction.recorded".into(), actor: Actor::this_process(None), data: serde_json::json!({"n": n}) }
    }

    /// A journal of genesis and two events, its anchor at seq 2.
    fn three_events(j: &Journal) {
        for n in 0..2 {
            j.append(event(n), Some(&scope())).unwrap();
        }
    }

    #[test]
    fn a_path_that_held_a_journal_gets_no_new_one_when_it_holds_nothing_or_a_cut_first_line() {
        type Loss = fn(&Path);
        let losses: [(&str, Loss, Holds); 3] = [
            ("emptied", |p| std::fs::write(p, b"").unwrap(), Holds::Nothing),
            ("deleted", |p| std::fs::remove_file(p).unwrap(), Holds::Nothing),
            ("cut inside its first line", |p| std::fs::write(p, &std::fs::read(p).unwrap()[..100]).unwrap(), Holds::CutGenesis),
        ];
        for (what, lose, holds) in losses {
            let place = Place::new();
            three_events(&place.journal());
            let lost = place.id();
            lose(&place.paths.journal);
            let left = place.bytes();
            for create in [Some(&scope()), None] {
                let err = place.journal().append(event(9), create).unwrap_err();
                let JournalError::Replaced { finding, .. } = &err else { panic!("{what}: {err}") };
                assert_eq!((&finding.recorded, finding.anchor.map(|a| a.seq), &finding.now), (&lost, Some(2), &holds), "{what}");
                assert!(err.to_string().contains("refusing to append to") && err.to_string().contains("`abcd journal repair`"), "{err}");
                assert_eq!(place.bytes(), left, "{what}: the refusal leaves the path as it was");
                assert!(!place.paths.quarantine.exists(), "{what}: nothing was moved aside");
            }
        }
    }

    #[test]
    fn a_journal_whose_id_differs_from_the_path_record_is_refused() {
        let place = Place::new();
        three_events(&place.journal());
        let recorded = place.id();
        let other = place.beside("other");
        other.append(event(0), Some(&scope())).unwrap();
        std::fs::copy(&other.paths().journal, &place.paths.journal).unwrap();
        let copied = place.bytes();
        let now = place.id();
        for create in [Some(&scope()), None] {
            let err = place.journal().append(event(9), create).unwrap_err();
            let JournalError::Replaced { finding, .. } = &err else { panic!("{err}") };
            assert_eq!((&finding.recorded, &finding.now), (&recorded, &Holds::Journal(now.clone())));
            assert!(err.to_string().contains(&format!("now holds journal {now}: it was replaced")), "{err}");
            assert_eq!(place.bytes(), copied, "nothing was chained onto the other journal");
        }
        // The other journal goes on at its own path.
        other.append(event(1), None).unwrap();
    }

    #[test]
    fn a_journal_at_a_path_with_no_record_is_recorded_by_its_next_append() {
        let place = Place::new();
        three_events(&place.journal());
        let id = place.id();
        // Moved with its folder: the journal keeps its anchor, the new path has no record.
        let moved = place.dir.path().join("moved");
        std::fs::rename(place.paths.dir(), &moved).unwrap();
        let moved_paths = JournalPaths::beside(&moved.join("journal.jsonl"));
        let anchors = place.anchors();
        assert_eq!(anchors.id_at_path(&RealDisk, &moved_paths.journal).unwrap(), None);
        let j = Journal::new(RealDisk::shared(), moved_paths.clone(), Some(place.anchors()));
        assert_eq!(j.append(event(3), None).unwrap().seq, 3);
        assert_eq!(anchors.id_at_path(&RealDisk, &moved_paths.journal).unwrap(), Some(id));
        // So its loss there is named too.
        std::fs::write(&moved_paths.journal, b"").unwrap();
        let err = Journal::new(RealDisk::shared(), moved_paths, Some(place.anchors())).append(event(4), Some(&scope())).unwrap_err();
        assert!(matches!(err, JournalError::Replaced { .. }), "{err}");
    }

    #[test]
    fn where_the_home_store_recorded_nothing_a_journal_is_created_and_recorded() {
        // An empty file, and a cut first line, with a fresh home store: created.
        for start in [&b""[..], &b"{\"v\":1,\"seq\":0,\"ti"[..]] {
            let place = Place::new();
            std::fs::create_dir_all(place.paths.dir()).unwrap();
            std::fs::write(&place.paths.journal, start).unwrap();
            let (appended, notes) = place.journal().append_batch(&[event(0)], Some(&scope())).unwrap();
            assert!(notes.created && appended[0].seq == 1);
            assert_eq!(notes.torn_quarantined.is_some(), !start.is_empty());
            assert_eq!(place.anchors().id_at_path(&RealDisk, &place.paths.journal).unwrap(), Some(place.id()));
        }
        // No journal at all: the first append makes it.
        let place = Place::new();
        assert!(place.journal().append_batch(&[event(0)], Some(&scope())).unwrap().1.created);
    }

    #[test]
    fn create_afresh_makes_a_journal_only_over_nothing_and_leaves_the_record_to_its_caller() {
        let place = Place::new();
        three_events(&place.journal());
        let lost = place.id();
        std::fs::remove_file(&place.paths.journal).unwrap();
        let j = place.journal();
        let lock = j.lock().unwrap();
        let (file, head, id) = lock.create_afresh(&scope()).unwrap();
        assert_ne!(id, lost);
        assert_eq!(head.seq, 0);
        assert_eq!(place.anchors().id_at_path(&RealDisk, &place.paths.journal).unwrap(), Some(lost.clone()), "still the lost one's");
        lock.append(file.as_ref(), head, &id, &[event(0)]).unwrap();
        drop(lock);
        // Bytes there: never made over them.
        let before = place.bytes();
        let lock = j.lock().unwrap();
        let err = lock.create_afresh(&scope()).err().expect("refused");
        assert!(matches!(err, JournalError::NotAJournal { .. }), "{err}");
        assert_eq!(place.bytes(), before);
    }

    fn clean_events(path: &Path) -> u64 {
        let file = RealDisk.open_read(path).unwrap();
        let report = scan::scan(file.as_ref(), scan::StartPoint::GENESIS, |_, _| Ok::<(), std::convert::Infallible>(())).unwrap();
        assert_eq!(report.verdict, scan::Verdict::Clean);
        report.events_seen
    }

    /// The rewrite before the sync (gap G1) writes each byte where it was: on the real disk
    /// the appender's own handle appends (`O_APPEND`), so the rewrite must use another.
    #[test]
    fn bytes_past_the_anchor_are_rewritten_where_they_are_and_no_anchor_copies_the_journal_anew() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wc").join("journal.jsonl");
        let home = dir.path().join("home");
        let anchored = || Journal::new(RealDisk::shared(), JournalPaths::beside(&path), Some(AnchorStore::new(&home)));
        let scope = Scope::WorkingCopy { root: "/wc".into() };
        anchored().append(event(1), Some(&scope)).unwrap();
        // A handle with no anchor store leaves the anchor behind: its line lies past it.
        Journal::new(RealDisk::shared(), JournalPaths::beside(&path), None).append(event(2), None).unwrap();
        let before = std::fs::read(&path).unwrap();
        anchored().append(event(3), None).unwrap();
        let after = std::fs::read(&path).unwrap();
        assert!(after.len() > before.len() && after.starts_with(&before), "the bytes past the anchor are where they were");
        assert_eq!(clean_events(&path), 4);
        // Without an anchor the journal is made anew: a copy, renamed over its name.
        std::fs::remove_dir_all(home.join("anchors")).unwrap();
        let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let old = ino(&path);
        anchored().append(event(4), None).unwrap();
        let last = std::fs::read(&path).unwrap();
        assert!(last.len() > after.len() && last.starts_with(&after), "the copy holds every byte");
        assert_ne!(ino(&path), old, "a new file under the name");
        assert_eq!(clean_events(&path), 5);
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(names.iter().all(|n| !n.to_string_lossy().contains(".tmp-")), "no temp file is left: {names:?}");
    }
}
