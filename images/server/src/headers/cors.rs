//! CORS for static files (`--cors`): which origins may read which paths, answered on preflights and on simple
//! requests. One rule is `GLOB=ORIGINS[;methods=M,M][;headers=H,H][;max-age=SECONDS]`, ORIGINS being `*` or a
//! comma-separated list of exact origins (`scheme://host[:port]`, compared byte for byte, no patterns). The first
//! rule whose glob matches a file is that file's rule (chosen at load time).
//!
//! What is per request is only what must be: with `*` the file's header block already holds
//! `Access-Control-Allow-Origin: *`; with a list it holds `Vary: Origin`, and a request whose `Origin` is in the
//! list gets that origin's precomputed `Access-Control-Allow-Origin` line copied in (a scan of the rule's few
//! origins, no allocation). A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an
//! allowed origin for an allowed method gets 204 with the rule's precomputed `Access-Control-Allow-*` lines; from
//! any other it gets a plain 204 without them, which the browser reads as a refusal.

use crate::site::glob::PathGlob;

/// What a rule allows when it does not say.
const DEFAULT_METHODS: &str = "GET, HEAD";

#[derive(Debug, Clone, PartialEq)]
pub struct CorsRule {
    pub glob: PathGlob,
    /// `*`: any origin (and no credentials, as the CORS protocol has it).
    pub any: bool,
    pub origins: Vec<String>,
    /// `Access-Control-Allow-Origin: <origin>\r\n`, one per origin, in `origins` order.
    allow_lines: Vec<Box<[u8]>>,
    /// Upper-case method tokens a preflight may ask for.
    methods: Vec<String>,
    /// `Access-Control-Allow-Methods`, `-Headers`, `-Max-Age` lines of a granted preflight.
    preflight_lines: Box<[u8]>,
    /// The rule as written (`methods=`, `headers=`, `max-age=`, normalised; None when not given): the site value's
    /// canonical rendering writes them back (site_value/canonical.rs).
    pub written: Written,
}

/// What a rule said besides its glob and origins, as the site value writes it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Written {
    pub methods: Option<Vec<String>>,
    pub headers: Option<Vec<String>>,
    pub max_age: Option<u64>,
}

impl CorsRule {
    /// The `Access-Control-Allow-Origin` line for a request's `Origin`, when the rule names it. Never for `*`
    /// rules: their line is in the file's header block.
    #[inline]
    pub fn allow_line(&self, origin: &[u8]) -> Option<&[u8]> {
        let i = self.origins.iter().position(|o| o.as_bytes() == origin)?;
        Some(&self.allow_lines[i])
    }

    /// The lines of a preflight's 204 when it is granted (origin and method allowed), or None.
    pub fn preflight(&self, origin: &[u8], method: &[u8]) -> Option<(&[u8], &[u8])> {
        if !self.methods.iter().any(|m| m.as_bytes() == method) {
            return None;
        }
        let origin_line: &[u8] =
            if self.any { b"Access-Control-Allow-Origin: *\r\n" } else { self.allow_line(origin)? };
        Some((origin_line, &self.preflight_lines))
    }

    /// Headers every response of a file under this rule carries (precomputed into its block).
    pub fn static_headers(&self) -> (&'static str, &'static str) {
        if self.any {
            ("Access-Control-Allow-Origin", "*")
        } else {
            ("Vary", "Origin")
        }
    }
}

/// An origin as browsers send it: `scheme://host[:port]`, nothing after.
fn valid_origin(o: &str) -> bool {
    let Some((scheme, rest)) = o.split_once("://") else { return false };
    let host_ok = |h: &str| !h.is_empty() && h.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._[]:".contains(&b));
    !scheme.is_empty()
        && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        && host_ok(rest)
        && !rest.ends_with(':')
}

fn list(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// Parses one `--cors` value; errors name the flag.
pub fn parse_rule(v: &str) -> Result<CorsRule, String> {
    let err = |what: &str| format!("--cors {v:?}: {what}");
    let (glob, rest) =
        v.split_once('=').ok_or_else(|| err("expected GLOB=ORIGINS[;methods=..][;headers=..][;max-age=..]"))?;
    let glob = PathGlob::new(glob.trim()).map_err(|e| err(&format!("invalid glob: {e}")))?;
    let mut parts = rest.split(';');
    let origins: Vec<String> = list(parts.next().unwrap_or("")).map(String::from).collect();
    let any = origins == ["*"];
    if origins.is_empty() {
        return Err(err("no origins (use * or scheme://host[:port])"));
    }
    if !any {
        if let Some(bad) = origins.iter().find(|o| !valid_origin(o)) {
            return Err(err(&format!("origin {bad:?} is not scheme://host[:port] (or * alone)")));
        }
    }
    let (mut methods, mut headers, mut max_age) = (DEFAULT_METHODS.to_string(), String::new(), None::<u64>);
    let mut written = Written::default();
    for p in parts.map(str::trim).filter(|p| !p.is_empty()) {
        let (k, val) = p.split_once('=').ok_or_else(|| err(&format!("{p:?}: expected key=value")))?;
        let token_list = |val: &str| -> Result<String, String> {
            let items: Vec<&str> = list(val).collect();
            match items.iter().find(|t| !crate::headers::site_file::is_token(t)) {
                Some(bad) => Err(err(&format!("{bad:?} is not a token"))),
                None => Ok(items.join(", ")),
            }
        };
        match k.trim() {
            "methods" => {
                methods = token_list(&val.to_ascii_uppercase())?;
                written.methods = Some(list(&methods).map(String::from).collect());
            }
            "headers" => {
                headers = token_list(val)?;
                written.headers = Some(list(&headers).map(String::from).collect());
            }
            "max-age" => max_age = Some(val.trim().parse().map_err(|_| err(&format!("max-age {val:?}: not seconds")))?),
            other => return Err(err(&format!("unknown key {other:?} (methods, headers, max-age)"))),
        }
    }
    if methods.is_empty() {
        return Err(err("methods is empty"));
    }
    let mut preflight = format!("Access-Control-Allow-Methods: {methods}\r\n");
    if !headers.is_empty() {
        preflight.push_str(&format!("Access-Control-Allow-Headers: {headers}\r\n"));
    }
    if let Some(s) = max_age {
        preflight.push_str(&format!("Access-Control-Max-Age: {s}\r\n"));
    }
    Ok(CorsRule {
        glob,
        any,
        allow_lines: if any {
            Vec::new()
        } else {
            origins.iter().map(|o| format!("Access-Control-Allow-Origin: {o}\r\n").into_bytes().into()).collect()
        },
        origins: if any { Vec::new() } else { origins },
        methods: list(&methods).map(String::from).collect(),
        preflight_lines: preflight.into_bytes().into(),
        written: Written { max_age, ..written },
    })
}

/// The index of the first rule matching a file's URL path.
pub fn rule_for(rules: &[CorsRule], url: &str) -> Option<u16> {
    rules.iter().position(|r| r.glob.matches(url)).map(|i| i as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_answer() {
        let r =
            parse_rule("/fonts/**=https://a.example, http://b.example:8080;methods=get,head;headers=X-A;max-age=600")
                .unwrap();
        assert!(!r.any);
        assert_eq!(
            r.allow_line(b"https://a.example"),
            Some(&b"Access-Control-Allow-Origin: https://a.example\r\n"[..])
        );
        assert_eq!(r.allow_line(b"https://a.example.evil"), None, "exact strings only");
        assert_eq!(r.allow_line(b"https://A.example"), None);
        let (o, tail) = r.preflight(b"http://b.example:8080", b"GET").unwrap();
        assert_eq!(o, b"Access-Control-Allow-Origin: http://b.example:8080\r\n");
        assert_eq!(
            tail,
            b"Access-Control-Allow-Methods: GET, HEAD\r\nAccess-Control-Allow-Headers: X-A\r\nAccess-Control-Max-Age: 600\r\n"
        );
        assert_eq!(r.preflight(b"http://b.example:8080", b"PUT"), None);
        assert_eq!(r.static_headers(), ("Vary", "Origin"));
        let any = parse_rule("*.woff2=*").unwrap();
        assert!(any.any && any.preflight(b"https://x.example", b"HEAD").is_some());
        assert_eq!(any.static_headers(), ("Access-Control-Allow-Origin", "*"));
        assert_eq!(rule_for(&[r, any], "/a/b.woff2"), Some(1));
    }

    #[test]
    fn bad_rules_name_the_flag() {
        for v in [
            "no-equals",
            "/a=",
            "/a=example.com",
            "/a=https://a.example/path",
            "/a=https://a.example;methods=",
            "/a=*;max-age=soon",
            "/a=*;color=red",
            "/a=*;headers=Bad Header",
        ] {
            let e = parse_rule(v).unwrap_err();
            assert!(e.starts_with("--cors "), "{v}: {e}");
        }
    }
}
