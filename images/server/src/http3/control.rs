//! The client's control stream (RFC 9114 §6.2.1, §7.2): SETTINGS first and once, then GOAWAY, MAX_PUSH_ID,
//! CANCEL_PUSH and unknown frames. A server that never pushes still checks the push frames as the RFC says:
//! MAX_PUSH_ID may not decrease, a client's GOAWAY may not increase, and any CANCEL_PUSH names a push we never
//! promised (H3_ID_ERROR).

use super::error::{err, Code, ConnError};
use super::frame::{Frame, FrameReader, Limits, Role};
use super::settings::{self, PeerSettings};

/// What the connection acts on.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    Settings(PeerSettings),
    /// The client's GOAWAY: the push ID from which it refuses pushes (we send none; it also announces the
    /// client's shutdown, so the connection can close once its requests are answered).
    Goaway(u64),
}

pub struct ControlStream {
    frames: FrameReader,
    settings: bool,
    goaway: Option<u64>,
    max_push_id: Option<u64>,
    /// Frames that did nothing (unknown types, MAX_PUSH_ID), for the connection's meter.
    idle_frames: u64,
}

impl ControlStream {
    pub fn new(limits: Limits) -> ControlStream {
        ControlStream {
            frames: FrameReader::new(Role::Control, limits),
            settings: false,
            goaway: None,
            max_push_id: None,
            idle_frames: 0,
        }
    }

    /// Frames that did no work so far (unknown and reserved types, MAX_PUSH_ID): the connection's flood meter
    /// reads it, as HTTP/2's does for PING and SETTINGS floods.
    pub fn idle_frames(&self) -> u64 {
        self.idle_frames
    }

    /// Consumes bytes of the stream (after its type): how many, and an event if one completed.
    pub fn read(&mut self, input: &[u8]) -> Result<(usize, Option<Event>), ConnError> {
        let (used, frame) = self.frames.read(input)?;
        let Some(frame) = frame else { return Ok((used, None)) };
        if !self.settings {
            let Frame::Settings(p) = frame else {
                return Err(err(Code::MissingSettings, "the control stream's first frame is not SETTINGS"));
            };
            self.settings = true;
            return Ok((used, Some(Event::Settings(settings::parse(p)?))));
        }
        let ev = match frame {
            Frame::Settings(_) => return Err(err(Code::FrameUnexpected, "a second SETTINGS")),
            Frame::Goaway(id) => {
                if self.goaway.is_some_and(|g| id > g) {
                    return Err(err(Code::IdError, "a GOAWAY with a larger id than the last"));
                }
                self.goaway = Some(id);
                Some(Event::Goaway(id))
            }
            Frame::MaxPushId(id) => {
                if self.max_push_id.is_some_and(|m| id < m) {
                    return Err(err(Code::IdError, "MAX_PUSH_ID decreased"));
                }
                self.max_push_id = Some(id);
                self.idle_frames += 1;
                None
            }
            // §7.2.3: beyond MAX_PUSH_ID, or (always, for a server that never sends PUSH_PROMISE) a push ID no
            // PUSH_PROMISE mentioned: H3_ID_ERROR either way.
            Frame::CancelPush(_) => return Err(err(Code::IdError, "CANCEL_PUSH for a push never promised")),
            Frame::Unknown(_) => {
                self.idle_frames += 1;
                None
            }
            // The reader refuses DATA and HEADERS on a control stream at their head.
            Frame::Headers(_) | Frame::HeadersTooLarge(_) | Frame::Data(_) => {
                return Err(err(Code::FrameUnexpected, "DATA or HEADERS on the control stream"))
            }
        };
        Ok((used, ev))
    }
}

#[cfg(test)]
mod tests {
    use super::super::frame::{self, put_goaway, put_head};
    use super::super::varint;
    use super::*;

    /// Feeds `input` a byte at a time (the hardest split) and returns every event, or the first error.
    fn run(input: &[u8]) -> Result<Vec<Event>, ConnError> {
        let mut c = ControlStream::new(Limits::default());
        let mut out = Vec::new();
        for b in input {
            let mut at = 0;
            let one = std::slice::from_ref(b);
            loop {
                let (used, ev) = c.read(&one[at..])?;
                at += used;
                match ev {
                    Some(e) => out.push(e),
                    None if used == 0 => break,
                    None => {}
                }
            }
        }
        Ok(out)
    }

    fn settings() -> Vec<u8> {
        let mut o = Vec::new();
        settings::put_ours(&mut o, 8192);
        o
    }

    fn one_varint(ty: u64, v: u64) -> Vec<u8> {
        let mut o = Vec::new();
        put_head(&mut o, ty, varint::size(v) as u64);
        varint::put(&mut o, v);
        o
    }

    #[test]
    fn settings_then_goaway_and_unknown() {
        let mut s = settings();
        put_head(&mut s, 0x21, 3);
        s.extend_from_slice(b"abc");
        s.extend(one_varint(frame::MAX_PUSH_ID, 4));
        s.extend(one_varint(frame::MAX_PUSH_ID, 4));
        put_goaway(&mut s, 10);
        put_goaway(&mut s, 10);
        put_goaway(&mut s, 2);
        let ev = run(&s).unwrap();
        assert!(matches!(ev[0], Event::Settings(p) if p.max_field_section_size == Some(8192)));
        assert_eq!(ev[1..], [Event::Goaway(10), Event::Goaway(10), Event::Goaway(2)]);
    }

    #[test]
    fn violations() {
        let grease_first = {
            let mut o = Vec::new();
            put_head(&mut o, 0x21, 0);
            o.extend(settings());
            o
        };
        let cases: Vec<(Vec<u8>, Code)> = vec![
            (one_varint(frame::GOAWAY, 0), Code::MissingSettings),
            (grease_first, Code::MissingSettings),
            ([settings(), settings()].concat(), Code::FrameUnexpected),
            ([settings(), one_varint(frame::CANCEL_PUSH, 0)].concat(), Code::IdError),
            (
                [settings(), one_varint(frame::MAX_PUSH_ID, 5), one_varint(frame::MAX_PUSH_ID, 4)].concat(),
                Code::IdError,
            ),
            ([settings(), one_varint(frame::GOAWAY, 4), one_varint(frame::GOAWAY, 8)].concat(), Code::IdError),
            ([settings(), vec![0x00, 0x00]].concat(), Code::FrameUnexpected),
            ([settings(), vec![0x01, 0x01, 0x00]].concat(), Code::FrameUnexpected),
            ([settings(), vec![0x05, 0x01, 0x00]].concat(), Code::FrameUnexpected),
            ([settings(), vec![0x07, 0x02, 0x00, 0x00]].concat(), Code::FrameError),
        ];
        for (input, code) in cases {
            assert_eq!(run(&input).unwrap_err().code, code, "{input:02x?}");
        }
    }

    #[test]
    fn idle_frames_counted() {
        let mut s = settings();
        for _ in 0..5 {
            put_head(&mut s, 0x21, 0);
        }
        let mut c = ControlStream::new(Limits::default());
        let mut at = 0;
        loop {
            let (used, _) = c.read(&s[at..]).unwrap();
            if used == 0 {
                break;
            }
            at += used;
        }
        assert_eq!(c.idle_frames(), 5);
    }
}
