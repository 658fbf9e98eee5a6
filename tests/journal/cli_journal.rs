//! The journal through the real binary and real processes: concurrent writers, the head
//! anchor, and bad input. Every test has its own ABCD_HOME.

use crate::common;

use std::collections::HashSet;
use std::io::Write;
use std::process::{Command, Output};

use std::time::Duration;

use abcd::journal::lock::{JournalLock, LockError, WaitClock};
use abcd::journal::scan::{self, StartPoint, Verdict};
use abcd::journal::storage::{RealDisk, Storage};
use common::{TempJournal, event};

const WRITERS: usize = 8;
const APPENDS_PER_WRITER: usize = 500;
const CHILD_ENV: &str = "ABCD_TEST_CHILD_JOURNAL";
const RSS_PROBE_ARGS_ENV: &str = "ABCD_TEST_RSS_PROBE_ARGS";
const RSS_PROBE_REPORT_ENV: &str = "ABCD_TEST_RSS_PROBE_REPORT";

fn abcd(tj: &TempJournal, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_abcd")).args(args).env("ABCD_HOME", &tj.home).output().expect("abcd runs")
}

/// A test of this module as `--exact` names it in this binary: its module path without
/// the crate's name.
fn test_name(name: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{name}"),
        None => name.to_string(),
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Not a test of its own: the body of each writer process the concurrency test spawns.
#[test]
#[ignore = "entry point for the writer processes of eight_processes_appending_at_once_lose_nothing"]
fn child_writer_process() {
    let path = std::env::var(CHILD_ENV).expect("run by the parent test");
    let writer: u64 = std::env::var("ABCD_TEST_WRITER").unwrap().parse().unwrap();
    let tj = TempJournal::new();
    let paths = abcd::journal::JournalPaths::beside(std::path::Path::new(&path));
    let home = std::env::var("ABCD_HOME").unwrap();
    for n in 0..APPENDS_PER_WRITER as u64 {
        // A new handle per append, as a new hook process would have.
        let j =
            abcd::journal::Journal::new(RealDisk::shared(), paths.clone(), Some(abcd::journal::anchor::AnchorStore::new(home.as_ref())))
                // Raised from the hooks' 2 s: on a loaded 2-core CI machine eight syncing
                // writers can queue longer, and a timeout is a refusal, not the loss,
                // duplication or interleaving this test is about.
                .with_lock_wait(std::time::Duration::from_secs(60));
        let mut e = event("compaction.recorded", n);
        e.data["writer"] = writer.into();
        j.append(e, Some(&tj.scope())).expect("append succeeds");
    }
}

#[test]
fn eight_processes_appending_at_once_lose_nothing() {
    let tj = TempJournal::new();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WRITERS)
        .map(|w| {
            Command::new(&exe)
                .args(["--ignored", "--exact", &test_name("child_writer_process"), "--test-threads", "1"])
                .env(CHILD_ENV, tj.path())
                .env("ABCD_TEST_WRITER", w.to_string())
                .env("ABCD_HOME", &tj.home)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let file = RealDisk.open_read(tj.path()).unwrap();
    let mut seen = HashSet::new();
    let mut seqs = Vec::new();
    let report = scan::scan(file.as_ref(), StartPoint::GENESIS, |e, _| {
        seqs.push(e.seq);
        if e.seq > 0 {
            assert!(seen.insert((e.data["writer"].as_u64().unwrap(), e.data["n"].as_u64().unwrap())), "duplicate payload at seq {}", e.seq);
        }
        Ok::<(), ()>(())
    })
    .unwrap();
    assert_eq!(report.verdict, Verdict::Clean);
    assert_eq!(seen.len(), WRITERS * APPENDS_PER_WRITER);
    assert_eq!(seqs, (0..=(WRITERS * APPENDS_PER_WRITER) as u64).collect::<Vec<_>>());
    let out = abcd(&tj, &["journal", "verify", "--journal", tj.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
}

fn journal_of(n: u64) -> TempJournal {
    let tj = TempJournal::new();
    let j = tj.journal();
    for i in 0..n {
        j.append(event("compaction.recorded", i), Some(&tj.scope())).unwrap();
    }
    tj
}

#[test]
fn a_journal_rolled_back_by_ten_events_is_named_by_verify() {
    let tj = journal_of(5);
    let older = tj.bytes();
    let j = tj.journal();
    for i in 0..10 {
        j.append(event("compaction.recorded", 100 + i), None).unwrap();
    }
    let path = tj.path().to_str().unwrap();
    assert_eq!(abcd(&tj, &["journal", "verify", "--journal", path]).status.code(), Some(0));
    std::fs::write(tj.path(), &older).unwrap();
    let out = abcd(&tj, &["journal", "verify", "--journal", path]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("says seq 15") && text(&out).contains("rolled back"), "{}", text(&out));
    // And an append refuses to build on it.
    let err = tj.journal().append(event("compaction.recorded", 999), None).unwrap_err();
    assert!(err.to_string().contains("abcd journal repair"), "{err}");
}

#[test]
fn a_journal_cut_at_a_line_boundary_is_named_but_a_torn_tail_is_not() {
    let tj = journal_of(6);
    let bytes = tj.bytes();
    let path = tj.path().to_str().unwrap();
    // A torn, never acknowledged tail: verify passes (exit 0) and says torn.
    let mut torn = bytes.clone();
    torn.extend_from_slice(b"{\"v\":1,\"seq\":7,\"time\":\"2026-");
    std::fs::write(tj.path(), &torn).unwrap();
    let out = abcd(&tj, &["journal", "verify", "--journal", path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("torn tail"), "{}", text(&out));
    // Cut at the boundary before the last line: every remaining line verifies, but the
    // anchor knows seq 6 was acknowledged.
    let last_start = bytes[..bytes.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    std::fs::write(tj.path(), &bytes[..last_start]).unwrap();
    let out = abcd(&tj, &["journal", "verify", "--journal", path]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("ends at seq 5") && text(&out).contains("says seq 6"), "{}", text(&out));
    let json = abcd(&tj, &["journal", "verify", "--journal", path, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["anchor"]["state"], "disagrees");
    // Repair accepts it as it is, on the record.
    let out = abcd(&tj, &["journal", "repair", "--journal", path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(abcd(&tj, &["journal", "verify", "--journal", path]).status.code(), Some(0));
}

#[test]
fn a_replaced_journal_is_named_through_the_path_record() {
    let tj = journal_of(2);
    let path = tj.path().to_str().unwrap();
    let other = journal_of(2);
    std::fs::copy(other.path(), tj.path()).unwrap();
    let out = abcd(&tj, &["journal", "verify", "--journal", path]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("replaced"), "{}", text(&out));
}

#[test]
fn a_missing_journal_is_refused_with_exit_2() {
    let tj = TempJournal::new();
    let out = abcd(&tj, &["journal", "verify", "--journal", tj.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no journal at"), "{}", text(&out));
}

#[test]
fn a_folder_is_refused_with_exit_2() {
    let tj = TempJournal::new();
    std::fs::create_dir_all(tj.path()).unwrap();
    let out = abcd(&tj, &["journal", "verify", "--journal", tj.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("it is a folder"), "{}", text(&out));
}

#[test]
fn a_binary_file_is_corruption_at_offset_0() {
    let tj = TempJournal::new();
    std::fs::create_dir_all(tj.paths.dir()).unwrap();
    let binary: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(tj.path(), &binary).unwrap();
    let out = abcd(&tj, &["journal", "verify", "--journal", tj.path().to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"]["state"], "corrupt");
    assert_eq!(v["verdict"]["offset"], 0);
    assert_eq!(v["verdict"]["seq"], 0);
}

/// Runs abcd and returns its output and peak RSS in KiB, measured from a process of this
/// binary's own (`rss_probe_process`): a spawned child's peak RSS counts its parent's peak
/// memory up to its exec, and this process's other tests, running beside this one, can
/// raise that peak at any moment.
fn abcd_with_rss(tj: &TempJournal, args: &[&str]) -> (i32, String, i64) {
    let report = tj.dir.path().join("rss-probe.out");
    let probe = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", &test_name("rss_probe_process"), "--test-threads", "1"])
        .env(RSS_PROBE_ARGS_ENV, args.join("\n"))
        .env(RSS_PROBE_REPORT_ENV, &report)
        .env("ABCD_HOME", &tj.home)
        .output()
        .unwrap();
    assert!(probe.status.success(), "the probe process failed: {}", text(&probe));
    let report = std::fs::read_to_string(&report).unwrap();
    let mut parts = report.splitn(3, '\n');
    let code = parts.next().unwrap().parse().unwrap();
    let kib = parts.next().unwrap().parse().unwrap();
    (code, parts.next().unwrap_or_default().to_string(), kib)
}

/// Not a test of its own: the process `abcd_with_rss` measures from. It runs abcd with the
/// arguments `RSS_PROBE_ARGS_ENV` holds (one a line) and writes its exit code, its peak RSS
/// in KiB and its stdout, one after the other, to the file `RSS_PROBE_REPORT_ENV` names.
#[test]
#[ignore = "entry point for the probe process of an_over_long_line_is_corruption_named_by_offset_and_memory_stays_flat"]
fn rss_probe_process() {
    let args = std::env::var(RSS_PROBE_ARGS_ENV).expect("run by the parent test");
    let report = std::env::var(RSS_PROBE_REPORT_ENV).expect("run by the parent test");
    let home = std::env::var("ABCD_HOME").expect("run by the parent test");
    let (code, out, kib) = abcd_with_rss_here(&home, &args.lines().collect::<Vec<_>>());
    std::fs::write(report, format!("{code}\n{kib}\n{out}")).unwrap();
}

/// Runs abcd and returns its output and peak RSS in KiB (wait4 on that one child, which
/// reaps it: `Child::wait` would lose the rusage).
#[allow(clippy::zombie_processes)]
fn abcd_with_rss_here(home: &str, args: &[&str]) -> (i32, String, i64) {
    let child = Command::new(env!("CARGO_BIN_EXE_abcd"))
        .args(args)
        .env("ABCD_HOME", home)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stdout = child.stdout.unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out).unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter; pid is our own unwaited child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    (libc::WEXITSTATUS(status), out, usage.ru_maxrss)
}

#[test]
fn an_over_long_line_is_corruption_named_by_offset_and_memory_stays_flat() {
    let tj = journal_of(3);
    let good_len = tj.bytes().len();
    let path = tj.path().to_str().unwrap();
    let mut rss = Vec::new();
    for size in [1usize << 20, 64 << 20] {
        // Written in chunks: the test process must not hold the line itself, since a
        // spawned child's peak RSS counts the parent's memory up to its exec.
        let good = tj.bytes()[..good_len].to_vec();
        let mut f = std::fs::File::create(tj.path()).unwrap();
        f.write_all(&good).unwrap();
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..size / chunk.len() {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\n").unwrap();
        f.write_all(&good).unwrap();
        drop(f);
        let (code, out, kib) = abcd_with_rss(&tj, &["journal", "verify", "--journal", path, "--json"]);
        assert_eq!(code, 1, "{out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["verdict"]["state"], "corrupt");
        assert_eq!(v["verdict"]["offset"], good_len as u64);
        assert!(v["verdict"]["problem"].as_str().unwrap().contains("longer than 65536 bytes"), "{out}");
        rss.push(kib);
    }
    // A 64 MiB line costs no more memory than a 1 MiB one: lines past the limit are
    // measured, never held.
    assert!(rss[1] < rss[0] + 4096, "peak RSS {} KiB for a 64 MiB line vs {} KiB for 1 MiB", rss[1], rss[0]);
}

#[test]
fn a_symlink_or_a_foreign_owner_is_refused_with_exit_2() {
    let tj = journal_of(1);
    let link = tj.paths.dir().join("link.jsonl");
    std::os::unix::fs::symlink(tj.path(), &link).unwrap();
    let out = abcd(&tj, &["journal", "verify", "--journal", link.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("symbolic link"), "{}", text(&out));

    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping the foreign-owner half: chown needs root");
        return;
    }
    let c = std::ffi::CString::new(tj.path().to_str().unwrap()).unwrap();
    // SAFETY: a valid C string path; 65534 is nobody.
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
    let out = abcd(&tj, &["journal", "verify", "--journal", tj.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("owned by another user"), "{}", text(&out));
    let err = tj.journal().append(event("compaction.recorded", 1), None).unwrap_err();
    assert!(err.to_string().contains("owned by another user"), "{err}");
}

#[test]
fn a_lock_held_past_the_wait_is_refused_naming_the_holder() {
    let tj = journal_of(1);
    let _held = JournalLock::acquire(&tj.paths.lock, std::time::Duration::from_secs(1)).unwrap();
    let started = std::time::Instant::now();
    let out = abcd(&tj, &["journal", "repair", "--journal", tj.path().to_str().unwrap()]);
    assert!(started.elapsed() >= abcd::places::VERB_LOCK_WAIT);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains(&format!("pid {}", std::process::id())), "{}", text(&out));
}

/// A clock that moves only when the wait pauses; the holder lets go once it reads
/// `release_at`.
struct HeldUntil {
    now: Duration,
    release_at: Duration,
    holder: Option<JournalLock>,
}

impl WaitClock for HeldUntil {
    fn elapsed(&self) -> Duration {
        self.now
    }

    fn pause(&mut self, pause: Duration) {
        self.now += pause;
        if self.now >= self.release_at {
            self.holder = None;
        }
    }
}

/// Whether a writer waiting `wait` gets a lock its holder releases at `release_at`.
fn had_when_released_at(lock: &std::path::Path, wait: Duration, release_at: Duration) -> bool {
    let holder = JournalLock::acquire(lock, Duration::ZERO).unwrap();
    let mut clock = HeldUntil { now: Duration::ZERO, release_at, holder: Some(holder) };
    match JournalLock::acquire_by(lock, wait, &mut clock) {
        Ok(_) => true,
        Err(LockError::Timeout { waited_ms, .. }) => {
            assert_eq!(waited_ms, wait.as_millis(), "refused at the wait's end, not before or after");
            false
        }
        Err(e) => panic!("{e}"),
    }
}

/// A hook waits the 2 s of SPEC §5 for the writer lock, a verb `VERB_LOCK_WAIT`: a lock
/// released by the end of the wait is had, one held a millisecond past it is refused.
#[test]
fn a_hook_waits_two_seconds_for_the_lock_and_a_verb_its_own_wait_to_the_millisecond() {
    let tj = journal_of(1);
    let hook = abcd::places::open_journal(RealDisk::shared(), tj.paths.clone()).unwrap().lock_wait();
    let verb = abcd::places::open_journal_for_verb(RealDisk::shared(), tj.paths.clone()).unwrap().lock_wait();
    assert_eq!(hook, Duration::from_secs(2), "SPEC §5: a lock not had within two seconds fails open");
    assert_eq!(verb, abcd::places::VERB_LOCK_WAIT);
    let ms = Duration::from_millis(1);
    for wait in [hook, verb] {
        assert!(had_when_released_at(&tj.paths.lock, wait, wait - ms), "released just before the end of {wait:?}");
        assert!(had_when_released_at(&tj.paths.lock, wait, wait), "released at the end of {wait:?}");
        assert!(!had_when_released_at(&tj.paths.lock, wait, wait + ms), "held just past {wait:?}");
    }
}

/// The format spec's append steps state the waits the code uses, for hooks and for verbs.
#[test]
fn the_format_spec_states_the_lock_waits_the_code_uses() {
    let spec = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("journal-format/SPEC.md")).unwrap();
    let flat = spec.split_whitespace().collect::<Vec<_>>().join(" ");
    let (hook, verb) = (abcd::journal::lock::LOCK_WAIT, abcd::places::VERB_LOCK_WAIT);
    assert_eq!((hook.subsec_nanos(), verb.subsec_nanos()), (0, 0), "whole seconds, as the spec states them");
    let said = format!(
        "abcd's hooks wait {} seconds (and then let the host go on); its other commands wait {} seconds.",
        hook.as_secs(),
        verb.as_secs()
    );
    assert!(flat.contains(&said), "journal-format/SPEC.md §8.2 does not say: {said}");
}

#[test]
fn a_journal_whose_creation_lost_its_records_gets_them_back_on_the_next_append() {
    let tj = journal_of(1);
    // A creation killed after its rename and before its anchor and path records.
    std::fs::remove_dir_all(tj.home.join("anchors")).unwrap();
    tj.journal().append(event("compaction.recorded", 2), None).unwrap();
    let path = tj.path().to_str().unwrap();
    let other = journal_of(1);
    std::fs::copy(other.path(), tj.path()).unwrap();
    let out = abcd(&tj, &["journal", "verify", "--journal", path]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("replaced"), "{}", text(&out));
}

// A long-lived handle keeps its lock file, journal and anchor record open between appends
// (benchmark 1). These pin what it must still notice.

#[test]
fn a_long_lived_handle_notices_its_journal_replaced_by_an_older_copy() {
    let tj = journal_of(0);
    let j = tj.journal();
    j.append(event("compaction.recorded", 0), Some(&tj.scope())).unwrap();
    let older = tj.bytes();
    for i in 1..4 {
        j.append(event("compaction.recorded", i), None).unwrap();
    }
    // Rolled back by three events, through a rename: the path names another file now.
    let copy = tj.dir.path().join("older.jsonl");
    std::fs::write(&copy, &older).unwrap();
    std::fs::rename(&copy, tj.path()).unwrap();
    let err = j.append(event("compaction.recorded", 9), None).unwrap_err();
    assert!(err.to_string().contains("rolled back"), "{err}");
    assert_eq!(tj.bytes(), older, "nothing was chained onto the older copy");
}

#[test]
fn a_long_lived_handle_locks_a_lock_file_recreated_under_it() {
    let tj = journal_of(0);
    let j = tj.journal().with_lock_wait(std::time::Duration::from_millis(200));
    j.append(event("compaction.recorded", 0), Some(&tj.scope())).unwrap();
    // A person removes the lock file; the next writer creates a new one and holds it.
    std::fs::remove_file(&tj.paths.lock).unwrap();
    let _held = JournalLock::acquire(&tj.paths.lock, std::time::Duration::from_secs(1)).unwrap();
    let before = tj.bytes();
    let err = j.append(event("compaction.recorded", 1), None).unwrap_err();
    assert!(err.to_string().contains("not released within"), "the kept, unlinked lock file must not count as the lock: {err}");
    assert_eq!(tj.bytes(), before);
}

#[test]
fn a_long_lived_handle_follows_its_path_when_the_folder_is_moved_and_a_new_journal_made() {
    let tj = journal_of(0);
    let j = tj.journal().with_lock_wait(std::time::Duration::from_millis(200));
    j.append(event("compaction.recorded", 0), Some(&tj.scope())).unwrap();
    let folder = tj.path().parent().unwrap().to_owned();
    let moved = tj.dir.path().join("moved");
    std::fs::rename(&folder, &moved).unwrap();
    let moved_bytes = std::fs::read(moved.join("journal.jsonl")).unwrap();
    // A new journal is started at the old path and its lock held. The home store still
    // records the moved journal there, so only repair starts one, on purpose.
    let started = abcd::journal::repair::repair(&tj.journal(), Some(&tj.scope()), None).unwrap();
    assert!(matches!(started, abcd::journal::repair::RepairOutcome::StartedAfresh { .. }), "{started:?}");
    let held = JournalLock::acquire(&tj.paths.lock, std::time::Duration::from_secs(1)).unwrap();
    let err = j.append(event("compaction.recorded", 2), None).unwrap_err();
    assert!(err.to_string().contains("not released within"), "the handle must lock the lock at its path: {err}");
    drop(held);
    let appended = j.append(event("compaction.recorded", 3), None).unwrap();
    assert_eq!(appended.seq, 2, "the append lands in the journal its path names now");
    assert_eq!(std::fs::read(moved.join("journal.jsonl")).unwrap(), moved_bytes, "the moved journal is left alone");
    let report = scan::scan(RealDisk.open_read(tj.path()).unwrap().as_ref(), StartPoint::GENESIS, |_, _| Ok::<(), ()>(())).unwrap();
    assert_eq!(report.verdict, Verdict::Clean);
}

#[test]
fn a_long_lived_handle_locks_the_lock_file_its_path_names_after_the_old_one_is_moved_aside() {
    let tj = journal_of(0);
    let j = tj.journal().with_lock_wait(std::time::Duration::from_millis(200));
    j.append(event("compaction.recorded", 0), Some(&tj.scope())).unwrap();
    // The kept lock file still has a name (moved aside), but the path names a new one,
    // which the next writer holds.
    std::fs::rename(&tj.paths.lock, tj.paths.lock.with_extension("lock.old")).unwrap();
    let _held = JournalLock::acquire(&tj.paths.lock, std::time::Duration::from_secs(1)).unwrap();
    let before = tj.bytes();
    let err = j.append(event("compaction.recorded", 1), None).unwrap_err();
    assert!(err.to_string().contains("not released within"), "the moved-aside lock file must not count as the lock: {err}");
    assert_eq!(tj.bytes(), before);
}
