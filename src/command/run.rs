//! The runs this machine drives (SPEC §7): `abcd run start|takeover|halt|lift|finish`,
//! `abcd collect` and `abcd resume`. Each run lives in its working copy's journal; the
//! machine journal indexes them so `abcd resume` finds every one. Every change is decided
//! under the journal's writer lock from the folded ledger.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use super::CommandError;
use super::caller_event as new_event;
use super::lane::{WorkingCopy, open, open_at, save_aside};
use crate::event::{self, Scope};
use crate::git::worktree;
use crate::journal::JournalError;
use crate::journal::storage::RealDisk;
use crate::ledger::{self, Driver, DriverClaimed, LedgerState, ReceiptCollected, Run, RunNamed, RunStarted};
use crate::places::{self, Place, PlaceError};
use crate::platform::process::{self, ProcessId};
use crate::refusal::{Refusal, RefusalKind as K};
use crate::store::Store;

/// A receipt read to hash it, at most, in bytes.
pub const RECEIPT_MAX_BYTES: u64 = 64 << 20;
/// A receipt is hashed in chunks of this many bytes (memory stays flat for a large one).
const RECEIPT_READ_CHUNK: usize = 64 * 1024;

/// An error and every cause under it, joined by ": " (as the CLI prints an error), for a
/// listing that shows why a journal could not be read.
pub(crate) fn with_causes(e: &dyn std::error::Error) -> String {
    let mut words = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        words.push_str(&format!(": {c}"));
        cause = c.source();
    }
    words
}

fn machine() -> Result<(Store, Scope), PlaceError> {
    let (paths, scope) = places::machine_journal()?;
    Ok((Store::new(places::open_scoped_for_verb(RealDisk::shared(), paths, &scope)?), scope))
}

fn driver_from(pid: Option<u32>) -> Result<Driver, CommandError> {
    let process = match pid {
        Some(pid) => process::identify(pid)
            .ok_or_else(|| Refusal::new(K::NotFound, "--driver-pid", format!("no live process has pid {pid}")).nothing_written())?,
        None => process::nearest_non_shell_ancestor().map_err(|e| {
            Refusal::new(K::NotFound, "the run's driver", format!("the driver cannot be found ({e})")).instead("name it with --driver-pid")
        })?,
    };
    Ok(Driver { session: crate::host::session_from_env(), process })
}

/// A driver as the listing and the run verbs name it.
pub fn driver_words(d: &Driver) -> String {
    match process::started_unix_seconds(&d.process).and_then(|s| jiff::Timestamp::from_second(s).ok()) {
        Some(at) => format!("pid {} (started {})", d.process.pid, at.strftime("%Y-%m-%d %H:%M:%S UTC")),
        None => format!("pid {}", d.process.pid),
    }
}

fn no_run_named(what: &str, run: &str) -> Refusal {
    Refusal::new(K::NotFound, what, format!("no run named {} in this working copy", ledger::shown_name(run)))
        .instead("`abcd resume` lists the runs")
}

fn no_lane_named(what: &str, run: &str, lane: &str) -> Refusal {
    Refusal::new(K::NotFound, what, format!("run {run} has no lane {}", ledger::shown_name(lane))).instead("`abcd resume` lists its lanes")
}

/// `abcd run start`: the run as recorded, with its driver.
pub struct Started {
    pub driver: Driver,
    pub working_copy: String,
    pub lanes: Vec<String>,
}

pub fn start(place: &Place, run: &str, lanes: Vec<String>, driver_pid: Option<u32>) -> Result<Started, CommandError> {
    if let Err(r) = ledger::check_name("run", run) {
        return Err(Refusal::new(K::BadName, "run start", format!("the run name {}", r.reason)).nothing_written().into());
    }
    for (i, lane) in lanes.iter().enumerate() {
        if let Err(r) = ledger::check_name("lane", lane) {
            // Named by its place when it looks like a secret: a refusal never echoes one.
            let which = if crate::secrets::scan(lane).is_some() { format!("number {}", i + 1) } else { format!("{lane:?}") };
            return Err(Refusal::new(K::BadName, "run start", format!("lane {which}: the name {}", r.reason.replace('"', "")))
                .nothing_written()
                .into());
        }
    }
    let mut unique = lanes.clone();
    unique.sort();
    unique.dedup();
    if unique.len() != lanes.len() || lanes.len() > ledger::LANES_MAX {
        return Err(Refusal::new(K::BadValue, "run start", format!("name each lane once, at most {}", ledger::LANES_MAX))
            .nothing_written()
            .into());
    }
    let driver = driver_from(driver_pid)?;
    let wc = open(place)?;
    let data = RunStarted { run: run.into(), working_copy: wc.root.display().to_string(), lanes, driver: driver.clone() };
    let written = wc.store.append_with(Some(&wc.scope), |state| match state.ledger.runs.get(run) {
        Some(existing) if existing.finished => (
            vec![],
            Err(Refusal::new(K::RunFinished, "run start", format!("run {run} is finished")).instead("start a run under a new name")),
        ),
        Some(existing) if process::is_alive(&existing.driver.process) => (
            vec![],
            Err(Refusal::new(
                K::RunDriven,
                "run start",
                format!("run {run} is driven by a live process, {}; a second driver is not started", driver_words(&existing.driver)),
            )
            .instead("let that driver go on, or start a run under a new name")),
        ),
        Some(existing) if state.loops.loops.contains_key(run) => (
            vec![],
            Err(Refusal::new(
                K::RunDriven,
                "run start",
                format!("run {run} is a loop's and its driver ({}) is gone", driver_words(&existing.driver)),
            )
            .instead(format!("`abcd loop drive {run}` carries the loop on"))),
        ),
        Some(existing) => (
            vec![],
            Err(Refusal::new(
                K::NameTaken,
                "run start",
                format!("run {run} exists and its driver ({}) is gone", driver_words(&existing.driver)),
            )
            .instead(format!("claim it with `abcd run takeover {run}`"))),
        ),
        None => (vec![new_event(event::RUN_STARTED, json!(data))], Ok(())),
    })?;
    written.outcome?;
    // The index comes second: a run missing from it is still found from its own working
    // copy by `abcd resume` run there.
    let (machine, scope) = machine()?;
    machine.append_with(Some(&scope), |state| {
        if state.ledger.index.contains_key(run) { (vec![], ()) } else { (vec![new_event(event::RUN_STARTED, json!(data))], ()) }
    })?;
    Ok(Started { driver, working_copy: data.working_copy, lanes: data.lanes })
}

/// `abcd run takeover`: the new driver and the gone one it replaced.
pub struct TakenOver {
    pub driver: Driver,
    pub previous: Driver,
}

pub fn takeover(place: &Place, run: &str, driver_pid: Option<u32>) -> Result<TakenOver, CommandError> {
    let driver = driver_from(driver_pid)?;
    let wc = open(place)?;
    let written = wc.store.append_with(Some(&wc.scope), |state| match state.ledger.runs.get(run) {
        None => (vec![], Err(no_run_named("run takeover", run))),
        Some(r) if process::is_alive(&r.driver.process) => (
            vec![],
            Err(Refusal::new(
                K::RunDriven,
                "run takeover",
                format!("run {run}'s driver is alive ({}); a run has one driver", driver_words(&r.driver)),
            )
            .instead(format!("once that driver has ended, run `abcd run takeover {run}` again"))),
        ),
        // A loop's driver is `abcd loop drive`, which claims the run itself: a takeover by
        // any other process would only make `loop drive` refuse while that process lives.
        Some(_) if state.loops.loops.contains_key(run) => (
            vec![],
            Err(Refusal::new(K::RunDriven, "run takeover", format!("run {run} is a loop's"))
                .instead(format!("`abcd loop drive {run}` takes it over and carries the loop on"))),
        ),
        Some(r) => {
            let data = DriverClaimed { run: run.into(), driver: driver.clone(), previous: r.driver.clone() };
            (vec![new_event(event::RUN_DRIVER_CLAIMED, json!(data))], Ok(r.driver.clone()))
        }
    })?;
    let previous = written.outcome?;
    Ok(TakenOver { driver, previous })
}

/// `abcd run halt` (`halted`) or `abcd run lift`: the runs it names, halted or lifted now
/// or already; none when the working copy has no unfinished run.
pub fn halt(place: &Place, run: Option<&str>, halted: bool) -> Result<Vec<String>, CommandError> {
    let wc = open(place)?;
    let kind = if halted { event::RUN_HALTED } else { event::RUN_LIFTED };
    let written = wc.store.append_with(Some(&wc.scope), |state| {
        let names: Vec<String> = match run {
            Some(r) if !state.ledger.runs.contains_key(r) => {
                return (vec![], Err(no_run_named(if halted { "run halt" } else { "run lift" }, r)));
            }
            Some(r) => vec![r.to_string()],
            None => state.ledger.runs.iter().filter(|(_, r)| !r.finished).map(|(n, _)| n.clone()).collect(),
        };
        let events = names
            .iter()
            .filter(|n| state.ledger.runs[*n].halted != halted)
            .map(|n| new_event(kind, json!(RunNamed { run: n.clone(), working_copy: None })))
            .collect();
        (events, Ok(names))
    })?;
    Ok(written.outcome?)
}

/// `abcd run finish`: the run is over in its working copy and in the machine index; then
/// each clean worktree abcd made for its lanes is removed (see [`super::lane::remove_own_worktrees`]).
pub fn finish(place: &Place, run: &str) -> Result<Vec<super::lane::WorktreeEnd>, CommandError> {
    let wc = open(place)?;
    let data = RunNamed { run: run.into(), working_copy: Some(wc.root.display().to_string()) };
    let written = wc.store.append_with(Some(&wc.scope), |state| match state.ledger.runs.get(run) {
        None => (vec![], Err(no_run_named("run finish", run))),
        Some(r) if r.finished => (vec![], Ok(())),
        Some(r) => match unfinished_business(run, r) {
            Err(why) => (vec![], Err(why)),
            Ok(mut events) => {
                events.push(new_event(event::RUN_FINISHED, json!(data)));
                (events, Ok(()))
            }
        },
    })?;
    written.outcome?;
    let (machine, scope) = machine()?;
    machine.append_with(Some(&scope), |state| match state.ledger.index.get(run) {
        Some(entry) if !entry.finished => (vec![new_event(event::RUN_FINISHED, json!(data))], ()),
        _ => (vec![], ()),
    })?;
    super::lane::remove_own_worktrees(super::lane::LaneHome::of(&wc), run)
}

/// Why a run may not finish yet: a lane's agent alive or starting, or a receipt waiting
/// (a finished run leaves `abcd resume`, and with it every way to these). When nothing
/// holds it, each lane's launches to record `not_started` with the finish, so no watcher
/// starts an agent for a finished run.
fn unfinished_business(run: &str, r: &Run) -> Result<Vec<crate::journal::NewEvent>, Refusal> {
    let mut abandoned = vec![];
    for (lane, l) in &r.lanes {
        match super::launch::lane_busy(run, lane, l) {
            Ok(launches) => abandoned.extend(super::launch::not_started_events(run, lane, &launches)),
            Err(why) => {
                return Err(Refusal::new(K::LaneBusy, "run finish", format!("run {run} is not finished, as {}", why.what_holds()))
                    .instead(format!("{}, then run `abcd run finish {run}` again", why.next_step(run, lane))));
            }
        }
    }
    Ok(abandoned)
}

/// A receipt as collected: the digest of its first bytes up to [`RECEIPT_MAX_BYTES`], its
/// size, and how many bytes the digest covers when that is fewer than its size.
struct ReceiptRead {
    blake3: String,
    bytes: u64,
    hashed_bytes: Option<u64>,
}

/// Reads a receipt file for its digest, at most [`RECEIPT_MAX_BYTES`] of it: a larger one is
/// collected all the same, its record saying how much the digest covers, so no lane waits
/// for ever behind a receipt no verb can collect.
fn hash_receipt(path: &Path) -> std::io::Result<ReceiptRead> {
    use std::io::Read;
    let file = crate::platform::fs::open_regular(std::fs::OpenOptions::new().read(true), path, crate::platform::fs::Symlink::Follow)?;
    let size = file.metadata()?.len();
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; RECEIPT_READ_CHUNK];
    let mut hashed = 0u64;
    let mut limited = file.take(RECEIPT_MAX_BYTES);
    loop {
        let n = limited.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        hashed += n as u64;
    }
    // A file that grew while read is over the bound too when one more byte is there.
    let more = hashed == RECEIPT_MAX_BYTES && limited.into_inner().read(&mut [0u8; 1])? > 0;
    let over = more || size > hashed;
    Ok(ReceiptRead {
        blake3: hasher.finalize().to_hex().to_string(),
        bytes: size.max(hashed + u64::from(more)),
        hashed_bytes: over.then_some(hashed),
    })
}

/// `abcd collect`: the receipt of the lane's last launch, hashed and recorded.
pub fn collect_here(place: &Place, run: &str, lane: &str) -> Result<ReceiptCollected, CommandError> {
    let wc = open(place)?;
    Ok(collect(&wc, run, lane)??)
}

/// Collects the last launch's receipt under the lock: it must exist and be uncollected.
/// The inner error is the refusal.
fn collect(wc: &WorkingCopy, run: &str, lane: &str) -> Result<Result<ReceiptCollected, Refusal>, JournalError> {
    let refused = |kind, why: String| Refusal::new(kind, "collect", why);
    let written = wc.store.append_with(Some(&wc.scope), |state| {
        let Some(r) = state.ledger.runs.get(run) else {
            return (vec![], Err(no_run_named("collect", run)));
        };
        let Some(l) = r.lanes.get(lane) else {
            return (vec![], Err(no_lane_named("collect", run, lane)));
        };
        let Some(last) = l.last() else {
            return (
                vec![],
                Err(refused(K::ReceiptState, format!("lane {lane} of run {run} has launched nothing"))
                    .instead(format!("start an agent with `abcd launch --run {run} --lane {lane} …`"))),
            );
        };
        if last.collected.is_some() {
            return (
                vec![],
                Err(refused(K::ReceiptState, format!("the receipt of launch {} of {run}/{lane} was already collected", last.launch))),
            );
        }
        let receipt = Path::new(&last.receipt);
        match super::launch::receipt_at(receipt) {
            super::launch::ReceiptAt::Absent => {
                return (
                    vec![],
                    Err(refused(
                        K::ReceiptState,
                        format!("the receipt of launch {} of {run}/{lane} has not arrived at {}", last.launch, last.receipt),
                    )),
                );
            }
            super::launch::ReceiptAt::NotAFile { what } => {
                return (
                    vec![],
                    Err(refused(
                        K::ReceiptState,
                        format!(
                            "where launch {} of {run}/{lane} writes its receipt, {}, there is {what}, not a receipt",
                            last.launch, last.receipt
                        ),
                    )
                    .instead("move it away, then launch again")),
                );
            }
            super::launch::ReceiptAt::File { .. } => {}
        }
        match hash_receipt(receipt) {
            Err(e) => (
                vec![],
                Err(refused(K::ReceiptState, format!("the receipt {} cannot be read ({e})", last.receipt))
                    .instead("fix what stops it, then collect again")),
            ),
            Ok(read) => {
                let data = ReceiptCollected {
                    run: run.into(),
                    lane: lane.into(),
                    launch: last.launch,
                    blake3: read.blake3,
                    bytes: read.bytes,
                    hashed_bytes: read.hashed_bytes,
                };
                (vec![new_event(event::RECEIPT_COLLECTED, json!(data))], Ok(data))
            }
        }
    })?;
    Ok(written.outcome)
}

pub const RESUME_SCHEMA: &str = "abcd/resume/v1";

/// `resume.json`, and what `abcd resume --json` prints.
#[derive(Serialize)]
pub struct ResumeFile<'a> {
    pub schema: &'static str,
    pub runs: &'a [RunListing],
}

/// One lane in the listing.
#[derive(Debug, Serialize)]
pub struct LaneListing {
    pub lane: String,
    pub stage: String,
    pub launch: Option<u64>,
    pub agent: Option<ProcessId>,
    pub agent_alive: bool,
    pub receipt_waiting: bool,
    pub worktree: Option<String>,
    pub uncommitted: Vec<String>,
    pub behind_default: Option<u64>,
    /// Why git could not read the lane's worktree, when it could not.
    pub worktree_problem: Option<String>,
    /// Why the base drift could not be measured, when it could not (the uncommitted files
    /// were still read).
    pub base_problem: Option<String>,
    pub saved_aside: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct RunListing {
    pub run: String,
    pub working_copy: String,
    pub driver: Option<Driver>,
    pub driver_alive: bool,
    pub halted: bool,
    pub lanes: Vec<LaneListing>,
    /// The phased loop this run drives (`abcd loop`), when it is one.
    #[serde(rename = "loop")]
    pub loop_record: Option<crate::phased::LoopListing>,
    /// Why the run could not be read, when it could not.
    pub problem: Option<String>,
    /// Open pull requests whose head is one of the lanes' branches, from the last forge
    /// listing's cache (docs/promises.md); `resume` itself calls no forge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pull_requests: Vec<WaitingPullRequest>,
    /// When that listing was made; none without a cached listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forge_listed_at: Option<jiff::Timestamp>,
}

/// A pull request waiting on a lane's branch, as the last listing saw it.
#[derive(Debug, Serialize)]
pub struct WaitingPullRequest {
    pub lane: String,
    pub number: u64,
    pub branch: String,
    pub checks: crate::checklist::promise::Checks,
}

/// The newest cached forge listing of the run's working copy and its lanes' worktrees.
fn cached_listing(run: &Run) -> Option<crate::checklist::promise::ForgeFacts> {
    let lanes = run.lanes.values().filter_map(|l| l.last().map(|launch| launch.worktree.clone()));
    std::iter::once(run.working_copy.clone())
        .chain(lanes)
        .filter_map(|root| crate::owed::listing_cache::read(&Path::new(&root).join(places::LOCAL_TIER)))
        .max_by_key(|f| f.listed_at)
}

/// The pull requests of `listing` open on a lane's branch: the branch abcd made for the lane,
/// else the one its worktree has checked out (read from git's files).
fn waiting_pull_requests(run: &Run, listing: &crate::checklist::promise::ForgeFacts) -> Vec<WaitingPullRequest> {
    let mut out = Vec::new();
    for (name, lane) in &run.lanes {
        let branch = match &lane.own_worktree {
            Some(own) => Some(own.branch.clone()),
            None => lane.last().and_then(|l| crate::git::branch::current_branch(Path::new(&l.worktree))),
        };
        let Some(branch) = branch else { continue };
        let open = listing.pull_requests.iter().filter(|p| p.head == branch && p.state == crate::checklist::promise::PrState::Open);
        out.extend(open.map(|p| WaitingPullRequest { lane: name.clone(), number: p.number, branch: branch.clone(), checks: p.checks }));
    }
    out
}

impl RunListing {
    fn unreadable(run: &str, working_copy: &str, why: &str) -> RunListing {
        RunListing {
            run: run.to_string(),
            working_copy: working_copy.to_string(),
            driver: None,
            driver_alive: false,
            halted: false,
            lanes: vec![],
            loop_record: None,
            problem: Some(why.to_string()),
            pull_requests: Vec::new(),
            forge_listed_at: None,
        }
    }
}

/// What git said of each distinct worktree in one listing (lanes that share a worktree
/// share its answer), or why it could not be read.
type WorktreeFacts = std::collections::HashMap<String, Result<worktree::ListingFacts, String>>;

/// The behind counts kept between listings, in the home store: a cache of a pure function
/// (see [`worktree::DriftCounts`]), so losing it, or a racing listing's write winning,
/// costs only a `git rev-list` again.
const DRIFT_CACHE_FILE: &str = "cache/base-drift.json";
/// The cache holds at most this many pairs; past it, it starts over empty.
pub const DRIFT_CACHE_MAX: usize = 4096;
/// One pair's JSON is two 64-hex ids, a space, a count and punctuation: well under this.
const DRIFT_CACHE_ENTRY_BYTES_MAX: u64 = 256;

fn drift_cache_path() -> Option<PathBuf> {
    places::home_dir().ok().map(|h| h.join(DRIFT_CACHE_FILE))
}

fn load_drift_cache(path: &Path) -> worktree::DriftCounts {
    // A cache over its bound (hand-made, say) is ignored rather than trusted in part.
    let bound = (DRIFT_CACHE_MAX as u64 + 1) * DRIFT_CACHE_ENTRY_BYTES_MAX;
    // The home store's rule: a regular file of this user, not a link, not writable by others.
    if !crate::journal::storage::home_file_ok(&RealDisk, path).unwrap_or(false) {
        return worktree::DriftCounts::new();
    }
    // The open refuses a link and a non-regular file again: the name can be replaced
    // between the two.
    match crate::journal::storage::read_small(&RealDisk, path, bound - 1) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
        Err(_) => worktree::DriftCounts::new(),
    }
}

fn save_drift_cache(path: &Path, mut counts: worktree::DriftCounts, measured: worktree::DriftCounts) {
    if measured.is_empty() {
        return;
    }
    if counts.len() + measured.len() > DRIFT_CACHE_MAX {
        counts.clear();
    }
    counts.extend(measured);
    if let (Some(dir), Ok(bytes)) = (path.parent(), serde_json::to_vec(&counts)) {
        // A cache: an unsynced write that is lost only costs a recount.
        use crate::journal::storage::Storage;
        let _ = RealDisk.create_dir_all(dir, 0o700);
        let _ = crate::journal::storage::write_atomic(&RealDisk, path, &bytes, false);
    }
}

/// The previous listing (`resume.json`) is read at most this far to guess the worktrees.
const PREVIOUS_LISTING_MAX: u64 = 16 << 20;
/// At most this many worktrees are read early (the rest after the journals).
const EARLY_WORKTREES_MAX: usize = 256;

/// git's answers for worktrees, read on a thread of their own.
type EarlyReading =
    std::thread::JoinHandle<(Vec<String>, Vec<Result<worktree::ListingFacts, worktree::WorktreeError>>, worktree::DriftCounts)>;

/// Lanes whose agent had started and stopped by the previous listing: (run, lane, launch).
type Settled = std::collections::BTreeSet<(String, String, u64)>;

/// The worktree reads of one listing. git is the slow part of a listing (a child costs
/// milliseconds, the journals' states about one), so some worktrees are read on a thread
/// while the journals are: those of the previous listing whose every lane's agent had
/// already stopped. Their early answer is used only when each lane on them is still at
/// that same launch, so a lane shown as exited or gone always shows work read after its
/// agent stopped; every other worktree is read after the journals and the liveness checks.
struct WorktreeReading {
    cache: Option<PathBuf>,
    known: worktree::DriftCounts,
    early: Option<EarlyReading>,
    settled: Settled,
}

impl WorktreeReading {
    fn start(here: Option<&WorkingCopy>) -> WorktreeReading {
        let cache = drift_cache_path();
        let known = cache.as_deref().map(load_drift_cache).unwrap_or_default();
        let previous = here.map(|h| h.store.journal().paths().dir().join("resume.json"));
        let (guess, settled) = previous.as_deref().map(previous_listing).unwrap_or_default();
        let early = (!guess.is_empty()).then(|| {
            let known = known.clone();
            std::thread::spawn(move || {
                let paths: Vec<PathBuf> = guess.iter().map(PathBuf::from).collect();
                let (facts, measured) = worktree::listing_facts(&paths, &known);
                (guess, facts, measured)
            })
        });
        WorktreeReading { cache, known, early, settled }
    }

    /// Every distinct worktree of the listed lanes: the early answers where they still
    /// hold (see the type), the rest read now, all at once.
    fn finish(self, runs: &[(String, &Run)]) -> WorktreeFacts {
        let mut lanes_on: std::collections::BTreeMap<String, Vec<(String, String, u64)>> = std::collections::BTreeMap::new();
        for (run_name, run) in runs {
            for (lane_name, lane) in &run.lanes {
                if let Some(last) = lane.last() {
                    lanes_on.entry(last.worktree.clone()).or_default().push((run_name.clone(), lane_name.clone(), last.launch));
                }
            }
        }
        let mut facts = WorktreeFacts::new();
        let mut measured = worktree::DriftCounts::new();
        if let Some(Ok((guessed, early, early_measured))) = self.early.map(|t| t.join()) {
            measured.extend(early_measured);
            for (w, f) in guessed.into_iter().zip(early) {
                if lanes_on.get(&w).is_some_and(|lanes| lanes.iter().all(|l| self.settled.contains(l))) {
                    facts.insert(w, f.map_err(|e| e.to_string()));
                }
            }
        }
        let rest: Vec<String> = lanes_on.into_keys().filter(|w| !facts.contains_key(w)).collect();
        let paths: Vec<PathBuf> = rest.iter().map(PathBuf::from).collect();
        let (late, late_measured) = worktree::listing_facts(&paths, &self.known);
        measured.extend(late_measured);
        facts.extend(rest.into_iter().zip(late.into_iter().map(|f| f.map_err(|e| e.to_string()))));
        if let Some(path) = &self.cache {
            save_drift_cache(path, self.known, measured);
        }
        facts
    }
}

/// From a previous listing: the worktrees (existing folders, at most
/// [`EARLY_WORKTREES_MAX`]) whose every lane's agent had started and stopped, and those
/// lanes. Nothing when it cannot be read.
fn previous_listing(path: &Path) -> (Vec<String>, Settled) {
    let bytes = match crate::platform::fs::read_regular(path, PREVIOUS_LISTING_MAX + 1) {
        Ok(b) if b.len() as u64 <= PREVIOUS_LISTING_MAX => b,
        _ => return Default::default(),
    };
    let Ok(listing) = serde_json::from_slice::<serde_json::Value>(&bytes) else { return Default::default() };
    let mut settled = Settled::new();
    let mut unsettled_worktrees = std::collections::BTreeSet::new();
    let mut worktrees = std::collections::BTreeSet::new();
    for run in listing["runs"].as_array().into_iter().flatten() {
        for lane in run["lanes"].as_array().into_iter().flatten() {
            let Some(w) = lane["worktree"].as_str() else { continue };
            worktrees.insert(w.to_string());
            let stopped = lane["agent_alive"] == false && lane["agent"].is_object();
            match (run["run"].as_str(), lane["lane"].as_str(), lane["launch"].as_u64()) {
                (Some(r), Some(l), Some(n)) if stopped => {
                    settled.insert((r.to_string(), l.to_string(), n));
                }
                _ => {
                    unsettled_worktrees.insert(w.to_string());
                }
            }
        }
    }
    let guess =
        worktrees.into_iter().filter(|w| !unsettled_worktrees.contains(w) && Path::new(w).is_dir()).take(EARLY_WORKTREES_MAX).collect();
    (guess, settled)
}

/// A worktree's changes that are the lane's work (not abcd's own files, not its receipts).
fn lane_work_of(lane: &ledger::Lane, worktree: Option<&str>, changed: &[String]) -> Vec<String> {
    let receipts = worktree.map(|w| super::lane::receipts_inside([lane], Path::new(w))).unwrap_or_default();
    super::lane::lane_work(changed, &receipts)
}

fn lane_listing(name: &str, lane: &ledger::Lane, facts: &WorktreeFacts) -> LaneListing {
    let last = lane.last();
    // An exit on record settles it; only an agent without one costs a /proc read.
    let alive = last.is_some_and(|l| l.exited.is_none()) && last.and_then(|l| l.started).is_some_and(|p| process::is_alive(&p));
    // One judgement of the receipt's path with `abcd launch` and `abcd collect`.
    let receipt = last.filter(|l| l.collected.is_none() && !alive).map(|l| super::launch::receipt_at(Path::new(&l.receipt)));
    let receipt_waiting = matches!(receipt, Some(super::launch::ReceiptAt::File { .. }));
    let stage = match last {
        None => "idle: nothing launched".to_string(),
        Some(l) if l.collected.is_some() => format!("launch {}: receipt collected", l.launch),
        Some(l) if l.started.is_none() && l.exited.is_none() && l.launcher.is_some_and(|p| process::is_alive(&p)) => {
            format!("launch {}: starting (its launcher, pid {}, is alive)", l.launch, l.launcher.map_or(0, |p| p.pid))
        }
        Some(l) if l.started.is_none() && l.exited.is_none() => {
            format!(
                "launch {}: intended, never started (the launcher stopped before starting it); check {} before launching again",
                l.launch, l.receipt
            )
        }
        Some(l) if alive => format!("launch {}: agent alive (pid {})", l.launch, l.started.map_or(0, |p| p.pid)),
        Some(l) if receipt_waiting => {
            format!("launch {}: receipt waiting at {}: `abcd collect` it before launching again", l.launch, l.receipt)
        }
        Some(l) if let Some(super::launch::ReceiptAt::NotAFile { what }) = receipt => {
            format!(
                "launch {}: where its receipt belongs, {}, there is {what}, not a receipt: move it away before launching again",
                l.launch, l.receipt
            )
        }
        Some(l) => match l.exited {
            Some(status) => format!("launch {}: exited ({}), no receipt", l.launch, ledger::exit_words(status)),
            None => {
                format!("launch {}: agent lost (pid {} is gone, its exit unrecorded), no receipt", l.launch, l.started.map_or(0, |p| p.pid))
            }
        },
    };
    // A journal written before launches of a lane were one at a time may hold an older
    // agent still alive: it is named, so no agent that started goes unlisted.
    let others: Vec<String> = lane
        .launches
        .iter()
        .filter(|x| Some(x.launch) != last.map(|l| l.launch) && x.exited.is_none())
        .filter_map(|x| x.started.filter(process::is_alive).map(|p| format!("launch {}'s agent is alive too (pid {})", x.launch, p.pid)))
        .collect();
    let stage = if others.is_empty() { stage } else { format!("{stage}; {}", others.join("; ")) };
    let worktree = last.map(|l| l.worktree.clone());
    let read = worktree.as_ref().and_then(|w| facts.get(w));
    let (uncommitted, behind, worktree_problem, base_problem) = match read {
        Some(Ok(f)) => {
            (lane_work_of(lane, worktree.as_deref(), &f.changed), f.drift.as_ref().map(|d| d.behind), None, f.drift_problem.clone())
        }
        Some(Err(why)) => (Vec::new(), None, Some(why.clone()), None),
        None => (Vec::new(), None, None, None),
    };
    LaneListing {
        lane: name.to_string(),
        stage,
        launch: last.map(|l| l.launch),
        agent: last.and_then(|l| l.started),
        agent_alive: alive,
        receipt_waiting,
        worktree,
        uncommitted,
        behind_default: behind,
        worktree_problem,
        base_problem,
        saved_aside: lane.saved.iter().map(|s| s.ref_name.clone()).collect(),
    }
}

fn run_listing(name: &str, run: &Run, facts: &WorktreeFacts, loops: &crate::phased::LoopRecords) -> RunListing {
    let listing = cached_listing(run);
    RunListing {
        loop_record: crate::phased::resume_listing(name, loops),
        run: name.to_string(),
        working_copy: run.working_copy.clone(),
        driver: Some(run.driver.clone()),
        driver_alive: process::is_alive(&run.driver.process),
        halted: run.halted,
        lanes: run.lanes.iter().map(|(n, l)| lane_listing(n, l, facts)).collect(),
        problem: None,
        pull_requests: listing.as_ref().map(|f| waiting_pull_requests(run, f)).unwrap_or_default(),
        forge_listed_at: listing.map(|f| f.listed_at),
    }
}

/// Every unfinished run: the machine index's, plus this working copy's own (a run whose
/// index entry was lost is still found from where it lives).
fn gather(here: Option<&WorkingCopy>) -> Result<Vec<RunListing>, CommandError> {
    let reading = WorktreeReading::start(here);
    let mut places: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    let (machine, _) = machine()?;
    if let Ok(current) = machine.current_state() {
        for (run, entry) in &current.state.ledger.index {
            if !entry.finished {
                places.entry(entry.working_copy.clone()).or_default().push(run.clone());
            }
        }
    }
    // Every journal (while the early git reads run), then git for the worktrees not read
    // yet, then the listing.
    let mut ledgers: Vec<(LedgerState, crate::phased::LoopRecords)> = Vec::new();
    let mut unreadable = Vec::new();
    let mut wanted: Vec<Option<Vec<String>>> = Vec::new();
    let here_root = here.map(|h| h.root.display().to_string());
    for (root, runs) in &places {
        if Some(root) == here_root.as_ref() {
            continue;
        }
        let state = open_at(Path::new(root))
            .map_err(|e| with_causes(&e))
            .and_then(|wc| {
                let state = wc.store.current_state().map_err(|e| with_causes(&e))?.state;
                Ok((state.ledger, state.loops))
            })
            .map_err(|why| format!("its journal cannot be read: {why}"));
        match state {
            Ok((ledger, loops)) => {
                ledgers.push((ledger, loops));
                wanted.push(Some(runs.clone()));
            }
            Err(why) => unreadable.extend(runs.iter().map(|name| RunListing::unreadable(name, root, &why))),
        }
    }
    if let (Some(h), Some(root)) = (here, &here_root) {
        match h.store.current_state() {
            Ok(current) => {
                ledgers.push((current.state.ledger, current.state.loops));
                wanted.push(None);
            }
            // Its indexed runs are listed with the reason; the others are still listed.
            Err(e) => {
                let why = format!("its journal cannot be read: {e}");
                unreadable.extend(places.get(root).into_iter().flatten().map(|name| RunListing::unreadable(name, root, &why)));
            }
        }
    }
    let listed: Vec<(String, &Run, &crate::phased::LoopRecords)> = ledgers
        .iter()
        .zip(&wanted)
        .flat_map(|((ledger, loops), only)| {
            ledger
                .runs
                .iter()
                .filter(move |(name, run)| !run.finished && only.as_ref().is_none_or(|o| o.contains(name)))
                .map(move |(name, run)| (name.clone(), run, loops))
        })
        .collect();
    let runs: Vec<(String, &Run)> = listed.iter().map(|(name, run, _)| (name.clone(), *run)).collect();
    let facts = reading.finish(&runs);
    let mut listings: Vec<RunListing> = listed.iter().map(|(name, run, loops)| run_listing(name, run, &facts, loops)).collect();
    listings.extend(unreadable);
    listings.sort_by(|a, b| (&a.working_copy, &a.run).cmp(&(&b.working_copy, &b.run)));
    Ok(listings)
}

/// What `abcd resume --step` did, or left undone, for one lane, in the order it went.
pub enum StepMove {
    /// The receipt of `launch` was collected.
    Collected { run: String, lane: String, launch: u64 },
    /// The receipt was not collected, and why (a refusal worded for the person).
    NotCollected { run: String, lane: String, why: String },
    /// The lane has uncommitted work, but its loop is not stopped: the next turn builds on it.
    LoopNotStopped { run: String, lane: String },
    /// The uncommitted work was saved aside: what [`save_aside`] said.
    SavedAside(String),
    /// The uncommitted work was not saved aside, and why.
    NotSavedAside { run: String, lane: String, why: String },
}

/// `abcd resume`: with `step`, the safe moves first (each handed to `on_move` as it is
/// made); then the listing of every unfinished run, written to `resume.json` in this
/// working copy's local tier when the verb runs in one.
pub fn resume(place: Option<&Place>, step: bool, on_move: &mut dyn FnMut(StepMove)) -> Result<Vec<RunListing>, CommandError> {
    let here = place.and_then(|p| open(p).ok());
    if step {
        step_moves(here.as_ref(), on_move)?;
    }
    let listings = gather(here.as_ref())?;
    if let Some(h) = &here {
        // A cache for people and tools, rebuilt on every `abcd resume`; left alone when it
        // already says the same (a rename over a file costs milliseconds on these disks).
        let path = h.store.journal().paths().dir().join("resume.json");
        let listing_json = ResumeFile { schema: RESUME_SCHEMA, runs: &listings };
        let bytes = serde_json::to_vec_pretty(&listing_json).map_err(|e| CommandError::Failed(e.to_string()))?;
        let same_size = std::fs::metadata(&path).is_ok_and(|m| m.len() == bytes.len() as u64);
        if !same_size || crate::platform::fs::read_regular(&path, bytes.len() as u64 + 1).ok().as_deref() != Some(bytes.as_slice()) {
            let _ = crate::journal::storage::write_atomic(&RealDisk, &path, &bytes, false);
        }
    }
    Ok(listings)
}

/// The safe moves only: collect receipts that arrived, save aside the uncommitted work of
/// lanes with no live agent. Nothing is started.
fn step_moves(here: Option<&WorkingCopy>, on_move: &mut dyn FnMut(StepMove)) -> Result<(), CommandError> {
    let mut saved_trees = std::collections::BTreeSet::new();
    for r in gather(here)? {
        let Ok(wc) = open_at(Path::new(&r.working_copy)) else { continue };
        for l in &r.lanes {
            let (run, lane) = (r.run.clone(), l.lane.clone());
            if l.receipt_waiting {
                match collect(&wc, &r.run, &l.lane)? {
                    Ok(c) => on_move(StepMove::Collected { run: run.clone(), lane: lane.clone(), launch: c.launch }),
                    Err(why) => on_move(StepMove::NotCollected { run: run.clone(), lane: lane.clone(), why: why.to_string() }),
                }
            }
            // A loop between turns builds each turn on the last one's uncommitted work:
            // saving it aside would take it away from the next turn. Only a stopped
            // loop's lanes are saved.
            let loop_running = r.loop_record.as_ref().is_some_and(|lp| lp.state != crate::phased::RunState::Stopped);
            if loop_running && !l.uncommitted.is_empty() {
                on_move(StepMove::LoopNotStopped { run: run.clone(), lane: lane.clone() });
            }
            // A launch starting there saves the work aside itself, under its intent.
            let starting =
                wc.store.current_state().ok().is_some_and(|s| {
                    s.state.ledger.runs.get(&run).and_then(|x| x.lanes.get(&lane)).is_some_and(|x| {
                        matches!(super::launch::lane_busy(&run, &lane, x), Err(super::launch::LaneRefusal::Starting { .. }))
                    })
                });
            if !l.agent_alive
                && !starting
                && !loop_running
                && !l.uncommitted.is_empty()
                && let Some(w) = &l.worktree
            {
                // Only a worktree abcd made is saved and reset on its own; a folder the
                // person named with --cwd is theirs.
                let owned = wc
                    .store
                    .current_state()
                    .is_ok_and(|s| super::lane::own_worktree_at(&s.state.ledger, &wc.root, &run, Path::new(w)).is_some());
                if !owned {
                    on_move(StepMove::NotSavedAside {
                        run: run.clone(),
                        lane: lane.clone(),
                        why: format!(
                            "{w} is not the worktree abcd made for the lane (or is not any more), so abcd leaves its work as it is; commit or stash it there (`git -C {} stash -u`)",
                            worktree::shell_quote(w)
                        ),
                    });
                    continue;
                }
                // Lanes sharing a worktree (a loop's two agents) share one save.
                if !saved_trees.insert(w.clone()) {
                    continue;
                }
                // Held and judged again, as `abcd run save-aside` does: a launch may have
                // taken the lane since the listing was read.
                let held = super::lane::lock_lane(wc.store.journal().paths().dir(), &run, &lane)
                    .and_then(|held| take_folder_for_save(&wc.store, &wc.scope, &run, Path::new(w)).map(|()| held));
                let _held = match held {
                    Ok(held) => held,
                    Err(e) => {
                        on_move(StepMove::NotSavedAside { run, lane, why: e.to_string() });
                        continue;
                    }
                };
                match save_aside(&wc, &r.run, &l.lane, Path::new(w)) {
                    Ok(line) => on_move(StepMove::SavedAside(line)),
                    Err(why) => on_move(StepMove::NotSavedAside { run, lane, why }),
                }
            }
        }
    }
    Ok(())
}

/// `abcd run save-aside`: the uncommitted work of the worktree abcd made for `run`'s
/// `lane`, saved aside and the worktree returned to its last commit. Works for a finished
/// run too (its kept worktree is otherwise out of every verb's reach); refused in any
/// folder that does not pass the lane test, and while an agent of the run lives or starts.
pub fn save_lane_aside(place: &Place, run: &str, lane: &str) -> Result<String, CommandError> {
    let wc = open(place)?;
    let ledger_now = wc.store.current_state()?.state.ledger;
    let Some(r) = ledger_now.runs.get(run) else {
        return Err(no_run_named("run save-aside", run).into());
    };
    let Some(l) = r.lanes.get(lane) else {
        return Err(no_lane_named("run save-aside", run, lane).into());
    };
    let Some(own) = &l.own_worktree else {
        return Err(Refusal::new(
            K::NotAbcds,
            "run save-aside",
            format!("abcd made no worktree for {run}/{lane} (or removed it), so it has nothing of the lane's to save"),
        )
        .instead("work in a folder of yours is yours to commit or stash")
        .into());
    };
    let _held = super::lane::lock_lane(wc.store.journal().paths().dir(), run, lane)?;
    if let Err(what) = super::lane::verify_own_worktree(&wc.root, run, lane, own) {
        return Err(Refusal::new(
            K::NotAbcds,
            "run save-aside",
            format!(
                "the worktree of {run}/{lane} is recorded at {}, but what is there is {what}; abcd saves aside only in the worktree it made, so it leaves this as it is",
                own.path
            ),
        )
        .into());
    }
    // Any lane of the run may work there (a loop's reviewer shares its implementer's).
    take_folder_for_save(&wc.store, &wc.scope, run, Path::new(&own.path))?;
    save_aside(&wc, run, lane, Path::new(&own.path)).map_err(|why| Refusal::new(K::UncommittedWork, "run save-aside", why).into())
}

/// Takes, under the writer lock, the folder `dir` of `run` for a save aside: refused when
/// an agent of any lane of the run is alive or starting there (a loop's two lanes share a
/// folder), or a receipt waits; launches whose launcher is gone are recorded `not_started`
/// in the same step, so no watcher of theirs starts an agent in it afterwards.
pub fn take_folder_for_save(store: &Store, scope: &Scope, run: &str, dir: &Path) -> Result<(), CommandError> {
    let written = store.append_with(Some(scope), |state| {
        let Some(r) = state.ledger.runs.get(run) else { return (vec![], Ok(())) };
        let mut events = vec![];
        for (name, l) in &r.lanes {
            if !l.launches.iter().any(|x| Path::new(&x.worktree) == dir) {
                continue;
            }
            match super::launch::lane_busy(run, name, l) {
                Ok(abandoned) => events.extend(super::launch::not_started_events(run, name, &abandoned)),
                Err(why) => {
                    let (holds, next) = (why.what_holds(), why.next_step(run, name));
                    return (
                        vec![],
                        Err(CommandError::from(
                            Refusal::new(K::LaneBusy, "save aside", format!("{holds} in {}", dir.display()))
                                .untouched(crate::refusal::Untouched::SavedOrReset)
                                .instead(format!("{next}, then save aside again")),
                        )),
                    );
                }
            }
        }
        (events, Ok(()))
    })?;
    written.outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal the listing cannot read is named with every cause, as the CLI prints an
    /// error (an I/O error's cause repeats after its message).
    #[test]
    fn an_unreadable_journal_is_named_with_its_causes() {
        let e = JournalError::Io { what: "reading", path: PathBuf::from("/j.jsonl"), source: std::io::Error::other("boom") };
        assert_eq!(with_causes(&e), "reading /j.jsonl failed: boom: boom");
        assert_eq!(with_causes(&PlaceError::NoHome), "no home store: set ABCD_HOME or HOME");
    }

    /// The drift cache keeps what it holds up to its bound and starts over past it.
    #[test]
    fn the_drift_cache_starts_over_only_past_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache/base-drift.json");
        let pairs =
            |n: usize, from: usize| -> worktree::DriftCounts { (from..from + n).map(|i| (format!("{i:040x} -"), i as u64)).collect() };
        save_drift_cache(&path, pairs(DRIFT_CACHE_MAX - 1, 0), pairs(1, DRIFT_CACHE_MAX));
        assert_eq!(load_drift_cache(&path).len(), DRIFT_CACHE_MAX, "exactly the bound is kept");
        save_drift_cache(&path, load_drift_cache(&path), pairs(1, 2 * DRIFT_CACHE_MAX));
        assert_eq!(load_drift_cache(&path), pairs(1, 2 * DRIFT_CACHE_MAX), "one past it: only the new pair");
    }

    /// Only worktrees whose every lane's agent had started and stopped are read early, and
    /// those lanes (by run, lane and launch) are what an early answer is checked against.
    #[test]
    fn the_previous_listing_offers_only_settled_worktrees() {
        let dir = tempfile::tempdir().unwrap();
        let (settled_tree, busy_tree, gone_tree) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("c"));
        std::fs::create_dir_all(&settled_tree).unwrap();
        std::fs::create_dir_all(&busy_tree).unwrap();
        let pid = json!({"pid": 1, "start_ticks": 2});
        let lane = |name: &str, w: &Path, launch: u64, agent: &serde_json::Value, alive: bool| json!({"lane": name, "worktree": w.display().to_string(), "launch": launch, "agent": agent, "agent_alive": alive});
        let listing = json!({"schema": RESUME_SCHEMA, "runs": [
            {"run": "r", "lanes": [
                lane("done", &settled_tree, 3, &pid, false),
                lane("alive", &busy_tree, 1, &pid, true),
                lane("never-started", &busy_tree, 2, &serde_json::Value::Null, false),
                lane("folder-gone", &gone_tree, 1, &pid, false),
            ]}
        ]});
        let path = dir.path().join("resume.json");
        std::fs::write(&path, serde_json::to_vec(&listing).unwrap()).unwrap();
        let (guess, settled) = previous_listing(&path);
        assert_eq!(guess, vec![settled_tree.display().to_string()], "a busy worktree and a missing folder are read late");
        assert!(settled.contains(&("r".to_string(), "done".to_string(), 3)));
        assert!(!settled.iter().any(|(_, l, _)| l == "alive" || l == "never-started"));
        std::fs::write(&path, b"not json").unwrap();
        assert_eq!(previous_listing(&path), (vec![], Settled::new()));
    }
}
