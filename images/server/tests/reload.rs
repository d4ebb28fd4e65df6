//! Live reload: the Kubernetes `..data` symlink swap and SIGHUP, under load, with zero failed requests;
//! a broken new tree keeps the old content serving.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lays out a directory the way the kubelet projects a ConfigMap: `..<ts>/` with the files, `..data`
/// pointing at it, and user-visible symlinks through `..data`.
fn kube_version(root: &Path, ts: &str, files: &[(&str, &str)]) {
    let dir = root.join(ts);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, content) in files {
        std::fs::write(dir.join(name), content).unwrap();
    }
}

fn swap_data(root: &Path, ts: &str) {
    let tmp = root.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    symlink(ts, &tmp).unwrap();
    std::fs::rename(&tmp, root.join("..data")).unwrap();
}

fn link_visible(root: &Path, name: &str) {
    let p = root.join(name);
    if std::fs::symlink_metadata(&p).is_err() {
        symlink(format!("..data/{name}"), p).unwrap();
    }
}

struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failures: Arc<std::sync::Mutex<Vec<String>>>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

/// Keep-alive clients requesting `/index.html` in a loop; every answer must be a complete 200.
fn start_load(port: u16, clients: usize) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(std::sync::Mutex::new(Vec::new()));
    let handles = (0..clients)
        .map(|_| {
            let (stop, ok, failures) = (stop.clone(), ok.clone(), failures.clone());
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut buf = [0u8; 8192];
                while !stop.load(Ordering::Relaxed) {
                    if c.write_all(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n").is_err() {
                        failures.lock().unwrap().push("write failed".into());
                        return;
                    }
                    let mut got = Vec::new();
                    loop {
                        match c.read(&mut buf) {
                            Ok(0) => {
                                failures.lock().unwrap().push("closed mid-request".into());
                                return;
                            }
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                            Err(e) => {
                                failures.lock().unwrap().push(format!("read: {e}"));
                                return;
                            }
                        }
                        let (rs, used) = parse_responses(&got, false);
                        if !rs.is_empty() && used == got.len() {
                            if rs[0].status == 200 {
                                ok.fetch_add(1, Ordering::Relaxed);
                            } else {
                                failures.lock().unwrap().push(format!("status {}", rs[0].status));
                            }
                            // The server ends connections after --max-requests-per-connection: reconnect.
                            if rs[0].header("Connection") == Some("close") {
                                c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                            }
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    Load { stop, ok, failures, handles }
}

impl Load {
    fn finish(self) -> (u64, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles {
            h.join().unwrap();
        }
        (self.ok.load(Ordering::Relaxed), self.failures.lock().unwrap().clone())
    }
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

#[test]
fn kubernetes_data_symlink_swap_under_load() {
    let root = tempdir("kube");
    kube_version(&root, "..2026_11_22_01", &[("index.html", "version one\n")]);
    symlink("..2026_11_22_01", root.join("..data")).unwrap();
    link_visible(&root, "index.html");
    let s = Server::start(&root, &[]);
    assert_eq!(s.get("/index.html", &[]).text(), "version one\n");
    assert_eq!(s.admin_get("/content").text(), "/index.html\tmemory\tidentity\n", "kubelet internals are not served");
    let load = start_load(s.port, 4);
    std::thread::sleep(Duration::from_millis(300));

    kube_version(&root, "..2026_11_22_02", &[("index.html", "version two\n"), ("new.html", "new\n")]);
    swap_data(&root, "..2026_11_22_02");
    link_visible(&root, "new.html");
    std::fs::remove_dir_all(root.join("..2026_11_22_01")).unwrap();
    wait_for("version two", || s.get("/index.html", &[]).text() == "version two\n");
    wait_for("new.html", || s.get("/new.html", &[]).status == 200);
    std::thread::sleep(Duration::from_millis(300));

    let (ok, failures) = load.finish();
    assert!(failures.is_empty(), "failed requests during reload: {failures:?}");
    assert!(ok > 100, "load generated only {ok} requests");
    assert!(s.metric("hyperstatic_reloads_total{result=\"success\"}") >= 2.0);
    assert_eq!(s.metric("hyperstatic_content_files"), 2.0);
}

#[test]
fn broken_tree_keeps_old_content_and_sighup_reloads() {
    let root = tempdir("broken");
    kube_version(&root, "..v1", &[("index.html", "good\n")]);
    symlink("..v1", root.join("..data")).unwrap();
    link_visible(&root, "index.html");
    let s = Server::start(&root, &[]);
    let load = start_load(s.port, 2);
    // ..data now points nowhere: every visible symlink dangles.
    swap_data(&root, "..missing");
    wait_for("a failed reload", || s.metric("hyperstatic_reloads_total{result=\"failure\"}") >= 1.0);
    assert_eq!(s.get("/index.html", &[]).text(), "good\n", "old content keeps serving");
    wait_for("the failure log line", || s.log_contains("content reload failed"));
    // Repair, then make sure SIGHUP reloads too.
    kube_version(&root, "..v2", &[("index.html", "repaired\n")]);
    swap_data(&root, "..v2");
    wait_for("repaired", || s.get("/index.html", &[]).text() == "repaired\n");
    let before = s.metric("hyperstatic_reloads_total{result=\"success\"}");
    s.signal(libc::SIGHUP);
    wait_for("SIGHUP reload", || s.metric("hyperstatic_reloads_total{result=\"success\"}") > before);
    let (ok, failures) = load.finish();
    assert!(failures.is_empty(), "{failures:?}");
    assert!(ok > 0);
}
