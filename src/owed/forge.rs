//! The one forge listing read while the person is away (SPEC §6): `gh pr list` of the
//! person's open pull requests, run once under its deadline, and which of them are owed
//! (behind, conflicting or failing).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::JoinHandle;
use std::time::Instant;

use serde::Deserialize;

use super::limits::{CHILD_OUTPUT_MAX, FORGE_DEADLINE, FORGE_LIST_MAX};
use crate::checklist::promise::{Checks, Merge, PrFact, PrState};
use crate::verdict::stop::{Owed, PrWhy};

/// Check-run conclusions that mean failing.
const FAILING_CONCLUSIONS: &[&str] = &["FAILURE", "TIMED_OUT", "CANCELLED", "ACTION_REQUIRED"];
/// Status-context states that mean failing.
const FAILING_STATES: &[&str] = &["FAILURE", "ERROR"];

/// Check-run conclusions and status-context states that mean passed (for `ci:` promises).
const PASSING: &[&str] = &["SUCCESS", "NEUTRAL", "SKIPPED"];

/// The listing's arguments, exactly. Open pull requests, which alone can be owed; every
/// state only when a promise waits on one merged or closed (`all_states`), since the
/// newest [`FORGE_LIST_MAX`] of every state can leave an older open one out.
pub(super) fn gh_args(all_states: bool) -> Vec<String> {
    let state = if all_states { "all" } else { "open" };
    ["pr", "list", "--state", state, "--author", "@me", "--json", "number,headRefName,state,mergeStateStatus,statusCheckRollup", "--limit"]
        .into_iter()
        .map(str::to_owned)
        .chain([FORGE_LIST_MAX.to_string()])
        .collect()
}

/// The first executable file named `name` in a PATH value's directories. Empty entries
/// (the current directory, to a shell) are skipped, so a checkout cannot plant a `gh`.
pub fn find_on_path(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?).filter(|dir| dir.is_absolute()).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else { return false };
    meta.is_file() && crate::platform::fs::inode(&meta).mode & 0o111 != 0
}

/// A listing under way on its own thread.
pub(super) struct Listing {
    thread: Option<JoinHandle<Listed>>,
    /// Set when there is nothing to wait for: the budget was spent before the listing could
    /// start, or a kept listing stands for it.
    not_started: Option<Listed>,
}

/// What the listing gave.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Listed {
    pub items: Vec<Owed>,
    /// Each listed pull request's number and head branch, for the own-branch filter.
    pub heads: Vec<(u64, String)>,
    /// Every listed pull request's state and checks, when the listing was read.
    pub facts: Option<Vec<PrFact>>,
    pub note: Option<String>,
    pub called: bool,
    /// The budget, not the listing's own deadline, cut it (or left no time to start it).
    pub cut_by_budget: bool,
}

/// Starts the listing; its deadline is [`FORGE_DEADLINE`] from now or the budget's end,
/// whichever comes first.
pub(super) fn start(gh: PathBuf, root: PathBuf, budget_end: Instant, all_states: bool) -> Listing {
    let now = Instant::now();
    if now >= budget_end {
        let note = "the forge listing was not made: the 14 s budget was spent; decided from disk".to_string();
        return Listing { thread: None, not_started: Some(Listed { note: Some(note), cut_by_budget: true, ..Listed::default() }) };
    }
    let own_end = now.checked_add(FORGE_DEADLINE).unwrap_or(budget_end);
    let (deadline, by_budget) = if budget_end < own_end { (budget_end, true) } else { (own_end, false) };
    let thread = std::thread::spawn(move || list(&gh, &root, deadline, by_budget, all_states));
    Listing { thread: Some(thread), not_started: None }
}

impl Listing {
    /// A listing already read (a kept one): nothing to start or wait for.
    pub(super) fn done(listed: Listed) -> Listing {
        Listing { thread: None, not_started: Some(listed) }
    }

    /// Waits for the listing (its child is killed at its deadline, so this ends).
    pub(super) fn finish(self) -> Listed {
        match (self.not_started, self.thread) {
            (Some(listed), _) => listed,
            (None, Some(thread)) => thread.join().unwrap_or_else(|_| Listed {
                note: Some("the forge listing failed (its reader panicked); decided from disk".into()),
                called: true,
                ..Listed::default()
            }),
            (None, None) => Listed::default(),
        }
    }
}

fn list(gh: &Path, root: &Path, deadline: Instant, by_budget: bool, all_states: bool) -> Listed {
    let args: Vec<OsString> = gh_args(all_states).into_iter().map(OsString::from).collect();
    let failed = |why: &str| Listed {
        note: Some(format!("the forge listing failed ({why}); decided from disk")),
        called: true,
        ..Listed::default()
    };
    match run_bounded(gh.as_os_str(), &args, root, deadline, CHILD_OUTPUT_MAX) {
        Ok(ran) if ran.code == Some(0) => match parse_listing(&ran.out).and_then(|items| Ok((items, parse_facts(&ran.out)?))) {
            Ok((items, facts)) => Listed { items, heads: heads_of(&ran.out), facts: Some(facts), called: true, ..Listed::default() },
            Err(why) => failed(&why),
        },
        Ok(ran) => failed(&match ran.code {
            Some(code) => format!("gh exited with {code}"),
            None => "gh was ended by a signal".into(),
        }),
        Err(RunFail::Deadline) if by_budget => Listed {
            note: Some("the forge listing was cut at the 14 s budget; decided from disk".into()),
            called: true,
            cut_by_budget: true,
            ..Listed::default()
        },
        Err(RunFail::Deadline) => Listed {
            note: Some(format!("the forge listing was cut at {} s; decided from disk", FORGE_DEADLINE.as_secs())),
            called: true,
            ..Listed::default()
        },
        Err(RunFail::TooLong) => failed(&format!("it printed more than {CHILD_OUTPUT_MAX} bytes")),
        Err(RunFail::Read) => failed("its output could not be read"),
        Err(RunFail::Spawn(why)) => Listed { called: false, ..failed(&format!("gh could not be started: {why}")) },
    }
}

/// One listed pull request: only the fields the owed rules read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PullRequest {
    number: u64,
    #[serde(default)]
    head_ref_name: Option<String>,
    /// `OPEN`, `MERGED` or `CLOSED`; absent reads as open (a listing of open ones).
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    merge_state_status: Option<String>,
    #[serde(default)]
    status_check_rollup: Option<Vec<Check>>,
}

/// A check run (`conclusion`) or a status context (`state`).
#[derive(Deserialize)]
struct Check {
    #[serde(default)]
    conclusion: Option<String>,
    #[serde(default)]
    state: Option<String>,
}

impl Check {
    fn passed(&self) -> bool {
        self.conclusion.as_deref().is_some_and(|c| PASSING.contains(&c)) || self.state.as_deref().is_some_and(|s| PASSING.contains(&s))
    }

    fn failing(&self) -> bool {
        self.conclusion.as_deref().is_some_and(|c| FAILING_CONCLUSIONS.contains(&c))
            || self.state.as_deref().is_some_and(|s| FAILING_STATES.contains(&s))
    }
}

/// The owed pull requests of a listing, the first [`FORGE_LIST_MAX`] read: failing checks
/// first (they win over the merge state), then `BEHIND`, then `DIRTY`; anything else
/// (`UNKNOWN`, `CLEAN`, `BLOCKED`, `UNSTABLE`, …) is nothing. Output that is not the
/// listing's JSON is an error, named without quoting it.
pub(super) fn parse_listing(bytes: &[u8]) -> Result<Vec<Owed>, String> {
    // serde's message may quote the offending value (a token, say): only its place is said.
    let listed: Vec<PullRequest> = serde_json::from_slice(bytes)
        .map_err(|e| format!("its output was not the listing's JSON (line {}, column {})", e.line(), e.column()))?;
    Ok(listed
        .iter()
        .take(FORGE_LIST_MAX)
        .filter(|pr| pr.state.as_deref().is_none_or(|s| s == "OPEN"))
        .filter_map(|pr| {
            let failing = pr.status_check_rollup.as_deref().unwrap_or_default().iter().any(Check::failing);
            let why = match pr.merge_state_status.as_deref() {
                _ if failing => PrWhy::Failing,
                Some("BEHIND") => PrWhy::Behind,
                Some("DIRTY") => PrWhy::Dirty,
                _ => return None,
            };
            Some(Owed::PullRequest { number: pr.number, why })
        })
        .collect())
}

/// A kept listing read back as a fresh one would be: the owed pull requests by the rules of
/// [`parse_listing`] (open ones only; failing checks first, then `BEHIND`, then `DIRTY`),
/// and each one's head.
pub(super) fn reused(facts: &[PrFact]) -> Listed {
    let items = facts
        .iter()
        .filter(|pr| pr.state == PrState::Open)
        .filter_map(|pr| {
            let why = match (pr.checks, pr.merge) {
                (Checks::Failing, _) => PrWhy::Failing,
                (_, Some(Merge::Behind)) => PrWhy::Behind,
                (_, Some(Merge::Dirty)) => PrWhy::Dirty,
                _ => return None,
            };
            Some(Owed::PullRequest { number: pr.number, why })
        })
        .collect();
    let heads = facts.iter().filter(|pr| !pr.head.is_empty()).map(|pr| (pr.number, pr.head.clone())).collect();
    Listed { items, heads, ..Listed::default() }
}

/// A listed pull request's number and head branch.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeadOf {
    number: u64,
    #[serde(default)]
    head_ref_name: Option<String>,
}

/// The number and head branch of each of the first [`FORGE_LIST_MAX`] listed pull requests
/// that names one; nothing when the output is not the listing's JSON.
pub(super) fn heads_of(bytes: &[u8]) -> Vec<(u64, String)> {
    let listed: Vec<HeadOf> = serde_json::from_slice(bytes).unwrap_or_default();
    listed.into_iter().take(FORGE_LIST_MAX).filter_map(|pr| Some((pr.number, pr.head_ref_name?))).collect()
}

/// Every listed pull request (the first [`FORGE_LIST_MAX`]) as the promises read it: its
/// state (an unknown one is left out) and its checks, green only when there is at least one
/// and every one passed.
pub(super) fn parse_facts(bytes: &[u8]) -> Result<Vec<PrFact>, String> {
    let listed: Vec<PullRequest> = serde_json::from_slice(bytes)
        .map_err(|e| format!("its output was not the listing's JSON (line {}, column {})", e.line(), e.column()))?;
    Ok(listed
        .iter()
        .take(FORGE_LIST_MAX)
        .filter_map(|pr| {
            let state = match pr.state.as_deref() {
                None | Some("OPEN") => PrState::Open,
                Some("MERGED") => PrState::Merged,
                Some("CLOSED") => PrState::Closed,
                Some(_) => return None,
            };
            let checks = pr.status_check_rollup.as_deref().unwrap_or_default();
            let checks = match () {
                _ if checks.is_empty() => Checks::None,
                _ if checks.iter().any(Check::failing) => Checks::Failing,
                _ if checks.iter().all(Check::passed) => Checks::Green,
                _ => Checks::Pending,
            };
            let merge = match pr.merge_state_status.as_deref() {
                Some("BEHIND") => Some(Merge::Behind),
                Some("DIRTY") => Some(Merge::Dirty),
                _ => None,
            };
            Some(PrFact { number: pr.number, head: pr.head_ref_name.clone().unwrap_or_default(), state, checks, merge })
        })
        .collect())
}

/// Why a child's read gave nothing usable.
pub(super) use crate::platform::child::ChildFail as RunFail;

/// Runs the forge's `program` directly (no shell) in `cwd`, stdin closed, stderr
/// discarded, prompts off (its own and those of the git it may start, which takes no
/// optional lock either), through
/// [`crate::platform::child::run`]: its own process group, killed when `deadline` passes or
/// its stdout passes `cap` bytes.
pub(super) fn run_bounded<S: AsRef<OsStr>>(
    program: &OsStr,
    args: &[S],
    cwd: &Path,
    deadline: Instant,
    cap: usize,
) -> Result<crate::platform::child::Finished, RunFail> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GH_PROMPT_DISABLED", "1")
        .env("GH_NO_UPDATE_NOTIFIER", "1");
    crate::platform::child::run(cmd, None, deadline, cap, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(number: u64, state: &str, checks: &str) -> String {
        format!(r#"{{"number":{number},"headRefName":"b{number}","mergeStateStatus":"{state}","statusCheckRollup":[{checks}]}}"#)
    }

    fn owed(number: u64, why: PrWhy) -> Owed {
        Owed::PullRequest { number, why }
    }

    #[test]
    fn merge_states_map_to_behind_and_dirty_and_the_rest_to_nothing() {
        let states = ["BEHIND", "DIRTY", "UNKNOWN", "CLEAN", "BLOCKED", "UNSTABLE", "HAS_HOOKS", "DRAFT", ""];
        let json = format!("[{}]", states.iter().enumerate().map(|(i, s)| pr(i as u64 + 1, s, "")).collect::<Vec<_>>().join(","));
        assert_eq!(parse_listing(json.as_bytes()).unwrap(), vec![owed(1, PrWhy::Behind), owed(2, PrWhy::Dirty)]);
    }

    #[test]
    fn every_failing_conclusion_and_state_fails_and_wins_over_behind() {
        let mut json = Vec::new();
        let mut want = Vec::new();
        let mut n = 0;
        for c in FAILING_CONCLUSIONS {
            n += 1;
            json.push(pr(n, "BEHIND", &format!(r#"{{"__typename":"CheckRun","status":"COMPLETED","conclusion":"{c}"}}"#)));
            want.push(owed(n, PrWhy::Failing));
        }
        for s in FAILING_STATES {
            n += 1;
            json.push(pr(n, "CLEAN", &format!(r#"{{"__typename":"StatusContext","state":"{s}"}}"#)));
            want.push(owed(n, PrWhy::Failing));
        }
        // Passing, pending, skipped and neutral checks are not failing.
        let passing = r#"{"conclusion":"SUCCESS"},{"conclusion":"NEUTRAL"},{"conclusion":"SKIPPED"},{"conclusion":"","status":"IN_PROGRESS"},{"conclusion":null},{"state":"PENDING"},{"state":"SUCCESS"},{"state":"EXPECTED"}"#;
        json.push(pr(100, "UNSTABLE", passing));
        json.push(pr(101, "DIRTY", passing));
        want.push(owed(101, PrWhy::Dirty));
        let listing = format!("[{}]", json.join(","));
        let got = parse_listing(listing.as_bytes()).unwrap();
        assert_eq!(got, want);
        // The same listing kept and read back owes the same pull requests, in its order.
        assert_eq!(reused(&parse_facts(listing.as_bytes()).unwrap()).items, want);
    }

    #[test]
    fn missing_and_null_fields_read_as_nothing_owed() {
        let got = parse_listing(br#"[{"number":7},{"number":8,"mergeStateStatus":null,"statusCheckRollup":null}]"#).unwrap();
        assert!(got.is_empty());
        assert_eq!(parse_listing(b"[]").unwrap(), vec![]);
    }

    #[test]
    fn merged_and_closed_pull_requests_are_never_owed_but_are_facts() {
        let json = r#"[{"number":1,"headRefName":"a","state":"MERGED","mergeStateStatus":"BEHIND","statusCheckRollup":[{"conclusion":"FAILURE"}]},
            {"number":2,"headRefName":"b","state":"CLOSED","mergeStateStatus":"DIRTY"},
            {"number":3,"headRefName":"c","state":"OPEN","mergeStateStatus":"BEHIND","statusCheckRollup":[{"conclusion":"SUCCESS"},{"state":"SUCCESS"}]},
            {"number":4,"headRefName":"d","state":"DRAFTISH"}]"#;
        assert_eq!(parse_listing(json.as_bytes()).unwrap(), vec![owed(3, PrWhy::Behind)]);
        let facts = parse_facts(json.as_bytes()).unwrap();
        let fact = |number, head: &str, state, checks, merge| PrFact { number, head: head.into(), state, checks, merge };
        assert_eq!(
            facts,
            vec![
                fact(1, "a", PrState::Merged, Checks::Failing, Some(Merge::Behind)),
                fact(2, "b", PrState::Closed, Checks::None, Some(Merge::Dirty)),
                fact(3, "c", PrState::Open, Checks::Green, Some(Merge::Behind))
            ]
        );
        // A kept listing owes what the fresh one did.
        assert_eq!(reused(&facts).items, vec![owed(3, PrWhy::Behind)]);
    }

    #[test]
    fn checks_are_green_only_when_every_one_passed() {
        let one = |rollup: &str| parse_facts(format!("[{}]", pr(1, "CLEAN", rollup)).as_bytes()).unwrap()[0].checks;
        assert_eq!(one(""), Checks::None);
        assert_eq!(one(r#"{"conclusion":"SUCCESS"},{"conclusion":"SKIPPED"},{"state":"SUCCESS"},{"conclusion":"NEUTRAL"}"#), Checks::Green);
        assert_eq!(one(r#"{"conclusion":"SUCCESS"},{"conclusion":null,"status":"IN_PROGRESS"}"#), Checks::Pending);
        assert_eq!(one(r#"{"conclusion":"SUCCESS"},{"state":"PENDING"}"#), Checks::Pending);
        assert_eq!(one(r#"{"state":"PENDING"},{"state":"ERROR"}"#), Checks::Failing);
        // No state in the listing (the open-only listing's shape): open.
        assert_eq!(parse_facts(br#"[{"number":9}]"#).unwrap()[0].state, PrState::Open);
    }

    #[test]
    fn garbage_is_an_error_never_a_panic() {
        for bad in [&b""[..], b"not json", b"{}", b"[{\"number\":-1}]", b"[{\"number\":\"x\"}]", b"[1,2]", b"\xff\xfe", b"[{\"number\":1}"]
        {
            assert!(parse_listing(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn at_most_the_first_forge_list_max_pull_requests_are_read() {
        let at = |count: usize| {
            let json = format!("[{}]", (1..=count as u64).map(|n| pr(n, "BEHIND", "")).collect::<Vec<_>>().join(","));
            parse_listing(json.as_bytes()).unwrap()
        };
        assert_eq!(at(FORGE_LIST_MAX).len(), FORGE_LIST_MAX);
        let past = at(FORGE_LIST_MAX + 1);
        assert_eq!(past.len(), FORGE_LIST_MAX);
        assert!(!past.contains(&owed(FORGE_LIST_MAX as u64 + 1, PrWhy::Behind)));
    }

    #[test]
    fn the_listing_asks_for_the_persons_open_pull_requests_with_the_fields_read() {
        assert_eq!(
            gh_args(false).join(" "),
            "pr list --state open --author @me --json number,headRefName,state,mergeStateStatus,statusCheckRollup --limit 200"
        );
        assert_eq!(
            gh_args(true).join(" "),
            "pr list --state all --author @me --json number,headRefName,state,mergeStateStatus,statusCheckRollup --limit 200",
            "every state only for a promise on a merged or closed pull request"
        );
    }

    #[test]
    fn gh_is_found_on_path_only_as_an_executable_file_in_an_absolute_directory() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (plain, exec, folder) = (dir.path().join("plain"), dir.path().join("exec"), dir.path().join("folder"));
        for d in [&plain, &exec, &folder.join("gh")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(plain.join("gh"), "").unwrap();
        std::fs::write(exec.join("gh"), "").unwrap();
        std::fs::set_permissions(exec.join("gh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([Path::new(""), Path::new("relative"), &folder, &plain, &exec]).unwrap();
        assert_eq!(find_on_path("gh", Some(&path)), Some(exec.join("gh")));
        let without = std::env::join_paths([&folder, &plain]).unwrap();
        assert_eq!(find_on_path("gh", Some(&without)), None);
        assert_eq!(find_on_path("gh", None), None);
    }
}
