//! The attack defences, each shown twice: the attack trips it with the server's limits, and the same traffic
//! goes through when that one limit is lifted (so each test fails without its defence).

use super::super::frame::{self as f, ErrorCode as E};
use super::*;

const CALM: Option<u32> = Some(E::EnhanceYourCalm as u32);

fn lifted(l: Limits) -> Limits {
    l
}

/// Runs `attack` against a fresh connection with `limits`; returns the GOAWAY code, if any.
fn attack(limits: Limits, attack: &dyn Fn(&mut Server)) -> Option<u32> {
    let mut s = Server::open_with(limits);
    attack(&mut s);
    s.out_all();
    s.goaway
}

#[test]
fn rapid_reset_cve_2023_44487() {
    let run = |s: &mut Server| {
        // Open and cancel streams before their responses went out, as fast as possible.
        for i in 0..400u32 {
            let id = 1 + 2 * i;
            s.feed(&[Client::headers(id, true, &Client::get("/")), Client::rst(id, E::Cancel)].concat());
        }
    };
    let d = Limits::default();
    assert_eq!(attack(Limits { max_resets: 256, reset_window: 512, ..d.clone() }, &run), CALM);
    assert_eq!(attack(lifted(Limits { max_resets: u32::MAX, ..d.clone() }), &run), None);
    // A browser cancelling part of a page (30 of 200 streams) again and again is fine.
    let browser = |s: &mut Server| {
        for round in 0..10u32 {
            for i in 0..30u32 {
                let id = 1 + 2 * (round * 200 + i);
                s.feed(&Client::headers(id, true, &Client::get("/")));
                s.feed(&Client::rst(id, E::Cancel));
            }
            for i in 30..200u32 {
                let id = 1 + 2 * (round * 200 + i);
                s.feed(&Client::headers(id, true, &Client::get("/")));
                s.out_all();
            }
        }
    };
    assert_eq!(attack(d, &browser), None);
}

#[test]
fn refused_streams_count_as_resets() {
    // Opening far past SETTINGS_MAX_CONCURRENT_STREAMS while holding streams open gets REFUSED_STREAM each
    // time, and a peer that keeps doing it is sent away.
    let run = |s: &mut Server| {
        s.feed(&Client::settings(&[(4, 0)]));
        for i in 0..2000u32 {
            s.feed(&Client::headers(1 + 2 * i, true, &Client::get("/")));
        }
    };
    let d = Limits::default();
    assert_eq!(attack(d.clone(), &run), CALM);
    assert_eq!(attack(Limits { max_resets: u32::MAX, ..d }, &run), None);
}

#[test]
fn continuation_flood() {
    let frames = |n: usize, size: usize| {
        move |s: &mut Server| {
            s.feed(&Client::frame(f::HEADERS, 0, 1, &Client::get("/")));
            for _ in 0..n {
                // Each a harmless literal field, so the block stays valid HPACK.
                let mut b = Vec::new();
                for _ in 0..size / 8 {
                    b.extend_from_slice(&[0x00, 0x01, b'x', 0x04, b'a', b'b', b'c', b'd']);
                }
                s.feed(&Client::frame(f::CONTINUATION, 0, 1, &b));
            }
        }
    };
    let d = Limits::default();
    // Many small frames: the frame count trips.
    assert_eq!(attack(d.clone(), &frames(100, 8)), CALM);
    assert_eq!(attack(Limits { max_block_frames: u32::MAX, ..d.clone() }, &frames(100, 8)), None);
    // Few big frames: the byte bound trips.
    assert_eq!(attack(d.clone(), &frames(4, 16_000)), CALM);
    assert_eq!(attack(Limits { max_header_block: u32::MAX, ..d.clone() }, &frames(4, 16_000)), None);
    // Empty CONTINUATIONs never end the block either.
    assert_eq!(attack(d, &frames(100, 0)), CALM);
}

#[test]
fn hpack_bomb_and_oversized_header_lists_get_431() {
    // One 4 KB value added to the dynamic table, then 100 one-byte references: 400 KB from 4 KB.
    let mut block = Client::get("/");
    block.extend_from_slice(&[0x40, 0x01, b'x', 0x7f, 0xa1, 0x1e]);
    block.extend(std::iter::repeat_n(b'v', 4000));
    block.extend(std::iter::repeat_n(0xbe, 100));
    let mut s = Server::open();
    s.feed(&Client::headers(1, true, &block));
    let out = s.out_all();
    assert!(s.requests.is_empty(), "no request reaches the core");
    let h = out.iter().find(|f| f.head.kind == f::HEADERS).unwrap();
    assert_eq!(h.payload, [0x08, 0x03, b'4', b'3', b'1']);
    assert_eq!(goaway(&out), None, "the HPACK state is intact: the connection goes on");
    s.feed(&Client::headers(3, true, &[&Client::get("/")[..], &[0xbe]].concat()));
    assert_eq!(s.requests, [3], "the table entry from the bomb is still there");
    // Without the bound the bomb would reach the core.
    let mut s = Server::open_with(Limits { max_header_list: u32::MAX, ..Limits::default() });
    s.feed(&Client::headers(1, true, &block));
    assert_eq!(s.requests, [1]);
}

/// A request whose header list overflows: a 4 KB entry, then a frame's worth of one-byte references to it.
fn overflowing_block() -> Vec<u8> {
    let mut block = Client::get("/");
    block.extend_from_slice(&[0x40, 0x01, b'x', 0x7f, 0xa1, 0x1e]);
    block.extend(std::iter::repeat_n(b'v', 4000));
    block.extend(std::iter::repeat_n(0xbe, 12_000));
    block
}

#[test]
fn header_list_overflows_are_charged_to_the_reset_meter() {
    // 431 after 431, each read by the peer: once the reset budget is spent the connection is sent away.
    let run = |s: &mut Server| {
        for i in 0..300u32 {
            s.feed(&Client::headers(1 + 2 * i, true, &overflowing_block()));
            let out = s.out_all();
            assert!(s.goaway.is_some() || out.iter().any(|f| f.head.kind == f::HEADERS), "a 431 for each");
        }
    };
    let d = Limits::default();
    assert_eq!(attack(d.clone(), &run), CALM);
    assert_eq!(attack(Limits { max_resets: u32::MAX, ..d.clone() }, &run), None);
    // The 431 block the engine sends is the encoder's.
    let mut head = Vec::new();
    encode::status(&mut head, 431);
    assert_eq!(head, super::super::frames::STATUS_431);
    // Table names copied into new entries after the overflow (2 bytes of input for 4 KB each): the block is
    // not decoded to its end, the connection is.
    let mut amplified = vec![0x40, 0x7f, 0xa1, 0x1e];
    amplified.extend(std::iter::repeat_n(b'n', 4000));
    amplified.extend_from_slice(&[0x00, 0xbe, 0xbe, 0xbe, 0xbe]);
    for _ in 0..4000 {
        amplified.extend_from_slice(&[0x7e, 0x00]);
    }
    let amplify = |s: &mut Server| s.feed(&Client::headers(1, true, &amplified));
    assert_eq!(attack(d, &amplify), CALM);
}

#[test]
fn streams_ignored_after_our_goaway_are_charged_to_the_reset_meter() {
    let run = |limits: Limits| {
        let mut s = Server::open_with(limits);
        s.conn.drain();
        for i in 0..300u32 {
            s.feed(&Client::headers(1 + 2 * i, true, &Client::get("/")));
        }
        let out = s.out_all();
        let goaways: Vec<u32> = out.iter().filter(|f| f.head.kind == f::GOAWAY).map(|f| f.code()).collect();
        (s.requests.len(), goaways)
    };
    let d = Limits::default();
    assert_eq!(run(d.clone()), (0, vec![E::NoError as u32, E::EnhanceYourCalm as u32]));
    assert_eq!(run(Limits { max_resets: u32::MAX, ..d }), (0, vec![E::NoError as u32]));
}

#[test]
fn ping_and_settings_floods_cve_2019_9512_9515() {
    let pings = |n: usize| {
        move |s: &mut Server| {
            let one = Client::frame(f::PING, 0, 0, &[1; 8]);
            s.feed(&one.repeat(n));
        }
    };
    let settings = |n: usize| move |s: &mut Server| s.feed(&Client::settings(&[(4, 65_535)]).repeat(n));
    let d = Limits::default();
    // A peer that does not read: answers pile up to max_queued, then it is sent away.
    let unread = Limits { max_overhead_frames: u32::MAX, ..d.clone() };
    assert_eq!(attack(unread.clone(), &pings(10_000)), CALM);
    assert_eq!(attack(unread.clone(), &settings(10_000)), CALM);
    assert_eq!(attack(Limits { max_queued: u32::MAX, ..unread }, &pings(10_000)), None);
    // A peer that reads but floods anyway: the overhead budget between requests.
    let reading = |s: &mut Server| {
        let one = Client::frame(f::PING, 0, 0, &[1; 8]);
        for _ in 0..2000 {
            s.feed(&one);
            s.out_all();
        }
    };
    assert_eq!(attack(d.clone(), &reading), CALM);
    assert_eq!(attack(Limits { max_overhead_frames: u32::MAX, ..d }, &reading), None);
}

#[test]
fn empty_frame_flood_cve_2019_9518() {
    let run = |s: &mut Server| {
        s.feed(&Client::headers(
            1,
            false,
            &Client::block(&[(":method", "POST"), (":scheme", "https"), (":path", "/")]),
        ));
        s.feed(&Client::settings(&[(4, 0)])); // keep the response (and so the stream) open
        for _ in 0..5000 {
            s.feed(&Client::frame(f::DATA, 0, 1, &[]));
        }
    };
    let d = Limits::default();
    assert_eq!(attack(d.clone(), &run), CALM);
    assert_eq!(attack(Limits { max_overhead_frames: u32::MAX, ..d }, &run), None);
}

#[test]
fn zero_window_and_slow_readers_cve_2019_9511_9517() {
    // The peer opens the maximum of streams with a zero window and never reads: what we hold is bounded by
    // the stream table (body handles, not bytes) and by max_queued for heads.
    let stall = |s: &mut Server| {
        s.feed(&Client::settings(&[(4, 0)]));
        for round in 0..50u32 {
            for i in 0..128u32 {
                let id = 1 + 2 * (round * 128 + i);
                s.feed(&Client::headers(id, true, &Client::get("/")));
                s.feed(&Client::rst(id, E::Cancel));
            }
        }
    };
    let d = Limits::default();
    // Heads for streams that are reset stay queued (the peer never reads): max_queued ends it.
    let no_reset_limit = Limits { max_resets: u32::MAX, ..d.clone() };
    assert_eq!(attack(no_reset_limit.clone(), &stall), CALM);
    assert_eq!(attack(Limits { max_queued: u32::MAX, ..no_reset_limit }, &stall), None);
    // Streams stalled on a zero window hold no bytes of body; the table is full and further streams refused.
    let mut s = Server::open();
    s.feed(&Client::settings(&[(4, 0)]));
    for i in 0..129u32 {
        s.feed(&Client::headers(1 + 2 * i, true, &Client::get("/")));
    }
    assert_eq!(s.conn.open_streams(), 128);
    assert_eq!(rst(&s.out_all(), 257), Some(E::RefusedStream as u32));
}
