//! What a lane's agent starts with, in the worktree abcd made for it (issue 33): abcd's
//! hooks, whatever the lane's base commit holds, and a plan that says where the agent is.
//!
//! A lane's worktree holds only committed files, so a person who never committed
//! `.claude/settings.json` (or a base older than `abcd init`) would give the lane's agent no
//! abcd hook at all: no journal, no guard, no verdict. When the lane's settings lack any of
//! abcd's hooks and the person's checkout has them, `abcd launch` writes the missing ones
//! into the lane's `.claude/settings.local.json` (the host reads it beside the project's
//! settings and runs a handler named in both once), kept out of git by a line in the
//! repository's `info/exclude`. The worktree is abcd's, so nothing of the person's is
//! written. A person who runs abcd as the plugin has no hook in any settings file, and the
//! plugin reaches the lane's agent as it reaches every session: nothing is written then.
//! `docs/decisions.md` ("Issue 33") gives the reasons.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::CommandError;
use super::checklist::{self, AddRequest};
use super::init;
use crate::checklist::item::TITLE_MAX_CHARS;
use crate::host::HookEvent;
use crate::host::claude_settings::{Json, LOCAL_SETTINGS, Object, PROJECT_SETTINGS, installed, merge_hooks};
use crate::refusal::{Refusal, RefusalKind as K, Untouched};

/// What the launch gave the lane's agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hooks {
    /// The lane's settings hold every abcd hook already.
    Present,
    /// Written into the lane's local settings: these events.
    Written(Vec<HookEvent>),
    /// The person's checkout names no abcd hook in its settings (the plugin, or none).
    NoneToGive,
}

/// Before a launch in the worktree abcd made for the lane (`cwd` not named): the lane's
/// agent gets abcd's hooks, and the lane's plan says where it is. A folder the person named
/// with `--cwd` is theirs: nothing is written there. A plan that cannot be written (the
/// lane's journal was deleted with a worktree removed by hand, say) does not stop the
/// launch: `note` is told one line saying so and what to run.
pub fn prepare(
    request: &LaunchRequest,
    lane_dir: &Path,
    receipt: &Path,
    note: &mut dyn FnMut(&str),
) -> Result<Option<Hooks>, CommandError> {
    if request.cwd.is_some() {
        return Ok(None);
    }
    let hooks = ensure_hooks(lane_dir)?;
    if let Err(e) = seed_plan(request, lane_dir, receipt) {
        note(&format!("note: the lane's plan in {} was not given its assignment ({e}); the agent starts without it", lane_dir.display()));
    }
    Ok(Some(hooks))
}

/// Before a loop turn in the worktree abcd made for the loop (the implementer lane's, which
/// the reviewer shares): the loop's agents get abcd's hooks as a launch's agent does. A
/// folder the person named (`--implementer-cwd`, `--reviewer-cwd`) is theirs: nothing is
/// written there.
pub fn ensure_loop_hooks(root: &Path, run: &str, folder: &Path) -> Result<(), CommandError> {
    let own = crate::places::lane_worktree(root, run, crate::phased::Role::Implementer.lane())?;
    if own != folder || !folder.is_dir() {
        return Ok(());
    }
    ensure_hooks(folder).map(|_| ())
}

/// The hooks abcd installs that a settings file holds.
fn events_in(path: &Path) -> Result<(Object, Vec<HookEvent>), String> {
    let settings = init::read_settings(path).map_err(|e| e.to_string())??;
    let events = installed(&settings).into_iter().filter(|(_, c)| c.is_some()).map(|(e, _)| e).collect();
    Ok((settings, events))
}

fn ensure_hooks(lane_dir: &Path) -> Result<Hooks, CommandError> {
    let at = init::places_of(&crate::places::Place::at(lane_dir))?;
    let committed = events_in(&lane_dir.join(PROJECT_SETTINGS)).map(|(_, e)| e).unwrap_or_default();
    let local_path = lane_dir.join(LOCAL_SETTINGS);
    let (local, in_local) = events_in(&local_path).map_err(|why| {
        Refusal::new(
            K::FileShape,
            "launch",
            format!("the lane's {} cannot be read ({why}), so abcd cannot give the lane's agent its hooks there", local_path.display()),
        )
        .untouched(Untouched::Started)
        .instead("remove it (the worktree is abcd's) and launch again")
    })?;
    let missing: Vec<HookEvent> =
        crate::host::claude::EVENTS.into_iter().filter(|e| !committed.contains(e) && !in_local.contains(e)).collect();
    if missing.is_empty() {
        return Ok(Hooks::Present);
    }
    let person = events_in(&at.settings).ok().map(|(s, _)| s).unwrap_or_default();
    let Some(command) = installed(&person).into_iter().find_map(|(_, c)| c) else { return Ok(Hooks::NoneToGive) };
    let merged = merge_hooks(local, &command).map_err(|why| {
        Refusal::new(K::FileShape, "launch", format!("the lane's {} {why}", local_path.display()))
            .untouched(Untouched::Started)
            .instead("remove it (the worktree is abcd's) and launch again")
    })?;
    init::ensure_excluded(&at.exclude, init::LOCAL_SETTINGS_EXCLUDE)?;
    let mut text = serde_json::to_string_pretty(&Json::Object(merged)).map_err(CommandError::failed)?;
    text.push('\n');
    std::fs::create_dir_all(local_path.parent().expect("the settings have a folder")).map_err(CommandError::failed)?;
    crate::journal::storage::write_atomic(&crate::journal::storage::RealDisk, &local_path, text.as_bytes(), true)
        .map_err(CommandError::failed)?;
    Ok(Hooks::Written(missing))
}

/// The plan item that tells the lane's agent where it is: run, lane, role, and the receipt
/// it owes and where (relative to the lane when inside it). Within the item's title bound:
/// a receipt path too long for it is named by where to find it instead.
pub fn assignment_title(request: &LaunchRequest, lane_dir: &Path, receipt: &Path) -> String {
    let shown: PathBuf = receipt.strip_prefix(lane_dir).map(Path::to_path_buf).unwrap_or_else(|_| receipt.to_path_buf());
    let head = format!("{} of lane {}/{}", request.role, request.run, request.lane);
    let full = format!("{head}: do the lane's work here, then write the receipt {}", shown.display());
    if full.chars().count() <= TITLE_MAX_CHARS {
        return full;
    }
    format!("{head}: do the lane's work here, then write the receipt `abcd resume` names")
}

/// Adds the assignment to the lane's own plan (its local tier's checklist) unless an item
/// with that title is there: the lane's sessions start with it, as every session starts with
/// its checklist, within the context budget. It names the lane's branch, which is its work.
fn seed_plan(request: &LaunchRequest, lane_dir: &Path, receipt: &Path) -> Result<(), CommandError> {
    let title = assignment_title(request, lane_dir, receipt);
    let wc = super::lane::open_at(lane_dir)?;
    let view = wc.store.checklist_view();
    if view.checklist.items.iter().any(|i| i.fields.title == title) {
        return Ok(());
    }
    let add = AddRequest {
        title,
        waits_on: None,
        next_look: None,
        promise: None,
        owner_refs: vec![crate::ledger::lane_branch(&request.run, &request.lane)],
        credential: Default::default(),
        blocker: None,
    };
    checklist::add(&wc.store, &wc.scope, add, &|| Ok(crate::clock::now_zoned()?), crate::host::session_from_env())?;
    Ok(())
}

/// `abcd launch`: an agent for a lane, as the person asked for it.
pub struct LaunchRequest {
    pub run: String,
    pub lane: String,
    pub role: String,
    /// The receipt's path, relative to the lane's worktree unless absolute.
    pub receipt: PathBuf,
    /// The folder the lane runs in, relative to `here` unless absolute; when none, the
    /// worktree abcd makes for the lane ([`super::lane::own_worktree`]).
    pub cwd: Option<PathBuf>,
    /// The person's word that uncommitted work in a `cwd` abcd did not make may be saved
    /// aside and the folder reset.
    pub save_aside: bool,
    /// The agent's command line; its first word is the program.
    pub command: Vec<OsString>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(run: &str, lane: &str) -> LaunchRequest {
        LaunchRequest {
            run: run.into(),
            lane: lane.into(),
            role: "implementer".into(),
            receipt: "R".into(),
            cwd: None,
            save_aside: false,
            command: vec!["true".into()],
        }
    }

    /// The title names the receipt while it fits TITLE_MAX_CHARS, and says where to find it
    /// once it would not.
    #[test]
    fn the_assignment_names_the_receipt_within_the_title_bound() {
        let lane = Path::new("/home/p/.abcd/lanes/repo-0123/r1/impl");
        let req = request("r1", "impl");
        assert_eq!(
            assignment_title(&req, lane, &lane.join("RECEIPT.md")),
            "implementer of lane r1/impl: do the lane's work here, then write the receipt RECEIPT.md"
        );
        let fixed = assignment_title(&req, lane, Path::new("/")).chars().count() - 1;
        let fits = format!("/{}", "a".repeat(TITLE_MAX_CHARS - fixed - 1));
        let title = assignment_title(&req, lane, Path::new(&fits));
        assert_eq!(title.chars().count(), TITLE_MAX_CHARS);
        assert!(title.ends_with(&fits), "{title}");
        let over = format!("{fits}a");
        let title = assignment_title(&req, lane, Path::new(&over));
        assert!(title.ends_with("the receipt `abcd resume` names") && title.chars().count() <= TITLE_MAX_CHARS, "{title}");
    }
}
