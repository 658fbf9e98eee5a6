//! What the session-start hook costs in characters: the typical plan with the away block
//! within 1,500, a 500-item plan within the host's budget naming what it left out, and
//! `abcd checklist render --stats` accounting for every character. Through the binary, in
//! a real repository (the away record needs its first commit), at a fixed clock.

use crate::common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use common::repo::TestRepo;
use serde_json::{Value, json};

/// The typical plan, with the away block, at most (issue 21).
const TYPICAL_PLAN_MAX_CHARS: usize = 1_500;
/// The largest plan's context, away block included: the host's cap less the margin.
const LARGE_PLAN_MAX_CHARS: usize = 9_500;
const NOW: &str = "2026-12-01T18:00:00Z";

struct Repo {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    home: std::path::PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let TestRepo { dir, root, home } = TestRepo::new();
        let repo = Repo { _dir: dir, root, home };
        repo.must(&["init"]);
        repo
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
        cmd.args(args).current_dir(&self.root).env("ABCD_HOME", &self.home).env("ABCD_TEST_NOW", NOW).env("TZ", "UTC");
        cmd
    }

    fn must(&self, args: &[&str]) -> String {
        let out = self.command(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    /// What `abcd hook session-start` gives the model, without the receipt's tokens.
    fn session_start(&self) -> String {
        common::unmarked(&self.session_start_raw())
    }

    /// The same, as printed: with the receipt's token at its start and end.
    fn session_start_raw(&self) -> String {
        let mut child = self.command(&["hook", "session-start"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let payload = json!({"session_id": "s1", "cwd": self.root, "hook_event_name": "SessionStart", "source": "startup"});
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
        reply["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_string()
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// One item of the typical plan: title, and the options `add` takes for it.
struct Planned {
    title: &'static str,
    options: &'static [&'static str],
    done: bool,
}

const fn working(title: &'static str, options: &'static [&'static str]) -> Planned {
    Planned { title, options, done: false }
}

const fn done(title: &'static str) -> Planned {
    Planned { title, options: &[], done: true }
}

/// The typical plan: 10 working, 4 waiting with a look time, 6 done, 5 with promises;
/// titles of 25 to 45 characters.
const TYPICAL_PLAN: &[Planned] = &[
    working("Fix the login redirect loop", &["--promise", "ci:fix/login green => close issue 231"]),
    working("Add retry to the upload client", &[]),
    working("Write the migration for user settings", &[]),
    working("Split the billing module into crates", &["--promise", "branch:split pushed => open the split PR"]),
    working("Cache the search index on disk", &[]),
    working("Remove the deprecated v1 endpoints", &[]),
    working("Document the release checklist", &[]),
    working("Speed up the CI cache restore step", &["--promise", "ci:ci-cache green => drop the old cache job"]),
    working("Handle empty carts in the checkout flow", &[]),
    working("Add metrics for background job latency", &[]),
    working(
        "Review of the auth refactor PR",
        &["--waits-on", "pr:412", "--next-look", "+3h", "--promise", "pr:412 merged => deploy to staging"],
    ),
    working(
        "Answer from design on the new header",
        &["--waits-on", "person:designer", "--next-look", "+1d", "--promise", "pr:88 closed => build the chosen header"],
    ),
    working("Nightly benchmark run on the new runner", &["--waits-on", "slot:ci", "--next-look", "+8h"]),
    working("Upstream fix for the TLS timeout bug", &["--waits-on", "pr:87", "--next-look", "+2d"]),
    done("Bump the HTTP client to 1.4"),
    done("Fix the flaky test in the order service"),
    done("Rename the config keys to snake case"),
    done("Add a health check endpoint"),
    done("Delete the unused feature flags"),
    done("Pin the toolchain in the repository"),
];

/// The typical plan added through the verbs; the ids `add` printed, in plan order.
fn typical_plan(repo: &Repo) -> Vec<String> {
    assert!(TYPICAL_PLAN.iter().all(|p| (25..=45).contains(&p.title.chars().count())), "titles of 25 to 45 characters");
    let mut ids = Vec::new();
    for p in TYPICAL_PLAN {
        let mut args = vec!["checklist", "add", p.title];
        args.extend_from_slice(p.options);
        let id = repo.must(&args).trim().to_string();
        if p.done {
            repo.must(&["checklist", "set", &id, "--state", "done"]);
        }
        ids.push(id);
    }
    ids
}

/// Every open item's id and full title on its line, with its promise and its next look.
fn assert_every_open_item_shown(context: &str, ids: &[String]) {
    let looks = [("+3h", "2026-12-01T21:00Z"), ("+1d", "2026-12-02T18:00Z"), ("+8h", "2026-12-02T02:00Z"), ("+2d", "2026-12-03T18:00Z")];
    for (p, id) in TYPICAL_PLAN.iter().zip(ids).filter(|(p, _)| !p.done) {
        let line = context.lines().find(|l| l.starts_with(&format!("{id}: {}", p.title))).unwrap_or_else(|| panic!("{id}: {context}"));
        for pair in p.options.chunks(2) {
            let shown = match pair[0] {
                "--promise" => format!("promise: {}", pair[1]),
                "--waits-on" => format!("waits on {}", pair[1]),
                _ => format!("look {}", looks.iter().find(|(rel, _)| *rel == pair[1]).unwrap().1),
            };
            assert!(line.contains(&shown), "{line:?} lacks {shown:?}");
        }
    }
    assert!(context.contains("\ndone (6)\n"), "the done items counted: {context}");
    for p in TYPICAL_PLAN.iter().filter(|p| p.done) {
        assert!(!context.contains(p.title), "done items are counted, not listed: {context}");
    }
}

#[test]
fn the_typical_plan_with_the_away_block_fits_in_1500_characters() {
    let repo = Repo::new();
    let ids = typical_plan(&repo);
    assert_eq!(ids, (1..=20).map(|n| n.to_string()).collect::<Vec<_>>(), "short ids, in the order added");
    let present = repo.session_start();
    assert_every_open_item_shown(&present, &ids);
    assert!(present.starts_with("abcd keeps this checklist across compaction; edit: `abcd checklist add|set <id>`.\n"));
    for hold in [false, true] {
        let mut set = vec!["mode", "autonomous", "--until", "+8h"];
        if hold {
            set.push("--hold-pushes");
        }
        repo.must(&set);
        // Counted as printed, the receipt's tokens included.
        let raw = repo.session_start_raw();
        let context = common::unmarked(&raw);
        let chars = raw.chars().count();
        eprintln!("typical plan: {chars} characters while away (pushes held: {hold}), {} present", present.chars().count());
        assert!(chars <= TYPICAL_PLAN_MAX_CHARS, "{chars} > {TYPICAL_PLAN_MAX_CHARS}:\n{context}");
        assert!(context.starts_with("abcd: the person is away until 2026-12-02 02:00 UTC."), "{context}");
        assert!(context.ends_with(&present), "the block, then the same checklist: {context}");
        assert_every_open_item_shown(&context, &ids);
        repo.must(&["mode", "back"]);
    }
}

#[test]
fn a_500_item_plan_with_the_away_block_stays_within_the_budget_and_names_what_it_left_out() {
    let repo = Repo::new();
    // Written through the library in batches: the render is what is under test.
    let journal = abcd::journal::Journal::new(
        abcd::journal::storage::RealDisk::shared(),
        abcd::journal::JournalPaths::beside(&repo.root.join(".abcd/.work.local/journal.jsonl")),
        Some(abcd::journal::anchor::AnchorStore::new(&repo.home)),
    );
    let store = abcd::store::Store::new(journal);
    let scope = abcd::event::Scope::WorkingCopy { root: repo.root.display().to_string() };
    for chunk in (1..=500).collect::<Vec<u32>>().chunks(100) {
        let events: Vec<abcd::journal::NewEvent> = chunk
            .iter()
            .map(|n| {
                let item = if n % 3 == 0 {
                    json!({"id": n.to_string(), "title": format!("Wait for the review of pull request {n}"), "state": "waiting",
                        "waits_on": format!("pr:{n}"), "next_look": "2026-12-02T09:00:00Z", "promise": "approved => merge it", "owner_refs": []})
                } else {
                    json!({"id": n.to_string(), "title": format!("Handle the edge case number {n} in the parser"), "state": "working", "owner_refs": []})
                };
                abcd::journal::NewEvent {
                    kind: "checklist.item_added".into(),
                    actor: abcd::journal::Actor::this_process(None),
                    data: json!({ "item": item }),
                }
            })
            .collect();
        store.append(&events, Some(&scope)).unwrap();
    }
    repo.must(&["mode", "autonomous", "--hold-pushes"]);
    repo.must(&["mode", "queue", "push feat/parser"]);
    let context = repo.session_start();
    let chars = context.chars().count();
    eprintln!("500-item plan: {chars} characters while away");
    assert!(chars <= LARGE_PLAN_MAX_CHARS, "{chars} > {LARGE_PLAN_MAX_CHARS}");
    assert!(context.starts_with("abcd: the person is away until"), "{context}");
    let shown = context.lines().filter(|l| l.split_once(": ").is_some_and(|(id, _)| id.bytes().all(|b| b.is_ascii_digit()))).count();
    assert!(shown > 50, "{shown} items shown");
    assert!(context.ends_with(&format!("({} more items not shown; run `abcd checklist` to see them)\n", 500 - shown)), "{context}");
    assert!(context.contains("\n500: Handle the edge case number 500 in the parser\n"), "newest first: {context}");
}

#[test]
fn render_stats_account_for_every_character_the_hook_prints() {
    let repo = Repo::new();
    typical_plan(&repo);
    repo.must(&["mode", "autonomous", "--until", "+8h"]);
    let context = repo.session_start();
    assert_eq!(repo.must(&["checklist", "render"]), context, "render prints what the hook injects");

    let stats: Value = serde_json::from_str(&repo.must(&["checklist", "render", "--stats", "--json"])).unwrap();
    let parts = ["away_block", "header", "notes", "working", "waiting", "done", "footer"];
    let sum: u64 = parts.iter().map(|p| stats[p].as_u64().unwrap_or_else(|| panic!("{p} missing: {stats}"))).sum();
    assert_eq!(stats["total"], json!(context.chars().count()), "{stats}");
    assert_eq!(sum, context.chars().count() as u64, "the parts add up to the total: {stats}");
    assert_eq!(stats["budget"], 9_500);
    let block = context.split("\n\n").next().unwrap();
    assert_eq!(stats["away_block"], json!(block.chars().count() + 2), "the block and its blank line: {stats}");
    assert_eq!(stats["done"], json!("done (6)\n".len()));
    assert_eq!(stats["footer"], 0);
    for part in ["working", "waiting", "header"] {
        assert!(stats[part].as_u64().unwrap() > 0, "{part}: {stats}");
    }

    // Cut to a small budget: the footer takes its share, and the total stays within it.
    let shown = repo.must(&["checklist", "render", "--stats", "--budget", "600"]);
    let rows: Vec<(String, usize)> = shown
        .lines()
        .map(|l| {
            let (name, rest) = l.split_at(10);
            (name.trim().to_string(), rest.split_whitespace().next().unwrap().parse().unwrap())
        })
        .collect();
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["away block", "header", "notes", "working", "waiting", "done", "footer", "total"], "{shown}");
    assert!(shown.ends_with(" of 600\n"), "{shown}");
    let total = rows[7].1;
    assert_eq!(rows[..7].iter().map(|(_, n)| n).sum::<usize>(), total, "{shown}");
    assert!(total <= 600 && rows[6].1 > 0, "cut, and the footer says so: {shown}");
}
