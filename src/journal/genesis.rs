//! The two kinds the journal writes itself: `journal.opened` (event 0, naming the journal's
//! id and scope) and `journal.repaired` (the chain continued past quarantined bytes), with
//! what a scope finds of a journal at a path (`JournalMoved`, and `ForeignJournal` with its
//! remedy: the appends refuse one, so the finding lives below them). They live beside the
//! journal so that it needs nothing above it; `event` re-exports the kinds.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const JOURNAL_OPENED: &str = "journal.opened";
pub const JOURNAL_REPAIRED: &str = "journal.repaired";
pub const JOURNAL_MOVED: &str = "journal.moved";
/// A journal id is this many lowercase hex digits.
pub const JOURNAL_ID_HEX_DIGITS: usize = 32;

/// What a journal is the journal of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Scope {
    /// One working copy, named by its root folder.
    WorkingCopy { root: String },
    /// A repository, named by its first root commit.
    Repository { root_commit: String },
    /// This machine's index of runs.
    Machine {},
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scope::WorkingCopy { root } => write!(f, "working copy {root}"),
            Scope::Repository { root_commit } => write!(f, "repository {root_commit}"),
            Scope::Machine {} => f.write_str("machine"),
        }
    }
}

/// `data` of `journal.opened`, event 0.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalOpened {
    /// 32 lowercase hex characters from the OS's random source.
    pub journal_id: String,
    pub scope: Scope,
}

/// `data` of `journal.moved`: a working copy's journal found at another root than the one
/// it last named, and accepted there because the move is shown (journal-format/SPEC.md §11):
/// the root it named (`from`) leads to this one, or this home store knows the journal and
/// `from` no longer holds it. `to` is the canonical root it is at now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalMoved {
    pub from: String,
    pub to: String,
}

/// Why `abcd journal repair` continued the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairCause {
    /// Damaged lines were moved to quarantine (before salvage: every line from the first
    /// bad one to the end).
    Corruption,
    /// The journal was behind or unlike its head anchor and a person accepted it as is.
    AnchorMismatch,
}

/// `data` of `journal.repaired`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalRepaired {
    pub cause: RepairCause,
    /// The byte range moved out of the journal (`from == to` when nothing was moved).
    pub from_offset: u64,
    pub to_offset: u64,
    /// Newline-terminated lines in the moved range (a last line without one counts too).
    pub lines: u64,
    /// The quarantine file's name, and the BLAKE3 of its bytes, when bytes were moved.
    pub quarantine_file: Option<String>,
    pub quarantine_blake3: Option<String>,
    /// For `anchor_mismatch`: what the anchor said.
    pub anchor_seq: Option<u64>,
    pub anchor_hash: Option<String>,
    /// What the verifier reported at the first bad place.
    pub problem: String,
    /// A gap record (SPEC §10): the seqs this line stands in for, and the hash the line
    /// after it names as `prev`. Written only by a salvaging repair, all three together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_from: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_to: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_prev: Option<String>,
}

impl JournalRepaired {
    /// A journal accepted as it is (cause `anchor_mismatch`): nothing moved, at `at` (the
    /// file's length), with what the anchor said and the finding in words.
    pub fn accepted(at: u64, anchor: Option<(u64, String)>, problem: String) -> JournalRepaired {
        let (anchor_seq, anchor_hash) = anchor.map_or((None, None), |(seq, hash)| (Some(seq), Some(hash)));
        JournalRepaired {
            cause: RepairCause::AnchorMismatch,
            from_offset: at,
            to_offset: at,
            lines: 0,
            quarantine_file: None,
            quarantine_blake3: None,
            anchor_seq,
            anchor_hash,
            problem,
            lost_from: None,
            lost_to: None,
            next_prev: None,
        }
    }
}

/// `data` of `journal.opened`, read and checked: the id must be 32 lowercase hex digits.
pub fn decode_opened(data: &serde_json::Value) -> Result<JournalOpened, String> {
    let opened = JournalOpened::deserialize(data).map_err(|e| e.to_string())?;
    if opened.journal_id.len() != JOURNAL_ID_HEX_DIGITS || !opened.journal_id.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(format!("journal_id is not {JOURNAL_ID_HEX_DIGITS} lowercase hex"));
    }
    Ok(opened)
}

/// A fresh journal id: random bytes from the OS's source, as hex.
pub fn new_journal_id() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; JOURNAL_ID_HEX_DIGITS / 2];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(id.len(), JOURNAL_ID_HEX_DIGITS, "two hex digits a byte");
    Ok(id)
}

/// A journal found at a path that is not its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignJournal {
    pub journal_id: String,
    /// The scope the journal names.
    pub names: Scope,
    /// The scope of the path it was found at.
    pub here: Scope,
    pub why: ForeignWhy,
    /// Where the journal belongs: the same place under its own scope's root.
    pub home: Option<PathBuf>,
}

/// Why a journal of another scope is not taken as moved here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ForeignWhy {
    /// Another repository (another first root commit), or another kind of scope: a
    /// repository or the machine does not move.
    OtherScope,
    /// A working copy's journal whose root still holds it: a copy, not a move.
    StillThere,
    /// A working copy's journal this home store has no record of: nothing shows that the
    /// checkout was moved rather than the file copied from another machine or backup.
    Unknown,
}

impl std::fmt::Display for ForeignJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "this is the journal of {} (journal {}), not of {}", self.names, self.journal_id, self.here)?;
        match self.why {
            ForeignWhy::OtherScope => Ok(()),
            ForeignWhy::StillThere => write!(f, ": that working copy still holds it, so this is a copy, not a moved checkout"),
            ForeignWhy::Unknown => {
                write!(f, ": this home store has no record of it, so nothing shows the checkout was moved here rather than the file copied")
            }
        }
    }
}

impl ForeignJournal {
    /// What a person can do about it, in words for a refusal or a reader's note.
    pub fn remedy(&self) -> String {
        "run `abcd journal repair` to set it aside (it is moved to quarantine/, never deleted, and repair says how to put it back where it belongs)".into()
    }

    /// The command that puts a set-aside copy back where it belongs, when that place is known.
    pub fn way_back(&self, aside: &Path) -> String {
        match &self.home {
            Some(home) => format!(
                "to put it back where it belongs: `mv -n '{}' '{}'` (if that place holds no journal), then run abcd there",
                aside.display(),
                home.display()
            ),
            None => format!("it stays in {} until you move it", aside.display()),
        }
    }
}
