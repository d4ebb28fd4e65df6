//! The site rules that are written as text (a flag's value, or the fields of one site value entry put back into
//! that form): cache-control and header rules, the HSTS value, a site path. One parser per rule, so a flag and
//! the site value file refuse the same text with the same message.

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

/// A Strict-Transport-Security value: one header line's worth of printable text.
pub fn parse_hsts(v: &str) -> Result<String, String> {
    let v = v.trim();
    if v.is_empty() || !v.bytes().all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic()) {
        return Err(format!("--hsts: invalid header value {v:?} (printable ASCII, e.g. 'max-age=31536000')"));
    }
    Ok(v.to_string())
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
