use quickcheck::{Arbitrary, Gen, QuickCheck};
use serde_json::json;

use super::agent::*;
use super::*;

fn t(s: u32) -> Timestamp {
    Timestamp::new(1_796_000_000 + i64::from(s), 0).unwrap()
}

fn config(max_rounds: u32) -> Config {
    let agent = |role: &str| AgentSpec {
        template: vec!["agent".into(), role.into(), "{prompt}".into()],
        reader: Reader::Plain,
        worktree: "/w".into(),
    };
    Config {
        implementer: agent("implementer"),
        reviewer: agent("reviewer"),
        checklist: None,
        max_rounds,
        max_turns: DEFAULT_MAX_TURNS,
        completion_signal: DEFAULT_COMPLETION_SIGNAL.into(),
        review_stop_signal: DEFAULT_REVIEW_STOP_SIGNAL.into(),
        advance_prompt: default_advance_prompt(DEFAULT_COMPLETION_SIGNAL, None),
        review_prompt: default_review_prompt(DEFAULT_REVIEW_STOP_SIGNAL),
        feedback_prompt: DEFAULT_FEEDBACK_PROMPT.into(),
    }
}

/// A loop folded through its events, as the driver and the controls would append them.
struct Sim {
    records: LoopRecords,
    clock: u32,
    launches: u64,
}

impl Sim {
    fn new(max_rounds: u32) -> Sim {
        Sim::bounded(max_rounds, DEFAULT_MAX_TURNS)
    }

    fn bounded(max_rounds: u32, max_turns: u64) -> Sim {
        let mut s = Sim { records: LoopRecords::default(), clock: 0, launches: 0 };
        let config = Config { max_turns, ..config(max_rounds) };
        s.apply(LOOP_STARTED, json!(LoopStarted { run: "r".into(), config })).unwrap();
        s
    }

    /// What the driver records when the step machine asks for a pause at the turn bound.
    fn pause_at_bound(&mut self) -> Result<(), Rejection> {
        self.apply(LOOP_PAUSED, json!(LoopPaused { run: "r".into(), reason: Some(PauseReason::MaxTurns) }))
    }

    fn r(&self) -> &LoopRecord {
        &self.records.loops["r"]
    }

    fn apply(&mut self, kind: &str, data: serde_json::Value) -> Result<(), Rejection> {
        self.clock += 1;
        fold_loop_event(&mut self.records, kind, &data, t(self.clock))
    }

    /// Starts the due turn and replies to it, with or without its signal.
    fn turn(&mut self, signal: bool) -> Result<TurnKind, String> {
        let Next::Turn(plan) = next_step(self.r()) else { return Err(format!("{:?}", next_step(self.r()))) };
        self.launches += 1;
        let intended = TurnIntended {
            run: "r".into(),
            turn: plan.turn,
            phase: plan.phase,
            round: plan.round,
            kind: plan.kind,
            launch: self.launches,
            prompt_blake3: "a".repeat(64),
            prompt_bytes: 1,
            reply_file: format!("/w/{}.json", self.launches),
        };
        self.apply(LOOP_TURN_INTENDED, json!(intended)).map_err(|r| r.reason)?;
        let signal = signal && plan.kind != TurnKind::Feedback;
        let replied = TurnReplied {
            run: "r".into(),
            turn: plan.turn,
            launch: self.launches,
            reply_blake3: "b".repeat(64),
            reply_bytes: 2,
            signal,
            session: None,
        };
        self.apply(LOOP_TURN_REPLIED, json!(replied)).map_err(|r| r.reason)?;
        Ok(plan.kind)
    }

    fn control(&mut self, c: Control) -> Result<(), Rejection> {
        self.apply(c.kind(), json!(LoopNamed { run: "r".into() }))
    }
}

fn statuses(r: &LoopRecord) -> Vec<(u64, PhaseStatus, u32)> {
    r.phases.iter().map(|p| (p.n, p.status, p.rounds)).collect()
}

#[test]
fn three_phases_in_one_two_and_three_rounds_then_completion() {
    let mut s = Sim::new(10);
    for (signal, kind) in [
        (false, TurnKind::Advance),
        (true, TurnKind::Review),
        (false, TurnKind::Advance),
        (false, TurnKind::Review),
        (false, TurnKind::Feedback),
        (true, TurnKind::Review),
        (false, TurnKind::Advance),
        (false, TurnKind::Review),
        (false, TurnKind::Feedback),
        (false, TurnKind::Review),
        (false, TurnKind::Feedback),
        (true, TurnKind::Review),
        (true, TurnKind::Advance),
    ] {
        assert_eq!(s.turn(signal), Ok(kind));
    }
    let r = s.r();
    assert_eq!(r.state, RunState::Stopped);
    assert_eq!(r.stop_reason, Some(StopReason::Completed));
    assert_eq!(statuses(r), [(1, PhaseStatus::Converged, 1), (2, PhaseStatus::Converged, 2), (3, PhaseStatus::Converged, 3)]);
    assert_eq!((r.phases_done, r.turns), (3, 13));
    assert!(r.completion.is_some());
    assert_eq!(next_step(r), Next::Finished(StopReason::Completed));
}

#[test]
fn max_rounds_pauses_exactly_at_the_cap_then_retry_and_skip() {
    let mut s = Sim::new(2);
    s.turn(false).unwrap(); // advance
    s.turn(false).unwrap(); // review 1
    s.turn(false).unwrap(); // feedback 1
    assert_eq!(s.r().state, RunState::Running, "one round below the cap runs on");
    s.turn(false).unwrap(); // review 2: the cap
    assert_eq!((s.r().state, s.r().paused_reason), (RunState::Paused, Some(PauseReason::PhaseNotConverged)));
    assert_eq!(next_step(s.r()), Next::Paused(PauseReason::PhaseNotConverged));
    assert!(s.control(Control::Resume).is_err(), "a resume after non-convergence is recorded as a retry");
    s.control(Control::Retry).unwrap();
    let Next::Turn(plan) = next_step(s.r()) else { panic!() };
    assert_eq!((plan.kind, plan.round, plan.phase), (TurnKind::Review, 1, 1));
    assert_eq!(plan.quotes.as_ref().map(|q| q.turn), Some(3), "the retry reviews the implementer's current output");
    s.turn(false).unwrap();
    s.turn(false).unwrap();
    s.turn(false).unwrap();
    assert_eq!(s.r().state, RunState::Paused);
    s.control(Control::Skip).unwrap();
    assert_eq!(statuses(s.r()), [(1, PhaseStatus::NotConverged, 2), (1, PhaseStatus::Skipped, 2)]);
    assert_eq!(s.r().phases_done, 1, "a skip counts");
    assert_eq!(s.turn(false), Ok(TurnKind::Advance));
    assert_eq!(s.r().phases.last().unwrap().n, 2);
}

#[test]
fn controls_refuse_what_does_not_apply() {
    let mut s = Sim::new(3);
    assert!(control_refusal(s.r(), Control::Resume).is_some(), "running");
    assert!(control_refusal(s.r(), Control::Skip).unwrap().contains("pause it first"));
    s.control(Control::Pause).unwrap();
    assert!(control_refusal(s.r(), Control::Pause).is_some());
    assert!(control_refusal(s.r(), Control::Retry).unwrap().contains("no phase under way"), "nothing to retry before phase 1");
    s.control(Control::Resume).unwrap();
    s.turn(false).unwrap();
    // A turn in flight: skip and retry wait for it.
    let Next::Turn(plan) = next_step(s.r()) else { panic!() };
    let intended = TurnIntended {
        run: "r".into(),
        turn: plan.turn,
        phase: plan.phase,
        round: plan.round,
        kind: plan.kind,
        launch: 99,
        prompt_blake3: "a".repeat(64),
        prompt_bytes: 1,
        reply_file: "/w/x".into(),
    };
    s.apply(LOOP_TURN_INTENDED, json!(intended)).unwrap();
    s.control(Control::Pause).unwrap();
    assert!(control_refusal(s.r(), Control::Skip).unwrap().contains("in flight"));
    assert!(matches!(next_step(s.r()), Next::Await(_)), "a paused loop still collects its turn in flight");
    // Abandoned (it never started): the same step comes back.
    s.apply(LOOP_TURN_ABANDONED, json!(TurnAbandoned { run: "r".into(), turn: plan.turn, launch: 99 })).unwrap();
    assert_eq!(s.r().abandoned, 1);
    s.control(Control::Resume).unwrap();
    let Next::Turn(again) = next_step(s.r()) else { panic!() };
    assert_eq!(again, plan);
    s.apply(LOOP_STOPPED, json!(LoopStopped { run: "r".into(), reason: StopReason::Manual, detail: None })).unwrap();
    for c in [Control::Pause, Control::Resume, Control::Retry, Control::Skip] {
        assert!(control_refusal(s.r(), c).unwrap().contains("has stopped"));
        assert!(s.control(c).is_err());
    }
}

#[test]
fn the_fold_refuses_turns_the_machine_did_not_plan() {
    let mut s = Sim::new(3);
    let mut bad = TurnIntended {
        run: "r".into(),
        turn: 1,
        phase: 1,
        round: 1,
        kind: TurnKind::Review,
        launch: 1,
        prompt_blake3: "a".repeat(64),
        prompt_bytes: 1,
        reply_file: "/w/x".into(),
    };
    assert!(s.apply(LOOP_TURN_INTENDED, json!(bad)).is_err(), "a review before any advance");
    bad.kind = TurnKind::Advance;
    bad.round = 0;
    bad.turn = 2;
    assert!(s.apply(LOOP_TURN_INTENDED, json!(bad)).is_err(), "the wrong turn number");
    bad.turn = 1;
    bad.prompt_blake3 = "A".repeat(64);
    assert!(s.apply(LOOP_TURN_INTENDED, json!(bad)).is_err(), "not lowercase hex");
    bad.prompt_blake3 = "a".repeat(64);
    s.apply(LOOP_TURN_INTENDED, json!(bad)).unwrap();
    assert!(s.apply(LOOP_TURN_INTENDED, json!(bad)).is_err(), "a second turn while one is in flight");
    let reply = |turn, launch| TurnReplied {
        run: "r".into(),
        turn,
        launch,
        reply_blake3: "b".repeat(64),
        reply_bytes: 1,
        signal: false,
        session: Some("bad session".into()),
    };
    assert!(s.apply(LOOP_TURN_REPLIED, json!(reply(1, 1))).is_err(), "a session id abcd would not key by");
    let mut ok = reply(1, 2);
    ok.session = None;
    assert!(s.apply(LOOP_TURN_REPLIED, json!(ok)).is_err(), "another launch's reply");
    ok.launch = 1;
    s.apply(LOOP_TURN_REPLIED, json!(ok)).unwrap();
    assert!(s.apply(LOOP_STOPPED, json!(LoopStopped { run: "r".into(), reason: StopReason::Completed, detail: None })).is_err());
    assert!(s.apply(LOOP_STARTED, json!(LoopStarted { run: "r".into(), config: config(3) })).is_err(), "a run name is used once");
    assert!(s.apply(LOOP_PAUSED, json!({"run": "r", "extra": 1})).is_err());
}

#[test]
fn the_completion_signal_is_strict() {
    for yes in ["COMPLETED", "completed", "  Completed \n", "\nCOMPLETED\n\n"] {
        assert!(is_completion(yes, "COMPLETED"), "{yes:?}");
    }
    for no in ["", "  ", "did work\nCOMPLETED", "COMPLETED\nand more", "COMPLETED.", "not COMPLETED", "COMPLETED\r\nx"] {
        assert!(!is_completion(no, "COMPLETED"), "{no:?}");
    }
    assert!(has_stop_signal("looks fine\n  lgtm \n", "LGTM"));
    assert!(!has_stop_signal("LGTM, but fix x", "LGTM"));
    assert!(!has_stop_signal("", "LGTM"));
}

#[test]
fn templates_fill_and_drop_the_session_on_the_first_turn() {
    let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    let tpl = w("claude -p {prompt} --resume {session} --output-format json");
    assert_eq!(
        fill_template(&tpl, "go on", None),
        w("claude -p go_on --output-format json").into_iter().map(|x| x.replace('_', " ")).collect::<Vec<_>>()
    );
    assert_eq!(fill_template(&tpl, "p", Some("s1")), w("claude -p p --resume s1 --output-format json"));
    assert_eq!(fill_template(&w("x --session={session} {prompt}"), "p", None), w("x p"));
    // The prompt may hold the placeholders' text; it is passed as written.
    assert_eq!(fill_template(&w("x {prompt}"), "say {session}", Some("s")), ["x", "say {session}"]);
    // The program is never dropped.
    assert_eq!(fill_template(&w("-x {session} {prompt}"), "p", None), w("-x p"));
}

#[test]
fn template_limits_on_both_sides() {
    let words = |n: usize| (0..n).map(|i| if i == 1 { "{prompt}".to_string() } else { format!("w{i}") }).collect::<Vec<_>>();
    assert!(check_template("t", &words(TEMPLATE_WORDS_MAX)).is_ok());
    assert!(check_template("t", &words(TEMPLATE_WORDS_MAX + 1)).is_err());
    assert!(check_template("t", &[]).is_err());
    assert!(check_template("t", &["x".into(), "y".into()]).unwrap_err().to_string().contains("no {prompt}"));
    assert!(check_template("t", &["{prompt}".into()]).is_err(), "the program is a placeholder");
    assert!(check_template("t", &["x".into(), "{prompt}\n".into()]).is_err());
    let token = format!("ghp_{}", "a1B2".repeat(9));
    assert!(check_template("t", &["x".into(), "{prompt}".into(), token]).unwrap_err().to_string().contains("environment"));
}

#[test]
fn max_rounds_on_both_sides_of_its_limits() {
    for (n, ok) in [(0, false), (1, true), (MAX_ROUNDS_CAP, true), (MAX_ROUNDS_CAP + 1, false)] {
        assert_eq!(check_config(&config(n)).is_ok(), ok, "{n}");
    }
    let mut c = config(3);
    c.completion_signal = "DONE".into();
    assert!(check_config(&c).unwrap_err().to_string().contains("does not name the completion signal DONE"));
    c.advance_prompt = default_advance_prompt("DONE", Some("PLAN.md"));
    assert!(check_config(&c).is_ok());
    assert!(c.advance_prompt.contains("the checklist in PLAN.md"));
    c.review_prompt = "Review it.".into();
    assert!(check_config(&c).is_err());
    c.review_prompt = "x".repeat(CONFIG_PROMPT_MAX_BYTES - 5) + " LGTM";
    assert!(check_config(&c).is_ok());
    c.review_prompt.push('x');
    assert!(check_config(&c).is_err(), "one byte over the prompt limit");
    c.review_prompt = default_review_prompt("LGTM");
    c.completion_signal = "A".repeat(SIGNAL_MAX_BYTES + 1);
    assert!(check_config(&c).is_err());
}

#[test]
fn a_prompt_is_cut_to_fit_exactly() {
    let c = config(3);
    let head = format!("{}\n\n", c.feedback_prompt);
    let fits = "é".repeat((PROMPT_MAX_BYTES - head.len()) / 2);
    let p = build_prompt(&c, TurnKind::Feedback, Some((&fits, "/f")));
    assert!(p.len() <= PROMPT_MAX_BYTES && p.ends_with(&fits), "a reply that fits is quoted whole");
    let over = format!("{fits}xyz");
    let p = build_prompt(&c, TurnKind::Feedback, Some((&over, "/f")));
    assert!(p.len() <= PROMPT_MAX_BYTES, "{}", p.len());
    assert!(p.contains("bytes cut here; the whole reply is in /f]"));
    assert_eq!(build_prompt(&c, TurnKind::Advance, None), c.advance_prompt);
    assert!(build_prompt(&c, TurnKind::Review, Some(("work", "/f"))).ends_with("The implementer's reply:\n\nwork"));
}

#[test]
fn replies_are_read_within_their_limit() {
    let at_limit = vec![b'a'; REPLY_MAX_BYTES];
    assert_eq!(read_reply(Reader::Plain, &at_limit).unwrap().reply.len(), REPLY_MAX_BYTES);
    assert!(read_reply(Reader::Plain, &vec![b'a'; REPLY_MAX_BYTES + 1]).is_err());
    assert!(read_reply(Reader::Plain, &[0xff, 0xfe]).is_err());
    let one = br#"{"type":"result","subtype":"success","is_error":false,"result":"done\nLGTM","session_id":"abc-123"}"#;
    assert_eq!(read_reply(Reader::ClaudeJson, one).unwrap(), ReplyFile::new("done\nLGTM".into(), Some("abc-123".into())));
    let array = br#"[{"type":"system"},{"type":"result","result":"r","session_id":"s"}]"#;
    assert_eq!(parse_claude_json(std::str::from_utf8(array).unwrap()).unwrap(), ("r".into(), Some("s".into())));
    assert!(
        parse_claude_json(r#"{"type":"result","is_error":true,"subtype":"error_max_turns","result":"x"}"#)
            .unwrap_err()
            .contains("error_max_turns")
    );
    assert!(parse_claude_json(r#"{"result":"x","session_id":"../etc"}"#).is_err());
    assert!(parse_claude_json(r#"{"session_id":"s"}"#).is_err());
    assert!(parse_claude_json("not json").is_err());
    assert!(ReplyFile::parse(br#"{"schema":"abcd/loop-reply/v1","reply":"x","session":null}"#).is_ok());
    assert!(ReplyFile::parse(br#"{"schema":"other","reply":"x","session":null}"#).is_err());
}

/// What quickcheck varies: a reply with or without its signal, or a control.
#[derive(Clone, Debug)]
enum Act {
    Reply(bool),
    Control(u8),
    Stop,
}

impl Arbitrary for Act {
    fn arbitrary(g: &mut Gen) -> Act {
        match u8::arbitrary(g) % 10 {
            0 => Act::Control(u8::arbitrary(g) % 4),
            1 if u8::arbitrary(g) % 8 == 0 => Act::Stop,
            n => Act::Reply(n % 3 == 0),
        }
    }
}

fn cases() -> u64 {
    std::env::var("ABCD_QUICKCHECK_TESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
}

/// Whatever happens, the record keeps its invariants: phases done are the converged and
/// skipped ones, no attempt takes more rounds than the cap, a pause after non-convergence
/// is on a phase at the cap, a retry's attempts share their number, and the step machine
/// offers a turn exactly when the loop runs with nothing in flight.
#[test]
fn the_record_keeps_its_invariants_under_any_sequence() {
    fn prop(max_rounds: u8, acts: Vec<Act>) -> bool {
        let max_rounds = u32::from(max_rounds % 4) + 1;
        let mut s = Sim::new(max_rounds);
        for act in acts {
            let before = s.records.clone();
            let ok = match act {
                Act::Reply(signal) => s.turn(signal).is_ok(),
                Act::Control(c) => {
                    let c = [Control::Pause, Control::Resume, Control::Retry, Control::Skip][usize::from(c)];
                    let refused = control_refusal(s.r(), c).is_some();
                    let folded = s.control(c).is_ok();
                    // The fold and the refusal agree (a resume after non-convergence aside).
                    assert!(refused != folded || s.r().paused_reason == Some(PauseReason::PhaseNotConverged));
                    folded
                }
                Act::Stop => {
                    s.apply(LOOP_STOPPED, json!(LoopStopped { run: "r".into(), reason: StopReason::Manual, detail: None })).is_ok()
                }
            };
            if !ok {
                s.records = before;
            }
            let r = s.r();
            let done = r.phases.iter().filter(|p| matches!(p.status, PhaseStatus::Converged | PhaseStatus::Skipped)).count() as u64;
            assert_eq!(r.phases_done, done, "{r:#?}");
            assert!(r.phases.iter().all(|p| p.rounds <= max_rounds));
            if r.paused_reason == Some(PauseReason::PhaseNotConverged) {
                assert_eq!(r.phases.last().map(|p| (p.status, p.rounds)), Some((PhaseStatus::NotConverged, max_rounds)));
            }
            assert!(r.phases.windows(2).all(|w| w[1].n == w[0].n || w[1].n == w[0].n + 1));
            assert_eq!(matches!(next_step(r), Next::Turn(_)), r.state == RunState::Running && r.pending.is_none());
            assert_eq!(r.state == RunState::Stopped, r.stop_reason.is_some());
        }
        true
    }
    QuickCheck::new().tests(cases()).quickcheck(prop as fn(u8, Vec<Act>) -> bool);
}

#[test]
fn default_names_take_the_next_free_suffix_up_to_the_limit() {
    let at: Timestamp = "2026-12-01T09:00:00.75Z".parse().unwrap();
    let base = "loop-20261201T090000Z";
    assert_eq!(default_run_name(at, |_| false).as_deref(), Some(base));
    assert_eq!(default_run_name(at, |n| n == base).as_deref(), Some("loop-20261201T090000Z-2"));
    // Taken names are skipped wherever they are; a free one below a taken one is used.
    let taken = [base, "loop-20261201T090000Z-2", "loop-20261201T090000Z-4"];
    assert_eq!(default_run_name(at, |n| taken.contains(&n)).as_deref(), Some("loop-20261201T090000Z-3"));
    // The limit, on both sides: every name but the last taken, then all of them.
    let last = format!("{base}-{DEFAULT_NAMES_PER_SECOND}");
    assert_eq!(default_run_name(at, |n| n != last), Some(last.clone()));
    assert_eq!(default_run_name(at, |_| true), None);
    assert!(crate::ledger::check_name("run", &last).is_ok(), "the longest default name is a run name");
}

#[test]
fn max_turns_pauses_at_the_bound_not_a_turn_before_and_a_resume_allows_as_many_again() {
    // Phases converge at once and the implementer never says the completion signal.
    let mut s = Sim::bounded(10, 5);
    for n in 0..4 {
        s.turn(n % 2 == 1).unwrap(); // advance, then a review that converges
    }
    assert!(matches!(next_step(s.r()), Next::Turn(_)), "one turn below the bound runs on");
    assert!(s.pause_at_bound().is_err(), "a max_turns pause before the bound is refused");
    s.turn(false).unwrap();
    assert_eq!(next_step(s.r()), Next::RecordPause(PauseReason::MaxTurns), "at the bound the driver pauses");
    assert!(s.turn(false).is_err(), "no turn starts at the bound");
    s.pause_at_bound().unwrap();
    assert_eq!((s.r().state, s.r().paused_reason), (RunState::Paused, Some(PauseReason::MaxTurns)));
    assert_eq!(next_step(s.r()), Next::Paused(PauseReason::MaxTurns));
    assert!(s.pause_at_bound().is_err(), "paused already");
    assert!(listing(s.r()).summary.contains("5 turns ran without the completion signal"), "{}", listing(s.r()).summary);
    // A person's resume allows max_turns more.
    s.control(Control::Resume).unwrap();
    for _ in 0..4 {
        s.turn(false).unwrap();
    }
    assert!(matches!(next_step(s.r()), Next::Turn(_)));
    s.turn(false).unwrap();
    assert_eq!((s.r().turns, next_step(s.r())), (10, Next::RecordPause(PauseReason::MaxTurns)));
    // A pause by hand at the bound is a pause by hand; its resume allows as many again too.
    s.control(Control::Pause).unwrap();
    assert_eq!(s.r().paused_reason, Some(PauseReason::Manual));
    s.control(Control::Resume).unwrap();
    assert!(matches!(next_step(s.r()), Next::Turn(_)));
    // The reply that completes the run stops it, whatever the bound says.
    let mut s = Sim::bounded(3, 1);
    s.turn(true).unwrap();
    assert_eq!(s.r().stop_reason, Some(StopReason::Completed));
    assert_eq!(next_step(s.r()), Next::Finished(StopReason::Completed));
    // Reasons the driver never records by loop.paused.
    let mut s = Sim::bounded(3, 1);
    s.turn(false).unwrap();
    let not_converged = json!(LoopPaused { run: "r".into(), reason: Some(PauseReason::PhaseNotConverged) });
    assert!(s.apply(LOOP_PAUSED, not_converged).is_err());
    s.apply(LOOP_PAUSED, json!({"run": "r", "reason": "manual"})).unwrap();
    assert_eq!(s.r().paused_reason, Some(PauseReason::Manual));
}

#[test]
fn max_turns_on_both_sides_of_its_limits() {
    for (n, ok) in [(0, false), (1, true), (MAX_TURNS_CAP, true), (MAX_TURNS_CAP + 1, false)] {
        assert_eq!(check_config(&Config { max_turns: n, ..config(3) }).is_ok(), ok, "{n}");
    }
    assert!((1..=MAX_TURNS_CAP).contains(&DEFAULT_MAX_TURNS));
    // A loop.started written before the bound existed folds, with the default bound.
    let mut started = json!(LoopStarted { run: "old".into(), config: config(3) });
    started["config"].as_object_mut().unwrap().remove("max_turns");
    let mut records = LoopRecords::default();
    fold_loop_event(&mut records, LOOP_STARTED, &started, t(0)).unwrap();
    assert_eq!(records.loops["old"].config.max_turns, DEFAULT_MAX_TURNS);
}

/// What the turn-bound property varies: a reply, a control, or the driver's pause at the
/// bound when the step machine asks for it.
#[derive(Clone, Debug)]
enum BoundAct {
    Reply(bool),
    Control(u8),
    PauseAtBound,
}

impl Arbitrary for BoundAct {
    fn arbitrary(g: &mut Gen) -> BoundAct {
        match u8::arbitrary(g) % 8 {
            0 => BoundAct::Control(u8::arbitrary(g) % 4),
            1 | 2 => BoundAct::PauseAtBound,
            n => BoundAct::Reply(n % 4 == 0),
        }
    }
}

/// Whatever happens, no more than max_turns turns are replied on one word of a person, the
/// step machine asks for the pause exactly at the bound, and the fold takes a max_turns
/// pause exactly when it asks.
#[test]
fn the_turn_bound_holds_under_any_sequence() {
    fn prop(max_turns: u8, acts: Vec<BoundAct>) -> bool {
        let max_turns = u64::from(max_turns % 6) + 1;
        let mut s = Sim::bounded(2, max_turns);
        for act in acts {
            let before = s.records.clone();
            let due = next_step(s.r()) == Next::RecordPause(PauseReason::MaxTurns);
            let ok = match act {
                BoundAct::Reply(signal) => s.turn(signal).is_ok(),
                BoundAct::Control(c) => s.control([Control::Pause, Control::Resume, Control::Retry, Control::Skip][usize::from(c)]).is_ok(),
                BoundAct::PauseAtBound => {
                    let folded = s.pause_at_bound().is_ok();
                    assert_eq!(folded, due, "{:#?}", before);
                    folded
                }
            };
            if !ok {
                s.records = before;
            }
            let r = s.r();
            let since = turns_since_resume(r);
            assert!(since <= max_turns, "{since} turns on one word: {r:#?}");
            let idle = r.state == RunState::Running && r.pending.is_none();
            assert_eq!(next_step(r) == Next::RecordPause(PauseReason::MaxTurns), idle && since == max_turns);
            assert_eq!(matches!(next_step(r), Next::Turn(_)), idle && since < max_turns);
            if r.paused_reason == Some(PauseReason::MaxTurns) {
                assert_eq!(since, max_turns);
            }
        }
        true
    }
    QuickCheck::new().tests(cases()).quickcheck(prop as fn(u8, Vec<BoundAct>) -> bool);
}

impl Sim {
    /// Intends the due turn (a new launch) and returns its plan and launch.
    fn intend(&mut self) -> (TurnPlan, u64) {
        let Next::Turn(plan) = next_step(self.r()) else { panic!("{:?}", next_step(self.r())) };
        self.launches += 1;
        let intended = TurnIntended {
            run: "r".into(),
            turn: plan.turn,
            phase: plan.phase,
            round: plan.round,
            kind: plan.kind,
            launch: self.launches,
            prompt_blake3: "a".repeat(64),
            prompt_bytes: 1,
            reply_file: format!("/w/{}.json", self.launches),
        };
        self.apply(LOOP_TURN_INTENDED, json!(intended)).unwrap();
        (plan, self.launches)
    }

    fn lose(&mut self, turn: u64, launch: u64, how: LostHow, signal: Option<i32>) -> Result<(), Rejection> {
        self.apply(LOOP_TURN_LOST, json!(TurnLost { run: "r".into(), turn, launch, how, signal }))
    }
}

/// A lost turn (its agent killed, or gone in a crash, no reply) runs again as the same
/// step: the same turn number, phase, round, quoted reply and session, a new launch. At most
/// `LOST_TURN_RERUNS` losses of one turn are folded; the fold refuses one more (the driver
/// stops the run `peer_error` instead).
#[test]
fn a_lost_turn_runs_again_as_the_same_step_at_most_lost_turn_reruns_times() {
    let mut s = Sim::new(3);
    s.turn(false).unwrap();
    // The reviewer named a session: its next turn resumes it.
    let (_, launch) = s.intend();
    let replied = TurnReplied {
        run: "r".into(),
        turn: 2,
        launch,
        reply_blake3: "b".repeat(64),
        reply_bytes: 2,
        signal: false,
        session: Some("sess-r".into()),
    };
    s.apply(LOOP_TURN_REPLIED, json!(replied)).unwrap();
    s.turn(false).unwrap();
    let (plan, mut launch) = s.intend();
    assert_eq!((plan.kind, plan.turn, plan.session.as_deref()), (TurnKind::Review, 4, Some("sess-r")));
    for loss in 1..=LOST_TURN_RERUNS {
        // Only the turn in flight, and its launch, can be lost.
        assert!(s.lose(plan.turn, launch + 1, LostHow::Gone, None).is_err());
        assert!(s.lose(plan.turn + 1, launch, LostHow::Gone, None).is_err());
        let how = if loss % 2 == 1 { (LostHow::Signal, Some(9)) } else { (LostHow::Gone, None) };
        s.lose(plan.turn, launch, how.0, how.1).unwrap();
        assert_eq!((s.r().lost, s.r().due_turn_losses), (u64::from(loss), loss));
        assert!(s.r().pending.is_none());
        let listing = listing(s.r());
        assert_eq!(listing.lost, u64::from(loss));
        let (again, next) = s.intend();
        assert_eq!(again, plan, "the same step, session and quote");
        assert!(listing.summary.contains("phase 1 in review"), "{}", listing.summary);
        let summary = super::listing(s.r()).summary;
        assert!(summary.contains(&format!("in flight, run again after its agent was lost {}", times(u64::from(loss)))), "{summary}");
        launch = next;
    }
    // One loss more is not run again: the fold refuses it.
    let refused = s.lose(plan.turn, launch, LostHow::Signal, Some(9)).unwrap_err();
    assert!(refused.reason.contains(&format!("lost {LOST_TURN_RERUNS} times already")), "{}", refused.reason);
    assert_eq!(s.r().pending.as_ref().map(|p| p.launch), Some(launch));
    // A reply starts the count anew for the next turn; the total stays.
    let replied = TurnReplied {
        run: "r".into(),
        turn: plan.turn,
        launch,
        reply_blake3: "b".repeat(64),
        reply_bytes: 2,
        signal: false,
        session: None,
    };
    s.apply(LOOP_TURN_REPLIED, json!(replied)).unwrap();
    assert_eq!((s.r().lost, s.r().due_turn_losses), (u64::from(LOST_TURN_RERUNS), 0));
    let (plan, launch) = s.intend();
    assert_eq!(plan.kind, TurnKind::Feedback);
    s.lose(plan.turn, launch, LostHow::Gone, None).unwrap();
    assert_eq!(s.r().due_turn_losses, 1);
}

/// A lost advance goes back to the advance step; a skip starts the count of the turn due
/// anew, and a record showing more losses than the bound is not a record the fold makes.
#[test]
fn a_lost_advance_goes_back_to_advance_and_a_skip_counts_anew() {
    let mut s = Sim::new(3);
    let (plan, launch) = s.intend();
    assert_eq!(s.r().step, StepName::Probe);
    s.lose(plan.turn, launch, LostHow::Signal, Some(15)).unwrap();
    assert_eq!(s.r().step, StepName::Advance);
    s.turn(false).unwrap();
    let (plan, launch) = s.intend();
    s.lose(plan.turn, launch, LostHow::Gone, None).unwrap();
    s.control(Control::Pause).unwrap();
    s.control(Control::Skip).unwrap();
    assert_eq!((s.r().lost, s.r().due_turn_losses), (2, 0));
    let mut records = s.records.clone();
    assert!(records.shown_text_passes());
    records.loops.get_mut("r").unwrap().due_turn_losses = LOST_TURN_RERUNS + 1;
    assert!(!records.shown_text_passes());
}

#[test]
fn a_lost_turn_names_its_signal_exactly_when_a_signal_ended_it() {
    let mut s = Sim::new(3);
    let (plan, launch) = s.intend();
    for (how, signal) in [(LostHow::Signal, None), (LostHow::Signal, Some(0)), (LostHow::Signal, Some(-9)), (LostHow::Gone, Some(9))] {
        assert_eq!(s.lose(plan.turn, launch, how, signal).unwrap_err().field.as_deref(), Some("signal"), "{how:?} {signal:?}");
    }
    assert!(s.r().pending.is_some());
}
