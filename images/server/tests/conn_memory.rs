//! Issue 38 item 10 against the real binary: established connections are bounded by memory, not only by count.
//! One worker in a real 96 MiB memory cgroup (the issue's case, OOM-killed after 10,663 idle HTTPS/1.1
//! connections that each made one request) takes more idle TLS connections than that, and HTTP/2 ones that
//! filled their HPACK table: it charges each what it holds against its connection budget (an eighth of the limit,
//! site/conn_budget.rs), closes the oldest idle ones past it, stays alive and under the limit, and answers new
//! clients byte for byte.

mod common;

use common::flood::{flood_setup, FloodSetup};
use common::h2::{frame, read_until, DATA, END_HEADERS, END_STREAM, HEADERS, PREFACE, SETTINGS};
use common::tls::*;
use common::*;
use hyperstatic_server::http2::hpack::encode;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
/// The issue's pod.
const LIMIT: u64 = 96 * MIB;
/// Idle HTTPS/1.1 connections opened one after the other, each after one request: past the issue's failure point.
const IDLE_TLS: usize = 11_500;
/// HTTP/2 connections over TLS that each filled their HPACK table with one request (4 entries of 1,020 bytes by
/// RFC 7541's count: 4,080 of the 4,096 allowed), then stay idle.
const H2_FILLED: usize = 400;
/// The worker's connection budget: an eighth of the limit, one worker.
const BUDGET: u64 = LIMIT / 8;
/// An idle HTTPS connection holds at least rustls's ~7.6 KiB (README "Memory per idle connection"), so at most
/// this many can be open within the budget, whatever the server's own estimates.
const HELD_MAX: u64 = BUDGET / (7 * 1024);
/// What the group may grow by above its usage at rest: the budget, plus 8 MiB for allocator and kernel slack.
const BOUND: u64 = BUDGET + 8 * MIB;

/// `connect`, with failures returned (the server may have died) instead of panicking.
fn try_connect(cfg: &Arc<ClientConfig>, port: u16) -> std::io::Result<Tls> {
    let tcp = TcpStream::connect(("127.0.0.1", port))?;
    tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
    tcp.set_nodelay(true)?;
    let conn = ClientConnection::new(cfg.clone(), ServerName::try_from("localhost").unwrap()).unwrap();
    let mut s = StreamOwned::new(conn, tcp);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(s)
}

/// A GET of /100.html on an HTTP/2 connection over TLS (the preface and SETTINGS first on stream 1); `fill` adds
/// four fields of 1,020 bytes each with incremental indexing, filling the server's HPACK table. Returns the body.
fn h2_get(t: &mut Tls, stream: u32, fill: bool) -> Vec<u8> {
    let mut block = Vec::new();
    for (n, v) in [(":method", "GET"), (":scheme", "https"), (":path", "/100.html"), (":authority", "localhost")] {
        encode::field(&mut block, n.as_bytes(), v.as_bytes());
    }
    for i in 0..if fill { 4 } else { 0 } {
        block.push(0x40); // literal with incremental indexing, new name (RFC 7541 §6.2.1)
        encode::string(&mut block, format!("x-fill-{i}").as_bytes());
        encode::string(&mut block, &[b'v'; 980]);
    }
    let mut out = Vec::new();
    if stream == 1 {
        out.extend_from_slice(PREFACE);
        out.extend(frame(SETTINGS, 0, 0, &[]));
        out.extend(frame(SETTINGS, 1, 0, &[]));
    }
    out.extend(frame(HEADERS, END_STREAM | END_HEADERS, stream, &block));
    t.write_all(&out).unwrap();
    t.flush().unwrap();
    let mut body = Vec::new();
    let end = read_until(t, |kind, flags, id, payload| {
        if id == stream && kind == DATA {
            body.extend_from_slice(payload);
        }
        id == stream && flags & END_STREAM != 0 && (kind == DATA || kind == HEADERS)
    });
    assert!(end.is_some(), "the HTTP/2 connection closed before its response ended");
    body
}

fn h2_config(ca: &std::path::Path) -> Arc<ClientConfig> {
    let mut c = (*client_config(ca, &[&rustls::version::TLS13])).clone();
    c.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(c)
}

/// Reads until the server closes the connection: true if it did (EOF or reset), false if it is still open
/// after the 10 s read timeout.
fn closed_by_server(mut c: TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn idle_tls_and_h2_connections_past_the_issues_oom_point_stay_within_the_connection_budget() {
    const TEST: &str = "idle_tls_and_h2_connections_past_the_issues_oom_point_stay_within_the_connection_budget";
    let Some(FloodSetup { group, site, _certs, ca, crt, key }) = flood_setup("connmem", TEST, LIMIT) else {
        return;
    };
    // One worker, the memory limit taken from the group, everything else at its default (16,384 connections).
    let args = [&["--workers", "1"][..], &tls_args(&crt, &key)].concat();
    let mut s = Server::start_with(&site, &args, &mut |cmd| group.join(cmd));
    let hundred = vec![b'a'; 100];
    let h1 = client_config(&ca, &[&rustls::version::TLS13]);
    let h2 = h2_config(&ca);
    // New clients over plain HTTP/1.1, HTTPS/1.1 and HTTP/2 over TLS, each answered byte for byte.
    let served = |s: &Server| {
        assert_eq!(s.get("/100.html", &[]).body, hundred);
        assert_eq!(get(&mut connect(&h1, s.https), "/100.html").body, hundred);
        assert_eq!(h2_get(&mut connect(&h2, s.https), 1, false), hundred);
    };
    served(&s);
    let base = group.usage();
    let started = Instant::now();
    let mut held = Vec::with_capacity(IDLE_TLS);
    let mut last_h1 = None;
    for i in 0..IDLE_TLS {
        let mut t = try_connect(&h1, s.https).unwrap_or_else(|e| {
            let alive = s.child.try_wait().unwrap().is_none();
            panic!("connection {i}: {e}; server alive: {alive}, OOM kills in the group: {}", group.oom_kills())
        });
        assert_eq!(get(&mut t, "/100.html").body, hundred, "connection {i}");
        if i + 1 == IDLE_TLS {
            last_h1 = Some(t);
        } else {
            // The client's TLS state goes; the socket, and the server's side of the connection, stay.
            held.push(t.sock);
        }
        if i % 2500 == 2499 {
            served(&s);
        }
    }
    let mut filled = Vec::with_capacity(H2_FILLED);
    for _ in 0..H2_FILLED {
        let mut t = connect(&h2, s.https);
        assert_eq!(h2_get(&mut t, 1, true), hundred);
        filled.push(t);
    }
    served(&s);
    let elapsed = started.elapsed();
    let peak = group.peak();
    let total = s.metric("hyperstatic_connections_total");
    let open = s.metric("hyperstatic_connections_open");
    let evicted = s.metric("hyperstatic_connections_evicted_total{reason=\"memory\"}");
    let charged = s.metric("hyperstatic_connection_memory_bytes");
    let _ = std::io::stderr().write_all(
        format!(
            "{IDLE_TLS} idle HTTPS/1.1 + {H2_FILLED} HPACK-filled h2 connections in {LIMIT}, one worker, {elapsed:?}: \
             group at rest {base}, peak {peak} (+{}), bound +{BOUND}; {total} accepted, {open} open, {evicted} \
             evicted for memory, {charged} bytes charged of {BUDGET}\n",
            peak.saturating_sub(base)
        )
        .as_bytes(),
    );
    assert!(s.child.try_wait().unwrap().is_none(), "the server is alive");
    assert_eq!(group.oom_kills(), 0, "no OOM kill");
    assert_eq!(group.limit_hits(), 0, "the group never reached its limit");
    assert!(peak <= base + BOUND, "the group peaked at {peak}, {} over its {base} at rest", peak - base);
    assert_eq!(s.metric("hyperstatic_memory_limit_bytes"), LIMIT as f64, "the limit comes from the group");
    assert_eq!(s.metric("hyperstatic_connection_memory_budget_bytes"), BUDGET as f64);
    assert!(charged > 0.0 && charged <= BUDGET as f64, "{charged} bytes charged, budget {BUDGET}");
    assert!(open <= HELD_MAX as f64, "{open} connections open, at most {HELD_MAX} fit the budget");
    let flood = (IDLE_TLS + H2_FILLED) as f64;
    assert!(evicted >= flood - HELD_MAX as f64, "{evicted} evicted for memory of the {flood} kept open by the client");
    assert_eq!(s.metric("hyperstatic_connections_refused_total{reason=\"memory\"}"), 0.0, "idle ones made room");
    assert_eq!(s.metric("hyperstatic_connections_evicted_total{reason=\"count\"}"), 0.0, "below the count cap");
    // Oldest idle first: the first connections are gone, the newest idle HTTPS/1.1 one and the HTTP/2 ones that
    // came after it still answer on their own connections.
    assert!(closed_by_server(held.swap_remove(0)), "the oldest idle connection was closed");
    assert_eq!(get(last_h1.as_mut().unwrap(), "/100.html").body, hundred, "the newest idle HTTPS/1.1 connection");
    assert_eq!(h2_get(filled.last_mut().unwrap(), 3, false), hundred, "the newest HTTP/2 connection");
    drop(held);
    drop(filled);
    drop(s);
}

/// A new connection is refused only when nothing idle is left to close: HTTPS slow readers (each holding unsent
/// output and rustls's queued records, none idle) fill a small budget (`--memory-limit 4MiB`: 512 KiB, the
/// floor), the next connection is closed right after accept, and once the readers are gone a new client is served.
#[test]
fn a_new_connection_is_refused_only_when_busy_connections_hold_the_whole_budget() {
    let site = make_site("connmem-busy");
    // Big enough that the kernel's socket buffers never take it all: the rest waits in the server.
    std::fs::write(site.join("huge.bin"), vec![b'h'; 16 << 20]).unwrap();
    let certs = tempdir("connmem-busy-certs");
    let ca = make_ca(&certs);
    let (crt, key) = make_leaf(&certs, "leaf", 30);
    let (crt, key) = (crt.display().to_string(), key.display().to_string());
    let args = [&["--workers", "1", "--memory-limit", "4MiB"][..], &tls_args(&crt, &key)].concat();
    let s = Server::start(&site, &args);
    assert_eq!(s.metric("hyperstatic_connection_memory_budget_bytes"), (512 * 1024) as f64);
    let cfg = client_config(&ca, &[&rustls::version::TLS13]);
    let mut readers = Vec::new();
    let mut refused_at = None;
    for k in 0..64 {
        let Ok(mut t) = try_connect(&cfg, s.https) else {
            refused_at = Some(k);
            break;
        };
        t.write_all(b"GET /huge.bin HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        t.flush().unwrap();
        // The worker wrote until the socket was full within the same event, before it accepts the next one.
        wait_for("the response to start", || {
            let mut n: libc::c_int = 0;
            // SAFETY: FIONREAD into an int on our own socket.
            unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&t.sock), libc::FIONREAD, &mut n) };
            n > 0
        });
        readers.push(t);
    }
    let refused_at = refused_at.expect("a connection refused within 64 slow readers");
    let charged = s.metric("hyperstatic_connection_memory_bytes");
    let _ = std::io::stderr()
        .write_all(format!("{refused_at} HTTPS slow readers held, {charged} bytes charged of 524288\n").as_bytes());
    // Each reader holds at least rustls's 64 KiB of queued records: about 7 fit in 512 KiB, none was idle.
    assert!((4..=8).contains(&refused_at), "refused after {refused_at} slow readers");
    assert!(s.metric("hyperstatic_connections_refused_total{reason=\"memory\"}") >= 1.0);
    assert_eq!(s.metric("hyperstatic_connections_evicted_total{reason=\"memory\"}"), 0.0, "nothing idle to evict");
    drop(readers);
    wait_for("the readers' connections closed", || s.metric("hyperstatic_connections_open") == 0.0);
    assert_eq!(get(&mut connect(&cfg, s.https), "/100.html").body, vec![b'a'; 100]);
    assert_eq!(s.get("/100.html", &[]).body, vec![b'a'; 100]);
}
