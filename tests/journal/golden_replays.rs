//! Golden replays (`replay/`, SPEC §9): journals with their expected `abcd replay` audit
//! output and expected projections, checked through the real binary.
//!
//! Every scenario's inputs (the journal and what sits beside it: projections, checkpoints,
//! quarantine files, the home store's anchor) are generated here, deterministically: fixed
//! journal ids, times, pids and sessions, lines built by `encode_line` (`common/chain.rs`),
//! caches written by the library's own `Store`. In a normal run, for each scenario, this
//! file:
//!
//! - checks that the inputs on disk are byte for byte what the generator builds today;
//! - copies the inputs to a temporary folder (replay must not write into the repository,
//!   and must not write at all: the copy is compared before and after) with `ABCD_HOME`
//!   pointing at a temporary copy of the scenario's `home/`;
//! - runs `abcd replay --journal <copy>` (text), the same with `--json`, and
//!   `abcd replay --journal <copy> --at <last verified seq> --json`, checks their exit
//!   codes against the table below and that stderr is empty;
//! - replaces the temporary folder's path with `<dir>` (and the home's with `<home>`) and
//!   compares the audit text, the NDJSON and the three projections with `expected/`
//!   exactly, failing with a diff-like message;
//! - checks the facts each scenario's README says the audit must show (`must_show`), so a
//!   regeneration cannot bless a regression silently.
//!
//! `ABCD_REGENERATE_REPLAYS=1 cargo test --test journal golden_replays::` rewrites every scenario's
//! inputs and `expected/` (never its README.md), then runs the same checks. Exit codes
//! and `must_show` live in this file and are never regenerated.

use crate::common::chain;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

use abcd::checklist::item::{ChangeSet, Credential, ItemFields, ItemState, slug_from_title};
use abcd::event::{ItemAdded, ItemChanged, JournalRepaired, RepairCause, Scope, WriteRefused};
use abcd::journal::anchor::{Anchor, AnchorStore};
use abcd::journal::format::LineFault;
use abcd::journal::scan::Problem;
use abcd::journal::storage::RealDisk;
use abcd::journal::{Journal, JournalPaths, NewEvent};
use abcd::secrets::{self, SecretKind};
use abcd::store::{StateBase, Store};
use chain::{Chain, actor, at, plus_ms};
use serde_json::{Value, json};

const REGENERATE_VAR: &str = "ABCD_REGENERATE_REPLAYS";
const REGENERATE_HINT: &str =
    "if the change is intended, run `ABCD_REGENERATE_REPLAYS=1 cargo test --test journal golden_replays::` and review the diff of replay/";

/// The files every scenario's `expected/` holds, and nothing else.
const EXPECTED_FILES: [&str; 5] = ["audit.txt", "audit.ndjson", "state.json", "checklist.json", "checklist.last-good.json"];
/// The projections `--at` prints, by name, and the expected file each goes to.
const PROJECTIONS: [(&str, &str); 3] =
    [("state", "state.json"), ("checklist", "checklist.json"), ("checklist-last-good", "checklist.last-good.json")];
/// Files in a scenario folder that are not inputs.
const README: &str = "README.md";
const EXPECTED_DIR: &str = "expected";
/// The folder of a scenario that holds the home store (`ABCD_HOME`).
const HOME_DIR: &str = "home";
const JOURNAL: &str = "journal.jsonl";

const WORKING_COPY: &str = "/home/ana/src/shop";
/// The host session (Claude Code keeps its id across a compaction).
const SESSION: &str = "3f2c8a1e-5b7d-4e90-a1c3-d5e7f9012b4c";

fn replay_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("replay")
}

// ---------------------------------------------------------------------------------------
// The scenarios
// ---------------------------------------------------------------------------------------

/// The scenarios, in the order replay/README.md lists them, with the exit codes of
/// `abcd replay` and of `abcd replay --at <seq>`.
const SCENARIOS: &[(&str, i32, i32)] = &[
    ("day-of-checklist-edits", 0, 0),
    ("compaction-mid-session", 0, 0),
    ("torn-tail-after-crash", 0, 0),
    ("corruption-before-repair", 1, 1),
    ("corruption-repaired", 0, 0),
    ("shell-appended-secret", 0, 0),
    ("checkpoint-plus-tail", 0, 0),
    ("context-receipts", 0, 0),
];

struct Scenario {
    name: &'static str,
    /// Exit code of `abcd replay` (text and `--json` alike).
    exit: i32,
    /// Exit code of `abcd replay --at <at> --json`.
    at_exit: i32,
    /// The seq whose projections `expected/` holds: the last verified event.
    at: u64,
    /// Input files by path relative to the scenario folder (`/`-separated).
    inputs: BTreeMap<String, Vec<u8>>,
    /// Text the normalized audit (`audit.txt`) must contain, whatever `expected/` says.
    must_show: Vec<String>,
}

fn build(name: &str) -> Scenario {
    let &(name, exit, at_exit) = SCENARIOS.iter().find(|s| s.0 == name).unwrap_or_else(|| panic!("no scenario {name}"));
    let (at, inputs, must_show) = match name {
        "day-of-checklist-edits" => day_of_checklist_edits(),
        "compaction-mid-session" => compaction_mid_session(),
        "torn-tail-after-crash" => torn_tail_after_crash(),
        "corruption-before-repair" => corruption_before_repair(),
        "corruption-repaired" => corruption_repaired(),
        "shell-appended-secret" => shell_appended_secret(),
        "checkpoint-plus-tail" => checkpoint_plus_tail(),
        "context-receipts" => context_receipts(),
        other => panic!("no builder for scenario {other}"),
    };
    Scenario { name, exit, at_exit, at, inputs, must_show }
}

/// What a scenario's builder returns: the seq of `expected/`'s projections, the inputs,
/// and the must-show facts.
type Built = (u64, BTreeMap<String, Vec<u8>>, Vec<String>);

/// A journal being written by a session: each event comes from its own abcd process (a
/// verb or a hook), so each gets a fresh pid.
struct Story {
    chain: Chain,
    journal_id: &'static str,
    pid: u32,
}

impl Story {
    /// The journal as abcd creates it on the first append: the genesis (no session), then
    /// `session.started` (startup) from the same process 3 ms later.
    fn start(journal_id: &'static str, time: &str, pid: u32) -> Story {
        let t = at(time);
        let chain = Chain::open(journal_id, Scope::WorkingCopy { root: WORKING_COPY.into() }, t, pid);
        let mut story = Story { chain, journal_id, pid };
        story.chain.push(plus_ms(t, 3), &actor(Some(SESSION), pid), "session.started", session_started("startup"));
        story
    }

    /// One event from a new abcd process of the session.
    fn event(&mut self, time: &str, kind: &str, data: Value) -> &mut Story {
        self.pid += 17;
        self.chain.push(at(time), &actor(Some(SESSION), self.pid), kind, data);
        self
    }

    fn add(&mut self, time: &str, item: ItemFields) -> &mut Story {
        self.event(time, "checklist.item_added", serde_json::to_value(ItemAdded { item }).expect("plain data"))
    }

    fn change(&mut self, time: &str, id: &str, changes: ChangeSet) -> &mut Story {
        let data = serde_json::to_value(ItemChanged { id: id.into(), changes }).expect("plain data");
        self.event(time, "checklist.item_changed", data)
    }

    fn refused(&mut self, time: &str, verb: &str, field: &str, kind: SecretKind) -> &mut Story {
        let data = WriteRefused { verb: verb.into(), field: field.into(), kind: kind.name().into() };
        self.event(time, "checklist.write_refused", serde_json::to_value(data).expect("plain data"))
    }
}

fn session_started(source: &str) -> Value {
    json!({"session": SESSION, "source": source, "working_copy": WORKING_COPY})
}

/// An item as `abcd checklist add "<title>"` writes it, nothing else set.
fn item(title: &str) -> ItemFields {
    ItemFields::working(&slug_from_title(title), title)
}

fn refs(list: &[&str]) -> Vec<String> {
    list.iter().map(|r| r.to_string()).collect()
}

/// An item that waits (as `add --waits-on` writes it).
fn waiting(title: &str, waits_on: &str) -> ItemFields {
    ItemFields { state: ItemState::Waiting, waits_on: Some(waits_on.into()), ..item(title) }
}

/// `set <id> --state done`, clearing what an open item waited on.
fn done() -> ChangeSet {
    ChangeSet { state: Some(ItemState::Done), waits_on: Some(None), next_look: Some(None), ..ChangeSet::default() }
}

/// What abcd's store leaves beside a journal: files rendered by the library itself.
struct Caches<'a> {
    chain: &'a Chain,
    files: BTreeMap<String, Vec<u8>>,
}

impl<'a> Caches<'a> {
    fn new(chain: &'a Chain) -> Caches<'a> {
        let mut files = BTreeMap::new();
        files.insert(JOURNAL.to_string(), chain.bytes());
        Caches { chain, files }
    }

    /// Runs `write` on a `Store` over a temporary journal holding the first `lines` lines,
    /// and returns the files it wrote (paths relative to the journal's folder).
    fn written_by_store(&self, lines: usize, write: impl FnOnce(&Store, &abcd::store::CurrentState)) -> BTreeMap<String, Vec<u8>> {
        let tmp = tempfile::tempdir().expect("temp dir");
        let path = tmp.path().join(JOURNAL);
        std::fs::write(&path, self.chain.prefix(lines)).expect("temp journal written");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let store = Store::new(Journal::new(RealDisk::shared(), JournalPaths::beside(&path), None));
        let current = store.current_state().expect("the store folds the prefix");
        assert_eq!(current.head, self.chain.head_of(lines), "the store's head is the prefix's last line");
        assert!(current.degraded.is_none(), "the prefix verifies");
        write(&store, &current);
        let mut out = read_tree(tmp.path());
        out.remove(JOURNAL);
        // The session-start render is stamped with the clock at the write, and no replay
        // reads it: not an input. Nor is the prompt hook's state, which only that hook reads.
        out.remove(abcd::store::projection::SESSION_CONTEXT_FILE);
        out.remove(abcd::store::projection::PROMPT_STATE_FILE);
        out
    }

    /// `state.json` and `checklist.json` as the store rewrites them after an append that
    /// left the journal `lines` lines long.
    fn projections_after(&mut self, lines: usize) -> &mut Self {
        let files = self.written_by_store(lines, |s, c| s.write_projection(c).expect("projection written"));
        self.files.extend(files);
        self
    }

    /// `checklist.last-good.json` as written after the successful write that left the
    /// journal `lines` lines long.
    fn last_good_after(&mut self, lines: usize) -> &mut Self {
        let files = self.written_by_store(lines, |s, c| s.write_last_good(c).expect("last-good written"));
        self.files.extend(files);
        self
    }

    /// The checkpoint the store writes when an append reaches the last of `lines` lines.
    fn checkpoint_after(&mut self, lines: usize) -> &mut Self {
        let files = self.written_by_store(lines, |s, c| {
            s.write_checkpoint(c).expect("checkpoint written");
        });
        self.files.extend(files);
        self
    }

    /// The head anchor the home store keeps after an acknowledged append that left the
    /// journal `lines` lines long.
    fn anchor_after(&mut self, journal_id: &str, lines: usize) -> &mut Self {
        let tmp = tempfile::tempdir().expect("temp dir");
        AnchorStore::new(tmp.path()).store(&RealDisk, journal_id, Anchor::from(self.chain.head_of(lines))).expect("anchor stored");
        for (rel, bytes) in read_tree(tmp.path()) {
            self.files.insert(format!("{HOME_DIR}/{rel}"), bytes);
        }
        self
    }

    fn file(&mut self, rel: &str, bytes: Vec<u8>) -> &mut Self {
        self.files.insert(rel.into(), bytes);
        self
    }

    fn done(&mut self) -> BTreeMap<String, Vec<u8>> {
        std::mem::take(&mut self.files)
    }
}

/// A session's day: items added, waited on, promised, renamed, done and dropped; the day
/// ends with a write refused for a secret, so last-good is one event behind.
fn day_of_checklist_edits() -> Built {
    let mut s = Story::start("d4e1a7c2b9f0436e8a5d1c7b3e9f2a60", "2026-12-01T08:58:41.207Z", 40113);
    s.add("2026-12-01T09:03:12.554Z", ItemFields { owner_refs: refs(&["fix/flaky-upload"]), ..item("Fix the flaky upload test") })
        .add(
            "2026-12-01T09:04:40.019Z",
            ItemFields {
                next_look: Some(at("2026-12-01T13:00:00Z")),
                promise: Some("CI is green on PR 41 => merge it and tag 1.8.0".into()),
                owner_refs: refs(&["feat/csv-export", "pr:41"]),
                ..waiting("Ship the CSV export", "pr:41")
            },
        )
        .add(
            "2026-12-01T09:05:02.771Z",
            ItemFields {
                credential: Some(Credential {
                    kind: "github_token".into(),
                    scope: "deploy".into(),
                    expiry: Some(at("2026-12-15T00:00:00Z")),
                }),
                ..waiting("Rotate the deploy token before it expires", "person:ops")
            },
        )
        .change(
            "2026-12-01T10:47:13.090Z",
            "fix-the-flaky-upload-test",
            ChangeSet { owner_refs: Some(refs(&["fix/flaky-upload", "pr:42"])), ..ChangeSet::default() },
        )
        .change(
            "2026-12-01T11:20:55.402Z",
            "fix-the-flaky-upload-test",
            ChangeSet {
                state: Some(ItemState::Waiting),
                waits_on: Some(Some("pr:42".into())),
                next_look: Some(Some(at("2026-12-01T15:00:00Z"))),
                promise: Some(Some("PR 42 approved => merge it and close issue 118".into())),
                ..ChangeSet::default()
            },
        )
        .change("2026-12-01T13:02:08.665Z", "ship-the-csv-export", done())
        .add("2026-12-01T13:40:31.118Z", ItemFields { owner_refs: refs(&["docs/release-1-8"]), ..item("Write the 1.8.0 release notes") })
        .change(
            "2026-12-01T14:12:47.930Z",
            "write-the-1-8-0-release-notes",
            ChangeSet { title: Some("Write the 1.8.0 release notes (CSV export, upload fix)".into()), ..ChangeSet::default() },
        )
        .change("2026-12-01T15:06:19.244Z", "fix-the-flaky-upload-test", ChangeSet { promise: Some(None), ..done() })
        .change(
            "2026-12-01T15:31:02.587Z",
            "rotate-the-deploy-token-before-it-expires",
            ChangeSet { state: Some(ItemState::Dropped), waits_on: Some(None), credential: Some(None), ..ChangeSet::default() },
        )
        .refused("2026-12-01T16:45:58.313Z", "set", "promise", SecretKind::PasswordAssignment);
    let n = s.chain.lines().len();
    let files = Caches::new(&s.chain).projections_after(n).last_good_after(n - 1).anchor_after(s.journal_id, n).done();
    let must_show = vec![
        "added checklist item ship-the-csv-export (waiting): Ship the CSV export".into(),
        "changed checklist item rotate-the-deploy-token-before-it-expires: credential, state, waits_on".into(),
        "refused a checklist set: field promise carries a secret (password_assignment)".into(),
        "checklist.last-good.json: agrees with the fold at seq 11, behind the head by 1 (written after successful writes only)".into(),
        "checklist.json: agrees with the fold at the head, seq 12".into(),
        "verdict: ok".into(),
    ];
    (s.chain.last_seq(), files, must_show)
}

/// A session compacted by the host halfway through its plan: `compaction.recorded`, then
/// `session.started` with source `compact`, and the plan carried on after it.
fn compaction_mid_session() -> Built {
    let migrate_title = "Migrate the billing cron to the new scheduler";
    let review_title = "Get the ops review of the scheduler change";
    let (migrate, review) = (slug_from_title(migrate_title), slug_from_title(review_title));
    let mut s = Story::start("c0a1b2c3d4e5f60718293a4b5c6d7e8f", "2026-12-02T09:14:03.501Z", 51022);
    s.add("2026-12-02T09:15:47.880Z", ItemFields { owner_refs: refs(&["feat/billing-scheduler"]), ..item(migrate_title) })
        .add(
            "2026-12-02T09:16:10.245Z",
            ItemFields {
                next_look: Some(at("2026-12-02T14:00:00Z")),
                promise: Some("ops approve => switch the billing cron over".into()),
                ..waiting(review_title, "person:ops")
            },
        )
        .change(
            "2026-12-02T11:52:36.019Z",
            &migrate,
            ChangeSet { owner_refs: Some(refs(&["feat/billing-scheduler", "pr:87"])), ..ChangeSet::default() },
        )
        .event("2026-12-02T12:30:00.777Z", "compaction.recorded", json!({"session": SESSION, "trigger": "auto"}))
        .event("2026-12-02T12:30:04.112Z", "session.started", session_started("compact"))
        .change(
            "2026-12-02T14:05:21.660Z",
            &review,
            ChangeSet { state: Some(ItemState::Working), waits_on: Some(None), next_look: Some(None), ..ChangeSet::default() },
        )
        .change("2026-12-02T14:40:09.301Z", &migrate, done())
        .add("2026-12-02T14:41:55.948Z", ItemFields { owner_refs: refs(&["pr:87"]), ..item("Remove the old billing cron entry") });
    let n = s.chain.lines().len();
    let files = Caches::new(&s.chain).projections_after(n).last_good_after(n).anchor_after(s.journal_id, n).done();
    let must_show = vec![
        "context compaction (auto)".into(),
        format!("session started (compact) in {WORKING_COPY}"),
        format!("changed checklist item {migrate}: next_look, state, waits_on"),
        "verdict: ok".into(),
    ];
    (s.chain.last_seq(), files, must_show)
}

/// A session's injections and their receipts: the start's checklist reached the model; the
/// one after a compaction went over the host's cap and was cut to a preview, was sent again
/// by the next prompt hook, and that one arrived.
fn context_receipts() -> Built {
    let title = "Port the importer to the new API";
    let injected = |source: &str, marker: &str, chars: u64, reinjects: Option<&str>| {
        let mut data = json!({"session": SESSION, "source": source, "marker": marker, "digest": format!("{marker:0<64}"),
            "covers_seq": 1, "chars": chars, "away": null});
        if let Some(m) = reinjects {
            data["reinjects"] = json!(m);
        }
        data
    };
    let receipt = |marker: &str, reason: &str| json!({"session": SESSION, "marker": marker, "reason": reason});
    let mut s = Story::start("d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6", "2026-12-04T08:00:00.100Z", 70111);
    s.add("2026-12-04T08:01:00.200Z", item(title))
        .event("2026-12-04T08:02:00.300Z", "session.started", session_started("startup"))
        .event("2026-12-04T08:02:00.310Z", "context.injected", injected("session_start:startup", "3f9a1c0b", 212, None))
        .event("2026-12-04T08:03:10.400Z", "context.delivered", receipt("3f9a1c0b", "sent"))
        .event("2026-12-04T10:30:00.500Z", "compaction.recorded", json!({"session": SESSION, "trigger": "auto"}))
        .event("2026-12-04T10:30:04.600Z", "session.started", session_started("compact"))
        .event("2026-12-04T10:30:04.610Z", "context.injected", injected("session_start:compact", "a0b1c2d3", 10_480, None))
        .event("2026-12-04T10:31:00.700Z", "context.not_delivered", receipt("a0b1c2d3", "cut"))
        .event("2026-12-04T10:35:12.800Z", "context.injected", injected("reinject", "5e6f7a8b", 212, Some("a0b1c2d3")))
        .event("2026-12-04T10:36:40.900Z", "context.delivered", receipt("5e6f7a8b", "sent"));
    let n = s.chain.lines().len();
    let files = Caches::new(&s.chain).projections_after(n).last_good_after(n).anchor_after(s.journal_id, n).done();
    let must_show = vec![
        format!("injected context 3f9a1c0b into session {SESSION} (session start:startup): 212 characters, the checklist as of seq 1"),
        format!("context 3f9a1c0b reached session {SESSION}'s model: the host's transcript shows it sent whole"),
        format!("context a0b1c2d3 did NOT reach session {SESSION}'s model: the host cut it to a preview (over its output cap)"),
        "sending again a0b1c2d3 which was not delivered".into(),
        format!("context 5e6f7a8b reached session {SESSION}'s model"),
        "verdict: ok".into(),
    ];
    (s.chain.last_seq(), files, must_show)
}

/// A night's work cut by a power loss during an append: half of the last line reached
/// the disk, then zeros up to the end of the file system block.
fn torn_tail_after_crash() -> Built {
    let mut s = Story::start("7f3e2d1c0b9a48576a5b4c3d2e1f0a9b", "2026-12-03T22:01:10.020Z", 60311);
    s.add("2026-12-03T22:03:44.120Z", ItemFields { owner_refs: refs(&["deps/pg-0-9"]), ..item("Upgrade the Postgres driver to 0.9") })
        .add("2026-12-03T22:04:02.481Z", item("Fix the connection-pool leak the upgrade exposed"))
        .change(
            "2026-12-03T22:37:15.006Z",
            "upgrade-the-postgres-driver-to-0-9",
            ChangeSet { owner_refs: Some(refs(&["deps/pg-0-9", "pr:203"])), ..ChangeSet::default() },
        )
        .change(
            "2026-12-03T23:10:40.777Z",
            "fix-the-connection-pool-leak-the-upgrade",
            ChangeSet {
                state: Some(ItemState::Waiting),
                waits_on: Some(Some("pr:204".into())),
                next_look: Some(Some(at("2026-12-04T08:00:00Z"))),
                promise: Some(Some("PR 204 is green => merge it before PR 203".into())),
                ..ChangeSet::default()
            },
        )
        .add("2026-12-03T23:58:12.330Z", waiting("Re-run the load test on staging", "slot:staging"))
        .change(
            "2026-12-04T00:20:31.902Z",
            "re-run-the-load-test-on-staging",
            ChangeSet { next_look: Some(Some(at("2026-12-04T06:00:00Z"))), ..ChangeSet::default() },
        );
    let n = s.chain.lines().len();
    // The append that never returned: `set upgrade-… --state done`.
    let (lost, _) = s.chain.encode(
        at("2026-12-04T00:41:07.015Z"),
        &actor(Some(SESSION), s.pid + 17),
        "checklist.item_changed",
        serde_json::to_value(ItemChanged { id: "upgrade-the-postgres-driver-to-0-9".into(), changes: done() }).expect("plain data"),
    );
    let mut journal = s.chain.bytes();
    journal.extend_from_slice(&lost[..180]);
    journal.resize(journal.len().next_multiple_of(4096), 0);
    let files = Caches::new(&s.chain).file(JOURNAL, journal).projections_after(n).last_good_after(n).anchor_after(s.journal_id, n).done();
    let must_show = vec![
        format!("torn tail of {} bytes at byte {}", files[JOURNAL].len() as u64 - s.chain.offset(n), s.chain.offset(n)),
        "never acknowledged".into(),
        "anchor:  agrees (seq 7)".into(),
        "verdict: ok".into(),
    ];
    (s.chain.last_seq(), files, must_show)
}

const CORRUPTION_ID: &str = "5e4d3c2b1a0948f7e6d5c4b3a2918070";
/// The event a bit flip at rest damaged.
const DAMAGED_SEQ: usize = 7;

/// The invoice work of a day, thirteen events, before and after one bit flipped at rest
/// in event 7: (the intact chain, the damaged file).
fn invoice_day() -> (Story, Vec<u8>) {
    let mut s = Story::start(CORRUPTION_ID, "2026-12-05T10:00:00.113Z", 70210);
    s.add("2026-12-05T10:02:31.540Z", item("Port the invoice renderer"))
        .add("2026-12-05T10:03:05.007Z", item("Add golden tests for invoice PDFs"))
        .change(
            "2026-12-05T10:40:12.996Z",
            "port-the-invoice-renderer",
            ChangeSet { owner_refs: Some(refs(&["feat/invoice-templates"])), ..ChangeSet::default() },
        )
        .add(
            "2026-12-05T11:15:44.318Z",
            ItemFields { next_look: Some(at("2026-12-05T15:00:00Z")), ..waiting("Ask finance to check the VAT line", "person:finance") },
        )
        .change(
            "2026-12-05T12:01:59.870Z",
            "add-golden-tests-for-invoice-pdfs",
            ChangeSet { owner_refs: Some(refs(&["pr:311"])), ..ChangeSet::default() },
        )
        .change("2026-12-05T13:27:30.452Z", "port-the-invoice-renderer", done())
        .add("2026-12-05T13:45:02.114Z", item("Write the migration note for support"))
        .change(
            "2026-12-05T15:10:48.639Z",
            "ask-finance-to-check-the-vat-line",
            ChangeSet { state: Some(ItemState::Working), waits_on: Some(None), next_look: Some(None), ..ChangeSet::default() },
        )
        .change("2026-12-05T15:52:17.085Z", "add-golden-tests-for-invoice-pdfs", done())
        .add("2026-12-05T16:20:40.731Z", item("Remove the old renderer"))
        .change("2026-12-05T16:58:09.366Z", "write-the-migration-note-for-support", done());
    let mut damaged = s.chain.bytes();
    let line = &s.chain.lines()[DAMAGED_SEQ];
    let word = b"port-the-invoice-renderer";
    let at_word = line.windows(word.len()).position(|w| w == word).expect("event 7 names the item");
    // `o` (0x6f) becomes `k` (0x6b): one bit.
    damaged[s.chain.offset(DAMAGED_SEQ) as usize + at_word + 1] ^= 0x04;
    (s, damaged)
}

/// The invoice day after a bit flip at rest in event 7, before anyone repaired it. The
/// projections, last-good and anchor still name event 12.
fn corruption_before_repair() -> Built {
    let (s, damaged) = invoice_day();
    let n = s.chain.lines().len();
    let files = Caches::new(&s.chain).file(JOURNAL, damaged).projections_after(n).last_good_after(n).anchor_after(s.journal_id, n).done();
    let offset = s.chain.offset(DAMAGED_SEQ);
    let must_show = vec![
        format!("CORRUPT at seq {DAMAGED_SEQ}, byte offset {offset}: the hash does not match the line's bytes"),
        "anchor:  seq 12 was acknowledged; it lies past the corruption".into(),
        "DISAGREES: names seq 12, which the journal does not hold verified".into(),
        "verdict: FAILED".into(),
    ];
    (DAMAGED_SEQ as u64 - 1, files, must_show)
}

/// The quarantine file's stamp and the repair event's time.
const REPAIR_TIME: &str = "2026-12-05T17:30:12.408Z";
const REPAIR_PID: u32 = 71544;

/// `abcd journal repair` run by the person on the damaged invoice day: only the damaged
/// line goes to quarantine, a gap record stands in for seq 7, every later line is kept,
/// and the session redoes the one change that was lost.
fn corruption_repaired() -> Built {
    let (before, damaged) = invoice_day();
    let from = before.chain.offset(DAMAGED_SEQ);
    let to = from + before.chain.lines()[DAMAGED_SEQ].len() as u64;
    let moved = damaged[from as usize..to as usize].to_vec();
    let stamp = at(REPAIR_TIME).strftime("%Y%m%dT%H%M%S%3fZ").to_string();
    let quarantine_file = format!("corrupt-{DAMAGED_SEQ}-{stamp}.bin");
    let problem = Problem::Line(LineFault::HashMismatch);
    let lost_hash = before.chain.head_of(DAMAGED_SEQ + 1).hash;
    let data = JournalRepaired {
        cause: RepairCause::Corruption,
        from_offset: from,
        to_offset: to,
        lines: 1,
        quarantine_file: Some(quarantine_file.clone()),
        quarantine_blake3: Some(blake3::hash(&moved).to_hex().to_string()),
        anchor_seq: None,
        anchor_hash: None,
        problem: format!("seq {DAMAGED_SEQ} at byte {from}: {problem}"),
        lost_from: Some(DAMAGED_SEQ as u64),
        lost_to: Some(DAMAGED_SEQ as u64),
        next_prev: Some(lost_hash.to_hex()),
    };
    let mut s = before;
    // The person ran the repair in a terminal: no host session.
    let event =
        NewEvent { kind: "journal.repaired".into(), actor: actor(None, REPAIR_PID), data: serde_json::to_value(data).expect("plain data") };
    let prev = s.chain.head_of(DAMAGED_SEQ).hash;
    let (record, _) = abcd::journal::format::encode_line(DAMAGED_SEQ as u64, at(REPAIR_TIME), &event, &prev).expect("the record encodes");
    s.chain.stand_in(DAMAGED_SEQ, record);
    let repaired_lines = s.chain.lines().len();
    s.change("2026-12-05T17:41:26.902Z", "port-the-invoice-renderer", done());
    assert!(repaired_lines < s.chain.lines().len());
    let n = s.chain.lines().len();
    let files = Caches::new(&s.chain)
        .file(&format!("quarantine/{quarantine_file}"), moved)
        .projections_after(n)
        .last_good_after(n)
        .anchor_after(s.journal_id, n)
        .done();
    let must_show = vec![
        format!(
            "repaired the journal (corruption): LOST seq 7 (this record stands in for what was lost); moved bytes {from}..{to} (1 lines) to quarantine/{quarantine_file} after: seq 7 at byte {from}: the hash does not match the line's bytes"
        ),
        "pid 71544 (abcd/0.1.0)".into(),
        "chain:   every line verifies".into(),
        "verdict: ok".into(),
    ];
    (s.chain.last_seq(), files, must_show)
}

/// A GitHub token that is not one: `ghp_` and 36 letters and digits, derived from a fixed
/// seed, so the scenario is the same bytes on every run.
fn fake_token() -> String {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 36];
    blake3::Hasher::new_derive_key("abcd golden replay fake token").update(b"not a real token").finalize_xof().fill(&mut bytes);
    let body: String = bytes.iter().map(|b| ALNUM[*b as usize % ALNUM.len()] as char).collect();
    format!("ghp_{body}")
}

const SHELL_PID: u32 = 73311;

/// A release day: the agent's attempt to put a token in the checklist is refused; later a
/// shell script appends two lines with correct hashes that carry the token.
fn shell_appended_secret() -> Built {
    let token = fake_token();
    let mut s = Story::start("a9b8c7d6e5f4430291827364554637ab", "2026-12-06T01:02:03.004Z", 72001);
    s.add("2026-12-06T01:05:16.880Z", ItemFields { owner_refs: refs(&["release/1-4-0"]), ..item("Publish the 1.4.0 release") })
        .refused("2026-12-06T01:07:42.215Z", "add", "title", SecretKind::GithubToken)
        .change(
            "2026-12-06T01:09:30.650Z",
            "publish-the-1-4-0-release",
            ChangeSet {
                state: Some(ItemState::Waiting),
                waits_on: Some(Some("person:maintainer".into())),
                promise: Some(Some("a maintainer approves => publish 1.4.0".into())),
                ..ChangeSet::default()
            },
        );
    let by_abcd = s.chain.lines().len();
    // A shell script, not abcd: whole seconds, no session, its own pid; the hash is right.
    let shell = actor(None, SHELL_PID);
    let added = ItemAdded { item: item(&format!("Publish 1.4.0 with {token}")) };
    let added = ItemAdded { item: ItemFields { id: "publish-with-the-saved-token".into(), ..added.item } };
    s.chain.push(at("2026-12-06T02:13:07.000Z"), &shell, "checklist.item_added", serde_json::to_value(added).expect("plain data"));
    let changed = ItemChanged {
        id: "publish-the-1-4-0-release".into(),
        changes: ChangeSet { promise: Some(Some(format!("approved => publish with {token}"))), ..ChangeSet::default() },
    };
    s.chain.push(at("2026-12-06T02:13:08.000Z"), &shell, "checklist.item_changed", serde_json::to_value(changed).expect("plain data"));
    let files = Caches::new(&s.chain).projections_after(by_abcd).last_good_after(by_abcd).anchor_after(s.journal_id, by_abcd).done();
    let must_show = vec![
        "5  2026-12-06T02:13:07.000Z  pid 73311 (abcd/0.1.0)  checklist.item_added skipped by the fold: title carries a GitHub token (github_token)"
            .into(),
        // A skipped change never reads as done: its audit line says it was skipped.
        "6  2026-12-06T02:13:08.000Z  pid 73311 (abcd/0.1.0)  checklist.item_changed skipped by the fold: promise carries a GitHub token (github_token)"
            .into(),
        "refused a checklist add: field title carries a secret (github_token)".into(),
        "state.json: agrees with the fold at seq 4, behind the head by 2 (a reader folds what follows it)".into(),
        "anchor:  agrees (seq 4)".into(),
        "verdict: ok".into(),
    ];
    (s.chain.last_seq(), files, must_show)
}

/// Events in the checkpoint scenario: the store checkpoints at seq 1000, then 24 more.
const LONG_EVENTS: u64 = 1025;
const CHECKPOINT_SEQ: u64 = 1000;

/// A long unattended night: ten items kept current by a thousand changes, the host
/// compacting every 250 events; a checkpoint at seq 1000, the projections deleted.
fn checkpoint_plus_tail() -> Built {
    let start = at("2026-12-07T20:00:00.000Z");
    let time = |seq: u64| plus_ms(start, seq as i64 * 37_013);
    let title = |k: u64| format!("Keep shard {k} of the nightly build green");
    let journal_id = "0c1d2e3f4a5b4c6d7e8f90a1b2c3d4e5";
    let mut chain = Chain::open(journal_id, Scope::WorkingCopy { root: WORKING_COPY.into() }, start, 20000);
    while chain.next_seq() < LONG_EVENTS {
        let seq = chain.next_seq();
        let (kind, data) = match seq {
            1 => ("session.started", session_started("startup")),
            2..=11 => ("checklist.item_added", serde_json::to_value(ItemAdded { item: item(&title(seq - 1)) }).expect("plain data")),
            _ if seq.is_multiple_of(250) => ("compaction.recorded", json!({"session": SESSION, "trigger": "auto"})),
            _ if seq % 250 == 1 => ("session.started", session_started("compact")),
            _ => {
                let id = slug_from_title(&title(seq % 10 + 1));
                let changes = match (seq / 10) % 3 {
                    0 => ChangeSet {
                        state: Some(ItemState::Waiting),
                        waits_on: Some(Some(format!("pr:{}", 1000 + seq))),
                        next_look: Some(Some(plus_ms(time(seq), 2 * 3_600_000))),
                        ..ChangeSet::default()
                    },
                    1 => ChangeSet { next_look: Some(Some(plus_ms(time(seq), 4 * 3_600_000))), ..ChangeSet::default() },
                    _ => ChangeSet { state: Some(ItemState::Working), waits_on: Some(None), next_look: Some(None), ..ChangeSet::default() },
                };
                ("checklist.item_changed", serde_json::to_value(ItemChanged { id, changes }).expect("plain data"))
            }
        };
        chain.push(time(seq), &actor(Some(SESSION), 20000 + seq as u32), kind, data);
    }
    let n = chain.lines().len();
    let files = Caches::new(&chain).checkpoint_after(CHECKPOINT_SEQ as usize + 1).anchor_after(journal_id, n).done();
    let must_show = vec![
        format!("checkpoint <dir>/checkpoints/{CHECKPOINT_SEQ}.cbor: agrees with the fold at seq {CHECKPOINT_SEQ}"),
        format!("events:  {LONG_EVENTS} verified"),
        "verdict: ok".into(),
    ];
    (chain.last_seq(), files, must_show)
}

// ---------------------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------------------

/// A scenario's inputs copied to a temporary folder: the journal's folder and the home store.
struct Copy {
    tmp: tempfile::TempDir,
}

impl Copy {
    fn of(scenario_dir: &Path) -> Copy {
        let tmp = tempfile::tempdir().expect("temp dir");
        let copy = Copy { tmp };
        std::fs::create_dir(copy.dir()).expect("journal folder");
        std::fs::create_dir(copy.home()).expect("home folder");
        for (rel, bytes) in read_tree(scenario_dir) {
            if rel == README || rel.starts_with(&format!("{EXPECTED_DIR}/")) {
                continue;
            }
            let target = match rel.strip_prefix(&format!("{HOME_DIR}/")) {
                Some(rest) => copy.home().join(rest),
                None => copy.dir().join(&rel),
            };
            write_private(&target, &bytes);
        }
        copy
    }

    /// The journal's folder (shown as `<dir>`).
    fn dir(&self) -> PathBuf {
        self.tmp.path().join("wc")
    }

    /// `ABCD_HOME` (shown as `<home>`).
    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    fn journal(&self) -> PathBuf {
        self.dir().join(JOURNAL)
    }

    fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        read_tree(self.tmp.path())
    }

    fn abcd<S: AsRef<OsStr>>(&self, args: &[S]) -> Run {
        let out = Command::new(env!("CARGO_BIN_EXE_abcd"))
            .args(args)
            .env("ABCD_HOME", self.home())
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .output()
            .expect("abcd runs");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: self.normalize(&String::from_utf8(out.stdout).expect("stdout is UTF-8")),
            stderr: self.normalize(&String::from_utf8_lossy(&out.stderr)),
        }
    }

    /// Run-dependent text made stable: the temporary folders' paths.
    fn normalize(&self, text: &str) -> String {
        let out = text.replace(&self.dir().display().to_string(), "<dir>").replace(&self.home().display().to_string(), "<home>");
        let tmp = self.tmp.path().display().to_string();
        assert!(!out.contains(&tmp), "the output names the temporary folder in a way the test does not normalize:\n{out}");
        out
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the three replays of a scenario on a fresh copy; checks exit codes, stderr, and
/// that nothing was written; returns the normalized expected files' contents.
fn replay_outputs(scenario: &Scenario) -> BTreeMap<&'static str, String> {
    let copy = Copy::of(&replay_dir().join(scenario.name));
    let before = copy.snapshot();
    let journal = copy.journal();
    let name = scenario.name;
    let text = copy.abcd(&[OsStr::new("replay"), OsStr::new("--journal"), journal.as_os_str()]);
    let json = copy.abcd(&[OsStr::new("replay"), OsStr::new("--journal"), journal.as_os_str(), OsStr::new("--json")]);
    let seq = scenario.at.to_string();
    let at = copy.abcd(&[
        OsStr::new("replay"),
        OsStr::new("--journal"),
        journal.as_os_str(),
        OsStr::new("--at"),
        OsStr::new(&seq),
        OsStr::new("--json"),
    ]);
    for (what, run, want) in
        [("replay", &text, scenario.exit), ("replay --json", &json, scenario.exit), ("replay --at", &at, scenario.at_exit)]
    {
        assert_eq!(run.code, want, "{name}: `abcd {what}` exit code\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
        assert!(run.stderr.is_empty(), "{name}: `abcd {what}` wrote to stderr:\n{}", run.stderr);
    }
    // Replay writes nothing, but for one thing: damage it found is marked in the head
    // anchor (its tag, nothing else), under the journal lock, whose file it may create.
    let after = copy.snapshot();
    for (path, bytes) in &after {
        match before.get(path) {
            Some(old) if old == bytes => {}
            Some(old) if path.contains("anchors/") && old.starts_with(b"abcd-anchor/v1 ") && bytes.starts_with(b"abcd-damage/v1 ") => {
                assert_eq!(old[15..old.len() - 18], bytes[15..bytes.len() - 18], "{name}: the mark changes the anchor's tag only");
            }
            None if path.ends_with("journal.jsonl.lock") && bytes.is_empty() => {}
            _ => panic!("{name}: replay changed or added {path}"),
        }
    }
    assert!(before.keys().all(|p| after.contains_key(p)), "{name}: replay removed files in the journal's folder or the home store");

    let mut out = BTreeMap::new();
    out.insert("audit.txt", text.stdout);
    out.insert("audit.ndjson", json.stdout);
    let mut seen = Vec::new();
    for line in at.stdout.lines() {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: `--at` printed a line that is not JSON ({e}): {line}"));
        assert_eq!(v["type"], "projection", "{name}: {line}");
        assert_eq!(v["at"], scenario.at, "{name}: {line}");
        let pname = v["name"].as_str().expect("a projection names itself").to_string();
        let (_, file) = PROJECTIONS.iter().find(|(n, _)| *n == pname).unwrap_or_else(|| panic!("{name}: unknown projection {pname}"));
        out.insert(*file, serde_json::to_string_pretty(&v["content"]).expect("JSON prints") + "\n");
        seen.push(pname);
    }
    assert_eq!(seen, PROJECTIONS.map(|(n, _)| n.to_string()), "{name}: `--at` prints every projection once, in order");
    out
}

// ---------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------

/// Every file under `root`, by `/`-separated relative path.
fn read_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries {
            let path = entry.expect("a readable folder").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("under root").to_str().expect("UTF-8 names").to_string();
                out.insert(rel, std::fs::read(&path).expect("readable file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Writes a file the way abcd's trust rule accepts it: mode 0600, folders 0700.
fn write_private(path: &Path, bytes: &[u8]) {
    let parent = path.parent().expect("a file in a folder");
    std::fs::create_dir_all(parent).expect("folder created");
    std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o700)).expect("chmod folder");
    std::fs::write(path, bytes).expect("file written");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod file");
}

/// A short, diff-like account of where two texts part.
fn diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let Some(first) = (0..e.len().max(a.len())).find(|&i| e.get(i) != a.get(i)) else {
        return "the lines are the same; the texts differ in line endings or the final newline".into();
    };
    let mut out = format!("first difference at line {} (expected {} lines, got {}):\n", first + 1, e.len(), a.len());
    for line in &e[first.saturating_sub(3)..first] {
        out += &format!("  {line}\n");
    }
    for line in e.iter().skip(first).take(8) {
        out += &format!("- {line}\n");
    }
    for line in a.iter().skip(first).take(8) {
        out += &format!("+ {line}\n");
    }
    out
}

// ---------------------------------------------------------------------------------------
// Regeneration and the checks
// ---------------------------------------------------------------------------------------

fn regenerating() -> bool {
    std::env::var(REGENERATE_VAR).is_ok_and(|v| v == "1")
}

/// With `ABCD_REGENERATE_REPLAYS=1`, rewrites every scenario once (before any check runs):
/// the inputs from the generator, `expected/` from the binary. README files are kept.
fn regenerate_once() {
    static ONCE: Once = Once::new();
    if !regenerating() {
        return;
    }
    ONCE.call_once(|| {
        for &(name, _, _) in SCENARIOS {
            let scenario = build(name);
            let dir = replay_dir().join(name);
            eprintln!("{REGENERATE_VAR}=1: rewriting {}", dir.display());
            std::fs::create_dir_all(&dir).expect("scenario folder");
            for entry in std::fs::read_dir(&dir).expect("scenario folder readable") {
                let path = entry.expect("entry").path();
                if path.file_name() == Some(OsStr::new(README)) {
                    continue;
                }
                if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) }.expect("old file removed");
            }
            for (rel, bytes) in &scenario.inputs {
                write_public(&dir.join(rel), bytes);
            }
            for (file, text) in replay_outputs(&scenario) {
                write_public(&dir.join(EXPECTED_DIR).join(file), text.as_bytes());
            }
        }
    });
}

fn write_public(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("a file in a folder")).expect("folder created");
    std::fs::write(path, bytes).expect("file written");
}

/// The whole check of one scenario (see the top of this file).
fn check(name: &str) {
    regenerate_once();
    let scenario = build(name);
    let dir = replay_dir().join(name);

    let on_disk: BTreeMap<String, Vec<u8>> =
        read_tree(&dir).into_iter().filter(|(rel, _)| rel != README && !rel.starts_with(&format!("{EXPECTED_DIR}/"))).collect();
    let missing: Vec<&String> = scenario.inputs.keys().filter(|k| !on_disk.contains_key(*k)).collect();
    let extra: Vec<&String> = on_disk.keys().filter(|k| !scenario.inputs.contains_key(*k)).collect();
    assert!(missing.is_empty() && extra.is_empty(), "replay/{name}: inputs missing {missing:?}, unexpected {extra:?}; {REGENERATE_HINT}");
    for (rel, bytes) in &scenario.inputs {
        assert!(on_disk[rel] == *bytes, "replay/{name}/{rel} differs from what the generator builds today; {REGENERATE_HINT}");
    }

    let actual = replay_outputs(&scenario);
    let mut failures = Vec::new();
    for file in EXPECTED_FILES {
        let path = dir.join(EXPECTED_DIR).join(file);
        let Ok(expected) = std::fs::read_to_string(&path) else {
            failures.push(format!("replay/{name}/{EXPECTED_DIR}/{file} is missing"));
            continue;
        };
        if expected != actual[file] {
            failures
                .push(format!("replay/{name}/{EXPECTED_DIR}/{file} differs from the replay's output; {}", diff(&expected, &actual[file])));
        }
    }
    assert!(failures.is_empty(), "{}\n({REGENERATE_HINT})", failures.join("\n\n"));

    for fact in &scenario.must_show {
        assert!(actual["audit.txt"].contains(fact.as_str()), "replay/{name}: the audit must show `{fact}`:\n{}", actual["audit.txt"]);
    }
}

#[test]
fn golden_day_of_checklist_edits() {
    check("day-of-checklist-edits");
}

#[test]
fn golden_compaction_mid_session() {
    check("compaction-mid-session");
}

#[test]
fn golden_torn_tail_after_crash() {
    check("torn-tail-after-crash");
}

#[test]
fn golden_corruption_before_repair() {
    check("corruption-before-repair");
}

#[test]
fn golden_corruption_repaired() {
    check("corruption-repaired");
}

#[test]
fn golden_shell_appended_secret() {
    check("shell-appended-secret");
}

#[test]
fn golden_checkpoint_plus_tail() {
    check("checkpoint-plus-tail");
}

#[test]
fn golden_context_receipts() {
    check("context-receipts");
}

/// Every folder in `replay/` is a scenario, every scenario has its README and exactly the
/// expected files, and replay/README.md lists each with its exit codes.
#[test]
fn every_scenario_is_complete_and_listed() {
    regenerate_once();
    let root = replay_dir();
    let folders: Vec<String> = std::fs::read_dir(&root)
        .expect("replay/ exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().expect("named").to_string_lossy().into_owned())
        .collect();
    for folder in &folders {
        assert!(SCENARIOS.iter().any(|s| s.0 == folder), "replay/{folder} is not a scenario of tests/journal/golden_replays.rs");
    }
    let index = std::fs::read_to_string(root.join(README)).expect("replay/README.md exists");
    for &(name, exit, at_exit) in SCENARIOS {
        let dir = root.join(name);
        let readme = std::fs::read_to_string(dir.join(README)).unwrap_or_default();
        assert!(readme.trim().len() > 100, "replay/{name}/README.md is missing or empty: write the story and what the audit must show");
        assert!(dir.join(JOURNAL).is_file(), "replay/{name}/{JOURNAL} is missing; {REGENERATE_HINT}");
        let expected: Vec<String> = read_tree(&dir.join(EXPECTED_DIR)).into_keys().collect();
        let mut want: Vec<String> = EXPECTED_FILES.iter().map(|f| f.to_string()).collect();
        want.sort();
        assert_eq!(expected, want, "replay/{name}/{EXPECTED_DIR} must hold exactly these files; {REGENERATE_HINT}");
        let row = index.lines().find(|l| l.starts_with("| ") && l.contains(&format!("`{name}`")));
        let row = row.unwrap_or_else(|| panic!("replay/README.md has no table row for `{name}`"));
        assert!(
            row.ends_with(&format!("| {exit} | {at_exit} |")),
            "replay/README.md: the row of `{name}` must end `| {exit} | {at_exit} |`: {row}"
        );
    }
}

/// The token is in the journal (the scenario tests something) and nowhere else: no
/// eight characters of it in any other file under replay/, expected files included.
#[test]
fn no_part_of_the_fake_token_leaves_the_journal() {
    regenerate_once();
    let token = fake_token();
    assert_eq!(token.len(), 40);
    assert_eq!(secrets::scan(&token), Some(SecretKind::GithubToken), "the fake token must look real to the scanner");
    let journal = std::fs::read_to_string(replay_dir().join("shell-appended-secret").join(JOURNAL)).expect("the journal exists");
    assert_eq!(journal.matches(&token).count(), 2, "both shell-appended lines carry the token");
    let windows: Vec<&str> = (0..=token.len() - 8).map(|i| &token[i..i + 8]).collect();
    for (rel, bytes) in read_tree(&replay_dir()) {
        if rel == format!("shell-appended-secret/{JOURNAL}") {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        for w in &windows {
            assert!(!text.contains(w), "replay/{rel} holds 8 characters of the fake token (at `{}`…)", &w[..2]);
        }
    }
}

/// The checkpoint is the fold at its seq, and a reader that starts from it (the store,
/// with no projection on disk) reaches the same state as the replay from genesis.
#[test]
fn the_replay_agrees_with_the_checkpoint() {
    regenerate_once();
    let copy = Copy::of(&replay_dir().join("checkpoint-plus-tail"));
    let cp_path = copy.dir().join("checkpoints").join(format!("{CHECKPOINT_SEQ}.cbor"));
    let cp = abcd::store::checkpoint::load(&RealDisk, &cp_path).expect("readable").expect("a valid checkpoint");
    assert_eq!(cp.seq, CHECKPOINT_SEQ);
    let state_at = |seq: u64| -> Value {
        let run = copy.abcd(&[
            OsStr::new("replay"),
            OsStr::new("--journal"),
            copy.journal().as_os_str(),
            OsStr::new("--at"),
            OsStr::new(&seq.to_string()),
            OsStr::new("--projection"),
            OsStr::new("state"),
            OsStr::new("--json"),
        ]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        let v: Value = serde_json::from_str(run.stdout.trim()).expect("one JSON line");
        v["content"]["state"].clone()
    };
    assert_eq!(state_at(CHECKPOINT_SEQ), serde_json::to_value(&cp.state).expect("state serializes"), "checkpoint vs replay at its seq");

    let store = Store::new(Journal::new(RealDisk::shared(), JournalPaths::beside(&copy.journal()), None));
    let current = store.current_state().expect("the store reads the journal");
    assert_eq!(current.base, StateBase::Checkpoint { seq: CHECKPOINT_SEQ }, "the reader starts from the checkpoint");
    assert_eq!(current.head.seq, LONG_EVENTS - 1);
    assert_eq!(state_at(LONG_EVENTS - 1), serde_json::to_value(&current.state).expect("state serializes"), "checkpoint + tail vs replay");
}

/// The repaired scenario is what `abcd journal repair` makes of the damaged one: the same
/// lines before and after the damaged one, the same `journal.repaired` gap record (but the quarantine file's
/// time stamp), the same bytes in quarantine.
#[test]
fn the_repaired_journal_is_what_abcd_journal_repair_writes() {
    regenerate_once();
    let damaged = Copy::of(&replay_dir().join("corruption-before-repair"));
    let run = damaged.abcd(&[OsStr::new("journal"), OsStr::new("repair"), OsStr::new("--journal"), damaged.journal().as_os_str()]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let ours = std::fs::read(damaged.journal()).expect("repaired journal");
    let golden = std::fs::read(replay_dir().join("corruption-repaired").join(JOURNAL)).expect("golden journal");
    let lines = |b: &[u8]| -> Vec<Vec<u8>> { b.split_inclusive(|&c| c == b'\n').map(<[u8]>::to_vec).collect() };
    let (ours, golden) = (lines(&ours), lines(&golden));
    assert_eq!(ours.len() + 1, golden.len(), "repair keeps every line (the golden has the redone change after them)");
    assert_eq!(ours[..DAMAGED_SEQ], golden[..DAMAGED_SEQ], "the lines before the damage are kept as they are");
    assert_eq!(ours[DAMAGED_SEQ + 1..], golden[DAMAGED_SEQ + 1..ours.len()], "the intact lines after the damage are kept as they are");
    let data = |line: &[u8]| -> Value {
        let event = abcd::journal::format::verify_line(line).expect("the repair event verifies");
        assert_eq!(event.kind, "journal.repaired");
        let mut data = event.data;
        let q = data["quarantine_file"].as_str().expect("named").to_string();
        let stamp =
            q.strip_prefix(&format!("corrupt-{DAMAGED_SEQ}-")).and_then(|r| r.strip_suffix(".bin")).expect("corrupt-<seq>-<stamp>.bin");
        assert_eq!(stamp.len(), "20261205T173012408Z".len(), "{q}");
        data["quarantine_file"] = json!(q.replace(stamp, "<stamp>"));
        data
    };
    assert_eq!(data(&ours[DAMAGED_SEQ]), data(&golden[DAMAGED_SEQ]), "journal.repaired data");
    let quarantined = read_tree(&damaged.dir().join("quarantine"));
    let golden_q = read_tree(&replay_dir().join("corruption-repaired").join("quarantine"));
    assert_eq!(quarantined.values().collect::<Vec<_>>(), golden_q.values().collect::<Vec<_>>(), "the quarantined bytes");
}
