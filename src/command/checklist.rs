//! The checklist verbs' work: `add` and `set` decide under the writer lock from the folded
//! state (a fresh id, the item exists, a secret is refused and recorded) and append; the
//! reads (`list`, `show`, `render`) come from the store's O(1) view. Nothing here prints.

use crate::checklist::item::{self, BlockerKind, CLOSED_ITEMS_KEPT, ChangeSet, Credential, ItemFields, ItemState, check_item};
use crate::places::Place;

use crate::checklist::render::{self, Context, HOOK_OUTPUT_CAP_CHARS, MIN_BUDGET_CHARS};
use crate::checklist::state::Item;
use crate::checklist::time_input::{CHECKLIST_MAX_AHEAD, parse_time_input};
use crate::event::{self, ItemAdded, ItemChanged, Scope, WriteRefused};
use crate::journal::format::{Actor, NewEvent};
use crate::refusal::{Refusal, RefusalKind as K};
use crate::store::Store;
use crate::store::reader::{ChecklistHistory, ChecklistView};

use super::CommandError;

/// A credential as a person names it: kind, scope, and an expiry still to be read.
#[derive(Clone, Debug, Default)]
pub struct CredentialInput {
    pub kind: Option<String>,
    pub scope: Option<String>,
    pub expiry: Option<String>,
}

/// `abcd checklist add`: the fields as typed; times are read against `now`.
#[derive(Clone, Debug)]
pub struct AddRequest {
    pub title: String,
    pub waits_on: Option<String>,
    pub next_look: Option<String>,
    pub promise: Option<String>,
    pub owner_refs: Vec<String>,
    pub credential: CredentialInput,
    /// `decision`, `hands`, `session` or `credential` (docs/sweep.md).
    pub blocker: Option<String>,
}

/// `abcd checklist set`: an empty text clears an optional field.
#[derive(Clone, Debug)]
pub struct SetRequest {
    pub id: String,
    pub state: Option<String>,
    pub title: Option<String>,
    pub waits_on: Option<String>,
    pub next_look: Option<String>,
    pub promise: Option<String>,
    pub owner_refs: Vec<String>,
    pub clear_owner_refs: bool,
    pub credential: CredentialInput,
    pub clear_credential: bool,
    /// As `add`'s; "" clears it.
    pub blocker: Option<String>,
}

/// A write that landed: the item's id, the seq of its event, and what could not be
/// refreshed after it (the event is saved either way; the next read rebuilds).
#[derive(Clone, Debug)]
pub struct ItemWritten {
    pub id: String,
    pub seq: Option<u64>,
    pub warnings: Vec<String>,
}

/// Who writes: this process, in the host session named by the environment, if any.
fn actor(session: Option<String>) -> Actor {
    Actor::this_process(session)
}

pub fn view(store: &Store) -> ChecklistView {
    store.checklist_view()
}

/// One item by id, with the view's notes.
pub fn show(store: &Store, id: &str) -> Result<(Item, ChecklistView), CommandError> {
    let view = store.checklist_view();
    match view.checklist.get(id) {
        Some(found) => Ok((found.clone(), view)),
        None => Err(not_held(store, "checklist show", id, view.checklist.retired_total > 0).into()),
    }
}

/// `abcd checklist --all`: every item ever added, retired ones included. Reads the whole
/// journal.
pub fn all(store: &Store) -> Result<ChecklistHistory, CommandError> {
    Ok(store.checklist_history()?)
}

/// What the session-start hook injects at `place` (the away block while away, then the
/// checklist), within `budget` characters, in its parts; and a warning when the away
/// record could not be read (then no block, as the hook reads it).
pub fn render_within(store: &Store, place: &Place, budget: usize, now: jiff::Timestamp) -> Result<(Context, Option<String>), CommandError> {
    if !(MIN_BUDGET_CHARS..=HOOK_OUTPUT_CAP_CHARS).contains(&budget) {
        return Err(Refusal::new(
            K::BadValue,
            "checklist render",
            format!("--budget must be {MIN_BUDGET_CHARS} to {HOOK_OUTPUT_CAP_CHARS} characters"),
        )
        .into());
    }
    let view = store.checklist_view();
    let record = super::hook::away::read(place);
    let block = record.holding(now).map(|w| crate::away::text::away_block(w, &|t| crate::clock::show(t)));
    // The away block is never cut (its rules are what the model works by while nobody
    // watches): a budget that cannot hold it and the smallest checklist is refused.
    if let Some(block) = &block {
        let least = block.chars().count() + render::BLOCK_SEP.chars().count() + MIN_BUDGET_CHARS;
        if budget < least {
            return Err(Refusal::new(
                K::BadValue,
                "checklist render",
                format!(
                    "--budget {budget} cannot hold the render while away: the away block takes {} characters and the \
                     checklist at least {MIN_BUDGET_CHARS}",
                    least - MIN_BUDGET_CHARS
                ),
            )
            .instead(format!("run `abcd checklist render --budget {least}` (or more)"))
            .into());
        }
    }
    Ok((render::context_parts(block.as_deref(), &view.checklist.items, &view.notes, budget, now), record.warning))
}

fn unknown_id(what: &str, id: &str) -> Refusal {
    Refusal::new(K::NotFound, what, format!("no checklist item{}", super::away::named(id))).instead("run `abcd checklist` to see the ids")
}

/// The refusal for an id the working state does not hold: a retired item's says so and
/// how to see it or start it again; else the id is unknown. The journal is read (whole)
/// only when the working state has retired items.
fn not_held(store: &Store, what: &str, id: &str, retired_any: bool) -> Refusal {
    let retired = if retired_any { store.checklist_history().ok().and_then(|h| h.retired(id).cloned()) } else { None };
    match retired {
        Some(found) => Refusal::new(
            K::NotFound,
            what,
            format!(
                "checklist item{} is {} and was retired from the working state after {CLOSED_ITEMS_KEPT} newer closed items (it is kept in the journal only)",
                super::away::named(id),
                found.fields.state.name(),
            ),
        )
        .instead("run `abcd checklist --all` to see it, or `abcd checklist add \"<title>\"` to start it again"),
        None => unknown_id(what, id),
    }
}

/// Now, in the machine's zone, read only when a time is given: learning the zone can walk
/// the zone database, which a write without a time never pays for.
pub type ZonedNow<'a> = &'a dyn Fn() -> Result<jiff::ZonedDateTime, CommandError>;

fn parse_time(field: &'static str, text: &str, now: ZonedNow) -> Result<jiff::Timestamp, CommandError> {
    parse_time_input(field, text, &now()?, CHECKLIST_MAX_AHEAD).map_err(|e| Refusal::new(K::BadValue, "checklist", e.to_string()).into())
}

fn credential_from(input: &CredentialInput, now: ZonedNow) -> Result<Option<Credential>, CommandError> {
    let (Some(kind), Some(scope)) = (&input.kind, &input.scope) else { return Ok(None) };
    let expiry = input.expiry.as_deref().map(|t| parse_time("credential.expiry", t, now)).transpose()?;
    Ok(Some(Credential { kind: kind.clone(), scope: scope.clone(), expiry }))
}

/// `--blocker`'s word as a kind; anything else is refused naming the four.
fn blocker_from(text: &str) -> Result<BlockerKind, CommandError> {
    BlockerKind::parse(text).ok_or_else(|| {
        let names: Vec<&str> = BlockerKind::ALL.iter().map(|k| k.name()).collect();
        CommandError::from(
            Refusal::new(
                K::BadValue,
                "checklist",
                format!(
                    "--blocker must be one of {} (a design decision, a step only the person's hands can do, another session, a credential)",
                    names.join(", ")
                ),
            )
            .nothing_written(),
        )
    })
}

/// What a write decides once it holds the journal lock.
enum Outcome {
    Written(String),
    Refused(Refusal),
    /// The working state holds no such item; whether it has retired any.
    NotHeld {
        id: String,
        retired_any: bool,
    },
}

fn refused_event(verb: &str, field: &str, kind: &str, session: Option<String>) -> NewEvent {
    let data = WriteRefused { verb: verb.into(), field: field.replace('.', "_"), kind: kind.into() };
    NewEvent {
        kind: event::CHECKLIST_WRITE_REFUSED.into(),
        actor: actor(session),
        data: serde_json::to_value(data).expect("plain data serializes"),
    }
}

/// Secrets first (refused and recorded, field and kind only), then the field rules
/// (refused, nothing recorded); with `promise_written`, the promise's grammar too (a
/// promise kept from before the grammar is left as it is by a write that does not set it).
fn judge(verb: &str, fields: &ItemFields, session: &Option<String>, promise_written: bool) -> Result<(), Box<(Option<NewEvent>, Refusal)>> {
    let what = format!("checklist {verb}");
    if let Some((field, kind)) = item::scannable_fields(fields).into_iter().find_map(|(f, t)| crate::secrets::scan(t).map(|k| (f, k))) {
        let refusal = Refusal::new(
            K::Secret,
            what,
            format!("{field} carries {} ({}); secrets never go into the checklist", kind.describe(), kind.name()),
        )
        .instead(
            "keep the secret in your credential store and record only what the item needs with --credential-kind and --credential-scope",
        );
        return Err(Box::new((Some(refused_event(verb, field, kind.name(), session.clone())), refusal)));
    }
    item::validate_item(fields).map_err(|e| Box::new((None, Refusal::new(K::BadValue, what.clone(), e.to_string()).nothing_written())))?;
    if promise_written && let Some(p) = &fields.promise {
        crate::checklist::promise::parse(p)
            .map_err(|e| Box::new((None, Refusal::new(K::BadValue, what.clone(), format!("promise: {e}")).nothing_written())))?;
    }
    // The fold applies the same check; this keeps the two from drifting apart.
    debug_assert!(check_item(fields).is_ok());
    Ok(())
}

/// `abcd checklist add`: a new `working` item (`waiting` when it waits on something).
pub fn add(store: &Store, scope: &Scope, request: AddRequest, now: ZonedNow, session: Option<String>) -> Result<ItemWritten, CommandError> {
    let next_look = request.next_look.as_deref().map(|t| parse_time("next_look", t, now)).transpose()?;
    let credential = credential_from(&request.credential, now)?;
    let blocker = request.blocker.as_deref().map(blocker_from).transpose()?;
    let state = if request.waits_on.is_some() { ItemState::Waiting } else { ItemState::Working };
    let template = ItemFields {
        id: String::new(),
        title: request.title,
        state,
        waits_on: request.waits_on,
        next_look,
        promise: request.promise,
        owner_refs: request.owner_refs,
        credential,
        blocker,
    };
    let written = store.append_with(Some(scope), |state| {
        let mut fields = template.clone();
        // A short number (docs/decisions.md); a slug only once the numbers are used up.
        fields.id = state.checklist.next_id().unwrap_or_else(|| item::unique_id(&fields.title, |id| state.checklist.get(id).is_some()));
        match judge("add", &fields, &session, true) {
            Ok(()) => {
                let data = serde_json::to_value(ItemAdded { item: fields.clone() }).expect("plain data serializes");
                (
                    vec![NewEvent { kind: event::CHECKLIST_ITEM_ADDED.into(), actor: actor(session.clone()), data }],
                    Outcome::Written(fields.id),
                )
            }
            Err(refused) => {
                let (record, refusal) = *refused;
                (record.into_iter().collect(), Outcome::Refused(refusal))
            }
        }
    });
    finish(store, written)
}

/// `abcd checklist set`: changes an item's fields.
pub fn set(store: &Store, scope: &Scope, request: SetRequest, now: ZonedNow, session: Option<String>) -> Result<ItemWritten, CommandError> {
    let optional = |v: Option<String>| v.map(|t| if t.is_empty() { None } else { Some(t) });
    let next_look = match request.next_look.as_deref() {
        None => None,
        Some("") => Some(None),
        Some(t) => Some(Some(parse_time("next_look", t, now)?)),
    };
    let state = request
        .state
        .as_deref()
        .map(|t| {
            ItemState::parse(t).ok_or_else(|| {
                CommandError::from(
                    Refusal::new(K::BadValue, "checklist set", "--state must be working, waiting, done or dropped").nothing_written(),
                )
            })
        })
        .transpose()?;
    let credential = if request.clear_credential { Some(None) } else { credential_from(&request.credential, now)?.map(Some) };
    let blocker = match request.blocker.as_deref() {
        None => None,
        Some("") => Some(None),
        Some(t) => Some(Some(blocker_from(t)?)),
    };
    let mut changes = ChangeSet {
        title: request.title,
        state,
        waits_on: optional(request.waits_on),
        next_look,
        promise: optional(request.promise),
        owner_refs: None,
        credential,
        blocker,
    };
    let promise_written = matches!(changes.promise, Some(Some(_)));
    let (id, owner_refs, clear_owner_refs) = (request.id, request.owner_refs, request.clear_owner_refs);
    let written = store.append_with(Some(scope), |folded| {
        let Some(current) = folded.checklist.get(&id) else {
            return (vec![], Outcome::NotHeld { id: id.clone(), retired_any: folded.checklist.retired_total > 0 });
        };
        if clear_owner_refs || !owner_refs.is_empty() {
            let mut refs = if clear_owner_refs { vec![] } else { current.fields.owner_refs.clone() };
            refs.extend(owner_refs.iter().filter(|r| !current.fields.owner_refs.contains(r) || clear_owner_refs).cloned());
            changes.owner_refs = Some(refs);
        }
        if changes.is_empty() {
            return (
                vec![],
                Outcome::Refused(
                    Refusal::new(K::NothingToChange, "checklist set", "nothing to change")
                        .instead("name a field to set (see `abcd checklist set --help`)"),
                ),
            );
        }
        let next = changes.apply_to(&current.fields);
        match judge("set", &next, &session, promise_written) {
            Ok(()) => {
                let data = serde_json::to_value(ItemChanged { id: id.clone(), changes: changes.clone() }).expect("plain data serializes");
                (
                    vec![NewEvent { kind: event::CHECKLIST_ITEM_CHANGED.into(), actor: actor(session.clone()), data }],
                    Outcome::Written(id.clone()),
                )
            }
            Err(refused) => {
                let (record, refusal) = *refused;
                (record.into_iter().collect(), Outcome::Refused(refusal))
            }
        }
    });
    finish(store, written)
}

fn finish(
    store: &Store,
    written: Result<crate::store::Written<Outcome>, crate::journal::JournalError>,
) -> Result<ItemWritten, CommandError> {
    let crate::store::Written { appended, outcome, after } = written?;
    let mut warnings = vec![];
    let after = match after {
        Ok(current) => Some(current),
        Err(e) => {
            warnings.push(format!(
                "the change is saved, but rewriting the files derived from the journal failed ({e}); the next read rebuilds them"
            ));
            None
        }
    };
    match outcome {
        Outcome::Refused(r) => {
            // A refusal recorded in the journal is still a refusal; its warnings go with it.
            Err(r.after_warnings(warnings).into())
        }
        Outcome::NotHeld { id, retired_any } => {
            // Told after the lock is let go: reading the whole journal holds up no writer.
            Err(not_held(store, "checklist set", &id, retired_any).nothing_written().after_warnings(warnings).into())
        }
        Outcome::Written(id) => {
            // Last-good is written only after a successful, validated and scanned write.
            if let Some(current) = after
                && current.degraded.is_none()
                && let Err(e) = store.write_last_good(&current)
            {
                warnings.push(format!("the event is saved, but writing the last-good copy failed ({e})"));
            }
            Ok(ItemWritten { id, seq: appended.last().map(|a| a.seq), warnings })
        }
    }
}
