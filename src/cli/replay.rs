//! `abcd replay`: parses, runs `command::replay`, and prints the audit as it streams, the
//! checks of every cache, and the verdict.

use std::io::Write;

use clap::Args;
use serde_json::json;

use super::terminal::{Lines, terminal_safe};
use super::{EXIT_FAILURE, EXIT_OK, JournalChoice};
use crate::command::replay::{self, Replayed, Streamed};

#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    choice: JournalChoice,
    /// Print the derived files (state, checklist) as they were right after event SEQ
    /// (time travel), instead of the audit
    #[arg(long, value_name = "SEQ")]
    at: Option<u64>,
    /// Print newline-delimited JSON for scripts
    #[arg(long)]
    json: bool,
    /// Only this derived file: state, checklist or checklist-last-good
    #[arg(long, value_name = "NAME")]
    projection: Option<String>,
}

pub fn run(args: &ReplayArgs) -> anyhow::Result<i32> {
    let selected = replay::select_projections(args.projection.as_deref())?;
    let (paths, _) = args.choice.resolve()?;
    let mut out = SafeLines(std::io::BufWriter::new(super::Stdout));
    let json_out = args.json;
    let replayed = replay::replay(&paths, &selected, args.at, |streamed| match streamed {
        Streamed::Event(line) if json_out => writeln!(out, "{}", json!({"type": "event", "audit": line})),
        // One line per event: a newline inside one (a crafted journal) must not forge the next.
        Streamed::Event(line) => writeln!(out, "{}", terminal_safe(&line.to_string(), Lines::One)),
        Streamed::Warning { seq, message } if json_out => writeln!(out, "{}", json!({"type": "warning", "seq": seq, "message": message})),
        Streamed::Warning { message, .. } => writeln!(out, "        warning: {message}"),
    })?;
    let Replayed { report, checks, projections_at } = &replayed;
    if let Some(at) = args.at {
        for (name, content) in projections_at {
            let value = json!({"type": "projection", "name": name, "at": at, "content": content});
            if args.json {
                writeln!(out, "{value}")?;
            } else {
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
            }
        }
        out.flush()?;
        return Ok(if report.is_ok() { EXIT_OK } else { EXIT_FAILURE });
    }

    let all_agree = replayed.all_agree();
    if args.json {
        for c in checks {
            writeln!(out, "{}", json!({"type": "check", "what": c.what, "agrees": c.agrees, "detail": c.detail}))?;
        }
        let mut v = super::journal_cmd::verify_json(report);
        v["type"] = json!("verdict");
        v["ok"] = json!(report.is_ok() && all_agree);
        writeln!(out, "{v}")?;
    } else {
        writeln!(out)?;
        for c in checks {
            writeln!(out, "{}: {}", c.what, if c.agrees { c.detail.clone() } else { format!("DISAGREES: {}", c.detail) })?;
        }
        write!(out, "{}", super::journal_cmd::verify_details(report))?;
        match (report.is_ok(), all_agree) {
            (true, true) => writeln!(out, "verdict: ok")?,
            (true, false) => writeln!(out, "verdict: FAILED (a cache on disk disagrees with the journal; the journal is the truth)")?,
            (false, _) => writeln!(out, "verdict: FAILED")?,
        }
    }
    out.flush()?;
    Ok(if report.is_ok() && all_agree { EXIT_OK } else { EXIT_FAILURE })
}

/// The replay's writer, passing what it prints through [`terminal_safe`] as `out!` does
/// (its lines are written through `write!` on a buffer instead).
struct SafeLines<W: Write>(W);

impl<W: Write> Write for SafeLines<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
    fn write_fmt(&mut self, args: std::fmt::Arguments) -> std::io::Result<()> {
        super::write_safe(&mut self.0, args)
    }
}
