//! The one place abcd starts git. Every git child (the mirror's plumbing and its
//! long-lived object reader, a lane's save-aside and worktree steps, the repository reads,
//! the hooks' owed-branch reads) is built by [`Git`], so each runs the same way: without a
//! shell, with [`GLOBAL_ARGS`] before its subcommand, the variables that would point it at
//! another repository ([`GIT_LOCATION_ENV`]) removed, prompts and askpass off, in a
//! process group of its own (through `platform::child`), killed at its deadline or past its
//! output cap, with the start of its stderr kept for the one line an error names.
//!
//! A caller names the folder, the arguments, any variables of its own (a temporary index,
//! a commit's identity), the deadline and the output cap, and judges the exit code itself;
//! a child that gave nothing usable is one [`RunError`], which the callers' errors wrap.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::platform::child::{self, ChildFail, Session};

/// The program every child runs, looked up on PATH.
const PROGRAM: &str = "git";
/// A local git read or step is killed when it runs longer than this.
pub const GIT_DEADLINE: Duration = Duration::from_secs(10);
/// Bytes read from one git child's stdout unless its caller names a cap of its own; a
/// child printing more is killed and the step fails (a status listing of ~100,000 changed
/// paths fits).
pub const GIT_OUTPUT_MAX: usize = 16 << 20;
/// Bytes of a child's stderr kept, in whole lines, for the one line an error names; the
/// rest is drained.
const STDERR_KEPT: usize = 8 << 10;
/// Options before every subcommand: no hooks (update-ref runs `reference-transaction`),
/// no fsmonitor (status then reads the disk itself), pathspecs taken literally (a file
/// named `*.rs` is that file), and no optional locks (git passes this on to the gits it
/// starts), so a read such as `git status` never rewrites the real index while reading it.
pub(crate) const GLOBAL_ARGS: &[&str] =
    &["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "--literal-pathspecs", "--no-optional-locks"];
/// Variables that would point a child at another repository, index or work tree than the
/// folder it is run in (they are set when abcd itself runs under a git hook), or change
/// how pathspecs read.
const GIT_LOCATION_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
];
/// Set on every child: nobody is there to answer a prompt, so a credential git would ask
/// for is an empty answer and the step fails instead of waiting for its deadline.
const NO_PROMPTS: &[(&str, &str)] = &[("GIT_TERMINAL_PROMPT", "0"), ("GIT_ASKPASS", "true"), ("SSH_ASKPASS", "true")];

/// git in one folder, with the caller's own variables.
#[derive(Clone, Debug)]
pub struct Git<'a> {
    program: &'a OsStr,
    dir: &'a Path,
    env: Vec<(OsString, OsString)>,
}

/// A finished child: its exit code (None when a signal ended it), its stdout and the start
/// of its stderr.
#[derive(Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub out: Vec<u8>,
    pub err: Vec<u8>,
}

/// Why a git child gave nothing usable. `command` is its subcommand, for messages.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("git could not be started: {why}")]
    Spawn { command: String, why: String },
    /// Its deadline passed (before it started, or while it ran): it was killed.
    #[error("git {command} did not finish before its deadline and was stopped")]
    Deadline { command: String },
    #[error("git {command} printed more than {max} bytes")]
    TooLong { command: String, max: usize },
    #[error("the output of git {command} could not be read")]
    Read { command: String },
}

impl RunError {
    pub fn command(&self) -> &str {
        match self {
            RunError::Spawn { command, .. }
            | RunError::Deadline { command }
            | RunError::TooLong { command, .. }
            | RunError::Read { command } => command,
        }
    }

    /// What went wrong, as a clause after the command's name ("git status failed: …").
    pub fn why(&self) -> String {
        match self {
            RunError::Spawn { why, .. } => format!("git could not be started: {why}"),
            RunError::Deadline { .. } => "it did not finish before its deadline".into(),
            RunError::TooLong { max, .. } => format!("it printed more than {max} bytes"),
            RunError::Read { .. } => "its output could not be read".into(),
        }
    }

    fn of(command: String, fail: ChildFail, max: usize) -> RunError {
        match fail {
            ChildFail::Spawn(why) => RunError::Spawn { command, why },
            ChildFail::Deadline => RunError::Deadline { command },
            ChildFail::TooLong => RunError::TooLong { command, max },
            ChildFail::Read => RunError::Read { command },
        }
    }
}

impl Ran {
    /// The first non-empty line of its stderr (see [`first_line`]).
    pub fn first_err_line(&self) -> Option<String> {
        first_line(&self.err)
    }

    /// How it ended, for a failure whose stderr said nothing.
    pub fn ended(&self) -> String {
        match self.code {
            Some(code) => format!("it exited with {code}"),
            None => "a signal ended it".into(),
        }
    }
}

impl<'a> Git<'a> {
    /// git run in `dir`.
    pub fn new(dir: &'a Path) -> Git<'a> {
        Git::with_program(OsStr::new(PROGRAM), dir)
    }

    /// Another program standing for git (a test's logging wrapper), built the same way.
    pub fn with_program(program: &'a OsStr, dir: &'a Path) -> Git<'a> {
        Git { program, dir, env: Vec::new() }
    }

    /// The same git with `key` set to `value` in its children's environment, over the
    /// removals and settings every child gets (a temporary `GIT_INDEX_FILE`, say).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Git<'a> {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The folder its children run in.
    pub fn dir(&self) -> &'a Path {
        self.dir
    }

    /// The child for `args`, before `platform::child` bounds it.
    fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut cmd = Command::new(self.program);
        cmd.args(GLOBAL_ARGS).args(args).current_dir(self.dir);
        for key in GIT_LOCATION_ENV {
            cmd.env_remove(key);
        }
        cmd.envs(NO_PROMPTS.iter().copied());
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Runs git with `args`, `input` (when some) written to its stdin and then closed
    /// (stdin closed otherwise), killed at `deadline` or when its stdout passes `out_cap`
    /// bytes. A nonzero exit is the caller's to judge.
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S], input: Option<Vec<u8>>, deadline: Instant, out_cap: usize) -> Result<Ran, RunError> {
        match child::run(self.command(args), input, deadline, out_cap, STDERR_KEPT) {
            Ok(f) => Ok(Ran { code: f.code, out: f.out, err: f.err }),
            Err(fail) => Err(RunError::of(subcommand(args), fail, out_cap)),
        }
    }

    /// Starts git with `args` as a child spoken to while it runs (`cat-file
    /// --batch-command`), killed at `deadline` wherever the conversation stands.
    pub fn start<S: AsRef<OsStr>>(&self, args: &[S], deadline: Instant) -> Result<Session, RunError> {
        child::start(self.command(args), deadline, STDERR_KEPT).map_err(|fail| RunError::of(subcommand(args), fail, 0))
    }
}

/// The first non-empty line of a child's stderr, trimmed; the caller decides how a line
/// that may quote a person's input is shown.
pub fn first_line(err: &[u8]) -> Option<String> {
    String::from_utf8_lossy(err).lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
}

/// The git subcommand an argument list runs (past any `-c name=value`), for messages.
pub fn subcommand<S: AsRef<OsStr>>(args: &[S]) -> String {
    let mut words = args.iter().map(|a| a.as_ref().to_string_lossy().into_owned());
    while let Some(w) = words.next() {
        if w == "-c" {
            words.next();
            continue;
        }
        return w;
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program standing for git that runs `script` (with git's arguments as `$@`),
    /// named `name` in `dir`. A child writes it, so no file this process holds open for
    /// writing can be inherited by another test's fork and make the exec fail as busy.
    fn fake_git(dir: &Path, name: &str, script: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        let status = Command::new("/bin/sh")
            .args(["-c", "printf '#!/bin/sh\\n%s\\n' \"$1\" > \"$2\" && chmod 755 \"$2\"", "sh", script])
            .arg(&path)
            .status()
            .unwrap();
        assert!(status.success());
        path
    }

    #[test]
    fn every_child_has_the_global_args_no_location_variables_and_no_prompts() {
        let dir = Path::new("/");
        let cmd = Git::new(dir).env("GIT_INDEX_FILE", "/tmp/index").command(&["status", "--porcelain"]);
        assert_eq!(cmd.get_program(), OsStr::new("git"));
        let args: Vec<&OsStr> = cmd.get_args().collect();
        let want: Vec<&OsStr> = GLOBAL_ARGS.iter().chain(&["status", "--porcelain"]).map(OsStr::new).collect();
        assert_eq!(args, want);
        assert_eq!(cmd.get_current_dir(), Some(dir));
        let envs: std::collections::HashMap<&OsStr, Option<&OsStr>> = cmd.get_envs().collect();
        for key in GIT_LOCATION_ENV.iter().filter(|k| **k != "GIT_INDEX_FILE") {
            assert_eq!(envs.get(OsStr::new(key)), Some(&None), "{key} is removed");
        }
        for (key, value) in NO_PROMPTS {
            assert_eq!(envs.get(OsStr::new(key)), Some(&Some(OsStr::new(value))), "{key}");
        }
        // A caller's own variable is set over the removal.
        assert_eq!(envs.get(OsStr::new("GIT_INDEX_FILE")), Some(&Some(OsStr::new("/tmp/index"))));
    }

    #[test]
    fn input_is_written_to_the_child_and_closed_and_a_child_ignoring_it_is_no_failure() {
        let dir = tempfile::tempdir().unwrap();
        let far = Instant::now() + Duration::from_secs(30);
        let counter = fake_git(dir.path(), "counter", "exec wc -l");
        let input = b"line one\nline two\n".repeat(20_000);
        let ran = Git::with_program(counter.as_os_str(), dir.path()).run(&["x"], Some(input), far, 1024).unwrap();
        assert_eq!(String::from_utf8(ran.out).unwrap().trim(), "40000");
        // A child that never reads its input ends normally; the writer gives up on the pipe.
        let deaf = fake_git(dir.path(), "deaf", "printf done");
        let big = vec![b'x'; 1 << 20];
        let ran = Git::with_program(deaf.as_os_str(), dir.path()).run(&["x"], Some(big), far, 1024).unwrap();
        assert_eq!((ran.code, ran.out.as_slice()), (Some(0), b"done".as_slice()));
    }

    #[test]
    fn a_child_that_gives_nothing_usable_is_named_by_its_subcommand() {
        let dir = tempfile::tempdir().unwrap();
        let far = Instant::now() + Duration::from_secs(30);
        let chatty = fake_git(dir.path(), "chatty", "printf 123456; echo 'fatal: no such thing' >&2; exit 3");
        let git = Git::with_program(chatty.as_os_str(), dir.path());
        let ran = git.run(&["log"], None, far, 6).unwrap();
        assert_eq!(
            (ran.code, ran.first_err_line().as_deref(), ran.ended().as_str()),
            (Some(3), Some("fatal: no such thing"), "it exited with 3")
        );
        let over = git.run(&["-c", "a=b", "log"], None, far, 5).unwrap_err();
        assert_eq!(over, RunError::TooLong { command: "log".into(), max: 5 });
        assert_eq!(over.to_string(), "git log printed more than 5 bytes");
        assert_eq!(git.run(&["log"], None, Instant::now(), 5).unwrap_err(), RunError::Deadline { command: "log".into() });
        let missing = dir.path().join("no-such-git");
        assert!(matches!(Git::with_program(missing.as_os_str(), dir.path()).run(&["log"], None, far, 5), Err(RunError::Spawn { .. })));
    }

    /// A line of stderr that fits the bound is kept whole; one a byte longer is not kept
    /// at all, so no message shows a line cut inside (perhaps inside a token).
    #[test]
    fn stderr_is_kept_in_whole_lines_up_to_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let far = Instant::now() + Duration::from_secs(30);
        for (len, kept) in [(STDERR_KEPT, STDERR_KEPT), (STDERR_KEPT + 1, 0)] {
            let line = fake_git(dir.path(), &format!("line-{len}"), &format!("head -c {} /dev/zero | tr '\\0' a >&2; echo >&2", len - 1));
            let ran = Git::with_program(line.as_os_str(), dir.path()).run(&["x"], None, far, 16).unwrap();
            assert_eq!(ran.err.len(), kept, "a line of {len} bytes");
        }
    }

    #[test]
    fn a_message_names_the_subcommand_past_any_config() {
        assert_eq!(subcommand(&["-c", "pack.window=0", "push", "origin"]), "push");
        assert_eq!(subcommand(&["fetch"]), "fetch");
        assert_eq!(subcommand::<&str>(&[]), "");
    }
}
