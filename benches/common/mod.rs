//! What the benchmarks share: the median, the time shown, the binaries they time, a
//! child's stdin written as a host writes it, and the clean-journal check.

use std::convert::Infallible;
use std::io::{self, Write};
use std::path::Path;
use std::process::{Command, Output};

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

/// Each contender once per op, in an order that rotates with the round; each contender
/// times itself (so it can prepare untimed) and returns seconds. The median per contender.
pub fn rotate(round: usize, ops: usize, contenders: &mut [&mut dyn FnMut() -> f64]) -> Vec<f64> {
    let n = contenders.len();
    let mut times = vec![Vec::with_capacity(ops); n];
    for _ in 0..ops {
        for k in 0..n {
            let c = (round + k) % n;
            times[c].push(contenders[c]());
        }
    }
    times.iter().map(|t| median(t)).collect()
}

/// Panics, with what it printed, unless `cmd` exited 0.
pub fn assert_succeeded(cmd: &Command, out: &Output) {
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A row's target for the median of its ratios. Each bench sets the kinds it needs.
#[allow(dead_code)]
#[derive(Clone, Copy)]
pub enum Target {
    AtMost(f64),
    AtLeast(f64),
    /// Strictly below: "faster than".
    Below(f64),
    /// No target: reported for context.
    Context,
}

/// One row of a bench's table: its contenders, its per-round ratios and its target.
pub struct Row {
    pub name: String,
    pub contenders: String,
    /// e.g. "abcd/true latency"
    pub ratio_label: String,
    pub ratios: Vec<f64>,
    pub target: Target,
}

impl Row {
    pub fn markdown(&self, full: bool) -> String {
        let mut sorted = self.ratios.clone();
        sorted.sort_by(f64::total_cmp);
        let med = median(&self.ratios);
        let (target, pass) = match self.target {
            Target::AtMost(t) => (format!("<= {t}x"), Some(med <= t)),
            Target::AtLeast(t) => (format!(">= {t}x"), Some(med >= t)),
            Target::Below(t) => (format!("< {t}x"), Some(med < t)),
            Target::Context => ("none (context)".to_string(), None),
        };
        let result = match (full, pass) {
            (false, _) => "smoke (not judged)",
            (true, None) => "context",
            (true, Some(true)) => "PASS",
            (true, Some(false)) => "MISS",
        };
        format!(
            "| {} | {} | {} = **{:.2}x** ({:.2}..{:.2}, {} rounds) | {} | {} |",
            self.name,
            self.contenders,
            self.ratio_label,
            med,
            sorted[0],
            sorted[sorted.len() - 1],
            sorted.len(),
            target,
            result
        )
    }
}

/// The SessionStart payload the host sends, for a session in `wc` after a compaction.
pub fn session_start_payload(wc: &Path) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "session_id": "bench",
        "cwd": wc.to_str().expect("a UTF-8 path"),
        "hook_event_name": "SessionStart",
        "source": "compact",
    }))
    .expect("plain data serializes")
}
