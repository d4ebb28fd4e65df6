//! Connection memory: what each connection is charged, and what a worker does when its connections would hold
//! more than its budget (`Shared::conn_budget_per_worker`, site/conn_budget.rs): it closes idle connections,
//! oldest idle first, and refuses a new connection only when none is idle.
//!
//! ## What a connection is charged
//!
//! What it holds, from the fields that hold it (`charge`), with the parts the server cannot see measured:
//! - `CONN_BASE`: the socket in the kernel (socket, inode, TCP state, epoll item: charged to the pod's cgroup),
//!   the slot and allocator slack. A plain idle HTTP/1.1 connection is this and nothing more.
//! - Over TLS, rustls's state: `TLS_HANDSHAKE` while the handshake runs (as `memory::PRE_HEAD_COST`), then
//!   `TLS_SESSION` for an established session (its boxed `ServerConnection`, keys, the 4 KiB read buffer it
//!   keeps once a read was made), plus `TLS_SENDING` while it holds records the socket has not taken (rustls
//!   queues up to its 64 KiB send limit, tls/stream.rs).
//! - HTTP/2: the boxed engine and what it holds on the heap (`http2::Conn::heap_bytes`): the HPACK dynamic
//!   table as the client filled it (up to twice `header_table_size` of buffer plus its entries), the stream
//!   table, queued frames, and the reusable buffers while it has them on loan.
//! - Bytes of a partial head or of pipelined requests waiting (`stash`), unsent output (`Pending`: the copied
//!   headers and small bodies, the segment list) and the vectors of its unobserved responses.
//!
//! The constants were measured (`bench/hsbench/connmem.py`, docs/bench/connection-memory-2026-12-02.md): the
//! cgroup's growth per idle connection, kernel included, rounded up. The charge of each kind against the growth
//! it causes: plain HTTP/1.1 2,048 B for 1,670 B; HTTPS/1.1 10,240 B for 9,404 B; HTTP/2 over TLS with an empty
//! HPACK table about 10.7 KB for 9,893 B, with a full one about 14.7 KB for 14,023 B.
//!
//! ## When
//!
//! `settle` runs after everything that can change what a connection holds: a read answered (the handshake
//! done, HTTP/2 started, the HPACK table grown, output queued), output drained, a timeout, an HTTP/2 sweep.
//! It recomputes the charge from a few fields, moves the connection in or out of the idle list (O(1), threaded
//! through the slots) and stores the worker's total in its gauge with one relaxed store: no allocation, no lock.
//!
//! ## Who goes
//!
//! Idle connections are the ones a client can reopen at the cost of a handshake and nothing else: an HTTP/1.1
//! keep-alive connection between requests, an HTTP/2 connection with no open stream and nothing queued; never
//! one with a response in flight, a handshake or a head in progress (the pre-head list bounds those), or one
//! lingering after its last response (it ends within `LINGER_MS`). They are ordered by when they last became
//! idle after a request, so HTTP/2 PINGs, which keep a connection open, do not keep it from being first to go.
//! A new connection that would take the total past the budget closes the oldest idle ones until it fits, or is
//! closed right after accept when none is left (`hyperstatic_connections_refused_total{reason="memory"}`). A
//! connection that grows past the budget (its HPACK table, its output) closes the oldest idle ones but itself;
//! with none left the total may pass the budget by what busy connections hold, each within its own protocol
//! limits, and only until they finish.

use std::mem::size_of;
use std::sync::atomic::Ordering;

use super::conn::{Conn, Done, Proto, State};
use super::slots::{Links, SlotList};
use super::Worker;
use crate::counters::bump;
use crate::http1::out::{Pending, Seg};

/// A connection's socket in the kernel, its slot and allocator slack: an idle plain HTTP/1.1 connection grew the
/// cgroup by 1,670 B (kernel ~1.4 KB, heap 272 B).
pub(super) const CONN_BASE: u64 = 2 * 1024;
/// An established rustls session: an idle HTTPS/1.1 connection grew the cgroup by 9,404 B, 7,734 B above a plain
/// one (its heap by 7,889 B: the boxed `ServerConnection`, keys, the 4 KiB read buffer).
pub(super) const TLS_SESSION: u64 = 8 * 1024;
/// A TLS handshake in progress (issue 24 measured about 26 KB).
pub(super) const TLS_HANDSHAKE: u64 = crate::site::memory::PRE_HEAD_COST;
/// Records rustls holds for a socket that did not take them: at most its 64 KiB send limit.
pub(super) const TLS_SENDING: u64 = 64 * 1024;

/// The worker's connection budget, what its connections are charged now, and its idle connections oldest first.
pub(super) struct ConnMemory {
    /// u64::MAX: no budget (no memory limit).
    pub(super) budget: u64,
    pub(super) charged: u64,
    pub(super) idle: SlotList,
}

impl ConnMemory {
    pub(super) fn new(budget: Option<u64>) -> ConnMemory {
        ConnMemory { budget: budget.unwrap_or(u64::MAX), charged: 0, idle: SlotList::EMPTY }
    }
}

fn idle_links(c: &mut Conn) -> &mut Links {
    &mut c.idle
}

/// What an accepted connection is charged before its first read.
pub(super) fn admission(tls: bool) -> u64 {
    CONN_BASE + if tls { TLS_HANDSHAKE } else { 0 }
}

/// The bytes connection `c` holds (see the module documentation). Reads fields only.
pub(super) fn charge(c: &Conn) -> u64 {
    if !c.is_active() {
        return 0;
    }
    let mut n = CONN_BASE
        + c.stash.capacity() as u64
        + (c.inflight.capacity() * size_of::<Done>() + c.inflight_log.capacity()) as u64;
    if let Some(t) = &c.tls {
        n += if t.is_handshaking() { TLS_HANDSHAKE } else { TLS_SESSION };
        if t.wants_write() {
            n += TLS_SENDING;
        }
    }
    if let Proto::Http2(h) = &c.proto {
        n += (size_of::<super::conn::H2>() + h.conn.heap_bytes()) as u64;
    }
    if let Some(p) = &c.pending {
        n += (size_of::<Pending>() + p.bytes.capacity() + p.segs.capacity() * size_of::<Seg>()) as u64;
    }
    n
}

/// Whether closing `c` costs its client nothing but a reconnection (see the module documentation).
pub(super) fn is_idle(c: &Conn) -> bool {
    let quiet = c.state == State::Open && c.pending.is_none() && c.head_since_ms == 0 && c.stash.is_empty();
    let tls_quiet = c.tls.as_ref().is_none_or(|t| !t.is_handshaking() && !t.wants_write());
    let proto_quiet = match &c.proto {
        Proto::Http1 => true,
        Proto::Http2(h) => h.conn.open_streams() == 0 && !h.conn.wants_write(),
        Proto::Sniff => false,
    };
    quiet && tls_quiet && proto_quiet
}

impl Worker {
    /// At accept, before the slot is taken: whether a connection charged `cost` fits, after closing idle
    /// connections (oldest idle first) as needed. False: none is left to close and it does not fit.
    pub(super) fn admit(&mut self, cost: u64) -> bool {
        while self.mem.charged.saturating_add(cost) > self.mem.budget {
            if !self.evict_idle(None) {
                return false;
            }
        }
        true
    }

    /// After anything that may have changed what connection `idx` holds: the pre-head list, its charge, its
    /// place among the idle, and the budget.
    pub(super) fn settle(&mut self, idx: usize) {
        self.track_pre_head(idx);
        let c = &self.conns[idx];
        if !c.is_active() {
            return;
        }
        let now = charge(c);
        let (idle, moved) = (is_idle(c), c.requests != c.idle_mark);
        if now != c.charge {
            self.mem.charged = self.mem.charged - c.charge + now;
            self.conns[idx].charge = now;
            self.publish();
        }
        let c = &self.conns[idx];
        if c.idle.on && (!idle || moved) {
            self.mem.idle.unlink(&mut self.conns, idx, idle_links);
        }
        if idle && !self.conns[idx].idle.on {
            self.mem.idle.push_newest(&mut self.conns, idx, idle_links);
            self.conns[idx].idle_mark = self.conns[idx].requests;
        }
        while self.mem.charged > self.mem.budget && self.evict_idle(Some(idx)) {}
    }

    /// From `close`: the slot holds nothing any more.
    pub(super) fn uncharge(&mut self, idx: usize) {
        self.mem.idle.unlink(&mut self.conns, idx, idle_links);
        let c = &mut self.conns[idx];
        if c.charge != 0 {
            self.mem.charged -= c.charge;
            c.charge = 0;
            self.publish();
        }
    }

    /// Closes the oldest idle connection unless it is `keep`; false when there is none to close.
    fn evict_idle(&mut self, keep: Option<usize>) -> bool {
        match self.mem.idle.oldest() {
            Some(i) if Some(i) != keep => {
                // Counted before the close: a client that sees the close may read the metric at once.
                bump(&self.stats().connections_evicted_memory, 1);
                self.close(i);
                true
            }
            _ => false,
        }
    }

    fn publish(&self) {
        self.stats().connection_memory.store(self.mem.charged, Ordering::Relaxed);
    }
}
