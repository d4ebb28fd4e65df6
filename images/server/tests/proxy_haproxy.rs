//! `--proxy-protocol` behind a real sender: HAProxy (Debian's package; `make server-test-tools`, which `make
//! server-test` runs first) in TCP mode with `send-proxy-v2`, in front of the real binary's plain and TLS ports.
//! tests/proxy_protocol.rs checks the parser against headers built from the specification; this checks that what
//! HAProxy itself writes is read the same way: the client HAProxy saw, not HAProxy's own address, is what the
//! access rules decide on and what the access log names, over IPv4 and IPv6 and before a TLS handshake; and
//! HAProxy's health checks (sent with the PROXY header, as LOCAL) are answered.
//!
//! Every connection reaches the server from HAProxy on 127.0.0.1, so an answer that depends on the client
//! (127.0.0.3 denied, ::1 alone allowed on /private/) can only come from the header. Clients are curl from loopback
//! addresses of our choosing (`--interface`).

mod common;

use common::tls::*;
use common::*;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};

/// /lan/ for 127.0.0.0/8 and ::1 but not 127.0.0.3; /private/ for ::1 only.
const VALUE: &str = r#"{"version": 1,
  "access": {"rules": [{"pathPrefix": "/lan/", "allow": ["127.0.0.0/8", "::1/128"], "deny": ["127.0.0.3"]},
                       {"pathPrefix": "/private/", "allow": ["::1"]}]}}
"#;

/// HAProxy in the foreground, killed when dropped.
struct Haproxy(Child);

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port free on `ip` now (the kernel's pick, released for HAProxy to bind).
fn free_port(ip: &str) -> u16 {
    TcpListener::bind((ip, 0)).unwrap().local_addr().unwrap().port()
}

fn haproxy_bin() -> String {
    let bin = std::env::var("HAPROXY").unwrap_or_else(|_| "haproxy".into());
    let ok = Command::new(&bin).arg("-v").output().map(|o| o.status.success()).unwrap_or(false);
    assert!(ok, "{bin} does not run: this test needs HAProxy (`make server-test-tools` installs Debian's)");
    bin
}

/// Starts HAProxy with `frontends` (name, bind address, backend port on 127.0.0.1, whether it is TLS) in TCP
/// mode, each backend's server sent the PROXY v2 header and health-checked every 100 ms with `GET
/// /haproxy-check.txt` (a file of the site: a failing check would take the server out).
fn haproxy(dir: &std::path::Path, frontends: &[(&str, String, u16, bool)]) -> Haproxy {
    let mut cfg = String::from(
        "global\n  maxconn 200\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n",
    );
    for (name, bind, port, tls) in frontends {
        // A TLS backend's checks speak TLS after the header (HAProxy's check-ssl; the test CA is not HAProxy's).
        let ssl = if *tls { " check-ssl verify none" } else { "" };
        cfg += &format!(
            "frontend {name}\n  bind {bind}\n  default_backend {name}-hs\n\
             backend {name}-hs\n  option httpchk GET /haproxy-check.txt\n  \
             server hs 127.0.0.1:{port} send-proxy-v2 check inter 100ms{ssl}\n"
        );
    }
    let file = dir.join("haproxy.cfg");
    std::fs::write(&file, cfg).unwrap();
    let bin = haproxy_bin();
    let check = Command::new(&bin).args(["-c", "-q", "-f"]).arg(&file).output().unwrap();
    assert!(check.status.success(), "haproxy -c: {}", String::from_utf8_lossy(&check.stderr));
    // -db: stay in the foreground; -W is not wanted (no master process to outlive the test).
    let child = Command::new(&bin).args(["-db", "-f"]).arg(&file).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    let h = Haproxy(child.unwrap());
    for (_, bind, _, _) in frontends {
        let (host, port) = bind.rsplit_once(':').unwrap();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        wait_for(&format!("haproxy listening on {bind}"), || {
            std::net::TcpStream::connect((host, port.parse::<u16>().unwrap())).is_ok()
        });
    }
    h
}

/// The status curl got for `url` from source address `from` (None: curl's default), with `extra` arguments.
fn status(url: &str, from: Option<&str>, extra: &[&str]) -> u16 {
    let mut c = Command::new("curl");
    c.args(["-sS", "-o", "/dev/null", "-w", "%{http_code}"]).args(extra);
    if let Some(ip) = from {
        c.args(["--interface", ip]);
    }
    let out = c.arg(url).output().expect("run curl");
    assert!(out.status.success(), "curl {url}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).parse().unwrap()
}

#[test]
fn haproxy_send_proxy_v2_names_the_client_for_the_rules_and_the_log_over_ipv4_ipv6_and_tls() {
    let site = tempdir("haproxy-site");
    for (path, body) in [
        ("index.html", "home"),
        ("haproxy-check.txt", "up"),
        ("lan/a.txt", "lan only"),
        ("private/doc.html", "secret doc"),
    ] {
        let file = site.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    }
    let conf = tempdir("haproxy-conf");
    let value = conf.join("site.json");
    std::fs::write(&value, VALUE).unwrap();
    let ca = make_ca(&conf);
    let (crt, key) = make_leaf(&conf, "leaf", 30);
    let (crt, key) = (crt.display().to_string(), key.display().to_string());
    let mut args =
        vec!["--site", value.to_str().unwrap(), "--workers", "1", "--h2c", "--access-log", "--proxy-protocol"];
    args.extend(tls_args(&crt, &key));
    let s = Server::start(&site, &args);

    let (v4, v6, tls) = (free_port("127.0.0.1"), free_port("::1"), free_port("127.0.0.1"));
    let _h = haproxy(
        &conf,
        &[
            ("plain4", format!("127.0.0.1:{v4}"), s.port, false),
            ("plain6", format!("[::1]:{v6}"), s.port, false),
            ("tls4", format!("127.0.0.1:{tls}"), s.https, true),
        ],
    );

    // HAProxy's checks reach the server with the header (LOCAL: the connection's own address is the client).
    wait_for("HAProxy's health check answered", || {
        s.logs.lock().unwrap().iter().any(|l| l.contains("\"target\":\"/haproxy-check.txt\""))
    });

    let plain = format!("http://127.0.0.1:{v4}");
    assert_eq!(status(&format!("{plain}/lan/a.txt"), Some("127.0.0.2"), &[]), 200, "127.0.0.2 on /lan/");
    assert_eq!(status(&format!("{plain}/lan/a.txt"), Some("127.0.0.3"), &[]), 403, "127.0.0.3 denied by the header");
    assert_eq!(status(&format!("{plain}/"), Some("127.0.0.3"), &[]), 200, "no rule on /");
    assert_eq!(status(&format!("{plain}/private/doc.html"), Some("127.0.0.2"), &[]), 403, "IPv4 is not ::1");
    // Over HTTP/2 too (prior knowledge through HAProxy's TCP mode).
    let h2 = ["--http2-prior-knowledge"];
    assert_eq!(status(&format!("{plain}/lan/a.txt"), Some("127.0.0.3"), &h2), 403, "h2: 127.0.0.3");
    assert_eq!(status(&format!("{plain}/lan/a.txt"), Some("127.0.0.2"), &h2), 200, "h2: 127.0.0.2");

    // The IPv6 frontend: HAProxy sends an AF_INET6 header to the server's IPv4 port.
    let plain6 = format!("http://[::1]:{v6}");
    assert_eq!(status(&format!("{plain6}/private/doc.html"), None, &[]), 200, "::1 on /private/");
    assert_eq!(status(&format!("{plain6}/lan/a.txt"), None, &[]), 200, "::1 on /lan/");

    // The header comes before the TLS handshake.
    let https = format!("https://localhost:{tls}");
    let resolve = format!("localhost:{tls}:127.0.0.1");
    let tls_args = ["--cacert", ca.to_str().unwrap(), "--resolve", &resolve];
    assert_eq!(status(&format!("{https}/lan/a.txt"), Some("127.0.0.2"), &tls_args), 200, "TLS: 127.0.0.2");
    assert_eq!(status(&format!("{https}/lan/a.txt"), Some("127.0.0.3"), &tls_args), 403, "TLS: 127.0.0.3");

    // The access log names the clients HAProxy saw; nothing was refused for a bad header.
    wait_for("the clients in the access log", || {
        let logs = s.logs.lock().unwrap();
        let denied =
            |c: &str| logs.iter().any(|l| l.contains(&format!("\"client\":\"{c}")) && l.contains("\"status\":403"));
        denied("127.0.0.3:") && denied("127.0.0.2:") && logs.iter().any(|l| l.contains("\"client\":\"[::1]:"))
    });
    assert_eq!(s.metric("hyperstatic_proxy_protocol_refused_total"), 0.0);
}
