//! Hundreds of slow connections trickling a request head must not stop a normal client from being served,
//! and each of them is answered 408 and closed once the header timeout has passed.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn slowloris_connections_do_not_block_others_and_time_out() {
    let site = make_site("slowloris");
    let s = Server::start(&site, &["--header-timeout", "2s"]);
    const SLOW: usize = 300;
    let mut slow: Vec<TcpStream> = (0..SLOW)
        .map(|_| {
            let c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
            c.set_nonblocking(true).unwrap();
            c
        })
        .collect();
    for c in slow.iter_mut() {
        c.write_all(b"GET /100.html HTTP/1.1\r\nHost: t\r\n").unwrap();
    }
    let started = Instant::now();
    // A normal client is served promptly while the slow ones trickle.
    let normal = std::thread::spawn({
        let port = s.port;
        move || {
            let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut worst = Duration::ZERO;
            for _ in 0..50 {
                let t = Instant::now();
                c.write_all(b"GET /100.html HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while parse_responses(&got, false).0.is_empty() {
                    let n = c.read(&mut buf).unwrap();
                    assert!(n > 0);
                    got.extend_from_slice(&buf[..n]);
                }
                assert_eq!(parse_responses(&got, false).0[0].status, 200);
                worst = worst.max(t.elapsed());
                std::thread::sleep(Duration::from_millis(10));
            }
            worst
        }
    });
    let mut answers: Vec<Option<Vec<u8>>> = vec![None; SLOW];
    let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); SLOW];
    let mut buf = [0u8; 4096];
    while answers.iter().any(Option::is_none) && started.elapsed() < Duration::from_secs(15) {
        for (i, c) in slow.iter_mut().enumerate() {
            if answers[i].is_some() {
                continue;
            }
            // Keep trickling: a byte of a header every round never completes the head.
            let _ = c.write(b"X");
            loop {
                match c.read(&mut buf) {
                    Ok(0) => {
                        answers[i] = Some(std::mem::take(&mut bufs[i]));
                        break;
                    }
                    Ok(n) => bufs[i].extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        answers[i] = Some(std::mem::take(&mut bufs[i]));
                        break;
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let worst = normal.join().unwrap();
    assert!(worst < Duration::from_secs(1), "normal client waited {worst:?}");
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(1800), "slow connections closed too early: {elapsed:?}");
    let mut got408 = 0;
    for a in answers.iter() {
        let a = a.as_ref().expect("every slow connection is closed by the header timeout");
        let (rs, _) = parse_responses(a, false);
        if rs.first().map(|r| r.status) == Some(408) {
            got408 += 1;
        }
    }
    assert_eq!(got408, SLOW, "every slow connection gets a 408");
    assert!(s.metric("hyperstatic_requests_total{code=\"408\"}") >= SLOW as f64);
}
