//! Path normalisation never panics and never yields a path that could leave the root: the result starts
//! with '/', has no "." or ".." segment, no empty segment, no NUL or backslash, and is valid UTF-8.
#![no_main]

use hyperstatic_server::answer::path;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut buf = [0u8; 4096];
    if let Ok(n) = path::normalize(data, &mut buf) {
        let p = &buf[..n];
        assert_eq!(p[0], b'/');
        assert!(!p.contains(&0) && !p.contains(&b'\\'));
        let s = std::str::from_utf8(p).expect("normalised paths are UTF-8");
        let inner = s.trim_start_matches('/').trim_end_matches('/');
        if !inner.is_empty() {
            for seg in inner.split('/') {
                assert!(!seg.is_empty() && seg != "." && seg != "..", "bad segment in {s:?}");
            }
        }
    }
});
