//! `abcd init`'s work: makes the repository managed (`.abcd/`, the local tier kept out of
//! git) and installs abcd's hooks into the project's `.claude/settings.json`. Idempotent: a
//! second run changes nothing. Every other setting and hook is kept; a settings file that
//! does not parse is refused and left untouched. `check` only looks.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::CommandError;
use crate::host::claude_settings::{installed, merge_hooks};
use crate::host::{HookEvent, claude};
use crate::places;

/// The line `abcd init` keeps in `.git/info/exclude`.
const EXCLUDE_LINE: &str = "/.abcd/.work.local/";
/// The largest settings file read.
const MAX_SETTINGS_BYTES: u64 = 4 << 20;

/// Where a managed repository keeps what `init` installs.
pub struct Places {
    pub root: PathBuf,
    pub main_root: PathBuf,
    pub settings: PathBuf,
    pub exclude: PathBuf,
}

pub fn places_of(cwd: &Path) -> Result<Places, CommandError> {
    let (root, main_root) = places::working_copy_root(cwd)?;
    let settings = main_root.join(".claude").join("settings.json");
    let exclude = main_root.join(".git").join("info").join("exclude");
    Ok(Places { root, main_root, settings, exclude })
}

fn read_settings(path: &Path) -> Result<Result<Map<String, Value>, String>, CommandError> {
    let bytes = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ok(Map::new())),
        Err(e) => return Err(CommandError::failed(e)),
        Ok(m) if m.len() > MAX_SETTINGS_BYTES => return Ok(Err(format!("it is over {MAX_SETTINGS_BYTES} bytes"))),
        Ok(_) => std::fs::read(path).map_err(CommandError::failed)?,
    };
    Ok(match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("it is not a JSON object".into()),
        Err(e) => Err(format!("it is not valid JSON ({e})")),
    })
}

/// What `init` did.
pub struct Installed {
    /// `.abcd/` was made now (the repository was not managed before).
    pub created: bool,
    pub tier: PathBuf,
    /// The abcd binary the hooks run.
    pub exe: String,
    /// The hooks were already installed as they are now.
    pub already_installed: bool,
}

pub fn install(at: &Places) -> Result<Installed, CommandError> {
    // Refuse before writing anything: a settings file abcd cannot parse stays untouched.
    let settings = read_settings(&at.settings)?.map_err(|why| {
        CommandError::Refused(format!(
            "refusing to change {}: {why}; nothing was written. Fix the file (or move it aside) and run `abcd init` again",
            at.settings.display()
        ))
    })?;
    let exe = std::env::current_exe().and_then(|e| e.canonicalize()).map_err(CommandError::failed)?.display().to_string();
    let merged = merge_hooks(settings.clone(), &exe)
        .map_err(|why| CommandError::Refused(format!("refusing to change {}: {why}; nothing was written", at.settings.display())))?;
    let abcd_dir = at.main_root.join(".abcd");
    let created = !abcd_dir.is_dir();
    std::fs::create_dir_all(&abcd_dir).map_err(CommandError::failed)?;
    let tier = at.root.join(places::LOCAL_TIER);
    std::fs::create_dir_all(&tier).map_err(CommandError::failed)?;
    if !std::fs::read_to_string(&at.exclude).unwrap_or_default().lines().any(|l| l.trim() == EXCLUDE_LINE) {
        std::fs::create_dir_all(at.exclude.parent().expect("exclude has a folder")).map_err(CommandError::failed)?;
        let lead = if std::fs::read(&at.exclude).is_ok_and(|b| !b.is_empty() && !b.ends_with(b"\n")) { "\n" } else { "" };
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&at.exclude).map_err(CommandError::failed)?;
        writeln!(f, "{lead}{EXCLUDE_LINE}").map_err(CommandError::failed)?;
    }
    if merged != settings {
        std::fs::create_dir_all(at.settings.parent().expect("settings has a folder")).map_err(CommandError::failed)?;
        let mut text = serde_json::to_string_pretty(&Value::Object(merged.clone())).map_err(CommandError::failed)?;
        text.push('\n');
        crate::journal::storage::write_atomic(&crate::journal::storage::RealDisk, &at.settings, text.as_bytes(), true)
            .map_err(CommandError::failed)?;
    }
    Ok(Installed { created, tier, exe, already_installed: merged == settings })
}

/// What `init --check` finds: each thing that should be installed, and whether it is, told
/// to `on_found` as it is checked; returns how many are missing.
pub fn check(at: &Places, on_found: &mut dyn FnMut(bool, &str)) -> Result<usize, CommandError> {
    let mut missing = 0;
    let mut found = |ok: bool, what: String| {
        missing += usize::from(!ok);
        on_found(ok, &what);
    };
    let abcd_dir = at.main_root.join(".abcd");
    found(abcd_dir.is_dir(), format!("{} (the repository is managed)", abcd_dir.display()));
    let tier = at.root.join(places::LOCAL_TIER);
    found(tier.is_dir(), format!("{} (the local tier)", tier.display()));
    let excluded = std::fs::read_to_string(&at.exclude).unwrap_or_default().lines().any(|l| l.trim() == EXCLUDE_LINE);
    found(excluded, format!("{EXCLUDE_LINE} in {}", at.exclude.display()));
    match read_settings(&at.settings)? {
        Err(why) => found(false, format!("{} is readable ({why})", at.settings.display())),
        Ok(settings) => {
            for (event, command) in installed(&settings) {
                let runnable = command.as_deref().map(PathBuf::from).is_some_and(|c| c.is_file());
                let what = format!("{} hook `abcd hook {}`", claude::event_name(event), event.cli_name());
                match command {
                    None => found(false, format!("{what} in {}", at.settings.display())),
                    Some(c) => found(runnable, format!("{what} runs {c}{}", if runnable { "" } else { " (no such file)" })),
                }
            }
        }
    }
    Ok(missing)
}

/// How many hook events `init` installs.
pub fn hook_events() -> usize {
    HookEvent::ALL.len()
}
