use super::*;

const M: &str = "01234567";

/// The lines of a rollout Codex CLI 0.171.0 wrote (lab scenarios `transcript`, `bigctx`
/// and `apierror`), each with its text put in as a test needs.
fn developer(text: &str, kind: &str) -> String {
    serde_json::json!({"timestamp": "2026-12-06T19:58:04.575Z", "ordinal": 7, "type": "response_item",
        "payload": {"type": "message", "id": "msg_01a24cef-5b1f-7c02-8251-ef2597c7e73e", "role": "developer",
            "content": [{"type": "input_text", "text": text}],
            "internal_chat_message_metadata_passthrough": {"turn_id": "01a24cef-59fb-7303-a59d-4d1dd91f1fe5",
                "create_time": 1796587084.5751243, "content_item_kinds": [kind],
                "content_item_metadata": [{"provenance": {"type": "harness", "hook": true}}]}},
        "metadata": {"history_sequence": 3, "sampled_through_sequence": 0, "client_authored": false, "model_search_state": "unused"}})
    .to_string()
}

fn hook_context(text: &str) -> String {
    developer(text, "hooks.additional_context")
}

fn user(text: &str) -> String {
    serde_json::json!({"timestamp": "2026-12-06T19:58:04.600Z", "ordinal": 8, "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}],
            "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["user.text"]}}})
    .to_string()
}

/// A context Codex cut (§2.5), as `bigctx` shows it.
fn cut(text: &str) -> String {
    let (head, tail) = (&text[..text.len() / 3], &text[text.len() * 2 / 3..]);
    format!(
        "Warning: truncated output (original token count: 5007)\nTotal output lines: 1\n\n{head}…2544 tokens truncated…{tail}\n\n\
         Full hook output saved to: /tmp/x/hook_outputs/01a24cef/3c2fc88f.txt"
    )
}

fn task_complete(error: Option<serde_json::Value>) -> String {
    let mut payload = serde_json::json!({"type": "task_complete", "root_turn_id": "t1", "turn_id": "t1", "last_agent_message": null,
        "started_at": 1796587097, "completed_at": 1796587098, "duration_ms": 681});
    if let Some(e) = error {
        payload["error"] = e;
    }
    serde_json::json!({"timestamp": "2026-12-06T19:58:18.000Z", "ordinal": 9, "type": "event_msg", "payload": payload}).to_string()
}

fn tail(lines: &[String]) -> Tail {
    Tail { bytes: lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes(), whole: true }
}

#[test]
fn a_hook_context_message_holding_the_whole_text_is_delivered() {
    let text = transcript::marked("the plan", M);
    assert_eq!(judge(&tail(&[user("hi"), hook_context(&text), task_complete(None)]), M), Finding::Sent);
    // Another injection's token proves nothing about this one.
    assert_eq!(judge(&tail(&[hook_context(&transcript::marked("the plan", "99999999"))]), M), Finding::NotFound);
    // The same text in a message of another kind (a user's prompt quoting it, another
    // developer message) is not the host's delivery of it.
    assert_eq!(judge(&tail(&[user(&text)]), M), Finding::NotFound);
    assert_eq!(judge(&tail(&[developer(&text, "permissions.instructions")]), M), Finding::NotFound);
}

#[test]
fn a_context_codex_cut_is_not_delivered() {
    let text = transcript::marked(&"x".repeat(20_000), M);
    assert_eq!(judge(&tail(&[hook_context(&cut(&text))]), M), Finding::Cut);
    // Only the head kept, one token: cut too.
    let head_only = format!("{CUT_HEAD} (original token count: 9)\n{}", &text[..100]);
    assert_eq!(judge(&tail(&[hook_context(&head_only)]), M), Finding::Cut);
    // A whole delivery of it later (a re-injection) is a delivery.
    assert_eq!(judge(&tail(&[hook_context(&cut(&text)), hook_context(&text)]), M), Finding::Sent);
}

#[test]
fn lines_abcd_cannot_read_say_cannot_tell() {
    let text = transcript::marked("the plan", M);
    let mut t = tail(&[user("hi")]);
    let half = hook_context(&text);
    t.bytes.extend_from_slice(&half.as_bytes()[..half.len() - 5]);
    assert_eq!(judge(&t, M), Finding::NotFound, "a line still being written is not read");
    let begun_before = Tail { bytes: format!("{}\n{}\n", &hook_context(&text)[3..], user("x")).into_bytes(), whole: false };
    assert_eq!(judge(&begun_before, M), Finding::NotFound, "the first line of a partial tail is not read");
    let binary = Tail { bytes: (0..=255u8).cycle().take(10_000).chain([b'\n']).collect(), whole: true };
    assert_eq!(judge(&binary, M), Finding::NotATranscript);
    assert_eq!(judge(&Tail { bytes: Vec::new(), whole: true }, M), Finding::NotFound);
}

/// [`LINE_PARSE_MAX_BYTES`] on both sides of its edge: a line holding the token is parsed
/// up to it, and past it is left unread.
#[test]
fn a_line_is_parsed_up_to_its_bound_and_not_past_it() {
    let text = transcript::marked("the plan", M);
    let base = hook_context(&text);
    let pad = |to: usize| {
        let line = base.replacen("\"ordinal\":7", &format!("\"ordinal\":7,\"pad\":\"{}\"", "p".repeat(to - base.len() - 9)), 1);
        assert_eq!(line.len(), to);
        line
    };
    assert_eq!(judge(&tail(&[pad(LINE_PARSE_MAX_BYTES)]), M), Finding::Sent);
    assert_eq!(judge(&tail(&[pad(LINE_PARSE_MAX_BYTES + 1)]), M), Finding::NotFound);
}

#[test]
fn the_last_turns_end_says_whether_it_failed_on_an_api_error() {
    // `apierror`: an HTTP 500 ends the turn with `codex_error_info`.
    let failed = task_complete(Some(
        serde_json::json!({"message": "We're currently experiencing high demand", "codex_error_info": "internal_server_error"}),
    ));
    assert_eq!(last_turn(&tail(&[user("go"), failed.clone()])), LastTurn::ApiError("internal_server_error".into()));
    assert_eq!(last_turn(&tail(&[failed.clone(), user("again"), task_complete(None)])), LastTurn::Completed, "the last turn decides");
    assert_eq!(last_turn(&tail(&[task_complete(None), failed])), LastTurn::ApiError("internal_server_error".into()));
    // A type with data, and the app-server's camelCase spelling.
    let with_data = task_complete(Some(serde_json::json!({"codex_error_info": {"http_connection_failed": {"http_status_code": 502}}})));
    assert_eq!(last_turn(&tail(&[with_data])), LastTurn::ApiError("http_connection_failed".into()));
    let camel = task_complete(Some(serde_json::json!({"codex_error_info": "usageLimitExceeded"})));
    assert_eq!(last_turn(&tail(&[camel])), LastTurn::ApiError("usage_limit_exceeded".into()));
    // An error without a type the record can hold is `unknown`, never the host's words.
    for info in [serde_json::json!(null), serde_json::json!("Bad Type!"), serde_json::json!("x".repeat(ERROR_TYPE_MAX_CHARS + 1))] {
        let odd = task_complete(Some(serde_json::json!({"message": "m", "codex_error_info": info})));
        assert_eq!(last_turn(&tail(&[odd])), LastTurn::ApiError("unknown".into()));
    }
    let edge = task_complete(Some(serde_json::json!({"codex_error_info": "x".repeat(ERROR_TYPE_MAX_CHARS)})));
    assert_eq!(last_turn(&tail(&[edge])), LastTurn::ApiError("x".repeat(ERROR_TYPE_MAX_CHARS)));
    // No turn's end: nothing can be told.
    assert_eq!(last_turn(&tail(&[user("go")])), LastTurn::NotSeen);
    assert_eq!(last_turn(&tail(&[user("\"task_complete\" said in a prompt")])), LastTurn::NotSeen);
}
