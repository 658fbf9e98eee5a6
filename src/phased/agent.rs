//! The agents' side of the loop, pure: command templates and how they are filled in, the
//! two reply readers, the strict signals, and the prompts each turn sends.

use serde::{Deserialize, Serialize};

use super::{Config, LoopError, TurnKind};

/// Words a command template may have, at most (a template is recorded with every turn).
pub const TEMPLATE_WORDS_MAX: usize = 64;
/// A prompt as sent, at most, in bytes: it is passed as one argument, and Linux refuses a
/// single argument over 128 KiB (`MAX_ARG_STRLEN`), so the quoted reply is cut to fit.
pub const PROMPT_MAX_BYTES: usize = 100 * 1024;
/// An agent's standard output read as its reply, at most, in bytes; a longer one is
/// refused (the turn fails) rather than cut, since a cut reply could hide the signal.
pub const REPLY_MAX_BYTES: usize = 1 << 20;
/// A configured prompt (advance, review, feedback), at most, in bytes: it is recorded in
/// `loop.started`, one journal line of at most 64 KiB with the rest of the configuration.
pub const CONFIG_PROMPT_MAX_BYTES: usize = 8 * 1024;
/// A signal (completion, review stop), at most, in bytes.
pub const SIGNAL_MAX_BYTES: usize = 64;

/// The placeholder a template must hold: the turn's prompt, as one argument.
pub const PROMPT_PLACEHOLDER: &str = "{prompt}";
/// The placeholder for the agent's session id, once its first reply named one.
pub const SESSION_PLACEHOLDER: &str = "{session}";
/// The schema tag of a reply file.
pub const REPLY_SCHEMA: &str = "abcd/loop-reply/v1";

pub const DEFAULT_COMPLETION_SIGNAL: &str = "COMPLETED";
pub const DEFAULT_REVIEW_STOP_SIGNAL: &str = "LGTM";
pub const DEFAULT_FEEDBACK_PROMPT: &str = "Feedback:";

pub use crate::event::loops::Reader;

/// What a turn's receipt holds: the reply and the session the agent named, if any.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyFile {
    pub schema: String,
    pub reply: String,
    pub session: Option<String>,
}

impl ReplyFile {
    pub fn new(reply: String, session: Option<String>) -> ReplyFile {
        ReplyFile { schema: REPLY_SCHEMA.into(), reply, session }
    }

    /// Reads a receipt's bytes: the schema tag, a session id abcd would key by.
    pub fn parse(bytes: &[u8]) -> Result<ReplyFile, String> {
        let r: ReplyFile = serde_json::from_slice(bytes).map_err(|e| format!("is not a reply file ({e})"))?;
        if r.schema != REPLY_SCHEMA {
            return Err(format!("is not a {REPLY_SCHEMA} reply file"));
        }
        if let Some(s) = &r.session {
            session_ok(s)?;
        }
        reply_travels(&r.reply)?;
        Ok(r)
    }
}

/// A reply is text that travels: it is quoted into the next turn's prompt, which is one
/// word of the next agent's command line, and no command line can carry a NUL byte. A
/// reply holding one is refused where it is read, as its writer's failure, rather than
/// passed on to fail the next agent's start.
pub fn reply_travels(reply: &str) -> Result<(), String> {
    match reply.bytes().position(|b| b == 0) {
        Some(at) => Err(format!("holds a NUL byte (at byte {at}), which no command line can carry to the next agent")),
        None => Ok(()),
    }
}

fn session_ok(s: &str) -> Result<(), String> {
    if !crate::event::session_id_ok(s) {
        return Err("names a session id that is not [A-Za-z0-9_-]{1,128}".into());
    }
    if crate::secrets::scan(s).is_some() {
        return Err("names a session id that looks like a secret".into());
    }
    Ok(())
}

fn bad(field: &str, reason: impl Into<String>) -> LoopError {
    LoopError::Refused { field: field.to_string(), reason: reason.into() }
}

/// A template: 1 to [`TEMPLATE_WORDS_MAX`] words, `{prompt}` in one of them, the program
/// (first word) without a placeholder, no control character, no secret (it is recorded).
pub fn check_template(field: &str, words: &[String]) -> Result<(), LoopError> {
    if words.is_empty() || words.len() > TEMPLATE_WORDS_MAX {
        return Err(bad(field, format!("must have 1 to {TEMPLATE_WORDS_MAX} words")));
    }
    if !words.iter().any(|w| w.contains(PROMPT_PLACEHOLDER)) {
        return Err(bad(field, format!("has no {PROMPT_PLACEHOLDER} placeholder, so the agent would never see its prompt")));
    }
    if words[0].contains(PROMPT_PLACEHOLDER) || words[0].contains(SESSION_PLACEHOLDER) {
        return Err(bad(field, "names its program with a placeholder; the first word must be the program"));
    }
    crate::ledger::command_words_recordable(words).map_err(|why| bad(field, why))
}

/// The template filled in: `{prompt}` by the prompt, `{session}` by the session id. With no
/// session yet (the agent's first turn), every word holding `{session}` is dropped, and so
/// is the flag right before a word that is `{session}` alone (`--resume {session}`), so
/// the first turn starts a fresh session.
pub fn fill_template(words: &[String], prompt: &str, session: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    for w in words {
        if w.contains(SESSION_PLACEHOLDER) && session.is_none() {
            if w == SESSION_PLACEHOLDER && out.len() > 1 && out.last().is_some_and(|p| p.starts_with('-')) {
                out.pop();
            }
            continue;
        }
        let w = w.replace(SESSION_PLACEHOLDER, session.unwrap_or_default());
        // The session is filled first, so a prompt holding "{session}" stays as written.
        out.push(w.replace(PROMPT_PLACEHOLDER, prompt));
    }
    out
}

/// A signal: 1 to [`SIGNAL_MAX_BYTES`] bytes, no white space or control character.
pub fn check_signal(field: &str, s: &str) -> Result<(), LoopError> {
    if s.is_empty() || s.len() > SIGNAL_MAX_BYTES || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(field, format!("must be 1 to {SIGNAL_MAX_BYTES} bytes without white space")));
    }
    Ok(())
}

/// A configured prompt: not blank, at most [`CONFIG_PROMPT_MAX_BYTES`], no control character
/// but newlines and tabs, no secret (it is recorded).
pub fn check_prompt(field: &str, p: &str) -> Result<(), LoopError> {
    if p.trim().is_empty() || p.len() > CONFIG_PROMPT_MAX_BYTES {
        return Err(bad(field, format!("must be 1 to {CONFIG_PROMPT_MAX_BYTES} bytes, not blank")));
    }
    if p.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(bad(field, "holds a control character"));
    }
    if let Some(kind) = crate::secrets::scan(p) {
        return Err(bad(field, format!("carries {} ({})", kind.describe(), kind.name())));
    }
    Ok(())
}

/// `signal` as a whole word of `text`, case-insensitive: a prompt names its signal.
pub fn names_signal(text: &str, signal: &str) -> bool {
    let upper = text.to_uppercase();
    upper.split(|c: char| !(c.is_alphanumeric() || signal.contains(c))).any(|w| w == signal.to_uppercase())
}

/// The completion signal, strictly (seed 001 §5.3): the whole reply, trimmed, is one
/// non-empty line equal to the signal, case-insensitive. A reply that did work and also
/// says the word is not completion, so its work is still reviewed.
pub fn is_completion(reply: &str, signal: &str) -> bool {
    let t = reply.trim();
    !t.is_empty() && !t.contains('\n') && !t.contains('\r') && t.eq_ignore_ascii_case(signal.trim())
}

/// The review stop signal: a line of the reply that is the signal alone (trimmed,
/// case-insensitive) converges the phase.
pub fn has_stop_signal(reply: &str, signal: &str) -> bool {
    reply.lines().any(|l| l.trim().eq_ignore_ascii_case(signal.trim()))
}

/// The default advance prompt (seed 001 §4), naming the completion signal it waits for
/// and the checklist when one is named.
pub fn default_advance_prompt(completion_signal: &str, checklist: Option<&str>) -> String {
    let from = match checklist {
        Some(path) => format!("the checklist in {path}"),
        None => "the checklist".to_string(),
    };
    format!(
        "Implement the next phase from {from}. Make only the changes for that one phase, then stop and wait for review. \
If there are no phases left to implement, reply with exactly {completion_signal} on its own line and nothing else."
    )
}

/// The default review prompt (seed 001 §4), naming the stop signal.
pub fn default_review_prompt(review_stop_signal: &str) -> String {
    format!(
        "Review the implementer's work on the current phase. If it fully and correctly satisfies that phase, reply with \
{review_stop_signal} on its own line. Otherwise, give specific, actionable feedback."
    )
}

/// What a turn sends: the advance prompt alone; the review prompt with the implementer's
/// latest reply; the feedback prompt with the reviewer's. A quoted reply that would make
/// the prompt longer than [`PROMPT_MAX_BYTES`] is cut, and the cut names the file that
/// holds all of it.
pub fn build_prompt(config: &Config, kind: TurnKind, quoted: Option<(&str, &str)>) -> String {
    let head = match kind {
        TurnKind::Advance => return config.advance_prompt.clone(),
        TurnKind::Review => format!("{}\n\nThe implementer's reply:\n\n", config.review_prompt),
        TurnKind::Feedback => format!("{}\n\n", config.feedback_prompt),
    };
    let (text, file) = quoted.unwrap_or(("", ""));
    let room = PROMPT_MAX_BYTES.saturating_sub(head.len());
    if text.len() <= room {
        return format!("{head}{text}");
    }
    let note = format!("\n\n[… {} bytes cut here; the whole reply is in {file}]", text.len());
    let mut keep = room.saturating_sub(note.len());
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{head}{}{note}", &text[..keep])
}

/// Reads a `claude -p --output-format json` result: one JSON object (or, from some
/// versions, an array of messages whose last `result` message is the one), its `result`
/// the reply and its `session_id` the session. An error result is refused.
pub fn parse_claude_json(stdout: &str) -> Result<(String, Option<String>), String> {
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).map_err(|e| format!("the output is not JSON ({e})"))?;
    let result = match &v {
        serde_json::Value::Array(items) => items
            .iter()
            .rev()
            .find(|m| m.get("type").and_then(|t| t.as_str()) == Some("result"))
            .cloned()
            .unwrap_or(serde_json::Value::Null),
        _ => v,
    };
    let Some(obj) = result.as_object() else {
        return Err("the output holds no result object".into());
    };
    if obj.get("is_error").and_then(|e| e.as_bool()) == Some(true) {
        let subtype = obj.get("subtype").and_then(|s| s.as_str()).unwrap_or("unknown");
        return Err(format!("the agent reported an error (subtype {subtype})"));
    }
    let Some(reply) = obj.get("result").and_then(|r| r.as_str()) else {
        return Err("the output has no string `result`".into());
    };
    let session = match obj.get("session_id") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => {
            session_ok(s).map_err(|e| format!("`session_id` {e}"))?;
            Some(s.clone())
        }
        Some(_) => return Err("`session_id` is not a string".into()),
    };
    Ok((reply.to_string(), session))
}

/// Reads an agent's output with its reader.
pub fn read_reply(reader: Reader, stdout: &[u8]) -> Result<ReplyFile, String> {
    if stdout.len() > REPLY_MAX_BYTES {
        return Err(format!("the reply is over {REPLY_MAX_BYTES} bytes"));
    }
    let text = std::str::from_utf8(stdout).map_err(|_| "the reply is not UTF-8".to_string())?;
    let reply = match reader {
        Reader::Plain => ReplyFile::new(text.to_string(), None),
        Reader::ClaudeJson => parse_claude_json(text).map(|(reply, session)| ReplyFile::new(reply, session))?,
    };
    reply_travels(&reply.reply).map_err(|why| format!("the reply {why}"))?;
    Ok(reply)
}
