//! The checklist through the real binary, in a throwaway working copy with its own home.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use abcd::journal::format::{self, Actor, NewEvent};
use abcd::journal::storage::{RealDisk, Storage};
use common::repo::{self, TestRepo};
use serde_json::{Value, json};

struct WorkingCopy {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl WorkingCopy {
    fn managed() -> WorkingCopy {
        let TestRepo { dir, root, home } = TestRepo::folder().managed();
        WorkingCopy { home, root, _dir: dir }
    }

    fn abcd(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_abcd")).args(args).current_dir(&self.root).env("ABCD_HOME", &self.home).output().unwrap()
    }

    fn tier(&self) -> PathBuf {
        self.root.join(".abcd/.work.local")
    }

    fn journal(&self) -> PathBuf {
        self.tier().join("journal.jsonl")
    }

    fn lines(&self) -> usize {
        std::fs::read(self.journal()).map(|b| b.iter().filter(|&&c| c == b'\n').count()).unwrap_or(0)
    }

    fn list(&self) -> Value {
        let out = self.abcd(&["checklist", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn titles(&self) -> Vec<String> {
        self.list()["items"].as_array().unwrap().iter().map(|i| i["title"].as_str().unwrap().to_string()).collect()
    }

    /// Every byte abcd left on disk for this working copy and home.
    fn all_files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if let Ok(b) = std::fs::read(&p) {
                    out.push((p, b));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.tier(), &mut out);
        walk(&self.home, &mut out);
        out
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn items_round_trip_through_the_verbs() {
    let wc = WorkingCopy::managed();
    let out = wc.abcd(&[
        "checklist",
        "add",
        "Ship the login fix",
        "--promise",
        "ci:feat/login green => merge",
        "--owner-ref",
        "feat/login",
        "--owner-ref",
        "pr:12",
        "--next-look",
        "2026-12-01T09:00:00Z",
        "--credential-kind",
        "github_token",
        "--credential-scope",
        "repo",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
    let out = wc.abcd(&["checklist", "add", "Wait for review", "--waits-on", "person:reviewer", "--json"]);
    let added: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(added["id"], "2");

    let show: Value = serde_json::from_slice(&wc.abcd(&["checklist", "show", "1", "--json"]).stdout).unwrap();
    assert_eq!(show["title"], "Ship the login fix");
    assert_eq!(show["state"], "working");
    assert_eq!(show["promise"], "ci:feat/login green => merge");
    assert_eq!(show["owner_refs"], json!(["feat/login", "pr:12"]));
    assert_eq!(show["next_look"], "2026-12-01T09:00:00Z");
    assert_eq!(show["credential"], json!({"kind": "github_token", "scope": "repo", "expiry": null}));
    let waiting: Value = serde_json::from_slice(&wc.abcd(&["checklist", "show", "2", "--json"]).stdout).unwrap();
    assert_eq!(waiting["state"], "waiting", "an item that waits on something starts waiting");

    let out = wc.abcd(&["checklist", "set", "1", "--state", "done", "--promise", "", "--owner-ref", "pr:13", "--clear-credential"]);
    assert!(out.status.success(), "{}", text(&out));
    let show: Value = serde_json::from_slice(&wc.abcd(&["checklist", "show", "1", "--json"]).stdout).unwrap();
    assert_eq!(show["state"], "done");
    assert_eq!(show["promise"], Value::Null);
    assert_eq!(show["owner_refs"], json!(["feat/login", "pr:12", "pr:13"]));
    assert_eq!(show["credential"], Value::Null);

    // The projection on disk is the spec's shape and names the journal head.
    let projection: Value = serde_json::from_slice(&std::fs::read(wc.tier().join("checklist.json")).unwrap()).unwrap();
    assert_eq!(projection["schema"], "abcd/checklist/v1");
    assert_eq!(projection["journal"]["seq"], 3);
    assert_eq!(projection["items"].as_array().unwrap().len(), 2);
    assert!(wc.abcd(&["replay"]).status.success());
}

#[test]
fn a_hand_edited_or_stale_projection_is_never_trusted() {
    let wc = WorkingCopy::managed();
    wc.abcd(&["checklist", "add", "First"]);
    let stale = std::fs::read(wc.tier().join("checklist.json")).unwrap();
    wc.abcd(&["checklist", "add", "Second"]);
    // Edited by hand: the digest no longer matches; the reader re-folds.
    let path = wc.tier().join("checklist.json");
    let edited = String::from_utf8(std::fs::read(&path).unwrap()).unwrap().replace("\"First\"", "\"Forged\"");
    std::fs::write(&path, edited).unwrap();
    assert_eq!(wc.titles(), vec!["First", "Second"]);
    // Stale: an intact older copy names an older seq; the reader folds forward.
    std::fs::write(&path, &stale).unwrap();
    assert_eq!(wc.titles(), vec!["First", "Second"]);
    // And the reader repaired the projection on disk as it went.
    let repaired: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(repaired["items"].as_array().unwrap().len(), 2);
}

#[test]
fn each_field_rule_is_refused_with_exit_2_naming_the_field_and_nothing_is_written() {
    let wc = WorkingCopy::managed();
    wc.abcd(&["checklist", "add", "An item"]);
    let before = wc.lines();
    let long = "a".repeat(201);
    let cases: &[(&[&str], &str)] = &[
        (&["checklist", "add", ""], "title"),
        (&["checklist", "add", &long], "title"),
        (&["checklist", "add", "two\nlines"], "title"),
        (&["checklist", "add", "x", "--waits-on", "team:x"], "waits_on"),
        (&["checklist", "add", "x", "--promise", "no arrow"], "promise"),
        (&["checklist", "add", "x", "--promise", "CI green => merge"], "names no `pr:`, `branch:` or `ci:`"),
        (&["checklist", "set", "1", "--promise", "pr:7 approved => merge"], "a promise reads `<trigger> => <title of the next item>`"),
        (&["checklist", "add", "x", "--owner-ref", "has space"], "owner_refs"),
        (&["checklist", "add", "x", "--next-look", "tomorrow"], "next_look"),
        (&["checklist", "add", "x", "--credential-kind", "magic", "--credential-scope", "repo"], "credential.kind"),
        (&["checklist", "add", "x", "--credential-kind", "api_key", "--credential-scope", "everything"], "credential.scope"),
        (&["checklist", "set", "1", "--state", "finished"], "--state"),
        (&["checklist", "set", "no-such-item", "--state", "done"], "no checklist item"),
        (&["checklist", "set", "1"], "nothing to change"),
        (&["checklist", "render", "--budget", "199"], "--budget"),
        (&["checklist", "render", "--budget", "10001"], "--budget"),
    ];
    for (args, names) in cases {
        let out = wc.abcd(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(names), "{args:?} must name {names}: {stderr}");
        assert_eq!(wc.lines(), before, "{args:?} wrote to the journal");
    }
    // Both sides of the title limit.
    assert!(wc.abcd(&["checklist", "add", &"b".repeat(200)]).status.success());
    assert!(wc.abcd(&["checklist", "render", "--budget", "200"]).status.success());
    assert!(wc.abcd(&["checklist", "render", "--budget", "10000"]).status.success());
}

/// Realistic-looking fake secrets, one per field kind the issue names.
fn planted_secrets() -> Vec<(&'static str, String, Vec<String>)> {
    let gh = format!("ghp_{}", "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d");
    let aws = format!("AKIA{}", "QX7T2M9LPW4RZ8NB");
    let slack = format!("xoxb-{}-{}-{}", "2415387760", "4129935548113", "p7QsVx2LmN9rT4wYzK8bC1dF");
    let glpat = format!("glpat-{}", "x9Qv2mLp8RwY4nB6cD1e");
    let pem = "-----BEGIN RSA PRIVATE KEY-----".to_string();
    vec![
        ("title", gh.clone(), vec!["checklist".into(), "add".into(), format!("rotate {gh} today")]),
        ("waits_on", aws.clone(), vec!["checklist".into(), "add".into(), "x".into(), "--waits-on".into(), aws.clone()]),
        (
            "promise",
            slack.clone(),
            vec!["checklist".into(), "add".into(), "x".into(), "--promise".into(), format!("CI green => post with {slack}")],
        ),
        ("owner_refs", glpat.clone(), vec!["checklist".into(), "add".into(), "x".into(), "--owner-ref".into(), glpat.clone()]),
        (
            "credential",
            pem.clone(),
            vec![
                "checklist".into(),
                "add".into(),
                "x".into(),
                "--credential-kind".into(),
                "ssh_key".into(),
                "--credential-scope".into(),
                pem.clone(),
            ],
        ),
    ]
}

fn leaks(haystack: &[u8], secret: &str) -> Option<String> {
    let h = String::from_utf8_lossy(haystack);
    let chars: Vec<char> = secret.chars().collect();
    chars.windows(8).map(|w| w.iter().collect::<String>()).find(|w| h.contains(w.as_str()))
}

#[test]
fn a_secret_in_any_field_is_refused_and_never_shown_or_stored() {
    let wc = WorkingCopy::managed();
    wc.abcd(&["checklist", "add", "Clean item"]);
    let last_good = std::fs::read(wc.tier().join("checklist.last-good.json")).unwrap();
    for (field, secret, args) in planted_secrets() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let before = wc.lines();
        let out = wc.abcd(&args);
        assert_eq!(out.status.code(), Some(2), "{field}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(field), "the refusal names the field {field}: {stderr}");
        for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert_eq!(leaks(bytes, &secret), None, "{field}: {what} shows part of the secret");
        }
        assert_eq!(wc.lines(), before + 1, "{field}: only checklist.write_refused is appended");
        let last: Value =
            serde_json::from_str(std::str::from_utf8(&std::fs::read(wc.journal()).unwrap()).unwrap().lines().last().unwrap()).unwrap();
        assert_eq!(last["kind"], "checklist.write_refused");
        assert!(last["data"]["field"].as_str().unwrap().starts_with(field.split('.').next().unwrap()), "{last}");
        for out in [wc.abcd(&["checklist"]), wc.abcd(&["checklist", "render"]), wc.abcd(&["replay"])] {
            assert_eq!(leaks(&out.stdout, &secret), None, "{field}: a reader shows part of the secret");
            assert_eq!(leaks(&out.stderr, &secret), None, "{field}: a reader shows part of the secret");
        }
        for (path, bytes) in wc.all_files() {
            assert_eq!(leaks(&bytes, &secret), None, "{field}: {} holds part of the secret", path.display());
        }
    }
    // A secret the command line cannot place is not repeated by the usage error either.
    let (_, secret, _) = &planted_secrets()[0];
    let out = wc.abcd(&["checklist", "add", "x", secret.as_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(leaks(&out.stderr, secret), None, "the usage error repeats the secret");
    assert_eq!(std::fs::read(wc.tier().join("checklist.last-good.json")).unwrap(), last_good, "a refused write never touches last-good");
    assert_eq!(wc.titles(), vec!["Clean item"]);
}

/// Appends a line the way a shell could: a correct line and hash, written behind abcd.
fn shell_append(wc: &WorkingCopy, kind: &str, data: Value) {
    shell_append_as(wc, kind, data, None)
}

fn shell_append_as(wc: &WorkingCopy, kind: &str, data: Value, session: Option<String>) {
    let bytes = std::fs::read(wc.journal()).unwrap();
    let last = std::str::from_utf8(&bytes).unwrap().lines().last().unwrap();
    let last = format::verify_line(format!("{last}\n").as_bytes()).unwrap();
    let event = NewEvent { kind: kind.into(), actor: Actor::this_process(session), data };
    let (line, _) = format::encode_line(last.seq + 1, format::now_ms(), &event, &last.hash).unwrap();
    let f = RealDisk.open_rw(&wc.journal()).unwrap();
    f.append(&line).unwrap();
}

#[test]
fn a_shell_appended_secret_is_skipped_named_and_never_rendered_or_last_good() {
    let wc = WorkingCopy::managed();
    wc.abcd(&["checklist", "add", "Clean item"]);
    let secret = format!("ghp_{}", "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d");
    let item = json!({"item": {"id": "leak", "title": format!("token {secret}"), "state": "working", "owner_refs": []}});
    shell_append(&wc, "checklist.item_added", item);
    let out = wc.abcd(&["checklist"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(leaks(&out.stdout, &secret), None);
    assert_eq!(leaks(&out.stderr, &secret), None);
    assert!(String::from_utf8_lossy(&out.stderr).contains("seq 2 (checklist.item_added) skipped: title carries"), "{}", text(&out));
    let render = wc.abcd(&["checklist", "render"]);
    assert_eq!(leaks(&render.stdout, &secret), None);
    assert!(String::from_utf8_lossy(&render.stdout).contains("seq 2"), "render names the skipped event");
    // A later, valid write refreshes last-good: still without the shell-written item.
    assert!(wc.abcd(&["checklist", "add", "Another"]).status.success());
    let last_good = std::fs::read(wc.tier().join("checklist.last-good.json")).unwrap();
    assert_eq!(leaks(&last_good, &secret), None);
    for (path, bytes) in wc.all_files() {
        if !path.ends_with("journal.jsonl") {
            assert_eq!(leaks(&bytes, &secret), None, "{} holds part of the secret", path.display());
        }
    }
    assert_eq!(wc.titles(), vec!["Clean item", "Another"]);
    // A secret in fields the fold does not keep (the actor's session id, a repair record)
    // never reaches the audit either.
    shell_append_as(&wc, "compaction.recorded", json!({"session": null, "trigger": "auto"}), Some(secret.clone()));
    let bad_repair = json!({"cause": "corruption", "from_offset": 1, "to_offset": 2, "lines": 1, "quarantine_file": secret, "quarantine_blake3": null, "anchor_seq": null, "anchor_hash": null, "problem": format!("x {secret}")});
    shell_append(&wc, "journal.repaired", bad_repair);
    // The projections are refreshed by a reader first, so they are checked after folding these.
    assert!(wc.abcd(&["checklist"]).status.success());
    for args in [&["replay"][..], &["replay", "--json"][..]] {
        let out = wc.abcd(args);
        assert_eq!(leaks(&out.stdout, &secret), None, "{args:?} shows part of the secret");
        assert_eq!(leaks(&out.stderr, &secret), None);
    }
    for (path, bytes) in wc.all_files() {
        if !path.ends_with("journal.jsonl") {
            assert_eq!(leaks(&bytes, &secret), None, "{} holds part of the secret", path.display());
        }
    }
}

/// Skips of other kinds never crowd a skipped checklist event out of the person's view,
/// and past the bound the view still names the first ones and the newest.
#[test]
fn every_skipped_checklist_event_within_the_bounds_is_named_in_the_view() {
    use abcd::fold::{MAX_SKIPPED_KEPT, MAX_SKIPPED_LATEST_KEPT};
    let wc = WorkingCopy::managed();
    wc.abcd(&["checklist", "add", "Clean item"]);
    for n in 0..MAX_SKIPPED_KEPT + 1 {
        shell_append(&wc, "session.judged", json!({"n": n}));
    }
    let first = 2 + MAX_SKIPPED_KEPT as u64 + 1;
    let checklist_skips = MAX_SKIPPED_KEPT + MAX_SKIPPED_LATEST_KEPT + 1;
    for n in 0..checklist_skips {
        shell_append(&wc, "checklist.item_changed", json!({"n": n}));
    }
    let out = wc.abcd(&["checklist"]);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let named = |seq: u64| stderr.contains(&format!("seq {seq} (checklist.item_changed) skipped"));
    let unnamed = first + MAX_SKIPPED_KEPT as u64;
    let newest = first + checklist_skips as u64 - 1;
    assert!(named(first) && named(unnamed - 1) && named(unnamed + 1) && named(newest), "{stderr}");
    assert!(!named(unnamed), "the one skip past the bound goes unnamed: {stderr}");
    assert_eq!(stderr.matches("(checklist.item_changed) skipped").count(), MAX_SKIPPED_KEPT + MAX_SKIPPED_LATEST_KEPT);
    assert!(!stderr.contains("(session.judged)"), "other views' skips are not the checklist's");
}

#[test]
fn with_the_journal_unreadable_the_reader_falls_back_to_last_good_then_to_one_line() {
    let wc = WorkingCopy::managed();
    wc.abcd(&["checklist", "add", "Kept in last good"]);
    std::fs::write(wc.journal(), b"\x00\x01 not a journal at all").unwrap();
    let out = wc.abcd(&["checklist", "render"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("Kept in last good"), "{shown}");
    assert_eq!(shown.lines().filter(|l| l.contains("could not be read")).count(), 1, "{shown}");

    std::fs::write(wc.tier().join("checklist.last-good.json"), b"{ broken").unwrap();
    let out = wc.abcd(&["checklist", "render"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!shown.contains("Kept in last good"), "{shown}");
    let notes: Vec<&str> = shown.lines().filter(|l| l.starts_with("! ")).collect();
    assert_eq!(notes.len(), 1, "{shown}");
    assert!(notes[0].contains("nothing to show"), "{shown}");
}

#[test]
fn three_hundred_long_items_render_within_the_budget() {
    let wc = WorkingCopy::managed();
    // Written through the library in one batch: the render is what is under test.
    let journal = abcd::journal::Journal::new(
        RealDisk::shared(),
        abcd::journal::JournalPaths::beside(&wc.journal()),
        Some(abcd::journal::anchor::AnchorStore::new(&wc.home)),
    );
    let store = abcd::store::Store::new(journal);
    let scope = abcd::event::Scope::WorkingCopy { root: wc.root.display().to_string() };
    for chunk in (0..300).collect::<Vec<u32>>().chunks(100) {
        let events: Vec<NewEvent> = chunk
            .iter()
            .map(|n| {
                let title = format!("{n:03} {}", "a long title that goes on and on ".repeat(6)).chars().take(200).collect::<String>();
                let item = json!({"item": {"id": format!("item-{n}"), "title": title.trim_end(), "state": "working", "owner_refs": []}});
                NewEvent { kind: "checklist.item_added".into(), actor: Actor::this_process(None), data: item }
            })
            .collect();
        store.append(&events, Some(&scope)).unwrap();
    }
    for budget in ["9500", "2000"] {
        let out = wc.abcd(&["checklist", "render", "--budget", budget]);
        let shown = String::from_utf8(out.stdout).unwrap();
        assert!(shown.chars().count() <= budget.parse().unwrap(), "{} chars", shown.chars().count());
        let items = shown.lines().filter(|l| l.starts_with("item-")).count();
        assert!(shown.ends_with(&format!("({} more items not shown; run `abcd checklist` to see them)\n", 300 - items)), "{shown}");
        assert_eq!(shown.lines().nth(1), Some("working (300):"), "{shown}");
        assert!(shown.lines().nth(2).unwrap().starts_with("item-299: "), "newest first: {shown}");
    }
}

/// New items get the next number; items an older build added keep their slug ids, which
/// every verb still takes, and an all-digit one among them is counted.
#[test]
fn new_ids_are_numbers_and_slug_ids_keep_working() {
    let wc = WorkingCopy::managed();
    // As an older build added them: a slug of the title each (one title is all digits).
    let journal = abcd::journal::Journal::new(
        RealDisk::shared(),
        abcd::journal::JournalPaths::beside(&wc.journal()),
        Some(abcd::journal::anchor::AnchorStore::new(&wc.home)),
    );
    let store = abcd::store::Store::new(journal);
    let scope = abcd::event::Scope::WorkingCopy { root: wc.root.display().to_string() };
    let events: Vec<NewEvent> = [("fix-the-login-bug", "Fix the login bug"), ("7", "7")]
        .iter()
        .map(|(id, title)| NewEvent {
            kind: "checklist.item_added".into(),
            actor: Actor::this_process(None),
            data: json!({"item": {"id": id, "title": title, "state": "working", "owner_refs": []}}),
        })
        .collect();
    store.append(&events, Some(&scope)).unwrap();

    let out = wc.abcd(&["checklist", "add", "Write the parser", "--waits-on", "fix-the-login-bug"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "8", "above every all-digit id");
    for args in [&["checklist", "set", "fix-the-login-bug", "--state", "done"][..], &["checklist", "show", "fix-the-login-bug"]] {
        let out = wc.abcd(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    }
    let out = wc.abcd(&["checklist", "render"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("\n8: Write the parser · waits on fix-the-login-bug\n"), "{}", text(&out));
    // Dropped items keep their numbers: the next add never reuses one.
    assert!(wc.abcd(&["checklist", "set", "8", "--state", "dropped"]).status.success());
    assert_eq!(String::from_utf8_lossy(&wc.abcd(&["checklist", "add", "Next"]).stdout).trim(), "9");
}

#[test]
fn eight_processes_adding_a_hundred_items_each_keep_all_800_with_unique_ids() {
    let wc = WorkingCopy::managed();
    std::thread::scope(|s| {
        for p in 0..8 {
            let wc = &wc;
            s.spawn(move || {
                for i in 0..100 {
                    // Every title is used by all eight writers: ids must still come out unique.
                    let out = wc.abcd(&["checklist", "add", &format!("Task {i}")]);
                    assert!(out.status.success(), "writer {p} item {i}: {}", text(&out));
                }
            });
        }
    });
    let items = wc.list()["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 800);
    let ids: std::collections::BTreeSet<u64> = items.iter().map(|i| i["id"].as_str().unwrap().parse().unwrap()).collect();
    assert_eq!(ids, (1..=800).collect(), "the numbers 1 to 800, each once");
    assert!(wc.abcd(&["journal", "verify"]).status.success());
}

/// A `state.json` whose digest was recomputed (the digest has no key) with a secret in an
/// item's title: a checklist write must not carry it into `checklist.json` or last-good,
/// and must not fail on it. The state's items are checked again as `checklist.json`'s are.
#[test]
fn a_forged_state_json_item_never_reaches_the_projections() {
    let wc = WorkingCopy::managed();
    assert!(wc.abcd(&["checklist", "add", "First"]).status.success());
    // Another add leaves state.json behind the head, a base the next write folds from.
    assert!(wc.abcd(&["checklist", "add", "Second"]).status.success());
    let state_path = wc.tier().join("state.json");
    let mut file: Value = serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let items = file["state"]["checklist"]["items"].as_array_mut().unwrap();
    assert!(!items.is_empty(), "state.json holds the first item");
    items[0]["title"] = json!(format!("Push with {token}"));
    let forged = abcd::store::projection::seal_state_json(&file);
    std::fs::write(&state_path, &forged).unwrap();
    let out = wc.abcd(&["checklist", "add", "Third"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(wc.titles(), vec!["First", "Second", "Third"]);
    // The planted bytes themselves may survive as the next spare; nothing abcd wrote holds
    // any part of the token.
    for (path, bytes) in wc.all_files().into_iter().filter(|(_, bytes)| *bytes != forged) {
        assert_eq!(leaks(&bytes, token), None, "{} holds part of the token", path.display());
    }
}

/// The same through a checkpoint, the other cache a reader folds from: its digest has no
/// key either, so its items are checked again before it is used.
#[test]
fn a_forged_checkpoint_item_never_reaches_the_projections() {
    use abcd::store::checkpoint;
    let wc = WorkingCopy::managed();
    assert!(wc.abcd(&["checklist", "add", "First"]).status.success());
    assert!(wc.abcd(&["checklist", "add", "Second"]).status.success());
    assert!(wc.abcd(&["journal", "checkpoint"]).status.success());
    let dir = wc.tier().join("checkpoints");
    let path = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).next().expect("a checkpoint");
    let mut cp = checkpoint::decode(&std::fs::read(&path).unwrap()).expect("abcd's own checkpoint");
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    cp.state.checklist.items[0].fields.title = format!("Push with {token}");
    let forged = checkpoint::encode(&cp);
    std::fs::write(&path, &forged).unwrap();
    // Without state.json, the checkpoint is the reader's best base.
    std::fs::remove_file(wc.tier().join("state.json")).unwrap();
    let out = wc.abcd(&["checklist", "add", "Third"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(wc.titles(), vec!["First", "Second", "Third"]);
    for (path, bytes) in wc.all_files().into_iter().filter(|(_, bytes)| *bytes != forged) {
        assert_eq!(leaks(&bytes, token), None, "{} holds part of the token", path.display());
    }
}

/// The checklist's times are read from the clock's test seam (`ABCD_TEST_NOW`), as every
/// other time rule is: `--next-look +2h` counts from it, and the listing, `show` and
/// `render` say how far off a look is from it.
#[test]
fn checklist_times_follow_the_test_clock() {
    let wc = WorkingCopy::managed();
    let at =
        |now: &str, args: &[&str]| repo::abcd(&wc.root, &wc.home).args(args).env("ABCD_TEST_NOW", now).env("TZ", "UTC").output().unwrap();
    let now = "2026-06-01T09:00:00Z";
    let out = at(now, &["checklist", "add", "Look again", "--next-look", "+2h"]);
    assert!(out.status.success(), "{}", text(&out));
    let show: Value = serde_json::from_slice(&wc.abcd(&["checklist", "show", "1", "--json"]).stdout).unwrap();
    assert_eq!(show["next_look"], "2026-06-01T11:00:00Z", "two hours after the test instant");
    for args in [&["checklist"][..], &["checklist", "show", "1"]] {
        let out = at(now, args);
        assert!(text(&out).contains("next look 2026-06-01 11:00 UTC (in 2h00m)"), "{args:?}: {}", text(&out));
    }
    // The render names the look's time only, so it reads the same until the look is due.
    let render = |now: &str| String::from_utf8(at(now, &["checklist", "render"]).stdout).unwrap();
    assert!(render(now).contains("1: Look again · look 2026-06-01T11:00Z\n"), "{}", render(now));
    assert_eq!(render(now), render("2026-06-01T10:59:00Z"));
    assert!(render("2026-06-01T11:00:00Z").contains("1: Look again · look due since 2026-06-01T11:00Z\n"));
    let out = at("not a time", &["checklist"]);
    assert_eq!(out.status.code(), Some(2), "an unreadable test instant is refused: {}", text(&out));
    assert!(text(&out).contains("ABCD_TEST_NOW"), "{}", text(&out));
}

/// stdout is data: a reader that closed its end (`abcd checklist | head -0`) ends the verb
/// quietly with exit 0, never a panic.
#[test]
fn a_closed_stdout_ends_quietly() {
    let wc = WorkingCopy::managed();
    assert!(wc.abcd(&["checklist", "add", "Fix the login bug"]).status.success());
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let closed = Command::new(env!("CARGO_BIN_EXE_abcd"))
        .args(["checklist"])
        .current_dir(&wc.root)
        .env("ABCD_HOME", &wc.home)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(closed.status.code(), Some(0), "{}", String::from_utf8_lossy(&closed.stderr));
    assert!(closed.stderr.is_empty(), "{}", String::from_utf8_lossy(&closed.stderr));
}

/// Claude Code names its session in `CLAUDE_CODE_SESSION_ID` for hooks and for the commands
/// its tools run: a checklist change made there says on whose word it was made, in
/// `checklist.json`'s `updated_by` and in the audit line `abcd replay` prints for it.
#[test]
fn the_host_session_in_the_environment_is_recorded_as_the_changes_author() {
    let wc = WorkingCopy::managed();
    let session = "0b5c1f2e-7a4d-4c1b-9e3f-2d6a8b9c0d1e";
    let in_session = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_abcd"))
            .args(args)
            .current_dir(&wc.root)
            .env("ABCD_HOME", &wc.home)
            .env("CLAUDE_CODE_SESSION_ID", session)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        out
    };
    let updated_by = || {
        let file: Value = serde_json::from_slice(&std::fs::read(wc.tier().join("checklist.json")).unwrap()).unwrap();
        file["updated_by"].clone()
    };
    in_session(&["checklist", "add", "Fix the login bug"]);
    assert_eq!(updated_by(), session);
    let audit = String::from_utf8(in_session(&["replay"]).stdout).unwrap();
    let line = audit.lines().find(|l| l.contains("Fix the login bug")).unwrap_or_else(|| panic!("no audit line for the item: {audit}"));
    assert!(line.contains(&format!("session {session}")), "{line}");

    // Outside a session (the variable unset) the change names none.
    let out = Command::new(env!("CARGO_BIN_EXE_abcd"))
        .args(["checklist", "set", "1", "--title", "Fix the login bug today"])
        .current_dir(&wc.root)
        .env("ABCD_HOME", &wc.home)
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(updated_by(), Value::Null);
}

/// Appends `events` behind abcd in one write, each a correct line chained onto the last
/// (the data abcd's own verbs write): a long history built in a moment, with every
/// projection left to the binary.
fn bulk_append(wc: &WorkingCopy, events: Vec<(&str, Value)>) {
    let bytes = std::fs::read(wc.journal()).unwrap();
    let last = std::str::from_utf8(&bytes).unwrap().lines().last().unwrap();
    let last = format::verify_line(format!("{last}\n").as_bytes()).unwrap();
    let (mut seq, mut prev, mut out) = (last.seq + 1, last.hash, Vec::new());
    for (kind, data) in events {
        let event = NewEvent { kind: kind.into(), actor: Actor::this_process(None), data };
        let (line, hash) = format::encode_line(seq, format::now_ms(), &event, &prev).unwrap();
        out.extend_from_slice(&line);
        (seq, prev) = (seq + 1, hash);
    }
    RealDisk.open_rw(&wc.journal()).unwrap().append(&out).unwrap();
}

fn long_title(n: usize) -> String {
    format!("Fix the parser edge case number {n:04} in the import path")
}

/// The id `checklist add` gives the nth item of a fresh copy (the bulk adds use the same).
fn long_id(n: usize) -> String {
    n.to_string()
}

fn added(n: usize) -> (&'static str, Value) {
    let item = abcd::checklist::item::ItemFields::working(&long_id(n), &long_title(n));
    ("checklist.item_added", json!({"item": item}))
}

fn closed(n: usize) -> (&'static str, Value) {
    ("checklist.item_changed", json!({"id": long_id(n), "changes": {"state": "done"}}))
}

/// A working copy whose checklist had `total` items added (1 to `total`) and the first
/// `closed` of them closed: the first add and the last close through the binary, the rest
/// behind it. Its projections are then rewritten by a read at the head, as are a fresh
/// copy's, so both are compared as of their heads.
fn with_history(total: usize, closed_n: usize) -> WorkingCopy {
    let wc = WorkingCopy::managed();
    assert!(wc.abcd(&["checklist", "add", &long_title(1)]).status.success());
    let mut events: Vec<(&str, Value)> = (2..=total).map(added).collect();
    events.extend((1..closed_n).map(closed));
    bulk_append(&wc, events);
    let out = wc.abcd(&["checklist", "set", &long_id(closed_n), "--state", "done"]);
    assert!(out.status.success(), "{}", text(&out));
    wc
}

/// The three projections' sizes in bytes, each written at the head (state.json and
/// checklist.json by a read after both are removed; last-good by the last write), and a
/// checkpoint's.
fn projection_sizes(wc: &WorkingCopy) -> [u64; 4] {
    for name in ["state.json", "checklist.json"] {
        std::fs::remove_file(wc.tier().join(name)).unwrap();
    }
    assert!(wc.abcd(&["checklist", "--json"]).status.success());
    assert!(wc.abcd(&["journal", "checkpoint"]).status.success());
    let checkpoint = std::fs::read_dir(wc.tier().join("checkpoints")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).max();
    let size = |name: &str| std::fs::metadata(wc.tier().join(name)).unwrap().len();
    [size("checklist.json"), size("checklist.last-good.json"), size("state.json"), checkpoint.unwrap()]
}

/// After 2,000 items added and 1,980 closed, the projections and a checkpoint hold the 20
/// open items and the newest closed ones: each within a small factor of a fresh copy's
/// with the same 20 open items, not the history. `--all` still lists all 2,000, and a
/// `set` or `show` of a retired item is refused saying so and what to run.
#[test]
fn after_two_thousand_items_and_1980_closed_the_projections_are_the_size_of_the_open_ones() {
    use abcd::checklist::item::CLOSED_ITEMS_KEPT;
    let (total, closed_n) = (2_000, 1_980);
    let wc = with_history(total, closed_n);
    let fresh = WorkingCopy::managed();
    for n in closed_n + 1..=total {
        assert!(fresh.abcd(&["checklist", "add", &long_title(n)]).status.success());
    }
    let listed = wc.list();
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), total - closed_n + CLOSED_ITEMS_KEPT, "20 open and the newest closed");
    assert_eq!(listed["retired_total"], closed_n - CLOSED_ITEMS_KEPT);
    let held_closed: Vec<&str> = items.iter().filter(|i| i["state"] == "done").map(|i| i["id"].as_str().unwrap()).collect();
    let newest: Vec<String> = (closed_n - CLOSED_ITEMS_KEPT + 1..=closed_n).map(long_id).collect();
    assert_eq!(held_closed, newest, "the newest closed stay, in the order added");

    let (big, small) = (projection_sizes(&wc), projection_sizes(&fresh));
    eprintln!("projection bytes [checklist.json, last-good, state.json, checkpoint]: 1,980 closed {big:?}, fresh {small:?}");
    for (what, (b, s)) in ["checklist.json", "last-good", "state.json", "checkpoint"].iter().zip(big.iter().zip(small)) {
        assert!(*b <= 3 * s, "{what}: {b} bytes against {s} for a fresh copy");
    }

    // --all: every item ever added, retired ones marked.
    let out = wc.abcd(&["checklist", "--all", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    let all_items = all["items"].as_array().unwrap();
    let ids: Vec<String> = all_items.iter().map(|i| i["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids, (1..=total).map(long_id).collect::<Vec<_>>(), "every item, in the order added");
    let retired = all_items.iter().filter(|i| i["retired"] == true).count();
    assert_eq!((retired, all["retired_total"].as_u64()), (closed_n - CLOSED_ITEMS_KEPT, Some(retired as u64)));
    assert!(all_items.iter().filter(|i| i["retired"] == true).all(|i| i["state"] == "done"));
    let out = wc.abcd(&["checklist", "--all"]);
    assert!(out.status.success(), "{}", text(&out));
    let text_all = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text_all.lines().filter(|l| l.starts_with("- [")).count(), total);
    assert!(text_all.contains(&format!("{} closed items retired from the working state", closed_n - CLOSED_ITEMS_KEPT)), "{text_all}");
    let bare = String::from_utf8(wc.abcd(&["checklist"]).stdout).unwrap();
    assert!(bare.contains("run `abcd checklist --all` to list every item"), "{bare}");
    let out = wc.abcd(&["checklist", "--all", "show", &long_id(total)]);
    assert_eq!(out.status.code(), Some(2), "--all goes with the listing only: {}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("run `abcd checklist --all`"), "{}", text(&out));

    // A retired item: refused, saying what, why and what to run; nothing written.
    let before = wc.lines();
    for args in [&["checklist", "set", &long_id(1), "--state", "working"][..], &["checklist", "show", &long_id(1)]] {
        let out = wc.abcd(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let said = String::from_utf8_lossy(&out.stderr);
        for part in [
            format!("`{}` is done and was retired from the working state", long_id(1)),
            format!("after {CLOSED_ITEMS_KEPT} newer closed items"),
            "`abcd checklist --all`".into(),
            "`abcd checklist add".into(),
        ] {
            assert!(said.contains(&part), "{args:?} does not say {part:?}: {said}");
        }
    }
    assert_eq!(wc.lines(), before, "a refused set writes nothing");
    // An id never added is still unknown; a closed item still held can be reopened.
    let out = wc.abcd(&["checklist", "set", "never-added", "--state", "done"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no checklist item `never-added`"), "{}", text(&out));
    let out = wc.abcd(&["checklist", "set", &long_id(closed_n), "--state", "working"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(wc.abcd(&["replay"]).status.success(), "every cache agrees with the fold");
}

/// Projections and checkpoints written by a build that kept every closed item are not
/// believed: a reader folds instead, shows the working state and rewrites them, so every
/// reader agrees with the fold.
#[test]
fn projections_holding_more_closed_items_than_the_bound_are_not_believed() {
    use abcd::checklist::item::CLOSED_ITEMS_KEPT;
    use abcd::store::projection::{ChecklistFile, render_state};
    let n = CLOSED_ITEMS_KEPT + 5;
    let wc = with_history(n + 2, n);
    // The state such a build folds: every item, none retired.
    let file = RealDisk.open_read(&wc.journal()).unwrap();
    let (mut state, mut retired) = (abcd::fold::FoldedState::default(), vec![]);
    let report = abcd::journal::scan::scan(file.as_ref(), abcd::journal::scan::StartPoint::GENESIS, |e, _| {
        abcd::fold::fold_event_keeping_retired(&mut state, e, &mut retired);
        Ok::<(), ()>(())
    })
    .unwrap();
    assert_eq!(retired.len(), 5);
    state.checklist.items.extend(retired);
    state.checklist.items.sort_by_key(|i| i.added_seq);
    state.checklist.retired_total = 0;
    let head = report.head.unwrap();
    std::fs::write(wc.tier().join("state.json"), render_state(&state, head)).unwrap();
    std::fs::write(wc.tier().join("checklist.json"), ChecklistFile::from_state(&state, head).render()).unwrap();
    let listed = wc.list();
    assert_eq!(listed["items"].as_array().unwrap().len(), 2 + CLOSED_ITEMS_KEPT, "{listed}");
    let rewritten: Value = serde_json::from_slice(&std::fs::read(wc.tier().join("checklist.json")).unwrap()).unwrap();
    assert_eq!(rewritten["items"].as_array().unwrap().len(), 2 + CLOSED_ITEMS_KEPT, "the reader rewrote it");
    // state.json alone (the write path's base) is not believed either.
    std::fs::write(wc.tier().join("state.json"), render_state(&state, head)).unwrap();
    assert!(wc.abcd(&["checklist", "add", "One more"]).status.success());
    assert_eq!(wc.list()["items"].as_array().unwrap().len(), 3 + CLOSED_ITEMS_KEPT);
    let out = wc.abcd(&["replay"]);
    assert!(out.status.success(), "{}", text(&out));
}
