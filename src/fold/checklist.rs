//! The checklist fold: `checklist.*` events in, the checklist out. Every event's data is
//! validated and scanned again here, so a line appended behind abcd's back (by a shell
//! write, with a correct hash) can never bring an invalid field or a secret into a
//! projection or a render: it is skipped and named.

use crate::checklist::item::{self, refusal_words_are_clean};
pub use crate::checklist::item::{Rejection, check_item, refusal_is_clean};
pub use crate::checklist::state::{ChecklistState, Item, RefusalRecord};
use crate::event::{ItemAdded, ItemChanged, WriteRefused};
use crate::journal::format::Event;

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
    state.count_id(&added.item.id);
    touch(state, event);
    Ok(())
}

pub fn fold_changed(state: &mut ChecklistState, event: &Event, changed: &ItemChanged) -> Result<(), Rejection> {
    let Some(index) = state.items.iter().position(|i| i.fields.id == changed.id) else {
        // The id is only named if it is itself a clean slug: it came from the file.
        let named = item::validate_id(&changed.id).is_ok() && crate::secrets::scan(&changed.id).is_none();
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
