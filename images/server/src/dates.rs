//! HTTP dates (RFC 9110 §5.6.7) as seconds since the epoch, by the httpdate crate: IMF-fixdate out, the three
//! accepted forms in. Neither direction allocates (`format` writes into a stack array), so the Date line can be
//! refreshed on a worker and a conditional request parsed without touching the heap.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use httpdate::HttpDate;

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const LEN: usize = 29;

/// The last second an IMF-fixdate can express (9999-12-31T23:59:59Z); httpdate panics beyond it.
const LAST: i64 = 253_402_300_799;

fn to_system_time(secs: i64) -> SystemTime {
    // Clamped: an mtime before 1970 or after 9999 is a broken clock, not a reason to panic.
    UNIX_EPOCH + Duration::from_secs(secs.clamp(0, LAST) as u64)
}

/// Formats seconds since the epoch as an IMF-fixdate.
pub fn format(secs: i64, out: &mut [u8; LEN]) {
    let mut w = &mut out[..];
    write!(w, "{}", HttpDate::from(to_system_time(secs))).expect("an IMF-fixdate is exactly LEN bytes");
}

pub fn format_string(secs: i64) -> String {
    HttpDate::from(to_system_time(secs)).to_string()
}

/// Parses an HTTP date in IMF-fixdate, obsolete RFC 850 or asctime form into seconds since the epoch.
/// Dates httpdate deems invalid (a weekday that does not fit the date, 30 February, before 1970) are `None`,
/// which makes the conditional header that carried them count as absent.
pub fn parse(v: &[u8]) -> Option<i64> {
    let t = httpdate::parse_http_date(std::str::from_utf8(v).ok()?).ok()?;
    Some(t.duration_since(UNIX_EPOCH).ok()?.as_secs() as i64)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm), for the timestamps parsed
/// outside HTTP: certificates' validity (tls/der.rs) and the deploys' served times (skew/deploys.rs).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc_example() {
        assert_eq!(format_string(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(format_string(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(format_string(951782400), "Tue, 29 Feb 2000 00:00:00 GMT");
        let mut b = [0u8; LEN];
        format(784111777, &mut b);
        assert_eq!(&b, b"Sun, 06 Nov 1994 08:49:37 GMT");
    }

    #[test]
    fn out_of_range_times_clamp() {
        assert_eq!(format_string(-5), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(format_string(i64::MAX), "Fri, 31 Dec 9999 23:59:59 GMT");
    }

    #[test]
    fn parses_three_forms() {
        assert_eq!(parse(b"Sun, 06 Nov 1994 08:49:37 GMT"), Some(784111777));
        assert_eq!(parse(b"Sunday, 06-Nov-94 08:49:37 GMT"), Some(784111777));
        assert_eq!(parse(b"Sun Nov  6 08:49:37 1994"), Some(784111777));
        assert_eq!(parse(b" Sun, 06 Nov 1994 08:49:37 GMT "), Some(784111777));
    }

    #[test]
    fn round_trips() {
        for t in [0i64, 1, 86399, 86400, 1_700_000_000, 1_800_000_123, 4_102_444_800] {
            assert_eq!(parse(format_string(t).as_bytes()), Some(t));
        }
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "",
            "yesterday",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Mon, 06 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse(s.as_bytes()), None, "{s}");
        }
        assert_eq!(parse(b"Sun, 06 Nov 1994 08:49:37 GMT\xff"), None);
    }
}
