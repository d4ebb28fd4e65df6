//! The file's parsing (every refusal names its JSON path), the canonical rendering, and the flags building the
//! same value as the file that says the same thing.

use super::*;

fn err(json: &str) -> String {
    SiteValue::parse(json.as_bytes()).expect_err(json)
}

/// The contract's example (docs/design/site-value.md), field for field.
const EXAMPLE: &str = r#"{
  "version": 1,
  "cacheControl": [{"glob": "/assets/**", "value": "public, max-age=31536000, immutable"}],
  "defaultCacheControl": "no-cache",
  "headers": [{"glob": "/**/*.html", "name": "X-Frame-Options", "value": "DENY"}],
  "securityHeaders": true,
  "cors": [{"glob": "/fonts/**", "allowOrigins": ["*"], "allowMethods": ["GET"], "allowHeaders": ["X-Token"], "maxAge": 600}],
  "spaFallback": false,
  "notFoundPage": "/404.html",
  "redirects": [{"from": "/old/*", "to": "/new/:splat", "status": 301, "force": false}],
  "cleanURLs": false,
  "errorPages": [{"status": 404, "path": "/404.html", "pathPrefix": "/"}],
  "httpsRedirect": {"port": 443},
  "hsts": "max-age=31536000; includeSubDomains",
  "limits": {"perClient": {"requests": 10, "periodSeconds": 1, "burst": 20},
             "perClientHandshakes": {"handshakes": 5, "periodSeconds": 1, "burst": 10}}
}"#;

#[test]
fn the_contracts_example_parses() {
    let v = SiteValue::parse(EXAMPLE.as_bytes()).unwrap();
    assert_eq!(v.cache_control[0].glob.pattern(), "/assets/**");
    assert_eq!(v.cache_control[0].value, "public, max-age=31536000, immutable");
    assert_eq!((v.headers[0].name.as_str(), v.headers[0].value.as_str()), ("X-Frame-Options", "DENY"));
    assert!(v.cors[0].any);
    assert_eq!(v.cors[0].written.max_age, Some(600));
    assert_eq!(v.not_found_page.as_deref(), Some("/404.html"));
    assert_eq!((v.redirects[0].status, v.redirects[0].force), (301, false));
    assert_eq!((v.error_pages[0].status, v.error_pages[0].prefix.as_str()), (404, "/"));
    assert_eq!(v.https_redirect, Some(443));
    assert_eq!(v.hsts.as_deref(), Some("max-age=31536000; includeSubDomains"));
    assert_eq!(v.per_client, Some(crate::fairshare::Rate { requests: 10, period_s: 1, burst: 20 }));
    assert_eq!(v.per_client_handshakes, Some(crate::fairshare::Rate { requests: 5, period_s: 1, burst: 10 }));
    assert!(v.check_process(true).is_ok());
    assert_eq!(v.check_process(false).unwrap_err(), "httpsRedirect: needs a TLS listener (--tls-cert and --tls-key)");
}

#[test]
fn only_the_version_is_required() {
    assert_eq!(SiteValue::parse(br#"{"version": 1}"#).unwrap(), SiteValue::default());
    assert_eq!(err("{}"), "version: required (1)");
    assert_eq!(err(r#"{"version": 2}"#), "version: 2 is not a version this server reads (1)");
    assert_eq!(err(r#"{"version": "1"}"#), r#"version: "1" is not a version this server reads (1)"#);
    assert!(err("[]").starts_with("the site value: expected an object"));
    assert!(err("{\"version\": 1,").starts_with("invalid JSON: "));
}

#[test]
fn unknown_fields_are_named_with_their_path() {
    assert_eq!(err(r#"{"version": 1, "redirect": []}"#), "redirect: unknown field");
    let e = err(r#"{"version": 1, "redirects": [{"from": "/a", "to": "/b"}, {"from": "/a", "to": "/b"},
        {"from": "/a", "to": "/b", "form": "x"}]}"#);
    assert_eq!(e, "redirects[2].form: unknown field");
    assert_eq!(err(r#"{"version": 1, "httpsRedirect": {"prot": 1}}"#), "httpsRedirect.prot: unknown field");
    assert_eq!(
        err(r#"{"version": 1, "cors": [{"glob": "/a", "allowOrigins": ["*"], "maxage": 1}]}"#),
        "cors[0].maxage: unknown field"
    );
}

#[test]
fn each_rule_error_names_its_path() {
    for (json, starts) in [
        (r#""cacheControl": [{"glob": "/a"}]"#, "cacheControl[0].value: required"),
        (
            r#""cacheControl": [{"glob": "/a", "value": "x\u0001"}]"#,
            "cacheControl[0]: --cache-control \"/a=x\\u{1}\": invalid rule",
        ),
        (r#""cacheControl": [{"glob": "/a=b", "value": "x"}]"#, "cacheControl[0].glob: a glob cannot hold '='"),
        (r#""cacheControl": {"glob": "/a"}"#, "cacheControl: expected an array"),
        (r#""defaultCacheControl": 5"#, "defaultCacheControl: expected a string"),
        (r#""headers": [{"name": "Bad Name", "value": "x"}]"#, "headers[0].name: \"Bad Name\" is not a header name"),
        (
            r#""headers": [{"name": "Content-Length", "value": "1"}]"#,
            "headers[0]: --header \"Content-Length: 1\": Content-Length is set by the server",
        ),
        (r#""headers": [{"name": "X-A"}]"#, "headers[0].value: required"),
        (r#""securityHeaders": "yes""#, "securityHeaders: expected true or false"),
        (
            r#""cors": [{"glob": "/a", "allowOrigins": ["example.com"]}]"#,
            "cors[0]: --cors \"/a=example.com\": origin \"example.com\" is not",
        ),
        (r#""cors": [{"glob": "/a"}]"#, "cors[0].allowOrigins: required"),
        (
            r#""cors": [{"glob": "/a", "allowOrigins": ["*"], "allowMethods": []}]"#,
            "cors[0]: --cors \"/a=*;methods=\": methods is empty",
        ),
        (
            r#""cors": [{"glob": "/a", "allowOrigins": ["https://a.test,https://b.test"]}]"#,
            "cors[0].allowOrigins[0]: an entry cannot hold ','",
        ),
        (r#""cors": [{"glob": "/a", "allowOrigins": [1]}]"#, "cors[0].allowOrigins[0]: expected a string"),
        (r#""spaFallback": 1"#, "spaFallback: expected true or false"),
        (
            r#""redirects": [{"from": "/a", "to": "/b", "status": 404}]"#,
            "redirects[0].status: status 404 is not supported here",
        ),
        (
            r#""redirects": [{"from": "/a", "to": "/b", "status": 303}]"#,
            "redirects[0].status: status 303 is not supported",
        ),
        (r#""redirects": [{"from": "a", "to": "/b"}]"#, "redirects[0].from: a: from must be a path starting with /"),
        (
            r#""redirects": [{"from": "/a/*/b", "to": "/b"}]"#,
            "redirects[0].from: /a/*/b: a splat (*) must be the last segment",
        ),
        (r#""redirects": [{"from": "/a b", "to": "/b"}]"#, "redirects[0].from: a path cannot hold ' '"),
        (r#""redirects": [{"from": "/a"}]"#, "redirects[0].to: required"),
        (r#""redirects": [{"from": "/a", "to": "/b", "force": "yes"}]"#, "redirects[0].force: expected true or false"),
        (
            r#""errorPages": [{"status": 500, "path": "/500.html"}]"#,
            "errorPages[0]: --error-page \"500 /500.html /\": status must be one of",
        ),
        (r#""errorPages": [{"path": "/404.html"}]"#, "errorPages[0].status: required"),
        (
            r#""errorPages": [{"status": 404, "path": "404.html"}]"#,
            "errorPages[0]: --error-page \"404 404.html /\": PATH and PATH_PREFIX start with /",
        ),
        (r#""httpsRedirect": {"port": 70000}"#, "httpsRedirect.port: 70000 is not a port"),
        (r#""httpsRedirect": true"#, "httpsRedirect: expected an object"),
        (r#""hsts": "a\u0001b""#, "hsts: --hsts: invalid header value"),
        (r#""limits": []"#, "limits: expected an object"),
        (r#""limits": {"perClient": {"requests": 1, "burts": 2}}"#, "limits.perClient.burts: unknown field"),
        (r#""limits": {"perIP": {}}"#, "limits.perIP: unknown field"),
        (r#""limits": {"perClient": {"burst": 2}}"#, "limits.perClient.requests: required"),
        (r#""limits": {"perClient": {"requests": 0}}"#, "limits.perClient.requests: 0 is not between 1 and 1000000"),
        (r#""limits": {"perClient": {"requests": -1}}"#, "limits.perClient.requests: expected a non-negative integer"),
        (r#""limits": {"perClient": {"requests": 1.5}}"#, "limits.perClient.requests: expected a non-negative integer"),
        (
            r#""limits": {"perClient": {"requests": 1, "periodSeconds": 86401}}"#,
            "limits.perClient.periodSeconds: 86401 is not between 1 and 86400",
        ),
        (
            r#""limits": {"perClient": {"requests": 1, "burst": 1000001}}"#,
            "limits.perClient.burst: 1000001 is not between 1 and 1000000",
        ),
        (r#""limits": {"perClientHandshakes": {"requests": 1}}"#, "limits.perClientHandshakes.requests: unknown field"),
        (r#""limits": {"perClientHandshakes": {"burst": 2}}"#, "limits.perClientHandshakes.handshakes: required"),
        (
            r#""limits": {"perClientHandshakes": {"handshakes": 0}}"#,
            "limits.perClientHandshakes.handshakes: 0 is not between 1 and 1000000",
        ),
        (
            r#""limits": {"perClientHandshakes": {"handshakes": 1, "periodSeconds": 0}}"#,
            "limits.perClientHandshakes.periodSeconds: 0 is not between 1 and 86400",
        ),
        (
            r#""limits": {"perClientHandshakes": {"handshakes": 1, "burst": 1000001}}"#,
            "limits.perClientHandshakes.burst: 1000001 is not between 1 and 1000000",
        ),
    ] {
        let e = err(&format!("{{\"version\": 1, {json}}}"));
        assert!(e.starts_with(starts), "{json}\n  got: {e}\n want: {starts}");
    }
}

#[test]
fn the_canonical_rendering_is_stable_and_round_trips() {
    assert_eq!(SiteValue::default().canonical(), "{\n  \"version\": 1\n}\n");
    let v = SiteValue::parse(EXAMPLE.as_bytes()).unwrap();
    let c = v.canonical();
    // Defaults are left out; the rest in the contract's order, one field per line.
    assert_eq!(
        c,
        r#"{
  "version": 1,
  "cacheControl": [{"glob": "/assets/**", "value": "public, max-age=31536000, immutable"}],
  "headers": [{"glob": "/**/*.html", "name": "X-Frame-Options", "value": "DENY"}],
  "cors": [{"glob": "/fonts/**", "allowOrigins": ["*"], "allowMethods": ["GET"], "allowHeaders": ["X-Token"], "maxAge": 600}],
  "notFoundPage": "/404.html",
  "redirects": [{"from": "/old/*", "to": "/new/:splat"}],
  "errorPages": [{"status": 404, "path": "/404.html"}],
  "httpsRedirect": {},
  "hsts": "max-age=31536000; includeSubDomains",
  "limits": {"perClient": {"requests": 10, "burst": 20}, "perClientHandshakes": {"handshakes": 5, "burst": 10}}
}
"#
    );
    let again = SiteValue::parse(c.as_bytes()).unwrap();
    assert_eq!(again.canonical(), c, "the rendering parses back to itself");
    assert_eq!(revision_of(c.as_bytes()), v.clone().revised().revision);
    assert!(v.revised().revision.starts_with("sha256:"));
    assert_eq!(revision_of(b"").len(), "sha256:".len() + 16);
    assert_eq!(revision_of(b""), "sha256:e3b0c44298fc1c14", "the SHA-256 of nothing");
}

/// Every site-rule flag, and the file that says the same: one value, one canonical rendering.
#[test]
fn flags_and_the_equivalent_file_build_the_same_value() {
    let texts = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let from_flags = SiteValue::from_flags(RuleTexts {
        cache_control: texts(&["/assets/**=public, max-age=31536000, immutable", "*.html=no-cache"]),
        default_cache_control: " max-age=60 ".into(),
        headers: texts(&["X-Frame-Options: DENY", "*.js=X-Script: yes", "*=X-All: 1"]),
        security_headers: false,
        cors: texts(&[
            "/fonts/**=https://a.test, https://b.test;methods=get,put;headers=X-Token;max-age=600",
            "*.json=*",
        ]),
        spa_fallback: true,
        not_found_page: Some("404.html".into()),
        redirects: texts(&[
            "/old/* /new/:splat 302",
            "/docs/* /handbook/:splat 301!",
            "/app/* /index.html 200",
            "/x /y",
        ]),
        clean_urls: true,
        error_pages: texts(&["404 /docs/404.html /docs/", "405 /405.html"]),
        https_redirect: Some(8443),
        hsts: Some("max-age=5".into()),
    })
    .unwrap();
    let file = r#"{"version": 1,
        "cacheControl": [{"glob": "/assets/**", "value": "public, max-age=31536000, immutable"}, {"glob": "*.html", "value": "no-cache"}],
        "defaultCacheControl": "max-age=60",
        "headers": [{"name": "X-Frame-Options", "value": "DENY"}, {"glob": "*.js", "name": "X-Script", "value": "yes"}, {"glob": "*", "name": "X-All", "value": "1"}],
        "securityHeaders": false,
        "cors": [{"glob": "/fonts/**", "allowOrigins": ["https://a.test", "https://b.test"], "allowMethods": ["GET", "PUT"], "allowHeaders": ["X-Token"], "maxAge": 600},
                 {"glob": "*.json", "allowOrigins": ["*"]}],
        "spaFallback": true,
        "notFoundPage": "404.html",
        "redirects": [{"from": "/old/*", "to": "/new/:splat", "status": 302}, {"from": "/docs/*", "to": "/handbook/:splat", "force": true},
                      {"from": "/app/*", "to": "/index.html", "status": 200}, {"from": "/x", "to": "/y", "status": 301}],
        "cleanURLs": true,
        "errorPages": [{"status": 404, "path": "/docs/404.html", "pathPrefix": "/docs/"}, {"status": 405, "path": "/405.html"}],
        "httpsRedirect": {"port": 8443},
        "hsts": "max-age=5"}"#;
    let from_file = SiteValue::parse(file.as_bytes()).unwrap();
    assert_eq!(from_flags.canonical(), from_file.canonical());
    // The compiled rules are the same too (the redirects differ only in where they were written, for messages).
    let strip = |mut v: SiteValue| {
        for r in &mut v.redirects {
            r.origin.clear();
            r.text.clear();
        }
        v
    };
    assert_eq!(strip(from_flags.clone()), strip(from_file));
    // And the canonical rendering parses back to the same value.
    assert_eq!(strip(SiteValue::parse(from_flags.canonical().as_bytes()).unwrap()), strip(from_flags));
}

#[test]
fn a_file_is_read_bounded_and_named_in_errors() {
    let dir = std::env::temp_dir().join(format!("hs-site-value-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("site.json");
    std::fs::write(&f, EXAMPLE).unwrap();
    let r = read(&f, true).unwrap();
    assert_eq!(r.revision, revision_of(EXAMPLE.as_bytes()), "the revision is of the file's bytes");
    let e = read(&f, false).unwrap_err();
    assert_eq!(
        e,
        format!("site value {}: httpsRedirect: needs a TLS listener (--tls-cert and --tls-key)", f.display())
    );
    std::fs::write(&f, vec![b' '; MAX_FILE_BYTES as usize + 1]).unwrap();
    assert!(read(&f, true).unwrap_err().ends_with(&format!("larger than {MAX_FILE_BYTES} bytes")));
    assert!(read(&dir.join("missing.json"), true).unwrap_err().contains("No such file"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A '#' inside a redirect target is its fragment, as with `--redirect '/a /b#x 301'` (the operator's CRD admits
/// it); only a part that starts with '#' (a comment in the line syntax) is refused.
#[test]
fn a_fragment_in_a_redirect_target_is_kept() {
    let v = SiteValue::parse(br#"{"version": 1, "redirects": [{"from": "/a", "to": "/b#x"}]}"#).unwrap();
    let flags = SiteValue::from_flags(RuleTexts {
        redirects: vec!["/a /b#x 301".into()],
        default_cache_control: "no-cache".into(),
        security_headers: true,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(v.canonical(), flags.canonical());
    assert_eq!(
        err(r##"{"version": 1, "redirects": [{"from": "/a", "to": "#b"}]}"##),
        "redirects[0].to: a path cannot start with '#'"
    );
}

/// `limits.perClient`: off by default, `periodSeconds` 1 and a burst of `requests` when absent, and those defaults
/// left out of the canonical rendering.
#[test]
fn per_client_limits_take_their_defaults() {
    use crate::fairshare::Rate;
    let parse = |json: &str| SiteValue::parse(format!("{{\"version\": 1, {json}}}").as_bytes()).unwrap();
    assert_eq!(SiteValue::default().per_client, None);
    assert_eq!(parse(r#""limits": {}"#).per_client, None, "an empty limits object limits nothing");
    let v = parse(r#""limits": {"perClient": {"requests": 5}}"#);
    assert_eq!(v.per_client, Some(Rate { requests: 5, period_s: 1, burst: 5 }));
    assert!(v.canonical().contains(r#""limits": {"perClient": {"requests": 5}}"#), "{}", v.canonical());
    let v = parse(r#""limits": {"perClient": {"requests": 1, "periodSeconds": 600, "burst": 3}}"#);
    assert_eq!(v.per_client, Some(Rate { requests: 1, period_s: 600, burst: 3 }));
    assert_eq!(SiteValue::parse(v.canonical().as_bytes()).unwrap(), v, "the rendering parses back");
}

/// `limits.perClientHandshakes`: the same bucket with `handshakes` for its count, rendered beside perClient, and
/// refused without a TLS listener (there are no handshakes to limit).
#[test]
fn per_client_handshake_limits_take_their_defaults_and_need_tls() {
    use crate::fairshare::Rate;
    let parse = |json: &str| SiteValue::parse(format!("{{\"version\": 1, {json}}}").as_bytes()).unwrap();
    assert_eq!(SiteValue::default().per_client_handshakes, None);
    let v = parse(r#""limits": {"perClientHandshakes": {"handshakes": 5}}"#);
    assert_eq!((v.per_client, v.per_client_handshakes), (None, Some(Rate { requests: 5, period_s: 1, burst: 5 })));
    assert!(v.canonical().contains(r#""limits": {"perClientHandshakes": {"handshakes": 5}}"#), "{}", v.canonical());
    assert!(v.check_process(true).is_ok());
    assert_eq!(
        v.check_process(false).unwrap_err(),
        "limits.perClientHandshakes: needs a TLS listener (--tls-cert and --tls-key)"
    );
    let both = concat!(
        r#""limits": {"perClient": {"requests": 2}, "#,
        r#""perClientHandshakes": {"handshakes": 1, "periodSeconds": 60, "burst": 4}}"#
    );
    let v = parse(both);
    assert_eq!(v.per_client, Some(Rate { requests: 2, period_s: 1, burst: 2 }));
    assert_eq!(v.per_client_handshakes, Some(Rate { requests: 1, period_s: 60, burst: 4 }));
    assert!(v.canonical().contains(both), "{}", v.canonical());
    assert_eq!(SiteValue::parse(v.canonical().as_bytes()).unwrap(), v, "the rendering parses back");
}

/// `access` (guard/): every block, prefix and realm checked and named by its path; the htpasswd file is read by
/// `read`, beside the value file, and a bad one refuses the value naming the field and the line.
#[test]
fn access_errors_name_their_path_and_the_htpasswd_file_is_read_beside_the_value() {
    let err = |json: &str| SiteValue::parse(format!("{{\"version\": 1, \"access\": {json}}}").as_bytes()).unwrap_err();
    for (json, want) in [
        (
            r#"{"rules": [{"pathPrefix": "/a", "allow": ["10.0.0.1/8"]}]}"#,
            "access.rules[0].allow[0]: \"10.0.0.1/8\": host bits set",
        ),
        (
            r#"{"rules": [{"pathPrefix": "/a", "deny": ["nope"]}]}"#,
            "access.rules[0].deny[0]: \"nope\" is not an IP address",
        ),
        (
            r#"{"trustedProxies": ["::/200"]}"#,
            "access.trustedProxies[0]: \"::/200\": an IPv6 prefix length is at most 128",
        ),
        (r#"{"rules": [{"pathPrefix": "a"}]}"#, "access.rules[0].pathPrefix: \"a\": a path prefix starts with /"),
        (
            r#"{"rules": [{"pathPrefix": "/a/"}, {"pathPrefix": "/a"}]}"#,
            "access.rules[1].pathPrefix: \"/a\" has a rule already",
        ),
        (
            r#"{"rules": [{"pathPrefix": "/a", "basicAuth": {}}]}"#,
            "access.rules[0].basicAuth: needs access.htpasswdFile",
        ),
        (
            r#"{"htpasswdFile": "h", "rules": [{"pathPrefix": "/a", "basicAuth": {"realm": "a\"b"}}]}"#,
            "access.rules[0].basicAuth.realm",
        ),
        (r#"{"rules": [{"pathPrefix": "/a", "users": []}]}"#, "access.rules[0].users: unknown field"),
    ] {
        let e = err(json);
        assert!(e.starts_with(want), "{json}: {e}");
    }
    let dir = std::env::temp_dir().join(format!("hs-site-value-access-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("site.json");
    std::fs::write(
        &file,
        r#"{"version": 1, "access": {"htpasswdFile": "users", "rules": [{"pathPrefix": "/", "basicAuth": {}}]}}"#,
    )
    .unwrap();
    let e = read(&file, false).unwrap_err();
    assert!(e.contains("access.htpasswdFile") && e.contains("users"), "{e}");
    std::fs::write(dir.join("users"), "u:$apr1$x$y\n").unwrap();
    assert!(read(&file, false).unwrap_err().contains("access.htpasswdFile"), "an MD5 line refuses the value");
    std::fs::write(dir.join("users"), format!("u:{}\n", bcrypt::hash("pw", 4).unwrap())).unwrap();
    let v = read(&file, false).unwrap();
    assert_eq!(v.value.access.as_ref().unwrap().users.as_ref().map(|u| u.len()), Some(1));
    std::fs::remove_dir_all(dir).unwrap();
}

/// `skewProtection.window` (skew/): Go's duration forms in whole units, 1 s to 7 days, named by its path when
/// refused; the canonical rendering writes seconds, as the operator does.
#[test]
fn skew_protection_takes_a_bounded_window() {
    let window =
        |w: &str| SiteValue::parse(format!(r#"{{"version": 1, "skewProtection": {{"window": "{w}"}}}}"#).as_bytes());
    for (w, s) in
        [("1h", 3600), ("1h0m0s", 3600), ("90m", 5400), ("1h30m", 5400), ("3600s", 3600), ("168h", 604_800), ("1s", 1)]
    {
        assert_eq!(window(w).unwrap().skew_window, Some(s), "{w}");
    }
    for w in ["0s", "169h", "604801s"] {
        assert!(window(w).unwrap_err().starts_with("skewProtection.window: "), "{w}");
        assert!(window(w).unwrap_err().contains("between 1s and 168h"), "{w}");
    }
    for w in ["", "1d", "1.5h", "30m1h", "-1h", "1h 30m", "h", "99999999999999999999h"] {
        assert!(window(w).unwrap_err().contains("is not a duration"), "{w:?}");
    }
    assert_eq!(err(r#"{"version": 1, "skewProtection": {}}"#), "skewProtection.window: required");
    assert_eq!(err(r#"{"version": 1, "skewProtection": {"windw": "1h"}}"#), "skewProtection.windw: unknown field");
    assert_eq!(SiteValue::parse(br#"{"version": 1}"#).unwrap().skew_window, None, "off by default");
    let v = window("1h30m").unwrap();
    assert!(v.canonical().contains(r#""skewProtection": {"window": "5400s"}"#), "{}", v.canonical());
    assert_eq!(SiteValue::parse(v.canonical().as_bytes()).unwrap(), v, "the rendering reads back");
}
