//! The hints a refusal gives (issue 19): each names something the person can run where
//! they are. Outside a repository only the verbs that take `--journal` suggest it; a
//! repository with no commit is told to make one (and the command it names works); a time
//! abcd cannot read shows the forms it reads and the field's one limit.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::repo::{self, TestRepo};

/// The clock of the time tests, in UTC so the limits are counted from a fixed instant.
const NOW: &str = "2026-12-01T18:00:00Z";

fn abcd_in(dir: &Path, home: &Path, args: &[&str]) -> Output {
    repo::abcd(dir, home).args(args).env("ABCD_TEST_NOW", NOW).env("TZ", "UTC").output().expect("abcd runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Whether `abcd <verb…> --help` lists a `--journal` option.
fn takes_journal(dir: &Path, home: &Path, verb: &[&str]) -> bool {
    let out = abcd_in(dir, home, &[verb, &["--help"]].concat());
    assert!(out.status.success(), "{verb:?} --help");
    String::from_utf8_lossy(&out.stdout).contains("--journal")
}

#[test]
fn outside_a_repository_each_verb_suggests_what_it_can_take() {
    let dir = tempfile::tempdir().unwrap();
    let (here, home) = (dir.path().join("not-a-repo"), dir.path().join("home"));
    std::fs::create_dir_all(&here).unwrap();
    let without_journal: &[&[&str]] = &[
        &["checklist"],
        &["checklist", "add", "Write it"],
        &["mode"],
        &["mode", "autonomous"],
        &["decide", "x", "--grounds", "y", "--undo", "z"],
        &["run", "start", "r1", "--lane", "a"],
        &["loop", "status"],
    ];
    for verb in without_journal {
        let out = abcd_in(&here, &home, verb);
        assert_eq!(out.status.code(), Some(2), "{verb:?}: {}", stderr(&out));
        let said = stderr(&out);
        assert!(!said.contains("--journal"), "{verb:?} does not take --journal: {said}");
        assert!(
            said.contains("is not inside a git repository; cd into one (or make one here with `git init`), run `abcd init` there"),
            "{verb:?}: {said}"
        );
        let bare = if verb.len() > 1 && !verb[1].starts_with('-') && verb[0] != "decide" { &verb[..2] } else { &verb[..1] };
        assert!(!takes_journal(&here, &home, bare), "{bare:?}");
    }
    let init = abcd_in(&here, &home, &["init"]);
    assert_eq!(init.status.code(), Some(2));
    assert!(
        stderr(&init)
            .contains("is not inside a git repository; cd into one, or make this folder one with `git init`, and run `abcd init` again"),
        "{}",
        stderr(&init)
    );
    assert!(!stderr(&init).contains("--journal"));
    assert!(!takes_journal(&here, &home, &["init"]));
    for verb in [&["journal", "verify"][..], &["journal", "repair"], &["journal", "checkpoint"], &["replay"], &["replay", "--repo"]] {
        let out = abcd_in(&here, &home, verb);
        assert_eq!(out.status.code(), Some(2), "{verb:?}");
        assert!(
            stderr(&out).contains("is not inside a git repository; run this inside one, or name a journal file with --journal PATH"),
            "{verb:?}: {}",
            stderr(&out)
        );
        let bare = if verb[0] == "journal" { &verb[..2] } else { &verb[..1] };
        assert!(takes_journal(&here, &home, bare), "{bare:?}");
    }
}

#[test]
fn a_repository_with_no_commit_is_told_the_first_commit_to_make_and_it_works() {
    let dir = tempfile::tempdir().unwrap();
    let t = TestRepo { root: dir.path().join("wc"), home: dir.path().join("home"), dir };
    repo::init(&t.root);
    std::fs::write(t.root.join("notes.txt"), "mine, not staged\n").unwrap();
    repo::abcd_init(&t.root, &t.home);
    let hint = "has no commit yet, and abcd finds the repository's record by its first commit; make a first commit (`git commit --allow-empty -m 'first commit'`) and run this again";
    for verb in
        [&["mode", "autonomous"][..], &["mode"], &["decide", "x", "--grounds", "y", "--undo", "z"], &["journal", "verify", "--repo"]]
    {
        let out = abcd_in(&t.root, &t.home, verb);
        assert_eq!(out.status.code(), Some(2), "{verb:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(hint), "{verb:?}: {}", stderr(&out));
    }
    // The command as printed, pasted into a shell, makes the commit, and the verb then works.
    let said = stderr(&abcd_in(&t.root, &t.home, &["mode", "autonomous"]));
    let command = said.split('`').nth(1).unwrap();
    let pasted = std::process::Command::new("sh")
        .args(["-c", command])
        .current_dir(&t.root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(pasted.status.success(), "{command}: {}", stderr(&pasted));
    assert_eq!(repo::git(&t.root, &["log", "--format=%s"]), "first commit\n");
    assert_eq!(repo::git(&t.root, &["ls-files"]), "", "the first commit holds none of the person's files");
    let out = abcd_in(&t.root, &t.home, &["mode", "autonomous"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_time_abcd_cannot_read_is_refused_showing_the_forms_and_the_one_limit() {
    let t = TestRepo::new().managed();
    let forms = "must be a duration from now (+2h, +30m, +1h30m, +1d), a local clock time (09:00, its next occurrence) or an RFC 3339 time (2026-12-01T09:00:00Z)";
    for typed in ["2h", "9am", "tomorrow 09:00"] {
        let out = abcd_in(&t.root, &t.home, &["mode", "autonomous", "--until", typed]);
        assert_eq!(out.status.code(), Some(2), "{typed}");
        assert!(stderr(&out).contains(&format!("--until {forms}, at most 7 days ahead; nothing was written")), "{typed}: {}", stderr(&out));
        let out = abcd_in(&t.root, &t.home, &["checklist", "add", "Look", "--next-look", typed]);
        assert_eq!(out.status.code(), Some(2), "{typed}");
        assert!(stderr(&out).contains(&format!("next_look {forms}, at most 366 days ahead")), "{typed}: {}", stderr(&out));
    }
    // One limit for --until, in one wording, whatever the form; both sides of its edge.
    let too_far = "refused [bad-value]: mode autonomous: --until is too far ahead: it may be at most 7 days ahead; nothing was written";
    for typed in ["+7d1s", "+8d", "+400d", "2026-12-08T18:00:01Z"] {
        let out = abcd_in(&t.root, &t.home, &["mode", "autonomous", "--until", typed]);
        assert_eq!(out.status.code(), Some(2), "{typed}");
        assert!(stderr(&out).contains(too_far), "{typed}: {}", stderr(&out));
        assert!(!stderr(&out).contains("366"), "{typed}: {}", stderr(&out));
    }
    for typed in ["+7d", "2026-12-08T18:00:00Z"] {
        let out = abcd_in(&t.root, &t.home, &["mode", "autonomous", "--until", typed]);
        assert!(out.status.success(), "{typed}: {}", stderr(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("away until 2026-12-08 18:00"), "{typed}");
    }
    // The checklist's one limit, both sides.
    assert!(abcd_in(&t.root, &t.home, &["checklist", "add", "Look", "--next-look", "+366d"]).status.success());
    let out = abcd_in(&t.root, &t.home, &["checklist", "add", "Look", "--next-look", "+367d"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("next_look is too far ahead: it may be at most 366 days ahead"), "{}", stderr(&out));
}

/// A relative `ABCD_HOME` is refused by a verb (exit 2, saying what to set) and named by a
/// hook that lets the session through; no home store is made inside the checkout.
#[test]
fn a_relative_home_is_refused_not_made_inside_the_checkout() {
    let repo = TestRepo::new().managed();
    let out = abcd_in(&repo.root, &repo.home, &["checklist", "add", "An item"]).status;
    assert!(out.success(), "an absolute home works");
    let relative = Path::new("relative-home");
    let out = abcd_in(&repo.root, relative, &["checklist", "add", "Another"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("ABCD_HOME is \"relative-home\", a relative path; set it to an absolute one"), "{}", stderr(&out));
    let payload = format!(r#"{{"session_id":"s","cwd":"{}","hook_event_name":"SessionStart","source":"startup"}}"#, repo.root.display());
    let mut hook = repo::abcd(&repo.root, relative);
    hook.args(["hook", "session-start"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = hook.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "a hook fails open");
    assert!(stderr(&out).contains("a relative path"), "{}", stderr(&out));
    assert!(!repo.root.join("relative-home").exists(), "nothing made inside the checkout");
}

/// `abcd replay --projection NAME` names an unknown file it was asked for, unless the name
/// looks like a secret: a refusal never echoes one.
#[test]
fn an_unknown_derived_file_is_named_unless_it_is_a_secret() {
    let repo = TestRepo::new().managed();
    assert!(abcd_in(&repo.root, &repo.home, &["checklist", "add", "An item"]).status.success());
    let out = abcd_in(&repo.root, &repo.home, &["replay", "--projection", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no derived file named \"nope\"; the known ones: state, checklist"), "{}", stderr(&out));
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let out = abcd_in(&repo.root, &repo.home, &["replay", "--projection", token]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!stderr(&out).contains("ghp_0123") && stderr(&out).contains("not shown"), "{}", stderr(&out));
}
