//! The HTTP/2 connection engine must never panic and must only write whole, well-formed frames within the
//! budget it is given, whatever the client sends. The input follows a valid preface and SETTINGS, so the
//! fuzzer spends its time on frames; it is fed in chunks whose sizes come from the input, every request is
//! answered, and output is taken with small budgets.
#![no_main]

use hyperstatic_server::http2::frame::{self, Head, PREFACE};
use hyperstatic_server::http2::hpack::encode;
use hyperstatic_server::http2::{Conn, Event, Limits};
use libfuzzer_sys::fuzz_target;

const BODY: &[u8] = &[b'b'; 40_000];

fn check_frames(mut out: &[u8]) {
    while !out.is_empty() {
        let h = Head::parse(out).expect("a whole frame header");
        let end = frame::HEADER_LEN + h.len as usize;
        assert!(end <= out.len(), "a whole frame");
        out = &out[end..];
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, frames)) = data.split_first() else { return };
    let chunk = chunk as usize % 64 + 1;
    let mut input = PREFACE.to_vec();
    frame::put(&mut input, frame::SETTINGS, 0, 0, &[]);
    input.extend_from_slice(frames);
    let mut conn: Conn<&'static [u8]> = Conn::new(Limits::default());
    let mut buf = Vec::new();
    let mut head = Vec::new();
    encode::status(&mut head, 200);
    encode::field(&mut head, b"content-type", b"text/plain");
    for piece in input.chunks(chunk) {
        buf.extend_from_slice(piece);
        let mut at = 0;
        loop {
            let (used, ev) = conn.recv(&buf[at..]);
            at += used;
            let req = match ev {
                Some(Event::Request(r)) => {
                    assert!(!r.method().is_empty());
                    Some((r.stream, r.method() == b"HEAD", r.path().len()))
                }
                None => None,
            };
            match req {
                Some((id, head_only, n)) => {
                    let body = if head_only { None } else { Some((BODY, 0, (n * 1000) as u64 % 40_000)) };
                    conn.respond(id, &[&head], body).expect("a just-opened stream takes its response");
                }
                None if used == 0 => break,
                None => {}
            }
        }
        buf.drain(..at);
        assert!(buf.len() < frame::HEADER_LEN + frame::DEFAULT_MAX_FRAME as usize + 64);
        let mut out = Vec::new();
        let n = conn.write(&mut out, 1 + chunk * 300);
        assert_eq!(n, out.len());
        check_frames(&out);
    }
    let mut out = Vec::new();
    conn.write(&mut out, usize::MAX / 2);
    check_frames(&out);
});
