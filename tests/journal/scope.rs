//! Issue 31, "scope, without locking anyone out" (journal-format/SPEC.md §11): a journal
//! whose genesis names another repository, or another checkout's working copy, is never
//! accepted by `abcd journal repair` nor by a reader; repair sets it aside whole and says
//! how to put it back. A working copy the person moved (`mv`, reached through a symlink,
//! `git worktree move`) keeps its journal, with the move recorded as `journal.moved`.
//! Everything through the binary, with real git, one home store (one machine).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::repo::{self, text};
use serde_json::Value;

/// A temp folder holding the home store and the checkouts of one test.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Machine {
        Machine { dir: tempfile::tempdir().unwrap() }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join("home")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join(name)
    }

    /// A new repository `name` (its first commit unlike any other's), managed by abcd.
    fn repository(&self, name: &str) -> PathBuf {
        let root = self.path(name);
        repo::create(&root, &[("README", &format!("the {name} repository\n"))]);
        repo::abcd_init(&root, &self.home());
        root
    }

    fn abcd(&self, cwd: &Path, args: &[&str]) -> Output {
        repo::abcd(cwd, &self.home()).args(args).output().unwrap()
    }

    fn ok(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.abcd(cwd, args);
        assert!(out.status.success(), "abcd {args:?} in {}: {}", cwd.display(), text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The context the session-start hook gives a session whose host says it runs in `cwd`.
    fn session_start(&self, cwd: &Path) -> String {
        let payload = serde_json::json!({"session_id": "s1", "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"});
        let mut child = repo::abcd(cwd, &self.home())
            .args(["hook", "session-start"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a hook fails open: {}", text(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_default().to_string()
    }

    fn titles(&self, cwd: &Path) -> Vec<String> {
        let v: Value = serde_json::from_str(&self.ok(cwd, &["checklist", "--json"])).unwrap();
        v["items"].as_array().unwrap().iter().map(|i| i["title"].as_str().unwrap().to_string()).collect()
    }
}

fn root_commit(root: &Path) -> String {
    repo::git(root, &["rev-list", "--max-parents=0", "HEAD"]).trim().to_string()
}

fn wc_journal(root: &Path) -> PathBuf {
    root.join(".abcd/.work.local/journal.jsonl")
}

fn events(journal: &Path) -> Vec<Value> {
    std::fs::read_to_string(journal).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn quarantined(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir.join("quarantine")) else { return vec![] };
    rd.map(|e| e.unwrap().path()).filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix)).collect()
}

/// The reproduction: repository a's repository journal copied over b's. `abcd mode`
/// in b refuses; `abcd journal repair --repo` in b used to accept it, and a's away window
/// then governed b. Now repair sets a's journal aside whole, names whose it is and how to
/// put it back, starts b's record afresh on the record, and b is not away.
#[test]
fn another_repositorys_journal_copied_over_is_set_aside_and_never_governs() {
    let m = Machine::new();
    let (a, b) = (m.repository("a"), m.repository("b"));
    m.ok(&a, &["mode", "autonomous", "--until", "+8h"]);
    m.ok(&b, &["decide", "b decides its own things", "--grounds", "b's", "--undo", "nothing"]);
    let (ra, rb) = (root_commit(&a), root_commit(&b));
    assert_ne!(ra, rb);
    let a_journal = m.home().join("repos").join(&ra).join("journal.jsonl");
    let b_journal = m.home().join("repos").join(&rb).join("journal.jsonl");
    let copied = std::fs::read(&a_journal).unwrap();
    std::fs::write(&b_journal, &copied).unwrap();

    let out = m.abcd(&b, &["mode"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));

    let out = m.abcd(&b, &["journal", "repair", "--repo"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("this is the journal of repository {ra}")) && said.contains(&format!("not of repository {rb}")),
        "{said}"
    );
    assert!(said.contains("set aside") && said.contains("mv -n") && said.contains(&a_journal.display().to_string()), "{said}");
    assert!(said.contains("started a new journal here"), "b's own journal was lost to the copy, on the record: {said}");
    let aside = quarantined(b_journal.parent().unwrap(), "foreign-");
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read(&aside[0]).unwrap(), copied, "a's journal is kept whole");

    let status: Value = serde_json::from_str(&m.ok(&b, &["mode", "--json"])).unwrap();
    assert_ne!(status["status"], "away", "a's away window does not govern b: {status}");
    let b_events = events(&b_journal);
    assert!(b_events.iter().all(|e| e["kind"] != "away.set"), "{b_events:?}");
    let problem = b_events[1]["data"]["problem"].as_str().unwrap();
    assert!(problem.contains(&format!("of repository {ra} was found in its place and set aside to quarantine/foreign-")), "{problem}");
    let status: Value = serde_json::from_str(&m.ok(&a, &["mode", "--json"])).unwrap();
    assert_eq!(status["status"], "away", "a's own record is untouched: {status}");
    assert_eq!(std::fs::read(&a_journal).unwrap(), copied);
}

/// Readers refuse another repository's journal by its genesis alone, also where the home
/// store has no record of the path (a fresh home store, `anchors/` lost): `abcd mode` and the
/// away record a hook reads.
#[test]
fn readers_refuse_another_repositorys_journal_without_any_path_record() {
    let m = Machine::new();
    let (a, b) = (m.repository("a"), m.repository("b"));
    m.ok(&a, &["mode", "autonomous", "--until", "+8h"]);
    let (ra, rb) = (root_commit(&a), root_commit(&b));
    let b_dir = m.home().join("repos").join(&rb);
    std::fs::create_dir_all(&b_dir).unwrap();
    std::fs::copy(m.home().join("repos").join(&ra).join("journal.jsonl"), b_dir.join("journal.jsonl")).unwrap();
    std::fs::remove_dir_all(m.home().join("anchors/paths")).unwrap();

    let out = m.abcd(&b, &["mode"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains(&format!("this is the journal of repository {ra}")) && said.contains("abcd journal repair"), "{said}");
    let out = m.abcd(&b, &["journal", "verify", "--repo"]);
    assert_eq!(out.status.code(), Some(1), "verify names it: {}", text(&out));
    assert!(text(&out).contains("scope:   FOREIGN: this is the journal of repository"), "{}", text(&out));
    let context = m.session_start(&b);
    assert!(!context.contains("AWAY") && !context.to_lowercase().contains("the person is away"), "{context}");
    // Nothing was chained onto it.
    let out = m.abcd(&b, &["decide", "x", "--grounds", "y", "--undo", "z"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains(&format!("this is the journal of repository {ra}")), "{}", text(&out));

    let out = m.abcd(&b, &["journal", "repair", "--repo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!b_dir.join("journal.jsonl").exists(), "set aside, and no record named a journal here to start afresh");
    m.ok(&b, &["decide", "b's first", "--grounds", "y", "--undo", "z"]);
    let status: Value = serde_json::from_str(&m.ok(&b, &["mode", "--json"])).unwrap();
    assert_ne!(status["status"], "away", "{status}");
}

/// Two checkouts of one repository on one machine: the first's working copy journal copied
/// into the second, which never had one (so no path record) and which already had one.
/// Readers and the hook refuse it, and repair sets it aside; the first keeps its own.
#[test]
fn a_working_copy_journal_copied_from_another_checkout_is_refused_and_set_aside() {
    let m = Machine::new();
    let first = m.repository("first");
    m.ok(&first, &["checklist", "add", "first's item"]);
    for second_had_one in [false, true] {
        let second = m.path(&format!("second-{second_had_one}"));
        repo::git(&m.path(""), &["clone", "-q", &first.display().to_string(), &second.display().to_string()]);
        repo::abcd_init(&second, &m.home());
        if second_had_one {
            m.ok(&second, &["checklist", "add", "second's item"]);
        }
        std::fs::create_dir_all(wc_journal(&second).parent().unwrap()).unwrap();
        std::fs::copy(wc_journal(&first), wc_journal(&second)).unwrap();

        let out = m.abcd(&second, &["checklist"]);
        let said = text(&out);
        assert!(!said.contains("first's item"), "{second_had_one}: {said}");
        assert!(said.contains("degraded"), "{second_had_one}: {said}");
        if !second_had_one {
            assert!(said.contains(&format!("this is the journal of working copy {}", first.display())), "{said}");
            assert!(said.contains("still holds it"), "{said}");
            let context = m.session_start(&second);
            assert!(!context.contains("first's item") && context.contains("this is the journal of working copy"), "{context}");
        }
        let out = m.abcd(&second, &["checklist", "add", "more"]);
        assert_eq!(out.status.code(), Some(2), "{second_had_one}: {}", text(&out));

        let out = m.abcd(&second, &["journal", "repair"]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(0), "{second_had_one}: {said}");
        assert!(said.contains(&format!("this is the journal of working copy {}", first.display())) && said.contains("set aside"), "{said}");
        let aside = quarantined(wc_journal(&second).parent().unwrap(), "foreign-");
        assert_eq!(aside.len(), 1, "{aside:?}");
        assert_eq!(std::fs::read(&aside[0]).unwrap(), std::fs::read(wc_journal(&first)).unwrap());
        m.ok(&second, &["checklist", "add", "second's next"]);
        assert_eq!(m.titles(&second), ["second's next"], "{second_had_one}");
        assert_eq!(m.titles(&first), ["first's item"], "the first checkout keeps its journal");
        let out = m.abcd(&second, &["journal", "verify"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
}

/// What each move of a checkout leaves: the root the journal was made at, and the root it
/// is reached at now (where abcd runs, and the canonical root the move is recorded to).
enum Move {
    /// `mv` of the whole checkout.
    Mv,
    /// `mv`, with a symlink left at the old place, and abcd run through the symlinked path.
    Symlinked,
    /// `git worktree move` of a linked worktree.
    GitWorktree,
}

impl Move {
    /// Sets up a checkout with two items, moves it, and returns (old root, the path abcd
    /// is run from, the canonical new root).
    fn apply(&self, m: &Machine) -> (PathBuf, PathBuf, PathBuf) {
        let main = m.repository("main");
        let old = match self {
            Move::GitWorktree => {
                let lane = m.path("lane");
                repo::git(&main, &["worktree", "add", "-q", "-b", "lane", &lane.display().to_string()]);
                lane
            }
            _ => main.clone(),
        };
        for title in ["one", "two"] {
            m.ok(&old, &["checklist", "add", title]);
        }
        match self {
            Move::Mv => {
                let new = m.path("moved");
                std::fs::rename(&old, &new).unwrap();
                (old, new.clone(), new)
            }
            Move::Symlinked => {
                let new = m.path("real");
                std::fs::rename(&old, &new).unwrap();
                std::os::unix::fs::symlink(&new, &old).unwrap();
                (old.clone(), old, new)
            }
            Move::GitWorktree => {
                let new = m.path("lane-moved");
                repo::git(&main, &["worktree", "move", &old.display().to_string(), &new.display().to_string()]);
                (old, new.clone(), new)
            }
        }
    }
}

/// Each move keeps the journal: readers show it as it was (not refused, no degraded note),
/// the first append records `journal.moved` from the old root to the new, once, and
/// verify, replay and later appends go on.
#[test]
fn a_moved_working_copy_keeps_its_journal_with_the_move_recorded() {
    for (name, how) in [("mv", Move::Mv), ("symlinked", Move::Symlinked), ("worktree move", Move::GitWorktree)] {
        let m = Machine::new();
        let (old, at, new) = how.apply(&m);
        let out = m.abcd(&at, &["checklist"]);
        let said = text(&out);
        assert!(out.status.success() && !said.contains("degraded"), "{name}: a reader takes it: {said}");
        let out = m.abcd(&at, &["journal", "verify"]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
        assert!(text(&out).contains("scope:   the working copy moved from"), "{name}: {}", text(&out));
        assert_eq!(m.titles(&at), ["one", "two"], "{name}");
        let context = m.session_start(&at);
        assert!(context.contains("one") && context.contains("two") && !context.contains("journal of"), "{name}: {context}");
        m.ok(&at, &["checklist", "add", "three"]);
        assert_eq!(m.titles(&at), ["one", "two", "three"], "{name}");

        let journal = wc_journal(&new);
        let moved: Vec<Value> = events(&journal).into_iter().filter(|e| e["kind"] == "journal.moved").collect();
        assert_eq!(moved.len(), 1, "{name}: the move recorded once: {moved:?}");
        assert_eq!(moved[0]["data"]["from"], old.display().to_string(), "{name}");
        assert_eq!(moved[0]["data"]["to"], new.display().to_string(), "{name}");
        let out = m.abcd(&at, &["journal", "verify"]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
        let replay = m.ok(&at, &["replay"]);
        assert!(replay.contains(&format!("the working copy moved from {} to {}", old.display(), new.display())), "{name}: {replay}");
        let out = m.abcd(&at, &["journal", "repair"]);
        assert!(text(&out).contains("nothing to repair"), "{name}: {}", text(&out));
    }
}

/// A repair run in a moved checkout (its journal damaged) salvages it and records the move
/// in the same run, instead of setting the journal aside.
#[test]
fn repair_in_a_moved_checkout_keeps_the_journal_and_records_the_move() {
    let m = Machine::new();
    let (old, at, new) = Move::Mv.apply(&m);
    let journal = wc_journal(&new);
    let mut lines: Vec<String> = std::fs::read_to_string(&journal).unwrap().lines().map(str::to_string).collect();
    lines[1] = lines[1].replacen("\"one\"", "\"onE\"", 1);
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let out = m.abcd(&at, &["journal", "repair"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("salvaged") && !said.contains("set aside"), "{said}");
    assert!(said.contains(&format!("the working copy moved from {} to {}", old.display(), new.display())), "{said}");
    assert_eq!(m.titles(&at), ["two"]);
    let out = m.abcd(&at, &["journal", "verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}
