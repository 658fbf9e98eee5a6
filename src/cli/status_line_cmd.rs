//! `abcd status-line`: reads the host's status-line payload on stdin and prints one line,
//! or nothing. A status bar is no place for errors: on any fault of abcd's own it prints
//! nothing on stdout, one line on stderr, and exits 0 (docs/status-line.md).

use std::io::Read;

use crate::command::status_line;

pub fn run() -> i32 {
    match line() {
        Ok(Some(text)) => outln!("{text}"),
        Ok(None) => {}
        Err(why) => errln!("abcd status-line: {why}"),
    }
    super::EXIT_OK
}

fn line() -> anyhow::Result<Option<String>> {
    let mut payload = Vec::new();
    std::io::stdin().lock().take(status_line::MAX_PAYLOAD_BYTES as u64 + 1).read_to_end(&mut payload)?;
    let folder = status_line::folder_of(&payload)?;
    let Some(seen) = status_line::read(&crate::places::Place::at(&folder))? else { return Ok(None) };
    let now = crate::clock::now()?;
    Ok(status_line::line(&seen, now, &crate::clock::show))
}
