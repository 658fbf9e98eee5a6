//! Reading Claude Code's session transcript (the payloads' `transcript_path`) for one
//! thing: whether a text abcd injected reached the model. The transcript is the host's
//! internal format, so this reader is tolerant and bounded: it reads at most the last
//! [`TAIL_MAX_BYTES`] within [`READ_BUDGET`], looks only at lines that hold an injection's
//! token, and anything it cannot read says "cannot tell", never "delivered".
//!
//! What the host writes (pinned client 2.1.332, docs/real-host.md): the hook's stdout as a
//! `hook_success` attachment (not proof: the hook wrote it), what it attached as a
//! `hook_additional_context` attachment (not proof either: attached is not sent), each
//! request's new message content as `api-request-blob` lines, then an `api-request` line,
//! and `system`/`compact_boundary` at a compaction. A value over the host's cap is swapped
//! for `<persisted-output>` with a file path and a 2 KB preview.

use std::fs::OpenOptions;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::byte_search::{find_sub, rfind_byte, sub_positions};
use crate::platform::fs::{Symlink, open_regular, read_at};

/// The transcript's tail read, at most: a turn's requests since the injection fit in it.
pub const TAIL_MAX_BYTES: u64 = 8 << 20;
/// Reads go in pieces of this size, the deadline checked between them.
const READ_PIECE_BYTES: usize = 1 << 20;
/// The time a hook may spend reading the transcript.
pub const READ_BUDGET: Duration = Duration::from_millis(100);
/// A line holding a token is parsed only up to this size (a request blob is a few KB to a
/// few hundred KB); longer ones are searched as bytes only.
const LINE_PARSE_MAX_BYTES: usize = 4 << 20;
/// The host's wrapper around a value it cut to a preview.
const CUT_WRAPPER: &[u8] = b"<persisted-output>";
/// How far before a token a cut wrapper is looked for: past the wrapper's file path and
/// its "Preview" line.
const CUT_LOOKBACK_BYTES: usize = 4_096;

/// The token an injection carries at its start and at its end.
pub fn token(marker: &str) -> String {
    format!("[abcd:{marker}]")
}

/// `text` with the injection's token first and last: a transcript holding the token twice
/// in one request holds the whole text.
pub fn marked(text: &str, marker: &str) -> String {
    let t = token(marker);
    format!("{t} {text}\n{t}")
}

/// The part of the transcript read.
pub struct Tail {
    pub bytes: Vec<u8>,
    /// The read began at the file's first byte (nothing before it was left unread).
    pub whole: bool,
}

/// Why the transcript could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// No path was given, or nothing is there.
    Missing,
    /// Not a regular file (a device, a FIFO, a folder), or an I/O error.
    NotReadable,
    /// The read ran past [`READ_BUDGET`].
    OverBudget,
}

/// Reads the last [`TAIL_MAX_BYTES`] of the transcript, in pieces, giving up at `deadline`
/// (a hook passes now plus [`READ_BUDGET`]).
pub fn read_tail(path: Option<&Path>, deadline: Instant) -> Result<Tail, Unreadable> {
    let path = path.ok_or(Unreadable::Missing)?;
    let file = open_regular(OpenOptions::new().read(true), path, Symlink::Follow).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Unreadable::Missing,
        _ => Unreadable::NotReadable,
    })?;
    let len = file.metadata().map_err(|_| Unreadable::NotReadable)?.len();
    let from = len.saturating_sub(TAIL_MAX_BYTES);
    let want = (len - from) as usize;
    let mut bytes = vec![0u8; want];
    let mut got = 0;
    while got < want {
        if Instant::now() >= deadline {
            return Err(Unreadable::OverBudget);
        }
        let end = (got + READ_PIECE_BYTES).min(want);
        match read_at(&file, &mut bytes[got..end], from + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Unreadable::NotReadable),
        }
    }
    bytes.truncate(got);
    Ok(Tail { bytes, whole: from == 0 })
}

/// What the transcript says of one injection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finding {
    /// A request sent to the model holds the whole text.
    Sent,
    /// The host swapped the text for a preview.
    Cut,
    /// The session was compacted after the text was attached, before any request held it.
    Compacted,
    /// A request went to the model after the text was attached, without it.
    SentWithout,
    /// Attached, and no request since.
    NotYet,
    /// No line of the tail holds the token (not written yet, or before the tail).
    NotFound,
    /// The tail holds lines, and none of them is JSON: not a transcript.
    NotATranscript,
}

/// Judges one injection from the tail. Pure, and linear in the tail: each line is searched
/// once for the token and the two line kinds that matter after it, and parsed at most once.
pub fn judge(tail: &Tail, marker: &str) -> Finding {
    let lines = complete_lines(tail);
    let token = token(marker);
    let token = token.as_bytes();
    let (mut sent, mut cut, mut attached, mut compacted, mut requested, mut seen_token) = (false, false, false, false, false, false);
    for line in lines.split(|&b| b == b'\n') {
        let holds_token = find_sub(line, token).is_some();
        seen_token |= holds_token;
        let after_attached = attached && (find_sub(line, b"compact_boundary").is_some() || find_sub(line, b"\"api-request\"").is_some());
        if !holds_token && !after_attached {
            continue;
        }
        match line_type(line) {
            Some(LineType::RequestBlob) if holds_token => {
                sent |= sent_whole(line, token);
                cut |= inside_cut(line, token);
            }
            Some(LineType::AttachedContext) if holds_token => {
                attached = true;
                cut |= inside_cut(line, token);
            }
            Some(LineType::CompactBoundary) if attached => compacted = true,
            Some(LineType::Request) if attached => requested = true,
            _ => {}
        }
    }
    if sent {
        return Finding::Sent;
    }
    if cut {
        return Finding::Cut;
    }
    if !attached {
        if !seen_token && !lines.is_empty() && line_type(last_line(lines)).is_none() && !any_json_line(lines) {
            return Finding::NotATranscript;
        }
        return Finding::NotFound;
    }
    match (compacted, requested) {
        (true, _) => Finding::Compacted,
        (false, true) => Finding::SentWithout,
        (false, false) => Finding::NotYet,
    }
}

/// The host's words before a hook's text in a request (`SessionStart hook additional
/// context: `, `UserPromptSubmit hook additional context: `).
const HOST_PREFIX: &[u8] = b"hook additional context: ";
/// The host's end of a cut preview.
const CUT_WRAPPER_END: &[u8] = b"</persisted-output>";
/// Token hits looked at per line, at most: abcd writes two per text.
const TOKEN_HITS_MAX: usize = 16;

/// Whether the request line holds the text whole, as the host put it: right after the
/// host's prefix the token, and the token again later with no cut wrapper between. A tool
/// result or a model reply that quotes the tokens is not the host's text.
fn sent_whole(line: &[u8], token: &[u8]) -> bool {
    let opening = [HOST_PREFIX, token].concat();
    sub_positions(line, &opening).take(TOKEN_HITS_MAX).any(|p| {
        let body = &line[p + opening.len()..];
        find_sub(body, token).is_some_and(|end| find_sub(&body[..end], CUT_WRAPPER).is_none())
    })
}

/// Whether a token in the line sits inside a cut preview: a wrapper opened before it (within
/// [`CUT_LOOKBACK_BYTES`]) and not closed between.
fn inside_cut(line: &[u8], token: &[u8]) -> bool {
    sub_positions(line, token).take(TOKEN_HITS_MAX).any(|t| {
        let before = &line[t.saturating_sub(CUT_LOOKBACK_BYTES)..t];
        sub_positions(before, CUT_WRAPPER).last().is_some_and(|w| find_sub(&before[w..], CUT_WRAPPER_END).is_none())
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineType {
    RequestBlob,
    Request,
    AttachedContext,
    CompactBoundary,
    Other,
}

/// The tail's whole lines: a first line the read began inside, and a last line without
/// its newline (still being written, or cut), are left out.
fn complete_lines(tail: &Tail) -> &[u8] {
    let bytes = &tail.bytes[..];
    let start = if tail.whole { 0 } else { crate::byte_search::find_byte(b'\n', bytes).map_or(bytes.len(), |i| i + 1) };
    let end = rfind_byte(b'\n', bytes).map_or(0, |i| i + 1).max(start);
    &bytes[start..end]
}

fn last_line(lines: &[u8]) -> &[u8] {
    let body = lines.strip_suffix(b"\n").unwrap_or(lines);
    &body[rfind_byte(b'\n', body).map_or(0, |i| i + 1)..]
}

/// Whether any of the first few lines is a JSON object (a transcript's every line is).
fn any_json_line(lines: &[u8]) -> bool {
    lines.split(|&b| b == b'\n').take(8).any(|l| line_type(l).is_some())
}

/// The line's type as the host writes it; `None` when the line is not a JSON object.
fn line_type(line: &[u8]) -> Option<LineType> {
    if line.len() > LINE_PARSE_MAX_BYTES {
        // Too long to parse: a request blob is still told by its first key, as the host
        // writes it; any other long line is no line this reader needs.
        return line.starts_with(b"{\"type\":\"api-request-blob\"").then_some(LineType::RequestBlob);
    }
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(rename = "type", borrow, default)]
        kind: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow, default)]
        subtype: Option<std::borrow::Cow<'a, str>>,
        #[serde(default)]
        attachment: Option<AttachmentHead>,
    }
    #[derive(serde::Deserialize)]
    struct AttachmentHead {
        #[serde(rename = "type", default)]
        kind: Option<String>,
    }
    let head: Head<'_> = serde_json::from_slice(line).ok()?;
    Some(match (head.kind.as_deref(), head.subtype.as_deref()) {
        (Some("api-request-blob"), _) => LineType::RequestBlob,
        (Some("api-request"), _) => LineType::Request,
        (Some("system"), Some("compact_boundary")) => LineType::CompactBoundary,
        (Some("attachment"), _) if head.attachment.and_then(|a| a.kind).as_deref() == Some("hook_additional_context") => {
            LineType::AttachedContext
        }
        _ => LineType::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = "01234567";

    fn tail(lines: &[String]) -> Tail {
        Tail { bytes: lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes(), whole: true }
    }

    fn hook_stdout(text: &str) -> String {
        let stdout = serde_json::json!({"hookSpecificOutput": {"additionalContext": text}}).to_string();
        serde_json::json!({"type": "attachment", "attachment": {"type": "hook_success", "stdout": stdout}}).to_string()
    }

    fn attached(text: &str) -> String {
        serde_json::json!({"type": "attachment", "attachment": {"type": "hook_additional_context", "content": [text]}}).to_string()
    }

    fn blob(text: &str) -> String {
        let content = [serde_json::json!({"type": "text", "text": format!("SessionStart hook additional context: {text}")})];
        serde_json::json!({"type": "api-request-blob", "hash": "ab", "message": {"role": "system", "content": content}}).to_string()
    }

    fn request() -> String {
        serde_json::json!({"type": "api-request", "id": "r1", "params": {}}).to_string()
    }

    fn boundary() -> String {
        serde_json::json!({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"}).to_string()
    }

    fn preview(text: &str) -> String {
        format!("<persisted-output>\nOutput too large (11.7KB). Full output saved to: /x/hook.txt\n\nPreview (first 2KB):\n{}", &text[..40])
    }

    fn preview_whole(text: &str) -> String {
        format!(
            "<persisted-output>\nOutput too large. Full output saved to: /x/hook.txt\n\nPreview (first 2KB):\n{text}\n</persisted-output>"
        )
    }

    #[test]
    fn a_marked_text_is_longer_by_exactly_what_the_budgets_keep_for_it() {
        for text in ["", "the plan", "é ✓ plan\nline"] {
            let added = marked(text, M).chars().count() - text.chars().count();
            assert_eq!(added, crate::event::context::MARKED_EXTRA_CHARS, "{text:?}");
        }
    }

    #[test]
    fn only_a_request_holding_the_whole_text_is_delivered() {
        let text = marked(&"the plan ".repeat(10), M);
        let sent = tail(&[hook_stdout(&text), attached(&text), blob(&text), request()]);
        assert_eq!(judge(&sent, M), Finding::Sent);
        // The hook's own stdout and the attachment are not proof.
        assert_eq!(judge(&tail(&[hook_stdout(&text), attached(&text)]), M), Finding::NotYet);
        assert_eq!(judge(&tail(&[hook_stdout(&text)]), M), Finding::NotFound);
        assert_eq!(judge(&tail(&[hook_stdout(&text), attached(&text), request()]), M), Finding::SentWithout);
        assert_eq!(judge(&tail(&[attached(&text), boundary(), request()]), M), Finding::Compacted);
        // Another injection's token proves nothing about this one.
        let other = marked("the plan", "99999999");
        assert_eq!(judge(&tail(&[attached(&text), blob(&other)]), M), Finding::NotYet);
    }

    #[test]
    fn a_preview_in_place_of_the_text_is_a_cut_never_a_delivery() {
        let text = marked(&"x".repeat(12_000), M);
        let cut = preview(&text);
        assert_eq!(judge(&tail(&[hook_stdout(&text), attached(&cut), blob(&cut), request()]), M), Finding::Cut);
        assert_eq!(judge(&tail(&[attached(&cut)]), M), Finding::Cut);
        let short = marked("the plan", M);
        assert_eq!(judge(&tail(&[attached(&short), blob(&preview_whole(&short))]), M), Finding::Cut, "a preview holding both tokens");
    }

    #[test]
    fn quoted_tokens_closed_previews_and_long_blobs_are_judged_by_where_the_host_put_the_text() {
        let text = marked("the plan", M);
        // A tool result quoting both tokens is no delivery; the host's prefix is.
        let quoted =
            serde_json::json!({"type": "api-request-blob", "message": {"content": [{"type": "tool_result", "content": text.clone()}]}})
                .to_string();
        assert_eq!(judge(&tail(&[attached(&text), quoted]), M), Finding::NotYet);
        // A closed preview of something else just before the whole text is not a cut.
        let other = "<persisted-output>\nOutput too large. Preview:\nxxx\n</persisted-output>";
        let both = serde_json::json!({"type": "api-request-blob", "message": {"content": [
            {"type": "text", "text": other}, {"type": "text", "text": format!("SessionStart hook additional context: {text}")}]}})
        .to_string();
        assert_eq!(judge(&tail(&[attached(&text), both, request()]), M), Finding::Sent);
        // A blob too long to parse is still told by its first key.
        let long = format!(
            "{{\"type\":\"api-request-blob\",\"pad\":\"{}\",\"text\":\"SessionStart hook additional context: {}\"}}",
            "p".repeat(LINE_PARSE_MAX_BYTES),
            text.replace('\n', "\\n")
        );
        assert_eq!(judge(&tail(&[attached(&text), long, request()]), M), Finding::Sent);
    }

    #[test]
    fn many_hits_of_the_words_looked_for_cost_one_pass() {
        // Every line after the attachment names `compact_boundary` many times and none is
        // one: each line is parsed once, whatever its hits, so the judgement is linear.
        let text = marked("the plan", M);
        let noisy = serde_json::json!({"type": "api-request-blob", "message": {"content": "compact_boundary ".repeat(30_000)}}).to_string();
        let lines: Vec<String> = std::iter::once(attached(&text)).chain(std::iter::repeat_n(noisy, 10)).chain([request()]).collect();
        assert_eq!(judge(&tail(&lines), M), Finding::SentWithout);
    }

    #[test]
    fn a_line_cut_mid_way_or_begun_before_the_tail_is_not_read() {
        let text = marked("the plan", M);
        let mut t = tail(&[attached(&text)]);
        let half = blob(&text);
        t.bytes.extend_from_slice(&half.as_bytes()[..half.len() - 5]);
        assert_eq!(judge(&t, M), Finding::NotYet, "a blob still being written is not read");
        let begun_before = Tail { bytes: format!("{}\n{}\n", &blob(&text)[3..], attached("other")).into_bytes(), whole: false };
        assert_eq!(judge(&begun_before, M), Finding::NotFound, "the first line of a partial tail is not read");
    }

    #[test]
    fn bytes_that_are_no_transcript_say_so() {
        let binary = Tail { bytes: (0..=255u8).cycle().take(10_000).chain([b'\n']).collect(), whole: true };
        assert_eq!(judge(&binary, M), Finding::NotATranscript);
        assert_eq!(judge(&Tail { bytes: Vec::new(), whole: true }, M), Finding::NotFound);
    }

    #[test]
    fn hostile_files_are_read_within_their_bounds() {
        let dir = tempfile::tempdir().unwrap();
        // Far enough that no machine's load reaches it: the bounds are what is tested here.
        let started = Instant::now() + Duration::from_secs(3_600);
        assert!(matches!(read_tail(None, started), Err(Unreadable::Missing)));
        assert!(matches!(read_tail(Some(&dir.path().join("nothing")), started), Err(Unreadable::Missing)));
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(matches!(read_tail(Some(&zero), started), Err(Unreadable::NotReadable)), "a device is never read");
        assert!(matches!(read_tail(Some(dir.path()), started), Err(Unreadable::NotReadable)), "nor a folder");
        let huge = dir.path().join("huge");
        let f = std::fs::File::create(&huge).unwrap();
        f.set_len(TAIL_MAX_BYTES * 4).unwrap();
        let read = read_tail(Some(&huge), started).unwrap();
        assert_eq!((read.bytes.len() as u64, read.whole), (TAIL_MAX_BYTES, false), "only the tail is read");
        let edge = dir.path().join("edge");
        std::fs::File::create(&edge).unwrap().set_len(TAIL_MAX_BYTES).unwrap();
        assert!(read_tail(Some(&edge), started).unwrap().whole, "a file of exactly the bound is read whole");
        std::fs::File::create(&edge).unwrap().set_len(TAIL_MAX_BYTES + 1).unwrap();
        assert!(!read_tail(Some(&edge), started).unwrap().whole, "one byte past it is not");
        assert!(matches!(read_tail(Some(&huge), Instant::now()), Err(Unreadable::OverBudget)), "a spent budget reads nothing more");
    }
}
