//! `abcd init --host codex`'s work on the files: abcd's hooks in `$CODEX_HOME/hooks.json`
//! and their trust in `$CODEX_HOME/config.toml` (the user layer, read by every Codex
//! session of this user; abcd's hooks do nothing outside a managed checkout), `check`
//! reading both, and `uninstall` taking out exactly what `install` put in. Both files are
//! the person's: each is read whole and parsed before anything is written, one that does
//! not parse is refused and left as it is, and a write replaces the file atomically with
//! the same mode, through a symlink to where it points.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::CommandError;
use super::init::{HookCommand, hook_command};
use crate::host::codex_install::{self, CodexEvent, EVENTS, Found, Move};
use crate::platform;
use crate::refusal::{Refusal, RefusalKind as K};

/// The variable naming Codex's home folder (default `~/.codex`).
pub const CODEX_HOME_ENV: &str = "CODEX_HOME";
/// Codex's hook file in its home folder.
pub const HOOKS_FILE: &str = "hooks.json";
/// Codex's settings file in its home folder.
pub const CONFIG_FILE: &str = "config.toml";
/// The largest `hooks.json` or `config.toml` read; a larger one is refused, not read in part.
pub const MAX_CODEX_FILE_BYTES: u64 = 4 << 20;

/// Where Codex keeps what `init` writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodexPlaces {
    pub home: PathBuf,
    pub hooks: PathBuf,
    pub config: PathBuf,
    /// `hooks`, as the trust keys name it.
    pub hooks_key: String,
    /// `home` is `$CODEX_HOME` (which Codex requires to exist), not the default.
    pub from_env: bool,
}

/// Codex's home folder as Codex finds it: `$CODEX_HOME` made canonical (Codex refuses to
/// start when it is not an existing folder), else `$HOME/.codex` as it is.
pub fn codex_places() -> Result<CodexPlaces, CommandError> {
    codex_places_from(std::env::var_os(CODEX_HOME_ENV), std::env::var_os("HOME"))
}

fn codex_places_from(codex_home: Option<OsString>, home: Option<OsString>) -> Result<CodexPlaces, CommandError> {
    let (dir, from_env) = match codex_home.filter(|h| !h.is_empty()) {
        Some(h) => {
            let dir = PathBuf::from(&h).canonicalize().ok().filter(|d| d.is_dir()).ok_or_else(|| {
                Refusal::new(
                    K::WrongPath,
                    "installing abcd's hooks for Codex",
                    format!("{CODEX_HOME_ENV} is {}, which is not a folder (Codex will not start with it either)", Path::new(&h).display()),
                )
                .nothing_written()
                .instead(format!("make it (`mkdir -p \"${CODEX_HOME_ENV}\"`) or unset {CODEX_HOME_ENV}, and run the command again"))
            })?;
            (dir, true)
        }
        None => {
            let home = home.filter(|h| !h.is_empty()).ok_or_else(|| {
                Refusal::new(K::WrongPath, "installing abcd's hooks for Codex", format!("neither {CODEX_HOME_ENV} nor HOME is set"))
                    .nothing_written()
                    .instead(format!("set {CODEX_HOME_ENV} to Codex's folder and run the command again"))
            })?;
            (PathBuf::from(home).join(".codex"), false)
        }
    };
    let hooks = dir.join(HOOKS_FILE);
    let hooks_key = hooks
        .to_str()
        .ok_or_else(|| {
            Refusal::new(
                K::WrongPath,
                "installing abcd's hooks for Codex",
                format!("{} is not UTF-8, so it cannot be a trust key", hooks.display()),
            )
            .nothing_written()
            .instead(format!("set {CODEX_HOME_ENV} to a folder whose path is UTF-8 and run the command again"))
        })?
        .to_string();
    Ok(CodexPlaces { config: dir.join(CONFIG_FILE), home: dir, hooks, hooks_key, from_env })
}

/// A file of the person's that abcd cannot change safely: refused, nothing written.
fn refused(path: &Path, why: impl std::fmt::Display, instead: &str) -> CommandError {
    Refusal::new(K::FileShape, format!("changing {}", path.display()), why.to_string()).nothing_written().instead(instead).into()
}

const FIX_AND_RERUN: &str = "fix the file (or move it aside) and run the command again";

/// The file's text, `None` when there is none; refused when it is not a regular file, is
/// over [`MAX_CODEX_FILE_BYTES`] or is not UTF-8.
pub fn read_text(path: &Path) -> Result<Option<String>, CommandError> {
    match platform::fs::read_regular(path, MAX_CODEX_FILE_BYTES + 1) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(refused(path, e, FIX_AND_RERUN)),
        Ok(b) if b.len() as u64 > MAX_CODEX_FILE_BYTES => {
            Err(refused(path, format!("it is over {MAX_CODEX_FILE_BYTES} bytes"), FIX_AND_RERUN))
        }
        Ok(b) => String::from_utf8(b).map(Some).map_err(|_| refused(path, "it is not UTF-8 text", FIX_AND_RERUN)),
    }
}

/// Replaces the file at `path` with `bytes` atomically (a temp file beside it, synced, then
/// renamed over it): a symlink is written through to where it points, and the file keeps
/// its mode (a new one is made 0600: Codex's settings can hold keys).
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CommandError> {
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => path.canonicalize().map_err(|e| refused(path, e, FIX_AND_RERUN))?,
        _ => path.to_path_buf(),
    };
    let mode = std::fs::metadata(&target).ok().map_or(0o600, |m| platform::fs::inode(&m).mode);
    let dir = target.parent().expect("a file has a folder");
    let name = target.file_name().expect("a file has a name").to_string_lossy();
    let tmp = dir.join(format!(".{name}.abcd-{}.tmp", std::process::id()));
    let creating = std::fs::OpenOptions::new().write(true).create_new(true).clone();
    let result = (|| {
        let mut f =
            platform::fs::open_regular(platform::fs::created_mode(&mut creating.clone(), 0o600), &tmp, platform::fs::Symlink::Refuse)?;
        f.write_all(bytes)?;
        platform::fs::set_mode(&f, mode)?;
        platform::fs::sync_data(&f)?;
        std::fs::rename(&tmp, &target)?;
        platform::fs::sync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(|e| CommandError::Failed(format!("writing {}: {e}", target.display())))
}

/// What a file went through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Unchanged,
    Written,
    Created,
}

fn change(before: &Option<String>, after: &Option<String>) -> Change {
    match (before, after) {
        (b, a) if b == a => Change::Unchanged,
        (None, Some(_)) => Change::Created,
        _ => Change::Written,
    }
}

/// Writes `path` as `after` says, when it differs from `before`. Nothing here deletes a
/// file: one `uninstall` empties stays, as a person's empty file would.
fn put(path: &Path, before: &Option<String>, after: &Option<String>) -> Result<Change, CommandError> {
    let done = change(before, after);
    match (done, after) {
        (Change::Unchanged, _) | (_, None) => {}
        (_, Some(text)) => write_file(path, text.as_bytes())?,
    }
    Ok(done)
}

/// What `install` did.
pub struct CodexInstalled {
    pub places: CodexPlaces,
    pub hook: HookCommand,
    pub hooks: Change,
    pub config: Change,
    /// abcd's handlers as they now stand, each trusted.
    pub trusted: Vec<Found>,
}

/// Both files, read and parsed; a `config.toml` that does not parse is refused here, before
/// anything is written (a `hooks.json` is parsed by the step that uses it).
fn read_both(p: &CodexPlaces) -> Result<(Option<String>, Option<String>), CommandError> {
    let hooks = read_text(&p.hooks)?;
    let config = read_text(&p.config)?;
    if let Some(text) = &config {
        codex_install::parse_config(text).map_err(|why| refused(&p.config, why, FIX_AND_RERUN))?;
    }
    Ok((hooks, config))
}

/// Installs abcd's handlers into `hooks.json` and trusts them in `config.toml`; run again,
/// it rewrites a handler that names another binary and trusts it anew. `config.toml` is
/// written first: trust for a handler not yet written is inert, and a run cut short
/// between the two is finished by the next.
pub fn install(p: &CodexPlaces) -> Result<CodexInstalled, CommandError> {
    let (hooks_before, config_before) = read_both(p)?;
    let hook = hook_command()?;
    let hooks_after =
        codex_install::with_abcd_hooks(hooks_before.as_deref(), &hook.command).map_err(|why| refused(&p.hooks, why, FIX_AND_RERUN))?;
    let trusted = codex_install::abcd_hooks(&hooks_after).map_err(|why| refused(&p.hooks, why, FIX_AND_RERUN))?;
    let entries: Vec<(String, String)> = trusted
        .iter()
        .filter_map(|f| Some((codex_install::trust_key(&p.hooks_key, f.event.snake, f.group, f.handler), f.hash.clone()?)))
        .collect();
    let config_after = codex_install::with_trust(config_before.as_deref().unwrap_or_default(), &entries)
        .map_err(|why| refused(&p.config, why, FIX_AND_RERUN))?;
    if !p.from_env {
        platform::fs::create_dir_all(&p.home, 0o700).map_err(|e| CommandError::Failed(format!("making {}: {e}", p.home.display())))?;
    }
    let config = put(&p.config, &config_before, &Some(config_after))?;
    let hooks = put(&p.hooks, &hooks_before, &Some(hooks_after))?;
    Ok(CodexInstalled { places: p.clone(), hook, hooks, config, trusted })
}

/// How one of abcd's hooks stands with Codex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookState {
    /// Present, trusted as it is, and its program found.
    Ok,
    /// No abcd handler for the event in `hooks.json`.
    Missing,
    /// Present, with no trusted hash: Codex skips it.
    Untrusted,
    /// Present, trusted for another definition (changed since it was trusted): Codex skips it.
    Modified,
    /// Present and trusted, but the program it names is not there (why).
    NotRunnable(String),
}

/// One line of `check`.
pub struct Checked {
    pub event: CodexEvent,
    pub state: HookState,
    /// The handler's command, when present.
    pub command: Option<String>,
    /// Its trust key, when present.
    pub key: Option<String>,
}

/// How each of abcd's Codex hooks stands; nothing is written.
pub fn check(p: &CodexPlaces) -> Result<Vec<Checked>, CommandError> {
    let (hooks, config) = read_both(p)?;
    let found = match &hooks {
        None => Vec::new(),
        Some(text) => codex_install::abcd_hooks(text).map_err(|why| refused(&p.hooks, why, FIX_AND_RERUN))?,
    };
    let doc = codex_install::parse_config(config.as_deref().unwrap_or_default()).map_err(|why| refused(&p.config, why, FIX_AND_RERUN))?;
    Ok(EVENTS
        .iter()
        .map(|event| {
            let Some(f) = found.iter().find(|f| f.event == *event) else {
                return Checked { event: *event, state: HookState::Missing, command: None, key: None };
            };
            let key = codex_install::trust_key(&p.hooks_key, event.snake, f.group, f.handler);
            let state = match (codex_install::trusted_hash(&doc, &key), &f.hash) {
                (None, _) => HookState::Untrusted,
                (Some(t), Some(h)) if t == *h => match runnable(&f.command) {
                    Ok(()) => HookState::Ok,
                    Err(why) => HookState::NotRunnable(why),
                },
                (Some(_), _) => HookState::Modified,
            };
            Checked { event: *event, state, command: Some(f.command.clone()), key: Some(key) }
        })
        .collect())
}

/// Whether the program a handler names is there: a path names a file, a bare name is on
/// `PATH` (the PATH Codex passes on is the one it was started with, so this one's is the
/// best guess).
fn runnable(command: &str) -> Result<(), String> {
    let program = command.split(" hook ").next().unwrap_or_default();
    let program = program.strip_prefix('\'').and_then(|p| p.strip_suffix('\'')).map_or(program.to_string(), |q| q.replace(r"'\''", "'"));
    match platform::process::resolve_program(OsStr::new(&program)).filter(|p| p.is_absolute()) {
        Some(_) => Ok(()),
        None if program.contains('/') => Err(format!("{program}: no such file")),
        None => Err(format!("`{program}` is not found on PATH")),
    }
}

/// What `uninstall` did.
pub struct CodexUninstalled {
    pub places: CodexPlaces,
    pub hooks: Change,
    pub config: Change,
    /// How many of abcd's handlers went.
    pub removed: usize,
}

/// Removes abcd's handlers from `hooks.json` and their trust from `config.toml`: after
/// `install`, both come back byte for byte as they were (a file `install` made stays,
/// emptied: it cannot be told from a person's empty file), and
/// the person's groups that stood after abcd's keep their trust under their new places.
/// `config.toml` is written first, and its edit is safe to repeat, so a run cut short is
/// finished by the next.
pub fn uninstall(p: &CodexPlaces) -> Result<CodexUninstalled, CommandError> {
    let (hooks_before, config_before) = read_both(p)?;
    let Some(hooks_text) = &hooks_before else {
        return Ok(CodexUninstalled { places: p.clone(), hooks: Change::Unchanged, config: Change::Unchanged, removed: 0 });
    };
    let (hooks_after, removed) = codex_install::without_abcd_hooks(hooks_text).map_err(|why| refused(&p.hooks, why, FIX_AND_RERUN))?;
    let hooks_after = Some(hooks_after);
    let gone: Vec<String> = removed.gone.iter().map(|(s, g, h)| codex_install::trust_key(&p.hooks_key, s, *g, *h)).collect();
    let moves: Vec<Move> = removed
        .moved
        .iter()
        .map(|m| Move {
            from: codex_install::trust_key(&p.hooks_key, m.snake, m.from_group, m.handler),
            to: codex_install::trust_key(&p.hooks_key, m.snake, m.to_group, m.handler),
            hash: m.hash.clone(),
        })
        .collect();
    let config_after = match &config_before {
        None => None,
        Some(text) => Some(codex_install::without_trust(text, &gone, &moves).map_err(|why| refused(&p.config, why, FIX_AND_RERUN))?),
    };
    let config = put(&p.config, &config_before, &config_after)?;
    let hooks = put(&p.hooks, &hooks_before, &hooks_after)?;
    Ok(CodexUninstalled { places: p.clone(), hooks, config, removed: removed.gone.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_home_is_canonical_when_set_and_the_default_is_not_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::fs::create_dir(dir.path().join("h")).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let p = codex_places_from(Some(link.clone().into()), None).unwrap();
        assert_eq!(p.hooks, real.canonicalize().unwrap().join(HOOKS_FILE));
        assert!(p.from_env);
        let p = codex_places_from(None, Some(dir.path().join("h").into())).unwrap();
        assert_eq!(p.hooks_key, format!("{}/h/.codex/hooks.json", dir.path().display()));
        assert!(codex_places_from(Some(dir.path().join("absent").into()), None).is_err());
        assert!(codex_places_from(None, None).is_err());
    }

    #[test]
    fn a_file_of_the_cap_is_read_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONFIG_FILE);
        std::fs::write(&path, vec![b'#'; MAX_CODEX_FILE_BYTES as usize]).unwrap();
        assert_eq!(read_text(&path).unwrap().unwrap().len() as u64, MAX_CODEX_FILE_BYTES);
        std::fs::write(&path, vec![b'#'; MAX_CODEX_FILE_BYTES as usize + 1]).unwrap();
        assert!(read_text(&path).unwrap_err().to_string().contains("over"));
    }

    #[test]
    fn a_write_keeps_the_mode_and_goes_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles.toml");
        std::fs::write(&real, "a = 1\n").unwrap();
        let f = platform::fs::open_regular(std::fs::OpenOptions::new().read(true), &real, platform::fs::Symlink::Follow).unwrap();
        platform::fs::set_mode(&f, 0o640).unwrap();
        let link = dir.path().join(CONFIG_FILE);
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_file(&link, b"a = 2\n").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "a = 2\n");
        assert_eq!(platform::fs::inode(&std::fs::metadata(&real).unwrap()).mode & 0o7777, 0o640);
    }
}
