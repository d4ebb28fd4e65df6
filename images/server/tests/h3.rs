//! HTTP/3 (`--http3`) against the real binary without a QUIC client (an independent one, aioquic, is `make
//! h3-interop`): Alt-Svc on HTTPS answers with the port and only there, QUIC answering on the TLS port's UDP twin
//! (a Version Negotiation to an unknown version, RFC 9000 §6), hostile datagrams that change nothing, and a drain
//! with HTTP/3 on.

mod common;

use common::tls::*;
use common::*;
use std::net::UdpSocket;
use std::time::Duration;

use rustls::version::TLS13;

fn start(name: &str, extra: &[&str]) -> (Server, std::path::PathBuf, Site, Site) {
    let site = make_site(&format!("h3-{name}"));
    let tmp = tempdir(&format!("h3-{name}-certs"));
    let ca = make_ca(&tmp);
    let (crt, key) = make_leaf(&tmp, "leaf", 30);
    let (crt, key) = (crt.display().to_string(), key.display().to_string());
    let mut args = vec!["--tls-cert", &crt, "--tls-key", &key, "--tls-listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    (Server::start(&site, &args), ca, site, tmp)
}

/// A 1,200-byte long-header packet with an unknown version (0x?a?a?a?a is reserved to force negotiation).
fn unknown_version_initial(dcid: [u8; 8], scid: [u8; 8]) -> Vec<u8> {
    let mut p = vec![0u8; 1200];
    p[0] = 0xc0;
    p[1..5].copy_from_slice(&[0x1a, 0x2a, 0x3a, 0x4a]);
    p[5] = 8;
    p[6..14].copy_from_slice(&dcid);
    p[14] = 8;
    p[15..23].copy_from_slice(&scid);
    p
}

/// Sends `unknown_version_initial` and reads the Version Negotiation back: it must echo the connection IDs
/// swapped and offer QUIC v1.
fn negotiates(sock: &UdpSocket, tag: u8) {
    let (dcid, scid) = ([tag; 8], [tag ^ 0xff; 8]);
    sock.send(&unknown_version_initial(dcid, scid)).unwrap();
    let mut buf = [0u8; 1500];
    let n = sock.recv(&mut buf).expect("a Version Negotiation packet");
    let p = &buf[..n];
    assert!(p[0] & 0x80 != 0, "a long header");
    assert_eq!(&p[1..5], &[0, 0, 0, 0], "version 0: Version Negotiation");
    assert_eq!((p[5], &p[6..14]), (8, &scid[..]), "its DCID is our SCID");
    assert_eq!((p[14], &p[15..23]), (8, &dcid[..]), "its SCID is our DCID");
    let versions: Vec<&[u8]> = p[23..].chunks(4).collect();
    assert!(versions.contains(&&[0, 0, 0, 1][..]), "QUIC v1 offered: {versions:02x?}");
}

#[test]
fn alt_svc_on_https_and_quic_on_the_tls_port() {
    let (mut srv, ca, _site, _tmp) = start("altsvc", &["--http3", "--hsts", "max-age=60"]);
    let want = format!("h3=\":{}\"; ma=86400", srv.https);
    let cfg = client_config(&ca, &[&TLS13]);
    let mut t = connect(&cfg, srv.https);
    for path in ["/100.html", "/missing"] {
        let r = get(&mut t, path);
        assert_eq!(r.header("Alt-Svc"), Some(want.as_str()), "{path}");
        assert_eq!(r.header("Strict-Transport-Security"), Some("max-age=60"), "HSTS stays beside it");
    }
    assert_eq!(srv.get("/100.html", &[]).header("Alt-Svc"), None, "plain HTTP advertises nothing");

    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(("127.0.0.1", srv.https)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    negotiates(&sock, 1);
    // Hostile datagrams: empty, one byte, short headers naming no connection, Initials too short to be one,
    // a long header whose lengths run past the datagram, noise.
    let mut noise = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        noise ^= noise << 13;
        noise ^= noise >> 7;
        noise ^= noise << 17;
        noise as u8
    };
    let mut hostile: Vec<Vec<u8>> = vec![vec![], vec![0x40], vec![0xc0], vec![0x40; 1200], vec![0xff; 1200]];
    hostile.push([&[0xc0, 0, 0, 0, 1, 20][..], &[7; 20], &[255], &[1; 100]].concat());
    hostile.push([&[0xc0, 0, 0, 0, 1, 8][..], &[7; 8], &[0], &[0xff; 1200]].concat());
    for len in [1, 2, 5, 20, 100, 1199, 1200, 1400] {
        for _ in 0..20 {
            hostile.push((0..len).map(|_| next()).collect());
        }
    }
    for d in &hostile {
        sock.send(d).unwrap();
    }
    negotiates(&sock, 2);
    assert_eq!(get(&mut t, "/100.html").status, 200, "HTTPS still served");
    // Nothing above was a connection: no Initial was valid.
    assert_eq!(srv.metric("hyperstatic_http3_connections_total"), 0.0);
    assert_eq!(srv.metric("hyperstatic_http3_streams_total"), 0.0);

    srv.signal(libc::SIGTERM);
    assert_eq!(srv.wait_exit(Duration::from_secs(15)), Some(0), "drains and exits 0 with HTTP/3 on");
}

#[test]
fn without_http3_nothing_is_advertised() {
    let (srv, ca, _site, _tmp) = start("off", &["--hsts", "max-age=60"]);
    let cfg = client_config(&ca, &[&TLS13]);
    let mut t = connect(&cfg, srv.https);
    let r = get(&mut t, "/100.html");
    assert_eq!(r.header("Alt-Svc"), None);
    assert_eq!(r.header("Strict-Transport-Security"), Some("max-age=60"));
}
