//! QUIC variable-length integers (RFC 9000 §16): the two most significant bits of the first byte give the length
//! (1, 2, 4 or 8 bytes), the rest is the value in network byte order, up to 2^62 - 1. HTTP/3 frame types and
//! lengths, stream types and setting identifiers all use it.

/// The largest value a varint holds.
pub const MAX: u64 = (1 << 62) - 1;

/// The length of the varint that starts with `first`.
#[inline]
pub fn len_of(first: u8) -> usize {
    1 << (first >> 6)
}

/// Decodes the varint at the start of `b`: its value and length, or None when `b` ends before it does.
/// Non-minimal encodings are valid (RFC 9000 §16 lets a sender use any length that fits the value).
#[inline]
pub fn decode(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let n = len_of(first);
    let rest = b.get(1..n)?;
    let mut v = (first & 0x3f) as u64;
    for &x in rest {
        v = (v << 8) | x as u64;
    }
    Some((v, n))
}

/// The minimal encoded length of `v` (which must be at most `MAX`).
#[inline]
pub fn size(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Appends `v` in its minimal encoding. `v` above `MAX` is a bug in the caller.
pub fn put(out: &mut Vec<u8>, v: u64) {
    debug_assert!(v <= MAX, "varint out of range: {v}");
    match size(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc9000_a1_examples() {
        // RFC 9000 Appendix A.1: the four sample encodings, and 37 in two bytes (non-minimal, still valid).
        let cases: [(&[u8], u64); 5] = [
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
            (&[0x40, 0x25], 37),
        ];
        for (bytes, v) in cases {
            assert_eq!(decode(bytes), Some((v, bytes.len())), "{bytes:02x?}");
        }
        let mut o = Vec::new();
        put(&mut o, 37);
        assert_eq!(o, [0x25], "minimal, not the two-byte form");
    }

    #[test]
    fn truncated_is_none_at_every_cut() {
        let mut o = Vec::new();
        put(&mut o, 151_288_809_941_952_652);
        for cut in 0..o.len() {
            assert_eq!(decode(&o[..cut]), None, "cut at {cut}");
        }
    }

    #[test]
    fn round_trip_at_every_boundary() {
        for v in [0, 1, 63, 64, 16_383, 16_384, 1_073_741_823, 1_073_741_824, MAX - 1, MAX] {
            let mut o = vec![0xaa];
            put(&mut o, v);
            assert_eq!(o.len() - 1, size(v));
            assert_eq!(decode(&o[1..]), Some((v, size(v))), "{v}");
            // Trailing bytes are not part of it.
            o.push(0xff);
            assert_eq!(decode(&o[1..]), Some((v, size(v))));
        }
    }
}
