//! Projection files: the folded state rendered as JSON that names the journal line it
//! reflects and a digest of its state. A projection that is unreadable, fails its digest
//! (a hand edit, say) or names another line is not trusted; the reader re-folds.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fold::{FoldedState, state_digest};
use crate::journal::format::Hash;
use crate::journal::scan::Head;
use crate::journal::storage::{Storage, read_small};

pub const SUMMARY_FILE: &str = "journal-summary.json";
pub const SUMMARY_SCHEMA: &str = "abcd/journal-summary/v1";
/// The largest projection file read.
pub const MAX_PROJECTION_BYTES: u64 = 16 << 20;

/// The journal line a projection reflects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalRef {
    pub seq: u64,
    pub hash: Hash,
    pub offset: u64,
    pub end: u64,
}

impl From<Head> for JournalRef {
    fn from(h: Head) -> Self {
        JournalRef { seq: h.seq, hash: h.hash, offset: h.offset, end: h.end }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SummaryFile {
    schema: String,
    journal: JournalRef,
    digest: String,
    state: FoldedState,
}

pub fn render_summary(state: &FoldedState, head: Head) -> Vec<u8> {
    let file = SummaryFile { schema: SUMMARY_SCHEMA.into(), journal: head.into(), digest: state_digest(state), state: state.clone() };
    let mut out = serde_json::to_vec_pretty(&file).expect("plain data serializes");
    out.push(b'\n');
    out
}

/// The projection's state and the line it names, if it parses and its digest holds.
pub fn load_summary_any(storage: &dyn Storage, path: &Path) -> Option<(FoldedState, Head)> {
    let bytes = read_small(storage, path, MAX_PROJECTION_BYTES).ok()?;
    let file: SummaryFile = serde_json::from_slice(&bytes).ok()?;
    let j = file.journal;
    let intact = file.schema == SUMMARY_SCHEMA
        && file.digest == state_digest(&file.state)
        && file.state.journal.events == j.seq + 1
        && file.state.journal.last_hash == Some(j.hash);
    intact.then_some((file.state, Head { seq: j.seq, hash: j.hash, offset: j.offset, end: j.end }))
}

/// The projection's state when it is intact and reflects exactly `head`.
pub fn load_summary(storage: &dyn Storage, path: &Path, head: Option<Head>) -> Option<FoldedState> {
    let (state, named) = load_summary_any(storage, path)?;
    (Some(named) == head).then_some(state)
}
