//! The rule of proof (journal-format §10): which lines of a damaged journal the chain proves,
//! in which order they belong, and which acknowledged seqs are lost. Repair writes this plan;
//! readers that meet damage fold it without writing. It never guesses: a line is kept because
//! the chain from the genesis or the chain back from the head anchor reaches it, or because it
//! is the only run of lines that fits a hole between them, never because it comes next in the
//! file.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::Path;

use super::append::JournalError;
use super::format::{self, Hash, LineFault};
use super::scan::{self, Piece, ScanError};
use super::storage::StorageFile;

/// Candidate lines one plan holds in memory (a journal of about 1.6 GB at typical line
/// sizes); past it a salvage or a reader refuses rather than exhaust memory.
pub const MAX_PLAN_LINES: usize = 1 << 22;

/// The highest chain position a kept line may have, and the highest seq an anchor may name
/// for a plan to use it: far past any journal's reach (a journal of `MAX_JOURNAL_BYTES`
/// holds fewer lines), so a line or anchor beyond it is forged, and a plan never keeps a
/// line after which no seq is left for the records it writes or the next append.
pub const MAX_SALVAGE_SEQ: u64 = 1 << 48;

/// Where a candidate line's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// In the journal file, `[offset, offset + len)`.
    File { offset: u64, len: u64 },
    /// The n-th extra line handed in (this machine's own mirror).
    Extra(usize),
}

/// A line valid on its own (§6.2), wherever it was found.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub seq: u64,
    pub prev: Hash,
    pub hash: Hash,
    /// Its chain position (§5.2): what the line after it continues from.
    pub position: (u64, Hash),
    pub source: Source,
}

/// A piece of the file that is not a candidate line.
#[derive(Clone, Debug)]
pub struct BadSpan {
    pub offset: u64,
    pub len: u64,
    /// Its problem, in words.
    pub problem: String,
    /// Some of it was written whole (its hash verifies, or it embeds a line): not what a
    /// crashed append leaves.
    pub written_whole: bool,
}

/// Everything a plan is made from: the candidates (the file's in file order, then the
/// extra lines) and the pieces of the file that are no line.
#[derive(Debug, Default)]
pub struct Collected {
    pub candidates: Vec<Candidate>,
    pub bad: Vec<BadSpan>,
    pub file_len: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("the journal holds more than {MAX_PLAN_LINES} lines, more than one salvage plan holds in memory")]
    TooManyLines,
}

struct TooManyLines;

impl Collected {
    /// Reads every piece of `file` (§6.1), keeping each line valid on its own (and each line a
    /// damaged piece embeds, §6.4 A) as a candidate.
    pub fn from_file(file: &dyn StorageFile, path: &Path) -> Result<Collected, CollectError> {
        let mut out = Collected::default();
        match scan::for_each_piece(file, 0, |piece| out.piece(piece)) {
            Ok(()) => {}
            Err(ScanError::Io(source)) => return Err(JournalError::Io { what: "reading", path: path.to_owned(), source }.into()),
            Err(ScanError::Visitor(TooManyLines)) => return Err(CollectError::TooManyLines),
        }
        out.file_len = file.len().map_err(|source| JournalError::Io { what: "inspecting", path: path.to_owned(), source })?;
        Ok(out)
    }

    /// Adds lines from elsewhere (verbatim, each with its `LF`); a line that is not valid on
    /// its own, or lies past [`MAX_SALVAGE_SEQ`], is ignored, since it cannot be written back.
    pub fn add_extra(&mut self, lines: &[Vec<u8>]) -> Result<(), CollectError> {
        for (i, line) in lines.iter().enumerate() {
            if let Ok(event) = format::verify_line(line)
                && event.chain_position().0 < MAX_SALVAGE_SEQ
            {
                self.push(&event, Source::Extra(i)).map_err(|TooManyLines| CollectError::TooManyLines)?;
            }
        }
        Ok(())
    }

    fn push(&mut self, event: &format::Event, source: Source) -> Result<(), TooManyLines> {
        if self.candidates.len() == MAX_PLAN_LINES {
            return Err(TooManyLines);
        }
        self.candidates.push(Candidate { seq: event.seq, prev: event.prev, hash: event.hash, position: event.chain_position(), source });
        Ok(())
    }

    /// A line of the file valid on its own: a candidate, unless its position is past
    /// [`MAX_SALVAGE_SEQ`] (then it is damage, written whole).
    fn push_file_line(&mut self, event: &format::Event, offset: u64, len: u64) -> Result<(), TooManyLines> {
        if event.chain_position().0 >= MAX_SALVAGE_SEQ {
            let problem = format!("a line of seq {} lies past any journal's reach", event.chain_position().0);
            self.push_bad(BadSpan { offset, len, problem, written_whole: true });
            return Ok(());
        }
        self.push(event, Source::File { offset, len })
    }

    /// Adds a bad piece, merged into the one before it when they touch: a run of damage is
    /// held as one span, however many pieces it splits into.
    fn push_bad(&mut self, bad: BadSpan) {
        match self.bad.last_mut() {
            Some(last) if last.offset + last.len == bad.offset => {
                last.len += bad.len;
                last.written_whole |= bad.written_whole;
            }
            _ => self.bad.push(bad),
        }
    }

    fn piece(&mut self, piece: Piece<'_>) -> Result<(), TooManyLines> {
        let fault = if piece.too_long { Err(LineFault::TooLong) } else { format::verify_line(piece.bytes) };
        let fault = match fault {
            Ok(event) => return self.push_file_line(&event, piece.offset, piece.len),
            Err(fault) => fault,
        };
        // Of an over-long piece only its end is at hand: the longest line that can be embedded.
        let kept_from = piece.offset + piece.len - piece.bytes.len() as u64;
        if let Some(at) = format::embedded_line_at(piece.bytes) {
            // Two lines merged by a damaged newline, or garbage over the start of a line:
            // the bytes before the embedded line are damage, the embedded line is judged alone.
            let at_file = kept_from + at as u64;
            self.push_bad(BadSpan { offset: piece.offset, len: at_file - piece.offset, problem: fault.to_string(), written_whole: true });
            let (offset, len) = (at_file, piece.offset + piece.len - at_file);
            return match format::verify_line(&piece.bytes[at..]) {
                Ok(event) => self.push_file_line(&event, offset, len),
                Err(f) => {
                    self.push_bad(BadSpan { offset, len, problem: f.to_string(), written_whole: true });
                    Ok(())
                }
            };
        }
        let written_whole = !piece.too_long && format::hash_verifies(piece.bytes);
        self.push_bad(BadSpan { offset: piece.offset, len: piece.len, problem: fault.to_string(), written_whole });
        Ok(())
    }
}

/// One step of the journal as a salvage writes it, in chain order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Candidate `n`, written byte for byte.
    Line(usize),
    Gap(PlannedGap),
}

/// Seqs no kept line holds, stood in for by a gap record (§5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedGap {
    pub from: u64,
    pub to: u64,
    pub next_prev: Hash,
    /// The seqs up to the head anchor's, acknowledged and in no kept line.
    pub lost_tail: bool,
}

/// What became of a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Kept,
    /// Another copy of the same bytes is kept.
    Repeat,
    /// Nothing proves where it belongs: out of place, another journal's, a fork.
    Unproven,
}

/// The plan: the journal in chain order and the fate of every candidate.
#[derive(Clone, Debug)]
pub struct Plan {
    pub steps: Vec<Step>,
    pub fates: Vec<Fate>,
    /// Seqs of kept file lines written at another place than the one they had (out of chain
    /// order in the file).
    pub moved: Vec<u64>,
    /// The anchor vouched for a line the plan does not keep while the file shows that line's
    /// place taken (rule 6): the journal was rewritten or replaced there.
    pub rewritten: bool,
    /// Where the chain stands after the last step.
    pub end: (u64, Hash),
}

impl Plan {
    /// Every seq named lost, as inclusive ranges in order.
    pub fn lost(&self) -> Vec<(u64, u64)> {
        self.steps
            .iter()
            .filter_map(|s| match s {
                Step::Gap(g) => Some((g.from, g.to)),
                Step::Line(_) => None,
            })
            .collect()
    }

    pub fn kept_lines(&self) -> usize {
        self.steps.iter().filter(|s| matches!(s, Step::Line(_))).count()
    }
}

/// One step of a plan as a reader folds it.
#[derive(Debug)]
pub enum Folded<'a> {
    /// A kept line of the file, read back and verified.
    Line(&'a format::Event),
    /// Seqs no kept line holds.
    Lost(PlannedGap),
}

impl Plan {
    /// Hands `visit` every step after the kept line whose chain position is `after` (from the
    /// genesis on when `None`), in chain order, reading each kept line back from `file`: what
    /// a reader folds of a damaged journal, without writing. Returns the lines handed on, or
    /// `None` when the plan does not keep the line at `after` (then nothing is handed on).
    pub fn read_after(
        &self,
        candidates: &[Candidate],
        file: &dyn StorageFile,
        after: Option<(u64, Hash)>,
        mut visit: impl FnMut(Folded<'_>),
    ) -> std::io::Result<Option<u64>> {
        let from = match after {
            None => 0,
            Some(position) => {
                let at = self.steps.iter().position(|s| matches!(*s, Step::Line(i) if candidates[i].position == position));
                match at {
                    Some(at) => at + 1,
                    None => return Ok(None),
                }
            }
        };
        let mut lines = 0u64;
        for step in &self.steps[from..] {
            let i = match *step {
                Step::Gap(gap) => {
                    visit(Folded::Lost(gap));
                    continue;
                }
                Step::Line(i) => i,
            };
            let Source::File { offset, len } = candidates[i].source else { unreachable!("a reader plans with the file's lines only") };
            assert!(len as usize <= format::MAX_LINE_BYTES, "a candidate is one line");
            let mut line = vec![0u8; len as usize];
            if super::storage::read_fully_at(file, &mut line, offset)? != line.len() {
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the journal shrank while it was read"));
            }
            let event =
                format::verify_line(&line).map_err(|fault| std::io::Error::new(std::io::ErrorKind::InvalidData, fault.to_string()))?;
            visit(Folded::Line(&event));
            lines += 1;
        }
        Ok(Some(lines))
    }
}

/// How far past the forward chain runs may be kept.
#[derive(Clone, Copy)]
enum Range {
    /// No hole to fill: the anchor is on the forward chain, or its place is taken.
    None,
    /// Runs must end at least two seqs before this one (one lost seq before it).
    Below(u64),
    /// No anchor: any seq past the forward chain.
    Unbounded,
}

/// The head anchor as a plan reads it (journal-format §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadAnchor {
    pub seq: u64,
    pub hash: Hash,
    /// It carries the damage mark. A reader that found damage where the home store had no
    /// anchor marks the genesis, which is no acknowledged head: a marked anchor at seq 0
    /// bounds nothing (the plan reads it as no anchor).
    pub marked: bool,
}

impl From<super::anchor::Anchor> for HeadAnchor {
    fn from(a: super::anchor::Anchor) -> HeadAnchor {
        HeadAnchor { seq: a.seq, hash: a.hash, marked: a.damage_found }
    }
}

/// The rule of proof over `candidates`, whose first is the genesis at offset 0; `head` is
/// the head anchor, when the home store has one.
pub fn plan(candidates: &[Candidate], head: Option<HeadAnchor>) -> Plan {
    assert!(
        matches!(candidates.first(), Some(c) if c.seq == 0 && c.prev == Hash::genesis_prev() && matches!(c.source, Source::File { offset: 0, .. })),
        "a plan starts from the genesis at offset 0"
    );
    // One node per distinct line: copies of the same bytes share a hash.
    let mut node_of: HashMap<Hash, usize> = HashMap::with_capacity(candidates.len());
    let mut copies: Vec<Vec<usize>> = Vec::with_capacity(candidates.len());
    for (i, c) in candidates.iter().enumerate() {
        match node_of.entry(c.hash) {
            Entry::Occupied(e) => copies[*e.get()].push(i),
            Entry::Vacant(e) => {
                e.insert(copies.len());
                copies.push(vec![i]);
            }
        }
    }
    let line = |n: usize| &candidates[copies[n][0]];
    let mut by_seq_prev: HashMap<(u64, Hash), Vec<usize>> = HashMap::with_capacity(copies.len());
    let mut by_position: HashMap<(u64, Hash), Vec<usize>> = HashMap::with_capacity(copies.len());
    for n in 0..copies.len() {
        let l = line(n);
        by_seq_prev.entry((l.seq, l.prev)).or_default().push(n);
        by_position.entry(l.position).or_default().push(n);
    }
    // A gap record beside the real lines it stands for (an earlier salvage's, with the lines
    // back from elsewhere) is no fork: the real lines continue the chain, the record is left.
    let is_gap = |n: usize| line(n).position != (line(n).seq, line(n).hash);
    for nodes in by_seq_prev.values_mut().chain(by_position.values_mut()) {
        if nodes.len() > 1 && nodes.iter().any(|&n| is_gap(n)) && nodes.iter().any(|&n| !is_gap(n)) {
            nodes.retain(|&n| !is_gap(n));
        }
    }
    const EMPTY: &[usize] = &[];
    let successors =
        |pos: (u64, Hash)| -> &[usize] { pos.0.checked_add(1).and_then(|seq| by_seq_prev.get(&(seq, pos.1))).map_or(EMPTY, Vec::as_slice) };
    let predecessors = |n: usize| -> &[usize] {
        let l = line(n);
        l.seq.checked_sub(1).and_then(|seq| by_position.get(&(seq, l.prev))).map_or(EMPTY, Vec::as_slice)
    };

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Role {
        Free,
        Forward,
        Backward,
        Run,
    }
    let mut role = vec![Role::Free; copies.len()];

    // 1. The forward chain: from the genesis, while there is exactly one successor.
    let genesis = node_of[&candidates[0].hash];
    let mut forward = vec![genesis];
    role[genesis] = Role::Forward;
    let extend = |chain: &mut Vec<usize>, role: &mut Vec<Role>, as_role: Role| {
        while let [next] = successors(line(*chain.last().expect("a chain has a line")).position) {
            if role[*next] != Role::Free {
                break;
            }
            role[*next] = as_role;
            chain.push(*next);
        }
    };
    extend(&mut forward, &mut role, Role::Forward);
    let (f_seq, f_hash) = line(*forward.last().expect("the genesis")).position;

    // 2. The backward chain from the anchor's line, then forward from it.
    let anchor = head.filter(|a| !(a.marked && a.seq == 0) && a.seq < MAX_SALVAGE_SEQ).map(|a| (a.seq, a.hash));
    let anchor_node = anchor.and_then(|pos| by_position.get(&pos)).and_then(|v| v.first().copied());
    let anchor_on_forward = anchor_node.is_some_and(|n| role[n] == Role::Forward);
    let mut backward = vec![];
    if let Some(n) = anchor_node.filter(|_| !anchor_on_forward) {
        role[n] = Role::Backward;
        backward.push(n);
        while let [p] = predecessors(*backward.last().expect("the anchor line")) {
            if role[*p] != Role::Free {
                break;
            }
            role[*p] = Role::Backward;
            backward.push(*p);
        }
        backward.reverse();
        extend(&mut backward, &mut role, Role::Backward);
        let first = line(backward[0]);
        let fits = first.seq >= f_seq.saturating_add(2) || (first.seq == f_seq + 1 && first.prev == f_hash);
        if !fits {
            // The anchor's chain and the chain from genesis disagree: the genesis wins, and
            // the disagreement is recorded (rule 6).
            for &n in &backward {
                role[n] = Role::Free;
            }
            backward.clear();
        }
    }
    let anchor_kept = anchor_on_forward || !backward.is_empty();

    // 3. The range a hole may take. An anchor behind the forward chain's end is stale (the
    // lines after it chain, so they were appended after it was stored): it says less, and
    // bounds nothing past F. One at F's end names the head: nothing past it is proven.
    let mut lost_tail = None;
    let mut after_tail = vec![];
    let range = match anchor {
        None => Range::Unbounded,
        Some((a_seq, _)) if anchor_on_forward => {
            if a_seq < f_seq {
                Range::Unbounded
            } else {
                Range::None
            }
        }
        Some(_) if !backward.is_empty() => Range::Below(line(backward[0]).seq),
        Some((a_seq, a_hash)) if a_seq > f_seq => {
            lost_tail = Some((a_seq, a_hash));
            // Lines that chain onto the lost anchor line were appended after it: they follow
            // the lost tail's gap record.
            if let [next] = successors((a_seq, a_hash))
                && role[*next] == Role::Free
            {
                role[*next] = Role::Backward;
                after_tail.push(*next);
                extend(&mut after_tail, &mut role, Role::Backward);
            }
            Range::Below(a_seq + 1)
        }
        Some(_) => Range::None,
    };

    // 4. Runs of the remaining lines, each link unique both ways.
    let only_free = |v: &[usize], role: &[Role]| -> Option<usize> {
        let mut free = v.iter().copied().filter(|&m| role[m] == Role::Free);
        let first = free.next()?;
        free.next().is_none().then_some(first)
    };
    let next_in_run = |n: usize, role: &[Role]| -> Option<usize> {
        let m = only_free(successors(line(n).position), role)?;
        (only_free(predecessors(m), role) == Some(n)).then_some(m)
    };
    let mut runs: Vec<Vec<usize>> = vec![];
    let mut order: Vec<usize> = (0..copies.len()).filter(|&n| role[n] == Role::Free).collect();
    order.sort_by_key(|&n| line(n).seq);
    let mut in_run = vec![false; copies.len()];
    for &n in &order {
        if in_run[n] {
            continue;
        }
        let mut run = vec![n];
        in_run[n] = true;
        while let Some(m) = next_in_run(*run.last().expect("a run has a line"), &role) {
            if in_run[m] {
                break;
            }
            in_run[m] = true;
            run.push(m);
        }
        runs.push(run);
    }
    let span = |run: &[usize]| (line(run[0]).seq, line(*run.last().expect("a run has a line")).position.0);
    let fits = |(r0, r1): (u64, u64)| {
        r0 >= f_seq.saturating_add(2)
            && match range {
                Range::None => false,
                Range::Unbounded => true,
                Range::Below(upper) => r1.saturating_add(2) <= upper,
            }
    };
    let mut fitting: Vec<&Vec<usize>> = runs.iter().filter(|r| fits(span(r))).collect();
    fitting.sort_by_key(|r| span(r));
    let mut kept_runs: Vec<&Vec<usize>> = vec![];
    let mut reach_before: Option<u64> = None;
    for (i, run) in fitting.iter().enumerate() {
        let (r0, r1) = span(run);
        let touches_before = reach_before.is_some_and(|end| r0 <= end.saturating_add(1));
        let touches_after = fitting.get(i + 1).is_some_and(|next| span(next).0 <= r1.saturating_add(1));
        if !touches_before && !touches_after {
            kept_runs.push(run);
        }
        reach_before = Some(reach_before.map_or(r1, |end| end.max(r1)));
    }
    for run in &kept_runs {
        for &n in run.iter() {
            role[n] = Role::Run;
        }
    }

    // 5. Chain order, a gap record before each piece that does not continue the position.
    let mut pieces: Vec<&[usize]> = vec![&forward];
    pieces.extend(kept_runs.iter().map(|r| r.as_slice()));
    if !backward.is_empty() {
        pieces.push(&backward);
    }
    let mut chain: Vec<Result<usize, PlannedGap>> = vec![];
    let mut at = (0u64, Hash::genesis_prev());
    for (i, piece) in pieces.iter().enumerate() {
        let first = line(piece[0]);
        if i > 0 && first.seq != at.0 + 1 {
            assert!(first.seq > at.0 + 1, "pieces are in seq order");
            chain.push(Err(PlannedGap { from: at.0 + 1, to: first.seq - 1, next_prev: first.prev, lost_tail: false }));
        } else if i > 0 {
            assert_eq!(first.prev, at.1, "a piece that continues the position chains onto it");
        }
        chain.extend(piece.iter().map(|&n| Ok(n)));
        at = line(*piece.last().expect("a piece has a line")).position;
    }
    if let Some((a_seq, a_hash)) = lost_tail {
        assert!(a_seq > at.0, "a lost tail lies past every kept line");
        chain.push(Err(PlannedGap { from: at.0 + 1, to: a_seq, next_prev: a_hash, lost_tail: true }));
        at = (a_seq, a_hash);
        chain.extend(after_tail.iter().map(|&n| Ok(n)));
        if let Some(&last) = after_tail.last() {
            at = line(last).position;
        }
    }

    // The copy of each line to keep: the first after the previous kept line in the file,
    // else the first in the file, else an extra one.
    let mut fates = vec![Fate::Unproven; candidates.len()];
    for (n, c) in copies.iter().enumerate() {
        if role[n] != Role::Free {
            for &i in c {
                fates[i] = Fate::Repeat;
            }
        }
    }
    let mut steps = Vec::with_capacity(chain.len());
    let mut last_offset: Option<u64> = None;
    let mut furthest: Option<u64> = None;
    let mut moved = vec![];
    for step in chain {
        let n = match step {
            Err(gap) => {
                steps.push(Step::Gap(gap));
                continue;
            }
            Ok(n) => n,
        };
        let in_file = |i: &&usize| matches!(candidates[**i].source, Source::File { .. });
        let offset_of = |i: usize| match candidates[i].source {
            Source::File { offset, .. } => offset,
            Source::Extra(_) => u64::MAX,
        };
        let chosen = copies[n]
            .iter()
            .filter(in_file)
            .find(|&&i| last_offset.is_none_or(|last| offset_of(i) > last))
            .or_else(|| copies[n].iter().find(in_file))
            .or_else(|| copies[n].first())
            .copied()
            .expect("a node has a copy");
        fates[chosen] = Fate::Kept;
        if let Source::File { offset, .. } = candidates[chosen].source {
            if furthest.is_some_and(|f| offset < f) {
                moved.push(candidates[chosen].seq);
            }
            furthest = Some(furthest.map_or(offset, |f| f.max(offset)));
            last_offset = Some(offset);
        }
        steps.push(Step::Line(chosen));
    }

    // 6. A rewrite hidden by damage: the anchor's line is not kept and its place is taken.
    let rewritten = match anchor {
        Some((a_seq, _)) if !anchor_kept => a_seq <= f_seq || candidates.iter().any(|c| c.seq == a_seq),
        // An anchor past any journal's reach is forged or damaged: nothing it names can be
        // kept, and it is put on record rather than dropped in silence.
        None => head.is_some_and(|a| !a.marked && a.seq >= MAX_SALVAGE_SEQ),
        _ => false,
    };
    Plan { steps, fates, moved, rewritten, end: at }
}

#[cfg(test)]
mod tests;
