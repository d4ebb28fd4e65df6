//! How the text of one flag (or environment variable) becomes a value. Each function is a clap value parser:
//! its error message is shown after clap's "invalid value '…' for '--flag <ARG>'".

use std::str::FromStr;
use std::time::Duration;

use crate::site::glob::PathGlob;

/// One `--cache-control GLOB=VALUE` rule.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheRule {
    pub glob: PathGlob,
    pub value: String,
}

/// One `--header '[GLOB=]Name: value'` rule.
#[derive(Debug, Clone, PartialEq)]
pub struct HeaderRule {
    /// `None`: every file response.
    pub glob: Option<PathGlob>,
    pub name: String,
    pub value: String,
}

impl HeaderRule {
    pub fn applies_to(&self, url_path: &str) -> bool {
        self.glob.as_ref().is_none_or(|g| g.matches(url_path))
    }
}

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

/// A Strict-Transport-Security value: one header line's worth of printable text.
pub fn parse_hsts(v: &str) -> Result<String, String> {
    let v = v.trim();
    if v.is_empty() || !v.bytes().all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic()) {
        return Err(format!("--hsts: invalid header value {v:?} (printable ASCII, e.g. 'max-age=31536000')"));
    }
    Ok(v.to_string())
}

/// A non-negative integer; surrounding whitespace (a trailing newline from a ConfigMap) is fine.
pub fn number<T: FromStr>(s: &str) -> Result<T, String> {
    s.trim().parse().map_err(|_| format!("invalid number {s:?}"))
}

pub fn at_least_one(s: &str) -> Result<u64, String> {
    match number(s)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

/// `--not-found-page`: a site path; the leading `/` is optional and an empty value means none.
pub fn site_path(s: &str) -> Option<String> {
    match s.trim() {
        "" => None,
        p if p.starts_with('/') => Some(p.to_string()),
        p => Some(format!("/{p}")),
    }
}

/// `GLOB=VALUE`, split at the first `=` (a glob never holds one; a value may: `max-age=600`).
pub fn parse_cache_rule(v: &str) -> Result<CacheRule, String> {
    let eq = v.find('=').ok_or_else(|| format!("--cache-control {v:?}: expected GLOB=VALUE"))?;
    let (glob, value) = (v[..eq].trim(), v[eq + 1..].trim());
    if glob.is_empty() || value.bytes().any(|b| b < 0x20) {
        return Err(format!("--cache-control {v:?}: invalid rule"));
    }
    let glob = PathGlob::new(glob).map_err(|e| format!("--cache-control {v:?}: invalid glob: {e}"))?;
    Ok(CacheRule { glob, value: value.to_string() })
}

/// `[GLOB=]Name: value`. A glob is there when an `=` comes before the first `:` (a header name never holds `=`).
pub fn parse_header_rule(v: &str) -> Result<HeaderRule, String> {
    let (glob, rest) = match (v.find('='), v.find(':')) {
        (Some(e), Some(c)) if e < c => (Some(v[..e].trim()), &v[e + 1..]),
        _ => (None, v),
    };
    let colon = rest.find(':').ok_or_else(|| format!("--header {v:?}: expected 'Name: value'"))?;
    let name = rest[..colon].trim();
    let value = rest[colon + 1..].trim();
    if !crate::headers::site_file::is_token(name) || value.bytes().any(|b| b < 0x20 && b != b'\t') {
        return Err(format!("--header {v:?}: invalid header name or value"));
    }
    // The same headers `_headers` may not set: the server frames, negotiates and validates with them.
    if crate::headers::site_file::reserved(name) {
        return Err(format!("--header {v:?}: {name} is set by the server and cannot be set here"));
    }
    let glob = match glob {
        None | Some("*") => None,
        Some(g) => Some(PathGlob::new(g).map_err(|e| format!("--header {v:?}: invalid glob: {e}"))?),
    };
    Ok(HeaderRule { glob, name: name.to_string(), value: value.to_string() })
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

    #[test]
    fn site_paths() {
        assert_eq!(site_path("404.html").as_deref(), Some("/404.html"));
        assert_eq!(site_path("/404.html").as_deref(), Some("/404.html"));
        assert_eq!(site_path(" "), None);
    }

    #[test]
    fn rules() {
        let r = parse_cache_rule("/assets/**=public, max-age=31536000").unwrap();
        assert_eq!((r.glob.pattern(), r.value.as_str()), ("/assets/**", "public, max-age=31536000"));
        assert!(parse_cache_rule("no-equals").is_err());
        assert!(parse_cache_rule("=x").is_err());

        let h = parse_header_rule("X-Frame-Options:DENY").unwrap();
        assert_eq!((h.glob, h.name.as_str(), h.value.as_str()), (None, "X-Frame-Options", "DENY"));
        let h = parse_header_rule("*.js=X-A: b=c").unwrap();
        assert_eq!((h.glob.unwrap().pattern(), h.name.as_str(), h.value.as_str()), ("*.js", "X-A", "b=c"));
        assert!(parse_header_rule("*=X-A: b").unwrap().applies_to("/any/file"));
        assert!(parse_header_rule("Bad Name: x").is_err());
        assert!(parse_header_rule("X-A: a\u{1}b").is_err());
        assert!(parse_header_rule("novalue").is_err());
        for name in [
            "Content-Length",
            "transfer-encoding",
            "CONNECTION",
            "Proxy-Connection",
            "Content-Encoding",
            "Date",
            "ETag",
        ] {
            let e = parse_header_rule(&format!("*.js={name}: x")).unwrap_err();
            assert!(e.contains("is set by the server"), "{name}: {e}");
        }
        assert!(parse_header_rule("Server: mine").is_ok(), "the server sends no Server header");
    }
}
