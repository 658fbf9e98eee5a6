//! The mirror as this machine's backup (issue 31, acceptance 3), through the built binary
//! with real git: a bare repository as the remote and clones of it, each a "machine" with
//! its own home store. `abcd journal restore` rebuilds a journal deleted, emptied, replaced
//! or cut short from the machine's own `refs/abcd/journals/<id>` (no network), byte for
//! byte; `abcd mirror restart` keeps every line a repaired journal lost before it drops the
//! old mirror.

use crate::common::mirror_lab;

use std::path::{Path, PathBuf};

use mirror_lab::{Lab, Machine, journal_entry, text};
use serde_json::Value;

/// The titles each test adds before it pushes.
const TITLES: [&str; 5] = ["Alpha one", "Alpha two", "Alpha three", "Alpha four", "Alpha five"];

/// A machine with the five items added and its journals pushed; the journal's bytes then.
fn pushed_machine(lab: &Lab, name: &str) -> (Machine, Vec<u8>) {
    let m = lab.machine(name);
    for t in TITLES {
        m.add(t);
    }
    m.push_ok();
    let bytes = std::fs::read(m.journal_path()).unwrap();
    (m, bytes)
}

/// The concatenation of the segments of the commit `m`'s local ref of `journal_id` names.
fn local_mirror_bytes(m: &Machine, journal_id: &str) -> Vec<u8> {
    let commit = m.git(&["rev-parse", "--verify", &format!("refs/abcd/journals/{journal_id}")]);
    let listing = m.git(&["ls-tree", &format!("{commit}:segments")]);
    let mut bytes = Vec::new();
    for line in listing.lines() {
        let id = line.split_whitespace().nth(2).unwrap();
        bytes.extend(mirror_lab::git_in(&m.root, &["cat-file", "blob", id], None));
    }
    bytes
}

/// `abcd journal restore --json`, which must exit 0; its JSON.
fn restore_ok(m: &Machine, more: &[&str]) -> Value {
    let mut args = vec!["journal", "restore", "--json"];
    args.extend(more);
    let out = m.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}: journal restore: {}", m.name, text(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("restore --json: {e}: {}", text(&out)))
}

/// `abcd journal verify` exits 0 and says the anchor agrees.
fn verifies(m: &Machine) {
    let out = m.run(&["journal", "verify"]);
    assert_eq!(out.status.code(), Some(0), "{}: journal verify: {}", m.name, text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("anchor:  agrees"), "{said}");
}

/// Every title shows in `abcd checklist`.
fn shows_every_item(m: &Machine, titles: &[&str]) {
    let out = m.run(&["checklist"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    for t in titles {
        assert!(said.contains(t), "{t} is not on the checklist:\n{said}");
    }
}

/// The files in the journal's `quarantine/` whose names start with `prefix`.
fn quarantined(m: &Machine, prefix: &str) -> Vec<PathBuf> {
    let dir = m.journal_path().parent().unwrap().join("quarantine");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    found.sort();
    found
}

/// Lines of a journal's bytes, each with its LF.
fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.split_inclusive(|b| *b == b'\n').map(<[u8]>::to_vec).collect()
}

fn refused_with(m: &Machine, args: &[&str], words: &[&str]) -> String {
    let out = m.run(args);
    assert_eq!(out.status.code(), Some(2), "{}: abcd {args:?}: {}", m.name, text(&out));
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    for w in words {
        assert!(said.contains(w), "the refusal does not say {w:?}: {said}");
    }
    said
}

#[test]
fn a_deleted_journal_is_restored_whole_from_the_local_mirror() {
    let lab = Lab::new();
    let (a, before) = pushed_machine(&lab, "machine-a");
    let id = a.journal_id();
    assert_eq!(local_mirror_bytes(&a, &id), before, "the push mirrored every line");
    std::fs::remove_file(a.journal_path()).unwrap();
    assert_eq!(a.run(&["journal", "verify"]).status.code(), Some(1), "a deleted journal is a finding");

    let restored = restore_ok(&a, &[]);
    assert_eq!(restored["found"], "deleted", "{restored}");
    assert_eq!(restored["journal_id"], id.as_str(), "{restored}");
    assert_eq!(restored["lost"], Value::Null, "{restored}");
    assert_eq!(std::fs::read(a.journal_path()).unwrap(), before, "the journal is back byte for byte");
    verifies(&a);
    shows_every_item(&a, &TITLES);
    // It goes on as if nothing happened: an append, and a push that continues the mirror.
    a.add("Alpha six");
    let pushed = a.push_ok();
    assert_eq!(journal_entry(&pushed, &id)["outcome"], "pushed", "{pushed}");
    assert_eq!(journal_entry(&pushed, &id)["new_events"], 1, "{pushed}");
}

#[test]
fn an_emptied_journal_is_restored_whole() {
    let lab = Lab::new();
    let (a, before) = pushed_machine(&lab, "machine-a");
    std::fs::write(a.journal_path(), b"").unwrap();
    let restored = restore_ok(&a, &[]);
    assert_eq!(restored["found"], "emptied", "{restored}");
    assert_eq!(restored["quarantine"], Value::Null, "an empty file holds nothing to keep: {restored}");
    assert_eq!(std::fs::read(a.journal_path()).unwrap(), before);
    verifies(&a);
    shows_every_item(&a, &TITLES);
}

#[test]
fn a_replaced_journal_is_restored_and_the_replacement_kept_in_quarantine() {
    let lab = Lab::new();
    let (a, before) = pushed_machine(&lab, "machine-a");
    let b = lab.machine("machine-b");
    b.add("Bravo one");
    let replacement = std::fs::read(b.journal_path()).unwrap();
    std::fs::write(a.journal_path(), &replacement).unwrap();

    let restored = restore_ok(&a, &[]);
    assert_eq!(restored["found"], "replaced", "{restored}");
    assert_eq!(std::fs::read(a.journal_path()).unwrap(), before);
    let kept = quarantined(&a, "replaced-0-");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(restored["quarantine"], kept[0].display().to_string().as_str(), "{restored}");
    assert_eq!(std::fs::read(&kept[0]).unwrap(), replacement, "the replacement is kept byte for byte");
    verifies(&a);
    shows_every_item(&a, &TITLES);
}

#[test]
fn a_journal_cut_short_gets_its_mirrored_lines_back() {
    let lab = Lab::new();
    let (a, before) = pushed_machine(&lab, "machine-a");
    let all = lines(&before);
    std::fs::write(a.journal_path(), all[..3].concat()).unwrap();
    let restored = restore_ok(&a, &[]);
    assert_eq!(restored["found"], "cut_short", "{restored}");
    assert_eq!(std::fs::read(a.journal_path()).unwrap(), before);
    let kept = quarantined(&a, "replaced-0-");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(std::fs::read(&kept[0]).unwrap(), all[..3].concat());
    verifies(&a);
}

#[test]
fn lines_after_the_last_push_are_named_lost_and_nothing_else_is() {
    let lab = Lab::new();
    let (a, before) = pushed_machine(&lab, "machine-a");
    a.add("Alpha six");
    a.add("Alpha seven");
    let acknowledged = lines(&std::fs::read(a.journal_path()).unwrap()).len() as u64;
    std::fs::remove_file(a.journal_path()).unwrap();

    let restored = restore_ok(&a, &[]);
    let mirrored = lines(&before).len() as u64;
    assert_eq!(restored["lost"], serde_json::json!([mirrored, acknowledged - 1]), "{restored}");
    assert_eq!(restored["repaired_seq"], mirrored, "{restored}");
    let now = std::fs::read(a.journal_path()).unwrap();
    assert!(now.starts_with(&before), "every mirrored line is back, byte for byte");
    let record: Value = serde_json::from_slice(lines(&now).last().unwrap()).unwrap();
    assert_eq!(record["kind"], "journal.repaired", "{record}");
    assert_eq!(record["data"]["anchor_seq"], acknowledged - 1, "{record}");
    verifies(&a);
    shows_every_item(&a, &TITLES);
    a.add("Alpha eight");
}

#[test]
fn restore_refuses_without_a_mirror_and_for_an_intact_or_damaged_journal() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Alpha one");
    let never_pushed = std::fs::read(a.journal_path()).unwrap();
    std::fs::remove_file(a.journal_path()).unwrap();
    refused_with(&a, &["journal", "restore"], &["holds no mirror", "abcd mirror push", "abcd journal repair"]);
    assert!(!a.journal_path().exists(), "a refusal writes nothing");
    std::fs::write(a.journal_path(), &never_pushed).unwrap();

    let (b, before) = pushed_machine(&lab, "machine-b");
    refused_with(&b, &["journal", "restore"], &["nothing is lost", "abcd journal repair"]);
    let mut damaged = before.clone();
    let at = lines(&before)[..2].concat().len() + 40;
    damaged[at] ^= 1;
    std::fs::write(b.journal_path(), &damaged).unwrap();
    refused_with(&b, &["journal", "restore"], &["damaged at seq 2", "abcd journal repair"]);
    assert_eq!(std::fs::read(b.journal_path()).unwrap(), damaged, "a refusal leaves the file as it was");
    assert!(quarantined(&b, "").is_empty(), "and copies nothing");
}

#[test]
fn the_mirror_restart_keeps_every_line_the_journal_lost() {
    let lab = Lab::new();
    let (a, before) = pushed_machine(&lab, "machine-a");
    let id = a.journal_id();
    let old_commit = a.git(&["rev-parse", "--verify", &format!("refs/abcd/journals/{id}")]);
    let old_lines = lines(&local_mirror_bytes(&a, &id));
    assert_eq!(old_lines.concat(), before);
    // A byte of seq 3 damaged, repaired without the mirror (as an older abcd did, or where
    // the mirror could not be read), so the line is lost, and one more item.
    let mut damaged = before.clone();
    damaged[lines(&before)[..3].concat().len() + 40] ^= 1;
    std::fs::write(a.journal_path(), &damaged).unwrap();
    let repaired = repair_without_the_mirror(&a, &id);
    assert_eq!(repaired.status.code(), Some(0), "{}", text(&repaired));
    a.add("Alpha six");
    let (code, _, out) = a.mirror_json("push", &[]);
    assert_eq!(code, Some(1), "the repaired journal's push is refused: {}", text(&out));

    let (code, restarted, out) = a.mirror_json("restart", &[]);
    assert_eq!(code, Some(0), "{}", text(&out));
    let journal = std::fs::read(a.journal_path()).unwrap();
    let held: Vec<Vec<u8>> = lines(&journal);
    let lost: Vec<Vec<u8>> = old_lines.iter().filter(|l| !held.contains(l)).cloned().collect();
    assert!(!lost.is_empty(), "the repair lost a mirrored line");
    assert_eq!(restarted["lost_lines"], lost.len(), "{restarted}");
    let kept = quarantined(&a, "mirror-");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(restarted["quarantine"], kept[0].display().to_string().as_str(), "{restarted}");
    assert_eq!(std::fs::read(&kept[0]).unwrap(), lost.concat(), "every lost line is kept, byte for byte, in chain order");
    // Every line of the old mirror is in the journal or in quarantine.
    let in_quarantine = lines(&std::fs::read(&kept[0]).unwrap());
    for l in &old_lines {
        assert!(held.contains(l) || in_quarantine.contains(l), "a mirrored line went missing: {}", String::from_utf8_lossy(l));
    }
    // The mirror now holds the repaired journal from its start, here and on the remote.
    assert_eq!(restarted["remote_ref"], "deleted", "{restarted}");
    let new_commit = lab.journal_ref(&id).expect("the remote holds the restarted mirror");
    assert_ne!(new_commit, old_commit);
    assert_eq!(a.git(&["rev-parse", "--verify", &format!("refs/abcd/journals/{id}")]), new_commit);
    assert_eq!(local_mirror_bytes(&a, &id), journal, "the restarted mirror holds the journal as it is");
    assert_eq!(journal_entry(&restarted["push"], &id)["outcome"], "pushed", "{restarted}");
    let again = a.push_ok();
    assert_eq!(journal_entry(&again, &id)["outcome"], "up_to_date", "{again}");
    // Another machine verifies it.
    let c = lab.machine("machine-c");
    mirror_lab::assert_good(&c.fetch_ok(), &id);
}

#[test]
fn a_mirror_that_is_not_refused_is_not_restarted() {
    let lab = Lab::new();
    let (a, _) = pushed_machine(&lab, "machine-a");
    let id = a.journal_id();
    let old = a.git(&["rev-parse", "--verify", &format!("refs/abcd/journals/{id}")]);
    refused_with(&a, &["mirror", "restart"], &["needs no restart", "abcd mirror push"]);
    assert_eq!(a.git(&["rev-parse", "--verify", &format!("refs/abcd/journals/{id}")]), old);
    assert_eq!(lab.journal_ref(&id), Some(old), "the remote's ref is left as it is");
    assert!(quarantined(&a, "").is_empty());
    let b = lab.machine("machine-b");
    b.add("Bravo one");
    refused_with(&b, &["mirror", "restart"], &["holds no mirror", "abcd mirror push"]);
}

#[test]
fn a_restore_leaves_other_journals_alone() {
    let lab = Lab::new();
    let (a, before) = pushed_machine(&lab, "machine-a");
    let others: Vec<(PathBuf, Vec<u8>)> = walk(&a.home).into_iter().map(|p| (p.clone(), std::fs::read(&p).unwrap())).collect();
    std::fs::remove_file(a.journal_path()).unwrap();
    restore_ok(&a, &[]);
    assert_eq!(std::fs::read(a.journal_path()).unwrap(), before);
    for (p, bytes) in others {
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "{} changed", p.display());
    }
}

/// Every journal file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|e| e == "jsonl") {
            out.push(p);
        }
    }
    out
}

/// What the lead's repair takes back from the mirror (`command::journal::mirror_lines_for_repair`):
/// every mirrored line verbatim, found by the journal's genesis, or by the path's record
/// when the file is gone; nothing when there is no mirror or no repository.
#[test]
fn mirror_lines_for_repair_hands_back_every_mirrored_line_verbatim() {
    use abcd::command::journal::mirror_lines_for_repair;
    use abcd::journal::anchor::AnchorStore;
    use abcd::journal::storage::RealDisk;
    use abcd::journal::{Journal, JournalPaths};
    use abcd::places::Place;

    let lab = Lab::new();
    let (a, before) = pushed_machine(&lab, "machine-a");
    let id = a.journal_id();
    let journal_of =
        |m: &Machine| Journal::new(RealDisk::shared(), JournalPaths::beside(&m.journal_path()), Some(AnchorStore::new(&m.home)));
    let got = mirror_lines_for_repair(&journal_of(&a), &Place::at(&a.root)).unwrap();
    assert_eq!(got.lines, lines(&before));
    assert_eq!(got.journal_id.as_deref(), Some(id.as_str()));
    assert_eq!(got.commit, Some(a.git(&["rev-parse", "--verify", &format!("refs/abcd/journals/{id}")])));
    assert_eq!(got.stopped, None);

    // Damage in the file changes nothing the mirror holds.
    let mut damaged = before.clone();
    damaged[lines(&before)[..3].concat().len() + 40] ^= 1;
    std::fs::write(a.journal_path(), &damaged).unwrap();
    assert_eq!(mirror_lines_for_repair(&journal_of(&a), &Place::at(&a.root)).unwrap().lines, lines(&before));
    // A file gone: the path's record names the journal.
    std::fs::remove_file(a.journal_path()).unwrap();
    assert_eq!(mirror_lines_for_repair(&journal_of(&a), &Place::at(&a.root)).unwrap().lines, lines(&before));

    // Never pushed: no lines, not an error.
    let b = lab.machine("machine-b");
    b.add("Bravo one");
    let none = mirror_lines_for_repair(&journal_of(&b), &Place::at(&b.root)).unwrap();
    assert!(none.lines.is_empty() && none.commit.is_none(), "{none:?}");
    // Outside any repository: no lines.
    let elsewhere = tempfile::tempdir().unwrap();
    assert!(mirror_lines_for_repair(&journal_of(&a), &Place::at(elsewhere.path())).unwrap().lines.is_empty());
}

/// MIRROR.md §10 states the reader's limits the code uses.
#[test]
fn mirror_md_states_the_limits_the_code_uses() {
    let spec = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("journal-format/MIRROR.md")).unwrap();
    let flat = spec.split_whitespace().collect::<Vec<_>>().join(" ");
    let with_commas = |n: u64| {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    let lines = format!("`OWN_LINES_MAX` ({}) lines", with_commas(abcd::mirror::own::OWN_LINES_MAX as u64));
    let bytes = format!("`OWN_BYTES_MAX` ({}) bytes", with_commas(abcd::mirror::own::OWN_BYTES_MAX));
    assert!(flat.contains(&lines), "MIRROR.md §10 does not say: {lines}");
    assert!(flat.contains(&bytes), "MIRROR.md §10 does not say: {bytes}");
}

#[test]
fn the_repository_journal_is_restored_with_repo() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    let away = a.run(&["mode", "autonomous", "--until", "+1h"]);
    assert_eq!(away.status.code(), Some(0), "{}", text(&away));
    let pushed = a.push_ok();
    let repo_entry = pushed["journals"].as_array().unwrap().iter().find(|j| j["scope"]["kind"] == "repository").cloned().unwrap();
    let id = repo_entry["journal_id"].as_str().unwrap().to_string();
    let path = a.repo_home(&lab.root_commit).join("journal.jsonl");
    let before = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let restored = restore_ok(&a, &["--repo"]);
    assert_eq!(restored["journal_id"], id.as_str(), "{restored}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let verify = a.run(&["journal", "verify", "--repo"]);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));
    let mode = a.run(&["mode"]);
    assert_eq!(mode.status.code(), Some(0), "{}", text(&mode));
}

#[test]
fn a_restart_whose_remote_ref_is_already_gone_still_keeps_the_lost_lines_and_pushes() {
    let lab = Lab::new();
    let (a, before) = pushed_machine(&lab, "machine-a");
    let id = a.journal_id();
    let mut damaged = before.clone();
    damaged[lines(&before)[..2].concat().len() + 40] ^= 1;
    std::fs::write(a.journal_path(), &damaged).unwrap();
    let repaired = repair_without_the_mirror(&a, &id);
    assert_eq!(repaired.status.code(), Some(0), "{}", text(&repaired));
    // A restart that got as far as the remote's delete before it was stopped.
    lab.git(&["update-ref", "-d", &format!("refs/abcd/journals/{id}")]);
    let (code, restarted, out) = a.mirror_json("restart", &[]);
    assert_eq!(code, Some(0), "{}", text(&out));
    assert_eq!(restarted["remote_ref"], "absent", "{restarted}");
    let kept = quarantined(&a, "mirror-2-");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(std::fs::read(&kept[0]).unwrap(), lines(&before)[2], "the line the repair lost, byte for byte");
    assert_eq!(local_mirror_bytes(&a, &id), std::fs::read(a.journal_path()).unwrap());
}

/// Writes `n` refs under `refs/abcd/journals/` that name `commit` under ids no journal has.
fn extra_journal_refs(m: &Machine, commit: &str, n: usize) {
    let input: String = (0..n).map(|i| format!("create refs/abcd/journals/{i:032x} {commit}\n")).collect();
    mirror_lab::git_in(&m.root, &["update-ref", "--stdin"], Some(input.as_bytes()));
}

/// With the home store's records gone, restore finds the journal as the one mirror of the
/// working copy's scope, reading at most `SCOPE_SEARCH_MAX_REFS` refs to find it.
#[test]
fn without_the_home_store_records_the_journal_is_found_by_its_scope_within_the_search_limit() {
    let max = abcd::command::journal::SCOPE_SEARCH_MAX_REFS;
    let lab = Lab::new();
    let (a, before) = pushed_machine(&lab, "machine-a");
    let id = a.journal_id();
    let commit = a.git(&["rev-parse", "--verify", &format!("refs/abcd/journals/{id}")]);
    // The repository journal's mirror and this one: two refs already.
    let held = a.git(&["for-each-ref", "refs/abcd/journals/"]).lines().count();
    extra_journal_refs(&a, &commit, max - held);
    std::fs::remove_file(a.journal_path()).unwrap();
    std::fs::remove_dir_all(a.home.join("anchors")).unwrap();
    // At the limit: found.
    let restored = restore_ok(&a, &[]);
    assert_eq!(restored["journal_id"], id.as_str(), "{restored}");
    assert_eq!(std::fs::read(a.journal_path()).unwrap(), before);
    // One past it: refused, naming --id; with --id it is restored.
    std::fs::remove_file(a.journal_path()).unwrap();
    std::fs::remove_dir_all(a.home.join("anchors")).unwrap();
    a.git(&["update-ref", &format!("refs/abcd/journals/{:032x}", max + 1), &commit]);
    refused_with(&a, &["journal", "restore"], &[&format!("more than {max} journal mirrors"), "--id"]);
    assert!(!a.journal_path().exists());
    restore_ok(&a, &["--id", &id]);
    assert_eq!(std::fs::read(a.journal_path()).unwrap(), before);
    verifies_without_anchor(&a);
}

/// `abcd journal verify` exits 0 (with no anchor to compare when the home store lost it).
fn verifies_without_anchor(m: &Machine) {
    let out = m.run(&["journal", "verify"]);
    assert_eq!(out.status.code(), Some(0), "{}: journal verify: {}", m.name, text(&out));
}

/// Acceptance 3: with the mirror pushed before the damage, the damage costs no line. A bit
/// flipped in one line and another line cut away: one repair restores both from this
/// machine's own mirror ref (no network), byte for byte, verify exits 0, every item shows,
/// replay names nothing lost, and the quarantine holds only the damaged bytes.
#[test]
fn damage_after_a_push_costs_no_line_the_repair_restores_it_from_the_local_mirror() {
    let lab = Lab::new();
    let (m, pushed) = pushed_machine(&lab, "a");
    let path = m.journal_path();
    let starts: Vec<usize> =
        std::iter::once(0).chain(pushed.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1)).collect();
    assert!(starts.len() > 6, "the journal holds the genesis and the five adds");
    // A bit of line 2 flipped, and line 4 cut out at its boundaries.
    let mut damaged = pushed[..starts[4]].to_vec();
    damaged.extend_from_slice(&pushed[starts[5]..]);
    damaged[starts[2] + 60] ^= 0x01;
    std::fs::write(&path, &damaged).unwrap();

    let out = m.run(&["journal", "repair"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("restored from this machine's mirror") && !said.contains("lost seqs"), "{said}");
    let after = std::fs::read(&path).unwrap();
    assert!(after.starts_with(&pushed), "every pushed line is back, byte for byte, in chain order");
    verifies(&m);
    shows_every_item(&m, &TITLES);
    let replay = m.run(&["replay"]);
    assert!(!String::from_utf8_lossy(&replay.stdout).contains("LOST"), "{}", text(&replay));
    let copies: Vec<Vec<u8>> = quarantined(&m, "corrupt-").iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert_eq!(copies, [damaged[starts[2]..starts[3]].to_vec()], "only the damaged line's bytes are in quarantine");
}

/// `abcd journal repair` while this machine's mirror ref is out of reach (moved aside and put
/// back after): a repair by an older abcd, or one that could not read the mirror, which
/// loses the damaged line the mirror still holds.
fn repair_without_the_mirror(m: &Machine, journal_id: &str) -> std::process::Output {
    let name = format!("refs/abcd/journals/{journal_id}");
    let commit = m.git(&["rev-parse", "--verify", &name]);
    m.git(&["update-ref", "-d", &name]);
    let out = m.run(&["journal", "repair"]);
    m.git(&["update-ref", &name, commit.trim()]);
    out
}
