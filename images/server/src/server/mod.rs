//! One worker: its own SO_REUSEPORT listener and epoll loop, edge-triggered connections, pipelined
//! requests answered in one write per batch, timeouts swept a few times per second. Nothing here takes a
//! lock or allocates per request: connection slots, the read buffer and the batch output are reused; a
//! connection only owns memory while it holds a partial request or unsent output.
//! With TLS on, each worker also owns an HTTPS listener; its connections are the same slots with a rustls
//! session attached (tls/stream.rs), decrypting into the same read buffer and encrypting the same batches.

use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::access;
use crate::datecache::DateCache;
use crate::http1::out::{self, Out, Pending, WriteResult};
use crate::http1::parser::{self, Parsed};
use crate::http1::respond::{self, Ctx, Resp};
use crate::log;
use crate::site::content::Table;
use crate::state::{bump, code_index, Shared, WorkerStats};
use crate::timing;
use crate::tls;
use rustls::{ServerConfig, ServerConnection};

const READ_BUF: usize = 64 * 1024;
const MAX_EVENTS: usize = 512;
const LISTENER: u64 = u64::MAX;
const TLS_LISTENER: u64 = u64::MAX - 1;
/// A batch is written out once its buffer grows past this, even mid-pipeline.
const FLUSH_AT: usize = 128 * 1024;
/// How long a closing connection may keep sending before we drop it.
const LINGER_MS: u64 = 2000;
/// While draining, connections idle this long are closed.
const DRAIN_IDLE_MS: u64 = 250;

struct Conn {
    fd: RawFd,
    gen: u32,
    active: bool,
    born_ms: u64,
    /// Last time bytes arrived or left.
    last_ms: u64,
    /// When the request head now being received started (0: none in progress).
    head_since_ms: u64,
    requests: u64,
    /// Bytes of an incomplete request head (or unprocessed pipelined requests while output is pending).
    stash: Vec<u8>,
    pending: Option<Box<Pending>>,
    /// The table generation `pending` holds (its bodies point into that table).
    pending_gen: u64,
    /// Input is waiting for pending output to drain.
    paused: bool,
    /// After the pending output is sent, shut down.
    close_after: bool,
    /// The closing request was whole and bodiless and nothing followed it in the buffer: no client bytes can be
    /// in flight, so the connection closes at once instead of lingering for the client's FIN.
    close_clean: bool,
    /// Write side shut down; reading and discarding until EOF.
    lingering: bool,
    /// The client shut down its sending side (EPOLLRDHUP): answer what was received, then close.
    peer_closed: bool,
    /// The client's address, for the access log (read at accept: no syscall per request).
    peer: Option<std::net::SocketAddr>,
    /// Responses in `pending`, not yet observed, and their unfinished access-log lines: the worker's batch
    /// vectors swapped in when a write blocks. The slot keeps their capacity across connections.
    inflight: Vec<Done>,
    inflight_log: Vec<u8>,
    /// Accepted on the HTTPS listener: the rustls state (boxed: a few KB, allocated once per connection).
    tls: Option<Box<ServerConnection>>,
    /// The handshake's outcome was counted (hyperstatic_tls_handshakes_total).
    handshake_counted: bool,
    /// In the worker's pre-head list (`PreHead`), with its neighbours there (NIL at the ends).
    pre_head: bool,
    pre_prev: u32,
    pre_next: u32,
}

/// A queued response waiting for its write to complete: when its head was parsed, and its access-log line
/// (`log_from..log_to` in the batch's log buffer; empty when not sampled).
struct Done {
    start_ns: u64,
    log_from: u32,
    log_to: u32,
}

impl Conn {
    fn empty() -> Conn {
        Conn {
            fd: -1,
            gen: 0,
            active: false,
            born_ms: 0,
            last_ms: 0,
            head_since_ms: 0,
            requests: 0,
            stash: Vec::new(),
            pending: None,
            pending_gen: 0,
            paused: false,
            close_after: false,
            close_clean: false,
            lingering: false,
            peer_closed: false,
            peer: None,
            inflight: Vec::new(),
            inflight_log: Vec::new(),
            tls: None,
            handshake_counted: false,
            pre_head: false,
            pre_prev: NIL,
            pre_next: NIL,
        }
    }

    /// Waiting for a request head with nothing in flight: a TLS handshake in progress or a partial head in
    /// `stash`, the memory `PreHead` bounds. An idle keep-alive connection (no head begun) holds no buffer and is
    /// not one; neither is one with output pending (its input waits) or lingering.
    fn holds_pre_head(&self) -> bool {
        self.active && self.head_since_ms != 0 && self.pending.is_none() && !self.lingering
    }
}

const NIL: u32 = u32::MAX;

/// The worker's connections that wait for their request head (`Conn::holds_pre_head`), oldest first: a list
/// threaded through the slots (no allocation), so joining, leaving and finding the oldest are O(1).
struct PreHead {
    oldest: u32,
    newest: u32,
    count: usize,
    /// `Shared::pre_head_per_worker`: past it the oldest is closed.
    max: usize,
}

pub struct Worker {
    id: usize,
    shared: Arc<Shared>,
    ep: Option<Epoll>,
    listener: RawFd,
    conns: Vec<Conn>,
    free: Vec<u32>,
    open: usize,
    rbuf: Box<[u8]>,
    out: Out,
    pathbuf: Box<[u8]>,
    table: Arc<Table>,
    table_gen: u64,
    date: DateCache,
    now_ms: u64,
    closing: bool,
    /// Non-zero while the listener is out of the epoll set after an accept error.
    accept_paused_until: u64,
    log_counter: u64,
    log_line: Vec<u8>,
    /// Responses of the batch being answered/written, and their unfinished access-log lines (access.rs).
    batch: Vec<Done>,
    batch_log: Vec<u8>,
    header_timeout_ms: u64,
    keepalive_ms: u64,
    max_age_ms: u64,
    max_requests: u64,
    /// HTTPS: the listener (-1 without TLS), the configuration new handshakes use and its generation.
    tls_listener: RawFd,
    tls_config: Option<Arc<ServerConfig>>,
    tls_gen: u64,
    /// File-backed bodies pass through here on their way into TLS records (empty without TLS).
    scratch: Box<[u8]>,
    /// The Date line followed by Strict-Transport-Security, for HTTPS responses when `--hsts` is set.
    hsts_date: Vec<u8>,
    /// `--https-redirect`: plain-port requests get a 308 to this port.
    redirect_port: Option<u16>,
    /// `--max-connections-per-worker`.
    max_conns: usize,
    pre: PreHead,
    /// Where the next search for a connection to evict starts (a clock hand over the slots: the connection
    /// evicted is the next in slot order after the last one, so a refilled slot is the last to go again).
    evict_from: usize,
}

/// How many slots one accept at the cap looks at for a connection to evict before refusing the new one: bounds
/// the work a flood of connections can cause when every slot has output in flight.
const EVICT_SCAN: usize = 64;

use crate::sys::clock::monotonic_coarse_ms as monotonic_ms;
use crate::sys::epoll::{self, Epoll, Events};
use crate::sys::errno;
use crate::sys::socket::{self, AcceptError};
use crate::sys::{self, io};

/// Creates a non-blocking SO_REUSEPORT listener.
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<RawFd> {
    let fd = socket::tcp_socket(addr, true)?;
    // SO_REUSEPORT: one listener per worker on the same port. Accepted sockets inherit TCP_NODELAY from the
    // listener (tested below), which saves a setsockopt per connection: responses go out in one write per batch,
    // so Nagle only ever delays. TCP_DEFER_ACCEPT: the kernel hands a connection to accept only once its first
    // bytes arrived (or after about a second without any): HTTP clients speak first, so a new connection wakes
    // the loop once instead of once for the handshake and again for the request. On a VM each sleep and wake-up
    // is the dearest part of a short connection: `make bench-profile` measured 451 → 26 context switches per
    // 1,000 `Connection: close` requests and 17.7 → 7.8 µs of system time each (docs/bench/breakdown.md).
    // Connections that never send hold no slot here until then either.
    socket::worker_listener_options(fd);
    socket::bind_listen(fd, addr, 4096)
}

/// The port a listener got (for `--listen 127.0.0.1:0`).
pub fn local_port(fd: RawFd) -> u16 {
    socket::local_addr(fd).map_or(0, |a| a.port())
}

impl Worker {
    /// `tls_listener` is -1 when HTTPS is off.
    pub fn new(id: usize, shared: Arc<Shared>, listener: RawFd, tls_listener: RawFd) -> Worker {
        let (table, table_gen) = shared.table();
        let (tls_config, tls_gen) = match &shared.tls {
            Some(p) => {
                let (c, g) = p.config();
                (Some(c), g)
            }
            None => (None, 0),
        };
        let cfg = &shared.cfg;
        let ms = |d: std::time::Duration| (d.as_millis() as u64).max(1);
        Worker {
            id,
            ep: None,
            listener,
            conns: Vec::new(),
            free: Vec::new(),
            open: 0,
            rbuf: vec![0u8; READ_BUF].into_boxed_slice(),
            out: Out::default(),
            pathbuf: vec![0u8; parser::MAX_REQUEST_LINE].into_boxed_slice(),
            table,
            table_gen,
            date: DateCache::new(),
            now_ms: monotonic_ms(),
            closing: false,
            accept_paused_until: 0,
            log_counter: 0,
            log_line: Vec::with_capacity(1024),
            batch: Vec::with_capacity(64),
            batch_log: Vec::new(),
            header_timeout_ms: ms(cfg.header_timeout),
            keepalive_ms: ms(cfg.keepalive_timeout),
            max_age_ms: ms(cfg.max_connection_age),
            max_requests: cfg.max_requests_per_connection,
            tls_listener,
            scratch: vec![0u8; if tls_config.is_some() { tls::stream::SCRATCH } else { 0 }].into_boxed_slice(),
            tls_config,
            tls_gen,
            hsts_date: Vec::new(),
            redirect_port: cfg.https_redirect,
            max_conns: cfg.max_connections_per_worker,
            pre: PreHead { oldest: NIL, newest: NIL, count: 0, max: shared.pre_head_per_worker.max(1) },
            evict_from: 0,
            shared,
        }
    }

    fn stats(&self) -> &WorkerStats {
        &self.shared.stats[self.id]
    }

    pub fn run(mut self) {
        let ep = Epoll::new().expect("epoll_create1");
        ep.add(self.listener, epoll::IN, LISTENER);
        if self.tls_listener >= 0 {
            ep.add(self.tls_listener, epoll::IN, TLS_LISTENER);
        }
        self.ep = Some(ep);
        let mut events = Events::with_capacity(MAX_EVENTS);
        let tick = (self.header_timeout_ms.min(self.keepalive_ms) / 4).clamp(5, 1000);
        let mut next_sweep = monotonic_ms() + tick;
        loop {
            let timeout = if self.closing { 50 } else { tick as i32 };
            let n = self.ep().wait(&mut events, timeout);
            self.now_ms = monotonic_ms();
            self.date.refresh();
            let g = self.shared.generation();
            if g != self.table_gen {
                let (t, g) = self.shared.table();
                self.table = t;
                self.table_gen = g;
            }
            self.refresh_tls();
            for (data, flags) in events.ready(n) {
                if data == LISTENER || data == TLS_LISTENER {
                    if self.listener >= 0 && self.accept_paused_until == 0 {
                        self.accept(data == TLS_LISTENER);
                    }
                    continue;
                }
                let idx = (data & 0xffff_ffff) as usize;
                let gen = (data >> 32) as u32;
                if idx >= self.conns.len() || !self.conns[idx].active || self.conns[idx].gen != gen {
                    continue;
                }
                if flags & (epoll::HUP | epoll::RDHUP) != 0 {
                    self.conns[idx].peer_closed = true;
                }
                if flags & (epoll::IN | epoll::ERR | epoll::HUP | epoll::RDHUP) != 0 {
                    self.on_readable(idx);
                }
                if flags & epoll::OUT != 0 && self.conns[idx].active && self.conns[idx].gen == gen {
                    self.on_writable(idx);
                }
            }
            if self.now_ms >= next_sweep || self.closing {
                next_sweep = self.now_ms + tick;
                if !self.closing && self.shared.stop_accepting.load(Ordering::Acquire) {
                    self.start_closing();
                }
                self.sweep();
                if self.closing && self.open == 0 {
                    break;
                }
                if self.accept_paused_until != 0 && self.now_ms >= self.accept_paused_until && !self.closing {
                    self.accept_paused_until = 0;
                    for (fd, data) in [(self.listener, LISTENER), (self.tls_listener, TLS_LISTENER)] {
                        if fd >= 0 {
                            self.ep().add(fd, epoll::IN, data);
                        }
                    }
                }
            }
        }
        self.ep = None;
    }

    fn ep(&self) -> &Epoll {
        self.ep.as_ref().expect("the event loop is running")
    }

    /// Once per loop iteration: a rotated certificate (one atomic load; the mutex only when it changed), and
    /// the Date line with HSTS when the second turned.
    fn refresh_tls(&mut self) {
        let Some(p) = &self.shared.tls else { return };
        if p.generation() != self.tls_gen {
            let (c, g) = p.config();
            self.tls_config = Some(c);
            self.tls_gen = g;
        }
        if let Some(h) = &self.shared.cfg.hsts {
            let d = self.date.line();
            if !self.hsts_date.starts_with(d) {
                self.hsts_date.clear();
                self.hsts_date.extend_from_slice(d);
                self.hsts_date.extend_from_slice(b"Strict-Transport-Security: ");
                self.hsts_date.extend_from_slice(h.as_bytes());
                self.hsts_date.extend_from_slice(b"\r\n");
            }
        }
    }

    fn start_closing(&mut self) {
        self.closing = true;
        for fd in [self.listener, self.tls_listener] {
            if fd >= 0 {
                self.ep().delete(fd);
                sys::close(fd);
            }
        }
        self.listener = -1;
        self.tls_listener = -1;
    }

    /// Accepts on the plain listener, or on the HTTPS one when `tls` is set.
    fn accept(&mut self, tls: bool) {
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
            if self.open >= self.max_conns && !self.evict_one() {
                // Every connection has a response in flight: the newcomer is the one that waits (its client
                // sees the connection close at once and may retry).
                sys::close(fd);
                bump(&self.stats().connections_refused, 1);
                continue;
            }
            let conn = match (tls, &self.tls_config) {
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
            c.active = true;
            c.born_ms = self.now_ms;
            c.last_ms = self.now_ms;
            c.head_since_ms = self.now_ms;
            c.requests = 0;
            c.paused = false;
            c.close_after = false;
            c.close_clean = false;
            c.lingering = false;
            c.peer_closed = false;
            c.stash = Vec::new();
            c.pending = None;
            c.peer = peer;
            c.inflight.clear();
            c.inflight_log.clear();
            c.tls = conn;
            c.handshake_counted = false;
            let gen = c.gen;
            self.open += 1;
            let s = self.stats();
            bump(&s.connections_total, 1);
            bump(&s.connections_open, 1);
            // The request usually arrives with the connection (the client sends it right after the handshake,
            // before we get to accept): answer it now, before any epoll_ctl. A connection that asked to close is
            // then done in accept4 + read + write + close, never entering the epoll set; one that stays open
            // joins it below, and edge-triggered registration reports whatever became ready meanwhile.
            self.process(idx, true);
            let c = &self.conns[idx];
            if !c.active || c.gen != gen {
                continue;
            }
            let data = (gen as u64) << 32 | idx as u64;
            self.ep().add(fd, epoll::IN | epoll::OUT | epoll::RDHUP | epoll::ET, data);
        }
    }

    /// At `--max-connections-per-worker`: closes one connection that has no response in flight (waiting for a
    /// request head, mid-handshake, idle between requests, or lingering after its last response), looking at no
    /// more than EVICT_SCAN slots. Those are what an attacker's half-open connections are, and what costs a
    /// legitimate client least: a keep-alive client reconnects. False when none was found.
    fn evict_one(&mut self) -> bool {
        let n = self.conns.len();
        for k in 0..EVICT_SCAN.min(n) {
            let i = (self.evict_from + k) % n;
            let c = &self.conns[i];
            if c.active && c.pending.is_none() {
                self.evict_from = (i + 1) % n;
                self.close(i);
                bump(&self.stats().connections_evicted, 1);
                return true;
            }
        }
        self.evict_from = (self.evict_from + EVICT_SCAN) % n.max(1);
        false
    }

    /// After anything that may have begun or ended a connection's request head (a read, a response, a
    /// timeout): it joins the pre-head list as its newest member, or leaves it. Joining a full list first closes
    /// the oldest member: the memory connections hold before their head completes stays within
    /// `Shared::pre_head_per_worker` × `memory::PRE_HEAD_COST`, whatever the flood (a partial head grows no further
    /// than that cost, so one that grows needs no new check). The newest is kept: a real client's handshake or
    /// head is usually done long before a flood's connections, opened earlier and left hanging, would be.
    fn track_pre_head(&mut self, idx: usize) {
        let c = &self.conns[idx];
        let want = c.holds_pre_head();
        if want == c.pre_head {
            return;
        }
        if !want {
            self.pre_unlink(idx);
            return;
        }
        if self.pre.count >= self.pre.max {
            // Never `idx` itself: it is not in the list yet.
            self.close(self.pre.oldest as usize);
            bump(&self.stats().pre_head_evicted, 1);
        }
        let newest = self.pre.newest;
        let c = &mut self.conns[idx];
        c.pre_head = true;
        c.pre_prev = newest;
        c.pre_next = NIL;
        match newest {
            NIL => self.pre.oldest = idx as u32,
            n => self.conns[n as usize].pre_next = idx as u32,
        }
        self.pre.newest = idx as u32;
        self.pre.count += 1;
    }

    fn pre_unlink(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let (prev, next) = (c.pre_prev, c.pre_next);
        c.pre_head = false;
        c.pre_prev = NIL;
        c.pre_next = NIL;
        match prev {
            NIL => self.pre.oldest = next,
            p => self.conns[p as usize].pre_next = next,
        }
        match next {
            NIL => self.pre.newest = prev,
            n => self.conns[n as usize].pre_prev = prev,
        }
        self.pre.count -= 1;
    }

    fn close(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if !c.active {
            return;
        }
        // Closing also removes it from the epoll set.
        sys::close(c.fd);
        c.active = false;
        if c.pre_head {
            self.pre_unlink(idx);
        }
        let c = &mut self.conns[idx];
        c.fd = -1;
        c.pending = None;
        c.tls = None;
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
    fn begin_close(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if let Some(t) = c.tls.as_mut() {
            // close_notify, if the socket takes it now; the TCP FIN follows either way.
            t.send_close_notify();
            let _ = tls::stream::drain(t, c.fd);
        }
        // Over TLS a client may send records of its own (close_notify, a ticket acknowledgement) that are not
        // requests, so a TLS connection always lingers.
        if (c.close_clean && c.tls.is_none()) || c.peer_closed {
            self.close(idx);
            return;
        }
        socket::shutdown_write(c.fd);
        c.lingering = true;
        c.stash = Vec::new();
        c.last_ms = self.now_ms;
        self.drain_linger(idx);
    }

    fn drain_linger(&mut self, idx: usize) {
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

    fn on_readable(&mut self, idx: usize) {
        if self.conns[idx].lingering {
            self.drain_linger(idx);
            return;
        }
        if self.conns[idx].pending.is_some() {
            self.conns[idx].paused = true;
            return;
        }
        self.process(idx, true);
    }

    fn on_writable(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let Some(p) = c.pending.as_mut() else { return };
        let mut written = 0;
        let r = match c.tls.as_deref_mut() {
            Some(t) => p.write_tls(t, c.fd, &mut written, &mut self.scratch),
            None => p.write(c.fd, &mut written),
        };
        match r {
            WriteResult::Blocked => {
                if written > 0 {
                    c.last_ms = self.now_ms;
                }
            }
            WriteResult::Failed => self.close(idx),
            WriteResult::Done => {
                c.pending = None;
                c.last_ms = self.now_ms;
                complete(&mut c.inflight, &mut c.inflight_log, &mut self.log_line, &self.shared.stats[self.id]);
                if c.close_after {
                    self.begin_close(idx);
                } else if c.paused || c.tls.is_some() {
                    // A TLS connection may hold decrypted requests inside rustls that no new socket event
                    // will announce: always look.
                    c.paused = false;
                    self.process(idx, true);
                } else if c.peer_closed {
                    self.begin_close(idx);
                }
            }
        }
        self.track_pre_head(idx);
    }

    /// Reads what the socket has (when `read` is set), answers every complete request in the buffer, writes
    /// the batch, keeps an incomplete tail for later; then the connection joins or leaves the pre-head list.
    fn process(&mut self, idx: usize, read: bool) {
        self.process_input(idx, read);
        self.track_pre_head(idx);
    }

    fn process_input(&mut self, idx: usize, mut read: bool) {
        loop {
            let mut len = 0;
            if !self.conns[idx].stash.is_empty() {
                let st = std::mem::take(&mut self.conns[idx].stash);
                len = st.len();
                self.rbuf[..len].copy_from_slice(&st);
            }
            let mut full = false;
            if read && self.conns[idx].tls.is_some() {
                let Some((n, more)) = self.read_tls(idx, len) else { return };
                len += n;
                full = more;
            } else if read {
                let fd = self.conns[idx].fd;
                let n = match io::read(fd, &mut self.rbuf[len..READ_BUF]) {
                    Ok(n) => n as isize,
                    Err(_) => -1,
                };
                if n == 0 {
                    if len == 0 {
                        self.close(idx);
                        return;
                    }
                    // EOF behind requests kept while output was pending: answer them, then close.
                    self.conns[idx].peer_closed = true;
                } else if n < 0 {
                    match errno() {
                        libc::EAGAIN => {}
                        libc::EINTR => {
                            if len > 0 {
                                self.conns[idx].stash = self.rbuf[..len].to_vec();
                            }
                            continue;
                        }
                        _ => {
                            self.close(idx);
                            return;
                        }
                    }
                } else {
                    len += n as usize;
                    full = len == READ_BUF;
                    let c = &mut self.conns[idx];
                    c.last_ms = self.now_ms;
                    if c.head_since_ms == 0 {
                        c.head_since_ms = self.now_ms;
                    }
                }
            }
            if len == 0 {
                self.close_if_peer_closed(idx);
                return;
            }
            match self.answer(idx, len) {
                Flow::Continue if full => {
                    read = true;
                    continue;
                }
                Flow::Continue => {
                    self.close_if_peer_closed(idx);
                    return;
                }
                Flow::Stop => return,
            }
        }
    }

    /// `process`'s read for a TLS connection: decrypts into rbuf[len..]; counts the handshake once it is over.
    /// Some((plaintext bytes, maybe more)) when there is something to answer; None when the connection closed
    /// or nothing but handshake records had to go out.
    fn read_tls(&mut self, idx: usize, len: usize) -> Option<(usize, bool)> {
        let c = &mut self.conns[idx];
        let t = c.tls.as_deref_mut().expect("a TLS connection");
        let (n, st) = tls::stream::fill(t, c.fd, &mut self.rbuf[len..]);
        if !c.handshake_counted {
            let s = &self.shared.stats[self.id];
            if !t.is_handshaking() {
                c.handshake_counted = true;
                let resumed = t.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
                bump(if resumed { &s.tls_handshakes_resumed } else { &s.tls_handshakes_full }, 1);
            } else if st == tls::stream::Fill::Failed {
                c.handshake_counted = true;
                bump(&s.tls_handshake_failures, 1);
            }
        }
        if n > 0 {
            c.last_ms = self.now_ms;
            if c.head_since_ms == 0 {
                c.head_since_ms = self.now_ms;
            }
        }
        match st {
            tls::stream::Fill::Failed => {
                self.close(idx);
                return None;
            }
            tls::stream::Fill::Eof if len + n == 0 => {
                self.close(idx);
                return None;
            }
            tls::stream::Fill::Eof => c.peer_closed = true,
            _ => {}
        }
        if len + n == 0 {
            // Nothing to answer; handshake records or session tickets may be waiting to go out.
            if let Flow::Continue = self.flush(idx) {
                self.close_if_peer_closed(idx);
            }
            return None;
        }
        Some((n, st == tls::stream::Fill::Full))
    }

    /// A client that half-closed gets its complete requests answered, then the connection ends (an
    /// incomplete head left behind can never be completed).
    fn close_if_peer_closed(&mut self, idx: usize) {
        let c = &self.conns[idx];
        if c.active && c.peer_closed && !c.lingering && c.pending.is_none() {
            self.begin_close(idx);
        }
    }

    /// Parses and answers the requests in rbuf[..len].
    fn answer(&mut self, idx: usize, len: usize) -> Flow {
        self.out.clear();
        let mut pos = 0;
        let mut close = false;
        // Whether the last request answered was whole and without a body (see Conn::close_clean).
        let mut bodiless = false;
        // The table outlives the batch: the worker only swaps it between loop iterations.
        let table = sys::mem::detach(&self.table);
        let force_close_base = self.closing;
        // Every request in this read arrived together, so their durations start together: one clock read per
        // batch (pipelined ×16 reads the clock twice per batch, not twice per request), taken at the first
        // complete head.
        let mut batch_start: Option<u64> = None;
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
                spa_fallback: self.shared.cfg.spa_fallback,
            };
            let resp: Resp = match parsed {
                Ok(Parsed::Partial) => break,
                Ok(Parsed::Complete(req, used)) => {
                    // The head is complete: the request's duration starts here (or with its batch's first).
                    let start_ns = *batch_start.get_or_insert_with(timing::now_ns);
                    let r = match self.redirect_port {
                        Some(port) if c.tls.is_none() => respond::https_redirect(&mut self.out, &ctx, &req, port),
                        _ => respond::respond(&mut self.out, &ctx, &req, &mut self.pathbuf),
                    };
                    bodiless = !req.has_body();
                    let log_from = self.batch_log.len() as u32;
                    if self.shared.cfg.access_log {
                        self.log_counter += 1;
                        if self.log_counter.is_multiple_of(self.shared.cfg.access_log_sample) {
                            let f = access::Fields {
                                client: c.peer,
                                method: req.method_raw,
                                target: req.target,
                                status: r.status,
                                bytes: r.body,
                                user_agent: req.user_agent.unwrap_or(b""),
                                worker: self.id,
                            };
                            access::begin(&mut self.batch_log, &f);
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
                        if !c.active {
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
        }
        self.conns[idx].close_after = close;
        self.conns[idx].close_clean = close && bodiless && pos >= len;
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

    /// Writes the batch; what the socket does not take becomes the connection's Pending.
    fn flush(&mut self, idx: usize) -> Flow {
        self.out.finish();
        let c = &mut self.conns[idx];
        if self.out.segs.is_empty() && !c.tls.as_ref().is_some_and(|t| t.wants_write()) {
            complete(&mut self.batch, &mut self.batch_log, &mut self.log_line, &self.shared.stats[self.id]);
            return Flow::Continue;
        }
        let fd = c.fd;
        let mut cur = 0;
        let mut written = 0;
        let r = match c.tls.as_deref_mut() {
            Some(t) => tls::stream::write_segs(
                t,
                fd,
                &self.out.buf,
                &mut self.out.segs,
                &mut cur,
                &mut written,
                &mut self.scratch,
            ),
            None => out::write_segs(fd, &self.out.buf, &mut self.out.segs, &mut cur, &mut written),
        };
        match r {
            WriteResult::Done => {
                self.out.clear();
                complete(&mut self.batch, &mut self.batch_log, &mut self.log_line, &self.shared.stats[self.id]);
                Flow::Continue
            }
            WriteResult::Blocked => {
                let p = Pending::from_rest(&self.out.buf, &self.out.segs[cur..], self.table.clone());
                self.out.clear();
                let c = &mut self.conns[idx];
                c.pending = Some(p);
                c.pending_gen = self.table_gen;
                // The batch finishes when the pending output does (on_writable); swapping keeps both
                // vectors' capacity instead of allocating.
                std::mem::swap(&mut self.batch, &mut c.inflight);
                std::mem::swap(&mut self.batch_log, &mut c.inflight_log);
                Flow::Stop
            }
            WriteResult::Failed => {
                self.out.clear();
                self.batch.clear();
                self.batch_log.clear();
                self.close(idx);
                Flow::Stop
            }
        }
    }

    /// Timeouts: 408 for slow request heads, idle keep-alive close, stuck writers, lingering closes, drain.
    fn sweep(&mut self) {
        // A content load started since this output was queued, and it still holds an older table than the one
        // serving then: cut it (Shared::retire_below), or every slow reader pins a whole generation.
        let retire_below = self.shared.retire_below.load(Ordering::Acquire);
        for idx in 0..self.conns.len() {
            let c = &self.conns[idx];
            if !c.active {
                continue;
            }
            let idle = self.now_ms.saturating_sub(c.last_ms);
            if c.lingering {
                if idle >= LINGER_MS {
                    self.close(idx);
                }
            } else if c.pending.is_some() {
                if c.pending_gen < retire_below {
                    self.close(idx);
                    bump(&self.stats().slow_readers_closed, 1);
                } else if idle >= self.keepalive_ms.max(10_000) {
                    self.close(idx);
                }
            } else if c.head_since_ms != 0 {
                if self.now_ms.saturating_sub(c.head_since_ms) >= self.header_timeout_ms {
                    self.request_timeout(idx);
                }
            } else if idle >= self.keepalive_ms || (self.closing && idle >= DRAIN_IDLE_MS) {
                self.close(idx);
            }
        }
    }

    fn request_timeout(&mut self, idx: usize) {
        if self.conns[idx].tls.as_ref().is_some_and(|t| t.is_handshaking()) {
            // No TLS session to say 408 over: a handshake that takes too long just ends.
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
        self.conns[idx].close_after = true;
        if let Flow::Continue = self.flush(idx) {
            self.begin_close(idx);
        }
        self.track_pre_head(idx);
    }
}

/// The batch's responses were handed to the kernel: each is observed in the histogram and its access-log
/// line (if sampled) is completed with the duration and written, one write(2) per line as log.rs does.
fn complete(done: &mut Vec<Done>, lines: &mut Vec<u8>, line: &mut Vec<u8>, stats: &WorkerStats) {
    if done.is_empty() {
        return;
    }
    let now = timing::now_ns();
    for d in done.iter() {
        let ns = now.saturating_sub(d.start_ns);
        stats.durations.observe(ns);
        if d.log_to > d.log_from {
            line.clear();
            line.extend_from_slice(&lines[d.log_from as usize..d.log_to as usize]);
            access::finish(line, ns);
            log::write_stderr(line);
        }
    }
    done.clear();
    lines.clear();
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Stop,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn int_opt(fd: RawFd, level: libc::c_int, name: libc::c_int) -> libc::c_int {
        socket::int_opt(fd, level, name).expect("getsockopt")
    }

    /// accept4 without waiting: None when nothing is in the accept queue.
    fn try_accept(l: RawFd) -> Option<RawFd> {
        match socket::accept(l) {
            Ok((fd, _)) => Some(fd),
            Err(AcceptError::Empty) => None,
            Err(_) => panic!("accept4: {}", std::io::Error::last_os_error()),
        }
    }

    /// Waits (poll(2), up to 10 s) until the listener has a connection to accept, and accepts it.
    fn accept_when_ready(l: RawFd) -> RawFd {
        assert!(socket::wait_readable(l, 10_000), "no connection to accept within 10 s");
        try_accept(l).expect("a connection to accept")
    }

    fn close_all(fds: &[RawFd]) {
        for &fd in fds {
            sys::close(fd);
        }
    }

    #[test]
    fn the_listener_defers_accepts_until_data_arrives() {
        let l = listen("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_ne!(int_opt(l, libc::IPPROTO_TCP, libc::TCP_DEFER_ACCEPT), 0);
        // A client that connects and stays silent is not handed to accept (on loopback, without the option, the
        // connection is in the accept queue when connect returns); its first byte makes it so.
        let mut client = std::net::TcpStream::connect(("127.0.0.1", local_port(l))).unwrap();
        assert!(try_accept(l).is_none(), "a silent connection was accepted before sending");
        client.write_all(b"G").unwrap();
        close_all(&[accept_when_ready(l), l]);
    }

    /// `accept` relies on this to skip a setsockopt per connection: if a kernel stopped copying the option to
    /// accepted sockets, small responses would wait on Nagle and this test says why.
    #[test]
    fn accepted_sockets_inherit_nodelay_from_the_listener() {
        let l = listen("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_ne!(int_opt(l, libc::IPPROTO_TCP, libc::TCP_NODELAY), 0, "the listener itself has TCP_NODELAY");
        let mut client = std::net::TcpStream::connect(("127.0.0.1", local_port(l))).unwrap();
        client.write_all(b"x").unwrap();
        let fd = accept_when_ready(l);
        assert_ne!(
            int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY),
            0,
            "an accepted socket has TCP_NODELAY without a setsockopt of its own"
        );
        close_all(&[fd, l]);
    }
}
