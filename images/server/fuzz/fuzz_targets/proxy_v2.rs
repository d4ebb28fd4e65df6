//! The PROXY protocol v2 parser (src/proxy_v2.rs) must never panic, never claim more bytes than it was given,
//! and answer the same for a header whatever comes after it: `Done` only once the whole declared header is
//! there, with the same length and source on every longer input.
#![no_main]

use hyperstatic_server::proxy_v2::{parse, Parsed, SIGNATURE};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Half the inputs start with the signature, so the fuzzer spends its time past it.
    let mut input = Vec::with_capacity(data.len() + SIGNATURE.len());
    if data.first().is_some_and(|b| b & 1 == 0) {
        input.extend_from_slice(&SIGNATURE);
        input.extend_from_slice(&data[1..]);
    } else {
        input.extend_from_slice(data);
    }
    let whole = parse(&input);
    if let Ok(Parsed::Done { used, .. }) = whole {
        assert!(used <= input.len());
        // The header alone, and the header with anything after it, parse alike.
        assert_eq!(parse(&input[..used]), whole);
        for n in 0..used {
            assert_eq!(parse(&input[..n]), Ok(Parsed::Partial), "a prefix of a whole header");
        }
    }
});
