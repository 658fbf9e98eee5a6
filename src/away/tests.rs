use super::*;
use jiff::ToSpan;

fn t(s: &str) -> Timestamp {
    s.parse().unwrap()
}

const T0: &str = "2026-12-01T18:00:00Z";

fn set_at(start: &str, hours: i64, hold: bool) -> AwaySet {
    let start = t(start);
    AwaySet {
        set_by: "Pat".into(),
        working_copy: "/w/a".into(),
        start,
        end: start.checked_add(hours.hours()).unwrap(),
        hold_pushes: hold,
        notify: None,
    }
}

fn queued(step: &str) -> AwayQueued {
    AwayQueued { step: step.into(), working_copy: "/w/b".into() }
}

fn stop(label: StopLabel, next: Option<&str>) -> AwayStopRecorded {
    AwayStopRecorded {
        stop: RecordedStop { label, possibly_forced_by_cap: true, next: next.map(String::from), error_type: None, abcd_bound: None },
        working_copy: "/w/a".into(),
    }
}

fn ended() -> AwayEnded {
    AwayEnded { ended_by: "Pat".into(), working_copy: "/w/a".into() }
}

fn decision(text: &str) -> DecisionRecorded {
    DecisionRecorded { text: text.into(), grounds: "g".into(), undo: "u".into(), working_copy: "/w/a".into(), tradeoff: None, item: None }
}

fn show(at: Timestamp) -> String {
    at.to_string()
}

#[test]
fn status_follows_the_window_end_and_the_close() {
    let mut s = AwayState::default();
    assert_eq!(s.status(t(T0)), Status::Present);
    fold_set(&mut s, set_at(T0, 8, false)).unwrap();
    assert_eq!(s.status(t("2026-12-01T18:00:00Z")), Status::Away);
    assert_eq!(s.status(t("2026-12-02T01:59:59Z")), Status::Away);
    assert_eq!(s.status(t("2026-12-02T02:00:00Z")), Status::Lapsed, "the end itself is past the window");
    fold_ended(&mut s, ended(), t("2026-12-02T03:00:00Z")).unwrap();
    assert_eq!(s.status(t("2026-12-02T01:00:00Z")), Status::Present, "a closed window is closed whatever the clock");
}

#[test]
fn the_window_is_at_most_seven_days_both_sides_of_the_edge() {
    let now = t(T0);
    assert!(check_until(now.checked_add(MAX_WINDOW).unwrap(), now).is_ok());
    let over = now.checked_add(MAX_WINDOW).unwrap().checked_add(1.second()).unwrap();
    let refused = check_until(over, now).unwrap_err();
    assert_eq!(refused.field.as_deref(), Some("--until"));
    // The words the parse of `--until` uses for the same limit.
    assert_eq!(refused.reason, "is too far ahead: it may be at most 7 days ahead");
    assert!(check_until(now, now).is_err(), "now is not in the future");
    assert!(check_until(now.checked_sub(1.minute()).unwrap(), now).is_err());
    assert!(check_set(&set_at(T0, 7 * 24, false)).is_ok());
    let mut long = set_at(T0, 7 * 24, false);
    long.end = long.end.checked_add(1.second()).unwrap();
    assert!(check_set(&long).is_err());
    let mut empty = set_at(T0, 1, false);
    empty.end = empty.start;
    assert!(check_set(&empty).is_err());
}

#[test]
fn a_step_is_one_line_of_at_most_500_characters() {
    assert!(check_step(&"x".repeat(STEP_MAX_CHARS)).is_ok());
    assert!(check_step(&"x".repeat(STEP_MAX_CHARS + 1)).is_err());
    assert!(check_step(&"é".repeat(STEP_MAX_CHARS)).is_ok(), "characters, not bytes");
    assert!(check_step("two\nlines").is_err());
    assert!(check_step("   ").is_err());
    assert_eq!(fold_whitespace("  push\n  feat/x\tnow "), "push feat/x now");
}

#[test]
fn a_secret_in_a_step_or_a_decision_is_refused_naming_the_kind_only() {
    let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let r = check_step(&format!("push with {secret}")).unwrap_err();
    assert!(r.reason.contains("secret") || r.reason.contains("token"), "{r:?}");
    assert!(!r.reason.contains("ghp_0123"), "{r:?}");
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, false)).unwrap();
    assert!(fold_decision(&mut s, decision(&format!("use {secret}")), t(T0), 1).is_err());
    let mut d = decision("fine");
    d.undo = format!("rotate {secret}");
    assert_eq!(fold_decision(&mut s, d, t(T0), 1).unwrap_err().field.as_deref(), Some("undo"));
}

#[test]
fn the_queue_takes_its_cap_and_refuses_the_next() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, false)).unwrap();
    for i in 0..QUEUE_MAX_STEPS {
        fold_queued(&mut s, queued(&format!("step {i}")), t(T0)).unwrap();
    }
    assert!(!queue_has_room(s.window.as_ref().unwrap()));
    assert!(fold_queued(&mut s, queued("one more"), t(T0)).is_err());
    assert_eq!(s.window.as_ref().unwrap().queue.len(), QUEUE_MAX_STEPS);
}

#[test]
fn identical_stops_collapse_into_one_entry_with_a_count_and_the_last_time() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, false)).unwrap();
    fold_stop(&mut s, stop(StopLabel::WorkOwed, Some("branch feat/x has commits not pushed")), t("2026-12-01T19:00:00Z")).unwrap();
    fold_stop(&mut s, stop(StopLabel::WorkOwed, Some("branch feat/x has commits not pushed")), t("2026-12-01T19:10:00Z")).unwrap();
    fold_stop(&mut s, stop(StopLabel::WorkOwed, Some("branch feat/y has commits not pushed")), t("2026-12-01T19:20:00Z")).unwrap();
    let w = s.window.as_ref().unwrap();
    assert_eq!(w.stops.len(), 2);
    assert_eq!(w.stops[0].count, 2);
    assert_eq!(w.stops[0].first_at, t("2026-12-01T19:00:00Z"));
    assert_eq!(w.stops[0].last_at, t("2026-12-01T19:10:00Z"));
    let lines = text::back_report(w, &show);
    assert!(lines[0].contains("possibly forced by the cap") && lines[0].contains("2 times"), "{lines:?}");
}

#[test]
fn past_the_stop_cap_the_entry_seen_least_recently_goes_and_is_counted() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, false)).unwrap();
    let base = t(T0);
    for i in 0..STOPS_MAX {
        fold_stop(&mut s, stop(StopLabel::WorkOwed, Some(&format!("item {i}"))), base.checked_add((i as i64).minutes()).unwrap()).unwrap();
    }
    // Item 0 is seen again, so item 1 is now the stalest.
    fold_stop(&mut s, stop(StopLabel::WorkOwed, Some("item 0")), base.checked_add(100.minutes()).unwrap()).unwrap();
    fold_stop(&mut s, stop(StopLabel::WorkOwed, Some("new")), base.checked_add(101.minutes()).unwrap()).unwrap();
    let w = s.window.as_ref().unwrap();
    assert_eq!(w.stops.len(), STOPS_MAX);
    assert_eq!(w.dropped_stops, 1);
    assert!(w.stops.iter().any(|e| e.stop.next.as_deref() == Some("item 0")));
    assert!(!w.stops.iter().any(|e| e.stop.next.as_deref() == Some("item 1")));
}

#[test]
fn a_stop_recorded_after_the_mode_ended_does_not_open_it_again() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, false)).unwrap();
    fold_ended(&mut s, ended(), t(T0)).unwrap();
    assert!(fold_stop(&mut s, stop(StopLabel::WorkOwed, None), t(T0)).is_err());
    assert!(fold_queued(&mut s, queued("late"), t(T0)).is_err());
    assert_eq!(s.status(t(T0)), Status::Present);
    assert!(s.window.as_ref().unwrap().stops.is_empty());
}

#[test]
fn setting_again_carries_over_what_is_unread_but_not_a_closed_windows_items() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 1, false)).unwrap();
    fold_queued(&mut s, queued("push feat/x"), t(T0)).unwrap();
    fold_stop(&mut s, stop(StopLabel::NoNextLook, None), t(T0)).unwrap();
    fold_decision(&mut s, decision("chose A"), t(T0), 1).unwrap();
    // Lapsed and set again: everything carried, the new terms taken.
    fold_set(&mut s, set_at("2026-12-01T20:00:00Z", 8, true)).unwrap();
    let w = s.window.as_ref().unwrap();
    assert_eq!((w.queue.len(), w.stops.len(), w.decisions.len()), (1, 1, 1));
    assert!(w.hold_pushes);
    assert_eq!(w.start, t("2026-12-01T20:00:00Z"));
    // Closed, then set again: nothing carried.
    fold_ended(&mut s, ended(), t("2026-12-01T21:00:00Z")).unwrap();
    fold_set(&mut s, set_at("2026-12-01T22:00:00Z", 8, false)).unwrap();
    assert_eq!(s.window.as_ref().unwrap().unread(), 0);
}

#[test]
fn hand_backs_are_recorded_once_per_branch_and_head() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, true)).unwrap();
    let h = |head: &str| AwayHandedBack { branch: "feat/x".into(), head: head.into(), working_copy: "/w/a".into() };
    let a = "a".repeat(40);
    fold_handed_back(&mut s, h(&a), t(T0)).unwrap();
    fold_handed_back(&mut s, h(&a), t(T0)).unwrap();
    fold_handed_back(&mut s, h(&"b".repeat(40)), t(T0)).unwrap();
    assert_eq!(s.window.as_ref().unwrap().handed_back.len(), 2);
    assert!(fold_handed_back(&mut s, h("abc"), t(T0)).is_err(), "a short head is not a commit id");
}

#[test]
fn decisions_outside_a_window_are_counted_not_kept() {
    let mut s = AwayState::default();
    fold_decision(&mut s, decision("chose A"), t(T0), 1).unwrap();
    assert_eq!(s.decisions_outside_window, 1);
    assert!(s.window.is_none());
}

#[test]
fn the_persons_line_and_the_lapsed_line() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, true)).unwrap();
    let w = s.window.clone().unwrap();
    let line = text::person_line(&w, &show);
    assert!(line.contains("set by Pat from /w/a") && line.contains("0 steps queued") && line.contains("`abcd mode back`"), "{line}");
    assert!(line.contains("pushes wait for you"), "{line}");
    let after = t("2026-12-02T03:00:00Z");
    assert_eq!(text::lapsed_line(&w, after, &show), None, "nothing unread: no line");
    fold_queued(&mut s, queued("merge PR 4"), t(T0)).unwrap();
    let w = s.window.clone().unwrap();
    assert_eq!(text::lapsed_line(&w, t(T0), &show), None, "not lapsed yet");
    let lapsed = text::lapsed_line(&w, after, &show).unwrap();
    assert!(lapsed.contains("1 step queued") && lapsed.contains("`abcd mode back`"), "{lapsed}");
}

#[test]
fn the_away_block_states_the_terms_once_and_grants_nothing() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, true)).unwrap();
    let block = text::away_block(s.window.as_ref().unwrap(), &show);
    assert!(block.starts_with("abcd: the person is away until 2026-12-02T02:00:00Z."), "{block}");
    assert!(block.contains("nothing owed and a wake scheduled"), "{block}");
    assert!(block.contains("no right to push, open or merge"), "{block}");
    assert!(block.contains("abcd mode queue") && block.contains("abcd decide"), "{block}");
    assert!(block.contains("Queue every push."), "{block}");
    assert!(block.contains("`abcd mode back` only on their word"), "{block}");
    assert!(block.ends_with("Full rules: `abcd mode`."), "the full text is one command away: {block}");
    assert_eq!(block.matches("no right").count(), 1);
    assert!(!block.contains("queued"), "nothing queued, nothing said: {block}");
    let full = text::away_rules_full(s.window.as_ref().unwrap(), &show);
    assert!(full.contains("set by Pat from /w/a") && full.contains("grants no rights") && full.contains("pushes wait for their return"));
    assert!(full.contains(crate::verdict::stop::QUESTION_ROUTE), "{full}");
}

/// The longest block (pushes held, a full queue, the longest shown time) stays within
/// its bound: the block goes into every session start while away.
#[test]
fn the_away_block_stays_within_its_bound() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, true)).unwrap();
    for n in 0..QUEUE_MAX_STEPS {
        fold_queued(&mut s, queued(&format!("step {n}")), t(T0)).unwrap();
    }
    let longest_show = |_| "2026-12-02 02:00 +05:30".to_string();
    let block = text::away_block(s.window.as_ref().unwrap(), &longest_show);
    assert!(block.contains(&format!(" {QUEUE_MAX_STEPS} steps queued.")), "{block}");
    let chars = block.chars().count();
    assert!(chars <= text::AWAY_BLOCK_MAX_CHARS, "{chars} > {}: {block}", text::AWAY_BLOCK_MAX_CHARS);
    let full = text::away_rules_full(s.window.as_ref().unwrap(), &longest_show).chars().count();
    assert!(chars * 3 < full, "a fraction of the full text ({chars} of {full})");
}

#[test]
fn api_error_types_are_the_hosts_shape() {
    assert!(error_type_ok("rate_limit"));
    assert!(error_type_ok(&format!("a{}", "b".repeat(63))));
    assert!(!error_type_ok(&format!("a{}", "b".repeat(64))));
    assert!(!error_type_ok("Rate"));
    assert!(!error_type_ok("1x"));
    assert!(!error_type_ok(""));
}

quickcheck::quickcheck! {
    /// Whatever order the events come in, the fold never panics, every list stays within
    /// its cap, and a closed window gains nothing.
    fn the_fold_keeps_its_bounds(ops: Vec<(u8, u8)>) -> bool {
        let mut s = AwayState::default();
        let mut now = t(T0);
        for (op, arg) in ops {
            now = now.checked_add(1.minute()).unwrap();
            let closed_before = s.window.as_ref().is_some_and(|w| w.ended.is_some());
            let before = s.clone();
            let r = match op % 6 {
                0 => fold_set(&mut s, AwaySet { start: now, end: now.checked_add((i64::from(arg) + 1).hours()).unwrap(), ..set_at(T0, 1, arg % 2 == 0) }),
                1 => fold_queued(&mut s, queued(&format!("step {}", arg % 7)), now),
                2 => fold_stop(&mut s, stop(StopLabel::WorkOwed, Some(&format!("item {arg}"))), now),
                3 => fold_ended(&mut s, ended(), now),
                4 => fold_decision(&mut s, decision(&format!("d {arg}")), now, 1),
                _ => fold_handed_back(&mut s, AwayHandedBack { branch: format!("b{}", arg % 5), head: format!("{:040x}", arg), working_copy: "/w".into() }, now),
            };
            if r.is_err() && s != before {
                return false;
            }
            if closed_before && op % 6 != 0 && op % 6 != 4 && s != before {
                return false;
            }
            if let Some(w) = &s.window
                && (w.queue.len() > QUEUE_MAX_STEPS || w.stops.len() > STOPS_MAX || w.handed_back.len() > HANDED_BACK_MAX || w.decisions.len() > DECISIONS_MAX)
            {
                return false;
            }
        }
        true
    }
}

#[test]
fn a_lapsed_window_holding_only_a_decision_still_has_its_line() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 1, false)).unwrap();
    fold_decision(&mut s, decision("chose A"), t(T0), 1).unwrap();
    let w = s.window.clone().unwrap();
    let line = text::lapsed_line(&w, t("2026-12-01T20:00:00Z"), &show).unwrap();
    assert!(line.contains("1 decision"), "{line}");
}

/// A sweep takes one answer per working copy up to its cap, and the window's return lists
/// are recorded once per working copy up to theirs; one past either is skipped.
#[test]
fn sweep_answers_and_return_lists_shown_hold_their_caps_on_both_sides() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, false)).unwrap();
    let start = t(T0);
    let sweep = AwaySweepStarted { start, deadline: start.checked_add(SWEEP_DEADLINE_DEFAULT).unwrap(), working_copy: "/w/a".into() };
    fold_sweep_started(&mut s, sweep).unwrap();
    let answer = |n: usize| AwaySweepAnswered { sweep_start: start, working_copy: format!("/w/{n}") };
    for n in 0..SWEEP_ANSWERS_MAX {
        fold_sweep_answered(&mut s, answer(n), start).unwrap();
    }
    fold_sweep_answered(&mut s, answer(0), start).unwrap();
    assert_eq!(s.window.as_ref().unwrap().sweep.as_ref().unwrap().answers.len(), SWEEP_ANSWERS_MAX, "a second answer adds nothing");
    assert!(fold_sweep_answered(&mut s, answer(SWEEP_ANSWERS_MAX), start).is_err());

    assert!(return_owed(&s, "/w/0").is_none(), "nothing is owed while the window is open");
    fold_ended(&mut s, ended(), start).unwrap();
    let shown = |n: usize| AwayReturnShown { window_start: start, working_copy: format!("/w/{n}") };
    for n in 0..RETURN_SHOWN_MAX {
        assert!(return_owed(&s, &format!("/w/{n}")).is_some());
        fold_return_shown(&mut s, shown(n)).unwrap();
        assert!(return_owed(&s, &format!("/w/{n}")).is_none(), "shown once");
    }
    assert!(fold_return_shown(&mut s, shown(RETURN_SHOWN_MAX)).is_err());
    assert!(return_owed(&s, "/w/new").is_none(), "past the cap nothing more is shown");
}

fn tradeoff(text: &str, item: Option<&str>) -> DecisionRecorded {
    DecisionRecorded { tradeoff: Some(Tradeoff::Speed), item: item.map(String::from), ..decision(text) }
}

fn answered(seq: u64, answer: Answer) -> DecisionAnswered {
    DecisionAnswered { seq, answer, working_copy: "/w/b".into() }
}

/// A trade-off is kept for its answer past its window, tied to the item it names; an
/// answer names a trade-off's seq (else it is skipped), and a later one replaces the earlier,
/// in the record and in the window's decision.
#[test]
fn a_tradeoff_is_kept_for_its_answer_and_a_later_answer_replaces_the_earlier() {
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, false)).unwrap();
    fold_decision(&mut s, tradeoff("cache", Some("choose-the-cache")), t(T0), 2).unwrap();
    fold_decision(&mut s, decision("plain"), t(T0), 3).unwrap();
    fold_ended(&mut s, ended(), t(T0)).unwrap();
    fold_set(&mut s, set_at("2026-12-02T18:00:00Z", 8, false)).unwrap();
    assert!(s.window.as_ref().unwrap().decisions.is_empty(), "a closed window's decisions are not carried over");
    assert_eq!(s.tied_to("/w/a", "choose-the-cache").count(), 1, "the trade-off is kept past its window");
    assert_eq!(s.tied_to("/w/other", "choose-the-cache").count(), 0, "an item is its working copy's");
    assert!(fold_answered(&mut s, answered(3, Answer::Keep)).is_err(), "a plain decision is no trade-off");
    assert!(fold_answered(&mut s, answered(4, Answer::Keep)).is_err(), "no decision there");
    fold_answered(&mut s, answered(2, Answer::Undo)).unwrap();
    fold_answered(&mut s, answered(2, Answer::Keep)).unwrap();
    assert_eq!(s.tradeoff_at(2).unwrap().answer, Some(Answer::Keep));

    // In an open window, the decision shows its seq, item and answer.
    let mut s = AwayState::default();
    fold_set(&mut s, set_at(T0, 8, false)).unwrap();
    fold_decision(&mut s, tradeoff("cache", Some("choose-the-cache")), t(T0), 2).unwrap();
    let line = |s: &AwayState| text::back_report(s.window.as_ref().unwrap(), &show).join("\n");
    assert!(line(&s).contains("(tied to checklist item choose-the-cache); seq 2, awaiting the person's answer: `abcd decide --answer 2 keep` or `abcd decide --answer 2 undo`"), "{}", line(&s));
    fold_answered(&mut s, answered(2, Answer::Undo)).unwrap();
    assert!(line(&s).ends_with("seq 2, answered undo: undoing it is the session's next work"), "{}", line(&s));
}

/// An item is only tied to a trade-off, and is an item id.
#[test]
fn an_item_goes_with_a_tradeoff_and_is_an_id() {
    let mut s = AwayState::default();
    let r = fold_decision(&mut s, DecisionRecorded { item: Some("choose-the-cache".into()), ..decision("x") }, t(T0), 1).unwrap_err();
    assert_eq!(r.field.as_deref(), Some("item"));
    let r = fold_decision(&mut s, tradeoff("x", Some("Not An Id")), t(T0), 1).unwrap_err();
    assert_eq!(r.field.as_deref(), Some("item"));
    assert_eq!(s, AwayState::default(), "a refused decision changes nothing");
}

/// [`TRADEOFFS_KEPT`] both sides of the edge: the last one fits; past it, the oldest
/// answered one goes, and while none is answered the next is refused (nothing dropped).
#[test]
fn the_tradeoffs_kept_are_bounded_and_an_unanswered_one_is_never_dropped() {
    let mut s = AwayState::default();
    for seq in 1..=TRADEOFFS_KEPT as u64 {
        fold_decision(&mut s, tradeoff("t", None), t(T0), seq).unwrap();
    }
    assert_eq!(s.tradeoffs.len(), TRADEOFFS_KEPT);
    assert!(!s.tradeoff_has_room());
    let before = s.clone();
    let next = TRADEOFFS_KEPT as u64 + 1;
    let r = fold_decision(&mut s, tradeoff("t", None), t(T0), next).unwrap_err();
    assert!(r.reason.contains(&TRADEOFFS_KEPT.to_string()), "{r:?}");
    assert_eq!(s, before, "refused whole");
    // A plain decision is not held back by the cap.
    fold_decision(&mut s, decision("plain"), t(T0), next).unwrap();
    fold_answered(&mut s, answered(7, Answer::Keep)).unwrap();
    assert!(s.tradeoff_has_room());
    fold_decision(&mut s, tradeoff("t", None), t(T0), next + 1).unwrap();
    assert_eq!(s.tradeoffs.len(), TRADEOFFS_KEPT);
    assert!(s.tradeoff_at(7).is_none(), "the answered one went");
    assert!(s.tradeoff_at(1).is_some() && s.tradeoff_at(next + 1).is_some());
}
