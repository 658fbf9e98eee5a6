//! The away record in words: the block the model reads while away, the person's one line
//! on every prompt, the lapsed-window line, and what `abcd mode back` and bare `abcd mode`
//! print. Pure: the record and the clock reading in, text out. Times are shown in the
//! machine's zone through `crate::clock::show`, which the caller's `show` stands for.

use jiff::Timestamp;

use super::{Status, Window};
use crate::verdict::stop::{QUESTION_ROUTE, QUESTION_ROUTE_SHORT};

/// The away block's length at most, in characters: it goes into every session start.
pub const AWAY_BLOCK_MAX_CHARS: usize = 450;

/// Makes an instant readable (the CLI passes `crate::clock::show`; tests pass a fixed one).
pub type Show<'a> = &'a dyn Fn(Timestamp) -> String;

/// The away block: what the model reads at session start and beside every prompt while
/// the person is away. The rules in short, each once; the full text is one command away
/// (`abcd mode`, [`away_rules_full`]).
pub fn away_block(w: &Window, show: Show<'_>) -> String {
    let mut text = format!(
        "abcd: the person is away until {}. Keep working; end a turn only with nothing owed and a wake scheduled. \
         It grants no right to push, open or merge a PR.",
        show(w.end)
    );
    if w.hold_pushes {
        text.push_str(" Queue every push.");
    }
    text.push_str(" No question reaches them: ");
    text.push_str(QUESTION_ROUTE_SHORT);
    let queued = w.queue.len();
    if queued > 0 {
        text.push_str(&format!(" {} queued.", count(queued, "step", "steps")));
    }
    text.push_str(" `abcd mode back` only on their word. Full rules: `abcd mode`.");
    text
}

/// The away rules in full, as bare `abcd mode` prints them while away.
pub fn away_rules_full(w: &Window, show: Show<'_>) -> String {
    let mut text = format!(
        "abcd: the person is away until {} (set by {} from {}). While away, keep working: end a turn only when nothing you \
         can do is owed, and then only with a wake scheduled (a session cron); abcd's Stop hook holds you to it. The away mode \
         grants no rights: the person's own standing instruction stays the only authority to push, open or merge a pull \
         request.",
        show(w.end),
        w.set_by,
        w.working_copy
    );
    if w.hold_pushes {
        text.push_str(" The person has said pushes wait for their return: do the local work, then queue each push with `abcd mode queue \"push <branch>\"`.");
    }
    text.push_str(" No question reaches the person while away. ");
    text.push_str(QUESTION_ROUTE);
    let queued = w.queue.len();
    if queued > 0 {
        text.push_str(&format!(" {} queued for the person so far.", count(queued, "step", "steps")));
    }
    text.push_str(" Run `abcd mode back` only on the person's own word in this session.");
    text
}

/// The person's one line on every prompt while away.
pub fn person_line(w: &Window, show: Show<'_>) -> String {
    let pushes = if w.hold_pushes { "; pushes wait for you" } else { "" };
    format!(
        "abcd: away until {}, set by {} from {}; {} queued, {} handed back{pushes}. `abcd mode back` ends it.",
        show(w.end),
        w.set_by,
        w.working_copy,
        count(w.queue.len(), "step", "steps"),
        count(w.handed_back.len(), "item", "items"),
    )
}

/// The line on every prompt while a lapsed window holds anything unread (a queued step,
/// a recorded stop, a hand-back or a decision); `None` when it holds nothing (or is not
/// lapsed).
pub fn lapsed_line(w: &Window, now: Timestamp, show: Show<'_>) -> Option<String> {
    if w.status(now) != Status::Lapsed || w.unread() == 0 {
        return None;
    }
    Some(format!(
        "abcd: the away window ended at {} with {} queued, {} recorded, {} handed back and {} unread; `abcd mode back` prints and closes it.",
        show(w.end),
        count(w.queue.len(), "step", "steps"),
        count(w.stops.len(), "stop", "stops"),
        count(w.handed_back.len(), "item", "items"),
        count(w.decisions.len(), "decision", "decisions"),
    ))
}

/// What `abcd mode back` prints: one plain line per queued step, hand-back, recorded
/// stop (label and count) and decision, then what was dropped past the caps.
pub fn back_report(w: &Window, show: Show<'_>) -> Vec<String> {
    let mut lines = Vec::new();
    for q in &w.queue {
        lines.push(format!("queued: {}", q.step));
    }
    for h in &w.handed_back {
        lines.push(format!("handed back: branch {} at {} (its push is queued)", h.branch, short(&h.head)));
    }
    for s in &w.stops {
        let mut line = format!("stop: {}", s.stop.label.words());
        if let Some(kind) = &s.stop.error_type {
            line.push_str(&format!(" ({kind})"));
        }
        if let Some(bound) = s.stop.bound_words() {
            line.push_str(&format!(", {bound}"));
        }
        if let Some(next) = &s.stop.next {
            line.push_str(&format!("; next: {next}"));
        }
        let times = if s.count == 1 { "once".to_string() } else { format!("{} times", s.count) };
        line.push_str(&format!(" ({times}, last at {})", show(s.last_at)));
        lines.push(line);
    }
    // Trade-offs first (stable), tagged with their kind.
    let mut decisions: Vec<&super::Decision> = w.decisions.iter().collect();
    decisions.sort_by_key(|d| d.tradeoff.is_none());
    for d in decisions {
        let tag = d.tradeoff.map(|t| format!(" ({} trade-off)", t.name())).unwrap_or_default();
        lines.push(format!("decided{tag}: {} (grounds: {}; undo: {}){}", d.text, d.grounds, d.undo, tradeoff_answer(d)));
    }
    for n in &w.notifications {
        let said = n.line.as_deref().map(|l| format!(": {l}")).unwrap_or_default();
        lines.push(format!("host notification: {} at {}{said}", n.notification_type, show(n.at)));
    }
    for n in &w.notified {
        lines.push(format!("notified you at {}: {}", show(n.at), n.summary));
    }
    for (n, what) in [
        (w.dropped_stops, "recorded stops"),
        (w.dropped_handed_back, "hand-backs"),
        (w.dropped_decisions, "decisions"),
        (w.dropped_notifications, "host notifications"),
    ] {
        if n > 0 {
            lines.push(format!("dropped: {n} older {what} past the record's cap (the repository journal keeps every one)"));
        }
    }
    lines
}

/// The exact command that answers the trade-off recorded at `seq` with `answer`.
pub fn answer_command(seq: u64, answer: super::Answer) -> String {
    format!("abcd decide --answer {seq} {}", answer.name())
}

/// What `abcd mode back` and the return lists add after a trade-off: the item it is tied
/// to, its seq, and the person's answer or the commands that give it (an undo is the
/// session's next work). Nothing for a decision that is no trade-off.
pub fn tradeoff_answer(d: &super::Decision) -> String {
    let (Some(_), Some(seq)) = (d.tradeoff, d.seq) else { return String::new() };
    let item = d.item.as_deref().map(|i| format!(" (tied to checklist item {i})")).unwrap_or_default();
    let answer = match d.answer {
        None => format!(
            "awaiting the person's answer: `{}` or `{}`",
            answer_command(seq, super::Answer::Keep),
            answer_command(seq, super::Answer::Undo)
        ),
        Some(super::Answer::Keep) => "answered keep".to_string(),
        Some(super::Answer::Undo) => "answered undo: undoing it is the session's next work".to_string(),
    };
    format!("{item}; seq {seq}, {answer}")
}

/// Bare `abcd mode`: the state in one line.
pub fn status_line(window: Option<&Window>, now: Timestamp, show: Show<'_>) -> String {
    match window.map(|w| (w, w.status(now))) {
        None => "present: no away window has been set in this repository.".to_string(),
        Some((w, Status::Present)) => {
            let ended = w.ended.as_ref().expect("a window reads present only once ended");
            format!("present: the last away window was ended by {} from {} at {}.", ended.by, ended.working_copy, show(ended.at))
        }
        Some((w, Status::Away)) => {
            let pushes = if w.hold_pushes { ", pushes held" } else { "" };
            format!(
                "away until {} (set by {} from {} at {}{pushes}); {} queued, {} recorded, {} handed back, {}.",
                show(w.end),
                w.set_by,
                w.working_copy,
                show(w.start),
                count(w.queue.len(), "step", "steps"),
                count(w.stops.len(), "stop", "stops"),
                count(w.handed_back.len(), "item", "items"),
                count(w.decisions.len(), "decision", "decisions"),
            )
        }
        Some((w, Status::Lapsed)) => format!(
            "lapsed at {} (set by {} from {}); {} unread; `abcd mode back` prints and closes it.",
            show(w.end),
            w.set_by,
            w.working_copy,
            count(w.unread(), "item", "items"),
        ),
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
}

fn short(head: &str) -> &str {
    &head[..head.len().min(12)]
}
