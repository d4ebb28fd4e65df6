//! The site value with the real binary: `--site FILE` served, swapped live the way the kubelet updates a mounted
//! ConfigMap (a new `..<ts>` directory, `..data` renamed over) or replaced by a rename, refused values keeping the
//! last good one serving (with the reason in /load-error and the metrics), recovery, a refused value at start,
//! `--check`, and the flags serving the same bytes as the equivalent file. Every wait is on a condition (a metric,
//! /load-error, a served header) with a generous bound, never a guessed sleep.

mod common;

use common::*;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha256};

const BIN: &str = env!("CARGO_BIN_EXE_hyperstatic-server");

fn revision(bytes: &str) -> String {
    let d = Sha256::digest(bytes.as_bytes());
    format!("sha256:{}", d[..8].iter().map(|b| format!("{b:02x}")).collect::<String>())
}

fn content(name: &str) -> Site {
    let d = tempdir(name);
    for (f, text) in [("index.html", "home"), ("a.css", "a { color: red }"), ("404.html", "not here")] {
        std::fs::write(d.join(f), text).unwrap();
    }
    d
}

/// A value: `/r` redirects to `to` with `status`, `/a.css` gets `X-Rev: rev` and `Cache-Control: max-age=rev`.
fn value(rev: u32, to: &str, status: u32, not_found: &str) -> String {
    format!(
        r#"{{"version": 1,
  "cacheControl": [{{"glob": "*.css", "value": "max-age={rev}"}}],
  "headers": [{{"glob": "*.css", "name": "X-Rev", "value": "{rev}"}}],
  "notFoundPage": "{not_found}",
  "redirects": [{{"from": "/r", "to": "{to}", "status": {status}}}]
}}
"#
    )
}

/// The kubelet's update of a ConfigMap volume: the files in a new `..<ts>` directory, `..data` replaced by a
/// rename, the visible name a link through `..data`.
fn kube_publish(dir: &Path, ts: &str, json: &str) {
    std::fs::create_dir_all(dir.join(ts)).unwrap();
    std::fs::write(dir.join(ts).join("site.json"), json).unwrap();
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    symlink(ts, &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("..data")).unwrap();
    if std::fs::symlink_metadata(dir.join("site.json")).is_err() {
        symlink("..data/site.json", dir.join("site.json")).unwrap();
    }
}

fn info(s: &Server, rev: &str) -> f64 {
    s.metric(&format!("hyperstatic_site_value_info{{revision=\"{rev}\"}}"))
}

fn loads(s: &Server, result: &str) -> f64 {
    s.metric(&format!("hyperstatic_site_value_loads_total{{result=\"{result}\"}}"))
}

/// What `/r` and `/a.css` get, and the status of a missing page.
fn served(s: &Server) -> (u16, String, String, String, u16) {
    let r = s.get("/r", &[]);
    let css = s.get("/a.css", &[]);
    let nf = s.get("/missing", &[]);
    (
        r.status,
        r.header("location").unwrap_or("").to_string(),
        css.header("x-rev").unwrap_or("").to_string(),
        css.header("cache-control").unwrap_or("").to_string(),
        nf.status,
    )
}

#[test]
fn a_configmap_swap_applies_live_and_a_refused_value_keeps_the_last_good() {
    let site = content("sv-live");
    let conf = tempdir("sv-live-conf");
    let v1 = value(1, "/a.css", 302, "/404.html");
    kube_publish(&conf, "..ts1", &v1);
    let file = conf.join("site.json");
    let s = Server::start(&site, &["--site", file.to_str().unwrap()]);
    assert_eq!(served(&s), (302, "/a.css".into(), "1".into(), "max-age=1".into(), 404));
    assert_eq!(info(&s, &revision(&v1)), 1.0);
    assert_eq!((loads(&s, "success"), loads(&s, "failure")), (1.0, 0.0));

    // A redirect, a header and a cache-control rule change: served without a restart.
    let v2 = value(2, "/index.html", 301, "/404.html");
    kube_publish(&conf, "..ts2", &v2);
    wait_for("the second value to serve", || info(&s, &revision(&v2)) == 1.0);
    assert_eq!(served(&s), (301, "/index.html".into(), "2".into(), "max-age=2".into(), 404));
    assert_eq!(info(&s, &revision(&v1)), 0.0, "one revision is exported: the one serving");
    assert_eq!(s.admin_get("/load-error").text(), "");

    // A bad rule: refused, the last good value keeps serving, and the reason is said.
    kube_publish(&conf, "..ts3", &value(3, "/a.css", 404, "/404.html"));
    wait_for("the bad rule to be refused", || loads(&s, "failure") == 1.0);
    let why = s.admin_get("/load-error").text();
    assert!(why.contains("site.json: redirects[0].status: status 404 is not supported here"), "{why}");
    assert_eq!(s.metric("hyperstatic_site_value_refused"), 1.0);
    assert_eq!(served(&s), (301, "/index.html".into(), "2".into(), "max-age=2".into(), 404));
    assert_eq!(info(&s, &revision(&v2)), 1.0);
    assert!(s.log_contains("site value refused; the last good site value keeps serving"));

    // A page the content lacks: refused too.
    kube_publish(&conf, "..ts4", &value(4, "/a.css", 302, "/nope.html"));
    wait_for("the missing page to be refused", || loads(&s, "failure") == 2.0);
    let why = s.admin_get("/load-error").text();
    assert!(why.contains("notFoundPage: /nope.html is not a file in the content"), "{why}");
    assert_eq!(served(&s), (301, "/index.html".into(), "2".into(), "max-age=2".into(), 404));

    // A content change while the newest value is refused: the new content serves with the last good value.
    std::fs::write(site.join("new.css"), "b {}").unwrap();
    wait_for("the new content to serve", || s.get("/new.css", &[]).status == 200);
    let new = s.get("/new.css", &[]);
    assert_eq!((new.header("x-rev"), new.header("cache-control")), (Some("2"), Some("max-age=2")));
    assert!(s.admin_get("/load-error").text().contains("notFoundPage: /nope.html"), "still said");
    assert_eq!(info(&s, &revision(&v2)), 1.0);

    // Fixed: the new value serves and the error is gone.
    let v5 = value(5, "/new.css", 307, "/404.html");
    kube_publish(&conf, "..ts5", &v5);
    wait_for("the fixed value to serve", || info(&s, &revision(&v5)) == 1.0);
    assert_eq!(served(&s), (307, "/new.css".into(), "5".into(), "max-age=5".into(), 404));
    assert_eq!(s.admin_get("/load-error").text(), "");
    assert_eq!(s.metric("hyperstatic_content_load_failed"), 0.0);
    assert_eq!(s.metric("hyperstatic_site_value_refused"), 0.0);
    assert!(loads(&s, "success") >= 2.0);
}

/// A value the content cannot load with (a rewrite to a file it lacks) is the value's fault when the last good
/// value still loads: refused, and the last good value keeps serving with the content.
#[test]
fn a_value_the_content_cannot_load_with_is_refused() {
    let site = content("sv-rewrite");
    let conf = tempdir("sv-rewrite-conf");
    let v1 = value(1, "/a.css", 302, "/404.html");
    kube_publish(&conf, "..ts1", &v1);
    let s = Server::start(&site, &["--site", conf.join("site.json").to_str().unwrap()]);
    kube_publish(&conf, "..ts2", &value(2, "/nofile.html", 200, "/404.html"));
    wait_for("the value to be refused", || loads(&s, "failure") == 1.0);
    let why = s.admin_get("/load-error").text();
    assert!(
        why.starts_with(
            "site value: redirects[0]: /r /nofile.html 200: rewrite target /nofile.html is not a file in the site"
        ),
        "{why}"
    );
    assert_eq!(s.metric("hyperstatic_site_value_refused"), 1.0);
    assert_eq!(served(&s), (302, "/a.css".into(), "1".into(), "max-age=1".into(), 404));
    assert_eq!(info(&s, &revision(&v1)), 1.0);
    assert_eq!(
        s.metric("hyperstatic_reloads_total{result=\"failure\"}"),
        0.0,
        "the content loaded (with the last good value)"
    );
}

#[test]
fn a_plain_file_replaced_by_a_rename_applies_live() {
    let site = content("sv-rename");
    let conf = tempdir("sv-rename-conf");
    let file = conf.join("site.json");
    std::fs::write(&file, value(1, "/a.css", 302, "/404.html")).unwrap();
    let s = Server::start(&site, &["--site", file.to_str().unwrap()]);
    assert_eq!(served(&s).2, "1");
    let v2 = value(2, "/a.css", 302, "/404.html");
    std::fs::write(conf.join(".site.json.tmp"), &v2).unwrap();
    std::fs::rename(conf.join(".site.json.tmp"), &file).unwrap();
    wait_for("the renamed file to serve", || info(&s, &revision(&v2)) == 1.0);
    assert_eq!(served(&s).2, "2");
}

/// Starts the real server with `--site file`, expecting it to exit (its output once it did).
fn start_refused(site: &Path, file: &Path, log: &Path) -> std::process::Output {
    Command::new(BIN)
        .args(["--root", site.to_str().unwrap(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
        .args(["--workers", "1", "--site", file.to_str().unwrap(), "--termination-log", log.to_str().unwrap()])
        .output()
        .unwrap()
}

#[test]
fn a_refused_value_at_start_exits_with_the_reason_in_the_termination_log() {
    let site = content("sv-start");
    let conf = tempdir("sv-start-conf");
    let file = conf.join("site.json");
    std::fs::write(&file, r#"{"version": 1, "redirects": [{"from": "/a", "to": "/b", "form": 1}]}"#).unwrap();
    let log = conf.join("termination-log");
    let out = start_refused(&site, &file, &log);
    assert_eq!(out.status.code(), Some(1));
    let msg = std::fs::read_to_string(&log).unwrap();
    assert!(msg.contains("redirects[0].form: unknown field"), "{msg}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("redirects[0].form: unknown field"));

    // A page the content lacks, at start: refused as well (there is no last good value).
    std::fs::write(&file, r#"{"version": 1, "errorPages": [{"status": 404, "path": "/gone.html"}]}"#).unwrap();
    let out = start_refused(&site, &file, &log);
    assert_eq!(out.status.code(), Some(1));
    let msg = std::fs::read_to_string(&log).unwrap();
    assert!(msg.contains("errorPages[0].path: /gone.html is not a file in the content"), "{msg}");
}

fn check(site: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN).args(["--check", "--root", site.to_str().unwrap()]).args(extra).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn check_reports_the_revision_and_refuses_a_bad_file() {
    let site = content("sv-check");
    let conf = tempdir("sv-check-conf");
    let file = conf.join("site.json");
    let good = value(1, "/a.css", 302, "/404.html");
    std::fs::write(&file, &good).unwrap();
    let (code, out) = check(&site, &["--site", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(&format!("site value {}: revision {}", file.display(), revision(&good))), "{out}");
    assert!(out.ends_with("ok\n"), "{out}");

    std::fs::write(&file, r#"{"version": 1, "cacheControl": [{"glob": "*.css"}]}"#).unwrap();
    let (code, out) = check(&site, &["--site", file.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(&format!("error: site value {}: cacheControl[0].value: required", file.display())), "{out}");

    std::fs::write(&file, value(1, "/a.css", 302, "/nope.html")).unwrap();
    let (code, out) = check(&site, &["--site", file.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("error: site value: notFoundPage: /nope.html is not a file in the content"), "{out}");

    // Flags build a value too, named by its canonical rendering's revision.
    let (code, out) = check(&site, &["--spa-fallback"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "site value (from flags): revision {}",
            revision("{\n  \"version\": 1,\n  \"spaFallback\": true\n}\n")
        )),
        "{out}"
    );
}

#[test]
fn site_and_site_rule_flags_together_are_a_usage_error() {
    let out = Command::new(BIN)
        .args(["--check", "--site", "/x.json", "--redirect", "/a /b", "--hsts", "max-age=1"])
        .args(["--tls-cert", "c", "--tls-key", "k"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains(
            "--site and --redirect, --hsts: a site's rules come from the site value file or from flags, not both"
        ),
        "{e}"
    );
}

/// Every raw answer of a request list, the Date line left out (it is the clock's).
fn answers(s: &Server, requests: &[&str]) -> Vec<String> {
    requests
        .iter()
        .map(|r| {
            let raw = s.raw(format!("{r}Host: t\r\nConnection: close\r\n\r\n").as_bytes());
            String::from_utf8_lossy(&raw).lines().filter(|l| !l.starts_with("Date: ")).collect::<Vec<_>>().join("\n")
        })
        .collect()
}

#[test]
fn flags_and_the_equivalent_file_serve_the_same_bytes() {
    let site = content("sv-same");
    std::fs::create_dir_all(site.join("docs")).unwrap();
    std::fs::write(site.join("docs/404.html"), "docs nf").unwrap();
    std::fs::write(site.join("about.html"), "about").unwrap();
    std::fs::write(site.join("font.woff2"), "font").unwrap();
    let flags = [
        "--cache-control=*.css=public, max-age=60",
        "--default-cache-control=max-age=5",
        "--header=*.html=X-Frame-Options: DENY",
        "--header=X-All: 1",
        "--security-headers=false",
        "--cors=*.woff2=https://a.test;methods=GET,PUT;max-age=60",
        "--not-found-page=/404.html",
        "--redirect=/old/* /docs/:splat 302",
        "--redirect=/about /index.html 301!",
        "--clean-urls",
        "--error-page=404 /docs/404.html /docs/",
    ];
    let file = r#"{"version": 1,
  "cacheControl": [{"glob": "*.css", "value": "public, max-age=60"}],
  "defaultCacheControl": "max-age=5",
  "headers": [{"glob": "*.html", "name": "X-Frame-Options", "value": "DENY"}, {"name": "X-All", "value": "1"}],
  "securityHeaders": false,
  "cors": [{"glob": "*.woff2", "allowOrigins": ["https://a.test"], "allowMethods": ["GET", "PUT"], "maxAge": 60}],
  "notFoundPage": "/404.html",
  "redirects": [{"from": "/old/*", "to": "/docs/:splat", "status": 302}, {"from": "/about", "to": "/index.html", "force": true}],
  "cleanURLs": true,
  "errorPages": [{"status": 404, "path": "/docs/404.html", "pathPrefix": "/docs/"}]
}"#;
    let conf = tempdir("sv-same-conf");
    std::fs::write(conf.join("site.json"), file).unwrap();
    let a = Server::start(&site, &flags);
    let b = Server::start(&site, &["--site", conf.join("site.json").to_str().unwrap()]);
    let requests = [
        "GET / HTTP/1.1\r\n",
        "GET /a.css HTTP/1.1\r\n",
        "HEAD /index.html HTTP/1.1\r\n",
        "GET /about HTTP/1.1\r\n",
        "GET /about.html HTTP/1.1\r\n",
        "GET /old/x HTTP/1.1\r\n",
        "GET /missing HTTP/1.1\r\n",
        "GET /docs/missing HTTP/1.1\r\n",
        "GET /font.woff2 HTTP/1.1\r\nOrigin: https://a.test\r\n",
        "OPTIONS /font.woff2 HTTP/1.1\r\nOrigin: https://a.test\r\nAccess-Control-Request-Method: PUT\r\n",
        "GET /a.css HTTP/1.1\r\nIf-None-Match: *\r\n",
    ];
    let (x, y) = (answers(&a, &requests), answers(&b, &requests));
    for (i, r) in requests.iter().enumerate() {
        assert_eq!(x[i], y[i], "{r:?}");
    }
    assert!(x[3].starts_with("HTTP/1.1 301") && x[7].contains("docs nf"), "the rules apply: {x:?}");
    // The same value: the flags' revision is that of the file's canonical rendering.
    let rev = |s: &Server| {
        let m = s.admin_get("/metrics").text();
        m.lines().find(|l| l.starts_with("hyperstatic_site_value_info{")).unwrap().to_string()
    };
    let (code, out) = check(&site, &["--site", conf.join("site.json").to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
    assert!(rev(&a).starts_with("hyperstatic_site_value_info{revision=\"sha256:"));
    assert_eq!(rev(&b), format!("hyperstatic_site_value_info{{revision=\"{}\"}} 1", revision(file)));
}
