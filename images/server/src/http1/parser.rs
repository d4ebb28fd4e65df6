//! Strict, zero-copy HTTP/1.1 request-head parser (RFC 9112). It borrows from the read buffer and never
//! allocates; the result names the few header fields a static server acts on.
//!
//! Hand-written rather than httparse because it is faster on our workloads: `cargo bench --bench parser`
//! (benches/parser.rs) runs both doing the same job; the measured runs are in docs/bench/server-alone.md
//! ("Request-head parser against httparse"). Two details carry the browser case there: header names are checked
//! through a 256-byte table, and targets and values are checked without early exit so the loops vectorise.

/// Longest request line accepted; longer gets 414.
pub const MAX_REQUEST_LINE: usize = 8 * 1024;
/// Longest header section accepted (after the request line); longer gets 431.
pub const MAX_HEADER_SECTION: usize = 16 * 1024;
/// Longest method token; a longer one gets 501 without waiting for the rest of the line.
pub const MAX_METHOD: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    /// Answered with `Allow` (and CORS preflights) by respond.rs; its target may be `*` (asterisk-form).
    Options,
    /// A method this server knows but does not allow (405).
    Other,
    /// Unknown method (501).
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// 400 — malformed syntax, missing/duplicate Host, bad Content-Length, CL with TE, obs-fold, ...
    BadRequest,
    /// 414 — request line over MAX_REQUEST_LINE.
    UriTooLong,
    /// 431 — header section over MAX_HEADER_SECTION.
    HeadersTooLarge,
    /// 501 — method token too long (unknown methods parse fine and are reported by `Method::Unknown`).
    NotImplemented,
    /// 505 — HTTP major version other than 1.
    VersionNotSupported,
}

/// One parsed request head. Every slice borrows from the buffer given to `parse`.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub method: Method,
    pub method_raw: &'a [u8],
    /// The whole request-target as sent.
    pub target: &'a [u8],
    /// The path of the target (origin-form, or the path of an absolute-form target), without the query.
    pub path: &'a [u8],
    /// The query string without `?`, when present.
    pub query: Option<&'a [u8]>,
    pub version: Version,
    pub host: Option<&'a [u8]>,
    /// `Connection: close` was sent.
    pub conn_close: bool,
    /// `Connection: keep-alive` was sent.
    pub conn_keep_alive: bool,
    pub content_length: Option<u64>,
    pub transfer_encoding: bool,
    pub if_none_match: Option<&'a [u8]>,
    pub if_modified_since: Option<&'a [u8]>,
    pub if_match: Option<&'a [u8]>,
    pub if_unmodified_since: Option<&'a [u8]>,
    pub range: Option<&'a [u8]>,
    pub if_range: Option<&'a [u8]>,
    pub accept_encoding: Option<&'a [u8]>,
    /// CORS (cors.rs): the requesting origin, and a preflight's intended method.
    pub origin: Option<&'a [u8]>,
    pub access_control_request_method: Option<&'a [u8]>,
    /// For the SPA fallback's navigation test (rules/navigation.rs).
    pub accept: Option<&'a [u8]>,
    /// For skew protection (answer/stale.rs): a navigation is never answered from a previous deploy.
    pub sec_fetch_dest: Option<&'a [u8]>,
    pub user_agent: Option<&'a [u8]>,
    /// For a path under a basic-auth rule (guard/): the first `Authorization` line.
    pub authorization: Option<&'a [u8]>,
    /// For a path under a sign-in rule (guard/session.rs): the `hs_session` cookie of the first `Cookie` line
    /// that has one.
    pub session: Option<&'a [u8]>,
    /// The last `X-Forwarded-For` line (the nearest proxy's), read only from a trusted proxy
    /// (guard/forwarded.rs).
    pub forwarded_for: Option<&'a [u8]>,
}

impl<'a> Request<'a> {
    /// A request with its request line parsed and no header fields yet. The target of a GET or HEAD must be
    /// origin-form or absolute-form (anything else is 400); other methods are answered before the path matters.
    pub fn new(method_raw: &'a [u8], target: &'a [u8], version: Version) -> Result<Request<'a>, ParseError> {
        let method = classify_method(method_raw);
        let mut req = Request {
            method,
            method_raw,
            target,
            path: b"/",
            query: None,
            version,
            host: None,
            conn_close: false,
            conn_keep_alive: false,
            content_length: None,
            transfer_encoding: false,
            if_none_match: None,
            if_modified_since: None,
            if_match: None,
            if_unmodified_since: None,
            range: None,
            if_range: None,
            accept_encoding: None,
            origin: None,
            access_control_request_method: None,
            accept: None,
            sec_fetch_dest: None,
            user_agent: None,
            authorization: None,
            session: None,
            forwarded_for: None,
        };
        if method == Method::Options && target == b"*" {
            req.path = b"*";
        } else if matches!(method, Method::Get | Method::Head | Method::Options) {
            let (path, query) = split_target(target).ok_or(ParseError::BadRequest)?;
            req.path = path;
            req.query = query;
        }
        Ok(req)
    }

    /// Takes in one header field: `name` is a valid token, `value` has its surrounding whitespace trimmed and no
    /// control characters. Rejects a second Host and conflicting Content-Lengths.
    pub fn apply_field(&mut self, name: &[u8], value: &'a [u8]) -> Result<(), ParseError> {
        match name.len() {
            4 if name.eq_ignore_ascii_case(b"host") => {
                if self.host.is_some() {
                    return Err(ParseError::BadRequest);
                }
                self.host = Some(value);
            }
            5 if name.eq_ignore_ascii_case(b"range") => {
                self.range.get_or_insert(value);
            }
            6 if name.eq_ignore_ascii_case(b"origin") => {
                self.origin.get_or_insert(value);
            }
            6 if name.eq_ignore_ascii_case(b"accept") => {
                self.accept.get_or_insert(value);
            }
            8 if name.eq_ignore_ascii_case(b"if-match") => {
                self.if_match.get_or_insert(value);
            }
            8 if name.eq_ignore_ascii_case(b"if-range") => {
                self.if_range.get_or_insert(value);
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for tok in value.split(|&b| b == b',') {
                    let tok = trim_ows(tok);
                    if tok.eq_ignore_ascii_case(b"close") {
                        self.conn_close = true;
                    } else if tok.eq_ignore_ascii_case(b"keep-alive") {
                        self.conn_keep_alive = true;
                    }
                }
            }
            10 if name.eq_ignore_ascii_case(b"user-agent") => {
                self.user_agent.get_or_insert(value);
            }
            13 if name.eq_ignore_ascii_case(b"if-none-match") => {
                self.if_none_match.get_or_insert(value);
            }
            14 if name.eq_ignore_ascii_case(b"sec-fetch-dest") => {
                self.sec_fetch_dest.get_or_insert(value);
            }
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                let n = parse_content_length(value)?;
                if self.content_length.is_some_and(|old| old != n) {
                    return Err(ParseError::BadRequest);
                }
                self.content_length = Some(n);
            }
            15 if name.eq_ignore_ascii_case(b"accept-encoding") => {
                self.accept_encoding.get_or_insert(value);
            }
            17 if name.eq_ignore_ascii_case(b"if-modified-since") => {
                self.if_modified_since.get_or_insert(value);
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                self.transfer_encoding = true;
            }
            19 if name.eq_ignore_ascii_case(b"if-unmodified-since") => {
                self.if_unmodified_since.get_or_insert(value);
            }
            6 if self.session.is_none() && name.eq_ignore_ascii_case(b"cookie") => {
                self.session = crate::guard::session::from_cookie_header(value);
            }
            13 if name.eq_ignore_ascii_case(b"authorization") => {
                self.authorization.get_or_insert(value);
            }
            15 if name.eq_ignore_ascii_case(b"x-forwarded-for") => {
                self.forwarded_for = Some(value);
            }
            29 if name.eq_ignore_ascii_case(b"access-control-request-method") => {
                self.access_control_request_method.get_or_insert(value);
            }
            _ => {}
        }
        Ok(())
    }

    /// The checks that need the whole header section: Content-Length with Transfer-Encoding, Host on HTTP/1.1.
    pub fn finish(&self) -> Result<(), ParseError> {
        if self.transfer_encoding && self.content_length.is_some() {
            return Err(ParseError::BadRequest);
        }
        if self.host.is_none() && self.version == Version::Http11 {
            return Err(ParseError::BadRequest);
        }
        Ok(())
    }

    /// Whether the connection may stay open after this request (before server-side limits apply).
    pub fn keep_alive(&self) -> bool {
        if self.conn_close {
            return false;
        }
        match self.version {
            Version::Http11 => true,
            Version::Http10 => self.conn_keep_alive,
        }
    }

    /// Whether the request carries a body the server would have to skip.
    pub fn has_body(&self) -> bool {
        self.transfer_encoding || self.content_length.unwrap_or(0) > 0
    }
}

#[derive(Debug)]
// Boxing the request would cost an allocation per request; a `Parsed` lives on the stack for one parse.
#[allow(clippy::large_enum_variant)]
pub enum Parsed<'a> {
    /// A complete head and the number of bytes it used (leading empty lines included).
    Complete(Request<'a>, usize),
    /// More bytes are needed.
    Partial,
}

/// RFC 9110 token characters as a table: one load per byte of every method and header name.
static TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = matches!(i as u8,
            b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~'
            | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z');
        i += 1;
    }
    t
};

#[inline]
fn is_tchar(b: u8) -> bool {
    TCHAR[b as usize]
}

// The two byte checks below have no early exit so that they compile to SIMD: targets and field values
// (User-Agent, Accept, cookies) are most of a browser's head.

/// A request-target is visible ASCII only (0x21..=0x7e).
#[inline]
fn target_ok(t: &[u8]) -> bool {
    t.iter().fold(true, |ok, &b| ok & (b.wrapping_sub(0x21) < 0x5e))
}

/// A field value may hold HTAB, SP, visible ASCII and obs-text (0x80..), but no other control byte and no DEL.
#[inline]
fn value_ok(v: &[u8]) -> bool {
    v.iter().fold(true, |ok, &b| ok & ((b >= 0x20) | (b == b'\t')) & (b != 0x7f))
}

use crate::sys::mem::memchr as find;

fn classify_method(m: &[u8]) -> Method {
    match m {
        b"GET" => Method::Get,
        b"HEAD" => Method::Head,
        b"OPTIONS" => Method::Options,
        b"POST" | b"PUT" | b"DELETE" | b"CONNECT" | b"TRACE" | b"PATCH" => Method::Other,
        _ => Method::Unknown,
    }
}

fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

fn parse_content_length(v: &[u8]) -> Result<u64, ParseError> {
    if v.is_empty() || v.len() > 18 {
        return Err(ParseError::BadRequest);
    }
    let mut n: u64 = 0;
    for &b in v {
        if !b.is_ascii_digit() {
            return Err(ParseError::BadRequest);
        }
        n = n * 10 + (b - b'0') as u64;
    }
    Ok(n)
}

/// Splits the target into (path, query), handling origin-form and absolute-form.
pub(crate) fn split_target(target: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let rest = if target.first() == Some(&b'/') {
        target
    } else {
        let scheme_len = if target.len() >= 7 && target[..7].eq_ignore_ascii_case(b"http://") {
            7
        } else if target.len() >= 8 && target[..8].eq_ignore_ascii_case(b"https://") {
            8
        } else {
            return None;
        };
        let after = &target[scheme_len..];
        let end = after.iter().position(|&b| b == b'/' || b == b'?' || b == b'#').unwrap_or(after.len());
        if end == 0 {
            return None; // no authority
        }
        let p = &after[end..];
        if p.is_empty() {
            return Some((b"/", None));
        }
        if p[0] != b'/' {
            // "http://host?q" — path is "/"
            let q = p.strip_prefix(b"?");
            return Some((b"/", q));
        }
        p
    };
    // A fragment is never sent by conforming clients; treat '#' as the end of the target.
    let rest = match find(rest, b'#') {
        Some(i) => &rest[..i],
        None => rest,
    };
    match find(rest, b'?') {
        Some(i) => Some((&rest[..i], Some(&rest[i + 1..]))),
        None => Some((rest, None)),
    }
}

/// Parses one request head from the start of `buf`.
pub fn parse(buf: &[u8]) -> Result<Parsed<'_>, ParseError> {
    // RFC 9112 §2.2: ignore empty lines before the request line.
    let mut p = 0;
    while p < buf.len() && (buf[p] == b'\r' || buf[p] == b'\n') {
        p += 1;
        if p > 8 {
            break;
        }
    }
    let start = p;
    // Method token.
    let mut m = start;
    while m < buf.len() && is_tchar(buf[m]) {
        m += 1;
        if m - start > MAX_METHOD {
            return Err(ParseError::NotImplemented);
        }
    }
    if m == buf.len() {
        return Ok(Parsed::Partial);
    }
    if buf[m] != b' ' || m == start {
        return Err(ParseError::BadRequest);
    }
    let method_raw = &buf[start..m];
    // Request line end.
    let line_limit = (start + MAX_REQUEST_LINE).min(buf.len());
    let nl = match find(&buf[m..line_limit], b'\n') {
        Some(i) => m + i,
        None => {
            return if buf.len() - start >= MAX_REQUEST_LINE {
                Err(ParseError::UriTooLong)
            } else {
                Ok(Parsed::Partial)
            }
        }
    };
    let line_end = if nl > m && buf[nl - 1] == b'\r' { nl - 1 } else { nl };
    let rest = &buf[m + 1..line_end];
    // target SP version
    let sp = find(rest, b' ').ok_or(ParseError::BadRequest)?;
    let target = &rest[..sp];
    let version_raw = &rest[sp + 1..];
    if target.is_empty() || !target_ok(target) {
        return Err(ParseError::BadRequest);
    }
    let version = match version_raw {
        b"HTTP/1.1" => Version::Http11,
        b"HTTP/1.0" => Version::Http10,
        [b'H', b'T', b'T', b'P', b'/', maj, b'.', min] if maj.is_ascii_digit() && min.is_ascii_digit() => {
            if *maj != b'1' {
                return Err(ParseError::VersionNotSupported);
            }
            Version::Http11 // 1.x with x > 1: answer as 1.1
        }
        _ => return Err(ParseError::BadRequest),
    };
    let mut req = Request::new(method_raw, target, version)?;

    // Header fields.
    let hstart = nl + 1;
    let hlimit = (hstart + MAX_HEADER_SECTION).min(buf.len());
    let mut hp = hstart;
    loop {
        let e = match find(&buf[hp..hlimit], b'\n') {
            Some(i) => hp + i,
            None => {
                return if buf.len() - hstart >= MAX_HEADER_SECTION {
                    Err(ParseError::HeadersTooLarge)
                } else {
                    Ok(Parsed::Partial)
                }
            }
        };
        let line = if e > hp && buf[e - 1] == b'\r' { &buf[hp..e - 1] } else { &buf[hp..e] };
        hp = e + 1;
        if line.is_empty() {
            break;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            return Err(ParseError::BadRequest); // obs-fold
        }
        let colon = match line.iter().position(|&b| !is_tchar(b)) {
            Some(i) if line[i] == b':' && i > 0 => i,
            _ => return Err(ParseError::BadRequest), // whitespace before colon, bad name, no colon
        };
        let value = trim_ows(&line[colon + 1..]);
        if !value_ok(value) {
            return Err(ParseError::BadRequest);
        }
        req.apply_field(&line[..colon], value)?;
    }
    req.finish()?;
    Ok(Parsed::Complete(req, hp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(s: &str) -> (Request<'_>, usize) {
        match parse(s.as_bytes()) {
            Ok(Parsed::Complete(r, n)) => (r, n),
            other => panic!("expected complete, got {:?}", other.map(|_| ())),
        }
    }

    fn err(s: &[u8]) -> ParseError {
        match parse(s) {
            Err(e) => e,
            Ok(p) => panic!("expected error, got {:?}", matches!(p, Parsed::Partial)),
        }
    }

    #[test]
    fn simple_get() {
        let s = "GET /index.html?x=1 HTTP/1.1\r\nHost: a\r\nAccept-Encoding: br, gzip\r\n\r\nGET";
        let (r, n) = complete(s);
        assert_eq!(n, s.len() - 3);
        assert_eq!(r.method, Method::Get);
        assert_eq!(r.path, b"/index.html");
        assert_eq!(r.query, Some(&b"x=1"[..]));
        assert_eq!(r.host, Some(&b"a"[..]));
        assert_eq!(r.accept_encoding, Some(&b"br, gzip"[..]));
        assert!(r.keep_alive());
    }

    #[test]
    fn partial_heads_ask_for_more() {
        for s in ["", "GE", "GET / HTTP/1.1", "GET / HTTP/1.1\r\nHost: a\r\n", "GET / HTTP/1.1\r\nHost: a\r\n\r"] {
            assert!(matches!(parse(s.as_bytes()), Ok(Parsed::Partial)), "{s:?}");
        }
    }

    #[test]
    fn bare_lf_and_leading_empty_lines_are_accepted() {
        let (r, n) = complete("\r\nGET / HTTP/1.1\nHost: a\n\n");
        assert_eq!(r.path, b"/");
        assert_eq!(n, 26);
    }

    #[test]
    fn http10_keep_alive_rules() {
        let (r, _) = complete("GET / HTTP/1.0\r\n\r\n");
        assert!(!r.keep_alive());
        let (r, _) = complete("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
        assert!(r.keep_alive());
        let (r, _) = complete("GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n");
        assert!(!r.keep_alive());
    }

    #[test]
    fn absolute_form() {
        let (r, _) = complete("GET http://example.com/a/b?q HTTP/1.1\r\nHost: example.com\r\n\r\n");
        assert_eq!(r.path, b"/a/b");
        assert_eq!(r.query, Some(&b"q"[..]));
        let (r, _) = complete("GET HTTPS://example.com HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(r.path, b"/");
        assert_eq!(err(b"GET example.com/a HTTP/1.1\r\nHost: x\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET * HTTP/1.1\r\nHost: x\r\n\r\n"), ParseError::BadRequest);
    }

    #[test]
    fn host_rules() {
        assert_eq!(err(b"GET / HTTP/1.1\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n"), ParseError::BadRequest);
        complete("GET / HTTP/1.0\r\n\r\n");
    }

    #[test]
    fn framing_errors() {
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost : a\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(
            err(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            ParseError::BadRequest
        );
        assert_eq!(
            err(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            ParseError::BadRequest
        );
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1 \r\nHost: a\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET / FOO/1.1\r\nHost: a\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET /\xff HTTP/1.1\r\nHost: a\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET / HTTP/2.0\r\nHost: a\r\n\r\n"), ParseError::VersionNotSupported);
    }

    #[test]
    fn field_value_bytes() {
        let (r, _) = complete("GET / HTTP/1.1\r\nHost: a\r\nUser-Agent: gr\u{fc}\u{df}e\tx\r\n\r\n");
        assert_eq!(r.user_agent, Some("grüße\tx".as_bytes()), "obs-text and HTAB are allowed");
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nX-A: a\x7fb\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nX-A: a\x00b\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n"), ParseError::BadRequest);
        assert_eq!(err(b"GET / HTTP/1.1\r\nHost: a\r\nX\x80: a\r\n\r\n"), ParseError::BadRequest);
        complete("GET /~a!$&'()*+,;=:@-._%20 HTTP/1.1\r\nHost: a\r\n\r\n");
    }

    #[test]
    fn equal_duplicate_content_length_is_fine() {
        let (r, _) = complete("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\ncontent-length: 0\r\n\r\n");
        assert_eq!(r.content_length, Some(0));
        assert!(!r.has_body());
    }

    #[test]
    fn methods() {
        let (r, _) = complete("POST / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(r.method, Method::Other);
        let (r, _) = complete("BREW / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(r.method, Method::Unknown);
        let (r, _) = complete("get / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(r.method, Method::Unknown, "methods are case-sensitive");
        let (r, _) = complete("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!((r.method, r.path), (Method::Options, &b"*"[..]));
        let (r, _) = complete(
            "OPTIONS /f.woff2?v=1 HTTP/1.1\r\nHost: a\r\nOrigin: https://a.example\r\nAccess-Control-Request-Method: GET\r\n\r\n",
        );
        assert_eq!((r.path, r.query), (&b"/f.woff2"[..], Some(&b"v=1"[..])));
        assert_eq!(r.origin, Some(&b"https://a.example"[..]));
        assert_eq!(r.access_control_request_method, Some(&b"GET"[..]));
        assert_eq!(err(b"GET * HTTP/1.1\r\nHost: a\r\n\r\n"), ParseError::BadRequest, "asterisk-form is OPTIONS only");
        let long = "A".repeat(40);
        assert_eq!(err(long.as_bytes()), ParseError::NotImplemented);
    }

    #[test]
    fn limits() {
        let mut s = b"GET /".to_vec();
        s.extend(std::iter::repeat_n(b'a', MAX_REQUEST_LINE));
        assert_eq!(err(&s), ParseError::UriTooLong);
        let mut s = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
        while s.len() < MAX_HEADER_SECTION + 100 {
            s.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        }
        assert_eq!(err(&s), ParseError::HeadersTooLarge);
    }
}
