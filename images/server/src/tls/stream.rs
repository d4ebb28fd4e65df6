//! rustls over the worker's non-blocking sockets: ciphertext in with `read(2)`, plaintext out into the worker's
//! read buffer, the batch's segments in as plaintext and ciphertext out with `writev(2)`.
//!
//! What rustls allocates, and why it is bounded: a connection's `ServerConnection` (boxed, once per accepted
//! connection, with its handshake state); its incoming record buffer, which grows to one maximal record
//! (about 16 KB) and is reused; decrypted plaintext chunks, at most 16 KB queued because `fill` drains them
//! into the worker buffer before reading more; and one `Vec` per outgoing record (at most 16 KB each), queued
//! up to rustls's 64 KB send limit: `write_segs` stops handing plaintext over when the limit is reached and
//! waits for the socket. Handshakes also allocate (certificate messages, key shares) and take the session
//! cache's and ticketer's locks; that is per connection, not per request. Bodies sent with sendfile on the
//! plain port are read into a worker scratch buffer here (no kTLS), 16 KB at a time.

use std::io::{self, IoSlice, Read, Write};
use std::os::fd::RawFd;

use rustls::ServerConnection;

use crate::http1::out::{self, Pending, Seg, WriteResult};

/// File-backed bodies are read this much at a time (one TLS record's worth of plaintext).
pub const SCRATCH: usize = 16 * 1024;
const IOV_BATCH: usize = 64;

use crate::sys::io::SockIo as Fd;

#[derive(Debug, PartialEq, Eq)]
pub enum Fill {
    /// The socket has nothing more for now.
    Again,
    /// The buffer is full; there may be more.
    Full,
    /// The peer closed (close_notify or EOF).
    Eof,
    /// Protocol error or socket error: the connection must close (an alert was queued and tried).
    Failed,
}

/// Reads ciphertext until the socket is drained (edge-triggered epoll needs that) or `buf` is full, and
/// decrypts into `buf`. Returns the plaintext length and why it stopped.
pub fn fill(conn: &mut ServerConnection, fd: RawFd, buf: &mut [u8]) -> (usize, Fill) {
    let mut n = 0;
    let mut eof = false;
    loop {
        if n == buf.len() {
            return (n, Fill::Full);
        }
        match conn.reader().read(&mut buf[n..]) {
            Ok(0) => return (n, Fill::Eof), // close_notify received
            Ok(k) => {
                n += k;
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return (n, Fill::Eof), // EOF without close_notify
        }
        if eof {
            return (n, Fill::Eof);
        }
        match conn.read_tls(&mut Fd(fd)) {
            Ok(0) => eof = true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return (n, Fill::Again),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return (n, Fill::Failed),
        }
        if conn.process_new_packets().is_err() {
            // Tell the peer why (the alert rustls queued), if the socket takes it now.
            let _ = conn.write_tls(&mut Fd(fd));
            return (n, Fill::Failed);
        }
    }
}

/// Sends what rustls has queued: Done, Blocked (the socket is full) or Failed.
pub fn drain(conn: &mut ServerConnection, fd: RawFd) -> WriteResult {
    while conn.wants_write() {
        match conn.write_tls(&mut Fd(fd)) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return WriteResult::Blocked,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return WriteResult::Failed,
        }
    }
    WriteResult::Done
}

/// `out::write_segs` for a TLS connection: hands segments from `segs[*cur]` to rustls as plaintext (as much as
/// its send limit takes), writes the records, and repeats until everything is on the socket or it blocks.
/// `written` counts plaintext bytes taken. Done means no plaintext left and no record queued.
pub fn write_segs(
    conn: &mut ServerConnection,
    fd: RawFd,
    base: &[u8],
    segs: &mut [Seg],
    cur: &mut usize,
    written: &mut u64,
    scratch: &mut [u8],
) -> WriteResult {
    loop {
        match drain(conn, fd) {
            WriteResult::Done => {}
            other => return other,
        }
        if *cur >= segs.len() {
            return WriteResult::Done;
        }
        let taken = match segs[*cur] {
            Seg::File { fd: ffd, off, len } => {
                let want = (len as usize).min(scratch.len());
                let r = match crate::sys::io::pread(ffd, &mut scratch[..want], off) {
                    Ok(r) if r > 0 => r,
                    _ => return WriteResult::Failed, // unreadable or shrank under us
                };
                conn.writer().write(&scratch[..r])
            }
            _ => {
                // Consecutive memory segments in one call: rustls fills whole records across them.
                let mut iov: [IoSlice<'_>; IOV_BATCH] = [IoSlice::new(&[]); IOV_BATCH];
                let mut k = 0;
                for s in &segs[*cur..] {
                    if k == IOV_BATCH {
                        break;
                    }
                    iov[k] = match *s {
                        Seg::Buf { start, end } => IoSlice::new(&base[start..end]),
                        // Table memory held alive by the worker's or Pending's Arc<Table>.
                        Seg::Mem(m) => IoSlice::new(m.bytes()),
                        Seg::File { .. } => break,
                    };
                    k += 1;
                }
                conn.writer().write_vectored(&iov[..k])
            }
        };
        let Ok(n) = taken else { return WriteResult::Failed };
        if n == 0 && !conn.wants_write() {
            // Nothing taken with room to spare: only an empty segment does that; step over it.
            *cur += 1;
            continue;
        }
        *written += n as u64;
        out::advance(segs, cur, n);
    }
}

/// `Pending::write` through a TLS connection; with no segments left it still sends queued records. Here rather
/// than beside `Pending::write`, so that http1/out.rs, whose segments tls/ writes, does not import tls/ in turn.
pub fn write_pending(
    p: &mut Pending,
    conn: &mut ServerConnection,
    fd: RawFd,
    written: &mut u64,
    scratch: &mut [u8],
) -> WriteResult {
    let segs = p.segs.make_contiguous();
    let mut cur = 0;
    let r = write_segs(conn, fd, &p.bytes, segs, &mut cur, written, scratch);
    p.segs.drain(..cur);
    r
}
