//! Skew protection (docs/design/deploys.md, decision 3) against the real binary: a Git content layout as the
//! puller leaves it (tests/common/deploys.rs) and a site value with `skewProtection`. A request the current tree
//! has no file for is answered from the previous trees whose window is open, newest first, with
//! `X-Hyperstatic-Deploy` and `Cache-Control: private, max-age=60`, over HTTP/1.1 and HTTP/2 alike (HTTP/3:
//! tests/h3.rs); a navigation or an HTML path never is; a tree past its window, a value without the setting, and a
//! malformed deploys.json give the usual 404 while the current tree keeps serving. The windows are written an hour
//! or more away from their edges: nothing here races the clock.

mod common;

use common::deploys::*;
use common::*;
use std::process::Command;

struct Layout {
    dir: Site,
    conf: Site,
    current: String,
    /// Ended a minute ago, ten minutes ago, two hours ago (the window is one hour).
    a: String,
    b: String,
    gone: String,
}

fn layout(name: &str) -> Layout {
    let dir = tempdir(&format!("skew-{name}"));
    let conf = tempdir(&format!("skew-{name}-conf"));
    let (current, a, b, gone) = (commit('d'), commit('c'), commit('b'), commit('a'));
    write_tree(&dir, &current, &[("index.html", "home d"), ("assets/app-d.js", "app d")]);
    write_tree(
        &dir,
        &a,
        &[
            ("index.html", "home c"),
            ("old.html", "old page c"),
            ("assets/app-c.js", "app c"),
            ("assets/shared.css", "shared c"),
            ("data/feed", "feed c"),
        ],
    );
    write_tree(&dir, &b, &[("assets/shared.css", "shared b"), ("assets/only-b.js", "only b")]);
    write_tree(&dir, &gone, &[("assets/gone.js", "gone a")]);
    std::os::unix::fs::symlink(dir.join(&a).join("old.html"), dir.join(&a).join("assets/link.js")).unwrap();
    flip(&dir, &current);
    write_deploys(&dir, &[(&current, None), (&b, Some(-600)), (&a, Some(-60)), (&gone, Some(-7200))]);
    std::fs::write(conf.join("site.json"), r#"{"version": 1, "skewProtection": {"window": "1h"}}"#).unwrap();
    Layout { dir, conf, current, a, b, gone }
}

fn start(l: &Layout, extra: &[&str]) -> Server {
    let site = l.conf.join("site.json").display().to_string();
    let mut args = vec!["--site", &site, "--h2c"];
    args.extend_from_slice(extra);
    Server::start(&l.dir.join("current"), &args)
}

/// A head without a body (HTTP/1.1).
fn head(s: &Server, path: &str) -> Response {
    let bytes = s.raw(format!("HEAD {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes());
    parse_responses(&bytes, true).0.remove(0)
}

#[test]
fn an_old_pages_assets_are_served_from_the_previous_deploys_within_the_window() {
    let l = layout("window");
    let s = start(&l, &[]);
    let r = s.get("/assets/app-c.js", &[("Accept", "*/*"), ("Sec-Fetch-Dest", "script")]);
    assert_eq!((r.status, r.text().as_str()), (200, "app c"));
    assert_eq!(r.header("X-Hyperstatic-Deploy"), Some(l.a.as_str()));
    assert_eq!(r.header("Cache-Control"), Some("private, max-age=60"));
    assert_eq!(r.header("Content-Type"), Some("text/javascript; charset=utf-8"));
    assert_eq!(r.header("Content-Length"), Some("5"));
    let h = head(&s, "/assets/app-c.js");
    assert_eq!((h.status, h.header("Content-Length"), h.body.len()), (200, Some("5"), 0), "HEAD: the length, no body");
    assert_eq!(h.header("X-Hyperstatic-Deploy"), Some(l.a.as_str()));

    // Newest first: both previous trees have it; the one that ended last answers.
    let r = s.get("/assets/shared.css", &[]);
    assert_eq!((r.status, r.text().as_str(), r.header("X-Hyperstatic-Deploy")), (200, "shared c", Some(l.a.as_str())));
    let r = s.get("/assets/only-b.js", &[]);
    assert_eq!((r.status, r.text().as_str(), r.header("X-Hyperstatic-Deploy")), (200, "only b", Some(l.b.as_str())));
    let r = s.get("/data/feed", &[("Accept", "application/json")]);
    assert_eq!(
        (r.status, r.header("Content-Type")),
        (200, Some("application/octet-stream")),
        "an extension-less asset"
    );

    // The current tree answers its own files as ever: no mark.
    let r = s.get("/assets/app-d.js", &[]);
    assert_eq!((r.status, r.text().as_str(), r.header("X-Hyperstatic-Deploy")), (200, "app d", None));

    // Past its window (ended two hours ago, window one hour): 404.
    assert_eq!(s.get("/assets/gone.js", &[]).status, 404, "{}", l.gone);
    // Nothing found anywhere, and a symlink in a previous tree (never followed): 404.
    assert_eq!(s.get("/assets/none.js", &[]).status, 404);
    assert_eq!(s.get("/assets/link.js", &[]).status, 404);
    assert_ne!(s.get("/assets/../../../etc/passwd", &[]).status, 200);
}

#[test]
fn navigations_and_html_paths_are_never_stale() {
    let l = layout("nav");
    let s = start(&l, &[]);
    for (path, headers) in [
        ("/assets/app-c.js", &[("Sec-Fetch-Dest", "document")][..]),
        ("/assets/app-c.js", &[("Sec-Fetch-Dest", "iframe")][..]),
        ("/assets/app-c.js", &[("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")][..]),
        ("/old.html", &[][..]),
        ("/old.html", &[("Accept", "*/*"), ("Sec-Fetch-Dest", "empty")][..]),
        ("/OLD.HTML", &[][..]),
    ] {
        let r = s.get(path, headers);
        assert_eq!((r.status, r.header("X-Hyperstatic-Deploy")), (404, None), "{path} {headers:?}");
    }
}

#[test]
fn off_by_default_and_live_with_the_site_value() {
    let l = layout("live");
    std::fs::write(l.conf.join("site.json"), r#"{"version": 1}"#).unwrap();
    let s = start(&l, &[]);
    assert_eq!(s.get("/assets/app-c.js", &[]).status, 404, "off: the usual 404");
    std::fs::write(l.conf.join("site.json"), r#"{"version": 1, "skewProtection": {"window": "1h"}}"#).unwrap();
    wait_for("the value turning skew protection on", || s.get("/assets/app-c.js", &[]).status == 200);
    // A window of five minutes: b (ended ten minutes ago) is past it, c (a minute ago) within.
    std::fs::write(l.conf.join("site.json"), r#"{"version": 1, "skewProtection": {"window": "5m"}}"#).unwrap();
    wait_for("the shorter window", || s.get("/assets/only-b.js", &[]).status == 404);
    assert_eq!(s.get("/assets/app-c.js", &[]).status, 200, "a minute ago is within five");
    // A refused value (past 7 days) keeps the last good one serving, and says so in /load-error.
    std::fs::write(l.conf.join("site.json"), r#"{"version": 1, "skewProtection": {"window": "169h"}}"#).unwrap();
    wait_for("the refusal", || s.admin_get("/load-error").text().contains("skewProtection.window"));
    assert_eq!(s.get("/assets/app-c.js", &[]).status, 200);
}

#[test]
fn a_bad_deploys_file_keeps_the_site_serving_without_skew_protection() {
    let l = layout("bad");
    write_raw_deploys(&l.dir, &format!(r#"{{"deploys":[{{"tree":"../{}","commit":"x"}}]}}"#, l.a));
    let s = start(&l, &[]);
    assert_eq!(s.get("/index.html", &[]).text(), "home d", "the current tree serves");
    assert_eq!(s.get("/assets/app-c.js", &[]).status, 404);
    wait_for("the log naming the file", || s.log_contains("deploys refused") && s.log_contains("deploys[0].tree"));
    // Fixed with the next deploy (the puller writes the file, then flips): on again.
    write_deploys(&l.dir, &[(&l.current, Some(-1)), (&l.a, Some(-60))]);
    flip(&l.dir, &l.a);
    wait_for("the flip", || s.get("/index.html", &[]).text() == "home c");
    let r = s.get("/assets/app-d.js", &[]);
    assert_eq!((r.status, r.header("X-Hyperstatic-Deploy")), (200, Some(l.current.as_str())), "the tree just replaced");
    assert_eq!(s.get("/assets/app-c.js", &[]).header("X-Hyperstatic-Deploy"), None, "now current: not stale");
}

/// HTTP/2 (h2c with prior knowledge, curl as the client) gets the same answers: the core decides, the protocol
/// only frames.
#[test]
fn http2_gets_the_same_answers() {
    let l = layout("h2");
    let s = start(&l, &[]);
    let curl = |path: &str, headers: &[&str]| -> (String, String) {
        let mut c = Command::new("curl");
        c.args(["-sS", "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null"]);
        for h in headers {
            c.args(["-H", h]);
        }
        let out = c.arg(format!("http://127.0.0.1:{}{path}", s.port)).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let head = String::from_utf8(out.stdout).unwrap().to_ascii_lowercase();
        (head.lines().next().unwrap_or("").trim().to_string(), head)
    };
    let (status, head) = curl("/assets/app-c.js", &["Sec-Fetch-Dest: script"]);
    assert_eq!(status, "http/2 200");
    assert!(head.contains(&format!("x-hyperstatic-deploy: {}", l.a)), "{head}");
    assert!(head.contains("cache-control: private, max-age=60") && head.contains("content-length: 5"), "{head}");
    assert!(head.contains("content-type: text/javascript; charset=utf-8"), "{head}");
    assert_eq!(curl("/assets/app-c.js", &["Sec-Fetch-Dest: document"]).0, "http/2 404");
    assert_eq!(curl("/old.html", &[]).0, "http/2 404");
    assert_eq!(curl("/assets/gone.js", &[]).0, "http/2 404");
}
