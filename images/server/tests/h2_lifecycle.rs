//! An HTTP/2 connection's life on the real binary (h2c, raw frames): GOAWAY with the last stream id on
//! SIGTERM and at `--max-connection-age`, with the stream in flight finished before the close; GOAWAY
//! SETTINGS_TIMEOUT for a peer that never acknowledges our SETTINGS; GOAWAY and close when idle. Every wait is
//! for a frame or the close (the server's clock fires; the test never races it).

mod common;

use std::io::Write;

use common::h2::*;
use common::{tempdir, Server};

fn server(extra: &[&str]) -> (Server, common::Site) {
    // One site per test: the tests run in parallel.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let site = tempdir(&format!("h2-life-{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    std::fs::write(site.join("index.html"), "home").unwrap();
    std::fs::write(site.join("big.bin"), vec![7u8; 200_000]).unwrap();
    let mut args = vec!["--h2c"];
    args.extend_from_slice(extra);
    (Server::start(&site, &args), site)
}

/// Opens every window wide and reads stream `id`'s body to its END_STREAM; returns its length.
fn finish_body(c: &mut std::net::TcpStream, id: u32) -> usize {
    let mut more = frame(WINDOW_UPDATE, 0, 0, &0x0010_0000u32.to_be_bytes());
    more.extend(frame(WINDOW_UPDATE, 0, id, &0x0010_0000u32.to_be_bytes()));
    c.write_all(&more).unwrap();
    let mut n = 0;
    read_until(c, |k, f, s, p| {
        if k == DATA && s == id {
            n += p.len();
        }
        k == DATA && s == id && f & END_STREAM != 0
    })
    .expect("the body ends");
    n
}

#[test]
fn sigterm_sends_goaway_with_the_last_stream_and_finishes_it_before_closing() {
    let (s, _site) = server(&[]);
    // Window 0: stream 1's body stays in flight until we open it.
    let mut c = h2c(&s, &[0, 4, 0, 0, 0, 0]);
    c.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &request_block("/big.bin"))).unwrap();
    read_until(&mut c, |k, _, id, _| k == HEADERS && id == 1).expect("the head");
    s.signal(libc::SIGTERM);
    assert_eq!(goaway(&mut c), (1, NO_ERROR), "GOAWAY names stream 1, the last one the server acts on");
    assert_eq!(finish_body(&mut c, 1), 200_000, "the stream in flight finishes");
    assert!(read_until(&mut c, |_, _, _, _| false).is_none(), "then the connection closes");
}

#[test]
fn max_connection_age_sends_goaway_and_later_streams_go_elsewhere() {
    let (s, _site) = server(&["--max-connection-age", "1s"]);
    let mut c = h2c(&s, &[0, 4, 0, 0, 0, 0]);
    c.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &request_block("/big.bin"))).unwrap();
    c.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 3, &request_block("/"))).unwrap();
    assert_eq!(goaway(&mut c), (3, NO_ERROR));
    assert_eq!(finish_body(&mut c, 1), 200_000);
    assert_eq!(finish_body(&mut c, 3), 4);
    assert!(read_until(&mut c, |_, _, _, _| false).is_none(), "closed once its streams are done");
    // A new connection is served as usual.
    let mut d = h2c(&s, &[]);
    d.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &request_block("/"))).unwrap();
    let got = read_until(&mut d, |k, f, id, _| k == DATA && id == 1 && f & END_STREAM != 0);
    assert_eq!(got.map(|(_, p)| p), Some(b"home".to_vec()));
}

#[test]
fn settings_never_acknowledged_get_goaway_settings_timeout() {
    let (s, _site) = server(&["--header-timeout", "1s"]);
    let mut c = s.connect();
    let mut hello = PREFACE.to_vec();
    hello.extend(frame(SETTINGS, 0, 0, &[]));
    c.write_all(&hello).unwrap();
    assert_eq!(goaway_code(&mut c), SETTINGS_TIMEOUT);
}

#[test]
fn an_idle_connection_gets_goaway_and_is_closed() {
    let (s, _site) = server(&["--keepalive-timeout", "1s"]);
    let mut c = h2c(&s, &[]);
    c.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &request_block("/"))).unwrap();
    let got = read_until(&mut c, |k, f, id, _| k == DATA && id == 1 && f & END_STREAM != 0);
    assert_eq!(got.map(|(_, p)| p), Some(b"home".to_vec()));
    assert_eq!(goaway_code(&mut c), NO_ERROR);
    assert_eq!(s.metric("hyperstatic_http2_connections_total{transport=\"cleartext\"}"), 1.0);
}
