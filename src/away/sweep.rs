//! The blocker sweep and the return lists in words (issue 23, docs/sweep.md): the list of
//! what could stop each working copy's session overnight, the ask a live session reads at
//! its next hook, and the lists shown on the first prompt after the person is back. Pure:
//! the record, what each working copy's checklist holds, and the clock reading in; text out.

use jiff::Timestamp;
use serde::Serialize;

use super::text::Show;
use super::{Sweep, Window};
use crate::checklist::item::BlockerKind;

/// The return lists' length at most, in characters: they ride one prompt's context beside
/// the away news and the behind note, within the host's 10,000.
pub const RETURN_LISTS_MAX_CHARS: usize = 6_000;

/// The return lists' first line for the model, and for the person.
pub const RETURN_HEADING_MODEL: &str = "abcd: the person is back from the away window. Put these before them first: the steps only they can do, then what was decided while they were away.";
pub const RETURN_HEADING_PERSON: &str = "abcd: back from the away window; what waits for you and what was decided:";

/// An open checklist item with a blocker, as a working copy's checklist holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockedItem {
    pub id: String,
    pub title: String,
    pub blocker: BlockerKind,
}

/// Whether a working copy answered the sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "at")]
pub enum Reporting {
    /// Its hook answered, or its checklist changed, at this time since the sweep began.
    Answered(Timestamp),
    /// Not yet, and the deadline is ahead.
    Waiting,
    /// Not since the sweep began, and the deadline has passed.
    NotReporting,
}

/// One working copy's part of the list: where it is, whether it answered, and the open
/// items its checklist marks blocked (the last known, for a copy not reporting).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    pub working_copy: String,
    pub reporting: Reporting,
    pub items: Vec<BlockedItem>,
    /// Why its checklist could not be read, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// Whether the copy keyed `key` answered `sweep`: its hook did, or its checklist was written
/// since the sweep began; else waiting until the deadline and not reporting after it.
pub fn reporting(sweep: &Sweep, key: &str, checklist_updated: Option<Timestamp>, now: Timestamp) -> Reporting {
    if let Some(a) = sweep.answer_of(key) {
        return Reporting::Answered(a.at);
    }
    match checklist_updated.filter(|t| *t >= sweep.start) {
        Some(t) => Reporting::Answered(t),
        None if sweep.is_open(now) => Reporting::Waiting,
        None => Reporting::NotReporting,
    }
}

/// What a live session reads at its first hook after the sweep began.
pub fn ask(sweep: &Sweep, show: Show<'_>) -> String {
    format!(
        "abcd: the person is leaving and collects, until {}, what could stop the sessions while they are away. Mark each open item \
         only they can unblock with `abcd checklist set <id> --blocker KIND` (decision: a design decision only they can make; \
         hands: a step only their hands can do; session: waits on another session; credential: a credential missing or expiring), \
         and add an item for any such blocker not listed yet. Then keep working.",
        show(sweep.deadline)
    )
}

/// The sweep's list as `abcd mode autonomous` and bare `abcd mode` print it: one heading
/// line, then each working copy with its state and its blocked items.
pub fn sweep_lines(sweep: &Sweep, copies: &[CopyReport], show: Show<'_>) -> Vec<String> {
    let answered = copies.iter().filter(|c| matches!(c.reporting, Reporting::Answered(_))).count();
    // No copy with a journal (away right after `abcd init`): none to count, so none is named.
    let tally = match copies.len() {
        0 => "no working copy to ask yet: none has a journal".to_string(),
        1 => format!("{answered} of 1 working copy answered"),
        n => format!("{answered} of {n} working copies answered"),
    };
    let mut lines = vec![format!(
        "blocker sweep: each live session is asked at its next hook to mark what could stop it; answers until {} ({tally}).",
        show(sweep.deadline),
    )];
    for c in copies {
        let state = match c.reporting {
            Reporting::Answered(at) => format!("answered at {}", show(at)),
            Reporting::Waiting => "asked, no answer yet".to_string(),
            Reporting::NotReporting => {
                format!("not reporting: no hook and no checklist write since the sweep began at {}; last known blockers", show(sweep.start))
            }
        };
        match (&c.unreadable, c.items.is_empty()) {
            (Some(why), _) => lines.push(format!("{} ({state}): its checklist cannot be read ({why})", c.working_copy)),
            (None, true) => lines.push(format!("{} ({state}): no blockers on record", c.working_copy)),
            (None, false) => {
                lines.push(format!("{} ({state}):", c.working_copy));
                lines.extend(c.items.iter().map(|i| format!("  - {}: {} ({}: {})", i.id, i.title, i.blocker.name(), i.blocker.words())));
            }
        }
    }
    lines
}

/// The return lists for a closed window: the steps only the person can do (the queued
/// steps, then every working copy's open items blocked on them), then the window's
/// decisions, trade-offs first, each with its grounds and how to undo it. `None` when there
/// is nothing to show. Whole lines past [`RETURN_LISTS_MAX_CHARS`] are left out, and the
/// last line says how many and where to find them.
pub fn return_lists(window: &Window, copies: &[CopyReport], heading: &str) -> Option<String> {
    let mut steps: Vec<String> = window.queue.iter().map(|q| format!("- queued from {}: {}", q.working_copy, q.step)).collect();
    for c in copies {
        for i in c.items.iter().filter(|i| i.blocker.is_the_persons()) {
            steps.push(format!("- {} item {} ({}: {}): {}", c.working_copy, i.id, i.blocker.name(), i.blocker.words(), i.title));
        }
    }
    let mut decisions: Vec<&super::Decision> = window.decisions.iter().collect();
    // Stable: trade-offs first, each group in the order decided.
    decisions.sort_by_key(|d| d.tradeoff.is_none());
    if steps.is_empty() && decisions.is_empty() {
        return None;
    }
    let mut lines = vec![heading.to_string()];
    if !steps.is_empty() {
        lines.push("Steps only the person can do:".into());
        lines.extend(steps);
    }
    if !decisions.is_empty() {
        lines.push("Decided while they were away (trade-offs first), each with how to undo it:".into());
        lines.extend(decisions.iter().map(|d| {
            let tag = d.tradeoff.map(|t| format!("{} trade-off: ", t.name())).unwrap_or_default();
            format!("- {tag}{} (grounds: {}; undo: {}){}", d.text, d.grounds, d.undo, super::text::tradeoff_answer(d))
        }));
    }
    Some(within(lines, RETURN_LISTS_MAX_CHARS))
}

/// `lines` joined, cut to whole lines within `max` characters with a last line naming how
/// many were left out.
fn within(lines: Vec<String>, max: usize) -> String {
    let whole = lines.join("\n");
    if whole.chars().count() <= max {
        return whole;
    }
    let footer = |n: usize| {
        let s = if n == 1 { "" } else { "s" };
        format!(
            "({n} more line{s} not shown: `abcd mode --json` holds the window's steps and decisions, `abcd checklist` each copy's items)"
        )
    };
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 0;
    for (n, line) in lines.iter().enumerate() {
        let len = line.chars().count() + usize::from(n > 0);
        // What stays shown must leave room for the line counting the rest.
        if used + len + 1 + footer(lines.len() - n - 1).chars().count() > max {
            break;
        }
        kept.push(line);
        used += len;
    }
    let left = lines.len() - kept.len();
    kept.iter().map(|l| l.to_string()).chain(std::iter::once(footer(left))).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines joined to exactly `total` characters.
    fn lines_of(total: usize) -> Vec<String> {
        let mut lines: Vec<String> = (0..10).map(|n| format!("line {n} {}", "x".repeat(92))).collect();
        let used: usize = lines.iter().map(|l| l.chars().count() + 1).sum();
        lines.push("y".repeat(total - used));
        lines
    }

    #[test]
    fn lines_within_the_cap_are_whole_and_one_past_it_leaves_a_counted_line_out() {
        let max = RETURN_LISTS_MAX_CHARS;
        let at = lines_of(max);
        assert_eq!(within(at.clone(), max), at.join("\n"), "at the cap every line is shown");
        let past = lines_of(max + 1);
        let cut = within(past.clone(), max);
        assert!(cut.chars().count() <= max, "{cut}");
        assert!(cut.ends_with("not shown: `abcd mode --json` holds the window's steps and decisions, `abcd checklist` each copy's items)"));
        assert!(cut.starts_with(&past[0]) && !cut.contains(&past[10]), "{cut}");
        let left: usize = cut.rsplit('(').next().unwrap().split(' ').next().unwrap().parse().unwrap();
        assert_eq!(cut.lines().count() - 1 + left, past.len(), "shown and counted add up: {cut}");
    }

    #[test]
    fn a_copy_answers_by_hook_or_by_a_checklist_write_since_the_start_else_waits_until_the_deadline() {
        let t = |s: &str| -> Timestamp { s.parse().unwrap() };
        let sweep = Sweep {
            start: t("2026-12-01T18:00:00Z"),
            deadline: t("2026-12-01T18:10:00Z"),
            working_copy: "/w/a".into(),
            answers: vec![super::super::SweepAnswer { working_copy: "/w/a".into(), at: t("2026-12-01T18:02:00Z") }],
        };
        let before = t("2026-12-01T18:09:59Z");
        let at_deadline = t("2026-12-01T18:10:00Z");
        assert_eq!(reporting(&sweep, "/w/a", None, at_deadline), Reporting::Answered(t("2026-12-01T18:02:00Z")));
        assert_eq!(reporting(&sweep, "/w/b", None, before), Reporting::Waiting);
        assert_eq!(reporting(&sweep, "/w/b", None, at_deadline), Reporting::NotReporting);
        assert_eq!(reporting(&sweep, "/w/b", Some(t("2026-12-01T17:59:59Z")), at_deadline), Reporting::NotReporting);
        assert_eq!(reporting(&sweep, "/w/b", Some(sweep.start), at_deadline), Reporting::Answered(sweep.start));
    }
}
