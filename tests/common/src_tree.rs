//! Reading `src/` as the structure tests do: every `.rs` file under a folder, with test
//! code left out (`#[cfg(test)]` items, and the files only such items declare). Strings
//! and comments are not parsed: the crate's test items are `mod tests { … }` and
//! `mod tests;`, which this covers.

use std::path::{Path, PathBuf};

pub fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

pub fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file declared only under `#[cfg(test)]` (`mod tests;` beside it).
pub fn is_test_file(path: &Path) -> bool {
    let stem = path.file_stem().unwrap().to_string_lossy();
    let Some(dir) = path.parent() else { return false };
    ["mod.rs"]
        .iter()
        .map(|m| dir.join(m))
        .chain(std::iter::once(dir.with_extension("rs")))
        .any(|parent| std::fs::read_to_string(parent).is_ok_and(|t| t.contains(&format!("#[cfg(test)]\nmod {stem};"))))
}

/// The text with every item behind `#[cfg(test)]` blanked: the attribute, and the item up
/// to its matching closing brace or its semicolon.
pub fn strip_test_items(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let end = item_end(item);
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn item_end(item: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in item.char_indices().skip("#[cfg(test)]".len()) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            ';' if depth == 0 => return i + 1,
            _ => {}
        }
    }
    item.len()
}

/// Writes `text` at `rel` under `root`, making its folders: a small tree for the checks'
/// own tests.
pub fn write_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

// The seam checks read lines; `layering.rs`, which includes this file too, reads modules.
#[allow(dead_code)]
/// One line of shipped code under a root: its file relative to the root (with `/`), its
/// number from 1, the code before any `//`, and the whole line.
pub struct CodeLine {
    pub rel: String,
    pub number: usize,
    pub code: String,
    pub line: String,
}

#[allow(dead_code)]
/// Every line of shipped code under `root` (test files and test items left out), file by
/// file in name order, skipping the files `skip` names by their relative path.
pub fn code_lines(root: &Path, skip: impl Fn(&str) -> bool) -> Vec<CodeLine> {
    let mut files = vec![];
    collect_rs(root, &mut files);
    files.sort();
    let mut out = vec![];
    for file in files {
        let rel = file.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
        if skip(&rel) || is_test_file(&file) {
            continue;
        }
        let text = strip_test_items(&std::fs::read_to_string(&file).unwrap());
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("").to_string();
            out.push(CodeLine { rel: rel.clone(), number: n + 1, code, line: line.trim().to_string() });
        }
    }
    out
}
