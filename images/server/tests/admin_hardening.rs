//! The admin port must keep answering kubelet's probes whatever its other clients do: connections that trickle
//! a request a byte at a time (slowloris) or send nothing, many clients at once, a client that stops reading a
//! large response, malformed requests. A probe here is what kubelet does: a new connection, one GET, the
//! answer read to the close, all within the probe's timeoutSeconds (1 s for the startup probe, see
//! controllers/staticsite/deployment.go).

mod common;

use common::*;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The shortest timeoutSeconds of the server's probes (the startup probe).
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

const DROPPED_DEADLINE: &str = "hyperstatic_admin_connections_dropped_total{reason=\"deadline\"}";
const DROPPED_OVERFLOW: &str = "hyperstatic_admin_connections_dropped_total{reason=\"overflow\"}";

fn admin_addr(s: &Server) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], s.admin))
}

/// One kubelet-style probe. Ok(status) if the whole exchange finished within PROBE_TIMEOUT.
fn probe(addr: SocketAddr, path: &str) -> Result<u16, String> {
    let start = Instant::now();
    let deadline = start + PROBE_TIMEOUT;
    // Socket timeouts of zero mean "none": keep at least a millisecond.
    let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    let mut c = TcpStream::connect_timeout(&addr, left()).map_err(|e| format!("connect: {e}"))?;
    c.set_write_timeout(Some(left())).unwrap();
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: probe\r\nUser-Agent: kube-probe/1.31\r\n\r\n").as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        c.set_read_timeout(Some(left())).unwrap();
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("read after {:?} ({} bytes): {e}", start.elapsed(), got.len())),
        }
    }
    if start.elapsed() > PROBE_TIMEOUT {
        return Err(format!("answered after {:?}", start.elapsed()));
    }
    let (rs, _) = parse_responses(&got, false);
    rs.first().map(|r| r.status).ok_or_else(|| format!("no response in {:?}", String::from_utf8_lossy(&got)))
}

/// Probes /healthz and /readyz in turn every 100 ms for `period`; returns how many probes ran and the failures.
fn probe_for(addr: SocketAddr, period: Duration) -> (usize, Vec<String>) {
    let start = Instant::now();
    let mut n = 0;
    let mut failures = Vec::new();
    while start.elapsed() < period {
        let path = if n % 2 == 0 { "/healthz" } else { "/readyz" };
        let at = start.elapsed();
        match probe(addr, path) {
            Ok(200) => {}
            Ok(status) => failures.push(format!("{path} at {at:.2?}: status {status}")),
            Err(e) => failures.push(format!("{path} at {at:.2?}: {e}")),
        }
        n += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    (n, failures)
}

/// Polls `f` until it holds, for at most `within`.
fn eventually(within: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A slowloris attack on a background thread until dropped: `dribblers` connections each send one more byte of a
/// request head that never ends every 200 ms, `silent` ones send nothing. Like a real attacker it reconnects
/// whatever the server closes, so the pressure lasts as long as the attack.
struct Attack {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<usize>>,
}

impl Attack {
    fn start(addr: SocketAddr, dribblers: usize, silent: usize) -> Attack {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let stop = stop.clone();
            move || {
                const HEAD: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: slow\r\nX-Slow: ";
                let open = || {
                    let c = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
                    c.set_nonblocking(true).ok()?;
                    Some(c)
                };
                // (connection, bytes sent so far, dribbles)
                let mut conns: Vec<(Option<TcpStream>, usize, bool)> =
                    (0..dribblers + silent).map(|i| (open(), 0, i < dribblers)).collect();
                let mut closed_by_server = 0;
                let mut buf = [0u8; 1024];
                while !stop.load(Ordering::Relaxed) {
                    for (conn, sent, dribble) in conns.iter_mut() {
                        let Some(c) = conn else {
                            (*conn, *sent) = (open(), 0);
                            continue;
                        };
                        let mut alive = true;
                        if *dribble {
                            let byte = HEAD.get(*sent).copied().unwrap_or(b'a');
                            match c.write(&[byte]) {
                                Ok(_) => *sent += 1,
                                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                                Err(_) => alive = false,
                            }
                        }
                        loop {
                            match c.read(&mut buf) {
                                Ok(0) => alive = false,
                                Ok(_) => continue, // a 408 before the close
                                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                                Err(_) => alive = false,
                            }
                            break;
                        }
                        if !alive {
                            closed_by_server += 1;
                            (*conn, *sent) = (open(), 0);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                closed_by_server
            }
        });
        Attack { stop, thread: Some(thread) }
    }

    /// Stops the attack; returns how many of its connections the server closed.
    fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Attack {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn probes_keep_succeeding_during_a_slowloris_on_the_admin_port() {
    let site = make_site("admin-slowloris");
    let s = Server::start(&site, &[]);
    let addr = admin_addr(&s);

    // One connection is enough to take a blocking admin loop down.
    let attack = Attack::start(addr, 1, 0);
    let (n, failures) = probe_for(addr, Duration::from_secs(3));
    assert!(
        failures.is_empty(),
        "{} of {n} probes failed beside one slowloris connection: {failures:#?}",
        failures.len()
    );
    // The trickling connection was closed by its deadline (2 s after accept), not left to trickle forever.
    assert!(eventually(Duration::from_secs(5), || s.metric(DROPPED_DEADLINE) >= 1.0), "no deadline drop counted");
    assert!(attack.finish() >= 1, "the server never closed the trickling connection");

    // Twice as many connections as the admin listener holds (128): 64 trickling, 192 silent, all reconnecting.
    let attack = Attack::start(addr, 64, 192);
    let (n, failures) = probe_for(addr, Duration::from_secs(5));
    assert!(
        failures.is_empty(),
        "{} of {n} probes failed beside 256 slowloris connections: {failures:#?}",
        failures.len()
    );
    assert!(
        eventually(Duration::from_secs(2), || s.metric(DROPPED_OVERFLOW) >= 1.0),
        "a full admin listener must have evicted some of them"
    );
    drop(attack);

    // The data port never noticed.
    assert_eq!(s.get("/100.html", &[]).status, 200);
}

#[test]
fn a_trickled_request_is_closed_at_its_deadline_with_408() {
    let site = make_site("admin-deadline");
    let s = Server::start(&site, &[]);
    // Taken before connecting: the server's clock starts at its accept, which comes later.
    let start = Instant::now();
    let mut c = TcpStream::connect(admin_addr(&s)).unwrap();
    c.set_nodelay(true).unwrap();
    c.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
    // A new header line every 100 ms: each read makes progress, none completes the head.
    c.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    let closed_at = loop {
        assert!(start.elapsed() < Duration::from_secs(7), "still open after {:?}", start.elapsed());
        match c.read(&mut buf) {
            Ok(0) => break start.elapsed(),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if got.is_empty() {
                    // After the server has closed, a write may fail; the read that follows sees the close.
                    let _ = c.write_all(b"X-Trickle: 1\r\n");
                }
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break start.elapsed(),
            Err(e) => panic!("read: {e}"),
        }
    };
    assert!(closed_at >= Duration::from_secs(2), "closed before its deadline: {closed_at:?}");
    assert!(closed_at < Duration::from_secs(5), "closed long after its 2 s deadline: {closed_at:?}");
    // A byte trickled in just before the close can turn it into a reset that discards the 408 on our side; when
    // the answer did arrive, it is a 408.
    if !got.is_empty() {
        let (rs, _) = parse_responses(&got, false);
        assert_eq!(rs[0].status, 408, "{:?}", String::from_utf8_lossy(&got));
        assert_eq!(rs[0].header("Connection"), Some("close"));
    }
    assert!(eventually(Duration::from_secs(2), || s.metric(DROPPED_DEADLINE) >= 1.0));
    assert_eq!(s.metric(DROPPED_OVERFLOW), 0.0);
}

#[test]
fn many_concurrent_clients_all_get_answers() {
    let site = make_site("admin-many");
    let s = Server::start(&site, &[]);
    const CLIENTS: usize = 200;
    let barrier = Arc::new(Barrier::new(CLIENTS));
    let admin = s.admin;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let path = ["/healthz", "/readyz", "/metrics", "/content"][i % 4];
                barrier.wait();
                let mut c = TcpStream::connect(("127.0.0.1", admin)).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                c.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
                let got = read_to_close(&mut c);
                let (rs, _) = parse_responses(&got, false);
                assert_eq!(rs.len(), 1, "{path}: {:?}", String::from_utf8_lossy(&got));
                (path, rs[0].status, rs[0].body.len())
            })
        })
        .collect();
    for c in clients {
        let (path, status, len) = c.join().unwrap();
        assert_eq!(status, 200, "{path}");
        assert!(len > 0, "{path}: empty body");
    }
    // None of them was a victim: each sent its request at once.
    assert_eq!(s.metric(DROPPED_OVERFLOW), 0.0);
    assert_eq!(s.metric(DROPPED_DEADLINE), 0.0);
}

/// A site whose /content list is about 6 MB: more than loopback's socket buffers take in (about 4 MB), so a
/// client that does not read it leaves the server with unsent bytes.
fn site_with_a_long_content_list(name: &str) -> (Site, usize) {
    let d = make_site(name);
    let dir: std::path::PathBuf = ['a', 'b', 'c', 'd'].iter().map(|c| c.to_string().repeat(250)).collect();
    std::fs::create_dir_all(d.join(&dir)).unwrap();
    const FILES: usize = 5000;
    for i in 0..FILES {
        std::fs::write(d.join(&dir).join(format!("{i:05}-{}", "f".repeat(240))), b"x").unwrap();
    }
    (d, FILES + 9)
}

#[test]
fn a_client_that_stops_reading_does_not_block_probes() {
    let (site, files) = site_with_a_long_content_list("admin-nonreader");
    let s = Server::start(&site, &[]);
    let addr = admin_addr(&s);
    // Two clients ask for the list and never read a byte of it.
    let stalled: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(b"GET /content HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
            c
        })
        .collect();
    let (n, failures) = probe_for(addr, Duration::from_secs(3));
    assert!(
        failures.is_empty(),
        "{} of {n} probes failed beside clients that stopped reading: {failures:#?}",
        failures.len()
    );
    // A reader of the same list gets all of it meanwhile.
    let list = s.admin_get("/content");
    assert_eq!(list.status, 200);
    assert_eq!(list.text().lines().count(), files);
    // The stalled responses are abandoned at their deadline (5 s to send a response), freeing their memory.
    assert!(
        eventually(Duration::from_secs(8), || s.metric(DROPPED_DEADLINE) >= 2.0),
        "stalled responses never dropped: {}",
        s.metric(DROPPED_DEADLINE)
    );
    drop(stalled);
}

#[test]
fn malformed_and_fragmented_requests() {
    let site = make_site("admin-malformed");
    let s = Server::start(&site, &[]);
    let addr = admin_addr(&s);
    let exchange = |req: &[u8]| -> Vec<u8> {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(req).unwrap();
        read_to_close(&mut c)
    };

    // Well-behaved clients get the same bytes as ever.
    assert_eq!(
        String::from_utf8(exchange(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")).unwrap(),
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\nCache-Control: no-store\r\nConnection: close\r\n\r\nok\n"
    );
    assert_eq!(
        String::from_utf8(exchange(b"HEAD /readyz HTTP/1.1\r\nHost: t\r\n\r\n")).unwrap(),
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 6\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    );
    let r = parse_responses(&exchange(b"POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"), false).0;
    assert_eq!((r[0].status, r[0].text().as_str()), (405, "method not allowed\n"));

    // Malformed: 400, then the connection closes (read_to_close returns).
    for req in [&b"garbage\r\n\r\n"[..], b"GET /healthz HTTP/1.1\r\nHost: t\r\nBad Header\r\n\r\n"] {
        let r = parse_responses(&exchange(req), false).0;
        assert_eq!((r[0].status, r[0].text().as_str()), (400, "bad request\n"), "{:?}", String::from_utf8_lossy(req));
    }
    // A head that has not ended within 16 KiB is a 400 too, as soon as the buffer is full. Exactly 16 KiB, so that
    // the server has read everything sent when it closes (unread bytes would turn the close into a reset).
    let mut huge = b"GET /healthz HTTP/1.1\r\nHost: t\r\n".to_vec();
    while huge.len() < 16 * 1024 {
        huge.extend_from_slice(b"X-Filler: 0123456789012345678901234567890123456789\r\n");
    }
    huge.truncate(16 * 1024);
    let r = parse_responses(&exchange(&huge), false).0;
    assert_eq!((r[0].status, r[0].text().as_str()), (400, "bad request\n"));

    // A request split over several packets is fine as long as it completes in time.
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_nodelay(true).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for part in [&b"GET /hea"[..], b"lthz HTTP/1.1\r\n", b"Host: t\r\n", b"\r\n"] {
        c.write_all(part).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = parse_responses(&read_to_close(&mut c), false).0;
    assert_eq!(r[0].status, 200);

    // Clients that leave half-way are forgotten; the listener carries on.
    for _ in 0..3 {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET /heal").unwrap();
    }
    assert_eq!(probe(addr, "/healthz"), Ok(200));
    let m = s.admin_get("/metrics").text();
    assert!(m.contains(&format!("{DROPPED_DEADLINE} 0\n")) && m.contains(&format!("{DROPPED_OVERFLOW} 0\n")), "{m}");
}
