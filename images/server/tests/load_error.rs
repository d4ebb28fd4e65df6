//! The last content load's failure, for the operator: `hyperstatic_content_load_failed` and `GET /load-error` on
//! the admin port while the previous content keeps serving, and `--termination-log` when the first load fails
//! (Kubernetes shows that file as the container's termination message).

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Command;

fn site(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hs-loaderr-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for (p, body) in files {
        std::fs::write(d.join(p), body).unwrap();
    }
    d
}

#[test]
fn a_failed_reload_is_reported_until_the_content_is_fixed() {
    let root = site("reload", &[("index.html", "v1"), ("_redirects", "/old /index.html\n")]);
    let s = Server::start(&root, &[]);
    assert_eq!(s.metric("hyperstatic_content_load_failed"), 0.0);
    let r = s.admin_get("/load-error");
    assert_eq!((r.status, r.text().as_str()), (200, ""));

    std::fs::write(root.join("_redirects"), "/old /index.html\n/x /y 418\n").unwrap();
    wait_for("the failed reload", || s.metric("hyperstatic_content_load_failed") == 1.0);
    let r = s.admin_get("/load-error");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("_redirects:2: status 418 is not supported"), "{}", r.text());
    assert_eq!(s.get("/", &[]).text(), "v1", "the previous content keeps serving");

    // A bad _headers replaces the message: it is the last load's.
    std::fs::write(root.join("_redirects"), "/old /index.html\n").unwrap();
    std::fs::write(root.join("_headers"), "/*\n  X-A: 1\n  Content-Length: 3\n").unwrap();
    wait_for("the _headers failure", || s.admin_get("/load-error").text().contains("_headers:3:"));
    assert!(s.admin_get("/load-error").text().contains("Content-Length is set by the server"));
    assert_eq!(s.metric("hyperstatic_content_load_failed"), 1.0);

    std::fs::write(root.join("_headers"), "/*\n  X-A: 1\n").unwrap();
    std::fs::write(root.join("index.html"), "v2").unwrap();
    wait_for("the fixed content", || s.get("/", &[]).text() == "v2");
    wait_for("the gauge cleared", || s.metric("hyperstatic_content_load_failed") == 0.0);
    assert_eq!(s.admin_get("/load-error").text(), "");
    let _ = std::fs::remove_dir_all(root);
}

/// Runs the server to its exit on a site whose first load fails.
fn start_fails(root: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
        .args(["--root", &root.display().to_string(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
        .args(extra)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_failed_first_load_writes_the_termination_log() {
    let root = site("start", &[("index.html", "home"), ("_redirects", "/a /b\n/c /d 302 Country=us\n")]);
    let dir = tempdir("termlog");
    let log = dir.join("termination-log");
    let (code, stderr) = start_fails(&root, &["--termination-log", &log.display().to_string()], &[]);
    assert_eq!(code, Some(1), "{stderr}");
    let msg = std::fs::read_to_string(&log).unwrap();
    assert_eq!(msg, "content load failed: _redirects:2: Country=us: conditions (Country=) are not supported");

    // The environment sets it too (HYPERSTATIC_TERMINATION_LOG); a long rule is cut.
    std::fs::write(root.join("_redirects"), format!("/a /{}.html 200\n", "x".repeat(3000))).unwrap();
    std::fs::remove_file(&log).unwrap();
    let (code, stderr) = start_fails(&root, &[], &[("HYPERSTATIC_TERMINATION_LOG", &log.display().to_string())]);
    assert_eq!(code, Some(1), "{stderr}");
    let msg = std::fs::read_to_string(&log).unwrap();
    assert!(msg.starts_with("content load failed: _redirects:1: "), "{msg}");
    assert!(msg.len() <= "content load failed: ".len() + 1024 && msg.ends_with('…'), "{} bytes", msg.len());

    // Without the flag nothing is written (outside Kubernetes there is no such file to write).
    std::fs::remove_file(&log).unwrap();
    let (code, _) = start_fails(&root, &[], &[]);
    assert_eq!(code, Some(1));
    assert!(!log.exists());
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_good_start_writes_no_termination_log() {
    let root = site("good", &[("index.html", "home")]);
    let dir = tempdir("termlog-good");
    let log = dir.join("termination-log");
    let s = Server::start(&root, &["--termination-log", &log.display().to_string()]);
    assert_eq!(s.get("/", &[]).text(), "home");
    assert!(!log.exists());
    let _ = std::fs::remove_dir_all(root);
}
