//! The QPACK decoder for request heads (RFC 9204 §4.5) with a dynamic table of capacity 0: every field line
//! is a static-table reference or a literal, and the section prefix must say so (Required Insert Count 0).
//!
//! Two kinds of failure, because they end different things:
//! * `Failed`: the section is not valid QPACK for a table of capacity 0 (a dynamic or post-base reference, a
//!   non-zero Required Insert Count, a negative Base, a static index past 98, a truncated integer or string,
//!   bad Huffman). RFC 9204 §2.2.3 and §4.5.1.1 make that a connection error, QPACK_DECOMPRESSION_FAILED.
//! * `TooLarge`: valid, but over our bounds (the list's size in RFC accounting, name + value + 32 per field, or
//!   the field count). A 431 for this request; the connection goes on. With no dynamic table there is no state
//!   to keep in step, so decoding stops at the first field over the bound: a section costs at most its own
//!   bytes of work and the list's bound of memory.
//!
//! Field names and values are not validated here (lowercase, no pseudo-headers after regular fields, no
//! connection-specific fields): that is the request layer's, as for HTTP/2 (http2/request.rs).

use super::table::STATIC;
use crate::http2::hpack::huffman;
use crate::http2::hpack::FieldList;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// QPACK_DECOMPRESSION_FAILED, a connection error; the reason is for the log.
    Failed(&'static str),
    /// Over the field list's size bound or `max_fields`: 431, the connection goes on.
    TooLarge,
}

use DecodeError::{Failed, TooLarge};

/// Integers (§4.1.1) are decoded up to 62 bits, as the RFC requires; beyond is malformed.
const MAX_INT: u64 = (1 << 62) - 1;

/// Decodes an integer with a `prefix`-bit prefix at `b[*pos]` (RFC 7541 §5.1).
fn integer(b: &[u8], pos: &mut usize, prefix: u8) -> Result<u64, DecodeError> {
    let mask = ((1u16 << prefix) - 1) as u8;
    let first = *b.get(*pos).ok_or(Failed("truncated integer"))? & mask;
    *pos += 1;
    if first < mask {
        return Ok(first as u64);
    }
    let mut v = mask as u64;
    let mut shift = 0u32;
    loop {
        let byte = *b.get(*pos).ok_or(Failed("truncated integer"))?;
        *pos += 1;
        let add = ((byte & 0x7f) as u64).checked_shl(shift).filter(|a| a >> shift == (byte & 0x7f) as u64);
        v = add.and_then(|a| v.checked_add(a)).filter(|&v| v <= MAX_INT).ok_or(Failed("integer over 62 bits"))?;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err(Failed("integer too long"));
        }
    }
}

/// Appends a string literal whose length has a `prefix`-bit prefix and whose Huffman flag is `huff_bit` of the
/// first byte (§4.1.2: the value's is 0x80 with 7 bits, a literal name's 0x08 with 3 bits).
fn string(b: &[u8], pos: &mut usize, prefix: u8, huff_bit: u8, out: &mut Vec<u8>) -> Result<(), DecodeError> {
    let huff = *b.get(*pos).ok_or(Failed("truncated string"))? & huff_bit != 0;
    let len = integer(b, pos, prefix)?;
    let end =
        pos.checked_add(len as usize).filter(|&e| e <= b.len()).ok_or(Failed("string longer than the section"))?;
    let s = &b[*pos..end];
    *pos = end;
    if huff {
        huffman::decode(s, out).map_err(|_| Failed("bad Huffman code"))
    } else {
        out.extend_from_slice(s);
        Ok(())
    }
}

fn static_entry(i: u64) -> Result<(&'static [u8], &'static [u8]), DecodeError> {
    STATIC.get(i as usize).copied().ok_or(Failed("static index past the table"))
}

/// Decodes one encoded field section (a HEADERS payload) onto `list`, which the caller cleared and whose limit
/// is our SETTINGS_MAX_FIELD_SECTION_SIZE. At most `max_fields` fields.
pub fn decode(b: &[u8], list: &mut FieldList, max_fields: usize) -> Result<(), DecodeError> {
    let mut pos = 0;
    // Required Insert Count: with capacity 0, MaxEntries is 0 and any encoded value but 0 is invalid (§4.5.1.1).
    if integer(b, &mut pos, 8)? != 0 {
        return Err(Failed("a dynamic table reference, and our capacity is 0"));
    }
    // Base: any value is allowed when nothing refers to the dynamic table, except a negative one (§4.5.1.2:
    // Sign 1 with a Required Insert Count of 0).
    let sign = *b.get(pos).ok_or(Failed("truncated prefix"))? & 0x80 != 0;
    integer(b, &mut pos, 7)?;
    if sign {
        return Err(Failed("a negative Base"));
    }
    while pos < b.len() {
        if list.len() >= max_fields {
            return Err(TooLarge);
        }
        let first = b[pos];
        if first & 0x80 != 0 {
            // Indexed field line: 1 T index(6+).
            if first & 0x40 == 0 {
                return Err(Failed("a dynamic table reference, and our capacity is 0"));
            }
            let (n, v) = static_entry(integer(b, &mut pos, 6)?)?;
            if !list.fits(n.len() + v.len()) {
                return Err(TooLarge);
            }
            let at = list.begin();
            list.buf().extend_from_slice(n);
            list.buf().extend_from_slice(v);
            list.commit(at, n.len());
            continue;
        }
        let at = list.begin();
        if first & 0x40 != 0 {
            // Literal with name reference: 01 N T index(4+), then the value.
            if first & 0x10 == 0 {
                return Err(Failed("a dynamic table reference, and our capacity is 0"));
            }
            let (n, _) = static_entry(integer(b, &mut pos, 4)?)?;
            list.buf().extend_from_slice(n);
        } else if first & 0x20 != 0 {
            // Literal with literal name: 001 N H len(3+) name, then the value.
            string(b, &mut pos, 3, 0x08, list.buf())?;
        } else {
            // 0001 (indexed, post-Base) and 0000 (literal with post-Base name reference).
            return Err(Failed("a post-Base reference, and our capacity is 0"));
        }
        let name_len = list.buf().len() - at;
        string(b, &mut pos, 7, 0x80, list.buf())?;
        list.commit(at, name_len);
        if list.overflowed() {
            return Err(TooLarge);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
