//! Frame layout (RFC 9113 §4.1, §6): the 9-byte header, the type and flag numbers, error codes, and writers
//! for the frames the server sends. Parsing the payloads is in `conn`/`recv`; this file only knows the wire.

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Every frame starts with this many bytes.
pub const HEADER_LEN: usize = 9;
/// The protocol's floor for SETTINGS_MAX_FRAME_SIZE, and our own: we never ask peers for bigger frames, so a
/// read buffer of `HEADER_LEN + DEFAULT_MAX_FRAME` always holds a whole frame.
pub const DEFAULT_MAX_FRAME: u32 = 16_384;
/// The protocol's ceiling for SETTINGS_MAX_FRAME_SIZE.
pub const MAX_FRAME_CEILING: u32 = (1 << 24) - 1;
/// Flow-control windows may not exceed 2^31-1 (RFC 9113 §6.9.1).
pub const MAX_WINDOW: i64 = (1 << 31) - 1;
/// The default initial window of both levels (RFC 9113 §6.9.2).
pub const DEFAULT_WINDOW: i64 = 65_535;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;
/// RFC 9218 §7.1.
pub const PRIORITY_UPDATE: u8 = 0x10;

pub const FLAG_END_STREAM: u8 = 0x1;
pub const FLAG_ACK: u8 = 0x1;
pub const FLAG_END_HEADERS: u8 = 0x4;
pub const FLAG_PADDED: u8 = 0x8;
pub const FLAG_PRIORITY: u8 = 0x20;

/// Error codes (RFC 9113 §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ErrorCode {
    NoError = 0x0,
    Protocol = 0x1,
    Internal = 0x2,
    FlowControl = 0x3,
    SettingsTimeout = 0x4,
    StreamClosed = 0x5,
    FrameSize = 0x6,
    RefusedStream = 0x7,
    Cancel = 0x8,
    Compression = 0x9,
    Connect = 0xa,
    EnhanceYourCalm = 0xb,
    InadequateSecurity = 0xc,
    Http11Required = 0xd,
}

/// A parsed frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    /// The stream identifier with the reserved bit cleared (receivers MUST ignore it, §4.1).
    pub stream: u32,
}

impl Head {
    /// The header at the start of `b`, or None when fewer than 9 bytes are there.
    #[inline]
    pub fn parse(b: &[u8]) -> Option<Head> {
        let h: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
        Some(Head {
            len: u32::from_be_bytes([0, h[0], h[1], h[2]]),
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
        })
    }

    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// The 9 header bytes of a frame.
#[inline]
pub fn head_bytes(len: usize, kind: u8, flags: u8, stream: u32) -> [u8; HEADER_LEN] {
    debug_assert!(len <= MAX_FRAME_CEILING as usize);
    let l = (len as u32).to_be_bytes();
    let s = (stream & 0x7fff_ffff).to_be_bytes();
    [l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]
}

/// Appends a whole frame with a small payload.
pub fn put(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&head_bytes(payload.len(), kind, flags, stream));
    out.extend_from_slice(payload);
}

pub fn put_rst(out: &mut Vec<u8>, stream: u32, code: ErrorCode) {
    put(out, RST_STREAM, 0, stream, &(code as u32).to_be_bytes());
}

pub fn put_goaway(out: &mut Vec<u8>, last_stream: u32, code: ErrorCode) {
    let mut p = [0u8; 8];
    p[..4].copy_from_slice(&(last_stream & 0x7fff_ffff).to_be_bytes());
    p[4..].copy_from_slice(&(code as u32).to_be_bytes());
    put(out, GOAWAY, 0, 0, &p);
}

pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put(out, WINDOW_UPDATE, 0, stream, &(increment & 0x7fff_ffff).to_be_bytes());
}

/// Strips PADDED framing (§6.1, §6.2): the payload without the pad-length byte and the padding, or None when
/// the padding is as long as or longer than what remains (a PROTOCOL_ERROR).
pub fn unpad(flags: u8, payload: &[u8]) -> Option<&[u8]> {
    if flags & FLAG_PADDED == 0 {
        return Some(payload);
    }
    let (&pad, rest) = payload.split_first()?;
    rest.len().checked_sub(pad as usize).map(|end| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_reserved_bit_ignored() {
        let mut b = head_bytes(16_384, HEADERS, FLAG_END_HEADERS | FLAG_END_STREAM, 7);
        assert_eq!(Head::parse(&b), Some(Head { len: 16_384, kind: HEADERS, flags: 5, stream: 7 }));
        b[5] |= 0x80;
        assert_eq!(Head::parse(&b).unwrap().stream, 7);
        assert_eq!(Head::parse(&b[..8]), None);
    }

    #[test]
    fn padding() {
        assert_eq!(unpad(0, b"abc"), Some(&b"abc"[..]));
        assert_eq!(unpad(FLAG_PADDED, b"\x02abcxx"), Some(&b"abc"[..]));
        assert_eq!(unpad(FLAG_PADDED, b"\x00"), Some(&b""[..]));
        // Padding that fills the rest or more is an error (§6.1: "greater than or equal to").
        assert_eq!(unpad(FLAG_PADDED, b"\x03abc"), Some(&b""[..]));
        assert_eq!(unpad(FLAG_PADDED, b"\x04abc"), None);
        assert_eq!(unpad(FLAG_PADDED, b""), None);
    }
}
