//! The admin listener and the command line: health, readiness, metrics contract, content list, --check,
//! --help.

mod common;

use common::*;
use std::process::Command;

#[test]
fn health_readiness_metrics_and_content() {
    let site = make_site("admin");
    let s = Server::start(&site, &[]);
    assert_eq!(s.admin_get("/healthz").status, 200);
    assert_eq!(s.admin_get("/readyz").status, 200);
    assert_eq!(s.admin_get("/nope").status, 404);
    for _ in 0..3 {
        s.get("/100.html", &[]);
    }
    s.get("/missing", &[]);
    let m = s.admin_get("/metrics");
    assert!(m.header("Content-Type").unwrap().starts_with("text/plain"));
    let text = m.text();
    for name in [
        "hyperstatic_requests_total{code=\"200\"}",
        "hyperstatic_requests_total{code=\"404\"}",
        "hyperstatic_response_bytes_total",
        "hyperstatic_connections_open",
        "hyperstatic_connections_total",
        "hyperstatic_content_files",
        "hyperstatic_content_bytes",
        "hyperstatic_reloads_total{result=\"success\"}",
        "hyperstatic_reloads_total{result=\"failure\"}",
        "hyperstatic_build_info{version=",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    assert!(s.metric("hyperstatic_requests_total{code=\"200\"}") >= 3.0);
    assert_eq!(s.metric("hyperstatic_requests_total{code=\"404\"}"), 1.0);
    assert_eq!(s.metric("hyperstatic_content_files"), 9.0);
    assert!(s.metric("process_resident_memory_bytes") > 0.0);
    // The worker CPU line: exactly the shape internal/podmetrics parses.
    let line = text.lines().find(|l| l.starts_with("hyperstatic_worker_cpus{")).unwrap();
    assert!(line.starts_with("hyperstatic_worker_cpus{cpus=\""), "{line}");
    assert!(line.contains("\",pinned=\"true\"} ") || line.contains("\",pinned=\"false\"} "), "{line}");
    assert!(line.ends_with(" 2"), "two workers requested: {line}");

    let content = s.admin_get("/content").text();
    // One line per file: URL path, then tab-separated where it is served from and its encodings.
    let lines: Vec<Vec<&str>> = content.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(lines.len(), 9, "{content}");
    for l in &lines {
        assert!(l.len() == 3 && l[0].starts_with('/'), "{l:?}");
        assert!(l[1] == "memory" || l[1] == "disk", "{l:?}");
        assert!(l[2].split(',').next() == Some("identity"), "{l:?}");
    }
    let paths: Vec<&str> = lines.iter().map(|l| l[0]).collect();
    assert!(paths.contains(&"/index.html") && paths.contains(&"/css/site.css") && paths.contains(&"/docs/page.html"));
}

#[test]
fn check_mode_reports_and_exits() {
    let site = make_site("check");
    let bin = env!("CARGO_BIN_EXE_hyperstatic-server");
    let out = Command::new(bin).args(["--check", "--root", site.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("9 files") && stdout.contains("ok"), "{stdout}");
    let out = Command::new(bin).args(["--check", "--root", "/nonexistent/site"]).output().unwrap();
    assert!(!out.status.success());
    let out = Command::new(bin)
        .env("HYPERSTATIC_ROOT", site.to_str().unwrap())
        .env("HYPERSTATIC_CHECK", "true")
        .output()
        .unwrap();
    assert!(out.status.success(), "environment equivalents work");
}

/// `--check` keeps open what a server would serve from disk, like the server: with a low soft descriptor limit
/// (a container runtime's default can be 1024, a shell's 256) it must raise it to the hard limit as serving does,
/// or a site that is fine fails its check (Git content's fetcher checks every commit this way).
#[test]
fn check_mode_raises_its_descriptor_limit() {
    use std::os::unix::process::CommandExt;
    let site = tempdir("check-fds");
    for i in 0..300 {
        std::fs::write(site.join(format!("page{i}.html")), format!("page {i}")).unwrap();
    }
    let mut hard = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit with a local struct.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut hard) }, 0);
    if hard.rlim_max < 1024 {
        panic!("this test needs a hard descriptor limit of at least 1024, not {}", hard.rlim_max);
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"));
    // Every file served from disk: each stays open for the life of the table.
    cmd.args(["--check", "--root", site.to_str().unwrap(), "--memory-budget", "0"]);
    let max = hard.rlim_max;
    // SAFETY: only setrlimit, async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let low = libc::rlimit { rlim_cur: 64, rlim_max: max };
            libc::setrlimit(libc::RLIMIT_NOFILE, &low);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("300 files"));
}

#[test]
fn help_version_and_bad_flags() {
    let bin = env!("CARGO_BIN_EXE_hyperstatic-server");
    let out = Command::new(bin).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for f in [
        "--root",
        "--listen",
        "--admin-listen",
        "--workers",
        "--header-timeout",
        "--keepalive-timeout",
        "--max-requests-per-connection",
        "--max-connection-age",
        "--drain-delay",
        "--check",
        "HYPERSTATIC_ROOT",
    ] {
        assert!(help.contains(f), "{f}");
    }
    let out = Command::new(bin).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("hyperstatic-server "));
    let out = Command::new(bin).arg("--bogus").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unexpected argument '--bogus'"), "{err}");
    let out = Command::new(bin).args(["--header-timeout", "ten"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--header-timeout") && err.contains("invalid duration"), "{err}");
}

#[test]
fn logs_are_json_lines() {
    let site = make_site("logs");
    let s = Server::start(&site, &["--access-log"]);
    s.get("/100.html", &[]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let logs = s.logs.lock().unwrap().clone();
    assert!(logs.iter().any(|l| l.contains("\"msg\":\"request\"") && l.contains("\"status\":200")), "{logs:?}");
    for l in &logs {
        assert!(l.starts_with("{\"time\":\"") && l.ends_with('}'), "{l}");
    }
}
