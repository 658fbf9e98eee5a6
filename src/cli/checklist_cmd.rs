//! `abcd checklist [add|set|show|render]`: the session's plan, kept in the journal.

use clap::{Args, Subcommand};
use serde_json::json;

use super::{EXIT_OK, EXIT_REFUSED};
use crate::checklist::item::{self, ChangeSet, Credential, ItemFields, ItemState};
use crate::checklist::render::{self, DEFAULT_BUDGET_CHARS, HOOK_OUTPUT_CAP_CHARS, MIN_BUDGET_CHARS};
use crate::checklist::time_input::parse_time_input;
use crate::event::{self, ItemAdded, ItemChanged, Scope, WriteRefused};
use crate::fold::checklist::check_item;
use crate::journal::format::{Actor, NewEvent};
use crate::journal::storage::RealDisk;
use crate::places;
use crate::store::Store;
use crate::store::reader::ChecklistView;

#[derive(Args, Debug)]
#[command(
    about = "The working copy's checklist: the plan that survives compaction and crashes",
    long_about = "The working copy's checklist: the plan that survives compaction and crashes.\n\n\
Every change is an fsynced journal event; `checklist.json` is folded from the journal. Bare \
`abcd checklist` lists every item. Times accept RFC 3339 (2026-12-01T09:00:00Z), a local clock \
time (09:00, its next occurrence) or a duration from now (+2h, +1d, +1h30m).\n\n\
A write that would store a secret (a token, a key, a password) is refused naming the field and \
the kind of secret, never any part of it. Exit codes: 0 ok, 1 failure, 2 refused."
)]
pub struct ChecklistArgs {
    #[command(subcommand)]
    action: Option<ChecklistAction>,
    /// Print JSON for scripts
    #[arg(long, global = true)]
    json: bool,
}

/// The `checklist` command's definition with only `verb`'s subcommand when it is `add` or
/// `set` (the whole definition otherwise): building the four subcommands' arguments is
/// most of a parse's cost, and `cli::checklist_call` needs only the one named.
pub(super) fn definition_for(verb: Option<&std::ffi::OsStr>) -> clap::Command {
    use clap::{Arg, ArgAction, Command};
    // As the derive defines `ChecklistArgs::json`; a test pins that both parses agree.
    let only = |verb: Command| {
        Command::new("checklist").arg(Arg::new("json").long("json").global(true).action(ArgAction::SetTrue)).subcommand(verb)
    };
    match verb.and_then(|v| v.to_str()) {
        Some("add") => only(AddArgs::augment_args(Command::new("add"))),
        Some("set") => only(SetArgs::augment_args(Command::new("set"))),
        _ => ChecklistArgs::augment_args(Command::new("checklist")),
    }
}

/// `abcd checklist add TITLE` and nothing else, with a title clap would take as it is (not
/// empty, not starting with `-`), read without clap: building even the `add` subcommand's
/// definition and parsing with it took 0.11 ms of a 1.6 ms add in a timing loop here,
/// and this is the form agents run most. `None` for anything else. A test pins that clap
/// parses every line taken here the same way.
pub(super) fn plain_add(args: &[std::ffi::OsString]) -> Option<ChecklistArgs> {
    let [_, checklist, add, title] = args else {
        return None;
    };
    let title = title.to_str()?;
    if checklist != "checklist" || add != "add" || title.is_empty() || title.starts_with('-') {
        return None;
    }
    let credential = CredentialArgs { credential_kind: None, credential_scope: None, credential_expiry: None };
    let add = AddArgs { title: title.to_owned(), waits_on: None, next_look: None, promise: None, owner_refs: vec![], credential };
    Some(ChecklistArgs { action: Some(ChecklistAction::Add(add)), json: false })
}

#[derive(Subcommand, Debug)]
enum ChecklistAction {
    /// Add an item (state `working`); prints its id
    Add(AddArgs),
    /// Change an item's fields; an empty value ("") clears an optional field
    Set(SetArgs),
    /// Show one item in full
    Show { id: String },
    /// The checklist as hooks inject it, within a character budget
    Render {
        /// Characters at most, 200 to 10000 (default 9500: the host's 10,000 minus a margin of 500)
        #[arg(long, default_value_t = DEFAULT_BUDGET_CHARS)]
        budget: usize,
    },
}

#[derive(Args, Debug)]
struct AddArgs {
    /// 1 to 200 characters on one line
    #[arg(allow_hyphen_values = true)]
    title: String,
    /// A record id, pr:<n>, person:<role> or slot:<kind>; makes the item `waiting`
    #[arg(long, allow_hyphen_values = true, value_name = "X")]
    waits_on: Option<String>,
    /// When to look again (RFC 3339, 09:00, +2h)
    #[arg(long, allow_hyphen_values = true, value_name = "T")]
    next_look: Option<String>,
    /// "<trigger> => <act>"
    #[arg(long, allow_hyphen_values = true, value_name = "PROMISE")]
    promise: Option<String>,
    /// A branch, pull request (pr:<n>) or record this item is about; repeatable
    #[arg(long = "owner-ref", allow_hyphen_values = true, value_name = "R")]
    owner_refs: Vec<String>,
    #[command(flatten)]
    credential: CredentialArgs,
}

#[derive(Args, Debug)]
struct CredentialArgs {
    /// The kind of credential the item needs (never its value): github_token, gitlab_token, cloud_key, api_key, ssh_key, oauth_token, database_password, signing_key, other
    #[arg(long, allow_hyphen_values = true, value_name = "KIND", requires = "credential_scope")]
    credential_kind: Option<String>,
    /// What it may do: read, write, admin, repo, org, deploy, ci, publish, personal
    #[arg(long, allow_hyphen_values = true, value_name = "SCOPE", requires = "credential_kind")]
    credential_scope: Option<String>,
    /// When it expires (RFC 3339, 09:00, +2h)
    #[arg(long, allow_hyphen_values = true, value_name = "T", requires = "credential_kind")]
    credential_expiry: Option<String>,
}

#[derive(Args, Debug)]
struct SetArgs {
    id: String,
    /// working, waiting, done or dropped
    #[arg(long, value_name = "S")]
    state: Option<String>,
    #[arg(long, allow_hyphen_values = true)]
    title: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "X")]
    waits_on: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "T")]
    next_look: Option<String>,
    #[arg(long, allow_hyphen_values = true)]
    promise: Option<String>,
    /// Add a ref; repeatable
    #[arg(long = "owner-ref", allow_hyphen_values = true, value_name = "R")]
    owner_refs: Vec<String>,
    /// Remove every owner ref first
    #[arg(long)]
    clear_owner_refs: bool,
    #[command(flatten)]
    credential: CredentialArgs,
    /// Remove the credential
    #[arg(long, conflicts_with = "credential_kind")]
    clear_credential: bool,
}

/// A refusal: what was refused, why, and what to do instead. Never carries a value.
struct Refusal(String);

pub fn run(args: ChecklistArgs) -> anyhow::Result<i32> {
    let cwd = std::env::current_dir()?;
    let (paths, scope) = places::working_copy_journal(&cwd)?;
    let store = Store::new(places::open_journal_for_verb(RealDisk::shared(), paths.clone())?);
    let json_out = args.json;
    let result = match args.action {
        None => Ok(list(&store, json_out)),
        Some(ChecklistAction::Show { id }) => show(&store, &id, json_out),
        Some(ChecklistAction::Render { budget }) => render_cmd(&store, budget, json_out),
        Some(ChecklistAction::Add(a)) => add(&store, &scope, a, json_out),
        Some(ChecklistAction::Set(s)) => set(&store, &scope, s, json_out),
    };
    match result {
        Ok(code) => Ok(code),
        Err(Stop::Refused(Refusal(msg))) => {
            eprintln!("abcd: {msg}");
            Ok(EXIT_REFUSED)
        }
        Err(Stop::Failed(e)) => Err(e),
    }
}

/// Why a verb stopped early: a refusal (exit 2) or a failure (the CLI's exit mapping).
enum Stop {
    Refused(Refusal),
    Failed(anyhow::Error),
}

impl From<Refusal> for Stop {
    fn from(r: Refusal) -> Stop {
        Stop::Refused(r)
    }
}

fn now_zoned() -> jiff::ZonedDateTime {
    jiff::ZonedDateTime::now()
}

fn actor() -> Actor {
    Actor::this_process(super::journal_cmd::session_from_env())
}

fn print_notes(view: &ChecklistView) {
    for n in &view.notes {
        eprintln!("abcd: {n}");
    }
}

fn list(store: &Store, json_out: bool) -> i32 {
    let view = store.checklist_view();
    if json_out {
        println!("{}", json!({"items": view.checklist.items, "notes": view.notes, "journal_seq": view.head_seq}));
    } else {
        print_notes(&view);
        let now = jiff::Timestamp::now();
        if view.checklist.items.is_empty() {
            println!("(no items; add one with `abcd checklist add \"<title>\"`)");
        }
        let mut items: Vec<_> = view.checklist.items.iter().collect();
        items.sort_by_key(|i| (i.fields.state, std::cmp::Reverse(i.added_seq)));
        for i in items {
            print!("{}", render::render_item(i, now));
        }
    }
    EXIT_OK
}

fn show(store: &Store, id: &str, json_out: bool) -> Result<i32, Stop> {
    let view = store.checklist_view();
    let Some(found) = view.checklist.get(id) else {
        return Err(unknown_id(id).into());
    };
    if json_out {
        println!("{}", serde_json::to_string(found).expect("plain data serializes"));
    } else {
        print_notes(&view);
        print!("{}", render::render_item(found, jiff::Timestamp::now()));
        println!("    added {}, last changed {}", found.created_at, found.updated_at);
    }
    Ok(EXIT_OK)
}

fn unknown_id(id: &str) -> Refusal {
    // The id is echoed only when it is a clean slug, so a pasted secret is never repeated.
    let named = if item::validate_id(id).is_ok() && crate::secrets::scan(id).is_none() { format!(" `{id}`") } else { String::new() };
    Refusal(format!("no checklist item{named}; run `abcd checklist` to see the ids"))
}

fn render_cmd(store: &Store, budget: usize, json_out: bool) -> Result<i32, Stop> {
    if !(MIN_BUDGET_CHARS..=HOOK_OUTPUT_CAP_CHARS).contains(&budget) {
        return Err(Refusal(format!("--budget must be {MIN_BUDGET_CHARS} to {HOOK_OUTPUT_CAP_CHARS} characters")).into());
    }
    let view = store.checklist_view();
    let text = render::render(&view.checklist.items, &view.notes, budget, jiff::Timestamp::now());
    if json_out {
        println!("{}", json!({"render": text, "chars": text.chars().count(), "budget": budget}));
    } else {
        print!("{text}");
    }
    Ok(EXIT_OK)
}

fn parse_time(field: &'static str, text: &str) -> Result<jiff::Timestamp, Refusal> {
    parse_time_input(field, text, &now_zoned()).map_err(|e| Refusal(format!("refused: {e}")))
}

fn credential_from(args: &CredentialArgs) -> Result<Option<Credential>, Refusal> {
    let (Some(kind), Some(scope)) = (&args.credential_kind, &args.credential_scope) else { return Ok(None) };
    let expiry = args.credential_expiry.as_deref().map(|t| parse_time("credential.expiry", t)).transpose()?;
    Ok(Some(Credential { kind: kind.clone(), scope: scope.clone(), expiry }))
}

/// What a write verb does once it holds the journal lock.
enum Outcome {
    Written(String),
    Refused(Refusal),
}

fn refused_event(verb: &str, field: &str, kind: &str) -> NewEvent {
    let data = WriteRefused { verb: verb.into(), field: field.replace('.', "_"), kind: kind.into() };
    NewEvent {
        kind: event::CHECKLIST_WRITE_REFUSED.into(),
        actor: actor(),
        data: serde_json::to_value(data).expect("plain data serializes"),
    }
}

/// Secrets first (refused and recorded, field and kind only), then the field rules
/// (refused, nothing recorded).
fn judge(verb: &str, fields: &ItemFields) -> Result<(), Box<(Option<NewEvent>, Refusal)>> {
    if let Some((field, kind)) = item::scannable_fields(fields).into_iter().find_map(|(f, t)| crate::secrets::scan(t).map(|k| (f, k))) {
        let msg = format!(
            "refused: {field} carries {} ({}); secrets never go into the checklist. Keep the secret in your credential store and record only what the item needs with --credential-kind and --credential-scope",
            kind.describe(),
            kind.name()
        );
        return Err(Box::new((Some(refused_event(verb, field, kind.name())), Refusal(msg))));
    }
    item::validate_item(fields).map_err(|e| Box::new((None, Refusal(format!("refused: {e}; nothing was written")))))?;
    // The fold applies the same check; this keeps the two from drifting apart.
    debug_assert!(check_item(fields).is_ok());
    Ok(())
}

fn add(store: &Store, scope: &Scope, a: AddArgs, json_out: bool) -> Result<i32, Stop> {
    let next_look = a.next_look.as_deref().map(|t| parse_time("next_look", t)).transpose()?;
    let credential = credential_from(&a.credential)?;
    let state = if a.waits_on.is_some() { ItemState::Waiting } else { ItemState::Working };
    let template = ItemFields {
        id: String::new(),
        title: a.title,
        state,
        waits_on: a.waits_on,
        next_look,
        promise: a.promise,
        owner_refs: a.owner_refs,
        credential,
    };
    let written = store.append_with(Some(scope), |state| {
        let mut fields = template.clone();
        fields.id = item::unique_id(&fields.title, |id| state.checklist.get(id).is_some());
        match judge("add", &fields) {
            Ok(()) => {
                let data = serde_json::to_value(ItemAdded { item: fields.clone() }).expect("plain data serializes");
                (vec![NewEvent { kind: event::CHECKLIST_ITEM_ADDED.into(), actor: actor(), data }], Outcome::Written(fields.id))
            }
            Err(refused) => {
                let (record, refusal) = *refused;
                (record.into_iter().collect(), Outcome::Refused(refusal))
            }
        }
    });
    finish(store, written, json_out)
}

fn set(store: &Store, scope: &Scope, s: SetArgs, json_out: bool) -> Result<i32, Stop> {
    let optional = |v: Option<String>| v.map(|t| if t.is_empty() { None } else { Some(t) });
    let next_look = match s.next_look.as_deref() {
        None => None,
        Some("") => Some(None),
        Some(t) => Some(Some(parse_time("next_look", t)?)),
    };
    let state = s
        .state
        .as_deref()
        .map(|t| {
            ItemState::parse(t)
                .ok_or_else(|| Refusal("refused: --state must be working, waiting, done or dropped; nothing was written".into()))
        })
        .transpose()?;
    let credential = if s.clear_credential { Some(None) } else { credential_from(&s.credential)?.map(Some) };
    let mut changes = ChangeSet {
        title: s.title,
        state,
        waits_on: optional(s.waits_on),
        next_look,
        promise: optional(s.promise),
        owner_refs: None,
        credential,
    };
    let id = s.id;
    let written = store.append_with(Some(scope), |folded| {
        let Some(current) = folded.checklist.get(&id) else {
            return (vec![], Outcome::Refused(unknown_id(&id)));
        };
        if s.clear_owner_refs || !s.owner_refs.is_empty() {
            let mut refs = if s.clear_owner_refs { vec![] } else { current.fields.owner_refs.clone() };
            refs.extend(s.owner_refs.iter().filter(|r| !current.fields.owner_refs.contains(r) || s.clear_owner_refs).cloned());
            changes.owner_refs = Some(refs);
        }
        if changes.is_empty() {
            return (
                vec![],
                Outcome::Refused(Refusal("refused: nothing to change; name a field to set (see `abcd checklist set --help`)".into())),
            );
        }
        let next = changes.apply_to(&current.fields);
        match judge("set", &next) {
            Ok(()) => {
                let data = serde_json::to_value(ItemChanged { id: id.clone(), changes: changes.clone() }).expect("plain data serializes");
                (vec![NewEvent { kind: event::CHECKLIST_ITEM_CHANGED.into(), actor: actor(), data }], Outcome::Written(id.clone()))
            }
            Err(refused) => {
                let (record, refusal) = *refused;
                (record.into_iter().collect(), Outcome::Refused(refusal))
            }
        }
    });
    finish(store, written, json_out)
}

fn finish(
    store: &Store,
    written: Result<crate::store::Written<Outcome>, crate::journal::JournalError>,
    json_out: bool,
) -> Result<i32, Stop> {
    let crate::store::Written { appended, outcome, after } = written.map_err(|e| Stop::Failed(e.into()))?;
    let after = match after {
        Ok(current) => Some(current),
        Err(e) => {
            eprintln!("abcd: the event is saved, but refreshing the projections failed ({e}); the next read rebuilds them");
            None
        }
    };
    match outcome {
        Outcome::Refused(r) => Err(r.into()),
        Outcome::Written(id) => {
            // Last-good is written only after a successful, validated and scanned write.
            if let Some(current) = after
                && current.degraded.is_none()
                && let Err(e) = store.write_last_good(&current)
            {
                eprintln!("abcd: the event is saved, but writing the last-good copy failed ({e})");
            }
            let seq = appended.last().map(|a| a.seq);
            if json_out {
                println!("{}", json!({"id": id, "seq": seq}));
            } else {
                println!("{id}");
            }
            Ok(EXIT_OK)
        }
    }
}
