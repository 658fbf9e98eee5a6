//! The record of each refused attempt to set or end the away mode, in the repository
//! journal: [`append`] under the writer lock within the period's limit, and [`session_kept`]
//! for the session it names. Both choke points call it: the verb under a host's tool mark
//! (`away::refuse_host_tool_recorded`) and the PreToolUse rules (`hook::away`'s
//! `record_refusal`, for `hook::mode_guard` and the file-tool rule). The attempt is refused
//! whether or not it is recorded: a record that cannot be written is said in one line, and
//! past `away::refusals::REFUSALS_RECORDED_MAX` in a period nothing more is written. The
//! command itself is never recorded (it may carry a secret); the route, the action, the
//! mark's name, the session and the working copy are.

use serde_json::json;

use crate::away::refusals::{self, AwayModeRefused};
use crate::event::{self, Scope};
use crate::journal::format::{Actor, NewEvent};
use crate::store::Store;

/// What became of a refused attempt's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    Yes,
    /// The period already holds `REFUSALS_RECORDED_MAX`: refused, not recorded.
    OverLimit,
}

/// The session id as the record keeps one: an id abcd keys by, with no secret; else none.
pub fn session_kept(session: Option<&str>) -> Option<String> {
    session.filter(|s| event::session_id_ok(s) && crate::secrets::scan(s).is_none()).map(String::from)
}

/// Appends `away.mode_refused` under the writer lock when the period has room. `Err`
/// says, in words, why it was not recorded; the second value is a warning about the files
/// derived from the journal.
pub fn append(store: &Store, scope: &Scope, data: &AwayModeRefused) -> Result<(Recorded, Option<String>), String> {
    let event = NewEvent { kind: event::AWAY_MODE_REFUSED.into(), actor: Actor::this_process(data.session.clone()), data: json!(data) };
    let written = store.append_with(Some(scope), |state| {
        if refusals::has_room(&state.away) { (vec![event.clone()], Recorded::Yes) } else { (vec![], Recorded::OverLimit) }
    });
    match written {
        Ok(w) => {
            let warning =
                w.after.err().map(|e| format!("the {} event is saved but away.json was not refreshed: {e}", event::AWAY_MODE_REFUSED));
            Ok((w.outcome, warning))
        }
        Err(e) => Err(format!("the refused attempt was not recorded in the away record: {e}")),
    }
}
