//! Claude Code's project settings (`.claude/settings.json`): abcd's hooks merged in beside
//! every other hook and setting, and found again. Only the `hooks` part is read or written.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::{HookEvent, claude};

/// Seconds the host gives each abcd hook (abcd itself fails open well within it).
pub const HOOK_TIMEOUT_SECS: u64 = 10;
/// The Stop hook's: its git and forge reads have a 14 s budget (SPEC §6), so the host's
/// kill must come well after it.
pub const STOP_HOOK_TIMEOUT_SECS: u64 = 30;

/// The matcher each hook is installed with: the file and shell tools and the question
/// tool for PreToolUse, every source or trigger elsewhere.
fn matcher(event: HookEvent) -> &'static str {
    match event {
        HookEvent::PreToolUse => "Write|Edit|MultiEdit|NotebookEdit|Bash|AskUserQuestion",
        _ => "",
    }
}

/// True for a handler abcd installed: exec form, `abcd` binary, first argument `hook`.
fn is_ours(handler: &Value) -> bool {
    let command = handler.get("command").and_then(Value::as_str).unwrap_or("");
    let first_arg = handler.get("args").and_then(Value::as_array).and_then(|a| a.first()).and_then(Value::as_str);
    Path::new(command).file_name().is_some_and(|n| n == "abcd") && first_arg == Some("hook")
}

fn our_handler(exe: &str, event: HookEvent) -> Value {
    let timeout = if event == HookEvent::Stop { STOP_HOOK_TIMEOUT_SECS } else { HOOK_TIMEOUT_SECS };
    json!({"type": "command", "command": exe, "args": ["hook", event.cli_name()], "timeout": timeout})
}

/// Settings with abcd's hooks merged in: older abcd handlers removed, one current one
/// added per event, everything else kept as it was.
pub fn merge_hooks(mut settings: Map<String, Value>, exe: &str) -> Result<Map<String, Value>, String> {
    let hooks = settings.entry("hooks").or_insert_with(|| json!({}));
    let Value::Object(hooks) = hooks else { return Err("its `hooks` is not an object".into()) };
    for event in HookEvent::ALL {
        let groups = hooks.entry(claude::event_name(event)).or_insert_with(|| json!([]));
        let Value::Array(groups) = groups else { return Err(format!("its `hooks.{}` is not a list", claude::event_name(event))) };
        for group in groups.iter_mut() {
            if let Some(Value::Array(handlers)) = group.get_mut("hooks") {
                handlers.retain(|h| !is_ours(h));
            }
        }
        groups.retain(|g| g.get("hooks").and_then(Value::as_array).is_none_or(|h| !h.is_empty()));
        groups.push(json!({"matcher": matcher(event), "hooks": [our_handler(exe, event)]}));
    }
    Ok(settings)
}

/// Which events have an abcd handler installed, and with which command.
pub fn installed(settings: &Map<String, Value>) -> Vec<(HookEvent, Option<String>)> {
    HookEvent::ALL
        .into_iter()
        .map(|event| {
            let command = settings
                .get("hooks")
                .and_then(|h| h.get(claude::event_name(event)))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|g| g.get("hooks").and_then(Value::as_array))
                .flatten()
                .find(|h| is_ours(h))
                .and_then(|h| h.get("command").and_then(Value::as_str).map(str::to_owned));
            (event, command)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_twice_keeps_one_handler_and_every_other_hook() {
        let theirs =
            json!({"model": "x", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "/usr/bin/notify"}]}]}});
        let Value::Object(settings) = theirs else { unreachable!() };
        let once = merge_hooks(settings, "/opt/abcd").unwrap();
        let twice = merge_hooks(once.clone(), "/opt/abcd").unwrap();
        assert_eq!(once, twice);
        let stop = twice["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2, "theirs and ours");
        assert_eq!(stop[0]["hooks"][0]["command"], "/usr/bin/notify");
        assert_eq!(twice["model"], "x");
        for event in HookEvent::ALL {
            let n = installed(&twice).into_iter().filter(|(e, c)| *e == event && c.is_some()).count();
            assert_eq!(n, 1, "{event:?}");
        }
        // A moved binary is updated in place, not added twice.
        let moved = merge_hooks(twice, "/new/place/abcd").unwrap();
        assert_eq!(moved["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(moved["hooks"]["Stop"][1]["hooks"][0]["command"], "/new/place/abcd");
    }
}
