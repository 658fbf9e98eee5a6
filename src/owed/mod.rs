//! Reads the world's part of the owed set for the stop hook (SPEC §6): own unpushed
//! branches from git, and, only while the person is away, one bounded forge
//! listing, all under one budget from the hook's start. Also this working copy's own
//! branches, and which of them the checklist is behind (docs/own-work.md).
//!
//! Nothing here records anything or decides the verdict: the caller passes the reading to
//! `verdict::stop::judge` and records what it accepts. Every child runs without a shell,
//! with stdin closed and prompts off, is killed when its deadline passes, and has its
//! output read up to [`CHILD_OUTPUT_MAX`] bytes: git's children are started by
//! `git::run` as every git child is, the forge's (`gh`) by `run_bounded`.

mod branches;
mod forge;
mod git_answers;
mod limits;
pub mod listing_cache;

use std::path::Path;
use std::time::Instant;

use jiff::Timestamp;

use crate::checklist::state::Item;
use crate::verdict::stop::{BehindRef, BehindWhy, Owed};

pub use forge::find_on_path;
pub use limits::{
    BRANCHES_EXAMINED_MAX, CHILD_OUTPUT_MAX, FORGE_DEADLINE, FORGE_LIST_MAX, OWED_BUDGET, OWN_BUDGET, OWN_COMMITS_SCANNED_MAX,
    RECENT_OWN_COMMIT, REFLOG_ENTRIES_MAX,
};

/// What the stop hook asks.
#[derive(Clone, Copy, Debug)]
pub struct OwedQuery<'a> {
    /// The working copy's root (the top of the git work tree).
    pub root: &'a Path,
    /// Checklist items holding at least every armed promise (a promise waiting on a pull
    /// request merged or closed asks the listing for every state). The checklist's part of
    /// the owed set is the caller's (`fold::owed`).
    pub checklist: &'a [Item],
    /// Branches this working copy created (from `branch.created` events).
    pub created_here: &'a [String],
    /// Some while the person is away: only then is the forge listed and hand-backs
    /// considered.
    pub away: Option<AwayQuery<'a>>,
    pub now: Timestamp,
    /// The hook's start; the budget runs from here.
    pub started: Instant,
    /// The `gh` program to run; None looks it up on PATH; an empty path lists no forge.
    pub gh: Option<&'a Path>,
    /// The working copy's local tier, where the last listing is kept (one made less than
    /// [`listing_cache::FORGE_LISTING_REUSE`] ago is read instead of calling the forge), and
    /// git's answers (read instead of running git while the repository's files are unchanged).
    pub listing_cache: Option<&'a Path>,
}

/// The away record's part the reader needs.
#[derive(Clone, Copy, Debug)]
pub struct AwayQuery<'a> {
    pub hold_pushes: bool,
    /// The queued steps, oldest first.
    pub queued: &'a [String],
}

/// An unpushed branch's item a queued push handed back (SPEC §6 "Pushes").
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HandBack {
    pub branch: String,
    /// The branch's head, a full commit id.
    pub head: String,
}

/// One of this working copy's own branches (docs/own-work.md): it exists, and was created
/// here or is checked out here with a recent commit of this checkout's.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OwnBranch {
    pub name: String,
    /// Its head, a full commit id.
    pub head: String,
    /// Its head's committer time, when git gave one.
    pub committed_at: Option<Timestamp>,
}

/// What was read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwedReading {
    /// The world's owed items (git's and the forge's), hand-backs already left out.
    pub items: Vec<Owed>,
    /// This working copy's own branches, owed or not (empty when git could not tell).
    pub own: Vec<OwnBranch>,
    pub handed_back: Vec<HandBack>,
    /// One plain line each, e.g. "the forge listing was cut at 10 s; decided from disk".
    pub notes: Vec<String>,
    /// A git or forge read was cut short by the budget: the caller allows the stop and
    /// says so.
    pub incomplete: bool,
    /// The forge program was started.
    pub forge_called: bool,
    /// Every listed pull request's state and checks, when the listing was read: what
    /// promises fire from and the caller keeps in the listing's cache.
    pub forge_facts: Option<crate::checklist::promise::ForgeFacts>,
}

/// Reads the owed set. Never panics on what git or the forge print, and returns within the
/// budget (plus the time to kill and reap a child).
pub fn read_owed(q: &OwedQuery<'_>) -> OwedReading {
    let mut reading = OwedReading::default();
    let budget_end = q.started.checked_add(OWED_BUDGET).unwrap_or_else(Instant::now);

    // The listing runs beside the git reads, so a slow forge does not eat the disk's time;
    // a kept listing young enough stands for it, and the forge is not called.
    let all_states = crate::checklist::promise::asks_closed_states(q.checklist);
    let forge = q.away.and_then(|_| {
        let gh = match q.gh {
            // An empty path is "no forge" (`ABCD_GH=`): no listing, no note.
            Some(gh) if gh.as_os_str().is_empty() => return None,
            Some(gh) => gh.to_path_buf(),
            None => find_on_path("gh", std::env::var_os("PATH").as_deref())?,
        };
        if let Some(kept) = q.listing_cache.and_then(|tier| listing_cache::reusable(tier, q.now, all_states)) {
            return Some(forge::Listing::done(forge::reused(&kept.pull_requests)));
        }
        Some(forge::start(gh, q.root.to_path_buf(), budget_end, all_states))
    });

    let disk = branches::read(&branches::BranchQuery {
        root: q.root,
        created_here: q.created_here,
        now: q.now,
        deadline: budget_end,
        away: q.away.as_ref(),
        own_only: false,
        tier: q.listing_cache,
    });
    reading.items.extend(disk.items);
    reading.own = disk.own;
    reading.handed_back = disk.handed_back;
    reading.notes.extend(disk.notes);
    reading.incomplete |= disk.incomplete;

    if let Some(forge) = forge {
        let listed = forge.finish();
        reading.forge_called = listed.called;
        reading.incomplete |= listed.cut_by_budget;
        reading.notes.extend(listed.note);
        reading.items.extend(own_pull_requests(listed.items, &listed.heads, &reading.own));
        reading.forge_facts =
            listed.facts.map(|pull_requests| crate::checklist::promise::ForgeFacts { listed_at: q.now, pull_requests, all_states });
    }
    reading
}

/// A cache file of this module's (a JSON value of at most `max` bytes), read as absent
/// when it is missing, not a regular file, bigger, or not the shape of `T`.
fn read_cache<T: serde::de::DeserializeOwned>(path: &Path, max: usize) -> Option<T> {
    let bytes = crate::platform::fs::read_regular(path, max as u64 + 1).ok()?;
    if bytes.len() > max {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

/// Of the listed pull requests, those whose head is one of this working copy's own branches
/// (seed 003): another copy's pull request, or one whose branch is in no checkout here, is
/// not this session's to move.
fn own_pull_requests(items: Vec<Owed>, heads: &[(u64, String)], own: &[OwnBranch]) -> Vec<Owed> {
    let own_head = |number: u64| heads.iter().any(|(n, head)| *n == number && own.iter().any(|b| &b.name == head));
    items.into_iter().filter(|item| !matches!(item, Owed::PullRequest { number, .. } if !own_head(*number))).collect()
}

/// What the prompt hook asks: the own branches alone, from git only.
#[derive(Clone, Copy, Debug)]
pub struct OwnQuery<'a> {
    pub root: &'a Path,
    /// Branches this working copy created (from `branch.created` events).
    pub created_here: &'a [String],
    pub now: Timestamp,
    /// The hook's start; [`OWN_BUDGET`] runs from here.
    pub started: Instant,
    /// The working copy's local tier, where git's answers are kept between hooks.
    pub tier: Option<&'a Path>,
}

/// The own branches and what kept them from being read whole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnReading {
    pub own: Vec<OwnBranch>,
    pub notes: Vec<String>,
    /// Cut by the budget: the set may lack branches.
    pub incomplete: bool,
}

/// This working copy's own branches, read from git alone (no forge, no network), with the
/// reads [`read_owed`] makes to tell them, and none of its upstream or landing reads.
pub fn read_own(q: &OwnQuery<'_>) -> OwnReading {
    let deadline = q.started.checked_add(OWN_BUDGET).unwrap_or_else(Instant::now);
    let disk = branches::read(&branches::BranchQuery {
        root: q.root,
        created_here: q.created_here,
        now: q.now,
        deadline,
        away: None,
        own_only: true,
        tier: q.tier,
    });
    OwnReading { own: disk.own, notes: disk.notes, incomplete: disk.incomplete }
}

/// The own branches the checklist is behind (SPEC §3 "Behind"), by name: those no item's
/// `owner_refs` names, then those whose head was committed after the checklist's last write
/// (`updated_at`), compared in whole seconds as git keeps them, so a commit in the same
/// second as the write is not named. Only branches that exist are ever named.
pub fn behind(items: &[Item], updated_at: Option<Timestamp>, own: &[OwnBranch]) -> Vec<BehindRef> {
    let named = |b: &str| items.iter().any(|i| i.fields.owner_refs.iter().any(|r| r == b));
    let after_write = |b: &OwnBranch| match (b.committed_at, updated_at) {
        (Some(at), Some(written)) => at.as_second() > written.as_second(),
        _ => false,
    };
    let mut out: Vec<BehindRef> = own
        .iter()
        .filter_map(|b| {
            let why = if !named(&b.name) {
                BehindWhy::Unlisted
            } else if after_write(b) {
                BehindWhy::Changed
            } else {
                return None;
            };
            Some(BehindRef { branch: b.name.clone(), why })
        })
        .collect();
    out.sort_by(|a, b| (a.why, &a.branch).cmp(&(b.why, &b.branch)));
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::forge::{RunFail, run_bounded};
    use super::*;
    use crate::checklist::item::{ItemFields, ItemState};
    use crate::fold::owed::checklist_owed;
    use std::ffi::OsStr;
    use std::time::Duration;

    fn item(id: &str, state: ItemState, next_look: Option<Timestamp>) -> Item {
        let at: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        Item {
            fields: ItemFields {
                id: id.into(),
                title: id.into(),
                state,
                waits_on: None,
                next_look,
                promise: None,
                owner_refs: vec![],
                credential: None,
                blocker: None,
            },
            created_at: at,
            updated_at: at,
            added_seq: 1,
            changed_seq: 1,
            promise_fired: None,
            promised_by: None,
        }
    }

    #[test]
    fn checklist_owed_takes_working_and_due_looks_only() {
        let now: Timestamp = "2026-05-01T12:00:00Z".parse().unwrap();
        let second = jiff::SignedDuration::from_secs(1);
        let items = [
            item("w", ItemState::Working, None),
            item("due-now", ItemState::Waiting, Some(now)),
            item("due-before", ItemState::Waiting, Some(now - second)),
            item("not-yet", ItemState::Waiting, Some(now + second)),
            item("no-look", ItemState::Waiting, None),
            item("done", ItemState::Done, Some(now - second)),
            item("dropped", ItemState::Dropped, None),
            item("w-look", ItemState::Working, Some(now + second)),
        ];
        let (owed, looks) = checklist_owed(&items, now);
        assert_eq!(
            owed,
            vec![
                Owed::Working { id: "w".into(), title: "w".into(), added_seq: 1, promised: false },
                Owed::LookDue { id: "due-now".into(), title: "due-now".into(), added_seq: 1 },
                Owed::LookDue { id: "due-before".into(), title: "due-before".into(), added_seq: 1 },
                Owed::Working { id: "w-look".into(), title: "w-look".into(), added_seq: 1, promised: false },
            ]
        );
        // Every waiting item's look, future or not; a working item's look is not a wait.
        assert_eq!(looks, vec![now, now - second, now + second]);
    }

    fn own(name: &str, committed_at: Option<Timestamp>) -> OwnBranch {
        OwnBranch { name: name.into(), head: "0".repeat(40), committed_at }
    }

    #[test]
    fn behind_names_unlisted_branches_then_those_committed_after_the_last_write() {
        let written: Timestamp = "2026-05-01T12:00:00.700Z".parse().unwrap();
        let second = jiff::SignedDuration::from_secs(1);
        let mut listed = item("1", ItemState::Working, None);
        listed.fields.owner_refs = vec!["feat/same-second".into(), "feat/later".into(), "feat/earlier".into(), "feat/no-date".into()];
        let whole = Timestamp::from_second(written.as_second()).unwrap();
        let branches = [
            own("feat/z-unlisted", None),
            own("feat/a-unlisted", Some(whole + second)),
            // Git keeps whole seconds: a commit in the write's second is not named.
            own("feat/same-second", Some(whole)),
            own("feat/later", Some(whole + second)),
            own("feat/earlier", Some(whole - second)),
            own("feat/no-date", None),
        ];
        let got = behind(std::slice::from_ref(&listed), Some(written), &branches);
        let want = [
            BehindRef { branch: "feat/a-unlisted".into(), why: BehindWhy::Unlisted },
            BehindRef { branch: "feat/z-unlisted".into(), why: BehindWhy::Unlisted },
            BehindRef { branch: "feat/later".into(), why: BehindWhy::Changed },
        ];
        assert_eq!(got, want);
        // Before any write only the unlisted are named; with no own branch, nothing.
        assert_eq!(behind(std::slice::from_ref(&listed), None, &branches).len(), 2);
        assert!(behind(&[], Some(written), &[]).is_empty());
    }

    #[test]
    fn only_pull_requests_whose_listed_head_is_an_own_branch_are_kept() {
        use crate::verdict::stop::PrWhy;
        let listing = br#"[{"number":1,"headRefName":"feat/own"},{"number":2,"headRefName":"feat/other"},{"number":3},
            {"number":4,"headRefName":null}]"#;
        let heads = forge::heads_of(listing);
        assert_eq!(heads, [(1, "feat/own".to_string()), (2, "feat/other".to_string())]);
        let pr = |number| Owed::PullRequest { number, why: PrWhy::Behind };
        let working = Owed::Working { id: "w".into(), title: String::new(), added_seq: 1, promised: false };
        let items = vec![pr(1), pr(2), pr(3), pr(4), working.clone()];
        assert_eq!(own_pull_requests(items.clone(), &heads, &[own("feat/own", None)]), [pr(1), working.clone()]);
        assert_eq!(own_pull_requests(items, &heads, &[]), [working]);
        // Not the listing's JSON: no heads, so no pull request is kept.
        assert!(forge::heads_of(b"not json").is_empty());
        // The first FORGE_LIST_MAX are read, as the owed rules read them.
        let many =
            |n: u64| format!("[{}]", (1..=n).map(|i| format!(r#"{{"number":{i},"headRefName":"b"}}"#)).collect::<Vec<_>>().join(","));
        assert_eq!(forge::heads_of(many(FORGE_LIST_MAX as u64).as_bytes()).len(), FORGE_LIST_MAX);
        assert_eq!(forge::heads_of(many(FORGE_LIST_MAX as u64 + 1).as_bytes()).len(), FORGE_LIST_MAX);
    }

    #[test]
    fn checklist_owed_of_nothing_is_nothing() {
        let (owed, looks) = checklist_owed(&[], Timestamp::UNIX_EPOCH);
        assert!(owed.is_empty() && looks.is_empty());
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["-c".into(), script.into()]
    }

    #[test]
    fn a_child_is_read_up_to_the_cap_and_killed_past_it() {
        let far = Instant::now() + Duration::from_secs(30);
        let dir = Path::new("/");
        let ran = run_bounded(OsStr::new("/bin/sh"), &sh("printf 12345"), dir, far, 5).unwrap();
        assert_eq!((ran.code, ran.out.as_slice()), (Some(0), b"12345".as_slice()));
        assert_eq!(run_bounded(OsStr::new("/bin/sh"), &sh("printf 123456"), dir, far, 5).unwrap_err(), RunFail::TooLong);
        // An endless printer is stopped at the cap, not at the deadline.
        let started = Instant::now();
        assert_eq!(run_bounded(OsStr::new("/bin/sh"), &sh("yes"), dir, far, 1 << 16).unwrap_err(), RunFail::TooLong);
        assert!(started.elapsed() < Duration::from_secs(20), "stopped at the cap, not the 30 s deadline");
    }

    #[test]
    fn a_hung_child_and_what_it_started_are_killed_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!("sleep 60 & echo $! > '{}'; wait", pid_file.display());
        let started = Instant::now();
        let got = run_bounded(OsStr::new("/bin/sh"), &sh(&script), dir.path(), started + Duration::from_millis(400), 1024);
        assert_eq!(got.unwrap_err(), RunFail::Deadline);
        assert!(started.elapsed() < Duration::from_secs(20), "killed at the deadline, not after the 60 s sleep: {:?}", started.elapsed());
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        // The grandchild is dead too: gone, or a zombie waiting for whatever reaps orphans
        // here (this sandbox's pid 1 reaps them only every second or two, so asking whether
        // the pid exists made the test flaky under load).
        let dead = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))),
        };
        let gone = (0..100).any(|_| {
            let dead = dead();
            if !dead {
                std::thread::sleep(Duration::from_millis(20));
            }
            dead
        });
        assert!(gone, "the sleep the child started survived the kill");
    }

    #[test]
    fn a_spent_deadline_starts_nothing_and_a_missing_program_is_a_spawn_failure() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let script = format!("touch '{}'", marker.display());
        let got = run_bounded(OsStr::new("/bin/sh"), &sh(&script), dir.path(), Instant::now(), 1024);
        assert_eq!(got.unwrap_err(), RunFail::Deadline);
        assert!(!marker.exists());
        let far = Instant::now() + Duration::from_secs(30);
        let got = run_bounded(OsStr::new("/nonexistent/abcd-no-such-program"), &sh(""), dir.path(), far, 1024);
        assert!(matches!(got, Err(RunFail::Spawn(_))));
    }

    #[test]
    fn the_child_sees_no_stdin_and_prompts_off() {
        let far = Instant::now() + Duration::from_secs(30);
        let ran = run_bounded(
            OsStr::new("/bin/sh"),
            &sh("cat; printf '%s %s' \"$GIT_TERMINAL_PROMPT\" \"$GH_PROMPT_DISABLED\""),
            Path::new("/"),
            far,
            1024,
        )
        .unwrap();
        assert_eq!(String::from_utf8(ran.out).unwrap(), "0 1");
    }
}
