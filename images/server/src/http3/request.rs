//! A request stream's frame sequence (RFC 9114 §4.1): HEADERS, then DATA, then at most one trailing HEADERS;
//! unknown frames anywhere. DATA before HEADERS, or anything but unknown frames after the trailers, is
//! H3_FRAME_UNEXPECTED. A static server answers from the head: DATA is counted (content-length, §4.1.2), not kept,
//! and trailers are not decoded.

use super::error::{err, Code, ConnError};
use super::frame::{Frame, FrameReader, Limits, Role};

#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// The request's encoded field section (qpack::decode), whole.
    Head(&'a [u8]),
    /// A HEADERS frame of this length over our bound, skipped: answer 431 (the connection goes on).
    HeadTooLarge(u64),
    /// Request content bytes, in order, counted and dropped by the caller.
    Body(&'a [u8]),
    /// The trailing HEADERS (encoded field section, whole or over the bound).
    Trailers,
}

/// How a request stream ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// After a whole message.
    Complete,
    /// Before the head: the response stream is aborted with H3_REQUEST_INCOMPLETE (§4.1.2), a stream error.
    Incomplete,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Head,
    Body,
    Trailed,
}

pub struct RequestStream {
    frames: FrameReader,
    part: Part,
    body_bytes: u64,
}

impl RequestStream {
    pub fn new(limits: Limits) -> RequestStream {
        RequestStream { frames: FrameReader::new(Role::Request, limits), part: Part::Head, body_bytes: 0 }
    }

    /// Content bytes received so far (checked against content-length by the request layer).
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// Consumes bytes of the stream: how many, and an event if one completed.
    pub fn read<'a>(&'a mut self, input: &'a [u8]) -> Result<(usize, Option<Event<'a>>), ConnError> {
        let (used, frame) = self.frames.read(input)?;
        let Some(frame) = frame else { return Ok((used, None)) };
        let ev = match (self.part, frame) {
            (_, Frame::Unknown(_)) => None,
            (Part::Head, Frame::Headers(p)) => {
                self.part = Part::Body;
                Some(Event::Head(p))
            }
            (Part::Head, Frame::HeadersTooLarge(n)) => {
                self.part = Part::Body;
                Some(Event::HeadTooLarge(n))
            }
            (Part::Body, Frame::Data(d)) => {
                self.body_bytes += d.len() as u64;
                Some(Event::Body(d))
            }
            (Part::Body, Frame::Headers(_) | Frame::HeadersTooLarge(_)) => {
                self.part = Part::Trailed;
                Some(Event::Trailers)
            }
            (Part::Head, Frame::Data(_)) => return Err(err(Code::FrameUnexpected, "DATA before HEADERS")),
            (Part::Trailed, _) => return Err(err(Code::FrameUnexpected, "a frame after the trailers")),
            // The reader refuses control frames on a request stream at their head.
            _ => return Err(err(Code::FrameUnexpected, "a control frame on a request stream")),
        };
        Ok((used, ev))
    }

    /// The client ended the stream (FIN): inside a frame is H3_FRAME_ERROR (§7.1); before a head, incomplete.
    pub fn finish(&self) -> Result<End, ConnError> {
        if !self.frames.at_boundary() {
            return Err(err(Code::FrameError, "the stream ended inside a frame"));
        }
        Ok(if self.part == Part::Head { End::Incomplete } else { End::Complete })
    }
}

#[cfg(test)]
mod tests {
    use super::super::frame::{self, put_head};
    use super::*;

    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        Head(Vec<u8>),
        TooLarge(u64),
        Body(usize),
        Trailers,
    }

    /// Feeds `input` in pieces of `chunk` bytes; returns the events (bodies merged per event) and how it ended.
    fn run(input: &[u8], chunk: usize, limits: Limits) -> Result<(Vec<Seen>, End, u64), ConnError> {
        let mut r = RequestStream::new(limits);
        let mut seen = Vec::new();
        for piece in input.chunks(chunk) {
            let mut at = 0;
            loop {
                let (used, ev) = r.read(&piece[at..])?;
                at += used;
                match ev {
                    Some(Event::Head(h)) => seen.push(Seen::Head(h.to_vec())),
                    Some(Event::HeadTooLarge(n)) => seen.push(Seen::TooLarge(n)),
                    Some(Event::Body(b)) => seen.push(Seen::Body(b.len())),
                    Some(Event::Trailers) => seen.push(Seen::Trailers),
                    None if used == 0 => break,
                    None => {}
                }
            }
        }
        Ok((seen, r.finish()?, r.body_bytes()))
    }

    fn frame_of(ty: u64, payload: &[u8]) -> Vec<u8> {
        let mut o = Vec::new();
        put_head(&mut o, ty, payload.len() as u64);
        o.extend_from_slice(payload);
        o
    }

    #[test]
    fn a_whole_request_in_any_split() {
        let head = b"\x00\x00\xd1\xd7".to_vec(); // :method GET, :scheme https (static 17, 23)
        let input = [
            frame_of(0x21, b"pad"),
            frame_of(frame::HEADERS, &head),
            frame_of(frame::DATA, &[7; 300]),
            frame_of(frame::DATA, &[]),
            frame_of(0x4d44, &[1; 5000]),
            frame_of(frame::DATA, &[8; 20]),
            frame_of(frame::HEADERS, b"\x00\x00"),
            frame_of(0x21, b""),
        ]
        .concat();
        for chunk in [1, 2, 3, 7, 64, 1000, input.len()] {
            let (seen, end, body) = run(&input, chunk, Limits::default()).unwrap();
            assert_eq!(end, End::Complete, "chunk {chunk}");
            assert_eq!(body, 320, "chunk {chunk}");
            assert_eq!(seen[0], Seen::Head(head.clone()), "chunk {chunk}");
            assert_eq!(seen.last(), Some(&Seen::Trailers), "chunk {chunk}");
            let data: usize = seen.iter().map(|s| if let Seen::Body(n) = s { *n } else { 0 }).sum();
            assert_eq!(data, 320);
        }
    }

    #[test]
    fn oversized_head_is_skipped_not_buffered() {
        let limits = Limits { max_headers: 100, max_settings: 64 };
        let input = [frame_of(frame::HEADERS, &[0xaa; 101]), frame_of(frame::DATA, b"x")].concat();
        for chunk in [1, 50, 500] {
            let mut r = RequestStream::new(limits);
            let mut seen = Vec::new();
            for piece in input.chunks(chunk) {
                let mut at = 0;
                loop {
                    let (used, ev) = r.read(&piece[at..]).unwrap();
                    at += used;
                    match ev {
                        Some(Event::HeadTooLarge(n)) => seen.push(n),
                        Some(_) => {}
                        None if used == 0 => break,
                        None => {}
                    }
                }
                assert_eq!(r.frames.heap_bytes(), 0, "nothing of the oversized head was kept");
            }
            assert_eq!(seen, [101]);
            assert_eq!(r.finish(), Ok(End::Complete));
            assert_eq!(r.body_bytes(), 1);
        }
        // One byte under the bound is read.
        let (seen, _, _) = run(&frame_of(frame::HEADERS, &[0xaa; 100]), 7, limits).unwrap();
        assert_eq!(seen, [Seen::Head(vec![0xaa; 100])]);
    }

    #[test]
    fn sequence_and_framing_errors() {
        let h = frame_of(frame::HEADERS, b"\x00\x00");
        let cases: Vec<(Vec<u8>, Code)> = vec![
            (frame_of(frame::DATA, b"x"), Code::FrameUnexpected),
            ([h.clone(), h.clone(), h.clone()].concat(), Code::FrameUnexpected),
            ([h.clone(), h.clone(), frame_of(frame::DATA, b"")].concat(), Code::FrameUnexpected),
            ([h.clone(), frame_of(frame::SETTINGS, b"")].concat(), Code::FrameUnexpected),
            ([h.clone(), frame_of(frame::GOAWAY, b"\x00")].concat(), Code::FrameUnexpected),
            ([h.clone(), frame_of(frame::MAX_PUSH_ID, b"\x00")].concat(), Code::FrameUnexpected),
            ([h.clone(), frame_of(frame::CANCEL_PUSH, b"\x00")].concat(), Code::FrameUnexpected),
            ([h.clone(), frame_of(frame::PUSH_PROMISE, b"\x00\x00\x00")].concat(), Code::FrameUnexpected),
            (frame_of(0x02, b""), Code::FrameUnexpected),
            (frame_of(0x06, b""), Code::FrameUnexpected),
            (frame_of(0x08, b""), Code::FrameUnexpected),
            (frame_of(0x09, b""), Code::FrameUnexpected),
            // Ends inside a frame: its head, then its payload.
            (vec![0x01], Code::FrameError),
            (vec![0x01, 0x05, 0x00], Code::FrameError),
            ([h.clone(), vec![0x00, 0x03, b'a']].concat(), Code::FrameError),
        ];
        for (input, code) in cases {
            for chunk in [1, input.len()] {
                assert_eq!(run(&input, chunk, Limits::default()).unwrap_err().code, code, "{input:02x?} by {chunk}");
            }
        }
        assert_eq!(run(&[], 1, Limits::default()).unwrap().1, End::Incomplete);
        assert_eq!(run(&frame_of(0x21, b"zz"), 1, Limits::default()).unwrap().1, End::Incomplete);
    }
}
