//! A journal emptied, cut inside its first line, deleted, or replaced by another one, in a
//! working copy whose home store recorded the journal at that path (journal-format/SPEC.md
//! §8.1, §11; issue 20): `abcd journal verify` names the loss, appends are refused, readers
//! say the plan is degraded, and only `abcd journal repair` starts afresh, on the record.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::repo::TestRepo;
use serde_json::Value;

struct Wc {
    repo: TestRepo,
}

impl Wc {
    /// A managed working copy with two items added, as in the issue's reproduction.
    fn with_two_items() -> Wc {
        let wc = Wc { repo: TestRepo::new().managed() };
        for title in ["one", "two"] {
            let out = wc.abcd(&["checklist", "add", title]);
            assert!(out.status.success(), "{}", text(&out));
        }
        wc
    }

    fn abcd(&self, args: &[&str]) -> Output {
        self.abcd_home(args, &self.repo.home)
    }

    fn abcd_home(&self, args: &[&str], home: &Path) -> Output {
        Command::new(env!("CARGO_BIN_EXE_abcd")).args(args).current_dir(&self.repo.root).env("ABCD_HOME", home).output().unwrap()
    }

    fn tier(&self) -> PathBuf {
        self.repo.root.join(".abcd/.work.local")
    }

    fn journal(&self) -> PathBuf {
        self.tier().join("journal.jsonl")
    }

    fn journal_id(&self) -> String {
        let v = self.verify_json();
        v["journal_id"].as_str().expect("a journal id").to_string()
    }

    fn verify_json(&self) -> Value {
        serde_json::from_slice(&self.abcd(&["journal", "verify", "--json"]).stdout).unwrap()
    }

    fn titles(&self) -> Vec<String> {
        let out = self.abcd(&["checklist", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["items"].as_array().unwrap().iter().map(|i| i["title"].as_str().unwrap().to_string()).collect()
    }

    /// The context `abcd hook session-start` gives a new session, and its stderr.
    fn session_start(&self) -> (String, String) {
        let payload =
            format!(r#"{{"session_id":"s1","cwd":"{}","hook_event_name":"SessionStart","source":"startup"}}"#, self.repo.root.display());
        let mut child = Command::new(env!("CARGO_BIN_EXE_abcd"))
            .args(["hook", "session-start"])
            .current_dir(&self.repo.root)
            .env("ABCD_HOME", &self.repo.home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), payload.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a hook fails open: {}", text(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let context = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_string();
        (context, String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// The events of the journal, as JSON.
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.journal()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// What each loss leaves at the journal's path.
#[derive(Clone, Copy, Debug)]
enum Loss {
    Emptied,
    CutInsideFirstLine,
    Deleted,
}

impl Loss {
    const ALL: [Loss; 3] = [Loss::Emptied, Loss::CutInsideFirstLine, Loss::Deleted];

    fn apply(self, journal: &Path) {
        match self {
            Loss::Emptied => std::fs::write(journal, b"").unwrap(),
            Loss::CutInsideFirstLine => {
                let bytes = std::fs::read(journal).unwrap();
                std::fs::write(journal, &bytes[..100]).unwrap();
            }
            Loss::Deleted => std::fs::remove_file(journal).unwrap(),
        }
    }

    /// How verify and the refusals say what the path holds now.
    fn words(self) -> &'static str {
        match self {
            Loss::Emptied | Loss::Deleted => "now holds nothing",
            Loss::CutInsideFirstLine => "now holds only a first line cut short",
        }
    }
}

/// The issue's reproduction, for each loss: verify exits 0 with "verdict: ok" on an
/// emptied journal, `checklist add three` starts a new journal, and the hooks show the
/// shrunken plan with no note.
#[test]
fn a_lost_journal_is_named_by_verify_refused_by_appends_and_shown_as_degraded() {
    for loss in Loss::ALL {
        let wc = Wc::with_two_items();
        let old = wc.journal_id();
        loss.apply(&wc.journal());
        let left = std::fs::read(wc.journal()).ok();

        let out = wc.abcd(&["journal", "verify"]);
        assert_eq!(out.status.code(), Some(1), "{loss:?}: {}", text(&out));
        let said = text(&out);
        assert!(said.contains("verdict: FAILED"), "{loss:?}: {said}");
        assert!(said.contains(&format!("this path held journal {old} with 3 acknowledged events")), "{loss:?}: {said}");
        assert!(said.contains(loss.words()), "{loss:?}: {said}");
        let v = wc.verify_json();
        assert_eq!(v["ok"], false, "{loss:?}: {v}");
        assert!(v["replaced"].as_str().unwrap().contains(&old), "{loss:?}: {v}");

        for title in ["three", "four"] {
            let out = wc.abcd(&["checklist", "add", title]);
            assert_eq!(out.status.code(), Some(2), "{loss:?}: add {title} must be refused: {}", text(&out));
            let said = text(&out);
            assert!(said.contains("refusing to append to") && said.contains(&old) && said.contains(loss.words()), "{loss:?}: {said}");
            assert!(said.contains("`abcd journal repair`"), "{loss:?}: the refusal names what to run: {said}");
            assert_eq!(std::fs::read(wc.journal()).ok(), left, "{loss:?}: the refusal leaves the path as it was");
            assert!(!wc.tier().join("quarantine").exists(), "{loss:?}: nothing was moved aside");
        }

        // The readers: the last good plan, said to be degraded, with what to run.
        let out = wc.abcd(&["checklist"]);
        assert!(out.status.success(), "{loss:?}: {}", text(&out));
        let said = text(&out);
        assert!(said.contains("the plan is degraded") && said.contains(&old) && said.contains("`abcd journal repair`"), "{loss:?}: {said}");
        assert_eq!(wc.titles(), ["one", "two"], "{loss:?}");
        let (context, stderr) = wc.session_start();
        assert!(context.contains("the plan is degraded") && context.contains(&old), "{loss:?}: {context}");
        assert!(context.contains("\n1: one\n") && context.contains("\n2: two\n"), "{loss:?}: {context}");
        assert!(stderr.contains("session.started event was not recorded"), "{loss:?}: {stderr}");
        assert_eq!(std::fs::read(wc.journal()).ok(), left, "{loss:?}: the hook wrote nothing there");
    }
}

/// Another journal copied over this path's: the issue's "replaced" case, reached here
/// without abcd ever starting one itself.
#[test]
fn a_journal_replaced_by_another_is_refused_and_shown_as_degraded() {
    let wc = Wc::with_two_items();
    let other = Wc::with_two_items();
    let out = other.abcd(&["checklist", "add", "other"]);
    assert!(out.status.success(), "{}", text(&out));
    let (old, new) = (wc.journal_id(), other.journal_id());
    // Each working copy has its own home store here; the copy's id is not this path's.
    let copied = std::fs::read(other.journal()).unwrap();
    std::fs::write(wc.journal(), &copied).unwrap();
    let out = wc.abcd(&["checklist", "add", "three"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains(&format!("held journal {old} with 3 acknowledged events")) && said.contains(&format!("now holds journal {new}")),
        "{said}"
    );
    assert_eq!(std::fs::read(wc.journal()).unwrap(), copied, "nothing was chained onto the copy");
    let out = wc.abcd(&["checklist"]);
    let said = text(&out);
    assert!(said.contains("the plan is degraded") && said.contains(&new), "{said}");
    assert_eq!(wc.titles(), ["one", "two"], "the last good plan of this path, not the copy's");
    let out = wc.abcd(&["journal", "verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

/// What a person runs to start afresh on purpose: repair starts a new journal whose first
/// event after genesis names the lost one, and from then on appends go on.
#[test]
fn repair_starts_a_new_journal_with_the_loss_on_record() {
    for loss in Loss::ALL {
        let wc = Wc::with_two_items();
        let old = wc.journal_id();
        let cut: Option<Vec<u8>> = matches!(loss, Loss::CutInsideFirstLine).then(|| std::fs::read(wc.journal()).unwrap()[..100].to_vec());
        loss.apply(&wc.journal());

        // Named by path, the journal's scope is unknown: refused, nothing written.
        let path = wc.journal().display().to_string();
        let out = wc.abcd(&["journal", "repair", "--journal", &path]);
        assert_eq!(out.status.code(), Some(2), "{loss:?}: {}", text(&out));
        assert!(text(&out).contains("no known scope") && text(&out).contains("inside its working copy"), "{loss:?}: {}", text(&out));

        let out = wc.abcd(&["journal", "repair", "--json"]);
        assert!(out.status.success(), "{loss:?}: {}", text(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["outcome"], "started_afresh", "{loss:?}: {v}");
        let new = v["journal_id"].as_str().unwrap().to_string();
        assert_ne!(new, old);

        let events = wc.events();
        assert_eq!(events.len(), 2, "{loss:?}: genesis and the record of the loss");
        assert_eq!(events[1]["kind"], "journal.repaired");
        let data = &events[1]["data"];
        assert_eq!(data["cause"], "anchor_mismatch");
        assert_eq!(data["anchor_seq"], 2, "{loss:?}: the lost journal's anchor named seq 2");
        assert!(data["anchor_hash"].is_string());
        assert!(data["problem"].as_str().unwrap().contains(&old) && data["problem"].as_str().unwrap().contains(loss.words()), "{data}");
        if let Some(cut) = &cut {
            let q = PathBuf::from(v["quarantine"].as_str().expect("the cut first line was moved aside"));
            assert_eq!(&std::fs::read(q).unwrap(), cut, "the quarantine holds exactly the cut bytes");
        }

        let out = wc.abcd(&["journal", "verify"]);
        assert_eq!(out.status.code(), Some(0), "{loss:?}: {}", text(&out));
        let out = wc.abcd(&["checklist", "add", "four"]);
        assert!(out.status.success(), "{loss:?}: {}", text(&out));
        assert_eq!(wc.titles(), ["four"], "{loss:?}");
        let out = wc.abcd(&["checklist"]);
        assert!(!text(&out).contains("degraded"), "{loss:?}: {}", text(&out));
    }
}

/// The refusal keys on this home store having recorded a journal at this path: with a
/// fresh home store (a new machine, ABCD_HOME moved) the journal is simply made.
#[test]
fn a_home_store_that_recorded_nothing_at_this_path_creates_the_journal() {
    for loss in Loss::ALL {
        let wc = Wc::with_two_items();
        loss.apply(&wc.journal());
        let fresh = wc.repo.dir.path().join("fresh-home");
        let out = wc.abcd_home(&["checklist", "add", "three"], &fresh);
        assert!(out.status.success(), "{loss:?}: {}", text(&out));
        let out = wc.abcd_home(&["journal", "verify"], &fresh);
        assert_eq!(out.status.code(), Some(0), "{loss:?}: {}", text(&out));
    }
}

/// `abcd resume` lists this working copy's runs as unreadable, saying why, instead of
/// listing none.
#[test]
fn resume_names_the_loss_for_the_runs_of_a_lost_journal() {
    let wc = Wc::with_two_items();
    let old = wc.journal_id();
    let pid = std::process::id().to_string();
    let out = wc.abcd(&["run", "start", "r1", "--lane", "a", "--driver-pid", &pid]);
    assert!(out.status.success(), "{}", text(&out));
    Loss::Emptied.apply(&wc.journal());
    let out = wc.abcd(&["resume", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{v}");
    let problem = runs[0]["problem"].as_str().unwrap_or_default();
    assert!(problem.contains(&old) && problem.contains("now holds nothing"), "{v}");
}

/// Issue 31, "one repair, one answer": a damaged journal at a path whose record names
/// another journal (here, an older journal of this same working copy put back from a
/// backup after repair had started afresh) is salvaged, or its torn tail cut, and accepted
/// in one repair that exits 0 and says both; a second repair finds nothing to do, and
/// verify agrees.
#[test]
fn one_repair_salvages_and_accepts_a_damaged_journal_the_path_record_does_not_name() {
    for torn in [true, false] {
        let wc = Wc::with_two_items();
        for title in ["three", "four", "five"] {
            let out = wc.abcd(&["checklist", "add", title]);
            assert!(out.status.success(), "{}", text(&out));
        }
        let old = wc.journal_id();
        let backup = std::fs::read(wc.journal()).unwrap();
        std::fs::remove_file(wc.journal()).unwrap();
        let out = wc.abcd(&["journal", "repair", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        let started = serde_json::from_slice::<Value>(&out.stdout).unwrap()["journal_id"].as_str().unwrap().to_string();
        // The backup put back, with one byte of seq 2's title changed, or with half a line
        // (never acknowledged) after its last.
        let mut lines: Vec<String> = String::from_utf8(backup).unwrap().lines().map(str::to_string).collect();
        assert!(lines[2].contains("\"two\""), "{}", lines[2]);
        let bytes = if torn {
            let half = lines[2][..lines[2].len() / 2].to_string();
            lines.join("\n") + "\n" + &half
        } else {
            lines[2] = lines[2].replacen("\"two\"", "\"twO\"", 1);
            lines.join("\n") + "\n"
        };
        std::fs::write(wc.journal(), bytes).unwrap();

        let out = wc.abcd(&["journal", "repair"]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(0), "torn {torn}: one repair finishes its job: {said}");
        if torn {
            assert!(said.contains("cut a torn tail"), "{said}");
        } else {
            assert!(said.contains("salvaged: moved") && said.contains("seq 2 lost"), "{said}");
        }
        assert!(
            said.contains("accepted the journal as this path's own")
                && said.contains(&format!("held journal {started}"))
                && said.contains(&format!("now holds journal {old}")),
            "{said}"
        );
        assert!(!said.contains("refusing"), "{said}");
        let kinds: Vec<String> = wc.events().iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect();
        let records = if torn { 1 } else { 2 };
        assert_eq!(kinds.iter().filter(|k| *k == "journal.repaired").count(), records, "the gap, if any, and the acceptance: {kinds:?}");

        let out = wc.abcd(&["journal", "repair"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(text(&out).contains("nothing to repair"), "the first repair left nothing to do: {}", text(&out));
        let out = wc.abcd(&["journal", "verify"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let titles: &[&str] = if torn { &["one", "two", "three", "four", "five"] } else { &["one", "three", "four", "five"] };
        assert_eq!(wc.titles(), titles);
    }
}
