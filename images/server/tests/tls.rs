//! HTTPS against the real binary: byte-exact responses through rustls, curl and openssl s_client; protocol
//! versions and suites; ALPN; resumption; keep-alive, pipelining and large bodies; certificate rotation the
//! way a Secret volume does it, good and bad; the redirect and HSTS; malformed and slow TLS clients.

mod common;

use common::tls::*;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::version::{TLS12, TLS13};

struct Setup {
    site: Site,
    tmp: Site,
    ca: std::path::PathBuf,
    secret: SecretDir,
}

/// A site, a CA, leaf `gen1` (valid 30 days) in a Secret-like directory.
fn setup(name: &str) -> Setup {
    let site = make_site(&format!("tls-{name}"));
    let tmp = tempdir(&format!("tls-{name}-certs"));
    let ca = make_ca(&tmp);
    let (crt, key) = make_leaf(&tmp, "gen1", 30);
    let secret = SecretDir::new(&tmp.join("secret"), &crt, &key);
    Setup { site, tmp, ca, secret }
}

fn start(s: &Setup, extra: &[&str]) -> Server {
    let (crt, key) = (s.secret.crt().display().to_string(), s.secret.key().display().to_string());
    let mut args = vec!["--tls-cert", &crt, "--tls-key", &key, "--tls-listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    Server::start(&s.site, &args)
}

fn peer_leaf(t: &Tls) -> Vec<u8> {
    t.conn.peer_certificates().unwrap()[0].as_ref().to_vec()
}

#[test]
fn https_get_is_byte_exact_with_alpn_and_hsts() {
    let s = setup("get");
    // big.bin is served from disk (sendfile on the plain port; read into TLS records here), site.css from memory.
    let srv = start(&s, &["--hsts", "max-age=31536000; includeSubDomains", "--max-memory-file-size", "1MiB"]);
    let cfg = client_config(&s.ca, &[&TLS13, &TLS12]);
    let mut t = connect(&cfg, srv.https);
    assert_eq!(t.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    assert_eq!(t.conn.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_3));
    let r = get(&mut t, "/100.html");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, vec![b'a'; 100]);
    assert_eq!(r.header("Strict-Transport-Security"), Some("max-age=31536000; includeSubDomains"));
    let r = get(&mut t, "/big.bin");
    assert_eq!(r.body, big_content(), "3 MB from disk over TLS");
    let css = std::fs::read(s.site.join("css/site.css")).unwrap();
    assert_eq!(get(&mut t, "/css/site.css").body, css);
    let r = get(&mut t, "/nope");
    assert_eq!(r.status, 404);
    assert!(r.header("Strict-Transport-Security").is_some(), "HSTS on every HTTPS response");
    // The plain port never sends HSTS.
    assert_eq!(srv.get("/100.html", &[]).header("Strict-Transport-Security"), None);
    // A TLS 1.2 client is served too, with an AEAD suite.
    let mut t12 = connect(&client_config(&s.ca, &[&TLS12]), srv.https);
    assert_eq!(t12.conn.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_2));
    assert_eq!(get(&mut t12, "/100.html").body, vec![b'a'; 100]);
    assert_eq!(srv.metric("hyperstatic_tls_handshakes_total{result=\"success\",resumed=\"false\"}"), 2.0);
}

#[test]
fn curl_and_openssl_s_client_verify_the_certificate() {
    let s = setup("cli");
    let srv = start(&s, &[]);
    let url = format!("https://localhost:{}/100.html", srv.https);
    let resolve = format!("localhost:{}:127.0.0.1", srv.https);
    let out =
        run(Command::new("curl").args(["-sS", "--fail", "--cacert"]).arg(&s.ca).args(["--resolve", &resolve, &url]));
    assert!(out.status.success(), "curl: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, vec![b'a'; 100]);
    // Without the CA, curl refuses: the check above really verified the chain.
    let out = run(Command::new("curl").args(["-sS", "--resolve", &resolve, &url]));
    assert!(!out.status.success());
    let s_client = |args: &[&str]| {
        let mut c = Command::new("openssl");
        c.args(["s_client", "-connect", &format!("127.0.0.1:{}", srv.https), "-servername", "localhost"]);
        c.args(args).stdin(std::process::Stdio::null());
        let out = run(&mut c);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let ca = s.ca.display().to_string();
    let (ok, text) =
        s_client(&["-CAfile", &ca, "-verify_return_error", "-alpn", "http/1.1", "-verify_hostname", "localhost"]);
    assert!(ok, "{text}");
    assert!(text.contains("Verify return code: 0 (ok)"), "{text}");
    assert!(text.contains("ALPN protocol: http/1.1"), "{text}");
    assert!(text.contains("TLSv1.3"), "{text}");
    assert!(text.contains("CN = gen1") || text.contains("CN=gen1"), "{text}");
}

#[test]
fn old_protocols_and_non_aead_suites_are_refused() {
    let s = setup("refuse");
    let srv = start(&s, &[]);
    let s_client = |args: &[&str]| {
        let mut c = Command::new("openssl");
        c.args(["s_client", "-connect", &format!("127.0.0.1:{}", srv.https)]).args(args);
        let out = run(c.stdin(std::process::Stdio::null()));
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
        )
    };
    // SECLEVEL=0 lets this client offer the old versions and suites; the server's alert is what refuses them.
    for args in [
        &["-tls1", "-cipher", "DEFAULT@SECLEVEL=0"][..],
        &["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"],
        &["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA384:AES128-SHA@SECLEVEL=0"],
        &["-tls1_2", "-cipher", "ECDHE-ECDSA-NULL-SHA:NULL-SHA256@SECLEVEL=0"],
    ] {
        let (ok, text) = s_client(args);
        assert!(!ok && text.contains("alert handshake failure"), "{args:?} must be refused by the server: {text}");
    }
    // Control: the same client with an AEAD suite on TLS 1.2 gets through.
    let (ok, text) = s_client(&["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"]);
    assert!(ok && text.contains("ECDHE-ECDSA-AES128-GCM-SHA256"), "{text}");
    assert_eq!(srv.metric("hyperstatic_tls_handshakes_total{result=\"error\",resumed=\"false\"}"), 4.0);
}

#[test]
fn sessions_resume_with_tls13_and_tls12() {
    let s = setup("resume");
    let srv = start(&s, &[]);
    for versions in [&[&TLS13][..], &[&TLS12]] {
        let cfg = client_config(&s.ca, versions);
        let mut first = connect(&cfg, srv.https);
        assert_eq!(first.conn.handshake_kind(), Some(rustls::HandshakeKind::Full));
        // TLS 1.3 tickets arrive after the handshake: a response read makes sure the client has them.
        assert_eq!(get(&mut first, "/100.html").status, 200);
        drop(first);
        let mut second = connect(&cfg, srv.https);
        assert_eq!(second.conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed), "{versions:?}");
        assert_eq!(get(&mut second, "/100.html").body, vec![b'a'; 100]);
    }
    assert_eq!(srv.metric("hyperstatic_tls_handshakes_total{result=\"success\",resumed=\"true\"}"), 2.0);
    assert_eq!(srv.metric("hyperstatic_tls_handshakes_total{result=\"success\",resumed=\"false\"}"), 2.0);
}

#[test]
fn keepalive_and_pipelining_over_tls() {
    let s = setup("pipeline");
    let srv = start(&s, &[]);
    let mut t = connect(&client_config(&s.ca, &[&TLS13]), srv.https);
    for i in 0..100 {
        let path = if i % 2 == 0 { "/100.html" } else { "/docs/page.html" };
        let want = std::fs::read(s.site.join(&path[1..])).unwrap();
        assert_eq!(get(&mut t, path).body, want, "request {i}");
    }
    let mut req = Vec::new();
    for i in 0..64 {
        req.extend_from_slice(
            format!("GET /{}.html HTTP/1.1\r\nHost: localhost\r\n\r\n", if i % 3 == 0 { "100" } else { "index" })
                .as_bytes(),
        );
    }
    let rs = exchange(&mut t, &req, 64);
    assert_eq!(rs.len(), 64);
    let index = std::fs::read(s.site.join("index.html")).unwrap();
    for (i, r) in rs.iter().enumerate() {
        assert_eq!(r.body, if i % 3 == 0 { vec![b'a'; 100] } else { index.clone() }, "pipelined response {i}");
    }
    assert_eq!(srv.metric("hyperstatic_connections_total"), 1.0, "all on one connection");
}

#[test]
fn large_bodies_behind_a_slow_reader_are_byte_exact() {
    let s = setup("slow");
    std::fs::write(s.site.join("mem.bin"), &big_content()[..1_500_000]).unwrap();
    let srv = start(&s, &["--max-memory-file-size", "2MiB"]);
    let mut t = connect(&client_config(&s.ca, &[&TLS13]), srv.https);
    // Two large responses pipelined (one from memory, one from disk), read 4 KB at a time with pauses, so the
    // server's writes block over and over.
    t.write_all(b"GET /mem.bin HTTP/1.1\r\nHost: localhost\r\n\r\nGET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut reads = 0u64;
    while parse_responses(&got, false).0.len() < 2 {
        let n = t.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
        reads += 1;
        if reads.is_multiple_of(64) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let (rs, used) = parse_responses(&got, false);
    assert_eq!(used, got.len());
    assert_eq!(rs[0].body, &big_content()[..1_500_000]);
    assert_eq!(rs[1].body, big_content());
    assert_eq!(get(&mut t, "/100.html").body, vec![b'a'; 100], "the connection is still usable");
}

#[test]
fn rotation_under_load_drops_nothing_and_new_handshakes_see_the_new_certificate() {
    let mut s = setup("rotate");
    // The kept-alive client runs thousands of requests: the per-connection limit must not end it.
    let srv = start(&s, &["--max-requests-per-connection", "100000000"]);
    let (crt2, key2) = make_leaf(&s.tmp, "gen2", 60);
    let (old, new) = (leaf_der(&s.secret.crt()), leaf_der(&crt2));
    let cfg = client_config(&s.ca, &[&TLS13, &TLS12]);
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(AtomicU64::new(0));
    // A kept-alive connection opened before the rotation, requesting in a loop throughout.
    let kept = {
        let (cfg, stop, failures, port) = (cfg.clone(), stop.clone(), failures.clone(), srv.https);
        std::thread::spawn(move || {
            let mut t = connect(&cfg, port);
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if get(&mut t, "/100.html").body != vec![b'a'; 100] {
                    failures.fetch_add(1, Ordering::Relaxed);
                }
                n += 1;
            }
            (n, peer_leaf(&t))
        })
    };
    // New connections in a loop, recording which certificate each saw. Without resumption: a resumed session
    // carries no certificate (sessions deliberately survive a rotation), so only full handshakes show it.
    let fresh = {
        let (cfg, stop, failures, port) = (full_handshakes(&s.ca), stop.clone(), failures.clone(), srv.https);
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let mut t = connect(&cfg, port);
                match exchange(&mut t, b"GET /100.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", 1)
                    .pop()
                {
                    Some(r) if r.body == vec![b'a'; 100] => seen.push(peer_leaf(&t)),
                    _ => {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            seen
        })
    };
    std::thread::sleep(Duration::from_millis(700));
    s.secret.swap(&std::fs::read(&crt2).unwrap(), &std::fs::read(&key2).unwrap());
    let deadline = Instant::now() + Duration::from_secs(10);
    while srv.metric("hyperstatic_tls_certificate_reloads_total{result=\"success\"}") < 1.0 {
        assert!(Instant::now() < deadline, "rotation not noticed in 10 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    stop.store(true, Ordering::Relaxed);
    let (kept_requests, kept_cert) = kept.join().unwrap();
    let seen = fresh.join().unwrap();
    assert_eq!(failures.load(Ordering::Relaxed), 0);
    assert_eq!(kept_cert, old, "the connection from before the rotation kept its session");
    assert!(kept_requests > 10, "{kept_requests}");
    assert!(seen.first() == Some(&old) && seen.last() == Some(&new), "{} connections", seen.len());
    let switched = seen.iter().position(|c| *c == new).unwrap();
    assert!(seen[switched..].iter().all(|c| *c == new), "once rotated, every new handshake gets the new certificate");
    // The expiry gauge follows the certificate (gen2 is valid 60 days, gen1 30).
    let not_after = srv.metric("hyperstatic_tls_certificate_not_after_timestamp_seconds");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    assert!((not_after - now - 60.0 * 86400.0).abs() < 120.0, "{not_after}");
    assert!(srv.log_contains("tls certificate reloaded"));
}

#[test]
fn bad_material_on_rotation_keeps_the_old_certificate_and_counts_an_error() {
    let mut s = setup("badrotate");
    let srv = start(&s, &[]);
    let (crt2, key2) = make_leaf(&s.tmp, "gen2", 60);
    let old = leaf_der(&s.secret.crt());
    let cfg = full_handshakes(&s.ca);
    let mut before = connect(&cfg, srv.https);
    let key1 = std::fs::read(s.secret.key()).unwrap();
    let wait_errors = |n: f64| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while srv.metric("hyperstatic_tls_certificate_reloads_total{result=\"error\"}") < n {
            assert!(Instant::now() < deadline, "bad material not noticed in 10 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // A new certificate with the old key: mismatched.
    s.secret.swap(&std::fs::read(&crt2).unwrap(), &key1);
    wait_errors(1.0);
    assert!(srv.log_contains("does not match the certificate"), "{:?}", srv.logs.lock().unwrap());
    let mut t = connect(&cfg, srv.https);
    assert_eq!(peer_leaf(&t), old, "the old certificate keeps serving");
    assert_eq!(get(&mut t, "/100.html").status, 200);
    // Garbage: a second error, and the same bad bytes are not counted again every second.
    s.secret.swap(b"not a certificate", b"not a key");
    wait_errors(2.0);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(srv.metric("hyperstatic_tls_certificate_reloads_total{result=\"error\"}"), 2.0);
    assert_eq!(srv.metric("hyperstatic_tls_certificate_reloads_total{result=\"success\"}"), 0.0);
    assert_eq!(peer_leaf(&connect(&cfg, srv.https)), old);
    assert_eq!(get(&mut before, "/100.html").status, 200, "a connection from before is untouched");
    // Fixed material is picked up.
    s.secret.swap(&std::fs::read(&crt2).unwrap(), &std::fs::read(&key2).unwrap());
    let deadline = Instant::now() + Duration::from_secs(10);
    while peer_leaf(&connect(&cfg, srv.https)) == old {
        assert!(Instant::now() < deadline, "good material not picked up in 10 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(srv.metric("hyperstatic_tls_certificate_reloads_total{result=\"success\"}"), 1.0);
}

/// A rotation to a certificate outside its validity is refused like malformed material: every client would reject
/// it while the serving one is still good. The old certificate keeps serving, the refusal is counted, the
/// gauge is 1 and /load-error says why; a valid certificate afterwards is installed and clears both.
#[test]
fn an_expired_or_not_yet_valid_certificate_is_refused_on_rotation() {
    let mut s = setup("validity");
    let srv = start(&s, &[]);
    let old = leaf_der(&s.secret.crt());
    let cfg = full_handshakes(&s.ca);
    let wait_errors = |n: f64| {
        wait_for("the refused rotation to be counted", || {
            srv.metric("hyperstatic_tls_certificate_reloads_total{result=\"error\"}") >= n
        })
    };
    let cases = [
        ("expired", "20200101000000Z", "20200201000000Z", "the certificate expired (notAfter Sat, 01 Feb 2020"),
        (
            "future",
            "20990101000000Z",
            "20991231000000Z",
            "the certificate is not valid yet (notBefore Thu, 01 Jan 2099",
        ),
    ];
    for (i, (name, start, end, why)) in cases.iter().enumerate() {
        let (crt, key) = make_leaf_dated(&s.tmp, name, start, end);
        s.secret.swap(&std::fs::read(&crt).unwrap(), &std::fs::read(&key).unwrap());
        wait_errors(i as f64 + 1.0);
        assert_eq!(peer_leaf(&connect(&cfg, srv.https)), old, "{name}: the old certificate keeps serving");
        assert_eq!(srv.metric("hyperstatic_tls_certificate_reload_failed"), 1.0, "{name}");
        let body = srv.admin_get("/load-error").text();
        assert!(body.starts_with("tls: --tls-cert ") && body.contains(why), "{name}: {body:?}");
        let mut t = connect(&cfg, srv.https);
        assert_eq!(get(&mut t, "/100.html").status, 200);
    }
    assert_eq!(srv.metric("hyperstatic_tls_certificate_reloads_total{result=\"success\"}"), 0.0);
    let (crt, key) = make_leaf(&s.tmp, "gen2", 30);
    s.secret.swap(&std::fs::read(&crt).unwrap(), &std::fs::read(&key).unwrap());
    wait_for("the valid certificate to be installed", || peer_leaf(&connect(&cfg, srv.https)) == leaf_der(&crt));
    assert_eq!(srv.metric("hyperstatic_tls_certificate_reload_failed"), 0.0);
    assert_eq!(srv.admin_get("/load-error").text(), "");
}

#[test]
fn bad_material_at_start_fails_naming_the_file() {
    let s = setup("badstart");
    let (crt2, _) = make_leaf(&s.tmp, "gen2", 60);
    let key1 = s.secret.key();
    let bin = env!("CARGO_BIN_EXE_hyperstatic-server");
    let cases: [(&std::path::Path, &std::path::Path, &str); 3] = [
        (&crt2, &key1, "does not match the certificate"),
        (&s.tmp.join("missing.crt"), &key1, "missing.crt"),
        (&s.secret.crt(), &s.site.join("index.html"), "no usable PEM private key"),
    ];
    for (crt, key, want) in cases {
        let args = [
            "--root".as_ref(),
            s.site.as_os_str(),
            "--tls-cert".as_ref(),
            crt.as_os_str(),
            "--tls-key".as_ref(),
            key.as_os_str(),
        ];
        let out = run(Command::new(bin).args(args).args([
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--tls-listen",
            "127.0.0.1:0",
        ]));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot load the TLS certificate") && err.contains(want), "{err}");
        let out = run(Command::new(bin).args(args).arg("--check"));
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(text.contains(want), "{text}");
    }
    let out = run(Command::new(bin).args([
        "--root".as_ref(),
        s.site.as_os_str(),
        "--check".as_ref(),
        "--tls-cert".as_ref(),
        s.secret.crt().as_os_str(),
        "--tls-key".as_ref(),
        key1.as_os_str(),
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("tls: ") && text.contains("\nok\n"), "{text}");
}

#[test]
fn https_redirect_answers_the_plain_port_with_308() {
    let s = setup("redirect");
    let srv = start(&s, &["--https-redirect", "--https-redirect-port", "8443", "--hsts", "max-age=60"]);
    let r = srv.get("/docs/page.html?x=1", &[]);
    // Server::get sends `Host: t`.
    assert_eq!(r.status, 308);
    assert_eq!(r.header("Location"), Some("https://t:8443/docs/page.html?x=1"));
    assert_eq!(r.header("Strict-Transport-Security"), None, "HSTS is for HTTPS responses only");
    let raw = srv.raw(b"HEAD /a HTTP/1.1\r\nHost: example.com:8080\r\n\r\nGET /b HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n");
    let (rs, _) = parse_responses(&raw, true);
    assert_eq!(rs.len(), 2, "keep-alive across redirects");
    assert_eq!(rs[0].header("Location"), Some("https://example.com:8443/a"));
    assert_eq!(rs[1].header("Location"), Some("https://example.com:8443/b"));
    assert_eq!(srv.metric("hyperstatic_requests_total{code=\"308\"}"), 3.0);
    // HTTPS itself serves content, and probes on the admin port are unaffected.
    let mut t = connect(&client_config(&s.ca, &[&TLS13]), srv.https);
    assert_eq!(get(&mut t, "/100.html").status, 200);
    assert_eq!(srv.admin_get("/readyz").status, 200);
}

/// Reads until the server closes; the time it took.
fn closed_within(c: &mut TcpStream, limit: Duration) -> Duration {
    let t = Instant::now();
    c.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return t.elapsed(),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return t.elapsed(),
            Err(e) => panic!("not closed within {limit:?}: {e}"),
        }
    }
}

#[test]
fn malformed_tls_bytes_never_crash_or_stall_and_slow_handshakes_time_out() {
    let s = setup("malformed");
    let srv = start(&s, &["--header-timeout", "1s"]);
    let cfg = client_config(&s.ca, &[&TLS13]);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut random = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect()
    };
    // A real ClientHello's first bytes to corrupt (captured from rustls through a socket pair).
    let hello = {
        let mut conn = rustls::ClientConnection::new(cfg.clone(), "localhost".try_into().unwrap()).unwrap();
        let mut v = Vec::new();
        conn.write_tls(&mut v).unwrap();
        v
    };
    let mut inputs: Vec<Vec<u8>> = vec![
        b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec(),
        vec![0x16, 0x03, 0x01, 0xff, 0xff],
        vec![0x17, 0x03, 0x03, 0x00, 0x10, 1, 2, 3],
        vec![0x15, 0x03, 0x03, 0x00, 0x02, 2, 40],
    ];
    for i in 0..40 {
        inputs.push(random(1 + i * 97));
        let mut h = hello.clone();
        let at = 5 + (i * 31) % (h.len() - 5);
        h[at] ^= 0x5a;
        inputs.push(h);
    }
    for input in &inputs {
        let mut c = TcpStream::connect(("127.0.0.1", srv.https)).unwrap();
        let _ = c.write_all(input);
        // Rejected at once, or (an incomplete record) when the header timeout ends the handshake.
        let took = closed_within(&mut c, Duration::from_secs(5));
        assert!(took < Duration::from_secs(3), "{took:?} for {:?}", &input[..input.len().min(16)]);
    }
    // Slowloris on the TLS port: half a ClientHello, or nothing at all, on many connections at once.
    let mut slow: Vec<TcpStream> = (0..100)
        .map(|i| {
            let mut c = TcpStream::connect(("127.0.0.1", srv.https)).unwrap();
            if i % 2 == 0 {
                c.write_all(&hello[..hello.len() / 2]).unwrap();
            }
            c
        })
        .collect();
    let started = Instant::now();
    let mut t = connect(&cfg, srv.https);
    assert_eq!(get(&mut t, "/100.html").status, 200, "a good client is served meanwhile");
    for c in slow.iter_mut() {
        closed_within(c, Duration::from_secs(5));
    }
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert_eq!(get(&mut connect(&cfg, srv.https), "/100.html").status, 200, "still serving");
    assert!(srv.metric("hyperstatic_tls_handshakes_total{result=\"error\",resumed=\"false\"}") >= 40.0);
}

#[test]
fn sigterm_drains_https_connections_with_close_notify() {
    let s = setup("drain");
    let mut srv = start(&s, &["--drain-delay", "300ms"]);
    let mut t = connect(&client_config(&s.ca, &[&TLS13]), srv.https);
    assert_eq!(get(&mut t, "/100.html").status, 200);
    srv.signal(libc::SIGTERM);
    // Served through the drain delay; once it is over, the next response says close and the session ends
    // with a close_notify (a clean EOF for rustls, not an error).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = get(&mut t, "/100.html");
        assert_eq!(r.body, vec![b'a'; 100]);
        if r.header("Connection") == Some("close") {
            break;
        }
        assert!(Instant::now() < deadline, "no Connection: close within 5 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut rest = Vec::new();
    t.read_to_end(&mut rest).expect("a clean close_notify");
    assert!(rest.is_empty());
    assert_eq!(srv.wait_exit(Duration::from_secs(5)), Some(0));
    assert!(TcpStream::connect(("127.0.0.1", srv.https)).is_err(), "the HTTPS listener is closed");
}
