//! Helpers shared by the integration tests: temporary journals with their own home
//! store, so no test touches the real one, and working copies (`repo`). Every test binary
//! declares this module once (`#[path = "../common/mod.rs"] mod common;` in its `main.rs`)
//! and its modules say `use crate::common;` (docs/testing.md).
#![allow(dead_code)]

pub mod chain;
pub mod mirror_lab;
pub mod remote;
pub mod repo;
pub mod secret_corpus;
pub mod src_tree;
pub mod status_line_payload;

use std::path::{Path, PathBuf};

use abcd::event::Scope;
use abcd::journal::anchor::AnchorStore;
use abcd::journal::storage::RealDisk;
use abcd::journal::{Actor, Journal, JournalPaths, NewEvent};
use serde_json::json;

pub struct TempJournal {
    pub dir: tempfile::TempDir,
    pub paths: JournalPaths,
    pub home: PathBuf,
}

impl TempJournal {
    pub fn new() -> TempJournal {
        let dir = tempfile::tempdir().expect("temp dir");
        let paths = JournalPaths::beside(&dir.path().join("wc/.abcd/.work.local/journal.jsonl"));
        let home = dir.path().join("home");
        TempJournal { dir, paths, home }
    }

    pub fn journal(&self) -> Journal {
        Journal::new(RealDisk::shared(), self.paths.clone(), Some(AnchorStore::new(&self.home)))
    }

    pub fn scope(&self) -> Scope {
        Scope::WorkingCopy { root: self.dir.path().join("wc").display().to_string() }
    }

    pub fn path(&self) -> &Path {
        &self.paths.journal
    }

    pub fn bytes(&self) -> Vec<u8> {
        std::fs::read(self.path()).expect("journal readable")
    }
}

pub fn event(kind: &str, n: u64) -> NewEvent {
    NewEvent { kind: kind.to_string(), actor: Actor::this_process(Some("test-session".into())), data: json!({"n": n}) }
}

/// Byte offsets where each line starts, and the file length at the end.
pub fn line_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' && i + 1 < bytes.len() {
            starts.push(i + 1);
        }
    }
    starts
}

/// A journal of `n` ordinary events after genesis (`compaction.recorded`, data `{"n": i}`).
pub fn journal_with(n: usize) -> TempJournal {
    let tj = TempJournal::new();
    let j = tj.journal();
    for i in 0..n {
        j.append(event("compaction.recorded", i as u64), Some(&tj.scope())).unwrap();
    }
    tj
}

/// An injected context without the receipt tokens abcd puts at its start and end
/// (`[abcd:<8 hex>] ` and `\n[abcd:<8 hex>]`); a text without them is returned as it is.
pub fn unmarked(text: &str) -> String {
    let token_len = "[abcd:]".len() + 8;
    let is_token = |t: &str| t.len() == token_len && t.starts_with("[abcd:") && t.ends_with(']');
    let Some(head) = text.get(..token_len).filter(|t| is_token(t)) else { return text.to_string() };
    let body = text[token_len..].strip_prefix(' ').unwrap_or(&text[token_len..]);
    body.strip_suffix(&format!("\n{head}")).unwrap_or(body).to_string()
}
