//! `abcd mode [autonomous|back|queue]` and `abcd decide`: the away record (SPEC §6), kept
//! in the repository journal in the home store and shared by every working copy of the
//! repository. Every change is decided under the journal's writer lock from the folded
//! record, so two racing verbs both land and a verb never acts on a record it did not read.

use clap::{Args, Subcommand};
use serde_json::json;

use super::{EXIT_OK, EXIT_REFUSED, new_event};
use crate::away::{self, AwayEnded, AwayQueued, AwaySet, DecisionRecorded, Status, text};
use crate::checklist::time_input::parse_time_input;
use crate::event::{self, Scope};
use crate::journal::append::JournalError;
use crate::journal::storage::RealDisk;
use crate::places;
use crate::store::Store;

#[derive(Args, Debug)]
#[command(
    about = "The away mode: say you are away, queue steps for your return, come back",
    long_about = "The away mode (one record per repository, shared by all its working copies).\n\n\
While you are away, every session in every working copy of this repository either works or waits \
with a wake it scheduled: abcd's Stop hook blocks a stop while work is owed, and its question tool \
is refused with a route (queue what only you may approve, decide the rest with `abcd decide`). \
The mode grants no rights: your own standing instruction stays the only authority to push, open \
or merge a pull request.\n\n\
Bare `abcd mode` prints the state. Exit codes: 0 ok, 1 failure, 2 refused."
)]
pub struct ModeArgs {
    #[command(subcommand)]
    action: Option<ModeAction>,
    /// Print JSON for scripts
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum ModeAction {
    /// Say you are away until a time (at most 7 days; 7 days when not given). Setting it
    /// again carries over whatever is still unread.
    Autonomous {
        /// When you are back: RFC 3339 (2026-12-01T09:00:00Z), a local clock time (09:00,
        /// its next occurrence) or a duration (+8h); not past, at most 7 days ahead
        #[arg(long, allow_hyphen_values = true, value_name = "T")]
        until: Option<String>,
        /// Pushes wait for your return: sessions do the local work and queue each push
        #[arg(long)]
        hold_pushes: bool,
    },
    /// End the mode: prints every queued step, handed-back item, recorded stop and
    /// decision of the window, one line each, and records who ended it
    Back,
    /// Queue one step for the person (only while away; one line, at most 500 characters)
    Queue {
        #[arg(allow_hyphen_values = true)]
        step: String,
    },
}

#[derive(Args, Debug)]
#[command(
    about = "Record a decision a session made instead of asking (shown by `abcd mode back`)",
    long_about = "Record a decision: what was decided, on what grounds, and how to undo it. While the \
person is away, a session decides every question that is not the person's to approve and records \
it here; `abcd mode back` prints the window's decisions. Each field is one line of at most 1000 \
characters, and a secret in any of them is refused. Exit codes: 0 ok, 1 failure, 2 refused."
)]
pub struct DecideArgs {
    /// What was decided
    #[arg(allow_hyphen_values = true)]
    text: String,
    /// Why
    #[arg(long, allow_hyphen_values = true)]
    grounds: String,
    /// How to reverse it
    #[arg(long, allow_hyphen_values = true)]
    undo: String,
    /// Print JSON for scripts
    #[arg(long)]
    json: bool,
}

/// What a verb decided under the lock.
enum Outcome {
    Done(String),
    Refused(String),
}

struct Repository {
    store: Store,
    scope: Scope,
    working_copy: String,
}

fn open_repository() -> anyhow::Result<Repository> {
    let cwd = std::env::current_dir()?;
    // The away mode is a managed checkout's: outside one, refuse naming `abcd init`.
    places::working_copy_journal(&cwd)?;
    let (root, _) = places::working_copy_root(&cwd)?;
    let (paths, scope) = places::repository_journal(&cwd)?;
    let store = Store::new(places::open_journal_for_verb(RealDisk::shared(), paths)?);
    Ok(Repository { store, scope, working_copy: root.display().to_string() })
}

/// Who the person is, as git would author a commit: `user.name`, else `$USER`.
fn person(cwd: &std::path::Path) -> String {
    let from_git = crate::git::repo::user_name(cwd);
    let name = from_git.filter(|n| !n.is_empty()).or_else(|| std::env::var("USER").ok()).unwrap_or_default();
    let name = away::fold_whitespace(&name);
    if away::check_line("set_by", &name, away::PERSON_MAX_CHARS).is_ok() { name } else { "someone git does not name".to_string() }
}

fn show(at: jiff::Timestamp) -> String {
    crate::clock::show(at)
}

pub fn run_mode(args: ModeArgs) -> anyhow::Result<i32> {
    let repo = open_repository()?;
    let now = crate::clock::now()?;
    let json_out = args.json;
    let outcome = match args.action {
        None => return status(&repo, now, json_out),
        Some(ModeAction::Autonomous { until, hold_pushes }) => set(&repo, now, until.as_deref(), hold_pushes, json_out)?,
        Some(ModeAction::Queue { step }) => queue(&repo, now, &step, json_out)?,
        Some(ModeAction::Back) => back(&repo, now, json_out)?,
    };
    Ok(finish(outcome))
}

fn finish(outcome: Outcome) -> i32 {
    match outcome {
        Outcome::Done(out) => {
            if !out.is_empty() {
                println!("{out}");
            }
            EXIT_OK
        }
        Outcome::Refused(why) => {
            eprintln!("abcd: {why}");
            EXIT_REFUSED
        }
    }
}

/// The record as the journal folds it; a repository journal not yet created is a person
/// who was never away.
fn read_record(repo: &Repository) -> anyhow::Result<away::AwayState> {
    match repo.store.current_state() {
        Ok(current) => match current.degraded {
            None => Ok(current.state.away),
            Some(c) => Err(JournalError::Corrupt { path: repo.store.journal().paths().journal.clone(), corruption: c }.into()),
        },
        Err(JournalError::Missing { .. }) => Ok(away::AwayState::default()),
        Err(e) => Err(e.into()),
    }
}

fn status(repo: &Repository, now: jiff::Timestamp, json_out: bool) -> anyhow::Result<i32> {
    let record = read_record(repo)?;
    if json_out {
        println!("{}", json!({"status": record.status(now), "window": record.window, "journal": repo.store.journal().paths().journal}));
    } else {
        println!("{}", text::status_line(record.window.as_ref(), now, &show));
    }
    Ok(EXIT_OK)
}

fn set(repo: &Repository, now: jiff::Timestamp, until: Option<&str>, hold_pushes: bool, json_out: bool) -> anyhow::Result<Outcome> {
    // Whole seconds, cut down (never rounded up past now): the window's start reads
    // cleanly, and every limit below is measured from it.
    let start = jiff::Timestamp::from_second(now.as_second())?;
    let end = match until {
        Some(text) => {
            let zoned = start.to_zoned_datetime(jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC));
            match parse_time_input("--until", text, &zoned) {
                Ok(t) => t,
                Err(e) => return Ok(Outcome::Refused(format!("refused: {e}; nothing was written"))),
            }
        }
        None => start.checked_add(away::MAX_WINDOW)?,
    };
    if let Err(r) = away::check_until(end, start) {
        return Ok(Outcome::Refused(format!(
            "refused: {} {}; nothing was written. Give a time in the next 7 days, or leave --until out for 7 days",
            r.field.unwrap_or_default(),
            r.reason
        )));
    }
    let set = AwaySet {
        set_by: person(std::path::Path::new(&repo.working_copy)),
        working_copy: repo.working_copy.clone(),
        start,
        end,
        hold_pushes,
    };
    if let Err(r) = away::check_set(&set) {
        return Ok(Outcome::Refused(format!("refused: {} {}; nothing was written", r.field.unwrap_or_default(), r.reason)));
    }
    let written = repo.store.append_with(Some(&repo.scope), |state| {
        let carried = state.away.open_window().map_or(0, away::Window::unread);
        (vec![new_event(event::AWAY_SET, json!(set))], carried)
    })?;
    let carried = written.outcome;
    let after = written.after?;
    let window = after.state.away.window.as_ref().expect("the set just folded");
    let out = if json_out {
        json!({"status": window.status(now), "window": window, "carried_over": carried}).to_string()
    } else {
        let mut lines = vec![text::status_line(Some(window), now, &show)];
        if carried > 0 {
            lines.push(format!("carried over from the window before: {carried} unread item(s)."));
        }
        lines.push("The mode grants no rights: your own standing instruction stays the only authority to push, open or merge a pull request. `abcd mode back` ends it.".into());
        lines.join("\n")
    };
    Ok(Outcome::Done(out))
}

fn queue(repo: &Repository, now: jiff::Timestamp, step: &str, json_out: bool) -> anyhow::Result<Outcome> {
    let step = away::fold_whitespace(step);
    if let Err(r) = away::check_step(&step) {
        return Ok(Outcome::Refused(format!("refused: the step {}; nothing was written", r.reason)));
    }
    let data = AwayQueued { step: step.clone(), working_copy: repo.working_copy.clone() };
    let written = repo.store.append_with(Some(&repo.scope), |state| match state.away.holding(now) {
        None => (
            vec![],
            Err("refused: the person is not away (no away window holds), so there is no return to queue for; ask the person instead"
                .to_string()),
        ),
        Some(w) if !away::queue_has_room(w) => (
            vec![],
            Err(format!(
                "refused: the queue already holds {} steps, the most a window keeps; nothing was written. Do what you can meanwhile and record it with `abcd decide`",
                away::QUEUE_MAX_STEPS
            )),
        ),
        Some(w) => (vec![new_event(event::AWAY_QUEUED, json!(data))], Ok(w.queue.len() + 1)),
    })?;
    Ok(match written.outcome {
        Err(why) => Outcome::Refused(why),
        Ok(n) if json_out => Outcome::Done(json!({"queued": step, "queue_len": n}).to_string()),
        Ok(n) => Outcome::Done(format!("queued ({n} in the queue): {step}")),
    })
}

fn back(repo: &Repository, now: jiff::Timestamp, json_out: bool) -> anyhow::Result<Outcome> {
    let cwd = std::path::Path::new(&repo.working_copy);
    let ended = AwayEnded { ended_by: person(cwd), working_copy: repo.working_copy.clone() };
    let written = repo.store.append_with(Some(&repo.scope), |state| match state.away.open_window() {
        None => (vec![], None),
        Some(w) => (vec![new_event(event::AWAY_ENDED, json!(ended))], Some((text::back_report(w, &show), w.status(now), w.clone()))),
    })?;
    let Some((lines, was, window)) = written.outcome else {
        let msg = "no away window is open: the person is present.";
        return Ok(Outcome::Done(if json_out {
            json!({"ended": false, "lines": [], "status": Status::Present}).to_string()
        } else {
            msg.into()
        }));
    };
    written.after?;
    let closing = match was {
        Status::Lapsed => {
            format!("closed the away window that lapsed at {} (set by {} from {}).", show(window.end), window.set_by, window.working_copy)
        }
        _ => format!(
            "away mode ended by {} from {} (it was set by {} from {}).",
            ended.ended_by, ended.working_copy, window.set_by, window.working_copy
        ),
    };
    Ok(Outcome::Done(if json_out {
        json!({"ended": true, "was": was, "lines": lines, "ended_by": ended.ended_by, "working_copy": ended.working_copy}).to_string()
    } else {
        let mut all = lines;
        if all.is_empty() {
            all.push("nothing was queued, handed back, recorded or decided.".into());
        }
        all.push(closing);
        all.join("\n")
    }))
}

pub fn run_decide(args: DecideArgs) -> anyhow::Result<i32> {
    let repo = open_repository()?;
    let data = DecisionRecorded {
        text: away::fold_whitespace(&args.text),
        grounds: away::fold_whitespace(&args.grounds),
        undo: away::fold_whitespace(&args.undo),
        working_copy: repo.working_copy.clone(),
    };
    if let Err(r) = away::check_decision(&data) {
        let field = match r.field.as_deref() {
            Some("text") => "the decision".to_string(),
            Some(f) => format!("--{f}"),
            None => "the decision".to_string(),
        };
        return Ok(finish(Outcome::Refused(format!("refused: {field} {}; nothing was written", r.reason))));
    }
    let written = repo.store.append_with(Some(&repo.scope), |_| (vec![new_event(event::DECISION_RECORDED, json!(data))], ()))?;
    let seq = written.appended.first().map(|a| a.seq);
    Ok(finish(Outcome::Done(if args.json {
        json!({"recorded": true, "seq": seq}).to_string()
    } else {
        format!("decision recorded: {}", data.text)
    })))
}
