//! Accepting: up to 256 connections per wake-up from the plain or HTTPS listener, the per-client limit on TLS
//! handshakes (fairshare/handshake.rs), the per-worker cap with its eviction of a connection that has nothing in
//! flight, the connection memory budget's admission (budget.rs), and the first request answered before the
//! connection ever enters the epoll set.

use rustls::ServerConnection;

use super::budget;
use super::conn::{Conn, Proto, State, Then};
use super::Worker;
use crate::counters::bump;
use crate::log;
use crate::sys;
use crate::sys::epoll;
use crate::sys::socket::{self, AcceptError};

/// How many slots one accept at the cap looks at for a connection to evict before refusing the new one: bounds
/// the work a flood of connections can cause when every slot has output in flight.
const EVICT_SCAN: usize = 64;

impl Worker {
    /// Accepts on the plain listener, or on the HTTPS one when `tls` is set.
    pub(super) fn accept(&mut self, tls: bool) {
        let listener = if tls { self.tls_listener } else { self.listener };
        for _ in 0..256 {
            let (fd, peer) = match socket::accept(listener) {
                Ok(x) => x,
                Err(AcceptError::Retry) => continue,
                Err(AcceptError::Empty) => return,
                Err(AcceptError::Other(e)) => {
                    // Out of descriptors (or similar): stop polling the listener for a moment instead of
                    // spinning on a readable listener we cannot accept from.
                    log::warn(
                        "accept failed; pausing accepts for 100ms",
                        &[("errno", log::V::U(e as u64)), ("worker", log::V::U(self.id as u64))],
                    );
                    for fd in [self.listener, self.tls_listener] {
                        self.ep().delete(fd);
                    }
                    self.accept_paused_until = self.now_ms + 100;
                    return;
                }
            };
            // A client past its share of TLS handshakes (fairshare/handshake.rs) is turned away first: before its
            // connection can make another client's be evicted, and before anything is allocated or read for it.
            // With --proxy-protocol the address here is the load balancer's: the check waits for the client's
            // (server/proxy.rs), still before the handshake.
            if tls && !self.shared.cfg.proxy_protocol && !self.handshake_allowed(peer) {
                sys::close(fd);
                continue;
            }
            if self.open >= self.max_conns && !self.evict_one() {
                // Every connection has a response in flight: the newcomer is the one that waits (its client
                // sees the connection close at once and may retry).
                // Counted before the close: a client that sees the close may read the metric at once.
                bump(&self.stats().connections_refused, 1);
                sys::close(fd);
                continue;
            }
            if !self.admit(budget::admission(tls)) {
                // The worker's connections hold its whole connection memory budget and none of them is idle.
                bump(&self.stats().connections_refused_memory, 1);
                sys::close(fd);
                continue;
            }
            let conn = match (tls, self.tls_config.as_ref().map(|l| &l.value)) {
                (false, _) => None,
                (true, Some(cfg)) => match ServerConnection::new(cfg.clone()) {
                    Ok(c) => Some(Box::new(c)),
                    Err(_) => {
                        sys::close(fd);
                        continue;
                    }
                },
                (true, None) => unreachable!("a TLS listener without a TLS configuration"),
            };
            // TCP_NODELAY comes from the listener (see `listen`): no setsockopt per connection.
            let idx = match self.free.pop() {
                Some(i) => i as usize,
                None => {
                    self.conns.push(Conn::empty());
                    self.conns.len() - 1
                }
            };
            let c = &mut self.conns[idx];
            c.fd = fd;
            c.gen = c.gen.wrapping_add(1);
            c.state = State::Open;
            c.born_ms = self.now_ms;
            c.last_ms = self.now_ms;
            c.head_since_ms = self.now_ms;
            c.requests = 0;
            c.paused = false;
            // A slot's last connection may have closed while parked: its `parked` entry is stale (gen), not this.
            (c.parked_until, c.parked) = (0, false);
            c.then = Then::KeepOpen;
            c.peer_closed = false;
            c.stash = Vec::new();
            c.pending = None;
            c.peer = peer;
            c.inflight.clear();
            c.inflight_log.clear();
            // TLS picks its protocol by ALPN when the handshake ends (io.rs); the plain port sniffs for the
            // h2c preface only with --h2c.
            c.proto = if !tls && self.shared.cfg.h2c { Proto::Sniff } else { Proto::Http1 };
            c.tls = conn;
            c.handshake_counted = false;
            c.proxy_wait = self.shared.cfg.proxy_protocol;
            let gen = c.gen;
            self.open += 1;
            self.trim.opened(self.open);
            let s = self.stats();
            bump(&s.connections_total, 1);
            bump(&s.connections_open, 1);
            // The request usually arrives with the connection (the client sends it right after the handshake,
            // before we get to accept): answer it now, before any epoll_ctl. A connection that asked to close is
            // then done in accept4 + read + write + close, never entering the epoll set; one that stays open
            // joins it below, and edge-triggered registration reports whatever became ready meanwhile.
            self.process(idx, true);
            let c = &self.conns[idx];
            if !c.is_active() || c.gen != gen {
                continue;
            }
            let data = (gen as u64) << 32 | idx as u64;
            self.ep().add(fd, epoll::IN | epoll::OUT | epoll::RDHUP | epoll::ET, data);
        }
    }

    /// Whether a TLS connection from `peer` may begin its handshake under the site's `limits.perClientHandshakes`
    /// (fairshare/handshake.rs; counted when not).
    pub(super) fn handshake_allowed(&mut self, peer: Option<std::net::SocketAddr>) -> bool {
        let rate = self.table.value.per_client_handshakes.as_ref();
        let fair = &self.shared.stats[self.id].fair;
        crate::fairshare::handshake::admit(&mut self.clients, fair, rate, peer, self.now_ms)
    }

    /// At `--max-connections-per-worker`: closes one connection that has no response in flight (waiting for a
    /// request head, mid-handshake, idle between requests, or lingering after its last response), looking at no
    /// more than EVICT_SCAN slots. Those are what an attacker's half-open connections are, and what costs a
    /// legitimate client least: a keep-alive client reconnects. False when none was found.
    pub(super) fn evict_one(&mut self) -> bool {
        let n = self.conns.len();
        for k in 0..EVICT_SCAN.min(n) {
            let i = (self.evict_from + k) % n;
            let c = &self.conns[i];
            if c.is_active() && c.pending.is_none() {
                self.evict_from = (i + 1) % n;
                // Counted before the close: a client that sees the close may read the metric at once.
                bump(&self.stats().connections_evicted, 1);
                self.close(i);
                return true;
            }
        }
        self.evict_from = (self.evict_from + EVICT_SCAN) % n.max(1);
        false
    }
}
