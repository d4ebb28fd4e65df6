//! A response description (answer/reply.rs) framed for HTTP/3: a HEADERS frame whose section is QPACK with the
//! static table only, then the head of one DATA frame carrying the whole body (QUIC streams have no frame size
//! limit worth cutting at; the body itself goes to the stream by handle, not through this buffer). The fields
//! are exactly HTTP/2's: `http2::respond::frame_with` decides them once for both protocols, with QPACK's field
//! encoder (`Qpack`) in place of HPACK's.
//!
//! A file's 200 section is not encoded at load time (there is no `Variant::h3_200` beside `h2_200`: every site
//! would pay its memory, with or without `--http3`). Each worker remembers the sections of the files it served
//! lately instead (`Qpack`, a cache it owns: no lock), checked against the variant's length and fields, so a hit
//! is a compare and a copy where framing the head (mostly encoding those fields, Huffman included) took 6–9 % of
//! the server's CPU on the h3 rows (docs/bench/h3-cost-2026-12-03.md).

use super::frame;
use super::qpack::encode;
use crate::answer::reply::Reply;
use crate::http2::respond::{self, Coder, Framed};
use crate::site::content::Variant;

/// QPACK with the static table only (http3/qpack/encode.rs), and a worker's cache of files' 200 sections.
///
/// The cache is direct-mapped: `SLOTS` slots, a variant's slot chosen by its address. The address only picks the
/// slot; a hit needs the same length and the same field bytes, which are all the section is made of, so a variant
/// freed by a reload whose address is reused by another can never get the old one's section. A slot's buffers are
/// reused when another file takes it, so once warm a miss encodes without allocating. Memory: at most `SLOTS` ×
/// (`MAX_FIELDS` + its section), about 1 MiB per worker at the very worst, ~300 KiB for typical fields; only
/// workers serving HTTP/3 have one.
pub struct Qpack {
    slots: Vec<Section>,
}

#[derive(Default)]
struct Section {
    len: u64,
    fields: Vec<u8>,
    block: Vec<u8>,
}

/// Slots in the cache (a power of two).
const SLOTS: usize = 1024;
/// Variants with more field bytes than this are encoded every time (rare: custom header rules).
const MAX_FIELDS: usize = 512;

impl Qpack {
    /// An empty cache: the slot table (56 KiB) now, each slot's buffers when a file first lands in it.
    pub fn new() -> Qpack {
        Qpack { slots: (0..SLOTS).map(|_| Section::default()).collect() }
    }
}

impl Default for Qpack {
    fn default() -> Qpack {
        Qpack::new()
    }
}

impl Coder for Qpack {
    #[inline]
    fn status(out: &mut Vec<u8>, code: u16) {
        encode::status(out, code);
    }
    #[inline]
    fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        encode::field(out, name, value);
    }
    fn file_200(&mut self, out: &mut Vec<u8>, v: &Variant) {
        // Fibonacci hashing of the address: allocations are 16-byte aligned and close together.
        let at = (v as *const Variant as usize as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.ilog2());
        let s = &mut self.slots[at as usize];
        if s.len == v.len && !s.block.is_empty() && s.fields[..] == v.fields[..] {
            out.extend_from_slice(&s.block);
            return;
        }
        let from = out.len();
        encode::status(out, 200);
        respond::length::<Qpack>(out, v.len);
        respond::text_fields_with::<Qpack>(out, &v.fields);
        if v.fields.len() <= MAX_FIELDS {
            s.len = v.len;
            s.fields.clear();
            s.fields.extend_from_slice(&v.fields);
            s.block.clear();
            s.block.extend_from_slice(&out[from..]);
        }
    }
}

/// The per-second field lines after every head (`Date`, and `Strict-Transport-Security` with `--hsts`), from
/// their HTTP/1.1 text; no section prefix: they follow the head's.
pub fn date_block(out: &mut Vec<u8>, lines: &[u8]) {
    out.clear();
    respond::text_fields_with::<Qpack>(out, lines);
}

/// Writes into `out` (cleared) the HEADERS frame of `r` with `date` as its last field lines, and when the reply
/// has body bytes, the head of the DATA frame that carries them. `section` and `loc` are the worker's scratch,
/// `q` its cache of files' sections.
pub fn frame(
    q: &mut Qpack,
    out: &mut Vec<u8>,
    section: &mut Vec<u8>,
    loc: &mut Vec<u8>,
    r: &Reply,
    date: &[u8],
) -> Framed {
    section.clear();
    encode::prefix(section);
    let f = respond::frame_with(q, section, loc, r);
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
        }
    }

    fn file_reply(v: &Variant) -> Reply<'_> {
        Reply { private: false, status: 200, head: Head::File { v, cors: None }, body: Body::None }
    }

    /// The cache gives the bytes encoding gives, and a variant whose fields or length differ at the same address
    /// (a reload reusing freed memory) gets its own section, not the cached one.
    #[test]
    fn cached_file_sections_are_the_encoded_ones_and_follow_the_variant() {
        let (mut out, mut sec, mut loc) = (Vec::new(), Vec::new(), Vec::new());
        let mut q = Qpack::new();
        let mut v = variant(10, "Content-Type: text/css\r\nETag: \"e\"\r\n");
        frame(&mut q, &mut out, &mut sec, &mut loc, &file_reply(&v), &[]);
        let first = out.clone();
        frame(&mut q, &mut out, &mut sec, &mut loc, &file_reply(&v), &[]);
        assert_eq!(out, first, "a hit copies what the miss encoded");
        let fields = |v: &Variant, q: &mut Qpack, out: &mut Vec<u8>| {
            frame(q, out, &mut Vec::new(), &mut Vec::new(), &file_reply(v), &[]);
            read_back(out).0
        };
        assert_eq!(
            fields(&v, &mut q, &mut out),
            pairs(&[(":status", "200"), ("content-length", "10"), ("content-type", "text/css"), ("etag", "\"e\"")])
        );
        // Same address, other fields; then other length.
        v.fields = b"Content-Type: text/html\r\n"[..].into();
        assert_eq!(
            fields(&v, &mut q, &mut out),
            pairs(&[(":status", "200"), ("content-length", "10"), ("content-type", "text/html")])
        );
        v.len = 11;
        assert_eq!(
            fields(&v, &mut q, &mut out),
            pairs(&[(":status", "200"), ("content-length", "11"), ("content-type", "text/html")])
        );
        // A fresh cache encodes the same bytes.
        let mut fresh = Vec::new();
        frame(&mut Qpack::new(), &mut fresh, &mut Vec::new(), &mut Vec::new(), &file_reply(&v), &[]);
        frame(&mut q, &mut out, &mut Vec::new(), &mut Vec::new(), &file_reply(&v), &[]);
        assert_eq!(out, fresh);
    }

    #[test]
    fn plain_and_redirect_heads_with_the_date_lines() {
        let (mut out, mut sec, mut loc, mut date) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut q = Qpack::new();
        date_block(&mut date, b"Date: Wed, 02 Dec 2026 08:00:00 GMT\r\n");
        let f = frame(&mut q, &mut out, &mut sec, &mut loc, &Reply::plain(404, false, false), &date);
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
        frame(&mut q, &mut out, &mut sec, &mut loc, &Reply::plain(404, false, true), &date);
        assert_eq!(read_back(&out).1, None);
        let r = Reply::redirect(301, Location::Slash { path: b"/docs", query: None });
        frame(&mut q, &mut out, &mut sec, &mut loc, &r, &[]);
        assert_eq!(
            read_back(&out),
            (pairs(&[(":status", "301"), ("location", "/docs/"), ("content-length", "0")]), None)
        );
        let r =
            Reply { private: false, status: 416, head: Head::Unsatisfiable { len: 9, vary: false }, body: Body::None };
        frame(&mut q, &mut out, &mut sec, &mut loc, &r, &[]);
        assert_eq!(
            read_back(&out).0,
            pairs(&[(":status", "416"), ("content-range", "bytes */9"), ("content-length", "0")])
        );
    }
}
