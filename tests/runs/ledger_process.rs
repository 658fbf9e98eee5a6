//! Process identity, liveness and starts (SPEC §7) against real processes: `sleep`
//! children, a zombie held on purpose, and `sh` scripts started detached or in a new
//! session, their output read back from temp files.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use abcd::platform::process::{
    self, ExitReport, Liveness, ProcessId, SHELLS, SpawnError, command_name, identify, is_alive, liveness, nearest_non_shell_ancestor,
    parent_of, resolve_program, spawn_detached, spawn_in_new_session, this_process,
};

/// How long a test waits for a process to change state before it fails.
const SETTLE: Duration = Duration::from_secs(60);
/// The pause between two looks while waiting.
const POLL: Duration = Duration::from_millis(10);

/// Fields of `/proc/<pid>/stat` after the command name (field 3 onward), or None when the
/// process is gone.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Field `n` (1-based, as `man 5 proc` counts) of `/proc/<pid>/stat`.
fn stat_field(pid: u32, n: usize) -> Option<String> {
    stat_fields(pid)?.get(n - 3).cloned()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < SETTLE, "timed out waiting until {what}");
        std::thread::sleep(POLL);
    }
}

fn sleeper() -> Child {
    Command::new("sleep").arg("30").spawn().unwrap()
}

fn words(list: &[&str]) -> Vec<OsString> {
    list.iter().map(OsString::from).collect()
}

struct Outputs {
    dir: tempfile::TempDir,
    out: PathBuf,
    err: PathBuf,
}

fn outputs() -> Outputs {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.log");
    let err = dir.path().join("err.log");
    Outputs { dir, out, err }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn this_process_is_identified_and_alive() {
    let me = this_process().unwrap();
    assert_eq!(me.pid, std::process::id());
    assert_eq!(identify(std::process::id()), Some(me));
    assert_eq!(me.start_ticks.to_string(), stat_field(me.pid, 22).unwrap());
    assert!(is_alive(&me));
    assert_eq!(liveness(&me), Liveness::Alive);
}

#[test]
fn parent_and_command_name_read_proc() {
    let me = std::process::id();
    assert_eq!(parent_of(me), Some(std::os::unix::process::parent_id()));
    let comm = std::fs::read_to_string(format!("/proc/{me}/comm")).unwrap();
    assert_eq!(command_name(me).as_deref(), Some(comm.trim_end_matches('\n')));
    let mut child = sleeper();
    // spawn returns once the child exists, which can be before its exec finished: until
    // then /proc names the forking thread. Wait for the exec (2 s at most).
    let exec_deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while command_name(child.id()).as_deref() != Some("sleep") && std::time::Instant::now() < exec_deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(command_name(child.id()).as_deref(), Some("sleep"));
    assert_eq!(parent_of(child.id()), Some(me));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(parent_of(child.id()), None);
    assert_eq!(command_name(child.id()), None);
}

#[test]
fn a_child_is_alive_until_killed_and_reaped() {
    let mut child = sleeper();
    let id = identify(child.id()).expect("a running child is identified");
    assert!(is_alive(&id));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!is_alive(&id));
    assert_eq!(liveness(&id), Liveness::Gone);
    assert_eq!(identify(id.pid), None);
}

#[test]
fn a_reused_pid_is_not_the_recorded_process() {
    let me = this_process().unwrap();
    for start_ticks in [me.start_ticks + 1, me.start_ticks.wrapping_sub(1), 0, u64::MAX] {
        let other = ProcessId { pid: me.pid, start_ticks };
        assert!(!is_alive(&other), "start_ticks {start_ticks} must not match {}", me.start_ticks);
        assert_eq!(liveness(&other), Liveness::Gone);
    }
}

#[test]
fn a_zombie_is_gone() {
    let mut child = sleeper();
    let id = identify(child.id()).unwrap();
    // SIGKILL without a wait: the child stays a zombie of this process until reaped.
    let killed = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
    assert_eq!(killed, 0);
    wait_until("the child is a zombie", || stat_field(id.pid, 3).as_deref() == Some("Z"));
    assert!(!is_alive(&id));
    assert_eq!(liveness(&id), Liveness::Gone);
    assert_eq!(identify(id.pid), None);
    child.wait().unwrap();
}

#[test]
fn nearest_non_shell_ancestor_names_a_live_non_shell_ancestor() {
    let driver = nearest_non_shell_ancestor().unwrap();
    assert!(is_alive(&driver));
    // It is one of this process's ancestors.
    let mut pid = std::process::id();
    let mut found = false;
    while let Some(parent) = parent_of(pid).filter(|p| *p > 0) {
        if parent == driver.pid {
            found = true;
            break;
        }
        pid = parent;
    }
    assert!(found, "{driver:?} is not an ancestor");
    // It is not a shell, unless every ancestor up to pid 1 is one and the parent is named.
    let comm = command_name(driver.pid).unwrap();
    assert!(!SHELLS.contains(&comm.as_str()) || driver.pid == std::os::unix::process::parent_id(), "{comm} is a shell");
}

#[test]
fn spawn_detached_returns_at_once_into_its_own_session_and_is_reaped() {
    let o = outputs();
    // The child waits for a file only this test writes, after spawn_detached returned: its
    // returning at all shows it does not wait for the child, whatever the machine's load.
    let go = o.dir.path().join("go");
    let script = format!("echo out; echo err >&2; while [ ! -e '{}' ]; do sleep 0.02; done", go.display());
    let id = spawn_detached(Path::new("sh"), &words(&["-c", &script]), o.dir.path(), &o.out, &o.err, &[]).unwrap();
    assert!(is_alive(&id), "the child still waits for its go");
    assert_eq!(stat_field(id.pid, 6), Some(id.pid.to_string()), "the child leads its own session");
    assert_eq!(stat_field(id.pid, 4), Some(std::process::id().to_string()), "it is this process's child until this process ends");
    let fd = |n: u32| std::fs::read_link(format!("/proc/{}/fd/{n}", id.pid)).unwrap();
    assert_eq!(fd(0), PathBuf::from("/dev/null"));
    assert_eq!(fd(1), o.out.canonicalize().unwrap());
    assert_eq!(fd(2), o.err.canonicalize().unwrap());
    // It ends on its own and nobody here waits for it, yet it is reaped: no zombie left.
    wait_until("the child's output", || std::fs::read_to_string(&o.err).is_ok_and(|e| e == "err\n"));
    std::fs::write(&go, "").unwrap();
    wait_until("the detached child is gone", || !is_alive(&id));
    wait_until("the detached child is reaped", || match stat_fields(id.pid) {
        None => true,
        Some(f) => f[19] != id.start_ticks.to_string(),
    });
    assert_eq!(std::fs::read_to_string(&o.out).unwrap(), "out\n");
    assert_eq!(std::fs::read_to_string(&o.err).unwrap(), "err\n");
    assert_eq!(mode(&o.out), 0o600);
    assert_eq!(mode(&o.err), 0o600);
}

#[test]
fn spawn_appends_sets_cwd_and_env_and_reads_no_stdin() {
    let o = outputs();
    std::fs::write(&o.out, "before\n").unwrap();
    let script = "pwd; printf '%s\\n' \"$ABCD_PROCESS_TEST\"; cat; echo done";
    let env = [(OsString::from("ABCD_PROCESS_TEST"), OsString::from("given"))];
    let child = spawn_in_new_session(Path::new("sh"), &words(&["-c", script]), o.dir.path(), &o.out, &o.err, &env).unwrap();
    assert_eq!(child.wait(), ExitReport::Code(0));
    let cwd = o.dir.path().canonicalize().unwrap();
    assert_eq!(std::fs::read_to_string(&o.out).unwrap(), format!("before\n{}\ngiven\ndone\n", cwd.display()));
}

#[test]
fn spawn_in_new_session_reports_the_exit_code() {
    let o = outputs();
    let child = spawn_in_new_session(Path::new("sh"), &words(&["-c", "exit 3"]), o.dir.path(), &o.out, &o.err, &[]).unwrap();
    assert_eq!(stat_field(child.id.pid, 6), Some(child.id.pid.to_string()));
    assert_eq!(child.wait(), ExitReport::Code(3));
}

#[test]
fn spawn_in_new_session_reports_the_signal() {
    let o = outputs();
    let child = spawn_in_new_session(Path::new("sleep"), &words(&["30"]), o.dir.path(), &o.out, &o.err, &[]).unwrap();
    assert!(is_alive(&child.id));
    let sent = unsafe { libc::kill(child.id.pid as libc::pid_t, libc::SIGTERM) };
    assert_eq!(sent, 0);
    assert_eq!(child.wait(), ExitReport::Signal(libc::SIGTERM));
}

#[test]
fn spawn_refuses_a_missing_program_naming_it_but_not_its_arguments() {
    let o = outputs();
    let secret = "sk-not-to-be-shown";
    let err = spawn_detached(Path::new("no-such-program-xyz"), &words(&[secret]), o.dir.path(), &o.out, &o.err, &[]).unwrap_err();
    assert!(matches!(err, SpawnError::NotFound { .. }), "{err:?}");
    let shown = format!("{err} {err:?}");
    assert!(shown.contains("no-such-program-xyz"), "{shown}");
    assert!(!shown.contains(secret), "{shown}");
    assert!(!o.out.exists(), "nothing is created for a program that cannot start");
}

#[test]
fn spawn_refuses_a_file_that_is_not_executable() {
    let o = outputs();
    let script = o.dir.path().join("script.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = spawn_in_new_session(&script, &[], o.dir.path(), &o.out, &o.err, &[]).unwrap_err();
    assert!(matches!(err, SpawnError::NotExecutable { .. }), "{err:?}");
    assert!(err.to_string().contains("script.sh"), "{err}");
}

#[test]
fn spawn_refuses_a_missing_working_directory() {
    let o = outputs();
    let gone = o.dir.path().join("no-such-dir");
    let err = spawn_in_new_session(Path::new("sh"), &words(&["-c", "true"]), &gone, &o.out, &o.err, &[]).unwrap_err();
    assert!(matches!(err, SpawnError::Cwd { .. }), "{err:?}");
}

#[test]
fn spawn_uses_the_path_the_child_is_given() {
    let o = outputs();
    let bin = o.dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let tool = bin.join("abcd-test-tool-xyz");
    std::fs::write(&tool, "#!/bin/sh\necho from-tool\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths([bin.clone(), PathBuf::from("/usr/bin"), PathBuf::from("/bin")]).unwrap();
    let env = [(OsString::from("PATH"), path)];
    let child = spawn_in_new_session(Path::new("abcd-test-tool-xyz"), &[], o.dir.path(), &o.out, &o.err, &env).unwrap();
    assert_eq!(child.wait(), ExitReport::Code(0));
    assert_eq!(std::fs::read_to_string(&o.out).unwrap(), "from-tool\n");
}

#[test]
fn spawn_skips_a_file_on_path_that_is_not_executable() {
    let o = outputs();
    let (plain, runnable) = (o.dir.path().join("plain"), o.dir.path().join("runnable"));
    for (dir, body, mode) in [(&plain, "echo from-plain", 0o644), (&runnable, "echo from-runnable", 0o755)] {
        std::fs::create_dir(dir).unwrap();
        let tool = dir.join("abcd-test-tool-xyz");
        std::fs::write(&tool, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let path = |dirs: &[&PathBuf]| [(OsString::from("PATH"), std::env::join_paths(dirs).unwrap())];
    let child =
        spawn_in_new_session(Path::new("abcd-test-tool-xyz"), &[], o.dir.path(), &o.out, &o.err, &path(&[&plain, &runnable])).unwrap();
    assert_eq!(child.wait(), ExitReport::Code(0));
    assert_eq!(std::fs::read_to_string(&o.out).unwrap(), "from-runnable\n");
    let err = spawn_in_new_session(Path::new("abcd-test-tool-xyz"), &[], o.dir.path(), &o.out, &o.err, &path(&[&plain])).unwrap_err();
    assert!(matches!(&err, SpawnError::NotExecutable { path } if path.starts_with(&plain)), "{err:?}");
}

#[test]
fn resolve_program_finds_executables_only() {
    let sh = resolve_program(OsStr::new("sh")).expect("sh is on PATH");
    assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
    assert_eq!(resolve_program(OsStr::new("no-such-program-xyz")), None);
    assert_eq!(resolve_program(OsStr::new("")), None);

    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(resolve_program(plain.as_os_str()), None);
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(resolve_program(plain.as_os_str()), Some(plain.clone()));
    // A directory is never a program, even with its x bits set.
    assert_eq!(resolve_program(dir.path().as_os_str()), None);
    // A path with a slash is taken as it is, never searched on PATH.
    assert_eq!(resolve_program(OsStr::new("./no-such-program-xyz")), None);
    assert_eq!(resolve_program(OsStr::new("bin/sh-no-such")), None);
}

#[test]
fn process_id_round_trips_as_json() {
    let id = ProcessId { pid: 4242, start_ticks: 123_456_789 };
    let text = serde_json::to_string(&id).unwrap();
    assert_eq!(text, r#"{"pid":4242,"start_ticks":123456789}"#);
    assert_eq!(serde_json::from_str::<ProcessId>(&text).unwrap(), id);
    assert!(serde_json::from_str::<ProcessId>(r#"{"pid":1,"start_ticks":2,"x":3}"#).is_err());
    let _ = process::ANCESTOR_WALK_MAX;
}
