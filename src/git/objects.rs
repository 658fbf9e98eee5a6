//! git's object store and refs through bounded plumbing children: blobs, trees and commits
//! written and read, refs read and moved with compare-and-swap, and a remote pushed to and
//! fetched from. The mirror (`src/mirror/`) builds on this; nothing here knows a journal.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::run::{Git, Ran, RunError, first_line, subcommand};
use crate::platform::child;

/// A local plumbing command (hash-object, mktree, cat-file…) is killed past this.
pub const PLUMBING_DEADLINE: Duration = Duration::from_secs(30);
/// A push or a fetch talks to a remote, perhaps over a network: killed past this.
pub const REMOTE_DEADLINE: Duration = Duration::from_secs(120);
/// stdout kept from one child at most; an object read is capped lower by its caller.
pub const PLUMBING_OUTPUT_MAX: usize = 64 << 20;
/// stdout kept from a child that prints one id or a short answer (rev-parse, update-ref,
/// merge-base).
const SHORT_OUTPUT_MAX: usize = 4096;
/// stdout kept from `git remote`, `git push --porcelain` and `git fetch`: a line per remote
/// or per ref pushed.
const LISTING_OUTPUT_MAX: usize = 1 << 20;
/// Lines of a remote hook's refusal kept with the refused ref.
const HOOK_LINES_KEPT: usize = 3;
/// A `cat-file --batch` header line (`<id> <type> <size>`), at most, in bytes.
const BATCH_HEADER_MAX: usize = 128;
/// A remote's name as a ref path part: git's config names, kept to safe characters.
pub const REMOTE_NAME_MAX: usize = 64;
/// abcd's own commits name abcd, so they need no identity of the person's.
pub const COMMITTER: (&str, &str) = ("abcd", "abcd@mirror.invalid");

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git {command} failed: {why}")]
    Failed { command: String, why: String },
    #[error("git {command} did not finish within {} s and was stopped", seconds)]
    Deadline { command: String, seconds: u64 },
    #[error("git {command} printed something abcd cannot read: {why}")]
    Unreadable { command: String, why: String },
    /// An object over the cap its reader named, refused before its bytes were read.
    #[error("git {command} holds an object of {size} bytes, over {max}")]
    TooLarge { command: String, size: usize, max: usize },
}

impl GitError {
    /// A child that gave nothing usable, in this module's terms: `deadline` is the one it
    /// was given.
    fn of_run(e: RunError, deadline: Duration) -> GitError {
        let why = e.why();
        match e {
            RunError::Deadline { command } => GitError::Deadline { command, seconds: deadline.as_secs() },
            RunError::Spawn { command, .. } => GitError::Failed { command, why },
            RunError::TooLong { command, .. } | RunError::Read { command } => GitError::Unreadable { command, why },
        }
    }
}

/// One entry of a tree as `git ls-tree` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeEntry {
    pub mode: String,
    pub kind: String,
    pub id: String,
    pub name: String,
}

/// One object as `git cat-file --batch` gives it: its type and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    pub kind: String,
    pub bytes: Vec<u8>,
}

/// What a remote said of one ref of a push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushedRef {
    pub remote_ref: String,
    pub outcome: PushOutcome,
    /// git's own words for a refusal (`[rejected] (non-fast-forward)`, a hook's reason).
    pub summary: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushOutcome {
    Updated,
    UpToDate,
    /// Refused because it is not a fast-forward of the remote's ref, or because the ref was
    /// being moved by another push at that moment.
    NotFastForward,
    Refused,
}

/// True for a name abcd accepts as a remote: one git accepts (`refs/remotes/<name>/x` is a
/// ref name, git's own test), not starting with `-` (it would read as an option), at most
/// [`REMOTE_NAME_MAX`] bytes. It becomes part of local ref and file names through
/// [`remote_part`].
pub fn remote_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= REMOTE_NAME_MAX
        && !name.starts_with('-')
        && crate::ref_name::refname_ok(&format!("refs/remotes/{name}/x"))
}

/// A remote's name as one component of a local ref or file name: `%` and `/` written
/// `%25` and `%2F`, so `team/origin` and `team` never share a folder of refs and no two
/// names meet. A name holding neither is itself (so the refs of version 1 stay where they are).
pub fn remote_part(name: &str) -> String {
    name.replace('%', "%25").replace('/', "%2F")
}

/// The git repository a mirror works in: bounded children run in `dir`.
#[derive(Clone, Debug)]
pub struct Repo {
    dir: PathBuf,
}

impl Repo {
    pub fn at(dir: &Path) -> Repo {
        Repo { dir: dir.to_owned() }
    }

    fn run<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        input: Option<Vec<u8>>,
        deadline: Duration,
        out_cap: usize,
        env: &[(&str, &str)],
    ) -> Result<Ran, GitError> {
        let git = env.iter().fold(Git::new(&self.dir), |git, (k, v)| git.env(*k, *v));
        git.run(args, input, Instant::now() + deadline, out_cap).map_err(|e| GitError::of_run(e, deadline))
    }

    /// Runs a local plumbing command and takes its stdout when it exits 0.
    fn ok<S: AsRef<OsStr>>(&self, args: &[S], input: Option<Vec<u8>>, out_cap: usize, env: &[(&str, &str)]) -> Result<Vec<u8>, GitError> {
        let ran = self.run(args, input, PLUMBING_DEADLINE, out_cap, env)?;
        if ran.code == Some(0) {
            return Ok(ran.out);
        }
        Err(failed(args, &ran))
    }

    fn ok_text<S: AsRef<OsStr>>(&self, args: &[S], input: Option<Vec<u8>>) -> Result<String, GitError> {
        let out = self.ok(args, input, PLUMBING_OUTPUT_MAX, &[])?;
        String::from_utf8(out)
            .map(|s| s.trim_end().to_string())
            .map_err(|_| GitError::Unreadable { command: subcommand(args), why: "not UTF-8".into() })
    }

    /// Stores `bytes` as a blob and returns its id.
    pub fn write_blob(&self, bytes: Vec<u8>) -> Result<String, GitError> {
        object_id(self.ok_text(&["hash-object", "-w", "--stdin"], Some(bytes))?, "hash-object")
    }

    /// A blob's bytes; a blob over `max` bytes is refused rather than read.
    pub fn read_blob(&self, id: &str, max: usize) -> Result<Vec<u8>, GitError> {
        self.ok(&["cat-file", "blob", id], None, max, &[])
    }

    /// The entries of a tree (`<commit>^{tree}` or `<commit>:<path>` are trees too).
    pub fn ls_tree(&self, tree: &str) -> Result<Vec<TreeEntry>, GitError> {
        let out = self.ok(&["ls-tree", "-z", "--full-tree", tree], None, PLUMBING_OUTPUT_MAX, &[])?;
        out.split(|b| *b == 0)
            .filter(|r| !r.is_empty())
            .map(|record| {
                let bad =
                    || GitError::Unreadable { command: "ls-tree".into(), why: "an entry not shaped `<mode> <type> <id>\\t<name>`".into() };
                let text = std::str::from_utf8(record).map_err(|_| bad())?;
                let (head, name) = text.split_once('\t').ok_or_else(bad)?;
                let mut parts = head.split(' ');
                let (Some(mode), Some(kind), Some(id), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
                    return Err(bad());
                };
                Ok(TreeEntry { mode: mode.into(), kind: kind.into(), id: id.into(), name: name.into() })
            })
            .collect()
    }

    /// Writes a tree of `entries` (mode, kind, id, name) and returns its id.
    pub fn write_tree(&self, entries: &[TreeEntry]) -> Result<String, GitError> {
        let mut input = Vec::new();
        for e in entries {
            input.extend_from_slice(format!("{} {} {}\t{}", e.mode, e.kind, e.id, e.name).as_bytes());
            input.push(0);
        }
        object_id(self.ok_text(&["mktree", "-z"], Some(input))?, "mktree")
    }

    /// Writes a commit of `tree` with at most one parent, by abcd, dated `unix_seconds` for
    /// both author and committer, so the same inputs always give the same commit.
    pub fn write_commit(&self, tree: &str, parent: Option<&str>, message: &str, unix_seconds: i64) -> Result<String, GitError> {
        let mut args = vec!["commit-tree", tree];
        if let Some(p) = parent {
            args.extend(["-p", p]);
        }
        let date = format!("@{unix_seconds} +0000");
        let env = [
            ("GIT_AUTHOR_NAME", COMMITTER.0),
            ("GIT_AUTHOR_EMAIL", COMMITTER.1),
            ("GIT_COMMITTER_NAME", COMMITTER.0),
            ("GIT_COMMITTER_EMAIL", COMMITTER.1),
            ("GIT_AUTHOR_DATE", date.as_str()),
            ("GIT_COMMITTER_DATE", date.as_str()),
        ];
        let out = self.ok(&args, Some(message.as_bytes().to_vec()), PLUMBING_OUTPUT_MAX, &env)?;
        object_id(String::from_utf8_lossy(&out).trim_end().to_string(), "commit-tree")
    }

    /// The commit a ref names, or None when there is no such ref.
    pub fn read_ref(&self, name: &str) -> Result<Option<String>, GitError> {
        let ran =
            self.run(&["rev-parse", "--verify", "--quiet", &format!("{name}^{{commit}}")], None, PLUMBING_DEADLINE, SHORT_OUTPUT_MAX, &[])?;
        match ran.code {
            Some(0) => Ok(Some(object_id(String::from_utf8_lossy(&ran.out).trim().to_string(), "rev-parse")?)),
            Some(1) => Ok(None),
            _ => Err(failed(&["rev-parse"], &ran)),
        }
    }

    /// The first parent of a commit, if any.
    pub fn parent_of(&self, commit: &str) -> Result<Option<String>, GitError> {
        let out = self.ok_text(&["rev-list", "--parents", "-n", "1", commit], None)?;
        Ok(out.split(' ').nth(1).map(str::to_string))
    }

    /// Every ref under `prefix` (ending in `/`) with the object it names.
    pub fn refs_under(&self, prefix: &str) -> Result<Vec<(String, String)>, GitError> {
        Ok(self.typed_refs_under(prefix)?.into_iter().map(|(r, o, _)| (r, o)).collect())
    }

    /// Every ref under `prefix` with the object it names and that object's type (`commit`,
    /// `tree`, `blob`, `tag`).
    pub fn typed_refs_under(&self, prefix: &str) -> Result<Vec<(String, String, String)>, GitError> {
        let out = self.ok_text(&["for-each-ref", "--format=%(refname) %(objectname) %(objecttype)", prefix], None)?;
        Ok(out
            .lines()
            .filter_map(|l| {
                let mut parts = l.rsplitn(3, ' ');
                let (kind, id, name) = (parts.next()?, parts.next()?, parts.next()?);
                Some((name.to_string(), id.to_string(), kind.to_string()))
            })
            .collect())
    }

    /// Moves `name` to `new` only while it still names `old` (None: only while it does not
    /// exist), so two movers never lose each other's update.
    pub fn move_ref(&self, name: &str, new: &str, old: Option<&str>) -> Result<(), GitError> {
        let zero = "0".repeat(new.len());
        self.ok(&["update-ref", "-m", "abcd mirror", name, new, old.unwrap_or(&zero)], None, SHORT_OUTPUT_MAX, &[]).map(|_| ())
    }

    /// Moves each ref to its new commit only while it still names its old one (None: only
    /// while it does not exist), all in one `git update-ref --stdin` transaction: every
    /// ref moves, or none does.
    pub fn move_refs(&self, moves: &[(String, String, Option<String>)]) -> Result<(), GitError> {
        if moves.is_empty() {
            return Ok(());
        }
        let mut input = String::new();
        for (name, new, old) in moves {
            if [name, new].iter().any(|t| t.contains(['\n', '\0'])) || old.as_ref().is_some_and(|o| o.contains(['\n', '\0'])) {
                return Err(GitError::Unreadable { command: "update-ref".into(), why: "a ref name or id holding a line feed".into() });
            }
            let zero = "0".repeat(new.len());
            input += &format!("update {name} {new} {}\n", old.as_deref().unwrap_or(&zero));
        }
        self.ok(&["update-ref", "-m", "abcd mirror", "--stdin"], Some(input.into_bytes()), SHORT_OUTPUT_MAX, &[]).map(|_| ())
    }

    /// Deletes `name` only while it still names `old`, so a ref another writer moved since
    /// it was read is left as it is.
    pub fn delete_ref(&self, name: &str, old: &str) -> Result<(), GitError> {
        self.ok(&["update-ref", "-m", "abcd mirror", "-d", name, old], None, SHORT_OUTPUT_MAX, &[]).map(|_| ())
    }

    /// True when `ancestor` is `descendant` or one of its ancestors.
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool, GitError> {
        let ran = self.run(&["merge-base", "--is-ancestor", ancestor, descendant], None, PLUMBING_DEADLINE, SHORT_OUTPUT_MAX, &[])?;
        match ran.code {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(failed(&["merge-base"], &ran)),
        }
    }

    /// The best common ancestor of two commits (one `git merge-base`), None when they share
    /// no history.
    pub fn merge_base(&self, a: &str, b: &str) -> Result<Option<String>, GitError> {
        let ran = self.run(&["merge-base", a, b], None, PLUMBING_DEADLINE, SHORT_OUTPUT_MAX, &[])?;
        match ran.code {
            Some(0) => Ok(Some(object_id(String::from_utf8_lossy(&ran.out).trim().to_string(), "merge-base")?)),
            Some(1) => Ok(None),
            _ => Err(failed(&["merge-base"], &ran)),
        }
    }

    /// The entries a commit adds or changes against its first parent (all of them for a
    /// root commit; a merge's too, which plain `git diff-tree` leaves empty), each with its
    /// path and, for a file or a symlink, its blob: deletions left out.
    pub fn changed_entries(&self, commit: &str) -> Result<Vec<(String, Option<String>)>, GitError> {
        let args = ["diff-tree", "-r", "-z", "--root", "--no-commit-id", "--no-renames", "--diff-merges=first-parent", commit];
        let out = self.ok(&args, None, PLUMBING_OUTPUT_MAX, &[])?;
        let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
        let mut changed = Vec::new();
        while let (Some(head), Some(path)) = (fields.next(), fields.next()) {
            // `:<old mode> <new mode> <old id> <new id> <status>`
            let head = String::from_utf8_lossy(head);
            let parts: Vec<&str> = head.trim_start_matches(':').split(' ').collect();
            if let [_, new_mode, _, new_id, status] = parts[..]
                && status != "D"
            {
                let blob = (new_mode.starts_with("100") || new_mode == "120000").then(|| new_id.to_string());
                changed.push((String::from_utf8_lossy(path).into_owned(), blob));
            }
        }
        Ok(changed)
    }

    /// The objects `ids` name, read through one `git cat-file --batch`: each one's type and
    /// bytes, None for one that does not exist. All of them together are at most `max_bytes`
    /// (past it, `Unreadable`), so the work is bounded by bytes whatever their number.
    pub fn read_objects(&self, ids: &[&str], max_bytes: usize) -> Result<Vec<Option<Object>>, GitError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let input: String = ids.iter().map(|s| format!("{s}\n")).collect();
        // Each answer adds a header line (id, type, size) and a newline to the bytes.
        let cap = max_bytes.saturating_add(ids.len().saturating_mul(BATCH_HEADER_MAX + 1));
        let out = self.ok(&["cat-file", "--batch"], Some(input.into_bytes()), cap, &[])?;
        let unreadable = |why: &str| GitError::Unreadable { command: "cat-file".into(), why: why.into() };
        let mut answers = Vec::with_capacity(ids.len());
        let mut rest = &out[..];
        let mut total = 0usize;
        for _ in ids {
            let end = rest.iter().position(|&b| b == b'\n').ok_or_else(|| unreadable("an answer without its header line"))?;
            let header = batch_header(&rest[..end])?;
            rest = &rest[end + 1..];
            let Some((kind, size)) = header else {
                answers.push(None);
                continue;
            };
            total = total.saturating_add(size);
            if total > max_bytes {
                return Err(unreadable(&format!("more than {max_bytes} bytes of objects")));
            }
            if rest.len() < size + 1 || rest[size] != b'\n' {
                return Err(unreadable("an object shorter than its header says"));
            }
            answers.push(Some(Object { kind, bytes: rest[..size].to_vec() }));
            rest = &rest[size + 1..];
        }
        Ok(answers)
    }

    /// `commit` and its ancestors that no remote-tracking ref holds, newest first, at most
    /// `max` of them.
    pub fn commits_not_on_remotes(&self, commit: &str, max: usize) -> Result<Vec<String>, GitError> {
        let max = format!("--max-count={max}");
        let out = self.ok_text(&["rev-list", &max, commit, "--not", "--remotes"], None)?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// True when `remote` is a configured remote of this repository.
    pub fn has_remote(&self, remote: &str) -> Result<bool, GitError> {
        let ran = self.run(&["remote"], None, PLUMBING_DEADLINE, LISTING_OUTPUT_MAX, &[])?;
        Ok(ran.code == Some(0) && String::from_utf8_lossy(&ran.out).lines().any(|l| l == remote))
    }

    /// The main and linked worktrees' roots, as `git worktree list` names them.
    pub fn worktrees(&self) -> Result<Vec<PathBuf>, GitError> {
        let out = self.ok(&["worktree", "list", "--porcelain", "-z"], None, PLUMBING_OUTPUT_MAX, &[])?;
        Ok(out.split(|b| *b == 0).filter_map(|f| f.strip_prefix(b"worktree ")).map(crate::platform::fs::path_from_bytes).collect())
    }

    /// Pushes `refspecs` (never forced) and returns what the remote said of each. A push
    /// the remote refused in part exits nonzero; that is read from the per-ref lines.
    pub fn push(&self, remote: &str, refspecs: &[String]) -> Result<Vec<PushedRef>, GitError> {
        // No delta search: segments are distinct lines, so deltas between them save little
        // while the search's time and memory grow with every segment a first push sends.
        let mut args: Vec<&str> = vec!["-c", "pack.window=0", "push", "--porcelain", "--no-verify", remote];
        args.extend(refspecs.iter().map(String::as_str));
        let ran = self.run(&args, None, REMOTE_DEADLINE, LISTING_OUTPUT_MAX, &[])?;
        let text = String::from_utf8_lossy(&ran.out);
        let mut pushed = Vec::new();
        for line in text.lines() {
            let mut parts = line.splitn(3, '\t');
            let (Some(flag), Some(refs), summary) = (parts.next(), parts.next(), parts.next()) else { continue };
            let Some((_, to)) = refs.split_once(':') else { continue };
            let summary = summary.unwrap_or("").to_string();
            let outcome = match flag {
                " " | "*" | "+" => PushOutcome::Updated,
                "=" => PushOutcome::UpToDate,
                // Another writer moved the ref, or held its lock at that moment (an earlier
                // push of this machine's, killed in abcd while its git push went on).
                "!" if ["non-fast-forward", "fetch first", "lock", "failed to update ref"].iter().any(|w| summary.contains(w)) => {
                    PushOutcome::NotFastForward
                }
                _ => PushOutcome::Refused,
            };
            pushed.push(PushedRef { remote_ref: to.to_string(), outcome, summary });
        }
        if pushed.is_empty() && ran.code != Some(0) {
            return Err(failed(&args, &ran));
        }
        // A hook's refusal is told on stderr as `remote: …`; keep its words with the ref.
        let hook_words: Vec<String> = String::from_utf8_lossy(&ran.err)
            .lines()
            .filter_map(|l| l.strip_prefix("remote: "))
            .map(|l| l.trim().to_string())
            // The remote's words reach the terminal: a line that carries a secret is left out.
            .filter(|l| !l.is_empty() && crate::secrets::scan(l).is_none())
            .take(HOOK_LINES_KEPT)
            .collect();
        if !hook_words.is_empty() {
            for p in pushed.iter_mut().filter(|p| p.outcome == PushOutcome::Refused) {
                p.summary = format!("{} ({})", p.summary, hook_words.join("; "));
            }
        }
        Ok(pushed)
    }

    /// Deletes `remote_ref` on `remote` only while the remote's ref still names `expected`
    /// (a lease: a ref another writer moved since it was read is left as it is), and says
    /// what the remote answered. Nothing else is pushed.
    pub fn push_delete(&self, remote: &str, remote_ref: &str, expected: &str) -> Result<PushedRef, GitError> {
        let lease = format!("--force-with-lease={remote_ref}:{expected}");
        let spec = format!(":{remote_ref}");
        let args = ["push", "--porcelain", "--no-verify", lease.as_str(), remote, spec.as_str()];
        let ran = self.run(&args, None, REMOTE_DEADLINE, LISTING_OUTPUT_MAX, &[])?;
        let text = String::from_utf8_lossy(&ran.out);
        for line in text.lines() {
            let mut parts = line.splitn(3, '\t');
            let (Some(flag), Some(refs), summary) = (parts.next(), parts.next(), parts.next()) else { continue };
            if refs.split_once(':').is_none_or(|(_, to)| to != remote_ref) {
                continue;
            }
            let outcome = match flag {
                "-" => PushOutcome::Updated,
                "=" => PushOutcome::UpToDate,
                "!" if summary.is_some_and(|s| s.contains("stale info")) => PushOutcome::NotFastForward,
                _ => PushOutcome::Refused,
            };
            return Ok(PushedRef { remote_ref: remote_ref.to_string(), outcome, summary: summary.unwrap_or("").to_string() });
        }
        Err(failed(&args, &ran))
    }

    /// Fetches `refspecs` from `remote`, pruning refs gone from it under the refspecs'
    /// destinations.
    pub fn fetch(&self, remote: &str, refspecs: &[String]) -> Result<(), GitError> {
        let mut args: Vec<&str> = vec!["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--prune", "--no-auto-gc", remote];
        args.extend(refspecs.iter().map(String::as_str));
        let ran = self.run(&args, None, REMOTE_DEADLINE, LISTING_OUTPUT_MAX, &[])?;
        if ran.code == Some(0) { Ok(()) } else { Err(failed(&["fetch"], &ran)) }
    }
}

/// Object bytes one `git cat-file --batch-command` child reads at most: past it the next
/// object is read by a new child, so each child's work (and its deadline,
/// [`PLUMBING_DEADLINE`]) is bounded by bytes, and the number of children by the bytes
/// read, never by how many objects they are.
pub const BATCH_CHILD_MAX_BYTES: u64 = 64 << 20;
/// Requests written ahead of the answer read: a few KiB, under any pipe's buffer, so a
/// write never waits on a child that waits on its own full stdout.
const BATCH_AHEAD: usize = 64;

/// What one batch request asks: an object's type and size, or the object itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ask {
    Info,
    Contents,
}

/// Objects read through long-lived `git cat-file --batch-command` children, one request a
/// line and the answers read as they come: one child for any number of objects, a new one
/// only past [`BATCH_CHILD_MAX_BYTES`]. Requests run ahead of answers, so reading many
/// small objects costs no round trip each.
pub struct Batch<'r> {
    repo: &'r Repo,
    session: Option<child::Session>,
    /// Requests written to the current child and not answered yet, oldest first.
    asked: std::collections::VecDeque<(Ask, String)>,
    /// Object bytes the current child has handed over.
    read: u64,
    /// False while requests were written since the last `flush`.
    flushed: bool,
    started: usize,
    max_child_bytes: u64,
}

impl<'r> Batch<'r> {
    pub fn new(repo: &'r Repo) -> Batch<'r> {
        Batch::with_child_bytes(repo, BATCH_CHILD_MAX_BYTES)
    }

    /// A batch whose children read at most `max_child_bytes` each.
    fn with_child_bytes(repo: &'r Repo, max_child_bytes: u64) -> Batch<'r> {
        Batch { repo, session: None, asked: Default::default(), read: 0, flushed: true, started: 0, max_child_bytes }
    }

    /// The repository this batch reads.
    pub fn repo(&self) -> &'r Repo {
        self.repo
    }

    /// How many git children this batch has started.
    pub fn children(&self) -> usize {
        self.started
    }

    /// The type and size of the object `spec` names (`<id>`, `<rev>:<path>`), None when
    /// there is none. Nothing of the object is read.
    pub fn info(&mut self, spec: &str) -> Result<Option<(String, u64)>, GitError> {
        self.ask(Ask::Info, spec)?;
        let answer = self.header()?;
        self.asked.pop_front();
        Ok(answer.map(|(kind, size)| (kind, size as u64)))
    }

    /// The object `spec` names, None when there is none; one over `max` bytes is refused
    /// (`TooLarge`) before its bytes are read.
    pub fn read(&mut self, spec: &str, max: usize) -> Result<Option<Object>, GitError> {
        let mut one = None;
        self.read_each(&[spec], max, |_, o| {
            one = o;
            Ok::<(), GitError>(())
        })?;
        Ok(one)
    }

    /// The objects `specs` name, handed to `each` in order with their index, one at a time
    /// (one object in memory): None for one that does not exist; one over `max` bytes ends
    /// the reading (`TooLarge`). An error from `each` ends it too, and is returned.
    pub fn read_each<S: AsRef<str>, E: From<GitError>>(
        &mut self,
        specs: &[S],
        max: usize,
        mut each: impl FnMut(usize, Option<Object>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut sent = 0;
        for k in 0..specs.len() {
            // Requests go in runs of half the window, each closed by a `flush`: the child
            // answers a run in few writes while the answers of the run before are read.
            if sent < specs.len() && sent - k <= BATCH_AHEAD / 2 {
                let upto = (k + BATCH_AHEAD).min(specs.len());
                while sent < upto {
                    self.ask(Ask::Contents, specs[sent].as_ref()).inspect_err(|_| self.end())?;
                    sent += 1;
                }
                self.flush().inspect_err(|_| self.end())?;
            }
            let object = self.contents(max).inspect_err(|_| self.end())?;
            if let Err(e) = each(k, object) {
                self.end();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Writes one request to the child, starting one when there is none.
    fn ask(&mut self, ask: Ask, spec: &str) -> Result<(), GitError> {
        if spec.contains('\n') {
            return Err(GitError::Unreadable { command: "cat-file".into(), why: "an object name holding a line feed".into() });
        }
        if self.session.is_none() {
            self.begin()?;
        }
        self.send(ask, spec)?;
        self.asked.push_back((ask, spec.to_string()));
        Ok(())
    }

    /// Asks the child to write out the answers to every request so far (it holds them
    /// back otherwise: `--buffer`).
    fn flush(&mut self) -> Result<(), GitError> {
        if !self.flushed {
            self.write_line("flush\n")?;
            self.flushed = true;
        }
        Ok(())
    }

    fn send(&mut self, ask: Ask, spec: &str) -> Result<(), GitError> {
        self.flushed = false;
        self.write_line(&format!("{} {spec}\n", if ask == Ask::Info { "info" } else { "contents" }))
    }

    fn write_line(&mut self, line: &str) -> Result<(), GitError> {
        use std::io::Write;
        let written = self.session.as_mut().and_then(|s| s.input()).map(|stdin| stdin.write_all(line.as_bytes()));
        match written {
            Some(Ok(())) => Ok(()),
            _ => Err(self.broken("it stopped reading its requests")),
        }
    }

    fn begin(&mut self) -> Result<(), GitError> {
        let session = Git::new(&self.repo.dir)
            .start(&["cat-file", "--batch-command", "--buffer"], Instant::now() + PLUMBING_DEADLINE)
            .map_err(|e| GitError::of_run(e, PLUMBING_DEADLINE))?;
        self.session = Some(session);
        self.started += 1;
        self.read = 0;
        self.flushed = true;
        Ok(())
    }

    /// Ends the current child; requests not answered are dropped with it.
    fn end(&mut self) {
        self.session = None;
        self.asked.clear();
    }

    /// Why the child said no more: its deadline, or its own first line of stderr.
    fn broken(&mut self, what: &str) -> GitError {
        self.asked.clear();
        let Some(session) = self.session.take() else {
            return GitError::Unreadable { command: "cat-file".into(), why: what.into() };
        };
        if session.timed_out() {
            return GitError::Deadline { command: "cat-file".into(), seconds: PLUMBING_DEADLINE.as_secs() };
        }
        match first_line(&session.stderr()) {
            Some(line) => GitError::Failed { command: "cat-file".into(), why: crate::secrets::shown_name(&line) },
            None => GitError::Unreadable { command: "cat-file".into(), why: what.into() },
        }
    }

    /// The answer's header to the oldest request: its type and size, None for a missing
    /// object.
    fn header(&mut self) -> Result<Option<(String, usize)>, GitError> {
        use std::io::{BufRead, Read};
        self.flush()?;
        let mut line = Vec::new();
        let got = match self.session.as_mut() {
            Some(s) => (s.output()).take(BATCH_HEADER_MAX as u64 + 1).read_until(b'\n', &mut line),
            None => return Err(self.broken("no child to answer")),
        };
        if got.is_err() || line.last() != Some(&b'\n') {
            return Err(self.broken("an answer without its header line"));
        }
        line.pop();
        batch_header(&line)
    }

    /// The oldest request's object, read whole; over `max` bytes it is refused unread. An
    /// object that would take this child past its byte bound is asked again of a new one.
    fn contents(&mut self, max: usize) -> Result<Option<Object>, GitError> {
        use std::io::Read;
        let (kind, size) = loop {
            let Some((kind, size)) = self.header()? else {
                self.asked.pop_front();
                return Ok(None);
            };
            if size > max {
                self.end();
                return Err(GitError::TooLarge { command: "cat-file".into(), size, max });
            }
            if self.read > 0 && self.read.saturating_add(size as u64) > self.max_child_bytes {
                // This child has read its share: a new one is asked everything not answered.
                let pending: Vec<(Ask, String)> = self.asked.drain(..).collect();
                self.session = None;
                self.begin()?;
                for (ask, spec) in pending {
                    self.send(ask, &spec)?;
                    self.asked.push_back((ask, spec));
                }
                self.flush()?;
                continue;
            }
            break (kind, size);
        };
        let mut bytes = vec![0u8; size + 1];
        let got = self.session.as_mut().map(|s| s.output().read_exact(&mut bytes));
        if !matches!(got, Some(Ok(()))) || bytes.pop() != Some(b'\n') {
            return Err(self.broken("an object shorter than its header says"));
        }
        self.asked.pop_front();
        self.read += size as u64;
        Ok(Some(Object { kind, bytes }))
    }
}

/// A `git cat-file --batch` answer's header line (without its line feed): the object's
/// type and size, None for an object that is missing or ambiguous.
fn batch_header(line: &[u8]) -> Result<Option<(String, usize)>, GitError> {
    let unreadable = |why: &str| GitError::Unreadable { command: "cat-file".into(), why: why.into() };
    let header = std::str::from_utf8(line).map_err(|_| unreadable("a header that is not UTF-8"))?;
    if header.ends_with(" missing") || header.ends_with(" ambiguous") {
        return Ok(None);
    }
    let mut parts = header.split(' ');
    let (Some(_), Some(kind), Some(size), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(unreadable("a header that is not `<id> <type> <size>`"));
    };
    let size = size.parse().map_err(|_| unreadable("a size that is not a number"))?;
    Ok(Some((kind.to_string(), size)))
}

fn failed<S: AsRef<OsStr>>(args: &[S], ran: &Ran) -> GitError {
    let why = ran.first_err_line().map(|l| crate::secrets::shown_name(&l)).unwrap_or_else(|| ran.ended());
    GitError::Failed { command: subcommand(args), why }
}

fn object_id(text: String, command: &str) -> Result<String, GitError> {
    if super::repo::is_commit_id(&text) {
        Ok(text)
    } else {
        Err(GitError::Unreadable { command: command.into(), why: "not an object id".into() })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::process::Command;

    /// An empty repository in a folder of its own, removed when the folder is dropped.
    pub(crate) fn repo() -> (tempfile::TempDir, Repo) {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("git").args(["init", "-q"]).current_dir(dir.path()).output().unwrap();
        assert!(out.status.success());
        let repo = Repo::at(dir.path());
        (dir, repo)
    }

    /// Objects totalling exactly the bound come through one child; one byte more starts a
    /// second, which answers from the object that would have passed the bound on.
    #[test]
    fn a_batch_child_reads_up_to_its_byte_bound_and_a_new_one_reads_past_it() {
        let (_dir, repo) = repo();
        let quarter = (BATCH_CHILD_MAX_BYTES / 4) as usize;
        let blobs: Vec<Vec<u8>> = (0..4u8).map(|k| vec![b'a' + k; quarter]).chain([b"z".to_vec()]).collect();
        let ids: Vec<String> = blobs.iter().map(|b| repo.write_blob(b.clone()).unwrap()).collect();
        for (n, children) in [(4, 1), (5, 2)] {
            let mut batch = Batch::new(&repo);
            let mut got = Vec::new();
            batch
                .read_each(&ids[..n], quarter, |k, o| {
                    got.push((k, o.unwrap()));
                    Ok::<(), GitError>(())
                })
                .unwrap();
            assert_eq!(batch.children(), children, "{n} objects of {} bytes", blobs[..n].iter().map(Vec::len).sum::<usize>());
            for (k, o) in got {
                assert_eq!((o.kind.as_str(), &o.bytes), ("blob", &blobs[k]), "object {k}");
            }
        }
    }

    /// One child answers many more objects than it is asked ahead, in order; a missing
    /// one is None, `info` reads no bytes, and an object over the caller's cap is refused
    /// unread, after which the batch goes on with a new child.
    #[test]
    fn a_batch_answers_in_order_and_refuses_an_object_over_its_cap() {
        let (_dir, repo) = repo();
        let blobs: Vec<Vec<u8>> = (0..BATCH_AHEAD * 3 + 1).map(|k| format!("object {k}\n").into_bytes()).collect();
        let written: Vec<String> = blobs.iter().map(|b| repo.write_blob(b.clone()).unwrap()).collect();
        let mut ids = written.clone();
        ids.insert(7, "0".repeat(40));
        let mut batch = Batch::new(&repo);
        let mut got = Vec::new();
        batch
            .read_each(&ids, 64, |_, o| {
                got.push(o.map(|o| o.bytes));
                Ok::<(), GitError>(())
            })
            .unwrap();
        let mut want: Vec<Option<Vec<u8>>> = blobs.iter().cloned().map(Some).collect();
        want.insert(7, None);
        assert_eq!(got, want);
        assert_eq!(batch.children(), 1);

        assert_eq!(batch.info(&written[0]).unwrap(), Some(("blob".to_string(), blobs[0].len() as u64)));
        assert_eq!(batch.info(&"0".repeat(40)).unwrap(), None);
        let cap = blobs[10].len();
        assert_eq!(batch.read(&written[10], cap).unwrap().map(|o| o.bytes), Some(blobs[10].clone()));
        let over = batch.read(&written[10], cap - 1).unwrap_err();
        assert!(over.to_string().contains(&format!("over {}", cap - 1)), "{over}");
        assert_eq!(batch.read(&written[11], cap).unwrap().map(|o| o.bytes), Some(blobs[11].clone()));
        assert_eq!(batch.children(), 2);
    }

    #[test]
    fn remote_names_that_would_make_bad_ref_paths_are_refused() {
        assert!(remote_name_ok("origin"));
        assert!(remote_name_ok("team-1.backup_2"));
        // What `git remote add` accepts (git 2.47 run on each), and what it refuses.
        for good in ["team/origin", "a/b", "ü", "x%y", "a."] {
            assert!(remote_name_ok(good), "{good}");
        }
        for bad in ["", ".hidden", "-x", "a..b", "x.lock", "a b", "a//b", "a/", "/a", "a/.b", "a:b", "a@{1}"] {
            assert!(!remote_name_ok(bad), "{bad}");
        }
        assert_eq!(remote_part("origin"), "origin");
        assert_eq!(remote_part("team/origin"), "team%2Forigin");
        assert_ne!(remote_part("team%2Forigin"), remote_part("team/origin"));
        assert!(remote_name_ok(&"r".repeat(REMOTE_NAME_MAX)));
        assert!(!remote_name_ok(&"r".repeat(REMOTE_NAME_MAX + 1)));
    }
}
