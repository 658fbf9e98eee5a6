//! Journals mirrored through the repository's own git remote (issue 22 acceptance items 1
//! and 2), through the built binary: a bare remote on disk and clones of it, each its own
//! "machine" with its own home store and `ABCD_MACHINE`. The layout and verdicts are
//! journal-format/MIRROR.md's; the verbs' output is the mirror contract's.

use crate::common::remote;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Instant;

use abcd::event::COMPACTION_RECORDED;
use abcd::journal::anchor::AnchorStore;
use abcd::journal::storage::RealDisk;
use abcd::journal::{Actor, Journal, JournalPaths, NewEvent};
use remote::{Lab, Machine, text};
use serde_json::{Value, json};

/// Lines a segment holds at most (MIRROR.md §4); the incremental test fills past it.
const SEGMENT_MAX_LINES: u64 = abcd::mirror::SEGMENT_MAX_LINES as u64;
/// Times a push is killed (issue 22 acceptance item 2); `ABCD_MIRROR_KILLS` asks for more.
const KILLS: u32 = 20;

fn kills() -> u32 {
    std::env::var("ABCD_MIRROR_KILLS").ok().and_then(|n| n.parse().ok()).filter(|n| *n >= KILLS).unwrap_or(KILLS)
}
/// Rounds of two machines pushing at once.
const SIMULTANEOUS_ROUNDS: usize = 3;

/// Events appended at once when a test fills a journal: about 80 KB of `compaction.recorded`
/// lines, inside the journal's batch limits (`MAX_BATCH_EVENTS`, `MAX_BATCH_BYTES`).
const FILL_BATCH_EVENTS: usize = 256;

/// The verdicts that leave `mirror fetch` at exit 0.
const GOOD_VERDICTS: [&str; 2] = ["verified", "unchanged"];

// ----- reading the verbs' JSON ------------------------------------------------------------

/// The entry of `list[key]` for `journal_id`.
fn entry<'a>(list: &'a Value, key: &str, journal_id: &str) -> Option<&'a Value> {
    list[key].as_array().unwrap_or_else(|| panic!("no {key} array in {list}")).iter().find(|e| e["journal_id"] == journal_id)
}

/// A fetch's verdict for one journal.
fn verdict(fetch: &Value, journal_id: &str) -> String {
    let e = entry(fetch, "journals", journal_id).unwrap_or_else(|| panic!("fetch names no journal {journal_id}: {fetch}"));
    e["verdict"].as_str().unwrap().to_string()
}

/// A status' working copy for one journal.
fn working_copy<'a>(status: &'a Value, journal_id: &str) -> &'a Value {
    entry(status, "working_copies", journal_id)
        .unwrap_or_else(|| panic!("status shows no working copy with journal {journal_id}: {status}"))
}

/// A working copy's open items as (id, title), each `working` (no test here waits on anything).
fn open_items(wc: &Value) -> BTreeSet<(String, String)> {
    wc["open_items"]
        .as_array()
        .unwrap_or_else(|| panic!("no open_items in {wc}"))
        .iter()
        .map(|i| {
            assert_eq!(i["state"], "working", "{i}");
            (i["id"].as_str().unwrap().to_string(), i["title"].as_str().unwrap().to_string())
        })
        .collect()
}

fn items<T: AsRef<str>>(list: &[(String, T)]) -> BTreeSet<(String, String)> {
    list.iter().map(|(id, t)| (id.clone(), t.as_ref().to_string())).collect()
}

/// The status shows `machine`'s working copy from the mirror, judged `verification` (or
/// `unchanged` for `verified`), with exactly `open` as its open items.
fn assert_mirrored<T: AsRef<str>>(status: &Value, machine: &Machine, verification: &str, open: &[(String, T)]) {
    let wc = working_copy(status, &machine.journal_id());
    assert_eq!(wc["machine"], machine.name.as_str(), "{wc}");
    assert_eq!(wc["path"], machine.path().as_str(), "{wc}");
    assert_eq!(wc["source"], "mirror", "{wc}");
    let shown = wc["verification"].as_str().unwrap_or_else(|| panic!("no verification in {wc}"));
    // A copy fetched again unchanged is as verified as it was.
    let same = shown == verification || (verification == "verified" && GOOD_VERDICTS.contains(&shown));
    assert!(same, "{} shown as {shown}, not {verification}: {wc}", machine.name);
    assert_eq!(open_items(wc), items(open), "{}'s open items as another machine sees them", machine.name);
}

/// `mirror push`, which must exit 0; its JSON.
fn push_ok(m: &Machine) -> Value {
    let (code, json, out) = m.mirror_json("push");
    assert_eq!(code, Some(0), "{}: mirror push: {}", m.name, text(&out));
    json
}

/// `mirror fetch` and every verdict good; its JSON.
fn fetch_ok(m: &Machine) -> Value {
    let (code, json, out) = m.mirror_json("fetch");
    assert_eq!(code, Some(0), "{}: mirror fetch: {}", m.name, text(&out));
    for j in json["journals"].as_array().unwrap() {
        assert!(GOOD_VERDICTS.contains(&j["verdict"].as_str().unwrap()), "{}: {j}", m.name);
    }
    json
}

/// `mirror fetch`, which must exit 1 naming a problem; its JSON.
fn fetch_refused(m: &Machine) -> Value {
    let (code, json, out) = m.mirror_json("fetch");
    assert_eq!(code, Some(1), "{}: mirror fetch: {}", m.name, text(&out));
    json
}

/// The commit `m` keeps as the last verified copy of `journal_id` from `origin`.
fn verified_ref(m: &Machine, journal_id: &str) -> String {
    m.git(&["rev-parse", "--verify", &format!("refs/abcd/verified/origin/journals/{journal_id}")])
}

/// Appends `n` ordinary events (`compaction.recorded`, as the pre-compact hook writes) to
/// `m`'s working-copy journal through the library: a thousand lines without a thousand
/// processes.
fn append_compactions(m: &Machine, n: u64) {
    let journal = Journal::new(RealDisk::shared(), JournalPaths::beside(&m.journal_path()), Some(AnchorStore::new(&m.home)));
    let event = NewEvent {
        kind: COMPACTION_RECORDED.to_string(),
        actor: Actor::this_process(None),
        data: json!({"session": null, "trigger": "manual"}),
    };
    let events = vec![event; n as usize];
    for chunk in events.chunks(FILL_BATCH_EVENTS) {
        journal.append_batch(chunk, None).expect("the journal takes the events");
    }
}

fn segment_name(first_seq: u64) -> String {
    format!("{first_seq:020}.jsonl")
}

// ----- item 1: push, fetch, status, and what a fetch refuses ------------------------------

#[test]
fn two_machines_push_and_a_third_sees_every_open_item() {
    let lab = Lab::new();
    let (a, b, c) = (lab.machine("machine-a"), lab.machine("machine-b"), lab.machine("machine-c"));
    let a_open = vec![(a.add("Alpha one"), "Alpha one"), (a.add("Alpha two"), "Alpha two")];
    let finished = a.add("Alpha finished");
    a.ok(&["checklist", "set", &finished, "--state", "done"]);
    let b_open = vec![(b.add("Bravo one"), "Bravo one")];
    let c_open = vec![(c.add("Charlie one"), "Charlie one")];

    for m in [&a, &b] {
        let lines = m.journal_lines();
        let pushed = push_ok(m);
        let j =
            entry(&pushed, "journals", &m.journal_id()).unwrap_or_else(|| panic!("{} pushed no working-copy journal: {pushed}", m.name));
        assert_eq!(j["outcome"], "pushed", "{j}");
        assert_eq!(j["path"], m.path().as_str(), "{j}");
        assert_eq!(j["head_seq"], lines - 1, "{j}");
        assert_eq!(j["new_events"], lines, "the first push carries every line: {j}");
    }

    // What reached the remote is MIRROR.md's layout: the journal verbatim, the claims recorded.
    let commit = lab.journal_ref(&a.journal_id());
    assert_eq!(lab.parents(&commit), Vec::<String>::new(), "a journal's first mirror commit has no parent");
    assert_eq!(lab.git(&["ls-tree", "--name-only", &commit]), "mirror.json\nsegments");
    assert_eq!(lab.mirrored_bytes(&commit), a.journal_bytes(), "the segments hold the journal's bytes verbatim");
    let claims: Value = serde_json::from_str(&lab.git(&["cat-file", "blob", &format!("{commit}:mirror.json")])).unwrap();
    let fields: BTreeSet<&str> = claims.as_object().unwrap().keys().map(String::as_str).collect();
    let expected: BTreeSet<&str> =
        ["format", "journal_id", "scope", "repository", "machine", "path", "head_seq", "head_hash", "head_time", "bytes"].into();
    assert_eq!(fields, expected, "{claims}");
    assert_eq!(claims["format"], "abcd-mirror/1");
    assert_eq!(claims["journal_id"], a.journal_id().as_str());
    assert_eq!(claims["machine"], "machine-a");
    assert_eq!(claims["path"], a.path().as_str());
    assert_eq!(claims["repository"], a.git(&["rev-list", "--max-parents=0", "HEAD"]).as_str());
    assert_eq!(claims["head_seq"], a.journal_lines() - 1);
    assert_eq!(claims["bytes"], a.journal_bytes().len());

    let fetched = c.run(&["mirror", "fetch"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    let lines = String::from_utf8(fetched.stdout.clone()).unwrap();
    for m in [&a, &b] {
        let line = format!("verified {} {} {}: seq {}", m.journal_id(), m.name, m.path(), m.journal_lines() - 1);
        assert!(lines.lines().any(|l| l == line), "fetch names {line:?}: {}", text(&fetched));
    }
    let again = fetch_ok(&c);
    assert_eq!(verdict(&again, &a.journal_id()), "unchanged");
    assert_eq!(verdict(&again, &b.journal_id()), "unchanged");

    let status = c.status();
    assert_mirrored(&status, &a, "verified", &a_open);
    assert_mirrored(&status, &b, "verified", &b_open);
    let a_wc = working_copy(&status, &a.journal_id());
    assert_eq!(a_wc["head_seq"], a.journal_lines() - 1, "{a_wc}");
    let own = working_copy(&status, &c.journal_id());
    assert_eq!((own["machine"].as_str(), own["source"].as_str()), (Some("machine-c"), Some("local")), "{own}");
    assert_eq!(open_items(own), items(&c_open));
}

#[test]
fn a_later_push_arrives_incrementally() {
    let lab = Lab::new();
    let (a, b, c) = (lab.machine("machine-a"), lab.machine("machine-b"), lab.machine("machine-c"));
    let mut a_open = vec![(a.add("Alpha one"), "Alpha one")];
    let a_id = a.journal_id();
    // Past one segment, so the first segment is an old one the next push must leave alone.
    append_compactions(&a, SEGMENT_MAX_LINES + 3 - a.journal_lines());
    a_open.push((a.add("Alpha two"), "Alpha two"));
    push_ok(&a);
    let b_open = vec![(b.add("Bravo one"), "Bravo one")];
    push_ok(&b);

    let first = lab.journal_ref(&a_id);
    let first_segments = lab.segments(&first);
    let names: Vec<String> = first_segments.keys().cloned().collect();
    assert_eq!(names, [segment_name(0), segment_name(SEGMENT_MAX_LINES)], "a full segment, then the rest");
    assert_eq!(lab.mirrored_bytes(&first), a.journal_bytes());
    let fetched = fetch_ok(&c);
    assert_eq!(verdict(&fetched, &a_id), "verified");

    a_open.push((a.add("Alpha three"), "Alpha three"));
    let lines = a.journal_lines();
    let pushed = push_ok(&a);
    let j = entry(&pushed, "journals", &a_id).unwrap();
    assert_eq!(j["outcome"], "pushed", "{j}");
    assert_eq!((j["head_seq"].as_u64(), j["new_events"].as_u64()), (Some(lines - 1), Some(1)), "one new event: {j}");

    let second = lab.journal_ref(&a_id);
    assert_eq!(lab.parents(&second), std::slice::from_ref(&first), "the new mirror commit's parent is the previous one");
    let second_segments = lab.segments(&second);
    assert_eq!(second_segments.keys().collect::<Vec<_>>(), first_segments.keys().collect::<Vec<_>>(), "no new segment for one line");
    let old = segment_name(0);
    assert_eq!(second_segments[&old], first_segments[&old], "the full segment is the same blob");
    let last = segment_name(SEGMENT_MAX_LINES);
    let (before, after) = (lab.blob(&first_segments[&last]), lab.blob(&second_segments[&last]));
    assert!(after.len() > before.len() && after.starts_with(&before), "the last segment only grows");
    assert_eq!(lab.mirrored_bytes(&second), a.journal_bytes());

    let fetched = fetch_ok(&c);
    assert_eq!(verdict(&fetched, &a_id), "verified");
    assert_eq!(verdict(&fetched, &b.journal_id()), "unchanged");
    assert_eq!(entry(&fetched, "journals", &a_id).unwrap()["head_seq"], lines - 1);
    assert_eq!(verified_ref(&c, &a_id), second);
    let status = c.status();
    assert_mirrored(&status, &a, "verified", &a_open);
    assert_mirrored(&status, &b, "verified", &b_open);

    // Nothing new: nothing pushed, the remote's ref where it was.
    let pushed = push_ok(&a);
    assert_eq!(entry(&pushed, "journals", &a_id).unwrap()["outcome"], "up_to_date", "{pushed}");
    assert_eq!(lab.journal_ref(&a_id), second);
}

#[test]
fn a_blob_rewritten_in_the_remote_is_named_while_the_other_journal_still_shows() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    // c verifies A's first push only, e its second, d never fetches before the rewrite.
    let (c, d, e) = (lab.machine("machine-c"), lab.machine("machine-d"), lab.machine("machine-e"));
    let mut a_open = vec![(a.add("Alpha one"), "Alpha one"), (a.add("Alpha two"), "Alpha two")];
    let a_id = a.journal_id();
    push_ok(&a);
    let b_open = vec![(b.add("Bravo one"), "Bravo one")];
    push_ok(&b);
    fetch_ok(&c);
    let first = lab.journal_ref(&a_id);
    let c_saw = a_open.clone();
    a_open.push((a.add("Alpha three"), "Alpha three"));
    push_ok(&a);
    fetch_ok(&e);
    let second = lab.journal_ref(&a_id);

    // One byte of a title in the old part of the segment: the chain no longer verifies.
    let forged = lab.forge_segment_byte(&a_id, "\"title\":\"Alpha one\"", "\"title\":\"Alpha onE\"");
    assert_eq!(lab.parents(&forged), std::slice::from_ref(&first), "the forgery keeps the parent");

    for (m, kept) in [(&c, Some((&first, &c_saw))), (&e, Some((&second, &a_open))), (&d, None)] {
        let fetched = fetch_refused(m);
        assert_eq!(verdict(&fetched, &a_id), "rewritten", "{}: {fetched}", m.name);
        assert!(GOOD_VERDICTS.contains(&verdict(&fetched, &b.journal_id()).as_str()), "{}: {fetched}", m.name);
        let status = m.status();
        assert_mirrored(&status, &b, "verified", &b_open);
        assert!(!status.to_string().contains("Alpha onE"), "{}: the forged title is shown: {status}", m.name);
        match kept {
            Some((commit, open)) => {
                assert_eq!(&verified_ref(m, &a_id), commit, "{}: the last verified copy stays", m.name);
                assert_mirrored(&status, &a, "rewritten", open);
            }
            None => {
                let kept = m.git(&["for-each-ref", &format!("refs/abcd/verified/origin/journals/{a_id}")]);
                assert_eq!(kept, "", "{}: nothing of A's journal verified", m.name);
            }
        }
    }
}

#[test]
fn a_ref_moved_back_is_named_rolled_back_and_the_newer_copy_stays() {
    let lab = Lab::new();
    let (a, b, c) = (lab.machine("machine-a"), lab.machine("machine-b"), lab.machine("machine-c"));
    let mut a_open = vec![(a.add("Alpha one"), "Alpha one")];
    let a_id = a.journal_id();
    push_ok(&a);
    let b_open = vec![(b.add("Bravo one"), "Bravo one")];
    push_ok(&b);
    fetch_ok(&c);
    let older = lab.journal_ref(&a_id);
    a_open.push((a.add("Alpha two"), "Alpha two"));
    push_ok(&a);
    let newer = lab.journal_ref(&a_id);
    assert_eq!(verdict(&fetch_ok(&c), &a_id), "verified");

    lab.git(&["update-ref", &format!("refs/abcd/journals/{a_id}"), &older, &newer]);
    let fetched = fetch_refused(&c);
    assert_eq!(verdict(&fetched, &a_id), "rolled_back", "{fetched}");
    assert_eq!(verdict(&fetched, &b.journal_id()), "unchanged", "{fetched}");
    assert_eq!(verified_ref(&c, &a_id), newer, "the newer verified copy stays");
    let status = c.status();
    assert_mirrored(&status, &a, "rolled_back", &a_open);
    assert_mirrored(&status, &b, "verified", &b_open);
}

#[test]
fn a_journal_of_another_repository_is_refused() {
    let lab = Lab::new();
    let (a, c, f) = (lab.machine("machine-a"), lab.machine("machine-c"), lab.foreign_machine("machine-f"));
    let a_open = vec![(a.add("Alpha one"), "Alpha one")];
    push_ok(&a);
    f.add("Foxtrot elsewhere");
    let (a_id, f_id) = (a.journal_id(), f.journal_id());
    push_ok(&f);
    let foreign = lab.journal_ref(&f_id);

    let fetched = fetch_refused(&c);
    assert_eq!(verdict(&fetched, &f_id), "foreign", "{fetched}");
    assert_eq!(verdict(&fetched, &a_id), "verified", "{fetched}");
    let status = c.status();
    assert!(!status.to_string().contains("Foxtrot"), "the foreign journal is shown: {status}");
    assert_mirrored(&status, &a, "verified", &a_open);

    // The foreign journal's commit under the ref of A's journal.
    let before = lab.journal_ref(&a_id);
    lab.git(&["update-ref", &format!("refs/abcd/journals/{a_id}"), &foreign, &before]);
    let fetched = fetch_refused(&c);
    let named = verdict(&fetched, &a_id);
    assert!(["journal_changed", "rewritten"].contains(&named.as_str()), "{fetched}");
    assert_eq!(verified_ref(&c, &a_id), before, "the last verified copy stays");
    let status = c.status();
    assert!(!status.to_string().contains("Foxtrot"), "the foreign journal is shown: {status}");
    assert_mirrored(&status, &a, &named, &a_open);
}

// ----- item 2: concurrency and faults -----------------------------------------------------

fn spawn_push(m: &Machine) -> Child {
    m.abcd().args(["mirror", "push"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("abcd runs")
}

#[test]
fn two_machines_pushing_at_once_lose_nothing() {
    let lab = Lab::new();
    let (a, b, c) = (lab.machine("machine-a"), lab.machine("machine-b"), lab.machine("machine-c"));
    let (mut a_open, mut b_open) = (Vec::new(), Vec::new());
    for round in 0..SIMULTANEOUS_ROUNDS {
        for (m, open) in [(&a, &mut a_open), (&b, &mut b_open)] {
            let title = format!("{} round {round}", m.name);
            open.push((m.add(&title), title));
        }
        let (pa, pb) = (spawn_push(&a), spawn_push(&b));
        for (m, child) in [(&a, pa), (&b, pb)] {
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{} in round {round}: {}", m.name, text(&out));
        }
    }
    fetch_ok(&c);
    let status = c.status();
    assert_mirrored(&status, &a, "verified", &a_open);
    assert_mirrored(&status, &b, "verified", &b_open);
}

/// Sends SIGKILL to `child`'s process group: abcd and the git it started die together, as on
/// a machine that dies (a kill of abcd alone leaves its `git push` finishing the push). A no-op
/// once they exited: the child is not reaped until after the signal, so its group is still ours.
fn kill_group(child: &Child) {
    // SAFETY: a plain syscall on the process group of our own unreaped child.
    unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
}

fn sleep_until(when: Instant) {
    let now = Instant::now();
    if when > now {
        std::thread::sleep(when - now);
    }
}

#[test]
fn a_push_killed_at_twenty_points_leaves_the_remote_consistent() {
    let lab = Lab::new();
    let (a, c) = (lab.machine("machine-a"), lab.machine("machine-c"));
    let mut a_open = vec![(a.add("Before the kills"), "Before the kills".to_string())];
    let a_id = a.journal_id();
    // One whole push with one new event, timed, spreads the kills over a push's length.
    push_ok(&a);
    a_open.push((a.add("Timed push"), "Timed push".to_string()));
    let started = Instant::now();
    push_ok(&a);
    let took = started.elapsed();
    fetch_ok(&c);

    let kills = kills();
    for i in 0..kills {
        let title = format!("Killed push {i}");
        a_open.push((a.add(&title), title));
        let delay = took * i / kills;
        let started = Instant::now();
        let child =
            a.abcd().args(["mirror", "push"]).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0).spawn().expect("abcd runs");
        sleep_until(started + delay);
        // Every other kill takes abcd alone: its `git push` then finishes (or not) on its own,
        // perhaps while the next push runs, as after an OOM kill of abcd.
        if i % 2 == 1 {
            // SAFETY: a plain syscall on our own unreaped child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
        } else {
            kill_group(&child);
        }
        let killed = child.wait_with_output().unwrap();
        let at = format!("kill {i} at {delay:?} (exit {:?})", killed.status.code());

        let (code, fetched, out) = c.mirror_json("fetch");
        assert_eq!(code, Some(0), "{at}: the remote after the kill: {}", text(&out));
        for j in fetched["journals"].as_array().unwrap().iter().filter(|j| j["machine"] == "machine-a") {
            assert!(GOOD_VERDICTS.contains(&j["verdict"].as_str().unwrap()), "{at}: {j}");
        }
        // A line the killed push never saw: when the remote took that push and the local ref
        // did not move, the next push must build on what the remote holds (MIRROR.md §6 step 6).
        let title = format!("After kill {i}");
        a_open.push((a.add(&title), title));
        let out = a.run(&["mirror", "push"]);
        assert_eq!(out.status.code(), Some(0), "{at}: the next push: {}", text(&out));
        assert_eq!(
            a.git(&["rev-parse", &format!("refs/abcd/journals/{a_id}")]),
            lab.journal_ref(&a_id),
            "{at}: the local ref is where the remote took the push"
        );
    }
    fetch_ok(&c);
    assert_mirrored(&c.status(), &a, "verified", &a_open);
    assert_eq!(lab.mirrored_bytes(&lab.journal_ref(&a_id)), a.journal_bytes());
}

/// A push the remote refuses: exit 1, one stderr line naming the journal refused, and nothing
/// local changed (refs under `refs/abcd/`, journal bytes) nor anything in the remote.
fn assert_refused_changes_nothing(lab: &Lab, a: &Machine, why: &str) {
    let a_id = a.journal_id();
    let (refs, journals, remote_refs) = (a.abcd_refs(), a.journal_files(), lab.abcd_refs());
    assert!(refs.contains(&format!("refs/abcd/journals/{a_id}")), "A pushed before: {refs}");
    for json in [false, true] {
        let out = if json { a.run(&["mirror", "push", "--json"]) } else { a.run(&["mirror", "push"]) };
        assert_eq!(out.status.code(), Some(1), "{why}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        // The journal is named by its ref, its id or its working copy's path.
        let names = [format!("refs/abcd/journals/{a_id}"), a_id.clone(), a.path()];
        assert!(
            stderr.lines().any(|l| l.contains("refused") && names.iter().any(|n| l.contains(n.as_str()))),
            "{why}: no line names the refusal of A's journal: {}",
            text(&out)
        );
        if json {
            let pushed: Value = serde_json::from_slice(&out.stdout).unwrap();
            let j = entry(&pushed, "journals", &a_id).unwrap();
            assert_eq!(j["outcome"], "refused", "{j}");
            assert!(j["why"].as_str().is_some_and(|w| !w.is_empty()), "{j}");
        }
        assert_eq!(a.abcd_refs(), refs, "{why}: the local refs moved");
        assert_eq!(a.journal_files(), journals, "{why}: a journal changed");
        assert_eq!(lab.abcd_refs(), remote_refs, "{why}: the remote's refs moved");
    }
}

#[test]
fn a_remote_whose_hook_rejects_the_push_changes_nothing_locally() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    push_ok(&a);
    a.add("Alpha two");
    let hook = lab.remote.join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho 'pushes are closed for maintenance' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_refused_changes_nothing(&lab, &a, "a pre-receive hook that refuses");
    let out = a.run(&["mirror", "push"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("pre-receive hook declined"), "the reason is git's: {}", text(&out));
}

/// A remote that cannot store the ref whatever the pusher's rights (its `refs/abcd` is a
/// file, so no ref can be made below it): the refusal a permission gives, which runs as
/// root too (the chmod test below cannot).
#[test]
fn a_remote_that_cannot_store_the_ref_changes_nothing_locally() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    let blocked = lab.remote.join("refs/abcd");
    std::fs::write(&blocked, "not a folder\n").unwrap();
    // No push has reached the remote: the local ref is made by the first push that does.
    let out = a.run(&["mirror", "push"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).lines().any(|l| l.contains("refused")), "{}", text(&out));
    assert_eq!(a.abcd_refs(), "", "no local ref moved: {}", a.abcd_refs());
    std::fs::remove_file(&blocked).unwrap();
    push_ok(&a);
    a.add("Alpha two");
    std::fs::rename(lab.remote.join("refs/abcd"), lab.remote.join("refs/abcd-aside")).unwrap();
    std::fs::write(&blocked, "not a folder\n").unwrap();
    let (refs, journals) = (a.abcd_refs(), a.journal_files());
    let out = a.run(&["mirror", "push"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!((a.abcd_refs(), a.journal_files()), (refs, journals), "nothing local changed");
}

/// `mode` on every directory at or below `dir`.
fn chmod_dirs(dir: &Path, mode: u32) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            chmod_dirs(&entry.path(), mode);
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_remote_that_cannot_be_written_changes_nothing_locally() {
    // SAFETY: a plain syscall with no arguments.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("skipped: root writes through any permission");
        return;
    }
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    push_ok(&a);
    a.add("Alpha two");
    let locked = [lab.remote.join("refs"), lab.remote.join("objects")];
    for dir in &locked {
        chmod_dirs(dir, 0o555);
    }
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| assert_refused_changes_nothing(&lab, &a, "a remote not writable")));
    for dir in &locked {
        chmod_dirs(dir, 0o755);
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
