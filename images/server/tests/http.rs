//! HTTP behaviour of the real binary over raw loopback sockets: serving, pipelining, keep-alive,
//! conditionals, ranges, encodings, and every 4xx the server promises.

mod common;

use common::*;
use std::io::{Read, Write};
use std::time::Duration;

#[test]
fn get_and_head_serve_files_with_precomputed_headers() {
    let site = make_site("basic");
    let s = Server::start(&site, &[]);
    let r = s.get("/100.html", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, vec![b'a'; 100]);
    assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("Content-Length"), Some("100"));
    assert_eq!(r.header("Accept-Ranges"), Some("bytes"));
    assert_eq!(r.header("Cache-Control"), Some("no-cache"));
    assert!(r.header("ETag").unwrap().starts_with('"'));
    assert!(r.header("Last-Modified").unwrap().ends_with(" GMT"));
    assert!(r.header("Date").unwrap().ends_with(" GMT"));
    assert_eq!(r.header("Connection"), Some("close"));
    assert_eq!(r.header("Vary"), None, "a file with one encoding does not vary");

    let bytes = s.raw(b"HEAD /100.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let (rs, used) = parse_responses(&bytes, true);
    assert_eq!(rs.len(), 1);
    assert_eq!(used, bytes.len(), "HEAD carries no body");
    assert_eq!(rs[0].header("Content-Length"), Some("100"));

    assert_eq!(s.get("/", &[]).text(), "<!doctype html><title>home</title><h1>home</h1>\n");
    assert_eq!(s.get("/docs/", &[]).text(), "<h1>docs</h1>\n");
    assert_eq!(s.get("/100.html?cache=bust&x=1", &[]).status, 200, "query strings are ignored for lookup");
    assert_eq!(s.get("/caf%C3%A9.txt", &[]).text(), "accent\n");
    let r = s.get("/docs?x=1", &[]);
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Location"), Some("/docs/?x=1"));
    assert_eq!(s.get("/nodir/", &[]).status, 404, "no directory listings");
    assert_eq!(s.get("/missing", &[]).status, 404);
}

#[test]
fn pipelining_100_requests_in_one_write_get_100_ordered_responses() {
    let site = make_site("pipe");
    let s = Server::start(&site, &[]);
    let mut req = Vec::new();
    for i in 0..100 {
        let path = match i % 4 {
            0 => "/100.html".to_string(),
            1 => "/docs/page.html".to_string(),
            2 => format!("/missing-{i}"),
            _ => "/".to_string(),
        };
        req.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: t\r\nX-Seq: {i}\r\n\r\n").as_bytes());
    }
    let mut c = s.connect();
    c.write_all(&req).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    let mut rs = Vec::new();
    while rs.len() < 100 {
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed after {} responses", rs.len());
        got.extend_from_slice(&buf[..n]);
        rs = parse_responses(&got, false).0;
    }
    for (i, r) in rs.iter().enumerate() {
        match i % 4 {
            0 => assert_eq!(r.body.len(), 100, "response {i}"),
            1 => assert_eq!(r.text(), "<h1>page</h1>\n", "response {i}"),
            2 => assert_eq!(r.status, 404, "response {i}"),
            _ => assert!(r.text().contains("home"), "response {i}"),
        }
        assert_eq!(r.header("Connection"), None, "keep-alive stays open");
    }
    // The connection is still usable afterwards.
    c.write_all(b"GET /100.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let rest = read_to_close(&mut c);
    assert_eq!(parse_responses(&rest, false).0[0].status, 200);
}

#[test]
fn pipelined_large_bodies_arrive_complete_and_in_order() {
    let site = make_site("pipe-large");
    let s = Server::start(&site, &["--max-memory-file-size", "1MiB"]);
    let mut req = Vec::new();
    for _ in 0..3 {
        req.extend_from_slice(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /css/site.css HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    req.extend_from_slice(b"GET /100.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let bytes = s.raw(&req);
    let (rs, used) = parse_responses(&bytes, false);
    assert_eq!(used, bytes.len());
    assert_eq!(rs.len(), 7);
    let expect: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    for i in 0..3 {
        assert_eq!(rs[2 * i].body, expect, "big body {i} (sendfile from disk)");
        assert_eq!(rs[2 * i + 1].body.len(), 4500);
    }
    assert_eq!(rs[6].body.len(), 100);
}

#[test]
fn http10_and_absolute_form() {
    let site = make_site("h10");
    let s = Server::start(&site, &[]);
    // 1.0 without keep-alive: closed after one response.
    let bytes = s.raw(b"GET /100.html HTTP/1.0\r\n\r\n");
    let (rs, _) = parse_responses(&bytes, false);
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0].header("Connection"), Some("close"));
    // 1.0 with keep-alive: stays open and says so.
    let mut c = s.connect();
    c.write_all(b"GET /100.html HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").unwrap();
    let mut buf = [0u8; 4096];
    let n = c.read(&mut buf).unwrap();
    let (rs, _) = parse_responses(&buf[..n], false);
    assert_eq!(rs[0].header("Connection"), Some("keep-alive"));
    c.write_all(b"GET /index.html HTTP/1.0\r\n\r\n").unwrap();
    let rest = read_to_close(&mut c);
    assert_eq!(parse_responses(&rest, false).0.len(), 1);
    // absolute-form
    let bytes = s
        .raw(b"GET http://example.test/docs/page.html?q=1 HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n");
    assert_eq!(parse_responses(&bytes, false).0[0].text(), "<h1>page</h1>\n");
}

#[test]
fn conditional_requests_get_304_with_the_same_validators() {
    let site = make_site("cond");
    let s = Server::start(&site, &[]);
    s.wait_encoded();
    let full = s.get("/css/site.css", &[("Accept-Encoding", "br")]);
    let etag = full.header("ETag").unwrap().to_string();
    let lm = full.header("Last-Modified").unwrap().to_string();
    let r = s.get("/css/site.css", &[("Accept-Encoding", "br"), ("If-None-Match", &etag)]);
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    assert_eq!(r.header("ETag"), Some(etag.as_str()));
    assert_eq!(r.header("Vary"), Some("Accept-Encoding"));
    assert_eq!(r.header("Cache-Control"), full.header("Cache-Control"));
    assert!(r.header("Date").is_some());
    // weak comparison, lists, star
    assert_eq!(
        s.get("/css/site.css", &[("Accept-Encoding", "br"), ("If-None-Match", &format!("\"x\", W/{etag}"))]).status,
        304
    );
    assert_eq!(s.get("/css/site.css", &[("If-None-Match", "*")]).status, 304);
    // The identity ETag differs: a br ETag does not validate the identity variant.
    assert_eq!(s.get("/css/site.css", &[("If-None-Match", &etag)]).status, 200);
    // If-Modified-Since
    assert_eq!(s.get("/css/site.css", &[("If-Modified-Since", &lm)]).status, 304);
    assert_eq!(s.get("/css/site.css", &[("If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT")]).status, 200);
    // If-None-Match wins over If-Modified-Since
    assert_eq!(s.get("/css/site.css", &[("If-None-Match", "\"other\""), ("If-Modified-Since", &lm)]).status, 200);
    // If-Match failure
    assert_eq!(s.get("/css/site.css", &[("If-Match", "\"other\"")]).status, 412);
}

#[test]
fn ranges() {
    let site = make_site("range");
    let s = Server::start(&site, &[]);
    let r = s.get("/100.html", &[("Range", "bytes=10-19")]);
    assert_eq!(r.status, 206);
    assert_eq!(r.header("Content-Range"), Some("bytes 10-19/100"));
    assert_eq!(r.body.len(), 10);
    let r = s.get("/100.html", &[("Range", "bytes=-5")]);
    assert_eq!(r.header("Content-Range"), Some("bytes 95-99/100"));
    let r = s.get("/100.html", &[("Range", "bytes=100-")]);
    assert_eq!(r.status, 416);
    assert_eq!(r.header("Content-Range"), Some("bytes */100"));
    let etag = s.get("/100.html", &[]).header("ETag").unwrap().to_string();
    assert_eq!(s.get("/100.html", &[("Range", "bytes=0-0"), ("If-Range", &etag)]).status, 206);
    assert_eq!(s.get("/100.html", &[("Range", "bytes=0-0"), ("If-Range", "\"stale\"")]).status, 200);
    assert_eq!(s.get("/100.html", &[("Range", "bytes=0-1,5-6")]).status, 200);
    // A range of a large file served from disk.
    let s2 = Server::start(&site, &["--max-memory-file-size", "1MiB"]);
    let r = s2.get("/big.bin", &[("Range", "bytes=2000000-2000009")]);
    assert_eq!(r.status, 206);
    let expect: Vec<u8> = (2_000_000..2_000_010u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(r.body, expect);
}

#[test]
fn encoding_negotiation() {
    let site = make_site("enc");
    let s = Server::start(&site, &[]);
    s.wait_encoded();
    let id = s.get("/css/site.css", &[]);
    let br = s.get("/css/site.css", &[("Accept-Encoding", "gzip, deflate, br")]);
    let gz = s.get("/css/site.css", &[("Accept-Encoding", "gzip")]);
    let none = s.get("/css/site.css", &[("Accept-Encoding", "br;q=0, gzip;q=0")]);
    assert_eq!(id.header("Content-Encoding"), None);
    assert_eq!(br.header("Content-Encoding"), Some("br"));
    assert_eq!(gz.header("Content-Encoding"), Some("gzip"));
    assert_eq!(none.header("Content-Encoding"), None);
    for r in [&id, &br, &gz] {
        assert_eq!(r.header("Vary"), Some("Accept-Encoding"));
    }
    assert!(br.body.len() < id.body.len() && gz.body.len() < id.body.len());
    let tags = [id.header("ETag"), br.header("ETag"), gz.header("ETag")];
    assert!(tags[0] != tags[1] && tags[1] != tags[2] && tags[0] != tags[2], "{tags:?}");
    // gzip really is gzip of the file
    let mut d = flate2::read::GzDecoder::new(&gz.body[..]);
    let mut plain = Vec::new();
    d.read_to_end(&mut plain).unwrap();
    assert_eq!(plain, id.body);
}

fn status_of(s: &Server, req: &[u8]) -> (u16, Vec<Response>) {
    let bytes = s.raw(req);
    let (rs, _) = parse_responses(&bytes, false);
    assert!(!rs.is_empty(), "no response to {:?}", String::from_utf8_lossy(req));
    (rs[0].status, rs)
}

#[test]
fn every_promised_4xx() {
    let site = make_site("4xx");
    let s = Server::start(&site, &[]);
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("missing Host in 1.1", b"GET / HTTP/1.1\r\n\r\n".to_vec(), 400),
        ("duplicate Host", b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n".to_vec(), 400),
        ("whitespace before colon", b"GET / HTTP/1.1\r\nHost : a\r\n\r\n".to_vec(), 400),
        ("obs-fold", b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n  folded\r\n\r\n".to_vec(), 400),
        ("bad Content-Length", b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n".to_vec(), 400),
        (
            "CL and TE",
            b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(),
            400,
        ),
        ("garbage request line", b"HELLO\r\n\r\n".to_vec(), 400),
        ("dot-dot escape", b"GET /../etc/passwd HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_vec(), 400),
        (
            "encoded dot-dot escape",
            b"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_vec(),
            400,
        ),
        ("NUL", b"GET /index.html%00.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_vec(), 400),
        ("backslash", b"GET /..%5c..%5cetc HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_vec(), 400),
        ("invalid UTF-8", b"GET /%ff%fe HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_vec(), 400),
        ("POST", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(), 405),
        ("DELETE", b"DELETE /index.html HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_vec(), 405),
        ("unknown method", b"BREW / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(), 501),
        ("too-long method", [b"A".repeat(100), b" / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec()].concat(), 501),
        ("HTTP/2 version", b"GET / HTTP/2.0\r\nHost: a\r\n\r\n".to_vec(), 505),
        (
            "request line over 8 KiB",
            [b"GET /".to_vec(), b"a".repeat(9000), b" HTTP/1.1\r\nHost: a\r\n\r\n".to_vec()].concat(),
            414,
        ),
        (
            "header section over 16 KiB",
            [
                b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec(),
                b"X-Big: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(400),
                b"\r\n".to_vec(),
            ]
            .concat(),
            431,
        ),
    ];
    for (name, req, want) in cases {
        let (got, rs) = status_of(&s, &req);
        assert_eq!(got, want, "{name}");
        if want == 405 {
            assert_eq!(rs[0].header("Allow"), Some("GET, HEAD, OPTIONS"), "{name}");
        }
        if matches!(want, 400 | 414 | 431 | 501 | 505)
            && !name.contains("escape")
            && !name.contains("NUL")
            && !name.contains("backslash")
            && !name.contains("UTF-8")
        {
            assert_eq!(rs[0].header("Connection"), Some("close"), "{name}: framing errors close the connection");
        }
    }
    // The server is still healthy after all of that.
    assert_eq!(s.get("/100.html", &[]).status, 200);
}

#[test]
fn header_timeout_sends_408_and_closes() {
    let site = make_site("408");
    let s = Server::start(&site, &["--header-timeout", "300ms"]);
    let mut c = s.connect();
    c.write_all(b"GET /100.html HTTP/1.1\r\nHost: t\r\n").unwrap();
    let started = std::time::Instant::now();
    let bytes = read_to_close(&mut c);
    let (rs, _) = parse_responses(&bytes, false);
    assert_eq!(rs[0].status, 408);
    assert_eq!(rs[0].header("Connection"), Some("close"));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn keepalive_timeout_closes_idle_connections() {
    let site = make_site("ka");
    let s = Server::start(&site, &["--keepalive-timeout", "300ms"]);
    let mut c = s.connect();
    c.write_all(b"GET /100.html HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let started = std::time::Instant::now();
    let bytes = read_to_close(&mut c);
    assert_eq!(parse_responses(&bytes, false).0.len(), 1, "one response, then a silent close");
    let t = started.elapsed();
    assert!(t >= Duration::from_millis(250) && t < Duration::from_secs(5), "{t:?}");
}

#[test]
fn connection_limits_close_with_connection_close() {
    let site = make_site("limits");
    let s = Server::start(&site, &["--max-requests-per-connection", "3"]);
    let req = b"GET /100.html HTTP/1.1\r\nHost: t\r\n\r\n".repeat(5);
    let bytes = s.raw(&req);
    let (rs, _) = parse_responses(&bytes, false);
    assert_eq!(rs.len(), 3);
    assert_eq!(rs[1].header("Connection"), None);
    assert_eq!(rs[2].header("Connection"), Some("close"));

    let s = Server::start(&site, &["--max-connection-age", "300ms"]);
    let mut c = s.connect();
    c.write_all(b"GET /100.html HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut buf = [0u8; 4096];
    let n = c.read(&mut buf).unwrap();
    assert_eq!(parse_responses(&buf[..n], false).0[0].header("Connection"), None);
    std::thread::sleep(Duration::from_millis(400));
    c.write_all(b"GET /100.html HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let rest = read_to_close(&mut c);
    assert_eq!(parse_responses(&rest, false).0[0].header("Connection"), Some("close"));
}

#[test]
fn custom_404_spa_fallback_and_rules() {
    let site = make_site("spa");
    let s = Server::start(&site, &["--not-found-page", "/404.html"]);
    let r = s.get("/nope", &[]);
    assert_eq!(r.status, 404);
    assert_eq!(r.text(), "<h1>custom not found</h1>\n");
    assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));

    let s = Server::start(
        &site,
        &[
            "--spa-fallback",
            "--cache-control",
            "/css/**=public, max-age=31536000, immutable",
            "--header",
            "X-Frame-Options: DENY",
            "--header",
            "*.css=X-Kind: style",
        ],
    );
    let r = s.get("/app/route/42", &[]);
    assert_eq!(r.status, 200);
    assert!(r.text().contains("home"));
    let css = s.get("/css/site.css", &[]);
    assert_eq!(css.header("Cache-Control"), Some("public, max-age=31536000, immutable"));
    assert_eq!(css.header("X-Frame-Options"), Some("DENY"));
    assert_eq!(css.header("X-Kind"), Some("style"));
    let html = s.get("/index.html", &[]);
    assert_eq!(html.header("Cache-Control"), Some("no-cache"));
    assert_eq!(html.header("X-Kind"), None);
}

#[test]
fn symlinks_never_escape_the_root() {
    let site = make_site("symlink");
    let outside = tempdir("symlink-outside");
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), site.join("secret.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, site.join("outdir")).unwrap();
    std::os::unix::fs::symlink(site.join("100.html"), site.join("alias.html")).unwrap();
    let s = Server::start(&site, &[]);
    assert_eq!(s.get("/secret.txt", &[]).status, 404);
    assert_eq!(s.get("/outdir/secret.txt", &[]).status, 404);
    assert_eq!(s.get("/alias.html", &[]).body.len(), 100, "symlinks inside the root are served");
    assert!(s.log_contains("escapes the site root"));
    // --check fails on it
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
        .args(["--check", "--root", site.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("escapes the site root"));
}

#[test]
fn garbage_never_crashes_or_stalls_the_server() {
    let site = make_site("garbage");
    let s = Server::start(&site, &["--header-timeout", "1s"]);
    // A small deterministic PRNG (xorshift) so a failure reproduces.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let pieces: [&[u8]; 10] =
        [b"GET ", b"/", b" HTTP/1.1", b"\r\n", b"Host: a", b":", b"\r\n\r\n", b"%", b"\0", b"Content-Length: 5"];
    for _ in 0..200 {
        let mut req = Vec::new();
        for _ in 0..(next() % 20) {
            if next() % 3 == 0 {
                req.push(next() as u8);
            } else {
                req.extend_from_slice(pieces[(next() % pieces.len() as u64) as usize]);
            }
        }
        let mut c = s.connect();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = c.write_all(&req);
        let _ = c.shutdown(std::net::Shutdown::Write);
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        if !out.is_empty() {
            assert!(
                out.starts_with(b"HTTP/1.1 "),
                "{:?} -> {:?}",
                String::from_utf8_lossy(&req),
                String::from_utf8_lossy(&out)
            );
        }
    }
    assert_eq!(s.get("/100.html", &[]).status, 200);
    // Every connection is gone once clients have closed (lingering closes finish on the client's EOF).
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while s.metric("hyperstatic_connections_open") != 0.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "connections leaked: {}",
            s.metric("hyperstatic_connections_open")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn transfer_encoding_request_is_answered_then_closed() {
    let site = make_site("te");
    let s = Server::start(&site, &[]);
    let bytes = s.raw(b"GET /100.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /100.html HTTP/1.1\r\nHost: t\r\n\r\n");
    let (rs, _) = parse_responses(&bytes, false);
    assert_eq!(rs.len(), 1, "the body is never parsed as a request");
    assert_eq!(rs[0].status, 200);
    assert_eq!(rs[0].header("Connection"), Some("close"));
}

#[test]
fn half_closed_pipeline_behind_a_slow_reader_is_fully_answered() {
    let site = make_site("halfclose");
    let s = Server::start(&site, &[]);
    // Enough pipelined requests for large bodies that the server's output blocks before it has read
    // them all; then the client stops sending and only later starts reading.
    let mut c = s.connect();
    let req = b"GET /css/site.css HTTP/1.1\r\nHost: t\r\n\r\n".repeat(2000);
    let writer = {
        let mut w = c.try_clone().unwrap();
        std::thread::spawn(move || {
            w.write_all(&req).unwrap();
            w.shutdown(std::net::Shutdown::Write).unwrap();
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let bytes = read_to_close(&mut c);
    writer.join().unwrap();
    let (rs, used) = parse_responses(&bytes, false);
    assert_eq!(used, bytes.len());
    assert_eq!(rs.len(), 2000, "every request sent before the half-close is answered");
    assert!(rs.iter().all(|r| r.status == 200 && r.body.len() == 4500));
}

/// Reads until the server's FIN; a reset instead fails (read_to_close tolerates one, this must not).
fn read_to_fin(c: &mut std::net::TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read after {} bytes: {e} (the close must be a FIN after the response)", out.len()),
        }
    }
}

#[test]
fn connection_close_is_answered_whole_then_a_fin() {
    // A closing request that is whole and bodiless is closed at once after its response (no lingering for the
    // client's FIN): the response must still arrive whole, followed by a FIN, never a reset — for small bodies,
    // for a large body behind a slow reader, over HTTP/1.0, and on a connection opened and used at once.
    let site = make_site("close-fin");
    let s = Server::start(&site, &["--max-memory-file-size", "1MiB"]);
    for i in 0..200 {
        let mut c = s.connect();
        let req: &[u8] = if i % 2 == 0 {
            b"GET /100.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        } else {
            b"GET /100.html HTTP/1.0\r\n\r\n"
        };
        c.write_all(req).unwrap();
        let bytes = read_to_fin(&mut c);
        let (rs, used) = parse_responses(&bytes, false);
        assert_eq!((rs.len(), used), (1, bytes.len()), "connection {i}");
        assert_eq!((rs[0].status, rs[0].body.len()), (200, 100), "connection {i}");
    }
    let mut c = s.connect();
    c.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let bytes = read_to_fin(&mut c);
    let (rs, _) = parse_responses(&bytes, false);
    let expect: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(rs.len(), 1);
    assert!(rs[0].body == expect, "the 3 MB body arrives whole before the FIN");
}
