//! A response description (answer/reply.rs) framed as an HTTP/2 head: the HPACK block (`:status`, the fields
//! the description names, then the per-second Date block) and the body handle `Conn::respond` keeps. As
//! http1/frame.rs does for text, the framing decides nothing: each `Head` kind names its fields, and a file's
//! 200 head is the block encoded once at load time (`variant_block`, kept in `Variant::h2_200`).
//!
//! The HTTP/1.1 blocks the core hands out (a variant's fields, a CORS rule's lines) are `Name: value\r\n` text;
//! `text_fields` turns such text into HPACK with lowercase names. Only the 200 of a whole file is hot enough to
//! be precomputed; 206, 304 and the CORS lines convert at answer time into the worker's reused head buffer.

use std::fs::File;
use std::sync::Arc;

use super::hpack::encode;
use crate::answer::reply::{self, Body, Head, Reply};
use crate::site::content;

/// A response body the connection keeps until its DATA is sent: the bytes stay alive through the handle,
/// whatever reload happens meanwhile.
#[derive(Clone)]
pub enum BodyRef {
    Static(&'static [u8]),
    Mem(Arc<[u8]>),
    Disk(Arc<File>),
}

/// What the worker needs of a framed reply: the status (metrics, log), the body bytes (log) and the handle.
pub struct Framed {
    pub status: u16,
    pub body_len: u64,
    pub body: Option<(BodyRef, u64, u64)>,
}

/// Writes `n` in decimal into `tmp`.
fn decimal(n: u64, tmp: &mut [u8; 20]) -> &[u8] {
    let (mut i, mut n) = (tmp.len(), n);
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &tmp[i..];
        }
    }
}

/// The field encoding a head is framed with: HPACK (`Hpack`, here) or QPACK with the static table only
/// (http3/respond.rs). Static dispatch: the HTTP/2 path compiles to what it was before HTTP/3 shared it.
pub trait Coder {
    fn status(out: &mut Vec<u8>, code: u16);
    /// One field line (name lowercase).
    fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]);
    /// The 200 head of the whole variant `v` (`:status`, `content-length`, its fields); `self` may remember it.
    fn file_200(&mut self, out: &mut Vec<u8>, v: &content::Variant);
}

/// HTTP/2's field encoding; a file's 200 head is the block encoded at load time.
pub struct Hpack;

impl Coder for Hpack {
    #[inline]
    fn status(out: &mut Vec<u8>, code: u16) {
        encode::status(out, code);
    }
    #[inline]
    fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        encode::field(out, name, value);
    }
    #[inline]
    fn file_200(&mut self, out: &mut Vec<u8>, v: &content::Variant) {
        out.extend_from_slice(&v.h2_200);
    }
}

/// Appends `content-length: n`.
pub fn length<C: Coder>(out: &mut Vec<u8>, n: u64) {
    let mut tmp = [0u8; 20];
    C::field(out, b"content-length", decimal(n, &mut tmp));
}

/// Appends each `Name: value\r\n` line of `text` as an HPACK field with its name lowercased (HTTP/2 field
/// names are lowercase, RFC 9113 §8.2.1). Lines without `: ` are skipped (the blocks never have any).
pub fn text_fields(out: &mut Vec<u8>, text: &[u8]) {
    text_fields_with::<Hpack>(out, text)
}

/// `text_fields` with the field encoding `C`.
pub fn text_fields_with<C: Coder>(out: &mut Vec<u8>, text: &[u8]) {
    let mut name = [0u8; 128];
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        let (n, v) = (&line[..colon], line[colon + 1..].trim_ascii());
        if n.len() <= name.len() {
            for (d, s) in name.iter_mut().zip(n) {
                *d = s.to_ascii_lowercase();
            }
            C::field(out, &name[..n.len()], v);
        } else {
            // Longer than any real header name: not worth a stack buffer.
            C::field(out, &n.to_ascii_lowercase(), v);
        }
    }
}

/// The 200 head of a whole variant (`:status`, `content-length`, its fields), encoded once at load time.
pub fn variant_block(len: u64, fields: &[u8]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(fields.len());
    encode::status(&mut out, 200);
    length::<Hpack>(&mut out, len);
    text_fields(&mut out, fields);
    out.into_boxed_slice()
}

/// The per-second block after every head: `date`, and `strict-transport-security` on TLS when `--hsts`.
pub fn date_block(out: &mut Vec<u8>, date_line: &[u8]) {
    out.clear();
    text_fields(out, date_line);
}

const ALLOW: &[u8] = b"GET, HEAD, OPTIONS";

/// Frames `r` into `head` (cleared first): the HPACK block without the Date block, which the caller appends as
/// the head's last part. `loc` is scratch for a redirect's Location (both buffers are the worker's, reused).
pub fn frame(head: &mut Vec<u8>, loc: &mut Vec<u8>, r: &Reply) -> Framed {
    head.clear();
    frame_with(&mut Hpack, head, loc, r)
}

/// `frame` with the field encoding `C`, appending to `head`.
pub fn frame_with<C: Coder>(c: &mut C, head: &mut Vec<u8>, loc: &mut Vec<u8>, r: &Reply) -> Framed {
    // A pool's disk body is opened before the head is framed (as http1/frame.rs does): gone or changed since its
    // load, the reply is a 503 rather than a head whose length would lie. The stream's handle keeps it open.
    let mut opened = None;
    if let Body::Variant { v, .. } = r.body {
        if let content::Body::Path(p) = &v.body {
            match p.open() {
                Some(f) => opened = Some(Arc::new(f)),
                None => return frame_with(c, head, loc, &Reply::later(503, false)),
            }
        }
    }
    // A previous deploy's file (skew protection) likewise.
    if let Body::Stale(f) = r.body {
        match f.open() {
            Some(f) => opened = Some(Arc::new(f)),
            None => return frame_with(c, head, loc, &Reply::later(503, false)),
        }
    }
    let mut cors = None;
    let mut tmp = [0u8; 20];
    match r.head {
        Head::File { v, cors: line } => {
            c.file_200(head, v);
            cors = line;
        }
        Head::Part { v, start, len, cors: line } => {
            C::status(head, r.status);
            let mut range = [0u8; 70];
            let n = {
                let mut w = &mut range[..];
                let _ =
                    std::io::Write::write_fmt(&mut w, format_args!("bytes {}-{}/{}", start, start + len - 1, v.len));
                70 - w.len()
            };
            C::field(head, b"content-range", &range[..n]);
            length::<C>(head, len);
            text_fields_with::<C>(head, &v.fields);
            cors = line;
        }
        Head::NotModified { v, cors: line } => {
            C::status(head, r.status);
            text_fields_with::<C>(head, &v.fields_304);
            cors = line;
        }
        Head::Unsatisfiable { len, vary } => {
            C::status(head, r.status);
            let mut range = [0u8; 28];
            range[..8].copy_from_slice(b"bytes */");
            let d = decimal(len, &mut tmp);
            range[8..8 + d.len()].copy_from_slice(d);
            C::field(head, b"content-range", &range[..8 + d.len()]);
            length::<C>(head, 0);
            if vary {
                C::field(head, b"vary", b"Accept-Encoding");
            }
        }
        Head::Page { e, allow } => {
            C::status(head, r.status);
            C::field(head, b"content-type", e.mime.as_bytes());
            length::<C>(head, e.identity().len);
            C::field(head, b"cache-control", if r.private { b"private, no-cache" } else { b"no-cache" });
            if allow {
                C::field(head, b"allow", ALLOW);
            }
        }
        Head::Plain { allow } => {
            C::status(head, r.status);
            C::field(head, b"content-type", b"text/plain; charset=utf-8");
            length::<C>(head, reply::text(r.status).len() as u64);
            if allow {
                C::field(head, b"allow", ALLOW);
            }
        }
        Head::Later { after } => {
            C::status(head, r.status);
            C::field(head, b"content-type", b"text/plain; charset=utf-8");
            length::<C>(head, reply::text(r.status).len() as u64);
            C::field(head, b"retry-after", decimal(after as u64, &mut tmp));
        }
        Head::Options { granted, vary_origin } => {
            C::status(head, r.status);
            C::field(head, b"allow", ALLOW);
            if let Some((origin_line, lines)) = granted {
                text_fields_with::<C>(head, origin_line);
                text_fields_with::<C>(head, lines);
            }
            if vary_origin {
                C::field(head, b"vary", b"Origin");
            }
        }
        Head::Redirect(to) => {
            C::status(head, r.status);
            // The value is written in pieces, then encoded whole (Huffman needs its length first).
            loc.clear();
            to.write(&mut |b: &[u8]| loc.extend_from_slice(b));
            C::field(head, b"location", loc);
            length::<C>(head, 0);
        }
        Head::Unauthorized { challenge } => {
            C::status(head, r.status);
            C::field(head, b"content-type", b"text/plain; charset=utf-8");
            length::<C>(head, reply::text(r.status).len() as u64);
            C::field(head, b"www-authenticate", challenge.as_bytes());
        }
        Head::Stale(f) => {
            C::status(head, r.status);
            let mut ct = [0u8; 128];
            let t: &[u8] = if f.text { b"; charset=utf-8" } else { b"" };
            let n = f.mime.len() + t.len();
            if n <= ct.len() {
                ct[..f.mime.len()].copy_from_slice(f.mime.as_bytes());
                ct[f.mime.len()..n].copy_from_slice(t);
                C::field(head, b"content-type", &ct[..n]);
            } else {
                C::field(head, b"content-type", f.mime.as_bytes());
            }
            length::<C>(head, f.len);
            C::field(head, b"cache-control", crate::skew::CACHE_CONTROL.as_bytes());
            C::field(head, b"x-hyperstatic-deploy", f.tree.commit.as_bytes());
        }
    }
    // As HTTP/1.1 (http1/frame.rs): the answers without a Cache-Control of their own.
    if r.private
        && !matches!(
            r.head,
            Head::File { .. } | Head::Part { .. } | Head::NotModified { .. } | Head::Page { .. } | Head::Stale(_)
        )
    {
        C::field(head, b"cache-control", b"private");
    }
    if let Some(line) = cors {
        text_fields_with::<C>(head, line);
    }
    let body = match r.body {
        Body::None => None,
        Body::Static(b) => Some((BodyRef::Static(b), 0, b.len() as u64)),
        Body::Variant { v, start, len } => {
            let h = match &v.body {
                content::Body::Mem(b) => BodyRef::Mem(b.clone()),
                content::Body::Disk(f) => BodyRef::Disk(f.clone()),
                content::Body::Path(_) => match opened {
                    Some(f) => BodyRef::Disk(f),
                    None => unreachable!("a path body is opened above"),
                },
            };
            Some((h, start, start + len))
        }
        Body::Stale(s) => match opened {
            Some(f) => Some((BodyRef::Disk(f), 0, s.len)),
            None => unreachable!("a stale body is opened above"),
        },
    };
    Framed { status: r.status, body_len: r.body.bytes(), body }
}

#[cfg(test)]
mod tests {
    use super::super::hpack::{Decoder, FieldList};
    use super::*;
    use crate::answer::reply::Location;

    fn decoded(block: &[u8]) -> Vec<(String, String)> {
        let mut l = FieldList::new(1 << 16);
        Decoder::new(4096).decode(block, &mut l).unwrap();
        l.iter()
            .map(|(n, v)| (String::from_utf8_lossy(n).into_owned(), String::from_utf8_lossy(v).into_owned()))
            .collect()
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn text_lines_become_lowercase_fields() {
        let mut o = Vec::new();
        text_fields(&mut o, b"Content-Type: text/css\r\nETag: \"e\"\r\nX-Frame-Options: DENY\r\n");
        assert_eq!(decoded(&o), pairs(&[("content-type", "text/css"), ("etag", "\"e\""), ("x-frame-options", "DENY")]));
        let b = variant_block(10, b"Content-Type: text/css\r\n");
        assert_eq!(decoded(&b), pairs(&[(":status", "200"), ("content-length", "10"), ("content-type", "text/css")]));
    }

    #[test]
    fn redirects_plain_and_unsatisfiable() {
        let (mut h, mut l) = (Vec::new(), Vec::new());
        let f = frame(
            &mut h,
            &mut l,
            &Reply::redirect(301, Location::Slash { path: b"//evil.example/d", query: Some(b"q") }),
        );
        assert!(f.body.is_none());
        assert_eq!(
            decoded(&h),
            pairs(&[(":status", "301"), ("location", "/evil.example/d/?q"), ("content-length", "0")])
        );
        let f = frame(&mut h, &mut l, &Reply::plain(405, true, false));
        assert_eq!((f.status, f.body_len), (405, 23));
        assert_eq!(
            decoded(&h),
            pairs(&[
                (":status", "405"),
                ("content-type", "text/plain; charset=utf-8"),
                ("content-length", "23"),
                ("allow", "GET, HEAD, OPTIONS")
            ])
        );
        let r = Reply {
            private: false,
            status: 416,
            head: Head::Unsatisfiable { len: 1700, vary: true },
            body: Body::None,
        };
        frame(&mut h, &mut l, &r);
        assert_eq!(
            decoded(&h),
            pairs(&[
                (":status", "416"),
                ("content-range", "bytes */1700"),
                ("content-length", "0"),
                ("vary", "Accept-Encoding")
            ])
        );
    }
}
