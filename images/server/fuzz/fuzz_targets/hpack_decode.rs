//! The HPACK decoder must never panic, must keep the decoded list within its bound, and what it decodes must
//! survive our encoder and decode back the same; every input is a sequence of blocks on one decoder, so the
//! dynamic table is exercised across blocks.
#![no_main]

use hyperstatic_server::http2::hpack::{encode, Decoder, FieldList};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut d = Decoder::new(4096);
    let mut l = FieldList::new(16 * 1024);
    // Blocks separated by 0xFE bytes, so one input is several blocks.
    for block in data.split(|&b| b == 0xfe) {
        l.clear();
        if d.decode(block, &mut l).is_err() {
            return;
        }
        assert!(d.table_size() <= 4096);
        let kept: usize = l.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
        assert!(kept <= 16 * 1024);
        // Re-encode (names as literals: the decoder accepts any bytes, our field encoder wants lowercase).
        let mut again = Vec::new();
        for (n, v) in l.iter() {
            again.push(0x00);
            encode::string(&mut again, n);
            encode::string(&mut again, v);
        }
        let mut l2 = FieldList::new(1 << 20);
        Decoder::new(4096).decode(&again, &mut l2).expect("our own encoding decodes");
        assert!(l.iter().eq(l2.iter()));
    }
});
