use super::*;

fn t(s: &str) -> Timestamp {
    s.parse().unwrap()
}

const T0: &str = "2026-12-01T18:00:00Z";

fn driver(pid: u32) -> Driver {
    Driver { session: Some("s1".into()), process: ProcessId { pid, start_ticks: 100 } }
}

fn started(run: &str) -> RunStarted {
    RunStarted { run: run.into(), working_copy: "/w".into(), lanes: vec!["impl".into(), "review".into()], driver: driver(10) }
}

fn intended(n: u64) -> LaunchIntended {
    LaunchIntended {
        run: "r1".into(),
        lane: "impl".into(),
        launch: n,
        role: "implementer".into(),
        command: vec!["claude".into(), "-p".into(), "go on".into()],
        receipt: "/w/receipt.json".into(),
        worktree: "/w".into(),
        launcher: None,
    }
}

fn state_with_run() -> LedgerState {
    let mut s = LedgerState::default();
    fold_run_started(&mut s, started("r1"), t(T0), false).unwrap();
    s
}

#[test]
fn names_are_ref_safe_on_both_sides_of_the_length_limit() {
    assert!(name_ok(&"a".repeat(NAME_MAX_BYTES)));
    assert!(!name_ok(&"a".repeat(NAME_MAX_BYTES + 1)));
    for bad in ["", ".", "..", ".x", "a..b", "a/b", "-x", "x.lock", "a b", "é"] {
        assert!(!name_ok(bad), "{bad:?}");
    }
    for good in ["r1", "run-2026.12.01", "lane_A"] {
        assert!(name_ok(good), "{good:?}");
    }
}

/// A token fits the name alphabet (`ghp_` and 36 letters and digits is 40 of them), and a
/// run or lane name is kept in the journal, shown by `resume` and made part of a git ref:
/// it is refused like a secret anywhere else, naming the kind, never the text.
#[test]
fn a_name_that_carries_a_secret_is_refused_without_echoing_it() {
    let token = format!("ghp_{}", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5");
    assert!(name_ok(&token), "the alphabet alone lets it through");
    let err = check_name("run", &token).unwrap_err();
    assert!(err.reason.contains("secret") && !err.reason.contains(&token[4..]), "{err:?}");
    let mut s = LedgerState::default();
    assert!(fold_run_started(&mut s, started(&token), t(T0), false).is_err(), "the fold skips such a run");
    let mut with_lane = started("r1");
    with_lane.lanes = vec![token.clone()];
    assert!(fold_run_started(&mut LedgerState::default(), with_lane, t(T0), false).is_err(), "and such a lane");
    let mut secret_role = intended(1);
    secret_role.role = token.clone();
    assert!(fold_intended(&mut state_with_run(), secret_role, t(T0)).is_err(), "and a launch whose role is one");
    assert!(fold_intended(&mut state_with_run(), intended(1), t(T0)).is_ok());
    assert!(check_name("run", "release-2026.12").is_ok());
}

#[test]
fn a_run_is_started_once_and_indexed_once() {
    let mut s = state_with_run();
    assert!(fold_run_started(&mut s, started("r1"), t(T0), false).is_err());
    let mut machine = LedgerState::default();
    fold_run_started(&mut machine, started("r1"), t(T0), true).unwrap();
    assert!(machine.runs.is_empty() && machine.index["r1"] == IndexedRun { working_copy: "/w".into(), finished: false });
    fold_finished(&mut machine, RunNamed { run: "r1".into(), working_copy: None }, true).unwrap();
    assert!(machine.index["r1"].finished);
}

#[test]
fn launches_are_numbered_in_order_within_their_lane() {
    let mut s = state_with_run();
    assert!(fold_intended(&mut s, intended(2), t(T0)).is_err(), "launch 1 comes first");
    fold_intended(&mut s, intended(1), t(T0)).unwrap();
    fold_intended(&mut s, intended(2), t(T0)).unwrap();
    let mut other_lane = intended(1);
    other_lane.lane = "review".into();
    fold_intended(&mut s, other_lane, t(T0)).unwrap();
    let mut unknown = intended(1);
    unknown.lane = "nope".into();
    assert!(fold_intended(&mut s, unknown, t(T0)).is_err());
    assert_eq!(s.runs["r1"].lanes["impl"].launches_total, 2);
}

#[test]
fn a_launch_goes_intended_started_exited_collected_each_once() {
    let mut s = state_with_run();
    fold_intended(&mut s, intended(1), t(T0)).unwrap();
    let st = LaunchStarted {
        run: "r1".into(),
        lane: "impl".into(),
        launch: 1,
        process: ProcessId { pid: 77, start_ticks: 5 },
        stdout: "/w/o".into(),
        stderr: "/w/e".into(),
    };
    fold_started(&mut s, st.clone()).unwrap();
    assert!(fold_started(&mut s, st).is_err());
    let ex = LaunchExited { run: "r1".into(), lane: "impl".into(), launch: 1, status: ExitStatus::Code { code: 0 } };
    fold_exited(&mut s, ex.clone()).unwrap();
    assert!(fold_exited(&mut s, ex).is_err());
    let c = ReceiptCollected { run: "r1".into(), lane: "impl".into(), launch: 1, blake3: "a".repeat(64), bytes: 3, hashed_bytes: None };
    fold_collected(&mut s, c.clone()).unwrap();
    assert!(fold_collected(&mut s, c).is_err());
    let l = s.runs["r1"].lanes["impl"].last().unwrap();
    assert_eq!(
        (l.started.unwrap().pid, l.exited, l.collected.as_deref().map(str::len)),
        (77, Some(ExitStatus::Code { code: 0 }), Some(64))
    );
}

#[test]
fn a_secret_in_a_command_word_is_refused_naming_the_word_not_the_value() {
    let mut cmd = vec!["deploy".to_string(), "--token".into(), "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB".into()];
    let r = check_command(&cmd).unwrap_err();
    assert!(r.reason.contains("word 3") && !r.reason.contains("ghp_0123"), "{r:?}");
    cmd.truncate(2);
    assert!(check_command(&cmd).is_ok());
    assert!(check_command(&[]).is_err());
    assert!(check_command(&vec!["x".to_string(); COMMAND_WORDS_MAX]).is_ok());
    assert!(check_command(&vec!["x".to_string(); COMMAND_WORDS_MAX + 1]).is_err());
}

#[test]
fn a_takeover_must_name_the_driver_it_replaces() {
    let mut s = state_with_run();
    let wrong = DriverClaimed { run: "r1".into(), driver: driver(20), previous: driver(11) };
    assert!(fold_driver_claimed(&mut s, wrong).is_err());
    fold_driver_claimed(&mut s, DriverClaimed { run: "r1".into(), driver: driver(20), previous: driver(10) }).unwrap();
    assert_eq!((s.runs["r1"].driver.process.pid, s.runs["r1"].takeovers), (20, 1));
}

#[test]
fn only_the_newest_launches_are_kept_and_the_count_goes_on() {
    let mut s = state_with_run();
    for n in 1..=(LAUNCHES_KEPT as u64 + 3) {
        fold_intended(&mut s, intended(n), t(T0)).unwrap();
    }
    let lane = &s.runs["r1"].lanes["impl"];
    assert_eq!(lane.launches.len(), LAUNCHES_KEPT);
    assert_eq!(lane.launches[0].launch, 4);
    assert_eq!(lane.launches_total, LAUNCHES_KEPT as u64 + 3);
}

#[test]
fn halts_and_saves_need_a_run_and_a_lane() {
    let mut s = state_with_run();
    fold_halted(&mut s, RunNamed { run: "r1".into(), working_copy: None }, true).unwrap();
    assert!(s.runs["r1"].halted);
    fold_halted(&mut s, RunNamed { run: "r1".into(), working_copy: None }, false).unwrap();
    assert!(!s.runs["r1"].halted);
    assert!(fold_halted(&mut s, RunNamed { run: "nope".into(), working_copy: None }, true).is_err());
    let saved = WorkSavedAside {
        run: "r1".into(),
        lane: "impl".into(),
        worktree: "/w".into(),
        ref_name: "refs/abcd/saved/r1/impl/x".into(),
        commit: "c".repeat(40),
        files: vec!["a.rs".into()],
        files_not_listed: 0,
    };
    fold_saved(&mut s, saved.clone(), t(T0)).unwrap();
    assert!(fold_saved(&mut s, WorkSavedAside { ref_name: "refs/heads/x".into(), ..saved }, t(T0)).is_err());
}

#[test]
fn only_names_a_record_may_hold_are_listed_within_their_bounds() {
    let files = vec!["a.rs".to_string(), "bad\nname".into(), "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB".into(), "b.rs".into()];
    assert_eq!(listable_files(&files), (vec!["a.rs".to_string(), "b.rs".into()], 2));
    let many: Vec<String> = (0..SAVED_FILES_LISTED_MAX + 1).map(|i| format!("f{i}")).collect();
    assert_eq!(listable_files(&many).0.len(), SAVED_FILES_LISTED_MAX);
    let long: Vec<String> = (0..20).map(|i| format!("{i:02}{}", "x".repeat(2_046))).collect();
    let (listed, rest) = listable_files(&long);
    assert_eq!((listed.len(), rest), (SAVED_FILES_LISTED_BYTES / 2_048, 20 - (SAVED_FILES_LISTED_BYTES / 2_048) as u64));
}
