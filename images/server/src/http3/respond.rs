//! A response description (answer/reply.rs) framed for HTTP/3: a HEADERS frame whose section is QPACK with the
//! static table only, then the head of one DATA frame carrying the whole body (QUIC streams have no frame size
//! limit worth cutting at; the body itself goes to the stream by handle, not through this buffer). The fields
//! are exactly HTTP/2's: `http2::respond::frame_with` decides them once for both protocols, with QPACK's field
//! encoder (`Qpack`) in place of HPACK's.
//!
//! Not yet: a file's 200 section encoded once at load time (`Variant::h3_200`, as `h2_200`); it is encoded per
//! response from the variant's text fields, which costs a few hundred nanoseconds a response.

use super::frame;
use super::qpack::encode;
use crate::answer::reply::Reply;
use crate::http2::respond::{self, Coder, Framed};
use crate::site::content::Variant;

/// QPACK with the static table only (http3/qpack/encode.rs).
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
    fn file_200(out: &mut Vec<u8>, v: &Variant) {
        encode::status(out, 200);
        respond::length::<Qpack>(out, v.len);
        respond::text_fields_with::<Qpack>(out, &v.fields);
    }
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
    let f = respond::frame_with::<Qpack>(section, loc, r);
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
