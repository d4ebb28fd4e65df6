//! `--sites DIR` (docs/design/pools.md) against the real binary: sites chosen by Host and by HTTP/2 `:authority`,
//! the one 404 of unknown hosts, index reloads through the kubelet's `..data` swap (adding and removing a site
//! without reloading the others), `.ready` reloads of one site, a refused shard keeping its last good form, the
//! per-site limits (files and bytes: 503; requests per second: 429), `/sites` and the pool metrics, and the
//! contract's example index (the operator's Go side tests against the same bytes).

mod common;

use std::future::poll_fn;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use common::h2::bridged;
use common::{parse_responses, tempdir, wait_for, Response, Server};

const LIMITS: &str = r#"{"maxFiles": 100, "maxBytes": 1000000, "requestsPerSecond": 100000}"#;

/// A pool directory: `index/` written as the kubelet writes a projected ConfigMap volume, `content/` as the
/// puller writes it.
struct Pool {
    dir: PathBuf,
    _keep: common::Site,
}

static SWAPS: AtomicU32 = AtomicU32::new(0);

fn site_json(id: &str, hosts: &[&str], value: &str, limits: &str) -> String {
    let hs: Vec<String> = hosts.iter().map(|h| format!("{h:?}")).collect();
    format!(r#"{{"id": "{id}", "hosts": [{}], "value": {value}, "limits": {limits}}}"#, hs.join(", "))
}

impl Pool {
    fn new(name: &str) -> Pool {
        let keep = tempdir(&format!("pool-{name}"));
        let dir = keep.to_path_buf();
        std::fs::create_dir_all(dir.join("index")).unwrap();
        std::fs::create_dir_all(dir.join("content/.ready")).unwrap();
        Pool { dir, _keep: keep }
    }

    /// Writes the index's shards (name → bytes) as the kubelet does: a new timestamped directory, `..data`
    /// swapped to it by a rename, and each shard name a link through `..data`.
    fn index(&self, shards: &[(&str, String)]) {
        let ix = self.dir.join("index");
        let ts = format!("..ts{}", SWAPS.fetch_add(1, Ordering::Relaxed));
        std::fs::create_dir_all(ix.join(&ts)).unwrap();
        for (name, bytes) in shards {
            std::fs::write(ix.join(&ts).join(name), bytes).unwrap();
        }
        symlink(&ts, ix.join("..data_tmp")).unwrap();
        std::fs::rename(ix.join("..data_tmp"), ix.join("..data")).unwrap();
        for (name, _) in shards {
            let link = ix.join(name);
            if std::fs::symlink_metadata(&link).is_err() {
                symlink(format!("..data/{name}"), link).unwrap();
            }
        }
    }

    fn shard(&self, sites: &[String]) -> String {
        format!(r#"{{"version": 1, "shard": 0, "sites": [{}]}}"#, sites.join(", "))
    }

    /// Installs `files` as `id`'s tree `rev` and flips `current` to it, as the puller does, then says so in
    /// `.ready` (an empty file written then renamed into place).
    fn tree(&self, id: &str, rev: &str, files: &[(&str, &[u8])]) {
        let d = self.dir.join("content").join(id);
        for (p, b) in files {
            let f = d.join(rev).join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, b).unwrap();
        }
        let tmp = d.join(".current-new");
        let _ = std::fs::remove_file(&tmp);
        symlink(rev, &tmp).unwrap();
        std::fs::rename(&tmp, d.join("current")).unwrap();
        let ready = self.dir.join("content/.ready");
        std::fs::write(ready.join(format!(".{id}.tmp")), b"").unwrap();
        std::fs::rename(ready.join(format!(".{id}.tmp")), ready.join(id)).unwrap();
    }
}

fn get(s: &Server, host: Option<&str>, path: &str) -> (Response, Vec<u8>) {
    let host = host.map_or(String::new(), |h| format!("Host: {h}\r\n"));
    let bytes = s.raw(format!("GET {path} HTTP/1.1\r\n{host}Connection: close\r\n\r\n").as_bytes());
    let (mut rs, _) = parse_responses(&bytes, false);
    assert_eq!(rs.len(), 1, "{:?}", String::from_utf8_lossy(&bytes));
    (rs.remove(0), bytes)
}

/// GET until the site answers something else than its 503 (a cold site's first requests ask for its load).
fn served(s: &Server, host: &str, path: &str) -> Response {
    let mut last = None;
    wait_for(&format!("{host}{path} served"), || {
        let (r, _) = get(s, Some(host), path);
        let done = r.status != 503;
        last = Some(r);
        done
    });
    last.unwrap()
}

/// Served, and its full load done (a site serves from its quick load first, every body from disk). Asked for
/// while it waits: once the budget is full, a site takes memory from another only when it is asked for in two
/// looks in a row and the other is less than half as hot (src/pool/registry.rs, "Who gets memory").
fn warm(s: &Server, host: &str, id: &str) -> Response {
    let r = served(s, host, "/");
    wait_for(&format!("{id} in memory"), || {
        get(s, Some(host), "/");
        site_of(&sites(s, ""), id)["state"] == "memory"
    });
    r
}

fn loads_of(s: &Server, id: &str) -> usize {
    let needle = format!("\"msg\":\"pool site loaded\",\"site\":\"{id}\"");
    s.logs.lock().unwrap().iter().filter(|l| l.contains(&needle)).count()
}

fn sites(s: &Server, query: &str) -> serde_json::Value {
    let r = s.admin_get(&format!("/sites{query}"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    serde_json::from_slice(&r.body).unwrap()
}

fn site_of<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["sites"].as_array().unwrap().iter().find(|s| s["id"] == id).unwrap_or_else(|| panic!("{id} in {v}"))
}

/// The response without its Date line (the only part that may differ between two answers a second apart).
fn undated(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).lines().filter(|l| !l.starts_with("Date: ")).collect::<Vec<_>>().join("\n")
}

fn two_sites(name: &str) -> Pool {
    let p = Pool::new(name);
    p.tree("team-a.docs", "r1", &[("index.html", b"docs home"), ("404.html", b"docs 404"), ("guide.html", b"guide")]);
    p.tree("team-b.shop", "r1", &[("index.html", b"shop home")]);
    let a = site_json(
        "team-a.docs",
        &["docs.example.com", "docs.team-a.svc"],
        r#"{"version": 1, "cleanURLs": true, "notFoundPage": "/404.html"}"#,
        LIMITS,
    );
    let b = site_json("team-b.shop", &["shop.example.com"], r#"{"version": 1}"#, LIMITS);
    p.index(&[("index-00.json", p.shard(&[a])), ("index-01.json", p.shard(&[b]))]);
    p
}

#[test]
fn sites_by_host_each_with_its_rules_and_one_404_for_every_unknown_host() {
    let p = two_sites("hosts");
    let s = Server::start_pool(&p.dir, &[]);
    // A cold site's first request waits for its quick load (served from disk), not for a 503.
    let (r, _) = get(&s, Some("shop.example.com"), "/");
    assert_eq!((r.status, r.text().as_str()), (200, "shop home"));
    assert_eq!(site_of(&sites(&s, ""), "team-a.docs")["state"], "unloaded", "the other site is not loaded");
    // Pipelined behind a request to a loaded site, the first request of another cold site.
    let mut c = s.connect();
    std::io::Write::write_all(
        &mut c,
        b"GET / HTTP/1.1\r\nHost: shop.example.com\r\n\r\nGET /guide HTTP/1.1\r\nHost: docs.example.com\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let (rs, _) = parse_responses(&common::read_to_close(&mut c), false);
    let got: Vec<(u16, String)> = rs.iter().map(|r| (r.status, r.text())).collect();
    assert_eq!(got, [(200, "shop home".to_string()), (200, "guide".to_string())]);
    assert_eq!(served(&s, "docs.example.com", "/").text(), "docs home");
    assert_eq!(served(&s, "shop.example.com", "/").text(), "shop home");
    // Any spelling of the host: case, port, trailing dot.
    assert_eq!(get(&s, Some("DOCS.Example.com:8080"), "/").0.text(), "docs home");
    assert_eq!(get(&s, Some("docs.team-a.svc."), "/").0.text(), "docs home");
    // The site's value applies to its requests only: clean URLs and its 404 page.
    assert_eq!(get(&s, Some("docs.example.com"), "/guide").0.text(), "guide");
    let (r, _) = get(&s, Some("docs.example.com"), "/nope");
    assert_eq!((r.status, r.text().as_str()), (404, "docs 404"));
    let (r, _) = get(&s, Some("shop.example.com"), "/guide");
    assert_eq!((r.status, r.text().as_str()), (404, "404 Not Found\n"));
    // Unknown hosts, and no Host at all (HTTP/1.0): the same bytes, naming no site.
    let (r, first) = get(&s, Some("unknown.example"), "/");
    assert_eq!(r.status, 404);
    for host in [Some("other.example:80"), Some("docs.example.com.evil"), None] {
        let bytes = match host {
            Some(h) => get(&s, Some(h), "/").1,
            None => s.raw(b"GET / HTTP/1.0\r\n\r\n"),
        };
        assert_eq!(undated(&bytes), undated(&first), "{host:?}");
    }
    let text = undated(&first);
    assert!(!text.contains("docs") && !text.contains("shop"), "{text}");
}

#[test]
fn sites_by_http2_authority() {
    let p = two_sites("h2");
    let s = Server::start_pool(&p.dir, &["--h2c"]);
    served(&s, "docs.example.com", "/");
    served(&s, "shop.example.com", "/");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let io = bridged(s.port, &rt);
    rt.block_on(async {
        let (mut client, connection) = h2::client::Builder::new().handshake::<_, &'static [u8]>(io).await.unwrap();
        let conn_task = tokio::task::spawn(connection);
        for (uri, status, body) in [
            ("http://docs.example.com/", 200, &b"docs home"[..]),
            ("http://shop.example.com:8080/", 200, b"shop home"),
            ("http://docs.example.com/nope", 404, b"docs 404"),
            ("http://nobody.example/", 404, b"404 Not Found\n"),
        ] {
            poll_fn(|cx| client.poll_ready(cx)).await.unwrap();
            let req = http::Request::builder().uri(uri).body(()).unwrap();
            let (resp, _) = client.send_request(req, true).unwrap();
            let resp = resp.await.unwrap();
            assert_eq!(resp.status().as_u16(), status, "{uri}");
            let mut b = resp.into_body();
            let mut got = Vec::new();
            while let Some(chunk) = b.data().await {
                got.extend_from_slice(&chunk.unwrap());
            }
            assert_eq!(got, body, "{uri}");
        }
        drop(client);
        let _ = conn_task.await;
    });
}

#[test]
fn an_index_change_adds_and_removes_a_site_without_reloading_the_others() {
    let p = Pool::new("reindex");
    p.tree("a.one", "r1", &[("index.html", b"one")]);
    p.tree("b.two", "r1", &[("index.html", b"two")]);
    let a = site_json("a.one", &["one.example"], r#"{"version": 1}"#, LIMITS);
    let b = site_json("b.two", &["two.example"], r#"{"version": 1}"#, LIMITS);
    p.index(&[("index-00.json", p.shard(std::slice::from_ref(&a)))]);
    let s = Server::start_pool(&p.dir, &[]);
    warm(&s, "one.example", "a.one");
    let before = get(&s, Some("one.example"), "/").0;
    let loads = loads_of(&s, "a.one");
    assert_eq!(get(&s, Some("two.example"), "/").0.status, 404, "not in the index yet");

    p.index(&[("index-00.json", p.shard(&[a.clone(), b]))]);
    wait_for("two.example in the index", || get(&s, Some("two.example"), "/").0.status != 404);
    assert_eq!(served(&s, "two.example", "/").text(), "two");
    let (after, _) = get(&s, Some("one.example"), "/");
    assert_eq!((after.status, &after.body, after.header("etag")), (200, &before.body, before.header("etag")));
    assert_eq!(loads_of(&s, "a.one"), loads, "the other site was not reloaded");

    p.index(&[("index-00.json", p.shard(&[a]))]);
    wait_for("two.example gone", || get(&s, Some("two.example"), "/").0.status == 404);
    assert_eq!(get(&s, Some("one.example"), "/").0.body, before.body);
    assert_eq!(loads_of(&s, "a.one"), loads);
    assert!(sites(&s, "")["sites"].as_array().unwrap().iter().all(|x| x["id"] != "b.two"));
}

#[test]
fn ready_reloads_that_site_only() {
    let p = two_sites("ready");
    let s = Server::start_pool(&p.dir, &[]);
    warm(&s, "docs.example.com", "team-a.docs");
    warm(&s, "shop.example.com", "team-b.shop");
    let (a, b) = (loads_of(&s, "team-a.docs"), loads_of(&s, "team-b.shop"));
    p.tree("team-a.docs", "r2", &[("index.html", b"docs v2"), ("404.html", b"docs 404")]);
    wait_for("the new tree", || get(&s, Some("docs.example.com"), "/").0.text() == "docs v2");
    assert_eq!(get(&s, Some("shop.example.com"), "/").0.text(), "shop home");
    assert_eq!(loads_of(&s, "team-b.shop"), b, "the other site was not reloaded");
    assert!(loads_of(&s, "team-a.docs") > a);
    assert_eq!(site_of(&sites(&s, ""), "team-a.docs")["contentRevision"], "r2");
}

#[test]
fn a_site_without_a_tree_answers_503_until_its_tree_comes() {
    let p = Pool::new("missing");
    p.index(&[("index-00.json", p.shard(&[site_json("a.one", &["one.example"], r#"{"version": 1}"#, LIMITS)]))]);
    let s = Server::start_pool(&p.dir, &[]);
    let (r, _) = get(&s, Some("one.example"), "/");
    assert_eq!((r.status, r.header("retry-after")), (503, Some("1")));
    assert_eq!(site_of(&sites(&s, ""), "a.one")["state"], "missing");
    p.tree("a.one", "r1", &[("index.html", b"one")]);
    assert_eq!(served(&s, "one.example", "/").text(), "one");
}

#[test]
fn a_refused_shard_keeps_its_last_good_form_and_says_why() {
    let p = two_sites("refused");
    let s = Server::start_pool(&p.dir, &[]);
    warm(&s, "docs.example.com", "team-a.docs");
    let loads = loads_of(&s, "team-a.docs");
    let bad = r#"{"version": 1, "shard": 0, "sites": [{"id": "team-a.docs", "hosts": ["docs.example.com"], "value": {"version": 1}, "limits": {"maxFiles": 1, "maxBytes": 1, "requestsPerSecond": 1}, "surprise": true}]}"#;
    let b = site_json("team-b.shop", &["shop.example.com"], r#"{"version": 1}"#, LIMITS);
    p.index(&[("index-00.json", bad.to_string()), ("index-01.json", p.shard(&[b]))]);
    wait_for("the refusal reported", || {
        sites(&s, "")["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x.as_str().unwrap().contains("sites[0].surprise: unknown field"))
    });
    assert_eq!(get(&s, Some("docs.example.com"), "/").0.text(), "docs home", "the last good form serves");
    assert_eq!(loads_of(&s, "team-a.docs"), loads);
}

#[test]
fn a_host_claimed_twice_refuses_the_later_site() {
    let p = Pool::new("dup");
    p.tree("a.one", "r1", &[("index.html", b"one")]);
    p.tree("b.two", "r1", &[("index.html", b"two")]);
    let a = site_json("a.one", &["same.example"], r#"{"version": 1}"#, LIMITS);
    let b = site_json("b.two", &["same.example", "two.example"], r#"{"version": 1}"#, LIMITS);
    p.index(&[("index-00.json", p.shard(&[a])), ("index-01.json", p.shard(&[b]))]);
    let s = Server::start_pool(&p.dir, &[]);
    assert_eq!(served(&s, "same.example", "/").text(), "one");
    assert_eq!(get(&s, Some("two.example"), "/").0.status, 404);
    let v = sites(&s, "");
    assert!(v["problems"][0].as_str().unwrap().contains("b.two refused: host same.example"), "{v}");
}

#[test]
fn limits_refuse_big_trees_and_rate_limit_requests() {
    let p = Pool::new("limits");
    p.tree("a.files", "r1", &[("index.html", b"1"), ("two.html", b"2")]);
    p.tree("b.bytes", "r1", &[("index.html", &[b'x'; 2000])]);
    p.tree("c.rate", "r1", &[("index.html", b"rate")]);
    p.tree("d.fine", "r1", &[("index.html", b"fine")]);
    let lim = |files: u64, bytes: u64, rps: u64| {
        format!(r#"{{"maxFiles": {files}, "maxBytes": {bytes}, "requestsPerSecond": {rps}}}"#)
    };
    p.index(&[(
        "index-00.json",
        p.shard(&[
            site_json("a.files", &["files.example"], r#"{"version": 1}"#, &lim(1, 100000, 1000)),
            site_json("b.bytes", &["bytes.example"], r#"{"version": 1}"#, &lim(10, 1000, 1000)),
            site_json("c.rate", &["rate.example"], r#"{"version": 1}"#, &lim(10, 100000, 2)),
            site_json("d.fine", &["fine.example"], r#"{"version": 1}"#, &lim(10, 100000, 1000)),
        ]),
    )]);
    let s = Server::start_pool(&p.dir, &[]);
    for (host, id, why) in [("files.example", "a.files", "maxFiles 1"), ("bytes.example", "b.bytes", "maxBytes 1000")] {
        let _ = get(&s, Some(host), "/");
        wait_for("the refusal", || site_of(&sites(&s, ""), id)["state"] == "refused");
        let (r, _) = get(&s, Some(host), "/");
        assert_eq!((r.status, r.header("retry-after")), (503, Some("1")));
        let v = sites(&s, "");
        assert!(site_of(&v, id)["error"].as_str().unwrap().contains(why), "{v}");
    }
    assert_eq!(served(&s, "fine.example", "/").text(), "fine", "other sites are untouched");
    // 2 requests per second over 2 workers: 1 per worker per second. Twenty requests on one connection within a
    // second or two get mostly 429s.
    served(&s, "rate.example", "/");
    let mut c = s.connect();
    let mut req = Vec::new();
    for _ in 0..20 {
        req.extend_from_slice(b"GET / HTTP/1.1\r\nHost: rate.example\r\n\r\n");
    }
    req.extend_from_slice(b"GET / HTTP/1.1\r\nHost: rate.example\r\nConnection: close\r\n\r\n");
    std::io::Write::write_all(&mut c, &req).unwrap();
    let (rs, _) = parse_responses(&common::read_to_close(&mut c), false);
    assert_eq!(rs.len(), 21);
    let limited: Vec<&Response> = rs.iter().filter(|r| r.status == 429).collect();
    assert!(limited.len() >= 17, "{} of 21 limited", limited.len());
    assert!(limited.iter().all(|r| r.header("retry-after") == Some("1") && r.text() == "429 Too Many Requests\n"));
    let v = sites(&s, "");
    assert!(site_of(&v, "c.rate")["rateLimited"].as_u64().unwrap() >= 17, "{v}");
    assert!(s.metric("hyperstatic_requests_total{code=\"429\"}") >= 17.0);
}

#[test]
fn sites_json_and_metrics() {
    let p = two_sites("json");
    let s = Server::start_pool(&p.dir, &[]);
    let v = sites(&s, "");
    let ids: Vec<&str> = v["sites"].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["team-a.docs", "team-b.shop"], "sorted by id");
    assert_eq!(site_of(&v, "team-a.docs")["state"], "unloaded");
    warm(&s, "shop.example.com", "team-b.shop");
    warm(&s, "docs.example.com", "team-a.docs");
    // Warming polls until the site is in memory, so each took as many requests as its load took time: team-a
    // gets three more than team-b has, to be the busiest whatever the machine's pace.
    let requests = |v: &serde_json::Value, id: &str| site_of(v, id)["requests"].as_u64().unwrap();
    let v = sites(&s, "");
    for _ in 0..requests(&v, "team-b.shop").saturating_sub(requests(&v, "team-a.docs")) + 3 {
        served(&s, "docs.example.com", "/");
    }
    let v = sites(&s, "");
    let a = site_of(&v, "team-a.docs");
    for field in [
        "entryRevision",
        "valueRevision",
        "contentRevision",
        "files",
        "memoryBytes",
        "requests",
        "bytesSent",
        "rateLimited",
        "error",
    ] {
        assert!(a.get(field).is_some(), "{field} in {a}");
    }
    assert_eq!(a["state"], "memory");
    assert_eq!(a["contentRevision"], "r1");
    assert_eq!(a["files"], 3);
    assert!(a["valueRevision"].as_str().unwrap().starts_with("sha256:"));
    assert!(a["entryRevision"].as_str().unwrap().starts_with("sha256:"));
    assert_ne!(a["entryRevision"], site_of(&v, "team-b.shop")["entryRevision"], "each entry its own");
    assert!(a["requestsByClass"]["2xx"].as_u64().unwrap() >= 3);
    assert!(a["bytesSent"].as_u64().unwrap() > 0);
    let top = sites(&s, "?top=1");
    assert_eq!(top["sites"].as_array().unwrap().len(), 1);
    assert_eq!(top["sites"][0]["id"], "team-a.docs", "the busiest");
    assert_eq!(s.metric("hyperstatic_pool_sites{state=\"memory\"}"), 2.0);
    assert!(s.metric("hyperstatic_pool_site_requests_total{site=\"team-a.docs\"}") >= 3.0);
}

#[test]
fn the_contract_example_index_is_accepted() {
    let p = Pool::new("example");
    let example =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pool-index-example.json"))
            .unwrap();
    p.index(&[("index-03.json", example)]);
    let s = Server::start_pool(&p.dir, &[]);
    let v = sites(&s, "");
    assert_eq!(v["problems"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(site_of(&v, "team-a.docs")["state"], "missing");
    assert_eq!(site_of(&v, "team-b.landing")["state"], "missing");
    let (r, _) = get(&s, Some("docs.team-a.svc.cluster.local"), "/");
    assert_eq!((r.status, r.header("retry-after")), (503, Some("1")));
}

#[test]
fn sites_is_exclusive_with_root_and_site_rules() {
    for extra in [&["--root", "/tmp"][..], &["--site", "/tmp/x.json"], &["--spa-fallback"]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
            .args(["--sites", "/tmp/pool"])
            .args(extra)
            .env_clear()
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--sites and"), "{err}");
    }
}

#[test]
fn the_coldest_site_leaves_memory_for_the_one_asked_for() {
    let p = Pool::new("budget");
    let big = |c: u8| vec![c; 300_000];
    p.tree("a.one", "r1", &[("index.html", b"one"), ("big.bin", &big(b'a'))]);
    p.tree("b.two", "r1", &[("index.html", b"two"), ("big.bin", &big(b'b'))]);
    let lim = r#"{"maxFiles": 10, "maxBytes": 1000000, "requestsPerSecond": 100000}"#;
    p.index(&[(
        "index-00.json",
        p.shard(&[
            site_json("a.one", &["one.example"], r#"{"version": 1}"#, lim),
            site_json("b.two", &["two.example"], r#"{"version": 1}"#, lim),
        ]),
    )]);
    // Room for one site's content and both tables, not for both contents.
    let s = Server::start_pool(&p.dir, &["--memory-limit", "0", "--memory-budget", "500000"]);
    warm(&s, "one.example", "a.one");
    assert_eq!(get(&s, Some("one.example"), "/big.bin").0.body, big(b'a'));
    warm(&s, "two.example", "b.two");
    let v = sites(&s, "");
    assert_eq!(site_of(&v, "a.one")["state"], "disk", "{v}");
    assert!(site_of(&v, "a.one")["memoryBytes"].as_u64().unwrap() < 300_000, "{v}");
    // Served from disk, the same bytes.
    assert_eq!(get(&s, Some("one.example"), "/big.bin").0.body, big(b'a'));
    assert_eq!(get(&s, Some("two.example"), "/big.bin").0.body, big(b'b'));
    let used: u64 = v["sites"].as_array().unwrap().iter().map(|x| x["memoryBytes"].as_u64().unwrap()).sum();
    assert!(used <= 500_000, "the loaded sites fit the budget: {used}");
}

#[test]
fn check_reads_the_index_and_names_its_problems() {
    let p = two_sites("check");
    let run = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
            .args(["--sites", &p.dir.display().to_string(), "--check"])
            .env_clear()
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code, out) = run();
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("site team-a.docs: 2 hosts") && out.contains("tree present") && out.ends_with("ok\n"),
        "{out}"
    );
    p.index(&[("index-00.json", r#"{"version": 1, "sites": [{"id": "x"}]}"#.to_string())]);
    let (code, out) = run();
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("sites[0].id"), "{out}");
}

/// Lowers the child's descriptor limit, soft and hard (the server raises its soft limit to the hard one).
fn nofile(limit: u64) -> impl FnMut(&mut std::process::Command) {
    move |cmd| {
        use std::os::unix::process::CommandExt;
        // SAFETY: only setrlimit, async-signal-safe, between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let low = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &low) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

fn open_fds(s: &Server) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", s.child.id())).unwrap().count()
}

/// 40 sites of 12 files each (480 files, plus their directories) under a limit of 128 descriptors, a budget that
/// holds every table but the content of a few sites at most: the sites stay loaded, served from disk, each file
/// opened for its response and closed after, so every file of every site is served, byte for byte, and the
/// process's descriptors stay far below the number of files.
#[test]
fn a_pool_with_more_files_than_descriptors_serves_every_file() {
    let p = Pool::new("fds");
    let body = |site: usize, f: usize| format!("site {site} file {f} ").repeat(1 + f * 300).into_bytes();
    let mut shard = Vec::new();
    for site in 0..40 {
        let files: Vec<(String, Vec<u8>)> = (0..12).map(|f| (format!("d{}/f{f}.txt", f % 3), body(site, f))).collect();
        let refs: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
        p.tree(&format!("s{site}.pool"), "r1", &refs);
        shard.push(site_json(&format!("s{site}.pool"), &[&format!("s{site}.example")], r#"{"version": 1}"#, LIMITS));
    }
    p.index(&[("index-00.json", p.shard(&shard))]);
    // ~320 kB of content a site: 40 tables (~24 kB each) fit, and the content of a few sites.
    let s = Server::start_pool_with(&p.dir, &["--memory-limit", "0", "--memory-budget", "2000000"], &mut nofile(128));
    for round in 0..2 {
        for site in 0..40 {
            let host = format!("s{site}.example");
            for f in 0..12 {
                let r = served(&s, &host, &format!("/d{}/f{f}.txt", f % 3));
                assert_eq!((r.status, &r.body), (200, &body(site, f)), "round {round} site {site} file {f}");
            }
        }
    }
    let v = sites(&s, "");
    let disk = (0..40).filter(|site| site_of(&v, &format!("s{site}.pool"))["state"] == "disk").count();
    let memory = (0..40).filter(|site| site_of(&v, &format!("s{site}.pool"))["state"] == "memory").count();
    // The budget holds the content of a few sites beside the 40 tables: the rest stay loaded, on disk.
    assert!(disk >= 30 && disk + memory == 40, "every site loaded, nearly all from disk: {v}");
    let fds = open_fds(&s);
    assert!(fds < 64, "descriptors stay bounded whatever the files: {fds} open");
}

/// Disk-served files of every size in one pipelined batch: the small ones are read beside their heads (one
/// pread each, the file closed at once), a range of one too, the big one goes by sendfile between them, and every
/// body arrives whole and in order.
#[test]
fn disk_served_files_small_ranged_and_big_pipelined_arrive_byte_exact() {
    let p = Pool::new("disk-batch");
    let big: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    let small: Vec<u8> = (0..16_384u32).map(|i| (i % 241) as u8).collect();
    p.tree("a.site", "r1", &[("index.html", b"home"), ("small.bin", &small), ("big.bin", &big)]);
    p.index(&[("index-00.json", p.shard(&[site_json("a.site", &["a.example"], r#"{"version": 1}"#, LIMITS)]))]);
    // No content budget: every body is served from disk.
    let s = Server::start_pool(&p.dir, &["--memory-limit", "0", "--memory-budget", "0"]);
    served(&s, "a.example", "/");
    wait_for("a.site on disk after its full load", || site_of(&sites(&s, ""), "a.site")["state"] == "disk");
    let req = |path: &str, extra: &str| format!("GET {path} HTTP/1.1\r\nHost: a.example\r\n{extra}\r\n");
    let batch = [
        req("/small.bin", ""),
        req("/big.bin", ""),
        req("/small.bin", "Range: bytes=100-199\r\n"),
        req("/index.html", ""),
        req("/big.bin", "Range: bytes=39990-\r\n"),
        req("/small.bin", "Connection: close\r\n"),
    ]
    .concat();
    let bytes = s.raw(batch.as_bytes());
    let (rs, _) = parse_responses(&bytes, false);
    let got: Vec<(u16, &[u8])> = rs.iter().map(|r| (r.status, &r.body[..])).collect();
    let want: Vec<(u16, &[u8])> =
        vec![(200, &small), (200, &big), (206, &small[100..200]), (200, b"home"), (206, &big[39_990..]), (200, &small)];
    assert!(got == want, "{:?}", rs.iter().map(|r| (r.status, r.body.len())).collect::<Vec<_>>());
    assert!(open_fds(&s) < 32, "every file closed once sent");
}

/// A disk-served file changed since its load (another length, or the same length written again) is answered
/// 503 with `Retry-After`, never with the length the load saw and other bytes.
#[test]
fn a_file_changed_on_disk_since_its_load_is_not_served_with_a_wrong_length() {
    let p = Pool::new("changed");
    p.tree("a.site", "r1", &[("index.html", b"home"), ("page.txt", b"the original bytes")]);
    p.index(&[("index-00.json", p.shard(&[site_json("a.site", &["a.example"], r#"{"version": 1}"#, LIMITS)]))]);
    // No content budget: the full load keeps every body on disk.
    let s = Server::start_pool(&p.dir, &["--memory-limit", "0", "--memory-budget", "0"]);
    assert_eq!(served(&s, "a.example", "/page.txt").body, b"the original bytes");
    wait_for("a.site on disk after its full load", || site_of(&sites(&s, ""), "a.site")["state"] == "disk");
    assert_eq!(get(&s, Some("a.example"), "/page.txt").0.body, b"the original bytes");
    let file = p.dir.join("content/a.site/r1/page.txt");
    // Shorter, in place (the same inode): its load's length would be a lie.
    std::fs::write(&file, b"short").unwrap();
    let (r, _) = get(&s, Some("a.example"), "/page.txt");
    assert_eq!((r.status, r.header("retry-after")), (503, Some("1")), "{}", r.text());
    // The same length again, written later: the modification time says it changed.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&file, b"the replaced bytes").unwrap();
    let (r, _) = get(&s, Some("a.example"), "/page.txt");
    assert_eq!(r.status, 503, "{}", r.text());
    // The site's other files are still served.
    assert_eq!(get(&s, Some("a.example"), "/").0.body, b"home");
}

/// A site that left memory for another stays loaded, served from disk (its table costs the budget little and
/// holds no descriptor): its next request is answered from disk without loading it again, and the site that
/// left memory longest ago is not unloaded before the warmer one leaves memory.
#[test]
fn a_site_evicted_to_disk_answers_without_a_reload() {
    let p = Pool::new("evicted");
    let big = |c: u8| vec![c; 300_000];
    let lim = r#"{"maxFiles": 10, "maxBytes": 1000000, "requestsPerSecond": 100000}"#;
    let mut shard = Vec::new();
    for (id, c) in [("a.one", b'a'), ("b.two", b'b'), ("c.three", b'c')] {
        p.tree(id, "r1", &[("index.html", id.as_bytes()), ("big.bin", &big(c))]);
        shard.push(site_json(id, &[&format!("{}.example", &id[2..])], r#"{"version": 1}"#, lim));
    }
    p.index(&[("index-00.json", p.shard(&shard))]);
    // Room for one site's content and every table.
    let s = Server::start_pool(&p.dir, &["--memory-limit", "0", "--memory-budget", "500000"]);
    warm(&s, "one.example", "a.one");
    warm(&s, "two.example", "b.two");
    warm(&s, "three.example", "c.three");
    let v = sites(&s, "");
    assert_eq!(site_of(&v, "a.one")["state"], "disk", "{v}");
    assert_eq!(site_of(&v, "b.two")["state"], "disk", "{v}");
    let loads_in = |v: &serde_json::Value| (site_of(v, "a.one")["loads"].clone(), site_of(v, "b.two")["loads"].clone());
    let loads = loads_in(&v);
    // A quick and a full load each, and one quick reload leaving memory.
    assert_eq!(loads, (3.into(), 3.into()), "{v}");
    for (host, c) in [("one.example", b'a'), ("two.example", b'b')] {
        let (r, _) = get(&s, Some(host), "/big.bin");
        assert_eq!((r.status, r.body.len()), (200, 300_000), "{host}");
        assert!(r.body.iter().all(|&b| b == c), "{host}");
    }
    let after = sites(&s, "");
    assert_eq!(loads_in(&after), loads, "no reload for a site served from disk: {after}");
    let state = |id: &str| site_of(&after, id)["state"].as_str().map(str::to_owned);
    assert_eq!((state("a.one"), state("b.two")), (Some("disk".into()), Some("disk".into())), "{after}");
    let used: u64 = after["sites"].as_array().unwrap().iter().map(|x| x["memoryBytes"].as_u64().unwrap()).sum();
    assert!(used <= 500_000, "the loaded sites fit the budget: {used}");
}

/// A pool site's `limits.perClient` (src/fairshare/) is its own: a client past its burst on one site gets 429 with
/// Retry-After there, counted on that site, and is still served by another site with the same limit. One worker,
/// and a rate of one request per 10 minutes, so that every count is exact.
#[test]
fn per_client_limits_are_per_site() {
    let p = Pool::new("per-client");
    p.tree("a.one", "r1", &[("index.html", b"one")]);
    p.tree("b.two", "r1", &[("index.html", b"two")]);
    let value = r#"{"version": 1, "limits": {"perClient": {"requests": 1, "periodSeconds": 600, "burst": 2}}}"#;
    let a = site_json("a.one", &["one.example"], value, LIMITS);
    let b = site_json("b.two", &["two.example"], value, LIMITS);
    p.index(&[("index-00.json", p.shard(&[a, b]))]);
    let s = Server::start_pool(&p.dir, &["--workers", "1"]);
    // A 503 while a site loads takes no token; its first answer from the table does.
    assert_eq!(served(&s, "one.example", "/").status, 200);
    assert_eq!(get(&s, Some("one.example"), "/").0.status, 200);
    let (r, _) = get(&s, Some("one.example"), "/");
    assert_eq!(r.status, 429);
    let after: u32 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((590..=600).contains(&after), "Retry-After {after}");
    // The other site: its own bucket for the same client.
    assert_eq!(served(&s, "two.example", "/").text(), "two");
    assert_eq!(get(&s, Some("two.example"), "/").0.status, 200);
    assert_eq!(get(&s, Some("two.example"), "/").0.status, 429);
    assert_eq!(s.metric("hyperstatic_requests_limited_total{reason=\"per_client\"}"), 2.0);
}
