//! One scan, whole, before any cut (issue 34), held by reading `src/`: text that reaches
//! the journal, a notify command, a projection, a terminal or the remote is cut for size
//! only by `secrets::cut_after_scan` (or `one_line_after_scan`), which scans the whole text
//! as it arrived before it cuts. Any other cut in shipped code is listed below with why it
//! is not such a text; a new one fails here until it goes through the helper or is listed.
//!
//! Test code is left out: `#[cfg(test)]` items and the files they declare (read as
//! `tests/structure/layering.rs` reads them, through `common/src_tree.rs`).

use std::path::Path;

use crate::common::src_tree;
use src_tree::{CodeLine, code_lines, src_dir, write_file};

/// What cuts a text or a buffer short. `.take(` counts on a line that also reads `chars()`.
const CUT_MARKS: &[&str] = &[".truncate(", "is_char_boundary(", "floor_char_boundary(", "char_indices().nth(", ".split_off(", "'…'"];

/// The helper's own file, where the one cut lives.
const HELPER: &str = "secrets.rs";

/// Cuts that are not of a text that leaves: (file relative to `src/`, the code the line
/// holds, why).
const NOT_TEXT: &[(&str, &str, &str)] = &[
    ("journal/append.rs", "buf.truncate(n)", "a read buffer trimmed to the bytes read"),
    ("journal/storage.rs", "buf.truncate(n)", "a read buffer trimmed to the bytes read"),
    ("platform/linux.rs", "buf.truncate(n)", "a read buffer trimmed to the bytes read"),
    ("host/transcript.rs", "bytes.truncate(got)", "a read buffer trimmed to the bytes read"),
    ("platform/child.rs", "kept.truncate(whole)", "a child's stderr kept in whole lines only; each line is scanned where it is shown"),
    ("checklist/render.rs", "done.truncate(RECENT_DONE_MAX)", "a list of items, each written whole"),
    ("owed/branches.rs", "candidates.truncate(BRANCHES_EXAMINED_MAX)", "a list of branches, each examined whole"),
    ("owed/git_answers.rs", "file.entries.truncate(ENTRIES_MAX)", "a list of kept readings, each kept whole"),
    ("journal/group_sync.rs", "list.split_off(", "a list of waiting writers"),
    ("verdict/stop.rs", "first.truncate(OWED_NAMED_MAX)", "a list of owed items, each named whole"),
    (
        "verdict/stop.rs",
        "message.is_char_boundary(start)",
        "reads the message's tail to judge whether it ends in a question; nothing of it is kept or shown",
    ),
    (
        "phased/agent.rs",
        "text.is_char_boundary(keep)",
        "quotes one lane's reply into the other lane's prompt file on this machine; the journal records only its hash and size",
    ),
];

/// Every cut outside the helper that [`NOT_TEXT`] does not list, as `file:line: mark in line`.
fn cuts_outside_the_helper(root: &Path) -> Vec<String> {
    let mut found = vec![];
    for CodeLine { rel, number, code, line } in code_lines(root, |rel| rel == HELPER) {
        let chars_take = code.contains("chars()") && code.contains(".take(");
        let marks = CUT_MARKS.iter().filter(|m| code.contains(**m) && !code.contains(".truncate(false)"));
        for mark in marks.map(|m| m.to_string()).chain(chars_take.then(|| "chars() … .take(".to_string())) {
            if !NOT_TEXT.iter().any(|(f, held, _)| rel == *f && code.contains(held)) {
                found.push(format!("{rel}:{number}: `{mark}` in {line}"));
            }
        }
    }
    found
}

#[test]
fn text_is_cut_only_after_the_whole_of_it_is_scanned() {
    let found = cuts_outside_the_helper(&src_dir());
    assert!(
        found.is_empty(),
        "a cut outside secrets::cut_after_scan (scan the whole text, then cut, through the helper; or list it in NOT_TEXT with why it is no text that leaves):\n{}",
        found.join("\n")
    );
}

/// Each listed exception still names a line that exists: a stale entry would excuse the
/// next cut written in its file.
#[test]
fn every_listed_cut_is_still_there() {
    let lines = code_lines(&src_dir(), |rel| rel == HELPER);
    for (file, held, why) in NOT_TEXT {
        assert!(lines.iter().any(|l| l.rel == *file && l.code.contains(held)), "{file}: `{held}` ({why}) is gone; drop it from NOT_TEXT");
    }
}

/// The check itself, on a small tree that cuts once per mark and keeps the rule elsewhere.
#[test]
fn each_cut_outside_the_helper_is_caught_and_nothing_else() {
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    let write = |rel: &str, text: &str| write_file(root, rel, text);
    write("secrets.rs", "fn cut(t: &str) -> String { t.chars().take(3).collect() }\n");
    write("away/notify.rs", "fn f(t: &str) -> String { t.chars().take(200).collect() }\n");
    write("places.rs", "fn g(t: &str) -> String { t.chars().filter(|c| c.is_ascii()).take(64).collect() }\n");
    write("host/claude.rs", "fn h(mut t: String) { t.truncate(10); }\n// t.chars().take(1) in a comment is no cut\n");
    write(
        "journal/lock.rs",
        "fn o() { opts.create(true).truncate(false); }\n#[cfg(test)]\nmod tests {\n    fn t(s: &str) { s.chars().take(1); }\n}\n",
    );
    write("journal/append.rs", "fn r() { buf.truncate(n); }\nfn s() { line.truncate(n); }\n");
    write("verdict/stop.rs", "fn c(mut s: String) { s.push('…'); }\n");
    let found = cuts_outside_the_helper(root);
    let expected = [
        "away/notify.rs:1: `chars() … .take(`",
        "host/claude.rs:1: `.truncate(`",
        "journal/append.rs:2: `.truncate(`",
        "places.rs:1: `chars() … .take(`",
        "verdict/stop.rs:1: `'…'`",
    ];
    assert_eq!(found.len(), expected.len(), "{found:#?}");
    for (got, want) in found.iter().zip(expected) {
        assert!(got.starts_with(want), "{got} is not {want}");
    }
}
