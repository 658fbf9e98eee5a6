//! `abcd hook <event> [--host <host>]`: the host calls this with its JSON payload on stdin
//! (`--host` names whose format it is: `claude`, the default, or `codex`). It fails open,
//! loudly: on abcd's own fault (a bad payload, an unreadable file, a lock not had in time,
//! a panic) it allows whatever the host asked about, prints one line on stderr, exits 0.

use std::io::Read;

use super::terminal::{Lines, terminal_safe};
use crate::host::{self, HookEvent, HookReply, Host};

/// Test seam (test builds only): `ABCD_HOOK_FAULT=panic` makes the hook panic inside, to
/// prove the panic is caught and the call allowed.
#[cfg(feature = "test-support")]
const FAULT_ENV: &str = "ABCD_HOOK_FAULT";

pub fn run(event: HookEvent, host: Host) -> i32 {
    let started = std::time::Instant::now();
    if matches!(event, HookEvent::StopFailure | HookEvent::SessionEnd) {
        outlive_the_hosts_exit();
    }
    // One line on stderr, ours: the default panic message would add its own.
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(|| {
        #[cfg(feature = "test-support")]
        if std::env::var(FAULT_ENV).as_deref() == Ok("panic") {
            panic!("fault injected by {FAULT_ENV}");
        }
        let payload = read_payload(host.max_payload_bytes())?;
        let request = host.parse(event, &payload).map_err(|e| e.to_string())?;
        crate::command::hook::handle(&request, started).map_err(|e| e.to_string())
    });
    let name = event.cli_name();
    match outcome {
        Ok(Ok(done)) => {
            if let Some(json) = host.render(event, &terminal_safe_reply(&done.reply)) {
                // A host that closed the pipe is not listening; any other failure leaves
                // the host with no reply, which allows.
                if let Err(e) = super::try_write_out(format!("{json}\n").as_bytes())
                    && e.kind() != std::io::ErrorKind::BrokenPipe
                {
                    errln!(
                        "abcd hook {name}: the reply cannot be written to stdout ({e}); the host sees no reply and goes on as if allowed"
                    );
                }
            }
            if let Some(w) = done.warning {
                errln!("abcd hook {name}: {w}");
            }
        }
        Ok(Err(why)) => errln!("abcd hook {name}: {why}; allowing"),
        Err(_) => errln!("abcd hook {name}: internal error (a panic); allowing"),
    }
    super::EXIT_OK
}

/// The reply with every text made safe as printed text is ([`terminal_safe`]): the host
/// shows `systemMessage` to the person in its terminal and gives the rest to the model, and
/// either should see a bidi override or an escape sequence in a title as what it is, not
/// as what it does. Escaped before the JSON is written, so the host decodes the escape.
fn terminal_safe_reply(reply: &HookReply) -> HookReply {
    let safe = |text: &Option<String>| text.as_deref().map(|t| terminal_safe(t, Lines::Many).into_owned());
    HookReply {
        context: safe(&reply.context),
        system_message: safe(&reply.system_message),
        deny: safe(&reply.deny),
        block: safe(&reply.block),
    }
}

/// StopFailure is fire-and-forget: in print mode the host exits right after the API error
/// and sends the hook SIGTERM about 20 ms after starting it, without waiting for it; Codex's
/// SessionEnd, which records the same, runs as its process exits, within 3 s. The
/// record is worth more than obeying that: SIGTERM is ignored so the append completes (it
/// is bounded: the writer lock's wait is two seconds). Other hooks stay killable, since the
/// host's SIGTERM there is its timeout.
fn outlive_the_hosts_exit() {
    crate::platform::process::ignore_sigterm();
}

/// Reads stdin up to the payload cap; one byte more means too large.
fn read_payload(cap: usize) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    std::io::stdin().lock().take(cap as u64 + 1).read_to_end(&mut buf).map_err(|e| format!("cannot read the payload: {e}"))?;
    if buf.len() > cap {
        return Err(host::PayloadError::TooLarge(cap).to_string());
    }
    Ok(buf)
}
