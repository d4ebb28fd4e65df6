//! `--proxy-protocol`: every connection to the TCP listeners opens with a PROXY protocol v2 header (proxy_v2.rs)
//! from the load balancer in front, and its source address becomes the connection's client (`Conn::peer`): what
//! the per-client limits (fairshare/) and the access log see. Nothing else is read from a connection until its
//! header is: not HTTP, not a TLS record.
//!
//! The header is read with `MSG_PEEK` into the worker's read buffer, at most `proxy_v2::MAX_LEN` bytes, and only
//! once it is whole are exactly its bytes taken from the socket: what follows stays in the kernel for the TLS or
//! HTTP reader, which then runs as without the option (no buffer handed over, nothing copied for TLS). Until then
//! the connection is one waiting for its request head, so the pre-head bound and the header timeout apply to it:
//! a sender that never finishes its header is closed at `--header-timeout` (close.rs), and a flood of such
//! connections is held to the pre-head budget like any slowloris. A connection whose first bytes are not a valid
//! header is closed and counted (`hyperstatic_proxy_protocol_refused_total`): with the option on, a client cannot
//! reach the server without the load balancer's header, so it cannot claim an address of its own choosing.
//!
//! LOCAL (the load balancer's own health check) and UNSPEC/UNIX headers keep the connection's own address. The TLS
//! handshake limit, which at accept would see only the load balancer's address, is checked here once the client's
//! is known, still before the handshake begins.

use super::Worker;
use crate::counters::bump;
use crate::proxy_v2::{self, Parsed};
use crate::sys::{io, socket};

/// What reading a connection's PROXY header came to.
pub(super) enum Header {
    /// Not whole yet: wait for more bytes (the socket is edge-triggered; new bytes bring a new event).
    Wait,
    /// Read and taken from the socket; the connection goes on to TLS or HTTP.
    Read,
    /// The connection was closed: not a valid header, an error, an EOF first, or a client past its handshakes.
    Closed,
}

impl Worker {
    /// Reads the PROXY v2 header of the connection at `idx` (`Conn::proxy_wait`).
    pub(super) fn read_proxy_header(&mut self, idx: usize) -> Header {
        let fd = self.conns[idx].fd;
        let n = loop {
            match socket::peek(fd, &mut self.rbuf[..proxy_v2::MAX_LEN]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Header::Wait,
                Err(_) => {
                    self.close(idx);
                    return Header::Closed;
                }
            }
        };
        if n == 0 {
            // EOF before a byte: a TCP check of the port, nothing to refuse.
            self.close(idx);
            return Header::Closed;
        }
        let (used, source) = match proxy_v2::parse(&self.rbuf[..n]) {
            Ok(Parsed::Partial) => {
                self.conns[idx].last_ms = self.now_ms;
                return Header::Wait;
            }
            Ok(Parsed::Done { used, source }) => (used, source),
            Err(_) => {
                bump(&self.stats().proxy_refused, 1);
                self.close(idx);
                return Header::Closed;
            }
        };
        // Take exactly the header: its bytes are in the socket (just peeked), so the reads return at once.
        let mut taken = 0;
        while taken < used {
            match io::read(fd, &mut self.rbuf[taken..used]) {
                Ok(k) if k > 0 => taken += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                _ => {
                    self.close(idx);
                    return Header::Closed;
                }
            }
        }
        let c = &mut self.conns[idx];
        c.proxy_wait = false;
        c.last_ms = self.now_ms;
        if source.is_some() {
            c.peer = source;
        }
        let peer = c.peer;
        if c.tls.is_some() && !self.handshake_allowed(peer) {
            self.close(idx);
            return Header::Closed;
        }
        Header::Read
    }
}
