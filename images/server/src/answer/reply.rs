//! The response description: what the core decided a request gets (status, the header fields it chose, where
//! the body comes from), before any protocol's framing. HTTP/1.1 writes it as text (http1/frame.rs); an HTTP/2
//! stream writes the same description as HEADERS (+ DATA, http2/respond.rs). Every part borrows from the published table, the
//! request or the worker's scratch: building one allocates nothing.

use crate::answer::stale::Found;
use crate::rules::{self, Captures, Rule};
use crate::site::content::{FileEntry, Variant};

/// One answer to one request.
#[derive(Clone, Copy)]
pub struct Reply<'a> {
    /// The request was under an access rule (guard/): framed with `Cache-Control: private` (a file's own fields
    /// are already private, made so at load), never anything a shared cache may store.
    pub private: bool,
    pub status: u16,
    pub head: Head<'a>,
    /// None for HEAD (the head still says the length a GET would get), 204, 304, 416 and redirects.
    pub body: Body<'a>,
}

/// The header fields of a reply, by kind: each names the precomputed blocks or values its fields come from.
#[derive(Clone, Copy)]
pub enum Head<'a> {
    /// 200 with the whole variant: its precomputed block (length, representation and validator fields), and the
    /// `Access-Control-Allow-Origin` line the file's CORS rule grants this request's Origin.
    File { v: &'a Variant, cors: Option<&'a [u8]> },
    /// 206: `Content-Range: bytes start-(start+len-1)/v.len`, `len` as the length, then the variant's fields.
    Part { v: &'a Variant, start: u64, len: u64, cors: Option<&'a [u8]> },
    /// 304 with the variant's validators.
    NotModified { v: &'a Variant, cors: Option<&'a [u8]> },
    /// 416: `Content-Range: bytes */len`, empty; `Vary: Accept-Encoding` when the file has several encodings.
    Unsatisfiable { len: u64, vary: bool },
    /// A site page (`--error-page`, `--not-found-page`) under an error status: its type and identity length,
    /// `Cache-Control: no-cache`, and `Allow` for a 405.
    Page { e: &'a FileEntry, allow: bool },
    /// The plain-text status body (`text(status)`), and `Allow` for a 405.
    Plain { allow: bool },
    /// The plain-text status body and `Retry-After: after` (seconds): a pool site that has no tree yet or is
    /// refused (503), or past its requests per second (429) (pool/), with 1; a client past its share of the site
    /// (429, answer/limit.rs) with the seconds until its next token.
    Later { after: u32 },
    /// 204 to OPTIONS: `Allow`, the granted preflight's `Access-Control-Allow-Origin` line and
    /// `Access-Control-Allow-*` lines, `Vary: Origin` under a rule with a list of origins.
    Options { granted: Option<(&'a [u8], &'a [u8])>, vary_origin: bool },
    /// A redirect: `Location` (written by `Location::write`), empty body.
    Redirect(Location<'a>),
    /// 401 under an access rule asking for basic authentication (guard/): the plain-text body and
    /// `WWW-Authenticate: challenge`.
    Unauthorized { challenge: &'a str },
    /// 200 from a previous deploy (skew protection, answer/stale.rs): its type and length, `Cache-Control:
    /// private, max-age=60` (skew::CACHE_CONTROL) and `X-Hyperstatic-Deploy: <commit>`.
    Stale(Found<'a>),
}

/// Where the body's bytes come from.
#[derive(Clone, Copy)]
pub enum Body<'a> {
    None,
    /// Static text (the plain status bodies).
    Static(&'static [u8]),
    /// `len` bytes of a variant from `start` (memory or file: the variant's `Body` says which).
    Variant {
        v: &'a Variant,
        start: u64,
        len: u64,
    },
    /// A previous deploy's whole file, opened by the framing (`Found::open`) as a pool's disk file is.
    Stale(Found<'a>),
}

impl Body<'_> {
    /// How many bytes the body sends (0 for `None`).
    #[inline]
    pub fn bytes(&self) -> u64 {
        match self {
            Body::None => 0,
            Body::Static(b) => b.len() as u64,
            Body::Variant { len, .. } => *len,
            Body::Stale(f) => f.len,
        }
    }
}

/// A redirect's Location value, kept as its parts until a framer writes it. Values for a site path never start
/// with `//` or `/\`: a network-path reference that browsers resolve to another host (`GET
/// //evil.example/..%2fdocs` normalises to the directory `/docs`, whose slash redirect would otherwise say
/// `//evil.example/..%2fdocs/`). Extra leading slashes and backslashes are dropped, leaving a path on this site
/// that normalises to the same place.
#[derive(Clone, Copy)]
pub enum Location<'a> {
    /// A directory named without its trailing slash: the raw (still percent-encoded, printable ASCII) path and
    /// `/`, then `?` and the query when the request had one (even empty). Decoded bytes never reach a header.
    Slash { path: &'a [u8], query: Option<&'a [u8]> },
    /// A clean URL's canonical form (percent-encoded at load), then a non-empty query.
    Moved { to: &'a [u8], query: Option<&'a [u8]> },
    /// A `_redirects`/`--redirect` rule's target with the captures of `path` filled in, then the query.
    Rule { rule: &'a Rule, path: &'a [u8], caps: Captures, query: Option<&'a [u8]> },
    /// `--https-redirect`: `https://host[:port]` (the port left out when 443), the path and query as sent.
    Https { host: &'a [u8], port: u16, path: &'a [u8], query: Option<&'a [u8]> },
    /// To a single sign-on login (guard/session.rs): the site's `access.sso.loginURL`, then `rd=` (after `?`, or
    /// `&` when the URL has a query) with the path and query as sent, percent-encoded as one query value: the
    /// page the agent sends the user back to once signed in.
    SignIn { login: &'a str, path: &'a [u8], query: Option<&'a [u8]> },
}

/// Drops the extra leading slashes/backslashes of a site-relative value as its pieces go by (see `Location`).
struct OnSite<F> {
    put: F,
    /// 0: nothing seen yet; 1: the leading `/` written, dropping `/` and `\`; 2: passing bytes through.
    state: u8,
}

impl<F: FnMut(&[u8])> OnSite<F> {
    fn put(&mut self, mut b: &[u8]) {
        loop {
            match self.state {
                0 => match b.first() {
                    None => return,
                    Some(b'/') => {
                        (self.put)(&b[..1]);
                        b = &b[1..];
                        self.state = 1;
                    }
                    Some(_) => self.state = 2,
                },
                1 => {
                    let n = b.iter().take_while(|&&c| c == b'/' || c == b'\\').count();
                    b = &b[n..];
                    if b.is_empty() {
                        return;
                    }
                    self.state = 2;
                }
                _ => {
                    if !b.is_empty() {
                        (self.put)(b);
                    }
                    return;
                }
            }
        }
    }
}

impl Location<'_> {
    /// Writes the value in pieces to `put` (no allocation: the caller's sink decides where the bytes go).
    pub fn write(&self, put: &mut impl FnMut(&[u8])) {
        match *self {
            Location::Slash { path, query } => {
                let mut s = OnSite { put: &mut *put, state: 0 };
                s.put(path);
                s.put(b"/");
                if let Some(q) = query {
                    put(b"?");
                    put(q);
                }
            }
            Location::Moved { to, query } => {
                OnSite { put: &mut *put, state: 0 }.put(to);
                if let Some(q) = query.filter(|q| !q.is_empty()) {
                    put(b"?");
                    put(q);
                }
            }
            Location::Rule { rule, path, caps, query } => {
                // `/:splat` with a splat of `/evil.example` (from `/x//evil.example`) must not become `//evil...`.
                let mut s = OnSite { put: &mut *put, state: 0 };
                rules::write_location(&mut |b: &[u8]| s.put(b), rule, path, &caps, query);
            }
            Location::Https { host, port, path, query } => {
                put(b"https://");
                put(host);
                if port != 443 {
                    let mut tmp = [0u8; 6];
                    put(decimal(port as u64, &mut tmp));
                }
                put(if path.starts_with(b"/") { path } else { b"/" });
                if let Some(q) = query {
                    put(b"?");
                    put(q);
                }
            }
            Location::SignIn { login, path, query } => {
                put(login.as_bytes());
                put(if login.contains('?') { b"&rd=" } else { b"?rd=" });
                query_value(put, path);
                if let Some(q) = query {
                    query_value(put, b"?");
                    query_value(put, q);
                }
            }
        }
    }
}

/// `b` as part of a query value: unreserved bytes and `/` as themselves, every other byte `%XX`.
fn query_value(put: &mut impl FnMut(&[u8]), b: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let keep = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'/');
    let mut rest = b;
    while !rest.is_empty() {
        let n = rest.iter().take_while(|&&c| keep(c)).count();
        if n > 0 {
            put(&rest[..n]);
        }
        if let Some(&c) = rest.get(n) {
            put(&[b'%', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]);
            rest = &rest[n + 1..];
        } else {
            rest = &[];
        }
    }
}

/// `:` and `port` in decimal, in `tmp`.
fn decimal(port: u64, tmp: &mut [u8; 6]) -> &[u8] {
    let (mut i, mut n) = (tmp.len(), port);
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    i -= 1;
    tmp[i] = b':';
    &tmp[i..]
}

/// The status codes the server answers with: the reason phrase (HTTP/1.1's status line, the admin port) and the
/// plain-text body (`NNN Reason\n`) of the errors without a site page, from one list.
macro_rules! statuses {
    ($($code:literal $reason:literal,)*) => {
        /// The reason phrase of `status` ("Unknown" for a code the server never sends).
        pub fn reason(status: u16) -> &'static str {
            match status {
                $($code => $reason,)*
                _ => "Unknown",
            }
        }
        /// The plain-text body for `status`: `NNN Reason\n`.
        pub fn text(status: u16) -> &'static [u8] {
            match status {
                $($code => concat!($code, " ", $reason, "\n").as_bytes(),)*
                _ => b"Unknown\n",
            }
        }
    };
}

statuses! {
    200 "OK",
    204 "No Content",
    206 "Partial Content",
    301 "Moved Permanently",
    302 "Found",
    307 "Temporary Redirect",
    308 "Permanent Redirect",
    304 "Not Modified",
    400 "Bad Request",
    401 "Unauthorized",
    403 "Forbidden",
    404 "Not Found",
    405 "Method Not Allowed",
    408 "Request Timeout",
    412 "Precondition Failed",
    414 "URI Too Long",
    416 "Range Not Satisfiable",
    425 "Too Early",
    429 "Too Many Requests",
    431 "Request Header Fields Too Large",
    501 "Not Implemented",
    503 "Service Unavailable",
    505 "HTTP Version Not Supported",
}

impl<'a> Reply<'a> {
    /// A plain-text status answer (`NNN Reason\n`), with `Allow` for a 405; no body for HEAD.
    pub fn plain(status: u16, allow: bool, head: bool) -> Reply<'a> {
        let body = if head { Body::None } else { Body::Static(text(status)) };
        Reply { private: false, status, head: Head::Plain { allow }, body }
    }

    /// `status` (503 or 429) with `Retry-After: 1` and the plain-text body; no body for HEAD.
    pub fn later(status: u16, head: bool) -> Reply<'a> {
        Reply::retry_after(status, 1, head)
    }

    /// `status` with `Retry-After: after` (seconds) and the plain-text body; no body for HEAD.
    pub fn retry_after(status: u16, after: u32, head: bool) -> Reply<'a> {
        let body = if head { Body::None } else { Body::Static(text(status)) };
        Reply { private: false, status, head: Head::Later { after }, body }
    }

    /// 401 with `WWW-Authenticate: challenge`, private; no body for HEAD.
    pub fn unauthorized(challenge: &'a str, head: bool) -> Reply<'a> {
        let body = if head { Body::None } else { Body::Static(text(401)) };
        Reply { private: true, status: 401, head: Head::Unauthorized { challenge }, body }
    }

    /// 200 with a previous deploy's file (answer/stale.rs); no body for HEAD.
    pub fn stale(f: Found<'a>, head: bool) -> Reply<'a> {
        let body = if head { Body::None } else { Body::Stale(f) };
        Reply { private: false, status: 200, head: Head::Stale(f), body }
    }

    /// A redirect with `status` to `to`.
    pub fn redirect(status: u16, to: Location<'a>) -> Reply<'a> {
        Reply { private: false, status, head: Head::Redirect(to), body: Body::None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(l: Location) -> String {
        let mut v = Vec::new();
        l.write(&mut |b: &[u8]| v.extend_from_slice(b));
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn locations_stay_on_site_and_keep_the_query() {
        let slash = |path, query| written(Location::Slash { path, query });
        assert_eq!(slash(b"/docs", Some(&b"a=1"[..])), "/docs/?a=1");
        assert_eq!(slash(b"//evil.example/..%2fdocs", None), "/evil.example/..%2fdocs/");
        assert_eq!(slash(b"/\\/\\x", Some(&b""[..])), "/x/?", "an empty query keeps its `?`");
        let moved = |to, query| written(Location::Moved { to, query });
        assert_eq!(moved(b"/about", Some(&b""[..])), "/about", "an empty query is left out");
        assert_eq!(moved(b"///about", Some(&b"x"[..])), "/about?x");
        let https = |port, path| written(Location::Https { host: b"site.test", port, path, query: None });
        assert_eq!(https(443, &b"/a"[..]), "https://site.test/a");
        assert_eq!(https(8443, &b"*"[..]), "https://site.test:8443/");
        assert_eq!(https(1, &b"/"[..]), "https://site.test:1/");
        assert_eq!(https(65535, &b"/"[..]), "https://site.test:65535/");
        let sign_in = |login, path, query| written(Location::SignIn { login, path, query });
        assert_eq!(
            sign_in("/.sso/login", b"/docs/a%20b", Some(&b"x=1&y"[..])),
            "/.sso/login?rd=/docs/a%2520b%3Fx%3D1%26y"
        );
        assert_eq!(sign_in("https://h.test:8444/login?s=1", b"/", None), "https://h.test:8444/login?s=1&rd=/");
    }

    #[test]
    fn every_status_has_its_text() {
        for s in [
            200, 204, 206, 301, 302, 304, 307, 308, 400, 401, 403, 404, 405, 408, 412, 414, 416, 429, 431, 501, 503,
            505,
        ] {
            assert_eq!(text(s), format!("{s} {}\n", reason(s)).as_bytes());
        }
    }
}
