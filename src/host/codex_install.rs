//! What `abcd init --host codex` writes, as text in and text out: abcd's handlers in
//! Codex's `hooks.json` (spliced into the person's file, every other byte kept) and the
//! trust tables in `config.toml` that let Codex run them (edited with `toml_edit`, every
//! other key, comment and blank line kept). Codex runs a hook only when `config.toml`
//! holds, under the key `<hooks.json path>:<event>:<group>:<handler>`, the SHA-256 of the
//! handler's current definition (../shared/host/codex-hooks.md §1.5); an untrusted or
//! changed handler is skipped without a word, which is why `check` reads both files.

use std::collections::BTreeMap;

use serde_json::Value;
use toml_edit::{DocumentMut, Item, Table};

use super::json_text::{self, Node, Splice};

/// One event abcd installs for Codex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodexEvent {
    /// The key in `hooks.json` (PascalCase).
    pub name: &'static str,
    /// The event in a trust key (snake_case).
    pub snake: &'static str,
    /// abcd's name for it: `abcd hook <cli> --host codex`.
    pub cli: &'static str,
    /// The group's matcher (a regular expression on the tool's name), when it has one.
    pub matcher: Option<&'static str>,
    /// Seconds Codex lets the handler run.
    pub timeout: u64,
}

/// Seconds a handler runs before Codex stops it (as abcd's Claude hooks).
pub const HOOK_TIMEOUT_SECS: u64 = super::claude_settings::HOOK_TIMEOUT_SECS;
/// The Stop handler's seconds (as abcd's Claude Stop hook).
pub const STOP_HOOK_TIMEOUT_SECS: u64 = super::claude_settings::STOP_HOOK_TIMEOUT_SECS;
/// Codex clamps a SessionEnd handler to 3 s and warns on every run when one asks for
/// more, so abcd asks for what it gets.
pub const SESSION_END_TIMEOUT_SECS: u64 = 3;
/// Codex's timeout when a handler names none.
const CODEX_DEFAULT_TIMEOUT_SECS: u64 = 600;
/// The events whose timeout Codex clamps, and to what.
const CLAMPED: [&str; 2] = ["SessionEnd", "Interrupt"];
const CLAMP_SECS: u64 = 3;

/// The tools abcd's PreToolUse handler guards: the shell, file patches and the question tool.
pub const PRE_TOOL_USE_MATCHER: &str = "Bash|apply_patch|request_user_input";

/// Every event abcd installs for Codex, in the order it writes them.
pub const EVENTS: [CodexEvent; 7] = [
    CodexEvent { name: "SessionStart", snake: "session_start", cli: "session-start", matcher: None, timeout: HOOK_TIMEOUT_SECS },
    CodexEvent {
        name: "UserPromptSubmit",
        snake: "user_prompt_submit",
        cli: "user-prompt-submit",
        matcher: None,
        timeout: HOOK_TIMEOUT_SECS,
    },
    CodexEvent {
        name: "PreToolUse",
        snake: "pre_tool_use",
        cli: "pre-tool-use",
        matcher: Some(PRE_TOOL_USE_MATCHER),
        timeout: HOOK_TIMEOUT_SECS,
    },
    CodexEvent { name: "PreCompact", snake: "pre_compact", cli: "pre-compact", matcher: None, timeout: HOOK_TIMEOUT_SECS },
    CodexEvent { name: "PostCompact", snake: "post_compact", cli: "post-compact", matcher: None, timeout: HOOK_TIMEOUT_SECS },
    CodexEvent { name: "Stop", snake: "stop", cli: "stop", matcher: None, timeout: STOP_HOOK_TIMEOUT_SECS },
    CodexEvent { name: "SessionEnd", snake: "session_end", cli: "session-end", matcher: None, timeout: SESSION_END_TIMEOUT_SECS },
];

/// The host flag every Codex hook command carries.
const HOST_ARGS: &str = "--host codex";

/// The shell line Codex runs for `event`: `program` (a bare `abcd` or a path, quoted when
/// the shell needs it), then `hook <event> --host codex`.
pub fn hook_command(program: &str, event: &CodexEvent) -> String {
    format!("{} hook {} {HOST_ARGS}", crate::git::worktree::shell_quote(program), event.cli)
}

/// Whether `command` is abcd's hook command for `event`, whatever binary it names: its
/// program's file name is `abcd` (bare, a path, or a path in single quotes).
pub fn is_abcds(command: &str, event: &CodexEvent) -> bool {
    let Some(program) = command.strip_suffix(&format!(" hook {} {HOST_ARGS}", event.cli)) else { return false };
    let program = match program.strip_prefix('\'').and_then(|p| p.strip_suffix('\'')) {
        Some(quoted) => quoted.replace(r"'\''", "'"),
        None if program.contains(['\'', '"', ' ', '\\', '$', '`']) => return false,
        None => program.to_string(),
    };
    std::path::Path::new(&program).file_name().is_some_and(|n| n == "abcd")
}

/// abcd's matcher group for `event`, as one line of compact JSON.
pub fn group_text(program: &str, event: &CodexEvent) -> String {
    serde_json::to_string(&group_value(program, event)).expect("a JSON value serializes")
}

fn group_value(program: &str, event: &CodexEvent) -> Value {
    let handler = serde_json::json!({"type": "command", "command": hook_command(program, event), "timeout": event.timeout});
    let mut group = serde_json::Map::new();
    if let Some(m) = event.matcher {
        group.insert("matcher".into(), Value::String(m.into()));
    }
    group.insert("hooks".into(), Value::Array(vec![handler]));
    Value::Object(group)
}

/// The trust key of the handler at `group`/`handler` of `event` in the `hooks.json` at
/// `hooks_path` (the path as Codex names it).
pub fn trust_key(hooks_path: &str, snake: &str, group: usize, handler: usize) -> String {
    format!("{hooks_path}:{snake}:{group}:{handler}")
}

/// The hash Codex trusts a command handler by: SHA-256 of the compact, key-sorted JSON of
/// `{event_name, matcher (when set), hooks: [{async, command, timeout, type, statusMessage
/// and additionalContextLimit (when set)}]}`, the timeout defaulting to 600 s and clamped
/// for SessionEnd and Interrupt. `None` for a handler that is not a command.
pub fn trust_hash(event_name: &str, group: &Value, handler: &Value) -> Option<String> {
    use sha2::Digest;
    if handler.get("type").and_then(Value::as_str) != Some("command") {
        return None;
    }
    let command = handler.get("command")?.as_str()?;
    let mut timeout = match handler.get("timeout") {
        None | Some(Value::Null) => CODEX_DEFAULT_TIMEOUT_SECS,
        Some(t) => t.as_u64()?,
    }
    .max(1);
    if CLAMPED.contains(&event_name) {
        timeout = timeout.min(CLAMP_SECS);
    }
    // BTreeMaps serialize their keys sorted, whatever serde_json's own map keeps.
    let mut h: BTreeMap<&str, Value> = BTreeMap::new();
    h.insert("async", Value::Bool(handler.get("async").and_then(Value::as_bool).unwrap_or(false)));
    h.insert("command", Value::String(command.into()));
    h.insert("timeout", Value::from(timeout));
    h.insert("type", Value::String("command".into()));
    for optional in ["statusMessage", "additionalContextLimit"] {
        if let Some(v) = handler.get(optional).filter(|v| !v.is_null()) {
            h.insert(optional, v.clone());
        }
    }
    let mut identity: BTreeMap<&str, Value> = BTreeMap::new();
    identity.insert("event_name", Value::String(snake_case(event_name)));
    identity.insert("hooks", Value::Array(vec![serde_json::to_value(h).ok()?]));
    if let Some(m) = group.get("matcher").filter(|m| !m.is_null()) {
        identity.insert("matcher", m.clone());
    }
    let text = serde_json::to_string(&identity).ok()?;
    let digest = sha2::Sha256::digest(text.as_bytes());
    Some(format!("sha256:{}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

/// `PreToolUse` → `pre_tool_use`, as Codex keys trust.
pub fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// One abcd handler found in a `hooks.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub event: CodexEvent,
    pub group: usize,
    pub handler: usize,
    pub command: String,
    /// The hash of its definition as written; `None` when Codex would not hash it.
    pub hash: Option<String>,
}

/// The file's text before `init` adds anything to a `hooks.json` that is not there.
const FRESH: &str = "{\n  \"hooks\": {\n  }\n}\n";

/// A parsed `hooks.json`: its text's nodes and its values, walked together.
struct Parsed {
    root: Node,
    value: Value,
}

fn parse(text: &str) -> Result<Parsed, String> {
    let root = json_text::parse(text).map_err(|e| format!("it is not valid JSON ({e})"))?;
    let value: Value = serde_json::from_str(text).map_err(|e| format!("it is not valid JSON ({e})"))?;
    if root.members().is_none() {
        return Err("it is not a JSON object".into());
    }
    Ok(Parsed { root, value })
}

impl Parsed {
    /// The `hooks` object's node, if present; an error when it is not an object.
    fn hooks(&self) -> Result<Option<&Node>, String> {
        match self.root.member("hooks")? {
            None => Ok(None),
            Some(m) if m.value.members().is_some() => Ok(Some(&m.value)),
            Some(_) => Err("its `hooks` is not an object".into()),
        }
    }

    /// The event's list of groups, if present; an error when it is not a list.
    fn groups(&self, event: &str) -> Result<Option<&Node>, String> {
        let Some(hooks) = self.hooks()? else { return Ok(None) };
        match hooks.member(event)? {
            None => Ok(None),
            Some(m) if m.value.items().is_some() => Ok(Some(&m.value)),
            Some(_) => Err(format!("its `hooks.{event}` is not a list")),
        }
    }

    fn group_values(&self, event: &str) -> Vec<Value> {
        self.value.get("hooks").and_then(|h| h.get(event)).and_then(Value::as_array).cloned().unwrap_or_default()
    }
}

/// Whether a group is abcd's: exactly one handler, abcd's command for `event`.
fn is_abcd_group(group: &Value, event: &CodexEvent) -> bool {
    match group.get("hooks").and_then(Value::as_array).map(Vec::as_slice) {
        Some([handler]) => handler.get("command").and_then(Value::as_str).is_some_and(|c| is_abcds(c, event)),
        _ => false,
    }
}

/// abcd's handlers in a `hooks.json`'s text, each with where it stands and its hash.
pub fn abcd_hooks(text: &str) -> Result<Vec<Found>, String> {
    let p = parse(text)?;
    p.hooks()?;
    let mut found = Vec::new();
    for event in EVENTS {
        p.groups(event.name)?;
        for (gi, group) in p.group_values(event.name).iter().enumerate() {
            if is_abcd_group(group, &event) {
                let handler = &group["hooks"][0];
                found.push(Found {
                    event,
                    group: gi,
                    handler: 0,
                    command: handler["command"].as_str().unwrap_or_default().to_string(),
                    hash: trust_hash(event.name, group, handler),
                });
            }
        }
    }
    Ok(found)
}

/// `text` (or a new file when `None`) with abcd's handlers running `program`: an abcd
/// group already there is rewritten in place when it differs from the current one; an
/// event with none gets one appended after the person's groups, so theirs keep their
/// places (and so their trust keys). Every other byte is kept.
pub fn with_abcd_hooks(text: Option<&str>, program: &str) -> Result<String, String> {
    let mut text = text.unwrap_or(FRESH).to_string();
    let p = parse(&text)?;
    if p.hooks()?.is_none() {
        let entry = format!("\"hooks\": {{\n{}}}", json_text::line_indent(&text, p.root.span.start));
        text = json_text::apply(&text, vec![json_text::append(&text, &p.root, &entry)]);
    }
    for event in EVENTS {
        let p = parse(&text)?;
        let want = group_value(program, &event);
        let ours: Vec<usize> =
            p.group_values(event.name).iter().enumerate().filter(|(_, g)| is_abcd_group(g, &event)).map(|(i, _)| i).collect();
        let splices: Vec<Splice> = match p.groups(event.name)? {
            Some(groups) if !ours.is_empty() => {
                let values = p.group_values(event.name);
                let items = groups.items().expect("a list");
                ours.iter()
                    .filter(|i| values[**i] != want)
                    .map(|i| Splice { range: items[*i].span.clone(), with: group_text(program, &event) })
                    .collect()
            }
            Some(groups) => vec![json_text::append(&text, groups, &group_text(program, &event))],
            None => {
                let hooks = p.hooks()?.expect("added above");
                let lead = json_text::entry_lead(&text, hooks, hooks.members().and_then(|m| m.last()).map(|m| m.key_start));
                let indent = lead.rsplit('\n').next().unwrap_or_default().to_string();
                // One level deeper, by the step the file indents by (two spaces when it shows none).
                let outer = json_text::line_indent(&text, hooks.span.start).len();
                let step = if lead.contains('\n') && indent.len() > outer { &indent[outer..] } else { "  " };
                let entry = format!("\"{}\": [\n{indent}{step}{}\n{indent}]", event.name, group_text(program, &event));
                vec![json_text::append(&text, hooks, &entry)]
            }
        };
        text = json_text::apply(&text, splices);
    }
    Ok(text)
}

/// What removing abcd's handlers did to the places of the person's groups: each trust key
/// of abcd's that goes, and each of the person's groups that moved up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// (event snake, group, handler) of each abcd handler removed.
    pub gone: Vec<(&'static str, usize, usize)>,
    /// Each of the person's command handlers whose group moved up.
    pub moved: Vec<Moved>,
}

/// A handler of the person's whose group moved up when abcd's went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moved {
    pub snake: &'static str,
    pub from_group: usize,
    pub to_group: usize,
    pub handler: usize,
    /// Its definition's hash: its trust moves only when this is what the trust says.
    pub hash: String,
}

/// `text` without abcd's handlers: its groups removed (with their separators, so a file
/// `with_abcd_hooks` added to comes back byte for byte); an event list left holding nothing
/// goes, and the `hooks` object with it when it holds nothing else. What is left stays a
/// file, `{}` at the least: abcd cannot tell a file it made from a person's empty one, and
/// never deletes a file of the person's.
pub fn without_abcd_hooks(text: &str) -> Result<(String, Removed), String> {
    let p = parse(text)?;
    let mut removed = Removed::default();
    let Some(hooks) = p.hooks()? else { return Ok((text.to_string(), removed)) };
    let members = hooks.members().expect("an object");
    let mut drop_members = Vec::new();
    let mut splices = Vec::new();
    for event in EVENTS {
        let Some(groups) = p.groups(event.name)? else { continue };
        let values = p.group_values(event.name);
        let ours: Vec<usize> = values.iter().enumerate().filter(|(_, g)| is_abcd_group(g, &event)).map(|(i, _)| i).collect();
        if ours.is_empty() {
            continue;
        }
        removed.gone.extend(ours.iter().map(|g| (event.snake, *g, 0)));
        let mut up = 0;
        for (gi, group) in values.iter().enumerate() {
            if ours.contains(&gi) {
                up += 1;
            } else if up > 0 {
                let handlers = group.get("hooks").and_then(Value::as_array).cloned().unwrap_or_default();
                for (hi, h) in handlers.iter().enumerate() {
                    if let Some(hash) = trust_hash(event.name, group, h) {
                        removed.moved.push(Moved { snake: event.snake, from_group: gi, to_group: gi - up, handler: hi, hash });
                    }
                }
            }
        }
        if ours.len() == values.len() {
            drop_members.push(members.iter().position(|m| m.key == event.name).expect("the event is a member"));
        } else {
            splices.extend(json_text::removals(groups, &json_text::item_extents(groups.items().expect("a list")), &ours));
        }
    }
    drop_members.sort_unstable();
    if !drop_members.is_empty() && drop_members.len() == members.len() {
        let root_members = p.root.members().expect("an object");
        let at = root_members.iter().position(|m| m.key == "hooks").expect("hooks is a member");
        splices.push(json_text::removals(&p.root, &json_text::member_extents(root_members), &[at]).remove(0));
    } else {
        splices.extend(json_text::removals(hooks, &json_text::member_extents(members), &drop_members));
    }
    let left = json_text::apply(text, splices);
    serde_json::from_str::<Value>(&left).map_err(|e| format!("removing abcd's hooks left invalid JSON ({e})"))?;
    Ok((left, removed))
}

/// Parses a `config.toml`; an error (toml_edit's words) when it is not TOML.
pub fn parse_config(text: &str) -> Result<DocumentMut, String> {
    text.parse::<DocumentMut>().map_err(|e| format!("it is not valid TOML ({})", e.to_string().trim_end()))
}

/// The `hooks.state` table, made (implicit, so no header is written for it) when absent;
/// an error when `hooks` or `hooks.state` is something else.
fn state_table(doc: &mut DocumentMut) -> Result<&mut Table, String> {
    let hooks = doc.entry("hooks").or_insert_with(implicit_table);
    let hooks = hooks.as_table_mut().ok_or("its `hooks` is not a table")?;
    let state = hooks.entry("state").or_insert_with(implicit_table);
    state.as_table_mut().ok_or_else(|| "its `hooks.state` is not a table".to_string())
}

fn implicit_table() -> Item {
    let mut t = Table::new();
    t.set_implicit(true);
    Item::Table(t)
}

/// The last position any table of `table` (or below) holds in the document.
fn last_position(table: &Table) -> isize {
    let mut last = table.position().unwrap_or(0);
    for (_, item) in table.iter() {
        match item {
            Item::Table(t) => last = last.max(last_position(t)),
            Item::ArrayOfTables(a) => {
                for t in a.iter() {
                    last = last.max(last_position(t));
                }
            }
            _ => {}
        }
    }
    last
}

/// The trusted hash `config.toml` holds for `key`, if any.
pub fn trusted_hash(doc: &DocumentMut, key: &str) -> Option<String> {
    doc.get("hooks")?.get("state")?.get(key)?.get("trusted_hash")?.as_str().map(str::to_owned)
}

/// `config.toml`'s text with `trusted_hash` set for each (key, hash): a key already there
/// keeps its place and its other fields; a new one is a table appended after the last
/// table. Every other byte is kept.
pub fn with_trust(text: &str, entries: &[(String, String)]) -> Result<String, String> {
    let mut doc = parse_config(text)?;
    let mut next = last_position(doc.as_table()) + 1;
    let state = state_table(&mut doc)?;
    for (key, hash) in entries {
        match state.get_mut(key) {
            Some(entry) => {
                let entry = entry.as_table_like_mut().ok_or_else(|| format!("its `hooks.state.\"{key}\"` is not a table"))?;
                match entry.get_mut("trusted_hash") {
                    Some(Item::Value(v)) if v.as_str() == Some(hash) => {}
                    Some(Item::Value(v)) => {
                        let decor = v.decor().clone();
                        *v = toml_edit::Value::from(hash.as_str());
                        *v.decor_mut() = decor;
                    }
                    _ => {
                        entry.insert("trusted_hash", toml_edit::value(hash.as_str()));
                    }
                }
            }
            None => {
                let mut t = Table::new();
                t.insert("trusted_hash", toml_edit::value(hash.as_str()));
                t.set_position(Some(next));
                next += 1;
                state.insert(key, Item::Table(t));
            }
        }
    }
    Ok(doc.to_string())
}

/// A trust table to move: from key, to key, and the hash it must hold to be moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    pub from: String,
    pub to: String,
    pub hash: String,
}

/// `config.toml`'s text with the trust of each key in `gone` removed and each of `moves`
/// renamed to its new key (the person's groups that moved up keep their trust). A move
/// happens only when its table trusts the hash it names, and a gone key that already
/// trusts what moves into it is kept, so a second run after one cut short changes
/// nothing more. `hooks.state` and `hooks`, left empty and never written as headers, go.
/// Whatever is left stays a file, empty at the least (see `without_abcd_hooks`).
pub fn without_trust(text: &str, gone: &[String], moves: &[Move]) -> Result<String, String> {
    let mut doc = parse_config(text)?;
    if doc.get("hooks").and_then(|h| h.get("state")).is_none() {
        return Ok(text.to_string());
    }
    let trusts = |doc: &DocumentMut, key: &str, hash: &str| trusted_hash(doc, key).as_deref() == Some(hash);
    let movable: Vec<&Move> = moves.iter().filter(|m| trusts(&doc, &m.from, &m.hash)).collect();
    let keep: Vec<&String> =
        gone.iter().filter(|k| moves.iter().any(|m| &m.to == *k && !movable.contains(&m) && trusts(&doc, k, &m.hash))).collect();
    let state = state_table(&mut doc)?;
    for key in gone.iter().filter(|k| !keep.contains(k)) {
        state.remove(key);
    }
    let taken: Vec<(String, Item)> = movable.iter().filter_map(|m| state.remove(&m.from).map(|item| (m.to.clone(), item))).collect();
    for (to, item) in taken {
        state.insert(&to, item);
    }
    let state_empty = state.is_empty() && state.is_implicit();
    let hooks = doc.get_mut("hooks").and_then(Item::as_table_mut).expect("hooks is a table");
    if state_empty {
        hooks.remove("state");
    }
    if hooks.is_empty() && hooks.is_implicit() {
        doc.remove("hooks");
    }
    // An emptied file stays, empty: see `without_abcd_hooks`.
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/home/p/.codex/hooks.json";

    #[test]
    fn the_hash_is_codexs_rule() {
        // The lab's trust_hooks.py gives these for the same definitions.
        let group = serde_json::json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "/bin/true", "timeout": 5}]});
        let h = trust_hash("PreToolUse", &group, &group["hooks"][0]).unwrap();
        assert_eq!(h, "sha256:327d4d5c8268c5ed60e372c070095b2a02d849e830d70fa1f34916ff1c7cf3bd");
    }

    #[test]
    fn every_event_installed_is_one_abcd_hook_handles() {
        for event in EVENTS {
            assert!(crate::host::HookEvent::from_cli_name(event.cli).is_some(), "`abcd hook {}` is a hook", event.cli);
            assert_eq!(snake_case(event.name), event.snake);
        }
    }

    #[test]
    fn abcds_command_is_known_by_its_program_and_arguments() {
        let stop = EVENTS[5];
        assert!(is_abcds("abcd hook stop --host codex", &stop));
        assert!(is_abcds("/opt/x/abcd hook stop --host codex", &stop));
        assert!(is_abcds(&hook_command("/opt/my tools/abcd", &stop), &stop));
        assert!(!is_abcds("abcd hook stop", &stop));
        assert!(!is_abcds("abcd hook session-start --host codex", &stop));
        assert!(!is_abcds("/bin/notabcd hook stop --host codex", &stop));
        assert!(!is_abcds("x; abcd hook stop --host codex", &stop));
    }

    #[test]
    fn init_then_uninstall_gives_back_the_persons_file() {
        let theirs = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"notify\"}]}\n    ]\n  },\n  \"x\": 1\n}\n";
        let with = with_abcd_hooks(Some(theirs), "abcd").unwrap();
        let found = abcd_hooks(&with).unwrap();
        assert_eq!(found.len(), EVENTS.len());
        let stop = found.iter().find(|f| f.event.name == "Stop").unwrap();
        assert_eq!((stop.group, stop.handler), (1, 0), "after the person's group:\n{with}");
        assert_eq!(with_abcd_hooks(Some(&with), "abcd").unwrap(), with, "a second run changes nothing");
        let (left, removed) = without_abcd_hooks(&with).unwrap();
        assert_eq!(left, theirs);
        assert_eq!(removed.gone.len(), EVENTS.len());
        assert!(removed.moved.is_empty());
        // A file init made goes whole.
        let fresh = with_abcd_hooks(None, "abcd").unwrap();
        let emptied: Value = serde_json::from_str(&without_abcd_hooks(&fresh).unwrap().0).unwrap();
        assert_eq!(emptied, serde_json::json!({}), "a file init made is left holding nothing, not deleted");
        // A file without `hooks` gets it and loses it.
        let bare = "{\"model\": \"x\"}";
        assert_eq!(without_abcd_hooks(&with_abcd_hooks(Some(bare), "abcd").unwrap()).unwrap().0, bare);
    }

    #[test]
    fn a_moved_binary_is_rewritten_in_place() {
        let old = with_abcd_hooks(None, "/old/abcd").unwrap();
        let new = with_abcd_hooks(Some(&old), "abcd").unwrap();
        assert!(!new.contains("/old/abcd"), "{new}");
        assert_eq!(new, with_abcd_hooks(None, "abcd").unwrap());
    }

    #[test]
    fn groups_after_abcds_move_up_when_it_goes() {
        let with = with_abcd_hooks(None, "abcd").unwrap();
        let mine = "{\"hooks\": [{\"type\": \"command\", \"command\": \"mine\"}]}";
        let p = parse(&with).unwrap();
        let grown = json_text::apply(&with, vec![json_text::append(&with, p.groups("Stop").unwrap().unwrap(), mine)]);
        let (left, removed) = without_abcd_hooks(&grown).unwrap();
        assert_eq!(removed.moved.iter().map(|m| (m.snake, m.from_group, m.to_group, m.handler)).collect::<Vec<_>>(), [("stop", 1, 0, 0)]);
        let v: Value = serde_json::from_str(&left).unwrap();
        assert_eq!(v, serde_json::json!({"hooks": {"Stop": [serde_json::from_str::<Value>(mine).unwrap()]}}));
    }

    #[test]
    fn trust_is_added_and_removed_keeping_every_other_byte() {
        let theirs = "# mine\nmodel = \"o3\"  # the model\n\n[profiles.fast]\nmodel = \"mini\"\n\n[hooks.state.\"/x/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:aa\"\n\n[mcp_servers.x]\ncommand = \"srv\"\n";
        let entries = vec![(trust_key(PATH, "stop", 1, 0), "sha256:bb".to_string())];
        let with = with_trust(theirs, &entries).unwrap();
        assert!(with.starts_with(theirs), "appended after everything:\n{with}");
        let doc = parse_config(&with).unwrap();
        assert_eq!(trusted_hash(&doc, &entries[0].0).as_deref(), Some("sha256:bb"));
        assert_eq!(with_trust(&with, &entries).unwrap(), with);
        assert_eq!(without_trust(&with, &[entries[0].0.clone()], &[]).unwrap(), theirs);
        // Made from nothing, gone to nothing.
        let made = with_trust("", &entries).unwrap();
        assert_eq!(without_trust(&made, &[entries[0].0.clone()], &[]).unwrap(), "", "emptied, not deleted");
        assert!(with_trust("model = ", &entries).is_err());
        assert!(with_trust("hooks = 1\n", &entries).unwrap_err().contains("`hooks` is not a table"));
    }

    #[test]
    fn a_moved_groups_trust_follows_it_once() {
        let theirs =
            "[hooks.state.\"/p:stop:0:0\"]\ntrusted_hash = \"sha256:ab\"\n\n[hooks.state.\"/p:stop:1:0\"]\ntrusted_hash = \"sha256:cc\"\n";
        let gone = ["/p:stop:0:0".to_string()];
        let moves = [Move { from: "/p:stop:1:0".into(), to: "/p:stop:0:0".into(), hash: "sha256:cc".into() }];
        let left = without_trust(theirs, &gone, &moves).unwrap();
        let doc = parse_config(&left).unwrap();
        assert_eq!(trusted_hash(&doc, "/p:stop:0:0").as_deref(), Some("sha256:cc"));
        assert_eq!(trusted_hash(&doc, "/p:stop:1:0"), None);
        // Run again (as after a run cut short before hooks.json was written): nothing moves twice.
        assert_eq!(without_trust(&left, &gone, &moves).unwrap(), left);
    }
}
