//! The stop verdict (SPEC §6), as a pure function over plain values.
//!
//! [`judge`] takes everything it decides on from its caller: the away terms (or none while
//! the person is present), the owed set, the Stop payload's two fields, the session's state
//! folded from `session.judged`, the clock reading, the deadline and the qualifying wake.
//! Nothing here reads a clock, the environment, a file, git or the forge. The caller:
//!
//! - builds the owed set, with any item a queued push hands back (SPEC §6 "Pushes", only
//!   under `--hold-pushes`) already left out, and records each hand-back itself;
//! - computes the deadline with [`deadline`] and the wake with [`qualifying_wake`];
//! - reads the block cap (`CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`, else [`DEFAULT_BLOCK_CAP`]),
//!   or, on a host with no cap of its own, passes abcd's own bound ([`StopInput::own_bound`]);
//! - appends [`Judgement::judged`] as `session.judged` and, while away, records
//!   [`Judgement::record_stop`] in the away record;
//! - writes [`Verdict`] as the host's output.

use jiff::{SignedDuration, Timestamp, ZonedDateTime};
use serde::{Deserialize, Serialize};

use crate::cron::{self, SessionCron};
use crate::event::SessionJudged;
pub use crate::event::session::{Row, SessionState, StopState};

/// The host's default cap on consecutive Stop blocks; `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`
/// overrides it, and 0 disables it (the caller reads the variable and passes the number).
pub const DEFAULT_BLOCK_CAP: u32 = 8;
/// How many qualifying wakes in a row release an unchanged set that holds a capped item.
pub const WAKE_RELEASES_MAX: u32 = 2;
/// The deadline's ceiling while anything is owed.
pub const OWED_CEILING: SignedDuration = SignedDuration::from_mins(30);
/// The deadline's ceiling while nothing is owed.
pub const IDLE_CEILING: SignedDuration = SignedDuration::from_hours(1);
/// A block's reason, at most, in characters (the host's cap on a hook string is 10,000).
pub const REASON_MAX_CHARS: usize = 4_000;
/// The present-mode line for the person, at most, in characters.
pub const SYSTEM_MESSAGE_MAX_CHARS: usize = 500;
/// One item's name (an id or a branch) as shown in a reason, at most, in characters.
pub const ITEM_NAME_MAX_CHARS: usize = 200;
/// An owed item's title is shown in a stop's words up to this many characters.
pub const ITEM_TITLE_SHOWN_MAX_CHARS: usize = 80;
/// Owed items named in a reason besides the next one; the rest are counted.
pub const OTHERS_NAMED_MAX: usize = 4;
/// Queued steps read (the newest) when the push wording asks whether a push is queued.
pub const QUEUED_STEPS_SCANNED_MAX: usize = 256;
/// How much of the last assistant message's end is read for a question, in bytes.
pub const QUESTION_TAIL_BYTES: usize = 4_096;
/// Session crons considered for a wake, at most (the first ones in the payload).
pub const SESSION_CRONS_MAX: usize = 64;
/// Domain separation for the owed-set fingerprint, so no other hash collides with it. v2:
/// the set's two parts hashed apart, then together ([`fingerprint`]).
const FINGERPRINT_DOMAIN: &[u8] = b"abcd owed set v2\n";
/// Domain separation for one part's digest within the owed-set fingerprint.
const PART_DOMAIN: &[u8] = b"abcd owed part v2\n";
/// Owed items the verdict names at most: the next, then [`OTHERS_NAMED_MAX`] others.
pub const OWED_NAMED_MAX: usize = 1 + OTHERS_NAMED_MAX;
/// Domain separation for the question message's hash.
const MESSAGE_DOMAIN: &[u8] = b"abcd last assistant message v1\n";
/// Branches a behind note names, at most; the rest are counted.
pub const BEHIND_NAMED_MAX: usize = 5;
/// Domain separation for the behind set's fingerprint.
const BEHIND_DOMAIN: &[u8] = b"abcd behind set v1\n";

/// Why a pull request is owed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrWhy {
    /// Its checks are failing.
    Failing,
    /// The forge's merge state is `BEHIND`.
    Behind,
    /// The forge's merge state is `DIRTY` (it conflicts with its base): owed as behind.
    Dirty,
}

impl PrWhy {
    pub fn name(self) -> &'static str {
        match self {
            PrWhy::Failing => "failing",
            PrWhy::Behind => "behind",
            PrWhy::Dirty => "dirty",
        }
    }

    fn phrase(self) -> &'static str {
        match self {
            PrWhy::Failing => "has failing checks",
            PrWhy::Behind => "is behind its base",
            PrWhy::Dirty => "conflicts with its base",
        }
    }
}

/// One item of owed work: something the session can still do itself.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Owed {
    /// A checklist item in state `working`; its title only names it in words (the id is
    /// its identity: a changed title is not a changed owed set). `added_seq` (the seq of
    /// the event that added it) and `promised` (a fired promise made it) only place it in
    /// the naming order.
    Working {
        id: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        title: String,
        #[serde(default)]
        added_seq: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        promised: bool,
    },
    /// A `waiting` checklist item whose `next_look` has passed.
    LookDue {
        id: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        title: String,
        #[serde(default)]
        added_seq: u64,
    },
    /// An own branch with commits not pushed. `next_act_is_push` is false while local
    /// work comes first; the push wording goes with it only when true.
    Unpushed { branch: String, next_act_is_push: bool },
    /// An open pull request of the person's that is behind, conflicting or failing (only
    /// while away). Its fix ends in a push, so the push wording goes with it.
    PullRequest { number: u64, why: PrWhy },
}

impl Owed {
    /// Whether the item is the checklist's (known when the plan is written), not the
    /// world's (git's or the forge's, read at the stop).
    pub fn from_checklist(&self) -> bool {
        matches!(self, Owed::Working { .. } | Owed::LookDue { .. })
    }

    /// Capped items are those the session can act on itself; an item only waiting (a look
    /// due) is not capped.
    pub fn is_capped(&self) -> bool {
        !matches!(self, Owed::LookDue { .. })
    }

    /// The item's identity, every field included, as one line: what the fingerprint hashes.
    pub fn key(&self) -> String {
        match self {
            Owed::Working { id, .. } => format!("working {id}"),
            Owed::LookDue { id, .. } => format!("look_due {id}"),
            Owed::Unpushed { branch, next_act_is_push } => {
                format!("unpushed {} {branch}", if *next_act_is_push { "push" } else { "local" })
            }
            Owed::PullRequest { number, why } => format!("pull_request {number} {}", why.name()),
        }
    }

    /// The item in plain words, its name cleaned and bounded.
    pub fn describe(&self) -> String {
        match self {
            Owed::Working { id, title, .. } => format!("checklist item {} is working", named_item(id, title)),
            Owed::LookDue { id, title, .. } => format!("checklist item {} is due a look (its next look has passed)", named_item(id, title)),
            Owed::Unpushed { branch, .. } => format!("branch {} has commits not pushed", shown(branch)),
            Owed::PullRequest { number, why } => format!("pull request #{number} {}", why.phrase()),
        }
    }

    /// Which item is named next: working items a fired promise made (the next work its
    /// promise named, docs/promises.md), then failing pull requests, then behind or
    /// conflicting ones, then unpushed branches, then the other working items, then looks
    /// due (capped items first, so row 4 names what has not moved). Pull requests go by
    /// number, branches by name, checklist items in the order they were added (`added_seq`,
    /// not their ids as text, where `10` sorts before `2`). Total over every field, so
    /// sorting by it is deterministic whatever order the caller gives.
    fn order(&self) -> (u8, u64, &str, u8) {
        match self {
            Owed::Working { id, added_seq, promised: true, .. } => (0, *added_seq, id, 0),
            Owed::PullRequest { number, why: PrWhy::Failing } => (1, *number, "", 0),
            Owed::PullRequest { number, why } => (2, *number, "", *why as u8),
            Owed::Unpushed { branch, next_act_is_push } => (3, 0, branch, u8::from(*next_act_is_push)),
            Owed::Working { id, added_seq, promised: false, .. } => (4, *added_seq, id, 0),
            Owed::LookDue { id, added_seq, .. } => (5, *added_seq, id, 0),
        }
    }

    fn push_target(&self) -> Option<PushTarget<'_>> {
        match self {
            Owed::Unpushed { branch, next_act_is_push: true } => Some(PushTarget::Branch(branch)),
            Owed::PullRequest { number, .. } => Some(PushTarget::PullRequest(*number)),
            _ => None,
        }
    }
}

/// Why the checklist is behind an own branch (SPEC §3 "Behind", docs/own-work.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BehindWhy {
    /// No item's `owner_refs` names it.
    Unlisted,
    /// Its head was committed after the checklist's last write.
    Changed,
}

/// An own branch the checklist is behind.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BehindRef {
    pub branch: String,
    pub why: BehindWhy,
}

/// The behind set's fingerprint (None for an empty set): BLAKE3 over the sorted,
/// deduplicated `<why> <branch>` keys, as [`fingerprint`] does for the owed set.
pub fn behind_fingerprint(refs: &[BehindRef]) -> Option<String> {
    if refs.is_empty() {
        return None;
    }
    let mut keys: Vec<String> =
        refs.iter().map(|r| format!("{} {}", if r.why == BehindWhy::Unlisted { "unlisted" } else { "changed" }, r.branch)).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut hasher = blake3::Hasher::new();
    hasher.update(BEHIND_DOMAIN);
    for key in &keys {
        hasher.update(&(key.len() as u64).to_le_bytes());
        hasher.update(key.as_bytes());
    }
    Some(hasher.finalize().to_hex().to_string())
}

/// The behind note's words (no `abcd:` prefix): the unlisted branches, then those changed
/// since the last write, at most [`BEHIND_NAMED_MAX`] named in all; empty for no refs.
pub fn behind_text(refs: &[BehindRef]) -> String {
    if refs.is_empty() {
        return String::new();
    }
    let names = |why: BehindWhy, skip: usize, take: usize| -> Vec<String> {
        refs.iter().filter(|r| r.why == why).skip(skip).take(take).map(|r| shown(&r.branch)).collect()
    };
    let unlisted = names(BehindWhy::Unlisted, 0, BEHIND_NAMED_MAX);
    let changed = names(BehindWhy::Changed, 0, BEHIND_NAMED_MAX - unlisted.len());
    let mut parts = Vec::new();
    if !unlisted.is_empty() {
        parts.push(format!("no item names {} in its owner refs", unlisted.join(", ")));
    }
    if !changed.is_empty() {
        let has = if changed.len() == 1 { "has" } else { "have" };
        parts.push(format!("{} {has} commits after the checklist's last write", changed.join(", ")));
    }
    let rest = refs.len() - unlisted.len() - changed.len();
    let more = if rest > 0 { format!(" (and {rest} more)") } else { String::new() };
    // Each kind has its own fix: a branch no item names wants an item (or a ref on the
    // item it belongs to); a branch that moved on wants its item brought up to date.
    let has = |why: BehindWhy| refs.iter().any(|r| r.why == why);
    let mut fixes = Vec::new();
    if has(BehindWhy::Unlisted) {
        fixes.push("add an item for a branch no item names (`abcd checklist add \"<title>\" --owner-ref <branch>`) or name it on the item it belongs to (`abcd checklist set <id> --owner-ref <branch>`)");
    }
    if has(BehindWhy::Changed) {
        fixes.push(
            "update the item that names a branch with newer commits (`abcd checklist set <id>` with its new state, title or next look)",
        );
    }
    let fixes = fixes.join("; ");
    let mut fixes = fixes.chars();
    let first = fixes.next().map(|c| c.to_uppercase().collect::<String>()).unwrap_or_default();
    format!(
        "the checklist is behind this session's work: {}{more}. {first}{}, so the plan stays in step with the work.",
        parts.join("; "),
        fixes.as_str()
    )
}

/// A stable, order-independent fingerprint of a set of owed items, as 64 lowercase hex
/// characters: BLAKE3 over the digest of its checklist part, then of its world part (each
/// [`part_digest`]). Hashing the parts apart lets the checklist's part be summed up when the
/// plan is written ([`OwedPart`]) and the stop compose it with what git and the forge owe,
/// to the same fingerprint as from every item.
pub fn fingerprint<'a>(items: impl IntoIterator<Item = &'a Owed>) -> String {
    let (checklist, world): (Vec<&Owed>, Vec<&Owed>) = items.into_iter().partition(|i| i.from_checklist());
    combine(&part_digest(checklist), &part_digest(world))
}

fn combine(checklist: &str, world: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(FINGERPRINT_DOMAIN);
    hasher.update(checklist.as_bytes());
    hasher.update(world.as_bytes());
    hasher.finalize().to_hex().to_string()
}

/// One part's digest: BLAKE3 over its sorted, deduplicated keys, each length-prefixed, hex.
fn part_digest<'a>(items: impl IntoIterator<Item = &'a Owed>) -> String {
    let mut keys: Vec<String> = items.into_iter().map(Owed::key).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut hasher = blake3::Hasher::new();
    hasher.update(PART_DOMAIN);
    for key in &keys {
        hasher.update(&(key.len() as u64).to_le_bytes());
        hasher.update(key.as_bytes());
    }
    hasher.finalize().to_hex().to_string()
}

/// One part of the owed set summed up (the checklist's, or the world's: git's and the
/// forge's): what the verdict reads of it, whatever its size. Items of the other part
/// are not its to hold ([`OwedPart::of`] panics on one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwedPart {
    /// Distinct items (by key).
    pub count: u64,
    /// Of them, those capped ([`Owed::is_capped`]).
    pub capped: u64,
    /// The first [`OWED_NAMED_MAX`] in naming order.
    pub first: Vec<Owed>,
    /// [`part_digest`] of every item, and of the capped ones.
    pub digest: String,
    pub capped_digest: String,
}

impl OwedPart {
    /// The part made of `items` (order and duplicates do not matter), all of one part.
    pub fn of(items: &[Owed]) -> OwedPart {
        let from_checklist = items.first().is_none_or(Owed::from_checklist);
        assert!(items.iter().all(|i| i.from_checklist() == from_checklist), "an owed part holds the items of one part");
        let sorted = in_naming_order(items);
        OwedPart {
            count: sorted.len() as u64,
            capped: sorted.iter().filter(|i| i.is_capped()).count() as u64,
            first: sorted.iter().take(OWED_NAMED_MAX).map(|i| (*i).clone()).collect(),
            digest: part_digest(items),
            capped_digest: part_digest(items.iter().filter(|i| i.is_capped())),
        }
    }

    /// Whether this is a part abcd could have made: counts that agree, at most
    /// [`OWED_NAMED_MAX`] named, distinct and in naming order, 64-hex digests, and what the
    /// named items and the counts imply of each other (capped items come first in naming
    /// order, so a look due named at place k means k capped; all named means the counts are
    /// the named; an empty set or an all-capped one has the digest that implies). A summary
    /// read from a file is believed only then.
    pub fn is_consistent(&self) -> bool {
        let hex = |d: &str| d.len() == 64 && d.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        let named = self.first.len() as u64 == self.count.min(OWED_NAMED_MAX as u64);
        let ordered = self.first.windows(2).all(|w| w[0].order() < w[1].order());
        let distinct = self.first.iter().enumerate().all(|(i, a)| self.first[..i].iter().all(|b| a.key() != b.key()));
        let one_part = self.first.iter().all(|i| i.from_checklist() == self.first[0].from_checklist());
        let capped_named = self.first.iter().filter(|i| i.is_capped()).count() as u64;
        let capped_agrees = match self.first.iter().position(|i| !i.is_capped()) {
            Some(k) => self.capped == k as u64,
            None if self.first.len() as u64 == self.count => self.capped == self.count,
            None => self.capped >= capped_named,
        };
        let empty = part_digest(std::iter::empty());
        let digests_agree = (self.count > 0 || self.digest == empty)
            && (self.capped > 0 || self.capped_digest == empty)
            && (self.capped != self.count || self.capped_digest == self.digest);
        self.capped <= self.count
            && named
            && ordered
            && distinct
            && one_part
            && capped_agrees
            && hex(&self.digest)
            && hex(&self.capped_digest)
            && digests_agree
    }
}

/// Owed items sorted in naming order, one per key.
fn in_naming_order(owed: &[Owed]) -> Vec<&Owed> {
    let mut items: Vec<&Owed> = owed.iter().collect();
    items.sort_by(|a, b| a.order().cmp(&b.order()));
    // One entry per identity (its key): an item given twice with another seq is one item.
    let mut keys = std::collections::HashSet::new();
    items.retain(|i| keys.insert(i.key()));
    items
}

/// The owed set as the verdict reads it: its size, its first items in naming order, and
/// its fingerprints. Made from every item ([`OwedView::of`]) or composed from the two parts
/// ([`OwedView::compose`]), to the same view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwedView {
    count: u64,
    capped: u64,
    first: Vec<Owed>,
    fingerprint: String,
    capped_fingerprint: String,
}

impl OwedView {
    /// The view of `owed` (order and duplicates do not matter).
    pub fn of(owed: &[Owed]) -> OwedView {
        let (checklist, world): (Vec<Owed>, Vec<Owed>) = owed.iter().cloned().partition(Owed::from_checklist);
        OwedView::compose(&OwedPart::of(&checklist), &OwedPart::of(&world))
    }

    /// The view of the union of the checklist's part and the world's.
    pub fn compose(checklist: &OwedPart, world: &OwedPart) -> OwedView {
        let mut first: Vec<Owed> = checklist.first.iter().chain(&world.first).cloned().collect();
        first.sort_by(|a, b| a.order().cmp(&b.order()));
        first.truncate(OWED_NAMED_MAX);
        OwedView {
            count: checklist.count.saturating_add(world.count),
            capped: checklist.capped.saturating_add(world.capped),
            first,
            fingerprint: combine(&checklist.digest, &world.digest),
            capped_fingerprint: combine(&checklist.capped_digest, &world.capped_digest),
        }
    }

    pub fn next(&self) -> Option<&Owed> {
        self.first.first()
    }

    /// Distinct items owed.
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn capped_any(&self) -> bool {
        self.capped > 0
    }
}

/// The hash by which a question message is remembered: BLAKE3 of the whole message, hex.
pub fn message_hash(message: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(MESSAGE_DOMAIN);
    hasher.update(message.as_bytes());
    hasher.finalize().to_hex().to_string()
}

/// Whether the message ends on a line ending in `?`: its last non-blank line, trailing
/// whitespace and Markdown emphasis (`*`, `_`) stripped, ends in `?`. Reads only the last
/// [`QUESTION_TAIL_BYTES`] bytes.
pub fn ends_in_question(message: &str) -> bool {
    let mut start = message.len().saturating_sub(QUESTION_TAIL_BYTES);
    while !message.is_char_boundary(start) {
        start += 1;
    }
    let tail = message[start..].trim_end();
    let last_line = tail.rsplit(['\n', '\r']).next().unwrap_or("");
    last_line.trim_end().trim_end_matches(['*', '_']).ends_with('?')
}

/// The deadline (SPEC §6): the earliest of the earliest future `next_look` of a waiting
/// item, now + [`OWED_CEILING`] when anything is owed, now + [`IDLE_CEILING`] otherwise.
/// A `next_look` at or before `now` is not future and is ignored (that item is a look due).
pub fn deadline(anything_owed: bool, waiting_next_looks: impl IntoIterator<Item = Timestamp>, now: Timestamp) -> Timestamp {
    let ceiling = if anything_owed { OWED_CEILING } else { IDLE_CEILING };
    let ceiling = now.checked_add(ceiling).unwrap_or(Timestamp::MAX);
    waiting_next_looks.into_iter().filter(|&look| look > now).fold(ceiling, Timestamp::min)
}

/// The qualifying wake's next look: the earliest next match, after `now`, of the session
/// crons that qualify against `deadline` (their latest fire time, lateness included, is no
/// later than it). `None` when none qualifies. Reads the first [`SESSION_CRONS_MAX`] crons;
/// a background task is never a wake, so none is taken here.
pub fn qualifying_wake(crons: &[SessionCron], now: &ZonedDateTime, deadline: Timestamp) -> Option<Timestamp> {
    crons
        .iter()
        .take(SESSION_CRONS_MAX)
        .filter(|c| cron::qualifies(c, now, deadline))
        .filter_map(|c| cron::next_match(&cron::parse(&c.schedule).ok()?, now))
        .map(|at| at.timestamp())
        .min()
}

/// The acts only the person may approve and the route for every other question: the
/// reroute reason's body, shared with the pre-tool-use hook's refusal of the question tool.
pub const QUESTION_ROUTE: &str = "Route it by the act it asks about. \
An act only the person may approve goes to the queue with `abcd mode queue \"<step>\"`, and other work goes on meanwhile. \
Those acts are: pushing, opening or merging a pull request without a standing instruction of the person's that allows it \
(the away mode is never that instruction); publishing anything, changing a repository's visibility, or posting a comment \
or message outward; adding a dependency; a secret, a credential or an app installation; a step only a website or a browser \
can do; a destructive act (deleting what this session did not create, overwriting uncommitted work, a force push, \
discarding someone else's work); anything that spends money; a release sign-off; and any other act this repository's \
instructions name as the person's. Every other question is the session's to decide: decide it, record it with \
`abcd decide \"<decision>\" --grounds \"<why>\" --undo \"<how to reverse it>\"`, and carry on.";

/// [`QUESTION_ROUTE`] in one sentence, for the away block that is injected on every start.
pub const QUESTION_ROUTE_SHORT: &str = "queue what only they may approve (`abcd mode queue`), decide the rest (`abcd decide`).";

/// Row 1's reason: the question reaches no one, and how to route it.
pub fn question_reason() -> String {
    format!("abcd: the person is away, so the question your last message ends on reaches no one. {QUESTION_ROUTE}")
}

/// `data` of `session.judged`: the row, the state and the session state after the verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judged {
    pub row: Row,
    pub state: StopState,
    #[serde(default)]
    pub next_look: Option<Timestamp>,
    pub block_count: u32,
    pub wake_count: u32,
    #[serde(default)]
    pub owed_fingerprint: Option<String>,
    #[serde(default)]
    pub capped_fingerprint: Option<String>,
    #[serde(default)]
    pub question_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_fingerprint: Option<String>,
}

impl Judged {
    fn new(row: Row, state: StopState, after: SessionState) -> Judged {
        Judged {
            row,
            state,
            next_look: after.next_look,
            block_count: after.block_count,
            wake_count: after.wake_count,
            owed_fingerprint: after.owed_fingerprint,
            capped_fingerprint: after.capped_fingerprint,
            question_hash: after.question_hash,
            behind_fingerprint: after.behind_fingerprint,
        }
    }

    /// The session state this event folds to: the next verdict's `session`.
    pub fn session_state(&self) -> SessionState {
        SessionState {
            block_count: self.block_count,
            wake_count: self.wake_count,
            owed_fingerprint: self.owed_fingerprint.clone(),
            capped_fingerprint: self.capped_fingerprint.clone(),
            question_hash: self.question_hash.clone(),
            next_look: self.next_look,
            behind_fingerprint: self.behind_fingerprint.clone(),
        }
    }
}

/// What kind of stop is recorded in the away record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// Stopped with work owed.
    WorkOwed,
    /// Stopped with nothing owed and no next look.
    NoNextLook,
}

/// A stop to record in the away record (`away.stop_recorded`). Carries no time, so two
/// equal records are the same stop: the caller collapses them into one entry with a count.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopRecord {
    pub kind: StopKind,
    /// "possibly forced by the cap": the host's count also resets on a tool call abcd does
    /// not see, so abcd's count may pass the cap where the host's did not.
    pub possibly_forced_by_cap: bool,
    /// The next owed item, in plain words, when work is owed.
    #[serde(default)]
    pub next: Option<String>,
    /// abcd's own bound ended this stop, after this many consecutive blocks, on a host with
    /// no cap of its own: abcd allowed it, no host forced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abcd_bound: Option<u32>,
}

/// The answer to the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Let the turn end; while present with work owed, one line for the person.
    Allow { state: StopState, system_message: Option<String> },
    /// Keep the session working, with this reason for the model.
    Block { reason: String },
}

impl Verdict {
    pub fn is_block(&self) -> bool {
        matches!(self, Verdict::Block { .. })
    }
}

/// The verdict and what the caller records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    pub verdict: Verdict,
    /// To append as `session.judged`.
    pub judged: Judged,
    /// To record in the away record: a block whose count passes the cap.
    pub record_stop: Option<StopRecord>,
}

/// The away record's parts the verdict reads.
#[derive(Clone, Copy, Debug)]
pub struct AwayTerms<'a> {
    /// The person said pushes wait (`--hold-pushes`).
    pub hold_pushes: bool,
    /// The queued steps, oldest first; only the push wording reads them.
    pub queued: &'a [String],
}

/// Everything the verdict decides on.
#[derive(Clone, Copy, Debug)]
pub struct StopInput<'a> {
    /// `Some` while away, `None` while the person is present.
    pub away: Option<AwayTerms<'a>>,
    /// The owed set, handed-back items already left out.
    pub owed: &'a OwedView,
    pub stop_hook_active: bool,
    pub last_assistant_message: Option<&'a str>,
    /// Folded from this session's `session.judged` events.
    pub session: &'a SessionState,
    /// Now, in the machine's local time zone (the deadline is shown in it).
    pub now: &'a ZonedDateTime,
    /// From [`deadline`].
    pub deadline: Timestamp,
    /// From [`qualifying_wake`]: the next look of the earliest qualifying wake, if any.
    pub qualifying_wake: Option<Timestamp>,
    /// [`DEFAULT_BLOCK_CAP`] or the environment's override; 0 disables the cap.
    pub block_cap: u32,
    /// `block_cap` is abcd's own bound, on a host that has no cap (Codex CLI): the block
    /// past it is not sent, since no host would end the run; abcd allows the stop itself.
    pub own_bound: bool,
    /// The host can wake the session later (session crons). Where it cannot (Codex CLI),
    /// no reason tells the session to schedule a wake.
    pub wakes: bool,
    /// The own branches the checklist is behind (read from git only); while away a set not
    /// yet named blocks one stop.
    pub behind: &'a [BehindRef],
    /// The session runs one turn of an `abcd loop` (its environment says so): its reply is
    /// the turn's end, and the loop's driver, not a wake, takes the next step.
    pub loop_turn: bool,
}

/// The stop verdict. While away the first matching row of SPEC §6 decides; while present
/// the stop is allowed, with one line naming the work when any is owed.
pub fn judge(input: &StopInput<'_>) -> Judgement {
    let owed = input.owed;
    match &input.away {
        None => judge_present(input, owed),
        Some(away) => judge_away(input, away, owed),
    }
}

fn judge_present(input: &StopInput<'_>, owed: &OwedView) -> Judgement {
    let (row, system_message) = match owed.next() {
        None => (Row::PresentNothingOwed, None),
        Some(next) => {
            let line = format!("abcd: stopped with work owed ({}); next: {}.", count_items(owed.len()), next.describe());
            (Row::PresentOwed, Some(clip(line, SYSTEM_MESSAGE_MAX_CHARS)))
        }
    };
    // The person is here: the away chain's counts and fingerprints start afresh, so the
    // next away window's first owed stop is its first block.
    let after = SessionState { question_hash: input.session.question_hash.clone(), ..SessionState::default() };
    Judgement {
        verdict: Verdict::Allow { state: StopState::Stopped, system_message },
        judged: Judged::new(row, StopState::Stopped, after),
        record_stop: None,
    }
}

fn judge_away(input: &StopInput<'_>, away: &AwayTerms<'_>, owed: &OwedView) -> Judgement {
    let before = input.session;
    // A loop turn's question is its reply: the driver hands it to the other agent, never
    // to the person, so it is rerouted by the loop itself.
    if let Some(message) = input.last_assistant_message.filter(|_| !input.loop_turn)
        && ends_in_question(message)
    {
        let hash = message_hash(message);
        if before.question_hash.as_deref() != Some(hash.as_str()) {
            // The owed set is not taken as seen here, so the next check still names it.
            let after = SessionState { question_hash: Some(hash), ..before.clone() };
            return block(input, owed, Row::Question, question_reason(), after);
        }
    }
    if input.loop_turn {
        // A block would keep the agent beyond its turn (the driver waits for its reply and
        // hands it on). What is owed stays owed: recorded as a stop with work owed, which
        // `abcd mode back` shows (identical ones merge into one line with a count).
        let after = SessionState { block_count: 0, next_look: None, ..before.clone() };
        let record_stop = owed.next().map(|next| StopRecord {
            kind: StopKind::WorkOwed,
            possibly_forced_by_cap: false,
            next: Some(next.describe()),
            abcd_bound: None,
        });
        return Judgement {
            verdict: Verdict::Allow { state: StopState::Stopped, system_message: None },
            judged: Judged::new(Row::LoopTurn, StopState::Stopped, after),
            record_stop,
        };
    }

    let owed_fp = owed.fingerprint.clone();
    let capped_fp = owed.capped_fingerprint.clone();
    let capped_owed = owed.capped_any();
    let changed = before.owed_fingerprint.as_deref() != Some(owed_fp.as_str());
    let wakes = if before.capped_fingerprint.as_deref() == Some(capped_fp.as_str()) { before.wake_count } else { 0 };
    // A behind set is named once, by the first stop that blocks within the host's cap (a
    // block past it never reaches the session); a set that empties is forgotten, so the
    // checklist falling behind again is named again.
    let behind_fp = behind_fingerprint(input.behind);
    let next_block_count = if input.stop_hook_active { before.block_count.saturating_add(1) } else { 1 };
    let within_cap = input.block_cap == 0 || next_block_count <= input.block_cap;
    let tell_behind = behind_fp.is_some() && before.behind_fingerprint != behind_fp && within_cap;
    let behind_fingerprint = if tell_behind || behind_fp.is_none() { behind_fp } else { before.behind_fingerprint.clone() };
    let seen = SessionState {
        owed_fingerprint: Some(owed_fp),
        capped_fingerprint: Some(capped_fp),
        wake_count: wakes,
        behind_fingerprint,
        ..before.clone()
    };
    let by = clock(input.deadline, input.now);
    let with_behind = |reason: String| {
        if tell_behind { clip(format!("{reason} Also, {}", behind_text(input.behind)), REASON_MAX_CHARS) } else { reason }
    };
    let owed_block =
        |row: Row, seen: SessionState| block(input, owed, row, with_behind(owed_reason(row, owed, away, &by, input.wakes)), seen);
    // Rows 3 and 6 would allow: the behind set not yet named blocks this stop instead.
    let behind_block = |seen: SessionState| {
        let reason = format!("abcd: the person is away and {}", behind_text(input.behind));
        block(input, owed, Row::Behind, clip(reason, REASON_MAX_CHARS), seen)
    };

    match (owed.is_empty(), input.qualifying_wake) {
        (false, _) if changed => owed_block(Row::OwedChanged, seen),
        (false, Some(_)) if tell_behind && (!capped_owed || wakes < WAKE_RELEASES_MAX) => behind_block(seen),
        (false, Some(at)) if !capped_owed || wakes < WAKE_RELEASES_MAX => {
            let wake_count = wakes.saturating_add(u32::from(capped_owed));
            allow_waiting(Row::WakeReleased, SessionState { wake_count, next_look: Some(at), ..seen })
        }
        (false, Some(_)) => owed_block(Row::WakesSpent, seen),
        (false, None) => owed_block(Row::NoWake, seen),
        (true, Some(_)) if tell_behind => behind_block(seen),
        (true, Some(at)) => allow_waiting(Row::NothingOwedWake, SessionState { next_look: Some(at), ..seen }),
        (true, None) => {
            let reason = if input.wakes {
                format!(
                    "abcd: the person is away and nothing is owed. Take the next ready item first (`abcd checklist` lists the open ones); \
                     only if none can be taken, schedule a wake (a session cron) that fires before {by}."
                )
            } else {
                "abcd: the person is away and nothing is owed. Take the next ready item (`abcd checklist` lists the open ones).".to_string()
            };
            block(input, owed, Row::NothingOwedNoWake, with_behind(clip(reason, REASON_MAX_CHARS)), seen)
        }
    }
}

fn allow_waiting(row: Row, after: SessionState) -> Judgement {
    let after = SessionState { block_count: 0, ..after };
    Judgement {
        verdict: Verdict::Allow { state: StopState::Waiting, system_message: None },
        judged: Judged::new(row, StopState::Waiting, after),
        record_stop: None,
    }
}

fn block(input: &StopInput<'_>, owed: &OwedView, row: Row, reason: String, after: SessionState) -> Judgement {
    let block_count = if input.stop_hook_active { input.session.block_count.saturating_add(1) } else { 1 };
    let past_cap = input.block_cap > 0 && block_count > input.block_cap;
    let state = if past_cap { StopState::Stopped } else { StopState::Working };
    let kind = if owed.is_empty() { StopKind::NoNextLook } else { StopKind::WorkOwed };
    let next = owed.next().map(Owed::describe);
    let after = SessionState { block_count, next_look: None, ..after };
    if past_cap && input.own_bound {
        // No host ends this run: abcd's bound does, by allowing the stop, and says so.
        let bound = input.block_cap;
        let line = match &next {
            Some(n) => format!(
                "abcd: allowed the stop after {bound} consecutive blocks (abcd's own bound; this host has no cap) with work owed; next: {n}."
            ),
            None => format!("abcd: allowed the stop after {bound} consecutive blocks (abcd's own bound; this host has no cap)."),
        };
        let record_stop = StopRecord { kind, possibly_forced_by_cap: false, next, abcd_bound: Some(bound) };
        return Judgement {
            verdict: Verdict::Allow { state: StopState::Stopped, system_message: Some(clip(line, SYSTEM_MESSAGE_MAX_CHARS)) },
            judged: Judged::new(row, StopState::Stopped, after),
            record_stop: Some(record_stop),
        };
    }
    let record_stop = past_cap.then_some(StopRecord { kind, possibly_forced_by_cap: true, next, abcd_bound: None });
    Judgement { verdict: Verdict::Block { reason }, judged: Judged::new(row, state, after), record_stop }
}

/// The reason for rows 2, 4 and 5: the next item, the push wording when its next act is a
/// push, what to do when it cannot move, and the others (bounded).
fn owed_reason(row: Row, owed: &OwedView, away: &AwayTerms<'_>, by: &str, wakes: bool) -> String {
    let count = count_items(owed.len());
    let mut text = match row {
        Row::WakesSpent => format!(
            "abcd: the person is away and the owed work ({count}) has not moved over {WAKE_RELEASES_MAX} wakes, so a wake no longer releases this stop."
        ),
        _ => format!("abcd: the person is away and work is owed ({count})."),
    };
    let Some(next) = owed.next() else { return clip(text, REASON_MAX_CHARS) };
    text.push_str(&format!(" Next: {}.", next.describe()));
    if let Some(target) = next.push_target() {
        text.push(' ');
        text.push_str(&push_sentence(target, away));
    }
    match row {
        Row::WakesSpent => text.push_str(" Move it, or take another."),
        Row::NoWake if wakes => {
            text.push_str(&format!(" If it cannot move now, take another, or schedule a wake (a session cron) that fires before {by}."))
        }
        _ => text.push_str(" If it cannot move now, take another."),
    }
    let others = owed.len().saturating_sub(1);
    if others > 0 {
        let named: Vec<String> = owed.first.iter().skip(1).take(OTHERS_NAMED_MAX).map(|i| i.describe()).collect();
        let rest = others.saturating_sub(named.len() as u64);
        let more = if rest > 0 { format!("; and {rest} more") } else { String::new() };
        text.push_str(&format!(" Also owed: {}{more}.", named.join("; ")));
    }
    clip(text, REASON_MAX_CHARS)
}

#[derive(Clone, Copy, Debug)]
enum PushTarget<'a> {
    Branch(&'a str),
    PullRequest(u64),
}

impl PushTarget<'_> {
    /// What the queued step says is pushed.
    fn step(self) -> String {
        match self {
            PushTarget::Branch(b) => format!("push {b}"),
            PushTarget::PullRequest(n) => format!("push the fix for pull request #{n}"),
        }
    }

    fn subject(self) -> String {
        match self {
            PushTarget::Branch(b) => format!("branch {}", shown(b)),
            PushTarget::PullRequest(n) => format!("pull request #{n}"),
        }
    }

    /// Whether one of the newest queued steps names it: a branch as a whole name, a pull
    /// request as `#<n>`.
    fn is_queued(self, queued: &[String]) -> bool {
        let newest = &queued[queued.len().saturating_sub(QUEUED_STEPS_SCANNED_MAX)..];
        newest.iter().any(|step| match self {
            PushTarget::Branch(b) => names_branch(step, b),
            PushTarget::PullRequest(n) => names_pull_request(step, n),
        })
    }
}

/// SPEC §6 "Pushes": do the local work, push if the standing instruction allows, otherwise
/// queue the push; a queued push stays owed. Never says the away mode allows a push.
fn push_sentence(target: PushTarget<'_>, away: &AwayTerms<'_>) -> String {
    let subject = target.subject();
    let queue = format!("`abcd mode queue {}`", shell_quote(&target.step()));
    match (away.hold_pushes, target.is_queued(away.queued)) {
        (false, false) => format!(
            "Do the local work, then push if your standing instruction allows (the away mode is not that instruction); \
             otherwise queue the push with {queue}: a queued push stays owed."
        ),
        (false, true) => format!(
            "A push for {subject} is already queued, and a queued push stays owed: push it if your standing instruction \
             allows (the away mode is not that instruction)."
        ),
        (true, false) => {
            format!("The person has said pushes wait: finish the local work, then queue the push with {queue}.")
        }
        (true, true) => match target {
            PushTarget::Branch(_) => format!(
                "The person has said pushes wait and a push for {subject} is queued, but it stays owed until its local work \
                 is done (its head contains its base's last-fetched tip)."
            ),
            PushTarget::PullRequest(_) => format!(
                "The person has said pushes wait and a push for {subject} is queued; a pull request stays owed until the \
                 pushed fix reaches the forge."
            ),
        },
    }
}

/// Whether `text` names `branch` as a whole name: the characters around it do not continue
/// a branch name (letters, digits, `.`, `_`, `/`, `-`; a `.` ending a sentence does not).
/// The owed-work reader's hand-back reads a queued step by the same rule.
pub fn names_branch(text: &str, branch: &str) -> bool {
    if branch.is_empty() {
        return false;
    }
    let name_char = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '/' | '-');
    text.match_indices(branch).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let mut after = text[at + branch.len()..].chars();
        let continues = match after.next() {
            Some('.') => after.next().is_some_and(name_char),
            Some(c) => name_char(c),
            None => false,
        };
        !before.is_some_and(name_char) && !continues
    })
}

/// Whether `text` names pull request `n` as `#<n>` (not `#<n>5`).
fn names_pull_request(text: &str, n: u64) -> bool {
    let needle = format!("#{n}");
    text.match_indices(&needle).any(|(at, _)| !text[at + needle.len()..].starts_with(|c: char| c.is_ascii_digit()))
}

/// A single-quoted shell word.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `n` items, in words.
fn count_items(n: u64) -> String {
    if n == 1 { "1 item".to_string() } else { format!("{n} items") }
}

/// An instant as a clock time in `zone_of`'s zone: `14:21 BST`, or `14:21 +01:00` where
/// the zone has no abbreviation.
fn clock(at: Timestamp, zone_of: &ZonedDateTime) -> String {
    let local = at.to_zoned_datetime(zone_of.time_zone().clone());
    jiff::fmt::strtime::format("%H:%M %Z", &local)
        .or_else(|_| jiff::fmt::strtime::format("%H:%M %:z", &local))
        .unwrap_or_else(|_| at.to_string())
}

/// A name as shown: control characters replaced, at most [`ITEM_NAME_MAX_CHARS`].
/// An item by id, and by title when it has one: a short id alone says little.
fn named_item(id: &str, title: &str) -> String {
    if title.is_empty() { shown(id) } else { format!("{} ({})", shown(id), clip(shown(title), ITEM_TITLE_SHOWN_MAX_CHARS)) }
}

fn shown(name: &str) -> String {
    let cleaned: String = name.chars().map(|c| if c.is_control() { '\u{FFFD}' } else { c }).collect();
    clip(cleaned, ITEM_NAME_MAX_CHARS)
}

/// At most `max` characters, ending in `…` when cut, once the whole text has passed the
/// secret scan; a name that carries a secret is not shown, only its kind.
fn clip(text: String, max: usize) -> String {
    crate::secrets::cut_after_scan(&text, crate::secrets::Bound::Chars(max))
        .unwrap_or_else(|kind| format!("(a name that carries {}, not shown)", kind.describe()))
}

/// `session.judged` is made from a verdict and read back as the next verdict's input.
impl SessionJudged {
    pub fn new(session: String, j: Judged, window_start: Option<jiff::Timestamp>) -> SessionJudged {
        SessionJudged {
            window_start,
            session,
            row: j.row,
            state: j.state,
            next_look: j.next_look,
            block_count: j.block_count,
            wake_count: j.wake_count,
            owed_fingerprint: j.owed_fingerprint,
            capped_fingerprint: j.capped_fingerprint,
            question_hash: j.question_hash,
            behind_fingerprint: j.behind_fingerprint,
        }
    }

    /// What the next verdict for this session reads back.
    pub fn session_state(&self) -> SessionState {
        SessionState {
            block_count: self.block_count,
            wake_count: self.wake_count,
            owed_fingerprint: self.owed_fingerprint.clone(),
            capped_fingerprint: self.capped_fingerprint.clone(),
            question_hash: self.question_hash.clone(),
            next_look: self.next_look,
            behind_fingerprint: self.behind_fingerprint.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use jiff::tz::TimeZone;
    use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult};

    use super::*;

    const MINUTE: SignedDuration = SignedDuration::from_mins(1);

    fn at(text: &str) -> ZonedDateTime {
        text.parse::<Timestamp>().unwrap().to_zoned_datetime(TimeZone::UTC)
    }

    fn unpushed(branch: &str) -> Owed {
        Owed::Unpushed { branch: branch.into(), next_act_is_push: true }
    }

    fn look_due(id: &str) -> Owed {
        Owed::LookDue { id: id.into(), title: String::new(), added_seq: 0 }
    }

    /// The session state after rows 2–7 judged `owed`, with these counts.
    fn seen(owed: &[Owed], block_count: u32, wake_count: u32) -> SessionState {
        SessionState {
            block_count,
            wake_count,
            owed_fingerprint: Some(fingerprint(owed)),
            capped_fingerprint: Some(fingerprint(owed.iter().filter(|i| i.is_capped()))),
            question_hash: None,
            next_look: None,
            behind_fingerprint: None,
        }
    }

    /// One stop: the inputs a test varies, the rest fixed.
    struct Stop<'a> {
        away: bool,
        hold_pushes: bool,
        queued: &'a [String],
        owed: &'a [Owed],
        stop_hook_active: bool,
        message: Option<&'a str>,
        session: &'a SessionState,
        wake: bool,
        cap: u32,
        behind: &'a [BehindRef],
        loop_turn: bool,
    }

    impl Stop<'_> {
        fn judge(&self) -> Judgement {
            let now = at("2026-10-18T13:51:00Z");
            let deadline = deadline(!self.owed.is_empty(), [], now.timestamp());
            let wake = self.wake.then(|| now.timestamp() + 9 * MINUTE);
            judge(&StopInput {
                away: self.away.then_some(AwayTerms { hold_pushes: self.hold_pushes, queued: self.queued }),
                owed: &OwedView::of(self.owed),
                stop_hook_active: self.stop_hook_active,
                last_assistant_message: self.message,
                session: self.session,
                now: &now,
                deadline,
                qualifying_wake: wake,
                block_cap: self.cap,
                own_bound: false,
                wakes: true,
                behind: self.behind,
                loop_turn: self.loop_turn,
            })
        }
    }

    fn stop<'a>(owed: &'a [Owed], session: &'a SessionState) -> Stop<'a> {
        Stop {
            away: true,
            hold_pushes: false,
            queued: &[],
            owed,
            stop_hook_active: false,
            message: Some("Done for now."),
            session,
            wake: false,
            cap: DEFAULT_BLOCK_CAP,
            behind: &[],
            loop_turn: false,
        }
    }

    #[test]
    fn away_a_loop_turn_ends_with_its_reply_and_records_what_it_leaves_owed() {
        let owed = [Owed::Working { id: "1".into(), title: "Write the parser".into(), added_seq: 1, promised: false }];
        let fresh = SessionState::default();
        let turn = Stop { loop_turn: true, ..stop(&owed, &fresh) };
        let j = turn.judge();
        assert_eq!((j.judged.row, j.judged.state), (Row::LoopTurn, StopState::Stopped), "{j:?}");
        assert!(matches!(j.verdict, Verdict::Allow { system_message: None, .. }));
        let recorded = j.record_stop.expect("the owed work is recorded for `mode back`");
        assert_eq!((recorded.kind, recorded.possibly_forced_by_cap), (StopKind::WorkOwed, false));
        assert_eq!(Stop { owed: &[], ..turn }.judge().record_stop, None, "nothing owed, nothing recorded");
        // The same stop of a session of its own is blocked (row 2).
        assert_eq!(stop(&owed, &fresh).judge().judged.row, Row::OwedChanged);
        // A question is the turn's reply: the driver hands it to the other agent.
        let asked = Stop { message: Some("Could you add a doc comment?"), ..turn };
        assert_eq!(asked.judge().judged.row, Row::LoopTurn);
        // Present, a loop turn is judged as any session (allowed with its line).
        assert_eq!(Stop { away: false, ..turn }.judge().judged.row, Row::PresentOwed);
    }

    fn reason(j: &Judgement) -> &str {
        match &j.verdict {
            Verdict::Block { reason } => reason,
            Verdict::Allow { .. } => panic!("allowed: {j:?}"),
        }
    }

    /// Acceptance 1: every away row and both present rows, each with `stop_hook_active`
    /// false and true. The block count after a block is 1 (false) or one more (true); after
    /// an allow it is 0.
    #[test]
    fn every_row_with_stop_hook_active_false_and_true() {
        let branch = [unpushed("feat/x")];
        let waiting_only = [look_due("ci-run")];
        let none: [Owed; 0] = [];
        let fresh = SessionState::default();
        let other_set = seen(&[unpushed("feat/old")], 3, 0);
        let unchanged_one_wake = seen(&branch, 3, 1);
        let unchanged_two_wakes = seen(&branch, 3, 2);
        let waiting_only_many_wakes = seen(&waiting_only, 3, 7);
        let nothing_seen = seen(&none, 3, 0);

        struct Case<'a> {
            name: &'a str,
            stop: Stop<'a>,
            row: Row,
            state: StopState,
            wake_count: u32,
            check: fn(&Judgement),
        }
        let cases = [
            Case {
                name: "1 question",
                stop: Stop { message: Some("Pushed locally.\n\nShall I push feat/x?  \n"), ..stop(&branch, &unchanged_one_wake) },
                row: Row::Question,
                state: StopState::Working,
                wake_count: 1,
                check: |j| {
                    let r = reason(j);
                    assert!(r.contains("abcd mode queue") && r.contains("abcd decide") && r.contains("never that instruction"), "{r}");
                    assert_eq!(j.judged.owed_fingerprint, Some(fingerprint(&[unpushed("feat/x")])), "row 1 leaves the set as it was");
                },
            },
            Case {
                name: "2 first block",
                stop: stop(&branch, &fresh),
                row: Row::OwedChanged,
                state: StopState::Working,
                wake_count: 0,
                check: |j| assert!(reason(j).contains("work is owed (1 item). Next: branch feat/x has commits not pushed."), "{j:?}"),
            },
            Case {
                name: "2 set changed, wake present",
                stop: Stop { wake: true, ..stop(&branch, &other_set) },
                row: Row::OwedChanged,
                state: StopState::Working,
                wake_count: 0,
                check: |j| assert!(reason(j).contains("feat/x") && !reason(j).contains("feat/old")),
            },
            Case {
                name: "3 wake releases, capped item",
                stop: Stop { wake: true, ..stop(&branch, &unchanged_one_wake) },
                row: Row::WakeReleased,
                state: StopState::Waiting,
                wake_count: 2,
                check: |j| assert_eq!(j.judged.next_look, Some(at("2026-10-18T14:00:00Z").timestamp())),
            },
            Case {
                name: "3 wake releases, only waiting",
                stop: Stop { wake: true, ..stop(&waiting_only, &waiting_only_many_wakes) },
                row: Row::WakeReleased,
                state: StopState::Waiting,
                wake_count: 7,
                check: |j| assert!(j.judged.next_look.is_some()),
            },
            Case {
                name: "4 wakes spent",
                stop: Stop { wake: true, ..stop(&branch, &unchanged_two_wakes) },
                row: Row::WakesSpent,
                state: StopState::Working,
                wake_count: 2,
                check: |j| assert!(reason(j).contains("has not moved over 2 wakes") && reason(j).contains("Next: branch feat/x")),
            },
            Case {
                name: "5 no wake",
                stop: stop(&branch, &unchanged_one_wake),
                row: Row::NoWake,
                state: StopState::Working,
                wake_count: 1,
                check: |j| assert!(reason(j).contains("take another, or schedule a wake") && reason(j).contains("before 14:21 UTC")),
            },
            Case {
                name: "6 nothing owed, wake",
                stop: Stop { wake: true, ..stop(&none, &nothing_seen) },
                row: Row::NothingOwedWake,
                state: StopState::Waiting,
                wake_count: 0,
                check: |j| assert_eq!(j.verdict, Verdict::Allow { state: StopState::Waiting, system_message: None }),
            },
            Case {
                name: "7 nothing owed, no wake",
                stop: stop(&none, &nothing_seen),
                row: Row::NothingOwedNoWake,
                state: StopState::Working,
                wake_count: 0,
                check: |j| assert!(reason(j).contains("Take the next ready item first") && reason(j).contains("before 14:51 UTC")),
            },
            Case {
                name: "present, owed",
                stop: Stop { away: false, wake: true, message: Some("Shall I?"), ..stop(&branch, &unchanged_two_wakes) },
                row: Row::PresentOwed,
                state: StopState::Stopped,
                wake_count: 0,
                check: |j| {
                    let Verdict::Allow { system_message: Some(line), .. } = &j.verdict else { panic!("{j:?}") };
                    assert_eq!(line, "abcd: stopped with work owed (1 item); next: branch feat/x has commits not pushed.");
                },
            },
            Case {
                name: "present, nothing owed",
                stop: Stop { away: false, ..stop(&none, &fresh) },
                row: Row::PresentNothingOwed,
                state: StopState::Stopped,
                wake_count: 0,
                check: |j| assert_eq!(j.verdict, Verdict::Allow { state: StopState::Stopped, system_message: None }),
            },
        ];
        for case in cases {
            for active in [false, true] {
                let j = Stop { stop_hook_active: active, ..case.stop }.judge();
                let name = format!("{} (stop_hook_active {active})", case.name);
                assert_eq!(j.judged.row, case.row, "{name}: {j:?}");
                assert_eq!(j.judged.state, case.state, "{name}");
                assert_eq!(j.judged.wake_count, case.wake_count, "{name}");
                match &j.verdict {
                    Verdict::Block { reason } => {
                        let expected = if active { case.stop.session.block_count + 1 } else { 1 };
                        assert_eq!(j.judged.block_count, expected, "{name}");
                        assert!(reason.chars().count() <= REASON_MAX_CHARS, "{name}");
                        assert_eq!(j.judged.next_look, None, "{name}");
                    }
                    Verdict::Allow { state, .. } => {
                        assert_eq!(*state, case.state, "{name}");
                        assert_eq!(j.judged.block_count, 0, "{name}");
                    }
                }
                assert_eq!(j.record_stop, None, "{name}: under the cap");
                (case.check)(&j);
            }
        }
    }

    /// Drives successive stops, each call fed the session state the one before recorded.
    struct Session {
        state: SessionState,
        cap: u32,
        own_bound: bool,
        hold_pushes: bool,
        queued: Vec<String>,
        behind: Vec<BehindRef>,
    }

    impl Session {
        fn new() -> Session {
            Session {
                state: SessionState::default(),
                cap: DEFAULT_BLOCK_CAP,
                own_bound: false,
                hold_pushes: false,
                queued: Vec::new(),
                behind: Vec::new(),
            }
        }

        fn stop(&mut self, now: &str, owed: &[Owed], active: bool, crons: &[SessionCron], message: Option<&str>) -> Judgement {
            let now = at(now);
            let deadline = deadline(!owed.is_empty(), [], now.timestamp());
            let j = judge(&StopInput {
                away: Some(AwayTerms { hold_pushes: self.hold_pushes, queued: &self.queued }),
                owed: &OwedView::of(owed),
                stop_hook_active: active,
                last_assistant_message: message,
                session: &self.state,
                now: &now,
                deadline,
                qualifying_wake: qualifying_wake(crons, &now, deadline),
                block_cap: self.cap,
                own_bound: self.own_bound,
                wakes: !self.own_bound,
                behind: &self.behind,
                loop_turn: false,
            });
            // The caller appends `judged` and folds it back: a round trip through JSON.
            let json = serde_json::to_string(&j.judged).unwrap();
            self.state = serde_json::from_str::<Judged>(&json).unwrap().session_state();
            j
        }
    }

    fn every_ten() -> Vec<SessionCron> {
        vec![SessionCron { schedule: "*/10 * * * *".into(), recurring: true }]
    }

    /// Acceptance 1: a recurring `*/10` wake with an unchanged capped item releases two
    /// stops, then every later stop is blocked (row 4), whatever `stop_hook_active` says.
    #[test]
    fn wake_releases_an_unchanged_capped_set_twice() {
        let capped_kinds = [
            unpushed("feat/x"),
            Owed::PullRequest { number: 12, why: PrWhy::Behind },
            Owed::PullRequest { number: 12, why: PrWhy::Failing },
            Owed::Working { id: "fix-login".into(), title: String::new(), added_seq: 0, promised: false },
        ];
        for item in capped_kinds {
            let owed = [item.clone(), look_due("ci-run")];
            let crons = every_ten();
            let mut s = Session::new();
            let first = s.stop("2026-10-18T13:51:00Z", &owed, false, &[], None);
            assert_eq!(first.judged.row, Row::OwedChanged, "{item:?}");
            let one = s.stop("2026-10-18T13:52:00Z", &owed, true, &crons, None);
            assert_eq!((one.judged.row, one.judged.wake_count), (Row::WakeReleased, 1), "{item:?}");
            assert_eq!(one.judged.next_look, Some(at("2026-10-18T14:00:00Z").timestamp()));
            let two = s.stop("2026-10-18T14:01:00Z", &owed, false, &crons, None);
            assert_eq!((two.judged.row, two.judged.wake_count), (Row::WakeReleased, 2), "{item:?}");
            for (i, (now, active)) in
                [("2026-10-18T14:11:00Z", false), ("2026-10-18T14:11:30Z", true), ("2026-10-18T14:21:00Z", false)].into_iter().enumerate()
            {
                let later = s.stop(now, &owed, active, &crons, None);
                assert_eq!(later.judged.row, Row::WakesSpent, "{item:?} later stop {i}");
                assert!(later.verdict.is_block());
                assert_eq!(later.judged.wake_count, 2);
            }
        }
    }

    fn unlisted(branch: &str) -> BehindRef {
        BehindRef { branch: branch.into(), why: BehindWhy::Unlisted }
    }

    fn changed(branch: &str) -> BehindRef {
        BehindRef { branch: branch.into(), why: BehindWhy::Changed }
    }

    fn reason_of(j: &Judgement) -> &str {
        match &j.verdict {
            Verdict::Block { reason } => reason,
            Verdict::Allow { .. } => panic!("expected a block: {j:?}"),
        }
    }

    /// Issue 23: a behind set blocks a stop a wake would allow once, then the wake allows;
    /// a new set blocks once again, and a set that empties and comes back is named again.
    #[test]
    fn a_behind_set_blocks_one_stop_a_wake_would_allow() {
        let crons = every_ten();
        let mut s = Session::new();
        s.behind = vec![unlisted("feat/a")];
        let first = s.stop("2026-10-18T13:51:00Z", &[], false, &crons, None);
        assert_eq!((first.judged.row, first.judged.state), (Row::Behind, StopState::Working));
        let reason = reason_of(&first);
        assert!(reason.starts_with("abcd: the person is away and the checklist is behind this session's work"), "{reason}");
        assert!(reason.contains("no item names feat/a in its owner refs"), "{reason}");
        assert_eq!(first.judged.behind_fingerprint, behind_fingerprint(&s.behind));
        let second = s.stop("2026-10-18T13:52:00Z", &[], true, &crons, None);
        assert_eq!(second.judged.row, Row::NothingOwedWake, "the same set is named once");
        assert!(!second.verdict.is_block());
        // A new set (a branch changed since the last write joins): named once more.
        s.behind.push(changed("feat/b"));
        let third = s.stop("2026-10-18T14:01:00Z", &[], false, &crons, None);
        assert_eq!(third.judged.row, Row::Behind);
        assert!(reason_of(&third).contains("feat/b has commits after the checklist's last write"), "{}", reason_of(&third));
        assert_eq!(s.stop("2026-10-18T14:02:00Z", &[], true, &crons, None).judged.row, Row::NothingOwedWake);
        // Caught up: the set is forgotten, so falling behind again is named again.
        s.behind.clear();
        let caught_up = s.stop("2026-10-18T14:11:00Z", &[], false, &crons, None);
        assert_eq!((caught_up.judged.row, caught_up.judged.behind_fingerprint.clone()), (Row::NothingOwedWake, None));
        s.behind = vec![unlisted("feat/a")];
        assert_eq!(s.stop("2026-10-18T14:21:00Z", &[], false, &crons, None).judged.row, Row::Behind);
    }

    /// A block the stop gives anyway carries the behind note once; a released wake does not
    /// count a behind block as a wake.
    #[test]
    fn a_behind_set_rides_a_block_given_anyway_and_spends_no_wake() {
        let owed = [unpushed("feat/x")];
        let mut s = Session::new();
        s.behind = vec![changed("feat/x")];
        let first = s.stop("2026-10-18T13:51:00Z", &owed, false, &[], None);
        assert_eq!(first.judged.row, Row::OwedChanged);
        assert!(reason_of(&first).contains("Also, the checklist is behind this session's work: feat/x has commits after"));
        let second = s.stop("2026-10-18T13:52:00Z", &owed, true, &[], None);
        assert_eq!(second.judged.row, Row::NoWake);
        assert!(!reason_of(&second).contains("behind this session's work"), "{}", reason_of(&second));
        // Nothing owed and no wake: row 7 carries it.
        let mut s = Session::new();
        s.behind = vec![unlisted("feat/a")];
        let j = s.stop("2026-10-18T13:51:00Z", &[], false, &[], None);
        assert_eq!(j.judged.row, Row::NothingOwedNoWake);
        assert!(reason_of(&j).contains("Also, the checklist is behind this session's work: no item names feat/a"));
        // Row 3 with a capped item: the behind block spends no wake.
        let crons = every_ten();
        let mut s = Session::new();
        s.stop("2026-10-18T13:51:00Z", &owed, false, &crons, None);
        s.behind = vec![unlisted("feat/a")];
        let j = s.stop("2026-10-18T13:52:00Z", &owed, true, &crons, None);
        assert_eq!((j.judged.row, j.judged.wake_count), (Row::Behind, 0));
        let j = s.stop("2026-10-18T13:53:00Z", &owed, true, &crons, None);
        assert_eq!((j.judged.row, j.judged.wake_count), (Row::WakeReleased, 1));
    }

    /// The behind block stays inside the host's cap: it is given only when its block count
    /// is at most the cap, and a set not named keeps waiting for a stop that can name it.
    #[test]
    fn a_behind_block_is_given_only_within_the_cap() {
        let crons = every_ten();
        for (count_before, named) in [(1, true), (2, false)] {
            let mut s = Session::new();
            s.cap = 2;
            s.state = SessionState { block_count: count_before, ..SessionState::default() };
            s.behind = vec![unlisted("feat/a")];
            let j = s.stop("2026-10-18T13:51:00Z", &[], true, &crons, None);
            if named {
                assert_eq!((j.judged.row, j.judged.block_count, j.record_stop.clone()), (Row::Behind, 2, None));
            } else {
                assert_eq!((j.judged.row, j.judged.behind_fingerprint.clone()), (Row::NothingOwedWake, None));
                // After the allow (the host's count resets on a tool call) it is named.
                assert_eq!(s.stop("2026-10-18T13:52:00Z", &[], false, &crons, None).judged.row, Row::Behind);
            }
        }
        // Past the cap on a block given anyway, the note is kept for a later stop.
        let mut s = Session::new();
        s.cap = 1;
        s.state = SessionState { block_count: 1, ..SessionState::default() };
        s.behind = vec![unlisted("feat/a")];
        let j = s.stop("2026-10-18T13:51:00Z", &[], true, &[], None);
        assert!(j.record_stop.is_some() && !reason_of(&j).contains("behind this session's work"));
        assert_eq!(j.judged.behind_fingerprint, None);
    }

    /// While present the behind set never blocks, and a question is blocked first without
    /// taking the set as named.
    #[test]
    fn present_or_a_question_never_spends_the_behind_set() {
        let now = at("2026-10-18T13:51:00Z");
        let behind = [unlisted("feat/a")];
        let state = SessionState::default();
        let present = judge(&StopInput {
            away: None,
            owed: &OwedView::of(&[]),
            stop_hook_active: false,
            last_assistant_message: None,
            session: &state,
            now: &now,
            deadline: deadline(false, [], now.timestamp()),
            qualifying_wake: None,
            block_cap: DEFAULT_BLOCK_CAP,
            own_bound: false,
            wakes: true,
            behind: &behind,
            loop_turn: false,
        });
        assert_eq!(present.verdict, Verdict::Allow { state: StopState::Stopped, system_message: None });
        let mut s = Session::new();
        s.behind = behind.to_vec();
        let q = s.stop("2026-10-18T13:51:00Z", &[], false, &every_ten(), Some("Shall I go on?"));
        assert_eq!((q.judged.row, q.judged.behind_fingerprint.clone()), (Row::Question, None));
        assert_eq!(s.stop("2026-10-18T13:52:00Z", &[], true, &every_ten(), Some("Shall I go on?")).judged.row, Row::Behind);
    }

    #[test]
    fn the_behind_text_names_at_most_behind_named_max_branches() {
        let refs = |n: usize| (0..n).map(|i| unlisted(&format!("b{i}"))).collect::<Vec<_>>();
        let at_max = behind_text(&refs(BEHIND_NAMED_MAX));
        assert!(at_max.contains(&format!("b{}", BEHIND_NAMED_MAX - 1)) && !at_max.contains("more)"), "{at_max}");
        let past = behind_text(&refs(BEHIND_NAMED_MAX + 1));
        assert!(!past.contains(&format!("b{BEHIND_NAMED_MAX}")) && past.contains("(and 1 more)"), "{past}");
        // Unlisted first, then changed, within the one bound.
        let mut mixed = refs(BEHIND_NAMED_MAX - 1);
        mixed.extend([changed("c0"), changed("c1")]);
        let text = behind_text(&mixed);
        assert!(text.contains("; c0 has commits after the checklist's last write (and 1 more)."), "{text}");
        assert_eq!(behind_text(&[]), "");
        assert_eq!(behind_fingerprint(&[]), None);
        // The fingerprint is the set's: order and duplicates aside, and the why counts.
        let (a, b) = (unlisted("x"), changed("y"));
        assert_eq!(behind_fingerprint(&[a.clone(), b.clone()]), behind_fingerprint(&[b.clone(), a.clone(), a.clone()]));
        assert_ne!(behind_fingerprint(&[unlisted("y")]), behind_fingerprint(&[b]));
    }

    /// Acceptance 1: a set of only a waiting item (a look due) keeps releasing on a wake.
    #[test]
    fn a_set_of_only_a_waiting_item_keeps_releasing() {
        let owed = [look_due("ci-run")];
        let crons = every_ten();
        let mut s = Session::new();
        assert_eq!(s.stop("2026-10-18T13:51:00Z", &owed, false, &crons, None).judged.row, Row::OwedChanged);
        for minute in 0..12 {
            let now = format!("2026-10-18T14:{:02}:30Z", minute * 5 % 60);
            let j = s.stop(&now, &owed, minute % 2 == 1, &crons, None);
            assert_eq!(j.judged.row, Row::WakeReleased, "wake {minute}");
            assert_eq!(j.judged.wake_count, 0);
        }
    }

    /// Acceptance 1: a change in the capped items resets the wake count; a look falling due
    /// changes the owed set (a block) but neither resets nor adds to the count.
    #[test]
    fn a_change_in_the_capped_items_resets_the_wake_count() {
        let crons = every_ten();
        let a = [unpushed("feat/a")];
        let mut s = Session::new();
        s.stop("2026-10-18T13:51:00Z", &a, false, &[], None);
        s.stop("2026-10-18T13:52:00Z", &a, true, &crons, None);
        assert_eq!(s.stop("2026-10-18T14:01:00Z", &a, false, &crons, None).judged.wake_count, 2);

        let b = [unpushed("feat/b")];
        let moved = s.stop("2026-10-18T14:11:00Z", &b, false, &crons, None);
        assert_eq!((moved.judged.row, moved.judged.wake_count), (Row::OwedChanged, 0));
        let released = s.stop("2026-10-18T14:12:00Z", &b, true, &crons, None);
        assert_eq!((released.judged.row, released.judged.wake_count), (Row::WakeReleased, 1));
        assert_eq!(s.stop("2026-10-18T14:21:00Z", &b, false, &crons, None).judged.wake_count, 2);

        let b_and_look = [unpushed("feat/b"), look_due("ci-run")];
        let named = s.stop("2026-10-18T14:31:00Z", &b_and_look, false, &crons, None);
        assert_eq!((named.judged.row, named.judged.wake_count), (Row::OwedChanged, 2));
        let spent = s.stop("2026-10-18T14:32:00Z", &b_and_look, true, &crons, None);
        assert_eq!(spent.judged.row, Row::WakesSpent);
    }

    /// Acceptance 1: the ninth consecutive block (cap 8) records the stop, labelled possibly
    /// forced by the cap; a set change at the sixth block does not reset the count; the
    /// environment's cap moves it; 0 disables it.
    #[test]
    fn the_block_passing_the_cap_records_the_stop() {
        for (cap, first_recorded) in [(8, 9), (DEFAULT_BLOCK_CAP, 9), (12, 13), (1, 2)] {
            let mut s = Session { cap, ..Session::new() };
            for n in 1..=first_recorded + 1 {
                let owed = if n < 6 { vec![unpushed("feat/x")] } else { vec![unpushed("feat/x"), look_due("ci-run")] };
                let j = s.stop("2026-10-18T13:51:00Z", &owed, n > 1, &[], None);
                assert!(j.verdict.is_block());
                assert_eq!(j.judged.block_count, n, "cap {cap}");
                if n < first_recorded {
                    assert_eq!(j.record_stop, None, "cap {cap} block {n}");
                    assert_eq!(j.judged.state, StopState::Working);
                } else {
                    let expected = StopRecord {
                        kind: StopKind::WorkOwed,
                        possibly_forced_by_cap: true,
                        next: Some("branch feat/x has commits not pushed".into()),
                        abcd_bound: None,
                    };
                    assert_eq!(j.record_stop, Some(expected), "cap {cap} block {n}");
                    assert_eq!(j.judged.state, StopState::Stopped);
                }
            }
        }

        let mut s = Session { cap: 8, ..Session::new() };
        for n in 1..=9 {
            let j = s.stop("2026-10-18T13:51:00Z", &[], n > 1, &[], None);
            assert_eq!(j.judged.row, Row::NothingOwedNoWake);
            if n == 9 {
                assert_eq!(j.record_stop.map(|r| r.kind), Some(StopKind::NoNextLook));
            }
        }

        let mut s = Session { cap: 0, ..Session::new() };
        for n in 1..=40 {
            assert_eq!(s.stop("2026-10-18T13:51:00Z", &[unpushed("feat/x")], n > 1, &[], None).record_stop, None);
        }

        // A block with stop_hook_active false starts the count again.
        let mut s = Session::new();
        for n in 1..=5 {
            s.stop("2026-10-18T13:51:00Z", &[unpushed("feat/x")], n > 1, &[], None);
        }
        assert_eq!(s.stop("2026-10-18T14:51:00Z", &[unpushed("feat/x")], false, &[], None).judged.block_count, 1);
    }

    /// Issue 38: on a host with no cap (Codex), abcd's own bound ends the run: the blocks up
    /// to it are sent, the one past it is not (the stop is allowed, said to the person) and
    /// the stop is recorded as ended by abcd's bound, never as forced by a host's cap. Each
    /// bound on both sides of its edge; a new turn starts the count again.
    #[test]
    fn past_abcds_own_bound_the_stop_is_allowed_and_recorded_as_abcds() {
        for bound in [1, 3, DEFAULT_BLOCK_CAP] {
            let mut s = Session { cap: bound, own_bound: true, ..Session::new() };
            for n in 1..=bound {
                let j = s.stop("2026-10-18T13:51:00Z", &[unpushed("feat/x")], n > 1, &[], None);
                assert!(j.verdict.is_block(), "bound {bound} block {n}");
                let Verdict::Block { reason } = &j.verdict else { unreachable!() };
                assert!(!reason.contains("wake"), "a host with no wakes is told of none: {reason}");
                assert_eq!((j.record_stop.clone(), j.judged.state), (None, StopState::Working), "bound {bound} block {n}");
            }
            let past = s.stop("2026-10-18T13:51:00Z", &[unpushed("feat/x")], true, &[], None);
            let Verdict::Allow { state: StopState::Stopped, system_message: Some(line) } = &past.verdict else {
                panic!("bound {bound}: {:?}", past.verdict)
            };
            assert!(line.contains(&format!("after {bound} consecutive blocks (abcd's own bound")), "{line}");
            assert!(line.contains("branch feat/x has commits not pushed"), "{line}");
            let expected = StopRecord {
                kind: StopKind::WorkOwed,
                possibly_forced_by_cap: false,
                next: Some("branch feat/x has commits not pushed".into()),
                abcd_bound: Some(bound),
            };
            assert_eq!(past.record_stop, Some(expected));
            assert_eq!((past.judged.state, past.judged.block_count), (StopState::Stopped, bound + 1));
            // The next turn's first stop blocks again: the count starts afresh.
            let next_turn = s.stop("2026-10-18T13:55:00Z", &[unpushed("feat/x")], false, &[], None);
            assert!(next_turn.verdict.is_block());
            assert_eq!(next_turn.judged.block_count, 1);
        }
        // With nothing owed and no wake the same bound holds, recorded with no next item.
        let mut s = Session { cap: 2, own_bound: true, ..Session::new() };
        for n in 1..=3 {
            let j = s.stop("2026-10-18T13:51:00Z", &[], n > 1, &[], None);
            assert_eq!(j.verdict.is_block(), n <= 2, "block {n}");
            if let Verdict::Block { reason } = &j.verdict {
                assert!(!reason.contains("wake"), "{reason}");
            }
            if n == 3 {
                let r = j.record_stop.unwrap();
                assert_eq!((r.kind, r.abcd_bound, r.next), (StopKind::NoNextLook, Some(2), None));
            }
        }
    }

    /// Acceptance 1: a prose question is blocked once per message.
    #[test]
    fn a_prose_question_is_blocked_once_per_message() {
        let owed = [unpushed("feat/x")];
        let mut s = Session::new();
        let ask = Some("I rebased feat/x.\n\nShould I push it?");
        let first = s.stop("2026-10-18T13:51:00Z", &owed, false, &[], ask);
        assert_eq!(first.judged.row, Row::Question);
        assert_eq!(reason(&first), question_reason());
        let again = s.stop("2026-10-18T13:52:00Z", &owed, true, &[], ask);
        assert_eq!(again.judged.row, Row::OwedChanged, "the same message is not blocked again for its question");
        assert_eq!(again.judged.block_count, 2);
        let third = s.stop("2026-10-18T13:53:00Z", &owed, true, &[], ask);
        assert_eq!(third.judged.row, Row::NoWake);
        let other = s.stop("2026-10-18T13:54:00Z", &owed, true, &[], Some("Or should I wait?"));
        assert_eq!(other.judged.row, Row::Question, "a new question is");
        let plain = s.stop("2026-10-18T13:55:00Z", &owed, true, &[], Some("Is it? Yes. Done."));
        assert_eq!(plain.judged.row, Row::NoWake);
    }

    #[test]
    fn a_question_is_a_last_line_ending_in_a_question_mark() {
        for yes in ["Shall I?", "Done.\nShall I push?\n\n  ", "**Which one?**", "a\r\nb?\r\n"] {
            assert!(ends_in_question(yes), "{yes:?}");
        }
        for no in ["", "Done.", "Shall I?\nNo, done.", "Is it? Yes.", "?\n(y/n)"] {
            assert!(!ends_in_question(no), "{no:?}");
        }
        let long = format!("{}\nWhich?", "é".repeat(10_000));
        assert!(ends_in_question(&long));
    }

    /// SPEC §6 "Pushes": the reason defers to the standing instruction, queues otherwise, says
    /// a queued push stays owed, and never names the away mode as permission.
    #[test]
    fn the_push_wording_defers_to_the_standing_instruction() {
        let fresh = SessionState::default();
        let branch = [unpushed("feat/x")];
        let plain = Stop { hold_pushes: false, ..stop(&branch, &fresh) }.judge();
        let r = reason(&plain);
        assert!(r.contains("Do the local work, then push if your standing instruction allows (the away mode is not that instruction)"));
        assert!(r.contains("`abcd mode queue 'push feat/x'`") && r.contains("a queued push stays owed"), "{r}");

        let queued = vec!["push feat/x.".to_string()];
        let already = Stop { queued: &queued, ..stop(&branch, &fresh) }.judge();
        assert!(reason(&already).contains("A push for branch feat/x is already queued, and a queued push stays owed"), "{already:?}");
        let not_this_one = vec!["push feat/x-2".to_string()];
        let other = Stop { queued: &not_this_one, ..stop(&branch, &fresh) }.judge();
        assert!(reason(&other).contains("otherwise queue the push"), "feat/x is not named in feat/x-2");

        let held = Stop { hold_pushes: true, ..stop(&branch, &fresh) }.judge();
        assert!(reason(&held).contains("The person has said pushes wait: finish the local work, then queue the push"), "{held:?}");

        let pr = [Owed::PullRequest { number: 12, why: PrWhy::Dirty }];
        let pr_reason = Stop { ..stop(&pr, &fresh) }.judge();
        assert!(reason(&pr_reason).contains("pull request #12 conflicts with its base. Do the local work"), "{pr_reason:?}");
        let queued_pr = vec!["push the fix for #12".to_string()];
        let pr_queued = Stop { hold_pushes: true, queued: &queued_pr, ..stop(&pr, &fresh) }.judge();
        assert!(reason(&pr_queued).contains("stays owed until the pushed fix reaches the forge"));

        let local = [
            Owed::Unpushed { branch: "feat/x".into(), next_act_is_push: false },
            Owed::Working { id: "w".into(), title: String::new(), added_seq: 0, promised: false },
        ];
        let no_push = stop(&local, &fresh).judge();
        assert!(!reason(&no_push).contains("push if"), "no push wording when the next act is not a push");

        let quote = [unpushed("it's")];
        assert!(reason(&stop(&quote, &fresh).judge()).contains(r"`abcd mode queue 'push it'\''s'`"));
        let unchanged = seen(&branch, 1, 0);
        let no_wake = stop(&branch, &unchanged).judge();
        assert_eq!(no_wake.judged.row, Row::NoWake);
        for r in [&plain, &already, &held, &pr_reason, &pr_queued, &no_wake].map(reason) {
            assert!(!r.contains("away mode allows"), "{r}");
            for once in ["take another", "standing instruction", "abcd mode queue", "stays owed"] {
                assert!(r.matches(once).count() <= 1, "the reason says each thing once: {once:?} in {r}");
            }
        }
    }

    #[test]
    fn the_reason_names_the_next_item_first_and_bounds_the_rest() {
        let fresh = SessionState::default();
        let mut owed: Vec<Owed> = (0..100)
            .map(|i| Owed::Working {
                id: format!("item-{i:03}-{}", "x".repeat(300)),
                title: "t".repeat(300),
                added_seq: 0,
                promised: false,
            })
            .collect();
        owed.push(unpushed("feat/y"));
        owed.push(Owed::PullRequest { number: 7, why: PrWhy::Behind });
        owed.push(Owed::PullRequest { number: 3, why: PrWhy::Failing });
        owed.push(look_due("ci"));
        let j = stop(&owed, &fresh).judge();
        let r = reason(&j);
        assert!(r.starts_with("abcd: the person is away and work is owed (104 items). Next: pull request #3 has failing checks."), "{r}");
        assert!(
            r.contains("Also owed: pull request #7 is behind its base; branch feat/y has commits not pushed; checklist item item-000"),
            "{r}"
        );
        assert!(r.contains("; and 99 more."), "{r}");
        assert!(r.chars().count() <= REASON_MAX_CHARS);
        assert!(!r.contains(&"x".repeat(ITEM_NAME_MAX_CHARS)), "names are clipped");
    }

    #[test]
    fn checklist_items_are_named_in_the_order_added_and_a_promised_one_before_everything() {
        let fresh = SessionState::default();
        let working = |id: &str, added_seq: u64, promised: bool| Owed::Working { id: id.into(), title: String::new(), added_seq, promised };
        let failing = Owed::PullRequest { number: 3, why: PrWhy::Failing };
        let owed = [working("10", 10, false), working("2", 2, false), failing.clone(), working("11", 11, false)];
        let r = stop(&owed, &fresh).judge();
        assert!(
            reason(&r).contains("Next: pull request #3 has failing checks. ")
                && reason(&r)
                    .contains("Also owed: checklist item 2 is working; checklist item 10 is working; checklist item 11 is working."),
            "{r:?}"
        );
        let promised = [owed.as_slice(), &[working("12", 12, true)]].concat();
        let r = stop(&promised, &fresh).judge();
        assert!(
            reason(&r).contains("Next: checklist item 12 is working. If it cannot move now, take another. Also owed: pull request #3"),
            "{r:?}"
        );
    }

    #[test]
    fn the_fingerprint_is_order_independent_and_sees_every_field() {
        let a = [unpushed("a"), look_due("b"), Owed::PullRequest { number: 1, why: PrWhy::Behind }];
        let b = [a[2].clone(), a[0].clone(), a[1].clone(), a[0].clone()];
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_eq!(fingerprint(&a).len(), 64);
        let moved = [unpushed("a"), look_due("b"), Owed::PullRequest { number: 1, why: PrWhy::Failing }];
        assert_ne!(fingerprint(&a), fingerprint(&moved));
        let local = [Owed::Unpushed { branch: "a".into(), next_act_is_push: false }, look_due("b"), a[2].clone()];
        assert_ne!(fingerprint(&a), fingerprint(&local));
        assert_ne!(
            fingerprint(&[Owed::Working { id: "b".into(), title: String::new(), added_seq: 0, promised: false }]),
            fingerprint(&[look_due("b")])
        );
        assert_ne!(fingerprint(&[]), fingerprint(&[look_due("")]));
    }

    /// Any owed item, from a small set of names so keys repeat with other seqs.
    fn any_owed(g: &mut Gen) -> Owed {
        let id = format!("{}", u8::arbitrary(g) % 12);
        let added_seq = u64::from(u8::arbitrary(g) % 8);
        match u8::arbitrary(g) % 5 {
            0 => Owed::Working { id, title: String::new(), added_seq, promised: bool::arbitrary(g) },
            1 => Owed::Working { id, title: "t".into(), added_seq, promised: false },
            2 => Owed::LookDue { id, title: String::new(), added_seq },
            3 => Owed::Unpushed { branch: format!("b{id}"), next_act_is_push: bool::arbitrary(g) },
            _ => Owed::PullRequest {
                number: u64::from(u8::arbitrary(g) % 6),
                why: *g.choose(&[PrWhy::Failing, PrWhy::Behind, PrWhy::Dirty]).unwrap(),
            },
        }
    }

    /// The view composed from the checklist's part and the world's, each summed up alone,
    /// is the view of every item: the count of distinct items, the first named in naming
    /// order, the fingerprints; and every part made is one a reader believes.
    #[test]
    fn the_view_composed_from_its_two_parts_is_the_view_of_every_item() {
        #[derive(Clone, Debug)]
        struct Items(Vec<Owed>);
        impl Arbitrary for Items {
            fn arbitrary(g: &mut Gen) -> Items {
                Items((0..usize::arbitrary(g) % 24).map(|_| any_owed(g)).collect())
            }
        }
        fn prop(Items(items): Items) -> TestResult {
            let (checklist, world): (Vec<Owed>, Vec<Owed>) = items.iter().cloned().partition(Owed::from_checklist);
            let (c, w) = (OwedPart::of(&checklist), OwedPart::of(&world));
            let composed = OwedView::compose(&c, &w);
            let every = in_naming_order(&items);
            let named: Vec<Owed> = every.iter().take(OWED_NAMED_MAX).map(|i| (*i).clone()).collect();
            TestResult::from_bool(
                c.is_consistent()
                    && w.is_consistent()
                    && composed == OwedView::of(&items)
                    && composed.len() == every.len() as u64
                    && composed.first == named
                    && composed.fingerprint == fingerprint(&items)
                    && composed.capped_fingerprint == fingerprint(items.iter().filter(|i| i.is_capped()))
                    && composed.capped_any() == items.iter().any(Owed::is_capped),
            )
        }
        QuickCheck::new().tests(500).quickcheck(prop as fn(Items) -> TestResult);
    }

    /// A part read from a file is believed only when it could be one abcd made.
    #[test]
    fn a_part_that_abcd_could_not_have_made_is_not_consistent() {
        let items: Vec<Owed> =
            (0..7).map(|i| Owed::Working { id: i.to_string(), title: String::new(), added_seq: i, promised: false }).collect();
        let part = OwedPart::of(&items);
        assert!(part.is_consistent() && part.count == 7 && part.first.len() == OWED_NAMED_MAX);
        let mut fewer_named = part.clone();
        fewer_named.first.pop();
        let mut out_of_order = part.clone();
        out_of_order.first.swap(0, 1);
        let mut twice = part.clone();
        twice.first[1] = twice.first[0].clone();
        let mut more_capped = part.clone();
        more_capped.capped = 8;
        let mut short_digest = part.clone();
        short_digest.digest.pop();
        let mut mixed = part.clone();
        mixed.first[4] = Owed::PullRequest { number: 9, why: PrWhy::Behind };
        let mut none_capped = part.clone();
        none_capped.capped = 0;
        let mut fewer_capped = part.clone();
        fewer_capped.capped = 4;
        let promised = |id: &str, seq: u64| Owed::Working { id: id.into(), title: String::new(), added_seq: seq, promised: true };
        let mut twice_apart = OwedPart::of(&[
            promised("a", 1),
            promised("b", 2),
            Owed::Working { id: "a".into(), title: String::new(), added_seq: 3, promised: false },
        ]);
        assert!(twice_apart.is_consistent(), "a key given twice is one item: {twice_apart:?}");
        twice_apart.first =
            vec![promised("a", 1), promised("b", 2), Owed::Working { id: "a".into(), title: String::new(), added_seq: 3, promised: false }];
        twice_apart.count = 3;
        let mut empty_with_digest = OwedPart::of(&[]);
        empty_with_digest.digest = part.digest.clone();
        let looks = OwedPart::of(&[look_due("x"), Owed::Working { id: "w".into(), title: String::new(), added_seq: 1, promised: false }]);
        assert!(looks.is_consistent() && looks.capped == 1);
        let mut look_first = looks.clone();
        look_first.capped = 2;
        for (what, p) in [
            ("one named too few", fewer_named),
            ("out of order", out_of_order),
            ("one item twice", twice),
            ("one key twice, apart", twice_apart),
            ("more capped than counted", more_capped),
            ("a digest of 63 digits", short_digest),
            ("items of two parts", mixed),
            ("working items named, none capped", none_capped),
            ("five capped named, four counted capped", fewer_capped),
            ("nothing owed, a digest of something", empty_with_digest),
            ("a look named second, two capped", look_first),
        ] {
            assert!(!p.is_consistent(), "{what}: {p:?}");
        }
    }

    #[test]
    fn the_deadline_is_the_earliest_of_the_future_looks_and_the_ceiling() {
        let now = at("2026-10-18T13:51:00Z").timestamp();
        assert_eq!(deadline(true, [], now), now + 30 * MINUTE);
        assert_eq!(deadline(false, [], now), now + 60 * MINUTE);
        assert_eq!(deadline(true, [now + 40 * MINUTE, now + 10 * MINUTE], now), now + 10 * MINUTE);
        assert_eq!(deadline(false, [now - 5 * MINUTE, now], now), now + 60 * MINUTE, "a look not in the future is ignored");
        assert_eq!(deadline(false, [now + 50 * MINUTE], now), now + 50 * MINUTE);
    }

    #[test]
    fn the_qualifying_wake_is_the_earliest_next_match_of_a_qualifying_cron() {
        let now = at("2026-10-18T13:51:00Z");
        let deadline = deadline(true, [], now.timestamp());
        let morning = SessionCron { schedule: "0 7 * * *".into(), recurring: true };
        let hourly = SessionCron { schedule: "0 * * * *".into(), recurring: true };
        let broken = SessionCron { schedule: "every ten minutes".into(), recurring: true };
        assert_eq!(qualifying_wake(&[morning.clone(), broken.clone()], &now, deadline), None);
        assert_eq!(qualifying_wake(&[hourly], &now, deadline), None, "14:00 may run 30 minutes late, past 14:21");
        let once = SessionCron { schedule: "13 14 18 10 *".into(), recurring: false };
        let crons = [morning, broken, once, every_ten()[0].clone()];
        assert_eq!(qualifying_wake(&crons, &now, deadline), Some(at("2026-10-18T14:00:00Z").timestamp()));
    }

    #[test]
    fn the_judged_event_round_trips_and_names_its_row() {
        let j = stop(&[unpushed("feat/x")], &SessionState::default()).judge();
        let json = serde_json::to_value(&j.judged).unwrap();
        assert_eq!(json["row"], "owed_changed");
        assert_eq!(json["state"], "working");
        assert_eq!(serde_json::from_value::<Judged>(json).unwrap(), j.judged);
        assert_eq!(Row::NothingOwedNoWake.number(), Some(7));
        assert_eq!(Row::PresentOwed.number(), None);
        let item = serde_json::to_value(unpushed("feat/x")).unwrap();
        assert_eq!(item, serde_json::json!({"kind": "unpushed", "branch": "feat/x", "next_act_is_push": true}));
        assert_eq!(serde_json::from_value::<Owed>(item).unwrap(), unpushed("feat/x"));
        let pr = serde_json::json!({"kind": "pull_request", "number": 4, "why": "dirty"});
        assert_eq!(serde_json::from_value::<Owed>(pr).unwrap(), Owed::PullRequest { number: 4, why: PrWhy::Dirty });
        assert!(serde_json::from_value::<Owed>(serde_json::json!({"kind": "working", "id": "a", "extra": 1})).is_err());
    }

    /// Arbitrary inputs over a small alphabet, so sets repeat and fingerprints match.
    #[derive(Clone, Debug)]
    struct Any {
        away: bool,
        hold_pushes: bool,
        owed: Vec<Owed>,
        active: bool,
        message: Option<String>,
        session: SessionState,
        wake: bool,
        cap: u32,
    }

    impl Arbitrary for Any {
        fn arbitrary(g: &mut Gen) -> Any {
            let names = ["a", "b", "feat/x"];
            let item = |g: &mut Gen| {
                let name = g.choose(&names).unwrap().to_string();
                match u8::arbitrary(g) % 4 {
                    0 => Owed::Working { id: name, title: String::new(), added_seq: 0, promised: false },
                    1 => Owed::LookDue { id: name, title: String::new(), added_seq: 0 },
                    2 => Owed::Unpushed { branch: name, next_act_is_push: bool::arbitrary(g) },
                    _ => Owed::PullRequest {
                        number: u64::from(u8::arbitrary(g) % 3),
                        why: *g.choose(&[PrWhy::Failing, PrWhy::Behind, PrWhy::Dirty]).unwrap(),
                    },
                }
            };
            let owed: Vec<Owed> = (0..usize::arbitrary(g) % 4).map(|_| item(g)).collect();
            let seen_set: Vec<Owed> =
                if bool::arbitrary(g) { owed.clone() } else { (0..usize::arbitrary(g) % 3).map(|_| item(g)).collect() };
            let mut session = seen(&seen_set, u32::from(u8::arbitrary(g) % 12), u32::from(u8::arbitrary(g) % 4));
            if bool::arbitrary(g) {
                session.owed_fingerprint = None;
                session.capped_fingerprint = None;
            }
            let message = match u8::arbitrary(g) % 3 {
                0 => None,
                1 => Some("Done.".to_string()),
                _ => Some(format!("Shall I {}?", g.choose(&names).unwrap())),
            };
            if bool::arbitrary(g) {
                session.question_hash = message.as_deref().map(message_hash);
            }
            Any {
                away: bool::arbitrary(g),
                hold_pushes: bool::arbitrary(g),
                owed,
                active: bool::arbitrary(g),
                message,
                session,
                wake: bool::arbitrary(g),
                cap: u32::from(u8::arbitrary(g) % 10),
            }
        }
    }

    impl Any {
        fn judge(&self) -> Judgement {
            Stop {
                away: self.away,
                hold_pushes: self.hold_pushes,
                queued: &[],
                owed: &self.owed,
                stop_hook_active: self.active,
                message: self.message.as_deref(),
                session: &self.session,
                wake: self.wake,
                cap: self.cap,
                behind: &[],
                loop_turn: false,
            }
            .judge()
        }
    }

    fn check(test: fn(Any) -> TestResult) {
        QuickCheck::new().tests(2_000).quickcheck(test);
    }

    /// quickcheck 1.1 names a failing input only when a shrunk one fails too: say it here.
    fn holds(ok: bool, a: &Any) -> TestResult {
        if ok { TestResult::passed() } else { TestResult::error(format!("{a:?} judged {:?}", a.judge())) }
    }

    #[test]
    fn property_present_never_blocks_and_records_nothing() {
        check(|a| {
            let a = Any { away: false, ..a };
            let j = a.judge();
            holds(!j.verdict.is_block() && j.record_stop.is_none() && j.judged.state == StopState::Stopped, &a)
        });
    }

    #[test]
    fn property_the_block_count_follows_stop_hook_active() {
        check(|a| {
            let j = a.judge();
            let expected = match (j.verdict.is_block(), a.active) {
                (false, _) => 0,
                (true, false) => 1,
                (true, true) => a.session.block_count + 1,
            };
            holds(j.judged.block_count == expected, &a)
        });
    }

    #[test]
    fn property_away_never_allows_without_a_wake() {
        check(|a| {
            let a = Any { away: true, wake: false, ..a };
            let j = a.judge();
            holds(j.verdict.is_block() && j.judged.state != StopState::Waiting, &a)
        });
    }

    #[test]
    fn property_a_stop_is_recorded_exactly_when_a_block_passes_the_cap() {
        check(|a| {
            let j = a.judge();
            let passes = j.verdict.is_block() && a.cap > 0 && j.judged.block_count > a.cap;
            let ok = j.record_stop.is_some() == passes
                && j.record_stop.as_ref().is_none_or(|r| r.possibly_forced_by_cap)
                && (j.judged.state == StopState::Stopped) == (passes || !a.away);
            holds(ok, &a)
        });
    }

    #[test]
    fn property_the_owed_order_does_not_change_the_verdict() {
        check(|a| {
            let mut reversed = a.clone();
            reversed.owed.reverse();
            holds(a.judge() == reversed.judge(), &a)
        });
    }

    #[test]
    fn property_a_wake_releases_an_unchanged_capped_set_at_most_twice() {
        check(|a| {
            let j = a.judge();
            let capped = a.owed.iter().any(Owed::is_capped);
            holds(j.judged.row != Row::WakeReleased || !capped || (1..=WAKE_RELEASES_MAX).contains(&j.judged.wake_count), &a)
        });
    }

    #[test]
    fn an_owed_item_is_named_by_its_title_within_its_bound() {
        let working = |title: &str| Owed::Working { id: "7".into(), title: title.into(), added_seq: 0, promised: false };
        assert_eq!(working("Write the parser").describe(), "checklist item 7 (Write the parser) is working");
        assert_eq!(working("").describe(), "checklist item 7 is working", "an item from an older record has no title");
        let at_bound = "t".repeat(ITEM_TITLE_SHOWN_MAX_CHARS);
        assert!(working(&at_bound).describe().contains(&format!("({at_bound})")));
        let past = working(&"t".repeat(ITEM_TITLE_SHOWN_MAX_CHARS + 1)).describe();
        assert!(past.contains(&format!("({}…)", "t".repeat(ITEM_TITLE_SHOWN_MAX_CHARS - 1))), "{past}");
        // The title names the item; only the id is its identity.
        assert_eq!(working("old title").key(), working("new title").key());
        let due = Owed::LookDue { id: "8".into(), title: "Read the review".into(), added_seq: 0 };
        assert_eq!(due.describe(), "checklist item 8 (Read the review) is due a look (its next look has passed)");
    }
}
