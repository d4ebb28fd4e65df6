//! HTTP/1.1 on a connection: every complete request in the read buffer parsed and answered into the worker's
//! batch (pipelined requests leave in one write), with metrics and access-log lines per response. The answers
//! come from http1/respond.rs; this file is the glue between the connection and the protocol.

use super::conn::{Done, Then};
use super::{Flow, Worker, FLUSH_AT};
use crate::access;
use crate::answer::limit::{self, Limiter};
use crate::answer::reply::Reply;
use crate::counters::bump;
use crate::guard;
use crate::http1::out::Out;
use crate::http1::parser::{self, Parsed};
use crate::http1::parser::{Method, Request};
use crate::http1::respond::{self, Ctx, Resp};
use crate::pool::Route;
use crate::state::code_index;
use crate::sys;
use crate::timing;

impl Worker {
    /// Parses and answers the requests in rbuf[..len].
    pub(super) fn answer(&mut self, idx: usize, len: usize) -> Flow {
        self.out.clear();
        let mut pos = 0;
        let mut close = false;
        // Whether the last request answered was whole and without a body (see Then::Close).
        let mut bodiless = false;
        // The table outlives the batch: the worker only swaps it between loop iterations.
        let table = sys::mem::detach(&self.table.value);
        let force_close_base = self.closing;
        // A pool: its snapshot outlives the batch as the table does (swapped between loop iterations only).
        let pool = match (&self.pool, &self.shared.pool) {
            (Some(l), Some(p)) => Some((sys::mem::detach(p), sys::mem::detach(&l.value))),
            _ => None,
        };
        // Every request in this read arrived together, so their durations start together: one clock read per
        // batch (pipelined ×16 reads the clock twice per batch, not twice per request), taken at the first
        // complete head.
        let mut batch_start: Option<u64> = None;
        let mut parked = false;
        loop {
            let parsed = parser::parse(&self.rbuf[pos..len]);
            let c = &self.conns[idx];
            let ctx = Ctx {
                table,
                // HTTPS responses carry HSTS (when set) right after the Date line.
                date_line: if c.tls.is_some() && !self.hsts_date.is_empty() {
                    &self.hsts_date
                } else {
                    self.date.line()
                },
                force_close: force_close_base
                    || c.requests + 1 >= self.max_requests
                    || self.now_ms.saturating_sub(c.born_ms) >= self.max_age_ms,
                spa_fallback: table.spa_fallback,
            };
            let resp: Resp = match parsed {
                Ok(Parsed::Partial) => break,
                Ok(Parsed::Complete(req, used)) => {
                    // The head is complete: the request's duration starts here (or with its batch's first).
                    let start_ns = *batch_start.get_or_insert_with(timing::now_ns);
                    let mut l = Limiter {
                        clients: &mut self.clients,
                        counters: &self.shared.stats[self.id].fair,
                        now_ms: self.now_ms,
                    };
                    let head = req.method == Method::Head;
                    let mut limited = false;
                    // The single site's client; a pool's is named by its site's trusted proxies (`pooled`).
                    let mut client = guard::client(table.access.as_deref(), c.peer, || req.forwarded_for);
                    let r = match pool {
                        // The single site: no host looked at, as before pools.
                        None => match limit::check(&mut l, table.per_client.as_ref(), 0, client, head) {
                            Some(refused) => {
                                limited = true;
                                respond::reply(&mut self.out, &ctx, &req, &refused)
                            }
                            None => match table.https_redirect {
                                Some(port) if c.tls.is_none() => {
                                    respond::https_redirect(&mut self.out, &ctx, &req, port)
                                }
                                _ => respond::respond(
                                    &mut self.out,
                                    &ctx,
                                    &req,
                                    &mut self.pathbuf,
                                    client.map(|a| a.ip()),
                                    &mut self.verified,
                                ),
                            },
                        },
                        Some((p, snap)) => {
                            let route = snap.route(p, req.host, self.id, (self.now_ms / 1000) as u32);
                            if let Route::Load(_) = route {
                                // Not for a client that already closed its side: it would be closed unanswered.
                                if !c.peer_closed && (c.parked_until == 0 || self.now_ms < c.parked_until) {
                                    // Held for the site's quick load: this request and what follows it wait in
                                    // the stash (below); what was answered before it is written now.
                                    parked = true;
                                    break;
                                }
                            }
                            let (r, l, who) = pooled(
                                &mut self.out,
                                &ctx,
                                &req,
                                (&mut self.pathbuf, &mut self.verified),
                                route,
                                (c.tls.is_none(), c.peer, &mut l),
                                self.id,
                            );
                            (limited, client) = (l, who);
                            r
                        }
                    };
                    bodiless = !req.has_body();
                    let log_from = self.batch_log.len() as u32;
                    if self.shared.cfg.access_log {
                        self.log_counter += 1;
                        if self.log_counter.is_multiple_of(self.shared.cfg.access_log_sample) {
                            let f = access::Fields {
                                client,
                                method: req.method_raw,
                                target: req.target,
                                protocol: if req.version == parser::Version::Http10 { "HTTP/1.0" } else { "HTTP/1.1" },
                                status: r.status,
                                bytes: r.body,
                                user_agent: req.user_agent.unwrap_or(b""),
                                worker: self.id,
                            };
                            access::begin(&mut self.batch_log, &f);
                            if limited {
                                access::limited(&mut self.batch_log, "per_client");
                            }
                        }
                    }
                    let log_to = self.batch_log.len() as u32;
                    self.batch.push(Done { start_ns, log_from, log_to });
                    pos += used;
                    r
                }
                Err(e) => {
                    pos = len;
                    bodiless = false;
                    let start_ns = *batch_start.get_or_insert_with(timing::now_ns);
                    self.batch.push(Done { start_ns, log_from: 0, log_to: 0 });
                    respond::parse_error(&mut self.out, &ctx, e)
                }
            };
            let c = &mut self.conns[idx];
            c.requests += 1;
            c.head_since_ms = 0;
            c.parked_until = 0;
            let s = &self.shared.stats[self.id];
            bump(&s.requests[code_index(resp.status)], 1);
            bump(&s.response_bytes, resp.bytes);
            if resp.close {
                close = true;
                break;
            }
            if pos >= len {
                break;
            }
            if self.out.buf.len() >= FLUSH_AT || self.out.segs.len() > 200 {
                match self.flush(idx) {
                    Flow::Continue => {}
                    Flow::Stop => {
                        // Output is pending: keep the unprocessed requests for when it drains.
                        let c = &mut self.conns[idx];
                        if !c.is_active() {
                            return Flow::Stop;
                        }
                        c.stash = self.rbuf[pos..len].to_vec();
                        c.paused = true;
                        return Flow::Stop;
                    }
                }
            }
        }
        if !close && pos < len {
            let c = &mut self.conns[idx];
            c.stash = self.rbuf[pos..len].to_vec();
            if c.head_since_ms == 0 {
                c.head_since_ms = self.now_ms;
            }
            if parked {
                if c.parked_until == 0 {
                    c.parked_until = self.now_ms + PARK_MS;
                }
                if !c.parked {
                    c.parked = true;
                    self.parked.push((idx as u32, c.gen));
                }
            }
        }
        self.conns[idx].then = if close { Then::Close { clean: bodiless && pos >= len } } else { Then::KeepOpen };
        match self.flush(idx) {
            Flow::Continue => {
                if close {
                    self.begin_close(idx);
                    return Flow::Stop;
                }
                Flow::Continue
            }
            Flow::Stop => Flow::Stop,
        }
    }
}

/// How long an HTTP/1.1 request to a pool site that is being loaded waits for its quick load (a walk and a stat
/// per file, no reads) before it gets 503 with `Retry-After: 1`: the first request of a cold site is then
/// answered, from disk, without waiting for the full in-memory load. Matches `Retry-After: 1`.
const PARK_MS: u64 = 1000;
/// How often a worker holding parked requests looks at the pool's snapshot (its loop's epoll timeout then).
pub(super) const PARK_LOOK_MS: i32 = 5;

impl Worker {
    /// Answers the parked requests again when the pool's snapshot changed or one's wait is over. A connection
    /// with output pending is left to resume when its output drains (it is `paused`).
    pub(super) fn retry_parked(&mut self, changed: bool) {
        let due = |w: &Worker, &(i, g): &(u32, u32)| {
            let c = &w.conns[i as usize];
            !c.is_active() || c.gen != g || w.now_ms >= c.parked_until
        };
        if !changed && !self.parked.iter().any(|p| due(self, p)) {
            return;
        }
        std::mem::swap(&mut self.parked, &mut self.parked_retry);
        let mut list = std::mem::take(&mut self.parked_retry);
        for (i, g) in list.drain(..) {
            let idx = i as usize;
            let c = &mut self.conns[idx];
            if !c.is_active() || c.gen != g || !c.parked {
                continue;
            }
            c.parked = false;
            if c.pending.is_some() {
                c.paused = true;
                continue;
            }
            self.process(idx, false);
        }
        self.parked_retry = list;
    }
}

/// A pool's request, routed by its host: the site's table answers it exactly as a single site's would (its
/// per-client limit, its rules, its HTTPS redirect), counted on the site; an unknown host gets the same plain 404
/// whatever it was, and a site without a tree, refused or past its requests per second gets 503 or 429 with
/// `Retry-After: 1`. `scratch` is the worker's path buffer and memory of checked credentials; `conn` is whether
/// the connection is plain, its peer and the worker's limiter. Returned with the response: whether the client was
/// past its share, and the client (the site's trusted proxies may name another than the peer, guard/).
fn pooled(
    out: &mut Out,
    ctx: &Ctx,
    req: &Request,
    scratch: (&mut [u8], &mut guard::Verified),
    route: Route,
    conn: (bool, Option<std::net::SocketAddr>, &mut Limiter<'_>),
    worker: usize,
) -> (Resp, bool, Option<std::net::SocketAddr>) {
    let (plain, peer, limiter) = conn;
    let (pathbuf, verified) = scratch;
    let head = req.method == Method::Head;
    let r = match route {
        Route::Site(slot, table) => {
            let ctx = Ctx { table, spa_fallback: table.spa_fallback, ..*ctx };
            let client = guard::client(table.access.as_deref(), peer, || req.forwarded_for);
            if let Some(refused) = limit::check(limiter, table.per_client.as_ref(), slot.key(), client, head) {
                let r = respond::reply(out, &ctx, req, &refused);
                slot.counters.count(worker, r.status, r.bytes);
                return (r, true, client);
            }
            let r = match table.https_redirect {
                Some(port) if plain => respond::https_redirect(out, &ctx, req, port),
                _ => respond::respond(out, &ctx, req, pathbuf, client.map(|a| a.ip()), verified),
            };
            slot.counters.count(worker, r.status, r.bytes);
            return (r, false, client);
        }
        Route::Status(None, status) => respond::reply(out, ctx, req, &Reply::plain(status, false, head)),
        Route::Load(slot) => {
            let r = respond::reply(out, ctx, req, &Reply::later(503, head));
            slot.counters.count(worker, r.status, r.bytes);
            r
        }
        Route::Status(Some(slot), status) => {
            let r = respond::reply(out, ctx, req, &Reply::later(status, head));
            slot.counters.count(worker, r.status, r.bytes);
            r
        }
    };
    (r, false, peer)
}
