//! The HPACK decoder (RFC 7541 §6): header blocks to a `FieldList`. Any malformed representation is a
//! COMPRESSION_ERROR (a connection error), since the decoding state can no longer be trusted.

use super::fields::FieldList;
use super::huffman;
use super::table::{Dynamic, STATIC};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressionError(pub &'static str);

/// Why a header block was not decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// Malformed HPACK: a COMPRESSION_ERROR.
    Compression(CompressionError),
    /// After the list overflowed, the block made the decoder copy more table names into new entries than the
    /// list's limit (each a few bytes of input for up to 4 KB of copying): not malformed, but work no client
    /// needs, so the connection ends (ENHANCE_YOUR_CALM).
    Amplified,
}

impl From<CompressionError> for DecodeError {
    fn from(e: CompressionError) -> DecodeError {
        DecodeError::Compression(e)
    }
}

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

    fn pair(&self, i: usize) -> Result<(&[u8], &[u8]), CompressionError> {
        match i {
            0 => Err(CompressionError("index 0")),
            1..=61 => Ok(STATIC[i - 1]),
            _ => self.table.get(i - 62).ok_or(CompressionError("index beyond the dynamic table")),
        }
    }

    /// Decodes a whole header block onto `list` (which the caller cleared).
    ///
    /// Once the list is over its limit (or was made `count_only`) nothing more is copied into it: an indexed
    /// field or a table name is only counted, so an index of one byte costs O(1) whatever its entry's size. The
    /// dynamic table is still updated as RFC 7541 §4 requires (so the next block decodes in step), and literals
    /// are still decoded (Huffman validated), which costs at most their own bytes of input. The one copy that
    /// remains out of proportion to the input, a table name taken into a new entry, is bounded: beyond
    /// `list.limit()` bytes of it after the overflow, `Amplified`.
    pub fn decode(&mut self, b: &[u8], list: &mut FieldList) -> Result<(), DecodeError> {
        let mut pos = 0;
        let mut any_field = false;
        let mut names_copied_over = 0usize;
        while pos < b.len() {
            let first = b[pos];
            if first & 0xe0 == 0x20 {
                // Dynamic table size update: only before the first field of a block (§4.2).
                if any_field {
                    return Err(CompressionError("size update after a field").into());
                }
                let max = integer(b, &mut pos, 5)?;
                if max > self.settings_max {
                    return Err(CompressionError("size update above the settings").into());
                }
                self.table.set_max(max);
                continue;
            }
            any_field = true;
            if first & 0x80 != 0 {
                let i = integer(b, &mut pos, 7)?;
                let (n, v) = self.pair(i)?;
                if !list.fits(n.len() + v.len()) {
                    list.count(n.len() + v.len());
                    continue;
                }
                let at = list.begin();
                let buf = list.buf();
                buf.extend_from_slice(n);
                buf.extend_from_slice(v);
                list.commit(at, n.len());
                continue;
            }
            let (prefix, index) = if first & 0x40 != 0 { (6, true) } else { (4, false) };
            let counting = list.overflowed();
            let ni = integer(b, &mut pos, prefix)?;
            let at = list.begin();
            // A table name neither kept nor inserted is only counted.
            let mut uncopied = 0;
            if ni == 0 {
                string(b, &mut pos, list.buf())?;
            } else {
                let n = self.pair(ni)?.0;
                if counting && !index {
                    uncopied = n.len();
                } else {
                    if counting {
                        names_copied_over += n.len();
                        if names_copied_over > list.limit() {
                            return Err(DecodeError::Amplified);
                        }
                    }
                    list.buf().extend_from_slice(n);
                }
            }
            let name_len = list.buf().len() - at;
            string(b, &mut pos, list.buf())?;
            if index {
                let (n, v) = list.pending(at, name_len);
                self.table.insert(n, v);
            }
            if counting {
                list.count_pending(at, uncopied);
            } else {
                list.commit(at, name_len);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::fields::FIELD_OVERHEAD;
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

    /// A literal with incremental indexing of a 1-byte name and a 4000-byte value (§6.2.1).
    fn big_entry(block: &mut Vec<u8>) {
        // 4000 = 127 + 3873; 3873 = 0x21 + 0x1e*128 -> bytes 0xa1 0x1e
        block.extend_from_slice(&[0x40, 0x01, b'x', 0x7f, 0xa1, 0x1e]);
        block.extend(std::iter::repeat_n(b'v', 4000));
    }

    #[test]
    fn an_overflowed_list_is_counted_not_copied() {
        // The flood: a 4 KB entry, then a 16 KiB frame of one-byte references to it (66 MB if copied).
        let mut block = Vec::new();
        big_entry(&mut block);
        block.extend(std::iter::repeat_n(0xbe, 16_384));
        let mut d = Decoder::new(4096);
        let mut l = FieldList::new(16_384);
        // A buffer of exactly the limit: a field kept never needs more, so growing it means one was copied.
        l.buf().reserve_exact(16_384);
        let cap = l.buf().capacity();
        d.decode(&block, &mut l).unwrap();
        assert!(l.overflowed());
        assert_eq!(l.len(), 4, "the fields within 16 KiB are kept");
        assert_eq!(l.size(), 16_385 * (4001 + FIELD_OVERHEAD), "every field counted");
        assert_eq!(l.buf().capacity(), cap, "no field past the limit was copied into the list");
        // The dynamic table is as HPACK says: the entry is there for the next block.
        l.clear();
        d.decode(&[0xbe], &mut l).unwrap();
        assert_eq!(l.get(0), (&b"x"[..], &[b'v'; 4000][..]));
    }

    #[test]
    fn an_overflowed_list_still_inserts_into_the_table() {
        let mut block = Vec::new();
        big_entry(&mut block);
        block.extend(std::iter::repeat_n(0xbe, 5));
        // After the overflow: a literal name and value indexed, then one with the name of entry 62 indexed.
        block.extend_from_slice(&[0x40, 0x01, b'y', 0x02, b'h', b'i']);
        block.extend_from_slice(&[0x7e, 0x02, b'y', b'o']);
        let mut d = Decoder::new(4096);
        let mut l = FieldList::new(16_384);
        d.decode(&block, &mut l).unwrap();
        assert!(l.overflowed());
        assert_eq!(l.len(), 4);
        assert_eq!(l.size(), 6 * (4001 + FIELD_OVERHEAD) + 2 * (3 + FIELD_OVERHEAD));
        l.clear();
        d.decode(&[0xbe, 0xbf], &mut l).unwrap();
        assert_eq!(fields(&l), [("y".into(), "yo".into()), ("y".into(), "hi".into())]);
        // A list made count-only from its start keeps nothing, counts everything, and updates the table too.
        l.clear();
        l.count_only();
        d.decode(&[0x40, 0x01, b'z', 0x00, 0xbe], &mut l).unwrap();
        assert_eq!((l.len(), l.size()), (0, 2 * (1 + FIELD_OVERHEAD)));
        l.clear();
        d.decode(&[0xbe], &mut l).unwrap();
        assert_eq!(fields(&l), [("z".into(), "".into())]);
    }

    #[test]
    fn table_names_copied_into_new_entries_after_an_overflow_are_bounded() {
        // A 4000-byte name, the list overflowed, then 2-byte literals that index that name again with an empty
        // value: each copies 4 KB into the table (as HPACK requires), so only a list's worth is allowed.
        let attack = |repeats: usize| {
            let mut block = vec![0x40, 0x7f, 0xa1, 0x1e];
            block.extend(std::iter::repeat_n(b'n', 4000));
            block.push(0x00);
            block.extend(std::iter::repeat_n(0xbe, 5));
            for _ in 0..repeats {
                block.extend_from_slice(&[0x7e, 0x00]);
            }
            let mut d = Decoder::new(4096);
            let mut l = FieldList::new(16_384);
            d.decode(&block, &mut l).map(|()| d.table_size())
        };
        assert_eq!(attack(4), Ok(4032), "4 × 4000 bytes copied: within the list's 16 KiB");
        assert_eq!(attack(5), Err(DecodeError::Amplified));
        assert_eq!(attack(8000), Err(DecodeError::Amplified));
        // The same inserts in a list that has not overflowed are kept fields, bounded by the list itself.
        let mut block = vec![0x40, 0x01, b'k', 0x00];
        for _ in 0..300 {
            block.extend_from_slice(&[0x7e, 0x00]);
        }
        let mut d = Decoder::new(4096);
        let mut l = FieldList::new(16_384);
        d.decode(&block, &mut l).unwrap();
        assert_eq!((l.len(), l.overflowed()), (301, false));
    }
}
