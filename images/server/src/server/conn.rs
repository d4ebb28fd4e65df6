//! A connection slot: its state, what it holds between events (a partial head, unsent output, the TLS session),
//! and the worker's list of connections still waiting for their request head (`PreHead`), threaded through the
//! slots (slots.rs) so joining, leaving and finding the oldest are O(1) with no allocation.

use std::os::fd::RawFd;

use rustls::ServerConnection;

use super::slots::{Links, SlotList};
use super::Worker;
use crate::counters::bump;
use crate::http1::out::Pending;
use crate::http2;
use crate::http2::respond::BodyRef;

/// Where a connection slot is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Unused: on the worker's free list.
    Free,
    /// Reading requests and answering them; output may be pending (`Conn::pending`), and `Conn::then` says what
    /// happens once it is sent.
    Open,
    /// Write side shut down after the last response; reading and discarding until the client's EOF, so that the
    /// response is not destroyed by a reset when unread request bytes remain.
    Lingering,
}

/// The protocol a connection speaks, picked once per connection: on TLS by ALPN when the handshake ends, on
/// the plain port with `--h2c` by its first bytes (the client preface, or anything else for HTTP/1.1).
pub(super) enum Proto {
    Http1,
    /// `--h2c` on the plain port: fewer than 24 bytes came so far, all of them a prefix of the preface.
    Sniff,
    /// The HTTP/2 engine and what the worker keeps beside it (server/h2.rs).
    Http2(Box<H2>),
}

/// An HTTP/2 connection's own state: the engine and which transport's metrics it counts in. Defined with the
/// connection that holds it; server/h2.rs drives it.
pub(super) struct H2 {
    pub(super) conn: http2::Conn<BodyRef>,
    /// 0: TLS, 1: cleartext (`WorkerStats::h2_connections`).
    pub(super) transport: usize,
}

/// What happens to a connection once the output of its last batch is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Then {
    /// Keep reading requests.
    KeepOpen,
    /// End the connection. `clean`: the closing request was whole and bodiless and nothing followed it in the
    /// buffer, so no client bytes can be in flight and the connection closes at once instead of lingering for the
    /// client's FIN.
    Close { clean: bool },
}

pub(super) struct Conn {
    pub(super) fd: RawFd,
    pub(super) gen: u32,
    pub(super) state: State,
    pub(super) proto: Proto,
    pub(super) then: Then,
    pub(super) born_ms: u64,
    /// Last time bytes arrived or left.
    pub(super) last_ms: u64,
    /// When the request head now being received started (0: none in progress).
    pub(super) head_since_ms: u64,
    pub(super) requests: u64,
    /// Bytes of an incomplete request head (or unprocessed pipelined requests while output is pending).
    pub(super) stash: Vec<u8>,
    pub(super) pending: Option<Box<Pending>>,
    /// The table generation `pending` holds (its bodies point into that table).
    pub(super) pending_gen: u64,
    /// Input is waiting for pending output to drain.
    pub(super) paused: bool,
    /// Its request waits for a pool site's first load (h1.rs): until when (0: not waiting), and whether it is
    /// on the worker's `parked` list.
    pub(super) parked_until: u64,
    pub(super) parked: bool,
    /// The client shut down its sending side (EPOLLRDHUP): answer what was received, then close.
    pub(super) peer_closed: bool,
    /// The client's address, for the access log (read at accept: no syscall per request).
    pub(super) peer: Option<std::net::SocketAddr>,
    /// Responses in `pending`, not yet observed, and their unfinished access-log lines: the worker's batch
    /// vectors swapped in when a write blocks. The slot keeps their capacity across connections.
    pub(super) inflight: Vec<Done>,
    pub(super) inflight_log: Vec<u8>,
    /// Accepted on the HTTPS listener: the rustls state (boxed: a few KB, allocated once per connection).
    pub(super) tls: Option<Box<ServerConnection>>,
    /// The handshake's outcome was counted (hyperstatic_tls_handshakes_total).
    pub(super) handshake_counted: bool,
    /// `--proxy-protocol`: its PROXY v2 header has not been read yet (server/proxy.rs); nothing else is read
    /// from it until it has.
    pub(super) proxy_wait: bool,
    /// Its place in the worker's pre-head list (`PreHead`).
    pub(super) pre: Links,
    /// Its place in the worker's list of idle connections (budget.rs), and its request count when it joined (a
    /// connection that answered a request since goes back to the newest end).
    pub(super) idle: Links,
    pub(super) idle_mark: u64,
    /// Bytes of the worker's connection memory budget this connection is charged (budget.rs).
    pub(super) charge: u64,
}

/// A queued response waiting for its write to complete: when its head was parsed, and its access-log line
/// (`log_from..log_to` in the batch's log buffer; empty when not sampled).
pub(super) struct Done {
    pub(super) start_ns: u64,
    pub(super) log_from: u32,
    pub(super) log_to: u32,
}

impl Conn {
    pub(super) fn empty() -> Conn {
        Conn {
            fd: -1,
            gen: 0,
            state: State::Free,
            proto: Proto::Http1,
            then: Then::KeepOpen,
            born_ms: 0,
            last_ms: 0,
            head_since_ms: 0,
            requests: 0,
            stash: Vec::new(),
            pending: None,
            pending_gen: 0,
            paused: false,
            parked_until: 0,
            parked: false,
            peer_closed: false,
            peer: None,
            inflight: Vec::new(),
            inflight_log: Vec::new(),
            tls: None,
            handshake_counted: false,
            proxy_wait: false,
            pre: Links::NONE,
            idle: Links::NONE,
            idle_mark: 0,
            charge: 0,
        }
    }

    /// In use (open or lingering).
    #[inline]
    pub(super) fn is_active(&self) -> bool {
        self.state != State::Free
    }

    /// Waiting for a request head with nothing in flight: a TLS handshake in progress or a partial head in
    /// `stash`, the memory `PreHead` bounds. An idle keep-alive connection (no head begun) holds no buffer and is
    /// not one; neither is one with output pending (its input waits) or lingering.
    pub(super) fn holds_pre_head(&self) -> bool {
        self.state == State::Open && self.head_since_ms != 0 && self.pending.is_none()
    }
}

/// The worker's connections that wait for their request head (`Conn::holds_pre_head`), oldest first: a list
/// threaded through the slots (no allocation), so joining, leaving and finding the oldest are O(1).
pub(super) struct PreHead {
    pub(super) list: SlotList,
    /// `Shared::pre_head_per_worker`: past it the oldest is closed.
    pub(super) max: usize,
}

pub(super) fn pre_links(c: &mut Conn) -> &mut Links {
    &mut c.pre
}

impl Worker {
    /// After anything that may have begun or ended a connection's request head (a read, a response, a
    /// timeout): it joins the pre-head list as its newest member, or leaves it. Joining a full list first closes
    /// the oldest member: the memory connections hold before their head completes stays within
    /// `Shared::pre_head_per_worker` × `memory::PRE_HEAD_COST`, whatever the flood (a partial head grows no further
    /// than that cost, so one that grows needs no new check). The newest is kept: a real client's handshake or
    /// head is usually done long before a flood's connections, opened earlier and left hanging, would be.
    pub(super) fn track_pre_head(&mut self, idx: usize) {
        let c = &self.conns[idx];
        let want = c.holds_pre_head();
        if want == c.pre.on {
            return;
        }
        if !want {
            self.pre_unlink(idx);
            return;
        }
        if self.pre.list.count >= self.pre.max {
            // Never `idx` itself: it is not in the list yet.
            if let Some(oldest) = self.pre.list.oldest() {
                // Counted before the close: a client that sees the close may read the metric at once.
                bump(&self.stats().pre_head_evicted, 1);
                self.close(oldest);
            }
        }
        self.pre.list.push_newest(&mut self.conns, idx, pre_links);
    }

    pub(super) fn pre_unlink(&mut self, idx: usize) {
        self.pre.list.unlink(&mut self.conns, idx, pre_links);
    }
}
