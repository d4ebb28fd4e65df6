//! A response description (answer/reply.rs) framed for HTTP/3: a HEADERS frame whose section is QPACK with the
//! static table only, then the head of one DATA frame carrying the whole body (QUIC streams have no frame size
//! limit worth cutting at; the body itself goes to the stream by handle, not through this buffer). The fields
//! are exactly HTTP/2's: `http2::respond::frame_with` decides them once for both protocols, with QPACK's field
//! encoder (`Qpack`) in place of HPACK's.
//!
//! A file's 200 section is encoded once per variant, by the first worker that serves the variant over HTTP/3,
//! and kept in it (`Variant::h3_200`): a hit is a copy, where framing the head (mostly encoding those fields,
//! Huffman included) took 6–9 % of the server's CPU on the h3 rows (docs/bench/h3-cost-2026-12-03.md). It is not
//! encoded at load time as `h2_200` is: a process without `--http3` would pay its bytes for every file of every
//! site. (A worker's direct-mapped cache of sections came first; with 1,000 files in its 1,024 slots, a third of
//! the requests still encoded: docs/bench/h3-head-2026-12-05.md.)

use super::frame;
use super::qpack::encode;
use crate::answer::reply::Reply;
use crate::http2::respond::{self, Coder, Framed};
use crate::site::content::Variant;

/// QPACK with the static table only (http3/qpack/encode.rs); a file's 200 section is the variant's own.
pub struct Qpack;

impl Coder for Qpack {
    #[inline]
    fn status(out: &mut Vec<u8>, code: u16) {
        encode::status(out, code);
    }
    #[inline]
    fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        encode::field(out, name, value);
    }
    #[inline]
    fn file_200(&mut self, out: &mut Vec<u8>, v: &Variant) {
        // Once per variant: the first HTTP/3 answer encodes (and allocates), every later one copies. Workers
        // racing on a new variant both encode, and the one that loses frees its own: no worker waits.
        out.extend_from_slice(v.h3_200.get_or_init(|| Box::new(variant_section(v.len, &v.fields))));
    }
}

/// The 200 section of a whole variant (`:status`, `content-length`, its fields), without the section prefix:
/// what `Variant::h3_200` keeps. At most one byte per field line longer than the variant's HPACK block
/// (`h2_200`): the same Huffman strings, name references no longer (QPACK's static table has every name HPACK's
/// has, at an index at most as long), a literal name one byte longer at most (a 3-bit length prefix against 7).
/// site/footprint.rs charges it by that bound.
pub fn variant_section(len: u64, fields: &[u8]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(fields.len());
    encode::status(&mut out, 200);
    respond::length::<Qpack>(&mut out, len);
    respond::text_fields_with::<Qpack>(&mut out, fields);
    out.into_boxed_slice()
}

/// The per-second field lines after every head (`Date`, and `Strict-Transport-Security` with `--hsts`), from
/// their HTTP/1.1 text; no section prefix: they follow the head's.
pub fn date_block(out: &mut Vec<u8>, lines: &[u8]) {
    out.clear();
    respond::text_fields_with::<Qpack>(out, lines);
}

/// Writes into `out` (cleared) the HEADERS frame of `r` with `date` as its last field lines, and when the reply
/// has body bytes, the head of the DATA frame that carries them. `section` and `loc` are the worker's scratch.
pub fn frame(out: &mut Vec<u8>, section: &mut Vec<u8>, loc: &mut Vec<u8>, r: &Reply, date: &[u8]) -> Framed {
    section.clear();
    encode::prefix(section);
    let f = respond::frame_with(&mut Qpack, section, loc, r);
    out.clear();
    frame::put_head(out, frame::HEADERS, (section.len() + date.len()) as u64);
    out.extend_from_slice(section);
    out.extend_from_slice(date);
    if f.body.is_some() && f.body_len > 0 {
        frame::put_head(out, frame::DATA, f.body_len);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::frame::{Frame, FrameReader, Limits, Role};
    use super::super::qpack::decode;
    use super::*;
    use crate::answer::reply::{Body, Head, Location};
    use crate::http2::hpack::FieldList;
    use crate::site::content::Variant;

    /// Reads `out` back as frames: the decoded head and the DATA length announced.
    fn read_back(out: &[u8]) -> (Vec<(String, String)>, Option<u64>) {
        let mut r = FrameReader::new(Role::Request, Limits::default());
        let (used, f) = r.read(out).unwrap();
        let Some(Frame::Headers(section)) = f else { panic!("HEADERS first") };
        let mut l = FieldList::new(1 << 16);
        decode::decode(section, &mut l, 100).unwrap();
        let fields = l
            .iter()
            .map(|(n, v)| (String::from_utf8_lossy(n).into_owned(), String::from_utf8_lossy(v).into_owned()))
            .collect();
        let rest = &out[used..];
        let data = (!rest.is_empty()).then(|| {
            let (ty, n) = super::super::varint::decode(rest).unwrap();
            assert_eq!(ty, frame::DATA);
            let (len, m) = super::super::varint::decode(&rest[n..]).unwrap();
            assert_eq!(n + m, rest.len(), "only the DATA head, the body goes by handle");
            len
        });
        (fields, data)
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    fn variant(len: u64, fields: &str) -> Variant {
        Variant {
            body: crate::site::content::Body::Mem(std::sync::Arc::from(vec![b'x'; len as usize])),
            len,
            etag: Box::from(&b"\"e\""[..]),
            fields: fields.as_bytes().into(),
            head_200: Box::default(),
            fields_304: Box::default(),
            h2_200: Box::default(),
            h3_200: Default::default(),
        }
    }

    fn file_reply(v: &Variant) -> Reply<'_> {
        Reply { private: false, status: 200, head: Head::File { v, cors: None }, body: Body::None }
    }

    /// A file's 200 section is encoded by the first answer, kept in the variant, and copied by the next.
    #[test]
    fn a_file_section_is_encoded_once_and_kept_in_the_variant() {
        let (mut out, mut sec, mut loc) = (Vec::new(), Vec::new(), Vec::new());
        let v = variant(10, "Content-Type: text/css\r\nETag: \"e\"\r\n");
        assert!(v.h3_200.get().is_none(), "nothing encoded at load");
        frame(&mut out, &mut sec, &mut loc, &file_reply(&v), &[]);
        assert_eq!(
            read_back(&out).0,
            pairs(&[(":status", "200"), ("content-length", "10"), ("content-type", "text/css"), ("etag", "\"e\"")])
        );
        let kept = v.h3_200.get().expect("kept after the first answer").as_ptr();
        let first = out.clone();
        frame(&mut out, &mut sec, &mut loc, &file_reply(&v), &[]);
        assert_eq!(out, first, "the second answer copies what the first encoded");
        assert_eq!(v.h3_200.get().unwrap().as_ptr(), kept, "not encoded again");
    }

    /// The bound site/footprint.rs charges a section by: the variant's HPACK block plus one byte per field line,
    /// over typical files, an encoded variant and custom header rules with long literal names.
    #[test]
    fn a_section_is_at_most_the_hpack_block_and_a_byte_per_field() {
        let cases = [
            "Content-Type: text/html; charset=utf-8\r\nETag: \"0123456789abcdef0123\"\r\nLast-Modified: Wed, 02 Dec 2026 08:00:00 GMT\r\nCache-Control: public, max-age=0, must-revalidate\r\nAccept-Ranges: bytes\r\n",
            "Content-Type: application/javascript\r\nContent-Encoding: br\r\nVary: Accept-Encoding\r\nETag: \"0123456789abcdef0123-br\"\r\n",
            "Content-Type: image/png\r\nX-Frame-Options: DENY\r\nX-Content-Type-Options: nosniff\r\nPermissions-Policy: geolocation=()\r\nX-Custom-Header-With-A-Long-Name: v\r\nAbcdefg: 1\r\nAbcdef: 2\r\n",
        ];
        for fields in cases {
            for len in [0, 100, 8192, 1 << 40] {
                let h3 = variant_section(len, fields.as_bytes());
                let h2 = crate::http2::respond::variant_block(len, fields.as_bytes());
                let lines = fields.matches('\n').count() + 2; // :status and content-length too
                assert!(h3.len() <= h2.len() + lines, "{fields:?} {len}: {} > {} + {lines}", h3.len(), h2.len());
            }
        }
    }

    #[test]
    fn plain_and_redirect_heads_with_the_date_lines() {
        let (mut out, mut sec, mut loc, mut date) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        date_block(&mut date, b"Date: Wed, 02 Dec 2026 08:00:00 GMT\r\n");
        let f = frame(&mut out, &mut sec, &mut loc, &Reply::plain(404, false, false), &date);
        assert_eq!((f.status, f.body_len), (404, 14));
        let (fields, data) = read_back(&out);
        assert_eq!(
            fields,
            pairs(&[
                (":status", "404"),
                ("content-type", "text/plain; charset=utf-8"),
                ("content-length", "14"),
                ("date", "Wed, 02 Dec 2026 08:00:00 GMT"),
            ])
        );
        assert_eq!(data, Some(14));
        // HEAD: the same head, no DATA frame.
        frame(&mut out, &mut sec, &mut loc, &Reply::plain(404, false, true), &date);
        assert_eq!(read_back(&out).1, None);
        let r = Reply::redirect(301, Location::Slash { path: b"/docs", query: None });
        frame(&mut out, &mut sec, &mut loc, &r, &[]);
        assert_eq!(
            read_back(&out),
            (pairs(&[(":status", "301"), ("location", "/docs/"), ("content-length", "0")]), None)
        );
        let r =
            Reply { private: false, status: 416, head: Head::Unsatisfiable { len: 9, vary: false }, body: Body::None };
        frame(&mut out, &mut sec, &mut loc, &r, &[]);
        assert_eq!(
            read_back(&out).0,
            pairs(&[(":status", "416"), ("content-range", "bytes */9"), ("content-length", "0")])
        );
    }
}
