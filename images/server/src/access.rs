//! Access-log lines, written in two steps because the duration is only known once the response has been
//! handed to the kernel, while the request's bytes (target, user agent) live in the read buffer only while
//! the batch is being answered: `begin` writes everything but the duration into a reused buffer at answer
//! time, `finish` appends the duration and closes the object when the write completes. Nothing allocates
//! once the buffers have grown to a batch's worth of lines.

use std::io::Write;
use std::net::SocketAddr;

use crate::log;
use crate::timing;

pub struct Fields<'a> {
    pub client: Option<SocketAddr>,
    pub method: &'a [u8],
    pub target: &'a [u8],
    /// `HTTP/1.1`, `HTTP/1.0` or `HTTP/2.0`.
    pub protocol: &'static str,
    pub status: u16,
    /// Body bytes (headers not included).
    pub bytes: u64,
    pub user_agent: &'a [u8],
    pub worker: usize,
}

/// Appends an unterminated line: `{"time":..,"msg":"request",...,"worker":N` (no duration, no `}`).
pub fn begin(out: &mut Vec<u8>, f: &Fields) {
    out.extend_from_slice(b"{\"time\":\"");
    log::timestamp(out);
    out.extend_from_slice(b"\",\"level\":\"info\",\"msg\":\"request\",\"client\":");
    match f.client {
        // SocketAddr's Display writes into the Vec directly (IPv6 in brackets: "[::1]:port").
        Some(a) => {
            let _ = write!(out, "\"{a}\"");
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"method\":");
    log::escape(out, f.method);
    out.extend_from_slice(b",\"target\":");
    log::escape(out, f.target);
    out.extend_from_slice(b",\"protocol\":\"");
    out.extend_from_slice(f.protocol.as_bytes());
    out.push(b'"');
    let _ = write!(out, ",\"status\":{},\"bytes\":{},\"user_agent\":", f.status, f.bytes);
    log::escape(out, f.user_agent);
    let _ = write!(out, ",\"worker\":{}", f.worker);
}

/// Marks a line started by `begin` as a request refused by a limit (`"limited":"per_client"`): a 429 from a
/// site's per-client limit told apart from a pool site's requests-per-second one (fairshare/).
pub fn limited(out: &mut Vec<u8>, reason: &'static str) {
    out.extend_from_slice(b",\"limited\":\"");
    out.extend_from_slice(reason.as_bytes());
    out.push(b'"');
}

/// Completes a line started by `begin`.
pub fn finish(out: &mut Vec<u8>, duration_ns: u64) {
    out.extend_from_slice(b",\"duration\":");
    timing::write_seconds(out, duration_ns);
    out.extend_from_slice(b"}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_fields_stay_one_valid_json_line() {
        let mut out = Vec::new();
        let f = Fields {
            client: Some("127.0.0.1:40000".parse().unwrap()),
            method: b"GET",
            target: b"/a\"b\\c\x01\xff\n",
            protocol: "HTTP/2.0",
            status: 404,
            bytes: 27,
            user_agent: b"x\"y\\z\x1b\xc3\x28",
            worker: 1,
        };
        begin(&mut out, &f);
        finish(&mut out, 1_500);
        let line = std::str::from_utf8(&out).expect("escaped output is ASCII");
        assert_eq!(line.matches('\n').count(), 1);
        assert!(line.ends_with("}\n"));
        assert!(line.contains("\"client\":\"127.0.0.1:40000\""), "{line}");
        assert!(line.contains(r#""target":"/a\"b\\c\u0001\u00ff\n""#), "{line}");
        assert!(line.contains(r#""user_agent":"x\"y\\z\u001b\u00c3(""#), "{line}");
        assert!(line.contains(",\"protocol\":\"HTTP/2.0\",\"status\":404,\"bytes\":27,"), "{line}");
        assert!(line.contains(",\"worker\":1,\"duration\":0.000001500}"), "{line}");
    }

    #[test]
    fn ipv6_clients_are_bracketed() {
        let mut out = Vec::new();
        let f = Fields {
            client: Some("[::1]:8080".parse().unwrap()),
            method: b"HEAD",
            target: b"/",
            protocol: "HTTP/1.1",
            status: 200,
            bytes: 0,
            user_agent: b"",
            worker: 0,
        };
        begin(&mut out, &f);
        limited(&mut out, "per_client");
        finish(&mut out, 0);
        let line = String::from_utf8(out).unwrap();
        assert!(line.contains("\"client\":\"[::1]:8080\""), "{line}");
        assert!(line.contains(",\"worker\":0,\"limited\":\"per_client\",\"duration\":0.000000000}"), "{line}");
    }
}
