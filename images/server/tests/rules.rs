//! Site rules against the real binary: redirects and rewrites (`_redirects` and `--redirect`), clean URLs,
//! the SPA fallback for navigations only, error pages per prefix and status; bad rules at start and on reload.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn site(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hs-rules-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for (p, body) in files {
        let f = d.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, body).unwrap();
    }
    d
}

const REDIRECTS: &str = "\
# A migrated Netlify file
/old              /new.html
/temp             /new.html          302
/blog/*           /news/:splat       308
/:year/:month/:slug  /posts/:slug?y=:year 307
/app/*            /app/index.html    200
/shadowed.html    /new.html
/forced.html      /new.html          301!
/go               https://example.com:8443/landing
";

fn rules_site(name: &str) -> PathBuf {
    site(
        name,
        &[
            ("index.html", "home"),
            ("new.html", "new page"),
            ("app/index.html", "the app"),
            ("shadowed.html", "shadowed stays"),
            ("forced.html", "never served"),
            ("_redirects", REDIRECTS),
        ],
    )
}

#[test]
fn redirects_and_rewrites_from_the_file_and_flags() {
    let root = rules_site("basic");
    let s = Server::start(&root, &["--redirect", "/old /from-flag.html 302", "--redirect", "/flag /new.html 307"]);
    // Flags come first: their /old wins over the file's.
    let r = s.get("/old", &[]);
    assert_eq!((r.status, r.header("Location")), (302, Some("/from-flag.html")));
    let r = s.get("/flag?a=1&b=2", &[]);
    assert_eq!((r.status, r.header("Location")), (307, Some("/new.html?a=1&b=2")), "the query is kept");
    let r = s.get("/temp", &[]);
    assert_eq!((r.status, r.header("Location"), r.body.len()), (302, Some("/new.html"), 0));
    let r = s.get("/blog/2024/01/post?ref=x", &[]);
    assert_eq!((r.status, r.header("Location")), (308, Some("/news/2024/01/post?ref=x")));
    let r = s.get("/2024/05/hello", &[]);
    assert_eq!((r.status, r.header("Location")), (307, Some("/posts/hello?y=2024")));
    let r = s.get("/2024/05/hello?x=1", &[]);
    assert_eq!(r.header("Location"), Some("/posts/hello?y=2024&x=1"), "a query in the target is extended");
    let r = s.get("/go", &[]);
    assert_eq!((r.status, r.header("Location")), (301, Some("https://example.com:8443/landing")));
    // A 200 rewrite: the target's bytes under the request's URL, with its validators.
    let r = s.get("/app/settings", &[]);
    assert_eq!((r.status, r.text().as_str(), r.header("Location")), (200, "the app", None));
    // First match wins: three segments under /app/ are the earlier /:year/:month/:slug rule's.
    assert_eq!(s.get("/app/settings/profile", &[]).status, 307);
    assert_eq!(r.header("ETag"), s.get("/app/index.html", &[]).header("ETag"));
    // Shadowing: a file that exists wins over a rule unless the rule is forced.
    assert_eq!(s.get("/shadowed.html", &[]).text(), "shadowed stays");
    let r = s.get("/forced.html", &[]);
    assert_eq!((r.status, r.header("Location")), (301, Some("/new.html")));
    // Captures are percent-encoded again in the Location: a decoded CR LF never becomes a header.
    let r = s.raw(b"GET /blog/a%0D%0ASet-Cookie:%20x=1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let text = String::from_utf8_lossy(&r);
    assert!(text.contains("Location: /news/a%0D%0ASet-Cookie:%20x=1\r\n"), "{text}");
    assert!(!text.contains("\r\nSet-Cookie"), "{text}");
    // The rules file is configuration, not content.
    assert_eq!(s.get("/_redirects", &[]).status, 404);
    assert_eq!(s.get("/unknown", &[]).status, 404);
    assert_eq!(s.metric("hyperstatic_redirect_rules"), 10.0);
    assert_eq!(s.metric("hyperstatic_requests_total{code=\"308\"}"), 2.0);
    drop(s);
    let (ok, text) = check(&root, &["--redirect", "/x /new.html"]);
    assert!(ok && text.contains("redirects: 9 rules"), "{text}");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn rewrites_never_leave_the_site() {
    let outer = site("escape", &[("secret.txt", "outside the root"), ("www/index.html", "home")]);
    let root = outer.join("www");
    std::fs::write(root.join("_redirects"), "/files/* /:splat 200\n/u/:id /users/:id 200\n").unwrap();
    let s = Server::start(&root, &[]);
    assert_eq!(s.get("/files/index.html", &[]).text(), "home");
    for p in ["/files/../secret.txt", "/files/%2e%2e/secret.txt", "/files/..%2fsecret.txt", "/files/../../secret.txt"] {
        let r = s.get(p, &[]);
        assert_ne!(r.text(), "outside the root", "{p}");
        assert!(r.status == 400 || r.status == 404, "{p}: {}", r.status);
    }
    assert_eq!(s.get("/files/secret.txt", &[]).status, 404, "a rewrite target is looked up in the site only");
    assert_eq!(s.get("/u/..%2e", &[]).status, 404);
    drop(s);
    // Escapes in a rule are load errors.
    for bad in ["/x/* /../secret.txt 200", "/x /a/../../secret.txt 200", "/x https://evil.example/ 200"] {
        std::fs::write(root.join("_redirects"), format!("{bad}\n")).unwrap();
        let out = check(&root, &[]);
        assert!(!out.0, "{bad}");
        assert!(out.1.contains("_redirects:1"), "{bad}: {}", out.1);
    }
    let _ = std::fs::remove_dir_all(outer);
}

/// `--check` on `root`: success and stdout.
fn check(root: &Path, extra: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
        .args(["--root", &root.display().to_string(), "--check"])
        .args(extra)
        .env_clear()
        .output()
        .unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_bad_rule_fails_the_start_with_file_and_line() {
    let root = site("badstart", &[("index.html", "home"), ("_redirects", "/a /b\n/c /d 302 Country=us\n")]);
    let out = Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
        .args(["--root", &root.display().to_string(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("_redirects:2: Country=us: conditions (Country=) are not supported"), "{err}");
    // A rewrite to a file the site does not have.
    std::fs::write(root.join("_redirects"), "/a /missing.html 200\n").unwrap();
    let (ok, text) = check(&root, &[]);
    assert!(
        !ok && text.contains("_redirects:1: /a /missing.html 200: rewrite target /missing.html is not a file"),
        "{text}"
    );
    // Flags are checked by the command line: exit 2, the flag named.
    std::fs::remove_file(root.join("_redirects")).unwrap();
    for bad in ["/a /b 303", "/a", "a /b", "/a /b 301 Language=en"] {
        let out = Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
            .args(["--root", &root.display().to_string(), "--check", "--redirect", bad])
            .env_clear()
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--redirect"), "{bad}");
    }
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_bad_rule_on_reload_keeps_the_previous_site_serving() {
    let root = site("reload", &[("index.html", "v1"), ("new.html", "new"), ("_redirects", "/old /new.html\n")]);
    let s = Server::start(&root, &[]);
    assert_eq!(s.get("/old", &[]).header("Location"), Some("/new.html"));
    // A good change is picked up (inotify).
    std::fs::write(root.join("_redirects"), "/old /new.html 302\n/other /new.html\n").unwrap();
    wait_for("the new rules", || s.get("/other", &[]).status == 301);
    assert_eq!(s.metric("hyperstatic_redirect_rules"), 2.0);
    // A bad one is not: content and rules stay as they were, and the log says why.
    // (The rules first: whichever reload the two writes trigger, each one sees the bad rules.)
    std::fs::write(root.join("_redirects"), "/old /new.html 302\n/x /y 418\n").unwrap();
    std::fs::write(root.join("index.html"), "v2").unwrap();
    wait_for("the failed reload", || s.metric("hyperstatic_reloads_total{result=\"failure\"}") >= 1.0);
    wait_for("the reason in the log", || s.log_contains("_redirects:2: status 418 is not supported"));
    assert_eq!(s.get("/", &[]).text(), "v1");
    assert_eq!(s.get("/old", &[]).status, 302);
    assert_eq!(s.get("/other", &[]).status, 301);
    // Fixed: served again.
    std::fs::write(root.join("_redirects"), "/old /new.html 308\n").unwrap();
    wait_for("the fixed rules", || s.get("/old", &[]).status == 308);
    assert_eq!(s.get("/", &[]).text(), "v2");
    assert_eq!(s.get("/other", &[]).status, 404);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn clean_urls_and_the_trailing_slash_policy() {
    let root = site(
        "clean",
        &[
            ("index.html", "home"),
            ("about.html", "about"),
            ("docs/index.html", "docs"),
            ("docs/intro.html", "intro"),
            ("both.html", "both file"),
            ("both/index.html", "both dir"),
            ("my page.html", "spaced"),
        ],
    );
    let s = Server::start(&root, &["--clean-urls"]);
    assert_eq!((s.get("/about", &[]).status, s.get("/about", &[]).text()), (200, "about".into()));
    let r = s.get("/about.html?x=1", &[]);
    assert_eq!((r.status, r.header("Location")), (301, Some("/about?x=1")));
    let r = s.get("/about/", &[]);
    assert_eq!((r.status, r.header("Location")), (301, Some("/about")));
    assert_eq!(s.get("/docs/intro", &[]).text(), "intro");
    let r = s.get("/docs", &[]);
    assert_eq!((r.status, r.header("Location")), (301, Some("/docs/")), "directories keep their slash");
    assert_eq!(s.get("/docs/", &[]).text(), "docs");
    let r = s.get("/docs/index.html", &[]);
    assert_eq!((r.status, r.header("Location")), (301, Some("/docs/")));
    let r = s.get("/index.html", &[]);
    assert_eq!((r.status, r.header("Location")), (301, Some("/")));
    // A canonical Location is percent-encoded.
    let r = s.get("/my%20page.html", &[]);
    assert_eq!((r.status, r.header("Location")), (301, Some("/my%20page")));
    assert_eq!(s.get("/my%20page", &[]).text(), "spaced");
    // A page beside a directory of the same name: /both is the directory's.
    assert_eq!(s.get("/both", &[]).status, 301);
    assert_eq!(s.get("/both/", &[]).text(), "both dir");
    assert_eq!(s.get("/both.html", &[]).text(), "both file");
    drop(s);
    let s = Server::start(&root, &[]);
    assert_eq!(s.get("/about", &[]).status, 404, "clean URLs are opt-in");
    assert_eq!(s.get("/about.html", &[]).text(), "about");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn the_spa_fallback_answers_navigations_only() {
    let root = site("spa", &[("index.html", "shell"), ("app.css", "css")]);
    let s = Server::start(&root, &["--spa-fallback"]);
    assert_eq!(s.get("/settings/profile", &[]).text(), "shell");
    assert_eq!(s.get("/settings/profile/", &[]).text(), "shell");
    assert_eq!(s.get("/app.js", &[]).status, 404);
    assert_eq!(s.get("/img/logo.png", &[("Accept", "image/avif,image/webp,*/*")]).status, 404);
    let nav = [("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")];
    assert_eq!(s.get("/users/jane.doe", &nav).text(), "shell");
    assert_eq!(s.get("/users/jane.doe", &[]).status, 404);
    assert_eq!(s.get("/app.css", &[]).text(), "css");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn error_pages_per_prefix_and_status() {
    let root = site(
        "errors",
        &[("index.html", "home"), ("404.html", "site 404"), ("docs/404.html", "docs 404"), ("405.html", "no")],
    );
    let s = Server::start(
        &root,
        &[
            "--not-found-page",
            "/404.html",
            "--error-page",
            "404 /docs/404.html /docs/",
            "--error-page",
            "405 /405.html",
        ],
    );
    let r = s.get("/docs/missing", &[]);
    assert_eq!((r.status, r.text().as_str()), (404, "docs 404"));
    assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
    let r = s.get("/missing", &[]);
    assert_eq!((r.status, r.text().as_str()), (404, "site 404"));
    let r = s.raw(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    let (rs, _) = parse_responses(&r, false);
    assert_eq!((rs[0].status, rs[0].text().as_str(), rs[0].header("Allow")), (405, "no", Some("GET, HEAD, OPTIONS")));
    let r = s.raw(b"HEAD /docs/x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let (rs, _) = parse_responses(&r, true);
    assert_eq!((rs[0].status, rs[0].body.len()), (404, 0));
    drop(s);
    let (ok, text) = check(&root, &["--error-page", "404 /nope.html /x/"]);
    assert!(!ok && text.contains("--error-page 404: /nope.html: no such file in the site"), "{text}");
    let _ = std::fs::remove_dir_all(root);
}

/// 405 pages are chosen by prefix like 404's, on the normalised path: a percent-encoded or dot-segment path is
/// under the prefix its normalised form is under.
#[test]
fn method_not_allowed_pages_per_prefix() {
    let root = site(
        "errors405",
        &[("index.html", "home"), ("405.html", "site 405"), ("docs/405.html", "docs 405"), ("docs/a.html", "a")],
    );
    let s = Server::start(&root, &["--error-page", "405 /405.html", "--error-page", "405 /docs/405.html /docs/"]);
    let post = |path: &str| {
        let r = s.raw(
            format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        let (mut rs, _) = parse_responses(&r, false);
        let r = rs.remove(0);
        assert_eq!((r.status, r.header("Allow")), (405, Some("GET, HEAD, OPTIONS")), "{path}");
        r.text()
    };
    assert_eq!(post("/docs/a.html"), "docs 405");
    assert_eq!(post("/docs/missing?q=1"), "docs 405");
    assert_eq!(post("/d%6Fcs/a.html"), "docs 405", "percent-encoded: normalised first");
    assert_eq!(post("/docs/../a.html"), "site 405", "dot segments: normalised first");
    assert_eq!(post("/"), "site 405");
    assert_eq!(post("/x/%2e%2e/docs/a.html"), "docs 405");
    let _ = std::fs::remove_dir_all(root);
}
