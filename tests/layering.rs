//! The crate's shape, held by reading `src/`: every import between top-level modules runs
//! down the layer order below (so there is no cycle), the journal imports only leaf
//! utilities, and nothing outside `cli/` prints. `docs/architecture.md` draws the same
//! order; a new module takes its place here or this test fails.
//!
//! Test code is left out: `#[cfg(test)]` items and the files they declare.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[path = "common/src_tree.rs"]
mod src_tree;
use src_tree::{collect_rs, is_test_file, src_dir, strip_test_items, write_file};

/// The layer order, lowest first. A module may import only modules of lower layers. The
/// first `LEAF_LAYERS` are the leaf utilities.
const LAYERS: &[(&str, &[&str])] = &[
    ("the OS seam", &["platform"]),
    ("primitives", &["byte_search", "utc_time", "clock", "cron", "ref_name", "refusal"]),
    ("secret scanner", &["secrets"]),
    ("journal: bytes", &["journal"]),
    ("wire types", &["event"]),
    ("rules, and git", &["checklist", "verdict", "git"]),
    ("pure domains", &["away", "ledger"]),
    ("pure loop", &["phased"]),
    ("folds", &["fold"]),
    ("the git-ref mirror", &["mirror"]),
    ("store and the world's readers", &["store", "places", "owed"]),
    ("host adapter", &["host"]),
    ("commands (the hooks' logic is one)", &["command"]),
    ("CLI", &["cli"]),
];

const LEAF_LAYERS: usize = 3;

/// Printing, which only `cli/` may do.
const PRINTING: &[&str] = &["print!(", "println!(", "eprint!(", "eprintln!(", "dbg!(", "io::stdout(", "io::stderr("];

/// What `cli/` and `main.rs` may not use: these macros panic when their stream fails.
const PANICKING_PRINTS: &[&str] = &["eprintln!(", "eprint!(", "println!(", "print!(", "dbg!("];

/// The standard streams, written only by the CLI's writers in `cli/mod.rs` (`out!`, `errln!`).
const STREAMS: &[&str] = &["io::stdout(", "io::stderr("];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&module))
}

/// A top-level module's source files, with test-only items and files left out.
fn module_sources(root: &Path) -> BTreeMap<String, Vec<(PathBuf, String)>> {
    let mut out: BTreeMap<String, Vec<(PathBuf, String)>> = BTreeMap::new();
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" || name == "main" {
            continue;
        }
        let mut files = vec![];
        if path.is_dir() {
            collect_rs(&path, &mut files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path.clone());
        } else {
            continue;
        }
        let texts = files
            .into_iter()
            .filter_map(|f| {
                let text = std::fs::read_to_string(&f).unwrap();
                (!is_test_file(&f)).then(|| (f, strip_test_items(&text)))
            })
            .collect();
        out.insert(name, texts);
    }
    out
}

/// The top-level modules a text names through `crate::`, each with one line that does.
fn crate_references(text: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    // Comments left out line by line, then the whole text read at once, so a `use
    // crate::{` group that spans lines or nests is read whole.
    let code: Vec<&str> = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect();
    let joined = code.join("\n");
    let line_at = |offset: usize| code[joined[..offset].matches('\n').count()].trim().to_string();
    let mut found = BTreeMap::new();
    let mut from = 0;
    while let Some(at) = joined[from..].find("crate::").map(|i| from + i) {
        let after = &joined[at + "crate::".len()..];
        let names = match after.strip_prefix('{') {
            Some(group) => group_heads(group),
            None => vec![after.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("")],
        };
        for name in names {
            if modules.contains(name) {
                found.entry(name.to_string()).or_insert_with(|| line_at(at));
            }
        }
        from = at + "crate::".len();
    }
    found
}

/// The first path segment of each item of a `{ … }` group (the text after its `{`), nested
/// groups skipped to their matching brace.
fn group_heads(group: &str) -> Vec<&str> {
    let mut heads = vec![];
    let (mut depth, mut item_start) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                heads.push(&group[item_start..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.push(&group[item_start..i]);
                item_start = i + 1;
            }
            _ => {}
        }
    }
    heads.into_iter().map(|item| item.trim().split("::").next().unwrap_or("").trim()).filter(|h| !h.is_empty()).collect()
}

/// Every import that breaks the layer order, and every module not in it.
fn layering_breaks(root: &Path) -> Vec<String> {
    let sources = module_sources(root);
    let modules: BTreeSet<String> = sources.keys().cloned().collect();
    let mut breaks = vec![];
    for (module, files) in &sources {
        let Some(layer) = layer_of(module) else {
            breaks.push(format!("`{module}` has no place in the layer order: add it to LAYERS and docs/architecture.md"));
            continue;
        };
        for (file, text) in files {
            for (target, line) in crate_references(text, &modules) {
                if target == *module {
                    continue;
                }
                match layer_of(&target) {
                    Some(t) if t < layer => {}
                    _ => breaks.push(format!(
                        "{} ({}) imports `{target}` ({}), which is not below it: {line}",
                        file.strip_prefix(root).unwrap_or(file).display(),
                        LAYERS[layer].0,
                        layer_of(&target).map_or("no layer", |t| LAYERS[t].0),
                    )),
                }
            }
        }
    }
    breaks
}

fn printing_outside_cli(root: &Path) -> Vec<String> {
    let mut found = vec![];
    for (module, files) in module_sources(root) {
        if module == "cli" {
            continue;
        }
        for (file, text) in files {
            for line in text.lines() {
                let code = line.split("//").next().unwrap_or("");
                if let Some(p) = PRINTING.iter().find(|p| code.contains(*p)) {
                    found.push(format!("{}: `{p}` in {}", file.strip_prefix(root).unwrap_or(&file).display(), line.trim()));
                }
            }
        }
    }
    found
}

/// Prints in `cli/` and `main.rs` that bypass the CLI's writers.
fn cli_prints_outside_its_writers(root: &Path) -> Vec<String> {
    let mut files = module_sources(root).remove("cli").unwrap_or_default();
    let main = root.join("main.rs");
    if let Ok(text) = std::fs::read_to_string(&main) {
        files.push((main, strip_test_items(&text)));
    }
    let writers = root.join("cli/mod.rs");
    let mut found = vec![];
    for (file, text) in files {
        let streams: &[&str] = if file == writers { &[] } else { STREAMS };
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            if let Some(p) = PANICKING_PRINTS.iter().chain(streams).find(|p| code.contains(**p)) {
                found.push(format!("{}: `{p}` in {}", file.strip_prefix(root).unwrap_or(&file).display(), line.trim()));
            }
        }
    }
    found
}

#[test]
fn every_import_runs_down_the_layer_order() {
    let breaks = layering_breaks(&src_dir());
    assert!(breaks.is_empty(), "imports against the layer order:\n{}", breaks.join("\n"));
}

#[test]
fn the_journal_imports_only_leaf_utilities() {
    let leaf: Vec<&str> = LAYERS[..LEAF_LAYERS].iter().flat_map(|(_, m)| m.iter().copied()).collect();
    let sources = module_sources(&src_dir());
    let modules: BTreeSet<String> = sources.keys().cloned().collect();
    for (file, text) in &sources["journal"] {
        for target in crate_references(text, &modules).keys() {
            assert!(target == "journal" || leaf.contains(&target.as_str()), "{} imports `{target}`", file.display());
        }
    }
}

#[test]
fn nothing_outside_cli_prints() {
    let found = printing_outside_cli(&src_dir());
    assert!(found.is_empty(), "printing outside cli/:\n{}", found.join("\n"));
}

#[test]
fn the_cli_prints_only_through_its_writers() {
    let found = cli_prints_outside_its_writers(&src_dir());
    assert!(found.is_empty(), "printing in cli/ or main.rs past `out!`/`errln!`:\n{}", found.join("\n"));
}

#[test]
fn a_panicking_print_or_a_stream_outside_the_writers_is_caught() {
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    write_file(root, "cli/mod.rs", "fn w() { std::io::stdout().lock(); }\n");
    write_file(root, "cli/verb.rs", "fn v() { eprintln!(\"x\"); }\n#[cfg(test)]\nmod tests {\n    fn t() { println!(\"y\"); }\n}\n");
    write_file(root, "cli/other.rs", "fn o() { let _ = std::io::stderr(); }\n");
    write_file(root, "main.rs", "fn main() { print!(\"z\"); }\n");
    let mut found = cli_prints_outside_its_writers(root);
    found.sort();
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].starts_with("cli/other.rs: `io::stderr(`"), "{found:?}");
    assert!(found[1].starts_with("cli/verb.rs: `eprintln!(`"), "{found:?}");
    assert!(found[2].starts_with("main.rs: `print!(`"), "{found:?}");
}

/// The checks themselves, on a small tree that breaks each rule once.
#[test]
fn a_wrong_import_a_print_and_an_unplaced_module_are_each_caught() {
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    let write = |rel: &str, text: &str| write_file(root, rel, text);
    write("lib.rs", "pub mod journal;\npub mod fold;\n");
    write("journal/mod.rs", "use crate::fold::FoldedState;\n#[cfg(test)]\nmod tests {\n    use crate::cli::x;\n}\n");
    write("fold/mod.rs", "use crate::{journal, event::Known};\npub fn f() { println!(\"x\"); }\n");
    write("event.rs", "");
    write("newcomer.rs", "");
    // Groups across lines and nested ones are read whole.
    write("utc_time.rs", "use crate::{\n    byte_search::{find_byte, rfind_byte},\n    fold,\n};\n");
    write("byte_search.rs", "");
    let breaks = layering_breaks(root);
    assert!(breaks.iter().any(|b| b.contains("journal/mod.rs") && b.contains("`fold`")), "{breaks:?}");
    assert!(!breaks.iter().any(|b| b.contains("`cli`")), "test code counted: {breaks:?}");
    assert!(breaks.iter().any(|b| b.contains("`newcomer` has no place")), "{breaks:?}");
    assert!(breaks.iter().any(|b| b.contains("utc_time.rs") && b.contains("`fold`")), "a multi-line group: {breaks:?}");
    assert!(!breaks.iter().any(|b| b.contains("fold/mod.rs")), "downward imports refused: {breaks:?}");
    let printing = printing_outside_cli(root);
    assert!(printing.len() == 1 && printing[0].contains("fold/mod.rs"), "{printing:?}");
}

#[test]
fn test_items_are_left_out_to_their_closing_brace() {
    let text = "a\n#[cfg(test)]\nmod tests {\n    fn x() { if y { z } }\n}\nb\n#[cfg(test)]\nmod more;\nc\n";
    assert_eq!(strip_test_items(text), "a\n\nb\n\nc\n");
}
