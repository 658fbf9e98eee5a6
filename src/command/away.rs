//! The away verbs' work (SPEC §6): `abcd mode autonomous|queue|back`, `abcd decide` and the
//! record's status, over the repository journal that every working copy of a repository
//! shares. Every change is decided under the writer lock from the folded record, so two
//! racing verbs both land and a verb never acts on a record it did not read.

use serde_json::json;

use super::mode_refusals::{Recorded, append, session_kept};
use super::{CommandError, caller_event};
use crate::away::refusals::{AwayModeRefused, RefusalRoute, RefusedAction};
use crate::away::sweep::CopyReport;
use crate::away::{self, AwayEnded, AwayQueued, AwaySet, AwaySweepStarted, DecisionRecorded, Status, Sweep, Window, text};
use crate::checklist::time_input::{parse_time_input, span_words};
use crate::event::{self, Scope};
use crate::journal::JournalError;
use crate::journal::storage::RealDisk;
use crate::places::{self, Place};
use crate::refusal::{Refusal, RefusalKind as K};
use crate::store::Store;

/// The repository journal, opened for a verb a person ran in a managed working copy.
pub struct Repository {
    pub store: Store,
    pub scope: Scope,
    /// The working copy the verb ran in, as its root folder.
    pub working_copy: String,
    /// Where the verb ran.
    pub place: Place,
}

pub fn open_repository(place: &Place) -> Result<Repository, CommandError> {
    // The away mode is a managed checkout's: outside one, refuse naming `abcd init`.
    place.working_copy()?;
    let root = place.root()?;
    let (paths, scope) = place.repository()?;
    let store = Store::new(place.open_scoped_for_verb(RealDisk::shared(), paths, &scope)?);
    Ok(Repository { store, scope, working_copy: root.display().to_string(), place: place.clone() })
}

/// Who the person is, as git would author a commit: `user.name`, else `$USER`.
fn person(cwd: &std::path::Path) -> String {
    let from_git = crate::git::repo::user_name(cwd);
    let name = from_git.filter(|n| !n.is_empty()).or_else(|| std::env::var("USER").ok()).unwrap_or_default();
    let name = away::fold_whitespace(&name);
    if away::check_line("set_by", &name, away::PERSON_MAX_CHARS).is_ok() { name } else { "someone git does not name".to_string() }
}

/// The record as the journal folds it; a repository journal not yet created is a person
/// who was never away.
pub fn read_record(repo: &Repository) -> Result<away::AwayState, CommandError> {
    match repo.store.current_state() {
        Ok(current) => match current.degraded {
            None => Ok(current.state.away),
            Some(c) => Err(JournalError::Corrupt { path: repo.store.journal().paths().journal.clone(), corruption: c }.into()),
        },
        Err(JournalError::Missing { .. }) => Ok(away::AwayState::default()),
        Err(e) => Err(e.into()),
    }
}

/// `abcd mode autonomous`: the window as folded, how many unread items it carried over, and
/// the blocker sweep's list as known when it was set.
pub struct WindowSet {
    pub window: Window,
    pub carried: usize,
    pub sweep: Option<SweepView>,
}

/// The sweep's list: every working copy with a journal, whether it answered, and its
/// blocked items; `warning` when the copies could not be listed (then only the sweep).
pub struct SweepView {
    pub sweep: Sweep,
    pub copies: Vec<CopyReport>,
    pub warning: Option<String>,
}

/// The open window's sweep with what every working copy's checklist holds now.
pub fn sweep_view(repo: &Repository, window: &Window, now: jiff::Timestamp) -> Option<SweepView> {
    let sweep = window.sweep.clone()?;
    let (copies, warning) = match super::sweep::collect(&repo.place) {
        Ok(found) => (found.iter().map(|f| f.report(&sweep, now)).collect(), None),
        Err(e) => (Vec::new(), Some(format!("the working copies could not be listed ({e})"))),
    };
    Some(SweepView { sweep, copies, warning })
}

pub fn set(
    repo: &Repository,
    now: jiff::Timestamp,
    until: Option<&str>,
    hold_pushes: bool,
    sweep_deadline: Option<&str>,
    notify: Option<&str>,
) -> Result<WindowSet, CommandError> {
    refuse_host_tool_recorded(repo, "autonomous", &|name| std::env::var(name).ok())?;
    let notify = notify.map(away::fold_whitespace);
    if let Some(command) = &notify {
        check_notify(command)?;
    }
    // Whole seconds, cut down (never rounded up past now): the window's start reads
    // cleanly, and every limit below is measured from it.
    let start = jiff::Timestamp::from_second(now.as_second()).map_err(|e| CommandError::Failed(e.to_string()))?;
    let end = match until {
        Some(text) => {
            let zoned = start.to_zoned_datetime(crate::clock::local_zone());
            parse_time_input("--until", text, &zoned, away::MAX_WINDOW)
                .map_err(|e| Refusal::new(K::BadValue, "mode autonomous", e.to_string()).nothing_written())?
        }
        None => start.checked_add(away::MAX_WINDOW).map_err(|e| CommandError::Failed(e.to_string()))?,
    };
    if let Err(r) = away::check_until(end, start) {
        return Err(Refusal::new(K::BadValue, "mode autonomous", format!("{} {}", r.field.unwrap_or_default(), r.reason))
            .nothing_written()
            .instead(format!(
                "give a time within the next {}, or leave --until out for {}",
                span_words(away::MAX_WINDOW),
                span_words(away::MAX_WINDOW)
            ))
            .into());
    }
    let set = AwaySet {
        set_by: person(std::path::Path::new(&repo.working_copy)),
        working_copy: repo.working_copy.clone(),
        start,
        end,
        hold_pushes,
        notify,
    };
    if let Err(r) = away::check_set(&set) {
        return Err(Refusal::new(K::BadValue, "mode autonomous", format!("{} {}", r.field.unwrap_or_default(), r.reason))
            .nothing_written()
            .into());
    }
    // Never past the window's end: a session asked after it is no longer away. A window
    // shorter than a sweep's least length starts none.
    let deadline = sweep_deadline_from(start, sweep_deadline)?.min(end);
    let sweep = (deadline.duration_since(start) >= away::SWEEP_DEADLINE_MIN).then(|| AwaySweepStarted {
        start,
        deadline,
        working_copy: repo.working_copy.clone(),
    });
    let written = repo.store.append_with(Some(&repo.scope), |state| {
        let carried = state.away.open_window().map_or(0, away::Window::unread);
        let mut events = vec![caller_event(event::AWAY_SET, json!(set))];
        events.extend(sweep.iter().map(|s| caller_event(event::AWAY_SWEEP_STARTED, json!(s))));
        (events, carried)
    })?;
    let after = written.after?;
    let window = after.state.away.window.expect("the set just folded");
    let sweep = sweep_view(repo, &window, now);
    Ok(WindowSet { window, carried: written.outcome, sweep })
}

/// The machine's sweep deadline, in the home store: `{"minutes": N}`.
pub const SWEEP_SETTING_FILE: &str = "sweep-deadline.json";
/// The setting's file is read up to this many bytes (it holds one small number).
const SWEEP_SETTING_MAX_BYTES: u64 = 4_096;

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepSetting {
    minutes: u64,
}

/// This machine's sweep length (`abcd mode sweep-deadline`), when one is set and within
/// the sweep's bounds; a file that does not read as one is no setting.
pub fn machine_sweep_deadline() -> Option<jiff::SignedDuration> {
    let path = places::home_dir().ok()?.join(SWEEP_SETTING_FILE);
    let bytes = crate::platform::fs::read_regular(&path, SWEEP_SETTING_MAX_BYTES).ok()?;
    let setting: SweepSetting = serde_json::from_slice(&bytes).ok()?;
    let span = jiff::SignedDuration::from_mins(i64::try_from(setting.minutes).ok()?);
    away::check_sweep_span(span).is_ok().then_some(span)
}

/// Sets this machine's sweep length to `minutes`, within the sweep's bounds.
pub fn set_machine_sweep_deadline(minutes: u64) -> Result<jiff::SignedDuration, CommandError> {
    let span = i64::try_from(minutes).ok().map(jiff::SignedDuration::from_mins);
    if span.is_none_or(|s| away::check_sweep_span(s).is_err()) {
        return Err(Refusal::new(
            K::BadValue,
            "the sweep's length",
            format!("a sweep lasts {} to {}", span_words(away::SWEEP_DEADLINE_MIN), span_words(away::SWEEP_DEADLINE_MAX)),
        )
        .nothing_written()
        .instead(format!("give minutes from {} to {}", away::SWEEP_DEADLINE_MIN.as_mins(), away::SWEEP_DEADLINE_MAX.as_mins()))
        .into());
    }
    let home = places::home_dir()?;
    crate::platform::fs::create_dir_all(&home, 0o700).map_err(CommandError::failed)?;
    let bytes = serde_json::to_vec(&SweepSetting { minutes }).expect("plain data serializes");
    crate::journal::storage::write_atomic(&RealDisk, &home.join(SWEEP_SETTING_FILE), &bytes, false).map_err(CommandError::failed)?;
    Ok(span.expect("checked"))
}

/// The sweep's deadline: `--sweep-deadline` as a time (`+10m`, `18:10`, RFC 3339), else the
/// machine's setting, else [`away::SWEEP_DEADLINE_DEFAULT`] after the start; within the
/// sweep's bounds (the caller clamps it to the window).
fn sweep_deadline_from(start: jiff::Timestamp, text: Option<&str>) -> Result<jiff::Timestamp, CommandError> {
    let deadline = match text {
        Some(text) => {
            let zoned = start.to_zoned_datetime(crate::clock::local_zone());
            parse_time_input("--sweep-deadline", text, &zoned, away::SWEEP_DEADLINE_MAX)
                .map_err(|e| Refusal::new(K::BadValue, "mode autonomous", e.to_string()).nothing_written())?
        }
        None => start
            .checked_add(machine_sweep_deadline().unwrap_or(away::SWEEP_DEADLINE_DEFAULT))
            .map_err(|e| CommandError::Failed(e.to_string()))?,
    };
    away::check_sweep_span(deadline.duration_since(start)).map_err(|why| {
        Refusal::new(K::BadValue, "mode autonomous", format!("--sweep-deadline {why}")).nothing_written().instead(format!(
            "give a time {} to {} from now, or leave it out for {}",
            span_words(away::SWEEP_DEADLINE_MIN),
            span_words(away::SWEEP_DEADLINE_MAX),
            span_words(away::SWEEP_DEADLINE_DEFAULT)
        ))
    })?;
    Ok(deadline)
}

/// `abcd mode queue`: the step as queued and the queue's length after it.
pub struct Queued {
    pub step: String,
    pub queue_len: usize,
}

pub fn queue(repo: &Repository, now: jiff::Timestamp, step: &str) -> Result<Queued, CommandError> {
    let step = away::fold_whitespace(step);
    if let Err(r) = away::check_step(&step) {
        return Err(Refusal::new(K::BadValue, "mode queue", format!("the step {}", r.reason)).nothing_written().into());
    }
    let data = AwayQueued { step: step.clone(), working_copy: repo.working_copy.clone() };
    let written = repo.store.append_with(Some(&repo.scope), |state| match state.away.holding(now) {
        None => (
            vec![],
            Err(Refusal::new(
                K::NotAway,
                "mode queue",
                "the person is not away (no away window holds), so there is no return to queue for",
            )
            .instead("ask the person instead")),
        ),
        Some(w) if !away::queue_has_room(w) => (
            vec![],
            Err(Refusal::new(
                K::Full,
                "mode queue",
                format!("the queue already holds {} steps, the most a window keeps", away::QUEUE_MAX_STEPS),
            )
            .nothing_written()
            .instead("do what you can meanwhile and record it with `abcd decide`")),
        ),
        Some(w) => (vec![caller_event(event::AWAY_QUEUED, json!(data))], Ok(w.queue.len() + 1)),
    })?;
    match written.outcome {
        Err(why) => Err(why.into()),
        Ok(queue_len) => Ok(Queued { step, queue_len }),
    }
}

/// `abcd mode back`: what the window held, as lines, and how it ended; `None` when no
/// window was open.
pub struct Back {
    pub lines: Vec<String>,
    pub was: Status,
    pub window: Window,
    pub ended: AwayEnded,
}

/// The second choke point of "the mode is the person's act" (the first is the shell rule,
/// `hook::mode_guard`): `abcd mode autonomous|back` refuses in a process a host's tool
/// started, whatever route led there (a script file, `python -c`, a copy of the binary
/// under another name). `action` names the verb in the refusal.
pub fn refuse_host_tool(action: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<(), CommandError> {
    refuse_person_only(
        PersonOnly { command: &format!("abcd mode {action}"), act: "sets or ends the away mode", unchanged: "the mode was not changed" },
        var,
    )
}

/// A verb only the person runs, as its refusal names it.
pub struct PersonOnly<'a> {
    /// The command the person runs, as they would type it.
    pub command: &'a str,
    /// What only the person does, after "only the person".
    pub act: &'a str,
    /// What stayed as it was.
    pub unchanged: &'a str,
}

/// The one refusal of a person's verb in a process a host's tool started (`CLAUDECODE=1`,
/// `CODEX_TOOL_CALL_ID`, …): what was refused and why, what an agent does instead, and
/// where the person runs it. The mark is named, never its value.
pub fn refuse_person_only(verb: PersonOnly<'_>, var: &dyn Fn(&str) -> Option<String>) -> Result<(), CommandError> {
    let Some(mark) = crate::host::host_tool_mark(var) else { return Ok(()) };
    let PersonOnly { command, act, unchanged } = verb;
    Err(Refusal::new(
        K::PersonOnly,
        format!("`{command}`"),
        format!("it runs in a process an agent session's tool started ({mark} is set), and only the person {act}; {unchanged}"),
    )
    .instead(format!(
        "an agent queues what it needs from the person with `abcd mode queue '<step>'` and records its own decisions with `abcd decide`; \
         the person runs `{command}` in a terminal of their own."
    ))
    .into())
}

pub fn back(repo: &Repository, now: jiff::Timestamp, show: &dyn Fn(jiff::Timestamp) -> String) -> Result<Option<Back>, CommandError> {
    refuse_host_tool_recorded(repo, "back", &|name| std::env::var(name).ok())?;
    let cwd = std::path::Path::new(&repo.working_copy);
    let ended = AwayEnded { ended_by: person(cwd), working_copy: repo.working_copy.clone() };
    let written = repo.store.append_with(Some(&repo.scope), |state| match state.away.open_window() {
        None => (vec![], None),
        Some(w) => {
            // The window's refused attempts after what it held (`away::refusals`).
            let mut lines = text::back_report(w, show);
            lines.extend(away::refusals::lines(&state.away.refusals, show));
            (vec![caller_event(event::AWAY_ENDED, json!(ended))], Some((lines, w.status(now), w.clone())))
        }
    })?;
    let Some((lines, was, window)) = written.outcome else {
        return Ok(None);
    };
    written.after?;
    Ok(Some(Back { lines, was, window, ended }))
}

/// `abcd decide`: the decision as recorded and its seq.
pub struct Decided {
    pub text: String,
    pub seq: Option<u64>,
}

pub fn decide(
    repo: &Repository,
    text: &str,
    grounds: &str,
    undo: &str,
    tradeoff: Option<&str>,
    item: Option<&str>,
) -> Result<Decided, CommandError> {
    let tradeoff = tradeoff
        .map(|t| {
            away::Tradeoff::parse(t).ok_or_else(|| {
                let names: Vec<&str> = away::Tradeoff::ALL.iter().map(|t| t.name()).collect();
                Refusal::new(K::BadValue, "decide", format!("--tradeoff must be one of {}", names.join(", ")))
                    .nothing_written()
                    .instead("leave it out for a decision that is not a trade-off")
            })
        })
        .transpose()?;
    if let Some(item) = item {
        check_tied_item(&repo.place, item, tradeoff.is_some())?;
    }
    let data = DecisionRecorded {
        text: away::fold_whitespace(text),
        grounds: away::fold_whitespace(grounds),
        undo: away::fold_whitespace(undo),
        working_copy: repo.working_copy.clone(),
        tradeoff,
        item: item.map(String::from),
    };
    if let Err(r) = away::check_decision(&data) {
        let field = match r.field.as_deref() {
            Some("text") => "the decision".to_string(),
            Some(f) => format!("--{f}"),
            None => "the decision".to_string(),
        };
        return Err(Refusal::new(K::BadValue, "decide", format!("{field} {}", r.reason)).nothing_written().into());
    }
    let written = repo.store.append_with(Some(&repo.scope), |state| {
        if data.tradeoff.is_some() && !state.away.tradeoff_has_room() {
            return (vec![], false);
        }
        (vec![caller_event(event::DECISION_RECORDED, json!(data))], true)
    })?;
    if !written.outcome {
        return Err(Refusal::new(
            K::Full,
            "decide",
            format!("the record already holds {} trade-offs and the person has answered none of them", away::TRADEOFFS_KEPT),
        )
        .nothing_written()
        .instead(
            "the person answers them with `abcd decide --answer <seq> keep|undo` (`abcd mode back` prints the seqs); meanwhile queue this one for them with `abcd mode queue '<step>'`",
        )
        .into());
    }
    Ok(Decided { text: data.text, seq: written.appended.first().map(|a| a.seq) })
}

/// `--notify`: the command is stored in the repository journal and shown by `abcd mode`,
/// so one that looks like a secret is refused, as is one past the named length.
fn check_notify(command: &str) -> Result<(), CommandError> {
    let Err(r) = away::notify::check_notify_command(command) else { return Ok(()) };
    let instead = if crate::secrets::scan(command).is_some() {
        "keep the secret out of the command line: put the command in a script that reads the secret from a file or its environment, and give --notify the script's path"
    } else if command.chars().count() > away::notify::NOTIFY_COMMAND_MAX_CHARS {
        "put the command in a script and give --notify the script's path"
    } else {
        "give one command line, e.g. --notify 'notify-send abcd \"$1\"'"
    };
    Err(Refusal::new(
        K::BadValue,
        "mode autonomous",
        format!("--notify {}, and the command is kept in the repository journal and shown by `abcd mode`", r.reason),
    )
    .nothing_written()
    .instead(format!("instead, {instead}"))
    .into())
}

/// ` `id`` when the id is a clean slug, so a pasted secret is never repeated; else nothing.
pub(super) fn named(id: &str) -> String {
    if away::check_item(id).is_ok() { format!(" `{id}`") } else { String::new() }
}

/// Refuses `--item` that names no item of the checklist of the working copy `cwd` is in,
/// or that is given without `--tradeoff`.
pub fn check_tied_item(place: &Place, item: &str, has_tradeoff: bool) -> Result<(), CommandError> {
    if !has_tradeoff {
        return Err(Refusal::new(
            K::BadValue,
            "decide",
            "--item ties a trade-off to a checklist item, and this decision names no --tradeoff",
        )
        .nothing_written()
        .instead("add `--tradeoff security|speed|compatibility` when the decision settles a trade-off, or leave --item out")
        .into());
    }
    if item_held(place, item)? {
        return Ok(());
    }
    Err(Refusal::new(
        K::NotFound,
        "decide",
        format!("--item{} names no item of this working copy's checklist, so no design-done could wait on it", named(item)),
    )
    .nothing_written()
    .instead("run `abcd checklist` to see the ids, or leave --item out")
    .into())
}

/// Whether the working copy's checklist (its working state) holds an item of this id.
pub(super) fn item_held(place: &Place, item: &str) -> Result<bool, CommandError> {
    if away::check_item(item).is_err() {
        return Ok(false);
    }
    let (paths, scope) = place.working_copy()?;
    let store = Store::new(place.open_scoped_for_verb(RealDisk::shared(), paths, &scope)?);
    Ok(store.checklist_view().checklist.get(item).is_some())
}

/// The verb's refusal (`away::refuse_host_tool`), recorded first: `abcd mode autonomous|back`
/// in a process a host's tool started is refused whether or not the record can be written,
/// and the refusal says which.
pub fn refuse_host_tool_recorded(repo: &Repository, action: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<(), CommandError> {
    let Err(refused) = refuse_host_tool(action, var) else { return Ok(()) };
    let CommandError::Refused(refusal) = refused else { return Err(refused) };
    let data = AwayModeRefused {
        route: RefusalRoute::Verb,
        action: RefusedAction::of_mode_verb(action),
        mark: crate::host::host_tool_mark(var).map(String::from),
        session: session_kept(crate::host::session_from_env().as_deref()),
        working_copy: repo.working_copy.clone(),
    };
    let said = match append(&repo.store, &repo.scope, &data) {
        Ok((Recorded::Yes, _)) => " The attempt is recorded for the person (`abcd mode` shows it).".to_string(),
        Ok((Recorded::OverLimit, _)) => String::new(),
        Err(why) => format!(" ({why}.)"),
    };
    Err(refusal.then(&said).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::places::tests::{CACHED_COMMIT, Folder};

    #[test]
    fn the_repository_is_opened_from_the_place_only_in_a_managed_working_copy() {
        let f = Folder::managed();
        let repo = open_repository(&f.place("")).unwrap();
        assert_eq!(repo.working_copy, f.copy().display().to_string());
        assert_eq!(repo.scope, Scope::Repository { root_commit: CACHED_COMMIT.into() });
        assert_eq!(repo.store.journal().paths().journal, f.home().join("repos").join(CACHED_COMMIT).join(places::JOURNAL_FILE));
        // The root commit is known, but the working copy is not managed: refused, naming `abcd init`.
        std::fs::remove_dir_all(f.copy().join(".abcd")).unwrap();
        let refused = open_repository(&f.place("")).err().expect("an unmanaged working copy is refused");
        assert!(matches!(refused, CommandError::Place(places::PlaceError::NotManaged { .. })), "{refused:?}");
    }
}

#[cfg(test)]
mod refusal_kinds {
    use crate::refusal::RefusalKind as K;

    #[test]
    fn a_persons_verb_under_a_hosts_mark_is_refused_by_kind_naming_the_mark_never_its_value() {
        let value = format!("ghp_{}", "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d");
        let marked = |name: &str| (name == crate::host::CODEX_TOOL_CALL_ENV).then(|| value.clone());
        let e = super::refuse_host_tool("back", &marked).unwrap_err();
        let r = e.refusal().expect("a refusal");
        assert_eq!(r.kind, K::PersonOnly);
        let said = r.to_string();
        assert!(said.starts_with("refused [person-only]: `abcd mode back`: "), "{said}");
        assert!(said.contains("CODEX_TOOL_CALL_ID is set") && !said.contains("ghp_"), "{said}");
        assert!(r.instead.as_deref().is_some_and(|i| i.contains("abcd mode queue")), "{said}");
        assert!(super::refuse_host_tool("back", &|_| None).is_ok(), "the person's own terminal is not refused");
    }
}
