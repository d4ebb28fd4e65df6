//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B). The code is canonical, so the decoder needs only the
//! table below: an 8-bit lookup resolves every code of up to 8 bits (the letters, digits and punctuation of
//! typical header values), and longer codes fall back to canonical per-length ranges, all built at compile time.

/// (code, bit length) per symbol 0..=256 (256 is EOS), from RFC 7541 Appendix B.
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13),
    (0x7fffd8, 23),
    (0xfffffe2, 28),
    (0xfffffe3, 28),
    (0xfffffe4, 28),
    (0xfffffe5, 28),
    (0xfffffe6, 28),
    (0xfffffe7, 28),
    (0xfffffe8, 28),
    (0xffffea, 24),
    (0x3ffffffc, 30),
    (0xfffffe9, 28),
    (0xfffffea, 28),
    (0x3ffffffd, 30),
    (0xfffffeb, 28),
    (0xfffffec, 28),
    (0xfffffed, 28),
    (0xfffffee, 28),
    (0xfffffef, 28),
    (0xffffff0, 28),
    (0xffffff1, 28),
    (0xffffff2, 28),
    (0x3ffffffe, 30),
    (0xffffff3, 28),
    (0xffffff4, 28),
    (0xffffff5, 28),
    (0xffffff6, 28),
    (0xffffff7, 28),
    (0xffffff8, 28),
    (0xffffff9, 28),
    (0xffffffa, 28),
    (0xffffffb, 28),
    (0x14, 6),
    (0x3f8, 10),
    (0x3f9, 10),
    (0xffa, 12),
    (0x1ff9, 13),
    (0x15, 6),
    (0xf8, 8),
    (0x7fa, 11),
    (0x3fa, 10),
    (0x3fb, 10),
    (0xf9, 8),
    (0x7fb, 11),
    (0xfa, 8),
    (0x16, 6),
    (0x17, 6),
    (0x18, 6),
    (0x0, 5),
    (0x1, 5),
    (0x2, 5),
    (0x19, 6),
    (0x1a, 6),
    (0x1b, 6),
    (0x1c, 6),
    (0x1d, 6),
    (0x1e, 6),
    (0x1f, 6),
    (0x5c, 7),
    (0xfb, 8),
    (0x7ffc, 15),
    (0x20, 6),
    (0xffb, 12),
    (0x3fc, 10),
    (0x1ffa, 13),
    (0x21, 6),
    (0x5d, 7),
    (0x5e, 7),
    (0x5f, 7),
    (0x60, 7),
    (0x61, 7),
    (0x62, 7),
    (0x63, 7),
    (0x64, 7),
    (0x65, 7),
    (0x66, 7),
    (0x67, 7),
    (0x68, 7),
    (0x69, 7),
    (0x6a, 7),
    (0x6b, 7),
    (0x6c, 7),
    (0x6d, 7),
    (0x6e, 7),
    (0x6f, 7),
    (0x70, 7),
    (0x71, 7),
    (0x72, 7),
    (0xfc, 8),
    (0x73, 7),
    (0xfd, 8),
    (0x1ffb, 13),
    (0x7fff0, 19),
    (0x1ffc, 13),
    (0x3ffc, 14),
    (0x22, 6),
    (0x7ffd, 15),
    (0x3, 5),
    (0x23, 6),
    (0x4, 5),
    (0x24, 6),
    (0x5, 5),
    (0x25, 6),
    (0x26, 6),
    (0x27, 6),
    (0x6, 5),
    (0x74, 7),
    (0x75, 7),
    (0x28, 6),
    (0x29, 6),
    (0x2a, 6),
    (0x7, 5),
    (0x2b, 6),
    (0x76, 7),
    (0x2c, 6),
    (0x8, 5),
    (0x9, 5),
    (0x2d, 6),
    (0x77, 7),
    (0x78, 7),
    (0x79, 7),
    (0x7a, 7),
    (0x7b, 7),
    (0x7ffe, 15),
    (0x7fc, 11),
    (0x3ffd, 14),
    (0x1ffd, 13),
    (0xffffffc, 28),
    (0xfffe6, 20),
    (0x3fffd2, 22),
    (0xfffe7, 20),
    (0xfffe8, 20),
    (0x3fffd3, 22),
    (0x3fffd4, 22),
    (0x3fffd5, 22),
    (0x7fffd9, 23),
    (0x3fffd6, 22),
    (0x7fffda, 23),
    (0x7fffdb, 23),
    (0x7fffdc, 23),
    (0x7fffdd, 23),
    (0x7fffde, 23),
    (0xffffeb, 24),
    (0x7fffdf, 23),
    (0xffffec, 24),
    (0xffffed, 24),
    (0x3fffd7, 22),
    (0x7fffe0, 23),
    (0xffffee, 24),
    (0x7fffe1, 23),
    (0x7fffe2, 23),
    (0x7fffe3, 23),
    (0x7fffe4, 23),
    (0x1fffdc, 21),
    (0x3fffd8, 22),
    (0x7fffe5, 23),
    (0x3fffd9, 22),
    (0x7fffe6, 23),
    (0x7fffe7, 23),
    (0xffffef, 24),
    (0x3fffda, 22),
    (0x1fffdd, 21),
    (0xfffe9, 20),
    (0x3fffdb, 22),
    (0x3fffdc, 22),
    (0x7fffe8, 23),
    (0x7fffe9, 23),
    (0x1fffde, 21),
    (0x7fffea, 23),
    (0x3fffdd, 22),
    (0x3fffde, 22),
    (0xfffff0, 24),
    (0x1fffdf, 21),
    (0x3fffdf, 22),
    (0x7fffeb, 23),
    (0x7fffec, 23),
    (0x1fffe0, 21),
    (0x1fffe1, 21),
    (0x3fffe0, 22),
    (0x1fffe2, 21),
    (0x7fffed, 23),
    (0x3fffe1, 22),
    (0x7fffee, 23),
    (0x7fffef, 23),
    (0xfffea, 20),
    (0x3fffe2, 22),
    (0x3fffe3, 22),
    (0x3fffe4, 22),
    (0x7ffff0, 23),
    (0x3fffe5, 22),
    (0x3fffe6, 22),
    (0x7ffff1, 23),
    (0x3ffffe0, 26),
    (0x3ffffe1, 26),
    (0xfffeb, 20),
    (0x7fff1, 19),
    (0x3fffe7, 22),
    (0x7ffff2, 23),
    (0x3fffe8, 22),
    (0x1ffffec, 25),
    (0x3ffffe2, 26),
    (0x3ffffe3, 26),
    (0x3ffffe4, 26),
    (0x7ffffde, 27),
    (0x7ffffdf, 27),
    (0x3ffffe5, 26),
    (0xfffff1, 24),
    (0x1ffffed, 25),
    (0x7fff2, 19),
    (0x1fffe3, 21),
    (0x3ffffe6, 26),
    (0x7ffffe0, 27),
    (0x7ffffe1, 27),
    (0x3ffffe7, 26),
    (0x7ffffe2, 27),
    (0xfffff2, 24),
    (0x1fffe4, 21),
    (0x1fffe5, 21),
    (0x3ffffe8, 26),
    (0x3ffffe9, 26),
    (0xffffffd, 28),
    (0x7ffffe3, 27),
    (0x7ffffe4, 27),
    (0x7ffffe5, 27),
    (0xfffec, 20),
    (0xfffff3, 24),
    (0xfffed, 20),
    (0x1fffe6, 21),
    (0x3fffe9, 22),
    (0x1fffe7, 21),
    (0x1fffe8, 21),
    (0x7ffff3, 23),
    (0x3fffea, 22),
    (0x3fffeb, 22),
    (0x1ffffee, 25),
    (0x1ffffef, 25),
    (0xfffff4, 24),
    (0xfffff5, 24),
    (0x3ffffea, 26),
    (0x7ffff4, 23),
    (0x3ffffeb, 26),
    (0x7ffffe6, 27),
    (0x3ffffec, 26),
    (0x3ffffed, 26),
    (0x7ffffe7, 27),
    (0x7ffffe8, 27),
    (0x7ffffe9, 27),
    (0x7ffffea, 27),
    (0x7ffffeb, 27),
    (0xffffffe, 28),
    (0x7ffffec, 27),
    (0x7ffffed, 27),
    (0x7ffffee, 27),
    (0x7ffffef, 27),
    (0x7fffff0, 27),
    (0x3ffffee, 26),
    (0x3fffffff, 30),
];

const EOS: u16 = 256;

/// Compile-time decoding tables.
struct Tables {
    /// For each 8-bit prefix: (symbol, length) when a code of length <= 8 matches it, length 0 otherwise.
    fast: [(u8, u8); 256],
    /// Canonical decoding: first code of each length, the index into `sorted` of that first code, count.
    first: [u32; 31],
    start: [u16; 31],
    count: [u16; 31],
    /// Symbols ordered by (length, symbol): the canonical order.
    sorted: [u16; 257],
}

const fn build() -> Tables {
    let mut t = Tables { fast: [(0, 0); 256], first: [0; 31], start: [0; 31], count: [0; 31], sorted: [0; 257] };
    let mut n = 0;
    let mut len = 1;
    while len <= 30 {
        t.start[len] = n as u16;
        let mut s = 0;
        while s < 257 {
            if CODES[s].1 as usize == len {
                if t.count[len] == 0 {
                    t.first[len] = CODES[s].0;
                }
                t.count[len] += 1;
                t.sorted[n] = s as u16;
                n += 1;
                if len <= 8 {
                    // Every 8-bit prefix that starts with this code.
                    let spread = 1 << (8 - len);
                    let base = (CODES[s].0 as usize) << (8 - len);
                    let mut k = 0;
                    while k < spread {
                        t.fast[base + k] = (s as u8, len as u8);
                        k += 1;
                    }
                }
            }
            s += 1;
        }
        len += 1;
    }
    t
}

static T: Tables = build();

#[derive(Debug, PartialEq, Eq)]
pub struct HuffmanError;

/// Decodes `src` onto the end of `out`. Errors (all COMPRESSION_ERROR to the caller): an EOS symbol, padding
/// longer than 7 bits, or padding that is not the most significant bits of EOS (all ones) (§5.2).
pub fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    out.reserve(src.len() + src.len() / 2);
    // `acc` holds `bits` unconsumed bits, right-aligned.
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    let mut i = 0;
    loop {
        while bits <= 56 && i < src.len() {
            acc = (acc << 8) | src[i] as u64;
            bits += 8;
            i += 1;
        }
        if bits == 0 {
            return Ok(());
        }
        if bits >= 8 {
            let (sym, len) = T.fast[((acc >> (bits - 8)) & 0xff) as usize];
            if len != 0 {
                out.push(sym);
                bits -= len as u32;
                acc &= (1u64 << bits) - 1;
                continue;
            }
        }
        // Longer codes, or fewer than 8 bits left.
        let mut len = 5u32;
        loop {
            if len > bits {
                // The rest must be padding: shorter than 8 bits and all ones.
                let pad = acc & ((1u64 << bits) - 1);
                return if bits < 8 && pad == (1u64 << bits) - 1 { Ok(()) } else { Err(HuffmanError) };
            }
            let code = ((acc >> (bits - len)) & ((1u64 << len) - 1)) as u32;
            let l = len as usize;
            if T.count[l] != 0 && code >= T.first[l] && code - T.first[l] < T.count[l] as u32 {
                let sym = T.sorted[T.start[l] as usize + (code - T.first[l]) as usize];
                if sym == EOS {
                    return Err(HuffmanError);
                }
                out.push(sym as u8);
                bits -= len;
                acc &= (1u64 << bits) - 1;
                break;
            }
            len += 1;
            if len > 30 {
                return Err(HuffmanError);
            }
        }
    }
}

/// The Huffman-encoded length of `src` in bytes.
pub fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src.iter().map(|&b| CODES[b as usize].1 as usize).sum();
    bits.div_ceil(8)
}

/// Encodes `src` onto the end of `out`, padded with the most significant bits of EOS.
pub fn encode(src: &[u8], out: &mut Vec<u8>) {
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    for &b in src {
        let (code, len) = CODES[b as usize];
        acc = (acc << len) | code as u64;
        bits += len as u32;
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
        acc &= (1u64 << bits) - 1;
    }
    if bits > 0 {
        out.push(((acc << (8 - bits)) | (0xff >> bits)) as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn rfc7541_c4_strings() {
        for (text, enc) in [
            ("www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"),
            ("no-cache", "a8eb 1064 9cbf"),
            ("custom-key", "25a8 49e9 5ba9 7d7f"),
            ("custom-value", "25a8 49e9 5bb8 e8b4 bf"),
            ("302", "6402"),
            ("private", "aec3 771a 4b"),
            ("Mon, 21 Oct 2013 20:13:21 GMT", "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff"),
            ("https://www.example.com", "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3"),
            ("foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
             "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07"),
        ] {
            let mut e = Vec::new();
            encode(text.as_bytes(), &mut e);
            assert_eq!(e, hex(enc), "{text}");
            assert_eq!(encoded_len(text.as_bytes()), e.len());
            let mut d = Vec::new();
            decode(&e, &mut d).unwrap();
            assert_eq!(d, text.as_bytes());
        }
    }

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        let mut e = Vec::new();
        encode(&all, &mut e);
        let mut d = Vec::new();
        decode(&e, &mut d).unwrap();
        assert_eq!(d, all);
    }

    #[test]
    fn bad_padding_and_eos() {
        let mut d = Vec::new();
        // 'a' is 00011 (5 bits); padding of three zero bits is not EOS's prefix.
        assert_eq!(decode(&[0b0001_1000], &mut d), Err(HuffmanError));
        // A full byte of ones after a symbol is padding longer than 7 bits.
        assert_eq!(decode(&[0b0001_1111, 0xff], &mut d), Err(HuffmanError));
        // EOS itself (30 ones) is an error.
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xff], &mut d), Err(HuffmanError));
        d.clear();
        assert_eq!(decode(&[0b0001_1111], &mut d), Ok(()));
        assert_eq!(d, b"a");
    }
}
