//! The one place abcd reads the wall clock for its time rules (the away window, the stop
//! verdict's deadline and wakes, `--until`). Tests set `ABCD_TEST_NOW` to an RFC 3339
//! instant, so every time rule is tested without sleeping; the zone is the machine's
//! (`TZ` moves it). Journal line times are not taken from here: they record when a line
//! was written, and no rule reads them.

use jiff::{Timestamp, ZonedDateTime, tz::TimeZone};

/// The test seam: when set, abcd's "now" is this instant.
pub const TEST_NOW_VAR: &str = "ABCD_TEST_NOW";

#[derive(Debug, thiserror::Error)]
#[error("{TEST_NOW_VAR} is set but is not an RFC 3339 instant (like 2026-12-01T09:00:00Z); unset it")]
pub struct BadTestNow;

/// Now, as a timestamp: `ABCD_TEST_NOW` when set, else the wall clock.
pub fn now() -> Result<Timestamp, BadTestNow> {
    match std::env::var(TEST_NOW_VAR) {
        Ok(text) if !text.is_empty() => text.trim().parse::<Timestamp>().map_err(|_| BadTestNow),
        _ => Ok(Timestamp::now()),
    }
}

/// Now in the machine's local time zone (UTC when it cannot be learned).
pub fn now_zoned() -> Result<ZonedDateTime, BadTestNow> {
    Ok(now()?.to_zoned_datetime(TimeZone::try_system().unwrap_or(TimeZone::UTC)))
}

/// An instant shown in the machine's zone, to the minute: `2026-12-01 09:00 GMT`.
pub fn show(at: Timestamp) -> String {
    let local = at.to_zoned_datetime(TimeZone::try_system().unwrap_or(TimeZone::UTC));
    jiff::fmt::strtime::format("%Y-%m-%d %H:%M %Z", &local)
        .or_else(|_| jiff::fmt::strtime::format("%Y-%m-%d %H:%M %:z", &local))
        .unwrap_or_else(|_| at.to_string())
}
