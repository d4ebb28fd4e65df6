//! One parsed HTTP/1.1 request → its answer from the core (answer/request.rs), framed into the batch `Out`
//! (http1/frame.rs); also the answers only HTTP/1.1 has: a head the parser rejected, a head that did not
//! arrive in time. What is HTTP/1.1's own here is the connection's fate (`close`, HTTP/1.0 keep-alive) and
//! reading the answer's inputs out of the parsed head.

use crate::answer::conditional::Conditions;
use crate::answer::file::FileAsk;
use crate::answer::reply::Reply;
use crate::answer::request::{self, Ask, Site};
use crate::guard::Verified;
use crate::http1::frame::{self, Conn};
use crate::http1::out::Out;
use crate::http1::parser::{self, Method, ParseError, Request, Version};
use crate::site::content::Table;

pub use crate::http1::frame::Resp;

pub struct Ctx<'a> {
    pub table: &'a Table,
    /// `Date: ...\r\n`
    pub date_line: &'a [u8],
    /// The server wants this connection closed after the response (limits reached, draining).
    pub force_close: bool,
    pub spa_fallback: bool,
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
    frame::frame(out, &Reply::plain(status, false, false), Conn { date_line: ctx.date_line, close: true, v10: false })
}

/// 408 for a connection that did not send a complete head in time.
pub fn timeout(out: &mut Out, ctx: &Ctx) -> Resp {
    frame::frame(out, &Reply::plain(408, false, false), Conn { date_line: ctx.date_line, close: true, v10: false })
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

impl<'a> From<&Request<'a>> for Ask<'a> {
    #[inline]
    fn from(req: &Request<'a>) -> Ask<'a> {
        let (method, path) = match req.method {
            Method::Get => (request::Method::Get, req.path),
            Method::Head => (request::Method::Head, req.path),
            Method::Options => (request::Method::Options, req.path),
            // The parser leaves the path of other methods at `/` (they are answered before the path matters);
            // their 405 page is chosen by the target's path, `/` when it does not split.
            Method::Other => {
                (request::Method::Other, parser::split_target(req.target).map_or(&b"/"[..], |(raw, _)| raw))
            }
            Method::Unknown => (request::Method::Unknown, req.path),
        };
        Ask {
            method,
            path,
            query: req.query,
            accept: req.accept,
            sec_fetch_dest: req.sec_fetch_dest,
            access_control_request_method: req.access_control_request_method,
            file: FileAsk::from(req),
            authorization: req.authorization,
            session: req.session,
            // The protocol's glue names the client (server/h1.rs): the request alone does not know it.
            client: None,
        }
    }
}

/// How an answer to `req` ends the head: a request body we do not read (GET with Content-Length, any
/// Transfer-Encoding) ends the connection, as do the server's limits and `also_close`.
fn conn<'a>(ctx: &Ctx<'a>, req: &Request, also_close: bool) -> Conn<'a> {
    let close = also_close || ctx.force_close || !req.keep_alive() || req.has_body();
    Conn { date_line: ctx.date_line, close, v10: req.version == Version::Http10 }
}

/// `--https-redirect`: every request on the plain port gets 308 to https (answer/request.rs says where).
pub fn https_redirect(out: &mut Out, ctx: &Ctx, req: &Request, port: u16) -> Resp {
    let ask = Ask::from(req);
    // The path and query as sent (printable ASCII: the parser admits nothing else in a target), for every method:
    // the parser splits the target of GET, HEAD and OPTIONS only, and a 308 keeps the method, so a POST must keep
    // its path too (HTTP/2 gives the same Location, tests/h2.rs).
    let (path, query) = match req.method {
        Method::Get | Method::Head | Method::Options => (req.path, req.query),
        _ => parser::split_target(req.target).unwrap_or((b"/", None)),
    };
    let ask = Ask { path, query, ..ask };
    frame::frame(out, &request::https_redirect(&ask, req.host, port), conn(ctx, req, false))
}

/// A reply decided before the site's rules (a pool's 404 for an unknown host, 503 or 429), framed for `req`.
pub fn reply(out: &mut Out, ctx: &Ctx, req: &Request, reply: &Reply) -> Resp {
    frame::frame(out, reply, conn(ctx, req, req.method == Method::Unknown))
}

/// Appends the response to `req` from `client` to `out`. `pathbuf` is scratch space for the normalised path,
/// `verified` the worker's memory of checked credentials (guard/verified.rs).
#[inline]
pub fn respond(
    out: &mut Out,
    ctx: &Ctx,
    req: &Request,
    pathbuf: &mut [u8],
    client: Option<std::net::IpAddr>,
    verified: &mut Verified,
) -> Resp {
    let site = Site { table: ctx.table, spa_fallback: ctx.spa_fallback };
    let reply = request::answer(site, &Ask { client, ..Ask::from(req) }, pathbuf, verified);
    // An unknown method's 501 closes: what follows it cannot be trusted to be the next request.
    frame::frame(out, &reply, conn(ctx, req, req.method == Method::Unknown))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http1::parser::{self, Parsed};
    use crate::site::loader;
    use crate::site_value::SiteValue;

    fn table(name: &str, cfg: impl FnOnce(&mut SiteValue)) -> (Table, std::path::PathBuf) {
        let d = std::env::temp_dir().join(format!("hs-respond-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("dir")).unwrap();
        std::fs::write(d.join("index.html"), "home").unwrap();
        std::fs::write(d.join("dir/index.html"), "dir").unwrap();
        std::fs::write(d.join("a.css"), "a { color: red }\n".repeat(100)).unwrap();
        std::fs::write(d.join("404.html"), "custom").unwrap();
        let mut v = SiteValue::default();
        cfg(&mut v);
        let s = loader::Settings::for_root(&d);
        // With every variant in place, as the background encoder leaves it.
        let store = crate::compress::encodings::Store::new(None);
        crate::compress::encodings::encode_now(&loader::load(&s, &v, None, &mut |_| {}).unwrap().0, &store);
        (loader::load(&s, &v, Some(&store), &mut |_| {}).unwrap().0, d)
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
        let resp = respond(&mut out, &ctx, &r, &mut pb, None, &mut crate::guard::Verified::new());
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
        let (_, s) = go("POST /form?a=1 HTTP/1.1\r\nHost: site.test\r\nContent-Length: 0\r\n\r\n", 443);
        assert!(s.contains("\r\nLocation: https://site.test/form?a=1\r\n"), "{s}");
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
