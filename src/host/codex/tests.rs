use super::*;

/// Payloads exactly as Codex CLI 0.171.0 wrote them to a hook's stdin (codex-hooks.md §3
/// and the lab's "Captured hook payloads"), `$W` standing for the lab's work folder.
const SESSION_START: &str = r#"{"session_id":"01a248c6-5add-73e0-8c06-d5aae24df2a9","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-5add-73e0-8c06-d5aae24df2a9.jsonl","cwd":"$W/proj","hook_event_name":"SessionStart","model":"gpt-lab","permission_mode":"bypassPermissions","source":"startup"}"#;
const SESSION_START_COMPACT: &str = r#"{"session_id":"01a248c6-6479-7f22-9d24-62a1597ebd52","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-6479-7f22-9d24-62a1597ebd52.jsonl","cwd":"$W/proj","hook_event_name":"SessionStart","model":"gpt-lab","permission_mode":"bypassPermissions","source":"compact"}"#;
const SESSION_START_RESUME: &str = r#"{"session_id":"01a248c6-8636-7fb3-a80d-d240228e6443","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-8636-7fb3-a80d-d240228e6443.jsonl","cwd":"$W/proj","hook_event_name":"SessionStart","model":"gpt-lab","permission_mode":"bypassPermissions","source":"resume"}"#;
const USER_PROMPT_SUBMIT: &str = r#"{"session_id":"01a248c6-5add-73e0-8c06-d5aae24df2a9","turn_id":"01a248c6-5af7-7660-944f-c4db0753153f","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-5add-73e0-8c06-d5aae24df2a9.jsonl","cwd":"$W/proj","hook_event_name":"UserPromptSubmit","model":"gpt-lab","permission_mode":"bypassPermissions","prompt":"say hello"}"#;
const STOP: &str = r#"{"session_id":"01a248c6-5add-73e0-8c06-d5aae24df2a9","turn_id":"01a248c6-5af7-7660-944f-c4db0753153f","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-5add-73e0-8c06-d5aae24df2a9.jsonl","cwd":"$W/proj","hook_event_name":"Stop","model":"gpt-lab","permission_mode":"bypassPermissions","stop_hook_active":false,"last_assistant_message":"Hello from the mock model."}"#;
const STOP_REPEAT: &str = r#"{"session_id":"01a248c6-5deb-78b3-8899-37bf1a17441e","turn_id":"01a248c6-5e00-7721-88aa-a72d0718b758","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-5deb-78b3-8899-37bf1a17441e.jsonl","cwd":"$W/proj","hook_event_name":"Stop","model":"gpt-lab","permission_mode":"bypassPermissions","stop_hook_active":true,"last_assistant_message":"Second answer after the block."}"#;
const SESSION_END: &str = r#"{"session_id":"01a248c6-5add-73e0-8c06-d5aae24df2a9","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-5add-73e0-8c06-d5aae24df2a9.jsonl","cwd":"$W/proj","hook_event_name":"SessionEnd","reason":"other"}"#;
const PRE_TOOL_USE_QUESTION: &str = r#"{"session_id":"01a248c6-60f8-76a3-9b36-c9d416a962c6","turn_id":"01a248c6-610c-7740-9d58-40206109e436","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-60f8-76a3-9b36-c9d416a962c6.jsonl","cwd":"$W/proj","hook_event_name":"PreToolUse","model":"gpt-lab","permission_mode":"bypassPermissions","tool_name":"request_user_input","tool_input":{"questions":[{"id":"branch","header":"Branch","question":"Which branch should I use?","options":[{"label":"main","description":"the default branch"},{"label":"feat/x","description":"the feature branch"}]}]},"tool_use_id":"call_9adaf4df"}"#;
const PRE_TOOL_USE_BASH: &str = r#"{"session_id":"01a248c6-60f8-76a3-9b36-c9d416a962c6","turn_id":"01a248c6-610c-7740-9d58-40206109e436","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-60f8-76a3-9b36-c9d416a962c6.jsonl","cwd":"$W/proj","hook_event_name":"PreToolUse","model":"gpt-lab","permission_mode":"bypassPermissions","tool_name":"Bash","tool_input":{"command":"touch SHOULD_NOT_EXIST"},"tool_use_id":"call_9d7d59ed"}"#;
const PRE_COMPACT: &str = r#"{"session_id":"01a248c6-6479-7f22-9d24-62a1597ebd52","turn_id":"01a248c6-6494-7553-9041-2f399e063af2","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-6479-7f22-9d24-62a1597ebd52.jsonl","cwd":"$W/proj","hook_event_name":"PreCompact","model":"gpt-lab","trigger":"auto"}"#;
const PRE_COMPACT_MANUAL: &str = r#"{"session_id":"01a248c6-69ae-7b01-ad2d-ae23b0c111f6","turn_id":"01a248c6-6ac1-77b2-a742-b686717a69e5","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-69ae-7b01-ad2d-ae23b0c111f6.jsonl","cwd":"$W/proj","hook_event_name":"PreCompact","model":"gpt-lab","trigger":"manual"}"#;
const POST_COMPACT: &str = r#"{"session_id":"01a248c6-6479-7f22-9d24-62a1597ebd52","turn_id":"01a248c6-6494-7553-9041-2f399e063af2","transcript_path":"$W/codex_home/sessions/YYYY/MM/DD/rollout-<ts>-01a248c6-6479-7f22-9d24-62a1597ebd52.jsonl","cwd":"$W/proj","hook_event_name":"PostCompact","model":"gpt-lab","trigger":"auto"}"#;

/// A PreToolUse payload of `apply_patch` as Codex sends it (§4: `{"command": <patch>}`),
/// with the lab's patch shape (README, "The mock's script").
fn apply_patch(patch: &str) -> String {
    json!({"session_id": "01a248c6-60f8-76a3-9b36-c9d416a962c6", "turn_id": "01a248c6-610c-7740-9d58-40206109e436",
        "transcript_path": "/w/rollout.jsonl", "cwd": "/w/proj", "hook_event_name": "PreToolUse", "model": "gpt-5.5",
        "permission_mode": "bypassPermissions", "tool_name": "apply_patch", "tool_input": {"command": patch}, "tool_use_id": "call_1"})
    .to_string()
}

fn call(payload: &str) -> ToolCall {
    match parse(HookEvent::PreToolUse, payload.as_bytes()).unwrap().detail {
        RequestDetail::PreToolUse { call } => call,
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_captured_payload_maps_to_the_host_neutral_request() {
    let r = parse(HookEvent::SessionStart, SESSION_START.as_bytes()).unwrap();
    assert_eq!(r.host, super::super::Host::Codex);
    assert_eq!(r.session_id.as_deref(), Some("01a248c6-5add-73e0-8c06-d5aae24df2a9"));
    assert_eq!(r.cwd, std::path::PathBuf::from("$W/proj"));
    assert_eq!(r.project_dir, None, "Codex names no project folder for hooks (§1.6)");
    assert!(r.transcript_path.as_ref().is_some_and(|p| p.to_string_lossy().ends_with("-01a248c6-5add-73e0-8c06-d5aae24df2a9.jsonl")));
    assert_eq!(r.detail, RequestDetail::SessionStart { source: StartSource::Startup });
    let source = |p: &str| parse(HookEvent::SessionStart, p.as_bytes()).unwrap().detail;
    assert_eq!(source(SESSION_START_COMPACT), RequestDetail::SessionStart { source: StartSource::Compact });
    assert_eq!(source(SESSION_START_RESUME), RequestDetail::SessionStart { source: StartSource::Resume });
    assert_eq!(parse(HookEvent::UserPromptSubmit, USER_PROMPT_SUBMIT.as_bytes()).unwrap().detail, RequestDetail::UserPromptSubmit);
    assert_eq!(
        parse(HookEvent::Stop, STOP.as_bytes()).unwrap().detail,
        RequestDetail::Stop {
            stop_hook_active: false,
            last_assistant_message: Some("Hello from the mock model.".into()),
            session_crons: vec![]
        }
    );
    assert!(matches!(parse(HookEvent::Stop, STOP_REPEAT.as_bytes()).unwrap().detail, RequestDetail::Stop { stop_hook_active: true, .. }));
    assert_eq!(parse(HookEvent::SessionEnd, SESSION_END.as_bytes()).unwrap().detail, RequestDetail::SessionEnd);
    assert_eq!(call(PRE_TOOL_USE_QUESTION), ToolCall::Question);
    assert_eq!(call(PRE_TOOL_USE_BASH), ToolCall::Shell { command: "touch SHOULD_NOT_EXIST".into(), writes: vec![] });
    let trigger = |e, p: &str| parse(e, p.as_bytes()).unwrap().detail;
    assert_eq!(trigger(HookEvent::PreCompact, PRE_COMPACT), RequestDetail::Compact { trigger: "auto".into() });
    assert_eq!(trigger(HookEvent::PreCompact, PRE_COMPACT_MANUAL), RequestDetail::Compact { trigger: "manual".into() });
    assert_eq!(trigger(HookEvent::PostCompact, POST_COMPACT), RequestDetail::Compact { trigger: "auto".into() });
}

#[test]
fn an_ephemeral_session_has_no_transcript_and_a_stop_message_may_be_null() {
    let p = r#"{"session_id":"s","transcript_path":null,"cwd":"/w","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":null}"#;
    let r = parse(HookEvent::Stop, p.as_bytes()).unwrap();
    assert_eq!(r.transcript_path, None);
    assert_eq!(r.detail, RequestDetail::Stop { stop_hook_active: false, last_assistant_message: None, session_crons: vec![] });
}

#[test]
fn bad_payloads_are_named_and_claude_only_events_are_not_taken() {
    assert!(matches!(parse(HookEvent::Stop, b"[]"), Err(PayloadError::NotAnObject(_))));
    assert_eq!(parse(HookEvent::Stop, br#"{"session_id":"s"}"#), Err(PayloadError::NoCwd));
    assert!(matches!(parse(HookEvent::Stop, PRE_COMPACT.as_bytes()), Err(PayloadError::WrongEvent { .. })));
    assert!(matches!(parse(HookEvent::StopFailure, br#"{"cwd":"/w"}"#), Err(PayloadError::WrongEvent { .. })));
    assert!(matches!(parse(HookEvent::Notification, br#"{"cwd":"/w"}"#), Err(PayloadError::WrongEvent { .. })));
    let big = vec![b' '; MAX_PAYLOAD_BYTES + 1];
    assert_eq!(parse(HookEvent::Stop, &big), Err(PayloadError::TooLarge(MAX_PAYLOAD_BYTES)));
    let secret = r#"{"session_id":"ghp_0123456789abcdefghijklmnopqrstuvwxyzAB","cwd":"/w","hook_event_name":"Stop"}"#;
    assert_eq!(parse(HookEvent::Stop, secret.as_bytes()).unwrap().session_id, None, "an id that looks like a secret is not kept");
}

#[test]
fn a_patch_maps_to_every_file_it_writes_relative_to_the_sessions_folder() {
    // The lab's own patch (README, "The mock's script").
    let added = call(&apply_patch("*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"));
    assert_eq!(added, ToolCall::WritesFiles { tool: "apply_patch".into(), paths: vec!["/w/proj/a.txt".into()] });
    let every_kind = "*** Begin Patch\n*** Add File: new.txt\n+x\n*** Update File: src/lib.rs\n*** Move to: src/moved.rs\n@@\n-a\n+b\n\
                      *** Delete File: /abs/gone.txt\n*** End Patch\n";
    assert_eq!(
        call(&apply_patch(every_kind)),
        ToolCall::WritesFiles {
            tool: "apply_patch".into(),
            paths: vec!["/w/proj/new.txt".into(), "/w/proj/src/lib.rs".into(), "/w/proj/src/moved.rs".into(), "/abs/gone.txt".into()]
        }
    );
    // An added file's content that reads like a header is content, not a file.
    let quoted = call(&apply_patch("*** Begin Patch\n*** Add File: a.md\n+*** Delete File: .abcd/journal\n*** End Patch\n"));
    assert_eq!(quoted, ToolCall::WritesFiles { tool: "apply_patch".into(), paths: vec!["/w/proj/a.md".into()] });
    // Headers indented or with spaces trailing are read as Codex reads them.
    let loose = call(&apply_patch("*** Begin Patch\n  *** Update File:   .abcd/x  \n*** End Patch"));
    assert_eq!(loose, ToolCall::WritesFiles { tool: "apply_patch".into(), paths: vec!["/w/proj/.abcd/x".into()] });
}

#[test]
fn a_patch_abcd_cannot_read_is_named_so() {
    let unknown = |c: ToolCall| matches!(c, ToolCall::WritesUnknown { ref tool, .. } if tool == "apply_patch");
    assert!(unknown(call(&apply_patch("*** Begin Patch\n*** End Patch\n"))), "no file named");
    assert!(unknown(call(&apply_patch("just words"))));
    assert!(unknown(call(&apply_patch("*** Begin Patch\n*** Add File: \n+a\n*** End Patch\n"))), "an empty path");
    assert!(unknown(call(&apply_patch("*** Begin Patch\n*** Add File: a\0b\n*** End Patch\n"))), "a NUL");
    let payload =
        |input: Value| json!({"cwd": "/w", "hook_event_name": "PreToolUse", "tool_name": "apply_patch", "tool_input": input}).to_string();
    assert!(unknown(call(&payload(json!({"patch": "*** Add File: a"})))), "no `command`");
    assert!(unknown(call(&payload(json!("*** Add File: a")))), "not an object");
    let ToolCall::WritesUnknown { why, instead, .. } = call(&apply_patch("x")) else { unreachable!() };
    assert!(why.contains("*** Add File:") && instead.contains(&PATCH_FILES_MAX.to_string()), "{why} {instead}");
}

/// [`PATCH_FILES_MAX`] and [`PATCH_PATH_MAX_BYTES`], each on both sides of its edge.
#[test]
fn a_patch_is_read_up_to_its_bounds_and_not_past_them() {
    let files = |n: usize| (0..n).map(|i| format!("*** Add File: f{i}\n+x\n")).collect::<String>();
    assert_eq!(patch_paths(&files(PATCH_FILES_MAX), Path::new("/w")).unwrap().len(), PATCH_FILES_MAX);
    assert!(patch_paths(&files(PATCH_FILES_MAX + 1), Path::new("/w")).is_err());
    let long = |n: usize| format!("*** Update File: {}\n", "p".repeat(n));
    assert!(patch_paths(&long(PATCH_PATH_MAX_BYTES), Path::new("/w")).is_ok());
    assert!(patch_paths(&long(PATCH_PATH_MAX_BYTES + 1), Path::new("/w")).is_err());
}

#[test]
fn other_tools_pass_as_other() {
    let p = json!({"cwd": "/w", "hook_event_name": "PreToolUse", "tool_name": "mcp__srv__tool", "tool_input": {"x": 1}}).to_string();
    assert_eq!(call(&p), ToolCall::Other { tool: "mcp__srv__tool".into() });
}

#[test]
fn outputs_are_the_shapes_codex_honours() {
    let r = HookReply { deny: Some("no".into()), ..Default::default() };
    assert_eq!(
        render(HookEvent::PreToolUse, &r).unwrap(),
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
    );
    let r = HookReply { block: Some("work is owed".into()), ..Default::default() };
    assert_eq!(render(HookEvent::Stop, &r).unwrap(), r#"{"decision":"block","reason":"work is owed"}"#);
    let r = HookReply { context: Some("ctx".into()), ..Default::default() };
    assert_eq!(
        render(HookEvent::SessionStart, &r).unwrap(),
        r#"{"hookSpecificOutput":{"additionalContext":"ctx","hookEventName":"SessionStart"}}"#
    );
    assert_eq!(render(HookEvent::PostCompact, &r), None);
    let everything =
        HookReply { context: Some("c".into()), system_message: Some("m".into()), deny: Some("d".into()), block: Some("b".into()) };
    assert_eq!(render(HookEvent::SessionEnd, &everything), None, "SessionEnd has no output schema");
}

// ---- The schema test (issue 38, acceptance 2) ----

/// The output schemas of Codex CLI 0.171.0's hooks, as its binary embeds them
/// (`<event>.command.output`, extracted as docs/hosts.md says).
const SCHEMAS: &str = include_str!("../../../tests/fixtures/codex/hook-output-schemas-0.171.0.json");

/// The schema file's key of each event abcd installs for Codex.
fn schema_key(event: HookEvent) -> Option<&'static str> {
    Some(match event {
        HookEvent::SessionStart => "session-start",
        HookEvent::UserPromptSubmit => "user-prompt-submit",
        HookEvent::PreToolUse => "pre-tool-use",
        HookEvent::PreCompact => "pre-compact",
        HookEvent::PostCompact => "post-compact",
        HookEvent::Stop => "stop",
        HookEvent::SessionEnd | HookEvent::StopFailure | HookEvent::Notification => return None,
    })
}

/// Where `value` breaks `schema` (the draft-07 keywords Codex's output schemas use:
/// `type`, `const`, `enum`, `properties`, `additionalProperties: false`, `required`, `allOf`
/// and `$ref` into `definitions`); `None` when it holds. A keyword this checker does not
/// know fails, so a schema that grows one cannot pass unread.
fn breach(value: &Value, schema: &Value, root: &Value, at: &str) -> Option<String> {
    let Value::Object(s) = schema else { return Some(format!("{at}: the schema is not an object")) };
    for (key, rule) in s {
        let broken = match key.as_str() {
            "$schema" | "title" | "default" | "description" | "definitions" => None,
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::String(t) => vec![t.as_str()],
                    Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                    _ => return Some(format!("{at}: a `type` of another shape")),
                };
                let ok = types.iter().any(|t| match *t {
                    "object" => value.is_object(),
                    "string" => value.is_string(),
                    "boolean" => value.is_boolean(),
                    "null" => value.is_null(),
                    _ => false,
                });
                (!ok).then(|| format!("{at}: {value} is not of type {types:?}"))
            }
            "const" => (value != rule).then(|| format!("{at}: {value} is not {rule}")),
            "enum" => (!rule.as_array().is_some_and(|e| e.contains(value))).then(|| format!("{at}: {value} is not one of {rule}")),
            "allOf" => rule.as_array().and_then(|all| all.iter().find_map(|sub| breach(value, sub, root, at))),
            "$ref" => {
                let name = rule.as_str().and_then(|r| r.strip_prefix("#/definitions/"));
                match name.and_then(|n| root.get("definitions")?.get(n)) {
                    Some(def) => breach(value, def, root, at),
                    None => Some(format!("{at}: an unresolved $ref {rule}")),
                }
            }
            "required" => value.as_object().and_then(|o| {
                rule.as_array()?.iter().filter_map(Value::as_str).find(|k| !o.contains_key(*k)).map(|k| format!("{at}: `{k}` is missing"))
            }),
            "additionalProperties" if rule == &Value::Bool(false) => value.as_object().and_then(|o| {
                let known = s.get("properties").and_then(Value::as_object);
                o.keys().find(|k| !known.is_some_and(|p| p.contains_key(*k))).map(|k| format!("{at}: `{k}` is not a field Codex takes"))
            }),
            "properties" => value.as_object().and_then(|o| {
                let props = rule.as_object()?;
                o.iter().find_map(|(k, v)| breach(v, props.get(k)?, root, &format!("{at}.{k}")))
            }),
            other => Some(format!("{at}: the schema keyword `{other}` is not one this checker reads")),
        };
        if broken.is_some() {
            return broken;
        }
    }
    None
}

/// Every reply abcd's hooks make, as far as the fields go: each of the four texts on or off.
fn every_reply() -> Vec<HookReply> {
    (0u8..16)
        .map(|bits| {
            let on = |bit: u8, text: &str| (bits & (1 << bit) != 0).then(|| format!("{text} with \"quotes\", é and\na new line"));
            HookReply { context: on(0, "context"), system_message: on(1, "message"), deny: on(2, "deny"), block: on(3, "block") }
        })
        .collect()
}

/// Issue 38 acceptance 2: every output abcd writes for Codex is one the CLI's own schema for
/// its event takes; an event without an output schema gets none. Watched failing with
/// `sessionTitle` added to the SessionStart output, with `systemMessage` on SessionEnd and
/// with the Stop block written as Claude Code's `hookSpecificOutput`.
#[test]
fn every_output_for_codex_is_one_the_clis_schema_takes() {
    let schemas: Value = serde_json::from_str(SCHEMAS).unwrap();
    let mut checked = 0;
    for event in HookEvent::ALL {
        for reply in every_reply() {
            let out = render(event, &reply);
            match (schema_key(event), out) {
                (_, None) => {}
                (None, Some(out)) => panic!("{event:?} has no output schema in Codex, and abcd wrote {out}"),
                (Some(key), Some(out)) => {
                    let value: Value = serde_json::from_str(&out).unwrap();
                    let schema = &schemas[key];
                    assert_eq!(schema["title"], json!(format!("{key}.command.output")));
                    if let Some(why) = breach(&value, schema, schema, key) {
                        panic!("{event:?}: {why}\n{out}");
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 16 * 3, "the outputs were checked ({checked})");
}

/// The checker refuses what Codex refuses (codex-hooks.md §7.2): Claude Code's outputs for
/// the same replies, where they differ, and the fields only Claude Code takes.
#[test]
fn the_schema_check_refuses_claude_only_fields() {
    let schemas: Value = serde_json::from_str(SCHEMAS).unwrap();
    let check = |key: &str, out: &str| breach(&serde_json::from_str(out).unwrap(), &schemas[key], &schemas[key], key);
    let block = HookReply { block: Some("owed".into()), ..Default::default() };
    let claude_stop = super::super::claude::render(HookEvent::Stop, &block).unwrap();
    assert!(check("stop", &claude_stop).is_some(), "a Stop `hookSpecificOutput` is refused: {claude_stop}");
    assert!(check("session-start", r#"{"sessionTitle":"x"}"#).is_some());
    assert!(check("session-start", r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","initialUserMessage":"x"}}"#).is_some());
    assert!(check("user-prompt-submit", r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"x"}}"#).is_some());
    assert!(check("pre-tool-use", r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"defer"}}"#).is_some());
    assert!(check("post-compact", r#"{"hookSpecificOutput":{"hookEventName":"PostCompact"}}"#).is_some());
    assert!(check("pre-compact", r#"{"systemMessage":7}"#).is_some());
    assert_eq!(check("stop", r#"{"decision":"block","reason":"owed","systemMessage":"m"}"#), None);
}
