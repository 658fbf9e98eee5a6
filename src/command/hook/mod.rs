//! The hooks' logic, host-neutral: a `HookRequest` in, a `HookReply` out, through the
//! same store as the verbs (append → fold → projection). Outside a managed checkout every
//! hook answers nothing and writes nothing. Errors are returned, never printed: the CLI
//! turns any of them into "allow, and one line on stderr" (fail open, loudly).

pub mod away;
pub mod away_kept;
pub mod context;
pub mod loop_turn;
pub mod mode_guard;
pub mod outcome;
pub mod promises;
pub mod start_copy;
pub mod stop;

use std::path::Path;

use serde_json::json;

use crate::away::refusals::{RefusalRoute, RefusedAction};
use crate::checklist::render;
use crate::event::{self, AwayShown, BranchCreated, CompactionRecorded, ContextReceipt, Scope, SessionStarted};
use crate::fold::context::Delivery;
use crate::git::branch as git;
use crate::host::{HookEvent, HookReply, HookRequest, Host, RequestDetail, ToolCall};
use crate::journal::append::{AppendNotes, Appended, JournalError};
use crate::journal::format::{Actor, NewEvent};
use crate::journal::storage::RealDisk;
use crate::places::{Place, PlaceError};
use crate::store::Store;
use crate::store::context as start_frame;

use crate::command::own_file::resolve;
pub use crate::store::context::CONTEXT_HEADER;
pub use outcome::{HookError, HookOutcome};

/// Handles one hook call; `started` is when the hook process began (the owed-work
/// budget runs from it). `Ok` with an empty reply when the checkout is not managed.
pub fn handle(req: &HookRequest, started: std::time::Instant) -> Result<HookOutcome, HookError> {
    let (req, place) = start_copy::at_start_copy(req);
    let req = &req;
    let place = place.map_err(HookError::BrokenWorktreeLink)?;
    let outcome = handle_managed(req, &place, started)?;
    // After the hook's own work: a background mirror push when one is due (it never waits
    // for the push, and what the push does is recorded for `abcd mirror status`).
    crate::command::mirror::push_in_background_if_due(&place, crate::clock::wall_now());
    Ok(outcome)
}

fn handle_managed(req: &HookRequest, place: &Place, started: std::time::Instant) -> Result<HookOutcome, HookError> {
    if !req.cwd.is_dir() {
        return Err(HookError::NoSuchCwd(req.cwd.clone()));
    }
    let (paths, scope) = match place.working_copy() {
        Ok(found) => found,
        Err(PlaceError::NotInWorkingCopy { .. } | PlaceError::NotManaged { .. }) => {
            return Ok(HookOutcome { reply: HookReply::default(), warning: None });
        }
        Err(e) => return Err(e.into()),
    };
    let store = Store::new(place.open_scoped(RealDisk::shared(), paths.clone(), &scope)?);
    let root = place.root()?;
    let away = away::AwayOnce::new(place);
    let actor = Actor::this_process(req.session_id.clone());
    let event = |kind: &str, data: serde_json::Value| NewEvent { kind: kind.into(), actor: actor.clone(), data };
    match &req.detail {
        RequestDetail::SessionStart { source } => {
            let started_data = SessionStarted {
                session: req.session_id.clone(),
                source: source.name().to_string(),
                working_copy: root.display().to_string(),
            };
            // The checklist first: a session start cannot change it, and the read says which
            // line the projections name, so the append can leave them be without reading
            // the state (Store::append_unseen).
            start_copy::record_start(req, &root);
            let started = event(event::SESSION_STARTED, json!(started_data));
            let now = crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?;
            let AwayAtStart { block, shown, warning } = away_block(&away)?;
            let block = loop_turn::with_turn_line(block, &root);
            let budget = budget_for(req.host, block.as_deref());
            let cached = store.cached_session_context(budget, now);
            // Promises due now fire before the checklist is shown, so the start shows them
            // first. A kept render that shows no armed promise spares reading the state.
            let (cached, fired_warning) = match cached {
                Some(kept) if !kept.promises_armed => (Some(kept), None),
                kept => match promises::fire_due(&store, Some(&scope), &root, &actor, now, None, None) {
                    (fired, warning) if fired.is_empty() => (kept, warning),
                    (_, warning) => (None, warning),
                },
            };
            let mut start = start_context(&store, block.as_deref(), cached, now, budget);
            start.text = fit_bytes(req.host, start.text, block.as_deref(), budget, &|b| {
                let view = store.checklist_view();
                render::render(&view.checklist.items, &view.notes, b, now)
            });
            let mut warnings: Vec<String> = warning.into_iter().chain(fired_warning).collect();
            let how = context::Injecting {
                session: req.session_id.as_deref(),
                source: &context::start_source(source.name()),
                covers_seq: start.covers_seq,
                away: shown,
                reinjects: None,
            };
            let made = context::inject(&padded_for_tests(start.text), how, &actor);
            let events: Vec<NewEvent> = std::iter::once(started).chain(made.event).collect();
            warnings.extend(append_warning("session.started", store.append_unseen(&events, &scope, start.projections_at)));
            let reply = HookReply { context: Some(made.text), ..Default::default() };
            Ok(HookOutcome { reply, warning: join(warnings) })
        }
        RequestDetail::Compact { trigger } if req.event == HookEvent::PreCompact => {
            let data = CompactionRecorded { session: req.session_id.clone(), trigger: trigger.clone() };
            let warning = record(&store, &scope, event(event::COMPACTION_RECORDED, json!(data)));
            Ok(HookOutcome { reply: HookReply::default(), warning })
        }
        RequestDetail::PreToolUse { call } => {
            let mut outcome = pre_tool_use(&store, &scope, place, &away, call, &event, req.session_id.as_deref())?;
            // The blocker sweep's ask rides a tool call the hook lets through (docs/sweep.md).
            if outcome.reply.deny.is_none() {
                let (ask, warning) = away.get().answer_sweep(
                    &root,
                    req.session_id.as_deref(),
                    crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?,
                );
                outcome.reply.context = ask;
                outcome.warning = join(outcome.warning.into_iter().chain(warning).collect());
            }
            Ok(outcome)
        }
        RequestDetail::UserPromptSubmit => user_prompt(&store, &scope, place, &away, req, &actor, started),
        RequestDetail::Stop { stop_hook_active, last_assistant_message, session_crons } => {
            let payload = stop::StopPayload {
                bound: req.host.stop_bound(),
                wakes: req.host.wakes(),
                session_id: req.session_id.as_deref(),
                stop_hook_active: *stop_hook_active,
                last_assistant_message: last_assistant_message.as_deref(),
                session_crons,
                host: req.host,
                transcript_path: req.transcript_path.as_deref(),
            };
            stop::stop(&store, &scope, &root, &away, &payload, started)
        }
        RequestDetail::StopFailure { error } => stop::stop_failure(&root, &away, req.session_id.as_deref(), error),
        RequestDetail::Notification { notification_type, message } => {
            crate::command::notify::notification(&root, &away, req.session_id.as_deref(), notification_type, message.as_deref())
        }
        RequestDetail::Compact { .. } => Ok(HookOutcome { reply: HookReply::default(), warning: None }),
        // Codex's only sign of an API error: recorded as Claude Code's StopFailure is.
        RequestDetail::SessionEnd => match req.host.last_turn_api_error(req.transcript_path.as_deref()) {
            Some(error) => stop::stop_failure(&root, &away, req.session_id.as_deref(), &error),
            None => Ok(HookOutcome { reply: HookReply::default(), warning: None }),
        },
    }
}

/// Appends one event; a failure is reported as a warning and the hook still answers.
fn record(store: &Store, scope: &Scope, event: NewEvent) -> Option<String> {
    append_warning(&event.kind, store.append(std::slice::from_ref(&event), Some(scope)))
}

type AppendResult = Result<(Vec<Appended>, AppendNotes, Option<JournalError>), JournalError>;

/// What a hook says on stderr of an append: nothing, projections not refreshed, or not
/// recorded at all.
fn append_warning(kind: &str, result: AppendResult) -> Option<String> {
    match result {
        Ok((_, _, None)) => None,
        Ok((_, _, Some(e))) => Some(format!("the {kind} event is saved but the files derived from the journal were not rewritten: {e}")),
        Err(e) => Some(format!("the {kind} event was not recorded: {e}")),
    }
}

/// The context a session starts with: while away the short away block first, then the
/// checklist, all within the host's budget (`budget_for`, then `fit_bytes`).
pub fn session_context(host: Host, view: &crate::store::reader::ChecklistView, away_block: Option<&str>) -> String {
    let now = crate::clock::now().unwrap_or_else(|_| crate::clock::wall_now());
    let budget = budget_for(host, away_block);
    let text = render::render(&view.checklist.items, &view.notes, budget, now);
    fit_bytes(host, start_frame::frame(&text, away_block), away_block, budget, &|b| {
        render::render(&view.checklist.items, &view.notes, b, now)
    })
}

/// The checklist's budget, in characters, on `host`: Claude Code's cap counts characters
/// (the host's 10,000 less a margin and the receipt's tokens); Codex's counts bytes (its
/// token estimate is bytes over four), so there it is also no more than the byte budget
/// less the away block's bytes and the receipt's tokens.
pub fn budget_for(host: Host, away_block: Option<&str>) -> usize {
    let chars = start_frame::checklist_budget(away_block);
    match host.context_budget_bytes() {
        None => chars,
        Some(bytes) => {
            let block = away_block.map_or(0, |b| b.len() + render::BLOCK_SEP.len());
            chars.min(bytes.saturating_sub(crate::event::context::MARKED_EXTRA_CHARS + block)).max(render::MIN_BUDGET_CHARS)
        }
    }
}

/// Renders of the checklist tried, at most, to bring a text over the host's byte budget
/// under it (each try takes off what the last was over by).
pub const FIT_TRIES_MAX: usize = 4;

/// `text` (framed, as the host is sent it, before the receipt's tokens) brought within the
/// host's byte budget, where it has one: while over, the checklist is rendered again with
/// its budget less what the text was over by (a character is at least a byte), at most
/// [`FIT_TRIES_MAX`] times and never under the renderer's least budget.
fn fit_bytes(host: Host, text: String, away_block: Option<&str>, budget: usize, rerender: &dyn Fn(usize) -> String) -> String {
    let Some(cap) = host.context_budget_bytes() else { return text };
    let (mut text, mut budget) = (text, budget);
    for _ in 0..FIT_TRIES_MAX {
        let over = (text.len() + crate::event::context::MARKED_EXTRA_CHARS).saturating_sub(cap);
        if over == 0 || budget <= render::MIN_BUDGET_CHARS {
            break;
        }
        budget = budget.saturating_sub(over).max(render::MIN_BUDGET_CHARS);
        text = start_frame::frame(&rerender(budget), away_block);
    }
    text
}

/// A session start's context, the seq the projections name (when the read learned it) and
/// the seq of the checklist it shows.
struct StartContext {
    text: String,
    projections_at: Option<u64>,
    covers_seq: Option<u64>,
}

/// The checklist is read from `session-context.json` (`cached`, when that still shows the
/// journal's head, so the cost does not grow with the plan), else rendered from the
/// checklist view and the file rewritten.
fn start_context(
    store: &Store,
    away_block: Option<&str>,
    cached: Option<crate::store::reader::CachedContext>,
    now: jiff::Timestamp,
    budget: usize,
) -> StartContext {
    if let Some(cached) = cached {
        let seq = Some(cached.journal_seq);
        return StartContext { text: start_frame::frame(&cached.text, away_block), projections_at: seq, covers_seq: seq };
    }
    let view = store.checklist_view();
    let text = render::render(&view.checklist.items, &view.notes, budget, now);
    if let Some(line) = view.line {
        // A cache: a failure to write it changes nothing for this start.
        let _ = store.write_session_context(line, &view.checklist.items, budget, now, text.clone());
    }
    StartContext { text: start_frame::frame(&text, away_block), projections_at: view.projection_seq, covers_seq: view.head_seq }
}

/// The away block while the person is away, what it shows the session, and a warning when
/// the record could not be read (then no block: not away).
struct AwayAtStart {
    block: Option<String>,
    shown: Option<AwayShown>,
    warning: Option<String>,
}

fn away_block(away: &away::AwayOnce<'_>) -> Result<AwayAtStart, HookError> {
    let now = crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?;
    let record = away.get();
    let window = record.holding(now);
    let block = window.map(|w| crate::away::text::away_block(w, &|t| crate::clock::show(t)));
    Ok(AwayAtStart { block, shown: window.map(context::away_shown), warning: record.warning.clone() })
}

/// The prompt hook: settles the session's injections it can, sends again (once) one the
/// host did not deliver, tells the session what changed of the away window, and notes a
/// checklist behind the session's own work.
fn user_prompt(
    store: &Store,
    scope: &Scope,
    place: &Place,
    away: &away::AwayOnce<'_>,
    req: &HookRequest,
    actor: &Actor,
    started: std::time::Instant,
) -> Result<HookOutcome, HookError> {
    let root = &place.root()?;
    // A wake reaches the session as a prompt: promises due by now fire here.
    let mut read = PromptRead::of(store);
    let known = read.state().map(|s| s.checklist.items.as_slice());
    let (fired, fired_warning) =
        promises::fire_due(store, Some(scope), root, actor, crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?, None, known);
    if !fired.is_empty() {
        read = PromptRead::of(store);
    }
    let state = read.state();
    // The checklist view (`checklist.json`, or last-good when the journal cannot be read)
    // only where the state is not enough: a re-injection's render and an unreadable state.
    let view = std::cell::OnceCell::new();
    let view = || view.get_or_init(|| store.checklist_view());
    let work = state.map(|s| s.work.clone()).unwrap_or_default();
    let now = crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?;
    // Read only where it can be sent: a re-injection goes alone.
    let behind = || {
        let checklist = state.map_or_else(|| &view().checklist, |s| &s.checklist);
        behind_note(checklist, &work.branches, root, store.journal().paths().dir(), now, started)
    };
    let record = away.get();
    let show = |t| crate::clock::show(t);
    let window = record.holding(now);
    let mut sweep_warnings: Vec<String> = Vec::new();
    let mut system_message = match record.state.window.as_ref() {
        Some(w) if window.is_some() => Some(crate::away::text::person_line(w, &show)),
        Some(w) => crate::away::text::lapsed_line(w, now, &show),
        None => None,
    };
    let session = req.session_id.as_deref().filter(|s| event::session_id_ok(s));
    let known = session.and_then(|id| state.and_then(|s| s.context.session(id)));
    let receipts = known.map(|k| context::settle(req.host, k, req.transcript_path.as_deref(), context::Moment::Prompt)).unwrap_or_default();
    // The newest plan the session was sent, when the host did not deliver it (now or
    // earlier), goes again once.
    let settled_now: Vec<(&str, Delivery)> = receipts.iter().map(|r| (r.marker.as_str(), context::delivery_of(&r.reason))).collect();
    let lost = known.and_then(|k| k.owed_reinjection(&settled_now)).map(|i| i.marker.clone());
    let shown = window.map(context::away_shown);
    let (text, source, covers_seq, reinjects) = match lost {
        // The plan alone, within its budget: a note beside it could push it past the
        // host's cap, and a re-injection is never sent a third time.
        Some(marker) => {
            let block = window.map(|w| crate::away::text::away_block(w, &show));
            (Some(session_context(req.host, view(), block.as_deref())), "reinject", view().head_seq, Some(marker))
        }
        None => {
            let news = context::away_news(known.and_then(|k| k.away.as_ref()), window, record.state.window.as_ref(), &show);
            // The blocker sweep's ask while it is open, and the return lists once back
            // (docs/sweep.md): each recorded once per working copy.
            let (ask, asked) = record.answer_sweep(root, session, now);
            let (lists, listed) = record.return_lists(place, root, session);
            sweep_warnings.extend(asked.into_iter().chain(listed));
            if let Some((_, person)) = &lists {
                system_message = Some(system_message.map_or_else(|| person.clone(), |m| format!("{m}\n{person}")));
            }
            let parts: Vec<String> =
                [promises::fired_note(&fired), lists.map(|(model, _)| model), news, ask, behind()].into_iter().flatten().collect();
            ((!parts.is_empty()).then(|| parts.join("\n\n")), "user_prompt", None, None)
        }
    };
    let made = text.map(|t| context::inject(&t, context::Injecting { session, source, covers_seq, away: shown, reinjects }, actor));
    let mut events: Vec<NewEvent> = receipts.iter().map(|r| context::receipt_event(r, actor)).collect();
    events.extend(made.as_ref().and_then(|m| m.event.clone()));
    let mut warnings: Vec<String> = record.warning.iter().cloned().chain(fired_warning).chain(sweep_warnings).collect();
    let (warning, dropped) = record_settled(store, Some(scope), read.whole(), events);
    warnings.extend(warning);
    // A re-injection another hook made or made moot meanwhile is not sent.
    let made = made.filter(|m| !m.marker.as_ref().is_some_and(|marker| dropped.contains(marker)));
    let reply = HookReply { context: made.map(|m| m.text), system_message, ..Default::default() };
    Ok(HookOutcome { reply, warning: join(warnings) })
}

/// What the prompt hook reads of the folded state: the prompt's state, whose cost does not
/// grow with the plan, else the whole state (no prompt state to be had for sure), else
/// nothing (the journal cannot be read).
enum PromptRead {
    Prompt(crate::store::PromptState),
    Whole(crate::store::CurrentState),
    Unread,
}

impl PromptRead {
    fn of(store: &Store) -> PromptRead {
        match store.prompt_state() {
            Some(p) => PromptRead::Prompt(p),
            None => store.current_state().map_or(PromptRead::Unread, PromptRead::Whole),
        }
    }

    fn state(&self) -> Option<&crate::fold::FoldedState> {
        match self {
            PromptRead::Prompt(p) => Some(&p.state),
            PromptRead::Whole(c) => Some(&c.state),
            PromptRead::Unread => None,
        }
    }

    /// The whole state, which an append under the lock may decide from.
    fn whole(&self) -> Option<&crate::store::CurrentState> {
        match self {
            PromptRead::Whole(c) => Some(c),
            _ => None,
        }
    }
}

/// Appends receipts and injections under the writer lock (from `read`, the hook's own read
/// of the state, when the journal has not moved since), dropping a receipt whose
/// injection another hook settled in the meantime (each injection is settled once) and a
/// re-injection of a plan no longer owed once (another hook sent it again, or it was found
/// delivered). Returns a warning and the markers of the injections dropped.
fn record_settled(
    store: &Store,
    scope: Option<&Scope>,
    read: Option<&crate::store::CurrentState>,
    events: Vec<NewEvent>,
) -> (Option<String>, Vec<String>) {
    if events.is_empty() {
        return (None, Vec::new());
    }
    let written = store.append_with_read(scope, read, |state| {
        let receipts: Vec<ContextReceipt> = events
            .iter()
            .filter(|e| e.kind != event::CONTEXT_INJECTED)
            .filter_map(|e| serde_json::from_value(e.data.clone()).ok())
            .collect();
        let pending = |r: &ContextReceipt| state.context.session(&r.session).is_some_and(|s| s.pending().any(|i| i.marker == r.marker));
        let settled_now: Vec<(&str, Delivery)> =
            receipts.iter().filter(|r| pending(r)).map(|r| (r.marker.as_str(), context::delivery_of(&r.reason))).collect();
        let mut dropped = Vec::new();
        let mut kept = Vec::new();
        for e in events {
            if e.kind == event::CONTEXT_INJECTED {
                let injected: Option<crate::event::ContextInjected> = serde_json::from_value(e.data.clone()).ok();
                if let Some(i) = injected
                    && let Some(lost) = &i.reinjects
                {
                    let owed =
                        state.context.session(&i.session).and_then(|s| s.owed_reinjection(&settled_now)).is_some_and(|o| &o.marker == lost);
                    if !owed {
                        dropped.push(i.marker);
                        continue;
                    }
                }
                kept.push(e);
            } else if receipt_still_pending(state, &e) {
                kept.push(e);
            }
        }
        (kept, dropped)
    });
    match written {
        Ok(w) => (
            w.after.err().map(|e| format!("the context record is saved but the files derived from the journal were not rewritten: {e}")),
            w.outcome,
        ),
        Err(e) => (Some(format!("the context record was not saved: {e}")), Vec::new()),
    }
}

/// Whether the receipt event `receipt` settles an injection `state` still holds pending:
/// each injection is settled once, whichever hook gets there first.
fn receipt_still_pending(state: &crate::fold::FoldedState, receipt: &NewEvent) -> bool {
    serde_json::from_value::<ContextReceipt>(receipt.data.clone())
        .is_ok_and(|r| state.context.session(&r.session).is_some_and(|s| s.pending().any(|i| i.marker == r.marker)))
}

/// Test seam (test builds only): `ABCD_TEST_CONTEXT_PAD=<n>` pads the session start's
/// context with `n` characters, to push it over the host's cap.
fn padded_for_tests(text: String) -> String {
    #[cfg(feature = "test-support")]
    if let Some(n) = std::env::var("ABCD_TEST_CONTEXT_PAD").ok().and_then(|v| v.parse::<usize>().ok()) {
        return format!("{text}\n{}", "~".repeat(n));
    }
    text
}

fn join(warnings: Vec<String>) -> Option<String> {
    (!warnings.is_empty()).then(|| warnings.join("; "))
}

/// The note that the checklist is behind the session's own work: its own branches read from
/// git alone (no network), so a branch that does not exist is never named. A read git
/// could not finish names nothing.
fn behind_note(
    checklist: &crate::checklist::state::ChecklistState,
    created: &[String],
    root: &Path,
    tier: &Path,
    now: jiff::Timestamp,
    started: std::time::Instant,
) -> Option<String> {
    let own = crate::owed::read_own(&crate::owed::OwnQuery { root, created_here: created, now, started, tier: Some(tier) });
    if own.incomplete {
        return None;
    }
    let refs = crate::owed::behind(&checklist.items, checklist.updated_at, &own.own);
    (!refs.is_empty()).then(|| format!("abcd: {}", crate::verdict::stop::behind_text(&refs)))
}

/// A refused path is shown up to this many characters.
pub const REFUSED_PATH_SHOWN_MAX_CHARS: usize = 1024;

/// The file guard: refuses a tool call that writes any of abcd's own files (the first one
/// found is named), and records the attempt.
fn file_guard(
    place: &Place,
    away: &away::AwayOnce<'_>,
    tool: &str,
    paths: &[String],
    session: Option<&str>,
) -> Result<HookOutcome, HookError> {
    let root = &place.root()?;
    let home = place.home()?;
    let deny = paths.iter().find_map(|path| {
        let target = resolve(root, Path::new(path));
        crate::command::own_file::abcd_own_file(&target, &home).map(|own| {
            // The path is the payload's text: shown only when it carries no secret.
            let shown = crate::secrets::one_line_after_scan(
                &target.display().to_string(),
                crate::secrets::Bound::Chars(REFUSED_PATH_SHOWN_MAX_CHARS),
            )
            .unwrap_or_else(|_| "a path that carries a secret (not shown)".to_string());
            format!("abcd refuses {tool} on {shown} ({}). {}", own.why(), own.instead())
        })
    });
    // Refused whether or not the attempt can be recorded (a failure is one line).
    let warning =
        deny.as_ref().and_then(|_| away.get().record_refusal(RefusalRoute::FileToolRule, RefusedAction::OwnFileWrite, root, session));
    Ok(HookOutcome { reply: HookReply { deny, ..Default::default() }, warning })
}

fn pre_tool_use(
    store: &Store,
    scope: &Scope,
    place: &Place,
    away: &away::AwayOnce<'_>,
    call: &ToolCall,
    event: &dyn Fn(&str, serde_json::Value) -> NewEvent,
    session: Option<&str>,
) -> Result<HookOutcome, HookError> {
    let root = &place.root()?;
    match call {
        ToolCall::WritesFile { tool, path } => file_guard(place, away, tool, std::slice::from_ref(path), session),
        // Each file the patch names is checked as one Write is; the first of abcd's own
        // refuses the whole call.
        ToolCall::WritesFiles { tool, paths } => file_guard(place, away, tool, paths, session),
        ToolCall::WritesUnknown { tool, why, instead } => {
            // A write abcd cannot check may be to its own files: refused, and said how to
            // make it readable (docs/decisions.md, issue 38). Not recorded as an attempt on
            // abcd's files, since none is known to be.
            let deny = format!(
                "abcd refuses {tool}: it cannot read which files this call writes ({why}), so it cannot check that none is abcd's own. {instead}"
            );
            Ok(HookOutcome { reply: HookReply { deny: Some(deny), ..Default::default() }, warning: None })
        }
        ToolCall::Shell { command, writes } => {
            if !writes.is_empty() {
                let guarded = file_guard(place, away, "apply_patch (through the shell)", writes, session)?;
                if guarded.reply.deny.is_some() {
                    return Ok(guarded);
                }
            }
            let home = place.home()?;
            let shell_place = mode_guard::ShellPlace { cwd: root, home_store: &home, var: &|name| std::env::var(name).ok() };
            if let Some(refused) = mode_guard::refusal(command, &shell_place) {
                // Refused before anything of it is recorded: it does not run. The attempt
                // itself is recorded (never its command), and refused whether or not it can be.
                let warning = mode_guard::action_of(&refused)
                    .and_then(|action| away.get().record_refusal(RefusalRoute::ShellRule, action, root, session));
                return Ok(HookOutcome { reply: HookReply { deny: Some(refused.words()), ..Default::default() }, warning });
            }
            let mut warning = None;
            for made in git::branch_creations(command) {
                // A creation of a branch that already exists is not one (it fails, or
                // resets it); a branch name carrying a secret is not recorded.
                if git::branch_exists(root, &made.branch) || crate::secrets::scan(&made.branch).is_some() {
                    continue;
                }
                let data = BranchCreated { branch: made.branch, command: made.form, renamed_from: made.renamed_from };
                if let Some(w) = record(store, scope, event(event::BRANCH_CREATED, json!(data))) {
                    warning = Some(w);
                }
            }
            Ok(HookOutcome { reply: HookReply::default(), warning })
        }
        ToolCall::Question => {
            // While away, every call of the question tool is refused, whatever it asks.
            let now = crate::clock::now().map_err(|e| HookError::Clock(e.to_string()))?;
            let record = away.get();
            let deny = record.holding(now).map(|_| {
                format!("abcd: the person is away, so no question reaches them, whatever it asks. {}", crate::verdict::stop::QUESTION_ROUTE)
            });
            Ok(HookOutcome { reply: HookReply { deny, ..Default::default() }, warning: record.warning.clone() })
        }
        ToolCall::Other { .. } => Ok(HookOutcome { reply: HookReply::default(), warning: None }),
    }
}

#[cfg(test)]
mod fit_tests {
    use super::*;
    use crate::event::context::MARKED_EXTRA_CHARS;

    /// The budget on each host: Claude Code's unchanged; Codex's no more than its byte
    /// budget less the receipt's tokens and the away block's bytes.
    #[test]
    fn the_budget_is_the_hosts() {
        let block = "abcd: away — ✓ until 18:00";
        assert_eq!(budget_for(Host::Claude, Some(block)), start_frame::checklist_budget(Some(block)));
        let cap = crate::host::codex::CONTEXT_BUDGET_BYTES;
        let codex = budget_for(Host::Codex, Some(block));
        assert!(codex <= cap - MARKED_EXTRA_CHARS - block.len() - render::BLOCK_SEP.len(), "{codex}");
        assert!(codex <= start_frame::checklist_budget(Some(block)));
    }

    /// Issue 38: a text over Codex's byte budget is rendered again until it fits, one at the
    /// budget is kept as it is, and Claude Code's text is never touched.
    #[test]
    fn a_text_over_codexs_byte_budget_is_rendered_again_to_fit() {
        let cap = crate::host::codex::CONTEXT_BUDGET_BYTES;
        let ascii = |n: usize| "x".repeat(n);
        let at_edge = ascii(cap - MARKED_EXTRA_CHARS);
        let tried = std::cell::Cell::new(0);
        let rerender = |b: usize| {
            tried.set(tried.get() + 1);
            ascii(b)
        };
        assert_eq!(fit_bytes(Host::Codex, at_edge.clone(), None, at_edge.len(), &rerender), at_edge);
        assert_eq!(tried.get(), 0, "a text at the budget is not rendered again");
        let over = ascii(cap - MARKED_EXTRA_CHARS + 1);
        let fitted = fit_bytes(Host::Codex, over.clone(), None, over.len(), &rerender);
        assert_eq!((fitted.len(), tried.get()), (cap - MARKED_EXTRA_CHARS, 1), "one byte over: one byte less");
        // Three bytes a character: rendered again until the bytes fit.
        let wide = |b: usize| "界".repeat(b);
        let budget = budget_for(Host::Codex, None);
        let fitted = fit_bytes(Host::Codex, wide(budget), None, budget, &wide);
        assert!(fitted.len() + MARKED_EXTRA_CHARS <= cap, "{}", fitted.len());
        assert_eq!(fit_bytes(Host::Claude, wide(budget), None, budget, &wide), wide(budget), "Claude Code's cap counts characters");
    }
}
