//! Which working copy a session's hooks speak for: the one the session started in (seed 003
//! "Which copy"). A session that `cd`s into a worktree it just cut is still the session of
//! its start copy: its owed work, counts and verdicts are that copy's. The host's project
//! folder (Claude Code's `CLAUDE_PROJECT_DIR`, given to every hook, never moved by `cd`)
//! names it; when that is no managed working copy (or the host names none), the payload's
//! `cwd` does, as before. `docs/own-work.md` states the rule.

use std::path::Path;

use crate::host::HookRequest;
use crate::places;

/// The request as the hooks judge it: `cwd` set to the session's start copy when the host
/// names one that is managed (or whose git link is broken, which the hook then names).
pub fn at_start_copy(req: &HookRequest) -> HookRequest {
    match req.project_dir.as_deref().filter(|dir| speaks_for(dir)) {
        Some(dir) if dir != req.cwd => HookRequest { cwd: dir.to_path_buf(), ..req.clone() },
        _ => req.clone(),
    }
}

fn speaks_for(dir: &Path) -> bool {
    dir.is_dir() && (places::broken_worktree_link(dir).is_some() || places::working_copy_journal(dir).is_ok())
}
