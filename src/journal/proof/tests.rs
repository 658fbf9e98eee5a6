//! The rule of proof on chains built by hand: each shape of issue 31, and the edges of the
//! rule (a run that fits, a run that touches another, a fork, a rewrite).

use super::*;

/// A line of chain `salt` at `seq`, chained onto `prev`.
fn line(salt: &str, seq: u64, prev: Hash) -> (u64, Hash, Hash) {
    let hash = Hash(*blake3::hash(format!("{salt}/{seq}/{}", prev.to_hex()).as_bytes()).as_bytes());
    (seq, prev, hash)
}

/// Chain `salt` from its genesis to seq `last`: (seq, prev, hash) each.
fn chain(salt: &str, last: u64) -> Vec<(u64, Hash, Hash)> {
    let mut out = vec![];
    let mut prev = Hash::genesis_prev();
    for seq in 0..=last {
        let l = line(salt, seq, prev);
        prev = l.2;
        out.push(l);
    }
    out
}

/// The file: the given lines in this order, each 100 bytes long.
fn file(lines: &[(u64, Hash, Hash)]) -> Vec<Candidate> {
    lines
        .iter()
        .enumerate()
        .map(|(i, &(seq, prev, hash))| Candidate {
            seq,
            prev,
            hash,
            position: (seq, hash),
            source: Source::File { offset: i as u64 * 100, len: 100 },
        })
        .collect()
}

fn kept_seqs(plan: &Plan, c: &[Candidate]) -> Vec<u64> {
    plan.steps
        .iter()
        .filter_map(|s| match s {
            Step::Line(i) => Some(c[*i].seq),
            Step::Gap(_) => None,
        })
        .collect()
}

fn anchor_at(l: &(u64, Hash, Hash)) -> Option<HeadAnchor> {
    Some(HeadAnchor { seq: l.0, hash: l.2, marked: false })
}

#[test]
fn a_copy_of_a_later_line_in_the_middle_loses_nothing() {
    let own = chain("a", 12);
    let mut lines = own[..=3].to_vec();
    lines.push(own[12]);
    lines.extend_from_slice(&own[4..]);
    let c = file(&lines);
    let plan = plan(&c, anchor_at(&own[12]));
    assert_eq!(kept_seqs(&plan, &c), (0..=12).collect::<Vec<_>>());
    assert!(plan.lost().is_empty() && plan.moved.is_empty() && !plan.rewritten);
    assert_eq!(plan.fates[4], Fate::Repeat, "the misplaced copy is the one left out");
    assert_eq!(plan.fates[13], Fate::Kept);
}

#[test]
fn a_swapped_pair_is_written_back_in_chain_order() {
    let own = chain("a", 5);
    let lines = [own[0], own[1], own[2], own[4], own[3], own[5]];
    let c = file(&lines);
    let plan = plan(&c, anchor_at(&own[5]));
    assert_eq!(kept_seqs(&plan, &c), [0, 1, 2, 3, 4, 5]);
    assert!(plan.lost().is_empty());
    assert_eq!(plan.moved, [4], "seq 4 was before seq 3 in the file");
}

#[test]
fn another_journals_lines_appended_are_never_adopted() {
    let own = chain("a", 5);
    let foreign = chain("b", 15);
    let mut lines = own.clone();
    lines.extend_from_slice(&foreign);
    let c = file(&lines);
    let plan = plan(&c, anchor_at(&own[5]));
    assert_eq!(kept_seqs(&plan, &c), [0, 1, 2, 3, 4, 5]);
    assert!(plan.lost().is_empty() && !plan.rewritten);
    assert!(plan.fates[6..].iter().all(|f| *f == Fate::Unproven));
    // Without its genesis too: the anchor is on the forward chain, so no hole past it exists.
    let mut lines = own.clone();
    lines.extend_from_slice(&foreign[7..]);
    let c = file(&lines);
    assert_eq!(kept_seqs(&plan_of(&c, anchor_at(&own[5])), &c), [0, 1, 2, 3, 4, 5]);
}

fn plan_of(c: &[Candidate], anchor: Option<HeadAnchor>) -> Plan {
    plan(c, anchor)
}

#[test]
fn without_an_anchor_a_run_past_the_forward_chain_is_kept_when_it_alone_fits() {
    let own = chain("a", 9);
    let mut lines = own.clone();
    lines.remove(3);
    let c = file(&lines);
    let plan = plan(&c, None);
    assert_eq!(kept_seqs(&plan, &c), [0, 1, 2, 4, 5, 6, 7, 8, 9]);
    assert_eq!(plan.lost(), [(3, 3)]);
    // The known limit: another journal's run that alone fits past the hole is kept too.
    let foreign = chain("b", 20);
    let mut lines = own[..=5].to_vec();
    lines.extend_from_slice(&foreign[8..=12]);
    let c = file(&lines);
    assert_eq!(kept_seqs(&plan_of(&c, None), &c), [0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12]);
}

#[test]
fn two_runs_that_touch_are_both_unproven() {
    let own = chain("a", 9);
    let foreign = chain("b", 20);
    // Own 0-2, seq 3 lost, own 4-9, and another journal's 10-12 right after it: the two runs
    // touch (no seq lost between them), so neither is the only run that fits there.
    let mut lines = own[..=2].to_vec();
    lines.extend_from_slice(&own[4..]);
    lines.extend_from_slice(&foreign[10..=12]);
    let c = file(&lines);
    let plan = plan(&c, None);
    assert!(kept_seqs(&plan, &c).iter().all(|&s| s <= 2), "4-9 and 10-12 touch: neither is the only run there");
    assert!(plan.fates.iter().filter(|f| **f == Fate::Unproven).count() == 9);
}

#[test]
fn the_backward_chain_from_the_anchor_bridges_damage() {
    let own = chain("a", 20);
    let mut lines = own.clone();
    lines.remove(7);
    lines.remove(3);
    let c = file(&lines);
    let plan = plan(&c, anchor_at(&own[20]));
    assert_eq!(plan.lost(), [(3, 3), (7, 7)]);
    assert_eq!(kept_seqs(&plan, &c).len(), 19);
    assert_eq!(plan.end, (20, own[20].2));
}

#[test]
fn damage_plus_a_cut_names_the_acknowledged_seq_lost() {
    let own = chain("a", 6);
    let lines = [own[0], own[1], own[2], own[4], own[5]];
    let c = file(&lines);
    let plan = plan(&c, anchor_at(&own[6]));
    assert_eq!(kept_seqs(&plan, &c), [0, 1, 2, 4, 5]);
    assert_eq!(plan.lost(), [(3, 3), (6, 6)]);
    assert!(matches!(plan.steps.last(), Some(Step::Gap(g)) if g.lost_tail && g.next_prev == own[6].2));
    assert!(!plan.rewritten);
}

#[test]
fn a_rewrite_hidden_by_damage_is_found() {
    let own = chain("a", 6);
    // Seqs 2-6 rewritten onto seq 1 (another history), then seq 4 of it damaged.
    let mut rewritten = own[..=1].to_vec();
    let mut prev = own[1].2;
    for seq in 2..=6 {
        let l = line("rewrite", seq, prev);
        prev = l.2;
        rewritten.push(l);
    }
    let mut lines = rewritten.clone();
    lines.remove(4);
    let c = file(&lines);
    let plan = plan(&c, anchor_at(&own[6]));
    assert!(plan.rewritten, "seq 6 of the file is not the line the anchor vouched for");
    assert_eq!(plan.lost(), [(4, 6)]);
    // The same rewrite whole, with the anchor inside what the genesis chain reaches.
    let c = file(&rewritten);
    let plan = plan_of(&c, anchor_at(&own[4]));
    assert!(plan.rewritten && plan.lost().is_empty());
}

#[test]
fn a_fork_stops_the_forward_chain_and_the_anchor_chooses() {
    let own = chain("a", 8);
    let other = line("fork", 4, own[3].2);
    let mut lines = own.clone();
    lines.insert(5, other);
    let c = file(&lines);
    let plan = plan(&c, anchor_at(&own[8]));
    assert_eq!(kept_seqs(&plan, &c), (0..=8).collect::<Vec<_>>());
    assert_eq!(plan.fates[5], Fate::Unproven);
    // Without an anchor neither branch is proven: both start a run that touches the other.
    let plan = plan_of(&c, None);
    assert_eq!(kept_seqs(&plan, &c), [0, 1, 2, 3]);
}

#[test]
fn lines_from_elsewhere_fill_a_hole() {
    let own = chain("a", 8);
    let mut lines = own.clone();
    lines.remove(5);
    let mut c = file(&lines);
    let (seq, prev, hash) = own[5];
    c.push(Candidate { seq, prev, hash, position: (seq, hash), source: Source::Extra(0) });
    let plan = plan(&c, anchor_at(&own[8]));
    assert_eq!(kept_seqs(&plan, &c), (0..=8).collect::<Vec<_>>());
    assert!(plan.lost().is_empty() && plan.moved.is_empty());
}

#[test]
fn a_damage_mark_at_the_genesis_bounds_nothing() {
    // A reader found the damage at seq 3 with no anchor in the home store and marked the
    // genesis: that is no acknowledged head, so the run past the hole counts.
    let own = chain("a", 9);
    let mut lines = own.clone();
    lines.remove(3);
    let c = file(&lines);
    let marked = Some(HeadAnchor { seq: 0, hash: own[0].2, marked: true });
    assert_eq!(kept_seqs(&plan_of(&c, marked), &c), [0, 1, 2, 4, 5, 6, 7, 8, 9]);
    // A marked anchor anywhere else is an acknowledged head the mark kept: nothing past it
    // on the forward chain is proven, and a marked anchor past the damage keeps its place.
    let marked_at_2 = Some(HeadAnchor { seq: 2, hash: own[2].2, marked: true });
    assert_eq!(kept_seqs(&plan_of(&c, marked_at_2), &c), [0, 1, 2]);
    let marked_past = Some(HeadAnchor { seq: 9, hash: own[9].2, marked: true });
    assert_eq!(kept_seqs(&plan_of(&c, marked_past), &c), [0, 1, 2, 4, 5, 6, 7, 8, 9]);
}

/// `MAX_SALVAGE_SEQ` on both sides: a line whose position is just below it is a candidate,
/// one at it is not (for lines of the file it is damage, written whole).
#[test]
fn the_salvage_seq_bound_holds_on_both_sides() {
    let encoded = |seq: u64| {
        let event = format::NewEvent {
            kind: "test.note".into(),
            actor: format::Actor { session: None, pid: 1, tool: "abcd/test".into() },
            data: serde_json::json!({}),
        };
        format::encode_line(seq, format::now_ms(), &event, &Hash([7; 32])).unwrap().0
    };
    let mut below = Collected::default();
    below.add_extra(&[encoded(MAX_SALVAGE_SEQ - 1)]).unwrap();
    assert_eq!(below.candidates.len(), 1);
    let mut at = Collected::default();
    at.add_extra(&[encoded(MAX_SALVAGE_SEQ)]).unwrap();
    assert!(at.candidates.is_empty());
    let event = format::verify_line(&encoded(MAX_SALVAGE_SEQ)).unwrap();
    let mut file = Collected::default();
    file.push_file_line(&event, 0, 100).map_err(|_| "too many").unwrap();
    assert!(file.candidates.is_empty() && file.bad.len() == 1 && file.bad[0].written_whole);
}
