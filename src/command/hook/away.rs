//! The away record as the hooks see it: read from the repository journal, failing open
//! (a record that cannot be read, is corrupt or is not safely this user's reads as "not
//! away", with one warning line), and written only under the journal's lock after
//! re-reading it, so a hook that began while away never writes into a window that
//! `abcd mode back` closed meanwhile.

use std::path::Path;

use jiff::Timestamp;
use serde_json::json;

use super::away_kept;
use crate::away::notify::{AwayNotificationRecorded, AwayNotified, command_due};
use crate::away::refusals::{AwayModeRefused, RefusalRoute, RefusedAction};
use crate::away::{AwayHandedBack, AwayReturnShown, AwayState, AwayStopRecorded, AwaySweepAnswered, RecordedStop, Window};
use crate::event::{self, Scope};
use crate::journal::append::JournalError;
use crate::journal::format::{Actor, NewEvent};
use crate::journal::storage::RealDisk;
use crate::places::{self, Place};
use crate::store::Store;

/// The repository's away record, read for one hook call.
pub struct AwayView {
    pub state: AwayState,
    /// The repository journal, when the repository has one place (a first commit).
    repository: Option<(Store, Scope)>,
    /// Why the record reads as "not away" although it may not be (a fault of abcd's).
    pub warning: Option<String>,
}

impl AwayView {
    /// The repository journal's folder, when the repository has one.
    pub fn repository_folder(&self) -> Option<std::path::PathBuf> {
        self.repository.as_ref().and_then(|(store, _)| store.journal().paths().journal.parent().map(Path::to_path_buf))
    }

    /// The window while the person is away at `now`.
    pub fn holding(&self, now: Timestamp) -> Option<&Window> {
        self.state.holding(now)
    }

    /// Records a stop in the away record, if the window still holds when the lock is had.
    pub fn record_stop(&self, stop: RecordedStop, working_copy: &Path, session: Option<&str>, now: Timestamp) -> Option<String> {
        let data = AwayStopRecorded { stop, working_copy: working_copy.display().to_string() };
        self.append_if_holding(event::AWAY_STOP_RECORDED, json!(data), session, now, |_| true)
    }

    /// Records a hand-back, once per branch and head.
    pub fn record_hand_back(&self, branch: &str, head: &str, working_copy: &Path, session: Option<&str>, now: Timestamp) -> Option<String> {
        let data = AwayHandedBack { branch: branch.into(), head: head.into(), working_copy: working_copy.display().to_string() };
        self.append_if_holding(event::AWAY_HANDED_BACK, json!(data), session, now, |w| !w.handed_back_already(branch, head))
    }

    /// The blocker sweep's ask for this working copy's session: its first hook while the
    /// sweep is open answers it (recorded once per working copy, under the lock) and carries
    /// the ask. `(ask, warning)`.
    pub fn answer_sweep(&self, root: &Path, session: Option<&str>, now: Timestamp) -> (Option<String>, Option<String>) {
        let key = crate::command::sweep::copy_key(root);
        let owed = |w: &Window| w.sweep.as_ref().filter(|s| s.is_open(now) && s.answer_of(&key).is_none()).map(|s| s.start);
        let Some(start) = self.holding(now).and_then(owed) else { return (None, None) };
        let data = AwaySweepAnswered { sweep_start: start, working_copy: key.clone() };
        let Some((store, scope)) = self.repository.as_ref() else { return (None, None) };
        let event =
            NewEvent { kind: event::AWAY_SWEEP_ANSWERED.into(), actor: Actor::this_process(session.map(String::from)), data: json!(data) };
        let written =
            store.append_with(Some(scope), |state| match state.away.holding(now).and_then(|w| Some((owed(w)?, w.sweep.clone()?))) {
                Some((s, sweep)) if s == start => (vec![event.clone()], Some(sweep)),
                _ => (vec![], None),
            });
        match written {
            Ok(w) => {
                let warning = w
                    .after
                    .err()
                    .map(|e| format!("the {} event is saved but away.json was not refreshed: {e}", event::AWAY_SWEEP_ANSWERED));
                (w.outcome.map(|sweep| crate::away::sweep::ask(&sweep, &|t| crate::clock::show(t))), warning)
            }
            Err(e) => (None, Some(format!("the {} event was not recorded: {e}", event::AWAY_SWEEP_ANSWERED))),
        }
    }

    /// The return lists on this working copy's first prompt after the away window was
    /// closed: recorded as shown once per working copy (under the lock), then returned as
    /// `(for the model, for the person)`; `None` when shown before or when there is nothing
    /// to show. The second value is a warning.
    pub fn return_lists(&self, place: &Place, root: &Path, session: Option<&str>) -> (Option<(String, String)>, Option<String>) {
        let key = crate::command::sweep::copy_key(root);
        let Some(window) = crate::away::return_owed(&self.state, &key) else { return (None, None) };
        let Some((store, scope)) = self.repository.as_ref() else { return (None, None) };
        let mut warnings = Vec::new();
        let copies: Vec<_> = match crate::command::sweep::collect(place) {
            Ok(found) => found.iter().map(crate::command::sweep::Found::items_only).collect(),
            Err(e) => {
                warnings.push(format!("the other working copies' blocked items are not in the return lists: {e}"));
                Vec::new()
            }
        };
        let start = window.start;
        let data = AwayReturnShown { window_start: start, working_copy: key.clone() };
        let event =
            NewEvent { kind: event::AWAY_RETURN_SHOWN.into(), actor: Actor::this_process(session.map(String::from)), data: json!(data) };
        let written = store.append_with(Some(scope), |state| match crate::away::return_owed(&state.away, &key) {
            Some(w) if w.start == start => (vec![event.clone()], Some(w.clone())),
            _ => (vec![], None),
        });
        let window = match written {
            Ok(w) => {
                warnings.extend(
                    w.after.err().map(|e| format!("the {} event is saved but away.json was not refreshed: {e}", event::AWAY_RETURN_SHOWN)),
                );
                w.outcome
            }
            Err(e) => {
                warnings.push(format!(
                    "the {} event was not recorded, so the return lists wait for the next prompt: {e}",
                    event::AWAY_RETURN_SHOWN
                ));
                None
            }
        };
        let warning = (!warnings.is_empty()).then(|| warnings.join("; "));
        let lists = window.and_then(|w| {
            let model = crate::away::sweep::return_lists(&w, &copies, crate::away::sweep::RETURN_HEADING_MODEL)?;
            let person = crate::away::sweep::return_lists(&w, &copies, crate::away::sweep::RETURN_HEADING_PERSON)?;
            Some((model, person))
        });
        (lists, warning)
    }

    /// Records a host notification seen while away.
    pub fn record_notification(&self, data: AwayNotificationRecorded, session: Option<&str>, now: Timestamp) -> Option<String> {
        self.append_if_holding(event::AWAY_NOTIFICATION_RECORDED, json!(data), session, now, |_| true)
    }

    /// Records `away.notified` when, under the lock, the window still holds, has a notify
    /// command and `kind` is due (docs/notify.md): the command to start, if it was recorded,
    /// and a warning, if any.
    pub fn record_notified(&self, data: AwayNotified, session: Option<&str>, now: Timestamp) -> (Option<String>, Option<String>) {
        let Some((store, scope)) = self.repository.as_ref() else { return (None, None) };
        let kind = data.kind;
        let event =
            NewEvent { kind: event::AWAY_NOTIFIED.into(), actor: Actor::this_process(session.map(String::from)), data: json!(data) };
        let written = store.append_with(Some(scope), |state| match command_due(&state.away, kind, now) {
            Some(command) => (vec![event.clone()], Some(command.to_string())),
            None => (vec![], None),
        });
        match written {
            Ok(w) => {
                let warning =
                    w.after.err().map(|e| format!("the {} event is saved but away.json was not refreshed: {e}", event::AWAY_NOTIFIED));
                (w.outcome, warning)
            }
            Err(e) => (None, Some(format!("the {} event was not recorded, so the notify command was not run: {e}", event::AWAY_NOTIFIED))),
        }
    }

    /// Records an agent's refused attempt (`away.mode_refused`), within the period's limit:
    /// a warning when it could not be recorded (the attempt is refused all the same).
    pub fn record_refusal(&self, route: RefusalRoute, action: RefusedAction, working_copy: &Path, session: Option<&str>) -> Option<String> {
        let session = crate::command::mode_refusals::session_kept(session);
        let data = AwayModeRefused { route, action, mark: None, session, working_copy: working_copy.display().to_string() };
        let Some((store, scope)) = self.repository.as_ref() else {
            let why = self.warning.as_deref().unwrap_or("the repository has no first commit, so no away record");
            return Some(format!("the refused attempt was not recorded: {why}"));
        };
        match crate::command::mode_refusals::append(store, scope, &data) {
            Ok((_, warning)) => warning,
            Err(why) => Some(why),
        }
    }

    fn append_if_holding(
        &self,
        kind: &str,
        data: serde_json::Value,
        session: Option<&str>,
        now: Timestamp,
        still_wanted: impl Fn(&Window) -> bool,
    ) -> Option<String> {
        let (store, scope) = self.repository.as_ref()?;
        let event = NewEvent { kind: kind.into(), actor: Actor::this_process(session.map(String::from)), data };
        let written = store.append_with(Some(scope), |state| match state.away.holding(now) {
            Some(w) if still_wanted(w) => (vec![event.clone()], ()),
            _ => (vec![], ()),
        });
        match written {
            Ok(w) => w.after.err().map(|e| format!("the {kind} event is saved but away.json was not refreshed: {e}")),
            Err(e) => Some(format!("the {kind} event was not recorded: {e}")),
        }
    }
}

/// The away record of one hook call, read on first ask and then kept: every part of the
/// hook sees the same record, and a hook that never asks reads nothing.
pub struct AwayOnce<'a> {
    place: &'a Place,
    view: std::cell::OnceCell<std::rc::Rc<AwayView>>,
}

impl<'a> AwayOnce<'a> {
    pub fn new(place: &'a Place) -> AwayOnce<'a> {
        AwayOnce { place, view: std::cell::OnceCell::new() }
    }

    /// The record, read the first time it is asked for.
    pub fn get(&self) -> &AwayView {
        self.view.get_or_init(|| std::rc::Rc::new(read(self.place)))
    }

    /// The same record, for a value that outlives this borrow (the Stop hook's pending verdict).
    pub fn shared(&self) -> std::rc::Rc<AwayView> {
        self.get();
        self.view.get().map(std::rc::Rc::clone).expect("read just above")
    }
}

/// Reads the away record for a hook at `place`. Never fails: what cannot be read is "not
/// away", said once in `warning`. A repository without a first commit has no record.
pub fn read(place: &Place) -> AwayView {
    let not_away = |warning: Option<String>| AwayView { state: AwayState::default(), repository: None, warning };
    let (paths, scope) = match place.repository() {
        Ok(found) => found,
        Err(places::PlaceError::NoRootCommit { .. } | places::PlaceError::NoCommitYet { .. }) => return not_away(None),
        Err(e) => return not_away(Some(format!("the away record cannot be found ({e}); reading as not away"))),
    };
    let store = match place.open_scoped(RealDisk::shared(), paths, &scope) {
        Ok(journal) => Store::new(journal),
        Err(e) => return not_away(Some(format!("the away record cannot be opened ({e}); reading as not away"))),
    };
    // The record the hooks last read in full, while none of its files changed.
    if let Some(state) = away_kept::take(&store) {
        return AwayView { state, repository: Some((store, scope)), warning: None };
    }
    let path = store.journal().paths().journal.clone();
    let (state, warning) = match away_kept::read_keeping(&store) {
        Ok(current) if current.degraded.is_none() => (current.state.away, None),
        Ok(_) => (
            AwayState::default(),
            Some(format!("the away record {} is corrupt; reading as not away (`abcd mode` names the damage)", path.display())),
        ),
        Err(JournalError::Missing { .. }) => (AwayState::default(), None),
        Err(e) => (AwayState::default(), Some(format!("the away record cannot be read ({e}); reading as not away"))),
    };
    AwayView { state, repository: Some((store, scope)), warning }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::places::tests::{CACHED_COMMIT, Folder};

    #[test]
    fn one_hook_reads_its_away_record_once_from_its_place() {
        let f = Folder::managed();
        let place = f.place("");
        let away = AwayOnce::new(&place);
        let first: *const AwayView = away.get();
        assert!(std::ptr::eq(first, away.get()), "read again");
        assert!(std::rc::Rc::ptr_eq(&away.shared(), &away.shared()), "read again");
        // A repository journal not created yet: never away, and nothing to warn of.
        assert!(away.get().warning.is_none(), "{:?}", away.get().warning);
        assert!(away.get().state.window.is_none());
        assert_eq!(away.get().repository_folder(), Some(f.home().join("repos").join(CACHED_COMMIT)));
    }
}
