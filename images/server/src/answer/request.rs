//! A request → its response description (answer/reply.rs), whatever protocol carried it: the method, the path
//! (normalised once), forced rules, the file lookup (files, directory and clean-URL redirects), the other rules,
//! the SPA fallback, OPTIONS with CORS preflights, and the error pages. HTTP/1.1 builds an `Ask` from its parsed
//! head and frames the `Reply` (http1/respond.rs); an HTTP/2 stream builds the same `Ask` from its header fields.

use crate::answer::file::{self, FileAsk};
use crate::answer::path::{self, PathError};
use crate::answer::reply::{Body, Head, Location, Reply};
use crate::answer::rule as rule_reply;
use crate::answer::stale;
use crate::guard::{Verdict, Verified};
use crate::rules::{self, Captures};
use crate::site::content::{Table, Target};

/// The request methods as the core tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    /// `Allow` (and CORS preflights); its path may be `*`.
    Options,
    /// A method the server knows but does not allow: 405.
    Other,
    /// An unknown method: 501.
    Unknown,
}

/// The parts of a request the answer depends on.
#[derive(Clone, Copy)]
pub struct Ask<'a> {
    pub method: Method,
    /// The raw request path (percent-encoded, without the query): what is looked up; `*` for `OPTIONS *`; for
    /// another method, the path its 405 page is chosen by.
    pub path: &'a [u8],
    pub query: Option<&'a [u8]>,
    /// `Accept`: whether a missing path is a page navigation (the SPA fallback, skew protection).
    pub accept: Option<&'a [u8]>,
    /// `Sec-Fetch-Dest`: a `document` is a navigation, never answered from a previous deploy (answer/stale.rs).
    pub sec_fetch_dest: Option<&'a [u8]>,
    /// `Access-Control-Request-Method`, with `file.origin` what makes an OPTIONS a CORS preflight.
    pub access_control_request_method: Option<&'a [u8]>,
    /// What a file's answer depends on.
    pub file: FileAsk<'a>,
    /// `Authorization`, for a path under a basic-auth rule (guard/).
    pub authorization: Option<&'a [u8]>,
    /// The `hs_session` cookie's value, for a path under a sign-in rule (guard/session.rs): each protocol finds
    /// it in its `Cookie` field(s) (HTTP/2 and HTTP/3 may split them) with `session::from_cookie_header`.
    pub session: Option<&'a [u8]>,
    /// The client's address as the protocol named it (the peer, the PROXY source or a trusted proxy's
    /// `X-Forwarded-For` entry: guard/forwarded.rs), for a path under an address rule.
    pub client: Option<std::net::IpAddr>,
}

/// The site a request is answered from: the published table and the flags that change lookups.
#[derive(Clone, Copy)]
pub struct Site<'t> {
    pub table: &'t Table,
    pub spa_fallback: bool,
}

/// The answer to `ask`. `pathbuf` is the worker's scratch: the normalised path, then a rewrite's target;
/// `verified` the worker's memory of checked credentials (guard/verified.rs). Allocates nothing; the reply
/// borrows from the table, the request and `pathbuf`.
pub fn answer<'a>(site: Site<'a>, ask: &Ask<'a>, pathbuf: &'a mut [u8], verified: &mut Verified) -> Reply<'a> {
    // The access rules come first, on the normalised path, before anything is looked up: a refused client
    // learns nothing about what exists there (guard/). A path that does not normalise (400, 414) is under no rule.
    let mut private = false;
    // A site with trusted proxies and no rules pays nothing here.
    let access = site.table.access.as_deref().filter(|a| !a.rules.is_empty());
    if let (Some(access), false) = (access, ask.path == b"*") {
        if let Ok(n) = path::normalize(ask.path, pathbuf) {
            let head = ask.method == Method::Head;
            match access.check(verified, &pathbuf[..n], ask.client, ask.authorization, ask.session) {
                Verdict::Public => {}
                Verdict::Private => private = true,
                Verdict::Forbidden => return Reply { private: true, ..Reply::plain(403, false, head) },
                Verdict::Unauthorized(challenge) => return Reply::unauthorized(challenge, head),
                // A page navigation goes to the login and comes back; a script's fetch or an image cannot follow
                // a login, so it gets 401 and the page decides.
                Verdict::SignIn(sso) if is_navigation(ask) => {
                    let to = Location::SignIn { login: &sso.login_url, path: ask.path, query: ask.query };
                    return Reply { private: true, ..Reply::redirect(302, to) };
                }
                Verdict::SignIn(sso) => return Reply::unauthorized(&sso.challenge, head),
                // The site's 403 page when it has one (it can say who to ask, and link the logout).
                Verdict::NotAdmitted => {
                    return Reply { private: true, ..error(site.table, head, 403, &pathbuf[..n], false) };
                }
            }
        }
    }
    Reply { private, ..decide(site, ask, pathbuf) }
}

/// Whether a request the rules refuse for want of a session is a page navigation the browser can take to the
/// login: a GET or HEAD for a document (`Sec-Fetch-Dest: document`), or, from a client that sends no fetch
/// metadata, one that puts HTML first in `Accept`.
fn is_navigation(ask: &Ask) -> bool {
    matches!(ask.method, Method::Get | Method::Head)
        && match ask.sec_fetch_dest {
            Some(d) => d.eq_ignore_ascii_case(b"document"),
            None => rules::prefers_html(ask.accept),
        }
}

/// The answer to `ask` once the access rules let it through.
fn decide<'a>(site: Site<'a>, ask: &Ask<'a>, pathbuf: &'a mut [u8]) -> Reply<'a> {
    let table = site.table;
    let head = ask.method == Method::Head;
    match ask.method {
        Method::Get | Method::Head => {}
        Method::Options => return options(table, ask, pathbuf),
        Method::Other => {
            // The 405 page is chosen by the normalised path, as for 404: `/d%6Fcs/x` and `/docs/../x` are under
            // the prefixes their normalised forms are under. A path that does not normalise gets the page for
            // `/`: it is still a 405, not a 400.
            let p = match path::normalize(ask.path, pathbuf) {
                Ok(n) => &pathbuf[..n],
                Err(_) => b"/",
            };
            return error(table, false, 405, p, true);
        }
        Method::Unknown => return Reply::plain(501, false, false),
    }
    let n = match path::normalize(ask.path, pathbuf) {
        Ok(n) => n,
        Err(PathError::Bad) => return error(table, head, 400, ask.path, false),
        Err(PathError::TooLong) => return error(table, head, 414, ask.path, false),
    };
    // The normalised path, and the rest of the buffer as scratch for a rewrite's target.
    let (p, scratch) = pathbuf.split_at_mut(n);
    let p: &'a [u8] = p;
    let rules = &table.rules;
    let mut caps = Captures::default();
    // Forced (`!`) rules apply even where a file matches; the others only where none does.
    if let Some(rule) = rules.forced(p, &mut caps) {
        if let Some(r) = rule_reply::apply(table, &ask.file, ask.query, rule, p, &caps, scratch) {
            return r;
        }
    }
    match table.lookup(p) {
        Some(Target::File(i)) => file::reply(table, &ask.file, table.entry(i)),
        Some(Target::Redirect) => Reply::redirect(301, Location::Slash { path: ask.path, query: ask.query }),
        Some(Target::Moved(k)) => {
            Reply::redirect(301, Location::Moved { to: &rules.moved[k as usize].0, query: ask.query })
        }
        None => {
            // Skew protection: a file a previous deploy had, for a page loaded before this deploy. Ahead of the
            // site's other rules, which answer what no deploy has as a file (a catch-all rewrite to the SPA's
            // index would otherwise hand that page HTML for its script).
            if let Some(prev) = table.skew.as_deref() {
                if stale::eligible(p, ask.accept, ask.sec_fetch_dest) {
                    if let Some(f) = stale::find(prev, p, crate::skew::now()) {
                        return Reply::stale(f, head);
                    }
                }
            }
            if let Some(rule) = rules.any(p, &mut caps) {
                if let Some(r) = rule_reply::apply(table, &ask.file, ask.query, rule, p, &caps, scratch) {
                    return r;
                }
            }
            // Page navigations only: a missing asset is a 404, not index.html (rules/navigation.rs).
            if site.spa_fallback && rules::is_navigation(p, ask.accept) {
                if let Some(i) = table.spa_index {
                    return file::reply(table, &ask.file, table.entry(i));
                }
            }
            error(table, head, 404, p, false)
        }
    }
}

/// An error: the site's page for the status and path (`--error-page`, longest prefix; for 404 then
/// `--not-found-page`), else the plain text one. `path` is the normalised path, or the raw one when the path
/// did not normalise; `allow` adds the `Allow` line (405).
fn error<'a>(table: &'a Table, head: bool, status: u16, path: &[u8], allow: bool) -> Reply<'a> {
    let page = table.rules.error_page(status, path).or(if status == 404 { table.not_found } else { None });
    let Some(i) = page else { return Reply::plain(status, allow, head) };
    let e = table.entry(i);
    let v = e.identity();
    let body = if head { Body::None } else { Body::Variant { v, start: 0, len: v.len } };
    Reply { private: false, status, head: Head::Page { e, allow }, body }
}

/// `OPTIONS *` and `OPTIONS /path`: 204 with `Allow`. A CORS preflight (with `Origin` and
/// `Access-Control-Request-Method`) for a file under a `--cors` rule that allows the origin and method also gets
/// the rule's `Access-Control-Allow-*` lines; refused, it gets none (the browser then blocks the request).
fn options<'a>(table: &'a Table, ask: &Ask<'a>, pathbuf: &mut [u8]) -> Reply<'a> {
    let (mut granted, mut vary_origin) = (None, false);
    if ask.path != b"*" {
        let n = match path::normalize(ask.path, pathbuf) {
            Ok(n) => n,
            Err(PathError::Bad) => return Reply::plain(400, false, false),
            Err(PathError::TooLong) => return Reply::plain(414, false, false),
        };
        if let (Some(origin), Some(method), Some(Target::File(i))) =
            (ask.file.origin, ask.access_control_request_method, table.lookup(&pathbuf[..n]))
        {
            if let Some(r) = table.entry(i).headers.cors {
                let rule = &table.cors[r as usize];
                vary_origin = !rule.any;
                granted = rule.preflight(origin, method);
            }
        }
    }
    Reply { private: false, status: 204, head: Head::Options { granted, vary_origin }, body: Body::None }
}

/// The host of a Host header (or `:authority`) without its port (`example.com:8080` → `example.com`,
/// `[::1]:80` → `[::1]`), if it is a plausible host name or address literal: it goes into a Location and a URL.
fn host_without_port(h: &[u8]) -> Option<&[u8]> {
    let host = if h.first() == Some(&b'[') {
        &h[..=h.iter().position(|&b| b == b']')?]
    } else {
        h.split(|&b| b == b':').next()?
    };
    let ok = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'[' | b']' | b':');
    (!host.is_empty() && host.iter().all(ok)).then_some(host)
}

/// `--https-redirect`: 308 to the same target over https on `port` (left out when 443), for any method. A
/// request without a usable `host` gets 400: there is no URL to send it to. `path` and `query` as sent.
pub fn https_redirect<'a>(ask: &Ask<'a>, host: Option<&'a [u8]>, port: u16) -> Reply<'a> {
    match host.and_then(host_without_port) {
        Some(host) => Reply::redirect(308, Location::Https { host, port, path: ask.path, query: ask.query }),
        None => Reply::plain(400, false, ask.method == Method::Head),
    }
}

#[cfg(test)]
mod tests {
    //! The core's decisions as descriptions, without any framing: what an HTTP/2 stream frames is what
    //! these assert (http1/frame.rs holds the HTTP/1.1 bytes of each kind).
    use super::*;
    use crate::site::loader;
    use crate::site_value::SiteValue;

    fn site(cfg: impl FnOnce(&mut SiteValue)) -> (Table, std::path::PathBuf) {
        let d = std::env::temp_dir().join(format!("hs-answer-request-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("dir")).unwrap();
        for (f, text) in [("index.html", "home"), ("dir/index.html", "dir"), ("a.css", "a {}"), ("404.html", "nf")] {
            std::fs::write(d.join(f), text).unwrap();
        }
        std::fs::write(d.join("_redirects"), "/old/* /new/:splat 302\n/r /a.css 200\n").unwrap();
        let mut v = SiteValue::default();
        cfg(&mut v);
        (loader::load(&loader::Settings::for_root(&d), &v, None, &mut |_| {}).unwrap().0, d)
    }

    fn ask<'a>(method: Method, path: &'a str, query: Option<&'a str>) -> Ask<'a> {
        let file = FileAsk {
            get: method == Method::Get,
            accept_encoding: None,
            conditions: Default::default(),
            range: None,
            if_range: None,
            origin: None,
        };
        let query = query.map(str::as_bytes);
        Ask {
            method,
            path: path.as_bytes(),
            query,
            accept: None,
            sec_fetch_dest: None,
            access_control_request_method: None,
            file,
            authorization: None,
            session: None,
            client: None,
        }
    }

    fn location(r: &Reply) -> String {
        let Head::Redirect(to) = r.head else { panic!("not a redirect: {}", r.status) };
        let mut v = Vec::new();
        to.write(&mut |b: &[u8]| v.extend_from_slice(b));
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn every_answer_kind_is_a_description() {
        let (t, d) = site(|c| {
            c.cors = vec![crate::headers::cors::parse_rule("*.css=https://a.test;methods=GET,PUT").unwrap()];
            c.not_found_page = Some("/404.html".into());
        });
        let s = Site { table: &t, spa_fallback: false };
        let mut pb = [0u8; 256];
        let mut vf = Verified::new();
        let r = answer(s, &ask(Method::Get, "/a.css", None), &mut pb, &mut vf);
        assert!(matches!((r.status, r.head, r.body), (200, Head::File { .. }, Body::Variant { start: 0, len: 4, .. })));
        let r = answer(s, &ask(Method::Head, "/a.css", None), &mut pb, &mut vf);
        assert!(matches!((r.status, r.head, r.body), (200, Head::File { .. }, Body::None)), "HEAD: no body");
        let r = answer(s, &ask(Method::Get, "/dir", Some("q")), &mut pb, &mut vf);
        assert_eq!((r.status, location(&r).as_str()), (301, "/dir/?q"));
        let r = answer(s, &ask(Method::Get, "/old/a/b", None), &mut pb, &mut vf);
        assert_eq!((r.status, location(&r).as_str()), (302, "/new/a/b"));
        let r = answer(s, &ask(Method::Get, "/r", None), &mut pb, &mut vf);
        assert!(matches!((r.status, r.head), (200, Head::File { .. })), "a rewrite serves its target");
        let r = answer(s, &ask(Method::Get, "/nope", None), &mut pb, &mut vf);
        assert!(matches!(
            (r.status, r.head, r.body),
            (404, Head::Page { allow: false, .. }, Body::Variant { len: 2, .. })
        ));
        let r = answer(s, &ask(Method::Other, "/nope", None), &mut pb, &mut vf);
        assert!(matches!(
            (r.status, r.head, r.body),
            (405, Head::Plain { allow: true }, Body::Static(b"405 Method Not Allowed\n"))
        ));
        let r = answer(s, &ask(Method::Head, "/../x", None), &mut pb, &mut vf);
        assert!(matches!((r.status, r.head, r.body), (400, Head::Plain { allow: false }, Body::None)));
        let r = answer(s, &ask(Method::Unknown, "/", None), &mut pb, &mut vf);
        assert_eq!(r.status, 501);
        let mut pre = ask(Method::Options, "/a.css", None);
        pre.file.origin = Some(b"https://a.test");
        pre.access_control_request_method = Some(b"PUT");
        let r = answer(s, &pre, &mut pb, &mut vf);
        assert!(matches!((r.status, r.head), (204, Head::Options { granted: Some(_), vary_origin: true })));
        pre.file.origin = Some(b"https://b.test");
        let r = answer(s, &pre, &mut pb, &mut vf);
        assert!(matches!(r.head, Head::Options { granted: None, vary_origin: true }), "a refused preflight");
        let mut cond = ask(Method::Get, "/a.css", None);
        cond.file.conditions.if_none_match = Some(b"*");
        assert!(matches!(answer(s, &cond, &mut pb, &mut vf).head, Head::NotModified { .. }));
        let mut part = ask(Method::Get, "/a.css", None);
        part.file.range = Some(b"bytes=1-2");
        let r = answer(s, &part, &mut pb, &mut vf);
        assert!(matches!((r.status, r.body), (206, Body::Variant { start: 1, len: 2, .. })));
        let https = https_redirect(&ask(Method::Get, "/p", Some("x")), Some(b"h.test:80"), 443);
        assert_eq!((https.status, location(&https).as_str()), (308, "https://h.test/p?x"));
        assert_eq!(https_redirect(&ask(Method::Get, "/", None), None, 443).status, 400);
        std::fs::remove_dir_all(d).unwrap();
    }
}
