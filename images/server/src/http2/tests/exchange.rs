//! Requests and responses end to end through the engine: heads, bodies in frames, flow control on both levels,
//! RFC 9218 ordering, HEAD, request bodies, drain.

use super::super::frame::{self as f, ErrorCode as E};
use super::*;

const BIG: &[u8] = &[b'x'; 100_000];

include!("../../../benches/data/h2_blocks.rs");

fn big_site(path: &[u8]) -> (u16, Body) {
    match path {
        b"/big" => (200, BIG),
        b"/missing" => (404, b"not found"),
        _ => (200, PAGE),
    }
}

#[test]
fn get_and_head() {
    let mut s = Server::open();
    s.feed(&Client::headers(1, true, &Client::get("/")));
    s.feed(&Client::headers(
        3,
        true,
        &Client::block(&[(":method", "HEAD"), (":scheme", "http"), (":path", "/"), ("host", "h")]),
    ));
    let out = s.out_all();
    let heads: Vec<_> = out.iter().filter(|f| f.head.kind == f::HEADERS).collect();
    assert_eq!(heads.len(), 2);
    assert_eq!(heads[0].payload[0], 0x88, ":status 200 indexed");
    assert_eq!(heads[0].head.flags, f::FLAG_END_HEADERS, "GET: the body ends the stream");
    assert_eq!(heads[1].head.flags, f::FLAG_END_HEADERS | f::FLAG_END_STREAM, "HEAD: no body");
    assert_eq!(data(&out, 1), PAGE);
    assert!(data(&out, 3).is_empty());
    assert_eq!(s.conn.open_streams(), 0);
}

#[test]
fn body_in_frames_within_both_windows() {
    let mut s = Server::open();
    s.site = big_site;
    s.feed(&Client::headers(1, true, &Client::get("/big")));
    let out = s.out_all();
    let frames: Vec<_> = out.iter().filter(|f| f.head.kind == f::DATA).collect();
    assert!(frames.iter().all(|f| f.payload.len() <= 16_384), "peer's max frame size");
    assert_eq!(data(&out, 1).len(), 65_535, "stops at the default window");
    assert!(!s.conn.wants_write());
    s.feed(&Client::window_update(0, 100_000));
    assert!(s.out_all().iter().all(|f| f.head.kind != f::DATA), "the stream window is still closed");
    s.feed(&Client::window_update(1, 100_000));
    let out = s.out_all();
    assert_eq!(data(&out, 1).len(), 100_000 - 65_535);
    assert_eq!(out.last().unwrap().head.flags, f::FLAG_END_STREAM);
}

#[test]
fn budget_bounds_each_write() {
    let mut s = Server::open();
    s.site = big_site;
    s.feed(&Client::settings(&[(4, 1 << 20), (5, 1 << 20)]));
    s.feed(&Client::window_update(0, 1 << 20));
    s.feed(&Client::headers(1, true, &Client::get("/big")));
    s.out(0); // the head and SETTINGS ACK
    let mut total = 0;
    let mut writes = 0;
    while s.conn.wants_write() {
        let mut o = Vec::new();
        let n = s.conn.write(&mut o, 4096);
        assert!(n <= 4096 && n == o.len());
        total += data(&parse(&o), 1).len();
        writes += 1;
    }
    assert_eq!(total, BIG.len());
    assert!(writes >= BIG.len() / 4096);
}

#[test]
fn settings_initial_window_moves_open_streams_even_below_zero() {
    // h2spec 6.9.2: window 1 byte, then 0, then negative, then WINDOW_UPDATE.
    let mut s = Server::open();
    s.feed(&Client::settings(&[(4, 1)]));
    s.feed(&Client::headers(1, true, &Client::get("/")));
    assert_eq!(data(&s.out_all(), 1), &PAGE[..1]);
    s.feed(&Client::settings(&[(4, 0)]));
    s.feed(&Client::window_update(1, 1));
    assert!(data(&s.out_all(), 1).is_empty(), "the window is 1 - 1 - 1 + 1 = 0");
    s.feed(&Client::settings(&[(4, 3)]));
    assert_eq!(data(&s.out_all(), 1), &PAGE[1..4]);
    // 6.5.3: several values in one frame are applied in order.
    let mut s = Server::open();
    s.feed(&Client::settings(&[(4, 100), (4, 1)]));
    s.feed(&Client::headers(1, true, &Client::get("/")));
    assert_eq!(data(&s.out_all(), 1).len(), 1);
}

#[test]
fn rfc9218_urgency_then_incremental_round_robin() {
    let mut s = Server::open();
    s.site = big_site;
    // The connection window holds everything back until all requests are in.
    s.feed(&Client::settings(&[(4, 1 << 20)]));
    let req = |id: u32, prio: &str| {
        let mut f = vec![(":method", "GET"), (":scheme", "https"), (":path", "/big")];
        if !prio.is_empty() {
            f.push(("priority", prio));
        }
        Client::headers(id, true, &Client::block(&f))
    };
    s.feed(&req(1, "u=5"));
    s.feed(&req(3, "u=1"));
    s.feed(&req(5, "u=1, i"));
    s.feed(&req(7, "u=1, i"));
    s.feed(&req(9, ""));
    let first = s.out_all();
    let order =
        |frames: &[Frame]| frames.iter().filter(|f| f.head.kind == f::DATA).map(|f| f.head.stream).collect::<Vec<_>>();
    // 65,535 bytes of connection window: 4 frames of stream 3 (u=1, not incremental) first.
    assert_eq!(order(&first), [3, 3, 3, 3]);
    s.feed(&Client::window_update(0, 200_000));
    let o = order(&s.out_all());
    // Stream 3 finishes, then 5 and 7 alternate (incremental, u=1) while the window lasts.
    let first5 = o.iter().position(|&x| x == 5).unwrap();
    assert!(o[..first5].iter().all(|&x| x == 3));
    assert_eq!(&o[first5..first5 + 4], [5, 7, 5, 7]);
    assert!(!o.contains(&9) && !o.contains(&1), "u=3 and u=5 wait: {o:?}");
    // PRIORITY_UPDATE (RFC 9218 §7.1) moves stream 1 (u=5) ahead of everything.
    s.feed(&Client::frame(f::PRIORITY_UPDATE, 0, 0, &[&1u32.to_be_bytes()[..], b"u=0"].concat()));
    s.feed(&Client::window_update(0, 1_000_000));
    let o = order(&s.out_all());
    let ones = o.iter().take_while(|&&x| x == 1).count();
    assert_eq!(ones, 100_000usize.div_ceil(16_384), "{o:?}");
    let last_inc = o.iter().rposition(|&x| x == 5 || x == 7).unwrap();
    let first9 = o.iter().position(|&x| x == 9).unwrap();
    assert!(first9 > last_inc, "u=3 after the u=1 streams: {o:?}");
    assert_eq!(o.iter().filter(|&&x| x == 1).count(), ones, "stream 1 done first");
}

#[test]
fn request_body_is_discarded_and_windows_given_back() {
    let mut s = Server::open();
    let post =
        Client::headers(1, false, &Client::block(&[(":method", "POST"), (":scheme", "https"), (":path", "/form")]));
    s.feed(&post);
    assert_eq!(s.requests, [1]);
    // The response ends before the body: the next DATA frame is answered with RST_STREAM(NO_ERROR).
    let out = s.out_all();
    assert_eq!(data(&out, 1), PAGE);
    s.feed(&Client::frame(f::DATA, 0, 1, &[0u8; 16_384]));
    let out = s.out_all();
    assert_eq!(rst(&out, 1), Some(E::NoError as u32));
    // A large upload on new streams keeps the connection window open: WINDOW_UPDATE on stream 0.
    let mut s = Server::open();
    s.site = big_site;
    s.feed(&Client::settings(&[(4, 0)])); // hold the responses so the streams stay open
    let mut updates = 0;
    for id in [1u32, 3, 5] {
        s.feed(&Client::headers(
            id,
            false,
            &Client::block(&[(":method", "PUT"), (":scheme", "https"), (":path", "/")]),
        ));
        for _ in 0..3 {
            s.feed(&Client::frame(f::DATA, 0, id, &[0u8; 16_384]));
        }
        updates += s.out_all().iter().filter(|f| f.head.kind == f::WINDOW_UPDATE && f.head.stream == 0).count();
    }
    assert!(updates >= 2, "connection window refilled");
    assert_eq!(goaway(&s.out_all()), None);
    // A stream that overruns its own window is a stream FLOW_CONTROL_ERROR.
    s.feed(&Client::frame(f::DATA, 0, 1, &[0u8; 16_384]));
    s.feed(&Client::frame(f::DATA, 0, 1, &[0u8; 100]));
    assert_eq!(rst(&s.out_all(), 1), Some(E::FlowControl as u32));
}

#[test]
fn trailers_end_the_request() {
    let mut s = Server::open();
    s.feed(&Client::settings(&[(4, 0)]));
    s.feed(&Client::headers(1, false, &Client::block(&[(":method", "POST"), (":scheme", "https"), (":path", "/")])));
    s.feed(&Client::frame(f::DATA, 0, 1, b"abc"));
    s.feed(&Client::headers(1, true, &Client::block(&[("x-sum", "1")])));
    s.feed(&Client::settings(&[(4, 65_535)]));
    let out = s.out_all();
    assert_eq!(data(&out, 1), PAGE);
    assert_eq!(rst(&out, 1), None);
    assert_eq!(s.conn.open_streams(), 0);
}

#[test]
fn large_response_head_uses_continuation() {
    let mut conn_head = Vec::new();
    encode::status(&mut conn_head, 200);
    let long = vec![b'v'; 40_000];
    let mut h2 = Vec::new();
    encode::field(&mut h2, b"x-long", &long);
    let mut c: Conn<Body> = Conn::new(Limits { max_queued: 1 << 20, ..Limits::default() });
    let mut input = Client::preface();
    input.extend(Client::headers(1, true, &Client::get("/")));
    let (used, ev) = c.recv(&input);
    assert!(matches!(ev, Some(Event::Request(_))));
    assert_eq!(used, input.len());
    c.respond(1, &[&conn_head, &h2], None).unwrap();
    let mut o = Vec::new();
    c.write(&mut o, 1 << 20);
    let frames = parse(&o);
    let kinds: Vec<u8> = frames.iter().map(|f| f.head.kind).collect();
    assert_eq!(kinds, [f::SETTINGS, f::SETTINGS, f::HEADERS, f::CONTINUATION, f::CONTINUATION]);
    assert_eq!(frames[2].head.flags, f::FLAG_END_STREAM);
    assert_eq!(frames[4].head.flags, f::FLAG_END_HEADERS);
    let block: Vec<u8> = frames[2..].iter().flat_map(|f| f.payload.clone()).collect();
    assert_eq!(block, [conn_head, h2].concat());
}

#[test]
fn drain_sends_goaway_with_the_last_stream_and_ignores_later_ones() {
    let mut s = Server::open();
    s.site = big_site;
    s.feed(&Client::headers(1, true, &Client::get("/big")));
    s.feed(&Client::headers(3, true, &Client::get("/")));
    s.conn.drain();
    s.feed(&Client::headers(5, true, &Client::get("/")));
    assert_eq!(s.requests, [1, 3], "stream 5 came after the GOAWAY");
    let out = s.out_all();
    let g = out.iter().find(|f| f.head.kind == f::GOAWAY).unwrap();
    assert_eq!(&g.payload[..], &[0, 0, 0, 3, 0, 0, 0, 0], "last stream 3, NO_ERROR");
    assert!(!s.conn.is_closed(), "stream 1 still has body to send");
    s.feed(&Client::window_update(0, 100_000));
    s.feed(&Client::window_update(1, 100_000));
    let out = s.out_all();
    assert_eq!(data(&out, 1).len(), 100_000 - 65_535);
    assert_eq!(data(&out, 3), PAGE);
    assert!(s.conn.is_closed());
}

#[test]
fn respond_to_a_reset_stream_is_refused() {
    let mut c: Conn<Body> = Conn::new(Limits::default());
    let mut input = Client::preface();
    input.extend(Client::headers(1, false, &Client::get("/")));
    let (_, ev) = c.recv(&input);
    assert!(ev.is_some());
    let (_, ev) = c.recv(&Client::rst(1, E::Cancel));
    assert!(ev.is_none());
    assert_eq!(c.respond(1, &[&[0x88]], None), Err(super::super::RespondError::NoStream));
    assert_eq!(c.open_streams(), 0);
}

#[test]
fn idle_memory_after_a_page() {
    // A browser's page (10 requests with its real HPACK blocks), answered, then idle.
    let mut s = Server::open();
    for (i, block) in BROWSER.iter().enumerate() {
        s.feed(&Client::headers(1 + 2 * i as u32, true, block));
        s.out_all();
    }
    assert_eq!(s.requests.len(), 10);
    let busy = s.conn.heap_bytes();
    s.conn.release_idle_memory();
    let idle = s.conn.heap_bytes();
    let fixed = std::mem::size_of::<Conn<Body>>();
    eprintln!(
        "conn struct {fixed} B; heap busy {busy} B, idle {idle} B (HPACK table {} B of entries)",
        s.conn.decoder.table_size()
    );
    assert!(idle < busy);
    // What an idle connection keeps is its fixed state and the HPACK table (bounded by 2 x 4096 bytes + entries).
    assert!(fixed <= 432, "{fixed}");
    assert!(idle <= 2 * 4096 + 128 * 16, "{idle}");
    // h2load's blocks (one indexed field set, then 5-byte repeats) decode as requests too.
    let mut h = Server::open();
    for (i, block) in H2LOAD.iter().enumerate() {
        h.feed(&Client::headers(1 + 2 * i as u32, true, block));
    }
    assert_eq!(h.requests.len(), 10);
    // A fresh connection that has only done the handshake holds almost nothing.
    let mut fresh = Server::open();
    fresh.conn.release_idle_memory();
    assert_eq!(fresh.conn.heap_bytes(), 0);
}

#[test]
fn idle_connections_lend_their_buffers_back() {
    // A connection that answered a page returns its reusable buffers to the pool: what it keeps is the HPACK
    // table alone, and the next connection served works in the returned buffers instead of growing its own.
    let mut pool = Vec::with_capacity(2);
    let mut s = Server::open();
    s.conn.borrow_buffers(&mut pool);
    for (i, block) in BROWSER.iter().enumerate() {
        s.feed(&Client::headers(1 + 2 * i as u32, true, block));
        s.out_all();
    }
    assert!(s.conn.heap_bytes() > s.conn.decoder.heap_bytes());
    assert!(s.conn.return_buffers(&mut pool, 2));
    assert_eq!(s.conn.heap_bytes(), s.conn.decoder.heap_bytes());
    assert_eq!(pool.len(), 1);
    let mut next = Server::open();
    next.out_all();
    next.conn.return_buffers(&mut pool, 2);
    assert_eq!(pool.len(), 2, "a handshake's SETTINGS queue joins the pool");
    next.conn.borrow_buffers(&mut pool);
    assert_eq!(pool.len(), 1);
    let lent = next.conn.heap_bytes();
    next.feed(&Client::headers(1, true, BROWSER[0]));
    next.out_all();
    assert_eq!(next.requests.len(), 1);
    // A pool already holding `keep` sets frees what comes back instead of growing.
    assert!(next.conn.return_buffers(&mut pool, 1));
    assert_eq!(pool.len(), 1);
    assert!(lent > 0);
    assert_eq!(next.conn.heap_bytes(), next.conn.decoder.heap_bytes());
}
