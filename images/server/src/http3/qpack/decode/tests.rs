//! The decoder against RFC 9204 Appendix B (the static-only example, and the dynamic ones refused as a
//! capacity of 0 requires), its bounds, and round trips with our encoder.

use super::super::encode;
use super::*;
use crate::http3::testutil::{hex, Rng};

fn fields(b: &[u8]) -> Result<Vec<(String, String)>, DecodeError> {
    let mut l = FieldList::new(1 << 16);
    decode(b, &mut l, 1000)?;
    Ok(l.iter().map(|(n, v)| (String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into())).collect())
}

fn pairs(want: &[(&str, &str)]) -> Vec<(String, String)> {
    want.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
}

#[test]
fn rfc9204_b1_literal_with_static_name_reference() {
    assert_eq!(fields(&hex("0000 510b 2f69 6e64 6578 2e68 746d 6c")).unwrap(), pairs(&[(":path", "/index.html")]));
}

#[test]
fn rfc9204_b2_to_b4_dynamic_sections_refused() {
    // B.2 (stream 4): Required Insert Count 2, two post-Base indexed lines. B.4 (stream 8): Required Insert
    // Count 4, dynamic indexed lines around a static one. With our capacity of 0 both are invalid (§4.5.1.1).
    for s in ["0381 10 11", "0500 80 c1 81"] {
        assert!(matches!(fields(&hex(s)), Err(Failed(_))), "{s}");
    }
}

#[test]
fn every_representation() {
    // Indexed static (17 :method GET, 1 :path /, and 98 with a two-byte index), literal with static name ref
    // (N set: never-indexed, still decoded), literal with literal name (raw and Huffman name and value).
    let mut b = hex("0000 d1 c1 ff23");
    b.extend(hex("7f01 03 6f6e65")); // 01 N=1 T=1 index 15+1 = 16 (:method) value "one"
    b.extend(hex("23 6162 63 03 78797a")); // 001 N=0 H=0 len 3 "abc" = "xyz"
    let mut huff_name = Vec::new();
    huffman::encode(b"custom-key", &mut huff_name);
    b.push(0x28 | 0x07);
    b.push(huff_name.len() as u8 - 7);
    b.extend(&huff_name);
    let mut huff_value = Vec::new();
    huffman::encode(b"custom-value", &mut huff_value);
    b.push(0x80 | huff_value.len() as u8);
    b.extend(&huff_value);
    assert_eq!(
        fields(&b).unwrap(),
        pairs(&[
            (":method", "GET"),
            (":path", "/"),
            ("x-frame-options", "sameorigin"),
            (":method", "one"),
            ("abc", "xyz"),
            ("custom-key", "custom-value")
        ])
    );
}

#[test]
fn malformed_is_a_connection_error() {
    let cases = [
        ("", "no prefix"),
        ("00", "half a prefix"),
        ("0080", "negative Base"),
        ("0100", "Required Insert Count 1"),
        ("0000 80", "indexed dynamic"),
        ("0000 ff24", "static index 99"),
        ("0000 10", "indexed post-Base"),
        ("0000 08 00", "literal post-Base name"),
        ("0000 40 00", "literal dynamic name"),
        ("0000 5f", "name index cut"),
        ("0000 51 05 6162", "value longer than the section"),
        ("0000 51 81 00", "bad Huffman (zero padding)"),
        ("0000 2f ffffffffffffffffff01 00", "name length over 62 bits"),
        ("0000 ff ffffffffffffffffffffff", "integer without end"),
    ];
    for (s, why) in cases {
        assert!(matches!(fields(&hex(s)), Err(Failed(_))), "{why}: {:?}", fields(&hex(s)));
    }
    // A Base with Sign 0 and any delta is fine when nothing refers to the table (§4.5.1.2).
    assert_eq!(fields(&hex("00 7f 10 c1")).unwrap(), pairs(&[(":path", "/")]));
}

#[test]
fn bounds_are_a_431_not_a_connection_error() {
    // Size: :path / is 5 + 1 + 32 = 38 in RFC accounting; a list of 100 takes two, not three.
    let b = hex("0000 c1 c1 c1");
    let mut l = FieldList::new(100);
    assert_eq!(decode(&b, &mut l, 1000), Err(TooLarge));
    assert!(l.len() <= 2);
    let mut l = FieldList::new(100);
    assert_eq!(decode(&hex("0000 c1 c1"), &mut l, 1000), Ok(()));
    // Count.
    let mut l = FieldList::new(1 << 16);
    assert_eq!(decode(&b, &mut l, 2), Err(TooLarge));
    let mut l = FieldList::new(1 << 16);
    assert_eq!(decode(&b, &mut l, 3), Ok(()));
    // A literal over the bound.
    let mut big = hex("0000 5f1d 7f81 07"); // content-type (44) value of 127 + 0x81 + 7 * 128 = 1,024 bytes
    big.extend(std::iter::repeat_n(b'a', 1024));
    let mut l = FieldList::new(1000);
    assert_eq!(decode(&big, &mut l, 1000), Err(TooLarge));
    let mut l = FieldList::new(2000);
    assert_eq!(decode(&big, &mut l, 1000), Ok(()));
    assert_eq!(l.get(0).1.len(), 1024);
}

#[test]
fn encoder_forms() {
    let mut o = Vec::new();
    encode::status(&mut o, 200);
    assert_eq!(o, [0xd9], "static pair 25");
    o.clear();
    encode::status(&mut o, 431);
    assert_eq!(o, [0x5f, 0x09, 0x03, b'4', b'3', b'1'], "static name 24 (4-bit prefix 15 + 9), raw value");
    o.clear();
    encode::field(&mut o, b"content-type", b"text/css");
    assert_eq!(o, [0xc0 | 51], "static pair 51");
    o.clear();
    encode::field(&mut o, b"content-type", b"image/avif");
    assert_eq!(&o[..2], [0x5f, 44 - 15], "static name 44 in a 4-bit prefix");
    o.clear();
    encode::field(&mut o, b"x-robots-tag", b"noindex");
    assert_eq!(o[0] & 0xe8, 0x28, "literal name, Huffman (shorter)");
}

#[test]
fn property_round_trips_through_our_encoder() {
    // Field lists of static names and values, static names with other values, and
    // names outside the table, with values over all bytes; the head as the server builds it.
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut next = move || rng.next();
    let names: [&[u8]; 6] = [b"content-type", b"etag", b"x-custom", b"vary", b"a", b"cache-control"];
    for round in 0..500 {
        let mut want: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for _ in 0..next() % 12 {
            let (n, v) = match next() % 3 {
                0 => {
                    let (n, v) = super::super::table::STATIC[(next() % 99) as usize];
                    (n.to_vec(), v.to_vec())
                }
                1 => {
                    let len = (next() % 40) as usize;
                    (names[(next() % 6) as usize].to_vec(), (0..len).map(|_| next() as u8).collect())
                }
                _ => {
                    let len = (next() % 300) as usize;
                    (
                        format!("x-n{}", next() % 1000).into_bytes(),
                        (0..len).map(|_| b' ' + (next() % 95) as u8).collect(),
                    )
                }
            };
            want.push((n, v));
        }
        let code = 100 + (next() % 500) as u16;
        let refs: Vec<(&[u8], &[u8])> = want.iter().map(|(n, v)| (&n[..], &v[..])).collect();
        let mut b = Vec::new();
        encode::head(&mut b, code, &refs);
        let mut l = FieldList::new(1 << 20);
        decode(&b, &mut l, 1000).unwrap_or_else(|e| panic!("round {round}: {e:?}"));
        assert_eq!(l.get(0), (&b":status"[..], code.to_string().as_bytes()), "round {round}");
        let got: Vec<(Vec<u8>, Vec<u8>)> = l.iter().skip(1).map(|(n, v)| (n.to_vec(), v.to_vec())).collect();
        assert_eq!(got, want, "round {round}");
    }
}
