//! Bodies of a few KiB and more, around the sizes where the output path changes (copied into the batch buffer
//! or written from the table), must arrive byte-exact: also behind a slow reader (EAGAIN mid-body), pipelined
//! with small responses, for HEAD, ranges and compressed variants.

mod common;

use common::*;
use std::io::{Read, Write};
use std::time::Duration;

/// Deterministic pseudo-random bytes (incompressible).
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Pseudo-random hex text: compressible to about half, so its compressed variants are large too.
fn hex_text(n: usize, seed: u64) -> Vec<u8> {
    noise(n, seed).iter().map(|b| b"0123456789abcdef"[(b & 15) as usize]).collect()
}

fn site(name: &str) -> Site {
    let d = make_site(name);
    std::fs::write(d.join("k8.bin"), noise(8192, 1)).unwrap();
    std::fs::write(d.join("k4.bin"), noise(4096, 2)).unwrap();
    std::fs::write(d.join("k4m.bin"), noise(4095, 3)).unwrap();
    std::fs::write(d.join("m200.bin"), noise(200_000, 4)).unwrap();
    std::fs::write(d.join("text.css"), hex_text(100_000, 5)).unwrap();
    d
}

#[test]
fn bodies_around_the_threshold_arrive_byte_exact() {
    let site = site("sf-exact");
    let s = Server::start(&site, &[]);
    for (p, want) in [
        ("/k8.bin", noise(8192, 1)),
        ("/k4.bin", noise(4096, 2)),
        ("/k4m.bin", noise(4095, 3)),
        ("/m200.bin", noise(200_000, 4)),
    ] {
        let r = s.get(p, &[]);
        assert_eq!(r.status, 200, "{p}");
        assert_eq!(r.header("Content-Length"), Some(want.len().to_string().as_str()), "{p}");
        assert!(r.body == want, "{p}: body differs");
    }
    // Keep-alive: several large responses one after another on one connection.
    let mut c = s.connect();
    let mut got = Vec::new();
    for _ in 0..5 {
        c.write_all(b"GET /k8.bin HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let mut buf = vec![0u8; 65536];
        loop {
            let n = c.read(&mut buf).unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
            let (rs, _) = parse_responses(&got, false);
            if rs.len() == 1 {
                assert!(rs[0].body == noise(8192, 1));
                got.clear();
                break;
            }
        }
    }
}

#[test]
fn slow_reader_gets_every_large_body_byte_exact() {
    let site = site("sf-slow");
    let s = Server::start(&site, &[]);
    let c = socket2_small_rcvbuf(&s);
    let mut c = c;
    let mut req = Vec::new();
    for i in 0..20 {
        req.extend_from_slice(if i % 2 == 0 {
            b"GET /m200.bin HTTP/1.1\r\nHost: t\r\n\r\n"
        } else {
            b"GET /k8.bin HTTP/1.1\r\nHost: t\r\n\r\n"
        });
        req.extend_from_slice(b"GET /100.html HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    req.extend_from_slice(b"GET /k4.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    c.write_all(&req).unwrap();
    // Let the server fill the socket and block mid-body, then drain slowly in small reads.
    std::thread::sleep(Duration::from_millis(300));
    let mut bytes = Vec::new();
    let mut buf = [0u8; 7000];
    let mut reads = 0;
    loop {
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read: {e}"),
        }
        reads += 1;
        if reads % 50 == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let (rs, used) = parse_responses(&bytes, false);
    assert_eq!(used, bytes.len());
    assert_eq!(rs.len(), 41);
    let (m200, k8) = (noise(200_000, 4), noise(8192, 1));
    for i in 0..20 {
        let want = if i % 2 == 0 { &m200 } else { &k8 };
        assert!(rs[2 * i].body == *want, "large response {i} differs");
        assert_eq!(rs[2 * i + 1].body, vec![b'a'; 100], "small response {i}");
    }
    assert!(rs[40].body == noise(4096, 2));
}

/// A connection with a small receive buffer, so the server sees EAGAIN in the middle of bodies.
fn socket2_small_rcvbuf(s: &Server) -> std::net::TcpStream {
    use std::os::fd::FromRawFd;
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let sz: libc::c_int = 4096;
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &sz as *const _ as *const libc::c_void, 4);
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: s.port.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes([127, 0, 0, 1]) },
            sin_zero: [0; 8],
        };
        let r = libc::connect(
            fd,
            &addr as *const _ as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as u32,
        );
        assert_eq!(r, 0, "connect");
        let t = std::net::TcpStream::from_raw_fd(fd);
        t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        t
    }
}

#[test]
fn pipelined_mix_of_small_and_large_in_order_and_head_has_no_body() {
    let site = site("sf-pipe");
    let s = Server::start(&site, &[]);
    let mut req = Vec::new();
    let order = [
        "/100.html",
        "/k8.bin",
        "/100.html",
        "/100.html",
        "/m200.bin",
        "/k4m.bin",
        "/k4.bin",
        "/index.html",
        "/k8.bin",
    ];
    for _ in 0..3 {
        for p in order {
            req.extend_from_slice(format!("GET {p} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        }
    }
    req.extend_from_slice(b"GET /100.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let bytes = s.raw(&req);
    let (rs, used) = parse_responses(&bytes, false);
    assert_eq!(used, bytes.len());
    assert_eq!(rs.len(), 3 * order.len() + 1);
    for (i, r) in rs.iter().enumerate() {
        let want = match order.get(i % order.len()).filter(|_| i < 3 * order.len()).copied().unwrap_or("/100.html") {
            "/100.html" => vec![b'a'; 100],
            "/k8.bin" => noise(8192, 1),
            "/m200.bin" => noise(200_000, 4),
            "/k4m.bin" => noise(4095, 3),
            "/k4.bin" => noise(4096, 2),
            "/index.html" => b"<!doctype html><title>home</title><h1>home</h1>\n".to_vec(),
            _ => unreachable!(),
        };
        assert!(r.status == 200 && r.body == want, "response {i} differs");
    }
    // HEAD of a large file: headers only, then the next pipelined response follows immediately.
    let bytes = s.raw(b"HEAD /m200.bin HTTP/1.1\r\nHost: t\r\n\r\nHEAD /k8.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /100.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let (heads, used) = parse_responses(&bytes, true);
    assert_eq!(heads.len(), 3);
    assert_eq!(heads[0].header("Content-Length"), Some("200000"));
    assert_eq!(heads[1].header("Content-Length"), Some("8192"));
    let tail = &bytes[bytes.len() - 100..];
    assert_eq!(tail, &[b'a'; 100][..]);
    assert_eq!(used + 100, bytes.len(), "only the GET carries a body");
}

#[test]
fn ranges_on_large_bodies_and_compressed_variants_are_byte_exact() {
    let site = site("sf-range");
    let s = Server::start(&site, &[]);
    s.wait_encoded();
    let m = noise(200_000, 4);
    for (spec, a, b) in [
        ("0-9999", 0, 9999),
        ("1000-1009", 1000, 1009),
        ("123457-", 123_457, 199_999),
        ("-5000", 195_000, 199_999),
        ("4096-8191", 4096, 8191),
        ("199999-", 199_999, 199_999),
    ] {
        let r = s.get("/m200.bin", &[("Range", &format!("bytes={spec}"))]);
        assert_eq!(r.status, 206, "{spec}");
        assert_eq!(r.header("Content-Range"), Some(format!("bytes {a}-{b}/200000").as_str()));
        assert!(r.body == m[a..=b], "range {spec} differs");
    }
    let r = s.get("/k8.bin", &[("Range", "bytes=100-8191")]);
    assert!(r.status == 206 && r.body == noise(8192, 1)[100..]);
    // Compressed variants of a large file: full and ranged, byte-exact.
    let text = hex_text(100_000, 5);
    let gz = s.get("/text.css", &[("Accept-Encoding", "gzip")]);
    assert_eq!(gz.header("Content-Encoding"), Some("gzip"));
    assert!(gz.body.len() > 8192);
    let mut dec = Vec::new();
    flate2::read::GzDecoder::new(&gz.body[..]).read_to_end(&mut dec).unwrap();
    assert!(dec == text, "gzip variant decodes to the file");
    let br = s.get("/text.css", &[("Accept-Encoding", "br")]);
    assert_eq!(br.header("Content-Encoding"), Some("br"));
    let mut dec = Vec::new();
    brotli::Decompressor::new(&br.body[..], 4096).read_to_end(&mut dec).unwrap();
    assert!(dec == text, "br variant decodes to the file");
    let r = s.get("/text.css", &[("Accept-Encoding", "gzip"), ("Range", "bytes=10-6009")]);
    assert_eq!(r.status, 206);
    assert_eq!(r.header("Content-Encoding"), Some("gzip"));
    assert!(r.body == gz.body[10..6010], "range of the gzip variant");
    let r = s.get("/text.css", &[("Range", "bytes=50000-")]);
    assert!(r.status == 206 && r.body == text[50_000..], "range of the identity variant");
}
