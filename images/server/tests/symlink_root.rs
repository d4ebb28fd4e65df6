//! A root that is itself a symlink, replaced by a rename for each new tree: the way Git content's puller
//! installs a commit (`DIR/<commit>/`, then `DIR/current` renamed over). Each replacement is one reload of one
//! whole tree; requests never see a file of an older tree once a newer one was served; a tree that does not
//! load keeps the previous one; pruning old trees costs nothing.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

const FLIPS: u32 = 15;

/// Tree `n`: two pages naming the tree, and a file only this tree has.
fn write_tree(dir: &Path, n: u32) {
    let t = dir.join(format!("t{n}"));
    std::fs::create_dir_all(t.join("docs")).unwrap();
    std::fs::write(t.join("index.html"), format!("tree {n} index")).unwrap();
    std::fs::write(t.join("docs/page.html"), format!("tree {n} page")).unwrap();
    std::fs::write(t.join(format!("only-{n}.html")), format!("tree {n} only")).unwrap();
}

/// Points `DIR/current` at `DIR/t<n>` by renaming a new link over it, as the puller does.
fn flip(dir: &Path, n: u32) {
    let tmp = dir.join(".current-new");
    let _ = std::fs::remove_file(&tmp);
    symlink(format!("t{n}"), &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("current")).unwrap();
}

fn reloads(s: &Server) -> f64 {
    s.metric("hyperstatic_reloads_total{result=\"success\"}")
        + s.metric("hyperstatic_reloads_total{result=\"failure\"}")
}

/// Flips to tree `n` and waits for the reload that follows (the count any reader of the server's metrics, such as
/// the puller, waits on).
fn flip_and_wait(s: &Server, dir: &Path, n: u32) {
    let before = reloads(s);
    flip(dir, n);
    wait_for(&format!("the reload after the flip to t{n}"), || reloads(s) > before);
}

/// The tree number a body names ("tree 7 index" → 7).
fn tree_of(body: &[u8]) -> Option<u32> {
    std::str::from_utf8(body).ok()?.strip_prefix("tree ")?.split(' ').next()?.parse().ok()
}

/// Keep-alive clients asking for the index and the page in turn. Each records a failure for an answer that is
/// not a 200 naming a tree, or that names an older tree than one it already got: the trees are installed in
/// order, so going back would mean a request was served from a table older than one already serving.
struct Clients {
    stop: Arc<AtomicBool>,
    failures: Arc<Mutex<Vec<String>>>,
    handles: Vec<JoinHandle<u64>>,
}

fn start_clients(port: u16) -> Clients {
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let handles = (0..2)
        .map(|_| {
            let (stop, failures) = (stop.clone(), failures.clone());
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let (mut newest, mut answers) = (0u32, 0u64);
                let mut buf = [0u8; 8192];
                for path in ["/index.html", "/docs/page.html"].iter().cycle() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
                    let mut got = Vec::new();
                    let r = loop {
                        let n = c.read(&mut buf).unwrap();
                        assert!(n > 0, "connection closed mid-request");
                        got.extend_from_slice(&buf[..n]);
                        let (mut rs, used) = parse_responses(&got, false);
                        if !rs.is_empty() && used == got.len() {
                            break rs.remove(0);
                        }
                    };
                    answers += 1;
                    if r.header("connection") == Some("close") {
                        // --max-requests-per-connection: the server ends the connection after this answer.
                        c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    }
                    match tree_of(&r.body) {
                        Some(t) if r.status == 200 && t >= newest => newest = t,
                        _ => failures.lock().unwrap().push(format!(
                            "{path}: {} {:?} after tree {newest}",
                            r.status,
                            String::from_utf8_lossy(&r.body)
                        )),
                    }
                }
                answers
            })
        })
        .collect();
    Clients { stop, failures, handles }
}

impl Clients {
    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let answers = self.handles.into_iter().map(|h| h.join().unwrap()).sum();
        let failures = self.failures.lock().unwrap();
        assert!(failures.is_empty(), "{} bad answers, first: {:?}", failures.len(), failures.first());
        answers
    }
}

/// What `/content` lists: the served paths.
fn listed(s: &Server) -> Vec<String> {
    let body = s.admin_get("/content").text();
    let mut paths: Vec<String> = body.lines().filter_map(|l| l.split('\t').next()).map(str::to_string).collect();
    paths.sort();
    paths
}

#[test]
fn each_flip_of_the_root_link_is_one_reload_of_one_whole_tree() {
    let dir = tempdir("symlink-root");
    write_tree(&dir, 0);
    flip(&dir, 0);
    let s = Server::start(&dir.join("current"), &[]);
    assert_eq!(s.get("/index.html", &[]).text(), "tree 0 index");
    let clients = start_clients(s.port);

    for n in 1..=FLIPS {
        write_tree(&dir, n);
        flip_and_wait(&s, &dir, n);
        // Everything the server answers now comes from tree n, and /content lists tree n's files alone.
        assert_eq!(s.get("/index.html", &[]).text(), format!("tree {n} index"));
        assert_eq!(s.get("/docs/page.html", &[]).text(), format!("tree {n} page"));
        assert_eq!(s.get(&format!("/only-{n}.html"), &[]).status, 200);
        assert_eq!(s.get(&format!("/only-{}.html", n - 1), &[]).status, 404, "a file of the previous tree");
        assert_eq!(listed(&s), vec!["/docs/page.html".to_string(), "/index.html".into(), format!("/only-{n}.html")]);
        // The puller prunes the trees older than the previous one once the server has reloaded.
        if n >= 2 {
            std::fs::remove_dir_all(dir.join(format!("t{}", n - 2))).unwrap();
        }
    }

    let answers = clients.finish();
    assert!(answers > 0);
    assert_eq!(s.metric("hyperstatic_reloads_total{result=\"failure\"}"), 0.0, "no reload failed");
    // One load at start and one reload per flip: the new trees' directories, the temporary links and the pruned
    // trees in the link's directory caused none of their own.
    assert_eq!(s.metric("hyperstatic_reloads_total{result=\"success\"}"), f64::from(FLIPS + 1));
}

#[test]
fn a_tree_that_does_not_load_keeps_the_previous_one() {
    let dir = tempdir("symlink-root-bad");
    write_tree(&dir, 1);
    flip(&dir, 1);
    let s = Server::start(&dir.join("current"), &[]);

    write_tree(&dir, 2);
    std::fs::write(dir.join("t2/_redirects"), "/old /new 418\n").unwrap();
    let failed = s.metric("hyperstatic_reloads_total{result=\"failure\"}");
    flip_and_wait(&s, &dir, 2);
    assert_eq!(s.metric("hyperstatic_reloads_total{result=\"failure\"}"), failed + 1.0);
    assert_eq!(s.get("/index.html", &[]).text(), "tree 1 index", "the previous tree keeps serving");
    assert!(s.admin_get("/load-error").text().contains("_redirects"));

    // The next good tree is taken with no other action.
    write_tree(&dir, 3);
    flip_and_wait(&s, &dir, 3);
    assert_eq!(s.get("/index.html", &[]).text(), "tree 3 index");
    assert_eq!(s.admin_get("/load-error").text(), "", "the error is cleared");
}
