//! The loop records come from the store's read path, like every other family: `abcd loop
//! drive` (the driver's record) and `abcd resume` (the working copy's folded state) read a
//! projection or checkpoint and the journal's tail, never the whole journal; and a
//! `state.json` or checkpoint written before loops were folded is not believed for a
//! journal that holds a loop.

use crate::common;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use abcd::command::loop_driver::Driver;
use abcd::journal::anchor::AnchorStore;
use abcd::journal::storage::{FileFacts, FileId, RealDisk, Storage, StorageFile};
use abcd::journal::{Actor, Journal, NewEvent};
use abcd::phased::{self, AgentSpec, Config, LoopStarted, Reader};
use abcd::store::{StateBase, Store, checkpoint, projection};
use common::TempJournal;
use serde_json::json;

/// Events besides the loop's: enough for several checkpoints and a journal many times
/// larger than what a tail read may touch.
const OTHER_EVENTS: u64 = 4_000;
/// Events per store append while building.
const BUILD_BATCH: u64 = 500;
/// Journal bytes one read of the folded state may touch: the genesis line, the tail
/// window, the line a projection names, and the events `state.json` may trail by
/// (at most `PROJECTION_LAG_MAX`, twice that at worst).
const TAIL_READ_MAX_BYTES: u64 = 64 * 1024;

/// The real disk, counting the bytes read from one file (the journal).
struct CountingDisk {
    watched: PathBuf,
    read: Arc<AtomicU64>,
}

struct CountingFile {
    inner: Box<dyn StorageFile>,
    read: Option<Arc<AtomicU64>>,
}

impl StorageFile for CountingFile {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = self.inner.read_at(buf, offset)?;
        if let Some(read) = &self.read {
            read.fetch_add(n as u64, Ordering::SeqCst);
        }
        Ok(n)
    }
    fn append(&self, bytes: &[u8]) -> io::Result<()> {
        self.inner.append(bytes)
    }
    fn write_at(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_at(bytes, offset)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()
    }
    fn identity(&self) -> io::Result<Option<FileId>> {
        self.inner.identity()
    }
    fn is_linked(&self) -> io::Result<bool> {
        self.inner.is_linked()
    }
    fn try_claim(&self) -> io::Result<Option<FileFacts>> {
        self.inner.try_claim()
    }
}

impl CountingDisk {
    fn wrap(&self, path: &Path, inner: Box<dyn StorageFile>) -> Box<dyn StorageFile> {
        Box::new(CountingFile { inner, read: (path == self.watched).then(|| self.read.clone()) })
    }
}

impl Storage for CountingDisk {
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(self.wrap(path, RealDisk.open_rw(path)?))
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(self.wrap(path, RealDisk.open_read(path)?))
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(self.wrap(path, RealDisk.create_new(path)?))
    }
    fn open_or_create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(self.wrap(path, RealDisk.open_or_create(path)?))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealDisk.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        RealDisk.sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path, mode: u32) -> io::Result<()> {
        RealDisk.create_dir_all(dir, mode)
    }
    fn facts(&self, path: &Path) -> io::Result<Option<FileFacts>> {
        RealDisk.facts(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        RealDisk.list_dir(dir)
    }
    fn remove_cache_file(&self, path: &Path) -> io::Result<()> {
        RealDisk.remove_cache_file(path)
    }
    fn rename_exchange(&self, a: &Path, b: &Path) -> io::Result<()> {
        RealDisk.rename_exchange(a, b)
    }
    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealDisk.rename_noreplace(from, to)
    }
}

fn new_event(kind: &str, data: serde_json::Value) -> NewEvent {
    NewEvent { kind: kind.into(), actor: Actor::this_process(None), data }
}

fn config() -> Config {
    let agent = |role: &str| AgentSpec {
        template: vec!["agent".into(), role.into(), "{prompt}".into()],
        reader: Reader::Plain,
        worktree: "/w".into(),
    };
    Config {
        implementer: agent("implementer"),
        reviewer: agent("reviewer"),
        checklist: None,
        max_rounds: 2,
        max_turns: phased::DEFAULT_MAX_TURNS,
        completion_signal: phased::agent::DEFAULT_COMPLETION_SIGNAL.into(),
        review_stop_signal: phased::agent::DEFAULT_REVIEW_STOP_SIGNAL.into(),
        advance_prompt: phased::agent::default_advance_prompt(phased::agent::DEFAULT_COMPLETION_SIGNAL, None),
        review_prompt: phased::agent::default_review_prompt(phased::agent::DEFAULT_REVIEW_STOP_SIGNAL),
        feedback_prompt: phased::agent::DEFAULT_FEEDBACK_PROMPT.into(),
    }
}

/// A working copy journal, written through the store as the CLI writes it, holding loop
/// `night` (started, as `abcd loop start` records it) and `OTHER_EVENTS` session starts;
/// the store over it counts the journal bytes it reads.
struct Lab {
    tj: TempJournal,
    store: Store,
    read: Arc<AtomicU64>,
}

impl Lab {
    fn new() -> Lab {
        let tj = TempJournal::new();
        let read = Arc::new(AtomicU64::new(0));
        let disk = Arc::new(CountingDisk { watched: tj.paths.journal.clone(), read: read.clone() });
        let store = Store::new(Journal::new(disk, tj.paths.clone(), Some(AnchorStore::new(&tj.home))));
        let lab = Lab { tj, store, read };
        let driver = json!({"session": null, "process": {"pid": 1, "start_ticks": 1}});
        let run = json!({"run": "night", "working_copy": "/w", "lanes": ["implementer", "reviewer"], "driver": driver});
        let started = json!(LoopStarted { run: "night".into(), config: config() });
        lab.append(vec![new_event(abcd::event::RUN_STARTED, run), new_event(phased::LOOP_STARTED, started)]);
        let mut n = 0;
        while n < OTHER_EVENTS {
            let batch = (n..(n + BUILD_BATCH).min(OTHER_EVENTS))
                .map(|i| new_event("session.started", json!({"session": format!("s{i}"), "source": "startup", "working_copy": "/w"})))
                .collect();
            lab.append(batch);
            n += BUILD_BATCH;
        }
        lab
    }

    fn append(&self, events: Vec<NewEvent>) {
        let (_, _, project_error) = self.store.append(&events, Some(&self.tj.scope())).unwrap();
        assert!(project_error.is_none(), "{project_error:?}");
    }

    /// Journal bytes read by `f`.
    fn bytes_read<T>(&self, f: impl FnOnce() -> T) -> (T, u64) {
        let before = self.read.load(Ordering::SeqCst);
        let out = f();
        (out, self.read.load(Ordering::SeqCst) - before)
    }

    fn journal_len(&self) -> u64 {
        std::fs::metadata(self.tj.path()).unwrap().len()
    }
}

/// The driver's record (what `abcd loop drive` and every control decide from) and the
/// folded state `abcd resume` lists loops from are read from `state.json` and the tail:
/// the journal bytes read stay within a bound that is a small part of the journal, with
/// `state.json` current, trailing, and gone (then the newest checkpoint serves).
#[test]
fn the_loop_record_is_read_from_the_projection_and_the_tail_not_the_whole_journal() {
    let lab = Lab::new();
    let len = lab.journal_len();
    assert!(len > 16 * TAIL_READ_MAX_BYTES, "the journal ({len} bytes) is far larger than a tail read");
    let scope = lab.tj.scope();
    let driver = Driver::new(&lab.store, &scope, PathBuf::from("/w"), "night".into(), PathBuf::from("/bin/true"));
    let look = |what: &str| {
        let (record, read) = lab.bytes_read(|| driver.record().unwrap());
        assert_eq!((record.run.as_str(), record.state, record.turns), ("night", phased::RunState::Running, 0), "{what}");
        assert!(read <= TAIL_READ_MAX_BYTES, "{what}: the driver's record read {read} of the journal's {len} bytes");
        let (current, read) = lab.bytes_read(|| lab.store.current_state().unwrap());
        assert!(current.state.loops.loops.contains_key("night"), "{what}");
        assert!(read <= TAIL_READ_MAX_BYTES, "{what}: the folded state read {read} of the journal's {len} bytes");
        current.base
    };
    assert_eq!(look("state.json current"), StateBase::ProjectionCurrent);
    // A few events appended behind the store's back: state.json trails, the tail is folded.
    let events: Vec<NewEvent> = (0..10).map(|i| new_event("compaction.recorded", json!({"n": i}))).collect();
    lab.store.journal().append_batch(&events, Some(&scope)).unwrap();
    assert!(matches!(look("state.json behind"), StateBase::Projection { .. }));
    std::fs::remove_file(lab.tj.paths.dir().join(projection::STATE_FILE)).unwrap();
    assert!(matches!(look("state.json gone"), StateBase::Checkpoint { .. }));
}

/// `state.json` and checkpoints as a build that did not fold loops wrote them: the same
/// state with no `loops`, sealed as abcd seals them. For a journal that holds a loop
/// neither is believed: the reader folds the journal again and finds the loop.
#[test]
fn a_state_json_or_checkpoint_from_before_loops_were_folded_is_not_believed() {
    let lab = Lab::new();
    let dir = lab.tj.paths.dir();
    let state_path = dir.join(projection::STATE_FILE);
    let mut file: serde_json::Value = serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    assert!(file["state"]["loops"]["loops"]["night"].is_object(), "this build writes the loop records");
    file["state"].as_object_mut().unwrap().remove("loops");
    std::fs::write(&state_path, projection::seal_state_json(&file)).unwrap();
    let current = lab.store.current_state().unwrap();
    assert!(current.state.loops.loops.contains_key("night"));
    assert!(matches!(current.base, StateBase::Checkpoint { .. }), "the older state.json is passed over: {:?}", current.base);

    let cps = checkpoint::list(&RealDisk, &lab.tj.paths.checkpoints).unwrap();
    assert!(cps.len() >= 2, "{cps:?}");
    for (_, path) in &cps {
        let mut cp = checkpoint::load(&RealDisk, path).unwrap().unwrap();
        assert!(cp.state.loops.loops.contains_key("night"));
        cp.state.loops = phased::LoopRecords::default();
        let older = checkpoint::encode(&cp);
        assert!(checkpoint::decode(&older).is_err(), "a checkpoint without the loop it counts is refused");
        std::fs::write(path, older).unwrap();
    }
    let current = lab.store.current_state().unwrap();
    assert_eq!(current.base, StateBase::Genesis, "every cache predates loop folding");
    let r = &current.state.loops.loops["night"];
    assert_eq!((r.run.as_str(), r.state), ("night", phased::RunState::Running));
}
