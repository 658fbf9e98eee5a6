//! A local journal's next mirror commit (MIRROR.md §6 steps 1–3): the lines after what the
//! last mirror commit holds, verified, put into segments, and written with a new
//! `mirror.json`, trees and a commit into the local object store. The cost is the new
//! lines, the last segment and the segment list, never the whole journal.

use std::path::Path;

use crate::event::Scope;
use crate::git::objects::{GitError, Repo, TreeEntry};
use crate::journal::format::{self, Event};
use crate::journal::scan::{self, Head, StartPoint, Verdict};
use crate::journal::storage::{Storage, StorageFile};
use crate::journal::{JournalError, genesis};

use super::redaction::{self, Record};
use super::segment::Fill;
use super::{
    MIRROR_FORMAT, MIRROR_FORMAT_REDACTED, MIRROR_JSON, MIRROR_MAX_SEGMENTS, MirrorMeta, SEGMENTS_DIR, ShapeError, journal_ref,
    read_commit_in, segment_name,
};

/// What the pusher says of its journal beside the lines: `mirror.json`'s claims.
#[derive(Clone, Debug)]
pub struct Claims<'a> {
    pub repository: &'a str,
    pub machine: &'a str,
    pub path: &'a str,
}

/// A journal's mirror commit, ready to push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Built {
    pub journal_id: String,
    pub scope: Scope,
    pub commit: String,
    /// The local ref's commit this one follows (None for a journal's first mirror).
    pub parent: Option<String>,
    pub head_seq: u64,
    pub new_events: u64,
    /// Why the mirror stops short of the journal's end: damage after the last verified
    /// line, or a line holding what looks like a secret. Those lines are not mirrored.
    pub stopped_at: Option<String>,
    /// Seqs of the lines this commit newly carries as redaction records (MIRROR.md §11).
    pub redacted: Vec<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{} cannot be mirrored: {why}", path.display())]
    Unmirrorable { path: std::path::PathBuf, why: String },
    #[error(
        "{} no longer holds the lines its mirror {commit} holds ({why}); it was repaired or replaced since the last push, so its mirror is left as it is; `abcd journal verify` shows the journal's state, and `abcd mirror restart` keeps every line it lost and starts its mirror again",
        path.display()
    )]
    Diverged { path: std::path::PathBuf, journal_id: String, commit: String, why: String },
}

impl BuildError {
    /// The journal's id, when the refusal came after it was read.
    pub fn journal_id(&self) -> Option<&str> {
        match self {
            BuildError::Diverged { journal_id, .. } => Some(journal_id),
            _ => None,
        }
    }
}

/// A segment being filled: its name's seq, its bytes so far, its line count.
struct Open {
    first_seq: u64,
    bytes: Vec<u8>,
    lines: usize,
}

/// Builds the next mirror commit of the journal at `path` onto the local ref
/// `refs/abcd/journals/<id>`. None for a journal with no event yet.
pub fn build(repo: &Repo, storage: &dyn Storage, path: &Path, claims: &Claims<'_>) -> Result<Option<Built>, BuildError> {
    let unmirrorable = |why: String| BuildError::Unmirrorable { path: path.to_owned(), why };
    let file = crate::journal::verify::open_trusted(storage, path)?;
    let Some(genesis) = first_event(file.as_ref()).map_err(|e| unmirrorable(format!("reading it failed: {e}")))? else {
        if file.len().map_err(|e| unmirrorable(format!("reading it failed: {e}")))? > 0 {
            return Err(unmirrorable("its first line does not verify; `abcd journal verify` names the problem".into()));
        }
        return Ok(None);
    };
    let opened =
        genesis::decode_opened(&genesis.data).map_err(|why| unmirrorable(format!("its first line is not journal.opened: {why}")))?;
    let local_ref = journal_ref(&opened.journal_id);
    let parent = repo.read_ref(&local_ref)?;

    // Where the mirror stands, checked against the journal's bytes.
    let mut segments: Vec<TreeEntry> = Vec::new();
    let mut open: Option<Open> = None;
    let mut start = StartPoint::GENESIS;
    let mut last: Option<(u64, format::Hash, jiff::Timestamp)> = None;
    let mut total_bytes = 0u64;
    let mut format = MIRROR_FORMAT;
    if let Some(p) = &parent {
        // The local mirror's trees and its last segment through one git child.
        let mut batch = crate::git::objects::Batch::new(repo);
        let mirror = read_commit_in(&mut batch, p).map_err(|e| match e {
            ShapeError::Git(g) => BuildError::Git(g),
            ShapeError::Bad(why) => unmirrorable(format!("its local mirror {p} is not a mirror commit: {why}")),
        })?;
        let diverged = |why: &str| BuildError::Diverged {
            path: path.to_owned(),
            journal_id: opened.journal_id.clone(),
            commit: p.clone(),
            why: why.to_string(),
        };
        if mirror.meta.journal_id != opened.journal_id {
            return Err(diverged("the mirror names another journal id"));
        }
        segments = mirror.segments;
        let Some(tail_entry) = segments.pop() else { return Err(diverged("the mirror holds no segment")) };
        let tail = super::read::read_segment(&mut batch, &tail_entry.id).map_err(|e| unmirrorable(e.to_string()))?;
        let tail_start = mirror.meta.bytes.checked_sub(tail.len() as u64).ok_or_else(|| diverged("its mirror.json is inconsistent"))?;
        let mut here = vec![0u8; tail.len()];
        let n = crate::journal::storage::read_fully_at(file.as_ref(), &mut here, tail_start)
            .map_err(|e| unmirrorable(format!("reading it failed: {e}")))?;
        if n != tail.len() || !redaction::stands_for(&tail, &here) {
            return Err(diverged("the bytes of the last mirrored segment differ"));
        }
        if mirror.meta.format == MIRROR_FORMAT_REDACTED {
            format = MIRROR_FORMAT_REDACTED;
        }
        let line_start = tail[..tail.len() - 1].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let head_line =
            format::verify_line(&tail[line_start..]).map_err(|f| diverged(&format!("the last mirrored line does not verify: {f}")))?;
        let (seq, hash) = head_line.chain_position();
        start = StartPoint { after: Some(Head { seq, hash, offset: tail_start + line_start as u64, end: mirror.meta.bytes }) };
        last = Some((head_line.seq, head_line.hash, head_line.time));
        total_bytes = mirror.meta.bytes;
        let lines = tail.iter().filter(|b| **b == b'\n').count();
        let first_seq = super::segment_seq(&tail_entry.name).expect("read_commit holds every segment name to §4");
        open = Some(Open { first_seq, bytes: tail, lines });
        // The last segment's entry comes back when it is written again, grown or not.
    }

    let mut new_events = 0u64;
    let mut fault: Option<BuildError> = None;
    let mut held: Option<String> = None;
    // The person's decisions to redact (`mirror.line_redacted`), read once a line is flagged.
    let mut decisions: Option<std::collections::HashMap<u64, format::Hash>> = None;
    // Records waiting for the next line: a mirror never ends with one (§11).
    let mut pending: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut redacted = Vec::new();
    let mut put = |seq: u64, line: &[u8], open: &mut Option<Open>, segments: &mut Vec<TreeEntry>| -> Result<(), BuildError> {
        let fits = open.as_ref().is_some_and(|o| Fill { lines: o.lines, bytes: o.bytes.len() }.takes(line.len()));
        if !fits {
            if let Some(full) = open.take() {
                close_segment(repo, segments, full)?;
            }
            if segments.len() >= MIRROR_MAX_SEGMENTS {
                return Err(unmirrorable(format!("it needs more than {MIRROR_MAX_SEGMENTS} segments")));
            }
            *open = Some(Open { first_seq: seq, bytes: Vec::new(), lines: 0 });
        }
        let o = open.as_mut().expect("a segment is open");
        o.bytes.extend_from_slice(line);
        o.lines += 1;
        total_bytes += line.len() as u64;
        Ok(())
    };
    let report = scan::scan(file.as_ref(), start, |event: &Event, pos| {
        let mut line = vec![0u8; pos.len as usize];
        match crate::journal::storage::read_fully_at(file.as_ref(), &mut line, pos.offset) {
            Ok(n) if n == line.len() => {}
            Ok(_) | Err(_) => {
                fault = Some(unmirrorable(format!("the line of seq {} could not be read again", event.seq)));
                return Err(());
            }
        }
        // A line abcd wrote never holds a secret (every text is scanned before it is
        // journaled); one written behind its back may, and stays on this machine: in its
        // place goes a redaction record when the person decided so, else nothing more.
        if let Some(kind) = flagged(&line, event) {
            let decided = decisions.get_or_insert_with(|| redactions(file.as_ref(), start));
            let record = Record { seq: event.seq, prev: event.prev, hash: event.hash };
            match (decided.get(&event.seq) == Some(&event.hash) && event.seq > 0 && event.gap().is_none())
                .then(|| redaction::encode(&record, line.len()))
                .flatten()
            {
                Some(bytes) => {
                    pending.push((event.seq, bytes));
                    return Ok(());
                }
                None => {
                    held = Some(format!(
                        "the line of seq {} holds what looks like a {} (not written by abcd); it and the lines after it are not pushed; `abcd mirror redact {} {}` pushes a redaction record in its place and keeps the line on this machine",
                        event.seq,
                        kind.name(),
                        opened.journal_id,
                        event.seq
                    ));
                    return Err(());
                }
            }
        }
        for (seq, bytes) in std::mem::take(&mut pending) {
            if let Err(e) = put(seq, &bytes, &mut open, &mut segments) {
                fault = Some(e);
                return Err(());
            }
            redacted.push(seq);
        }
        if let Err(e) = put(event.seq, &line, &mut open, &mut segments) {
            fault = Some(e);
            return Err(());
        }
        last = Some((event.seq, event.hash, event.time));
        new_events += 1;
        Ok(())
    });
    let stopped_at = match report {
        Err(scan::ScanError::Visitor(())) if held.is_some() => held,
        Err(scan::ScanError::Visitor(())) => return Err(fault.expect("a visitor stop names its fault")),
        Err(scan::ScanError::Io(e)) => return Err(unmirrorable(format!("reading it failed: {e}"))),
        Ok(r) => match r.verdict {
            Verdict::Clean | Verdict::TornTail(_) => None,
            Verdict::Corrupt(c) => Some(format!("damage at seq {} (byte {}) is not mirrored: {}", c.seq, c.offset, c.problem)),
        },
    };
    // A record waits for the line that confirms its hash (§11 rule 4): say so, so the push
    // is not taken for whole.
    let stopped_at = match (stopped_at, pending.first()) {
        (None, Some((seq, _))) => {
            Some(format!("the line of seq {seq} is redacted and no line after it is pushed yet; the next push carries its record"))
        }
        (why, _) => why,
    };
    let Some((head_seq, head_hash, head_time)) = last else {
        return match stopped_at {
            Some(why) => Err(unmirrorable(why)),
            None => Ok(None),
        };
    };
    if new_events == 0
        && let Some(p) = &parent
    {
        let built = Built {
            journal_id: opened.journal_id,
            scope: opened.scope,
            commit: p.clone(),
            parent: parent.clone(),
            head_seq,
            new_events,
            stopped_at,
            redacted,
        };
        return Ok(Some(built));
    }
    if let Some(o) = open.take() {
        close_segment(repo, &mut segments, o)?;
    }
    if !redacted.is_empty() {
        format = MIRROR_FORMAT_REDACTED;
    }
    let meta = MirrorMeta {
        format: format.to_string(),
        journal_id: opened.journal_id.clone(),
        scope: opened.scope.clone(),
        repository: claims.repository.to_string(),
        machine: claims.machine.to_string(),
        path: claims.path.to_string(),
        head_seq,
        head_hash: head_hash.to_hex(),
        head_time: format::format_time(head_time),
        bytes: total_bytes,
    };
    let meta_blob = repo.write_blob(serde_json::to_vec(&meta).expect("mirror.json serializes"))?;
    let segments_tree = repo.write_tree(&segments)?;
    let root = repo.write_tree(&[
        TreeEntry { mode: "100644".into(), kind: "blob".into(), id: meta_blob, name: MIRROR_JSON.into() },
        TreeEntry { mode: "040000".into(), kind: "tree".into(), id: segments_tree, name: SEGMENTS_DIR.into() },
    ])?;
    let message = format!("abcd mirror {} through seq {head_seq}\n", opened.journal_id);
    let commit = repo.write_commit(&root, parent.as_deref(), &message, head_time.as_second())?;
    Ok(Some(Built { journal_id: opened.journal_id, scope: opened.scope, commit, parent, head_seq, new_events, stopped_at, redacted }))
}

/// The kind of secret the push's scan finds in a journal line (its raw text, or any string
/// it decodes to), if any: what keeps the line off the remote (§6 step 2).
pub fn flagged(line: &[u8], event: &Event) -> Option<crate::secrets::SecretKind> {
    std::str::from_utf8(line).ok().and_then(crate::secrets::scan).or_else(|| secret_in_event(event))
}

/// The person's decisions to redact recorded in the journal from `start` on: each
/// `mirror.line_redacted`'s seq and hash. One whose data is not the kind's is no decision.
fn redactions(file: &dyn StorageFile, start: StartPoint) -> std::collections::HashMap<u64, format::Hash> {
    let mut found = std::collections::HashMap::new();
    let _ = scan::scan(file, start, |event, _| {
        if event.kind == redaction::LINE_REDACTED
            && let Ok(d) = serde_json::from_value::<crate::event::mirror::LineRedacted>(event.data.clone())
            && let Some(hash) = format::Hash::from_hex(d.hash.as_bytes())
        {
            found.insert(d.seq, hash);
        }
        Ok::<(), ()>(())
    });
    found
}

/// A secret in the event's decoded texts (every string and key of `data`, the actor's
/// session and tool): JSON escapes (`\u0067hp_…`) hide one from a scan of the raw line.
fn secret_in_event(event: &Event) -> Option<crate::secrets::SecretKind> {
    fn in_value(v: &serde_json::Value) -> Option<crate::secrets::SecretKind> {
        match v {
            serde_json::Value::String(s) => crate::secrets::scan(s),
            serde_json::Value::Array(items) => items.iter().find_map(in_value),
            serde_json::Value::Object(map) => map.iter().find_map(|(k, v)| crate::secrets::scan(k).or_else(|| in_value(v))),
            _ => None,
        }
    }
    in_value(&event.data)
        .or_else(|| event.actor.session.as_deref().and_then(crate::secrets::scan))
        .or_else(|| crate::secrets::scan(&event.actor.tool))
}

/// Writes a filled segment's blob and puts its entry in place (replacing the entry of the
/// same name, the last segment grown).
fn close_segment(repo: &Repo, segments: &mut Vec<TreeEntry>, open: Open) -> Result<(), BuildError> {
    let name = segment_name(open.first_seq);
    let id = repo.write_blob(open.bytes)?;
    segments.retain(|e| e.name != name);
    segments.push(TreeEntry { mode: "100644".into(), kind: "blob".into(), id, name });
    Ok(())
}

/// The journal's first event, when its first line verifies.
fn first_event(file: &dyn StorageFile) -> std::io::Result<Option<Event>> {
    let mut first = None;
    let scanned = scan::scan(file, StartPoint::GENESIS, |event, _| {
        first = Some(event.clone());
        Err(())
    });
    match scanned {
        Ok(_) | Err(scan::ScanError::Visitor(())) => Ok(first),
        Err(scan::ScanError::Io(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::format::{Actor, NewEvent, encode_line};
    use crate::journal::storage::RealDisk;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git").args(args).current_dir(dir).output().unwrap().status.success();
        assert!(ok, "git {args:?}");
    }

    /// A journal of `titles.len() + 1` lines (genesis, then one note per title).
    fn journal(titles: &[&str]) -> Vec<u8> {
        let mut prev = format::Hash::genesis_prev();
        let t = jiff::Timestamp::from_second(1_800_000_000).unwrap();
        let mut bytes = Vec::new();
        let genesis = serde_json::json!({"journal_id": ID, "scope": {"kind": "machine"}});
        let datas =
            std::iter::once(("journal.opened", genesis)).chain(titles.iter().map(|t| ("test.note", serde_json::json!({"title": t}))));
        for (seq, (kind, data)) in datas.enumerate() {
            let actor = Actor { session: None, pid: 1, tool: "abcd/test".into() };
            let (line, hash) = encode_line(seq as u64, t, &NewEvent { kind: kind.into(), actor, data }, &prev).unwrap();
            prev = hash;
            bytes.extend_from_slice(&line);
        }
        bytes
    }

    fn setup(bytes: &[u8]) -> (tempfile::TempDir, Repo, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        let path = dir.path().join("journal.jsonl");
        std::fs::write(&path, bytes).unwrap();
        let repo = Repo::at(dir.path());
        (dir, repo, path)
    }

    const CLAIMS: Claims<'static> = Claims { repository: "1111111111111111111111111111111111111111", machine: "m", path: "/w" };

    #[test]
    fn a_line_holding_a_secret_and_those_after_it_stay_on_the_machine() {
        let token = format!("ghp_{}", "Ab3".repeat(12));
        let title = format!("deploy with {token}");
        let (_dir, repo, path) = setup(&journal(&["first", &title, "after"]));
        let built = build(&repo, &RealDisk, &path, &CLAIMS).unwrap().unwrap();
        assert_eq!((built.head_seq, built.new_events), (1, 2));
        let why = built.stopped_at.unwrap();
        assert!(why.contains("seq 2") && why.contains("github_token") && !why.contains("ghp_"), "{why}");
        let m = super::super::read_commit(&repo, &built.commit).unwrap();
        let blob = repo.read_blob(&m.segments[0].id, super::super::SEGMENT_MAX_BYTES).unwrap();
        assert!(!String::from_utf8_lossy(&blob).contains(&token));
        assert!(String::from_utf8_lossy(&blob).contains("first"));
    }

    #[test]
    fn a_journal_that_no_longer_holds_its_mirrored_lines_is_not_built_on() {
        let (_dir, repo, path) = setup(&journal(&["first", "second"]));
        let built = build(&repo, &RealDisk, &path, &CLAIMS).unwrap().unwrap();
        repo.move_ref(&journal_ref(ID), &built.commit, None).unwrap();
        // The same journal id, other lines: what a repair or a replacement leaves.
        std::fs::write(&path, journal(&["first", "other", "third"])).unwrap();
        match build(&repo, &RealDisk, &path, &CLAIMS) {
            Err(BuildError::Diverged { journal_id, why, .. }) => {
                assert_eq!(journal_id, ID);
                assert!(why.contains("last mirrored segment differ"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        // The original lines and one more build on the mirror: only the new line is new.
        std::fs::write(&path, journal(&["first", "second", "third"])).unwrap();
        let next = build(&repo, &RealDisk, &path, &CLAIMS).unwrap().unwrap();
        assert_eq!((next.head_seq, next.new_events, next.parent.as_deref()), (3, 1, Some(built.commit.as_str())));
    }
}
