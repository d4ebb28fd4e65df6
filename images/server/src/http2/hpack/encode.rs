//! The HPACK encoder for responses: static-table only, so a block does not depend on any connection's state
//! and can be encoded once (per file, at load time) and copied into every HEADERS frame that needs it.
//!
//! Each field takes the cheapest static form: the exact pair from the static table (one byte, e.g. `:status
//! 200`), else a literal *without indexing* naming the static entry (`content-type` is 31: two bytes), else a
//! literal name; each string is Huffman-coded only when that is shorter. Why not the dynamic table: it would
//! make a block connection-specific (encoded per response, ordered by HPACK state) to save most of a
//! ~120-byte block on repeats; the figures are in `http2/mod.rs`.

use super::huffman;
use super::table::{static_name_index, static_pair_index};

/// Appends `v` as an HPACK integer with an `n`-bit prefix whose upper bits are `flags` (§5.1).
pub fn integer(out: &mut Vec<u8>, flags: u8, n: u8, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a string literal, Huffman-coded when shorter (§5.2).
pub fn string(out: &mut Vec<u8>, s: &[u8]) {
    let h = huffman::encoded_len(s);
    if h < s.len() {
        integer(out, 0x80, 7, h);
        huffman::encode(s, out);
    } else {
        integer(out, 0, 7, s.len());
        out.extend_from_slice(s);
    }
}

/// Appends one field (name lowercase, as HTTP/2 requires).
pub fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    debug_assert!(!name.iter().any(u8::is_ascii_uppercase), "HTTP/2 field names are lowercase");
    if let Some(i) = static_pair_index(name, value) {
        integer(out, 0x80, 7, i);
        return;
    }
    match static_name_index(name) {
        Some(i) => integer(out, 0x00, 4, i),
        None => {
            out.push(0x00);
            string(out, name);
        }
    }
    string(out, value);
}

/// Appends `:status`.
pub fn status(out: &mut Vec<u8>, code: u16) {
    let mut digits = [0u8; 3];
    let c = code.clamp(100, 999);
    digits[0] = b'0' + (c / 100) as u8;
    digits[1] = b'0' + (c / 10 % 10) as u8;
    digits[2] = b'0' + (c % 10) as u8;
    field(out, b":status", &digits);
}

#[cfg(test)]
mod tests {
    use super::super::{Decoder, FieldList};
    use super::*;

    #[test]
    fn rfc7541_c1_integers() {
        let mut o = Vec::new();
        integer(&mut o, 0, 5, 10);
        assert_eq!(o, [0x0a]);
        o.clear();
        integer(&mut o, 0, 5, 1337);
        assert_eq!(o, [0x1f, 0x9a, 0x0a]);
        o.clear();
        integer(&mut o, 0, 8, 42);
        assert_eq!(o, [0x2a]);
    }

    #[test]
    fn forms_and_round_trip() {
        let mut o = Vec::new();
        status(&mut o, 200);
        assert_eq!(o, [0x88], "static pair");
        o.clear();
        status(&mut o, 431);
        assert_eq!(o, [0x08, 0x03, b'4', b'3', b'1'], "static name, raw value (Huffman is not shorter)");
        o.clear();
        field(&mut o, b"content-type", b"text/html; charset=utf-8");
        assert_eq!(&o[..2], [0x0f, 0x10], "name index 31 in a 4-bit prefix");
        assert!(o[2] & 0x80 != 0, "Huffman value");
        o.clear();
        let fields: &[(&[u8], &[u8])] = &[
            (b":status", b"200"),
            (b"content-type", b"text/css"),
            (b"etag", b"\"6b1f0e2a9c4d7e3f5a1b-br\""),
            (b"x-content-type-options", b"nosniff"),
            (b"content-length", b"123456"),
        ];
        for (n, v) in fields {
            field(&mut o, n, v);
        }
        let mut d = Decoder::new(4096);
        let mut l = FieldList::new(1 << 16);
        d.decode(&o, &mut l).unwrap();
        assert_eq!(l.iter().collect::<Vec<_>>(), fields.to_vec());
        assert_eq!(d.table_size(), 0, "never touches the peer's dynamic table");
    }
}
