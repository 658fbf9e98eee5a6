//! `abcd init` through the binary (issue 19): an existing `.claude/settings.json` keeps the
//! order of its keys; the output says whether to commit the settings file (a lane's own
//! worktree holds only committed files) with a command that can be pasted; and the hooks
//! run `abcd` from PATH when that is the very binary that ran `init`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::repo::{self, TestRepo};
use serde_json::Value;

const SETTINGS: &str = ".claude/settings.json";

/// `abcd init` (or another verb) run by `exe` in `root`, with `path` as PATH.
fn run(exe: &Path, root: &Path, home: &Path, path: &str, args: &[&str]) -> Output {
    Command::new(exe).args(args).current_dir(root).env("ABCD_HOME", home).env("PATH", path).output().expect("abcd runs")
}

fn system_path() -> String {
    std::env::var("PATH").unwrap_or_default()
}

fn init(t: &TestRepo) -> String {
    let out = run(Path::new(env!("CARGO_BIN_EXE_abcd")), &t.root, &t.home, &system_path(), &["init"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn settings(t: &TestRepo) -> String {
    std::fs::read_to_string(t.root.join(SETTINGS)).unwrap()
}

/// Where each of `keys` first appears in `text`, which must be in the order given.
fn in_order(text: &str, keys: &[&str]) {
    let at: Vec<usize> = keys.iter().map(|k| text.find(&format!("\"{k}\"")).unwrap_or_else(|| panic!("{k} in {text}"))).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{keys:?} out of order in:\n{text}");
}

#[test]
fn an_existing_settings_file_keeps_the_order_of_its_keys() {
    let t = TestRepo::new();
    std::fs::create_dir_all(t.root.join(".claude")).unwrap();
    let theirs = r#"{
  "zeta": {"z": 1, "b": [3, 2, 1], "a": "x"},
  "permissions": {"deny": ["Bash(rm *)"], "allow": ["Bash(ls)"]},
  "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "/usr/local/bin/notify-me", "timeout": 5}]}]},
  "apiKeyHelper": "/bin/key"
}
"#;
    std::fs::write(t.root.join(SETTINGS), theirs).unwrap();
    init(&t);
    let after = settings(&t);
    in_order(&after, &["zeta", "z", "b", "a", "permissions", "deny", "allow", "hooks", "Stop", "apiKeyHelper"]);
    in_order(&after, &["type", "command", "/usr/local/bin/notify-me", "timeout"]);
    let (before, now): (Value, Value) = (serde_json::from_str(theirs).unwrap(), serde_json::from_str(&after).unwrap());
    for key in ["zeta", "permissions", "apiKeyHelper"] {
        assert_eq!(before[key], now[key], "{key} is kept as it was");
    }
    assert_eq!(now["hooks"]["Stop"][0], before["hooks"]["Stop"][0], "their Stop hook is first, as it was");
    // A second run writes nothing.
    init(&t);
    assert_eq!(settings(&t), after);
}

#[test]
fn init_says_whether_to_commit_the_settings_and_the_command_it_prints_works() {
    let t = TestRepo::new();
    // The person's own work in progress, staged: committing the settings must not take it.
    std::fs::write(t.root.join("mine.txt"), "staged, not mine to commit\n").unwrap();
    repo::git(&t.root, &["add", "mine.txt"]);
    let said = init(&t);
    let advice = said.lines().find(|l| l.contains(SETTINGS) && l.contains("commit")).unwrap_or_else(|| panic!("{said}"));
    assert!(
        advice.starts_with(&format!(
            "commit {SETTINGS}: a lane runs in a git worktree of its own, which holds only committed files, so the hooks reach a lane's agent only once it is committed"
        )),
        "{advice}"
    );
    let command = advice.rsplit_once(": ").unwrap().1;
    let pasted = Command::new("sh")
        .args(["-c", command])
        .current_dir(t.dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(pasted.status.success(), "{command}: {}", String::from_utf8_lossy(&pasted.stderr));
    assert_eq!(repo::git(&t.root, &["show", "--name-only", "--format=%s", "HEAD"]), format!("Install abcd hooks\n\n{SETTINGS}\n"));
    assert_eq!(repo::git(&t.root, &["diff", "--cached", "--name-only"]), "mine.txt\n", "the person's staged file is still only staged");
    // Committed: said so, and nothing to run.
    let said = init(&t);
    assert!(said.contains(&format!("{SETTINGS} is committed as it is, so a lane's worktree has the hooks too")), "{said}");
    // Changed since its commit: to be committed again.
    let mut v: Value = serde_json::from_str(&settings(&t)).unwrap();
    v["hooks"]["Stop"].as_array_mut().unwrap().clear();
    std::fs::write(t.root.join(SETTINGS), serde_json::to_string_pretty(&v).unwrap()).unwrap();
    assert!(init(&t).contains(&format!("commit {SETTINGS}: a lane runs")));
}

#[test]
fn init_says_when_git_ignores_the_settings() {
    let t = TestRepo::new();
    std::fs::write(t.root.join(".gitignore"), ".claude/\n").unwrap();
    repo::commit_all(&t.root, "ignore .claude");
    let said = init(&t);
    assert!(
        said.contains(&format!(
            "git ignores {SETTINGS}, so a lane's worktree (which holds only committed files) never has the hooks; to give lanes the hooks, commit it anyway"
        )),
        "{said}"
    );
    assert!(said.contains(&format!("add -f -- {SETTINGS} && ")), "{said}");
}

/// A folder holding an `abcd`, for PATH.
fn bin_with(dir: &Path, make: impl FnOnce(&Path)) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    make(&bin.join("abcd"));
    bin
}

#[test]
fn the_hooks_run_abcd_from_path_when_it_is_this_very_binary() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_abcd"));
    // On PATH by a symlink: the same canonical file.
    let t = TestRepo::new();
    let bin = bin_with(t.dir.path(), |at| std::os::unix::fs::symlink(&exe, at).unwrap());
    let path = format!("{}:{}", bin.display(), system_path());
    let out = run(&exe, &t.root, &t.home, &path, &["init"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("running `abcd` from PATH, which is "), "{said}");
    let v: Value = serde_json::from_str(&settings(&t)).unwrap();
    assert_eq!(v["hooks"]["SessionStart"][0]["hooks"][0]["command"], "abcd");
    let check = run(&exe, &t.root, &t.home, &path, &["init", "--check"]);
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stdout));
    assert!(String::from_utf8_lossy(&check.stdout).contains(&format!("runs abcd (from PATH: {}/abcd)", bin.display())));

    // On PATH by a hard link: another path, the same file (a copy of the binary beside it,
    // so both are on one file system).
    let t = TestRepo::new();
    let copy = t.dir.path().join("abcd-copy");
    std::fs::copy(&exe, &copy).unwrap();
    let bin = bin_with(t.dir.path(), |at| std::fs::hard_link(&copy, at).unwrap());
    run(&copy, &t.root, &t.home, &format!("{}:{}", bin.display(), system_path()), &["init"]);
    let v: Value = serde_json::from_str(&settings(&t)).unwrap();
    assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], "abcd");

    // Another `abcd` on PATH (not this binary): the hooks name this binary by its path.
    let t = TestRepo::new();
    let bin = bin_with(t.dir.path(), |at| {
        std::fs::write(at, "#!/bin/sh\nexit 0\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(at, std::fs::Permissions::from_mode(0o755)).unwrap();
    });
    let out = run(&exe, &t.root, &t.home, &format!("{}:{}", bin.display(), system_path()), &["init"]);
    let said = String::from_utf8_lossy(&out.stdout);
    let canonical = exe.canonicalize().unwrap();
    assert!(said.contains(&format!("running {}, since no `abcd` on PATH is this binary", canonical.display())), "{said}");
    let v: Value = serde_json::from_str(&settings(&t)).unwrap();
    assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], canonical.display().to_string());
}

/// A working copy whose path carries a token (issue 34): abcd keeps no record for it, since
/// every journal names its path and journals are mirrored; the refusal names the rule and
/// what to do, and never the path.
#[test]
fn a_working_copy_whose_path_carries_a_token_gets_no_journal_and_is_never_echoed() {
    let random = "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d";
    let t = TestRepo::new();
    let moved = t.root.parent().unwrap().join(format!("work-ghp_{random}"));
    std::fs::rename(&t.root, &moved).unwrap();
    for args in [&["init"][..], &["checklist", "add", "a title"][..], &["mode", "autonomous"][..]] {
        let out = run(Path::new(env!("CARGO_BIN_EXE_abcd")), &moved, &t.home, &system_path(), args);
        let text = repo::text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains("path carries a GitHub token (not shown)") && text.contains("move the working copy"), "{text}");
        let runs: Vec<char> = random.chars().collect();
        assert!(runs.windows(8).all(|w| !text.contains(&w.iter().collect::<String>())), "{args:?} echoes the path: {text}");
    }
    assert!(!moved.join(".abcd").exists(), "init wrote nothing");
    assert!(!t.home.join("repos").exists(), "no repository journal");
}

// ----------------------------------------------------------------------------------------
// The status line (issue 35): installed only where no settings layer sets one, into the
// uncommitted local layer; `init --check` names the layer that wins.

const LOCAL: &str = ".claude/settings.local.json";

/// `abcd init` (with `args`) in `t` with the user's settings folder `user_home/.claude`.
fn init_with_home(t: &TestRepo, user_home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_abcd"))
        .arg("init")
        .args(args)
        .current_dir(&t.root)
        .env("ABCD_HOME", &t.home)
        .env("HOME", user_home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .expect("abcd runs")
}

fn write_json(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const THEIR_LINE: &str = r#"{"statusLine": {"type": "command", "command": "~/bin/my-line"}, "theme": "dark"}"#;

/// A user home with no settings.
fn empty_home(t: &TestRepo) -> PathBuf {
    let home = t.dir.path().join("person");
    std::fs::create_dir_all(&home).unwrap();
    home
}

#[test]
fn init_installs_the_status_line_into_the_local_settings_when_no_layer_sets_one() {
    let t = TestRepo::new();
    let home = empty_home(&t);
    // The person's own local settings: every key is kept where it was.
    write_json(&t.root.join(LOCAL), r#"{"permissions": {"allow": ["Bash(ls)"]}, "model": "opus"}"#);
    let out = init_with_home(&t, &home, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let local = std::fs::read_to_string(t.root.join(LOCAL)).unwrap();
    in_order(&local, &["permissions", "allow", "model", "statusLine", "type", "command"]);
    let v: Value = serde_json::from_str(&local).unwrap();
    assert_eq!(v["statusLine"]["type"], "command");
    let command = v["statusLine"]["command"].as_str().unwrap();
    assert!(command.ends_with(" status-line"), "{command}");
    assert_eq!(v["model"], "opus");
    assert!(!settings(&t).contains("statusLine"), "never the committed project file: {}", settings(&t));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("status line: {} runs `{command}`", t.root.join(LOCAL).display())), "{said}");
    // The uncommitted layer stays out of git.
    assert_eq!(repo::git(&t.root, &["status", "--porcelain", "--", LOCAL]), "", "git does not list {LOCAL}");
    // A second run changes nothing.
    assert!(init_with_home(&t, &home, &[]).status.success());
    assert_eq!(std::fs::read_to_string(t.root.join(LOCAL)).unwrap(), local);
}

/// `init` with a status line set in `layer_path` only: nothing of abcd's is written anywhere.
fn left_alone_when(t: &TestRepo, home: &Path, layer_path: &Path, layer: &str) {
    write_json(layer_path, THEIR_LINE);
    let out = init_with_home(t, home, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("status line: left as it is: {layer} ({}) set their own", layer_path.display())), "{said}");
    assert_eq!(std::fs::read_to_string(layer_path).unwrap(), THEIR_LINE, "their file is untouched");
    assert!(!settings(t).contains("statusLine"), "{}", settings(t));
    let local = std::fs::read_to_string(t.root.join(LOCAL)).unwrap_or_default();
    assert!(layer == "the local settings" || !local.contains("statusLine"), "{local}");
}

#[test]
fn init_leaves_the_status_line_alone_when_the_user_settings_set_one() {
    let t = TestRepo::new();
    let home = empty_home(&t);
    left_alone_when(&t, &home, &home.join(".claude/settings.json"), "the user settings");
    assert!(!t.root.join(LOCAL).exists(), "no local settings were made");
}

#[test]
fn init_leaves_the_status_line_alone_when_the_project_settings_set_one() {
    let t = TestRepo::new();
    let home = empty_home(&t);
    let project = t.root.join(SETTINGS);
    write_json(&project, THEIR_LINE);
    let out = init_with_home(&t, &home, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("status line: left as it is: the project settings ({}) set their own", project.display())), "{said}");
    let v: Value = serde_json::from_str(&settings(&t)).unwrap();
    assert_eq!(v["statusLine"]["command"], "~/bin/my-line", "their status line is kept as it was");
    assert!(!t.root.join(LOCAL).exists(), "no local settings were made");
}

#[test]
fn init_leaves_the_status_line_alone_when_the_local_settings_set_one() {
    let t = TestRepo::new();
    let home = empty_home(&t);
    left_alone_when(&t, &home, &t.root.join(LOCAL), "the local settings");
}

#[test]
fn init_check_names_the_layer_whose_status_line_wins() {
    let t = TestRepo::new();
    let home = empty_home(&t);
    let user = home.join(".claude/settings.json");
    write_json(&user, THEIR_LINE);
    assert!(init_with_home(&t, &home, &[]).status.success());
    let check = |t: &TestRepo| String::from_utf8_lossy(&init_with_home(t, &home, &["--check"]).stdout).into_owned();
    let said = check(&t);
    assert!(
        said.contains(&format!("ok      status line from the user settings ({}), which wins: the person's own", user.display())),
        "{said}"
    );
    // The local layer beats the user's: abcd's, once written there.
    let local = serde_json::json!({"statusLine": {"type": "command", "command": format!("{} status-line", env!("CARGO_BIN_EXE_abcd"))}});
    write_json(&t.root.join(LOCAL), &local.to_string());
    let said = check(&t);
    assert!(
        said.contains(&format!("ok      status line from the local settings ({}), which wins: abcd's", t.root.join(LOCAL).display())),
        "{said}"
    );
    // No layer sets one: missing, and `init` is what to run.
    std::fs::remove_file(&user).unwrap();
    std::fs::remove_file(t.root.join(LOCAL)).unwrap();
    let out = init_with_home(&t, &home, &["--check"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("MISSING status line `abcd status-line` in {}", t.root.join(LOCAL).display())), "{said}");
    assert_eq!(out.status.code(), Some(1), "{said}");
}
