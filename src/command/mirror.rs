//! `abcd mirror push|fetch|status|auto` (SPEC §12, journal-format/MIRROR.md): this
//! repository's journals carried to refs on its own remote and back, judged before they
//! are shown. One lock per repository in the home store keeps a machine's pushes and
//! fetches from moving the same refs at once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::CommandError;
use crate::event::Scope;
use crate::git::objects::{PushOutcome, PushedRef, Repo, remote_name_ok};
use crate::journal::lock::JournalLock;
use crate::journal::storage::RealDisk;
use crate::mirror::build::{Built, Claims, build};
use crate::mirror::judge::{Verdict, judge, judge_in};
use crate::mirror::{self, JOURNALS_PREFIX, SAVED_PREFIX, incoming_prefix, journal_ref, verified_prefix};
use crate::places::{self, Place};
use crate::refusal::{Refusal, RefusalKind as K};

/// The remote a mirror verb uses when none is named.
pub const DEFAULT_REMOTE: &str = "origin";
/// A verb a person ran waits this long for another push or fetch of the repository.
pub const MIRROR_LOCK_WAIT: Duration = Duration::from_secs(30);
/// The lock file, the auto setting and the records, in the repository's home folder.
pub const MIRROR_LOCK_FILE: &str = "mirror.lock";
/// What the last fetch from a remote found: `mirror-fetched-<remote>.json`.
pub const FETCH_RECORD_PREFIX: &str = "mirror-fetched-";
/// A saved-aside ref bringing more commits than this that no remote branch holds is not
/// scanned commit by commit; it stays on the machine.
pub const SAVED_COMMITS_SCANNED: usize = 64;
/// Saved-aside commits found clean by the scan, and how many are remembered at most.
pub const SAVED_CLEAN_FILE: &str = "mirror-saved-clean.json";
pub const SAVED_CLEAN_KEPT: usize = 10_000;
/// Records read back this far at most.
pub const RECORD_MAX_BYTES: u64 = 4 << 20;

/// The repository a mirror verb works on, learned from the folder it runs in.
pub struct MirrorPlace {
    pub repo: Repo,
    pub main_root: PathBuf,
    pub repository: String,
    pub repository_journal: PathBuf,
    pub home: PathBuf,
    pub machine: String,
}

impl MirrorPlace {
    /// The mirror's view of `place`: its repository, the repository journal and the
    /// repository's folder in the home store.
    pub fn of(place: &Place) -> Result<MirrorPlace, CommandError> {
        // A managed working copy is required, as for every verb.
        place.working_copy()?;
        let main_root = place.main_root()?;
        let (paths, scope) = place.repository()?;
        let Scope::Repository { root_commit } = scope else { unreachable!("the repository journal's scope names the repository") };
        Ok(MirrorPlace {
            repo: Repo::at(&main_root),
            main_root,
            home: place.repository_home(&root_commit)?,
            repository: root_commit,
            repository_journal: paths.journal,
            machine: places::machine_name(),
        })
    }

    /// The repository's mirror lock, waited for up to `wait`.
    fn lock(&self, wait: Duration) -> Result<JournalLock, CommandError> {
        crate::platform::fs::create_dir_all(&self.home, 0o700).map_err(CommandError::failed)?;
        JournalLock::acquire(&self.home.join(MIRROR_LOCK_FILE), wait).map_err(|e| {
            CommandError::from(
                Refusal::new(K::MirrorBusy, "mirror", format!("another push or fetch of this repository's mirror is running ({e})"))
                    .instead("run this again when it ends"),
            )
        })
    }

    /// Checks `remote` names a remote of this repository.
    fn remote(&self, remote: &str) -> Result<String, CommandError> {
        checked_remote_name(remote)?;
        if !self.repo.has_remote(remote).map_err(CommandError::failed)? {
            // A remote's name passes git's rules yet may be a pasted token: shown only when
            // it does not look like a secret.
            let shown = crate::secrets::shown_name(remote);
            let add = if crate::secrets::scan(remote).is_some() {
                "add one with `git remote add <name> <url>`".to_string()
            } else {
                format!("add one with `git remote add {remote} <url>`")
            };
            return Err(Refusal::new(K::NotFound, "mirror", format!("this repository has no remote named {shown}"))
                .instead(format!("{add}, or name another with --remote"))
                .into());
        }
        Ok(remote.to_string())
    }

    /// Each journal of this repository on this machine and the path it is shown by; no
    /// file for a working copy whose path carries a secret (its journal is not read).
    fn journals(&self) -> Result<Vec<(Option<PathBuf>, String)>, CommandError> {
        let mut found = Vec::new();
        let worktrees = self.repo.worktrees().map_err(CommandError::failed)?;
        for root in worktrees {
            match Place::at(&root).working_copy() {
                Ok((paths, _)) if paths.journal.exists() => found.push((Some(paths.journal), root.display().to_string())),
                // A journal made before the rule on paths: neither read nor shown.
                Err(places::PlaceError::PathCarriesSecret { .. }) if root.join(places::LOCAL_TIER).join(places::JOURNAL_FILE).exists() => {
                    found.push((None, PATH_NOT_SHOWN.to_string()))
                }
                _ => {}
            }
        }
        if self.repository_journal.exists() {
            found.push((Some(self.repository_journal.clone()), self.main_root.display().to_string()));
        }
        Ok(found)
    }
}

/// `remote` when abcd accepts it as a remote's name (it becomes part of local ref names).
fn checked_remote_name(remote: &str) -> Result<String, CommandError> {
    if remote_name_ok(remote) {
        return Ok(remote.to_string());
    }
    Err(Refusal::new(
        K::BadName,
        "mirror",
        format!(
            "{} is not a remote name abcd accepts (a name git accepts for a remote, not starting with `-`, at most {} bytes)",
            crate::secrets::shown_name(remote),
            crate::git::objects::REMOTE_NAME_MAX
        ),
    )
    .instead("name another remote from `git remote`, or give this one a shorter name with `git remote rename <name> <new name>`")
    .into())
}

/// What a push did with one journal.
#[derive(Clone, Debug, Serialize)]
pub struct JournalPushed {
    pub journal_id: Option<String>,
    pub scope: Option<Scope>,
    pub path: String,
    pub outcome: &'static str,
    pub head_seq: Option<u64>,
    pub new_events: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Seqs this push carried as redaction records (MIRROR.md §11).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RefPushed {
    #[serde(rename = "ref")]
    pub ref_name: String,
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PushReport {
    pub remote: String,
    pub journals: Vec<JournalPushed>,
    pub saved: Vec<RefPushed>,
}

impl PushReport {
    pub fn all_pushed(&self) -> bool {
        self.journals.iter().all(|j| j.outcome != "refused" && j.outcome != "partial")
            && self.saved.iter().all(|s| s.outcome != "refused" && s.outcome != "held")
    }
}

/// `abcd mirror push`: builds each journal's next mirror commit, pushes them and the
/// saved-aside refs in one `git push`, and moves a local ref only where the remote took it.
pub fn push(place: &MirrorPlace, remote: &str, lock_wait: Duration) -> Result<PushReport, CommandError> {
    let remote = place.remote(remote)?;
    let lock = place.lock(lock_wait)?;
    push_locked(place, remote, &lock)
}

/// The push itself, with the repository's mirror lock held (the guard proves it).
fn push_locked(place: &MirrorPlace, remote: String, _held: &JournalLock) -> Result<PushReport, CommandError> {
    let mut journals = Vec::new();
    let mut built: Vec<(Built, PathBuf, String)> = Vec::new();
    for (path, shown) in place.journals()? {
        match build_one(place, path.as_deref(), &shown) {
            Ok(Some(b)) => built.extend(path.map(|path| (b, path, shown))),
            Ok(None) => {}
            Err((journal_id, why)) => journals.push(JournalPushed {
                journal_id,
                scope: None,
                path: shown,
                outcome: "refused",
                head_seq: None,
                new_events: 0,
                why: Some(why),
                redacted: Vec::new(),
            }),
        }
    }
    // Saved-aside work holds files nobody scanned when they were saved: one that looks like
    // it holds a secret keeps its whole ref on this machine.
    let mut saved = Vec::new();
    let mut held_saved = Vec::new();
    let clean_record = place.home.join(SAVED_CLEAN_FILE);
    let mut clean: std::collections::BTreeSet<String> = read_record(&clean_record).unwrap_or_default();
    let clean_before = clean.len();
    for (r, commit) in place.repo.refs_under(SAVED_PREFIX).map_err(CommandError::failed)? {
        match saved_secret(place, &commit, &mut clean) {
            Ok(None) => saved.push(r),
            Ok(Some(why)) => held_saved.push(RefPushed { ref_name: r, outcome: "held", why: Some(why) }),
            Err(e) => held_saved.push(RefPushed {
                ref_name: r,
                outcome: "held",
                why: Some(format!("its files could not be read to scan them ({e})")),
            }),
        }
    }
    if clean.len() != clean_before {
        // A cache: a failed write only means the next push scans those commits again.
        let _ = write_record(&clean_record, &clean);
    }
    let mut refspecs: Vec<String> = built.iter().map(|(b, _, _)| format!("{}:{}", b.commit, journal_ref(&b.journal_id))).collect();
    refspecs.extend(saved.iter().map(|r| format!("{r}:{r}")));
    let answers = if refspecs.is_empty() { Vec::new() } else { place.repo.push(&remote, &refspecs).map_err(CommandError::failed)? };
    for (b, path, shown) in built {
        let answer = answer_for(&answers, &journal_ref(&b.journal_id));
        let (b, answer) = match answer.map(|a| a.outcome) {
            Some(PushOutcome::NotFastForward) => match adopt_and_retry(place, &remote, &b, &path, &shown) {
                Ok(Some(again)) => again,
                Ok(None) => (b, answer.cloned()),
                Err(why) => {
                    journals.push(refused(&b, shown, why));
                    continue;
                }
            },
            _ => (b, answer.cloned()),
        };
        journals.push(settle(place, b, shown, answer.as_ref()));
    }
    let saved = saved
        .into_iter()
        .map(|r| {
            let a = answer_for(&answers, &r);
            let (outcome, why) = match a.map(|a| a.outcome) {
                Some(PushOutcome::Updated) => ("pushed", None),
                Some(PushOutcome::UpToDate) => ("up_to_date", None),
                Some(_) => ("refused", a.map(|a| a.summary.clone())),
                None => ("refused", Some("the remote said nothing of it".into())),
            };
            RefPushed { ref_name: r, outcome, why }
        })
        .chain(held_saved)
        .collect();
    Ok(PushReport { remote, journals, saved })
}

/// A journal's next mirror commit, or its id (when known) and why it cannot be pushed.
/// A saved-aside file over this size is not scanned: secrets sit in small files (configs,
/// `.env`), and reading every large data file on each push would cost more than it finds.
pub const SAVED_FILE_SCAN_BYTES: usize = 4 << 20;
/// A saved-aside commit's own text (headers and message), at most, as the scan reads it;
/// a longer one fails the read and the saved work stays on this machine.
pub const SAVED_COMMIT_SCAN_BYTES: usize = 64 << 10;

/// The first thing a saved-aside ref would bring to the remote that looks like it holds a
/// secret, in words (the kind, and a file's path when the path is clean; never the value):
/// a commit's own text (message, author, committer), a file's name, a file's contents. Commits found clean go into `clean` (kept in
/// the repository's home folder by the caller), so each is read once.
fn saved_secret(
    place: &MirrorPlace,
    commit: &str,
    clean: &mut std::collections::BTreeSet<String>,
) -> Result<Option<String>, crate::git::objects::GitError> {
    if clean.contains(commit) {
        return Ok(None);
    }
    // The saved commit and the lane's commits under it that no remote branch holds: all of
    // them reach the remote with the ref.
    let unpushed = place.repo.commits_not_on_remotes(commit, SAVED_COMMITS_SCANNED + 1)?;
    if unpushed.len() > SAVED_COMMITS_SCANNED {
        return Ok(Some(format!(
            "it brings more than {SAVED_COMMITS_SCANNED} commits no remote branch holds, more than the scan reads; the saved work stays on this machine"
        )));
    }
    // Every commit's own text (its message, its author and committer) reaches the remote.
    let ids: Vec<&str> = unpushed.iter().map(String::as_str).collect();
    for (commit, object) in unpushed.iter().zip(place.repo.read_objects(&ids, SAVED_COMMITS_SCANNED * SAVED_COMMIT_SCAN_BYTES)?) {
        let text = object.map(|o| String::from_utf8_lossy(&o.bytes).into_owned()).unwrap_or_default();
        if let Some(kind) = crate::secrets::scan(&text) {
            let short = commit.get(..12).unwrap_or(commit);
            return Ok(Some(format!(
                "the message or author of its commit {short} looks like it holds a {}; the saved work stays on this machine",
                kind.name()
            )));
        }
    }
    let changed = unpushed.iter().map(|c| place.repo.changed_entries(c)).collect::<Result<Vec<_>, _>>()?;
    for (path, blob) in changed.into_iter().flatten() {
        // A name reaches the remote as surely as the contents.
        if let Some(kind) = crate::secrets::scan(&path) {
            return Ok(Some(format!(
                "one of its files has a name that looks like it holds a {} (the name is not shown); the saved work stays on this machine",
                kind.name()
            )));
        }
        let Some(blob) = blob else { continue };
        let bytes = match place.repo.read_blob(&blob, SAVED_FILE_SCAN_BYTES) {
            Ok(b) => b,
            // Over the scan bound: a data file or a build output, not where a secret is kept.
            Err(crate::git::objects::GitError::Unreadable { .. }) => continue,
            Err(e) => return Err(e),
        };
        if let Some(kind) = crate::secrets::scan(&String::from_utf8_lossy(&bytes)) {
            return Ok(Some(format!("its file {path} looks like it holds a {}; the saved work stays on this machine", kind.name())));
        }
    }
    if clean.len() < SAVED_CLEAN_KEPT {
        clean.insert(commit.to_string());
    }
    Ok(None)
}

/// How a push names a working copy whose path carries a secret.
pub const PATH_NOT_SHOWN: &str = "(a working copy whose path looks like a secret, not shown)";

fn build_one(place: &MirrorPlace, path: Option<&Path>, shown: &str) -> Result<Option<Built>, (Option<String>, String)> {
    let Some(path) = path else {
        return Err((
            None,
            "its path carries what looks like a secret, and a mirror names each journal's path on the remote; move the working copy to a folder whose path carries none (`git worktree move`) and push again".to_string(),
        ));
    };
    let claims = Claims { repository: &place.repository, machine: &place.machine, path: shown };
    build(&place.repo, &RealDisk, path, &claims).map_err(|e| (e.journal_id().map(str::to_string), e.to_string()))
}

fn answer_for<'a>(answers: &'a [PushedRef], remote_ref: &str) -> Option<&'a PushedRef> {
    answers.iter().find(|a| a.remote_ref == remote_ref)
}

fn refused(b: &Built, path: String, why: String) -> JournalPushed {
    JournalPushed {
        journal_id: Some(b.journal_id.clone()),
        scope: Some(b.scope.clone()),
        path,
        outcome: "refused",
        head_seq: Some(b.head_seq),
        new_events: 0,
        why: Some(why),
        redacted: Vec::new(),
    }
}

/// Moves the local ref to a commit the remote took; a refusal leaves it where it was.
fn settle(place: &MirrorPlace, b: Built, path: String, answer: Option<&PushedRef>) -> JournalPushed {
    let outcome = match answer.map(|a| a.outcome) {
        Some(PushOutcome::Updated) => "pushed",
        Some(PushOutcome::UpToDate) => "up_to_date",
        Some(_) | None => {
            let why = answer.map_or("the remote said nothing of it".to_string(), |a| format!("the remote refused it: {}", a.summary));
            return refused(&b, path, why);
        }
    };
    if b.parent.as_deref() != Some(b.commit.as_str())
        && let Err(e) = place.repo.move_ref(&journal_ref(&b.journal_id), &b.commit, b.parent.as_deref())
    {
        return refused(&b, path, format!("the remote took it, but the local ref could not be moved ({e}); the next push puts it right"));
    }
    let outcome = if outcome == "up_to_date" && b.new_events > 0 { "pushed" } else { outcome };
    // Lines held back (damage, or what looks like a secret) make the push partial.
    let outcome = if b.stopped_at.is_some() { "partial" } else { outcome };
    JournalPushed {
        journal_id: Some(b.journal_id),
        scope: Some(b.scope),
        path,
        outcome,
        head_seq: Some(b.head_seq),
        new_events: b.new_events,
        why: b.stopped_at,
        redacted: b.redacted,
    }
}

/// A push refused as not a fast-forward: when the remote's commit is one this machine
/// pushed and did not record (a push killed after the remote took it), it becomes the
/// local ref and the push is made once more. None when it is someone else's history.
fn adopt_and_retry(
    place: &MirrorPlace,
    remote: &str,
    b: &Built,
    path: &Path,
    shown: &str,
) -> Result<Option<(Built, Option<PushedRef>)>, String> {
    let id = &b.journal_id;
    let incoming = format!("{}{id}", incoming_prefix(remote));
    place.repo.fetch(remote, &[format!("+{}:{incoming}", journal_ref(id))]).map_err(|e| e.to_string())?;
    let Some(theirs) = place.repo.read_ref(&incoming).map_err(|e| e.to_string())? else { return Ok(None) };
    let ours = mirror::read_commit(&place.repo, &b.commit).map_err(|e| e.to_string())?;
    let descends = match &b.parent {
        Some(p) => place.repo.is_ancestor(p, &theirs).map_err(|e| e.to_string())?,
        None => true,
    };
    let not_ours = || {
        format!(
            "the remote's {} holds a history this machine's journal does not; it is left as it is (run `abcd mirror fetch` to see what it holds)",
            journal_ref(id)
        )
    };
    if !descends || !is_prefix_of(place, &theirs, &ours).map_err(|e| e.to_string())? {
        return Err(not_ours());
    }
    // Held to MIRROR.md §7 as a fetcher would hold it, from the local ref as the verified copy:
    // a forged child must not become the local ref.
    let judged = judge(&place.repo, id, &theirs, b.parent.as_deref(), &place.repository).map_err(|e| e.to_string())?;
    if !judged.verdict.is_ok() {
        return Err(format!(
            "the remote's {} does not verify ({}: {}); it is left as it is, and so is the local ref",
            journal_ref(id),
            judged.verdict.word(),
            reason_shown(&judged.verdict.why().unwrap_or_default())
        ));
    }
    place.repo.move_ref(&journal_ref(id), &theirs, b.parent.as_deref()).map_err(|e| e.to_string())?;
    let Some(again) = build_one(place, Some(path), shown).map_err(|(_, why)| why)? else { return Ok(None) };
    let answers = place.repo.push(remote, &[format!("{}:{}", again.commit, journal_ref(id))]).map_err(|e| e.to_string())?;
    let answer = answer_for(&answers, &journal_ref(id)).cloned();
    Ok(Some((again, answer)))
}

/// True when every segment of `theirs` is one of `ours` by id, or (its last) a byte
/// prefix of ours of the same name: its lines are a prefix of our journal's.
fn is_prefix_of(place: &MirrorPlace, theirs: &str, ours: &mirror::MirrorCommit) -> Result<bool, crate::git::objects::GitError> {
    let Ok(t) = mirror::read_commit(&place.repo, theirs) else { return Ok(false) };
    if t.meta.journal_id != ours.meta.journal_id || t.segments.len() > ours.segments.len() {
        return Ok(false);
    }
    for (k, (a, b)) in t.segments.iter().zip(&ours.segments).enumerate() {
        if a.name != b.name {
            return Ok(false);
        }
        if a.id == b.id {
            continue;
        }
        let last = k + 1 == t.segments.len();
        let (theirs_bytes, ours_bytes) =
            (place.repo.read_blob(&a.id, mirror::SEGMENT_MAX_BYTES)?, place.repo.read_blob(&b.id, mirror::SEGMENT_MAX_BYTES)?);
        if !last || !ours_bytes.starts_with(&theirs_bytes) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What a fetch found for one mirrored journal.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct JournalFetched {
    pub journal_id: String,
    pub verdict: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Redaction records (MIRROR.md §11) among the lines this fetch verified, and the
    /// first one's seq: lines kept on the machine that wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_redacted_seq: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FetchReport {
    pub remote: String,
    /// When the fetch ran (RFC 3339, UTC).
    pub fetched_at: String,
    pub journals: Vec<JournalFetched>,
}

impl FetchReport {
    pub fn all_verified(&self) -> bool {
        self.journals.iter().all(|j| j.verdict == "verified" || j.verdict == "unchanged")
    }
}

/// Another machine's claim (its name, a path) as shown: re-scanned for secrets like every
/// text folded from a mirror.
fn claim_shown(text: &str) -> String {
    if crate::secrets::scan(text).is_some() { "(not shown: it looks like a secret)".to_string() } else { text.to_string() }
}

/// A verdict's reason as shown: it may quote bytes of the mirror (a line's fault, a name),
/// so one the secret scan flags is replaced whole.
fn reason_shown(why: &str) -> String {
    if crate::secrets::scan(why).is_some() {
        "the mirror breaks a rule of MIRROR.md §7, and the words that say where quote what looks like a secret, so they are not shown"
            .to_string()
    } else {
        why.to_string()
    }
}

/// A journal id as a ref's last part: 32 lowercase hex digits.
fn journal_id_ok(id: &str) -> bool {
    id.len() == crate::journal::genesis::JOURNAL_ID_HEX_DIGITS && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `abcd mirror fetch`: fetches every mirror of the remote, judges each against its last
/// verified copy, moves the verified ref of those that verify, and records what it found.
pub fn fetch(place: &MirrorPlace, remote: &str, now: jiff::Timestamp) -> Result<FetchReport, CommandError> {
    let remote = place.remote(remote)?;
    let _lock = place.lock(MIRROR_LOCK_WAIT)?;
    let (incoming_p, verified_p) = (incoming_prefix(&remote), verified_prefix(&remote));
    let refspecs =
        vec![format!("+{JOURNALS_PREFIX}*:{incoming_p}*"), format!("+{SAVED_PREFIX}*:{}*", mirror::remote_saved_prefix(&remote))];
    place.repo.fetch(&remote, &refspecs).map_err(|e| CommandError::Failed(format!("fetching from {remote} failed: {e}")))?;
    let incoming = place.repo.typed_refs_under(&incoming_p).map_err(CommandError::failed)?;
    let verified = place.repo.refs_under(&verified_p).map_err(CommandError::failed)?;
    // A ref naming anything but a commit (a tree, a blob) is no mirror commit: named, not read.
    let incoming: std::collections::BTreeMap<String, (String, String)> =
        incoming.into_iter().filter_map(|(r, c, kind)| r.strip_prefix(&incoming_p).map(|id| (id.to_string(), (c, kind)))).collect();
    let verified: std::collections::BTreeMap<String, String> =
        verified.into_iter().filter_map(|(r, c)| r.strip_prefix(&verified_p).map(|id| (id.to_string(), c))).collect();
    let ids: Vec<&String> = incoming.keys().chain(verified.keys()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let own = own_journals(place)?;
    // This machine's own mirrors, listed once for every journal's rule 6.
    let own_refs: std::collections::BTreeMap<String, String> = place
        .repo
        .refs_under(JOURNALS_PREFIX)
        .map_err(CommandError::failed)?
        .into_iter()
        .filter_map(|(r, c)| r.strip_prefix(JOURNALS_PREFIX).map(|id| (id.to_string(), c)))
        .collect();
    // Mirrors are judged a few at a time, each thread reading every object it needs
    // through one `git cat-file --batch-command` child of its own.
    let next = std::sync::atomic::AtomicUsize::new(0);
    type Found = Option<Result<(JournalFetched, Option<RefMove>), CommandError>>;
    let found: std::sync::Mutex<Vec<Found>> = std::sync::Mutex::new((0..ids.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..FETCH_PARALLEL.min(ids.len()) {
            scope.spawn(|| {
                let mut batch = crate::git::objects::Batch::new(&place.repo);
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(id) = ids.get(k) else { break };
                    let mine =
                        Mine { local: own.get(id.as_str()).map(PathBuf::as_path), own_ref: own_refs.get(id.as_str()).map(String::as_str) };
                    let one =
                        fetched_one(place, &mut batch, id, incoming.get(*id), verified.get(*id).map(String::as_str), &verified_p, mine);
                    found.lock().unwrap_or_else(|p| p.into_inner())[k] = Some(one);
                }
            });
        }
    });
    let judged = found
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|f| f.expect("every id was judged"))
        .collect::<Result<Vec<_>, _>>()?;
    let (journals, moves): (Vec<JournalFetched>, Vec<Option<RefMove>>) = judged.into_iter().unzip();
    // Every verified ref moves in one transaction, each only from the copy it was judged
    // against.
    let moves: Vec<RefMove> = moves.into_iter().flatten().collect();
    place.repo.move_refs(&moves).map_err(CommandError::failed)?;
    let report = FetchReport { remote, fetched_at: crate::journal::format::format_time(now), journals };
    write_record(&fetch_record_path(&place.home, &report.remote), &report)?;
    Ok(report)
}

/// This machine's journals of this repository by id, each with its file: a fetch holds a
/// mirror of one of them to the lines this machine wrote.
fn own_journals(place: &MirrorPlace) -> Result<std::collections::BTreeMap<String, PathBuf>, CommandError> {
    let mut own = std::collections::BTreeMap::new();
    for (path, _) in place.journals()? {
        let Some(path) = path else { continue };
        let Ok(file) = crate::journal::verify::open_trusted(&RealDisk, &path) else { continue };
        if let Ok(genesis) = crate::journal::append::read_genesis(file.as_ref(), &path) {
            own.insert(genesis.journal_id, path);
        }
    }
    Ok(own)
}

/// Mirrors judged at once by a fetch, each on a thread of its own with its git children.
pub const FETCH_PARALLEL: usize = 4;

/// A verified ref to move: its name, the commit that verified, the copy it was judged
/// against (None: there was none).
type RefMove = (String, String, Option<String>);

/// What this machine holds of a journal it writes: the journal file, and the commit its
/// own mirror ref names.
#[derive(Clone, Copy)]
struct Mine<'a> {
    local: Option<&'a Path>,
    own_ref: Option<&'a str>,
}

/// One mirror judged through `batch`: what to say of it, and the verified ref's move when
/// it verified.
fn fetched_one(
    place: &MirrorPlace,
    batch: &mut crate::git::objects::Batch<'_>,
    id: &str,
    incoming: Option<&(String, String)>,
    v: Option<&str>,
    verified_p: &str,
    mine: Mine<'_>,
) -> Result<(JournalFetched, Option<RefMove>), CommandError> {
    let entry = |verdict: &str, why: Option<String>| JournalFetched {
        journal_id: id.to_string(),
        verdict: verdict.into(),
        machine: None,
        path: None,
        head_seq: None,
        why,
        redacted: None,
        first_redacted_seq: None,
    };
    if !journal_id_ok(id) {
        let mut e = entry("rewritten", Some("the ref's name is not a journal id (32 hex digits); it is not read".into()));
        e.journal_id = crate::secrets::shown_name(id);
        return Ok((e, None));
    }
    let Some((c, kind)) = incoming else {
        let mut gone = entry(Verdict::Gone.word(), Verdict::Gone.why());
        if let Some(kept) = v.and_then(|v| mirror::read_commit_in(batch, v).ok()) {
            (gone.machine, gone.path, gone.head_seq) =
                (Some(claim_shown(&kept.meta.machine)), Some(claim_shown(&kept.meta.path)), Some(kept.meta.head_seq));
        }
        return Ok((gone, None));
    };
    if kind != "commit" {
        let why = format!("the ref names a {}, not a mirror commit", crate::secrets::shown_name(kind));
        return Ok((entry("rewritten", Some(why)), None));
    }
    let unreadable = |e: crate::git::objects::GitError| {
        let why = format!("its objects could not be read ({e}); nothing is concluded and the verified copy stays");
        entry("unreadable", Some(why))
    };
    let mut judged = match judge_in(batch, id, c, v, &place.repository) {
        Ok(j) => j,
        Err(e) => return Ok((unreadable(e), None)),
    };
    // The writer knows its own lines (MIRROR.md §7 rule 6).
    if judged.verdict == Verdict::Verified
        && let Some(m) = &judged.mirror
    {
        match mirror::own::never_written_here(&place.repo, &RealDisk, mine.local, mine.own_ref, id, m) {
            Ok(None) => {}
            Ok(Some(why)) => judged.verdict = Verdict::Forged(why),
            Err(e) => return Ok((unreadable(e), None)),
        }
    }
    let moved = (judged.verdict == Verdict::Verified).then(|| (format!("{verified_p}{id}"), c.clone(), v.map(str::to_string)));
    // The claims of what is shown: the new commit when it verified, else the kept copy's.
    // A mirror never verified still names who claims it (machine, path), never a head.
    let (shown, head) = match (&judged.verdict, v) {
        (Verdict::Verified, _) => (judged.mirror.clone(), true),
        (_, Some(v)) => (mirror::read_commit_in(batch, v).ok(), true),
        (_, None) => (judged.mirror.clone(), false),
    };
    let fetched = JournalFetched {
        journal_id: id.to_string(),
        verdict: judged.verdict.word().into(),
        machine: shown.as_ref().map(|m| claim_shown(&m.meta.machine)),
        path: shown.as_ref().map(|m| claim_shown(&m.meta.path)),
        head_seq: shown.as_ref().filter(|_| head).map(|m| m.meta.head_seq),
        why: judged.verdict.why().map(|w| reason_shown(&w)),
        redacted: (judged.verdict == Verdict::Verified && judged.redacted.0 > 0).then_some(judged.redacted.0),
        first_redacted_seq: judged.redacted.1.filter(|_| judged.verdict == Verdict::Verified),
    };
    Ok((fetched, moved))
}

/// The record of the last fetch from `remote` (a name `remote_name_ok` accepted).
fn fetch_record_path(home: &Path, remote: &str) -> PathBuf {
    home.join(format!("{FETCH_RECORD_PREFIX}{}.json", crate::git::objects::remote_part(remote)))
}

/// Writes a record beside the repository journal, atomically.
fn write_record<T: Serialize>(path: &Path, value: &T) -> Result<(), CommandError> {
    let bytes = serde_json::to_vec_pretty(value).expect("records serialize");
    crate::journal::storage::write_atomic(&RealDisk, path, &bytes, false)
        .map_err(|e| CommandError::Failed(format!("writing {} failed: {e}", path.display())))
}

/// A record read back, or None when it is absent or not readable as one.
fn read_record<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let bytes = crate::platform::fs::read_regular(path, RECORD_MAX_BYTES).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// `abcd mirror auto`'s setting, in the repository's home folder.
pub const AUTO_FILE: &str = "mirror-auto.json";
/// When the last background push was started (its mtime is the time).
pub const AUTO_STAMP_FILE: &str = "mirror-auto.stamp";
/// Where a background push's stderr goes, and the size past which it starts over.
pub const BACKGROUND_LOG_FILE: &str = "mirror-push.log";
pub const BACKGROUND_LOG_MAX_BYTES: u64 = 64 << 10;
/// What the last background push did.
pub const LAST_PUSH_FILE: &str = "mirror-last-push.json";
/// Background pushes start at most this often unless `--every` says otherwise...
pub const AUTO_EVERY_DEFAULT_SECONDS: u64 = 300;
/// ...and never more often than this, nor less often than once a day.
pub const AUTO_EVERY_MIN_SECONDS: u64 = 10;
pub const AUTO_EVERY_MAX_SECONDS: u64 = 86_400;
/// A setting file is read this far at most.
const AUTO_FILE_MAX_BYTES: u64 = 4096;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AutoSetting {
    pub on: bool,
    pub remote: String,
    pub every_seconds: u64,
}

impl Default for AutoSetting {
    fn default() -> AutoSetting {
        AutoSetting { on: false, remote: DEFAULT_REMOTE.to_string(), every_seconds: AUTO_EVERY_DEFAULT_SECONDS }
    }
}

/// What the last background push did, as `mirror status` shows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct LastPush {
    pub at: String,
    pub remote: String,
    pub ok: bool,
    pub summary: String,
}

/// `abcd mirror auto on|off`: stores the setting (checking the remote when turning on).
pub fn set_auto(place: &MirrorPlace, on: bool, remote: &str, every_seconds: u64) -> Result<AutoSetting, CommandError> {
    if !(AUTO_EVERY_MIN_SECONDS..=AUTO_EVERY_MAX_SECONDS).contains(&every_seconds) {
        return Err(Refusal::new(
            K::BadValue,
            "mirror auto",
            format!("--every {every_seconds} is outside {AUTO_EVERY_MIN_SECONDS}..={AUTO_EVERY_MAX_SECONDS} seconds"),
        )
        .instead("name an interval inside it")
        .into());
    }
    // Turning off needs no remote to exist, but the name is held to the same rule.
    let remote = if on { place.remote(remote)? } else { checked_remote_name(remote)? };
    let setting = AutoSetting { on, remote, every_seconds };
    crate::platform::fs::create_dir_all(&place.home, 0o700).map_err(CommandError::failed)?;
    write_record(&place.home.join(AUTO_FILE), &setting)?;
    Ok(setting)
}

pub fn auto_setting(home: &Path) -> AutoSetting {
    crate::platform::fs::read_regular(&home.join(AUTO_FILE), AUTO_FILE_MAX_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// What a hook calls after it ran: when auto push is on and the interval has passed since
/// the last one started, starts `abcd mirror push --background` detached and returns. It
/// reads two small files and starts at most one process; it never waits for the push. A
/// push that cannot start is recorded for `mirror status`, not told to the host.
pub fn push_in_background_if_due(place: &Place, now: jiff::Timestamp) {
    // Outside a managed checkout, or before the repository's record is known, nothing is due.
    if place.working_copy().is_err() {
        return;
    }
    let Ok((_, Scope::Repository { root_commit })) = place.repository() else { return };
    let Ok(home) = place.repository_home(&root_commit) else { return };
    let setting = auto_setting(&home);
    if !setting.on {
        return;
    }
    let stamp = home.join(AUTO_STAMP_FILE);
    let last = std::fs::symlink_metadata(&stamp).and_then(|m| m.modified()).ok().and_then(|t| jiff::Timestamp::try_from(t).ok());
    // A stamp from the future (a clock set back) does not hold pushes off forever.
    let due = last.is_none_or(|t| now.as_second() - t.as_second() >= setting.every_seconds as i64 || t > now);
    if !due {
        return;
    }
    let started = crate::journal::storage::write_atomic(&RealDisk, &stamp, b"", false)
        .map_err(|e| format!("the auto-push stamp cannot be written: {e}"))
        .and_then(|()| std::env::current_exe().map_err(|e| format!("abcd's own path is unknown: {e}")))
        .and_then(|exe| {
            let args: Vec<std::ffi::OsString> =
                ["mirror", "push", "--background", "--remote", setting.remote.as_str()].iter().map(Into::into).collect();
            // The push prints nothing but a failure's one line; the log starts over past its cap.
            let log = home.join(BACKGROUND_LOG_FILE);
            if std::fs::symlink_metadata(&log).is_ok_and(|m| m.len() > BACKGROUND_LOG_MAX_BYTES) {
                let _ = crate::journal::storage::write_atomic(&RealDisk, &log, b"", false);
            }
            crate::platform::process::spawn_detached(&exe, &args, place.cwd(), &log, &log, &[])
                .map_err(|e| format!("the background push could not start: {e}"))
        });
    if let Err(why) = started {
        let at = crate::journal::format::format_time(now);
        let _ = write_record(&home.join(LAST_PUSH_FILE), &LastPush { at, remote: setting.remote, ok: false, summary: why });
    }
}

/// The background push: takes the lock only if free, pushes, and records what it did.
pub fn push_in_background(place: &MirrorPlace, remote: &str, now: jiff::Timestamp) -> Result<PushReport, CommandError> {
    // Detached from every hook, it may wait its turn behind another push or a fetch (which
    // pushes nothing); a lock still held after the wait is recorded like any failure.
    let result = place.lock(MIRROR_LOCK_WAIT).and_then(|lock| place.remote(remote).and_then(|remote| push_locked(place, remote, &lock)));
    let (ok, summary) = match &result {
        Ok(r) => (r.all_pushed(), push_summary(r)),
        Err(e) => (false, e.to_string()),
    };
    let record = LastPush { at: crate::journal::format::format_time(now), remote: remote.to_string(), ok, summary };
    write_record(&place.home.join(LAST_PUSH_FILE), &record)?;
    result
}

/// One line for a push: how many journals went, and the first refusal in words.
pub fn push_summary(r: &PushReport) -> String {
    let pushed = r.journals.iter().filter(|j| j.outcome == "pushed").count();
    let current = r.journals.iter().filter(|j| j.outcome == "up_to_date").count();
    let refused: Vec<&JournalPushed> = r.journals.iter().filter(|j| j.outcome == "refused" || j.outcome == "partial").collect();
    let saved_refused = r.saved.iter().filter(|s| s.outcome == "refused").count();
    let mut line = format!("journals pushed: {pushed}, up to date: {current}, refused or partial: {}", refused.len());
    if saved_refused > 0 {
        line += &format!(", saved-aside refs refused: {saved_refused}");
    }
    if let Some(why) = refused.first().and_then(|j| j.why.as_deref()) {
        line += &format!(": {why}");
    }
    line
}

/// One open item as the cross-machine view shows it.
#[derive(Clone, Debug, Serialize)]
pub struct ItemView {
    pub id: String,
    pub state: &'static str,
    pub title: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct LaneView {
    pub lane: String,
    pub agent: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunView {
    pub run: String,
    pub driver: String,
    pub halted: bool,
    pub lanes: Vec<LaneView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct AwayView {
    pub status: crate::away::Status,
    pub set_by: String,
    pub from_working_copy: String,
    pub start: String,
    pub end: String,
    pub hold_pushes: bool,
    pub queued_steps: usize,
    pub stops: usize,
}

/// One journal in the cross-machine view.
#[derive(Clone, Debug, Serialize)]
pub struct JournalView {
    pub machine: String,
    pub path: String,
    pub journal_id: String,
    /// `local` (read on this machine) or `mirror` (the last verified copy).
    pub source: &'static str,
    pub head_seq: Option<u64>,
    pub head_time: Option<String>,
    /// `local`, or the last fetch's verdict for a mirror.
    pub verification: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_items: Option<Vec<ItemView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<RunView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub away: Option<AwayView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct StatusView {
    pub remote: String,
    pub machine: String,
    pub fetched_at: Option<String>,
    pub working_copies: Vec<JournalView>,
    pub repositories: Vec<JournalView>,
    pub auto: AutoSetting,
    pub last_push: Option<LastPush>,
}

/// `abcd mirror status`: this machine's journals read here, and every mirror fetched from
/// `remote` as its last verified copy, each folded as a local journal is (every text
/// re-checked for secrets). No network: it shows what the last fetch brought.
pub fn status(place: &MirrorPlace, remote: &str, now: jiff::Timestamp) -> Result<StatusView, CommandError> {
    let remote = place.remote(remote)?;
    let remote = remote.as_str();
    let mut views = Vec::new();
    let mut local_ids = std::collections::BTreeSet::new();
    for (path, shown) in place.journals()? {
        let Some(path) = path else { continue };
        let store =
            crate::store::Store::new(places::open_journal_for_verb(RealDisk::shared(), crate::journal::JournalPaths::beside(&path))?);
        let view = match store.current_state() {
            Ok(current) => {
                local_ids.insert(current.journal_id.clone());
                let time = head_time(&path);
                journal_view(
                    &current.state,
                    place.machine.clone(),
                    shown,
                    current.journal_id.clone(),
                    "local",
                    Some(current.head.seq),
                    time,
                    now,
                )
            }
            Err(e) => JournalView {
                machine: place.machine.clone(),
                path: shown,
                journal_id: String::new(),
                source: "local",
                head_seq: None,
                head_time: None,
                verification: "unreadable".into(),
                why: Some(e.to_string()),
                open_items: None,
                runs: None,
                away: None,
            },
        };
        views.push((view, if path == place.repository_journal { "repository" } else { "working_copy" }));
    }
    let record: Option<FetchReport> = read_record::<FetchReport>(&fetch_record_path(&place.home, remote)).filter(|r| r.remote == remote);
    let verdict_of = |id: &str| record.as_ref().and_then(|r| r.journals.iter().find(|j| j.journal_id == id));
    let verified_p = verified_prefix(remote);
    let verified = place.repo.refs_under(&verified_p).map_err(CommandError::failed)?;
    let mut shown_ids = std::collections::BTreeSet::new();
    for (r, commit) in verified {
        let Some(id) = r.strip_prefix(&verified_p) else { continue };
        if local_ids.contains(id) {
            continue;
        }
        shown_ids.insert(id.to_string());
        // A verified copy whose last verdict is not on record (the record lost or over its
        // cap) is not called verified: the last fetch may have named it otherwise.
        let (verification, why) = match verdict_of(id) {
            Some(j) => (j.verdict.clone(), j.why.clone()),
            None => ("unknown".to_string(), Some("no record of the last fetch's verdict; run `abcd mirror fetch`".into())),
        };
        let view = match mirror::folded::state_of(&place.repo, &place.home, remote, id, &commit).map_err(|e| e.to_string()) {
            Ok((meta, state)) => {
                let kind = scope_name(&meta.scope);
                let mut v = journal_view(
                    &state,
                    claim_shown(&meta.machine),
                    claim_shown(&meta.path),
                    id.to_string(),
                    "mirror",
                    Some(meta.head_seq),
                    Some(meta.head_time.clone()),
                    now,
                );
                v.verification = verification;
                v.why = why;
                (v, kind)
            }
            Err(e) => (
                JournalView {
                    machine: String::new(),
                    path: String::new(),
                    journal_id: id.to_string(),
                    source: "mirror",
                    head_seq: None,
                    head_time: None,
                    verification: "unreadable".into(),
                    why: Some(e),
                    open_items: None,
                    runs: None,
                    away: None,
                },
                "working_copy",
            ),
        };
        views.push(view);
    }
    // Mirrors the last fetch named but never verified: shown by their verdict alone.
    for j in record.iter().flat_map(|r| &r.journals) {
        if shown_ids.contains(&j.journal_id) || local_ids.contains(&j.journal_id) || j.verdict == "verified" || j.verdict == "unchanged" {
            continue;
        }
        let view = JournalView {
            machine: j.machine.clone().unwrap_or_default(),
            path: j.path.clone().unwrap_or_default(),
            journal_id: j.journal_id.clone(),
            source: "mirror",
            head_seq: None,
            head_time: None,
            verification: j.verdict.clone(),
            why: j.why.clone(),
            open_items: None,
            runs: None,
            away: None,
        };
        views.push((view, "working_copy"));
    }
    let (repositories, working_copies): (Vec<_>, Vec<_>) = views.into_iter().partition(|(_, kind)| *kind == "repository");
    Ok(StatusView {
        remote: remote.to_string(),
        machine: place.machine.clone(),
        fetched_at: record.map(|r| r.fetched_at),
        working_copies: working_copies.into_iter().map(|(v, _)| v).collect(),
        repositories: repositories.into_iter().map(|(v, _)| v).collect(),
        auto: auto_setting(&place.home),
        last_push: read_record(&place.home.join(LAST_PUSH_FILE)),
    })
}

fn scope_name(scope: &Scope) -> &'static str {
    match scope {
        Scope::WorkingCopy { .. } => "working_copy",
        Scope::Repository { .. } => "repository",
        Scope::Machine {} => "machine",
    }
}

/// The time of a local journal's last verified line, read from its tail.
fn head_time(path: &Path) -> Option<String> {
    let file = crate::journal::verify::open_trusted(&RealDisk, path).ok()?;
    let crate::journal::scan::Tail::Good { head, .. } = crate::journal::scan::read_tail(file.as_ref()).ok()? else { return None };
    let mut line = vec![0u8; (head.end - head.offset) as usize];
    let n = file.read_at(&mut line, head.offset).ok()?;
    let event = crate::journal::format::verify_line(&line[..n]).ok()?;
    Some(crate::journal::format::format_time(event.time))
}

#[allow(clippy::too_many_arguments)]
fn journal_view(
    state: &crate::fold::FoldedState,
    machine: String,
    path: String,
    journal_id: String,
    source: &'static str,
    head_seq: Option<u64>,
    head_time: Option<String>,
    now: jiff::Timestamp,
) -> JournalView {
    let is_repository = matches!(state.journal.scope, Some(Scope::Repository { .. }));
    let open_items = (!is_repository).then(|| {
        state
            .checklist
            .items
            .iter()
            .filter(|i| i.fields.state.is_open())
            .map(|i| ItemView { id: i.fields.id.clone(), state: i.fields.state.name(), title: i.fields.title.clone() })
            .collect()
    });
    let runs = (!is_repository).then(|| {
        state
            .ledger
            .runs
            .iter()
            .filter(|(_, r)| !r.finished)
            .map(|(name, r)| RunView {
                run: name.clone(),
                // What the record says: another machine's process cannot be looked at here.
                driver: match &r.driver.session {
                    Some(session) => format!("pid {}, host session {session}", r.driver.process.pid),
                    None => format!("pid {}", r.driver.process.pid),
                },
                halted: r.halted,
                lanes: r.lanes.iter().map(|(lane, l)| LaneView { lane: lane.clone(), agent: agent_words(l) }).collect(),
            })
            .collect()
    });
    let away = state.away.window.as_ref().filter(|_| is_repository).map(|w| AwayView {
        status: w.status(now),
        set_by: w.set_by.clone(),
        from_working_copy: w.working_copy.clone(),
        start: crate::journal::format::format_time(w.start),
        end: crate::journal::format::format_time(w.end),
        hold_pushes: w.hold_pushes,
        queued_steps: w.queue.len(),
        stops: w.stops.len(),
    });
    JournalView {
        machine,
        path,
        journal_id,
        source,
        head_seq,
        head_time,
        verification: source.to_string(),
        why: None,
        open_items,
        runs,
        away,
    }
}

/// A lane's newest agent as the record last saw it (another machine's processes cannot be
/// checked from here, so it says what was recorded, not whether it still runs).
fn agent_words(lane: &crate::ledger::Lane) -> String {
    let Some(l) = lane.launches.last() else { return "no agent launched".into() };
    match (&l.started, &l.exited) {
        (_, Some(status)) => format!("{} launch {} exited ({})", l.role, l.launch, crate::ledger::exit_words(*status)),
        (Some(p), None) => format!("{} launch {} started (pid {}), no exit recorded", l.role, l.launch, p.pid),
        (None, None) => format!("{} launch {} intended, not started", l.role, l.launch),
    }
}

/// What `abcd mirror restart` did for one journal.
#[derive(Clone, Debug, Serialize)]
pub struct Restarted {
    pub journal_id: String,
    pub path: String,
    /// The mirror commit that was dropped, here and on the remote.
    pub old_commit: String,
    /// Lines of the old mirror the journal does not hold, each kept before the mirror was
    /// dropped: their seqs (first and last) and the synced quarantine file holding them.
    pub lost_lines: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_seqs: Option<(u64, u64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<String>,
    /// `deleted` (the remote's ref named the old commit and is gone) or `absent`.
    pub remote_ref: &'static str,
    /// This machine's verified copy of its own old mirror, dropped (a fetch would read the
    /// restarted mirror as `rewritten` against it otherwise).
    pub verified_dropped: bool,
    pub push: PushReport,
}

/// What `abcd mirror redact` recorded.
#[derive(Clone, Debug, Serialize)]
pub struct Redacted {
    pub journal_id: String,
    pub path: String,
    pub seq: u64,
    /// The kind of secret the scan finds in the line, never the value.
    pub secret: &'static str,
    /// The seq of the `mirror.line_redacted` event: the one written now, or the one that
    /// recorded the same decision before.
    pub recorded_seq: u64,
    pub already_recorded: bool,
}

/// `abcd mirror redact <journal-id> <seq>` (MIRROR.md §11): records in the journal holding
/// it the person's decision that the push carries a redaction record in the place of the
/// line of `seq`, which the push's secret scan flags and holds back. Only a line that is
/// not yet in this machine's mirror, that the scan flags, and that is not the genesis or a
/// gap record, is redacted. Nothing is pushed: the next push carries the record.
pub fn redact(place: &MirrorPlace, journal_id: &str, seq: u64) -> Result<Redacted, CommandError> {
    let refused = |kind, why: String| CommandError::from(Refusal::new(kind, "mirror redact", why));
    if !journal_id_ok(journal_id) {
        return Err(refused(
            K::BadName,
            format!(
                "{} is not a journal id (32 hex digits); `abcd mirror push` names the journal id and the seq of each line it holds back",
                crate::secrets::shown_name(journal_id)
            ),
        ));
    }
    let _mirror_lock = place.lock(MIRROR_LOCK_WAIT)?;
    let mut found = None;
    for (path, shown) in place.journals()? {
        let Some(path) = path else { continue };
        let Ok(file) = crate::journal::verify::open_trusted(&RealDisk, &path) else { continue };
        if crate::journal::append::read_genesis(file.as_ref(), &path).is_ok_and(|g| g.journal_id == journal_id) {
            found = Some((path, shown, file));
            break;
        }
    }
    let Some((path, shown, file)) = found else {
        return Err(refused(
            K::NotFound,
            format!(
                "no journal of this repository on this machine has the id {journal_id}; `abcd mirror push` names the journal id and the seq of each line it holds back"
            ),
        ));
    };
    if seq == 0 {
        return Err(refused(
            K::BadValue,
            format!(
                "seq 0 of journal {journal_id} is its genesis, which names the journal and its scope for every reader, so it is never redacted; a working copy whose path looks like a secret is moved with `git worktree move`"
            ),
        ));
    }
    let mirrored = match place.repo.read_ref(&journal_ref(journal_id)).map_err(CommandError::failed)? {
        Some(c) => mirror::read_commit(&place.repo, &c).ok().map(|m| m.meta.head_seq),
        None => None,
    };
    if let Some(head) = mirrored.filter(|head| seq <= *head) {
        return Err(refused(
            K::MirrorCurrent,
            format!(
                "the line of seq {seq} of journal {journal_id} is already in this machine's mirror (through seq {head}), so the remote holds it and a redaction cannot take it back; if it holds a secret, revoke that secret where it was issued"
            ),
        ));
    }
    let mut line_found: Option<(crate::journal::format::Event, Vec<u8>)> = None;
    let mut decided: Option<(u64, String)> = None;
    let scanned = crate::journal::scan::scan(file.as_ref(), crate::journal::scan::StartPoint::GENESIS, |event, pos| {
        if event.seq == seq {
            let mut line = vec![0u8; pos.len as usize];
            if crate::journal::storage::read_fully_at(file.as_ref(), &mut line, pos.offset).is_ok_and(|n| n == line.len()) {
                line_found = Some((event.clone(), line));
            }
        }
        if event.kind == crate::event::MIRROR_LINE_REDACTED
            && let Ok(d) = serde_json::from_value::<crate::event::mirror::LineRedacted>(event.data.clone())
            && d.seq == seq
        {
            decided = Some((event.seq, d.hash));
        }
        Ok::<(), ()>(())
    });
    if let Err(crate::journal::scan::ScanError::Io(e)) = scanned {
        return Err(CommandError::Failed(format!("reading {shown} failed: {e}")));
    }
    let Some((event, line)) = line_found else {
        return Err(refused(
            K::NotFound,
            format!(
                "journal {journal_id} at {shown} holds no verified line of seq {seq}; `abcd journal verify` shows how far it verifies, and `abcd mirror push` names the seq of each line it holds back"
            ),
        ));
    };
    let Some(kind) = crate::mirror::build::flagged(&line, &event) else {
        return Err(refused(
            K::BadValue,
            format!(
                "the secret scan flags nothing in the line of seq {seq} of journal {journal_id}, so the push carries it as it is; only a line the push holds back is redacted"
            ),
        ));
    };
    if event.gap().is_some() {
        return Err(refused(
            K::BadValue,
            format!(
                "the line of seq {seq} of journal {journal_id} is a repair's gap record, which the chain after it needs whole, so it is not redacted; it stays on this machine with the lines after it"
            ),
        ));
    }
    let hash = event.hash.to_hex();
    if let Some((recorded_seq, _)) = decided.as_ref().filter(|(_, h)| *h == hash) {
        let recorded_seq = *recorded_seq;
        return Ok(Redacted { journal_id: journal_id.into(), path: shown, seq, secret: kind.name(), recorded_seq, already_recorded: true });
    }
    let data = crate::event::mirror::LineRedacted { seq, hash, secret: kind.name().to_string() };
    let journal = places::open_journal_for_verb(RealDisk::shared(), crate::journal::JournalPaths::beside(&path))?;
    let new_event = crate::journal::NewEvent {
        kind: crate::event::MIRROR_LINE_REDACTED.into(),
        actor: crate::journal::Actor::this_process(None),
        data: serde_json::to_value(data).expect("plain data serializes"),
    };
    let appended = journal.append(new_event, None)?;
    Ok(Redacted {
        journal_id: journal_id.into(),
        path: shown,
        seq,
        secret: kind.name(),
        recorded_seq: appended.seq,
        already_recorded: false,
    })
}

/// `abcd mirror restart`: for a journal whose mirror a push refuses because the journal no
/// longer holds the mirrored lines (a repair since the last push, MIRROR.md §6 step 1),
/// first copies every line of the old mirror that the journal does not hold into
/// `quarantine/mirror-<seq>-<stamp>.bin` (synced), then drops the old mirror on the remote
/// (only while the remote's ref still names it) and here, and pushes the journal from its
/// genesis. Nothing a push would refuse for other reasons is restarted.
pub fn restart(place: &MirrorPlace, journal: &crate::journal::Journal, remote: &str) -> Result<Restarted, CommandError> {
    let remote = place.remote(remote)?;
    let mirror_lock = place.lock(MIRROR_LOCK_WAIT)?;
    let lock = journal.lock()?;
    let storage = journal.storage().clone();
    let paths = journal.paths().clone();
    let path = &paths.journal;
    let shown = path.display().to_string();
    let report = crate::journal::verify::verify_chain(&*storage, path, journal.anchors())?;
    let Some(id) = report.journal_id.clone() else {
        return Err(Refusal::new(
            K::JournalDamaged,
            "mirror restart",
            format!("{shown} holds no journal whose first line verifies, so there is no journal to mirror"),
        )
        .instead("`abcd journal restore` rebuilds it from its mirror")
        .into());
    };
    if !report.is_ok() {
        return Err(Refusal::new(
            K::JournalDamaged,
            "mirror restart",
            format!(
                "journal {id} at {shown} does not verify clean (`abcd journal verify` names the finding); its mirror is restarted only from a journal that does"
            ),
        )
        .instead("run `abcd journal repair` (or `abcd journal restore` for a journal that was lost) first")
        .into());
    }
    let local_ref = journal_ref(&id);
    let Some(old) = place.repo.read_ref(&local_ref).map_err(CommandError::failed)? else {
        return Err(Refusal::new(
            K::NoMirror,
            "mirror restart",
            format!("this machine holds no mirror of journal {id} ({local_ref}), so there is nothing to restart"),
        )
        .instead("`abcd mirror push` starts one")
        .into());
    };
    // Only a mirror a push refuses as no longer held by the journal is restarted.
    let claims = Claims { repository: &place.repository, machine: &place.machine, path: &place.main_root.display().to_string() };
    match build(&place.repo, &*storage, path, &claims) {
        Err(crate::mirror::build::BuildError::Diverged { .. }) => {}
        Ok(_) => {
            return Err(Refusal::new(
                K::MirrorCurrent,
                "mirror restart",
                format!("journal {id} still holds every line its mirror {} holds, so its mirror needs no restart", short(&old)),
            )
            .instead("`abcd mirror push` sends what is new")
            .into());
        }
        Err(e) => return Err(CommandError::Failed(e.to_string())),
    }

    // The old mirror's lines, and which of them the journal does not hold.
    let own = crate::mirror::own::own_lines(&place.repo, &id, crate::mirror::own::Limits::DEFAULT)
        .map_err(|e| CommandError::Failed(format!("reading this machine's mirror of journal {id} failed: {e}")))?;
    if let Some(why) = &own.walked.stopped {
        return Err(Refusal::new(
            K::MirrorMismatch,
            "mirror restart",
            format!(
                "this machine's mirror {} of journal {id} cannot be read whole ({why}), so the lines the journal lost could not all be kept; the mirror is left as it is",
                short(&old)
            ),
        )
        .into());
    }
    let mirror_head = own.walked.last_line.map_or(0, |(seq, _)| seq);
    let file = crate::journal::verify::open_trusted(&*storage, path)?;
    let mut held: std::collections::HashSet<crate::journal::format::Hash> = std::collections::HashSet::new();
    let scanned = crate::journal::scan::scan(file.as_ref(), crate::journal::scan::StartPoint::GENESIS, |event, _| {
        if event.seq > mirror_head {
            return Err(());
        }
        held.insert(event.hash);
        Ok(())
    });
    if let Err(crate::journal::scan::ScanError::Io(e)) = scanned {
        return Err(CommandError::Failed(format!("reading {shown} failed: {e}")));
    }
    let mut lost_bytes = Vec::new();
    let mut lost_seqs: Option<(u64, u64)> = None;
    let mut lost_lines = 0u64;
    for line in &own.lines {
        let event = crate::journal::format::verify_line(line).map_err(|f| CommandError::Failed(f.to_string()))?;
        if !held.contains(&event.hash) {
            lost_bytes.extend_from_slice(line);
            lost_lines += 1;
            lost_seqs = Some((lost_seqs.map_or(event.seq, |(a, _)| a), event.seq));
        }
    }
    // A journal that holds only the mirror's first lines was cut short: restore puts the
    // rest back into it, where they fit the chain, and the mirror goes on from there.
    let k = held.len();
    let journal_is_prefix = lost_lines > 0
        && report.events == k as u64
        && own.lines.iter().take(k).all(|l| crate::journal::format::verify_line(l).is_ok_and(|e| held.contains(&e.hash)));
    if journal_is_prefix {
        return Err(Refusal::new(
            K::MirrorMismatch,
            "mirror restart",
            format!(
                "journal {id} at {shown} holds the first {k} lines of its mirror and lacks the {lost_lines} after them, which fit its chain"
            ),
        )
        .instead("`abcd journal restore` puts them back, then `abcd mirror push` goes on from there")
        .into());
    }
    let mut quarantine = None;
    if let Some((first, _)) = lost_seqs {
        let q = crate::journal::append::quarantine_range(
            &*storage,
            &crate::journal::storage::BytesFile(lost_bytes.clone()),
            &paths,
            "mirror",
            first,
            0,
            lost_bytes.len() as u64,
        )?;
        quarantine = Some(q.path.display().to_string());
    }
    drop(lock);

    // The old mirror dropped: on the remote only while its ref still names the old commit.
    let remote_ref = match place.repo.push_delete(&remote, &local_ref, &old).map_err(CommandError::failed)? {
        PushedRef { outcome: PushOutcome::Updated, .. } => "deleted",
        PushedRef { outcome: PushOutcome::UpToDate, .. } => "absent",
        PushedRef { outcome: PushOutcome::NotFastForward, summary, .. } => {
            if remote_holds(place, &remote, &local_ref)? {
                return Err(Refusal::new(
                    K::RemoteRefused,
                    "mirror restart",
                    format!(
                        "the remote {remote}'s {local_ref} no longer names this machine's last pushed mirror {} ({summary}); it is left as it is, and so is the local ref (the lost lines are kept in {})",
                        short(&old),
                        quarantine.as_deref().unwrap_or("no quarantine file: the journal lost none")
                    ),
                )
                .instead("run `abcd mirror fetch` to see what it holds")
                .into());
            }
            "absent"
        }
        PushedRef { summary, .. } => {
            return Err(Refusal::new(
                K::RemoteRefused,
                "mirror restart",
                format!(
                    "the remote {remote} would not delete {local_ref} ({summary}); the old mirror is left there and here (the lost lines are kept in {})",
                    quarantine.as_deref().unwrap_or("no quarantine file: the journal lost none")
                ),
            )
            .instead("a remote that refuses deletions needs its owner to remove the ref")
            .into());
        }
    };
    place.repo.delete_ref(&local_ref, &old).map_err(CommandError::failed)?;
    let verified = format!("{}{id}", verified_prefix(&remote));
    let verified_dropped = match place.repo.read_ref(&verified).map_err(CommandError::failed)? {
        Some(v) => place.repo.delete_ref(&verified, &v).is_ok(),
        None => false,
    };
    let push = push_locked(place, remote, &mirror_lock)?;
    Ok(Restarted { journal_id: id, path: shown, old_commit: old, lost_lines, lost_seqs, quarantine, remote_ref, verified_dropped, push })
}

/// True when `remote` has `remote_ref` (fetched into the incoming refs to look).
fn remote_holds(place: &MirrorPlace, remote: &str, remote_ref: &str) -> Result<bool, CommandError> {
    let Some(id) = remote_ref.strip_prefix(JOURNALS_PREFIX) else { return Ok(true) };
    let incoming = format!("{}{id}", incoming_prefix(remote));
    match place.repo.fetch(remote, &[format!("+{remote_ref}:{incoming}")]) {
        Ok(()) => Ok(true),
        Err(e) if e.to_string().contains("couldn't find remote ref") => Ok(false),
        Err(e) => Err(CommandError::Failed(format!("asking {remote} for {remote_ref} failed: {e}"))),
    }
}

/// The first 12 hex digits of a commit, for messages.
fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}
