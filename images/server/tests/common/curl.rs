//! curl against the real binary: one request, its status, header lines and body, over HTTP/1.1 or HTTP/2 (prior
//! knowledge on the plain port). Shared by the access-rule tests (access.rs, sso.rs).

use std::process::Command;

/// The protocols curl speaks to the plain port.
pub const PROTOS: [&str; 2] = ["--http1.1", "--http2-prior-knowledge"];

/// What curl got: the status, the header lines (names lowercased) and the body.
pub struct Got {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Got {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// One curl request of `path` over `proto` with `extra` arguments (source address, credentials, headers).
pub fn curl(host: &str, port: u16, proto: &str, path: &str, extra: &[&str]) -> Got {
    let url = format!("http://{host}:{port}{path}");
    let out = Command::new("curl").args(["-sS", "-i", proto]).args(extra).arg(&url).output().expect("run curl");
    assert!(out.status.success(), "curl {proto} {url}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{text}"));
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Got { status, headers, body: body.to_string() }
}
