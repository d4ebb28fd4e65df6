//! Answers a request a redirect rule matched: a redirect (Location from the rule, query kept) or a rewrite
//! (another file of the site served under the request's URL, with the status of a normal file response).

use super::matcher::Captures;
use super::parse::Rule;
use super::target;
use crate::http1::out::Out;
use crate::http1::parser::{Request, Version};
use crate::http1::respond::{self, Ctx, Resp};
use crate::site::content::Target;

/// None: a rewrite whose target is not in the site (the request goes on as if no rule matched).
#[allow(clippy::too_many_arguments)]
pub fn apply(
    out: &mut Out,
    ctx: &Ctx,
    req: &Request,
    rule: &Rule,
    path: &[u8],
    caps: &Captures,
    scratch: &mut [u8],
    close: bool,
) -> Option<Resp> {
    if rule.is_rewrite() {
        let p = target::rewrite_path(rule, path, caps, scratch)?;
        let i = match ctx.table.lookup(p)? {
            Target::File(i) => i,
            Target::Moved(k) => ctx.table.rules.moved[k as usize].1,
            Target::Redirect => return None,
        };
        return Some(respond::serve(out, ctx, req, ctx.table.entry(i), close));
    }
    let start = out.buf.len();
    respond::status_line(out, rule.status);
    out.bytes(b"Location: ");
    let at = out.buf.len();
    target::write_location(out, rule, path, caps, req.query);
    // `/:splat` with a splat of `/evil.example` (from `/x//evil.example`) must not become `//evil.example`.
    respond::keep_on_site(out, at);
    out.bytes(b"\r\nContent-Length: 0\r\n");
    respond::end_head(out, ctx, close, req.version == Version::Http10);
    Some(Resp { status: rule.status, close, bytes: (out.buf.len() - start) as u64, body: 0 })
}

/// A clean URL's canonical redirect (301 to `location`, query kept).
pub fn moved(out: &mut Out, ctx: &Ctx, req: &Request, location: &[u8], close: bool) -> Resp {
    let start = out.buf.len();
    respond::status_line(out, 301);
    out.bytes(b"Location: ");
    let at = out.buf.len();
    out.bytes(location);
    respond::keep_on_site(out, at);
    if let Some(q) = req.query.filter(|q| !q.is_empty()) {
        out.bytes(b"?");
        out.bytes(q);
    }
    out.bytes(b"\r\nContent-Length: 0\r\n");
    respond::end_head(out, ctx, close, req.version == Version::Http10);
    Resp { status: 301, close, bytes: (out.buf.len() - start) as u64, body: 0 }
}
