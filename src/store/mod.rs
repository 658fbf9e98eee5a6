//! The write path and the read path over one journal: a command appends events, the
//! store folds them and rewrites the projections; a reader gets the folded state from a
//! projection or checkpoint that still matches the journal, folding only what follows.
//! Data flows one way: command → journal append → fold → projection write.

pub mod checkpoint;
pub mod context;
pub mod projection;
pub mod reader;

use std::path::PathBuf;

use crate::event::{JournalMoved, Scope};
use crate::fold::{self, FoldNote, FoldedState};
use crate::journal::anchor::Holds;
use crate::journal::append::{AppendNotes, Appended, Genesis, Journal, JournalError, read_genesis};
use crate::journal::format::NewEvent;
use crate::journal::proof;
use crate::journal::scan::{self, Corruption, Head, ScanError, StartPoint, Tail, Verdict};
use crate::journal::scope::{self, ScopeFinding};
use crate::journal::storage::StorageFile;
use crate::journal::verify::open_trusted;
use checkpoint::{CHECKPOINT_EVERY_EVENTS, CHECKPOINT_FORMAT, Checkpoint};

/// What `Store::append_with` reports: the events appended (none when the decision was
/// to append nothing), the decision's outcome, and the state after the append, or why
/// projecting it failed (the events are durable either way).
pub struct Written<T> {
    pub appended: Vec<Appended>,
    pub outcome: T,
    pub after: Result<CurrentState, JournalError>,
}

/// Where the folded state came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateBase {
    /// The projection on disk named the journal's head: nothing was folded.
    ProjectionCurrent,
    /// Folded forward from a projection that was behind.
    Projection {
        seq: u64,
    },
    Checkpoint {
        seq: u64,
    },
    Genesis,
    /// The state an append decided from, with the lines it wrote folded on.
    JustAppended,
}

/// The folded state of a journal and how much of it could be trusted.
#[derive(Clone, Debug)]
pub struct CurrentState {
    pub state: FoldedState,
    pub head: Head,
    pub journal_id: String,
    pub base: StateBase,
    /// Set when the journal is corrupt: the state is the fold of the valid prefix, and of
    /// every later line the rule of proof keeps when `provable` is set.
    pub degraded: Option<Corruption>,
    /// For a corrupt journal read by a reader: what the rule of proof found past the
    /// corruption (journal-format §10), folded without writing.
    pub provable: Option<Provable>,
    /// Notes from folding (unknown kinds, skipped events).
    pub notes: Vec<FoldNote>,
}

/// What a reader folded of a damaged journal past its valid prefix, by the plan repair
/// would write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provable {
    /// Lines folded past the valid prefix.
    pub lines_past_damage: u64,
    /// Seqs no provable line holds, as inclusive ranges.
    pub lost: Vec<(u64, u64)>,
}

/// The folded state as the prompt hook reads it: every part of it but the checklist's
/// items, of which only those the hook reads ([`projection::prompt_reads`]). A type of its
/// own, so it is never taken for the whole state (an append deciding from it would write
/// projections without the plan).
#[derive(Clone, Debug)]
pub struct PromptState {
    pub state: FoldedState,
    pub head: Head,
    /// The checklist's part of the owed set, summed up from every item at the plan's last
    /// write (the stop reads it when its clock falls in the span it holds for).
    pub owed: fold::owed::ChecklistOwed,
    /// The journal the state is of.
    pub journal_id: String,
    /// The seq of the line the file names: the projections written with it show that line.
    pub projections_at: u64,
}

pub struct Store {
    journal: Journal,
    /// The `checklist.json` bytes this store last wrote, with the head they show:
    /// `checklist.last-good.json` is the same file, so a checklist write renders it once.
    last_view: std::sync::Mutex<Option<(Head, Vec<u8>)>>,
}

/// In a working copy journal, events that cannot change the checklist view (a session
/// start, a compaction, a judged stop, a branch, the ledger's) leave `state.json` and
/// `checklist.json` behind by at most [`projection_lag_bound`] events, never more than this:
/// a hook then pays for its durable line only, not for two files renamed over (milliseconds
/// each on a slow disk). A checklist event rewrites `checklist.json` (the view shows every
/// checklist event at once) and leaves `state.json` behind in the same way. Readers fold the
/// tail forward (`state.json`), or check it holds no checklist event (`checklist.json`), up to
/// this many lines; the next append past the bound rewrites both (one appended behind the
/// store's back is caught by the readers' check, not here). The bound is checked against the
/// file the appender knows of, so `state.json` can trail by up to twice this: a checklist
/// write checks it against `state.json`, a hook's append against `checklist.json`, which may
/// be newer.
pub const PROJECTION_LAG_MAX: u64 = 64;

/// The fewest events the projections may trail by, whatever their size: up to this lag an
/// appender does not look at `state.json`'s size.
pub const PROJECTION_LAG_MIN: u64 = 16;

/// `state.json`'s bytes per squared event of lag ([`projection_lag_bound`]): chosen from a
/// reader's cost per trailing line and a refresh's cost by size, as measured
/// (docs/decisions.md, "The projections' lag bound"), so the bound stays near the best one
/// at 20 items and at 2,000.
pub const STATE_BYTES_PER_LAG_SQUARED: u64 = 256;

/// How many events a working copy's projections may trail by when `state.json` holds
/// `state_bytes`. Each hook that reads folds every trailing line (a few microseconds each);
/// the append past the bound rewrites the projections, a cost that grows with their size.
/// Over one cycle of `b` appends that is `refresh + line * b^2 / 2`, least per append at
/// `b = sqrt(2 * refresh / line)`: so the bound grows as the square root of the size, from
/// [`PROJECTION_LAG_MIN`] (a small plan, whose refresh is cheap) to [`PROJECTION_LAG_MAX`]
/// (a large one, whose refresh costs milliseconds).
pub fn projection_lag_bound(state_bytes: u64) -> u64 {
    (state_bytes / STATE_BYTES_PER_LAG_SQUARED).isqrt().clamp(PROJECTION_LAG_MIN, PROJECTION_LAG_MAX)
}

/// Whether the append that wrote `appended` (never empty) began the journal or crossed a
/// multiple of [`CHECKPOINT_EVERY_EVENTS`]: a checkpoint is due.
fn checkpoint_due(appended: &[Appended]) -> bool {
    assert!(!appended.is_empty(), "an append writes at least one line");
    let (first, last) = (appended[0].seq, appended[appended.len() - 1].seq);
    first == 0 || (first - 1) / CHECKPOINT_EVERY_EVENTS != last / CHECKPOINT_EVERY_EVENTS
}

/// The seq the projection on disk names, as the read that produced `base` found it;
/// `head_seq` is the head when the base was the current projection.
fn projection_seq(base: &StateBase, head_seq: Option<u64>) -> Option<u64> {
    match base {
        StateBase::ProjectionCurrent => head_seq,
        StateBase::Projection { seq } => Some(*seq),
        _ => None,
    }
}

impl Store {
    pub fn new(journal: Journal) -> Store {
        Store { journal, last_view: std::sync::Mutex::new(None) }
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    fn projection_path(&self) -> PathBuf {
        self.journal.paths().dir().join(projection::STATE_FILE)
    }

    /// Every path [`Store::current_state`] may read to answer, besides the writer's lock:
    /// the journal, its path record, the anchor of journal `journal_id`, `state.json` and the
    /// checkpoints folder (whose entries come and go with its change time). A cache of that
    /// answer (`command::hook::away_kept`) is keyed by their identities, so a file the read
    /// comes to depend on belongs here; `read_set_covers_every_path_the_read_touches` fails
    /// until it is. `None` without anchors or for an id no file name may hold.
    pub fn read_set(&self, journal_id: &str) -> Option<[PathBuf; 5]> {
        let anchors = self.journal.anchors()?;
        let paths = self.journal.paths();
        Some([
            paths.journal.clone(),
            anchors.path_record_file(&paths.journal),
            anchors.record_file(journal_id)?,
            self.projection_path(),
            paths.checkpoints.clone(),
        ])
    }

    /// Whether this working copy's projections may trail the journal by `lag` events
    /// ([`projection_lag_bound`]): past [`PROJECTION_LAG_MIN`], by `state.json`'s size, one
    /// `stat`. A `state.json` no reader would take by its facts (not this user's regular
    /// file, or past the projections' read cap) is refreshed, as is one that cannot be sized.
    fn may_trail_by(&self, lag: u64) -> bool {
        if lag <= PROJECTION_LAG_MIN {
            return true;
        }
        if lag > PROJECTION_LAG_MAX {
            return false;
        }
        match self.journal.storage().facts(&self.projection_path()) {
            Ok(Some(facts)) if projection::sealed_file_taken(&facts) => lag <= projection_lag_bound(facts.len),
            _ => false,
        }
    }

    /// Whether an append of events the checklist view does not show may leave the
    /// projections as they are: a working copy journal the append did not create, whose
    /// projections name `projections_at`, before the last line written and within
    /// [`Store::may_trail_by`] of it, and no checkpoint due.
    fn leaves_projections_behind(
        &self,
        working_copy: bool,
        notes: &AppendNotes,
        projections_at: Option<u64>,
        appended: &[Appended],
    ) -> bool {
        let last = appended[appended.len() - 1].seq;
        working_copy
            && !notes.created
            && !checkpoint_due(appended)
            && projections_at.is_some_and(|seq| seq < last && self.may_trail_by(last - seq))
    }

    /// Appends a batch durably, then brings the projections and checkpoints up to date.
    /// The events are acknowledged once the journal append returns; a failure while
    /// projecting is returned separately, since projections are caches.
    pub fn append(
        &self,
        events: &[NewEvent],
        create: Option<&Scope>,
    ) -> Result<(Vec<Appended>, AppendNotes, Option<JournalError>), JournalError> {
        self.settle_scope()?;
        let (appended, notes) = self.journal.append_batch(events, create)?;
        let project_error = self.refresh_after(events, &appended).err();
        Ok((appended, notes, project_error))
    }

    /// Appends events none of which can change the checklist view, to a working copy
    /// journal whose projections name `projections_at` (as a view just read found them):
    /// when they may stay behind ([`Store::may_trail_by`]) and no checkpoint is due, only
    /// the journal is touched and no state is read. Otherwise as [`Store::append`].
    pub fn append_unseen(
        &self,
        events: &[NewEvent],
        scope: &Scope,
        projections_at: Option<u64>,
    ) -> Result<(Vec<Appended>, AppendNotes, Option<JournalError>), JournalError> {
        assert!(events.iter().all(|e| !projection::changes_checklist_view(&e.kind)), "only events the checklist view does not show");
        self.settle_scope()?;
        let (appended, notes) = self.journal.append_batch(events, Some(scope))?;
        if self.leaves_projections_behind(matches!(scope, Scope::WorkingCopy { .. }), &notes, projections_at, &appended) {
            return Ok((appended, notes, None));
        }
        let project_error = self.refresh_after(events, &appended).err();
        Ok((appended, notes, project_error))
    }

    fn refresh_after(&self, events: &[NewEvent], appended: &[Appended]) -> Result<CurrentState, JournalError> {
        let current = self.current_state()?;
        let on_disk = projection_seq(&current.base, None);
        self.project(&current, events, appended, on_disk)?;
        Ok(current)
    }

    /// Whether `state.json`, naming `on_disk`, may stay behind `current`'s head: a working
    /// copy's, within [`Store::may_trail_by`].
    fn state_may_lag(&self, current: &CurrentState, on_disk: Option<u64>) -> bool {
        matches!(current.state.journal.scope, Some(Scope::WorkingCopy { .. }))
            && on_disk.is_some_and(|seq| self.may_trail_by(current.head.seq - seq))
    }

    /// Writes the projections for `current` (unless they already show it, or may stay
    /// behind: see [`Store::may_trail_by`]) and a checkpoint when the batch crossed a
    /// multiple of `CHECKPOINT_EVERY_EVENTS`. `on_disk`: the seq `state.json` names.
    fn project(
        &self,
        current: &CurrentState,
        events: &[NewEvent],
        appended: &[Appended],
        on_disk: Option<u64>,
    ) -> Result<(), JournalError> {
        let state_may_lag = self.state_may_lag(current, on_disk);
        let checklist_changed = events.iter().any(|e| projection::changes_checklist_view(&e.kind));
        if current.base != StateBase::ProjectionCurrent {
            match (state_may_lag, checklist_changed) {
                (true, false) => {}
                // The checklist view must show every checklist event at once; the state
                // behind it may trail like after any other event (one rename, not two).
                (true, true) => self.write_view(current)?,
                (false, _) => self.write_projection(current)?,
            }
        }
        if checkpoint_due(appended) {
            self.write_checkpoint(current)?;
        }
        Ok(())
    }

    /// Rewrites `state.json` and the scope's own view: `checklist.json` beside a working
    /// copy journal, `away.json` beside a repository journal (temp file and rename; not
    /// synced: they are caches a reader rebuilds).
    pub fn write_projection(&self, current: &CurrentState) -> Result<(), JournalError> {
        self.write_files(vec![(projection::STATE_FILE, projection::render_state(&current.state, current.head))])?;
        self.write_view(current)
    }

    /// Rewrites the scope's own view only (`checklist.json` or `away.json`).
    fn write_view(&self, current: &CurrentState) -> Result<(), JournalError> {
        let view = match current.state.journal.scope {
            Some(Scope::Repository { .. }) => {
                Some((projection::AWAY_FILE, projection::AwayFile::from_state(&current.state, current.head).render()))
            }
            Some(Scope::Machine {}) => None,
            Some(Scope::WorkingCopy { .. }) | None => {
                let bytes = projection::ChecklistFile::render_from_state(&current.state, current.head);
                let now = crate::clock::now().unwrap_or_else(|_| crate::clock::wall_now());
                // The prompt's state goes with the view: both show every checklist event
                // at once, so what a reader folds onto it is never a checklist event.
                let prompt = projection::render_prompt_state(&current.state, current.head, now);
                self.write_files(vec![(projection::CHECKLIST_FILE, bytes.clone()), (projection::PROMPT_STATE_FILE, prompt)])?;
                *self.last_view.lock().unwrap_or_else(|p| p.into_inner()) = Some((current.head, bytes));
                // The session-start render, for a hook with no away block (the common case;
                // a hook that frames one renders and writes its own). Its notes are the
                // view's, as `checklist.json` read back gives them.
                let items = &current.state.checklist.items;
                let notes: Vec<String> = projection::checklist_skipped(&current.state).iter().map(ToString::to_string).collect();
                let budget = context::checklist_budget(None);
                let text = crate::checklist::render::render(items, &notes, budget, now);
                return self.write_session_context(current.head, items, budget, now, text);
            }
        };
        self.write_files(view.into_iter().collect())
    }

    /// Writes `session-context.json`: `text`, rendered at `now` for `budget` characters from
    /// `items`, the checklist at `line` (a line the caller read from the journal, synced, or
    /// one a trusted projection names).
    pub fn write_session_context(
        &self,
        line: Head,
        items: &[fold::checklist::Item],
        budget: usize,
        now: jiff::Timestamp,
        text: String,
    ) -> Result<(), JournalError> {
        let file = projection::SessionContextFile::new(line, items, budget, now, text);
        self.write_files(vec![(projection::SESSION_CONTEXT_FILE, file.render())])
    }

    fn write_files(&self, files: Vec<(&str, Vec<u8>)>) -> Result<(), JournalError> {
        let dir = self.journal.paths().dir();
        for (name, bytes) in files {
            let path = dir.join(name);
            crate::journal::storage::write_replacing(&**self.journal.storage(), &path, &bytes).map_err(|source| JournalError::Io {
                what: "writing the projection",
                path,
                source,
            })?;
        }
        Ok(())
    }

    /// Writes `checklist.last-good.json` from a state the fold validated and scanned,
    /// after checking every item once more: nothing unvalidated or unscanned is ever
    /// last-good. Not synced (docs/decisions.md).
    pub fn write_last_good(&self, current: &CurrentState) -> Result<(), JournalError> {
        let path = self.journal.paths().dir().join(projection::LAST_GOOD_FILE);
        for item in &current.state.checklist.items {
            assert!(crate::fold::checklist::check_item(&item.fields).is_ok(), "the fold only keeps validated, scanned items");
        }
        let rendered = self.last_view.lock().unwrap_or_else(|p| p.into_inner()).take().filter(|(head, _)| *head == current.head);
        let bytes = match rendered {
            Some((_, bytes)) => bytes,
            None => projection::ChecklistFile::render_from_state(&current.state, current.head),
        };
        crate::journal::storage::write_replacing(&**self.journal.storage(), &path, &bytes).map_err(|source| JournalError::Io {
            what: "writing",
            path,
            source,
        })
    }

    /// Appends what `decide` makes of the current state, under the writer lock, so the
    /// decision (a fresh id, an item that exists) still holds when the events land.
    /// Returns `decide`'s outcome; when it returns no events, nothing is appended.
    pub fn append_with<T>(
        &self,
        create: Option<&Scope>,
        decide: impl FnOnce(&FoldedState) -> (Vec<NewEvent>, T),
    ) -> Result<Written<T>, JournalError> {
        self.append_with_read(create, None, decide)
    }

    /// [`Store::append_with`], given the state a read without the lock made (`read`): when
    /// the journal's head under the lock is still the line that read ended at, that state
    /// is the fold at the head, and it is not read again (a hook's second read of the
    /// whole plan).
    pub fn append_with_read<T>(
        &self,
        create: Option<&Scope>,
        read: Option<&CurrentState>,
        decide: impl FnOnce(&FoldedState) -> (Vec<NewEvent>, T),
    ) -> Result<Written<T>, JournalError> {
        self.settle_scope()?;
        let lock = self.journal.lock()?;
        let mut notes = AppendNotes::default();
        let (file, head, journal_id) = lock.open_for_append(create, &mut notes)?;
        let before = match read {
            Some(r) if r.head == head && r.journal_id == journal_id && r.degraded.is_none() && r.provable.is_none() => r.clone(),
            _ => self.state_at(file.as_ref(), head, journal_id.clone())?,
        };
        if let Some(c) = before.degraded {
            // Damage the tail window missed is recorded where every later append sees it.
            let _ = lock.mark_damage_found(&journal_id, before.head);
            return Err(JournalError::Corrupt { path: self.journal.paths().journal.clone(), corruption: c });
        }
        let (events, outcome) = decide(&before.state);
        let on_disk = projection_seq(&before.base, Some(head.seq));
        if events.is_empty() {
            return Ok(Written { appended: Vec::new(), outcome, after: Ok(before) });
        }
        let appended = lock.append(file.as_ref(), head, &journal_id, &events)?;
        // Fold just the lines this append wrote onto the state it decided from: the
        // journal is still locked, so nothing else came in between.
        let after = fold_from(file.as_ref(), before.state, StartPoint { after: Some(head) }, before.base, journal_id)
            .map_err(|source| JournalError::Io { what: "reading", path: self.journal.paths().journal.clone(), source });
        drop(lock);
        let after = after.and_then(|mut current| {
            current.base = StateBase::JustAppended;
            self.project(&current, &events, &appended, on_disk)?;
            Ok(current)
        });
        Ok(Written { appended, outcome, after })
    }

    pub fn write_checkpoint(&self, current: &CurrentState) -> Result<PathBuf, JournalError> {
        // Checkpoints come every 1,000 events: a good moment to sweep temp files that
        // killed writers left (a readdir, not worth paying on every append).
        let _ = crate::journal::storage::remove_stale_temp_files(&**self.journal.storage(), self.journal.paths().dir());
        let cp = Checkpoint {
            format: CHECKPOINT_FORMAT.into(),
            journal_id: current.journal_id.clone(),
            seq: current.head.seq,
            hash: current.head.hash,
            line_offset: current.head.offset,
            next_offset: current.head.end,
            state: current.state.clone(),
        };
        let dir = &self.journal.paths().checkpoints;
        checkpoint::write(&**self.journal.storage(), dir, &cp).map_err(|source| JournalError::Io {
            what: "writing a checkpoint in",
            path: dir.clone(),
            source,
        })
    }

    /// The folded state at the journal's head, reading only the tail, the projection or
    /// newest checkpoint, and the events after it.
    pub fn current_state(&self) -> Result<CurrentState, JournalError> {
        let storage = &**self.journal.storage();
        let path = &self.journal.paths().journal;
        let file = match open_trusted(storage, path) {
            Err(missing @ JournalError::Missing { .. }) => {
                self.check_path_record(None, None)?;
                return Err(missing);
            }
            opened => opened?,
        };
        let io_err = |source| JournalError::Io { what: "reading", path: path.clone(), source };
        let genesis = match read_genesis(file.as_ref(), path) {
            Ok(genesis) => genesis,
            Err(e) => {
                self.check_path_record(Some(file.as_ref()), None)?;
                return Err(e);
            }
        };
        self.check_place(Some(file.as_ref()), Some(&genesis))?;
        let mut current = match scan::read_tail(file.as_ref()).map_err(io_err)? {
            Tail::Good { head, .. } => self.state_at(file.as_ref(), head, genesis.journal_id),
            // Corrupt (or emptied under us): fold what verifies from the best base, and
            // let the scan name the damage.
            _ => self.fold_from_best_base(file.as_ref(), genesis.journal_id),
        }?;
        if current.degraded.is_some() {
            // A reader's mark is best effort: the next full read makes it again.
            let _ = self.journal.record_damage_found(&current.journal_id, current.head);
            let state = &mut current.state;
            let provable = self
                .fold_provable(file.as_ref(), current.head, &current.journal_id, |step| {
                    fold::fold_kept(state, step, &mut Vec::new());
                })
                .map_err(io_err)?;
            current.provable = Some(provable);
        }
        Ok(current)
    }

    /// The state as the prompt hook reads it ([`PromptState`]), from `prompt-state.json`
    /// and the events after the line it names. `None` whenever that cannot be had for
    /// sure (no file, a file that fails a check, a line the journal does not hold or the
    /// durability rule does not vouch for, a checklist event past it, a damaged journal):
    /// the caller then reads [`Store::current_state`], which says why.
    pub fn prompt_state(&self) -> Option<PromptState> {
        let storage = &**self.journal.storage();
        let path = &self.journal.paths().journal;
        let file = open_trusted(storage, path).ok()?;
        let genesis = read_genesis(file.as_ref(), path).ok()?;
        self.check_place(Some(file.as_ref()), Some(&genesis)).ok()?;
        let Tail::Good { head, .. } = scan::read_tail(file.as_ref()).ok()? else { return None };
        let dir = self.journal.paths().dir();
        let (state, owed, named) = projection::load_prompt_state(storage, &dir.join(projection::PROMPT_STATE_FILE))?;
        let mut durable = Durable::new(&self.journal, &genesis.journal_id);
        if named == head {
            let journal_id = genesis.journal_id;
            return durable.vouches_for(file.as_ref(), head).ok()?.then_some(PromptState {
                state,
                head,
                owed,
                journal_id,
                projections_at: head.seq,
            });
        }
        if !(scan::line_is_at(file.as_ref(), named).ok()? && durable.vouches_for(file.as_ref(), named).ok()?) {
            return None;
        }
        let checklist_events = |s: &FoldedState| -> u64 {
            s.journal.by_kind.iter().filter(|(kind, _)| projection::changes_checklist_view(kind)).map(|(_, n)| n).sum()
        };
        let before = checklist_events(&state);
        let start = StartPoint { after: Some(named) };
        let folded = fold_from(file.as_ref(), state, start, StateBase::Projection { seq: named.seq }, genesis.journal_id.clone()).ok()?;
        // Items left out of the file cannot take a checklist event: past one, the whole
        // state is read.
        (folded.degraded.is_none() && checklist_events(&folded.state) == before).then_some(PromptState {
            state: folded.state,
            head: folded.head,
            owed,
            journal_id: genesis.journal_id,
            projections_at: named.seq,
        })
    }

    /// Rewrites the working copy's view (`checklist.json`, `prompt-state.json` with its
    /// checklist summary as of now, `session-context.json`) from `current`, a whole read at
    /// its head: for a reader that found the summary no longer holding (a look fell due since
    /// the plan's write). The view is written whole, not `prompt-state.json` alone: appends
    /// measure the view's lag from the line the prompt's state names, which should be the
    /// line `checklist.json` names too (a writer racing this one can still leave them apart;
    /// readers then fold). `state.json` is rewritten as a checklist write would
    /// ([`Store::may_trail_by`]), and then `current` names it as its base. A damaged or
    /// provable-only read writes nothing.
    pub fn refresh_view(&self, current: &mut CurrentState) -> Result<(), JournalError> {
        if current.degraded.is_some() || current.provable.is_some() {
            return Ok(());
        }
        if self.state_may_lag(current, projection_seq(&current.base, Some(current.head.seq))) {
            return self.write_view(current);
        }
        self.write_projection(current)?;
        // The read now stands on the file just written: an append from it does not write it
        // again.
        current.base = StateBase::ProjectionCurrent;
        Ok(())
    }

    /// [`Store::append_with`] for a decision that reads no checklist item and appends no
    /// event the checklist view shows (a hook's receipts and verdict): under the writer lock
    /// it decides from the prompt's state (`read`, while the journal's head is still its
    /// line; else read again), not the whole plan, and leaves the projections behind while
    /// they may trail, as [`Store::append_unseen`] does. With no prompt state to be had
    /// under the lock, it is [`Store::append_with`]. Returns what was appended, the
    /// decision's outcome, and a failure to rewrite the projections.
    pub fn append_with_prompt_state<T>(
        &self,
        create: Option<&Scope>,
        read: Option<&PromptState>,
        decide: impl FnOnce(&FoldedState) -> (Vec<NewEvent>, T),
    ) -> Result<(Vec<Appended>, T, Option<JournalError>), JournalError> {
        self.settle_scope()?;
        let lock = self.journal.lock()?;
        let mut notes = AppendNotes::default();
        let (file, head, journal_id) = lock.open_for_append(create, &mut notes)?;
        let kept = match read {
            Some(r) if r.head == head && r.journal_id == journal_id => Some(r.clone()),
            _ => self.prompt_state().filter(|p| p.head == head && p.journal_id == journal_id),
        };
        let Some(kept) = kept else {
            drop(lock);
            let written = self.append_with(create, decide)?;
            return Ok((written.appended, written.outcome, written.after.err()));
        };
        let (events, outcome) = decide(&kept.state);
        assert!(
            events.iter().all(|e| !projection::changes_checklist_view(&e.kind)),
            "a decision from the prompt's state appends no event the checklist view shows"
        );
        if events.is_empty() {
            return Ok((Vec::new(), outcome, None));
        }
        let appended = lock.append(file.as_ref(), head, &journal_id, &events)?;
        drop(lock);
        let working_copy = matches!(kept.state.journal.scope, Some(Scope::WorkingCopy { .. }));
        if self.leaves_projections_behind(working_copy, &notes, Some(kept.projections_at), &appended) {
            return Ok((appended, outcome, None));
        }
        let project_error = self.refresh_after(&events, &appended).err();
        Ok((appended, outcome, project_error))
    }

    /// Hands `fold` every step past the valid prefix (which ends at the line `prefix`) that
    /// the rule of proof keeps, in chain order, as repair would write them (journal-format
    /// §10), without writing anything: a reader shows every provable item of a damaged
    /// journal, and appends stay refused until repair. When the plan does not keep `prefix`
    /// itself (a fork inside it), nothing past it is handed on: the prefix is what is shown.
    pub(crate) fn fold_provable(
        &self,
        file: &dyn StorageFile,
        prefix: Head,
        journal_id: &str,
        fold: impl FnMut(proof::Folded<'_>),
    ) -> std::io::Result<Provable> {
        let path = &self.journal.paths().journal;
        let collected = match proof::Collected::from_file(file, path) {
            Ok(c) => c,
            Err(proof::CollectError::Journal(JournalError::Io { source, .. })) => return Err(source),
            // Too large to plan in memory, or not readable as a plan: show the prefix only.
            Err(_) => return Ok(Provable { lines_past_damage: 0, lost: vec![] }),
        };
        let anchor = self.journal.anchors().and_then(|a| a.load(&**self.journal.storage(), journal_id).ok().flatten());
        let plan = proof::plan(&collected.candidates, anchor.map(proof::HeadAnchor::from));
        let folded = plan.read_after(&collected.candidates, file, Some((prefix.seq, prefix.hash)), fold)?;
        let Some(folded) = folded else { return Ok(Provable { lines_past_damage: 0, lost: vec![] }) };
        Ok(Provable { lines_past_damage: folded, lost: plan.lost() })
    }

    /// Refuses, as [`JournalError::Replaced`], a journal at a path the home store records
    /// as holding another one (journal-format/SPEC.md §11), so readers say the plan is
    /// degraded instead of showing what is there as all of it. `file`: the journal (`None`:
    /// there is none); `genesis`: its first line, when already read. A path record that
    /// cannot be read counts as absent here: a reader then only says less.
    pub(crate) fn check_path_record(&self, file: Option<&dyn StorageFile>, genesis: Option<&Genesis>) -> Result<(), JournalError> {
        let Some(anchors) = self.journal.anchors() else { return Ok(()) };
        let storage = &**self.journal.storage();
        let path = &self.journal.paths().journal;
        let Ok(Some(recorded)) = anchors.id_at_path(storage, path) else { return Ok(()) };
        let holds = match (file, genesis) {
            (None, _) => Holds::Nothing,
            (Some(_), Some(g)) => Holds::Journal(g.journal_id.clone()),
            (Some(f), None) => match read_genesis(f, path) {
                Ok(g) => Holds::Journal(g.journal_id),
                Err(_) if f.len().is_ok_and(|n| n == 0) => Holds::Nothing,
                Err(_) if matches!(scan::read_tail(f), Ok(Tail::TornGenesis(_))) => Holds::CutGenesis,
                // A first line that does not verify names no id: its damage is the finding.
                Err(_) => return Ok(()),
            },
        };
        if let Some(finding) = anchors.compare_record(storage, recorded, holds) {
            return Err(JournalError::Replaced { action: "read", path: path.clone(), finding: Box::new(finding) });
        }
        Ok(())
    }

    /// [`Store::check_path_record`], then the journal's scope: a journal of another scope is
    /// refused as [`JournalError::Foreign`] (`action`: what was refused); a working copy's
    /// journal moved here is read (its move is recorded by the next append,
    /// [`Store::settle_scope`]).
    pub(crate) fn check_place(&self, file: Option<&dyn StorageFile>, genesis: Option<&Genesis>) -> Result<(), JournalError> {
        let Some(file) = file else { return self.check_path_record(None, None) };
        // The genesis is read once, for both checks.
        let read = match genesis {
            Some(_) => None,
            None => read_genesis(file, &self.journal.paths().journal).ok(),
        };
        let genesis = genesis.or(read.as_ref());
        self.check_path_record(Some(file), genesis)?;
        // No genesis: the path record's check or the reader names that.
        let Some(genesis) = genesis else { return Ok(()) };
        self.refuse_foreign(file, genesis, "read").map(drop)
    }

    /// [`Store::judge_scope`], a journal of another scope refused as
    /// [`JournalError::Foreign`] naming `action`.
    fn refuse_foreign(&self, file: &dyn StorageFile, genesis: &Genesis, action: &'static str) -> Result<ScopeFinding, JournalError> {
        match self.judge_scope(file, genesis)? {
            ScopeFinding::Foreign(finding) => {
                Err(JournalError::Foreign { action, path: self.journal.paths().journal.clone(), finding: Box::new(finding) })
            }
            other => Ok(other),
        }
    }

    /// What the journal at this path is, against the scope this handle expects: `Same`
    /// when it expects none, or when there is no journal (or no genesis) to judge.
    pub fn scope_finding(&self) -> Result<ScopeFinding, JournalError> {
        let path = &self.journal.paths().journal;
        let Ok(file) = open_trusted(&**self.journal.storage(), path) else { return Ok(ScopeFinding::Same) };
        let Ok(genesis) = read_genesis(file.as_ref(), path) else { return Ok(ScopeFinding::Same) };
        self.judge_scope(file.as_ref(), &genesis)
    }

    /// Moves a journal of another scope out of this path, whole, into `quarantine/`, under
    /// the writer lock; returns where it went.
    pub fn set_aside(&self, foreign: &scope::ForeignJournal) -> Result<PathBuf, JournalError> {
        let _lock = self.journal.lock()?;
        scope::set_aside(&**self.journal.storage(), self.journal.paths(), foreign)
    }

    /// Where this handle expects a scope: whether the journal (`genesis`, read from `file`)
    /// is this path's, moved here, or foreign.
    fn judge_scope(&self, file: &dyn StorageFile, genesis: &Genesis) -> Result<ScopeFinding, JournalError> {
        let Some(here) = self.journal.expected_scope() else { return Ok(ScopeFinding::Same) };
        if genesis.scope == *here {
            return Ok(ScopeFinding::Same);
        }
        // A working copy's journal names the root its last `journal.moved` named: folded from
        // the state the projection or a checkpoint holds (paid only by a journal whose
        // genesis names another root).
        let named = match (&genesis.scope, here) {
            (Scope::WorkingCopy { .. }, Scope::WorkingCopy { .. }) => {
                self.fold_from_best_base(file, genesis.journal_id.clone())?.state.journal.scope.unwrap_or_else(|| genesis.scope.clone())
            }
            _ => genesis.scope.clone(),
        };
        let storage = &**self.journal.storage();
        Ok(scope::judge(storage, self.journal.anchors(), self.journal.paths(), &genesis.journal_id, &named, here))
    }

    /// Before an append: refuses a journal of another scope, and records a working copy's
    /// move (`journal.moved`, a batch of its own, so the caller's events keep their places)
    /// before anything else is built on the journal at its new root. A journal that cannot
    /// be opened or has no genesis is left to the append, which names that.
    /// Returns the move it recorded, if any.
    pub fn settle_scope(&self) -> Result<Option<JournalMoved>, JournalError> {
        let Some(here) = self.journal.expected_scope() else { return Ok(None) };
        let path = &self.journal.paths().journal;
        let Ok(file) = open_trusted(&**self.journal.storage(), path) else { return Ok(None) };
        let Ok(genesis) = read_genesis(file.as_ref(), path) else { return Ok(None) };
        // The path record's finding comes first, as for readers: a journal at a path that
        // recorded another one is refused as replaced, foreign or not.
        if let Err(JournalError::Replaced { path, finding, .. }) = self.check_path_record(Some(file.as_ref()), Some(&genesis)) {
            return Err(JournalError::Replaced { action: "append to", path, finding });
        }
        if let ScopeFinding::Moved(moved) = self.refuse_foreign(file.as_ref(), &genesis, "append to")? {
            let event = NewEvent {
                kind: crate::event::JOURNAL_MOVED.into(),
                actor: crate::journal::format::Actor::this_process(None),
                data: serde_json::to_value(&moved).expect("plain data serializes"),
            };
            let appended = self.journal.append_batch(std::slice::from_ref(&event), Some(here))?.0;
            // Projections are caches: the caller's own append refreshes them again.
            let _ = self.refresh_after(std::slice::from_ref(&event), &appended);
            return Ok(Some(moved));
        }
        Ok(None)
    }

    /// Whether a cache naming `named` (a line found in place) can have no hole a crash left
    /// before it: see [`Durable`]. Reads the journal's id from its genesis.
    fn no_hole_before(&self, file: &dyn StorageFile, named: Head) -> std::io::Result<bool> {
        if self.journal.anchors().is_none() {
            return Ok(true);
        }
        let Ok(genesis) = read_genesis(file, &self.journal.paths().journal) else { return Ok(false) };
        Durable::new(&self.journal, &genesis.journal_id).vouches_for(file, named)
    }

    /// The state at `head`: from the projection when it names `head`, else folded (from
    /// that same projection when it is merely behind: it is read and checked once).
    fn state_at(&self, file: &dyn StorageFile, head: Head, journal_id: String) -> Result<CurrentState, JournalError> {
        let storage = &**self.journal.storage();
        let path = &self.journal.paths().journal;
        let io_err = |source| JournalError::Io { what: "reading", path: path.clone(), source };
        let mut durable = Durable::new(&self.journal, &journal_id);
        let projection = projection::load_state_any(storage, &self.projection_path());
        if let Some((state, named)) = projection {
            if named == head && durable.vouches_for(file, head).map_err(io_err)? {
                return Ok(CurrentState {
                    state,
                    head,
                    journal_id,
                    base: StateBase::ProjectionCurrent,
                    degraded: None,
                    provable: None,
                    notes: vec![],
                });
            }
            return self.fold_from_base(file, journal_id, Some((state, named)), durable);
        }
        self.fold_from_base(file, journal_id, None, durable)
    }

    /// Folds from the furthest trusted base: a projection that is merely behind, or a
    /// checkpoint, or genesis.
    fn fold_from_best_base(&self, file: &dyn StorageFile, journal_id: String) -> Result<CurrentState, JournalError> {
        let projection = projection::load_state_any(&**self.journal.storage(), &self.projection_path());
        let durable = Durable::new(&self.journal, &journal_id);
        self.fold_from_base(file, journal_id, projection, durable)
    }

    /// [`Store::fold_from_best_base`] with `state.json` already read (`projection`: its
    /// state and the line it names, when intact).
    fn fold_from_base(
        &self,
        file: &dyn StorageFile,
        journal_id: String,
        projection: Option<(FoldedState, Head)>,
        mut durable: Durable<'_>,
    ) -> Result<CurrentState, JournalError> {
        let storage = &**self.journal.storage();
        let path = &self.journal.paths().journal;
        let io_err = |source| JournalError::Io { what: "reading", path: path.clone(), source };
        let mut best: Option<(FoldedState, Head, StateBase)> = None;
        if let Some((state, head)) = projection
            && scan::line_is_at(file, head).map_err(io_err)?
            && durable.vouches_for(file, head).map_err(io_err)?
        {
            best = Some((state, head, StateBase::Projection { seq: head.seq }));
        }
        // Only a checkpoint past the projection can be a better base: older ones are not
        // even read (a CBOR decode of the whole state each).
        let newer_than = best.as_ref().map(|(_, h, _)| h.seq);
        let dir = &self.journal.paths().checkpoints;
        if let Some(cp) =
            checkpoint::newest_usable_where(storage, dir, &journal_id, file, newer_than, |cp| durable.vouches_for(file, cp.head()))
                .map_err(io_err)?
        {
            let head = cp.head();
            best = Some((cp.state, head, StateBase::Checkpoint { seq: head.seq }));
        }
        let (state, start, base) = match best {
            Some((s, h, b)) => (s, StartPoint { after: Some(h) }, b),
            None => (FoldedState::default(), StartPoint::GENESIS, StateBase::Genesis),
        };
        fold_from(file, state, start, base, journal_id).map_err(io_err)
    }
}

/// Which lines a cache may name and be believed on its one-line check (reliability gap
/// G6). A reader can write a cache from lines it saw in the page cache before they reached
/// the disk (a killed writer's batch, or one whose sync failed); a power cut can then keep
/// the line the cache names and lose an earlier page, and the one-line check alone would
/// believe a state past a hole. The line the head anchor names and every line before it
/// are on the disk: the append that stored the anchor made all of them durable first
/// (`Journal`'s rewrite before its sync). A cache naming a later line is believed only
/// when every line from the anchored one up to it verifies and chains; with no anchor,
/// none is. Loaded once, when a cache first asks.
struct Durable<'j> {
    journal: &'j Journal,
    journal_id: String,
    loaded: Option<DurableUpTo>,
}

enum DurableUpTo {
    /// The handle has no anchor store (tests and tools only): the one-line check alone.
    NotTracked,
    /// The anchored line, found where the anchor says.
    Line(Head),
    /// No anchor, or one whose line the journal does not hold: no line is known durable.
    Nothing,
}

impl<'j> Durable<'j> {
    fn new(journal: &'j Journal, journal_id: &str) -> Durable<'j> {
        Durable { journal, journal_id: journal_id.to_owned(), loaded: None }
    }

    /// Whether no crash can have left a hole before `named`, a line the caller found in
    /// place (`scan::line_is_at`).
    fn vouches_for(&mut self, file: &dyn StorageFile, named: Head) -> std::io::Result<bool> {
        let upto = match self.loaded {
            Some(ref upto) => upto,
            None => {
                let upto = match self.journal.anchors() {
                    None => DurableUpTo::NotTracked,
                    Some(anchors) => match anchors.load(&**self.journal.storage(), &self.journal_id) {
                        Ok(Some(a)) => {
                            let line = Head::from(a);
                            if scan::line_is_at(file, line)? { DurableUpTo::Line(line) } else { DurableUpTo::Nothing }
                        }
                        // An anchor that cannot be read vouches for nothing.
                        Ok(None) | Err(_) => DurableUpTo::Nothing,
                    },
                };
                self.loaded.insert(upto)
            }
        };
        match *upto {
            DurableUpTo::NotTracked => Ok(true),
            DurableUpTo::Nothing => Ok(false),
            DurableUpTo::Line(anchored) if named.seq <= anchored.seq => Ok(true),
            DurableUpTo::Line(anchored) => chain_reaches(file, anchored, named),
        }
    }
}

/// Whether every line after `from` up to `to` verifies and chains, and `to` is where it
/// says.
fn chain_reaches(file: &dyn StorageFile, from: Head, to: Head) -> std::io::Result<bool> {
    struct Reached(bool);
    let report = scan::scan(file, StartPoint { after: Some(from) }, |event, pos| {
        if event.seq == to.seq { Err(Reached(event.hash == to.hash && pos.offset == to.offset)) } else { Ok(()) }
    });
    match report {
        Err(ScanError::Visitor(Reached(same))) => Ok(same),
        // The verified lines end (a hole, a torn tail, the end) before `to`.
        Ok(_) => Ok(false),
        Err(ScanError::Io(e)) => Err(e),
    }
}

/// Folds every verified event after `start` into `state`.
pub fn fold_from(
    file: &dyn StorageFile,
    mut state: FoldedState,
    start: StartPoint,
    base: StateBase,
    journal_id: String,
) -> std::io::Result<CurrentState> {
    let mut notes = Vec::new();
    let report = scan::scan(file, start, |event, _| {
        let note = fold::fold_event(&mut state, event);
        if note != FoldNote::Folded {
            notes.push(note);
        }
        Ok::<(), std::convert::Infallible>(())
    })
    .map_err(|e| match e {
        ScanError::Io(e) => e,
        ScanError::Visitor(never) => match never {},
    })?;
    let head = report.head.expect("a journal with a verified genesis has a head");
    let degraded = match report.verdict {
        Verdict::Corrupt(c) => Some(c),
        _ => None,
    };
    Ok(CurrentState { state, head, journal_id, base, degraded, provable: None, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lag_bound_grows_as_the_square_root_of_the_size_between_its_least_and_most() {
        let bytes_for = |lines: u64| lines * lines * STATE_BYTES_PER_LAG_SQUARED;
        assert_eq!(projection_lag_bound(0), PROJECTION_LAG_MIN, "an empty file: the least");
        // The least holds up to the size whose root is one line more.
        assert_eq!(projection_lag_bound(bytes_for(PROJECTION_LAG_MIN + 1) - 1), PROJECTION_LAG_MIN);
        assert_eq!(projection_lag_bound(bytes_for(PROJECTION_LAG_MIN + 1)), PROJECTION_LAG_MIN + 1);
        // The most is reached at its square, and never passed.
        assert_eq!(projection_lag_bound(bytes_for(PROJECTION_LAG_MAX) - 1), PROJECTION_LAG_MAX - 1);
        assert_eq!(projection_lag_bound(bytes_for(PROJECTION_LAG_MAX)), PROJECTION_LAG_MAX);
        assert_eq!(projection_lag_bound(u64::MAX), PROJECTION_LAG_MAX);
        // The sizes measured (docs/decisions.md): 20 items and 2,000.
        assert_eq!(projection_lag_bound(13_797), PROJECTION_LAG_MIN);
        assert_eq!(projection_lag_bound(1_040_084), 63);
    }
}
