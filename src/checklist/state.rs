//! The checklist as the fold leaves it: its items with their times and seqs, and the last
//! refused write. These are what `checklist.json`, `state.json` and checkpoints hold.

use serde::{Deserialize, Serialize};

use crate::checklist::item::{BlockerKind, Credential, ItemFields, ItemState};
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
    /// The id of the item this item's promise became (`checklist.promise_fired`); cleared
    /// when the promise is set again. Left out while none, so old states read and write
    /// byte for byte as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promise_fired: Option<String>,
    /// The item whose promise this item came from, and its trigger: such an item is
    /// rendered first while it is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promised_by: Option<PromisedBy>,
}

/// Where an item that a promise became came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromisedBy {
    pub id: String,
    pub trigger: String,
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
    #[serde(default)]
    blocker: Option<BlockerKind>,
    #[serde(deserialize_with = "utc_time::deserialize")]
    created_at: jiff::Timestamp,
    #[serde(deserialize_with = "utc_time::deserialize")]
    updated_at: jiff::Timestamp,
    added_seq: u64,
    changed_seq: u64,
    #[serde(default)]
    promise_fired: Option<String>,
    #[serde(default)]
    promised_by: Option<PromisedBy>,
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
            blocker,
            created_at,
            updated_at,
            added_seq,
            changed_seq,
            promise_fired,
            promised_by,
        } = r;
        Item {
            fields: ItemFields { id, title, state, waits_on, next_look, promise, owner_refs, credential, blocker },
            created_at,
            updated_at,
            added_seq,
            changed_seq,
            promise_fired,
            promised_by,
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
    /// The working state's items (open ones, and the newest closed ones up to
    /// `CLOSED_ITEMS_KEPT`), in the order they were added.
    pub items: Vec<Item>,
    pub updated_at: Option<jiff::Timestamp>,
    pub updated_by: Option<String>,
    pub refusals_total: u64,
    pub last_refusal: Option<RefusalRecord>,
    /// One more than the largest all-digit id ever added (0 while none was): the next
    /// number `checklist add` may give, kept here because closed items may leave `items`.
    /// Left out while 0, so a state that never had a numeric id is written without it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub next_number: u64,
    /// Closed items retired from `items` (they live in the journal only). Not written while
    /// zero, so a state that never retired one is written without it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retired_total: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// An id's number when it is all digits and fits a `u64` with room for one more.
pub fn id_number(id: &str) -> Option<u64> {
    if id.is_empty() || !id.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    id.parse::<u64>().ok().filter(|n| n.checked_add(1).is_some())
}

impl ChecklistState {
    pub fn get(&self, id: &str) -> Option<&Item> {
        self.items.iter().find(|i| i.fields.id == id)
    }

    /// The id `checklist add` gives next: the smallest number above every all-digit id
    /// ever added (the counter, and the live items as a floor for states written before
    /// the counter), at least 1, and held by no live item. `None` only when the numbers
    /// that fit a `u64` are used up.
    pub fn next_id(&self) -> Option<String> {
        let floor = self.items.iter().filter_map(|i| id_number(&i.fields.id)).map(|n| n + 1).max().unwrap_or(0);
        let first = self.next_number.max(floor).max(1);
        (first..=u64::MAX).map(|n| n.to_string()).find(|id| self.get(id).is_none())
    }

    /// Raises the counter past `id` when it is all digits.
    pub fn count_id(&mut self, id: &str) {
        if let Some(n) = id_number(id) {
            self.next_number = self.next_number.max(n + 1);
        }
    }

    /// Closed (done or dropped) items held.
    pub fn closed_held(&self) -> usize {
        self.items.iter().filter(|i| !i.fields.state.is_open()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_ids(ids: &[&str], next_number: u64) -> ChecklistState {
        let t = jiff::Timestamp::UNIX_EPOCH;
        let items = ids
            .iter()
            .enumerate()
            .map(|(n, id)| Item {
                fields: ItemFields::working(id, "a title"),
                created_at: t,
                updated_at: t,
                added_seq: n as u64,
                changed_seq: n as u64,
                promise_fired: None,
                promised_by: None,
            })
            .collect();
        ChecklistState { items, next_number, ..Default::default() }
    }

    #[test]
    fn an_id_is_numeric_only_when_all_digits_and_one_more_fits() {
        assert_eq!(id_number("7"), Some(7));
        assert_eq!(id_number("007"), Some(7));
        assert_eq!(id_number(&(u64::MAX - 1).to_string()), Some(u64::MAX - 1));
        for not in ["", "7a", "-7", "fix-7", &u64::MAX.to_string(), "99999999999999999999999"] {
            assert_eq!(id_number(not), None, "{not}");
        }
    }

    #[test]
    fn the_next_id_is_above_the_counter_and_every_live_number() {
        assert_eq!(with_ids(&[], 0).next_id().as_deref(), Some("1"));
        assert_eq!(with_ids(&["fix-login"], 0).next_id().as_deref(), Some("1"));
        // The counter outlives the items it counted.
        assert_eq!(with_ids(&[], 9).next_id().as_deref(), Some("9"));
        // A state written before the counter: the live items are the floor.
        assert_eq!(with_ids(&["3", "fix-login", "12"], 0).next_id().as_deref(), Some("13"));
        assert_eq!(with_ids(&["3"], 40).next_id().as_deref(), Some("40"));
        // Numbers run out only past what fits.
        assert_eq!(with_ids(&[&u64::MAX.to_string()], u64::MAX).next_id(), None);
        assert_eq!(with_ids(&[], u64::MAX).next_id(), Some(u64::MAX.to_string()));
    }

    #[test]
    fn counting_raises_the_counter_for_numbers_only() {
        let mut state = ChecklistState::default();
        for id in ["fix-login", "4", "2", &u64::MAX.to_string()] {
            state.count_id(id);
        }
        assert_eq!(state.next_number, 5);
    }

    #[test]
    fn a_state_without_numbers_is_written_without_the_counter() {
        let bare = serde_json::to_string(&ChecklistState::default()).unwrap();
        assert!(!bare.contains("next_number"), "{bare}");
        let read: ChecklistState = serde_json::from_str(&bare).unwrap();
        assert_eq!(read.next_number, 0);
        let counted = serde_json::to_string(&with_ids(&[], 3)).unwrap();
        assert!(counted.contains("\"next_number\":3"), "{counted}");
        assert_eq!(serde_json::from_str::<ChecklistState>(&counted).unwrap().next_number, 3);
    }

    /// Adds and closed items leaving the state, in any order: no id is ever given twice.
    #[test]
    fn ids_are_never_reused_when_items_leave_the_state() {
        fn prop(ops: Vec<(bool, u8)>) -> bool {
            let mut state = ChecklistState::default();
            let mut given = std::collections::BTreeSet::new();
            for (seq, (add, which)) in ops.into_iter().enumerate() {
                if add || state.items.is_empty() {
                    let id = state.next_id().expect("numbers left");
                    if !given.insert(id.clone()) {
                        return false;
                    }
                    let mut added = with_ids(&[&id], 0).items.remove(0);
                    added.added_seq = seq as u64;
                    state.items.push(added);
                    state.count_id(&id);
                } else {
                    state.items.remove(which as usize % state.items.len());
                }
            }
            true
        }
        quickcheck::QuickCheck::new().quickcheck(prop as fn(Vec<(bool, u8)>) -> bool);
    }
}
