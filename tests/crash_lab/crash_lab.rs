//! The crash lab (SPEC §9): the real `abcd` binary writing checklist items, killed with
//! SIGKILL at random moments, in a throwaway managed working copy with its own home. After
//! every kill:
//!
//! - `abcd journal verify --json` is ok: clean or a torn tail, never corrupt, and the head
//!   anchor agrees or is absent;
//! - `abcd checklist --json` lists every item whose `add` exited 0 and printed its id, with
//!   its title; an item from a killed add may or may not be there, nothing else may, and an
//!   item once shown never goes away unless it is done and the list holds as many done
//!   items as the working state keeps (`CLOSED_ITEMS_KEPT`: the one done longest ago is
//!   retired); states move only as acknowledged or killed `set`s allow; at the end
//!   `abcd checklist --all --json` still lists every item ever acknowledged or shown;
//! - `abcd checklist render` prints a valid checklist, or the last-good fallback, or the one
//!   "nothing to show" line;
//! - no 8-character piece of any planted secret (fake tokens made at run time, offered to
//!   `add` and killed like the rest) is in any output or any file of the local tier or the
//!   home store.
//!
//! The kill delay is drawn from a seeded generator over [0, 1.2 × a typical add's
//! duration], the typical duration being measured first and again every few kills (the
//! upper quartile of the recent unkilled adds: fdatasync's latency is heavy-tailed, and an
//! add costs more as the checklist grows), so kills land in every phase of an add: process
//! start, lock, pre-sync, tail read, write, fdatasync, projections, last-good, exit. Each
//! kill is classified by what it left on disk before any reader runs. Now and then the lab
//! also plants a torn tail (a cut line or a run of NULs after the last line: what a power
//! cut leaves, and a SIGKILL practically cannot) to check that it is reported, tolerated,
//! and cut only with a byte-exact copy in quarantine/.
//!
//! Three tests: one writer (adds, planted-secret adds, `set --state done`); two writers on
//! one working copy, both killed by one signal to their process group; and the first add
//! of a fresh working copy, killed while it creates the journal.
//!
//! Quick mode (the `cargo test` default): 100 one-writer kills, 20 rounds in which both
//! writers die, 20 killed first adds. Full mode:
//! `ABCD_CRASH_LAB_KILLS=1000 cargo test --test crash_lab crash_lab:: -- --nocapture`: the pair rounds
//! default to a fifth of the kills and the first adds to a tenth
//! (`ABCD_CRASH_LAB_PAIR_KILLS`, `ABCD_CRASH_LAB_FIRST_KILLS` set them);
//! `ABCD_CRASH_LAB_SEED` replays a schedule (the timing still varies from run to run);
//! `ABCD_CRASH_LAB_BIN` runs a copied binary. Each test prints a summary (run with
//! `--nocapture` to see it). On a violation the lab stops, keeps the working copy, and
//! prints its path with the seed and the last steps.

use crate::common;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::repo::TestRepo;
use serde_json::Value;

const QUICK_KILLS: u64 = 100;
const QUICK_PAIR_KILLS: u64 = 20;
const QUICK_FIRST_KILLS: u64 = 20;
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const BASE32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const DIGITS: &[u8] = b"0123456789";

/// The binary under test: this build's, or `ABCD_CRASH_LAB_BIN` (a copy, for a long run
/// while the tree is rebuilt).
fn abcd_bin() -> PathBuf {
    std::env::var_os("ABCD_CRASH_LAB_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_abcd")), PathBuf::from)
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

fn kills_wanted() -> u64 {
    env_u64("ABCD_CRASH_LAB_KILLS").unwrap_or(QUICK_KILLS).max(1)
}

fn pair_kills_wanted() -> u64 {
    env_u64("ABCD_CRASH_LAB_PAIR_KILLS")
        .or_else(|| env_u64("ABCD_CRASH_LAB_KILLS").map(|k| (k / 5).max(QUICK_PAIR_KILLS)))
        .unwrap_or(QUICK_PAIR_KILLS)
        .max(1)
}

/// The schedule's seed: `ABCD_CRASH_LAB_SEED`, else the clock. Each test mixes in its own
/// salt, so one printed seed replays either test.
fn base_seed() -> u64 {
    env_u64("ABCD_CRASH_LAB_SEED").unwrap_or_else(|| {
        let nanos = abcd::clock::wall_now().as_nanosecond().max(0) as u64;
        nanos ^ (u64::from(std::process::id()) << 32)
    })
}

/// splitmix64: small, seeded, good enough to spread kill delays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }

    fn text(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n).map(|_| alphabet[self.below(alphabet.len() as u64) as usize] as char).collect()
    }
}

/// Every 8-byte window of every planted secret, with a bitmap in front of the set so that
/// scanning megabytes of journal per kill stays cheap.
struct SecretIndex {
    secrets: Vec<String>,
    windows: HashSet<u64>,
    bits: Vec<u64>,
}

const INDEX_BITS: u32 = 20;

fn window_slot(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - INDEX_BITS)) as usize
}

impl SecretIndex {
    fn new() -> SecretIndex {
        SecretIndex { secrets: Vec::new(), windows: HashSet::new(), bits: vec![0; 1 << (INDEX_BITS - 6)] }
    }

    fn add(&mut self, secret: &str) {
        assert!(secret.is_ascii() && secret.len() >= 8);
        for w in secret.as_bytes().windows(8) {
            let key = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            self.windows.insert(key);
            let slot = window_slot(key);
            self.bits[slot >> 6] |= 1 << (slot & 63);
        }
        self.secrets.push(secret.to_string());
    }

    /// The first window of a planted secret found in `hay`, and where.
    fn find(&self, hay: &[u8]) -> Option<(usize, String)> {
        let mut key = 0u64;
        for (i, &b) in hay.iter().enumerate() {
            key = (key >> 8) | (u64::from(b) << 56);
            if i < 7 {
                continue;
            }
            let slot = window_slot(key);
            if self.bits[slot >> 6] & (1 << (slot & 63)) != 0 && self.windows.contains(&key) {
                let at = i - 7;
                return Some((at, String::from_utf8_lossy(&hay[at..at + 8]).into_owned()));
            }
        }
        None
    }
}

#[derive(Clone, Debug)]
enum Op {
    Add {
        title: String,
    },
    /// An add carrying a fake secret in some field: must be refused, or killed.
    Secret {
        title: String,
        args: Vec<String>,
    },
    Set {
        id: String,
    },
}

impl Op {
    fn args(&self) -> Vec<String> {
        match self {
            Op::Add { title, .. } => vec!["checklist".into(), "add".into(), title.clone()],
            Op::Secret { args, .. } => args.clone(),
            Op::Set { id } => vec!["checklist".into(), "set".into(), id.clone(), "--state".into(), "done".into()],
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Op::Add { .. } => "add",
            Op::Secret { .. } => "secret add",
            Op::Set { .. } => "set --state done",
        }
    }
}

/// One process the lab started and (maybe) killed.
struct Ran {
    op: Op,
    delay: Duration,
    out: Output,
}

impl Ran {
    fn killed(&self) -> bool {
        self.out.status.signal() == Some(libc::SIGKILL)
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
}

/// What the files said right after a kill, before any reader could rewrite them.
#[derive(Debug, Default)]
struct RawState {
    /// None: no journal yet (a first add killed before it created one).
    head: Option<u64>,
    torn: bool,
    anchor: Option<u64>,
    state_json: Option<u64>,
    checklist_json: Option<u64>,
    last_good: Option<u64>,
}

/// A torn tail from the moment it is seen until an append moves it to quarantine/.
struct TornEpisode {
    planted: bool,
    bytes: Vec<u8>,
}

struct Lab {
    dir: Option<tempfile::TempDir>,
    root: PathBuf,
    home: PathBuf,
    label: &'static str,
    seed: u64,
    rng: Rng,
    step: u64,
    /// Every title an add was attempted with (each one unique).
    titles: HashSet<String>,
    /// Adds that exited 0 and printed their id: id → title.
    acked: BTreeMap<String, String>,
    /// Every item a list has shown: id → title. Once shown, always shown.
    seen: BTreeMap<String, String>,
    done_acked: HashSet<String>,
    done_maybe: HashSet<String>,
    seen_done: HashSet<String>,
    secrets: SecretIndex,
    /// The journal's head seq after the last check; None while there is no journal.
    head: Option<u64>,
    torn: Option<TornEpisode>,
    counts: BTreeMap<String, u64>,
    history: VecDeque<String>,
    add_ms: Vec<f64>,
}

impl Lab {
    fn new(label: &'static str, salt: u64) -> Lab {
        let seed = base_seed();
        let mut lab = Lab {
            dir: None,
            root: PathBuf::new(),
            home: PathBuf::new(),
            label,
            seed,
            rng: Rng(seed ^ salt),
            step: 0,
            titles: HashSet::new(),
            acked: BTreeMap::new(),
            seen: BTreeMap::new(),
            done_acked: HashSet::new(),
            done_maybe: HashSet::new(),
            seen_done: HashSet::new(),
            secrets: SecretIndex::new(),
            head: None,
            torn: None,
            counts: BTreeMap::new(),
            history: VecDeque::new(),
            add_ms: Vec::new(),
        };
        lab.fresh_working_copy();
        lab
    }

    /// A new managed working copy with its own home (`abcd init`, no journal yet); what
    /// the lab knew of the last one is forgotten, its counts carry on.
    fn fresh_working_copy(&mut self) {
        let TestRepo { dir, root, home } = TestRepo::folder();
        self.root = root;
        self.home = home;
        self.dir = Some(dir);
        self.titles.clear();
        self.acked.clear();
        self.seen.clear();
        self.done_acked.clear();
        self.done_maybe.clear();
        self.seen_done.clear();
        self.head = None;
        self.torn = None;
        let out = self.abcd(&["init"]);
        if !out.status.success() {
            self.fail(format!("abcd init failed: {}", text(&out)));
        }
    }

    fn bump(&mut self, what: impl Into<String>) {
        *self.counts.entry(what.into()).or_default() += 1;
    }

    fn count(&self, what: &str) -> u64 {
        self.counts.get(what).copied().unwrap_or(0)
    }

    fn command(&self, args: &[String]) -> Command {
        let mut c = Command::new(abcd_bin());
        c.args(args).current_dir(&self.root).env("ABCD_HOME", &self.home).env_remove("CLAUDE_CODE_SESSION_ID").env("NO_COLOR", "1");
        c
    }

    fn abcd(&self, args: &[&str]) -> Output {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        self.command(&args).stdin(Stdio::null()).output().expect("abcd runs")
    }

    fn tier(&self) -> PathBuf {
        self.root.join(".abcd/.work.local")
    }

    /// Stops the lab at the first violation, keeping the working copy for diagnosis.
    fn fail(&mut self, what: String) -> ! {
        let kept = self.dir.take().map(|d| d.keep());
        let history: Vec<&str> = self.history.iter().map(String::as_str).collect();
        panic!(
            "crash lab VIOLATION ({}, seed {:#018x}, step {}): {what}\nrecent steps:\n  {}\nworking copy kept at {}",
            self.label,
            self.seed,
            self.step,
            history.join("\n  "),
            kept.map_or("(gone)".into(), |p| p.display().to_string())
        );
    }

    fn note_step(&mut self, line: String) {
        if self.history.len() == 12 {
            self.history.pop_front();
        }
        self.history.push_back(line);
    }

    // ----- choosing what to run -------------------------------------------------------

    fn add_op(&mut self, title: String) -> Op {
        self.titles.insert(title.clone());
        Op::Add { title }
    }

    /// A realistic fake token, made at run time, in one of the fields the scanner guards.
    fn secret_op(&mut self) -> Op {
        let n = self.step;
        let title = format!("lab refused {n:05}");
        let (secret, args): (String, Vec<String>) = match self.rng.below(5) {
            0 | 1 => {
                let s = format!("ghp_{}", self.rng.text(ALNUM, 36));
                (s.clone(), vec!["checklist".into(), "add".into(), format!("rotate {s} before friday")])
            }
            2 => {
                let s = format!("glpat-{}", self.rng.text(ALNUM, 20));
                let promise = format!("CI green => push with {s}");
                (s, vec!["checklist".into(), "add".into(), title.clone(), "--promise".into(), promise])
            }
            3 => {
                let s = format!("AKIA{}", self.rng.text(BASE32, 16));
                (s.clone(), vec!["checklist".into(), "add".into(), title.clone(), "--owner-ref".into(), s])
            }
            _ => {
                let s = format!("xoxb-{}-{}-{}", self.rng.text(DIGITS, 10), self.rng.text(DIGITS, 13), self.rng.text(ALNUM, 24));
                (s.clone(), vec!["checklist".into(), "add".into(), format!("post to slack with {s}")])
            }
        };
        self.secrets.add(&secret);
        Op::Secret { title, args }
    }

    fn set_op(&mut self) -> Option<Op> {
        let open: Vec<&String> = self.acked.keys().filter(|id| !self.done_acked.contains(*id) && !self.done_maybe.contains(*id)).collect();
        if open.is_empty() {
            return None;
        }
        let id = open[self.rng.below(open.len() as u64) as usize].clone();
        Some(Op::Set { id })
    }

    // ----- running ---------------------------------------------------------------------

    fn spawn(&self, op: &Op, group: Option<i32>) -> std::io::Result<Child> {
        let mut c = self.command(&op.args());
        c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        if let Some(g) = group {
            c.process_group(g);
        }
        c.spawn()
    }

    /// Runs `op` to the end, unkilled; the time it took.
    fn run_whole(&mut self, op: Op) -> (Ran, Duration) {
        let start = Instant::now();
        let out = self.spawn(&op, None).expect("spawn abcd").wait_with_output().expect("wait for abcd");
        let took = start.elapsed();
        (Ran { op, delay: Duration::MAX, out }, took)
    }

    /// Starts `op` and sends it SIGKILL `delay` after the start (a no-op when it already
    /// exited: the child is not reaped until after the signal, so its pid is still ours).
    fn run_killed(&mut self, op: Op, delay: Duration) -> Ran {
        let start = Instant::now();
        let child = self.spawn(&op, None).expect("spawn abcd");
        sleep_until(start + delay);
        // SAFETY: plain syscall on the pid of our own unreaped child.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
        let out = child.wait_with_output().expect("wait for abcd");
        Ran { op, delay, out }
    }

    /// The typical duration of an add, from spawn to exit: the upper quartile of the last
    /// eight unkilled adds. An add costs more as the checklist grows, so it is measured
    /// again every few kills; and fdatasync's latency is heavy-tailed, so the median would
    /// leave the last phases (last-good, printing, exit) almost never hit.
    fn typical_add(&self) -> Duration {
        upper_quartile_of_last(&self.add_ms, 8)
    }

    fn calibrate(&mut self, n: usize) {
        for _ in 0..n {
            let title = format!("lab item {:05} whole", self.step);
            self.step += 1;
            let op = self.add_op(title);
            let before = self.head;
            let (ran, took) = self.run_whole(op);
            self.add_ms.push(took.as_secs_f64() * 1000.0);
            self.record(&ran);
            self.check(before, &[&ran], 1, false);
        }
    }

    /// Two writers on one working copy, started together; with `kill`, both are sent one
    /// SIGKILL through their process group that long after the start. Returns how long the
    /// round took until both were gone.
    fn pair_round(&mut self, kill: Option<Duration>) -> Duration {
        let a = self.add_op(format!("lab pair {:05} a", self.step));
        let b = if kill.is_some() && self.rng.percent(10) { self.secret_op() } else { self.add_op(format!("lab pair {:05} b", self.step)) };
        self.step += 1;
        let before = self.head;
        let start = Instant::now();
        let ca = self.spawn(&a, Some(0)).expect("spawn abcd");
        let group = ca.id() as libc::pid_t;
        // Both in one process group, so one kill(2) reaches both at the same instant.
        let (cb, grouped) = match self.spawn(&b, Some(group)) {
            Ok(c) => (c, true),
            Err(_) => (self.spawn(&b, Some(0)).expect("spawn abcd"), false),
        };
        if let Some(delay) = kill {
            sleep_until(start + delay);
            // SAFETY: plain syscalls on the process group and pid of our own unreaped children.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
                if !grouped {
                    libc::kill(cb.id() as libc::pid_t, libc::SIGKILL);
                }
            }
        }
        let (oa, ob) = (ca.wait_with_output().expect("wait for abcd"), cb.wait_with_output().expect("wait for abcd"));
        let took = start.elapsed();
        let delay = kill.unwrap_or(Duration::MAX);
        let (ra, rb) = (Ran { op: a, delay, out: oa }, Ran { op: b, delay, out: ob });
        self.record(&ra);
        self.record(&rb);
        if kill.is_some() {
            self.bump(match (ra.killed(), rb.killed()) {
                (true, true) => "rounds: both writers killed",
                (false, false) => "rounds: both exited before the kill",
                _ => "rounds: one killed, one exited before the kill",
            });
            if !grouped {
                self.bump("rounds: killed by two kill(2) calls (the group join failed)");
            }
        }
        self.check(before, &[&ra, &rb], 2, false);
        took
    }

    /// Books the outcome of one process: acknowledged, refused, killed.
    fn record(&mut self, ran: &Ran) {
        let killed = ran.killed();
        let status = ran.out.status;
        self.note_step(format!(
            "{} {:?} after {} µs: {}",
            ran.op.name(),
            match &ran.op {
                Op::Add { title, .. } | Op::Secret { title, .. } => title.clone(),
                Op::Set { id } => id.clone(),
            },
            if ran.delay == Duration::MAX { "∞".to_string() } else { ran.delay.as_micros().to_string() },
            if killed { "killed".to_string() } else { format!("{status}") }
        ));
        if killed {
            self.bump("kills landed");
        }
        match (&ran.op, killed, status.code()) {
            (Op::Add { title }, false, Some(0)) => {
                // A number nobody had: a killed add's number may be taken, never given twice.
                let printed = ran.stdout();
                let id = printed.trim().to_string();
                if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
                    self.fail(format!("add {title:?} exited 0 but printed {printed:?}, not a number"));
                }
                if let Some(other) = self.seen.get(&id).or(self.acked.get(&id)).filter(|t| *t != title) {
                    self.fail(format!("add {title:?} printed id {id:?}, which {other:?} already has"));
                }
                self.acked.insert(id, title.clone());
                self.bump("adds acknowledged");
            }
            (Op::Add { .. }, true, _) => {
                self.bump("adds killed");
                if !ran.out.stdout.is_empty() {
                    self.bump("adds killed after printing their id (not acknowledged)");
                }
            }
            (Op::Secret { .. }, false, Some(2)) => self.bump("secret adds refused (exit 2)"),
            (Op::Secret { .. }, true, _) => self.bump("secret adds killed"),
            (Op::Set { id }, false, Some(0)) => {
                self.done_acked.insert(id.clone());
                self.bump("sets acknowledged");
            }
            (Op::Set { id }, true, _) => {
                self.done_maybe.insert(id.clone());
                self.bump("sets killed");
            }
            (op, _, _) => {
                let op = op.name();
                self.fail(format!("{op} ended {status} unkilled: {}", text(&ran.out)))
            }
        }
    }

    // ----- torn tails -------------------------------------------------------------------

    fn quarantined(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        walk(&self.tier().join("quarantine"), &mut files);
        files
    }

    /// Leaves what a power cut leaves after the last line: part of a line, or NULs.
    fn plant_torn_tail(&mut self) {
        let path = self.tier().join("journal.jsonl");
        let bytes = std::fs::read(&path).expect("journal readable");
        let last = bytes[..bytes.len() - 1].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let line = &bytes[last..bytes.len() - 1];
        let tail = if self.rng.percent(50) {
            self.bump("torn tails planted: part of a line");
            line[..1 + self.rng.below(line.len() as u64 - 1) as usize].to_vec()
        } else {
            self.bump("torn tails planted: NUL bytes");
            vec![0u8; 1 + self.rng.below(600) as usize]
        };
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).expect("journal opens");
        std::io::Write::write_all(&mut f, &tail).expect("journal writable");
        self.torn = Some(TornEpisode { planted: true, bytes: tail.clone() });
        self.note_step(format!("planted a torn tail of {} bytes", tail.len()));
    }

    // ----- checking -----------------------------------------------------------------------

    fn seq_in(&self, name: &str) -> Option<u64> {
        let bytes = std::fs::read(self.tier().join(name)).ok()?;
        serde_json::from_slice::<Value>(&bytes).ok()?["journal"]["seq"].as_u64()
    }

    /// Whether the home store records which journal lives at this path (what `journal
    /// verify` uses to name a replaced journal).
    fn path_indexed(&self) -> bool {
        std::fs::read_dir(self.home.join("anchors/paths")).is_ok_and(|mut d| d.next().is_some())
    }

    fn anchor_seq(&self, journal_id: &str) -> Option<u64> {
        let record = std::fs::read_to_string(self.home.join("anchors").join(format!("{journal_id}.anchor"))).ok()?;
        record.split_whitespace().nth(1)?.parse().ok()
    }

    /// The checks after every kill. `ran` are the processes of this step (all dead now);
    /// `classify` names the phase a single killed process died in.
    fn check(&mut self, before: Option<u64>, ran: &[&Ran], max_new_events: u64, classify: bool) {
        let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
        for r in ran {
            outputs.push((format!("{} stdout", r.op.name()), r.out.stdout.clone()));
            outputs.push((format!("{} stderr", r.op.name()), r.out.stderr.clone()));
        }

        // 1. The chain, read-only, before anything rewrites a projection.
        let out = self.abcd(&["journal", "verify", "--json"]);
        outputs.push(("journal verify".into(), out.stdout.clone()));
        outputs.push(("journal verify stderr".into(), out.stderr.clone()));
        let raw = if out.status.code() == Some(2) && String::from_utf8_lossy(&out.stderr).contains("no journal at") {
            // Only a first add killed before it created the journal leaves none.
            if before.is_some() || !self.acked.is_empty() {
                self.fail(format!("the journal is gone: {}", text(&out)));
            }
            self.bump("verify: no journal yet");
            RawState::default()
        } else {
            let verify: Value = match serde_json::from_slice(&out.stdout) {
                Ok(v) if out.status.success() => v,
                _ => self.fail(format!("journal verify failed: {}", text(&out))),
            };
            let verdict = verify["verdict"]["state"].as_str().unwrap_or("?").to_string();
            let anchor = verify["anchor"]["state"].as_str().unwrap_or("?").to_string();
            if verify["ok"] != Value::Bool(true) || !["clean", "torn_tail"].contains(&verdict.as_str()) {
                self.fail(format!("journal verify is not ok: {verify}"));
            }
            if !["agrees", "absent"].contains(&anchor.as_str()) {
                self.fail(format!("the head anchor does not agree: {verify}"));
            }
            if anchor == "absent" {
                self.bump("verify: anchor absent");
            }
            let Some(head) = verify["head"]["seq"].as_u64() else { self.fail(format!("verify names no head: {verify}")) };
            // New events since the last check: at most one per process (after a genesis,
            // when this step created the journal).
            let (low, high) = before.map_or((0, max_new_events), |b| (b, b + max_new_events));
            if head < low || head > high {
                self.fail(format!("the journal head went from seq {before:?} to {head} (at most {max_new_events} new events expected)"));
            }
            let journal_id = verify["journal_id"].as_str().unwrap_or_default().to_string();
            let raw = RawState {
                head: Some(head),
                torn: verdict == "torn_tail",
                anchor: self.anchor_seq(&journal_id),
                state_json: self.seq_in("state.json"),
                checklist_json: self.seq_in("checklist.json"),
                last_good: self.seq_in("checklist.last-good.json"),
            };
            self.track_torn(&raw, &verify);
            raw
        };
        self.head = raw.head;
        if classify && let [r] = ran {
            self.classify(before, &raw, r);
        }

        // 2. The list: every acknowledged item, nothing unknown, nothing lost.
        let out = self.abcd(&["checklist", "--json"]);
        outputs.push(("checklist --json".into(), out.stdout.clone()));
        outputs.push(("checklist --json stderr".into(), out.stderr.clone()));
        let list: Value = match serde_json::from_slice(&out.stdout) {
            Ok(v) if out.status.success() => v,
            _ => self.fail(format!("abcd checklist --json failed: {}", text(&out))),
        };
        let (open, done) = self.check_list(&list);

        // 3. The render: a valid checklist, last-good, or the one "nothing" line.
        let out = self.abcd(&["checklist", "render"]);
        outputs.push(("checklist render".into(), out.stdout.clone()));
        outputs.push(("checklist render stderr".into(), out.stderr.clone()));
        if !out.status.success() {
            self.fail(format!("abcd checklist render failed: {}", text(&out)));
        }
        self.check_render(&String::from_utf8_lossy(&out.stdout), open, done);

        // 4. No planted secret anywhere: outputs, every file of the tier and the home.
        for (what, bytes) in &outputs {
            if let Some((at, piece)) = self.secrets.find(bytes) {
                self.fail(format!("{what} shows {piece:?} of a planted secret at byte {at}"));
            }
        }
        let mut files = Vec::new();
        walk(&self.root.join(".abcd"), &mut files);
        walk(&self.home, &mut files);
        for path in files {
            let Ok(bytes) = std::fs::read(&path) else { continue };
            if let Some((at, piece)) = self.secrets.find(&bytes) {
                self.fail(format!("{} holds {piece:?} of a planted secret at byte {at}", path.display()));
            }
        }
    }

    /// A torn tail is reported (never as corruption) until the next append cuts it, and
    /// is cut only with a byte-exact copy in quarantine/.
    fn track_torn(&mut self, raw: &RawState, verify: &Value) {
        match (&self.torn, raw.torn) {
            (None, true) => {
                let offset = verify["verdict"]["offset"].as_u64().unwrap_or(0) as usize;
                let journal = std::fs::read(self.tier().join("journal.jsonl")).unwrap_or_default();
                let bytes = journal.get(offset..).unwrap_or_default().to_vec();
                self.bump("torn tails left by a kill");
                self.bump("verify: reported a torn tail (ok)");
                self.torn = Some(TornEpisode { planted: false, bytes });
            }
            (Some(_), true) => self.bump("verify: reported a torn tail (ok)"),
            (Some(ep), false) => {
                let copied = self.quarantined().iter().any(|q| std::fs::read(q).is_ok_and(|b| b == ep.bytes));
                if !copied {
                    self.fail(format!("a torn tail of {} bytes was cut without a copy in quarantine/", ep.bytes.len()));
                }
                let what = if ep.planted { "torn tails recovered (planted)" } else { "torn tails recovered (from a kill)" };
                self.bump(what);
                self.torn = None;
            }
            (None, false) => {}
        }
    }

    /// Names the phase a single process died in from what it left on disk.
    fn classify(&mut self, before: Option<u64>, raw: &RawState, ran: &Ran) {
        let op = ran.op.name();
        if !ran.killed() {
            let outcome = if ran.out.status.code() == Some(0) { "exited 0 before the kill" } else { "exited 2 before the kill" };
            self.bump(format!("{op}: {outcome}"));
            return;
        }
        let Some(head) = raw.head else {
            let leftover =
                std::fs::read_dir(self.tier()).map_or(0, |d| d.flatten().filter(|e| e.file_name() != "journal.jsonl.lock").count());
            let phase =
                if leftover == 0 { "killed before creating the journal" } else { "killed while creating the journal (a temp file left)" };
            self.bump(format!("{op}: {phase}"));
            return;
        };
        let phase = if before.is_none() && head == 0 {
            "killed after creating the journal, before its first event"
        } else if Some(head) == before {
            if raw.torn && self.torn.as_ref().is_some_and(|e| !e.planted) {
                "killed mid-write (torn line)"
            } else {
                "killed before its line was written (start, lock, pre-sync, tail read)"
            }
        } else if raw.anchor.is_none_or(|a| a < head) {
            "killed after the write, before the anchor (in or just after fdatasync)"
        } else if raw.state_json.is_none_or(|s| s < head) {
            "killed after the sync, before state.json"
        } else if raw.checklist_json.is_none_or(|s| s < head) {
            "killed between state.json and checklist.json"
        } else if matches!(ran.op, Op::Secret { .. }) {
            "killed after the refusal's projections, before exit"
        } else if raw.last_good.is_none_or(|s| s < head) {
            "killed after the projections, before last-good"
        } else if ran.out.stdout.is_empty() {
            "killed after last-good, before printing"
        } else {
            "killed after printing, before exit"
        };
        self.bump(format!("{op}: {phase}"));
    }

    /// Checks the list against what the lab knows; returns (open, done) counts.
    fn check_list(&mut self, list: &Value) -> (usize, usize) {
        if list["notes"].as_array().is_some_and(|n| !n.is_empty()) {
            self.bump("list: with notes");
            let notes = list["notes"].to_string();
            if !notes.contains("could not be read") {
                self.fail(format!("the list carries unexpected notes: {notes}"));
            }
        }
        let Some(items) = list["items"].as_array() else { self.fail(format!("the list has no items array: {list}")) };
        let mut shown: BTreeMap<String, (String, String)> = BTreeMap::new();
        for item in items {
            let (Some(id), Some(title), Some(state)) = (item["id"].as_str(), item["title"].as_str(), item["state"].as_str()) else {
                self.fail(format!("a listed item lacks id, title or state: {item}"));
            };
            if !self.titles.contains(title) {
                self.fail(format!("the list shows an item nobody added: {item}"));
            }
            if self.seen.get(id).is_some_and(|t| t != title) {
                self.fail(format!("item {id:?} showed another title before: {item}"));
            }
            if shown.insert(id.to_string(), (title.to_string(), state.to_string())).is_some() {
                self.fail(format!("the list shows id {id:?} twice"));
            }
        }
        // Numbers count up in the order items were added, whatever was killed between.
        let numbers: Vec<u64> = items.iter().filter_map(|i| i["id"].as_str()?.parse().ok()).collect();
        if numbers.len() != items.len() || numbers.windows(2).any(|w| w[0] >= w[1]) {
            self.fail(format!("the ids are not numbers rising in the order of the adds: {numbers:?}"));
        }
        // A done item may have been retired from the working state, once it holds as many
        // done items as it keeps; an open one never is.
        let bound_full = shown.values().filter(|(_, state)| state == "done").count() == abcd::checklist::item::CLOSED_ITEMS_KEPT;
        let may_be_retired =
            |lab: &Lab, id: &str| bound_full && (lab.done_acked.contains(id) || lab.done_maybe.contains(id) || lab.seen_done.contains(id));
        for (id, title) in self.acked.clone() {
            match shown.get(&id) {
                None if may_be_retired(self, &id) => self.bump("list: done items retired from the working state"),
                None => self.fail(format!("acknowledged item {id:?} ({title:?}) is missing from the list")),
                Some((t, _)) if *t != title => self.fail(format!("acknowledged item {id:?} shows title {t:?}, not {title:?}")),
                Some(_) => {}
            }
        }
        for (id, title) in self.seen.clone() {
            if !shown.contains_key(&id) && !may_be_retired(self, &id) {
                self.fail(format!("item {id:?} ({title:?}) was shown before and is gone now"));
            }
        }
        let (mut open, mut done) = (0, 0);
        for (id, (title, state)) in &shown {
            match state.as_str() {
                "working" => {
                    open += 1;
                    if self.done_acked.contains(id) || self.seen_done.contains(id) {
                        self.fail(format!("item {id:?} was done and shows working again"));
                    }
                }
                "done" => {
                    done += 1;
                    if !self.done_acked.contains(id) && !self.done_maybe.contains(id) {
                        self.fail(format!("item {id:?} is done but no set touched it"));
                    }
                    self.seen_done.insert(id.clone());
                }
                other => self.fail(format!("item {id:?} is in state {other:?}")),
            }
            if !self.acked.contains_key(id) && self.seen.insert(id.clone(), title.clone()).is_none() {
                self.bump("unacknowledged adds present after their kill");
            }
            self.seen.insert(id.clone(), title.clone());
        }
        (open, done)
    }

    /// `--all` lists every item ever acknowledged or shown, under its title, and marks as
    /// retired only done ones.
    fn check_all(&mut self) {
        let out = self.abcd(&["checklist", "--all", "--json"]);
        let all: Value = match serde_json::from_slice(&out.stdout) {
            Ok(v) if out.status.success() => v,
            _ => self.fail(format!("abcd checklist --all --json failed: {}", text(&out))),
        };
        let mut listed: BTreeMap<String, String> = BTreeMap::new();
        for item in all["items"].as_array().cloned().unwrap_or_default() {
            let (Some(id), Some(title)) = (item["id"].as_str(), item["title"].as_str()) else {
                self.fail(format!("--all lists an item without id or title: {item}"));
            };
            if item["retired"] == true && item["state"] != "done" {
                self.fail(format!("--all lists an item retired while not done: {item}"));
            }
            listed.insert(id.to_string(), title.to_string());
        }
        for (id, title) in self.acked.clone().into_iter().chain(self.seen.clone()) {
            if listed.get(&id) != Some(&title) {
                self.fail(format!("item {id:?} ({title:?}) is not in `abcd checklist --all`"));
            }
        }
        *self.counts.entry("items retired from the working state at the end".into()).or_default() =
            all["retired_total"].as_u64().unwrap_or(0);
    }

    fn check_render(&mut self, shown: &str, open: usize, done: usize) {
        let mut lines = shown.lines();
        if lines.next() != Some(abcd::checklist::render::HEADER) {
            self.fail(format!("the render has no checklist header: {shown:?}"));
        }
        let (mut last_good, mut nothing) = (false, false);
        let (mut h_open, mut h_done) = (0, 0);
        let mut rest = Vec::new();
        let count = |line: &str, label: &str| line.strip_prefix(label)?.strip_suffix(")")?.parse::<usize>().ok();
        for line in lines {
            if let Some(note) = line.strip_prefix("! ") {
                if note.contains("showing the last good checklist") {
                    last_good = true;
                } else if note.contains("nothing to show") {
                    nothing = true;
                } else {
                    self.fail(format!("the render carries an unexpected note: {line:?}"));
                }
            } else if let Some(n) = line.strip_suffix(':').and_then(|l| count(l, "working (")) {
                h_open = n;
            } else if let Some(n) = count(line, "done (") {
                h_done = n;
                rest.push(line);
            } else if let Some((id, title)) =
                line.split_once(": ").filter(|(id, _)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
            {
                if self.seen.get(id).map(String::as_str) != Some(title) {
                    self.fail(format!("the render shows an item the list does not know: {line:?}"));
                }
                rest.push(line);
            } else if line == "(no open items)" || (line.starts_with('(') && line.ends_with("not shown; run `abcd checklist` to see them)"))
            {
                rest.push(line);
            } else {
                self.fail(format!("the render has a line that belongs to no checklist: {line:?}"));
            }
        }
        if nothing {
            self.bump("render: the one nothing line");
            if (h_open, h_done) != (0, 0) || rest != ["(no open items)"] || last_good {
                self.fail(format!("the nothing render shows more than its line: {shown:?}"));
            }
        } else if last_good {
            self.bump("render: last-good fallback");
        } else if (h_open, h_done) != (open, done) {
            self.fail(format!("the render counts {h_open} open and {h_done} done; the list has {open} and {done}: {shown:?}"));
        }
    }

    /// The last word: one more unkilled add, a clean verify, every torn tail recovered,
    /// and `abcd replay` agreeing with every projection on disk.
    fn finish(&mut self) {
        let title = format!("lab item {:05} final", self.step);
        let op = self.add_op(title);
        let before = self.head;
        let (ran, _) = self.run_whole(op);
        self.record(&ran);
        self.check(before, &[&ran], 1, false);
        if self.torn.is_some() {
            self.fail("a torn tail is still there after a clean add".into());
        }
        let out = self.abcd(&["replay"]);
        if !out.status.success() {
            self.fail(format!("abcd replay does not agree: {}", text(&out)));
        }
        self.check_all();
        if let Some((_, piece)) = self.secrets.find(&out.stdout) {
            self.fail(format!("replay shows {piece:?} of a planted secret"));
        }
        let litter = std::fs::read_dir(self.tier())
            .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().contains(".tmp-")).count())
            .unwrap_or(0);
        *self.counts.entry("temp files left in the local tier by killed writers".into()).or_default() = litter as u64;
        *self.counts.entry("quarantine files".into()).or_default() = self.quarantined().len() as u64;
    }

    fn planted_torn(&self) -> u64 {
        self.count("torn tails planted: part of a line") + self.count("torn tails planted: NUL bytes")
    }

    fn summary(&self, started: Instant, headline: String) -> String {
        let mut s = format!(
            "crash lab ({}, seed {:#018x}): {headline}, acknowledged adds={}, unacknowledged-but-present={}, torn tails={} ({} left by kills, {} planted) recovered={}, secrets planted={}, items at the end={}, journal head seq={}, typical add {:.1} to {:.1} ms, took {:.1} s, violations=0",
            self.label,
            self.seed,
            self.count("adds acknowledged"),
            self.count("unacknowledged adds present after their kill"),
            self.count("torn tails left by a kill") + self.planted_torn(),
            self.count("torn tails left by a kill"),
            self.planted_torn(),
            self.count("torn tails recovered (planted)") + self.count("torn tails recovered (from a kill)"),
            self.secrets.secrets.len(),
            self.seen.len(),
            self.head.map_or("none".to_string(), |h| h.to_string()),
            self.add_ms.iter().copied().fold(f64::INFINITY, f64::min),
            self.add_ms.iter().copied().fold(0.0, f64::max),
            started.elapsed().as_secs_f64(),
        );
        for (k, v) in &self.counts {
            s += &format!("\n  {v:>6}  {k}");
        }
        s
    }
}

fn sleep_until(when: Instant) {
    let now = Instant::now();
    if when > now {
        std::thread::sleep(when - now);
    }
}

fn text(out: &Output) -> String {
    format!("{}{}{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn upper_quartile_of_last(ms: &[f64], n: usize) -> Duration {
    let mut v: Vec<f64> = ms.iter().rev().take(n).copied().collect();
    v.sort_by(f64::total_cmp);
    Duration::from_secs_f64(v[v.len() * 3 / 4] / 1000.0)
}

fn delay_over(rng: &mut Rng, typical: Duration) -> Duration {
    Duration::from_micros(rng.below((typical.as_micros() as u64 * 6 / 5).max(1)))
}

#[test]
fn one_writer_killed_at_random_moments_never_loses_an_acknowledged_item_or_shows_a_secret() {
    let started = Instant::now();
    let wanted = kills_wanted();
    let mut lab = Lab::new("one writer", 0x5151);
    lab.calibrate(8);
    let mut buckets = [0u64; 6];
    let mut attempts = 0u64;
    while lab.count("kills landed") < wanted {
        attempts += 1;
        if attempts > wanted * 5 + 100 {
            lab.fail(format!("only {} of {wanted} kills landed in {attempts} attempts", lab.count("kills landed")));
        }
        if attempts.is_multiple_of(20) {
            lab.calibrate(1);
        }
        if lab.torn.is_none() && lab.rng.percent(3) {
            lab.plant_torn_tail();
        }
        let roll = lab.rng.below(100);
        let op = match roll {
            0..12 => lab.secret_op(),
            12..18 => match lab.set_op() {
                Some(op) => op,
                None => lab.add_op(format!("lab item {:05}", lab.step)),
            },
            _ => lab.add_op(format!("lab item {:05}", lab.step)),
        };
        lab.step += 1;
        let typical = lab.typical_add();
        let delay = delay_over(&mut lab.rng, typical);
        buckets[((delay.as_secs_f64() / typical.as_secs_f64() * 5.0) as usize).min(5)] += 1;
        let before = lab.head;
        let ran = lab.run_killed(op, delay);
        lab.record(&ran);
        lab.check(before, &[&ran], 1, true);
    }
    lab.finish();
    for (i, n) in buckets.iter().enumerate() {
        *lab.counts.entry(format!("kill delay {:.1}-{:.1} × typical add", i as f64 * 0.2, (i + 1) as f64 * 0.2)).or_default() = *n;
    }
    let headline = format!("kills={} of {attempts} attempts", lab.count("kills landed"));
    println!("{}", lab.summary(started, headline));
}

#[test]
fn two_writers_killed_at_the_same_instant_never_lose_an_acknowledged_item() {
    let started = Instant::now();
    let wanted = pair_kills_wanted();
    let mut lab = Lab::new("two writers", 0x2222);
    lab.calibrate(3);
    // A typical pair: both started together, until both exited; measured again every few
    // rounds, since an add costs more as the checklist grows.
    let mut pair_ms = Vec::new();
    for _ in 0..8 {
        pair_ms.push(lab.pair_round(None).as_secs_f64() * 1000.0);
    }
    let mut rounds = 0u64;
    while lab.count("rounds: both writers killed") < wanted {
        rounds += 1;
        if rounds > wanted * 8 + 100 {
            lab.fail(format!("only {} of {wanted} double kills in {rounds} rounds", lab.count("rounds: both writers killed")));
        }
        if rounds.is_multiple_of(20) {
            pair_ms.push(lab.pair_round(None).as_secs_f64() * 1000.0);
        }
        let delay = delay_over(&mut lab.rng, upper_quartile_of_last(&pair_ms, 8));
        lab.pair_round(Some(delay));
    }
    lab.finish();
    let headline = format!(
        "double kills={} in {rounds} rounds (typical pair {:.1} to {:.1} ms), kills={}",
        lab.count("rounds: both writers killed"),
        pair_ms.iter().copied().fold(f64::INFINITY, f64::min),
        pair_ms.iter().copied().fold(0.0, f64::max),
        lab.count("kills landed")
    );
    println!("{}", lab.summary(started, headline));
}

fn first_kills_wanted() -> u64 {
    env_u64("ABCD_CRASH_LAB_FIRST_KILLS")
        .or_else(|| env_u64("ABCD_CRASH_LAB_KILLS").map(|k| (k / 10).max(QUICK_FIRST_KILLS)))
        .unwrap_or(QUICK_FIRST_KILLS)
        .max(1)
}

#[test]
fn the_first_add_killed_while_it_creates_the_journal_leaves_none_or_a_whole_one() {
    let started = Instant::now();
    let wanted = first_kills_wanted();
    let mut lab = Lab::new("first add", 0xf1f1);
    // A typical first add: it also creates the journal (genesis synced, renamed, folder synced).
    let mut first_ms = Vec::new();
    let mut attempts = 0u64;
    while lab.count("kills landed") < wanted {
        attempts += 1;
        if attempts > wanted * 5 + 100 {
            lab.fail(format!("only {} of {wanted} kills landed in {attempts} attempts", lab.count("kills landed")));
        }
        let measure = first_ms.len() < 8 || attempts.is_multiple_of(10);
        lab.fresh_working_copy();
        let op = lab.add_op(format!("lab first {:05}", lab.step));
        lab.step += 1;
        let ran = if measure {
            let (ran, took) = lab.run_whole(op);
            first_ms.push(took.as_secs_f64() * 1000.0);
            ran
        } else {
            let delay = delay_over(&mut lab.rng, upper_quartile_of_last(&first_ms, 8));
            lab.run_killed(op, delay)
        };
        lab.record(&ran);
        lab.check(None, &[&ran], 1, !measure);
        let unindexed = lab.head.is_some() && !lab.path_indexed();
        if unindexed {
            lab.bump("journals left without their path-index record (home/anchors/paths)");
        }
        // Whatever the kill left, the working copy goes on: the next add is acknowledged.
        lab.calibrate(1);
        if unindexed && !lab.path_indexed() {
            lab.bump("... still without it after the next acknowledged add");
        }
    }
    let headline = format!(
        "kills={} of {attempts} first adds (typical first add {:.1} to {:.1} ms)",
        lab.count("kills landed"),
        first_ms.iter().copied().fold(f64::INFINITY, f64::min),
        first_ms.iter().copied().fold(0.0, f64::max)
    );
    lab.finish();
    println!("{}", lab.summary(started, headline));
}

/// The launches a lane agent logs: `start PID` when it begins and `end PID` when it is done.
const LAUNCH_AGENT: &str = "echo \"start $$\" >> \"$LAB_AGENTS\"; sleep 0.2; echo \"end $$\" >> \"$LAB_AGENTS\"; echo done > R";

/// Issue 32: `abcd launch` killed with SIGKILL at random moments, and at the two named
/// points between its locked decision and the agent's start (right after the intent,
/// right after the watcher starts). Never two agents of the lane at once; every agent
/// that ran has its `launch.intended` and `launch.started` on the record; after every
/// kill the lane can launch again. Quick mode: 30 kills; `ABCD_CRASH_LAB_LAUNCH_KILLS`
/// sets them.
#[test]
fn a_launch_killed_at_any_step_never_leaves_two_agents_or_an_unrecorded_one() {
    let wanted = env_u64("ABCD_CRASH_LAB_LAUNCH_KILLS").unwrap_or(30);
    let mut rng = Rng(base_seed() ^ 0x1a0c);
    let repo = TestRepo::new();
    let agents = repo.dir.path().join("agents.log");
    let abcd = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = Command::new(abcd_bin());
        c.args(args).current_dir(&repo.root).env("ABCD_HOME", &repo.home).env("LAB_AGENTS", &agents).env_remove("CLAUDE_CODE_SESSION_ID");
        for (k, v) in env {
            c.env(k, v);
        }
        c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        c
    };
    assert!(abcd(&["init"], &[]).output().unwrap().status.success());
    let mut driver = Command::new("sleep").arg("600").spawn().unwrap();
    let pid = driver.id().to_string();
    assert!(abcd(&["run", "start", "r", "--lane", "b", "--driver-pid", &pid], &[]).output().unwrap().status.success());
    let launch = ["launch", "--run", "r", "--lane", "b", "--role", "agent", "--receipt", "R", "--", "sh", "-c", LAUNCH_AGENT];
    let lane = || -> Value {
        let out = abcd(&["resume", "--json"], &[]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
        v["runs"][0]["lanes"][0].clone()
    };
    // Waits until no agent of the lane runs or starts, collecting a receipt that waits.
    let settle = || {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < deadline, "the lane never settled: {}", lane());
            let l = lane();
            let stage = l["stage"].as_str().unwrap_or_default().to_string();
            if l["receipt_waiting"] == true {
                assert!(abcd(&["collect", "--run", "r", "--lane", "b"], &[]).output().unwrap().status.success());
            } else if l["agent_alive"] != true && !stage.contains("starting") {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    // A typical launch, whole.
    let mut typical = Vec::new();
    for _ in 0..4 {
        settle();
        let start = Instant::now();
        let out = abcd(&launch, &[]).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        typical.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    let typical = upper_quartile_of_last(&typical, 4);
    let mut landed = 0;
    for n in 0..wanted {
        settle();
        let seam = match n % 5 {
            0 => Some("ABCD_TEST_KILL_AFTER_INTENT"),
            1 => Some("ABCD_TEST_KILL_AFTER_WATCHER"),
            _ => None,
        };
        let out = match seam {
            Some(var) => abcd(&launch, &[(var, "1")]).output().unwrap(),
            None => {
                let child = abcd(&launch, &[]).spawn().unwrap();
                std::thread::sleep(delay_over(&mut rng, typical));
                // SAFETY: plain syscall on the pid of our own unreaped child.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
                child.wait_with_output().unwrap()
            }
        };
        if out.status.signal() == Some(libc::SIGKILL) {
            landed += 1;
        }
        // After any kill the lane launches again (an abandoned start is settled by it).
        settle();
        let again = abcd(&launch, &[]).output().unwrap();
        assert!(again.status.success(), "kill {n}: the lane cannot launch again: {}", text(&again));
    }
    settle();
    // Never two agents at once: the log's starts and ends alternate.
    let log = std::fs::read_to_string(&agents).unwrap();
    let mut running: Option<&str> = None;
    let mut ran = HashSet::new();
    for line in log.lines() {
        match line.split_once(' ') {
            Some(("start", pid)) => {
                assert!(running.is_none(), "two agents at once ({running:?} and {pid}):\n{log}");
                running = Some(pid);
                ran.insert(pid.to_string());
            }
            Some(("end", pid)) => {
                assert_eq!(running, Some(pid), "{log}");
                running = None;
            }
            _ => panic!("bad line {line:?}"),
        }
    }
    // Every agent that ran is on the record, started by a launch intended before it.
    let journal = std::fs::read_to_string(repo.root.join(".abcd/.work.local/journal.jsonl")).unwrap();
    let events: Vec<Value> = journal.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let intended: HashSet<u64> =
        events.iter().filter(|e| e["kind"] == "launch.intended").filter_map(|e| e["data"]["launch"].as_u64()).collect();
    let started: BTreeMap<String, u64> = events
        .iter()
        .filter(|e| e["kind"] == "launch.started")
        .map(|e| (e["data"]["process"]["pid"].to_string(), e["data"]["launch"].as_u64().unwrap()))
        .collect();
    for pid in &ran {
        let launch = started.get(pid).unwrap_or_else(|| panic!("agent {pid} ran without launch.started:\n{journal}"));
        assert!(intended.contains(launch), "launch {launch} started without launch.intended");
    }
    let _ = driver.kill();
    let _ = driver.wait();
    println!("launch crash lab: {landed} of {wanted} launches killed, {} agents ran, never two at once", ran.len());
    assert!(landed >= wanted / 2, "too few kills landed: {landed} of {wanted}");
}
