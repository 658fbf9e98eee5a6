//! `abcd init`'s work: makes the repository managed (`.abcd/`, the local tier kept out of
//! git) and installs abcd's hooks into the project's `.claude/settings.json`. Idempotent: a
//! second run changes nothing. Every other setting and hook is kept, each key where it was;
//! a settings file that does not parse is refused and left untouched. `check` only looks.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::CommandError;
use crate::host::claude;
use crate::host::claude_settings::{
    Json, LOCAL_SETTINGS, Object, PROJECT_SETTINGS, STATUS_LINE_VERB, installed, merge_hooks, status_line_is_abcds, status_line_of,
    with_status_line,
};
use crate::places::Place;
use crate::refusal::{Refusal, RefusalKind as K};
use crate::{git, places, platform};

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

pub fn places_of(place: &Place) -> Result<Places, CommandError> {
    let (root, main_root) = place.roots()?;
    let settings = main_root.join(crate::host::claude_settings::PROJECT_SETTINGS);
    let exclude = main_root.join(".git").join("info").join("exclude");
    Ok(Places { root, main_root, settings, exclude })
}

/// The line kept in the repository's `info/exclude` so a lane's local settings are never
/// committed by the lane's agent.
pub const LOCAL_SETTINGS_EXCLUDE: &str = "/.claude/settings.local.json";

/// The most of git's `info/exclude` abcd reads; a longer one is refused, not read in part.
const MAX_EXCLUDE_BYTES: u64 = 1 << 20;

/// git's `info/exclude`; empty when absent, a refusal when it cannot be read (a FIFO there,
/// say) or is over [`MAX_EXCLUDE_BYTES`].
fn read_exclude(path: &Path) -> Result<Vec<u8>, CommandError> {
    match platform::fs::read_regular(path, MAX_EXCLUDE_BYTES + 1) {
        Ok(b) if b.len() as u64 > MAX_EXCLUDE_BYTES => Err(refused_exclude(path, format!("it is over {MAX_EXCLUDE_BYTES} bytes"))),
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(refused_exclude(path, e)),
    }
}

/// Whether `exclude`'s bytes hold abcd's line.
fn excludes_local_tier(exclude: &[u8]) -> bool {
    excludes(exclude, EXCLUDE_LINE)
}

fn excludes(exclude: &[u8], line: &str) -> bool {
    String::from_utf8_lossy(exclude).lines().any(|l| l.trim() == line)
}

fn refused_exclude(path: &Path, why: impl std::fmt::Display) -> CommandError {
    refused_exclude_line(path, why, EXCLUDE_LINE)
}

fn refused_exclude_line(path: &Path, why: impl std::fmt::Display, line: &str) -> CommandError {
    Refusal::new(K::FileShape, format!("changing {}", path.display()), why.to_string())
        .instead(format!("make it a regular file holding the line {line} (or remove it) and run `abcd init` again"))
        .into()
}

/// Appends `line` to git's `info/exclude` at `path` unless it holds it (made when absent).
pub(crate) fn ensure_excluded(path: &Path, line: &str) -> Result<(), CommandError> {
    let exclude = read_exclude(path).map_err(|_| refused_exclude_line(path, "it cannot be read", line))?;
    if excludes(&exclude, line) {
        return Ok(());
    }
    std::fs::create_dir_all(path.parent().expect("exclude has a folder")).map_err(CommandError::failed)?;
    let lead = if !exclude.is_empty() && !exclude.ends_with(b"\n") { "\n" } else { "" };
    let appending = std::fs::OpenOptions::new().create(true).append(true).clone();
    let mut f =
        platform::fs::open_regular(&appending, path, platform::fs::Symlink::Follow).map_err(|e| refused_exclude_line(path, e, line))?;
    writeln!(f, "{lead}{line}").map_err(CommandError::failed)
}

pub(crate) fn read_settings(path: &Path) -> Result<Result<Object, String>, CommandError> {
    let bytes = match platform::fs::read_regular(path, MAX_SETTINGS_BYTES + 1) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ok(Object::default())),
        Err(e) if platform::fs::is_not_regular(&e) => return Ok(Err(e.to_string())),
        Err(e) => return Err(CommandError::failed(e)),
        Ok(b) if b.len() as u64 > MAX_SETTINGS_BYTES => return Ok(Err(format!("it is over {MAX_SETTINGS_BYTES} bytes"))),
        Ok(b) => b,
    };
    Ok(match serde_json::from_slice::<Json>(&bytes) {
        Ok(Json::Object(map)) => Ok(map),
        Ok(_) => Err("it is not a JSON object".into()),
        Err(e) => Err(format!("it is not valid JSON ({e})")),
    })
}

/// The name the hooks run abcd by when `PATH` finds this very binary under it.
const ON_PATH: &str = "abcd";

/// What the hooks run: `abcd` from `PATH` when that is this binary (the settings then name
/// no folder of this machine, a build folder least of all), else this binary's path.
pub struct HookCommand {
    /// The settings' `command`.
    pub command: String,
    /// This binary, canonical.
    pub exe: PathBuf,
    /// `command` is [`ON_PATH`], found on `PATH` as `exe`.
    pub from_path: bool,
}

/// The hook command for the running binary.
pub fn hook_command() -> Result<HookCommand, CommandError> {
    let exe = std::env::current_exe().and_then(|e| e.canonicalize()).map_err(CommandError::failed)?;
    // A relative PATH entry names a different folder for the host than for this shell.
    let on_path = platform::process::resolve_program(OsStr::new(ON_PATH)).filter(|p| p.is_absolute());
    let from_path = on_path.is_some_and(|p| same_file(&p, &exe));
    let command = if from_path { ON_PATH.to_string() } else { exe.display().to_string() };
    Ok(HookCommand { command, exe, from_path })
}

/// Whether two paths name one file: the same canonical path, or one file reached by a
/// hard link (the same device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    let identity = |p: &Path| std::fs::metadata(p).ok().map(|m| platform::fs::inode(&m)).map(|i| (i.dev, i.ino));
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y) || identity(a).is_some_and(|i| identity(b) == Some(i))
}

/// Where the settings file stands in git, as `git status` shows it. A lane runs in a git
/// worktree of its own, which holds only committed files: the hooks reach a lane's agent
/// only from a committed settings file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InGit {
    /// Untracked, or changed since its last commit.
    Uncommitted,
    /// Tracked, with no change since its last commit.
    Committed,
    /// `init` just changed it, and `git status` lists no change: git ignores it.
    Ignored,
    /// `git status` could not be read (why).
    Unknown(String),
}

/// The settings file's standing in git; `written` is whether `init` just changed it.
fn settings_in_git(at: &Places, written: bool) -> InGit {
    let Ok(relative) = at.settings.strip_prefix(&at.main_root) else { return InGit::Unknown("it is outside the repository".into()) };
    let relative = relative.to_string_lossy();
    match git::worktree::status(&at.main_root) {
        Err(e) => InGit::Unknown(e.to_string()),
        Ok(status) if status.changed.iter().any(|c| *c == relative) => InGit::Uncommitted,
        // A file with no commit behind it is untracked, so `git status` would have listed it.
        Ok(status) if status.head.is_none() => InGit::Ignored,
        Ok(_) if written => InGit::Ignored,
        // Not listed and unchanged: tracked as committed, or ignored since an earlier `init`
        // (which said so then); `git status` alone cannot tell these apart.
        Ok(_) => InGit::Committed,
    }
}

/// What `init` did.
pub struct Installed {
    /// `.abcd/` was made now (the repository was not managed before).
    pub created: bool,
    pub tier: PathBuf,
    /// What the hooks run.
    pub hook: HookCommand,
    /// The hooks were already installed as they are now.
    pub already_installed: bool,
    /// The settings file, relative to the repository's root (`.claude/settings.json`).
    pub settings_relative: PathBuf,
    pub in_git: InGit,
    /// What became of the status line.
    pub status_line: StatusLineInstall,
}

pub fn install(at: &Places) -> Result<Installed, CommandError> {
    // Refuse before writing anything: a settings file abcd cannot parse stays untouched.
    let settings = read_settings(&at.settings)?.map_err(|why| {
        Refusal::new(K::FileShape, format!("changing {}", at.settings.display()), why.to_string())
            .nothing_written()
            .instead("fix the file (or move it aside) and run `abcd init` again")
    })?;
    let exclude = read_exclude(&at.exclude)?;
    let hook = hook_command()?;
    let merged = merge_hooks(settings.clone(), &hook.command)
        .map_err(|why| Refusal::new(K::FileShape, format!("changing {}", at.settings.display()), why.to_string()).nothing_written())?;
    let (created, tier) = manage_with(at, &exclude)?;
    if merged != settings {
        std::fs::create_dir_all(at.settings.parent().expect("settings has a folder")).map_err(CommandError::failed)?;
        let mut text = serde_json::to_string_pretty(&Json::Object(merged.clone())).map_err(CommandError::failed)?;
        text.push('\n');
        crate::journal::storage::write_atomic(&crate::journal::storage::RealDisk, &at.settings, text.as_bytes(), true)
            .map_err(CommandError::failed)?;
    }
    let already_installed = merged == settings;
    let in_git = settings_in_git(at, !already_installed);
    let settings_relative = at.settings.strip_prefix(&at.main_root).unwrap_or(&at.settings).to_path_buf();
    let status_line = install_status_line(at, &hook.command)?;
    Ok(Installed { created, tier, hook, already_installed, settings_relative, in_git, status_line })
}

/// Makes the repository managed (`.abcd/`, the local tier, kept out of git): what every
/// host's `init` does first. Returns whether `.abcd/` was made now, and the tier.
pub fn manage(at: &Places) -> Result<(bool, PathBuf), CommandError> {
    let exclude = read_exclude(&at.exclude)?;
    manage_with(at, &exclude)
}

fn manage_with(at: &Places, exclude: &[u8]) -> Result<(bool, PathBuf), CommandError> {
    let abcd_dir = at.main_root.join(".abcd");
    let created = !abcd_dir.is_dir();
    std::fs::create_dir_all(&abcd_dir).map_err(CommandError::failed)?;
    let tier = at.root.join(places::LOCAL_TIER);
    std::fs::create_dir_all(&tier).map_err(CommandError::failed)?;
    if !excludes_local_tier(exclude) {
        ensure_excluded(&at.exclude, EXCLUDE_LINE)?;
    }
    Ok((created, tier))
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
    let excluded = read_exclude(&at.exclude).is_ok_and(|b| excludes_local_tier(&b));
    found(excluded, format!("{EXCLUDE_LINE} in {}", at.exclude.display()));
    match read_settings(&at.settings)? {
        Err(why) => found(false, format!("{} is readable ({why})", at.settings.display())),
        Ok(settings) => {
            for (event, command) in installed(&settings) {
                let what = format!("{} hook `abcd hook {}`", claude::event_name(event), event.cli_name());
                match command {
                    None => found(false, format!("{what} in {}", at.settings.display())),
                    Some(c) => {
                        // As the host runs it: exec form, a bare name resolved on PATH.
                        let runs = platform::process::resolve_program(OsStr::new(&c)).filter(|p| p.is_absolute());
                        let (ok, note) = match (&runs, c.contains('/')) {
                            (Some(_), true) => (true, String::new()),
                            (Some(p), false) => (true, format!(" (from PATH: {})", p.display())),
                            (None, true) => (false, " (no such file)".to_string()),
                            (None, false) => (false, " (not found on PATH)".to_string()),
                        };
                        found(ok, format!("{what} runs {c}{note}"))
                    }
                }
            }
        }
    }
    match status_line_winner(at) {
        Err((path, why)) => found(false, format!("status line: {} cannot be read ({why})", path.display())),
        Ok(None) => found(false, format!("status line `abcd {STATUS_LINE_VERB}` in {}", at.root.join(LOCAL_SETTINGS).display())),
        Ok(Some(f)) => found(
            true,
            format!(
                "status line from {} ({}), which wins: {} (`{}`)",
                f.layer.describe(),
                f.path.display(),
                if f.abcds { "abcd's" } else { "the person's own, not abcd's" },
                f.command
            ),
        ),
    }
    Ok(missing)
}

/// One of the host's settings files that may set the status line, highest precedence first
/// (docs/status-line.md: local, then project, then user).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingsLayer {
    Local,
    Project,
    User,
}

impl SettingsLayer {
    pub fn describe(self) -> &'static str {
        match self {
            SettingsLayer::Local => "the local settings",
            SettingsLayer::Project => "the project settings",
            SettingsLayer::User => "the user settings",
        }
    }
}

/// The settings files the host reads for `at`'s working copy, highest precedence first.
/// The user's is `$CLAUDE_CONFIG_DIR/settings.json` when that is set, else
/// `~/.claude/settings.json`; none when neither `HOME` nor it is set.
pub fn settings_layers(at: &Places) -> Vec<(SettingsLayer, PathBuf)> {
    let mut layers = vec![(SettingsLayer::Local, at.root.join(LOCAL_SETTINGS)), (SettingsLayer::Project, at.root.join(PROJECT_SETTINGS))];
    let config = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".claude")));
    if let Some(dir) = config {
        layers.push((SettingsLayer::User, dir.join("settings.json")));
    }
    layers
}

/// The status line that wins for `at`: the first layer that sets one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusLineFound {
    pub layer: SettingsLayer,
    pub path: PathBuf,
    pub command: String,
    pub abcds: bool,
}

/// Where the status line comes from: `Err` names a layer that cannot be read (it might set
/// one), with why.
pub fn status_line_winner(at: &Places) -> Result<Option<StatusLineFound>, (PathBuf, String)> {
    for (layer, path) in settings_layers(at) {
        let settings = match read_settings(&path) {
            Ok(Ok(s)) => s,
            Ok(Err(why)) => return Err((path, why)),
            Err(e) => return Err((path, e.to_string())),
        };
        if let Some(command) = status_line_of(&settings) {
            let abcds = status_line_is_abcds(&command);
            return Ok(Some(StatusLineFound { layer, path, command, abcds }));
        }
    }
    Ok(None)
}

/// What `init` did about the status line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatusLineInstall {
    /// Written into the local settings at this path, running this command.
    Installed { path: PathBuf, command: String },
    /// A layer already sets one (abcd's or the person's own): left as it is.
    Present(StatusLineFound),
    /// A layer could not be read, so whether the person has one is unknown: nothing written.
    Unknown { path: PathBuf, why: String },
}

/// The line the host runs for abcd's status line: `hook_command` (a bare name or a path,
/// quoted for the shell when it needs it) and the verb.
pub fn status_line_command(hook_command: &str) -> String {
    format!("{} {STATUS_LINE_VERB}", git::worktree::shell_quote(hook_command))
}

/// Installs abcd's status line into the local settings (never the committed project file,
/// which would replace every teammate's own) when no layer sets one; every other key of
/// the local settings is kept where it was. The local settings are kept out of git.
fn install_status_line(at: &Places, hook_command: &str) -> Result<StatusLineInstall, CommandError> {
    match status_line_winner(at) {
        Err((path, why)) => return Ok(StatusLineInstall::Unknown { path, why }),
        Ok(Some(found)) => return Ok(StatusLineInstall::Present(found)),
        Ok(None) => {}
    }
    let path = at.root.join(LOCAL_SETTINGS);
    let local = read_settings(&path)?.map_err(|why| CommandError::Failed(format!("{} became unreadable: {why}", path.display())))?;
    let command = status_line_command(hook_command);
    let mut text = serde_json::to_string_pretty(&Json::Object(with_status_line(local, &command))).map_err(CommandError::failed)?;
    text.push('\n');
    // The uncommitted layer stays out of git, as `abcd launch` keeps a lane's.
    ensure_excluded(&at.exclude, LOCAL_SETTINGS_EXCLUDE)?;
    std::fs::create_dir_all(path.parent().expect("settings have a folder")).map_err(CommandError::failed)?;
    crate::journal::storage::write_atomic(&crate::journal::storage::RealDisk, &path, text.as_bytes(), true)
        .map_err(CommandError::failed)?;
    Ok(StatusLineInstall::Installed { path, command })
}

/// How many hook events `init` installs.
pub fn hook_events() -> usize {
    crate::host::claude::EVENTS.len()
}
