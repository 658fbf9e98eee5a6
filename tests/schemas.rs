//! The JSON Schemas of `journal-format/schema/` checked against the vectors and the code.
//!
//! A full JSON Schema validator is not a dependency, so this file evaluates the small
//! subset the schemas use (type, const, enum, required, properties, additionalProperties,
//! minimum, maximum, minLength, maxLength, oneOf, if/then/else) and refuses any other
//! keyword, so a schema cannot lean on something this check silently skips. `pattern` is
//! evaluated through a table of the patterns the schemas use, each paired with the code's
//! own rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use abcd::event::{self, JournalOpened, JournalRepaired, RepairCause, Scope};
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

/// Keywords that only annotate.
const ANNOTATIONS: &[&str] = &["$schema", "$id", "title", "description", "$comment", "examples"];

/// The patterns the schemas use, each with the rule it stands for.
fn pattern_holds(pattern: &str, s: &str) -> bool {
    let hex = |n: usize| s.len() == n && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    match pattern {
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

/// Every verified line of every vector, as `(vector, seq, the line's JSON object)`.
fn verified_lines() -> Vec<(String, u64, Value)> {
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
        let mut lines = Vec::new();
        scan::scan(&MemFile(bytes.clone()), StartPoint::GENESIS, |event, pos| {
            let line = &bytes[pos.offset as usize..(pos.offset + pos.len) as usize];
            lines.push((event.seq, serde_json::from_slice::<Value>(&line[..line.len() - 1]).unwrap()));
            Ok::<(), std::convert::Infallible>(())
        })
        .unwrap();
        out.extend(lines.into_iter().map(|(seq, v)| (name.clone(), seq, v)));
    }
    out
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
        if name == "corrupt-genesis-bad-data" {
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
/// two kinds whose data the journal itself defines.
#[test]
fn the_schema_folder_holds_what_it_should() {
    let found: BTreeSet<String> =
        std::fs::read_dir(format_dir().join("schema")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    for must in ["event.schema.json", "journal.opened.schema.json", "journal.repaired.schema.json"] {
        assert!(found.contains(must), "{must} is missing");
    }
    for name in &found {
        let kind = name.strip_suffix(".schema.json").unwrap_or_else(|| panic!("{name}: the folder holds only <kind>.schema.json files"));
        assert!(kind == "event" || event::is_v1_kind(kind), "{name}: {kind} is not a v1 kind");
    }
}
