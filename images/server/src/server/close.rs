//! Ending connections: closing a slot, the graceful end after the last response (close at once when no client
//! bytes can follow, else half-close and linger until the client's EOF), and the timeout sweep (408 for slow
//! heads, idle keep-alive, stuck writers, lingering, drain).

use std::sync::atomic::Ordering;

use super::conn::{Done, Proto, State, Then};
use super::{Flow, Worker, DRAIN_IDLE_MS, LINGER_MS};
use crate::counters::bump;
use crate::http1::respond::{self, Ctx};
use crate::site::content::Table;
use crate::state::code_index;
use crate::sys::{self, io, socket};
use crate::timing;
use crate::tls;

impl Worker {
    pub(super) fn close(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if !c.is_active() {
            return;
        }
        // Closing also removes it from the epoll set.
        sys::close(c.fd);
        c.state = State::Free;
        self.pre_unlink(idx);
        self.uncharge(idx);
        let c = &mut self.conns[idx];
        c.fd = -1;
        c.pending = None;
        c.tls = None;
        c.proto = Proto::Http1;
        c.stash = Vec::new();
        // Responses never fully sent are not observed: the histogram counts delivered responses.
        c.inflight.clear();
        c.inflight_log.clear();
        self.free.push(idx as u32);
        self.open -= 1;
        let s = self.stats();
        s.connections_open.store(s.connections_open.load(Ordering::Relaxed).saturating_sub(1), Ordering::Relaxed);
    }

    /// Ends a connection whose output is all written. When no client bytes can still arrive (the closing
    /// request was whole and bodiless with nothing after it, or the client already sent its FIN) it closes at
    /// once: the kernel sends the queued response, then FIN (what nginx and h2o do; it saves a shutdown, a
    /// wake-up and a read per connection). Otherwise it half-closes and reads until the client's EOF, so that
    /// the last response is not destroyed by a reset when unread request bytes (a body, pipelined requests
    /// after an error) remain.
    pub(super) fn begin_close(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if let Some(t) = c.tls.as_mut() {
            // close_notify, if the socket takes it now; the TCP FIN follows either way.
            t.send_close_notify();
            let _ = tls::stream::drain(t, c.fd);
        }
        // Over TLS a client may send records of its own (close_notify, a ticket acknowledgement) that are not
        // requests, so a TLS connection always lingers.
        if (c.then == (Then::Close { clean: true }) && c.tls.is_none()) || c.peer_closed {
            self.close(idx);
            return;
        }
        socket::shutdown_write(c.fd);
        c.state = State::Lingering;
        c.stash = Vec::new();
        c.last_ms = self.now_ms;
        self.drain_linger(idx);
    }

    pub(super) fn drain_linger(&mut self, idx: usize) {
        let fd = self.conns[idx].fd;
        loop {
            match io::read(fd, &mut self.rbuf) {
                Ok(n) if n > 0 => continue,
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => return,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                _ => {
                    self.close(idx);
                    return;
                }
            }
        }
    }

    /// A client that half-closed gets its complete requests answered, then the connection ends (an
    /// incomplete head left behind can never be completed).
    pub(super) fn close_if_peer_closed(&mut self, idx: usize) {
        let c = &self.conns[idx];
        if c.state == State::Open && c.peer_closed && c.pending.is_none() {
            self.begin_close(idx);
        }
    }

    /// Timeouts: 408 for slow request heads, idle keep-alive close, stuck writers, lingering closes, drain.
    pub(super) fn sweep(&mut self) {
        // A content load started since this output was queued, and it still holds an older table than the one
        // serving then: cut it (Shared::retire_below), or every slow reader pins a whole generation.
        let retire_below = self.shared.retire_below.load(Ordering::Acquire);
        for idx in 0..self.conns.len() {
            let c = &self.conns[idx];
            if !c.is_active() {
                continue;
            }
            let idle = self.now_ms.saturating_sub(c.last_ms);
            if c.state == State::Lingering {
                if idle >= LINGER_MS {
                    self.close(idx);
                }
            } else if c.pending.is_some() {
                if c.pending_gen < retire_below {
                    // Counted before the close: a client that sees the close may read the metric at once.
                    bump(&self.stats().slow_readers_closed, 1);
                    self.close(idx);
                } else if idle >= self.keepalive_ms.max(10_000) {
                    self.close(idx);
                }
            } else if let Proto::Http2(_) = c.proto {
                self.sweep_h2(idx, idle);
                self.settle(idx);
            } else if c.head_since_ms != 0 {
                if self.now_ms.saturating_sub(c.head_since_ms) >= self.header_timeout_ms {
                    self.request_timeout(idx);
                }
            } else if idle >= self.keepalive_ms || (self.closing && idle >= DRAIN_IDLE_MS) {
                self.close(idx);
            }
        }
    }

    pub(super) fn request_timeout(&mut self, idx: usize) {
        let c = &self.conns[idx];
        if c.proxy_wait || c.tls.as_ref().is_some_and(|t| t.is_handshaking()) {
            // No TLS session to say 408 over, or no PROXY header yet (the load balancer, not a client, would
            // read it): a handshake or header that takes too long just ends.
            self.close(idx);
            return;
        }
        self.out.clear();
        let ctx = Ctx { table: &Table::default(), date_line: self.date.line(), force_close: true, spa_fallback: false };
        let r = respond::timeout(&mut self.out, &ctx);
        // No head was completed: the 408 is observed from the moment it is queued.
        self.batch.push(Done { start_ns: timing::now_ns(), log_from: 0, log_to: 0 });
        let s = &self.shared.stats[self.id];
        bump(&s.requests[code_index(408)], 1);
        bump(&s.response_bytes, r.bytes);
        self.conns[idx].stash = Vec::new();
        self.conns[idx].head_since_ms = 0;
        // Nothing was answered since the last batch that kept the connection open, so this close is not clean.
        self.conns[idx].then = Then::Close { clean: false };
        if let Flow::Continue = self.flush(idx) {
            self.begin_close(idx);
        }
        self.settle(idx);
    }
}
