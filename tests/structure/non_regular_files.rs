//! abcd reads only regular files: a FIFO (or any other non-regular file) where a projection,
//! a checkpoint or a cache should be is passed over like a damaged cache, never opened to
//! wait on, so every verb and hook returns whatever is on disk (issue 20's reproductions).
//! Each run is bounded by its own guard, so a regression fails instead of hanging the suite.

use crate::common;
use crate::common::src_tree;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::repo::TestRepo;
use serde_json::Value;
use src_tree::{CodeLine, code_lines, src_dir, write_file};

/// Far longer than any verb here takes on a loaded machine: only a verb that waits for a
/// writer that never comes reaches it. The tests assert that the verb returned, not when.
const RETURNS_WITHIN: Duration = Duration::from_secs(60);

const TIER: &str = ".abcd/.work.local";

fn fixture(name: &str, cwd: &Path) -> Vec<u8> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks").join(name)).unwrap();
    text.replace("$CWD", &cwd.display().to_string().replace('\\', "\\\\").replace('"', "\\\"")).into_bytes()
}

/// Runs abcd with `args` (and `stdin`), killing it if it has not returned within
/// [`RETURNS_WITHIN`]; panics then, naming the verb.
fn abcd(repo: &TestRepo, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_abcd"))
        .args(args)
        .current_dir(&repo.root)
        .env("ABCD_HOME", &repo.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    // A verb that does not read its stdin may close it first: a broken pipe is fine.
    let writer = std::thread::spawn(move || drop(input.write_all(&stdin)));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = r.read_to_end(&mut bytes);
            bytes
        })
    };
    let (out, err) = (drain(Box::new(child.stdout.take().unwrap())), drain(Box::new(child.stderr.take().unwrap())));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > RETURNS_WITHIN {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`abcd {}` did not return: it waited on a file that is not a regular file", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    writer.join().unwrap();
    Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A managed repository holding one checklist item, `one`.
fn one_item() -> TestRepo {
    let repo = TestRepo::new().managed();
    let out = abcd(&repo, &["checklist", "add", "one"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    repo
}

/// [`one_item`] with a FIFO where `checklist.json` is (the projection hooks and verbs read
/// first).
fn checklist_json_is_a_fifo() -> TestRepo {
    fifo_for(one_item(), "checklist.json")
}

/// `repo` with a FIFO where its projection `name` is.
fn fifo_for(repo: TestRepo, name: &str) -> TestRepo {
    let projection = repo.root.join(TIER).join(name);
    assert!(projection.is_file(), "the projection is where this test expects it");
    std::fs::remove_file(&projection).unwrap();
    mkfifo(&projection);
    repo
}

/// [`one_item`] plus an item `two`, a checkpoint after it, and a FIFO in the checkpoints
/// folder named above it (so the newest by name). A checklist write leaves `state.json`
/// behind (`projection_lag_bound`), so a reader folds from the newest checkpoint past it.
fn checkpoint_above_newest_is_a_fifo() -> (TestRepo, PathBuf) {
    let repo = one_item();
    for args in [&["checklist", "add", "two"][..], &["journal", "checkpoint"]] {
        let out = abcd(&repo, args, b"");
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    }
    let dir = repo.root.join(TIER).join("checkpoints");
    assert!(dir.join("2.cbor").is_file(), "the checkpoint is where this test expects it");
    let fifo = dir.join("99.cbor");
    mkfifo(&fifo);
    (repo, fifo)
}

fn assert_lists_one(out: &Output, what: &str) {
    assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains("one"), "{what} shows the item: {}", text(&out.stdout));
}

/// The session-start hook with a FIFO for `name`: it answers, and writes `name` again as a
/// regular file.
fn session_start_answers_with_a_fifo_for(repo: TestRepo, name: &str) {
    let out = abcd(&repo, &["hook", "session-start"], &fixture("session-start-startup.json", &repo.root));
    assert_eq!(out.status.code(), Some(0));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let context = answer["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(context.contains("\n1: one\n"), "{context}");
    assert!(repo.root.join(TIER).join(name).is_file(), "the projection is written again as a regular file");
}

#[test]
fn session_start_answers_with_a_fifo_for_the_checklist_projection() {
    // Without its own render, which it would read instead, the hook reads the checklist.
    let repo = checklist_json_is_a_fifo();
    std::fs::remove_file(repo.root.join(TIER).join(abcd::store::projection::SESSION_CONTEXT_FILE)).unwrap();
    session_start_answers_with_a_fifo_for(repo, "checklist.json");
}

#[test]
fn session_start_answers_with_a_fifo_for_its_render() {
    session_start_answers_with_a_fifo_for(fifo_for(one_item(), abcd::store::projection::SESSION_CONTEXT_FILE), "session-context.json");
}

#[test]
fn checklist_answers_with_a_fifo_for_the_checklist_projection() {
    let repo = checklist_json_is_a_fifo();
    assert_lists_one(&abcd(&repo, &["checklist"], b""), "checklist");
}

#[test]
fn checklist_json_answers_with_a_fifo_for_the_checklist_projection() {
    let repo = checklist_json_is_a_fifo();
    let out = abcd(&repo, &["checklist", "--json"], b"");
    assert_lists_one(&out, "checklist --json");
    let items: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(items["items"][0]["id"], "1");
}

#[test]
fn checklist_render_answers_with_a_fifo_for_the_checklist_projection() {
    let repo = checklist_json_is_a_fifo();
    assert_lists_one(&abcd(&repo, &["checklist", "render"], b""), "checklist render");
}

#[test]
fn checklist_show_answers_with_a_fifo_for_the_checklist_projection() {
    let repo = checklist_json_is_a_fifo();
    assert_lists_one(&abcd(&repo, &["checklist", "show", "1"], b""), "checklist show");
}

#[test]
fn checklist_add_appends_with_a_fifo_above_the_newest_checkpoint() {
    let (repo, _) = checkpoint_above_newest_is_a_fifo();
    let out = abcd(&repo, &["checklist", "add", "three"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = abcd(&repo, &["checklist"], b"");
    assert!(["one", "two", "three"].iter().all(|t| text(&out.stdout).contains(&format!("— {t}\n"))), "{}", text(&out.stdout));
}

#[test]
fn replay_names_a_fifo_above_the_newest_checkpoint_as_an_unusable_cache() {
    let (repo, fifo) = checkpoint_above_newest_is_a_fifo();
    let out = abcd(&repo, &["replay"], b"");
    let stdout = text(&out.stdout);
    // A checkpoint that cannot be used is a cache that disagrees: the audit says so.
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let line = stdout.lines().find(|l| l.contains(&fifo.display().to_string())).expect("the FIFO is named");
    assert!(line.contains("unusable: it cannot be read: it is a FIFO (named pipe), not a regular file"), "{line}");
    assert!(stdout.contains("checkpoints/2.cbor: agrees with the fold at seq 2"), "{stdout}");
}

#[test]
fn replay_at_answers_with_a_fifo_above_the_newest_checkpoint() {
    let (repo, _) = checkpoint_above_newest_is_a_fifo();
    let out = abcd(&repo, &["replay", "--at", "1"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"title\": \"one\""), "{}", text(&out.stdout));
}

#[test]
fn resume_json_answers_with_a_fifo_above_the_newest_checkpoint() {
    let (repo, _) = checkpoint_above_newest_is_a_fifo();
    let out = abcd(&repo, &["resume", "--json"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["runs"], serde_json::json!([]));
}

#[test]
fn user_prompt_submit_answers_with_a_fifo_above_the_newest_checkpoint() {
    let (repo, _) = checkpoint_above_newest_is_a_fifo();
    let out = abcd(&repo, &["hook", "user-prompt-submit"], &fixture("user-prompt-submit.json", &repo.root));
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

/// Found beyond the issue's list: the root-commit cache the hooks read to find the
/// repository's home store.
#[test]
fn hooks_answer_with_a_fifo_for_the_root_commit_cache() {
    let repo = one_item();
    let cache = repo.root.join(TIER).join("repository-root-commit");
    let _ = std::fs::remove_file(&cache);
    mkfifo(&cache);
    let out = abcd(&repo, &["hook", "session-start"], &fixture("session-start-startup.json", &repo.root));
    assert_eq!(out.status.code(), Some(0));
    // The context as JSON, its newlines escaped.
    assert!(text(&out.stdout).contains(r"\n1: one\n"), "{}", text(&out.stdout));
}

/// Found beyond the issue's list: the previous listing `resume` reads back.
#[test]
fn resume_answers_with_a_fifo_for_its_previous_listing() {
    let repo = one_item();
    let listing = repo.root.join(TIER).join("resume.json");
    mkfifo(&listing);
    let out = abcd(&repo, &["resume", "--json"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(listing.is_file(), "the listing is written again as a regular file");
}

/// `.git/info/exclude` is git's: `init` refuses to append to a FIFO there, names it and says
/// what to do, and writes nothing.
#[test]
fn init_refuses_a_fifo_for_gits_exclude_file() {
    let repo = TestRepo::new();
    let exclude = repo.root.join(".git/info/exclude");
    std::fs::create_dir_all(exclude.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&exclude);
    mkfifo(&exclude);
    let out = abcd(&repo, &["init"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("refused [file-shape]: changing {}: it is a FIFO (named pipe), not a regular file", exclude.display()))
            && err.contains("run `abcd init` again"),
        "{err}"
    );
    assert!(!repo.root.join(".abcd").exists(), "nothing was written");
}

/// Ways to open a file by name that can wait on a FIFO or read a device: outside
/// `src/platform/`, files are opened through `platform::fs::open_regular` (or its
/// `read_regular`), or through the journal's `Storage`, which uses it. `.open(` with an
/// argument is `OpenOptions::open`; each mark counts only where no identifier runs into it.
const OPEN_MARKS: &[&str] = &["File::open(", "File::create(", "fs::read(", "fs::read_to_string(", "fs::write(", ".open("];

/// Opens allowed outside the seam: (file relative to `src/`, what the line holds, why).
const OPEN_EXCEPTIONS: &[(&str, &str, &str)] = &[
    ("journal/genesis.rs", "File::open(\"/dev/urandom\")", "the system's random source, a device by design"),
    ("journal/storage.rs", ".create_new(true)", "O_EXCL opens only the file it creates, never one already there"),
    ("journal/simdisk.rs", "self.open(", "the simulated disk's files, in memory"),
    ("git/worktree.rs", "std::fs::write(&copy,", "a file in a temp folder this process has just made"),
    ("cli/demo.rs", "", "the demo reads and damages the journal in a temp folder of its own"),
];

/// Where `mark` is in `code` with no identifier character running into its start, and
/// (for `.open(`) an argument after it.
fn holds_mark(code: &str, mark: &str) -> bool {
    code.match_indices(mark).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + mark.len()..].chars().next();
        let bounded = mark.starts_with('.') || !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
        bounded && !(mark == ".open(" && after == Some(')'))
    })
}

/// Every open outside the seam that no exception covers, as `file:line: mark in line`.
fn opens_outside_platform(root: &Path) -> Vec<String> {
    let mut found = vec![];
    for CodeLine { rel, number, code, line } in code_lines(root, |rel| rel.starts_with("platform/")) {
        let excused = OPEN_EXCEPTIONS.iter().any(|(f, holds, _)| rel == *f && code.contains(holds));
        for mark in OPEN_MARKS.iter().filter(|m| holds_mark(&code, m)) {
            if !excused {
                found.push(format!("{rel}:{number}: `{mark}` in {line}"));
            }
        }
    }
    found
}

#[test]
fn files_are_opened_only_through_the_regular_file_open() {
    let found = opens_outside_platform(&src_dir());
    assert!(
        found.is_empty(),
        "a file opened by name outside src/platform/ (use platform::fs::open_regular or read_regular, or the journal's Storage):\n{}",
        found.join("\n")
    );
}

/// The check itself, on a small tree that opens a file once per mark outside the seam and
/// is excused everywhere else.
#[test]
fn each_open_outside_the_seam_is_caught_and_nothing_else() {
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    let write = |rel: &str, text: &str| write_file(root, rel, text);
    write("platform/fs.rs", "fn f() { std::fs::File::open(\"x\"); std::fs::read(\"x\"); }\n");
    write("places.rs", "fn f() { let _ = std::fs::read_to_string(\"x\"); }\n// std::fs::read(\"x\") in a comment\n");
    write(
        "git/refs.rs",
        "fn f() { File::open(\"x\"); PackedRefs::read(x); }\n#[cfg(test)]\nmod tests {\n    fn g() { std::fs::write(\"x\", \"\"); }\n}\n",
    );
    write("journal/genesis.rs", "fn f() { std::fs::File::open(\"/dev/urandom\"); }\nfn g() { fs::read(\"z\"); choice.open(); }\n");
    write("cli/demo.rs", "fn f() { std::fs::read(\"x\"); }\n");
    write("command/run.rs", "fn f() { std::fs::OpenOptions::new().read(true).open(&p); std::fs::File::create(\"y\"); }\n");
    let found = opens_outside_platform(root);
    let expected = [
        "command/run.rs:1: `File::create(`",
        "command/run.rs:1: `.open(`",
        "git/refs.rs:1: `File::open(`",
        "journal/genesis.rs:2: `fs::read(`",
        "places.rs:1: `fs::read_to_string(`",
    ];
    assert_eq!(found.len(), expected.len(), "{found:#?}");
    for (got, want) in found.iter().zip(expected) {
        assert!(got.starts_with(want), "{got} is not {want}");
    }
}

#[test]
fn the_prompt_hook_answers_with_a_fifo_for_its_state() {
    let repo = fifo_for(one_item(), abcd::store::projection::PROMPT_STATE_FILE);
    let out = abcd(&repo, &["hook", "user-prompt-submit"], &fixture("user-prompt-submit.json", &repo.root));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "the whole state is read instead, without a word: {}", text(&out.stderr));
}
