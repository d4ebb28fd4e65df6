//! SETTINGS (RFC 9114 §7.2.4, RFC 9204 §5): what the client tells us, and the frame we send.
//!
//! Ours say QPACK_MAX_TABLE_CAPACITY 0 and QPACK_BLOCKED_STREAMS 0 (their defaults, sent anyway so that a
//! client reading them needs no knowledge of defaults): the client's encoder may use the static table only, so
//! decoding a request needs no state shared across streams, no encoder stream data and never blocks. Why the
//! dynamic table is not worth it for a static server: docs/design/http3.md.

use super::error::{err, Code, ConnError};
use super::frame::{self, is_grease};
use super::varint;

pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;

/// HTTP/2 settings with no HTTP/3 meaning (RFC 9114 §7.2.4.1, §11.2.2): receiving one is H3_SETTINGS_ERROR.
const HTTP2_ONLY: [u64; 5] = [0x00, 0x02, 0x03, 0x04, 0x05];

/// The settings of a client we act on. Unknown identifiers are ignored (§7.2.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerSettings {
    /// SETTINGS_MAX_FIELD_SECTION_SIZE: the largest response head the client takes (None: unlimited).
    pub max_field_section_size: Option<u64>,
    /// The client decoder's table: irrelevant to an encoder that never uses the dynamic table, kept for logs.
    pub qpack_max_table_capacity: u64,
    pub qpack_blocked_streams: u64,
}

/// Parses a SETTINGS payload. Duplicates of the identifiers we know are H3_SETTINGS_ERROR (§7.2.4 allows it; an
/// unknown identifier's duplicates cannot be told without keeping every identifier, so they are let through).
pub fn parse(mut p: &[u8]) -> Result<PeerSettings, ConnError> {
    let mut s = PeerSettings::default();
    let mut seen = 0u8;
    while !p.is_empty() {
        let (id, n) = varint::decode(p).ok_or(err(Code::FrameError, "a SETTINGS identifier cut short"))?;
        let (value, m) = varint::decode(&p[n..]).ok_or(err(Code::FrameError, "a SETTINGS value cut short"))?;
        p = &p[n + m..];
        if HTTP2_ONLY.contains(&id) {
            return Err(err(Code::SettingsError, "an HTTP/2 setting in HTTP/3"));
        }
        let bit = match id {
            QPACK_MAX_TABLE_CAPACITY => {
                s.qpack_max_table_capacity = value;
                1
            }
            MAX_FIELD_SECTION_SIZE => {
                s.max_field_section_size = Some(value);
                2
            }
            QPACK_BLOCKED_STREAMS => {
                s.qpack_blocked_streams = value;
                4
            }
            _ => 0,
        };
        if seen & bit != 0 {
            return Err(err(Code::SettingsError, "a setting given twice"));
        }
        seen |= bit;
    }
    Ok(s)
}

/// A reserved setting sent with ours, as §7.2.4.1 asks, so that clients keep ignoring unknown identifiers.
const GREASE_SETTING: u64 = 0x1f * 7 + 0x21;

/// Appends our SETTINGS frame: QPACK with the static table only, and `max_field_section_size` (the decoded size
/// of a request head we read, RFC accounting: name + value + 32 per field).
pub fn put_ours(out: &mut Vec<u8>, max_field_section_size: u64) {
    debug_assert!(is_grease(GREASE_SETTING));
    let pairs = [
        (QPACK_MAX_TABLE_CAPACITY, 0),
        (QPACK_BLOCKED_STREAMS, 0),
        (MAX_FIELD_SECTION_SIZE, max_field_section_size),
        (GREASE_SETTING, 0),
    ];
    let len: usize = pairs.iter().map(|&(id, v)| varint::size(id) + varint::size(v)).sum();
    frame::put_head(out, frame::SETTINGS, len as u64);
    for (id, v) in pairs {
        varint::put(out, id);
        varint::put(out, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ours_parse_back() {
        let mut o = Vec::new();
        put_ours(&mut o, 16_384);
        let (ty, n) = varint::decode(&o).unwrap();
        let (len, m) = varint::decode(&o[n..]).unwrap();
        assert_eq!(ty, frame::SETTINGS);
        assert_eq!(len as usize, o.len() - n - m);
        let s = parse(&o[n + m..]).unwrap();
        assert_eq!(
            s,
            PeerSettings {
                max_field_section_size: Some(16_384),
                qpack_max_table_capacity: 0,
                qpack_blocked_streams: 0
            }
        );
    }

    #[test]
    fn unknown_and_grease_ignored() {
        // A browser-like SETTINGS: capacity 65536, blocked 100, H3_DATAGRAM (0x33), a grease id, an unknown id.
        let mut p = Vec::new();
        for (id, v) in [(1u64, 65_536u64), (7, 100), (0x33, 1), (0x1f * 3 + 0x21, 77), (0x4d44, 5)] {
            varint::put(&mut p, id);
            varint::put(&mut p, v);
        }
        let s = parse(&p).unwrap();
        assert_eq!(s.qpack_max_table_capacity, 65_536);
        assert_eq!(s.qpack_blocked_streams, 100);
        assert_eq!(s.max_field_section_size, None);
    }

    #[test]
    fn refusals() {
        for id in HTTP2_ONLY {
            assert_eq!(parse(&[id as u8, 0]).unwrap_err().code, Code::SettingsError, "id {id}");
        }
        assert_eq!(parse(&[0x06, 0x01, 0x06, 0x02]).unwrap_err().code, Code::SettingsError, "duplicate");
        assert_eq!(parse(&[0x06]).unwrap_err().code, Code::FrameError, "value missing");
        assert_eq!(parse(&[0x06, 0x40]).unwrap_err().code, Code::FrameError, "value cut in its varint");
        assert_eq!(parse(&[0x40]).unwrap_err().code, Code::FrameError, "identifier cut in its varint");
        assert_eq!(parse(&[]), Ok(PeerSettings::default()), "an empty SETTINGS is valid");
    }
}
