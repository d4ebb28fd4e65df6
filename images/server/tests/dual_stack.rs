//! The default listeners are `[::]` (plain, admin and HTTPS) and dual-stack: one socket per port takes IPv4 and
//! IPv6 clients alike, whatever the machine's `net.ipv6.bindv6only`. Nothing here is skipped: a machine without
//! IPv6 on loopback fails this test loudly (CI has it).

mod common;

use common::tls::*;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use rustls::version::TLS13;

/// One keep-alive-free GET over plain TCP to `ip`.
fn get_over(ip: &str, port: u16, path: &str) -> Response {
    let mut s = TcpStream::connect((ip, port)).unwrap_or_else(|e| panic!("connect to {ip} port {port}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    let (mut rs, _) = parse_responses(&got, false);
    assert_eq!(rs.len(), 1, "one response from {ip}: {:?}", String::from_utf8_lossy(&got));
    rs.remove(0)
}

#[test]
fn unspecified_ipv6_listeners_take_ipv4_and_ipv6_clients() {
    let site = make_site("dual-stack");
    let tmp = tempdir("dual-stack-certs");
    let ca = make_ca(&tmp);
    let (crt, key) = make_leaf(&tmp, "leaf", 30);
    let (crt, key) = (crt.display().to_string(), key.display().to_string());
    // The defaults' addresses, on free ports (later flags override the harness's 127.0.0.1 ones).
    let srv = Server::start(
        &site,
        &[
            "--listen",
            "[::]:0",
            "--admin-listen",
            "[::]:0",
            "--tls-cert",
            &crt,
            "--tls-key",
            &key,
            "--tls-listen",
            "[::]:0",
        ],
    );
    assert!(srv.log_contains("\"http\":\"[::]:"), "the plain listener is on [::]");
    let cfg = client_config(&ca, &[&TLS13]);
    for ip in ["127.0.0.1", "::1"] {
        let r = get_over(ip, srv.port, "/100.html");
        assert_eq!((r.status, r.body.len()), (200, 100), "plain over {ip}");
        let r = get_over(ip, srv.admin, "/healthz");
        assert_eq!(r.status, 200, "admin over {ip}");
        let mut t = connect_to(&cfg, ip, srv.https);
        let r = get(&mut t, "/100.html");
        assert_eq!((r.status, r.body.len()), (200, 100), "https over {ip}");
    }
}

#[test]
fn an_explicit_ipv4_address_is_bound_as_given() {
    let site = make_site("dual-stack-v4");
    let srv = Server::start(&site, &["--listen", "127.0.0.1:0"]);
    assert_eq!(get_over("127.0.0.1", srv.port, "/100.html").status, 200);
    assert!(TcpStream::connect(("::1", srv.port)).is_err(), "127.0.0.1 does not take IPv6 clients");
}
