//! The HPACK decoder (RFC 7541 §6): header blocks to a `FieldList`. Any malformed representation is a
//! COMPRESSION_ERROR (a connection error), since the decoding state can no longer be trusted.

use super::fields::FieldList;
use super::huffman;
use super::table::{Dynamic, STATIC};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressionError(pub &'static str);

pub struct Decoder {
    table: Dynamic,
    /// Our SETTINGS_HEADER_TABLE_SIZE: size updates above it are errors (§4.2, h2spec hpack 4.2).
    settings_max: usize,
}

/// Integers (§5.1) longer than this are rejected: no legitimate index or length needs more.
const MAX_INT: u64 = 1 << 24;

fn integer(b: &[u8], pos: &mut usize, prefix: u8) -> Result<usize, CompressionError> {
    let mask = (1u16 << prefix) as u8 - 1;
    let first = *b.get(*pos).ok_or(CompressionError("truncated integer"))? & mask;
    *pos += 1;
    if first < mask {
        return Ok(first as usize);
    }
    let mut v = mask as u64;
    let mut shift = 0;
    loop {
        let byte = *b.get(*pos).ok_or(CompressionError("truncated integer"))?;
        *pos += 1;
        v += ((byte & 0x7f) as u64) << shift;
        if v > MAX_INT {
            return Err(CompressionError("integer too large"));
        }
        if byte & 0x80 == 0 {
            return Ok(v as usize);
        }
        shift += 7;
        // Zero-valued continuation bytes keep `v` small: bound the length too (found by fuzzing).
        if shift > 28 {
            return Err(CompressionError("integer too long"));
        }
    }
}

/// Appends a string literal (§5.2) to `out`.
fn string(b: &[u8], pos: &mut usize, out: &mut Vec<u8>) -> Result<(), CompressionError> {
    let huff = *b.get(*pos).ok_or(CompressionError("truncated string"))? & 0x80 != 0;
    let len = integer(b, pos, 7)?;
    let s = b.get(*pos..*pos + len).ok_or(CompressionError("string longer than the block"))?;
    *pos += len;
    if huff {
        huffman::decode(s, out).map_err(|_| CompressionError("bad huffman"))
    } else {
        out.extend_from_slice(s);
        Ok(())
    }
}

impl Decoder {
    pub fn new(settings_max: usize) -> Decoder {
        Decoder { table: Dynamic::new(settings_max), settings_max }
    }

    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    pub fn heap_bytes(&self) -> usize {
        self.table.heap_bytes()
    }

    /// Appends the name of index `i` (§2.3.3: 1..=61 static, then dynamic newest first).
    fn name_of(&self, i: usize, out: &mut Vec<u8>) -> Result<(), CompressionError> {
        self.pair(i).map(|(n, _)| out.extend_from_slice(n))
    }

    fn pair(&self, i: usize) -> Result<(&[u8], &[u8]), CompressionError> {
        match i {
            0 => Err(CompressionError("index 0")),
            1..=61 => Ok(STATIC[i - 1]),
            _ => self.table.get(i - 62).ok_or(CompressionError("index beyond the dynamic table")),
        }
    }

    /// Decodes a whole header block onto `list` (which the caller cleared).
    pub fn decode(&mut self, b: &[u8], list: &mut FieldList) -> Result<(), CompressionError> {
        let mut pos = 0;
        let mut any_field = false;
        while pos < b.len() {
            let first = b[pos];
            if first & 0xe0 == 0x20 {
                // Dynamic table size update: only before the first field of a block (§4.2).
                if any_field {
                    return Err(CompressionError("size update after a field"));
                }
                let max = integer(b, &mut pos, 5)?;
                if max > self.settings_max {
                    return Err(CompressionError("size update above the settings"));
                }
                self.table.set_max(max);
                continue;
            }
            any_field = true;
            let at = list.begin();
            if first & 0x80 != 0 {
                let i = integer(b, &mut pos, 7)?;
                let (n, v) = self.pair(i)?;
                let buf = list.buf();
                buf.extend_from_slice(n);
                buf.extend_from_slice(v);
                list.commit(at, n.len());
                continue;
            }
            let (prefix, index) = if first & 0x40 != 0 { (6, true) } else { (4, false) };
            let ni = integer(b, &mut pos, prefix)?;
            if ni == 0 {
                string(b, &mut pos, list.buf())?;
            } else {
                self.name_of(ni, list.buf())?;
            }
            let name_len = list.buf().len() - at;
            string(b, &mut pos, list.buf())?;
            if index {
                let (n, v) = list.pending(at, name_len);
                self.table.insert(n, v);
            }
            list.commit(at, name_len);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    fn fields(l: &FieldList) -> Vec<(String, String)> {
        l.iter().map(|(n, v)| (String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into())).collect()
    }

    fn check(d: &mut Decoder, block: &str, want: &[(&str, &str)], table_size: usize) {
        let mut l = FieldList::new(1 << 20);
        d.decode(&hex(block), &mut l).unwrap();
        let want: Vec<(String, String)> = want.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        assert_eq!(fields(&l), want);
        assert_eq!(d.table_size(), table_size);
    }

    #[test]
    fn rfc7541_c2_single_representations() {
        let mut d = Decoder::new(4096);
        check(
            &mut d,
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
            &[("custom-key", "custom-header")],
            55,
        );
        let mut d = Decoder::new(4096);
        check(&mut d, "040c 2f73 616d 706c 652f 7061 7468", &[(":path", "/sample/path")], 0);
        let mut d = Decoder::new(4096);
        check(&mut d, "1008 7061 7373 776f 7264 0673 6563 7265 74", &[("password", "secret")], 0);
        let mut d = Decoder::new(4096);
        check(&mut d, "82", &[(":method", "GET")], 0);
    }

    /// (block, fields, dynamic table size after it).
    type Case = (&'static str, &'static [(&'static str, &'static str)], usize);

    const C3: [Case; 3] = [
        (
            "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            &[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
            57,
        ),
        (
            "8286 84be 5808 6e6f 2d63 6163 6865",
            &[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
                ("cache-control", "no-cache"),
            ],
            110,
        ),
        (
            "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ],
            164,
        ),
    ];

    const C4: [&str; 3] = [
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        "8286 84be 5886 a8eb 1064 9cbf",
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ];

    #[test]
    fn rfc7541_c3_requests_without_huffman() {
        let mut d = Decoder::new(4096);
        for (block, want, size) in C3 {
            check(&mut d, block, want, size);
        }
    }

    #[test]
    fn rfc7541_c4_requests_with_huffman() {
        let mut d = Decoder::new(4096);
        for (block, (_, want, size)) in C4.iter().zip(C3) {
            check(&mut d, block, want, size);
        }
    }

    #[test]
    fn rfc7541_c5_c6_responses_with_eviction() {
        let r1: &[(&str, &str)] = &[
            (":status", "302"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
            ("location", "https://www.example.com"),
        ];
        let r2: &[(&str, &str)] = &[
            (":status", "307"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
            ("location", "https://www.example.com"),
        ];
        let r3: &[(&str, &str)] = &[
            (":status", "200"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
            ("location", "https://www.example.com"),
            ("content-encoding", "gzip"),
            ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"),
        ];
        // C.5: no Huffman, a 256-byte table.
        let mut d = Decoder::new(256);
        check(
            &mut d,
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a \
                       3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            r1,
            222,
        );
        check(&mut d, "4803 3330 37c1 c0bf", r2, 222);
        check(
            &mut d,
            "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a \
                       6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d \
                       6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
            r3,
            215,
        );
        // C.6: the same with Huffman.
        let mut d = Decoder::new(256);
        check(
            &mut d,
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d \
                       29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            r1,
            222,
        );
        check(&mut d, "4883 640e ffc1 c0bf", r2, 222);
        check(
            &mut d,
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d \
                       d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 \
                       3d50 07",
            r3,
            215,
        );
    }

    #[test]
    fn errors() {
        let mut l = FieldList::new(1 << 20);
        for (block, why) in [
            ("80", "index 0"),
            ("be", "index 62 with an empty dynamic table"),
            ("ff80808080 08", "integer overflow"),
            ("3fe21f", "size update 4127 above 4096"),
            ("82 20", "size update after a field"),
            ("400a 6375 73", "string past the end"),
            ("0085 ffffffff ff", "EOS in a name"),
            ("7f", "truncated integer"),
            ("ff 8080 8080 8080 8080 8080 8080 01", "overlong integer of zero continuation bytes"),
        ] {
            let mut d = Decoder::new(4096);
            l.clear();
            assert!(d.decode(&hex(block), &mut l).is_err(), "{why}");
        }
        // A size update at the start is fine, then the block goes on.
        let mut d = Decoder::new(4096);
        l.clear();
        d.decode(&hex("20 82"), &mut l).unwrap();
        assert_eq!(l.len(), 1);
    }

    #[test]
    fn hpack_bomb_is_bounded_but_state_kept() {
        // One 4000-byte value indexed once, then referenced 100 times: 400 KB decoded from ~4 KB.
        let mut block = vec![0x40, 0x01, b'x', 0x7f, 0x00];
        // 4000 = 127 + 3873; 3873 = 0x21 + 0x1e*128 -> bytes 0xa1 0x1e
        block.pop();
        block.extend_from_slice(&[0xa1, 0x1e]);
        block.extend(std::iter::repeat_n(b'v', 4000));
        block.extend(std::iter::repeat_n(0xbe, 100));
        let mut d = Decoder::new(4096);
        let mut l = FieldList::new(16_384);
        d.decode(&block, &mut l).unwrap();
        assert!(l.overflowed());
        assert_eq!(l.len(), 4, "fields kept while within 16 KiB");
        assert!(l.size() > 400_000);
        // The table entry was still added, so the next block decodes in step.
        l.clear();
        d.decode(&[0xbe], &mut l).unwrap();
        assert_eq!(l.get(0).1.len(), 4000);
    }
}
