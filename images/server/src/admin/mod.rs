//! The admin listener: /healthz, /readyz, /metrics, /content, /load-error, /sites, POST /drain/release. One thread that never touches the workers' hot
//! path: nonblocking sockets and poll(2).
//!
//! Its first duty is to answer kubelet's probes (timeouts of 1 to 5 s, see controllers/staticsite/deployment.go)
//! whatever the port's other clients do. A blocking loop that waits for the rest of a request lets a single
//! connection sending a byte every few seconds fail every probe: the pod goes unready, then is restarted. So:
//!
//! - Every connection has an absolute deadline: REQUEST_DEADLINE from accept to a complete request head, then
//!   RESPONSE_DEADLINE to write the whole response. Trickling bytes does not extend it. Past it the connection
//!   is closed (after a best-effort 408 if its request was incomplete).
//! - Requests are bounded: a head not complete within MAX_REQUEST bytes is a 400.
//! - At most MAX_CONNECTIONS are open. Well-behaved clients (kubelet, Prometheus, the operator) send their
//!   request as soon as they connect and are answered in the same loop turn, so a full table is made of slow or
//!   silent connections: a new connection then evicts the oldest one still waiting for its request (or, failing
//!   that, the oldest one still being written to). Only connections older than EVICT_GRACE are evicted, so that
//!   a burst of honest clients that fills the table is not dropped before it had a chance to send its requests;
//!   until one is evictable, newcomers wait in the kernel's accept queue. Under attack the listener thus still
//!   takes in MAX_CONNECTIONS per EVICT_GRACE (1280 connections a second), a probe waiting behind them.
//! - A /content list (megabytes for a large site) is rendered once and shared by every connection sending it,
//!   so slow readers cost little memory.
//!
//! Connections dropped for a deadline or an eviction are counted in
//! hyperstatic_admin_connections_dropped_total{reason}, not logged: an attack would flood the log.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::log;
pub mod metrics;
use crate::http1::parser::{self, Method, Parsed};
use crate::state::Shared;
use crate::sys::signal::{poll, PollFd};

/// Open admin connections at most (a file descriptor and up to MAX_REQUEST bytes each while reading).
const MAX_CONNECTIONS: usize = 128;
/// From accept to a complete request head. The probes' shortest timeout is 1 s: a client that needs more than
/// twice that to send a few dozen bytes is not a probe.
const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// From a complete request to the last byte of the response written. The operator's /content client gives up
/// after 5 s too.
const RESPONSE_DEADLINE: Duration = Duration::from_secs(5);
/// How long a connection is safe from eviction after its accept.
const EVICT_GRACE: Duration = Duration::from_millis(100);
/// The largest request head accepted (and the most a connection buffers).
const MAX_REQUEST: usize = 16 * 1024;
/// The listener's accept queue. std listens with 128; while the table is full, waiting connections queue here,
/// and once the queue is full the kernel drops SYNs, which clients retry only after a second: a failed probe.
/// The kernel caps it at net.core.somaxconn.
const ACCEPT_BACKLOG: libc::c_int = 1024;
/// After an accept error such as EMFILE the listener stays readable: stop polling it for a while rather than spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

const TEXT: &str = "text/plain; charset=utf-8";

/// Admin connections closed before their exchange was done, by reason.
#[derive(Default)]
pub struct Dropped {
    /// Request or response not complete by its deadline.
    pub deadline: u64,
    /// Evicted to make room for a new connection.
    pub overflow: u64,
}

impl Dropped {
    fn render(&self, out: &mut String) {
        use std::fmt::Write;
        let name = "hyperstatic_admin_connections_dropped_total";
        let _ = writeln!(
            out,
            "# HELP {name} Admin connections closed before their response was sent: deadline (request or response not complete in time) or overflow (evicted to make room).\n# TYPE {name} counter"
        );
        let _ = writeln!(out, "{name}{{reason=\"deadline\"}} {}", self.deadline);
        let _ = writeln!(out, "{name}{{reason=\"overflow\"}} {}", self.overflow);
    }
}

/// Runs the admin listener forever.
pub fn serve(listener: TcpListener, shared: Arc<Shared>) {
    crate::sys::socket::set_backlog(listener.as_raw_fd(), ACCEPT_BACKLOG);
    if let Err(e) = listener.set_nonblocking(true) {
        // Without it an accept could block the loop; the process is unusable for probes, so say so loudly.
        log::error("admin listener: cannot make it nonblocking", &[("error", log::V::S(&e.to_string()))]);
        return;
    }
    let answers = Answers { shared, dropped: Dropped::default(), content: None };
    let mut admin = Admin { listener, conns: Vec::new(), answers, accept_paused: None };
    loop {
        admin.turn();
    }
}

/// Routes an admin path to (status, content type, body).
pub fn route(shared: &Shared, dropped: &Dropped, path: &[u8]) -> (u16, &'static str, String) {
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
        b"/metrics" => {
            let mut m = metrics::render(shared);
            dropped.render(&mut m);
            (200, "text/plain; version=0.0.4; charset=utf-8", m)
        }
        // The last load's failure, or an empty body when it succeeded (hyperstatic_content_load_failed says
        // which; load_error.rs bounds the message).
        // A refused certificate rotation follows on a `tls:` line (hyperstatic_tls_certificate_reload_failed).
        b"/load-error" => {
            let mut body = shared.load_error.get().map_or(String::new(), |m| m + "\n");
            if let Some(e) = shared.tls.as_ref().and_then(|t| t.refused.get()) {
                body.push_str("tls: ");
                body.push_str(&e);
                body.push('\n');
            }
            (200, TEXT, body)
        }
        b"/content" => {
            let (t, _) = shared.table();
            let mut s = String::with_capacity(t.files() * 24);
            for e in &t.entries {
                content_line(&mut s, e);
            }
            (200, TEXT, s)
        }
        _ => (404, TEXT, "not found\n".into()),
    }
}

/// POST /drain/release: a held drain (--drain-hold) may end, the drain delay running from now. The operator sends
/// it once no EndpointSlice lists the pod. Nobody authenticates it, which is safe because all it can do is end a
/// drain that has begun (a SIGTERM came) as a pod without a hold ends it: a release before the SIGTERM is refused,
/// not remembered. Not found without a hold.
pub fn release_drain(shared: &Shared) -> (u16, &'static str) {
    use std::sync::atomic::Ordering;
    if shared.cfg.drain_hold.is_zero() {
        (404, "not found\n")
    } else if !shared.draining.load(Ordering::Acquire) {
        (409, "not draining\n")
    } else {
        shared.drain_released.store(true, Ordering::Release);
        (200, "released\n")
    }
}

/// One /content line: the URL path, then tab-separated `memory` or `disk` (where its identity body is served
/// from) and its encodings (`identity,br,gzip,zstd`).
fn content_line(out: &mut String, e: &crate::site::content::FileEntry) {
    out.push_str(&e.path);
    out.push_str(if e.identity().body.on_disk() { "\tdisk\t" } else { "\tmemory\t" });
    let mut first = true;
    for enc in crate::compress::encoding::ALL {
        if e.has(enc) {
            if !first {
                out.push(',');
            }
            out.push_str(enc.token());
            first = false;
        }
    }
    out.push('\n');
}

/// A whole response; every admin response closes its connection.
fn response(status: u16, ctype: &str, body: &str, head_only: bool) -> Vec<u8> {
    let reason = crate::answer::reply::reason(status);
    let mut resp = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        resp.extend_from_slice(body.as_bytes());
    }
    resp
}

/// What the responses need besides the request.
struct Answers {
    shared: Arc<Shared>,
    dropped: Dropped,
    /// The last GET /content response and the table generation it lists, while a connection is still sending it.
    content: Option<(u64, Rc<Vec<u8>>)>,
}

impl Answers {
    /// The response to the request head in `buf`, or None while it may still be incomplete.
    fn answer(&mut self, buf: &[u8]) -> Option<Rc<Vec<u8>>> {
        Some(match parser::parse(buf) {
            Ok(Parsed::Complete(req, _)) => match req.method {
                Method::Get if req.path == b"/content" => self.content_list(),
                // A pool's sites (pool/report.rs); `?top=N` the N busiest. Not found without `--sites`.
                Method::Get | Method::Head if req.path == b"/sites" && self.shared.pool.is_some() => {
                    let report =
                        self.shared.pool.as_ref().map(|p| p.report.lock().unwrap_or_else(|e| e.into_inner()).clone());
                    let body = report.map_or(String::new(), |r| r.sites_json(crate::pool::report::top_of(req.query)));
                    response(200, "application/json", &body, req.method == Method::Head).into()
                }
                // No body is read: a POST with one is answered and its connection closed like any other.
                // (The parser splits only GET, HEAD and OPTIONS targets into a path: the whole target is compared.)
                Method::Other if req.method_raw == b"POST" && req.target == b"/drain/release" => {
                    let (status, body) = release_drain(&self.shared);
                    response(status, TEXT, body, false).into()
                }
                Method::Get | Method::Head => {
                    let (status, ctype, body) = route(&self.shared, &self.dropped, req.path);
                    response(status, ctype, &body, req.method == Method::Head).into()
                }
                _ => response(405, TEXT, "method not allowed\n", false).into(),
            },
            Ok(Parsed::Partial) if buf.len() < MAX_REQUEST => return None,
            // Malformed, or too large for the buffer: admin clients only ever send short GETs.
            _ => response(400, TEXT, "bad request\n", false).into(),
        })
    }

    /// GET /content, shared with the connections still sending the same table's list.
    fn content_list(&mut self) -> Rc<Vec<u8>> {
        // Read before the table: if a reload lands in between, the list is newer than its key and is merely
        // rebuilt next time.
        let generation = self.shared.generation();
        if let Some((g, resp)) = &self.content {
            if *g == generation {
                return resp.clone();
            }
        }
        let (status, ctype, body) = route(&self.shared, &self.dropped, b"/content");
        let resp: Rc<Vec<u8>> = response(status, ctype, &body, false).into();
        self.content = Some((generation, resp.clone()));
        resp
    }

    /// Forgets the /content response once no connection is sending it: it is a copy of every path.
    fn release_unused(&mut self) {
        if self.content.as_ref().is_some_and(|(_, resp)| Rc::strong_count(resp) == 1) {
            self.content = None;
        }
    }
}

enum State {
    /// Waiting for the rest of the request head.
    Reading(Vec<u8>),
    /// Sending `out[sent..]`.
    Writing { out: Rc<Vec<u8>>, sent: usize },
    /// Answered, or the client went away: close.
    Done,
}

struct Conn {
    stream: TcpStream,
    accepted: Instant,
    deadline: Instant,
    state: State,
}

impl Conn {
    /// Moves the exchange forward as far as the socket allows without blocking.
    fn advance(&mut self, answers: &mut Answers) {
        if let State::Reading(buf) = &mut self.state {
            let mut chunk = [0u8; 4096];
            let out = loop {
                let room = (MAX_REQUEST - buf.len()).min(chunk.len());
                match self.stream.read(&mut chunk[..room]) {
                    // Gone before finishing its request: nobody to answer.
                    Ok(0) => break None,
                    Ok(n) => {
                        buf.extend_from_slice(&chunk[..n]);
                        // A full buffer always gets an answer (400), so `room` above is never 0.
                        if let Some(out) = answers.answer(buf) {
                            break Some(out);
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break None,
                }
            };
            match out {
                Some(out) => {
                    self.state = State::Writing { out, sent: 0 };
                    self.deadline = Instant::now() + RESPONSE_DEADLINE;
                }
                None => self.state = State::Done,
            }
        }
        if let State::Writing { out, sent } = &mut self.state {
            while *sent < out.len() {
                match self.stream.write(&out[*sent..]) {
                    Ok(0) => break,
                    Ok(n) => *sent += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            if *sent == out.len() {
                let _ = self.stream.shutdown(Shutdown::Write);
            }
            self.state = State::Done;
        }
    }

    fn events(&self) -> libc::c_short {
        match self.state {
            State::Reading(_) => libc::POLLIN,
            State::Writing { .. } => libc::POLLOUT,
            State::Done => 0,
        }
    }
}

/// The connection a newcomer may evict from a full table: the oldest still reading its request, else the
/// oldest still being written to, as long as it is past its grace period. `conns` is in accept order.
fn victim(conns: &[Conn], now: Instant) -> Option<usize> {
    let evictable = |c: &Conn| now.duration_since(c.accepted) >= EVICT_GRACE;
    conns
        .iter()
        .position(|c| matches!(c.state, State::Reading(_)) && evictable(c))
        .or_else(|| conns.iter().position(evictable))
}

/// poll(2)'s timeout in milliseconds until `wake` (-1: none), rounded up so as not to wake just before it.
fn poll_timeout(wake: Option<Instant>, now: Instant) -> libc::c_int {
    wake.map_or(-1, |t| t.saturating_duration_since(now).as_micros().div_ceil(1000).min(i32::MAX as u128) as i32)
}

struct Admin {
    listener: TcpListener,
    /// In accept order: the oldest first.
    conns: Vec<Conn>,
    answers: Answers,
    /// Set after an accept error: the listener is left out of poll until then.
    accept_paused: Option<Instant>,
}

impl Admin {
    /// One wait for events and the work they bring.
    fn turn(&mut self) {
        let now = Instant::now();
        if self.accept_paused.is_some_and(|t| now >= t) {
            self.accept_paused = None;
        }
        let room = self.conns.len() < MAX_CONNECTIONS || victim(&self.conns, now).is_some();
        let listen = room && self.accept_paused.is_none();

        // Wake for the first deadline, for the oldest connection becoming evictable when the table is full
        // (the listener is not polled meanwhile), and for the end of an accept pause.
        let evictable_at = (!room).then(|| self.conns[0].accepted + EVICT_GRACE);
        let wake = self.conns.iter().map(|c| c.deadline).chain(evictable_at).chain(self.accept_paused).min();
        let mut fds: Vec<PollFd> = Vec::with_capacity(self.conns.len() + 1);
        if listen {
            fds.push(PollFd { fd: self.listener.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        }
        let first_conn = fds.len();
        fds.extend(self.conns.iter().map(|c| PollFd { fd: c.stream.as_raw_fd(), events: c.events(), revents: 0 }));
        // An error (EINTR) leaves every revents 0.
        poll(&mut fds, poll_timeout(wake, now));

        let now = Instant::now();
        for (c, p) in self.conns.iter_mut().zip(&fds[first_conn..]) {
            if p.revents != 0 {
                c.advance(&mut self.answers);
            }
        }
        self.conns.retain_mut(|c| match c.state {
            State::Done => false,
            _ if now >= c.deadline => {
                if matches!(c.state, State::Reading(_)) {
                    // Best effort: tell a human with nc why; a full send buffer or a reset just loses it.
                    let _ = c.stream.write(&response(408, TEXT, "request timeout\n", false));
                }
                self.answers.dropped.deadline += 1;
                false
            }
            _ => true,
        });
        if listen && fds[0].revents != 0 {
            self.accept(now);
        }
        self.answers.release_unused();
    }

    /// Accepts what the kernel has queued, as long as there is room or someone to evict.
    fn accept(&mut self, now: Instant) {
        loop {
            let full = self.conns.len() >= MAX_CONNECTIONS;
            if full && victim(&self.conns, now).is_none() {
                return;
            }
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                // A connection reset while queued, or a signal: nothing to do with the listener.
                Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::ConnectionAborted) => continue,
                Err(e) => {
                    log::warn("admin accept failed", &[("error", log::V::S(&e.to_string()))]);
                    self.accept_paused = Some(now + ACCEPT_ERROR_PAUSE);
                    return;
                }
            };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            let mut c =
                Conn { stream, accepted: now, deadline: now + REQUEST_DEADLINE, state: State::Reading(Vec::new()) };
            // A probe's request is usually there already: answer it now, without taking a place in the table.
            c.advance(&mut self.answers);
            if matches!(c.state, State::Done) {
                continue;
            }
            if full {
                // There is one: checked before accepting, and nothing has aged or left since.
                if let Some(i) = victim(&self.conns, now) {
                    self.conns.remove(i);
                    self.answers.dropped.overflow += 1;
                }
            }
            self.conns.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::sync::atomic::Ordering;

    #[test]
    fn readiness_follows_loading_and_draining() {
        let s = Shared::new(Config::default(), 1, "0".into(), false);
        let d = Dropped::default();
        assert_eq!(route(&s, &d, b"/healthz").0, 200);
        assert_eq!(route(&s, &d, b"/readyz"), (503, "text/plain; charset=utf-8", "loading\n".to_string()));
        s.loaded.store(true, Ordering::Release);
        assert_eq!(route(&s, &d, b"/readyz").0, 200);
        s.draining.store(true, Ordering::Release);
        assert_eq!(route(&s, &d, b"/readyz").2, "draining\n");
        assert_eq!(route(&s, &d, b"/healthz").0, 200, "liveness is unaffected by draining");
        assert_eq!(route(&s, &d, b"/other").0, 404);
        assert_eq!(route(&s, &d, b"/content").2, "", "an empty table lists nothing");
    }

    #[test]
    fn a_drain_is_released_only_with_a_hold_and_once_begun() {
        let s = Shared::new(Config::default(), 1, "0".into(), false);
        assert_eq!(release_drain(&s).0, 404, "no hold: nothing to release");
        let held = Shared::new(
            Config { drain_hold: std::time::Duration::from_secs(60), ..Config::default() },
            1,
            "0".into(),
            false,
        );
        assert_eq!(release_drain(&held), (409, "not draining\n"), "before the SIGTERM");
        assert!(!held.drain_released.load(Ordering::Acquire), "a release before the drain is not remembered");
        held.draining.store(true, Ordering::Release);
        assert_eq!(release_drain(&held), (200, "released\n"));
        assert!(held.drain_released.load(Ordering::Acquire));
    }

    #[test]
    fn metrics_count_dropped_connections_by_reason() {
        let s = Shared::new(Config::default(), 1, "0".into(), false);
        let text = route(&s, &Dropped { deadline: 3, overflow: 7 }, b"/metrics").2;
        assert!(text.contains("\nhyperstatic_admin_connections_dropped_total{reason=\"deadline\"} 3\n"), "{text}");
        assert!(text.contains("\nhyperstatic_admin_connections_dropped_total{reason=\"overflow\"} 7\n"), "{text}");
        assert!(text.contains("\n# TYPE hyperstatic_admin_connections_dropped_total counter\n"), "{text}");
    }

    fn answers() -> Answers {
        Answers {
            shared: Arc::new(Shared::new(Config::default(), 1, "0".into(), false)),
            dropped: Dropped::default(),
            content: None,
        }
    }

    #[test]
    fn answers_complete_heads_and_bounds_partial_ones() {
        let mut a = answers();
        assert_eq!(a.answer(b"GET /healthz HTTP/1.1\r\nHost: t\r\n"), None, "incomplete");
        let ok = a.answer(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        assert!(ok.starts_with(b"HTTP/1.1 200 OK\r\n") && ok.ends_with(b"\r\n\r\nok\n"));
        let bad = a.answer(&[b'a'; MAX_REQUEST]).unwrap();
        assert!(bad.starts_with(b"HTTP/1.1 400 "), "a full buffer without a head is answered");
        let mut long = b"GET /healthz HTTP/1.1\r\nHost: t\r\nX: ".to_vec();
        long.resize(MAX_REQUEST, b'a');
        assert!(a.answer(&long).unwrap().starts_with(b"HTTP/1.1 400 "));
        long.truncate(MAX_REQUEST - 1);
        assert_eq!(a.answer(&long), None, "one byte short of the limit may still complete");
        let post = |a: &mut Answers, target: &str| {
            a.answer(format!("POST {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap()
        };
        assert!(post(&mut a, "/drain/release").starts_with(b"HTTP/1.1 404 "), "routed to the release, no hold here");
        assert!(post(&mut a, "/healthz").starts_with(b"HTTP/1.1 405 "), "no other POST");
    }

    #[test]
    fn content_list_is_shared_while_sent_and_follows_reloads() {
        let mut a = answers();
        let get = b"GET /content HTTP/1.1\r\nHost: t\r\n\r\n";
        let first = a.answer(get).unwrap();
        let second = a.answer(get).unwrap();
        assert!(Rc::ptr_eq(&first, &second), "one copy for every connection sending it");
        assert!(
            first.starts_with(b"HTTP/1.1 200 OK\r\n")
                && first.ends_with(b"Content-Length: 0\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")
        );
        a.shared.swap(crate::site::content::Table::default());
        assert!(!Rc::ptr_eq(&a.answer(get).unwrap(), &first), "a reload makes a new list");
        drop((first, second));
        a.release_unused();
        assert!(a.content.is_none(), "nobody is sending it any more");
    }

    /// Connections accepted `age` ago, in accept order; `true` marks one still reading its request.
    fn conns(now: Instant, spec: &[(Duration, bool)]) -> Vec<Conn> {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        spec.iter()
            .map(|&(age, reading)| {
                let stream = TcpStream::connect(l.local_addr().unwrap()).unwrap();
                let accepted = now - age;
                let state =
                    if reading { State::Reading(Vec::new()) } else { State::Writing { out: Rc::default(), sent: 0 } };
                Conn { stream, accepted, deadline: accepted + REQUEST_DEADLINE, state }
            })
            .collect()
    }

    #[test]
    fn eviction_picks_the_oldest_reader_past_its_grace() {
        let now = Instant::now() + Duration::from_secs(10);
        let (old, older, young) = (EVICT_GRACE * 3, EVICT_GRACE * 5, EVICT_GRACE / 2);
        let c = conns(now, &[(older, false), (old, true), (old, true), (young, true)]);
        assert_eq!(victim(&c, now), Some(1), "the oldest reader goes first, before writers");
        let c = conns(now, &[(older, false), (young, true), (young, true)]);
        assert_eq!(victim(&c, now), Some(0), "a writer past its grace when no reader is");
        let c = conns(now, &[(young, false), (young, true), (young, true)]);
        assert_eq!(victim(&c, now), None, "everyone is within the grace period: newcomers wait");
        let c = conns(now, &[(EVICT_GRACE, true)]);
        assert_eq!(victim(&c, now), Some(0), "the grace period is over at its end");
    }

    #[test]
    fn poll_timeout_rounds_up() {
        let now = Instant::now();
        assert_eq!(poll_timeout(None, now), -1);
        assert_eq!(poll_timeout(Some(now), now), 0);
        assert_eq!(poll_timeout(Some(now + Duration::from_micros(1)), now), 1);
        assert_eq!(poll_timeout(Some(now + Duration::from_millis(1500)), now), 1500);
        assert_eq!(poll_timeout(Some(now - Duration::from_secs(1)), now), 0, "overdue");
    }
}
