//! The error cases of RFC 9113 that h2spec checks, one row each: the frames a client sends after the
//! handshake, and the connection error (GOAWAY code) or stream error (RST_STREAM code) we must answer with.

use super::super::frame::{self as f, ErrorCode as E};
use super::*;

enum Want {
    Conn(E),
    Stream(u32, E),
}

fn run(name: &str, input: Vec<u8>, want: Want) {
    let mut s = Server::open();
    s.feed(&input);
    let out = s.out_all();
    match want {
        Want::Conn(code) => {
            assert_eq!(goaway(&out), Some(code as u32), "{name}: {out:?}");
            assert!(s.conn.is_closed(), "{name}: closes after GOAWAY");
        }
        Want::Stream(id, code) => {
            assert_eq!(rst(&out, id), Some(code as u32), "{name}: {out:?}");
            assert_eq!(goaway(&out), None, "{name}: a stream error only");
        }
    }
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn open(id: u32) -> Vec<u8> {
    Client::headers(id, false, &Client::get("/"))
}

#[test]
fn preface_and_first_settings() {
    let mut s = Server::new();
    s.feed(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    s.feed(&Client::frame(f::PING, 0, 0, &[0; 8]));
    assert_eq!(goaway(&s.out_all()), Some(E::Protocol as u32), "3.5: first frame not SETTINGS");
    let mut s = Server::new();
    s.feed(b"GET / HTTP/1.1\r\n\r\n");
    let out = s.out_all();
    assert_eq!(out[0].head.kind, f::SETTINGS, "our preface goes first");
    assert_eq!(goaway(&out), Some(E::Protocol as u32), "3.5: invalid preface");
    // A preface split anywhere is fine.
    let mut s = Server::new();
    let p = Client::preface();
    for b in p.chunks(5) {
        s.feed(b);
    }
    let out = s.out_all();
    assert!(out.iter().any(|f| f.head.kind == f::SETTINGS && f.head.flags == f::FLAG_ACK));
    assert_eq!(goaway(&out), None);
}

#[test]
fn h2spec_connection_errors() {
    let big_headers = {
        let mut v = Client::frame(f::HEADERS, f::FLAG_END_HEADERS, 1, &[]);
        v[0..3].copy_from_slice(&[0, 0x40, 0x01]); // 16385
        v.extend(std::iter::repeat_n(0u8, 16_385));
        v
    };
    let cases: Vec<(&str, Vec<u8>, E)> = vec![
        ("4.2 HEADERS over SETTINGS_MAX_FRAME_SIZE", big_headers, E::FrameSize),
        ("4.3 invalid header block", Client::headers(1, true, &[0x80]), E::Compression),
        (
            "4.3 PRIORITY between HEADERS and CONTINUATION",
            cat(&[
                Client::frame(f::HEADERS, 0, 1, &Client::get("/")),
                Client::frame(f::PRIORITY, 0, 1, &[0, 0, 0, 0, 16]),
            ]),
            E::Protocol,
        ),
        ("5.1 idle: RST_STREAM", Client::rst(1, E::Cancel), E::Protocol),
        ("5.1 idle: WINDOW_UPDATE", Client::window_update(1, 100), E::Protocol),
        (
            "5.1 idle: CONTINUATION",
            Client::frame(f::CONTINUATION, f::FLAG_END_HEADERS, 1, &Client::get("/")),
            E::Protocol,
        ),
        ("5.1 idle: DATA", Client::frame(f::DATA, f::FLAG_END_STREAM, 1, b"test"), E::Protocol),
        ("5.1.1 even stream id", Client::headers(2, true, &Client::get("/")), E::Protocol),
        (
            "5.1.1 smaller stream id",
            cat(&[Client::headers(5, true, &Client::get("/")), Client::headers(3, true, &Client::get("/"))]),
            E::Protocol,
        ),
        (
            "5.5 unknown frame inside a header block",
            cat(&[Client::frame(f::HEADERS, 0, 1, &Client::get("/")), Client::frame(0x42, 0, 0, b"x")]),
            E::Protocol,
        ),
        ("6.1 DATA on stream 0", Client::frame(f::DATA, 0, 0, b"x"), E::Protocol),
        (
            "6.1 DATA with too much padding",
            cat(&[open(1), Client::frame(f::DATA, f::FLAG_PADDED, 1, &[6, 0, 0, 0, 0])]),
            E::Protocol,
        ),
        ("6.2 HEADERS on stream 0", Client::headers(0, true, &Client::get("/")), E::Protocol),
        (
            "6.2 HEADERS then another stream's HEADERS",
            cat(&[Client::frame(f::HEADERS, 0, 1, &Client::get("/")), Client::headers(3, true, &Client::get("/"))]),
            E::Protocol,
        ),
        (
            "6.2 HEADERS with too much padding",
            Client::frame(f::HEADERS, f::FLAG_END_HEADERS | f::FLAG_PADDED, 1, &[9, 0x82]),
            E::Protocol,
        ),
        ("6.3 PRIORITY on stream 0", Client::frame(f::PRIORITY, 0, 0, &[0, 0, 0, 1, 16]), E::Protocol),
        ("6.4 RST_STREAM on stream 0", Client::rst(0, E::Cancel), E::Protocol),
        (
            "6.4 RST_STREAM of 3 bytes",
            cat(&[Client::headers(1, true, &Client::get("/")), Client::frame(f::RST_STREAM, 0, 1, &[0, 0, 8])]),
            E::FrameSize,
        ),
        ("6.5 SETTINGS ACK with a payload", Client::frame(f::SETTINGS, f::FLAG_ACK, 0, &[0; 6]), E::FrameSize),
        ("6.5 SETTINGS on a stream", Client::frame(f::SETTINGS, 0, 1, &[]), E::Protocol),
        ("6.5 SETTINGS of 3 bytes", Client::frame(f::SETTINGS, 0, 0, &[0, 3, 0]), E::FrameSize),
        ("6.5.2 ENABLE_PUSH 2", Client::settings(&[(2, 2)]), E::Protocol),
        ("6.5.2 INITIAL_WINDOW_SIZE 2^31", Client::settings(&[(4, 1 << 31)]), E::FlowControl),
        ("6.5.2 MAX_FRAME_SIZE too small", Client::settings(&[(5, 16_383)]), E::Protocol),
        ("6.5.2 MAX_FRAME_SIZE too large", Client::settings(&[(5, 1 << 24)]), E::Protocol),
        ("6.7 PING on a stream", Client::frame(f::PING, 0, 1, &[0; 8]), E::Protocol),
        ("6.7 PING of 6 bytes", Client::frame(f::PING, 0, 0, &[0; 6]), E::FrameSize),
        ("6.8 GOAWAY on a stream", Client::frame(f::GOAWAY, 0, 1, &[0; 8]), E::Protocol),
        ("6.9 WINDOW_UPDATE of 0", Client::window_update(0, 0), E::Protocol),
        ("6.9 WINDOW_UPDATE of 3 bytes", Client::frame(f::WINDOW_UPDATE, 0, 0, &[0, 0, 1]), E::FrameSize),
        (
            "6.9.1 connection window over 2^31-1",
            cat(&[Client::window_update(0, 0x7fff_ffff), Client::window_update(0, 0x7fff_ffff)]),
            E::FlowControl,
        ),
        (
            "6.10 CONTINUATION after END_HEADERS",
            cat(&[
                Client::headers(1, false, &Client::get("/")),
                Client::frame(f::CONTINUATION, f::FLAG_END_HEADERS, 1, &[0x82]),
            ]),
            E::Protocol,
        ),
        (
            "6.10 CONTINUATION on stream 0",
            cat(&[
                Client::frame(f::HEADERS, 0, 1, &Client::get("/")),
                Client::frame(f::CONTINUATION, f::FLAG_END_HEADERS, 0, &[0x82]),
            ]),
            E::Protocol,
        ),
        (
            "8.4 PUSH_PROMISE from a client",
            Client::frame(f::PUSH_PROMISE, f::FLAG_END_HEADERS, 1, &[0, 0, 0, 2, 0x82]),
            E::Protocol,
        ),
        (
            "hpack 4.2 size update above SETTINGS_HEADER_TABLE_SIZE",
            Client::headers(1, true, &[0x3f, 0xe2, 0x1f]),
            E::Compression,
        ),
        ("hpack 6.3 size update after a field", Client::headers(1, true, &[0x82, 0x20]), E::Compression),
        (
            "hpack 5.2 EOS in a Huffman string",
            Client::headers(1, true, &[0x00, 0x84, 0xff, 0xff, 0xff, 0xff, 0x00]),
            E::Compression,
        ),
    ];
    for (name, input, code) in cases {
        run(name, input, Want::Conn(code));
    }
}

#[test]
fn h2spec_stream_errors() {
    let hdr = |fields: &[(&str, &str)]| Client::headers(1, true, &Client::block(fields));
    let base = [(":method", "GET"), (":scheme", "https"), (":path", "/")];
    let with = |extra: (&'static str, &'static str)| {
        let mut v = base.to_vec();
        v.push(extra);
        hdr(&v)
    };
    let post_cl = |cl: &'static str| {
        Client::headers(
            1,
            false,
            &Client::block(&[(":method", "POST"), (":scheme", "https"), (":path", "/"), ("content-length", cl)]),
        )
    };
    let cases: Vec<(&str, Vec<u8>, u32, E)> = vec![
        (
            "5.1 half closed (remote): DATA",
            cat(&[Client::headers(1, true, &Client::get("/")), Client::frame(f::DATA, f::FLAG_END_STREAM, 1, b"test")]),
            1,
            E::StreamClosed,
        ),
        (
            "5.1 closed: DATA after RST_STREAM",
            cat(&[open(1), Client::rst(1, E::Cancel), Client::frame(f::DATA, f::FLAG_END_STREAM, 1, b"test")]),
            1,
            E::StreamClosed,
        ),
        (
            "5.3.1 HEADERS depending on itself",
            Client::frame(
                f::HEADERS,
                f::FLAG_END_HEADERS | f::FLAG_END_STREAM | f::FLAG_PRIORITY,
                1,
                &[&[0, 0, 0, 1, 16][..], &Client::get("/")].concat(),
            ),
            1,
            E::Protocol,
        ),
        ("5.3.1 PRIORITY depending on itself", Client::frame(f::PRIORITY, 0, 1, &[0, 0, 0, 1, 16]), 1, E::Protocol),
        ("6.3 PRIORITY of 4 bytes", Client::frame(f::PRIORITY, 0, 1, &[0, 0, 0, 3]), 1, E::FrameSize),
        ("6.9 stream WINDOW_UPDATE of 0", cat(&[open(1), Client::window_update(1, 0)]), 1, E::Protocol),
        (
            "6.9.1 stream window over 2^31-1",
            cat(&[open(1), Client::window_update(1, 0x7fff_ffff), Client::window_update(1, 0x7fff_ffff)]),
            1,
            E::FlowControl,
        ),
        (
            "8.1 second HEADERS without END_STREAM",
            cat(&[
                open(1),
                Client::frame(f::DATA, 0, 1, b"test"),
                Client::headers(1, false, &Client::block(&[("x-trailer", "1")])),
            ]),
            1,
            E::Protocol,
        ),
        ("8.1.2 uppercase field name", with(("X-Test", "ok")), 1, E::Protocol),
        ("8.1.2.1 unknown pseudo-header", with((":test", "ok")), 1, E::Protocol),
        ("8.1.2.1 response pseudo-header", with((":status", "200")), 1, E::Protocol),
        (
            "8.1.2.1 pseudo-header in trailers",
            cat(&[open(1), Client::headers(1, true, &Client::block(&[(":method", "GET")]))]),
            1,
            E::Protocol,
        ),
        (
            "8.1.2.1 pseudo-header after a regular one",
            hdr(&[(":method", "GET"), ("x", "1"), (":scheme", "https"), (":path", "/")]),
            1,
            E::Protocol,
        ),
        ("8.1.2.2 connection header", with(("connection", "keep-alive")), 1, E::Protocol),
        ("8.1.2.2 TE other than trailers", with(("te", "trailers, deflate")), 1, E::Protocol),
        ("8.1.2.3 empty :path", hdr(&[(":method", "GET"), (":scheme", "https"), (":path", "")]), 1, E::Protocol),
        ("8.1.2.3 no :method", hdr(&[(":scheme", "https"), (":path", "/")]), 1, E::Protocol),
        ("8.1.2.3 no :scheme", hdr(&[(":method", "GET"), (":path", "/")]), 1, E::Protocol),
        ("8.1.2.3 no :path", hdr(&[(":method", "GET"), (":scheme", "https")]), 1, E::Protocol),
        (
            "8.1.2.3 duplicate :method",
            hdr(&[(":method", "GET"), (":method", "GET"), (":scheme", "https"), (":path", "/")]),
            1,
            E::Protocol,
        ),
        (
            "8.1.2.6 content-length and one DATA",
            cat(&[post_cl("1"), Client::frame(f::DATA, f::FLAG_END_STREAM, 1, b"test")]),
            1,
            E::Protocol,
        ),
        (
            "8.1.2.6 content-length and two DATA",
            cat(&[
                post_cl("1"),
                Client::frame(f::DATA, 0, 1, b"test"),
                Client::frame(f::DATA, f::FLAG_END_STREAM, 1, b"test"),
            ]),
            1,
            E::Protocol,
        ),
    ];
    for (name, input, id, code) in cases {
        run(name, input, Want::Stream(id, code));
    }
}

#[test]
fn closed_stream_headers_is_stream_closed_but_a_skipped_id_is_protocol() {
    // 5.1 closed: HEADERS after the response ended.
    let mut s = Server::open();
    s.feed(&Client::headers(3, true, &Client::get("/")));
    assert_eq!(data(&s.out_all(), 3), PAGE);
    s.feed(&Client::headers(3, true, &Client::get("/")));
    assert_eq!(goaway(&s.out_all()), Some(E::StreamClosed as u32));
    // The same HEADERS on id 1, which was skipped, is an unexpected id (5.1.1).
    let mut s = Server::open();
    s.feed(&Client::headers(3, true, &Client::get("/")));
    s.out_all();
    s.feed(&Client::headers(1, true, &Client::get("/")));
    assert_eq!(goaway(&s.out_all()), Some(E::Protocol as u32));
}

#[test]
fn ignored_and_accepted_frames() {
    let mut s = Server::open();
    // 5.5 unknown frame type and unknown flags, 6.5.2 unknown setting, PRIORITY on an idle stream, PING ACK.
    s.feed(&cat(&[
        Client::frame(0x42, 0xff, 0, b"whatever"),
        Client::settings(&[(0x99, 7)]),
        Client::frame(f::PRIORITY, 0, 9, &[0, 0, 0, 1, 16]),
        Client::frame(f::PING, f::FLAG_ACK, 0, &[1; 8]),
        Client::frame(f::PING, 0, 0, &[7; 8]),
        Client::headers(1, true, &Client::get("/")),
    ]));
    let out = s.out_all();
    assert_eq!(goaway(&out), None);
    let acks: Vec<_> = out.iter().filter(|f| f.head.kind == f::PING).collect();
    assert_eq!(acks.len(), 1, "PING ACK is not answered");
    assert_eq!((acks[0].head.flags, &acks[0].payload[..]), (f::FLAG_ACK, &[7u8; 8][..]));
    assert_eq!(data(&out, 1), PAGE, "the request after them is answered");
    // The 9 reserved bit on a stream id is ignored (4.1).
    let mut h = Client::headers(3, true, &Client::get("/"));
    h[5] |= 0x80;
    s.feed(&h);
    assert_eq!(data(&s.out_all(), 3), PAGE);
}

#[test]
fn headers_with_padding_priority_and_continuation() {
    let mut s = Server::open();
    let block = Client::get("/x");
    let (a, b) = block.split_at(7);
    let mut p = vec![3u8];
    p.extend_from_slice(&[0, 0, 0, 0, 200]);
    p.extend_from_slice(a);
    p.extend_from_slice(&[0, 0, 0]);
    s.feed(&Client::frame(f::HEADERS, f::FLAG_PADDED | f::FLAG_PRIORITY | f::FLAG_END_STREAM, 1, &p));
    assert!(s.requests.is_empty());
    s.feed(&Client::frame(f::CONTINUATION, 0, 1, &b[..2]));
    s.feed(&Client::frame(f::CONTINUATION, f::FLAG_END_HEADERS, 1, &b[2..]));
    assert_eq!(s.requests, [1]);
    assert_eq!(data(&s.out_all(), 1), PAGE);
}

#[test]
fn too_many_streams_are_refused() {
    let mut s = Server::open_with(Limits { max_concurrent_streams: 2, ..Limits::default() });
    // Streams wait for window: the peer's initial window is 0, so they stay open.
    s.feed(&Client::settings(&[(4, 0)]));
    s.feed(&cat(&[1u32, 3, 5].map(|id| Client::headers(id, true, &Client::get("/")))));
    let out = s.out_all();
    assert_eq!(s.requests, [1, 3]);
    assert_eq!(rst(&out, 5), Some(E::RefusedStream as u32));
    assert_eq!(goaway(&out), None);
}

#[test]
fn settings_ack_and_goaway_from_the_peer() {
    let mut s = Server::open();
    s.feed(&Client::headers(1, true, &Client::get("/")));
    s.feed(&Client::frame(f::GOAWAY, 0, 0, &[0; 8]));
    assert!(!s.conn.is_closed(), "a stream is still open with its response");
    s.out_all();
    assert!(s.conn.is_closed(), "peer GOAWAY and nothing open: close");
}
