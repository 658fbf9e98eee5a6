//! Every test file is in a test binary, and the binaries are few. `Cargo.toml` says
//! `autotests = false` and lists each binary as a `[[test]]`, so cargo builds nothing it
//! does not list: a `.rs` file under `tests/` that no listed `main.rs` reaches through its
//! `mod` declarations (`#[path]` followed) would never compile nor run, and this test names
//! it instead. Each binary links the whole crate, most of a build's time on two cores, so
//! the list is capped (docs/testing.md says which binary a new test joins).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// The most integration test binaries `Cargo.toml` may list.
const TEST_BINARIES_MAX: usize = 8;

/// The folder every integration test file lives under, relative to the manifest.
const TESTS_DIR: &str = "tests";

/// What a manifest says about its test binaries.
#[derive(Debug, Default)]
struct Manifest {
    autotests_off: bool,
    /// Each `[[test]]`: its name and its path (`None` when it names none).
    targets: Vec<(String, Option<String>)>,
}

/// The value of a `key = "value"` line, if `line` sets `key`.
fn string_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim();
    rest.strip_prefix('"')?.strip_suffix('"')
}

/// Reads the lines that matter here; the manifest is plain TOML with one key per line.
fn read_manifest(text: &str) -> Manifest {
    let mut manifest = Manifest::default();
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            if section == "[[test]]" {
                manifest.targets.push((String::new(), None));
            }
            continue;
        }
        if section == "[package]" && line.replace(' ', "") == "autotests=false" {
            manifest.autotests_off = true;
        }
        if section == "[[test]]" {
            let target = manifest.targets.last_mut().expect("a [[test]] section was opened");
            if let Some(name) = string_value(line, "name") {
                target.0 = name.to_string();
            }
            if let Some(path) = string_value(line, "path") {
                target.1 = Some(path.to_string());
            }
        }
    }
    manifest
}

/// The `mod NAME;` declarations of a file, each with the `#[path = "…"]` it carries. Lines
/// are read one by one: the test tree declares each module on a line of its own, with its
/// attributes on the lines just above.
fn declared_modules(text: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let mut path_attr = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("//") || line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("#[path") {
            path_attr = rest.split('"').nth(1).map(str::to_string);
            continue;
        }
        if line.starts_with("#[") {
            continue;
        }
        let decl = line.strip_prefix("pub ").or_else(|| line.strip_prefix("pub(crate) ")).unwrap_or(line);
        if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            // A raw identifier (`mod r#loop;`) names the file without its `r#`.
            let name = name.trim();
            found.push((name.strip_prefix("r#").unwrap_or(name).to_string(), path_attr.take()));
        }
        path_attr = None;
    }
    found
}

/// `path` with its `.` and `..` components applied, as a path relative to the manifest.
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The files a `mod` declaration in `file` may name, as rustc looks for them: beside a
/// `main.rs` or `mod.rs`, in a folder named after any other file; a `#[path]` is taken
/// from the file's folder.
fn candidates(file: &Path, name: &str, path_attr: Option<&str>) -> Vec<PathBuf> {
    let dir = file.parent().unwrap_or(Path::new(""));
    if let Some(p) = path_attr {
        return vec![normalized(&dir.join(p))];
    }
    let own = match file.file_name().and_then(|n| n.to_str()) {
        Some("main.rs" | "mod.rs" | "lib.rs") => dir.to_path_buf(),
        _ => dir.join(file.file_stem().unwrap_or_default()),
    };
    vec![own.join(format!("{name}.rs")), own.join(name).join("mod.rs")]
}

/// Every rule this file holds, broken, each said once: `files` maps each `.rs` file under
/// `tests/` (relative to the manifest) to its text.
fn problems(manifest_text: &str, files: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let manifest = read_manifest(manifest_text);
    let mut problems = Vec::new();
    if !manifest.autotests_off {
        problems.push(
            "Cargo.toml's [package] does not say `autotests = false`: cargo would build every tests/*.rs as a binary of its own; \
             add it and list each binary as a [[test]]"
                .to_string(),
        );
    }
    if manifest.targets.len() > TEST_BINARIES_MAX {
        problems.push(format!(
            "Cargo.toml lists {} test binaries, more than {TEST_BINARIES_MAX} (TEST_BINARIES_MAX): each links the whole crate; \
             add the new tests as a module of the binary docs/testing.md names for their layer",
            manifest.targets.len()
        ));
    }
    let mut reached = BTreeSet::new();
    let mut queue = Vec::new();
    for (name, path) in &manifest.targets {
        match path {
            None => problems.push(format!("the test binary `{name}` names no path: give it `path = \"tests/{name}/main.rs\"`")),
            Some(p) if !files.contains_key(Path::new(p)) => {
                problems.push(format!("the test binary `{name}` names {p}, which is not a file under tests/"))
            }
            Some(p) => queue.push(PathBuf::from(p)),
        }
    }
    while let Some(file) = queue.pop() {
        if !reached.insert(file.clone()) {
            continue;
        }
        for (name, path_attr) in declared_modules(&files[&file]) {
            let options = candidates(&file, &name, path_attr.as_deref());
            // A module outside tests/ (the fuzz checks, a source file under loom) is the
            // compiler's to find; only the test tree is followed.
            if !options[0].starts_with(TESTS_DIR) {
                continue;
            }
            match options.iter().find(|c| files.contains_key(*c)) {
                Some(found) => queue.push(found.clone()),
                None => problems.push(format!("{} declares `mod {name};` but no {} exists", file.display(), options[0].display())),
            }
        }
    }
    for file in files.keys().filter(|f| !reached.contains(*f)) {
        problems.push(format!(
            "{} is in no test binary, so it never runs: declare it with `mod {};` in the main.rs of the binary docs/testing.md \
             names for its layer, or remove it",
            file.display(),
            file.file_stem().unwrap_or_default().to_string_lossy()
        ));
    }
    problems
}

fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.insert(path.strip_prefix(root).unwrap().to_path_buf(), text);
        }
    }
}

#[test]
fn every_test_file_is_in_a_binary_and_the_binaries_are_few() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut files = BTreeMap::new();
    collect(root, &root.join(TESTS_DIR), &mut files);
    let problems = problems(&manifest, &files);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn manifest_with(binaries: usize, autotests_off: bool) -> String {
    let mut text = String::from("[package]\nname = \"x\"\n");
    if autotests_off {
        text += "autotests = false\n";
    }
    for n in 0..binaries {
        text += &format!("\n[[test]]\nname = \"b{n}\"\npath = \"tests/b{n}/main.rs\"\n");
    }
    text + "\n[profile.release]\ndebug = true\n"
}

fn tree(binaries: usize, extra: &[(&str, &str)]) -> BTreeMap<PathBuf, String> {
    let mut files: BTreeMap<PathBuf, String> = (0..binaries)
        .map(|n| (PathBuf::from(format!("tests/b{n}/main.rs")), "#[path = \"../common/mod.rs\"]\nmod common;\n".to_string()))
        .collect();
    files.insert("tests/common/mod.rs".into(), "//! `mod not_a_module;` in a comment\npub mod repo;\n".into());
    files.insert("tests/common/repo.rs".into(), String::new());
    for (path, text) in extra {
        files.insert(PathBuf::from(path), text.to_string());
    }
    files
}

#[test]
fn a_stray_file_a_missing_module_a_binary_past_the_cap_and_autotests_left_on_are_each_caught() {
    // The edge: TEST_BINARIES_MAX binaries, every file reached (a module of a module, one
    // through `#[path]` with an attribute between, a `mod.rs` folder), is clean.
    let reached = [
        (
            "tests/b0/main.rs",
            "#[path = \"../common/mod.rs\"]\nmod common;\nmod a;\n#[path = \"../shared/x.rs\"]\n#[allow(dead_code)]\nmod x;\npub mod d;\n",
        ),
        ("tests/b0/a.rs", "use crate::common;\nmod inner;\nmod tests {\n}\n"),
        ("tests/b0/a/inner.rs", ""),
        ("tests/shared/x.rs", ""),
        ("tests/b0/d/mod.rs", ""),
    ];
    let clean = problems(&manifest_with(TEST_BINARIES_MAX, true), &tree(TEST_BINARIES_MAX, &reached));
    assert!(clean.is_empty(), "{clean:#?}");

    // One binary past the cap, autotests on, a stray file, and a declared module with no file.
    let mut broken = reached.to_vec();
    broken.push(("tests/b1/stray.rs", ""));
    broken[0].1 = "#[path = \"../common/mod.rs\"]\nmod common;\nmod a;\n#[path = \"../shared/x.rs\"]\nmod x;\npub mod d;\nmod gone;\n";
    let found = problems(&manifest_with(TEST_BINARIES_MAX + 1, false), &tree(TEST_BINARIES_MAX + 1, &broken));
    let said = |what: &str| found.iter().filter(|p| p.contains(what)).count();
    assert_eq!(said("autotests = false"), 1, "{found:#?}");
    assert_eq!(said(&format!("lists {} test binaries, more than {TEST_BINARIES_MAX}", TEST_BINARIES_MAX + 1)), 1, "{found:#?}");
    assert_eq!(said("tests/b1/stray.rs is in no test binary"), 1, "{found:#?}");
    assert_eq!(said("declares `mod gone;` but no tests/b0/gone.rs exists"), 1, "{found:#?}");
    assert_eq!(found.len(), 4, "nothing else is named: {found:#?}");
}
