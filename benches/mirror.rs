//! Mirror benchmarks (issue 22): what `abcd mirror push` and `abcd mirror fetch` cost as a
//! journal grows and as working copies multiply, and how much memory they take. The
//! machines this runs on are small, shared and noisy, so every benchmark runs its
//! contenders side by side, interleaved (the order rotating every round), in one run, and
//! reports the median of per-round RATIOS, each contender's median printed beside its
//! floor's; absolute times are context only.
//!
//! Every "machine" is a git clone with a home store of its own (`ABCD_HOME`) and its own
//! `ABCD_MACHINE`; every remote is a bare repository on local disk. No global or system git
//! config reaches any git, abcd's children included, and automatic gc and maintenance are
//! off in every repository, so no run pays for a repack that another did not.
//!
//! 1. `abcd mirror push` of 1 new event in a working copy whose journal holds 100,000
//!    events vs one whose journal holds 1,000 (each its own clone, home store and remote),
//!    both mirrored before the rounds (1a). The large size is moved up to the next one whose
//!    last segment holds as many lines as the small one's (100,328), since every push
//!    rewrites the last segment. The floor is a plain `git push` of one new small commit
//!    to the large journal's remote (1b). Each push follows one event appended,
//!    untimed, through the store, as a verb appends it. `abcd mirror fetch` of that 1 new
//!    event by a second machine of each repository, which fetched and verified the whole
//!    mirror before the rounds (1c); `abcd --version` for context (abcd's own start).
//! 2. `abcd mirror fetch` of 50 mirrored working copies, 1 new event each, vs a plain
//!    `git fetch` of the same refs (the same refspecs, into a throwaway namespace, with the
//!    flags `abcd mirror fetch` gives its own) by a clone without abcd. The 50 are the main
//!    worktree and 49 linked worktrees (`git worktree add`) of one clone, each with a
//!    journal of its own, all pushed by one `abcd mirror push` per round.
//! 3. Peak memory, the max RSS that `wait4` reports in a small spawner process (the larger
//!    of abcd and every git child it reaped), at 100,000 vs 1,000 events: of benchmark 1's
//!    pushes and fetches of 1 new event (3a, 3b), and of a first push of the whole journal
//!    to an empty remote and a first fetch of it by a new clone (3c, 3d), and abcd's own
//!    peak in those (3e, 3f: its `VmHWM`, read every 2 ms while it runs).
//!
//! 4. `abcd mirror status` of another machine's verified mirror of 65,536 events held in
//!    65,536 one-line segments (MIRROR.md's most segments; anyone who can push may write
//!    it so) vs the same 65,536 events in 1,024 segments of 64 lines: the same lines and
//!    bytes, 64 times the segments. Each mirror is written by hand in its own remote (git
//!    plumbing, as a pusher could) and fetched and verified once before the rounds, then
//!    shown by one untimed status (which folds the whole mirror and keeps the state; its
//!    time is printed); the rounds time the status run again, as a person runs it between
//!    fetches.
//!
//! `cargo bench --bench mirror` runs the full sizes. Run without `--bench` (as `cargo test
//! --all-targets` does) it runs a smoke mode with tiny sizes, so CI exercises every path.
//! `ABCD_BENCH_EVENTS` overrides the large journal's size in both modes;
//! `ABCD_BENCH_ONLY=2` runs only the benchmarks named (1 gives rows 1a–1c, 3a and 3b; 3
//! gives 3c and 3d and builds 1's working copies without timing their rounds);
//! `ABCD_BENCH_KEEP=1` keeps the temp dir, with the clones, remotes and home stores, for
//! profiling by hand.

mod common;

use common::{
    ChildRun, Row, Target, abcd_bin, assert_succeeded, is_spawner, median, ms, rotate, run_child_polled, run_child_with_stdin, spawner,
    verify_clean,
};
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use abcd::checklist::item::slug_from_title;
use abcd::event::Scope;
use abcd::journal::Journal;
use abcd::journal::anchor::AnchorStore;
use abcd::journal::format::{Actor, NewEvent};
use abcd::journal::storage::RealDisk;
use abcd::store::Store;

const EVENTS_ENV: &str = "ABCD_BENCH_EVENTS";
const ONLY_ENV: &str = "ABCD_BENCH_ONLY";
/// Set (to anything) to keep the temp dir and everything built in it, for profiling.
const KEEP_ENV: &str = "ABCD_BENCH_KEEP";
/// The host session id every event's actor carries.
const BENCH_SESSION: &str = "bench-session-0123456789abcdef";
/// No global or system git config reaches any git the bench or abcd runs.
const GIT_ENV: [(&str, &str); 2] = [("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1")];
/// The remote every clone mirrors to and fetches from (the verbs' default).
const REMOTE: &str = "origin";
/// Where the plain `git fetch` of benchmark 2 puts the mirror refs: a namespace nothing
/// reads.
const FLOOR_NAMESPACE: &str = "refs/bench-fetch";
/// Items each journal holds; the rest of its events change them round robin.
const ITEMS: u64 = 50;
/// Events per `Store::append` batch when building a journal (an event line is under 500
/// bytes, so a batch stays under the journal's batch byte cap).
const BUILD_BATCH: u64 = 500;

/// Sizes and rounds of one run.
struct Config {
    full: bool,
    only: Option<Vec<u32>>,
    /// Benchmark 1: the large and the small journal's events; rounds, and runs of each
    /// contender per round.
    large: u64,
    small: u64,
    push_rounds: usize,
    push_ops: usize,
    /// Benchmark 2: working copies, the events each journal holds before the rounds, and
    /// rounds (each one push, then one fetch of each contender).
    copies: usize,
    copy_events: u64,
    fetch_rounds: usize,
    /// Benchmark 3: first pushes and fetches at each size besides the ones that set up
    /// benchmark 1 (each to a new empty remote, fetched by a new clone).
    fresh_runs: usize,
    /// Benchmark 4: the events of both mirrors, the segments of the fewer-segment one, and
    /// rounds (one status of each per round).
    status_events: usize,
    status_few_segments: usize,
    status_rounds: usize,
}

/// `large` moved up to the next size whose last mirror segment holds as many lines as
/// `small`'s: a push rewrites the last segment (up to `SEGMENT_MAX_LINES` lines), so the two
/// journals then differ in their length alone. Benchmark 1's lines (under 500 bytes) hit the
/// segment's line limit long before its byte limit.
fn segment_aligned(large: u64, small: u64) -> u64 {
    let lines = abcd::mirror::SEGMENT_MAX_LINES as u64;
    large + (small % lines + lines - large % lines) % lines
}

impl Config {
    fn from_env() -> Config {
        let full = std::env::args().any(|a| a == "--bench");
        let only = std::env::var(ONLY_ENV)
            .ok()
            .map(|v| v.split(',').map(|n| n.trim().parse().unwrap_or_else(|_| panic!("{ONLY_ENV}={v:?}: expected e.g. 1,3"))).collect());
        let small = if full { 1_000 } else { 100 };
        let large = match std::env::var(EVENTS_ENV) {
            Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{EVENTS_ENV}={v:?} is not a number of events")),
            Err(_) if full => 100_000,
            // Past two segments of 1,024 lines, so the smoke run mirrors a full segment.
            Err(_) => 2_100,
        };
        assert!(large > small, "{EVENTS_ENV} must be more than {small}");
        let large = segment_aligned(large, small);
        if full {
            Config {
                full,
                only,
                large,
                small,
                push_rounds: 21,
                push_ops: 3,
                copies: 50,
                copy_events: 100,
                fetch_rounds: 21,
                fresh_runs: 2,
                status_events: abcd::mirror::MIRROR_MAX_SEGMENTS,
                status_few_segments: 1024,
                status_rounds: 11,
            }
        } else {
            Config {
                full,
                only,
                large,
                small,
                push_rounds: 1,
                push_ops: 2,
                copies: 3,
                copy_events: ITEMS + 5,
                fetch_rounds: 1,
                fresh_runs: 1,
                status_events: 1024,
                status_few_segments: 16,
                status_rounds: 1,
            }
        }
    }

    fn runs(&self, bench: u32) -> bool {
        self.only.as_ref().is_none_or(|o| o.contains(&bench))
    }
}

fn main() {
    if is_spawner() {
        spawner();
        return;
    }
    let cfg = Config::from_env();
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&base).expect("creating the crate's target/tmp");
    let tmp = tempfile::Builder::new().prefix("abcd-bench-mirror-").tempdir_in(&base).expect("creating a temp dir");
    let dir = tmp.path().canonicalize().expect("canonical temp dir");

    println!(
        "abcd mirror benchmarks: {}",
        if cfg.full { "full run (cargo bench)" } else { "SMOKE mode (tiny sizes; numbers not meaningful)" }
    );
    println!("  temp dir:   {} (under the crate's target/tmp)", dir.display());
    println!("  cpus:       {}", std::thread::available_parallelism().map_or(0, |n| n.get()));
    println!("  abcd:       {}", env!("CARGO_BIN_EXE_abcd"));
    println!("  git:        {}", git(&dir, &["--version"]));
    println!(
        "  sizes:      {} vs {} events (benchmarks 1 and 3); {} working copies of {} events each, 1 new event each per round (benchmark 2)",
        cfg.large, cfg.small, cfg.copies, cfg.copy_events
    );
    println!();

    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut checks: Vec<(PathBuf, PathBuf)> = Vec::new();
    if cfg.runs(1) || cfg.runs(3) {
        let t = Instant::now();
        let large = Mirrored::build(&dir, "large", cfg.large);
        let small = Mirrored::build(&dir, "small", cfg.small);
        println!(
            "[1] built, mirrored and fetched the two working copies in {:.1} s: {} events ({:.1} MiB of journal; first push {}, first fetch {}) and {} events ({:.1} MiB; first push {}, first fetch {})",
            t.elapsed().as_secs_f64(),
            cfg.large,
            mib(large.journal_bytes()),
            ms(large.first.borrow()[0].0.wall.as_secs_f64()),
            ms(large.first.borrow()[0].1.wall.as_secs_f64()),
            cfg.small,
            mib(small.journal_bytes()),
            ms(small.first.borrow()[0].0.wall.as_secs_f64()),
            ms(small.first.borrow()[0].1.wall.as_secs_f64()),
        );
        if cfg.runs(1) {
            let (r, note) = bench_push(&cfg, &large, &small);
            rows.extend(r);
            notes.push(note);
        }
        if cfg.runs(3) {
            let (r, note) = bench_first(&cfg, &dir, &large, &small);
            rows.extend(r);
            notes.push(note);
        }
        for m in [&large, &small] {
            checks.push((wc_journal(&m.pusher), m.push_machine.home.clone()));
        }
    }
    if cfg.runs(2) {
        let (r, note, journals) = bench_fetch(&cfg, &dir);
        rows.extend(r);
        notes.push(note);
        checks.extend(journals);
    }
    if cfg.runs(4) {
        let (r, note) = bench_status(&cfg, &dir);
        rows.extend(r);
        notes.push(note);
    }
    // Everything appended above must have left valid journals behind.
    for (path, home) in &checks {
        verify_clean(path, home);
    }

    rows.sort_by(|a, b| a.name.cmp(&b.name));
    common::print_report(&rows, cfg.full, &notes);
    if std::env::var_os(KEEP_ENV).is_some() {
        println!("kept the temp dir {} ({KEEP_ENV} is set): remove it by hand", tmp.keep().display());
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1048576.0
}

fn rss(kib: f64) -> String {
    format!("{:.1} MiB", kib / 1024.0)
}

// ----------------------------------------------------------------------------------------
// Machines, repositories and processes

/// One machine: its name and its home store.
struct Machine {
    name: String,
    home: PathBuf,
}

impl Machine {
    fn new(dir: &Path, name: &str) -> Machine {
        let home = dir.join(format!("{name}-home"));
        std::fs::create_dir(&home).expect("creating a home store");
        Machine { name: name.to_string(), home }
    }

    /// What every process this machine runs gets.
    fn env(&self) -> Vec<(&str, &Path)> {
        let mut env = vec![
            ("ABCD_HOME", self.home.as_path()),
            ("ABCD_MACHINE", Path::new(&self.name)),
            ("CLAUDE_CODE_SESSION_ID", Path::new(BENCH_SESSION)),
        ];
        env.extend(GIT_ENV.iter().map(|(k, v)| (*k, Path::new(*v))));
        env
    }

    /// `abcd <args>` in `root`, through the spawner: wall time, peak RSS, stdout. Panics
    /// unless it exits 0.
    fn abcd(&self, root: &Path, args: &[&str]) -> ChildRun {
        run_child_with_stdin(Some(root), abcd_bin(), args, &self.env(), None)
    }

    /// `abcd <args>` in `root`, through the polling spawner: its own peak too (for memory,
    /// not timing).
    fn abcd_polled(&self, root: &Path, args: &[&str]) -> ChildRun {
        run_child_polled(Some(root), abcd_bin(), args, &self.env())
    }

    /// `git <args>` in `root`, through the spawner, as this machine runs it.
    fn git(&self, root: &Path, args: &[&str]) -> ChildRun {
        run_child_with_stdin(Some(root), Path::new("git"), args, &self.env(), None)
    }

    /// `abcd mirror push --json` in `root`, and what it printed.
    fn push(&self, root: &Path) -> (ChildRun, serde_json::Value) {
        let run = self.abcd(root, &["mirror", "push", "--json"]);
        let v = parse(&run.stdout, "abcd mirror push --json");
        (run, v)
    }

    /// `abcd mirror fetch --json` in `root`, and what it printed.
    fn fetch(&self, root: &Path) -> (ChildRun, serde_json::Value) {
        let run = self.abcd(root, &["mirror", "fetch", "--json"]);
        let v = parse(&run.stdout, "abcd mirror fetch --json");
        (run, v)
    }
}

fn parse(stdout: &str, what: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{what} printed no JSON ({e}): {stdout}"))
}

/// `git <args>` in `dir` (untimed), without global or system config; its stdout, trimmed.
/// Panics unless it exits 0.
fn git(dir: &Path, args: &[&str]) -> String {
    git_stdin(dir, args, None)
}

/// `git`, with `input` on its stdin when given.
fn git_stdin(dir: &Path, args: &[&str], input: Option<&[u8]>) -> String {
    let mut cmd = Command::new("git");
    cmd.args(args).current_dir(dir).envs(GIT_ENV).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("running git {args:?}: {e}"));
    if let Some(bytes) = input {
        child.stdin.take().expect("a piped stdin").write_all(bytes).expect("writing git's stdin");
    }
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("running git {args:?}: {e}"));
    assert_succeeded(&cmd, &out);
    String::from_utf8(out.stdout).expect("UTF-8 from git").trim().to_string()
}

fn utf8(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// A bare repository at `path`, for a remote, with automatic gc off.
fn bare_remote(path: &Path) {
    git(path.parent().expect("a parent"), &["init", "-q", "--bare", "-b", "main", utf8(path)]);
    git(path, &["config", "gc.auto", "0"]);
    git(path, &["config", "receive.autogc", "false"]);
}

/// A clone's own settings: an identity for its commits, no automatic gc or maintenance.
fn clone_config(root: &Path) {
    for (k, v) in [("user.name", "Bench Person"), ("user.email", "bench@example.invalid"), ("gc.auto", "0"), ("maintenance.auto", "false")]
    {
        git(root, &["config", k, v]);
    }
}

/// The first clone of the repository `name`: `git init`, one commit pushed to a new bare
/// `remote` as `origin`'s `main`, then `abcd init` on machine `m`.
fn first_clone(root: &Path, remote: &Path, m: &Machine, name: &str) {
    bare_remote(remote);
    git(root.parent().expect("a parent"), &["init", "-q", "-b", "main", utf8(root)]);
    clone_config(root);
    git(root, &["remote", "add", REMOTE, utf8(remote)]);
    std::fs::write(root.join("README"), format!("{name}\n")).expect("writing README");
    git(root, &["add", "README"]);
    git(root, &["commit", "-q", "-m", "README"]);
    git(root, &["push", "-q", "-u", REMOTE, "main"]);
    abcd_init(root, m);
}

/// Another machine's clone of `remote` at `root`, managed by abcd on `m` when given.
fn clone_of(remote: &Path, root: &Path, m: Option<&Machine>) {
    git(root.parent().expect("a parent"), &["clone", "-q", utf8(remote), utf8(root)]);
    clone_config(root);
    if let Some(m) = m {
        abcd_init(root, m);
    }
}

fn abcd_init(root: &Path, m: &Machine) {
    let out = m.abcd(root, &["init"]);
    assert!(out.stdout.contains("abcd now manages"), "abcd init did not take {}: {}", root.display(), out.stdout);
}

// ----------------------------------------------------------------------------------------
// Journals

fn actor() -> Actor {
    Actor::this_process(Some(BENCH_SESSION.into()))
}

/// The working copy's journal, as `abcd` finds it.
fn wc_journal(root: &Path) -> PathBuf {
    root.join(abcd::places::LOCAL_TIER).join(abcd::places::JOURNAL_FILE)
}

/// The journal id its genesis line names.
fn journal_id(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let first = text.lines().next().expect("a journal has its genesis");
    let v: serde_json::Value = serde_json::from_str(first).expect("the genesis is JSON");
    v["data"]["journal_id"].as_str().expect("the genesis names the journal id").to_string()
}

fn list_title(i: u64) -> String {
    format!("Checklist item {i:02} of the mirror benchmark")
}

fn item_added(i: u64) -> NewEvent {
    common::item_added_event(&list_title(i), actor())
}

/// The `rev`th change of item `i`.
fn item_changed(i: u64, rev: u64) -> NewEvent {
    common::item_changed_event(slug_from_title(&list_title(i)), i, rev, "mirror", actor())
}

/// A working copy's journal written through the store, as the CLI writes it (projections
/// refreshed, checkpoints every 1,000 events), and the seq of its last event.
struct Filled {
    root: PathBuf,
    store: Store,
    scope: Scope,
    head: Cell<u64>,
    changes: Cell<u64>,
}

impl Filled {
    /// The journal of the working copy at `root` (the main worktree or a linked one) on
    /// machine `m`, filled to `events` events: `ITEMS` items added, then changed round
    /// robin, in batches.
    fn fill(root: &Path, m: &Machine, events: u64) -> Filled {
        let (paths, scope) = abcd::places::working_copy_journal(root).expect("a managed working copy");
        assert_eq!(paths.journal, wc_journal(root));
        let store = Store::new(Journal::new(RealDisk::shared(), paths, Some(AnchorStore::new(&m.home))));
        let f = Filled { root: root.to_path_buf(), store, scope, head: Cell::new(0), changes: Cell::new(0) };
        f.append(&(0..ITEMS).map(item_added).collect::<Vec<_>>());
        while f.head.get() + 1 < events {
            let n = BUILD_BATCH.min(events - f.head.get() - 1);
            let batch: Vec<NewEvent> = (0..n).map(|_| f.next_change()).collect();
            f.append(&batch);
        }
        assert_eq!(f.head.get() + 1, events.max(ITEMS + 1), "the journal holds the events asked for");
        f
    }

    fn next_change(&self) -> NewEvent {
        let c = self.changes.get() + 1;
        self.changes.set(c);
        item_changed(c % ITEMS, c / ITEMS)
    }

    fn append(&self, events: &[NewEvent]) {
        let (appended, _, project_error) = self.store.append(events, Some(&self.scope)).expect("a durable store append");
        assert!(project_error.is_none(), "refreshing the projections failed: {project_error:?}");
        self.head.set(appended.last().expect("a batch is never empty").seq);
    }

    /// One new event, as a verb appends it.
    fn append_one(&self) {
        self.append(&[self.next_change()]);
    }

    fn journal_id(&self) -> String {
        journal_id(&wc_journal(&self.root))
    }
}

/// The entry for journal `id` in a verb's `--json` output; panics when absent.
fn entry<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["journals"]
        .as_array()
        .unwrap_or_else(|| panic!("no journals in {v}"))
        .iter()
        .find(|j| j["journal_id"] == id)
        .unwrap_or_else(|| panic!("journal {id} is not in {v}"))
}

/// A push's output: every journal of `expect` (id, head seq, new events) pushed with those
/// numbers, every other journal up to date, every saved ref pushed.
fn check_push(v: &serde_json::Value, expect: &[(String, u64, u64)]) {
    check_push_others(v, expect, "up_to_date");
}

/// `check_push`, with every other journal's outcome `others`.
fn check_push_others(v: &serde_json::Value, expect: &[(String, u64, u64)], others: &str) {
    for (id, head, new) in expect {
        let j = entry(v, id);
        assert_eq!(
            (j["outcome"].as_str(), j["head_seq"].as_u64(), j["new_events"].as_u64()),
            (Some("pushed"), Some(*head), Some(*new)),
            "journal {id}: pushed through seq {head} with {new} new events: {v}"
        );
    }
    let journals = v["journals"].as_array().expect("journals");
    for j in journals.iter().filter(|j| !expect.iter().any(|(id, _, _)| j["journal_id"] == id.as_str())) {
        assert_eq!(j["outcome"], others, "every other journal: {others}: {v}");
    }
    for s in v["saved"].as_array().map_or(&[][..], Vec::as_slice) {
        assert_eq!(s["outcome"], "pushed", "every saved ref is pushed: {v}");
    }
}

/// A fetch's output: every journal of `expect` (id, head seq) verified at that seq, every
/// other journal unchanged.
fn check_fetch(v: &serde_json::Value, expect: &[(String, u64)]) {
    for (id, head) in expect {
        let j = entry(v, id);
        assert_eq!(
            (j["verdict"].as_str(), j["head_seq"].as_u64()),
            (Some("verified"), Some(*head)),
            "journal {id}: verified through seq {head}: {v}"
        );
    }
    let journals = v["journals"].as_array().expect("journals");
    for j in journals.iter().filter(|j| !expect.iter().any(|(id, _)| j["journal_id"] == id.as_str())) {
        assert_eq!(j["verdict"], "unchanged", "a journal with nothing new is unchanged: {v}");
    }
}

/// `refname objectname` for every ref under `prefix` in `repo`, with `prefix` cut off.
fn refs_under(repo: &Path, prefix: &str) -> Vec<(String, String)> {
    let text = git(repo, &["for-each-ref", "--format=%(refname) %(objectname)", prefix]);
    let mut refs: Vec<(String, String)> = text
        .lines()
        .map(|l| {
            let (name, id) = l.split_once(' ').expect("refname objectname");
            (name.strip_prefix(prefix).expect("under the prefix").to_string(), id.to_string())
        })
        .collect();
    refs.sort();
    refs
}

// ----------------------------------------------------------------------------------------
// 1. Push of 1 new event at 100,000 vs 1,000 events

/// One repository of benchmark 1: its remote, the pushing machine's clone with the
/// journal, and the fetching machine's clone.
struct Mirrored {
    name: String,
    remote: PathBuf,
    pusher: PathBuf,
    push_machine: Machine,
    fetcher: PathBuf,
    fetch_machine: Machine,
    journal: Filled,
    id: String,
    /// The seq the fetching machine last verified.
    fetched: Cell<u64>,
    /// First pushes and fetches of the whole journal: the one that set this up, then
    /// benchmark 3's.
    first: RefCell<Vec<(ChildRun, ChildRun)>>,
    /// Benchmark 1's floor: the commits of the `floor` branch so far.
    floor_commits: Cell<u64>,
}

impl Mirrored {
    /// A repository whose working copy journal holds `events` events, mirrored by its
    /// machine and fetched and verified by another.
    fn build(dir: &Path, name: &str, events: u64) -> Mirrored {
        let (remote, pusher, fetcher) =
            (dir.join(format!("{name}-remote.git")), dir.join(format!("{name}-pusher")), dir.join(format!("{name}-fetcher")));
        let push_machine = Machine::new(dir, &format!("{name}-pusher"));
        let fetch_machine = Machine::new(dir, &format!("{name}-fetcher"));
        first_clone(&pusher, &remote, &push_machine, name);
        let journal = Filled::fill(&pusher, &push_machine, events);
        let id = journal.journal_id();
        clone_of(&remote, &fetcher, Some(&fetch_machine));
        let m = Mirrored {
            name: name.to_string(),
            remote,
            pusher,
            push_machine,
            fetcher,
            fetch_machine,
            journal,
            id,
            fetched: Cell::new(0),
            first: RefCell::new(Vec::new()),
            floor_commits: Cell::new(0),
        };
        let head = m.journal.head.get();
        let push = m.push_machine.abcd_polled(&m.pusher, &["mirror", "push", "--json"]);
        check_push_others(&parse(&push.stdout, "abcd mirror push --json"), &[(m.id.clone(), head, head + 1)], "pushed");
        let fetch = m.fetch_machine.abcd_polled(&m.fetcher, &["mirror", "fetch", "--json"]);
        let v = parse(&fetch.stdout, "abcd mirror fetch --json");
        let fetched: Vec<(String, u64)> = v["journals"]
            .as_array()
            .expect("journals")
            .iter()
            .map(|j| (j["journal_id"].as_str().expect("an id").to_string(), j["head_seq"].as_u64().expect("a seq")))
            .collect();
        check_fetch(&v, &fetched);
        assert!(fetched.contains(&(m.id.clone(), head)), "the fetch verified the working copy's journal through seq {head}: {v}");
        m.fetched.set(head);
        m.first.borrow_mut().push((push, fetch));
        m
    }

    fn journal_bytes(&self) -> u64 {
        std::fs::metadata(wc_journal(&self.pusher)).expect("stat the journal").len()
    }

    /// One event appended (untimed), then `abcd mirror push`, checked.
    fn push(&self) -> ChildRun {
        self.journal.append_one();
        let head = self.journal.head.get();
        let (run, v) = self.push_machine.push(&self.pusher);
        check_push(&v, &[(self.id.clone(), head, 1)]);
        run
    }

    /// `abcd mirror fetch` of exactly 1 new event, checked. Untimed before it, as the
    /// rotation left things: more than 1 pushed since the last fetch are fetched first,
    /// and when none is left, one more event is appended and pushed.
    fn fetch(&self) -> ChildRun {
        if self.journal.head.get() > self.fetched.get() + 1 {
            let (_, v) = self.fetch_machine.fetch(&self.fetcher);
            check_fetch(&v, &[(self.id.clone(), self.journal.head.get())]);
            self.fetched.set(self.journal.head.get());
        }
        if self.fetched.get() == self.journal.head.get() {
            self.push();
        }
        let head = self.journal.head.get();
        assert_eq!(head, self.fetched.get() + 1, "each fetch finds exactly 1 new event");
        let (run, v) = self.fetch_machine.fetch(&self.fetcher);
        check_fetch(&v, &[(self.id.clone(), head)]);
        self.fetched.set(head);
        run
    }

    /// The floor: one new small commit on branch `floor` (untimed, through git's plumbing),
    /// then a plain `git push` of it to the same remote.
    fn floor_push(&self) -> ChildRun {
        let n = self.floor_commits.get() + 1;
        let blob = git_stdin(&self.pusher, &["hash-object", "-w", "--stdin"], Some(format!("floor commit {n}\n").as_bytes()));
        let tree = git_stdin(&self.pusher, &["mktree"], Some(format!("100644 blob {blob}\tfloor.txt\n").as_bytes()));
        let message = format!("floor {n}");
        let mut args = vec!["commit-tree", &tree, "-m", &message];
        let parent = (n > 1).then(|| git(&self.pusher, &["rev-parse", "refs/heads/floor"]));
        if let Some(p) = &parent {
            args.extend(["-p", p]);
        }
        let commit = git(&self.pusher, &args);
        git(&self.pusher, &["update-ref", "refs/heads/floor", &commit]);
        self.floor_commits.set(n);
        self.push_machine.git(&self.pusher, &["push", "-q", REMOTE, "floor"])
    }

    /// After the rounds: the remote, the pusher and the fetcher agree on the mirror's
    /// commit, and the remote holds the floor's last commit.
    fn check_agree(&self) {
        let refname = format!("refs/abcd/journals/{}", self.id);
        let local = git(&self.pusher, &["rev-parse", &refname]);
        assert_eq!(git(&self.remote, &["rev-parse", &refname]), local, "{}: the remote holds the pusher's mirror", self.name);
        let verified = format!("refs/abcd/verified/{REMOTE}/journals/{}", self.id);
        if self.fetched.get() == self.journal.head.get() {
            assert_eq!(git(&self.fetcher, &["rev-parse", &verified]), local, "{}: the fetcher verified the pusher's mirror", self.name);
        }
        if self.floor_commits.get() > 0 {
            assert_eq!(
                git(&self.remote, &["rev-parse", "refs/heads/floor"]),
                git(&self.pusher, &["rev-parse", "refs/heads/floor"]),
                "{}: the remote holds the floor's last commit",
                self.name
            );
        }
    }
}

fn bench_push(cfg: &Config, large: &Mirrored, small: &Mirrored) -> (Vec<Row>, String) {
    // Per op, beside the times: each contender's peak RSS (KiB).
    let rss_of: Vec<RefCell<Vec<f64>>> = (0..6).map(|_| RefCell::new(Vec::new())).collect();
    let keep = |k: usize, run: ChildRun| {
        rss_of[k].borrow_mut().push(run.max_rss_kib as f64);
        run.wall.as_secs_f64()
    };
    let version = || large.push_machine.abcd(&large.pusher, &["--version"]);
    let mut contenders: Vec<Box<dyn FnMut() -> f64 + '_>> = vec![
        Box::new(|| keep(0, large.push())),
        Box::new(|| keep(1, small.push())),
        Box::new(|| keep(2, large.floor_push())),
        Box::new(|| keep(3, large.fetch())),
        Box::new(|| keep(4, small.fetch())),
        Box::new(|| {
            let run = version();
            assert!(run.stdout.starts_with("abcd "), "abcd --version printed {}", run.stdout);
            keep(5, run)
        }),
    ];
    // Untimed: one of each, to warm the binaries, the page cache and the remotes.
    for c in contenders.iter_mut() {
        c();
    }
    for r in &rss_of {
        r.borrow_mut().clear();
    }
    let n = contenders.len();
    let mut times = vec![Vec::new(); n];
    let mut rss_rounds = vec![Vec::new(); n];
    let (mut push_ratios, mut floor_ratios, mut fetch_ratios, mut push_rss, mut fetch_rss) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..cfg.push_rounds {
        let mut turns: Vec<&mut dyn FnMut() -> f64> = contenders.iter_mut().map(|c| &mut **c as &mut dyn FnMut() -> f64).collect();
        let m = rotate(round, cfg.push_ops, &mut turns);
        let r: Vec<f64> = rss_of.iter().map(|v| median(&std::mem::take(&mut *v.borrow_mut()))).collect();
        for k in 0..n {
            times[k].push(m[k]);
            rss_rounds[k].push(r[k]);
        }
        push_ratios.push(m[0] / m[1]);
        floor_ratios.push(m[0] / m[2]);
        fetch_ratios.push(m[3] / m[4]);
        push_rss.push(r[0] / r[1]);
        fetch_rss.push(r[3] / r[4]);
    }
    drop(contenders);
    large.check_agree();
    small.check_agree();

    let t = |k: usize| median(&times[k]);
    let r = |k: usize| median(&rss_rounds[k]);
    let (big, little) = (cfg.large, cfg.small);
    let note = format!(
        "benchmark 1: `abcd mirror push` of 1 new event at {big} events {} ({}) vs at {little} events {} ({}); `git push` of one small commit to the same remote {} ({}); `abcd mirror fetch` of 1 new event at {big} events {} ({}) vs at {little} events {} ({}); `abcd --version` {} ({}) (time and peak RSS: medians of round medians; {} rounds x {} runs each, rotating); the journals after the run: {big}+ events {:.1} MiB, {little}+ events {:.1} MiB",
        ms(t(0)),
        rss(r(0)),
        ms(t(1)),
        rss(r(1)),
        ms(t(2)),
        rss(r(2)),
        ms(t(3)),
        rss(r(3)),
        ms(t(4)),
        rss(r(4)),
        ms(t(5)),
        rss(r(5)),
        cfg.push_rounds,
        cfg.push_ops,
        mib(large.journal_bytes()),
        mib(small.journal_bytes()),
    );
    println!("[1] {note}");
    let rows = vec![
        Row {
            name: format!("1a. `abcd mirror push` of 1 new event, {big} vs {little} events"),
            contenders: format!(
                "{big} events {} vs {little} events {} (floor: `git push` of one small commit {})",
                ms(t(0)),
                ms(t(1)),
                ms(t(2))
            ),
            ratio_label: "large/small latency".into(),
            ratios: push_ratios,
            target: Target::AtMost(1.3),
        },
        Row {
            name: format!("1b. `abcd mirror push` of 1 new event at {big} events vs `git push` of one small commit (the floor)"),
            contenders: format!("`abcd mirror push` {} vs `git push` {} (`abcd --version` {})", ms(t(0)), ms(t(2)), ms(t(5))),
            ratio_label: "abcd/git latency".into(),
            ratios: floor_ratios,
            target: Target::Context,
        },
        Row {
            name: format!("1c. `abcd mirror fetch` of 1 new event, {big} vs {little} events"),
            contenders: format!("{big} events {} vs {little} events {} (`abcd --version` {})", ms(t(3)), ms(t(4)), ms(t(5))),
            ratio_label: "large/small latency".into(),
            ratios: fetch_ratios,
            target: Target::Context,
        },
        Row {
            name: format!("3a. peak memory of `abcd mirror push` of 1 new event, {big} vs {little} events"),
            contenders: format!("{big} events {} vs {little} events {} (floor: `git push` {})", rss(r(0)), rss(r(1)), rss(r(2))),
            ratio_label: "large/small peak RSS".into(),
            ratios: push_rss,
            target: Target::AtMost(1.5),
        },
        Row {
            name: format!("3b. peak memory of `abcd mirror fetch` of 1 new event, {big} vs {little} events"),
            contenders: format!("{big} events {} vs {little} events {} (`abcd --version` {})", rss(r(3)), rss(r(4)), rss(r(5))),
            ratio_label: "large/small peak RSS".into(),
            ratios: fetch_rss,
            target: Target::AtMost(1.5),
        },
    ];
    (rows, note)
}

// ----------------------------------------------------------------------------------------
// 3. First push and first fetch of the whole journal

/// A first push of `m`'s whole journal to a new empty remote, and a first fetch of it by a
/// new clone of that remote on a new machine, both checked; the run's number names them.
fn first_push_and_fetch(dir: &Path, m: &Mirrored, run: usize) -> (ChildRun, ChildRun) {
    let remote_name = format!("fresh-{run}");
    let remote = dir.join(format!("{}-{remote_name}.git", m.name));
    bare_remote(&remote);
    git(&m.pusher, &["remote", "add", &remote_name, utf8(&remote)]);
    git(&m.pusher, &["push", "-q", &remote_name, "main"]);
    // This machine's record of what it mirrored is per journal, not per remote: with it
    // gone, the next push mirrors every journal whole.
    for (name, _) in refs_under(&m.pusher, "refs/abcd/journals/") {
        git(&m.pusher, &["update-ref", "-d", &format!("refs/abcd/journals/{name}")]);
    }
    let head = m.journal.head.get();
    let push = m.push_machine.abcd_polled(&m.pusher, &["mirror", "push", "--remote", &remote_name, "--json"]);
    // The repository journal goes whole too.
    check_push_others(&parse(&push.stdout, "abcd mirror push --json"), &[(m.id.clone(), head, head + 1)], "pushed");

    let machine = Machine::new(dir, &format!("{}-{remote_name}-fetcher", m.name));
    let fetcher = dir.join(format!("{}-{remote_name}-fetcher", m.name));
    clone_of(&remote, &fetcher, Some(&machine));
    let fetch = machine.abcd_polled(&fetcher, &["mirror", "fetch", "--json"]);
    let v = parse(&fetch.stdout, "abcd mirror fetch --json");
    assert_eq!(entry(&v, &m.id)["verdict"], "verified", "a new clone verifies the whole mirror: {v}");
    assert_eq!(entry(&v, &m.id)["head_seq"].as_u64(), Some(head), "through the journal's head: {v}");
    (push, fetch)
}

fn bench_first(cfg: &Config, dir: &Path, large: &Mirrored, small: &Mirrored) -> (Vec<Row>, String) {
    // Rotating which size goes first.
    for run in 0..cfg.fresh_runs {
        let pair = if run % 2 == 0 { [large, small] } else { [small, large] };
        for m in pair {
            let r = first_push_and_fetch(dir, m, run);
            m.first.borrow_mut().push(r);
        }
    }
    let (l, s) = (large.first.borrow(), small.first.borrow());
    type Pick = fn(&(ChildRun, ChildRun)) -> f64;
    let ratio = |f: Pick| -> Vec<f64> { l.iter().zip(s.iter()).map(|(a, b)| f(a) / f(b)).collect() };
    let med = |v: &[(ChildRun, ChildRun)], f: Pick| median(&v.iter().map(f).collect::<Vec<_>>());
    fn own(r: &ChildRun) -> f64 {
        r.own_peak_kib.expect("a polled run reports its own peak") as f64
    }
    let push_rss: Pick = |p| p.0.max_rss_kib as f64;
    let fetch_rss: Pick = |p| p.1.max_rss_kib as f64;
    let push_own: Pick = |p| own(&p.0);
    let fetch_own: Pick = |p| own(&p.1);
    let push_t: Pick = |p| p.0.wall.as_secs_f64();
    let fetch_t: Pick = |p| p.1.wall.as_secs_f64();
    let (big, little) = (cfg.large, cfg.small);
    let note = format!(
        "benchmark 3: a first push of the whole journal to an empty remote at {big} events {} (peak RSS {}, abcd's own {}) vs at {little} events {} ({}, abcd's own {}); a first fetch of it by a new clone at {big} events {} ({}, abcd's own {}) vs at {little} events {} ({}, abcd's own {}) (medians of {} runs each: the one that set up benchmark 1, then one per new remote; abcd's own peak is its VmHWM read every 2 ms while it runs)",
        ms(med(&l, push_t)),
        rss(med(&l, push_rss)),
        rss(med(&l, push_own)),
        ms(med(&s, push_t)),
        rss(med(&s, push_rss)),
        rss(med(&s, push_own)),
        ms(med(&l, fetch_t)),
        rss(med(&l, fetch_rss)),
        rss(med(&l, fetch_own)),
        ms(med(&s, fetch_t)),
        rss(med(&s, fetch_rss)),
        rss(med(&s, fetch_own)),
        l.len(),
    );
    println!("[3] {note}");
    let row = |name: String, what: &str, f: Pick, t: Pick| Row {
        name,
        contenders: format!(
            "{big} events {} vs {little} events {} ({what}; {} vs {})",
            rss(med(&l, f)),
            rss(med(&s, f)),
            ms(med(&l, t)),
            ms(med(&s, t))
        ),
        ratio_label: "large/small peak RSS".into(),
        ratios: ratio(f),
        target: Target::AtMost(1.5),
    };
    let rows = vec![
        row(
            format!("3c. peak memory of a first `abcd mirror push` (the whole journal), {big} vs {little} events"),
            "abcd and its git children",
            push_rss,
            push_t,
        ),
        row(
            format!("3d. peak memory of a first `abcd mirror fetch` (the whole journal verified), {big} vs {little} events"),
            "abcd and its git children",
            fetch_rss,
            fetch_t,
        ),
        row(format!("3e. abcd's own peak memory in a first `abcd mirror push`, {big} vs {little} events"), "abcd alone", push_own, push_t),
        row(
            format!("3f. abcd's own peak memory in a first `abcd mirror fetch`, {big} vs {little} events"),
            "abcd alone",
            fetch_own,
            fetch_t,
        ),
    ];
    (rows, note)
}

// ----------------------------------------------------------------------------------------
// 2. Fetch and verify of 50 working copies vs a plain `git fetch`

fn bench_fetch(cfg: &Config, dir: &Path) -> (Vec<Row>, String, Vec<(PathBuf, PathBuf)>) {
    let t = Instant::now();
    let (remote, pusher, fetcher, plain) =
        (dir.join("many-remote.git"), dir.join("many-pusher"), dir.join("many-fetcher"), dir.join("many-plain"));
    let push_machine = Machine::new(dir, "many-pusher");
    let fetch_machine = Machine::new(dir, "many-fetcher");
    first_clone(&pusher, &remote, &push_machine, "many");
    // The main worktree, then linked worktrees, each with a journal of its own.
    let worktrees = dir.join("many-worktrees");
    std::fs::create_dir(&worktrees).expect("creating the worktrees' folder");
    let mut roots = vec![pusher.clone()];
    for k in 1..cfg.copies {
        let root = worktrees.join(format!("wc-{k:02}"));
        git(&pusher, &["worktree", "add", "-q", "-b", &format!("wc-{k:02}"), utf8(&root)]);
        roots.push(root);
    }
    let copies: Vec<Filled> = roots.iter().map(|r| Filled::fill(r, &push_machine, cfg.copy_events)).collect();
    let ids: Vec<String> = copies.iter().map(Filled::journal_id).collect();
    let expect_push =
        |new: u64| -> Vec<(String, u64, u64)> { copies.iter().zip(&ids).map(|(c, id)| (id.clone(), c.head.get(), new)).collect() };
    let expect_fetch = || -> Vec<(String, u64)> { copies.iter().zip(&ids).map(|(c, id)| (id.clone(), c.head.get())).collect() };
    let (_, v) = push_machine.push(&pusher);
    let whole: Vec<(String, u64, u64)> = copies.iter().zip(&ids).map(|(c, id)| (id.clone(), c.head.get(), c.head.get() + 1)).collect();
    check_push_others(&v, &whole, "pushed");
    let mirrored = v["journals"].as_array().expect("journals").len();
    assert!(mirrored >= cfg.copies, "every working copy's journal is mirrored: {v}");

    clone_of(&remote, &fetcher, Some(&fetch_machine));
    let (first_fetch, v) = fetch_machine.fetch(&fetcher);
    let all: Vec<(String, u64)> = v["journals"]
        .as_array()
        .expect("journals")
        .iter()
        .map(|j| (j["journal_id"].as_str().expect("an id").to_string(), j["head_seq"].as_u64().expect("a seq")))
        .collect();
    check_fetch(&v, &all);
    assert_eq!(all.len(), mirrored, "the fetch verified every mirrored journal: {v}");
    clone_of(&remote, &plain, None);
    let refspecs = [format!("+refs/abcd/journals/*:{FLOOR_NAMESPACE}/journals/*"), format!("+refs/abcd/saved/*:{FLOOR_NAMESPACE}/saved/*")];
    // The flags `abcd mirror fetch` gives its own `git fetch`: the floor is that fetch alone.
    let mut floor_args = vec!["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--prune", "--no-auto-gc", REMOTE];
    floor_args.extend(refspecs.iter().map(String::as_str));
    git(&plain, &floor_args);
    println!(
        "[2] built {} working copies of {} events each, mirrored them, and fetched them on a second machine in {:.1} s (first fetch and verify of all {mirrored} journals {})",
        cfg.copies,
        cfg.copy_events,
        t.elapsed().as_secs_f64(),
        ms(first_fetch.wall.as_secs_f64())
    );

    // The plain clone runs no abcd; its "machine" only gives git the same environment.
    let floor_machine = Machine::new(dir, "many-plain");
    let (mut times, mut ratios, mut push_t, mut push_rss) = (vec![Vec::new(); 2], Vec::new(), Vec::new(), Vec::new());
    let (abcd_rss, git_rss) = (RefCell::new(Vec::new()), RefCell::new(Vec::new()));
    for round in 0..cfg.fetch_rounds {
        // Untimed: 1 new event in every working copy, and one push of them all.
        for c in &copies {
            c.append_one();
        }
        let (push, v) = push_machine.push(&pusher);
        check_push(&v, &expect_push(1));
        push_t.push(push.wall.as_secs_f64());
        push_rss.push(push.max_rss_kib as f64);
        let expected = expect_fetch();
        let mirror = refs_under(&pusher, "refs/abcd/journals/");
        let m = rotate(
            round,
            1,
            &mut [
                &mut || {
                    let (run, v) = fetch_machine.fetch(&fetcher);
                    check_fetch(&v, &expected);
                    abcd_rss.borrow_mut().push(run.max_rss_kib as f64);
                    run.wall.as_secs_f64()
                },
                &mut || {
                    let run = floor_machine.git(&plain, &floor_args);
                    assert_eq!(refs_under(&plain, &format!("{FLOOR_NAMESPACE}/journals/")), mirror, "git fetch brought every mirror ref");
                    git_rss.borrow_mut().push(run.max_rss_kib as f64);
                    run.wall.as_secs_f64()
                },
            ],
        );
        times[0].push(m[0]);
        times[1].push(m[1]);
        ratios.push(m[0] / m[1]);
    }
    // The fetcher's verified copies are the pusher's mirrors.
    let verified = refs_under(&fetcher, &format!("refs/abcd/verified/{REMOTE}/journals/"));
    assert_eq!(verified, refs_under(&pusher, "refs/abcd/journals/"), "the fetcher verified every mirror the pusher pushed");

    let (a, g) = (median(&times[0]), median(&times[1]));
    let note = format!(
        "benchmark 2: {} working copies (the main worktree and {} linked worktrees of one clone, {} events each before the rounds; {mirrored} journals mirrored in all), 1 new event in each working copy per round: `abcd mirror fetch` {} vs `git fetch` of the same refs {} (medians; {} rounds, one run of each per round, rotating); the `abcd mirror push` of the {} before each round's fetches took {}; peak RSS: `abcd mirror fetch` {}, `git fetch` {}, `abcd mirror push` {}",
        cfg.copies,
        cfg.copies - 1,
        cfg.copy_events,
        ms(a),
        ms(g),
        cfg.fetch_rounds,
        cfg.copies,
        ms(median(&push_t)),
        rss(median(&abcd_rss.borrow())),
        rss(median(&git_rss.borrow())),
        rss(median(&push_rss)),
    );
    println!("[2] {note}");
    let rows = vec![Row {
        name: format!("2. `abcd mirror fetch` of {} working copies, 1 new event each, vs `git fetch` of the same refs", cfg.copies),
        contenders: format!("`abcd mirror fetch` {} vs `git fetch` {} (the push before them {})", ms(a), ms(g), ms(median(&push_t))),
        ratio_label: "abcd/git latency".into(),
        ratios,
        target: Target::AtMost(3.0),
    }];
    let journals = copies.iter().map(|c| (wc_journal(&c.root), push_machine.home.clone())).collect();
    (rows, note, journals)
}

// ----------------------------------------------------------------------------------------
// 4. Status of a mirror of many segments vs the same lines in few

/// A repository journal of `events` lines (a genesis naming `journal_id`, then
/// `compaction.recorded` events), each line with its `LF`.
fn repository_lines(journal_id: &str, root_commit: &str, events: usize) -> Vec<Vec<u8>> {
    use abcd::journal::format::{self, Hash};
    let t = jiff::Timestamp::from_second(1_800_000_000).expect("a time");
    let actor = Actor { session: None, pid: 4100, tool: "abcd/bench".into() };
    let opened = abcd::event::JournalOpened { journal_id: journal_id.into(), scope: Scope::Repository { root_commit: root_commit.into() } };
    let mut prev = Hash::genesis_prev();
    (0..events as u64)
        .map(|seq| {
            let (kind, data) = if seq == 0 {
                (format::GENESIS_KIND.to_string(), serde_json::to_value(&opened).expect("plain data"))
            } else {
                (abcd::event::COMPACTION_RECORDED.to_string(), serde_json::json!({"session": null, "trigger": "manual"}))
            };
            let time = t.checked_add(jiff::SignedDuration::from_millis(seq as i64)).expect("a time");
            let (line, hash) = format::encode_line(seq, time, &NewEvent { kind, actor: actor.clone(), data }, &prev).expect("a line");
            prev = hash;
            line
        })
        .collect()
}

/// Writes in `remote`, with git plumbing as any pusher could, a mirror commit of `lines`
/// in segments of `per_segment` lines, under `refs/abcd/journals/<journal_id>`.
fn hand_written_mirror(remote: &Path, lines: &[Vec<u8>], per_segment: usize, journal_id: &str, root_commit: &str) {
    let chunks: Vec<Vec<u8>> = lines.chunks(per_segment).map(|c| c.concat()).collect();
    let mut input = Vec::new();
    for (k, b) in chunks.iter().enumerate() {
        input.extend_from_slice(format!("blob\nmark :{}\ndata {}\n", k + 1, b.len()).as_bytes());
        input.extend_from_slice(b);
        input.push(b'\n');
    }
    let marks = remote.join("bench-fast-import.marks");
    git_stdin(remote, &["fast-import", "--quiet", &format!("--export-marks={}", utf8(&marks))], Some(&input));
    let mut ids = vec![String::new(); chunks.len()];
    for line in std::fs::read_to_string(&marks).expect("the marks").lines() {
        let (mark, id) = line.split_once(' ').expect("`:<mark> <id>`");
        ids[mark[1..].parse::<usize>().expect("a mark") - 1] = id.to_string();
    }
    let listing: String = ids
        .iter()
        .enumerate()
        .map(|(k, id)| format!("100644 blob {id}\t{}\n", abcd::mirror::segment_name((k * per_segment) as u64)))
        .collect();
    let segments = git_stdin(remote, &["mktree"], Some(listing.as_bytes()));
    let last: serde_json::Value = serde_json::from_slice(lines.last().expect("a line")).expect("JSON");
    let meta = serde_json::json!({
        "format": abcd::mirror::MIRROR_FORMAT,
        "journal_id": journal_id,
        "scope": {"kind": "repository", "root_commit": root_commit},
        "repository": root_commit,
        "machine": "machine-x",
        "path": "/home/x/wc",
        "head_seq": last["seq"],
        "head_hash": last["hash"],
        "head_time": last["time"],
        "bytes": lines.iter().map(Vec::len).sum::<usize>(),
    });
    let json = git_stdin(remote, &["hash-object", "-w", "--stdin"], Some(&serde_json::to_vec(&meta).expect("JSON")));
    let root =
        git_stdin(remote, &["mktree"], Some(format!("100644 blob {json}\tmirror.json\n040000 tree {segments}\tsegments\n").as_bytes()));
    let commit = git(
        remote,
        &["-c", "user.name=Bench Person", "-c", "user.email=bench@example.invalid", "commit-tree", &root, "-m", "a mirror written by hand"],
    );
    git(remote, &["update-ref", &format!("refs/abcd/journals/{journal_id}"), &commit]);
}

fn bench_status(cfg: &Config, dir: &Path) -> (Vec<Row>, String) {
    let t = Instant::now();
    let events = cfg.status_events;
    let sizes = [1usize, events / cfg.status_few_segments];
    let mut places = Vec::new();
    for per_segment in sizes {
        let name = format!("status-{per_segment}");
        let (remote, root) = (dir.join(format!("{name}-remote.git")), dir.join(&name));
        let m = Machine::new(dir, &name);
        first_clone(&root, &remote, &m, &name);
        let root_commit = git(&root, &["rev-list", "--max-parents=0", "HEAD"]);
        let id = format!("{per_segment:032x}");
        hand_written_mirror(&remote, &repository_lines(&id, &root_commit, events), per_segment, &id, &root_commit);
        let (_, v) = m.fetch(&root);
        check_fetch(&v, &[(id.clone(), events as u64 - 1)]);
        places.push((m, root, id));
    }
    println!(
        "[4] wrote and fetched two mirrors of {events} events, in {events} and {} segments, in {:.1} s",
        cfg.status_few_segments,
        t.elapsed().as_secs_f64()
    );
    let status = |(m, root, id): &(Machine, PathBuf, String)| -> f64 {
        let run = m.abcd(root, &["mirror", "status", "--json"]);
        let v = parse(&run.stdout, "abcd mirror status --json");
        let shown = v["repositories"].as_array().expect("repositories").iter().find(|r| r["journal_id"] == id.as_str()).cloned();
        let shown = shown.unwrap_or_else(|| panic!("status shows the mirror {id}: {v}"));
        assert_eq!((shown["head_seq"].as_u64(), shown["verification"].as_str()), (Some(events as u64 - 1), Some("verified")), "{v}");
        run.wall.as_secs_f64()
    };
    // The first status after a fetch folds what the fetch brought (here the whole mirror)
    // and keeps it; the rounds time the status run again, which reads the kept state
    // (MIRROR.md §7, "What a status reads again").
    let first: Vec<f64> = places.iter().map(status).collect();
    println!(
        "[4] the first status after the fetch (untimed in the rounds; it folds the whole mirror and keeps it): {events} segments {} vs {} segments {}",
        ms(first[0]),
        cfg.status_few_segments,
        ms(first[1])
    );
    let (mut many, mut few, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..cfg.status_rounds {
        let m = rotate(round, 1, &mut [&mut || status(&places[0]), &mut || status(&places[1])]);
        many.push(m[0]);
        few.push(m[1]);
        ratios.push(m[0] / m[1]);
    }
    let note = format!(
        "benchmark 4: `abcd mirror status` run again (the first status after the fetch, untimed, kept the folded state) of a verified mirror of {events} events in {events} one-line segments {} vs in {} segments of {} lines {} (medians; {} rounds, one run of each per round, rotating); the first status after the fetch: {} vs {}",
        ms(median(&many)),
        cfg.status_few_segments,
        sizes[1],
        ms(median(&few)),
        cfg.status_rounds,
        ms(first[0]),
        ms(first[1])
    );
    println!("[4] {note}");
    let rows = vec![Row {
        name: format!("4. `abcd mirror status` run again of {events} events, {events} segments vs {}", cfg.status_few_segments),
        contenders: format!("{events} segments {} vs {} segments {}", ms(median(&many)), cfg.status_few_segments, ms(median(&few))),
        ratio_label: "many/few segments latency".into(),
        ratios,
        target: Target::AtMost(2.0),
    }];
    (rows, note)
}
