//! One plain-words audit line per event, for `abcd replay`. Pure.

use serde::Serialize;

use crate::event::{self, Known};
use crate::journal::format::{Event, format_time};
use crate::ledger;

/// One audit row; the text form is `seq time actor what`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditLine {
    pub seq: u64,
    pub time: String,
    pub actor: String,
    pub kind: String,
    pub what: String,
}

impl std::fmt::Display for AuditLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:>6}  {}  {}  {}", self.seq, self.time, self.actor, self.what)
    }
}

pub fn actor_label(event: &Event) -> String {
    // Actor fields come from the file as written: shown only when clean.
    let tool = if clean(&event.actor.tool) { event.actor.tool.as_str() } else { "(tool not shown)" };
    match &event.actor.session {
        Some(s) if clean(s) => format!("session {s} (pid {}, {tool})", event.actor.pid),
        Some(_) => format!("session (id not shown: too long or carries a secret) (pid {}, {tool})", event.actor.pid),
        None => format!("pid {} ({tool})", event.actor.pid),
    }
}

pub fn audit_line(event: &Event) -> AuditLine {
    let what = match event::decode(&event.kind, &event.data) {
        Ok(Known::Opened(o)) if clean(&o.scope.to_string()) => format!("opened journal {} for the {}", o.journal_id, o.scope),
        Ok(Known::Opened(o)) => format!("opened journal {} (its scope is not shown: it carries a secret)", o.journal_id),
        Ok(Known::Moved(m)) if clean(&m.from) && clean(&m.to) => {
            format!("the working copy moved from {} to {}: its journal was accepted at its new root", m.from, m.to)
        }
        Ok(Known::Moved(_)) => "the working copy moved: its journal was accepted at its new root (the roots are not shown: one is too long or carries a secret)".to_string(),
        Ok(Known::Repaired(r)) if !clean(&r.problem) || !r.quarantine_file.as_deref().is_none_or(super::quarantine_name_ok) => {
            format!("repaired the journal ({}); its record is not shown: a field is malformed or carries a secret", cause_words(r.cause))
        }
        Ok(Known::Repaired(r)) if r.lost_from.is_some() => {
            let lost = match (r.lost_from, r.lost_to) {
                (Some(a), Some(b)) if a == b => format!("seq {a}"),
                (Some(a), Some(b)) => format!("seqs {a}-{b}"),
                _ => unreachable!("the line verified, so the gap names both ends"),
            };
            let moved = match &r.quarantine_file {
                Some(q) => format!("moved bytes {}..{} ({} lines) to quarantine/{q}", r.from_offset, r.to_offset, r.lines),
                None => "no bytes were left of them".into(),
            };
            format!(
                "repaired the journal ({}): LOST {lost} (this record stands in for what was lost); {moved} after: {}",
                cause_words(r.cause),
                r.problem
            )
        }
        Ok(Known::Repaired(r)) => match r.quarantine_file {
            Some(q) => format!(
                "repaired the journal ({}): moved bytes {}..{} ({} lines) to quarantine/{} after: {}",
                cause_words(r.cause),
                r.from_offset,
                r.to_offset,
                r.lines,
                q,
                r.problem
            ),
            None => format!("repaired the journal ({}): accepted it as it is after: {}", cause_words(r.cause), r.problem),
        },
        Ok(Known::ItemAdded(a)) => match super::checklist::check_item(&a.item) {
            Ok(()) => {
                let blocked = a.item.blocker.map(|b| format!(", blocked: {}", b.name())).unwrap_or_default();
                format!("added checklist item {} ({}{blocked}): {}", a.item.id, a.item.state.name(), a.item.title)
            }
            Err(r) => format!("checklist.item_added skipped: {} {}", r.field.unwrap_or_default(), r.reason),
        },
        Ok(Known::ItemChanged(c)) => {
            // Only the names of the changed fields: the values are checked by the fold and
            // shown by the projection, so an unscanned value never reaches the audit.
            let fields = serde_json::to_value(&c.changes)
                .ok()
                .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>().join(", ")))
                .unwrap_or_default();
            let id = if crate::checklist::item::validate_id(&c.id).is_ok() && crate::secrets::scan(&c.id).is_none() {
                c.id.as_str()
            } else {
                "(malformed id)"
            };
            format!("changed checklist item {id}: {fields}")
        }
        Ok(Known::WriteRefused(r)) if super::checklist::refusal_is_clean(&r) => {
            format!("refused a checklist {}: field {} carries a secret ({})", r.verb, r.field, r.kind)
        }
        Ok(Known::PromiseFired(f)) => match super::checklist::check_item(&f.item) {
            // The trigger is shown only as a parsed trigger: a value from the file never is.
            Ok(())
                if crate::checklist::item::validate_id(&f.id).is_ok()
                    && crate::secrets::scan(&f.trigger).is_none()
                    && crate::checklist::promise::parse(&format!("{} => x", f.trigger)).is_ok() =>
            {
                format!("promise of checklist item {} fired ({}): added item {}: {}", f.id, f.trigger, f.item.id, f.item.title)
            }
            Ok(()) => "checklist.promise_fired skipped: its id or trigger is malformed".to_string(),
            Err(r) => format!("checklist.promise_fired skipped: item.{} {}", r.field.unwrap_or_default(), r.reason),
        },
        Ok(Known::WriteRefused(_)) => "checklist.write_refused skipped: a refusal record must name a field and a kind only".to_string(),
        Ok(Known::SessionStarted(s)) if clean(&s.source) && clean(&s.working_copy) => {
            format!("session started ({}) in {}", s.source, s.working_copy)
        }
        Ok(Known::CompactionRecorded(c)) if clean(&c.trigger) => format!("context compaction ({})", c.trigger),
        Ok(Known::SessionStarted(_) | Known::CompactionRecorded(_)) => {
            format!("{} (a field is not shown: it is too long or carries a secret)", event.kind)
        }
        Ok(Known::BranchCreated(b)) if crate::ref_name::branch_name_ok(&b.branch) && clean(&b.branch) && clean(&b.command) => {
            match b.renamed_from {
                Some(old) if crate::ref_name::branch_name_ok(&old) && clean(&old) => {
                    format!("branch {} created by `{}` (renamed from {old})", b.branch, b.command)
                }
                _ => format!("branch {} created by `{}`", b.branch, b.command),
            }
        }
        Ok(Known::BranchCreated(_)) => "branch.created skipped: not a branch name abcd records".to_string(),
        Ok(Known::SessionJudged(j)) if crate::event::session_id_ok(&j.session) => format!(
            "stop judged for session {}: {} ({}), {} block(s) in a row, {} wake(s) spent",
            j.session,
            row_words(j.row),
            serde_json::to_value(j.state).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
            j.block_count,
            j.wake_count
        ),
        Ok(Known::SessionJudged(_)) => "session.judged skipped: not a session id abcd records".to_string(),
        Ok(Known::AwaySet(a)) => match crate::away::check_set(&a) {
            Ok(()) => format!(
                "away mode set by {} from {} until {}{}{}",
                a.set_by,
                a.working_copy,
                format_time(a.end),
                if a.hold_pushes { ", pushes held" } else { "" },
                if a.notify.is_some() { ", with a notify command" } else { "" }
            ),
            Err(r) => skipped_line(&event.kind, r),
        },
        Ok(Known::AwayQueued(q)) => match crate::away::check_queued(&q) {
            Ok(()) => format!("queued for the person: {}", q.step),
            Err(r) => skipped_line(&event.kind, r),
        },
        Ok(Known::AwayStopRecorded(r)) => {
            match r.stop.next.as_deref().map(|n| crate::away::check_line("next", n, crate::away::STOP_NEXT_MAX_CHARS)) {
                Some(Err(rej)) => skipped_line(&event.kind, rej),
                _ => format!(
                    "stop recorded: {}{}",
                    r.stop.label.words(),
                    r.stop.bound_words().map(|b| format!(", {b}")).unwrap_or_default()
                ),
            }
        }
        Ok(Known::AwayHandedBack(h)) => match crate::away::check_handed_back(&h) {
            Ok(()) => format!("handed back branch {} (its push is queued)", h.branch),
            Err(r) => skipped_line(&event.kind, r),
        },
        Ok(Known::AwayEnded(e)) => match crate::away::check_ended(&e) {
            Ok(()) => format!("away mode ended by {} from {}", e.ended_by, e.working_copy),
            Err(r) => skipped_line(&event.kind, r),
        },
        Ok(Known::DecisionRecorded(d)) => match crate::away::check_decision(&d) {
            Ok(()) => {
                let tradeoff = d.tradeoff.map(|t| format!(" ({} trade-off)", t.name())).unwrap_or_default();
                let item = d.item.as_deref().map(|i| format!(", tied to checklist item {i}")).unwrap_or_default();
                format!("decided{tradeoff}: {} (grounds: {}; undo: {}{item})", d.text, d.grounds, d.undo)
            }
            Err(r) => skipped_line(&event.kind, r),
        },
        Ok(Known::DecisionAnswered(a)) => {
            match crate::away::check_answered(&a) {
                Ok(()) => format!("the person answered the trade-off of seq {}: {} (from {})", a.seq, a.answer.name(), a.working_copy),
                Err(r) => skipped_line(&event.kind, r),
            }
        }
        Ok(Known::AwaySweepStarted(s)) => match crate::away::check_sweep_started(&s) {
            Ok(()) => format!("blocker sweep started from {}: answers until {}", s.working_copy, format_time(s.deadline)),
            Err(r) => skipped_line(&event.kind, r),
        },
        Ok(Known::AwaySweepAnswered(a)) => {
            match crate::away::check_line("working_copy", &a.working_copy, crate::away::WORKING_COPY_MAX_CHARS) {
                Ok(()) => format!("blocker sweep of {} answered from {}", format_time(a.sweep_start), a.working_copy),
                Err(r) => skipped_line(&event.kind, r),
            }
        }
        Ok(Known::AwayReturnShown(r)) => {
            match crate::away::check_line("working_copy", &r.working_copy, crate::away::WORKING_COPY_MAX_CHARS) {
                Ok(()) => format!("return lists of the window from {} shown in {}", format_time(r.window_start), r.working_copy),
                Err(rej) => skipped_line(&event.kind, rej),
            }
        }
        Ok(Known::RunStarted(r)) if ledger::name_passes(&r.run) && r.lanes.iter().all(|l| ledger::name_passes(l)) => format!(
            "run {} started with lane(s) {}, driven by pid {}{}",
            r.run,
            r.lanes.join(", "),
            r.driver.process.pid,
            driver_session(&r.driver)
        ),
        Ok(Known::DriverClaimed(c)) if ledger::name_passes(&c.run) => format!(
            "run {} taken over by pid {}{} (its driver pid {} was gone)",
            c.run,
            c.driver.process.pid,
            driver_session(&c.driver),
            c.previous.process.pid
        ),
        Ok(Known::RunHalted(r)) if ledger::name_passes(&r.run) => format!("run {} halted: launches refused until `abcd run lift`", r.run),
        Ok(Known::RunLifted(r)) if ledger::name_passes(&r.run) => format!("run {} lifted", r.run),
        Ok(Known::RunFinished(r)) if ledger::name_passes(&r.run) => format!("run {} finished", r.run),
        Ok(Known::LaunchIntended(l)) if ledger::name_passes(&l.run) && ledger::name_passes(&l.lane) && ledger::name_passes(&l.role) => {
            match ledger::check_command(&l.command) {
                Ok(()) => format!("launch {} of {}/{} intended ({}): {}", l.launch, l.run, l.lane, l.role, l.command.join(" ")),
                Err(r) => skipped_line(&event.kind, r),
            }
        }
        Ok(Known::LaunchStarted(l)) if ledger::name_passes(&l.run) && ledger::name_passes(&l.lane) => {
            format!("launch {} of {}/{} started as pid {}", l.launch, l.run, l.lane, l.process.pid)
        }
        Ok(Known::LaunchExited(l)) if ledger::name_passes(&l.run) && ledger::name_passes(&l.lane) => {
            format!("launch {} of {}/{} exited: {}", l.launch, l.run, l.lane, ledger::exit_words(l.status))
        }
        Ok(Known::ReceiptCollected(c)) if ledger::name_passes(&c.run) && ledger::name_passes(&c.lane) => {
            format!(
                "receipt of launch {} of {}/{} collected ({} bytes, blake3 {})",
                c.launch,
                c.run,
                c.lane,
                c.bytes,
                &c.blake3[..c.blake3.len().min(16)]
            )
        }
        Ok(Known::WorkSavedAside(w))
            if ledger::name_passes(&w.run)
                && ledger::name_passes(&w.lane)
                && w.ref_name.starts_with("refs/abcd/saved/")
                && clean(&w.ref_name) =>
        {
            format!(
                "uncommitted work of {}/{} saved aside to {} ({} file(s))",
                w.run,
                w.lane,
                w.ref_name,
                w.files.len() as u64 + w.files_not_listed
            )
        }
        Ok(Known::LaneWorktreeCreated(c)) if ledger::name_passes(&c.run) && ledger::name_passes(&c.lane) && clean(&c.worktree) => {
            format!("worktree of {}/{} made at {} on branch {}", c.run, c.lane, c.worktree, ledger::lane_branch(&c.run, &c.lane))
        }
        Ok(Known::LaneWorktreeRemoved(r)) if ledger::name_passes(&r.run) && ledger::name_passes(&r.lane) && clean(&r.worktree) => {
            let branch = ledger::lane_branch(&r.run, &r.lane);
            let branch_words = if r.branch_deleted {
                format!("its branch {branch} held no commit and went too")
            } else {
                format!("its branch {branch} stays")
            };
            format!("worktree of {}/{} at {} removed; {branch_words}", r.run, r.lane, r.worktree)
        }
        Ok(Known::ContextInjected(i)) => match context_checked(&i) {
            Ok(()) => {
                let covers = i.covers_seq.map(|s| format!(", the checklist as of seq {s}")).unwrap_or_default();
                let again = i.reinjects.as_ref().map(|m| format!(", sending again {m} which was not delivered")).unwrap_or_default();
                format!(
                    "injected context {} into session {} ({}): {} characters{covers}{again}",
                    i.marker,
                    i.session,
                    i.source.replace('_', " "),
                    i.chars
                )
            }
            Err(r) => skipped_line(&event.kind, r),
        },
        Ok(Known::ContextReceipt(kind, r)) if super::context::receipt_checked(&r).is_ok() => {
            let why = receipt_words(&r.reason);
            match kind {
                event::ReceiptKind::Delivered => format!("context {} reached session {}'s model: {why}", r.marker, r.session),
                event::ReceiptKind::NotDelivered => format!("context {} did NOT reach session {}'s model: {why}", r.marker, r.session),
                event::ReceiptKind::Unknown => {
                    format!("context {}: whether it reached session {}'s model is unknown: {why}", r.marker, r.session)
                }
            }
        }
        Ok(Known::ContextReceipt(_, r)) => skipped_line(&event.kind, super::context::receipt_checked(&r).unwrap_err()),
        Ok(
            Known::RunStarted(_)
            | Known::DriverClaimed(_)
            | Known::RunHalted(_)
            | Known::RunLifted(_)
            | Known::RunFinished(_)
            | Known::LaunchIntended(_)
            | Known::LaunchStarted(_)
            | Known::LaunchExited(_)
            | Known::ReceiptCollected(_)
            | Known::WorkSavedAside(_)
            | Known::LaneWorktreeCreated(_)
            | Known::LaneWorktreeRemoved(_),
        ) => format!("{} skipped: a name is not one abcd records", event.kind),
        Ok(Known::AwayNotified(n)) => match crate::away::notify::check_notified(&n) {
            Ok(()) => format!("the person's notify command was run ({}): {}", n.kind.words(), n.summary),
            Err(r) => skipped_line(&event.kind, r),
        },
        Ok(Known::AwayNotificationRecorded(n)) => match crate::away::notify::check_notification(&n) {
            Ok(()) => format!("host notification recorded while away: {}", n.notification_type),
            Err(r) => skipped_line(&event.kind, r),
        },
        Ok(Known::AwayModeRefused(r)) => match crate::away::refusals::check_refused(&r) {
            Ok(()) => crate::away::refusals::audit_words(&r),
            Err(e) => skipped_line(&event.kind, e),
        },
        Ok(Known::Unfolded) => format!("{} (not folded by this build)", event.kind),
        Err(event::DecodeError::UnknownKind(k)) => format!("{k} (unknown kind, kept and skipped)"),
        Err(_) => format!("{} skipped: its data does not match the kind's schema", event.kind),
    };
    AuditLine { seq: event.seq, time: format_time(event.time), actor: actor_label(event), kind: event.kind.clone(), what }
}

/// An injection's fields as the fold checks them, without a state to fold into.
fn context_checked(i: &crate::event::ContextInjected) -> Result<(), super::checklist::Rejection> {
    super::context::fold_injected(&mut super::context::ContextState::default(), 0, i.clone())
}

/// A receipt's reason in plain words (the reasons abcd writes; any other is shown as is).
fn receipt_words(reason: &str) -> String {
    match reason {
        "sent" => "the host's transcript shows it sent whole".into(),
        "cut" => "the host cut it to a preview (over its output cap)".into(),
        "compacted" => "the session was compacted before it was sent".into(),
        "sent_without" => "the host sent a request without it".into(),
        "no_transcript" => "no transcript to read".into(),
        "unreadable" => "the transcript could not be read".into(),
        "not_found" => "the transcript does not show it".into(),
        "out_of_window" => "it lies before the part of the transcript read".into(),
        "over_budget" => "reading the transcript ran out of its time budget".into(),
        other => format!("reason {other}"),
    }
}

fn driver_session(d: &crate::ledger::Driver) -> String {
    match &d.session {
        Some(s) if crate::event::session_id_ok(s) => format!(" (session {s})"),
        _ => String::new(),
    }
}

fn skipped_line(kind: &str, r: super::checklist::Rejection) -> String {
    format!("{kind} skipped: {} {}", r.field.unwrap_or_default(), r.reason)
}

fn row_words(row: crate::verdict::stop::Row) -> String {
    use crate::verdict::stop::Row;
    // Every row by name: a row added later is worded here or the build fails, never shown
    // as another row's words.
    match row {
        Row::PresentOwed => "present, work owed".to_string(),
        Row::PresentNothingOwed => "present, nothing owed".to_string(),
        Row::Behind => "away, checklist behind".to_string(),
        Row::LoopTurn => "away, a loop turn's end".to_string(),
        Row::Question
        | Row::OwedChanged
        | Row::WakeReleased
        | Row::WakesSpent
        | Row::NoWake
        | Row::NothingOwedWake
        | Row::NothingOwedNoWake => format!("away row {}", row.number().unwrap_or_default()),
    }
}

fn cause_words(cause: crate::event::RepairCause) -> &'static str {
    match cause {
        crate::event::RepairCause::Corruption => "corruption",
        crate::event::RepairCause::AnchorMismatch => "anchor mismatch",
    }
}

/// Text from the file that the audit may show: short and carrying no secret.
fn clean(text: &str) -> bool {
    text.len() <= 512 && crate::secrets::scan(text).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::stop::Row;

    #[test]
    fn every_row_has_its_own_words() {
        assert_eq!(row_words(Row::Question), "away row 1");
        assert_eq!(row_words(Row::NothingOwedNoWake), "away row 7");
        assert_eq!(row_words(Row::PresentOwed), "present, work owed");
        assert_eq!(row_words(Row::PresentNothingOwed), "present, nothing owed");
        assert_eq!(row_words(Row::Behind), "away, checklist behind");
        assert_eq!(row_words(Row::LoopTurn), "away, a loop turn's end");
    }
}
