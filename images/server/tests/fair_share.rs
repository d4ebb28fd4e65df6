//! Fair share (limits.perClient, src/fairshare/) with the real binary and real clients: curl over HTTP/1.1 and
//! HTTP/2 (prior knowledge on the plain port), h2load, each from its own loopback address (127.0.0.2 and 127.0.0.3
//! are other clients: `curl --interface`). The rate is one request per 10 minutes, so no token comes back while a
//! test runs and every count is exact whatever the machine's load; one worker, so that every connection meets the
//! same table (each worker limits on its own: src/fairshare/mod.rs). Waits are on conditions (a metric), never on
//! guessed sleeps. The TLS handshake limit (limits.perClientHandshakes) the same way, with curl over HTTPS and a
//! rustls client holding a connection open.

mod common;

use common::tls::*;
use common::*;
use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha256};

fn value(burst: u32) -> String {
    format!(
        r#"{{"version": 1, "limits": {{"perClient": {{"requests": 1, "periodSeconds": 600, "burst": {burst}}}}}}}
"#
    )
}

fn revision(bytes: &str) -> String {
    let d = Sha256::digest(bytes.as_bytes());
    format!("sha256:{}", d[..8].iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// A one-page site, its site value file holding `json`, and the server on it (one worker, h2c, access log).
fn start(name: &str, json: &str) -> (Server, std::path::PathBuf, Site, Site) {
    let site = tempdir(name);
    std::fs::write(site.join("index.html"), "home").unwrap();
    let conf = tempdir(&format!("{name}-conf"));
    let file = conf.join("site.json");
    std::fs::write(&file, json).unwrap();
    let s = Server::start(&site, &["--site", file.to_str().unwrap(), "--workers", "1", "--h2c", "--access-log"]);
    (s, file, site, conf)
}

/// What curl saw for each of `n` requests of `/` sent from `source`, one curl (one connection) each: curl 7.88
/// fails its second request on a reused h2c prior-knowledge connection to this server even without any limit
/// ("Error in the HTTP2 framing layer", seen with `{"version": 1}` on 2026-12-02), so connections are not reused.
/// (HTTP version, status, Retry-After).
fn curl(s: &Server, proto: &str, source: &str, n: usize) -> Vec<(String, u16, String)> {
    let url = format!("http://127.0.0.1:{}/", s.port);
    (0..n)
        .map(|_| {
            let out = Command::new("curl")
                .args(["-sS", proto, "--interface", source, "-o", "/dev/null"])
                .args(["-w", "%{http_version} %{http_code} %header{retry-after}\\n", &url])
                .output()
                .expect("run curl");
            assert!(out.status.success(), "curl {proto} from {source}: {}", String::from_utf8_lossy(&out.stderr));
            let text = String::from_utf8(out.stdout).unwrap();
            let mut p = text.trim_end_matches('\n').splitn(3, ' ');
            let v = p.next().unwrap().to_string();
            let code = p.next().unwrap().parse().unwrap_or_else(|_| panic!("{text}"));
            (v, code, p.next().unwrap_or("").trim().to_string())
        })
        .collect()
}

/// h2load's status-code tally (2xx, 4xx) for `n` requests on one connection (from 127.0.0.1: it cannot bind).
fn h2load(s: &Server, h1: bool, n: usize) -> (u32, u32) {
    let mut c = Command::new("h2load");
    c.args(["-n", &n.to_string(), "-c", "1", "-m", "1"]);
    if h1 {
        c.arg("--h1");
    }
    h2load_tally(c.arg(format!("http://127.0.0.1:{}/", s.port)))
}

fn limited(s: &Server) -> f64 {
    s.metric("hyperstatic_requests_limited_total{reason=\"per_client\"}")
}

/// The Retry-After of a client that has just used its burst: the 600 s until its next token, in whole seconds
/// (a little less if the machine is slow between the requests).
fn assert_retry_after(v: &str) {
    let n: u32 = v.parse().unwrap_or_else(|_| panic!("Retry-After {v:?}"));
    assert!((590..=600).contains(&n), "Retry-After {n}");
}

#[test]
fn past_its_burst_a_client_gets_429_with_retry_after_over_http1_and_http2() {
    let (s, _file, _site, _conf) = start("fair-burst", &value(3));

    // HTTP/1.1 from 127.0.0.1: three tokens, then 429 with Retry-After and the plain body.
    let h1 = curl(&s, "--http1.1", "127.0.0.1", 5);
    assert_eq!(h1.iter().map(|a| a.1).collect::<Vec<_>>(), [200, 200, 200, 429, 429], "{h1:?}");
    assert!(h1.iter().all(|a| a.0 == "1.1"), "{h1:?}");
    assert_eq!(h1[0].2, "", "no Retry-After on a 200");
    assert_retry_after(&h1[3].2);
    let raw = s.get("/", &[]);
    assert_eq!((raw.status, raw.text()), (429, "429 Too Many Requests\n".to_string()));

    // HTTP/2 from 127.0.0.2: another client, its own three tokens.
    let h2 = curl(&s, "--http2-prior-knowledge", "127.0.0.2", 4);
    assert_eq!(h2.iter().map(|a| a.1).collect::<Vec<_>>(), [200, 200, 200, 429], "{h2:?}");
    assert!(h2.iter().all(|a| a.0 == "2"), "{h2:?}");
    assert_retry_after(&h2[3].2);

    // h2load from 127.0.0.1 over HTTP/2 and HTTP/1.1: the bucket is the address's, whatever the protocol.
    assert_eq!(h2load(&s, false, 4), (0, 4));
    assert_eq!(h2load(&s, true, 4), (0, 4));

    // A third address is not limited.
    assert_eq!(curl(&s, "--http1.1", "127.0.0.3", 1)[0].1, 200);

    // Counted, and marked in the access log.
    assert_eq!(limited(&s), (2 + 1 + 1 + 4 + 4) as f64);
    assert_eq!(s.metric("hyperstatic_requests_total{code=\"429\"}"), limited(&s));
    wait_for("the access log's limited lines", || {
        s.logs.lock().unwrap().iter().filter(|l| l.contains("\"limited\":\"per_client\"")).count() == 12
    });
    let logs = s.logs.lock().unwrap();
    assert!(logs.iter().filter(|l| l.contains("\"limited\"")).all(|l| l.contains("\"status\":429")));
    assert!(logs.iter().any(|l| l.contains("\"client\":\"127.0.0.2:") && l.contains("\"limited\":\"per_client\"")));
}

#[test]
fn a_burst_from_h2load_gets_exactly_its_tokens() {
    let (s, _file, _site, _conf) = start("fair-h2load", &value(5));
    assert_eq!(h2load(&s, false, 12), (5, 7));
    assert_eq!(limited(&s), 7.0);
}

/// Replaces the site value file by a rename (as an editor or the kubelet would) and waits until it serves.
fn publish(s: &Server, file: &Path, json: &str) {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, json).unwrap();
    std::fs::rename(&tmp, file).unwrap();
    let rev = revision(json);
    wait_for("the new site value to serve", || {
        s.metric(&format!("hyperstatic_site_value_info{{revision=\"{rev}\"}}")) == 1.0
    });
}

fn codes(s: &Server, n: usize) -> Vec<u16> {
    curl(s, "--http1.1", "127.0.0.1", n).iter().map(|a| a.1).collect()
}

#[test]
fn the_limit_changes_live_with_the_site_value() {
    let (s, file, _site, _conf) = start("fair-live", &value(2));
    assert_eq!(codes(&s, 3), [200, 200, 429]);

    // A larger burst applies to the bucket as it is: two tokens used of five, three left.
    publish(&s, &file, &value(5));
    assert_eq!(codes(&s, 4), [200, 200, 200, 429]);

    // No limit: nothing is refused.
    publish(&s, &file, "{\"version\": 1}\n");
    assert_eq!(codes(&s, 8), [200; 8]);

    // A bad limit is refused naming the field; the last good value (no limit) keeps serving.
    std::fs::write(file.with_extension("tmp"), value(0)).unwrap();
    std::fs::rename(file.with_extension("tmp"), &file).unwrap();
    wait_for("the bad value to be refused", || {
        s.metric("hyperstatic_site_value_loads_total{result=\"failure\"}") == 1.0
    });
    let why = s.admin_get("/load-error").text();
    assert!(why.contains("limits.perClient.burst: 0 is not between 1 and 1000000"), "{why}");
    assert_eq!(codes(&s, 3), [200; 3]);

    // A limit again: the buckets were kept meanwhile, so the client is past a burst of one at once.
    publish(&s, &file, &value(1));
    assert_eq!(codes(&s, 1), [429]);
    assert_eq!(curl(&s, "--http1.1", "127.0.0.2", 2).iter().map(|a| a.1).collect::<Vec<_>>(), [200, 429]);
}

/// What curl saw for each of `n` HTTPS requests of `/` from `source`, one connection (one TLS handshake) each: the
/// status, or 0 when the connection failed before an answer (curl's error must then be a TLS/connection one).
fn curl_tls(s: &Server, ca: &Path, source: &str, n: usize) -> Vec<u16> {
    let url = format!("https://localhost:{}/", s.https);
    let resolve = format!("localhost:{}:127.0.0.1", s.https);
    (0..n)
        .map(|_| {
            let out = Command::new("curl")
                .args(["-sS", "--http1.1", "--cacert", ca.to_str().unwrap(), "--resolve", &resolve])
                .args(["--interface", source, "-o", "/dev/null", "-w", "%{http_code}", &url])
                .output()
                .expect("run curl");
            let code: u16 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            // 35: the TLS handshake failed; 56: the connection was reset while receiving. Either is a closed
            // connection; anything else (a certificate problem, 7: no connection at all) is not what is tested.
            let why = out.status.code();
            assert_eq!(
                code == 0,
                !out.status.success(),
                "curl from {source}: {why:?} {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                code != 0 || matches!(why, Some(35) | Some(56)),
                "curl from {source}: exit {why:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            code
        })
        .collect()
}

#[test]
fn past_its_burst_of_tls_handshakes_a_client_is_closed_before_its_handshake() {
    let tmp = tempdir("fair-tls-certs");
    let ca = make_ca(&tmp);
    let (crt, key) = make_leaf(&tmp, "leaf", 30);
    let (crt, key) = (crt.display().to_string(), key.display().to_string());
    let site = tempdir("fair-tls");
    std::fs::write(site.join("index.html"), "home").unwrap();
    let conf = tempdir("fair-tls-conf");
    let file = conf.join("site.json");
    std::fs::write(
        &file,
        r#"{"version": 1, "limits": {"perClientHandshakes": {"handshakes": 1, "periodSeconds": 600, "burst": 3}}}"#,
    )
    .unwrap();
    let mut args = vec!["--site", file.to_str().unwrap(), "--workers", "1", "--access-log"];
    args.extend_from_slice(&tls_args(&crt, &key));
    let s = Server::start(&site, &args);

    // A connection kept open takes the first of 127.0.0.1's three handshakes; its requests take none.
    let mut kept = connect(&full_handshakes(&ca), s.https);
    assert_eq!(get(&mut kept, "/").status, 200);
    // Two more handshakes, then the connection is closed before its handshake, and stays refused.
    assert_eq!(curl_tls(&s, &ca, "127.0.0.1", 4), [200, 200, 0, 0]);
    for _ in 0..5 {
        assert_eq!(get(&mut kept, "/").status, 200, "the kept connection is still answered");
    }
    // Another address has its own bucket; the plain port has no handshakes to limit.
    assert_eq!(curl_tls(&s, &ca, "127.0.0.2", 1), [200]);
    assert_eq!(codes(&s, 2), [200, 200]);

    assert_eq!(s.metric("hyperstatic_requests_limited_total{reason=\"tls_handshake\"}"), 2.0);
    assert_eq!(s.metric("hyperstatic_requests_limited_total{reason=\"per_client\"}"), 0.0);
    // The refused connections never began a handshake: four completed (the kept one, two curls from 127.0.0.1,
    // one from 127.0.0.2), none failed.
    let done = s.metric("hyperstatic_tls_handshakes_total{result=\"success\",resumed=\"false\"}")
        + s.metric("hyperstatic_tls_handshakes_total{result=\"success\",resumed=\"true\"}");
    assert_eq!(done, 4.0);
    assert_eq!(s.metric("hyperstatic_tls_handshakes_total{result=\"error\",resumed=\"false\"}"), 0.0);
}
