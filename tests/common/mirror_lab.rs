//! The mirror lab of tests/cli/mirror_rules.rs and tests/cli/mirror_review.rs (issue 22): a bare
//! repository as the remote and clones of it, each a "machine" with its own home store and
//! `ABCD_MACHINE`, driven through the built binary with real git; forged remote states are
//! made with git plumbing in the bare repository (hash-object, mktree, commit-tree,
//! update-ref), as anyone who can push could. Nothing leaves the temp folder.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use abcd::event::COMPACTION_RECORDED;
use abcd::journal::anchor::AnchorStore;
use abcd::journal::format::{self, Actor, NewEvent};
use abcd::journal::storage::RealDisk;
use abcd::journal::{Journal, JournalPaths};
use serde_json::{Value, json};

use crate::common::repo;

/// The verdicts that leave `mirror fetch` at exit 0 (§8).
pub const GOOD_VERDICTS: [&str; 2] = ["verified", "unchanged"];
/// Events appended at once when a test fills a journal past one segment.
pub const FILL_BATCH_EVENTS: usize = 256;
/// How long a test waits for a background push to be seen, and how often it looks.
pub const BACKGROUND_WAIT: Duration = Duration::from_secs(30);
pub const BACKGROUND_POLL: Duration = Duration::from_millis(50);
/// The interval of the auto tests that check the stamp: far longer than any test runs, so
/// "within the interval" never depends on how fast the machine is.
pub const LONG_EVERY_SECONDS: u64 = 3600;
/// Characters of a secret that may never be shown together (as the golden replays check).
pub const SECRET_WINDOW: usize = 8;

/// Who commits what the tests commit with git (the stash of a saved-aside ref).
pub const GIT_IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", repo::USER_NAME),
    ("GIT_AUTHOR_EMAIL", repo::USER_EMAIL),
    ("GIT_COMMITTER_NAME", repo::USER_NAME),
    ("GIT_COMMITTER_EMAIL", repo::USER_EMAIL),
];

pub use crate::common::repo::text;

/// git in `dir` with no system or global config and the tests' identity; `input` on stdin.
pub fn git_in(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
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

pub fn git(dir: &Path, args: &[&str]) -> String {
    String::from_utf8(git_in(dir, args, None)).expect("git prints UTF-8").trim_end().to_string()
}

/// One entry of a tree, as `git ls-tree` lists it and `git mktree` reads it.
#[derive(Clone, Debug)]
pub struct Entry {
    pub mode: String,
    pub kind: String,
    pub id: String,
    pub name: String,
}

impl Entry {
    pub fn blob(id: &str, name: &str) -> Entry {
        Entry { mode: "100644".into(), kind: "blob".into(), id: id.into(), name: name.into() }
    }
}

/// A mirror commit taken apart, to be changed and written back as a forgery.
#[derive(Clone, Debug)]
pub struct Parts {
    pub json: Vec<u8>,
    pub segments: Vec<Entry>,
    /// Root entries besides `mirror.json` and `segments/` (a rule-1 forgery adds some).
    pub extra_root: Vec<Entry>,
    /// False when a forgery leaves `segments/` out of the root tree.
    pub with_segments: bool,
}

impl Parts {
    pub fn meta(&self) -> Value {
        serde_json::from_slice(&self.json).expect("mirror.json is JSON")
    }

    pub fn set_meta(&mut self, meta: &Value) {
        self.json = serde_json::to_vec(meta).expect("JSON");
    }

    /// Changes one field of `mirror.json` (or adds it, or with None removes it).
    pub fn edit_meta(&mut self, field: &str, value: Option<Value>) {
        let mut meta = self.meta();
        let object = meta.as_object_mut().expect("mirror.json is an object");
        match value {
            Some(v) => object.insert(field.into(), v),
            None => object.remove(field),
        };
        self.set_meta(&meta);
    }
}

pub struct Lab {
    pub dir: tempfile::TempDir,
    pub remote: PathBuf,
    /// The repository's first root commit, as the home store keys it.
    pub root_commit: String,
}

impl Lab {
    pub fn new() -> Lab {
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
    pub fn machine(&self, name: &str) -> Machine {
        let root = self.dir.path().join(name);
        git(self.dir.path(), &["clone", "-q", self.remote.to_str().unwrap(), root.to_str().unwrap()]);
        git(&root, &["config", "user.name", repo::USER_NAME]);
        git(&root, &["config", "user.email", repo::USER_EMAIL]);
        let m = Machine { name: name.into(), root, home: self.dir.path().join(format!("{name}-home")) };
        let out = m.run(&["init"]);
        assert_eq!(out.status.code(), Some(0), "abcd init on {name}: {}", text(&out));
        m
    }

    pub fn git(&self, args: &[&str]) -> String {
        git(&self.remote, args)
    }

    pub fn journal_ref(&self, journal_id: &str) -> Option<String> {
        let r = format!("refs/abcd/journals/{journal_id}");
        let listed = self.git(&["for-each-ref", "--format=%(objectname)", &r]);
        (!listed.is_empty()).then_some(listed)
    }

    pub fn blob(&self, bytes: &[u8]) -> String {
        String::from_utf8(git_in(&self.remote, &["hash-object", "-w", "--stdin"], Some(bytes))).unwrap().trim().to_string()
    }

    pub fn cat(&self, id: &str) -> Vec<u8> {
        git_in(&self.remote, &["cat-file", "blob", id], None)
    }

    pub fn ls_tree(&self, tree: &str) -> Vec<Entry> {
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

    pub fn mktree(&self, entries: &[Entry]) -> String {
        let input: String = entries.iter().map(|e| format!("{} {} {}\t{}\n", e.mode, e.kind, e.id, e.name)).collect();
        String::from_utf8(git_in(&self.remote, &["mktree"], Some(input.as_bytes()))).unwrap().trim().to_string()
    }

    pub fn commit(&self, tree: &str, parent: Option<&str>, message: &str) -> String {
        let mut args = vec!["commit-tree", tree, "-m", message];
        if let Some(p) = parent {
            args.extend(["-p", p]);
        }
        self.git(&args)
    }

    /// The mirror commit `commit`, taken apart.
    pub fn parts(&self, commit: &str) -> Parts {
        let root = self.ls_tree(commit);
        let json = root.iter().find(|e| e.name == "mirror.json").expect("a mirror.json");
        let segments = root.iter().find(|e| e.name == "segments").expect("a segments/ tree");
        Parts { json: self.cat(&json.id), segments: self.ls_tree(&segments.id), extra_root: vec![], with_segments: true }
    }

    /// Writes `parts` as a commit on `parent`.
    pub fn write(&self, parts: &Parts, parent: Option<&str>) -> String {
        let mut root = vec![Entry::blob(&self.blob(&parts.json), "mirror.json")];
        if parts.with_segments {
            root.push(Entry { mode: "040000".into(), kind: "tree".into(), id: self.mktree(&parts.segments), name: "segments".into() });
        }
        root.extend(parts.extra_root.iter().cloned());
        self.commit(&self.mktree(&root), parent, "a forged mirror commit")
    }

    /// Moves the remote's ref of `journal_id` to `commit` (creating it when absent).
    pub fn set_ref(&self, journal_id: &str, commit: &str) {
        self.git(&["update-ref", &format!("refs/abcd/journals/{journal_id}"), commit]);
    }

    /// The remote's current mirror of `journal_id`, changed by `change`, written as its
    /// child (a fast-forward) and put under the ref. Returns the new commit.
    pub fn forge_child(&self, journal_id: &str, change: impl FnOnce(&Lab, &mut Parts)) -> String {
        let current = self.journal_ref(journal_id).expect("the journal is mirrored");
        let mut parts = self.parts(&current);
        change(self, &mut parts);
        let forged = self.write(&parts, Some(&current));
        self.set_ref(journal_id, &forged);
        forged
    }

    /// What the remote's mirror of `journal_id` claims in its `mirror.json`.
    pub fn remote_meta(&self, journal_id: &str) -> Option<Value> {
        let commit = self.journal_ref(journal_id)?;
        Some(self.parts(&commit).meta())
    }
}

pub struct Machine {
    pub name: String,
    pub root: PathBuf,
    pub home: PathBuf,
}

impl Machine {
    pub fn abcd(&self) -> Command {
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

    pub fn run(&self, args: &[&str]) -> Output {
        self.abcd().args(args).stdin(Stdio::null()).output().expect("abcd runs")
    }

    /// `abcd mirror <verb> --json` and more args: its exit code, its JSON and its output.
    pub fn mirror_json(&self, verb: &str, more: &[&str]) -> (Option<i32>, Value, Output) {
        let mut args = vec!["mirror", verb, "--json"];
        args.extend(more);
        let out = self.run(&args);
        let json =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{}: mirror {verb} --json: {e}: {}", self.name, text(&out)));
        (out.status.code(), json, out)
    }

    pub fn push_ok(&self) -> Value {
        let (code, json, out) = self.mirror_json("push", &[]);
        assert_eq!(code, Some(0), "{}: mirror push: {}", self.name, text(&out));
        json
    }

    /// `mirror fetch`, every verdict good.
    pub fn fetch_ok(&self) -> Value {
        let (code, json, out) = self.mirror_json("fetch", &[]);
        assert_eq!(code, Some(0), "{}: mirror fetch: {}", self.name, text(&out));
        json
    }

    /// `mirror fetch`, which must exit 1 (some verdict is not good).
    pub fn fetch_refused(&self) -> Value {
        let (code, json, out) = self.mirror_json("fetch", &[]);
        assert_eq!(code, Some(1), "{}: mirror fetch: {}", self.name, text(&out));
        json
    }

    pub fn status(&self) -> Value {
        let (code, json, out) = self.mirror_json("status", &[]);
        assert_eq!(code, Some(0), "{}: mirror status: {}", self.name, text(&out));
        json
    }

    pub fn status_text(&self) -> String {
        let out = self.run(&["mirror", "status"]);
        assert_eq!(out.status.code(), Some(0), "{}: mirror status: {}", self.name, text(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Adds a checklist item through the CLI; its id.
    pub fn add(&self, title: &str) -> String {
        let out = self.run(&["checklist", "add", title]);
        assert_eq!(out.status.code(), Some(0), "{}: checklist add: {}", self.name, text(&out));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    pub fn journal_path(&self) -> PathBuf {
        self.root.join(".abcd/.work.local/journal.jsonl")
    }

    pub fn journal_id(&self) -> String {
        let bytes = std::fs::read(self.journal_path()).expect("the journal exists");
        let first = bytes.split(|b| *b == b'\n').next().unwrap();
        let genesis: Value = serde_json::from_slice(first).expect("the genesis is JSON");
        genesis["data"]["journal_id"].as_str().unwrap().to_string()
    }

    /// The last verified line of the local journal.
    pub fn head(&self) -> format::Event {
        let bytes = std::fs::read(self.journal_path()).expect("the journal exists");
        let line = bytes[..bytes.len() - 1].rsplit(|b| *b == b'\n').next().unwrap();
        format::verify_line(&[line, b"\n"].concat()).expect("the last line verifies")
    }

    pub fn git(&self, args: &[&str]) -> String {
        git(&self.root, args)
    }

    pub fn repo_home(&self, root_commit: &str) -> PathBuf {
        self.home.join("repos").join(root_commit)
    }

    /// Appends `n` `compaction.recorded` events through the library, in batches.
    pub fn append_compactions(&self, n: usize) {
        let journal = Journal::new(RealDisk::shared(), JournalPaths::beside(&self.journal_path()), Some(AnchorStore::new(&self.home)));
        let event = NewEvent {
            kind: COMPACTION_RECORDED.to_string(),
            actor: Actor::this_process(None),
            data: json!({"session": null, "trigger": "manual"}),
        };
        let events = vec![event; n];
        for chunk in events.chunks(FILL_BATCH_EVENTS) {
            journal.append_batch(chunk, None).expect("the journal takes the events");
        }
    }
}

pub fn journal_entry<'a>(report: &'a Value, journal_id: &str) -> &'a Value {
    report["journals"]
        .as_array()
        .unwrap_or_else(|| panic!("no journals in {report}"))
        .iter()
        .find(|j| j["journal_id"] == journal_id)
        .unwrap_or_else(|| panic!("no journal {journal_id} in {report}"))
}

pub fn verdict(fetch: &Value, journal_id: &str) -> String {
    journal_entry(fetch, journal_id)["verdict"].as_str().unwrap().to_string()
}

pub fn why(fetch: &Value, journal_id: &str) -> String {
    journal_entry(fetch, journal_id)["why"].as_str().unwrap_or("").to_string()
}

pub fn assert_good(fetch: &Value, journal_id: &str) {
    let v = verdict(fetch, journal_id);
    assert!(GOOD_VERDICTS.contains(&v.as_str()), "journal {journal_id} is {v}: {fetch}");
}

/// The status' working copy of `journal_id`.
pub fn working_copy<'a>(status: &'a Value, journal_id: &str) -> &'a Value {
    status["working_copies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["journal_id"] == journal_id)
        .unwrap_or_else(|| panic!("status shows no working copy {journal_id}: {status}"))
}

pub fn open_titles(wc: &Value) -> Vec<String> {
    wc["open_items"]
        .as_array()
        .unwrap_or_else(|| panic!("no open items in {wc}"))
        .iter()
        .map(|i| i["title"].as_str().unwrap().to_string())
        .collect()
}

pub fn verified_ref(m: &Machine, journal_id: &str) -> String {
    m.git(&["for-each-ref", "--format=%(objectname)", &format!("refs/abcd/verified/origin/journals/{journal_id}")])
}

pub fn segment_name(first_seq: u64) -> String {
    format!("{first_seq:020}.jsonl")
}

/// A GitHub token that is not one: `ghp_` and 36 letters and digits from a fixed seed.
pub fn fake_token() -> String {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 36];
    blake3::Hasher::new_derive_key("abcd mirror rules fake token").update(b"not a real token").finalize_xof().fill(&mut bytes);
    format!("ghp_{}", bytes.iter().map(|b| ALNUM[*b as usize % ALNUM.len()] as char).collect::<String>())
}

pub fn assert_no_part_of(secret: &str, shown: &str, what: &str) {
    for w in (0..=secret.len() - SECRET_WINDOW).map(|i| &secret[i..i + SECRET_WINDOW]) {
        assert!(!shown.contains(w), "{what} shows {SECRET_WINDOW} characters of the secret (at `{}`…)", &w[..2]);
    }
}

pub fn hook(m: &Machine) -> Output {
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

pub fn hook_ok(m: &Machine) {
    let out = hook(m);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(out.stderr.is_empty(), "a hook says nothing of the mirror: {}", text(&out));
}

pub fn last_push(m: &Machine) -> Value {
    m.status()["last_push"].clone()
}

impl Lab {
    /// Stores `blobs` in the remote through one `git fast-import`; their ids, in order.
    pub fn blobs(&self, blobs: &[&[u8]]) -> Vec<String> {
        let mut input = Vec::new();
        for (k, b) in blobs.iter().enumerate() {
            input.extend_from_slice(format!("blob\nmark :{}\ndata {}\n", k + 1, b.len()).as_bytes());
            input.extend_from_slice(b);
            input.push(b'\n');
        }
        let marks = self.dir.path().join("fast-import.marks");
        git_in(&self.remote, &["fast-import", "--quiet", &format!("--export-marks={}", marks.display())], Some(&input));
        let mut ids = vec![String::new(); blobs.len()];
        for line in std::fs::read_to_string(&marks).expect("the marks").lines() {
            let (mark, id) = line.split_once(' ').expect("`:<mark> <id>`");
            ids[mark[1..].parse::<usize>().expect("a mark number") - 1] = id.to_string();
        }
        ids
    }

    /// A whole mirror commit of the journal `lines` (each with its `LF`), `per_segment`
    /// lines to a segment, every claim as §5 says, written in the remote.
    pub fn mirror_in_segments(&self, lines: &[Vec<u8>], per_segment: usize, journal_id: &str, scope: &abcd::event::Scope) -> String {
        let chunks: Vec<Vec<u8>> = lines.chunks(per_segment).map(|c| c.concat()).collect();
        let ids = self.blobs(&chunks.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let segments: Vec<Entry> = ids.iter().enumerate().map(|(k, id)| Entry::blob(id, &segment_name((k * per_segment) as u64))).collect();
        let last: Value = serde_json::from_slice(lines.last().expect("a genesis at least")).expect("a line is JSON");
        let meta = json!({
            "format": "abcd-mirror/1",
            "journal_id": journal_id,
            "scope": scope,
            "repository": self.root_commit,
            "machine": "machine-x",
            "path": "/home/x/wc",
            "head_seq": last["seq"],
            "head_hash": last["hash"],
            "head_time": last["time"],
            "bytes": lines.iter().map(Vec::len).sum::<usize>(),
        });
        let parts = Parts { json: serde_json::to_vec(&meta).unwrap(), segments, extra_root: vec![], with_segments: true };
        self.write(&parts, None)
    }
}

/// A `git` first on `PATH` that writes each invocation (its parent's pid, then its
/// arguments) to a log, then runs the real git: what abcd's own children were, counted.
pub struct GitLog {
    pub bin: PathBuf,
    pub log: PathBuf,
    /// Every request written to a `git cat-file --batch-command` child, one a line.
    pub requests: PathBuf,
}

impl GitLog {
    pub fn new(dir: &Path) -> GitLog {
        let real = std::env::split_paths(&std::env::var_os("PATH").expect("a PATH"))
            .map(|d| d.join("git"))
            .find(|p| p.is_file())
            .expect("git on PATH");
        let bin = dir.join("counting-git-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let log = dir.join("git-children.log");
        let requests = dir.join("git-batch-requests.log");
        // A batch child's requests pass through `tee` on their way in: what it was asked
        // to read, object by object.
        let script = format!(
            "#!/bin/sh\nprintf '%s %s\\n' \"$PPID\" \"$*\" >> '{log}'\ncase \" $* \" in *' --batch-command '*) tee -a '{requests}' | '{real}' \"$@\"; exit $? ;; esac\nexec '{real}' \"$@\"\n",
            log = log.display(),
            requests = requests.display(),
            real = real.display()
        );
        let path = bin.join("git");
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        GitLog { bin, log, requests }
    }

    /// The object names the last [`GitLog::run`] asked its batch children for the contents
    /// of (`contents <name>` requests), in order.
    pub fn contents_read(&self) -> Vec<String> {
        let logged = std::fs::read_to_string(&self.requests).unwrap_or_default();
        logged.lines().filter_map(|l| l.strip_prefix("contents ")).map(str::to_string).collect()
    }

    /// Runs `abcd args` on `m` with this git first on `PATH`: its output, and the
    /// arguments of each git child abcd itself started (not those git started).
    pub fn run(&self, m: &Machine, args: &[&str]) -> (Output, Vec<String>) {
        let _ = std::fs::remove_file(&self.log);
        let _ = std::fs::remove_file(&self.requests);
        let path = std::env::join_paths(std::iter::once(self.bin.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())))
            .unwrap();
        let child =
            m.abcd().args(args).env("PATH", path).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let pid = child.id().to_string();
        let out = child.wait_with_output().unwrap();
        let logged = std::fs::read_to_string(&self.log).unwrap_or_default();
        let children =
            logged.lines().filter_map(|l| l.split_once(' ')).filter(|(ppid, _)| *ppid == pid).map(|(_, a)| a.to_string()).collect();
        (out, children)
    }
}

/// The git subcommand of a logged child's arguments, past `-c <name=value>` and options.
pub fn git_subcommand(args: &str) -> &str {
    let mut words = args.split(' ');
    while let Some(w) = words.next() {
        if w == "-c" {
            words.next();
        } else if !w.starts_with('-') {
            return w;
        }
    }
    ""
}
