//! How the text of one flag (or environment variable) becomes a value. Each function is a clap value parser:
//! its error message is shown after clap's "invalid value '…' for '--flag <ARG>'".

use std::str::FromStr;
use std::time::Duration;

/// Parses `10s`, `500ms`, `1m`, `2h`, `1.5s`, or a bare number of seconds (the operator writes `5s`/`1500ms`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("invalid duration {s:?}"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "us" | "µs" => n / 1e6,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("invalid duration unit in {s:?} (use ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| format!("invalid duration {s:?}"))
}

/// A duration that must not be zero (timeouts: zero would close every connection at once).
pub fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(d)
}

/// Parses `8MiB`, `512KiB`, `1M`, `1000`, ... into bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("invalid size {s:?}"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "ki" | "kib" => 1024,
        "m" | "mb" => 1_000_000,
        "mi" | "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gi" | "gib" => 1 << 30,
        _ => return Err(format!("invalid size unit in {s:?}")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("size {s:?} too large"))
}

/// `--memory-limit`: a size, or `none`/`max` (also 0) for no limit, which is kept as 0.
pub fn parse_limit_size(s: &str) -> Result<u64, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "none" | "max" => Ok(0),
        _ => parse_size(s),
    }
}

/// `true/false/1/0/yes/no/on/off`; empty is true, so `HYPERSTATIC_CHECK=` switches `--check` on.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("invalid boolean {s:?} (use true or false)")),
    }
}

/// A non-negative integer; surrounding whitespace (a trailing newline from a ConfigMap) is fine.
pub fn number<T: FromStr>(s: &str) -> Result<T, String> {
    s.trim().parse().map_err(|_| format!("invalid number {s:?}"))
}

/// A port a client can be sent to: 1 to 65535 (0 means "any" only to a listener).
pub fn port(s: &str) -> Result<u16, String> {
    match number(s)? {
        0 => Err("invalid port 0 (1 to 65535)".into()),
        n => Ok(n),
    }
}

pub fn at_least_one(s: &str) -> Result<u64, String> {
    match number(s)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1500ms").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("1e999").is_err());
        assert!(positive_duration("0s").is_err());
    }

    #[test]
    fn sizes_bools_numbers() {
        assert_eq!(parse_size("8MiB").unwrap(), 8 << 20);
        assert_eq!(parse_size("1k").unwrap(), 1000);
        assert!(parse_size("1q").is_err());
        assert!(parse_size("99999999999999999999").is_err());
        assert_eq!(parse_bool(" Off"), Ok(false));
        assert_eq!(parse_bool(""), Ok(true));
        assert!(parse_bool("maybe").is_err());
        assert_eq!(number::<usize>(" 3\n").unwrap(), 3);
        assert!(number::<u64>("-1").is_err());
        assert!(at_least_one("0").is_err());
    }
}
