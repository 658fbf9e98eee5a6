//! `away.mode_refused` (repository journal, with the away family): an agent's attempt to
//! set or end the away mode, or to write abcd's own files, that a choke point refused
//! (issue 35). The command itself is never recorded: it may carry a secret. Its limit and
//! fold live in `away::refusals`.

use serde::{Deserialize, Serialize};

pub const AWAY_MODE_REFUSED: &str = "away.mode_refused";

/// Which choke point refused the attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalRoute {
    /// PreToolUse on the shell tool: the command line runs the verb or writes abcd's files.
    ShellRule,
    /// PreToolUse on a file tool (Write, Edit, …) aimed at abcd's own file.
    FileToolRule,
    /// `abcd mode autonomous|back` itself, in a process a host's tool started.
    Verb,
}

/// What the refused attempt would have done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusedAction {
    /// `abcd mode autonomous`.
    Autonomous,
    /// `abcd mode back`.
    Back,
    /// A write, move over or removal of abcd's own file (the away store among them).
    OwnFileWrite,
    /// A command naming `abcd` and `mode` too long or too deeply nested to read.
    Unreadable,
}

impl RefusedAction {
    /// The action of `abcd mode <action>` (`autonomous` or `back`, the verbs a choke point
    /// refuses; `hook::mode_guard::MODE_ACTIONS`).
    pub fn of_mode_verb(action: &str) -> RefusedAction {
        debug_assert!(action == "autonomous" || action == "back", "{action} is no mode verb a choke point refuses");
        if action == "autonomous" { RefusedAction::Autonomous } else { RefusedAction::Back }
    }
}

/// `data` of `away.mode_refused`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwayModeRefused {
    pub route: RefusalRoute,
    pub action: RefusedAction,
    /// The host's mark that made the verb refuse, by its variable's name (`CLAUDECODE`,
    /// `CODEX_TOOL_CALL_ID`), never its value; only and always on the verb's route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    /// The host session the attempt came from, when the refusing side knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The working copy it was refused in, as a path.
    pub working_copy: String,
}
