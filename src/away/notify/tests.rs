use super::*;
use crate::away::{AwaySet, fold_ended, fold_set};
use crate::event::away::AwayEnded;

fn t(s: &str) -> Timestamp {
    s.parse().unwrap()
}

const T0: &str = "2026-12-01T18:00:00Z";

fn window(notify: Option<&str>) -> AwayState {
    let mut s = AwayState::default();
    let start = t(T0);
    let set = AwaySet {
        set_by: "Pat".into(),
        working_copy: "/w/a".into(),
        start,
        end: start.checked_add(SignedDuration::from_hours(12)).unwrap(),
        hold_pushes: false,
        notify: notify.map(String::from),
    };
    fold_set(&mut s, set).unwrap();
    s
}

fn sent(kind: NotifyKind, at: &str) -> Notified {
    Notified { kind, summary: "s".into(), at: t(at) }
}

fn notified(kind: NotifyKind) -> AwayNotified {
    AwayNotified { kind, at: t(T0), summary: "abcd: x in a".into(), working_copy: "/w/a".into() }
}

#[test]
fn a_kind_is_due_again_only_a_full_hour_after_its_last_notification() {
    let last = [sent(NotifyKind::StopFailure, "2026-12-01T18:00:00Z")];
    assert!(notify_due(&[], NotifyKind::StopFailure, t(T0)));
    assert!(!notify_due(&last, NotifyKind::StopFailure, t("2026-12-01T18:00:00Z")));
    assert!(!notify_due(&last, NotifyKind::StopFailure, t("2026-12-01T18:59:59.999Z")), "one instant short of the hour");
    assert!(notify_due(&last, NotifyKind::StopFailure, t("2026-12-01T19:00:00Z")), "the hour is up");
    // Kinds are counted apart.
    assert!(notify_due(&last, NotifyKind::CapForced, t("2026-12-01T18:00:01Z")));
    assert!(notify_due(&last, NotifyKind::AllBlocked, t("2026-12-01T18:00:01Z")));
    // A clock set back does not hold a kind off.
    assert!(notify_due(&last, NotifyKind::StopFailure, t("2026-12-01T17:30:00Z")));
}

#[test]
fn the_rule_is_folded_from_the_notified_events() {
    let mut s = window(Some("notify-send abcd \"$1\""));
    assert_eq!(command_due(&s, NotifyKind::StopFailure, t(T0)), Some("notify-send abcd \"$1\""));
    fold_notified(&mut s, AwayNotified { at: t("2026-12-01T18:10:00Z"), ..notified(NotifyKind::StopFailure) }).unwrap();
    assert_eq!(command_due(&s, NotifyKind::StopFailure, t("2026-12-01T18:20:00Z")), None);
    assert!(command_due(&s, NotifyKind::CapForced, t("2026-12-01T18:20:00Z")).is_some());
    assert!(command_due(&s, NotifyKind::StopFailure, t("2026-12-01T19:10:00Z")).is_some());
    // No command, or no window holding: never due.
    assert_eq!(command_due(&window(None), NotifyKind::StopFailure, t(T0)), None);
    assert_eq!(command_due(&s, NotifyKind::StopFailure, t("2026-12-02T06:00:00Z")), None, "lapsed");
    fold_ended(&mut s, AwayEnded { ended_by: "Pat".into(), working_copy: "/w/a".into() }, t("2026-12-01T20:00:00Z")).unwrap();
    assert_eq!(command_due(&s, NotifyKind::AllBlocked, t("2026-12-01T20:00:01Z")), None, "present");
    assert_eq!(command_due(&AwayState::default(), NotifyKind::StopFailure, t(T0)), None);
}

#[test]
fn a_new_window_takes_its_own_command_and_keeps_the_hour() {
    let mut s = window(Some("a"));
    fold_notified(&mut s, notified(NotifyKind::CapForced)).unwrap();
    let again = AwaySet {
        set_by: "Pat".into(),
        working_copy: "/w/a".into(),
        start: t(T0),
        end: t("2026-12-02T06:00:00Z"),
        hold_pushes: false,
        notify: None,
    };
    fold_set(&mut s, again).unwrap();
    let w = s.window.as_ref().unwrap();
    assert_eq!(w.notify, None, "setting the mode again without --notify drops the command");
    assert_eq!(w.notified.len(), 1, "the notifications sent are carried over");
}

#[test]
fn the_command_and_lines_are_held_to_their_limits() {
    let at_limit = "a".repeat(NOTIFY_COMMAND_MAX_CHARS);
    assert!(check_notify_command(&at_limit).is_ok());
    assert!(check_notify_command(&format!("{at_limit}a")).is_err());
    assert!(check_notify_command("").is_err());
    assert!(check_notify_command("a\nb").is_err());
    let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0".repeat(2).get(..36).unwrap());
    let refused = check_notify_command(&format!("curl -d {token} https://x")).unwrap_err();
    assert!(!refused.reason.contains(&token), "the secret is named by kind, never echoed");

    let summary_at = |n: usize| AwayNotified { summary: "é".repeat(n), ..notified(NotifyKind::StopFailure) };
    assert!(check_notified(&summary_at(NOTIFY_SUMMARY_MAX_CHARS)).is_ok());
    assert!(check_notified(&summary_at(NOTIFY_SUMMARY_MAX_CHARS + 1)).is_err());

    let seen = |t: &str, line: Option<String>| AwayNotificationRecorded { notification_type: t.into(), line, working_copy: "/w".into() };
    assert!(check_notification(&seen("idle_prompt", Some("é".repeat(NOTIFICATION_LINE_MAX_CHARS)))).is_ok());
    assert!(check_notification(&seen("idle_prompt", Some("é".repeat(NOTIFICATION_LINE_MAX_CHARS + 1)))).is_err());
    assert!(check_notification(&seen("Idle Prompt", None)).is_err());
}

#[test]
fn the_summary_is_one_bounded_line_without_secrets() {
    let s = summary(NotifyKind::StopFailure, "shop", Some("rate_limit"));
    assert_eq!(s, "abcd: a turn ended on a rate or usage limit in shop: rate_limit");
    let long = summary(NotifyKind::CapForced, "shop", Some(&"word ".repeat(100)));
    assert_eq!(long.chars().count(), NOTIFY_SUMMARY_MAX_CHARS);
    let just = "x".repeat(NOTIFY_SUMMARY_MAX_CHARS - "abcd: every owed item waits on a queued step in shop: ".len());
    assert_eq!(summary(NotifyKind::AllBlocked, "shop", Some(&just)).chars().count(), NOTIFY_SUMMARY_MAX_CHARS);
    assert!(!summary(NotifyKind::AllBlocked, "shop", Some(&just)).ends_with('…'), "at the limit nothing is cut");
    assert!(summary(NotifyKind::AllBlocked, "shop", Some(&format!("{just}x"))).ends_with('…'), "one past it is cut");
    let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0".repeat(2).get(..36).unwrap());
    let s = summary(NotifyKind::CapForced, "shop", Some(&format!("checklist item {token}")));
    assert_eq!(s, "abcd: the host's cap forced a stop with work owed in shop");
    assert!(
        check_notified(&AwayNotified { summary: summary(NotifyKind::CapForced, "a\nb", Some("x\ty")), ..notified(NotifyKind::CapForced) })
            .is_ok()
    );
}

/// A folder name holding a token across the summary's cut is scanned whole before the
/// cut: the place is left out, and no run of the token's random part is in the summary.
#[test]
fn a_place_holding_a_token_across_the_cut_is_left_out_of_the_summary() {
    let random = "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d";
    let head = "abcd: a turn ended on a rate or usage limit in ".chars().count();
    let place = format!("{}-ghp_{random}", "p".repeat(NOTIFY_SUMMARY_MAX_CHARS - 30 - head));
    let s = summary(NotifyKind::StopFailure, &place, Some("rate_limit"));
    assert_eq!(s, "abcd: a turn ended on a rate or usage limit");
    let line = format!("{} ghp_{random} after", "w".repeat(NOTIFICATION_LINE_MAX_CHARS - 30));
    assert_eq!(notification_line(&line), None, "a message holding a token across its cut is left out whole");
}

#[test]
fn a_host_message_becomes_one_scanned_line_or_nothing() {
    assert_eq!(notification_line("Claude is\nwaiting  for your input").as_deref(), Some("Claude is waiting for your input"));
    assert_eq!(notification_line("   "), None);
    let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0".repeat(2).get(..36).unwrap());
    assert_eq!(notification_line(&format!("needs {token}")), None);
    assert_eq!(notification_line(&"é".repeat(NOTIFICATION_LINE_MAX_CHARS)).map(|l| l.chars().count()), Some(NOTIFICATION_LINE_MAX_CHARS));
    assert_eq!(
        notification_line(&"é".repeat(NOTIFICATION_LINE_MAX_CHARS + 1)).map(|l| l.chars().count()),
        Some(NOTIFICATION_LINE_MAX_CHARS)
    );
}

#[test]
fn notifications_are_kept_in_the_open_window_within_their_caps() {
    let mut s = window(Some("a"));
    let seen = AwayNotificationRecorded { notification_type: "idle_prompt".into(), line: None, working_copy: "/w".into() };
    for i in 0..=NOTIFICATIONS_MAX {
        fold_notification(&mut s, seen.clone(), t(T0).checked_add(SignedDuration::from_secs(i as i64)).unwrap()).unwrap();
    }
    let w = s.window.as_ref().unwrap();
    assert_eq!(w.notifications.len(), NOTIFICATIONS_MAX);
    assert_eq!(w.dropped_notifications, 1);
    assert_eq!(w.unread(), NOTIFICATIONS_MAX, "mode back has them to print");
    for _ in 0..=NOTIFIED_MAX {
        fold_notified(&mut s, notified(NotifyKind::AllBlocked)).unwrap();
    }
    assert_eq!(s.window.as_ref().unwrap().notified.len(), NOTIFIED_MAX);
    assert!(fold_notification(&mut AwayState::default(), seen, t(T0)).is_err(), "no open window");
}
