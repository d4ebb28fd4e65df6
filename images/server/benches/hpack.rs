//! HPACK: our hand-written codec (src/http2/hpack) against the `loona-hpack` crate (the maintained fork of
//! `hpack`, sans-IO), on what the server sees and sends:
//! - decode: a browser's 10 request blocks for a page (Chrome-like fields, Huffman and dynamic-table indexing,
//!   as the Python `hpack` encoder makes them) and h2load's 10 blocks, each sequence on a fresh decoder;
//! - encode: a static file's response head (8 fields). Ours is encoded once at load time, so per response it
//!   is a copy of the block into the HEADERS frame; the crate encodes per response (it has no other way).
//!
//! Run: `cargo bench --bench hpack`. Prints the best and median ns per block/response of interleaved rounds,
//! and the encoded sizes.

use std::hint::black_box;
use std::time::Instant;

use hyperstatic_server::http2::hpack::{encode, Decoder, FieldList};

include!("data/h2_blocks.rs");

const RESPONSE: &[(&[u8], &[u8])] = &[
    (b":status", b"200"),
    (b"content-type", b"text/css; charset=utf-8"),
    (b"content-length", b"18231"),
    (b"etag", b"\"6b1f0e2a9c4d7e3f5a1b-br\""),
    (b"last-modified", b"Tue, 24 Nov 2026 10:12:44 GMT"),
    (b"cache-control", b"public, max-age=31536000, immutable"),
    (b"content-encoding", b"br"),
    (b"vary", b"accept-encoding"),
];

fn ours_decode(blocks: &[&[u8]], list: &mut FieldList) -> usize {
    let mut d = Decoder::new(4096);
    let mut n = 0;
    for b in blocks {
        list.clear();
        d.decode(b, list).unwrap();
        n += list.len();
    }
    n
}

fn crate_decode(blocks: &[&[u8]]) -> usize {
    let mut d = loona_hpack::Decoder::new();
    let mut n = 0;
    for b in blocks {
        n += d.decode(b).unwrap().len();
    }
    n
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn time(iters: usize, per: usize, mut f: impl FnMut() -> usize) -> f64 {
    let t = Instant::now();
    let mut sink = 0;
    for _ in 0..iters {
        sink += f();
    }
    black_box(sink);
    t.elapsed().as_nanos() as f64 / (iters * per) as f64
}

fn main() {
    let rounds = 15;
    let iters = 20_000;
    let mut list = FieldList::new(16 * 1024);
    assert_eq!(ours_decode(BROWSER, &mut list), crate_decode(BROWSER));
    assert_eq!(ours_decode(H2LOAD, &mut list), crate_decode(H2LOAD));

    let mut ours_head = Vec::new();
    for (n, v) in RESPONSE {
        encode::field(&mut ours_head, n, v);
    }
    let mut crate_enc = loona_hpack::Encoder::new();
    let first = crate_enc.encode(RESPONSE.iter().copied()).len();
    let repeat = crate_enc.encode(RESPONSE.iter().copied()).len();
    let plain: usize = RESPONSE.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
    println!(
        "response head: ours {} bytes every time (static table + Huffman); crate {} bytes first, {} bytes when repeated on one connection; as HTTP/1.1 text {} bytes",
        ours_head.len(),
        first,
        repeat,
        plain
    );

    let mut rows: Vec<(&str, Vec<f64>)> = [
        "decode browser (ours)",
        "decode browser (loona-hpack)",
        "decode h2load (ours)",
        "decode h2load (loona-hpack)",
        "encode response (ours: copy the block)",
        "encode response (ours: encode anew)",
        "encode response (loona-hpack)",
    ]
    .into_iter()
    .map(|n| (n, Vec::new()))
    .collect();
    let mut frame = Vec::with_capacity(1024);
    for _ in 0..rounds {
        rows[0].1.push(time(iters / 4, BROWSER.len(), || ours_decode(black_box(BROWSER), &mut list)));
        rows[1].1.push(time(iters / 4, BROWSER.len(), || crate_decode(black_box(BROWSER))));
        rows[2].1.push(time(iters / 4, H2LOAD.len(), || ours_decode(black_box(H2LOAD), &mut list)));
        rows[3].1.push(time(iters / 4, H2LOAD.len(), || crate_decode(black_box(H2LOAD))));
        rows[4].1.push(time(iters * 10, 1, || {
            frame.clear();
            frame.extend_from_slice(black_box(&ours_head));
            frame.len()
        }));
        rows[5].1.push(time(iters, 1, || {
            frame.clear();
            for (n, v) in black_box(RESPONSE) {
                encode::field(&mut frame, n, v);
            }
            frame.len()
        }));
        rows[6].1.push(time(iters, 1, || {
            frame.clear();
            crate_enc.encode_into(black_box(RESPONSE).iter().copied(), &mut frame).unwrap();
            frame.len()
        }));
    }
    for (name, mut v) in rows {
        let best = v.iter().cloned().fold(f64::INFINITY, f64::min);
        println!("{name:42} best {best:8.1} ns  median {:8.1} ns", median(&mut v));
    }
}
