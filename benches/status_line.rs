//! The status line's cost (issue 35): `abcd status-line` (the release binary, spawned with
//! the host's status-line payload on stdin, as the host runs it on every refresh) in a
//! working copy of 20 open items while away (1a) and in one of 2,000 open items while away
//! (1b), each against a trivial process: this bench's own binary re-executed as
//! `abcd-bench-helper exit`, which starts and exits (a Rust binary of the same kind and
//! size, dynamically linked the same way, as benchmark 5 of `benches/journal.rs` uses; a
//! C `true` is smaller than any Rust binary's start, and is reported for context).
//!
//! Each round runs the contenders once each, in an order rotating with the round; a row's
//! result is the median of the per-round ratios, of wall time (what the person waits) and
//! of CPU time (user + system, from `wait4`: on a loaded, shared machine the wall time is
//! mostly waiting for a core, which CPU time leaves out). Every status-line run is checked: it
//! prints the away line with the plan's owed count and nothing on stderr.
//!
//! `cargo bench --bench status_line` runs the full sizes (15 rounds). Run without
//! `--bench` (as `cargo test --all-targets` does) it runs a smoke mode with tiny sizes.

mod common;
#[path = "../tests/common/status_line_payload.rs"]
mod status_line_payload;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use common::{
    Row, Target, abcd_bin, assert_succeeded, install_copy, installed, median, ms, print_report, true_bin, verify_clean,
    write_ignoring_closed,
};
use status_line_payload::payload;

/// First argument that makes this bench the trivial process: it exits at once.
const HELPER_ARG: &str = "abcd-bench-helper";
/// Git as this bench runs it: no user or system configuration of this machine.
const GIT_ENV: [(&str, &str); 2] = [("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1")];

struct Config {
    full: bool,
    small_open: usize,
    large_open: usize,
    rounds: usize,
}

impl Config {
    fn from_env() -> Config {
        let full = std::env::args().any(|a| a == "--bench");
        if full {
            Config { full, small_open: 20, large_open: 2_000, rounds: 15 }
        } else {
            Config { full, small_open: 3, large_open: 12, rounds: 2 }
        }
    }
}

fn main() {
    if std::env::args_os().nth(1).is_some_and(|a| a == HELPER_ARG) {
        std::process::exit(0);
    }
    let cfg = Config::from_env();
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&base).expect("creating the crate's target/tmp");
    let tmp = tempfile::Builder::new().prefix("abcd-bench-status-line-").tempdir_in(&base).expect("a temp dir");
    let dir = tmp.path().canonicalize().expect("canonical temp dir");
    let home = dir.join("home");
    let exe = install_copy(&dir);
    println!("abcd: {} (a copy of {}, made as `cargo install` makes it); temp dir {}", exe.display(), abcd_bin().display(), dir.display());

    let t = Instant::now();
    let small = dir.join("small");
    let large = dir.join("large");
    away_copy(&small, &home, cfg.small_open);
    away_copy(&large, &home, cfg.large_open);
    println!("built both working copies through the CLI in {:.1} s", t.elapsed().as_secs_f64());

    let (small_payload, large_payload) = (payload(&small), payload(&large));
    let line_small = || status_line(&small, &home, &small_payload, cfg.small_open);
    let line_large = || status_line(&large, &home, &large_payload, cfg.large_open);
    let helper = || trivial(&mut helper_cmd(&small), &small_payload);
    let c_true = || trivial(&mut Command::new(true_bin()), &small_payload);
    // Untimed: one of each, to warm the binaries, the page cache and the projections.
    line_small();
    line_large();
    helper();
    c_true();
    let mut took: Vec<Vec<Took>> = vec![Vec::new(); 4];
    for round in 0..cfg.rounds {
        let order: Vec<usize> = (0..4).map(|k| (round + k) % 4).collect();
        for k in order {
            let t = match k {
                0 => line_small(),
                1 => line_large(),
                2 => helper(),
                _ => c_true(),
            };
            took[k].push(t);
        }
    }
    let wall = |k: usize| took[k].iter().map(|t| t.wall).collect::<Vec<_>>();
    let cpu = |k: usize| took[k].iter().map(|t| t.cpu).collect::<Vec<_>>();
    let ratios = |xs: Vec<f64>, ys: Vec<f64>| xs.iter().zip(&ys).map(|(x, y)| x / y).collect::<Vec<f64>>();
    let [s, l, h, c] = [0, 1, 2, 3].map(|k| median(&wall(k)));
    let [sc, lc, hc] = [0, 1, 2].map(|k| median(&cpu(k)));
    let row = |name: String, contenders: String, label: &str, ratios: Vec<f64>, target: Target| Row {
        name,
        contenders,
        ratio_label: label.into(),
        ratios,
        target,
    };
    let rows = vec![
        row(
            format!("1a. `abcd status-line`, away, {} open items, vs a trivial process (wall)", cfg.small_open),
            format!("`abcd status-line` {} vs `{HELPER_ARG} exit` {}", ms(s), ms(h)),
            "abcd/trivial latency",
            ratios(wall(0), wall(2)),
            Target::AtMost(2.0),
        ),
        row(
            format!("1b. `abcd status-line`, away, {} open items, vs a trivial process (wall)", cfg.large_open),
            format!("`abcd status-line` {} vs `{HELPER_ARG} exit` {}", ms(l), ms(h)),
            "abcd/trivial latency",
            ratios(wall(1), wall(2)),
            Target::AtMost(2.0),
        ),
        row(
            format!("1c. the same as 1a in CPU time (user + system, `wait4`), {} open items", cfg.small_open),
            format!("`abcd status-line` {} vs `{HELPER_ARG} exit` {}", ms(sc), ms(hc)),
            "abcd/trivial CPU",
            ratios(cpu(0), cpu(2)),
            Target::AtMost(2.0),
        ),
        row(
            format!("1d. the same as 1b in CPU time (user + system, `wait4`), {} open items", cfg.large_open),
            format!("`abcd status-line` {} vs `{HELPER_ARG} exit` {}", ms(lc), ms(hc)),
            "abcd/trivial CPU",
            ratios(cpu(1), cpu(2)),
            Target::AtMost(2.0),
        ),
        row(
            format!("1e. `abcd status-line`, away, {} open items, vs `{}` (wall)", cfg.small_open, true_bin().display()),
            format!("`abcd status-line` {} vs `{}` {}", ms(s), true_bin().display(), ms(c)),
            "abcd/true latency",
            ratios(wall(0), wall(3)),
            Target::Context,
        ),
    ];
    let note = format!(
        "medians of {} rounds, one run of each contender per round, the order rotating: status line {} items {}, {} items {}; trivial process {}; `{}` {}",
        cfg.rounds,
        cfg.small_open,
        ms(s),
        cfg.large_open,
        ms(l),
        ms(h),
        true_bin().display(),
        ms(c)
    );
    for wc in [&small, &large] {
        verify_clean(&wc.join(abcd::places::LOCAL_TIER).join(abcd::places::JOURNAL_FILE), &home);
    }
    print_report(&rows, cfg.full, &[note]);
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").args(args).current_dir(dir).envs(GIT_ENV).output().expect("running git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn abcd(wc: &Path, home: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new(installed());
    cmd.args(args)
        .current_dir(wc)
        .env("ABCD_HOME", home)
        .env("HOME", home)
        .env("TZ", "UTC")
        .envs(GIT_ENV)
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .env_remove("CODEX_TOOL_CALL_ID");
    let out = cmd.output().expect("abcd runs");
    assert_succeeded(&cmd, &out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A managed working copy with `open` working items, its person away for 8 hours.
fn away_copy(wc: &Path, home: &Path, open: usize) {
    std::fs::create_dir_all(wc).expect("a working copy");
    git(wc, &["init", "-q", "-b", "main"]);
    git(wc, &["-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "--allow-empty", "-m", "root"]);
    abcd(wc, home, &["init"]);
    for i in 0..open {
        abcd(wc, home, &["checklist", "add", &format!("Item {i} of the bench's plan, a title of a usual length")]);
    }
    abcd(wc, home, &["mode", "autonomous", "--until", "+8h"]);
}

/// One run's wall time and CPU time (user + system, `wait4`'s rusage of that child alone).
#[derive(Clone, Copy)]
struct Took {
    wall: f64,
    cpu: f64,
}

/// Spawns `cmd` with `stdin` written to it and reaps it with `wait4`; what it took and its
/// output. Its stdout and stderr go to files, so the reaping is this function's alone.
#[allow(clippy::zombie_processes)] // reaped by wait4 below, not by Child::wait
fn timed(cmd: &mut Command, stdin: &[u8]) -> (Took, std::process::Output) {
    let (out_file, err_file) = (tempfile::tempfile().expect("a temp file"), tempfile::tempfile().expect("a temp file"));
    cmd.stdin(Stdio::piped()).stdout(out_file.try_clone().unwrap()).stderr(err_file.try_clone().unwrap());
    let t = Instant::now();
    let mut child = cmd.spawn().expect("spawning");
    let mut pipe = child.stdin.take().expect("stdin piped");
    write_ignoring_closed(&mut pipe, stdin);
    drop(pipe);
    let (mut status, pid) = (0, child.id() as libc::pid_t);
    // SAFETY: rusage is plain data; all zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is this process's unreaped child; the pointers are to live locals.
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid, "wait4");
    let wall = t.elapsed().as_secs_f64();
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    let read = |mut f: std::fs::File| {
        use std::io::{Read, Seek};
        let mut bytes = Vec::new();
        f.seek(std::io::SeekFrom::Start(0)).and_then(|_| f.read_to_end(&mut bytes)).expect("reading a child's output");
        bytes
    };
    use std::os::unix::process::ExitStatusExt;
    let out = std::process::Output { status: std::process::ExitStatus::from_raw(status), stdout: read(out_file), stderr: read(err_file) };
    assert_succeeded(cmd, &out);
    (Took { wall, cpu: secs(usage.ru_utime) + secs(usage.ru_stime) }, out)
}

/// `abcd status-line` in `wc`, checked: what it took.
fn status_line(wc: &Path, home: &Path, payload: &[u8], owed: usize) -> Took {
    let mut cmd = Command::new(installed());
    cmd.arg("status-line").current_dir(wc).env("ABCD_HOME", home).env("TZ", "UTC");
    let (took, out) = timed(&mut cmd, payload);
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(line.starts_with("abcd: away until ") && line.ends_with(&format!(" · {owed} owed\n")), "the away line: {line:?}");
    assert!(out.stderr.is_empty(), "abcd status-line warned: {}", String::from_utf8_lossy(&out.stderr));
    took
}

fn helper_cmd(wc: &Path) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("this bench's binary"));
    cmd.args([HELPER_ARG, "exit"]).current_dir(wc);
    cmd
}

/// A trivial process with `payload` on stdin: what it took.
fn trivial(cmd: &mut Command, payload: &[u8]) -> Took {
    let (took, out) = timed(cmd, payload);
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "the trivial process printed something");
    took
}
