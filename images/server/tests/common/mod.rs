//! Helpers for integration tests: start the real binary on loopback (ports picked by the kernel and read
//! back from its "listening" log line), speak raw bytes, split response streams.
#![allow(dead_code)]

pub mod cgroup;
pub mod curl;
pub mod deploys;
pub mod flood;
pub mod h2;
pub mod tls;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Server {
    pub child: Child,
    pub port: u16,
    /// The HTTPS port (0 when TLS is off).
    pub https: u16,
    pub admin: u16,
    pub logs: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub fn start(root: &Path, extra: &[&str]) -> Server {
        Server::start_with(root, extra, &mut |_| {})
    }

    /// `start` with a chance to adjust the command first (e.g. a pre_exec hook).
    pub fn start_with(root: &Path, extra: &[&str], prepare: &mut dyn FnMut(&mut Command)) -> Server {
        Server::start_bin(Path::new(env!("CARGO_BIN_EXE_hyperstatic-server")), root, extra, prepare)
    }

    /// `start_with` for another build of the server (a test that compares with an older binary).
    pub fn start_bin(bin: &Path, root: &Path, extra: &[&str], prepare: &mut dyn FnMut(&mut Command)) -> Server {
        let mut args: Vec<String> = vec![
            "--root".into(),
            root.display().to_string(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--admin-listen".into(),
            "127.0.0.1:0".into(),
            "--workers".into(),
            "2".into(),
            "--drain-delay".into(),
            "200ms".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        Server::launch(bin, &args, prepare)
    }

    /// A pool server (`--sites DIR`, no `--root`): the same listeners and workers as `start`.
    pub fn start_pool(dir: &Path, extra: &[&str]) -> Server {
        Server::start_pool_with(dir, extra, &mut |_| {})
    }

    /// `start_pool` with a chance to adjust the command first (e.g. a pre_exec hook).
    pub fn start_pool_with(dir: &Path, extra: &[&str], prepare: &mut dyn FnMut(&mut Command)) -> Server {
        let mut args: Vec<String> = vec!["--sites".into(), dir.display().to_string()];
        args.extend(
            ["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--workers", "2", "--drain-delay", "200ms"]
                .iter()
                .map(|s| s.to_string()),
        );
        args.extend(extra.iter().map(|s| s.to_string()));
        Server::launch(Path::new(env!("CARGO_BIN_EXE_hyperstatic-server")), &args, prepare)
    }

    fn launch(bin: &Path, args: &[String], prepare: &mut dyn FnMut(&mut Command)) -> Server {
        let mut cmd = Command::new(bin);
        cmd.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
        prepare(&mut cmd);
        let mut child = cmd.spawn().expect("start hyperstatic-server");
        let stderr = child.stderr.take().unwrap();
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let logs = logs.clone();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                    // Kept before it is announced: a test that reads the logs right after start must find it.
                    logs.lock().unwrap().push(line.clone());
                    if line.contains("\"msg\":\"listening\"") {
                        let _ = tx.send(line);
                    }
                }
            });
        }
        let line = rx.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|_| {
            // Not left running (in a test's cgroup, holding its site) when the test fails here.
            let _ = child.kill();
            let _ = child.wait();
            panic!("server did not start; logs: {:?}", logs.lock().unwrap())
        });
        let port_of = |key: &str| -> u16 {
            let i = line.find(key).unwrap() + key.len();
            let rest = &line[i..];
            let end = rest.find('"').unwrap();
            rest[..end].rsplit(':').next().unwrap().parse().unwrap()
        };
        let port = port_of("\"http\":\"");
        let admin = port_of("\"admin\":\"");
        let https = if line.contains("\"https\":\"off\"") { 0 } else { port_of("\"https\":\"") };
        Server { child, port, https, admin, logs }
    }

    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        s
    }

    /// Sends raw bytes on a new connection and reads until the server closes it.
    pub fn raw(&self, req: &[u8]) -> Vec<u8> {
        let mut s = self.connect();
        s.write_all(req).unwrap();
        read_to_close(&mut s)
    }

    /// One request with `Connection: close`; returns the parsed response.
    pub fn get(&self, path: &str, headers: &[(&str, &str)]) -> Response {
        let mut req = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        let bytes = self.raw(req.as_bytes());
        let (mut rs, _) = parse_responses(&bytes, false);
        assert_eq!(rs.len(), 1, "one response expected, got {:?}", String::from_utf8_lossy(&bytes));
        rs.remove(0)
    }

    pub fn admin_get(&self, path: &str) -> Response {
        let mut s = TcpStream::connect(("127.0.0.1", self.admin)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
        let bytes = read_to_close(&mut s);
        parse_responses(&bytes, false).0.remove(0)
    }

    pub fn signal(&self, sig: i32) {
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// Waits for the process to exit; returns its status code.
    pub fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn log_contains(&self, s: &str) -> bool {
        self.logs.lock().unwrap().iter().any(|l| l.contains(s))
    }

    /// Waits until the background encoder serves every variant it will make (its pending gauge is 0): a
    /// condition, not a clock; the deadline only turns a hang into a failure.
    pub fn wait_encoded(&self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let body = self.admin_get("/metrics").text();
            let pending = body
                .lines()
                .find_map(|l| l.strip_prefix("hyperstatic_content_encodings_pending "))
                .expect("the server exports hyperstatic_content_encodings_pending");
            if pending.trim() == "0" {
                return;
            }
            assert!(Instant::now() < deadline, "encodings still pending after 120 s: {pending}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn metric(&self, name_with_labels: &str) -> f64 {
        let body = self.admin_get("/metrics").text();
        for line in body.lines() {
            if let Some(rest) = line.strip_prefix(name_with_labels) {
                if let Some(v) = rest.strip_prefix(' ') {
                    return v.trim().parse().unwrap();
                }
            }
        }
        0.0
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("read: {e} after {} bytes: {:?}", out.len(), String::from_utf8_lossy(&out)),
        }
    }
    let _ = s.shutdown(Shutdown::Both);
    out
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Splits a byte stream into responses. `head_only` marks responses to HEAD (no body despite
/// Content-Length). Returns the responses and the number of bytes consumed.
pub fn parse_responses(mut b: &[u8], head_only: bool) -> (Vec<Response>, usize) {
    let total = b.len();
    let mut out = Vec::new();
    while let Some(end) = b.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = std::str::from_utf8(&b[..end]).expect("response head is UTF-8");
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        assert!(status_line.starts_with("HTTP/1.1 "), "bad status line {status_line:?}");
        let status: u16 = status_line[9..12].parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (k, v) = l.split_once(':').expect("header line has a colon");
                (k.to_string(), v.trim().to_string())
            })
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, v)| v.parse().unwrap());
        let body_len = if head_only || status == 304 { 0 } else { len };
        if b.len() < end + 4 + body_len {
            break;
        }
        let body = b[end + 4..end + 4 + body_len].to_vec();
        out.push(Response { status, headers, body });
        b = &b[end + 4 + body_len..];
    }
    (out, total - b.len())
}

/// A temporary directory removed when the test is done with it.
pub struct Site(PathBuf);

impl std::ops::Deref for Site {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Site {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Polls `f` every 50 ms until it holds; fails the test after 20 s (a reload takes its 150 ms debounce and a
/// load: seconds only on a machine under heavy load).
pub fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A fresh temporary directory for a test site.
pub fn tempdir(name: &str) -> Site {
    let d = std::env::temp_dir().join(format!("hs-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Site(d)
}

/// The 3 MB file some tests serve from disk: byte i is i % 251.
pub fn big_content() -> Vec<u8> {
    (0..3_000_000u32).map(|i| (i % 251) as u8).collect()
}

/// A small site: index, a 100-byte file, compressible CSS, a subdirectory, a 404 page, a 3 MB file.
pub fn make_site(name: &str) -> Site {
    let d = tempdir(name);
    let w = |p: &str, c: &[u8]| {
        let path = d.join(p.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, c).unwrap();
    };
    w("index.html", b"<!doctype html><title>home</title><h1>home</h1>\n");
    w("100.html", &[b'a'; 100]);
    w("css/site.css", "body { margin: 0; padding: 0; color: #333; }\n".repeat(100).as_bytes());
    w("docs/index.html", b"<h1>docs</h1>\n");
    w("docs/page.html", b"<h1>page</h1>\n");
    w("nodir/file.txt", b"x\n");
    w("404.html", b"<h1>custom not found</h1>\n");
    w("café.txt", b"accent\n");
    w("big.bin", &big_content());
    d
}

/// Text that compresses about as well as HTML (to about a third): words from a small vocabulary in a pseudo-random
/// order, the same for the same seed.
pub fn words(n: usize, seed: u64) -> Vec<u8> {
    const W: [&str; 16] = [
        "the ",
        "server ",
        "memory ",
        "<p>",
        "</p>\n",
        "budget ",
        "of ",
        "a ",
        "file ",
        "class=\"x\" ",
        "table ",
        "<div>",
        "</div>",
        "encoder ",
        "and ",
        "limit ",
    ];
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(n + 16);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(W[(x >> 60) as usize].as_bytes());
    }
    out.truncate(n);
    out
}

/// Runs an h2load command and returns its status-code tally (2xx, 4xx).
pub fn h2load_tally(c: &mut Command) -> (u32, u32) {
    let out = c.output().expect("run h2load");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let line = text.lines().find(|l| l.starts_with("status codes:")).unwrap_or_else(|| panic!("{text}"));
    // "status codes: 3 2xx, 0 3xx, 7 4xx, 0 5xx"
    let count = |class: &str| -> u32 {
        let i = line.find(class).unwrap_or_else(|| panic!("{line}"));
        line[..i].trim_end().rsplit(' ').next().unwrap().parse().unwrap()
    };
    (count("2xx"), count("4xx"))
}
