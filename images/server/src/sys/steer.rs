//! Steering each QUIC datagram to the worker that owns its connection (docs/design/http3.md, "Steering"). Every
//! worker has its own UDP socket on the HTTP/3 port, all of them in one `SO_REUSEPORT` group, and a classic BPF
//! program attached to the group (`SO_ATTACH_REUSEPORT_CBPF`, which needs no privilege, unlike eBPF) tells the
//! kernel which socket a datagram goes to:
//!
//! * a short-header packet (the first byte's high bit clear: every packet after the handshake) goes to socket
//!   `payload[1] % sockets`, the first byte of its Destination Connection ID, which is the index of the worker
//!   that issued the ID (quic/cid.rs). So a client whose address or port changes (NAT rebinding, migration)
//!   still reaches the worker that holds its connection, although the kernel's 4-tuple hash would pick another;
//! * a long-header packet (Initial, 0-RTT, Handshake) gets an index past the group, and the kernel falls back to
//!   its 4-tuple hash (`reuseport_select_sock`): a client may not move before the handshake is confirmed (RFC
//!   9000 §9), so a handshake's packets all come from one 4-tuple and reach the worker that accepted it.
//!
//! The program sees the datagram from its UDP payload on (the kernel pulls the UDP header first). A socket's
//! index is its place in the group, the order the sockets were bound in, which holds as long as none is closed
//! (the kernel fills a closed socket's slot with the last one): the server's live as long as the process.

use std::io;
use std::os::fd::RawFd;

// Classic BPF opcodes (linux/bpf_common.h), spelled out: libc's types for them differ between its versions.
// BPF_LD is 0x00: a load is its size and mode alone.
const LD_B_ABS: u16 = 0x10 | 0x20;
const JMP_JSET_K: u16 = 0x05 | 0x40;
const ALU_MOD_K: u16 = 0x04 | 0x90;
const RET_A: u16 = 0x06 | 0x10;
const RET_K: u16 = 0x06;
/// An index no group has: the kernel then picks by its 4-tuple hash.
const BY_HASH: u32 = u32::MAX;

/// The steering program for a group of `sockets` sockets (at least 1).
fn program(sockets: u32) -> [libc::sock_filter; 6] {
    let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    [
        op(LD_B_ABS, 0, 0, 0),        // A = the first byte
        op(JMP_JSET_K, 3, 0, 0x80),   // a long header: to the hash (instruction 5)
        op(LD_B_ABS, 0, 0, 1),        // A = the DCID's first byte: the worker that issued it
        op(ALU_MOD_K, 0, 0, sockets), // an ID naming no socket of this group still lands on one
        op(RET_A, 0, 0, 0),           // that socket
        op(RET_K, 0, 0, BY_HASH),     // the kernel's 4-tuple hash
    ]
}

/// Attaches the steering program to the `SO_REUSEPORT` group `fd` belongs to, which has `sockets` sockets.
pub fn attach(fd: RawFd, sockets: u32) -> io::Result<()> {
    let mut filter = program(sockets.max(1));
    let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_mut_ptr() };
    // SAFETY: setsockopt reads a sock_fprog naming `filter`, both locals that outlive the call; the kernel copies
    // the program.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_REUSEPORT_CBPF,
            &prog as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::socket::local_addr;
    use super::super::udp::{self, recv_batch, send_batch, Outgoing, Received, MAX_BATCH};
    use super::*;
    use std::net::SocketAddr;

    /// `n` sockets in one group on a free loopback port, steered.
    fn group(n: usize) -> (Vec<RawFd>, SocketAddr) {
        let first = udp::socket("127.0.0.1:0".parse().unwrap()).unwrap();
        let at = local_addr(first).unwrap();
        let mut fds = vec![first];
        fds.extend((1..n).map(|_| udp::socket(at).expect("join the group")));
        attach(fds[0], n as u32).expect("attach the steering program");
        (fds, at)
    }

    /// Everything queued on `fd` after the senders are done (loopback delivers within the send call).
    fn drain(fd: RawFd) -> Vec<Vec<u8>> {
        let mut buf = vec![0u8; 2048 * MAX_BATCH];
        let mut meta = [Received::default(); MAX_BATCH];
        let mut got = Vec::new();
        loop {
            let n = recv_batch(fd, &mut buf, 2048, &mut meta).unwrap();
            got.extend(meta[..n].iter().enumerate().map(|(i, m)| buf[i * 2048..i * 2048 + m.len].to_vec()));
            if n == 0 {
                return got;
            }
        }
    }

    fn send(from: RawFd, to: SocketAddr, data: &[u8]) {
        assert_eq!(send_batch(from, &[Outgoing { to, data, segment: None, ecn: 0 }]).sent, 1);
    }

    /// A short-header packet reaches the socket its DCID's first byte names, from whatever port it comes: the
    /// clients below are 24 sockets, whose 4-tuple hashes spread over the group, and each sends one packet per
    /// worker. Without the program about two thirds of them would land elsewhere.
    #[test]
    fn short_headers_go_to_the_socket_their_connection_id_names() {
        let (fds, at) = group(3);
        let clients: Vec<RawFd> = (0..24).map(|_| udp::socket("127.0.0.1:0".parse().unwrap()).unwrap()).collect();
        for (c, &fd) in clients.iter().enumerate() {
            for worker in 0..3u8 {
                send(fd, at, &[0x41, worker, 0xAA, c as u8, 0, 0, 0, 0]);
            }
        }
        for (k, &fd) in fds.iter().enumerate() {
            let got = drain(fd);
            assert_eq!(got.len(), 24, "socket {k} got {} packets, want one from each client", got.len());
            assert!(got.iter().all(|p| p[1] == k as u8), "socket {k} got a packet naming another worker");
        }
        // A byte past the group still lands on one of its sockets (modulo), not on the hash.
        send(clients[0], at, &[0x41, 7, 0]);
        assert_eq!(drain(fds[1]).len(), 1, "worker byte 7 in a group of 3 is socket 1");
        fds.iter().chain(&clients).for_each(|&fd| super::super::close(fd));
    }

    /// Long-header packets go by the 4-tuple: all of one client's reach one socket, whatever their DCID says,
    /// and different clients are spread (the kernel's hash, not socket 0 for everyone).
    #[test]
    fn long_headers_go_by_the_clients_address() {
        let (fds, at) = group(2);
        let clients: Vec<RawFd> = (0..32).map(|_| udp::socket("127.0.0.1:0".parse().unwrap()).unwrap()).collect();
        let mut landed = Vec::new();
        for (c, &fd) in clients.iter().enumerate() {
            for dcid_first in [0u8, 1, 2, 3] {
                // An Initial (0xC0, version 1, DCID length 8, DCID ...), the client's own random DCID.
                send(fd, at, &[0xC0, 0, 0, 0, 1, 8, dcid_first, c as u8, 0, 0, 0, 0, 0, 0]);
            }
            let counts: Vec<usize> = fds.iter().map(|&s| drain(s).len()).collect();
            assert!(
                counts.contains(&4) && counts.iter().sum::<usize>() == 4,
                "client {c}'s Initials split: {counts:?}"
            );
            landed.push(counts.iter().position(|&n| n == 4).unwrap());
        }
        assert!(landed.contains(&0) && landed.contains(&1), "32 clients all hashed to one socket: {landed:?}");
        fds.iter().chain(&clients).for_each(|&fd| super::super::close(fd));
    }
}
