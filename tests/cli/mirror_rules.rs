//! The rules of journal-format/MIRROR.md §6–§8 that the acceptance tests (tests/cli/mirror.rs)
//! do not pin, one test per rule, through the built binary with real git: a bare
//! repository as the remote and clones of it, each a "machine" with its own home store and
//! `ABCD_MACHINE`. Every crafted remote state is made with git plumbing in the bare
//! repository (hash-object, mktree, commit-tree, update-ref), as anyone who can push could.

use crate::common;
use crate::common::chain;
use crate::common::mirror_lab;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use abcd::event::{COMPACTION_RECORDED, Scope};
use abcd::journal::format::{self, Actor, NewEvent};
use chain::Chain;
use mirror_lab::{
    BACKGROUND_POLL, BACKGROUND_WAIT, Entry, LONG_EVERY_SECONDS, Lab, Machine, Parts, assert_good, assert_no_part_of, fake_token, hook_ok,
    journal_entry, last_push, open_titles, segment_name, text, verdict, verified_ref, why, working_copy,
};
use serde_json::{Value, json};

// The values MIRROR.md §2, §4 and the auto setting name; each is checked against the
// library's constant once, so a change to either side is seen.
const SEGMENT_MAX_LINES: usize = 1024;
const SEGMENT_MAX_BYTES: usize = 1_048_576;
const MIRROR_JSON_MAX_BYTES: usize = 65_536;
const REMOTE_NAME_MAX: usize = 64;
const AUTO_EVERY_MIN_SECONDS: u64 = 10;
const AUTO_EVERY_MAX_SECONDS: u64 = 86_400;
/// The folder of the repository's home where this machine keeps mirrors' folded states.
const FOLDED_DIR: &str = "mirror-folded";

#[test]
fn the_spec_values_are_the_library_constants() {
    assert_eq!(SEGMENT_MAX_LINES, abcd::mirror::SEGMENT_MAX_LINES);
    assert_eq!(SEGMENT_MAX_BYTES, abcd::mirror::SEGMENT_MAX_BYTES);
    assert_eq!(MIRROR_JSON_MAX_BYTES, abcd::mirror::MIRROR_JSON_MAX_BYTES);
    assert_eq!(REMOTE_NAME_MAX, abcd::git::objects::REMOTE_NAME_MAX);
    assert_eq!(AUTO_EVERY_MIN_SECONDS, abcd::command::mirror::AUTO_EVERY_MIN_SECONDS);
    assert_eq!(AUTO_EVERY_MAX_SECONDS, abcd::command::mirror::AUTO_EVERY_MAX_SECONDS);
    assert_eq!(FOLDED_DIR, abcd::mirror::folded::FOLDED_DIR);
}

// ----- §7 rule 1: shape -------------------------------------------------------------------

/// A forgery of A's mirror (a child of the commit B verified), the words its why must hold
/// for a fetcher with a verified copy, and for one without.
type Forgery = (&'static str, Box<dyn Fn(&Lab, &mut Parts)>, &'static str);

#[test]
fn a_mirror_commit_not_shaped_as_section_3_says_is_rewritten_and_names_the_rule() {
    let lab = Lab::new();
    let (a, b, c) = (lab.machine("machine-a"), lab.machine("machine-b"), lab.machine("machine-c"));
    a.add("Alpha one");
    a.add("Alpha two");
    b.add("Bravo one");
    let (a_id, b_id) = (a.journal_id(), b.journal_id());
    a.push_ok();
    b.push_ok();
    c.fetch_ok();
    let pushed = lab.journal_ref(&a_id).unwrap();
    let forgeries: Vec<Forgery> = vec![
        (
            "an extra entry in the root tree",
            Box::new(|lab, p| p.extra_root.push(Entry::blob(&lab.blob(b"hello\n"), "README"))),
            "other than mirror.json and segments",
        ),
        ("no segments/ tree", Box::new(|_, p| p.with_segments = false), "other than mirror.json and segments"),
        (
            "a segment name of 19 digits",
            Box::new(|_, p| p.segments[0].name = format!("{:019}.jsonl", 0)),
            "not a segment named <20 digits>.jsonl",
        ),
        ("a segment named .txt", Box::new(|_, p| p.segments[0].name = format!("{:020}.txt", 0)), "not a segment named <20 digits>.jsonl"),
        (
            "a file in segments/ that is not a segment",
            Box::new(|lab, p| p.segments.push(Entry::blob(&lab.blob(b"note\n"), "notes.jsonl"))),
            "not a segment named <20 digits>.jsonl",
        ),
        (
            "a tree in segments/",
            Box::new(|lab, p| {
                let inner = lab.mktree(&p.segments.clone());
                p.segments.push(Entry { mode: "040000".into(), kind: "tree".into(), id: inner, name: segment_name(99) });
            }),
            "not a segment named <20 digits>.jsonl",
        ),
        ("no segment at all", Box::new(|_, p| p.segments.clear()), "segments"),
        ("mirror.json with an unknown field", Box::new(|_, p| p.edit_meta("signed_by", Some(json!("mallory")))), "unknown field"),
        ("mirror.json missing a field", Box::new(|_, p| p.edit_meta("path", None)), "missing field"),
        ("mirror.json of another format", Box::new(|_, p| p.edit_meta("format", Some(json!("abcd-mirror/3")))), "format"),
        ("mirror.json that is not JSON", Box::new(|_, p| p.json = b"not json\n".to_vec()), "mirror.json"),
        (
            "mirror.json one byte over its limit",
            Box::new(|_, p| p.json.resize(MIRROR_JSON_MAX_BYTES + 1, b' ')),
            "mirror.json is over 65536 bytes",
        ),
    ];
    // D never fetched A's journal: each forgery is judged from genesis there.
    for (what, change, words) in &forgeries {
        let forged = lab.forge_child(&a_id, |lab, p| change(lab, p));
        let d = lab.machine(&format!("machine-d{}", forged.get(..8).unwrap()));
        for m in [&c, &d] {
            let fetched = m.fetch_refused();
            assert_eq!(verdict(&fetched, &a_id), "rewritten", "{what} ({}): {fetched}", m.name);
            let why = why(&fetched, &a_id);
            assert!(why.contains("is not a mirror commit") && why.contains(words), "{what} ({}): the why names the rule: {why}", m.name);
            assert_good(&fetched, &b_id);
        }
        assert_eq!(verified_ref(&c, &a_id), pushed, "{what}: the last verified copy stays");
        assert_eq!(verified_ref(&d, &a_id), "", "{what}: nothing of the forgery is kept as verified");
        lab.set_ref(&a_id, &pushed);
    }

    // A segment named with 20 digits, but not its first line's seq (rule 2's name rule).
    lab.forge_child(&a_id, |_, p| p.segments[0].name = segment_name(1));
    let d = lab.machine("machine-d-name");
    let fetched = d.fetch_refused();
    assert_eq!(verdict(&fetched, &a_id), "rewritten", "{fetched}");
    assert!(why(&fetched, &a_id).contains("not the seq its name gives"), "{fetched}");
    let fetched = c.fetch_refused();
    assert_eq!(verdict(&fetched, &a_id), "rewritten", "{fetched}");
    assert!(why(&fetched, &a_id).contains(&segment_name(0)), "the verified copy's segment is named: {fetched}");
    lab.set_ref(&a_id, &pushed);

    // The other side of the mirror.json limit: padded to exactly 64 KiB, it verifies.
    let padded = lab.forge_child(&a_id, |_, p| p.json.resize(MIRROR_JSON_MAX_BYTES, b' '));
    let fetched = c.fetch_ok();
    assert_eq!(verdict(&fetched, &a_id), "verified", "{fetched}");
    assert_eq!(verified_ref(&c, &a_id), padded);
}

// ----- §7 rule 1: a segment's byte limit, on both sides -----------------------------------

/// A repository journal of this repository whose lines total exactly `total` bytes, each
/// line under the journal's own line limit.
fn chain_of_bytes(journal_id: &str, root_commit: &str, total: usize) -> Chain {
    const LINE: usize = 60_000;
    let scope = Scope::Repository { root_commit: root_commit.into() };
    let t = chain::at("2026-12-01T09:00:00.000Z");
    let mut c = Chain::open(journal_id, scope, t, 4100);
    let rest = total - c.bytes().len();
    let n = rest.div_ceil(LINE);
    for i in 0..n {
        let want = if i + 1 == n { rest - LINE * (n - 1) } else { LINE };
        let time = chain::plus_ms(t, 1000 * (i as i64 + 1));
        let actor = chain::actor(None, 4100);
        let base = c.encode(time, &actor, "test.pad", json!({"pad": ""})).0.len();
        c.push(time, &actor, "test.pad", json!({"pad": "x".repeat(want - base)}));
    }
    assert_eq!(c.bytes().len(), total);
    c
}

#[test]
fn a_segment_over_one_mebibyte_is_rewritten_and_one_of_exactly_that_verifies() {
    let lab = Lab::new();
    let c = lab.machine("machine-c");
    let scope = Scope::Repository { root_commit: lab.root_commit.clone() };
    let (at_limit, over) = ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    for (id, total) in [(at_limit, SEGMENT_MAX_BYTES), (over, SEGMENT_MAX_BYTES + 1)] {
        let chain = chain_of_bytes(id, &lab.root_commit, total);
        lab.set_ref(id, &hand_built_mirror(&lab, &chain, id, &scope, &lab.root_commit));
    }
    let fetched = c.fetch_refused();
    assert_eq!(verdict(&fetched, at_limit), "verified", "{fetched}");
    assert_eq!(verdict(&fetched, over), "rewritten", "{fetched}");
    assert!(why(&fetched, over).contains(&format!("over {SEGMENT_MAX_BYTES} bytes")), "{fetched}");
    assert_eq!(verified_ref(&c, over), "");
}

// ----- §7 rule 2: new bytes of a fast-forward that do not chain ---------------------------

/// What a forgery appends to the last segment, given that segment's bytes.
type Grown = Box<dyn Fn(&[u8]) -> Vec<u8>>;

#[test]
fn a_fast_forward_whose_new_bytes_do_not_chain_is_rewritten() {
    let lab = Lab::new();
    let (a, b, c) = (lab.machine("machine-a"), lab.machine("machine-b"), lab.machine("machine-c"));
    a.add("Alpha one");
    b.add("Bravo one");
    let (a_id, b_id) = (a.journal_id(), b.journal_id());
    a.push_ok();
    b.push_ok();
    c.fetch_ok();
    let pushed = lab.journal_ref(&a_id).unwrap();
    // Each grows the last segment and claims the bytes it then holds, so only the chain fails.
    let last_line = |seg: &[u8]| -> Vec<u8> {
        let start = seg[..seg.len() - 1].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        seg[start..].to_vec()
    };
    let b_bytes = std::fs::read(b.journal_path()).unwrap();
    let b_line = last_line(&b_bytes);
    let cases: Vec<(&str, Grown, &str)> = vec![
        ("half a line, no line feed", Box::new(|_| b"{\"seq\":".to_vec()), "does not end with a line feed"),
        ("the last line again", Box::new(move |seg| last_line(seg)), "does not verify"),
        ("a line of another journal", Box::new(move |_| b_line.clone()), "does not verify"),
    ];
    for (what, extra, words) in &cases {
        lab.forge_child(&a_id, |lab, p| {
            let last = p.segments.last_mut().unwrap();
            let old = lab.cat(&last.id);
            let grown = [old.clone(), extra(&old)].concat();
            last.id = lab.blob(&grown);
            let bytes = p.meta()["bytes"].as_u64().unwrap() + (grown.len() - old.len()) as u64;
            p.edit_meta("bytes", Some(json!(bytes)));
        });
        let fetched = c.fetch_refused();
        assert_eq!(verdict(&fetched, &a_id), "rewritten", "{what}: {fetched}");
        assert!(why(&fetched, &a_id).contains(words), "{what}: {fetched}");
        assert_good(&fetched, &b_id);
        assert_eq!(verified_ref(&c, &a_id), pushed, "{what}");
        lab.set_ref(&a_id, &pushed);
    }
}

// ----- §7 rule 3: claims ------------------------------------------------------------------

#[test]
fn mirror_json_claims_that_its_segments_do_not_hold_are_rewritten() {
    let lab = Lab::new();
    let (a, b, c) = (lab.machine("machine-a"), lab.machine("machine-b"), lab.machine("machine-c"));
    a.add("Alpha one");
    b.add("Bravo one");
    let (a_id, b_id) = (a.journal_id(), b.journal_id());
    a.push_ok();
    b.push_ok();
    c.fetch_ok();
    let pushed = lab.journal_ref(&a_id).unwrap();
    let meta = lab.remote_meta(&a_id).unwrap();
    let other_hash = "ab".repeat(32);
    let claims: Vec<(&str, Value)> = vec![
        ("head_seq", json!(meta["head_seq"].as_u64().unwrap() + 1)),
        ("head_seq", json!(meta["head_seq"].as_u64().unwrap() - 1)),
        ("bytes", json!(meta["bytes"].as_u64().unwrap() + 1)),
        ("bytes", json!(meta["bytes"].as_u64().unwrap() - 1)),
        ("head_hash", json!(other_hash)),
        ("head_time", json!("2000-01-01T00:00:00.000Z")),
    ];
    for (k, (field, value)) in claims.into_iter().enumerate() {
        let what = format!("{field} = {value}");
        lab.forge_child(&a_id, |_, p| p.edit_meta(field, Some(value.clone())));
        let d = lab.machine(&format!("machine-d{k}"));
        for m in [&c, &d] {
            let fetched = m.fetch_refused();
            assert_eq!(verdict(&fetched, &a_id), "rewritten", "{what} ({}): {fetched}", m.name);
            assert!(why(&fetched, &a_id).contains("mirror.json's head or length"), "{what} ({}): {fetched}", m.name);
            assert_good(&fetched, &b_id);
        }
        assert_eq!(verified_ref(&c, &a_id), pushed, "{what}: the last verified copy stays");
        assert_eq!(verified_ref(&d, &a_id), "", "{what}");
        lab.set_ref(&a_id, &pushed);
    }
    // The claims unchanged in a new commit: it verifies.
    lab.forge_child(&a_id, |_, _| {});
    assert_eq!(verdict(&c.fetch_ok(), &a_id), "verified");
}

// ----- §7 rule 3 and §8 journal_changed: the journal's id and scope -----------------------

#[test]
fn mirror_json_naming_another_journal_id_is_journal_changed() {
    let lab = Lab::new();
    let (a, c) = (lab.machine("machine-a"), lab.machine("machine-c"));
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    c.fetch_ok();
    let pushed = lab.journal_ref(&a_id).unwrap();
    lab.forge_child(&a_id, |_, p| p.edit_meta("journal_id", Some(json!("0".repeat(32)))));
    let d = lab.machine("machine-d");
    for m in [&c, &d] {
        let fetched = m.fetch_refused();
        assert_eq!(verdict(&fetched, &a_id), "journal_changed", "{}: {fetched}", m.name);
        assert!(why(&fetched, &a_id).contains("mirror.json names journal"), "{fetched}");
    }
    assert_eq!(verified_ref(&c, &a_id), pushed);
}

/// mirror.json's scope is a claim rule 3 checks against journal.opened. A fast-forward
/// changing it must not verify: the verified copy's genesis says what the scope is.
fn scope_claim_changed(fresh_fetcher: bool) {
    let lab = Lab::new();
    let (a, c) = (lab.machine("machine-a"), lab.machine("machine-c"));
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    c.fetch_ok();
    let pushed = lab.journal_ref(&a_id).unwrap();
    let claimed = json!({"kind": "repository", "root_commit": lab.root_commit});
    lab.forge_child(&a_id, |_, p| p.edit_meta("scope", Some(claimed.clone())));
    let m = if fresh_fetcher { lab.machine("machine-d") } else { c };
    let fetched = m.fetch_refused();
    assert_eq!(verdict(&fetched, &a_id), "journal_changed", "{fetched}");
    assert!(why(&fetched, &a_id).contains("scope"), "{fetched}");
    if !fresh_fetcher {
        assert_eq!(verified_ref(&m, &a_id), pushed);
    }
    let status = m.status();
    let shown_as_repository = status["repositories"].as_array().unwrap().iter().any(|r| r["journal_id"] == a_id.as_str());
    assert!(!shown_as_repository, "a working copy's journal is shown as a repository journal: {status}");
}

#[test]
fn mirror_json_naming_another_scope_is_journal_changed_from_genesis() {
    scope_claim_changed(true);
}

#[test]
fn mirror_json_naming_another_scope_is_journal_changed_in_a_fast_forward() {
    scope_claim_changed(false);
}

// ----- §7 rule 4: a repository journal's genesis names the repository ---------------------

/// A whole mirror commit of `chain` built by hand: one segment, every claim as §5 says.
fn hand_built_mirror(lab: &Lab, chain: &Chain, journal_id: &str, scope: &Scope, repository: &str) -> String {
    hand_built_mirror_of(lab, &chain.bytes(), journal_id, scope, repository)
}

/// [`hand_built_mirror`] of a journal's bytes as they are.
fn hand_built_mirror_of(lab: &Lab, bytes: &[u8], journal_id: &str, scope: &Scope, repository: &str) -> String {
    let last_line = bytes[..bytes.len() - 1].rsplit(|b| *b == b'\n').next().unwrap();
    let last: Value = serde_json::from_slice(last_line).unwrap();
    let meta = json!({
        "format": "abcd-mirror/1",
        "journal_id": journal_id,
        "scope": scope,
        "repository": repository,
        "machine": "machine-x",
        "path": "/home/x/wc",
        "head_seq": last["seq"],
        "head_hash": last["hash"],
        "head_time": last["time"],
        "bytes": bytes.len(),
    });
    let parts = Parts {
        json: serde_json::to_vec(&meta).unwrap(),
        segments: vec![Entry::blob(&lab.blob(bytes), &segment_name(0))],
        extra_root: vec![],
        with_segments: true,
    };
    lab.write(&parts, None)
}

fn repository_chain(journal_id: &str, root_commit: &str) -> (Chain, Scope) {
    let scope = Scope::Repository { root_commit: root_commit.into() };
    let t = chain::at("2026-12-01T09:00:00.000Z");
    let mut c = Chain::open(journal_id, scope.clone(), t, 4100);
    for i in 1..4 {
        c.push(chain::plus_ms(t, i * 1000), &chain::actor(None, 4100), COMPACTION_RECORDED, json!({"session": null, "trigger": "manual"}));
    }
    (c, scope)
}

#[test]
fn a_repository_journal_whose_genesis_names_another_repository_is_foreign() {
    let lab = Lab::new();
    let (a, c) = (lab.machine("machine-a"), lab.machine("machine-c"));
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();

    // The control: the same journal naming this repository verifies, so the hand-built
    // mirror is well formed and only the genesis differs below.
    let ours_id = "0123456789abcdef0123456789abcdef";
    let (ours, ours_scope) = repository_chain(ours_id, &lab.root_commit);
    lab.set_ref(ours_id, &hand_built_mirror(&lab, &ours, ours_id, &ours_scope, &lab.root_commit));
    // mirror.json claims this repository; journal.opened names another root commit.
    let other_root = "f".repeat(40);
    let theirs_id = "fedcba9876543210fedcba9876543210";
    let (theirs, theirs_scope) = repository_chain(theirs_id, &other_root);
    lab.set_ref(theirs_id, &hand_built_mirror(&lab, &theirs, theirs_id, &theirs_scope, &lab.root_commit));

    let fetched = c.fetch_refused();
    assert_eq!(verdict(&fetched, ours_id), "verified", "{fetched}");
    assert_eq!(verdict(&fetched, theirs_id), "foreign", "{fetched}");
    assert!(why(&fetched, theirs_id).contains("journal.opened names repository"), "{fetched}");
    assert_eq!(verdict(&fetched, &a_id), "verified", "{fetched}");
    assert_eq!(verified_ref(&c, theirs_id), "", "a foreign journal is never kept as verified");
    let status = c.status();
    let repos = status["repositories"].as_array().unwrap();
    assert!(repos.iter().any(|r| r["journal_id"] == ours_id && r["source"] == "mirror"), "{status}");
    // The foreign journal is shown by its verdict alone: nothing of it is folded.
    let shown: Vec<&Value> =
        repos.iter().chain(status["working_copies"].as_array().unwrap()).filter(|v| v["journal_id"] == theirs_id).collect();
    assert!(shown.iter().all(|v| v["verification"] == "foreign" && v["head_seq"].is_null() && v["open_items"].is_null()), "{status}");
}

// ----- §7 rule 5: a fast-forward that changes an old segment ------------------------------

#[test]
fn a_fast_forward_that_changes_an_old_segment_is_rewritten_and_the_verified_copy_stays() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    a.add("Alpha two");
    a.append_compactions(SEGMENT_MAX_LINES + 100);
    let a_id = a.journal_id();
    a.push_ok();
    let pushed = lab.journal_ref(&a_id).unwrap();
    let segments = lab.parts(&pushed).segments;
    let names: Vec<&str> = segments.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, [segment_name(0), segment_name(SEGMENT_MAX_LINES as u64)], "two segments, the first full");
    assert_eq!(verdict(&b.fetch_ok(), &a_id), "verified");

    // One byte of a line in the middle of the first (full) segment, in a child commit.
    let forged = lab.forge_child(&a_id, |lab, p| {
        let mut bytes = lab.cat(&p.segments[0].id);
        let line_500 = bytes.split(|b| *b == b'\n').take(500).map(|l| l.len() + 1).sum::<usize>();
        let at = line_500 + bytes[line_500..].windows(6).position(|w| w == b"manual").expect("a compaction line");
        bytes[at] = b'M';
        p.segments[0].id = lab.blob(&bytes);
    });
    assert_eq!(lab.git(&["rev-parse", &format!("{forged}^")]), pushed, "the forgery is a fast-forward");

    let fetched = b.fetch_refused();
    assert_eq!(verdict(&fetched, &a_id), "rewritten", "{fetched}");
    assert!(why(&fetched, &a_id).contains(&segment_name(0)), "the changed segment is named: {fetched}");
    assert_eq!(verified_ref(&b, &a_id), pushed, "the last verified copy stays");
    let status = b.status();
    let wc = working_copy(&status, &a_id);
    assert_eq!(wc["verification"], "rewritten", "{wc}");
    assert_eq!(open_titles(wc), ["Alpha one", "Alpha two"], "{wc}");
    let shown = b.status_text();
    assert!(shown.contains("Alpha one") && shown.contains("rewritten"), "{shown}");

    // A fetcher from genesis names the line that does not verify.
    let d = lab.machine("machine-d");
    let fetched = d.fetch_refused();
    assert_eq!(verdict(&fetched, &a_id), "rewritten", "{fetched}");
    let named = why(&fetched, &a_id);
    assert!(named.contains(&format!("segment {}: seq 500", segment_name(0))) && named.contains("does not verify"), "{fetched}");

    // The line limit on both sides: the pushed first segment holds exactly 1,024 lines and
    // verified; the same lines split 1,025 + the rest do not.
    lab.set_ref(&a_id, &pushed);
    let first = lab.cat(&segments[0].id);
    assert_eq!(first.iter().filter(|b| **b == b'\n').count(), SEGMENT_MAX_LINES);
    lab.forge_child(&a_id, |lab, p| {
        let all = [first.clone(), lab.cat(&p.segments[1].id)].concat();
        let cut = all.split(|b| *b == b'\n').take(SEGMENT_MAX_LINES + 1).map(|l| l.len() + 1).sum::<usize>();
        p.segments = vec![
            Entry::blob(&lab.blob(&all[..cut]), &segment_name(0)),
            Entry::blob(&lab.blob(&all[cut..]), &segment_name(SEGMENT_MAX_LINES as u64 + 1)),
        ];
    });
    let e = lab.machine("machine-e");
    let fetched = e.fetch_refused();
    assert_eq!(verdict(&fetched, &a_id), "rewritten", "{fetched}");
    assert!(
        why(&fetched, &a_id).contains(&format!("segment {}: it holds more than {SEGMENT_MAX_LINES} lines", segment_name(0))),
        "{fetched}"
    );
}

// ----- §8 gone ----------------------------------------------------------------------------

#[test]
fn a_ref_deleted_in_the_remote_is_gone_and_the_verified_copy_stays() {
    let lab = Lab::new();
    let (a, b, c) = (lab.machine("machine-a"), lab.machine("machine-b"), lab.machine("machine-c"));
    a.add("Alpha one");
    b.add("Bravo one");
    let (a_id, b_id) = (a.journal_id(), b.journal_id());
    a.push_ok();
    b.push_ok();
    c.fetch_ok();
    let kept = verified_ref(&c, &a_id);

    lab.git(&["update-ref", "-d", &format!("refs/abcd/journals/{a_id}")]);
    let fetched = c.fetch_refused();
    assert_eq!(verdict(&fetched, &a_id), "gone", "{fetched}");
    assert_good(&fetched, &b_id);
    assert_eq!(verified_ref(&c, &a_id), kept, "the last verified copy stays");
    let status = c.status();
    let wc = working_copy(&status, &a_id);
    assert_eq!((wc["verification"].as_str(), wc["source"].as_str()), (Some("gone"), Some("mirror")), "{wc}");
    assert_eq!(open_titles(wc), ["Alpha one"], "{wc}");
    // It stays gone on the next fetch too: the copy is never dropped silently.
    assert_eq!(verdict(&c.fetch_refused(), &a_id), "gone");
}

// ----- §9: fetched lines re-scanned for secrets -------------------------------------------

/// Appends to `m`'s journal, as a shell would (not abcd), a valid chained item whose title
/// holds `token`; returns the seq of the line before it.
fn append_secret_item(m: &Machine, token: &str) -> u64 {
    let head = m.head();
    let bytes = std::fs::read(m.journal_path()).unwrap();
    let added_line = bytes.split(|b| *b == b'\n').find(|l| l.windows(22).any(|w| w == b"checklist.item_added\",")).unwrap();
    let mut data = serde_json::from_slice::<Value>(added_line).unwrap()["data"].clone();
    data["item"]["id"] = json!("deploy-with-token");
    data["item"]["title"] = json!(format!("Deploy with {token}"));
    let (seq, prev) = head.chain_position();
    let shell = Actor { session: None, pid: 4242, tool: "sh".into() };
    let event = NewEvent { kind: "checklist.item_added".into(), actor: shell, data };
    let (line, _) = format::encode_line(seq + 1, chain::plus_ms(head.time, 1000), &event, &prev).unwrap();
    {
        use std::io::Write;
        std::fs::OpenOptions::new().append(true).open(m.journal_path()).unwrap().write_all(&line).unwrap();
    }
    let verified = m.run(&["journal", "verify"]);
    assert!(String::from_utf8_lossy(&verified.stdout).contains(&format!("{} verified", seq + 2)), "{}", text(&verified));
    seq
}

/// MIRROR.md §6 step 2: a line the secret scan flags stays on its machine, with the lines
/// after it; the push names the seq and the kind, never the value, and is partial (exit 1).
#[test]
fn a_line_carrying_a_secret_stays_on_its_machine() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    let token = fake_token();
    assert_eq!(abcd::secrets::scan(&token), Some(abcd::secrets::SecretKind::GithubToken), "the fake token looks real");
    a.add("Alpha one");
    let before = append_secret_item(&a, &token);

    let (code, pushed, out) = a.mirror_json("push", &[]);
    assert_eq!(code, Some(1), "a push that holds lines back exits 1: {}", text(&out));
    let entry = journal_entry(&pushed, &a.journal_id());
    assert_eq!((entry["outcome"].as_str(), entry["head_seq"].as_u64()), (Some("partial"), Some(before)), "{pushed}");
    let why = entry["why"].as_str().unwrap();
    assert!(why.contains(&format!("seq {}", before + 1)) && why.contains("github_token"), "{why}");
    assert_no_part_of(&token, &text(&out), "mirror push on A");
    let mirrored = lab.journal_ref(&a.journal_id()).unwrap();
    for segment in lab.parts(&mirrored).segments {
        assert_no_part_of(&token, &String::from_utf8_lossy(&lab.cat(&segment.id)), "the remote's segments");
    }

    let fetched = b.fetch_ok();
    assert_eq!(verdict(&fetched, &a.journal_id()), "verified");
    let status = b.status();
    assert_eq!(open_titles(working_copy(&status, &a.journal_id())), ["Alpha one"], "{status}");
    // As the local fold on A does not show it either.
    let local = a.run(&["checklist", "--all"]);
    assert!(String::from_utf8_lossy(&local.stdout).contains("Alpha one"), "{}", text(&local));
    assert_no_part_of(&token, &text(&local), "checklist --all on A");
    assert_no_part_of(&token, &a.status_text(), "mirror status on A");
}

/// §9: a mirror pushed by another build (here made by hand in the remote) whose lines carry
/// a secret verifies, and its events are folded with the same checks as local ones: the
/// secret is shown nowhere on the fetching machine.
#[test]
fn a_mirrored_line_carrying_a_secret_is_not_shown_on_another_machine() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    let token = fake_token();
    a.add("Alpha one");
    append_secret_item(&a, &token);
    // The journal as it stands, secret line and all, mirrored as a build without the push
    // scan would have mirrored it.
    let bytes = std::fs::read(a.journal_path()).unwrap();
    let scope = Scope::WorkingCopy { root: a.root.display().to_string() };
    lab.set_ref(&a.journal_id(), &hand_built_mirror_of(&lab, &bytes, &a.journal_id(), &scope, &lab.root_commit));

    let fetched = b.fetch_ok();
    assert_eq!(verdict(&fetched, &a.journal_id()), "verified", "{fetched}");
    let status = b.status();
    assert_eq!(open_titles(working_copy(&status, &a.journal_id())), ["Alpha one"], "{status}");
    assert_no_part_of(&token, &status.to_string(), "mirror status --json on B");
    assert_no_part_of(&token, &b.status_text(), "mirror status on B");
    assert_no_part_of(&token, &fetched.to_string(), "mirror fetch on B");
}

// ----- §11: a flagged line redacted -----------------------------------------------------

/// The line of `seq` in `m`'s journal, with its LF.
fn journal_line(m: &Machine, seq: u64) -> Vec<u8> {
    let bytes = std::fs::read(m.journal_path()).unwrap();
    let line = bytes.split_inclusive(|b| *b == b'\n').nth(seq as usize).unwrap().to_vec();
    assert_eq!(format::verify_line(&line).unwrap().seq, seq);
    line
}

/// A redaction record (MIRROR.md §11) for seq `seq` with `prev` and `hash`, padded with
/// spaces to `len` bytes (its LF included).
fn redaction_record(seq: u64, prev: &str, hash: &str, len: usize) -> Vec<u8> {
    let head = format!("{{\"redacted\":{{\"seq\":{seq},\"prev\":\"{prev}\",\"hash\":\"{hash}\"}},\"pad\":\"");
    let tail = "\"}\n";
    assert!(head.len() + tail.len() <= len, "the record fits the line it stands for");
    format!("{head}{}{tail}", " ".repeat(len - head.len() - tail.len())).into_bytes()
}

/// The redaction record of the remote's mirror of `journal_id` for `seq`, if it holds one.
fn remote_record(lab: &Lab, journal_id: &str, seq: u64) -> Option<Vec<u8>> {
    let commit = lab.journal_ref(journal_id)?;
    let prefix = format!("{{\"redacted\":{{\"seq\":{seq},");
    lab.parts(&commit)
        .segments
        .iter()
        .flat_map(|s| lab.cat(&s.id).split_inclusive(|b| *b == b'\n').map(<[u8]>::to_vec).collect::<Vec<_>>())
        .find(|l| l.starts_with(prefix.as_bytes()))
}

/// §11: a line the push's scan flags holds the journal back, and the refusal names the
/// command that lets it through; once the person ran it, the push carries a redaction
/// record in the line's place (its hash, its length, never its text), the lines after it
/// follow, and another machine, and the writer itself, verify the chain across it and show
/// it as redacted.
#[test]
fn a_flagged_line_goes_through_as_a_redaction_record_the_refusal_names() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    let token = fake_token();
    a.add("Alpha one");
    let flagged = append_secret_item(&a, &token) + 1;
    a.add("Alpha after");
    let id = a.journal_id();
    let verb = format!("abcd mirror redact {id} {flagged}");

    let (code, pushed, out) = a.mirror_json("push", &[]);
    assert_eq!(code, Some(1), "{}", text(&out));
    let entry = journal_entry(&pushed, &id);
    assert_eq!(entry["outcome"].as_str(), Some("partial"), "{pushed}");
    assert!(entry["why"].as_str().unwrap().contains(&verb), "the refusal names the way through: {pushed}");
    assert!(String::from_utf8_lossy(&out.stderr).contains(&verb), "{}", text(&out));

    // A line already pushed, one the scan does not flag, one not in the journal, the
    // genesis: not redacted, and the refusal says why.
    for (seq, words) in [
        (flagged - 1, "already in this machine's mirror"),
        (flagged + 1, "flags nothing"),
        (999, "holds no verified line of seq 999"),
        (0, "genesis"),
    ] {
        let refused = a.run(&["mirror", "redact", &id, &seq.to_string()]);
        assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
        assert!(text(&refused).contains(words), "{words}: {}", text(&refused));
    }

    let line = journal_line(&a, flagged);
    let original = format::verify_line(&line).unwrap();
    let redacted = a.run(&["mirror", "redact", &id, &flagged.to_string()]);
    assert_eq!(redacted.status.code(), Some(0), "{}", text(&redacted));
    assert_no_part_of(&token, &text(&redacted), "mirror redact");
    assert!(text(&redacted).contains("abcd mirror push"), "it names the next step: {}", text(&redacted));
    // The decision is recorded in the journal itself, naming the line by seq and hash.
    let bytes = std::fs::read(a.journal_path()).unwrap();
    let decision = bytes
        .split_inclusive(|b| *b == b'\n')
        .map(|l| format::verify_line(l).unwrap())
        .find(|e| e.kind == "mirror.line_redacted")
        .expect("the decision is journaled");
    assert_eq!(decision.data["seq"], json!(flagged), "{:?}", decision.data);
    assert_eq!(decision.data["hash"], json!(original.hash.to_hex()), "{:?}", decision.data);

    let pushed = a.push_ok();
    let entry = journal_entry(&pushed, &id);
    assert_eq!(entry["outcome"].as_str(), Some("pushed"), "{pushed}");
    assert_eq!(entry["head_seq"].as_u64(), Some(a.head().seq), "{pushed}");
    assert_eq!(entry["redacted"], json!([flagged]), "{pushed}");
    let commit = lab.journal_ref(&id).unwrap();
    assert_eq!(lab.parts(&commit).meta()["format"], json!("abcd-mirror/2"), "a mirror holding a record says so");
    for segment in lab.parts(&commit).segments {
        assert_no_part_of(&token, &String::from_utf8_lossy(&lab.cat(&segment.id)), "the remote's segments");
    }
    let record = remote_record(&lab, &id, flagged).expect("the record stands in the line's place");
    assert_eq!(record, redaction_record(flagged, &original.prev.to_hex(), &original.hash.to_hex(), line.len()));

    let fetched = b.fetch_ok();
    assert_eq!(verdict(&fetched, &id), "verified", "{fetched}");
    assert_eq!(journal_entry(&fetched, &id)["redacted"], json!(1), "{fetched}");
    assert_eq!(journal_entry(&fetched, &id)["first_redacted_seq"], json!(flagged), "{fetched}");
    let status = b.status();
    assert_eq!(open_titles(working_copy(&status, &id)), ["Alpha one", "Alpha after"], "{status}");
    assert_no_part_of(&token, &status.to_string(), "mirror status on B");
    // The writer knows the redacted line is its own (§7 rule 6): not forged.
    assert_eq!(verdict(&a.fetch_ok(), &id), "verified");
    // Later lines push on top of it as usual.
    a.add("Alpha later");
    assert_eq!(journal_entry(&a.push_ok(), &id)["outcome"].as_str(), Some("pushed"));
    assert_eq!(verdict(&b.fetch_ok(), &id), "verified");
}

/// §11: a redaction record is held to its rules: one whose hash is not the next line's
/// `prev`, whose `prev` is not the line before's hash, that ends the mirror, or that
/// stands in an `abcd-mirror/1` mirror, is named; one correctly formed in place of any
/// line verifies and is shown as redacted, never as broken.
#[test]
fn a_forged_redaction_record_is_named() {
    let lab = Lab::new();
    let (a, b, c) = (lab.machine("machine-a"), lab.machine("machine-b"), lab.machine("machine-c"));
    a.add("Alpha one");
    a.add("Alpha two");
    let id = a.journal_id();
    a.push_ok();
    let base = lab.journal_ref(&id).unwrap();
    b.fetch_ok();
    // Two lines A has not pushed: the forgeries put them on the remote, the first redacted.
    a.add("Alpha three");
    a.add("Alpha four");
    let target = a.head().seq - 1;
    let line = journal_line(&a, target);
    let event = format::verify_line(&line).unwrap();
    let (prev, hash) = (event.prev.to_hex(), event.hash.to_hex());
    let other = "ab".repeat(32);
    let journal = std::fs::read(a.journal_path()).unwrap();
    let before_time = format::format_time(format::verify_line(&journal_line(&a, target - 1)).unwrap().time);
    let swap = |record: Vec<u8>, format: &'static str, cut_after: bool| {
        let (journal, hash, before_time) = (journal.clone(), hash.clone(), before_time.clone());
        move |lab: &Lab, parts: &mut Parts| {
            let mut lines: Vec<Vec<u8>> = journal.split_inclusive(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
            let last = format::verify_line(lines.last().unwrap()).unwrap();
            lines[target as usize] = record;
            let mut meta = parts.meta();
            (meta["head_seq"], meta["head_hash"], meta["head_time"]) =
                (json!(last.seq), json!(last.hash.to_hex()), json!(format::format_time(last.time)));
            if cut_after {
                lines.truncate(target as usize + 1);
                (meta["head_seq"], meta["head_hash"], meta["head_time"]) = (json!(target), json!(hash), json!(before_time));
            }
            let joined = lines.concat();
            parts.segments = vec![Entry::blob(&lab.blob(&joined), &segment_name(0))];
            meta["format"] = json!(format);
            meta["bytes"] = json!(joined.len());
            parts.set_meta(&meta);
        }
    };
    let cases: Vec<(Vec<u8>, &str, bool, &str)> = vec![
        (redaction_record(target, &prev, &other, line.len()), "abcd-mirror/2", false, "the redaction record of seq"),
        (redaction_record(target, &other, &hash, line.len()), "abcd-mirror/2", false, "the redaction record of seq"),
        (redaction_record(target, &prev, &hash, line.len()), "abcd-mirror/1", false, "abcd-mirror/1"),
        (redaction_record(target, &prev, &hash, line.len()), "abcd-mirror/2", true, "ends with a redaction record"),
    ];
    for (k, (record, format, cut_after, words)) in cases.into_iter().enumerate() {
        lab.set_ref(&id, &base);
        let fresh = lab.machine(&format!("machine-forged-{k}"));
        fresh.fetch_ok();
        lab.forge_child(&id, swap(record, format, cut_after));
        let fetched = fresh.fetch_refused();
        assert_eq!(verdict(&fetched, &id), "rewritten", "{words}: {fetched}");
        assert!(why(&fetched, &id).contains(words), "{words}: {fetched}");
    }
    // Correctly formed in place of a line that is A's: verified, and shown as redacted, by
    // a machine that verified the mirror before (from its head) and by one that never did.
    lab.set_ref(&id, &base);
    lab.forge_child(&id, swap(redaction_record(target, &prev, &hash, line.len()), "abcd-mirror/2", false));
    for m in [&b, &c] {
        let fetched = m.fetch_ok();
        assert_eq!(verdict(&fetched, &id), "verified", "{fetched}");
        assert_eq!(journal_entry(&fetched, &id)["redacted"], json!(1), "{fetched}");
        assert_eq!(journal_entry(&fetched, &id)["first_redacted_seq"], json!(target), "{fetched}");
    }
}

/// §11: lines already on the remote are not scanned again by a later push (they were
/// pushed by a build whose scan did not flag them): the push goes on from the mirror's
/// head. Made here with a mirror of a flagged line put under both refs, as such a build
/// would have left them.
#[test]
fn lines_already_mirrored_are_not_scanned_again() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    let token = fake_token();
    a.add("Alpha one");
    append_secret_item(&a, &token);
    let id = a.journal_id();
    let bytes = std::fs::read(a.journal_path()).unwrap();
    let scope = Scope::WorkingCopy { root: a.root.display().to_string() };
    let old = hand_built_mirror_of(&lab, &bytes, &id, &scope, &lab.root_commit);
    lab.set_ref(&id, &old);
    a.git(&["fetch", "-q", "origin", &format!("+refs/abcd/journals/{id}:refs/abcd/journals/{id}")]);
    a.add("Alpha after");
    let pushed = a.push_ok();
    let entry = journal_entry(&pushed, &id);
    assert_eq!((entry["outcome"].as_str(), entry["new_events"].as_u64()), (Some("pushed"), Some(1)), "{pushed}");
}

/// mirror.json's machine and path are the pusher's words (§9), shown by status and fetch
/// on every machine: a secret-shaped one is not shown, as a secret-shaped title is not.
#[test]
fn a_secret_shaped_machine_or_path_in_mirror_json_is_not_shown() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    let token = fake_token();
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    lab.forge_child(&a_id, |_, p| {
        p.edit_meta("machine", Some(json!(token)));
        p.edit_meta("path", Some(json!(format!("/home/{token}/wc"))));
    });
    let fetch = b.run(&["mirror", "fetch"]);
    let fetched = b.run(&["mirror", "fetch", "--json"]);
    assert_no_part_of(&token, &text(&fetch), "mirror fetch on B");
    assert_no_part_of(&token, &text(&fetched), "mirror fetch --json on B");
    let status = b.status();
    assert!(status.to_string().contains("Alpha one") || status.to_string().contains(&a_id), "{status}");
    assert_no_part_of(&token, &status.to_string(), "mirror status --json on B");
    assert_no_part_of(&token, &b.status_text(), "mirror status on B");
}

// ----- §1/§2: saved-aside refs ------------------------------------------------------------

#[test]
fn saved_aside_refs_are_pushed_and_arrive_under_the_remotes_namespace() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    std::fs::write(a.root.join("README"), "work in progress\n").unwrap();
    std::fs::write(a.root.join("notes.txt"), "untracked\n").unwrap();
    a.git(&["add", "notes.txt"]);
    let stash = a.git(&["stash", "create"]);
    assert!(!stash.is_empty(), "the work is stashed");
    let saved = "refs/abcd/saved/run-1/impl/20261201T090000000Z";
    a.git(&["update-ref", saved, &stash]);

    let pushed = a.push_ok();
    let entry = pushed["saved"].as_array().unwrap().iter().find(|s| s["ref"] == saved).unwrap_or_else(|| panic!("{pushed}"));
    assert_eq!(entry["outcome"], "pushed", "{pushed}");
    assert_eq!(lab.git(&["rev-parse", saved]), stash, "the remote holds the saved-aside ref as it is");
    let again = a.push_ok();
    assert_eq!(again["saved"][0]["outcome"], "up_to_date", "{again}");

    b.fetch_ok();
    let arrived = "refs/abcd/remotes/origin/saved/run-1/impl/20261201T090000000Z";
    assert_eq!(b.git(&["rev-parse", arrived]), stash, "machine B holds the same commit");
    assert_eq!(b.git(&["show", &format!("{arrived}:README")]), "work in progress", "the work itself arrived");
    assert_eq!(b.git(&["show", &format!("{arrived}:notes.txt")]), "untracked");
    assert_eq!(b.git(&["for-each-ref", "--format=%(refname)", "refs/abcd/saved/"]), "", "B's own saved-aside refs are untouched");
}

// ----- §6 rule 1: a journal repaired after it was mirrored --------------------------------

#[test]
fn a_journal_repaired_after_it_was_mirrored_is_not_pushed_and_its_mirror_is_left() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    a.add("Alpha two");
    // The repository journal too, which the repair does not touch.
    let away = a.run(&["mode", "autonomous", "--until", "+1h"]);
    assert_eq!(away.status.code(), Some(0), "{}", text(&away));
    let a_id = a.journal_id();
    let pushed = a.push_ok();
    let repository_id = pushed["journals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["scope"]["kind"] == "repository")
        .unwrap_or_else(|| panic!("{pushed}"))["journal_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mirrored = lab.journal_ref(&a_id).unwrap();
    let local_ref = a.git(&["rev-parse", &format!("refs/abcd/journals/{a_id}")]);
    assert_eq!(local_ref, mirrored);

    // The last mirrored line damaged, then repaired away without the mirror (an older
    // build's repair, or one that could not read the mirror: a repair that reads it
    // restores the line) and the chain continued: the journal no longer holds what its
    // mirror holds.
    let path = a.journal_path();
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() - 20;
    bytes[at] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let name = format!("refs/abcd/journals/{a_id}");
    a.git(&["update-ref", "-d", &name]);
    let repaired = a.run(&["journal", "repair"]);
    a.git(&["update-ref", &name, local_ref.trim()]);
    assert_eq!(repaired.status.code(), Some(0), "{}", text(&repaired));
    a.add("Alpha three");
    let back = a.run(&["mode", "back"]);
    assert_eq!(back.status.code(), Some(0), "{}", text(&back));

    let (code, json, out) = a.mirror_json("push", &[]);
    assert_eq!(code, Some(1), "{}", text(&out));
    let entry = json["journals"].as_array().unwrap().iter().find(|j| j["outcome"] == "refused").unwrap_or_else(|| panic!("{json}"));
    let why = entry["why"].as_str().unwrap();
    assert!(why.contains(&path.display().to_string()) && why.contains("its mirror is left as it is"), "{why}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&a.root.display().to_string()) && stderr.contains("its mirror is left as it is"), "{stderr}");
    assert_eq!(lab.journal_ref(&a_id).unwrap(), mirrored, "the remote's ref is unchanged");
    assert_eq!(a.git(&["rev-parse", &format!("refs/abcd/journals/{a_id}")]), mirrored, "the local ref is unchanged");
    // The repository journal is not held back by the working copy's.
    assert_eq!(journal_entry(&json, &repository_id)["outcome"], "pushed", "{json}");
    assert_eq!(lab.remote_meta(&repository_id).unwrap()["head_seq"], journal_entry(&json, &repository_id)["head_seq"]);
    let fetched = lab.machine("machine-c").fetch_ok();
    assert_eq!(verdict(&fetched, &a_id), "verified", "what was mirrored before the repair still verifies");
}

// ----- §6 rule 2: only verified lines are mirrored ----------------------------------------

#[test]
fn a_torn_tail_or_damage_after_the_last_verified_line_is_not_mirrored() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    let a_id = a.journal_id();
    let path = a.journal_path();
    let good = std::fs::read(&path).unwrap();
    // Half of a line, as a crash leaves it.
    let head = a.head();
    let (seq, prev) = head.chain_position();
    let event = NewEvent {
        kind: COMPACTION_RECORDED.into(),
        actor: Actor::this_process(None),
        data: json!({"session": null, "trigger": "manual"}),
    };
    let (line, _) = format::encode_line(seq + 1, chain::plus_ms(head.time, 1), &event, &prev).unwrap();
    std::fs::write(&path, [good.clone(), line[..line.len() / 2].to_vec()].concat()).unwrap();
    a.push_ok();
    let meta = lab.remote_meta(&a_id).unwrap();
    assert_eq!((meta["head_seq"].as_u64(), meta["bytes"].as_u64()), (Some(seq), Some(good.len() as u64)), "{meta}");
    assert_eq!(verdict(&b.fetch_ok(), &a_id), "verified");

    // Three more lines, the first of them damaged: only the one before it is mirrored.
    a.add("Alpha two");
    a.add("Alpha three");
    a.add("Alpha four");
    let damaged = a.head().seq - 1;
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.windows(11).rposition(|w| w == b"Alpha three").unwrap();
    bytes[at] = b'a';
    std::fs::write(&path, &bytes).unwrap();
    let out = a.run(&["mirror", "push"]);
    let shown = text(&out);
    assert_eq!(lab.remote_meta(&a_id).unwrap()["head_seq"], damaged - 1, "{shown}");
    assert!(shown.contains(&format!("damage at seq {damaged}")) && shown.contains("not mirrored"), "the push names the damage: {shown}");
    let fetched = b.fetch_ok();
    assert_eq!(verdict(&fetched, &a_id), "verified");
    let titles = open_titles(working_copy(&b.status(), &a_id));
    assert_eq!(titles, ["Alpha one", "Alpha two"], "the lines up to the damage, no further");
}

// ----- §6 rule 6: a ref the remote holds ahead of this machine's --------------------------

#[test]
fn a_remote_commit_this_machine_pushed_and_did_not_record_is_adopted() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    let first = lab.journal_ref(&a_id).unwrap();
    a.add("Alpha two");
    a.push_ok();
    let second = lab.journal_ref(&a_id).unwrap();
    // As a push killed after the remote took it leaves it: the local ref one behind.
    let local = format!("refs/abcd/journals/{a_id}");
    a.git(&["update-ref", &local, &first, &second]);
    a.add("Alpha three");
    let pushed = a.push_ok();
    assert_eq!(journal_entry(&pushed, &a_id)["outcome"], "pushed", "{pushed}");
    let third = lab.journal_ref(&a_id).unwrap();
    assert_eq!(lab.git(&["rev-parse", &format!("{third}^")]), second, "the new commit follows the adopted one (fast-forward)");
    assert_eq!(a.git(&["rev-parse", &local]), third);
    assert_eq!(lab.remote_meta(&a_id).unwrap()["head_seq"], a.head().seq);
    let fetched = b.fetch_ok();
    assert_eq!(verdict(&fetched, &a_id), "verified");
    assert_eq!(open_titles(working_copy(&b.status(), &a_id)), ["Alpha one", "Alpha two", "Alpha three"]);
}

#[test]
fn a_remote_commit_whose_lines_are_not_this_journals_is_named_and_left() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    a.add("Alpha two");
    let a_id = a.journal_id();
    a.push_ok();
    let pushed = lab.journal_ref(&a_id).unwrap();
    // Another writer's child commit: one byte of a title changed, its claims intact.
    let theirs = lab.forge_child(&a_id, |lab, p| {
        let mut bytes = lab.cat(&p.segments[0].id);
        let at = bytes.windows(9).position(|w| w == b"Alpha one").unwrap();
        bytes[at + 8] = b'E';
        p.segments[0].id = lab.blob(&bytes);
    });
    a.add("Alpha three");
    let (code, json, out) = a.mirror_json("push", &[]);
    assert_eq!(code, Some(1), "{}", text(&out));
    let entry = journal_entry(&json, &a_id);
    assert_eq!(entry["outcome"], "refused", "{json}");
    assert!(entry["why"].as_str().unwrap().contains("holds a history this machine's journal does not"), "{json}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("was not pushed"), "{}", text(&out));
    assert_eq!(lab.journal_ref(&a_id).unwrap(), theirs, "the remote's ref is left as it is");
    assert_eq!(a.git(&["rev-parse", &format!("refs/abcd/journals/{a_id}")]), pushed, "the local ref stays");
}

// ----- §7 rule 2 with SPEC §5.4: a repaired journal's gap records -------------------------

#[test]
fn gap_records_verify_at_a_segments_end_and_as_a_verified_copys_head() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    // seqs 2..=1030: the line of seq 1023, the first segment's last, is damaged and repaired.
    a.append_compactions(SEGMENT_MAX_LINES + 5);
    let a_id = a.journal_id();
    let path = a.journal_path();
    let mut bytes = std::fs::read(&path).unwrap();
    let start = bytes.split(|b| *b == b'\n').take(SEGMENT_MAX_LINES - 1).map(|l| l.len() + 1).sum::<usize>();
    let at = start + bytes[start..].windows(6).position(|w| w == b"manual").unwrap();
    bytes[at] = b'M';
    std::fs::write(&path, &bytes).unwrap();
    let repaired = a.run(&["journal", "repair"]);
    assert_eq!(repaired.status.code(), Some(0), "{}", text(&repaired));
    let bytes = std::fs::read(&path).unwrap();
    let gap: Value = serde_json::from_slice(bytes.split(|b| *b == b'\n').nth(SEGMENT_MAX_LINES - 1).unwrap()).unwrap();
    assert_eq!(
        (gap["kind"].as_str(), gap["data"]["lost_from"].as_u64()),
        (Some("journal.repaired"), Some(SEGMENT_MAX_LINES as u64 - 1)),
        "{gap}"
    );
    a.push_ok();
    let names: Vec<String> = lab.parts(&lab.journal_ref(&a_id).unwrap()).segments.into_iter().map(|e| e.name).collect();
    assert_eq!(names, [segment_name(0), segment_name(SEGMENT_MAX_LINES as u64)]);
    assert_eq!(verdict(&b.fetch_ok(), &a_id), "verified");

    // The acknowledged last line damaged and repaired: the mirror's head is a gap record.
    a.add("Alpha two");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() - 20;
    bytes[at] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let repaired = a.run(&["journal", "repair"]);
    assert_eq!(repaired.status.code(), Some(0), "{}", text(&repaired));
    assert_eq!(a.head().kind, "journal.repaired");
    a.push_ok();
    assert_eq!(verdict(&b.fetch_ok(), &a_id), "verified");
    // And the next push continues from it.
    a.add("Alpha three");
    a.push_ok();
    assert_eq!(verdict(&b.fetch_ok(), &a_id), "verified");
    assert_eq!(open_titles(working_copy(&b.status(), &a_id)), ["Alpha one", "Alpha three"]);
}

// ----- auto: background pushes from the hooks ---------------------------------------------

fn mtime(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Waits until the remote's mirror of `journal_id` reaches `seq` and the last push record
/// is one other than `before`; the record.
fn wait_for_background_push(lab: &Lab, m: &Machine, journal_id: &str, seq: u64, before: &Value) -> Value {
    let deadline = Instant::now() + BACKGROUND_WAIT;
    loop {
        let reached = lab.remote_meta(journal_id).is_some_and(|meta| meta["head_seq"].as_u64() >= Some(seq));
        let record = last_push(m);
        if reached && !record.is_null() && record != *before {
            return record;
        }
        assert!(Instant::now() < deadline, "no background push arrived: remote {:?}, record {record}", lab.remote_meta(journal_id));
        std::thread::sleep(BACKGROUND_POLL);
    }
}

#[test]
fn a_hook_pushes_in_the_background_at_most_once_per_interval_and_never_when_off() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    let a_id = a.journal_id();
    let stamp = a.repo_home(&lab.root_commit).join("mirror-auto.stamp");

    // Off (the default): a hook starts nothing.
    hook_ok(&a);
    assert_eq!(mtime(&stamp), None, "no push was started");
    assert!(lab.journal_ref(&a_id).is_none());

    let on = a.run(&["mirror", "auto", "on", "--every", "10"]);
    assert_eq!(on.status.code(), Some(0), "{}", text(&on));
    a.add("Alpha two");
    let seq = a.head().seq;
    hook_ok(&a);
    let record = wait_for_background_push(&lab, &a, &a_id, seq, &Value::Null);
    assert_eq!(record["ok"], true, "{record}");
    assert_eq!(record["remote"], "origin", "{record}");
    let started = mtime(&stamp).expect("the push's start is stamped");

    // Within the interval a hook starts none: the stamp and the record stay.
    let on = a.run(&["mirror", "auto", "on", "--every", &LONG_EVERY_SECONDS.to_string()]);
    assert_eq!(on.status.code(), Some(0), "{}", text(&on));
    a.add("Alpha three");
    hook_ok(&a);
    assert_eq!(mtime(&stamp), Some(started), "a hook within the interval starts no push");
    assert_eq!(last_push(&a), record, "no new push record");

    // The interval passed (the stamp made as old as it): the next hook pushes.
    let aged = started - Duration::from_secs(LONG_EVERY_SECONDS);
    std::fs::File::options().write(true).open(&stamp).unwrap().set_modified(aged).unwrap();
    let seq = a.head().seq;
    hook_ok(&a);
    assert!(mtime(&stamp) > Some(aged), "the hook stamps a new push");
    let second = wait_for_background_push(&lab, &a, &a_id, seq, &record);
    assert_eq!(second["ok"], true, "{second}");

    // Off: even with the interval passed, a hook starts none.
    let off = a.run(&["mirror", "auto", "off"]);
    assert_eq!(off.status.code(), Some(0), "{}", text(&off));
    std::fs::File::options().write(true).open(&stamp).unwrap().set_modified(aged).unwrap();
    a.add("Alpha four");
    hook_ok(&a);
    assert_eq!(mtime(&stamp), Some(aged), "auto off: no push started");
    assert_eq!(last_push(&a), second);
    assert_eq!(a.status()["auto"]["on"], false);
}

#[test]
fn auto_on_names_git_remote_add_for_a_remote_that_does_not_exist() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    let out = a.run(&["mirror", "auto", "on", "--remote", "nosuch"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("git remote add nosuch"), "{}", text(&out));
    assert_eq!(a.status()["auto"]["on"], false, "nothing was turned on");
}

/// A remote name that passes git's rules but is a pasted token is refused without being
/// echoed, in the reason or in the `git remote add` hint.
#[test]
fn a_missing_remote_that_looks_like_a_token_is_never_echoed() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    let token = format!("ghp_{}", "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d");
    for verb in [&["mirror", "auto", "on", "--remote", token.as_str()][..], &["mirror", "push", "--remote", token.as_str()][..]] {
        let out = a.run(verb);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(!text(&out).contains("ghp_"), "{verb:?} echoed the token: {}", text(&out));
        assert!(String::from_utf8_lossy(&out.stderr).contains("git remote add <name> <url>"), "{}", text(&out));
    }
}

// ----- limits, on both sides of each edge -------------------------------------------------

#[test]
fn the_auto_interval_is_held_to_its_limits_on_both_sides() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    for (every, accepted) in [
        (AUTO_EVERY_MIN_SECONDS - 1, false),
        (AUTO_EVERY_MIN_SECONDS, true),
        (AUTO_EVERY_MAX_SECONDS, true),
        (AUTO_EVERY_MAX_SECONDS + 1, false),
    ] {
        let out = a.run(&["mirror", "auto", "on", "--every", &every.to_string()]);
        if accepted {
            assert_eq!(out.status.code(), Some(0), "--every {every}: {}", text(&out));
            assert_eq!(a.status()["auto"]["every_seconds"], every);
        } else {
            assert_eq!(out.status.code(), Some(2), "--every {every}: {}", text(&out));
            assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("--every {every}")), "{}", text(&out));
            assert_ne!(a.status()["auto"]["every_seconds"], every, "a refused interval is not stored");
        }
    }
}

#[test]
fn a_remote_name_is_held_to_section_2_on_both_sides_of_its_length() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    let remote = lab.remote.to_str().unwrap();
    let longest = "r".repeat(REMOTE_NAME_MAX);
    let too_long = "r".repeat(REMOTE_NAME_MAX + 1);
    a.git(&["remote", "add", &longest, remote]);
    a.git(&["remote", "add", &too_long, remote]);

    for verb in [&["push"][..], &["fetch"], &["status"], &["auto", "on"]] {
        for bad in ["../x", too_long.as_str(), ".hidden", "-x"] {
            let mut args = vec!["mirror"];
            args.extend(verb);
            let flag = format!("--remote={bad}");
            args.push(&flag);
            let out = a.run(&args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
            assert!(String::from_utf8_lossy(&out.stderr).contains("not a remote name abcd accepts"), "{args:?}: {}", text(&out));
        }
    }
    let (code, json, out) = a.mirror_json("push", &["--remote", &longest]);
    assert_eq!(code, Some(0), "{}", text(&out));
    assert_eq!(json["remote"], longest.as_str());
    assert!(lab.journal_ref(&a.journal_id()).is_some());
    let (code, _, out) = a.mirror_json("fetch", &["--remote", &longest]);
    assert_eq!(code, Some(0), "{}", text(&out));
}

#[test]
fn auto_off_refuses_a_bad_remote_name_too() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    let out = a.run(&["mirror", "auto", "off", "--remote=../x"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a remote name abcd accepts"), "{}", text(&out));
    assert_eq!(a.status()["auto"]["remote"], "origin", "nothing was stored");
}

/// Issue 34: a working copy whose path looks like a token. abcd keeps no record for a new
/// one (tests/cli/init.rs); one whose journal was made before it was moved to such a path is
/// neither read nor pushed, and the push names the rule and what to run, never the path.
#[test]
fn a_working_copy_whose_path_looks_like_a_token_is_never_pushed_or_echoed() {
    let lab = Lab::new();
    let m = lab.machine("machine-a");
    m.add("Port the parser");
    let clean = m.root.parent().unwrap().join("wt-clean");
    m.git(&["worktree", "add", "-q", "-b", "side", clean.to_str().unwrap()]);
    let out = m.abcd().current_dir(&clean).args(["checklist", "add", "Side work"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(clean.join(".abcd/.work.local/journal.jsonl").exists());
    let token = fake_token();
    let moved = m.root.parent().unwrap().join(format!("wt {token}"));
    m.git(&["worktree", "move", clean.to_str().unwrap(), moved.to_str().unwrap()]);

    let out = m.run(&["mirror", "push"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "a journal not pushed makes the push exit 1: {said}");
    assert!(said.contains("path looks like a secret, not shown") && said.contains("git worktree move"), "{said}");
    assert_no_part_of(&token, &said, "the push");
    let remote_objects =
        String::from_utf8_lossy(&mirror_lab::git_in(&lab.remote, &["cat-file", "--batch-all-objects", "--batch"], None)).into_owned();
    assert_no_part_of(&token, &remote_objects, "the remote");
    // The other journal went: the main working copy's.
    assert_eq!(lab.git(&["for-each-ref", "--format=%(refname)", "refs/abcd/journals/"]).lines().count(), 1, "{said}");
}

/// Issue 34, acceptance 3: each token of the secret corpus as a working copy's folder
/// name (a worktree moved there after its journal was made), as the pushing machine's name,
/// and as a forged mirror's `machine` and `path` claims: no token and no 8-character run of
/// a token's random part is in what the push or a fetch or status says, or in the remote.
#[test]
fn the_secret_corpus_in_paths_and_mirror_claims_never_leaves_the_machine() {
    use common::secret_corpus::{corpus, leaked_run};
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Alpha one");
    for (k, (token, _)) in corpus().iter().enumerate() {
        let clean = a.root.parent().unwrap().join(format!("wt-clean-{k}"));
        a.git(&["worktree", "add", "-q", "-b", &format!("side-{k}"), clean.to_str().unwrap()]);
        let out = a.abcd().current_dir(&clean).args(["checklist", "add", "Side work"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        a.git(&["worktree", "move", clean.to_str().unwrap(), a.root.parent().unwrap().join(format!("wt {token}")).to_str().unwrap()]);
    }
    let mut said = String::new();
    for (token, _) in corpus() {
        // The machine's own name looks like the token: the mirror names it otherwise.
        let out = a.abcd().env("ABCD_MACHINE", &token).args(["mirror", "push"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "the moved worktrees are not pushed: {}", text(&out));
        said += &text(&out);
    }
    let a_id = a.journal_id();
    for (token, _) in corpus() {
        lab.forge_child(&a_id, |_, p| {
            p.edit_meta("machine", Some(json!(token)));
            p.edit_meta("path", Some(json!(format!("/home/{token}/wc"))));
        });
        said += &text(&b.run(&["mirror", "fetch"]));
        said += &text(&b.run(&["mirror", "fetch", "--json"]));
        said += &b.status().to_string();
        said += &b.status_text();
    }
    let remote_objects =
        String::from_utf8_lossy(&mirror_lab::git_in(&lab.remote, &["cat-file", "--batch-all-objects", "--batch"], None)).into_owned();
    let own_claims = lab.parts(&a.git(&["rev-parse", &format!("refs/abcd/journals/{a_id}")])).meta();
    for (token, random) in corpus() {
        assert_eq!(leaked_run(&said, &random), None, "what abcd says shows part of {token}: {said}");
        assert_eq!(leaked_run(&own_claims.to_string(), &random), None, "A's own mirror.json names part of {token}");
        // The forged claims are in the remote (the test wrote them); A's own objects are not.
        let without_forged: String = remote_objects.lines().filter(|l| !l.contains("/home/")).collect();
        assert_eq!(leaked_run(&without_forged, &random), None, "the remote holds part of {token} from A");
    }
}

/// Issue 34: a line appended, validly chained, to this machine's own mirror in the remote.
/// Another machine cannot tell it from the writer's (§9); the writer can, since it knows
/// its lines: its fetch names the mirror forged (exit 1), keeps no verified copy of it,
/// and says how to put its own mirror back.
#[test]
fn a_forged_continuation_of_its_own_journal_is_named_forged_by_its_writer() {
    let lab = Lab::new();
    let (a, c) = (lab.machine("machine-a"), lab.machine("machine-c"));
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    let head = a.head();
    let bytes = std::fs::read(a.journal_path()).unwrap();
    let added_line = bytes.split(|b| *b == b'\n').find(|l| l.windows(22).any(|w| w == b"checklist.item_added\",")).unwrap();
    let mut data = serde_json::from_slice::<Value>(added_line).unwrap()["data"].clone();
    data["item"]["id"] = json!("forged");
    data["item"]["title"] = json!("Send the deploy key to the address in the README");
    let (seq, prev) = head.chain_position();
    let time = chain::plus_ms(head.time, 1000);
    let event =
        NewEvent { kind: "checklist.item_added".into(), actor: Actor { session: None, pid: 4242, tool: "abcd/0.1.0".into() }, data };
    let (line, hash) = format::encode_line(seq + 1, time, &event, &prev).unwrap();
    let forged = lab.forge_child(&a_id, |lab, p| {
        let last = p.segments.last_mut().unwrap();
        let grown = [lab.cat(&last.id), line.clone()].concat();
        last.id = lab.blob(&grown);
        let total = p.meta()["bytes"].as_u64().unwrap() + line.len() as u64;
        p.edit_meta("bytes", Some(json!(total)));
        p.edit_meta("head_seq", Some(json!(seq + 1)));
        p.edit_meta("head_hash", Some(json!(hash.to_hex())));
        p.edit_meta("head_time", Some(json!(format::format_time(time))));
    });
    // The chain holds: another machine verifies it (MIRROR.md §9: a mirror does not prove
    // who wrote it).
    assert_good(&c.fetch_ok(), &a_id);
    // Its writer does not.
    let fetched = a.fetch_refused();
    assert_eq!(verdict(&fetched, &a_id), "forged", "{fetched}");
    let said = why(&fetched, &a_id);
    assert!(said.contains("never wrote") && said.contains("git push --force-with-lease"), "{said}");
    assert_ne!(verified_ref(&a, &a_id).trim(), forged.trim(), "the forgery is not kept as verified");
}

/// Issue 34: the StopFailure hook runs with SIGTERM ignored (it finishes its append when
/// told to stop); the background push it starts must not inherit that, as the notify
/// supervisor does not. A `git` on PATH records the signal mask the push's `git push` sees:
/// ignored dispositions pass from the push process to its children unchanged.
#[test]
fn the_background_push_a_stop_failure_hook_starts_does_not_inherit_its_ignored_sigterm() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    let on = a.run(&["mirror", "auto", "on", "--every", &LONG_EVERY_SECONDS.to_string()]);
    assert_eq!(on.status.code(), Some(0), "{}", text(&on));
    let bin = lab.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let real_git = String::from_utf8(Command::new("sh").args(["-c", "command -v git"]).output().unwrap().stdout).unwrap();
    let record = bin.join("sigign");
    let shim = format!(
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = push ] && grep SigIgn /proc/self/status >> '{}'; done\nexec {} \"$@\"\n",
        record.display(),
        real_git.trim()
    );
    std::fs::write(bin.join("git"), shim).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let payload = json!({"session_id": "s1", "cwd": a.root, "hook_event_name": "StopFailure", "error": "rate_limit"});
    let mut child = a
        .abcd()
        .env("PATH", &path)
        .args(["hook", "stop-failure"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let until = Instant::now() + BACKGROUND_WAIT;
    while !std::fs::read_to_string(&record).is_ok_and(|t| t.ends_with('\n')) {
        assert!(Instant::now() < until, "the background push ran no git push");
        std::thread::sleep(BACKGROUND_POLL);
    }
    let line = std::fs::read_to_string(&record).unwrap();
    let mask = u64::from_str_radix(line.lines().next().unwrap().trim_start_matches("SigIgn:").trim(), 16).unwrap();
    assert_eq!(mask & (1 << (15 - 1)), 0, "SIGTERM is ignored in the push's git: {line}");
}

/// Issue 34: a remote name git accepts (`team/origin`) is accepted, its fetch records kept
/// apart from another remote's; a refused name's refusal never names, as the next step, a
/// remote that abcd would refuse too.
#[test]
fn a_remote_name_git_accepts_is_accepted_and_a_refusal_names_a_way_out() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    let remote = lab.remote.to_str().unwrap();
    a.git(&["remote", "add", "team/origin", remote]);
    let (code, json, out) = a.mirror_json("push", &["--remote", "team/origin"]);
    assert_eq!(code, Some(0), "{}", text(&out));
    assert_eq!(json["remote"], "team/origin");
    let (code, fetched, out) = a.mirror_json("fetch", &["--remote", "team/origin"]);
    assert_eq!(code, Some(0), "{}", text(&out));
    assert_good(&fetched, &a.journal_id());
    let (code, _, out) = a.mirror_json("status", &["--remote", "team/origin"]);
    assert_eq!(code, Some(0), "{}", text(&out));
    let on = a.run(&["mirror", "auto", "on", "--remote", "team/origin"]);
    assert_eq!(on.status.code(), Some(0), "{}", text(&on));

    let too_long = "r".repeat(REMOTE_NAME_MAX + 1);
    a.git(&["remote", "add", &too_long, remote]);
    let out = a.run(&["mirror", "push", "--remote", &too_long]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(said.contains("git remote rename"), "a way out for a name git lists: {said}");
}

// ----- the cost of a mirror follows its bytes, not its segment count (issue 34) ---------

/// The git children `abcd mirror <verb>` started that read a mirror's objects.
fn object_readers(children: &[String]) -> Vec<&String> {
    children.iter().filter(|a| matches!(mirror_lab::git_subcommand(a), "cat-file" | "ls-tree")).collect()
}

/// A first `mirror fetch` and a `mirror status` of another machine's mirror whose every
/// line is a segment of its own (as anyone who can push may write it): each call reads the
/// mirror through at most 2 git children, and starts as many children at 4,096 and at
/// 65,536 (MIRROR.md's most) segments as at 1.
#[test]
fn status_and_a_first_fetch_start_as_many_git_children_whatever_the_segment_count() {
    let mut seen: Vec<(usize, usize, usize)> = Vec::new();
    for segments in [1usize, 4096, 65_536] {
        let lab = Lab::new();
        let c = lab.machine("machine-c");
        let id = format!("{segments:032x}");
        let scope = Scope::Repository { root_commit: lab.root_commit.clone() };
        let t = chain::at("2026-12-01T09:00:00.000Z");
        let mut journal = Chain::open(&id, scope.clone(), t, 4100);
        for i in 1..segments as i64 {
            let actor = chain::actor(None, 4100);
            journal.push(chain::plus_ms(t, i), &actor, COMPACTION_RECORDED, json!({"session": null, "trigger": "manual"}));
        }
        let commit = lab.mirror_in_segments(journal.lines(), 1, &id, &scope);
        lab.set_ref(&id, &commit);
        let git = mirror_lab::GitLog::new(lab.dir.path());

        let (fetched, fetch) = logged_fetch(&git, &c);
        assert_eq!(verdict(&fetched, &id), "verified", "{fetched}");
        assert_eq!(journal_entry(&fetched, &id)["head_seq"], segments as u64 - 1, "{fetched}");
        assert!(object_readers(&fetch).len() <= 2, "a first fetch of {segments} segments read them through {:?}", object_readers(&fetch));

        let started = Instant::now();
        let (out, status) = git.run(&c, &["mirror", "status", "--json"]);
        let took = started.elapsed();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
        let mirrored = shown["repositories"].as_array().unwrap().iter().find(|r| r["journal_id"] == id.as_str()).expect("the mirror");
        assert_eq!((mirrored["head_seq"].as_u64(), mirrored["verification"].as_str()), (Some(segments as u64 - 1), Some("verified")));
        assert!(object_readers(&status).len() <= 2, "status of {segments} segments read them through {:?}", object_readers(&status));
        eprintln!("{segments} one-line segments: fetch {} git children, status {} ({} ms)", fetch.len(), status.len(), took.as_millis());
        seen.push((segments, fetch.len(), status.len()));
    }
    let (_, fetch_1, status_1) = seen[0];
    for (segments, fetch, status) in &seen[1..] {
        assert_eq!((*fetch, *status), (fetch_1, status_1), "git children of fetch and status at {segments} segments against 1");
    }
}

/// `mirror fetch --json` run by `m` under `git`'s log: it exits 0, and its report and
/// the git children it started are handed back.
fn logged_fetch(git: &mirror_lab::GitLog, m: &Machine) -> (Value, Vec<String>) {
    let (out, children) = git.run(m, &["mirror", "fetch", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    (serde_json::from_slice(&out.stdout).unwrap(), children)
}

/// The blob ids of a remote mirror commit's segments.
fn segment_ids(lab: &Lab, commit: &str) -> std::collections::BTreeSet<String> {
    lab.parts(commit).segments.into_iter().map(|e| e.id).collect()
}

/// A mirror of MIRROR.md's most segments (65,536, one line each) that this machine fetched
/// and showed once: a repeat `mirror status` reads none of its segments again and starts
/// no more git children than the first; a fast-forward of one new line (in the last
/// segment) that breaks the chain is `rewritten` by a fetch that reads no old segment but
/// the last; one that verifies is folded by the next status reading no other old segment.
#[test]
fn a_repeat_status_reads_no_segment_again_and_a_fast_forward_reads_only_what_is_new() {
    let segments = abcd::mirror::MIRROR_MAX_SEGMENTS;
    let lab = Lab::new();
    let c = lab.machine("machine-c");
    let id = format!("{segments:032x}");
    let scope = Scope::Repository { root_commit: lab.root_commit.clone() };
    let t = chain::at("2026-12-01T09:00:00.000Z");
    let mut journal = Chain::open(&id, scope.clone(), t, 4100);
    let actor = chain::actor(None, 4100);
    for i in 1..segments as i64 {
        journal.push(chain::plus_ms(t, i), &actor, COMPACTION_RECORDED, json!({"session": null, "trigger": "manual"}));
    }
    let first = lab.mirror_in_segments(journal.lines(), 1, &id, &scope);
    lab.set_ref(&id, &first);
    let old_ids = segment_ids(&lab, &first);
    let git = mirror_lab::GitLog::new(lab.dir.path());
    let (out, _) = git.run(&c, &["mirror", "fetch", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown_head = |out: &std::process::Output| -> (Option<u64>, String) {
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
        let m = shown["repositories"].as_array().unwrap().iter().find(|r| r["journal_id"] == id.as_str()).expect("the mirror").clone();
        (m["head_seq"].as_u64(), m["verification"].as_str().unwrap_or_default().to_string())
    };
    let (out, first_status) = git.run(&c, &["mirror", "status", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(shown_head(&out), (Some(segments as u64 - 1), "verified".to_string()));

    let (out, repeat) = git.run(&c, &["mirror", "status", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(shown_head(&out), (Some(segments as u64 - 1), "verified".to_string()));
    let read: Vec<String> = git.contents_read().into_iter().filter(|o| old_ids.contains(o)).collect();
    assert!(read.is_empty(), "a repeat status read {} segments it had folded before", read.len());
    assert!(repeat.len() <= first_status.len(), "a repeat status started {repeat:?}, the first {first_status:?}");

    // A new line appended to the last segment (as a writer appends, MIRROR.md §4) whose
    // hash does not verify: rewritten, and the fetch read no old segment but the last.
    let (line, _) =
        journal.encode(chain::plus_ms(t, segments as i64), &actor, COMPACTION_RECORDED, json!({"session": null, "trigger": "auto"}));
    let mut broken = line.clone();
    let at = broken.windows(4).position(|w| w == b"auto").unwrap();
    broken[at] = b'A';
    let last_old = lab.parts(&first).segments.last().unwrap().id.clone();
    for (bytes, expect) in [(broken, "rewritten"), (line, "verified")] {
        lab.set_ref(&id, &first);
        lab.forge_child(&id, |lab, p| {
            let last = p.segments.last_mut().unwrap();
            last.id = lab.blob(&[lab.cat(&last.id), bytes.clone()].concat());
            let mut meta = p.meta();
            let head: Value = serde_json::from_slice(&bytes).unwrap_or(json!({}));
            meta["head_seq"] = json!(segments as u64);
            if expect == "verified" {
                (meta["head_hash"], meta["head_time"]) = (head["hash"].clone(), head["time"].clone());
            }
            meta["bytes"] = json!(meta["bytes"].as_u64().unwrap() + bytes.len() as u64);
            p.set_meta(&meta);
        });
        let (out, _) = git.run(&c, &["mirror", "fetch", "--json"]);
        let fetched: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(verdict(&fetched, &id), expect, "{fetched}");
        let read: Vec<String> = git.contents_read().into_iter().filter(|o| old_ids.contains(o) && *o != last_old).collect();
        assert!(read.is_empty(), "a fetch of a fast-forward read {} old segments besides the last", read.len());

        let (out, _) = git.run(&c, &["mirror", "status", "--json"]);
        let head = if expect == "verified" { segments as u64 } else { segments as u64 - 1 };
        assert_eq!(shown_head(&out), (Some(head), expect.to_string()));
        let read: Vec<String> = git.contents_read().into_iter().filter(|o| old_ids.contains(o) && *o != last_old).collect();
        assert!(read.is_empty(), "a status after a {expect} fast-forward read {} old segments besides the last", read.len());
    }
}

/// The file this machine keeps a mirror's folded state in (MIRROR.md §7), found under the
/// repository's home folder.
fn folded_files(m: &Machine, lab: &Lab) -> Vec<std::path::PathBuf> {
    let dir = m.repo_home(&lab.root_commit).join(FOLDED_DIR);
    let mut found = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() { stack.push(p) } else { found.push(p) }
        }
    }
    found
}

/// The state this machine keeps of a mirror it folded is a cache, never a verdict: a copy
/// damaged by a byte, or one taken from a machine that folded another commit of the same
/// journal, never makes status show what the verified copy does not hold, and a fetch of
/// a tampered remote says `rewritten` whatever that file holds.
#[test]
fn a_damaged_or_forged_folded_state_never_shows_what_the_verified_copy_does_not_hold() {
    let lab = Lab::new();
    let (a, b, d) = (lab.machine("machine-a"), lab.machine("machine-b"), lab.machine("machine-d"));
    a.add("Alpha one");
    let a_id = a.journal_id();
    a.push_ok();
    let verified = lab.journal_ref(&a_id).unwrap();
    assert_eq!(verdict(&b.fetch_ok(), &a_id), "verified");
    assert_eq!(open_titles(working_copy(&b.status(), &a_id)), ["Alpha one"]);
    let kept = folded_files(&b, &lab);
    assert_eq!(kept.len(), 1, "b keeps one folded state: {kept:?}");

    // Damaged: one byte of the title in b's own file.
    let mut bytes = std::fs::read(&kept[0]).unwrap();
    let at = bytes.windows(9).position(|w| w == b"Alpha one").expect("the title in the file");
    bytes[at + 8] = b'X';
    std::fs::write(&kept[0], &bytes).unwrap();
    assert_eq!(open_titles(working_copy(&b.status(), &a_id)), ["Alpha one"], "a damaged file is not read");

    // Forged: machine d's file for a later commit (a second item), and the remote tampered
    // so that commit is not a fast-forward b verifies.
    a.add("Alpha two");
    a.push_ok();
    assert_eq!(verdict(&d.fetch_ok(), &a_id), "verified");
    assert_eq!(open_titles(working_copy(&d.status(), &a_id)), ["Alpha one", "Alpha two"]);
    let theirs = folded_files(&d, &lab);
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    lab.forge_child(&a_id, |lab, p| {
        let mut bytes = lab.cat(&p.segments[0].id);
        let at = bytes.windows(9).position(|w| w == b"Alpha one").expect("the first title");
        bytes[at] = b'a';
        p.segments[0].id = lab.blob(&bytes);
    });
    for forged in [std::fs::read(&theirs[0]).unwrap(), b"not a folded state".to_vec()] {
        std::fs::write(&kept[0], &forged).unwrap();
        let fetched = b.fetch_refused();
        assert_eq!(verdict(&fetched, &a_id), "rewritten", "{fetched}");
        assert_eq!(verified_ref(&b, &a_id), verified, "the verified copy stays");
        let status = b.status();
        let wc = working_copy(&status, &a_id);
        assert_eq!(wc["verification"], "rewritten", "{wc}");
        assert_eq!(open_titles(wc), ["Alpha one"], "status shows the verified copy, not the kept file: {wc}");
    }
}

/// A fetch judges each mirror's fast-forward without a git child of its own: the incoming
/// commit's ancestry is read through the batch children (no `merge-base`), this machine's
/// own refs are listed once (no `rev-parse` per mirror), and the verified refs move in one
/// `update-ref` transaction; the batch children are at most one per thread judging.
#[test]
fn a_fetch_of_many_fast_forwards_starts_no_git_child_per_mirror() {
    let lab = Lab::new();
    let pushers: Vec<Machine> = (0..4).map(|k| lab.machine(&format!("machine-p{k}"))).collect();
    for (k, p) in pushers.iter().enumerate() {
        p.add(&format!("Item {k} one"));
        p.push_ok();
    }
    let c = lab.machine("machine-c");
    let first = c.fetch_ok();
    let mirrors = first["journals"].as_array().unwrap().len();
    assert_eq!(mirrors, pushers.len(), "a working copy's journal from each pusher: {first}");
    for (k, p) in pushers.iter().enumerate() {
        p.add(&format!("Item {k} two"));
        p.push_ok();
    }
    let git = mirror_lab::GitLog::new(lab.dir.path());
    let (fetched, children) = logged_fetch(&git, &c);
    for p in &pushers {
        assert_eq!(verdict(&fetched, &p.journal_id()), "verified", "{fetched}");
    }
    let named = |sub: &str| children.iter().filter(|a| mirror_lab::git_subcommand(a) == sub).count();
    assert_eq!((named("merge-base"), named("rev-parse")), (0, 0), "{children:#?}");
    assert_eq!(named("update-ref"), 1, "{children:#?}");
    assert!(named("cat-file") <= abcd::command::mirror::FETCH_PARALLEL, "{children:#?}");
}

/// `ANCESTRY_WALK_MAX` on both sides of its edge: a fast-forward 64 commits above the
/// verified copy is placed through the batch child alone, one 65 commits above asks `git
/// merge-base`; both verify.
#[test]
fn a_fast_forward_within_the_ancestry_walk_needs_no_merge_base_and_one_past_it_asks_git() {
    assert_eq!(abcd::mirror::judge::ANCESTRY_WALK_MAX, 64);
    for (above, merge_bases) in [(64usize, 0usize), (65, 1)] {
        let lab = Lab::new();
        let (a, c) = (lab.machine("machine-a"), lab.machine("machine-c"));
        a.add("Alpha one");
        a.push_ok();
        let id = a.journal_id();
        assert_eq!(verdict(&c.fetch_ok(), &id), "verified");
        // Commits of the same tree on top of the verified copy: the same lines, a longer history.
        let mut at = lab.journal_ref(&id).unwrap();
        let tree = lab.git(&["rev-parse", &format!("{at}^{{tree}}")]);
        for k in 0..above {
            at = lab.commit(&tree, Some(&at), &format!("step {k}"));
        }
        lab.set_ref(&id, &at);
        let git = mirror_lab::GitLog::new(lab.dir.path());
        let (fetched, children) = logged_fetch(&git, &c);
        assert_eq!(verdict(&fetched, &id), "verified", "{fetched}");
        let asked = children.iter().filter(|a| mirror_lab::git_subcommand(a) == "merge-base").count();
        assert_eq!(asked, merge_bases, "{above} commits above the verified copy: {children:#?}");
    }
}
