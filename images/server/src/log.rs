//! Structured JSON logs on stderr, one object per line, written with a single write(2) so lines from
//! different threads never interleave.

use std::time::{SystemTime, UNIX_EPOCH};

pub enum V<'a> {
    S(&'a str),
    B(&'a [u8]),
    U(u64),
    F(f64),
    Bool(bool),
}

/// Appends `s` as a JSON string. Request targets and user agents are attacker-controlled bytes (quotes,
/// backslashes, control bytes, invalid UTF-8): everything outside printable ASCII becomes `\u00XX`.
pub fn escape(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            c if !(0x20..0x7f).contains(&c) => {
                // Bytes outside printable ASCII are escaped one by one: logs stay valid JSON even for
                // hostile request targets.
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
            c => out.push(c),
        }
    }
    out.push(b'"');
}

/// Appends the UTC time as RFC 3339 with milliseconds, written straight into `out` (no allocation: the
/// access log calls this per request).
pub fn timestamp(out: &mut Vec<u8>) {
    use std::io::Write;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs() as i64;
    let days = secs.div_euclid(86400);
    let sod = secs.rem_euclid(86400);
    // Civil date from days since the epoch (Howard Hinnant's civil_from_days).
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        y,
        m,
        d,
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        now.subsec_millis()
    );
}

/// Appends one JSON log line to `out`.
pub fn format_line(out: &mut Vec<u8>, level: &str, msg: &str, fields: &[(&str, V)]) {
    use std::io::Write;
    out.extend_from_slice(b"{\"time\":\"");
    timestamp(out);
    out.extend_from_slice(b"\",\"level\":");
    escape(out, level.as_bytes());
    out.extend_from_slice(b",\"msg\":");
    escape(out, msg.as_bytes());
    for (k, v) in fields {
        out.push(b',');
        escape(out, k.as_bytes());
        out.push(b':');
        match v {
            V::S(s) => escape(out, s.as_bytes()),
            V::B(b) => escape(out, b),
            V::U(n) => {
                let _ = write!(out, "{n}");
            }
            V::F(f) if f.is_finite() => {
                let _ = write!(out, "{f}");
            }
            V::F(_) => out.extend_from_slice(b"null"),
            V::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        }
    }
    out.extend_from_slice(b"}\n");
}

/// Writes `line` to stderr in one call.
pub fn write_stderr(line: &[u8]) {
    let _ = crate::sys::io::write(2, line);
}

pub fn log(level: &str, msg: &str, fields: &[(&str, V)]) {
    let mut out = Vec::with_capacity(256);
    format_line(&mut out, level, msg, fields);
    write_stderr(&out);
}

pub fn info(msg: &str, fields: &[(&str, V)]) {
    log("info", msg, fields)
}

pub fn warn(msg: &str, fields: &[(&str, V)]) {
    log("warn", msg, fields)
}

pub fn error(msg: &str, fields: &[(&str, V)]) {
    log("error", msg, fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_json_objects() {
        let mut out = Vec::new();
        format_line(
            &mut out,
            "info",
            "hello \"x\"",
            &[("path", V::B(b"/a\nb\xff")), ("n", V::U(3)), ("ok", V::Bool(true))],
        );
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("{\"time\":\""));
        assert!(s.ends_with("}\n"));
        assert!(s.contains("\"msg\":\"hello \\\"x\\\"\""));
        assert!(s.contains("\"path\":\"/a\\nb\\u00ff\""));
        assert!(s.contains("\"n\":3,\"ok\":true"));
        assert_eq!(s.matches('\n').count(), 1);
    }
}
