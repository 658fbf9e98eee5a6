//! The checklist as the fold leaves it: its items with their times and seqs, and the last
//! refused write. These are what `checklist.json`, `state.json` and checkpoints hold.

use serde::{Deserialize, Serialize};

use crate::checklist::item::{Credential, ItemFields, ItemState};
use crate::utc_time;

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
/// fields side by side, because serde's `flatten` buffers each item's fields before reading
/// them, which is slow on the hook's read path (docs/decisions.md). Writing keeps
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
pub struct RefusalRecord {
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
    pub last_refusal: Option<RefusalRecord>,
}

impl ChecklistState {
    pub fn get(&self, id: &str) -> Option<&Item> {
        self.items.iter().find(|i| i.fields.id == id)
    }
}
