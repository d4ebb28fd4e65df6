//! The admin listener: /healthz, /readyz, /metrics, /content. One plain thread with blocking sockets; it
//! never touches the workers' hot path.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use crate::log;
use crate::metrics;
use crate::parser::{self, Method, Parsed};
use crate::state::Shared;

pub fn serve(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        match stream {
            Ok(s) => {
                if let Err(e) = handle(s, &shared) {
                    log::warn("admin request failed", &[("error", log::V::S(&e.to_string()))]);
                }
            }
            Err(e) => log::warn("admin accept failed", &[("error", log::V::S(&e.to_string()))]),
        }
    }
}

/// Routes an admin path to (status, content type, body).
pub fn route(shared: &Shared, path: &[u8]) -> (u16, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    match path {
        b"/healthz" => (200, TEXT, "ok\n".into()),
        b"/readyz" => {
            if shared.ready() {
                (200, TEXT, "ready\n".into())
            } else if shared.draining.load(std::sync::atomic::Ordering::Acquire) {
                (503, TEXT, "draining\n".into())
            } else {
                (503, TEXT, "loading\n".into())
            }
        }
        b"/metrics" => (200, "text/plain; version=0.0.4; charset=utf-8", metrics::render(shared)),
        b"/content" => {
            let (t, _) = shared.table();
            let mut s = String::with_capacity(t.files() * 24);
            for e in &t.entries {
                s.push_str(&e.path);
                s.push('\n');
            }
            (200, TEXT, s)
        }
        _ => (404, TEXT, "not found\n".into()),
    }
}

fn handle(mut s: TcpStream, shared: &Shared) -> std::io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut buf = vec![0u8; 16 * 1024];
    let mut len = 0;
    let (status, ctype, body, head) = loop {
        let n = s.read(&mut buf[len..])?;
        if n == 0 {
            return Ok(());
        }
        len += n;
        match parser::parse(&buf[..len]) {
            Ok(Parsed::Complete(req, _)) => match req.method {
                Method::Get | Method::Head => {
                    let (st, ct, b) = route(shared, req.path);
                    break (st, ct, b, req.method == Method::Head);
                }
                _ => break (405, "text/plain; charset=utf-8", "method not allowed\n".to_string(), false),
            },
            Ok(Parsed::Partial) if len < buf.len() => continue,
            _ => break (400, "text/plain; charset=utf-8", "bad request\n".to_string(), false),
        }
    };
    let reason = crate::respond::reason(status);
    let mut resp = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head {
        resp.extend_from_slice(body.as_bytes());
    }
    s.write_all(&resp)?;
    let _ = s.shutdown(std::net::Shutdown::Write);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::sync::atomic::Ordering;

    #[test]
    fn readiness_follows_loading_and_draining() {
        let s = Shared::new(Config::default(), 1, "0".into(), false);
        assert_eq!(route(&s, b"/healthz").0, 200);
        assert_eq!(route(&s, b"/readyz"), (503, "text/plain; charset=utf-8", "loading\n".to_string()));
        s.loaded.store(true, Ordering::Release);
        assert_eq!(route(&s, b"/readyz").0, 200);
        s.draining.store(true, Ordering::Release);
        assert_eq!(route(&s, b"/readyz").2, "draining\n");
        assert_eq!(route(&s, b"/healthz").0, 200, "liveness is unaffected by draining");
        assert_eq!(route(&s, b"/other").0, 404);
        assert_eq!(route(&s, b"/content").2, "", "an empty table lists nothing");
    }
}
