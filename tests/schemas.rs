//! The JSON Schemas of `journal-format/schema/` checked against the vectors and the code.
//!
//! A full JSON Schema validator is not a dependency, so this file evaluates the small
//! subset the schemas use (type, const, enum, required, properties, additionalProperties,
//! minProperties, items, maxItems, minimum, maximum, minLength, maxLength, oneOf, allOf,
//! if/then/else) and refuses any other keyword, so a schema cannot lean on something this
//! check silently skips. `pattern` is evaluated through a table of the patterns the schemas
//! use, each written out as the rule the regular expression states; tests below hold each
//! rule against the code's own validator.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use abcd::checklist::item::{self, ChangeSet, Credential, ItemFields, ItemState};
use abcd::checklist::secrets::{self, SecretKind};
use abcd::event::{self, ItemAdded, ItemChanged, JournalOpened, JournalRepaired, RepairCause, Scope, WriteRefused};
use abcd::fold::{self, FoldNote, FoldedState};
use abcd::journal::format;
use abcd::journal::scan::{self, StartPoint};
use abcd::journal::storage::StorageFile;
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
        "^[0-9a-f]{64}$" => hex(64),
        "^[0-9a-f]{32}$" => hex(32),
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

struct MemFile(Vec<u8>);

impl StorageFile for MemFile {
    fn len(&self) -> std::io::Result<u64> {
        Ok(self.0.len() as u64)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let start = (offset as usize).min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }
    fn append(&self, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("read-only"))
    }
    fn write_at(&self, _: &[u8], _: u64) -> std::io::Result<()> {
        Err(std::io::Error::other("read-only"))
    }
    fn set_len(&self, _: u64) -> std::io::Result<()> {
        Err(std::io::Error::other("read-only"))
    }
    fn sync_data(&self) -> std::io::Result<()> {
        Ok(())
    }
}

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
        scan::scan(&MemFile(bytes.clone()), StartPoint::GENESIS, |event, pos| {
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
/// them skipped (bar the genesis that is bad on purpose).
#[test]
fn every_verified_event_folds_without_being_skipped() {
    let mut folded_items = 0;
    for (name, events) in verified_events() {
        let mut state = FoldedState::default();
        for (event, _) in &events {
            if let FoldNote::Skipped(skipped) = fold::fold_event(&mut state, event) {
                assert!(name == "corrupt-genesis-bad-data" && skipped.seq == 0, "{name}: {skipped}");
            }
        }
        folded_items += state.checklist.items.len();
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
    };
    let written = serde_json::to_value(&r).unwrap();
    assert_eq!(keys(&written), keys(&repaired["properties"]), "journal.repaired keys");
    assert!(errors_of(&repaired, &written).is_empty());
    let scopes = [Scope::WorkingCopy { root: "/w".into() }, Scope::Repository { root_commit: "ab".repeat(20) }, Scope::Machine {}];
    for scope in scopes {
        let written = serde_json::to_value(JournalOpened { journal_id: "0123456789abcdef".repeat(2), scope }).unwrap();
        assert_eq!(keys(&written), keys(&opened["properties"]), "journal.opened keys");
        assert!(errors_of(&opened, &written).is_empty(), "{written}: {:?}", errors_of(&opened, &written));
    }

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
