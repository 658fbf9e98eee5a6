//! Replays every committed fuzz corpus input (`fuzz/corpus/<target>/`) through the same
//! invariant checks the fuzz targets run (`fuzz/checks.rs`), so an ordinary `cargo test`
//! re-checks every input a fuzzer ever kept. See `fuzz/README.md`.
//!
//! Inputs that showed an abcd bug live in `fuzz/known-gaps/<target>/` and are replayed by
//! a test of their own (F1, F2: both fixed; their inputs are in the corpus too). A gap
//! still open would be an ignored test that fails (`cargo test --release --test
//! journal fuzz_corpus:: -- --ignored`); none is.

#[allow(dead_code)]
#[path = "../../fuzz/checks.rs"]
mod checks;

use std::path::{Path, PathBuf};

fn inputs(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no inputs in {}", dir.display());
    files
}

/// Runs every input in `dir` through `check` and names every one that fails.
fn replay(dir: &str, check: fn(&[u8])) {
    let mut failures = Vec::new();
    for path in inputs(dir) {
        let bytes = std::fs::read(&path).unwrap();
        if let Err(panic) = std::panic::catch_unwind(|| check(&bytes)) {
            let why = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
            failures.push(format!("{dir}/{}: {}", path.file_name().unwrap().to_string_lossy(), why.unwrap_or_default()));
        }
    }
    assert!(failures.is_empty(), "{} input(s) fail their check:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn journal_reader_corpus() {
    replay("fuzz/corpus/journal_reader", checks::journal_reader);
}

#[test]
fn journal_mutations_corpus() {
    replay("fuzz/corpus/journal_mutations", checks::journal_mutations);
}

#[test]
fn hook_payload_corpus() {
    replay("fuzz/corpus/hook_payload", checks::hook_payload);
}

#[test]
fn checklist_reader_corpus() {
    replay("fuzz/corpus/checklist_reader", checks::checklist_reader);
}

#[test]
fn cron_corpus() {
    replay("fuzz/corpus/cron", checks::cron);
}

/// The journal vectors seeded the journal targets; every one passes the reader checks.
#[test]
fn journal_vectors_pass_the_reader_checks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("journal-format/vectors");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            checks::journal_reader(&std::fs::read(&path).unwrap());
            n += 1;
        }
    }
    assert!(n > 0);
}

/// F1 (fixed): a damaged newline that merges the last two lines into one over 64 KiB is
/// corruption, not a torn tail.
#[test]
fn f1_a_merged_line_over_the_limit_is_corruption() {
    replay("fuzz/known-gaps/journal_mutations", checks::journal_mutations);
}

#[test]
fn f2_an_accepted_checklist_file_shows_no_secret() {
    replay("fuzz/known-gaps/checklist_reader", checks::checklist_reader);
}
