//! The one place abcd reads the wall clock. `now` is the clock of its time rules (the away
//! window, the stop verdict's deadline and wakes, `--until`, a checklist item's next look);
//! a build with the `test-support` feature lets `ABCD_TEST_NOW` set it to an RFC 3339
//! instant, so every time rule is tested without sleeping. The zone is the machine's (`TZ`
//! moves it). `wall_now` is for what records when something was written (journal line
//! times): no rule reads those, and a test instant must not rewrite them.

use jiff::{Timestamp, ZonedDateTime, tz::TimeZone};

/// The test seam: when set, abcd's "now" is this instant.
#[cfg(feature = "test-support")]
pub const TEST_NOW_VAR: &str = "ABCD_TEST_NOW";

#[cfg(feature = "test-support")]
#[derive(Debug, thiserror::Error)]
#[error("{TEST_NOW_VAR} is set but is not an RFC 3339 instant (like 2026-12-01T09:00:00Z); unset it")]
pub struct BadTestNow;

/// The shipped build has no test instant, so its clock cannot fail.
#[cfg(not(feature = "test-support"))]
#[derive(Debug, thiserror::Error)]
pub enum BadTestNow {}

/// Now, as a timestamp: `ABCD_TEST_NOW` when set (test builds), else the wall clock.
pub fn now() -> Result<Timestamp, BadTestNow> {
    #[cfg(feature = "test-support")]
    if let Ok(text) = std::env::var(TEST_NOW_VAR)
        && !text.is_empty()
    {
        return text.trim().parse::<Timestamp>().map_err(|_| BadTestNow);
    }
    Ok(wall_now())
}

/// The wall clock itself, never the test instant: for stamping when something was written.
#[allow(clippy::disallowed_methods)] // the one wall-clock read every other goes through
pub fn wall_now() -> Timestamp {
    Timestamp::now()
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
