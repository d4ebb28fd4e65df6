//! A hostile client (or a hostile site author) against the real binary: no redirect leaves the site, file names
//! with control characters never reach a header or a /content line, and a symlink swapped while a reload reads
//! the tree never gets a file outside the root served. The memory side of hostile clients (connection floods,
//! slow readers across reloads) is in hostile_memory.rs.

mod common;

use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A Location a browser resolves to another host: a network-path reference (`//host`, `/\host`, `\\host`) or a
/// URL with a scheme.
fn leaves_the_site(location: &str) -> bool {
    let l = location.as_bytes();
    matches!(l, [b'/' | b'\\', b'/' | b'\\', ..]) || location.contains("://")
}

#[test]
fn no_redirect_leaves_the_site() {
    let site = make_site("open-redirect");
    // A rule whose capture begins the path (a `//host` target is refused when the rules load).
    std::fs::write(site.join("_redirects"), "/to/* /:splat/ 301\n").unwrap();
    std::fs::write(site.join("about.html"), "about").unwrap();
    let s = Server::start(&site, &["--clean-urls"]);
    // The directory-slash redirect: `//evil.example/..%2fdocs` normalises to the directory /docs.
    for target in ["//evil.example/..%2fdocs", "///evil.example/..%2fdocs?q=1", "//evil.example/%2e%2e/docs"] {
        let r = s.get(target, &[]);
        assert_eq!(r.status, 301, "{target}");
        let loc = r.header("location").unwrap();
        assert!(!leaves_the_site(loc), "{target} → {loc}");
        assert!(loc.starts_with("/evil.example/"), "{target} → {loc}: the path on this site, one leading slash");
        // Followed, it lands on this site's directory.
        let next = s.get(loc, &[]);
        assert_eq!((next.status, next.text()), (200, "<h1>docs</h1>\n".to_string()), "{target} → {loc}");
    }
    // The plain case is unchanged.
    assert_eq!(s.get("/docs?x", &[]).header("location"), Some("/docs/?x"));
    // Rules: a splat that could begin with a slash stays on the site.
    for target in ["/to//evil.example", "/to/%2F%2Fevil.example", "/to/%2Fevil.example"] {
        let r = s.get(target, &[]);
        let loc = r.header("location").unwrap_or("");
        assert!(!leaves_the_site(loc), "{target} → {} {loc}", r.status);
    }
    // Clean-URL canonical redirects.
    let r = s.get("//about.html", &[]);
    assert!(!leaves_the_site(r.header("location").unwrap_or("")), "{:?}", r.header("location"));
}

#[test]
fn control_characters_in_file_names_never_reach_a_header_or_a_content_line() {
    let site = make_site("ctl-names");
    std::fs::write(site.join("_headers"), "/*\n  Link: </:splat>; rel=preload\n").unwrap();
    let evil = "a\r\nSet-Cookie: stolen=1\r\nX-Evil: 1.html";
    std::fs::write(site.join(evil), "evil").unwrap();
    std::fs::create_dir_all(site.join("d\nX-Dir: 1")).unwrap();
    std::fs::write(site.join("d\nX-Dir: 1/f.html"), "in a bad directory").unwrap();
    std::fs::write(site.join("tab\there.html"), "tab").unwrap();
    std::fs::write(site.join("del\u{7f}.html"), "del").unwrap();
    let s = Server::start(&site, &[]);
    let listing = s.admin_get("/content").text();
    for line in listing.lines() {
        assert!(line.starts_with('/'), "a /content line that is not a path: {line:?} in {listing:?}");
        assert!(!line.contains("X-Evil") && !line.contains("X-Dir") && !line.contains("Set-Cookie"), "{line:?}");
        assert!(!line.chars().any(|c| c.is_control() && c != '\t'), "{line:?}");
    }
    assert!(listing.contains("/index.html\t"), "the rest of the site is served: {listing:?}");
    let escaped = |p: &str| {
        p.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b == b'/' || b == b'.' {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect::<String>()
    };
    for p in
        ["/a\r\nSet-Cookie: stolen=1\r\nX-Evil: 1.html", "/d\nX-Dir: 1/f.html", "/tab\there.html", "/del\u{7f}.html"]
    {
        let r = s.get(&escaped(p), &[]);
        assert_eq!(r.status, 404, "{p:?} is not served");
        assert!(r.header("set-cookie").is_none() && r.header("x-evil").is_none() && r.header("x-dir").is_none());
    }
    // Every response of the site: no injected header anywhere.
    for line in listing.lines() {
        let path = line.split('\t').next().unwrap();
        let r = s.get(&escaped(path), &[]);
        assert!(
            r.headers
                .iter()
                .all(|(k, _)| !["set-cookie", "x-evil", "x-dir"].contains(&k.to_ascii_lowercase().as_str())),
            "{path}: {:?}",
            r.headers
        );
    }
    assert!(s.log_contains("file name has a control character; not served"), "a load warning says why");
}

#[test]
fn a_symlink_swapped_during_reloads_never_serves_a_file_outside_the_root() {
    let site = tempdir("symlink-race");
    let outside = tempdir("symlink-race-outside");
    std::fs::write(outside.join("secret.txt"), "SECRET").unwrap();
    // Many files before the link in load order widen the window between the walk's check and the open.
    for i in 0..300 {
        std::fs::write(site.join(format!("a{i:04}.html")), format!("file {i}")).unwrap();
    }
    std::fs::write(site.join("inside.txt"), "inside").unwrap();
    std::os::unix::fs::symlink("inside.txt", site.join("x.txt")).unwrap();
    let s = Server::start(&site, &["--compress=false"]);
    assert_eq!(s.get("/x.txt", &[]).text(), "inside");
    let stop = Arc::new(AtomicBool::new(false));
    // The link flips between the file inside and the one outside (rename over it: atomic), which also makes the
    // server reload over and over.
    let flipper = {
        let (root, secret, stop) = (site.to_path_buf(), outside.join("secret.txt"), stop.clone());
        // Made beside the secret (same file system) and renamed into the root: the walk never meets it half-made.
        let tmp = outside.join("x.tmp");
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for target in [std::path::PathBuf::from("inside.txt"), secret.clone()] {
                    let _ = std::fs::remove_file(&tmp);
                    std::os::unix::fs::symlink(&target, &tmp).unwrap();
                    std::fs::rename(&tmp, root.join("x.txt")).unwrap();
                    flips += 1;
                }
            }
            flips
        })
    };
    // Reloads by SIGHUP: the flips keep the inotify debounce from ever settling.
    let reloads = || s.metric("hyperstatic_reloads_total{result=\"success\"}");
    let (mut served, mut leaked) = (0, 0);
    for _ in 0..60 {
        let before = reloads();
        s.signal(libc::SIGHUP);
        wait_for("the SIGHUP reload", || reloads() > before);
        for _ in 0..3 {
            let r = s.get("/x.txt", &[]);
            if r.status == 200 {
                served += 1;
                if r.body != b"inside" {
                    leaked += 1;
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert_eq!(leaked, 0, "a file outside the root was served {leaked} of {served} times ({flips} flips)");
    assert!(served > 0, "the link was never served from inside either ({flips} flips)");
}
