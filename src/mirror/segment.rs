//! Which segment each new line goes into (MIRROR.md §4): the last segment grows while both
//! limits hold, then a new one starts at the line that did not fit. Pure.

use std::ops::Range;

use super::{SEGMENT_MAX_BYTES, SEGMENT_MAX_LINES};

/// A segment being filled: how many lines and bytes it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fill {
    pub lines: usize,
    pub bytes: usize,
}

impl Fill {
    /// True when a line of `len` bytes may join this segment.
    pub fn takes(self, len: usize) -> bool {
        self.lines < SEGMENT_MAX_LINES && self.bytes + len <= SEGMENT_MAX_BYTES
    }
}

/// Where a run of new lines goes: `lines` (indexes into the new lines) into the segment
/// whose first line has `first_seq`, the mirror's last segment when `extends_last`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub first_seq: u64,
    pub extends_last: bool,
    pub lines: Range<usize>,
}

/// Places `new_lines` (seq, length) after the mirror's last segment (its first seq and
/// fill), greedily, as a pusher must.
pub fn place(last: Option<(u64, Fill)>, new_lines: &[(u64, usize)]) -> Vec<Placed> {
    let mut placed: Vec<Placed> = Vec::new();
    let mut fill = last.map(|(_, f)| f);
    if let Some((first_seq, _)) = last {
        placed.push(Placed { first_seq, extends_last: true, lines: 0..0 });
    }
    for (i, &(seq, len)) in new_lines.iter().enumerate() {
        match fill {
            Some(f) if f.takes(len) => {
                fill = Some(Fill { lines: f.lines + 1, bytes: f.bytes + len });
                if let Some(p) = placed.last_mut() {
                    p.lines.end = i + 1;
                }
            }
            _ => {
                fill = Some(Fill { lines: 1, bytes: len });
                placed.push(Placed { first_seq: seq, extends_last: false, lines: i..i + 1 });
            }
        }
    }
    placed.retain(|p| !p.lines.is_empty());
    placed
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{QuickCheck, TestResult};

    #[test]
    fn a_segment_takes_lines_up_to_both_limits_and_not_past_either() {
        let full_lines = Fill { lines: SEGMENT_MAX_LINES - 1, bytes: 10 };
        assert!(full_lines.takes(1));
        assert!(!Fill { lines: SEGMENT_MAX_LINES, bytes: 10 }.takes(1));
        let near = Fill { lines: 1, bytes: SEGMENT_MAX_BYTES - 100 };
        assert!(near.takes(100));
        assert!(!near.takes(101));
    }

    #[test]
    fn new_lines_extend_the_last_segment_then_start_new_ones() {
        let last = Some((0, Fill { lines: SEGMENT_MAX_LINES - 2, bytes: 100 }));
        let lines: Vec<(u64, usize)> = (1022..1030).map(|s| (s, 50)).collect();
        let placed = place(last, &lines);
        assert_eq!(
            placed,
            vec![Placed { first_seq: 0, extends_last: true, lines: 0..2 }, Placed { first_seq: 1024, extends_last: false, lines: 2..8 }]
        );
        // A full last segment is not named at all.
        let full = Some((0, Fill { lines: SEGMENT_MAX_LINES, bytes: 100 }));
        assert_eq!(place(full, &[(1024, 5)]), vec![Placed { first_seq: 1024, extends_last: false, lines: 0..1 }]);
        assert_eq!(place(None, &[]), vec![]);
    }

    /// Every segment is within both limits, the runs cover the new lines in order, and a
    /// segment was closed only because the next line did not fit.
    #[test]
    fn placement_is_greedy_and_within_limits() {
        fn prop(start_lines: u16, start_kb: u16, lens: Vec<u16>) -> TestResult {
            let start = Fill { lines: (start_lines as usize) % (SEGMENT_MAX_LINES + 1), bytes: (start_kb as usize % 1025) * 1024 };
            if start.bytes > SEGMENT_MAX_BYTES || start.lines == 0 {
                return TestResult::discard();
            }
            let lines: Vec<(u64, usize)> = lens.iter().enumerate().map(|(i, l)| (100 + i as u64, 1 + (*l as usize % (64 << 10)))).collect();
            let placed = place(Some((7, start)), &lines);
            let mut next = 0;
            for (k, p) in placed.iter().enumerate() {
                if p.lines.start != next || p.lines.is_empty() {
                    return TestResult::failed();
                }
                let base = if p.extends_last { start } else { Fill { lines: 0, bytes: 0 } };
                let f = Fill {
                    lines: base.lines + p.lines.len(),
                    bytes: base.bytes + lines[p.lines.clone()].iter().map(|l| l.1).sum::<usize>(),
                };
                if f.lines > SEGMENT_MAX_LINES || f.bytes > SEGMENT_MAX_BYTES {
                    return TestResult::failed();
                }
                if p.extends_last != (k == 0 && p.first_seq == 7) || (!p.extends_last && p.first_seq != lines[p.lines.start].0) {
                    return TestResult::failed();
                }
                if let Some(after) = lines.get(p.lines.end)
                    && k + 1 < placed.len()
                    && f.takes(after.1)
                {
                    return TestResult::failed();
                }
                next = p.lines.end;
            }
            TestResult::from_bool(next == lines.len())
        }
        QuickCheck::new().tests(500).quickcheck(prop as fn(u16, u16, Vec<u16>) -> TestResult);
    }
}
