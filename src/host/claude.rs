//! Claude Code's hook wire format (../shared/host/claude-code-hooks.md, from the host's
//! published hooks reference): snake_case input fields, one JSON object on stdout with
//! `hookSpecificOutput.hookEventName` naming the event. Unknown input fields are ignored;
//! missing optional fields are tolerated.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::cron::SessionCron;
use crate::secrets::{Bound, cut_after_scan};
use crate::verdict::stop::SESSION_CRONS_MAX;

use super::{HookEvent, HookReply, HookRequest, PayloadError, RequestDetail, StartSource, ToolCall};

/// The largest payload read from stdin; a larger one fails open.
pub const MAX_PAYLOAD_BYTES: usize = 4 << 20;
/// A session id longer than this is not kept.
const MAX_SESSION_ID_BYTES: usize = 128;
/// A cron schedule longer than this is not a five-field expression: passed over.
const MAX_CRON_SCHEDULE_BYTES: usize = 256;
/// A Notification's message is cut to this many characters as it is read, once the whole
/// of it has passed the secret scan.
const NOTIFICATION_MESSAGE_MAX_CHARS: usize = 1_000;
/// A Notification's type is cut to this many characters as it is read (the away record
/// keeps a type of at most 64, else `unknown`).
const NOTIFICATION_TYPE_MAX_CHARS: usize = 64;
/// A StopFailure's error type, at most, in characters, as it is read.
const STOP_FAILURE_ERROR_MAX_CHARS: usize = 64;
/// A SessionStart source abcd does not know, at most, in characters, as it is read.
const START_SOURCE_MAX_CHARS: usize = 32;
/// The event name a payload carries, when it is not the hook's, at most, as a refusal shows it.
const FOUND_EVENT_MAX_CHARS: usize = 64;

/// The variable Claude Code sets, for hooks and for the commands its tools run, to the
/// session's id (the payloads' `session_id`); it sets no `CLAUDE_SESSION_ID`
/// (../shared/host/claude-code-hooks.md, §1.5 and the measurements at its end).
pub const SESSION_ENV: &str = "CLAUDE_CODE_SESSION_ID";

/// The variable Claude Code sets to `1` for every process it starts, its shell tool's
/// commands and its hooks alike (the same measurements): the mark of a process a session
/// started, which the person's own terminal does not carry.
pub const TOOL_PROCESS_ENV: &str = "CLAUDECODE";

/// The events `abcd init` installs for Claude Code (SessionEnd is Codex's: Claude Code has
/// StopFailure for an API error).
pub const EVENTS: [HookEvent; 8] = [
    HookEvent::SessionStart,
    HookEvent::UserPromptSubmit,
    HookEvent::PreToolUse,
    HookEvent::PreCompact,
    HookEvent::PostCompact,
    HookEvent::Stop,
    HookEvent::StopFailure,
    HookEvent::Notification,
];

/// The event's name in the host's payloads and outputs.
pub fn event_name(event: HookEvent) -> &'static str {
    match event {
        HookEvent::SessionStart => "SessionStart",
        HookEvent::UserPromptSubmit => "UserPromptSubmit",
        HookEvent::PreToolUse => "PreToolUse",
        HookEvent::PreCompact => "PreCompact",
        HookEvent::PostCompact => "PostCompact",
        HookEvent::Stop => "Stop",
        HookEvent::StopFailure => "StopFailure",
        HookEvent::Notification => "Notification",
        HookEvent::SessionEnd => "SessionEnd",
    }
}

#[derive(Deserialize)]
struct Common {
    session_id: Option<String>,
    cwd: Option<String>,
    hook_event_name: Option<String>,
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
    let common: Common =
        serde_json::from_value(Value::Object(map.clone())).map_err(|_| PayloadError::BadField("session_id/cwd/hook_event_name"))?;
    if let Some(found) = &common.hook_event_name
        && found != event_name(event)
    {
        let found = cut_after_scan(found, Bound::Chars(FOUND_EVENT_MAX_CHARS))
            .unwrap_or_else(|kind| format!("(a name that carries {}, not shown)", kind.describe()));
        return Err(PayloadError::WrongEvent { expected: event_name(event), found });
    }
    let cwd = common.cwd.filter(|c| !c.is_empty()).ok_or(PayloadError::NoCwd)?;
    // An id that looks like a secret is no id abcd records: it would reach every event's actor.
    let session_id = common.session_id.filter(|s| !s.is_empty() && s.len() <= MAX_SESSION_ID_BYTES && crate::secrets::scan(s).is_none());
    let text = |key: &'static str| -> Result<Option<String>, PayloadError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(PayloadError::BadField(key)),
        }
    };
    let detail = match event {
        HookEvent::SessionStart => {
            let source = match text("source")?.as_deref() {
                Some("startup") | None => StartSource::Startup,
                Some("resume") => StartSource::Resume,
                Some("clear") => StartSource::Clear,
                Some("compact") => StartSource::Compact,
                Some(other) => StartSource::Other(scanned_or_unknown(other, START_SOURCE_MAX_CHARS)),
            };
            RequestDetail::SessionStart { source }
        }
        HookEvent::UserPromptSubmit => RequestDetail::UserPromptSubmit,
        HookEvent::PreToolUse => RequestDetail::PreToolUse { call: tool_call(&map)? },
        HookEvent::PreCompact | HookEvent::PostCompact => {
            RequestDetail::Compact { trigger: text("trigger")?.filter(|t| t == "manual" || t == "auto").unwrap_or_else(|| "auto".into()) }
        }
        HookEvent::Stop => RequestDetail::Stop {
            stop_hook_active: match map.get("stop_hook_active") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(PayloadError::BadField("stop_hook_active")),
            },
            last_assistant_message: text("last_assistant_message")?,
            session_crons: session_crons(map.get("session_crons")),
        },
        HookEvent::StopFailure => {
            RequestDetail::StopFailure { error: scanned_or_unknown(&text("error")?.unwrap_or_default(), STOP_FAILURE_ERROR_MAX_CHARS) }
        }
        HookEvent::Notification => RequestDetail::Notification {
            notification_type: scanned_or_unknown(&text("notification_type")?.unwrap_or_default(), NOTIFICATION_TYPE_MAX_CHARS),
            // A message that carries a secret is left out whole, never cut around it.
            message: text("message")?.and_then(|m| cut_after_scan(&m, Bound::Chars(NOTIFICATION_MESSAGE_MAX_CHARS)).ok()),
        },
        // Claude Code reports an API error by StopFailure, so its session end says nothing
        // of one.
        HookEvent::SessionEnd => RequestDetail::SessionEnd,
    };
    // Only a reader of whether context reached the model uses it: a value of another type
    // is no path, never a refusal.
    let transcript_path = match map.get("transcript_path") {
        Some(Value::String(p)) if !p.is_empty() => Some(p.into()),
        _ => None,
    };
    Ok(HookRequest { host: super::Host::Claude, event, session_id, cwd: cwd.into(), project_dir: project_dir(), transcript_path, detail })
}

/// The folder the host started the session in, which it gives every hook and which stays
/// put when the session `cd`s (the payload's `cwd` follows it). Only an absolute path.
pub const PROJECT_DIR_ENV: &str = "CLAUDE_PROJECT_DIR";

fn project_dir() -> Option<std::path::PathBuf> {
    std::env::var_os(PROJECT_DIR_ENV).map(std::path::PathBuf::from).filter(|p| p.is_absolute())
}

/// A short name the host sends, cut to `max` once scanned whole; `unknown` when empty or
/// when it carries a secret.
fn scanned_or_unknown(text: &str, max: usize) -> String {
    cut_after_scan(text, Bound::Chars(max)).ok().filter(|t| !t.is_empty()).unwrap_or_else(|| "unknown".into())
}

/// The session's scheduled wakes (`session_crons[]`: `schedule`, `recurring`). An entry
/// of another shape is passed over; a list that is not one reads as no wakes, which errs
/// toward keeping the session working. `background_tasks` is not read: a background task
/// never counts as a wake (SPEC §6).
fn session_crons(value: Option<&Value>) -> Vec<SessionCron> {
    let Some(Value::Array(list)) = value else { return Vec::new() };
    list.iter()
        .take(SESSION_CRONS_MAX)
        .filter_map(|entry| {
            let schedule = entry.get("schedule")?.as_str()?;
            (schedule.len() <= MAX_CRON_SCHEDULE_BYTES).then(|| SessionCron {
                schedule: schedule.to_string(),
                recurring: entry.get("recurring").and_then(Value::as_bool).unwrap_or(true),
            })
        })
        .collect()
}

fn tool_call(map: &Map<String, Value>) -> Result<ToolCall, PayloadError> {
    let tool = match map.get("tool_name") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(PayloadError::BadField("tool_name")),
    };
    // Every call of the question tool is one, whatever its input's shape: while away it is
    // refused however it asks (SPEC §6).
    if tool == "AskUserQuestion" {
        return Ok(ToolCall::Question);
    }
    let input = match map.get("tool_input") {
        Some(Value::Object(o)) => o.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(_) => return Err(PayloadError::BadField("tool_input")),
    };
    let field = |k: &str| input.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(match tool.as_str() {
        "Write" | "Edit" | "MultiEdit" => match field("file_path") {
            Some(path) => ToolCall::WritesFile { tool, path },
            None => ToolCall::Other { tool },
        },
        "NotebookEdit" => match field("notebook_path").or_else(|| field("file_path")) {
            Some(path) => ToolCall::WritesFile { tool, path },
            None => ToolCall::Other { tool },
        },
        "Bash" => ToolCall::Shell { command: field("command").unwrap_or_default(), writes: Vec::new() },
        "AskUserQuestion" => ToolCall::Question,
        _ => ToolCall::Other { tool },
    })
}

/// The host's output JSON for a reply, or `None` when there is nothing to say (the hook
/// then prints nothing, which allows).
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
        HookEvent::Stop => {
            // The host's Stop feedback (2.1.163+) keeps the session working under the same
            // `stop_hook_active` flag and block cap as `decision: block`, but reaches the
            // model once, as feedback; `decision: block` reaches it twice, once as a
            // "blocking error" quoting the hook's command, and tells the person "stop hook
            // problem" (observed with the real client: docs/real-host.md).
            if let Some(reason) = &reply.block {
                out.insert("hookSpecificOutput".into(), json!({"hookEventName": name, "additionalContext": reason}));
            }
        }
        HookEvent::SessionStart | HookEvent::UserPromptSubmit => {
            if let Some(ctx) = &reply.context {
                out.insert("hookSpecificOutput".into(), json!({"hookEventName": name, "additionalContext": ctx}));
            }
        }
        // No decision control and no hookSpecificOutput for these (the host rejects it for
        // PostCompact); abcd only records on them.
        HookEvent::PreCompact | HookEvent::PostCompact | HookEvent::StopFailure | HookEvent::Notification | HookEvent::SessionEnd => {}
    }
    if let Some(msg) = &reply.system_message
        && !matches!(
            event,
            HookEvent::PreCompact | HookEvent::PostCompact | HookEvent::StopFailure | HookEvent::Notification | HookEvent::SessionEnd
        )
    {
        out.insert("systemMessage".into(), json!(msg));
    }
    (!out.is_empty()).then(|| Value::Object(out).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_ignored_and_optional_ones_tolerated() {
        let p = br#"{"session_id":"s1","cwd":"/w","hook_event_name":"SessionStart","source":"compact","model":"m","brand_new":{"x":1}}"#;
        let r = parse(HookEvent::SessionStart, p).unwrap();
        assert_eq!(r.detail, RequestDetail::SessionStart { source: StartSource::Compact });
        let minimal = br#"{"cwd":"/w"}"#;
        assert_eq!(
            parse(HookEvent::Stop, minimal).unwrap().detail,
            RequestDetail::Stop { stop_hook_active: false, last_assistant_message: None, session_crons: vec![] }
        );
    }

    /// A Notification's type and message are cut as they are read, each at its bound and
    /// not before.
    #[test]
    fn a_notifications_type_and_message_are_cut_at_their_bounds() {
        let read = |kind: &str, message: &str| {
            let payload = json!({"cwd": "/w", "hook_event_name": "Notification", "notification_type": kind, "message": message});
            match parse(HookEvent::Notification, payload.to_string().as_bytes()).unwrap().detail {
                RequestDetail::Notification { notification_type, message } => (notification_type, message.unwrap()),
                other => panic!("{other:?}"),
            }
        };
        let (kind, message) = read(&"t".repeat(NOTIFICATION_TYPE_MAX_CHARS), &"é".repeat(NOTIFICATION_MESSAGE_MAX_CHARS));
        assert_eq!((kind.chars().count(), message.chars().count()), (NOTIFICATION_TYPE_MAX_CHARS, NOTIFICATION_MESSAGE_MAX_CHARS));
        let (kind, message) = read(&"t".repeat(NOTIFICATION_TYPE_MAX_CHARS + 1), &"é".repeat(NOTIFICATION_MESSAGE_MAX_CHARS + 1));
        assert_eq!((kind.chars().count(), message.chars().count()), (NOTIFICATION_TYPE_MAX_CHARS, NOTIFICATION_MESSAGE_MAX_CHARS));
        let minimal = parse(HookEvent::Notification, br#"{"cwd":"/w"}"#).unwrap().detail;
        assert_eq!(minimal, RequestDetail::Notification { notification_type: "unknown".into(), message: None });
    }

    #[test]
    fn bad_payloads_are_named() {
        assert!(matches!(parse(HookEvent::Stop, b"[]"), Err(PayloadError::NotAnObject(_))));
        assert!(matches!(parse(HookEvent::Stop, b""), Err(PayloadError::NotAnObject(_))));
        assert_eq!(parse(HookEvent::Stop, br#"{"session_id":"s"}"#), Err(PayloadError::NoCwd));
        assert!(matches!(parse(HookEvent::Stop, br#"{"cwd":"/w","hook_event_name":"PreToolUse"}"#), Err(PayloadError::WrongEvent { .. })));
        let big = vec![b' '; MAX_PAYLOAD_BYTES + 1];
        assert_eq!(parse(HookEvent::Stop, &big), Err(PayloadError::TooLarge(MAX_PAYLOAD_BYTES)));
    }

    #[test]
    fn outputs_follow_the_host_reference() {
        let r = HookReply { deny: Some("no".into()), ..Default::default() };
        assert_eq!(
            render(HookEvent::PreToolUse, &r).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
        );
        let r = HookReply { context: Some("ctx".into()), ..Default::default() };
        assert_eq!(
            render(HookEvent::SessionStart, &r).unwrap(),
            r#"{"hookSpecificOutput":{"additionalContext":"ctx","hookEventName":"SessionStart"}}"#
        );
        assert_eq!(render(HookEvent::PostCompact, &r), None, "no hookSpecificOutput for PostCompact");
        assert_eq!(render(HookEvent::Stop, &HookReply::default()), None);
        // A block is Stop feedback, not a hook error (docs/real-host.md: the real client
        // shows `decision: block` as a blocking error quoting the command, twice to the model).
        let r = HookReply { block: Some("work is owed".into()), ..Default::default() };
        assert_eq!(
            render(HookEvent::Stop, &r).unwrap(),
            r#"{"hookSpecificOutput":{"additionalContext":"work is owed","hookEventName":"Stop"}}"#
        );
    }
}
