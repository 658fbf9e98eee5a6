//! A loop turn's session start says where the agent is in the loop (issue 33): the turn
//! runner gives the agent `ABCD_LOOP_*` in its environment (docs/loop.md), the host passes
//! its environment to every hook, and the session start adds one line naming the loop, the
//! turn, the phase, the round and the step. The line rides the block the start frames
//! before the checklist, so the checklist's budget is cut by its length (SPEC §5).

use std::path::Path;

use crate::command::loops::{LOOP_PHASE_ENV, LOOP_ROUND_ENV, LOOP_RUN_ENV, LOOP_STEP_ENV, LOOP_TURN_ENV};
use crate::command::own_file::LANE_DEPTH;
use crate::places;

/// The most characters of a step's name the line shows (the loop's steps are short words).
pub const STEP_NAME_MAX: usize = 16;

/// The line for a loop turn, when the environment names one whose every field is well
/// formed: a run name the ledger accepts, numbers, a short lowercase step. Anything else is
/// no loop turn (the line never carries what it cannot vouch for).
pub fn turn_line(var: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let run = var(LOOP_RUN_ENV).filter(|r| crate::ledger::check_name("run", r).is_ok())?;
    let number = |name: &str| var(name)?.parse::<u64>().ok();
    let (turn, phase, round) = (number(LOOP_TURN_ENV)?, number(LOOP_PHASE_ENV)?, number(LOOP_ROUND_ENV)?);
    let step = var(LOOP_STEP_ENV).filter(|s| (1..=STEP_NAME_MAX).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_lowercase()))?;
    Some(format!(
        "abcd: this session is turn {turn} of loop {run} (phase {phase}, round {round}, the {step} step), in the loop's lane worktree; end the turn with your reply: the loop driver reads it and takes the next step (no wake needed, even while the person is away), and `abcd loop status {run}` shows the loop."
    ))
}

/// Whether this process's environment names a loop turn of the working copy at `root`: the
/// turn runner sets `ABCD_LOOP_*` for its agent and the host passes it to every hook, but
/// every process the agent starts inherits it too (a nested client, an agent `abcd launch`
/// starts in another run's lane). So the environment counts only in the worktree abcd made
/// for that very loop, `<home>/lanes/<repo>/<run>/<lane>` with `<run>` the one named: a
/// path check, no journal read. A loop run in folders the person named (`--*-cwd`) has no
/// such worktree, and its agents are judged as any session.
pub fn is_loop_turn(root: &Path) -> bool {
    loop_turn_at(root, &|name| std::env::var(name).ok(), places::home_dir().ok().as_deref())
}

fn loop_turn_at(root: &Path, var: &dyn Fn(&str) -> Option<String>, home: Option<&Path>) -> bool {
    let (Some(_), Some(run), Some(home)) = (turn_line(var), var(LOOP_RUN_ENV), home) else { return false };
    let lanes = crate::command::own_file::resolve(Path::new("/"), &home.join(places::LANES_DIR));
    let root = crate::command::own_file::resolve(Path::new("/"), root);
    let Ok(inside) = root.strip_prefix(&lanes) else { return false };
    let parts: Vec<&std::ffi::OsStr> = inside.iter().collect();
    parts.len() == LANE_DEPTH && parts[1] == std::ffi::OsStr::new(&run)
}

/// The start's block with the loop turn's line added after the away block, if any, when
/// the session runs a turn of the loop whose worktree `root` is ([`is_loop_turn`]).
pub fn with_turn_line(block: Option<String>, root: &Path) -> Option<String> {
    let line = is_loop_turn(root).then(|| turn_line(&|name| std::env::var(name).ok())).flatten();
    match (block, line) {
        (Some(b), Some(l)) => Some(format!("{b}\n{l}")),
        (b, l) => b.or(l),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn a_turn_line_names_the_loop_and_refuses_what_is_malformed() {
        let ok = [(LOOP_RUN_ENV, "night"), (LOOP_TURN_ENV, "3"), (LOOP_PHASE_ENV, "2"), (LOOP_ROUND_ENV, "1"), (LOOP_STEP_ENV, "advance")];
        let line = turn_line(&env(&ok)).unwrap();
        assert!(line.starts_with("abcd: this session is turn 3 of loop night (phase 2, round 1, the advance step)"), "{line}");
        assert_eq!(turn_line(&env(&ok[1..])), None, "no run, no line");
        let mut bad = ok;
        bad[0] = (LOOP_RUN_ENV, "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB");
        assert_eq!(turn_line(&env(&bad)), None, "a run name that is a secret is never shown");
        let mut bad = ok;
        bad[2] = (LOOP_PHASE_ENV, "two");
        assert_eq!(turn_line(&env(&bad)), None);
        // STEP_NAME_MAX on both sides.
        let at = "a".repeat(STEP_NAME_MAX);
        let over = "a".repeat(STEP_NAME_MAX + 1);
        let mut step = ok;
        step[4] = (LOOP_STEP_ENV, &at);
        assert!(turn_line(&env(&step)).is_some());
        step[4] = (LOOP_STEP_ENV, &over);
        assert_eq!(turn_line(&env(&step)), None);
    }
}
