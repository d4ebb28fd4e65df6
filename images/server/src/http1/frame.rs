//! A response description (answer/reply.rs) framed as HTTP/1.1 bytes in the batch `Out`: the status line, the
//! fields the description names (copied from precomputed blocks), `Date`, `Connection` when it must be said,
//! and the body (copied, referenced in table memory, or sent from a file). The framing decides nothing about
//! the answer; only the connection's fate (`close`, HTTP/1.0 keep-alive) is HTTP/1.1's own.

use crate::answer::reply::{self, Body, Head, Reply};
use crate::http1::out::Out;
use crate::site::content;
use std::os::fd::AsRawFd;

/// Per-response facts the worker needs: status for metrics/logs, whether to close, bytes queued.
#[derive(Debug, Clone, Copy)]
pub struct Resp {
    pub status: u16,
    pub close: bool,
    /// Head and body (hyperstatic_response_bytes_total).
    pub bytes: u64,
    /// Body only (the access log's `bytes`).
    pub body: u64,
}

/// How the head ends: the `Date` line (with HSTS after it on HTTPS), and what the connection does next.
#[derive(Clone, Copy)]
pub struct Conn<'a> {
    /// `Date: ...\r\n`
    pub date_line: &'a [u8],
    /// `Connection: close` (the last response on this connection).
    pub close: bool,
    /// An HTTP/1.0 request that stays open: `Connection: keep-alive`.
    pub v10: bool,
}

/// The methods every path allows (405 and OPTIONS say so).
const ALLOW: &[u8] = b"Allow: GET, HEAD, OPTIONS\r\n";

fn status_line(out: &mut Out, status: u16) {
    let text = reply::text(status);
    if text.first().is_some_and(u8::is_ascii_digit) {
        // `NNN Reason\n` is the status line's tail without its line end.
        out.bytes(b"HTTP/1.1 ");
        out.bytes(&text[..text.len() - 1]);
    } else {
        out.bytes(b"HTTP/1.1 ");
        out.num(status as u64);
        out.bytes(b" Unknown");
    }
    out.bytes(b"\r\n");
}

fn end_head(out: &mut Out, c: Conn) {
    out.bytes(c.date_line);
    if c.close {
        out.bytes(b"Connection: close\r\n");
    } else if c.v10 {
        out.bytes(b"Connection: keep-alive\r\n");
    }
    out.bytes(b"\r\n");
}

fn length(out: &mut Out, n: u64) {
    out.bytes(b"Content-Length: ");
    out.num(n);
    out.bytes(b"\r\n");
}

/// Appends `r` to `out` as HTTP/1.1.
#[inline]
pub fn frame(out: &mut Out, r: &Reply, c: Conn) -> Resp {
    // A pool's disk body is opened now, before any of the head is written: a file that is gone or changed since
    // its load gets 503 instead of a head whose length would lie. The batch keeps the file until it is sent.
    let mut opened = None;
    if let Body::Variant { v, .. } = r.body {
        if let content::Body::Path(p) = &v.body {
            match p.open() {
                Some(f) => opened = Some(f),
                None => return frame(out, &Reply::later(503, false), c),
            }
        }
    }
    // A previous deploy's file (skew protection) likewise.
    if let Body::Stale(f) = r.body {
        match f.open() {
            Some(f) => opened = Some(f),
            None => return frame(out, &Reply::later(503, false), c),
        }
    }
    let response_start = out.buf.len();
    let mut cors = None;
    match r.head {
        Head::File { v, cors: line } => {
            // Status line, length and fields in one precomputed block.
            out.bytes(&v.head_200);
            cors = line;
        }
        Head::Part { v, start: s, len: n, cors: line } => {
            status_line(out, r.status);
            out.bytes(b"Content-Range: bytes ");
            out.num(s);
            out.bytes(b"-");
            out.num(s + n - 1);
            out.bytes(b"/");
            out.num(v.len);
            out.bytes(b"\r\n");
            length(out, n);
            out.bytes(&v.fields);
            cors = line;
        }
        Head::NotModified { v, cors: line } => {
            status_line(out, r.status);
            out.bytes(&v.fields_304);
            cors = line;
        }
        Head::Unsatisfiable { len, vary } => {
            status_line(out, r.status);
            out.bytes(b"Content-Range: bytes */");
            out.num(len);
            out.bytes(b"\r\n");
            length(out, 0);
            if vary {
                out.bytes(b"Vary: Accept-Encoding\r\n");
            }
        }
        Head::Page { e, allow } => {
            status_line(out, r.status);
            out.bytes(b"Content-Type: ");
            out.bytes(e.mime.as_bytes());
            out.bytes(b"\r\n");
            length(out, e.identity().len);
            out.bytes(if r.private { b"Cache-Control: private, no-cache\r\n" } else { b"Cache-Control: no-cache\r\n" });
            if allow {
                out.bytes(ALLOW);
            }
        }
        Head::Plain { allow } => {
            status_line(out, r.status);
            out.bytes(b"Content-Type: text/plain; charset=utf-8\r\n");
            length(out, reply::text(r.status).len() as u64);
            if allow {
                out.bytes(ALLOW);
            }
        }
        Head::Later { after } => {
            status_line(out, r.status);
            out.bytes(b"Content-Type: text/plain; charset=utf-8\r\n");
            length(out, reply::text(r.status).len() as u64);
            out.bytes(b"Retry-After: ");
            out.num(after as u64);
            out.bytes(b"\r\n");
        }
        Head::Options { granted, vary_origin } => {
            status_line(out, r.status);
            out.bytes(ALLOW);
            if let Some((origin_line, lines)) = granted {
                out.bytes(origin_line);
                out.bytes(lines);
            }
            if vary_origin {
                out.bytes(b"Vary: Origin\r\n");
            }
        }
        Head::Redirect(to) => {
            status_line(out, r.status);
            out.bytes(b"Location: ");
            to.write(&mut |b: &[u8]| out.bytes(b));
            out.bytes(b"\r\n");
            length(out, 0);
        }
        Head::Unauthorized { challenge } => {
            status_line(out, r.status);
            out.bytes(b"Content-Type: text/plain; charset=utf-8\r\n");
            length(out, reply::text(r.status).len() as u64);
            out.bytes(b"WWW-Authenticate: ");
            out.bytes(challenge.as_bytes());
            out.bytes(b"\r\n");
        }
        Head::Stale(f) => {
            status_line(out, r.status);
            out.bytes(b"Content-Type: ");
            out.bytes(f.mime.as_bytes());
            out.bytes(if f.text { b"; charset=utf-8\r\n" } else { b"\r\n" });
            length(out, f.len);
            out.bytes(b"Cache-Control: ");
            out.bytes(crate::skew::CACHE_CONTROL.as_bytes());
            out.bytes(b"\r\nX-Hyperstatic-Deploy: ");
            out.bytes(f.tree.commit.as_bytes());
            out.bytes(b"\r\n");
        }
    }
    // A protected path's answers that carry no Cache-Control of their own (a file's fields and a page's line
    // have theirs, private already).
    if r.private
        && !matches!(
            r.head,
            Head::File { .. } | Head::Part { .. } | Head::NotModified { .. } | Head::Page { .. } | Head::Stale(_)
        )
    {
        out.bytes(b"Cache-Control: private\r\n");
    }
    if let Some(line) = cors {
        out.bytes(line);
    }
    end_head(out, c);
    let head = (out.buf.len() - response_start) as u64;
    match r.body {
        Body::None => {}
        Body::Static(b) => out.bytes(b),
        Body::Variant { v, start, len } => match &v.body {
            content::Body::Mem(b) => out.body(&b[start as usize..(start + len) as usize]),
            content::Body::Disk(f) => out.file(f.as_raw_fd(), start, len),
            content::Body::Path(_) => {} // the file opened above, below
        },
        Body::Stale(_) => {} // likewise
    }
    // A pool's disk body or a previous deploy's file, opened above: a small one is copied beside its head
    // (`Out::own_file`). A file that shrank since the check at its open leaves nothing behind and gets the 503
    // that check would have given.
    if let Some(f) = opened {
        let off = if let Body::Variant { start, .. } = r.body { start } else { 0 };
        if !out.own_file(f, off, r.body.bytes()) {
            out.buf.truncate(response_start);
            return frame(out, &Reply::later(503, false), c);
        }
    }
    let body = r.body.bytes();
    Resp { status: r.status, close: c.close, bytes: head + body, body }
}

#[cfg(test)]
mod tests {
    //! Every kind of description framed by hand-made parts, byte for byte: the HTTP/1.1 wire format is held
    //! here independently of the core that makes the descriptions and of the integration tests.
    use super::*;
    use crate::answer::reply::Location;
    use crate::rules::{parse_rule, Captures, Matcher};
    use crate::site::content::{FileEntry, Variant};
    use std::sync::Arc;

    const DATE: &str = "Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n";
    const FIELDS: &str = "Content-Type: text/css\r\nETag: \"e\"\r\n";

    fn variant() -> Variant {
        Variant {
            body: content::Body::Mem(Arc::from(&b"abcdefghij"[..])),
            len: 10,
            etag: Box::from(&b"\"e\""[..]),
            fields: FIELDS.as_bytes().into(),
            head_200: format!("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n{FIELDS}").into_bytes().into(),
            fields_304: Box::from(&b"ETag: \"e\"\r\n"[..]),
            h2_200: Box::default(),
            h3_200: Default::default(),
        }
    }

    fn framed(r: &Reply, close: bool, v10: bool) -> (Resp, String) {
        let mut out = Out::default();
        let resp = frame(&mut out, r, Conn { date_line: DATE.as_bytes(), close, v10 });
        out.finish();
        assert_eq!(out.segs.len(), 1, "small bodies are copied next to their head");
        let s = String::from_utf8(out.buf).unwrap();
        assert_eq!(resp.bytes, s.len() as u64, "{s}");
        assert_eq!(resp.status, r.status);
        assert_eq!(resp.close, close);
        (resp, s)
    }

    fn expect(r: &Reply, close: bool, v10: bool, want: &str, body: u64) {
        let (resp, s) = framed(r, close, v10);
        assert_eq!(s, want);
        assert_eq!(resp.body, body, "{want}");
    }

    #[test]
    fn redirects() {
        let slash = Location::Slash { path: b"//evil.example/..%2fdocs", query: Some(b"q=1") };
        expect(
            &Reply::redirect(301, slash),
            false,
            false,
            &format!("HTTP/1.1 301 Moved Permanently\r\nLocation: /evil.example/..%2fdocs/?q=1\r\nContent-Length: 0\r\n{DATE}\r\n"),
            0,
        );
        let moved = Location::Moved { to: b"/about", query: Some(b"") };
        expect(
            &Reply::redirect(301, moved),
            false,
            true,
            &format!("HTTP/1.1 301 Moved Permanently\r\nLocation: /about\r\nContent-Length: 0\r\n{DATE}Connection: keep-alive\r\n\r\n"),
            0,
        );
        let https = Location::Https { host: b"[::1]", port: 8443, path: b"/a b", query: Some(b"x") };
        expect(
            &Reply::redirect(308, https),
            true,
            false,
            &format!("HTTP/1.1 308 Permanent Redirect\r\nLocation: https://[::1]:8443/a b?x\r\nContent-Length: 0\r\n{DATE}Connection: close\r\n\r\n"),
            0,
        );
    }

    #[test]
    fn a_rule_redirect_encodes_its_captures_and_stays_on_site() {
        let rule = parse_rule("/x/* /:splat 302", "t").unwrap().unwrap();
        let mut m = Matcher::default();
        m.insert(0, &rule.from);
        let path = b"/x//evil.example/\r\n";
        let mut caps = Captures::default();
        m.find(path, &mut caps).expect("matches");
        let to = Location::Rule { rule: &rule, path, caps, query: Some(b"a=b") };
        expect(
            &Reply::redirect(302, to),
            false,
            false,
            &format!("HTTP/1.1 302 Found\r\nLocation: /evil.example/%0D%0A?a=b\r\nContent-Length: 0\r\n{DATE}\r\n"),
            0,
        );
    }

    #[test]
    fn options_with_and_without_a_granted_preflight() {
        let granted =
            (&b"Access-Control-Allow-Origin: https://a.test\r\n"[..], &b"Access-Control-Allow-Methods: GET\r\n"[..]);
        let r = Reply {
            private: false,
            status: 204,
            head: Head::Options { granted: Some(granted), vary_origin: true },
            body: Body::None,
        };
        expect(
            &r,
            false,
            false,
            &format!("HTTP/1.1 204 No Content\r\nAllow: GET, HEAD, OPTIONS\r\nAccess-Control-Allow-Origin: https://a.test\r\nAccess-Control-Allow-Methods: GET\r\nVary: Origin\r\n{DATE}\r\n"),
            0,
        );
        let r = Reply {
            private: false,
            status: 204,
            head: Head::Options { granted: None, vary_origin: false },
            body: Body::None,
        };
        expect(&r, false, false, &format!("HTTP/1.1 204 No Content\r\nAllow: GET, HEAD, OPTIONS\r\n{DATE}\r\n"), 0);
    }

    #[test]
    fn plain_errors_and_error_pages() {
        expect(
            &Reply::plain(404, false, false),
            false,
            false,
            &format!("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 14\r\n{DATE}\r\n404 Not Found\n"),
            14,
        );
        expect(
            &Reply::plain(405, true, true),
            false,
            false,
            &format!("HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 23\r\nAllow: GET, HEAD, OPTIONS\r\n{DATE}\r\n"),
            0,
        );
        let v = variant();
        let e = FileEntry {
            path: "/404.html".into(),
            digest: [0; 32],
            mime: "text/html; charset=utf-8".into(),
            last_modified: 0,
            variants: std::array::from_fn(|i| (i == 0).then(|| Box::new(v.clone()))),
            headers: Arc::default(),
        };
        let page = Reply {
            private: false,
            status: 404,
            head: Head::Page { e: &e, allow: false },
            body: Body::Variant { v: &v, start: 0, len: 10 },
        };
        expect(
            &page,
            false,
            false,
            &format!("HTTP/1.1 404 Not Found\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 10\r\nCache-Control: no-cache\r\n{DATE}\r\nabcdefghij"),
            10,
        );
        let head = Reply { private: false, status: 405, head: Head::Page { e: &e, allow: true }, body: Body::None };
        expect(
            &head,
            false,
            false,
            &format!("HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 10\r\nCache-Control: no-cache\r\nAllow: GET, HEAD, OPTIONS\r\n{DATE}\r\n"),
            0,
        );
    }

    #[test]
    fn file_answers() {
        let v = variant();
        let cors = Some(&b"Access-Control-Allow-Origin: https://a.test\r\n"[..]);
        let whole = Reply {
            private: false,
            status: 200,
            head: Head::File { v: &v, cors },
            body: Body::Variant { v: &v, start: 0, len: 10 },
        };
        expect(
            &whole,
            false,
            false,
            &format!("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n{FIELDS}Access-Control-Allow-Origin: https://a.test\r\n{DATE}\r\nabcdefghij"),
            10,
        );
        let head = Reply { private: false, status: 200, head: Head::File { v: &v, cors: None }, body: Body::None };
        expect(
            &head,
            true,
            false,
            &format!("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n{FIELDS}{DATE}Connection: close\r\n\r\n"),
            0,
        );
        let part = Reply {
            private: false,
            status: 206,
            head: Head::Part { v: &v, start: 2, len: 3, cors: None },
            body: Body::Variant { v: &v, start: 2, len: 3 },
        };
        expect(
            &part,
            false,
            false,
            &format!("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 2-4/10\r\nContent-Length: 3\r\n{FIELDS}{DATE}\r\ncde"),
            3,
        );
        let nm = Reply { private: false, status: 304, head: Head::NotModified { v: &v, cors }, body: Body::None };
        expect(
            &nm,
            false,
            false,
            &format!(
                "HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\nAccess-Control-Allow-Origin: https://a.test\r\n{DATE}\r\n"
            ),
            0,
        );
        let un =
            Reply { private: false, status: 416, head: Head::Unsatisfiable { len: 10, vary: true }, body: Body::None };
        expect(
            &un,
            false,
            false,
            &format!("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */10\r\nContent-Length: 0\r\nVary: Accept-Encoding\r\n{DATE}\r\n"),
            0,
        );
        expect(
            &Reply::plain(412, false, false),
            false,
            false,
            &format!("HTTP/1.1 412 Precondition Failed\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 24\r\n{DATE}\r\n412 Precondition Failed\n"),
            24,
        );
    }
}
