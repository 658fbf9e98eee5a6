//! Projection files: folded state rendered as JSON that names the journal line it
//! reflects and carries a digest of its content. A projection that is unreadable, fails
//! its digest (a hand edit, say) or names another line is not trusted; the reader
//! re-folds from the journal.
//!
//! - `state.json`: the whole folded state (a readable checkpoint; the read path's base).
//! - `checklist.json` (`abcd/checklist/v1`) and `checklist.last-good.json`: the checklist
//!   view that hooks and people read (SPEC §3).
//! - `away.json` (`abcd/away/v1`), beside a repository journal: the away record (SPEC §6)
//!   for people and other tools; abcd itself reads the record from `state.json` or the
//!   journal, never from this file.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fold::checklist::{ChecklistState, Item, check_item};
use crate::fold::{FoldedState, Skipped, state_digest};
use crate::journal::format::Hash;
use crate::journal::scan::Head;
use crate::journal::storage::{Storage, read_small};

pub const STATE_FILE: &str = "state.json";
pub const STATE_SCHEMA: &str = "abcd/state/v4";
pub const CHECKLIST_FILE: &str = "checklist.json";
pub const LAST_GOOD_FILE: &str = "checklist.last-good.json";
pub const CHECKLIST_SCHEMA: &str = "abcd/checklist/v1";
/// The largest projection file read.
pub const MAX_PROJECTION_BYTES: u64 = 16 << 20;
const CHECKLIST_DIGEST_CONTEXT: &str = "abcd projection v1 checklist digest";
pub const AWAY_FILE: &str = "away.json";
pub const AWAY_SCHEMA: &str = "abcd/away/v1";
const AWAY_DIGEST_CONTEXT: &str = "abcd projection v1 away digest";

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
            AwayFile { schema: AWAY_SCHEMA.into(), journal: head.into(), digest: String::new(), away: state.away.clone(), skipped };
        let bytes = serde_json::to_vec(&file).expect("plain data serializes");
        file.digest = blake3::Hasher::new_derive_key(AWAY_DIGEST_CONTEXT).update(&bytes).finalize().to_hex().to_string();
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

pub fn render_state(state: &FoldedState, head: Head) -> Vec<u8> {
    let file = StateFile { schema: STATE_SCHEMA.into(), journal: head.into(), digest: state_digest(state), state: state.clone() };
    pretty(&file)
}

fn pretty<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).expect("plain data serializes");
    out.push(b'\n');
    out
}

/// The state file's state and the line it names, if it is a file this user alone can
/// write (SPEC §1), parses, its digest holds, and what it would show passes the fold's
/// checks again (the digest has no key, so it is no proof abcd wrote it).
pub fn load_state_any(storage: &dyn Storage, path: &Path) -> Option<(FoldedState, Head)> {
    let facts = storage.facts(path).ok()??;
    if crate::journal::safety::untrusted_reason(&facts).is_some() {
        return None;
    }
    let bytes = read_small(storage, path, MAX_PROJECTION_BYTES).ok()?;
    let file: StateFile = serde_json::from_slice(&bytes).ok()?;
    let j = file.journal;
    let intact = file.schema == STATE_SCHEMA
        && file.digest == state_digest(&file.state)
        && file.state.journal.events == j.seq + 1
        && file.state.journal.last_hash == Some(j.hash)
        && file.state.away.shown_text_passes();
    intact.then_some((file.state, j.into()))
}

/// Whether an event of `kind` can change what `checklist.json` shows: its items come
/// from `checklist.*` events and its skipped list names only `checklist.*` events, so no
/// other kind can.
pub fn changes_checklist_view(kind: &str) -> bool {
    kind.starts_with("checklist.")
}

/// The checklist as `checklist.json` and last-good carry it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChecklistFile {
    pub schema: String,
    // Read like the items' times (`utc_time`): no general RFC 3339 parser for a hook's read.
    #[serde(default, deserialize_with = "crate::journal::utc_time::deserialize_option")]
    pub updated_at: Option<jiff::Timestamp>,
    pub updated_by: Option<String>,
    pub journal: JournalRef,
    pub digest: String,
    pub items: Vec<Item>,
    /// Checklist events the fold skipped, named by seq, field and rule or kind.
    pub skipped: Vec<Skipped>,
}

impl ChecklistFile {
    pub fn from_state(state: &FoldedState, head: Head) -> ChecklistFile {
        let c = &state.checklist;
        let skipped: Vec<Skipped> = state.journal.skipped.iter().filter(|s| s.kind.starts_with("checklist.")).cloned().collect();
        let mut file = ChecklistFile {
            schema: CHECKLIST_SCHEMA.into(),
            updated_at: c.updated_at,
            updated_by: c.updated_by.clone(),
            journal: head.into(),
            digest: String::new(),
            items: c.items.clone(),
            skipped,
        };
        file.digest = file.compute_digest();
        file
    }

    fn compute_digest(&self) -> String {
        /// The file as its digest covers it: every field in order, `digest` empty. Borrowed,
        /// not a clone of the file with the digest cleared: that clone was a third of the
        /// digest's cost.
        #[derive(Serialize)]
        struct Unsigned<'a> {
            schema: &'a str,
            updated_at: &'a Option<jiff::Timestamp>,
            updated_by: &'a Option<String>,
            journal: &'a JournalRef,
            digest: &'a str,
            items: &'a [Item],
            skipped: &'a [Skipped],
        }
        let ChecklistFile { schema, updated_at, updated_by, journal, digest: _, items, skipped } = self;
        let unsigned = Unsigned { schema, updated_at, updated_by, journal, digest: "", items, skipped };
        let bytes = serde_json::to_vec(&unsigned).expect("plain data serializes");
        blake3::Hasher::new_derive_key(CHECKLIST_DIGEST_CONTEXT).update(&bytes).finalize().to_hex().to_string()
    }

    /// The checklist state this file shows.
    pub fn to_state(&self) -> ChecklistState {
        ChecklistState { items: self.items.clone(), updated_at: self.updated_at, updated_by: self.updated_by.clone(), ..Default::default() }
    }

    pub fn render(&self) -> Vec<u8> {
        pretty(self)
    }
}

/// Why a checklist file is not used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChecklistFileRejected {
    #[error("it cannot be read")]
    Unreadable,
    #[error("it is not an abcd/checklist/v1 file")]
    NotAChecklist,
    #[error("its digest does not match its content (edited by hand?)")]
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
    if file.digest != file.compute_digest() {
        return Err(ChecklistFileRejected::DigestMismatch);
    }
    // Everything the reader may show is scanned, not only the items: the digest has no key,
    // so a file with a recomputed digest is not proof that abcd wrote it.
    let shown = file
        .updated_by
        .iter()
        .map(String::as_str)
        .chain(file.skipped.iter().flat_map(|s| [s.kind.as_str(), s.reason.as_str()].into_iter().chain(s.field.as_deref())));
    for text in shown {
        if crate::checklist::secrets::scan(text).is_some() {
            return Err(ChecklistFileRejected::BadItem {
                index: 0,
                field: "updated_by or skipped".into(),
                reason: "carries a secret".into(),
            });
        }
    }
    for (index, item) in file.items.iter().enumerate() {
        check_item(&item.fields).map_err(|r| ChecklistFileRejected::BadItem {
            index,
            field: r.field.unwrap_or_default(),
            reason: r.reason,
        })?;
    }
    Ok(file)
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
            digest: String::new(),
            items: items(),
            skipped,
        };
        file.digest = file.compute_digest();
        file
    }

    #[test]
    fn the_digest_covers_the_file_as_written_with_its_digest_emptied() {
        let file = file();
        let mut unsigned = file.clone();
        unsigned.digest = String::new();
        let bytes = serde_json::to_vec(&unsigned).unwrap();
        let expected = blake3::Hasher::new_derive_key(CHECKLIST_DIGEST_CONTEXT).update(&bytes).finalize().to_hex().to_string();
        assert_eq!(file.digest, expected);
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

    #[test]
    fn an_item_with_a_field_abcd_does_not_write_is_refused() {
        let mut v = serde_json::to_value(&items()[1]).unwrap();
        assert!(serde_json::from_value::<Item>(v.clone()).is_ok());
        v["planted"] = serde_json::json!("x");
        assert!(serde_json::from_value::<Item>(v).is_err());
    }
}
