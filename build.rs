//! Two link choices for the `abcd` binary, both for its start-up time (every hook call is a
//! new process): GCC's unwinder is linked in, and the binary is not position-independent.
//!
//! Links GCC's unwinder into the binaries instead of loading `libgcc_s.so.1` at run time.
//!
//! Every `abcd` process (each hook call is one) paid for loading that library and running
//! its CPU-detection constructor: 86 µs of a 1.1 ms `abcd --version` and 135 µs of a
//! session-start hook here, timed on copies of the binary (docs/decisions.md, "Process
//! start"). The static archive holds the same unwinder, so `catch_unwind` and backtraces
//! work as before. When the C compiler cannot name the archive, or the build is a cross
//! build, nothing is changed and the binary loads `libgcc_s` as usual.
//!
//! Links `abcd` as a fixed-address executable (`-no-pie`). As a position-independent
//! executable it carried about 5,600 relative relocations that the dynamic loader applied
//! at every start, dirtying some 25 pages of read-only-after-start data; fixed, it has
//! about 130. Measured with caches dropped, alternating the two builds: a session-start
//! hook 0.12–0.17 ms faster of 1.75–1.97 ms. The cost: the binary's own code and data are
//! no longer placed at a random address (shared libraries, stack and heap still are).
//! `ABCD_PIE=1` at build time keeps the default (docs/decisions.md, "Process start").

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CC");
    println!("cargo::rerun-if-env-changed=ABCD_PIE");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // A cross build would get the host compiler's archive: leave those as they are.
    let cross = std::env::var("TARGET").ok() != std::env::var("HOST").ok();
    if os != "linux" || env != "gnu" || cross {
        return;
    }
    if let Some(archive) = unwinder_archive() {
        let dir = archive.parent().expect("an absolute path has a parent");
        // A compiler upgrade that moves the archive must re-run this, not fail the link.
        println!("cargo::rerun-if-changed={}", archive.display());
        println!("cargo::rustc-link-search=native={}", dir.display());
        println!("cargo::rustc-link-lib=static:+verbatim=libgcc_eh.a");
    }
    // Only the binary: the code is still compiled position-independent (the default), which
    // a fixed-address link accepts; libraries and proc-macros are untouched. Not with a
    // static C runtime (`+crt-static`): glibc's static start then expects a static-pie, and
    // a fixed-address static binary crashed at start (found by review).
    println!("cargo::rustc-check-cfg=cfg(abcd_fixed_address)");
    let crt_static = std::env::var("CARGO_CFG_TARGET_FEATURE").is_ok_and(|f| f.split(',').any(|f| f == "crt-static"));
    if std::env::var_os("ABCD_PIE").is_none_or(|v| v != "1") && !crt_static {
        println!("cargo::rustc-link-arg-bin=abcd=-no-pie");
        // Tells `tests/cli/process_start.rs` that the binary was linked this way.
        println!("cargo::rustc-cfg=abcd_fixed_address");
    }
}

/// Where the C compiler keeps `libgcc_eh.a`; `None` unless it names an existing file (it
/// echoes the bare name when it has none).
fn unwinder_archive() -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(cc).arg("-print-file-name=libgcc_eh.a").output().ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (out.status.success() && path.is_absolute() && path.is_file()).then_some(path)
}
