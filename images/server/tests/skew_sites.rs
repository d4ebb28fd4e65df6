//! Skew protection in the many-sites mode (`--sites DIR`, docs/design/deploys.md "As built: step 3") against the
//! real binary: a site with previews runs its server that way, and its puller lays production out as a Store under
//! `DIR/content/production.site/` (trees, `current`, `deploys.json`) and each preview as a Store of its own with no
//! list (internal/contentagent/previewlayout.go). Production's previous trees answer what its current tree lacks,
//! within the window, not to a navigation, over HTTP/1.1 and HTTP/2; a preview's host never gets production's
//! previous trees; a flip brings the new list (the puller writes it before the flip, then `.ready`); a malformed
//! list keeps production serving without skew protection; a site with no list beside its tree (a preview, a pool
//! site) serves as ever. Times are an hour or more from the windows' edges, as in tests/skew.rs.

mod common;

use common::deploys::*;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROD: &str = "production.site";
const PREVIEW: &str = "preview.pr-1";
const PROD_HOST: &str = "docs.example.com";
const PREVIEW_HOST: &str = "pr-1--docs.preview.example.com";
const LIMITS: &str = r#"{"maxFiles": 100, "maxBytes": 1000000, "requestsPerSecond": 100000}"#;

struct Layout {
    dir: Site,
    current: String,
    /// Ended a minute ago, ten minutes ago, two hours ago (the window is one hour).
    a: String,
    b: String,
    gone: String,
}

impl Layout {
    fn content(&self, id: &str) -> PathBuf {
        self.dir.join("content").join(id)
    }
}

/// Both shards as the puller renders them, every entry with the same site value (the puller embeds the site's
/// value in production's entry and in every preview's).
fn write_index(dir: &Path, value: &str) {
    let entry =
        |id: &str, host: &str| format!(r#"{{"id":"{id}","hosts":["{host}"],"value":{value},"limits":{LIMITS}}}"#);
    for (shard, (file, id, host)) in
        [("0-production.json", PROD, PROD_HOST), ("1-previews.json", PREVIEW, PREVIEW_HOST)].into_iter().enumerate()
    {
        let ix = dir.join("index");
        let text = format!(r#"{{"version":1,"shard":{shard},"sites":[{}]}}"#, entry(id, host));
        std::fs::write(ix.join(".tmp"), text).unwrap();
        std::fs::rename(ix.join(".tmp"), ix.join(file)).unwrap();
    }
}

/// `.ready/<id>`, as the puller says a site was flipped.
fn ready(dir: &Path, id: &str) {
    let r = dir.join("content/.ready");
    std::fs::write(r.join(format!(".{id}")), b"").unwrap();
    std::fs::rename(r.join(format!(".{id}")), r.join(id)).unwrap();
}

fn layout(name: &str, window: &str) -> Layout {
    let dir = tempdir(&format!("skew-sites-{name}"));
    std::fs::create_dir_all(dir.join("index")).unwrap();
    std::fs::create_dir_all(dir.join("content/.ready")).unwrap();
    let (current, a, b, gone) = (commit('d'), commit('c'), commit('b'), commit('a'));
    let prod = dir.join("content").join(PROD);
    write_tree(&prod, &current, &[("index.html", "home d"), ("assets/app-d.js", "app d")]);
    write_tree(&prod, &a, &[("index.html", "home c"), ("old.html", "old page c"), ("assets/app-c.js", "app c")]);
    write_tree(&prod, &b, &[("assets/only-b.js", "only b")]);
    write_tree(&prod, &gone, &[("assets/gone.js", "gone a")]);
    write_deploys(&prod, &[(&current, None), (&b, Some(-600)), (&a, Some(-60)), (&gone, Some(-7200))]);
    flip(&prod, &current);
    // The preview: one commit, its own Store, no list (the puller writes none for a preview).
    let pv = dir.join("content").join(PREVIEW);
    let pr = commit('e');
    write_tree(&pv, &pr, &[("index.html", "preview home")]);
    flip(&pv, &pr);
    write_index(&dir, &format!(r#"{{"version":1,"skewProtection":{{"window":"{window}"}}}}"#));
    Layout { dir, current, a, b, gone }
}

/// One HTTP/1.1 GET to `host`.
fn get(s: &Server, host: &str, path: &str, headers: &[(&str, &str)]) -> Response {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let (mut rs, _) = parse_responses(&s.raw(req.as_bytes()), false);
    assert_eq!(rs.len(), 1);
    rs.remove(0)
}

/// GET until the site answers something else than its 503 (a cold site's first request asks for its load).
fn served(s: &Server, host: &str, path: &str) -> Response {
    let mut last = None;
    wait_for(&format!("{host}{path} served"), || {
        let r = get(s, host, path, &[]);
        let done = r.status != 503;
        last = Some(r);
        done
    });
    last.unwrap()
}

fn deploy_of(r: &Response) -> (u16, String, Option<&str>) {
    (r.status, r.text(), r.header("X-Hyperstatic-Deploy"))
}

#[test]
fn production_answers_from_its_previous_deploys_and_a_preview_never_does() {
    let l = layout("window", "1h");
    let s = Server::start_pool(&l.dir, &["--h2c"]);
    assert_eq!(served(&s, PROD_HOST, "/").text(), "home d");
    let r = get(&s, PROD_HOST, "/assets/app-c.js", &[("Accept", "*/*"), ("Sec-Fetch-Dest", "script")]);
    assert_eq!(deploy_of(&r), (200, "app c".into(), Some(l.a.as_str())));
    assert_eq!(r.header("Cache-Control"), Some("private, max-age=60"));
    assert_eq!(r.header("Content-Type"), Some("text/javascript; charset=utf-8"));
    let r = get(&s, PROD_HOST, "/assets/only-b.js", &[]);
    assert_eq!(deploy_of(&r), (200, "only b".into(), Some(l.b.as_str())), "the older tree within the window");
    assert_eq!(deploy_of(&get(&s, PROD_HOST, "/assets/app-d.js", &[])), (200, "app d".into(), None), "current");

    // A navigation, an HTML path, a tree past its window: the usual 404.
    for (path, headers) in [
        ("/assets/app-c.js", &[("Sec-Fetch-Dest", "document")][..]),
        ("/assets/app-c.js", &[("Accept", "text/html,*/*;q=0.8")][..]),
        ("/old.html", &[][..]),
        ("/assets/gone.js", &[][..]),
    ] {
        let r = get(&s, PROD_HOST, path, headers);
        assert_eq!((r.status, r.header("X-Hyperstatic-Deploy")), (404, None), "{path} {headers:?} ({})", l.gone);
    }

    // The preview, with the same value (the window on): its own tree only, never production's previous ones.
    assert_eq!(served(&s, PREVIEW_HOST, "/").text(), "preview home");
    for path in ["/assets/app-c.js", "/assets/only-b.js", "/assets/app-d.js"] {
        let r = get(&s, PREVIEW_HOST, path, &[("Sec-Fetch-Dest", "script")]);
        assert_eq!((r.status, r.header("X-Hyperstatic-Deploy")), (404, None), "preview {path}");
    }

    // HTTP/2 routes by :authority to the same table: the same answers.
    let curl = |authority: &str, path: &str, dest: &str| -> String {
        let out = Command::new("curl")
            .args(["-sS", "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null", "-H"])
            .arg(format!("Sec-Fetch-Dest: {dest}"))
            .args(["--connect-to", &format!("{authority}:80:127.0.0.1:{}", s.port)])
            .arg(format!("http://{authority}{path}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().to_ascii_lowercase()
    };
    let head = curl(PROD_HOST, "/assets/app-c.js", "script");
    assert!(head.starts_with("http/2 200") && head.contains(&format!("x-hyperstatic-deploy: {}", l.a)), "{head}");
    assert!(curl(PROD_HOST, "/assets/app-c.js", "document").starts_with("http/2 404"));
    assert!(curl(PREVIEW_HOST, "/assets/app-c.js", "script").starts_with("http/2 404"));

    // The window narrowed in the index (the site value changed live): b, ten minutes ago, is past five minutes.
    write_index(&l.dir, r#"{"version":1,"skewProtection":{"window":"5m"}}"#);
    wait_for("the shorter window", || get(&s, PROD_HOST, "/assets/only-b.js", &[]).status == 404);
    assert_eq!(get(&s, PROD_HOST, "/assets/app-c.js", &[]).status, 200, "a minute ago is within five");
    // Off: no previous tree answers.
    write_index(&l.dir, r#"{"version":1}"#);
    wait_for("skew protection off", || get(&s, PROD_HOST, "/assets/app-c.js", &[]).status == 404);
}

/// The puller's order: the new list renamed in, then `current` flipped, then `.ready`: production's reload reads
/// the list that goes with the new tree, so the tree just replaced answers for the old pages.
#[test]
fn a_flip_brings_the_new_list() {
    let l = layout("flip", "1h");
    let s = Server::start_pool(&l.dir, &[]);
    assert_eq!(served(&s, PROD_HOST, "/").text(), "home d");
    let prod = l.content(PROD);
    let next = commit('f');
    write_tree(&prod, &next, &[("index.html", "home f"), ("assets/app-f.js", "app f")]);
    write_deploys(&prod, &[(&next, None), (&l.current, Some(-1)), (&l.a, Some(-60))]);
    flip(&prod, &next);
    ready(&l.dir, PROD);
    wait_for("the flip", || get(&s, PROD_HOST, "/", &[]).text() == "home f");
    let r = get(&s, PROD_HOST, "/assets/app-d.js", &[]);
    assert_eq!(deploy_of(&r), (200, "app d".into(), Some(l.current.as_str())), "the tree just replaced");
    assert_eq!(get(&s, PROD_HOST, "/assets/only-b.js", &[]).status, 404, "no longer listed");
}

#[test]
fn a_bad_list_keeps_production_serving_without_skew_protection() {
    let l = layout("bad", "1h");
    write_raw_deploys(&l.content(PROD), &format!(r#"{{"deploys":[{{"tree":"../{}","commit":"x"}}]}}"#, l.a));
    let s = Server::start_pool(&l.dir, &[]);
    assert_eq!(served(&s, PROD_HOST, "/").text(), "home d");
    assert_eq!(get(&s, PROD_HOST, "/assets/app-c.js", &[]).status, 404);
    wait_for("the log naming the file and the site", || {
        s.logs.lock().unwrap().iter().any(|l| {
            l.contains("deploys refused")
                && l.contains("deploys[0].tree")
                && l.contains(&format!("\"site\":\"{PROD}\""))
        })
    });
    // Fixed by the next deploy: on again.
    write_deploys(&l.content(PROD), &[(&l.current, None), (&l.a, Some(-60))]);
    ready(&l.dir, PROD);
    wait_for("the good list", || get(&s, PROD_HOST, "/assets/app-c.js", &[]).status == 200);
}

/// A site with no list beside its tree (a pool site: the pool puller keeps one tree and writes none) and the
/// window set serves its tree and the usual 404s, and keeps serving across its reloads.
#[test]
fn a_site_without_a_list_serves_as_ever() {
    let l = layout("nolist", "1h");
    std::fs::remove_file(l.content(PROD).join("deploys.json")).unwrap();
    let s = Server::start_pool(&l.dir, &[]);
    assert_eq!(served(&s, PROD_HOST, "/").text(), "home d");
    assert_eq!(get(&s, PROD_HOST, "/assets/app-c.js", &[]).status, 404);
    ready(&l.dir, PROD);
    wait_for("the reload", || s.logs.lock().unwrap().iter().filter(|l| l.contains("pool site loaded")).count() >= 2);
    assert_eq!(get(&s, PROD_HOST, "/assets/app-d.js", &[]).text(), "app d");
    assert_eq!(get(&s, PROD_HOST, "/assets/app-c.js", &[]).status, 404);
}
