//! HTTP/2 against the real binary, answer for answer the same as HTTP/1.1: a table of requests covering what a
//! site does (conditionals, ranges, br/zstd/gzip variants, precompressed siblings, `_redirects` and rewrites,
//! `_headers`, clean URLs, SPA navigations, CORS and OPTIONS, error pages, security headers, HSTS, HEAD, 405,
//! bad paths, a large file served from disk) is sent by curl (libcurl's nghttp2, a real HTTP/2 client) over
//! HTTP/1.1 and over HTTP/2, both on TLS (ALPN `h2`) and on the plain port with `--h2c` (prior knowledge); the
//! status, every header field but `date` (in order) and the body must match. The same table goes over HTTP/3 too
//! (`--http3`; h3curl, quic-go's client: images/server/h3interop/quicgo/h3curl), against HTTP/1.1 over TLS: the
//! status, the body and every field but `date` and `alt-svc`, sorted (that client keeps fields in a map). Also:
//! ALPN and h2c are off when asked, the metrics and the access log say HTTP/2 (and HTTP/3), and one connection
//! multiplexes many requests.

mod common;

use std::path::Path;
use std::process::Command;

use common::tls::{make_ca, make_leaf, run};
use common::{tempdir, Server};

struct Answer {
    version: String,
    status: u16,
    /// Lowercase names, in order; `date` left out (it may tick between the two requests).
    fields: Vec<(String, String)>,
    body: Vec<u8>,
}

/// One request with curl. `proto` is a curl flag: `--http1.1`, `--http2` (ALPN) or `--http2-prior-knowledge`.
fn curl(proto: &str, ca: Option<&Path>, url: &str, method: &str, headers: &[(&str, &str)]) -> Answer {
    // One directory per call: the tests run in parallel.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = tempdir(&format!("h2-curl-{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    let (head, body) = (dir.join("head"), dir.join("body"));
    let mut c = Command::new("curl");
    c.args(["-sS", proto, "-D"]).arg(&head).arg("-o").arg(&body);
    if let Some(ca) = ca {
        c.arg("--cacert").arg(ca);
    }
    match method {
        "HEAD" => {
            c.arg("--head");
        }
        "GET" => {}
        m => {
            c.args(["-X", m]);
        }
    }
    for (k, v) in headers {
        c.args(["-H", &format!("{k}: {v}")]);
    }
    c.arg(url);
    let out = run(&mut c);
    assert!(out.status.success(), "curl {proto} {method} {url}: {}", String::from_utf8_lossy(&out.stderr));
    read_answer(&head, &body, method)
}

/// One request over HTTP/3 with h3curl (images/server/h3interop/quicgo/h3curl: quic-go's client, curl's `-D`/`-o`
/// output), to 127.0.0.1 with `localhost` as the certificate's name and `:authority`, as curl sends for
/// `https://localhost:PORT`. `make server-test` builds it and names it in HYPERSTATIC_H3CURL.
fn h3curl(ca: &Path, port: u16, path: &str, method: &str, headers: &[(&str, &str)]) -> Answer {
    let bin = std::env::var("HYPERSTATIC_H3CURL")
        .expect("HYPERSTATIC_H3CURL names h3curl: run through `make server-test`, which builds it");
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = tempdir(&format!("h3-curl-{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    let (head, body) = (dir.join("head"), dir.join("body"));
    let mut c = Command::new(bin);
    c.arg("-ca-pem").arg(ca).args(["-server-name", "localhost", "-X", method, "-D"]).arg(&head).arg("-o").arg(&body);
    for (k, v) in headers {
        c.args(["-H", &format!("{k}: {v}")]);
    }
    c.arg(format!("https://127.0.0.1:{port}{path}"));
    let out = run(&mut c);
    assert!(out.status.success(), "h3curl {method} {path}: {}", String::from_utf8_lossy(&out.stderr));
    read_answer(&head, &body, method)
}

/// An answer from curl's (or h3curl's) `-D` head file and `-o` body file.
fn read_answer(head: &Path, body: &Path, method: &str) -> Answer {
    let head = std::fs::read_to_string(head).unwrap();
    let mut lines = head.lines();
    let status_line = lines.next().unwrap();
    let mut parts = status_line.split(' ');
    let version = parts.next().unwrap().to_string();
    let status = parts.next().unwrap().parse().unwrap();
    let fields = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.to_ascii_lowercase(), v.trim().to_string())
        })
        .filter(|(n, _)| n != "date")
        .collect();
    // With --head curl writes the head to the body file too: a HEAD answer has no body.
    let body = if method == "HEAD" { Vec::new() } else { std::fs::read(body).unwrap_or_default() };
    Answer { version, status, fields, body }
}

fn site(name: &str) -> common::Site {
    let s = tempdir(name);
    let d: &Path = &s;
    std::fs::create_dir_all(d.join("dir")).unwrap();
    std::fs::write(d.join("index.html"), "<!doctype html><p>home</p>\n").unwrap();
    std::fs::write(d.join("dir/index.html"), "dir").unwrap();
    std::fs::write(d.join("about.html"), "about").unwrap();
    std::fs::write(d.join("404.html"), "<p>custom not found</p>").unwrap();
    std::fs::write(d.join("a.css"), "a { color: red }\n".repeat(400)).unwrap();
    // A precompressed sibling the server serves as is.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, "p { margin: 0 }\n".repeat(300).as_bytes()).unwrap();
    std::fs::write(d.join("p.txt"), "p { margin: 0 }\n".repeat(300)).unwrap();
    std::fs::write(d.join("p.txt.gz"), gz.finish().unwrap()).unwrap();
    // Over --max-memory-file-size: served from disk, and larger than every default HTTP/2 window.
    let big: Vec<u8> = (0..700_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(d.join("big.bin"), big).unwrap();
    std::fs::write(d.join("_redirects"), "/old/* /new/:splat 302\n/rw /a.css 200\n/gone /about 301\n").unwrap();
    std::fs::write(d.join("_headers"), "/a.css\n  X-Test: yes\n").unwrap();
    s
}

/// (method, path, request headers).
type Row = (&'static str, &'static str, Vec<(&'static str, &'static str)>);

/// One row per behaviour a site relies on.
fn table() -> Vec<Row> {
    vec![
        ("GET", "/", vec![]),
        ("HEAD", "/", vec![]),
        ("GET", "/dir", vec![]),
        ("GET", "/dir?q=1", vec![]),
        ("GET", "/dir/", vec![]),
        ("GET", "/a.css", vec![]),
        ("GET", "/a.css", vec![("accept-encoding", "br")]),
        ("GET", "/a.css", vec![("accept-encoding", "zstd")]),
        ("GET", "/a.css", vec![("accept-encoding", "gzip")]),
        ("GET", "/a.css", vec![("accept-encoding", "gzip, br;q=0")]),
        ("HEAD", "/a.css", vec![("accept-encoding", "br")]),
        ("GET", "/p.txt", vec![("accept-encoding", "gzip")]),
        ("GET", "/a.css", vec![("if-none-match", "*")]),
        ("GET", "/a.css", vec![("if-modified-since", "Fri, 01 Jan 2100 00:00:00 GMT")]),
        ("GET", "/a.css", vec![("if-match", "\"nope\"")]),
        ("GET", "/a.css", vec![("range", "bytes=0-9")]),
        ("GET", "/a.css", vec![("range", "bytes=-5")]),
        ("GET", "/a.css", vec![("range", "bytes=99999-")]),
        ("GET", "/a.css", vec![("range", "bytes=0-1,5-6")]),
        ("HEAD", "/a.css", vec![("range", "bytes=0-9")]),
        ("GET", "/big.bin", vec![]),
        ("GET", "/big.bin", vec![("range", "bytes=100000-400000")]),
        ("GET", "/old/x/y?z=1", vec![]),
        ("GET", "/rw", vec![]),
        ("GET", "/gone", vec![]),
        ("GET", "/about", vec![]),
        ("GET", "/about.html", vec![]),
        ("GET", "/missing.png", vec![]),
        ("HEAD", "/missing.png", vec![]),
        ("GET", "/app/route", vec![("accept", "text/html")]),
        ("OPTIONS", "/", vec![]),
        ("OPTIONS", "/a.css", vec![("origin", "https://ok.test"), ("access-control-request-method", "GET")]),
        ("OPTIONS", "/a.css", vec![("origin", "https://no.test"), ("access-control-request-method", "GET")]),
        ("GET", "/a.css", vec![("origin", "https://ok.test")]),
        ("POST", "/", vec![]),
        ("DELETE", "/a.css", vec![]),
        ("GET", "/%2e%2e/etc/passwd", vec![]),
        ("GET", "/a%00b", vec![]),
    ]
}

fn compare(s: &Server, ca: &Path, https: bool) {
    for (method, path, headers) in table() {
        let (base, h1, h2) = if https {
            (format!("https://localhost:{}", s.https), "--http1.1", "--http2")
        } else {
            (format!("http://127.0.0.1:{}", s.port), "--http1.1", "--http2-prior-knowledge")
        };
        let url = format!("{base}{path}");
        let ca = https.then_some(ca);
        let a = curl(h1, ca, &url, method, &headers);
        let b = curl(h2, ca, &url, method, &headers);
        let what = format!("{method} {path} {headers:?} (https: {https})");
        assert_eq!(a.version, "HTTP/1.1", "{what}");
        assert_eq!(b.version, "HTTP/2", "{what}");
        assert_eq!(a.status, b.status, "{what}");
        assert_eq!(a.fields, b.fields, "{what}");
        assert_eq!(a.body, b.body, "{what}: bodies differ ({} vs {} bytes)", a.body.len(), b.body.len());
    }
}

fn start(site: &Path, ca_dir: &Path, extra: &[&str]) -> (Server, std::path::PathBuf) {
    let ca = make_ca(ca_dir);
    let (crt, key) = make_leaf(ca_dir, "leaf", 2);
    let (crt, key) = (crt.display().to_string(), key.display().to_string());
    let mut args = vec![
        "--tls-cert",
        &crt,
        "--tls-key",
        &key,
        "--tls-listen",
        "127.0.0.1:0",
        "--hsts",
        "max-age=600",
        "--max-memory-file-size",
        "100000",
        "--not-found-page",
        "/404.html",
        "--spa-fallback",
        "--clean-urls",
        "--cors",
        "/a.css=https://ok.test;methods=GET",
        "--access-log",
    ];
    args.extend_from_slice(extra);
    (Server::start(site, &args), ca)
}

#[test]
fn every_answer_is_the_same_over_h2_as_over_http1() {
    let site = site("h2-site-same");
    let certs = tempdir("h2-certs");
    let (s, ca) = start(&site, &certs, &["--h2c"]);
    s.wait_encoded();
    compare(&s, &ca, true);
    compare(&s, &ca, false);
    // Every HTTP/2 request was counted by transport, and the access log says which protocol carried it.
    let rows = table().len() as f64;
    assert_eq!(s.metric("hyperstatic_http2_streams_total{transport=\"tls\"}"), rows);
    assert_eq!(s.metric("hyperstatic_http2_streams_total{transport=\"cleartext\"}"), rows);
    assert_eq!(s.metric("hyperstatic_http2_connections_total{transport=\"tls\"}"), rows);
    common::wait_for("HTTP/2.0 in the access log", || s.log_contains("\"protocol\":\"HTTP/2.0\""));
    assert!(s.log_contains("\"protocol\":\"HTTP/1.1\""));
}

/// The same table over HTTP/3 (issue 42) against HTTP/1.1 over TLS: status, body and every field but `date` and
/// `alt-svc` (answers over HTTP/3 do not advertise HTTP/3), compared sorted: quic-go's client keeps a response's
/// fields in a map. The requests are counted as HTTP/3 and access-logged so.
#[test]
fn every_answer_is_the_same_over_h3_as_over_http1() {
    let site = site("h2-site-same-h3");
    let certs = tempdir("h3-certs");
    let (s, ca) = start(&site, &certs, &["--http3"]);
    s.wait_encoded();
    let sorted = |a: &Answer| {
        let mut f: Vec<_> = a.fields.iter().filter(|(n, _)| n != "alt-svc").cloned().collect();
        f.sort();
        f
    };
    for (method, path, headers) in table() {
        let a = curl("--http1.1", Some(&ca), &format!("https://localhost:{}{path}", s.https), method, &headers);
        let b = h3curl(&ca, s.https, path, method, &headers);
        let what = format!("{method} {path} {headers:?}");
        assert_eq!(b.version, "HTTP/3", "{what}");
        assert_eq!(a.status, b.status, "{what}");
        assert_eq!(sorted(&a), sorted(&b), "{what}");
        assert!(a.fields.iter().any(|(n, _)| n == "alt-svc"), "{what}: HTTP/1.1 over TLS advertises HTTP/3");
        assert_eq!(a.body, b.body, "{what}: bodies differ ({} vs {} bytes)", a.body.len(), b.body.len());
    }
    common::wait_for("HTTP/3.0 in the access log", || s.log_contains("\"protocol\":\"HTTP/3.0\""));
}

#[test]
fn one_connection_multiplexes_many_requests() {
    let site = site("h2-site-mux");
    let certs = tempdir("h2-certs-mux");
    let (s, ca) = start(&site, &certs, &[]);
    let url = format!("https://localhost:{}/a.css", s.https);
    let mut c = Command::new("curl");
    c.args(["-sS", "--http2", "--parallel", "--parallel-max", "50", "--cacert"]).arg(&ca);
    c.args(["-w", "%{http_version} %{http_code}\\n"]);
    for _ in 0..40 {
        c.args(["-o", "/dev/null", &url]);
    }
    let out = run(&mut c);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 40, "{text}");
    assert!(text.lines().all(|l| l == "2 200"), "{text}");
    assert_eq!(s.metric("hyperstatic_http2_streams_total{transport=\"tls\"}"), 40.0);
    // curl multiplexed them all on one connection.
    assert_eq!(s.metric("hyperstatic_http2_connections_total{transport=\"tls\"}"), 1.0);
}

#[test]
fn http2_off_offers_http1_only_and_h2c_is_off_by_default() {
    let site = site("h2-site-off");
    let certs = tempdir("h2-certs-off");
    let (s, ca) = start(&site, &certs, &["--http2=false"]);
    let a = curl("--http2", Some(&ca), &format!("https://localhost:{}/", s.https), "GET", &[]);
    assert_eq!((a.version.as_str(), a.status), ("HTTP/1.1", 200));
    // Without --h2c the preface is just a request the HTTP/1.1 parser does not take.
    let mut c = Command::new("curl");
    c.args(["-sS", "--http2-prior-knowledge", &format!("http://127.0.0.1:{}/", s.port)]);
    assert!(!run(&mut c).status.success(), "h2c must be off by default");
    assert_eq!(s.metric("hyperstatic_http2_connections_total{transport=\"tls\"}"), 0.0);
    assert_eq!(s.metric("hyperstatic_http2_connections_total{transport=\"cleartext\"}"), 0.0);
}

#[test]
fn https_redirect_is_the_same_over_h2c() {
    let site = site("h2-site-redirect");
    let certs = tempdir("h2-certs-redirect");
    let (s, _ca) = start(&site, &certs, &["--h2c", "--https-redirect", "--https-redirect-port", "8443"]);
    for (method, path) in [("GET", "/a.css?x=1"), ("HEAD", "/"), ("POST", "/dir"), ("DELETE", "/x?y=1")] {
        let url = format!("http://127.0.0.1:{}{path}", s.port);
        let host = [("host", "site.test:8080")];
        let a = curl("--http1.1", None, &url, method, &host);
        let b = curl("--http2-prior-knowledge", None, &url, method, &host);
        assert_eq!((a.status, b.status), (308, 308), "{method} {path}");
        assert_eq!(a.fields, b.fields, "{method} {path}");
        assert_eq!(a.body, b.body);
        let location = b.fields.iter().find(|(n, _)| n == "location").map(|(_, v)| v.as_str());
        assert_eq!(location, Some(format!("https://site.test:8443{path}").as_str()));
    }
}
