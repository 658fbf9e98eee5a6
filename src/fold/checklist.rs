//! The checklist fold: `checklist.*` events in, the checklist out. Every event's data is
//! validated and scanned again here, so a line appended behind abcd's back (by a shell
//! write, with a correct hash) can never bring an invalid field or a secret into a
//! projection or a render: it is skipped and named.

use crate::checklist::item::{self, refusal_words_are_clean};
pub use crate::checklist::item::{CLOSED_ITEMS_KEPT, Rejection, check_item, refusal_is_clean};
use crate::checklist::state::PromisedBy;
pub use crate::checklist::state::{ChecklistState, Item, RefusalRecord};
use crate::event::{ItemAdded, ItemChanged, PromiseFired, WriteRefused};
use crate::journal::format::Event;

/// Added to the reason of a change to an item the checklist does not hold, once closed
/// items have been retired: the id may be one of them.
pub fn retired_note() -> String {
    format!(
        " (closed items past the newest {CLOSED_ITEMS_KEPT} are retired from the working state; `abcd checklist --all` lists every item)"
    )
}

/// Folds an add; a closed item it pushes past [`CLOSED_ITEMS_KEPT`] is retired into `retired`.
pub fn fold_added(state: &mut ChecklistState, event: &Event, added: &ItemAdded, retired: &mut Vec<Item>) -> Result<(), Rejection> {
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
        promise_fired: None,
        promised_by: None,
    });
    state.count_id(&added.item.id);
    touch(state, event);
    retire_closed(state, retired);
    Ok(())
}

/// Folds a change; when it closes an item past [`CLOSED_ITEMS_KEPT`], the closed item
/// that closed longest ago is retired into `retired`.
pub fn fold_changed(state: &mut ChecklistState, event: &Event, changed: &ItemChanged, retired: &mut Vec<Item>) -> Result<(), Rejection> {
    let Some(index) = state.items.iter().position(|i| i.fields.id == changed.id) else {
        // The id is only named if it is itself a clean slug: it came from the file.
        let named = item::validate_id(&changed.id).is_ok() && crate::secrets::scan(&changed.id).is_none();
        let mut reason = if named { format!("names no item `{}`", changed.id) } else { "names no item".to_string() };
        if state.retired_total > 0 {
            reason.push_str(&retired_note());
        }
        return Err(Rejection { field: Some("id".into()), reason });
    };
    if changed.changes.is_empty() {
        return Err(Rejection { field: None, reason: "changes nothing".into() });
    }
    let next = changed.changes.apply_to(&state.items[index].fields);
    check_item(&next)?;
    let it = &mut state.items[index];
    if changed.changes.promise.is_some() {
        // A promise set again is armed again.
        it.promise_fired = None;
    }
    it.fields = next;
    it.updated_at = event.time;
    it.changed_seq = event.seq;
    touch(state, event);
    retire_closed(state, retired);
    Ok(())
}

/// Keeps at most [`CLOSED_ITEMS_KEPT`] closed items: past it, the one closed longest ago
/// (smallest `changed_seq`, then `added_seq`) leaves `items` for `retired`, so the working
/// state's size follows the open items, not the history. One step of a fold retires at
/// most one item; a state given with more (built by hand) loses all it has past the bound.
fn retire_closed(state: &mut ChecklistState, retired: &mut Vec<Item>) {
    while state.closed_held() > CLOSED_ITEMS_KEPT {
        let oldest = (state.items.iter().enumerate())
            .filter(|(_, i)| !i.fields.state.is_open())
            .min_by_key(|(_, i)| (i.changed_seq, i.added_seq))
            .map(|(at, _)| at)
            .expect("more closed items than the bound, so some");
        retired.push(state.items.remove(oldest));
        state.retired_total += 1;
    }
}

/// Everything a checklist view may show passes the fold's checks again: every item
/// validated and scanned, the author and the skipped-event notes scanned, the last
/// refusal made of clean words. For views and states read from caches, whose digests have
/// no key. `Err` names the item index (0 for the other fields) and the rule.
pub fn shown_text_passes(
    items: &[Item],
    updated_by: &Option<String>,
    skipped: &[crate::fold::Skipped],
    last_refusal: Option<&RefusalRecord>,
) -> Result<(), (usize, Rejection)> {
    let other = |reason: &str| (0, Rejection { field: Some("updated_by, skipped or last_refusal".into()), reason: reason.into() });
    let notes = updated_by
        .iter()
        .map(String::as_str)
        .chain(skipped.iter().flat_map(|s| [s.kind.as_str(), s.reason.as_str()].into_iter().chain(s.field.as_deref())));
    for text in notes {
        if crate::secrets::scan(text).is_some() {
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

/// Folds a fired promise: the promising item is held, its promise reads the trigger named
/// and has not fired since it was set; the next item is added (as an add is checked) and
/// the promising item names it. A second record of the same firing is skipped.
pub fn fold_promise_fired(
    state: &mut ChecklistState,
    event: &Event,
    fired: &PromiseFired,
    retired: &mut Vec<Item>,
) -> Result<(), Rejection> {
    let Some(index) = state.items.iter().position(|i| i.fields.id == fired.id) else {
        let named = item::validate_id(&fired.id).is_ok() && crate::secrets::scan(&fired.id).is_none();
        let reason = if named { format!("names no item `{}`", fired.id) } else { "names no item".to_string() };
        return Err(Rejection { field: Some("id".into()), reason });
    };
    let promising = &state.items[index];
    let parsed = promising.fields.promise.as_deref().and_then(|p| crate::checklist::promise::parse(p).ok());
    if parsed.is_none_or(|p| p.trigger_text != fired.trigger) {
        return Err(Rejection { field: Some("trigger".into()), reason: "is not the trigger of the item's promise".into() });
    }
    if promising.promise_fired.is_some() {
        return Err(Rejection { field: Some("id".into()), reason: "names an item whose promise already fired".into() });
    }
    if fired.item.state != crate::checklist::item::ItemState::Working {
        return Err(Rejection { field: Some("item.state".into()), reason: "must be working: a fired promise is work to do".into() });
    }
    check_item(&fired.item)?;
    if state.get(&fired.item.id).is_some() {
        return Err(Rejection { field: Some("item.id".into()), reason: "names an item that already exists".into() });
    }
    if state.items.len() >= item::ITEMS_MAX {
        return Err(Rejection { field: None, reason: format!("the checklist already holds {} items", item::ITEMS_MAX) });
    }
    state.items[index].promise_fired = Some(fired.item.id.clone());
    state.items.push(Item {
        fields: fired.item.clone(),
        created_at: event.time,
        updated_at: event.time,
        added_seq: event.seq,
        changed_seq: event.seq,
        promise_fired: None,
        promised_by: Some(PromisedBy { id: fired.id.clone(), trigger: fired.trigger.clone() }),
    });
    state.count_id(&fired.item.id);
    touch(state, event);
    retire_closed(state, retired);
    Ok(())
}

pub fn fold_refused(state: &mut ChecklistState, event: &Event, refused: &WriteRefused) -> Result<(), Rejection> {
    if !refusal_is_clean(refused) {
        return Err(Rejection { field: None, reason: "a refusal record must name a field and a kind only".into() });
    }
    state.refusals_total += 1;
    state.last_refusal =
        Some(RefusalRecord { seq: event.seq, verb: refused.verb.clone(), field: refused.field.clone(), kind: refused.kind.clone() });
    Ok(())
}

fn touch(state: &mut ChecklistState, event: &Event) {
    state.updated_at = Some(event.time);
    state.updated_by = event.actor.session.clone().filter(|s| crate::secrets::scan(s).is_none());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checklist::item::{ChangeSet, ItemFields, ItemState};
    use crate::fold::{FoldNote, FoldedState, fold_event_keeping_retired};
    use crate::journal::format::{Actor, Hash, NewEvent, encode_line, verify_line};
    use quickcheck::Arbitrary;
    use serde_json::json;

    /// A working copy journal written one event at a time, folded as it goes.
    struct Journal {
        state: FoldedState,
        retired: Vec<Item>,
        prev: Hash,
        seq: u64,
        time: jiff::Timestamp,
    }

    impl Journal {
        fn new() -> Journal {
            let time = "2026-12-01T00:00:00.000Z".parse().unwrap();
            let mut j = Journal { state: FoldedState::default(), retired: vec![], prev: Hash::genesis_prev(), seq: 0, time };
            let opened = json!({"journal_id": "0123456789abcdef0123456789abcdef", "scope": {"kind": "working_copy", "root": "/w"}});
            assert_eq!(j.append("journal.opened", opened), FoldNote::Folded);
            j
        }

        fn append(&mut self, kind: &str, data: serde_json::Value) -> FoldNote {
            let actor = Actor { session: None, pid: 1, tool: "abcd/t".into() };
            let (line, hash) = encode_line(self.seq, self.time, &NewEvent { kind: kind.into(), actor, data }, &self.prev).unwrap();
            (self.prev, self.seq) = (hash, self.seq + 1);
            fold_event_keeping_retired(&mut self.state, &verify_line(&line).unwrap(), &mut self.retired)
        }

        fn add(&mut self, id: &str, state: ItemState) -> FoldNote {
            let item = ItemFields { state, ..ItemFields::working(id, &format!("Item {id}")) };
            self.append("checklist.item_added", json!(ItemAdded { item }))
        }

        fn set(&mut self, id: &str, state: ItemState) -> FoldNote {
            let changes = ChangeSet { state: Some(state), ..ChangeSet::default() };
            self.append("checklist.item_changed", json!(ItemChanged { id: id.into(), changes }))
        }

        fn held(&self) -> Vec<&str> {
            self.state.checklist.items.iter().map(|i| i.fields.id.as_str()).collect()
        }

        fn retired(&self) -> Vec<&str> {
            self.retired.iter().map(|i| i.fields.id.as_str()).collect()
        }
    }

    fn id(n: usize) -> String {
        format!("item-{n}")
    }

    /// N closed items are all kept; the N+1th close retires exactly the item closed
    /// longest ago, which here is neither the first added nor the first in the list.
    #[test]
    fn at_the_bound_every_closed_item_stays_and_one_more_retires_the_one_closed_longest_ago() {
        let mut j = Journal::new();
        let n = CLOSED_ITEMS_KEPT;
        for k in 0..n + 3 {
            assert_eq!(j.add(&id(k), ItemState::Working), FoldNote::Folded);
        }
        // Closed in reverse order of adding (one dropped): item n-1 closes first.
        for k in (0..n).rev() {
            let to = if k == 7 { ItemState::Dropped } else { ItemState::Done };
            assert_eq!(j.set(&id(k), to), FoldNote::Folded);
        }
        assert_eq!(j.state.checklist.closed_held(), n);
        assert_eq!(j.held().len(), n + 3, "at the bound nothing leaves");
        assert_eq!((j.state.checklist.retired_total, j.retired.len()), (0, 0));

        assert_eq!(j.set(&id(n), ItemState::Done), FoldNote::Folded);
        let first_closed = id(n - 1);
        assert_eq!(j.retired(), [first_closed.as_str()], "exactly the one closed longest ago");
        assert_eq!(j.state.checklist.retired_total, 1);
        assert_eq!(j.state.checklist.closed_held(), n);
        assert_eq!(j.held().len(), n + 2);
        assert!(j.state.checklist.get(&first_closed).is_none());
        let order: Vec<String> = (0..n + 3).filter(|&k| k != n - 1).map(id).collect();
        assert_eq!(j.held(), order, "the rest keep the order they were added in");
        assert_eq!(j.retired[0].fields.state, ItemState::Done, "retired as it was when it left");

        // The next close retires the next oldest closed: a dropped one counts as closed.
        for k in (8..n - 1).rev() {
            j.set(&id(k), ItemState::Working);
        }
        assert_eq!(j.state.checklist.closed_held(), 9, "reopened items are open again: 0 to 7 and n stay closed");
        assert_eq!(j.set(&id(n + 1), ItemState::Dropped), FoldNote::Folded);
        assert_eq!(j.retired.len(), 1, "reopening made room: nothing more leaves");
    }

    /// Closing an item again makes it the newest closed; an add that is already closed (a
    /// line abcd does not write, but the fold takes) counts like a close.
    #[test]
    fn a_reopened_and_closed_again_item_is_the_newest_closed_and_a_closed_add_counts() {
        let mut j = Journal::new();
        let n = CLOSED_ITEMS_KEPT;
        for k in 0..n {
            j.add(&id(k), ItemState::Working);
            j.set(&id(k), ItemState::Done);
        }
        // The oldest closed is reopened and closed again: now item 1 is the oldest.
        j.set(&id(0), ItemState::Working);
        j.set(&id(0), ItemState::Done);
        assert!(j.retired.is_empty());
        j.add("late", ItemState::Done);
        assert_eq!(j.retired(), ["item-1"]);
        j.add("later", ItemState::Waiting);
        j.set("later", ItemState::Done);
        assert_eq!(j.retired(), ["item-1", "item-2"]);
        assert!(j.state.checklist.get("item-0").is_some() && j.state.checklist.get("late").is_some());
    }

    /// A promise fires once: a second record of it is skipped, and setting the promise again
    /// arms it again.
    #[test]
    fn a_promise_fires_once_until_it_is_set_again() {
        let mut j = Journal::new();
        let item = ItemFields { promise: Some("pr:7 merged => add the wrapper".into()), ..ItemFields::working("1", "Land pr 7") };
        assert_eq!(j.append("checklist.item_added", json!(ItemAdded { item })), FoldNote::Folded);
        let fired = |id: &str| {
            json!(PromiseFired { id: "1".into(), trigger: "pr:7 merged".into(), item: ItemFields::working(id, "add the wrapper") })
        };
        assert_eq!(j.append("checklist.promise_fired", fired("2")), FoldNote::Folded);
        assert_eq!(j.state.checklist.get("1").unwrap().promise_fired.as_deref(), Some("2"));
        let by = j.state.checklist.get("2").unwrap().promised_by.clone().unwrap();
        assert_eq!((by.id.as_str(), by.trigger.as_str()), ("1", "pr:7 merged"));
        let FoldNote::Skipped(again) = j.append("checklist.promise_fired", fired("3")) else { panic!("a second firing folded") };
        assert_eq!(again.reason, "names an item whose promise already fired");
        assert!(j.state.checklist.get("3").is_none());

        let changes = ChangeSet { promise: Some(Some("pr:7 merged => add the wrapper".into())), ..ChangeSet::default() };
        assert_eq!(j.append("checklist.item_changed", json!(ItemChanged { id: "1".into(), changes })), FoldNote::Folded);
        assert_eq!(j.state.checklist.get("1").unwrap().promise_fired, None, "set again: armed again");
        assert_eq!(j.append("checklist.promise_fired", fired("3")), FoldNote::Folded);
        // A change of another field leaves the mark.
        assert_eq!(j.set("1", ItemState::Done), FoldNote::Folded);
        assert_eq!(j.state.checklist.get("1").unwrap().promise_fired.as_deref(), Some("3"));
    }

    /// A change naming a retired item is skipped (the working state no longer holds it),
    /// and says that closed items are retired; while none is, the reason names only the id.
    #[test]
    fn a_change_to_a_retired_item_is_skipped_and_says_items_are_retired() {
        let mut j = Journal::new();
        let FoldNote::Skipped(before) = j.set("nowhere", ItemState::Done) else { panic!() };
        assert_eq!(before.reason, "names no item `nowhere`");
        for k in 0..=CLOSED_ITEMS_KEPT {
            j.add(&id(k), ItemState::Done);
        }
        assert_eq!(j.retired(), ["item-0"]);
        let FoldNote::Skipped(after) = j.set("item-0", ItemState::Working) else { panic!() };
        assert_eq!(after.reason, format!("names no item `item-0`{}", retired_note()));
        assert!(after.reason.contains(&format!("newest {CLOSED_ITEMS_KEPT}")) && after.reason.contains("abcd checklist --all"));
    }

    /// Ties on `changed_seq` (a state built by hand) go by `added_seq`; a state holding
    /// more than the bound loses everything past it.
    #[test]
    fn ties_go_by_added_seq_and_a_state_past_the_bound_is_brought_to_it() {
        let t = jiff::Timestamp::UNIX_EPOCH;
        let item = |n: u64, changed: u64| Item {
            fields: ItemFields { state: ItemState::Done, ..ItemFields::working(&id(n as usize), "T") },
            created_at: t,
            updated_at: t,
            added_seq: n,
            changed_seq: changed,
            promise_fired: None,
            promised_by: None,
        };
        let mut items: Vec<Item> = (0..CLOSED_ITEMS_KEPT as u64 + 3).rev().map(|n| item(n, 100 + n.min(5))).collect();
        items.push(item(1_000, 1));
        let mut state = ChecklistState { items, ..ChecklistState::default() };
        let mut retired = vec![];
        retire_closed(&mut state, &mut retired);
        let gone: Vec<u64> = retired.iter().map(|i| i.added_seq).collect();
        assert_eq!(gone, [1_000, 0, 1, 2], "changed_seq first, then added_seq");
        assert_eq!(state.closed_held(), CLOSED_ITEMS_KEPT);
        assert_eq!(state.retired_total, 4);
    }

    /// One step of a quickcheck run: add an item (open or closed), or change the state of
    /// one the working state holds, as `abcd checklist set` would.
    #[derive(Clone, Debug)]
    enum Step {
        Add(ItemState),
        Set { pick: usize, to: ItemState },
    }

    impl Arbitrary for Step {
        fn arbitrary(g: &mut quickcheck::Gen) -> Step {
            let state = *g.choose(&ItemState::ALL).unwrap();
            // Adds are mostly open and sets mostly close, so runs cross the bound.
            if u8::arbitrary(g) % 3 == 0 {
                let open = *g.choose(&[ItemState::Working, ItemState::Waiting, state]).unwrap();
                Step::Add(open)
            } else {
                let to = *g.choose(&[ItemState::Done, ItemState::Dropped, state]).unwrap();
                Step::Set { pick: usize::arbitrary(g), to }
            }
        }
    }

    /// Live items never exceed the open ones plus the bound, the open ones are never
    /// retired, and the working state with what it retired is the fold without retiring:
    /// a model that keeps every item (what `--all` must show).
    #[test]
    fn live_items_stay_within_open_plus_the_bound_and_all_equals_the_fold_that_keeps_everything() {
        fn prop(steps: Vec<Step>, extra: u8) -> bool {
            let mut j = Journal::new();
            let mut model: Vec<Item> = vec![];
            let mut next = 0;
            // Longer runs than quickcheck's default sizes, so the bound is crossed often.
            let steps = steps.iter().cycle().take(steps.len() * (2 + extra as usize % 4));
            for step in steps {
                let seq = j.seq;
                let time = j.time;
                match *step {
                    Step::Add(state) => {
                        let fields = ItemFields { state, ..ItemFields::working(&id(next), &format!("Item {}", id(next))) };
                        next += 1;
                        if j.add(&fields.id, state) != FoldNote::Folded {
                            return false;
                        }
                        model.push(Item {
                            fields,
                            created_at: time,
                            updated_at: time,
                            added_seq: seq,
                            changed_seq: seq,
                            promise_fired: None,
                            promised_by: None,
                        });
                    }
                    Step::Set { pick, to } => {
                        if j.state.checklist.items.is_empty() {
                            continue;
                        }
                        let target = j.state.checklist.items[pick % j.state.checklist.items.len()].fields.id.clone();
                        if j.set(&target, to) != FoldNote::Folded {
                            return false;
                        }
                        let m = model.iter_mut().find(|i| i.fields.id == target).unwrap();
                        m.fields.state = to;
                        (m.updated_at, m.changed_seq) = (time, seq);
                    }
                }
                let c = &j.state.checklist;
                let open = c.items.iter().filter(|i| i.fields.state.is_open()).count();
                let model_open = model.iter().filter(|i| i.fields.state.is_open()).count();
                if c.items.len() > open + CLOSED_ITEMS_KEPT || open != model_open || c.retired_total != j.retired.len() as u64 {
                    return false;
                }
            }
            RUNS_THAT_RETIRED.fetch_add(u32::from(!j.retired.is_empty()), std::sync::atomic::Ordering::Relaxed);
            let mut all: Vec<Item> = j.state.checklist.items.iter().chain(&j.retired).cloned().collect();
            all.sort_by_key(|i| i.added_seq);
            all == model
        }
        static RUNS_THAT_RETIRED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        quickcheck::QuickCheck::new().tests(100).max_tests(100).quickcheck(prop as fn(Vec<Step>, u8) -> bool);
        let retired = RUNS_THAT_RETIRED.load(std::sync::atomic::Ordering::Relaxed);
        assert!(retired >= 10, "only {retired} of 100 runs crossed the bound");
    }
}
