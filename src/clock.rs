//! The one place abcd reads the wall clock. `now` is the clock of its time rules (the away
//! window, the stop verdict's deadline and wakes, `--until`, a checklist item's next look);
//! a build with the `test-support` feature lets `ABCD_TEST_NOW` set it to an RFC 3339
//! instant, so every time rule is tested without sleeping. The zone is the machine's (`TZ`
//! moves it). `wall_now` is for what records when something was written (journal line
//! times): no rule reads those, and a test instant must not rewrite them.

use std::path::Path;

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
    Ok(now()?.to_zoned_datetime(local_zone()))
}

/// The folder of zone files the machine's zone is read from.
const ZONE_FILES: &str = "/usr/share/zoneinfo";
/// A zone file is a few KiB; one past this is not read as one.
pub const ZONE_FILE_MAX_BYTES: u64 = 256 << 10;

/// The machine's time zone, UTC when it cannot be learned. `TZ` names it (a zone file's
/// name or path, or a POSIX rule such as `CET-1CEST,M3.5.0,M10.5.0/3`), else
/// `/etc/localtime` does. The zone file is read directly: jiff's own lookup lists every
/// folder of the zone database on first use, which the status line would pay on each
/// refresh (docs/benchmarks.md, issue 35's status line). What this cannot read (a `TZDIR`, a name
/// with `..`) goes to jiff's lookup.
pub fn local_zone() -> TimeZone {
    // Read once per process: a listing shows many times, and a process's zone does not move.
    static ZONE: std::sync::OnceLock<TimeZone> = std::sync::OnceLock::new();
    ZONE.get_or_init(|| {
        zone_from(std::env::var("TZ").ok().as_deref(), std::env::var_os("TZDIR").is_some(), Path::new("/etc/localtime"))
            .unwrap_or_else(|| TimeZone::try_system().unwrap_or(TimeZone::UTC))
    })
    .clone()
}

/// The zone `tz` (the `TZ` variable) or `localtime` names; `None` leaves it to jiff.
fn zone_from(tz: Option<&str>, tzdir: bool, localtime: &Path) -> Option<TimeZone> {
    if tzdir {
        return None;
    }
    let read = |path: &Path, name: &str| read_zone_file(path, name, ZONE_FILE_MAX_BYTES);
    match tz.map(|t| t.strip_prefix(':').unwrap_or(t)) {
        Some("") => Some(TimeZone::UTC),
        Some(path) if path.starts_with('/') => read(Path::new(path), path),
        Some(name) => {
            let plain = Path::new(name).components().all(|c| matches!(c, std::path::Component::Normal(_)));
            let file = if plain { read(&Path::new(ZONE_FILES).join(name), name) } else { None };
            file.or_else(|| TimeZone::posix(name).ok())
        }
        None => {
            let target = std::fs::read_link(localtime).ok();
            let name = target.as_deref().and_then(|t| t.to_str()).and_then(|t| t.split_once("zoneinfo/")).map(|(_, n)| n);
            read(localtime, name.unwrap_or("Local"))
        }
    }
}

/// The zone file at `path`, named `name`; `None` when it is unreadable, over `max` bytes
/// or not a zone file.
fn read_zone_file(path: &Path, name: &str, max: u64) -> Option<TimeZone> {
    let bytes = crate::platform::fs::read_regular(path, max + 1).ok()?;
    if bytes.len() as u64 > max {
        return None;
    }
    TimeZone::tzif(name, &bytes).ok()
}

/// An instant shown in the machine's zone, to the minute: `2026-12-01 09:00 GMT`.
pub fn show(at: Timestamp) -> String {
    let local = at.to_zoned_datetime(local_zone());
    jiff::fmt::strtime::format("%Y-%m-%d %H:%M %Z", &local)
        .or_else(|_| jiff::fmt::strtime::format("%Y-%m-%d %H:%M %:z", &local))
        .unwrap_or_else(|_| at.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offset and abbreviation `zone` gives at each of a year's instants.
    fn seen(zone: &TimeZone) -> Vec<(i32, String)> {
        [
            "2026-01-15T12:00:00Z",
            "2026-03-29T00:30:00Z",
            "2026-03-29T01:30:00Z",
            "2026-07-01T12:00:00Z",
            "2026-10-25T00:30:00Z",
            "2026-11-01T06:30:00Z",
        ]
        .iter()
        .map(|t| {
            let info = zone.to_offset_info(t.parse::<Timestamp>().unwrap());
            (info.offset().seconds(), info.abbreviation().to_string())
        })
        .collect()
    }

    #[test]
    fn the_zone_read_directly_is_the_one_jiffs_lookup_gives() {
        let localtime = Path::new("/etc/localtime");
        for name in ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "EST5EDT"] {
            let direct = zone_from(Some(name), false, localtime).unwrap_or_else(|| panic!("{name} not read"));
            assert_eq!(seen(&direct), seen(&TimeZone::get(name).unwrap()), "{name}");
            let colon = zone_from(Some(&format!(":{name}")), false, localtime).unwrap();
            assert_eq!(seen(&colon), seen(&direct), ":{name}");
            let path = format!("{ZONE_FILES}/{name}");
            assert_eq!(seen(&zone_from(Some(&path), false, localtime).unwrap()), seen(&direct), "{path}");
        }
        let rule = "CET-1CEST,M3.5.0,M10.5.0/3";
        assert_eq!(seen(&zone_from(Some(rule), false, localtime).unwrap()), seen(&TimeZone::posix(rule).unwrap()));
        assert_eq!(seen(&zone_from(Some(""), false, localtime).unwrap()), seen(&TimeZone::UTC));
        // /etc/localtime, read through its link: the same zone jiff finds for it.
        if let Some(mine) = zone_from(None, false, localtime) {
            assert_eq!(seen(&mine), seen(&TimeZone::try_system().unwrap()));
        }
    }

    #[test]
    fn what_the_direct_read_cannot_place_is_left_to_jiff() {
        let localtime = Path::new("/etc/localtime");
        assert!(zone_from(Some("Europe/Paris"), true, localtime).is_none(), "a TZDIR is jiff's to read");
        assert!(zone_from(Some("../../etc/passwd"), false, localtime).is_none());
        assert!(zone_from(Some("No/Such_Zone"), false, localtime).is_none());
        assert!(zone_from(Some("/etc/hostname"), false, localtime).is_none(), "not a zone file");
        assert!(zone_from(None, false, Path::new("/no/such/localtime")).is_none());
    }

    #[test]
    fn a_zone_file_is_read_up_to_its_limit_and_not_one_byte_past() {
        let path = Path::new(ZONE_FILES).join("Europe/Paris");
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size <= ZONE_FILE_MAX_BYTES);
        assert!(read_zone_file(&path, "Europe/Paris", size).is_some());
        assert!(read_zone_file(&path, "Europe/Paris", size - 1).is_none());
    }
}
