//! The checklist reader used by render, the verbs and the hooks (SPEC §3): the journal's
//! fold, else `checklist.last-good.json` with one line saying why, else only that line.
//! It never returns an item that was not validated and scanned.

use crate::fold::checklist::{CLOSED_ITEMS_KEPT, ChecklistState, Item};
use crate::fold::{self, FoldedState, Skipped};
use crate::journal::append::JournalError;
use crate::journal::scan::{self, Corruption, Head, ScanError, SeenLine, StartPoint, Tail, Verdict};
use crate::journal::storage::StorageFile;
use crate::journal::verify::open_trusted;

use super::projection::{self, ChecklistFile};
use super::{PROJECTION_LAG_MAX, Store};

/// Where the checklist shown came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ViewSource {
    /// `checklist.json` showed the journal's head (it names the head, or a line before it
    /// followed only by events that cannot change it): nothing was folded.
    Projection,
    /// Folded from the journal (the projection was behind, missing or not trusted).
    Journal,
    /// The journal could not be read; last-good was valid.
    LastGood,
    /// Neither could be read: only the note is shown.
    Nothing,
    /// No journal yet.
    Empty,
}

#[derive(Clone, Debug)]
pub struct ChecklistView {
    pub checklist: ChecklistState,
    pub skipped: Vec<Skipped>,
    /// One-line remarks for the reader: a fallback and why, damage found.
    pub notes: Vec<String>,
    pub source: ViewSource,
    pub head_seq: Option<u64>,
    /// The seq `checklist.json` names, when the view was served from it.
    pub projection_seq: Option<u64>,
    /// The journal line whose checklist this is, when it is the head's from the journal
    /// (synced) or from a projection that shows the head: a cache of the view may name it.
    /// `None` for a fallback or a damaged journal.
    pub line: Option<Head>,
}

/// The plan as the status line shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanStatus {
    pub open: projection::OpenCounts,
    /// The plan shown is not all of it: the journal is damaged, replaced or unreadable.
    pub degraded: bool,
}

/// The session-start hook's checklist text from `session-context.json`.
#[derive(Clone, Debug)]
pub struct CachedContext {
    pub text: String,
    /// The seq the file names (the projections' line when the store wrote them together).
    pub journal_seq: u64,
    /// Whether a promise may fire (`SessionContextFile::promises_armed`).
    pub promises_armed: bool,
}

impl Store {
    /// The checklist to show, by SPEC §3's fallback chain.
    pub fn checklist_view(&self) -> ChecklistView {
        match self.checklist_from_journal() {
            Ok(view) => view,
            Err(JournalError::Missing { .. }) => ChecklistView {
                checklist: ChecklistState::default(),
                skipped: vec![],
                notes: vec![],
                source: ViewSource::Empty,
                head_seq: None,
                projection_seq: None,
                line: None,
            },
            // The loss is the reason: said as such, with what to run.
            Err(JournalError::Replaced { finding, .. }) => {
                self.fallback_view(&format!("the plan is degraded: {finding}"), Some(&finding.remedy()))
            }
            // Another scope's journal: none of its items is this path's plan.
            Err(JournalError::Foreign { finding, .. }) => {
                self.fallback_view(&format!("the plan is degraded: {finding}"), Some(&finding.remedy()))
            }
            Err(why) => self.last_good_view(&why.to_string()),
        }
    }

    fn checklist_from_journal(&self) -> Result<ChecklistView, JournalError> {
        let storage = &**self.journal.storage();
        let paths = self.journal.paths();
        let file = match open_trusted(storage, &paths.journal) {
            Err(missing @ JournalError::Missing { .. }) => {
                self.check_path_record(None, None)?;
                return Err(missing);
            }
            opened => opened?,
        };
        self.check_place(Some(file.as_ref()), None)?;
        let io_err = |source| JournalError::Io { what: "reading", path: paths.journal.clone(), source };
        let checklist_path = paths.dir().join(projection::CHECKLIST_FILE);
        let (tail, seen) = scan::read_tail_seen(file.as_ref()).map_err(io_err)?;
        if let Tail::Good { head, .. } = tail
            && let Ok(f) = projection::load_checklist(storage, &checklist_path)
            && shows_a_working_state(&f)
            && still_shows(file.as_ref(), f.journal.into(), head, &seen).map_err(io_err)?
            && self.no_hole_before(file.as_ref(), f.journal.into()).map_err(io_err)?
        {
            // It shows the head's checklist, possibly named by a line before the head.
            return Ok(ChecklistView {
                head_seq: Some(head.seq),
                projection_seq: Some(f.journal.seq),
                line: Some(f.journal.into()),
                ..view_of(&f, ViewSource::Projection, vec![])
            });
        }
        let current = self.current_state()?;
        let mut notes = Vec::new();
        let mut line = None;
        if let Some(c) = &current.degraded {
            notes.push(damage_note(c, current.provable.as_ref()));
        } else {
            // A reader repairs a stale or untrusted projection as it goes; a failure to
            // write it changes nothing for this read.
            // Only from synced lines: a cache naming a line a killed writer left unsynced
            // could outlive that line in a power cut. Readers with the head anchor do not
            // believe such a cache anyway (`Durable`); a handle without one would.
            if file.sync_data().is_ok() {
                let _ = self.write_projection(&current);
                line = Some(current.head);
            }
        }
        let f = ChecklistFile::from_state(&current.state, current.head);
        Ok(ChecklistView { line, ..view_of(&f, ViewSource::Journal, notes) })
    }

    /// The session-start hook's checklist text from `session-context.json`, when the file
    /// shows the journal's head by the rules `checklist.json` is held to (it names the head,
    /// or a line before it followed only by events that cannot change the view, and no
    /// crash can have left a hole before that line), was rendered for `budget` characters
    /// and still holds at `now`, and its text passes the checks again. `None` for anything
    /// else, a damaged or replaced journal included: the hook then renders from the view.
    pub fn cached_session_context(&self, budget: usize, now: jiff::Timestamp) -> Option<CachedContext> {
        let cached = self.session_context_at_head()?;
        cached.holds_for(budget, now).then_some(CachedContext {
            journal_seq: cached.journal.seq,
            promises_armed: cached.promises_armed,
            text: cached.text,
        })
    }

    /// `session-context.json` when it shows the journal's head by the rules `checklist.json`
    /// is held to (see [`Store::cached_session_context`]); `None` for anything else.
    fn session_context_at_head(&self) -> Option<projection::SessionContextFile> {
        let storage = &**self.journal.storage();
        let paths = self.journal.paths();
        let file = open_trusted(storage, &paths.journal).ok()?;
        self.check_place(Some(file.as_ref()), None).ok()?;
        let (tail, seen) = scan::read_tail_seen(file.as_ref()).ok()?;
        let Tail::Good { head, .. } = tail else { return None };
        let cached = projection::load_session_context(storage, &paths.dir().join(projection::SESSION_CONTEXT_FILE)).ok()?;
        let named = Head::from(cached.journal);
        let shows = still_shows(file.as_ref(), named, head, &seen).ok()? && self.no_hole_before(file.as_ref(), named).ok()?;
        shows.then_some(cached)
    }

    /// What the status line shows of the plan: the open counts and whether the plan is
    /// degraded. Read from `session-context.json` when it shows the journal's head by the
    /// rules [`Store::cached_session_context`] holds it to (a few small reads, however long
    /// the plan), else from [`Store::checklist_view`], whose read also rewrites the
    /// projections for the next call.
    pub fn plan_status(&self) -> PlanStatus {
        if let Some(open) = self.cached_open_counts() {
            return PlanStatus { open, degraded: false };
        }
        let view = self.checklist_view();
        // A fallback, or a fold of a damaged journal (no line vouches for it): the plan shown
        // is not all of it.
        let degraded = match view.source {
            ViewSource::LastGood | ViewSource::Nothing => true,
            ViewSource::Journal => view.line.is_none(),
            ViewSource::Projection | ViewSource::Empty => false,
        };
        PlanStatus { open: projection::OpenCounts::of(&view.checklist.items), degraded }
    }

    fn cached_open_counts(&self) -> Option<projection::OpenCounts> {
        self.session_context_at_head()?.open
    }

    /// Every item the checklist has held: the working state's, and each closed item the
    /// fold retired, as it was when it left. Folds the whole journal from genesis without
    /// a cache (an audit's cost): for `abcd checklist --all`, and to tell a retired id from
    /// an unknown one on a refusal. No journal yet: no items.
    pub fn checklist_history(&self) -> Result<ChecklistHistory, JournalError> {
        let storage = &**self.journal.storage();
        let path = &self.journal.paths().journal;
        let file = match open_trusted(storage, path) {
            Err(JournalError::Missing { .. }) => {
                self.check_path_record(None, None)?;
                return Ok(ChecklistHistory::default());
            }
            opened => opened?,
        };
        self.check_place(Some(file.as_ref()), None)?;
        let (mut state, mut retired) = (FoldedState::default(), Vec::new());
        let report = scan::scan(file.as_ref(), StartPoint::GENESIS, |event, _| {
            fold::fold_event_keeping_retired(&mut state, event, &mut retired);
            Ok::<(), std::convert::Infallible>(())
        })
        .map_err(|e| match e {
            ScanError::Io(source) => JournalError::Io { what: "reading", path: path.clone(), source },
            ScanError::Visitor(never) => match never {},
        })?;
        let mut notes = Vec::new();
        if let Verdict::Corrupt(c) = &report.verdict {
            let mut provable = None;
            if let (Some(id), Some(head)) = (state.journal.journal_id.clone(), report.head) {
                // A reader's mark is best effort, as `current_state`'s.
                let _ = self.journal.record_damage_found(&id, head);
                let found = self
                    .fold_provable(file.as_ref(), head, &id, |step| fold::fold_kept(&mut state, step, &mut retired))
                    .map_err(|source| JournalError::Io { what: "reading", path: path.clone(), source })?;
                provable = Some(found);
            }
            notes.push(damage_note(c, provable.as_ref()));
        }
        notes.extend(state.journal.skipped.iter().filter(|s| projection::changes_checklist_view(&s.kind)).map(|s| s.to_string()));
        Ok(ChecklistHistory { working: state.checklist, retired, head_seq: report.head.map(|h| h.seq), notes })
    }

    fn last_good_view(&self, why: &str) -> ChecklistView {
        self.fallback_view(&format!("the journal could not be read ({why})"), None)
    }

    /// Last-good, else nothing, with one note: `lead` says why the journal was not used,
    /// `then` what to run (by default, when nothing can be shown, `abcd journal verify`).
    fn fallback_view(&self, lead: &str, then: Option<&str>) -> ChecklistView {
        let storage = &**self.journal.storage();
        let path = self.journal.paths().dir().join(projection::LAST_GOOD_FILE);
        match projection::load_checklist(storage, &path) {
            Ok(f) => {
                let when = f.updated_at.map(|t| format!(" from {}", t.strftime("%Y-%m-%d %H:%M UTC"))).unwrap_or_default();
                let then = then.map(|t| format!("; {t}")).unwrap_or_default();
                let note = format!("{lead}; showing the last good checklist{when}{then}");
                view_of(&f, ViewSource::LastGood, vec![note])
            }
            Err(lg) => ChecklistView {
                checklist: ChecklistState::default(),
                skipped: vec![],
                notes: vec![format!(
                    "{lead} and the last good checklist is not usable ({lg}); nothing to show; {}",
                    then.unwrap_or("run `abcd journal verify`")
                )],
                source: ViewSource::Nothing,
                head_seq: None,
                projection_seq: None,
                line: None,
            },
        }
    }
}

/// What [`Store::checklist_history`] found.
#[derive(Clone, Debug, Default)]
pub struct ChecklistHistory {
    /// The working state, as the fold at the head holds it.
    pub working: ChecklistState,
    /// The closed items retired from it, in the order they left.
    pub retired: Vec<Item>,
    pub head_seq: Option<u64>,
    /// Damage found, skipped checklist events.
    pub notes: Vec<String>,
}

impl ChecklistHistory {
    /// A retired item by id (the latest to leave, should an id have been given twice).
    pub fn retired(&self, id: &str) -> Option<&Item> {
        self.retired.iter().rev().find(|i| i.fields.id == id)
    }
}

/// The one line a reader of a damaged journal shows: where the damage is, what it shows
/// (every line the chain proves, when the plan found any past the damage), which seqs are
/// lost, and what to run.
fn damage_note(c: &Corruption, provable: Option<&crate::store::Provable>) -> String {
    let shown = match provable {
        Some(p) if p.lines_past_damage > 0 => {
            format!("showing every line the chain proves, {} of them after the damage", p.lines_past_damage)
        }
        _ => "showing what came before it".to_string(),
    };
    let lost = match provable {
        Some(p) if !p.lost.is_empty() => {
            let named: Vec<String> = p.lost.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
            format!("; damaged or missing seqs: {}", named.join(", "))
        }
        _ => String::new(),
    };
    format!("the journal is damaged at seq {} (byte offset {}): {}; {shown}{lost}; run `abcd journal repair`", c.seq, c.offset, c.problem)
}

/// Whether a `checklist.json` naming `named` shows the checklist at `head`: it names the
/// head, or it names an earlier line that is in the journal and is followed by at most
/// [`PROJECTION_LAG_MAX`] verified, chained lines up to the head, none of a kind that
/// changes the view (see `Store::project`, which leaves it behind that way). `seen`: the
/// lines the tail read just verified and chained to `head` (oldest first, ending with it);
/// they are not read or verified again.
fn still_shows(file: &dyn StorageFile, named: Head, head: Head, seen: &[SeenLine]) -> std::io::Result<bool> {
    if named == head {
        return Ok(true);
    }
    if named.seq >= head.seq || head.seq - named.seq > PROJECTION_LAG_MAX {
        return Ok(false);
    }
    // Empty when the tail read fell back to a full scan; then the lines are scanned below.
    let Some(window) = seen.first() else {
        return Ok(false);
    };
    assert!(seen.last().is_some_and(|l| l.line == head), "the tail read's lines end with the head");
    if seen.len() as u64 != head.seq - window.line.seq + 1 {
        // A gap record in the window (seqs a repair lost): counting by seq does not hold
        // there, so the caller folds instead.
        return Ok(false);
    }
    let none_changes = |lines: &[SeenLine]| lines.iter().all(|l| !projection::changes_checklist_view(&l.kind));
    if named.seq >= window.line.seq {
        // In the window: it must be the very line the tail read verified there.
        let i = (named.seq - window.line.seq) as usize;
        return Ok(seen.get(i).is_some_and(|l| l.line == named) && none_changes(&seen[i + 1..]));
    }
    if !scan::line_is_at(file, named)? {
        return Ok(false);
    }
    // Verify from `named` up to the window's first line, which must be the one the tail
    // read chained to the head; the window vouches for the rest.
    enum Stop {
        ReachedWindow,
        NotShown,
    }
    let report = scan::scan(file, StartPoint { after: Some(named) }, |event, pos| {
        let (seq, hash) = event.chain_position();
        if seq == window.line.seq {
            let same = hash == window.line.hash && pos.offset == window.line.offset;
            return Err(if same { Stop::ReachedWindow } else { Stop::NotShown });
        }
        if projection::changes_checklist_view(&event.kind) { Err(Stop::NotShown) } else { Ok(()) }
    });
    match report {
        Err(ScanError::Visitor(Stop::ReachedWindow)) => Ok(none_changes(seen)),
        // A checklist event, another line where the window's first was, or the end of the
        // file before it (the journal changed between the two reads).
        Err(ScanError::Visitor(Stop::NotShown)) | Ok(_) => Ok(false),
        Err(ScanError::Io(e)) => Err(e),
    }
}

/// Whether `f` holds no more closed items than the fold keeps: one written by a build that
/// did not retire closed items holds them all, and is not what this build's fold shows.
/// (Last-good is still shown as the fallback it is.)
fn shows_a_working_state(f: &ChecklistFile) -> bool {
    f.items.iter().filter(|i| !i.fields.state.is_open()).count() <= CLOSED_ITEMS_KEPT
}

fn view_of(f: &ChecklistFile, source: ViewSource, mut notes: Vec<String>) -> ChecklistView {
    notes.extend(f.skipped.iter().map(|s| s.to_string()));
    ChecklistView {
        checklist: f.to_state(),
        skipped: f.skipped.clone(),
        notes,
        source,
        head_seq: Some(f.journal.seq),
        projection_seq: None,
        line: None,
    }
}
