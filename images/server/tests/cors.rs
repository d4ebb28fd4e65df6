//! CORS and OPTIONS against the real binary: preflights granted and refused per `--cors` rule, simple requests
//! getting `Access-Control-Allow-Origin` only for listed origins (with `Vary: Origin`), `*` rules, and
//! `OPTIONS *` / `OPTIONS /path` answered 204 with `Allow`, never 405.

mod common;

use common::{parse_responses, tempdir, Response, Server};

fn site(name: &str) -> common::Site {
    let d = tempdir(name);
    std::fs::create_dir_all(d.join("fonts")).unwrap();
    std::fs::create_dir_all(d.join("api")).unwrap();
    std::fs::write(d.join("index.html"), "home").unwrap();
    std::fs::write(d.join("fonts/a.woff2"), "font").unwrap();
    std::fs::write(d.join("api/data.json"), "{}").unwrap();
    d
}

const RULES: [&str; 4] = [
    "--cors",
    "/fonts/**=*;max-age=86400",
    "--cors",
    "/api/**=https://app.example, http://localhost:3000;methods=GET,HEAD;headers=X-Token,Content-Type;max-age=600",
];

/// Sends one raw request and returns its response (`Connection: close` keeps reading simple).
fn send(s: &Server, head: &str) -> Response {
    let raw = s.raw(format!("{head}Connection: close\r\n\r\n").as_bytes());
    let (mut rs, _) = parse_responses(&raw, true);
    assert_eq!(rs.len(), 1, "{}", String::from_utf8_lossy(&raw));
    rs.remove(0)
}

fn preflight(s: &Server, path: &str, origin: &str, method: &str) -> Response {
    send(
        s,
        &format!(
            "OPTIONS {path} HTTP/1.1\r\nHost: a\r\nOrigin: {origin}\r\nAccess-Control-Request-Method: {method}\r\nAccess-Control-Request-Headers: x-token\r\n"
        ),
    )
}

#[test]
fn preflights_are_granted_per_origin_and_method() {
    let d = site("cors-preflight");
    let s = Server::start(&d, &RULES);
    let ok = preflight(&s, "/api/data.json", "https://app.example", "GET");
    assert_eq!(ok.status, 204);
    assert_eq!(ok.header("access-control-allow-origin"), Some("https://app.example"));
    assert_eq!(ok.header("access-control-allow-methods"), Some("GET, HEAD"));
    assert_eq!(ok.header("access-control-allow-headers"), Some("X-Token, Content-Type"));
    assert_eq!(ok.header("access-control-max-age"), Some("600"));
    assert_eq!(ok.header("vary"), Some("Origin"));
    assert_eq!(ok.header("allow"), Some("GET, HEAD, OPTIONS"));
    assert_eq!(ok.header("content-length"), None, "a 204 has no Content-Length");
    assert!(ok.body.is_empty());
    let local = preflight(&s, "/api/data.json", "http://localhost:3000", "HEAD");
    assert_eq!(local.header("access-control-allow-origin"), Some("http://localhost:3000"));

    for (origin, method, why) in [
        ("https://evil.example", "GET", "an origin not listed"),
        ("https://app.example.evil", "GET", "origins are exact strings"),
        ("https://app.example", "PUT", "a method not allowed"),
    ] {
        let no = preflight(&s, "/api/data.json", origin, method);
        assert_eq!(no.status, 204, "{why}");
        assert_eq!(no.header("access-control-allow-origin"), None, "{why}");
        assert_eq!(no.header("access-control-allow-methods"), None, "{why}");
        assert_eq!(no.header("vary"), Some("Origin"), "{why}");
    }
    let font = preflight(&s, "/fonts/a.woff2", "https://anyone.example", "GET");
    assert_eq!(font.header("access-control-allow-origin"), Some("*"));
    assert_eq!(font.header("access-control-max-age"), Some("86400"));
    assert_eq!(font.header("vary"), None, "a * answer does not depend on the origin");
    let uncovered = preflight(&s, "/index.html", "https://app.example", "GET");
    assert_eq!((uncovered.status, uncovered.header("access-control-allow-origin")), (204, None));
}

#[test]
fn simple_requests_get_the_origin_they_are_allowed() {
    let d = site("cors-simple");
    let s = Server::start(&d, &RULES);
    let r = s.get("/api/data.json", &[("Origin", "https://app.example")]);
    assert_eq!((r.status, r.text().as_str()), (200, "{}"));
    assert_eq!(r.header("access-control-allow-origin"), Some("https://app.example"));
    assert_eq!(r.header("vary"), Some("Origin"));
    let other = s.get("/api/data.json", &[("Origin", "https://evil.example")]);
    assert_eq!((other.header("access-control-allow-origin"), other.header("vary")), (None, Some("Origin")));
    let none = s.get("/api/data.json", &[]);
    assert_eq!((none.header("access-control-allow-origin"), none.header("vary")), (None, Some("Origin")));
    // Conditional and partial responses carry it as well.
    let etag = r.header("etag").unwrap().to_string();
    let nm = s.get("/api/data.json", &[("Origin", "http://localhost:3000"), ("If-None-Match", &etag)]);
    assert_eq!((nm.status, nm.header("access-control-allow-origin")), (304, Some("http://localhost:3000")));
    let part = s.get("/api/data.json", &[("Origin", "https://app.example"), ("Range", "bytes=0-0")]);
    assert_eq!((part.status, part.header("access-control-allow-origin")), (206, Some("https://app.example")));
    // `*` rules: on every response of the file, asked or not.
    let font = s.get("/fonts/a.woff2", &[]);
    assert_eq!((font.header("access-control-allow-origin"), font.header("vary")), (Some("*"), None));
    assert_eq!(s.get("/index.html", &[("Origin", "https://app.example")]).header("access-control-allow-origin"), None);
}

#[test]
fn options_answers_allow_and_never_405() {
    let d = site("cors-options");
    let s = Server::start(&d, &[]);
    for target in ["*", "/", "/index.html", "/no/such/path", "/fonts"] {
        let r = send(&s, &format!("OPTIONS {target} HTTP/1.1\r\nHost: a\r\n"));
        assert_eq!(r.status, 204, "OPTIONS {target}");
        assert_eq!(r.header("allow"), Some("GET, HEAD, OPTIONS"), "OPTIONS {target}");
        assert_eq!(r.header("access-control-allow-origin"), None);
    }
    // Keep-alive holds across an OPTIONS (no body to confuse the framing).
    let raw =
        s.raw(b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\nGET /index.html HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let (rs, _) = parse_responses(&raw, false);
    assert_eq!(rs.iter().map(|r| r.status).collect::<Vec<_>>(), vec![204, 200]);
    assert_eq!(rs[1].text(), "home");
    assert_eq!(send(&s, "OPTIONS /../x HTTP/1.1\r\nHost: a\r\n").status, 400);
    let post = send(&s, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n");
    assert_eq!((post.status, post.header("allow")), (405, Some("GET, HEAD, OPTIONS")));
    assert_eq!(s.metric("hyperstatic_requests_total{code=\"204\"}"), 6.0, "five targets and the pipelined one");
}

#[test]
fn bad_cors_rules_fail_at_start_naming_the_flag() {
    let d = site("cors-bad");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
        .args(["--check", "--root", d.to_str().unwrap(), "--cors", "/api/**=app.example"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--cors") && err.contains("scheme://host"), "{err}");
}
