//! `abcd decide --answer <seq> keep|undo` and `abcd checklist design-done <id>`: calls
//! `command::design_done`, prints.

use serde_json::json;

use super::{EXIT_FAILURE, EXIT_OK};
use crate::away::{Answer, TradeoffRecord};
use crate::command::away::Repository;
use crate::command::design_done::{self, Answered, DesignDone, answer_command};

pub fn run_answer(repo: &Repository, seq: &str, answer: &str, json_out: bool) -> anyhow::Result<i32> {
    let Answered { record, replaced, seq: written } = design_done::answer(repo, seq, answer, &|name| std::env::var(name).ok())?;
    let answer = record.answer.expect("just answered");
    if json_out {
        outln!("{}", json!({"answered": record.seq, "answer": answer, "replaced": replaced, "seq": written}));
        return Ok(EXIT_OK);
    }
    let mut line = format!("answered seq {} ({} trade-off: {}): {}", record.seq, record.tradeoff.name(), record.text, answer.name());
    if let Some(before) = replaced {
        line.push_str(&format!("; this replaces the earlier answer {}", before.name()));
    }
    if answer == Answer::Undo {
        line.push_str("; undoing it is the session's next work");
    }
    outln!("{line}");
    Ok(EXIT_OK)
}

/// One trade-off as design-done lists it.
fn tradeoff_line(t: &TradeoffRecord) -> String {
    match t.answer {
        Some(a) => format!("  seq {} ({} trade-off): {}; answered {}", t.seq, t.tradeoff.name(), t.text, a.name()),
        None => format!(
            "  seq {} ({} trade-off): {}; answer with `{}` or `{}`",
            t.seq,
            t.tradeoff.name(),
            t.text,
            answer_command(t.seq, Answer::Keep),
            answer_command(t.seq, Answer::Undo)
        ),
    }
}

/// Exit 0 when the design is done, 1 when a tied trade-off waits for the person's answer.
pub fn run_design_done(place: &crate::places::Place, id: &str, json_out: bool) -> anyhow::Result<i32> {
    let found: DesignDone = design_done::design_done(place, id)?;
    let done = found.done();
    if json_out {
        outln!("{}", json!({"item": found.item, "design_done": done, "tradeoffs": found.tradeoffs}));
    } else if found.tradeoffs.is_empty() {
        outln!("yes: no trade-off recorded for checklist item {}.", found.item);
    } else if done {
        outln!("yes: the person answered every trade-off tied to checklist item {}:", found.item);
        for t in &found.tradeoffs {
            outln!("{}", tradeoff_line(t));
        }
    } else {
        let waiting: Vec<&TradeoffRecord> = found.unanswered().collect();
        let s = if waiting.len() == 1 { "" } else { "s" };
        outln!(
            "no: {} trade-off{s} tied to checklist item {} wait{} for the person's answer:",
            waiting.len(),
            found.item,
            if s.is_empty() { "s" } else { "" }
        );
        for t in waiting {
            outln!("{}", tradeoff_line(t));
        }
    }
    Ok(if done { EXIT_OK } else { EXIT_FAILURE })
}
