//! Issue 38, item 9, against the real binary: a flood of header blocks that overflow SETTINGS_MAX_HEADER_LIST_SIZE
//! (a 4 KB HPACK entry, then a 16 KiB frame of one-byte references to it) costs the worker no more CPU per byte
//! received than a flood of plain GETs of the same volume, and each flooding connection is sent away by the reset
//! meter (GOAWAY ENHANCE_YOUR_CALM, then the close).
//!
//! CPU is the worker thread's own (utime + stime of `worker-0` in /proc, one worker, no background encoder), and
//! the two floods are compared with each other, never with a clock: the ratio holds on a slow or a busy machine.
//! The bound is 2×: the overflow flood's work per byte is counting (a table lookup and an addition per index) plus
//! one 431 per 16 KiB, well under a GET's per-request work for its ~40 bytes, so it measures about a tenth of the
//! plain flood; 2× leaves room for the 10 ms granularity of the counters and for scheduling noise, and stays far
//! below the copying it replaces (every index of the 4 KB entry copied: tens of times the plain flood).

mod common;

use std::io::Write;
use std::net::TcpStream;

use common::h2::*;
use common::{tempdir, Server};
use hyperstatic_server::http2::Limits;

/// Bytes each flood uploads (counted as the server took them: whole blocks it answered).
const VOLUME: usize = 16 << 20;
/// A flooding connection gives up after this many 431s (the reset meter allows 256).
const BLOCKS_PER_CONNECTION: usize = 300;
/// Plain GETs in flight at once (under SETTINGS_MAX_CONCURRENT_STREAMS).
const BATCH: u32 = 100;

/// CPU ticks (utime + stime) of the server's thread named `name`. A thread names itself once it runs, which can
/// be after the server said it listens: wait for the name (bounded), rather than fail on a thread not named yet.
fn thread_ticks(pid: u32, name: &str) -> u64 {
    for _ in 0..2_000 {
        if let Some(ticks) = named_thread_ticks(pid, name) {
            return ticks;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("no thread {name} in {pid} after 20 s");
}

fn named_thread_ticks(pid: u32, name: &str) -> Option<u64> {
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let dir = t.unwrap().path();
        if std::fs::read_to_string(dir.join("comm")).unwrap_or_default().trim() != name {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap();
        // Fields after the parenthesised command: state is field 3, utime 14, stime 15.
        let rest: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        return Some(rest[11].parse::<u64>().unwrap() + rest[12].parse::<u64>().unwrap());
    }
    None
}

fn overflow_frame(stream: u32) -> Vec<u8> {
    let mut block = request_block("/");
    // A literal with incremental indexing: name "x", a 4000-byte value (4000 = 127 + 0x21 + 0x1e·128).
    block.extend_from_slice(&[0x40, 0x01, b'x', 0x7f, 0xa1, 0x1e]);
    block.extend(std::iter::repeat_n(b'v', 4000));
    // Then one-byte references to it (index 62) up to a full 16 KiB frame.
    block.resize(16_384, 0x80 | 62);
    frame(HEADERS, END_STREAM | END_HEADERS, stream, &block)
}

/// Frames read from a connection, in order, with what was read past the last one kept for the next.
struct Frames {
    c: TcpStream,
    buf: Vec<u8>,
}

impl Frames {
    /// The next frame as (type, payload), or None at the close (or a reset).
    fn next(&mut self) -> Option<(u8, Vec<u8>)> {
        use std::io::Read;
        let mut chunk = [0u8; 65536];
        loop {
            if self.buf.len() >= 9 {
                let len = (self.buf[0] as usize) << 16 | (self.buf[1] as usize) << 8 | self.buf[2] as usize;
                if self.buf.len() >= 9 + len {
                    let f = (self.buf[3], self.buf[9..9 + len].to_vec());
                    self.buf.drain(..9 + len);
                    return Some(f);
                }
            }
            match self.c.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Err(e) => panic!("no frame and no close: {e}"),
            }
        }
    }
}

/// One flooding connection: 431 after 431 until the server sends it away. Returns (the number of blocks the
/// server answered, the bytes of those blocks, the GOAWAY's code if one came before BLOCKS_PER_CONNECTION 431s).
fn overflow_connection(s: &Server) -> (usize, usize, Option<u32>) {
    let mut f = Frames { c: h2c(s, &[]), buf: Vec::new() };
    let (mut answered, mut bytes) = (0, 0);
    for i in 0..BLOCKS_PER_CONNECTION as u32 {
        let block = overflow_frame(1 + 2 * i);
        // The server may have closed already; its GOAWAY is then read below.
        let _ = f.c.write_all(&block);
        loop {
            match f.next() {
                Some((HEADERS, head)) => {
                    assert_eq!(&head[..5], &[0x08, 0x03, b'4', b'3', b'1'], ":status 431");
                    answered += 1;
                    bytes += block.len();
                    break;
                }
                Some((GOAWAY, p)) => {
                    let code = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
                    assert!(f.next().is_none(), "the close follows the GOAWAY");
                    return (answered, bytes, Some(code));
                }
                // Our SETTINGS' ACK and the like.
                Some(_) => {}
                None => return (answered, bytes, None),
            }
        }
    }
    (answered, bytes, None)
}

/// Plain GETs in batches, each batch read to its last response; returns the bytes sent.
fn get_flood(s: &Server, volume: usize) -> usize {
    let mut c = h2c(s, &[]);
    // The responses' DATA would soon spend the connection window of 65,535: open it to the maximum.
    c.write_all(&frame(WINDOW_UPDATE, 0, 0, &(0x7fff_ffffu32 - 65_535).to_be_bytes())).unwrap();
    let mut sent = 0;
    let mut next = 1u32;
    while sent < volume {
        let mut batch = Vec::new();
        for _ in 0..BATCH {
            batch.extend(frame(HEADERS, END_STREAM | END_HEADERS, next, &request_block("/")));
            next += 2;
        }
        c.write_all(&batch).unwrap();
        sent += batch.len();
        let mut done = 0;
        let last = read_until(&mut c, |k, f, id, _| {
            if id != 0 && f & END_STREAM != 0 && (k == DATA || k == HEADERS) {
                done += 1;
            }
            k == GOAWAY || done == BATCH
        });
        assert_eq!(last.map(|(k, _)| k), Some(DATA), "every GET answered, no GOAWAY");
    }
    sent
}

#[test]
fn an_hpack_overflow_flood_costs_no_more_cpu_per_byte_than_plain_gets() {
    let site = tempdir("h2-hpack-flood");
    std::fs::write(site.join("index.html"), "home").unwrap();
    let flags = ["--h2c", "--workers", "1", "--compress=false", "--max-connection-age", "1h"];
    let s = Server::start(&site, &[&flags[..], &["--max-requests-per-connection", "100000000"]].concat());
    let pid = s.child.id();

    let before = thread_ticks(pid, "worker-0");
    let plain_bytes = get_flood(&s, VOLUME);
    let plain_ticks = thread_ticks(pid, "worker-0") - before;

    let before = thread_ticks(pid, "worker-0");
    let mut flood_bytes = 0;
    let mut outcomes = Vec::new();
    while flood_bytes < VOLUME {
        let (answered, bytes, code) = overflow_connection(&s);
        flood_bytes += bytes;
        outcomes.push((answered, code));
    }
    let flood_ticks = thread_ticks(pid, "worker-0") - before;

    let per_byte = |ticks: u64, bytes: usize| ticks as f64 * 1e7 / bytes as f64; // ns per byte (100 ticks/s)
    let (plain, flood) = (per_byte(plain_ticks, plain_bytes), per_byte(flood_ticks.max(1), flood_bytes));
    eprintln!(
        "plain GETs: {plain_bytes} B, {plain_ticks} ticks, {plain:.2} ns/B; overflow flood: {flood_bytes} B over {} \
         connections, {flood_ticks} ticks, {flood:.2} ns/B; ratio {:.3}",
        outcomes.len(),
        flood / plain
    );
    // The plain flood must have cost enough to measure against.
    assert!(plain_ticks >= 20, "the plain flood cost {plain_ticks} ticks: too little to compare with");
    for (answered, code) in &outcomes {
        assert_eq!(*code, Some(ENHANCE_YOUR_CALM), "a flooding connection is sent away by the meter");
        // The reset meter allows max_resets refusals; the next one is answered, then the connection ends.
        let allowed = Limits::default().max_resets as usize + 1;
        assert!(*answered <= allowed, "{answered} 431s on one connection: the reset meter allows {allowed}");
    }
    assert!(flood <= 2.0 * plain, "overflow flood {flood:.2} ns/B against plain GETs {plain:.2} ns/B");
    // The server is fine afterwards.
    assert_eq!(s.get("/", &[]).status, 200);
}
