//! HTTP/3 on the worker (`--http3`): one UDP socket on the TLS listener's port (sys/udp.rs), one quinn-proto
//! `Endpoint` (QUIC as a state machine: datagrams in, datagrams and timers out) and its connections, driven by
//! the same epoll loop as the TCP connections. This file is the transport glue: receive batches to the endpoint,
//! new connections (accepted, sent a Retry under a handshake flood, or refused past the cap), connection events
//! and timers, transmits gathered into one `sendmmsg` per turn, drain. What happens on a connection's streams
//! (requests answered by the core, the control stream) is h3_conn.rs.
//!
//! Every worker has its own socket, endpoint and connections: the sockets are one SO_REUSEPORT group, a
//! connection's IDs name the worker that accepted it (quic/cid.rs), and a classic BPF program on the group steers
//! each short-header packet to the socket its ID names (sys/steer.rs), so a client whose address changes (NAT
//! rebinding, migration) still reaches its worker; handshakes go by the kernel's 4-tuple hash. The workers share
//! only the keys that must agree (quic/keys.rs). Where the program cannot be attached, the first worker alone
//! serves HTTP/3 (server/listen.rs: `udp_all`).
//!
//! Memory is bounded per connection by quinn-proto's windows (`transport`: what a client can make us buffer,
//! what we keep unacknowledged) and in count by the worker's connection memory budget divided by that bound
//! (`max_conns`); handshakes in progress past `RETRY_AT` must prove their address with a Retry first.
//!
//! Two checks of our own sit between the socket and quinn-proto (quic/): a client's datagram is cut before a
//! packet only servers send, which quinn-proto 0.11 would close a handshaking connection on; and until the
//! client's address is validated, a connection is asked for a datagram only when a whole one fits in three
//! times what the address sent (quinn-proto's own limit lets up to a datagram more through). Client addresses are
//! handed to quinn-proto in their plain form (an IPv4 client of the dual-stack socket as IPv4, not `::ffff:`-mapped:
//! quic/addr.rs), so that a new port on the same address is the NAT rebinding it is, not a move to another host.

use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{
    ConnectionHandle, DatagramEvent, EcnCodepoint, Endpoint, EndpointConfig, Incoming, Transmit, VarInt,
};

use super::h3_conn::{H3Conn, Scratch, MAX_STREAMS};
use super::Worker;
use crate::counters::bump;
use crate::log::{self, V};
use crate::quic::amplification::Budget;
use crate::quic::keys::Keys;
use crate::quic::{addr, cid, datagram};
use crate::sys::udp::{self, Outgoing, Received, MAX_BATCH};

/// A receive slot: more than the largest datagram we allow peers to send (quinn-proto's default
/// max_udp_payload_size, 1,472 here: 1,500-byte Ethernet minus IP and UDP headers).
const SLOT: usize = 2048;
/// Receive batches per readable event before the loop serves the rest of the worker.
const RX_ROUNDS: usize = 8;
/// Datagrams quinn-proto may put in one transmit: one GSO message, which the kernel takes up to 64 segments and
/// 64 KiB in all (`gso_segments`). The kernel's cost of a message (route, skb allocation, netfilter, the sendmmsg
/// slot) is paid once per message, not per datagram, so the larger the message the less of it per byte
/// (docs/bench/h3-cost-2026-12-03.md).
const GSO_MAX_SEGMENTS: usize = 64;
/// What one GSO message may carry in all (IPv4's UDP payload limit, with room for the headers).
const GSO_MAX_BYTES: usize = 65_000;
/// Handshakes in progress beyond which a client must prove its address (a Retry round trip) before we spend a
/// TLS handshake on it.
const RETRY_AT: usize = 64;
/// What one stream may have buffered unread (request heads are at most 16 KiB; bodies are dropped as read).
const STREAM_WINDOW: u32 = 64 * 1024;
/// What a connection may have buffered unread in all.
const CONN_WINDOW: u32 = 256 * 1024;
/// Bytes a connection keeps unacknowledged (memory bodies are references to the table, so most of it is).
const SEND_WINDOW: u64 = 1 << 20;
/// The memory one connection is charged against the worker's budget: its receive window, the disk-body and
/// head buffers it may hold, quinn-proto's state (keys, stream maps, sent-packet records).
const CONN_CHARGE: u64 = CONN_WINDOW as u64 + 192 * 1024;
/// How long a draining worker waits for HTTP/3 requests in flight before closing their connections.
const DRAIN_MS: u64 = 1000;
/// The length of our connection IDs (quic/cid.rs): 64 random bits, so a client using one has proven its address
/// (RFC 9000 §8.1; quic/amplification.rs).
const CID_LEN: usize = cid::LEN;

/// A worker's HTTP/3 state: its UDP socket of the group, its endpoint and its connections.
pub(super) struct Quic {
    fd: RawFd,
    pub(super) endpoint: Endpoint,
    /// The TLS configuration the QUIC one was made from: a rotated certificate makes a new one.
    tls_from: Arc<rustls::ServerConfig>,
    transport: Arc<quinn_proto::TransportConfig>,
    keys: Arc<Keys>,
    /// Connections by handle (quinn-proto's handles are slab indices: small and reused).
    conns: Vec<Option<Box<H3Conn>>>,
    live: usize,
    pub(super) handshaking: usize,
    max_conns: usize,
    rx: BytesMut,
    meta: [Received; MAX_BATCH],
    /// Transmits of this turn, one buffer each, sent together by `flush`.
    tx: Vec<Vec<u8>>,
    /// Each transmit's destination, GSO segment size and ECN bits (0: none).
    tx_meta: Vec<(SocketAddr, Option<u16>, u8)>,
    ntx: usize,
    /// An endpoint's own answers (stateless resets, Retry, version negotiation, refusals) are written here.
    scratch: Vec<u8>,
    gso: bool,
    /// Datagrams carry the ECN bits quinn-proto asks for (sys/udp.rs); off once the kernel refuses them.
    ecn: bool,
    /// The socket is IPv6 (dual-stack): IPv4 clients are sent to as IPv4-mapped addresses (quic/addr.rs).
    v6: bool,
    /// The buffers requests are answered with (h3_conn.rs), and the Date line their Date block was made from.
    s: Scratch,
    date_of: Vec<u8>,
    /// The connections a receive batch touched (reused).
    touched: Vec<usize>,
    /// The earliest timer among the connections.
    wake: Option<Instant>,
    /// When draining began (GOAWAY sent everywhere).
    drain_since: Option<Instant>,
}

/// The QUIC server configuration from the serving TLS one: the same certificate, ALPN `h3` only (TLS 1.3 is
/// QUIC's own: rustls negotiates nothing older on a QUIC connection). The token key is the process's (`Keys`): a
/// Retry or NEW_TOKEN token from one worker is valid at every other.
///
/// Without 0-RTT (`keys` hold no session cache: `--http3-early-data` is off): the serving configuration's ticketer
/// and session cache. With it, 0-RTT is accepted from a client resuming a session of this process, and sessions
/// are kept in the process (`Keys`' cache) instead of encrypted into tickets: rustls accepts early data only from
/// such a session, because a stored session is taken out when it is resumed, so a ticket (and the early data sent
/// with it) is good once. A replayed copy of the first flight, to this process or a replica, resumes nothing. A
/// request sent early can still arrive twice (a client whose early attempt went unanswered sends it again over
/// 1-RTT), which is why a request arriving in early data is served only for GET and HEAD (server/h3_conn.rs:
/// `425 Too Early` otherwise).
fn server_config(
    tls: &Arc<rustls::ServerConfig>,
    transport: &Arc<quinn_proto::TransportConfig>,
    keys: &Keys,
) -> Option<Arc<quinn_proto::ServerConfig>> {
    let mut c = (**tls).clone();
    c.alpn_protocols = vec![b"h3".to_vec()];
    c.max_early_data_size = 0;
    if let Some(sessions) = &keys.sessions {
        // QUIC allows no other size (RFC 9001 §4.6.1).
        c.max_early_data_size = u32::MAX;
        c.ticketer = Arc::new(InProcessSessions);
        c.session_storage = sessions.clone();
        // One ticket per connection: each is good once, and a client keeps one per origin.
        c.send_tls13_tickets = 1;
    }
    let crypto = QuicServerConfig::try_from(c).ok()?;
    let mut s = quinn_proto::ServerConfig::new(Arc::new(crypto), keys.token.clone());
    s.transport_config(transport.clone());
    // Initial packets waiting for accept/retry/refuse: we decide each at once, so little ever waits.
    s.max_incoming(1024).incoming_buffer_size(16 * 1024).incoming_buffer_size_total(1 << 20);
    Some(Arc::new(s))
}

/// A ticketer that makes no tickets: rustls then stores each session in `session_storage` and hands out its key.
#[derive(Debug)]
struct InProcessSessions;

impl rustls::server::ProducesTickets for InProcessSessions {
    fn enabled(&self) -> bool {
        false
    }
    fn lifetime(&self) -> u32 {
        0
    }
    fn encrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn decrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

fn transport(idle: Duration, gso: bool, ack_every: u32) -> quinn_proto::TransportConfig {
    let mut t = quinn_proto::TransportConfig::default();
    if ack_every >= 2 {
        t.ack_frequency_config(Some(ack_frequency(ack_every)));
    }
    t.max_concurrent_bidi_streams(VarInt::from_u32(MAX_STREAMS))
        // The client's control stream and QPACK streams, and room for a few it may open and we ignore.
        .max_concurrent_uni_streams(VarInt::from_u32(8))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .receive_window(VarInt::from_u32(CONN_WINDOW))
        .send_window(SEND_WINDOW)
        .max_idle_timeout(quinn_proto::IdleTimeout::try_from(idle).ok())
        .datagram_receive_buffer_size(None)
        .enable_segmentation_offload(gso)
        // Responses of one priority go one after another, in the order they were written, rather than a packet
        // of each in turn: RFC 9218's default for a response is not incremental (a stylesheet or script is of use
        // only whole), the priority a request asks for orders them (h3_conn.rs), and fewer, longer runs of one
        // stream per packet cost the server less (docs/bench/h3-streams-2026-12-05.md: about 1.13× requests per
        // CPU-second on 8 KiB responses, 14 interleaved rounds).
        .send_fairness(false);
    t
}

/// What `--http3-ack-every N` asks of a client whose QUIC supports the ACK frequency extension (it advertised
/// `min_ack_delay`; quinn-proto sends nothing to the others): an ACK after N ack-eliciting packets instead of every
/// second (RFC 9000 §13.2.2). Each ACK costs the server its whole processing (docs/bench/h3-cost-2026-12-03.md: the
/// sent-packet map, loss detection, congestion control: 11–14 % of its CPU), and a response of 8 KiB is six
/// packets. What keeps loss detection as it was:
/// - the reordering threshold stays quinn-proto's 2 (its packet threshold, 3, minus one): a client that sees a gap
///   acknowledges at once, so a lost packet is declared lost as soon as without the extension;
/// - the delay is the client's own `max_ack_delay` (25 ms unless it says otherwise, capped by quinn-proto at the
///   larger of the RTT and 25 ms) and counts in our probe timeout, so a quiet tail is not mistaken for loss, and
///   a probe asks for an IMMEDIATE_ACK;
/// - congestion control counts bytes acknowledged, not ACKs, so the window grows as before.
///
/// What it costs: fewer than N packets in flight (a response's tail with nothing after it, or a congestion window
/// under N packets after a loss) are acknowledged only when the client's delay runs out. quinn-proto 0.11 does not
/// lower the threshold with the window as the draft suggests, hence the cap on N and the default, off
/// (docs/bench/h3-ack-2026-12-03.md: with quinn's client, 8 KiB transfers through a 3 %-loss relay took longer).
fn ack_frequency(every: u32) -> quinn_proto::AckFrequencyConfig {
    let mut a = quinn_proto::AckFrequencyConfig::default();
    a.ack_eliciting_threshold(VarInt::from_u32(every - 1));
    a
}

impl Worker {
    /// Makes this worker serve HTTP/3 on the UDP socket `fd` (its own of the group on the TLS listener's address,
    /// at the worker's index in it: sys/steer.rs), with the process's shared `keys`.
    pub fn with_http3(mut self, fd: RawFd, keys: Arc<Keys>) -> Worker {
        let Some(tls) = self.tls_config.as_ref().map(|l| l.value.clone()) else {
            log::error("http3 needs the TLS listener", &[]);
            return self;
        };
        let gso = udp::gso_supported(fd);
        let idle = self.shared.cfg.keepalive_timeout.max(Duration::from_secs(1));
        let transport = Arc::new(transport(idle, gso, self.shared.cfg.http3_ack_every));
        let Some(config) = server_config(&tls, &transport, &keys) else {
            log::error("http3: the TLS configuration has no QUIC initial cipher suite", &[]);
            return self;
        };
        let mut endpoint_config = EndpointConfig::new(keys.reset.clone());
        let (worker, cid_key) = (self.id as u8, keys.cid.clone());
        endpoint_config.cid_generator(move || Box::new(cid::Ids::new(worker, cid_key.clone())));
        let endpoint = Endpoint::new(Arc::new(endpoint_config), Some(config), true, None);
        let budget = self.shared.conn_budget_per_worker.unwrap_or(u64::MAX);
        let max_conns = ((budget / CONN_CHARGE) as usize).clamp(16, self.max_conns.max(16));
        let (rcv, snd) = udp::buffer_sizes(fd);
        if udp::buffers_capped(fd) {
            log::warn(
                "http3: UDP socket buffers capped by the node (raise net.core.rmem_max and wmem_max to 4 MiB)",
                &[("udp_rcvbuf", V::U(rcv as u64)), ("udp_sndbuf", V::U(snd as u64))],
            );
        }
        log::info(
            "http3 on",
            &[
                ("worker", V::U(self.id as u64)),
                ("gso", V::Bool(gso)),
                ("udp_rcvbuf", V::U(rcv as u64)),
                ("udp_sndbuf", V::U(snd as u64)),
                ("max_connections", V::U(max_conns as u64)),
                ("ack_every", V::U(self.shared.cfg.http3_ack_every as u64)),
            ],
        );
        self.h3 = Some(Box::new(Quic {
            fd,
            endpoint,
            tls_from: tls,
            transport,
            keys,
            conns: Vec::new(),
            live: 0,
            handshaking: 0,
            max_conns,
            rx: BytesMut::new(),
            meta: [Received::default(); MAX_BATCH],
            tx: (0..MAX_BATCH).map(|_| Vec::new()).collect(),
            tx_meta: vec![(SocketAddr::from(([0, 0, 0, 0], 0)), None, 0); MAX_BATCH],
            ntx: 0,
            scratch: Vec::new(),
            gso,
            ecn: true,
            v6: crate::sys::socket::local_addr(fd).is_some_and(|a| a.is_ipv6()),
            s: Scratch::new(),
            date_of: Vec::new(),
            touched: Vec::new(),
            wake: None,
            drain_since: None,
        }));
        self
    }

    /// Makes this worker's HTTPS responses advertise HTTP/3 on `port` (`Alt-Svc`, a day).
    pub fn advertise_http3(mut self, port: u16) -> Worker {
        self.alt_svc = format!("Alt-Svc: h3=\":{port}\"; ma=86400\r\n").into_bytes();
        self
    }

    /// The UDP socket to watch, if this worker serves HTTP/3.
    pub(super) fn h3_fd(&self) -> Option<RawFd> {
        self.h3.as_ref().map(|q| q.fd)
    }

    /// The epoll timeout: `ms`, or less when a QUIC timer is due sooner (rounded up to the next millisecond).
    pub(super) fn h3_wait(&self, ms: i32) -> i32 {
        let Some(w) = self.h3.as_ref().and_then(|q| q.wake) else { return ms };
        let left = w.saturating_duration_since(Instant::now());
        ms.min((left.as_micros().div_ceil(1000)) as i32)
    }

    /// Whether the worker may stop: no HTTP/3 connection left that is not closed.
    pub(super) fn h3_idle(&self) -> bool {
        self.h3.as_ref().is_none_or(|q| q.conns.iter().flatten().all(|c| c.conn.is_closed()))
    }

    /// Once per loop turn: a rotated certificate, the Date lines, expired timers; while draining, GOAWAY and
    /// the closing of quiet connections.
    pub(super) fn h3_turn(&mut self) {
        let Some(mut q) = self.h3.take() else { return };
        let now = Instant::now();
        if let Some(local) = &self.tls_config {
            if !Arc::ptr_eq(&q.tls_from, &local.value) {
                if let Some(c) = server_config(&local.value, &q.transport, &q.keys) {
                    q.endpoint.set_server_config(Some(c));
                }
                q.tls_from = local.value.clone();
            }
        }
        let d = self.date.line();
        if q.date_of != d {
            q.date_of.clear();
            q.date_of.extend_from_slice(d);
            if let Some(h) = self.table.value.hsts.as_deref() {
                q.date_of.extend_from_slice(b"Strict-Transport-Security: ");
                q.date_of.extend_from_slice(h.as_bytes());
                q.date_of.extend_from_slice(b"\r\n");
            }
            crate::http3::respond::date_block(&mut q.s.date, &q.date_of);
            // Compared against the Date line alone next turn.
            q.date_of.truncate(d.len());
        }
        if self.closing && q.drain_since.is_none() {
            q.drain_since = Some(now);
            for c in q.conns.iter_mut().flatten() {
                c.goaway(now);
            }
        }
        let hard = q.drain_since.is_some_and(|t| now.duration_since(t) >= Duration::from_millis(DRAIN_MS));
        let handshake_limit = Duration::from_millis(self.header_timeout_ms);
        let due = q.wake.is_some_and(|w| w <= now) || q.drain_since.is_some();
        if due {
            for h in 0..q.conns.len() {
                let Some(c) = q.conns[h].as_mut() else { continue };
                if q.drain_since.is_some() && (hard || c.quiet()) {
                    c.close(now, crate::http3::Code::NoError, "shutting down");
                }
                if c.handshaking && now.duration_since(c.born) >= handshake_limit {
                    c.close(now, crate::http3::Code::NoError, "handshake timeout");
                }
                if c.timeout.is_some_and(|t| t <= now) {
                    c.conn.handle_timeout(now);
                }
                self.h3_drive(&mut q, h, now);
            }
            q.flush();
            self.h3_complete(&mut q);
            q.wake = q.conns.iter().flatten().filter_map(|c| c.timeout).min();
            self.stats().h3_open.store(q.live as u64, Ordering::Relaxed);
        }
        self.h3 = Some(q);
    }

    /// The socket is readable: batches of datagrams to the endpoint, then every connection they touched driven
    /// and its transmits sent.
    pub(super) fn h3_readable(&mut self) {
        let Some(mut q) = self.h3.take() else { return };
        let now = Instant::now();
        let mut touched: u64 = 0;
        let mut touched_list = std::mem::take(&mut q.touched);
        touched_list.clear();
        for _ in 0..RX_ROUNDS {
            // One allocation per batch at most: reused when quinn-proto kept no slice of the last one.
            q.rx.clear();
            q.rx.reserve(SLOT * MAX_BATCH);
            q.rx.resize(SLOT * MAX_BATCH, 0);
            let n = match udp::recv_batch(q.fd, &mut q.rx, SLOT, &mut q.meta) {
                Ok(n) => n,
                Err(e) => {
                    log::warn("http3: receive failed", &[("error", V::S(&e.to_string()))]);
                    0
                }
            };
            for i in 0..n {
                let m = q.meta[i];
                let mut d = q.rx.split_to(SLOT);
                if m.truncated {
                    continue;
                }
                d.truncate(m.len);
                // Packets only servers send are damage or forgery here: quinn-proto must not see them.
                let keep = datagram::readable_prefix(&d);
                if keep == 0 {
                    continue;
                }
                // The ID the datagram is routed by, for the anti-amplification budget (before `d` is handed over).
                let mut dcid = [0u8; 20];
                let dcid_len = datagram::first_dcid(&d, CID_LEN).map(|id| {
                    dcid[..id.len()].copy_from_slice(id);
                    id.len()
                });
                d.truncate(keep);
                let from = addr::canonical(m.from);
                let mut scratch = std::mem::take(&mut q.scratch);
                scratch.clear();
                match q.endpoint.handle(now, from, None, EcnCodepoint::from_bits(m.ecn), d, &mut scratch) {
                    Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                        if let Some(c) = q.conns.get_mut(h.0).and_then(|c| c.as_mut()) {
                            c.received(m.len, from, dcid_len.map(|n| &dcid[..n]));
                            c.conn.handle_event(ev);
                            mark(&mut touched, &mut touched_list, h.0);
                        }
                    }
                    Some(DatagramEvent::NewConnection(inc)) => {
                        if let Some(h) = self.h3_incoming(&mut q, inc, m.len, now, &mut scratch) {
                            mark(&mut touched, &mut touched_list, h);
                        }
                    }
                    Some(DatagramEvent::Response(t)) => q.queue(&t, &scratch),
                    None => {}
                }
                q.scratch = scratch;
            }
            if n < MAX_BATCH {
                break;
            }
        }
        for &h in &touched_list {
            self.h3_drive(&mut q, h, now);
        }
        q.touched = touched_list;
        q.flush();
        self.h3_complete(&mut q);
        q.wake = q.conns.iter().flatten().filter_map(|c| c.timeout).min();
        self.stats().h3_open.store(q.live as u64, Ordering::Relaxed);
        self.h3 = Some(q);
    }

    /// The requests answered since the last call left with the batch just sent: their durations observed and
    /// their access-log lines written, as for HTTP/1.1 and HTTP/2 batches (server/io.rs).
    fn h3_complete(&mut self, q: &mut Quic) {
        q.s.batch_start = None;
        super::io::complete(&mut self.batch, &mut self.batch_log, &mut self.log_line, &self.shared.stats[self.id]);
    }

    /// A client's first datagram (`len` bytes): refused past the connection cap, sent a Retry when many handshakes
    /// are in progress and its address is not yet proven, accepted otherwise. The handle when accepted.
    fn h3_incoming(
        &mut self,
        q: &mut Quic,
        inc: Incoming,
        len: usize,
        now: Instant,
        buf: &mut Vec<u8>,
    ) -> Option<usize> {
        if q.live >= q.max_conns || self.closing {
            bump(&self.stats().h3_refused, 1);
            let t = q.endpoint.refuse(inc, buf);
            q.queue(&t, buf);
            return None;
        }
        let inc = if !inc.remote_address_validated() && q.handshaking >= RETRY_AT {
            match q.endpoint.retry(inc, buf) {
                Ok(t) => {
                    bump(&self.stats().h3_retries, 1);
                    q.queue(&t, buf);
                    return None;
                }
                Err(e) => e.into_incoming(),
            }
        } else {
            inc
        };
        // A token (from our Retry) proved the address; otherwise what we may send is counted from this datagram.
        let budget = (!inc.remote_address_validated()).then(|| Budget::new(inc.orig_dst_cid(), len));
        buf.clear();
        match q.endpoint.accept(inc, now, buf, None) {
            Ok((h, conn)) => {
                if q.conns.len() <= h.0 {
                    q.conns.resize_with(h.0 + 1, || None);
                }
                let max_age = Duration::from_millis(self.max_age_ms);
                q.conns[h.0] = Some(Box::new(H3Conn::new(conn, now, budget, max_age)));
                q.live += 1;
                q.handshaking += 1;
                // The gauge before the total: a reader that sees this connection counted sees it held.
                self.stats().h3_open.store(q.live as u64, Ordering::Relaxed);
                bump(&self.stats().h3_connections, 1);
                Some(h.0)
            }
            Err(e) => {
                if let Some(t) = e.response {
                    q.queue(&t, buf);
                }
                None
            }
        }
    }

    /// Everything connection `h` has to do after its input: stream events (h3_conn.rs), endpoint events both
    /// ways, transmits into the batch; forgotten once drained.
    fn h3_drive(&mut self, q: &mut Quic, h: usize, now: Instant) {
        let Some(mut c) = q.conns.get_mut(h).and_then(Option::take) else { return };
        self.h3_events(&mut q.s, &mut c, now);
        let mut drained = false;
        while let Some(ev) = c.conn.poll_endpoint_events() {
            drained |= ev.is_drained();
            if let Some(back) = q.endpoint.handle_event(ConnectionHandle(h), ev) {
                c.conn.handle_event(back);
            }
        }
        if !drained {
            self.h3_events(&mut q.s, &mut c, now);
        }
        // A completed handshake proves the address (the client had our Handshake keys' secret).
        if c.budget.is_some() && !c.conn.is_handshaking() && !c.conn.is_closed() {
            c.budget = None;
        }
        let segments = if q.gso { gso_segments(c.conn.current_mtu() as usize) } else { 1 };
        loop {
            if q.ntx == MAX_BATCH {
                q.flush();
            }
            // Before the address is validated: one datagram at a time, and only when the largest it can be fits.
            let most = match &c.budget {
                Some(b) if !b.fits(c.conn.current_mtu() as usize) => break,
                Some(_) => 1,
                None => segments,
            };
            let buf = &mut q.tx[q.ntx];
            buf.clear();
            let Some(t) = c.conn.poll_transmit(now, most, buf) else { break };
            if let Some(b) = &mut c.budget {
                b.sent(t.size);
            }
            q.tx_meta[q.ntx] = meta(&t);
            q.ntx += 1;
        }
        c.timeout = c.wake();
        if c.handshaking && !c.conn.is_handshaking() {
            c.handshaking = false;
            q.handshaking -= 1;
        }
        if drained {
            if c.handshaking {
                q.handshaking -= 1;
            }
            q.live -= 1;
            return;
        }
        q.conns[h] = Some(c);
    }
}

impl Quic {
    /// Sends the batch.
    fn flush(&mut self) {
        if self.ntx == 0 {
            return;
        }
        let msgs: [Outgoing; MAX_BATCH] = std::array::from_fn(|i| {
            let (to, segment, ecn) = self.tx_meta[i];
            let data = if i < self.ntx { &self.tx[i][..] } else { &[] };
            Outgoing { to: addr::for_socket(to, self.v6), data, segment, ecn: if self.ecn { ecn } else { 0 } }
        });
        let sent = udp::send_batch(self.fd, &msgs[..self.ntx]);
        if sent.gso_failed && self.gso {
            self.gso = false;
            log::warn("http3: UDP GSO refused by the device, off from now on", &[]);
        }
        if sent.ecn_failed && self.ecn {
            // quinn-proto sees the path lose its marks and stops counting on ECN there, as over a network that
            // clears them.
            self.ecn = false;
            log::warn("http3: ECN marks refused by the kernel, datagrams unmarked from now on", &[]);
        }
        self.ntx = 0;
    }

    /// An endpoint's own datagram (written into `data`) into the batch.
    fn queue(&mut self, t: &Transmit, data: &[u8]) {
        if self.ntx == MAX_BATCH {
            self.flush();
        }
        let b = &mut self.tx[self.ntx];
        b.clear();
        b.extend_from_slice(&data[..t.size]);
        self.tx_meta[self.ntx] = meta(t);
        self.ntx += 1;
    }
}

/// What `flush` needs of a transmit besides its bytes.
fn meta(t: &Transmit) -> (SocketAddr, Option<u16>, u8) {
    (t.destination, t.segment_size.map(|s| s as u16), t.ecn.map_or(0, |e| e as u8))
}

/// Datagrams of `mtu` bytes one GSO message may carry.
fn gso_segments(mtu: usize) -> usize {
    (GSO_MAX_BYTES / mtu.max(1)).clamp(1, GSO_MAX_SEGMENTS)
}

/// Adds `h` to the connections touched by a receive batch, once (a bitmap for the first 64 handles, a scan of
/// the list beyond).
fn mark(bits: &mut u64, list: &mut Vec<usize>, h: usize) {
    if h < 64 {
        if *bits & (1 << h) != 0 {
            return;
        }
        *bits |= 1 << h;
    } else if list.contains(&h) {
        return;
    }
    list.push(h);
}
