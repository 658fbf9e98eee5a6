//! `abcd init`: makes the repository managed and installs abcd's hooks into the
//! project's `.claude/settings.json`. Idempotent: a second run changes nothing. Every
//! other setting and every other hook is kept; a settings file that does not parse is
//! refused and left untouched. `abcd init --check` only reports.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Map, Value, json};

use crate::host::{HookEvent, claude};
use crate::places;

/// The line `abcd init` keeps in `.git/info/exclude`.
const EXCLUDE_LINE: &str = "/.abcd/.work.local/";
/// The largest settings file read.
const MAX_SETTINGS_BYTES: u64 = 4 << 20;
/// Seconds the host gives each abcd hook (abcd itself fails open well within it).
const HOOK_TIMEOUT_SECS: u64 = 10;
/// The Stop hook's: its git and forge reads have a 14 s budget (SPEC §6), so the host's
/// kill must come well after it.
pub const STOP_HOOK_TIMEOUT_SECS: u64 = 30;

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Only report what is installed and what is missing (exit 1 when something is)
    #[arg(long)]
    check: bool,
}

/// The matcher each hook is installed with: the file and shell tools and the question
/// tool for PreToolUse, every source or trigger elsewhere.
fn matcher(event: HookEvent) -> &'static str {
    match event {
        HookEvent::PreToolUse => "Write|Edit|MultiEdit|NotebookEdit|Bash|AskUserQuestion",
        _ => "",
    }
}

/// True for a handler abcd installed: exec form, `abcd` binary, first argument `hook`.
fn is_ours(handler: &Value) -> bool {
    let command = handler.get("command").and_then(Value::as_str).unwrap_or("");
    let first_arg = handler.get("args").and_then(Value::as_array).and_then(|a| a.first()).and_then(Value::as_str);
    Path::new(command).file_name().is_some_and(|n| n == "abcd") && first_arg == Some("hook")
}

fn our_handler(exe: &str, event: HookEvent) -> Value {
    let timeout = if event == HookEvent::Stop { STOP_HOOK_TIMEOUT_SECS } else { HOOK_TIMEOUT_SECS };
    json!({"type": "command", "command": exe, "args": ["hook", event.cli_name()], "timeout": timeout})
}

/// Settings with abcd's hooks merged in: older abcd handlers removed, one current one
/// added per event, everything else kept as it was.
pub fn merge_hooks(mut settings: Map<String, Value>, exe: &str) -> Result<Map<String, Value>, String> {
    let hooks = settings.entry("hooks").or_insert_with(|| json!({}));
    let Value::Object(hooks) = hooks else { return Err("its `hooks` is not an object".into()) };
    for event in HookEvent::ALL {
        let groups = hooks.entry(claude::event_name(event)).or_insert_with(|| json!([]));
        let Value::Array(groups) = groups else { return Err(format!("its `hooks.{}` is not a list", claude::event_name(event))) };
        for group in groups.iter_mut() {
            if let Some(Value::Array(handlers)) = group.get_mut("hooks") {
                handlers.retain(|h| !is_ours(h));
            }
        }
        groups.retain(|g| g.get("hooks").and_then(Value::as_array).is_none_or(|h| !h.is_empty()));
        groups.push(json!({"matcher": matcher(event), "hooks": [our_handler(exe, event)]}));
    }
    Ok(settings)
}

/// Which events have an abcd handler installed, and with which command.
fn installed(settings: &Map<String, Value>) -> Vec<(HookEvent, Option<String>)> {
    HookEvent::ALL
        .into_iter()
        .map(|event| {
            let command = settings
                .get("hooks")
                .and_then(|h| h.get(claude::event_name(event)))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|g| g.get("hooks").and_then(Value::as_array))
                .flatten()
                .find(|h| is_ours(h))
                .and_then(|h| h.get("command").and_then(Value::as_str).map(str::to_owned));
            (event, command)
        })
        .collect()
}

fn read_settings(path: &Path) -> anyhow::Result<Result<Map<String, Value>, String>> {
    let bytes = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ok(Map::new())),
        Err(e) => return Err(e.into()),
        Ok(m) if m.len() > MAX_SETTINGS_BYTES => return Ok(Err(format!("it is over {MAX_SETTINGS_BYTES} bytes"))),
        Ok(_) => std::fs::read(path)?,
    };
    Ok(match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("it is not a JSON object".into()),
        Err(e) => Err(format!("it is not valid JSON ({e})")),
    })
}

pub fn run(args: &InitArgs) -> anyhow::Result<i32> {
    let cwd = std::env::current_dir()?;
    let (root, main_root) = places::working_copy_root(&cwd)?;
    let settings_path = main_root.join(".claude").join("settings.json");
    let exclude = main_root.join(".git").join("info").join("exclude");
    if args.check {
        return check(&root, &main_root, &settings_path, &exclude);
    }
    // Refuse before writing anything: a settings file abcd cannot parse stays untouched.
    let settings = match read_settings(&settings_path)? {
        Ok(s) => s,
        Err(why) => {
            eprintln!(
                "abcd: refusing to change {}: {why}; nothing was written. Fix the file (or move it aside) and run `abcd init` again",
                settings_path.display()
            );
            return Ok(super::EXIT_REFUSED);
        }
    };
    let exe = std::env::current_exe()?.canonicalize()?.display().to_string();
    let merged = match merge_hooks(settings.clone(), &exe) {
        Ok(m) => m,
        Err(why) => {
            eprintln!("abcd: refusing to change {}: {why}; nothing was written", settings_path.display());
            return Ok(super::EXIT_REFUSED);
        }
    };
    let abcd_dir = main_root.join(".abcd");
    let created = !abcd_dir.is_dir();
    std::fs::create_dir_all(&abcd_dir)?;
    let tier = root.join(places::LOCAL_TIER);
    std::fs::create_dir_all(&tier)?;
    if !std::fs::read_to_string(&exclude).unwrap_or_default().lines().any(|l| l.trim() == EXCLUDE_LINE) {
        std::fs::create_dir_all(exclude.parent().expect("exclude has a folder"))?;
        let lead = if std::fs::read(&exclude).is_ok_and(|b| !b.is_empty() && !b.ends_with(b"\n")) { "\n" } else { "" };
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&exclude)?;
        writeln!(f, "{lead}{EXCLUDE_LINE}")?;
    }
    if merged != settings {
        std::fs::create_dir_all(settings_path.parent().expect("settings has a folder"))?;
        let mut text = serde_json::to_string_pretty(&Value::Object(merged.clone()))?;
        text.push('\n');
        crate::journal::storage::write_atomic(&crate::journal::storage::RealDisk, &settings_path, text.as_bytes(), true)?;
    }
    println!(
        "{}",
        if created {
            format!("abcd now manages {}", main_root.display())
        } else {
            format!("{} was already managed by abcd", main_root.display())
        }
    );
    println!("local tier: {} (kept out of git by {})", tier.display(), exclude.display());
    println!(
        "hooks: {} ({} events, running {exe}){}",
        settings_path.display(),
        HookEvent::ALL.len(),
        if merged == settings { ", already installed" } else { "" }
    );
    println!("next: `abcd checklist add \"<title>\"`");
    Ok(super::EXIT_OK)
}

fn check(root: &Path, main_root: &Path, settings_path: &Path, exclude: &Path) -> anyhow::Result<i32> {
    let mut missing: Vec<String> = Vec::new();
    let mut report = |ok: bool, what: String| {
        println!("{} {what}", if ok { "ok     " } else { "MISSING" });
        if !ok {
            missing.push(what);
        }
    };
    report(main_root.join(".abcd").is_dir(), format!("{} (the repository is managed)", main_root.join(".abcd").display()));
    report(root.join(places::LOCAL_TIER).is_dir(), format!("{} (the local tier)", root.join(places::LOCAL_TIER).display()));
    let excluded = std::fs::read_to_string(exclude).unwrap_or_default().lines().any(|l| l.trim() == EXCLUDE_LINE);
    report(excluded, format!("{EXCLUDE_LINE} in {}", exclude.display()));
    match read_settings(settings_path)? {
        Err(why) => report(false, format!("{} is readable ({why})", settings_path.display())),
        Ok(settings) => {
            for (event, command) in installed(&settings) {
                let runnable = command.as_deref().map(PathBuf::from).is_some_and(|c| c.is_file());
                let what = format!("{} hook `abcd hook {}`", claude::event_name(event), event.cli_name());
                match command {
                    None => report(false, format!("{what} in {}", settings_path.display())),
                    Some(c) => report(runnable, format!("{what} runs {c}{}", if runnable { "" } else { " (no such file)" })),
                }
            }
        }
    }
    if missing.is_empty() {
        println!("everything is installed");
        Ok(super::EXIT_OK)
    } else {
        println!("{} missing; run `abcd init` to install", missing.len());
        Ok(super::EXIT_FAILURE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_twice_keeps_one_handler_and_every_other_hook() {
        let theirs =
            json!({"model": "x", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "/usr/bin/notify"}]}]}});
        let Value::Object(settings) = theirs else { unreachable!() };
        let once = merge_hooks(settings, "/opt/abcd").unwrap();
        let twice = merge_hooks(once.clone(), "/opt/abcd").unwrap();
        assert_eq!(once, twice);
        let stop = twice["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2, "theirs and ours");
        assert_eq!(stop[0]["hooks"][0]["command"], "/usr/bin/notify");
        assert_eq!(twice["model"], "x");
        for event in HookEvent::ALL {
            let n = installed(&twice).into_iter().filter(|(e, c)| *e == event && c.is_some()).count();
            assert_eq!(n, 1, "{event:?}");
        }
        // A moved binary is updated in place, not added twice.
        let moved = merge_hooks(twice, "/new/place/abcd").unwrap();
        assert_eq!(moved["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(moved["hooks"]["Stop"][1]["hooks"][0]["command"], "/new/place/abcd");
    }
}
