//! A lane worktree's uncommitted work saved aside, the lane returned to its last commit,
//! the work restored, and base drift (SPEC §7), against real repositories in temp dirs.
//! The verification's failure path is a unit test in `src/ledger/worktree.rs`, which can
//! swap the built commit for one missing a file.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use abcd::git::worktree::{
    BaseDrift, DriftCounts, LISTING_PARALLEL, NAME_LEN_MAX, WorktreeError, base_drift, drift_key, listing_facts, return_to_last_commit,
    save_aside, status,
};
use common::repo;
use jiff::Timestamp;

/// No path is abcd's own in these bare repositories.
const NOTHING_KEPT: &dyn Fn(&str) -> bool = &|_| false;

/// No global or system git config for the whole binary (abcd's children included), set
/// before any test starts a child: every test calls this first, and the `OnceLock` makes
/// the others wait until it is done.
fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        // SAFETY: done once, before this binary's tests start any child or read these
        // variables; other tests block on the OnceLock until it returns.
        unsafe {
            std::env::set_var("GIT_CONFIG_GLOBAL", "/dev/null");
            std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        }
    });
}

/// Runs git for the test; optional locks off so the test's own reads never rewrite an
/// index it compares.
fn git(dir: &Path, args: &[&str]) -> String {
    repo::git_with(dir, args, &[("GIT_OPTIONAL_LOCKS", "0")]).trim_end().to_string()
}

fn now() -> Timestamp {
    "2026-11-04T10:00:00Z".parse().unwrap()
}

fn write(root: &Path, rel: &str, body: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

/// Which kind of lane a test works in.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Main,
    Linked,
}

/// A repository with `keep.txt`, `mod.txt`, `gone.txt` and `.gitignore` (`*.log`)
/// committed, and the lane (the main worktree or a linked one on branch `lane-a`) holding
/// a modified file, a staged new file, an untracked file in a subfolder, a deleted file and
/// an ignored file.
struct Lab {
    _dir: tempfile::TempDir,
    lane: PathBuf,
}

const CHANGED: [&str; 4] = ["dir/sub/untracked.txt", "gone.txt", "mod.txt", "staged.txt"];

fn lab(kind: Kind) -> Lab {
    setup();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    repo::init(&repo);
    write(&repo, "keep.txt", "keep\n");
    write(&repo, "mod.txt", "one\n");
    write(&repo, "gone.txt", "bye\n");
    write(&repo, ".gitignore", "*.log\n");
    repo::commit_all(&repo, "init");
    let lane = match kind {
        Kind::Main => repo,
        Kind::Linked => {
            let lane = dir.path().join("lanes").join("lane-a");
            git(&repo, &["worktree", "add", "-q", "-b", "lane-a", lane.to_str().unwrap()]);
            lane
        }
    };
    write(&lane, "mod.txt", "one\ntwo\n");
    write(&lane, "staged.txt", "staged\n");
    git(&lane, &["add", "staged.txt"]);
    write(&lane, "dir/sub/untracked.txt", "untracked\n");
    std::fs::remove_file(lane.join("gone.txt")).unwrap();
    write(&lane, "build.log", "ignored\n");
    // Same content, newer time: a git that may refresh the index (optional locks on) would
    // rewrite it here, which the save must not.
    let later = std::time::SystemTime::try_from(abcd::clock::wall_now()).unwrap() + std::time::Duration::from_secs(5);
    std::fs::File::options().write(true).open(lane.join("keep.txt")).unwrap().set_modified(later).unwrap();
    Lab { _dir: dir, lane }
}

/// Every file under `root` but `.git`, with its bytes (a symlink as its target's text).
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_str().unwrap().to_string();
            let kind = entry.file_type().unwrap();
            if rel == ".git" {
                continue;
            }
            if kind.is_symlink() {
                out.insert(format!("{rel} ->"), std::fs::read_link(&path).unwrap().into_os_string().into_encoded_bytes());
            } else if kind.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The lane's real index bytes, its porcelain status and its files.
fn snapshot(lane: &Path) -> (Vec<u8>, String, BTreeMap<String, Vec<u8>>) {
    let index = git(lane, &["rev-parse", "--path-format=absolute", "--git-path", "index"]);
    let bytes = std::fs::read(&index).unwrap();
    (bytes, git(lane, &["status", "--porcelain=v2", "--untracked-files=all"]), files(lane))
}

fn saved_refs(lane: &Path) -> Vec<String> {
    let out = git(lane, &["for-each-ref", "--format=%(refname) %(objectname)", "refs/abcd/"]);
    out.lines().map(str::to_string).collect()
}

fn check_save_holds_exactly_the_changes(kind: Kind) {
    let lab = lab(kind);
    let before = snapshot(&lab.lane);
    let head = git(&lab.lane, &["rev-parse", "HEAD"]);

    let saved = save_aside(&lab.lane, "run-1", "lane-a", now(), NOTHING_KEPT).unwrap();

    assert_eq!(saved.files, CHANGED, "{kind:?}");
    assert_eq!(saved.ref_name, "refs/abcd/saved/run-1/lane-a/20261104T100000000Z");
    assert_eq!(git(&lab.lane, &["rev-parse", &saved.ref_name]), saved.commit);
    assert_eq!(git(&lab.lane, &["rev-parse", &format!("{}^@", saved.commit)]), head, "its one parent is HEAD");
    let diff = git(&lab.lane, &["diff", "--no-renames", "--name-status", "HEAD", &saved.commit]);
    assert_eq!(diff, "A\tdir/sub/untracked.txt\nD\tgone.txt\nM\tmod.txt\nA\tstaged.txt", "{kind:?}");
    let tree = git(&lab.lane, &["ls-tree", "-r", "--name-only", &saved.commit]);
    assert_eq!(tree, ".gitignore\ndir/sub/untracked.txt\nkeep.txt\nmod.txt\nstaged.txt", "no ignored file, no deleted one");
    assert_eq!(git(&lab.lane, &["show", &format!("{}:mod.txt", saved.commit)]), "one\ntwo");
    assert_eq!(git(&lab.lane, &["show", &format!("{}:dir/sub/untracked.txt", saved.commit)]), "untracked");

    let after = snapshot(&lab.lane);
    assert!(before.0 == after.0, "{kind:?}: the real index's bytes changed");
    assert_eq!(before.1, after.1, "{kind:?}: git status changed");
    assert_eq!(before.2, after.2, "{kind:?}: the work tree changed");
}

#[test]
fn save_aside_holds_exactly_the_changes_and_touches_nothing() {
    check_save_holds_exactly_the_changes(Kind::Main);
}

#[test]
fn a_linked_worktree_saves_exactly_the_changes_and_touches_nothing() {
    check_save_holds_exactly_the_changes(Kind::Linked);
}

fn check_return_then_restore(kind: Kind) {
    let lab = lab(kind);
    let (_, _, before) = snapshot(&lab.lane);
    let saved = save_aside(&lab.lane, "run-1", "lane-a", now(), NOTHING_KEPT).unwrap();

    return_to_last_commit(&lab.lane, &saved.files, NOTHING_KEPT).unwrap();
    let st = status(&lab.lane).unwrap();
    assert_eq!(st.changed, Vec::<String>::new(), "{kind:?}");
    assert_eq!(std::fs::read_to_string(lab.lane.join("build.log")).unwrap(), "ignored\n", "ignored files stay");
    assert_eq!(std::fs::read_to_string(lab.lane.join("mod.txt")).unwrap(), "one\n");
    assert!(lab.lane.join("gone.txt").exists() && !lab.lane.join("staged.txt").exists() && !lab.lane.join("dir").exists());

    // The person's command, run as a person would: through a shell, from elsewhere.
    let out = Command::new("sh").arg("-c").arg(&saved.restore_command).current_dir("/").output().unwrap();
    assert!(out.status.success(), "{}: {}", saved.restore_command, String::from_utf8_lossy(&out.stderr));
    assert_eq!(files(&lab.lane), before, "{kind:?}: every change is back, the deletion too");
    let mut back = status(&lab.lane).unwrap().changed;
    back.sort();
    assert_eq!(back, CHANGED);
}

#[test]
fn returning_clears_the_lane_and_the_restore_command_brings_all_back() {
    check_return_then_restore(Kind::Main);
}

#[test]
fn a_linked_worktree_returns_and_restores_the_same() {
    check_return_then_restore(Kind::Linked);
}

#[test]
fn status_names_head_branch_kind_and_changes() {
    let main = lab(Kind::Main);
    let st = status(&main.lane).unwrap();
    assert!(!st.is_worktree, "the main working tree is not a linked worktree");
    assert_eq!(st.branch.as_deref(), Some("main"));
    assert_eq!(st.head, Some(git(&main.lane, &["rev-parse", "HEAD"])));
    assert_eq!(st.changed, CHANGED);

    let linked = lab(Kind::Linked);
    let st = status(&linked.lane).unwrap();
    assert!(st.is_worktree);
    assert_eq!(st.branch.as_deref(), Some("lane-a"));
    git(&linked.lane, &["checkout", "-q", "--detach"]);
    assert_eq!(status(&linked.lane).unwrap().branch, None, "detached");
}

#[test]
fn a_second_save_at_the_same_time_never_overwrites_the_first() {
    let lab = lab(Kind::Main);
    let first = save_aside(&lab.lane, "run-1", "lane-a", now(), NOTHING_KEPT).unwrap();
    write(&lab.lane, "mod.txt", "one\ntwo\nthree\n");
    let second = save_aside(&lab.lane, "run-1", "lane-a", now(), NOTHING_KEPT).unwrap();
    assert_eq!(second.ref_name, format!("{}-2", first.ref_name));
    assert_ne!(second.commit, first.commit);
    assert_eq!(git(&lab.lane, &["rev-parse", &first.ref_name]), first.commit, "the first ref is untouched");
    assert_eq!(git(&lab.lane, &["show", &format!("{}:mod.txt", second.ref_name)]), "one\ntwo\nthree");
    let third = save_aside(&lab.lane, "run-1", "lane-a", now(), NOTHING_KEPT).unwrap();
    assert_eq!(third.ref_name, format!("{}-3", first.ref_name));
    assert_eq!(saved_refs(&lab.lane).len(), 3);
}

#[test]
fn a_folder_that_is_no_worktree_root_is_refused() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let missing = dir.path().join("missing");
    for path in [&plain, &missing] {
        assert!(matches!(status(path), Err(WorktreeError::NotAWorktree { .. })), "{}", path.display());
        assert!(matches!(save_aside(path, "r", "l", now(), NOTHING_KEPT), Err(WorktreeError::NotAWorktree { .. })));
        assert!(matches!(return_to_last_commit(path, &[], NOTHING_KEPT), Err(WorktreeError::NotAWorktree { .. })));
        assert!(matches!(base_drift(path), Err(WorktreeError::NotAWorktree { .. })));
    }
    // A folder inside a work tree is not a lane: resetting it would reset the checkout
    // around it.
    let lab = lab(Kind::Main);
    let err = return_to_last_commit(&lab.lane.join("dir"), &[], NOTHING_KEPT).unwrap_err();
    assert!(matches!(err, WorktreeError::NotAWorktree { .. }), "{err}");
    assert!(err.to_string().contains("not at its root"), "{err}");
    assert_eq!(status(&lab.lane).unwrap().changed, CHANGED, "nothing was reset");
}

#[test]
fn a_clean_worktree_has_nothing_to_save() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    repo::init(dir.path());
    write(dir.path(), "a.txt", "a\n");
    write(dir.path(), ".gitignore", "*.log\n");
    repo::commit_all(dir.path(), "init");
    write(dir.path(), "only-ignored.log", "x\n");
    let err = save_aside(dir.path(), "r", "l", now(), NOTHING_KEPT).unwrap_err();
    assert!(matches!(err, WorktreeError::NothingToSave { .. }), "{err}");
    assert!(saved_refs(dir.path()).is_empty());
    return_to_last_commit(dir.path(), &[], NOTHING_KEPT).unwrap();
    assert!(dir.path().join("only-ignored.log").exists());
}

#[test]
fn a_branch_with_no_commit_cannot_be_saved() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    repo::init(dir.path());
    write(dir.path(), "a.txt", "a\n");
    let st = status(dir.path()).unwrap();
    assert_eq!((st.head, st.changed), (None, vec!["a.txt".to_string()]));
    assert!(matches!(save_aside(dir.path(), "r", "l", now(), NOTHING_KEPT), Err(WorktreeError::NoCommit { .. })));
}

#[test]
fn a_nested_repository_is_refused_rather_than_half_saved() {
    let lab = lab(Kind::Main);
    let nested = lab.lane.join("vendor/nested");
    repo::init(&nested);
    write(&nested, "inner.txt", "inner\n");
    repo::commit_all(&nested, "inner");
    let err = save_aside(&lab.lane, "r", "l", now(), NOTHING_KEPT).unwrap_err();
    match &err {
        WorktreeError::CannotHold { path, .. } => assert_eq!(path, "vendor/nested/"),
        other => panic!("expected CannotHold, got {other:?}"),
    }
    assert!(saved_refs(&lab.lane).is_empty());
}

#[test]
fn a_file_turned_folder_a_symlink_and_odd_names_round_trip() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    let wt = dir.path().join("odd lane's tree");
    repo::init(&wt);
    write(&wt, "a", "file a\n");
    write(&wt, "b/inner.txt", "inner\n");
    write(&wt, "*.txt", "a star\n");
    repo::commit_all(&wt, "init");
    std::fs::remove_file(wt.join("a")).unwrap();
    write(&wt, "a/now-a-folder.txt", "folder\n");
    std::fs::remove_dir_all(wt.join("b")).unwrap();
    write(&wt, "b", "now a file\n");
    std::os::unix::fs::symlink("a/now-a-folder.txt", wt.join("link")).unwrap();
    write(&wt, "*.txt", "a star, changed\n");
    write(&wt, "sp ace/ü.txt", "unicode\n");
    let before = files(&wt);

    let saved = save_aside(&wt, "run.2", "lane_b", now(), NOTHING_KEPT).unwrap();
    assert_eq!(saved.files, ["*.txt", "a", "a/now-a-folder.txt", "b", "b/inner.txt", "link", "sp ace/ü.txt"]);
    assert_eq!(git(&wt, &["cat-file", "-p", &format!("{}:link", saved.commit)]), "a/now-a-folder.txt");
    assert!(git(&wt, &["ls-tree", &saved.commit, "link"]).starts_with("120000 "));

    return_to_last_commit(&wt, &saved.files, NOTHING_KEPT).unwrap();
    assert_eq!(std::fs::read_to_string(wt.join("a")).unwrap(), "file a\n");
    let out = Command::new("sh").arg("-c").arg(&saved.restore_command).output().unwrap();
    assert!(out.status.success(), "{}: {}", saved.restore_command, String::from_utf8_lossy(&out.stderr));
    assert_eq!(files(&wt), before);
}

#[test]
fn bad_names_are_refused_before_any_git_runs() {
    setup();
    // No such folder: had git run, the answer would be NotAWorktree.
    let nowhere = Path::new("/nonexistent/abcd-lane");
    let long = "x".repeat(NAME_LEN_MAX + 1);
    for (run, lane) in [
        ("a/b", "l"),
        ("r", ".."),
        (long.as_str(), "l"),
        ("r", long.as_str()),
        ("", "l"),
        ("r", ".hidden"),
        ("r", "x.lock"),
        ("-r", "l"),
        ("r", "a b"),
    ] {
        let err = save_aside(nowhere, run, lane, now(), NOTHING_KEPT).unwrap_err();
        assert!(matches!(err, WorktreeError::BadName { .. }), "{run:?}/{lane:?}: {err}");
    }
    let ok = "x".repeat(NAME_LEN_MAX);
    assert!(matches!(save_aside(nowhere, &ok, "a.b_c-1", now(), NOTHING_KEPT), Err(WorktreeError::NotAWorktree { .. })));
}

/// A bare `origin` with one commit on `main` (pushed from `seed`), a clone `wc` of it, and
/// a linked worktree `lane` on a new branch at `origin/main`. The temp dir is returned to
/// be kept alive.
fn origin_clone_and_lane() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let origin = dir.path().join("origin.git");
    git(dir.path(), &["init", "-q", "--bare", "-b", "main", origin.to_str().unwrap()]);
    let seed = dir.path().join("seed");
    repo::init(&seed);
    write(&seed, "a.txt", "a\n");
    repo::commit_all(&seed, "first");
    git(&seed, &["remote", "add", "origin", origin.to_str().unwrap()]);
    git(&seed, &["push", "-q", "origin", "main"]);
    let wc = dir.path().join("wc");
    git(dir.path(), &["clone", "-q", origin.to_str().unwrap(), wc.to_str().unwrap()]);
    let lane = dir.path().join("lane");
    git(&wc, &["worktree", "add", "-q", "-b", "lane-a", lane.to_str().unwrap(), "origin/main"]);
    (dir, seed, wc, lane)
}

#[test]
fn base_drift_counts_the_default_branchs_commits_the_lane_lacks() {
    setup();
    let (_dir, seed, wc, lane) = origin_clone_and_lane();
    let origin_main = || Some(BaseDrift { default_ref: "refs/remotes/origin/main".into(), behind: 0 });
    assert_eq!(base_drift(&lane).unwrap(), origin_main());

    for n in 0..3 {
        write(&seed, "a.txt", &format!("a{n}\n"));
        repo::commit_all(&seed, &format!("upstream {n}"));
    }
    git(&seed, &["push", "-q", "origin", "main"]);
    assert_eq!(base_drift(&lane).unwrap(), origin_main(), "nothing is fetched: the last fetch counts");
    git(&wc, &["fetch", "-q", "origin"]);
    assert_eq!(base_drift(&lane).unwrap().unwrap().behind, 3);
    assert_eq!(base_drift(&wc).unwrap().unwrap().behind, 3, "the main checkout's main is behind too");

    // Without origin/HEAD, origin/main is still found.
    git(&wc, &["remote", "set-head", "origin", "--delete"]);
    assert_eq!(base_drift(&lane).unwrap().unwrap().default_ref, "refs/remotes/origin/main");
}

#[test]
fn base_drift_falls_back_to_the_local_default_or_says_none() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    repo::init(dir.path());
    write(dir.path(), "a.txt", "a\n");
    repo::commit_all(dir.path(), "first");
    git(dir.path(), &["checkout", "-q", "-b", "lane-a"]);
    git(dir.path(), &["checkout", "-q", "main"]);
    for n in 0..2 {
        write(dir.path(), "a.txt", &format!("a{n}\n"));
        repo::commit_all(dir.path(), &format!("main {n}"));
    }
    git(dir.path(), &["checkout", "-q", "lane-a"]);
    assert_eq!(base_drift(dir.path()).unwrap(), Some(BaseDrift { default_ref: "refs/heads/main".into(), behind: 2 }));

    let none = tempfile::tempdir().unwrap();
    repo::init(none.path());
    git(none.path(), &["checkout", "-q", "-b", "trunk"]);
    write(none.path(), "a.txt", "a\n");
    repo::commit_all(none.path(), "first");
    assert_eq!(base_drift(none.path()).unwrap(), None, "no origin, no main or master");
}

/// The listing's one-child-per-worktree read answers what `status` and `base_drift` answer,
/// with the default branch read from loose and packed ref files alike.
#[test]
fn listing_facts_agree_with_status_and_base_drift() {
    setup();
    let (_dir, seed, wc, lane) = origin_clone_and_lane();
    for n in 0..3 {
        write(&seed, "a.txt", &format!("a{n}\n"));
        repo::commit_all(&seed, &format!("upstream {n}"));
    }
    git(&seed, &["push", "-q", "origin", "main"]);
    git(&wc, &["fetch", "-q", "origin"]);
    write(&lane, "new.txt", "new\n");
    write(&lane, "a.txt", "changed\n");

    let check = |why: &str| {
        let worktrees = vec![lane.clone(), wc.clone()];
        let (facts, measured) = listing_facts(&worktrees, &DriftCounts::new());
        for (w, f) in worktrees.iter().zip(facts) {
            let f = f.unwrap();
            assert_eq!(f.changed, status(w).unwrap().changed, "{why}: {}", w.display());
            assert_eq!(f.drift, base_drift(w).unwrap(), "{why}: {}", w.display());
        }
        // The lane and the checkout stand on the same commit against the same base.
        assert_eq!(measured.len(), 1, "{why}: one count per distinct (base, HEAD) pair");
    };
    check("loose refs");
    git(&wc, &["pack-refs", "--all"]);
    assert!(!wc.join(".git/refs/remotes/origin/main").exists(), "the ref now lives in packed-refs only");
    check("packed refs");
    git(&wc, &["remote", "set-head", "origin", "--delete"]);
    check("no origin/HEAD");
}

/// A repository `repo` with one commit on `main`, in a temp dir returned to be kept alive.
fn one_commit_repo() -> (tempfile::TempDir, PathBuf) {
    setup();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    repo::init(&repo);
    write(&repo, "a.txt", "a\n");
    repo::commit_all(&repo, "first");
    (dir, repo)
}

/// A known count is used as is (so the cache is what answers), an unknown pair is counted
/// and handed back, and a folder that is not a worktree is an error for that folder only.
#[test]
fn listing_facts_use_known_counts_and_name_a_folder_git_cannot_read() {
    let (dir, repo) = one_commit_repo();
    let head = git(&repo, &["rev-parse", "HEAD"]);
    git(&repo, &["checkout", "-q", "-b", "lane-a"]);
    let not_git = dir.path().join("plain");
    std::fs::create_dir_all(&not_git).unwrap();

    let (facts, measured) = listing_facts(&[repo.clone(), not_git.clone()], &DriftCounts::new());
    assert_eq!(facts[0].as_ref().unwrap().drift, Some(BaseDrift { default_ref: "refs/heads/main".into(), behind: 0 }));
    assert!(facts[1].is_err(), "a plain folder fails its git status");
    assert_eq!(measured, DriftCounts::from([(drift_key(&head, Some(&head)), 0)]));

    // A planted count for the same pair is what the listing shows: no rev-list ran.
    let planted = DriftCounts::from([(drift_key(&head, Some(&head)), 41)]);
    let (facts, measured) = listing_facts(std::slice::from_ref(&repo), &planted);
    assert_eq!(facts[0].as_ref().unwrap().drift.as_ref().unwrap().behind, 41);
    assert!(measured.is_empty());
}

/// More worktrees than are read at once: every one is answered, in order.
#[test]
fn listing_facts_read_more_worktrees_than_one_batch() {
    let (dir, repo) = one_commit_repo();
    let mut worktrees = vec![repo.clone()];
    for n in 0..LISTING_PARALLEL {
        let lane = dir.path().join(format!("lane-{n}"));
        git(&repo, &["worktree", "add", "-q", "-b", &format!("lane-{n}"), lane.to_str().unwrap()]);
        write(&lane, &format!("only-{n}.txt"), "x\n");
        worktrees.push(lane);
    }
    let (facts, _) = listing_facts(&worktrees, &DriftCounts::new());
    assert_eq!(facts.len(), LISTING_PARALLEL + 1);
    assert!(facts[0].as_ref().unwrap().changed.is_empty());
    for (n, f) in facts[1..].iter().enumerate() {
        assert_eq!(f.as_ref().unwrap().changed, vec![format!("only-{n}.txt")]);
    }
}

/// A base that cannot be measured (the default branch names an object that is not there)
/// is a note beside the drift; the worktree's uncommitted files still show.
#[test]
fn a_base_that_cannot_be_measured_never_hides_uncommitted_work() {
    setup();
    let (_dir, _seed, wc, lane) = origin_clone_and_lane();
    write(&lane, "new.txt", "new\n");
    write(&wc, ".git/refs/remotes/origin/main", "0123456789abcdef0123456789abcdef01234567\n");
    let (facts, measured) = listing_facts(std::slice::from_ref(&lane), &DriftCounts::new());
    let f = facts.into_iter().next().unwrap().expect("the status was read");
    assert_eq!(f.changed, vec!["new.txt".to_string()]);
    assert_eq!(f.drift, None);
    assert!(f.drift_problem.as_deref().is_some_and(|p| p.contains("rev-list")), "{:?}", f.drift_problem);
    assert!(measured.is_empty());
}
