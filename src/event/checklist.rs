//! The checklist family: `checklist.item_added`, `item_changed` and `write_refused`, and
//! the item fields they carry. The rules those fields obey live in `checklist::item`.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemState {
    Working,
    Waiting,
    Done,
    Dropped,
}

impl ItemState {
    pub const ALL: [ItemState; 4] = [ItemState::Working, ItemState::Waiting, ItemState::Done, ItemState::Dropped];

    pub fn name(self) -> &'static str {
        match self {
            ItemState::Working => "working",
            ItemState::Waiting => "waiting",
            ItemState::Done => "done",
            ItemState::Dropped => "dropped",
        }
    }

    pub fn parse(text: &str) -> Option<ItemState> {
        ItemState::ALL.into_iter().find(|s| s.name() == text)
    }

    pub fn is_open(self) -> bool {
        matches!(self, ItemState::Working | ItemState::Waiting)
    }
}

/// A credential an item needs: only its kind, scope and expiry, never its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    pub kind: String,
    pub scope: String,
    #[serde(default)]
    pub expiry: Option<jiff::Timestamp>,
}

/// What an item is blocked on that the away sweep collects (seed 000's four kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockerKind {
    /// An undecided design decision.
    Decision,
    /// A step only the person's hands can do.
    Hands,
    /// A dependency on another session.
    Session,
    /// A credential missing or expiring.
    Credential,
}

impl BlockerKind {
    pub const ALL: [BlockerKind; 4] = [BlockerKind::Decision, BlockerKind::Hands, BlockerKind::Session, BlockerKind::Credential];

    pub fn name(self) -> &'static str {
        match self {
            BlockerKind::Decision => "decision",
            BlockerKind::Hands => "hands",
            BlockerKind::Session => "session",
            BlockerKind::Credential => "credential",
        }
    }

    pub fn parse(text: &str) -> Option<BlockerKind> {
        BlockerKind::ALL.into_iter().find(|k| k.name() == text)
    }

    /// What the kind means, in the person's words.
    pub fn words(self) -> &'static str {
        match self {
            BlockerKind::Decision => "a design decision only the person can make",
            BlockerKind::Hands => "a step only the person's hands can do",
            BlockerKind::Session => "waits on another session",
            BlockerKind::Credential => "a credential missing or expiring",
        }
    }

    /// Whether the person must act on it (every kind but a dependency on another session).
    pub fn is_the_persons(self) -> bool {
        self != BlockerKind::Session
    }
}

/// One checklist item as the journal carries it in `checklist.item_added`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemFields {
    pub id: String,
    pub title: String,
    pub state: ItemState,
    #[serde(default)]
    pub waits_on: Option<String>,
    #[serde(default)]
    pub next_look: Option<jiff::Timestamp>,
    #[serde(default)]
    pub promise: Option<String>,
    #[serde(default)]
    pub owner_refs: Vec<String>,
    #[serde(default)]
    pub credential: Option<Credential>,
    /// Left out while none, so an item without one is written as before blockers existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocker: Option<BlockerKind>,
}

impl ItemFields {
    /// A `working` item with only an id and a title: what `checklist add <title>` records.
    pub fn working(id: &str, title: &str) -> ItemFields {
        ItemFields {
            id: id.into(),
            title: title.into(),
            state: ItemState::Working,
            waits_on: None,
            next_look: None,
            promise: None,
            owner_refs: vec![],
            credential: None,
            blocker: None,
        }
    }
}

/// `data` of `checklist.item_added`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemAdded {
    pub item: ItemFields,
}

/// `data` of `checklist.item_changed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemChanged {
    pub id: String,
    pub changes: ChangeSet,
}

/// `data` of `checklist.write_refused`: what was refused and by which pattern kind,
/// never the value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteRefused {
    /// `add` or `set`.
    pub verb: String,
    pub field: String,
    pub kind: String,
}

/// `data` of `checklist.promise_fired`: the promise of item `id`, whose trigger reads
/// `trigger`, held, and became `item` (a new working item).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromiseFired {
    pub id: String,
    pub trigger: String,
    pub item: ItemFields,
}

/// The fields a `checklist set` changes; a present `None` clears an optional field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ItemState>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub waits_on: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub next_look: Option<Option<jiff::Timestamp>>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub promise: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_refs: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub credential: Option<Option<Credential>>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub blocker: Option<Option<BlockerKind>>,
}

/// Reads a field that is present (maybe `null`) as `Some`, so `null` means "clear".
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

impl ChangeSet {
    pub fn is_empty(&self) -> bool {
        *self == ChangeSet::default()
    }

    /// The item with these changes applied (not yet validated).
    pub fn apply_to(&self, item: &ItemFields) -> ItemFields {
        let mut out = item.clone();
        if let Some(t) = &self.title {
            out.title = t.clone();
        }
        if let Some(s) = self.state {
            out.state = s;
        }
        if let Some(w) = &self.waits_on {
            out.waits_on = w.clone();
        }
        if let Some(n) = self.next_look {
            out.next_look = n;
        }
        if let Some(p) = &self.promise {
            out.promise = p.clone();
        }
        if let Some(r) = &self.owner_refs {
            out.owner_refs = r.clone();
        }
        if let Some(c) = &self.credential {
            out.credential = c.clone();
        }
        if let Some(b) = self.blocker {
            out.blocker = b;
        }
        out
    }
}
