//! Output to a closed or failing stream, through the binary. Every verb that prints, with
//! its stdout a pipe nobody reads any more, ends quietly with exit 0 (as `git log | head`
//! does); with its stdout on `/dev/full` it says so in one stderr line and exits 1. A stderr
//! that cannot be written changes no exit code, and a hook exits 0 whatever happens to its
//! streams. Nothing panics (exit 101), ever. Each run has its own managed repository and
//! home store.

use crate::common;

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::repo::{TestRepo, abcd, commit_all};

/// The exit code of a panic under the runtime start (and under abcd's own, `src/main.rs`).
const EXIT_PANICKED: i32 = 101;

/// A committed git repository, made once per test and copied for each fixture: the git
/// processes that make one would be most of this file's time.
struct Template {
    repo: TestRepo,
}

impl Template {
    fn new() -> Template {
        let repo = TestRepo::new();
        // git's sample hooks are a dozen files that every copy would carry for nothing.
        std::fs::remove_dir_all(repo.root.join(".git/hooks")).unwrap();
        Template { repo }
    }

    /// A copy of the repository, managed by abcd, with its own home store.
    fn fixture(&self) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("wc");
        copy_tree(&self.repo.root, &root);
        Fixture { repo: TestRepo { home: dir.path().join("home"), root, dir }.managed() }
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// A managed repository with one commit, and its own home store.
struct Fixture {
    repo: TestRepo,
}

impl Fixture {
    /// Where a launched agent's receipt goes (outside the working copy).
    fn receipt(&self) -> PathBuf {
        self.repo.dir.path().join("receipt.json")
    }

    /// `abcd <args>` here, with `{receipt}` in an argument replaced by [`Fixture::receipt`].
    fn abcd(&self, args: &[&str]) -> Command {
        let receipt = self.receipt().display().to_string();
        let mut cmd = abcd(&self.repo.root, &self.repo.home);
        cmd.args(args.iter().map(|a| a.replace("{receipt}", &receipt)));
        // The Stop hook's replies must not depend on the host this test runs under.
        cmd.env_remove("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP");
        cmd
    }

    /// Runs a setup step, which must succeed.
    fn must(&self, args: &[&str]) {
        let out = self.abcd(args).stdin(Stdio::null()).output().unwrap();
        assert!(
            out.status.success(),
            "setup abcd {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Where a stream of the process under test goes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sink {
    /// A pipe the test reads to the end.
    Captured,
    /// A pipe whose reading end is closed before the process starts: its first write fails
    /// with a broken pipe, whatever the scheduler does.
    ClosedPipe,
    /// A pipe from which the test reads one byte, then closes it (`| head -c 1`).
    OneByteReader,
    /// `/dev/full`: every write fails with "no space left on device".
    Full,
}

impl Sink {
    fn stdio(self) -> Stdio {
        match self {
            Sink::Captured | Sink::OneByteReader => Stdio::piped(),
            Sink::ClosedPipe => {
                let (reader, writer) = std::io::pipe().unwrap();
                drop(reader);
                writer.into()
            }
            Sink::Full => std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap().into(),
        }
    }
}

/// How a run ended: its exit code and, when captured, its output.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    what: String,
}

/// Runs `cmd` with `stdin` fed to it and its stdout and stderr as given; asserts it neither
/// panicked nor died of a signal.
fn run(mut cmd: Command, stdin: Option<&[u8]>, stdout: Sink, stderr: Sink) -> Ran {
    let what = format!("{:?} with stdout {stdout:?}, stderr {stderr:?}", cmd.get_args().collect::<Vec<_>>());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() }).stdout(stdout.stdio()).stderr(stderr.stdio());
    let mut child = cmd.spawn().unwrap();
    if let Some(bytes) = stdin {
        // A hook may stop reading early: a broken pipe here is fine.
        let _ = child.stdin.take().unwrap().write_all(bytes);
    }
    if stdout == Sink::OneByteReader {
        let _ = child.stdout.take().unwrap().read(&mut [0u8; 1]);
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.signal(), None, "{what}: killed by a signal");
    assert_ne!(out.status.code(), Some(EXIT_PANICKED), "{what}: exit 101: {stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    Ran { code: out.status.code(), stdout: String::from_utf8_lossy(&out.stdout).into_owned(), stderr, what }
}

/// One verb that prints, what must be done first for it to print rather than refuse, and
/// whether it changes anything (then each run gets a fresh fixture).
struct Verb {
    args: &'static [&'static str],
    setup: fn(&Fixture),
    writes: bool,
}

/// A verb that only reads: one fixture serves all its runs.
const fn reads(args: &'static [&'static str], setup: fn(&Fixture)) -> Verb {
    Verb { args, setup, writes: false }
}

const fn writes(args: &'static [&'static str], setup: fn(&Fixture)) -> Verb {
    Verb { args, setup, writes: true }
}

fn nothing(_: &Fixture) {}

fn an_item(fx: &Fixture) {
    fx.must(&["checklist", "add", "Fix the login bug"]);
}

fn away(fx: &Fixture) {
    fx.must(&["mode", "autonomous", "--until", "+2h"]);
}

fn a_run(fx: &Fixture) {
    fx.must(&["run", "start", "r1", "--lane", "a"]);
}

fn a_halted_run(fx: &Fixture) {
    a_run(fx);
    fx.must(&["run", "halt", "--run", "r1"]);
}

/// A run whose driver (a process the test started) is gone.
fn a_run_whose_driver_is_gone(fx: &Fixture) {
    let mut driver = Command::new("sleep").arg("60").spawn().unwrap();
    fx.must(&["run", "start", "r1", "--lane", "a", "--driver-pid", &driver.id().to_string()]);
    driver.kill().unwrap();
    driver.wait().unwrap();
}

/// A run in a checkout with nothing uncommitted, so that a launch has nothing to save aside.
fn a_run_in_a_clean_checkout(fx: &Fixture) {
    commit_all(&fx.repo.root, "abcd's settings");
    a_run(fx);
}

/// A launch whose agent's receipt has arrived.
fn a_receipt_waiting(fx: &Fixture) {
    a_run_in_a_clean_checkout(fx);
    fx.must(&["launch", "--run", "r1", "--lane", "a", "--role", "impl", "--receipt", "{receipt}", "--", "true"]);
    std::fs::write(fx.receipt(), "{\"done\": true}\n").unwrap();
}

// Every verb that prints (from `abcd --help` and each subcommand's), by family, with what
// makes it print. A verb's `--json` form prints through the same writer as its text: it is
// here for the verbs that only read, where it costs no fixture. The loop's verbs other than
// `status` need a loop driven by agents and are left to `tests/runs/loop.rs`.

const HELP_AND_GENERATED: &[Verb] = &[
    reads(&["--help"], nothing),
    reads(&["-h"], nothing),
    reads(&["--version"], nothing),
    reads(&["help", "checklist"], nothing),
    reads(&["checklist", "--help"], nothing),
    reads(&["hook", "--help"], nothing),
    reads(&["completions", "bash"], nothing),
    reads(&["man"], nothing),
    reads(&["init"], nothing),
    reads(&["init", "--check"], nothing),
    reads(&["demo"], nothing),
];

const CHECKLIST: &[Verb] = &[
    reads(&["checklist"], an_item),
    reads(&["checklist", "--json"], an_item),
    writes(&["checklist", "add", "Write the tests"], nothing),
    writes(&["checklist", "set", "1", "--state", "done"], an_item),
    reads(&["checklist", "show", "1"], an_item),
    reads(&["checklist", "show", "1", "--json"], an_item),
    reads(&["checklist", "render"], an_item),
    reads(&["checklist", "render", "--json"], an_item),
    reads(&["checklist", "render", "--stats"], an_item),
    reads(&["checklist", "render", "--stats", "--json"], an_item),
];

const MODE_AND_DECIDE: &[Verb] = &[
    reads(&["mode"], nothing),
    reads(&["mode", "--json"], nothing),
    writes(&["mode", "autonomous", "--until", "+2h"], nothing),
    writes(&["mode", "queue", "Push the branch"], away),
    writes(&["mode", "back"], away),
    writes(&["decide", "Use the small fixture", "--grounds", "it is fast", "--undo", "use the big one"], nothing),
];

const RUNS: &[Verb] = &[
    writes(&["run", "start", "r1", "--lane", "a"], nothing),
    writes(&["run", "takeover", "r1"], a_run_whose_driver_is_gone),
    writes(&["run", "halt", "--run", "r1"], a_run),
    writes(&["run", "lift", "--run", "r1"], a_halted_run),
    writes(&["run", "finish", "r1"], a_run),
    writes(&["launch", "--run", "r1", "--lane", "a", "--role", "impl", "--receipt", "{receipt}", "--", "true"], a_run_in_a_clean_checkout),
    writes(&["collect", "--run", "r1", "--lane", "a"], a_receipt_waiting),
    reads(&["resume"], a_run),
    reads(&["resume", "--json"], a_run),
    writes(&["resume", "--step"], a_receipt_waiting),
];

const LOOP_JOURNAL_AND_REPLAY: &[Verb] = &[
    reads(&["loop", "status"], an_item),
    reads(&["loop", "status", "--json"], an_item),
    reads(&["journal", "verify"], an_item),
    reads(&["journal", "verify", "--json"], an_item),
    writes(&["journal", "repair"], an_item),
    writes(&["journal", "checkpoint"], an_item),
    reads(&["replay"], an_item),
    reads(&["replay", "--json"], an_item),
    reads(&["replay", "--at", "1"], an_item),
    reads(&["replay", "--at", "1", "--json"], an_item),
];

/// Runs each verb with its stdout closed before it starts, read for one byte and closed,
/// and on `/dev/full`: the first two end quietly with exit 0 (the reader took what it
/// wanted), the last says so in one stderr line and exits 1.
fn assert_the_stdout_rule(verbs: &[Verb]) {
    let template = Template::new();
    for v in verbs {
        let mut fixture: Option<Fixture> = None;
        for stdout in [Sink::ClosedPipe, Sink::OneByteReader, Sink::Full] {
            let fx = match fixture.take() {
                Some(fx) if !v.writes => fx,
                _ => {
                    let fx = template.fixture();
                    (v.setup)(&fx);
                    fx
                }
            };
            let ran = run(fx.abcd(v.args), None, stdout, Sink::Captured);
            if stdout == Sink::Full {
                assert_eq!(ran.code, Some(1), "{}: {}", ran.what, ran.stderr);
                let lines: Vec<&str> = ran.stderr.lines().collect();
                assert_eq!(lines.len(), 1, "{}: {}", ran.what, ran.stderr);
                assert!(lines[0].starts_with("abcd: stdout cannot be written"), "{}: {}", ran.what, ran.stderr);
            } else {
                assert_quiet_exit_0(&ran);
            }
            fixture = Some(fx);
        }
    }
}

/// The verb ended quietly, as a reader that left asks.
fn assert_quiet_exit_0(ran: &Ran) {
    assert_eq!(ran.code, Some(0), "{}: {}", ran.what, ran.stderr);
    assert_eq!(ran.stderr, "", "{}", ran.what);
}

#[test]
fn help_completions_man_init_and_demo_end_quietly_on_a_closed_stdout_and_exit_1_on_a_full_one() {
    assert_the_stdout_rule(HELP_AND_GENERATED);
}

#[test]
fn the_checklist_verbs_end_quietly_on_a_closed_stdout_and_exit_1_on_a_full_one() {
    assert_the_stdout_rule(CHECKLIST);
}

#[test]
fn mode_and_decide_end_quietly_on_a_closed_stdout_and_exit_1_on_a_full_one() {
    assert_the_stdout_rule(MODE_AND_DECIDE);
}

#[test]
fn the_run_verbs_end_quietly_on_a_closed_stdout_and_exit_1_on_a_full_one() {
    assert_the_stdout_rule(RUNS);
}

#[test]
fn loop_status_journal_and_replay_end_quietly_on_a_closed_stdout_and_exit_1_on_a_full_one() {
    assert_the_stdout_rule(LOOP_JOURNAL_AND_REPLAY);
}

#[test]
fn a_verb_whose_stdout_and_stderr_both_fail_exits_1() {
    let verbs = [&["checklist"][..], &["--help"], &["completions", "bash"], &["replay", "--json"]];
    let template = Template::new();
    for args in verbs {
        let fx = template.fixture();
        an_item(&fx);
        let ran = run(fx.abcd(args), None, Sink::Full, Sink::Full);
        assert_eq!(ran.code, Some(1), "{}", ran.what);
    }
}

fn with_args(mut cmd: Command, args: &[&str]) -> Command {
    cmd.args(args);
    cmd
}

#[test]
fn refusals_and_failures_keep_their_exit_codes_when_stderr_fails() {
    let fx = Template::new().fixture();
    an_item(&fx);
    let outside = tempfile::tempdir().unwrap();
    let a_file = outside.path().join("a-file");
    std::fs::write(&a_file, "").unwrap();
    let cases: [(&dyn Fn() -> Command, i32); 4] = [
        // Outside a git working copy: refused.
        (&|| with_args(abcd(outside.path(), &outside.path().join("home")), &["checklist"]), 2),
        // Bad arguments: refused by the parse.
        (&|| fx.abcd(&["checklist", "nonsense"]), 2),
        (&|| fx.abcd(&["--no-such-flag"]), 2),
        // A home store that is a file: the append fails.
        (&|| with_args(abcd(&fx.repo.root, &a_file), &["checklist", "add", "Cannot be recorded"]), 1),
    ];
    for (command, code) in cases {
        let said = run(command(), None, Sink::Captured, Sink::Captured);
        assert_eq!(said.code, Some(code), "{}: {}", said.what, said.stderr);
        assert!(
            said.stderr.starts_with("abcd: ") || said.stderr.starts_with("error: "),
            "the line a failing stderr loses: {}",
            said.stderr
        );
        for stderr in [Sink::Full, Sink::ClosedPipe] {
            let ran = run(command(), None, Sink::Captured, stderr);
            assert_eq!(ran.code, Some(code), "{}", ran.what);
        }
    }
}

#[test]
fn a_verb_s_warning_on_a_failing_stderr_changes_nothing() {
    // A damaged journal: `abcd checklist` shows what came before the damage, with a note
    // on stderr, and exits 0.
    let fx = Template::new().fixture();
    an_item(&fx);
    fx.must(&["checklist", "add", "Second item"]);
    let journal = fx.repo.root.join(".abcd/.work.local/journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&journal, text.replacen("Fix the login bug", "Fix the login bux", 1)).unwrap();
    let noted = run(fx.abcd(&["checklist"]), None, Sink::Captured, Sink::Captured);
    assert_eq!(noted.code, Some(0), "{}", noted.what);
    assert!(noted.stderr.contains("damaged"), "the note this test relies on: {}", noted.stderr);
    for stderr in [Sink::Full, Sink::ClosedPipe] {
        let ran = run(fx.abcd(&["checklist"]), None, Sink::Captured, stderr);
        assert_eq!(ran.code, Some(0), "{}", ran.what);
    }
}

/// A hook event, the fixture payload it is run with, and whether that payload makes it
/// print a reply in a repository with one open item.
const HOOKS: &[(&str, &str, bool)] = &[
    ("session-start", "session-start-startup.json", true),
    ("user-prompt-submit", "user-prompt-submit.json", false),
    ("pre-tool-use", "pre-tool-use-write.json", true),
    ("pre-tool-use", "pre-tool-use-bash.json", false),
    ("pre-compact", "pre-compact.json", false),
    ("post-compact", "post-compact.json", false),
    ("stop", "stop.json", true),
    ("stop-failure", "stop-failure.json", false),
    ("notification", "notification.json", false),
];

fn payload(fx: &Fixture, file: &str) -> Vec<u8> {
    let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks").join(file)).unwrap();
    // The write payload is refused (abcd's own file); the Bash one is a plain command.
    text.replace("$CWD", &fx.repo.root.display().to_string())
        .replace("$TOOL", "Write")
        .replace("$PATHKEY", "file_path")
        .replace("$PATH", ".abcd/.work.local/checklist.json")
        .replace("$COMMAND", "git status")
        .into_bytes()
}

#[test]
fn every_hook_exits_0_whatever_becomes_of_its_stdout() {
    let template = Template::new();
    for &(event, file, prints) in HOOKS {
        let fx = template.fixture();
        an_item(&fx);
        let body = payload(&fx, file);
        let reply = run(fx.abcd(&["hook", event]), Some(&body), Sink::Captured, Sink::Captured);
        assert_eq!((reply.code, reply.stderr.as_str()), (Some(0), ""), "{}", reply.what);
        assert_eq!(!reply.stdout.is_empty(), prints, "{}: {}", reply.what, reply.stdout);
        // Second, while the Stop hook is far from its cap on blocks in a row, past which it
        // allows and prints nothing.
        let ran = run(fx.abcd(&["hook", event]), Some(&body), Sink::Full, Sink::Captured);
        assert_eq!(ran.code, Some(0), "{}: {}", ran.what, ran.stderr);
        let lines: Vec<&str> = ran.stderr.lines().collect();
        if prints {
            assert_eq!(lines.len(), 1, "{}: {}", ran.what, ran.stderr);
            assert!(lines[0].starts_with(&format!("abcd hook {event}: the reply cannot be written")), "{}: {}", ran.what, ran.stderr);
        } else {
            assert!(lines.is_empty(), "{} printed no reply, so nothing failed: {}", ran.what, ran.stderr);
        }
        for stdout in [Sink::ClosedPipe, Sink::OneByteReader] {
            let ran = run(fx.abcd(&["hook", event]), Some(&body), stdout, Sink::Captured);
            assert_quiet_exit_0(&ran);
        }
        let ran = run(fx.abcd(&["hook", event]), Some(&body), Sink::Full, Sink::Full);
        assert_eq!(ran.code, Some(0), "{}", ran.what);
    }
}

#[test]
fn every_hook_exits_0_when_its_stderr_is_closed_or_full() {
    let template = Template::new();
    for &(event, file, _) in HOOKS {
        let fx = template.fixture();
        an_item(&fx);
        // A payload abcd cannot read makes every hook allow and say why on stderr.
        for body in [payload(&fx, file), b"{}".to_vec()] {
            for stderr in [Sink::ClosedPipe, Sink::Full] {
                let ran = run(fx.abcd(&["hook", event]), Some(&body), Sink::Captured, stderr);
                assert_eq!(ran.code, Some(0), "{}", ran.what);
            }
        }
        let said = run(fx.abcd(&["hook", event]), Some(b"{}"), Sink::Captured, Sink::Captured);
        assert!(said.stderr.starts_with(&format!("abcd hook {event}: ")), "the line a failing stderr loses: {}", said.stderr);
    }
}

/// A verb ended by its reader still cleans up after itself: the demo's temporary folder is
/// removed.
#[test]
fn the_demo_removes_its_temporary_folder_when_its_stdout_closes() {
    let fx = Template::new().fixture();
    let tmp = tempfile::tempdir().unwrap();
    for stdout in [Sink::ClosedPipe, Sink::Full] {
        let mut demo = fx.abcd(&["demo"]);
        demo.env("TMPDIR", tmp.path());
        run(demo, None, stdout, Sink::Captured);
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(left.is_empty(), "with stdout {stdout:?} the demo left {left:?}");
    }
}
