//! abcd's own five-field cron parser and the qualifying-wake rule (SPEC §6 "Deadline and
//! wakes"). Pure: times come in as values in the machine's local time zone (the caller
//! passes it), nothing reads a clock or touches a file.
//!
//! The grammar follows vixie cron, as the host says its scheduler does:
//!
//! - five fields separated by ASCII whitespace: minute (0–59), hour (0–23), day of month
//!   (1–31), month (1–12), day of week (0–7, 0 and 7 both Sunday);
//! - each field a comma list of items, each item `*`, `*/n`, `a`, `a-b` or `a-b/n`
//!   (decimal numbers only; no names, no `a/n`, no `?`, `L`, `W`, `#` or `@daily`);
//! - a step `n` runs from 1 to the field's width (60 for minutes, 8 for day of week);
//! - the day rule: when both day fields are restricted a day matches if either matches;
//!   a day field written from `*` (its text starts with `*`, so `*/2` too) counts as
//!   unrestricted, and then both must match.
//!
//! Times are wall-clock times in the zone of the instant passed in: a wall-clock minute
//! that a daylight-saving change skips never matches, and one it repeats matches once, at
//! its first occurrence.

use jiff::civil::{Date, DateTime};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{SignedDuration, Timestamp, ZonedDateTime};

/// The longest expression parsed, in bytes of the text as given; longer never qualifies.
pub const MAX_EXPR_LEN: usize = 256;

/// How many local dates after the date of `after` [`next_match`] searches. 2921 days is
/// the longest gap between two 29 Februaries (2096-02-29 to 2104-02-29), so every
/// expression that matches at all on a date-of-month rule is found. An expression whose
/// matches are further apart (a date that must also fall on a given weekday) reads as not
/// matching, which for a wake is the same answer: it does not fire before any deadline.
pub const SEARCH_HORIZON_DAYS: u32 = 2921;

/// The most the host runs a recurring task late: half the gap to its following match,
/// capped here.
pub const LATENESS_CAP: SignedDuration = SignedDuration::from_mins(30);

/// The one schedule the host never runs late (it runs it 15 seconds early instead).
/// Compared byte for byte: any other spelling of the same times takes the ordinary
/// lateness, which errs toward a wake not qualifying.
pub const NO_LATENESS_SCHEDULE: &str = "*/5 * * * *";

/// A parsed five-field cron expression: one bit per value that matches, per field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronExpr {
    minutes: u64,
    hours: u32,
    days_of_month: u32,
    months: u16,
    /// Bits 0–6, Sunday = 0; a 7 in the text sets bit 0.
    days_of_week: u8,
    /// The day-of-month field was written from `*` (unrestricted for the day rule).
    dom_star: bool,
    /// The day-of-week field was written from `*` (unrestricted for the day rule).
    dow_star: bool,
}

/// Why an expression did not parse. Such an expression never qualifies as a wake.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("cron expression is {len} bytes; the limit is {MAX_EXPR_LEN}")]
    TooLong { len: usize },
    #[error("cron expression has {found} fields; it needs five (minute hour day-of-month month day-of-week)")]
    FieldCount { found: usize },
    #[error("cron {field} field {text:?}: {problem}")]
    Field { field: &'static str, text: String, problem: &'static str },
}

/// One field's name and the values it takes.
struct FieldSpec {
    name: &'static str,
    low: u32,
    high: u32,
}

const FIELDS: [FieldSpec; 5] = [
    FieldSpec { name: "minute", low: 0, high: 59 },
    FieldSpec { name: "hour", low: 0, high: 23 },
    FieldSpec { name: "day-of-month", low: 1, high: 31 },
    FieldSpec { name: "month", low: 1, high: 12 },
    FieldSpec { name: "day-of-week", low: 0, high: 7 },
];

/// Parses a five-field cron expression (grammar in the module docs).
pub fn parse(text: &str) -> Result<CronExpr, CronError> {
    if text.len() > MAX_EXPR_LEN {
        return Err(CronError::TooLong { len: text.len() });
    }
    let fields: Vec<&str> = text.split_ascii_whitespace().collect();
    let [minute, hour, dom, month, dow] = fields[..] else {
        return Err(CronError::FieldCount { found: fields.len() });
    };
    let [m, h, d, mo, w] = &FIELDS;
    let dow_bits = parse_field(dow, w)?;
    Ok(CronExpr {
        minutes: parse_field(minute, m)?,
        hours: parse_field(hour, h)? as u32,
        days_of_month: parse_field(dom, d)? as u32,
        months: parse_field(month, mo)? as u16,
        // 7 is Sunday as 0 is.
        days_of_week: ((dow_bits | (dow_bits >> 7)) & 0x7f) as u8,
        dom_star: dom.starts_with('*'),
        dow_star: dow.starts_with('*'),
    })
}

/// One field's text → a bit per matching value.
fn parse_field(text: &str, spec: &FieldSpec) -> Result<u64, CronError> {
    let err = |problem| CronError::Field { field: spec.name, text: text.to_owned(), problem };
    let mut bits = 0u64;
    for item in text.split(',') {
        if item.is_empty() {
            return Err(err("an empty list item"));
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(number(step).ok_or_else(|| err("a step must be a decimal number"))?)),
            None => (item, None),
        };
        let (first, last) = if range == "*" {
            (spec.low, spec.high)
        } else if let Some((a, b)) = range.split_once('-') {
            let bad = || err("a range must be two decimal numbers, a-b");
            (number(a).ok_or_else(bad)?, number(b).ok_or_else(bad)?)
        } else {
            if step.is_some() {
                return Err(err("a step needs `*` or a range before it (`*/n`, `a-b/n`)"));
            }
            let n = number(range).ok_or_else(|| err("a value must be a decimal number, `*`, a range or a step"))?;
            (n, n)
        };
        if first < spec.low || last > spec.high {
            return Err(err("a value is out of the field's range"));
        }
        if first > last {
            return Err(err("a range runs backwards"));
        }
        let step = step.unwrap_or(1);
        if step == 0 || step > spec.high - spec.low + 1 {
            return Err(err("a step must be at least 1 and at most the field's width"));
        }
        for value in (first..=last).step_by(step as usize) {
            bits |= 1 << value;
        }
    }
    Ok(bits)
}

/// A plain decimal number: digits only, no sign; `None` when not, or when over `u32`.
fn number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

impl CronExpr {
    /// Whether the local date matches the month and the two day fields (vixie's rule).
    fn date_matches(&self, date: Date) -> bool {
        if self.months & (1 << date.month()) == 0 {
            return false;
        }
        let dom = self.days_of_month & (1 << date.day()) != 0;
        let dow = self.days_of_week & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.dom_star || self.dow_star { dom && dow } else { dom || dow }
    }
}

/// The first instant strictly after `after` whose wall-clock minute, in `after`'s time
/// zone, matches `expr`; in that zone. A minute skipped by a daylight-saving change never
/// matches; a repeated minute matches at its first occurrence only, so when `after` lies
/// between its two occurrences it does not match again. `None` when nothing matches within
/// [`SEARCH_HORIZON_DAYS`] dates of `after`'s local date.
pub fn next_match(expr: &CronExpr, after: &ZonedDateTime) -> Option<ZonedDateTime> {
    next_match_within(expr, after, SEARCH_HORIZON_DAYS)
}

fn next_match_within(expr: &CronExpr, after: &ZonedDateTime, horizon_days: u32) -> Option<ZonedDateTime> {
    let tz = after.time_zone();
    let floor = after.timestamp();
    // Wall-clock times taken at their first occurrence rise strictly with the instants
    // they name (gaps dropped), so the first candidate after `floor` in wall-clock order
    // is the next match. Every wall-clock time before `after`'s own is earlier than it.
    let mut date = after.date();
    for _ in 0..=horizon_days {
        if expr.date_matches(date) {
            for hour in bits(u64::from(expr.hours)) {
                for minute in bits(expr.minutes) {
                    let Some(instant) = first_occurrence(tz, date.at(hour, minute, 0, 0)) else { continue };
                    if instant > floor {
                        return Some(instant.to_zoned_datetime(tz.clone()));
                    }
                }
            }
        }
        date = date.tomorrow().ok()?;
    }
    None
}

/// The first instant a wall-clock time occurs in `tz`; `None` in a gap (or out of range).
fn first_occurrence(tz: &TimeZone, wall: DateTime) -> Option<Timestamp> {
    let offset = match tz.to_ambiguous_timestamp(wall).offset() {
        AmbiguousOffset::Unambiguous { offset } => offset,
        AmbiguousOffset::Fold { before, .. } => before,
        AmbiguousOffset::Gap { .. } => return None,
    };
    offset.to_timestamp(wall).ok()
}

/// The set bits of `mask`, lowest first.
fn bits(mask: u64) -> impl Iterator<Item = i8> {
    (0..64i8).filter(move |b| mask & (1 << b) != 0)
}

/// A scheduled wake the host reports in the Stop payload's `session_crons`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionCron {
    /// The five-field cron expression, in the machine's local time.
    pub schedule: String,
    /// A recurring task (true) or a one-shot (false).
    pub recurring: bool,
}

/// The latest the host may fire `cron`: its next match after `now` (in `now`'s zone) plus
/// the host's lateness — for a recurring task half the gap to the following match, at most
/// [`LATENESS_CAP`] (the cap when no following match is found), none for exactly
/// [`NO_LATENESS_SCHEDULE`]; none for a one-shot, which the host only runs early. `None`
/// when the schedule does not parse or has no next match.
pub fn latest_fire(cron: &SessionCron, now: &ZonedDateTime) -> Option<ZonedDateTime> {
    let expr = parse(&cron.schedule).ok()?;
    let next = next_match(&expr, now)?;
    let lateness = if !cron.recurring || cron.schedule == NO_LATENESS_SCHEDULE {
        SignedDuration::ZERO
    } else {
        match next_match(&expr, &next) {
            Some(following) => (following.timestamp().duration_since(next.timestamp()) / 2).min(LATENESS_CAP),
            None => LATENESS_CAP,
        }
    };
    let latest = next.timestamp().checked_add(lateness).ok()?;
    Some(latest.to_zoned_datetime(now.time_zone().clone()))
}

/// Whether `cron` is a qualifying wake: its latest fire time is no later than `deadline`.
/// An expression that does not parse, or never matches, never qualifies.
pub fn qualifies(cron: &SessionCron, now: &ZonedDateTime, deadline: Timestamp) -> bool {
    latest_fire(cron, now).is_some_and(|latest| latest.timestamp() <= deadline)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::Weekday;
    use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult};

    fn zoned(text: &str) -> ZonedDateTime {
        text.parse().unwrap()
    }

    fn cron(schedule: &str, recurring: bool) -> SessionCron {
        SessionCron { schedule: schedule.to_owned(), recurring }
    }

    /// The next `n` matches of `schedule` after `from`, as zoned strings.
    fn successive(schedule: &str, from: &str, n: usize) -> Vec<String> {
        let expr = parse(schedule).unwrap();
        let mut at = zoned(from);
        let mut out = Vec::new();
        for _ in 0..n {
            at = next_match(&expr, &at).unwrap();
            out.push(at.to_string());
        }
        out
    }

    /// Every match of `schedule` from `from` (exclusive) up to `until` (exclusive).
    fn all_between(schedule: &str, from: &str, until: &str) -> Vec<ZonedDateTime> {
        let expr = parse(schedule).unwrap();
        let until = zoned(until).timestamp();
        let mut at = zoned(from);
        let mut out = Vec::new();
        while let Some(next) = next_match(&expr, &at).filter(|next| next.timestamp() < until) {
            assert!(next.timestamp() > at.timestamp(), "{next} is not after {at}");
            out.push(next.clone());
            at = next;
        }
        out
    }

    fn latest(schedule: &str, recurring: bool, now: &str) -> String {
        latest_fire(&cron(schedule, recurring), &zoned(now)).unwrap().to_string()
    }

    #[test]
    fn lists_match_each_listed_value() {
        assert_eq!(
            successive("5,20,45 * * * *", "2026-01-05T10:00[UTC]", 4),
            [
                "2026-01-05T10:05:00+00:00[UTC]",
                "2026-01-05T10:20:00+00:00[UTC]",
                "2026-01-05T10:45:00+00:00[UTC]",
                "2026-01-05T11:05:00+00:00[UTC]"
            ]
        );
        // Lists in every field, and list items of every kind.
        assert_eq!(
            successive("0 8,17 1,15 1,7 *", "2026-01-01T09:00[UTC]", 4),
            [
                "2026-01-01T17:00:00+00:00[UTC]",
                "2026-01-15T08:00:00+00:00[UTC]",
                "2026-01-15T17:00:00+00:00[UTC]",
                "2026-07-01T08:00:00+00:00[UTC]"
            ]
        );
        assert_eq!(parse("1,3-4,*/30 * * * *").unwrap().minutes, (1 << 1) | (1 << 3) | (1 << 4) | 1 | (1 << 30));
    }

    #[test]
    fn ranges_match_every_value_in_them() {
        assert_eq!(
            successive("0 9-11 * * *", "2026-01-05T10:30[UTC]", 3),
            ["2026-01-05T11:00:00+00:00[UTC]", "2026-01-06T09:00:00+00:00[UTC]", "2026-01-06T10:00:00+00:00[UTC]"]
        );
        assert_eq!(
            successive("58-59 23 31 12 *", "2026-06-01T00:00[UTC]", 3),
            ["2026-12-31T23:58:00+00:00[UTC]", "2026-12-31T23:59:00+00:00[UTC]", "2027-12-31T23:58:00+00:00[UTC]"]
        );
        // Weekdays only: Friday 2026-01-09 18:00 → Monday.
        assert_eq!(successive("0 9 * * 1-5", "2026-01-09T18:00[UTC]", 1), ["2026-01-12T09:00:00+00:00[UTC]"]);
    }

    #[test]
    fn steps_from_star_match_every_nth_value() {
        assert_eq!(
            successive("*/15 * * * *", "2026-01-05T10:00[UTC]", 5),
            [
                "2026-01-05T10:15:00+00:00[UTC]",
                "2026-01-05T10:30:00+00:00[UTC]",
                "2026-01-05T10:45:00+00:00[UTC]",
                "2026-01-05T11:00:00+00:00[UTC]",
                "2026-01-05T11:15:00+00:00[UTC]"
            ]
        );
        assert_eq!(
            successive("0 */6 * * *", "2026-01-05T00:00[UTC]", 4),
            [
                "2026-01-05T06:00:00+00:00[UTC]",
                "2026-01-05T12:00:00+00:00[UTC]",
                "2026-01-05T18:00:00+00:00[UTC]",
                "2026-01-06T00:00:00+00:00[UTC]"
            ]
        );
        // A month step counts from January, the field's first value.
        assert_eq!(parse("0 0 1 */4 *").unwrap().months, (1 << 1) | (1 << 5) | (1 << 9));
    }

    #[test]
    fn a_range_with_a_step_10_50_20_matches_10_30_and_50() {
        assert_eq!(parse("10-50/20 * * * *").unwrap().minutes, (1 << 10) | (1 << 30) | (1 << 50));
        assert_eq!(
            successive("10-50/20 * * * *", "2026-01-05T10:00[UTC]", 4),
            [
                "2026-01-05T10:10:00+00:00[UTC]",
                "2026-01-05T10:30:00+00:00[UTC]",
                "2026-01-05T10:50:00+00:00[UTC]",
                "2026-01-05T11:10:00+00:00[UTC]"
            ]
        );
    }

    #[test]
    fn seven_is_sunday_as_zero_is() {
        assert_eq!(parse("0 9 * * 7").unwrap(), parse("0 9 * * 0").unwrap());
        let sundays = successive("0 9 * * 7", "2026-01-01T00:00[UTC]", 3);
        assert_eq!(sundays, ["2026-01-04T09:00:00+00:00[UTC]", "2026-01-11T09:00:00+00:00[UTC]", "2026-01-18T09:00:00+00:00[UTC]"]);
        // A range through 7 wraps to Sunday: Friday, Saturday, Sunday.
        let weekend: Vec<Weekday> =
            all_between("0 9 * * 5-7", "2026-01-01T00:00[UTC]", "2026-01-08T00:00[UTC]").iter().map(ZonedDateTime::weekday).collect();
        assert_eq!(weekend, [Weekday::Friday, Weekday::Saturday, Weekday::Sunday]);
    }

    #[test]
    fn a_day_field_written_from_star_needs_both_day_fields() {
        // `*/2` in day of month is unrestricted for the day rule: odd days that are Mondays.
        let both = all_between("0 9 */2 * 1", "2026-01-01T00:00[UTC]", "2027-01-01T00:00[UTC]");
        assert!(!both.is_empty());
        assert!(both.iter().all(|z| z.weekday() == Weekday::Monday && z.day() % 2 == 1), "{both:?}");
        let odd_mondays_2026 = (0..365)
            .map(|d| jiff::civil::date(2026, 1, 1).checked_add(jiff::Span::new().days(d)).unwrap())
            .filter(|d| d.weekday() == Weekday::Monday && d.day() % 2 == 1)
            .count();
        assert_eq!(both.len(), odd_mondays_2026);
        // The same with the star in day of week: the 1st of each month, any weekday.
        let firsts = all_between("0 9 1 * */1", "2026-01-01T00:00[UTC]", "2027-01-01T00:00[UTC]");
        assert_eq!(firsts.len(), 12);
        assert!(firsts.iter().all(|z| z.day() == 1));
    }

    #[test]
    fn both_day_fields_restricted_either_matches() {
        let either = all_between("0 9 1 * 1", "2026-01-01T00:00[UTC]", "2027-01-01T00:00[UTC]");
        assert!(either.iter().all(|z| z.weekday() == Weekday::Monday || z.day() == 1), "{either:?}");
        // 2026 has 52 Mondays and twelve 1sts, of which 1 June is a Monday.
        assert_eq!(either.len(), 52 + 12 - 1);
        assert!(either.iter().any(|z| z.day() == 1 && z.weekday() != Weekday::Monday));
        assert!(either.iter().any(|z| z.day() != 1 && z.weekday() == Weekday::Monday));
    }

    #[test]
    fn london_spring_forward_has_no_match_and_fall_back_matches_once() {
        // 2026-03-29: 01:00 GMT jumps to 02:00 BST, so 01:30 does not exist that day.
        assert_eq!(
            successive("30 1 * * *", "2026-03-27T12:00[Europe/London]", 3),
            [
                "2026-03-28T01:30:00+00:00[Europe/London]",
                "2026-03-30T01:30:00+01:00[Europe/London]",
                "2026-03-31T01:30:00+01:00[Europe/London]"
            ]
        );
        assert!(all_between("* 1 * * *", "2026-03-29T00:00[Europe/London]", "2026-03-29T12:00[Europe/London]").is_empty());
        // 2026-10-25: 02:00 BST falls back to 01:00 GMT, so 01:30 happens twice; it
        // matches at the first (00:30Z) only, never at the second (01:30Z).
        assert_eq!(
            successive("30 1 * * *", "2026-10-24T12:00[Europe/London]", 2),
            ["2026-10-25T01:30:00+01:00[Europe/London]", "2026-10-26T01:30:00+00:00[Europe/London]"]
        );
        let between = "2026-10-25T00:45:00Z".parse::<Timestamp>().unwrap().to_zoned_datetime(TimeZone::get("Europe/London").unwrap());
        assert_eq!(next_match(&parse("30 1 * * *").unwrap(), &between).unwrap().to_string(), "2026-10-26T01:30:00+00:00[Europe/London]");
        let hour = all_between("* 1 * * *", "2026-10-25T00:00[Europe/London]", "2026-10-25T12:00[Europe/London]");
        assert_eq!(hour.len(), 60);
        assert!(hour.iter().all(|z| z.offset().seconds() == 3600));
    }

    #[test]
    fn the_next_match_is_strictly_after_now() {
        assert_eq!(successive("0 14 * * *", "2026-01-05T14:00[UTC]", 1), ["2026-01-06T14:00:00+00:00[UTC]"]);
        assert_eq!(successive("0 14 * * *", "2026-01-05T13:59:59.999999999[UTC]", 1), ["2026-01-05T14:00:00+00:00[UTC]"]);
        assert_eq!(successive("0 14 * * *", "2026-01-05T14:00:00.000000001[UTC]", 1), ["2026-01-06T14:00:00+00:00[UTC]"]);
    }

    #[test]
    fn an_hourly_cron_three_minutes_before_the_deadline_does_not_qualify() {
        let now = zoned("2026-10-18T12:33[Europe/London]");
        let deadline = zoned("2026-10-18T13:03[Europe/London]").timestamp();
        let hourly = cron("0 * * * *", true);
        assert_eq!(next_match(&parse("0 * * * *").unwrap(), &now).unwrap().to_string(), "2026-10-18T13:00:00+01:00[Europe/London]");
        assert_eq!(latest_fire(&hourly, &now).unwrap().to_string(), "2026-10-18T13:30:00+01:00[Europe/London]");
        assert!(!qualifies(&hourly, &now, deadline));
        // It qualifies once the deadline reaches its latest fire time, not a second before.
        let latest = zoned("2026-10-18T13:30[Europe/London]").timestamp();
        assert!(qualifies(&hourly, &now, latest));
        assert!(!qualifies(&hourly, &now, latest - SignedDuration::from_secs(1)));
    }

    #[test]
    fn five_and_ten_minute_crons_qualify_within_thirty_minutes() {
        // The host's capture: 13:51, deadline 14:21.
        let now = zoned("2026-10-18T13:51[Europe/London]");
        let deadline = zoned("2026-10-18T14:21[Europe/London]").timestamp();
        assert_eq!(latest("*/5 * * * *", true, "2026-10-18T13:51[Europe/London]"), "2026-10-18T13:55:00+01:00[Europe/London]");
        assert_eq!(latest("*/10 * * * *", true, "2026-10-18T13:51[Europe/London]"), "2026-10-18T14:05:00+01:00[Europe/London]");
        assert!(qualifies(&cron("*/5 * * * *", true), &now, deadline));
        assert!(qualifies(&cron("*/10 * * * *", true), &now, deadline));
    }

    #[test]
    fn only_exactly_star_slash_five_runs_without_lateness() {
        let now = "2026-01-05T13:51[UTC]";
        assert_eq!(latest("*/5 * * * *", true, now), "2026-01-05T13:55:00+00:00[UTC]");
        // Another spelling of the same times takes half the five-minute gap.
        for other in ["0-59/5 * * * *", " */5 * * * *", "*/5  * * * *", "*/5 * * * * "] {
            assert_eq!(latest(other, true, now), "2026-01-05T13:57:30+00:00[UTC]", "{other:?}");
        }
    }

    #[test]
    fn a_morning_cron_seen_the_evening_before_does_not_qualify() {
        let now = zoned("2026-10-18T21:00[Europe/London]");
        let morning = cron("0 7 * * *", true);
        assert_eq!(latest_fire(&morning, &now).unwrap().to_string(), "2026-10-19T07:30:00+01:00[Europe/London]");
        for ceiling in [30, 60] {
            assert!(!qualifies(&morning, &now, now.timestamp() + SignedDuration::from_mins(ceiling)));
        }
    }

    #[test]
    fn a_one_shot_has_no_lateness() {
        // The host's capture: a one-shot at 14:21 with the deadline at 14:21 qualifies.
        let now = zoned("2026-10-18T13:51[Europe/London]");
        let deadline = zoned("2026-10-18T14:21[Europe/London]").timestamp();
        let one_shot = cron("21 14 18 10 *", false);
        assert_eq!(latest_fire(&one_shot, &now).unwrap().timestamp(), deadline);
        assert!(qualifies(&one_shot, &now, deadline));
        assert!(!qualifies(&one_shot, &now, deadline - SignedDuration::from_secs(1)));
        // The same schedule recurring may run 30 minutes late, so it does not.
        assert!(!qualifies(&cron("21 14 18 10 *", true), &now, deadline));
        // A one-shot hourly schedule is not given the recurring lateness either.
        assert_eq!(latest("0 * * * *", false, "2026-10-18T12:33[Europe/London]"), "2026-10-18T13:00:00+01:00[Europe/London]");
    }

    #[test]
    fn lateness_is_half_the_gap_capped_at_thirty_minutes() {
        // `0,59 0,2`: 00:00, 00:59, 02:00, 02:59 — gaps of 59, 61 and 59 minutes.
        assert_eq!(latest("0,59 0,2 * * *", true, "2026-01-01T23:30[UTC]"), "2026-01-02T00:29:30+00:00[UTC]");
        assert_eq!(latest("0,59 0,2 * * *", true, "2026-01-02T00:30[UTC]"), "2026-01-02T01:29:00+00:00[UTC]");
        assert_eq!(latest("0 * * * *", true, "2026-01-02T00:30[UTC]"), "2026-01-02T01:30:00+00:00[UTC]");
        // The gap is absolute time. On London's fall-back day the repeated hour 01:00–01:59
        // does not match again, so hourly 01:00 BST → 02:00 GMT is two hours (capped), and
        // `*/20` seen at 01:50 BST next matches at 02:00 GMT with 20 minutes to the next.
        assert_eq!(latest("0 * * * *", true, "2026-10-25T00:30:00+01:00[Europe/London]"), "2026-10-25T01:30:00+01:00[Europe/London]");
        assert_eq!(latest("*/20 * * * *", true, "2026-10-25T01:50:00+01:00[Europe/London]"), "2026-10-25T02:10:00+00:00[Europe/London]");
    }

    #[test]
    fn a_recurring_cron_with_no_following_match_takes_the_cap() {
        // jiff's last instant is 9999-12-30T22:00Z: 21:00 that day has no following match.
        assert_eq!(latest("0 21 * * *", true, "9999-12-30T12:00[UTC]"), "9999-12-30T21:30:00+00:00[UTC]");
        assert_eq!(latest("0 21 * * *", false, "9999-12-30T12:00[UTC]"), "9999-12-30T21:00:00+00:00[UTC]");
        // After it there is no next match at all.
        assert_eq!(latest_fire(&cron("0 21 * * *", true), &zoned("9999-12-30T21:00[UTC]")), None);
    }

    #[test]
    fn an_unparsable_expression_never_qualifies() {
        let over_long = format!("{}0 * * * *", "0,".repeat(124));
        assert_eq!(over_long.len(), MAX_EXPR_LEN + 1);
        let table: &[(&str, &str)] = &[
            ("", "FieldCount"),
            ("   ", "FieldCount"),
            ("* * * *", "FieldCount"),
            ("* * * * * *", "FieldCount"),
            ("@daily", "FieldCount"),
            ("60 * * * *", "minute"),
            ("* 24 * * *", "hour"),
            ("* * 0 * *", "day-of-month"),
            ("* * 32 * *", "day-of-month"),
            ("* * * 0 *", "month"),
            ("* * * 13 *", "month"),
            ("* * * * 8", "day-of-week"),
            ("*/0 * * * *", "minute"),
            ("5-1 * * * *", "minute"),
            ("a * * * *", "minute"),
            ("* * * jan *", "month"),
            ("0 9 * * mon", "day-of-week"),
            ("1,,2 * * * *", "minute"),
            ("1, * * * *", "minute"),
            (",1 * * * *", "minute"),
            ("-1 * * * *", "minute"),
            ("+1 * * * *", "minute"),
            ("1- * * * *", "minute"),
            ("1-2-3 * * * *", "minute"),
            ("5/15 * * * *", "minute"),
            ("*/5/2 * * * *", "minute"),
            ("*/ * * * *", "minute"),
            ("*-5 * * * *", "minute"),
            ("? * * * *", "minute"),
            ("* * L * *", "day-of-month"),
            ("* * * * 1#2", "day-of-week"),
            ("\u{ff11} * * * *", "minute"),
            ("99999999999 * * * *", "minute"),
            ("* * * * */-1", "day-of-week"),
            (&over_long, "TooLong"),
        ];
        let now = zoned("2026-10-18T13:51[Europe/London]");
        for (text, expected) in table {
            let err = parse(text).expect_err(text);
            let kind = match &err {
                CronError::TooLong { .. } => "TooLong",
                CronError::FieldCount { .. } => "FieldCount",
                CronError::Field { field, .. } => field,
            };
            assert_eq!(kind, *expected, "{text:?}: {err}");
            for recurring in [true, false] {
                assert!(latest_fire(&cron(text, recurring), &now).is_none(), "{text:?}");
                assert!(!qualifies(&cron(text, recurring), &now, Timestamp::MAX), "{text:?}");
            }
        }
        assert_eq!(parse("* * * *"), Err(CronError::FieldCount { found: 4 }));
        assert_eq!(parse("* * * * * *"), Err(CronError::FieldCount { found: 6 }));
    }

    #[test]
    fn a_never_matching_expression_never_qualifies() {
        let now = zoned("2026-10-18T13:51[Europe/London]");
        for text in ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 */1"] {
            assert_eq!(next_match(&parse(text).unwrap(), &now), None, "{text}");
            assert!(!qualifies(&cron(text, true), &now, Timestamp::MAX), "{text}");
            assert!(!qualifies(&cron(text, false), &now, Timestamp::MAX), "{text}");
        }
    }

    #[test]
    fn expression_length_limit_both_sides() {
        let at_limit = format!("{}10 * * * *", "0,".repeat(123));
        assert_eq!(at_limit.len(), MAX_EXPR_LEN);
        assert_eq!(parse(&at_limit).unwrap().minutes, 1 | (1 << 10));
        let over = format!("{}0 * * * *", "0,".repeat(124));
        assert_eq!(over.len(), MAX_EXPR_LEN + 1);
        assert_eq!(parse(&over), Err(CronError::TooLong { len: MAX_EXPR_LEN + 1 }));
        // Whitespace counts: the limit is on the text as given.
        assert_eq!(parse(&format!("{at_limit} ")), Err(CronError::TooLong { len: MAX_EXPR_LEN + 1 }));
    }

    #[test]
    fn field_value_limits_both_sides() {
        let ok = [
            "0 * * * *",
            "59 * * * *",
            "* 0 * * *",
            "* 23 * * *",
            "* * 1 * *",
            "* * 31 * *",
            "* * * 1 *",
            "* * * 12 *",
            "* * * * 0",
            "* * * * 7",
            "0-59 0-23 1-31 1-12 0-7",
            "007 09 01 01 00",
        ];
        for text in ok {
            assert!(parse(text).is_ok(), "{text}");
        }
        for text in
            ["60 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *", "* * * 0 *", "* * * 13 *", "* * * * 8", "0-60 * * * *", "* * * * 0-8"]
        {
            assert!(parse(text).is_err(), "{text}");
        }
        let all = parse("* * * * *").unwrap();
        assert_eq!(
            (all.minutes, all.hours, all.days_of_month, all.months, all.days_of_week),
            (u64::MAX >> 4, (1 << 24) - 1, u32::MAX - 1, 0x1ffe, 0x7f)
        );
    }

    #[test]
    fn step_limits_both_sides() {
        for text in ["*/1 * * * *", "*/60 * * * *", "* */24 * * *", "* * */31 * *", "* * * */12 *", "* * * * */8", "10-50/60 * * * *"] {
            assert!(parse(text).is_ok(), "{text}");
        }
        for text in ["*/0 * * * *", "*/61 * * * *", "* */25 * * *", "* * */32 * *", "* * * */13 *", "* * * * */9", "10-50/0 * * * *"] {
            assert!(parse(text).is_err(), "{text}");
        }
        assert_eq!(parse("*/60 * * * *").unwrap().minutes, 1);
        assert_eq!(parse("* * * * */8").unwrap().days_of_week, 1);
    }

    #[test]
    fn search_horizon_both_sides() {
        // 29 February 2096 to 29 February 2104 is the longest gap, and the horizon.
        let expr = parse("0 0 29 2 *").unwrap();
        let after = zoned("2096-02-29T00:00[UTC]");
        assert_eq!(next_match(&expr, &after).unwrap().to_string(), "2104-02-29T00:00:00+00:00[UTC]");
        assert!(next_match_within(&expr, &after, SEARCH_HORIZON_DAYS).is_some());
        assert!(next_match_within(&expr, &after, SEARCH_HORIZON_DAYS - 1).is_none());
        // The last minute of the last date searched is still found.
        let late = parse("59 23 29 2 *").unwrap();
        assert!(next_match_within(&late, &zoned("2096-03-01T00:00[UTC]"), SEARCH_HORIZON_DAYS - 1).is_some());
        assert!(next_match_within(&late, &zoned("2096-03-01T00:00[UTC]"), SEARCH_HORIZON_DAYS - 2).is_none());
    }

    // Properties: an independent reading of each generated expression, checked minute by
    // minute in absolute time.

    #[derive(Clone, Debug)]
    enum Item {
        Star,
        StarStep(u32),
        One(u32),
        Range(u32, u32),
        RangeStep(u32, u32, u32),
    }

    #[derive(Clone, Debug)]
    struct ArbCron {
        text: String,
        fields: Vec<Vec<Item>>,
    }

    impl Arbitrary for ArbCron {
        fn arbitrary(g: &mut Gen) -> Self {
            let fields: Vec<Vec<Item>> = FIELDS
                .iter()
                .map(|spec| {
                    // Half the fields are `*`, so matches often fall inside the window.
                    if bool::arbitrary(g) {
                        return vec![Item::Star];
                    }
                    (0..1 + usize::arbitrary(g) % 3).map(|_| arb_item(g, spec)).collect()
                })
                .collect();
            let text = fields.iter().map(|items| items.iter().map(render).collect::<Vec<_>>().join(",")).collect::<Vec<_>>().join(" ");
            ArbCron { text, fields }
        }
    }

    fn arb_item(g: &mut Gen, spec: &FieldSpec) -> Item {
        let width = spec.high - spec.low + 1;
        let value = |g: &mut Gen| spec.low + u32::arbitrary(g) % width;
        let (a, b) = (value(g), value(g));
        let (a, b) = (a.min(b), a.max(b));
        let step = 1 + u32::arbitrary(g) % width;
        match u8::arbitrary(g) % 5 {
            0 => Item::Star,
            1 => Item::StarStep(step),
            2 => Item::One(a),
            3 => Item::Range(a, b),
            _ => Item::RangeStep(a, b, step),
        }
    }

    fn render(item: &Item) -> String {
        match item {
            Item::Star => "*".into(),
            Item::StarStep(n) => format!("*/{n}"),
            Item::One(a) => a.to_string(),
            Item::Range(a, b) => format!("{a}-{b}"),
            Item::RangeStep(a, b, n) => format!("{a}-{b}/{n}"),
        }
    }

    fn item_has(item: &Item, spec: &FieldSpec, v: u32) -> bool {
        match *item {
            Item::Star => true,
            Item::StarStep(n) => (v - spec.low).is_multiple_of(n),
            Item::One(a) => v == a,
            Item::Range(a, b) => a <= v && v <= b,
            Item::RangeStep(a, b, n) => a <= v && v <= b && (v - a).is_multiple_of(n),
        }
    }

    /// vixie cron's reading of the generated items, written independently of the parser.
    fn oracle(c: &ArbCron, wall: DateTime) -> bool {
        let has = |i: usize, v: i8| c.fields[i].iter().any(|item| item_has(item, &FIELDS[i], v as u32));
        let weekday = wall.weekday().to_sunday_zero_offset();
        let dom = has(2, wall.day());
        let dow = has(4, weekday) || (weekday == 0 && has(4, 7));
        let from_star = |i: usize| matches!(c.fields[i][0], Item::Star | Item::StarStep(_));
        let day = if from_star(2) || from_star(4) { dom && dow } else { dom || dow };
        has(0, wall.minute()) && has(1, wall.hour()) && has(3, wall.month()) && day
    }

    /// Every day, with hours around the night-time clock changes (London at 01:00 and
    /// 02:00, New York at 02:00, Lord Howe at 02:00 and its half-hour shift), so that a
    /// gap or a repeat falls inside the checked window.
    #[derive(Clone, Debug)]
    struct NightCron(ArbCron);

    impl Arbitrary for NightCron {
        fn arbitrary(g: &mut Gen) -> Self {
            let mut c = ArbCron::arbitrary(g);
            let hour = |g: &mut Gen| u32::arbitrary(g) % 4;
            c.fields[1] = (0..1 + usize::arbitrary(g) % 2)
                .map(|_| {
                    let (a, b) = (hour(g), hour(g));
                    if bool::arbitrary(g) { Item::One(a) } else { Item::Range(a.min(b), a.max(b)) }
                })
                .collect();
            for i in 2..5 {
                c.fields[i] = vec![Item::Star];
            }
            c.text = c.fields.iter().map(|items| items.iter().map(render).collect::<Vec<_>>().join(",")).collect::<Vec<_>>().join(" ");
            NightCron(c)
        }
    }

    const WINDOW_MINUTES: i64 = 3 * 24 * 60;

    /// Instants from 2000 to 2040.
    fn instant_from(seed: u32) -> Timestamp {
        Timestamp::from_second(946_684_800 + i64::from(seed % 1_262_304_000)).unwrap()
    }

    fn first_match_property(zone: &str, c: ArbCron, seed: u32, near_transition: bool, jitter: i32) -> TestResult {
        let tz = TimeZone::get(zone).unwrap();
        // Half the instants within two days of a zone transition.
        let base = instant_from(seed);
        let instant = match tz.following(base).next().filter(|_| near_transition) {
            Some(t) => t.timestamp() + SignedDuration::from_secs(i64::from(jitter % 172_800)),
            None => base,
        };
        check_first_match(&tz, &c, instant)
    }

    /// From up to six hours before a transition, with a night-time schedule.
    fn night_property(zone: &str, c: NightCron, seed: u32, before: u16) -> TestResult {
        let tz = TimeZone::get(zone).unwrap();
        let transition = tz.following(instant_from(seed)).next().unwrap().timestamp();
        check_first_match(&tz, &c.0, transition - SignedDuration::from_secs(i64::from(before % 21_600)))
    }

    fn check_first_match(tz: &TimeZone, c: &ArbCron, instant: Timestamp) -> TestResult {
        let after = instant.to_zoned_datetime(tz.clone());
        let expr = parse(&c.text).expect("generated expressions parse");
        let got = next_match(&expr, &after);
        if let Some(m) = &got {
            let wall = m.datetime();
            if m.timestamp() <= instant || wall.second() != 0 || wall.subsec_nanosecond() != 0 || !oracle(c, wall) {
                return TestResult::error(format!("{} after {after}: {m} is not a later matching minute", c.text));
            }
            if tz.to_ambiguous_timestamp(wall).earlier().unwrap() != m.timestamp() {
                return TestResult::error(format!("{} after {after}: {m} is a repeat", c.text));
            }
        }
        let window_end = instant.as_second() + WINDOW_MINUTES * 60;
        let end = got.as_ref().map_or(window_end, |m| m.timestamp().as_second().min(window_end));
        let mut t = (instant.as_second().div_euclid(60) + 1) * 60;
        while t < end {
            let ts = Timestamp::from_second(t).unwrap();
            let wall = ts.to_zoned_datetime(tz.clone()).datetime();
            if oracle(c, wall) && tz.to_ambiguous_timestamp(wall).earlier().unwrap() == ts {
                return TestResult::error(format!("{} after {after}: {ts} matches before {got:?}", c.text));
            }
            t += 60;
        }
        TestResult::passed()
    }

    fn cases() -> u64 {
        std::env::var("ABCD_QUICKCHECK_TESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(64)
    }

    fn check_zone(prop: fn(ArbCron, u32, bool, i32) -> TestResult) {
        QuickCheck::new().tests(cases()).max_tests(cases() * 10).quickcheck(prop);
    }

    #[test]
    fn across_clock_changes_no_skipped_minute_matches_and_a_repeated_one_matches_once() {
        fn check(prop: fn(NightCron, u32, u16) -> TestResult) {
            QuickCheck::new().tests(cases()).max_tests(cases() * 10).quickcheck(prop);
        }
        check(|c, seed, before| night_property("Europe/London", c, seed, before));
        check(|c, seed, before| night_property("America/New_York", c, seed, before));
        check(|c, seed, before| night_property("Australia/Lord_Howe", c, seed, before));
    }

    #[test]
    fn next_match_is_the_first_matching_minute_after_in_utc() {
        check_zone(|c, seed, near, jitter| first_match_property("UTC", c, seed, near, jitter));
    }

    #[test]
    fn next_match_is_the_first_matching_minute_after_in_london() {
        check_zone(|c, seed, near, jitter| first_match_property("Europe/London", c, seed, near, jitter));
    }

    #[test]
    fn next_match_is_the_first_matching_minute_after_with_a_half_hour_shift() {
        // Lord Howe Island moves its clocks by 30 minutes.
        check_zone(|c, seed, near, jitter| first_match_property("Australia/Lord_Howe", c, seed, near, jitter));
    }
}
