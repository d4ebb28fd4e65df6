//! SIGTERM: /readyz fails at once, serving continues for the drain delay, then every response says
//! `Connection: close`, connections finish, the process exits 0 — and clients see zero failed requests.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn sigterm_drains_with_zero_failed_requests() {
    let site = make_site("drain");
    let mut s = Server::start(&site, &["--drain-delay", "1s"]);
    assert_eq!(s.admin_get("/readyz").status, 200);
    // `routed` plays the Service: while true, clients may open new connections.
    let routed = Arc::new(AtomicBool::new(true));
    let ok = Arc::new(AtomicU64::new(0));
    let closes = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let port = s.port;
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let (routed, ok, closes, failures) = (routed.clone(), ok.clone(), closes.clone(), failures.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                'conn: while routed.load(Ordering::Relaxed) {
                    let mut c = match TcpStream::connect(("127.0.0.1", port)) {
                        Ok(c) => c,
                        Err(e) => {
                            failures.lock().unwrap().push(format!("connect: {e}"));
                            return;
                        }
                    };
                    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    loop {
                        if let Err(e) = c.write_all(b"GET /100.html HTTP/1.1\r\nHost: t\r\n\r\n") {
                            failures.lock().unwrap().push(format!("write: {e}"));
                            return;
                        }
                        let mut got = Vec::new();
                        let r = loop {
                            match c.read(&mut buf) {
                                Ok(0) => {
                                    failures.lock().unwrap().push("closed without a response".into());
                                    return;
                                }
                                Ok(n) => got.extend_from_slice(&buf[..n]),
                                Err(e) => {
                                    failures.lock().unwrap().push(format!("read: {e}"));
                                    return;
                                }
                            }
                            let (mut rs, _) = parse_responses(&got, false);
                            if !rs.is_empty() {
                                break rs.remove(0);
                            }
                        };
                        if r.status != 200 || r.body.len() != 100 {
                            failures.lock().unwrap().push(format!("status {}", r.status));
                            return;
                        }
                        ok.fetch_add(1, Ordering::Relaxed);
                        if r.header("Connection") == Some("close") {
                            closes.fetch_add(1, Ordering::Relaxed);
                            continue 'conn;
                        }
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let before = ok.load(Ordering::Relaxed);
    assert!(before > 0);
    let t0 = Instant::now();
    s.signal(libc::SIGTERM);
    // Readiness fails at once.
    let deadline = Instant::now() + Duration::from_millis(500);
    loop {
        if s.admin_get("/readyz").status == 503 {
            break;
        }
        assert!(Instant::now() < deadline, "/readyz still 200 after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    routed.store(false, Ordering::Relaxed); // endpoints removed
                                            // Still serving during the drain delay.
    std::thread::sleep(Duration::from_millis(500));
    let during = ok.load(Ordering::Relaxed);
    assert!(during > before, "requests continue during the drain delay");
    let code = s.wait_exit(Duration::from_secs(10));
    let took = t0.elapsed();
    for c in clients {
        c.join().unwrap();
    }
    let failures = failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "failed requests: {failures:?}");
    assert_eq!(code, Some(0), "clean exit");
    assert!(took >= Duration::from_secs(1), "exited before the drain delay: {took:?}");
    assert!(closes.load(Ordering::Relaxed) >= 8, "every connection was told to close");
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err(), "nothing listens after exit");
}

/// POST on the admin port; the response.
fn admin_post(s: &Server, path: &str) -> Response {
    let mut c = TcpStream::connect(("127.0.0.1", s.admin)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n").as_bytes()).unwrap();
    parse_responses(&read_to_close(&mut c), false).0.remove(0)
}

/// With --drain-hold the drain outlasts the drain delay until POST /drain/release (what the operator sends a pool
/// pod once no EndpointSlice lists it), then accepting stops after the drain delay and the process exits 0. A
/// release before the SIGTERM is refused, not remembered.
#[test]
fn a_held_drain_serves_until_released() {
    let site = make_site("drain-hold");
    let mut s = Server::start(&site, &["--drain-delay", "1s", "--drain-hold", "120s"]);
    assert_eq!(s.admin_get("/readyz").status, 200);
    assert_eq!(admin_post(&s, "/drain/release").status, 409, "not draining yet");
    s.signal(libc::SIGTERM);
    wait_for("/readyz fails", || s.admin_get("/readyz").status == 503);
    // Three drain delays later a new connection is still served: the hold, not the delay, bounds the drain.
    std::thread::sleep(Duration::from_secs(3));
    let r = s.get("/100.html", &[]);
    assert_eq!((r.status, r.body.len()), (200, 100), "served while the drain is held");
    assert!(s.wait_exit(Duration::from_millis(10)).is_none(), "still running while held");
    let t0 = Instant::now();
    let released = admin_post(&s, "/drain/release");
    assert_eq!((released.status, released.text()), (200, "released\n".to_string()));
    let code = s.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0), "clean exit after the release");
    wait_for("the release logged", || s.log_contains("drain released"));
    assert!(t0.elapsed() >= Duration::from_secs(1), "the drain delay runs from the release: {:?}", t0.elapsed());
    assert!(TcpStream::connect(("127.0.0.1", s.port)).is_err(), "nothing listens after exit");
}

/// Without a release the hold bounds the drain; without --drain-hold there is nothing to release.
#[test]
fn an_unreleased_hold_ends_at_its_bound() {
    let site = make_site("drain-hold-bound");
    let mut s = Server::start(&site, &["--drain-delay", "1s", "--drain-hold", "2s"]);
    let t0 = Instant::now();
    s.signal(libc::SIGTERM);
    assert_eq!(s.wait_exit(Duration::from_secs(30)), Some(0));
    assert!(t0.elapsed() >= Duration::from_secs(2), "exited before the hold: {:?}", t0.elapsed());
    wait_for("the unreleased end logged", || s.log_contains("drain hold over without a release"));

    let plain = Server::start(&site, &["--drain-delay", "1s"]);
    assert_eq!(admin_post(&plain, "/drain/release").status, 404);
}
