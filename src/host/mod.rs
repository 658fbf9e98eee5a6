//! The host adapter: the one place that knows a coding agent's hook wire format. The
//! rest of abcd sees host-neutral requests (`HookRequest`) and replies (`HookReply`);
//! `claude` turns Claude Code's JSON payloads into the first and the second into Claude
//! Code's output JSON. `session_from_env` reads the session the host names for the commands
//! its tools run. A second host (Codex's hooks are close) is a second module here.

pub mod claude;
pub mod claude_settings;
pub mod codex_install;
pub mod json_text;
pub mod transcript;

/// The variable Codex CLI sets for a command its model's shell tool runs, to the tool
/// call's id (../shared/host/codex-hooks.md, "Commands run by the model's shell tool").
pub const CODEX_TOOL_CALL_ENV: &str = "CODEX_TOOL_CALL_ID";

/// Every host's mark of a process one of its sessions started: the variable, and the value
/// it must hold (`None`: any non-empty value).
pub const HOST_TOOL_MARKS: [(&str, Option<&str>); 2] = [(claude::TOOL_PROCESS_ENV, Some("1")), (CODEX_TOOL_CALL_ENV, None)];

/// The first host mark `var` shows: the process was started by an agent session's tool.
pub fn host_tool_mark(var: &dyn Fn(&str) -> Option<String>) -> Option<&'static str> {
    HOST_TOOL_MARKS.iter().find_map(|(name, value)| {
        let found = var(name)?;
        let marked = match value {
            Some(v) => found == *v,
            None => !found.is_empty(),
        };
        marked.then_some(*name)
    })
}

use std::path::PathBuf;

/// The host session a verb runs in, when the host names one in the environment: what
/// records on whose word a change was made (an actor's session, a run's driver). An id
/// abcd would not key state by (`event::session_id_ok`) or that looks like a secret is
/// not taken: the verb then runs as outside any session.
pub fn session_from_env() -> Option<String> {
    session_if_ok(std::env::var(claude::SESSION_ENV).ok()?)
}

fn session_if_ok(id: String) -> Option<String> {
    (crate::event::session_id_ok(&id) && crate::secrets::scan(&id).is_none()).then_some(id)
}

/// The hook events abcd handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PreCompact,
    PostCompact,
    Stop,
    StopFailure,
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 8] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::Stop,
        HookEvent::StopFailure,
        HookEvent::Notification,
    ];

    /// The name on abcd's command line: `abcd hook <cli-name>`.
    pub fn cli_name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "session-start",
            HookEvent::UserPromptSubmit => "user-prompt-submit",
            HookEvent::PreToolUse => "pre-tool-use",
            HookEvent::PreCompact => "pre-compact",
            HookEvent::PostCompact => "post-compact",
            HookEvent::Stop => "stop",
            HookEvent::StopFailure => "stop-failure",
            HookEvent::Notification => "notification",
        }
    }

    pub fn from_cli_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.cli_name() == name)
    }
}

/// How a session started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartSource {
    Startup,
    Resume,
    Clear,
    Compact,
    /// A source this build does not know (the host added one): handled like startup.
    Other(String),
}

impl StartSource {
    pub fn name(&self) -> &str {
        match self {
            StartSource::Startup => "startup",
            StartSource::Resume => "resume",
            StartSource::Clear => "clear",
            StartSource::Compact => "compact",
            StartSource::Other(s) => s,
        }
    }
}

/// A file-writing tool call, reduced to what abcd checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolCall {
    /// A tool that writes the file at `path` (Write, Edit, MultiEdit, NotebookEdit).
    WritesFile {
        tool: String,
        path: String,
    },
    /// A shell command (Bash).
    Shell {
        command: String,
    },
    /// The host's question tool (AskUserQuestion).
    Question,
    Other {
        tool: String,
    },
}

/// What the hook was asked, host-neutral.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookRequest {
    pub event: HookEvent,
    pub session_id: Option<String>,
    pub cwd: PathBuf,
    /// The folder the session started in, when the host names it for every hook (Claude
    /// Code's `CLAUDE_PROJECT_DIR`); `cwd` follows the session's `cd`, this does not.
    pub project_dir: Option<PathBuf>,
    /// The host's session transcript (`transcript_path`), when it names one.
    pub transcript_path: Option<PathBuf>,
    pub detail: RequestDetail,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestDetail {
    SessionStart {
        source: StartSource,
    },
    UserPromptSubmit,
    PreToolUse {
        call: ToolCall,
    },
    Compact {
        trigger: String,
    },
    Stop {
        stop_hook_active: bool,
        last_assistant_message: Option<String>,
        session_crons: Vec<crate::cron::SessionCron>,
    },
    StopFailure {
        error: String,
    },
    /// The host's Notification: its type and its message as sent (cut to a bound by the
    /// adapter; the away record keeps one scanned line of it).
    Notification {
        notification_type: String,
        message: Option<String>,
    },
}

/// What abcd answers, host-neutral. Every field is optional: an empty reply allows
/// whatever the host asked about and adds nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookReply {
    /// Text for the model's context.
    pub context: Option<String>,
    /// One line for the person.
    pub system_message: Option<String>,
    /// PreToolUse: refuse the tool call, with this reason for the model.
    pub deny: Option<String>,
    /// Stop: keep the session working, with this reason.
    pub block: Option<String>,
}

/// Why a payload was not usable; the hook then fails open.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("the payload is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the payload is not a JSON object: {0}")]
    NotAnObject(String),
    #[error("the payload is for event `{found}`, not `{expected}`")]
    WrongEvent { expected: &'static str, found: String },
    #[error("the payload has no `cwd`")]
    NoCwd,
    #[error("the payload's `{0}` field has the wrong type")]
    BadField(&'static str),
}

#[cfg(test)]
mod tests {
    use super::session_if_ok;

    #[test]
    fn a_session_from_the_environment_is_taken_only_when_state_may_be_keyed_by_it() {
        let id = "0b5c1f2e-7a4d-4c1b-9e3f-2d6a8b9c0d1e";
        assert_eq!(session_if_ok(id.into()).as_deref(), Some(id));
        let longest = "a".repeat(crate::event::SESSION_ID_MAX_BYTES);
        assert_eq!(session_if_ok(longest.clone()), Some(longest.clone()));
        for bad in
            [String::new(), format!("{longest}a"), "has space".into(), "../x".into(), "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB".into()]
        {
            assert_eq!(session_if_ok(bad.clone()), None, "{bad:?}");
        }
    }
}
