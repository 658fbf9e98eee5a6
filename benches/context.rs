//! Context benchmarks: what the session-start hook and the checklist verbs cost as the
//! plan and its history grow. The machines this runs on are small, shared and noisy, so
//! every benchmark runs its contenders side by side, interleaved (the order rotating every
//! round), in one run, and reports the median of per-round RATIOS, each contender's time
//! printed beside its floor's; absolute times are context only.
//!
//! 1. `abcd hook session-start` (the release binary, spawned with the host's SessionStart
//!    payload on stdin) in a working copy of 20 open items (1a) and in one of 2,000 open
//!    items (1b), each against a trivial process (`/usr/bin/true`, the same payload on
//!    stdin); `abcd --version` for context (abcd's own start and exit). Each session-start
//!    appends a durable `session.started` event, as the real hook does.
//! 2. `abcd checklist add` (2a) and `abcd hook session-start` (2b) in a working copy that
//!    has added 2,000 items and closed 1,980 of them against a fresh working copy holding
//!    the same 20 open items. Both copies are built anew every round, so each round's adds
//!    meet the same plan.
//! 3. Every hook the host runs (`session-start`, `user-prompt-submit`, `pre-tool-use`,
//!    `stop`), each with its host-shaped payload: in a working copy of 20 open items while
//!    the person is away (3a-3d) and in one of 2,000 open items while present (3e-3h), each
//!    against a trivial process given the same payload; and in a working copy that added
//!    2,000 items and closed 1,980 of them against a fresh one with the same 20 open items
//!    (3i-3l), both present. No `gh` is on the hooks' PATH (every folder holding one is left
//!    out), so the forge state is the same in every run. The repositories are not touched
//!    between rounds: every figure is a warm hook (whatever a hook keeps from its last run
//!    is still good), except the cold rows (3m-3p), each the first hook after a commit in a
//!    copy of its own. For context, 3q-3x run the away and the large copy's hooks through
//!    the file the linker wrote (see below).
//!
//! Every timed `abcd` is a copy of the built binary made as `cargo install` makes one, in
//! the run's temp dir: that is the file an installed hook runs. The file the linker wrote
//! sits in the page cache in another state, which starts slower on the machines this runs
//! on (docs/decisions.md, "A binary's page cache state"), so it is measured beside the copy
//! rather than in its place.
//!
//! Working copies are made by `abcd init` and filled through the store in batches, as the
//! CLI leaves them (projections and checkpoints written by the store); before each round
//! one untimed `checklist add` and one session-start run in every copy, so the files the
//! CLI writes (`checklist.last-good.json` included) are there and the page cache is warm.
//!
//! `cargo bench --bench context` runs the full sizes. Run without `--bench` (as
//! `cargo test --all-targets` does) it runs a smoke mode with tiny sizes, so CI exercises
//! every path. `ABCD_BENCH_ONLY=3` runs only the benchmarks named; `ABCD_BENCH_KEEP=1`
//! keeps the temp dir, with the working copies and the home store, for profiling by hand.

mod common;

use common::{
    Row, Target, abcd_bin, assert_succeeded, install_copy, installed, median, ms, rotate, session_start_payload, shuffled, true_bin,
    verify_clean, write_ignoring_closed,
};
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use abcd::checklist::item::{ChangeSet, ItemFields, ItemState, slug_from_title};
use abcd::event::{ItemAdded, ItemChanged, Scope};
use abcd::journal::Journal;
use abcd::journal::anchor::AnchorStore;
use abcd::journal::format::{Actor, NewEvent};
use abcd::journal::storage::RealDisk;
use abcd::store::Store;

const ONLY_ENV: &str = "ABCD_BENCH_ONLY";
/// Set (to anything) to keep the temp dir and everything built in it, for profiling.
const KEEP_ENV: &str = "ABCD_BENCH_KEEP";
/// The host session id the spawned `abcd` sees (it goes into every event's actor).
const BENCH_SESSION: &str = "bench-session-0123456789abcdef";
/// Events per `Store::append` batch when building the working copies (under the batch's
/// byte cap: an item line is under 500 bytes).
const BUILD_BATCH: usize = 400;
/// How far ahead of now the waiting items' next looks are: no look falls due during a run.
const LOOK_AHEAD_DAYS: i64 = 30;

/// Sizes and rounds of one run.
struct Config {
    full: bool,
    only: Option<Vec<u32>>,
    /// Open items of the small plan (1a) and of the fresh copy (2), and of the large plan (1b).
    small_open: usize,
    large_open: usize,
    /// Items the long-lived copy of benchmark 2 added and closed, besides its open ones.
    closed: usize,
    /// Benchmark 1: rounds, and runs of each contender per round.
    start_rounds: usize,
    start_ops: usize,
    /// Benchmark 2: rounds (each on copies built anew), and runs of each contender per round.
    history_rounds: usize,
    history_ops: usize,
    /// Benchmark 3: rounds, and runs of each contender per round.
    hook_rounds: usize,
    hook_ops: usize,
}

impl Config {
    fn from_env() -> Config {
        let full = std::env::args().any(|a| a == "--bench");
        let only = std::env::var(ONLY_ENV)
            .ok()
            .map(|v| v.split(',').map(|n| n.trim().parse().unwrap_or_else(|_| panic!("{ONLY_ENV}={v:?}: expected e.g. 1,2"))).collect());
        if full {
            Config {
                full,
                only,
                small_open: 20,
                large_open: 2_000,
                closed: 1_980,
                start_rounds: 21,
                start_ops: 10,
                history_rounds: 21,
                history_ops: 5,
                hook_rounds: 21,
                hook_ops: 5,
            }
        } else {
            Config {
                full,
                only,
                small_open: 4,
                large_open: 40,
                closed: 36,
                start_rounds: 1,
                start_ops: 2,
                history_rounds: 1,
                history_ops: 2,
                hook_rounds: 1,
                hook_ops: 2,
            }
        }
    }

    fn runs(&self, bench: u32) -> bool {
        self.only.as_ref().is_none_or(|o| o.contains(&bench))
    }
}

fn main() {
    let cfg = Config::from_env();
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&base).expect("creating the crate's target/tmp");
    let tmp = tempfile::Builder::new().prefix("abcd-bench-context-").tempdir_in(&base).expect("creating a temp dir");
    let dir = tmp.path().canonicalize().expect("canonical temp dir");
    let home = dir.join("home");
    std::fs::create_dir(&home).expect("creating the home store");

    println!(
        "abcd context benchmarks: {}",
        if cfg.full { "full run (cargo bench)" } else { "SMOKE mode (tiny sizes; numbers not meaningful)" }
    );
    println!("  temp dir:   {} (under the crate's target/tmp)", dir.display());
    println!("  cpus:       {}", std::thread::available_parallelism().map_or(0, |n| n.get()));
    let exe = install_copy(&dir);
    println!(
        "  abcd:       {} (a copy of {}, made as `cargo install` makes it; the built file runs beside it in benchmark 3, for context)",
        exe.display(),
        abcd_bin().display()
    );
    println!(
        "  sizes:      {} and {} open items (benchmark 1); {} open items, fresh vs after {} added and {} closed (benchmark 2)",
        cfg.small_open,
        cfg.large_open,
        cfg.small_open,
        cfg.closed + cfg.small_open,
        cfg.closed
    );
    println!();

    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut journals = Vec::new();
    if cfg.runs(1) {
        let (r, note, wcs) = bench_start(&cfg, &dir, &home);
        rows.extend(r);
        notes.push(note);
        journals.extend(wcs);
    }
    if cfg.runs(2) {
        let (r, note, wcs) = bench_history(&cfg, &dir, &home);
        rows.extend(r);
        notes.push(note);
        journals.extend(wcs);
    }
    if cfg.runs(3) {
        let (r, note, wcs) = bench_hooks(&cfg, &dir, &home);
        rows.extend(r);
        notes.push(note);
        journals.extend(wcs);
    }
    // Everything appended above must have left valid journals behind.
    for path in &journals {
        verify_clean(path, &home);
    }

    common::print_report(&rows, cfg.full, &notes);
    if std::env::var_os(KEEP_ENV).is_some() {
        println!("kept the temp dir {} ({KEEP_ENV} is set): remove it by hand", tmp.keep().display());
    }
}

// ----------------------------------------------------------------------------------------
// Processes

/// `abcd <args>` (the installed copy) in working copy `wc` with home store `home`.
fn abcd_cmd(wc: &Path, home: &Path, args: &[&str]) -> Command {
    abcd_cmd_of(installed(), wc, home, args)
}

/// `exe <args>` in working copy `wc` with home store `home`.
fn abcd_cmd_of(exe: &Path, wc: &Path, home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(args).current_dir(wc).env("ABCD_HOME", home).env("CLAUDE_CODE_SESSION_ID", BENCH_SESSION);
    cmd
}

/// Runs `cmd` with `payload` on stdin (none: `/dev/null`), stdout and stderr captured, to
/// its exit: the seconds from spawn to reaped (the payload written and both outputs read
/// to their end, as a host does), and its output. Panics unless it exits 0.
fn timed(cmd: &mut Command, payload: Option<&[u8]>) -> (f64, std::process::Output) {
    cmd.stdin(if payload.is_some() { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::piped()).stderr(Stdio::piped());
    let t = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
    if let Some(bytes) = payload {
        let mut pipe = child.stdin.take().expect("a piped stdin");
        write_ignoring_closed(&mut pipe, bytes);
    }
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("waiting for {cmd:?}: {e}"));
    let secs = t.elapsed().as_secs_f64();
    assert_succeeded(cmd, &out);
    (secs, out)
}

/// Checks `abcd hook session-start`'s output: nothing on stderr (the hook fails open
/// loudly, there), and a SessionStart reply whose context holds the checklist's header and
/// `newest`, the title of the newest open item (working, so shown first).
fn check_session_start(stdout: &[u8], stderr: &[u8], newest: &str) {
    assert!(stderr.is_empty(), "abcd hook session-start warned: {}", String::from_utf8_lossy(stderr));
    let v: serde_json::Value = serde_json::from_slice(stdout)
        .unwrap_or_else(|e| panic!("abcd hook session-start printed no JSON ({e}): {}", String::from_utf8_lossy(stdout)));
    let out = &v["hookSpecificOutput"];
    assert_eq!(out["hookEventName"].as_str(), Some("SessionStart"), "answered for another event: {v}");
    let context = out["additionalContext"].as_str().unwrap_or_else(|| panic!("no additionalContext: {v}"));
    assert!(context.contains(abcd::command::hook::CONTEXT_HEADER), "the context holds the checklist header: {context}");
    assert!(context.contains(newest), "the context shows the newest open item {newest:?}: {context}");
}

/// `abcd hook session-start` in `wc`, checked: its seconds.
fn session_start(wc: &Path, home: &Path, payload: &[u8], newest: &str) -> f64 {
    let (secs, out) = timed(&mut abcd_cmd(wc, home, &["hook", "session-start"]), Some(payload));
    check_session_start(&out.stdout, &out.stderr, newest);
    secs
}

/// `abcd checklist add <title>` in `wc`, checked: its seconds.
fn checklist_add(wc: &Path, home: &Path, title: &str) -> f64 {
    let (secs, out) = timed(&mut abcd_cmd(wc, home, &["checklist", "add", title]), None);
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(id.parse::<u64>().is_ok(), "abcd checklist add prints the new id, a number: {id:?} for {title:?}");
    assert!(out.stderr.is_empty(), "abcd checklist add warned: {}", String::from_utf8_lossy(&out.stderr));
    secs
}

/// `true` with `payload` on stdin, in `wc`: its seconds.
fn trivial(wc: &Path, payload: &[u8]) -> f64 {
    let mut cmd = Command::new(true_bin());
    cmd.current_dir(wc);
    let (secs, out) = timed(&mut cmd, Some(payload));
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "`true` printed something");
    secs
}

// ----------------------------------------------------------------------------------------
// Working copies

fn actor() -> Actor {
    Actor::this_process(Some(BENCH_SESSION.into()))
}

/// Git as this bench runs it: no user or system configuration of this machine.
const GIT_ENV: [(&str, &str); 2] = [("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1")];

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").args(args).current_dir(dir).envs(GIT_ENV).output().expect("running git");
    assert!(out.status.success(), "git {args:?} in {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
}

/// A managed working copy at `wc`: a git repository with one commit (so abcd finds and
/// caches its root commit, as in any real repository, instead of asking git on every
/// hook), then `abcd init` run in it. The root commit names the copy: abcd knows a
/// repository by its root commit, and two copies made in one second would otherwise be
/// one repository to it, sharing one away record (a copy meant to be present would be
/// away).
fn managed_working_copy(wc: &Path, home: &Path) {
    std::fs::create_dir_all(wc).expect("creating a working copy");
    git(wc, &["init", "-q", "-b", "main"]);
    let message = format!("root of {}", wc.file_name().and_then(|n| n.to_str()).expect("a copy's folder name is UTF-8"));
    git(wc, &["-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "--allow-empty", "-m", &message]);
    let (_, out) = timed(&mut abcd_cmd(wc, home, &["init"]), None);
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

/// Appends through the store in batches, as the CLI does (projections refreshed,
/// checkpoints every 1,000 events); panics if the projections could not be refreshed.
fn store_append(store: &Store, scope: &Scope, events: &[NewEvent]) {
    for batch in events.chunks(BUILD_BATCH) {
        let (_, _, project_error) = store.append(batch, Some(scope)).expect("a durable store append");
        assert!(project_error.is_none(), "refreshing the projections failed: {project_error:?}");
    }
}

fn open_title(i: usize) -> String {
    format!("Open item {i:04} of the context benchmark: keep the plan moving")
}

fn closed_title(i: usize) -> String {
    format!("Closed item {i:04} of the context benchmark: done weeks ago")
}

/// Open item `i` of a plan: one in five waits on a pull request with a next look a month
/// ahead, one in four carries a promise, the rest are plain working items.
fn open_item(i: usize) -> ItemFields {
    let title = open_title(i);
    let mut item = ItemFields::working(&slug_from_title(&title), &title);
    if i % 5 == 1 {
        item.state = ItemState::Waiting;
        item.waits_on = Some(format!("pr:{}", 100 + i));
        let look =
            abcd::clock::wall_now() + jiff::SignedDuration::from_hours(24 * LOOK_AHEAD_DAYS) + jiff::SignedDuration::from_mins(i as i64);
        item.next_look = Some(look);
    }
    if i.is_multiple_of(4) {
        item.promise = Some("the tests pass => open the pull request".into());
    }
    item
}

fn added(item: ItemFields) -> NewEvent {
    NewEvent {
        kind: abcd::event::CHECKLIST_ITEM_ADDED.into(),
        actor: actor(),
        data: serde_json::to_value(ItemAdded { item }).expect("plain data serializes"),
    }
}

fn closed(id: String) -> NewEvent {
    NewEvent {
        kind: abcd::event::CHECKLIST_ITEM_CHANGED.into(),
        actor: actor(),
        data: serde_json::to_value(ItemChanged { id, changes: ChangeSet { state: Some(ItemState::Done), ..ChangeSet::default() } })
            .expect("plain data serializes"),
    }
}

/// A working copy at `wc` that added `closed` items and closed them (in batches, adds
/// then closes, as weeks of work would leave them), then added the plan's `open` items.
/// Returns its journal and the newest open item's title.
fn build_copy(wc: &Path, home: &Path, open: usize, closed_items: usize) -> (PathBuf, String) {
    managed_working_copy(wc, home);
    let (store, scope) = wc_store(wc, home);
    let mut events = Vec::with_capacity(2 * closed_items + open);
    for start in (0..closed_items).step_by(BUILD_BATCH) {
        let batch = start..(start + BUILD_BATCH).min(closed_items);
        events.extend(batch.clone().map(|i| added(ItemFields::working(&slug_from_title(&closed_title(i)), &closed_title(i)))));
        events.extend(batch.map(|i| closed(slug_from_title(&closed_title(i)))));
    }
    events.extend((0..open).map(|i| added(open_item(i))));
    assert_eq!(open_item(open - 1).state, ItemState::Working, "the newest open item is working, so it is shown first");
    store_append(&store, &scope, &events);
    let journal = wc_journal(wc);
    assert_eq!(verify_clean(&journal, home), 1 + events.len() as u64, "every built event is in the journal");
    (journal, open_title(open - 1))
}

/// The sizes of the files beside `wc`'s journal, for the notes.
fn tier_files(wc: &Path) -> String {
    let tier = wc.join(abcd::places::LOCAL_TIER);
    let mut files: Vec<(String, u64)> = std::fs::read_dir(&tier)
        .expect("reading the local tier")
        .flatten()
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            meta.is_file().then(|| (e.file_name().to_string_lossy().into_owned(), meta.len()))
        })
        .collect();
    files.sort();
    files.iter().map(|(name, len)| format!("{name} {len} B")).collect::<Vec<_>>().join(", ")
}

/// The disk's part in a session-start, on this file system: the median microseconds of an
/// `fdatasync` of a file with nothing unsynced (the pre-sync of a new process's first
/// append), and of a 300-byte append and its `fdatasync` (a durable line). Each
/// session-start pays about one of each, whatever the plan.
fn sync_costs(dir: &Path, n: usize) -> (f64, f64) {
    let path = dir.join("sync-costs");
    let mut file = std::fs::OpenOptions::new().append(true).create_new(true).open(&path).expect("creating a scratch file");
    file.write_all(&[b'x'; 300]).and_then(|()| file.sync_data()).expect("writing and syncing");
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let clean: Vec<f64> = (0..n).map(|_| time(&mut || file.sync_data().expect("fdatasync"))).collect();
    let line: Vec<f64> =
        (0..n).map(|_| time(&mut || file.write_all(&[b'x'; 300]).and_then(|()| file.sync_data()).expect("append"))).collect();
    std::fs::remove_file(&path).expect("removing the scratch file");
    (median(&clean) * 1e6, median(&line) * 1e6)
}

// ----------------------------------------------------------------------------------------
// 1. Session-start at a small and a large plan vs a trivial process

fn bench_start(cfg: &Config, dir: &Path, home: &Path) -> (Vec<Row>, String, Vec<PathBuf>) {
    let t = Instant::now();
    let small = dir.join("start-small");
    let large = dir.join("start-large");
    let (small_journal, small_newest) = build_copy(&small, home, cfg.small_open, 0);
    let (large_journal, large_newest) = build_copy(&large, home, cfg.large_open, 0);
    println!(
        "[1] built the working copies through the store in {:.1} s: {} open items ({}); {} open items ({})",
        t.elapsed().as_secs_f64(),
        cfg.small_open,
        tier_files(&small),
        cfg.large_open,
        tier_files(&large)
    );
    let (small_payload, large_payload) = (session_start_payload(&small), session_start_payload(&large));
    let mut start_small = || session_start(&small, home, &small_payload, &small_newest);
    let mut start_large = || session_start(&large, home, &large_payload, &large_newest);
    let mut floor = || trivial(&small, &small_payload);
    let mut version = || {
        let (secs, out) = timed(&mut abcd_cmd(&small, home, &["--version"]), Some(&small_payload));
        assert!(out.stdout.starts_with(b"abcd "), "abcd --version printed {}", String::from_utf8_lossy(&out.stdout));
        secs
    };
    // Untimed: one of each, to warm the binaries, the page cache and whatever the first
    // session-start writes.
    start_small();
    start_large();
    floor();
    version();
    let sync_runs = if cfg.full { 101 } else { 5 };
    let sync_before = sync_costs(dir, sync_runs);
    let (mut times, mut small_ratios, mut large_ratios, mut scale) = (vec![Vec::new(); 4], Vec::new(), Vec::new(), Vec::new());
    for round in 0..cfg.start_rounds {
        let m = rotate(round, cfg.start_ops, &mut [&mut start_small, &mut start_large, &mut floor, &mut version]);
        for (k, v) in m.iter().enumerate() {
            times[k].push(*v);
        }
        small_ratios.push(m[0] / m[2]);
        large_ratios.push(m[1] / m[2]);
        scale.push(m[1] / m[0]);
    }
    let sync_after = sync_costs(dir, sync_runs);
    let [s, l, f, v] = [0, 1, 2, 3].map(|k| median(&times[k]));
    let note = format!(
        "benchmark 1: `abcd hook session-start` at {} open items {} and at {} open items {} vs `{}` {} vs `abcd --version` {} (medians of round medians; {} rounds x {} runs each, rotating); an fdatasync with nothing unsynced took {:.0} us before the rounds and {:.0} us after, a 300-byte append and its fdatasync {:.0} us and {:.0} us; after the run: {} open items: {}; {} open items: {}",
        cfg.small_open,
        ms(s),
        cfg.large_open,
        ms(l),
        true_bin().display(),
        ms(f),
        ms(v),
        cfg.start_rounds,
        cfg.start_ops,
        sync_before.0,
        sync_after.0,
        sync_before.1,
        sync_after.1,
        cfg.small_open,
        tier_files(&small),
        cfg.large_open,
        tier_files(&large)
    );
    println!("{note}");
    let rows = vec![
        Row {
            name: format!("1a. `abcd hook session-start`, {} open items, vs a trivial process", cfg.small_open),
            contenders: format!("`abcd hook session-start` {} vs `{}` {}", ms(s), true_bin().display(), ms(f)),
            ratio_label: "abcd/true latency".into(),
            ratios: small_ratios,
            target: Target::AtMost(3.0),
        },
        Row {
            name: format!("1b. `abcd hook session-start`, {} open items, vs a trivial process", cfg.large_open),
            contenders: format!("`abcd hook session-start` {} vs `{}` {}", ms(l), true_bin().display(), ms(f)),
            ratio_label: "abcd/true latency".into(),
            ratios: large_ratios,
            target: Target::AtMost(3.0),
        },
        Row {
            name: format!("1c. `abcd hook session-start`, {} vs {} open items", cfg.large_open, cfg.small_open),
            contenders: format!("{} items {} vs {} items {} (`abcd --version` {})", cfg.large_open, ms(l), cfg.small_open, ms(s), ms(v)),
            ratio_label: "large/small latency".into(),
            ratios: scale,
            target: Target::Context,
        },
    ];
    (rows, note, vec![small_journal, large_journal])
}

// ----------------------------------------------------------------------------------------
// 2. Add and session-start after a long history vs a fresh copy with the same open items

/// One working copy of benchmark 2 during a round: what its adds and session-starts need.
struct Copy {
    wc: PathBuf,
    payload: Vec<u8>,
    adds: Cell<usize>,
    /// The title of its newest open item (working, so shown first).
    newest: RefCell<String>,
}

impl Copy {
    fn new(wc: PathBuf, newest: String) -> Copy {
        Copy { payload: session_start_payload(&wc), wc, adds: Cell::new(0), newest: RefCell::new(newest) }
    }

    fn add(&self, home: &Path, round: usize) -> f64 {
        let n = self.adds.replace(self.adds.get() + 1);
        let title = format!("Round {round} add {n}: measure checklist add after a long history");
        let secs = checklist_add(&self.wc, home, &title);
        *self.newest.borrow_mut() = title;
        secs
    }

    fn start(&self, home: &Path) -> f64 {
        session_start(&self.wc, home, &self.payload, &self.newest.borrow())
    }
}

fn bench_history(cfg: &Config, dir: &Path, home: &Path) -> (Vec<Row>, String, Vec<PathBuf>) {
    let mut times = vec![Vec::new(); 4];
    let (mut add_ratios, mut start_ratios) = (Vec::new(), Vec::new());
    let mut journals = Vec::new();
    let mut build_secs = Vec::new();
    let mut files = String::new();
    for round in 0..cfg.history_rounds {
        let t = Instant::now();
        let (old_wc, fresh_wc) = (dir.join(format!("history-old-{round:02}")), dir.join(format!("history-fresh-{round:02}")));
        let (old_journal, old_newest) = build_copy(&old_wc, home, cfg.small_open, cfg.closed);
        let (fresh_journal, fresh_newest) = build_copy(&fresh_wc, home, cfg.small_open, 0);
        build_secs.push(t.elapsed().as_secs_f64());
        let (old, fresh) = (Copy::new(old_wc, old_newest), Copy::new(fresh_wc, fresh_newest));
        // Untimed: one add and one session-start in each copy (the add leaves last-good as
        // the CLI does; both warm the page cache).
        for copy in [&old, &fresh] {
            copy.add(home, round);
            copy.start(home);
        }
        let m = rotate(
            round,
            cfg.history_ops,
            &mut [&mut || old.add(home, round), &mut || fresh.add(home, round), &mut || old.start(home), &mut || fresh.start(home)],
        );
        for (k, v) in m.iter().enumerate() {
            times[k].push(*v);
        }
        add_ratios.push(m[0] / m[1]);
        start_ratios.push(m[2] / m[3]);
        if round == 0 {
            files = format!("after {} closed: {}; fresh: {}", cfg.closed, tier_files(&old.wc), tier_files(&fresh.wc));
        }
        journals.extend([old_journal, fresh_journal]);
    }
    let [ao, af, so, sf] = [0, 1, 2, 3].map(|k| median(&times[k]));
    let note = format!(
        "benchmark 2: in a working copy that added {} items and closed {} of them vs a fresh one with the same {} open items: `abcd checklist add` {} vs {}, `abcd hook session-start` {} vs {} (medians of round medians; {} rounds x {} runs each, rotating, on copies built anew each round through the store in {:.1} s median); the files after round 0: {files}",
        cfg.closed + cfg.small_open,
        cfg.closed,
        cfg.small_open,
        ms(ao),
        ms(af),
        ms(so),
        ms(sf),
        cfg.history_rounds,
        cfg.history_ops,
        median(&build_secs),
    );
    println!("{note}");
    let rows = vec![
        Row {
            name: format!("2a. `abcd checklist add` after {} closed items vs a fresh copy, {} open each", cfg.closed, cfg.small_open),
            contenders: format!("after {} closed {} vs fresh {}", cfg.closed, ms(ao), ms(af)),
            ratio_label: "old/fresh latency".into(),
            ratios: add_ratios,
            target: Target::AtMost(1.3),
        },
        Row {
            name: format!("2b. `abcd hook session-start` after {} closed items vs a fresh copy, {} open each", cfg.closed, cfg.small_open),
            contenders: format!("after {} closed {} vs fresh {}", cfg.closed, ms(so), ms(sf)),
            ratio_label: "old/fresh latency".into(),
            ratios: start_ratios,
            target: Target::AtMost(1.3),
        },
    ];
    (rows, note, journals)
}

// ----------------------------------------------------------------------------------------
// 3. Every hook: a small plan while away and a large plan present vs a trivial process, and
//    after a long history vs a fresh copy

/// The hooks the host runs, by `abcd hook` name.
const HOOKS: [&str; 4] = ["session-start", "user-prompt-submit", "pre-tool-use", "stop"];

/// How much slower than a trivial process each hook may be (SPEC §10): the guard on
/// every tool call gets the tightest bound.
fn hook_target(hook: &str) -> f64 {
    if hook == "pre-tool-use" { 2.0 } else { 3.0 }
}

/// The payload the host sends `hook` for a session in `wc` (the session id of
/// [`session_start_payload`], so every hook of a copy speaks for one session).
fn hook_payload(hook: &str, wc: &Path) -> Vec<u8> {
    let start: serde_json::Value = serde_json::from_slice(&session_start_payload(wc)).expect("the start payload is JSON");
    let (session, cwd) = (&start["session_id"], &start["cwd"]);
    let payload = match hook {
        "session-start" => return session_start_payload(wc),
        "user-prompt-submit" => {
            serde_json::json!({"session_id": session, "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": "keep going"})
        }
        "pre-tool-use" => serde_json::json!({"session_id": session, "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "cargo test --release"}}),
        "stop" => serde_json::json!({"session_id": session, "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": "Done for now.", "background_tasks": [], "session_crons": []}),
        other => panic!("no payload for the hook {other:?}"),
    };
    serde_json::to_vec(&payload).expect("plain data serializes")
}

/// This process's PATH without any folder that holds a `gh`: the hooks see no forge, so
/// the forge state is the same in every run (none is on this machine as written).
fn path_without_gh() -> (std::ffi::OsString, Vec<PathBuf>) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let (kept, dropped): (Vec<PathBuf>, Vec<PathBuf>) = std::env::split_paths(&path).partition(|d| !d.join("gh").exists());
    (std::env::join_paths(kept).expect("PATH folders rejoin"), dropped)
}

/// One working copy of benchmark 3 and the payload of each of [`HOOKS`].
struct HookCopy {
    wc: PathBuf,
    payloads: Vec<Vec<u8>>,
    newest: String,
}

impl HookCopy {
    fn new(wc: PathBuf, newest: String) -> HookCopy {
        HookCopy { payloads: HOOKS.iter().map(|h| hook_payload(h, &wc)).collect(), wc, newest }
    }

    /// `abcd hook HOOKS[k]` in this copy, checked: its seconds. Every hook exits 0 with
    /// nothing on stderr (a warning there is abcd failing open); session-start shows the
    /// plan, and every reply is empty or one JSON value.
    fn run(&self, home: &Path, path: &std::ffi::OsStr, k: usize) -> f64 {
        self.call(installed(), home, path, k).0
    }

    /// [`HookCopy::run`] through `exe`, with the hook's reply.
    fn call(&self, exe: &Path, home: &Path, path: &std::ffi::OsStr, k: usize) -> (f64, Vec<u8>) {
        let mut cmd = abcd_cmd_of(exe, &self.wc, home, &["hook", HOOKS[k]]);
        cmd.env("PATH", path);
        let (secs, out) = timed(&mut cmd, Some(&self.payloads[k]));
        if HOOKS[k] == "session-start" {
            check_session_start(&out.stdout, &out.stderr, &self.newest);
        } else {
            assert!(out.stderr.is_empty(), "abcd hook {} warned: {}", HOOKS[k], String::from_utf8_lossy(&out.stderr));
            let reply = String::from_utf8_lossy(&out.stdout);
            assert!(
                reply.trim().is_empty() || serde_json::from_str::<serde_json::Value>(&reply).is_ok(),
                "abcd hook {} replied with something other than JSON: {reply}",
                HOOKS[k]
            );
        }
        (secs, out.stdout)
    }
}

fn bench_hooks(cfg: &Config, dir: &Path, home: &Path) -> (Vec<Row>, String, Vec<PathBuf>) {
    let t = Instant::now();
    let (path, dropped) = path_without_gh();
    let build = |name: &str, open: usize, closed_items: usize| {
        let wc = dir.join(name);
        let (journal, newest) = build_copy(&wc, home, open, closed_items);
        (HookCopy::new(wc, newest), journal)
    };
    let (away, away_journal) = build("hooks-away", cfg.small_open, 0);
    let (_, out) = timed(&mut abcd_cmd(&away.wc, home, &["mode", "autonomous", "--until", "+8h"]), None);
    assert!(out.stderr.is_empty(), "abcd mode autonomous warned: {}", String::from_utf8_lossy(&out.stderr));
    let (large, large_journal) = build("hooks-large", cfg.large_open, 0);
    let (old, old_journal) = build("hooks-old", cfg.small_open, cfg.closed);
    let (fresh, fresh_journal) = build("hooks-fresh", cfg.small_open, 0);
    // The cold cost: copies of their own, so a commit made for a cold run never makes a
    // warm run of another contender the first hook after it.
    let (away_cold, _) = build("hooks-away-cold", cfg.small_open, 0);
    let (_, out) = timed(&mut abcd_cmd(&away_cold.wc, home, &["mode", "autonomous", "--until", "+8h"]), None);
    assert!(out.stderr.is_empty(), "abcd mode autonomous warned: {}", String::from_utf8_lossy(&out.stderr));
    let (large_cold, _) = build("hooks-large-cold", cfg.large_open, 0);
    println!("[3] built the four working copies through the store in {:.1} s", t.elapsed().as_secs_f64());
    let floor_payload = hook_payload("stop", &away.wc);
    // Contenders: each hook in each copy, then the floor.
    let copies = [&away, &large, &old, &fresh];
    let floor_k = copies.len() * HOOKS.len();
    let run = |c: usize, k: usize| copies[c].run(home, &path, k);
    // Untimed: each contender once, to warm the binaries, the page cache and whatever a
    // hook's first run writes.
    for c in 0..copies.len() {
        for k in 0..HOOKS.len() {
            run(c, k);
        }
    }
    for copy in [&away_cold, &large_cold] {
        for k in 0..HOOKS.len() {
            copy.run(home, &path, k);
        }
    }
    trivial(&away.wc, &floor_payload);
    // The away copy is away: its Stop is held back with the host's Stop feedback.
    let stop_k = HOOKS.iter().position(|h| *h == "stop").expect("stop is a hook");
    let (_, reply) = away.call(installed(), home, &path, stop_k);
    let reply: serde_json::Value = serde_json::from_slice(&reply).expect("an away Stop replies");
    assert_eq!(reply["hookSpecificOutput"]["hookEventName"], "Stop", "the away copy's Stop is not held back: {reply}");
    // The other copies are present: their Stop is allowed, naming the work owed.
    for copy in [&large, &old, &fresh] {
        let (_, reply) = copy.call(installed(), home, &path, stop_k);
        let reply: serde_json::Value = serde_json::from_slice(&reply).expect("a Stop with work owed replies");
        assert!(reply["hookSpecificOutput"].is_null(), "{} is away, not present: {reply}", copy.wc.display());
    }
    let mut closures: Vec<Box<dyn FnMut() -> f64 + '_>> = Vec::new();
    for c in 0..copies.len() {
        for k in 0..HOOKS.len() {
            closures.push(Box::new(move || run(c, k)));
        }
    }
    closures.push(Box::new(|| trivial(&away.wc, &floor_payload)));
    // Each cold run first commits (untimed): the hook is the first after a commit, and
    // git's kept answers no longer hold.
    let cold = [(&away_cold, "user-prompt-submit"), (&away_cold, "stop"), (&large_cold, "user-prompt-submit"), (&large_cold, "stop")];
    for (copy, hook) in cold {
        let k = HOOKS.iter().position(|h| *h == hook).expect("a hook of the bench");
        let path = &path;
        closures.push(Box::new(move || {
            git(
                &copy.wc,
                &["-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "--allow-empty", "-m", "cold"],
            );
            copy.run(home, path, k)
        }));
    }
    // Context: the away and the large copy's hooks through the file the linker wrote, each
    // run once untimed first, as every contender above was.
    let as_built = [&away, &large];
    for copy in as_built {
        for k in 0..HOOKS.len() {
            copy.call(abcd_bin(), home, &path, k);
            let path = &path;
            closures.push(Box::new(move || copy.call(abcd_bin(), home, path, k).0));
        }
    }
    let built_k = floor_k + 1 + cold.len();
    let mut times = vec![Vec::new(); built_k + as_built.len() * HOOKS.len()];
    let mut built_ratios = vec![Vec::new(); as_built.len() * HOOKS.len()];
    let mut cold_ratios = vec![Vec::new(); cold.len()];
    let mut ratios = vec![vec![Vec::new(); HOOKS.len()]; 3];
    for round in 0..cfg.hook_rounds {
        let mut contenders: Vec<&mut dyn FnMut() -> f64> = closures.iter_mut().map(|b| &mut **b as &mut dyn FnMut() -> f64).collect();
        let m = shuffled(round, cfg.hook_ops, &mut contenders);
        for (k, v) in m.iter().enumerate() {
            times[k].push(*v);
        }
        for k in 0..HOOKS.len() {
            ratios[0][k].push(m[k] / m[floor_k]);
            ratios[1][k].push(m[HOOKS.len() + k] / m[floor_k]);
            ratios[2][k].push(m[2 * HOOKS.len() + k] / m[3 * HOOKS.len() + k]);
        }
        for (c, r) in cold_ratios.iter_mut().enumerate() {
            r.push(m[floor_k + 1 + c] / m[floor_k]);
        }
        for (c, r) in built_ratios.iter_mut().enumerate() {
            r.push(m[built_k + c] / m[floor_k]);
        }
    }
    let med: Vec<f64> = times.iter().map(|t| median(t)).collect();
    let floor = med[floor_k];
    let per_hook = |c: usize| HOOKS.iter().enumerate().map(|(k, h)| format!("{h} {}", ms(med[c * HOOKS.len() + k]))).collect::<Vec<_>>();
    let note = format!(
        "benchmark 3: every hook, medians of round medians ({} rounds x {} runs each, in a shuffled order over all {} contenders): away at {} open items: {}; present at {} open items: {}; after {} closed: {}; fresh with {} open: {}; `{}` {}; folders left off the hooks' PATH for holding a `gh`: {}",
        cfg.hook_rounds,
        cfg.hook_ops,
        built_k + built_ratios.len(),
        cfg.small_open,
        per_hook(0).join(", "),
        cfg.large_open,
        per_hook(1).join(", "),
        cfg.closed,
        per_hook(2).join(", "),
        cfg.small_open,
        per_hook(3).join(", "),
        true_bin().display(),
        ms(floor),
        if dropped.is_empty() {
            "none".to_string()
        } else {
            dropped.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        },
    );
    println!("{note}");
    let letters = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x"];
    let mut rows = Vec::new();
    for (k, hook) in HOOKS.iter().enumerate() {
        let (hook_away, hook_large) = (med[k], med[HOOKS.len() + k]);
        rows.push(Row {
            name: format!("3{}. `abcd hook {hook}`, {} open items, away, vs a trivial process", letters[k], cfg.small_open),
            contenders: format!("`abcd hook {hook}` {} vs `{}` {}", ms(hook_away), true_bin().display(), ms(floor)),
            ratio_label: "abcd/true latency".into(),
            ratios: ratios[0][k].clone(),
            target: Target::AtMost(hook_target(hook)),
        });
        rows.push(Row {
            name: format!(
                "3{}. `abcd hook {hook}`, {} open items, present, vs a trivial process",
                letters[HOOKS.len() + k],
                cfg.large_open
            ),
            contenders: format!("`abcd hook {hook}` {} vs `{}` {}", ms(hook_large), true_bin().display(), ms(floor)),
            ratio_label: "abcd/true latency".into(),
            ratios: ratios[1][k].clone(),
            target: Target::AtMost(hook_target(hook)),
        });
    }
    for (k, hook) in HOOKS.iter().enumerate() {
        let (o, f) = (med[2 * HOOKS.len() + k], med[3 * HOOKS.len() + k]);
        rows.push(Row {
            name: format!(
                "3{}. `abcd hook {hook}` after {} closed items vs a fresh copy, {} open each",
                letters[2 * HOOKS.len() + k],
                cfg.closed,
                cfg.small_open
            ),
            contenders: format!("after {} closed {} vs fresh {}", cfg.closed, ms(o), ms(f)),
            ratio_label: "old/fresh latency".into(),
            ratios: ratios[2][k].clone(),
            target: Target::AtMost(1.3),
        });
    }
    for (c, (copy, hook)) in cold.iter().enumerate() {
        let (where_, open) = if std::ptr::eq(*copy, &away_cold) { ("away", cfg.small_open) } else { ("present", cfg.large_open) };
        rows.push(Row {
            name: format!(
                "3{}. `abcd hook {hook}`, {open} open items, {where_}, the first after a commit, vs a trivial process",
                letters[3 * HOOKS.len() + c]
            ),
            contenders: format!("`abcd hook {hook}` cold {} vs `{}` {}", ms(med[floor_k + 1 + c]), true_bin().display(), ms(floor)),
            ratio_label: "abcd/true latency".into(),
            ratios: cold_ratios[c].clone(),
            target: Target::Context,
        });
    }
    for (c, (where_, open)) in [("away", cfg.small_open), ("present", cfg.large_open)].into_iter().enumerate() {
        for (k, hook) in HOOKS.iter().enumerate() {
            let b = c * HOOKS.len() + k;
            rows.push(Row {
                name: format!(
                    "3{}. `abcd hook {hook}`, {open} open items, {where_}, the binary as the linker wrote it, vs a trivial process",
                    letters[4 * HOOKS.len() + b]
                ),
                contenders: format!("`abcd hook {hook}` as built {} vs `{}` {}", ms(med[built_k + b]), true_bin().display(), ms(floor)),
                ratio_label: "abcd/true latency".into(),
                ratios: built_ratios[b].clone(),
                target: Target::Context,
            });
        }
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    (rows, note, vec![away_journal, large_journal, old_journal, fresh_journal])
}
