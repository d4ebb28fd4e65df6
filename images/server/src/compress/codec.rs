//! The encoders and the rule for what is worth encoding, shared by the background encoder (encoder.rs) and the
//! build-time `precompress` subcommand, so a baked site and a projected one end up with the same variants.

use std::io::Write;

/// Files smaller than this are not worth compressing: the saving is below one packet.
pub const MIN_SIZE: u64 = 1024;

/// Above this, brotli's best quality costs seconds per file for a point or two of ratio; quality 9 instead. The
/// same size turns zstd from level 19 to 15; the encoder's working memory changes with it (`encoder_work`, below).
pub const BEST_MAX: usize = 256 * 1024;
const BROTLI_BEST_MAX: usize = BEST_MAX;

/// Whether a file of this type and size gets compressed variants.
pub fn worth(compressible: bool, len: u64) -> bool {
    compressible && len >= MIN_SIZE
}

/// Above this, zstd's level 19 costs more time than its ratio is worth; level 15 instead.
const ZSTD_BEST_MAX: usize = BEST_MAX;

/// Whether `url` is itself a compressed sibling (`x.css.br`, `.gz`, `.zst`), which is never encoded again.
pub fn is_sibling(url: &str) -> bool {
    url.ends_with(".br") || url.ends_with(".gz") || url.ends_with(".zst")
}

/// Brotli's window for `len` bytes of input: the smallest power of two that holds it (a longer window finds
/// nothing more), from 16 to 22 bits. Its working memory grows with the window (at quality 11 the match finder
/// keeps two 4-byte links per window position): a fixed 22-bit window cost every file, even 1 KB, tens of MB
/// (compress/encoder.rs charges what is left: `encoder_work`).
pub fn brotli_window(len: usize) -> u32 {
    (usize::BITS - len.saturating_sub(1).leading_zeros()).clamp(16, 22)
}

pub fn brotli(data: &[u8]) -> Vec<u8> {
    let quality = if data.len() <= BROTLI_BEST_MAX { 11 } else { 9 };
    let mut out = Vec::with_capacity(data.len() / 2);
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, quality, brotli_window(data.len()));
        w.write_all(data).expect("writing to a Vec");
    }
    out
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 2), flate2::Compression::best());
    e.write_all(data).expect("writing to a Vec");
    e.finish().expect("finishing gzip into a Vec")
}

/// A single zstd frame (with the content size in its header), as `zstd -19` writes it.
pub fn zstd(data: &[u8]) -> Vec<u8> {
    let level = if data.len() <= ZSTD_BEST_MAX { 19 } else { 15 };
    zstd::bulk::compress(data, level).expect("zstd compressing into memory")
}

/// Every encoding of `data`, each kept only when smaller than the data itself.
#[derive(Debug, Default, PartialEq)]
pub struct All {
    pub br: Option<Vec<u8>>,
    pub gz: Option<Vec<u8>>,
    pub zst: Option<Vec<u8>>,
}

pub fn all(data: &[u8]) -> All {
    all_gated(data, || true).expect("an open gate never stops")
}

/// `all`, asking `gate` before each encoder runs (the background encoder pauses there while serving needs the
/// CPU, slack.rs); None as soon as the gate says stop (newer content arrived).
pub fn all_gated(data: &[u8], mut gate: impl FnMut() -> bool) -> Option<All> {
    let smaller = |c: Vec<u8>| if c.len() < data.len() { Some(c) } else { None };
    let mut one = |f: fn(&[u8]) -> Vec<u8>| if gate() { Some(smaller(f(data))) } else { None };
    Some(All { br: one(brotli)?, gz: one(gzip)?, zst: one(zstd)? })
}

/// The background encoder's working memory for one file of `len` bytes at its peak, its three outputs and their
/// copies included; charged against the budget before the file is started (compress/encoder.rs). Measured by
/// tests/footprint.rs (peak RSS of `precompress` on one file of compressible text, less that of a run that
/// encodes nothing; 2026-12-02, two runs): at brotli 11 / zstd 19 (up to 256 KiB) 1.8–2.3 MB for 1 KB, 2.9–3.1
/// MB for 20 KB, 6.3–6.6 MB for 64 KiB, 17.3 MB for 200 KB, 22.4–22.8 MB for 256 KiB; at brotli 9 / zstd 15
/// above, 10.4–11.1 MB for 300 KB, 20.8 MB for 1 MiB, 82.6 MB for 4 MiB, 103 MB for 8 MiB. Bounded by two lines
/// with 10 % or more to spare.
pub fn encoder_work(len: u64) -> u64 {
    if len <= BEST_MAX as u64 {
        3 * (1 << 20) + 90 * len
    } else {
        6 * (1 << 20) + 22 * len
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn encodings_decode_to_the_input() {
        let text = "body { color: red; }\n".repeat(300);
        let a = all(text.as_bytes());
        let (br, gz) = (a.br.expect("text compresses with brotli"), a.gz.expect("text compresses with gzip"));
        let zst = a.zst.expect("text compresses with zstd");
        let mut out = Vec::new();
        brotli::Decompressor::new(&br[..], 4096).read_to_end(&mut out).unwrap();
        assert_eq!(out, text.as_bytes());
        out.clear();
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut out).unwrap();
        assert_eq!(out, text.as_bytes());
        assert_eq!(zstd::decode_all(&zst[..]).unwrap(), text.as_bytes());
    }

    #[test]
    fn incompressible_data_gets_no_variant() {
        // A xorshift stream: no redundancy for either encoder to find.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let data: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert_eq!(all(&data), All::default());
    }

    #[test]
    fn the_gate_is_asked_before_each_encoder_and_can_stop() {
        let text = "p { margin: 0 }\n".repeat(200);
        let mut asked = 0;
        let a = all_gated(text.as_bytes(), || {
            asked += 1;
            true
        });
        assert_eq!((a.as_ref(), asked), (Some(&all(text.as_bytes())), 3));
        let mut asked = 0;
        let stopped = all_gated(text.as_bytes(), || {
            asked += 1;
            asked < 2
        });
        assert_eq!((stopped, asked), (None, 2), "stops at the second codec");
    }

    #[test]
    fn the_brotli_window_holds_the_input() {
        assert_eq!(brotli_window(0), 16);
        assert_eq!(brotli_window(1 << 16), 16);
        assert_eq!(brotli_window((1 << 16) + 1), 17);
        assert_eq!(brotli_window(256 * 1024), 18);
        assert_eq!(brotli_window(64 << 20), 22);
    }

    #[test]
    fn what_is_worth_encoding() {
        assert!(worth(true, MIN_SIZE));
        assert!(!worth(true, MIN_SIZE - 1));
        assert!(!worth(false, 1 << 20));
        assert!(
            is_sibling("/a.css.br") && is_sibling("/a.css.gz") && is_sibling("/a.css.zst") && !is_sibling("/a.css")
        );
    }
}
