//! A git remote on disk and the "machines" that mirror their journals through it (issue 22):
//! a bare repository holding one first commit, and clones of it, each with a home store and
//! an `ABCD_MACHINE` of its own, managed by `abcd init`. Nothing leaves the temp folder.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::repo;

/// Where a machine's working-copy journal lives, below its root.
pub const JOURNAL: &str = ".abcd/.work.local/journal.jsonl";

/// No system or global git config reaches git or abcd's own git children.
const GIT_ISOLATION: [(&str, &str); 2] = [("GIT_CONFIG_NOSYSTEM", "1"), ("GIT_CONFIG_GLOBAL", "/dev/null")];

/// One test's remote and the folder its machines live in.
pub struct Lab {
    pub dir: tempfile::TempDir,
    /// The bare repository every machine's `origin` names.
    pub remote: PathBuf,
}

/// One clone with its own home store and machine name.
pub struct Machine {
    pub name: String,
    pub root: PathBuf,
    pub home: PathBuf,
}

impl Lab {
    /// A bare remote on `main` holding one first commit ([`repo::README`]).
    pub fn new() -> Lab {
        let dir = tempfile::tempdir().expect("a temp folder");
        // The path abcd records is the canonical one (it starts from the current directory).
        let base = dir.path().canonicalize().expect("the temp folder's path");
        let remote = base.join("remote.git");
        repo::git(&base, &["init", "-q", "--bare", "-b", "main", remote.to_str().unwrap()]);
        let seed = base.join("seed");
        repo::create(&seed, &[repo::README]);
        repo::git(&seed, &["push", "-q", remote.to_str().unwrap(), "main"]);
        Lab { dir, remote }
    }

    fn base(&self) -> PathBuf {
        self.remote.parent().unwrap().to_path_buf()
    }

    /// A clone of the remote named `name` (its `ABCD_MACHINE`), managed, `origin` the remote.
    pub fn machine(&self, name: &str) -> Machine {
        let root = self.base().join(name).join("wc");
        repo::git(&self.base(), &["clone", "-q", self.remote.to_str().unwrap(), root.to_str().unwrap()]);
        Machine::managed(name, root, self.base().join(name).join("home"))
    }

    /// A repository of its own (another first commit), managed, whose `origin` is this remote.
    pub fn foreign_machine(&self, name: &str) -> Machine {
        let root = self.base().join(name).join("wc");
        repo::create(&root, &[("README", "another project altogether\n")]);
        repo::git(&root, &["remote", "add", "origin", self.remote.to_str().unwrap()]);
        Machine::managed(name, root, self.base().join(name).join("home"))
    }

    /// git in the bare remote; its trimmed stdout.
    pub fn git(&self, args: &[&str]) -> String {
        repo::git(&self.remote, args).trim_end().to_string()
    }

    /// The remote's commit for `refs/abcd/journals/<id>`.
    pub fn journal_ref(&self, journal_id: &str) -> String {
        self.git(&["rev-parse", "--verify", &format!("refs/abcd/journals/{journal_id}")])
    }

    /// Every ref under `refs/abcd/` in the remote, one `<oid> <type>\t<name>` a line.
    pub fn abcd_refs(&self) -> String {
        self.git(&["for-each-ref", "refs/abcd/"])
    }

    /// A commit's parents.
    pub fn parents(&self, commit: &str) -> Vec<String> {
        self.git(&["rev-list", "--parents", "-n", "1", commit]).split(' ').skip(1).map(str::to_string).collect()
    }

    /// A mirror commit's segments, name → blob id (`git ls-tree` of its `segments` tree).
    pub fn segments(&self, commit: &str) -> BTreeMap<String, String> {
        tree_entries(&self.git(&["ls-tree", &format!("{commit}:segments")]))
            .into_iter()
            .map(|(_, kind, oid, name)| {
                assert_eq!(kind, "blob", "segment {name} of {commit} is a blob");
                (name, oid)
            })
            .collect()
    }

    /// A blob's bytes.
    pub fn blob(&self, oid: &str) -> Vec<u8> {
        git_bytes(&self.remote, &["cat-file", "blob", oid], None)
    }

    /// The concatenation of a mirror commit's segments in name order.
    pub fn mirrored_bytes(&self, commit: &str) -> Vec<u8> {
        self.segments(commit).values().flat_map(|oid| self.blob(oid)).collect()
    }

    /// Rewrites the journal's newest mirror commit in the remote as someone with write access
    /// could: `from` becomes `to` (same length, one byte apart) in the segment that holds it,
    /// and a commit with the same parent, message, author and dates replaces the old one
    /// under the same ref. Every object is a valid git object. The forged commit.
    pub fn forge_segment_byte(&self, journal_id: &str, from: &str, to: &str) -> String {
        assert_eq!(from.len(), to.len(), "a one-byte change keeps the length");
        assert_eq!(from.bytes().zip(to.bytes()).filter(|(a, b)| a != b).count(), 1, "{from:?} and {to:?} differ in one byte");
        let commit = self.journal_ref(journal_id);
        let segments = self.git(&["ls-tree", &format!("{commit}:segments")]);
        let mut forged_one = false;
        let mut listing = String::new();
        for (mode, kind, oid, name) in tree_entries(&segments) {
            let bytes = self.blob(&oid);
            let oid = match find(&bytes, from.as_bytes()).filter(|_| !forged_one) {
                Some(at) => {
                    forged_one = true;
                    let mut forged = bytes.clone();
                    forged[at..at + from.len()].copy_from_slice(to.as_bytes());
                    String::from_utf8(git_bytes(&self.remote, &["hash-object", "-w", "--stdin"], Some(&forged)))
                        .unwrap()
                        .trim_end()
                        .to_string()
                }
                None => oid,
            };
            listing.push_str(&format!("{mode} {kind} {oid}\t{name}\n"));
        }
        assert!(forged_one, "no segment of {commit} holds {from:?}");
        let new_segments = self.git_in(&["mktree"], &listing);
        let mut root = String::new();
        for (mode, kind, oid, name) in tree_entries(&self.git(&["ls-tree", &commit])) {
            let oid = if name == "segments" { new_segments.clone() } else { oid };
            root.push_str(&format!("{mode} {kind} {oid}\t{name}\n"));
        }
        let new_root = self.git_in(&["mktree"], &root);
        let message = self.git(&["log", "-1", "--format=%B", &commit]);
        let (author, committer) = (self.person(&commit, "author"), self.person(&commit, "committer"));
        let env = [
            ("GIT_AUTHOR_NAME", author.0.as_str()),
            ("GIT_AUTHOR_EMAIL", author.1.as_str()),
            ("GIT_AUTHOR_DATE", author.2.as_str()),
            ("GIT_COMMITTER_NAME", committer.0.as_str()),
            ("GIT_COMMITTER_EMAIL", committer.1.as_str()),
            ("GIT_COMMITTER_DATE", committer.2.as_str()),
        ];
        let mut args = vec!["commit-tree".to_string(), new_root];
        for p in self.parents(&commit) {
            args.extend(["-p".to_string(), p]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let forged = String::from_utf8(git_bytes_with(&self.remote, &args, Some(format!("{message}\n").as_bytes()), &env)).unwrap();
        let forged = forged.trim_end().to_string();
        assert_ne!(forged, commit, "the forged commit differs from the one it replaces");
        self.git(&["update-ref", &format!("refs/abcd/journals/{journal_id}"), &forged, &commit]);
        forged
    }

    /// Name, email and `<unix seconds> <zone>` of a commit's author or committer.
    fn person(&self, commit: &str, role: &str) -> (String, String, String) {
        let raw = self.git(&["cat-file", "commit", commit]);
        let line = raw.lines().find_map(|l| l.strip_prefix(&format!("{role} "))).expect("the commit names its author and committer");
        let (name, rest) = line.split_once(" <").unwrap();
        let (email, date) = rest.split_once("> ").unwrap();
        (name.to_string(), email.to_string(), format!("@{date}"))
    }

    fn git_in(&self, args: &[&str], input: &str) -> String {
        String::from_utf8(git_bytes(&self.remote, args, Some(input.as_bytes()))).unwrap().trim_end().to_string()
    }
}

impl Machine {
    fn managed(name: &str, root: PathBuf, home: PathBuf) -> Machine {
        repo::git(&root, &["config", "user.name", repo::USER_NAME]);
        repo::git(&root, &["config", "user.email", repo::USER_EMAIL]);
        let machine = Machine { name: name.to_string(), root, home };
        machine.ok(&["init"]);
        machine
    }

    /// abcd in this machine's clone, with its home store and name; no git config but the clone's.
    pub fn abcd(&self) -> Command {
        let mut cmd = repo::abcd(&self.root, &self.home);
        cmd.env("ABCD_MACHINE", &self.name).envs(GIT_ISOLATION).stdin(Stdio::null());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.abcd().args(args).output().expect("abcd runs")
    }

    /// `run`, which must exit 0.
    pub fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{}: abcd {args:?}: {}", self.name, text(&out));
        out
    }

    /// Adds a checklist item; its id.
    pub fn add(&self, title: &str) -> String {
        String::from_utf8(self.ok(&["checklist", "add", title]).stdout).unwrap().trim().to_string()
    }

    /// `abcd mirror <verb> --json`: its exit code and its JSON.
    pub fn mirror_json(&self, verb: &str) -> (Option<i32>, Value, Output) {
        let out = self.run(&["mirror", verb, "--json"]);
        let json =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{}: mirror {verb} --json: {e}: {}", self.name, text(&out)));
        (out.status.code(), json, out)
    }

    /// `abcd mirror status --json`, which must exit 0.
    pub fn status(&self) -> Value {
        let out = self.ok(&["mirror", "status", "--json"]);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{}: mirror status --json: {e}: {}", self.name, text(&out)))
    }

    pub fn journal_path(&self) -> PathBuf {
        self.root.join(JOURNAL)
    }

    pub fn journal_bytes(&self) -> Vec<u8> {
        std::fs::read(self.journal_path()).expect("the working copy's journal")
    }

    /// Lines in the working copy's journal: the next seq.
    pub fn journal_lines(&self) -> u64 {
        self.journal_bytes().iter().filter(|&&b| b == b'\n').count() as u64
    }

    /// The working copy's journal id, from its `journal.opened` line.
    pub fn journal_id(&self) -> String {
        let bytes = self.journal_bytes();
        let first = bytes.split(|&b| b == b'\n').next().unwrap();
        let line: Value = serde_json::from_slice(first).expect("the genesis line is JSON");
        assert_eq!(line["kind"], "journal.opened");
        line["data"]["journal_id"].as_str().unwrap().to_string()
    }

    /// The path the machine's journals record for its working copy.
    pub fn path(&self) -> String {
        self.root.display().to_string()
    }

    /// git in the clone; its trimmed stdout.
    pub fn git(&self, args: &[&str]) -> String {
        repo::git(&self.root, args).trim_end().to_string()
    }

    /// Every local ref under `refs/abcd/`.
    pub fn abcd_refs(&self) -> String {
        self.git(&["for-each-ref", "refs/abcd/"])
    }

    /// Every journal file of this machine (the working copy's and the home store's), path → bytes.
    pub fn journal_files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    out.insert(path.clone(), std::fs::read(&path).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.root.join(".abcd"), &mut out);
        walk(&self.home, &mut out);
        out
    }
}

pub use crate::common::repo::text;

/// `git ls-tree` lines as (mode, type, oid, name).
fn tree_entries(listing: &str) -> Vec<(String, String, String, String)> {
    listing
        .lines()
        .map(|l| {
            let (meta, name) = l.split_once('\t').expect("an ls-tree line");
            let mut m = meta.split(' ');
            let (mode, kind, oid) = (m.next().unwrap(), m.next().unwrap(), m.next().unwrap());
            (mode.to_string(), kind.to_string(), oid.to_string(), name.to_string())
        })
        .collect()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn git_bytes(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
    git_bytes_with(dir, args, input, &[])
}

/// git in `dir` with no system or global config, `input` on its stdin; panics when it fails.
fn git_bytes_with(dir: &Path, args: &[&str], input: Option<&[u8]>, envs: &[(&str, &str)]) -> Vec<u8> {
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .envs(GIT_ISOLATION)
        .envs(envs.iter().copied())
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git runs");
    if let Some(input) = input {
        child.stdin.take().unwrap().write_all(input).expect("git reads its stdin");
    }
    let out = child.wait_with_output().expect("git runs");
    assert!(out.status.success(), "git {args:?} in {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    out.stdout
}
