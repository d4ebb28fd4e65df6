//! `--proxy-protocol` with the real binary and a sender of the test's own: the PROXY v2 header built here byte by
//! byte from HAProxy's specification ("The PROXY protocol", section 2.2), as HAProxy's `send-proxy-v2` writes it
//! (signature, version 2 and command PROXY, TCP over IPv4 or IPv6, the addresses, optional TLVs), not by the
//! server's own parser. Not checked against HAProxy itself (it is not installed here). The header's source address
//! must be what the per-client limits and the access log see, on the plain port and before the TLS handshake; a
//! connection without a valid header gets nothing. One worker, so every connection meets the same buckets; the
//! rates are per 10 minutes, so no token comes back while a test runs.

mod common;

use common::tls::*;
use common::*;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConnection, StreamOwned};

/// The v2 header for a TCP connection from `src` to `dst`, then `tlvs` (type, value).
fn header(src: SocketAddr, dst: SocketAddr, tlvs: &[(u8, &[u8])]) -> Vec<u8> {
    let mut addrs = Vec::new();
    let family = match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            addrs.extend_from_slice(&s.octets());
            addrs.extend_from_slice(&d.octets());
            0x11 // AF_INET, STREAM
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            addrs.extend_from_slice(&s.octets());
            addrs.extend_from_slice(&d.octets());
            0x21 // AF_INET6, STREAM
        }
        _ => panic!("one family"),
    };
    addrs.extend_from_slice(&src.port().to_be_bytes());
    addrs.extend_from_slice(&dst.port().to_be_bytes());
    for (t, v) in tlvs {
        addrs.push(*t);
        addrs.extend_from_slice(&(v.len() as u16).to_be_bytes());
        addrs.extend_from_slice(v);
    }
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.push(0x21); // version 2, PROXY
    h.push(family);
    h.extend_from_slice(&(addrs.len() as u16).to_be_bytes());
    h.extend_from_slice(&addrs);
    h
}

/// The LOCAL header a load balancer's own health check sends: no addresses.
fn local() -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.extend_from_slice(&[0x20, 0x00, 0x00, 0x00]);
    h
}

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";

/// Sends `parts` on a new connection to `port` (one write each) and reads until the server closes it. A write the
/// server refused by closing (it may close after the first part) ends the sending, not the test.
fn send(port: u16, parts: &[&[u8]]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_nodelay(true).unwrap();
    for p in parts {
        if s.write_all(p).is_err() {
            break;
        }
    }
    read_to_close(&mut s)
}

/// The status of the one response to GET after `head` (0: the connection closed with no response).
fn status(port: u16, head: &[u8]) -> u16 {
    let bytes = send(port, &[head, GET]);
    parse_responses(&bytes, false).0.first().map_or(0, |r| r.status)
}

fn v4(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn start(name: &str, value: &str, extra: &[&str]) -> (Server, Site, Site) {
    let site = tempdir(name);
    std::fs::write(site.join("index.html"), "home").unwrap();
    let conf = tempdir(&format!("{name}-conf"));
    let file = conf.join("site.json");
    std::fs::write(&file, value).unwrap();
    let mut args = vec!["--site", file.to_str().unwrap(), "--workers", "1", "--access-log", "--proxy-protocol"];
    args.extend_from_slice(extra);
    (Server::start(&site, &args), site, conf)
}

#[test]
fn the_header_names_the_client_for_the_limits_and_the_access_log() {
    let value = r#"{"version": 1, "limits": {"perClient": {"requests": 1, "periodSeconds": 600, "burst": 2}}}"#;
    let (s, _site, _conf) = start("proxy-plain", value, &["--header-timeout", "2s"]);
    let dst = v4(&format!("127.0.0.1:{}", s.port));
    let a = header(v4("192.0.2.10:4000"), dst, &[]);
    // 192.0.2.10 (all of these come from 127.0.0.1): its burst of two, then 429 with Retry-After.
    assert_eq!(status(s.port, &a), 200);
    // The header in two writes, the second with a NOOP TLV the server skips (PP2_TYPE_NOOP, 0x04).
    let with_tlv = header(v4("192.0.2.10:4001"), dst, &[(0x04, b"pad")]);
    let bytes = send(s.port, &[&with_tlv[..7], &with_tlv[7..], GET]);
    assert_eq!(parse_responses(&bytes, false).0[0].status, 200);
    let bytes = send(s.port, &[&a, GET]);
    let r = &parse_responses(&bytes, false).0[0];
    assert_eq!(r.status, 429);
    let after: u32 = r.header("Retry-After").unwrap().parse().unwrap();
    assert!((590..=600).contains(&after), "Retry-After {after}");
    // Other claimed clients have their own buckets, IPv6 ones by their /64.
    assert_eq!(status(s.port, &header(v4("192.0.2.11:4000"), dst, &[])), 200);
    let v6 = header("[2001:db8:0:1::7]:5000".parse().unwrap(), "[2001:db8::1]:8080".parse().unwrap(), &[]);
    assert_eq!(status(s.port, &v6), 200);
    // LOCAL (the load balancer's health check): the connection's own address, 127.0.0.1, is the client.
    assert_eq!(status(s.port, &local()), 200);
    assert_eq!(s.metric("hyperstatic_requests_limited_total{reason=\"per_client\"}"), 1.0);

    // Without a valid header: closed with no answer, counted. No header at all, a PROXY v1 text header, a v2 header
    // with a version nibble of 1.
    let mut bad_version = a.clone();
    bad_version[12] = 0x11;
    let cases: [&[u8]; 3] = [b"", b"PROXY TCP4 192.0.2.1 127.0.0.1 1 2\r\n", &bad_version];
    for (i, head) in cases.into_iter().enumerate() {
        assert_eq!(send(s.port, &[head, GET]), b"", "case {i}: nothing is answered");
        assert_eq!(s.metric("hyperstatic_proxy_protocol_refused_total"), (i + 1) as f64);
    }
    // A header that never completes is closed at --header-timeout (2 s: the wait is on the close, bounded by the
    // read timeout), with nothing answered and nothing refused: it was not wrong, only late.
    assert_eq!(send(s.port, &[&a[..20]]), b"");
    assert_eq!(s.metric("hyperstatic_proxy_protocol_refused_total"), 3.0);

    wait_for("the access log lines", || {
        s.logs.lock().unwrap().iter().filter(|l| l.contains("\"msg\":\"request\"")).count() == 6
    });
    let logs = s.logs.lock().unwrap();
    let clients: Vec<String> = logs
        .iter()
        .filter(|l| l.contains("\"msg\":\"request\""))
        .map(|l| l.split("\"client\":\"").nth(1).unwrap().split('"').next().unwrap().to_string())
        .collect();
    assert_eq!(
        clients[..5],
        ["192.0.2.10:4000", "192.0.2.10:4001", "192.0.2.10:4000", "192.0.2.11:4000", "[2001:db8:0:1::7]:5000"]
    );
    assert!(clients[5].starts_with("127.0.0.1:"), "LOCAL keeps the connection's address: {}", clients[5]);
    assert!(logs
        .iter()
        .any(|l| l.contains("\"client\":\"192.0.2.10:4000\"") && l.contains("\"limited\":\"per_client\"")));
}

/// Sends `head`, then a TLS handshake and one GET over it: the status, or None when the connection was closed
/// before the handshake completed.
fn tls_get(port: u16, cfg: &Arc<rustls::ClientConfig>, head: &[u8]) -> Option<u16> {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    tcp.write_all(head).unwrap();
    let conn = ClientConnection::new(cfg.clone(), ServerName::try_from("localhost").unwrap()).unwrap();
    let mut t = StreamOwned::new(conn, tcp);
    while t.conn.is_handshaking() {
        match t.conn.complete_io(&mut t.sock) {
            Ok((0, 0)) => return None,
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    t.write_all(GET).unwrap();
    let mut got = Vec::new();
    let _ = t.read_to_end(&mut got);
    parse_responses(&got, false).0.first().map(|r| r.status)
}

#[test]
fn the_tls_handshake_limit_counts_the_headers_client() {
    let tmp = tempdir("proxy-tls-certs");
    let ca = make_ca(&tmp);
    let (crt, key) = make_leaf(&tmp, "leaf", 30);
    let (crt, key) = (crt.display().to_string(), key.display().to_string());
    let value = r#"{"version": 1, "limits": {"perClientHandshakes": {"handshakes": 1, "periodSeconds": 600}}}"#;
    let (s, _site, _conf) = start("proxy-tls", value, &tls_args(&crt, &key));
    let cfg = full_handshakes(&ca);
    let dst = v4(&format!("127.0.0.1:{}", s.https));
    let a = header(v4("198.51.100.1:1000"), dst, &[]);
    // One handshake per 10 minutes for each claimed client: the load balancer's own address (127.0.0.1, every
    // connection's) is never what is limited.
    assert_eq!(tls_get(s.https, &cfg, &a), Some(200));
    assert_eq!(tls_get(s.https, &cfg, &a), None, "198.51.100.1's second handshake");
    assert_eq!(tls_get(s.https, &cfg, &header(v4("198.51.100.2:1000"), dst, &[])), Some(200));
    assert_eq!(tls_get(s.https, &cfg, b"GET / HTTP/1.1\r\n"), None, "no header: no handshake either");
    assert_eq!(s.metric("hyperstatic_requests_limited_total{reason=\"tls_handshake\"}"), 1.0);
    assert_eq!(s.metric("hyperstatic_proxy_protocol_refused_total"), 1.0);
    assert_eq!(s.metric("hyperstatic_tls_handshakes_total{result=\"success\",resumed=\"false\"}"), 2.0);
    wait_for("the access log lines", || s.log_contains("\"client\":\"198.51.100.2:1000\""));
}
