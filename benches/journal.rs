//! Journal benchmarks (SPEC §10). The machines this runs on are small, shared and noisy,
//! so every benchmark runs its contenders side by side, interleaved, in one run, and
//! reports the median of per-round RATIOS; absolute times are context only.
//!
//! 1. One durable `Journal::append` vs a raw `write` + `fdatasync` of a line of the same
//!    size to a plain O_APPEND file (one operation of each in turn).
//! 2. Append cost on a 1,000-event vs a 1,000,000-event journal: the first append of a
//!    fresh handle (what a new process does), and steady appends through one handle.
//! 3. Group commit: 16 threads appending through one `SharedJournal` vs one thread
//!    appending sequentially (one sync per event).
//! 4. `abcd journal verify` (the release binary, as a subprocess) on the large journal vs
//!    a floor (a subprocess of this bench that reads the file, BLAKE3-hashes it and parses
//!    every line into a `serde_json::Value`), with each process's peak RSS.
//! 5. `abcd checklist add` end to end (the release binary, spawned in a managed working
//!    copy) vs a floor of starting a trivial process that does one raw durable append
//!    (this bench re-executed: `open(O_APPEND)` + `write` + `fdatasync` + exit), and vs
//!    starting a trivial process alone (this bench re-executed, exiting at once).
//! 6. `abcd checklist --json` on a journal of 100,000 events vs one of 100, both holding
//!    the same 50 items: with the projections current (6a), and cold, with the
//!    projections deleted before each run so the reader folds from the newest checkpoint
//!    (6b).
//! 7. `abcd hook session-start` (the release binary, spawned with the host's SessionStart
//!    payload on stdin) in a working copy whose journal holds 100,000 events, 50 items, vs
//!    starting a trivial process (`/usr/bin/true`; this bench's own `exit` helper and
//!    `abcd --version` for context) and vs a minimal Python hook (the interpreter, `-S`,
//!    running a script that reads the payload and `checklist.json` and prints the titles
//!    as the host's JSON reply; `python3 <script>` through PATH for context). Each
//!    session-start appends a durable `session.started` event, as the real hook does.
//! 8. `abcd hook stop` (the release binary, with the host's Stop payload on stdin) in real
//!    git repositories of 50 local branches, some of them own and unpushed, each with a
//!    local bare repository as `origin`: present (a repository with no away mode) and away
//!    (another, built the same way, in `abcd mode autonomous`, with a stub `gh` on PATH
//!    that answers `[]` at once), vs starting a trivial process (`/usr/bin/true`), and one
//!    `git rev-parse` for context (what one git child costs).
//! 9. `abcd resume --json` (the release binary) over 20 runs × 5 lanes of history, 100,000
//!    launch events (each lane 250 launches: intended, started, exited, collected), the runs
//!    spread over two real git working copies (each with a local bare `origin`) and indexed
//!    in the machine journal, every driver and agent a process that is gone, vs starting a
//!    trivial process (`/usr/bin/true`); `abcd --version` and one `git rev-parse` for
//!    context. The history is built through the store (projections and checkpoints as the
//!    CLI leaves them), so the listing reads `state.json`; each lane's worktree is its working
//!    copy's root, so the listing runs git per lane.
//! 10. `abcd resume --json` and `abcd loop drive` (the release binary) in a working copy
//!     whose journal holds a paused loop plus 100,000 other events vs one with 1,000 (each
//!     with a home store of its own), alternating; `abcd --version` as the floor (the same
//!     process doing nothing). The loop is started by `abcd loop start` with two scripted
//!     agents and pauses after one review round (`phase_not_converged`), so `loop drive`
//!     reads the record, claims the run (one durable `run.driver_claimed`), reads the record
//!     again and exits; `resume` lists the loop's run with its record.
//!
//! `cargo bench --bench journal` runs the full sizes. Run without `--bench` (as
//! `cargo test --all-targets` does) it runs a smoke mode with tiny sizes, so CI exercises
//! every path. `ABCD_BENCH_EVENTS` overrides the large journal's size in both modes
//! (benchmarks 2 and 4), `ABCD_BENCH_LIST_EVENTS` the large checklist journal's
//! (benchmarks 6 and 7), `ABCD_BENCH_LOOP_EVENTS` the large loop working copy's (benchmark
//! 10); `ABCD_BENCH_ONLY=1,3` runs only the benchmarks named (for
//! profiling one of them; `ABCD_BENCH_ONLY=8 cargo bench --bench journal` runs only the stop
//! hook's, `ABCD_BENCH_ONLY=9` only the resume listing's); `ABCD_BENCH_KEEP=1` keeps the temp
//! dir, with the working copies and home stores built in it, for profiling by hand.

mod common;

use common::{
    ChildRun, Row, Target, abcd_bin, assert_succeeded, median, ms, rotate, run_child_with_stdin, session_start_payload, true_bin,
    verify_clean, write_ignoring_closed,
};
use std::ffi::{CString, OsString};
use std::fs::{File, OpenOptions};
use std::hint::black_box;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use abcd::checklist::item::slug_from_title;
use abcd::event::Scope;
use abcd::journal::anchor::AnchorStore;
use abcd::journal::append::MAX_BATCH_EVENTS;
use abcd::journal::format::{self, Actor, Hash, NewEvent};
use abcd::journal::group::{SharedJournal, gather_wait_after};
use abcd::journal::group_sync::{GROUP_QUEUE_MAX, GroupCommit};
use abcd::journal::scan::{self, MAX_BATCH_BYTES};
use abcd::journal::storage::{Delegate, DelegateFile, RealDisk, Storage, StorageFile};
use abcd::journal::{Appended, Journal, JournalPaths};
use abcd::ledger::{Driver, ExitStatus, LaunchExited, LaunchIntended, LaunchStarted, ReceiptCollected, RunStarted};
use abcd::platform::process::{self, Liveness, ProcessId};
use abcd::store::checkpoint;
use abcd::store::{StateBase, Store};

/// What one `abcd hook session-start` with a session id appends: `session.started` and the
/// `context.injected` that records what it injected.
const EVENTS_PER_START: u64 = 2;
const EVENTS_ENV: &str = "ABCD_BENCH_EVENTS";
const LIST_EVENTS_ENV: &str = "ABCD_BENCH_LIST_EVENTS";
const LOOP_EVENTS_ENV: &str = "ABCD_BENCH_LOOP_EVENTS";
const ONLY_ENV: &str = "ABCD_BENCH_ONLY";
/// Set (to anything) to keep the temp dir and everything built in it, for profiling.
const KEEP_ENV: &str = "ABCD_BENCH_KEEP";
/// Set for the floor's process (benchmark 4): the journal to read.
const FLOOR_CHILD_ENV: &str = "ABCD_BENCH_FLOOR_CHILD";
/// First argument that makes this bench a helper process of benchmark 5:
/// `abcd-bench-helper exit` exits at once; `abcd-bench-helper append <file> <bytes>`
/// appends one line of that many bytes with `write` + `fdatasync`, then exits.
const HELPER_ARG: &str = "abcd-bench-helper";
/// The host session id the spawned `abcd` sees (it goes into every event's actor).
const BENCH_SESSION: &str = "bench-session-0123456789abcdef";
/// Items in the checklists of benchmark 6.
const LIST_ITEMS: u64 = 50;
/// Events in the small checklist journal of benchmark 6.
const LIST_SMALL_EVENTS: u64 = 100;
/// Items already in the working copy before benchmark 5's timed adds (a realistic list).
const ADD_PREFILL_ITEMS: usize = 20;
/// Events per `Store::append` batch when building the checklist journals (under the
/// batch's byte cap).
const LIST_BUILD_BATCH: u64 = 500;
/// Threads in the group-commit benchmark.
const THREADS: usize = 16;
/// The floor's read size, the same as the streaming verifier's.
const FLOOR_READ_BYTES: usize = 256 * 1024;

/// Sizes and rounds of one run.
struct Config {
    full: bool,
    only: Option<Vec<u32>>,
    large: u64,
    small: u64,
    /// Benchmark 1: rounds, and appends of each contender per round.
    single_rounds: usize,
    single_ops: usize,
    /// Benchmark 2: rounds, and fresh-handle and steady appends per journal per round.
    length_rounds: usize,
    fresh_ops: usize,
    steady_ops: usize,
    /// Benchmark 3: rounds, sequential appends, and appends per thread per round.
    group_rounds: usize,
    group_single_ops: usize,
    group_per_thread: usize,
    /// Benchmark 4: rounds (each runs verify once and the floor once).
    verify_rounds: usize,
    /// Benchmark 5: rounds (each in a fresh working copy), and runs of each contender.
    add_rounds: usize,
    add_ops: usize,
    /// Benchmark 6: the large checklist journal's events; rounds and runs per journal
    /// per round, for the current projections (warm) and with them deleted (cold).
    list_large: u64,
    list_rounds: usize,
    list_ops: usize,
    cold_ops: usize,
    /// Benchmark 7: rounds, runs of each contender per round, and session-starts timed
    /// one each that cross a multiple of 1,000 events (and so also write a checkpoint).
    hook_rounds: usize,
    hook_ops: usize,
    hook_checkpoint_runs: usize,
    /// Benchmark 8: rounds, and runs of each contender per round.
    stop_rounds: usize,
    stop_ops: usize,
    /// Benchmark 9: runs, lanes per run and launches per lane of the history; rounds, and
    /// runs of each contender per round.
    resume_runs: usize,
    resume_lanes: usize,
    resume_launches: u64,
    resume_rounds: usize,
    resume_ops: usize,
    /// Benchmark 10: the other events of the large and the small working copy; rounds, and
    /// runs of each contender per round.
    loop_large: u64,
    loop_small: u64,
    loop_rounds: usize,
    loop_ops: usize,
}

impl Config {
    fn from_env() -> Config {
        let full = std::env::args().any(|a| a == "--bench");
        let default_large = if full { 1_000_000 } else { 200 };
        let large = match std::env::var(EVENTS_ENV) {
            Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{EVENTS_ENV}={v:?} is not a number of events")),
            Err(_) => default_large,
        };
        assert!(large >= 4, "{EVENTS_ENV} must be at least 4");
        let only = std::env::var(ONLY_ENV)
            .ok()
            .map(|v| v.split(',').map(|n| n.trim().parse().unwrap_or_else(|_| panic!("{ONLY_ENV}={v:?}: expected e.g. 1,3"))).collect());
        let small = 1000.min((large / 10).max(2));
        let default_list_large = if full { 100_000 } else { 1_200 };
        let list_large = match std::env::var(LIST_EVENTS_ENV) {
            Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{LIST_EVENTS_ENV}={v:?} is not a number of events")),
            Err(_) => default_list_large,
        };
        assert!(list_large >= LIST_SMALL_EVENTS, "{LIST_EVENTS_ENV} must be at least {LIST_SMALL_EVENTS}");
        let loop_small = if full { LOOP_SMALL_EVENTS } else { LOOP_SMOKE_SMALL_EVENTS };
        let loop_large = match std::env::var(LOOP_EVENTS_ENV) {
            Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{LOOP_EVENTS_ENV}={v:?} is not a number of events")),
            Err(_) if full => 100_000,
            Err(_) => 1_200,
        };
        assert!(loop_large > loop_small, "{LOOP_EVENTS_ENV} must be more than {loop_small}");
        if full {
            Config {
                full,
                only,
                large,
                small,
                single_rounds: 41,
                single_ops: 40,
                length_rounds: 41,
                fresh_ops: 20,
                steady_ops: 30,
                group_rounds: 21,
                group_single_ops: 64,
                group_per_thread: 32,
                verify_rounds: 7,
                add_rounds: 21,
                add_ops: 10,
                list_large,
                list_rounds: 21,
                list_ops: 10,
                cold_ops: 3,
                hook_rounds: 21,
                hook_ops: 10,
                hook_checkpoint_runs: 3,
                stop_rounds: 21,
                stop_ops: 10,
                resume_runs: 20,
                resume_lanes: 5,
                resume_launches: 250,
                resume_rounds: 21,
                resume_ops: 2,
                loop_large,
                loop_small,
                loop_rounds: 21,
                loop_ops: 3,
            }
        } else {
            Config {
                full,
                only,
                large,
                small,
                single_rounds: 1,
                single_ops: 5,
                length_rounds: 1,
                fresh_ops: 3,
                steady_ops: 5,
                group_rounds: 1,
                group_single_ops: 8,
                group_per_thread: 2,
                verify_rounds: 1,
                add_rounds: 1,
                add_ops: 2,
                list_large,
                list_rounds: 1,
                list_ops: 2,
                cold_ops: 1,
                hook_rounds: 1,
                hook_ops: 2,
                hook_checkpoint_runs: 1,
                stop_rounds: 1,
                stop_ops: 2,
                resume_runs: 2,
                resume_lanes: 2,
                resume_launches: 5,
                resume_rounds: 1,
                resume_ops: 2,
                loop_large,
                loop_small,
                loop_rounds: 1,
                loop_ops: 2,
            }
        }
    }

    fn runs(&self, bench: u32) -> bool {
        self.only.as_ref().is_none_or(|o| o.contains(&bench))
    }
}

fn main() {
    if std::env::args_os().nth(1).is_some_and(|a| a == HELPER_ARG) {
        helper();
    }
    if common::is_spawner() {
        common::spawner();
        return;
    }
    if let Ok(path) = std::env::var(FLOOR_CHILD_ENV) {
        let (lines, digest) = floor(Path::new(&path));
        println!("lines={lines} blake3={digest}");
        return;
    }
    let cfg = Config::from_env();
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&base).expect("creating the crate's target/tmp");
    let tmp = tempfile::Builder::new().prefix("abcd-bench-").tempdir_in(&base).expect("creating a temp dir");
    let dir = tmp.path().canonicalize().expect("canonical temp dir");
    let home = dir.join("home");
    std::fs::create_dir(&home).expect("creating the home store");

    println!(
        "abcd journal benchmarks: {}",
        if cfg.full { "full run (cargo bench)" } else { "SMOKE mode (tiny sizes; numbers not meaningful)" }
    );
    println!("  temp dir:   {} (under the crate's target/tmp)", dir.display());
    println!("  filesystem: {}", describe_filesystem(&dir));
    println!("  cpus:       {}", std::thread::available_parallelism().map_or(0, |n| n.get()));
    println!("  abcd:       {}", env!("CARGO_BIN_EXE_abcd"));
    println!("  sizes:      large journal {} events, small journal {} events", cfg.large, cfg.small);
    println!();

    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut journals = Vec::new();

    // The large journal, built once and verified before anything is timed on it.
    let large_path = dir.join("large.jsonl");
    let mut built = 0;
    if cfg.runs(2) || cfg.runs(4) {
        let started = Instant::now();
        built = build_journal(&large_path, cfg.large);
        let build_time = started.elapsed();
        let started = Instant::now();
        let verified = verify_clean(&large_path, &home);
        assert_eq!(verified, cfg.large, "the built journal verifies with exactly the events asked for");
        println!(
            "built {} ({} events, {} bytes, {:.1} MiB) in {:.1} s; the library verifier confirms {} events, clean, in {:.1} s",
            large_path.display(),
            cfg.large,
            built,
            built as f64 / 1048576.0,
            build_time.as_secs_f64(),
            verified,
            started.elapsed().as_secs_f64()
        );
        println!();
        journals.push(large_path.clone());
    }

    // Benchmark 4 first, while the large journal holds exactly `cfg.large` events.
    if cfg.runs(4) {
        let (row, memory) = bench_verify(&cfg, &dir, &home, &large_path, built);
        rows.push(row);
        notes.extend(memory);
    }
    if cfg.runs(1) {
        let (row, note) = bench_single(&cfg, &dir, &home);
        rows.push(row);
        notes.push(note);
        journals.push(dir.join("single.jsonl"));
    }
    if cfg.runs(2) {
        rows.extend(bench_length(&cfg, &dir, &home, &large_path));
        journals.push(dir.join("small.jsonl"));
    }
    if cfg.runs(3) {
        let (group_rows, note) = bench_group(&cfg, &dir, &home);
        rows.extend(group_rows);
        notes.push(note);
        journals.extend([dir.join("group-single.jsonl"), dir.join("group-shared.jsonl")]);
    }
    if cfg.runs(5) {
        let (row, extra, note, wcs) = bench_add(&cfg, &dir, &home);
        rows.extend([row, extra]);
        notes.push(note);
        journals.extend(wcs);
    }
    if cfg.runs(6) {
        let (list_rows, note, wcs) = bench_list(&cfg, &dir, &home);
        rows.extend(list_rows);
        notes.push(note);
        journals.extend(wcs);
    }
    if cfg.runs(7) {
        let (hook_rows, note, journal) = bench_hook(&cfg, &dir, &home);
        rows.extend(hook_rows);
        notes.push(note);
        journals.push(journal);
    }
    if cfg.runs(8) {
        // Its journals are verified inside: they are anchored in a home store of their own.
        let (stop_rows, note) = bench_stop(&cfg, &dir);
        rows.extend(stop_rows);
        notes.push(note);
    }
    if cfg.runs(9) {
        // Its journals are verified inside, against a home store of their own (the machine
        // journal lives there).
        let (resume_rows, note) = bench_resume(&cfg, &dir);
        rows.extend(resume_rows);
        notes.push(note);
    }
    if cfg.runs(10) {
        // Its journals are verified inside, against the home stores of their own.
        let (loop_rows, note) = bench_loop(&cfg, &dir);
        rows.extend(loop_rows);
        notes.push(note);
    }

    // Everything appended above must have left valid journals behind.
    for path in &journals {
        verify_clean(path, &home);
    }

    // By benchmark number, then name: 10a comes after 9c.
    rows.sort_by(|a, b| (bench_number(&a.name), &a.name).cmp(&(bench_number(&b.name), &b.name)));
    common::print_report(&rows, cfg.full, &notes);
    if std::env::var_os(KEEP_ENV).is_some() {
        println!("kept the temp dir {} ({KEEP_ENV} is set): remove it by hand", tmp.keep().display());
    }
}

// ----------------------------------------------------------------------------------------
// Results

/// The number a row's name starts with.
fn bench_number(name: &str) -> u32 {
    name.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap_or(u32::MAX)
}

// ----------------------------------------------------------------------------------------
// Journals

fn actor() -> Actor {
    Actor::this_process(Some("bench-session-0123456789abcdef".into()))
}

/// A representative event: a checklist item of about 300 bytes on the line.
fn bench_event(i: u64) -> NewEvent {
    NewEvent {
        kind: "checklist.item_added".into(),
        actor: actor(),
        data: serde_json::json!({
            "id": format!("item-{i:08}"),
            "text": "Measure durable appends side by side with a raw fdatasync loop",
            "state": "open",
            "phase": 2,
        }),
    }
}

/// A handle as the CLI opens one: the real disk and the home store's anchors.
fn handle(path: &Path, home: &Path) -> Journal {
    Journal::new(RealDisk::shared(), JournalPaths::beside(path), Some(AnchorStore::new(home)))
}

/// Writes a valid journal of `events` events (genesis included) without a sync per line:
/// lines from `encode_line` with the hashes chained, big buffered writes, one fsync of
/// the file and one of its folder. Returns the file's length.
fn build_journal(path: &Path, events: u64) -> u64 {
    assert!(events >= 1);
    let file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).expect("creating a journal to build");
    let mut out = BufWriter::with_capacity(8 << 20, file);
    let journal_id = abcd::event::new_journal_id().expect("a random journal id");
    let genesis = NewEvent {
        kind: abcd::event::JOURNAL_OPENED.into(),
        actor: actor(),
        // The machine scope, as the format writes it (`verify_clean` checks abcd agrees).
        data: serde_json::json!({ "journal_id": journal_id, "scope": { "kind": "machine" } }),
    };
    // Times run up to now, one millisecond apart, so later appends never go back in time.
    let now = format::now_ms().as_millisecond();
    let time = |seq: u64| jiff::Timestamp::from_millisecond(now - (events - seq) as i64).expect("a time in range");
    let (line, mut prev) = format::encode_line(0, time(0), &genesis, &Hash::genesis_prev()).expect("encoding genesis");
    out.write_all(&line).expect("writing");
    let mut len = line.len() as u64;
    for seq in 1..events {
        let (line, hash) = format::encode_line(seq, time(seq), &bench_event(seq), &prev).expect("encoding an event");
        out.write_all(&line).expect("writing");
        len += line.len() as u64;
        prev = hash;
    }
    let file = out.into_inner().expect("flushing the journal");
    file.sync_all().expect("syncing the journal");
    File::open(path.parent().expect("a folder")).and_then(|d| d.sync_all()).expect("syncing the folder");
    assert_eq!(file.metadata().expect("stat").len(), len);
    len
}

/// Appends `n` events through `journal`, checking each got the next seq.
fn append_n(journal: &Journal, n: usize) -> Appended {
    let mut last: Option<Appended> = None;
    for _ in 0..n {
        let a = journal.append(bench_event(0), None).expect("a durable append");
        if let Some(prev) = last {
            assert_eq!(a.seq, prev.seq + 1, "appends get consecutive seqs");
        }
        last = Some(a);
    }
    last.expect("n >= 1")
}

// ----------------------------------------------------------------------------------------
// Interleaving

/// One operation of A, then one of B, `ops` times each, every operation timed on its own;
/// which contender goes first flips with `round`. Returns the median seconds per
/// operation of A and of B: one slow sync of a noisy neighbour moves neither median.
fn alternate(round: usize, ops: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (f64, f64) {
    let (mut ta, mut tb) = (Vec::with_capacity(ops), Vec::with_capacity(ops));
    for _ in 0..ops {
        for turn in 0..2 {
            let t = Instant::now();
            if (round + turn).is_multiple_of(2) {
                a();
                ta.push(t.elapsed().as_secs_f64());
            } else {
                b();
                tb.push(t.elapsed().as_secs_f64());
            }
        }
    }
    (median(&ta), median(&tb))
}

// ----------------------------------------------------------------------------------------
// Diagnostics: the real disk with its syncs stubbed out, through the storage seam

/// `RealDisk` with `sync_data` and `sync_dir` doing nothing: every other byte and system
/// call of an append is real. Used only to split an append's cost into "the sync" and
/// "everything else"; never for a number in the table.
struct NoSyncDisk;

struct NoSyncFile(Box<dyn StorageFile>);

impl DelegateFile for NoSyncFile {
    fn inner(&self) -> &dyn StorageFile {
        self.0.as_ref()
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
}

impl Delegate for NoSyncDisk {
    fn inner(&self) -> &dyn Storage {
        &RealDisk
    }
    fn file(&self, file: Box<dyn StorageFile>) -> Box<dyn StorageFile> {
        Box::new(NoSyncFile(file))
    }
    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
}

// ----------------------------------------------------------------------------------------
// 1. One append vs raw write + fdatasync

fn bench_single(cfg: &Config, dir: &Path, home: &Path) -> (Row, String) {
    let path = dir.join("single.jsonl");
    build_journal(&path, cfg.small);
    let journal = handle(&path, home);
    // Warm up, and learn the size of the lines this journal gets.
    let first = append_n(&journal, 1);
    let mut line = vec![0u8; (first.end - first.offset) as usize];
    File::open(&path).and_then(|f| std::os::unix::fs::FileExt::read_exact_at(&f, &mut line, first.offset)).expect("reading a line");

    let raw_path = dir.join("raw.log");
    let raw = OpenOptions::new().append(true).create_new(true).mode(0o600).open(&raw_path).expect("creating the raw file");
    File::open(dir).and_then(|d| d.sync_all()).expect("syncing the folder");
    let fd = raw.as_raw_fd();
    let raw_append = || {
        // SAFETY: `fd` is an open file and `line` a live buffer of `line.len()` bytes.
        let n = unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) };
        assert_eq!(n, line.len() as isize, "one whole write");
        // SAFETY: `fd` is an open file.
        let rc = unsafe { libc::fdatasync(fd) };
        assert_eq!(rc, 0, "fdatasync: {}", std::io::Error::last_os_error());
    };
    raw_append();

    let mut next = first.seq + 1;
    let mut abcd_append = || {
        let a = journal.append(bench_event(next), None).expect("a durable append");
        assert_eq!(a.seq, next, "appends get consecutive seqs");
        next += 1;
    };
    let (mut abcd_t, mut raw_t, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..cfg.single_rounds {
        let (a, r) = alternate(round, cfg.single_ops, &mut abcd_append, raw_append);
        abcd_t.push(a);
        raw_t.push(r);
        ratios.push(a / r);
    }
    let ops = (cfg.single_rounds * cfg.single_ops) as u64;
    assert_eq!(next, first.seq + 1 + ops, "every abcd append was acknowledged");
    let raw_len = raw.metadata().expect("stat").len();
    assert_eq!(raw_len, (1 + ops) * line.len() as u64, "every raw write landed");

    // Diagnostic: the same two paths with no sync at all, to split the cost above into the
    // sync and everything else (locking, opening, the tail check, encoding, the anchor).
    let nosync_path = dir.join("nosync.jsonl");
    build_journal(&nosync_path, cfg.small);
    let nosync = Journal::new(Arc::new(NoSyncDisk), JournalPaths::beside(&nosync_path), Some(AnchorStore::new(&dir.join("nosync-home"))));
    append_n(&nosync, 1);
    let raw_nosync = OpenOptions::new().append(true).create_new(true).mode(0o600).open(dir.join("raw-nosync.log")).expect("creating");
    let (mut nosync_abcd, mut nosync_raw) = (Vec::new(), Vec::new());
    for round in 0..cfg.single_rounds {
        let (a, r) = alternate(
            round,
            cfg.single_ops,
            || {
                append_n(&nosync, 1);
            },
            || {
                // SAFETY: as above, a live buffer and an open file.
                let n = unsafe { libc::write(raw_nosync.as_raw_fd(), line.as_ptr().cast(), line.len()) };
                assert_eq!(n, line.len() as isize, "one whole write");
            },
        );
        nosync_abcd.push(a);
        nosync_raw.push(r);
    }
    let overhead = median(&nosync_abcd) - median(&nosync_raw);
    // For reference: the tail check a fresh handle runs (`scan::read_tail` on the journal).
    let tail_file = RealDisk.open_read(&path).expect("opening the journal");
    let mut tail_t: Vec<f64> = (0..cfg.single_ops.max(100))
        .map(|_| {
            let t = Instant::now();
            black_box(scan::read_tail(tail_file.as_ref()).expect("reading the tail"));
            t.elapsed().as_secs_f64()
        })
        .collect();
    let tail = median(&tail_t);
    tail_t.clear();
    let note = format!(
        "benchmark 1 split (diagnostic, syncs stubbed out through the storage seam, same rounds): an append without its fdatasync takes {:.1} us vs {:.1} us for a raw write alone, so abcd adds about {:.1} us per append besides the sync (for reference, `scan::read_tail`, the 4 KiB tail window a fresh handle reads and fully checks, and which this long-lived handle skips while the file ends with its own synced line, takes {:.1} us alone); a raw write+fdatasync took {:.1} us (median), so at this disk's sync speed the added work alone makes the ratio about (raw + {:.1} us) / raw = {:.2}x",
        median(&nosync_abcd) * 1e6,
        median(&nosync_raw) * 1e6,
        overhead * 1e6,
        tail * 1e6,
        median(&raw_t) * 1e6,
        overhead * 1e6,
        (median(&raw_t) + overhead) / median(&raw_t)
    );
    println!("[1] {note}");
    println!(
        "[1] single append: abcd {} vs raw write+fdatasync {} per op ({}-byte lines, {} rounds x {} ops each, alternating)",
        ms(median(&abcd_t)),
        ms(median(&raw_t)),
        line.len(),
        cfg.single_rounds,
        cfg.single_ops
    );
    let row = Row {
        name: "1. one durable append".into(),
        contenders: format!(
            "`Journal::append` {} vs raw `write`+`fdatasync` {} ({} B line)",
            ms(median(&abcd_t)),
            ms(median(&raw_t)),
            line.len()
        ),
        ratio_label: "abcd/raw latency".into(),
        ratios,
        target: Target::AtMost(1.2),
    };
    (row, note)
}

// ----------------------------------------------------------------------------------------
// 2. Append cost at the small vs the large journal

/// An append through a new handle: the pre-sync, the tail read, the genesis and anchor
/// checks that a new process's first append does.
fn fresh_append<'a>(path: &'a Path, home: &'a Path) -> impl FnMut() + 'a {
    move || {
        handle(path, home).append(bench_event(0), None).expect("a fresh handle's append");
    }
}

fn bench_length(cfg: &Config, dir: &Path, home: &Path, large: &Path) -> Vec<Row> {
    let small = dir.join("small.jsonl");
    build_journal(&small, cfg.small);
    // One untimed append through a throwaway handle on each, so neither pays a first-ever
    // cost (the anchor file's creation) inside the timing.
    for p in [small.as_path(), large] {
        append_n(&handle(p, home), 1);
    }
    // One long-lived handle per journal: the tail check is a suffix compare.
    let (steady_small, steady_large) = (handle(&small, home), handle(large, home));
    append_n(&steady_small, 1);
    append_n(&steady_large, 1);

    let (mut fresh_t, mut fresh_ratios) = ((Vec::new(), Vec::new()), Vec::new());
    let (mut steady_t, mut steady_ratios) = ((Vec::new(), Vec::new()), Vec::new());
    for round in 0..cfg.length_rounds {
        let (s, l) = alternate(round, cfg.fresh_ops, fresh_append(&small, home), fresh_append(large, home));
        fresh_t.0.push(s);
        fresh_t.1.push(l);
        fresh_ratios.push(l / s);
        let (s, l) = alternate(
            round,
            cfg.steady_ops,
            || {
                append_n(&steady_small, 1);
            },
            || {
                append_n(&steady_large, 1);
            },
        );
        steady_t.0.push(s);
        steady_t.1.push(l);
        steady_ratios.push(l / s);
    }
    let (s, l) = (cfg.small, cfg.large);
    println!(
        "[2] fresh handle: {} events {} vs {} events {}; steady handle: {} vs {}",
        s,
        ms(median(&fresh_t.0)),
        l,
        ms(median(&fresh_t.1)),
        ms(median(&steady_t.0)),
        ms(median(&steady_t.1))
    );
    vec![
        Row {
            name: format!("2a. append at {l} vs {s} events, first append of a fresh handle"),
            contenders: format!("{l} events {} vs {s} events {}", ms(median(&fresh_t.1)), ms(median(&fresh_t.0))),
            ratio_label: "large/small latency".into(),
            ratios: fresh_ratios,
            target: Target::AtMost(1.2),
        },
        Row {
            name: format!("2b. append at {l} vs {s} events, steady appends through one handle"),
            contenders: format!("{l} events {} vs {s} events {}", ms(median(&steady_t.1)), ms(median(&steady_t.0))),
            ratio_label: "large/small latency".into(),
            ratios: steady_ratios,
            target: Target::AtMost(1.2),
        },
    ]
}

// ----------------------------------------------------------------------------------------
// 3. Group commit

/// Write-family system calls this process made so far (`syscw` of /proc/self/io, all
/// threads); `None` where that file is not readable.
fn write_syscalls() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    text.lines().find_map(|l| l.strip_prefix("syscw:")).and_then(|n| n.trim().parse().ok())
}

/// The floor of benchmark 3: the same batching (`GroupCommit`, the same gather policy) with
/// nothing of the journal: each thread serializes its event with `serde_json::to_vec` as a
/// plain JSONL logger would, and the leader writes the batch with one `write` and one
/// `fdatasync`. What this batching reaches without the journal (not the machine's ceiling).
struct FloorGroup {
    file: File,
    group: GroupCommit<Vec<u8>, (), ()>,
    last_write_nanos: std::sync::atomic::AtomicU64,
}

impl FloorGroup {
    fn new(path: &Path) -> FloorGroup {
        let file = OpenOptions::new().create(true).append(true).open(path).expect("creating the floor file");
        FloorGroup {
            file,
            group: GroupCommit::new(MAX_BATCH_EVENTS, MAX_BATCH_BYTES, GROUP_QUEUE_MAX),
            last_write_nanos: Default::default(),
        }
    }

    fn append(&self, line: Vec<u8>) {
        use std::sync::atomic::Ordering;
        let gather_wait = gather_wait_after(Duration::from_nanos(self.last_write_nanos.load(Ordering::Relaxed)));
        let cost = line.len();
        self.group
            .submit(line, cost, gather_wait, |batch| {
                let t = Instant::now();
                let bytes: Vec<u8> = batch.concat();
                (&self.file).write_all(&bytes).expect("a floor write");
                self.file.sync_data().expect("a floor fdatasync");
                self.last_write_nanos.store(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
                vec![Ok(()); batch.len()]
            })
            .expect("a floor append");
    }
}

/// The line the floors write: the benchmark's event as a plain JSONL logger serializes it.
fn floor_line() -> Vec<u8> {
    let event = bench_event(0);
    let value = serde_json::json!({ "kind": event.kind, "actor": event.actor, "data": event.data });
    let mut line = serde_json::to_vec(&value).expect("an event serializes");
    line.push(b'\n');
    line
}

/// Runs `per_thread` calls of `append` on each of `THREADS` threads started together;
/// returns the calls per second and what the calls returned (kept per thread, so no
/// contender pays for a shared collection inside the timed region).
fn threads_rate<T: Send>(per_thread: usize, append: impl Fn() -> T + Sync) -> (f64, Vec<T>) {
    let barrier = Barrier::new(THREADS + 1);
    let (elapsed, results) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    (0..per_thread).map(|_| append()).collect::<Vec<T>>()
                })
            })
            .collect();
        barrier.wait();
        let t = Instant::now();
        let results: Vec<T> = workers.into_iter().flat_map(|w| w.join().expect("a worker")).collect();
        (t.elapsed(), results)
    });
    ((THREADS * per_thread) as f64 / elapsed.as_secs_f64(), results)
}

fn bench_group(cfg: &Config, dir: &Path, home: &Path) -> (Vec<Row>, String) {
    let single_path = dir.join("group-single.jsonl");
    let shared_path = dir.join("group-shared.jsonl");
    build_journal(&single_path, cfg.small);
    build_journal(&shared_path, cfg.small);
    let single = handle(&single_path, home);
    append_n(&single, 1);
    let shared = SharedJournal::new(handle(&shared_path, home), None);
    let mut next_shared = shared.append(bench_event(0)).expect("a shared append").seq + 1;
    let floor = FloorGroup::new(&dir.join("group-floor.bin"));
    let mut raw = OpenOptions::new().create(true).append(true).open(dir.join("group-raw.bin")).expect("creating the raw file");

    let (mut single_rate, mut group_rate, mut raw_rate, mut floor_rate) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut ratios, mut vs_floor, mut floor_ratios) = (Vec::new(), Vec::new(), Vec::new());
    // Writes per one-event append (the line and the anchor record), counted in
    // the sequential turn, then used to count the group's batches: each batch makes the
    // same writes as one append, whatever its size.
    let (mut writes_per_append, mut batch_sizes) = (Vec::new(), Vec::new());
    let group_events = THREADS * cfg.group_per_thread;
    for round in 0..cfg.group_rounds {
        let (mut s, mut g, mut r, mut f, mut group_writes) = (0.0, 0.0, 0.0, 0.0, None);
        // The four contenders in an order that rotates with the round.
        for turn in 0..4 {
            match (round + turn) % 4 {
                0 => {
                    let w = write_syscalls();
                    let t = Instant::now();
                    append_n(&single, cfg.group_single_ops);
                    s = cfg.group_single_ops as f64 / t.elapsed().as_secs_f64();
                    if let (Some(w0), Some(w1)) = (w, write_syscalls()) {
                        writes_per_append.push((w1 - w0) as f64 / cfg.group_single_ops as f64);
                    }
                }
                1 => {
                    let w = write_syscalls();
                    let (rate, mut seqs) =
                        threads_rate(cfg.group_per_thread, || shared.append(bench_event(0)).expect("a group append").seq);
                    g = rate;
                    group_writes = w.zip(write_syscalls()).map(|(w0, w1)| w1 - w0);
                    // No event lost or duplicated: the seqs are exactly the next range.
                    seqs.sort_unstable();
                    let expected: Vec<u64> = (next_shared..next_shared + group_events as u64).collect();
                    assert_eq!(seqs, expected, "group commit acknowledged each event once, in one unbroken range");
                    next_shared += group_events as u64;
                }
                2 => {
                    let t = Instant::now();
                    for _ in 0..cfg.group_single_ops {
                        raw.write_all(&floor_line()).expect("a raw write");
                        raw.sync_data().expect("a raw fdatasync");
                    }
                    r = cfg.group_single_ops as f64 / t.elapsed().as_secs_f64();
                }
                _ => f = threads_rate(cfg.group_per_thread, || floor.append(floor_line())).0,
            }
        }
        if let (Some(w), Some(&per)) = (group_writes, writes_per_append.last()) {
            batch_sizes.push(group_events as f64 / (w as f64 / per));
        }
        single_rate.push(s);
        group_rate.push(g);
        raw_rate.push(r);
        floor_rate.push(f);
        ratios.push(g / s);
        vs_floor.push(g / f);
        floor_ratios.push(f / r);
    }
    let batch_note = if batch_sizes.is_empty() {
        "group commit batch size: not measured (/proc/self/io unreadable)".to_string()
    } else {
        format!(
            "group commit: about {:.1} events per sync on average (median over rounds; {:.1} write calls per one-event append, counted from /proc/self/io syscw)",
            median(&batch_sizes),
            median(&writes_per_append)
        )
    };
    println!(
        "[3] group commit: {} threads {:.0} events/s vs one thread {:.0} events/s; floor: {} threads {:.0} vs raw one thread {:.0}; {}",
        THREADS,
        median(&group_rate),
        median(&single_rate),
        THREADS,
        median(&floor_rate),
        median(&raw_rate),
        batch_note
    );
    let rows = vec![
        Row {
            name: format!("3. group commit, {THREADS} threads vs 1"),
            contenders: format!(
                "`SharedJournal` x{THREADS} threads {:.0} ev/s vs sequential `Journal::append` {:.0} ev/s",
                median(&group_rate),
                median(&single_rate)
            ),
            ratio_label: "group/single throughput".into(),
            ratios,
            target: Target::AtLeast(8.0),
        },
        Row {
            name: format!("3b. group commit vs its floor, {THREADS} threads"),
            contenders: format!(
                "`SharedJournal` x{THREADS} {:.0} ev/s vs the same batching over raw `write`+`fdatasync` x{THREADS} {:.0} ev/s",
                median(&group_rate),
                median(&floor_rate)
            ),
            ratio_label: "abcd/floor throughput".into(),
            ratios: vs_floor,
            target: Target::Context,
        },
        Row {
            name: format!("3c. the floor's own ratio, {THREADS} threads vs 1"),
            contenders: format!(
                "raw batching x{THREADS} {:.0} ev/s vs a raw `write`+`fdatasync` loop {:.0} ev/s",
                median(&floor_rate),
                median(&raw_rate)
            ),
            ratio_label: "floor group/raw single throughput".into(),
            ratios: floor_ratios,
            target: Target::Context,
        },
    ];
    (rows, batch_note)
}

// ----------------------------------------------------------------------------------------
// 4. Verify vs the floor

/// Runs `program args` through the spawner (`common::run_child_with_stdin`).
fn run_child(program: &Path, args: &[&str], env: &[(&str, &Path)]) -> ChildRun {
    run_child_in(None, program, args, env)
}

/// `run_child`, in folder `cwd` when given.
fn run_child_in(cwd: Option<&Path>, program: &Path, args: &[&str], env: &[(&str, &Path)]) -> ChildRun {
    run_child_with_stdin(cwd, program, args, env, None)
}

fn run_verify(path: &Path, home: &Path, events: u64) -> ChildRun {
    let abcd = Path::new(env!("CARGO_BIN_EXE_abcd"));
    let run = run_child(abcd, &["journal", "verify", "--journal", path.to_str().expect("a UTF-8 path")], &[("ABCD_HOME", home)]);
    assert!(
        run.stdout.contains(&format!("events:  {events} verified")) && run.stdout.contains("verdict: ok"),
        "abcd journal verify did not report {events} verified events:\n{}",
        run.stdout
    );
    run
}

fn run_floor(path: &Path, events: u64) -> ChildRun {
    let exe = std::env::current_exe().expect("this bench's path");
    let run = run_child(&exe, &[], &[(FLOOR_CHILD_ENV, path)]);
    assert!(run.stdout.starts_with(&format!("lines={events} ")), "the floor did not read {events} lines: {}", run.stdout);
    run
}

/// The floor: read the file, BLAKE3 it, and parse every line into a `serde_json::Value`.
/// Streams with the verifier's read size, so its memory is one buffer and one line.
fn floor(path: &Path) -> (u64, String) {
    let mut file = File::open(path).expect("opening the journal");
    let mut buf = vec![0u8; FLOOR_READ_BYTES];
    let mut carry: Vec<u8> = Vec::new();
    let mut hasher = blake3::Hasher::new();
    let mut lines = 0u64;
    let mut parse = |line: &[u8]| {
        let value: serde_json::Value = serde_json::from_slice(line).expect("every line is JSON");
        black_box(&value);
        lines += 1;
    };
    loop {
        let n = file.read(&mut buf).expect("reading the journal");
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        hasher.update(chunk);
        let mut start = 0;
        // The floor is any program's plain way of finding lines, not abcd's.
        #[allow(clippy::disallowed_methods)]
        let newlines = memchr::memchr_iter(b'\n', chunk);
        for nl in newlines {
            if carry.is_empty() {
                parse(&chunk[start..nl]);
            } else {
                carry.extend_from_slice(&chunk[start..nl]);
                parse(&carry);
                carry.clear();
            }
            start = nl + 1;
        }
        carry.extend_from_slice(&chunk[start..]);
    }
    if !carry.is_empty() {
        parse(&carry);
    }
    (lines, hasher.finalize().to_hex().to_string())
}

fn bench_verify(cfg: &Config, dir: &Path, home: &Path, large: &Path, bytes: u64) -> (Row, Vec<String>) {
    // What the RSS method shows for a process that does nothing.
    let baseline = run_child(Path::new("/bin/true"), &[], &[]).max_rss_kib;
    // The small journal's verify and floor: does memory grow with the journal?
    let tiny = dir.join("verify-small.jsonl");
    build_journal(&tiny, cfg.small);
    let tiny_verify = run_verify(&tiny, home, cfg.small);
    let tiny_floor = run_floor(&tiny, cfg.small);
    // Warm the page cache and both binaries.
    run_verify(large, home, cfg.large);
    run_floor(large, cfg.large);

    let (mut verify_t, mut floor_t, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut verify_rss, mut floor_rss) = (0u64, 0u64);
    for round in 0..cfg.verify_rounds {
        let (mut v, mut f) = (0.0, 0.0);
        for turn in 0..2 {
            if (round + turn).is_multiple_of(2) {
                let run = run_verify(large, home, cfg.large);
                v = run.wall.as_secs_f64();
                verify_rss = verify_rss.max(run.max_rss_kib);
            } else {
                let run = run_floor(large, cfg.large);
                f = run.wall.as_secs_f64();
                floor_rss = floor_rss.max(run.max_rss_kib);
            }
        }
        verify_t.push(v);
        floor_t.push(f);
        // The same bytes for both, so speed ratio = time ratio inverted.
        ratios.push(f / v);
    }
    let mib = bytes as f64 / 1048576.0;
    let (vm, fm) = (median(&verify_t), median(&floor_t));
    println!(
        "[4] verify {} events ({:.1} MiB): abcd journal verify {:.3} s ({:.0} MiB/s, max RSS {} KiB) vs floor {:.3} s ({:.0} MiB/s, max RSS {} KiB)",
        cfg.large,
        mib,
        vm,
        mib / vm,
        verify_rss,
        fm,
        mib / fm,
        floor_rss
    );
    let memory = vec![
        "peak memory (max RSS, KiB, from wait4 in a small spawner process):".to_string(),
        format!("- `abcd journal verify`, {} events ({:.1} MiB): {} KiB", cfg.large, mib, verify_rss),
        format!("- `abcd journal verify`, {} events: {} KiB", cfg.small, tiny_verify.max_rss_kib),
        format!("- floor (streaming read + BLAKE3 + serde_json::Value per line), {} events: {} KiB", cfg.large, floor_rss),
        format!("- floor, {} events: {} KiB", cfg.small, tiny_floor.max_rss_kib),
        format!("- `/bin/true` through the same spawner (the method's floor): {baseline} KiB"),
    ];
    let row = Row {
        name: format!("4. `abcd journal verify`, {} events", cfg.large),
        contenders: format!(
            "verify {:.3} s ({:.0} MiB/s) vs floor read+BLAKE3+serde_json {:.3} s ({:.0} MiB/s)",
            vm,
            mib / vm,
            fm,
            mib / fm
        ),
        ratio_label: "verify speed/floor speed".into(),
        ratios,
        target: Target::AtLeast(0.5),
    };
    (row, memory)
}

// ----------------------------------------------------------------------------------------
// Processes (benchmarks 5 and 6)

/// Benchmark 5's helper process: exactly the work named, nothing more. `exit` exits at
/// once (starting a trivial process); `append <file> <bytes>` does `open(O_APPEND)`, one
/// `write` of a line of that many bytes and one `fdatasync`, then exits (the floor).
fn helper() -> ! {
    let args: Vec<OsString> = std::env::args_os().skip(2).collect();
    match args.first().and_then(|a| a.to_str()) {
        Some("exit") => std::process::exit(0),
        Some("append") if args.len() == 3 => {
            let path = CString::new(args[1].as_bytes()).expect("a path without NUL");
            let len: usize = args[2].to_str().and_then(|n| n.parse().ok()).expect("a line length");
            let mut line = vec![b'x'; len.max(1)];
            *line.last_mut().expect("one byte at least") = b'\n';
            // SAFETY: `path` is a NUL-terminated string that outlives the call.
            let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC) };
            if fd < 0 {
                std::process::exit(1);
            }
            // SAFETY: `fd` is open and `line` is a live buffer of `line.len()` bytes.
            let n = unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) };
            if n != line.len() as isize {
                std::process::exit(2);
            }
            // SAFETY: `fd` is open.
            if unsafe { libc::fdatasync(fd) } != 0 {
                std::process::exit(3);
            }
            std::process::exit(0)
        }
        _ => std::process::exit(64),
    }
}

/// `abcd <args>` in working copy `wc` with home store `home`, output captured.
fn abcd_cmd(wc: &Path, home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(abcd_bin());
    cmd.args(args)
        .current_dir(wc)
        .env("ABCD_HOME", home)
        .env("CLAUDE_CODE_SESSION_ID", BENCH_SESSION)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// This bench as a helper process (`helper`), output captured like `abcd_cmd`'s.
fn helper_cmd(args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("this bench's path"));
    cmd.arg(HELPER_ARG).args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// Runs `cmd` to its exit and returns the seconds from spawn to reaped, and its output.
/// Panics unless it exits 0.
fn timed_output(cmd: &mut Command) -> (f64, std::process::Output) {
    let t = Instant::now();
    let out = cmd.output().unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
    let secs = t.elapsed().as_secs_f64();
    assert_succeeded(cmd, &out);
    (secs, out)
}

/// A managed working copy at `wc`: a `.git/` folder, then `abcd init` run in it.
fn managed_working_copy(wc: &Path, home: &Path) {
    std::fs::create_dir_all(wc.join(".git")).expect("creating a working copy");
    let (_, out) = timed_output(&mut abcd_cmd(wc, home, &["init"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("abcd now manages"), "abcd init did not take {}: {text}", wc.display());
}

/// The working copy's journal, as `abcd` finds it.
fn wc_journal(wc: &Path) -> PathBuf {
    wc.join(abcd::places::LOCAL_TIER).join(abcd::places::JOURNAL_FILE)
}

/// The store the CLI opens in `wc`, and the scope it creates the journal with.
fn wc_store(wc: &Path, home: &Path) -> (Store, Scope) {
    let (paths, scope) = abcd::places::working_copy_journal(wc).expect("a managed working copy");
    assert_eq!(paths.journal, wc_journal(wc));
    (Store::new(Journal::new(RealDisk::shared(), paths, Some(AnchorStore::new(home)))), scope)
}

fn item_added(title: &str) -> NewEvent {
    common::item_added_event(title, actor())
}

/// The `rev`th change of item `i` of the list benchmark.
fn item_changed(i: u64, rev: u64) -> NewEvent {
    common::item_changed_event(list_item_id(i), i, rev, "list", actor())
}

fn list_item_title(i: u64) -> String {
    format!("Checklist item {i:02} of the list benchmark")
}

fn list_item_id(i: u64) -> String {
    slug_from_title(&list_item_title(i))
}

/// Appends through the store, as the CLI does (projections refreshed, checkpoints every
/// 1,000 events); panics if the projections could not be refreshed.
fn store_append(store: &Store, scope: &Scope, events: &[NewEvent]) -> u64 {
    let (appended, _, project_error) = store.append(events, Some(scope)).expect("a durable store append");
    assert!(project_error.is_none(), "refreshing the projections failed: {project_error:?}");
    appended.last().expect("a batch is never empty").seq
}

// ----------------------------------------------------------------------------------------
// 5. `abcd checklist add` end to end

fn bench_add(cfg: &Config, dir: &Path, home: &Path) -> (Row, Row, String, Vec<PathBuf>) {
    let floor_path = dir.join("add-floor.log");
    OpenOptions::new().append(true).create_new(true).mode(0o600).open(&floor_path).expect("creating the floor's file");
    File::open(dir).and_then(|d| d.sync_all()).expect("syncing the folder");
    let floor_arg = floor_path.to_str().expect("a UTF-8 path").to_string();
    let mut line_len = 0usize;
    let mut floor_runs = 0u64;
    let (mut abcd_t, mut floor_t, mut trivial_t) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ratios, mut trivial_ratios) = (Vec::new(), Vec::new());
    let mut journals = Vec::new();
    for round in 0..cfg.add_rounds {
        // A fresh working copy each round, so the checklist stays the size of a real one
        // (20 to 21 + ops items) instead of growing with the benchmark.
        let wc = dir.join(format!("add-wc-{round:02}"));
        managed_working_copy(&wc, home);
        let (store, scope) = wc_store(&wc, home);
        let prefill: Vec<NewEvent> =
            (0..ADD_PREFILL_ITEMS).map(|i| item_added(&format!("Prefilled item {i:02} of the add benchmark"))).collect();
        store_append(&store, &scope, &prefill);
        let journal = wc_journal(&wc);
        let mut n = 0usize;
        let mut abcd_add = || {
            let title = format!("Round {round} op {n}: measure checklist add end to end");
            n += 1;
            let (secs, out) = timed_output(&mut abcd_cmd(&wc, home, &["checklist", "add", &title]));
            // The prefilled items have slug ids, so the adds count from 1.
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), n.to_string(), "abcd checklist add prints the new id");
            assert!(out.stderr.is_empty(), "abcd checklist add warned: {}", String::from_utf8_lossy(&out.stderr));
            secs
        };
        // Untimed: the first add of the round (warms the binary and the working copy).
        abcd_add();
        if line_len == 0 {
            // The floor appends a line as long as the one `checklist add` wrote.
            let bytes = std::fs::read(&journal).expect("reading the journal");
            let body = &bytes[..bytes.len() - 1];
            line_len = bytes.len() - body.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        }
        let len_arg = line_len.to_string();
        let mut floor = || {
            floor_runs += 1;
            timed_output(&mut helper_cmd(&["append", &floor_arg, &len_arg])).0
        };
        let mut trivial = || timed_output(&mut helper_cmd(&["exit"])).0;
        if round == 0 {
            floor();
            trivial();
        }
        let m = rotate(round, cfg.add_ops, &mut [&mut abcd_add, &mut floor, &mut trivial]);
        abcd_t.push(m[0]);
        floor_t.push(m[1]);
        trivial_t.push(m[2]);
        ratios.push(m[0] / m[1]);
        trivial_ratios.push(m[0] / m[2]);
        assert_eq!(verify_clean(&journal, home), (1 + ADD_PREFILL_ITEMS + 1 + cfg.add_ops) as u64, "every add is in the journal");
        journals.push(journal);
    }
    let (clean_sync_us, rename_over_us, rename_fresh_us) = fs_costs(dir, if cfg.full { 101 } else { 5 });
    // Peak memory of one more add, through the spawner, in the last round's working copy.
    let last_wc = dir.join(format!("add-wc-{:02}", cfg.add_rounds - 1));
    let title = "One more add, for its peak memory";
    let add_run = abcd_child(&last_wc, home, &["checklist", "add", title]);
    assert!(
        !add_run.stdout.trim().is_empty() && add_run.stdout.trim().bytes().all(|b| b.is_ascii_digit()),
        "abcd checklist add prints the new id"
    );
    let floor_len = std::fs::metadata(&floor_path).expect("stat").len();
    assert_eq!(floor_len, floor_runs * line_len as u64, "every floor append landed");
    let (a, f, t) = (median(&abcd_t), median(&floor_t), median(&trivial_t));
    let note = format!(
        "benchmark 5: `abcd checklist add` {} vs floor {} vs trivial process {} (medians of round medians; {} rounds x {} runs each, a fresh working copy with {} items per round, {}-byte lines); the floor's durable append costs about {:.0} us over a process start, abcd about {:.0} us over the floor; peak memory of `abcd checklist add` (max RSS through the spawner): {} KiB. On this file system, an fdatasync of a file with nothing unsynced (the pre-sync of a new process's append) takes {:.0} us, and a rename of a 10 KiB temp file over an existing file (how an add replaces each of `state.json`, `checklist.json` and `checklist.last-good.json`) {:.0} us vs {:.0} us to a new name",
        ms(a),
        ms(f),
        ms(t),
        cfg.add_rounds,
        cfg.add_ops,
        ADD_PREFILL_ITEMS + 1,
        line_len,
        (f - t) * 1e6,
        (a - f) * 1e6,
        add_run.max_rss_kib,
        clean_sync_us,
        rename_over_us,
        rename_fresh_us
    );
    println!("[5] {note}");
    let row = Row {
        name: "5a. `abcd checklist add` end to end vs process start + one raw durable append".into(),
        contenders: format!("`abcd checklist add` {} vs helper process `write`+`fdatasync` of a {line_len} B line {}", ms(a), ms(f)),
        ratio_label: "abcd/floor latency".into(),
        ratios,
        target: Target::AtMost(1.5),
    };
    let context = Row {
        name: "5b. `abcd checklist add` end to end vs a trivial process start".into(),
        contenders: format!("`abcd checklist add` {} vs helper process that exits at once {}", ms(a), ms(t)),
        ratio_label: "abcd/trivial latency".into(),
        ratios: trivial_ratios,
        target: Target::Context,
    };
    (row, context, note, journals)
}

/// Diagnostics for benchmarks 5 and 7, on this file system: the median microseconds of an
/// `fdatasync` of a file with nothing unsynced (what the pre-sync of a new process's first
/// append costs), of a `rename` of a fresh 10 KiB file over an existing one (what each
/// projection write ends with), and of the same rename to a name that does not exist.
fn fs_costs(dir: &Path, n: usize) -> (f64, f64, f64) {
    let scratch = dir.join("fs-costs");
    std::fs::create_dir(&scratch).expect("creating a scratch folder");
    let body = vec![b'x'; 10 * 1024];
    let mut file = OpenOptions::new().append(true).create_new(true).open(scratch.join("synced")).expect("creating");
    file.write_all(&body).and_then(|()| file.sync_data()).expect("writing and syncing");
    let clean_sync: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            file.sync_data().expect("fdatasync");
            t.elapsed().as_secs_f64()
        })
        .collect();
    let (target, tmp) = (scratch.join("projection.json"), scratch.join("projection.json.tmp"));
    let rename = |over: bool| -> f64 {
        std::fs::write(&tmp, &body).expect("writing a temp file");
        if !over {
            let _ = std::fs::remove_file(&target);
        }
        let t = Instant::now();
        std::fs::rename(&tmp, &target).expect("renaming");
        t.elapsed().as_secs_f64()
    };
    rename(true);
    let over: Vec<f64> = (0..n).map(|_| rename(true)).collect();
    let fresh: Vec<f64> = (0..n).map(|_| rename(false)).collect();
    std::fs::remove_dir_all(&scratch).expect("removing the scratch folder");
    (median(&clean_sync) * 1e6, median(&over) * 1e6, median(&fresh) * 1e6)
}

// ----------------------------------------------------------------------------------------
// 6. `abcd checklist --json` on a long vs a short journal, the same items

/// A managed working copy whose journal holds `events` events: `LIST_ITEMS` items added,
/// then changes to them round robin, through the store in batches (so its projections
/// and checkpoints are what the CLI's appends leave).
fn build_checklist(wc: &Path, home: &Path, events: u64) {
    assert!(events > LIST_ITEMS);
    managed_working_copy(wc, home);
    let (store, scope) = wc_store(wc, home);
    let adds: Vec<NewEvent> = (0..LIST_ITEMS).map(|i| item_added(&list_item_title(i))).collect();
    let mut head = store_append(&store, &scope, &adds);
    let mut change = 0u64;
    while head + 1 < events {
        let batch: Vec<NewEvent> = (0..LIST_BUILD_BATCH.min(events - 1 - head))
            .map(|_| {
                change += 1;
                item_changed(change % LIST_ITEMS, change / LIST_ITEMS)
            })
            .collect();
        head = store_append(&store, &scope, &batch);
    }
    assert_eq!(head + 1, events);
}

/// `abcd checklist --json` in `wc`: the seconds it took; checks it listed every item at
/// the journal's head, with no note.
fn list_once(wc: &Path, home: &Path, events: u64) -> f64 {
    let (secs, out) = timed_output(&mut abcd_cmd(wc, home, &["checklist", "--json"]));
    check_list(&out.stdout, events);
    assert!(out.stderr.is_empty(), "abcd checklist warned: {}", String::from_utf8_lossy(&out.stderr));
    secs
}

/// `abcd checklist --json` output: every item, at the journal's head, with no note.
fn check_list(stdout: &[u8], events: u64) {
    let v: serde_json::Value = serde_json::from_slice(stdout).expect("abcd checklist --json prints JSON");
    assert_eq!(v["items"].as_array().map(Vec::len), Some(LIST_ITEMS as usize), "every item is listed: {v}");
    assert_eq!(v["journal_seq"].as_u64(), Some(events - 1), "the list reflects the journal's head");
    assert_eq!(v["notes"].as_array().map(Vec::len), Some(0), "no note: {v}");
}

/// `abcd <args>` in `wc` through the spawner, for its peak RSS (and wall time).
fn abcd_child(wc: &Path, home: &Path, args: &[&str]) -> ChildRun {
    run_child_in(Some(wc), abcd_bin(), args, &[("ABCD_HOME", home), ("CLAUDE_CODE_SESSION_ID", Path::new(BENCH_SESSION))])
}

fn remove_projections(wc: &Path) {
    for p in projections(wc) {
        std::fs::remove_file(&p).unwrap_or_else(|e| panic!("removing {}: {e}", p.display()));
    }
}

/// The projections the reader uses; deleting them makes the next read fold.
fn projections(wc: &Path) -> [PathBuf; 2] {
    let tier = wc.join(abcd::places::LOCAL_TIER);
    [tier.join(abcd::store::projection::STATE_FILE), tier.join(abcd::store::projection::CHECKLIST_FILE)]
}

/// `list_once` after deleting the projections (untimed); checks the reader wrote them again.
fn list_cold(wc: &Path, home: &Path, events: u64) -> f64 {
    remove_projections(wc);
    let secs = list_once(wc, home, events);
    for p in projections(wc) {
        assert!(p.is_file(), "the reader rewrote {}", p.display());
    }
    secs
}

fn bench_list(cfg: &Config, dir: &Path, home: &Path) -> (Vec<Row>, String, Vec<PathBuf>) {
    let (large, small) = (cfg.list_large, LIST_SMALL_EVENTS);
    let (large_wc, small_wc) = (dir.join("list-large"), dir.join("list-small"));
    let t = Instant::now();
    build_checklist(&large_wc, home, large);
    let build_secs = t.elapsed().as_secs_f64();
    build_checklist(&small_wc, home, small);
    let large_bytes = std::fs::metadata(wc_journal(&large_wc)).expect("stat").len();
    let checkpoint_dir = large_wc.join(abcd::places::LOCAL_TIER).join("checkpoints");
    let newest_checkpoint = checkpoint::list(&RealDisk, &checkpoint_dir).expect("listing checkpoints").first().map(|c| c.0);
    println!(
        "built the checklist journals through the store: {large} events ({:.1} MiB) in {build_secs:.1} s, newest checkpoint at seq {}; and {small} events; {LIST_ITEMS} items each",
        large_bytes as f64 / 1048576.0,
        newest_checkpoint.map_or("none".to_string(), |s| s.to_string()),
    );
    // The reader's projections are current: one untimed list of each (also warms both).
    list_once(&large_wc, home, large);
    list_once(&small_wc, home, small);

    let (mut warm_t, mut warm_ratios) = ((Vec::new(), Vec::new()), Vec::new());
    let (mut cold_t, mut cold_ratios) = ((Vec::new(), Vec::new()), Vec::new());
    for round in 0..cfg.list_rounds {
        let m = rotate(round, cfg.list_ops, &mut [&mut || list_once(&large_wc, home, large), &mut || list_once(&small_wc, home, small)]);
        warm_t.0.push(m[0]);
        warm_t.1.push(m[1]);
        warm_ratios.push(m[0] / m[1]);
        let m = rotate(round, cfg.cold_ops, &mut [&mut || list_cold(&large_wc, home, large), &mut || list_cold(&small_wc, home, small)]);
        cold_t.0.push(m[0]);
        cold_t.1.push(m[1]);
        cold_ratios.push(m[0] / m[1]);
    }
    // Peak memory, through the spawner: the projection read, and the cold read.
    let rss = |wc: &Path, events: u64| {
        let run = abcd_child(wc, home, &["checklist", "--json"]);
        check_list(run.stdout.as_bytes(), events);
        run.max_rss_kib
    };
    let (warm_rss_large, warm_rss_small) = (rss(&large_wc, large), rss(&small_wc, small));
    remove_projections(&large_wc);
    let cold_rss_large = rss(&large_wc, large);
    // What an O(n) read would cost: the large journal folded from genesis (checkpoints
    // moved aside and the projections deleted), once, through the spawner.
    let aside = checkpoint_dir.with_file_name("checkpoints.bench-aside");
    std::fs::rename(&checkpoint_dir, &aside).expect("moving the checkpoints aside");
    remove_projections(&large_wc);
    let genesis = abcd_child(&large_wc, home, &["checklist", "--json"]);
    check_list(genesis.stdout.as_bytes(), large);
    let genesis_secs = genesis.wall.as_secs_f64();
    std::fs::rename(&aside, &checkpoint_dir).expect("putting the checkpoints back");
    list_once(&large_wc, home, large);

    let (wl, ws, cl, cs) = (median(&warm_t.0), median(&warm_t.1), median(&cold_t.0), median(&cold_t.1));
    let folded = newest_checkpoint.map_or(large, |c| large - 1 - c);
    let note = format!(
        "benchmark 6: `abcd checklist --json`, {LIST_ITEMS} items; projections current: {large} events {} vs {small} events {}; cold (projections deleted): {large} events {} (folds the {folded} events after the newest checkpoint) vs {small} events {} (folds all {small}); folding all {large} events from genesis (no checkpoint, once): {:.3} s; peak memory (max RSS through the spawner): {large} events {warm_rss_large} KiB with the projections current, {cold_rss_large} KiB cold, {} KiB from genesis; {small} events {warm_rss_small} KiB",
        ms(wl),
        ms(ws),
        ms(cl),
        ms(cs),
        genesis_secs,
        genesis.max_rss_kib
    );
    println!("[6] {note}");
    let rows = vec![
        Row {
            name: format!("6a. `abcd checklist --json`, {large} vs {small} events, {LIST_ITEMS} items, projections current"),
            contenders: format!("{large} events {} vs {small} events {}", ms(wl), ms(ws)),
            ratio_label: "large/small latency".into(),
            ratios: warm_ratios,
            target: Target::AtMost(1.2),
        },
        Row {
            name: format!(
                "6b. `abcd checklist --json`, {large} vs {small} events, cold (projections deleted, fold from the newest checkpoint)"
            ),
            contenders: format!("{large} events {} vs {small} events {}; from genesis {:.3} s", ms(cl), ms(cs), genesis_secs),
            ratio_label: "large/small latency".into(),
            ratios: cold_ratios,
            target: Target::Context,
        },
    ];
    (rows, note, vec![wc_journal(&large_wc), wc_journal(&small_wc)])
}

// ----------------------------------------------------------------------------------------
// 7. `abcd hook session-start` vs a trivial process and a minimal Python hook

/// The minimal Python hook: reads the payload, reads the working copy's `checklist.json`
/// and prints the items' titles as the host's SessionStart reply. Nothing beyond `json`
/// and `sys`, no check of anything.
const PYTHON_HOOK: &str = r#"import json, sys

payload = json.load(sys.stdin)
with open(payload["cwd"] + "/.abcd/.work.local/checklist.json") as f:
    checklist = json.load(f)
titles = "\n".join(item["title"] for item in checklist["items"])
print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": titles}}))
"#;

/// A named contender of benchmarks 7 and 8: one run, returning its seconds.
type Contender<'a> = (&'static str, Box<dyn FnMut() -> f64 + 'a>);

/// Runs `cmd` with `payload` on stdin, stdout and stderr captured, to its exit: the
/// seconds from spawn to reaped (the payload written and both outputs read to their
/// end, as a host does), and its output. Panics unless it exits 0.
fn timed_with_stdin(cmd: &mut Command, payload: &[u8]) -> (f64, std::process::Output) {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let t = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
    let mut pipe = child.stdin.take().expect("a piped stdin");
    write_ignoring_closed(&mut pipe, payload);
    drop(pipe);
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("waiting for {cmd:?}: {e}"));
    let secs = t.elapsed().as_secs_f64();
    assert_succeeded(cmd, &out);
    (secs, out)
}

/// The `additionalContext` of a SessionStart reply; panics unless `stdout` is one such
/// JSON object.
fn session_context(stdout: &[u8], who: &str) -> String {
    let v: serde_json::Value =
        serde_json::from_slice(stdout).unwrap_or_else(|e| panic!("{who} printed no JSON ({e}): {}", String::from_utf8_lossy(stdout)));
    let out = &v["hookSpecificOutput"];
    assert_eq!(out["hookEventName"].as_str(), Some("SessionStart"), "{who} answered for another event: {v}");
    out["additionalContext"].as_str().unwrap_or_else(|| panic!("{who} printed no additionalContext: {v}")).to_string()
}

/// Checks `abcd hook session-start`'s output: the reply re-injects the whole checklist
/// under its header, and nothing went to stderr (the hook fails open loudly, there).
fn check_session_start(stdout: &[u8], stderr: &[u8]) {
    assert!(stderr.is_empty(), "abcd hook session-start warned: {}", String::from_utf8_lossy(stderr));
    let context = session_context(stdout, "abcd hook session-start");
    // After the receipt's token (`[abcd:<marker>] `), the checklist header.
    let after_token = context.split_once("] ").map_or("", |(_, rest)| rest);
    assert!(after_token.starts_with(abcd::command::hook::CONTEXT_HEADER), "the context starts with the checklist header: {context}");
    let count = |state: &str| {
        let label = context.lines().find_map(|l| l.strip_prefix(&format!("{state} ("))?.strip_suffix("):")?.parse::<u64>().ok());
        label.unwrap_or(0)
    };
    assert_eq!(count("working") + count("waiting"), LIST_ITEMS, "every item is open in the context: {context}");
    assert!(!context.contains("\ndone ("), "no item is done: {context}");
}

/// Checks the Python hook's output: the titles of all the items, one a line.
fn check_python_hook(stdout: &[u8]) {
    let context = session_context(stdout, "the Python hook");
    assert_eq!(context.lines().count(), LIST_ITEMS as usize, "the Python hook lists every title: {context}");
}

/// The Python that benchmark 7 runs: the interpreter itself (`sys.executable`), its
/// version, and what `python3` on PATH is (maybe a wrapper, such as a pyenv shim).
struct Python {
    exe: PathBuf,
    version: String,
    on_path: PathBuf,
}

fn find_python() -> Option<Python> {
    let on_path = std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("python3")).find(|c| c.is_file()))?;
    let probe = Command::new(&on_path).args(["-c", "import sys; print(sys.executable); print(sys.version.split()[0])"]).output().ok()?;
    let text = String::from_utf8(probe.stdout).ok()?;
    let mut lines = text.lines();
    let (exe, version) = (PathBuf::from(lines.next()?), lines.next()?.to_string());
    (probe.status.success() && exe.is_file()).then_some(Python { exe, version, on_path })
}

fn bench_hook(cfg: &Config, dir: &Path, home: &Path) -> (Vec<Row>, String, PathBuf) {
    let events = cfg.list_large;
    let wc = dir.join("hook-wc");
    let t = Instant::now();
    build_checklist(&wc, home, events);
    let build_secs = t.elapsed().as_secs_f64();
    let journal = wc_journal(&wc);
    let journal_bytes = std::fs::metadata(&journal).expect("stat").len();
    let checklist_bytes =
        std::fs::metadata(wc.join(abcd::places::LOCAL_TIER).join(abcd::store::projection::CHECKLIST_FILE)).expect("stat").len();
    // The projections are current, as after any verb.
    list_once(&wc, home, events);
    let script = dir.join("python-hook.py");
    std::fs::write(&script, PYTHON_HOOK).expect("writing the Python hook");
    let script_arg = script.to_str().expect("a UTF-8 path").to_string();
    // `python3` on PATH may be a wrapper (a pyenv shim is a shell script): the judged floor
    // runs the interpreter itself, with `-S` (no `site`, so no `.pth` file of this machine
    // runs), the fastest a Python hook can start. `python3` as found on PATH, the way a
    // hook's command line would name it, is reported for context. Without a python3 the
    // smoke mode skips both (CI need not have one); the full run requires it.
    let python = find_python();
    assert!(python.is_some() || !cfg.full, "benchmark 7 needs python3 on PATH");
    let true_bin = true_bin();
    let payload = session_start_payload(&wc);
    println!(
        "built the session-start working copy through the store: {events} events ({:.1} MiB), {LIST_ITEMS} items (checklist.json {checklist_bytes} bytes), in {build_secs:.1} s; {}; trivial process {}",
        journal_bytes as f64 / 1048576.0,
        python.as_ref().map_or("no python3 on PATH: the Python hooks are skipped".to_string(), |p| format!(
            "Python {} at {} (on PATH: {})",
            p.version,
            p.exe.display(),
            p.on_path.display()
        )),
        true_bin.display()
    );

    let abcd_hook = || {
        let mut cmd = Command::new(abcd_bin());
        cmd.args(["hook", "session-start"]).current_dir(&wc).env("ABCD_HOME", home);
        let (secs, out) = timed_with_stdin(&mut cmd, &payload);
        check_session_start(&out.stdout, &out.stderr);
        secs
    };
    let python_hook = |program: &Path, args: &[&str]| {
        let mut cmd = Command::new(program);
        cmd.args(args).current_dir(&wc);
        let (secs, out) = timed_with_stdin(&mut cmd, &payload);
        assert!(out.stderr.is_empty(), "the Python hook wrote on stderr: {}", String::from_utf8_lossy(&out.stderr));
        check_python_hook(&out.stdout);
        secs
    };
    // The contenders, abcd first; each returns the seconds of one run.
    let mut contenders: Vec<Contender> = vec![
        ("abcd", Box::new(abcd_hook)),
        (
            "true",
            Box::new(|| {
                let mut cmd = Command::new(true_bin);
                cmd.current_dir(&wc);
                let (secs, out) = timed_with_stdin(&mut cmd, &payload);
                assert!(out.stdout.is_empty() && out.stderr.is_empty(), "`true` printed something");
                secs
            }),
        ),
        (
            "helper",
            Box::new(|| {
                let mut cmd = Command::new(std::env::current_exe().expect("this bench's path"));
                cmd.args([HELPER_ARG, "exit"]).current_dir(&wc);
                timed_with_stdin(&mut cmd, &payload).0
            }),
        ),
        // abcd's own start-up and exit, no work (the same binary, another argument).
        (
            "version",
            Box::new(|| {
                let mut cmd = Command::new(abcd_bin());
                cmd.arg("--version").current_dir(&wc).env("ABCD_HOME", home);
                let (secs, out) = timed_with_stdin(&mut cmd, &payload);
                assert!(out.stdout.starts_with(b"abcd "), "abcd --version printed {}", String::from_utf8_lossy(&out.stdout));
                secs
            }),
        ),
    ];
    if let Some(py) = &python {
        contenders.push(("python", Box::new(|| python_hook(&py.exe, &["-S", &script_arg]))));
        contenders.push(("python-path", Box::new(|| python_hook(&py.on_path, &[&script_arg]))));
    }
    // Untimed: one run of each, to warm the binaries and the page cache. The first
    // session-start takes the journal to `events` + 1 events, and so writes the checkpoint
    // at that multiple of 1,000; the timed runs that follow stay short of the next one.
    for (_, run) in contenders.iter_mut() {
        run();
    }
    let mut starts = 1u64;
    assert!(
        (cfg.hook_rounds * cfg.hook_ops) as u64 + 1 < checkpoint::CHECKPOINT_EVERY_EVENTS,
        "no timed session-start crosses a checkpoint"
    );

    // The disk's speed before and after the rounds: an fdatasync with nothing unsynced
    // (each session-start's append makes two device flushes: the pre-sync and the sync).
    let fs_runs = if cfg.full { 101 } else { 5 };
    let fs_before = fs_costs(dir, fs_runs);
    // Per contender, its median per round, and abcd's ratio to it per round.
    let n = contenders.len();
    let (mut t, mut ratios) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    for round in 0..cfg.hook_rounds {
        let mut runs: Vec<&mut dyn FnMut() -> f64> = contenders.iter_mut().map(|(_, run)| &mut **run as &mut dyn FnMut() -> f64).collect();
        let m = rotate(round, cfg.hook_ops, &mut runs);
        starts += cfg.hook_ops as u64;
        for k in 0..n {
            t[k].push(m[k]);
            ratios[k].push(m[0] / m[k]);
        }
    }
    let fs_after = fs_costs(dir, fs_runs);
    let names: Vec<&str> = contenders.iter().map(|c| c.0).collect();
    drop(contenders);
    let at = |name: &str| names.iter().position(|n| *n == name);
    let med = |name: &str| at(name).map(|k| median(&t[k]));
    // Every session-start appended its `session.started` event.
    assert_eq!(verify_clean(&journal, home), events + EVENTS_PER_START * starts, "every session-start is in the journal");

    // Peak memory, through the spawner (stdin: the payload).
    let rss = |program: &Path, args: &[&str]| run_child_with_stdin(Some(&wc), program, args, &[("ABCD_HOME", home)], Some(&payload));
    let abcd_run = rss(abcd_bin(), &["hook", "session-start"]);
    starts += 1;
    // (Its stderr is this bench's: empty in the run's output.)
    check_session_start(abcd_run.stdout.as_bytes(), b"");
    let python_rss = python.as_ref().map(|py| {
        let run = rss(&py.exe, &["-S", &script_arg]);
        check_python_hook(run.stdout.as_bytes());
        run.max_rss_kib
    });
    let true_rss = rss(true_bin, &[]).max_rss_kib;

    // Context: one session-start in 1,000 also writes a checkpoint. Bring the journal
    // (through the store, untimed) to just short of the next multiple of 1,000, then time
    // one.
    let (store, scope) = wc_store(&wc, home);
    let checkpoint_dir = wc.join(abcd::places::LOCAL_TIER).join("checkpoints");
    let mut head = events + EVENTS_PER_START * starts - 1;
    let mut change = 0u64;
    let mut crossing_t = Vec::new();
    for _ in 0..cfg.hook_checkpoint_runs {
        let target = (head / checkpoint::CHECKPOINT_EVERY_EVENTS + 1) * checkpoint::CHECKPOINT_EVERY_EVENTS - 1;
        while head < target {
            let batch: Vec<NewEvent> = (0..LIST_BUILD_BATCH.min(target - head))
                .map(|_| {
                    change += 1;
                    item_changed(change % LIST_ITEMS, change / LIST_ITEMS)
                })
                .collect();
            head = store_append(&store, &scope, &batch);
        }
        crossing_t.push(abcd_hook());
        head += EVENTS_PER_START;
        let newest = checkpoint::list(&RealDisk, &checkpoint_dir).expect("listing checkpoints").first().map(|c| c.0);
        assert_eq!(newest, Some(head), "the crossing session-start wrote the checkpoint");
    }
    assert_eq!(verify_clean(&journal, home), head + 1, "every event is in the journal");

    let (a, tr, h, v) =
        (med("abcd").expect("abcd"), med("true").expect("true"), med("helper").expect("helper"), med("version").expect("version"));
    let (python_vs, python_rss_note) = match (&python, med("python"), med("python-path"), python_rss) {
        (Some(py), Some(p), Some(pp), Some(kib)) => (
            format!(
                " vs the Python hook run by the interpreter with -S {} vs the Python hook as `{} <script>` {} (Python {})",
                ms(p),
                py.on_path.display(),
                ms(pp),
                py.version
            ),
            format!(", Python hook (-S) {kib} KiB"),
        ),
        _ => (" (no python3: the Python hooks skipped)".to_string(), String::new()),
    };
    let note = format!(
        "benchmark 7: `abcd hook session-start` in a working copy of {events} events (and growing by one `session.started` per run), {LIST_ITEMS} items: {} vs `{}` {} vs this bench's `exit` helper {} vs `abcd --version` {}{python_vs} (medians of round medians; {} rounds x {} runs each, rotating); an fdatasync with nothing unsynced took {:.0} us before the rounds and {:.0} us after, a rename of a 10 KiB file over an existing one {:.0} us and {:.0} us; a session-start that crosses a multiple of 1,000 events and so also writes a checkpoint: {} (median of {}, context); peak memory (max RSS through the spawner): `abcd hook session-start` {} KiB, `true` {true_rss} KiB{python_rss_note}",
        ms(a),
        true_bin.display(),
        ms(tr),
        ms(h),
        ms(v),
        cfg.hook_rounds,
        cfg.hook_ops,
        fs_before.0,
        fs_after.0,
        fs_before.1,
        fs_after.1,
        ms(median(&crossing_t)),
        crossing_t.len(),
        abcd_run.max_rss_kib,
    );
    println!("[7] {note}");
    let mut take = |name: &str| at(name).map(|k| std::mem::take(&mut ratios[k])).expect("a contender that ran");
    let mut rows = vec![Row {
        name: format!("7a. `abcd hook session-start`, {events} events, vs a trivial process"),
        contenders: format!("`abcd hook session-start` {} vs `{}` {}", ms(a), true_bin.display(), ms(tr)),
        ratio_label: "abcd/true latency".into(),
        ratios: take("true"),
        target: Target::AtMost(3.0),
    }];
    if let (Some(py), Some(p), Some(pp)) = (&python, med("python"), med("python-path")) {
        rows.push(Row {
            name: format!("7b. `abcd hook session-start`, {events} events, vs a minimal Python hook"),
            contenders: format!("`abcd hook session-start` {} vs Python {} `-S` hook script (json + sys) {}", ms(a), py.version, ms(p)),
            ratio_label: "abcd/python latency".into(),
            ratios: take("python"),
            target: Target::Below(1.0),
        });
        rows.push(Row {
            name: format!("7c. `abcd hook session-start`, {events} events, vs the Python hook as `python3 <script>` through PATH"),
            contenders: format!("`abcd hook session-start` {} vs `{} <script>` {}", ms(a), py.on_path.display(), ms(pp)),
            ratio_label: "abcd/python-on-PATH latency".into(),
            ratios: take("python-path"),
            target: Target::Context,
        });
    }
    rows.push(Row {
        name: format!("7d. `abcd hook session-start`, {events} events, vs this bench's trivial helper process"),
        contenders: format!("`abcd hook session-start` {} vs helper process that exits at once {}", ms(a), ms(h)),
        ratio_label: "abcd/helper latency".into(),
        ratios: take("helper"),
        target: Target::Context,
    });
    rows.push(Row {
        name: format!("7e. `abcd hook session-start`, {events} events, vs `abcd --version` (abcd's own start and exit)"),
        contenders: format!("`abcd hook session-start` {} vs `abcd --version` {} (`abcd --version`/`true` {:.2}x)", ms(a), ms(v), v / tr),
        ratio_label: "hook/version latency".into(),
        ratios: take("version"),
        target: Target::Context,
    });
    (rows, note, journal)
}

// ----------------------------------------------------------------------------------------
// 8. `abcd hook stop`, present and away, vs a trivial process

/// Local branches in each of benchmark 8's repositories (`b00` … `b49`).
const STOP_BRANCHES: usize = 50;
/// Recorded through the pre-tool-use hook before they exist: own, as created here.
const STOP_CREATED: [&str; 5] = ["b01", "b02", "b03", "b04", "b05"];
/// With an unpushed commit by this checkout's `user.email`, so owed: `b01`–`b03` are own as
/// created here, `b10` and `b11` as checked out here with a recent commit of this checkout's.
const STOP_UNPUSHED_OWN: [&str; 5] = ["b01", "b02", "b03", "b10", "b11"];
/// Created here, with a commit, pushed with an upstream: own and in step, not owed.
const STOP_PUSHED: &str = "b04";
/// Checked out here with no commit beyond `main`: examined, not owed.
const STOP_CHECKED_OUT: &str = "b12";
/// Checked out here with an unpushed commit by another person: examined, not own.
const STOP_OTHERS: [&str; 2] = ["b20", "b21"];
/// This checkout's `user.email`, and the other person's.
const STOP_EMAIL: &str = "bench@example.invalid";
const STOP_OTHER_EMAIL: &str = "other@example.invalid";
/// What each stop finds owed: the one `working` item and the own unpushed branches.
const STOP_OWED: usize = 1 + STOP_UNPUSHED_OWN.len();
/// No global or system git config reaches the repositories' git, the hook's children's
/// included, so the machine's config does not change what is measured.
const STOP_GIT_ENV: [(&str, &str); 2] = [("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1")];
/// The host's session in both working copies.
const STOP_SESSION: &str = "bench";

/// `git <args>` in `dir`, with `envs` and without global or system config; its stdout,
/// trimmed. Panics unless it exits 0.
fn git_in(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .envs(STOP_GIT_ENV)
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running git {args:?}: {e}"));
    assert!(out.status.success(), "git {args:?} in {} failed: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 from git").trim().to_string()
}

/// Writes `file` with `text` in the work tree at `root` and commits it, with `envs`.
fn commit_file(root: &Path, file: &str, text: &str, envs: &[(&str, &str)]) {
    std::fs::write(root.join(file), text).expect("writing a file to commit");
    git_in(root, &["add", file], envs);
    git_in(root, &["commit", "-q", "-m", file], envs);
}

/// Commits a file named after `branch` onto it without checking it out (a temporary index,
/// `commit-tree`, `update-ref`), so HEAD's reflog never names it. `scratch` is outside
/// the work tree.
fn commit_on_branch(scratch: &Path, root: &Path, branch: &str) {
    let (index, blob_file) = (scratch.join(format!("{branch}.index")), scratch.join(format!("{branch}.txt")));
    std::fs::write(&blob_file, branch).expect("writing a file to commit");
    let index_env = [("GIT_INDEX_FILE", index.to_str().expect("a UTF-8 path"))];
    let git = |args: &[&str]| git_in(root, args, &index_env);
    let refname = format!("refs/heads/{branch}");
    git(&["read-tree", &refname]);
    let blob = git(&["hash-object", "-w", blob_file.to_str().expect("a UTF-8 path")]);
    git(&["update-index", "--add", "--cacheinfo", &format!("100644,{blob},{branch}.txt")]);
    let tree = git(&["write-tree"]);
    let commit = git(&["commit-tree", &tree, "-p", &refname, "-m", branch]);
    git(&["update-ref", &refname, &commit]);
    std::fs::remove_file(&index).and_then(|()| std::fs::remove_file(&blob_file)).expect("removing the temporary index");
}

/// `abcd <args>` in `root` for benchmark 8's setup; its stdout. Panics unless it exits 0.
fn stop_setup_abcd(root: &Path, home: &Path, args: &[&str]) -> String {
    let (_, out) = timed_output(abcd_cmd(root, home, args).envs(STOP_GIT_ENV));
    assert!(out.stderr.is_empty(), "abcd {args:?} warned: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 from abcd")
}

/// One of benchmark 8's repositories, at `dir/<name>`, with a bare `dir/<name>-origin.git`
/// as `origin`: `main` with one commit, pushed (`origin/main`, `origin/HEAD`), `abcd init`,
/// then the branches and items the consts above name. Returns the work tree's root.
fn stop_repository(dir: &Path, home: &Path, name: &str) -> PathBuf {
    let origin = dir.join(format!("{name}-origin.git"));
    let root = dir.join(name);
    let utf8 = |p: &Path| p.to_str().expect("a UTF-8 path").to_string();
    git_in(dir, &["init", "-q", "--bare", "-b", "main", &utf8(&origin)], &[]);
    git_in(dir, &["init", "-q", "-b", "main", &utf8(&root)], &[]);
    let git = |args: &[&str]| git_in(&root, args, &[]);
    git(&["config", "user.name", "Bench Person"]);
    git(&["config", "user.email", STOP_EMAIL]);
    git(&["remote", "add", "origin", &utf8(&origin)]);
    // The repository's name in its first commit: the two repositories' root commits, and
    // so their away records, differ.
    commit_file(&root, "README", name, &[]);
    git(&["push", "-q", "-u", "origin", "main"]);
    git(&["symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"]);
    managed_working_copy(&root, home);

    // Own by `branch.created`: the pre-tool-use hook sees the command before the branch is.
    for b in STOP_CREATED {
        let payload = serde_json::to_vec(&serde_json::json!({
            "session_id": STOP_SESSION,
            "cwd": utf8(&root),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": { "command": format!("git switch -c {b}") },
        }))
        .expect("plain data serializes");
        let mut cmd = Command::new(abcd_bin());
        cmd.args(["hook", "pre-tool-use"]).current_dir(&root).env("ABCD_HOME", home).envs(STOP_GIT_ENV);
        let (_, out) = timed_with_stdin(&mut cmd, &payload);
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "abcd hook pre-tool-use answered: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for i in 0..STOP_BRANCHES {
        git(&["branch", &format!("b{i:02}")]);
    }
    // The created branches get their commits without being checked out, so they are own
    // only as created here; the others are checked out here, which names them in HEAD's
    // reflog.
    for b in STOP_UNPUSHED_OWN.into_iter().chain([STOP_PUSHED]) {
        if STOP_CREATED.contains(&b) {
            commit_on_branch(dir, &root, b);
        } else {
            git(&["switch", "-q", b]);
            commit_file(&root, &format!("{b}.txt"), b, &[]);
            git(&["switch", "-q", "main"]);
        }
    }
    git(&["push", "-q", "-u", "origin", STOP_PUSHED]);
    git(&["switch", "-q", STOP_CHECKED_OUT]);
    git(&["switch", "-q", "main"]);
    for b in STOP_OTHERS {
        git(&["switch", "-q", b]);
        commit_file(&root, &format!("{b}.txt"), b, &[("GIT_AUTHOR_EMAIL", STOP_OTHER_EMAIL), ("GIT_COMMITTER_EMAIL", STOP_OTHER_EMAIL)]);
        git(&["switch", "-q", "main"]);
    }
    assert_eq!(git(&["for-each-ref", "--format=%(refname)", "refs/heads/"]).lines().count(), STOP_BRANCHES + 1, "main and the branches");
    let reflog = git(&["reflog", "show", "--format=%gs", "HEAD", "--"]);
    assert!(STOP_CREATED.iter().all(|b| !reflog.contains(&format!(" {b}"))), "no created branch was checked out here: {reflog}");

    // The checklist: one item `working`, two `waiting` with a look later today, one done.
    stop_setup_abcd(&root, home, &["checklist", "add", "Finish the stop hook benchmark"]);
    stop_setup_abcd(&root, home, &["checklist", "add", "Get PR 7 reviewed", "--waits-on", "pr:7", "--next-look", "+2h"]);
    stop_setup_abcd(&root, home, &["checklist", "add", "Hear back on PR 8", "--waits-on", "pr:8", "--next-look", "+3h"]);
    let done = stop_setup_abcd(&root, home, &["checklist", "add", "Write the changelog"]);
    stop_setup_abcd(&root, home, &["checklist", "set", done.trim(), "--state", "done"]);

    let (store, _) = wc_store(&root, home);
    let state = store.current_state().expect("the working copy's state").state;
    assert_eq!(state.work.branches, STOP_CREATED, "the pre-tool-use hook recorded every creation");
    assert_eq!(state.checklist.items.len(), 4, "four items");
    root
}

/// The host's Stop payload for a session in `root`.
fn stop_payload(root: &Path, stop_hook_active: bool) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "session_id": STOP_SESSION,
        "cwd": root.to_str().expect("a UTF-8 path"),
        "hook_event_name": "Stop",
        "stop_hook_active": stop_hook_active,
        "last_assistant_message": "done",
        "background_tasks": [],
        "session_crons": [],
    }))
    .expect("plain data serializes")
}

/// Checks a Stop reply: nothing on stderr, no note (every branch read and judged), and,
/// present, the stop allowed with the one line naming the owed work; away, blocked, the
/// reason naming it.
fn check_stop(stdout: &[u8], stderr: &[u8], away: bool) {
    assert!(stderr.is_empty(), "abcd hook stop warned: {}", String::from_utf8_lossy(stderr));
    let v: serde_json::Value = serde_json::from_slice(stdout)
        .unwrap_or_else(|e| panic!("abcd hook stop printed no JSON ({e}): {}", String::from_utf8_lossy(stdout)));
    let (text, want) = if away {
        assert_eq!(v["hookSpecificOutput"]["hookEventName"].as_str(), Some("Stop"), "away, the stop is blocked: {v}");
        (v["hookSpecificOutput"]["additionalContext"].as_str(), format!("abcd: the person is away and work is owed ({STOP_OWED} items)."))
    } else {
        assert!(v.get("hookSpecificOutput").is_none(), "present, the stop is allowed: {v}");
        (v["systemMessage"].as_str(), format!("abcd: stopped with work owed ({STOP_OWED} items); next: "))
    };
    let text = text.unwrap_or_else(|| panic!("abcd hook stop gave no reason or line: {v}"));
    assert!(text.starts_with(&want) && !text.contains("(Note:"), "abcd hook stop said: {text}");
}

/// Benchmark 8's `gh` stand-in: appends its arguments to `calls`, prints `[]` (no pull
/// requests) at once.
fn stub_gh(bin: &Path, calls: &Path) {
    std::fs::create_dir_all(bin).expect("creating the stub's folder");
    let gh = bin.join("gh");
    std::fs::write(&gh, format!("#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\necho '[]'\n", calls.display())).expect("writing the stub gh");
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).expect("making the stub gh executable");
}

/// The `gh` calls so far, each checked to be the pull request listing.
fn gh_calls(calls: &Path) -> usize {
    let text = std::fs::read_to_string(calls).unwrap_or_default();
    assert!(text.lines().all(|l| l.starts_with("pr list ")), "the stub gh was called for something else: {text}");
    text.lines().count()
}

/// The repository journal (the away record) of the repository at `root`, in `home`.
fn repository_journal(root: &Path, home: &Path) -> PathBuf {
    let first = git_in(root, &["rev-list", "--max-parents=0", "HEAD"], &[]);
    home.join("repos").join(first.lines().last().expect("a root commit")).join(abcd::places::JOURNAL_FILE)
}

fn bench_stop(cfg: &Config, dir: &Path) -> (Vec<Row>, String) {
    let home = dir.join("stop-home");
    std::fs::create_dir(&home).expect("creating benchmark 8's home store");
    let t = Instant::now();
    let present = stop_repository(dir, &home, "stop-present");
    let away = stop_repository(dir, &home, "stop-away");
    stop_setup_abcd(&away, &home, &["mode", "autonomous"]);
    let bin = dir.join("stop-bin");
    let calls = dir.join("gh-calls");
    stub_gh(&bin, &calls);
    let path =
        std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())))
            .expect("a PATH with the stub first");
    let build_secs = t.elapsed().as_secs_f64();
    let true_bin = true_bin();

    // Only the away repository has an away record; the present one has no record at all.
    let away_record = repository_journal(&away, &home);
    let record_events = verify_clean(&away_record, &home);
    assert!(!repository_journal(&present, &home).exists(), "the present repository has no away record");
    let (present_journal, away_journal) = (wc_journal(&present), wc_journal(&away));
    let (present_events, away_events) = (verify_clean(&present_journal, &home), verify_clean(&away_journal, &home));
    let runs = (cfg.stop_rounds * cfg.stop_ops + 1) as u64;
    assert!(away_events + runs < checkpoint::CHECKPOINT_EVERY_EVENTS, "no timed away stop crosses a checkpoint");
    println!(
        "built the stop hook's two repositories ({STOP_BRANCHES} local branches each; own and unpushed: {}; 4 items, 1 working) and the stub gh in {build_secs:.1} s; trivial process {}",
        STOP_UNPUSHED_OWN.join(", "),
        true_bin.display()
    );

    // Every contender runs with the hook's environment and the present payload on stdin.
    // `ABCD_GH` (the forge program, when set) is removed: the stub is found on PATH.
    let env = |cmd: &mut Command, root: &Path| {
        cmd.current_dir(root)
            .env("ABCD_HOME", &home)
            .env("PATH", &path)
            .env_remove("ABCD_GH")
            .envs(STOP_GIT_ENV)
            .env(abcd::command::hook::stop::BLOCK_CAP_VAR, "0");
    };
    let (present_payload, away_payload) = (stop_payload(&present, false), stop_payload(&away, true));
    let seen = std::cell::Cell::new(0usize);
    let (mut present_runs, mut away_runs) = (0u64, 0u64);
    let hook = |root: &Path, payload: &[u8], away: bool| {
        if away {
            // A listing is reused for FORGE_LISTING_REUSE across stops; this row measures a
            // stop that lists, so each timed away stop finds no listing kept (untimed).
            let kept = root.join(".abcd/.work.local").join(abcd::owed::listing_cache::FORGE_CACHE_FILE);
            let _ = std::fs::remove_file(kept);
        }
        let mut cmd = Command::new(abcd_bin());
        cmd.args(["hook", "stop"]);
        env(&mut cmd, root);
        let (secs, out) = timed_with_stdin(&mut cmd, payload);
        check_stop(&out.stdout, &out.stderr, away);
        // One listing per away stop, none present.
        let now = gh_calls(&calls);
        assert_eq!(now, seen.get() + usize::from(away), "gh calls after one {} stop", if away { "away" } else { "present" });
        seen.set(now);
        secs
    };
    let mut contenders: Vec<Contender> = vec![
        (
            "present",
            Box::new(|| {
                present_runs += 1;
                hook(&present, &present_payload, false)
            }),
        ),
        (
            "away",
            Box::new(|| {
                away_runs += 1;
                hook(&away, &away_payload, true)
            }),
        ),
        (
            "true",
            Box::new(|| {
                let mut cmd = Command::new(true_bin);
                env(&mut cmd, &present);
                let (secs, out) = timed_with_stdin(&mut cmd, &present_payload);
                assert!(out.stdout.is_empty() && out.stderr.is_empty(), "`true` printed something");
                secs
            }),
        ),
        // One git child, as the hook starts them (context: what one costs).
        (
            "git",
            Box::new(|| {
                let mut cmd = Command::new("git");
                cmd.args(["rev-parse", "-q", "--verify", "HEAD"]);
                env(&mut cmd, &present);
                let (secs, out) = timed_with_stdin(&mut cmd, &present_payload);
                assert_eq!(out.stdout.len(), 41, "git rev-parse printed {}", String::from_utf8_lossy(&out.stdout));
                secs
            }),
        ),
    ];
    // Untimed: one run of each, to warm the binaries and the page cache.
    for (_, run) in contenders.iter_mut() {
        run();
    }
    // The disk's speed before and after the rounds (each away stop's append of its
    // `session.judged` makes two device flushes and rewrites both projections).
    let fs_runs = if cfg.full { 101 } else { 5 };
    let fs_before = fs_costs(dir, fs_runs);
    let n = contenders.len();
    let (mut t, mut ratios) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    let mut away_vs_present = Vec::new();
    for round in 0..cfg.stop_rounds {
        let mut runs: Vec<&mut dyn FnMut() -> f64> = contenders.iter_mut().map(|(_, run)| &mut **run as &mut dyn FnMut() -> f64).collect();
        let m = rotate(round, cfg.stop_ops, &mut runs);
        // Each contender's ratio to `true` (index 2), and away's to present.
        for k in 0..n {
            t[k].push(m[k]);
            ratios[k].push(m[k] / m[2]);
        }
        away_vs_present.push(m[1] / m[0]);
    }
    let fs_after = fs_costs(dir, fs_runs);
    drop(contenders);
    assert_eq!(runs, away_runs, "every away run is counted");
    assert_eq!(gh_calls(&calls) as u64, away_runs, "one gh listing per away stop");

    // What the stops left behind: away, one `session.judged` per stop and a block count
    // that passed no cap; present, nothing; the away record never grew.
    assert_eq!(verify_clean(&present_journal, &home), present_events, "a present stop writes nothing");
    assert_eq!(verify_clean(&away_journal, &home), away_events + away_runs, "an away stop writes its session.judged");
    assert_eq!(verify_clean(&away_record, &home), record_events, "no stop was recorded in the away record");
    let (store, _) = wc_store(&away, &home);
    let sessions = store.current_state().expect("the away working copy's state").state.sessions;
    assert_eq!(sessions.get(STOP_SESSION).map(|s| u64::from(s.state.block_count)), Some(away_runs), "one block per away stop");

    let med = |k: usize| median(&t[k]);
    let (p, a, tr, g) = (med(0), med(1), med(2), med(3));
    let checked_out_only = STOP_UNPUSHED_OWN.iter().filter(|b| !STOP_CREATED.contains(b)).count() + 1 + STOP_OTHERS.len();
    let note = format!(
        "benchmark 8: `abcd hook stop` in two repositories of {STOP_BRANCHES} local branches, {} read as own candidates ({} created here, the rest only checked out here), {} of them own and unpushed, 4 items (1 working), so {STOP_OWED} items owed: present {} vs away (stub gh) {} vs `{}` {} vs one `git rev-parse` {} (medians of round medians; {} rounds x {} runs each, rotating); away/present = {:.2}x (median of per-round ratios); an fdatasync with nothing unsynced took {:.0} us before the rounds and {:.0} us after, a rename of a 10 KiB file over an existing one {:.0} us and {:.0} us; gh listings: {} in {away_runs} away stops, 0 in {present_runs} present stops; the away working copy's journal grew by one session.judged per away stop, the present one's and the away record did not",
        STOP_CREATED.len() + checked_out_only,
        STOP_CREATED.len(),
        STOP_UNPUSHED_OWN.len(),
        ms(p),
        ms(a),
        true_bin.display(),
        ms(tr),
        ms(g),
        cfg.stop_rounds,
        cfg.stop_ops,
        median(&away_vs_present),
        fs_before.0,
        fs_after.0,
        fs_before.1,
        fs_after.1,
        gh_calls(&calls),
    );
    println!("[8] {note}");
    let mut take = |k: usize| std::mem::take(&mut ratios[k]);
    let rows = vec![
        Row {
            name: format!("8a. `abcd hook stop` present, {STOP_BRANCHES} local branches, vs a trivial process"),
            contenders: format!("`abcd hook stop` present {} vs `{}` {}", ms(p), true_bin.display(), ms(tr)),
            ratio_label: "stop-present/true latency".into(),
            ratios: take(0),
            target: Target::Context,
        },
        Row {
            name: format!("8b. `abcd hook stop` away (stub `gh`), {STOP_BRANCHES} local branches, vs a trivial process"),
            contenders: format!("`abcd hook stop` away {} vs `{}` {}", ms(a), true_bin.display(), ms(tr)),
            ratio_label: "stop-away/true latency".into(),
            ratios: take(1),
            target: Target::Context,
        },
        Row {
            name: "8c. one `git rev-parse` (a git child, as the stop hook starts them) vs a trivial process".into(),
            contenders: format!("`git rev-parse -q --verify HEAD` {} vs `{}` {}", ms(g), true_bin.display(), ms(tr)),
            ratio_label: "git/true latency".into(),
            ratios: take(3),
            target: Target::Context,
        },
    ];
    (rows, note)
}

// ----------------------------------------------------------------------------------------
// 9. `abcd resume --json` over 20 runs × 5 lanes of history, vs a trivial process

/// The working copies benchmark 9's runs spread over (round robin).
const RESUME_WORKING_COPIES: usize = 2;
/// Events per `Store::append` batch when building benchmark 9's journals (100 launches'
/// four events; about 180 KB, under the batch's byte cap).
const RESUME_BUILD_BATCH: usize = 400;
/// The one untracked file in each working copy: every lane's `git status` must list it.
const RESUME_UNTRACKED: &str = "lane-notes.txt";
/// The role every launch of benchmark 9 records.
const RESUME_ROLE: &str = "implementer";

/// A process that existed and is gone: a child started, named while it ran (pid and start
/// ticks, from `/proc`), killed and reaped. So `abcd resume` judges it gone for real,
/// whether its pid is free again or reused by then.
fn gone_process() -> ProcessId {
    let mut child = Command::new("sleep")
        .arg("60")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting a child to name");
    let id = process::identify(child.id()).expect("naming a live child");
    child.kill().expect("killing the child");
    child.wait().expect("reaping the child");
    assert_eq!(process::liveness(&id), Liveness::Gone, "a reaped child reads as gone");
    id
}

/// An event of the launch ledger, as the CLI writes it.
fn ledger_event(kind: &str, data: impl serde::Serialize) -> NewEvent {
    NewEvent { kind: kind.into(), actor: actor(), data: serde_json::to_value(data).expect("plain data serializes") }
}

/// The four events of one launch that ran its course: intended, started (by `agent`),
/// exited with code 0, its receipt collected. Its files are where `abcd launch` puts them.
fn launch_events(run: &RunStarted, lane: &str, n: u64, agent: ProcessId) -> [NewEvent; 4] {
    let folder = Path::new(&run.working_copy).join(abcd::places::LOCAL_TIER).join("runs").join(&run.run);
    let file = |suffix: &str| folder.join(format!("{lane}-{n}.{suffix}")).display().to_string();
    let (r, l) = (run.run.clone(), lane.to_string());
    [
        ledger_event(
            abcd::event::LAUNCH_INTENDED,
            LaunchIntended {
                run: r.clone(),
                lane: l.clone(),
                launch: n,
                role: RESUME_ROLE.into(),
                command: vec!["claude".into(), "-p".into(), format!("Carry lane {lane} of {} one step further (step {n})", run.run)],
                receipt: file("receipt.md"),
                worktree: run.working_copy.clone(),
                launcher: Some(agent),
            },
        ),
        ledger_event(
            abcd::event::LAUNCH_STARTED,
            LaunchStarted { run: r.clone(), lane: l.clone(), launch: n, process: agent, stdout: file("out"), stderr: file("err") },
        ),
        ledger_event(
            abcd::event::LAUNCH_EXITED,
            LaunchExited { run: r.clone(), lane: l.clone(), launch: n, status: ExitStatus::Code { code: 0 } },
        ),
        ledger_event(
            abcd::event::RECEIPT_COLLECTED,
            ReceiptCollected {
                blake3: blake3::hash(format!("{r}/{l}/{n}").as_bytes()).to_hex().to_string(),
                run: r,
                lane: l,
                launch: n,
                bytes: 2048,
                hashed_bytes: None,
            },
        ),
    ]
}

/// One of benchmark 9's working copies, at `dir/<name>`, with a bare `dir/<name>-origin.git`
/// as `origin`: `main` with one commit, `abcd init`, abcd's files committed and pushed
/// (`origin/HEAD` → `origin/main`, so every lane is 0 behind), then one untracked file.
fn resume_working_copy(dir: &Path, home: &Path, name: &str) -> PathBuf {
    let origin = dir.join(format!("{name}-origin.git"));
    let root = dir.join(name);
    let utf8 = |p: &Path| p.to_str().expect("a UTF-8 path").to_string();
    git_in(dir, &["init", "-q", "--bare", "-b", "main", &utf8(&origin)], &[]);
    git_in(dir, &["init", "-q", "-b", "main", &utf8(&root)], &[]);
    let git = |args: &[&str]| git_in(&root, args, &[]);
    git(&["config", "user.name", "Bench Person"]);
    git(&["config", "user.email", STOP_EMAIL]);
    git(&["remote", "add", "origin", &utf8(&origin)]);
    commit_file(&root, "README", name, &[]);
    managed_working_copy(&root, home);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "abcd init"]);
    git(&["push", "-q", "-u", "origin", "main"]);
    git(&["symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"]);
    std::fs::write(root.join(RESUME_UNTRACKED), "left uncommitted on purpose\n").expect("writing the untracked file");
    assert_eq!(git(&["status", "--porcelain"]), format!("?? {RESUME_UNTRACKED}"), "one untracked file, nothing else");
    root
}

/// Benchmark 9's home store's machine journal, as `abcd` opens it.
fn machine_store(home: &Path) -> Store {
    Store::new(Journal::new(RealDisk::shared(), JournalPaths::beside(&home.join("machine.jsonl")), Some(AnchorStore::new(home))))
}

/// Every journal benchmark 9 reads must still give its state from `state.json` (nothing to
/// fold) and hold every run; returns each journal's event count and the bytes of its
/// `state.json`, machine journal first.
fn check_resume_stores(roots: &[PathBuf], home: &Path, runs: &[RunStarted], launches: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let machine = machine_store(home).current_state().expect("the machine journal's state");
    assert_eq!(machine.base, StateBase::ProjectionCurrent, "the machine journal reads from its state.json");
    assert_eq!(machine.state.journal.skipped_total, 0, "the fold took every machine journal event");
    assert_eq!(machine.state.ledger.index.len(), runs.len(), "the machine journal indexes every run");
    let state_bytes = |dir: PathBuf| std::fs::metadata(dir.join(abcd::store::projection::STATE_FILE)).expect("stat").len();
    out.push((machine.head.seq + 1, state_bytes(home.to_path_buf())));
    for root in roots {
        let (store, _) = wc_store(root, home);
        let cur = store.current_state().expect("the working copy's state");
        assert_eq!(cur.base, StateBase::ProjectionCurrent, "{} reads from its state.json", root.display());
        assert_eq!(cur.state.journal.skipped_total, 0, "the fold took every event of {}: {:?}", root.display(), cur.state.journal.skipped);
        let mine: Vec<&RunStarted> = runs.iter().filter(|r| Path::new(&r.working_copy) == root).collect();
        assert_eq!(cur.state.ledger.runs.len(), mine.len(), "every run of {} is folded", root.display());
        for r in mine {
            let run = &cur.state.ledger.runs[&r.run];
            assert!(run.lanes.values().all(|l| l.launches_total == launches), "every launch of {} is folded", r.run);
        }
        out.push((cur.head.seq + 1, state_bytes(root.join(abcd::places::LOCAL_TIER))));
    }
    out
}

/// Checks `abcd resume --json`'s output: every run, in its working copy, its driver gone;
/// every lane at its last launch with the receipt collected, its agent gone, its worktree's
/// one untracked file listed (so `git status` ran) and 0 commits behind (so the base read
/// ran); nothing on stderr.
fn check_resume(stdout: &[u8], stderr: &[u8], runs: &[RunStarted], launches: u64) {
    assert!(stderr.is_empty(), "abcd resume warned: {}", String::from_utf8_lossy(stderr));
    let v: serde_json::Value = serde_json::from_slice(stdout)
        .unwrap_or_else(|e| panic!("abcd resume --json printed no JSON ({e}): {}", String::from_utf8_lossy(stdout)));
    assert_eq!(v["schema"].as_str(), Some("abcd/resume/v1"), "the listing's schema: {v}");
    let listed = v["runs"].as_array().unwrap_or_else(|| panic!("no runs in the listing: {v}"));
    assert_eq!(listed.len(), runs.len(), "every run is listed");
    let stage = format!("launch {launches}: receipt collected");
    for r in runs {
        let l = listed.iter().find(|l| l["run"].as_str() == Some(&r.run)).unwrap_or_else(|| panic!("run {} is not listed", r.run));
        assert_eq!(l["working_copy"].as_str(), Some(r.working_copy.as_str()), "run {}'s working copy", r.run);
        assert!(l["problem"].is_null() && l["driver_alive"] == false && l["halted"] == false, "run {} as listed: {l}", r.run);
        let lanes = l["lanes"].as_array().unwrap_or_else(|| panic!("run {} lists no lanes: {l}", r.run));
        assert_eq!(lanes.len(), r.lanes.len(), "every lane of {} is listed", r.run);
        for lane in lanes {
            let ok = lane["stage"].as_str() == Some(stage.as_str())
                && lane["launch"].as_u64() == Some(launches)
                && lane["agent_alive"] == false
                && lane["receipt_waiting"] == false
                && lane["worktree"].as_str() == Some(r.working_copy.as_str())
                && lane["uncommitted"] == serde_json::json!([RESUME_UNTRACKED])
                && lane["behind_default"].as_u64() == Some(0);
            assert!(ok, "a lane of {} as listed: {lane}", r.run);
        }
    }
}

/// The git children one `abcd resume --json` starts, counted with a `git` shim first on
/// PATH that logs its arguments and execs the real git (untimed: the shim's shell costs a
/// start of its own). Returns the count per subcommand, most first.
fn count_resume_git(dir: &Path, root: &Path, home: &Path, runs: &[RunStarted], launches: u64) -> Vec<(String, usize)> {
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let real_git = std::env::split_paths(&path_var).map(|d| d.join("git")).find(|p| p.is_file()).expect("git on PATH");
    let shim_dir = dir.join("resume-git-shim");
    std::fs::create_dir_all(&shim_dir).expect("creating the shim's folder");
    let log = dir.join("resume-git-calls");
    let shim = shim_dir.join("git");
    std::fs::write(&shim, format!("#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n", log.display(), real_git.display()))
        .expect("writing the git shim");
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).expect("making the shim executable");
    let path = std::env::join_paths(std::iter::once(shim_dir).chain(std::env::split_paths(&path_var))).expect("a PATH with the shim first");
    let mut cmd = Command::new(abcd_bin());
    cmd.args(["resume", "--json"]).current_dir(root).env("ABCD_HOME", home).env("PATH", path).envs(STOP_GIT_ENV).stdin(Stdio::null());
    let (_, out) = timed_output(&mut cmd);
    check_resume(&out.stdout, &out.stderr, runs, launches);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for line in text.lines() {
        // The command without git's options before it (`-c x` takes a value): no lane's
        // path is on it, so the same command for every lane counts as one.
        let mut words = line.split_whitespace().peekable();
        while let Some(w) = words.next_if(|w| w.starts_with('-')) {
            if w == "-c" {
                words.next();
            }
        }
        *counts.entry(words.collect::<Vec<&str>>().join(" ")).or_default() += 1;
    }
    let mut counts: Vec<(String, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counts
}

fn bench_resume(cfg: &Config, dir: &Path) -> (Vec<Row>, String) {
    let home = dir.join("resume-home");
    std::fs::create_dir(&home).expect("creating benchmark 9's home store");
    let t = Instant::now();
    let roots: Vec<PathBuf> = (0..RESUME_WORKING_COPIES).map(|k| resume_working_copy(dir, &home, &format!("resume-wc-{k}"))).collect();
    let setup_secs = t.elapsed().as_secs_f64();

    // The runs, round robin over the working copies; every driver and every agent a process
    // that is gone.
    let t = Instant::now();
    let lanes: Vec<String> = (0..cfg.resume_lanes).map(|l| format!("lane-{l}")).collect();
    let runs: Vec<RunStarted> = (0..cfg.resume_runs)
        .map(|r| RunStarted {
            run: format!("run-{r:02}"),
            working_copy: roots[r % roots.len()].display().to_string(),
            lanes: lanes.clone(),
            driver: Driver { session: Some(BENCH_SESSION.into()), process: gone_process() },
        })
        .collect();
    let agents: Vec<Vec<ProcessId>> = runs.iter().map(|_| lanes.iter().map(|_| gone_process()).collect()).collect();
    // Each working copy's journal, through the store as the CLI writes it: its runs'
    // `run.started`, then launch after launch, every lane of every run in step.
    let mut launch_events_total = 0u64;
    for root in &roots {
        let (store, scope) = wc_store(root, &home);
        let mine: Vec<usize> = (0..runs.len()).filter(|&r| Path::new(&runs[r].working_copy) == root).collect();
        let mut batch: Vec<NewEvent> = mine.iter().map(|&r| ledger_event(abcd::event::RUN_STARTED, &runs[r])).collect();
        for n in 1..=cfg.resume_launches {
            for &r in &mine {
                for (k, lane) in lanes.iter().enumerate() {
                    batch.extend(launch_events(&runs[r], lane, n, agents[r][k]));
                    launch_events_total += 4;
                }
            }
            if batch.len() >= RESUME_BUILD_BATCH {
                store_append(&store, &scope, &batch);
                batch.clear();
            }
        }
        if !batch.is_empty() {
            store_append(&store, &scope, &batch);
        }
    }
    // The machine journal indexes every run, as `abcd run start` leaves it.
    let index: Vec<NewEvent> = runs.iter().map(|r| ledger_event(abcd::event::RUN_STARTED, r)).collect();
    store_append(&machine_store(&home), &Scope::Machine {}, &index);
    let build_secs = t.elapsed().as_secs_f64();
    let sizes = check_resume_stores(&roots, &home, &runs, cfg.resume_launches);
    let journal_bytes: u64 = roots.iter().map(|r| std::fs::metadata(wc_journal(r)).expect("stat").len()).sum();
    let newest_checkpoints: Vec<String> = roots
        .iter()
        .map(|r| {
            let cps = r.join(abcd::places::LOCAL_TIER).join("checkpoints");
            checkpoint::list(&RealDisk, &cps).expect("listing checkpoints").first().map_or("none".into(), |c| c.0.to_string())
        })
        .collect();
    let total_lanes = runs.len() * lanes.len();
    println!(
        "built benchmark 9's history: {} runs x {} lanes x {} launches = {launch_events_total} launch events over {} working copies ({} and {} events, {:.1} MiB of journal; state.json {} and {} KiB; newest checkpoints at seq {}), machine journal {} events (state.json {} KiB); git setup {setup_secs:.1} s, history {build_secs:.1} s",
        runs.len(),
        lanes.len(),
        cfg.resume_launches,
        roots.len(),
        sizes[1].0,
        sizes.get(2).map_or(0, |s| s.0),
        journal_bytes as f64 / 1048576.0,
        sizes[1].1 / 1024,
        sizes.get(2).map_or(0, |s| s.1 / 1024),
        newest_checkpoints.join(" and "),
        sizes[0].0,
        sizes[0].1 / 1024,
    );

    // What the listing reads besides git, in this process: the three journals' states
    // from their `state.json` (what `abcd resume` does), and for context what a fold would
    // cost without it, from the newest checkpoint and from genesis.
    let read_ops = if cfg.full { 11 } else { 2 };
    let read_t: Vec<f64> = (0..read_ops)
        .map(|_| {
            let t = Instant::now();
            black_box(machine_store(&home).current_state().expect("the machine journal's state"));
            for root in &roots {
                black_box(wc_store(root, &home).0.current_state().expect("a working copy's state"));
            }
            t.elapsed().as_secs_f64()
        })
        .collect();
    let (store0, _) = wc_store(&roots[0], &home);
    let current0 = store0.current_state().expect("the working copy's state");
    let file0 = RealDisk.open_read(&wc_journal(&roots[0])).expect("opening the journal");
    let t = Instant::now();
    let genesis = abcd::store::fold_from(
        file0.as_ref(),
        abcd::fold::FoldedState::default(),
        scan::StartPoint::GENESIS,
        StateBase::Genesis,
        current0.journal_id.clone(),
    )
    .expect("folding from genesis");
    let genesis_secs = t.elapsed().as_secs_f64();
    assert_eq!(genesis.state.ledger, current0.state.ledger, "state.json holds exactly the fold of the journal");
    let cps = roots[0].join(abcd::places::LOCAL_TIER).join("checkpoints");
    let t = Instant::now();
    let cp = checkpoint::newest_usable(&RealDisk, &cps, &current0.journal_id, file0.as_ref(), None).expect("reading checkpoints");
    let from_cp = cp.map(|cp| {
        let (seq, head) = (cp.seq, cp.head());
        let cur = abcd::store::fold_from(
            file0.as_ref(),
            cp.state,
            scan::StartPoint { after: Some(head) },
            StateBase::Checkpoint { seq },
            current0.journal_id.clone(),
        )
        .expect("folding from the checkpoint");
        assert_eq!(cur.state.ledger, current0.state.ledger, "the checkpoint plus its tail folds to the same state");
        (seq, t.elapsed().as_secs_f64())
    });

    // The git children of one listing (untimed, through a counting shim).
    let git_counts = count_resume_git(dir, &roots[0], &home, &runs, cfg.resume_launches);
    let git_total: usize = git_counts.iter().map(|c| c.1).sum();

    let true_bin = true_bin();
    let env = |cmd: &mut Command| {
        cmd.current_dir(&roots[0]).env("ABCD_HOME", &home).envs(STOP_GIT_ENV).stdin(Stdio::null());
    };
    let mut contenders: Vec<Contender> = vec![
        (
            "resume",
            Box::new(|| {
                let mut cmd = Command::new(abcd_bin());
                cmd.args(["resume", "--json"]);
                env(&mut cmd);
                let (secs, out) = timed_output(&mut cmd);
                check_resume(&out.stdout, &out.stderr, &runs, cfg.resume_launches);
                secs
            }),
        ),
        (
            "true",
            Box::new(|| {
                let mut cmd = Command::new(true_bin);
                env(&mut cmd);
                let (secs, out) = timed_output(&mut cmd);
                assert!(out.stdout.is_empty() && out.stderr.is_empty(), "`true` printed something");
                secs
            }),
        ),
        (
            "version",
            Box::new(|| {
                let mut cmd = Command::new(abcd_bin());
                cmd.arg("--version");
                env(&mut cmd);
                let (secs, out) = timed_output(&mut cmd);
                assert!(out.stdout.starts_with(b"abcd "), "abcd --version printed {}", String::from_utf8_lossy(&out.stdout));
                secs
            }),
        ),
        (
            "git",
            Box::new(|| {
                let mut cmd = Command::new("git");
                cmd.args(["rev-parse", "-q", "--verify", "HEAD"]);
                env(&mut cmd);
                let (secs, out) = timed_output(&mut cmd);
                assert_eq!(out.stdout.len(), 41, "git rev-parse printed {}", String::from_utf8_lossy(&out.stdout));
                secs
            }),
        ),
    ];
    // Untimed: one run of each, to warm the binaries and the page cache.
    for (_, run) in contenders.iter_mut() {
        run();
    }
    let n = contenders.len();
    let (mut t, mut ratios) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    let mut version_ratios = Vec::new();
    for round in 0..cfg.resume_rounds {
        let mut turns: Vec<&mut dyn FnMut() -> f64> = contenders.iter_mut().map(|(_, run)| &mut **run as &mut dyn FnMut() -> f64).collect();
        let m = rotate(round, cfg.resume_ops, &mut turns);
        // Each contender's ratio to `true` (index 1), and the listing's to abcd's own start.
        for k in 0..n {
            t[k].push(m[k]);
            ratios[k].push(m[k] / m[1]);
        }
        version_ratios.push(m[0] / m[2]);
    }
    drop(contenders);

    // Peak memory of one more listing, through the spawner.
    let git_env: Vec<(&str, &Path)> = STOP_GIT_ENV.iter().map(|(k, v)| (*k, Path::new(*v))).collect();
    let mut rss_env = vec![("ABCD_HOME", home.as_path())];
    rss_env.extend(git_env);
    let rss = run_child_in(Some(&roots[0]), abcd_bin(), &["resume", "--json"], &rss_env);
    check_resume(rss.stdout.as_bytes(), b"", &runs, cfg.resume_launches);

    // Nothing the listings did changed a journal, and every one still reads from its
    // state.json and verifies clean.
    assert_eq!(check_resume_stores(&roots, &home, &runs, cfg.resume_launches), sizes, "the listings wrote no event");
    verify_clean(&home.join("machine.jsonl"), &home);
    for root in &roots {
        verify_clean(&wc_journal(root), &home);
    }
    let resume_json = roots[0].join(abcd::places::LOCAL_TIER).join("resume.json");
    let resume_json_bytes = std::fs::metadata(&resume_json).expect("abcd resume wrote resume.json").len();

    let med = |k: usize| median(&t[k]);
    let (res, tr, v, g) = (med(0), med(1), med(2), med(3));
    let from_cp_note =
        from_cp.map_or("no checkpoint".to_string(), |(seq, secs)| format!("from its newest checkpoint (seq {seq}) {}", ms(secs)));
    let git_note: Vec<String> = git_counts.iter().map(|(what, c)| format!("{c} `{what}`")).collect();
    let note = format!(
        "benchmark 9: `abcd resume --json` over {} runs x {} lanes x {} launches ({launch_events_total} launch events, {} working copies, every driver and agent gone): {} vs `{}` {} vs `abcd --version` {} vs one `git rev-parse` {} (medians of round medians; {} rounds x {} runs each, rotating); listing/version = {:.2}x (median of per-round ratios); base: state.json current in all {} journals before and after the rounds (nothing folded); in this process, reading the three states from state.json takes {} (median of {read_ops}), while folding one working copy's {} events would take {} from genesis and {from_cp_note}; git children per listing: {git_total} ({:.1} per lane: {}); resume.json {} KiB; peak memory (max RSS through the spawner) {} KiB",
        runs.len(),
        lanes.len(),
        cfg.resume_launches,
        roots.len(),
        ms(res),
        true_bin.display(),
        ms(tr),
        ms(v),
        ms(g),
        cfg.resume_rounds,
        cfg.resume_ops,
        median(&version_ratios),
        roots.len() + 1,
        ms(median(&read_t)),
        sizes[1].0,
        ms(genesis_secs),
        git_total as f64 / total_lanes as f64,
        git_note.join(", "),
        resume_json_bytes / 1024,
        rss.max_rss_kib,
    );
    println!("[9] {note}");
    let mut take = |k: usize| std::mem::take(&mut ratios[k]);
    let what = format!("{} runs x {} lanes, {launch_events_total} launch events", runs.len(), lanes.len());
    let rows = vec![
        Row {
            name: format!("9a. `abcd resume --json`, {what}, vs a trivial process"),
            contenders: format!(
                "`abcd resume --json` {} vs `{}` {} ({git_total} git children per listing)",
                ms(res),
                true_bin.display(),
                ms(tr)
            ),
            ratio_label: "resume/true latency".into(),
            ratios: take(0),
            target: Target::AtMost(10.0),
        },
        Row {
            name: format!("9b. `abcd resume --json`, {what}, vs `abcd --version` (abcd's own start and exit)"),
            contenders: format!("`abcd resume --json` {} vs `abcd --version` {} (`abcd --version`/`true` {:.2}x)", ms(res), ms(v), v / tr),
            ratio_label: "resume/version latency".into(),
            ratios: version_ratios,
            target: Target::Context,
        },
        Row {
            name: "9c. one `git rev-parse` (a git child, as the listing starts them) vs a trivial process".into(),
            contenders: format!("`git rev-parse -q --verify HEAD` {} vs `{}` {}", ms(g), true_bin.display(), ms(tr)),
            ratio_label: "git/true latency".into(),
            ratios: take(3),
            target: Target::Context,
        },
    ];
    (rows, note)
}

// ----------------------------------------------------------------------------------------
// 10. `abcd resume --json` and `abcd loop drive` with a loop, 100,000 vs 1,000 other events

/// The small loop working copy's other events (full run; the large one's are
/// `ABCD_BENCH_LOOP_EVENTS`, 100,000 by default).
const LOOP_SMALL_EVENTS: u64 = 1_000;
/// The same, in smoke mode.
const LOOP_SMOKE_SMALL_EVENTS: u64 = 200;
/// The loop's run name.
const LOOP_RUN: &str = "bench-loop";
/// What the scripted agents reply: work from the implementer, no stop signal from the
/// reviewer, so with `--max-rounds 1` the loop pauses after its first review.
const LOOP_IMPLEMENTER_REPLY: &str = "did phase 1";
const LOOP_REVIEWER_REPLY: &str = "not yet: the tests are missing";

/// A scripted agent that ignores its prompt and prints `reply`.
fn loop_agent(path: &Path, reply: &str) {
    std::fs::write(path, format!("#!/bin/sh\necho '{reply}'\n")).expect("writing a scripted agent");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("making the agent executable");
}

/// `abcd <args>` in working copy `root` with home store `home`, as benchmark 10 runs it.
fn loop_cmd(root: &Path, home: &Path, args: &[&str]) -> Command {
    let mut cmd = abcd_cmd(root, home, args);
    cmd.envs(STOP_GIT_ENV);
    cmd
}

/// `abcd loop status RUN --json`: the loop is paused after one review round, 2 turns.
fn check_loop_paused(root: &Path, home: &Path) {
    let (_, out) = timed_output(&mut loop_cmd(root, home, &["loop", "status", LOOP_RUN, "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("loop status --json prints JSON");
    let r = &v["record"];
    assert_eq!(
        (r["state"].as_str(), r["paused_reason"].as_str(), r["turns"].as_u64()),
        (Some("paused"), Some("phase_not_converged"), Some(2)),
        "the loop is paused after one review round: {v}"
    );
}

/// `abcd resume --json` output: exactly the loop's run, with its record's listing.
fn check_loop_resume(stdout: &[u8], stderr: &[u8]) {
    assert!(stderr.is_empty(), "abcd resume warned: {}", String::from_utf8_lossy(stderr));
    let v: serde_json::Value = serde_json::from_slice(stdout).expect("abcd resume --json prints JSON");
    assert_eq!(v["schema"], "abcd/resume/v1", "{v}");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "the loop's run alone: {v}");
    let l = &runs[0]["loop"];
    assert_eq!(runs[0]["run"], LOOP_RUN, "{v}");
    assert_eq!(
        (l["state"].as_str(), l["paused_reason"].as_str(), l["turns"].as_u64()),
        (Some("paused"), Some("phase_not_converged"), Some(2)),
        "the listing carries the loop's record: {v}"
    );
}

/// `abcd loop drive RUN` output on the paused loop: it says so and exits 0 (checked by
/// `timed_output`).
fn check_loop_drive(stdout: &[u8], stderr: &[u8]) {
    let text = String::from_utf8_lossy(stdout);
    assert!(text.contains("PAUSED: phase 1 did not converge in 1 rounds"), "abcd loop drive printed {text}");
    assert!(stderr.is_empty(), "abcd loop drive warned: {}", String::from_utf8_lossy(stderr));
}

/// One of benchmark 10's working copies: benchmark 9's kind of git working copy with its
/// own home store, the loop started and paused by the real `abcd loop start`, then `other`
/// checklist events through the store (50 items added, then changed round robin, in
/// batches of 500, as benchmark 6 builds them). Returns the root, the home and the events.
fn loop_working_copy(dir: &Path, name: &str, other: u64) -> (PathBuf, PathBuf, u64) {
    let home = dir.join(format!("{name}-home"));
    std::fs::create_dir(&home).expect("creating a home store");
    let root = resume_working_copy(dir, &home, name);
    let (implementer, reviewer) = (dir.join("loop-implementer"), dir.join("loop-reviewer"));
    if !implementer.exists() {
        loop_agent(&implementer, LOOP_IMPLEMENTER_REPLY);
        loop_agent(&reviewer, LOOP_REVIEWER_REPLY);
    }
    let imp = format!("{} {{prompt}}", implementer.display());
    let rev = format!("{} {{prompt}}", reviewer.display());
    let args = ["loop", "start", "--run", LOOP_RUN, "--max-rounds", "1", "--implementer", &imp, "--reviewer", &rev];
    let (_, out) = timed_output(&mut loop_cmd(&root, &home, &args));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("did not converge in 1 rounds: paused"), "abcd loop start: {text}");
    check_loop_paused(&root, &home);
    let (store, scope) = wc_store(&root, &home);
    let adds: Vec<NewEvent> = (0..LIST_ITEMS.min(other)).map(|i| item_added(&list_item_title(i))).collect();
    let mut head = store_append(&store, &scope, &adds);
    let mut written = adds.len() as u64;
    let mut change = 0u64;
    while written < other {
        let batch: Vec<NewEvent> = (0..LIST_BUILD_BATCH.min(other - written))
            .map(|_| {
                change += 1;
                item_changed(change % LIST_ITEMS, change / LIST_ITEMS)
            })
            .collect();
        written += batch.len() as u64;
        head = store_append(&store, &scope, &batch);
    }
    check_loop_paused(&root, &home);
    (root, home, head + 1)
}

fn bench_loop(cfg: &Config, dir: &Path) -> (Vec<Row>, String) {
    let t = Instant::now();
    let (large, large_home, large_events) = loop_working_copy(dir, "loop-large", cfg.loop_large);
    let build_secs = t.elapsed().as_secs_f64();
    let (small, small_home, small_events) = loop_working_copy(dir, "loop-small", cfg.loop_small);
    let large_bytes = std::fs::metadata(wc_journal(&large)).expect("stat").len();
    println!(
        "built benchmark 10's working copies: a paused loop plus {} other events ({large_events} events, {:.1} MiB of journal) in {build_secs:.1} s, and plus {} ({small_events} events)",
        cfg.loop_large,
        large_bytes as f64 / 1048576.0,
        cfg.loop_small,
    );

    // For context: what reading the loop by folding the whole large journal costs, here.
    let (store, _) = wc_store(&large, &large_home);
    let current = store.current_state().expect("the large working copy's state");
    let file = RealDisk.open_read(&wc_journal(&large)).expect("opening the journal");
    let t = Instant::now();
    let genesis = abcd::store::fold_from(
        file.as_ref(),
        abcd::fold::FoldedState::default(),
        scan::StartPoint::GENESIS,
        StateBase::Genesis,
        current.journal_id.clone(),
    )
    .expect("folding from genesis");
    let genesis_secs = t.elapsed().as_secs_f64();
    assert_eq!(genesis.head, current.head, "the fold from genesis reaches the same head");
    drop((store, file));

    let resume = |root: &Path, home: &Path| {
        let (secs, out) = timed_output(&mut loop_cmd(root, home, &["resume", "--json"]));
        check_loop_resume(&out.stdout, &out.stderr);
        secs
    };
    let drive = |root: &Path, home: &Path| {
        let (secs, out) = timed_output(&mut loop_cmd(root, home, &["loop", "drive", LOOP_RUN]));
        check_loop_drive(&out.stdout, &out.stderr);
        secs
    };
    let version = || {
        let (secs, out) = timed_output(&mut loop_cmd(&small, &small_home, &["--version"]));
        assert!(out.stdout.starts_with(b"abcd "), "abcd --version printed {}", String::from_utf8_lossy(&out.stdout));
        secs
    };
    let drives = std::cell::Cell::new(0u64);
    let mut contenders: Vec<Contender> = vec![
        ("resume large", Box::new(|| resume(&large, &large_home))),
        ("resume small", Box::new(|| resume(&small, &small_home))),
        (
            "drive large",
            Box::new(|| {
                drives.set(drives.get() + 1);
                drive(&large, &large_home)
            }),
        ),
        ("drive small", Box::new(|| drive(&small, &small_home))),
        ("version", Box::new(version)),
    ];
    // Untimed: one run of each, to warm the binaries and the page cache.
    for (_, run) in contenders.iter_mut() {
        run();
    }
    let n = contenders.len();
    let mut t = vec![Vec::new(); n];
    let (mut resume_ratios, mut drive_ratios, mut resume_floor, mut drive_floor) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..cfg.loop_rounds {
        let mut turns: Vec<&mut dyn FnMut() -> f64> = contenders.iter_mut().map(|(_, run)| &mut **run as &mut dyn FnMut() -> f64).collect();
        let m = rotate(round, cfg.loop_ops, &mut turns);
        for k in 0..n {
            t[k].push(m[k]);
        }
        resume_ratios.push(m[0] / m[1]);
        drive_ratios.push(m[2] / m[3]);
        resume_floor.push(m[1] / m[4]);
        drive_floor.push(m[3] / m[4]);
    }
    drop(contenders);

    // Each drive appended its `run.driver_claimed` and nothing else; the loop is still
    // paused; both journals verify clean.
    let (store, _) = wc_store(&large, &large_home);
    assert_eq!(store.current_state().expect("the large state").head.seq + 1, large_events + drives.get(), "one event per drive");
    check_loop_paused(&large, &large_home);
    check_loop_paused(&small, &small_home);
    verify_clean(&wc_journal(&large), &large_home);
    verify_clean(&wc_journal(&small), &small_home);

    let med = |k: usize| median(&t[k]);
    let (rl, rs, dl, ds, v) = (med(0), med(1), med(2), med(3), med(4));
    let note = format!(
        "benchmark 10: a paused loop plus {} vs {} other events: `abcd resume --json` {} vs {}, `abcd loop drive {LOOP_RUN}` {} vs {}, `abcd --version` {} (medians of round medians; {} rounds x {} runs each, rotating); large/small = resume {:.2}x, drive {:.2}x (median of per-round ratios); folding the large journal's {large_events} events from genesis in this process takes {}",
        cfg.loop_large,
        cfg.loop_small,
        ms(rl),
        ms(rs),
        ms(dl),
        ms(ds),
        ms(v),
        cfg.loop_rounds,
        cfg.loop_ops,
        median(&resume_ratios),
        median(&drive_ratios),
        ms(genesis_secs),
    );
    println!("[10] {note}");
    let (big, little) = (cfg.loop_large, cfg.loop_small);
    let rows = vec![
        Row {
            name: format!("10a. `abcd resume --json` with a paused loop, {big} vs {little} other events"),
            contenders: format!("{big} events {} vs {little} events {}", ms(rl), ms(rs)),
            ratio_label: "large/small latency".into(),
            ratios: resume_ratios,
            target: Target::AtMost(1.2),
        },
        Row {
            name: format!("10b. `abcd loop drive` of the paused loop, {big} vs {little} other events"),
            contenders: format!("{big} events {} vs {little} events {}", ms(dl), ms(ds)),
            ratio_label: "large/small latency".into(),
            ratios: drive_ratios,
            target: Target::AtMost(1.2),
        },
        Row {
            name: format!("10c. `abcd resume --json` with the loop, {little} other events, vs `abcd --version` (the floor)"),
            contenders: format!("`abcd resume --json` {} vs `abcd --version` {}", ms(rs), ms(v)),
            ratio_label: "resume/version latency".into(),
            ratios: resume_floor,
            target: Target::Context,
        },
        Row {
            name: format!("10d. `abcd loop drive` of the paused loop, {little} other events, vs `abcd --version` (the floor)"),
            contenders: format!("`abcd loop drive` {} vs `abcd --version` {}", ms(ds), ms(v)),
            ratio_label: "drive/version latency".into(),
            ratios: drive_floor,
            target: Target::Context,
        },
    ];
    (rows, note)
}

// ----------------------------------------------------------------------------------------
// The machine

/// The mount holding `dir`, from /proc/mounts: device, type and options; for ext4, whether
/// it has a journal (a jbd2 entry under /proc/fs/jbd2 for the device).
fn describe_filesystem(dir: &Path) -> String {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let best = mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4 && dir.starts_with(f[1]))
                .then(|| (f[1].len(), f[0].to_string(), f[1].to_string(), f[2].to_string(), f[3].to_string()))
        })
        .max_by_key(|m| m.0);
    let Some((_, dev, at, fstype, opts)) = best else { return "unknown (no /proc/mounts)".into() };
    let journal = if fstype == "ext4" {
        let name = dev.rsplit('/').next().unwrap_or_default().to_string();
        let has = std::fs::read_dir("/proc/fs/jbd2")
            .map(|rd| rd.flatten().any(|e| e.file_name().to_string_lossy().starts_with(&format!("{name}-"))))
            .unwrap_or(false);
        if has { ", with a jbd2 journal" } else { ", no jbd2 journal for this device in /proc/fs/jbd2" }
    } else {
        ""
    };
    format!("{fstype} {dev} mounted at {at} ({opts}{journal})")
}
