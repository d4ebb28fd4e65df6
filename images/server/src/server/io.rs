//! A connection's IO: readiness events in, reads (plain, or decrypted through rustls) into the worker's buffer,
//! the batch written with one gathered write (what the socket does not take becomes the connection's
//! `Pending`), and each response observed once the kernel has it.

use super::conn::{Done, Proto, State, Then};
use super::{Flow, Worker, READ_BUF};
use crate::access;
use crate::counters::bump;
use crate::http1::out::{self, Pending, WriteResult};
use crate::log;
use crate::state::WorkerStats;
use crate::sys::{errno, io};
use crate::timing;
use crate::tls;

impl Worker {
    pub(super) fn on_readable(&mut self, idx: usize) {
        if self.conns[idx].state == State::Lingering {
            self.drain_linger(idx);
            return;
        }
        if self.conns[idx].pending.is_some() {
            self.conns[idx].paused = true;
            return;
        }
        self.process(idx, true);
    }

    pub(super) fn on_writable(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let Some(p) = c.pending.as_mut() else { return };
        let mut written = 0;
        let r = match c.tls.as_deref_mut() {
            Some(t) => tls::stream::write_pending(p, t, c.fd, &mut written, &mut self.scratch),
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
                if let Proto::Http2(_) = c.proto {
                    self.resume_h2(idx);
                } else if let Then::Close { .. } = c.then {
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
        self.settle(idx);
    }

    /// Reads what the socket has (when `read` is set), answers every complete request in the buffer, writes
    /// the batch, keeps an incomplete tail for later; then the connection's lists and charge follow (`settle`).
    pub(super) fn process(&mut self, idx: usize, read: bool) {
        self.process_input(idx, read);
        self.settle(idx);
    }

    pub(super) fn process_input(&mut self, idx: usize, mut read: bool) {
        // `--proxy-protocol`: nothing is read before the connection's PROXY header (proxy.rs).
        if self.conns[idx].proxy_wait && !matches!(self.read_proxy_header(idx), super::proxy::Header::Read) {
            return;
        }
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
            let flow = match self.conns[idx].proto {
                Proto::Http1 => self.answer(idx, len),
                Proto::Http2(_) => self.answer_h2(idx, len),
                Proto::Sniff => self.sniff(idx, len),
            };
            match flow {
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
    pub(super) fn read_tls(&mut self, idx: usize, len: usize) -> Option<(usize, bool)> {
        let c = &mut self.conns[idx];
        let t = c.tls.as_deref_mut().expect("a TLS connection");
        let (n, st) = tls::stream::fill(t, c.fd, &mut self.rbuf[len..]);
        let mut h2 = false;
        if !c.handshake_counted {
            let s = &self.shared.stats[self.id];
            if !t.is_handshaking() {
                c.handshake_counted = true;
                h2 = t.alpn_protocol() == Some(b"h2");
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
        if h2 {
            self.start_h2(idx);
        }
        if len + n == 0 {
            // Nothing to answer; handshake records or session tickets (and our HTTP/2 SETTINGS) may be
            // waiting to go out.
            let flow = match self.conns[idx].proto {
                Proto::Http2(_) => self.flush_h2(idx),
                _ => self.flush(idx),
            };
            if let Flow::Continue = flow {
                self.close_if_peer_closed(idx);
            }
            return None;
        }
        Some((n, st == tls::stream::Fill::Full))
    }

    /// Writes the batch; what the socket does not take becomes the connection's Pending.
    pub(super) fn flush(&mut self, idx: usize) -> Flow {
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
                let hold: crate::http1::out::Hold = match &self.pool {
                    Some(p) => p.value.clone(),
                    None => self.table.value.clone(),
                };
                let files = std::mem::take(&mut self.out.files);
                let p = Pending::from_rest(&self.out.buf, &self.out.segs[cur..], hold, files);
                self.out.clear();
                let c = &mut self.conns[idx];
                c.pending = Some(p);
                c.pending_gen = self.table.generation;
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
}

/// The batch's responses were handed to the kernel: each is observed in the histogram and its access-log
/// line (if sampled) is completed with the duration and written, one write(2) per line as log.rs does.
pub(super) fn complete(done: &mut Vec<Done>, lines: &mut Vec<u8>, line: &mut Vec<u8>, stats: &WorkerStats) {
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
