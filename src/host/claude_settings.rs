//! Claude Code's project settings (`.claude/settings.json`): abcd's hooks merged in beside
//! every other hook and setting, and found again. Only the `hooks` part is changed, and
//! every key keeps its place: the file is read and written as [`Json`], which keeps an
//! object's keys in the order they were read.

use std::path::Path;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::{HookEvent, claude};

/// Seconds the host gives each abcd hook (abcd itself fails open well within it).
pub const HOOK_TIMEOUT_SECS: u64 = 10;
/// The project settings file abcd installs its hooks in, relative to the repository's root.
pub const PROJECT_SETTINGS: &str = ".claude/settings.json";
/// The project's settings the host reads beside them and never expects committed: where
/// `abcd launch` gives a lane's agent abcd's hooks when the lane's base commit lacks them.
pub const LOCAL_SETTINGS: &str = ".claude/settings.local.json";
/// The Stop hook's: its git and forge reads have a 14 s budget (SPEC §6), so the host's
/// kill must come well after it.
pub const STOP_HOOK_TIMEOUT_SECS: u64 = 30;

/// The settings key of the host's status line (docs/status-line.md).
pub const STATUS_LINE_KEY: &str = "statusLine";
/// The words after abcd's program in the status line's command.
pub const STATUS_LINE_VERB: &str = "status-line";

/// The host notifications abcd records while away: the session waits on a person.
pub const NOTIFICATION_MATCHER: &str = "idle_prompt|agent_needs_input|permission_prompt|elicitation_dialog";

/// The matcher each hook is installed with: the file and shell tools and the question
/// tool for PreToolUse, every source or trigger elsewhere.
fn matcher(event: HookEvent) -> &'static str {
    match event {
        HookEvent::PreToolUse => "Write|Edit|MultiEdit|NotebookEdit|Bash|AskUserQuestion",
        HookEvent::Notification => NOTIFICATION_MATCHER,
        _ => "",
    }
}

/// A JSON value whose objects keep their keys in the order read or inserted. serde_json's
/// own map sorts its keys unless the crate-wide `preserve_order` feature is on, and that
/// feature would also reorder the keys of every journal event's data, which the format
/// vectors pin in byte order (docs/decisions.md, issue 19).
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Object),
}

/// A JSON object's members in order; a key read twice keeps its first place and its last
/// value, as serde_json reads one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object(Vec<(String, Json)>);

impl Object {
    pub fn get(&self, key: &str) -> Option<&Json> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value at `key`, inserted last as `make()` when missing.
    fn get_or_insert(&mut self, key: &str, make: impl FnOnce() -> Json) -> &mut Json {
        let at = match self.0.iter().position(|(k, _)| k == key) {
            Some(at) => at,
            None => {
                self.0.push((key.to_string(), make()));
                self.0.len() - 1
            }
        };
        &mut self.0[at].1
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    fn from_pairs<const N: usize>(pairs: [(&str, Json); N]) -> Object {
        Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
}

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(o) => o.get(key),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Json>> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }

    fn string(s: &str) -> Json {
        Json::String(s.to_string())
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(t) => s.serialize_str(t),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(o) => o.serialize(s),
        }
    }
}

impl Serialize for Object {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(n).map(Json::Number).ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::string(s))
    }

    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut o = Object::default();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            *o.get_or_insert(&k, || Json::Null) = v;
        }
        Ok(Json::Object(o))
    }
}

/// True for a handler abcd installed: exec form, `abcd` binary, first argument `hook`.
fn is_ours(handler: &Json) -> bool {
    let command = handler.get("command").and_then(Json::as_str).unwrap_or("");
    let first_arg = handler.get("args").and_then(Json::as_array).and_then(|a| a.first()).and_then(Json::as_str);
    Path::new(command).file_name().is_some_and(|n| n == "abcd") && first_arg == Some("hook")
}

/// abcd's handler for `event`, its keys in the order the host's documentation shows them.
fn our_handler(command: &str, event: HookEvent) -> Json {
    let timeout = if event == HookEvent::Stop { STOP_HOOK_TIMEOUT_SECS } else { HOOK_TIMEOUT_SECS };
    Json::Object(Object::from_pairs([
        ("type", Json::string("command")),
        ("command", Json::string(command)),
        ("args", Json::Array(vec![Json::string("hook"), Json::string(event.cli_name())])),
        ("timeout", Json::Number(timeout.into())),
    ]))
}

/// Settings with abcd's hooks merged in: older abcd handlers removed, one current one
/// added per event (last among the event's groups), everything else kept as it was and
/// where it was. `command` is what the handler runs: `abcd` (from PATH) or a path.
pub fn merge_hooks(mut settings: Object, command: &str) -> Result<Object, String> {
    let Json::Object(hooks) = settings.get_or_insert("hooks", || Json::Object(Object::default())) else {
        return Err("its `hooks` is not an object".into());
    };
    for event in claude::EVENTS {
        let groups = hooks.get_or_insert(claude::event_name(event), || Json::Array(vec![]));
        let Json::Array(groups) = groups else { return Err(format!("its `hooks.{}` is not a list", claude::event_name(event))) };
        for group in groups.iter_mut() {
            if let Json::Object(g) = group
                && let Some(Json::Array(handlers)) = g.0.iter_mut().find(|(k, _)| k == "hooks").map(|(_, v)| v)
            {
                handlers.retain(|h| !is_ours(h));
            }
        }
        groups.retain(|g| g.get("hooks").and_then(Json::as_array).is_none_or(|h| !h.is_empty()));
        groups.push(Json::Object(Object::from_pairs([
            ("matcher", Json::string(matcher(event))),
            ("hooks", Json::Array(vec![our_handler(command, event)])),
        ])));
    }
    Ok(settings)
}

/// Which events have an abcd handler installed, and with which command.
pub fn installed(settings: &Object) -> Vec<(HookEvent, Option<String>)> {
    claude::EVENTS
        .into_iter()
        .map(|event| {
            let command = settings
                .get("hooks")
                .and_then(|h| h.get(claude::event_name(event)))
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .filter_map(|g| g.get("hooks").and_then(Json::as_array))
                .flatten()
                .find(|h| is_ours(h))
                .and_then(|h| h.get("command").and_then(Json::as_str).map(str::to_owned));
            (event, command)
        })
        .collect()
}

/// `settings` with the status line set to run `command` (the key added last when missing).
pub fn with_status_line(mut settings: Object, command: &str) -> Object {
    *settings.get_or_insert(STATUS_LINE_KEY, || Json::Null) =
        Json::Object(Object::from_pairs([("type", Json::string("command")), ("command", Json::string(command))]));
    settings
}

/// The status line `settings` set: `None` when the key is absent, else its `command` (empty
/// when it names none).
pub fn status_line_of(settings: &Object) -> Option<String> {
    settings.get(STATUS_LINE_KEY).map(|v| v.get("command").and_then(Json::as_str).unwrap_or_default().to_string())
}

/// Whether a status line's command is abcd's: its last word is [`STATUS_LINE_VERB`] and its
/// program's file name is `abcd`.
pub fn status_line_is_abcds(command: &str) -> bool {
    let Some(program) = command.strip_suffix(STATUS_LINE_VERB).and_then(|rest| rest.strip_suffix(' ')) else { return false };
    let program = program.trim().trim_matches('\'');
    Path::new(program).file_name().is_some_and(|n| n == "abcd")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(text: &str) -> Object {
        match serde_json::from_str(text).unwrap() {
            Json::Object(o) => o,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn merging_twice_keeps_one_handler_and_every_other_hook() {
        let settings =
            object(r#"{"model": "x", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "/usr/bin/notify"}]}]}}"#);
        let once = merge_hooks(settings, "/opt/abcd").unwrap();
        let twice = merge_hooks(once.clone(), "/opt/abcd").unwrap();
        assert_eq!(once, twice);
        let twice = Json::Object(twice);
        let stop = twice.get("hooks").and_then(|h| h.get("Stop")).and_then(Json::as_array).unwrap();
        assert_eq!(stop.len(), 2, "theirs and ours");
        assert_eq!(
            stop[0].get("hooks").and_then(Json::as_array).unwrap()[0].get("command").and_then(Json::as_str),
            Some("/usr/bin/notify")
        );
        assert_eq!(twice.get("model").and_then(Json::as_str), Some("x"));
        let Json::Object(twice) = twice else { unreachable!() };
        for event in claude::EVENTS {
            let n = installed(&twice).into_iter().filter(|(e, c)| *e == event && c.is_some()).count();
            assert_eq!(n, 1, "{event:?}");
        }
        // A moved binary, or `abcd` from PATH, is updated in place, not added twice.
        for command in ["/new/place/abcd", "abcd"] {
            let moved = Json::Object(merge_hooks(twice.clone(), command).unwrap());
            let stop = moved.get("hooks").and_then(|h| h.get("Stop")).and_then(Json::as_array).unwrap();
            assert_eq!(stop.len(), 2);
            assert_eq!(stop[1].get("hooks").and_then(Json::as_array).unwrap()[0].get("command").and_then(Json::as_str), Some(command));
        }
    }

    /// Every key keeps its place, at every depth, and the file reads back as it was written.
    #[test]
    fn the_order_of_every_key_is_kept() {
        let text = r#"{"zeta": 1, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/bin/z", "timeout": 5}], "matcher": ""}], "Alpha": []}, "alpha": {"b": 2.5, "a": [null, true, "s", -3]}}"#;
        let merged = merge_hooks(object(text), "abcd").unwrap();
        assert_eq!(merged.keys().collect::<Vec<_>>(), ["zeta", "hooks", "alpha"]);
        let Some(Json::Object(hooks)) = merged.get("hooks") else { panic!() };
        let events: Vec<&str> = hooks.keys().collect();
        assert_eq!(&events[..2], ["Stop", "Alpha"], "theirs first, as they were");
        let pretty = serde_json::to_string_pretty(&Json::Object(merged.clone())).unwrap();
        let at = |needle: &str| pretty.find(needle).unwrap_or_else(|| panic!("{needle} in {pretty}"));
        let order = [r#""/bin/z""#, r#""timeout": 5"#, r#""matcher": """#, r#""b": 2.5"#, r#""a": ["#];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{pretty}");
        assert_eq!(object(&pretty), merged, "it reads back as written");
        // A key given twice keeps its first place and its last value, as serde_json reads it.
        let twice = object(r#"{"a": 1, "b": 2, "a": 3}"#);
        assert_eq!(serde_json::to_string(&twice).unwrap(), r#"{"a":3,"b":2}"#);
    }
}
