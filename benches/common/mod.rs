//! What the benchmarks share: the median, the time shown, the binaries they time, a
//! child's stdin written as a host writes it, and the clean-journal check.

use std::convert::Infallible;
use std::io::{self, Write};
use std::path::Path;

use abcd::journal::anchor::AnchorStore;
use abcd::journal::scan::Verdict;
use abcd::journal::storage::RealDisk;
use abcd::journal::verify;

pub fn median(values: &[f64]) -> f64 {
    assert!(!values.is_empty(), "a median needs values");
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

pub fn ms(secs: f64) -> String {
    format!("{:.3} ms", secs * 1e3)
}

/// The release binary cargo built beside this bench (`target/release/abcd`).
pub fn abcd_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_abcd"))
}

/// The trivial process: starts and exits, reading nothing.
pub fn true_bin() -> &'static Path {
    [Path::new("/usr/bin/true"), Path::new("/bin/true")].into_iter().find(|p| p.is_file()).expect("a `true` binary")
}

/// Writes `bytes` to a child's stdin; a child that exited without reading it (`true`)
/// is not an error.
pub fn write_ignoring_closed(pipe: &mut impl Write, bytes: &[u8]) {
    match pipe.write_all(bytes) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        Err(e) => panic!("writing a child's stdin: {e}"),
    }
}

/// Verifies with the library's verifier; panics unless clean. Returns the event count.
pub fn verify_clean(path: &Path, home: &Path) -> u64 {
    let anchors = AnchorStore::new(home);
    let report = verify::verify(&RealDisk, path, Some(&anchors), |_, _| Ok::<(), Infallible>(()))
        .unwrap_or_else(|e| panic!("verifying {}: {e}", path.display()));
    assert!(matches!(report.verdict, Verdict::Clean) && report.is_ok(), "{} does not verify clean: {report:?}", path.display());
    report.events
}
