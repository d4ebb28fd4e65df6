//! The QPACK encoder for response heads: the static table only, so a section depends on no connection's state
//! and is encoded once (a file's 200 head at load time, as `Variant::h2_200` is for HTTP/2) and copied into
//! every HEADERS frame that needs it.
//!
//! A section is `prefix` (Required Insert Count 0, Base 0: two zero bytes) and then field lines, each in the
//! cheapest static form: the exact pair (`:status 200` is one byte, 0xd9), else a literal naming the static
//! entry (`content-type` is index 44: two bytes, then the value), else a literal name; each string is
//! Huffman-coded only when that is shorter. Field lines can be concatenated freely after one prefix, which is
//! what lets a head be sent in parts (the file's block, then the per-second Date block, without a prefix of its
//! own).

use super::table::{name_index, pair_index};
use crate::http2::hpack::encode::{integer, string};
use crate::http2::hpack::huffman;

/// Appends the section prefix: no dynamic table (Required Insert Count 0), Base 0.
pub fn prefix(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0x00, 0x00]);
}

/// Appends one field line (name lowercase, as HTTP/3 requires).
pub fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    debug_assert!(!name.iter().any(u8::is_ascii_uppercase), "HTTP/3 field names are lowercase");
    if let Some(i) = pair_index(name, value) {
        // Indexed field line, static: 1 1 index(6+).
        integer(out, 0xc0, 6, i);
        return;
    }
    match name_index(name) {
        // Literal with static name reference, N = 0: 0 1 0 1 index(4+).
        Some(i) => integer(out, 0x50, 4, i),
        // Literal with literal name, N = 0: 0 0 1 0 H len(3+).
        None => {
            let h = huffman::encoded_len(name);
            if h < name.len() {
                integer(out, 0x28, 3, h);
                huffman::encode(name, out);
            } else {
                integer(out, 0x20, 3, name.len());
                out.extend_from_slice(name);
            }
        }
    }
    // The value: an 8-bit prefix string literal, HPACK's own (RFC 9204 §4.1.2).
    string(out, value);
}

/// Appends `:status`.
pub fn status(out: &mut Vec<u8>, code: u16) {
    let c = code.clamp(100, 999);
    let digits = [b'0' + (c / 100) as u8, b'0' + (c / 10 % 10) as u8, b'0' + (c % 10) as u8];
    field(out, b":status", &digits);
}

/// A whole response head: prefix, `:status`, then `fields` in order.
pub fn head(out: &mut Vec<u8>, code: u16, fields: &[(&[u8], &[u8])]) {
    prefix(out);
    status(out, code);
    for (n, v) in fields {
        field(out, n, v);
    }
}
