//! Projection files: folded state rendered as JSON that names the journal line it
//! reflects and carries a digest of its bytes. A projection that is unreadable, fails
//! its digest (a hand edit, say) or names another line is not trusted; the reader
//! re-folds from the journal.
//!
//! The digest: BLAKE3 in derive-key mode (one context per file kind) over the file's
//! bytes exactly as written, with the 64 hex digits of the top-level `digest` value read
//! as `0`s. That value is found as the first `\n  "digest": "` in the file: the key as
//! the pretty printer writes it at the top level (inside a JSON string a newline and a
//! quote are always escaped, and nested keys are indented further). A reader hashes the
//! bytes it read instead of serializing what it parsed a second time.
//!
//! - `state.json`: the whole folded state (a readable checkpoint; the read path's base).
//! - `checklist.json` (`abcd/checklist/v1`) and `checklist.last-good.json`: the checklist
//!   view that hooks and people read (SPEC §3).
//! - `session-context.json` (`abcd/session-context/v1`): the checklist as the session-start
//!   hook injects it, rendered once when the checklist is written, so the hook's cost does
//!   not grow with the plan. Its text is scanned and checked again on every read.
//! - `away.json` (`abcd/away/v1`), beside a repository journal: the away record (SPEC §6)
//!   for people and other tools; abcd itself reads the record from `state.json` or the
//!   journal, never from this file.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fold::checklist::{ChecklistState, Item};
use crate::fold::{FoldedState, Skipped};
use crate::journal::format::Hash;
use crate::journal::scan::Head;
use crate::journal::storage::{Storage, read_small};

pub const STATE_FILE: &str = "state.json";
/// v5: the digest covers the file's bytes (v4's covered the state re-serialized).
pub const STATE_SCHEMA: &str = "abcd/state/v5";
pub const CHECKLIST_FILE: &str = "checklist.json";
pub const LAST_GOOD_FILE: &str = "checklist.last-good.json";
pub const CHECKLIST_SCHEMA: &str = "abcd/checklist/v1";
/// The largest projection file read.
pub const MAX_PROJECTION_BYTES: u64 = 16 << 20;
const CHECKLIST_DIGEST_CONTEXT: &str = "abcd projection v1 checklist digest";
pub const SESSION_CONTEXT_FILE: &str = "session-context.json";
pub const SESSION_CONTEXT_SCHEMA: &str = "abcd/session-context/v1";
const SESSION_CONTEXT_DIGEST_CONTEXT: &str = "abcd projection v1 session context digest";
/// The largest `session-context.json` read: its text is at most the hook's cap in
/// characters, each at most 4 bytes in UTF-8 and 6 as a JSON escape, with room for the rest.
pub const MAX_SESSION_CONTEXT_BYTES: u64 = 64 << 10;
pub const AWAY_FILE: &str = "away.json";
pub const AWAY_SCHEMA: &str = "abcd/away/v1";
const AWAY_DIGEST_CONTEXT: &str = "abcd projection v1 away digest";
const STATE_DIGEST_CONTEXT: &str = "abcd projection v1 state digest";
/// The prompt hook's state: `state.json`'s state with only the items that hook reads
/// ([`prompt_reads`]), so its read does not grow with the plan.
pub const PROMPT_STATE_FILE: &str = "prompt-state.json";
/// The prompt state's schema. Its meaning is more than its shape: which items it keeps
/// (`prompt_reads`, the promise grammar) and how the owed part is summed up (`fold::owed`,
/// `Owed::key` and `order`, the part digest): a change to any of them changes this name,
/// so a file another build wrote is not believed.
pub const PROMPT_STATE_SCHEMA: &str = "abcd/prompt-state/v2";
const PROMPT_STATE_DIGEST_CONTEXT: &str = "abcd projection v1 prompt state digest";
/// The top-level `digest` key as `pretty` writes it, up to its value's first digit.
const DIGEST_KEY: &[u8] = b"\n  \"digest\": \"";
/// A digest's hex digits.
const DIGEST_HEX_LEN: usize = 64;
/// The digest value a file is rendered with before it is sealed.
pub const UNSEALED: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const _: () = assert!(UNSEALED.len() == DIGEST_HEX_LEN);

/// Where the digest's digits start in `bytes`, and the digest of `bytes` with those digits
/// read as `0`s. `None` when no top-level digest of the right length is in place.
fn digest_of(context: &str, bytes: &[u8]) -> Option<(usize, String)> {
    let at = crate::byte_search::find_sub(bytes, DIGEST_KEY)? + DIGEST_KEY.len();
    if bytes.get(at + DIGEST_HEX_LEN) != Some(&b'"') {
        return None;
    }
    let mut hasher = blake3::Hasher::new_derive_key(context);
    hasher.update(&bytes[..at]).update(UNSEALED.as_bytes()).update(&bytes[at + DIGEST_HEX_LEN..]);
    Some((at, hasher.finalize().to_hex().to_string()))
}

/// `value` (whose digest is [`UNSEALED`]) rendered, with its digest written in: the one way
/// abcd seals a file it reads back (the projections, and the hooks' kept away record).
pub fn render_sealed<T: Serialize>(context: &str, value: &T) -> Vec<u8> {
    seal(context, value).0
}

/// The digest `value` (whose digest is [`UNSEALED`]) gets when rendered.
fn digest_when_rendered<T: Serialize>(context: &str, value: &T) -> String {
    seal(context, value).1
}

/// `value` rendered and sealed, and the digest written into it: the file is hashed once.
fn seal<T: Serialize>(context: &str, value: &T) -> (Vec<u8>, String) {
    let mut bytes = pretty(value);
    let (at, digest) = digest_of(context, &bytes).expect("the pretty printer writes the top-level digest key");
    assert_eq!(&bytes[at..at + DIGEST_HEX_LEN], UNSEALED.as_bytes(), "rendered unsealed");
    bytes[at..at + DIGEST_HEX_LEN].copy_from_slice(digest.as_bytes());
    (bytes, digest)
}

/// Whether `bytes` carry their own digest, and it is `parsed`, the digest value read
/// from them.
pub fn digest_holds(context: &str, bytes: &[u8], parsed: &str) -> bool {
    digest_of(context, bytes).is_some_and(|(at, digest)| digest == parsed && &bytes[at..at + DIGEST_HEX_LEN] == parsed.as_bytes())
}

/// The away record as `away.json` carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwayFile {
    pub schema: String,
    pub journal: JournalRef,
    pub digest: String,
    #[serde(flatten)]
    pub away: crate::away::AwayState,
    /// Away and decision events the fold skipped, named by seq, field and rule or kind.
    pub skipped: Vec<Skipped>,
}

impl AwayFile {
    pub fn from_state(state: &FoldedState, head: Head) -> AwayFile {
        let skipped =
            state.journal.skipped.iter().filter(|s| s.kind.starts_with("away.") || s.kind.starts_with("decision.")).cloned().collect();
        let mut file =
            AwayFile { schema: AWAY_SCHEMA.into(), journal: head.into(), digest: UNSEALED.into(), away: state.away.clone(), skipped };
        file.digest = digest_when_rendered(AWAY_DIGEST_CONTEXT, &file);
        file
    }

    pub fn render(&self) -> Vec<u8> {
        pretty(self)
    }
}

/// The journal line a projection reflects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalRef {
    pub seq: u64,
    pub hash: Hash,
    pub offset: u64,
    pub end: u64,
}

impl From<Head> for JournalRef {
    fn from(h: Head) -> Self {
        JournalRef { seq: h.seq, hash: h.hash, offset: h.offset, end: h.end }
    }
}

impl From<JournalRef> for Head {
    fn from(j: JournalRef) -> Self {
        Head { seq: j.seq, hash: j.hash, offset: j.offset, end: j.end }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateFile {
    schema: String,
    journal: JournalRef,
    digest: String,
    state: FoldedState,
}

/// `prompt-state.json` as read: the state with only the items [`prompt_reads`], and the
/// checklist's part of the owed set, summed up from every item when it was written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptStateFile {
    schema: String,
    journal: JournalRef,
    digest: String,
    state: FoldedState,
    owed: crate::fold::owed::ChecklistOwed,
}

pub fn render_state(state: &FoldedState, head: Head) -> Vec<u8> {
    /// `StateFile`, borrowing the state: it is written, not kept.
    #[derive(Serialize)]
    struct StateFileOut<'a> {
        schema: &'a str,
        journal: JournalRef,
        digest: &'a str,
        state: &'a FoldedState,
    }
    render_sealed(STATE_DIGEST_CONTEXT, &StateFileOut { schema: STATE_SCHEMA, journal: head.into(), digest: UNSEALED, state })
}

/// Whether the prompt hook reads `item`: a promise that may still fire (the promise
/// check, by its one rule `promise::armed_promise`: a free-text promise never fires), or
/// refs it names (the behind check). What else the hook reads of the plan is its last
/// write's time; a re-injection renders from `checklist.json`.
pub fn prompt_reads(item: &Item) -> bool {
    crate::checklist::promise::armed_promise(item).is_some() || !item.fields.owner_refs.is_empty()
}

/// `prompt-state.json` for `state` at `head`: `state.json`'s file with only the items
/// [`prompt_reads`], and the checklist's part of the owed set as of `as_of`, from every item.
pub fn render_prompt_state(state: &FoldedState, head: Head, as_of: jiff::Timestamp) -> Vec<u8> {
    #[derive(Serialize)]
    struct PromptStateOut<'a> {
        schema: &'a str,
        journal: JournalRef,
        digest: &'a str,
        state: StateOut<'a>,
        owed: crate::fold::owed::ChecklistOwed,
    }
    /// `FoldedState` as it serializes, with the checklist's items filtered: the rest is
    /// borrowed, not cloned.
    #[derive(Serialize)]
    struct StateOut<'a> {
        journal: &'a crate::fold::JournalSummary,
        checklist: ChecklistOut<'a>,
        work: &'a crate::fold::WorkState,
        away: &'a crate::away::AwayState,
        sessions: &'a std::collections::BTreeMap<String, crate::fold::SessionSlot>,
        ledger: &'a crate::ledger::LedgerState,
        #[serde(skip_serializing_if = "crate::phased::LoopRecords::is_empty")]
        loops: &'a crate::phased::LoopRecords,
        #[serde(skip_serializing_if = "crate::fold::context::ContextState::is_empty")]
        context: &'a crate::fold::context::ContextState,
    }
    #[derive(Serialize)]
    struct ChecklistOut<'a> {
        items: Vec<&'a Item>,
        updated_at: Option<jiff::Timestamp>,
        updated_by: &'a Option<String>,
        refusals_total: u64,
        last_refusal: &'a Option<crate::fold::checklist::RefusalRecord>,
        #[serde(skip_serializing_if = "is_zero")]
        next_number: u64,
        #[serde(skip_serializing_if = "is_zero")]
        retired_total: u64,
    }
    fn is_zero(n: &u64) -> bool {
        *n == 0
    }
    // Destructured whole, so a field added to either state is a compile error here, not a
    // field this file silently leaves out.
    let FoldedState { journal, checklist, work, away, sessions, ledger, loops, context } = state;
    let ChecklistState { items, updated_at, updated_by, refusals_total, last_refusal, next_number, retired_total } = checklist;
    let checklist = ChecklistOut {
        items: items.iter().filter(|i| prompt_reads(i)).collect(),
        updated_at: *updated_at,
        updated_by,
        refusals_total: *refusals_total,
        last_refusal,
        next_number: *next_number,
        retired_total: *retired_total,
    };
    let owed = crate::fold::owed::ChecklistOwed::of(items, as_of);
    let state = StateOut { journal, checklist, work, away, sessions, ledger, loops, context };
    render_sealed(
        PROMPT_STATE_DIGEST_CONTEXT,
        &PromptStateOut { schema: PROMPT_STATE_SCHEMA, journal: head.into(), digest: UNSEALED, state, owed },
    )
}

/// The prompt state's state, the checklist's owed part and the line it names, on the
/// checks [`load_state_any`] makes, and every item one [`prompt_reads`]: a file holding
/// others is not one abcd wrote.
pub fn load_prompt_state(storage: &dyn Storage, path: &Path) -> Option<(FoldedState, crate::fold::owed::ChecklistOwed, Head)> {
    let bytes = read_sealed(storage, path)?;
    let file: PromptStateFile = serde_json::from_slice(&bytes).ok()?;
    let intact = sealed_state_holds(
        &bytes,
        &file.schema,
        PROMPT_STATE_SCHEMA,
        PROMPT_STATE_DIGEST_CONTEXT,
        &file.digest,
        &file.state,
        &file.journal,
    ) && file.state.checklist.items.iter().all(prompt_reads);
    intact.then_some((file.state, file.owed, file.journal.into()))
}

/// A `prompt-state.json` forged from `file`, sealed as abcd seals one (for tests, as
/// [`seal_state_json`]).
pub fn seal_prompt_state_json(file: &serde_json::Value) -> Vec<u8> {
    let mut file = file.clone();
    file["digest"] = serde_json::json!(UNSEALED);
    render_sealed(PROMPT_STATE_DIGEST_CONTEXT, &file)
}

/// A `state.json` forged from `file` (a parsed `state.json` with any content): rendered
/// and sealed as abcd seals one. For tests that prove a reader checks more than the
/// digest, which has no key.
pub fn seal_state_json(file: &serde_json::Value) -> Vec<u8> {
    let mut file = file.clone();
    file["digest"] = serde_json::json!(UNSEALED);
    render_sealed(STATE_DIGEST_CONTEXT, &file)
}

fn pretty<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).expect("plain data serializes");
    out.push(b'\n');
    out
}

/// The state file's state and the line it names, if it is a file this user alone can
/// write (SPEC §1), parses, its digest holds, and what it would show passes the fold's
/// checks again (`fold::cached_state_passes`: the digest has no key, so it is no proof
/// abcd wrote it).
pub fn load_state_any(storage: &dyn Storage, path: &Path) -> Option<(FoldedState, Head)> {
    load_sealed_state(storage, path, STATE_SCHEMA, STATE_DIGEST_CONTEXT)
}

/// A file shaped as `state.json` is, of `schema`, sealed in `digest_context`: see
/// [`load_state_any`].
fn load_sealed_state(storage: &dyn Storage, path: &Path, schema: &str, digest_context: &str) -> Option<(FoldedState, Head)> {
    let bytes = read_sealed(storage, path)?;
    let file: StateFile = serde_json::from_slice(&bytes).ok()?;
    let intact = sealed_state_holds(&bytes, &file.schema, schema, digest_context, &file.digest, &file.state, &file.journal);
    intact.then_some((file.state, file.journal.into()))
}

/// Whether a reader takes a sealed state file with these facts at all: one this user alone
/// can write, within the projections' read cap. The appenders' lag bound asks the same
/// (`Store::may_trail_by`), so a file no reader takes earns no lag.
pub fn sealed_file_taken(facts: &crate::journal::storage::FileFacts) -> bool {
    crate::journal::storage::untrusted_reason(facts).is_none() && facts.len <= MAX_PROJECTION_BYTES
}

/// A sealed state file's bytes, when [`sealed_file_taken`] takes it.
fn read_sealed(storage: &dyn Storage, path: &Path) -> Option<Vec<u8>> {
    let facts = storage.facts(path).ok()??;
    if !sealed_file_taken(&facts) {
        return None;
    }
    read_small(storage, path, MAX_PROJECTION_BYTES).ok()
}

/// The checks of a sealed state file as parsed from `bytes`: its schema, its digest, the
/// line it names agreeing with its state, and that state passing the fold's checks again.
fn sealed_state_holds(
    bytes: &[u8],
    file_schema: &str,
    schema: &str,
    digest_context: &str,
    digest: &str,
    state: &FoldedState,
    j: &JournalRef,
) -> bool {
    file_schema == schema
        && digest_holds(digest_context, bytes, digest)
        && state.journal.events == j.seq + 1
        && state.journal.last_hash == Some(j.hash)
        && crate::fold::cached_state_passes(state)
}

/// Whether an event of `kind` can change what `checklist.json` shows: its items come
/// from `checklist.*` events and its skipped list names only `checklist.*` events, so no
/// other kind can.
pub fn changes_checklist_view(kind: &str) -> bool {
    kind.starts_with("checklist.")
}

/// The checklist events the fold skipped: what a checklist view names, after its items.
pub fn checklist_skipped(state: &FoldedState) -> Vec<Skipped> {
    state.journal.skipped.iter().filter(|s| s.kind.starts_with("checklist.")).cloned().collect()
}

/// The checklist as `checklist.json` and last-good carry it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChecklistFile {
    pub schema: String,
    // Read like the items' times (`utc_time`): no general RFC 3339 parser for a hook's read.
    #[serde(default, deserialize_with = "crate::utc_time::deserialize_option")]
    pub updated_at: Option<jiff::Timestamp>,
    pub updated_by: Option<String>,
    pub journal: JournalRef,
    pub digest: String,
    pub items: Vec<Item>,
    /// Checklist events the fold skipped, named by seq, field and rule or kind.
    pub skipped: Vec<Skipped>,
    /// Closed items retired from `items` (`ChecklistState::retired_total`); not written
    /// while zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retired_total: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ChecklistFile {
    pub fn from_state(state: &FoldedState, head: Head) -> ChecklistFile {
        let c = &state.checklist;
        let skipped = checklist_skipped(state);
        let mut file = ChecklistFile {
            schema: CHECKLIST_SCHEMA.into(),
            updated_at: c.updated_at,
            updated_by: c.updated_by.clone(),
            journal: head.into(),
            digest: UNSEALED.into(),
            items: c.items.clone(),
            skipped,
            retired_total: c.retired_total,
        };
        file.digest = digest_when_rendered(CHECKLIST_DIGEST_CONTEXT, &file);
        file
    }

    /// `from_state(state, head).render()`, rendered once.
    pub fn render_from_state(state: &FoldedState, head: Head) -> Vec<u8> {
        let c = &state.checklist;
        let skipped = checklist_skipped(state);
        /// `ChecklistFile`, borrowing the state's items.
        #[derive(Serialize)]
        struct ChecklistFileOut<'a> {
            schema: &'a str,
            updated_at: &'a Option<jiff::Timestamp>,
            updated_by: &'a Option<String>,
            journal: JournalRef,
            digest: &'a str,
            items: &'a [Item],
            skipped: Vec<Skipped>,
            #[serde(skip_serializing_if = "is_zero")]
            retired_total: u64,
        }
        let out = ChecklistFileOut {
            schema: CHECKLIST_SCHEMA,
            updated_at: &c.updated_at,
            updated_by: &c.updated_by,
            journal: head.into(),
            digest: UNSEALED,
            items: &c.items,
            skipped,
            retired_total: c.retired_total,
        };
        render_sealed(CHECKLIST_DIGEST_CONTEXT, &out)
    }

    /// The checklist state this file shows.
    pub fn to_state(&self) -> ChecklistState {
        ChecklistState {
            items: self.items.clone(),
            updated_at: self.updated_at,
            updated_by: self.updated_by.clone(),
            retired_total: self.retired_total,
            ..Default::default()
        }
    }

    pub fn render(&self) -> Vec<u8> {
        pretty(self)
    }
}

/// The session-start hook's checklist text as `session-context.json` carries it: what
/// `render::render` made of the checklist at `journal` for `budget` characters at
/// `rendered_at`. The render reads the clock only to tell which next looks are due, so the
/// text holds from `rendered_at` until `valid_until`, the earliest next look then still
/// ahead (none: no look ahead, it holds until the checklist changes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionContextFile {
    pub schema: String,
    pub journal: JournalRef,
    pub digest: String,
    pub budget: usize,
    #[serde(deserialize_with = "crate::utc_time::deserialize")]
    pub rendered_at: jiff::Timestamp,
    #[serde(deserialize_with = "crate::utc_time::deserialize_option")]
    pub valid_until: Option<jiff::Timestamp>,
    /// Whether an item held a promise that may fire: the session-start hook reads the state
    /// to check promises only then. A file without it was written before promises fired,
    /// so it reads as armed and the hook checks.
    #[serde(default = "armed_unless_said")]
    pub promises_armed: bool,
    /// How many items are open, by state, for the status line (`abcd status-line`), which
    /// reads this small file instead of the whole checklist. A file without it was written
    /// before the status line read it, and the status line then reads the checklist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open: Option<OpenCounts>,
    pub text: String,
}

/// How many of the checklist's items are working and waiting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenCounts {
    pub working: u64,
    pub waiting: u64,
}

impl OpenCounts {
    pub fn of(items: &[Item]) -> OpenCounts {
        let count = |state| items.iter().filter(|i| i.fields.state == state).count() as u64;
        OpenCounts {
            working: count(crate::event::checklist::ItemState::Working),
            waiting: count(crate::event::checklist::ItemState::Waiting),
        }
    }
}

fn armed_unless_said() -> bool {
    true
}

impl SessionContextFile {
    /// The file for `text`, rendered from `items` at `rendered_at` for `budget` characters.
    pub fn new(head: Head, items: &[Item], budget: usize, rendered_at: jiff::Timestamp, text: String) -> SessionContextFile {
        let mut file = SessionContextFile {
            schema: SESSION_CONTEXT_SCHEMA.into(),
            journal: head.into(),
            digest: UNSEALED.into(),
            budget,
            rendered_at,
            valid_until: next_look_after(items, rendered_at),
            promises_armed: crate::checklist::promise::any_armed(items),
            open: Some(OpenCounts::of(items)),
            text,
        };
        file.digest = digest_when_rendered(SESSION_CONTEXT_DIGEST_CONTEXT, &file);
        file
    }

    pub fn render(&self) -> Vec<u8> {
        pretty(self)
    }

    /// Whether the text is what the hook would render for `budget` characters at `now`.
    pub fn holds_for(&self, budget: usize, now: jiff::Timestamp) -> bool {
        self.budget == budget && self.rendered_at <= now && self.valid_until.is_none_or(|until| now < until)
    }
}

/// The earliest next look of any item that is after `now`: when one falls due its line
/// changes, and the order, and so what fits the budget, may change with it (a done item
/// shown among the recent ones shows its look too).
fn next_look_after(items: &[Item], now: jiff::Timestamp) -> Option<jiff::Timestamp> {
    items.iter().filter_map(|i| i.fields.next_look).filter(|t| *t > now).min()
}

/// A `session-context.json` forged from `file` (any content, any journal line): rendered
/// and sealed as abcd seals one. For tests that prove a reader checks more than the
/// digest, which has no key.
pub fn seal_session_context_json(file: &serde_json::Value) -> Vec<u8> {
    let mut file = file.clone();
    file["digest"] = serde_json::json!(UNSEALED);
    render_sealed(SESSION_CONTEXT_DIGEST_CONTEXT, &file)
}

/// Why a `session-context.json` is not used (the hook then renders from the checklist).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionContextRejected {
    #[error("it cannot be read")]
    Unreadable,
    #[error("it is not an abcd/session-context/v1 file")]
    NotASessionContext,
    #[error("its digest does not match its content")]
    DigestMismatch,
    #[error("its text carries a secret")]
    Secret,
    #[error("its text holds characters a terminal acts on")]
    TerminalUnsafe,
    #[error("its text is over the budget it names")]
    OverBudget,
}

/// Reads a `session-context.json` and checks its text as read: the digest, the secret scan,
/// no control character but the newline (the fold refuses them in every field, so a
/// render of a validated checklist has none; the CLI escapes the rest a terminal acts on,
/// as in every reply) and no more characters than its budget. The digest has no key: the
/// scan and the checks, not the digest, keep a hand-written text out of a session.
pub fn load_session_context(storage: &dyn Storage, path: &Path) -> Result<SessionContextFile, SessionContextRejected> {
    let bytes = read_small(storage, path, MAX_SESSION_CONTEXT_BYTES).map_err(|_| SessionContextRejected::Unreadable)?;
    let file: SessionContextFile = serde_json::from_slice(&bytes).map_err(|_| SessionContextRejected::NotASessionContext)?;
    if file.schema != SESSION_CONTEXT_SCHEMA {
        return Err(SessionContextRejected::NotASessionContext);
    }
    if !digest_holds(SESSION_CONTEXT_DIGEST_CONTEXT, &bytes, &file.digest) {
        return Err(SessionContextRejected::DigestMismatch);
    }
    if file.text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(SessionContextRejected::TerminalUnsafe);
    }
    if file.text.chars().count() > file.budget {
        return Err(SessionContextRejected::OverBudget);
    }
    if crate::secrets::scan(&file.text).is_some() {
        return Err(SessionContextRejected::Secret);
    }
    Ok(file)
}

/// Why a checklist file is not used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChecklistFileRejected {
    #[error("it cannot be read")]
    Unreadable,
    #[error("it is not an abcd/checklist/v1 file")]
    NotAChecklist,
    #[error("its digest does not match its content (edited by hand, or written by an abcd older than 2026-11-30)")]
    DigestMismatch,
    #[error("item {index}: {field} {reason}")]
    BadItem { index: usize, field: String, reason: String },
}

/// Reads a checklist file and checks everything: schema, digest, and every item
/// validated and scanned again (nothing unvalidated or unscanned is ever shown).
pub fn load_checklist(storage: &dyn Storage, path: &Path) -> Result<ChecklistFile, ChecklistFileRejected> {
    let bytes = read_small(storage, path, MAX_PROJECTION_BYTES).map_err(|_| ChecklistFileRejected::Unreadable)?;
    let file: ChecklistFile = serde_json::from_slice(&bytes).map_err(|_| ChecklistFileRejected::NotAChecklist)?;
    if file.schema != CHECKLIST_SCHEMA {
        return Err(ChecklistFileRejected::NotAChecklist);
    }
    if !digest_holds(CHECKLIST_DIGEST_CONTEXT, &bytes, &file.digest) {
        return Err(ChecklistFileRejected::DigestMismatch);
    }
    check_shown(&file.items, &file.updated_by, &file.skipped)?;
    Ok(file)
}

/// Checks everything a checklist view may show, not only the items: the digest has no
/// key, so a file with a recomputed digest is not proof that abcd wrote it.
fn check_shown(items: &[Item], updated_by: &Option<String>, skipped: &[Skipped]) -> Result<(), ChecklistFileRejected> {
    crate::fold::checklist::shown_text_passes(items, updated_by, skipped, None).map_err(|(index, r)| ChecklistFileRejected::BadItem {
        index,
        field: r.field.unwrap_or_default(),
        reason: r.reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checklist::item::{Credential, ItemFields, ItemState};

    fn at(text: &str) -> jiff::Timestamp {
        text.parse().expect("a test timestamp")
    }

    /// Two items: one with every optional field set, one with none.
    fn items() -> Vec<Item> {
        let full = ItemFields {
            id: "ship-it".into(),
            title: "Ship it \"today\" — über".into(),
            state: ItemState::Waiting,
            waits_on: Some("pr:12".into()),
            next_look: Some(at("2026-12-01T09:00:00Z")),
            promise: Some("back by noon".into()),
            owner_refs: vec!["branch:fix".into(), "pr:12".into()],
            credential: Some(Credential { kind: "token".into(), scope: "repo:read".into(), expiry: Some(at("2027-01-01T00:00:00Z")) }),
            blocker: None,
        };
        let bare = ItemFields::working("bare", "Bare");
        [full, bare]
            .into_iter()
            .enumerate()
            .map(|(n, fields)| Item {
                fields,
                created_at: at("2026-11-30T10:00:00.123Z"),
                updated_at: at("2026-11-30T11:00:00Z"),
                added_seq: 3 + n as u64,
                changed_seq: 7,
                promise_fired: None,
                promised_by: None,
            })
            .collect()
    }

    fn file() -> ChecklistFile {
        let head = Head { seq: 9, hash: Hash([7; 32]), offset: 100, end: 300 };
        let skipped = vec![Skipped { seq: 5, kind: "checklist.item_added".into(), field: Some("title".into()), reason: "empty".into() }];
        let mut file = ChecklistFile {
            schema: CHECKLIST_SCHEMA.into(),
            updated_at: Some(at("2026-11-30T11:00:00Z")),
            updated_by: Some("session s1".into()),
            journal: head.into(),
            digest: UNSEALED.into(),
            items: items(),
            skipped,
            retired_total: 0,
        };
        file.digest = digest_when_rendered(CHECKLIST_DIGEST_CONTEXT, &file);
        file
    }

    /// The digest's definition, spelled out on the bytes: the file as written with its
    /// digest's digits zeroed, hashed under the checklist's context.
    #[test]
    fn the_digest_covers_the_bytes_as_written_with_its_digits_zeroed() {
        let file = file();
        let written = file.render();
        let text = String::from_utf8(written.clone()).unwrap();
        let zeroed = text.replacen(&file.digest, UNSEALED, 1);
        assert_ne!(zeroed, text);
        let expected = blake3::Hasher::new_derive_key(CHECKLIST_DIGEST_CONTEXT).update(zeroed.as_bytes()).finalize().to_hex().to_string();
        assert_eq!(file.digest, expected);
        assert!(digest_holds(CHECKLIST_DIGEST_CONTEXT, &written, &file.digest));
        // Another context, or any byte changed (whitespace included), and it fails.
        assert!(!digest_holds(STATE_DIGEST_CONTEXT, &written, &file.digest));
        for at in [0, 40, written.len() / 2, written.len() - 2] {
            let mut edited = written.clone();
            edited[at] ^= 0x20;
            let parsed = serde_json::from_slice::<ChecklistFile>(&edited).map(|f| f.digest).unwrap_or(file.digest.clone());
            assert!(!digest_holds(CHECKLIST_DIGEST_CONTEXT, &edited, &parsed), "byte {at} changed");
        }
        // Compact JSON has no digest in place: not trusted, whatever it holds.
        let compact = serde_json::to_vec(&file).unwrap();
        assert!(!digest_holds(CHECKLIST_DIGEST_CONTEXT, &compact, &file.digest));
    }

    #[test]
    fn rendering_from_the_state_writes_the_same_bytes_as_the_file() {
        let mut state = FoldedState::default();
        state.checklist.items = items();
        state.checklist.updated_at = Some(at("2026-11-30T11:00:00Z"));
        state.checklist.updated_by = Some("session s1".into());
        state.journal.skipped = vec![
            Skipped { seq: 5, kind: "checklist.item_added".into(), field: Some("title".into()), reason: "empty".into() },
            Skipped { seq: 6, kind: "session.started".into(), field: None, reason: "unknown".into() },
        ];
        let head = Head { seq: 9, hash: Hash([7; 32]), offset: 100, end: 300 };
        let file = ChecklistFile::from_state(&state, head);
        assert_eq!(ChecklistFile::render_from_state(&state, head), file.render());
        assert_eq!(file.skipped.len(), 1, "only checklist events");
        let written = render_state(&state, head);
        let parsed: StateFile = serde_json::from_slice(&written).unwrap();
        assert!(digest_holds(STATE_DIGEST_CONTEXT, &written, &parsed.digest));
        // A forger's seal holds as abcd's does (keys in another order, same rule).
        let value: serde_json::Value = serde_json::from_slice(&written).unwrap();
        let forged = seal_state_json(&value);
        let reparsed: StateFile = serde_json::from_slice(&forged).unwrap();
        assert!(digest_holds(STATE_DIGEST_CONTEXT, &forged, &reparsed.digest));
        assert!(!digest_holds(CHECKLIST_DIGEST_CONTEXT, &forged, &reparsed.digest));
    }

    #[test]
    fn items_read_back_as_written_in_json_and_cbor() {
        let file = file();
        let back: ChecklistFile = serde_json::from_slice(&file.render()).unwrap();
        assert_eq!(back, file);
        let mut cbor = Vec::new();
        ciborium::into_writer(&file.items, &mut cbor).unwrap();
        let back: Vec<Item> = ciborium::from_reader(&cbor[..]).unwrap();
        assert_eq!(back, file.items);
    }

    #[test]
    fn a_file_without_updated_at_reads_as_none_as_it_did_before() {
        let mut v = serde_json::to_value(file()).unwrap();
        v.as_object_mut().unwrap().remove("updated_at");
        let read: ChecklistFile = serde_json::from_value(v).expect("a missing updated_at is None");
        assert_eq!(read.updated_at, None);
    }

    /// A sealed session render of `text` for `budget` characters, written to a temp file.
    fn session_render_file(dir: &Path, budget: usize, text: &str) -> std::path::PathBuf {
        let head = Head { seq: 9, hash: Hash([7; 32]), offset: 100, end: 300 };
        let file = SessionContextFile::new(head, &items(), budget, at("2026-11-30T11:00:00Z"), text.into());
        let path = dir.join(SESSION_CONTEXT_FILE);
        std::fs::write(&path, file.render()).unwrap();
        path
    }

    #[test]
    fn a_session_render_is_read_up_to_its_byte_cap_and_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        let read = |path: &Path| load_session_context(&crate::journal::storage::RealDisk, path);
        // The text fills the file to exactly the cap, then one byte more.
        let empty = session_render_file(dir.path(), usize::MAX, "").metadata().unwrap().len() as usize;
        let room = MAX_SESSION_CONTEXT_BYTES as usize - empty;
        let path = session_render_file(dir.path(), usize::MAX, &"a".repeat(room));
        assert_eq!(path.metadata().unwrap().len(), MAX_SESSION_CONTEXT_BYTES);
        assert!(read(&path).is_ok());
        session_render_file(dir.path(), usize::MAX, &"a".repeat(room + 1));
        assert_eq!(read(&path), Err(SessionContextRejected::Unreadable));
        // As many characters as its budget, then one more.
        session_render_file(dir.path(), 10, "ä".repeat(10).as_str());
        assert!(read(&path).is_ok());
        session_render_file(dir.path(), 10, "ä".repeat(11).as_str());
        assert_eq!(read(&path), Err(SessionContextRejected::OverBudget));
        // A newline is the text's own; any other control character is refused.
        session_render_file(dir.path(), 10, "a\nb");
        assert!(read(&path).is_ok());
        for c in ['\r', '\t', '\u{1b}', '\u{7f}', '\u{9b}'] {
            session_render_file(dir.path(), 10, &format!("a{c}b"));
            assert_eq!(read(&path), Err(SessionContextRejected::TerminalUnsafe), "{c:?}");
        }
        session_render_file(dir.path(), 100, "use ghp_0123456789abcdefghijklmnopqrstuvwxyzAB");
        assert_eq!(read(&path), Err(SessionContextRejected::Secret));
    }

    #[test]
    fn a_session_render_holds_from_its_render_until_the_next_look_ahead() {
        // `items()` has one look, 2026-12-01T09:00:00Z; rendered after it, none is ahead.
        let look = at("2026-12-01T09:00:00Z");
        let head = Head { seq: 9, hash: Hash([7; 32]), offset: 100, end: 300 };
        let rendered = at("2026-11-30T11:00:00Z");
        let file = SessionContextFile::new(head, &items(), 500, rendered, String::new());
        assert_eq!(file.valid_until, Some(look));
        let nanosecond = jiff::SignedDuration::from_nanos(1);
        assert!(file.holds_for(500, rendered) && file.holds_for(500, look - nanosecond));
        assert!(!file.holds_for(500, look) && !file.holds_for(500, rendered - nanosecond));
        assert!(!file.holds_for(499, rendered), "rendered for another budget");
        let after = SessionContextFile::new(head, &items(), 500, look, String::new());
        assert_eq!(after.valid_until, None, "a look that is due is no longer ahead");
        assert!(after.holds_for(500, at("2030-01-01T00:00:00Z")));
    }

    #[test]
    fn a_session_render_says_whether_a_promise_may_fire_and_an_older_one_reads_as_armed() {
        let head = Head { seq: 9, hash: Hash([7; 32]), offset: 100, end: 300 };
        let rendered = at("2026-11-30T11:00:00Z");
        // `items()`'s promise is free text written before the grammar: it never fires.
        assert!(!SessionContextFile::new(head, &items(), 500, rendered, String::new()).promises_armed);
        let mut promising = items();
        promising[1].fields.promise = Some("pr:7 merged => add the wrapper".into());
        let file = SessionContextFile::new(head, &promising, 500, rendered, String::new());
        assert!(file.promises_armed);
        promising[1].promise_fired = Some("3".into());
        assert!(!SessionContextFile::new(head, &promising, 500, rendered, String::new()).promises_armed, "fired");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SESSION_CONTEXT_FILE);
        let mut older = serde_json::to_value(SessionContextFile::new(head, &items(), 500, rendered, String::new())).unwrap();
        older.as_object_mut().unwrap().remove("promises_armed");
        std::fs::write(&path, seal_session_context_json(&older)).unwrap();
        let read = load_session_context(&crate::journal::storage::RealDisk, &path).expect("a file without the field reads");
        assert!(read.promises_armed, "a render that does not say is checked");
    }

    #[test]
    fn an_item_with_a_field_abcd_does_not_write_is_refused() {
        let mut v = serde_json::to_value(&items()[1]).unwrap();
        assert!(serde_json::from_value::<Item>(v.clone()).is_ok());
        v["planted"] = serde_json::json!("x");
        assert!(serde_json::from_value::<Item>(v).is_err());
    }
}
