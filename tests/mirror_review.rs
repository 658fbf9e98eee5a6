//! Findings of an independent review of issue 22's mirror (journal-format/MIRROR.md,
//! src/mirror/, src/command/mirror.rs), each a test that fails on the code as reviewed and
//! is ignored with the finding's words, so main stays green. Run them with
//! `cargo test --test mirror_review -- --ignored`. The fixture is tests/mirror_rules.rs's:
//! a bare repository as the remote and clones of it, each a "machine" with its own home
//! store and `ABCD_MACHINE`; forged remote states are made with git plumbing in the remote.

#[path = "common/chain.rs"]
mod chain;
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use abcd::journal::format::{self, Actor, NewEvent};
use common::repo;
use serde_json::{Value, json};

/// Characters of a secret that may never be shown together (as the golden replays check).
const SECRET_WINDOW: usize = 8;
/// The verdicts that leave `mirror fetch` at exit 0 (§8).
const GOOD_VERDICTS: [&str; 2] = ["verified", "unchanged"];
/// How long a test waits for a background push, and how often it looks.
const BACKGROUND_WAIT: Duration = Duration::from_secs(30);
const BACKGROUND_POLL: Duration = Duration::from_millis(50);
/// An interval far longer than any test runs.
const LONG_EVERY_SECONDS: u64 = 3600;

/// Who commits what the tests commit with git.
const GIT_IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", repo::USER_NAME),
    ("GIT_AUTHOR_EMAIL", repo::USER_EMAIL),
    ("GIT_COMMITTER_NAME", repo::USER_NAME),
    ("GIT_COMMITTER_EMAIL", repo::USER_EMAIL),
];

// ----- the fixture (tests/mirror_rules.rs's) ---------------------------------------------

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// git in `dir` with no system or global config and the tests' identity; `input` on stdin.
fn git_in(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
    let mut cmd = Command::new("git");
    cmd.args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .envs(GIT_IDENTITY)
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("git runs");
    if let Some(bytes) = input {
        use std::io::Write;
        child.stdin.take().expect("stdin").write_all(bytes).expect("git reads its input");
    }
    let out = child.wait_with_output().expect("git runs");
    assert!(out.status.success(), "git {args:?} in {}: {}", dir.display(), text(&out));
    out.stdout
}

fn git(dir: &Path, args: &[&str]) -> String {
    String::from_utf8(git_in(dir, args, None)).expect("git prints UTF-8").trim_end().to_string()
}

/// One entry of a tree, as `git ls-tree` lists it and `git mktree` reads it.
#[derive(Clone, Debug)]
struct Entry {
    mode: String,
    kind: String,
    id: String,
    name: String,
}

impl Entry {
    fn blob(id: &str, name: &str) -> Entry {
        Entry { mode: "100644".into(), kind: "blob".into(), id: id.into(), name: name.into() }
    }
}

/// A mirror commit taken apart, to be changed and written back as a forgery.
#[derive(Clone, Debug)]
struct Parts {
    json: Vec<u8>,
    segments: Vec<Entry>,
    /// Root entries besides `mirror.json` and `segments/` (a rule-1 forgery adds some).
    extra_root: Vec<Entry>,
    /// False when a forgery leaves `segments/` out of the root tree.
    with_segments: bool,
}

impl Parts {
    fn meta(&self) -> Value {
        serde_json::from_slice(&self.json).expect("mirror.json is JSON")
    }

    fn set_meta(&mut self, meta: &Value) {
        self.json = serde_json::to_vec(meta).expect("JSON");
    }

    /// Changes one field of `mirror.json` (or adds it, or with None removes it).
    fn edit_meta(&mut self, field: &str, value: Option<Value>) {
        let mut meta = self.meta();
        let object = meta.as_object_mut().expect("mirror.json is an object");
        match value {
            Some(v) => object.insert(field.into(), v),
            None => object.remove(field),
        };
        self.set_meta(&meta);
    }
}

struct Lab {
    dir: tempfile::TempDir,
    remote: PathBuf,
    /// The repository's first root commit, as the home store keys it.
    root_commit: String,
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::tempdir().expect("a temp folder");
        let seed = dir.path().join("seed");
        repo::create(&seed, &[repo::README]);
        let remote = dir.path().join("remote.git");
        git(dir.path(), &["init", "-q", "--bare", "-b", "main", remote.to_str().unwrap()]);
        git(&seed, &["push", "-q", remote.to_str().unwrap(), "main"]);
        let root_commit = git(&seed, &["rev-parse", "HEAD"]);
        Lab { dir, remote, root_commit }
    }

    /// A clone of the remote, managed by abcd, with its own home store and machine name.
    fn machine(&self, name: &str) -> Machine {
        let root = self.dir.path().join(name);
        git(self.dir.path(), &["clone", "-q", self.remote.to_str().unwrap(), root.to_str().unwrap()]);
        git(&root, &["config", "user.name", repo::USER_NAME]);
        git(&root, &["config", "user.email", repo::USER_EMAIL]);
        let m = Machine { name: name.into(), root, home: self.dir.path().join(format!("{name}-home")) };
        let out = m.run(&["init"]);
        assert_eq!(out.status.code(), Some(0), "abcd init on {name}: {}", text(&out));
        m
    }

    fn git(&self, args: &[&str]) -> String {
        git(&self.remote, args)
    }

    fn journal_ref(&self, journal_id: &str) -> Option<String> {
        let r = format!("refs/abcd/journals/{journal_id}");
        let listed = self.git(&["for-each-ref", "--format=%(objectname)", &r]);
        (!listed.is_empty()).then_some(listed)
    }

    fn blob(&self, bytes: &[u8]) -> String {
        String::from_utf8(git_in(&self.remote, &["hash-object", "-w", "--stdin"], Some(bytes))).unwrap().trim().to_string()
    }

    fn cat(&self, id: &str) -> Vec<u8> {
        git_in(&self.remote, &["cat-file", "blob", id], None)
    }

    fn ls_tree(&self, tree: &str) -> Vec<Entry> {
        let out = git_in(&self.remote, &["ls-tree", "-z", tree], None);
        out.split(|b| *b == 0)
            .filter(|r| !r.is_empty())
            .map(|r| {
                let line = std::str::from_utf8(r).unwrap();
                let (head, name) = line.split_once('\t').unwrap();
                let mut p = head.split(' ');
                let (mode, kind, id) = (p.next().unwrap(), p.next().unwrap(), p.next().unwrap());
                Entry { mode: mode.into(), kind: kind.into(), id: id.into(), name: name.into() }
            })
            .collect()
    }

    fn mktree(&self, entries: &[Entry]) -> String {
        let input: String = entries.iter().map(|e| format!("{} {} {}\t{}\n", e.mode, e.kind, e.id, e.name)).collect();
        String::from_utf8(git_in(&self.remote, &["mktree"], Some(input.as_bytes()))).unwrap().trim().to_string()
    }

    fn commit(&self, tree: &str, parent: Option<&str>, message: &str) -> String {
        let mut args = vec!["commit-tree", tree, "-m", message];
        if let Some(p) = parent {
            args.extend(["-p", p]);
        }
        self.git(&args)
    }

    /// The mirror commit `commit`, taken apart.
    fn parts(&self, commit: &str) -> Parts {
        let root = self.ls_tree(commit);
        let json = root.iter().find(|e| e.name == "mirror.json").expect("a mirror.json");
        let segments = root.iter().find(|e| e.name == "segments").expect("a segments/ tree");
        Parts { json: self.cat(&json.id), segments: self.ls_tree(&segments.id), extra_root: vec![], with_segments: true }
    }

    /// Writes `parts` as a commit on `parent`.
    fn write(&self, parts: &Parts, parent: Option<&str>) -> String {
        let mut root = vec![Entry::blob(&self.blob(&parts.json), "mirror.json")];
        if parts.with_segments {
            root.push(Entry { mode: "040000".into(), kind: "tree".into(), id: self.mktree(&parts.segments), name: "segments".into() });
        }
        root.extend(parts.extra_root.iter().cloned());
        self.commit(&self.mktree(&root), parent, "a forged mirror commit")
    }

    /// Moves the remote's ref of `journal_id` to `commit` (creating it when absent).
    fn set_ref(&self, journal_id: &str, commit: &str) {
        self.git(&["update-ref", &format!("refs/abcd/journals/{journal_id}"), commit]);
    }

    /// The remote's current mirror of `journal_id`, changed by `change`, written as its
    /// child (a fast-forward) and put under the ref. Returns the new commit.
    fn forge_child(&self, journal_id: &str, change: impl FnOnce(&Lab, &mut Parts)) -> String {
        let current = self.journal_ref(journal_id).expect("the journal is mirrored");
        let mut parts = self.parts(&current);
        change(self, &mut parts);
        let forged = self.write(&parts, Some(&current));
        self.set_ref(journal_id, &forged);
        forged
    }
}

struct Machine {
    name: String,
    root: PathBuf,
    home: PathBuf,
}

impl Machine {
    fn abcd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abcd"));
        cmd.current_dir(&self.root)
            .env("ABCD_HOME", &self.home)
            .env("ABCD_MACHINE", &self.name)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("ABCD_TEST_NOW")
            .envs(GIT_IDENTITY);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.abcd().args(args).stdin(Stdio::null()).output().expect("abcd runs")
    }

    /// `abcd mirror <verb> --json` and more args: its exit code, its JSON and its output.
    fn mirror_json(&self, verb: &str, more: &[&str]) -> (Option<i32>, Value, Output) {
        let mut args = vec!["mirror", verb, "--json"];
        args.extend(more);
        let out = self.run(&args);
        let json =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{}: mirror {verb} --json: {e}: {}", self.name, text(&out)));
        (out.status.code(), json, out)
    }

    fn push_ok(&self) -> Value {
        let (code, json, out) = self.mirror_json("push", &[]);
        assert_eq!(code, Some(0), "{}: mirror push: {}", self.name, text(&out));
        json
    }

    /// `mirror fetch`, every verdict good.
    fn fetch_ok(&self) -> Value {
        let (code, json, out) = self.mirror_json("fetch", &[]);
        assert_eq!(code, Some(0), "{}: mirror fetch: {}", self.name, text(&out));
        json
    }

    /// `mirror fetch`, which must exit 1 (some verdict is not good).
    fn fetch_refused(&self) -> Value {
        let (code, json, out) = self.mirror_json("fetch", &[]);
        assert_eq!(code, Some(1), "{}: mirror fetch: {}", self.name, text(&out));
        json
    }

    fn status(&self) -> Value {
        let (code, json, out) = self.mirror_json("status", &[]);
        assert_eq!(code, Some(0), "{}: mirror status: {}", self.name, text(&out));
        json
    }

    /// Adds a checklist item through the CLI; its id.
    fn add(&self, title: &str) -> String {
        let out = self.run(&["checklist", "add", title]);
        assert_eq!(out.status.code(), Some(0), "{}: checklist add: {}", self.name, text(&out));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn journal_path(&self) -> PathBuf {
        self.root.join(".abcd/.work.local/journal.jsonl")
    }

    fn journal_id(&self) -> String {
        let bytes = std::fs::read(self.journal_path()).expect("the journal exists");
        let first = bytes.split(|b| *b == b'\n').next().unwrap();
        let genesis: Value = serde_json::from_slice(first).expect("the genesis is JSON");
        genesis["data"]["journal_id"].as_str().unwrap().to_string()
    }

    /// The last verified line of the local journal.
    fn head(&self) -> format::Event {
        let bytes = std::fs::read(self.journal_path()).expect("the journal exists");
        let line = bytes[..bytes.len() - 1].rsplit(|b| *b == b'\n').next().unwrap();
        format::verify_line(&[line, b"\n"].concat()).expect("the last line verifies")
    }

    fn git(&self, args: &[&str]) -> String {
        git(&self.root, args)
    }

    fn repo_home(&self, root_commit: &str) -> PathBuf {
        self.home.join("repos").join(root_commit)
    }
}

fn journal_entry<'a>(report: &'a Value, journal_id: &str) -> &'a Value {
    report["journals"]
        .as_array()
        .unwrap_or_else(|| panic!("no journals in {report}"))
        .iter()
        .find(|j| j["journal_id"] == journal_id)
        .unwrap_or_else(|| panic!("no journal {journal_id} in {report}"))
}

fn verdict(fetch: &Value, journal_id: &str) -> String {
    journal_entry(fetch, journal_id)["verdict"].as_str().unwrap().to_string()
}

fn assert_good(fetch: &Value, journal_id: &str) {
    let v = verdict(fetch, journal_id);
    assert!(GOOD_VERDICTS.contains(&v.as_str()), "journal {journal_id} is {v}: {fetch}");
}

/// The status' working copy of `journal_id`.
fn working_copy<'a>(status: &'a Value, journal_id: &str) -> &'a Value {
    status["working_copies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["journal_id"] == journal_id)
        .unwrap_or_else(|| panic!("status shows no working copy {journal_id}: {status}"))
}

fn segment_name(first_seq: u64) -> String {
    format!("{first_seq:020}.jsonl")
}

/// A GitHub token that is not one: `ghp_` and 36 letters and digits from a fixed seed.
fn fake_token() -> String {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 36];
    blake3::Hasher::new_derive_key("abcd mirror rules fake token").update(b"not a real token").finalize_xof().fill(&mut bytes);
    format!("ghp_{}", bytes.iter().map(|b| ALNUM[*b as usize % ALNUM.len()] as char).collect::<String>())
}

fn assert_no_part_of(secret: &str, shown: &str, what: &str) {
    for w in (0..=secret.len() - SECRET_WINDOW).map(|i| &secret[i..i + SECRET_WINDOW]) {
        assert!(!shown.contains(w), "{what} shows {SECRET_WINDOW} characters of the secret (at `{}`…)", &w[..2]);
    }
}

fn hook(m: &Machine) -> Output {
    let payload = json!({
        "session_id": "s1",
        "transcript_path": "/nonexistent",
        "cwd": m.root,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "hi",
    });
    let mut child =
        m.abcd().args(["hook", "user-prompt-submit"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn hook_ok(m: &Machine) {
    let out = hook(m);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(out.stderr.is_empty(), "a hook says nothing of the mirror: {}", text(&out));
}

fn last_push(m: &Machine) -> Value {
    m.status()["last_push"].clone()
}

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
/// field is named by a token, is refused (rewritten) with serde's own words, which quote the
/// value or the name: `fetch`, `fetch --json`, the fetch record and `status` print the token.
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
/// (its seq a string holding a token). The chain fault's words are serde's, and quote it.
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

/// `mirror status` shows each mirror's last fetch verdict from `mirror-fetched.json`, and a
/// mirror it finds no verdict for is shown as verified. That file is one per repository,
/// overwritten by a fetch from any remote: after `mirror fetch --remote backup`, status
/// (for origin) shows a mirror origin's last fetch named rewritten as `verified`.
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

/// §7 judges "a fetched commit"; §3 says what a mirror commit is. A ref naming a bare tree
/// (or a tag of one) holding a valid mirror is read by `ls-tree` all the same and verified
/// on a first fetch, and the verified ref then names a tree: no history rule can be applied
/// to it again. Seen by hand: a forged tree after it, and the real commit put back and
/// pushed on, are each `unreadable` ("object … is a tree, not a commit") on every later
/// fetch; the journal never verifies again on that machine.
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
/// (its name quoted) and shown by status from the fetch record; status cuts every journal
/// id to 8 bytes for its header, so a name with multi-byte characters there panics: anyone
/// who can push one ref stops `mirror status` on every machine that fetches.
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

/// §6 step 6 adopts a remote commit "when it descends from the local ref and its segments
/// are a prefix of the local journal", but never checks it against §7: a child whose
/// segments are the pushed ones and whose mirror.json lies (here `bytes` one too many) is
/// made the local ref, the rebuild on it fails as "repaired or replaced", and every later
/// push fails the same way, even after the remote is put back.
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

/// §6 step 2 scans a line's raw JSON text, not the strings it decodes to: a secret written
/// behind abcd's back with a JSON escape (`\u0067hp_…` is `ghp_…`) is not flagged and is
/// pushed, although every reader decodes it to the token.
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

/// §6 step 4 scans what a saved-aside commit changes against its parent; git pushes the
/// ref's history with it. The parent is the lane's last commit, made by an agent and never
/// pushed anywhere by abcd otherwise: a token file committed there leaves the machine
/// unscanned under refs/abcd/saved/, though docs/mirror.md's Secrets section says a saved
/// ref with a flagged file stays on this machine.
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

/// §8: `unreadable` is "a failure here, not a finding about the mirror"; docs/mirror.md says
/// to fetch again and run `git fsck`. A ref in the remote naming a blob (or anything not a
/// commit) is a finding about the mirror, yet it is named unreadable on every fetch.
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
