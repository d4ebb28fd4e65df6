//! HTTP dates (RFC 9110 §5.6.7): formatting IMF-fixdate and parsing all three accepted forms.

const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
const MONTHS: [&[u8; 3]; 12] =
    [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const LEN: usize = 29;

// Howard Hinnant's civil-from-days / days-from-civil.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn two(out: &mut [u8], v: u32) {
    out[0] = b'0' + (v / 10) as u8;
    out[1] = b'0' + (v % 10) as u8;
}

/// Formats seconds since the epoch as an IMF-fixdate.
pub fn format(secs: i64, out: &mut [u8; LEN]) {
    let days = secs.div_euclid(86400);
    let sod = secs.rem_euclid(86400) as u32;
    let (y, m, d) = civil_from_days(days);
    out.copy_from_slice(b"Thu, 01 Jan 1970 00:00:00 GMT");
    out[..3].copy_from_slice(DAYS[days.rem_euclid(7) as usize]);
    two(&mut out[5..7], d);
    out[8..11].copy_from_slice(MONTHS[(m - 1) as usize]);
    let y = y.clamp(0, 9999) as u32;
    two(&mut out[12..14], y / 100);
    two(&mut out[14..16], y % 100);
    two(&mut out[17..19], sod / 3600);
    two(&mut out[20..22], sod / 60 % 60);
    two(&mut out[23..25], sod % 60);
}

pub fn format_string(secs: i64) -> String {
    let mut b = [0u8; LEN];
    format(secs, &mut b);
    String::from_utf8(b.to_vec()).unwrap()
}

fn num(b: &[u8]) -> Option<u32> {
    if b.is_empty() || b.len() > 4 {
        return None;
    }
    let mut n = 0u32;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (c - b'0') as u32;
    }
    Some(n)
}

fn month(b: &[u8]) -> Option<u32> {
    MONTHS.iter().position(|m| &m[..] == b).map(|i| i as u32 + 1)
}

fn hms(b: &[u8]) -> Option<u32> {
    if b.len() != 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let (h, m, s) = (num(&b[0..2])?, num(&b[3..5])?, num(&b[6..8])?);
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(h * 3600 + m * 60 + s)
}

fn assemble(y: i64, mo: u32, d: u32, sod: u32) -> Option<i64> {
    if !(1..=31).contains(&d) {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86400 + sod as i64)
}

/// Parses an HTTP date in IMF-fixdate, obsolete RFC 850 or asctime form into seconds since the epoch.
pub fn parse(v: &[u8]) -> Option<i64> {
    let v = v.trim_ascii();
    if v.len() == LEN && v[3] == b',' {
        // Sun, 06 Nov 1994 08:49:37 GMT
        if &v[26..] != b"GMT" || v[4] != b' ' || v[7] != b' ' || v[11] != b' ' || v[16] != b' ' || v[25] != b' ' {
            return None;
        }
        return assemble(num(&v[12..16])? as i64, month(&v[8..11])?, num(&v[5..7])?, hms(&v[17..25])?);
    }
    if let Some(comma) = v.iter().position(|&b| b == b',') {
        // Sunday, 06-Nov-94 08:49:37 GMT
        let r = &v[comma + 1..];
        if r.len() != 23 || r[0] != b' ' || r[3] != b'-' || r[7] != b'-' || r[10] != b' ' || &r[20..] != b"GMT" {
            return None;
        }
        let yy = num(&r[8..10])? as i64;
        // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
        let y = if yy < 70 { 2000 + yy } else { 1900 + yy };
        return assemble(y, month(&r[4..7])?, num(&r[1..3])?, hms(&r[11..19])?);
    }
    // Sun Nov  6 08:49:37 1994
    if v.len() == 24 && v[3] == b' ' && v[7] == b' ' && v[10] == b' ' && v[19] == b' ' {
        let day = if v[8] == b' ' { num(&v[9..10])? } else { num(&v[8..10])? };
        return assemble(num(&v[20..24])? as i64, month(&v[4..7])?, day, hms(&v[11..19])?);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc_example() {
        assert_eq!(format_string(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(format_string(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(format_string(951782400), "Tue, 29 Feb 2000 00:00:00 GMT");
    }

    #[test]
    fn parses_three_forms() {
        assert_eq!(parse(b"Sun, 06 Nov 1994 08:49:37 GMT"), Some(784111777));
        assert_eq!(parse(b"Sunday, 06-Nov-94 08:49:37 GMT"), Some(784111777));
        assert_eq!(parse(b"Sun Nov  6 08:49:37 1994"), Some(784111777));
    }

    #[test]
    fn round_trips() {
        for t in [0i64, 1, 86399, 86400, 1_700_000_000, 1_800_000_123, 4_102_444_800] {
            assert_eq!(parse(format_string(t).as_bytes()), Some(t));
        }
    }

    #[test]
    fn rejects_garbage() {
        for s in ["", "yesterday", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT"] {
            assert_eq!(parse(s.as_bytes()), None, "{s}");
        }
    }
}
