//! Turns one parsed request into HTTP/1.1 response bytes in the batch `Out`: method check, path normalisation,
//! lookup (index, directory redirect, SPA fallback, custom 404), OPTIONS and CORS (answer/cors.rs), and a file's
//! answer (encoding, conditionals, ranges: decided in answer/file.rs, framed here). Everything is copied from
//! precomputed blocks; nothing is allocated.

use crate::answer::conditional::Conditions;
use crate::answer::file::{self, FileAnswer, FileAsk, FileReply};
use crate::answer::path;
use crate::http1::out::Out;
use crate::http1::parser::{Method, ParseError, Request, Version};
use crate::rules;
use crate::site::content::{Body, FileEntry, Table, Target, Variant};
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

pub struct Ctx<'a> {
    pub table: &'a Table,
    /// `Date: ...\r\n`
    pub date_line: &'a [u8],
    /// The server wants this connection closed after the response (limits reached, draining).
    pub force_close: bool,
    pub spa_fallback: bool,
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        304 => "Not Modified",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        412 => "Precondition Failed",
        414 => "URI Too Long",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

pub(crate) fn status_line(out: &mut Out, status: u16) {
    out.bytes(b"HTTP/1.1 ");
    out.num(status as u64);
    out.bytes(b" ");
    out.bytes(reason(status).as_bytes());
    out.bytes(b"\r\n");
}

pub(crate) fn end_head(out: &mut Out, ctx: &Ctx, close: bool, v10: bool) {
    out.bytes(ctx.date_line);
    if close {
        out.bytes(b"Connection: close\r\n");
    } else if v10 {
        out.bytes(b"Connection: keep-alive\r\n");
    }
    out.bytes(b"\r\n");
}

/// A small text/plain error or redirect response.
fn simple(out: &mut Out, ctx: &Ctx, status: u16, extra: &[&[u8]], close: bool, v10: bool, head: bool) -> Resp {
    let start = out.buf.len();
    status_line(out, status);
    let r = reason(status).as_bytes();
    out.bytes(b"Content-Type: text/plain; charset=utf-8\r\nContent-Length: ");
    out.num(r.len() as u64 + 5);
    out.bytes(b"\r\n");
    for e in extra {
        out.bytes(e);
    }
    end_head(out, ctx, close, v10);
    let hl = out.buf.len();
    if !head {
        out.num(status as u64);
        out.bytes(b" ");
        out.bytes(r);
        out.bytes(b"\n");
    }
    Resp { status, close, bytes: (out.buf.len() - start) as u64, body: (out.buf.len() - hl) as u64 }
}

/// The response to a request head the parser rejected; the connection always closes.
pub fn parse_error(out: &mut Out, ctx: &Ctx, e: ParseError) -> Resp {
    let status = match e {
        ParseError::BadRequest => 400,
        ParseError::UriTooLong => 414,
        ParseError::HeadersTooLarge => 431,
        ParseError::NotImplemented => 501,
        ParseError::VersionNotSupported => 505,
    };
    simple(out, ctx, status, &[], true, false, false)
}

/// 408 for a connection that did not send a complete head in time.
pub fn timeout(out: &mut Out, ctx: &Ctx) -> Resp {
    simple(out, ctx, 408, &[], true, false, false)
}

/// The host of a Host header without its port (`example.com:8080` → `example.com`, `[::1]:80` → `[::1]`), if it
/// is a plausible host name or address literal: it goes into a Location header and a URL.
fn host_without_port(h: &[u8]) -> Option<&[u8]> {
    let host = if h.first() == Some(&b'[') {
        &h[..=h.iter().position(|&b| b == b']')?]
    } else {
        h.split(|&b| b == b':').next()?
    };
    let ok = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'[' | b']' | b':');
    (!host.is_empty() && host.iter().all(ok)).then_some(host)
}

/// `--https-redirect`: 308 to the same target over https on `port` (left out when 443). A request without a
/// usable Host gets 400: there is no URL to send it to.
pub fn https_redirect(out: &mut Out, ctx: &Ctx, req: &Request, port: u16) -> Resp {
    let v10 = req.version == Version::Http10;
    let close = ctx.force_close || !req.keep_alive() || req.has_body();
    let Some(host) = req.host.and_then(host_without_port) else {
        return simple(out, ctx, 400, &[], close, v10, req.method == Method::Head);
    };
    let start = out.buf.len();
    status_line(out, 308);
    out.bytes(b"Location: https://");
    out.bytes(host);
    if port != 443 {
        out.bytes(b":");
        out.num(port as u64);
    }
    // The path and query as sent (printable ASCII: the parser admits nothing else in a target).
    out.bytes(if req.path.starts_with(b"/") { req.path } else { b"/" });
    end_redirect(out, ctx, req, Resp { status: 308, close, bytes: start as u64, body: 0 })
}

/// Makes the site-relative Location value written at `out.buf[at..]` stay on this site. A value starting with
/// `//` or `/\\` is a network-path reference that browsers resolve to another host: `GET //evil.example/..%2fdocs`
/// normalises to the directory `/docs`, and its slash redirect would otherwise say `Location:
/// //evil.example/..%2fdocs/`. Extra leading slashes (and backslashes) are dropped, leaving `/evil.example/..`,
/// a path on this site that normalises to the same place. The value is still in the open head run of `out`
/// (nothing sealed it), so removing a byte in place is safe; it allocates nothing.
pub(crate) fn keep_on_site(out: &mut Out, at: usize) {
    while out.buf.get(at) == Some(&b'/') && matches!(out.buf.get(at + 1), Some(b'/' | b'\\')) {
        out.buf.remove(at + 1);
    }
}

/// The rest of a redirect after its Location path: the query, an empty body, the end of the head. `r.bytes`
/// holds where the response started in `out`.
fn end_redirect(out: &mut Out, ctx: &Ctx, req: &Request, r: Resp) -> Resp {
    if let Some(q) = req.query {
        out.bytes(b"?");
        out.bytes(q);
    }
    out.bytes(b"\r\nContent-Length: 0\r\n");
    end_head(out, ctx, r.close, req.version == Version::Http10);
    Resp { bytes: out.buf.len() as u64 - r.bytes, ..r }
}

fn body(out: &mut Out, v: &Variant, start: u64, len: u64) {
    match &v.body {
        Body::Mem(b) => out.body(&b[start as usize..(start + len) as usize]),
        Body::Disk(f) => out.file(f.as_raw_fd(), start, len),
    }
}

/// The methods every path allows (405 and OPTIONS say so).
const ALLOW: &[u8] = b"Allow: GET, HEAD, OPTIONS\r\n";

/// `OPTIONS *` and `OPTIONS /path`: 204 with `Allow`. A CORS preflight (with `Origin` and
/// `Access-Control-Request-Method`) for a file under a `--cors` rule that allows the origin and method also gets
/// the rule's `Access-Control-Allow-*` lines; refused, it gets none (the browser then blocks the request).
fn options(out: &mut Out, ctx: &Ctx, req: &Request, pathbuf: &mut [u8], close: bool) -> Resp {
    let v10 = req.version == Version::Http10;
    let (mut granted, mut vary) = (None, false);
    if req.path != b"*" {
        let n = match path::normalize(req.path, pathbuf) {
            Ok(n) => n,
            Err(path::PathError::Bad) => return simple(out, ctx, 400, &[], close, v10, false),
            Err(path::PathError::TooLong) => return simple(out, ctx, 414, &[], close, v10, false),
        };
        if let (Some(origin), Some(method), Some(Target::File(i))) =
            (req.origin, req.access_control_request_method, ctx.table.lookup(&pathbuf[..n]))
        {
            if let Some(r) = ctx.table.entry(i).headers.cors {
                let rule = &ctx.table.cors[r as usize];
                vary = !rule.any;
                granted = rule.preflight(origin, method);
            }
        }
    }
    let start = out.buf.len();
    status_line(out, 204);
    out.bytes(ALLOW);
    if let Some((origin_line, lines)) = granted {
        out.bytes(origin_line);
        out.bytes(lines);
    }
    if vary {
        out.bytes(b"Vary: Origin\r\n");
    }
    end_head(out, ctx, close, v10);
    Resp { status: 204, close, bytes: (out.buf.len() - start) as u64, body: 0 }
}

impl<'a> From<&Request<'a>> for FileAsk<'a> {
    #[inline]
    fn from(req: &Request<'a>) -> FileAsk<'a> {
        FileAsk {
            get: req.method == Method::Get,
            accept_encoding: req.accept_encoding,
            conditions: Conditions {
                if_match: req.if_match,
                if_unmodified_since: req.if_unmodified_since,
                if_none_match: req.if_none_match,
                if_modified_since: req.if_modified_since,
            },
            range: req.range,
            if_range: req.if_range,
            origin: req.origin,
        }
    }
}

/// A GET or HEAD of file `e`: the protocol-agnostic decision (answer/file.rs) framed as HTTP/1.1.
pub(crate) fn serve(out: &mut Out, ctx: &Ctx, req: &Request, e: &FileEntry, close: bool) -> Resp {
    let v10 = req.version == Version::Http10;
    let head = req.method == Method::Head;
    let FileReply { answer, cors } = file::decide(ctx.table, &FileAsk::from(req), e);
    let start = out.buf.len();
    match answer {
        FileAnswer::NotModified(v) => {
            out.bytes(b"HTTP/1.1 304 Not Modified\r\n");
            out.bytes(&v.fields_304);
            if let Some(c) = cors {
                out.bytes(c);
            }
            end_head(out, ctx, close, v10);
            Resp { status: 304, close, bytes: (out.buf.len() - start) as u64, body: 0 }
        }
        FileAnswer::PreconditionFailed => simple(out, ctx, 412, &[], close, v10, head),
        FileAnswer::Part { v, start: s, len: n } => {
            out.bytes(b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes ");
            out.num(s);
            out.bytes(b"-");
            out.num(s + n - 1);
            out.bytes(b"/");
            out.num(v.len);
            out.bytes(b"\r\nContent-Length: ");
            out.num(n);
            out.bytes(b"\r\n");
            out.bytes(&v.fields);
            if let Some(c) = cors {
                out.bytes(c);
            }
            end_head(out, ctx, close, v10);
            let hl = (out.buf.len() - start) as u64;
            body(out, v, s, n);
            Resp { status: 206, close, bytes: hl + n, body: n }
        }
        FileAnswer::Unsatisfiable(v) => {
            status_line(out, 416);
            out.bytes(b"Content-Range: bytes */");
            out.num(v.len);
            out.bytes(b"\r\nContent-Length: 0\r\n");
            if e.negotiable() {
                out.bytes(b"Vary: Accept-Encoding\r\n");
            }
            end_head(out, ctx, close, v10);
            Resp { status: 416, close, bytes: (out.buf.len() - start) as u64, body: 0 }
        }
        FileAnswer::Whole(v) => {
            out.bytes(&v.head_200);
            if let Some(c) = cors {
                out.bytes(c);
            }
            end_head(out, ctx, close, v10);
            let hl = (out.buf.len() - start) as u64;
            if head {
                return Resp { status: 200, close, bytes: hl, body: 0 };
            }
            body(out, v, 0, v.len);
            Resp { status: 200, close, bytes: hl + v.len, body: v.len }
        }
    }
}

/// A site page (error page, not-found page) served with an error status.
fn error_page(
    out: &mut Out,
    ctx: &Ctx,
    req: &Request,
    status: u16,
    e: &FileEntry,
    extra: &[&[u8]],
    close: bool,
) -> Resp {
    let v10 = req.version == Version::Http10;
    let v = e.identity();
    let start = out.buf.len();
    status_line(out, status);
    out.bytes(b"Content-Type: ");
    out.bytes(e.mime.as_bytes());
    out.bytes(b"\r\nContent-Length: ");
    out.num(v.len);
    out.bytes(b"\r\nCache-Control: no-cache\r\n");
    for x in extra {
        out.bytes(x);
    }
    end_head(out, ctx, close, v10);
    let hl = (out.buf.len() - start) as u64;
    if req.method == Method::Head {
        return Resp { status, close, bytes: hl, body: 0 };
    }
    body(out, v, 0, v.len);
    Resp { status, close, bytes: hl + v.len, body: v.len }
}

/// An error for a request: the site's error page for the status and path (`--error-page`, longest prefix; for
/// 404 then `--not-found-page`), else the plain text one. `path` is the normalised path, or the raw one when
/// the path did not normalise.
#[allow(clippy::too_many_arguments)]
fn error(out: &mut Out, ctx: &Ctx, req: &Request, status: u16, path: &[u8], extra: &[&[u8]], close: bool) -> Resp {
    let page = ctx.table.rules.error_page(status, path).or(if status == 404 { ctx.table.not_found } else { None });
    match page {
        Some(i) => error_page(out, ctx, req, status, ctx.table.entry(i), extra, close),
        None => simple(out, ctx, status, extra, close, req.version == Version::Http10, req.method == Method::Head),
    }
}

/// Appends the response to `req` to `out`. `pathbuf` is scratch space for the normalised path.
pub fn respond(out: &mut Out, ctx: &Ctx, req: &Request, pathbuf: &mut [u8]) -> Resp {
    let v10 = req.version == Version::Http10;
    // A request body we do not read (GET with Content-Length, any Transfer-Encoding) ends the connection.
    let close = ctx.force_close || !req.keep_alive() || req.has_body();
    match req.method {
        Method::Get | Method::Head => {}
        Method::Options => return options(out, ctx, req, pathbuf, close),
        Method::Other => {
            // The parser leaves the path of other methods at `/` (they are answered before the path matters), so
            // the 405 page is chosen here from the target, by its normalised path as for 404: `/d%6Fcs/x` and
            // `/docs/../x` are under the prefixes their normalised forms are under. A target that does not parse
            // or normalise gets the page for `/`: it is still a 405, not a 400.
            let n =
                crate::http1::parser::split_target(req.target).and_then(|(raw, _)| path::normalize(raw, pathbuf).ok());
            let p = n.map_or(&b"/"[..], |n| &pathbuf[..n]);
            return error(out, ctx, req, 405, p, &[ALLOW], close);
        }
        Method::Unknown => return simple(out, ctx, 501, &[], true, v10, false),
    }
    let n = match path::normalize(req.path, pathbuf) {
        Ok(n) => n,
        Err(path::PathError::Bad) => return error(out, ctx, req, 400, req.path, &[], close),
        Err(path::PathError::TooLong) => return error(out, ctx, req, 414, req.path, &[], close),
    };
    // The normalised path, and the rest of the buffer as scratch for a rewrite's target.
    let (p, scratch) = pathbuf.split_at_mut(n);
    let p: &[u8] = p;
    let rules = &ctx.table.rules;
    let mut caps = rules::Captures::default();
    // Forced (`!`) rules apply even where a file matches; the others only where none does.
    if let Some(rule) = rules.forced(p, &mut caps) {
        if let Some(r) = rules::reply::apply(out, ctx, req, rule, p, &caps, scratch, close) {
            return r;
        }
    }
    match ctx.table.lookup(p) {
        Some(Target::File(i)) => serve(out, ctx, req, ctx.table.entry(i), close),
        Some(Target::Redirect) => {
            let start = out.buf.len();
            status_line(out, 301);
            // The raw (still percent-encoded, printable ASCII) path: decoded bytes never reach a header.
            out.bytes(b"Location: ");
            let at = out.buf.len();
            out.bytes(req.path);
            out.bytes(b"/");
            keep_on_site(out, at);
            end_redirect(out, ctx, req, Resp { status: 301, close, bytes: start as u64, body: 0 })
        }
        Some(Target::Moved(k)) => rules::reply::moved(out, ctx, req, &rules.moved[k as usize].0, close),
        None => {
            if let Some(rule) = rules.any(p, &mut caps) {
                if let Some(r) = rules::reply::apply(out, ctx, req, rule, p, &caps, scratch, close) {
                    return r;
                }
            }
            // Page navigations only: a missing asset is a 404, not index.html (rules/navigation.rs).
            if ctx.spa_fallback && rules::is_navigation(p, req.accept) {
                if let Some(i) = ctx.table.spa_index {
                    return serve(out, ctx, req, ctx.table.entry(i), close);
                }
            }
            error(out, ctx, req, 404, p, &[], close)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::http1::parser::{self, Parsed};
    use crate::site::loader;

    fn table(name: &str, cfg: impl FnOnce(&mut Config)) -> (Table, std::path::PathBuf) {
        let d = std::env::temp_dir().join(format!("hs-respond-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("dir")).unwrap();
        std::fs::write(d.join("index.html"), "home").unwrap();
        std::fs::write(d.join("dir/index.html"), "dir").unwrap();
        std::fs::write(d.join("a.css"), "a { color: red }\n".repeat(100)).unwrap();
        std::fs::write(d.join("404.html"), "custom").unwrap();
        let mut c = Config { root: d.clone(), ..Config::default() };
        cfg(&mut c);
        // With every variant in place, as the background encoder leaves it.
        let store = crate::compress::encodings::Store::new(None);
        crate::compress::encodings::encode_now(&loader::load(&c, None, &mut |_| {}).unwrap().0, &store);
        (loader::load(&c, Some(&store), &mut |_| {}).unwrap().0, d)
    }

    fn run(t: &Table, spa: bool, req: &str) -> (Resp, String) {
        let mut out = Out::default();
        let ctx = Ctx {
            table: t,
            date_line: b"Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n",
            force_close: false,
            spa_fallback: spa,
        };
        let Ok(Parsed::Complete(r, _)) = parser::parse(req.as_bytes()) else { panic!("test request must parse") };
        let mut pb = [0u8; 1024];
        let resp = respond(&mut out, &ctx, &r, &mut pb);
        out.finish();
        (resp, String::from_utf8_lossy(&out.buf).into_owned())
    }

    #[test]
    fn https_redirect_keeps_path_and_query_and_drops_the_host_port() {
        let (t, _d) = table("redirect", |_| {});
        let go = |raw: &str, port: u16| {
            let Ok(Parsed::Complete(req, _)) = parser::parse(raw.as_bytes()) else { panic!("{raw}") };
            let mut out = Out::default();
            let ctx = Ctx {
                table: &t,
                date_line: b"Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n",
                force_close: false,
                spa_fallback: false,
            };
            let r = https_redirect(&mut out, &ctx, &req, port);
            (r.status, String::from_utf8(out.buf).unwrap())
        };
        let (st, s) = go("GET /a/b?x=1&y HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", 443);
        assert_eq!(st, 308);
        assert!(s.contains("\r\nLocation: https://example.com/a/b?x=1&y\r\n"), "{s}");
        let (_, s) = go("HEAD / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", 8443);
        assert!(s.contains("\r\nLocation: https://[::1]:8443/\r\n"), "{s}");
        let (_, s) = go("GET http://other.test/p?q HTTP/1.1\r\nHost: site.test\r\n\r\n", 443);
        assert!(s.contains("\r\nLocation: https://site.test/p?q\r\n"), "{s}");
        assert_eq!(go("GET / HTTP/1.0\r\n\r\n", 443).0, 400);
        assert_eq!(go("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 443).0, 400);
    }

    #[test]
    fn lookup_index_redirect_and_404() {
        let (t, d) = table("lookup", |_| {});
        let (r, s) = run(&t, false, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(r.status, 200);
        assert!(s.ends_with("\r\n\r\nhome"));
        assert!(s.contains("Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n"));
        let (r, s) = run(&t, false, "GET /dir?q=1 HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(r.status, 301);
        assert!(s.contains("Location: /dir/?q=1\r\n"));
        assert_eq!(run(&t, false, "GET /dir/ HTTP/1.1\r\nHost: a\r\n\r\n").1.rsplit("\r\n\r\n").next(), Some("dir"));
        let (r, s) = run(&t, false, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(r.status, 404);
        assert!(s.ends_with("404 Not Found\n"));
        assert!(!r.close);
        let (r, s) = run(&t, true, "GET /app/route HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(r.status, 200);
        assert!(s.ends_with("home"));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn custom_404_page() {
        let (t, d) = table("nf", |c| c.not_found_page = Some("/404.html".into()));
        let (r, s) = run(&t, false, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(r.status, 404);
        assert!(s.contains("Content-Type: text/html; charset=utf-8\r\n") && s.ends_with("custom"));
        let (r, s) = run(&t, false, "HEAD /x HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(r.status, 404);
        assert!(s.ends_with("\r\n\r\n"), "HEAD has no body");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn methods_and_connection_handling() {
        let (t, d) = table("methods", |_| {});
        let (r, s) = run(&t, false, "PUT / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(r.status, 405);
        assert!(s.contains("Allow: GET, HEAD, OPTIONS\r\n"));
        let (r, _) = run(&t, false, "BREW / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!((r.status, r.close), (501, true));
        let (r, s) = run(&t, false, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert!(!r.close && s.contains("Connection: keep-alive\r\n"));
        let (r, s) = run(&t, false, "GET / HTTP/1.0\r\n\r\n");
        assert!(r.close && s.contains("Connection: close\r\n"));
        let (r, _) = run(&t, false, "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc");
        assert!(r.close, "an unread body ends the connection");
        let (r, _) = run(&t, false, "GET /../x HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!((r.status, r.close), (400, false));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn negotiated_conditional_and_range_responses() {
        let (t, d) = table("neg", |_| {});
        let (r, s) = run(&t, false, "GET /a.css HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip, br\r\n\r\n");
        assert_eq!(r.status, 200);
        assert!(s.contains("Content-Encoding: br\r\n") && s.contains("Vary: Accept-Encoding\r\n"));
        let etag = s.lines().find_map(|l| l.strip_prefix("ETag: ")).unwrap().to_string();
        let (r, s) = run(
            &t,
            false,
            &format!("GET /a.css HTTP/1.1\r\nHost: a\r\nAccept-Encoding: br\r\nIf-None-Match: {etag}\r\n\r\n"),
        );
        assert_eq!(r.status, 304);
        assert!(
            s.contains(&format!("ETag: {etag}\r\n"))
                && s.contains("Vary: Accept-Encoding\r\n")
                && s.ends_with("\r\n\r\n")
        );
        let (r, s) = run(&t, false, "GET /a.css HTTP/1.1\r\nHost: a\r\nRange: bytes=0-3\r\n\r\n");
        assert_eq!(r.status, 206);
        assert!(s.contains("Content-Range: bytes 0-3/1700\r\nContent-Length: 4\r\n") && s.ends_with("\r\n\r\na { "));
        let (r, s) = run(&t, false, "GET /a.css HTTP/1.1\r\nHost: a\r\nRange: bytes=5000-\r\n\r\n");
        assert_eq!(r.status, 416);
        assert!(s.contains("Content-Range: bytes */1700\r\n"));
        let (r, _) = run(&t, false, "HEAD /a.css HTTP/1.1\r\nHost: a\r\nRange: bytes=0-3\r\n\r\n");
        assert_eq!(r.status, 200, "Range is ignored for HEAD");
        std::fs::remove_dir_all(d).unwrap();
    }
}
