//! HTTP/3 stream input: the frame reader behind a request stream or the control stream must never panic,
//! must consume every byte it is given, must never hold more than its bounds (a 16-byte head and one payload
//! within `Limits`), and every request head it hands out goes through the QPACK decoder within the field
//! list's bound. The first byte picks the stream and the piece size, so the fuzzer explores splits too.
#![no_main]

use hyperstatic_server::http2::hpack::FieldList;
use hyperstatic_server::http3::control::ControlStream;
use hyperstatic_server::http3::frame::Limits;
use hyperstatic_server::http3::qpack;
use hyperstatic_server::http3::request::{Event, RequestStream};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits { max_headers: 2048, max_settings: 64 };
const LIST: usize = 4096;

fn request(data: &[u8], chunk: usize) {
    let mut r = RequestStream::new(LIMITS);
    let mut list = FieldList::new(LIST);
    let mut body = 0u64;
    for piece in data.chunks(chunk) {
        let mut at = 0;
        loop {
            let Ok((used, ev)) = r.read(&piece[at..]) else { return };
            at += used;
            match ev {
                Some(Event::Head(h)) => {
                    assert!(h.len() <= LIMITS.max_headers as usize);
                    list.clear();
                    if qpack::decode(h, &mut list, 64).is_ok() {
                        assert!(list.size() <= LIST && list.len() <= 64);
                    }
                }
                Some(Event::HeadTooLarge(n)) => assert!(n > LIMITS.max_headers as u64),
                Some(Event::Body(b)) => body += b.len() as u64,
                Some(Event::Trailers) => {}
                None if used == 0 => break,
                None => {}
            }
        }
        assert_eq!(at, piece.len(), "every byte consumed");
    }
    assert_eq!(r.body_bytes(), body);
    let _ = r.finish();
}

fn control(data: &[u8], chunk: usize) {
    let mut c = ControlStream::new(LIMITS);
    for piece in data.chunks(chunk) {
        let mut at = 0;
        loop {
            let Ok((used, ev)) = c.read(&piece[at..]) else { return };
            at += used;
            if ev.is_none() && used == 0 {
                break;
            }
        }
        assert_eq!(at, piece.len(), "every byte consumed");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let chunk = (first & 0x7f) as usize + 1;
    if first & 0x80 == 0 {
        request(rest, chunk);
    } else {
        control(rest, chunk);
    }
});
