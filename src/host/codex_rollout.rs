//! Reading Codex CLI's rollout (the payloads' `transcript_path`, codex-hooks.md §5) for two
//! things: whether a text abcd injected reached the model's history whole, and whether the
//! session's last turn ended on an API error. The rollout is the host's internal format, so
//! this reader is tolerant and bounded as the Claude one is: the tail is read by
//! [`transcript::read_tail`] (at most [`transcript::TAIL_MAX_BYTES`] within its budget), a
//! line is parsed only when it holds what is looked for and only up to
//! [`LINE_PARSE_MAX_BYTES`], and anything it cannot read says "cannot tell", never
//! "delivered".
//!
//! What the host writes (pinned CLI 0.171.0, lab scenarios `transcript`, `bigctx`,
//! `apierror`): one JSON object a line, `{timestamp, ordinal, type, payload}`. A hook's
//! context is a `response_item` whose payload is a `message` with `role: "developer"` and
//! `internal_chat_message_metadata_passthrough.content_item_kinds` holding
//! `hooks.additional_context`; a context over the host's cap is written cut, beginning
//! `Warning: truncated output` with `…N tokens truncated…` in place of its middle and the
//! full text's file path at its end. A turn ends with an `event_msg` `task_complete`, whose
//! `error.codex_error_info` names an API error when the turn ended on one.

use serde_json::Value;

use super::transcript::{self, Finding, Tail};
use crate::byte_search::find_sub;

/// A line holding a token is parsed only up to this size (a developer message is the
/// host's cap, about 10 KB, plus its metadata); longer ones are no message of a hook's.
pub const LINE_PARSE_MAX_BYTES: usize = 1 << 20;
/// The content kind Codex gives a hook's injected context.
const HOOK_CONTEXT_KIND: &str = "hooks.additional_context";
/// The first words of a context Codex cut to its head and tail (§2.5).
const CUT_HEAD: &str = "Warning: truncated output";
/// Codex's mark in place of a cut context's middle: `…N tokens truncated…`.
const CUT_MIDDLE: &str = "tokens truncated…";
/// An API error type longer than this, in characters, is not taken (`unknown` instead).
const ERROR_TYPE_MAX_CHARS: usize = 64;

/// Judges one injection from the tail: `Sent` when a hook-context developer message holds
/// the text whole (its token first and last, no cut between), `Cut` when one holds it cut.
pub fn judge(tail: &Tail, marker: &str) -> Finding {
    let token = transcript::token(marker);
    let (mut sent, mut cut, mut seen_token, mut any_json) = (false, false, false, false);
    for line in complete_lines(tail).split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let holds_token = find_sub(line, token.as_bytes()).is_some();
        seen_token |= holds_token;
        if !holds_token {
            // A rollout's every line is JSON: lines are parsed until one is, once each.
            if !any_json && line.len() <= LINE_PARSE_MAX_BYTES && line.first() == Some(&b'{') {
                any_json = serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok();
            }
            continue;
        }
        if line.len() > LINE_PARSE_MAX_BYTES {
            continue;
        }
        let Ok(value) = serde_json::from_slice::<Value>(line) else { continue };
        any_json = true;
        for text in hook_context_texts(&value) {
            match (text.find(&token), text.rfind(&token)) {
                (Some(first), Some(last)) if first < last && !text[first..last].contains(CUT_MIDDLE) && !text.starts_with(CUT_HEAD) => {
                    sent = true
                }
                (Some(_), _) => cut |= text.starts_with(CUT_HEAD) || text.contains(CUT_MIDDLE),
                _ => {}
            }
        }
    }
    if sent {
        Finding::Sent
    } else if cut {
        Finding::Cut
    } else if !seen_token && !any_json && !tail.bytes.is_empty() {
        Finding::NotATranscript
    } else {
        Finding::NotFound
    }
}

/// The texts of a hook-context developer message, if the line is one.
fn hook_context_texts(line: &Value) -> Vec<&str> {
    let payload = &line["payload"];
    let is_hook_context = line["type"] == "response_item"
        && payload["type"] == "message"
        && payload["role"] == "developer"
        && payload["internal_chat_message_metadata_passthrough"]["content_item_kinds"]
            .as_array()
            .is_some_and(|kinds| kinds.iter().any(|k| k == HOOK_CONTEXT_KIND));
    if !is_hook_context {
        return Vec::new();
    }
    payload["content"].as_array().map(|items| items.iter().filter_map(|i| i["text"].as_str()).collect()).unwrap_or_default()
}

/// How the session's last turn in the tail ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LastTurn {
    /// The turn completed without an error.
    Completed,
    /// The turn ended on an API error: Codex's type for it (`codex_error_info`, as the
    /// rollout writes it, e.g. `internal_server_error`), or `unknown`.
    ApiError(String),
    /// No turn's end is in the tail: none ran, the turn was cut off (the process killed),
    /// or it ended before the tail. What ended it cannot be told.
    NotSeen,
}

/// The end of the last turn the tail holds: its last `task_complete` line.
pub fn last_turn(tail: &Tail) -> LastTurn {
    let lines = complete_lines(tail);
    for line in lines.rsplit(|&b| b == b'\n') {
        if find_sub(line, b"\"task_complete\"").is_none() || line.len() > LINE_PARSE_MAX_BYTES {
            continue;
        }
        let Ok(value) = serde_json::from_slice::<Value>(line) else { continue };
        if value["type"] != "event_msg" || value["payload"]["type"] != "task_complete" {
            continue;
        }
        let error = &value["payload"]["error"];
        if error.is_null() {
            return LastTurn::Completed;
        }
        // A type without data is a string; one with data an object of one key.
        let kind = match &error["codex_error_info"] {
            Value::String(s) => Some(s.as_str()),
            Value::Object(o) if o.len() == 1 => o.keys().next().map(String::as_str),
            _ => None,
        };
        let kind = kind.map(snake_case).filter(|k| error_type_shape(k)).unwrap_or_else(|| "unknown".into());
        return LastTurn::ApiError(kind);
    }
    LastTurn::NotSeen
}

/// Codex writes `codex_error_info` in snake_case in the rollout and in camelCase in its
/// app-server: either reads as snake_case.
fn snake_case(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 4);
    for c in word.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The shape an API error type is recorded in: a lowercase ASCII letter, then lowercase
/// letters, digits or `_`, at most [`ERROR_TYPE_MAX_CHARS`].
fn error_type_shape(kind: &str) -> bool {
    let mut chars = kind.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && kind.len() <= ERROR_TYPE_MAX_CHARS
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The tail's whole lines: a first line the read began inside, and a last line without
/// its newline (still being written, or cut), are left out.
fn complete_lines(tail: &Tail) -> &[u8] {
    let bytes = &tail.bytes[..];
    let start = if tail.whole { 0 } else { crate::byte_search::find_byte(b'\n', bytes).map_or(bytes.len(), |i| i + 1) };
    let end = crate::byte_search::rfind_byte(b'\n', bytes).map_or(0, |i| i + 1).max(start);
    let lines = &bytes[start..end];
    lines.strip_suffix(b"\n").unwrap_or(lines)
}

#[cfg(test)]
mod tests;
