//! Working copies for the tests that run git or the abcd binary: a git repository in a
//! temp folder, read and written with no system or global git config (the machine's own
//! cannot change a test), on branch `main` with one identity, and its own home store.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Who commits in every test repository (`user.name`, `user.email` in its own config).
pub const USER_NAME: &str = "Pat Person";
pub const USER_EMAIL: &str = "pat@example.com";

/// The file the first commit holds unless a test names others.
pub const README: (&str, &str) = ("README", "hello\n");

/// Runs git in `dir` with no system or global config; panics when it fails. Its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_with(dir, args, &[])
}

/// `git`, with more environment for git (`GIT_OPTIONAL_LOCKS`, commit dates).
pub fn git_with(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .envs(envs.iter().copied())
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?} in {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Makes `root` (created if missing) a repository on `main` that commits as
/// [`USER_NAME`]; nothing committed.
pub fn init(root: &Path) {
    std::fs::create_dir_all(root).expect("the repository's folder");
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["config", "user.name", USER_NAME]);
    git(root, &["config", "user.email", USER_EMAIL]);
}

/// [`init`], then `files` written and committed as "first".
pub fn create(root: &Path, files: &[(&str, &str)]) {
    init(root);
    for (name, text) in files {
        std::fs::write(root.join(name), text).expect("a file of the first commit");
    }
    commit_all(root, "first");
}

/// Stages every change in the working copy and commits it.
pub fn commit_all(root: &Path, message: &str) {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", message]);
}

/// The abcd binary under test, run in `root` with `home` as its home store, as the
/// person's own terminal runs it: without a host's tool marks (`CLAUDECODE`, …) or session,
/// which a developer running the tests inside an agent session would pass on, and which
/// make the person's verbs refuse.
pub fn abcd(root: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
    cmd.current_dir(root).env("ABCD_HOME", home).env_remove(abcd::host::claude::SESSION_ENV);
    for (mark, _) in abcd::host::HOST_TOOL_MARKS {
        cmd.env_remove(mark);
    }
    cmd
}

/// `abcd hook <event>` in `root` with `payload` on its standard input, as the host runs it.
pub fn hook(root: &Path, home: &Path, event: &str, payload: &str) -> std::process::Output {
    output_with_stdin(abcd(root, home).args(["hook", event]), payload.as_bytes())
}

/// Runs `cmd` to its end with `input` on its standard input, stdout and stderr captured.
pub fn output_with_stdin(cmd: &mut Command, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the command runs");
    child.stdin.take().expect("a piped stdin").write_all(input).expect("the command reads its input");
    child.wait_with_output().expect("the command runs")
}

/// `abcd init` in `root` (the local tier, the hooks), which must succeed.
pub fn abcd_init(root: &Path, home: &Path) {
    let out = abcd(root, home).arg("init").output().expect("abcd runs");
    assert!(out.status.success(), "abcd init: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

/// One test's working copy, `wc/` in a temp folder, with the home store `home/` beside it.
pub struct TestRepo {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
}

impl TestRepo {
    /// A git repository whose first commit holds [`README`].
    pub fn new() -> TestRepo {
        let repo = TestRepo::empty();
        create(&repo.root, &[README]);
        repo
    }

    /// Only an empty `.git/refs/heads`: abcd finds the working copy by its `.git`, and no
    /// git runs (for tests of the checklist and the hooks that need no history).
    pub fn folder() -> TestRepo {
        let repo = TestRepo::empty();
        std::fs::create_dir_all(repo.root.join(".git/refs/heads")).expect("a .git folder");
        repo
    }

    /// Managed by abcd: `abcd init` run in it.
    pub fn managed(self) -> TestRepo {
        abcd_init(&self.root, &self.home);
        self
    }

    fn empty() -> TestRepo {
        let dir = tempfile::tempdir().expect("a temp folder");
        let root = dir.path().join("wc");
        std::fs::create_dir_all(&root).expect("the working copy's folder");
        TestRepo { home: dir.path().join("home"), root, dir }
    }
}

/// A finished command's exit code, stdout and stderr, for failure messages.
pub fn text(out: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every file under `root` but git's own and abcd's local tier, with its bytes.
pub fn person_files(root: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, into: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().to_string();
            if rel == ".git" || rel == ".abcd/.work.local" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, into);
            } else {
                into.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut files = std::collections::BTreeMap::new();
    walk(root, root, &mut files);
    files
}
