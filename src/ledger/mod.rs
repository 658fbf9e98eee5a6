//! The launch ledger (SPEC §7): runs, their drivers and lanes, every agent launch from
//! intent to exit, collected receipts and work saved aside, as events and their pure fold.
//! A successor reads everything from here: nothing depends on a session's memory.
//! Pure: a launch's I/O is `command::launch`, a process's identity `platform::process`, a
//! lane's git `git::worktree`.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::checklist::item::Rejection;
pub use crate::event::run::{
    Driver, DriverClaimed, ExitStatus, LaneWorktreeCreated, LaneWorktreeRemoved, LaunchExited, LaunchIntended, LaunchStarted,
    ReceiptCollected, RunNamed, RunStarted, WorkSavedAside,
};
use crate::platform::process::ProcessId;

/// A run's or lane's name, at most, in bytes (it becomes part of a git ref name).
pub const NAME_MAX_BYTES: usize = 64;
/// Lanes a run declares, at most.
pub const LANES_MAX: usize = 64;
/// Launches kept per lane (the oldest beyond go; the journal keeps every one).
pub const LAUNCHES_KEPT: usize = 4;
/// Saved-aside records kept per lane.
pub const SAVED_KEPT: usize = 32;
/// A launched command's words, at most.
pub const COMMAND_WORDS_MAX: usize = 256;
/// A launched command's bytes in all, at most (well inside one 64 KiB journal line).
pub const COMMAND_BYTES_MAX: usize = 16 * 1024;
/// A path recorded (receipt, worktree, output file), at most, in bytes.
pub const PATH_MAX_BYTES: usize = 4_096;
/// Files listed in a saved-aside record, at most (the ref holds them all; the list is for
/// people).
pub const SAVED_FILES_LISTED_MAX: usize = 1_000;
/// The listed files' names in all, at most, in bytes (well inside one 64 KiB journal line).
pub const SAVED_FILES_LISTED_BYTES: usize = 32 * 1024;
/// A role's name, at most, in bytes.
pub const ROLE_MAX_BYTES: usize = 64;

/// One launch as the ledger knows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    pub launch: u64,
    pub role: String,
    pub command: Vec<String>,
    pub receipt: String,
    pub worktree: String,
    pub intended_at: Timestamp,
    /// Who recorded the intent and starts the watcher (see `LaunchIntended::launcher`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<ProcessId>,
    pub started: Option<ProcessId>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub exited: Option<ExitStatus>,
    pub collected: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub ref_name: String,
    pub commit: String,
    pub files: Vec<String>,
    pub at: Timestamp,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lane {
    /// The newest [`LAUNCHES_KEPT`], oldest first.
    pub launches: Vec<Launch>,
    /// Launches recorded in all (the next is this + 1).
    pub launches_total: u64,
    pub saved: Vec<Saved>,
    /// The worktree abcd made for this lane and has not removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_worktree: Option<OwnWorktree>,
}

/// A lane worktree abcd made (`lane.worktree_created`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnWorktree {
    pub path: String,
    pub branch: String,
    pub base: String,
}

/// The branch abcd checks out in a lane worktree it makes.
pub fn lane_branch(run: &str, lane: &str) -> String {
    format!("abcd/{run}/{lane}")
}

impl Lane {
    pub fn last(&self) -> Option<&Launch> {
        self.launches.last()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub working_copy: String,
    pub driver: Driver,
    pub started_at: Timestamp,
    pub lanes: BTreeMap<String, Lane>,
    pub halted: bool,
    pub finished: bool,
    /// Takeovers recorded.
    pub takeovers: u64,
}

/// The machine journal's index entry of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexedRun {
    pub working_copy: String,
    pub finished: bool,
}

/// The ledger folded from one journal: full runs from a working copy journal, the index
/// from the machine journal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerState {
    pub runs: BTreeMap<String, Run>,
    pub index: BTreeMap<String, IndexedRun>,
}

/// An exit status in words.
pub fn exit_words(status: ExitStatus) -> String {
    match status {
        ExitStatus::Code { code } => format!("exit code {code}"),
        ExitStatus::Signal { signal } => format!("killed by signal {signal}"),
        ExitStatus::NotStarted => "it never started".to_string(),
        ExitStatus::Unknown => "unknown".to_string(),
    }
}

fn reject(field: &str, reason: impl Into<String>) -> Rejection {
    Rejection { field: Some(field.to_string()), reason: reason.into() }
}

/// A run or lane name: `[A-Za-z0-9._-]{1,64}`, no leading `.` or `-`, no `..`, not ending
/// `.lock` (it becomes part of a git ref, and git refuses those).
pub fn name_ok(name: &str) -> bool {
    (1..=NAME_MAX_BYTES).contains(&name.len())
        && !name.starts_with('.')
        && !name.starts_with('-')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !name.contains("..")
        && !name.ends_with(".lock")
}

pub use crate::secrets::shown_name;

/// `check_name` as a yes or no: what an audit line may show.
pub fn name_passes(name: &str) -> bool {
    check_name("name", name).is_ok()
}

/// A run or lane name: `name_ok`, and no secret (a token can be spelled in the name's
/// alphabet, and a name is journaled, listed by `resume` and made part of a git ref).
pub fn check_name(field: &str, name: &str) -> Result<(), Rejection> {
    if !name_ok(name) {
        return Err(reject(field, "must be 1 to 64 of A-Z a-z 0-9 . _ - (no leading . or -, no .., not ending .lock)"));
    }
    if let Some(kind) = crate::secrets::scan(name) {
        return Err(reject(
            field,
            format!("looks like a secret, {} ({}); choose a name that is not a credential", kind.describe(), kind.name()),
        ));
    }
    Ok(())
}

fn check_path(field: &str, path: &str) -> Result<(), Rejection> {
    if path.is_empty() || path.len() > PATH_MAX_BYTES || path.chars().any(char::is_control) {
        return Err(reject(field, format!("must be a path of 1 to {PATH_MAX_BYTES} bytes without control characters")));
    }
    if let Some(kind) = crate::secrets::scan(path) {
        return Err(reject(field, format!("carries {} ({})", kind.describe(), kind.name())));
    }
    Ok(())
}

/// A command's words: bounded, and no word carries a secret (a launch is recorded, and an
/// audit shows it, so a secret in an argument would be kept forever).
pub fn check_command(command: &[String]) -> Result<(), Rejection> {
    if command.is_empty() || command.len() > COMMAND_WORDS_MAX {
        return Err(reject("command", format!("must have 1 to {COMMAND_WORDS_MAX} words")));
    }
    if command.iter().map(String::len).sum::<usize>() > COMMAND_BYTES_MAX {
        return Err(reject("command", format!("is over {COMMAND_BYTES_MAX} bytes")));
    }
    command_words_recordable(command).map_err(|why| reject("command", why))
}

/// Why a recorded command line's words may not be kept, if they may not: a control
/// character, or a secret in any word (named by kind, never quoted). Shared by `abcd
/// launch` and the loop's agent templates, which both end up in the journal.
pub fn command_words_recordable(words: &[String]) -> Result<(), String> {
    for (i, word) in words.iter().enumerate() {
        if word.chars().any(char::is_control) {
            return Err(format!("word {} holds a control character", i + 1));
        }
        if let Some(kind) = crate::secrets::scan(word) {
            return Err(format!(
                "word {} carries {} ({}); pass secrets through the environment, never the command line",
                i + 1,
                kind.describe(),
                kind.name()
            ));
        }
    }
    Ok(())
}

fn check_driver(d: &Driver) -> Result<(), Rejection> {
    match &d.session {
        Some(s) if !crate::event::session_id_ok(s) => Err(reject("driver.session", "is not a session id ([A-Za-z0-9_-]{1,128})")),
        Some(s) if crate::secrets::scan(s).is_some() => Err(reject("driver.session", "carries what looks like a secret")),
        _ => Ok(()),
    }
}

/// The files a saved-aside record lists: names a record may hold (a plain path, no
/// secret), within [`SAVED_FILES_LISTED_MAX`] and [`SAVED_FILES_LISTED_BYTES`]; the rest
/// are counted, not named (the ref holds every one).
pub fn listable_files(files: &[String]) -> (Vec<String>, u64) {
    let mut listed = Vec::new();
    let mut bytes = 0usize;
    for f in files {
        if listed.len() < SAVED_FILES_LISTED_MAX && bytes + f.len() <= SAVED_FILES_LISTED_BYTES && check_path("files", f).is_ok() {
            bytes += f.len();
            listed.push(f.clone());
        }
    }
    let rest = (files.len() - listed.len()) as u64;
    (listed, rest)
}

fn run_mut<'a>(state: &'a mut LedgerState, run: &str) -> Result<&'a mut Run, Rejection> {
    state.runs.get_mut(run).ok_or_else(|| reject("run", "names no started run"))
}

fn lane_mut<'a>(state: &'a mut LedgerState, run: &str, lane: &str) -> Result<&'a mut Lane, Rejection> {
    run_mut(state, run)?.lanes.get_mut(lane).ok_or_else(|| reject("lane", "is not a lane of the run"))
}

fn launch_mut<'a>(state: &'a mut LedgerState, run: &str, lane: &str, n: u64) -> Result<&'a mut Launch, Rejection> {
    lane_mut(state, run, lane)?
        .launches
        .iter_mut()
        .find(|l| l.launch == n)
        .ok_or_else(|| reject("launch", "names no launch of the lane kept"))
}

/// `run.started`. In the machine journal it is an index entry; in a working copy journal
/// the run itself. A run name is used once per journal.
pub fn fold_run_started(state: &mut LedgerState, r: RunStarted, at: Timestamp, machine: bool) -> Result<(), Rejection> {
    check_name("run", &r.run)?;
    check_path("working_copy", &r.working_copy)?;
    check_driver(&r.driver)?;
    if r.lanes.len() > LANES_MAX {
        return Err(reject("lanes", format!("at most {LANES_MAX}")));
    }
    for lane in &r.lanes {
        check_name("lane", lane)?;
    }
    if machine {
        if state.index.contains_key(&r.run) {
            return Err(reject("run", "is already indexed"));
        }
        state.index.insert(r.run, IndexedRun { working_copy: r.working_copy, finished: false });
        return Ok(());
    }
    if state.runs.contains_key(&r.run) {
        return Err(reject("run", "was already started"));
    }
    let lanes = r.lanes.into_iter().map(|l| (l, Lane::default())).collect();
    state.runs.insert(
        r.run,
        Run { working_copy: r.working_copy, driver: r.driver, started_at: at, lanes, halted: false, finished: false, takeovers: 0 },
    );
    Ok(())
}

pub fn fold_driver_claimed(state: &mut LedgerState, c: DriverClaimed) -> Result<(), Rejection> {
    check_driver(&c.driver)?;
    let run = run_mut(state, &c.run)?;
    if run.driver != c.previous {
        return Err(reject("previous", "is not the run's driver"));
    }
    run.driver = c.driver;
    run.takeovers += 1;
    Ok(())
}

fn check_named(r: &RunNamed) -> Result<(), Rejection> {
    match &r.working_copy {
        Some(w) => check_path("working_copy", w),
        None => Ok(()),
    }
}

pub fn fold_halted(state: &mut LedgerState, r: RunNamed, halted: bool) -> Result<(), Rejection> {
    check_named(&r)?;
    run_mut(state, &r.run)?.halted = halted;
    Ok(())
}

pub fn fold_finished(state: &mut LedgerState, r: RunNamed, machine: bool) -> Result<(), Rejection> {
    check_named(&r)?;
    if machine {
        let entry = state.index.get_mut(&r.run).ok_or_else(|| reject("run", "is not indexed"))?;
        entry.finished = true;
        return Ok(());
    }
    run_mut(state, &r.run)?.finished = true;
    Ok(())
}

pub fn fold_intended(state: &mut LedgerState, l: LaunchIntended, at: Timestamp) -> Result<(), Rejection> {
    check_command(&l.command)?;
    check_path("receipt", &l.receipt)?;
    check_path("worktree", &l.worktree)?;
    if l.role.len() > ROLE_MAX_BYTES {
        return Err(reject("role", format!("must be at most {ROLE_MAX_BYTES} bytes")));
    }
    check_name("role", &l.role)?;
    let lane = lane_mut(state, &l.run, &l.lane)?;
    if l.launch != lane.launches_total + 1 {
        return Err(reject("launch", "is not the lane's next launch number"));
    }
    lane.launches_total = l.launch;
    // drain, not one remove: a state folded when more were kept shrinks on its next launch.
    let excess = (lane.launches.len() + 1).saturating_sub(LAUNCHES_KEPT);
    lane.launches.drain(..excess);
    lane.launches.push(Launch {
        launch: l.launch,
        role: l.role,
        command: l.command,
        receipt: l.receipt,
        worktree: l.worktree,
        intended_at: at,
        launcher: l.launcher,
        started: None,
        stdout: None,
        stderr: None,
        exited: None,
        collected: None,
    });
    Ok(())
}

pub fn fold_started(state: &mut LedgerState, s: LaunchStarted) -> Result<(), Rejection> {
    check_path("stdout", &s.stdout)?;
    check_path("stderr", &s.stderr)?;
    let launch = launch_mut(state, &s.run, &s.lane, s.launch)?;
    if launch.started.is_some() {
        return Err(reject("launch", "was already started"));
    }
    launch.started = Some(s.process);
    launch.stdout = Some(s.stdout);
    launch.stderr = Some(s.stderr);
    Ok(())
}

pub fn fold_exited(state: &mut LedgerState, e: LaunchExited) -> Result<(), Rejection> {
    let launch = launch_mut(state, &e.run, &e.lane, e.launch)?;
    if launch.exited.is_some() {
        return Err(reject("launch", "already exited"));
    }
    launch.exited = Some(e.status);
    Ok(())
}

pub fn fold_collected(state: &mut LedgerState, c: ReceiptCollected) -> Result<(), Rejection> {
    if c.blake3.len() != 64 || !c.blake3.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(reject("blake3", "is not 64 lowercase hex"));
    }
    if c.hashed_bytes.is_some_and(|h| h > c.bytes) {
        return Err(reject("hashed_bytes", "is more than the receipt's bytes"));
    }
    let launch = launch_mut(state, &c.run, &c.lane, c.launch)?;
    if launch.collected.is_some() {
        return Err(reject("launch", "its receipt was already collected"));
    }
    launch.collected = Some(c.blake3);
    Ok(())
}

pub fn fold_saved(state: &mut LedgerState, s: WorkSavedAside, at: Timestamp) -> Result<(), Rejection> {
    check_path("worktree", &s.worktree)?;
    if !s.ref_name.starts_with("refs/abcd/saved/") || s.ref_name.len() > PATH_MAX_BYTES {
        return Err(reject("ref_name", "is not a ref under refs/abcd/saved/"));
    }
    check_path("ref_name", &s.ref_name)?;
    if !(s.commit.len() == 40 || s.commit.len() == 64) || !s.commit.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(reject("commit", "is not a full commit id"));
    }
    if s.files.len() > SAVED_FILES_LISTED_MAX || s.files.iter().map(String::len).sum::<usize>() > SAVED_FILES_LISTED_BYTES {
        return Err(reject("files", format!("lists over {SAVED_FILES_LISTED_MAX} names or {SAVED_FILES_LISTED_BYTES} bytes")));
    }
    for f in &s.files {
        check_path("files", f)?;
    }
    let lane = lane_mut(state, &s.run, &s.lane)?;
    if lane.saved.len() >= SAVED_KEPT {
        lane.saved.remove(0);
    }
    lane.saved.push(Saved { ref_name: s.ref_name, commit: s.commit, files: s.files, at });
    Ok(())
}

fn is_commit_id(id: &str) -> bool {
    (id.len() == 40 || id.len() == 64) && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

pub fn fold_worktree_created(state: &mut LedgerState, c: LaneWorktreeCreated) -> Result<(), Rejection> {
    check_path("worktree", &c.worktree)?;
    if c.branch != lane_branch(&c.run, &c.lane) {
        return Err(reject("branch", "is not abcd/<run>/<lane>"));
    }
    if !is_commit_id(&c.base) {
        return Err(reject("base", "is not a full commit id"));
    }
    // A later record replaces an earlier one: a worktree deleted by hand is made again.
    let lane = lane_mut(state, &c.run, &c.lane)?;
    lane.own_worktree = Some(OwnWorktree { path: c.worktree, branch: c.branch, base: c.base });
    Ok(())
}

pub fn fold_worktree_removed(state: &mut LedgerState, r: LaneWorktreeRemoved) -> Result<(), Rejection> {
    check_path("worktree", &r.worktree)?;
    let lane = lane_mut(state, &r.run, &r.lane)?;
    if lane.own_worktree.as_ref().is_none_or(|w| w.path != r.worktree) {
        return Err(reject("worktree", "is not the worktree abcd made for the lane"));
    }
    lane.own_worktree = None;
    Ok(())
}

impl LedgerState {
    /// Whether everything this ledger could show passes the fold's checks again: for a
    /// ledger read from a cache (`state.json`, a checkpoint), whose digest has no key. The
    /// same checks as `fold_run_started`, `fold_intended`, `fold_started`, `fold_collected`
    /// and `fold_saved` make of the events they fold.
    pub fn shown_text_passes(&self) -> bool {
        let ok = |r: Result<(), Rejection>| r.is_ok();
        let path = |field: &str, p: &Option<String>| p.as_deref().is_none_or(|p| ok(check_path(field, p)));
        let hex = |h: &str, lens: &[usize]| lens.contains(&h.len()) && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let launch_ok = |l: &Launch| {
            ok(check_command(&l.command))
                && ok(check_path("receipt", &l.receipt))
                && ok(check_path("worktree", &l.worktree))
                && !l.role.is_empty()
                && l.role.len() <= ROLE_MAX_BYTES
                && ok(check_name("role", &l.role))
                && path("stdout", &l.stdout)
                && path("stderr", &l.stderr)
                && l.collected.as_deref().is_none_or(|h| hex(h, &[64]))
        };
        let saved_ok = |s: &Saved| {
            s.ref_name.starts_with("refs/abcd/saved/")
                && ok(check_path("ref_name", &s.ref_name))
                && hex(&s.commit, &[40, 64])
                && s.files.len() <= SAVED_FILES_LISTED_MAX
                && s.files.iter().map(String::len).sum::<usize>() <= SAVED_FILES_LISTED_BYTES
                && s.files.iter().all(|f| ok(check_path("files", f)))
        };
        let own_ok = |run: &str, lane: &str, w: &Option<OwnWorktree>| {
            w.as_ref().is_none_or(|w| ok(check_path("worktree", &w.path)) && w.branch == lane_branch(run, lane) && is_commit_id(&w.base))
        };
        self.index.iter().all(|(run, i)| ok(check_name("run", run)) && ok(check_path("working_copy", &i.working_copy)))
            && self.runs.iter().all(|(run, r)| {
                ok(check_name("run", run))
                    && ok(check_path("working_copy", &r.working_copy))
                    && ok(check_driver(&r.driver))
                    && r.lanes.len() <= LANES_MAX
                    && r.lanes.iter().all(|(lane, l)| {
                        ok(check_name("lane", lane))
                            && l.launches.iter().all(launch_ok)
                            && l.saved.iter().all(saved_ok)
                            && own_ok(run, lane, &l.own_worktree)
                    })
            })
    }
}

#[cfg(test)]
mod tests;
