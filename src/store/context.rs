//! The frame of the context a session starts with: the characters left for the checklist
//! once the away block (while the person is away) and the receipt's tokens are counted, and
//! the away block put above the checklist. The store renders the checklist for the frame's
//! budget when it writes the checklist (`session-context.json`); the hook frames it.

use crate::checklist::render::{self, BLOCK_SEP, DEFAULT_BUDGET_CHARS};
use crate::event::context::MARKED_EXTRA_CHARS;

/// The first words of the checklist's one header line: factual, as the host's guidance asks.
pub const CONTEXT_HEADER: &str = render::HEADER;

/// The characters the checklist (its header included) may take after `away_block` (when
/// the person is away), within the hook's budget (the host's 10,000 characters less a
/// margin) less the receipt's tokens around the whole.
pub fn checklist_budget(away_block: Option<&str>) -> usize {
    let block_chars = away_block.map_or(0, |b| b.chars().count() + BLOCK_SEP.chars().count());
    (DEFAULT_BUDGET_CHARS - MARKED_EXTRA_CHARS).saturating_sub(block_chars).max(render::MIN_BUDGET_CHARS)
}

/// The checklist's text framed: the away block first, when there is one.
pub fn frame(checklist: &str, away_block: Option<&str>) -> String {
    match away_block {
        Some(block) => format!("{block}{BLOCK_SEP}{checklist}"),
        None => checklist.to_string(),
    }
}
