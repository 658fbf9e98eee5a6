//! Git's answers kept between hooks (docs/own-work.md, "Git's answers, kept"): a prompt hook
//! and a Stop start no git child when no ref, reflog or config file changed since the last
//! hook, present and away; a change makes the next hook ask git again. Each hook runs with
//! a logging `git` first on its PATH, which writes one line per child to a log and runs
//! the real git.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::repo::{self, TestRepo};
use serde_json::{Value, json};

struct Lab {
    repo: TestRepo,
    /// The folder holding the logging `git` and the stub `gh`, first on the hooks' PATH.
    bin: PathBuf,
    log: PathBuf,
    /// Variables set on every hook after the isolating ones (so they may replace them).
    env: Vec<(String, PathBuf)>,
}

impl Lab {
    /// A managed working copy on branch `feature` with a recent commit of its own (so the
    /// prompt's behind check and the Stop's owed reading have an own branch to read).
    fn new() -> Lab {
        let repo = TestRepo::new().managed();
        repo::git(&repo.root, &["switch", "-q", "-c", "feature"]);
        std::fs::write(repo.root.join("parser.rs"), "fn parse() {}\n").unwrap();
        repo::commit_all(&repo.root, "parser");
        let bin = repo.dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let log = repo.dir.path().join("git-children.log");
        let real_git = abcd::owed::find_on_path("git", std::env::var_os("PATH").as_deref()).expect("git on PATH");
        let script = format!("#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n", log.display(), real_git.display());
        write_program(&bin.join("git"), &script);
        write_program(&bin.join("gh"), "#!/bin/sh\nprintf '[]\\n'\n");
        Lab { repo, bin, log, env: Vec::new() }
    }

    fn hook(&self, event: &str, payload: Value) -> Output {
        let path = std::env::join_paths(
            std::iter::once(self.bin.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
        )
        .unwrap();
        let mut cmd = repo::abcd(&self.repo.root, &self.repo.home);
        cmd.args(["hook", event])
            .env("PATH", path)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("ABCD_GH", self.bin.join("gh"))
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        let out = repo::output_with_stdin(&mut cmd, payload.to_string().as_bytes());
        assert_eq!(out.status.code(), Some(0), "a hook always exits 0: {}", repo::text(&out));
        assert!(out.stderr.is_empty(), "abcd hook {event} warned: {}", repo::text(&out));
        out
    }

    fn prompt(&self) -> Output {
        self.hook(
            "user-prompt-submit",
            json!({"session_id": "s1", "cwd": self.repo.root, "hook_event_name": "UserPromptSubmit", "prompt": "go on"}),
        )
    }

    fn stop(&self) -> Output {
        self.hook(
            "stop",
            json!({"session_id": "s1", "cwd": self.repo.root, "hook_event_name": "Stop", "stop_hook_active": false,
                "last_assistant_message": "Done.", "background_tasks": [], "session_crons": []}),
        )
    }

    /// The git children started since the last call, one line each (their arguments).
    fn children(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let _ = std::fs::remove_file(&self.log);
        text.lines().map(str::to_owned).collect()
    }
}

fn write_program(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_prompt_and_a_stop_start_no_git_child_while_the_repository_is_unchanged() {
    let lab = Lab::new();
    lab.prompt();
    lab.stop();
    let first = lab.children();
    assert!(!first.is_empty(), "the first hooks ask git (the test's wrapper is on the hooks' PATH)");
    lab.prompt();
    assert_eq!(lab.children(), Vec::<String>::new(), "a prompt hook with nothing changed since the last");
    lab.stop();
    assert_eq!(lab.children(), Vec::<String>::new(), "a Stop with nothing changed since the last");
}

#[test]
fn a_commit_makes_the_next_hook_ask_git_again_and_the_one_after_not() {
    let lab = Lab::new();
    lab.prompt();
    lab.stop();
    lab.children();
    std::fs::write(lab.repo.root.join("lexer.rs"), "fn lex() {}\n").unwrap();
    repo::commit_all(&lab.repo.root, "lexer");
    lab.prompt();
    assert!(!lab.children().is_empty(), "the prompt after a commit asks git");
    lab.stop();
    assert!(!lab.children().is_empty(), "the Stop after a commit asks git (its reading is kept apart from the prompt's)");
    lab.prompt();
    lab.stop();
    assert_eq!(lab.children(), Vec::<String>::new(), "the hooks after those ask nothing");
}

#[test]
fn an_away_stop_with_the_forge_listing_fresh_starts_no_git_child() {
    let lab = Lab::new();
    let out = repo::abcd(&lab.repo.root, &lab.repo.home).args(["mode", "autonomous", "--until", "+8h"]).output().unwrap();
    assert!(out.status.success(), "{}", repo::text(&out));
    lab.stop();
    lab.prompt();
    lab.children();
    lab.stop();
    lab.prompt();
    assert_eq!(lab.children(), Vec::<String>::new(), "an away Stop and prompt with nothing changed");
}

/// Asserts that a prompt asks git again after `change` (made once the hooks have kept their
/// readings, if they keep any), with `env` set on every hook; with `kept`, that the prompt
/// before the change asked nothing.
fn a_change_is_asked_again(env: Vec<(String, PathBuf)>, kept: bool, change: impl FnOnce(&Lab), what: &str) {
    let mut lab = Lab::new();
    lab.env = env;
    lab.prompt();
    lab.stop();
    lab.prompt();
    lab.stop();
    assert!(!lab.children().is_empty(), "the first hooks ask git");
    lab.prompt();
    if kept {
        assert_eq!(lab.children(), Vec::<String>::new(), "nothing changed yet");
    }
    change(&lab);
    lab.prompt();
    assert!(!lab.children().is_empty(), "the prompt after {what} asks git");
}

#[test]
fn a_config_file_included_from_the_environment_is_keyed() {
    let lab_dir = tempfile::tempdir().unwrap();
    let included = lab_dir.path().join("included.gitconfig");
    let by_count = vec![
        ("GIT_CONFIG_COUNT".to_string(), PathBuf::from("1")),
        ("GIT_CONFIG_KEY_0".to_string(), PathBuf::from("include.path")),
        ("GIT_CONFIG_VALUE_0".to_string(), included.clone()),
    ];
    // As `git -c include.path=…` passes it on to the gits it starts.
    let by_parameters = vec![("GIT_CONFIG_PARAMETERS".to_string(), PathBuf::from(format!("'include.path'='{}'", included.display())))];
    for env in [by_count, by_parameters] {
        std::fs::write(&included, "[user]\n\temail = me@example.com\n").unwrap();
        // Such a file is not keyed: git is asked on every hook.
        a_change_is_asked_again(
            env,
            false,
            |_| std::fs::write(&included, "[user]\n\temail = someone.else@example.com\n").unwrap(),
            "a change to a config file an `include.path` in the environment names",
        );
    }
}

#[test]
fn the_system_config_is_keyed_when_git_config_nosystem_says_no() {
    let lab_dir = tempfile::tempdir().unwrap();
    let system = lab_dir.path().join("system.gitconfig");
    std::fs::write(&system, "[user]\n\temail = me@example.com\n").unwrap();
    // git reads `no`, `off` and `false` (any case) as false, as git_env_bool does.
    let env = vec![("GIT_CONFIG_NOSYSTEM".to_string(), PathBuf::from("no")), ("GIT_CONFIG_SYSTEM".to_string(), system.clone())];
    a_change_is_asked_again(
        env,
        true,
        |_| std::fs::write(&system, "[user]\n\temail = someone.else@example.com\n").unwrap(),
        "a change to the system config git reads",
    );
}

#[test]
fn staging_a_file_between_hooks_keeps_the_answers() {
    // `git add` and `git status` rewrite the index (and so the git folder's own times);
    // no ref, reflog or config changes, so the next hooks ask git nothing.
    let lab = Lab::new();
    lab.prompt();
    lab.stop();
    lab.children();
    std::fs::write(lab.repo.root.join("notes.txt"), "draft\n").unwrap();
    repo::git(&lab.repo.root, &["add", "notes.txt"]);
    repo::git(&lab.repo.root, &["status", "--porcelain"]);
    lab.prompt();
    lab.stop();
    assert_eq!(lab.children(), Vec::<String>::new(), "the hooks after a git add and a git status");
}
