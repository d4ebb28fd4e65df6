//! The request parser must never panic, must only report heads inside the buffer, and must honour its
//! size limits, whatever the bytes.
#![no_main]

use hyperstatic_server::http1::parser::{self, Parsed};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parser::parse(data) {
        Ok(Parsed::Complete(req, used)) => {
            assert!(used <= data.len());
            assert!(used <= parser::MAX_REQUEST_LINE + parser::MAX_HEADER_SECTION + 16);
            assert!(!req.target.is_empty());
            // Whatever was parsed, the path must normalise or be rejected without panicking.
            let mut buf = [0u8; parser::MAX_REQUEST_LINE];
            let _ = hyperstatic_server::answer::path::normalize(req.path, &mut buf);
            let _ = req.keep_alive();
        }
        Ok(Parsed::Partial) => {
            // A partial head is only possible below the limits.
            assert!(data.len() < parser::MAX_REQUEST_LINE + parser::MAX_HEADER_SECTION + 16);
        }
        Err(_) => {}
    }
});
