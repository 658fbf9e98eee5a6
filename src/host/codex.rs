//! Codex CLI's hook wire format (../shared/host/codex-hooks.md, pinned CLI 0.171.0):
//! snake_case input fields as Claude Code's, outputs checked by strict schemas (one field
//! Codex does not know drops the whole output, silently), so each event's output is written
//! with only the fields its schema takes (§2.3, §8.1). The tools differ (§4): the shell is
//! `Bash` with `{command}`, files are written by `apply_patch` with the patch as
//! `{command}`, and the question tool is `request_user_input`.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::secrets::{Bound, cut_after_scan};

use super::{HookEvent, HookReply, HookRequest, PayloadError, RequestDetail, StartSource, ToolCall};

/// The largest payload read from stdin; a larger one fails open. A payload carries one
/// patch at most, and a patch this large is no edit a session makes.
pub const MAX_PAYLOAD_BYTES: usize = 4 << 20;
/// A session id longer than this is not kept (Codex's are 36-character UUIDs).
const MAX_SESSION_ID_BYTES: usize = 128;
/// A SessionStart source abcd does not know, at most, in characters, as it is read.
const START_SOURCE_MAX_CHARS: usize = 32;
/// The event name a payload carries, when it is not the hook's, at most, as a refusal shows it.
const FOUND_EVENT_MAX_CHARS: usize = 64;
/// The most files one patch may name for abcd to check them all; a patch naming more is
/// one abcd cannot read, and refused (docs/decisions.md, issue 38).
pub const PATCH_FILES_MAX: usize = 256;
/// A path in a patch longer than this, in bytes, is no path abcd checks: the patch is one
/// abcd cannot read (Linux's PATH_MAX).
pub const PATCH_PATH_MAX_BYTES: usize = 4_096;

/// Codex's tool names (codex-hooks.md §4).
pub const SHELL_TOOL: &str = "Bash";
pub const PATCH_TOOL: &str = "apply_patch";
pub const QUESTION_TOOL: &str = "request_user_input";

/// abcd's own bound on consecutive Stop blocks on Codex, which has none of its own (a hook
/// that always blocks looped 374 times in 25 s, codex-hooks.md §3.6). The same number as
/// Claude Code's default cap, so a session is pushed on as many times on either host and
/// the away record reads alike (docs/decisions.md, issue 38).
pub const STOP_BLOCK_BOUND: u32 = 8;

/// Codex cuts an `additionalContext` over this many tokens to its head and tail plus a
/// file path (codex-hooks.md §2.5; `additionalContextLimit` unset, as `abcd init` leaves it).
pub const HOST_CONTEXT_CAP_TOKENS: usize = 2_500;
/// Codex's estimate of a text's tokens: one per this many bytes, rounded up.
pub const HOST_BYTES_PER_TOKEN: usize = 4;
/// The most bytes abcd injects in one `additionalContext` on Codex: the host's cap as
/// Codex counts it, less a margin for the receipt's tokens and the estimate's rounding.
pub const CONTEXT_BUDGET_BYTES: usize = HOST_CONTEXT_CAP_TOKENS * HOST_BYTES_PER_TOKEN - 500;

/// The events `abcd init --host codex` installs, each with the matcher it is installed
/// with (codex-hooks.md §1.3: a regular expression on the tool name).
pub const EVENTS: [HookEvent; 7] = [
    HookEvent::SessionStart,
    HookEvent::UserPromptSubmit,
    HookEvent::PreToolUse,
    HookEvent::PreCompact,
    HookEvent::PostCompact,
    HookEvent::Stop,
    HookEvent::SessionEnd,
];

/// The PreToolUse matcher: the tools abcd checks.
pub const PRE_TOOL_USE_MATCHER: &str = "Bash|apply_patch|request_user_input";

/// The event's name in the host's payloads and `hooks.json`.
pub fn event_name(event: HookEvent) -> &'static str {
    super::claude::event_name(event)
}

/// Parses the host's payload for `event`.
pub fn parse(event: HookEvent, bytes: &[u8]) -> Result<HookRequest, PayloadError> {
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(PayloadError::TooLarge(MAX_PAYLOAD_BYTES));
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| PayloadError::NotAnObject(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(PayloadError::NotAnObject("it is a JSON value of another type".into()));
    };
    let text = |key: &'static str| -> Result<Option<String>, PayloadError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(PayloadError::BadField(key)),
        }
    };
    if let Some(found) = text("hook_event_name")?
        && found != event_name(event)
    {
        let found = cut_after_scan(&found, Bound::Chars(FOUND_EVENT_MAX_CHARS))
            .unwrap_or_else(|kind| format!("(a name that carries {}, not shown)", kind.describe()));
        return Err(PayloadError::WrongEvent { expected: event_name(event), found });
    }
    let cwd = text("cwd")?.filter(|c| !c.is_empty()).ok_or(PayloadError::NoCwd)?;
    // An id that looks like a secret is no id abcd records: it would reach every event's actor.
    let session_id = text("session_id")?.filter(|s| !s.is_empty() && s.len() <= MAX_SESSION_ID_BYTES && crate::secrets::scan(s).is_none());
    // `null` under `--ephemeral` (no rollout is written), codex-hooks.md §5.
    let transcript_path: Option<std::path::PathBuf> = match map.get("transcript_path") {
        Some(Value::String(p)) if !p.is_empty() => Some(p.into()),
        _ => None,
    };
    let detail = match event {
        HookEvent::SessionStart => {
            let source = match text("source")?.as_deref() {
                Some("startup") | None => StartSource::Startup,
                Some("resume") => StartSource::Resume,
                Some("clear") => StartSource::Clear,
                Some("compact") => StartSource::Compact,
                Some(other) => StartSource::Other(
                    cut_after_scan(other, Bound::Chars(START_SOURCE_MAX_CHARS))
                        .ok()
                        .filter(|t| !t.is_empty())
                        .unwrap_or_else(|| "unknown".into()),
                ),
            };
            RequestDetail::SessionStart { source }
        }
        HookEvent::UserPromptSubmit => RequestDetail::UserPromptSubmit,
        HookEvent::PreToolUse => RequestDetail::PreToolUse { call: tool_call(&map, Path::new(&cwd))? },
        HookEvent::PreCompact | HookEvent::PostCompact => {
            RequestDetail::Compact { trigger: text("trigger")?.filter(|t| t == "manual" || t == "auto").unwrap_or_else(|| "auto".into()) }
        }
        // No `session_crons` on Codex (§3.6): the session has no wake abcd can see.
        HookEvent::Stop => RequestDetail::Stop {
            stop_hook_active: match map.get("stop_hook_active") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(PayloadError::BadField("stop_hook_active")),
            },
            last_assistant_message: text("last_assistant_message")?,
            session_crons: Vec::new(),
        },
        // Codex fires no StopFailure (§3.12): the rollout's last turn says whether it ended
        // on an API error (`api_error`, read by the hook, not here: parsing reads no file).
        HookEvent::SessionEnd => RequestDetail::SessionEnd,
        // Not Codex events (§3.12): a call for one is read as Claude Code's shape would be
        // wrong; it is refused as a payload abcd does not take.
        HookEvent::StopFailure | HookEvent::Notification => {
            return Err(PayloadError::WrongEvent { expected: "an event Codex CLI has", found: event_name(event).into() });
        }
    };
    Ok(HookRequest { host: super::Host::Codex, event, session_id, cwd: cwd.into(), project_dir: None, transcript_path, detail })
}

/// What a refused unreadable patch should be sent as instead.
fn patch_instead() -> String {
    format!(
        "Send the change again as a patch that names each file on its own `*** Add File:`, `*** Update File:` or \
         `*** Delete File:` line, at most {PATCH_FILES_MAX} files a patch."
    )
}

fn unreadable_patch(tool: String, why: impl Into<String>) -> ToolCall {
    ToolCall::WritesUnknown { tool, why: why.into(), instead: patch_instead() }
}

/// The API error the session's last turn ended on, as its rollout records it; `None` when
/// it completed, or when the rollout cannot tell (none, unreadable, no turn's end in it).
pub fn api_error(rollout: Option<&Path>) -> Option<String> {
    let deadline = std::time::Instant::now() + super::transcript::READ_BUDGET;
    let tail = super::transcript::read_tail(rollout, deadline).ok()?;
    match super::codex_rollout::last_turn(&tail) {
        super::codex_rollout::LastTurn::ApiError(kind) => Some(kind),
        super::codex_rollout::LastTurn::Completed | super::codex_rollout::LastTurn::NotSeen => None,
    }
}

fn tool_call(map: &Map<String, Value>, cwd: &Path) -> Result<ToolCall, PayloadError> {
    let tool = match map.get("tool_name") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(PayloadError::BadField("tool_name")),
    };
    // Every call of the question tool is one, whatever its input's shape: while away it is
    // refused however it asks.
    if tool == QUESTION_TOOL {
        return Ok(ToolCall::Question);
    }
    let input = match map.get("tool_input") {
        Some(Value::Object(o)) => o.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(_) if tool == PATCH_TOOL => {
            return Ok(unreadable_patch(tool, "its input is not the `{command: <patch>}` object Codex sends"));
        }
        Some(_) => return Err(PayloadError::BadField("tool_input")),
    };
    let command = input.get("command").and_then(Value::as_str);
    Ok(match tool.as_str() {
        SHELL_TOOL => {
            let command = command.unwrap_or_default().to_string();
            match shell_patch_writes(&command, cwd) {
                Ok(writes) => ToolCall::Shell { command, writes },
                Err(why) => unreadable_patch(PATCH_TOOL.to_string(), why),
            }
        }
        PATCH_TOOL => match command {
            None => unreadable_patch(tool, "its input holds no patch text under `command`"),
            Some(patch) => match patch_paths(patch, cwd) {
                Ok(paths) => ToolCall::WritesFiles { tool, paths },
                Err(why) => unreadable_patch(tool, why),
            },
        },
        _ => ToolCall::Other { tool },
    })
}

/// The `cd` folders a shell command carrying a patch is read against, besides its own.
pub const SHELL_PATCH_CD_MAX: usize = 4;

/// The files a shell command makes Codex write from its text: Codex applies a patch sent as
/// `apply_patch <<'EOF' … EOF` itself (models without the patch tool edit files that way),
/// after any `cd`. Every path is read against the session's folder and against each `cd`
/// folder the command names (up to [`SHELL_PATCH_CD_MAX`]), which can only refuse more.
/// Empty for a command with no patch; `Err` when it carries one abcd cannot read.
pub fn shell_patch_writes(command: &str, cwd: &Path) -> Result<Vec<String>, String> {
    let Some(start) = command.find("*** Begin Patch") else { return Ok(Vec::new()) };
    let patch = &command[start..];
    let words: Vec<&str> = command[..start].split_whitespace().collect();
    let dirs: Vec<&str> = words
        .windows(2)
        .filter(|w| w[0] == "cd")
        .map(|w| w[1].trim_matches(|c| c == '\'' || c == '"' || c == ';'))
        .filter(|d| !d.is_empty())
        .collect();
    if dirs.len() > SHELL_PATCH_CD_MAX {
        return Err(format!("the command changes folder more than {SHELL_PATCH_CD_MAX} times before its patch"));
    }
    let mut writes = patch_paths(patch, cwd)?;
    for dir in dirs {
        writes.extend(patch_paths(patch, &cwd.join(dir))?);
    }
    Ok(writes)
}

/// The header lines of Codex's patch format that name a file the patch writes: added,
/// updated, deleted, or the new name of a moved one.
const PATCH_FILE_HEADERS: [&str; 4] = ["*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "];

/// Every file the patch writes, in the order named, each relative to `cwd` made absolute.
/// A line is read with its surrounding spaces trimmed, as Codex's own reader is lenient
/// there: a context line of an update that looks like a header is then counted too, which
/// can only refuse more, never less. `Err` says why abcd cannot read it: no file named, more
/// than [`PATCH_FILES_MAX`], or a path that is empty, too long or holds a NUL.
pub fn patch_paths(patch: &str, cwd: &Path) -> Result<Vec<String>, String> {
    let mut paths = Vec::new();
    for line in patch.lines() {
        let line = line.trim();
        let Some(path) = PATCH_FILE_HEADERS.iter().find_map(|h| line.strip_prefix(h.trim_end()).map(str::trim)) else { continue };
        if path.is_empty() || path.len() > PATCH_PATH_MAX_BYTES || path.contains('\0') {
            return Err(format!(
                "a file line of the patch names no path abcd can check (empty, over {PATCH_PATH_MAX_BYTES} bytes, or holding a NUL)"
            ));
        }
        if paths.len() == PATCH_FILES_MAX {
            return Err(format!("the patch names more than {PATCH_FILES_MAX} files"));
        }
        let p = Path::new(path);
        paths.push(if p.is_absolute() { path.to_string() } else { cwd.join(p).display().to_string() });
    }
    if paths.is_empty() {
        return Err("the patch has no `*** Add File:`, `*** Update File:`, `*** Delete File:` or `*** Move to:` line".into());
    }
    Ok(paths)
}

/// The host's output JSON for a reply, with only the fields the event's output schema takes
/// (tests/fixtures/codex/hook-output-schemas-0.171.0.json), or `None` when there is nothing
/// to say (the hook then prints nothing, which allows).
pub fn render(event: HookEvent, reply: &HookReply) -> Option<String> {
    let mut out = Map::new();
    let name = event_name(event);
    match event {
        HookEvent::PreToolUse => {
            if let Some(reason) = &reply.deny {
                out.insert(
                    "hookSpecificOutput".into(),
                    json!({"hookEventName": name, "permissionDecision": "deny", "permissionDecisionReason": reason}),
                );
            } else if let Some(ctx) = &reply.context {
                out.insert("hookSpecificOutput".into(), json!({"hookEventName": name, "additionalContext": ctx}));
            }
        }
        // Codex's Stop takes no `hookSpecificOutput` (sending one drops the block, §2.3):
        // the block is `decision` and `reason`, which reaches the model as a user message.
        HookEvent::Stop => {
            if let Some(reason) = &reply.block {
                out.insert("decision".into(), json!("block"));
                out.insert("reason".into(), json!(reason));
            }
        }
        HookEvent::SessionStart | HookEvent::UserPromptSubmit => {
            if let Some(ctx) = &reply.context {
                out.insert("hookSpecificOutput".into(), json!({"hookEventName": name, "additionalContext": ctx}));
            }
        }
        // Compaction hooks take the universal fields only, and a PostCompact `systemMessage`
        // is shown as a warning: abcd only records on them. SessionEnd has no output schema;
        // StopFailure and Notification are no Codex events.
        HookEvent::PreCompact | HookEvent::PostCompact => {}
        HookEvent::SessionEnd | HookEvent::StopFailure | HookEvent::Notification => return None,
    }
    if let Some(msg) = &reply.system_message
        && matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit | HookEvent::PreToolUse | HookEvent::Stop)
    {
        out.insert("systemMessage".into(), json!(msg));
    }
    (!out.is_empty()).then(|| Value::Object(out).to_string())
}

#[cfg(test)]
mod tests;
