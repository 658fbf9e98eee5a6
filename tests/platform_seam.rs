//! The operating system behind one seam, held by reading `src/`: a call into libc, a path
//! under `/proc`, or a Unix-only extension of `std` appears only in `src/platform/` (and
//! in `src/main.rs`, the binary's C `main`), so a port to another OS is new files there
//! and the rest of the crate compiles unchanged. `docs/platform.md` lists the contract.
//!
//! Test code is left out: `#[cfg(test)]` items and the files they declare (the same
//! stripping as `tests/layering.rs`, copied here so each test stands alone).

use std::path::{Path, PathBuf};

/// What reaches the OS past `std`'s portable surface.
const OS_MARKS: &[&str] = &["libc::", "\"/proc/", "\"/proc\"", "std::os::unix"];

/// Where the OS may be reached, relative to `src/`: the seam itself, and the binary's start.
const ALLOWED: &[&str] = &["platform", "main.rs"];

/// Marks allowed outside the seam: (file relative to `src/`, what the text at the mark
/// starts with, why).
const EXCEPTIONS: &[(&str, &str, &str)] = &[(
    "journal/simdisk.rs",
    "libc::E",
    "the simulated disk fails with the errno values a real one gives (EIO, ENOTDIR, …): numbers, no call into the OS",
)];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
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
fn is_test_file(path: &Path) -> bool {
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
fn strip_test_items(text: &str) -> String {
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

/// Every mark outside the seam that no exception covers, as `file:line: mark in line`.
fn os_reached_outside_platform(root: &Path) -> Vec<String> {
    let mut files = vec![];
    collect_rs(root, &mut files);
    files.sort();
    let mut found = vec![];
    for file in files {
        let rel = file.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
        if ALLOWED.iter().any(|a| rel == *a || rel.starts_with(&format!("{a}/"))) || is_test_file(&file) {
            continue;
        }
        let text = strip_test_items(&std::fs::read_to_string(&file).unwrap());
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for mark in OS_MARKS {
                for (at, _) in code.match_indices(mark) {
                    let excused = EXCEPTIONS.iter().any(|(f, start, _)| rel == *f && code[at..].starts_with(start));
                    if !excused {
                        found.push(format!("{rel}:{}: `{mark}` in {}", n + 1, line.trim()));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn the_os_is_reached_only_through_platform() {
    let found = os_reached_outside_platform(&src_dir());
    assert!(
        found.is_empty(),
        "the OS reached outside src/platform/ (move it behind a platform function, see docs/platform.md):\n{}",
        found.join("\n")
    );
}

/// The check itself, on a small tree that breaks the rule once per mark and keeps it
/// everywhere else.
#[test]
fn each_mark_outside_the_seam_is_caught_and_nothing_else() {
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("main.rs", "fn main() { unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) }; }\n");
    write("platform/linux.rs", "use std::os::unix::fs::OpenOptionsExt;\nfn f() { std::fs::read(\"/proc/locks\"); libc::kill(1, 0); }\n");
    write("journal/storage.rs", "use std::os::unix::fs::MetadataExt;\n// libc::kill in a comment is no call\n");
    write("journal/lock.rs", "fn f() { let _ = std::fs::read(\"/proc/locks\"); }\n#[cfg(test)]\nmod tests {\n    use libc::EIO;\n}\n");
    write("owed/mod.rs", "fn f() -> bool { std::path::Path::new(\"/proc\").exists() }\n#[cfg(test)]\nmod tests;\n");
    write("owed/tests.rs", "fn g() { unsafe { libc::getpid() }; }\n");
    write("journal/simdisk.rs", "fn e() -> i32 { libc::EIO }\nfn k() { unsafe { libc::kill(1, 0) }; }\n");
    let found = os_reached_outside_platform(root);
    let expected = [
        "journal/lock.rs:1: `\"/proc/`",
        "journal/simdisk.rs:2: `libc::`",
        "journal/storage.rs:1: `std::os::unix`",
        "owed/mod.rs:1: `\"/proc\"`",
    ];
    assert_eq!(found.len(), expected.len(), "{found:#?}");
    for (got, want) in found.iter().zip(expected) {
        assert!(got.starts_with(want), "{got} is not {want}");
    }
}
