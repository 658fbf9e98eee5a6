//! `abcd checklist [add|set|show|render]`: parses, calls `command::checklist`, prints.

use clap::{Args, Subcommand};
use serde_json::json;

use super::EXIT_OK;
use crate::checklist::render::{self, DEFAULT_BUDGET_CHARS};
use crate::checklist::time_input::{CHECKLIST_MAX_AHEAD, ahead_rule};
use crate::command::CommandError;
use crate::command::checklist::{self, AddRequest, CredentialInput, ItemWritten, SetRequest};
use crate::host::session_from_env;
use crate::journal::storage::RealDisk;
use crate::places;
use crate::store::Store;
use crate::store::reader::ChecklistView;

#[derive(Args, Debug)]
#[command(
    about = "The working copy's checklist: the plan that survives compaction and crashes",
    long_about = "The working copy's checklist: the plan that survives compaction and crashes.\n\n\
Every change is an fsynced journal event; `checklist.json` is rebuilt from the journal. Bare \
`abcd checklist` lists the working state: every open item and the newest closed ones (closed \
items past the newest 30 are retired from it and kept in the journal); `abcd checklist --all` \
lists every item ever added, reading the whole journal. Times accept RFC 3339 (2026-12-01T09:00:00Z), a local clock \
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
    /// List every item ever added, closed items retired from the working state included
    /// (reads the whole journal)
    #[arg(long)]
    all: bool,
}

/// The `checklist` command's definition with only `verb`'s subcommand when it is `add` or
/// `set` (the whole definition otherwise): building the four subcommands' arguments is
/// most of a parse's cost, and `cli::checklist_call` needs only the one named.
pub(super) fn definition_for(verb: Option<&std::ffi::OsStr>) -> clap::Command {
    use clap::{Arg, ArgAction, Command};
    // As the derive defines `ChecklistArgs::json` and `all`; a test pins that both parses agree.
    let only = |verb: Command| {
        Command::new("checklist")
            .arg(Arg::new("json").long("json").global(true).action(ArgAction::SetTrue))
            .arg(Arg::new("all").long("all").action(ArgAction::SetTrue))
            .subcommand(verb)
    };
    match verb.and_then(|v| v.to_str()) {
        Some("add") => only(AddArgs::augment_args(Command::new("add"))),
        Some("set") => only(SetArgs::augment_args(Command::new("set"))),
        _ => ChecklistArgs::augment_args(Command::new("checklist")),
    }
}

/// `abcd checklist add TITLE` and nothing else, with a title clap would take as it is (not
/// empty, not starting with `-`), read without clap: building even the `add` subcommand's
/// definition and parsing with it is a visible part of an add, and this is the form agents
/// run most. `None` for anything else. A test pins that clap
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
    let add =
        AddArgs { title: title.to_owned(), waits_on: None, next_look: None, promise: None, owner_refs: vec![], credential, blocker: None };
    Some(ChecklistArgs { action: Some(ChecklistAction::Add(add)), json: false, all: false })
}

#[derive(Subcommand, Debug)]
enum ChecklistAction {
    /// Add an item (state `working`); prints its id
    Add(AddArgs),
    /// Change an item's fields; an empty value ("") clears an optional field
    Set(SetArgs),
    /// Show one item in full
    Show {
        /// The item's id, as `abcd checklist` lists it
        id: String,
    },
    /// What the session-start hook injects: the away block while away, then the checklist, within a character budget
    Render {
        /// Characters at most, 200 to 10000 (default 9500: the host's 10,000 minus a margin of 500); while away, at least the away block (as --stats counts it) plus 200
        #[arg(long, default_value_t = DEFAULT_BUDGET_CHARS)]
        budget: usize,
        /// Print the characters each part takes instead of the text (the away block counts its blank line)
        #[arg(long)]
        stats: bool,
    },
    /// Whether the person answered every trade-off tied to an item (`abcd decide --tradeoff KIND --item <id>`): exit 0 yes (also when none is tied), 1 no, listing each unanswered one with the command that answers it
    DesignDone {
        /// The item's id, as `abcd checklist` lists it
        id: String,
    },
}

/// A time option's help, its limit worded from the constant the refusal names.
fn time_help(what: &str) -> String {
    format!("{what}: +2h, 09:00 (its next occurrence) or an RFC 3339 time; {}", ahead_rule(CHECKLIST_MAX_AHEAD))
}

#[derive(Args, Debug)]
struct AddArgs {
    /// 1 to 200 characters on one line
    #[arg(allow_hyphen_values = true)]
    title: String,
    /// A record id, pr:<n>, person:<role> or slot:<kind>; makes the item `waiting`
    #[arg(long, allow_hyphen_values = true, value_name = "X")]
    waits_on: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "T", help = time_help("When to look again"))]
    next_look: Option<String>,
    /// A next item owed when something happens: "<trigger> => <title>", the trigger one of
    /// pr:N merged, pr:N closed, at <RFC 3339 time>, branch:NAME pushed, ci:BRANCH green
    /// (docs/promises.md)
    #[arg(long, allow_hyphen_values = true, value_name = "PROMISE")]
    promise: Option<String>,
    /// A branch, pull request (pr:<n>) or record this item is about; repeatable
    #[arg(long = "owner-ref", allow_hyphen_values = true, value_name = "R")]
    owner_refs: Vec<String>,
    #[command(flatten)]
    credential: CredentialArgs,
    /// What blocks it that the away sweep collects: decision (a design decision only the person can make), hands (a step only their hands can do), session (another session), credential (missing or expiring)
    #[arg(long, allow_hyphen_values = true, value_name = "KIND")]
    blocker: Option<String>,
}

#[derive(Args, Debug)]
struct CredentialArgs {
    /// The kind of credential the item needs (never its value): github_token, gitlab_token, cloud_key, api_key, ssh_key, oauth_token, database_password, signing_key, other
    #[arg(long, allow_hyphen_values = true, value_name = "KIND", requires = "credential_scope")]
    credential_kind: Option<String>,
    /// What it may do: read, write, admin, repo, org, deploy, ci, publish, personal
    #[arg(long, allow_hyphen_values = true, value_name = "SCOPE", requires = "credential_kind")]
    credential_scope: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "T", requires = "credential_kind", help = time_help("When it expires"))]
    credential_expiry: Option<String>,
}

#[derive(Args, Debug)]
struct SetArgs {
    /// The item's id, as `abcd checklist` lists it
    id: String,
    /// working, waiting, done or dropped
    #[arg(long, value_name = "S")]
    state: Option<String>,
    /// A new title: 1 to 200 characters on one line
    #[arg(long, allow_hyphen_values = true)]
    title: Option<String>,
    /// A record id, pr:<n>, person:<role> or slot:<kind>; "" clears it
    #[arg(long, allow_hyphen_values = true, value_name = "X")]
    waits_on: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "T", help = format!("{}; \"\" clears it", time_help("When to look again")))]
    next_look: Option<String>,
    /// "<trigger> => <title of the next item>" (as `add --promise`); "" clears it
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
    /// decision, hands, session or credential (what the away sweep collects); "" clears it
    #[arg(long, allow_hyphen_values = true, value_name = "KIND")]
    blocker: Option<String>,
}

pub fn run(args: ChecklistArgs) -> anyhow::Result<i32> {
    let place = places::Place::here()?;
    let (paths, scope) = place.working_copy()?;
    let store = Store::new(place.open_scoped_for_verb(RealDisk::shared(), paths.clone(), &scope)?);
    let json_out = args.json;
    if args.all && args.action.is_some() {
        return Err(CommandError::from(
            crate::refusal::Refusal::new(crate::refusal::RefusalKind::BadValue, "checklist", "--all goes with the bare listing only")
                .instead("run `abcd checklist --all` (the item's id then works with `show` and `set` while it is in the working state)"),
        )
        .into());
    }
    match args.action {
        None if args.all => list_all(&store, json_out)?,
        None => list(&store, json_out)?,
        Some(ChecklistAction::Show { id }) => show(&store, &id, json_out)?,
        Some(ChecklistAction::DesignDone { id }) => return super::design_done_cmd::run_design_done(&place, &id, json_out),
        Some(ChecklistAction::Render { budget, stats }) => {
            let (context, warning) = checklist::render_within(&store, &place, budget, crate::clock::now()?)?;
            if let Some(w) = warning {
                errln!("abcd: {w}");
            }
            let text = context.text();
            if stats {
                print_stats(&context, budget, json_out);
            } else if json_out {
                outln!("{}", json!({"render": text, "chars": text.chars().count(), "budget": budget}));
            } else {
                out!("{text}");
            }
        }
        Some(ChecklistAction::Add(a)) => {
            let written = checklist::add(&store, &scope, a.into_request(), &|| Ok(crate::clock::now_zoned()?), session_from_env())?;
            print_written(&written, json_out);
        }
        Some(ChecklistAction::Set(s)) => {
            let written = checklist::set(&store, &scope, s.into_request(), &|| Ok(crate::clock::now_zoned()?), session_from_env())?;
            print_written(&written, json_out);
        }
    }
    Ok(EXIT_OK)
}

impl CredentialArgs {
    fn into_input(self) -> CredentialInput {
        CredentialInput { kind: self.credential_kind, scope: self.credential_scope, expiry: self.credential_expiry }
    }
}

impl AddArgs {
    fn into_request(self) -> AddRequest {
        AddRequest {
            title: self.title,
            waits_on: self.waits_on,
            next_look: self.next_look,
            promise: self.promise,
            owner_refs: self.owner_refs,
            credential: self.credential.into_input(),
            blocker: self.blocker,
        }
    }
}

impl SetArgs {
    fn into_request(self) -> SetRequest {
        SetRequest {
            id: self.id,
            state: self.state,
            title: self.title,
            waits_on: self.waits_on,
            next_look: self.next_look,
            promise: self.promise,
            owner_refs: self.owner_refs,
            clear_owner_refs: self.clear_owner_refs,
            credential: self.credential.into_input(),
            clear_credential: self.clear_credential,
            blocker: self.blocker,
        }
    }
}

fn print_notes(view: &ChecklistView) {
    for n in &view.notes {
        errln!("abcd: {n}");
    }
}

fn list(store: &Store, json_out: bool) -> anyhow::Result<()> {
    let view = checklist::view(store);
    let retired = view.checklist.retired_total;
    if json_out {
        let mut listing = json!({"items": view.checklist.items, "notes": view.notes, "journal_seq": view.head_seq});
        if retired > 0 {
            listing["retired_total"] = json!(retired);
        }
        outln!("{listing}");
    } else {
        print_notes(&view);
        let now = crate::clock::now()?;
        if view.checklist.items.is_empty() {
            outln!("(no items; add one with `abcd checklist add \"<title>\"`)");
        }
        print_items(&view.checklist.items, now);
        if retired > 0 {
            outln!(
                "({retired} closed item{} retired from the working state; run `abcd checklist --all` to list every item)",
                plural(retired)
            );
        }
    }
    Ok(())
}

/// Items as the listing orders them: by state, newest first.
fn print_items<'a>(items: impl IntoIterator<Item = &'a crate::fold::checklist::Item>, now: jiff::Timestamp) {
    let mut items: Vec<_> = items.into_iter().collect();
    items.sort_by_key(|i| (i.fields.state, std::cmp::Reverse(i.added_seq)));
    for i in items {
        out!("{}", render::render_item(i, now));
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `--all`: the working state as the bare listing shows it, then the retired items. In
/// JSON, every item in the order added, each marked `retired` or not.
fn list_all(store: &Store, json_out: bool) -> anyhow::Result<()> {
    let history = checklist::all(store)?;
    let (working, retired) = (&history.working.items, &history.retired);
    if json_out {
        let mut items: Vec<(&crate::fold::checklist::Item, bool)> =
            working.iter().map(|i| (i, false)).chain(retired.iter().map(|i| (i, true))).collect();
        items.sort_by_key(|(i, _)| i.added_seq);
        let items: Vec<serde_json::Value> = items
            .into_iter()
            .map(|(i, retired)| {
                let mut v = serde_json::to_value(i).expect("plain data serializes");
                v["retired"] = json!(retired);
                v
            })
            .collect();
        outln!("{}", json!({"items": items, "notes": history.notes, "journal_seq": history.head_seq, "retired_total": retired.len()}));
    } else {
        for n in &history.notes {
            errln!("abcd: {n}");
        }
        let now = crate::clock::now()?;
        if working.is_empty() && retired.is_empty() {
            outln!("(no items; add one with `abcd checklist add \"<title>\"`)");
        }
        print_items(working, now);
        if !retired.is_empty() {
            let n = retired.len() as u64;
            outln!("{n} closed item{} retired from the working state (kept in the journal only):", plural(n));
            print_items(retired, now);
        }
    }
    Ok(())
}

fn show(store: &Store, id: &str, json_out: bool) -> Result<(), CommandError> {
    let (found, view) = checklist::show(store, id)?;
    if json_out {
        outln!("{}", serde_json::to_string(&found).expect("plain data serializes"));
    } else {
        print_notes(&view);
        out!("{}", render::render_item(&found, crate::clock::now()?));
        outln!("    added {}, last changed {}", found.created_at, found.updated_at);
    }
    Ok(())
}

/// `render --stats`: characters per part, in the order the parts are printed.
fn print_stats(context: &render::Context, budget: usize, json_out: bool) {
    let r = &context.render;
    let chars = |t: &str| t.chars().count();
    let parts = [
        ("away_block", chars(&context.away)),
        ("header", chars(&r.header)),
        ("notes", chars(&r.notes)),
        ("working", chars(&r.working)),
        ("waiting", chars(&r.waiting)),
        ("done", chars(&r.done)),
        ("footer", chars(&r.footer)),
    ];
    let total = chars(&context.text());
    if json_out {
        let mut map: serde_json::Map<String, serde_json::Value> = parts.iter().map(|(k, v)| ((*k).to_string(), json!(v))).collect();
        map.insert("total".into(), json!(total));
        map.insert("budget".into(), json!(budget));
        outln!("{}", serde_json::Value::Object(map));
    } else {
        for (name, n) in parts {
            outln!("{:<10} {n:>5}", name.replace('_', " "));
        }
        outln!("{:<10} {total:>5} of {budget}", "total");
    }
}

fn print_written(written: &ItemWritten, json_out: bool) {
    for w in &written.warnings {
        errln!("abcd: {w}");
    }
    if json_out {
        outln!("{}", json!({"id": written.id, "seq": written.seq}));
    } else {
        outln!("{}", written.id);
    }
}
