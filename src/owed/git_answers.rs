//! What git answered about this working copy's own and unpushed branches, kept in the
//! working copy's local tier (`git-answers.json`) under a key made from the identity of
//! every file those answers come from and the environment git reads (docs/own-work.md,
//! "Git's answers, kept"). An unchanged repository answers a hook with a few `stat`s and
//! no git child; a change in any of those files makes a new key, and the next read asks
//! git again.
//!
//! The key is taken before git is asked, so a change that lands while git runs leaves
//! the answer under a key no later read makes. A repository whose answers abcd cannot key
//! from its files (reftable refs, config `include`s, more than [`KEY_FILES_MAX`] refs) keeps
//! the git route. A cache: written atomically, bounded, and read as absent when it is
//! missing, too big or not its shape.

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::{HandBack, OwnBranch};
use crate::journal::storage::{RealDisk, write_atomic};
use crate::verdict::stop::Owed;

/// The cache's file name in the local tier.
pub const GIT_ANSWERS_FILE: &str = "git-answers.json";
/// The cache is written and read up to this many bytes: [`ENTRIES_MAX`] readings of
/// `BRANCHES_EXAMINED_MAX` branches with 255-byte names fit.
pub const GIT_ANSWERS_MAX_BYTES: usize = 512 << 10;
/// Readings kept at once, newest first: the prompt's own-branch reading and the Stop's
/// owed reading (present and away) each keep theirs.
pub const ENTRIES_MAX: usize = 4;
/// Files and folders whose identity a key is made from, at most: past it (a repository
/// with that many loose refs or worktrees) the key is not made and git is asked.
pub const KEY_FILES_MAX: usize = 4_096;

/// What a reading was asked: part of its key.
pub(super) struct Asked<'a> {
    pub root: &'a Path,
    pub created_here: &'a [String],
    pub own_only: bool,
    /// While away: whether pushes are held, and the queued steps read for hand-backs.
    pub away: Option<(bool, &'a [String])>,
}

/// A reading git gave in full (no budget cut, no note), as kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Kept {
    pub items: Vec<Owed>,
    pub own: Vec<OwnBranch>,
    pub handed_back: Vec<HandBack>,
    /// Some branch is own only for a recent commit: the reading stands until the first such
    /// commit ages past `RECENT_OWN_COMMIT`, when git would answer otherwise.
    pub own_until: Option<Timestamp>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    key: String,
    decided_at: Timestamp,
    reading: Kept,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    entries: Vec<Entry>,
}

/// The key of `asked` in the repository around `asked.root` as its files stand now; None
/// when the answers cannot be keyed from files (see the module's doc).
pub(super) fn key(asked: &Asked<'_>) -> Option<String> {
    let mut h = blake3::Hasher::new();
    let mut field = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"abcd git answers 1");
    field(crate::platform::fs::path_bytes(asked.root));
    field(&[asked.own_only as u8]);
    field(&(asked.created_here.len() as u64).to_le_bytes());
    asked.created_here.iter().for_each(|b| field(b.as_bytes()));
    match asked.away {
        None => field(b"present"),
        Some((hold, queued)) => {
            field(&[b'a', hold as u8]);
            field(&(queued.len() as u64).to_le_bytes());
            queued.iter().for_each(|s| field(s.as_bytes()));
        }
    }
    // The environment git reads: its own variables (config, locations, the program's
    // behaviour), where it finds its global config, and which git PATH finds.
    let mut vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            let k = k.as_encoded_bytes();
            k.starts_with(b"GIT_") || k == b"HOME" || k == b"XDG_CONFIG_HOME" || k == b"PATH"
        })
        .collect();
    vars.sort();
    for (k, v) in &vars {
        field(k.as_encoded_bytes());
        field(v.as_encoded_bytes());
    }
    // Config given in the environment (`git -c`, GIT_CONFIG_COUNT) may include a file the
    // key does not name, as a config file may.
    if vars.iter().any(|(k, v)| {
        let k = k.as_encoded_bytes();
        (k == b"GIT_CONFIG_PARAMETERS" || k.starts_with(b"GIT_CONFIG_KEY_"))
            && v.as_encoded_bytes().to_ascii_lowercase().windows(7).any(|w| w == b"include")
    }) {
        return None;
    }
    let KeyFiles { files, configs } = key_files(asked.root)?;
    for path in &files {
        field(crate::platform::fs::path_bytes(path));
        match std::fs::symlink_metadata(path) {
            // A folder by what it is (device, inode, mode), not by its times: the git
            // folder's change with every index write, and a ref folder's entries are walked
            // one by one, so a ref added or removed changes the key's list itself.
            Ok(m) if m.is_dir() => field(&crate::platform::fs::folder_identity(&m)),
            Ok(m) => {
                field(&crate::platform::fs::change_identity(&m));
                // Git reads through a symlink (a loose ref, HEAD or a config file kept
                // elsewhere): what it names is keyed too, and one naming nothing as such.
                if m.file_type().is_symlink() {
                    match std::fs::metadata(path) {
                        Ok(target) => field(&crate::platform::fs::change_identity(&target)),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => field(b"names nothing"),
                        Err(_) => return None,
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => field(b"absent"),
            Err(_) => return None,
        }
    }
    for config in &configs {
        if includes_others(config)? {
            return None;
        }
    }
    Some(h.finalize().to_hex().to_string())
}

/// The files a key is made from, and of them the config files, looked through for
/// includes.
struct KeyFiles {
    files: Vec<PathBuf>,
    configs: Vec<PathBuf>,
}

/// The files git's answers come from: the worktree's link, HEAD and reflog, the refs
/// (loose, every folder and file, and packed), the worktrees' records, and every config
/// file. None for reftable refs, or past [`KEY_FILES_MAX`].
fn key_files(root: &Path) -> Option<KeyFiles> {
    let gitdir = crate::git::branch::git_dir(root)?;
    let common = crate::git::branch::common_dir(&gitdir);
    if common.join("reftable").exists() {
        return None;
    }
    let mut files = vec![root.join(".git")];
    for name in ["HEAD", "logs/HEAD", "config.worktree", "commondir", "gitdir"] {
        files.push(gitdir.join(name));
    }
    for name in ["HEAD", "config", "packed-refs", "shallow", "info/grafts", "worktrees"] {
        files.push(common.join(name));
    }
    walk(&common.join("refs"), &mut files)?;
    if let Ok(worktrees) = std::fs::read_dir(common.join("worktrees")) {
        for entry in worktrees {
            let dir = entry.ok()?.path();
            files.push(dir.clone());
            for name in ["HEAD", "gitdir", "commondir", "locked"] {
                files.push(dir.join(name));
            }
            if files.len() > KEY_FILES_MAX {
                return None;
            }
        }
    }
    let mut configs = config_files();
    files.extend(configs.iter().cloned());
    configs.extend([common.join("config"), gitdir.join("config.worktree")]);
    (files.len() <= KEY_FILES_MAX).then_some(KeyFiles { files, configs })
}

/// Every folder and file under `dir` (itself included), depth first; None past
/// [`KEY_FILES_MAX`] or when a folder cannot be read.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Option<()> {
    files.push(dir.to_path_buf());
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(()),
        Err(_) => return None,
    };
    let mut names: Vec<PathBuf> = entries.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>().ok()?;
    names.sort();
    for path in names {
        if files.len() >= KEY_FILES_MAX {
            return None;
        }
        // A symlinked folder is walked as git walks it, through the link.
        if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
            walk(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Some(())
}

/// The global and system config files git reads, as this process's environment names
/// them (git built with `/etc` as its system folder, as distributions build it).
fn config_files() -> Vec<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut files = Vec::new();
    match var("GIT_CONFIG_GLOBAL") {
        Some(global) => files.push(global),
        None => {
            if let Some(home) = var("HOME") {
                files.push(home.join(".gitconfig"));
            }
            match (var("XDG_CONFIG_HOME"), var("HOME")) {
                (Some(xdg), _) => files.push(xdg.join("git/config")),
                (None, Some(home)) => files.push(home.join(".config/git/config")),
                (None, None) => {}
            }
        }
    }
    // Git skips the system file only for a value it reads as true (`true`, `yes`, `on`
    // in any case, or a nonzero number); any other is keyed, which asks git no less often
    // than it needs.
    let nosystem = std::env::var_os("GIT_CONFIG_NOSYSTEM").is_some_and(|v| {
        let v = v.to_string_lossy().to_ascii_lowercase();
        matches!(v.as_str(), "true" | "yes" | "on") || v.parse::<i64>().is_ok_and(|n| n != 0)
    });
    if !nosystem {
        files.push(var("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    }
    files
}

/// Config files are read up to this many bytes to look for includes; a bigger one is
/// taken as including others.
const CONFIG_READ_MAX: u64 = 256 << 10;

/// Whether the config file at `path` may include another (an `[include]` or
/// `[includeIf …]` section), whose file the key does not name; Some(false) when it is
/// absent; None when it cannot be read.
fn includes_others(path: &Path) -> Option<bool> {
    // `GIT_CONFIG_GLOBAL=/dev/null` (no global config) is read as empty.
    if path == Path::new("/dev/null") {
        return Some(false);
    }
    match crate::platform::fs::read_regular(path, CONFIG_READ_MAX + 1) {
        Ok(bytes) => Some(bytes.len() as u64 > CONFIG_READ_MAX || bytes.to_ascii_lowercase().windows(8).any(|w| w == b"[include")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
        Err(_) => None,
    }
}

/// The reading kept in `tier` under `key`, when it stands at `now`: decided at or before
/// `now` (one from a clock set back does not), and before its `own_until`.
pub(super) fn kept(tier: &Path, key: &str, now: Timestamp) -> Option<Kept> {
    let file = read(tier)?;
    let entry = file.entries.into_iter().find(|e| e.key == key)?;
    let age = now.duration_since(entry.decided_at);
    let stands = !age.is_negative() && entry.reading.own_until.is_none_or(|until| now < until);
    #[cfg(test)]
    HITS.with(|hits| hits.set(hits.get() + u64::from(stands)));
    stands.then_some(entry.reading)
}

#[cfg(test)]
thread_local! {
    /// Readings this thread's reads took from the cache: a test's check that it ran the
    /// kept route and not only git's.
    pub(super) static HITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Keeps `reading` in `tier` under `key`, newest first, dropping the oldest past
/// [`ENTRIES_MAX`] and any other reading under the same key. A failure changes nothing
/// for the hook: the next one asks git again.
pub(super) fn keep(tier: &Path, key: &str, now: Timestamp, reading: Kept) {
    let mut file = read(tier).unwrap_or_default();
    file.entries.retain(|e| e.key != key);
    file.entries.insert(0, Entry { key: key.to_string(), decided_at: now, reading });
    file.entries.truncate(ENTRIES_MAX);
    let bytes = serde_json::to_vec(&file).expect("plain data serializes");
    if bytes.len() > GIT_ANSWERS_MAX_BYTES || !tier.is_dir() {
        return;
    }
    let _ = write_atomic(&RealDisk, &tier.join(GIT_ANSWERS_FILE), &bytes, false);
}

fn read(tier: &Path) -> Option<File> {
    super::read_cache(&tier.join(GIT_ANSWERS_FILE), GIT_ANSWERS_MAX_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh_in(dir: &Path, script: &str) -> String {
        let out = std::process::Command::new("/bin/sh")
            .args(["-ec", script])
            .current_dir(dir)
            .envs([("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1")])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A working copy `wc` in `dir` with one commit on `main`.
    fn repo(dir: &Path) -> PathBuf {
        sh_in(
            dir,
            "git init -q -b main wc && cd wc && git config user.name T && git config user.email me@example.com && echo a > f && git add f && git commit -qm a",
        );
        dir.join("wc")
    }

    /// Issue 37: a repository keeping its refs in reftable, which abcd does not read, is
    /// not keyed, and its hooks get git's answers every time, the same as a read with no
    /// tier (nothing is kept).
    #[test]
    fn a_reftable_repository_keeps_the_git_route_and_gets_gits_answers() {
        let dir = tempfile::tempdir().unwrap();
        sh_in(
            dir.path(),
            "git init -q --ref-format=reftable -b main wc && cd wc && git config user.name T && git config user.email me@example.com \
             && echo a > f && git add f && git commit -qm a && git switch -q -c feature && echo b > g && git add g && git commit -qm b",
        );
        let root = dir.path().join("wc");
        assert!(root.join(".git/reftable").is_dir(), "git made a reftable repository");
        assert_eq!(key(&Asked { root: &root, created_here: &[], own_only: true, away: None }), None);
        let tier = dir.path().join("tier");
        std::fs::create_dir(&tier).unwrap();
        let (created, now) = (vec!["feature".to_string()], crate::clock::wall_now());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let q = |tier| super::super::branches::BranchQuery {
            root: &root,
            created_here: &created,
            now,
            deadline,
            away: None,
            own_only: false,
            tier,
        };
        let (by_git, through_tier) = (super::super::branches::read(&q(None)), super::super::branches::read(&q(Some(&tier))));
        assert_eq!(through_tier.own.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(), ["feature"]);
        assert_eq!((through_tier.own, through_tier.items), (by_git.own, by_git.items));
        assert!(!tier.join(GIT_ANSWERS_FILE).exists(), "nothing is kept for a reftable repository");
    }

    /// KEY_FILES_MAX on both sides of its edge: a repository whose key names exactly that
    /// many files is keyed; one loose ref more and git is asked.
    #[test]
    fn a_key_names_at_most_key_files_max_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = repo(dir.path());
        let named = key_files(&root).expect("an ordinary repository is keyed").files.len();
        let heads = root.join(".git/refs/heads");
        let oid = std::fs::read_to_string(heads.join("main")).unwrap();
        for n in 0..KEY_FILES_MAX - named {
            std::fs::write(heads.join(format!("r{n:05}")), &oid).unwrap();
        }
        assert_eq!(key_files(&root).map(|k| k.files.len()), Some(KEY_FILES_MAX));
        assert!(key(&Asked { root: &root, created_here: &[], own_only: true, away: None }).is_some());
        std::fs::write(heads.join("one-more"), &oid).unwrap();
        assert!(key_files(&root).is_none());
        assert_eq!(key(&Asked { root: &root, created_here: &[], own_only: true, away: None }), None);
    }

    /// ENTRIES_MAX on both sides: that many readings are kept, newest first; one more
    /// drops the oldest; keeping under a kept key replaces its reading.
    #[test]
    fn at_most_entries_max_readings_are_kept_newest_first() {
        let tier = tempfile::tempdir().unwrap();
        let now: Timestamp = "2026-12-06T10:00:00Z".parse().unwrap();
        let reading =
            |name: &str| Kept { own: vec![OwnBranch { name: name.into(), head: "0".repeat(40), committed_at: None }], ..Kept::default() };
        for n in 0..ENTRIES_MAX {
            keep(tier.path(), &format!("k{n}"), now, reading(&format!("b{n}")));
        }
        let keys = |t: &Path| read(t).unwrap().entries.iter().map(|e| e.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(tier.path()), (0..ENTRIES_MAX).rev().map(|n| format!("k{n}")).collect::<Vec<_>>());
        assert_eq!(kept(tier.path(), "k0", now), Some(reading("b0")));
        keep(tier.path(), &format!("k{ENTRIES_MAX}"), now, reading("new"));
        assert_eq!(keys(tier.path()).len(), ENTRIES_MAX);
        assert_eq!(kept(tier.path(), "k0", now), None, "the oldest is dropped");
        keep(tier.path(), "k1", now, reading("again"));
        assert_eq!(keys(tier.path())[0], "k1");
        assert_eq!(keys(tier.path()).len(), ENTRIES_MAX);
        assert_eq!(kept(tier.path(), "k1", now), Some(reading("again")));
    }

    fn key_of(root: &Path) -> String {
        key(&Asked { root, created_here: &[], own_only: true, away: None }).expect("an ordinary repository is keyed")
    }

    #[test]
    fn a_branch_made_through_a_symlinked_refs_folder_changes_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let root = repo(dir.path());
        // git follows a symlinked folder under refs/ as any path does.
        sh_in(dir.path(), "mv wc/.git/refs/heads heads && ln -s ../../../heads wc/.git/refs/heads");
        let before = key_of(&root);
        sh_in(&root, "git branch other");
        assert!(sh_in(&root, "git for-each-ref --format='%(refname)'").contains("refs/heads/other"), "git sees the branch");
        assert_ne!(key_of(&root), before, "git's answers changed with the branch, so the key must");
    }

    #[test]
    fn a_symlinked_loose_ref_whose_target_changes_changes_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let root = repo(dir.path());
        // A loose ref that is a symlink to a file outside refs/ is read through it.
        sh_in(
            dir.path(),
            "git -C wc branch other && cp wc/.git/refs/heads/other other.ref && ln -sf ../../../../other.ref wc/.git/refs/heads/other",
        );
        let newer = sh_in(&root, "git commit -q --allow-empty -m b && git rev-parse HEAD");
        let before = key_of(&root);
        std::fs::write(dir.path().join("other.ref"), &newer).unwrap();
        assert_eq!(sh_in(&root, "git rev-parse other"), newer, "git reads the branch through the symlink");
        assert_ne!(key_of(&root), before, "the branch's head moved, so the key must change");
    }

    #[test]
    fn a_reading_owning_a_branch_for_a_recent_commit_ends_when_that_commit_ages_out() {
        use super::super::branches::{BranchQuery, read};
        let dir = tempfile::tempdir().unwrap();
        let root = repo(dir.path());
        let now = crate::clock::wall_now();
        // The branch's one commit of this checkout's is recent for five more minutes.
        let at = now.as_second() - super::super::RECENT_OWN_COMMIT.as_secs() as i64 + 5 * 60;
        sh_in(
            &root,
            &format!(
                "git switch -q -c feature && GIT_AUTHOR_DATE='@{at} +0000' GIT_COMMITTER_DATE='@{at} +0000' git commit -q --allow-empty -m mine"
            ),
        );
        let tier = dir.path().join("tier");
        std::fs::create_dir(&tier).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let ask = |now: Timestamp, tier: Option<&Path>| {
            read(&BranchQuery { root: &root, created_here: &[], now, deadline, away: None, own_only: true, tier }).own
        };
        assert_eq!(ask(now, Some(&tier)).len(), 1, "own for its recent commit, and kept");
        let later = now + jiff::SignedDuration::from_mins(6);
        assert_eq!(ask(later, None), vec![], "git: the commit is no longer recent");
        assert_eq!(ask(later, Some(&tier)), vec![], "the kept reading must not outlive the commit's recency");
    }
}
