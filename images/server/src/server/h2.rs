//! HTTP/2 on a connection, as h1.rs is HTTP/1.1: the sans-IO engine (http2/) is fed the read buffer, each
//! request head becomes the core's `Ask` (the same inputs HTTP/1.1 reads out of its parsed head), the core's
//! `Reply` is framed as an HPACK head (http2/respond.rs) plus a body handle, and the engine's frames leave
//! through the worker's batch `Out` and its one gathered write (or the TLS session), exactly as HTTP/1.1
//! batches do. What is HTTP/2's own here: picking the protocol (`start_h2`), flow-controlled writing
//! (`flush_h2`), and the clock the engine does not have (`sweep_h2`: SETTINGS-ACK and idle timeouts, GOAWAY on
//! drain and on `--max-connection-age`).
//!
//! Bodies are copied into the batch as DATA frames are cut (memory variants with a copy, disk ones with
//! pread): a frame header every 16 KiB sits between body pieces anyway, and a copy keeps the body's lifetime
//! with the stream's handle rather than with the table the pending output holds.

use crate::guard;
use std::os::unix::fs::FileExt;

use super::conn::{Done, Proto, Then, H2};
use super::{Flow, Worker, DRAIN_IDLE_MS};
use crate::access;
use crate::answer::conditional::Conditions;
use crate::answer::file::FileAsk;
use crate::answer::limit::{self, Limiter};
use crate::answer::reply::Reply;
use crate::answer::request::{self, Ask, Method, Site};
use crate::counters::bump;
use crate::http1::out::Out as Batch;
use crate::http2::frame::PREFACE;
use crate::http2::respond::{self, BodyRef};
use crate::http2::{self, Event, Limits, RequestHead};
use crate::pool::Route;
use crate::state::code_index;
use crate::sys;
use crate::timing;

/// Buffer sets a worker keeps for its HTTP/2 connections: one per connection with output in flight at
/// once, beyond which a busy connection grows its own (freed when it goes quiet). The sets are lent, not
/// per connection, so 10,000 idle connections hold none of them.
pub(super) const H2_POOL: usize = 16;

/// DATA bytes cut per write: the batch buffer's size, so one flush stays one gathered write.
const WRITE_BUDGET: usize = 256 * 1024;

/// The engine's frames into the worker's batch. A disk body that reads short (the file shrank under us)
/// sets `failed`: the connection ends, as HTTP/1.1's sendfile does.
struct Sink<'a> {
    out: &'a mut Batch,
    failed: bool,
}

impl http2::Out<BodyRef> for Sink<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.out.bytes(bytes);
    }

    fn put_body(&mut self, body: &BodyRef, offset: u64, len: usize) {
        let o = offset as usize;
        match body {
            BodyRef::Static(b) => self.out.bytes(&b[o..o + len]),
            BodyRef::Mem(b) => self.out.bytes(&b[o..o + len]),
            BodyRef::Disk(f) => {
                let buf = &mut self.out.buf;
                let at = buf.len();
                buf.resize(at + len, 0);
                if f.read_exact_at(&mut buf[at..], offset).is_err() {
                    self.failed = true;
                }
            }
        }
    }
}

/// The core's inputs from an HTTP/2 request head; None when `:path` is not one HTTP/1.1 would accept in a
/// request target (visible ASCII, origin form, or `*` for OPTIONS): that request gets 400. HTTP/3 heads too
/// (server/h3_conn.rs): their fields are the same.
pub(super) fn ask<'a>(r: &RequestHead<'a>) -> Option<Ask<'a>> {
    let method = match r.method() {
        b"GET" => Method::Get,
        b"HEAD" => Method::Head,
        b"OPTIONS" => Method::Options,
        b"POST" | b"PUT" | b"DELETE" | b"CONNECT" | b"TRACE" | b"PATCH" => Method::Other,
        _ => Method::Unknown,
    };
    let target = r.path();
    let (path, query) = match target.iter().position(|&b| b == b'?') {
        Some(q) => (&target[..q], Some(&target[q + 1..])),
        None => (target, None),
    };
    let ok = target.iter().all(|b| (0x21..=0x7e).contains(b))
        && (path.first() == Some(&b'/') || (path == b"*" && method == Method::Options));
    let path = match method {
        // As HTTP/1.1: another method's 405 page is chosen by its path, `/` when there is none (CONNECT).
        Method::Other if !ok || path.is_empty() => &b"/"[..],
        Method::Other | Method::Unknown => path,
        _ if !ok => return None,
        _ => path,
    };
    let mut a = Ask {
        method,
        path,
        query,
        accept: None,
        sec_fetch_dest: None,
        access_control_request_method: None,
        file: FileAsk {
            get: method == Method::Get,
            accept_encoding: None,
            conditions: Conditions::default(),
            range: None,
            if_range: None,
            origin: None,
        },
        authorization: None,
        session: None,
        // Named by the glue (the site's trusted proxies decide: `forwarded_for`).
        client: None,
    };
    for (n, v) in r.fields() {
        let slot = match n {
            // HTTP/2 and HTTP/3 may split `cookie` into one field per pair (RFC 9113 8.2.3): each is looked at.
            b"cookie" if a.session.is_none() => {
                a.session = crate::guard::session::from_cookie_header(v);
                continue;
            }
            b"accept-encoding" => &mut a.file.accept_encoding,
            b"accept" => &mut a.accept,
            b"sec-fetch-dest" => &mut a.sec_fetch_dest,
            b"if-none-match" => &mut a.file.conditions.if_none_match,
            b"if-modified-since" => &mut a.file.conditions.if_modified_since,
            b"if-match" => &mut a.file.conditions.if_match,
            b"if-unmodified-since" => &mut a.file.conditions.if_unmodified_since,
            b"range" => &mut a.file.range,
            b"if-range" => &mut a.file.if_range,
            b"origin" => &mut a.file.origin,
            b"access-control-request-method" => &mut a.access_control_request_method,
            b"authorization" => &mut a.authorization,
            _ => continue,
        };
        slot.get_or_insert(v);
    }
    Some(a)
}

/// The last `x-forwarded-for` field of a head (the nearest proxy's; guard/forwarded.rs). HTTP/3 heads too.
pub(super) fn forwarded_for<'a>(r: &RequestHead<'a>) -> Option<&'a [u8]> {
    r.fields().filter(|(n, _)| *n == b"x-forwarded-for").map(|(_, v)| v).last()
}

impl Worker {
    /// Makes connection `idx` an HTTP/2 one (ALPN chose `h2`, or the h2c preface came); our SETTINGS are
    /// queued for its first write.
    pub(super) fn start_h2(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let transport = if c.tls.is_some() { 0 } else { 1 };
        c.proto = Proto::Http2(Box::new(H2 { conn: http2::Conn::new(Limits::default()), transport }));
        // HTTP/2 has no request-head timeout: the SETTINGS-ACK and idle timeouts (sweep_h2) stand for it.
        c.head_since_ms = 0;
        bump(&self.stats().h2_connections[transport], 1);
    }

    /// `--h2c` on the plain port, before the protocol is known: the client preface makes the connection
    /// HTTP/2; anything else that parses as (the start of) an HTTP/1.1 request, HTTP/1.1. A prefix of the
    /// preface waits for more.
    pub(super) fn sniff(&mut self, idx: usize, len: usize) -> Flow {
        let n = len.min(PREFACE.len());
        if self.rbuf[..n] != PREFACE[..n] {
            if crate::http1::parser::parse(&self.rbuf[..len]).is_err() {
                // Neither the preface nor an HTTP/1.1 request: a client that meant HTTP/2 with a bad preface
                // gets the connection closed (RFC 9113 §3.4, h2spec 3.5/2), not an HTTP/1.1 400 it cannot read.
                self.close(idx);
                return Flow::Stop;
            }
            self.conns[idx].proto = Proto::Http1;
            return self.answer(idx, len);
        }
        if len < PREFACE.len() {
            self.conns[idx].stash = self.rbuf[..len].to_vec();
            return Flow::Continue;
        }
        self.start_h2(idx);
        self.answer_h2(idx, len)
    }

    /// Feeds rbuf[..len] to the engine and answers every request it yields, then writes.
    pub(super) fn answer_h2(&mut self, idx: usize, len: usize) -> Flow {
        let table = sys::mem::detach(&self.table.value);
        // A pool: its snapshot outlives the batch as the table does (swapped between loop iterations only).
        let pool = match (&self.pool, &self.shared.pool) {
            (Some(l), Some(p)) => Some((sys::mem::detach(p), sys::mem::detach(&l.value))),
            _ => None,
        };
        let now_s = (self.now_ms / 1000) as u32;
        let stats = &self.shared.stats[self.id];
        let cfg = &self.shared.cfg;
        let mut pos = 0;
        let mut batch_start: Option<u64> = None;
        let c = &mut self.conns[idx];
        let Proto::Http2(h) = &mut c.proto else { unreachable!("answer_h2 on an HTTP/2 connection") };
        let tls = c.tls.is_some();
        let date = if tls && !self.h2_date_hsts.is_empty() { &self.h2_date_hsts } else { &self.h2_date };
        h.conn.borrow_buffers(&mut self.h2_pool);
        loop {
            let (used, ev) = h.conn.recv(&self.rbuf[pos..len]);
            pos += used;
            let Some(Event::Request(r)) = ev else {
                if used == 0 || pos >= len {
                    break;
                }
                continue;
            };
            let start_ns = *batch_start.get_or_insert_with(timing::now_ns);
            let stream = r.stream;
            let head = r.method() == b"HEAD";
            let mut limited = false;
            // The peer, or whom the routed site's trusted proxies name (below).
            let mut client = c.peer;
            // A pool routes by `:authority` (else `host`): the same answers as HTTP/1.1's (h1.rs `pooled`).
            let routed =
                pool.map(|(p, snap)| snap.route(p, Some(r.authority()).filter(|h| !h.is_empty()), self.id, now_s));
            let (reply, slot) = match routed {
                Some(Route::Status(None, status)) => (Reply::plain(status, false, head), None),
                Some(Route::Status(Some(slot), status)) => (Reply::later(status, head), Some(slot)),
                // A stream is not held for a loading site (HTTP/1.1 holds its connection, h1.rs): 503 at once.
                Some(Route::Load(slot)) => (Reply::later(503, head), Some(slot)),
                routed => {
                    let (table, slot) = match routed {
                        Some(Route::Site(slot, t)) => (t, Some(slot)),
                        _ => (table, None),
                    };
                    // A pool site is named in the buckets as HTTP/1.1 names it (h1.rs `pooled`).
                    let key = slot.map_or(0, |s| s.key());
                    let mut l = Limiter { clients: &mut self.clients, counters: &stats.fair, now_ms: self.now_ms };
                    let site = Site { table, spa_fallback: table.spa_fallback };
                    client = guard::client(table.access.as_deref(), c.peer, || forwarded_for(&r));
                    let reply = match limit::check(&mut l, table.per_client.as_ref(), key, client, head) {
                        Some(refused) => {
                            limited = true;
                            refused
                        }
                        None => match (ask(&r), table.https_redirect) {
                            (None, _) => Reply::plain(400, false, head),
                            (Some(a), Some(port)) if !tls => {
                                request::https_redirect(&a, Some(r.authority()).filter(|h| !h.is_empty()), port)
                            }
                            (Some(a), _) => {
                                let a = Ask { client: client.map(|x| x.ip()), ..a };
                                request::answer(site, &a, &mut self.pathbuf, &mut self.verified)
                            }
                        },
                    };
                    (reply, slot)
                }
            };
            let f = respond::frame(&mut self.h2_head, &mut self.h2_loc, &reply);
            let log_from = self.batch_log.len() as u32;
            if cfg.access_log {
                self.log_counter += 1;
                if self.log_counter.is_multiple_of(cfg.access_log_sample) {
                    let fields = access::Fields {
                        client,
                        method: r.method(),
                        target: r.path(),
                        protocol: "HTTP/2.0",
                        status: f.status,
                        bytes: f.body_len,
                        user_agent: r.field(b"user-agent").unwrap_or(b""),
                        worker: self.id,
                    };
                    access::begin(&mut self.batch_log, &fields);
                    if limited {
                        access::limited(&mut self.batch_log, "per_client");
                    }
                }
            }
            let log_to = self.batch_log.len() as u32;
            self.batch.push(Done { start_ns, log_from, log_to });
            // A stream the peer reset meanwhile takes no answer; that is not an error of ours.
            let _ = h.conn.respond(stream, &[&self.h2_head, date], f.body);
            c.requests += 1;
            bump(&stats.requests[code_index(f.status)], 1);
            let bytes = (self.h2_head.len() + date.len()) as u64 + f.body_len;
            bump(&stats.response_bytes, bytes);
            if let Some(slot) = slot {
                slot.counters.count(self.id, f.status, bytes);
            }
            bump(&stats.h2_streams[h.transport], 1);
            if c.requests >= self.max_requests {
                h.conn.drain();
            }
        }
        c.head_since_ms = 0;
        if pos < len {
            // Less than a frame (at most 16,393 bytes: our SETTINGS_MAX_FRAME_SIZE plus its header).
            c.stash = self.rbuf[pos..len].to_vec();
        }
        self.flush_h2(idx)
    }

    /// Lets the engine write what its windows allow into the batch and sends it; repeats while the socket
    /// takes everything and the engine has more. Ends the connection once the engine says it is over.
    pub(super) fn flush_h2(&mut self, idx: usize) -> Flow {
        loop {
            self.out.clear();
            let Proto::Http2(h) = &mut self.conns[idx].proto else { return Flow::Continue };
            let mut sink = Sink { out: &mut self.out, failed: false };
            h.conn.write(&mut sink, WRITE_BUDGET);
            if sink.failed {
                self.out.clear();
                self.batch.clear();
                self.batch_log.clear();
                self.close(idx);
                return Flow::Stop;
            }
            let (more, over) = (h.conn.wants_write(), h.conn.is_closed());
            if let Flow::Stop = self.flush(idx) {
                return Flow::Stop;
            }
            if over {
                self.conns[idx].then = Then::Close { clean: false };
                self.begin_close(idx);
                return Flow::Stop;
            }
            if !more {
                // Nothing in flight: the buffers go back to the worker for the next connection it serves.
                if let Proto::Http2(h) = &mut self.conns[idx].proto {
                    h.conn.return_buffers(&mut self.h2_pool, H2_POOL);
                }
                break;
            }
        }
        Flow::Continue
    }

    /// Pending output drained: cut more DATA, then read what waited.
    pub(super) fn resume_h2(&mut self, idx: usize) {
        self.conns[idx].paused = false;
        if let Flow::Continue = self.flush_h2(idx) {
            self.process(idx, true);
        }
    }

    /// The timeouts of an HTTP/2 connection with no output pending, from the worker's clock (and its idle memory
    /// given back by flush_h2): GOAWAY when
    /// draining or past `--max-connection-age` (open streams finish first); GOAWAY SETTINGS_TIMEOUT when our
    /// SETTINGS stay unacknowledged past the header timeout; close when idle past the keep-alive timeout, or
    /// when open streams made no progress that long (a zero window or a reader that stopped).
    pub(super) fn sweep_h2(&mut self, idx: usize, idle: u64) {
        let c = &mut self.conns[idx];
        let Proto::Http2(h) = &mut c.proto else { return };
        let age = self.now_ms.saturating_sub(c.born_ms);
        if self.closing || age >= self.max_age_ms {
            h.conn.drain();
        }
        if h.conn.awaiting_settings_ack() && age >= self.header_timeout_ms {
            h.conn.settings_timeout();
        }
        let streams = h.conn.open_streams();
        if streams == 0 && (idle >= self.keepalive_ms || (self.closing && idle >= DRAIN_IDLE_MS)) {
            h.conn.drain();
        } else if streams > 0 && idle >= self.keepalive_ms {
            self.close(idx);
            return;
        }
        self.flush_h2(idx);
    }
}
