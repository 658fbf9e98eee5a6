//! The checklist fold: `checklist.*` events in, the checklist out. Every event's data is
//! validated and scanned again here, so a line appended behind abcd's back (by a shell
//! write, with a correct hash) can never bring an invalid field or a secret into a
//! projection or a render: it is skipped and named.

use serde::{Deserialize, Serialize};

use crate::checklist::item::{self, Credential, ItemFields, ItemState};
use crate::event::{ItemAdded, ItemChanged, WriteRefused};
use crate::journal::format::Event;
use crate::journal::utc_time;

/// An item as the checklist shows it: its fields and when they last changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ItemAsRead")]
pub struct Item {
    #[serde(flatten)]
    pub fields: ItemFields,
    pub created_at: jiff::Timestamp,
    pub updated_at: jiff::Timestamp,
    /// The seq of the event that added it, and of the last that changed it.
    pub added_seq: u64,
    pub changed_seq: u64,
}

/// `Item` as it is read from `checklist.json`, `state.json` and checkpoints: the same
/// fields side by side. serde's `flatten` buffers each item's fields before reading them,
/// which made parsing a 50-item `checklist.json` take about twice as long. Writing keeps
/// `flatten`: the bytes written are the same either way. Its times are read by
/// `utc_time` (the shape abcd writes) before jiff's general parser.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemAsRead {
    id: String,
    title: String,
    state: ItemState,
    #[serde(default)]
    waits_on: Option<String>,
    #[serde(default, deserialize_with = "utc_time::deserialize_option")]
    next_look: Option<jiff::Timestamp>,
    #[serde(default)]
    promise: Option<String>,
    #[serde(default)]
    owner_refs: Vec<String>,
    #[serde(default)]
    credential: Option<Credential>,
    #[serde(deserialize_with = "utc_time::deserialize")]
    created_at: jiff::Timestamp,
    #[serde(deserialize_with = "utc_time::deserialize")]
    updated_at: jiff::Timestamp,
    added_seq: u64,
    changed_seq: u64,
}

impl From<ItemAsRead> for Item {
    fn from(r: ItemAsRead) -> Item {
        let ItemAsRead {
            id,
            title,
            state,
            waits_on,
            next_look,
            promise,
            owner_refs,
            credential,
            created_at,
            updated_at,
            added_seq,
            changed_seq,
        } = r;
        Item {
            fields: ItemFields { id, title, state, waits_on, next_look, promise, owner_refs, credential },
            created_at,
            updated_at,
            added_seq,
            changed_seq,
        }
    }
}

/// A refused write, as recorded: field and pattern kind only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub seq: u64,
    pub verb: String,
    pub field: String,
    pub kind: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChecklistState {
    /// In the order they were added.
    pub items: Vec<Item>,
    pub updated_at: Option<jiff::Timestamp>,
    pub updated_by: Option<String>,
    pub refusals_total: u64,
    pub last_refusal: Option<Refusal>,
}

impl ChecklistState {
    pub fn get(&self, id: &str) -> Option<&Item> {
        self.items.iter().find(|i| i.fields.id == id)
    }
}

/// Why a checklist event was not folded: the field and the rule or pattern kind, never
/// the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub field: Option<String>,
    pub reason: String,
}

/// Validation and the secret scan of a whole item, as the fold and the verbs apply them.
/// The scan runs first, so a secret is reported as a secret, not as a malformed value.
pub fn check_item(fields: &ItemFields) -> Result<(), Rejection> {
    if let Some((field, kind)) =
        item::scannable_fields(fields).into_iter().find_map(|(f, t)| crate::checklist::secrets::scan(t).map(|k| (f, k)))
    {
        return Err(Rejection { field: Some(field.into()), reason: format!("carries {} ({})", kind.describe(), kind.name()) });
    }
    item::validate_item(fields).map_err(|e| Rejection { field: Some(e.field.into()), reason: e.rule })
}

pub fn fold_added(state: &mut ChecklistState, event: &Event, added: &ItemAdded) -> Result<(), Rejection> {
    check_item(&added.item)?;
    if state.get(&added.item.id).is_some() {
        return Err(Rejection { field: Some("id".into()), reason: "names an item that already exists".into() });
    }
    if state.items.len() >= item::ITEMS_MAX {
        return Err(Rejection { field: None, reason: format!("the checklist already holds {} items", item::ITEMS_MAX) });
    }
    state.items.push(Item {
        fields: added.item.clone(),
        created_at: event.time,
        updated_at: event.time,
        added_seq: event.seq,
        changed_seq: event.seq,
    });
    touch(state, event);
    Ok(())
}

pub fn fold_changed(state: &mut ChecklistState, event: &Event, changed: &ItemChanged) -> Result<(), Rejection> {
    let Some(index) = state.items.iter().position(|i| i.fields.id == changed.id) else {
        // The id is only named if it is itself a clean slug: it came from the file.
        let named = item::validate_id(&changed.id).is_ok() && crate::checklist::secrets::scan(&changed.id).is_none();
        let reason = if named { format!("names no item `{}`", changed.id) } else { "names no item".to_string() };
        return Err(Rejection { field: Some("id".into()), reason });
    };
    if changed.changes.is_empty() {
        return Err(Rejection { field: None, reason: "changes nothing".into() });
    }
    let next = changed.changes.apply_to(&state.items[index].fields);
    check_item(&next)?;
    let it = &mut state.items[index];
    it.fields = next;
    it.updated_at = event.time;
    it.changed_seq = event.seq;
    touch(state, event);
    Ok(())
}

/// A refusal record names a verb, a field and a kind as short lowercase words, nothing
/// else: anything longer could be a value and is never shown.
pub fn refusal_is_clean(refused: &WriteRefused) -> bool {
    refusal_words_are_clean(&refused.verb, &refused.field, &refused.kind)
}

fn refusal_words_are_clean(verb: &str, field: &str, kind: &str) -> bool {
    let clean = |t: &str| !t.is_empty() && t.len() <= 64 && t.bytes().all(|c| c.is_ascii_lowercase() || matches!(c, b'_' | b'.'));
    clean(field) && clean(kind) && clean(verb)
}

/// Everything a checklist view may show passes the fold's checks again: every item
/// validated and scanned, the author and the skipped-event notes scanned, the last
/// refusal made of clean words. For views and states read from caches, whose digests have
/// no key. `Err` names the item index (0 for the other fields) and the rule.
pub fn shown_text_passes(
    items: &[Item],
    updated_by: &Option<String>,
    skipped: &[crate::fold::Skipped],
    last_refusal: Option<&Refusal>,
) -> Result<(), (usize, Rejection)> {
    let other = |reason: &str| (0, Rejection { field: Some("updated_by, skipped or last_refusal".into()), reason: reason.into() });
    let notes = updated_by
        .iter()
        .map(String::as_str)
        .chain(skipped.iter().flat_map(|s| [s.kind.as_str(), s.reason.as_str()].into_iter().chain(s.field.as_deref())));
    for text in notes {
        if crate::checklist::secrets::scan(text).is_some() {
            return Err(other("carries a secret"));
        }
    }
    if last_refusal.is_some_and(|r| !refusal_words_are_clean(&r.verb, &r.field, &r.kind)) {
        return Err(other("a refusal record must name a field and a kind only"));
    }
    for (index, item) in items.iter().enumerate() {
        check_item(&item.fields).map_err(|r| (index, r))?;
    }
    Ok(())
}

pub fn fold_refused(state: &mut ChecklistState, event: &Event, refused: &WriteRefused) -> Result<(), Rejection> {
    if !refusal_is_clean(refused) {
        return Err(Rejection { field: None, reason: "a refusal record must name a field and a kind only".into() });
    }
    state.refusals_total += 1;
    state.last_refusal =
        Some(Refusal { seq: event.seq, verb: refused.verb.clone(), field: refused.field.clone(), kind: refused.kind.clone() });
    Ok(())
}

fn touch(state: &mut ChecklistState, event: &Event) {
    state.updated_at = Some(event.time);
    state.updated_by = event.actor.session.clone().filter(|s| crate::checklist::secrets::scan(s).is_none());
}
