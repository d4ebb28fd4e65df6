//! HTTP/2 attacks against the real binary over h2c (raw frames on real sockets): rapid reset (CVE-2023-44487),
//! CONTINUATION flood, PING flood without reading (CVE-2019-9512), too many concurrent streams, an HPACK bomb
//! (431, the connection kept), and a reader that opens no window (CVE-2019-9511/9517). A flood ends with a
//! GOAWAY and the close, a stall with the close; refused streams and the bomb's 431 leave the connection
//! serving; another client keeps being answered throughout. Every wait is for a frame or an EOF, never for a clock; the
//! read timeout only turns a hang into a failure.

mod common;

use std::io::Write;
use std::time::Duration;

use common::h2::*;
use common::{tempdir, Server};

/// Another client, meanwhile: a whole HTTP/1.1 answer.
fn others_are_answered(s: &Server) {
    let r = s.get("/", &[]);
    assert_eq!(r.status, 200);
}

fn server(extra: &[&str]) -> (Server, common::Site) {
    // One site per test: the tests run in parallel.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let site = tempdir(&format!("h2-attacks-{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    std::fs::write(site.join("index.html"), "home").unwrap();
    std::fs::write(site.join("big.bin"), vec![7u8; 300_000]).unwrap();
    let mut args = vec!["--h2c"];
    args.extend_from_slice(extra);
    (Server::start(&site, &args), site)
}

#[test]
fn rapid_reset_gets_goaway_enhance_your_calm() {
    let (s, _site) = server(&[]);
    let mut c = h2c(&s, &[]);
    let mut flood = Vec::new();
    for i in 0..2000u32 {
        let id = 1 + 2 * i;
        flood.extend(frame(HEADERS, END_STREAM | END_HEADERS, id, &request_block("/")));
        flood.extend(frame(RST_STREAM, 0, id, &8u32.to_be_bytes()));
    }
    // The server may close before taking it all.
    let _ = c.write_all(&flood);
    others_are_answered(&s);
    assert_eq!(goaway_code(&mut c), ENHANCE_YOUR_CALM);
    others_are_answered(&s);
}

#[test]
fn continuation_flood_gets_goaway_enhance_your_calm() {
    let (s, _site) = server(&[]);
    let mut c = h2c(&s, &[]);
    let block = request_block("/");
    let mut flood = frame(HEADERS, END_STREAM, 1, &block[..2]);
    for _ in 0..100 {
        // An empty-ish CONTINUATION each time, never END_HEADERS: a header block that never ends.
        flood.extend(frame(CONTINUATION, 0, 1, &[0x40, 1, b'x', 1, b'y']));
    }
    let _ = c.write_all(&flood);
    others_are_answered(&s);
    assert_eq!(goaway_code(&mut c), ENHANCE_YOUR_CALM);
}

#[test]
fn ping_flood_without_reading_gets_goaway_enhance_your_calm() {
    let (s, _site) = server(&[]);
    let mut c = h2c(&s, &[]);
    // 20,000 PINGs (340 KB of answers) written before reading a single byte back.
    let mut flood = Vec::new();
    for i in 0..20_000u64 {
        flood.extend(frame(PING, 0, 0, &i.to_be_bytes()));
    }
    let _ = c.write_all(&flood);
    others_are_answered(&s);
    assert_eq!(goaway_code(&mut c), ENHANCE_YOUR_CALM);
}

#[test]
fn streams_past_the_limit_are_refused_and_the_connection_keeps_serving() {
    let (s, _site) = server(&[]);
    let mut c = h2c(&s, &[]);
    // 129 requests that keep their streams open (no END_STREAM: a body might follow): one past 128.
    let mut burst = Vec::new();
    for i in 0..129u32 {
        burst.extend(frame(HEADERS, END_HEADERS, 1 + 2 * i, &request_block("/")));
    }
    c.write_all(&burst).unwrap();
    let (_, p) = read_until(&mut c, |k, _, id, _| k == RST_STREAM && id == 257).expect("the 129th is refused");
    assert_eq!(u32::from_be_bytes([p[0], p[1], p[2], p[3]]), REFUSED_STREAM);
    others_are_answered(&s);
    // The connection itself is fine: a new request on it (after ending the others' uploads) is answered.
    let mut ends = Vec::new();
    for i in 0..128u32 {
        ends.extend(frame(DATA, END_STREAM, 1 + 2 * i, &[]));
    }
    ends.extend(frame(HEADERS, END_STREAM | END_HEADERS, 301, &request_block("/")));
    c.write_all(&ends).unwrap();
    let got = read_until(&mut c, |k, f, id, _| k == DATA && id == 301 && f & END_STREAM != 0);
    assert_eq!(got.map(|(_, p)| p), Some(b"home".to_vec()));
}

#[test]
fn a_reader_that_opens_no_window_is_closed_at_the_idle_timeout_and_others_are_served() {
    let (s, _site) = server(&["--keepalive-timeout", "1s"]);
    // SETTINGS_INITIAL_WINDOW_SIZE = 0: the server may send no DATA at all.
    let mut c = h2c(&s, &[0, 4, 0, 0, 0, 0]);
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut reqs = Vec::new();
    for i in 0..100u32 {
        reqs.extend(frame(HEADERS, END_STREAM | END_HEADERS, 1 + 2 * i, &request_block("/big.bin")));
    }
    c.write_all(&reqs).unwrap();
    // Heads come, no DATA; others are served meanwhile; then the stalled connection is closed.
    let head = read_until(&mut c, |k, _, id, _| k == HEADERS && id == 199);
    assert!(head.is_some(), "every request gets its head");
    others_are_answered(&s);
    assert!(read_until(&mut c, |k, _, _, _| k == DATA).is_none(), "no DATA without a window; then the close");
    others_are_answered(&s);
}

#[test]
fn an_hpack_bomb_gets_431_and_the_connection_keeps_serving() {
    use hyperstatic_server::http2::hpack::encode;
    let (s, _site) = server(&[]);
    let mut c = h2c(&s, &[]);
    // One 4,000-byte field enters the HPACK table, then ten one-byte references to it: 44 KB decoded from a
    // 4 KB block, over the 16 KiB SETTINGS_MAX_HEADER_LIST_SIZE.
    let mut block = request_block("/");
    block.push(0x40);
    encode::string(&mut block, b"x-bomb");
    encode::string(&mut block, &[b'a'; 4000]);
    block.extend([0x80 | 62; 10]);
    c.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &block)).unwrap();
    let (_, head) = read_until(&mut c, |k, _, id, _| k == HEADERS && id == 1).expect("an answer");
    assert_eq!(&head[..5], &[0x08, 0x03, b'4', b'3', b'1'], ":status 431");
    // The HPACK state is intact: the next request (which may refer to the table) is answered.
    let mut next = request_block("/");
    next.push(0x80 | 62);
    c.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 3, &next)).unwrap();
    let got = read_until(&mut c, |k, f, id, _| k == DATA && id == 3 && f & END_STREAM != 0);
    assert_eq!(got.map(|(_, p)| p), Some(b"home".to_vec()));
    others_are_answered(&s);
}
