//! The operating system behind one seam, held by reading `src/`: a call into libc, a path
//! under `/proc`, or a Unix-only extension of `std` appears only in `src/platform/` (and
//! in `src/main.rs`, the binary's C `main`), so a port to another OS is new files there
//! and the rest of the crate compiles unchanged. `docs/platform.md` lists the contract.
//!
//! Test code is left out: `#[cfg(test)]` items and the files they declare (read as
//! `tests/structure/layering.rs` reads them, through `common/src_tree.rs`).

use std::path::Path;

use crate::common::src_tree;
use src_tree::{CodeLine, code_lines, src_dir, write_file};

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

/// Every mark outside the seam that no exception covers, as `file:line: mark in line`.
fn os_reached_outside_platform(root: &Path) -> Vec<String> {
    let allowed = |rel: &str| ALLOWED.iter().any(|a| rel == *a || rel.starts_with(&format!("{a}/")));
    let mut found = vec![];
    for CodeLine { rel, number, code, line } in code_lines(root, allowed) {
        for mark in OS_MARKS {
            for (at, _) in code.match_indices(mark) {
                let excused = EXCEPTIONS.iter().any(|(f, start, _)| rel == *f && code[at..].starts_with(start));
                if !excused {
                    found.push(format!("{rel}:{number}: `{mark}` in {line}"));
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
    let write = |rel: &str, text: &str| write_file(root, rel, text);
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
