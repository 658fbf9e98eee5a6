//! `abcd mirror push|fetch|status|auto`: parses, calls `command::mirror`, prints. Text from
//! another machine (titles, paths, names) is printed through `terminal_safe`.

use clap::{Args, Subcommand};

use super::terminal::{Lines, terminal_safe};
use super::{EXIT_FAILURE, EXIT_OK};
use crate::command::mirror::{
    self as mirror_cmd, DEFAULT_REMOTE, FetchReport, JournalView, MirrorPlace, PushReport, Restarted, StatusView,
};

/// Characters of a journal's id its header shows.
const JOURNAL_ID_SHOWN_CHARS: usize = 8;

#[derive(Args, Debug)]
#[command(
    about = "Mirror this repository's journals to refs/abcd/ on its own git remote, fetch every machine's, and show them in one view",
    long_about = "Mirror this repository's journals to refs/abcd/ on its own git remote, fetch every machine's, and show them in one view.\n\n\
`abcd mirror push` sends every journal of this repository on this machine (each working copy's and the repository journal) and the saved-aside work under refs/abcd/saved/ to the remote, fast-forward only. `abcd mirror fetch` brings every machine's mirrors back and verifies each before it is shown: a mirror rewritten or moved back in the remote is named (exit 1) and its last verified copy kept. `abcd mirror status` shows every working copy's plan, runs and away record across machines. `abcd mirror restart` starts a journal's mirror again after a repair, keeping every line the journal lost. The layout is journal-format/MIRROR.md; docs/mirror.md is the guide."
)]
pub struct MirrorArgs {
    #[command(subcommand)]
    action: MirrorAction,
}

#[derive(Args, Debug)]
struct RemoteArg {
    /// The git remote to use
    #[arg(long, value_name = "NAME", default_value = DEFAULT_REMOTE)]
    remote: String,
    /// Print JSON for scripts
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum MirrorAction {
    /// Push every journal of this repository on this machine, and the saved-aside refs, to
    /// refs/abcd/ on the remote (fast-forward only; a refused ref changes nothing here)
    Push {
        #[command(flatten)]
        remote: RemoteArg,
        /// (internal) the push a hook starts: no wait for the lock, its outcome recorded
        /// for `mirror status` and nothing printed
        #[arg(long, hide = true)]
        background: bool,
    },
    /// Fetch every mirrored journal of the repository and verify each against its last
    /// verified copy (exit 1 naming any rewritten, rolled back or foreign mirror)
    Fetch {
        #[command(flatten)]
        remote: RemoteArg,
    },
    /// One view across machines: each working copy's machine, path, head, verification,
    /// open items and runs, and the away record (from the last fetch; no network)
    Status {
        #[command(flatten)]
        remote: RemoteArg,
    },
    /// Start a journal's mirror again after a repair, keeping every line the journal lost
    ///
    /// For a journal whose pushes are refused because it was repaired since it was mirrored:
    /// first copies every line of the old mirror the journal no longer holds into
    /// quarantine/ (synced), then drops the old mirror on the remote (only while it still
    /// names what this machine pushed) and here, and pushes the journal from its start
    Restart {
        #[command(flatten)]
        remote: RemoteArg,
        /// The repository journal's mirror instead of this working copy's
        #[arg(long)]
        repo: bool,
    },
    /// Let a line the push holds back as a secret through: the mirror carries a redaction
    /// record (its seq and hash, never its text) in its place, and the line stays here
    ///
    /// For a line `abcd mirror push` names as holding what looks like a secret: records the
    /// decision in the journal (`mirror.line_redacted`); the next push then carries the
    /// lines after it. Only a line not yet mirrored that the scan flags is redacted. See
    /// docs/mirror.md, "A line was flagged: what to do".
    Redact {
        /// The journal's id, as the push names it
        journal_id: String,
        /// The seq of the line the push held back
        seq: u64,
        /// Print JSON for scripts
        #[arg(long)]
        json: bool,
    },
    /// Turn background pushes from the hooks on or off (at most one per interval,
    /// detached; failures shown by `mirror status`, never to the model)
    Auto {
        /// on or off
        #[arg(value_parser = ["on", "off"])]
        state: String,
        /// The git remote background pushes go to
        #[arg(long, value_name = "NAME", default_value = DEFAULT_REMOTE)]
        remote: String,
        /// Seconds between background pushes at least
        #[arg(long, value_name = "SECONDS", default_value_t = mirror_cmd::AUTO_EVERY_DEFAULT_SECONDS)]
        every: u64,
    },
}

pub fn run_mirror(args: MirrorArgs) -> anyhow::Result<i32> {
    let here = super::place_here()?;
    let place = MirrorPlace::of(&here)?;
    let now = crate::clock::now()?;
    match args.action {
        MirrorAction::Push { remote, background: true } => {
            let report = mirror_cmd::push_in_background(&place, &remote.remote, now)?;
            Ok(if report.all_pushed() { EXIT_OK } else { EXIT_FAILURE })
        }
        MirrorAction::Push { remote, background: false } => {
            let report = mirror_cmd::push(&place, &remote.remote, mirror_cmd::MIRROR_LOCK_WAIT)?;
            if remote.json {
                outln!("{}", serde_json::to_string(&report)?);
            } else {
                out!("{}", push_text(&report));
            }
            tell_refusals(&report);
            Ok(if report.all_pushed() { EXIT_OK } else { EXIT_FAILURE })
        }
        MirrorAction::Fetch { remote } => {
            let report = mirror_cmd::fetch(&place, &remote.remote, now)?;
            if remote.json {
                outln!("{}", serde_json::to_string(&report)?);
            } else {
                out!("{}", fetch_text(&report));
            }
            Ok(if report.all_verified() { EXIT_OK } else { EXIT_FAILURE })
        }
        MirrorAction::Status { remote } => {
            let view = mirror_cmd::status(&place, &remote.remote, now)?;
            if remote.json {
                outln!("{}", serde_json::to_string(&view)?);
            } else {
                out!("{}", status_text(&view));
            }
            Ok(EXIT_OK)
        }
        MirrorAction::Restart { remote, repo } => {
            let (paths, _) = if repo { here.repository()? } else { here.working_copy()? };
            let journal = crate::places::open_journal_for_verb(crate::journal::storage::RealDisk::shared(), paths)?;
            let restarted = mirror_cmd::restart(&place, &journal, &remote.remote)?;
            if remote.json {
                outln!("{}", serde_json::to_string(&restarted)?);
            } else {
                out!("{}", restart_text(&restarted));
            }
            tell_refusals(&restarted.push);
            Ok(if restarted.push.all_pushed() { EXIT_OK } else { EXIT_FAILURE })
        }
        MirrorAction::Redact { journal_id, seq, json } => {
            let r = mirror_cmd::redact(&place, &journal_id, seq)?;
            if json {
                outln!("{}", serde_json::to_string(&r)?);
            } else {
                let how = if r.already_recorded { "was already recorded" } else { "is recorded" };
                outln!(
                    "the decision to redact the line of seq {} of journal {} (it looks like it holds a {}) {how} at seq {}: the mirror carries a redaction record in its place, and the line stays on this machine; run `abcd mirror push` to push the lines after it",
                    r.seq,
                    r.journal_id,
                    r.secret,
                    r.recorded_seq
                );
            }
            Ok(EXIT_OK)
        }
        MirrorAction::Auto { state, remote, every } => {
            let setting = mirror_cmd::set_auto(&place, state == "on", &remote, every)?;
            if setting.on {
                outln!(
                    "background mirror pushes are on: to {} at most every {} s, started by the hooks",
                    setting.remote,
                    setting.every_seconds
                );
            } else {
                outln!("background mirror pushes are off");
            }
            Ok(EXIT_OK)
        }
    }
}

/// Each journal or saved-aside ref a push left out, on stderr with why.
fn tell_refusals(report: &PushReport) {
    for j in report.journals.iter().filter(|j| j.outcome == "refused" || j.outcome == "partial") {
        let how = if j.outcome == "partial" { "was pushed only in part" } else { "was not pushed" };
        errln!(
            "abcd: the journal at {} {how}: {}",
            terminal_safe(&j.path, Lines::One),
            terminal_safe(j.why.as_deref().unwrap_or(""), Lines::One)
        );
    }
    for s in report.saved.iter().filter(|s| s.outcome == "refused" || s.outcome == "held") {
        errln!("abcd: {} was not pushed: {}", s.ref_name, terminal_safe(s.why.as_deref().unwrap_or(""), Lines::One));
    }
}

fn scope_words(scope: &Option<crate::event::Scope>) -> String {
    match scope {
        Some(crate::event::Scope::Repository { .. }) => "repository journal".into(),
        Some(_) => "working copy".into(),
        None => "journal".into(),
    }
}

fn push_text(r: &PushReport) -> String {
    let mut out = String::new();
    for j in &r.journals {
        let id = j.journal_id.as_deref().unwrap_or("(unknown id)");
        let path = terminal_safe(&j.path, Lines::One);
        let what = scope_words(&j.scope);
        match j.outcome {
            "pushed" => {
                let events = if j.new_events == 1 { "event" } else { "events" };
                out += &format!("pushed {id} {what} {path}: through seq {} ({} new {events})\n", j.head_seq.unwrap_or(0), j.new_events)
            }
            "up_to_date" => out += &format!("up to date {id} {what} {path}: seq {}\n", j.head_seq.unwrap_or(0)),
            "partial" => out += &format!("partly pushed {id} {what} {path}: through seq {}\n", j.head_seq.unwrap_or(0)),
            _ => out += &format!("refused {id} {what} {path}\n"),
        }
        if j.outcome != "refused"
            && let Some(why) = &j.why
        {
            out += &format!("  note: {}\n", terminal_safe(why, Lines::One));
        }
        for seq in &j.redacted {
            out += &format!("  seq {seq} went as a redaction record; the line stays on this machine\n");
        }
    }
    for s in &r.saved {
        out += &format!("{} {}\n", s.outcome.replace('_', " "), s.ref_name);
    }
    if r.journals.is_empty() && r.saved.is_empty() {
        out += "nothing to push: no journal of this repository has an event yet\n";
    }
    out
}

fn restart_text(r: &Restarted) -> String {
    let old = &r.old_commit[..r.old_commit.len().min(12)];
    let mut out = match (&r.quarantine, r.lost_seqs) {
        (Some(q), Some((from, to))) => format!(
            "kept {} line(s) of the old mirror {old} the journal no longer holds (seqs {from} to {to}) in {}\n",
            r.lost_lines,
            terminal_safe(q, Lines::One)
        ),
        _ => format!("the journal lost no line of the old mirror {old}\n"),
    };
    let remote = if r.remote_ref == "deleted" { "dropped on the remote and here" } else { "dropped here (the remote held none)" };
    out += &format!(
        "restarted the mirror of journal {} at {}: the old mirror was {remote}\n",
        r.journal_id,
        terminal_safe(&r.path, Lines::One)
    );
    if r.verified_dropped {
        out += "dropped this machine's verified copy of the old mirror\n";
    }
    out += &push_text(&r.push);
    out
}

fn fetch_text(r: &FetchReport) -> String {
    let mut out = String::new();
    for j in &r.journals {
        let machine = terminal_safe(j.machine.as_deref().unwrap_or("?"), Lines::One);
        let path = terminal_safe(j.path.as_deref().unwrap_or("?"), Lines::One);
        let seq = j.head_seq.map_or(String::new(), |s| format!(": seq {s}"));
        out += &format!("{} {} {machine} {path}{seq}", j.verdict, j.journal_id);
        if let Some(why) = &j.why {
            out += &format!(" — {}", terminal_safe(why, Lines::One));
        }
        if let (Some(n), Some(first)) = (j.redacted, j.first_redacted_seq) {
            out += &format!(" ({n} line(s) redacted from seq {first}: kept on the machine that wrote them)");
        }
        out += "\n";
    }
    if r.journals.is_empty() {
        out += &format!("no mirrored journal on {}\n", r.remote);
    }
    out
}

fn journal_header(v: &JournalView, this_machine: &str) -> String {
    // By characters, once scanned whole: an id taken from a remote's ref name need not be hex.
    let id8 = crate::secrets::cut_after_scan(&v.journal_id, crate::secrets::Bound::CharsUnmarked(JOURNAL_ID_SHOWN_CHARS))
        .unwrap_or_else(|_| "(an id that looks like a secret)".to_string());
    let head = match (v.head_seq, &v.head_time) {
        (Some(s), Some(t)) => format!("seq {s} at {t}"),
        (Some(s), None) => format!("seq {s}"),
        _ => "no head".into(),
    };
    let state = match (v.source, v.verification.as_str()) {
        ("local", "local") => "this machine".to_string(),
        ("mirror", "verified" | "unchanged") => format!("verified; as of {}", v.head_time.as_deref().unwrap_or("?")),
        (_, verdict) => match &v.why {
            Some(why) => format!("{verdict}: {}; showing the last verified copy", terminal_safe(why, Lines::One)),
            None => verdict.to_string(),
        },
    };
    let machine = if v.source == "local" { this_machine } else { &v.machine };
    format!(
        "{} {} (journal {}) {head} [{state}]\n",
        terminal_safe(machine, Lines::One),
        terminal_safe(&v.path, Lines::One),
        terminal_safe(&id8, Lines::One)
    )
}

fn status_text(s: &StatusView) -> String {
    let mut out = String::new();
    match &s.fetched_at {
        Some(t) => {
            out += &format!("mirrors from {} as of the fetch at {t}; this machine is {}\n", s.remote, terminal_safe(&s.machine, Lines::One))
        }
        None => {
            out += &format!(
                "no fetch from {} yet (run `abcd mirror fetch`); this machine is {}\n",
                s.remote,
                terminal_safe(&s.machine, Lines::One)
            )
        }
    }
    out += "\nworking copies:\n";
    for v in &s.working_copies {
        out += &journal_header(v, &s.machine);
        let items = v.open_items.as_deref().unwrap_or(&[]);
        if v.open_items.is_some() && items.is_empty() {
            out += "  no open items\n";
        }
        for i in items {
            out += &format!("  {}: {} {}\n", terminal_safe(&i.id, Lines::One), i.state, terminal_safe(&i.title, Lines::One));
        }
        for r in v.runs.as_deref().unwrap_or(&[]) {
            let halted = if r.halted { ", halted" } else { "" };
            out += &format!("  run {} (driver {}{halted})\n", terminal_safe(&r.run, Lines::One), r.driver);
            for l in &r.lanes {
                out += &format!("    lane {}: {}\n", terminal_safe(&l.lane, Lines::One), terminal_safe(&l.agent, Lines::One));
            }
        }
    }
    out += "\nrepository journals:\n";
    for v in &s.repositories {
        out += &journal_header(v, &s.machine);
        match &v.away {
            Some(a) => {
                out += &format!(
                    "  away record: {} from {} to {}, set by {} in {}; {} queued steps, {} stops{}\n",
                    match a.status {
                        crate::away::Status::Present => "present",
                        crate::away::Status::Away => "away",
                        crate::away::Status::Lapsed => "lapsed",
                    },
                    a.start,
                    a.end,
                    terminal_safe(&a.set_by, Lines::One),
                    terminal_safe(&a.from_working_copy, Lines::One),
                    a.queued_steps,
                    a.stops,
                    if a.hold_pushes { ", pushes held" } else { "" }
                )
            }
            None if v.source == "local" || v.verification == "verified" || v.verification == "unchanged" => {
                out += "  away record: never set\n"
            }
            None => {}
        }
    }
    out += "\n";
    if s.auto.on {
        out += &format!("background pushes: on, to {} at most every {} s\n", s.auto.remote, s.auto.every_seconds);
    } else {
        out += "background pushes: off (`abcd mirror auto on` turns them on)\n";
    }
    if let Some(p) = &s.last_push {
        let ok = if p.ok { "ok" } else { "FAILED" };
        out += &format!("last background push: {ok} at {} to {}: {}\n", p.at, p.remote, terminal_safe(&p.summary, Lines::One));
    }
    out
}
