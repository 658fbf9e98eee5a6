//! `abcd mode [autonomous|back|queue]` and `abcd decide`: parses, calls `command::away`,
//! prints.

use clap::{Args, Subcommand};
use serde_json::json;

use super::EXIT_OK;
use crate::away::refusals;
use crate::away::{MAX_WINDOW, SWEEP_DEADLINE_DEFAULT, SWEEP_DEADLINE_MAX, SWEEP_DEADLINE_MIN, Status, sweep, text};
use crate::checklist::time_input::{ahead_rule, span_words};
use crate::command::away::{self as away_cmd, Back, Decided, Queued, SweepView, WindowSet};

#[derive(Args, Debug)]
#[command(
    about = "The away mode: say you are away, queue steps for your return, come back",
    long_about = "The away mode (one record per repository, shared by all its working copies).\n\n\
While you are away, every session in every working copy of this repository either works or waits \
with a wake it scheduled: abcd's Stop hook blocks a stop while work is owed, and its question tool \
is refused with a route (queue what only you may approve, decide the rest with `abcd decide`). \
The mode grants no rights: your own standing instruction stays the only authority to push, open \
or merge a pull request.\n\n\
Setting it starts the blocker sweep: each working copy's live session is asked at its next prompt or tool call to mark \
what could stop it (`abcd checklist set <id> --blocker KIND`), and the first prompt in each working copy after `abcd mode back` \
shows the steps only you can do and what was decided (docs/sweep.md).\n\n\
Bare `abcd mode` prints the state and, while away, the rules the sessions work by in full and the sweep's list. Exit codes: 0 ok, 1 failure, 2 refused."
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
    // The limit is worded from `away::MAX_WINDOW`, as the refusals word it.
    #[command(about = format!(
        "Say you are away until a time ({}; {} when not given). Setting it again carries over whatever is still unread.",
        ahead_rule(MAX_WINDOW),
        span_words(MAX_WINDOW)
    ))]
    Autonomous {
        #[arg(long, allow_hyphen_values = true, value_name = "T", help = format!(
            "When you are back: a duration from now (+8h), a local clock time (09:00, its next occurrence) or an RFC 3339 time (2026-12-01T09:00:00Z); not past, {}",
            ahead_rule(MAX_WINDOW)
        ))]
        until: Option<String>,
        /// Pushes wait for your return: sessions do the local work and queue each push
        #[arg(long)]
        hold_pushes: bool,
        #[arg(long, allow_hyphen_values = true, value_name = "T", help = format!(
            "Until when live sessions are asked to bring in what could stop them (+10m, 18:10 or an RFC 3339 time; {} to {} from now; when not given, this machine's `abcd mode sweep-deadline`, else {}; never past the window's end). The command does not wait: `abcd mode` shows the list with the answers",
            span_words(SWEEP_DEADLINE_MIN),
            span_words(SWEEP_DEADLINE_MAX),
            span_words(SWEEP_DEADLINE_DEFAULT)
        ))]
        sweep_deadline: Option<String>,
        #[arg(long, allow_hyphen_values = true, value_name = "COMMAND", help = format!(
            "A command run (through `sh -c`, with a one-line summary as \"$1\") when you must hear: a turn ended on a rate or usage limit, a stop forced by the host's cap, or every owed item waiting on a queued step; once per kind per hour, detached, killed after {} (docs/notify.md)",
            format!("{} s", crate::away::notify::NOTIFY_RUN_BOUND.as_secs())
        ))]
        notify: Option<String>,
    },
    /// End the mode: prints every queued step, handed-back item, recorded stop and
    /// decision of the window, one line each, and records who ended it
    Back,
    #[command(about = format!(
        "This machine's blocker sweep length, in minutes ({} to {}; {} unless set): used when `--sweep-deadline` is not given, and never past the window's end. Bare, prints it",
        SWEEP_DEADLINE_MIN.as_mins(),
        SWEEP_DEADLINE_MAX.as_mins(),
        span_words(SWEEP_DEADLINE_DEFAULT)
    ))]
    SweepDeadline {
        /// Minutes
        minutes: Option<u64>,
    },
    /// Queue one step for the person (only while away; one line, at most 500 characters)
    Queue {
        /// What the person is to do on their return
        #[arg(allow_hyphen_values = true)]
        step: String,
    },
}

#[derive(Args, Debug)]
#[command(
    about = "Record a decision a session made instead of asking (shown by `abcd mode back`), or answer a trade-off",
    long_about = "Record a decision: what was decided, on what grounds, and how to undo it. While the \
person is away, a session decides every question that is not the person's to approve and records \
it here; `abcd mode back` prints the window's decisions. Each field is one line of at most 1000 \
characters, and a secret in any of them is refused.\n\n\
A trade-off (`--tradeoff`) may be tied to an item of this working copy's checklist (`--item <id>`): \
`abcd checklist design-done <id>` then answers yes only once the person has answered every trade-off \
tied to it, with `abcd decide --answer <seq> keep|undo` (the seq `abcd mode back`, the return lists \
and design-done print beside each trade-off). Only the person answers: a process a host's tool \
started is refused. A later answer replaces an earlier one. Exit codes: 0 ok, 1 failure, 2 refused."
)]
pub struct DecideArgs {
    /// What was decided
    #[arg(allow_hyphen_values = true, required_unless_present = "answer")]
    text: Option<String>,
    /// Why
    #[arg(long, allow_hyphen_values = true, required_unless_present = "answer")]
    grounds: Option<String>,
    /// How to reverse it
    #[arg(long, allow_hyphen_values = true, required_unless_present = "answer")]
    undo: Option<String>,
    /// The trade-off it settles: security, speed or compatibility (listed first on the person's return)
    #[arg(long, allow_hyphen_values = true, value_name = "KIND")]
    tradeoff: Option<String>,
    /// The checklist item (its id in this working copy) the trade-off is tied to: `abcd checklist design-done <id>` waits for the person's answer to it
    #[arg(long, allow_hyphen_values = true, value_name = "ID")]
    item: Option<String>,
    /// The person's answer to the trade-off recorded at SEQ: keep it, or have it undone
    #[arg(long, num_args = 2, value_names = ["SEQ", "keep|undo"], conflicts_with_all = ["text", "grounds", "undo", "tradeoff", "item"])]
    answer: Option<Vec<String>>,
    /// Print JSON for scripts
    #[arg(long)]
    json: bool,
}

fn show(at: jiff::Timestamp) -> String {
    crate::clock::show(at)
}

pub fn run_mode(args: ModeArgs) -> anyhow::Result<i32> {
    let repo = away_cmd::open_repository(&crate::places::Place::here()?)?;
    let now = crate::clock::now()?;
    let json_out = args.json;
    let out = match args.action {
        None => {
            let record = away_cmd::read_record(&repo)?;
            // While away, the sweep's list with the answers so far.
            let swept = record.window.as_ref().filter(|w| w.status(now) == Status::Away).and_then(|w| away_cmd::sweep_view(&repo, w, now));
            if json_out {
                let mut out =
                    json!({"status": record.status(now), "window": record.window, "journal": repo.store.journal().paths().journal});
                if let Some(v) = &swept {
                    out["sweep"] = sweep_json(v);
                }
                out["refused"] = refusals::json(&record.refusals);
                out.to_string()
            } else {
                let status = text::status_line(record.window.as_ref(), now, &show);
                // While away, the rules in full: the away block the sessions read points here.
                let mut lines = match record.window.as_ref().filter(|w| w.status(now) == Status::Away) {
                    Some(w) => {
                        let mut l = vec![status];
                        l.extend(w.notify.as_deref().map(notify_line));
                        l.push(text::away_rules_full(w, &show));
                        l
                    }
                    None => vec![status],
                };
                lines.extend(swept.as_ref().map(sweep_text));
                lines.extend(refusals::lines(&record.refusals, &show));
                lines.join("\n")
            }
        }
        Some(ModeAction::Autonomous { until, hold_pushes, sweep_deadline, notify }) => {
            let WindowSet { window, carried, sweep } =
                away_cmd::set(&repo, now, until.as_deref(), hold_pushes, sweep_deadline.as_deref(), notify.as_deref())?;
            if json_out {
                let mut out = json!({"status": window.status(now), "window": window, "carried_over": carried});
                if let Some(v) = &sweep {
                    out["sweep"] = sweep_json(v);
                }
                out.to_string()
            } else {
                let mut lines = vec![text::status_line(Some(&window), now, &show)];
                if carried > 0 {
                    lines.push(format!("carried over from the window before: {carried} unread item(s)."));
                }
                lines.extend(window.notify.as_deref().map(notify_line));
                lines.push("The mode grants no rights: your own standing instruction stays the only authority to push, open or merge a pull request. `abcd mode back` ends it.".into());
                match &sweep {
                    Some(v) => {
                        lines.push(sweep_text(v));
                        lines.push("This command does not wait for the answers: `abcd mode` shows the list again with them.".into());
                    }
                    None => lines.push(format!(
                        "no blocker sweep: the window is shorter than {}, too short for a session to answer.",
                        span_words(SWEEP_DEADLINE_MIN)
                    )),
                }
                lines.join("\n")
            }
        }
        Some(ModeAction::Queue { step }) => {
            let Queued { step, queue_len } = away_cmd::queue(&repo, now, &step)?;
            if json_out {
                json!({"queued": step, "queue_len": queue_len}).to_string()
            } else {
                format!("queued ({queue_len} in the queue): {step}")
            }
        }
        Some(ModeAction::Back) => back_text(away_cmd::back(&repo, now, &show)?, json_out),
        Some(ModeAction::SweepDeadline { minutes }) => {
            let (span, said) = match minutes {
                Some(m) => (away_cmd::set_machine_sweep_deadline(m)?, "is now"),
                None => match away_cmd::machine_sweep_deadline() {
                    Some(span) => (span, "is"),
                    None => (SWEEP_DEADLINE_DEFAULT, "is the default,"),
                },
            };
            if json_out {
                json!({"sweep_deadline_minutes": span.as_mins()}).to_string()
            } else {
                format!(
                    "this machine's blocker sweep {said} {} minutes after `abcd mode autonomous` (never past the window's end).",
                    span.as_mins()
                )
            }
        }
    };
    if !out.is_empty() {
        outln!("{out}");
    }
    Ok(EXIT_OK)
}

/// The sweep's list as lines, a warning first when the copies could not be listed.
fn sweep_text(v: &SweepView) -> String {
    let mut lines: Vec<String> = v.warning.iter().map(|w| format!("abcd: {w}")).collect();
    lines.extend(sweep::sweep_lines(&v.sweep, &v.copies, &show));
    lines.join("\n")
}

fn sweep_json(v: &SweepView) -> serde_json::Value {
    json!({"start": v.sweep.start, "deadline": v.sweep.deadline, "copies": v.copies, "warning": v.warning})
}

/// The notify command as bare `abcd mode` and `abcd mode autonomous` show it.
fn notify_line(command: &str) -> String {
    format!("when you must hear, abcd runs: sh -c '{command}' with a one-line summary as \"$1\" (once per kind per hour).")
}

fn back_text(back: Option<Back>, json_out: bool) -> String {
    let Some(Back { lines, was, window, ended }) = back else {
        return if json_out {
            json!({"ended": false, "lines": [], "status": Status::Present}).to_string()
        } else {
            "no away window is open: the person is present.".into()
        };
    };
    let closing = match was {
        Status::Lapsed => {
            format!("closed the away window that lapsed at {} (set by {} from {}).", show(window.end), window.set_by, window.working_copy)
        }
        _ => format!(
            "away mode ended by {} from {} (it was set by {} from {}).",
            ended.ended_by, ended.working_copy, window.set_by, window.working_copy
        ),
    };
    if json_out {
        json!({"ended": true, "was": was, "lines": lines, "ended_by": ended.ended_by, "working_copy": ended.working_copy}).to_string()
    } else {
        let mut all = lines;
        if all.is_empty() {
            all.push("nothing was queued, handed back, recorded or decided.".into());
        }
        all.push(closing);
        all.join("\n")
    }
}

pub fn run_decide(args: DecideArgs) -> anyhow::Result<i32> {
    let repo = away_cmd::open_repository(&crate::places::Place::here()?)?;
    if let Some([seq, answer]) = args.answer.as_deref() {
        return super::design_done_cmd::run_answer(&repo, seq, answer, args.json);
    }
    // Clap requires all three unless `--answer` is given.
    let field = |f: &Option<String>| f.clone().unwrap_or_default();
    let Decided { text, seq } = away_cmd::decide(
        &repo,
        &field(&args.text),
        &field(&args.grounds),
        &field(&args.undo),
        args.tradeoff.as_deref(),
        args.item.as_deref(),
    )?;
    outln!("{}", if args.json { json!({"recorded": true, "seq": seq}).to_string() } else { format!("decision recorded: {text}") });
    Ok(EXIT_OK)
}

#[derive(Args, Debug)]
pub struct NotifyRunArgs {
    /// The person's command, run as `sh -c <command> abcd-notify <summary>`
    #[arg(allow_hyphen_values = true)]
    command: String,
    /// The one-line summary, `$1` to the command
    #[arg(allow_hyphen_values = true)]
    summary: String,
}

/// The supervisor a hook starts detached: runs the command within its bound and writes one
/// line to its log (its stdout).
pub fn run_notify(args: NotifyRunArgs) -> anyhow::Result<i32> {
    use crate::command::notify;
    let ended = notify::supervise(&args.command, &args.summary, notify::run_bound());
    let at = crate::clock::now().map(crate::clock::show).unwrap_or_default();
    outln!("{at}: {}", ended.words());
    Ok(EXIT_OK)
}
