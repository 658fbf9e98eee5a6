//! Times as a person types them: RFC 3339 (`2026-12-01T09:00:00Z`), a local clock time
//! (`09:00`, its next occurrence), or a duration from now (`+2h`, `+1d`, `+1h30m`).
//! Each field has one limit on how far ahead it may reach, the same for every form and
//! worded once ([`ahead_rule`]). Pure: `now` is passed in.

use jiff::{SignedDuration, Span, Timestamp, ZonedDateTime as Zoned};

/// How far ahead a checklist time (a next look, a credential's expiry) may be.
pub const CHECKLIST_MAX_AHEAD: SignedDuration = SignedDuration::from_hours(366 * 24);
/// The most digits one number of a duration has: keeps the sum far from overflowing.
const MAX_DURATION_DIGITS: usize = 6;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimeInputError {
    /// None of the three forms.
    #[error(
        "{field} must be a duration from now (+2h, +30m, +1h30m, +1d), a local clock time (09:00, its next occurrence) or an RFC 3339 time (2026-12-01T09:00:00Z), {}",
        ahead_rule(*max_ahead)
    )]
    Unreadable { field: &'static str, max_ahead: SignedDuration },
    /// A time past the field's limit.
    #[error("{field} is too far ahead: it may be {}", ahead_rule(*max_ahead))]
    TooFar { field: &'static str, max_ahead: SignedDuration },
}

/// The one wording of a limit on how far ahead a time may be: "at most 7 days ahead".
pub fn ahead_rule(max_ahead: SignedDuration) -> String {
    format!("at most {} ahead", span_words(max_ahead))
}

/// A limit in words: whole days as days, anything else as hours and minutes.
pub fn span_words(d: SignedDuration) -> String {
    let plural = |n: i64, unit: &str| if n == 1 { format!("1 {unit}") } else { format!("{n} {unit}s") };
    let secs = d.as_secs();
    match (secs / 86_400, secs % 86_400) {
        (days, 0) => plural(days, "day"),
        _ if secs % 3_600 == 0 => plural(secs / 3_600, "hour"),
        _ => plural(secs / 60, "minute"),
    }
}

/// `text` as a time, no further ahead of `now` than `max_ahead`. A time in the past is
/// returned as it is: whether the field takes one is the caller's rule.
pub fn parse_time_input(field: &'static str, text: &str, now: &Zoned, max_ahead: SignedDuration) -> Result<Timestamp, TimeInputError> {
    let unreadable = || TimeInputError::Unreadable { field, max_ahead };
    let text = text.trim();
    // Whole seconds: a plan needs no finer clock, and the stored value reads cleanly.
    let now = &now.round(jiff::Unit::Second).map_err(|_| unreadable())?;
    let at = parse_form(text, now).ok_or_else(unreadable)?;
    if at.duration_since(now.timestamp()) > max_ahead {
        return Err(TimeInputError::TooFar { field, max_ahead });
    }
    Ok(at)
}

/// One of the three forms, or `None`.
fn parse_form(text: &str, now: &Zoned) -> Option<Timestamp> {
    if let Some(rest) = text.strip_prefix('+') {
        return now.timestamp().checked_add(SignedDuration::from_secs(parse_duration(rest)?)).ok();
    }
    if let Ok(t) = text.parse::<Timestamp>() {
        return Some(t);
    }
    let (h, m) = text.split_once(':')?;
    if h.len() > 2 || m.len() != 2 {
        return None;
    }
    let (h, m): (i8, i8) = (h.parse().ok()?, m.parse().ok()?);
    if !(0..24).contains(&h) || !(0..60).contains(&m) {
        return None;
    }
    let today = now.date().at(h, m, 0, 0).to_zoned_datetime(now.time_zone().clone()).ok()?;
    let next = if today.timestamp() > now.timestamp() { today } else { today.checked_add(Span::new().days(1)).ok()? };
    Some(next.timestamp())
}

/// `2h`, `30m`, `1d`, `1h30m`, `45s` → seconds; `None` when malformed or zero.
fn parse_duration(text: &str) -> Option<i64> {
    let mut total: i64 = 0;
    let mut number = String::new();
    let mut saw_unit = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if number.len() >= MAX_DURATION_DIGITS {
                return None;
            }
            number.push(c);
            continue;
        }
        let n: i64 = number.parse().ok()?;
        number.clear();
        let unit = match c {
            'd' => 86_400,
            'h' => 3_600,
            'm' => 60,
            's' => 1,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(unit)?)?;
        saw_unit = true;
    }
    (saw_unit && number.is_empty() && total > 0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEEK: SignedDuration = SignedDuration::from_hours(7 * 24);

    fn now() -> Zoned {
        "2026-11-30T08:30:00+01:00[Europe/Paris]".parse().unwrap()
    }

    fn parse(text: &str) -> Result<Timestamp, TimeInputError> {
        parse_time_input("t", text, &now(), CHECKLIST_MAX_AHEAD)
    }

    #[test]
    fn the_three_forms() {
        let n = now();
        assert_eq!(parse("+2h").unwrap(), n.timestamp() + Span::new().hours(2));
        assert_eq!(parse("+1h30m").unwrap(), n.timestamp() + Span::new().minutes(90));
        assert_eq!(parse("2026-12-01T09:00:00Z").unwrap(), "2026-12-01T09:00:00Z".parse::<Timestamp>().unwrap());
        // 09:00 is still ahead today; 08:00 has passed, so tomorrow.
        assert_eq!(parse("09:00").unwrap(), "2026-11-30T08:00:00Z".parse::<Timestamp>().unwrap());
        assert_eq!(parse("08:00").unwrap(), "2026-12-01T07:00:00Z".parse::<Timestamp>().unwrap());
        assert!(parse("2020-01-01T00:00:00Z").is_ok(), "the past is the caller's rule");
    }

    #[test]
    fn malformed_is_refused_showing_the_forms_and_the_limit() {
        for bad in
            ["", "+", "+2", "+2x", "2h", "9am", "tomorrow", "tomorrow 09:00", "25:00", "9:60", "+0h", "+1234567h", "2026-13-01T00:00:00Z"]
        {
            let e = parse_time_input("--until", bad, &now(), WEEK).unwrap_err();
            assert_eq!(e, TimeInputError::Unreadable { field: "--until", max_ahead: WEEK }, "{bad}");
            let said = e.to_string();
            for form in ["+2h", "09:00", "RFC 3339", "at most 7 days ahead"] {
                assert!(said.contains(form), "{bad}: {said}");
            }
        }
    }

    /// One limit for every form, on both sides of its edge, named the same way.
    #[test]
    fn the_limit_holds_for_every_form_on_both_sides_of_its_edge() {
        let n = now();
        let edge = n.timestamp().checked_add(WEEK).unwrap();
        let rfc = |t: Timestamp| t.to_string();
        for ok in ["+7d", "+168h", "+6d23h59m60s", &rfc(edge)] {
            assert_eq!(parse_time_input("--until", ok, &n, WEEK), Ok(edge), "{ok}");
        }
        let past = rfc(edge.checked_add(SignedDuration::from_secs(1)).unwrap());
        for far in ["+7d1s", "+8d", "+400d", "+999999d", &past] {
            let e = parse_time_input("--until", far, &n, WEEK).unwrap_err();
            assert_eq!(e.to_string(), "--until is too far ahead: it may be at most 7 days ahead", "{far}");
        }
        assert!(parse("+366d").is_ok());
        assert_eq!(parse("+367d").unwrap_err().to_string(), "t is too far ahead: it may be at most 366 days ahead");
    }

    #[test]
    fn limits_in_words() {
        assert_eq!(span_words(SignedDuration::from_hours(24)), "1 day");
        assert_eq!(span_words(WEEK), "7 days");
        assert_eq!(span_words(SignedDuration::from_hours(36)), "36 hours");
        assert_eq!(span_words(SignedDuration::from_mins(90)), "90 minutes");
    }
}
