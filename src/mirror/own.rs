//! This machine's own mirror of a journal read back as lines (SPEC §12: the mirror is the
//! machine's backup). The local ref `refs/abcd/journals/<id>` names the last commit this
//! machine pushed and the remote took, so its segments hold the journal's lines verbatim.
//! Git objects only, no network: a repair, a restore and a mirror restart take lost lines
//! back from here. Every line handed on verifies on its own and chains from the genesis
//! (MIRROR.md §7 rules 1–3); a mirror that breaks a rule stops where it breaks, and the
//! words say why.

use crate::event::Scope;
use crate::git::objects::{Batch, GitError, Repo};
use crate::journal::format::{Event, Hash};
use crate::journal::genesis;

use super::read::{Walk, WalkError, each_segment, walk_segment_lines};
use super::{MirrorCommit, ShapeError, journal_ref, read_commit_in};

/// Lines [`own_lines`] holds in memory at most: four times a checkpoint interval's worth of
/// segments (1,024 segments), far past any journal a repair reads back in one go.
pub const OWN_LINES_MAX: usize = 1 << 20;
/// Bytes [`own_lines`] holds in memory at most.
pub const OWN_BYTES_MAX: u64 = 256 << 20;

/// How much of a mirror a caller takes into memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_lines: usize,
    pub max_bytes: u64,
}

impl Limits {
    pub const DEFAULT: Limits = Limits { max_lines: OWN_LINES_MAX, max_bytes: OWN_BYTES_MAX };
}

/// What [`walk_own`] hands each line to: its event and its bytes; Err(why) stops the walk.
pub type LineVisitor<'a> = dyn FnMut(&Event, &[u8]) -> Result<(), String> + 'a;

/// What a walk over this machine's mirror of one journal found.
#[derive(Clone, Debug, Default)]
pub struct Walked {
    /// The commit the local ref names; None when there is no local ref (nothing mirrored).
    pub commit: Option<String>,
    /// The scope its genesis names, once the genesis was read and named this journal.
    pub scope: Option<Scope>,
    /// `mirror.json`'s claims, when its shape was read.
    pub head_claimed: Option<(u64, String)>,
    /// Lines handed on, their bytes, and the chain position after the last of them.
    pub lines: u64,
    pub bytes: u64,
    pub head: Option<(u64, Hash)>,
    /// The last line's own seq and hash (a gap record's differ from its chain position).
    pub last_line: Option<(u64, Hash)>,
    /// Why the walk stopped before the mirror's end: a rule the mirror breaks, or the caller
    /// stopped it. None when every line the mirror holds was handed on.
    pub stopped: Option<String>,
}

impl Walked {
    /// True when the local ref exists and every line it holds was handed on.
    pub fn is_whole(&self) -> bool {
        self.commit.is_some() && self.stopped.is_none()
    }
}

/// Walks this machine's mirror of `journal_id` (its local ref), handing each verified line
/// to `visit` in chain order from the genesis, with its event. `visit` returns Err(why) to
/// stop the walk; the why becomes [`Walked::stopped`]. A git failure is an error (nothing
/// was learned); a mirror that breaks a rule is not: the walk stops there and says so.
pub fn walk_own(repo: &Repo, journal_id: &str, visit: &mut LineVisitor<'_>) -> Result<Walked, GitError> {
    let mut walked = Walked { commit: repo.read_ref(&journal_ref(journal_id))?, ..Walked::default() };
    let Some(commit) = walked.commit.clone() else { return Ok(walked) };
    let mut batch = Batch::new(repo);
    let mirror = match read_commit_in(&mut batch, &commit) {
        Ok(m) => m,
        Err(ShapeError::Git(g)) => return Err(g),
        Err(ShapeError::Bad(why)) => {
            walked.stopped = Some(format!("its commit {} is not a mirror commit: {why}", short(&commit)));
            return Ok(walked);
        }
    };
    walked.head_claimed = Some((mirror.meta.head_seq, mirror.meta.head_hash.clone()));
    if mirror.meta.journal_id != journal_id {
        walked.stopped =
            Some(format!("its mirror.json names journal {}, not {journal_id}", crate::secrets::shown_name(&mirror.meta.journal_id)));
        return Ok(walked);
    }
    walk_segments(&mut batch, journal_id, &mirror, &mut walked, visit)?;
    if walked.stopped.is_none() {
        let claims_hold = walked.last_line.is_some_and(|(seq, hash)| seq == mirror.meta.head_seq && hash.to_hex() == mirror.meta.head_hash)
            && walked.bytes == mirror.meta.bytes;
        if !claims_hold {
            walked.stopped = Some("its mirror.json's head or length is not what its segments hold".into());
        }
    }
    Ok(walked)
}

fn walk_segments(
    batch: &mut Batch<'_>,
    journal_id: &str,
    mirror: &MirrorCommit,
    walked: &mut Walked,
    visit: &mut LineVisitor<'_>,
) -> Result<(), GitError> {
    let mut walk = Walk::default();
    // A stop that is no error (a broken rule, the caller's own) ends the reading as
    // `Broken` and is told through `walked.stopped`.
    let read = each_segment(batch, &mirror.segments, |entry, bytes| {
        // A segment is verified whole before any of its lines is handed on, so a line is
        // never handed on from a segment that breaks the chain further down.
        let mut lines: Vec<(Event, std::ops::Range<usize>)> = Vec::new();
        let mut at = 0usize;
        walk_segment_lines(&bytes, &entry.name, 0, &mut walk, &mut |event, line| {
            lines.push((event.clone(), at..at + line.len()));
            at += line.len();
        })?;
        for (event, range) in lines {
            // A redacted line is not in the mirror, so nothing after it chains on what the
            // mirror can give back.
            if let Some(r) = walk.first_redacted
                && event.seq > r
            {
                walked.stopped =
                    Some(format!("seq {r} is redacted in this mirror (MIRROR.md §11): its line is kept only in the journal that wrote it"));
                return Ok(());
            }
            if event.seq == 0 {
                match genesis::decode_opened(&event.data) {
                    Ok(o) if o.journal_id == journal_id && o.scope == mirror.meta.scope => walked.scope = Some(o.scope),
                    Ok(o) if o.journal_id == journal_id => {
                        return Err(WalkError::Broken("its journal.opened names another scope than its mirror.json".into()));
                    }
                    Ok(o) => {
                        return Err(WalkError::Broken(format!(
                            "its journal.opened names journal {}, not {journal_id}",
                            crate::secrets::shown_name(&o.journal_id)
                        )));
                    }
                    Err(why) => {
                        return Err(WalkError::Broken(format!("its first line is not a journal.opened this build reads: {why}")));
                    }
                }
            }
            visit(&event, &bytes[range.clone()]).map_err(WalkError::Broken)?;
            walked.lines += 1;
            walked.bytes += range.len() as u64;
            walked.head = Some(event.chain_position());
            walked.last_line = Some((event.seq, event.hash));
        }
        Ok(())
    });
    match read {
        Ok(()) => Ok(()),
        Err(WalkError::Git(g)) => Err(g),
        Err(WalkError::Broken(why)) => {
            walked.stopped = Some(why);
            Ok(())
        }
    }
}

/// Lines of this machine's mirror of one journal, held in memory.
#[derive(Clone, Debug, Default)]
pub struct OwnLines {
    pub walked: Walked,
    /// Each line's bytes, its `LF` included, in chain order from the genesis.
    pub lines: Vec<Vec<u8>>,
}

/// Every line this machine's mirror of `journal_id` holds, verbatim and verified, within
/// `limits` (past them the lines stop, and [`Walked::stopped`] says so). No local ref: no
/// lines, not an error.
pub fn own_lines(repo: &Repo, journal_id: &str, limits: Limits) -> Result<OwnLines, GitError> {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut bytes = 0u64;
    let walked = walk_own(repo, journal_id, &mut |event, line| {
        if lines.len() >= limits.max_lines || bytes + line.len() as u64 > limits.max_bytes {
            return Err(format!(
                "it holds more than {} lines or {} bytes, the most read back at once; the lines from seq {} on are not read",
                limits.max_lines, limits.max_bytes, event.seq
            ));
        }
        bytes += line.len() as u64;
        lines.push(line.to_vec());
        Ok(())
    })?;
    Ok(OwnLines { walked, lines })
}

/// The first 12 hex digits of a commit, for messages.
/// What a writer checks of a mirror of its own journal that verified (MIRROR.md §7 rule 6):
/// this machine knows its lines, so a mirror whose last line is neither in this machine's
/// own mirror (`own_ref`, the commit its `refs/abcd/journals/<id>` names as the caller
/// listed it, or one of its ancestors) nor in the journal file at `local` holds lines it
/// never wrote. `Some(why)` then; None when
/// every line is this machine's, or when the journal is not this machine's (no local ref,
/// no local file): of another machine's lines only its chain speaks (§9).
pub fn never_written_here(
    repo: &Repo,
    storage: &dyn crate::journal::storage::Storage,
    local: Option<&std::path::Path>,
    own_ref: Option<&str>,
    journal_id: &str,
    incoming: &MirrorCommit,
) -> Result<Option<String>, GitError> {
    if own_ref.is_none() && local.is_none() {
        return Ok(None);
    }
    if let Some(own) = own_ref
        && (own == incoming.commit || repo.is_ancestor(&incoming.commit, own)?)
    {
        return Ok(None);
    }
    let (seq, hash) = (incoming.meta.head_seq, incoming.meta.head_hash.as_str());
    if local.is_some_and(|path| journal_holds(storage, path, seq, hash)) {
        return Ok(None);
    }
    let put_back = match &own_ref {
        Some(own) => format!(
            "; to put this machine's own mirror back, run `git push --force-with-lease={r}:{c} <remote> {own}:{r}`",
            r = journal_ref(journal_id),
            c = incoming.commit
        ),
        None => String::new(),
    };
    Ok(Some(format!(
        "this machine writes journal {journal_id} and never wrote its line of seq {seq} that the remote's mirror ends on: someone else added lines to it; the verified copy stays{put_back}"
    )))
}

/// Whether the journal at `path` holds a line of `seq` whose hash is `hash` (hex). A
/// journal that cannot be read holds none.
fn journal_holds(storage: &dyn crate::journal::storage::Storage, path: &std::path::Path, seq: u64, hash: &str) -> bool {
    let Ok(file) = crate::journal::verify::open_trusted(storage, path) else { return false };
    let mut found = false;
    let _ = crate::journal::scan::scan(file.as_ref(), crate::journal::scan::StartPoint::GENESIS, |event, _| {
        if event.seq < seq {
            return Ok(());
        }
        found = event.seq == seq && event.hash.to_hex() == hash;
        Err(())
    });
    found
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::format::{self, Actor, NewEvent, encode_line};
    use crate::journal::storage::RealDisk;
    use crate::mirror::build::{Claims, build};

    const ID: &str = "0123456789abcdef0123456789abcdef";
    const OTHER: &str = "fedcba9876543210fedcba9876543210";

    fn git(dir: &std::path::Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git").args(args).current_dir(dir).output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// A journal of `n + 1` lines (genesis naming `id`, then `n` notes), one line each.
    fn journal(id: &str, n: u64) -> Vec<Vec<u8>> {
        let mut prev = format::Hash::genesis_prev();
        let t = jiff::Timestamp::from_second(1_800_000_000).unwrap();
        (0..=n)
            .map(|seq| {
                let (kind, data) = if seq == 0 {
                    ("journal.opened", serde_json::json!({"journal_id": id, "scope": {"kind": "machine"}}))
                } else {
                    ("test.note", serde_json::json!({"n": seq}))
                };
                let actor = Actor { session: None, pid: 1, tool: "abcd/test".into() };
                let (line, hash) = encode_line(seq, t, &NewEvent { kind: kind.into(), actor, data }, &prev).unwrap();
                prev = hash;
                line
            })
            .collect()
    }

    const CLAIMS: Claims<'static> = Claims { repository: "1111111111111111111111111111111111111111", machine: "m", path: "/w" };

    /// A repository whose local ref for `id` is a mirror of `lines`.
    fn mirrored(id: &str, lines: &[Vec<u8>]) -> (tempfile::TempDir, Repo, String) {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        let path = dir.path().join("journal.jsonl");
        std::fs::write(&path, lines.concat()).unwrap();
        let repo = Repo::at(dir.path());
        let built = build(&repo, &RealDisk, &path, &CLAIMS).unwrap().unwrap();
        repo.move_ref(&journal_ref(id), &built.commit, None).unwrap();
        (dir, repo, built.commit)
    }

    #[test]
    fn every_line_of_the_local_ref_comes_back_verbatim_in_chain_order() {
        let lines = journal(ID, 5);
        let (_dir, repo, commit) = mirrored(ID, &lines);
        let got = own_lines(&repo, ID, Limits::DEFAULT).unwrap();
        assert_eq!(got.lines, lines);
        assert!(got.walked.is_whole(), "{:?}", got.walked.stopped);
        assert_eq!(got.walked.commit.as_deref(), Some(commit.as_str()));
        assert_eq!((got.walked.lines, got.walked.bytes), (6, lines.concat().len() as u64));
        assert_eq!(got.walked.scope, Some(Scope::Machine {}));
        for line in &got.lines {
            assert!(format::verify_line(line).is_ok() && line.ends_with(b"\n"));
        }
    }

    #[test]
    fn no_local_ref_is_no_lines_not_an_error() {
        let (_dir, repo, _) = mirrored(ID, &journal(ID, 2));
        let got = own_lines(&repo, OTHER, Limits::DEFAULT).unwrap();
        assert!(got.lines.is_empty() && got.walked.commit.is_none() && got.walked.stopped.is_none());
        assert!(!got.walked.is_whole());
    }

    #[test]
    fn the_limits_hold_on_both_sides() {
        let lines = journal(ID, 5);
        let (_dir, repo, _) = mirrored(ID, &lines);
        let total = lines.concat().len() as u64;
        // Exactly at the limits: every line.
        let at = own_lines(&repo, ID, Limits { max_lines: 6, max_bytes: total }).unwrap();
        assert_eq!(at.lines, lines);
        assert!(at.walked.stopped.is_none());
        // One line short: the first five, and the walk says where it stopped.
        let short_lines = own_lines(&repo, ID, Limits { max_lines: 5, max_bytes: total }).unwrap();
        assert_eq!(short_lines.lines, lines[..5]);
        assert!(short_lines.walked.stopped.as_deref().is_some_and(|w| w.contains("from seq 5 on")), "{:?}", short_lines.walked.stopped);
        // One byte short: the last line does not fit.
        let short_bytes = own_lines(&repo, ID, Limits { max_lines: 6, max_bytes: total - 1 }).unwrap();
        assert_eq!(short_bytes.lines, lines[..5]);
        assert!(short_bytes.walked.stopped.is_some());
        assert_eq!(OWN_LINES_MAX, Limits::DEFAULT.max_lines);
        assert_eq!(OWN_BYTES_MAX, Limits::DEFAULT.max_bytes);
    }

    #[test]
    fn a_ref_holding_another_journal_hands_back_nothing() {
        // The mirror of OTHER put under ID's ref: its mirror.json names OTHER.
        let (_dir, repo, commit) = mirrored(OTHER, &journal(OTHER, 3));
        repo.move_ref(&journal_ref(ID), &commit, None).unwrap();
        let got = own_lines(&repo, ID, Limits::DEFAULT).unwrap();
        assert!(got.lines.is_empty(), "no line of another journal is handed back");
        assert!(got.walked.stopped.as_deref().is_some_and(|w| w.contains(OTHER)), "{:?}", got.walked.stopped);
    }

    #[test]
    fn a_segment_that_does_not_verify_stops_the_lines_before_it() {
        let lines = journal(ID, 3);
        let (dir, repo, commit) = mirrored(ID, &lines);
        // The segment rewritten with one byte of seq 2 changed, as a local forgery would.
        let m = crate::mirror::read_commit(&repo, &commit).unwrap();
        let mut seg = crate::mirror::read::read_segment(&mut Batch::new(&repo), &m.segments[0].id).unwrap();
        let at = lines[..2].concat().len() + 30;
        seg[at] ^= 1;
        let blob = repo.write_blob(seg).unwrap();
        let mut segments = m.segments.clone();
        segments[0].id = blob;
        let tree = repo.write_tree(&segments).unwrap();
        let root = git(dir.path(), &["rev-parse", &format!("{commit}^{{tree}}")]);
        let meta = repo.ls_tree(&root).unwrap().into_iter().find(|e| e.name == "mirror.json").unwrap();
        let new_root = repo
            .write_tree(&[
                meta,
                crate::git::objects::TreeEntry { mode: "040000".into(), kind: "tree".into(), id: tree, name: "segments".into() },
            ])
            .unwrap();
        let forged = repo.write_commit(&new_root, None, "forged\n", 1_800_000_000).unwrap();
        repo.move_ref(&journal_ref(ID), &forged, Some(&commit)).unwrap();
        let got = own_lines(&repo, ID, Limits::DEFAULT).unwrap();
        assert!(got.lines.is_empty(), "a segment is handed on only when it verifies whole");
        assert!(got.walked.stopped.as_deref().is_some_and(|w| w.contains("does not verify")), "{:?}", got.walked.stopped);
    }
}
