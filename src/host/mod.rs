//! The host adapter: the one place that knows a coding agent's hook wire format. The
//! rest of abcd sees host-neutral requests (`HookRequest`) and replies (`HookReply`);
//! `claude` turns Claude Code's JSON payloads into the first and the second into Claude
//! Code's output JSON; `codex` does the same for Codex CLI. `session_from_env` reads the
//! session the host names for the commands its tools run.

pub mod claude;
pub mod claude_settings;
pub mod codex;
pub mod codex_install;
pub mod codex_rollout;
pub mod json_text;
pub mod transcript;

/// The agent host a hook call comes from: `abcd hook <event> --host <name>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Host {
    /// Claude Code (the default: every Claude invocation names no host).
    #[default]
    Claude,
    /// OpenAI's Codex CLI (../shared/host/codex-hooks.md).
    Codex,
}

impl Host {
    pub const ALL: [Host; 2] = [Host::Claude, Host::Codex];

    /// The name on abcd's command line: `--host <name>`.
    pub fn name(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
        }
    }

    pub fn from_name(name: &str) -> Option<Host> {
        Host::ALL.into_iter().find(|h| h.name() == name)
    }

    /// Parses the host's payload for `event`.
    pub fn parse(self, event: HookEvent, bytes: &[u8]) -> Result<HookRequest, PayloadError> {
        match self {
            Host::Claude => claude::parse(event, bytes),
            Host::Codex => codex::parse(event, bytes),
        }
    }

    /// The host's output for a reply, or `None` when there is nothing to write.
    pub fn render(self, event: HookEvent, reply: &HookReply) -> Option<String> {
        match self {
            Host::Claude => claude::render(event, reply),
            Host::Codex => codex::render(event, reply),
        }
    }

    /// Judges one injection from the tail of the host's transcript.
    pub fn judge_transcript(self, tail: &transcript::Tail, marker: &str) -> transcript::Finding {
        match self {
            Host::Claude => transcript::judge(tail, marker),
            Host::Codex => codex_rollout::judge(tail, marker),
        }
    }

    /// The most bytes abcd injects as one context, where the host's cap counts bytes
    /// (Codex); `None` where it counts characters and abcd's character budget holds.
    pub fn context_budget_bytes(self) -> Option<usize> {
        match self {
            Host::Claude => None,
            Host::Codex => Some(codex::CONTEXT_BUDGET_BYTES),
        }
    }

    /// The API error the session's last turn ended on, as the host's records give it, for a
    /// host that fires no StopFailure (Codex: its rollout); `None` when the turn completed,
    /// or the records cannot tell, or the host reports errors itself (Claude Code).
    pub fn last_turn_api_error(self, transcript_path: Option<&std::path::Path>) -> Option<String> {
        match self {
            Host::Claude => None,
            Host::Codex => codex::api_error(transcript_path),
        }
    }

    /// The largest payload read from stdin; a larger one fails open.
    pub fn max_payload_bytes(self) -> usize {
        match self {
            Host::Claude => claude::MAX_PAYLOAD_BYTES,
            Host::Codex => codex::MAX_PAYLOAD_BYTES,
        }
    }

    /// Who bounds consecutive Stop blocks: the host's own cap (Claude Code overrides a
    /// hook after its cap and ends the stop itself) or abcd's bound, on a host with no cap,
    /// where abcd allows the stop itself once the bound is passed.
    pub fn stop_bound(self) -> StopBound {
        match self {
            Host::Claude => StopBound::HostCap,
            Host::Codex => StopBound::Abcd(codex::STOP_BLOCK_BOUND),
        }
    }
}

impl Host {
    /// Whether the host can wake a session later (Claude Code's session crons, sent in the
    /// Stop payload); Codex CLI has none.
    pub fn wakes(self) -> bool {
        matches!(self, Host::Claude)
    }
}

/// Who ends a run of consecutive Stop blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopBound {
    /// The host's cap (its number read as the host reads it).
    HostCap,
    /// abcd's own bound, this many consecutive blocks: the host has no cap.
    Abcd(u32),
}

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
    /// The session's end (Codex CLI installs it: there it is the only sign of an API error).
    SessionEnd,
}

impl HookEvent {
    /// Every event `abcd hook` takes, whichever host installs it (`claude::EVENTS` and
    /// `codex::EVENTS` are what each host's install writes).
    pub const ALL: [HookEvent; 9] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::Stop,
        HookEvent::StopFailure,
        HookEvent::Notification,
        HookEvent::SessionEnd,
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
            HookEvent::SessionEnd => "session-end",
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
    /// A tool that writes every file at `paths` (Codex's `apply_patch`: the paths its patch
    /// names, absolute, each checked as a `WritesFile` path is).
    WritesFiles {
        tool: String,
        paths: Vec<String>,
    },
    /// A file-writing tool call whose files abcd cannot tell (a patch it cannot read): the
    /// adapter's rule refuses it, since a write abcd cannot check may be to abcd's own files.
    WritesUnknown {
        tool: String,
        why: String,
        /// What to send instead, in the host's terms.
        instead: String,
    },
    /// A shell command (Bash), and the files the host itself writes from its text (Codex
    /// applies a patch sent through its shell): each checked as a file tool's write is.
    Shell {
        command: String,
        writes: Vec<String>,
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
    pub host: Host,
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
    /// The session ended (Codex CLI; its rollout says whether the last turn ended on an API
    /// error: `Host::last_turn_api_error`).
    SessionEnd,
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
