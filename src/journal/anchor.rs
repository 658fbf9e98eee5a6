//! The head anchor: after each acknowledged append, the head's seq, offset and hash are
//! also kept in the home store, keyed by the journal id, so a journal that was cut short,
//! rolled back or replaced is named instead of silently accepted. A reader that finds
//! damage anywhere in the journal marks the record (`abcd-damage/v1`), so the appender,
//! which reads only the journal's tail, refuses until `abcd journal repair`. One fixed-width record
//! per journal, rewritten in place under the journal lock; a cache, never synced: a
//! stale anchor only says less, and a torn one fails its check and counts as absent.

use std::io;
use std::path::{Path, PathBuf};

use super::format::Hash;
use super::scan::Head;
use super::storage::{Storage, StorageFile};

const RECORD_TAG: &str = "abcd-anchor/v1";
/// The same record, marked: a full read found damage in the journal.
const DAMAGE_TAG: &str = "abcd-damage/v1";
const _: () = assert!(RECORD_TAG.len() == DAMAGE_TAG.len(), "a marked record is as long as any other");
/// `tag seq offset end hash check\n` with fixed-width numbers.
const RECORD_BYTES: usize = RECORD_TAG.len() + 1 + 20 + 1 + 20 + 1 + 20 + 1 + 64 + 1 + 16 + 1;
const CHECK_CONTEXT: &str = "abcd anchor v1 record check";
/// A path-index record (journal id and path) is at most this long.
const PATH_RECORD_MAX_BYTES: u64 = 8 * 1024;

/// The anchors of one home store.
#[derive(Clone, Debug)]
pub struct AnchorStore {
    dir: PathBuf,
}

/// What the home store remembers about a journal's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    pub seq: u64,
    pub offset: u64,
    pub end: u64,
    pub hash: Hash,
    /// A reader found damage in the journal after this head was anchored; appends are
    /// refused until a repair writes the anchor again.
    pub damage_found: bool,
}

/// An anchor record file a long-lived journal handle keeps open (`store_kept`).
pub struct KeptAnchor {
    journal_id: String,
    file: Box<dyn StorageFile>,
}

impl From<Anchor> for Head {
    fn from(a: Anchor) -> Head {
        Head { seq: a.seq, hash: a.hash, offset: a.offset, end: a.end }
    }
}

impl From<Head> for Anchor {
    fn from(h: Head) -> Anchor {
        Anchor { seq: h.seq, offset: h.offset, end: h.end, hash: h.hash, damage_found: false }
    }
}

impl AnchorStore {
    pub fn new(home: &Path) -> AnchorStore {
        AnchorStore { dir: home.join("anchors") }
    }

    fn record_path(&self, journal_id: &str) -> PathBuf {
        self.dir.join(format!("{journal_id}.anchor"))
    }

    fn path_index(&self, journal_path: &Path) -> PathBuf {
        let key = blake3::hash(journal_path.as_os_str().as_encoded_bytes()).to_hex();
        self.dir.join("paths").join(&key[..32])
    }

    /// The anchor's file of `journal_id`, when the id is one a file name may hold.
    pub fn record_file(&self, journal_id: &str) -> Option<PathBuf> {
        id_is_safe(journal_id).then(|| self.record_path(journal_id))
    }

    /// The file recording which journal `journal_path` first held ([`AnchorStore::id_at_path`]).
    pub fn path_record_file(&self, journal_path: &Path) -> PathBuf {
        self.path_index(journal_path)
    }

    /// Reads the anchor; `Ok(None)` when absent or unreadable as a record.
    pub fn load(&self, storage: &dyn Storage, journal_id: &str) -> io::Result<Option<Anchor>> {
        if !id_is_safe(journal_id) {
            return Ok(None);
        }
        let path = self.record_path(journal_id);
        if !super::storage::home_file_ok(storage, &path)? {
            return Ok(None);
        }
        // A record of another size is not a record: absent, like a torn one.
        match super::storage::read_small(storage, &path, RECORD_BYTES as u64) {
            Ok(bytes) => Ok(decode_record(&bytes)),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Overwrites the anchor in place. Called with the journal lock held, so anchors of
    /// one journal are written in append order.
    pub fn store(&self, storage: &dyn Storage, journal_id: &str, anchor: Anchor) -> io::Result<()> {
        self.write_record(storage, journal_id, anchor).map(drop)
    }

    /// `store`, synced: for a repair, which rewrites the journal so that an older anchor
    /// (naming lines at offsets that moved) would read as a replaced journal after a crash.
    pub fn store_durably(&self, storage: &dyn Storage, journal_id: &str, anchor: Anchor) -> io::Result<()> {
        self.write_record(storage, journal_id, anchor)?.sync_data()
    }

    fn write_record(&self, storage: &dyn Storage, journal_id: &str, anchor: Anchor) -> io::Result<Box<dyn StorageFile>> {
        if !id_is_safe(journal_id) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "journal id is not a safe file name"));
        }
        let f = self.open_record(storage, journal_id)?;
        f.write_at(encode_record(anchor).as_bytes(), 0)?;
        Ok(f)
    }

    /// Opens (or creates) the journal's record, creating the anchors folder only when it
    /// is missing: an append pays one open, not a mkdir that fails and a stat besides.
    fn open_record(&self, storage: &dyn Storage, journal_id: &str) -> io::Result<Box<dyn StorageFile>> {
        let path = self.record_path(journal_id);
        match storage.open_or_create(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                storage.create_dir_all(&self.dir, 0o700)?;
                storage.open_or_create(&path)
            }
            other => other,
        }
    }

    /// Like `store`, through the record file `kept` holds while it is this journal's (no
    /// mkdir, stat, open or close), leaving the file it wrote in `kept` for the next append
    /// of a long-lived handle. A record a person deleted or moved under a live handle keeps
    /// being written where it went: the anchor at its path then goes stale or missing, which
    /// only says less, as after any missed anchor write (and the next handle to open it
    /// writes it again).
    pub fn store_kept(&self, storage: &dyn Storage, kept: &mut Option<KeptAnchor>, journal_id: &str, anchor: Anchor) -> io::Result<()> {
        let record = encode_record(anchor);
        if let Some(k) = kept.as_ref()
            && k.journal_id == journal_id
        {
            return k.file.write_at(record.as_bytes(), 0);
        }
        *kept = None;
        if !id_is_safe(journal_id) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "journal id is not a safe file name"));
        }
        let file = self.open_record(storage, journal_id)?;
        file.write_at(record.as_bytes(), 0)?;
        if file.identity()?.is_some() {
            *kept = Some(KeptAnchor { journal_id: journal_id.to_owned(), file });
        }
        Ok(())
    }

    /// The journal id first recorded for a journal path, if any.
    pub fn id_at_path(&self, storage: &dyn Storage, journal_path: &Path) -> io::Result<Option<String>> {
        let path = self.path_index(journal_path);
        if !super::storage::home_file_ok(storage, &path)? {
            return Ok(None);
        }
        // A record over its cap is not a record: absent, like an anchor of another size.
        let bytes = match super::storage::read_small(storage, &path, PATH_RECORD_MAX_BYTES) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => return Ok(None),
            Err(e) => return Err(e),
        };
        let text = String::from_utf8_lossy(&bytes);
        Ok(text.lines().next().map(str::to_owned).filter(|id| id_is_safe(id)))
    }

    /// What the path's record says about what the path holds now (`now`): `Some` when
    /// it names a journal other than the one there (none, a cut first line, another id),
    /// with that journal's anchor when the home store still has it.
    pub fn path_replaced(&self, storage: &dyn Storage, journal_path: &Path, now: Holds) -> io::Result<Option<PathReplaced>> {
        Ok(self.id_at_path(storage, journal_path)?.and_then(|recorded| self.compare_record(storage, recorded, now)))
    }

    /// [`Self::path_replaced`] with the path's record already read (`recorded`).
    pub fn compare_record(&self, storage: &dyn Storage, recorded: String, now: Holds) -> Option<PathReplaced> {
        if matches!(&now, Holds::Journal(id) if *id == recorded) {
            return None;
        }
        // An unreadable anchor only says less: the path's record alone names the loss.
        let anchor = self.load(storage, &recorded).ok().flatten();
        Some(PathReplaced { recorded, anchor, now })
    }

    /// Records which journal lives at a path: written at creation, and by repair when a
    /// person accepts a replaced journal or starts a new one in place of a lost one.
    pub fn set_id_at_path(&self, storage: &dyn Storage, journal_path: &Path, journal_id: &str) -> io::Result<()> {
        let path = self.path_index(journal_path);
        storage.create_dir_all(path.parent().expect("index has a folder"), 0o700)?;
        let record = format!("{journal_id}\n{}\n", journal_path.display());
        super::storage::write_atomic(storage, &path, record.as_bytes(), false)
    }
}

/// What a journal path holds now, as its path record is checked against it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holds {
    /// No file, or an empty one.
    Nothing,
    /// Only a first line cut short (no whole genesis).
    CutGenesis,
    /// A journal with this id.
    Journal(String),
}

/// A path whose record names a journal it no longer holds: the events acknowledged on the
/// recorded journal are not in what is there now (journal-format/SPEC.md §11).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathReplaced {
    /// The journal the path's record names.
    pub recorded: String,
    /// The recorded journal's head anchor, when the home store still has it.
    pub anchor: Option<Anchor>,
    pub now: Holds,
}

impl std::fmt::Display for PathReplaced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "this path held journal {}", self.recorded)?;
        match self.anchor {
            Some(a) => {
                let events = a.seq + 1;
                let s = if events == 1 { "" } else { "s" };
                write!(f, " with {events} acknowledged event{s} (seq 0 to {})", a.seq)?
            }
            None => write!(f, " (its head anchor is gone from the home store, so how many events were acknowledged is unknown)")?,
        }
        match &self.now {
            Holds::Nothing => write!(f, " and now holds nothing: the journal was emptied or deleted"),
            Holds::CutGenesis => write!(f, " and now holds only a first line cut short: the journal was cut inside its first line"),
            Holds::Journal(id) => write!(f, " and now holds journal {id}: it was replaced"),
        }
    }
}

impl PathReplaced {
    /// What a person can do about it, in words for a refusal or a reader's note.
    pub fn remedy(&self) -> String {
        let accept = match &self.now {
            Holds::Journal(id) => {
                format!("to accept journal {id} as this path's journal, run `abcd journal repair` (it records the loss in that journal)")
            }
            Holds::Nothing | Holds::CutGenesis => {
                "to start afresh here on purpose, run `abcd journal repair` (it starts a new journal whose first event records the loss)"
                    .into()
            }
        };
        format!(
            "put journal {} back if a copy of it exists (`abcd journal restore` rebuilds it from this machine's mirror, if it was pushed), or, {accept}",
            self.recorded
        )
    }
}

/// Journal ids are hex; anything else never becomes part of a path.
fn id_is_safe(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|c| c.is_ascii_hexdigit())
}

/// The record check's hasher; the context key is derived once (it is written every append).
fn check_hasher() -> blake3::Hasher {
    static KEYED: std::sync::LazyLock<blake3::Hasher> = std::sync::LazyLock::new(|| blake3::Hasher::new_derive_key(CHECK_CONTEXT));
    KEYED.clone()
}

fn encode_record(a: Anchor) -> String {
    let tag = if a.damage_found { DAMAGE_TAG } else { RECORD_TAG };
    let body = format!("{tag} {:020} {:020} {:020} {}", a.seq, a.offset, a.end, a.hash);
    let check = check_hasher().update(body.as_bytes()).finalize().to_hex();
    let record = format!("{body} {}\n", &check[..16]);
    debug_assert_eq!(record.len(), RECORD_BYTES);
    record
}

fn decode_record(bytes: &[u8]) -> Option<Anchor> {
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.strip_suffix('\n')?;
    let (body, check) = text.rsplit_once(' ')?;
    let want = check_hasher().update(body.as_bytes()).finalize().to_hex();
    if check != &want[..16] {
        return None;
    }
    let mut parts = body.split(' ');
    let damage_found = match parts.next()? {
        RECORD_TAG => false,
        DAMAGE_TAG => true,
        _ => return None,
    };
    let seq = parts.next()?.parse().ok()?;
    let offset = parts.next()?.parse().ok()?;
    let end = parts.next()?.parse().ok()?;
    let hash = Hash::from_hex(parts.next()?.as_bytes())?;
    Some(Anchor { seq, offset, end, hash, damage_found })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_torn_record_reads_as_absent() {
        let a = Anchor { seq: 41, offset: 1000, end: 1300, hash: Hash([7; 32]), damage_found: false };
        let marked = Anchor { damage_found: true, ..a };
        assert_eq!(encode_record(marked).len(), RECORD_BYTES);
        assert_eq!(decode_record(encode_record(marked).as_bytes()), Some(marked));
        let rec = encode_record(a);
        assert_eq!(rec.len(), RECORD_BYTES);
        assert_eq!(decode_record(rec.as_bytes()), Some(a));
        for cut in 0..rec.len() {
            assert_eq!(decode_record(&rec.as_bytes()[..cut]), None);
        }
        let mut flipped = rec.into_bytes();
        flipped[20] ^= 1;
        assert_eq!(decode_record(&flipped), None);
    }

    #[test]
    fn a_path_record_over_its_cap_counts_as_absent() {
        use crate::journal::storage::RealDisk;
        let dir = tempfile::tempdir().unwrap();
        let store = AnchorStore::new(&dir.path().join("home"));
        let journal = dir.path().join("wc/journal.jsonl");
        store.set_id_at_path(&RealDisk, &journal, "ab12").unwrap();
        let index = store.path_index(&journal);
        let record = |len: u64| {
            let mut text = b"ab12\n".to_vec();
            text.resize(len as usize - 1, b'x');
            text.push(b'\n');
            text
        };
        std::fs::write(&index, record(PATH_RECORD_MAX_BYTES)).unwrap();
        assert_eq!(store.id_at_path(&RealDisk, &journal).unwrap().as_deref(), Some("ab12"));
        std::fs::write(&index, record(PATH_RECORD_MAX_BYTES + 1)).unwrap();
        assert_eq!(store.id_at_path(&RealDisk, &journal).unwrap(), None);
    }

    #[test]
    fn a_replaced_path_says_what_it_held_and_what_it_holds() {
        let anchor = Some(Anchor { seq: 2, offset: 820, end: 1248, hash: Hash([7; 32]), damage_found: false });
        let said = |anchor, now| PathReplaced { recorded: "ab12".into(), anchor, now }.to_string();
        assert_eq!(
            said(anchor, Holds::Nothing),
            "this path held journal ab12 with 3 acknowledged events (seq 0 to 2) and now holds nothing: the journal was emptied or deleted"
        );
        let genesis_only = Some(Anchor { seq: 0, offset: 0, end: 395, hash: Hash([7; 32]), damage_found: false });
        assert!(
            said(genesis_only, Holds::CutGenesis)
                .contains("with 1 acknowledged event (seq 0 to 0) and now holds only a first line cut short")
        );
        assert!(said(None, Holds::Journal("cd34".into())).contains("its head anchor is gone"));
        assert!(said(None, Holds::Journal("cd34".into())).ends_with("now holds journal cd34: it was replaced"));
    }

    #[test]
    fn both_stores_create_a_missing_folder_and_overwrite_an_existing_record() {
        use crate::journal::storage::RealDisk;
        let dir = tempfile::tempdir().unwrap();
        let store = AnchorStore::new(&dir.path().join("home"));
        let (a, b) = (
            Anchor::from(Head { seq: 1, offset: 10, end: 20, hash: Hash([1; 32]) }),
            Anchor::from(Head { seq: 2, offset: 20, end: 30, hash: Hash([2; 32]) }),
        );
        store.store(&RealDisk, "ab12", a).unwrap();
        assert_eq!(store.load(&RealDisk, "ab12").unwrap(), Some(a));
        store.store(&RealDisk, "ab12", b).unwrap();
        assert_eq!(store.load(&RealDisk, "ab12").unwrap(), Some(b));
        // The folder gone under a live home store: the next write makes it again.
        std::fs::remove_dir_all(dir.path().join("home")).unwrap();
        let mut kept = None;
        store.store_kept(&RealDisk, &mut kept, "cd34", a).unwrap();
        assert_eq!(store.load(&RealDisk, "cd34").unwrap(), Some(a));
        store.store_kept(&RealDisk, &mut kept, "cd34", b).unwrap();
        assert_eq!(store.load(&RealDisk, "cd34").unwrap(), Some(b));
    }
}
