//! `abcd init --host codex` through the binary (issue 38, acceptance 3): on a Codex
//! configuration with other settings (a model, profiles, an MCP server, comments, the
//! person's own hook and its trust) init keeps every other key's value; `--check` names an
//! untrusted, a modified and a missing abcd hook; `--uninstall` leaves both files byte for
//! byte as they were before init.

use crate::common;

use std::path::PathBuf;
use std::process::Output;

use common::repo::{self, TestRepo};
use serde_json::Value;
use toml_edit::{DocumentMut, Item};

/// The person's Codex settings: every kind of thing init must leave as it is.
const CONFIG: &str = r#"# my Codex settings
model = "o3"   # the good one
approval_policy = "on-request"
notify = ["notify-send", "codex"]

[profiles.fast]
model = "gpt-5-mini"
model_reasoning_effort = "low"

[mcp_servers.docs]
command = "docs-server"
args = ["--port", "9"]
env = { TOKEN_FILE = "/run/docs-token" }

# their own hook, trusted
[hooks.state."CODEX/hooks.json:stop:0:0"]
trusted_hash = "sha256:0123456789abcdef"

[tui]
notifications = true
"#;

/// The person's hooks.json: their own Stop hook, laid out their way.
const HOOKS: &str = r#"{
    "hooks": {
        "Stop": [
            {
                "hooks": [
                    { "type": "command", "command": "notify-send done", "timeout": 5 }
                ]
            }
        ]
    }
}
"#;

struct Codex {
    t: TestRepo,
    home: PathBuf,
}

impl Codex {
    /// A repository, and a Codex home holding the person's files (when `with_files`).
    fn new(with_files: bool) -> Codex {
        let t = TestRepo::new();
        let home = t.dir.path().join("codex");
        std::fs::create_dir_all(&home).unwrap();
        // As Codex names it: $CODEX_HOME made canonical.
        let home = home.canonicalize().unwrap();
        if with_files {
            std::fs::write(home.join("config.toml"), CONFIG.replace("CODEX", &home.display().to_string())).unwrap();
            std::fs::write(home.join("hooks.json"), HOOKS).unwrap();
        }
        Codex { t, home }
    }

    fn abcd(&self, args: &[&str]) -> Output {
        let mut cmd = repo::abcd(&self.t.root, &self.t.home);
        cmd.args(args).env("CODEX_HOME", &self.home).env("HOME", self.t.dir.path()).output().expect("abcd runs")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.abcd(args);
        assert!(out.status.success(), "abcd {args:?}: {}", repo::text(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    fn config(&self) -> Option<String> {
        std::fs::read_to_string(self.home.join("config.toml")).ok()
    }

    fn hooks(&self) -> Option<String> {
        std::fs::read_to_string(self.home.join("hooks.json")).ok()
    }

    fn key(&self, event: &str, group: usize) -> String {
        format!("{}:{event}:{group}:0", self.home.join("hooks.json").display())
    }
}

const INIT: &[&str] = &["init", "--host", "codex"];
const CHECK: &[&str] = &["init", "--host", "codex", "--check"];
const UNINSTALL: &[&str] = &["init", "--host", "codex", "--uninstall"];

/// Every leaf of a TOML document as (dotted path, value as written, without its spacing
/// and comments); an inline table or an array is one leaf.
fn leaves(text: &str) -> Vec<(String, String)> {
    fn walk(prefix: &str, item: &Item, out: &mut Vec<(String, String)>) {
        match item {
            Item::Table(t) => t.iter().for_each(|(k, v)| walk(&format!("{prefix}.{k}"), v, out)),
            Item::ArrayOfTables(a) => a.iter().enumerate().for_each(|(i, t)| {
                t.iter().for_each(|(k, v)| walk(&format!("{prefix}[{i}].{k}"), v, out));
            }),
            Item::Value(v) => out.push((prefix.to_string(), v.clone().decorated("", "").to_string())),
            Item::None => {}
        }
    }
    let doc: DocumentMut = text.parse().unwrap();
    let mut out = Vec::new();
    doc.as_table().iter().for_each(|(k, v)| walk(k, v, &mut out));
    out
}

fn group_commands(hooks: &Value, event: &str) -> Vec<String> {
    hooks["hooks"][event].as_array().unwrap().iter().map(|g| g["hooks"][0]["command"].as_str().unwrap().to_string()).collect()
}

#[test]
fn init_keeps_every_other_setting_and_hook_and_trusts_its_own() {
    let c = Codex::new(true);
    let (config_before, hooks_before) = (c.config().unwrap(), c.hooks().unwrap());
    let said = c.ok(INIT);
    assert!(said.contains(&format!("codex hooks: {} (7 events", c.home.join("hooks.json").display())), "{said}");
    assert!(c.t.root.join(".abcd").is_dir(), "inside a repository, init makes it managed too");
    let config = c.config().unwrap();
    // Every key the person had keeps its value, the comments and order with it: abcd's
    // tables come after all of theirs.
    assert!(config.starts_with(&config_before), "{config}");
    let before = leaves(&config_before);
    let after = leaves(&config);
    for leaf in &before {
        assert!(after.contains(leaf), "{leaf:?} kept");
    }
    let added: Vec<&(String, String)> = after.iter().filter(|l| !before.contains(l)).collect();
    assert_eq!(added.len(), 7, "one trust per abcd hook: {added:?}");
    assert!(
        added
            .iter()
            .all(|(path, hash)| path.starts_with("hooks.state.") && path.ends_with(".trusted_hash") && hash.starts_with("\"sha256:"))
    );
    // The person's hook stays first, as it was, so its trust key still names it.
    let hooks: Value = serde_json::from_str(&c.hooks().unwrap()).unwrap();
    let theirs: Value = serde_json::from_str(&hooks_before).unwrap();
    assert_eq!(hooks["hooks"]["Stop"][0], theirs["hooks"]["Stop"][0]);
    assert_eq!(group_commands(&hooks, "Stop")[1], format!("{} hook stop --host codex", env!("CARGO_BIN_EXE_abcd")));
    assert!(config.contains(&format!("[hooks.state.\"{}\"]", c.key("stop", 1))), "{config}");
    assert!(c.ok(CHECK).contains("every abcd hook is installed and trusted for Codex"));
    // A second run writes nothing.
    let said = c.ok(INIT);
    assert!(said.contains(", already as it is"), "{said}");
    assert_eq!(c.config().unwrap(), config);
}

#[test]
fn check_names_an_untrusted_a_modified_and_a_missing_hook_and_init_mends_them() {
    let c = Codex::new(true);
    c.ok(INIT);
    // Stop's trust taken out: untrusted.
    let config = c.config().unwrap();
    let stop_table = format!("\n[hooks.state.\"{}\"]\n", c.key("stop", 1));
    let at = config.find(&stop_table).unwrap();
    let end = at + stop_table.len() + config[at + stop_table.len()..].find('\n').unwrap() + 1;
    std::fs::write(c.home.join("config.toml"), format!("{}{}", &config[..at], &config[end..])).unwrap();
    // PreToolUse's timeout changed: modified. SessionEnd's group taken out: missing.
    let mut hooks: Value = serde_json::from_str(&c.hooks().unwrap()).unwrap();
    hooks["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = Value::from(60);
    hooks["hooks"].as_object_mut().unwrap().remove("SessionEnd");
    std::fs::write(c.home.join("hooks.json"), serde_json::to_string_pretty(&hooks).unwrap()).unwrap();

    let out = c.abcd(CHECK);
    assert_eq!(out.status.code(), Some(1), "{}", repo::text(&out));
    let said = String::from_utf8(out.stdout).unwrap();
    let line = |event: &str| said.lines().find(|l| l.split_whitespace().nth(1) == Some(event)).unwrap_or_else(|| panic!("{event}: {said}"));
    assert!(line("Stop").starts_with("UNTRUSTED"), "{said}");
    assert!(line("Stop").contains("holds no trusted hash for it, so Codex skips it"), "{said}");
    assert!(line("PreToolUse").starts_with("MODIFIED"), "{said}");
    assert!(line("PreToolUse").contains("changed since it was trusted, so Codex skips it"), "{said}");
    assert!(line("SessionEnd").starts_with("MISSING"), "{said}");
    for ok in ["SessionStart", "UserPromptSubmit", "PreCompact", "PostCompact"] {
        assert!(line(ok).starts_with("ok "), "{said}");
    }
    assert!(said.ends_with("3 of 7 not ok; run `abcd init --host codex` to install and trust them\n"), "{said}");

    // What it says to run mends all three (the changed handler is abcd's again, trusted).
    c.ok(INIT);
    assert!(c.ok(CHECK).contains("every abcd hook is installed and trusted for Codex"));
}

#[test]
fn uninstall_leaves_both_files_as_they_were_before_init() {
    let c = Codex::new(true);
    let (config_before, hooks_before) = (c.config(), c.hooks());
    c.ok(INIT);
    assert_ne!(c.config(), config_before);
    let said = c.ok(UNINSTALL);
    assert!(said.contains("7 abcd handlers taken out of"), "{said}");
    assert_eq!(c.config(), config_before, "config.toml byte for byte");
    assert_eq!(c.hooks(), hooks_before, "hooks.json byte for byte");
    // Nothing left to take out.
    assert!(c.ok(UNINSTALL).contains("nothing to remove"));
    assert_eq!((c.config(), c.hooks()), (config_before, hooks_before));
}

#[test]
fn uninstall_empties_the_files_init_made_and_keeps_a_persons_empty_files() {
    let c = Codex::new(false);
    c.ok(INIT);
    assert!(c.config().is_some() && c.hooks().is_some());
    c.ok(UNINSTALL);
    // abcd cannot tell a file it made from a person's empty one: it empties, never deletes.
    let hooks: Value = serde_json::from_str(&c.hooks().expect("hooks.json stays")).unwrap();
    assert_eq!((c.config().as_deref(), hooks), (Some(""), serde_json::json!({})));
    // A person's empty config.toml, there before init, is there after uninstall.
    std::fs::write(c.home.join("config.toml"), "").unwrap();
    c.ok(INIT);
    c.ok(UNINSTALL);
    assert_eq!(c.config().as_deref(), Some(""), "the person's empty config.toml is kept");
}

#[test]
fn a_hook_the_person_added_after_abcds_keeps_its_trust_when_abcds_goes() {
    let c = Codex::new(true);
    c.ok(INIT);
    // Their second Stop hook, after abcd's (group 2), trusted by them.
    let mut hooks: Value = serde_json::from_str(&c.hooks().unwrap()).unwrap();
    let late = serde_json::json!({"hooks": [{"type": "command", "command": "late-hook", "timeout": 7}]});
    hooks["hooks"]["Stop"].as_array_mut().unwrap().push(late.clone());
    std::fs::write(c.home.join("hooks.json"), serde_json::to_string_pretty(&hooks).unwrap()).unwrap();
    let hash = abcd::host::codex_install::trust_hash("Stop", &late, &late["hooks"][0]).unwrap();
    let mut config = c.config().unwrap();
    config.push_str(&format!("\n[hooks.state.\"{}\"]\ntrusted_hash = \"{hash}\"\n", c.key("stop", 2)));
    std::fs::write(c.home.join("config.toml"), &config).unwrap();

    c.ok(UNINSTALL);
    let hooks: Value = serde_json::from_str(&c.hooks().unwrap()).unwrap();
    assert_eq!(group_commands(&hooks, "Stop"), ["notify-send done", "late-hook"]);
    let doc: DocumentMut = c.config().unwrap().parse().unwrap();
    assert_eq!(abcd::host::codex_install::trusted_hash(&doc, &c.key("stop", 1)), Some(hash), "its trust moved with it");
    assert_eq!(abcd::host::codex_install::trusted_hash(&doc, &c.key("stop", 2)), None);
}

#[test]
fn a_config_that_does_not_parse_is_refused_and_left_untouched() {
    let c = Codex::new(false);
    let broken = "model = \"o3\"\n[profiles\n";
    std::fs::write(c.home.join("config.toml"), broken).unwrap();
    for args in [INIT, CHECK, UNINSTALL] {
        let out = c.abcd(args);
        assert!(!out.status.success(), "{args:?}: {}", repo::text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("changing {}", c.home.join("config.toml").display())), "{err}");
        assert!(err.contains("it is not valid TOML"), "{err}");
        assert!(err.contains("fix the file (or move it aside) and run the command again"), "{err}");
    }
    assert_eq!(c.config().as_deref(), Some(broken));
    assert_eq!(c.hooks(), None, "no hooks.json was made");
}

/// A folder holding `abcd` as a symlink to this binary (the same canonical file), and a
/// PATH with that folder first.
fn abcd_first_on_path(c: &Codex) -> (std::path::PathBuf, String) {
    let bin = c.t.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_abcd"), bin.join("abcd")).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    (bin, path)
}

#[test]
fn the_hooks_name_abcd_from_path_when_it_is_this_binary() {
    let c = Codex::new(false);
    let (_, path) = abcd_first_on_path(&c);
    let mut cmd = repo::abcd(&c.t.root, &c.t.home);
    let out = cmd.args(INIT).env("CODEX_HOME", &c.home).env("PATH", &path).output().unwrap();
    assert!(out.status.success(), "{}", repo::text(&out));
    let hooks: Value = serde_json::from_str(&c.hooks().unwrap()).unwrap();
    assert_eq!(group_commands(&hooks, "Stop"), ["abcd hook stop --host codex"]);
    assert_eq!(hooks["hooks"]["PreToolUse"][0]["matcher"], "Bash|apply_patch|request_user_input");
    assert_eq!(hooks["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"], 3, "what Codex clamps it to");
}

#[test]
fn check_names_a_hook_whose_program_is_gone() {
    let c = Codex::new(false);
    let (bin, with_abcd) = abcd_first_on_path(&c);
    let run = |args: &[&str], path: &str| {
        let mut cmd = repo::abcd(&c.t.root, &c.t.home);
        cmd.args(args).env("CODEX_HOME", &c.home).env("PATH", path).output().unwrap()
    };
    assert!(run(INIT, &with_abcd).status.success());
    assert_eq!(run(CHECK, &with_abcd).status.code(), Some(0));
    // abcd no longer on the PATH the hooks are run with: trusted, and still skipped by the shell.
    std::fs::remove_file(bin.join("abcd")).unwrap();
    let out = run(CHECK, &with_abcd);
    assert_eq!(out.status.code(), Some(1), "{}", repo::text(&out));
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(said.contains("NOT RUNNABLE SessionStart `abcd hook session-start --host codex`: `abcd` is not found on PATH"), "{said}");
}
