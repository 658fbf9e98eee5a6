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
        if !id_is_safe(journal_id) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "journal id is not a safe file name"));
        }
        let f = self.open_record(storage, journal_id)?;
        f.write_at(encode_record(anchor).as_bytes(), 0)
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
        let bytes = super::storage::read_small(storage, &path, PATH_RECORD_MAX_BYTES)?;
        let text = String::from_utf8_lossy(&bytes);
        Ok(text.lines().next().map(str::to_owned).filter(|id| id_is_safe(id)))
    }

    /// Records which journal lives at a path: written at creation, and by repair when a
    /// person accepts a replaced journal.
    pub fn set_id_at_path(&self, storage: &dyn Storage, journal_path: &Path, journal_id: &str) -> io::Result<()> {
        let path = self.path_index(journal_path);
        storage.create_dir_all(path.parent().expect("index has a folder"), 0o700)?;
        let record = format!("{journal_id}\n{}\n", journal_path.display());
        super::storage::write_atomic(storage, &path, record.as_bytes(), false)
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
