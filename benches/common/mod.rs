//! What the benchmarks share: the median, the time shown, the binaries they time, a
//! child's stdin written as a host writes it, the clean-journal check, the spawner that
//! reads a child's peak memory, and the checklist events their journals are built from.

use std::convert::Infallible;
use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use abcd::checklist::item::{ChangeSet, ItemFields, ItemState, slug_from_title};
use abcd::event::{ItemAdded, ItemChanged};
use abcd::journal::anchor::AnchorStore;
use abcd::journal::scan::Verdict;
use abcd::journal::storage::RealDisk;
use abcd::journal::verify;
use abcd::journal::{Actor, NewEvent};

pub fn median(values: &[f64]) -> f64 {
    assert!(!values.is_empty(), "a median needs values");
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

pub fn ms(secs: f64) -> String {
    format!("{:.3} ms", secs * 1e3)
}

/// The release binary cargo built beside this bench (`target/release/abcd`).
pub fn abcd_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_abcd"))
}

/// The `abcd` a bench times against a trivial process: a copy of the built binary made as
/// `cargo install` makes one (`std::fs::copy`), set once by the bench's `main`
/// ([`install_copy`]). The file the linker wrote is in another page-cache state, which
/// starts slower (docs/decisions.md, "A binary's page cache state"), and an install by
/// `cargo install` never runs it; `context` runs it beside the copy as context rows.
#[allow(dead_code)]
static INSTALLED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Copies the built binary into `dir` as `cargo install` does, once per run, and leaves it
/// in the state a long-lived install ends up in: written out, dropped from the page cache,
/// and paged in again by the untimed first runs (a copy just made starts faster than that;
/// docs/decisions.md, "A binary's page cache state"). Its path.
#[allow(dead_code)]
pub fn install_copy(dir: &Path) -> &'static Path {
    use std::os::fd::AsRawFd;
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).expect("creating the bench's bin folder");
    let exe = bin.join("abcd");
    std::fs::copy(abcd_bin(), &exe).expect("copying the built abcd");
    let file = std::fs::File::open(&exe).expect("opening the copy");
    file.sync_all().expect("writing the copy out");
    // SAFETY: an advice call on an fd this function owns; it reads no memory of ours.
    let advised = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(advised, 0, "dropping the copy from the page cache");
    INSTALLED.set(exe).expect("installed once per run");
    installed()
}

/// The installed copy ([`INSTALLED`]).
#[allow(dead_code)]
pub fn installed() -> &'static Path {
    INSTALLED.get().expect("main installs the copy before any benchmark runs")
}

/// The trivial process: starts and exits, reading nothing.
#[allow(dead_code)]
pub fn true_bin() -> &'static Path {
    [Path::new("/usr/bin/true"), Path::new("/bin/true")].into_iter().find(|p| p.is_file()).expect("a `true` binary")
}

/// Writes `bytes` to a child's stdin; a child that exited without reading it (`true`)
/// is not an error.
pub fn write_ignoring_closed(pipe: &mut impl Write, bytes: &[u8]) {
    match pipe.write_all(bytes) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        Err(e) => panic!("writing a child's stdin: {e}"),
    }
}

/// Verifies with the library's verifier; panics unless clean. Returns the event count.
pub fn verify_clean(path: &Path, home: &Path) -> u64 {
    let anchors = AnchorStore::new(home);
    let report = verify::verify(&RealDisk, path, Some(&anchors), |_, _| Ok::<(), Infallible>(()))
        .unwrap_or_else(|e| panic!("verifying {}: {e}", path.display()));
    assert!(matches!(report.verdict, Verdict::Clean) && report.is_ok(), "{} does not verify clean: {report:?}", path.display());
    report.events
}

/// Each contender once per op, in an order drawn anew for every op (a fixed-seed shuffle,
/// so runs repeat): no contender always runs just after the same neighbour. With many
/// contenders, some of which disturb the machine (a git commit, a cold hook's git
/// children), a fixed cyclic order hands the disturbance to the same successor in every
/// op. Each contender times itself and returns seconds. The median per contender.
#[allow(dead_code)]
pub fn shuffled(round: usize, ops: usize, contenders: &mut [&mut dyn FnMut() -> f64]) -> Vec<f64> {
    let n = contenders.len();
    let mut times = vec![Vec::with_capacity(ops); n];
    // xorshift64*, seeded by the round: enough to decorrelate neighbours, no crate needed.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ (round as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut order: Vec<usize> = (0..n).collect();
    for _ in 0..ops {
        for i in (1..n).rev() {
            order.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        for &c in &order {
            times[c].push(contenders[c]());
        }
    }
    times.iter().map(|t| median(t)).collect()
}

/// Each contender once per op, in an order that rotates with the round; each contender
/// times itself (so it can prepare untimed) and returns seconds. The median per contender.
#[allow(dead_code)]
pub fn rotate(round: usize, ops: usize, contenders: &mut [&mut dyn FnMut() -> f64]) -> Vec<f64> {
    let n = contenders.len();
    let mut times = vec![Vec::with_capacity(ops); n];
    for _ in 0..ops {
        for k in 0..n {
            let c = (round + k) % n;
            times[c].push(contenders[c]());
        }
    }
    times.iter().map(|t| median(t)).collect()
}

/// Panics, with what it printed, unless `cmd` exited 0.
pub fn assert_succeeded(cmd: &Command, out: &Output) {
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A row's target for the median of its ratios. Each bench sets the kinds it needs.
#[allow(dead_code)]
#[derive(Clone, Copy)]
pub enum Target {
    AtMost(f64),
    AtLeast(f64),
    /// Strictly below: "faster than".
    Below(f64),
    /// No target: reported for context.
    Context,
}

/// One row of a bench's table: its contenders, its per-round ratios and its target.
pub struct Row {
    pub name: String,
    pub contenders: String,
    /// e.g. "abcd/true latency"
    pub ratio_label: String,
    pub ratios: Vec<f64>,
    pub target: Target,
}

impl Row {
    pub fn markdown(&self, full: bool) -> String {
        let mut sorted = self.ratios.clone();
        sorted.sort_by(f64::total_cmp);
        let med = median(&self.ratios);
        let (target, pass) = match self.target {
            Target::AtMost(t) => (format!("<= {t}x"), Some(med <= t)),
            Target::AtLeast(t) => (format!(">= {t}x"), Some(med >= t)),
            Target::Below(t) => (format!("< {t}x"), Some(med < t)),
            Target::Context => ("none (context)".to_string(), None),
        };
        let result = match (full, pass) {
            (false, _) => "smoke (not judged)",
            (true, None) => "context",
            (true, Some(true)) => "PASS",
            (true, Some(false)) => "MISS",
        };
        format!(
            "| {} | {} | {} = **{:.2}x** ({:.2}..{:.2}, {} rounds) | {} | {} |",
            self.name,
            self.contenders,
            self.ratio_label,
            med,
            sorted[0],
            sorted[sorted.len() - 1],
            sorted.len(),
            target,
            result
        )
    }
}

/// The SessionStart payload the host sends, for a session in `wc` after a compaction.
#[allow(dead_code)]
pub fn session_start_payload(wc: &Path) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        // A session id per working copy: a host gives each session its own, and a hook on
        // a host with no project folder judges a known session by the copy it started in.
        "session_id": format!("bench-{}", &blake3::hash(wc.as_os_str().as_encoded_bytes()).to_hex()[..16]),
        "cwd": wc.to_str().expect("a UTF-8 path"),
        "hook_event_name": "SessionStart",
        "source": "compact",
    }))
    .expect("plain data serializes")
}

/// Set for the spawner process, which runs its arguments as a command.
const SPAWNER_ENV: &str = "ABCD_BENCH_SPAWNER";
/// `SPAWNER_ENV`'s value that has the spawner also sample the command's own peak.
const SPAWNER_POLL: &str = "poll";
/// How often a polling spawner reads the command's own `VmHWM`.
const SPAWNER_POLL_EVERY: Duration = Duration::from_millis(2);
/// The spawner's report, the last line of its output.
const SPAWNER_TAG: &str = "abcd-bench-spawner:";

/// A child's wall time, peak RSS (KiB) and stdout.
#[allow(dead_code)]
pub struct ChildRun {
    pub wall: Duration,
    /// The largest of the command and every child it reaped (`wait4`'s `ru_maxrss`).
    pub max_rss_kib: u64,
    /// The command's own peak (`VmHWM`, read every `SPAWNER_POLL_EVERY` while it runs, so
    /// growth in its last moments can be missed), from [`run_child_polled`] only.
    pub own_peak_kib: Option<u64>,
    pub stdout: String,
}

/// Whether this process is the spawner: a bench that times children through it calls
/// [`spawner`] first thing in `main` when this holds.
#[allow(dead_code)]
pub fn is_spawner() -> bool {
    std::env::var_os(SPAWNER_ENV).is_some()
}

/// Runs `program args` through the spawner (a fresh, small process of this bench), in
/// folder `cwd` when given, with `stdin` (when given) as its standard input, and returns
/// what it reports; panics unless the command exited 0. Why not `wait4` here: on Linux a
/// process's `ru_maxrss` also counts the address space it exec'd from, which for a child of
/// this bench is this bench's own high-water mark; the spawner's is a few MiB (`/bin/true`
/// shows how much). The peak is the largest of the command and the children it reaped.
#[allow(dead_code)]
pub fn run_child_with_stdin(cwd: Option<&Path>, program: &Path, args: &[&str], env: &[(&str, &Path)], stdin: Option<&[u8]>) -> ChildRun {
    run_spawner(cwd, program, args, env, stdin, false)
}

/// `run_child_with_stdin` with no stdin, also sampling the command's own peak (apart from
/// the children it runs). The wall time is then up to `SPAWNER_POLL_EVERY` late: for
/// memory, not for timing.
#[allow(dead_code)]
pub fn run_child_polled(cwd: Option<&Path>, program: &Path, args: &[&str], env: &[(&str, &Path)]) -> ChildRun {
    run_spawner(cwd, program, args, env, None, true)
}

fn run_spawner(cwd: Option<&Path>, program: &Path, args: &[&str], env: &[(&str, &Path)], stdin: Option<&[u8]>, poll: bool) -> ChildRun {
    let mut cmd = Command::new(std::env::current_exe().expect("this bench's path"));
    cmd.env(SPAWNER_ENV, if poll { SPAWNER_POLL } else { "1" }).arg(program).args(args).stdout(Stdio::piped()).stderr(Stdio::inherit());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("running the spawner");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("a piped stdin");
        write_ignoring_closed(&mut pipe, bytes);
    }
    let out = child.wait_with_output().expect("running the spawner");
    assert!(out.status.success(), "the spawner failed: {:?}", out.status);
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    let (stdout, report) = text.rsplit_once(SPAWNER_TAG).expect("the spawner's report");
    let find = |name: &str| -> Option<u64> {
        report.split_whitespace().find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('='))).and_then(|v| v.parse().ok())
    };
    let field = |name: &str| find(name).unwrap_or_else(|| panic!("no {name} in the spawner's report {report:?}"));
    assert_eq!(field("status"), 0, "{} {args:?} failed:\n{stdout}", program.display());
    ChildRun {
        wall: Duration::from_nanos(field("wall_ns")),
        max_rss_kib: field("maxrss_kib"),
        own_peak_kib: find("own_peak_kib"),
        stdout: stdout.to_string(),
    }
}

/// A process's own peak resident set (`VmHWM`, KiB), while it has one.
fn vm_hwm_kib(pid: libc::pid_t) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The spawner: runs its arguments as a command, reaps it with `wait4` (whose rusage is
/// that child's own, and its reaped children's) and prints its wall time, peak RSS and exit
/// status; asked to poll, also the command's own peak, read while it runs.
#[allow(dead_code)]
#[allow(clippy::zombie_processes)] // reaped by wait4 below, not by Child::wait
pub fn spawner() {
    let poll = std::env::var(SPAWNER_ENV).is_ok_and(|v| v == SPAWNER_POLL);
    let mut args = std::env::args_os().skip(1);
    let program = args.next().expect("the spawner needs a program");
    let rest: Vec<OsString> = args.collect();
    let started = Instant::now();
    // The spawner's own stdin: null, or the payload `run_child_with_stdin` pipes in.
    let child = Command::new(&program).args(&rest).env_remove(SPAWNER_ENV).stdin(Stdio::inherit()).spawn().expect("spawning");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; all zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut own_peak = 0;
    let rc = loop {
        // SAFETY: `pid` is this process's unreaped child; the pointers are to live locals.
        let rc = unsafe { libc::wait4(pid, &mut status, if poll { libc::WNOHANG } else { 0 }, &mut usage) };
        if rc != 0 {
            break rc;
        }
        own_peak = own_peak.max(vm_hwm_kib(pid).unwrap_or(0));
        std::thread::sleep(SPAWNER_POLL_EVERY);
    };
    let wall = started.elapsed();
    assert_eq!(rc, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
    let own = if poll { format!(" own_peak_kib={own_peak}") } else { String::new() };
    // On Linux ru_maxrss is in KiB.
    println!("{SPAWNER_TAG} maxrss_kib={} wall_ns={} status={code}{own}", usage.ru_maxrss, wall.as_nanos());
}

/// `checklist.item_added` of a working item titled `title`, its id the title's slug, as
/// `abcd checklist add` writes it (the benches that build journals through the store use it).
#[allow(dead_code)]
pub fn item_added_event(title: &str, actor: Actor) -> NewEvent {
    let item = ItemFields::working(&slug_from_title(title), title);
    NewEvent {
        kind: abcd::event::CHECKLIST_ITEM_ADDED.into(),
        actor,
        data: serde_json::to_value(ItemAdded { item }).expect("plain data serializes"),
    }
}

/// The `rev`th change of item `id` (number `i` of the `benchmark` bench's list): the title,
/// then waiting on a pull request, then working again, as `abcd checklist set` writes them.
#[allow(dead_code)]
pub fn item_changed_event(id: String, i: u64, rev: u64, benchmark: &str, actor: Actor) -> NewEvent {
    let changes = match rev % 3 {
        0 => {
            ChangeSet { title: Some(format!("Checklist item {i:02} of the {benchmark} benchmark, revision {rev}")), ..ChangeSet::default() }
        }
        1 => ChangeSet { state: Some(ItemState::Waiting), waits_on: Some(Some(format!("pr:{}", 100 + i))), ..ChangeSet::default() },
        _ => ChangeSet { state: Some(ItemState::Working), waits_on: Some(None), ..ChangeSet::default() },
    };
    NewEvent {
        kind: abcd::event::CHECKLIST_ITEM_CHANGED.into(),
        actor,
        data: serde_json::to_value(ItemChanged { id, changes }).expect("plain data serializes"),
    }
}

/// The table of every row, the notes under it, and the clean-journal line a run ends with
/// (the run has checked every journal it wrote before it prints this).
pub fn print_report(rows: &[Row], full: bool, notes: &[String]) {
    println!();
    println!("| benchmark | contenders (median per round) | ratio (median of per-round ratios; min..max) | target | result |");
    println!("|---|---|---|---|---|");
    for r in rows {
        println!("{}", r.markdown(full));
    }
    println!();
    for n in notes {
        println!("{n}");
    }
    println!("all journals verify clean after the run");
}
