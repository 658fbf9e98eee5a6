//! The journal verbs' work: `abcd journal repair` (quarantine first, continue the chain,
//! then rebuild every cache from the repaired journal) and `abcd journal checkpoint`.
//! Verification is the journal's own (`journal::verify`); the CLI formats its report.

use std::path::PathBuf;

use super::CommandError;
use crate::event::{JournalMoved, Scope};
use crate::journal::repair::{self, RepairError, RepairOutcome};
use crate::journal::scan::Head;
use crate::journal::scope::{ForeignJournal, ScopeFinding};
use crate::journal::storage::{self, RealDisk, Storage, StorageFile};
use crate::journal::{Journal, JournalError};
use crate::places::Place;
use crate::refusal::{Refusal, RefusalKind as K};
use crate::store::Store;

/// A repair's outcome, and how many temp files killed writers had left.
pub struct Repaired {
    pub outcome: RepairOutcome,
    /// A journal of another scope found at the path, moved whole to quarantine first.
    pub set_aside: Option<SetAside>,
    /// A working copy's journal found at the root its checkout was moved to: the move,
    /// recorded after the repair.
    pub moved: Option<JournalMoved>,
    pub temp_files_removed: usize,
    /// Why this machine's mirror was not read for the repair, when it could not be.
    pub mirror_unread: Option<String>,
}

/// A journal of another scope set aside: what it is, and where it went.
pub struct SetAside {
    pub finding: ForeignJournal,
    pub aside: PathBuf,
}

/// Repairs the journal and sweeps the temp files killed writers left; the caches are
/// rebuilt next, by [`rebuild_caches`]. `create`: the scope of a new journal, when the
/// path's journal was lost and repair starts afresh. `cwd`: where the person ran it, to find
/// this machine's own mirror of the journal, whose lines fill every hole they fit
/// (journal-format §10): with a mirror pushed before the damage, the damage costs no line.
///
/// A journal whose genesis names another scope than `store`'s handle expects is never
/// repaired or accepted: it is moved whole to quarantine first, and then the path is
/// repaired as one holding nothing (a new journal on the record when the home store
/// recorded one here, else nothing until the next append creates one). A working copy's
/// journal moved here with its checkout is repaired as usual and its move recorded.
pub fn repair(store: &Store, create: Option<&Scope>, session: Option<String>, place: &Place) -> Result<Repaired, CommandError> {
    let journal = store.journal();
    let set_aside = match store.scope_finding()? {
        ScopeFinding::Foreign(finding) => {
            let aside = store.set_aside(&finding)?;
            Some(SetAside { finding, aside })
        }
        _ => None,
    };
    let note = set_aside.as_ref().map(|s| {
        let name = s.aside.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        format!("before, journal {} of {} was found in its place and set aside to quarantine/{name}", s.finding.journal_id, s.finding.names)
    });
    // This machine's mirror of the journal; none for a journal set aside (its lines are
    // another scope's). The mirror is a backup: a repair without it keeps what the file
    // proves.
    let (lines, mirror_unread) = match set_aside {
        Some(_) => (vec![], None),
        None => match mirror_lines_for_repair(journal, place) {
            Ok(found) => (found.lines, None),
            Err(e) => (vec![], Some(e.to_string())),
        },
    };
    let outcome = match repair::repair_with(journal, create, session, note.as_deref(), &lines) {
        Ok(outcome) => outcome,
        // Set aside where the home store recorded no journal: the path is simply free.
        Err(RepairError::Journal(JournalError::Missing { .. })) if set_aside.is_some() => RepairOutcome::NothingToRepair,
        Err(e) => return Err(e.into()),
    };
    let moved = if set_aside.is_none() { store.settle_scope()? } else { None };
    let temp_files_removed = storage::remove_stale_temp_files(&RealDisk, journal.paths().dir()).unwrap_or(0);
    Ok(Repaired { outcome, set_aside, moved, temp_files_removed, mirror_unread })
}

/// Projections and last-good may name lines a repair moved aside: rebuilds them from the
/// repaired journal so every cache agrees with it again.
pub fn rebuild_caches(store: &Store, repaired: &Repaired) -> Result<(), CommandError> {
    let journal_there = store.journal().paths().journal.exists();
    if repaired.outcome != RepairOutcome::NothingToRepair || (repaired.moved.is_some() && journal_there) {
        let current = store.current_state()?;
        store.write_projection(&current)?;
        store.write_last_good(&current)?;
    }
    Ok(())
}

/// The projections and last-good folded anew from the journal as it is now (after a repair
/// or a restore rewrote it).
pub fn rebuild_projections(journal: Journal) -> Result<(), CommandError> {
    let store = Store::new(journal);
    let current = store.current_state()?;
    store.write_projection(&current)?;
    store.write_last_good(&current)?;
    Ok(())
}

/// A checkpoint written: its file and the seq it holds the state after.
pub struct Checkpointed {
    pub path: PathBuf,
    pub seq: u64,
}

pub fn checkpoint(journal: Journal) -> Result<Checkpointed, CommandError> {
    let store = Store::new(journal);
    let current = store.current_state()?;
    if let Some(c) = &current.degraded {
        return Err(Refusal::new(
            K::JournalDamaged,
            "journal checkpoint",
            format!("the journal is corrupt at seq {}, byte offset {} ({})", c.seq, c.offset, c.problem),
        )
        .instead("run `abcd journal repair` first")
        .into());
    }
    // A checkpoint names only durable lines (a killed writer may have left unsynced ones).
    let path = &store.journal().paths().journal;
    RealDisk.open_read(path).and_then(|f| f.sync_data()).map_err(|e| CommandError::Failed(e.to_string()))?;
    let path = store.write_checkpoint(&current)?;
    Ok(Checkpointed { path, seq: current.head.seq })
}

/// What `abcd journal restore` found at the journal's path before it restored it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Found {
    /// No file.
    Deleted,
    /// A file of no bytes.
    Emptied,
    /// Another journal, or bytes whose first line names no journal.
    Replaced,
    /// The same journal, holding fewer lines than its mirror (an older copy put back).
    CutShort,
}

impl Found {
    pub fn word(self) -> &'static str {
        match self {
            Found::Deleted => "deleted",
            Found::Emptied => "emptied",
            Found::Replaced => "replaced",
            Found::CutShort => "cut short",
        }
    }
}

/// A journal rebuilt from this machine's own mirror.
#[derive(Clone, Debug)]
pub struct Restored {
    pub journal_id: String,
    pub path: PathBuf,
    pub found: Found,
    /// The mirror commit the lines came from.
    pub commit: String,
    /// Lines written back, and the seq of the last of them.
    pub lines: u64,
    pub head_seq: u64,
    /// Where the file that was there went (a synced copy in quarantine), if it held bytes.
    pub quarantine: Option<PathBuf>,
    /// Why the mirror's lines stop before its end (a rule its local ref breaks), if they do.
    pub mirror_stopped: Option<String>,
    /// Seqs the head anchor names acknowledged past the mirror's last line: neither the file
    /// nor the mirror holds them, and the `journal.repaired` at `record_seq` says so.
    pub lost: Option<(u64, u64)>,
    pub record_seq: Option<u64>,
}

/// A restored file is written whole into a temp file beside the journal before it takes the
/// journal's name; its size is held to the journal's own cap.
pub const RESTORE_MAX_BYTES: u64 = crate::journal::append::MAX_JOURNAL_BYTES;

/// `abcd journal restore`: rebuilds the journal at `journal`'s path from this machine's own
/// mirror ref (`refs/abcd/journals/<id>` in `repo`, no network) when the path lost it:
/// deleted, emptied, replaced by another file, or cut short. `journal_id`: the journal to
/// restore, when the person names it; else the one the home store records at the path, else
/// the one mirror of `scope` this machine holds. Nothing is destroyed: a file holding bytes
/// is first copied to `quarantine/replaced-0-<stamp>.bin` (synced). The restored file is
/// written to a temp file, synced, verified clean from genesis, checked against the head
/// anchor, renamed over the path, and the folder synced.
pub fn restore(
    journal: &Journal,
    scope: Option<&Scope>,
    repo: &crate::git::objects::Repo,
    journal_id: Option<&str>,
    session: Option<String>,
) -> Result<Restored, CommandError> {
    use crate::journal::anchor::Anchor;
    use crate::journal::scan::{self, StartPoint, Verdict};

    let lock = journal.lock()?;
    let storage = journal.storage().clone();
    let paths = journal.paths().clone();
    let path = &paths.journal;
    let shown = path.display().to_string();
    let anchors = journal.anchors();

    // What the path holds now.
    let facts = storage.facts(path).map_err(|e| CommandError::Failed(format!("inspecting {shown} failed: {e}")))?;
    let len = facts.as_ref().map_or(0, |f| f.len);
    let report = match &facts {
        Some(_) if len > 0 => Some(crate::journal::verify::verify_chain(&*storage, path, anchors)?),
        _ => None,
    };
    let held_id = report.as_ref().and_then(|r| r.journal_id.clone());

    // Which journal to restore.
    let id = match journal_id {
        Some(id) => {
            if !journal_id_shaped(id) {
                return Err(Refusal::new(
                    K::BadName,
                    "journal restore",
                    format!("{} is not a journal id (32 lowercase hex digits)", crate::secrets::shown_name(id)),
                )
                .instead("`abcd journal verify` prints a journal's id")
                .into());
            }
            id.to_string()
        }
        None => match anchors.map(|a| a.id_at_path(&*storage, path)).transpose().map_err(CommandError::failed)?.flatten() {
            Some(id) => id,
            None => match (&held_id, scope) {
                (Some(id), _) => id.clone(),
                (None, Some(scope)) => only_mirror_of(repo, scope, &shown)?,
                (None, None) => {
                    return Err(Refusal::new(
                        K::NotFound,
                        "journal restore",
                        format!("the home store records no journal at {shown} and the file names none, so which mirror to restore from is unknown"),
                    )
                    .instead("name it with --id <journal-id>")
                    .into());
                }
            },
        },
    };

    // What was found there, and whether it is lost at all.
    let found = match (&facts, &report) {
        (None, _) => Found::Deleted,
        (Some(_), None) => Found::Emptied,
        (Some(_), Some(r)) if r.journal_id.as_deref() != Some(id.as_str()) => Found::Replaced,
        (Some(_), Some(r)) => match &r.verdict {
            Verdict::Corrupt(c) => {
                return Err(Refusal::new(
                    K::JournalDamaged,
                    "journal restore",
                    format!(
                        "{shown} is journal {id} itself, damaged at seq {} (byte {}): {}; damage is repaired in place, not restored over",
                        c.seq, c.offset, c.problem
                    ),
                )
                .instead("run `abcd journal repair`")
                .into());
            }
            Verdict::Clean | Verdict::TornTail(_) => Found::CutShort,
        },
    };
    let file_head = report.as_ref().filter(|_| found == Found::CutShort).and_then(|r| r.head);

    // The mirror's lines, streamed into a temp file beside the journal.
    storage
        .create_dir_all(paths.dir(), 0o700)
        .map_err(|e| CommandError::Failed(format!("creating {} failed: {e}", paths.dir().display())))?;
    let tmp = crate::journal::storage::temp_path(path);
    let out = storage.create_new(&tmp).map_err(|e| CommandError::Failed(format!("creating {} failed: {e}", tmp.display())))?;
    let remove_tmp = |why: CommandError| {
        let _ = storage.remove_cache_file(&tmp);
        why
    };
    let mut at = 0u64;
    let mut write_failed: Option<String> = None;
    let walked = crate::mirror::own::walk_own(repo, &id, &mut |event, line| {
        if at + line.len() as u64 > RESTORE_MAX_BYTES {
            return Err(format!("its lines from seq {} on would take the journal past its {RESTORE_MAX_BYTES}-byte cap", event.seq));
        }
        if let Err(e) = out.write_at(line, at) {
            write_failed = Some(format!("writing {} failed: {e}", tmp.display()));
            return Err("the restored file could not be written".into());
        }
        at += line.len() as u64;
        Ok(())
    })
    .map_err(|e| remove_tmp(CommandError::Failed(format!("reading this machine's mirror of journal {id} failed: {e}"))))?;
    if let Some(why) = write_failed {
        return Err(remove_tmp(CommandError::Failed(why)));
    }
    let Some(commit) = walked.commit.clone() else {
        return Err(remove_tmp(
            Refusal::new(
                K::NoMirror,
                "journal restore",
                format!(
                    "this machine holds no mirror of journal {id} (no {}), so there is nothing to restore {shown} from; a journal is mirrored by `abcd mirror push`",
                    crate::mirror::journal_ref(&id)
                ),
            )
            .instead("to start a new journal there on the record, run `abcd journal repair`")
            .into(),
        ));
    };
    if walked.lines == 0 {
        return Err(remove_tmp(
            Refusal::new(
                K::MirrorMismatch,
                "journal restore",
                format!(
                    "this machine's mirror of journal {id} ({commit}) holds no line that verifies ({}), so {shown} is not restored from it",
                    walked.stopped.as_deref().unwrap_or("it is empty")
                ),
            )
            .instead("`abcd journal repair` starts a new journal there on the record")
            .into(),
        ));
    }
    if let (Some(want), Some(have)) = (scope, &walked.scope)
        && want != have
    {
        return Err(remove_tmp(
            Refusal::new(
                K::MirrorMismatch,
                "journal restore",
                format!("this machine's mirror of journal {id} is the journal of {have}, not of {want}, so it is not restored at {shown}"),
            )
            .instead("name another journal with --id")
            .into(),
        ));
    }
    out.sync_data().map_err(|e| remove_tmp(CommandError::Failed(format!("fdatasync of {} failed: {e}", tmp.display()))))?;
    // The restored file verifies clean from genesis, as a file abcd wrote must.
    let check = scan::scan_all(out.as_ref(), StartPoint::GENESIS).map_err(|e| remove_tmp(CommandError::failed(e)))?;
    let Some(head) = check.head.filter(|_| check.verdict == Verdict::Clean && check.file_len == at) else {
        return Err(remove_tmp(CommandError::Failed(format!(
            "the lines read from the mirror of journal {id} do not verify as a journal once written ({:?}); nothing was changed",
            check.verdict
        ))));
    };

    // A journal cut short is restored only when all it holds is a prefix of the mirror.
    if let Some(fh) = file_head {
        let file = storage.open_read(path).map_err(|e| remove_tmp(CommandError::Failed(format!("opening {shown} failed: {e}"))))?;
        let same = fh.end < at && same_bytes(file.as_ref(), out.as_ref(), fh.end).map_err(|e| remove_tmp(CommandError::failed(e)))?;
        if !same {
            let why = if fh.end >= at {
                format!(
                    "{shown} holds journal {id} through seq {}, every line its mirror holds (through seq {}): nothing is lost to restore. For damage run `abcd journal repair`; to push it, `abcd mirror push`",
                    fh.seq, head.seq
                )
            } else {
                format!(
                    "{shown} holds journal {id} with lines its mirror ({commit}) does not: they differ, so restoring would drop lines. If it was repaired since the last push, `abcd mirror restart` keeps the mirror's lost lines and starts its mirror again"
                )
            };
            return Err(remove_tmp(Refusal::new(K::MirrorMismatch, "journal restore", why).into()));
        }
    }

    // The head anchor: the mirror must hold the line it names, or end before it.
    let anchor = anchors.and_then(|a| a.load(&*storage, &id).ok().flatten());
    let mut lost = None;
    if let Some(a) = anchor {
        if a.seq <= head.seq {
            let agrees = scan::line_is_at(out.as_ref(), Head::from(a)).map_err(|e| remove_tmp(CommandError::failed(e)))?;
            if !agrees {
                return Err(remove_tmp(
                    Refusal::new(
                        K::MirrorMismatch,
                        "journal restore",
                        format!(
                            "the home store's anchor of journal {id} names seq {} (hash {}) at byte {}, and this machine's mirror ({commit}) holds another line there: the mirror is not the history this machine acknowledged, so {shown} is not restored from it",
                            a.seq, a.hash, a.offset
                        ),
                    )
                    .instead("`abcd journal verify` shows the finding")
                    .into(),
                ));
            }
        } else {
            lost = Some((head.seq + 1, a.seq));
        }
    }

    // Nothing is destroyed: what the path holds goes to quarantine first, synced.
    let mut quarantine = None;
    if len > 0 {
        let file = storage.open_read(path).map_err(|e| remove_tmp(CommandError::Failed(format!("opening {shown} failed: {e}"))))?;
        let q = crate::journal::append::quarantine_range(&*storage, file.as_ref(), &paths, "replaced", 0, 0, len)
            .map_err(|e| remove_tmp(e.into()))?;
        quarantine = Some(q.path);
    }
    storage.rename(&tmp, path).map_err(|e| remove_tmp(CommandError::Failed(format!("renaming {} failed: {e}", tmp.display()))))?;
    storage.sync_dir(paths.dir()).map_err(|e| CommandError::Failed(format!("fsync of {} failed: {e}", paths.dir().display())))?;

    // Seqs neither the file nor the mirror holds are named on the record.
    let mut final_head = head;
    let mut record_seq = None;
    if let (Some((from, to)), Some(a)) = (lost, anchor) {
        let file = storage.open_rw(path).map_err(|e| CommandError::Failed(format!("opening {shown} failed: {e}")))?;
        let mut problem = format!(
            "restored from this machine's mirror {commit} through seq {}; the head anchor says seq {} (hash {}) was acknowledged, and neither the file nor the mirror holds seqs {from} to {to}",
            head.seq, a.seq, a.hash
        );
        if let Some(q) = quarantine.as_ref().and_then(|q| q.file_name()) {
            problem += &format!("; what the path held is in quarantine/{}", q.to_string_lossy());
        }
        let data = crate::journal::genesis::JournalRepaired::accepted(at, Some((a.seq, a.hash.to_hex())), problem);
        let event = crate::journal::NewEvent {
            kind: crate::journal::genesis::JOURNAL_REPAIRED.into(),
            actor: crate::journal::Actor::this_process(session),
            data: serde_json::to_value(data).expect("plain data serializes"),
        };
        let appended = lock.append(file.as_ref(), head, &id, &[event])?[0];
        record_seq = Some(appended.seq);
        final_head = Head { seq: appended.seq, hash: appended.hash, offset: appended.offset, end: appended.end };
    }
    if let Some(a) = anchors {
        // Written after the rename was made durable, and synced: an older anchor could name
        // offsets the restored file does not hold.
        let _ = a.store_durably(&*storage, &id, Anchor::from(final_head));
        let _ = a.set_id_at_path(&*storage, path, &id);
    }
    Ok(Restored {
        journal_id: id,
        path: path.clone(),
        found,
        commit,
        lines: walked.lines,
        head_seq: walked.last_line.map_or(head.seq, |(seq, _)| seq),
        quarantine,
        mirror_stopped: walked.stopped,
        lost,
        record_seq,
    })
}

/// True when the first `len` bytes of `a` and `b` are the same.
fn same_bytes(a: &dyn StorageFile, b: &dyn StorageFile, len: u64) -> std::io::Result<bool> {
    const CHUNK: usize = 256 * 1024;
    let (mut x, mut y) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    let mut done = 0u64;
    while done < len {
        let want = ((len - done) as usize).min(CHUNK);
        let (n, m) = (a.read_at(&mut x[..want], done)?, b.read_at(&mut y[..want], done)?);
        if n != want || m != want || x[..want] != y[..want] {
            return Ok(false);
        }
        done += want as u64;
    }
    Ok(true)
}

fn journal_id_shaped(id: &str) -> bool {
    id.len() == crate::journal::genesis::JOURNAL_ID_HEX_DIGITS && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Local mirror refs read to find a journal by scope, at most.
pub const SCOPE_SEARCH_MAX_REFS: usize = 256;

/// The one journal of `scope` this machine holds a mirror of, when the home store records
/// none at the path.
fn only_mirror_of(repo: &crate::git::objects::Repo, scope: &Scope, shown: &str) -> Result<String, CommandError> {
    let refs = repo.refs_under(crate::mirror::JOURNALS_PREFIX).map_err(CommandError::failed)?;
    if refs.len() > SCOPE_SEARCH_MAX_REFS {
        return Err(Refusal::new(
            K::Ambiguous,
            "journal restore",
            format!("the home store records no journal at {shown}, and this machine holds more than {SCOPE_SEARCH_MAX_REFS} journal mirrors to search"),
        )
        .instead("name the journal with --id <journal-id> (`git for-each-ref refs/abcd/journals/` lists them)")
        .into());
    }
    let mut ids: Vec<String> = Vec::new();
    for (r, commit) in refs {
        let Some(id) = r.strip_prefix(crate::mirror::JOURNALS_PREFIX) else { continue };
        if crate::mirror::read_commit(repo, &commit).is_ok_and(|m| m.meta.scope == *scope && m.meta.journal_id == id) {
            ids.push(id.to_string());
        }
    }
    match &ids[..] {
        [one] => Ok(one.clone()),
        [] => Err(Refusal::new(
            K::NoMirror,
            "journal restore",
            format!(
                "the home store records no journal at {shown}, and this machine holds no mirror of the journal of {scope}; there is nothing to restore from (a journal is mirrored by `abcd mirror push`)"
            ),
        )
        .into()),
        many => Err(Refusal::new(
            K::Ambiguous,
            "journal restore",
            format!(
                "the home store records no journal at {shown}, and this machine holds mirrors of {} journals of {scope} ({})",
                many.len(),
                many.join(", ")
            ),
        )
        .instead("name one with --id <journal-id>")
        .into()),
    }
}

/// Lines this machine's own mirror holds of the journal `journal` opens, for a repair to
/// take back what it lost: every line verbatim (its `LF` included), verified and in chain
/// order from the genesis, at most `mirror::own::Limits::DEFAULT`. Empty when there is no
/// mirror: no managed checkout at `cwd` (a journal named by path elsewhere, the machine
/// journal, which is not mirrored), no genesis to name the journal, or no local ref.
///
/// [`repair`] hands them to the salvage. It reads git objects only (no network) and never
/// changes anything.
pub fn mirror_lines_for_repair(journal: &Journal, place: &Place) -> Result<MirrorLines, CommandError> {
    let path = &journal.paths().journal;
    let storage = journal.storage();
    let from_file = crate::journal::verify::open_trusted(&**storage, path)
        .ok()
        .and_then(|f| crate::journal::append::read_genesis(f.as_ref(), path).ok())
        .map(|g| g.journal_id);
    let id = match from_file {
        Some(id) => id,
        None => match journal.anchors().and_then(|a| a.id_at_path(&**storage, path).ok().flatten()) {
            Some(id) => id,
            None => return Ok(MirrorLines::default()),
        },
    };
    // The mirror refs live in the repository's main worktree; no home store is read.
    let Ok(main_root) = place.main_root() else { return Ok(MirrorLines::default()) };
    let repo = crate::git::objects::Repo::at(&main_root);
    let own = crate::mirror::own::own_lines(&repo, &id, crate::mirror::own::Limits::DEFAULT)
        .map_err(|e| CommandError::Failed(format!("reading this machine's mirror of journal {id} failed: {e}")))?;
    Ok(MirrorLines { journal_id: Some(id), commit: own.walked.commit, lines: own.lines, stopped: own.walked.stopped })
}

/// What [`mirror_lines_for_repair`] found.
#[derive(Clone, Debug, Default)]
pub struct MirrorLines {
    pub journal_id: Option<String>,
    /// The local ref's commit; None when this machine holds no mirror of the journal.
    pub commit: Option<String>,
    pub lines: Vec<Vec<u8>>,
    /// Why the lines stop before the mirror's end, if they do.
    pub stopped: Option<String>,
}
