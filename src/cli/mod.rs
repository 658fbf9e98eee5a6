//! The command-line layer: parses arguments, calls the library, prints, and picks the
//! exit code (0 ok, 1 failure or corruption found, 2 refused or usage). Nothing below
//! this folder prints.

/// `print!` for stdout as data: see [`Stdout`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::write_out(format_args!($($arg)*)) };
}

/// `println!` for stdout as data: see [`Stdout`].
macro_rules! outln {
    () => { $crate::cli::write_out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::write_out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprintln!` that never panics: see [`write_err`].
macro_rules! errln {
    ($($arg:tt)*) => { $crate::cli::write_err(format_args!("{}\n", format_args!($($arg)*))) };
}

mod checklist_cmd;
mod demo;
mod design_done_cmd;
mod hook_cmd;
mod init;
mod journal_cmd;
mod launch_cmd;
mod loop_cmd;
mod man;
mod mirror_cmd;
mod mode_cmd;
mod replay;
mod run_cmd;
mod status_line_cmd;
mod terminal;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::command::Blame;
use crate::event::Scope;
use crate::journal::storage::RealDisk;
use crate::journal::{Journal, JournalPaths};
use crate::places;

pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILURE: i32 = 1;
pub const EXIT_REFUSED: i32 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "abcd",
    version,
    about = "Keeps AI coding agents' working state crash-safe and compaction-proof",
    long_about = "abcd records every state change of a coding agent's work as an fsynced, hash-chained \
JSONL event, and derives from the journal the files agents and people read. Crash recovery is a \
replay; an audit is `abcd replay`.\n\nExit codes: 0 ok, 1 failure or corruption found, 2 refused or usage error."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Verify, repair, restore or checkpoint a journal
    #[command(subcommand)]
    Journal(JournalCommand),
    /// Verify a journal from its first event, print one audit line per event, and check
    /// every file derived from it, and every checkpoint, against what the journal says
    Replay(replay::ReplayArgs),
    /// Show the journal at work in a temporary folder: appends, a torn tail, corruption,
    /// a repair and a replay
    Demo,
    /// Make this git repository managed by abcd: create `.abcd/` and the local tier, keep
    /// the local tier out of git, and install abcd's hooks into `.claude/settings.json`
    /// (with `--host codex`: into Codex's `$CODEX_HOME/hooks.json`, trusted in its
    /// `config.toml`)
    Init(init::InitArgs),
    /// Run one agent host's hook (Claude Code's, or Codex CLI's with `--host codex`): reads
    /// the host's JSON payload on stdin, writes the host's JSON output on stdout; always
    /// exits 0 (on abcd's own fault it allows and says why on stderr)
    Hook {
        /// The host's hook event this call is for
        #[arg(value_parser = event_arg())]
        event: crate::host::HookEvent,
        /// The host whose payload and output format this call uses
        #[arg(long, default_value = "claude", value_parser = host_arg())]
        host: crate::host::Host,
    },
    /// The line Claude Code's status bar shows: reads the host's status-line payload on
    /// stdin and prints the away mode (until when, set by whom), the items owed and a
    /// degraded plan; nothing while the person is present and the plan is whole. Always
    /// exits 0, printing nothing on stdout on abcd's own fault (`abcd init` installs it)
    #[command(name = "status-line")]
    StatusLine,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions {
        /// The shell to print the script for
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff): abcd(1), or a verb's as the main page lists them (`abcd man
    /// checklist` prints abcd-checklist(1), `abcd man run start` abcd-run-start(1))
    Man {
        /// The verb, and its subcommand if it has them (`run start`, or as the page is named:
        /// `run-start`, `abcd-run-start`); none for the main page
        #[arg(value_name = "VERB")]
        verb: Vec<String>,
    },
    Checklist(checklist_cmd::ChecklistArgs),
    Mode(mode_cmd::ModeArgs),
    Decide(mode_cmd::DecideArgs),
    /// Runs this machine drives: start one (with its live driver), take over one whose
    /// driver is gone, halt, lift, finish
    #[command(subcommand)]
    Run(run_cmd::RunAction),
    Launch(launch_cmd::LaunchArgs),
    Collect(run_cmd::CollectArgs),
    Resume(run_cmd::ResumeArgs),
    /// (internal) the watcher `abcd launch` starts for each agent
    #[command(name = "__watch-launch", hide = true)]
    WatchLaunch(launch_cmd::WatchArgs),
    /// The phased checklist loop: an implementer and a reviewer agent, one phase at a time
    #[command(subcommand)]
    Loop(loop_cmd::LoopAction),
    Mirror(mirror_cmd::MirrorArgs),
    /// (internal) one agent turn of `abcd loop`
    #[command(name = "__loop-turn", hide = true)]
    LoopTurn(loop_cmd::TurnArgs),
    /// (internal) runs the person's notify command within its bound (docs/notify.md)
    #[command(name = "__notify-run", hide = true)]
    NotifyRun(mode_cmd::NotifyRunArgs),
}

#[derive(Subcommand, Debug)]
enum JournalCommand {
    /// Check the hash chain from the first event and the head anchor (fast; the files
    /// derived from the journal are not read).
    /// Exit 0 when it verifies (an unacknowledged torn tail is allowed), 1 when it is
    /// corrupt, cut short, rolled back or replaced, or emptied or deleted where the home
    /// store recorded a journal.
    Verify(JournalArgs),
    /// Move a corrupt or torn part of the journal to quarantine/ and continue the chain
    /// with a `journal.repaired` event; or accept a journal that disagrees with its head
    /// anchor or its path's record; or, where the journal was lost, start a new one whose
    /// first event records the loss. Nothing is deleted without a copy.
    Repair(JournalArgs),
    /// Rebuild a lost journal from this machine's own mirror, byte for byte
    ///
    /// For a journal deleted, emptied, replaced by another file or cut short: its lines come
    /// back from this machine's own mirror ref (refs/abcd/journals/<id>, left by `abcd mirror
    /// push`; no network). What the path held is first copied to quarantine/. Events
    /// acknowledged after the last push are named lost by a journal.repaired. Refused when
    /// there is no mirror of the journal here, or when the journal is intact or damaged in
    /// place (`abcd journal repair` is for damage).
    Restore(RestoreArgs),
    /// Write a checkpoint: the state the journal gives now, so later reads start from it
    /// (checkpoints are caches: deleting them changes only speed)
    Checkpoint(JournalArgs),
}

/// Which journal: the working copy's (default), the repository's, the machine's, or a path.
#[derive(Args, Debug, Clone)]
pub struct JournalChoice {
    /// A journal file anywhere
    #[arg(long, value_name = "PATH", conflicts_with_all = ["repo", "machine"])]
    journal: Option<PathBuf>,
    /// The repository journal in the home store (away mode)
    #[arg(long, conflicts_with = "machine")]
    repo: bool,
    /// The machine journal in the home store (runs)
    #[arg(long)]
    machine: bool,
}

#[derive(Args, Debug)]
struct JournalArgs {
    #[command(flatten)]
    choice: JournalChoice,
    /// Print newline-delimited JSON for scripts
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct RestoreArgs {
    /// A journal file of this repository named by its path
    #[arg(long, value_name = "PATH", conflicts_with = "repo")]
    journal: Option<PathBuf>,
    /// The repository journal in the home store (away mode); the machine journal is not
    /// mirrored
    #[arg(long)]
    repo: bool,
    /// The journal to restore (32 hex digits), when the home store records none at the path
    /// or records another one (`git for-each-ref refs/abcd/journals/` lists the mirrors)
    #[arg(long, value_name = "JOURNAL_ID")]
    id: Option<String>,
    /// Print newline-delimited JSON for scripts
    #[arg(long)]
    json: bool,
}

impl JournalChoice {
    /// The journal's paths, and the scope it would be created with.
    fn resolve(&self) -> anyhow::Result<(JournalPaths, Option<Scope>)> {
        if let Some(path) = &self.journal {
            return Ok((JournalPaths::beside(path), None));
        }
        self.resolve_at(&places::Place::here()?)
    }

    /// [`JournalChoice::resolve`] for a verb that resolved its place already.
    fn resolve_at(&self, place: &places::Place) -> anyhow::Result<(JournalPaths, Option<Scope>)> {
        if let Some(path) = &self.journal {
            return Ok((JournalPaths::beside(path), None));
        }
        let found = if self.machine {
            places::machine_journal()
        } else if self.repo {
            place.repository()
        } else {
            place.working_copy()
        };
        let (paths, scope) = found.map_err(with_journal_hint)?;
        Ok((paths, Some(scope)))
    }

    fn open(&self) -> anyhow::Result<Journal> {
        let (paths, scope) = self.resolve()?;
        let journal = places::open_journal_for_verb(RealDisk::shared(), paths)?;
        Ok(match scope {
            Some(scope) => journal.expecting(scope),
            None => journal,
        })
    }
}

/// The places of the folder a verb runs in, resolved once for the verb; a folder that
/// cannot be learned (removed under the process) is a failure.
pub(crate) fn place_here() -> Result<places::Place, crate::command::CommandError> {
    places::Place::here().map_err(crate::command::CommandError::failed)
}

/// A verb that takes `--journal` says so when it finds no working copy: it can still read
/// a journal file named by path.
fn with_journal_hint(e: places::PlaceError) -> anyhow::Error {
    match e {
        places::PlaceError::NotInWorkingCopy { cwd } => crate::command::CommandError::from(
            crate::refusal::Refusal::new(
                crate::refusal::RefusalKind::NotInRepository,
                "journal",
                format!("{} is not inside a git repository", cwd.display()),
            )
            .instead("run this inside one, or name a journal file with --journal PATH"),
        )
        .into(),
        other => other.into(),
    }
}

/// Test seam (test builds only): `ABCD_TEST_PANIC=1` panics before any verb runs, to prove
/// that a real panic still exits 101 with its message (`tests/cli/process_start.rs`).
#[cfg(feature = "test-support")]
const PANIC_ENV: &str = "ABCD_TEST_PANIC";

/// Runs the CLI and returns the exit code. A failed stdout write ends the verb where it
/// happens (see [`Stdout`]) and is answered here; any other panic goes on to the process
/// start, which exits 101.
pub fn main() -> i32 {
    #[cfg(feature = "test-support")]
    if std::env::var_os(PANIC_ENV).is_some() {
        panic!("panic injected by {PANIC_ENV}");
    }
    let verb = || {
        let code = dispatch();
        // The last partial line is still in stdout's buffer: flushed here, its failure is
        // answered as any other write's.
        let _ = std::io::Write::flush(&mut Stdout);
        code
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(verb)) {
        Ok(code) => code,
        Err(payload) => match payload.downcast::<StdoutFailed>() {
            Ok(failed) => failed.exit_code(),
            Err(panic) => std::panic::resume_unwind(panic),
        },
    }
}

fn dispatch() -> i32 {
    // The host runs `abcd hook <event>` on every prompt, tool call and stop. That exact
    // form skips clap, whose parse builds the definition of every subcommand, a tenth of
    // the session-start hook's whole time. Anything else, `abcd hook --help` included,
    // goes through clap.
    if let Some((event, host)) = plain_hook_call(std::env::args_os()) {
        return hook_cmd::run(event, host);
    }
    // The host runs `abcd status-line` on every change of the conversation: the same.
    if plain_status_line_call(std::env::args_os()) {
        return status_line_cmd::run();
    }
    // `abcd checklist ...` is parsed against the checklist's own definition first (see
    // `checklist_call`); anything it does not take whole goes through the full parse.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(checklist) = checklist_call(&args) {
        return finish(run(Cli { command: Command::Checklist(checklist) }));
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // `--help`, `--version`: clap writes them to stdout itself.
            return match e.print() {
                Ok(()) => EXIT_OK,
                Err(error) => StdoutFailed(error).exit_code(),
            };
        }
        Err(e) => {
            // clap quotes the arguments it could not place; never let that repeat a secret.
            let rendered = e.render().to_string();
            if crate::secrets::scan(&rendered).is_some() {
                errln!("abcd: the command line could not be parsed ({}); run `abcd --help`", e.kind());
            } else {
                // A usage error is refused whether or not its message could be written.
                let _ = e.print();
            }
            return EXIT_REFUSED;
        }
    };
    finish(run(cli))
}

/// Set once a stdout write failed: later writes are dropped, so one failure is answered once.
static STDOUT_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The first failed stdout write, carried by unwinding from the write to [`main`], so that
/// destructors still run (the demo's temporary folder is removed). `resume_unwind` calls no
/// panic hook, so nothing else is printed.
struct StdoutFailed(std::io::Error);

impl StdoutFailed {
    /// A closed pipe (`abcd checklist | head -1`) ends quietly with exit 0: the reader took
    /// what it wanted. Any other error is one line on stderr and exit 1.
    fn exit_code(self) -> i32 {
        STDOUT_FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
        if self.0.kind() == std::io::ErrorKind::BrokenPipe {
            return EXIT_OK;
        }
        errln!("abcd: stdout cannot be written ({}); the output stops there, and what the command did before stands", self.0);
        EXIT_FAILURE
    }
}

/// stdout as data. Its writes return no error but an interrupted one (which `write_all` and
/// `write_fmt` try again): the first that fails ends the verb, a [`StdoutFailed`] unwinding
/// to [`main`], where `println!` would panic. SIGPIPE is ignored (`main.rs`), so a closed
/// pipe is such an error. Every verb prints through it (`out!`, `outln!`, and as a writer).
pub(crate) struct Stdout;

impl Stdout {
    fn answer<T>(result: std::io::Result<T>) -> std::io::Result<T> {
        match result {
            Err(e) if e.kind() != std::io::ErrorKind::Interrupted => {
                // Set before unwinding: a buffer flushed as it is dropped on the way writes
                // nothing, so the unwinding is never doubled.
                STDOUT_FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
                std::panic::resume_unwind(Box::new(StdoutFailed(e)))
            }
            other => other,
        }
    }
}

impl std::io::Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if STDOUT_FAILED.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(buf.len());
        }
        Self::answer(std::io::stdout().lock().write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if STDOUT_FAILED.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        Self::answer(std::io::stdout().lock().flush())
    }
}

/// Writes `bytes` to stdout and flushes, for the one writer that must not stop at a failure
/// (a hook answers for itself): the error is returned, and later writes are dropped.
pub(crate) fn try_write_out(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).inspect_err(|_| STDOUT_FAILED.store(true, std::sync::atomic::Ordering::Relaxed))
}

/// Writes `args` as text a terminal shows rather than acts on (see [`terminal`]): what is
/// printed holds values from people, agents and journals.
fn write_safe(to: &mut impl std::io::Write, args: std::fmt::Arguments) -> std::io::Result<()> {
    let text = args.as_str().map_or_else(|| std::borrow::Cow::Owned(args.to_string()), std::borrow::Cow::Borrowed);
    to.write_all(terminal::terminal_safe(&text, terminal::Lines::Many).as_bytes())
}

/// What `out!` and `outln!` write: see [`Stdout`].
pub(crate) fn write_out(args: std::fmt::Arguments) {
    let _ = write_safe(&mut Stdout, args);
}

/// Writes to stderr, which only says how things went: a stderr that cannot be written
/// (closed, full) changes nothing, not the exit code either (a refusal still exits 2, a
/// hook still allows and exits 0), where `eprintln!` would panic.
pub(crate) fn write_err(args: std::fmt::Arguments) {
    let _ = write_safe(&mut std::io::stderr().lock(), args);
}

/// `s` as one POSIX shell word, quoted only when it must be, so a printed command can be
/// pasted as it is.
pub(crate) fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_./=:,+@%-".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The exit code of a command, printing its error (if any) on stderr.
fn finish(result: anyhow::Result<i32>) -> i32 {
    match result {
        Ok(code) => code,
        Err(e) => {
            errln!("abcd: {e:#}");
            exit_code_for(&e)
        }
    }
}

/// `abcd checklist ...` parsed with only the `checklist` subcommand's definition: clap's
/// full parse builds every subcommand's first, and agents run these verbs often. `None` for any other command line, and for any the
/// checklist parse refuses or answers itself (`--help`, a usage error): the full parse
/// then runs and speaks, so help and errors read as they always do. The plainest add
/// skips clap altogether (`checklist_cmd::plain_add`). A test pins that the parses agree.
fn checklist_call(args: &[std::ffi::OsString]) -> Option<checklist_cmd::ChecklistArgs> {
    use clap::FromArgMatches as _;
    if args.get(1)? != "checklist" {
        return None;
    }
    if let Some(plain) = checklist_cmd::plain_add(args) {
        return Some(plain);
    }
    let definition = checklist_cmd::definition_for(args.get(2).map(|a| a.as_os_str()));
    let matches = definition.try_get_matches_from(&args[1..]).ok()?;
    checklist_cmd::ChecklistArgs::from_arg_matches(&matches).ok()
}

/// Whether the command line is `abcd status-line` with nothing else.
fn plain_status_line_call(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    let args: Vec<std::ffi::OsString> = args.take(3).collect();
    matches!(&args[..], [_, verb] if verb == "status-line")
}

/// `abcd hook <event>`: one of `HookEvent::ALL` by its command-line name, the one list of
/// the events abcd handles.
fn event_arg() -> impl clap::builder::TypedValueParser<Value = crate::host::HookEvent> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(crate::host::HookEvent::ALL.map(crate::host::HookEvent::cli_name))
        .map(|name| crate::host::HookEvent::from_cli_name(&name).expect("a possible value is an event's name"))
}

/// `--host <name>`, as `init` and `hook` both take it: one of the hosts abcd has an adapter
/// for, by the name `host::Host` gives it.
fn host_arg() -> impl clap::builder::TypedValueParser<Value = crate::host::Host> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(crate::host::Host::ALL.map(crate::host::Host::name))
        .map(|name| crate::host::Host::from_name(&name).expect("a possible value is a host's name"))
}

/// The event and host of `abcd hook <event>` or `abcd hook <event> --host <host>` with
/// nothing else on the command line.
fn plain_hook_call(args: impl Iterator<Item = std::ffi::OsString>) -> Option<(crate::host::HookEvent, crate::host::Host)> {
    use crate::host::{HookEvent, Host};
    let args: Vec<std::ffi::OsString> = args.take(6).collect();
    match &args[..] {
        [_, hook, event] if hook == "hook" => Some((HookEvent::from_cli_name(event.to_str()?)?, Host::Claude)),
        [_, hook, event, flag, host] if hook == "hook" && flag == "--host" => {
            Some((HookEvent::from_cli_name(event.to_str()?)?, Host::from_name(host.to_str()?)?))
        }
        _ => None,
    }
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Journal(JournalCommand::Verify(a)) => journal_cmd::verify(&a.choice, a.json),
        Command::Journal(JournalCommand::Repair(a)) => journal_cmd::repair(&a.choice, a.json),
        Command::Journal(JournalCommand::Checkpoint(a)) => journal_cmd::checkpoint(&a.choice, a.json),
        Command::Journal(JournalCommand::Restore(a)) => {
            journal_cmd::restore(&JournalChoice { journal: a.journal, repo: a.repo, machine: false }, a.id.as_deref(), a.json)
        }
        Command::Replay(a) => replay::run(&a),
        Command::Demo => demo::run(),
        Command::Init(a) => init::run(&a),
        Command::StatusLine => Ok(status_line_cmd::run()),
        Command::Hook { event, host } => Ok(hook_cmd::run(event, host)),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "abcd", &mut Stdout);
            Ok(EXIT_OK)
        }
        Command::Man { verb } => man::run(&verb),
        Command::Checklist(a) => checklist_cmd::run(a),
        Command::Mode(a) => mode_cmd::run_mode(a),
        Command::Decide(a) => mode_cmd::run_decide(a),
        Command::Run(a) => run_cmd::run_run(a),
        Command::Launch(a) => launch_cmd::run_launch(a),
        Command::Collect(a) => run_cmd::run_collect(a),
        Command::Resume(a) => run_cmd::run_resume(a),
        Command::WatchLaunch(a) => launch_cmd::run_watch(a),
        Command::Loop(a) => loop_cmd::run_loop(a),
        Command::LoopTurn(a) => loop_cmd::run_turn(a),
        Command::NotifyRun(a) => mode_cmd::run_notify(a),
        Command::Mirror(a) => mirror_cmd::run_mirror(a),
    }
}

/// The one mapping from errors to exit codes: a refusal (the person can fix it) exits 2,
/// everything else 1. Which errors are refusals is the command layer's word
/// (`command::error::blame_of`).
fn exit_code_for(e: &anyhow::Error) -> i32 {
    match e.chain().find_map(crate::command::error::blame_of) {
        Some(Blame::Refused) => EXIT_REFUSED,
        Some(Blame::Failed) | None => EXIT_FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{HookEvent, Host};
    use std::ffi::OsString;

    fn args(list: &[&str]) -> impl Iterator<Item = OsString> {
        list.iter().map(OsString::from).collect::<Vec<_>>().into_iter()
    }

    #[test]
    fn the_plain_hook_call_takes_exactly_abcd_hook_and_a_known_event() {
        for event in HookEvent::ALL {
            assert_eq!(plain_hook_call(args(&["abcd", "hook", event.cli_name()])), Some((event, Host::Claude)));
            for host in Host::ALL {
                assert_eq!(plain_hook_call(args(&["abcd", "hook", event.cli_name(), "--host", host.name()])), Some((event, host)));
            }
        }
        for other in [
            &["abcd", "hook"][..],
            &["abcd", "hook", "--help"],
            &["abcd", "hook", "nonsense"],
            &["abcd", "hook", "stop", "extra"],
            &["abcd", "hook", "stop", "--host"],
            &["abcd", "hook", "stop", "--host", "gemini"],
            &["abcd", "hook", "stop", "--host", "codex", "extra"],
            &["abcd", "hook", "stop", "--host=codex"],
            &["abcd", "checklist", "stop"],
            &["abcd"],
        ] {
            assert_eq!(plain_hook_call(args(other)), None, "{other:?} goes through clap");
        }
    }

    #[test]
    fn the_plain_status_line_call_takes_exactly_abcd_status_line() {
        assert!(plain_status_line_call(args(&["abcd", "status-line"])));
        for other in [&["abcd", "status-line", "--help"][..], &["abcd", "status-line", "x"], &["abcd", "status"], &["abcd"]] {
            assert!(!plain_status_line_call(args(other)), "{other:?} goes through clap");
        }
        // The plain call and clap's parse run the same verb.
        let parsed = Cli::try_parse_from(["abcd", "status-line"]).unwrap();
        assert!(matches!(parsed.command, Command::StatusLine));
    }

    #[test]
    fn clap_and_the_plain_hook_call_know_the_same_events() {
        let command = <Cli as clap::CommandFactory>::command();
        let hook = command.find_subcommand("hook").expect("a hook subcommand");
        let arg = hook.get_arguments().find(|a| a.get_id() == "event").expect("the event argument");
        let mut clap_names: Vec<String> = arg.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
        let mut ours: Vec<String> = HookEvent::ALL.iter().map(|e| e.cli_name().to_string()).collect();
        clap_names.sort();
        ours.sort();
        assert_eq!(clap_names, ours);
        let arg = hook.get_arguments().find(|a| a.get_id() == "host").expect("the host argument");
        let clap_hosts: Vec<String> = arg.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
        assert_eq!(clap_hosts, Host::ALL.iter().map(|h| h.name().to_string()).collect::<Vec<_>>());
        let parsed = Cli::try_parse_from(["abcd", "hook", "stop", "--host=codex"]).unwrap();
        assert!(matches!(parsed.command, Command::Hook { host, .. } if host == crate::host::Host::Codex));
    }

    /// Words a checklist command line is made of: verbs, every flag, values of each form,
    /// and things that must be refused or answered by clap itself.
    const CHECKLIST_WORDS: &[&str] = &[
        "add",
        "set",
        "show",
        "render",
        "list",
        "--json",
        "--budget",
        "500",
        "100",
        "x",
        "--waits-on",
        "pr:12",
        "--next-look",
        "+2h",
        "09:00",
        "--promise",
        "back by noon",
        "--owner-ref",
        "branch:fix",
        "--credential-kind",
        "token",
        "--credential-scope",
        "repo:read",
        "--credential-expiry",
        "--state",
        "done",
        "working",
        "--title",
        "Measure it",
        "--clear-owner-refs",
        "--clear-credential",
        "--",
        "-",
        "-x",
        "--help",
        "-h",
        "--version",
        "help",
        "",
        "Ünïcode title",
        "--json=true",
    ];

    /// What may follow `abcd checklist`: mostly a verb, so most lines reach a verb's parse.
    const CHECKLIST_FIRST_WORDS: &[&str] = &["add", "add", "set", "set", "show", "render", "--json", "help", "x"];

    fn command_line(first: u8, rest: &[u8]) -> Vec<OsString> {
        let first = CHECKLIST_FIRST_WORDS[first as usize % CHECKLIST_FIRST_WORDS.len()];
        let rest = rest.iter().map(|&p| CHECKLIST_WORDS[p as usize % CHECKLIST_WORDS.len()]);
        ["abcd", "checklist", first].into_iter().chain(rest).map(OsString::from).collect()
    }

    /// What the full parse makes of `line`, as the checklist arguments it would run with.
    fn full_parse(line: &[OsString]) -> Option<String> {
        match Cli::try_parse_from(line).ok()?.command {
            Command::Checklist(a) => Some(format!("{a:?}")),
            _ => None,
        }
    }

    /// Whatever the checklist-only parse takes, the full parse takes the same way; what it
    /// does not take, the full parse handles (help, errors).
    #[test]
    fn the_checklist_parse_agrees_with_the_full_parse() {
        fn agrees(first: u8, rest: Vec<u8>) -> bool {
            let line = command_line(first, &rest[..rest.len().min(8)]);
            match checklist_call(&line) {
                Some(fast) => full_parse(&line) == Some(format!("{fast:?}")),
                None => true,
            }
        }
        quickcheck::QuickCheck::new().tests(3000).quickcheck(agrees as fn(u8, Vec<u8>) -> bool);
    }

    #[test]
    fn the_checklist_parse_takes_the_usual_verbs_and_leaves_help_and_errors_to_the_full_parse() {
        let taken: &[&[&str]] = &[
            &["abcd", "checklist"],
            &["abcd", "checklist", "--json"],
            &["abcd", "checklist", "--all", "--json"],
            &["abcd", "checklist", "add", "Measure it", "--owner-ref", "branch:fix", "--json"],
            &["abcd", "checklist", "set", "measure-it", "--state", "done"],
            &["abcd", "checklist", "render", "--budget", "500"],
            &["abcd", "checklist", "show", "measure-it"],
        ];
        for line in taken {
            let line: Vec<OsString> = line.iter().map(OsString::from).collect();
            let fast = checklist_call(&line).unwrap_or_else(|| panic!("{line:?} is not taken"));
            assert_eq!(Some(format!("{fast:?}")), full_parse(&line), "{line:?}");
        }
        let plain: Vec<OsString> = ["abcd", "checklist", "add", "Measure it"].iter().map(OsString::from).collect();
        assert!(checklist_cmd::plain_add(&plain).is_some(), "the plainest add is read without clap");
        for not_plain in [
            &["abcd", "checklist", "add", "-x"][..],
            &["abcd", "checklist", "add", ""],
            &["abcd", "checklist", "add", "T", "--json"],
            &["abcd", "checklist", "set", "T"],
        ] {
            let line: Vec<OsString> = not_plain.iter().map(OsString::from).collect();
            assert!(checklist_cmd::plain_add(&line).is_none(), "{line:?} goes to clap");
        }
        let left: &[&[&str]] = &[
            &["abcd", "checklist", "--help"],
            &["abcd", "checklist", "add", "-h"],
            &["abcd", "checklist", "add"],
            &["abcd", "checklist", "set", "x", "--state"],
            &["abcd", "checklist", "nonsense"],
            &["abcd", "journal", "verify"],
            &["abcd"],
        ];
        for line in left {
            let line: Vec<OsString> = line.iter().map(OsString::from).collect();
            assert!(checklist_call(&line).is_none(), "{line:?} must go through the full parse");
        }
    }
}
