//! The journal format v1 test vectors (`journal-format/vectors/`).
//!
//! Every vector is generated here, deterministically (fixed times, journal ids, pids), and
//! its expected verdict is written from what the generator built, never from what the
//! verifier says. In a normal run this file:
//!
//! - pairs every `<name>.jsonl` with its `<name>.expected.json` (a lone file of either
//!   kind fails the run);
//! - checks each vector's verdict with `abcd::journal::scan::scan` exactly (verdict kind,
//!   verified events, seq, byte offset, problem code), and with `verify::verify`, which
//!   adds the genesis data rule on top of the scan;
//! - checks that the files on disk are byte for byte what the generator builds today, so
//!   a change in how abcd writes lines cannot go unnoticed;
//! - checks that the README lists every vector and SPEC.md quotes the worked example.
//!
//! `ABCD_REGENERATE_VECTORS=1 cargo test --release --test journal vectors::` rewrites the folder
//! (vectors, expected files, README) and then runs the same checks.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Once;

use abcd::checklist::item::{ChangeSet, Credential, ItemFields, ItemState, slug_from_title};
use abcd::event::{ItemAdded, ItemChanged, JournalOpened, JournalRepaired, RepairCause, Scope};
use abcd::journal::format::{self, Actor, HASH_SUFFIX_LEN, Hash, LineFault, MAX_LINE_BYTES, NewEvent};
use abcd::journal::scan::{self, LinePos, MAX_TORN_TAIL_BYTES, Problem, ScanReport, StartPoint, Verdict};
use abcd::journal::storage::{BytesFile, RealDisk};
use abcd::journal::verify;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const REGENERATE_VAR: &str = "ABCD_REGENERATE_VECTORS";

fn format_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("journal-format")
}

fn vectors_dir() -> PathBuf {
    format_dir().join("vectors")
}

// ---------------------------------------------------------------------------------------
// Expected verdicts and problem codes
// ---------------------------------------------------------------------------------------

/// The contents of `<name>.expected.json`, field for field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    /// `clean`, `torn_tail` or `corrupt`.
    verdict: String,
    /// Verified events before the first bad byte (all of them when clean).
    events: u64,
    /// For `corrupt`: the seq the bad line should have had. Null otherwise.
    seq: Option<u64>,
    /// For `corrupt`: the first byte of the bad line; for `torn_tail`: the first byte of
    /// the torn region. Null when clean.
    offset: Option<u64>,
    /// A stable short code for what is wrong at `offset`. Null when clean.
    problem: Option<String>,
}

impl Expected {
    fn clean(events: u64) -> Expected {
        Expected { verdict: "clean".into(), events, seq: None, offset: None, problem: None }
    }

    fn torn(events: u64, offset: u64, problem: &str) -> Expected {
        Expected { verdict: "torn_tail".into(), events, seq: None, offset: Some(offset), problem: Some(problem.into()) }
    }

    /// Corruption found by the scan: the bad line is the `events`-th, so its seq is `events`.
    fn corrupt(events: u64, offset: u64, problem: &str) -> Expected {
        Expected { verdict: "corrupt".into(), events, seq: Some(events), offset: Some(offset), problem: Some(problem.into()) }
    }

    fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes") + "\n"
    }

    fn in_words(&self) -> String {
        let problem = self.problem.as_deref().unwrap_or("");
        match self.verdict.as_str() {
            "clean" => format!("clean, {}", events(self.events)),
            "torn_tail" => format!("torn tail at byte {} (`{problem}`), {}", self.offset.unwrap(), events(self.events)),
            _ => format!(
                "corrupt at seq {}, byte {} (`{problem}`), {} before it",
                self.seq.unwrap(),
                self.offset.unwrap(),
                events(self.events)
            ),
        }
    }
}

fn events(n: u64) -> String {
    if n == 1 { "1 event".into() } else { format!("{n} events") }
}

/// The problem code of a line that is not a valid v1 event on its own.
fn fault_code(fault: &LineFault) -> &'static str {
    match fault {
        LineFault::NoNewline => "no_newline",
        LineFault::TooLong => "too_long",
        LineFault::NotUtf8 => "not_utf8",
        LineFault::NoHashSuffix => "no_hash_suffix",
        LineFault::HashMismatch => "hash_mismatch",
        LineFault::NotAnEvent(_) => "not_an_event",
        LineFault::Version(_) => "bad_version",
        LineFault::Field { field: "time", .. } => "bad_time",
        LineFault::Field { field: "kind", rule } if rule.contains("event 0") => "genesis_kind",
        LineFault::Field { field: "kind", .. } => "bad_kind",
        LineFault::Field { field: "data", rule } if rule.contains("journal_id") => "bad_genesis_data",
        LineFault::Field { field: "data", rule } if *rule == format::GAP_RULE => "bad_gap",
        LineFault::Field { field: "data", .. } => "data_not_object",
        LineFault::Field { field, rule } => panic!("no problem code for field `{field}` ({rule}): add one to the vectors"),
    }
}

fn problem_code(problem: &Problem) -> &'static str {
    match problem {
        Problem::Line(fault) => fault_code(fault),
        Problem::SeqOutOfOrder { .. } => "seq_out_of_order",
        Problem::PrevMismatch => "prev_mismatch",
    }
}

fn expected_from(verdict: &Verdict, events: u64) -> Expected {
    match verdict {
        Verdict::Clean => Expected::clean(events),
        Verdict::TornTail(t) => Expected::torn(events, t.offset, fault_code(&t.fault)),
        Verdict::Corrupt(c) => Expected {
            verdict: "corrupt".into(),
            events,
            seq: Some(c.seq),
            offset: Some(c.offset),
            problem: Some(problem_code(&c.problem).into()),
        },
    }
}

// ---------------------------------------------------------------------------------------
// Building journals
// ---------------------------------------------------------------------------------------

const TOOL: &str = "abcd/0.1.0";
const PID: u32 = 4242;
const OTHER_PID: u32 = 31337;
const SESSION: &str = "3f2c8a1e-5b7d-4e90-a1c3-d5e7f9012b4c";
const ID_A: &str = "6a1f0c9e2b7d4a38915e0c7b2d4f6a81";
const ID_B: &str = "c3e5a7091b2d4f60718293a4b5c6d7e8";
const ID_C: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
const BASE_TIME: &str = "2026-11-30T06:00:00.000Z";

/// The time of the event at `seq` in every vector: fixed, distinct, with milliseconds.
fn time_of(seq: u64) -> jiff::Timestamp {
    let base: jiff::Timestamp = BASE_TIME.parse().expect("a valid time");
    jiff::Timestamp::from_millisecond(base.as_millisecond() + seq as i64 * 1_037).expect("in range")
}

fn actor(session: bool, pid: u32) -> Actor {
    Actor { session: session.then(|| SESSION.to_string()), pid, tool: TOOL.into() }
}

fn working_copy() -> Scope {
    Scope::WorkingCopy { root: "/home/ana/src/shop".into() }
}

/// A journal under construction: whole lines, each with its hash.
#[derive(Clone)]
struct Chain {
    lines: Vec<Vec<u8>>,
    hashes: Vec<Hash>,
    pid: u32,
}

impl Chain {
    fn new(journal_id: &str, scope: Scope, pid: u32) -> Chain {
        let data = serde_json::to_value(JournalOpened { journal_id: journal_id.into(), scope }).unwrap();
        Chain::with_genesis_data(data, pid)
    }

    fn with_genesis_data(data: Value, pid: u32) -> Chain {
        let mut chain = Chain { lines: vec![], hashes: vec![], pid };
        let event = NewEvent { kind: "journal.opened".into(), actor: actor(false, pid), data };
        let (line, hash) = format::encode_line(0, time_of(0), &event, &Hash::genesis_prev()).unwrap();
        chain.push_line(line, hash);
        chain
    }

    fn next_seq(&self) -> u64 {
        self.lines.len() as u64
    }

    fn head(&self) -> Hash {
        *self.hashes.last().expect("a chain starts with its genesis")
    }

    fn push_line(&mut self, line: Vec<u8>, hash: Hash) {
        self.lines.push(line);
        self.hashes.push(hash);
    }

    /// The line the next event would be, without adding it.
    fn encode(&self, kind: &str, data: Value) -> (Vec<u8>, Hash) {
        let seq = self.next_seq();
        let event = NewEvent { kind: kind.into(), actor: actor(true, self.pid), data };
        format::encode_line(seq, time_of(seq), &event, &self.head()).unwrap()
    }

    fn push(&mut self, kind: &str, data: Value) -> &mut Chain {
        let (line, hash) = self.encode(kind, data);
        self.push_line(line, hash);
        self
    }

    /// Adds the standard events (illustrative data) until the chain holds `n` events.
    fn fill_to(&mut self, n: u64) -> &mut Chain {
        while self.next_seq() < n {
            let (kind, data) = standard_event(self.next_seq());
            self.push(kind, data);
        }
        self
    }

    /// Adds a line built by `edit` from the next canonical line's body, hashed by the
    /// rule: a line abcd would never write, but whose hash verifies.
    fn push_forged(&mut self, kind: &str, data: Value, edit: impl FnOnce(String) -> Vec<u8>) -> &mut Chain {
        let (line, _) = self.encode(kind, data);
        let (line, hash) = forge(edit(body_text(&line)));
        self.push_line(line, hash);
        self
    }

    fn offset(&self, index: usize) -> u64 {
        self.lines[..index].iter().map(|l| l.len() as u64).sum()
    }

    fn bytes(&self) -> Vec<u8> {
        self.lines.concat()
    }
}

/// The body of a canonical line: everything before `,"hash":"`.
fn body_text(line: &[u8]) -> String {
    String::from_utf8(line[..line.len() - 1 - HASH_SUFFIX_LEN].to_vec()).unwrap()
}

/// Hashes `body` by the rule and frames it as a line.
fn forge(body: impl AsRef<[u8]>) -> (Vec<u8>, Hash) {
    let body = body.as_ref();
    let hash = format::hash_body(body);
    let mut line = body.to_vec();
    line.extend_from_slice(format!(",\"hash\":\"{hash}\"}}\n").as_bytes());
    (line, hash)
}

/// `text` with exactly one occurrence of `from` replaced.
fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "`{from}` occurs once in {text}");
    text.replacen(from, to, 1)
}

/// A kind no abcd defines (not a v1 kind): verified and kept like any other, its data
/// free. The vectors that need data no defined kind allows (64 KiB of text, deep nesting)
/// put it under this kind.
const FREE_KIND: &str = "future.widget_spun";

/// The titles of the two items the standard events add in each round of eight.
const FIRST_TITLE: &str = "Parse the config file";
const SECOND_TITLE: &str = "Café, naïve ✓ — \"quoted\" and a back\\slash";

fn at(text: &str) -> jiff::Timestamp {
    text.parse().expect("a valid time")
}

/// The id `abcd checklist add` gives the item with this title added in round `round` of
/// the standard events: the slug, then `-2`, `-3`, … as earlier rounds took it.
fn standard_id(title: &str, round: u64) -> String {
    let slug = slug_from_title(title);
    if round == 0 { slug } else { format!("{slug}-{}", round + 1) }
}

/// `data` of a `checklist.item_added`, as `abcd checklist add` writes it.
fn item_added(item: ItemFields) -> Value {
    serde_json::to_value(ItemAdded { item }).unwrap()
}

/// An item as `abcd checklist add "<title>"` writes it, with nothing else set.
fn new_item(title: &str) -> Value {
    item_added(ItemFields::working(&slug_from_title(title), title))
}

/// `data` of a `checklist.item_changed`, as `abcd checklist set` writes it.
fn item_changed(id: String, changes: ChangeSet) -> Value {
    serde_json::to_value(ItemChanged { id, changes }).unwrap()
}

/// Events 1, 2, … of the vectors. The `checklist.*` data is real: each event is what the
/// verbs write and the checklist fold takes, in any journal the standard events fill from
/// seq 1 (two items added per round of eight, each changed later in the round or in the
/// next). The session, compaction, branch and `session.judged` data is what the hooks
/// write in a working copy journal.
fn standard_event(seq: u64) -> (&'static str, Value) {
    let round = seq / 8;
    match seq % 8 {
        1 => ("session.started", json!({"session": SESSION, "source": "startup", "working_copy": "/home/ana/src/shop"})),
        2 => (
            "checklist.item_added",
            item_added(ItemFields {
                id: standard_id(FIRST_TITLE, round),
                title: FIRST_TITLE.into(),
                state: ItemState::Waiting,
                waits_on: Some("person:reviewer".into()),
                next_look: Some(at("2026-12-01T09:00:00Z")),
                promise: Some("review approved => merge the new parser".into()),
                owner_refs: vec!["abcd/parse-config".into()],
                credential: None,
                blocker: None,
            }),
        ),
        3 => (
            "checklist.item_added",
            item_added(ItemFields {
                id: standard_id(SECOND_TITLE, round),
                title: SECOND_TITLE.into(),
                state: ItemState::Working,
                waits_on: None,
                next_look: None,
                promise: None,
                owner_refs: vec!["abcd/c2-parse".into(), "pr:12".into()],
                credential: Some(Credential {
                    kind: "github_token".into(),
                    scope: "repo".into(),
                    expiry: Some(at("2027-01-31T23:59:59.5Z")),
                }),
                blocker: None,
            }),
        ),
        // Done: waits_on and next_look cleared (a present null clears a field).
        4 => (
            "checklist.item_changed",
            item_changed(
                standard_id(FIRST_TITLE, round),
                ChangeSet { state: Some(ItemState::Done), waits_on: Some(None), next_look: Some(None), ..ChangeSet::default() },
            ),
        ),
        5 => ("compaction.recorded", json!({"session": SESSION, "trigger": "auto"})),
        6 => ("branch.created", json!({"branch": "abcd/c2-parse", "command": "git switch -c"})),
        7 => (
            "session.judged",
            json!({"session": SESSION, "row": "present_owed", "state": "stopped", "next_look": null, "block_count": 0, "wake_count": 0,
                "owed_fingerprint": null, "capped_fingerprint": null, "question_hash": null}),
        ),
        // The second item of the round before: a new title, the credential cleared.
        _ => (
            "checklist.item_changed",
            item_changed(
                standard_id(SECOND_TITLE, round.checked_sub(1).expect("event 0 is the genesis")),
                ChangeSet { title: Some("Handle \"Café\" and naïve names".into()), credential: Some(None), ..ChangeSet::default() },
            ),
        ),
    }
}

/// Journal A: the working copy journal most vectors start from.
fn journal_a(events: u64) -> Chain {
    let mut chain = Chain::new(ID_A, working_copy(), PID);
    chain.fill_to(events);
    chain
}

/// Deterministic bytes that are not a journal.
fn binary_bytes() -> Vec<u8> {
    (0..1024u32).map(|i| (i % 256) as u8).collect()
}

fn utf8_of(line: &[u8]) -> String {
    String::from_utf8(line.to_vec()).unwrap()
}

// ---------------------------------------------------------------------------------------
// The vectors
// ---------------------------------------------------------------------------------------

struct Vector {
    name: &'static str,
    /// What the journal is and why the verdict is what it is, in words (README).
    about: String,
    bytes: Vec<u8>,
    expected: Expected,
}

fn vector(name: &'static str, about: impl Into<String>, bytes: Vec<u8>, expected: Expected) -> Vector {
    Vector { name, about: about.into(), bytes, expected }
}

fn all_vectors() -> Vec<Vector> {
    assert!(!abcd::event::is_v1_kind(FREE_KIND), "{FREE_KIND} must stay a kind no abcd defines");
    let mut v = Vec::new();

    // --- clean journals ---------------------------------------------------------------

    let a = journal_a(8);
    v.push(vector(
        "valid",
        "Genesis (working copy scope) and seven events of v1 kinds, with non-ASCII UTF-8 and JSON escapes in data.",
        a.bytes(),
        Expected::clean(8),
    ));

    let b = Chain::new(ID_B, Scope::Repository { root_commit: "9f3b2c1d0e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c".into() }, PID);
    v.push(vector("genesis-only", "A repository journal holding only its genesis.", b.bytes(), Expected::clean(1)));

    v.push(vector("empty", "A zero-byte file: a clean journal with no events.", vec![], Expected::clean(0)));

    let mut m = Chain::new(ID_C, Scope::Machine {}, PID);
    m.push(
        "run.started",
        json!({"run": "r1", "working_copy": "/home/ana/src/shop", "lanes": ["impl", "review"],
            "driver": {"session": SESSION, "process": {"pid": 4242, "start_ticks": 123456}}}),
    );
    v.push(vector("machine-scope", "A machine journal: genesis with scope `machine` and one run indexed.", m.bytes(), Expected::clean(2)));

    let mut u = journal_a(3);
    u.push("future.widget_spun", json!({"rpm": 1200, "nested": {"list": [1, 2.5, null, true], "s": "tabs\tand\nnewlines, \"quoted\""}}));
    u.push("future.widget_spun", json!({}));
    u.fill_to(6);
    v.push(vector(
        "unknown-kind",
        "Two events of a kind this build does not know (`future.widget_spun`): verified, kept and counted.",
        u.bytes(),
        Expected::clean(6),
    ));

    let repaired = repaired_journal();
    let n = repaired.next_seq();
    v.push(vector(
        "repaired",
        "A journal after two repairs: `journal.repaired` for moved corruption (seq 3) and for an accepted anchor mismatch.",
        repaired.bytes(),
        Expected::clean(n),
    ));

    let mut moved = journal_a(4);
    moved.push(abcd::event::JOURNAL_MOVED, json!({"from": "/home/ana/src/shop", "to": "/home/ana/work/shop"}));
    moved.fill_to(7);
    v.push(vector(
        "moved",
        "A working copy's journal whose checkout was moved: `journal.moved` at seq 4 names the root the genesis named and the canonical root it was found at; from then on the journal names the new root (SPEC §11).",
        moved.bytes(),
        Expected::clean(7),
    ));

    let mut redacted = journal_a(4);
    let hash_of_3 = redacted.hashes[3].to_hex();
    redacted.push(abcd::event::MIRROR_LINE_REDACTED, json!({"seq": 3, "hash": hash_of_3, "secret": "github_token"}));
    redacted.fill_to(6);
    v.push(vector(
        "mirror-line-redacted",
        "A person's decision (`mirror.line_redacted` at seq 4) that the mirror carries a redaction record in the place of seq 3, named by its seq and hash (MIRROR.md §11); the journal itself keeps the line and verifies as any other.",
        redacted.bytes(),
        Expected::clean(6),
    ));

    // A repository journal (the away record) holding refused attempts (issue 35): one while
    // present, then, in a window, one by the shell rule and one by the verb.
    let wc = "/home/ana/src/shop";
    let mut refused = Chain::new(ID_B, Scope::Repository { root_commit: "9f3b2c1d0e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c".into() }, PID);
    refused.push(
        abcd::event::AWAY_MODE_REFUSED,
        json!({"route": "file_tool_rule", "action": "own_file_write", "session": SESSION, "working_copy": wc}),
    );
    refused.push(
        abcd::event::AWAY_SET,
        json!({"set_by": "Ana Lima", "working_copy": wc, "start": "2026-11-30T06:00:02Z", "end": "2026-11-30T14:00:00Z", "hold_pushes": false}),
    );
    refused.push(abcd::event::AWAY_MODE_REFUSED, json!({"route": "shell_rule", "action": "back", "session": SESSION, "working_copy": wc}));
    refused.push(abcd::event::AWAY_MODE_REFUSED, json!({"route": "verb", "action": "back", "mark": "CLAUDECODE", "working_copy": wc}));
    refused.push(abcd::event::AWAY_ENDED, json!({"ended_by": "Ana Lima", "working_copy": wc}));
    v.push(vector(
        "mode-refused",
        "A repository journal (the away record) with agents' refused attempts (`away.mode_refused`): a file tool on abcd's own file while present (seq 1), then in the window set at seq 2 `abcd mode back` refused by the shell rule (seq 3) and by the verb under the host's mark `CLAUDECODE`, named but not its value (seq 4); the window ends at seq 5. No command is recorded.",
        refused.bytes(),
        Expected::clean(6),
    ));

    // A trade-off tied to an item and the person's answers to it (issue 35, design-done).
    let mut answered = Chain::new(ID_B, Scope::Repository { root_commit: "9f3b2c1d0e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c".into() }, PID);
    answered.push(
        abcd::event::DECISION_RECORDED,
        json!({"text": "Cache parsed files in memory", "grounds": "a 3× faster build", "undo": "git revert 4f1c2e9", "working_copy": wc, "tradeoff": "speed", "item": "choose-the-cache"}),
    );
    answered.push(
        abcd::event::DECISION_RECORDED,
        json!({"text": "Keep the old parser", "grounds": "its 41 tests pass", "undo": "git revert 77ab0d1", "working_copy": wc}),
    );
    answered.push(abcd::event::DECISION_ANSWERED, json!({"seq": 1, "answer": "undo", "working_copy": wc}));
    answered.push(abcd::event::DECISION_ANSWERED, json!({"seq": 1, "answer": "keep", "working_copy": "/home/ana/src/shop-review"}));
    v.push(vector(
        "decision-answered",
        "A repository journal: a speed trade-off tied to checklist item `choose-the-cache` (`decision.recorded` with `item`, seq 1), a decision that is no trade-off (seq 2, written without `tradeoff` or `item`, as before those keys existed), then the person's answers to seq 1 (`decision.answered`): `undo` at seq 3, replaced by `keep` at seq 4 from another working copy. A reader must conclude that the trade-off is answered `keep` (a later answer replaces an earlier one), so `abcd checklist design-done choose-the-cache` in that working copy says yes.",
        answered.bytes(),
        Expected::clean(5),
    ));

    // --- salvaged journals (SPEC §5.4, §10) ---------------------------------------------

    let a8 = journal_a(8);
    v.push(vector(
        "salvaged-bit-flip",
        "`corrupt-bit-flip` after `abcd journal repair`: only event 3 went to quarantine; a gap record (`journal.repaired` at seq 3, `lost_from` = `lost_to` = 3, `next_prev` the lost line's hash) stands in for it and events 4-7 are kept byte for byte.",
        salvaged(&a8, &[(3, 3)], None),
        Expected::clean(8),
    ));
    let a10 = journal_a(10);
    v.push(vector(
        "salvaged-two-lines",
        "Ten events, events 3 and 6 damaged apart from each other, after one repair: two gap records, every other line kept.",
        salvaged(&a10, &[(3, 3), (6, 6)], None),
        Expected::clean(10),
    ));
    let a9 = journal_a(9);
    v.push(vector(
        "salvaged-lost-run",
        "Nine events, events 4 and 5 damaged together, after one repair: one gap record at seq 4 names seqs 4-5 lost, and the next line carries seq 6.",
        salvaged(&a9, &[(4, 5)], None),
        Expected::clean(8),
    ));
    let a6 = journal_a(6);
    v.push(vector(
        "salvaged-last-line",
        "Six events, the acknowledged last one (seq 5) damaged, after one repair: the head anchor named seq 5, so a gap record ends the file naming it lost; the next append takes seq 6 and names the lost line's hash as prev.",
        salvaged(&a6, &[(5, 5)], Some(5)),
        Expected::clean(6),
    ));

    // --- the rule of proof (SPEC §10): each shape of issue 31, damaged and salvaged ----

    for case in proof_cases() {
        if let Some(about) = case.input_about {
            v.push(vector(case.input, about, case.damaged, case.input_expected));
        }
        let events = case.salvaged.iter().filter(|&&b| b == b'\n').count() as u64;
        v.push(vector(case.name, case.about, case.salvaged, Expected::clean(events)));
    }
    let mut genesis_flip = journal_a(5).bytes();
    genesis_flip[60] ^= 0x01;
    v.push(vector(
        "corrupt-genesis-bit-flip",
        "Five events, one bit flipped inside the genesis: corrupt at seq 0 with every later line verifying on its own. Repair refuses (there is no journal id to continue); the person moves the file aside.",
        genesis_flip,
        Expected::corrupt(0, 0, "hash_mismatch"),
    ));
    let mut bad_gap = salvaged(&a8, &[(3, 3)], None);
    let gap_at = a8.offset(3) as usize;
    let gap_end = gap_at + bad_gap[gap_at..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let gap_text = body_text(&bad_gap[gap_at..gap_end]);
    let (forged, _) = forge(replace_once(&gap_text, "\"lost_from\":3", "\"lost_from\":2"));
    bad_gap.splice(gap_at..gap_end, forged);
    v.push(vector(
        "corrupt-bad-gap",
        "`salvaged-bit-flip` with its gap record's `lost_from` changed to 2 (not its own seq) and hashed again: a gap record that breaks the gap rule.",
        bad_gap,
        Expected::corrupt(3, a8.offset(3), "bad_gap"),
    ));

    let mut big = journal_a(2);
    let base = big.encode(FREE_KIND, json!({"text": ""})).0.len();
    big.push(FREE_KIND, json!({"text": "a".repeat(MAX_LINE_BYTES - base)}));
    assert_eq!(big.lines[2].len(), MAX_LINE_BYTES);
    big.fill_to(4);
    v.push(vector(
        "max-line",
        "Line 2 (a `future.widget_spun`, a kind no abcd defines, so its data is free) is exactly 65,536 bytes including its newline: the largest line allowed.",
        big.bytes(),
        Expected::clean(4),
    ));

    let mut odd = journal_a(2);
    odd.push_forged("checklist.item_added", new_item("Write the release notes"), |body| {
        // Same fields, other order and spacing; the hash is still the line's own bytes.
        let v: Value = serde_json::from_str(&(body.clone() + "}")).unwrap();
        let mut text = String::from("{ \"seq\" : 2 , \"v\" : 1, ");
        for key in ["kind", "time", "actor", "data", "prev"] {
            text += &format!("\"{key}\": {}", serde_json::to_string_pretty(&v[key]).unwrap().replace('\n', " "));
            if key != "prev" {
                text += " ,  ";
            }
        }
        text.into_bytes()
    });
    odd.fill_to(4);
    v.push(vector(
        "unusual-layout",
        "Line 2 has its fields in another order with spaces (hash still last): abcd never writes this, but the hash rule covers bytes, so it verifies.",
        odd.bytes(),
        Expected::clean(4),
    ));

    let nest = |depth: usize| json!({"deep": (0..depth).fold(json!(0), |inner, _| json!([inner]))});
    let mut deep = journal_a(2);
    // The envelope object is level 1 and `data` level 2: 125 arrays inside make 127.
    deep.push(FREE_KIND, nest(125));
    deep.fill_to(4);
    v.push(vector(
        "nesting-127",
        "Line 2 (a `future.widget_spun`, its data free) nests JSON containers 127 deep (the envelope counts as 1): the deepest a line may nest.",
        deep.bytes(),
        Expected::clean(4),
    ));

    // --- torn tails -------------------------------------------------------------------

    let a = journal_a(6);
    let cut = &a.lines[4][..a.lines[4].len() / 2];
    v.push(vector(
        "torn-no-newline",
        "Four events, then the first half of event 4 with no newline: a crashed append.",
        [a.lines[..4].concat(), cut.to_vec()].concat(),
        Expected::torn(4, a.offset(4), "no_newline"),
    ));

    v.push(vector(
        "torn-nul-run",
        "Four events, then 4,096 NUL bytes: the zero-filled block a size extension leaves when the data never reached the disk.",
        [a.lines[..4].concat(), vec![0u8; 4096]].concat(),
        Expected::torn(4, a.offset(4), "no_newline"),
    ));

    let mut garbage = a.lines[..4].concat();
    garbage.extend_from_slice(&a.lines[4][..100]);
    garbage.extend_from_slice(&[0u8; 300]);
    garbage.push(b'\n');
    garbage.extend_from_slice(b"\x00\x00\xff\xfegarbage \x01\x02\n\x00\x00{\"v\":1,");
    v.push(vector(
        "torn-garbage",
        "Four events, then part of a line, a NUL run, a newline and more garbage with a newline in it: nothing after event 3 verifies.",
        garbage,
        Expected::torn(4, a.offset(4), "no_hash_suffix"),
    ));

    let mut bad_last = a.lines[..5].concat();
    let flip_at = a.offset(4) as usize + 150;
    bad_last[flip_at] ^= 0x01;
    v.push(vector(
        "torn-hash-mismatch",
        "Five complete lines; the last one has a flipped bit and fails its hash. No line after it, so it is torn.",
        bad_last,
        Expected::torn(4, a.offset(4), "hash_mismatch"),
    ));

    let mut v2 = journal_a(4);
    v2.push_forged("checklist.item_added", new_item("Bump the lock file"), |body| {
        replace_once(&body, "{\"v\":1,", "{\"v\":2,").into_bytes()
    });
    v.push(vector(
        "corrupt-version-2-last",
        "The last line is a complete, correctly hashed line with `\"v\":2`. A hash that verifies means the line was written whole, so it is not torn: a v1 reader reports it (a newer format, or damage) and a v1 appender refuses to build on it rather than cut it.",
        v2.bytes(),
        Expected::corrupt(4, v2.offset(4), "bad_version"),
    ));

    let a3 = journal_a(3);
    let at_limit = [a3.bytes(), vec![0u8; MAX_TORN_TAIL_BYTES as usize]].concat();
    v.push(vector(
        "torn-at-limit",
        "Three events, then exactly 266,240 NUL bytes (256 KiB + 4096, the largest torn region): torn. The region has no newline and is over 65,536 bytes, so its first line is `too_long`.",
        at_limit,
        Expected::torn(3, a3.offset(3), "too_long"),
    ));

    let g = journal_a(1);
    v.push(vector(
        "torn-genesis",
        "Only the first 150 bytes of a genesis line, no newline: a copy or cut that stopped inside event 0. Torn, with no events.",
        g.lines[0][..150].to_vec(),
        Expected::torn(0, 0, "no_newline"),
    ));

    // --- corruption -------------------------------------------------------------------

    let a = journal_a(8);
    let mut flipped = a.bytes();
    flipped[a.offset(3) as usize + 120] ^= 0x04;
    v.push(vector(
        "corrupt-bit-flip",
        "Eight events; one bit flipped inside event 3, with good lines after it.",
        flipped,
        Expected::corrupt(3, a.offset(3), "hash_mismatch"),
    ));

    let mut gap = journal_a(3);
    let gap_offset = gap.offset(3);
    for seq in [4, 5] {
        // Seq 3 is never written: the line after event 2 carries seq 4 and chains onto event 2.
        let (kind, data) = standard_event(seq);
        let event = NewEvent { kind: kind.into(), actor: actor(true, PID), data };
        let (line, hash) = format::encode_line(seq, time_of(seq), &event, &gap.head()).unwrap();
        gap.push_line(line, hash);
    }
    v.push(vector(
        "corrupt-seq-gap",
        "Events 0-2, then a line carrying seq 4 whose prev is event 2's hash (seq 3 is missing), then seq 5 chained onto it.",
        gap.bytes(),
        Expected::corrupt(3, gap_offset, "seq_out_of_order"),
    ));

    let mut pm = journal_a(3);
    let wrong_prev = pm.hashes[1];
    let (kind, data) = standard_event(3);
    let event = NewEvent { kind: kind.into(), actor: actor(true, PID), data };
    let (line, hash) = format::encode_line(3, time_of(3), &event, &wrong_prev).unwrap();
    pm.push_line(line, hash);
    pm.fill_to(6);
    v.push(vector(
        "corrupt-prev-mismatch",
        "Events 0-2, then seq 3 whose prev names event 1's hash instead of event 2's, with lines chained onto it after.",
        pm.bytes(),
        Expected::corrupt(3, pm.offset(3), "prev_mismatch"),
    ));

    let a = journal_a(6);
    let mut other = Chain::new(ID_B, working_copy(), OTHER_PID);
    other.fill_to(4);
    let spliced = [a.lines[..3].concat(), other.lines[3].clone(), a.lines[4..].concat()].concat();
    v.push(vector(
        "corrupt-spliced-line",
        "Journal A with its event 3 replaced by event 3 of another journal of the same working copy (other genesis, other id): the line verifies on its own, its prev does not chain.",
        spliced,
        Expected::corrupt(3, a.offset(3), "prev_mismatch"),
    ));

    let a = journal_a(6);
    v.push(vector(
        "corrupt-concatenated",
        "Journal A (six events) followed by all of another journal: its genesis (seq 0) appears where seq 6 belongs.",
        [a.bytes(), other.bytes()].concat(),
        Expected::corrupt(6, a.offset(6), "seq_out_of_order"),
    ));

    let dup = [a.lines[..4].concat(), a.lines[3].clone(), a.lines[4..].concat()].concat();
    v.push(vector(
        "corrupt-duplicate-line",
        "Event 3 written twice in a row, good lines after: the copy carries seq 3 where seq 4 belongs.",
        dup,
        Expected::corrupt(4, a.offset(4), "seq_out_of_order"),
    ));

    let dup_last = [a.bytes(), a.lines[5].clone()].concat();
    v.push(vector(
        "corrupt-duplicate-last-line",
        "The last line written twice. The copy verifies on its own, so it is not a torn tail: seq 5 where seq 6 belongs.",
        dup_last,
        Expected::corrupt(6, a.offset(6), "seq_out_of_order"),
    ));

    let mut long = journal_a(2);
    let base = long.encode(FREE_KIND, json!({"text": ""})).0.len();
    // encode_line refuses an over-long event; build the longest it accepts and add a byte.
    long.push_forged(FREE_KIND, json!({"text": "a".repeat(MAX_LINE_BYTES - base)}), |body| {
        replace_once(&body, "\"text\":\"", "\"text\":\"a").into_bytes()
    });
    assert_eq!(long.lines[2].len(), MAX_LINE_BYTES + 1);
    long.fill_to(4);
    v.push(vector(
        "corrupt-too-long",
        "Line 2 is 65,537 bytes including its newline (its hash is right), with a good line after it.",
        long.bytes(),
        Expected::corrupt(2, long.offset(2), "too_long"),
    ));

    let a3 = journal_a(3);
    let over = [a3.bytes(), vec![0u8; MAX_TORN_TAIL_BYTES as usize + 1]].concat();
    v.push(vector(
        "corrupt-tail-over-limit",
        "Three events, then 266,241 NUL bytes: one byte more than a crashed append can leave, so corruption, not a torn tail.",
        over,
        Expected::corrupt(3, a3.offset(3), "too_long"),
    ));

    let a10 = journal_a(10);
    let mut holed = a10.lines[..9].concat();
    let hole = (a10.offset(4) as usize + 10)..(a10.offset(6) as usize + 5);
    holed[hole].fill(0);
    holed.extend_from_slice(&a10.lines[9][..40]);
    v.push(vector(
        "corrupt-hole-then-good-lines",
        "A batch whose middle never reached the disk: NULs from inside event 4 to inside event 6, events 7 and 8 whole, event 9 cut. A line after the hole verifies, so this is corruption.",
        holed,
        Expected::corrupt(4, a10.offset(4), "hash_mismatch"),
    ));

    let mut nu = journal_a(2);
    nu.push_forged("checklist.item_added", new_item("Replace the MARK byte"), |body| {
        let mut bytes = body.into_bytes();
        let at = bytes.windows(4).position(|w| w == b"MARK").unwrap();
        bytes[at] = 0xff;
        bytes
    });
    nu.fill_to(4);
    v.push(vector(
        "corrupt-not-utf8",
        "Line 2 carries a 0xFF byte inside a string and a hash computed over it: the hash verifies, the UTF-8 check fails.",
        nu.bytes(),
        Expected::corrupt(2, nu.offset(2), "not_utf8"),
    ));

    let mut upper = journal_a(6);
    let text = utf8_of(&upper.lines[2]);
    let cut = text.len() - 1 - HASH_SUFFIX_LEN;
    upper.lines[2] = format!("{}{}", &text[..cut], text[cut..].to_uppercase().replace("\"HASH\"", "\"hash\"")).into_bytes();
    v.push(vector(
        "corrupt-uppercase-hash",
        "Line 2's hash is written in uppercase hex: the suffix must be 64 lowercase hex characters.",
        upper.bytes(),
        Expected::corrupt(2, upper.offset(2), "no_hash_suffix"),
    ));

    let mut nae = journal_a(2);
    nae.push_forged("checklist.item_added", new_item("Drop the extra field"), |body| {
        replace_once(&body, ",\"prev\":", ",\"extra\":true,\"prev\":").into_bytes()
    });
    nae.fill_to(4);
    v.push(vector(
        "corrupt-not-an-event",
        "Line 2 hashes right but carries a ninth field, `extra`: not a v1 event object.",
        nae.bytes(),
        Expected::corrupt(2, nae.offset(2), "not_an_event"),
    ));

    let mut deep = journal_a(2);
    // The writer refuses to encode this (it could not read it back), so the deep data is
    // spliced into a shallow line's body and the line hashed by the rule.
    let too_deep = serde_json::to_string(&nest(126)).unwrap();
    deep.push_forged(FREE_KIND, json!({"deep": 0}), |body| {
        replace_once(&body, "\"data\":{\"deep\":0}", &format!("\"data\":{too_deep}")).into_bytes()
    });
    deep.fill_to(4);
    v.push(vector(
        "corrupt-nesting-128",
        "Line 2 nests JSON containers 128 deep (one more than `nesting-127`): not a v1 event. See the README's note.",
        deep.bytes(),
        Expected::corrupt(2, deep.offset(2), "not_an_event"),
    ));

    let mut bt = journal_a(2);
    let t2 = format::format_time(time_of(2));
    bt.push_forged("checklist.item_added", new_item("Check the leap second"), |body| {
        replace_once(&body, &format!("\"time\":\"{t2}\""), "\"time\":\"2026-12-31T23:59:60.000Z\"").into_bytes()
    });
    bt.fill_to(4);
    v.push(vector(
        "corrupt-bad-time",
        "Line 2 hashes right but its time is a leap second, `23:59:60.000Z`: not the one form a writer produces.",
        bt.bytes(),
        Expected::corrupt(2, bt.offset(2), "bad_time"),
    ));

    let mut bk = journal_a(2);
    bk.push_forged("checklist.item_added", new_item("Name the kind"), |body| {
        replace_once(&body, "\"kind\":\"checklist.item_added\"", "\"kind\":\"Checklist.Item2\"").into_bytes()
    });
    bk.fill_to(4);
    v.push(vector(
        "corrupt-bad-kind",
        "Line 2 hashes right but its kind is `Checklist.Item2` (uppercase, a digit): kinds are dotted lowercase words.",
        bk.bytes(),
        Expected::corrupt(2, bk.offset(2), "bad_kind"),
    ));

    let mut gk = journal_a(2);
    gk.push_forged(FREE_KIND, json!({"journal_id": ID_A, "scope": {"kind": "machine"}}), |body| {
        replace_once(&body, &format!("\"kind\":\"{FREE_KIND}\""), "\"kind\":\"journal.opened\"").into_bytes()
    });
    gk.fill_to(4);
    v.push(vector(
        "corrupt-genesis-kind-later",
        "Line 2 hashes right but is a `journal.opened` at seq 2: that kind is event 0 and only event 0.",
        gk.bytes(),
        Expected::corrupt(2, gk.offset(2), "genesis_kind"),
    ));

    let mut dn = journal_a(2);
    let item = new_item("Wrap the data");
    let item_text = serde_json::to_string(&item).unwrap();
    dn.push_forged("checklist.item_added", item, |body| {
        replace_once(&body, &format!("\"data\":{item_text}"), &format!("\"data\":[{item_text}]")).into_bytes()
    });
    dn.fill_to(4);
    v.push(vector(
        "corrupt-data-not-object",
        "Line 2 hashes right but its data is an array (holding the item): data is always an object.",
        dn.bytes(),
        Expected::corrupt(2, dn.offset(2), "data_not_object"),
    ));

    let a = journal_a(4);
    let crlf: Vec<u8> = a.bytes().iter().flat_map(|&b| if b == b'\n' { vec![b'\r', b'\n'] } else { vec![b] }).collect();
    v.push(vector(
        "corrupt-crlf",
        "A valid journal whose newlines were rewritten to CR LF (a text-mode checkout): no line ends in the hash suffix, starting with the first.",
        crlf,
        Expected::corrupt(0, 0, "no_hash_suffix"),
    ));

    let a = journal_a(6);
    let mut merged = a.lines[..6].concat();
    merged[a.offset(5) as usize - 1] = b' ';
    v.push(vector(
        "corrupt-merged-lines",
        "Six events; the newline ending event 4 became a space, so events 4 and 5 read as one line. Event 5 still verifies inside it, so this is damage, not a torn tail, though nothing after it verifies.",
        merged,
        Expected::corrupt(4, a.offset(4), "hash_mismatch"),
    ));

    let mut long = journal_a(4);
    long.push(FREE_KIND, json!({"text": "a".repeat(40_000)})).push(FREE_KIND, json!({"text": "b".repeat(30_000)}));
    let mut merged_long = long.bytes();
    merged_long[long.offset(5) as usize - 1] = b' ';
    assert!(long.lines[4].len() + long.lines[5].len() > MAX_LINE_BYTES);
    v.push(vector(
        "corrupt-merged-lines-over-limit",
        "Six events, the last two about 40,000 and 30,000 bytes; the newline ending event 4 became a space, so events 4 and 5 read as one line over 65,536 bytes. Event 5 still verifies at its end (a reader keeps an over-long line's last 65,537 bytes to look), so this is damage, not a torn tail.",
        merged_long,
        Expected::corrupt(4, long.offset(4), "too_long"),
    ));

    let over_start = [a.lines[..4].concat(), vec![0u8; 64], a.lines[4].clone()].concat();
    v.push(vector(
        "corrupt-garbage-before-line",
        "Four events, then 64 NUL bytes directly followed by a whole event 4 (no newline between): a good line holds behind garbage, so this is damage.",
        over_start,
        Expected::corrupt(4, a.offset(4), "no_hash_suffix"),
    ));

    // --- a first line that is not a genesis -------------------------------------------

    let a = journal_a(3);
    v.push(vector(
        "corrupt-cut-first-line",
        "The first 150 bytes of event 1 alone, no newline: a cut line, but not the start of a genesis (`\"seq\":1`), so not a torn genesis.",
        a.lines[1][..150].to_vec(),
        Expected::corrupt(0, 0, "no_newline"),
    ));

    let g = journal_a(1);
    v.push(vector(
        "corrupt-genesis-no-hash",
        "A genesis line with its newline but cut before its hash: a torn genesis has no newline, so this is corruption at offset 0.",
        [g.lines[0][..150].to_vec(), b"\n".to_vec()].concat(),
        Expected::corrupt(0, 0, "no_hash_suffix"),
    ));

    v.push(vector(
        "corrupt-binary",
        "1,024 bytes counting 0x00 to 0xFF four times: not a journal. The first line (up to the 0x0A byte) fails.",
        binary_bytes(),
        Expected::corrupt(0, 0, "no_hash_suffix"),
    ));

    let a = journal_a(6);
    v.push(vector(
        "corrupt-first-not-genesis",
        "Journal A without its genesis line: the first line verifies but carries seq 1.",
        a.lines[1..].concat(),
        Expected::corrupt(0, 0, "seq_out_of_order"),
    ));

    let mut wp = Chain { lines: vec![], hashes: vec![], pid: PID };
    let opened = serde_json::to_value(JournalOpened { journal_id: ID_A.into(), scope: working_copy() }).unwrap();
    let event = NewEvent { kind: "journal.opened".into(), actor: actor(false, PID), data: opened };
    let (line, hash) = format::encode_line(0, time_of(0), &event, &Hash([0; 32])).unwrap();
    wp.push_line(line, hash);
    wp.fill_to(3);
    v.push(vector(
        "corrupt-genesis-wrong-prev",
        "A genesis whose prev is 64 zeros instead of the genesis constant, with events chained onto it.",
        wp.bytes(),
        Expected::corrupt(0, 0, "prev_mismatch"),
    ));

    let mut gd = Chain::with_genesis_data(json!({"journal_id": ID_A}), PID);
    gd.fill_to(3);
    v.push(vector(
        "corrupt-genesis-bad-data",
        "Every line verifies and chains, but the genesis data has no scope. The chain scan alone finds nothing; the genesis rule makes it corrupt at seq 0 (see the notes below).",
        gd.bytes(),
        Expected::corrupt(0, 0, "bad_genesis_data"),
    ));

    v
}

/// A journal that went through `abcd journal repair` twice, built the way repair.rs
/// builds its events.
/// `chain` with each range of lines in `lost` damaged (a bit flipped in each line) and
/// salvaged as `abcd journal repair` does: the damaged lines out, a gap record in the place
/// of each range, every other line as it was. `last_acknowledged`: the anchor's seq, for
/// damage at the end of the file.
fn salvaged(chain: &Chain, lost: &[(usize, usize)], last_acknowledged: Option<u64>) -> Vec<u8> {
    let mut damaged = chain.bytes();
    for &(from, to) in lost {
        for line in from..=to {
            damaged[chain.offset(line) as usize + 100] ^= 0x02;
        }
    }
    let stamp = time_of(chain.next_seq()).strftime("%Y%m%dT%H%M%S%3fZ").to_string();
    let mut out = Vec::new();
    let mut line = 0;
    for &(from, to) in lost {
        out.extend(chain.lines[line..from].concat());
        let (start, end) = (chain.offset(from), chain.offset(to + 1));
        let moved = &damaged[start as usize..end as usize];
        let anchor = last_acknowledged.filter(|_| to + 1 == chain.lines.len());
        let data = JournalRepaired {
            cause: RepairCause::Corruption,
            from_offset: start,
            to_offset: end,
            lines: (to - from + 1) as u64,
            quarantine_file: Some(format!("corrupt-{from}-{stamp}.bin")),
            quarantine_blake3: Some(blake3::hash(moved).to_hex().to_string()),
            anchor_seq: anchor,
            anchor_hash: anchor.map(|_| chain.hashes[to].to_hex()),
            problem: format!("seq {from} at byte {start}: {}", LineFault::HashMismatch),
            lost_from: Some(from as u64),
            lost_to: Some(to as u64),
            next_prev: Some(chain.hashes[to].to_hex()),
        };
        // The person ran the repair in a terminal: no session, another pid.
        let event = NewEvent { kind: "journal.repaired".into(), actor: actor(false, OTHER_PID), data: serde_json::to_value(data).unwrap() };
        let (record, _) = format::encode_line(from as u64, time_of(chain.next_seq()), &event, &chain.hashes[from - 1]).unwrap();
        out.extend(record);
        line = to + 1;
    }
    out.extend(chain.lines[line..].concat());
    out
}

// ---------------------------------------------------------------------------------------
// The rule of proof (SPEC §10): a damaged file, the plan §10 proves for it, and what a
// salvage writes from that plan
// ---------------------------------------------------------------------------------------

/// One step of a salvage plan, in chain order (§10 rule 5), written down by hand from the
/// rule for each vector.
enum Keep {
    /// Piece `n` of the damaged file, kept byte for byte.
    Line(usize),
    /// A gap record (§5.4) for seqs `from..=to`, the line after it naming `next_prev`;
    /// `lost_tail`: the seqs up to the head anchor's (rule 3), and the record names the anchor.
    Gap { from: u64, to: u64, next_prev: Hash, lost_tail: bool },
}

/// A damaged file as pieces (lines, or damaged bytes), and what §10 proves for it.
struct ProofPlan {
    pieces: Vec<Vec<u8>>,
    steps: Vec<Keep>,
    /// The first bad line's problem in words, for each damaged region in file order.
    problems: Vec<String>,
    /// Seqs of kept lines that were out of chain order in the file.
    moved: Vec<u64>,
    /// Rule 6: the anchor (seq, hash) a rewrite hidden by damage disagrees with.
    rewritten: Option<(u64, Hash)>,
    /// The time the salvage's records carry.
    time: jiff::Timestamp,
}

/// A `journal.repaired` a salvage writes.
enum Record {
    Gap { from: u64, to: u64, next_prev: Hash, lost_tail: bool, region: Option<usize>, at: u64 },
    Region(usize),
    Moved,
    Rewritten((u64, Hash)),
}

/// The journal `abcd journal repair` writes from `plan`, by the writing half of §10: every
/// byte in no kept line is damage, damaged bytes that run together are one region (copied to
/// `quarantine/corrupt-<S>-<stamp>.bin`, S one past the seq of the line kept just before it
/// in the file); each gap record names the region that starts right after the line kept
/// before the gap in the file, or a region of no bytes there; then, after the last line,
/// one record for each region no gap names, one for the lines moved into chain order, and
/// one for a rewrite hidden by damage, in that order. None of these plans leaves a torn tail.
fn salvage_by_plan(plan: &ProofPlan) -> Vec<u8> {
    let offsets: Vec<u64> = plan.pieces.iter().scan(0u64, |at, p| Some(std::mem::replace(at, *at + p.len() as u64))).collect();
    let file_len: u64 = plan.pieces.iter().map(|p| p.len() as u64).sum();
    let mut kept = vec![false; plan.pieces.len()];
    for step in &plan.steps {
        if let Keep::Line(n) = step {
            assert!(!kept[*n], "a piece is kept once");
            kept[*n] = true;
        }
    }
    let event_of = |n: usize| format::verify_line(&plan.pieces[n]).expect("a kept piece is a line valid on its own");
    // Regions: (offset, len, S).
    let mut regions: Vec<(u64, u64, u64)> = vec![];
    let mut seq_before = 0u64;
    let mut open: Option<(u64, u64)> = None;
    for (n, piece) in plan.pieces.iter().enumerate() {
        if kept[n] {
            if let Some((from, to)) = open.take() {
                regions.push((from, to - from, seq_before));
            }
            seq_before = event_of(n).seq + 1;
        } else {
            let (from, _) = open.unwrap_or((offsets[n], offsets[n]));
            open = Some((from, offsets[n] + piece.len() as u64));
        }
    }
    if let Some((from, to)) = open {
        regions.push((from, to - from, seq_before));
    }
    assert_eq!(regions.len(), plan.problems.len(), "one problem for each damaged region");

    let mut named = vec![false; regions.len()];
    let mut records = vec![];
    let mut end_of_previous = 0u64;
    for step in &plan.steps {
        match *step {
            Keep::Line(n) => end_of_previous = offsets[n] + plan.pieces[n].len() as u64,
            Keep::Gap { from, to, next_prev, lost_tail } => {
                let region = regions.iter().position(|r| r.0 == end_of_previous).filter(|&r| !named[r]);
                if let Some(r) = region {
                    named[r] = true;
                }
                records.push(Record::Gap { from, to, next_prev, lost_tail, region, at: end_of_previous });
            }
        }
    }
    records.extend((0..regions.len()).filter(|&r| !named[r]).map(Record::Region));
    if !plan.moved.is_empty() {
        records.push(Record::Moved);
    }
    if let Some(anchor) = plan.rewritten {
        records.push(Record::Rewritten(anchor));
    }

    let stamp = plan.time.strftime("%Y%m%dT%H%M%S%3fZ").to_string();
    let mut names: Vec<String> = vec![];
    for &(_, _, seq) in &regions {
        let base = format!("corrupt-{seq}-{stamp}");
        let taken = names.iter().filter(|n| n.starts_with(&base)).count();
        names.push(if taken == 0 { format!("{base}.bin") } else { format!("{base}-{taken}.bin") });
    }
    let bytes = plan.pieces.concat();
    let of_region = |r: usize| {
        let (offset, len, seq) = regions[r];
        let moved = &bytes[offset as usize..(offset + len) as usize];
        let lines = moved.iter().filter(|&&b| b == b'\n').count() as u64 + u64::from(moved.last() != Some(&b'\n'));
        JournalRepaired {
            cause: RepairCause::Corruption,
            from_offset: offset,
            to_offset: offset + len,
            lines,
            quarantine_file: Some(names[r].clone()),
            quarantine_blake3: Some(blake3::hash(moved).to_hex().to_string()),
            anchor_seq: None,
            anchor_hash: None,
            problem: format!("seq {seq} at byte {offset}: {}", plan.problems[r]),
            lost_from: None,
            lost_to: None,
            next_prev: None,
        }
    };
    let no_bytes = |at: u64, problem: String| JournalRepaired {
        cause: RepairCause::Corruption,
        from_offset: at,
        to_offset: at,
        lines: 0,
        quarantine_file: None,
        quarantine_blake3: None,
        anchor_seq: None,
        anchor_hash: None,
        problem,
        lost_from: None,
        lost_to: None,
        next_prev: None,
    };
    let data_of = |record: &Record| -> JournalRepaired {
        match *record {
            Record::Gap { from, to, next_prev, lost_tail, region, at } => {
                let mut data = match region {
                    Some(r) => of_region(r),
                    None if lost_tail => no_bytes(
                        at,
                        format!("seq {from} at byte {at}: acknowledged (the head anchor names seq {to}) and in no line of the file"),
                    ),
                    None => no_bytes(at, format!("seq {from} at byte {at}: lines are missing here")),
                };
                (data.lost_from, data.lost_to, data.next_prev) = (Some(from), Some(to), Some(next_prev.to_hex()));
                if lost_tail {
                    (data.anchor_seq, data.anchor_hash) = (Some(to), Some(next_prev.to_hex()));
                }
                data
            }
            Record::Region(r) => of_region(r),
            Record::Moved => {
                let (first, last) = (plan.moved[0], plan.moved[plan.moved.len() - 1]);
                let at = plan
                    .steps
                    .iter()
                    .find_map(|s| match *s {
                        Keep::Line(n) if event_of(n).seq == first => Some(offsets[n]),
                        _ => None,
                    })
                    .expect("a moved line is kept");
                no_bytes(
                    at,
                    format!(
                        "seq {first} at byte {at}: {} line(s) (seqs {first} to {last}) were out of chain order in the file and are written back in chain order",
                        plan.moved.len()
                    ),
                )
            }
            Record::Rewritten((seq, hash)) => JournalRepaired::accepted(
                file_len,
                Some((seq, hash.to_hex())),
                format!(
                    "the head anchor names seq {seq} with hash {hash}, which no kept line holds, while the file (or this machine's mirror) holds another line at that seq, reaches past it, or the seq is past any journal's reach: the journal was rewritten or replaced there, or the anchor is not this journal's head"
                ),
            ),
        }
    };
    // The person ran the repair in a terminal: no session, another pid.
    let encode = |seq: u64, prev: &Hash, data: JournalRepaired| {
        let event = NewEvent { kind: "journal.repaired".into(), actor: actor(false, OTHER_PID), data: serde_json::to_value(data).unwrap() };
        format::encode_line(seq, plan.time, &event, prev).unwrap()
    };
    let mut out = Vec::new();
    let mut position = (0u64, Hash::genesis_prev());
    let mut gaps = records.iter().filter(|r| matches!(r, Record::Gap { .. }));
    for step in &plan.steps {
        match *step {
            Keep::Line(n) => {
                let event = event_of(n);
                assert!(out.is_empty() || (event.seq == position.0 + 1 && event.prev == position.1), "the plan is in chain order");
                out.extend_from_slice(&plan.pieces[n]);
                position = event.chain_position();
            }
            Keep::Gap { from, to, next_prev, .. } => {
                assert_eq!(from, position.0 + 1, "a gap starts right after the position before it");
                let (line, _) = encode(from, &position.1, data_of(gaps.next().unwrap()));
                out.extend(line);
                position = (to, next_prev);
            }
        }
    }
    for record in records.iter().filter(|r| !matches!(r, Record::Gap { .. })) {
        let (line, hash) = encode(position.0 + 1, &position.1, data_of(record));
        out.extend(line);
        position = (position.0 + 1, hash);
    }
    out
}

/// A shape of damage §10 names (issue 31), and its salvage.
struct ProofCase {
    /// The salvaged vector.
    name: &'static str,
    about: String,
    /// The damaged vector it is the repair of, and, when this case adds that vector (no
    /// earlier one holds the shape), what it is.
    input: &'static str,
    input_about: Option<String>,
    input_expected: Expected,
    damaged: Vec<u8>,
    /// The head anchor the home store holds when repair runs.
    anchor: Option<scan::Head>,
    salvaged: Vec<u8>,
}

fn head_of(chain: &Chain, seq: usize) -> scan::Head {
    scan::Head { seq: seq as u64, hash: chain.hashes[seq], offset: chain.offset(seq), end: chain.offset(seq + 1) }
}

fn lines_of(kept: std::ops::Range<usize>) -> impl Iterator<Item = Keep> {
    kept.map(Keep::Line)
}

fn proof_cases() -> Vec<ProofCase> {
    let mut cases = vec![];
    let count = |bytes: &[u8]| bytes.iter().filter(|&&b| b == b'\n').count();
    let hex = |h: &Hash| h.to_hex();

    // A line written twice in a row (the vector `corrupt-duplicate-line`).
    let a = journal_a(6);
    let pieces = [&a.lines[..4], &a.lines[3..4], &a.lines[4..]].concat();
    let plan = ProofPlan {
        steps: lines_of(0..4).chain(lines_of(5..7)).collect(),
        problems: vec!["a repeat of seq 3, which is kept once".into()],
        moved: vec![],
        rewritten: None,
        time: time_of(a.next_seq()),
        pieces,
    };
    let salvaged = salvage_by_plan(&plan);
    cases.push(ProofCase {
        name: "salvaged-duplicate",
        about: format!(
            "`corrupt-duplicate-line` after one repair, the head anchor at seq 5: the chain from genesis reaches seqs 0-5 (copies of the same bytes are one line), so all six are kept byte for byte; the second copy of seq 3 (bytes {} to {}, as `from_offset` and `to_offset` say; the copy kept is the first after seq 2) went to quarantine as `corrupt-4-…` and is recorded by a `journal.repaired` at seq 6 without gap keys (`problem`: a repeat of seq 3). No seq is lost: a reader must conclude that a repeated line is damage, never a reason to skip what follows it.",
            a.offset(4),
            a.offset(5)
        ),
        input: "corrupt-duplicate-line",
        input_about: None,
        input_expected: Expected::corrupt(4, a.offset(4), "seq_out_of_order"),
        damaged: plan.pieces.concat(),
        anchor: Some(head_of(&a, 5)),
        salvaged,
    });

    // Two adjacent lines swapped.
    let a = journal_a(8);
    let pieces = [&a.lines[..4], &a.lines[5..6], &a.lines[4..5], &a.lines[6..]].concat();
    let plan = ProofPlan {
        steps: lines_of(0..4).chain([Keep::Line(5), Keep::Line(4)]).chain(lines_of(6..8)).collect(),
        problems: vec![],
        moved: vec![5],
        rewritten: None,
        time: time_of(a.next_seq()),
        pieces,
    };
    let salvaged = salvage_by_plan(&plan);
    cases.push(ProofCase {
        name: "salvaged-swapped-pair",
        about: format!(
            "`corrupt-swapped-pair` after one repair, the head anchor at seq 7: every line is on the chain from genesis, so the file is written back in chain order (it is `valid`'s eight lines byte for byte) and nothing goes to quarantine; one `journal.repaired` at seq 8, without gap keys and without bytes (`from_offset` = `to_offset` = {}, where seq 5 was, `lines` 0, `quarantine_file` null), names seq 5 as moved. A reader must conclude that a line's place in the file proves nothing: its chain position does, and nothing was lost.",
            a.offset(4)
        ),
        input: "corrupt-swapped-pair",
        input_about: Some(
            "Eight events with events 4 and 5 swapped in the file (5 written before 4): each line verifies on its own and chains, out of order. The first line out of place carries seq 5 where seq 4 belongs.".into(),
        ),
        input_expected: Expected::corrupt(4, a.offset(4), "seq_out_of_order"),
        damaged: plan.pieces.concat(),
        anchor: Some(head_of(&a, 7)),
        salvaged,
    });

    // Another journal appended (the vector `corrupt-concatenated`).
    let a = journal_a(6);
    let mut other = Chain::new(ID_B, working_copy(), OTHER_PID);
    other.fill_to(4);
    let pieces = [&a.lines[..], &other.lines[..]].concat();
    let plan = ProofPlan {
        steps: lines_of(0..6).collect(),
        problems: vec!["a line of seq 0 that neither chain reaches and no hole it alone fits".into()],
        moved: vec![],
        rewritten: None,
        time: time_of(a.next_seq()),
        pieces,
    };
    let salvaged = salvage_by_plan(&plan);
    cases.push(ProofCase {
        name: "salvaged-foreign-tail",
        about: format!(
            "`corrupt-concatenated` after one repair, the head anchor at seq 5: journal A's seqs 0-5 are kept; all of the other journal (bytes {} to the end, {} lines, its genesis first) went to quarantine as one region `corrupt-6-…`, recorded by a `journal.repaired` at seq 6 without gap keys. No seq is lost (seq 6 was never acknowledged in A) and no line of the other journal is adopted: a reader must conclude that lines past the anchor that do not chain onto it are damage, whatever seqs they carry.",
            a.offset(6),
            other.lines.len()
        ),
        input: "corrupt-concatenated",
        input_about: None,
        input_expected: Expected::corrupt(6, a.offset(6), "seq_out_of_order"),
        damaged: plan.pieces.concat(),
        anchor: Some(head_of(&a, 5)),
        salvaged,
    });

    // Another journal's line spliced in (the vector `corrupt-spliced-line`).
    let a = journal_a(6);
    let pieces = [&a.lines[..3], &other.lines[3..4], &a.lines[4..]].concat();
    let plan = ProofPlan {
        steps: lines_of(0..3)
            .chain([Keep::Gap { from: 3, to: 3, next_prev: a.hashes[3], lost_tail: false }])
            .chain(lines_of(4..6))
            .collect(),
        problems: vec!["a line of seq 3 that neither chain reaches and no hole it alone fits".into()],
        moved: vec![],
        rewritten: None,
        time: time_of(a.next_seq()),
        pieces,
    };
    let salvaged = salvage_by_plan(&plan);
    cases.push(ProofCase {
        name: "salvaged-foreign-splice",
        about: format!(
            "`corrupt-spliced-line` after one repair, the head anchor at seq 5: the chain from genesis ends at seq 2, the chain back from the anchor's line holds seqs 4-5, so the one seq between them, 3, is a gap: the other journal's seq 3 (bytes {} to {}) went to quarantine as `corrupt-3-…` and the gap record at seq 3 (`lost_from` = `lost_to` = 3, `next_prev` {}, the `prev` of seq 4) names it. A reader must conclude that a line that verifies on its own but does not chain is not A's seq 3, and that A's seq 3 is lost.",
            a.offset(3),
            a.offset(3) + other.lines[3].len() as u64,
            hex(&a.hashes[3])
        ),
        input: "corrupt-spliced-line",
        input_about: None,
        input_expected: Expected::corrupt(3, a.offset(3), "prev_mismatch"),
        damaged: plan.pieces.concat(),
        anchor: Some(head_of(&a, 5)),
        salvaged,
    });

    // A block of later lines written again in the middle (a misdirected write). The copies
    // lie inside the appender's first 4 KiB window (§8.2 step 4), so the appender, too,
    // refuses to build on the damaged file.
    let a = journal_a(12);
    let pieces = [&a.lines[..8], &a.lines[10..12], &a.lines[8..]].concat();
    let copied = (a.lines[10].len() + a.lines[11].len()) as u64;
    let plan = ProofPlan {
        steps: lines_of(0..8).chain(lines_of(10..14)).collect(),
        problems: vec!["a repeat of seq 10, which is kept once".into()],
        moved: vec![],
        rewritten: None,
        time: time_of(a.next_seq()),
        pieces,
    };
    let salvaged = salvage_by_plan(&plan);
    cases.push(ProofCase {
        name: "salvaged-misdirected-block",
        about: format!(
            "`corrupt-misdirected-block` after one repair, the head anchor at seq 11: the chain from genesis reaches seqs 0-11, each kept once where it belongs (for seqs 10 and 11 the copy after seq 9 in the file, the first after the line kept before it); the misplaced copies (bytes {} to {}, one region of 2 lines) went to quarantine as `corrupt-8-…`, recorded by a `journal.repaired` at seq 12 without gap keys. No seq is lost: a reader must conclude that a line with a higher seq is no reason to jump forward; seqs 8-9 after the copies are proven by the chain.",
            a.offset(8),
            a.offset(8) + copied
        ),
        input: "corrupt-misdirected-block",
        input_about: Some(
            "Twelve events, with a copy of the last two (seqs 10 and 11) written between seq 7 and seq 8: a misdirected write. Every line verifies on its own; the copy of seq 10 stands where seq 8 belongs.".into(),
        ),
        input_expected: Expected::corrupt(8, a.offset(8), "seq_out_of_order"),
        damaged: plan.pieces.concat(),
        anchor: Some(head_of(&a, 11)),
        salvaged,
    });

    // Damage plus a cut: `corrupt-bit-flip`, whose acknowledged last line (seq 8) is gone.
    let a9 = journal_a(9);
    let mut pieces = a9.lines[..8].to_vec();
    pieces[3][120] ^= 0x04;
    let plan = ProofPlan {
        steps: lines_of(0..3)
            .chain([Keep::Gap { from: 3, to: 3, next_prev: a9.hashes[3], lost_tail: false }])
            .chain(lines_of(4..8))
            .chain([Keep::Gap { from: 8, to: 8, next_prev: a9.hashes[8], lost_tail: true }])
            .collect(),
        problems: vec![LineFault::HashMismatch.to_string()],
        moved: vec![],
        rewritten: None,
        time: time_of(a9.next_seq()),
        pieces,
    };
    let salvaged = salvage_by_plan(&plan);
    cases.push(ProofCase {
        name: "salvaged-damage-and-cut",
        about: format!(
            "`corrupt-bit-flip` repaired with a head anchor naming seq 8 (hash {}, the line journal A would have next): the file was also cut at a line boundary after an acknowledged append. The chain from genesis ends at seq 2 and the anchor's line is in no candidate, so the gap may take seqs 3-8; the run 4-7 alone fits inside it and is kept. Two gap records: at seq 3 for the damaged line (`corrupt-3-…`), and at seq 8, the lost tail, for a region of no bytes (`from_offset` = `to_offset` = {}, `quarantine_file` and `quarantine_blake3` null) with `anchor_seq` 8 and `anchor_hash` the anchor's hash. A reader must conclude that seq 8 was acknowledged and is lost, not that the journal ends at seq 7: the next append takes seq 9 and names seq 8's hash as prev.",
            hex(&a9.hashes[8]),
            a9.offset(8)
        ),
        input: "corrupt-bit-flip",
        input_about: None,
        input_expected: Expected::corrupt(3, a9.offset(3), "hash_mismatch"),
        damaged: plan.pieces.concat(),
        anchor: Some(head_of(&a9, 8)),
        salvaged,
    });

    // Damage plus a rewrite: seqs 2-6 written anew by another process, then seq 4 damaged.
    let acknowledged = journal_a(7);
    let mut rewrite = journal_a(2);
    rewrite.pid = OTHER_PID;
    rewrite.fill_to(7);
    let mut pieces = rewrite.lines.clone();
    pieces[4][100] ^= 0x02;
    let anchor = (6, acknowledged.hashes[6]);
    let plan = ProofPlan {
        steps: lines_of(0..4).chain([Keep::Gap { from: 4, to: 6, next_prev: anchor.1, lost_tail: true }]).collect(),
        problems: vec![LineFault::HashMismatch.to_string()],
        moved: vec![],
        rewritten: Some(anchor),
        time: time_of(acknowledged.next_seq()),
        pieces,
    };
    let salvaged = salvage_by_plan(&plan);
    let file_len = rewrite.offset(7);
    cases.push(ProofCase {
        name: "salvaged-damage-and-rewrite",
        about: format!(
            "`corrupt-rewrite-with-damage` repaired with the head anchor at seq 6 of the acknowledged history (hash {}): the chain from genesis ends at seq 3 (the rewrite's seqs 2-3 chain onto seq 1, so they are kept); the anchor's line is in no candidate, so seqs 4-6 are a lost tail; the rewrite's run 5-6 ends at the anchor's seq, so it does not fit and is damage. One region, bytes {} to {} (the damaged seq 4 and seqs 5-6, {} lines), went to quarantine as `corrupt-4-…`, named by the gap record at seq 4 (`lost_to` 6, `next_prev` and `anchor_hash` the anchor's hash). The file holds another line with seq 6, so a `journal.repaired` at seq 7 with `cause` `anchor_mismatch` (`from_offset` = `to_offset` = {file_len}, the file's length before the repair, `anchor_seq` 6) records the rewrite. A reader must conclude that the kept seqs 2-3 are not the lines the anchor vouched for: only the genesis chain proves them.",
            hex(&anchor.1),
            rewrite.offset(4),
            file_len,
            count(&plan.pieces[4..].concat()),
        ),
        input: "corrupt-rewrite-with-damage",
        input_about: Some(format!(
            "Journal A acknowledged to seq 6, then seqs 2-6 written anew by another process (pid {OTHER_PID}) onto seq 1, and one bit of the new seq 4 flipped: corrupt at the flipped line, with the rewritten seqs 5-6 verifying after it. The acknowledged seq 6's hash is {}.",
            hex(&anchor.1)
        )),
        input_expected: Expected::corrupt(4, rewrite.offset(4), "hash_mismatch"),
        damaged: plan.pieces.concat(),
        anchor: Some(head_of(&acknowledged, 6)),
        salvaged,
    });
    cases
}

fn repaired_journal() -> Chain {
    // The journal before the first repair: events 0-5, one bit flipped in event 3.
    let before = journal_a(6);
    let mut damaged = before.bytes();
    damaged[before.offset(3) as usize + 100] ^= 0x02;
    let from = before.offset(3);
    let moved = &damaged[from as usize..];
    let corruption = scan::Corruption { seq: 3, offset: from, problem: Problem::Line(LineFault::HashMismatch) };
    let stamp = |seq: u64| time_of(seq).strftime("%Y%m%dT%H%M%S%3fZ").to_string();

    let mut chain = journal_a(3);
    let first = JournalRepaired {
        cause: RepairCause::Corruption,
        from_offset: from,
        to_offset: damaged.len() as u64,
        lines: moved.iter().filter(|&&b| b == b'\n').count() as u64,
        quarantine_file: Some(format!("corrupt-3-{}.bin", stamp(3))),
        quarantine_blake3: Some(blake3::hash(moved).to_hex().to_string()),
        anchor_seq: None,
        anchor_hash: None,
        problem: format!("seq {} at byte {}: {}", corruption.seq, corruption.offset, corruption.problem),
        lost_from: None,
        lost_to: None,
        next_prev: None,
    };
    chain.push("journal.repaired", serde_json::to_value(first).unwrap());
    chain.fill_to(6);
    let end = chain.offset(6);
    let anchor_hash = format::hash_body(b"an anchor from a longer history");
    let second = JournalRepaired {
        cause: RepairCause::AnchorMismatch,
        from_offset: end,
        to_offset: end,
        lines: 0,
        quarantine_file: None,
        quarantine_blake3: None,
        anchor_seq: Some(9),
        anchor_hash: Some(anchor_hash.to_hex()),
        problem: format!(
            "the journal ends at seq 5 but its head anchor in the home store says seq 9 (hash {anchor_hash}) was acknowledged: it was cut short or rolled back"
        ),
        lost_from: None,
        lost_to: None,
        next_prev: None,
    };
    chain.push("journal.repaired", serde_json::to_value(second).unwrap());
    chain.fill_to(8);
    chain
}

// ---------------------------------------------------------------------------------------
// Writing the folder
// ---------------------------------------------------------------------------------------

const README_HEAD: &str = "\
# Journal format v1 test vectors

Generated by `tests/journal/vectors.rs` (run `ABCD_REGENERATE_VECTORS=1 cargo test --release --test journal vectors::`
to rewrite this folder, README included; never edit these files by hand). Each `<name>.jsonl` is a
journal file, byte for byte, and `<name>.expected.json` its verdict under `../SPEC.md`:

```json
{\"verdict\": \"clean\" | \"torn_tail\" | \"corrupt\",
 \"events\": <verified events before the first bad byte>,
 \"seq\": <corrupt: the seq the bad line should have had; otherwise null>,
 \"offset\": <corrupt: first byte of the bad line; torn_tail: first byte of the torn region; clean: null>,
 \"problem\": <the problem code of SPEC.md §7; clean: null>}
```

All times are fixed (event `n` is at 2026-11-30T06:00:00.000Z plus `n` × 1.037 s), as are the
journal ids, pids and session id. The data of every v1 kind here is defined (`../schema/`):
every such event is what abcd writes, and each one that verifies fits its schema and is taken
by the fold. `future.widget_spun` is a kind no abcd defines, so its data is free.
The files are binary (`.gitattributes`): a checkout that rewrites newlines breaks them, which is
what `corrupt-crlf` shows.

| vector | bytes | expected verdict | what it is |
|---|---:|---|---|
";

const README_TAIL: &str = "
Notes on vectors whose verdict follows from the code and deserves a second look:

- `corrupt-version-2-last`: a complete line whose hash verifies cannot be what a crashed
  append leaves, so a last line that hashes correctly but is not a valid v1 event is
  corruption, not a torn tail: a v1 appender refuses to build on a newer format's line
  instead of cutting it.
- `corrupt-genesis-bad-data`: `scan::scan` (the chain scan) reports this journal clean with
  three events; the genesis data rule is applied by `verify::verify` and by the appender
  (`read_genesis`), which report corruption at seq 0, offset 0. The expected file holds the
  full verdict; the test checks both layers.
- `nesting-127` / `corrupt-nesting-128`: the limit is serde_json's default recursion limit,
  which the verifier inherits; the writer (`format::encode_line`) verifies every line it
  encodes and refuses one it could not read back.
- `salvaged-duplicate`, `salvaged-swapped-pair`, `salvaged-foreign-tail`,
  `salvaged-foreign-splice`, `salvaged-misdirected-block`, `salvaged-damage-and-cut`,
  `salvaged-damage-and-rewrite` (the rule of proof, `../SPEC.md` §10): each is the repair of
  the damaged vector its row names, with the head anchor its row names in the home store
  (that line of journal A: its seq, hash and offsets). The test runs `repair::repair` on the
  damaged vector with that anchor and compares line by line: kept lines byte for byte, each
  `journal.repaired` by seq, prev and data, but for its time and pid (a repair writes its
  own; here the records carry a fixed time and pid 31337), the time stamp in
  `quarantine_file`, and the prev of a record that follows a record without gap keys (it
  names that record's hash). Byte ranges in these rows are `from_offset` to `to_offset`:
  the first byte and one past the last, in the file before the repair.
";

fn readme(vectors: &[Vector]) -> String {
    let mut out = README_HEAD.to_string();
    for v in vectors {
        out += &format!("| `{}` | {} | {} | {} |\n", v.name, v.bytes.len(), v.expected.in_words(), v.about);
    }
    out + README_TAIL
}

fn regenerate(dir: &Path, vectors: &[Vector]) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".jsonl") || name.ends_with(".expected.json") {
            std::fs::remove_file(&path)?;
        }
    }
    for v in vectors {
        std::fs::write(dir.join(format!("{}.jsonl", v.name)), &v.bytes)?;
        std::fs::write(dir.join(format!("{}.expected.json", v.name)), v.expected.to_json())?;
    }
    std::fs::write(dir.join("README.md"), readme(vectors))?;
    std::fs::write(dir.join(".gitattributes"), "# Vectors are bytes: no newline or encoding conversion.\n* -text\n*.md text\n")?;
    Ok(())
}

/// Regenerates the folder once per test process when asked to, before any test reads it.
fn prepared_vectors_dir() -> PathBuf {
    static ONCE: Once = Once::new();
    let dir = vectors_dir();
    ONCE.call_once(|| {
        if std::env::var(REGENERATE_VAR).is_ok_and(|v| v == "1") {
            eprintln!("{REGENERATE_VAR}=1: rewriting {}", dir.display());
            regenerate(&dir, &all_vectors()).expect("the vectors folder is writable");
        }
    });
    dir
}

// ---------------------------------------------------------------------------------------
// Reading the folder back
// ---------------------------------------------------------------------------------------

fn scan_bytes(bytes: &[u8]) -> (ScanReport, Vec<(format::Event, LinePos)>) {
    let mut events = Vec::new();
    let report = scan::scan(&BytesFile(bytes.to_vec()), StartPoint::GENESIS, |e, pos| {
        events.push((e.clone(), pos));
        Ok::<(), std::convert::Infallible>(())
    })
    .expect("reading memory cannot fail");
    (report, events)
}

/// Every `(name, bytes, expected)` in the folder; panics when a file has no partner.
fn read_folder(dir: &Path) -> Vec<(String, Vec<u8>, Expected)> {
    let mut journals = BTreeSet::new();
    let mut expecteds = BTreeSet::new();
    for entry in std::fs::read_dir(dir).expect("the vectors folder exists") {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".expected.json") {
            expecteds.insert(stem.to_string());
        } else if let Some(stem) = name.strip_suffix(".jsonl") {
            journals.insert(stem.to_string());
        } else {
            assert!([".gitattributes", "README.md"].contains(&name.as_str()), "unexpected file {name} in {}", dir.display());
        }
    }
    let lonely: Vec<_> = journals.symmetric_difference(&expecteds).collect();
    assert!(lonely.is_empty(), "vectors without their partner file (.jsonl / .expected.json): {lonely:?}");
    journals
        .into_iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(format!("{name}.jsonl"))).unwrap();
            let text = std::fs::read_to_string(dir.join(format!("{name}.expected.json"))).unwrap();
            let expected: Expected =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}.expected.json is not an expected verdict: {e}"));
            (name, bytes, expected)
        })
        .collect()
}

/// The verdict of `verify::verify` (scan plus the genesis data rule), without anchors.
fn full_verify(name: &str, bytes: &[u8]) -> verify::VerifyReport {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{name}.jsonl"));
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    verify::verify(&RealDisk, &path, None, |_, _| Ok::<(), std::convert::Infallible>(())).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_vector_has_its_expected_verdict() {
    let dir = prepared_vectors_dir();
    let found = read_folder(&dir);
    assert!(found.len() >= 13, "only {} vectors in {}", found.len(), dir.display());
    let mut failures = Vec::new();
    for (name, bytes, expected) in &found {
        let (report, events) = scan_bytes(bytes);
        assert_eq!(report.events_seen, events.len() as u64);
        assert_eq!(report.file_len, bytes.len() as u64);
        let scanned = expected_from(&report.verdict, report.events_seen);
        // The chain scan does not read genesis data; that rule is verify's (SPEC §5.3).
        let want_from_scan = if expected.problem.as_deref() == Some("bad_genesis_data") {
            Expected::clean(bytes.iter().filter(|&&b| b == b'\n').count() as u64)
        } else {
            expected.clone()
        };
        if scanned != want_from_scan {
            failures.push(format!("{name}: scan says {scanned:?}, the vector expects {want_from_scan:?}"));
        }
        // The torn region always runs to the end of the file.
        if let Verdict::TornTail(t) = &report.verdict {
            assert_eq!(t.offset + t.len, bytes.len() as u64, "{name}");
        }
        let full = full_verify(name, bytes);
        let mut verified = expected_from(&full.verdict, full.events);
        if expected.problem.as_deref() == Some("bad_genesis_data") {
            // verify::verify counts the events the chain scan verified (here all of them)
            // even when it then reports the genesis itself as corrupt; see the report.
            verified.events = expected.events;
        }
        if verified != *expected {
            failures.push(format!("{name}: verify::verify says {verified:?}, the vector expects {expected:?}"));
        }
    }
    assert!(failures.is_empty(), "{} vectors disagree:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn the_folder_is_what_the_generator_builds() {
    let dir = prepared_vectors_dir();
    let built = all_vectors();
    let on_disk: BTreeMap<String, (Vec<u8>, Expected)> = read_folder(&dir).into_iter().map(|(n, b, e)| (n, (b, e))).collect();
    let names: BTreeSet<&str> = built.iter().map(|v| v.name).collect();
    assert_eq!(names.len(), built.len(), "vector names are unique");
    let stale =
        format!("the vectors are stale: if the change is intended, run {REGENERATE_VAR}=1 cargo test --release --test journal vectors::");
    assert_eq!(on_disk.keys().map(String::as_str).collect::<BTreeSet<_>>(), names, "{stale}");
    for v in &built {
        let (bytes, expected) = &on_disk[v.name];
        assert!(bytes == &v.bytes, "{}: the file differs from what abcd writes today; {stale}", v.name);
        assert_eq!(expected, &v.expected, "{}: {stale}", v.name);
    }
    let readme_text = std::fs::read_to_string(dir.join("README.md")).expect("the vectors README exists");
    assert_eq!(readme_text, readme(&built), "README.md: {stale}");
}

/// SPEC.md quotes the genesis constant and a worked example; both must be what the code computes.
#[test]
fn the_spec_quotes_what_the_code_computes() {
    let spec = std::fs::read_to_string(format_dir().join("SPEC.md")).expect("journal-format/SPEC.md exists");
    let prev = Hash::genesis_prev().to_hex();
    assert_eq!(prev, blake3::Hasher::new_derive_key("abcd journal v1 genesis prev").finalize().to_hex().as_str());
    assert!(spec.contains(&prev), "SPEC.md does not quote the genesis prev {prev}");
    let valid = journal_a(8);
    for (i, line) in valid.lines[..2].iter().enumerate() {
        let text = utf8_of(line);
        assert!(spec.contains(text.trim_end()), "SPEC.md does not quote line {i} of valid.jsonl:\n{text}");
        let body = body_text(line);
        assert!(spec.contains(&body), "SPEC.md does not quote the body of line {i}");
        assert!(spec.contains(&valid.hashes[i].to_hex()), "SPEC.md does not quote the hash of line {i}");
    }
}

/// The appender's bounded tail check agrees with the full verifier on every vector: it
/// refuses to build on a corrupt journal, and on a clean or torn one it appends the next
/// seq (after moving a torn tail to quarantine).
#[test]
fn the_appender_agrees_with_every_vector() {
    use abcd::journal::{Journal, JournalError, JournalPaths};
    for (name, bytes, expected) in read_folder(&prepared_vectors_dir()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        std::fs::write(&path, &bytes).unwrap();
        let journal = Journal::new(abcd::journal::storage::RealDisk::shared(), JournalPaths::beside(&path), None);
        let event = NewEvent { kind: "compaction.recorded".into(), actor: Actor::this_process(None), data: json!({"n": 1}) };
        let result = journal.append(event, Some(&Scope::Machine {}));
        match expected.verdict.as_str() {
            "corrupt" => assert!(
                matches!(result, Err(JournalError::Corrupt { .. } | JournalError::NotAJournal { .. })),
                "{name}: the appender built on a corrupt journal: {result:?}"
            ),
            // An empty file, or a torn genesis moved to quarantine, gets a new genesis first.
            _ if expected.events == 0 => assert_eq!(result.unwrap().seq, 1, "{name}"),
            // The seq after the head's chain position: past any seqs a repair lost.
            _ => {
                let next = scan_bytes(&bytes).0.head.map_or(0, |h| h.seq + 1);
                assert!(next >= expected.events, "{name}");
                assert_eq!(result.unwrap().seq, next, "{name}: the appended event must take the next seq")
            }
        }
    }
}

/// The salvaged vectors are what `abcd journal repair` writes: the same lines kept, and
/// records with the same seq, prev and data (but the time stamp in the quarantine file's
/// name, and the record's own time and pid: so the prev of a record that follows a record
/// which is no gap record is not compared, the scan of the repaired file checks it).
#[test]
fn the_salvaged_vectors_are_what_repair_writes() {
    /// Name, events, lost ranges, the anchor's seq.
    type Case = (&'static str, u64, &'static [(usize, usize)], Option<u64>);
    let cases: [Case; 4] = [
        ("salvaged-bit-flip", 8, &[(3, 3)], None),
        ("salvaged-two-lines", 10, &[(3, 3), (6, 6)], None),
        ("salvaged-lost-run", 9, &[(4, 5)], None),
        ("salvaged-last-line", 6, &[(5, 5)], Some(5)),
    ];
    for (name, n, lost, acknowledged) in cases {
        let chain = journal_a(n);
        let mut damaged = chain.bytes();
        for &(from, to) in lost {
            for line in from..=to {
                damaged[chain.offset(line) as usize + 100] ^= 0x02;
            }
        }
        let anchor = acknowledged.map(|seq| head_of(&chain, seq as usize));
        check_repair_writes(name, &damaged, anchor);
    }
}

/// Each shape of the rule of proof (SPEC §10): repair of the damaged vector, with the head
/// anchor the case names, writes the salvaged vector.
#[test]
fn the_rule_of_proof_vectors_are_what_repair_writes() {
    let dir = prepared_vectors_dir();
    let spec = std::fs::read_to_string(format_dir().join("SPEC.md")).expect("journal-format/SPEC.md exists");
    for case in proof_cases() {
        let input = std::fs::read(dir.join(format!("{}.jsonl", case.input))).unwrap();
        assert!(input == case.damaged, "{}: the damaged file is the vector {}", case.name, case.input);
        let text = std::fs::read_to_string(dir.join(format!("{}.expected.json", case.input))).unwrap();
        let expected: Expected = serde_json::from_str(&text).unwrap();
        assert_eq!(expected, case.input_expected, "{}: {}'s verdict", case.name, case.input);
        check_repair_writes(case.name, &case.damaged, case.anchor);
        for vector in [case.name, case.input] {
            assert!(spec.contains(&format!("`{vector}`")), "SPEC.md §10 does not list the vector {vector}");
        }
    }
}

/// Runs `abcd journal repair` on `damaged` in a temp folder, with `anchor` in the home store,
/// and compares what it writes with the vector `name` line by line.
fn check_repair_writes(name: &str, damaged: &[u8], anchor: Option<scan::Head>) {
    use abcd::journal::anchor::{Anchor, AnchorStore};
    use abcd::journal::repair::{self, RepairOutcome};
    use abcd::journal::{Journal, JournalPaths};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    std::fs::write(&path, damaged).unwrap();
    let anchors = AnchorStore::new(&dir.path().join("home"));
    if let Some(head) = anchor {
        anchors.store(&RealDisk, ID_A, Anchor::from(head)).unwrap();
    }
    let journal = Journal::new(RealDisk::shared(), JournalPaths::beside(&path), Some(anchors));
    let outcome = repair::repair(&journal, None, None).unwrap();
    assert!(matches!(outcome, RepairOutcome::Salvaged(_)), "{name}: {outcome:?}");
    let ours = std::fs::read(&path).unwrap();
    assert_eq!(scan_bytes(&ours).0.verdict, Verdict::Clean, "{name}: the repaired journal verifies");
    let vector = std::fs::read(prepared_vectors_dir().join(format!("{name}.jsonl"))).unwrap();
    let lines = |b: &[u8]| -> Vec<Vec<u8>> { b.split_inclusive(|&c| c == b'\n').map(<[u8]>::to_vec).collect() };
    let (ours, vector) = (lines(&ours), lines(&vector));
    assert_eq!(ours.len(), vector.len(), "{name}");
    let mut record_before = false;
    for (i, (o, v)) in ours.iter().zip(&vector).enumerate() {
        let (eo, ev) = (format::verify_line(o).unwrap(), format::verify_line(v).unwrap());
        if ev.kind != "journal.repaired" {
            assert_eq!(o, v, "{name}: line {i} is kept byte for byte");
            record_before = false;
            continue;
        }
        let without_stamp = |mut d: Value| {
            if let Some(q) = d["quarantine_file"].as_str().map(str::to_string) {
                d["quarantine_file"] = json!(q.split('-').take(2).collect::<Vec<_>>().join("-"));
            }
            d
        };
        assert_eq!((eo.seq, &eo.kind), (ev.seq, &ev.kind), "{name}: line {i}");
        if !record_before {
            assert_eq!(eo.prev, ev.prev, "{name}: line {i}'s prev");
        }
        // Each quarantine file named holds the bytes the record's hash names.
        if let (Some(file), Some(hash)) = (eo.data["quarantine_file"].as_str(), eo.data["quarantine_blake3"].as_str()) {
            let copy = std::fs::read(dir.path().join("quarantine").join(file)).unwrap();
            assert_eq!(blake3::hash(&copy).to_hex().as_str(), hash, "{name}: {file}");
        }
        record_before = ev.gap().is_none();
        assert_eq!(without_stamp(eo.data), without_stamp(ev.data), "{name}: line {i}'s data");
    }
}

/// The writer of the rule-of-proof vectors (`salvage_by_plan`) is the writer of the first
/// salvaged vectors: given their plans, it builds them byte for byte.
#[test]
fn the_plan_writer_rebuilds_the_first_salvaged_vectors() {
    /// Events, lost ranges, the anchor's seq.
    type Case = (u64, &'static [(usize, usize)], Option<u64>);
    let cases: [Case; 4] = [(8, &[(3, 3)], None), (10, &[(3, 3), (6, 6)], None), (9, &[(4, 5)], None), (6, &[(5, 5)], Some(5))];
    for (n, lost, acknowledged) in cases {
        let chain = journal_a(n);
        let mut pieces = chain.lines.clone();
        let mut steps = vec![];
        let mut next = 0;
        for &(from, to) in lost {
            for line in &mut pieces[from..=to] {
                line[100] ^= 0x02;
            }
            steps.extend(lines_of(next..from));
            let lost_tail = acknowledged.is_some() && to + 1 == chain.lines.len();
            steps.push(Keep::Gap { from: from as u64, to: to as u64, next_prev: chain.hashes[to], lost_tail });
            next = to + 1;
        }
        steps.extend(lines_of(next..chain.lines.len()));
        let plan = ProofPlan {
            pieces,
            steps,
            problems: lost.iter().map(|_| LineFault::HashMismatch.to_string()).collect(),
            moved: vec![],
            rewritten: None,
            time: time_of(chain.next_seq()),
        };
        assert!(salvage_by_plan(&plan) == salvaged(&chain, lost, acknowledged), "journal_a({n}) salvaged of {lost:?}");
    }
}
