//! Our HPACK codec against the `loona-hpack` crate: the same fields from real encoders' blocks, and round trips
//! both ways over generated header lists (the crate's encoder indexes into the dynamic table; ours never does).

use super::encode;
use super::{Decoder, FieldList};

include!("../../../benches/data/h2_blocks.rs");

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn ours(d: &mut Decoder, block: &[u8]) -> Fields {
    let mut l = FieldList::new(1 << 20);
    d.decode(block, &mut l).unwrap();
    l.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect()
}

#[test]
fn real_encoders_blocks_decode_the_same() {
    for seq in [BROWSER, H2LOAD] {
        let mut a = Decoder::new(4096);
        let mut b = loona_hpack::Decoder::new();
        for block in seq {
            assert_eq!(ours(&mut a, block), b.decode(block).unwrap());
        }
    }
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, max: usize, names: bool) -> Vec<u8> {
        let n = (self.next() % max as u64) as usize + names as usize;
        (0..n)
            .map(|_| {
                let r = self.next();
                if names {
                    b"abcdefghijklmnopqrstuvwxyz-0123456789"[(r % 37) as usize]
                } else {
                    r as u8
                }
            })
            .collect()
    }
}

#[test]
fn round_trips_both_ways() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let statics: Vec<&[u8]> = super::table::STATIC.iter().map(|(n, _)| *n).collect();
    let mut loona_enc = loona_hpack::Encoder::new();
    let mut loona_dec = loona_hpack::Decoder::new();
    let mut our_dec = Decoder::new(4096);
    for _ in 0..500 {
        let count = (rng.next() % 12) as usize;
        let fields: Fields = (0..count)
            .map(|_| {
                let name = if rng.next().is_multiple_of(2) {
                    statics[(rng.next() % 61) as usize].to_vec()
                } else {
                    rng.bytes(20, true)
                };
                // Repeats now and then so the crate's encoder indexes and refers back.
                let value = if rng.next().is_multiple_of(3) { b"repeat-me".to_vec() } else { rng.bytes(60, false) };
                (name, value)
            })
            .collect();
        // Theirs to ours (dynamic table in play on both sides).
        let block = loona_enc.encode(fields.iter().map(|(n, v)| (&n[..], &v[..])));
        assert_eq!(ours(&mut our_dec, &block), fields);
        // Ours to theirs.
        let mut block = Vec::new();
        for (n, v) in &fields {
            encode::field(&mut block, n, v);
        }
        assert_eq!(loona_dec.decode(&block).unwrap(), fields);
    }
}
