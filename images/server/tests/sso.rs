//! Single sign-on rules (site value `access.sso` and `signIn`, src/guard/session.rs, docs/design/sso.md) with the
//! real binary and curl over HTTP/1.1 and HTTP/2. The session cookies are minted here the way the content agent
//! mints them (internal/sso/cookie.go; the Go side's contract test checks its own cookies against this binary),
//! with ring's HMAC-SHA256 directly rather than the server's own signing code: expired, signed by an unknown key,
//! tampered, in the wrong group, signed by the previous key. Live changes are waited for on their effect.

mod common;

use common::curl::*;
use common::*;
use ring::hmac;
use std::path::{Path, PathBuf};

const K1: &[u8; 32] = b"0123456789abcdef0123456789abcdef";
const K2: &[u8; 32] = b"fedcba9876543210fedcba9876543210";
const LOGIN: &str = "/.hyperstatic/sso/login";

fn b64(k: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(k)
}

/// A session cookie's value: `1|exp|email|groups|mac` (values here need no escaping).
fn mint(key: &[u8], exp: i64, email: &str, groups: &[&str]) -> String {
    use base64::Engine as _;
    let body = format!("1|{exp}|{email}|{}", groups.join(":"));
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), body.as_bytes());
    format!("{body}|{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

fn value(groups: &str) -> String {
    format!(
        r#"{{"version": 1,
  "cacheControl": [{{"glob": "/team/**", "value": "public, max-age=600"}}],
  "errorPages": [{{"status": 403, "path": "/403.html"}}],
  "access": {{"sso": {{"loginURL": "{LOGIN}", "keysFile": "keys"}},
             "rules": [{{"pathPrefix": "/team/", "signIn": {{"groups": [{groups}]}}}},
                       {{"pathPrefix": "/corp/", "signIn": {{"emailDomains": ["Example.com"]}}}},
                       {{"pathPrefix": "/members/", "signIn": {{}}}}]}}}}
"#
    )
}

fn write_atomic(file: &Path, text: &str) {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, file).unwrap();
}

fn start(name: &str, keys: &[&[u8]]) -> (Server, PathBuf, Site, Site) {
    let site = tempdir(name);
    for (f, text) in [
        ("index.html", "home"),
        ("403.html", "signed in, but not allowed here: ask the team, or sign out"),
        ("team/doc.html", "team doc"),
        ("corp/a.html", "corp page"),
        ("members/m.html", "members"),
    ] {
        let p = site.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let conf = tempdir(&format!("{name}-conf"));
    write_keys(&conf, keys);
    let file = conf.join("site.json");
    std::fs::write(&file, value(r#""eng""#)).unwrap();
    let s = Server::start(&site, &["--site", file.to_str().unwrap(), "--workers", "1", "--h2c"]);
    (s, file, site, conf)
}

fn write_keys(conf: &Path, keys: &[&[u8]]) {
    let text: String = keys.iter().map(|k| b64(k) + "\n").collect();
    write_atomic(&conf.join("keys"), &text);
}

/// GET `path` with the session cookie `cookie` (if any) as a navigation (`Accept: text/html`) or a fetch.
fn get(s: &Server, proto: &str, path: &str, cookie: Option<&str>, navigation: bool) -> Got {
    let mut extra: Vec<String> = vec![];
    if let Some(c) = cookie {
        extra.extend(["-H".into(), format!("Cookie: theme=dark; hs_session={c}; z=1")]);
    }
    if navigation {
        extra.extend(["-H".into(), "Accept: text/html,application/xhtml+xml,*/*;q=0.8".into()]);
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    curl("127.0.0.1", s.port, proto, path, &extra)
}

#[test]
fn a_session_cookie_opens_its_paths_and_nothing_else_does() {
    let (s, _file, _site, _conf) = start("sso-cookie", &[K1]);
    let later = now() + 3600;
    let eng = mint(K1, later, "jane@example.com", &["ops", "eng"]);
    for proto in PROTOS {
        // Not signed in: a navigation goes to the login with the page to come back to; a fetch gets 401.
        let g = get(&s, proto, "/team/doc.html?tab=2", None, true);
        assert_eq!(g.status, 302, "{proto}: navigation without a cookie");
        assert_eq!(g.header("location"), Some("/.hyperstatic/sso/login?rd=/team/doc.html%3Ftab%3D2"), "{proto}");
        assert_eq!(g.header("cache-control"), Some("private"), "{proto}");
        let g = get(&s, proto, "/team/doc.html", None, false);
        assert_eq!(g.status, 401, "{proto}: a fetch without a cookie");
        assert_eq!(g.header("www-authenticate"), Some(r#"Session login="/.hyperstatic/sso/login""#), "{proto}");
        assert!(!g.body.contains("team doc"), "{proto}");
        let g = curl(
            "127.0.0.1",
            s.port,
            proto,
            "/team/doc.html",
            &["-H", "Accept: text/html", "-H", "Sec-Fetch-Dest: empty"],
        );
        assert_eq!(g.status, 401, "{proto}: fetch metadata says it is not a document");
        // Signed in, in the group: served, privately (the site's public cache rule made private).
        for _ in 0..2 {
            let g = get(&s, proto, "/team/doc.html", Some(&eng), true);
            assert_eq!((g.status, g.body.as_str()), (200, "team doc"), "{proto}: good cookie");
            assert_eq!(g.header("cache-control"), Some("private, max-age=600"), "{proto}");
        }
        assert_eq!(get(&s, proto, "/members/m.html", Some(&eng), false).status, 200, "{proto}: any signed-in user");
        assert_eq!(get(&s, proto, "/corp/a.html", Some(&eng), false).status, 200, "{proto}: e-mail domain");
        // Cookies that are not good are no cookie at all.
        let expired = mint(K1, now() - 1, "jane@example.com", &["eng"]);
        let other_key = mint(K2, later, "jane@example.com", &["eng"]);
        let tampered = mint(K1, later, "jane@example.com", &["ops"]).replace("|ops|", "|eng|");
        let truncated = &eng[..eng.len() - 1];
        for (what, c) in
            [("expired", &expired[..]), ("unknown key", &other_key), ("tampered", &tampered), ("cut", truncated)]
        {
            let g = get(&s, proto, "/team/doc.html", Some(c), true);
            assert_eq!(g.status, 302, "{proto}: {what}: sent to sign in again");
            assert_eq!(get(&s, proto, "/team/doc.html", Some(c), false).status, 401, "{proto}: {what}");
        }
        // Signed in, not admitted: 403 with the site's page, private, and no redirect (a redirect would loop).
        let ops = mint(K1, later, "joe@example.org", &["ops"]);
        let g = get(&s, proto, "/team/doc.html", Some(&ops), true);
        assert_eq!(g.status, 403, "{proto}: wrong group");
        assert!(g.body.contains("not allowed here"), "{proto}: the site's 403 page: {}", g.body);
        assert_eq!(g.header("location"), None, "{proto}");
        assert!(g.header("cache-control").is_some_and(|c| c.starts_with("private")), "{proto}");
        assert_eq!(get(&s, proto, "/corp/a.html", Some(&ops), false).status, 403, "{proto}: another domain");
        assert_eq!(get(&s, proto, "/team/none.html", Some(&ops), false).status, 403, "{proto}: missing too");
        assert_eq!(get(&s, proto, "/index.html", None, false).status, 200, "{proto}: public");
    }
    // HTTP/2 may split the Cookie field: each field is looked at.
    let g = curl(
        "127.0.0.1",
        s.port,
        "--http2-prior-knowledge",
        "/team/doc.html",
        &["-H", "cookie: a=1", "-H", &format!("cookie: hs_session={eng}")],
    );
    assert_eq!(g.status, 200, "split cookie fields");
}

#[test]
fn keys_rotate_and_rules_change_live_and_bad_keys_keep_the_last_good_value() {
    let (s, file, _site, conf) = start("sso-live", &[K1]);
    let later = now() + 3600;
    let (old, new) = (mint(K1, later, "a@example.com", &["eng"]), mint(K2, later, "a@example.com", &["eng"]));
    let status = |c: &str| get(&s, "--http1.1", "/team/doc.html", Some(c), false).status;
    assert_eq!((status(&old), status(&new)), (200, 401));
    // Rotation: the new key first, the previous one kept: both cookies are good.
    write_keys(&conf, &[K2, K1]);
    write_atomic(&file, &value(r#""eng", "x""#));
    wait_for("the new key", || status(&new) == 200);
    assert_eq!(status(&old), 200, "the previous key is accepted");
    // The previous key dropped: its cookies are refused.
    write_keys(&conf, &[K2]);
    write_atomic(&file, &value(r#""eng""#));
    wait_for("the previous key dropped", || status(&old) == 401);
    // The rule's groups change live.
    write_atomic(&file, &value(r#""ops""#));
    wait_for("the new groups", || status(&new) == 403);
    // A bad keys file (too short a key) is refused, named, and the last good value keeps serving.
    std::fs::write(conf.join("keys"), "c2hvcnQ=\n").unwrap();
    write_atomic(&file, &value(r#""eng""#));
    wait_for("the short key refused", || s.log_contains("access.sso.keysFile"));
    assert_eq!(status(&new), 403, "the last good value (groups ops, key K2) keeps serving");
    // A signIn rule without sso is refused naming the field.
    write_keys(&conf, &[K2]);
    write_atomic(&file, r#"{"version": 1, "access": {"rules": [{"pathPrefix": "/", "signIn": {}}]}}"#);
    wait_for("signIn without sso refused", || s.log_contains("access.rules[0].signIn: needs access.sso"));
    assert_eq!(status(&new), 403);
}

#[test]
fn hostile_cookies_are_no_session_and_change_nothing() {
    let (s, _file, _site, _conf) = start("sso-hostile", &[K1]);
    let good = mint(K1, now() + 3600, "a@example.com", &["eng"]);
    let mac = good.rsplit('|').next().unwrap().to_string();
    let hostile = [
        "|".repeat(3000),
        format!("1|99999999999999999999|a|eng|{mac}"),
        format!("1|-5|a|eng|{mac}"),
        format!("{}|{mac}", "1|9999999999|a|eng".repeat(200)),
        format!("{good}{}", "A".repeat(4000)),
        "1|9999999999|a|eng|".to_string() + &"=".repeat(43),
        "\u{e9}\u{fffd}".repeat(100), // obs-text; a control byte or DEL is refused by the parser (http1/parser.rs), before any rule
    ];
    for (i, v) in hostile.iter().enumerate() {
        let r = s.get("/team/doc.html", &[("Cookie", &format!("hs_session={v}"))]);
        assert_eq!(r.status, 401, "hostile value {i}");
    }
    // Many cookie lines, the session in none of them or in the last: the first line holding one counts.
    let mut lines: Vec<(&str, String)> = (0..50).map(|i| ("Cookie", format!("c{i}=x"))).collect();
    lines.push(("Cookie", format!("hs_session={good}")));
    let refs: Vec<(&str, &str)> = lines.iter().map(|(n, v)| (*n, v.as_str())).collect();
    assert_eq!(s.get("/team/doc.html", &refs).status, 200, "the session on the 51st line");
    assert_eq!(s.get("/team/doc.html", &[("Cookie", &format!("hs_session={good}"))]).status, 200, "still serving");
}
