//! One worker: its own SO_REUSEPORT listener and epoll loop, edge-triggered connections, pipelined
//! requests answered in one write per batch, timeouts swept a few times per second. Nothing here takes a
//! lock or allocates per request: connection slots, the read buffer and the batch output are reused; a
//! connection only owns memory while it holds a partial request or unsent output.
//! With TLS on, each worker also owns an HTTPS listener; its connections are the same slots with a rustls
//! session attached (tls/stream.rs), decrypting into the same read buffer and encrypting the same batches.
//!
//! The files: conn.rs (a slot and its state), slots.rs (lists threaded through the slots), budget.rs (each
//! connection's charge against the worker's connection memory budget; idle ones evicted past it), accept.rs,
//! io.rs (reads, writes, the batch), h1.rs (HTTP/1.1 on a connection), h2.rs (HTTP/2 on a connection: ALPN `h2`
//! on TLS, the preface with `--h2c`), close.rs (endings and the timeout sweep), listen.rs (the listeners),
//! proxy.rs (the PROXY v2 header that opens every connection with `--proxy-protocol`).

mod accept;
mod budget;
mod close;
mod conn;
mod h1;
mod h2;
mod h3;
mod h3_conn;
mod io;
pub mod listen;
mod proxy;
mod slots;
mod trim;

use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rustls::ServerConfig;

use crate::datecache::DateCache;
use crate::http1::out::Out;
use crate::http1::parser;
use crate::publish::Local;
use crate::site::content::Table;
use crate::state::{Shared, WorkerStats};
use crate::sys;
use crate::sys::clock::monotonic_coarse_ms as monotonic_ms;
use crate::sys::epoll::{self, Epoll, Events};
use crate::tls;
use conn::{Conn, Done, PreHead};

pub use listen::{listen, local_port};

const READ_BUF: usize = 64 * 1024;
const MAX_EVENTS: usize = 512;
const LISTENER: u64 = u64::MAX;
const TLS_LISTENER: u64 = u64::MAX - 1;
/// The HTTP/3 UDP socket (server/h3.rs).
const UDP: u64 = u64::MAX - 2;
/// A batch is written out once its buffer grows past this, even mid-pipeline.
const FLUSH_AT: usize = 128 * 1024;
/// How long a closing connection may keep sending before we drop it.
const LINGER_MS: u64 = 2000;
/// While draining, connections idle this long are closed.
const DRAIN_IDLE_MS: u64 = 250;

pub struct Worker {
    id: usize,
    shared: Arc<Shared>,
    ep: Option<Epoll>,
    listener: RawFd,
    conns: Vec<Conn>,
    free: Vec<u32>,
    open: usize,
    /// When to give freed memory back to the kernel (trim.rs).
    trim: trim::TrimTrigger,
    rbuf: Box<[u8]>,
    out: Out,
    pathbuf: Box<[u8]>,
    /// The content table this worker serves, refreshed between batches.
    table: Local<Table>,
    /// `--sites`: the pool's snapshot (pool/), refreshed between batches like `table`; None for a single site,
    /// whose requests then take the branch that never looks at a host.
    pool: Option<Local<crate::pool::Snapshot>>,
    /// HTTP/1.1 connections whose request waits for a pool site's first load (slot, gen; h1.rs `retry_parked`), and the
    /// list they are moved to while retried.
    parked: Vec<(u32, u32)>,
    parked_retry: Vec<(u32, u32)>,
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
    /// HTTPS: the listener (-1 without TLS) and the configuration new handshakes use.
    tls_listener: RawFd,
    tls_config: Option<Local<ServerConfig>>,
    /// File-backed bodies pass through here on their way into TLS records (empty without TLS).
    scratch: Box<[u8]>,
    /// The Date line followed by Strict-Transport-Security (when `--hsts` is set) and Alt-Svc (with `--http3`),
    /// for HTTPS responses; empty when neither.
    hsts_date: Vec<u8>,
    /// `--max-connections-per-worker`.
    max_conns: usize,
    pre: PreHead,
    /// The connection memory budget, what connections are charged, the idle ones oldest first (budget.rs).
    mem: budget::ConnMemory,
    /// HTTP/2: the head being framed and a redirect's Location (reused), and the per-second HPACK blocks after
    /// every head: `date`, and `date` + `strict-transport-security` for HTTPS with `--hsts`; `h2_date_of` is
    /// the Date line they were made from.
    h2_head: Vec<u8>,
    h2_loc: Vec<u8>,
    h2_date: Vec<u8>,
    h2_date_hsts: Vec<u8>,
    h2_date_of: Vec<u8>,
    /// Reusable HTTP/2 buffer sets lent to the connection being served and given back when it goes quiet
    /// (server/h2.rs, `H2_POOL` sets at most), so idle HTTP/2 connections hold none.
    h2_pool: Vec<crate::http2::Buffers<crate::http2::respond::BodyRef>>,
    /// Where the next search for a connection to evict starts (a clock hand over the slots: the connection
    /// evicted is the next in slot order after the last one, so a refilled slot is the last to go again).
    evict_from: usize,
    /// HTTP/3 (`--http3`: the worker's own UDP socket and connections, server/h3.rs), and for every worker the
    /// `Alt-Svc` line HTTPS responses advertise it with (empty when off).
    h3: Option<Box<h3::Quic>>,
    alt_svc: Vec<u8>,
    /// The per-client buckets of sites with `limits.perClient` (fairshare/): this worker's share of
    /// `--client-table-size`, allocated here once (answer/limit.rs checks it before a request is answered).
    clients: crate::fairshare::Clients,
    /// The worker's memory of checked `Authorization` values (guard/verified.rs), allocated here once.
    verified: crate::guard::Verified,
}

impl Worker {
    /// `tls_listener` is -1 when HTTPS is off.
    pub fn new(id: usize, shared: Arc<Shared>, listener: RawFd, tls_listener: RawFd) -> Worker {
        let table = Local::new(&shared.table);
        let pool = shared.pool.as_ref().map(|p| Local::new(&p.snapshot));
        let tls_config = shared.tls.as_ref().map(|t| Local::new(&t.config));
        let cfg = &shared.cfg;
        let ms = |d: std::time::Duration| (d.as_millis() as u64).max(1);
        Worker {
            id,
            ep: None,
            listener,
            conns: Vec::new(),
            free: Vec::new(),
            open: 0,
            trim: trim::TrimTrigger::default(),
            rbuf: vec![0u8; READ_BUF].into_boxed_slice(),
            out: Out::default(),
            pathbuf: vec![0u8; parser::MAX_REQUEST_LINE].into_boxed_slice(),
            table,
            pool,
            parked: Vec::new(),
            parked_retry: Vec::new(),
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
            hsts_date: Vec::new(),
            max_conns: cfg.max_connections_per_worker,
            pre: PreHead { list: slots::SlotList::EMPTY, max: shared.pre_head_per_worker.max(1) },
            mem: budget::ConnMemory::new(shared.conn_budget_per_worker),
            h2_head: Vec::with_capacity(1024),
            h2_loc: Vec::with_capacity(256),
            h2_date: Vec::new(),
            h2_date_hsts: Vec::new(),
            h2_date_of: Vec::new(),
            h2_pool: Vec::with_capacity(h2::H2_POOL),
            evict_from: 0,
            h3: None,
            alt_svc: Vec::new(),
            clients: crate::fairshare::Clients::with_bytes(
                cfg.client_table_size / shared.workers.max(1) as u64,
                crate::fairshare::table::random_seed(),
            ),
            verified: crate::guard::Verified::counted(shared.stats[id].basic_auth_checks.clone()),
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
        if let Some(fd) = self.h3_fd() {
            ep.add(fd, epoll::IN, UDP);
        }
        self.ep = Some(ep);
        let mut events = Events::with_capacity(MAX_EVENTS);
        let tick = (self.header_timeout_ms.min(self.keepalive_ms) / 4).clamp(5, 1000);
        let mut next_sweep = monotonic_ms() + tick;
        loop {
            // A request held for a pool site's load looks again soon (the site is published by another thread,
            // which does not wake this loop).
            let timeout = if self.closing {
                50
            } else if !self.parked.is_empty() {
                h1::PARK_LOOK_MS
            } else {
                tick as i32
            };
            let timeout = if self.h3.is_some() { self.h3_wait(timeout) } else { timeout };
            let n = self.ep().wait(&mut events, timeout);
            self.now_ms = monotonic_ms();
            self.date.refresh();
            self.verified.now = self.date.secs();
            self.table.refresh(&self.shared.table);
            let pool_changed = match (&mut self.pool, &self.shared.pool) {
                (Some(local), Some(p)) => local.refresh(&p.snapshot),
                _ => false,
            };
            if !self.parked.is_empty() {
                self.retry_parked(pool_changed);
            }
            self.refresh_tls();
            self.refresh_h2_date();
            for (data, flags) in events.ready(n) {
                if data == UDP {
                    self.h3_readable();
                    continue;
                }
                if data == LISTENER || data == TLS_LISTENER {
                    if self.listener >= 0 && self.accept_paused_until == 0 {
                        self.accept(data == TLS_LISTENER);
                    }
                    continue;
                }
                let idx = (data & 0xffff_ffff) as usize;
                let gen = (data >> 32) as u32;
                if idx >= self.conns.len() || !self.conns[idx].is_active() || self.conns[idx].gen != gen {
                    continue;
                }
                if flags & (epoll::HUP | epoll::RDHUP) != 0 {
                    self.conns[idx].peer_closed = true;
                }
                if flags & (epoll::IN | epoll::ERR | epoll::HUP | epoll::RDHUP) != 0 {
                    self.on_readable(idx);
                }
                if flags & epoll::OUT != 0 && self.conns[idx].is_active() && self.conns[idx].gen == gen {
                    self.on_writable(idx);
                }
            }
            if self.h3.is_some() {
                self.h3_turn();
            }
            if self.now_ms >= next_sweep || self.closing {
                next_sweep = self.now_ms + tick;
                if !self.closing && self.shared.stop_accepting.load(Ordering::Acquire) {
                    self.start_closing();
                }
                self.sweep();
                if self.trim.should_trim(self.open) {
                    sys::mem::trim_heap();
                }
                if self.closing && self.open == 0 && self.h3_idle() {
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
        let (Some(p), Some(local)) = (&self.shared.tls, &mut self.tls_config) else { return };
        local.refresh(&p.config);
        // The site value's HSTS comes with the table (a reload may add, change or drop it: applied within a second).
        // With --http3, the Alt-Svc line rides along (server/h3.rs; empty otherwise).
        let hsts = self.table.value.hsts.as_deref();
        if hsts.is_none() && self.alt_svc.is_empty() {
            self.hsts_date.clear();
            return;
        }
        let d = self.date.line();
        if !self.hsts_date.starts_with(d) {
            self.hsts_date.clear();
            self.hsts_date.extend_from_slice(d);
            if let Some(h) = hsts {
                self.hsts_date.extend_from_slice(b"Strict-Transport-Security: ");
                self.hsts_date.extend_from_slice(h.as_bytes());
                self.hsts_date.extend_from_slice(b"\r\n");
            }
            self.hsts_date.extend_from_slice(&self.alt_svc);
        }
    }

    /// The HTTP/2 Date blocks, when the second turned (one comparison per loop iteration otherwise).
    fn refresh_h2_date(&mut self) {
        let d = self.date.line();
        if self.h2_date_of == d && self.h2_date_hsts.is_empty() == self.hsts_date.is_empty() {
            return;
        }
        self.h2_date_of.clear();
        self.h2_date_of.extend_from_slice(d);
        crate::http2::respond::date_block(&mut self.h2_date, d);
        if self.hsts_date.is_empty() {
            self.h2_date_hsts.clear();
        } else {
            crate::http2::respond::date_block(&mut self.h2_date_hsts, &self.hsts_date);
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
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Stop,
}
