//! HTTP/3 frames (RFC 9114 §7): the layout (type and length as varints, then the payload), the writers for what
//! the server sends, and `FrameReader`, the sans-IO reader of one stream's frames.
//!
//! Bounded reads: a payload is buffered only for HEADERS (up to `Limits::max_headers`), SETTINGS (up to
//! `Limits::max_settings`) and the one-varint frames (GOAWAY, MAX_PUSH_ID, CANCEL_PUSH: 8 bytes at most), and
//! only after its length was checked against that bound. DATA payloads are handed on piece by piece as they
//! arrive, unknown and reserved frames are skipped the same way, and a HEADERS frame over the bound is skipped
//! unread and reported (`Frame::HeadersTooLarge`: a 431, the connection goes on; QPACK with the static table
//! only keeps no state that skipping could put out of step). So whatever lengths a peer announces, a reader
//! holds at most its 16-byte head buffer and one bounded payload.
//!
//! Which frames a stream may carry is checked at the frame's head, before any payload is read: the reader is
//! built for a control stream or a request stream (`Role`). What must hold across frames (SETTINGS first on the
//! control stream, HEADERS before DATA on a request stream) is `control.rs`'s and `request.rs`'s.

use super::error::{err, Code, ConnError};
use super::varint;

pub const DATA: u64 = 0x00;
pub const HEADERS: u64 = 0x01;
pub const CANCEL_PUSH: u64 = 0x03;
pub const SETTINGS: u64 = 0x04;
pub const PUSH_PROMISE: u64 = 0x05;
pub const GOAWAY: u64 = 0x07;
pub const MAX_PUSH_ID: u64 = 0x0d;

/// Frame types HTTP/2 used that HTTP/3 reserved (PRIORITY, PING, WINDOW_UPDATE, CONTINUATION): receiving one
/// is H3_FRAME_UNEXPECTED on any stream (§7.2.8).
const HTTP2_ONLY: [u64; 4] = [0x02, 0x06, 0x08, 0x09];

/// The longest frame head: two 8-byte varints.
const MAX_HEAD: usize = 16;

/// Whether `v` is a reserved "grease" value, `0x1f * N + 0x21` (frame types, stream types, settings, error
/// codes): it means nothing and is ignored like any unknown value.
pub fn is_grease(v: u64) -> bool {
    v >= 0x21 && (v - 0x21).is_multiple_of(0x1f)
}

/// The stream a reader reads, which decides the frames it accepts (RFC 9114 §7.2, table 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Control,
    Request,
}

/// The payload bounds of one reader.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The largest HEADERS payload (an encoded field section) that is read; a larger one is skipped and
    /// reported as `HeadersTooLarge`.
    pub max_headers: u32,
    /// The largest SETTINGS payload; a larger one is H3_EXCESSIVE_LOAD (clients send a handful of settings).
    pub max_settings: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_headers: 16 * 1024, max_settings: 256 }
    }
}

/// What a reader found.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A whole HEADERS payload: an encoded field section (qpack::decode).
    Headers(&'a [u8]),
    /// A HEADERS frame of this length, over `Limits::max_headers`: its payload is skipped unread.
    HeadersTooLarge(u64),
    /// A piece of a DATA payload, in order. Every DATA frame gives at least one (an empty frame an empty piece).
    Data(&'a [u8]),
    /// A whole SETTINGS payload (settings::parse).
    Settings(&'a [u8]),
    Goaway(u64),
    MaxPushId(u64),
    CancelPush(u64),
    /// An unknown or reserved frame of this type: skipped (RFC 9114 §9: unknown types are ignored). Reported so
    /// that the connection can meter frames that do no work.
    Unknown(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading a frame head; `MAX_HEAD` bytes at most are kept in `head` while it is incomplete.
    Head,
    /// Collecting a payload of `len` bytes into `buf` (only when it did not arrive whole).
    Buffer {
        ty: u64,
        len: usize,
    },
    Data {
        left: u64,
    },
    Skip {
        left: u64,
    },
}

/// Reads the frames of one stream from its bytes as they arrive.
///
/// ```text
/// let mut at = 0;
/// loop {
///     let (used, frame) = reader.read(&input[at..])?;   // Err: close the connection with its code
///     at += used;
///     match frame { Some(f) => handle(f), None if used == 0 => break, None => {} }
/// }
/// ```
/// Every input byte is consumed (kept in the reader when a head or a bounded payload is incomplete), so the
/// caller keeps nothing between reads.
pub struct FrameReader {
    role: Role,
    limits: Limits,
    state: State,
    head: [u8; MAX_HEAD],
    head_len: u8,
    /// The payload being collected; emptied at the start of the read after the one that handed it out.
    buf: Vec<u8>,
    handed_out: bool,
}

/// Parses a frame head at the start of `b`: (type, length, bytes).
fn parse_head(b: &[u8]) -> Option<(u64, u64, usize)> {
    let (ty, n) = varint::decode(b)?;
    let (len, m) = varint::decode(&b[n..])?;
    Some((ty, len, n + m))
}

/// The value of a frame whose payload is exactly one varint (GOAWAY, MAX_PUSH_ID, CANCEL_PUSH).
fn single_varint(p: &[u8]) -> Result<u64, ConnError> {
    match varint::decode(p) {
        Some((v, n)) if n == p.len() => Ok(v),
        _ => Err(err(Code::FrameError, "a one-varint frame whose length is not that varint's")),
    }
}

fn whole<'a>(ty: u64, p: &'a [u8]) -> Result<Frame<'a>, ConnError> {
    Ok(match ty {
        HEADERS => Frame::Headers(p),
        SETTINGS => Frame::Settings(p),
        GOAWAY => Frame::Goaway(single_varint(p)?),
        MAX_PUSH_ID => Frame::MaxPushId(single_varint(p)?),
        _ => Frame::CancelPush(single_varint(p)?),
    })
}

impl FrameReader {
    pub fn new(role: Role, limits: Limits) -> FrameReader {
        FrameReader {
            role,
            limits,
            state: State::Head,
            head: [0; MAX_HEAD],
            head_len: 0,
            buf: Vec::new(),
            handed_out: false,
        }
    }

    /// Whether the stream may end here: not inside a frame (RFC 9114 §7.1: a stream that ends cleanly in the
    /// middle of a frame is H3_FRAME_ERROR).
    pub fn at_boundary(&self) -> bool {
        self.state == State::Head && self.head_len == 0
    }

    /// Bytes held on the heap (the bounded payload buffer).
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// Consumes bytes from `input`: how many, and the frame (or piece of DATA) they completed, if any.
    pub fn read<'a>(&'a mut self, input: &'a [u8]) -> Result<(usize, Option<Frame<'a>>), ConnError> {
        if self.handed_out {
            self.buf.clear();
            self.handed_out = false;
        }
        let mut used = 0;
        if self.state == State::Head {
            let Some((ty, len, n)) = self.take_head(input) else { return Ok((input.len(), None)) };
            used = n;
            if let Some(f) = self.start(ty, len)? {
                return Ok((used, Some(f)));
            }
        }
        let rest = &input[used..];
        match self.state {
            State::Head => Ok((used, None)),
            State::Data { left } => {
                if rest.is_empty() {
                    return Ok((used, None));
                }
                let n = left.min(rest.len() as u64) as usize;
                self.state = if n as u64 == left { State::Head } else { State::Data { left: left - n as u64 } };
                Ok((used + n, Some(Frame::Data(&rest[..n]))))
            }
            State::Skip { left } => {
                let n = left.min(rest.len() as u64) as usize;
                self.state = if n as u64 == left { State::Head } else { State::Skip { left: left - n as u64 } };
                Ok((used + n, None))
            }
            State::Buffer { ty, len } => {
                if self.buf.is_empty() && rest.len() >= len {
                    // The whole payload is in this input: hand it out without copying.
                    self.state = State::Head;
                    return Ok((used + len, Some(whole(ty, &rest[..len])?)));
                }
                if self.buf.is_empty() {
                    // Exactly the announced length (already checked against the bound), so a payload arriving
                    // in pieces never grows the buffer past it.
                    self.buf.reserve_exact(len);
                }
                let n = (len - self.buf.len()).min(rest.len());
                self.buf.extend_from_slice(&rest[..n]);
                if self.buf.len() < len {
                    return Ok((used + n, None));
                }
                self.state = State::Head;
                self.handed_out = true;
                Ok((used + n, Some(whole(ty, &self.buf)?)))
            }
        }
    }

    /// Completes the frame head from the kept bytes and `input`: (type, length, bytes of `input` used), or None
    /// when `input` ended first (all of it is kept).
    fn take_head(&mut self, input: &[u8]) -> Option<(u64, u64, usize)> {
        if self.head_len == 0 {
            if let Some(h) = parse_head(input) {
                return Some(h);
            }
        }
        let have = self.head_len as usize;
        let take = (MAX_HEAD - have).min(input.len());
        self.head[have..have + take].copy_from_slice(&input[..take]);
        match parse_head(&self.head[..have + take]) {
            Some((ty, len, n)) => {
                self.head_len = 0;
                Some((ty, len, n - have))
            }
            None => {
                self.head_len = (have + take) as u8;
                None
            }
        }
    }

    /// Decides what to do with a frame from its head alone; a frame reported at its head is returned.
    fn start(&mut self, ty: u64, len: u64) -> Result<Option<Frame<'static>>, ConnError> {
        if HTTP2_ONLY.contains(&ty) {
            return Err(err(Code::FrameUnexpected, "a frame type reserved since HTTP/2"));
        }
        let control_only = matches!(ty, SETTINGS | GOAWAY | MAX_PUSH_ID | CANCEL_PUSH);
        match (self.role, ty) {
            // §7.2.5: a server treats any PUSH_PROMISE as H3_FRAME_UNEXPECTED.
            (_, PUSH_PROMISE) => return Err(err(Code::FrameUnexpected, "PUSH_PROMISE from a client")),
            (Role::Control, DATA | HEADERS) => {
                return Err(err(Code::FrameUnexpected, "DATA or HEADERS on the control stream"))
            }
            (Role::Request, _) if control_only => {
                return Err(err(Code::FrameUnexpected, "a control frame on a request stream"))
            }
            _ => {}
        }
        match ty {
            DATA if len == 0 => Ok(Some(Frame::Data(&[]))),
            DATA => {
                self.state = State::Data { left: len };
                Ok(None)
            }
            HEADERS if len > self.limits.max_headers as u64 => {
                self.state = State::Skip { left: len };
                Ok(Some(Frame::HeadersTooLarge(len)))
            }
            SETTINGS if len > self.limits.max_settings as u64 => {
                Err(err(Code::ExcessiveLoad, "a SETTINGS frame over our bound"))
            }
            GOAWAY | MAX_PUSH_ID | CANCEL_PUSH if len == 0 || len > 8 => {
                Err(err(Code::FrameError, "a one-varint frame of impossible length"))
            }
            HEADERS | SETTINGS | GOAWAY | MAX_PUSH_ID | CANCEL_PUSH => {
                self.state = State::Buffer { ty, len: len as usize };
                Ok(None)
            }
            _ => {
                if len > 0 {
                    self.state = State::Skip { left: len };
                }
                Ok(Some(Frame::Unknown(ty)))
            }
        }
    }
}

/// Appends a frame head.
pub fn put_head(out: &mut Vec<u8>, ty: u64, len: u64) {
    varint::put(out, ty);
    varint::put(out, len);
}

/// Appends a GOAWAY carrying `id` (for a server, the first client-initiated bidirectional stream it will not
/// process).
pub fn put_goaway(out: &mut Vec<u8>, id: u64) {
    put_head(out, GOAWAY, varint::size(id) as u64);
    varint::put(out, id);
}

#[cfg(test)]
mod tests;
