//! The hooks' logic, host-neutral: a `HookRequest` in, a `HookReply` out, through the
//! same store as the verbs (append → fold → projection). Outside a managed checkout every
//! hook answers nothing and writes nothing. Errors are returned, never printed: the CLI
//! turns any of them into "allow, and one line on stderr" (fail open, loudly).

pub mod away;
pub mod stop;

use std::path::{Component, Path, PathBuf};

use serde_json::json;

use crate::checklist::render::{self, DEFAULT_BUDGET_CHARS};
use crate::event::{self, BranchCreated, CompactionRecorded, Scope, SessionStarted};
use crate::git::branch as git;
use crate::host::{HookEvent, HookReply, HookRequest, RequestDetail, ToolCall};
use crate::journal::append::{AppendNotes, Appended, JournalError};
use crate::journal::format::{Actor, NewEvent};
use crate::journal::storage::RealDisk;
use crate::places::{self, PlaceError};
use crate::store::Store;

/// The first line of the re-injected context: factual, as the host's guidance asks.
pub const CONTEXT_HEADER: &str =
    "abcd keeps this working copy's checklist (it survives compaction; change it with `abcd checklist add|set`):";
/// Behind-note branches named, at most.
const BEHIND_REFS_MAX: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("the payload's cwd {0} is not an existing folder")]
    NoSuchCwd(PathBuf),
    #[error(transparent)]
    Place(#[from] PlaceError),
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    #[error("{0}")]
    Clock(String),
}

/// What a hook did besides its reply: a failure it allowed past (printed on stderr).
pub struct HookOutcome {
    pub reply: HookReply,
    pub warning: Option<String>,
}

/// Handles one hook call; `started` is when the hook process began (the owed-work
/// budget runs from it). `Ok` with an empty reply when the checkout is not managed.
pub fn handle(req: &HookRequest, started: std::time::Instant) -> Result<HookOutcome, HookError> {
    if !req.cwd.is_dir() {
        return Err(HookError::NoSuchCwd(req.cwd.clone()));
    }
    let (paths, scope) = match places::working_copy_journal(&req.cwd) {
        Ok(found) => found,
        Err(PlaceError::NotInWorkingCopy { .. } | PlaceError::NotManaged { .. }) => {
            return Ok(HookOutcome { reply: HookReply::default(), warning: None });
        }
        Err(e) => return Err(e.into()),
    };
    let store = Store::new(places::open_journal(RealDisk::shared(), paths.clone())?);
    let root = places::working_copy_root(&req.cwd)?.0;
    let actor = Actor::this_process(req.session_id.clone());
    let event = |kind: &str, data: serde_json::Value| NewEvent { kind: kind.into(), actor: actor.clone(), data };
    match &req.detail {
        RequestDetail::SessionStart { source } => {
            let started_data = SessionStarted {
                session: req.session_id.clone(),
                source: source.name().to_string(),
                working_copy: root.display().to_string(),
            };
            // The checklist first: a session start cannot change it, and the view says which
            // line the projections name, so the append can leave them be without reading
            // the state (Store::append_unseen).
            let view = store.checklist_view();
            let started = event(event::SESSION_STARTED, json!(started_data));
            let mut warnings: Vec<String> =
                append_warning(&started.kind, store.append_unseen(std::slice::from_ref(&started), &scope, view.projection_seq))
                    .into_iter()
                    .collect();
            let (block, away_warning) = away_block(&root)?;
            warnings.extend(away_warning);
            let reply = HookReply { context: Some(session_context(&view, block.as_deref())), ..Default::default() };
            Ok(HookOutcome { reply, warning: join(warnings) })
        }
        RequestDetail::Compact { trigger } if req.event == HookEvent::PreCompact => {
            let data = CompactionRecorded { session: req.session_id.clone(), trigger: trigger.clone() };
            let warning = record(&store, &scope, event(event::COMPACTION_RECORDED, json!(data)));
            Ok(HookOutcome { reply: HookReply::default(), warning })
        }
        RequestDetail::PreToolUse { call } => pre_tool_use(&store, &scope, &root, call, &event),
        RequestDetail::UserPromptSubmit => {
            let view = store.checklist_view();
            let state = store.current_state().ok().map(|c| c.state.work).unwrap_or_default();
            let unlisted = unlisted_refs(&view.checklist.items, &state.branches, git::current_branch(&root).as_deref());
            let behind = (!unlisted.is_empty()).then(|| {
                format!(
                    "abcd: the checklist is behind this session's work: no item names {} in its owner refs. Adding an item or an --owner-ref keeps the plan in step with the work.",
                    unlisted.iter().take(BEHIND_REFS_MAX).cloned().collect::<Vec<_>>().join(", ")
                )
            });
            let now = crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?;
            let record = away::read(&root);
            let show = |t| crate::clock::show(t);
            let (block, system_message) = match record.state.window.as_ref() {
                Some(w) if record.holding(now).is_some() => {
                    (Some(crate::away::text::away_block(w, &show)), Some(crate::away::text::person_line(w, &show)))
                }
                Some(w) => (None, crate::away::text::lapsed_line(w, now, &show)),
                None => (None, None),
            };
            let context = match (behind, block) {
                (Some(b), Some(a)) => Some(format!("{a}\n\n{b}")),
                (b, a) => a.or(b),
            };
            Ok(HookOutcome { reply: HookReply { context, system_message, ..Default::default() }, warning: record.warning })
        }
        RequestDetail::Stop { stop_hook_active, last_assistant_message, session_crons } => {
            let payload = stop::StopPayload {
                session_id: req.session_id.as_deref(),
                stop_hook_active: *stop_hook_active,
                last_assistant_message: last_assistant_message.as_deref(),
                session_crons,
            };
            stop::stop(&store, &scope, &root, &payload, started)
        }
        RequestDetail::StopFailure { error } => stop::stop_failure(&root, req.session_id.as_deref(), error),
        RequestDetail::Compact { .. } => Ok(HookOutcome { reply: HookReply::default(), warning: None }),
    }
}

/// Appends one event; a failure is reported as a warning and the hook still answers.
fn record(store: &Store, scope: &Scope, event: NewEvent) -> Option<String> {
    append_warning(&event.kind, store.append(std::slice::from_ref(&event), Some(scope)))
}

type AppendResult = Result<(Vec<Appended>, AppendNotes, Option<JournalError>), JournalError>;

/// What a hook says on stderr of an append: nothing, projections not refreshed, or not
/// recorded at all.
fn append_warning(kind: &str, result: AppendResult) -> Option<String> {
    match result {
        Ok((_, _, None)) => None,
        Ok((_, _, Some(e))) => Some(format!("the {kind} event is saved but the files derived from the journal were not rewritten: {e}")),
        Err(e) => Some(format!("the {kind} event was not recorded: {e}")),
    }
}

/// The context a session starts with: while away the away block first, then the header
/// and the checklist, all within the budget (the host's 10,000 characters less a margin).
pub fn session_context(view: &crate::store::reader::ChecklistView, away_block: Option<&str>) -> String {
    let block_chars = away_block.map_or(0, |b| b.chars().count() + 2);
    let budget = DEFAULT_BUDGET_CHARS.saturating_sub(CONTEXT_HEADER.chars().count() + 1 + block_chars).max(render::MIN_BUDGET_CHARS);
    let now = crate::clock::now().unwrap_or_else(|_| crate::clock::wall_now());
    let text = render::render(&view.checklist.items, &view.notes, budget, now);
    match away_block {
        Some(block) => format!("{block}\n\n{CONTEXT_HEADER}\n{text}"),
        None => format!("{CONTEXT_HEADER}\n{text}"),
    }
}

/// The away block while the person is away, and a warning when the record could not be
/// read (then no block: not away).
fn away_block(root: &Path) -> Result<(Option<String>, Option<String>), HookError> {
    let now = crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?;
    let record = away::read(root);
    let block = record.holding(now).map(|w| crate::away::text::away_block(w, &|t| crate::clock::show(t)));
    Ok((block, record.warning))
}

fn join(warnings: Vec<String>) -> Option<String> {
    (!warnings.is_empty()).then(|| warnings.join("; "))
}

/// Own branches and the current branch that no item's owner refs name.
fn unlisted_refs(items: &[crate::fold::checklist::Item], own: &[String], current: Option<&str>) -> Vec<String> {
    let named = |b: &str| items.iter().any(|i| i.fields.owner_refs.iter().any(|r| r == b));
    let mut out: Vec<String> = own.iter().filter(|b| !named(b)).cloned().collect();
    if let Some(c) = current
        && own.iter().any(|b| b == c)
        && !named(c)
        && !out.iter().any(|b| b == c)
    {
        out.push(c.to_string());
    }
    out
}

fn pre_tool_use(
    store: &Store,
    scope: &Scope,
    root: &Path,
    call: &ToolCall,
    event: &dyn Fn(&str, serde_json::Value) -> NewEvent,
) -> Result<HookOutcome, HookError> {
    match call {
        ToolCall::WritesFile { tool, path } => {
            let home = places::home_dir()?;
            let target = resolve(root, Path::new(path));
            let deny = protected_place(&target, &home).map(|what| {
                format!(
                    "abcd refuses {tool} on {what}: it is abcd's own state, derived from a hash-chained journal, and a direct edit is never trusted. Use `abcd checklist add|set` for the checklist (or `abcd journal repair` for a damaged journal)."
                )
            });
            Ok(HookOutcome { reply: HookReply { deny, ..Default::default() }, warning: None })
        }
        ToolCall::Shell { command } => {
            let mut warning = None;
            for made in git::branch_creations(command) {
                // A creation of a branch that already exists is not one (it fails, or
                // resets it); a branch name carrying a secret is not recorded.
                if git::branch_exists(root, &made.branch) || crate::secrets::scan(&made.branch).is_some() {
                    continue;
                }
                let data = BranchCreated { branch: made.branch, command: made.form, renamed_from: made.renamed_from };
                if let Some(w) = record(store, scope, event(event::BRANCH_CREATED, json!(data))) {
                    warning = Some(w);
                }
            }
            Ok(HookOutcome { reply: HookReply::default(), warning })
        }
        ToolCall::Question => {
            // While away, every call of the question tool is refused, whatever it asks.
            let now = crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?;
            let record = away::read(root);
            let deny = record.holding(now).map(|_| {
                format!("abcd: the person is away, so no question reaches them, whatever it asks. {}", crate::verdict::stop::QUESTION_ROUTE)
            });
            Ok(HookOutcome { reply: HookReply { deny, ..Default::default() }, warning: record.warning })
        }
        ToolCall::Other { .. } => Ok(HookOutcome { reply: HookReply::default(), warning: None }),
    }
}

/// The path a tool would write: relative to the working copy, `..` folded, and the
/// longest existing prefix resolved through symlinks (the file itself may not exist yet).
pub fn resolve(base: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() { path.to_path_buf() } else { base.join(path) };
    let mut lexical = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.file_name().map(|n| n.to_owned()), existing.parent().map(Path::to_path_buf)) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return lexical,
        }
    }
}

/// What a protected path is, if it is one: a working copy's local tier or the home store.
fn protected_place(target: &Path, home: &Path) -> Option<String> {
    let home = resolve(Path::new("/"), home);
    if target.starts_with(&home) {
        return Some(format!("{} (the abcd home store)", target.display()));
    }
    let tier: PathBuf = places::LOCAL_TIER.into();
    let comps: Vec<_> = target.components().collect();
    let tier_comps: Vec<_> = tier.components().collect();
    comps
        .windows(tier_comps.len())
        .any(|w| w == tier_comps.as_slice())
        .then(|| format!("{} (a working copy's abcd local tier)", target.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_folds_dotdot_and_follows_symlinked_folders() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir_all(real.join(".abcd/.work.local")).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let via_link = resolve(dir.path(), Path::new("link/.abcd/.work.local/checklist.json"));
        assert!(protected_place(&via_link, Path::new("/nonexistent-home")).is_some(), "{via_link:?}");
        let via_dotdot = resolve(&real.join("src"), Path::new("../.abcd/./.work.local/journal.jsonl"));
        assert!(protected_place(&via_dotdot, Path::new("/nonexistent-home")).is_some(), "{via_dotdot:?}");
        let elsewhere = resolve(&real, Path::new("src/main.rs"));
        assert!(protected_place(&elsewhere, Path::new("/nonexistent-home")).is_none());
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        assert!(protected_place(&resolve(dir.path(), Path::new("home/anchors/x")), &home).is_some());
    }
}
