//! Reading the UTC timestamps abcd writes (`2026-11-30T10:00:00.123Z`) without a general
//! RFC 3339 parser: every journal line carries one and every checklist item three, and
//! jiff's parser (plus, for lines, the format-back check) was a measurable part of
//! reading a checklist and verifying a tail. Only the exact shape below is taken; callers
//! refuse anything else (journal lines) or hand it to jiff (projections), so what is
//! accepted never changes. Tests compare both against jiff on random text of this shape.

use jiff::Timestamp;

/// Digits a fraction of a second may have.
const FRACTION_DIGITS_MAX: usize = 9;

/// `YYYY-MM-DDTHH:MM:SS[.f]Z`, with 1 to 9 fraction digits when there is a `.`, every
/// field in its civil range (no leap second) and the instant within jiff's range. Returns
/// the instant and how many fraction digits the text had (`None` without a `.`).
pub fn parse_utc(text: &str) -> Option<(Timestamp, Option<usize>)> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' || b[b.len() - 1] != b'Z' {
        return None;
    }
    let (year, month, day) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (hour, minute, second) = (digits(&b[11..13])?, digits(&b[14..16])?, digits(&b[17..19])?);
    let (nanos, fraction) = match &b[19..b.len() - 1] {
        [] => (0, None),
        [b'.', f @ ..] if (1..=FRACTION_DIGITS_MAX).contains(&f.len()) => {
            let scaled = digits(f)? * 10i64.pow((FRACTION_DIGITS_MAX - f.len()) as u32);
            (scaled, Some(f.len()))
        }
        _ => return None,
    };
    let in_range = (1..=12).contains(&month) && (1..=days_in_month(year, month)).contains(&day) && hour < 24 && minute < 60 && second < 60;
    if !in_range {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second;
    let t = Timestamp::new(seconds, i32::try_from(nanos).ok()?).ok()?;
    Some((t, fraction))
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, the form a journal line carries (milliseconds, truncated);
/// `None` outside years 0000–9999, which four digits cannot hold.
pub fn format_utc_millis(t: Timestamp) -> Option<String> {
    // Floored, as `strftime`'s `%3f` cuts the fraction: `as_millisecond` rounds toward
    // zero, which differs before 1970.
    let ms = i64::try_from(t.as_nanosecond().div_euclid(1_000_000)).ok()?;
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        return None;
    }
    let (hour, minute) = (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60);
    let (second, milli) = (ms_of_day / 1000 % 60, ms_of_day % 1000);
    Some(format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z"))
}

/// The proleptic Gregorian date `days` after 1970-01-01 (the inverse of
/// [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The value of a run of ASCII digits; `None` if any byte is not one.
fn digits(b: &[u8]) -> Option<i64> {
    b.iter().try_fold(0i64, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0')))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (years counted from March, so the
/// leap day ends a year; 146,097 days make 400 years).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// serde's `deserialize_with` for a projection's timestamp: the shape abcd writes, read
/// directly; any other text jiff reads as before.
pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
    struct Utc;
    impl serde::de::Visitor<'_> for Utc {
        type Value = Timestamp;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an RFC 3339 timestamp")
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Timestamp, E> {
            match parse_utc(text) {
                Some((t, _)) => Ok(t),
                None => text.parse().map_err(E::custom),
            }
        }
        // jiff's own visitor takes UTF-8 bytes too (a CBOR byte string).
        fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Timestamp, E> {
            let text = std::str::from_utf8(bytes).map_err(E::custom)?;
            self.visit_str(text)
        }
    }
    d.deserialize_str(Utc)
}

/// [`deserialize`] for an optional timestamp (`null` or absent is `None`).
pub fn deserialize_option<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
    #[derive(serde::Deserialize)]
    struct Wrapped(#[serde(deserialize_with = "deserialize")] Timestamp);
    Ok(<Option<Wrapped> as serde::Deserialize>::deserialize(d)?.map(|Wrapped(t)| t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{Arbitrary, Gen, QuickCheck};

    /// Text of the shape, with each field drawn from around and past its range.
    #[derive(Clone, Debug)]
    struct Shaped(String);

    impl Arbitrary for Shaped {
        fn arbitrary(g: &mut Gen) -> Shaped {
            let pick = |g: &mut Gen, choices: &[u32]| *g.choose(choices).expect("choices");
            let year = pick(g, &[0, 1, 999, 1000, 1969, 1970, 1999, 2000, 2024, 2026, 2100, 2400, 9999]) + u32::arbitrary(g) % 3;
            let year = year.min(9999);
            let month = u32::arbitrary(g) % 14;
            let day = u32::arbitrary(g) % 33;
            let (hour, minute, second) = (u32::arbitrary(g) % 26, u32::arbitrary(g) % 62, u32::arbitrary(g) % 62);
            let fraction = match u8::arbitrary(g) % 6 {
                0 => String::new(),
                1 => ".".into(),
                2 => format!(".{:03}", u32::arbitrary(g) % 1000),
                3 => format!(".{}", u32::arbitrary(g) % 10),
                4 => format!(".{:09}", u32::arbitrary(g) % 1_000_000_000),
                _ => format!(".{:010}", u64::arbitrary(g) % 10_000_000_000),
            };
            let end = if bool::arbitrary(g) { "Z" } else { *g.choose(&["z", "+00:00", "Z ", ""]).expect("choices") };
            Shaped(format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{fraction}{end}"))
        }
    }

    #[test]
    fn what_it_takes_jiff_reads_as_the_same_instant() {
        fn same(s: Shaped) -> bool {
            match parse_utc(&s.0) {
                Some((t, _)) => s.0.parse::<Timestamp>().ok() == Some(t),
                None => true,
            }
        }
        QuickCheck::new().tests(20_000).quickcheck(same as fn(Shaped) -> bool);
    }

    /// Milliseconds since 0000-01-01, folded into years 0000 to about 9980: the four-digit
    /// years the shape has room for.
    const YEAR_0_MS: i64 = -62_167_219_200_000;

    fn four_digit_year_instant(ms: i64) -> Timestamp {
        Timestamp::from_millisecond(YEAR_0_MS + ms.rem_euclid(253_000_000_000_000 - YEAR_0_MS)).expect("in range")
    }

    #[test]
    fn it_takes_every_instant_abcd_writes() {
        fn takes(ms: i64) -> bool {
            let t = four_digit_year_instant(ms);
            let written = t.to_string();
            parse_utc(&written).map(|(p, _)| p) == Some(t) && parse_utc(&crate::journal::format::format_time(t)) == Some((t, Some(3)))
        }
        QuickCheck::new().tests(20_000).quickcheck(takes as fn(i64) -> bool);
    }

    #[test]
    fn lines_are_formatted_as_jiff_formats_them() {
        fn same(ms: i64) -> bool {
            let t = four_digit_year_instant(ms);
            format_utc_millis(t) == Some(t.strftime("%Y-%m-%dT%H:%M:%S.%3fZ").to_string())
        }
        QuickCheck::new().tests(20_000).quickcheck(same as fn(i64) -> bool);
        // With a part below the millisecond, on both sides of 1970.
        fn same_with_nanos(ms: i64, sub: u32) -> bool {
            let whole = four_digit_year_instant(ms);
            match whole.checked_add(jiff::SignedDuration::from_nanos(i64::from(sub % 1_000_000))) {
                Ok(t) => format_utc_millis(t) == Some(t.strftime("%Y-%m-%dT%H:%M:%S.%3fZ").to_string()),
                Err(_) => true,
            }
        }
        QuickCheck::new().tests(20_000).quickcheck(same_with_nanos as fn(i64, u32) -> bool);
        for (secs, nanos) in [(0i64, -500_000i32), (-1, -999_999_999), (-86_400, -1)] {
            let t = Timestamp::new(secs, nanos).unwrap();
            assert_eq!(format_utc_millis(t), Some(t.strftime("%Y-%m-%dT%H:%M:%S.%3fZ").to_string()), "{t}");
        }
        for t in ["1970-01-01T00:00:00Z", "2000-02-29T23:59:59.999Z", "0000-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z"] {
            assert!(same(t.parse::<Timestamp>().unwrap().as_millisecond() - YEAR_0_MS), "{t}");
        }
        assert_eq!(format_utc_millis(Timestamp::from_millisecond(YEAR_0_MS - 1).unwrap()), None, "year -1");
    }

    #[test]
    fn edges_of_each_field() {
        let ok = |s: &str| parse_utc(s).map(|(t, _)| t);
        assert_eq!(ok("1970-01-01T00:00:00Z"), Some(Timestamp::UNIX_EPOCH));
        assert_eq!(ok("2024-02-29T23:59:59.999Z"), Some("2024-02-29T23:59:59.999Z".parse().unwrap()));
        for refused in [
            "2023-02-29T00:00:00Z",
            "2100-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-01-00T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:60:00Z",
            "2026-06-30T23:59:60Z",
            "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00.1234567890Z",
            "2026-01-01T00:00:00",
            "2026-01-01t00:00:00Z",
            "+2026-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
        ] {
            assert_eq!(ok(refused), None, "{refused}");
        }
        assert_eq!(ok("2000-02-29T12:00:00Z"), Some("2000-02-29T12:00:00Z".parse().unwrap()));
    }
}
