//! The checklist's part of the owed set (SPEC §6), read from the folded items: what the
//! stop hook owes from the plan, and that part summed up when the plan is written, so a
//! stop reads a few lines, not the plan ([`ChecklistOwed`], docs/decisions.md "Issue 37,
//! the Stop's owed set from the plan's summary").

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::checklist::item::ItemState;
use crate::checklist::state::Item;
use crate::verdict::stop::{Owed, OwedPart};

/// Working items, and waiting items whose `next_look` is at or before `now`; and the
/// `next_look` of every waiting item. Done and dropped items are never owed. Each owed item
/// carries the seq that added it and whether a fired promise made it: the verdict names
/// them in that order (promised first, then oldest first), whatever order they come in.
pub fn checklist_owed(items: &[Item], now: Timestamp) -> (Vec<Owed>, Vec<Timestamp>) {
    let mut owed = Vec::new();
    let mut looks = Vec::new();
    for item in items {
        let fields = &item.fields;
        let (id, title, added_seq) = (fields.id.clone(), fields.title.clone(), item.added_seq);
        match fields.state {
            ItemState::Working => owed.push(Owed::Working { id, title, added_seq, promised: item.promised_by.is_some() }),
            ItemState::Waiting => {
                if let Some(look) = fields.next_look {
                    looks.push(look);
                    if look <= now {
                        owed.push(Owed::LookDue { id, title, added_seq });
                    }
                }
            }
            ItemState::Done | ItemState::Dropped => {}
        }
    }
    (owed, looks)
}

/// The checklist's part of the owed set as it stands from `as_of` until `until`, the first
/// waiting item's look after `as_of` (from then that item is owed too). Written beside the
/// plan at every write of it; a stop whose clock falls in that span reads this, not the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChecklistOwed {
    pub as_of: Timestamp,
    pub until: Option<Timestamp>,
    pub part: OwedPart,
}

/// What a stop reads of the checklist's part at its clock: the part, and the waiting looks
/// the deadline reads (every one not yet passed is at `until` or later, and the deadline
/// takes the earliest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChecklistPartAt {
    pub part: OwedPart,
    pub looks: Vec<Timestamp>,
}

impl ChecklistOwed {
    /// The part of `items` as of `as_of`.
    pub fn of(items: &[Item], as_of: Timestamp) -> ChecklistOwed {
        let (owed, looks) = checklist_owed(items, as_of);
        let until = looks.into_iter().filter(|&look| look > as_of).min();
        ChecklistOwed { as_of, until, part: OwedPart::of(&owed) }
    }

    /// The part at `now`, when this summary holds then: `now` is not before `as_of` (a clock
    /// set back could make a passed look future again) and not at or past `until`, and the
    /// part is one abcd could have written, each item it names passing what a checklist
    /// item with that id and title passes (`item::check_item`: the secret scan among it),
    /// since the names reach the Stop's reason. `None`: the caller reads the plan.
    pub fn at(&self, now: Timestamp) -> Option<ChecklistPartAt> {
        let holds = now >= self.as_of
            && self.until.is_none_or(|until| now < until)
            && self.part.count <= crate::checklist::item::ITEMS_MAX as u64
            && self.part.is_consistent()
            && self.part.first.iter().all(named_as_an_item_is);
        holds.then(|| ChecklistPartAt { part: self.part.clone(), looks: self.until.into_iter().collect() })
    }

    /// The part of `items` at `now`, read from every item: what [`ChecklistOwed::at`]
    /// stands for.
    pub fn read_at(items: &[Item], now: Timestamp) -> ChecklistPartAt {
        ChecklistOwed::read_at_with(items, Vec::new(), now)
    }

    /// [`ChecklistOwed::read_at`] with `more` owed beside the items (what a promise fired at
    /// this stop made, not yet in the items read).
    pub fn read_at_with(items: &[Item], more: Vec<Owed>, now: Timestamp) -> ChecklistPartAt {
        let (mut owed, looks) = checklist_owed(items, now);
        owed.extend(more);
        ChecklistPartAt { part: OwedPart::of(&owed), looks }
    }
}

/// Whether an owed item named in a summary is one of the checklist's, named as a checklist
/// item may be.
fn named_as_an_item_is(owed: &Owed) -> bool {
    match owed {
        Owed::Working { id, title, .. } | Owed::LookDue { id, title, .. } => {
            crate::checklist::item::check_item(&crate::checklist::item::ItemFields::working(id, title)).is_ok()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checklist::item::ItemFields;
    use jiff::SignedDuration;

    fn item(id: &str, state: ItemState, next_look: Option<Timestamp>, added_seq: u64) -> Item {
        let at: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        Item {
            fields: ItemFields { state, next_look, ..ItemFields::working(id, id) },
            created_at: at,
            updated_at: at,
            added_seq,
            changed_seq: added_seq,
            promise_fired: None,
            promised_by: None,
        }
    }

    /// The summary stands for the plan from its `as_of` to just before its `until`, the
    /// first waiting look after it: inside, it is what every item read at that time gives;
    /// at `until` (a look falls due), or before `as_of` (a clock set back), it is not used.
    #[test]
    fn the_summary_holds_from_as_of_until_the_next_look_and_no_longer() {
        let as_of: Timestamp = "2026-05-01T12:00:00Z".parse().unwrap();
        let second = SignedDuration::from_secs(1);
        let until = as_of + SignedDuration::from_hours(2);
        let items = [
            item("w", ItemState::Working, None, 1),
            item("due", ItemState::Waiting, Some(as_of - second), 2),
            item("soon", ItemState::Waiting, Some(until), 3),
            item("later", ItemState::Waiting, Some(until + SignedDuration::from_hours(1)), 4),
            item("done", ItemState::Done, None, 5),
        ];
        let summary = ChecklistOwed::of(&items, as_of);
        assert_eq!((summary.as_of, summary.until, summary.part.count), (as_of, Some(until), 2));
        for now in [as_of, as_of + second, until - second] {
            let at = summary.at(now).expect("inside the span");
            let read = ChecklistOwed::read_at(&items, now);
            assert_eq!(at.part, read.part, "at {now}");
            // The deadline reads the earliest future look: the same from both.
            let earliest = |looks: &[Timestamp]| looks.iter().copied().filter(|&l| l > now).min();
            assert_eq!(earliest(&at.looks), earliest(&read.looks), "at {now}");
        }
        assert_eq!(summary.at(until), None, "the look of `soon` falls due at until");
        assert_eq!(ChecklistOwed::read_at(&items, until).part.count, 3);
        assert_eq!(summary.at(as_of - second), None, "a clock set back is not believed");
        // No waiting look ahead: the summary holds from as_of on.
        let working = ChecklistOwed::of(&items[..2], as_of);
        assert_eq!(working.until, None);
        assert!(working.at(as_of + SignedDuration::from_hours(24 * 365)).is_some());
    }

    /// A summary holding an item of the world's part, or one abcd could not have made, is
    /// not used.
    #[test]
    fn a_summary_abcd_could_not_have_written_is_not_used() {
        let as_of: Timestamp = "2026-05-01T12:00:00Z".parse().unwrap();
        let items = [item("w", ItemState::Working, None, 1)];
        let mut summary = ChecklistOwed::of(&items, as_of);
        assert!(summary.at(as_of).is_some());
        summary.part.first[0] = Owed::Unpushed { branch: "main".into(), next_act_is_push: true };
        assert_eq!(summary.at(as_of), None);
        let mut summary = ChecklistOwed::of(&items, as_of);
        summary.part.count = 0;
        assert_eq!(summary.at(as_of), None);
        // More items than a checklist holds: both sides of the bound.
        let many: Vec<Item> = (0..6).map(|i| item(&format!("w{i}"), ItemState::Working, None, i)).collect();
        let mut summary = ChecklistOwed::of(&many, as_of);
        summary.part.count = crate::checklist::item::ITEMS_MAX as u64;
        summary.part.capped = summary.part.count;
        assert!(summary.at(as_of).is_some(), "a full checklist");
        summary.part.count += 1;
        summary.part.capped += 1;
        assert_eq!(summary.at(as_of), None, "one past ITEMS_MAX");
    }

    /// The items a summary names reach the Stop's reason: a name no checklist item could
    /// carry (a secret in its title, an id that is no slug) makes the summary unused, and
    /// the plan, whose items were checked when added, decides.
    #[test]
    fn a_summary_naming_what_no_item_could_carry_is_not_used() {
        let as_of: Timestamp = "2026-05-01T12:00:00Z".parse().unwrap();
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        for (what, id, title) in
            [("a secret in a title", "w", format!("Ship {token}")), ("an id that is no slug", "W W", "Ship".to_string())]
        {
            let forged = vec![Owed::Working { id: id.into(), title, added_seq: 1, promised: false }];
            let summary = ChecklistOwed { as_of, until: None, part: OwedPart::of(&forged) };
            assert!(summary.part.is_consistent(), "{what}: the part is otherwise one abcd could write");
            assert_eq!(summary.at(as_of), None, "{what}");
        }
        let plain = ChecklistOwed::of(&[item("w", ItemState::Working, None, 1)], as_of);
        assert!(plain.at(as_of).is_some(), "a plain name is used");
    }
}
