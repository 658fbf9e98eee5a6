//! Times as a person types them: RFC 3339 (`2026-12-01T09:00:00Z`), a local clock time
//! (`09:00`, its next occurrence), or a duration from now (`+2h`, `+1d`, `+1h30m`).
//! Pure: `now` is passed in.

use jiff::{Span, Timestamp, ZonedDateTime as Zoned};

/// The furthest a duration may reach.
pub const MAX_DURATION_DAYS: i64 = 366;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{field}: must be an RFC 3339 time (2026-12-01T09:00:00Z), a local clock time (09:00) or a duration (+2h, +1d, +1h30m, at most {MAX_DURATION_DAYS} days)"
)]
pub struct TimeInputError {
    pub field: &'static str,
}

pub fn parse_time_input(field: &'static str, text: &str, now: &Zoned) -> Result<Timestamp, TimeInputError> {
    let err = || TimeInputError { field };
    let text = text.trim();
    // Whole seconds: a plan needs no finer clock, and the stored value reads cleanly.
    let now = &now.round(jiff::Unit::Second).map_err(|_| err())?;
    if let Some(rest) = text.strip_prefix('+') {
        return parse_duration(rest).map(|secs| now.timestamp() + Span::new().seconds(secs)).ok_or_else(err);
    }
    if let Ok(t) = text.parse::<Timestamp>() {
        return Ok(t);
    }
    if let Some((h, m)) = text.split_once(':')
        && h.len() <= 2
        && m.len() == 2
    {
        let (h, m): (i8, i8) = (h.parse().map_err(|_| err())?, m.parse().map_err(|_| err())?);
        if !(0..24).contains(&h) || !(0..60).contains(&m) {
            return Err(err());
        }
        let today = now.date().at(h, m, 0, 0).to_zoned_datetime(now.time_zone().clone()).map_err(|_| err())?;
        let next = if today.timestamp() > now.timestamp() { today } else { today.checked_add(Span::new().days(1)).map_err(|_| err())? };
        return Ok(next.timestamp());
    }
    Err(err())
}

/// `2h`, `30m`, `1d`, `1h30m`, `45s` → seconds; `None` when malformed or too long.
fn parse_duration(text: &str) -> Option<i64> {
    let mut total: i64 = 0;
    let mut number = String::new();
    let mut saw_unit = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if number.len() >= 6 {
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
    (saw_unit && number.is_empty() && total > 0 && total <= MAX_DURATION_DAYS * 86_400).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Zoned {
        "2026-11-30T08:30:00+01:00[Europe/Paris]".parse().unwrap()
    }

    #[test]
    fn the_three_forms() {
        let n = now();
        assert_eq!(parse_time_input("t", "+2h", &n).unwrap(), n.timestamp() + Span::new().hours(2));
        assert_eq!(parse_time_input("t", "+1h30m", &n).unwrap(), n.timestamp() + Span::new().minutes(90));
        assert_eq!(parse_time_input("t", "2026-12-01T09:00:00Z", &n).unwrap(), "2026-12-01T09:00:00Z".parse::<Timestamp>().unwrap());
        // 09:00 is still ahead today; 08:00 has passed, so tomorrow.
        assert_eq!(parse_time_input("t", "09:00", &n).unwrap(), "2026-11-30T08:00:00Z".parse::<Timestamp>().unwrap());
        assert_eq!(parse_time_input("t", "08:00", &n).unwrap(), "2026-12-01T07:00:00Z".parse::<Timestamp>().unwrap());
    }

    #[test]
    fn malformed_and_out_of_range_are_refused() {
        let n = now();
        for bad in ["", "+", "+2", "+2x", "tomorrow", "25:00", "9:60", "+367d", "+0h", "2026-13-01T00:00:00Z"] {
            assert!(parse_time_input("next_look", bad, &n).is_err(), "{bad}");
        }
        assert!(parse_time_input("t", "+366d", &n).is_ok());
    }
}
