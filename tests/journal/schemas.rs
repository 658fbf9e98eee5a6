//! The JSON Schemas of `journal-format/schema/` checked against the vectors and the code.
//!
//! A full JSON Schema validator is not a dependency, so this file evaluates the small
//! subset the schemas use (type, const, enum, required, properties, additionalProperties,
//! minProperties, items, minItems, maxItems, minimum, maximum, minLength, maxLength, oneOf, allOf,
//! if/then/else) and refuses any other keyword, so a schema cannot lean on something this
//! check silently skips. `pattern` is evaluated through a table of the patterns the schemas
//! use, each written out as the rule the regular expression states; tests below hold each
//! rule against the code's own validator.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use abcd::away::{self, AwayEnded, AwayHandedBack, AwayQueued, AwaySet, AwayStopRecorded, DecisionRecorded, RecordedStop, StopLabel};
use abcd::away::{AwayReturnShown, AwaySweepAnswered, AwaySweepStarted, Tradeoff};
use abcd::checklist::item::{self, BlockerKind, ChangeSet, Credential, ItemFields, ItemState};
use abcd::event::{
    self, BranchCreated, CompactionRecorded, ItemAdded, ItemChanged, JournalOpened, JournalRepaired, RepairCause, Scope, SessionJudged,
    SessionStarted, WriteRefused,
};
use abcd::fold::{self, FoldNote, FoldedState};
use abcd::git::branch as git;
use abcd::journal::format;
use abcd::journal::scan::{self, StartPoint};
use abcd::journal::storage::BytesFile;
use abcd::ledger::{
    self, Driver, DriverClaimed, ExitStatus, LaunchExited, LaunchIntended, LaunchStarted, LedgerState, ReceiptCollected, RunNamed,
    RunStarted, WorkSavedAside,
};
use abcd::phased;
use abcd::platform::process::ProcessId;
use abcd::secrets::{self, SecretKind};
use abcd::verdict::stop::{Row, StopState};
use serde_json::{Number, Value, json};

fn format_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("journal-format")
}

fn schema(name: &str) -> Value {
    let path = format_dir().join("schema").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} is not JSON: {e}"));
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema", "{name} declares draft 2020-12");
    schema
}

// ---------------------------------------------------------------------------------------
// The subset validator
// ---------------------------------------------------------------------------------------

/// Keywords that only annotate. (`format` is an annotation in draft 2020-12 unless a
/// validator opts into the format-assertion vocabulary; the schemas pair it with a
/// `pattern`, which is what is checked.)
const ANNOTATIONS: &[&str] = &["$schema", "$id", "title", "description", "$comment", "examples", "format"];

/// One line of text (title, promise): no control character anywhere and no white space
/// (as Rust's `char::is_whitespace`, which `str::trim` uses) at either end.
const ONE_LINE_TEXT: &str = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]([^\u0000-\u001F\u007F-\u009F]*[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000])?$";
/// Exactly one `=>`, with something on both sides.
const PROMISE_ARROW: &str = r"^(?![\s\S]*=>[\s\S]*=>)[\s\S]+=>[\s\S]+$";
/// An owner ref: no white space or control character, no leading `-`, no `..`.
const OWNER_REF: &str = r"^(?!-)(?![\s\S]*\.\.)[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$";
const SLUG: &str = r"^[a-z0-9]+(-[a-z0-9]+)*$";
const PULL_REQUEST: &str = r"^pr:[1-9][0-9]{0,11}$";
const PERSON_OR_SLOT: &str = r"^(person|slot):[A-Za-z0-9._-]{1,200}$";
/// An instant as jiff prints it: UTC, `Z`, fractional seconds only when not zero, without
/// trailing zeros; a year before 0 as `-00YYYY`.
const JIFF_INSTANT: &str = r"^(-00)?[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{0,8}[1-9])?Z$";
/// A word of a refusal record.
const REFUSAL_WORD: &str = r"^[a-z_.]+$";
/// A line with something on it (the away record's text, `away::check_line`): no control
/// character anywhere, and at least one character that is not white space.
const TEXT_LINE: &str = r"^[^\u0000-\u001F\u007F-\u009F]*[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\u0000-\u001F\u007F-\u009F]*$";
/// A branch name (`ref_name::branch_name_ok` bar its byte limit, `git check-ref-format
/// --branch`): not empty, not `HEAD` or `@`, no leading `-`, no component empty, starting
/// with `.` or ending in `.lock`, no trailing `.`, no `..` or `@{`, and no white space,
/// control character, `~`, `^`, `:`, `?`, `*`, `[` or `\`.
const BRANCH_NAME: &str = r"^(?![-/.])(?!HEAD$)(?!@$)(?![\s\S]*\.\.)(?![\s\S]*@\{)(?![\s\S]*//)(?![\s\S]*/\.)(?![\s\S]*\.lock(/|$))(?![\s\S]*[/.]$)[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000~^:?*\[\\]+$";
/// A host session id abcd keys state by (`event::session_id_ok`).
const SESSION_ID: &str = "^[A-Za-z0-9_-]{1,128}$";
/// An API error type as the host names them (`away::error_type_ok`).
const ERROR_TYPE: &str = "^[a-z][a-z0-9_]{0,63}$";
/// A full commit id: SHA-1 or SHA-256, lowercase hex.
const COMMIT_ID: &str = "^([0-9a-f]{40}|[0-9a-f]{64})$";
/// A run, lane or role name (`ledger::name_ok`): 1 to 64 ASCII letters, digits, `.`, `_` or
/// `-`; no leading `.` or `-`, no `..` anywhere, not ending with `.lock`.
const LEDGER_NAME: &str = r"^(?!-)(?!\.)(?![\s\S]*\.\.)(?![\s\S]*\.lock$)[A-Za-z0-9._-]{1,64}$";
/// A path the ledger records (its `check_path` bar the byte limit and the secret scan): not
/// empty, and no control character.
const LEDGER_PATH: &str = r"^[^\u0000-\u001F\u007F-\u009F]+$";
/// A word of a launched command: anything but a control character (it may be empty).
const COMMAND_WORD: &str = r"^[^\u0000-\u001F\u007F-\u009F]*$";
/// A ref of work saved aside: it starts with `refs/abcd/saved/` and holds no control
/// character.
const SAVED_REF: &str = r"^refs/abcd/saved/[^\u0000-\u001F\u007F-\u009F]*$";
/// A loop's signal (`phased::agent::check_signal` bar its byte limit): not empty, no white
/// space or control character.
const LOOP_SIGNAL: &str = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$";

/// `text` is `digits` ASCII digits.
fn digits(text: &str, n: usize) -> bool {
    text.len() == n && text.bytes().all(|c| c.is_ascii_digit())
}

/// The patterns the schemas use, each with the rule it stands for.
fn pattern_holds(pattern: &str, s: &str) -> bool {
    let hex = |n: usize| s.len() == n && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    let space_or_control = |c: char| c.is_control() || c.is_whitespace();
    match pattern {
        ONE_LINE_TEXT => {
            s.chars().next().is_some_and(|c| !space_or_control(c))
                && s.chars().next_back().is_some_and(|c| !space_or_control(c))
                && !s.chars().any(char::is_control)
        }
        PROMISE_ARROW => s.matches("=>").count() == 1 && !s.starts_with("=>") && !s.ends_with("=>"),
        OWNER_REF => !s.is_empty() && !s.starts_with('-') && !s.contains("..") && !s.chars().any(space_or_control),
        SLUG => {
            !s.is_empty()
                && s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                && !s.starts_with('-')
                && !s.ends_with('-')
                && !s.contains("--")
        }
        PULL_REQUEST => s
            .strip_prefix("pr:")
            .is_some_and(|n| (1..=12).contains(&n.len()) && n.bytes().all(|c| c.is_ascii_digit()) && !n.starts_with('0')),
        PERSON_OR_SLOT => s.strip_prefix("person:").or_else(|| s.strip_prefix("slot:")).is_some_and(|w| {
            (1..=200).contains(&w.len()) && w.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
        }),
        JIFF_INSTANT => {
            let t = s.strip_prefix("-00").unwrap_or(s);
            let Some(t) = t.strip_suffix('Z') else { return false };
            let (whole, fraction) = match t.split_once('.') {
                Some((w, f)) => (w, Some(f)),
                None => (t, None),
            };
            let b = whole.as_bytes();
            b.len() == 19
                && b.iter().enumerate().all(|(i, &c)| match i {
                    4 | 7 => c == b'-',
                    10 => c == b'T',
                    13 | 16 => c == b':',
                    _ => c.is_ascii_digit(),
                })
                && fraction.is_none_or(|f| (1..=9).contains(&f.len()) && digits(f, f.len()) && !f.ends_with('0'))
        }
        REFUSAL_WORD => !s.is_empty() && s.bytes().all(|c| c.is_ascii_lowercase() || matches!(c, b'_' | b'.')),
        TEXT_LINE => s.chars().any(|c| !space_or_control(c)) && !s.chars().any(char::is_control),
        BRANCH_NAME => {
            !s.is_empty()
                && s != "HEAD"
                && s != "@"
                && !s.starts_with('-')
                && !s.ends_with('.')
                && s.split('/').all(|part| !part.is_empty() && !part.starts_with('.') && !part.ends_with(".lock"))
                && !s.contains("..")
                && !s.contains("@{")
                && !s.chars().any(|c| space_or_control(c) || matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
        }
        SESSION_ID => (1..=128).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-')),
        ERROR_TYPE => {
            (1..=64).contains(&s.len())
                && s.as_bytes()[0].is_ascii_lowercase()
                && s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
        }
        COMMIT_ID => hex(40) || hex(64),
        LEDGER_NAME => {
            (1..=64).contains(&s.len())
                && s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
                && !s.starts_with('.')
                && !s.starts_with('-')
                && !s.contains("..")
                && !s.ends_with(".lock")
        }
        LEDGER_PATH => !s.is_empty() && !s.chars().any(char::is_control),
        COMMAND_WORD => !s.chars().any(char::is_control),
        SAVED_REF => s.starts_with("refs/abcd/saved/") && !s.chars().any(char::is_control),
        LOOP_SIGNAL => !s.is_empty() && !s.chars().any(space_or_control),
        // A promise's trigger as `checklist.promise_fired` records it (docs/promises.md).
        "^(pr:[1-9][0-9]{0,11} (merged|closed)|at [^\\s]+|(branch|ci):[^\\s]{1,200} (pushed|green))$" => {
            let word = |w: &str| !w.is_empty() && !w.chars().any(char::is_whitespace);
            match s.split_once(' ') {
                Some(("at", time)) => word(time),
                Some((subject, verb)) => match subject.split_once(':') {
                    Some(("pr", n)) => {
                        matches!(verb, "merged" | "closed")
                            && (1..=12).contains(&n.len())
                            && n.bytes().all(|c| c.is_ascii_digit())
                            && !n.starts_with('0')
                    }
                    Some(("branch", b)) => verb == "pushed" && word(b) && b.chars().count() <= 200,
                    Some(("ci", b)) => verb == "green" && word(b) && b.chars().count() <= 200,
                    _ => false,
                },
                None => false,
            }
        }
        // A variable's name, as `away.mode_refused` records a host's mark.
        "^[A-Z_][A-Z0-9_]{0,63}$" => {
            (1..=64).contains(&s.len())
                && !s.as_bytes()[0].is_ascii_digit()
                && s.bytes().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
        }
        "^[0-9a-f]{64}$" => hex(64),
        "^[0-9a-f]{32}$" => hex(32),
        // A secret kind's name (`SecretKind::name`): lowercase words joined by `_`.
        "^[a-z0-9_]{1,64}$" => (1..=64).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'),
        // Dotted lowercase words; the 64-byte cap is the schema's maxLength.
        "^[a-z_]+(\\.[a-z_]+)+$" => {
            s.contains('.') && s.split('.').all(|w| !w.is_empty() && w.bytes().all(|c| c.is_ascii_lowercase() || c == b'_'))
        }
        "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$" => {
            let b = s.as_bytes();
            b.len() == 24
                && b.iter().enumerate().all(|(i, &c)| match i {
                    4 | 7 => c == b'-',
                    10 => c == b'T',
                    13 | 16 => c == b':',
                    19 => c == b'.',
                    23 => c == b'Z',
                    _ => c.is_ascii_digit(),
                })
        }
        other => panic!("pattern {other:?} is not in this test's table; add it with the rule it stands for"),
    }
}

fn type_matches(name: &str, v: &Value) -> bool {
    match name {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        other => panic!("unknown type {other:?}"),
    }
}

/// Orders two JSON numbers exactly when both are integers (u64 bounds matter here).
fn cmp_numbers(a: &Number, b: &Number) -> std::cmp::Ordering {
    let as_i128 = |n: &Number| n.as_u64().map(i128::from).or_else(|| n.as_i64().map(i128::from));
    match (as_i128(a), as_i128(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => a.as_f64().unwrap().partial_cmp(&b.as_f64().unwrap()).unwrap(),
    }
}

/// Appends to `errors` every way `value` fails `schema`.
fn check(schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => return errors.push(format!("{at}: not allowed")),
            _ => panic!("{at}: a schema is an object or a boolean"),
        }
    };
    for (keyword, arg) in map {
        match keyword.as_str() {
            k if ANNOTATIONS.contains(&k) => {}
            "type" => {
                let names: Vec<&str> = match arg {
                    Value::String(s) => vec![s],
                    Value::Array(a) => a.iter().map(|t| t.as_str().unwrap()).collect(),
                    _ => panic!("{at}: bad type keyword"),
                };
                if !names.iter().any(|n| type_matches(n, value)) {
                    errors.push(format!("{at}: {value} is not of type {names:?}"));
                }
            }
            "const" => {
                if value != arg {
                    errors.push(format!("{at}: {value} is not {arg}"));
                }
            }
            "enum" => {
                if !arg.as_array().unwrap().contains(value) {
                    errors.push(format!("{at}: {value} is not one of {arg}"));
                }
            }
            "required" => {
                if let Some(obj) = value.as_object() {
                    for key in arg.as_array().unwrap() {
                        if !obj.contains_key(key.as_str().unwrap()) {
                            errors.push(format!("{at}: required key {key} is missing"));
                        }
                    }
                }
            }
            "properties" => {
                if let Some(obj) = value.as_object() {
                    for (key, sub) in arg.as_object().unwrap() {
                        if let Some(v) = obj.get(key) {
                            check(sub, v, &format!("{at}.{key}"), errors);
                        }
                    }
                }
            }
            "additionalProperties" => {
                let known: BTreeSet<&str> =
                    map.get("properties").and_then(Value::as_object).map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
                if let Some(obj) = value.as_object() {
                    for (key, v) in obj {
                        if !known.contains(key.as_str()) {
                            check(arg, v, &format!("{at}.{key} (an additional property)"), errors);
                        }
                    }
                }
            }
            "minimum" | "maximum" => {
                if let (Some(n), Some(bound)) = (value.as_number(), arg.as_number()) {
                    let order = cmp_numbers(n, bound);
                    let ok = if keyword == "minimum" { order.is_ge() } else { order.is_le() };
                    if !ok {
                        errors.push(format!("{at}: {n} is outside {keyword} {bound}"));
                    }
                }
            }
            "minProperties" => {
                if let Some(obj) = value.as_object()
                    && (obj.len() as u64) < arg.as_u64().unwrap()
                {
                    errors.push(format!("{at}: {} properties, fewer than minProperties {arg}", obj.len()));
                }
            }
            "items" => {
                if let Some(array) = value.as_array() {
                    for (i, v) in array.iter().enumerate() {
                        check(arg, v, &format!("{at}[{i}]"), errors);
                    }
                }
            }
            "maxItems" => {
                if let Some(array) = value.as_array()
                    && (array.len() as u64) > arg.as_u64().unwrap()
                {
                    errors.push(format!("{at}: {} items, more than maxItems {arg}", array.len()));
                }
            }
            "minItems" => {
                if let Some(array) = value.as_array()
                    && (array.len() as u64) < arg.as_u64().unwrap()
                {
                    errors.push(format!("{at}: {} items, fewer than minItems {arg}", array.len()));
                }
            }
            "allOf" => {
                for sub in arg.as_array().unwrap() {
                    check(sub, value, at, errors);
                }
            }
            "minLength" | "maxLength" => {
                if let Some(s) = value.as_str() {
                    let len = s.chars().count() as u64;
                    let bound = arg.as_u64().unwrap();
                    if (keyword == "minLength" && len < bound) || (keyword == "maxLength" && len > bound) {
                        errors.push(format!("{at}: length {len} is outside {keyword} {bound}"));
                    }
                }
            }
            "pattern" => {
                if let Some(s) = value.as_str()
                    && !pattern_holds(arg.as_str().unwrap(), s)
                {
                    errors.push(format!("{at}: {s:?} does not match {arg}"));
                }
            }
            "oneOf" => {
                let passing = arg
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|sub| {
                        let mut e = Vec::new();
                        check(sub, value, at, &mut e);
                        e.is_empty()
                    })
                    .count();
                if passing != 1 {
                    errors.push(format!("{at}: {value} matches {passing} of the oneOf schemas, not exactly one"));
                }
            }
            "if" => {
                let mut e = Vec::new();
                check(arg, value, at, &mut e);
                let branch = if e.is_empty() { map.get("then") } else { map.get("else") };
                if let Some(branch) = branch {
                    check(branch, value, at, errors);
                }
            }
            "then" | "else" => {} // evaluated with `if`
            other => panic!("{at}: keyword {other:?} is not evaluated by this test; extend it or drop the keyword"),
        }
    }
}

fn errors_of(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, value, "$", &mut errors);
    errors
}

// ---------------------------------------------------------------------------------------
// The vectors
// ---------------------------------------------------------------------------------------

/// Every vector's verified events in order, each with its line's JSON object.
fn verified_events() -> Vec<(String, Vec<(format::Event, Value)>)> {
    let dir = format_dir().join("vectors");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the vectors folder exists")
        .filter_map(|e| e.unwrap().file_name().to_str()?.strip_suffix(".jsonl").map(str::to_owned))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    let mut out = Vec::new();
    for name in names {
        let bytes = std::fs::read(dir.join(format!("{name}.jsonl"))).unwrap();
        let mut events = Vec::new();
        scan::scan(&BytesFile(bytes.clone()), StartPoint::GENESIS, |event, pos| {
            let line = &bytes[pos.offset as usize..(pos.offset + pos.len) as usize];
            events.push((event.clone(), serde_json::from_slice::<Value>(&line[..line.len() - 1]).unwrap()));
            Ok::<(), std::convert::Infallible>(())
        })
        .unwrap();
        out.push((name, events));
    }
    out
}

/// Every verified line of every vector, as `(vector, seq, the line's JSON object)`.
fn verified_lines() -> Vec<(String, u64, Value)> {
    verified_events()
        .into_iter()
        .flat_map(|(name, events)| events.into_iter().map(move |(event, line)| (name.clone(), event.seq, line)))
        .collect()
}

#[test]
fn every_verified_line_fits_the_envelope_schema() {
    let envelope = schema("event.schema.json");
    let lines = verified_lines();
    assert!(lines.len() > 100, "the vectors hold verified lines");
    for (name, seq, line) in &lines {
        let errors = errors_of(&envelope, line);
        assert!(errors.is_empty(), "{name} seq {seq}: {errors:#?}");
    }
}

/// The kind schemas in the folder: `<kind>.schema.json` for each kind whose data is defined.
fn kind_schemas() -> BTreeMap<String, Value> {
    std::fs::read_dir(format_dir().join("schema"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let kind = name.strip_suffix(".schema.json").filter(|k| *k != "event")?.to_string();
            Some((kind, schema(&name)))
        })
        .collect()
}

#[test]
fn every_verified_event_of_a_defined_kind_fits_its_data_schema() {
    let schemas = kind_schemas();
    let mut seen: BTreeMap<&str, u64> = BTreeMap::new();
    for (name, seq, line) in verified_lines() {
        let kind = line["kind"].as_str().unwrap();
        let Some((kind, schema)) = schemas.get_key_value(kind) else { continue };
        *seen.entry(kind.as_str()).or_default() += 1;
        let errors = errors_of(schema, &line["data"]);
        let decoded = event::decode(kind, &line["data"]);
        if name == "corrupt-genesis-bad-data" && seq == 0 {
            // The one vector whose genesis data is wrong on purpose: both must refuse it.
            assert!(!errors.is_empty(), "{name}: the schema accepts the bad genesis data");
            assert!(decoded.is_err(), "{name}: the code accepts the bad genesis data");
        } else {
            assert!(errors.is_empty(), "{name} seq {seq} ({kind}): {errors:#?}");
            assert!(decoded.is_ok(), "{name} seq {seq}: the code refuses data the schema accepts: {decoded:?}");
        }
    }
    assert!(
        seen.get(event::JOURNAL_OPENED) >= Some(&10) && seen.get(event::JOURNAL_REPAIRED) >= Some(&2),
        "the vectors exercise both journal schemas: {seen:?}"
    );
    assert!(
        seen.get(event::CHECKLIST_ITEM_ADDED) >= Some(&10) && seen.get(event::CHECKLIST_ITEM_CHANGED) >= Some(&3),
        "the vectors exercise the checklist schemas: {seen:?}"
    );
}

/// The vectors show real events: every verified event folds as abcd folds it, none of
/// them skipped (bar the genesis that is bad on purpose, and a change whose item's add a
/// salvage lost).
#[test]
fn every_verified_event_folds_without_being_skipped() {
    let mut folded_items = 0;
    for (name, events) in verified_events() {
        let mut state = FoldedState::default();
        for (event, _) in &events {
            if let FoldNote::Skipped(skipped) = fold::fold_event(&mut state, event) {
                // A salvaged vector may lose an item's add: the change after it is skipped
                // and says so (the rule, not a fault of the vector).
                let lost_add = name.starts_with("salvaged-") && skipped.reason.ends_with(fold::LOST_ADD_NOTE);
                assert!((name == "corrupt-genesis-bad-data" && skipped.seq == 0) || lost_add, "{name}: {skipped}");
            }
        }
        folded_items += state.checklist.items.len();
        if name == "decision-answered" {
            // The later answer replaces the earlier; the plain decision is no trade-off.
            let t = &state.away.tradeoffs;
            assert_eq!(t.len(), 1, "{name}: {t:?}");
            assert_eq!((t[0].seq, t[0].item.as_deref(), t[0].answer), (1, Some("choose-the-cache"), Some(away::Answer::Keep)), "{name}");
            assert_eq!(state.away.tied_to("/home/ana/src/shop", "choose-the-cache").count(), 1, "{name}");
        }
        if name == "valid" {
            let items = &state.checklist.items;
            assert_eq!(items.len(), 2, "valid: {items:?}");
            assert_eq!(items[0].fields.state, ItemState::Done);
            assert_eq!((&items[0].fields.waits_on, items[0].fields.next_look), (&None, None), "cleared by a present null");
            assert!(items[1].fields.credential.is_some());
        }
    }
    assert!(folded_items >= 20, "the vectors hold checklist items: {folded_items}");
}

/// The schemas name exactly the keys the code writes, and refuse what the code refuses.
#[test]
fn the_schemas_agree_with_the_code() {
    let opened = schema("journal.opened.schema.json");
    let repaired = schema("journal.repaired.schema.json");
    let envelope = schema("event.schema.json");

    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<BTreeSet<String>>();
    let r = JournalRepaired {
        cause: RepairCause::Corruption,
        from_offset: 1,
        to_offset: 2,
        lines: 1,
        quarantine_file: Some("corrupt-1-20261130T060000000Z.bin".into()),
        quarantine_blake3: Some("ab".repeat(32)),
        anchor_seq: None,
        anchor_hash: None,
        problem: "p".into(),
        lost_from: None,
        lost_to: None,
        next_prev: None,
    };
    let written = serde_json::to_value(&r).unwrap();
    let gap_keys: BTreeSet<String> = ["lost_from", "lost_to", "next_prev"].map(String::from).into();
    assert_eq!(keys(&written), &keys(&repaired["properties"]) - &gap_keys, "journal.repaired keys of a record that is no gap");
    assert!(errors_of(&repaired, &written).is_empty());
    let gap = JournalRepaired { lost_from: Some(7), lost_to: Some(9), next_prev: Some("cd".repeat(32)), ..r.clone() };
    let written = serde_json::to_value(&gap).unwrap();
    assert_eq!(keys(&written), keys(&repaired["properties"]), "journal.repaired keys of a gap record");
    assert!(errors_of(&repaired, &written).is_empty());
    let scopes = [Scope::WorkingCopy { root: "/w".into() }, Scope::Repository { root_commit: "ab".repeat(20) }, Scope::Machine {}];
    for scope in scopes {
        let written = serde_json::to_value(JournalOpened { journal_id: "0123456789abcdef".repeat(2), scope }).unwrap();
        assert_eq!(keys(&written), keys(&opened["properties"]), "journal.opened keys");
        assert!(errors_of(&opened, &written).is_empty(), "{written}: {:?}", errors_of(&opened, &written));
    }

    // journal.moved (issue 31): the keys abcd writes are the schema's, and what one refuses
    // the other does.
    let moved_schema = schema("journal.moved.schema.json");
    let written = serde_json::to_value(event::JournalMoved { from: "/a".into(), to: "/b".into() }).unwrap();
    assert_eq!(keys(&written), keys(&moved_schema["properties"]), "journal.moved keys");
    for (data, takes) in [
        (written.clone(), true),
        (json!({"from": "/a"}), false),
        (json!({"to": "/b"}), false),
        (json!({"from": "/a", "to": "/b", "why": "x"}), false),
        (json!({"from": 1, "to": "/b"}), false),
    ] {
        assert_eq!(event::decode(event::JOURNAL_MOVED, &data).is_ok(), takes, "the code on {data}");
        assert_eq!(errors_of(&moved_schema, &data).is_empty(), takes, "the schema on {data}");
    }
    // What the schema cannot say, the fold checks: a move names the root the journal names,
    // in a working copy's journal.
    assert!(folds(working_copy_scope(), &[], event::JOURNAL_MOVED, &json!({"from": "/home/ana/src/shop", "to": "/b"})).is_ok());
    assert!(folds(working_copy_scope(), &[], event::JOURNAL_MOVED, &json!({"from": "/elsewhere", "to": "/b"})).is_err());
    assert!(folds(repository_scope(), &[], event::JOURNAL_MOVED, &json!({"from": "/a", "to": "/b"})).is_err());

    // Things both the code and the schema refuse.
    let id = "0123456789abcdef".repeat(2);
    let refused_opened = [
        json!({"journal_id": id}),
        json!({"scope": {"kind": "machine"}}),
        json!({"journal_id": id.to_uppercase(), "scope": {"kind": "machine"}}),
        json!({"journal_id": &id[..30], "scope": {"kind": "machine"}}),
        json!({"journal_id": id, "scope": {"kind": "machine"}, "extra": 1}),
        json!({"journal_id": id, "scope": {"kind": "working_copy"}}),
        json!({"journal_id": id, "scope": {"kind": "working_copy", "root": "/w", "x": 1}}),
        json!({"journal_id": id, "scope": {"kind": "galaxy"}}),
    ];
    for data in refused_opened {
        assert!(event::decode(event::JOURNAL_OPENED, &data).is_err(), "the code accepts {data}");
        assert!(!errors_of(&opened, &data).is_empty(), "the schema accepts {data}");
    }
    let good = serde_json::to_value(&r).unwrap();
    let mut refused_repaired = vec![];
    for key in ["cause", "from_offset", "to_offset", "lines", "problem"] {
        let mut d = good.clone();
        d.as_object_mut().unwrap().remove(key);
        refused_repaired.push(d);
    }
    for (key, bad) in
        [("cause", json!("oops")), ("lines", json!(-1)), ("from_offset", json!("1")), ("anchor_seq", json!("x")), ("extra", json!(1))]
    {
        let mut d = good.clone();
        d[key] = bad;
        refused_repaired.push(d);
    }
    for data in refused_repaired {
        assert!(event::decode(event::JOURNAL_REPAIRED, &data).is_err(), "the code accepts {data}");
        assert!(!errors_of(&repaired, &data).is_empty(), "the schema accepts {data}");
    }
    // Nullable keys may be absent for the reader.
    let mut sparse = good.clone();
    for key in ["quarantine_file", "quarantine_blake3", "anchor_seq", "anchor_hash"] {
        sparse.as_object_mut().unwrap().remove(key);
    }
    assert!(event::decode(event::JOURNAL_REPAIRED, &sparse).is_ok());
    assert!(errors_of(&repaired, &sparse).is_empty());

    // The envelope: the lines of a vector with one field changed, as the code judges them.
    let line = verified_lines().into_iter().find(|(n, s, _)| n == "valid" && *s == 2).unwrap().2;
    let changed = |key: &str, v: Value| {
        let mut l = line.clone();
        l[key] = v;
        l
    };
    let mut refused_lines = vec![
        changed("v", json!(2)),
        changed("seq", json!(-1)),
        changed("time", json!("2026-11-30T06:00:00Z")),
        changed("kind", json!("Checklist.x")),
        changed("kind", json!("nodot")),
        changed("kind", json!(format!("a.{}", "b".repeat(63)))),
        changed("kind", json!("journal.opened")),
        changed("data", json!([])),
        changed("prev", json!("AB".repeat(32))),
        changed("hash", json!("ab".repeat(31))),
        changed("actor", json!({"pid": 1, "tool": "t", "x": 1})),
        changed("actor", json!({"session": null, "tool": "t"})),
        changed("actor", json!({"session": null, "pid": 4294967296u64, "tool": "t"})),
        changed("extra", json!(true)),
    ];
    let frame = |l: &Value| {
        let mut fields = l.clone();
        fields.as_object_mut().unwrap().remove("hash");
        let mut body = serde_json::to_string(&fields).unwrap();
        assert_eq!(body.pop(), Some('}'));
        format!("{body},\"hash\":\"{}\"}}\n", format::hash_body(body.as_bytes()))
    };
    // The framing below is sound: the unchanged line, framed this way, verifies.
    assert!(format::verify_line(frame(&line).as_bytes()).is_ok());
    let mut no_data = line.clone();
    no_data.as_object_mut().unwrap().remove("data");
    refused_lines.push(no_data);
    for l in refused_lines {
        assert!(!errors_of(&envelope, &l).is_empty(), "the schema accepts {l}");
        // Framed as a line whose hash is right, the code refuses it too (unless what is
        // wrong is the hash itself, which the code checks by bytes before any JSON).
        if l["hash"].as_str().is_some_and(|h| h.len() == 64) {
            let framed = frame(&l);
            assert!(format::verify_line(framed.as_bytes()).is_err(), "the code accepts {framed}");
        }
    }
    let genesis_line = verified_lines().into_iter().find(|(n, s, _)| n == "valid" && *s == 0).unwrap().2;
    let mut genesis_later = genesis_line.clone();
    genesis_later["seq"] = json!(5);
    assert!(!errors_of(&envelope, &genesis_later).is_empty(), "journal.opened is only ever seq 0");
    let mut other_first = line.clone();
    other_first["seq"] = json!(0);
    assert!(!errors_of(&envelope, &other_first).is_empty(), "seq 0 is only ever journal.opened");
}

/// The envelope schema and one schema per kind, each named after a v1 kind; at least the
/// two kinds whose data the journal itself defines and the three checklist kinds.
#[test]
fn the_schema_folder_holds_what_it_should() {
    let found: BTreeSet<String> =
        std::fs::read_dir(format_dir().join("schema")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    for must in [
        "event.schema.json",
        "journal.opened.schema.json",
        "journal.repaired.schema.json",
        "checklist.item_added.schema.json",
        "checklist.item_changed.schema.json",
        "checklist.write_refused.schema.json",
    ] {
        assert!(found.contains(must), "{must} is missing");
    }
    for name in &found {
        let kind = name.strip_suffix(".schema.json").unwrap_or_else(|| panic!("{name}: the folder holds only <kind>.schema.json files"));
        assert!(kind == "event" || event::is_v1_kind(kind), "{name}: {kind} is not a v1 kind");
    }
}

// ---------------------------------------------------------------------------------------
// The checklist kinds
// ---------------------------------------------------------------------------------------

fn at(text: &str) -> jiff::Timestamp {
    text.parse().expect("a valid time")
}

/// An item with every field set.
fn full_item() -> ItemFields {
    ItemFields {
        id: "ship-the-parser".into(),
        title: "Ship the parser".into(),
        state: ItemState::Waiting,
        waits_on: Some("pr:12".into()),
        next_look: Some(at("2026-12-01T09:00:00Z")),
        promise: Some("CI green => merge".into()),
        owner_refs: vec!["abcd/ship-the-parser".into(), "pr:12".into()],
        credential: Some(Credential { kind: "github_token".into(), scope: "repo".into(), expiry: Some(at("2027-01-31T00:00:00.25Z")) }),
        blocker: Some(BlockerKind::Decision),
    }
}

/// A change of every field.
fn full_changes() -> ChangeSet {
    ChangeSet {
        title: Some("Ship the new parser".into()),
        state: Some(ItemState::Working),
        waits_on: Some(Some("person:reviewer".into())),
        next_look: Some(Some(at("2026-12-02T09:00:00Z"))),
        promise: Some(Some("review approved => merge".into())),
        owner_refs: Some(vec!["abcd/ship-the-parser".into()]),
        credential: Some(Some(Credential { kind: "api_key".into(), scope: "read".into(), expiry: None })),
        blocker: Some(Some(BlockerKind::Hands)),
    }
}

/// What the code does with `data` of `checklist.item_added`: decoded, then validated and
/// scanned as the fold does (`Err` names why it is refused).
fn code_takes_added(data: &Value) -> Result<(), String> {
    let event::Known::ItemAdded(added) = event::decode(event::CHECKLIST_ITEM_ADDED, data).map_err(|e| e.to_string())? else {
        unreachable!()
    };
    fold::checklist::check_item(&added.item).map_err(|r| format!("{:?}: {}", r.field, r.reason))
}

/// The same for `checklist.item_changed`, applied to `full_item()` (whose id stands for
/// any item the journal holds: a well-formed id).
fn code_takes_changed(data: &Value) -> Result<(), String> {
    let event::Known::ItemChanged(changed) = event::decode(event::CHECKLIST_ITEM_CHANGED, data).map_err(|e| e.to_string())? else {
        unreachable!()
    };
    item::validate_id(&changed.id).map_err(|e| e.to_string())?;
    if changed.changes.is_empty() {
        return Err("changes nothing".into());
    }
    let mut base = full_item();
    base.id = changed.id.clone();
    fold::checklist::check_item(&changed.changes.apply_to(&base)).map_err(|r| format!("{:?}: {}", r.field, r.reason))
}

fn code_takes_refused(data: &Value) -> Result<(), String> {
    let event::Known::WriteRefused(refused) = event::decode(event::CHECKLIST_WRITE_REFUSED, data).map_err(|e| e.to_string())? else {
        unreachable!()
    };
    if fold::checklist::refusal_is_clean(&refused) { Ok(()) } else { Err("not clean".into()) }
}

/// Asserts that the schema and the code both take `data`, or both refuse it.
fn agree(schema: &Value, code: impl Fn(&Value) -> Result<(), String>, data: &Value, takes: bool) {
    let errors = errors_of(schema, data);
    let by_code = code(data);
    assert_eq!(errors.is_empty(), takes, "the schema {} {data}: {errors:?}", if takes { "refuses" } else { "accepts" });
    assert_eq!(by_code.is_ok(), takes, "the code {} {data}: {by_code:?}", if takes { "refuses" } else { "accepts" });
}

fn without(v: &Value, key: &str) -> Value {
    let mut v = v.clone();
    v.as_object_mut().unwrap().remove(key);
    v
}

fn with(v: &Value, key: &str, x: Value) -> Value {
    let mut v = v.clone();
    v[key] = x;
    v
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect()
}

/// The schemas name exactly the keys and the fixed lists the code has, and take what the
/// code takes.
#[test]
fn the_checklist_schemas_agree_with_the_code() {
    let added = schema("checklist.item_added.schema.json");
    let changed = schema("checklist.item_changed.schema.json");
    let refused = schema("checklist.write_refused.schema.json");
    let item_schema = &added["properties"]["item"];
    let changes_schema = &changed["properties"]["changes"];
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<BTreeSet<String>>();

    // Keys: what the code writes, with every field set.
    let written = serde_json::to_value(ItemAdded { item: full_item() }).unwrap();
    assert_eq!(keys(&written), keys(&added["properties"]), "checklist.item_added keys");
    assert_eq!(keys(&written["item"]), keys(&item_schema["properties"]), "item keys");
    assert_eq!(keys(&written["item"]["credential"]), keys(&item_schema["properties"]["credential"]["properties"]), "credential keys");
    agree(&added, code_takes_added, &written, true);
    let written = serde_json::to_value(ItemChanged { id: "ship-the-parser".into(), changes: full_changes() }).unwrap();
    assert_eq!(keys(&written), keys(&changed["properties"]), "checklist.item_changed keys");
    assert_eq!(keys(&written["changes"]), keys(&changes_schema["properties"]), "changes keys");
    agree(&changed, code_takes_changed, &written, true);
    let written = serde_json::to_value(WriteRefused { verb: "add".into(), field: "title".into(), kind: "github_token".into() }).unwrap();
    assert_eq!(keys(&written), keys(&refused["properties"]), "checklist.write_refused keys");
    agree(&refused, code_takes_refused, &written, true);

    // The fixed lists.
    let props = &item_schema["properties"];
    assert_eq!(strings(&props["state"]["enum"]), ItemState::ALL.map(ItemState::name), "states");
    assert_eq!(strings(&props["credential"]["properties"]["kind"]["enum"]), item::CREDENTIAL_KINDS, "credential kinds");
    assert_eq!(strings(&props["credential"]["properties"]["scope"]["enum"]), item::CREDENTIAL_SCOPES, "credential scopes");
    let blockers: Vec<Value> = BlockerKind::ALL.iter().map(|k| json!(k.name())).chain([Value::Null]).collect();
    assert_eq!(props["blocker"]["enum"], json!(blockers), "blocker kinds, and null");
    assert_eq!(props["owner_refs"]["maxItems"], json!(item::OWNER_REFS_MAX));
    assert_eq!(props["id"]["maxLength"], json!(item::ID_MAX_BYTES));
    assert_eq!(props["title"]["maxLength"], json!(item::TITLE_MAX_CHARS));
    assert_eq!(props["promise"]["maxLength"], json!(item::PROMISE_MAX_CHARS));
    assert_eq!(props["owner_refs"]["items"]["maxLength"], json!(item::REF_MAX_CHARS));
    // Every field the scanner can name, as a refusal record names it, and every pattern kind.
    let fields = strings(&refused["properties"]["field"]["enum"]);
    for (field, _) in item::scannable_fields(&full_item()) {
        let recorded = field.replace('.', "_");
        assert!(fields.contains(&recorded.as_str()), "write_refused.field lacks {recorded}");
    }
    for kind in SecretKind::ALL {
        let data = json!({"verb": "add", "field": "title", "kind": kind.name()});
        agree(&refused, code_takes_refused, &data, true);
    }

    // A change's field is the item's field (bar the description).
    let plain = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("description");
        v
    };
    for (key, sub) in changes_schema["properties"].as_object().unwrap() {
        assert_eq!(plain(sub), plain(&props[key.as_str()]), "changes.{key} and item.{key} differ");
    }

    // checklist.item_added: what both take and both refuse.
    let good = serde_json::to_value(ItemAdded { item: full_item() }).unwrap();
    let sparse = json!({"item": {"id": "a", "title": "A", "state": "dropped"}});
    agree(&added, code_takes_added, &sparse, true);
    let item_with = |key: &str, v: Value| {
        let mut d = good.clone();
        d["item"][key] = v;
        d
    };
    for (key, v) in [
        ("title", json!("é".repeat(200))),
        ("title", json!("a\u{2028}b \u{a0}c")),
        ("waits_on", json!("fix-login")),
        ("waits_on", json!("person:reviewer")),
        ("waits_on", json!("slot:ci")),
        ("waits_on", json!(null)),
        ("promise", json!("a==>b")),
        ("promise", json!(null)),
        ("owner_refs", json!(vec!["r"; 32])),
        ("owner_refs", json!([])),
        ("next_look", json!(null)),
        ("next_look", json!("2026-12-01T09:00:00.123456789Z")),
        ("credential", json!(null)),
        ("credential", json!({"kind": "other", "scope": "personal"})),
        ("blocker", json!("session")),
        ("blocker", json!("credential")),
        ("blocker", json!(null)),
    ] {
        agree(&added, code_takes_added, &item_with(key, v), true);
    }
    let mut both_refuse = vec![without(&good, "item"), with(&good, "extra", json!(1)), item_with("extra", json!(1)), json!({"item": null})];
    for key in ["id", "title", "state"] {
        let mut d = good.clone();
        d["item"] = without(&d["item"], key);
        both_refuse.push(d);
    }
    for (key, v) in [
        ("id", json!("")),
        ("id", json!("Fix-it")),
        ("id", json!("a--b")),
        ("id", json!("-a")),
        ("id", json!("a".repeat(49))),
        ("title", json!("")),
        ("title", json!("a".repeat(201))),
        ("title", json!("two\nlines")),
        ("title", json!("tab\there")),
        ("title", json!(" padded")),
        ("title", json!("padded\u{3000}")),
        ("title", json!(7)),
        ("state", json!("open")),
        ("state", json!(null)),
        ("waits_on", json!("team:x")),
        ("waits_on", json!("pr:01")),
        ("waits_on", json!("pr:1234567890123")),
        ("waits_on", json!("person:")),
        ("waits_on", json!("slot:a b")),
        ("waits_on", json!("Fix Login")),
        ("promise", json!("no arrow")),
        ("promise", json!("a => b => c")),
        ("promise", json!("=> act")),
        ("promise", json!("trigger =>")),
        ("promise", json!(format!("{} => b", "a".repeat(400)))),
        ("owner_refs", json!(vec!["r"; 33])),
        ("owner_refs", json!(["a b"])),
        ("owner_refs", json!(["a..b"])),
        ("owner_refs", json!(["-x"])),
        ("owner_refs", json!([""])),
        ("owner_refs", json!(null)),
        ("owner_refs", json!("abcd/x")),
        ("next_look", json!("tomorrow")),
        ("next_look", json!(1_700_000_000)),
        ("credential", json!({"kind": "password", "scope": "read"})),
        ("credential", json!({"kind": "api_key", "scope": "everything"})),
        ("credential", json!({"kind": "api_key", "scope": "read", "value": "x"})),
        ("credential", json!({"kind": "api_key"})),
        ("credential", json!({"kind": "api_key", "scope": "read", "expiry": "soon"})),
        ("credential", json!("api_key")),
        ("blocker", json!("person")),
        ("blocker", json!("Decision")),
        ("blocker", json!("")),
        ("blocker", json!(["hands"])),
    ] {
        both_refuse.push(item_with(key, v));
    }
    for data in &both_refuse {
        agree(&added, code_takes_added, data, false);
    }

    // checklist.item_changed.
    for changes in [
        json!({"title": "New title"}),
        json!({"state": "done"}),
        json!({"waits_on": null}),
        json!({"waits_on": "slot:ci"}),
        json!({"next_look": null}),
        json!({"promise": null}),
        json!({"credential": null}),
        json!({"owner_refs": []}),
        json!({"blocker": null}),
        json!({"blocker": "hands"}),
    ] {
        agree(&changed, code_takes_changed, &json!({"id": "ship-the-parser", "changes": changes}), true);
    }
    let good = json!({"id": "ship-the-parser", "changes": {"state": "done"}});
    let mut both_refuse = vec![without(&good, "id"), without(&good, "changes"), with(&good, "extra", json!(1))];
    for id in [json!("Ship"), json!(""), json!(null)] {
        both_refuse.push(with(&good, "id", id));
    }
    for changes in [
        json!({}),
        json!({"title": null}),
        json!({"state": null}),
        json!({"owner_refs": null}),
        json!({"extra": 1}),
        json!({"title": ""}),
        json!({"title": "a\nb"}),
        json!({"state": "open"}),
        json!({"waits_on": "team:x"}),
        json!({"next_look": "later"}),
        json!({"promise": "no arrow"}),
        json!({"owner_refs": ["a b"]}),
        json!({"credential": {"kind": "api_key", "scope": "read", "value": "x"}}),
        json!({"blocker": "everything"}),
        json!([]),
    ] {
        both_refuse.push(with(&good, "changes", changes));
    }
    for data in &both_refuse {
        agree(&changed, code_takes_changed, data, false);
    }

    // checklist.write_refused.
    let good = json!({"verb": "set", "field": "credential_scope", "kind": "password_assignment"});
    agree(&refused, code_takes_refused, &good, true);
    let mut both_refuse = vec![with(&good, "value", json!("x"))];
    for key in ["verb", "field", "kind"] {
        both_refuse.push(without(&good, key));
        both_refuse.push(with(&good, key, json!(1)));
    }
    for kind in ["", "GitHub token", "ghp-x", &"a".repeat(65)] {
        both_refuse.push(with(&good, "kind", json!(kind)));
    }
    for data in &both_refuse {
        agree(&refused, code_takes_refused, data, false);
    }
    // Where the schema is stricter: it names the verbs and fields writers write; the fold
    // takes any clean word there.
    for (key, word) in [("verb", "drop"), ("field", "credential.kind"), ("field", "notes")] {
        let data = with(&good, key, json!(word));
        assert!(!errors_of(&refused, &data).is_empty() && code_takes_refused(&data).is_ok(), "{data}");
    }

    // What no schema can say: a field that carries a secret. The schema takes it, the fold
    // does not (and neither does the writer).
    let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0".repeat(2).get(..36).unwrap());
    assert!(secrets::scan(&token).is_some(), "the scanner flags the sample token");
    let mut secret = full_item();
    secret.title = format!("Rotate {token}");
    let data = serde_json::to_value(ItemAdded { item: secret }).unwrap();
    assert!(errors_of(&added, &data).is_empty());
    let refusal = code_takes_added(&data).unwrap_err();
    assert!(refusal.contains("github_token") && !refusal.contains(&token), "{refusal}");
}

/// A small deterministic generator (no randomness crate): a 64-bit LCG.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// Each field rule the schemas state with patterns and lengths is exactly the code's rule:
/// on strings built from the characters the rules turn on, schema and code agree on every one.
#[test]
fn the_field_patterns_are_the_codes_rules() {
    let added = schema("checklist.item_added.schema.json");
    let refused = schema("checklist.write_refused.schema.json");
    let props = &added["properties"]["item"]["properties"];
    type Rule = fn(&str) -> bool;
    let rules: [(&str, &Value, Rule); 6] = [
        ("id", &props["id"], |s| item::validate_id(s).is_ok()),
        ("title", &props["title"], |s| item::validate_title(s).is_ok()),
        ("waits_on", &props["waits_on"], |s| item::validate_waits_on(s).is_ok()),
        ("promise", &props["promise"], |s| item::validate_promise(s).is_ok()),
        ("owner ref", &props["owner_refs"]["items"], |s| item::validate_owner_ref(s).is_ok()),
        ("refusal word", &refused["properties"]["kind"], |s| {
            fold::checklist::refusal_is_clean(&WriteRefused { verb: "add".into(), field: "title".into(), kind: s.into() })
        }),
    ];
    const PIECES: &[&str] = &[
        "a",
        "z",
        "0",
        "9",
        "1",
        "A",
        "-",
        "_",
        ".",
        "..",
        ":",
        "pr:",
        "person:",
        "slot:",
        "=",
        ">",
        "=>",
        " ",
        "\t",
        "\n",
        "\r",
        "\u{0}",
        "\u{7f}",
        "\u{85}",
        "\u{a0}",
        "\u{2028}",
        "\u{3000}",
        "\u{feff}",
        "\u{200b}",
        "é",
        "✓",
        "\u{1F600}",
    ];
    let mut samples: Vec<String> = vec![String::new()];
    for n in [47, 48, 49, 199, 200, 201, 395, 396, 397, 399, 400, 401] {
        for piece in ["a", "é", "\u{1F600}"] {
            samples.push(piece.repeat(n));
            samples.push(format!("pr:{}", "1".repeat(n.min(14))));
            samples.push(format!("person:{}", piece.repeat(n)));
            samples.push(format!("a => {}", piece.repeat(n)));
        }
    }
    let mut lcg = Lcg(0x5eed);
    for _ in 0..40_000 {
        let len = lcg.below(9);
        samples.push((0..len).map(|_| PIECES[lcg.below(PIECES.len())]).collect());
    }
    let mut taken = BTreeMap::<&str, usize>::new();
    for s in &samples {
        for (name, sub, rule) in &rules {
            let by_schema = errors_of(sub, &json!(s)).is_empty();
            assert_eq!(by_schema, rule(s), "{name} {s:?}: the schema says {by_schema}");
            *taken.entry(name).or_default() += usize::from(by_schema);
        }
    }
    // The samples reach both sides of every rule.
    for (name, _, _) in &rules {
        assert!(taken[name] >= 20 && taken[name] + 20 <= samples.len(), "{name}: {} of {} taken", taken[name], samples.len());
    }

    // Times: every instant as jiff writes it fits; forms jiff reads but never writes do not.
    let time_schema = &props["next_look"];
    assert_eq!(&props["credential"]["properties"]["expiry"]["pattern"], &time_schema["pattern"]);
    let mut instants = vec![jiff::Timestamp::MIN, jiff::Timestamp::MAX, jiff::Timestamp::UNIX_EPOCH];
    for seconds in [-86_400 * 800_000, -1, 0, 1_796_000_000, 253_402_207_199] {
        for nanos in [0, 1, 10, 100_000, 500_000_000, 123_456_789, 999_999_999] {
            instants.push(jiff::Timestamp::new(seconds, nanos).unwrap());
        }
    }
    for t in instants {
        let v = serde_json::to_value(t).unwrap();
        assert!(errors_of(time_schema, &v).is_empty(), "{v}: {:?}", errors_of(time_schema, &v));
        assert_eq!(serde_json::from_value::<jiff::Timestamp>(v).unwrap(), t);
    }
    for read_not_written in ["2026-12-01T09:00:00.000Z", "2026-12-01T10:00:00+01:00", "2026-12-01t09:00:00z", "2026-12-01T09:00Z"] {
        assert!(!errors_of(time_schema, &json!(read_not_written)).is_empty(), "{read_not_written}");
    }
}

// ---------------------------------------------------------------------------------------
// The session and away kinds
// ---------------------------------------------------------------------------------------

/// Every kind `event::decode` reads into a typed value (not `Known::Unfolded`) has its
/// `<kind>.schema.json`. `Unfolded` does not look at the data, so an empty object tells
/// the two apart: a typed kind refuses it (each has a required key) or reads it.
/// `checklist.promise_fired`: after an item whose promise is `pr:7 merged => add the
/// wrapper`, the schema and the fold take the same records and refuse the same.
#[test]
fn the_promise_fired_schema_agrees_with_the_code() {
    let fired = schema("checklist.promise_fired.schema.json");
    let promising = ItemFields { promise: Some("pr:7 merged => add the wrapper".into()), ..ItemFields::working("1", "Land pr 7") };
    let before = [(event::CHECKLIST_ITEM_ADDED, json!(ItemAdded { item: promising }))];
    let code = |data: &Value| folds(working_copy_scope(), &before, event::CHECKLIST_PROMISE_FIRED, data);
    let next = ItemFields { owner_refs: vec!["pr:7".into()], ..ItemFields::working("2", "add the wrapper") };
    let good = json!(event::PromiseFired { id: "1".into(), trigger: "pr:7 merged".into(), item: next });
    assert_eq!(keys_of(&good), keys_of(&fired["properties"]), "checklist.promise_fired keys");
    assert_eq!(keys_of(&good["item"]), keys_of(&fired["properties"]["item"]["properties"]), "the item's keys");
    agree(&fired, code, &good, true);
    for key in ["id", "trigger", "item"] {
        agree(&fired, code, &without(&good, key), false);
    }
    agree(&fired, code, &with(&good, "extra", json!(1)), false);
    agree(&fired, code, &with(&good, "id", json!("Not A Slug")), false);
    agree(&fired, code, &with(&good, "trigger", json!("pr:7 approved")), false);
    agree(&fired, code, &with(&good, "trigger", json!("pr:07 merged")), false);
    agree(&fired, code, &set_at(&good, &["item", "state"], json!("waiting")), false);
    agree(&fired, code, &set_at(&good, &["item", "id"], json!("Not A Slug")), false);
    agree(&fired, code, &set_at(&good, &["item", "title"], json!("")), false);
    // What the schema cannot say, the fold checks: the trigger is the promise's own.
    assert!(errors_of(&fired, &with(&good, "trigger", json!("pr:8 merged"))).is_empty());
    assert!(code(&with(&good, "trigger", json!("pr:8 merged"))).is_err());
    assert!(code(&with(&good, "id", json!("9"))).is_err());
    assert!(code(&set_at(&good, &["item", "id"], json!("1"))).is_err(), "the new item's id is the promising one's");
}

#[test]
fn every_kind_the_fold_decodes_has_a_schema() {
    let schemas = kind_schemas();
    let typed: Vec<&str> =
        event::V1_KINDS.iter().copied().filter(|kind| !matches!(event::decode(kind, &json!({})), Ok(event::Known::Unfolded))).collect();
    assert!(typed.len() >= 15, "the probe finds the kinds this build folds: {typed:?}");
    for kind in typed {
        assert!(schemas.contains_key(kind), "{kind} is folded but journal-format/schema/{kind}.schema.json is missing");
    }
}

fn hex_of(n: usize, seed: u64) -> String {
    let mut lcg = Lcg(seed);
    (0..n).map(|_| char::from(b"0123456789abcdef"[lcg.below(16)])).collect()
}

/// What the fold does with one event of `kind` carrying `data`, in a journal of `scope`
/// that holds the events `before` first (each of which must fold): `Ok` when folded, `Err`
/// naming why it was skipped.
fn folds(scope: Scope, before: &[(&str, Value)], kind: &str, data: &Value) -> Result<(), String> {
    let genesis = serde_json::to_value(JournalOpened { journal_id: "0123456789abcdef".repeat(2), scope }).unwrap();
    let events = std::iter::once((event::JOURNAL_OPENED, &genesis)).chain(before.iter().map(|(k, d)| (*k, d))).chain([(kind, data)]);
    let mut state = FoldedState::default();
    let mut prev = format::Hash([0; 32]);
    let mut last = FoldNote::Folded;
    for (seq, (kind, data)) in events.enumerate() {
        let hash = format::Hash([seq as u8 + 1; 32]);
        let event = format::Event {
            seq: seq as u64,
            time: jiff::Timestamp::new(1_796_000_000 + seq as i64, 0).unwrap(),
            kind: kind.into(),
            actor: format::Actor::this_process(None),
            data: data.clone(),
            prev,
            hash,
        };
        last = fold::fold_event(&mut state, &event);
        assert!(seq == before.len() + 1 || last == FoldNote::Folded, "{kind} before the event under test: {last:?}");
        prev = hash;
    }
    match last {
        FoldNote::Folded => Ok(()),
        FoldNote::Skipped(s) => Err(format!("{:?}: {}", s.field, s.reason)),
        other => panic!("{kind}: {other:?}"),
    }
}

fn working_copy_scope() -> Scope {
    Scope::WorkingCopy { root: "/home/ana/src/shop".into() }
}

fn repository_scope() -> Scope {
    Scope::Repository { root_commit: "ab".repeat(20) }
}

/// What the code takes as `data` of a working copy journal's `kind`.
fn in_working_copy(kind: &'static str) -> impl Fn(&Value) -> Result<(), String> {
    move |data| folds(working_copy_scope(), &[], kind, data)
}

/// A valid window, as `abcd mode autonomous` writes it: the start rounded to the second.
fn window() -> AwaySet {
    AwaySet {
        set_by: "Ana Lima".into(),
        working_copy: "/home/ana/src/shop".into(),
        start: at("2026-11-30T06:00:00Z"),
        end: at("2026-12-07T05:59:59.5Z"),
        hold_pushes: true,
        notify: None,
    }
}

/// What the code takes as `data` of a repository journal's `kind`, with a window open.
fn in_repository(kind: &'static str) -> impl Fn(&Value) -> Result<(), String> {
    move |data| folds(repository_scope(), &[(event::AWAY_SET, serde_json::to_value(window()).unwrap())], kind, data)
}

/// The keys of an object.
fn keys_of(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

/// `data` with the string at `path` (keys, outermost first) replaced.
fn set_at(data: &Value, path: &[&str], x: Value) -> Value {
    let mut d = data.clone();
    let mut at = &mut d;
    for key in path {
        at = &mut at[*key];
    }
    *at = x;
    d
}

/// Every `Row`, in order: the match fails to compile when a variant is added, and the
/// assertion fails when the array leaves one out.
fn every_row() -> Vec<Row> {
    let index = |r: Row| match r {
        Row::Question => 0,
        Row::OwedChanged => 1,
        Row::WakeReleased => 2,
        Row::WakesSpent => 3,
        Row::NoWake => 4,
        Row::NothingOwedWake => 5,
        Row::NothingOwedNoWake => 6,
        Row::PresentOwed => 7,
        Row::PresentNothingOwed => 8,
        Row::Behind => 9,
        Row::LoopTurn => 10,
    };
    let all = [
        Row::Question,
        Row::OwedChanged,
        Row::WakeReleased,
        Row::WakesSpent,
        Row::NoWake,
        Row::NothingOwedWake,
        Row::NothingOwedNoWake,
        Row::PresentOwed,
        Row::PresentNothingOwed,
        Row::Behind,
        Row::LoopTurn,
    ];
    assert!(all.iter().enumerate().all(|(i, r)| index(*r) == i));
    all.to_vec()
}

fn every_stop_state() -> Vec<StopState> {
    let index = |s: StopState| match s {
        StopState::Working => 0,
        StopState::Waiting => 1,
        StopState::Stopped => 2,
    };
    let all = [StopState::Working, StopState::Waiting, StopState::Stopped];
    assert!(all.iter().enumerate().all(|(i, s)| index(*s) == i));
    all.to_vec()
}

fn every_stop_label() -> Vec<StopLabel> {
    let index = |l: StopLabel| match l {
        StopLabel::WorkOwed => 0,
        StopLabel::NoNextLook => 1,
        StopLabel::ApiError => 2,
        StopLabel::CheckIncomplete => 3,
    };
    let all = [StopLabel::WorkOwed, StopLabel::NoNextLook, StopLabel::ApiError, StopLabel::CheckIncomplete];
    assert!(all.iter().enumerate().all(|(i, l)| index(*l) == i));
    all.to_vec()
}

/// The names serde writes for `values`.
fn names<T: serde::Serialize>(values: &[T]) -> Vec<String> {
    values.iter().map(|v| serde_json::to_value(v).unwrap().as_str().unwrap().to_string()).collect()
}

/// A token the secret scanner flags.
fn github_token() -> String {
    let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0".repeat(2).get(..36).unwrap());
    assert!(secrets::scan(&token).is_some(), "the scanner flags the sample token");
    token
}

/// `session.started`, `compaction.recorded`, `branch.created` and `session.judged`: the
/// schemas name exactly the keys and the fixed lists the code has, take what the Rust types
/// write (every optional key present and absent, every variant), and take what the fold
/// takes, limits met exactly included, and refuse what it refuses.
#[test]
fn the_session_schemas_agree_with_the_code() {
    let started = schema("session.started.schema.json");
    let compaction = schema("compaction.recorded.schema.json");
    let branch = schema("branch.created.schema.json");
    let judged = schema("session.judged.schema.json");
    let session = "3f2c8a1e-5b7d-4e90-a1c3-d5e7f9012b4c";

    // session.started: what the type writes, with and without a session.
    for s in [Some(session.to_string()), None] {
        let data = serde_json::to_value(SessionStarted { session: s, source: "startup".into(), working_copy: "/home/ana/src/shop".into() })
            .unwrap();
        assert_eq!(keys_of(&data), keys_of(&started["properties"]), "session.started keys");
        agree(&started, in_working_copy(event::SESSION_STARTED), &data, true);
    }
    let good = json!({"session": session, "source": "startup", "working_copy": "/w"});
    // The session is not checked; the source is any host's word; a missing session is null.
    for data in [
        without(&good, "session"),
        with(&good, "session", json!("not/an id")),
        with(&good, "source", json!("brand_new_source")),
        with(&good, "working_copy", json!("")),
    ] {
        agree(&started, in_working_copy(event::SESSION_STARTED), &data, true);
    }
    for data in [
        without(&good, "source"),
        without(&good, "working_copy"),
        with(&good, "extra", json!(1)),
        with(&good, "session", json!(7)),
        with(&good, "source", json!(null)),
        with(&good, "working_copy", json!(["/w"])),
        json!([]),
    ] {
        agree(&started, in_working_copy(event::SESSION_STARTED), &data, false);
    }

    // compaction.recorded.
    for s in [Some(session.to_string()), None] {
        let data = serde_json::to_value(CompactionRecorded { session: s, trigger: "auto".into() }).unwrap();
        assert_eq!(keys_of(&data), keys_of(&compaction["properties"]), "compaction.recorded keys");
        agree(&compaction, in_working_copy(event::COMPACTION_RECORDED), &data, true);
    }
    let good = json!({"session": null, "trigger": "manual"});
    agree(&compaction, in_working_copy(event::COMPACTION_RECORDED), &without(&good, "session"), true);
    for data in
        [without(&good, "trigger"), with(&good, "extra", json!(1)), with(&good, "trigger", json!(null)), with(&good, "session", json!(1))]
    {
        agree(&compaction, in_working_copy(event::COMPACTION_RECORDED), &data, false);
    }

    // branch.created: `renamed_from` is written only for a rename.
    let b = |renamed_from: Option<&str>| {
        serde_json::to_value(BranchCreated {
            branch: "abcd/c2-parse".into(),
            command: "git branch -m".into(),
            renamed_from: renamed_from.map(String::from),
        })
        .unwrap()
    };
    assert_eq!(keys_of(&b(Some("old"))), keys_of(&branch["properties"]), "branch.created keys");
    assert!(!b(None).as_object().unwrap().contains_key("renamed_from"), "no renamed_from key when it is absent");
    for data in [b(Some("old-name")), b(None)] {
        agree(&branch, in_working_copy(event::BRANCH_CREATED), &data, true);
    }
    let good = b(None);
    assert_eq!(branch["properties"]["branch"]["maxLength"], json!(200));
    for name in [
        "a".repeat(200),
        "é".repeat(100),
        "feature/x".into(),
        "v1.2".into(),
        "a-".into(),
        "a.locks".into(),
        "a@b".into(),
        "a{b}".into(),
        "ünïcode/✓".into(),
    ] {
        agree(&branch, in_working_copy(event::BRANCH_CREATED), &with(&good, "branch", json!(name)), true);
    }
    let mut both_refuse =
        vec![without(&good, "branch"), without(&good, "command"), with(&good, "extra", json!(1)), with(&good, "command", json!(null))];
    for name in [
        "".to_string(),
        "a".repeat(201),
        "-x".into(),
        "/x".into(),
        "x/".into(),
        "x.lock".into(),
        "a..b".into(),
        "a@{1}".into(),
        "a b".into(),
        "a\tb".into(),
        "a\u{3000}b".into(),
        "a\u{7f}".into(),
        "a~1".into(),
        "a^".into(),
        "a:b".into(),
        "a?".into(),
        "a*".into(),
        "a[b".into(),
        "a\\b".into(),
    ] {
        both_refuse.push(with(&good, "branch", json!(name)));
    }
    for data in &both_refuse {
        agree(&branch, in_working_copy(event::BRANCH_CREATED), data, false);
    }
    // Where the schema is stricter: writers leave renamed_from out, never null; serde reads
    // a null as absent.
    let data = with(&good, "renamed_from", json!(null));
    assert!(!errors_of(&branch, &data).is_empty() && in_working_copy(event::BRANCH_CREATED)(&data).is_ok(), "{data}");
    // What the schema cannot say: the limit is 200 bytes (maxLength counts characters), and
    // the name carries no secret.
    let token = github_token();
    for name in ["é".repeat(101), format!("feat/{token}")] {
        let data = with(&good, "branch", json!(name));
        assert!(errors_of(&branch, &data).is_empty(), "{data}: {:?}", errors_of(&branch, &data));
        assert!(in_working_copy(event::BRANCH_CREATED)(&data).is_err(), "the fold takes {data}");
    }

    // session.judged: every row and state, every optional key set and not.
    let fp = |seed| Some(hex_of(64, seed));
    assert_eq!(strings(&judged["properties"]["row"]["enum"]), names(&every_row()), "rows");
    assert_eq!(strings(&judged["properties"]["state"]["enum"]), names(&every_stop_state()), "stop states");
    assert_eq!(judged["properties"]["next_look"]["pattern"], json!(JIFF_INSTANT));
    let judged_code = in_working_copy(event::SESSION_JUDGED);
    for (i, row) in every_row().into_iter().enumerate() {
        for state in every_stop_state() {
            let full = SessionJudged {
                session: session.into(),
                row,
                state,
                next_look: Some(at("2026-12-01T09:00:00.5Z")),
                block_count: i as u32,
                wake_count: u32::MAX,
                owed_fingerprint: fp(1),
                capped_fingerprint: fp(2),
                question_hash: fp(3),
                window_start: Some(at("2026-12-01T08:00:00Z")),
                behind_fingerprint: fp(6),
            };
            let empty = SessionJudged {
                next_look: None,
                window_start: None,
                owed_fingerprint: None,
                capped_fingerprint: None,
                question_hash: None,
                block_count: 0,
                wake_count: 0,
                behind_fingerprint: None,
                ..full.clone()
            };
            for j in [full, empty] {
                let data = serde_json::to_value(&j).unwrap();
                // behind_fingerprint is left out while none, so older verdicts are written as before.
                let mut want = keys_of(&judged["properties"]);
                if j.behind_fingerprint.is_none() {
                    want.retain(|k| k != "behind_fingerprint");
                }
                assert_eq!(keys_of(&data), want, "session.judged keys");
                agree(&judged, &judged_code, &data, true);
                assert_eq!(serde_json::from_value::<SessionJudged>(data).unwrap(), j);
            }
        }
    }
    let good = serde_json::to_value(SessionJudged {
        session: session.into(),
        row: Row::NoWake,
        state: StopState::Working,
        next_look: None,
        block_count: 2,
        wake_count: 0,
        owed_fingerprint: fp(4),
        capped_fingerprint: None,
        question_hash: None,
        window_start: None,
        behind_fingerprint: None,
    })
    .unwrap();
    let mut sparse = good.clone();
    for key in ["next_look", "owed_fingerprint", "capped_fingerprint", "question_hash", "window_start"] {
        sparse = without(&sparse, key);
        agree(&judged, &judged_code, &without(&good, key), true);
    }
    agree(&judged, &judged_code, &sparse, true);
    for (key, v) in [
        ("session", json!("a".repeat(128))),
        ("session", json!("A_z-9")),
        ("block_count", json!(u32::MAX)),
        ("next_look", json!("2026-12-01T09:00:00Z")),
        ("question_hash", json!(hex_of(64, 5))),
    ] {
        agree(&judged, &judged_code, &with(&good, key, v), true);
    }
    let mut both_refuse = vec![with(&good, "extra", json!(1))];
    for key in ["session", "row", "state", "block_count", "wake_count"] {
        both_refuse.push(without(&good, key));
    }
    for (key, v) in [
        ("session", json!("")),
        ("session", json!("a".repeat(129))),
        ("session", json!("a/b")),
        ("session", json!("a.b")),
        ("session", json!("é")),
        ("session", json!(null)),
        ("row", json!("row_1")),
        ("row", json!("Question")),
        ("row", json!(1)),
        ("state", json!("blocked")),
        ("state", json!(null)),
        ("next_look", json!("tomorrow")),
        ("block_count", json!(u64::from(u32::MAX) + 1)),
        ("block_count", json!(-1)),
        ("wake_count", json!(1.5)),
        ("wake_count", json!(null)),
        ("owed_fingerprint", json!(hex_of(63, 6))),
        ("owed_fingerprint", json!(hex_of(65, 6))),
        ("capped_fingerprint", json!(hex_of(64, 7).to_uppercase())),
        ("question_hash", json!(format!("{}g", hex_of(63, 8)))),
    ] {
        both_refuse.push(with(&good, key, v));
    }
    for data in &both_refuse {
        agree(&judged, &judged_code, data, false);
    }
    // What the schema cannot say: a verdict belongs in a working copy journal.
    assert!(folds(repository_scope(), &[], event::SESSION_JUDGED, &good).is_err());
}

/// `away.set`, `away.queued`, `away.stop_recorded`, `away.handed_back`, `away.ended` and
/// `decision.recorded`, as `the_session_schemas_agree_with_the_code` holds the session kinds.
#[test]
fn the_away_schemas_agree_with_the_code() {
    let set = schema("away.set.schema.json");
    let queued = schema("away.queued.schema.json");
    let stop = schema("away.stop_recorded.schema.json");
    let handed = schema("away.handed_back.schema.json");
    let ended = schema("away.ended.schema.json");
    let decision = schema("decision.recorded.schema.json");
    let wc = "/home/ana/src/shop";
    let line = |n: usize| json!("é".repeat(n));

    // The limits are the code's.
    let p = |s: &Value, key: &str| s["properties"][key]["maxLength"].clone();
    assert_eq!(p(&queued, "step"), json!(away::STEP_MAX_CHARS));
    for key in ["text", "grounds", "undo"] {
        assert_eq!(p(&decision, key), json!(away::DECISION_FIELD_MAX_CHARS), "{key}");
    }
    assert_eq!(p(&set, "set_by"), json!(away::PERSON_MAX_CHARS));
    assert_eq!(p(&ended, "ended_by"), json!(away::PERSON_MAX_CHARS));
    assert_eq!(p(&stop["properties"]["stop"], "next"), json!(away::STOP_NEXT_MAX_CHARS));
    // One rule for each kind of field, whatever the description says.
    let plain = |v: &Value| without(v, "description");
    for s in [&set, &queued, &stop, &handed, &ended, &decision] {
        assert_eq!(p(s, "working_copy"), json!(away::WORKING_COPY_MAX_CHARS), "{}", s["title"]);
        let text_line = with(&plain(&s["properties"]["working_copy"]), "maxLength", json!(1));
        for (key, sub) in s["properties"].as_object().unwrap().iter().chain(stop["properties"]["stop"]["properties"].as_object().unwrap()) {
            if sub.get("pattern") == Some(&json!(TEXT_LINE)) {
                assert_eq!(with(&plain(sub), "maxLength", json!(1)), text_line, "{key}");
            }
        }
    }
    let branch = schema("branch.created.schema.json");
    assert_eq!(plain(&handed["properties"]["branch"]), plain(&branch["properties"]["branch"]), "one branch rule");
    // Times are written as jiff writes them (the rule `the_field_patterns_are_the_codes_rules`
    // holds against jiff).
    for key in ["start", "end"] {
        assert_eq!(set["properties"][key]["pattern"], json!(JIFF_INSTANT), "{key}");
    }

    // away.set: the start as `abcd mode autonomous` writes it (no fraction), and with one.
    let code = in_repository(event::AWAY_SET);
    for w in
        [window(), AwaySet { start: at("2026-11-30T06:00:00.25Z"), end: at("2026-12-07T06:00:00.25Z"), hold_pushes: false, ..window() }]
    {
        let data = serde_json::to_value(&w).unwrap();
        // `notify` is optional and left out when absent (the_notify_schemas_agree_with_the_code).
        assert_eq!(keys_of(&data), keys_of(&without(&set["properties"], "notify")), "away.set keys");
        agree(&set, &code, &data, true);
    }
    let good = serde_json::to_value(window()).unwrap();
    for (key, v) in [
        ("set_by", line(200)),
        ("set_by", json!(" Ana ")),
        ("set_by", json!("a\u{a0}b")),
        ("working_copy", line(4096)),
        ("end", json!("2026-12-07T06:00:00Z")),
        ("start", json!("2026-11-30T06:00:00.000000001Z")),
    ] {
        agree(&set, &code, &with(&good, key, v), true);
    }
    let mut both_refuse = vec![with(&good, "extra", json!(1))];
    for key in ["set_by", "working_copy", "start", "end", "hold_pushes"] {
        both_refuse.push(without(&good, key));
    }
    for (key, v) in [
        ("set_by", line(201)),
        ("set_by", json!("")),
        ("set_by", json!(" \u{3000}")),
        ("set_by", json!("Ana\nLima")),
        ("set_by", json!(null)),
        ("working_copy", line(4097)),
        ("working_copy", json!("/w\t")),
        ("start", json!("now")),
        ("end", json!(null)),
        ("hold_pushes", json!("yes")),
        ("hold_pushes", json!(null)),
    ] {
        both_refuse.push(with(&good, key, v));
    }
    for data in &both_refuse {
        agree(&set, &code, data, false);
    }
    // What the schema cannot say: the window ends after its start, at most 7 days after;
    // no text carries a secret; away events belong in a repository journal.
    let token = github_token();
    for data in [
        with(&good, "end", json!("2026-11-30T06:00:00Z")),
        with(&good, "end", json!("2026-11-30T05:00:00Z")),
        with(&good, "end", json!("2026-12-07T06:00:00.000000001Z")),
        with(&good, "set_by", json!(token)),
    ] {
        assert!(errors_of(&set, &data).is_empty(), "{data}: {:?}", errors_of(&set, &data));
        assert!(code(&data).is_err(), "the fold takes {data}");
    }
    assert!(folds(working_copy_scope(), &[], event::AWAY_SET, &good).is_err());
    // Where the schema is stricter: an instant jiff reads but does not write.
    let data = with(&good, "start", json!("2026-11-30T07:00:00+01:00"));
    assert!(!errors_of(&set, &data).is_empty() && code(&data).is_ok(), "{data}");

    // away.queued.
    let code = in_repository(event::AWAY_QUEUED);
    let good = serde_json::to_value(AwayQueued { step: "Approve the push of abcd/c2-parse".into(), working_copy: wc.into() }).unwrap();
    assert_eq!(keys_of(&good), keys_of(&queued["properties"]), "away.queued keys");
    agree(&queued, &code, &good, true);
    agree(&queued, &code, &with(&good, "step", line(500)), true);
    agree(&queued, &code, &with(&good, "step", json!("\u{1F600}".repeat(500))), true);
    let mut both_refuse = vec![without(&good, "step"), without(&good, "working_copy"), with(&good, "extra", json!(1))];
    for step in [line(501), json!(""), json!("  "), json!("a\nb"), json!("a\u{85}"), json!(1)] {
        both_refuse.push(with(&good, "step", step));
    }
    both_refuse.push(with(&good, "working_copy", line(4097)));
    for data in &both_refuse {
        agree(&queued, &code, data, false);
    }
    // What the schema cannot say: a step needs an open window.
    assert!(folds(repository_scope(), &[], event::AWAY_QUEUED, &good).is_err());

    // away.stop_recorded: every label, with and without each optional key.
    let code = in_repository(event::AWAY_STOP_RECORDED);
    let stop_schema = &stop["properties"]["stop"];
    assert_eq!(strings(&stop_schema["properties"]["label"]["enum"]), names(&every_stop_label()), "stop labels");
    for label in every_stop_label() {
        for next in [Some("Ship the parser (ship-the-parser)"), None] {
            for error_type in [Some("rate_limit"), None] {
                for possibly_forced_by_cap in [true, false] {
                    for abcd_bound in [Some(8), None] {
                        let s = RecordedStop {
                            label,
                            possibly_forced_by_cap,
                            next: next.map(String::from),
                            error_type: error_type.map(String::from),
                            abcd_bound,
                        };
                        let data = serde_json::to_value(AwayStopRecorded { stop: s, working_copy: wc.into() }).unwrap();
                        assert_eq!(keys_of(&data), keys_of(&stop["properties"]), "away.stop_recorded keys");
                        let written: BTreeSet<String> = keys_of(&data["stop"]);
                        assert!(written.is_subset(&keys_of(&stop_schema["properties"])));
                        let optional = usize::from(next.is_some()) + usize::from(error_type.is_some()) + usize::from(abcd_bound.is_some());
                        assert_eq!(written.len(), 2 + optional, "{data}");
                        // An error type goes with an API error stop, and only with one; abcd's
                        // bound only with a stop it ended, never one a host's cap forced.
                        let bound_ok = abcd_bound.is_none()
                            || (matches!(label, StopLabel::WorkOwed | StopLabel::NoNextLook) && !possibly_forced_by_cap);
                        agree(&stop, &code, &data, (label == StopLabel::ApiError) == error_type.is_some() && bound_ok);
                    }
                }
            }
        }
    }
    let good = serde_json::to_value(AwayStopRecorded {
        stop: RecordedStop {
            label: StopLabel::ApiError,
            possibly_forced_by_cap: false,
            next: Some("n".into()),
            error_type: Some("overloaded".into()),
            abcd_bound: None,
        },
        working_copy: wc.into(),
    })
    .unwrap();
    // Every key but abcd's bound, which an API error stop never carries.
    let mut all_keys = keys_of(&good["stop"]);
    all_keys.insert("abcd_bound".into());
    assert_eq!(all_keys, keys_of(&stop_schema["properties"]), "stop keys");
    let bounded = serde_json::to_value(AwayStopRecorded {
        stop: RecordedStop {
            label: StopLabel::WorkOwed,
            possibly_forced_by_cap: false,
            next: Some("n".into()),
            error_type: None,
            abcd_bound: Some(8),
        },
        working_copy: wc.into(),
    })
    .unwrap();
    agree(&stop, &code, &bounded, true);
    // The bound's edges: 1 and ABCD_BOUND_MAX taken, 0 and one past refused, and no other type.
    agree(&stop, &code, &set_at(&bounded, &["stop", "abcd_bound"], json!(1)), true);
    agree(&stop, &code, &set_at(&bounded, &["stop", "abcd_bound"], json!(abcd::away::ABCD_BOUND_MAX)), true);
    for v in [json!(0), json!(abcd::away::ABCD_BOUND_MAX + 1), json!("8"), json!(-1), json!(8.5)] {
        agree(&stop, &code, &set_at(&bounded, &["stop", "abcd_bound"], v), false);
    }
    for data in [
        set_at(&good, &["stop"], json!({"label": "work_owed"})),
        set_at(&good, &["stop", "next"], line(400)),
        set_at(&good, &["stop", "error_type"], json!(format!("a{}", "_9".repeat(31) + "z"))),
        set_at(&good, &["stop", "error_type"], json!("z")),
        set_at(&good, &["stop", "error_type"], json!("unknown")),
    ] {
        agree(&stop, &code, &data, true);
    }
    let mut both_refuse = vec![without(&good, "stop"), without(&good, "working_copy"), with(&good, "extra", json!(1))];
    both_refuse.push(with(&good, "stop", without(&good["stop"], "error_type")));
    for (key, v) in [
        ("label", json!("work_owed")),
        ("label", json!("crashed")),
        ("label", json!("WorkOwed")),
        ("label", json!(null)),
        ("possibly_forced_by_cap", json!(null)),
        ("possibly_forced_by_cap", json!("true")),
        ("next", line(401)),
        ("next", json!("")),
        ("next", json!("a\r\nb")),
        ("error_type", json!(format!("a{}", "b".repeat(64)))),
        ("error_type", json!("")),
        ("error_type", json!("Rate_limit")),
        ("error_type", json!("9x")),
        ("error_type", json!("_x")),
        ("error_type", json!("rate-limit")),
        ("extra", json!(1)),
    ] {
        both_refuse.push(set_at(&good, &["stop", key], v));
    }
    both_refuse.push(with(&good, "stop", without(&good["stop"], "label")));
    both_refuse.push(with(&good, "stop", json!("api_error")));
    for data in &both_refuse {
        agree(&stop, &code, data, false);
    }
    // Where the schema is stricter: writers leave next out, never null.
    let data = set_at(&good, &["stop", "next"], json!(null));
    assert!(!errors_of(&stop, &data).is_empty() && code(&data).is_ok(), "{data}");
    // A null error type is no error type: both refuse it on an API error stop; on another
    // the code takes it as absent and the schema, stricter, refuses the null.
    agree(&stop, &code, &set_at(&good, &["stop", "error_type"], json!(null)), false);
    let owed = set_at(&set_at(&good, &["stop", "label"], json!("work_owed")), &["stop", "error_type"], json!(null));
    assert!(!errors_of(&stop, &owed).is_empty() && code(&owed).is_ok(), "{owed}");

    // away.handed_back.
    let code = in_repository(event::AWAY_HANDED_BACK);
    let hb = |head: String| serde_json::to_value(AwayHandedBack { branch: "abcd/c2-parse".into(), head, working_copy: wc.into() }).unwrap();
    for good in [hb(hex_of(40, 9)), hb(hex_of(64, 10))] {
        assert_eq!(keys_of(&good), keys_of(&handed["properties"]), "away.handed_back keys");
        agree(&handed, &code, &good, true);
    }
    let good = hb(hex_of(40, 11));
    let mut both_refuse = vec![with(&good, "extra", json!(1))];
    for key in ["branch", "head", "working_copy"] {
        both_refuse.push(without(&good, key));
    }
    for (key, v) in [
        ("head", json!(hex_of(39, 12))),
        ("head", json!(hex_of(41, 12))),
        ("head", json!(hex_of(63, 12))),
        ("head", json!(hex_of(65, 12))),
        ("head", json!(hex_of(40, 12).to_uppercase())),
        ("head", json!("")),
        ("branch", json!("a..b")),
        ("branch", json!("")),
        ("branch", json!("a".repeat(201))),
        ("working_copy", json!("")),
        ("working_copy", json!(null)),
    ] {
        both_refuse.push(with(&good, key, v));
    }
    for data in &both_refuse {
        agree(&handed, &code, data, false);
    }

    // away.ended.
    let code = in_repository(event::AWAY_ENDED);
    let good = serde_json::to_value(AwayEnded { ended_by: "Ana Lima".into(), working_copy: wc.into() }).unwrap();
    assert_eq!(keys_of(&good), keys_of(&ended["properties"]), "away.ended keys");
    agree(&ended, &code, &good, true);
    agree(&ended, &code, &with(&good, "ended_by", line(200)), true);
    for data in [
        without(&good, "ended_by"),
        without(&good, "working_copy"),
        with(&good, "extra", json!(1)),
        with(&good, "ended_by", line(201)),
        with(&good, "ended_by", json!("\t")),
    ] {
        agree(&ended, &code, &data, false);
    }

    // decision.recorded.
    let code = in_repository(event::DECISION_RECORDED);
    let good = serde_json::to_value(DecisionRecorded {
        text: "Keep the old parser".into(),
        grounds: "its tests pass: all 41 of them".into(),
        undo: "git revert HEAD".into(),
        working_copy: wc.into(),
        tradeoff: None,
        item: None,
    })
    .unwrap();
    // Every key, with the optional trade-off and item set; the trade-offs are the code's.
    let full = with(&with(&good, "tradeoff", json!("speed")), "item", json!("choose-the-cache"));
    assert_eq!(keys_of(&full), keys_of(&decision["properties"]), "decision.recorded keys");
    assert_eq!(decision["properties"]["item"]["maxLength"], json!(item::ID_MAX_BYTES), "an item id's limit is the checklist's");
    // The item: an id (both sides of its length), only on a trade-off.
    let tied = with(&good, "tradeoff", json!("speed"));
    agree(&decision, &code, &with(&tied, "item", json!("a".repeat(item::ID_MAX_BYTES))), true);
    agree(&decision, &code, &with(&tied, "item", json!("7")), true);
    for v in [json!("a".repeat(item::ID_MAX_BYTES + 1)), json!(""), json!("Not A Slug"), json!("a--b"), json!(7)] {
        agree(&decision, &code, &with(&tied, "item", v), false);
    }
    agree(&decision, &code, &with(&good, "item", json!("choose-the-cache")), false);
    assert!(good.get("item").is_none(), "left out while none");
    assert_eq!(decision["properties"]["tradeoff"]["enum"], json!(Tradeoff::ALL.map(Tradeoff::name)), "trade-offs");
    agree(&decision, &code, &full, true);
    assert!(good.get("tradeoff").is_none(), "left out while none");
    agree(&decision, &code, &good, true);
    for v in [json!("cost"), json!("Speed"), json!(null), json!(1)] {
        let data = with(&good, "tradeoff", v);
        // The code reads a null as none; the schema, stricter, refuses it (writers leave the key out).
        if data["tradeoff"].is_null() {
            assert!(!errors_of(&decision, &data).is_empty() && code(&data).is_ok(), "{data}");
        } else {
            agree(&decision, &code, &data, false);
        }
    }
    // Outside a window, a decision is counted, not skipped.
    assert!(folds(repository_scope(), &[], event::DECISION_RECORDED, &good).is_ok());
    let mut both_refuse = vec![with(&good, "extra", json!(1))];
    for key in ["text", "grounds", "undo", "working_copy"] {
        agree(&decision, &code, &with(&good, key, line(if key == "working_copy" { 4096 } else { 1000 })), true);
        both_refuse.push(without(&good, key));
        both_refuse.push(with(&good, key, line(if key == "working_copy" { 4097 } else { 1001 })));
        both_refuse.push(with(&good, key, json!("")));
        both_refuse.push(with(&good, key, json!("its tests pass:\n\tall 41 of them")));
    }
    for data in &both_refuse {
        agree(&decision, &code, data, false);
    }
    let data = with(&good, "grounds", json!(format!("the token {token} works")));
    assert!(errors_of(&decision, &data).is_empty() && code(&data).is_err(), "{data}");
    assert!(folds(working_copy_scope(), &[], event::DECISION_RECORDED, &good).is_err(), "a decision belongs in a repository journal");
}

/// `decision.answered` (issue 35, design-done): the keys abcd writes are the schema's, and
/// the schema and the fold agree on every rule the schema can state; what it cannot (the
/// seq names a trade-off decision before it) the fold checks.
#[test]
fn the_decision_answered_schema_agrees_with_the_code() {
    let answered = schema("decision.answered.schema.json");
    let recorded = serde_json::to_value(DecisionRecorded {
        text: "Cache in memory".into(),
        grounds: "a 3x faster build".into(),
        undo: "drop the cache".into(),
        working_copy: "/home/ana/src/shop".into(),
        tradeoff: Some(Tradeoff::Speed),
        item: Some("choose-the-cache".into()),
    })
    .unwrap();
    let plain = without(&without(&recorded, "tradeoff"), "item");
    // Genesis at seq 0, the window at 1, the trade-off at 2, a plain decision at 3.
    let before = [
        (event::AWAY_SET, serde_json::to_value(window()).unwrap()),
        (event::DECISION_RECORDED, recorded),
        (event::DECISION_RECORDED, plain),
    ];
    let code = |data: &Value| folds(repository_scope(), &before, event::DECISION_ANSWERED, data);
    let good = serde_json::to_value(away::DecisionAnswered { seq: 2, answer: away::Answer::Keep, working_copy: "/home/ana/src/wt".into() })
        .unwrap();
    assert_eq!(keys_of(&good), keys_of(&answered["properties"]), "decision.answered keys");
    assert_eq!(answered["properties"]["answer"]["enum"], json!(away::Answer::ALL.map(away::Answer::name)), "the answers are the code's");
    assert_eq!(answered["properties"]["working_copy"]["maxLength"], json!(away::WORKING_COPY_MAX_CHARS));
    agree(&answered, code, &good, true);
    agree(&answered, code, &with(&good, "answer", json!("undo")), true);
    agree(&answered, code, &with(&good, "working_copy", json!("é".repeat(away::WORKING_COPY_MAX_CHARS))), true);
    for data in [
        without(&good, "seq"),
        without(&good, "answer"),
        without(&good, "working_copy"),
        with(&good, "extra", json!(1)),
        with(&good, "seq", json!(0)),
        with(&good, "seq", json!(-1)),
        with(&good, "seq", json!("2")),
        with(&good, "answer", json!("maybe")),
        with(&good, "answer", json!("Keep")),
        with(&good, "working_copy", json!("é".repeat(away::WORKING_COPY_MAX_CHARS + 1))),
        with(&good, "working_copy", json!("")),
        with(&good, "working_copy", json!("a\nb")),
    ] {
        agree(&answered, code, &data, false);
    }
    // What the schema cannot say: the seq is a trade-off decision's (not the window's, not
    // a plain decision's, not one after the journal's end).
    for seq in [1, 3, 99] {
        let data = with(&good, "seq", json!(seq));
        assert!(errors_of(&answered, &data).is_empty() && code(&data).is_err(), "{data}");
    }
    assert!(folds(working_copy_scope(), &[], event::DECISION_ANSWERED, &good).is_err(), "an answer belongs in a repository journal");
}

/// Each rule the session and away schemas state with a pattern and lengths is exactly the
/// code's rule: on strings built from the characters the rules turn on, and at and around
/// each limit, schema and code agree on every one.
#[test]
fn the_session_and_away_patterns_are_the_codes_rules() {
    let queued = schema("away.queued.schema.json");
    let set = schema("away.set.schema.json");
    let stop = schema("away.stop_recorded.schema.json");
    let decision = schema("decision.recorded.schema.json");
    let handed = schema("away.handed_back.schema.json");
    let judged = schema("session.judged.schema.json");
    let branch = schema("branch.created.schema.json");
    let stop_props = &stop["properties"]["stop"]["properties"];
    assert_eq!(branch["properties"]["branch"]["maxLength"], json!(git::MAX_BRANCH_BYTES));
    type Rule = fn(&str) -> bool;
    let rules: [(&str, &Value, Rule); 10] = [
        ("step", &queued["properties"]["step"], |s| away::check_step(s).is_ok()),
        ("set_by", &set["properties"]["set_by"], |s| away::check_line("set_by", s, away::PERSON_MAX_CHARS).is_ok()),
        ("next", &stop_props["next"], |s| away::check_line("next", s, away::STOP_NEXT_MAX_CHARS).is_ok()),
        ("decision text", &decision["properties"]["text"], |s| away::check_line("text", s, away::DECISION_FIELD_MAX_CHARS).is_ok()),
        ("working_copy", &queued["properties"]["working_copy"], |s| {
            away::check_line("working_copy", s, away::WORKING_COPY_MAX_CHARS).is_ok()
        }),
        ("session id", &judged["properties"]["session"], event::session_id_ok),
        ("error type", &stop_props["error_type"], away::error_type_ok),
        ("head", &handed["properties"]["head"], |s| {
            // The fold's own check: a hand-back in an open window.
            let mut state = away::AwayState::default();
            away::fold_set(&mut state, window()).unwrap();
            let h = AwayHandedBack { branch: "abcd/c2-parse".into(), head: s.into(), working_copy: "/w".into() };
            away::fold_handed_back(&mut state, h, at("2026-11-30T07:00:00Z")).is_ok()
        }),
        ("fingerprint", &judged["properties"]["owed_fingerprint"], |s| {
            let data =
                json!({"session": "s", "row": "no_wake", "state": "working", "block_count": 1, "wake_count": 0, "owed_fingerprint": s});
            folds(working_copy_scope(), &[], event::SESSION_JUDGED, &data).is_ok()
        }),
        // The schema's maxLength counts characters; the code's limit is in bytes, which the
        // schema states in words: checked here with the byte limit added, and below without.
        ("branch", &branch["properties"]["branch"], abcd::ref_name::branch_name_ok),
    ];
    const PIECES: &[&str] = &[
        "a",
        "z",
        "f",
        "0",
        "9",
        "A",
        "Z",
        "ab12",
        "_",
        "-",
        "HEAD",
        "/",
        ".",
        "..",
        ".lock",
        "@",
        "{",
        "@{",
        "~",
        "^",
        ":",
        "?",
        "*",
        "[",
        "\\",
        " ",
        "\t",
        "\n",
        "\r",
        "\u{0}",
        "\u{7f}",
        "\u{85}",
        "\u{a0}",
        "\u{1680}",
        "\u{2028}",
        "\u{3000}",
        "\u{feff}",
        "\u{200b}",
        "é",
        "\u{1F600}",
    ];
    let mut samples: Vec<String> = vec![String::new()];
    for n in [1, 39, 40, 41, 63, 64, 65, 127, 128, 129, 199, 200, 201, 399, 400, 401, 499, 500, 501, 999, 1000, 1001, 4095, 4096, 4097] {
        for piece in ["a", "é", "\u{1F600}", " ", "f", "_"] {
            samples.push(piece.repeat(n));
            samples.push(format!("x{}", piece.repeat(n - 1)));
            samples.push(format!("{}\u{3000}", piece.repeat(n - 1)));
        }
    }
    for seed in 0..30 {
        for n in [39, 40, 41, 63, 64, 65] {
            let hex = hex_of(n, seed);
            samples.push(hex.to_uppercase());
            samples.push(format!("{}g", &hex[1..]));
            samples.push(hex);
        }
    }
    let mut lcg = Lcg(0xa11a);
    for _ in 0..40_000 {
        let len = lcg.below(9);
        samples.push((0..len).map(|_| PIECES[lcg.below(PIECES.len())]).collect());
    }
    let mut taken = BTreeMap::<&str, usize>::new();
    for s in &samples {
        for (name, sub, rule) in &rules {
            let mut by_schema = errors_of(sub, &json!(s)).is_empty();
            if *name == "branch" {
                by_schema &= s.len() <= git::MAX_BRANCH_BYTES;
            }
            assert_eq!(by_schema, rule(s), "{name} {s:?}: the schema says {by_schema}");
            *taken.entry(name).or_default() += usize::from(by_schema);
        }
    }
    // The samples reach both sides of every rule.
    for (name, _, _) in &rules {
        assert!(taken[name] >= 20 && taken[name] + 20 <= samples.len(), "{name}: {} of {} taken", taken[name], samples.len());
    }
    // Where the schema alone is looser: a branch name of at most 200 characters but more
    // than 200 bytes.
    let long = "é".repeat(101);
    assert!(errors_of(&branch["properties"]["branch"], &json!(long)).is_empty() && !abcd::ref_name::branch_name_ok(&long));
}

// ---------------------------------------------------------------------------------------
// The launch ledger kinds
// ---------------------------------------------------------------------------------------

/// The time the ledger's own fold functions are called at.
const LEDGER_T: &str = "2026-12-01T18:00:00Z";

fn driver(pid: u32, session: Option<&str>) -> Driver {
    Driver { session: session.map(String::from), process: ProcessId { pid, start_ticks: 100 } }
}

/// Run `r1`, with the lanes `impl` and `review`, driven by `driver`.
fn run_started(driver: Driver) -> RunStarted {
    RunStarted { run: "r1".into(), working_copy: "/home/ana/src/shop".into(), lanes: vec!["impl".into(), "review".into()], driver }
}

/// Launch `launch` of lane `impl` of run `r1`.
fn launch_intended(launch: u64) -> LaunchIntended {
    LaunchIntended {
        run: "r1".into(),
        lane: "impl".into(),
        launch,
        role: "implementer".into(),
        command: vec!["claude".into(), "-p".into(), "go on".into()],
        receipt: "/home/ana/src/shop-impl/receipt.json".into(),
        worktree: "/home/ana/src/shop-impl".into(),
        launcher: Some(ProcessId { pid: 4242, start_ticks: 100 }),
    }
}

fn launch_started(launch: u64) -> LaunchStarted {
    LaunchStarted {
        run: "r1".into(),
        lane: "impl".into(),
        launch,
        process: ProcessId { pid: 4242, start_ticks: 123_456 },
        stdout: "/home/ana/.local/state/abcd/runs/r1/impl-1.out".into(),
        stderr: "/home/ana/.local/state/abcd/runs/r1/impl-1.err".into(),
    }
}

fn launch_exited(launch: u64, status: ExitStatus) -> LaunchExited {
    LaunchExited { run: "r1".into(), lane: "impl".into(), launch, status }
}

fn receipt_collected(launch: u64, bytes: u64) -> ReceiptCollected {
    ReceiptCollected { run: "r1".into(), lane: "impl".into(), launch, blake3: hex_of(64, 21), bytes, hashed_bytes: None }
}

fn saved_aside(files: Vec<String>, files_not_listed: u64, commit: String) -> WorkSavedAside {
    WorkSavedAside {
        run: "r1".into(),
        lane: "impl".into(),
        worktree: "/home/ana/src/shop-impl".into(),
        ref_name: "refs/abcd/saved/r1/impl/20261201T180000000Z".into(),
        commit,
        files,
        files_not_listed,
    }
}

fn event_of<T: serde::Serialize>(kind: &'static str, data: &T) -> (&'static str, Value) {
    (kind, serde_json::to_value(data).unwrap())
}

/// The events before: run `r1` started, driven by `driver(10, Some("s1"))`.
fn a_run() -> Vec<(&'static str, Value)> {
    vec![event_of(event::RUN_STARTED, &run_started(driver(10, Some("s1"))))]
}

/// `a_run()`, then launch 1 of lane `impl` intended.
fn a_launch() -> Vec<(&'static str, Value)> {
    let mut events = a_run();
    events.push(event_of(event::LAUNCH_INTENDED, &launch_intended(1)));
    events
}

/// `before` with one more event.
fn and_then(mut before: Vec<(&'static str, Value)>, event: (&'static str, Value)) -> Vec<(&'static str, Value)> {
    before.push(event);
    before
}

fn machine_scope() -> Scope {
    Scope::Machine {}
}

/// What the fold does with `data` of `kind` in a journal of `scope` that holds `before`.
fn in_ledger(scope: Scope, before: Vec<(&'static str, Value)>, kind: &'static str) -> impl Fn(&Value) -> Result<(), String> {
    move |data| folds(scope.clone(), &before, kind, data)
}

/// Every `ExitStatus` variant, in order (see `every_row`).
fn every_exit_status() -> Vec<ExitStatus> {
    let index = |s: ExitStatus| match s {
        ExitStatus::Code { .. } => 0,
        ExitStatus::Signal { .. } => 1,
        ExitStatus::NotStarted => 2,
        ExitStatus::Unknown => 3,
    };
    let all = [ExitStatus::Code { code: 0 }, ExitStatus::Signal { signal: 9 }, ExitStatus::NotStarted, ExitStatus::Unknown];
    assert!(all.iter().enumerate().all(|(i, s)| index(*s) == i));
    all.to_vec()
}

/// Names `ledger::name_ok` refuses.
fn bad_ledger_names() -> Vec<Value> {
    ["", &"a".repeat(65), ".", "..", "-x", "a..b", "x.lock", ".lock", "a b", "a/b", "é", "a\n", "a:b", "a@{1}"].map(|s| json!(s)).to_vec()
}

/// Paths the ledger's `check_path` refuses (and the non-strings serde refuses).
fn bad_ledger_paths() -> Vec<Value> {
    vec![json!(""), json!("a".repeat(4097)), json!("/w\n"), json!("/w\t"), json!("/w\u{85}"), json!("\u{0}"), json!(7), json!(null)]
}

/// The ledger kinds: the schemas name exactly the keys and the fixed lists the code has, take
/// what the Rust types write (every optional key present and absent, every exit status), and
/// take what the fold takes, limits met exactly included, and refuse what it refuses, each in
/// a journal of the right scope holding the run and the launches the event needs.
#[test]
fn the_ledger_schemas_agree_with_the_code() {
    let started = schema("run.started.schema.json");
    let claimed = schema("run.driver_claimed.schema.json");
    let halted = schema("run.halted.schema.json");
    let lifted = schema("run.lifted.schema.json");
    let finished = schema("run.finished.schema.json");
    let intended = schema("launch.intended.schema.json");
    let launched = schema("launch.started.schema.json");
    let exited = schema("launch.exited.schema.json");
    let collected = schema("receipt.collected.schema.json");
    let saved = schema("work.saved_aside.schema.json");
    let plain = |v: &Value| without(v, "description");
    let ascii = |n: usize| json!("a".repeat(n));
    let token = github_token();
    let wc = working_copy_scope;

    // One rule for each kind of field, and the limits are the code's.
    let name_rule = plain(&started["properties"]["run"]);
    assert_eq!(name_rule["pattern"], json!(LEDGER_NAME));
    assert_eq!(name_rule["maxLength"], json!(ledger::NAME_MAX_BYTES));
    assert_eq!(name_rule["maxLength"], json!(ledger::ROLE_MAX_BYTES));
    let path_rule = plain(&started["properties"]["working_copy"]);
    assert_eq!(path_rule["pattern"], json!(LEDGER_PATH));
    assert_eq!(path_rule["maxLength"], json!(ledger::PATH_MAX_BYTES));
    let launch_rule = json!({"type": "integer", "minimum": 1, "maximum": u64::MAX});
    for s in [&started, &claimed, &halted, &lifted, &finished, &intended, &launched, &exited, &collected, &saved] {
        assert_eq!(s["additionalProperties"], json!(false), "{}", s["title"]);
        for (key, sub) in s["properties"].as_object().unwrap() {
            match key.as_str() {
                "run" | "lane" | "role" => assert_eq!(plain(sub), name_rule, "{} {key}", s["title"]),
                "working_copy" | "receipt" | "worktree" | "stdout" | "stderr" => assert_eq!(plain(sub), path_rule, "{} {key}", s["title"]),
                "launch" => assert_eq!(plain(sub), launch_rule, "{} {key}", s["title"]),
                _ => {}
            }
        }
    }
    assert_eq!(started["properties"]["lanes"]["items"], name_rule);
    assert_eq!(started["properties"]["lanes"]["maxItems"], json!(ledger::LANES_MAX));
    assert_eq!(saved["properties"]["files"]["items"], path_rule);
    assert_eq!(saved["properties"]["files"]["maxItems"], json!(ledger::SAVED_FILES_LISTED_MAX));
    assert_eq!(saved["properties"]["ref_name"]["maxLength"], json!(ledger::PATH_MAX_BYTES));
    assert_eq!(saved["properties"]["ref_name"]["pattern"], json!(SAVED_REF));
    assert_eq!(saved["properties"]["commit"]["pattern"], json!(COMMIT_ID));
    let command = &intended["properties"]["command"];
    assert_eq!((&command["minItems"], &command["maxItems"]), (&json!(1), &json!(ledger::COMMAND_WORDS_MAX)));
    assert_eq!(command["items"]["maxLength"], json!(ledger::COMMAND_BYTES_MAX));
    let driver_rule = plain(&started["properties"]["driver"]);
    assert_eq!(plain(&claimed["properties"]["driver"]), driver_rule, "one driver rule");
    assert_eq!(plain(&claimed["properties"]["previous"]), driver_rule, "one driver rule");
    let session_rule = &driver_rule["properties"]["session"];
    assert_eq!(session_rule["pattern"], json!(SESSION_ID));
    assert_eq!(session_rule["maxLength"], json!(event::SESSION_ID_MAX_BYTES));
    assert_eq!(plain(&launched["properties"]["process"]), plain(&driver_rule["properties"]["process"]), "one process rule");
    for s in [&lifted, &finished] {
        assert_eq!(s["required"], halted["required"]);
        for (key, sub) in halted["properties"].as_object().unwrap() {
            assert_eq!(plain(&s["properties"][key]), plain(sub), "{} {key}: one RunNamed", s["title"]);
        }
        assert_eq!(keys_of(&s["properties"]), keys_of(&halted["properties"]));
    }

    // run.started: what the type writes, with and without a session, with no lanes, one,
    // and the most; a run in a working copy journal, and an index entry in the machine journal.
    let code = in_ledger(wc(), vec![], event::RUN_STARTED);
    let index = in_ledger(machine_scope(), vec![], event::RUN_STARTED);
    let most_lanes: Vec<String> = (0..ledger::LANES_MAX).map(|i| format!("lane-{i}")).collect();
    for session in [Some("3f2c8a1e-5b7d-4e90-a1c3-d5e7f9012b4c"), None] {
        for lanes in [vec![], vec!["impl".to_string()], most_lanes.clone()] {
            let r = RunStarted { lanes, ..run_started(driver(u32::MAX, session)) };
            let data = serde_json::to_value(&r).unwrap();
            let driver_keys = &started["properties"]["driver"]["properties"];
            assert_eq!(keys_of(&data), keys_of(&started["properties"]), "run.started keys");
            assert_eq!(keys_of(&data["driver"]), keys_of(driver_keys), "driver keys");
            assert_eq!(keys_of(&data["driver"]["process"]), keys_of(&driver_keys["process"]["properties"]), "process keys");
            agree(&started, &code, &data, true);
            agree(&started, &index, &data, true);
            assert_eq!(serde_json::from_value::<RunStarted>(data).unwrap(), r);
        }
    }
    let good = serde_json::to_value(run_started(driver(10, Some("s1")))).unwrap();
    for data in [
        with(&good, "run", ascii(64)),
        with(&good, "run", json!("run-2026.12.01_A")),
        with(&good, "lanes", json!(["impl", "impl"])),
        with(&good, "working_copy", ascii(4096)),
        with(&good, "working_copy", json!("é".repeat(2048))),
        with(&good, "working_copy", json!(" /home/ana/my shop\u{a0}")),
        set_at(&good, &["driver", "session"], json!(null)),
        set_at(&good, &["driver", "session"], ascii(128)),
        set_at(&good, &["driver", "session"], json!("A_z-9")),
        with(&good, "driver", without(&good["driver"], "session")),
        set_at(&good, &["driver", "process", "pid"], json!(0)),
        set_at(&good, &["driver", "process", "start_ticks"], json!(u64::MAX)),
    ] {
        agree(&started, &code, &data, true);
        agree(&started, &index, &data, true);
    }
    let mut both_refuse = vec![with(&good, "extra", json!(1)), json!([]), json!(null)];
    for key in ["run", "working_copy", "lanes", "driver"] {
        both_refuse.push(without(&good, key));
    }
    for name in bad_ledger_names() {
        both_refuse.push(with(&good, "run", name.clone()));
        both_refuse.push(with(&good, "lanes", json!(["impl", name])));
    }
    for path in bad_ledger_paths() {
        both_refuse.push(with(&good, "working_copy", path));
    }
    let too_many: Vec<String> = (0..=ledger::LANES_MAX).map(|i| format!("lane-{i}")).collect();
    for (key, v) in
        [("lanes", json!(too_many)), ("lanes", json!(null)), ("lanes", json!("impl")), ("run", json!(null)), ("driver", json!(null))]
    {
        both_refuse.push(with(&good, key, v));
    }
    for (path, v) in [
        (&["driver", "extra"][..], json!(1)),
        (&["driver", "session"], json!("")),
        (&["driver", "session"], ascii(129)),
        (&["driver", "session"], json!("a.b")),
        (&["driver", "session"], json!("é")),
        (&["driver", "session"], json!(7)),
        (&["driver", "process"], json!(null)),
        (&["driver", "process"], json!(4242)),
        (&["driver", "process", "extra"], json!(1)),
        (&["driver", "process", "pid"], json!(u64::from(u32::MAX) + 1)),
        (&["driver", "process", "pid"], json!(-1)),
        (&["driver", "process", "pid"], json!("1")),
        (&["driver", "process", "pid"], json!(1.5)),
        (&["driver", "process", "start_ticks"], json!(-1)),
        (&["driver", "process", "start_ticks"], json!(1.8446744073709552e19)),
        (&["driver", "process", "start_ticks"], json!(null)),
    ] {
        both_refuse.push(set_at(&good, path, v));
    }
    both_refuse.push(with(&good, "driver", without(&good["driver"], "process")));
    for key in ["pid", "start_ticks"] {
        both_refuse.push(set_at(&good, &["driver", "process"], without(&good["driver"]["process"], key)));
    }
    for data in &both_refuse {
        agree(&started, &code, data, false);
        agree(&started, &index, data, false);
    }
    // What the schema cannot say: no path carries a secret; the limit is 4096 bytes (maxLength
    // counts characters); a name starts one run per journal and is indexed once; run.started
    // belongs in a working copy journal or the machine journal.
    for data in [with(&good, "working_copy", json!(format!("/home/{token}"))), with(&good, "working_copy", json!("é".repeat(2049)))] {
        assert!(errors_of(&started, &data).is_empty(), "{data}: {:?}", errors_of(&started, &data));
        assert!(code(&data).is_err() && index(&data).is_err(), "the fold takes {data}");
    }
    assert!(folds(wc(), &a_run(), event::RUN_STARTED, &good).is_err(), "a run is started once");
    assert!(folds(machine_scope(), &a_run(), event::RUN_STARTED, &good).is_err(), "a run is indexed once");
    assert!(folds(repository_scope(), &[], event::RUN_STARTED, &good).is_err());

    // run.driver_claimed: every driver with and without a session, replacing either.
    for old in [Some("s1"), None] {
        for new in [Some("s2"), None] {
            let code = in_ledger(wc(), vec![event_of(event::RUN_STARTED, &run_started(driver(10, old)))], event::RUN_DRIVER_CLAIMED);
            let c = DriverClaimed { run: "r1".into(), driver: driver(20, new), previous: driver(10, old) };
            let data = serde_json::to_value(&c).unwrap();
            assert_eq!(keys_of(&data), keys_of(&claimed["properties"]), "run.driver_claimed keys");
            for key in ["driver", "previous"] {
                assert_eq!(keys_of(&data[key]), keys_of(&claimed["properties"][key]["properties"]), "{key} keys");
            }
            agree(&claimed, &code, &data, true);
            assert_eq!(serde_json::from_value::<DriverClaimed>(data.clone()).unwrap(), c);
            // A missing session is a null one: it names the driver without a session, and
            // not one with a session (which only the fold can tell).
            let sparse = with(&data, "previous", without(&data["previous"], "session"));
            if old.is_none() {
                agree(&claimed, &code, &sparse, true);
            } else {
                assert!(errors_of(&claimed, &sparse).is_empty() && code(&sparse).is_err(), "{sparse}");
            }
        }
    }
    let code = in_ledger(wc(), a_run(), event::RUN_DRIVER_CLAIMED);
    let good =
        serde_json::to_value(DriverClaimed { run: "r1".into(), driver: driver(20, Some("s2")), previous: driver(10, Some("s1")) }).unwrap();
    for data in [
        set_at(&good, &["driver", "session"], ascii(128)),
        set_at(&good, &["driver", "session"], json!(null)),
        set_at(&good, &["driver", "process", "pid"], json!(u32::MAX)),
        set_at(&good, &["driver", "process", "start_ticks"], json!(u64::MAX)),
    ] {
        agree(&claimed, &code, &data, true);
    }
    let mut both_refuse = vec![with(&good, "extra", json!(1))];
    for key in ["run", "driver", "previous"] {
        both_refuse.push(without(&good, key));
        both_refuse.push(with(&good, key, json!(null)));
    }
    for name in bad_ledger_names() {
        both_refuse.push(with(&good, "run", name));
    }
    for key in ["driver", "previous"] {
        for (path, v) in [
            (&["extra"][..], json!(1)),
            (&["session"], json!("a.b")),
            (&["session"], ascii(129)),
            (&["session"], json!("")),
            (&["process", "extra"], json!(1)),
            (&["process", "pid"], json!(u64::from(u32::MAX) + 1)),
            (&["process", "start_ticks"], json!(-1)),
        ] {
            let path: Vec<&str> = std::iter::once(key).chain(path.iter().copied()).collect();
            both_refuse.push(set_at(&good, &path, v));
        }
        both_refuse.push(with(&good, key, without(&good[key], "process")));
    }
    for data in &both_refuse {
        agree(&claimed, &code, data, false);
    }
    // What the schema cannot say: the run was started, and `previous` is its driver; a
    // takeover belongs in a working copy journal.
    for data in [
        with(&good, "run", json!("r2")),
        set_at(&good, &["previous", "process", "pid"], json!(11)),
        set_at(&good, &["previous", "process", "start_ticks"], json!(101)),
        set_at(&good, &["previous", "session"], json!("s9")),
        set_at(&good, &["previous", "session"], json!(null)),
    ] {
        assert!(errors_of(&claimed, &data).is_empty() && code(&data).is_err(), "{data}");
    }
    assert!(folds(machine_scope(), &a_run(), event::RUN_DRIVER_CLAIMED, &good).is_err());
    assert!(folds(repository_scope(), &[], event::RUN_DRIVER_CLAIMED, &good).is_err());

    // run.halted, run.lifted, run.finished: `working_copy` written or left out.
    for (s, kind) in [(&halted, event::RUN_HALTED), (&lifted, event::RUN_LIFTED), (&finished, event::RUN_FINISHED)] {
        let code = in_ledger(wc(), a_run(), kind);
        let index = in_ledger(machine_scope(), a_run(), kind);
        for working_copy in [Some("/home/ana/src/shop"), None] {
            let r = RunNamed { run: "r1".into(), working_copy: working_copy.map(String::from) };
            let data = serde_json::to_value(&r).unwrap();
            if working_copy.is_some() {
                assert_eq!(keys_of(&data), keys_of(&s["properties"]), "{kind} keys");
            } else {
                assert_eq!(keys_of(&data), BTreeSet::from(["run".to_string()]), "{kind}: no working_copy key when it is absent");
            }
            agree(s, &code, &data, true);
            assert_eq!(serde_json::from_value::<RunNamed>(data.clone()).unwrap(), r);
            // The machine journal holds run.finished, as its index, and no other of the three.
            if kind == event::RUN_FINISHED {
                agree(s, &index, &data, true);
            } else {
                assert!(errors_of(s, &data).is_empty() && index(&data).is_err(), "{kind} in the machine journal");
            }
        }
        let good = json!({"run": "r1"});
        agree(s, &code, &with(&good, "run", json!("r1")), true);
        // The working copy is a path as every other: refused empty or with a control
        // character by both, refused with a secret by the fold alone.
        for path in [json!(""), json!("a\nb")] {
            agree(s, &code, &with(&good, "working_copy", path), false);
        }
        let secret = with(&good, "working_copy", json!(format!("/{token}")));
        assert!(errors_of(s, &secret).is_empty() && code(&secret).is_err(), "{kind} {secret}");
        let mut both_refuse = vec![without(&good, "run"), with(&good, "extra", json!(1)), with(&good, "run", json!(null)), json!([])];
        for name in bad_ledger_names() {
            both_refuse.push(with(&good, "run", name));
        }
        both_refuse.push(with(&good, "working_copy", json!(7)));
        both_refuse.push(with(&good, "working_copy", json!(["/w"])));
        for data in &both_refuse {
            agree(s, &code, data, false);
        }
        // Where the schema is stricter: writers leave working_copy out, never null; serde
        // reads a null as absent.
        let data = with(&good, "working_copy", json!(null));
        assert!(!errors_of(s, &data).is_empty() && code(&data).is_ok(), "{kind} {data}");
        // What the schema cannot say: the run was started (indexed, in the machine journal),
        // and these kinds belong in a working copy journal (run.finished in the machine one too).
        let other = with(&good, "run", json!("r2"));
        assert!(errors_of(s, &other).is_empty() && code(&other).is_err() && index(&other).is_err(), "{kind} {other}");
        assert!(folds(machine_scope(), &[], kind, &good).is_err(), "{kind} of a run not indexed");
        assert!(folds(repository_scope(), &[], kind, &good).is_err(), "{kind} in a repository journal");
    }

    // launch.intended: the first launch of a lane and the next one; the least and the most
    // of each limit.
    let code = in_ledger(wc(), a_run(), event::LAUNCH_INTENDED);
    let second = in_ledger(wc(), a_launch(), event::LAUNCH_INTENDED);
    let mut most_words = launch_intended(1);
    most_words.command = vec!["x".to_string(); ledger::COMMAND_WORDS_MAX];
    let mut longest_word = launch_intended(1);
    longest_word.command = vec!["a".repeat(ledger::COMMAND_BYTES_MAX)];
    for l in [launch_intended(1), most_words, longest_word] {
        let data = serde_json::to_value(&l).unwrap();
        assert_eq!(keys_of(&data), keys_of(&intended["properties"]), "launch.intended keys");
        agree(&intended, &code, &data, true);
        assert_eq!(serde_json::from_value::<LaunchIntended>(data).unwrap(), l);
    }
    agree(&intended, &second, &serde_json::to_value(launch_intended(2)).unwrap(), true);
    let good = serde_json::to_value(launch_intended(1)).unwrap();
    let half = "a".repeat(ledger::COMMAND_BYTES_MAX / 2);
    for (key, v) in [
        ("lane", json!("review")),
        ("role", ascii(64)),
        ("role", json!("reviewer.2_B-x")),
        ("command", json!([""])),
        ("command", json!(["sh", "-c", "printf '\\033[31m%s\\n' red"])),
        ("command", json!([half, half])),
        ("command", json!(["é".repeat(ledger::COMMAND_BYTES_MAX / 2)])),
        ("receipt", ascii(4096)),
        ("receipt", json!("é".repeat(2048))),
        ("worktree", json!("/home/ana/src/shop impl")),
    ] {
        agree(&intended, &code, &with(&good, key, v), true);
    }
    let mut both_refuse = vec![with(&good, "extra", json!(1))];
    for key in ["run", "lane", "launch", "role", "command", "receipt", "worktree"] {
        both_refuse.push(without(&good, key));
    }
    for name in bad_ledger_names() {
        for key in ["run", "lane", "role"] {
            both_refuse.push(with(&good, key, name.clone()));
        }
    }
    for path in bad_ledger_paths() {
        both_refuse.push(with(&good, "receipt", path.clone()));
        both_refuse.push(with(&good, "worktree", path));
    }
    for (key, v) in [
        ("launch", json!(0)),
        ("launch", json!(-1)),
        ("launch", json!("1")),
        ("launch", json!(1.5)),
        ("launch", json!(null)),
        ("launch", json!(1.8446744073709552e19)),
        ("command", json!([])),
        ("command", json!(["a\nb\u{7}"])),
        ("command", json!(vec!["x"; ledger::COMMAND_WORDS_MAX + 1])),
        ("command", json!(["a".repeat(ledger::COMMAND_BYTES_MAX + 1)])),
        ("command", json!([7])),
        ("command", json!([null])),
        ("command", json!(null)),
        ("command", json!("claude -p")),
    ] {
        both_refuse.push(with(&good, key, v));
    }
    for data in &both_refuse {
        agree(&intended, &code, data, false);
    }
    // What the schema cannot say: the launch is the lane's next and the lane the run's; the
    // command is at most 64 KiB in all; no word or path carries a secret; the limits are
    // bytes; a launch belongs in a working copy journal.
    let over = "a".repeat(ledger::COMMAND_BYTES_MAX / 2 + 1);
    for (code, data) in [
        (&code, with(&good, "launch", json!(2))),
        (&code, with(&good, "launch", json!(u64::MAX))),
        (&second, good.clone()),
        (&code, with(&good, "lane", json!("other"))),
        (&code, with(&good, "run", json!("r2"))),
        (&code, with(&good, "command", json!([half, over]))),
        (&code, with(&good, "command", json!(["é".repeat(ledger::COMMAND_BYTES_MAX / 2 + 1)]))),
        (&code, with(&good, "command", json!(["deploy", "--token", token]))),
        (&code, with(&good, "receipt", json!(format!("/tmp/{token}")))),
        (&code, with(&good, "worktree", json!("é".repeat(2049)))),
    ] {
        assert!(errors_of(&intended, &data).is_empty(), "{data}: {:?}", errors_of(&intended, &data));
        assert!(code(&data).is_err(), "the fold takes {data}");
    }
    assert!(folds(machine_scope(), &a_run(), event::LAUNCH_INTENDED, &good).is_err());
    assert!(folds(repository_scope(), &[], event::LAUNCH_INTENDED, &good).is_err());

    // launch.started.
    let code = in_ledger(wc(), a_launch(), event::LAUNCH_STARTED);
    for process in [ProcessId { pid: 0, start_ticks: 0 }, ProcessId { pid: u32::MAX, start_ticks: u64::MAX }] {
        let s = LaunchStarted { process, ..launch_started(1) };
        let data = serde_json::to_value(&s).unwrap();
        assert_eq!(keys_of(&data), keys_of(&launched["properties"]), "launch.started keys");
        assert_eq!(keys_of(&data["process"]), keys_of(&launched["properties"]["process"]["properties"]), "process keys");
        agree(&launched, &code, &data, true);
        assert_eq!(serde_json::from_value::<LaunchStarted>(data).unwrap(), s);
    }
    let good = serde_json::to_value(launch_started(1)).unwrap();
    for (key, v) in [("stdout", ascii(4096)), ("stderr", json!("é".repeat(2048))), ("stdout", json!(" "))] {
        agree(&launched, &code, &with(&good, key, v), true);
    }
    let mut both_refuse = vec![with(&good, "extra", json!(1))];
    for key in ["run", "lane", "launch", "process", "stdout", "stderr"] {
        both_refuse.push(without(&good, key));
    }
    for name in bad_ledger_names() {
        both_refuse.push(with(&good, "run", name.clone()));
        both_refuse.push(with(&good, "lane", name));
    }
    for path in bad_ledger_paths() {
        both_refuse.push(with(&good, "stdout", path.clone()));
        both_refuse.push(with(&good, "stderr", path));
    }
    for (path, v) in [
        (&["launch"][..], json!(0)),
        (&["process"], json!(null)),
        (&["process", "extra"], json!(1)),
        (&["process", "pid"], json!(u64::from(u32::MAX) + 1)),
        (&["process", "start_ticks"], json!("123456")),
    ] {
        both_refuse.push(set_at(&good, path, v));
    }
    for key in ["pid", "start_ticks"] {
        both_refuse.push(with(&good, "process", without(&good["process"], key)));
    }
    for data in &both_refuse {
        agree(&launched, &code, data, false);
    }
    // Where the schema is stricter: serde reads a struct from an array of its fields in order
    // too; writers write objects, and the schema takes nothing else.
    for data in
        [with(&good, "process", json!([4242, 123_456])), json!(["r1", "impl", 1, {"pid": 4242, "start_ticks": 123_456}, "/w/o", "/w/e"])]
    {
        assert!(!errors_of(&launched, &data).is_empty() && code(&data).is_ok(), "{data}");
    }
    // What the schema cannot say: the launch was intended and not started before; no path
    // carries a secret; the limit is bytes; it belongs in a working copy journal.
    let twice = in_ledger(wc(), and_then(a_launch(), event_of(event::LAUNCH_STARTED, &launch_started(1))), event::LAUNCH_STARTED);
    for (code, data) in [
        (&code, with(&good, "launch", json!(2))),
        (&code, with(&good, "lane", json!("review"))),
        (&twice, good.clone()),
        (&code, with(&good, "stdout", json!(format!("/tmp/{token}.out")))),
        (&code, with(&good, "stderr", json!("é".repeat(2049)))),
    ] {
        assert!(errors_of(&launched, &data).is_empty(), "{data}: {:?}", errors_of(&launched, &data));
        assert!(code(&data).is_err(), "the fold takes {data}");
    }
    assert!(folds(machine_scope(), &a_run(), event::LAUNCH_STARTED, &good).is_err());
    assert!(folds(repository_scope(), &[], event::LAUNCH_STARTED, &good).is_err());

    // launch.exited: every exit status, at the ends of its range.
    let code = in_ledger(wc(), a_launch(), event::LAUNCH_EXITED);
    let status = &exited["properties"]["status"];
    let kinds: Vec<String> =
        every_exit_status().iter().map(|s| serde_json::to_value(s).unwrap()["kind"].as_str().unwrap().to_string()).collect();
    assert_eq!(strings(&status["properties"]["kind"]["enum"]), kinds, "exit status kinds");
    let branches = status["oneOf"].as_array().unwrap();
    assert_eq!(branches.iter().map(|b| b["properties"]["kind"]["const"].as_str().unwrap()).collect::<Vec<_>>(), kinds, "one branch a kind");
    let mut statuses = every_exit_status();
    statuses.extend([
        ExitStatus::Code { code: i32::MIN },
        ExitStatus::Code { code: i32::MAX },
        ExitStatus::Signal { signal: i32::MIN },
        ExitStatus::Signal { signal: i32::MAX },
    ]);
    for s in statuses {
        let data = serde_json::to_value(launch_exited(1, s)).unwrap();
        assert_eq!(keys_of(&data), keys_of(&exited["properties"]), "launch.exited keys");
        let branch = branches.iter().find(|b| b["properties"]["kind"]["const"] == data["status"]["kind"]).unwrap();
        assert_eq!(keys_of(&data["status"]), keys_of(&branch["properties"]), "{s:?} keys");
        assert_eq!(branch["required"].as_array().unwrap().len(), keys_of(&data["status"]).len(), "{s:?}: every key required");
        agree(&exited, &code, &data, true);
        assert_eq!(serde_json::from_value::<LaunchExited>(data).unwrap(), launch_exited(1, s));
    }
    let good = serde_json::to_value(launch_exited(1, ExitStatus::Code { code: 0 })).unwrap();
    let mut both_refuse = vec![with(&good, "extra", json!(1))];
    for key in ["run", "lane", "launch", "status"] {
        both_refuse.push(without(&good, key));
    }
    for name in bad_ledger_names() {
        both_refuse.push(with(&good, "run", name.clone()));
        both_refuse.push(with(&good, "lane", name));
    }
    both_refuse.push(with(&good, "launch", json!(0)));
    for s in [
        json!(null),
        json!("unknown"),
        json!(0),
        json!({}),
        json!({"code": 0}),
        json!({"kind": "exited"}),
        json!({"kind": "Code", "code": 0}),
        json!({"kind": "NotStarted"}),
        json!({"kind": null}),
        json!({"kind": "code"}),
        json!({"kind": "code", "code": i64::from(i32::MAX) + 1}),
        json!({"kind": "code", "code": i64::from(i32::MIN) - 1}),
        json!({"kind": "code", "code": "0"}),
        json!({"kind": "code", "code": 1.5}),
        json!({"kind": "code", "code": null}),
        json!({"kind": "code", "signal": 9}),
        json!({"kind": "code", "code": 0, "signal": 9}),
        json!({"kind": "code", "code": 0, "extra": 1}),
        json!({"kind": "signal"}),
        json!({"kind": "signal", "code": 9}),
        json!({"kind": "signal", "signal": i64::from(i32::MAX) + 1}),
        json!({"kind": "signal", "signal": 9, "extra": 1}),
    ] {
        both_refuse.push(with(&good, "status", s));
    }
    for data in &both_refuse {
        agree(&exited, &code, data, false);
    }
    // Where the schema is stricter: serde takes any other key beside the tag of a unit
    // variant (deny_unknown_fields notwithstanding), and an array of the tag and the fields;
    // writers write neither, and the schema refuses both.
    for s in [json!({"kind": "not_started", "code": 0}), json!({"kind": "unknown", "extra": 1}), json!(["code", 0]), json!(["unknown"])] {
        let data = with(&good, "status", s);
        assert!(!errors_of(&exited, &data).is_empty() && code(&data).is_ok(), "{data}");
    }
    // What the schema cannot say: the launch was intended, and its exit is recorded once; it
    // belongs in a working copy journal.
    let twice = in_ledger(wc(), and_then(a_launch(), (event::LAUNCH_EXITED, good.clone())), event::LAUNCH_EXITED);
    for (code, data) in [(&code, with(&good, "launch", json!(2))), (&code, with(&good, "lane", json!("review"))), (&twice, good.clone())] {
        assert!(errors_of(&exited, &data).is_empty() && code(&data).is_err(), "{data}");
    }
    assert!(folds(machine_scope(), &a_run(), event::LAUNCH_EXITED, &good).is_err());
    assert!(folds(repository_scope(), &[], event::LAUNCH_EXITED, &good).is_err());

    // receipt.collected.
    let code = in_ledger(wc(), a_launch(), event::RECEIPT_COLLECTED);
    for bytes in [0, u64::MAX] {
        let c = receipt_collected(1, bytes);
        let data = serde_json::to_value(&c).unwrap();
        let mut written = keys_of(&data);
        written.insert("hashed_bytes".into());
        assert_eq!(written, keys_of(&collected["properties"]), "receipt.collected keys (hashed_bytes only over the read bound)");
        agree(&collected, &code, &data, true);
        assert_eq!(serde_json::from_value::<ReceiptCollected>(data).unwrap(), c);
    }
    // A receipt over the read bound: the digest covers its first hashed_bytes; never more
    // than the receipt holds.
    let over = ReceiptCollected { hashed_bytes: Some(64 << 20), ..receipt_collected(1, (64 << 20) + 1) };
    agree(&collected, &code, &serde_json::to_value(&over).unwrap(), true);
    let past = ReceiptCollected { hashed_bytes: Some(4), ..receipt_collected(1, 3) };
    let past = serde_json::to_value(&past).unwrap();
    assert!(errors_of(&collected, &past).is_empty() && code(&past).is_err(), "hashed_bytes over bytes is the fold's to refuse");
    let good = serde_json::to_value(receipt_collected(1, 3)).unwrap();
    agree(&collected, &code, &with(&good, "blake3", json!(hex_of(64, 22))), true);
    let mut both_refuse = vec![with(&good, "extra", json!(1))];
    for key in ["run", "lane", "launch", "blake3", "bytes"] {
        both_refuse.push(without(&good, key));
    }
    for name in bad_ledger_names() {
        both_refuse.push(with(&good, "run", name.clone()));
        both_refuse.push(with(&good, "lane", name));
    }
    for (key, v) in [
        ("launch", json!(0)),
        ("blake3", json!(hex_of(63, 23))),
        ("blake3", json!(hex_of(65, 23))),
        ("blake3", json!(hex_of(64, 23).to_uppercase())),
        ("blake3", json!(format!("{}g", hex_of(63, 23)))),
        ("blake3", json!(hex_of(40, 23))),
        ("blake3", json!("")),
        ("blake3", json!(null)),
        ("bytes", json!(-1)),
        ("bytes", json!(null)),
        ("bytes", json!("3")),
        ("bytes", json!(1.8446744073709552e19)),
    ] {
        both_refuse.push(with(&good, key, v));
    }
    for data in &both_refuse {
        agree(&collected, &code, data, false);
    }
    // What the schema cannot say: the launch was intended, its receipt collected once; it
    // belongs in a working copy journal.
    let twice = in_ledger(wc(), and_then(a_launch(), (event::RECEIPT_COLLECTED, good.clone())), event::RECEIPT_COLLECTED);
    for (code, data) in [(&code, with(&good, "launch", json!(2))), (&code, with(&good, "run", json!("r2"))), (&twice, good.clone())] {
        assert!(errors_of(&collected, &data).is_empty() && code(&data).is_err(), "{data}");
    }
    assert!(folds(machine_scope(), &a_run(), event::RECEIPT_COLLECTED, &good).is_err());
    assert!(folds(repository_scope(), &[], event::RECEIPT_COLLECTED, &good).is_err());

    // work.saved_aside: no files listed, one, and the most; counted files or none; both
    // kinds of commit id.
    let code = in_ledger(wc(), a_run(), event::WORK_SAVED_ASIDE);
    let most_files: Vec<String> = (0..ledger::SAVED_FILES_LISTED_MAX).map(|i| format!("src/f{i}.rs")).collect();
    for files in [vec![], vec!["src/parse.rs".to_string()], most_files.clone()] {
        for (files_not_listed, commit) in [(0, hex_of(40, 24)), (u64::MAX, hex_of(64, 25))] {
            let s = saved_aside(files.clone(), files_not_listed, commit);
            let data = serde_json::to_value(&s).unwrap();
            assert_eq!(keys_of(&data), keys_of(&saved["properties"]), "work.saved_aside keys");
            agree(&saved, &code, &data, true);
            assert_eq!(serde_json::from_value::<WorkSavedAside>(data).unwrap(), s);
        }
    }
    let good = serde_json::to_value(saved_aside(vec!["src/parse.rs".into()], 0, hex_of(40, 26))).unwrap();
    // Readers take a missing count as 0.
    agree(&saved, &code, &without(&good, "files_not_listed"), true);
    // The ref name: its prefix, its length, no control character, and (the fold alone) no
    // secret.
    let secret_ref = with(&good, "ref_name", json!(format!("refs/abcd/saved/{token}")));
    assert!(errors_of(&saved, &secret_ref).is_empty() && code(&secret_ref).is_err(), "{secret_ref}");
    for (key, v) in [
        ("lane", json!("review")),
        ("worktree", ascii(4096)),
        ("worktree", json!("é".repeat(2048))),
        ("ref_name", json!("refs/abcd/saved/")),
        ("ref_name", json!(format!("refs/abcd/saved/{}", "a".repeat(4096 - 16)))),
        ("files", json!(["a".repeat(4096), "é".repeat(2048), " ", "a b"])),
    ] {
        agree(&saved, &code, &with(&good, key, v), true);
    }
    let mut both_refuse = vec![with(&good, "extra", json!(1))];
    for key in ["run", "lane", "worktree", "ref_name", "commit", "files"] {
        both_refuse.push(without(&good, key));
    }
    for name in bad_ledger_names() {
        both_refuse.push(with(&good, "run", name.clone()));
        both_refuse.push(with(&good, "lane", name));
    }
    for path in bad_ledger_paths() {
        both_refuse.push(with(&good, "worktree", path.clone()));
        both_refuse.push(with(&good, "files", json!(["src/parse.rs", path])));
    }
    let too_many: Vec<String> = (0..=ledger::SAVED_FILES_LISTED_MAX).map(|i| format!("src/f{i}.rs")).collect();
    for (key, v) in [
        ("files", json!(too_many)),
        ("files", json!(null)),
        ("files", json!("src/parse.rs")),
        ("files_not_listed", json!(null)),
        ("files_not_listed", json!(-1)),
        ("files_not_listed", json!("0")),
        ("ref_name", json!("")),
        ("ref_name", json!("refs/abcd/saved/a b\n..\u{0}")),
        ("ref_name", json!("refs/abcd/saved")),
        ("ref_name", json!("refs/heads/abcd/saved/x")),
        ("ref_name", json!(" refs/abcd/saved/x")),
        ("ref_name", json!("REFS/abcd/saved/x")),
        ("ref_name", json!(format!("refs/abcd/saved/{}", "a".repeat(4096 - 15)))),
        ("ref_name", json!(null)),
        ("commit", json!(hex_of(39, 27))),
        ("commit", json!(hex_of(41, 27))),
        ("commit", json!(hex_of(63, 27))),
        ("commit", json!(hex_of(65, 27))),
        ("commit", json!(hex_of(40, 27).to_uppercase())),
        ("commit", json!("")),
        ("commit", json!(null)),
    ] {
        both_refuse.push(with(&good, key, v));
    }
    for data in &both_refuse {
        agree(&saved, &code, data, false);
    }
    // What the schema cannot say: the lane is a started run's; no path carries a secret; the
    // limits are bytes; it belongs in a working copy journal.
    for data in [
        with(&good, "lane", json!("other")),
        with(&good, "run", json!("r2")),
        with(&good, "files", json!([format!("notes/{token}.txt")])),
        with(&good, "worktree", json!(format!("/tmp/{token}"))),
        with(&good, "files", json!(["é".repeat(2049)])),
        with(&good, "ref_name", json!(format!("refs/abcd/saved/{}", "é".repeat(2041)))),
    ] {
        assert!(errors_of(&saved, &data).is_empty(), "{data}: {:?}", errors_of(&saved, &data));
        assert!(code(&data).is_err(), "the fold takes {data}");
    }
    assert!(folds(machine_scope(), &a_run(), event::WORK_SAVED_ASIDE, &good).is_err());
    assert!(folds(repository_scope(), &[], event::WORK_SAVED_ASIDE, &good).is_err());
}

/// A ledger holding run `r1` (lanes `impl` and `review`) and, when `launch`, launch 1 of `impl`.
fn a_ledger(launch: bool) -> LedgerState {
    let mut state = LedgerState::default();
    ledger::fold_run_started(&mut state, run_started(driver(10, Some("s1"))), at(LEDGER_T), false).unwrap();
    if launch {
        ledger::fold_intended(&mut state, launch_intended(1), at(LEDGER_T)).unwrap();
    }
    state
}

fn ledger_takes_run(r: RunStarted) -> bool {
    ledger::fold_run_started(&mut LedgerState::default(), r, at(LEDGER_T), false).is_ok()
}

fn ledger_takes_intended(l: LaunchIntended) -> bool {
    ledger::fold_intended(&mut a_ledger(false), l, at(LEDGER_T)).is_ok()
}

fn ledger_takes_saved(s: WorkSavedAside) -> bool {
    ledger::fold_saved(&mut a_ledger(false), s, at(LEDGER_T)).is_ok()
}

/// Each rule the ledger schemas state with a pattern and lengths is exactly the code's rule,
/// as `ledger::name_ok` and the ledger's fold apply it: on strings built from the characters
/// the rules turn on, and at and around each limit, schema and code agree on every one. A
/// limit the code counts in bytes is stated in words (maxLength counts characters): it is
/// added to the schema's side here.
#[test]
fn the_ledger_patterns_are_the_codes_rules() {
    let started = schema("run.started.schema.json");
    let intended = schema("launch.intended.schema.json");
    let launched = schema("launch.started.schema.json");
    let collected = schema("receipt.collected.schema.json");
    let saved = schema("work.saved_aside.schema.json");
    let props = |s: &Value| s["properties"].clone();
    let (started, intended, launched, collected, saved) =
        (props(&started), props(&intended), props(&launched), props(&collected), props(&saved));
    type Rule = fn(&str) -> bool;
    let paths = Some(ledger::PATH_MAX_BYTES);
    let rules: [(&str, &Value, Rule, Option<usize>); 15] = [
        ("name_ok", &started["run"], ledger::name_ok, None),
        ("run", &started["run"], |s| ledger_takes_run(RunStarted { run: s.into(), ..run_started(driver(10, None)) }), None),
        (
            "lane",
            &started["lanes"]["items"],
            |s| ledger_takes_run(RunStarted { lanes: vec![s.into()], ..run_started(driver(10, None)) }),
            None,
        ),
        ("role", &intended["role"], |s| ledger_takes_intended(LaunchIntended { role: s.into(), ..launch_intended(1) }), None),
        ("session", &started["driver"]["properties"]["session"], |s| ledger_takes_run(run_started(driver(10, Some(s)))), None),
        (
            "working_copy",
            &started["working_copy"],
            |s| ledger_takes_run(RunStarted { working_copy: s.into(), ..run_started(driver(10, None)) }),
            paths,
        ),
        ("receipt", &intended["receipt"], |s| ledger_takes_intended(LaunchIntended { receipt: s.into(), ..launch_intended(1) }), paths),
        ("worktree", &intended["worktree"], |s| ledger_takes_intended(LaunchIntended { worktree: s.into(), ..launch_intended(1) }), paths),
        (
            "command word",
            &intended["command"]["items"],
            |s| ledger_takes_intended(LaunchIntended { command: vec![s.into()], ..launch_intended(1) }),
            Some(ledger::COMMAND_BYTES_MAX),
        ),
        (
            "stdout",
            &launched["stdout"],
            |s| ledger::fold_started(&mut a_ledger(true), LaunchStarted { stdout: s.into(), ..launch_started(1) }).is_ok(),
            paths,
        ),
        (
            "blake3",
            &collected["blake3"],
            |s| ledger::fold_collected(&mut a_ledger(true), ReceiptCollected { blake3: s.into(), ..receipt_collected(1, 3) }).is_ok(),
            None,
        ),
        (
            "saved worktree",
            &saved["worktree"],
            |s| ledger_takes_saved(WorkSavedAside { worktree: s.into(), ..saved_aside(vec![], 0, hex_of(40, 1)) }),
            paths,
        ),
        ("file", &saved["files"]["items"], |s| ledger_takes_saved(saved_aside(vec![s.into()], 0, hex_of(40, 1))), paths),
        (
            "ref_name",
            &saved["ref_name"],
            |s| ledger_takes_saved(WorkSavedAside { ref_name: s.into(), ..saved_aside(vec![], 0, hex_of(40, 1)) }),
            paths,
        ),
        ("commit", &saved["commit"], |s| ledger_takes_saved(saved_aside(vec![], 0, s.into())), None),
    ];
    const PIECES: &[&str] = &[
        "a",
        "Z",
        "0",
        "9",
        "f",
        "_",
        "-",
        ".",
        "..",
        ".lock",
        "lock",
        "/",
        "refs/abcd/saved/",
        "refs/",
        ":",
        "@",
        " ",
        "\t",
        "\n",
        "\r",
        "\u{0}",
        "\u{1b}",
        "\u{7f}",
        "\u{85}",
        "\u{9f}",
        "\u{a0}",
        "\u{2028}",
        "\u{3000}",
        "é",
        "\u{1F600}",
    ];
    let mut samples: Vec<String> = vec![String::new()];
    for n in [1, 2, 63, 64, 65, 127, 128, 129, 4079, 4080, 4081, 4095, 4096, 4097, 32768, 32769, 65535, 65536, 65537] {
        for piece in ["a", "é", "\u{1F600}", " ", "f", "_", ".", "-"] {
            samples.push(piece.repeat(n));
            samples.push(format!("x{}", piece.repeat(n - 1)));
            samples.push(format!("refs/abcd/saved/{}", piece.repeat(n)));
        }
    }
    for seed in 0..30 {
        for n in [39, 40, 41, 63, 64, 65] {
            let hex = hex_of(n, seed);
            samples.push(hex.to_uppercase());
            samples.push(format!("{}g", &hex[1..]));
            samples.push(hex);
        }
    }
    let mut lcg = Lcg(0x1ed6e7);
    for _ in 0..40_000 {
        let len = lcg.below(9);
        samples.push((0..len).map(|_| PIECES[lcg.below(PIECES.len())]).collect());
    }
    let mut taken = BTreeMap::<&str, usize>::new();
    for s in &samples {
        for (name, sub, rule, bytes) in &rules {
            let by_schema = errors_of(sub, &json!(s)).is_empty() && bytes.is_none_or(|max| s.len() <= max);
            assert_eq!(by_schema, rule(s), "{name} {:?}…: the schema says {by_schema}", s.chars().take(80).collect::<String>());
            *taken.entry(name).or_default() += usize::from(by_schema);
        }
    }
    // The samples reach both sides of every rule.
    for (name, _, _, _) in &rules {
        assert!(taken[name] >= 20 && taken[name] + 20 <= samples.len(), "{name}: {} of {} taken", taken[name], samples.len());
    }
    // Where the schema alone is looser: a path of at most 4096 characters but more than 4096
    // bytes, and a command word of at most 65536 characters but more than 65536 bytes.
    let long = "é".repeat(2049);
    assert!(errors_of(&started["working_copy"], &json!(long)).is_empty());
    assert!(!ledger_takes_run(RunStarted { working_copy: long, ..run_started(driver(10, None)) }));
    let long = "é".repeat(ledger::COMMAND_BYTES_MAX / 2 + 1);
    assert!(errors_of(&intended["command"]["items"], &json!(long)).is_empty());
    assert!(!ledger_takes_intended(LaunchIntended { command: vec![long], ..launch_intended(1) }));
}

// ---------------------------------------------------------------------------------------
// The phased loop's kinds
// ---------------------------------------------------------------------------------------

/// What `phased::fold_loop_event` does with `data` of `kind` after the loop events `before`
/// (each of which must fold): `Ok` when folded, `Err` naming why it was refused.
fn loop_folds(before: &[(&str, Value)], kind: &str, data: &Value) -> Result<(), String> {
    let mut records = phased::LoopRecords::default();
    for (i, (k, d)) in before.iter().enumerate() {
        phased::fold_loop_event(&mut records, k, d, jiff::Timestamp::new(1_796_000_000 + i as i64, 0).unwrap())
            .unwrap_or_else(|r| panic!("{k} before the event under test: {r:?}"));
    }
    phased::fold_loop_event(&mut records, kind, data, jiff::Timestamp::new(1_797_000_000, 0).unwrap())
        .map_err(|r| format!("{:?}: {}", r.field, r.reason))
}

fn loop_config() -> phased::Config {
    let agent = |role: &str| phased::AgentSpec {
        template: vec!["claude".into(), "-p".into(), "{prompt}".into(), "--resume".into(), "{session}".into(), role.into()],
        reader: phased::Reader::ClaudeJson,
        worktree: "/home/ana/src/shop".into(),
    };
    phased::Config {
        implementer: agent("i"),
        reviewer: agent("r"),
        checklist: Some("PLAN.md".into()),
        max_rounds: 10,
        max_turns: phased::DEFAULT_MAX_TURNS,
        completion_signal: "COMPLETED".into(),
        review_stop_signal: "LGTM".into(),
        advance_prompt: phased::agent::default_advance_prompt("COMPLETED", Some("PLAN.md")),
        review_prompt: phased::agent::default_review_prompt("LGTM"),
        feedback_prompt: "Feedback:".into(),
    }
}

/// A loop kind, what the code writes, the events before that make it fold, bad variants.
type LoopCase = (&'static str, Value, Vec<(&'static str, Value)>, Vec<Value>);

/// The loop kinds: the schemas name exactly the keys the code writes, take what it writes
/// (nullable keys both ways), and refuse what the fold refuses, each after the events the
/// rule needs.
#[test]
fn the_loop_schemas_agree_with_the_code() {
    let kinds: BTreeSet<&str> = phased::KINDS.iter().copied().collect();
    for kind in &kinds {
        assert!(event::is_v1_kind(kind), "{kind} is registered as a v1 kind");
        assert!(matches!(event::decode(kind, &json!({})), Ok(event::Known::Unfolded)), "{kind} is folded by src/phased, not src/fold");
    }
    let schemas = kind_schemas();
    for kind in &kinds {
        assert!(schemas.contains_key(*kind), "journal-format/schema/{kind}.schema.json is missing");
    }
    let started = phased::LoopStarted { run: "r1".into(), config: loop_config() };
    let started_v = serde_json::to_value(&started).unwrap();
    let intended = phased::TurnIntended {
        run: "r1".into(),
        turn: 1,
        phase: 1,
        round: 0,
        kind: phased::TurnKind::Advance,
        launch: 1,
        prompt_blake3: hex_of(64, 3),
        prompt_bytes: 200,
        reply_file: "/home/ana/src/shop/.abcd/.work.local/runs/r1/implementer-1.reply.json".into(),
    };
    let replied = phased::TurnReplied {
        run: "r1".into(),
        turn: 1,
        launch: 1,
        reply_blake3: hex_of(64, 4),
        reply_bytes: 40,
        signal: false,
        session: Some("0b5c-sess".into()),
    };
    let abandoned = phased::TurnAbandoned { run: "r1".into(), turn: 1, launch: 1 };
    let lost = phased::TurnLost { run: "r1".into(), turn: 1, launch: 1, how: phased::LostHow::Signal, signal: Some(9) };
    let named = phased::LoopNamed { run: "r1".into() };
    let stopped = phased::LoopStopped { run: "r1".into(), reason: phased::StopReason::PeerError, detail: Some("exit code 3".into()) };
    let loop_started = vec![(phased::LOOP_STARTED, started_v.clone())];
    let mut turn_in_flight = loop_started.clone();
    turn_in_flight.push((phased::LOOP_TURN_INTENDED, serde_json::to_value(&intended).unwrap()));
    let mut under_review = turn_in_flight.clone();
    under_review.push((phased::LOOP_TURN_REPLIED, serde_json::to_value(&replied).unwrap()));
    let mut paused = under_review.clone();
    paused.push((phased::LOOP_PAUSED, json!(named)));

    // (kind, what the code writes, the events before that make it fold, bad variants)
    let mut paused_for_stop = paused.clone();
    paused_for_stop.pop();
    // The driver's pause at the bound: a loop of one turn whose turn was replied.
    let bounded = set_at(&started_v, &["config", "max_turns"], json!(1));
    let mut at_bound = under_review.clone();
    at_bound[0] = (phased::LOOP_STARTED, bounded);
    let max_turns_pause =
        serde_json::to_value(phased::LoopPaused { run: "r1".into(), reason: Some(phased::PauseReason::MaxTurns) }).unwrap();
    let cases: Vec<LoopCase> = vec![
        (
            phased::LOOP_STARTED,
            started_v.clone(),
            vec![],
            vec![
                set_at(&started_v, &["config", "max_rounds"], json!(0)),
                set_at(&started_v, &["config", "max_rounds"], json!(101)),
                set_at(&started_v, &["config", "max_turns"], json!(0)),
                set_at(&started_v, &["config", "max_turns"], json!(10_001)),
                set_at(&started_v, &["config", "completion_signal"], json!("ALL DONE")),
                set_at(&started_v, &["config", "completion_signal"], json!("")),
                set_at(&started_v, &["config", "implementer", "reader"], json!("json")),
                set_at(&started_v, &["config", "implementer", "template"], json!([])),
                set_at(&started_v, &["config", "implementer", "template"], json!(["x", "{prompt}\n"])),
                set_at(&started_v, &["config", "implementer", "worktree"], json!("")),
                set_at(&started_v, &["config", "advance_prompt"], json!("")),
                set_at(&started_v, &["config", "advance_prompt"], json!("x".repeat(8193))),
                set_at(&started_v, &["config", "checklist"], json!("")),
                set_at(&started_v, &["run"], json!("a..b")),
                without(&started_v, "config"),
                with(&started_v, "extra", json!(1)),
            ],
        ),
        (phased::LOOP_TURN_INTENDED, serde_json::to_value(&intended).unwrap(), loop_started.clone(), {
            let v = serde_json::to_value(&intended).unwrap();
            vec![
                with(&v, "kind", json!("probe")),
                with(&v, "turn", json!(0)),
                with(&v, "launch", json!(0)),
                with(&v, "round", json!(101)),
                with(&v, "prompt_blake3", json!("AB".repeat(32))),
                with(&v, "reply_file", json!("")),
                with(&v, "reply_file", json!("/a\nb")),
                without(&v, "reply_file"),
                with(&v, "extra", json!(1)),
            ]
        }),
        (phased::LOOP_TURN_REPLIED, serde_json::to_value(&replied).unwrap(), turn_in_flight.clone(), {
            let v = serde_json::to_value(&replied).unwrap();
            vec![
                with(&v, "session", json!("has space")),
                with(&v, "session", json!("")),
                with(&v, "session", json!("a".repeat(129))),
                with(&v, "signal", json!("yes")),
                with(&v, "reply_blake3", json!("ab")),
                with(&v, "launch", json!(0)),
                without(&v, "signal"),
            ]
        }),
        (
            phased::LOOP_TURN_ABANDONED,
            serde_json::to_value(&abandoned).unwrap(),
            turn_in_flight.clone(),
            vec![
                json!({"run": "r1", "turn": 0, "launch": 1}),
                json!({"run": "r1", "turn": 1}),
                json!({"run": "r1", "turn": 1, "launch": 1, "x": 1}),
            ],
        ),
        (
            phased::LOOP_TURN_LOST,
            serde_json::to_value(&lost).unwrap(),
            turn_in_flight.clone(),
            vec![
                json!({"run": "r1", "turn": 1, "launch": 1, "how": "signal", "signal": null}),
                json!({"run": "r1", "turn": 1, "launch": 1, "how": "signal", "signal": 0}),
                json!({"run": "r1", "turn": 1, "launch": 1, "how": "gone", "signal": 9}),
                json!({"run": "r1", "turn": 1, "launch": 1, "how": "crashed", "signal": null}),
                json!({"run": "r1", "turn": 0, "launch": 1, "how": "gone", "signal": null}),
                json!({"run": "r1", "turn": 1, "how": "gone", "signal": null}),
                json!({"run": "r1", "turn": 1, "launch": 1, "how": "gone", "signal": null, "x": 1}),
            ],
        ),
        (
            phased::LOOP_PAUSED,
            max_turns_pause,
            at_bound,
            vec![
                json!({}),
                json!({"run": "-r"}),
                json!({"run": "r1", "x": 1}),
                json!({"run": "r1", "reason": "phase_not_converged"}),
                json!({"run": "r1", "reason": "bored"}),
            ],
        ),
        (phased::LOOP_RESUMED, json!(named), paused.clone(), vec![json!({"run": 7})]),
        (phased::LOOP_RETRIED, json!(named), paused.clone(), vec![json!({"run": ""})]),
        (phased::LOOP_SKIPPED, json!(named), paused.clone(), vec![json!({"run": "r1.lock"})]),
        (phased::LOOP_STOPPED, serde_json::to_value(&stopped).unwrap(), paused_for_stop, {
            let v = serde_json::to_value(&stopped).unwrap();
            vec![
                with(&v, "reason", json!("completed")),
                with(&v, "detail", json!("")),
                with(&v, "detail", json!("a\nb")),
                with(&v, "detail", json!("x".repeat(513))),
                without(&v, "reason"),
            ]
        }),
    ];
    assert_eq!(cases.iter().map(|c| c.0).collect::<BTreeSet<_>>(), kinds, "every loop kind is checked");
    for (kind, written, before, bad) in cases {
        let schema = &schemas[kind];
        assert_eq!(keys_of(&written), keys_of(&schema["properties"]), "{kind} keys");
        assert!(errors_of(schema, &written).is_empty(), "{kind}: {:?}", errors_of(schema, &written));
        assert_eq!(loop_folds(&before, kind, &written), Ok(()), "{kind}");
        for data in bad {
            assert!(!errors_of(schema, &data).is_empty(), "the {kind} schema accepts {data}");
            assert!(loop_folds(&before, kind, &data).is_err(), "the code accepts {kind} {data}");
        }
    }
    // Nullable keys take null, as the code writes them.
    let nulls = [
        (phased::LOOP_STARTED, set_at(&started_v, &["config", "checklist"], Value::Null), vec![]),
        (phased::LOOP_TURN_REPLIED, with(&serde_json::to_value(&replied).unwrap(), "session", Value::Null), turn_in_flight.clone()),
        (phased::LOOP_TURN_LOST, json!({"run": "r1", "turn": 1, "launch": 1, "how": "gone", "signal": null}), turn_in_flight.clone()),
        (phased::LOOP_STOPPED, with(&serde_json::to_value(&stopped).unwrap(), "detail", Value::Null), under_review.clone()),
    ];
    for (kind, data, before) in nulls {
        assert!(errors_of(&schemas[kind], &data).is_empty(), "{kind} {data}");
        assert_eq!(loop_folds(&before, kind, &data), Ok(()), "{kind} {data}");
    }
    // Optional keys: a pause by hand names no reason (or manual), and a loop.started written
    // before the turn bound existed has no max_turns; each is taken and folds.
    let older_start = {
        let mut v = started_v.clone();
        v["config"].as_object_mut().unwrap().remove("max_turns");
        v
    };
    let optional = [
        (phased::LOOP_PAUSED, json!(named), under_review.clone()),
        (phased::LOOP_PAUSED, json!({"run": "r1", "reason": "manual"}), under_review.clone()),
        (phased::LOOP_STARTED, older_start, vec![]),
    ];
    for (kind, data, before) in optional {
        assert!(errors_of(&schemas[kind], &data).is_empty(), "{kind} {data}");
        assert_eq!(loop_folds(&before, kind, &data), Ok(()), "{kind} {data}");
    }
}

// ---------------------------------------------------------------------------------------
// The blocker sweep and the return lists (issue 23)
// ---------------------------------------------------------------------------------------

/// `away.sweep_started`, `away.sweep_answered` and `away.return_shown`: the schemas name
/// exactly the keys the code writes, and take what the fold takes and refuse what it
/// refuses, the sweep's bounds met exactly included.
#[test]
fn the_sweep_schemas_agree_with_the_code() {
    let started = schema("away.sweep_started.schema.json");
    let answered = schema("away.sweep_answered.schema.json");
    let shown = schema("away.return_shown.schema.json");
    let wc = "/home/ana/src/shop";
    let start = window().start;
    let plus = |d: jiff::SignedDuration| start.checked_add(d).unwrap();
    let sweep = |deadline| serde_json::to_value(AwaySweepStarted { start, deadline, working_copy: wc.into() }).unwrap();
    let token = github_token();

    // away.sweep_started, within the open window.
    let code = in_repository(event::AWAY_SWEEP_STARTED);
    let good = sweep(plus(away::SWEEP_DEADLINE_DEFAULT));
    assert_eq!(keys_of(&good), keys_of(&started["properties"]), "away.sweep_started keys");
    agree(&started, &code, &good, true);
    for d in [away::SWEEP_DEADLINE_MIN, away::SWEEP_DEADLINE_MAX] {
        assert!(code(&sweep(plus(d))).is_ok(), "{d:?} is within the bounds");
    }
    let second = jiff::SignedDuration::from_secs(1);
    for d in [away::SWEEP_DEADLINE_MIN - second, away::SWEEP_DEADLINE_MAX + second, jiff::SignedDuration::ZERO] {
        let data = sweep(plus(d));
        assert!(errors_of(&started, &data).is_empty() && code(&data).is_err(), "the bounds are the fold's: {data}");
    }
    for data in [
        without(&good, "deadline"),
        without(&good, "start"),
        without(&good, "working_copy"),
        with(&good, "extra", json!(1)),
        with(&good, "deadline", json!("soon")),
        with(&good, "working_copy", json!("")),
        with(&good, "working_copy", json!("a\nb")),
    ] {
        agree(&started, &code, &data, false);
    }
    assert!(folds(repository_scope(), &[], event::AWAY_SWEEP_STARTED, &good).is_err(), "a sweep needs an open window");
    assert!(folds(working_copy_scope(), &[], event::AWAY_SWEEP_STARTED, &good).is_err(), "it belongs in a repository journal");

    // away.sweep_answered, after the sweep it answers.
    let set = (event::AWAY_SET, serde_json::to_value(window()).unwrap());
    let swept = [set.clone(), (event::AWAY_SWEEP_STARTED, good.clone())];
    let code = |data: &Value| folds(repository_scope(), &swept, event::AWAY_SWEEP_ANSWERED, data);
    let good = serde_json::to_value(AwaySweepAnswered { sweep_start: start, working_copy: wc.into() }).unwrap();
    assert_eq!(keys_of(&good), keys_of(&answered["properties"]), "away.sweep_answered keys");
    agree(&answered, code, &good, true);
    agree(&answered, code, &with(&good, "working_copy", json!("é".repeat(4096))), true);
    for data in [
        without(&good, "sweep_start"),
        without(&good, "working_copy"),
        with(&good, "extra", json!(1)),
        with(&good, "working_copy", json!("é".repeat(4097))),
        with(&good, "working_copy", json!(" ")),
    ] {
        agree(&answered, code, &data, false);
    }
    let other_sweep = with(&good, "sweep_start", json!("2026-11-30T06:00:01Z"));
    assert!(errors_of(&answered, &other_sweep).is_empty() && code(&other_sweep).is_err(), "an answer to no sweep of the window");
    let secret = with(&good, "working_copy", json!(format!("/home/{token}")));
    assert!(errors_of(&answered, &secret).is_empty() && code(&secret).is_err(), "a secret is the fold's to refuse");

    // away.return_shown, after the window closed.
    let ended = (event::AWAY_ENDED, serde_json::to_value(AwayEnded { ended_by: "Ana Lima".into(), working_copy: wc.into() }).unwrap());
    let closed = [set.clone(), ended];
    let code = |data: &Value| folds(repository_scope(), &closed, event::AWAY_RETURN_SHOWN, data);
    let good = serde_json::to_value(AwayReturnShown { window_start: start, working_copy: wc.into() }).unwrap();
    assert_eq!(keys_of(&good), keys_of(&shown["properties"]), "away.return_shown keys");
    agree(&shown, code, &good, true);
    for data in [
        without(&good, "window_start"),
        without(&good, "working_copy"),
        with(&good, "extra", json!(1)),
        with(&good, "working_copy", json!("")),
    ] {
        agree(&shown, code, &data, false);
    }
    let open = [set];
    assert!(folds(repository_scope(), &open, event::AWAY_RETURN_SHOWN, &good).is_err(), "the window must be closed");
    let other = with(&good, "window_start", json!("2026-11-30T06:00:01Z"));
    assert!(errors_of(&shown, &other).is_empty() && code(&other).is_err(), "it names the closed window");
}

/// `away.set`'s optional `notify`, `away.notified` and `away.notification_recorded`
/// (issue 23, docs/notify.md), as `the_away_schemas_agree_with_the_code` holds the away kinds.
#[test]
fn the_notify_schemas_agree_with_the_code() {
    use abcd::away::notify::{self, AwayNotificationRecorded, AwayNotified, NotifyKind};
    let set = schema("away.set.schema.json");
    let notified = schema("away.notified.schema.json");
    let seen = schema("away.notification_recorded.schema.json");
    let wc = "/home/ana/src/shop";
    let line = |n: usize| json!("é".repeat(n));
    let p = |s: &Value, key: &str| s["properties"][key]["maxLength"].clone();
    assert_eq!(p(&set, "notify"), json!(notify::NOTIFY_COMMAND_MAX_CHARS));
    assert_eq!(p(&notified, "summary"), json!(notify::NOTIFY_SUMMARY_MAX_CHARS));
    assert_eq!(p(&seen, "line"), json!(notify::NOTIFICATION_LINE_MAX_CHARS));
    for s in [&notified, &seen] {
        assert_eq!(p(s, "working_copy"), json!(away::WORKING_COPY_MAX_CHARS), "{}", s["title"]);
    }
    for (s, key) in [(&set, "notify"), (&notified, "summary"), (&seen, "line"), (&notified, "working_copy")] {
        assert_eq!(s["properties"][key]["pattern"], json!(TEXT_LINE), "{key}");
    }

    // away.set with a notify command: every key written, and the command's rules.
    let code = |data: &Value| folds(repository_scope(), &[], event::AWAY_SET, data);
    let good = serde_json::to_value(AwaySet { notify: Some("notify-send abcd \"$1\"".into()), ..window() }).unwrap();
    assert_eq!(keys_of(&good), keys_of(&set["properties"]), "away.set keys with notify");
    agree(&set, code, &good, true);
    agree(&set, code, &with(&good, "notify", line(1000)), true);
    for v in [line(1001), json!(""), json!(" "), json!("a\nb"), json!(1)] {
        agree(&set, code, &with(&good, "notify", v), false);
    }
    let secret = with(&good, "notify", json!(format!("curl -H 'Authorization: token {}' x", github_token())));
    assert!(errors_of(&set, &secret).is_empty() && code(&secret).is_err(), "the fold refuses a secret the schema cannot see");

    // away.notified: each kind, and the rules of each key.
    let code = in_repository(event::AWAY_NOTIFIED);
    for kind in [NotifyKind::StopFailure, NotifyKind::CapForced, NotifyKind::AllBlocked, NotifyKind::BoundReached] {
        let data = serde_json::to_value(AwayNotified {
            kind,
            at: at("2026-11-30T07:00:00Z"),
            summary: "abcd: x in shop".into(),
            working_copy: wc.into(),
        })
        .unwrap();
        assert_eq!(keys_of(&data), keys_of(&notified["properties"]), "away.notified keys");
        agree(&notified, &code, &data, true);
    }
    let good = serde_json::to_value(AwayNotified {
        kind: NotifyKind::StopFailure,
        at: at("2026-11-30T07:00:00.5Z"),
        summary: "s".into(),
        working_copy: wc.into(),
    })
    .unwrap();
    assert_eq!(notified["properties"]["at"]["pattern"], json!(JIFF_INSTANT));
    agree(&notified, &code, &with(&good, "summary", line(200)), true);
    let mut both_refuse = vec![with(&good, "extra", json!(1))];
    for key in ["kind", "at", "summary", "working_copy"] {
        both_refuse.push(without(&good, key));
    }
    for (key, v) in [
        ("kind", json!("other")),
        ("at", json!("now")),
        ("summary", line(201)),
        ("summary", json!("")),
        ("summary", json!("a\tb")),
        ("working_copy", line(4097)),
    ] {
        both_refuse.push(with(&good, key, v));
    }
    for data in &both_refuse {
        agree(&notified, &code, data, false);
    }
    let data = with(&good, "summary", json!(github_token()));
    assert!(errors_of(&notified, &data).is_empty() && code(&data).is_err(), "a secret summary");
    assert!(folds(repository_scope(), &[], event::AWAY_NOTIFIED, &good).is_err(), "no open window");
    assert!(folds(working_copy_scope(), &[], event::AWAY_NOTIFIED, &good).is_err(), "not the repository journal");

    // away.notification_recorded: with and without its line.
    let code = in_repository(event::AWAY_NOTIFICATION_RECORDED);
    let full = AwayNotificationRecorded {
        notification_type: "idle_prompt".into(),
        line: Some("Claude is waiting for your input".into()),
        working_copy: wc.into(),
    };
    let good = serde_json::to_value(&full).unwrap();
    assert_eq!(keys_of(&good), keys_of(&seen["properties"]), "away.notification_recorded keys");
    agree(&seen, &code, &good, true);
    agree(&seen, &code, &without(&good, "line"), true);
    agree(&seen, &code, &with(&good, "line", line(200)), true);
    agree(&seen, &code, &with(&good, "notification_type", json!("a".repeat(64))), true);
    let mut both_refuse = vec![with(&good, "extra", json!(1)), without(&good, "notification_type"), without(&good, "working_copy")];
    for (key, v) in [
        ("notification_type", json!("Idle")),
        ("notification_type", json!("")),
        ("notification_type", json!("a".repeat(65))),
        ("line", line(201)),
        ("line", json!("")),
        ("line", json!("a\nb")),
    ] {
        both_refuse.push(with(&good, key, v));
    }
    for data in &both_refuse {
        agree(&seen, &code, data, false);
    }
    let data = with(&good, "line", json!(github_token()));
    assert!(errors_of(&seen, &data).is_empty() && code(&data).is_err(), "a secret line");
    assert!(folds(repository_scope(), &[], event::AWAY_NOTIFICATION_RECORDED, &good).is_err(), "no open window");
}

/// `mirror.line_redacted` (issue 34, MIRROR.md §11): the keys abcd writes are the schema's,
/// and data the push's reader refuses the schema refuses too. The hash's and the secret's
/// spelling are the schema's to say; the push honours a decision only for a line whose seq
/// and hash are the decision's, so another spelling redacts nothing.
#[test]
fn mirror_line_redacted_data_is_what_the_schema_says() {
    let redacted = schema("mirror.line_redacted.schema.json");
    let good = abcd::event::mirror::LineRedacted { seq: 3, hash: "ab".repeat(32), secret: "github_token".into() };
    let written = serde_json::to_value(&good).unwrap();
    assert_eq!(keys_of(&written), keys_of(&redacted["properties"]), "mirror.line_redacted keys");
    for (data, takes) in [
        (written.clone(), true),
        (json!({"seq": 3, "hash": "ab".repeat(32)}), false),
        (json!({"seq": 3, "secret": "github_token"}), false),
        (json!({"seq": "3", "hash": "ab".repeat(32), "secret": "github_token"}), false),
        (json!({"seq": 3, "hash": "ab".repeat(32), "secret": "github_token", "line": "x"}), false),
    ] {
        let code = serde_json::from_value::<abcd::event::mirror::LineRedacted>(data.clone()).is_ok();
        assert_eq!(code, takes, "the code on {data}");
        assert_eq!(errors_of(&redacted, &data).is_empty(), takes, "the schema on {data}");
    }
    for data in [
        json!({"seq": 0, "hash": "ab".repeat(32), "secret": "github_token"}),
        json!({"seq": 3, "hash": "AB".repeat(32), "secret": "github_token"}),
        json!({"seq": 3, "hash": "ab".repeat(31), "secret": "github_token"}),
        json!({"seq": 3, "hash": "ab".repeat(32), "secret": "GitHub token"}),
    ] {
        assert!(!errors_of(&redacted, &data).is_empty(), "the schema refuses {data}");
    }
    assert!(event::is_v1_kind(event::MIRROR_LINE_REDACTED));
    assert!(matches!(event::decode(event::MIRROR_LINE_REDACTED, &written), Ok(event::Known::Unfolded)), "read by the push, not folded");
}

/// `away.mode_refused` (issue 35): the keys abcd writes are the schema's, the routes and
/// actions are the code's, and data the fold refuses the schema refuses too where it can
/// say so; what it cannot (a mark only and always on the verb's route, the actions each
/// route refuses, a secret, the period's limit) the fold checks.
#[test]
fn the_mode_refused_schema_agrees_with_the_code() {
    use abcd::away::refusals::{AwayModeRefused, REFUSALS_RECORDED_MAX, RefusalRoute, RefusedAction};
    let refused = schema("away.mode_refused.schema.json");
    let code = in_repository(event::AWAY_MODE_REFUSED);
    let verb = AwayModeRefused {
        route: RefusalRoute::Verb,
        action: RefusedAction::Back,
        mark: Some("CLAUDECODE".into()),
        session: Some("3f2c8a1e-5b7d-4e90-a1c3-d5e7f9012b4c".into()),
        working_copy: "/home/ana/src/shop".into(),
    };
    let good = serde_json::to_value(&verb).unwrap();
    assert_eq!(keys_of(&good), keys_of(&refused["properties"]), "away.mode_refused keys");
    let p = &refused["properties"];
    assert_eq!(strings(&p["route"]["enum"]), ["shell_rule", "file_tool_rule", "verb"]);
    assert_eq!(strings(&p["action"]["enum"]), ["autonomous", "back", "own_file_write", "unreadable"]);
    assert_eq!((&p["session"]["pattern"], &p["working_copy"]["pattern"]), (&json!(SESSION_ID), &json!(TEXT_LINE)));
    assert_eq!(p["working_copy"]["maxLength"], json!(away::WORKING_COPY_MAX_CHARS));
    agree(&refused, &code, &good, true);
    agree(&refused, &code, &without(&good, "session"), true);
    // The mark's limit, the side it holds: a name of MARK_MAX_BYTES (65 is refused below).
    agree(&refused, &code, &with(&good, "mark", json!("A".repeat(abcd::away::refusals::MARK_MAX_BYTES))), true);
    let shell = json!({"route": "shell_rule", "action": "unreadable", "working_copy": "/w"});
    agree(&refused, &code, &shell, true);
    agree(&refused, &code, &json!({"route": "file_tool_rule", "action": "own_file_write", "session": "s1", "working_copy": "/w"}), true);
    for data in [
        with(&good, "command", json!("abcd mode back")),
        without(&good, "route"),
        without(&good, "action"),
        without(&good, "working_copy"),
        with(&good, "route", json!("hook")),
        with(&good, "action", json!("queue")),
        with(&good, "mark", json!("claudecode")),
        with(&good, "mark", json!("CLAUDECODE=1")),
        with(&good, "mark", json!("A".repeat(65))),
        with(&good, "session", json!("has space")),
        with(&good, "working_copy", json!("a\nb")),
        with(&good, "working_copy", json!("")),
    ] {
        agree(&refused, &code, &data, false);
    }
    // What only the fold can say.
    for data in [
        without(&good, "mark"),
        with(&shell, "mark", json!("CLAUDECODE")),
        with(&good, "action", json!("own_file_write")),
        json!({"route": "file_tool_rule", "action": "back", "working_copy": "/w"}),
        with(&good, "session", json!(github_token())),
        with(&good, "working_copy", json!(format!("/home/{}", github_token()))),
    ] {
        assert!(errors_of(&refused, &data).is_empty() && code(&data).is_err(), "the fold refuses {data}");
    }
    assert!(folds(working_copy_scope(), &[], event::AWAY_MODE_REFUSED, &good).is_err(), "not the repository journal");
    // No window is needed (an attempt while present is recorded too), and the period's
    // limit holds in the fold: the last one it takes, and the one past it.
    assert!(folds(repository_scope(), &[], event::AWAY_MODE_REFUSED, &good).is_ok(), "while present");
    let before: Vec<(&str, Value)> = (1..REFUSALS_RECORDED_MAX).map(|_| (event::AWAY_MODE_REFUSED, good.clone())).collect();
    assert!(folds(repository_scope(), &before, event::AWAY_MODE_REFUSED, &good).is_ok(), "the limit's own");
    let mut full = before.clone();
    full.push((event::AWAY_MODE_REFUSED, good.clone()));
    assert!(folds(repository_scope(), &full, event::AWAY_MODE_REFUSED, &good).is_err(), "one past the limit");
    // A mode change starts a new period.
    full.push((event::AWAY_SET, serde_json::to_value(window()).unwrap()));
    assert!(folds(repository_scope(), &full, event::AWAY_MODE_REFUSED, &good).is_ok(), "a new period after away.set");
}
