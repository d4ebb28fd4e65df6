//! Access rules (site value `access`, src/guard/) with the real binary and real clients: curl over HTTP/1.1 and
//! HTTP/2 (prior knowledge on the plain port), from loopback addresses of our choosing (`curl --interface`:
//! 127.0.0.2 and 127.0.0.3 are other clients) and over IPv6 (::1, the server on `[::]`). Credentials are an
//! htpasswd file of bcrypt hashes at cost 4 (the lowest), next to the site value file. Live changes are waited
//! for on their effect (a status turning), never on guessed sleeps.

mod common;

use common::curl::*;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A small site with public and private files, its site value `json` and an htpasswd of `users` beside it.
fn start(name: &str, json: &str, users: &[(&str, &str)], listen6: bool) -> (Server, PathBuf, Site, Site) {
    let site = tempdir(name);
    std::fs::write(site.join("index.html"), "home").unwrap();
    std::fs::create_dir_all(site.join("private")).unwrap();
    std::fs::write(site.join("private/doc.html"), "secret doc").unwrap();
    std::fs::create_dir_all(site.join("lan")).unwrap();
    std::fs::write(site.join("lan/a.txt"), "lan only").unwrap();
    let conf = tempdir(&format!("{name}-conf"));
    htpasswd(&conf, users);
    let file = conf.join("site.json");
    std::fs::write(&file, json).unwrap();
    let mut args = vec!["--site", file.to_str().unwrap(), "--workers", "1", "--h2c", "--access-log"];
    if listen6 {
        args.extend(["--listen", "[::]:0"]);
    }
    let s = Server::start(&site, &args);
    (s, file, site, conf)
}

fn htpasswd(dir: &Path, users: &[(&str, &str)]) {
    let text: String = users.iter().map(|(u, p)| format!("{u}:{}\n", bcrypt::hash(p, 4).unwrap())).collect();
    // Replaced by a rename, as a mounted volume's files are: a reload never reads half a file.
    std::fs::write(dir.join(".htpasswd.tmp"), text).unwrap();
    std::fs::rename(dir.join(".htpasswd.tmp"), dir.join("htpasswd")).unwrap();
}

fn write_value(file: &Path, json: &str) {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, json).unwrap();
    std::fs::rename(&tmp, file).unwrap();
}

fn get(s: &Server, proto: &str, path: &str, extra: &[&str]) -> Got {
    curl("127.0.0.1", s.port, proto, path, extra)
}

const BASIC: &str = r#"{"version": 1,
  "cacheControl": [{"glob": "/private/**", "value": "public, max-age=600, s-maxage=3600"}],
  "access": {"htpasswdFile": "htpasswd",
             "rules": [{"pathPrefix": "/private/", "basicAuth": {"realm": "Team docs"}}]}}
"#;

#[test]
fn basic_auth_refuses_without_the_right_password_and_keeps_protected_answers_private() {
    let (s, _file, _site, _conf) = start("access-basic", BASIC, &[("alice", "s3cret")], false);
    for proto in PROTOS {
        let g = get(&s, proto, "/private/doc.html", &[]);
        assert_eq!(g.status, 401, "{proto}: no credentials");
        assert_eq!(g.header("www-authenticate"), Some("Basic realm=\"Team docs\", charset=\"UTF-8\""), "{proto}");
        assert_eq!(g.header("cache-control"), Some("private"), "{proto}");
        assert!(!g.body.contains("secret"), "{proto}");
        // A missing file under the rule is a 401 too: nothing says whether it exists.
        let g = get(&s, proto, "/private/nothing-here.html", &[]);
        assert_eq!((g.status, g.header("cache-control")), (401, Some("private")), "{proto}: missing, no credentials");
        // Percent-encoding and dot segments do not step around the rule.
        for sneaky in ["/%70rivate/doc.html", "/x/../private/doc.html", "/private//doc.html"] {
            assert_eq!(get(&s, proto, sneaky, &["--path-as-is"]).status, 401, "{proto}: {sneaky}");
        }
        let g = get(&s, proto, "/private/doc.html", &["-u", "alice:wrong"]);
        assert_eq!(g.status, 401, "{proto}: wrong password");
        // Twice: a wrong password remembered is remembered as wrong.
        assert_eq!(get(&s, proto, "/private/doc.html", &["-u", "alice:wrong"]).status, 401, "{proto}: again");
        assert_eq!(get(&s, proto, "/private/doc.html", &["-u", "bob:s3cret"]).status, 401, "{proto}: unknown user");
        for _ in 0..2 {
            let g = get(&s, proto, "/private/doc.html", &["-u", "alice:s3cret"]);
            assert_eq!((g.status, g.body.as_str()), (200, "secret doc"), "{proto}: right password");
            // The site's own rule said public, s-maxage: made private, the shared-cache directives dropped.
            assert_eq!(g.header("cache-control"), Some("private, max-age=600"), "{proto}");
        }
        let g = get(&s, proto, "/private/nothing-here.html", &["-u", "alice:s3cret"]);
        assert_eq!(g.status, 404, "{proto}: authenticated, missing");
        assert_eq!(g.header("cache-control"), Some("private"), "{proto}: a protected 404 is private");
        let g = get(&s, proto, "/", &[]);
        assert_eq!((g.status, g.body.as_str()), (200, "home"), "{proto}: public");
        assert_eq!(g.header("cache-control"), Some("no-cache"), "{proto}: public stays as configured");
        let g = get(&s, proto, "/private/doc.html", &["-I"]);
        assert_eq!(g.status, 401, "{proto}: HEAD");
    }
}

const ADDRESSES: &str = r#"{"version": 1,
  "access": {"rules": [{"pathPrefix": "/lan", "allow": ["127.0.0.0/8", "::1/128"], "deny": ["127.0.0.3"]},
                       {"pathPrefix": "/private", "allow": ["::1"]}]}}
"#;

#[test]
fn cidr_allow_and_deny_over_ipv4_and_ipv6_deny_wins() {
    let (s, _file, _site, _conf) = start("access-cidr", ADDRESSES, &[], true);
    for proto in PROTOS {
        let from = |src: &str, path: &str| curl("127.0.0.1", s.port, proto, path, &["--interface", src]);
        let g = from("127.0.0.2", "/lan/a.txt");
        assert_eq!(
            (g.status, g.body.as_str(), g.header("cache-control")),
            (200, "lan only", Some("private, no-cache")),
            "{proto}"
        );
        let g = from("127.0.0.3", "/lan/a.txt");
        assert_eq!(
            (g.status, g.header("cache-control")),
            (403, Some("private")),
            "{proto}: denied inside the allowed block"
        );
        assert_eq!(from("127.0.0.3", "/lan/none").status, 403, "{proto}: denied, missing: 403 too");
        assert_eq!(from("127.0.0.3", "/").status, 200, "{proto}: no rule on /");
        assert_eq!(from("127.0.0.2", "/private/doc.html").status, 403, "{proto}: IPv4 is not ::1");
        let g = curl("[::1]", s.port, proto, "/private/doc.html", &[]);
        assert_eq!((g.status, g.body.as_str()), (200, "secret doc"), "{proto}: from ::1");
        assert_eq!(curl("[::1]", s.port, proto, "/lan/a.txt", &[]).status, 200, "{proto}: ::1 allowed on /lan");
    }
}

const FORWARDED: &str = r#"{"version": 1,
  "access": {"trustedProxies": ["127.0.0.1", "10.0.0.0/8"],
             "rules": [{"pathPrefix": "/lan/", "allow": ["203.0.113.0/24"]}]}}
"#;

#[test]
fn x_forwarded_for_counts_from_trusted_proxies_only_and_hostile_values_fall_back_to_the_peer() {
    let (s, _file, _site, _conf) = start("access-xff", FORWARDED, &[], false);
    for proto in PROTOS {
        let from = |src: &str, xff: &str| {
            curl(
                "127.0.0.1",
                s.port,
                proto,
                "/lan/a.txt",
                &["--interface", src, "-H", &format!("X-Forwarded-For: {xff}")],
            )
            .status
        };
        assert_eq!(from("127.0.0.1", "203.0.113.5"), 200, "{proto}: a trusted proxy names the client");
        assert_eq!(from("127.0.0.1", "203.0.113.5, 10.1.1.1"), 200, "{proto}: trusted hops skipped");
        assert_eq!(from("127.0.0.2", "203.0.113.5"), 403, "{proto}: an untrusted peer's header is ignored");
        assert_eq!(from("127.0.0.1", "203.0.113.5, 198.51.100.1"), 403, "{proto}: the right-most untrusted entry");
        assert_eq!(from("127.0.0.1", "garbage, 203.0.113.5"), 200, "{proto}: only what is right of garbage is read");
        assert_eq!(from("127.0.0.1", "203.0.113.5, garbage"), 403, "{proto}: garbage: the peer");
    }
    // Hostile headers: many entries, a long one, several lines (the last counts). The server answers each.
    let many = vec!["10.0.0.1"; 1000].join(",");
    let hostile = [format!("203.0.113.5,{many}"), "9".repeat(6000), ",".repeat(6000), "[::1]:x".into()];
    for (i, v) in hostile.iter().enumerate() {
        let r = s.get("/lan/a.txt", &[("X-Forwarded-For", v)]);
        assert_eq!(r.status, 403, "hostile value {i}: the peer (127.0.0.1) is the client");
    }
    let r = s.get("/lan/a.txt", &[("X-Forwarded-For", "198.51.100.1"), ("X-Forwarded-For", "203.0.113.5")]);
    assert_eq!(r.status, 200, "the last line is the nearest proxy's");
    let r = s.get("/lan/a.txt", &[("X-Forwarded-For", "203.0.113.5"), ("X-Forwarded-For", "198.51.100.1")]);
    assert_eq!(r.status, 403);
    // The access log names the client the rules saw.
    wait_for("the forwarded client in the access log", || s.log_contains("\"client\":\"203.0.113.5:0\""));
    assert_eq!(s.get("/", &[]).status, 200, "still serving");
}

#[test]
fn rules_and_credentials_change_live_and_a_bad_value_keeps_the_last_good_one() {
    let (s, file, _site, conf) = start("access-live", r#"{"version": 1}"#, &[("alice", "one")], false);
    let status = |user: Option<&str>| {
        let mut a = vec![];
        if let Some(u) = user {
            a = vec!["-u", u];
        }
        get(&s, "--http1.1", "/private/doc.html", &a).status
    };
    assert_eq!(status(None), 200, "no rules yet");
    write_value(&file, BASIC);
    wait_for("the rule to apply", || status(None) == 401);
    assert_eq!(status(Some("alice:one")), 200);
    // New credentials: the file is read with the value (a mounted volume swaps both at once; here the value is
    // rewritten after the file).
    htpasswd(&conf, &[("alice", "two")]);
    write_value(&file, &BASIC.replace("Team docs", "Team docs 2"));
    wait_for("the new password", || status(Some("alice:two")) == 200);
    assert_eq!(status(Some("alice:one")), 401, "the old password, remembered as good before, is not any more");
    // A bad block, a non-bcrypt line: refused, named, and the last good value keeps serving.
    write_value(&file, &BASIC.replace(r#""basicAuth""#, r#""allow": ["10.0.0.1/8"], "basicAuth""#));
    wait_for("the bad CIDR refused", || s.log_contains("access.rules[0].allow[0]"));
    std::fs::write(conf.join("htpasswd"), "alice:$apr1$x$y\n").unwrap();
    write_value(&file, BASIC);
    wait_for("the MD5 line refused", || s.log_contains("not a bcrypt hash"));
    assert_eq!(status(Some("alice:two")), 200, "the last good value and its users keep serving");
    assert_eq!(status(None), 401);
    write_value(&file, r#"{"version": 1}"#);
    wait_for("the rules removed", || status(None) == 200);
}

/// The per-client limit (limits.perClient, src/fairshare/) charges the client the trusted proxy names, not the
/// proxy: two clients behind one proxy each get their own bucket, and an untrusted peer's header changes nothing.
#[test]
fn the_per_client_limit_charges_the_forwarded_client() {
    let json = r#"{"version": 1, "limits": {"perClient": {"requests": 1, "periodSeconds": 600, "burst": 1}},
      "access": {"trustedProxies": ["127.0.0.1"]}}"#;
    let (s, _file, _site, _conf) = start("access-limit", json, &[], false);
    let from = |src: &str, xff: &str| {
        let h = format!("X-Forwarded-For: {xff}");
        curl("127.0.0.1", s.port, "--http1.1", "/", &["--interface", src, "-H", &h]).status
    };
    assert_eq!(from("127.0.0.1", "203.0.113.1"), 200, "the first client's token");
    assert_eq!(from("127.0.0.1", "203.0.113.1"), 429, "the same client again");
    assert_eq!(from("127.0.0.1", "203.0.113.2"), 200, "another client behind the same proxy");
    assert_eq!(from("127.0.0.2", "203.0.113.3"), 200, "an untrusted peer is its own client");
    assert_eq!(from("127.0.0.2", "203.0.113.4"), 429, "whatever header it sends");
}

/// h2load's status-code tally (2xx, 4xx) for `n` requests of `path` on two connections with `headers`.
fn h2load(s: &Server, h1: bool, path: &str, headers: &[&str], n: usize) -> (u32, u32) {
    let mut c = Command::new("h2load");
    c.args(["-n", &n.to_string(), "-c", "2", "-m", "10"]);
    if h1 {
        c.arg("--h1");
    }
    for h in headers {
        c.args(["-H", h]);
    }
    h2load_tally(c.arg(format!("http://127.0.0.1:{}{path}", s.port)))
}

/// Many requests with one password over HTTP/1.1 and HTTP/2 (h2load, 10 in flight per connection): every one is
/// answered, right or wrong, and the htpasswd file is consulted once per value (the one worker's cache,
/// src/guard/verified.rs), counted in hyperstatic_basic_auth_checks_total: 1,600 requests with two values, two
/// checks.
#[test]
fn many_requests_with_credentials_are_all_answered_and_checked_once_per_value() {
    let (s, _file, _site, _conf) = start("access-h2load", BASIC, &[("alice", "s3cret")], false);
    let good = "Authorization: Basic YWxpY2U6czNjcmV0"; // alice:s3cret
    let bad = "Authorization: Basic YWxpY2U6d3Jvbmc="; // alice:wrong
    assert_eq!(s.metric("hyperstatic_basic_auth_checks_total"), 0.0);
    for h1 in [true, false] {
        assert_eq!(h2load(&s, h1, "/private/doc.html", &[good], 400), (400, 0), "h1={h1}: the right password");
        assert_eq!(h2load(&s, h1, "/private/doc.html", &[bad], 400), (0, 400), "h1={h1}: a wrong one");
        assert_eq!(h2load(&s, h1, "/private/doc.html", &[], 100), (0, 100), "h1={h1}: none");
    }
    assert_eq!(s.metric("hyperstatic_basic_auth_checks_total"), 2.0, "each value checked once");
}
