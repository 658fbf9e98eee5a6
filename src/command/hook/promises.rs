//! Promises checked at a session start, at a prompt (a wake's prompt included) and at a
//! stop (docs/promises.md): the facts read (the last forge listing, fresh at an away stop
//! or from its cache; git's remote-tracking refs; the clock), the due promises decided by
//! the pure `checklist::promise::due`, and each recorded once, under the writer lock, as
//! `checklist.promise_fired`.

use std::path::Path;

use serde_json::json;

use crate::checklist::item::ItemFields;
use crate::checklist::promise::{self, ForgeFacts, GitFacts};
use crate::event::{self, PromiseFired, Scope};
use crate::journal::format::{Actor, NewEvent};
use crate::owed::listing_cache;
use crate::store::Store;

/// A promise that fired here: the item it became.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fired {
    pub id: String,
    pub title: String,
    /// The seq of the `checklist.promise_fired` event that added it.
    pub added_seq: u64,
}

/// The branches of `branch:NAME pushed` promises that git's remote-tracking refs show.
fn git_facts(root: &Path, items: &[crate::checklist::state::Item]) -> GitFacts {
    let pushed = promise::branches_asked(items).into_iter().filter(|b| crate::git::branch::remote_tracking_exists(root, b)).collect();
    GitFacts { pushed }
}

/// Fires every due promise. `fresh` is a listing this hook just made (it is written to the
/// cache first); without one the cache is read. Returns what fired and a warning.
pub fn fire_due(
    store: &Store,
    scope: Option<&Scope>,
    root: &Path,
    actor: &Actor,
    now: jiff::Timestamp,
    fresh: Option<&ForgeFacts>,
    known: Option<&[crate::checklist::state::Item]>,
) -> (Vec<Fired>, Option<String>) {
    let tier = store.journal().paths().dir().to_path_buf();
    let mut warning = fresh.and_then(|f| listing_cache::write(&tier, f).err().map(|e| e.to_string()));
    // The items the caller already read (the lock decides again below), else the folded
    // state, not the checklist view: reading it writes no projection, so a session start
    // that reads its kept render stays a read.
    let current;
    let items = match known {
        Some(items) => items,
        None => match store.current_state() {
            Ok(read) => {
                current = read;
                &current.state.checklist.items
            }
            Err(_) => return (Vec::new(), warning),
        },
    };
    if !promise::any_armed(items) {
        return (Vec::new(), warning);
    }
    let forge = fresh.cloned().or_else(|| listing_cache::read(&tier));
    let git = git_facts(root, items);
    if promise::due(items, forge.as_ref(), &git, now).is_empty() {
        return (Vec::new(), warning);
    }
    // Decided again from the state under the lock: two hooks never record one firing twice.
    let written = store.append_with(scope, |state| {
        let mut checklist = state.checklist.clone();
        let mut events = Vec::new();
        let mut fired = Vec::new();
        for due in promise::due(&state.checklist.items, forge.as_ref(), &git, now) {
            let Some(id) = checklist.next_id() else { break };
            checklist.count_id(&id);
            let item = ItemFields { owner_refs: promise::next_owner_refs(&due.trigger), ..ItemFields::working(&id, &due.next_title) };
            if crate::checklist::item::check_item(&item).is_err() {
                continue;
            }
            let data = PromiseFired { id: due.id, trigger: due.trigger, item };
            fired.push(Fired { id: id.clone(), title: data.item.title.clone(), added_seq: 0 });
            events.push(NewEvent { kind: event::CHECKLIST_PROMISE_FIRED.into(), actor: actor.clone(), data: json!(data) });
        }
        (events, fired)
    });
    match written {
        Ok(w) => {
            // Each firing is one event, appended in order: its seq is the item's added seq.
            let mut fired = w.outcome;
            for (f, appended) in fired.iter_mut().zip(&w.appended) {
                f.added_seq = appended.seq;
            }
            if let Err(e) = w.after {
                warning = Some(format!(
                    "the {} event is saved but the files derived from the journal were not rewritten: {e}",
                    event::CHECKLIST_PROMISE_FIRED
                ));
            }
            (fired, warning)
        }
        Err(e) => (Vec::new(), Some(format!("the {} event was not recorded: {e}", event::CHECKLIST_PROMISE_FIRED))),
    }
}

/// One line telling the session which promises fired, when any did.
pub fn fired_note(fired: &[Fired]) -> Option<String> {
    (!fired.is_empty()).then(|| {
        let items: Vec<String> = fired.iter().map(|f| format!("{}: {}", f.id, f.title)).collect();
        format!("abcd: a promise fired; its item is the next work: {}.", items.join("; "))
    })
}
