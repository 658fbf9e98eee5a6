//! The away record the hooks last read in full, kept beside the repository journal in the
//! home store (`away-kept.json`) under a key made from the identity (`change_identity`:
//! device, inode, size, mode, change and modification times) of every path that read comes
//! from ([`Store::read_set`]: the journal, its path record, its anchor, its `state.json` and
//! its checkpoints folder) and from the build that folded it. An unchanged record answers a
//! hook with five `lstat`s, the kept file's own and one small read, instead of the
//! journal's first line, its path record, its `state.json`, its anchor and its last lines;
//! any change makes a new key (every append changes the journal's size, a repair its
//! inode), and the next hook reads the record in full again (docs/decisions.md, "The away
//! record, kept").
//!
//! The key is taken before the full read, with the journal id the path record names, so an
//! append that lands during the read leaves the record under a key no later read makes; a
//! read whose journal is not the one the path record named is not kept. A read is not kept
//! while any of its files changed within [`RACY_WITHIN`]: a file system keeps times to a
//! tick (ext4 to the kernel's coarse clock, older ones to the second), and a same-size
//! rewrite in place within the tick a key was taken in would leave the key standing. Only a
//! clean read is kept: a record that reads as corrupt or unreadable says so on every hook.
//!
//! It lives in the home store, beside what it is read from, not in the working copy: an
//! agent whose sandbox lets it write its working copy must not be able to write what tells
//! the hooks whether the person is away. A cache: written atomically, bounded by
//! [`AWAY_KEPT_MAX_BYTES`], and read as absent when it is missing, not this user's regular
//! file, bigger, not as its digest says, from another build, or not passing the checks a
//! `state.json` read back is held to (`fold::cached_state_passes`).

use serde::{Deserialize, Serialize};

use crate::away::AwayState;
use crate::fold::{FoldedState, JournalSummary};
use crate::journal::append::JournalError;
use crate::journal::storage::{RealDisk, Storage, read_small, untrusted_reason, write_atomic};
use crate::platform::fs::{change_identity, changed_at_nanos, path_bytes};
use crate::store::projection::{STATE_SCHEMA, UNSEALED, digest_holds, render_sealed};
use crate::store::{CurrentState, Store};

/// The kept record's file name, beside the repository journal.
pub const AWAY_KEPT_FILE: &str = "away-kept.json";
/// The kept record is written and read up to this many bytes; a record that serializes
/// larger is read in full on every hook. An away record of a night's work is a few KB
/// (its decisions and trade-offs are bounded by the fold's own limits).
pub const AWAY_KEPT_MAX_BYTES: usize = 256 << 10;
/// A read is kept only when every file it came from last changed longer ago than this (or
/// is absent): longer than any file system's timestamp granularity abcd runs on (FAT's two
/// seconds is the coarsest).
pub const RACY_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);
/// The build a record was folded by: a record kept by another release (an upgrade, or two
/// installs serving one repository) is read in full. Development builds share a version;
/// the fold's accounting checks in [`take`] tell their records apart, as they tell a
/// `state.json` of another build.
const BUILD: &str = env!("CARGO_PKG_VERSION");
/// The key's domain: a key of another kind of file never equals one of these.
const KEY_CONTEXT: &str = "abcd away kept key v1";
/// The digest's domain, as each projection has its own.
const DIGEST_CONTEXT: &str = "abcd away kept digest v1";

/// The kept record, sealed as the projections are ([`render_sealed`]): a hand edit is not
/// taken, as a hand-edited projection is not.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Kept {
    key: String,
    journal_id: String,
    /// The fold's summary of the journal: with `away`, held to the checks a `state.json`
    /// read back is held to (`fold::cached_state_passes`), which tell a record a build that
    /// folded the away events otherwise wrote (one that kept no decisions or refusals).
    journal: JournalSummary,
    away: AwayState,
    digest: String,
}

/// The record in `bytes`, when it is of its shape and its digest holds.
fn unsealed(bytes: &[u8]) -> Option<Kept> {
    let kept: Kept = serde_json::from_slice(bytes).ok()?;
    digest_holds(DIGEST_CONTEXT, bytes, &kept.digest).then_some(kept)
}

/// The key of the record `store` reads, read as journal `journal_id` by build `build`, as
/// its files stand now, and whether one of them changed after `settled` (`None` for a key
/// that is only compared): `None` when the journal is not there, the id is not one a file
/// name may hold, or a file's identity cannot be read.
fn key(store: &Store, journal_id: &str, build: &str, settled: Option<i128>) -> Option<(String, bool)> {
    let files = store.read_set(journal_id)?;
    let mut h = blake3::Hasher::new_derive_key(KEY_CONTEXT);
    let mut field = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(build.as_bytes());
    field(STATE_SCHEMA.as_bytes());
    field(journal_id.as_bytes());
    let mut racy = false;
    for file in &files {
        field(path_bytes(file));
        match std::fs::symlink_metadata(file) {
            Ok(m) => {
                field(&change_identity(&m));
                racy |= settled.is_some_and(|s| changed_at_nanos(&m) > s);
            }
            // The journal itself must be there: with none, there is no record to keep.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && *file != store.journal().paths().journal => field(b"absent"),
            Err(_) => return None,
        }
    }
    Some((h.finalize().to_hex().to_string(), racy))
}

/// The kept record's path: beside the journal `store` reads.
fn kept_path(store: &Store) -> std::path::PathBuf {
    store.journal().paths().dir().join(AWAY_KEPT_FILE)
}

/// The record kept for the repository journal `store` reads, when its key still holds and
/// its text passes the fold's checks.
pub fn take(store: &Store) -> Option<AwayState> {
    let path = kept_path(store);
    let facts = RealDisk.facts(&path).ok()??;
    if untrusted_reason(&facts).is_some() || facts.len > AWAY_KEPT_MAX_BYTES as u64 {
        return None;
    }
    let kept = unsealed(&read_small(&RealDisk, &path, AWAY_KEPT_MAX_BYTES as u64).ok()?)?;
    if key(store, &kept.journal_id, BUILD, None)?.0 != kept.key {
        return None;
    }
    let folded = FoldedState { journal: kept.journal, away: kept.away, ..FoldedState::default() };
    crate::fold::cached_state_passes(&folded).then_some(folded.away)
}

/// The repository journal's state read in full, and its away record kept when the read is
/// clean. The key is taken before the read.
pub fn read_keeping(store: &Store) -> Result<CurrentState, JournalError> {
    read_keeping_with(store, crate::clock::wall_now(), || ())
}

/// [`read_keeping`] at wall-clock time `now` (file times are the wall clock's, never a test
/// instant), with `between` run after the key is taken and before the read: where a test
/// lands another writer's append.
fn read_keeping_with(store: &Store, now: jiff::Timestamp, between: impl FnOnce()) -> Result<CurrentState, JournalError> {
    let settled = now.as_nanosecond() - RACY_WITHIN.as_nanos() as i128;
    let before = Before::now(store, BUILD, settled);
    between();
    let current = store.current_state()?;
    if let Some(before) = before
        && current.degraded.is_none()
    {
        before.keep(store, &current.journal_id, &current.state);
    }
    Ok(current)
}

/// What a full read is kept under, taken before it: the journal id the path record names
/// and the key its files make now.
struct Before {
    journal_id: String,
    key: String,
}

impl Before {
    /// `None` when the path record names no journal, no key can be made, or a file changed
    /// after `settled` (nanoseconds since the epoch): the read is then not kept.
    fn now(store: &Store, build: &str, settled: i128) -> Option<Before> {
        let journal = store.journal();
        let journal_id = journal.anchors()?.id_at_path(&RealDisk, &journal.paths().journal).ok()??;
        let (key, racy) = key(store, &journal_id, build, Some(settled))?;
        (!racy).then_some(Before { journal_id, key })
    }

    /// Keeps the away record of `state`, a clean read of journal `journal_id`: only when
    /// that journal is the one the key was made for. A cache: a failed write only means the
    /// next hook reads in full.
    fn keep(self, store: &Store, journal_id: &str, state: &FoldedState) {
        if journal_id != self.journal_id {
            return;
        }
        let kept = Kept {
            key: self.key,
            journal_id: self.journal_id,
            journal: state.journal.clone(),
            away: state.away.clone(),
            digest: UNSEALED.into(),
        };
        let bytes = render_sealed(DIGEST_CONTEXT, &kept);
        if bytes.len() > AWAY_KEPT_MAX_BYTES {
            return;
        }
        let _ = write_atomic(&RealDisk, &kept_path(store), &bytes, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::away::{AwayQueued, AwaySet};
    use crate::event::{self, Scope};
    use crate::journal::format::{Actor, NewEvent};
    use crate::places::tests::Folder;
    use jiff::ToSpan;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    /// A kept record's bytes, its digest (whatever `kept` holds) written anew: a forger's.
    fn sealed(kept: &Kept) -> Vec<u8> {
        render_sealed(DIGEST_CONTEXT, &Kept { digest: UNSEALED.into(), ..kept.clone() })
    }

    /// Writes into `bytes` (a kept record, its white space changed) the digest they now have,
    /// by the projections' rule: the digest's digits read as `0`s while hashing.
    fn reseal(bytes: &mut [u8]) {
        let key = b"\n  \"digest\": \"";
        let at = bytes.windows(key.len()).position(|w| w == key).unwrap() + key.len();
        bytes[at..at + UNSEALED.len()].copy_from_slice(UNSEALED.as_bytes());
        let digest = blake3::Hasher::new_derive_key(DIGEST_CONTEXT).update(bytes).finalize().to_hex();
        bytes[at..at + UNSEALED.len()].copy_from_slice(digest.as_bytes());
    }

    /// A wall clock past [`RACY_WITHIN`] from now: what a later hook sees.
    fn settled_now() -> jiff::Timestamp {
        crate::clock::wall_now().checked_add(jiff::SignedDuration::from_secs(3_600)).unwrap()
    }

    /// A managed working copy whose repository journal holds one away window.
    struct Away {
        _folder: Folder,
        store: Store,
        scope: Scope,
    }

    impl Away {
        fn new() -> Away {
            let folder = Folder::managed();
            let (paths, scope) = folder.place("").repository().unwrap();
            let store = Store::new(folder.place("").open_scoped(RealDisk::shared(), paths, &scope).unwrap());
            let start = crate::clock::wall_now();
            let set = AwaySet {
                set_by: "Pat".into(),
                working_copy: "/w/a".into(),
                start,
                end: start.checked_add(8.hours()).unwrap(),
                hold_pushes: false,
                notify: None,
            };
            let away = Away { _folder: folder, store, scope };
            away.append(event::AWAY_SET, serde_json::to_value(set).unwrap());
            away
        }

        fn append(&self, kind: &str, data: serde_json::Value) {
            let event = NewEvent { kind: kind.into(), actor: Actor::this_process(None), data };
            self.store.append(&[event], Some(&self.scope)).unwrap();
        }

        fn queue(&self, step: &str) {
            self.append(event::AWAY_QUEUED, serde_json::to_value(AwayQueued { step: step.into(), working_copy: "/w/b".into() }).unwrap());
        }

        fn journal_id(&self) -> String {
            self.store.current_state().unwrap().journal_id
        }

        fn read_set(&self) -> [PathBuf; 5] {
            self.store.read_set(&self.journal_id()).unwrap()
        }

        /// A full read of the record, kept as a hook keeps it once its files have settled.
        fn read_and_keep(&self) -> AwayState {
            read_keeping_with(&self.store, settled_now(), || ()).unwrap().state.away
        }

        /// When the last of the files a read comes from changed, in nanoseconds.
        fn last_change(&self) -> i128 {
            self.read_set().iter().filter_map(|f| std::fs::symlink_metadata(f).ok()).map(|m| changed_at_nanos(&m)).max().unwrap()
        }

        fn take(&self) -> Option<AwayState> {
            take(&self.store)
        }

        fn kept_file(&self) -> PathBuf {
            kept_path(&self.store)
        }
    }

    #[test]
    fn the_kept_record_is_taken_until_a_file_it_came_from_changes() {
        let a = Away::new();
        assert_eq!(a.take(), None, "nothing kept yet");
        let read = a.read_and_keep();
        assert!(read.window.is_some());
        assert_eq!(a.take().as_ref(), Some(&read));
        // An append (the journal, its anchor and its state.json change).
        a.queue("push feat/x");
        assert_eq!(a.take(), None, "kept from before the append");
        let read = a.read_and_keep();
        assert_eq!(read.window.as_ref().unwrap().queue.len(), 1);
        assert_eq!(a.take().as_ref(), Some(&read));
        // Each file or folder the read comes from, changed alone: its mode, a change no
        // clock tick can hide.
        std::fs::create_dir_all(&a.read_set()[4]).unwrap();
        for file in a.read_set() {
            a.read_and_keep();
            assert!(a.take().is_some(), "{}", file.display());
            let mode = std::fs::symlink_metadata(&file).unwrap().permissions().mode();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode ^ 0o040)).unwrap();
            assert_eq!(a.take(), None, "{} changed", file.display());
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }

    #[test]
    fn an_append_during_a_read_never_leaves_what_was_read_before_it_taken() {
        let a = Away::new();
        // Another hook's append lands between this hook's key and its read.
        let read = read_keeping_with(&a.store, settled_now(), || a.queue("push feat/x")).unwrap();
        assert_eq!(read.state.away.window.as_ref().unwrap().queue.len(), 1);
        assert_eq!(a.take(), None, "kept under the key from before the append, which no read makes now");
        // Were the state from before the append kept under the key from after it, the next
        // hook would take a record without the queued step.
        a.read_and_keep();
        assert_eq!(a.take().unwrap().window.unwrap().queue.len(), 1);
    }

    #[test]
    fn a_read_of_a_journal_other_than_the_one_the_path_record_names_is_not_kept() {
        let a = Away::new();
        let settled = settled_now().as_nanosecond();
        let state = a.store.current_state().unwrap().state;
        Before::now(&a.store, BUILD, settled).unwrap().keep(&a.store, "0123456789abcdef0123456789abcdef", &state);
        assert!(!a.kept_file().exists());
        Before::now(&a.store, BUILD, settled).unwrap().keep(&a.store, &a.journal_id(), &state);
        assert!(a.kept_file().exists(), "the one it names is kept");
    }

    #[test]
    fn a_record_kept_by_another_build_is_not_taken() {
        let a = Away::new();
        let state = a.store.current_state().unwrap().state;
        Before::now(&a.store, "0.0.0-another", settled_now().as_nanosecond()).unwrap().keep(&a.store, &a.journal_id(), &state);
        assert!(a.kept_file().exists());
        assert_eq!(a.take(), None);
    }

    #[test]
    fn a_read_of_a_corrupt_record_is_not_kept() {
        let a = Away::new();
        a.queue("push feat/a");
        a.queue("push feat/b");
        // A line inside the journal changed: its hash no longer holds.
        let text = std::fs::read_to_string(&a.store.journal().paths().journal).unwrap();
        std::fs::write(&a.store.journal().paths().journal, text.replace("push feat/a", "push feat/c")).unwrap();
        std::fs::remove_file(&a.read_set()[3]).unwrap();
        let read = read_keeping_with(&a.store, settled_now(), || ()).unwrap();
        assert!(read.degraded.is_some());
        assert!(!a.kept_file().exists());
    }

    #[test]
    fn a_kept_file_not_this_users_alone_or_past_its_cap_or_edited_is_not_taken() {
        let a = Away::new();
        a.read_and_keep();
        let file = a.kept_file();
        let bytes = std::fs::read(&file).unwrap();
        // Writable by others.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(a.take(), None);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(a.take().is_some());
        // A symlink to it.
        let aside = file.with_file_name("kept-aside.json");
        std::fs::rename(&file, &aside).unwrap();
        std::os::unix::fs::symlink(&aside, &file).unwrap();
        assert_eq!(a.take(), None);
        std::fs::remove_file(&file).unwrap();
        // At its cap (JSON may end in white space, sealed as written), and one byte past it.
        let mut padded = bytes.clone();
        padded.resize(AWAY_KEPT_MAX_BYTES, b' ');
        reseal(&mut padded);
        std::fs::write(&file, &padded).unwrap();
        assert_eq!(std::fs::metadata(&file).unwrap().len(), AWAY_KEPT_MAX_BYTES as u64);
        assert!(a.take().is_some(), "at the cap");
        padded.push(b' ');
        reseal(&mut padded);
        std::fs::write(&file, &padded).unwrap();
        assert_eq!(a.take(), None, "past the cap");
        // A hand edit: the window gone, the digest as it was; and white space added.
        let mut kept: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        kept["away"]["window"] = serde_json::Value::Null;
        std::fs::write(&file, serde_json::to_vec_pretty(&kept).unwrap()).unwrap();
        assert_eq!(a.take(), None, "edited");
        std::fs::write(&file, [&bytes[..], b" "].concat()).unwrap();
        assert_eq!(a.take(), None, "white space added");
        std::fs::write(&file, &bytes).unwrap();
        assert!(a.take().is_some(), "as written");
    }

    #[test]
    fn a_record_is_kept_up_to_its_cap_and_not_past_it() {
        let a = Away::new();
        let mut state = a.store.current_state().unwrap().state;
        let settled = settled_now().as_nanosecond();
        let size = |state: &FoldedState| {
            let before = Before::now(&a.store, BUILD, settled).unwrap();
            let kept = Kept {
                key: before.key,
                journal_id: before.journal_id,
                journal: state.journal.clone(),
                away: state.away.clone(),
                digest: UNSEALED.into(),
            };
            sealed(&kept).len()
        };
        let short = AWAY_KEPT_MAX_BYTES - size(&state);
        state.away.window.as_mut().unwrap().set_by.push_str(&"p".repeat(short));
        assert_eq!(size(&state), AWAY_KEPT_MAX_BYTES);
        Before::now(&a.store, BUILD, settled).unwrap().keep(&a.store, &a.journal_id(), &state);
        assert_eq!(std::fs::metadata(a.kept_file()).unwrap().len(), AWAY_KEPT_MAX_BYTES as u64, "at the cap");
        std::fs::remove_file(a.kept_file()).unwrap();
        state.away.window.as_mut().unwrap().set_by.push('p');
        Before::now(&a.store, BUILD, settled).unwrap().keep(&a.store, &a.journal_id(), &state);
        assert!(!a.kept_file().exists(), "past the cap");
    }

    #[test]
    fn a_kept_record_with_text_the_fold_would_not_let_in_is_not_taken() {
        let a = Away::new();
        a.read_and_keep();
        let file = a.kept_file();
        let mut kept = unsealed(&std::fs::read(&file).unwrap()).unwrap();
        kept.away.window.as_mut().unwrap().set_by = format!("ghp_{}", "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d");
        std::fs::write(&file, sealed(&kept)).unwrap();
        assert_eq!(a.take(), None);
    }

    /// A record folded by a build that handed the away fold no decisions: the journal's
    /// summary counts one, the record saw none, as `fold::cached_state_passes` tells a
    /// `state.json` of such a build.
    #[test]
    fn a_record_that_does_not_account_for_the_journals_decisions_is_not_taken() {
        let a = Away::new();
        a.read_and_keep();
        let file = a.kept_file();
        let mut kept = unsealed(&std::fs::read(&file).unwrap()).unwrap();
        std::fs::write(&file, sealed(&kept)).unwrap();
        assert!(a.take().is_some(), "sealed again as it was");
        *kept.journal.by_kind.entry(event::DECISION_RECORDED.to_string()).or_default() += 1;
        std::fs::write(&file, sealed(&kept)).unwrap();
        assert_eq!(a.take(), None);
    }

    #[test]
    fn a_read_is_kept_only_once_its_files_last_changed_racy_within_ago() {
        let a = Away::new();
        let edge = a.last_change() + RACY_WITHIN.as_nanos() as i128;
        let at = |nanos: i128| jiff::Timestamp::from_nanosecond(nanos).unwrap();
        read_keeping_with(&a.store, at(edge - 1), || ()).unwrap();
        assert!(!a.kept_file().exists(), "a nanosecond short of the edge");
        read_keeping_with(&a.store, at(edge), || ()).unwrap();
        assert!(a.take().is_some(), "at the edge");
    }

    /// The real disk, recording every path any call names.
    struct Recording(std::sync::Mutex<Vec<PathBuf>>);

    impl Recording {
        fn saw(&self, path: &Path) {
            self.0.lock().unwrap().push(path.to_path_buf());
        }
    }

    type Opened = std::io::Result<Box<dyn crate::journal::storage::StorageFile>>;

    impl crate::journal::storage::Delegate for Recording {
        fn inner(&self) -> &dyn Storage {
            &RealDisk
        }
        fn open_read(&self, path: &Path) -> Opened {
            self.saw(path);
            RealDisk.open_read(path)
        }
        fn open_rw(&self, path: &Path) -> Opened {
            self.saw(path);
            RealDisk.open_rw(path)
        }
        fn open_in_place(&self, path: &Path) -> Opened {
            self.saw(path);
            RealDisk.open_in_place(path)
        }
        fn create_new(&self, path: &Path) -> Opened {
            self.saw(path);
            RealDisk.create_new(path)
        }
        fn open_or_create(&self, path: &Path) -> Opened {
            self.saw(path);
            RealDisk.open_or_create(path)
        }
        fn facts(&self, path: &Path) -> std::io::Result<Option<crate::journal::storage::FileFacts>> {
            self.saw(path);
            RealDisk.facts(path)
        }
        fn list_dir(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
            self.saw(dir);
            RealDisk.list_dir(dir)
        }
        fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
            self.saw(from);
            self.saw(to);
            RealDisk.rename(from, to)
        }
        fn rename_exchange(&self, a: &Path, b: &Path) -> std::io::Result<()> {
            self.saw(a);
            self.saw(b);
            RealDisk.rename_exchange(a, b)
        }
        fn rename_noreplace(&self, from: &Path, to: &Path) -> std::io::Result<()> {
            self.saw(from);
            self.saw(to);
            RealDisk.rename_noreplace(from, to)
        }
        fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
            self.saw(dir);
            RealDisk.sync_dir(dir)
        }
        fn create_dir_all(&self, dir: &Path, mode: u32) -> std::io::Result<()> {
            self.saw(dir);
            RealDisk.create_dir_all(dir, mode)
        }
        fn remove_cache_file(&self, path: &Path) -> std::io::Result<()> {
            self.saw(path);
            RealDisk.remove_cache_file(path)
        }
    }

    /// `Store::read_set` names every path `current_state` reads (a checkpoint file through
    /// its folder), in each way the read goes: from a `state.json` at the head, one behind
    /// it, from a checkpoint with no `state.json`, and from the journal alone.
    #[test]
    fn read_set_covers_every_path_the_read_touches() {
        let a = Away::new();
        // Past the first checkpoint.
        let unknown = || NewEvent { kind: "test.unknown".into(), actor: Actor::this_process(None), data: serde_json::json!({}) };
        for _ in 0..crate::store::checkpoint::CHECKPOINT_EVERY_EVENTS.div_ceil(500) {
            a.store.append(&vec![unknown(); 500], None).unwrap();
        }
        let recording = std::sync::Arc::new(Recording(std::sync::Mutex::new(Vec::new())));
        let journal =
            crate::journal::Journal::new(recording.clone(), a.store.journal().paths().clone(), a.store.journal().anchors().cloned())
                .expecting(a.scope.clone());
        let store = Store::new(journal);
        let set = a.read_set();
        let covered = |p: &PathBuf| set.contains(p) || p.parent() == Some(set[4].as_path());
        let mut checked = 0;
        for way in ["at the head", "behind", "from a checkpoint", "from the journal"] {
            match way {
                "behind" => {
                    // A line past state.json that the projections are allowed to trail by.
                    let event = NewEvent { kind: "test.unknown".into(), actor: Actor::this_process(None), data: serde_json::json!({}) };
                    a.store.journal().append_batch(&[event], None).unwrap();
                }
                "from a checkpoint" => std::fs::remove_file(&set[3]).unwrap(),
                "from the journal" => {
                    let _ = std::fs::remove_dir_all(&set[4]);
                }
                _ => {}
            }
            recording.0.lock().unwrap().clear();
            store.current_state().unwrap();
            let touched = recording.0.lock().unwrap().clone();
            assert!(!touched.is_empty());
            for p in &touched {
                assert!(covered(p), "{way}: the read touched {}, which the read set leaves out", p.display());
                checked += 1;
            }
            if way == "from a checkpoint" {
                assert!(touched.iter().any(|p| p.parent() == Some(set[4].as_path())), "a checkpoint read: {touched:?}");
            }
        }
        assert!(checked > 8);
    }
}
