//! The crate's shape, held by reading `src/`: every import between top-level modules runs
//! down the layer order below (so there is no cycle), the journal imports only leaf
//! utilities, and nothing outside `cli/` prints. `docs/architecture.md` draws the same
//! order; a new module takes its place here or this test fails.
//!
//! Test code is left out: `#[cfg(test)]` items and the files they declare.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::src_tree;
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

/// A file's module path under `src/`: `a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs` is the
/// crate root (empty).
fn file_module(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.with_extension("").iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|l| l == "mod") || parts == ["lib"] || parts == ["main"] {
        parts.pop();
    }
    parts
}

/// The text's code alone: comments, string and char literals blanked (a path written in a
/// doc comment or a message is no import), line breaks kept.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !chars.get(i.wrapping_sub(1)).is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"…", r#"…"#, with as many hashes closing it as opened it.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|h| chars.get(j + h) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some('\n') => out.push('\n'),
                    _ => {}
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                // A line break inside the string, escaped (a continued line) or not, is kept.
                if chars.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' && (chars.get(i + 2) == Some(&'\'') || next == Some('\\')) {
            // A char literal ('x' or an escape); a lifetime ('a) has no closing quote.
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            out.push_str("' '");
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The paths a `use` tree names, its groups spread out: `a::{b, c::{d, e}}` is `a::b`,
/// `a::c::d`, `a::c::e`; `self` in a group is the group's prefix; `as` names are dropped.
fn use_paths(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or("").trim();
        return vec![path.split("::").map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()];
    };
    let prefix: Vec<String> = tree[..open].split("::").map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    let body = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut items, mut depth, mut start) = (vec![], 0usize, 0usize);
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&body[start..]);
    let mut out = vec![];
    for item in items.into_iter().map(str::trim).filter(|i| !i.is_empty()) {
        if item.split(" as ").next().unwrap_or("").trim() == "self" {
            out.push(prefix.clone());
            continue;
        }
        for rest in use_paths(item) {
            out.push(prefix.iter().cloned().chain(rest).collect());
        }
    }
    out
}

/// The file a path written in module `at` lands in: the longest prefix of its absolute
/// path that is a file of the tree. None for a path outside the crate (std, a dependency).
fn path_file(at: &[String], path: &[String], children: &BTreeSet<String>, files: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let (mut base, rest): (Vec<String>, &[String]) = match path.first().map(String::as_str) {
        Some("crate") => (vec![], &path[1..]),
        Some("self") => (at.to_vec(), &path[1..]),
        Some("super") => {
            let mut base = at.to_vec();
            let ups = path.iter().take_while(|s| *s == "super").count();
            base.truncate(base.len().saturating_sub(ups));
            (base, &path[ups..])
        }
        Some(child) if children.contains(child) => (at.to_vec(), path),
        _ => return None,
    };
    base.extend(rest.iter().cloned());
    (0..=base.len()).rev().map(|n| base[..n].to_vec()).find(|prefix| files.contains(prefix))
}

/// Every file of `src/` (test files and items left out) with the files it imports — `use`
/// items (a child module's too) and `crate::`/`super::`/`self::` paths in code — each with
/// one line that does.
fn file_imports(root: &Path) -> BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>> {
    let mut paths = vec![];
    collect_rs(root, &mut paths);
    let shipped: Vec<&PathBuf> = paths.iter().filter(|f| !is_test_file(f)).collect();
    // Lines stay where they were in the code alone, so an arrow is shown by its own line.
    let originals: Vec<String> = shipped.iter().map(|f| strip_test_items(&std::fs::read_to_string(f).unwrap())).collect();
    let texts: Vec<(Vec<String>, String)> =
        shipped.iter().zip(&originals).map(|(f, text)| (file_module(f.strip_prefix(root).unwrap()), code_only(text))).collect();
    let files: BTreeSet<Vec<String>> = texts.iter().map(|(m, _)| m.clone()).collect();
    let mut graph = BTreeMap::new();
    for ((module, code), original) in texts.iter().zip(&originals) {
        let children: BTreeSet<String> = code
            .split(';')
            .filter_map(|stmt| {
                let words: Vec<&str> = stmt.split_whitespace().collect();
                let at = words.iter().position(|w| *w == "mod")?;
                (at + 2 == words.len()).then(|| words[at + 1].to_string())
            })
            .collect();
        let line_of = |offset: usize| code[..offset].matches('\n').count();
        let shown = |offset: usize| {
            let line = line_of(offset);
            format!("{}: {}", line + 1, original.lines().nth(line).unwrap_or("").trim())
        };
        let mut named: Vec<(Vec<String>, usize)> = vec![];
        let bytes = code.as_bytes();
        let starts_word = |i: usize| i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
        for (at, _) in code.match_indices("use ") {
            if starts_word(at) {
                let tree = &code[at + 4..code[at..].find(';').map_or(code.len(), |e| at + e)];
                named.extend(use_paths(tree).into_iter().map(|p| (p, at)));
            }
        }
        for head in ["crate::", "super::", "self::"] {
            for (at, _) in code.match_indices(head) {
                if !starts_word(at) {
                    continue;
                }
                let path: Vec<String> = code[at..]
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .next()
                    .unwrap_or("")
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                named.push((path, at));
            }
        }
        let mut targets = BTreeMap::new();
        for (path, at) in named {
            if let Some(target) = path_file(module, &path, &children, &files).filter(|t| t != module) {
                targets.entry(target).or_insert_with(|| shown(at));
            }
        }
        graph.insert(module.clone(), targets);
    }
    graph
}

/// The circles among files: each group of two or more files that reach one another through
/// imports, with one importing line per arrow inside the group.
fn file_circles(root: &Path) -> Vec<String> {
    let graph = file_imports(root);
    let reach = |from: &Vec<String>| {
        let mut seen = BTreeSet::new();
        let mut next = vec![from.clone()];
        while let Some(at) = next.pop() {
            for target in graph.get(&at).into_iter().flat_map(BTreeMap::keys) {
                if seen.insert(target.clone()) {
                    next.push(target.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&Vec<String>, BTreeSet<Vec<String>>> = graph.keys().map(|m| (m, reach(m))).collect();
    let name = |m: &Vec<String>| if m.is_empty() { "lib".to_string() } else { m.join("/") };
    let mut placed = BTreeSet::new();
    let mut circles = vec![];
    for (module, from_it) in &reached {
        if placed.contains(*module) || !from_it.contains(*module) {
            continue;
        }
        let group: BTreeSet<Vec<String>> =
            from_it.iter().filter(|m| reached.get(m).is_some_and(|r| r.contains(*module))).cloned().collect();
        let mut arrows = vec![];
        for member in &group {
            for (target, line) in &graph[member] {
                if group.contains(target) {
                    arrows.push(format!("  {} -> {}: {line}", name(member), name(target)));
                }
            }
        }
        circles.push(format!("{} files: {}\n{}", group.len(), group.iter().map(name).collect::<Vec<_>>().join(", "), arrows.join("\n")));
        placed.extend(group);
    }
    circles
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

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let circles = file_circles(&src_dir());
    assert!(
        circles.is_empty(),
        "circles of files in src/ (open each: move the shared item to a file both may import):\n{}",
        circles.join("\n")
    );
}

/// The circle check on a small tree: a circle through a `use` group, one through a child's
/// `super::` and its parent's `use child::…`, and one through a path in code are caught;
/// test code, comments, strings and a dependency's path are not imports.
#[test]
fn a_circle_of_files_is_caught_and_what_is_no_import_is_left_out() {
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    let write = |rel: &str, text: &str| write_file(root, rel, text);
    write("lib.rs", "pub mod a;\npub mod b;\npub mod p;\npub mod q;\npub mod r;\n");
    write("a.rs", "use crate::{\n    b::{self, Thing},\n    std_like,\n};\n");
    write("b.rs", "pub fn f() { crate::a::g(); }\n");
    write("p/mod.rs", "mod kid;\nuse kid::Kid;\npub struct Parent;\n");
    write("p/kid.rs", "use super::Parent;\npub struct Kid;\n");
    write(
        "q.rs",
        "// use crate::r::X;\nconst S: &str = \"crate::r::X\";\nconst R: &str = r#\"use crate::r;\"#;\nuse serde::Serialize;\nfn f<'a>(x: &'a str) -> char { 'c' }\n#[cfg(test)]\nmod tests {\n    use crate::r::X;\n}\n",
    );
    write("r.rs", "use crate::q;\n");
    let circles = file_circles(root);
    assert_eq!(circles.len(), 2, "{circles:#?}");
    assert!(
        circles
            .iter()
            .any(|c| c.starts_with("2 files: a, b") && c.contains("a -> b:") && c.contains("b -> a: 1: pub fn f() { crate::a::g(); }")),
        "{circles:#?}"
    );
    assert!(circles.iter().any(|c| c.starts_with("2 files: p, p/kid")), "{circles:#?}");
    assert!(!circles.iter().any(|c| c.contains("q")), "a comment, a string or test code read as an import: {circles:#?}");
}

/// Where a git child may be started, relative to `src/`: the one runner (`git/run.rs`,
/// which holds the program's name), and the demo's set-up of its sample repository.
const GIT_STARTERS: &[&str] = &["git/run.rs", "cli/demo.rs"];

/// `"git"` allowed in shipped code outside the starters: (file relative to `src/`, the code
/// that holds it, why).
const GIT_NAME_READS: &[(&str, &str, &str)] =
    &[("git/branch.rs", "words[git] == \"git\"", "a shell command's words are read for a git call; nothing is started")];

/// Every `"git"` (the program's name) in shipped code outside [`GIT_STARTERS`] that no
/// read of it excuses, as `file:line: line`: a git child started anywhere but the runner.
fn git_named_outside_its_runner(root: &Path) -> Vec<String> {
    let mut found = vec![];
    for src_tree::CodeLine { rel, number, code, line } in src_tree::code_lines(root, |rel| GIT_STARTERS.contains(&rel)) {
        let excused = GIT_NAME_READS.iter().any(|(file, read, _)| rel == *file && code.contains(read));
        if code.contains("\"git\"") && !excused {
            found.push(format!("{rel}:{number}: {line}"));
        }
    }
    found
}

#[test]
fn git_is_started_only_through_its_runner() {
    let found = git_named_outside_its_runner(&src_dir());
    assert!(found.is_empty(), "git started outside src/git/run.rs (build the child with `git::run::Git`):\n{}", found.join("\n"));
}

/// The check itself, on a small tree that starts git once in each way it catches.
#[test]
fn a_git_child_started_outside_the_runner_is_caught() {
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    write_file(root, "git/run.rs", "const PROGRAM: &str = \"git\";\nfn c() { Command::new(PROGRAM); }\n");
    write_file(root, "cli/demo.rs", "fn d() { Command::new(\"git\").arg(\"init\"); }\n");
    write_file(root, "git/branch.rs", "fn b(words: &[String], git: usize) -> bool { words[git] == \"git\" }\n");
    write_file(
        root,
        "git/objects.rs",
        "fn o() {\n    // runs \"git\" here\n    let c = Command::new(\"git\");\n}\n#[cfg(test)]\nmod tests {\n    fn t() { Command::new(\"git\"); }\n}\n",
    );
    write_file(root, "owed/mod.rs", "fn w() { run(OsStr::new(\"git\"), &[\"log\"]); }\n");
    let found = git_named_outside_its_runner(root);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("git/objects.rs:3: "), "{found:?}");
    assert!(found[1].starts_with("owed/mod.rs:1: "), "{found:?}");
}
