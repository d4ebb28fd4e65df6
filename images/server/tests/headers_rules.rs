//! Headers per path against the real binary: the site's `_headers` file (Netlify / Cloudflare Pages format),
//! `--header` rules scoped by glob, the default security headers and their precedence; `_headers` is never
//! served, and a bad `_headers` on reload keeps the previous content serving with the line named in the log.

mod common;

use std::time::{Duration, Instant};

use common::{tempdir, Server};

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

const HEADERS: &str = "\
# the site's own rules
/*
  X-Frame-Options: DENY
  X-Robots-Tag: all

/fonts/*
  Access-Control-Allow-Origin: *
  Cache-Control: public, max-age=31536000, immutable

/blog/:year/:slug
  X-Post: :year/:slug
  ! X-Robots-Tag

/docs/
  Link: </docs/style.css>; rel=preload; as=style

/feed
  Content-Type: application/rss+xml
";

fn site(name: &str) -> common::Site {
    let d = tempdir(name);
    for dir in ["fonts", "blog/2024", "docs"] {
        std::fs::create_dir_all(d.join(dir)).unwrap();
    }
    std::fs::write(d.join("index.html"), "home").unwrap();
    std::fs::write(d.join("fonts/a.woff2"), "font").unwrap();
    std::fs::write(d.join("blog/2024/hello.html"), "post").unwrap();
    std::fs::write(d.join("docs/index.html"), "docs").unwrap();
    std::fs::write(d.join("feed"), "<rss/>").unwrap();
    std::fs::write(d.join("_headers"), HEADERS).unwrap();
    d
}

#[test]
fn headers_file_rules_apply_per_path_and_the_file_is_not_served() {
    let d = site("headers-file");
    let s = Server::start(&d, &[]);
    let home = s.get("/", &[]);
    assert_eq!((home.header("x-frame-options"), home.header("x-robots-tag")), (Some("DENY"), Some("all")));
    assert_eq!(home.header("access-control-allow-origin"), None);
    assert_eq!(home.header("cache-control"), Some("no-cache"));

    let font = s.get("/fonts/a.woff2", &[]);
    assert_eq!(font.header("access-control-allow-origin"), Some("*"));
    assert_eq!(font.header("cache-control"), Some("public, max-age=31536000, immutable"), "replaces the default");
    assert_eq!(font.header("x-frame-options"), Some("DENY"), "blocks add up");

    let post = s.get("/blog/2024/hello.html", &[]);
    assert_eq!(post.header("x-post"), Some("2024/hello.html"), "placeholders substituted");
    assert_eq!(post.header("x-robots-tag"), None, "detached by `! X-Robots-Tag`");

    let docs = s.get("/docs/", &[]);
    assert_eq!(docs.header("link"), Some("</docs/style.css>; rel=preload; as=style"), "index.html at /docs/");
    assert_eq!(s.get("/feed", &[]).header("content-type"), Some("application/rss+xml"));

    // A 304 carries the rule headers too (they are part of the precomputed blocks).
    let etag = font.header("etag").unwrap().to_string();
    let nm = s.get("/fonts/a.woff2", &[("If-None-Match", &etag)]);
    assert_eq!((nm.status, nm.header("access-control-allow-origin")), (304, Some("*")));

    assert_eq!(s.get("/_headers", &[]).status, 404, "_headers itself is not served");
    assert_eq!(s.metric("hyperstatic_content_files"), 5.0);
}

#[test]
fn header_flags_scope_by_glob_and_win_over_the_file_and_the_defaults() {
    let d = site("headers-flags");
    let s = Server::start(
        &d,
        &[
            "--security-headers",
            "--header",
            "/fonts/**=Access-Control-Allow-Origin: https://fonts.example",
            "--header",
            "*.html=X-Frame-Options: SAMEORIGIN",
            "--header",
            "Referrer-Policy: no-referrer",
        ],
    );
    let home = s.get("/index.html", &[]);
    assert_eq!(home.header("x-content-type-options"), Some("nosniff"), "a default");
    assert_eq!(home.header("permissions-policy"), Some("camera=(), microphone=(), geolocation=(), payment=(), usb=()"));
    assert_eq!(home.header("referrer-policy"), Some("no-referrer"), "the user's header replaces the default");
    assert_eq!(home.header("x-frame-options"), Some("SAMEORIGIN"), "--header wins over _headers");
    assert_eq!(home.header("content-security-policy"), None, "no default CSP");
    let font = s.get("/fonts/a.woff2", &[]);
    assert_eq!(font.header("access-control-allow-origin"), Some("https://fonts.example"));
    assert_eq!(font.header("x-frame-options"), Some("DENY"), "*.html does not match a font");
    assert_eq!(s.get("/feed", &[]).header("x-frame-options"), Some("DENY"));
    let count = home.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case("referrer-policy")).count();
    assert_eq!(count, 1, "one Referrer-Policy, not the default and the user's");

    // The defaults are on without the flag (the operator relies on it); --security-headers=false turns them off.
    let default = Server::start(&d, &[]);
    assert_eq!(default.get("/index.html", &[]).header("x-content-type-options"), Some("nosniff"));
    let plain = Server::start(&d, &["--security-headers=false"]);
    assert_eq!(plain.get("/index.html", &[]).header("x-content-type-options"), None);
}

#[test]
fn a_bad_headers_file_on_reload_keeps_the_previous_content() {
    let d = site("headers-reload");
    let s = Server::start(&d, &[]);
    assert_eq!(s.get("/", &[]).header("x-frame-options"), Some("DENY"));
    std::fs::write(d.join("index.html"), "new home").unwrap();
    std::fs::write(d.join("_headers"), "/*\n  X-Frame-Options: DENY\n  Content-Length: 5\n").unwrap();
    s.signal(libc::SIGHUP);
    wait_for("a failed reload", || s.metric("hyperstatic_reloads_total{result=\"failure\"}") >= 1.0);
    wait_for("the log line naming the line", || s.log_contains("_headers:3: Content-Length is set by the server"));
    let r = s.get("/", &[]);
    assert_eq!((r.text().as_str(), r.header("x-frame-options")), ("home", Some("DENY")), "the old content serves");
    // Fixed: the next reload takes the new content and the new rules.
    std::fs::write(d.join("_headers"), "/*\n  X-Frame-Options: SAMEORIGIN\n").unwrap();
    s.signal(libc::SIGHUP);
    wait_for("the fixed content", || s.get("/", &[]).text() == "new home");
    assert_eq!(s.get("/", &[]).header("x-frame-options"), Some("SAMEORIGIN"));
}

#[test]
fn check_reports_a_bad_headers_file_with_its_line() {
    let d = tempdir("headers-check");
    std::fs::write(d.join("index.html"), "x").unwrap();
    std::fs::write(d.join("_headers"), "/ok\n  X-A: 1\nhttps://example.com/*\n  X-B: 2\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
        .args(["--check", "--root", d.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("_headers:3: ") && text.contains("absolute URLs"), "{text}");
}
