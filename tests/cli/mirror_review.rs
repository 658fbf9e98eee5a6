//! Rules of the mirror (journal-format/MIRROR.md, src/mirror/, src/command/mirror.rs) that
//! an independent review found broken, one test each; docs/decisions.md and the commit that
//! mended them say what was wrong. The fixture, shared with
//! tests/cli/mirror_rules.rs, is tests/common/mirror_lab.rs: a bare repository as the remote
//! and clones of it, each a "machine" with its own home store and `ABCD_MACHINE`; forged
//! remote states are made with git plumbing in the remote.

use crate::common::chain;
use crate::common::mirror_lab;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use abcd::journal::format::{self, Actor, NewEvent};
use mirror_lab::{
    BACKGROUND_POLL, BACKGROUND_WAIT, Entry, LONG_EVERY_SECONDS, Lab, Machine, Parts, assert_good, assert_no_part_of, fake_token, git,
    hook_ok, journal_entry, last_push, segment_name, text, verdict, working_copy,
};
use serde_json::{Value, json};

/// A line whose hash verifies but whose `seq` is the JSON text `seq_json`: what anyone who
/// can push may put in a segment (the hash is a public function of the bytes).
fn line_with_raw_seq(seq_json: &str, prev: &str) -> Vec<u8> {
    let body = format!(
        r#"{{"v":1,"seq":{seq_json},"time":"2026-12-01T09:00:00.000Z","kind":"test.note","actor":{{"session":null,"pid":1,"tool":"sh"}},"data":{{}},"prev":"{prev}""#
    );
    let hash = format::hash_body(body.as_bytes());
    format!("{body},\"hash\":\"{}\"}}\n", hash.to_hex()).into_bytes()
}

/// Every process of this user running `abcd mirror push --background` for `m`'s home store.
fn background_pushes(m: &Machine) -> Vec<u32> {
    let home = format!("ABCD_HOME={}", m.home.display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let background = cmdline.split(|b| *b == 0).any(|w| w == b"--background");
        if background && environ.split(|b| *b == 0).any(|w| w == home.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// Waits until no background push of `m` runs (the hook has started one by the time it exits).
fn wait_for_background_pushes_to_end(m: &Machine) {
    let deadline = Instant::now() + BACKGROUND_WAIT;
    while !background_pushes(m).is_empty() {
        assert!(Instant::now() < deadline, "a background push still runs");
        std::thread::sleep(BACKGROUND_POLL);
    }
}

/// A change made to a mirror commit's parts before it is written back.
type Forgery = Box<dyn Fn(&mut Parts)>;

// ----- 1. a fetcher prints what it should not ----------------------------------------------

/// §8 and the rules file: a shown text from another machine is scanned, and no message
/// echoes a secret. A forged mirror.json whose value has the wrong type, or whose unknown
/// field is named by a token, is rewritten without serde's own words (they quote the value
/// or the name): `fetch`, `fetch --json`, the fetch record and `status` never print it.
#[test]
fn a_secret_in_a_forged_mirror_json_is_never_shown() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    let token = fake_token();
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    b.fetch_ok();
    let pushed = lab.journal_ref(&a_id).unwrap();
    let forgeries: Vec<(&str, Forgery)> = vec![
        ("head_seq holding a token", Box::new(|p| p.edit_meta("head_seq", Some(json!(fake_token()))))),
        ("a field named by a token", Box::new(|p| p.edit_meta(&fake_token(), Some(json!(1))))),
        ("scope's kind a token", Box::new(|p| p.edit_meta("scope", Some(json!({"kind": fake_token()}))))),
    ];
    for (what, change) in &forgeries {
        lab.forge_child(&a_id, |_, p| change(p));
        let fetch = b.run(&["mirror", "fetch"]);
        assert_eq!(fetch.status.code(), Some(1), "{what}: {}", text(&fetch));
        assert!(String::from_utf8_lossy(&fetch.stdout).contains("rewritten"), "{what}: {}", text(&fetch));
        assert_no_part_of(&token, &text(&fetch), &format!("{what}: mirror fetch"));
        assert_no_part_of(&token, &text(&b.run(&["mirror", "fetch", "--json"])), &format!("{what}: mirror fetch --json"));
        assert_no_part_of(&token, &text(&b.run(&["mirror", "status"])), &format!("{what}: mirror status"));
        assert_no_part_of(&token, &text(&b.run(&["mirror", "status", "--json"])), &format!("{what}: mirror status --json"));
        lab.set_ref(&a_id, &pushed);
    }
}

/// The same through a segment: a line whose hash verifies but that is not an event object
/// (its seq a string holding a token). A reason the secret scan flags is replaced whole.
#[test]
fn a_secret_in_a_forged_segment_line_is_never_shown() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    let token = fake_token();
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    b.fetch_ok();
    let prev = a.head().hash.to_hex();
    lab.forge_child(&a_id, |lab, p| {
        let last = p.segments.last_mut().unwrap();
        let old = lab.cat(&last.id);
        let grown = [old.clone(), line_with_raw_seq(&format!("\"{token}\""), &prev)].concat();
        last.id = lab.blob(&grown);
        let bytes = p.meta()["bytes"].as_u64().unwrap() + (grown.len() - old.len()) as u64;
        p.edit_meta("bytes", Some(json!(bytes)));
    });
    let fetch = b.run(&["mirror", "fetch"]);
    assert_eq!(fetch.status.code(), Some(1), "{}", text(&fetch));
    assert!(String::from_utf8_lossy(&fetch.stdout).contains("rewritten"), "{}", text(&fetch));
    assert_no_part_of(&token, &text(&fetch), "mirror fetch");
    assert_no_part_of(&token, &text(&b.run(&["mirror", "status"])), "mirror status");
    // From genesis (a fetcher that never verified it), the same words.
    let c = lab.machine("machine-c");
    assert_no_part_of(&token, &text(&c.run(&["mirror", "fetch"])), "mirror fetch from genesis");
}

/// `mirror status` shows each mirror's last fetch verdict from that remote's record: a fetch
/// from another remote (`--remote backup`) does not turn a mirror origin's last fetch named
/// rewritten into `verified`, and a verified copy with no verdict on record is `unknown`.
#[test]
fn a_fetch_from_another_remote_does_not_make_a_rewritten_mirror_verified() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    b.fetch_ok();
    // Another history under A's ref (a new root commit: not a descendant of the verified one).
    let parts = lab.parts(&lab.journal_ref(&a_id).unwrap());
    let mut forged_parts = parts.clone();
    let mut bytes = lab.cat(&parts.segments[0].id);
    let at = bytes.windows(9).position(|w| w == b"Alpha one").unwrap();
    bytes[at + 8] = b'E';
    forged_parts.segments[0].id = lab.blob(&bytes);
    lab.set_ref(&a_id, &lab.write(&forged_parts, None));
    let fetched = b.fetch_refused();
    assert_eq!(verdict(&fetched, &a_id), "rewritten", "{fetched}");
    assert_eq!(working_copy(&b.status(), &a_id)["verification"], "rewritten", "status shows the last fetch's verdict");

    // A second remote, fetched from once.
    let backup = lab.dir.path().join("backup.git");
    git(lab.dir.path(), &["init", "-q", "--bare", backup.to_str().unwrap()]);
    b.git(&["remote", "add", "backup", backup.to_str().unwrap()]);
    let other = b.run(&["mirror", "fetch", "--remote", "backup"]);
    assert_eq!(other.status.code(), Some(0), "{}", text(&other));

    let status = b.status();
    let shown = working_copy(&status, &a_id)["verification"].clone();
    assert_ne!(shown, "verified", "origin's last fetch named this mirror rewritten: {status}");
}

/// §7: a fetched ref must name a commit. A ref naming a bare tree holding a valid mirror is
/// rewritten and never becomes the verified copy (a verified ref naming a tree could never
/// be judged against again).
#[test]
fn a_journal_ref_naming_a_tree_is_not_verified() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    let pushed = lab.journal_ref(&a_id).unwrap();
    let tree = lab.git(&["rev-parse", &format!("{pushed}^{{tree}}")]);
    lab.set_ref(&a_id, &tree);
    let (_, fetched, out) = b.mirror_json("fetch", &[]);
    assert_ne!(verdict(&fetched, &a_id), "verified", "a tree is not a mirror commit: {}", text(&out));
}

/// A ref under refs/abcd/journals/ whose last part is not a journal id is named by the fetch
/// (its name quoted) and shown by status from the fetch record; a name with multi-byte
/// characters there does not stop `mirror status` (ids are shortened by characters).
#[test]
fn a_remote_ref_with_multibyte_characters_does_not_stop_status() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    a.push_ok();
    let blob = lab.blob(b"anything\n");
    lab.git(&["update-ref", "refs/abcd/journals/ééééé", &blob]);
    let fetched = b.fetch_refused();
    assert!(fetched.to_string().contains("not a journal id"), "{fetched}");
    let out = b.run(&["mirror", "status"]);
    assert_eq!(out.status.code(), Some(0), "mirror status: {}", text(&out));
}

// ----- 2. a push loses, corrupts, or sends what it should not ------------------------------

/// §6 step 6 adopts a remote commit only when it also verifies from the local ref under §7:
/// a child whose segments are the pushed ones and whose mirror.json lies (here `bytes` one
/// too many) is named and left, the local ref stays, and the push goes on once the remote
/// is put back.
#[test]
fn a_forged_child_is_not_adopted_as_the_local_ref() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    let pushed = lab.journal_ref(&a_id).unwrap();
    let forged = lab.forge_child(&a_id, |_, p| {
        let n = p.meta()["bytes"].as_u64().unwrap();
        p.edit_meta("bytes", Some(json!(n + 1)));
    });
    a.add("Alpha two");
    let (code, json, out) = a.mirror_json("push", &[]);
    assert_eq!(code, Some(1), "{}", text(&out));
    let local = a.git(&["rev-parse", &format!("refs/abcd/journals/{a_id}")]);
    let why = journal_entry(&json, &a_id)["why"].as_str().unwrap_or("").to_string();
    assert_ne!(local, forged, "the local ref was moved to the forgery; the push said: {why}");
    assert!(!why.contains("repaired or replaced"), "the journal is named repaired though it was not: {why}");
    // The remote put back: this machine pushes again.
    lab.set_ref(&a_id, &pushed);
    let (code, json, out) = a.mirror_json("push", &[]);
    assert_eq!(code, Some(0), "after the remote is put back the journal still does not push: {json} {}", text(&out));
}

/// A background push that finds the mirror lock held (here, as a fetch would hold it) waits
/// its turn instead of giving up: the hook has already stamped the interval's start, so a
/// push given up would leave the change off the remote for a whole interval (here an hour).
#[test]
fn a_background_push_that_finds_the_lock_held_is_not_dropped_for_the_interval() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    let a_id = a.journal_id();
    let on = a.run(&["mirror", "auto", "on", "--every", &LONG_EVERY_SECONDS.to_string()]);
    assert_eq!(on.status.code(), Some(0), "{}", text(&on));
    // What a `mirror fetch` running at the time holds.
    let lock_path = a.repo_home(&lab.root_commit).join("mirror.lock");
    let lock = abcd::journal::lock::JournalLock::acquire(&lock_path, Duration::ZERO).expect("the lock is free");
    hook_ok(&a);
    // The fetch ends while (or before) the background push waits its turn.
    drop(lock);
    wait_for_background_pushes_to_end(&a);
    assert!(
        lab.journal_ref(&a_id).is_some(),
        "the journal changed before two hooks ran, and is not on the remote (last push record: {})",
        last_push(&a)
    );
}

/// §6 step 2 scans a line's raw JSON text and the strings it decodes to: a secret written
/// behind abcd's back with a JSON escape (`\u0067hp_…` is `ghp_…`) stays on the machine.
#[test]
fn a_secret_spelled_with_json_escapes_stays_on_its_machine() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    let token = fake_token();
    a.add("Alpha one");
    let a_id = a.journal_id();
    // As a shell would append it: a chained line whose title decodes to the token.
    let head = a.head();
    let (seq, prev) = head.chain_position();
    let event = NewEvent {
        kind: "test.note".into(),
        actor: Actor { session: None, pid: 4242, tool: "sh".into() },
        data: json!({"title": "Deploy with PLACEHOLDER"}),
    };
    let (line, _) = format::encode_line(seq + 1, chain::plus_ms(head.time, 1000), &event, &prev).unwrap();
    let body = &line[..line.len() - 1 - format::HASH_SUFFIX_LEN];
    let escaped = format!("\\u0067{}", &token[1..]);
    let body = String::from_utf8(body.to_vec()).unwrap().replace("PLACEHOLDER", &escaped);
    let hash = format::hash_body(body.as_bytes());
    let line = format!("{body},\"hash\":\"{}\"}}\n", hash.to_hex());
    let decoded: Value = serde_json::from_str(line.trim_end()).unwrap();
    assert!(decoded["data"]["title"].as_str().unwrap().contains(&token), "the line decodes to the token");
    {
        use std::io::Write;
        std::fs::OpenOptions::new().append(true).open(a.journal_path()).unwrap().write_all(line.as_bytes()).unwrap();
    }
    let verified = a.run(&["journal", "verify"]);
    assert!(String::from_utf8_lossy(&verified.stdout).contains(&format!("{} verified", seq + 2)), "{}", text(&verified));

    let _ = a.run(&["mirror", "push"]);
    let pushed = lab.journal_ref(&a_id).expect("the lines before it are pushed");
    let parts = lab.parts(&pushed);
    let all: Vec<u8> = parts.segments.iter().flat_map(|s| lab.cat(&s.id)).collect();
    assert_no_part_of(&token[1..], &String::from_utf8_lossy(&all), "the remote's segments");
}

/// §6 step 4 scans what a saved-aside commit changes and what the lane's commits under it,
/// which git pushes with the ref and no remote branch holds, change: a token file committed
/// there by an agent keeps the saved ref on this machine.
#[test]
fn a_saved_ref_whose_lane_commit_holds_a_secret_stays_on_its_machine() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    let token = fake_token();
    a.add("Alpha one");
    let base = a.git(&["rev-parse", "HEAD"]);
    // The lane: one agent commit adding a token file, then uncommitted work saved aside.
    a.git(&["checkout", "-q", "-b", "lane-impl"]);
    std::fs::write(a.root.join(".env"), format!("GITHUB_TOKEN={token}\n")).unwrap();
    a.git(&["add", ".env"]);
    a.git(&["commit", "-q", "-m", "agent: wire the deploy"]);
    std::fs::write(a.root.join("README"), "work in progress\n").unwrap();
    let stash = a.git(&["stash", "create"]);
    assert!(!stash.is_empty());
    let saved = "refs/abcd/saved/r1/impl/20261201T090000000Z";
    a.git(&["update-ref", saved, &stash]);
    a.git(&["checkout", "-q", "-f", &base]);
    let _ = a.run(&["mirror", "push"]);
    let on_remote = lab.git(&["for-each-ref", "--format=%(objectname)", saved]);
    assert!(on_remote.is_empty(), "the saved ref went to the remote with the lane commit's .env holding a token");
}

// ----- 5. code and MIRROR.md disagree --------------------------------------------------------

/// MIRROR.md §5 keeps `machine` to 1 to 64 bytes of printable ASCII without spaces, and §7
/// rule 3 holds a fetched mirror to it: `my laptop` and `büro` are rewritten, a name of 64
/// such bytes verifies and one of 65 is rewritten.
#[test]
fn a_machine_name_is_held_to_mirror_md_on_both_sides() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    b.fetch_ok();
    let pushed = lab.journal_ref(&a_id).unwrap();
    let longest = "m".repeat(64);
    let too_long = "m".repeat(65);
    for (name, good) in [(longest.as_str(), true), (too_long.as_str(), false), ("my laptop", false), ("büro", false)] {
        lab.forge_child(&a_id, |_, p| p.edit_meta("machine", Some(json!(name))));
        let (code, json, out) = b.mirror_json("fetch", &[]);
        let expected = if good { "verified" } else { "rewritten" };
        assert_eq!(verdict(&json, &a_id), expected, "machine {name:?}: {json} {}", text(&out));
        assert_eq!(code, Some(if good { 0 } else { 1 }));
        if !good {
            lab.set_ref(&a_id, &pushed);
        }
    }
}

/// §8: `unreadable` is "a failure here, not a finding about the mirror". A ref in the remote
/// naming a blob (or anything not a commit) is a finding about the mirror: `rewritten`.
#[test]
fn a_journal_ref_naming_a_blob_is_rewritten() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    a.push_ok();
    let id = "0123456789abcdef0123456789abcdef";
    let blob = lab.blob(b"not a mirror commit\n");
    lab.set_ref(id, &blob);
    let fetched = b.fetch_refused();
    assert_eq!(verdict(&fetched, id), "rewritten", "{fetched}");
    assert_good(&fetched, &a.journal_id());
}

// ----- 4. unbounded -------------------------------------------------------------------------

/// `mirror fetch` under `/usr/bin/time`: its exit code and its peak resident set, in KiB.
fn fetch_peak_kib(m: &Machine) -> (Option<i32>, u64) {
    let probe = m.abcd();
    let envs: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        probe.get_envs().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))).collect();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "peak_kib=%M", env!("CARGO_BIN_EXE_abcd"), "mirror", "fetch"])
        .current_dir(&m.root)
        .env_remove("ABCD_TEST_NOW")
        .envs(envs)
        .stdin(Stdio::null())
        .output()
        .expect("/usr/bin/time runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let peak = err.lines().rev().find_map(|l| l.strip_prefix("peak_kib=")).and_then(|v| v.trim().parse().ok());
    (out.status.code(), peak.unwrap_or_else(|| panic!("no peak in {}", text(&out))))
}

/// A forged mirror listing 400,000 segments (one blob named 400,000 times) is refused from
/// its segments/ tree's size, before anything lists it: the fetcher's peak stays within
/// twice what git's own fetch of those objects needs (a verifier that listed the tree first
/// peaked at about 150 MB here, 218 MB at 600,000, with FETCH_PARALLEL judged at once).
#[test]
fn a_mirror_listing_too_many_segments_is_refused_with_flat_memory() {
    const FORGED_SEGMENTS: u64 = 400_000;
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    let (code, baseline) = fetch_peak_kib(&b);
    assert_eq!(code, Some(0));
    let pushed = lab.journal_ref(&a_id).unwrap();
    let mut parts = lab.parts(&pushed);
    let one = parts.segments[0].id.clone();
    parts.segments = (0..FORGED_SEGMENTS).map(|i| Entry::blob(&one, &segment_name(i))).collect();
    lab.set_ref(&a_id, &lab.write(&parts, Some(&pushed)));
    // The floor: git itself, fetching the forged objects (its index-pack holds the tree).
    let c = lab.machine("machine-c");
    let git_fetch = Command::new("/usr/bin/time")
        .args(["-f", "peak_kib=%M", "git", "fetch", "-q", "origin", "+refs/abcd/journals/*:refs/floor/*"])
        .current_dir(&c.root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("/usr/bin/time runs");
    let floor: u64 = String::from_utf8_lossy(&git_fetch.stderr)
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("peak_kib=").and_then(|v| v.trim().parse().ok()))
        .expect("git fetch's peak");
    let (code, forged) = fetch_peak_kib(&b);
    assert_eq!(code, Some(1), "the forgery is named");
    assert!(
        forged <= 2 * floor.max(baseline),
        "a fetch's peak went from {baseline} KiB to {forged} KiB for one forged segment list (git fetch of it alone: {floor} KiB)"
    );
}
