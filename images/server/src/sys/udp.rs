//! UDP for QUIC (server/h3.rs): a non-blocking socket per worker on the TLS listener's address (one `SO_REUSEPORT`
//! group, steered by connection ID: steer.rs), datagrams received and sent in batches (`recvmmsg`, `sendmmsg`: one
//! system call for up to `MAX_BATCH` messages), and UDP GSO on send: a message of several equal-sized datagrams
//! (quinn-proto's `Transmit::segment_size`) goes to the kernel as one buffer with a `UDP_SEGMENT` control message,
//! which the kernel (or the NIC) cuts into datagrams. A device that cannot checksum the segments answers `EIO`; the
//! caller turns GSO off for the socket then (`Sent::gso_failed`).
//!
//! ECN (RFC 9000 §13.4): each datagram's two ECN bits are read on receive (`IP_RECVTOS`/`IPV6_RECVTCLASS`: a
//! control message per datagram) for quinn-proto to count in its ACKs, and set on send (an `IP_TOS` or
//! `IPV6_TCLASS` control message per message) as quinn-proto asks: ECT(0) while the path validates it. A kernel
//! that refuses the send-side message answers `EINVAL`; the caller stops marking then (`Sent::ecn_failed`).
//!
//! Not here (yet): GRO on receive (a receive slot holds one datagram), `IP_PKTINFO` (a wildcard bind answers from
//! the address the kernel's routing picks, which is the one the client reached on a single-address pod).
//! The socket's buffers are asked for (`BUFFER`); the kernel caps them at `net.core.rmem_max`/`wmem_max`, which
//! are per node: `buffer_sizes` says what was granted, for the log.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::RawFd;

use super::socket::{bind, raw_sockaddr, set_int, sockaddr};

/// Messages per `recvmmsg`/`sendmmsg` call.
pub const MAX_BATCH: usize = 32;
/// The socket buffer size asked for (each direction).
const BUFFER: libc::c_int = 4 << 20;

// Linux values, spelled out: libc's gnu target does not export them all.
const SOL_UDP: libc::c_int = 17;
const UDP_SEGMENT: libc::c_int = 103;
const IP_MTU_DISCOVER: libc::c_int = 10;
const IPV6_MTU_DISCOVER: libc::c_int = 23;
/// Don't-fragment set, the kernel's path-MTU cache not applied: quinn-proto probes the path MTU itself.
const PMTUDISC_PROBE: libc::c_int = 3;
const IP_TOS: libc::c_int = 1;
const IP_RECVTOS: libc::c_int = 13;
const IPV6_RECVTCLASS: libc::c_int = 66;
const IPV6_TCLASS: libc::c_int = 67;
/// The ECN field: the low two bits of the IPv4 TOS byte and of the IPv6 Traffic Class.
const ECN_MASK: u8 = 0b11;
/// Control bytes per message, u64-aligned as cmsghdr needs: room for `UDP_SEGMENT` (a u16) and `IP_TOS` or
/// `IPV6_TCLASS` (an int) on send, and the one TOS or Traffic Class message received (24 bytes each).
const CONTROL: usize = 8;

/// A non-blocking UDP socket bound to `addr` (dual-stack on `[::]`, as the TCP listeners) with `SO_REUSEPORT`,
/// large buffers asked for and the DF bit set on everything sent. Closed on failure.
pub fn socket(addr: SocketAddr) -> io::Result<RawFd> {
    let family = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: no pointers.
    let fd = unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let setup = || -> io::Result<()> {
        if addr.is_ipv6() {
            set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 0)?;
            set_int(fd, libc::IPPROTO_IPV6, IPV6_MTU_DISCOVER, PMTUDISC_PROBE)?;
        }
        // On a dual-stack socket the IPv4 option applies to IPv4 peers; an IPv6-only kernel refuses it harmlessly.
        let _ = set_int(fd, libc::IPPROTO_IP, IP_MTU_DISCOVER, PMTUDISC_PROBE);
        // Each datagram's ECN bits with it; refused, datagrams read as Not-ECT and quinn-proto's ECN validation
        // of the path fails, as without ECN.
        let _ = set_int(fd, libc::IPPROTO_IP, IP_RECVTOS, 1);
        if addr.is_ipv6() {
            let _ = set_int(fd, libc::IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
        }
        // The FORCE options pass the node's cap (they need CAP_NET_ADMIN, which a pod normally lacks); the plain
        // ones are capped at net.core.rmem_max / wmem_max (`buffers_capped` tells, for the log).
        if set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, BUFFER).is_err() {
            let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, BUFFER);
        }
        if set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, BUFFER).is_err() {
            let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, BUFFER);
        }
        // One socket per worker on the port, in one group the kernel spreads datagrams over (sys/steer.rs).
        set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
        if bind(fd, addr) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    };
    if let Err(e) = setup() {
        super::close(fd);
        return Err(e);
    }
    Ok(fd)
}

/// The receive and send buffer sizes the kernel granted (it doubles what it keeps for bookkeeping; this is
/// what getsockopt reports).
pub fn buffer_sizes(fd: RawFd) -> (usize, usize) {
    let get = |name| super::socket::int_opt(fd, libc::SOL_SOCKET, name).map_or(0, |v| v.max(0) as usize);
    (get(libc::SO_RCVBUF), get(libc::SO_SNDBUF))
}

/// Whether the kernel granted less than `BUFFER` either way (it reports twice what it was asked for, its
/// bookkeeping included): the node's net.core.rmem_max / wmem_max are lower, and a burst of a few hundred
/// datagrams beyond them is dropped (QUIC resends it, at a cost).
pub fn buffers_capped(fd: RawFd) -> bool {
    let (r, s) = buffer_sizes(fd);
    r.min(s) < 2 * BUFFER as usize
}

/// Whether the kernel knows UDP GSO for this socket (Linux 4.18+).
pub fn gso_supported(fd: RawFd) -> bool {
    super::socket::int_opt(fd, SOL_UDP, UDP_SEGMENT).is_ok()
}

/// One received datagram: its length in its slot, where it came from, whether it was longer than the slot (then
/// cut: the caller drops it), and its ECN bits (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
#[derive(Clone, Copy, Debug)]
pub struct Received {
    pub len: usize,
    pub from: SocketAddr,
    pub truncated: bool,
    pub ecn: u8,
}

impl Default for Received {
    fn default() -> Received {
        Received { len: 0, from: SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0).into(), truncated: false, ecn: 0 }
    }
}

/// Receives up to `out.len()` datagrams (at most `MAX_BATCH`, and as many as `buf` has slots of `slot` bytes),
/// datagram i into `buf[i * slot..]`. Ok(0) when nothing is queued.
pub fn recv_batch(fd: RawFd, buf: &mut [u8], slot: usize, out: &mut [Received]) -> io::Result<usize> {
    let n = out.len().min(MAX_BATCH).min(buf.len() / slot.max(1));
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: plain C structs for which all-zero is valid.
    let mut addrs: [libc::sockaddr_storage; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut iovs: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    let mut control = [[0u64; CONTROL]; MAX_BATCH];
    let base = buf.as_mut_ptr();
    for i in 0..n {
        // SAFETY: i * slot + slot <= buf.len() (n is bounded by buf.len() / slot), so the pointer stays inside buf.
        iovs[i] = libc::iovec { iov_base: unsafe { base.add(i * slot) } as *mut libc::c_void, iov_len: slot };
        let h = &mut msgs[i].msg_hdr;
        h.msg_name = &mut addrs[i] as *mut _ as *mut libc::c_void;
        h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        h.msg_iov = &mut iovs[i];
        h.msg_iovlen = 1;
        h.msg_control = control[i].as_mut_ptr() as *mut libc::c_void;
        h.msg_controllen = std::mem::size_of_val(&control[i]);
    }
    let got = loop {
        // SAFETY: n message headers, each naming one iovec into `buf` and one address storage, all of which
        // outlive the call; the kernel writes at most iov_len bytes and msg_namelen address bytes.
        let r = unsafe {
            libc::recvmmsg(fd, msgs.as_mut_ptr(), n as libc::c_uint, libc::MSG_DONTWAIT, std::ptr::null_mut())
        };
        if r >= 0 {
            break r as usize;
        }
        match super::errno() {
            libc::EINTR => continue,
            libc::EAGAIN => return Ok(0),
            _ => return Err(io::Error::last_os_error()),
        }
    };
    for i in 0..got {
        let m = &msgs[i];
        out[i] = Received {
            len: (m.msg_len as usize).min(slot),
            from: sockaddr(&addrs[i]).unwrap_or_else(|| Received::default().from),
            truncated: m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            ecn: ecn_of(&m.msg_hdr),
        };
    }
    Ok(got)
}

/// The ECN bits among a received message's control messages: `IP_TOS` (one byte, an IPv4 datagram, on a
/// dual-stack socket too) or `IPV6_TCLASS` (an int). 0 when neither came (or the kernel cut them: MSG_CTRUNC).
fn ecn_of(h: &libc::msghdr) -> u8 {
    // SAFETY: the kernel filled msg_control up to msg_controllen (at most the buffer recv_batch gave it, which
    // outlives this call); CMSG_FIRSTHDR/NXTHDR stay within that length, and each data read is within its cmsg.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            let (level, ty, len) = ((*c).cmsg_level, (*c).cmsg_type, (*c).cmsg_len as usize);
            let data = libc::CMSG_DATA(c);
            let have = len.saturating_sub(libc::CMSG_LEN(0) as usize);
            match (level, ty) {
                (libc::IPPROTO_IP, IP_TOS) if have >= 1 => return *data & ECN_MASK,
                (libc::IPPROTO_IPV6, IPV6_TCLASS) if have >= 4 => {
                    return (std::ptr::read_unaligned(data as *const libc::c_int) as u8) & ECN_MASK
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    0
}

/// One message to send: `data` to `to`, cut into datagrams of `segment` bytes (the last may be shorter) when
/// set and shorter than `data` (GSO), each marked with the ECN bits `ecn` (0: left Not-ECT).
#[derive(Clone, Copy)]
pub struct Outgoing<'a> {
    pub to: SocketAddr,
    pub data: &'a [u8],
    pub segment: Option<u16>,
    pub ecn: u8,
}

/// What a `send_batch` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// Messages the kernel took.
    pub sent: usize,
    /// Messages refused (the socket buffer full, an unreachable peer, ...): dropped, as a lossy path would;
    /// QUIC's loss recovery sends their content again.
    pub dropped: usize,
    /// A GSO message was refused with EIO: the device cannot offload, turn GSO off.
    pub gso_failed: bool,
    /// A message with ECN bits was refused with EINVAL: the kernel takes no TOS control message here, stop
    /// marking.
    pub ecn_failed: bool,
}

/// Sends `msgs` with as few `sendmmsg` calls as the kernel allows. Never blocks: what does not fit is dropped.
pub fn send_batch(fd: RawFd, msgs: &[Outgoing]) -> Sent {
    let mut report = Sent::default();
    let mut at = 0;
    while at < msgs.len() {
        let chunk = &msgs[at..msgs.len().min(at + MAX_BATCH)];
        match send_some(fd, chunk) {
            Ok(k) => {
                report.sent += k;
                at += k;
            }
            Err(e) => {
                let errno = e.raw_os_error().unwrap_or(0);
                if errno == libc::EINTR {
                    continue;
                }
                if errno == libc::EAGAIN {
                    // The socket buffer is full: the rest of this batch would meet the same.
                    report.dropped += msgs.len() - at;
                    break;
                }
                if errno == libc::EIO && chunk[0].segment.is_some() {
                    report.gso_failed = true;
                }
                if errno == libc::EINVAL && chunk[0].ecn != 0 {
                    report.ecn_failed = true;
                }
                // This message is refused (EMSGSIZE, ECONNREFUSED from an earlier ICMP, ...): skip it.
                report.dropped += 1;
                at += 1;
            }
        }
    }
    report
}

/// One `sendmmsg` of up to MAX_BATCH messages: how many the kernel took, or the first one's error.
fn send_some(fd: RawFd, chunk: &[Outgoing]) -> io::Result<usize> {
    let n = chunk.len().min(MAX_BATCH);
    // SAFETY: plain C structs for which all-zero is valid.
    let mut addrs: [libc::sockaddr_storage; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut iovs: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    let mut control = [[0u64; CONTROL]; MAX_BATCH];
    for (i, o) in chunk.iter().take(n).enumerate() {
        let (ss, len) = raw_sockaddr(o.to);
        addrs[i] = ss;
        iovs[i] = libc::iovec { iov_base: o.data.as_ptr() as *mut libc::c_void, iov_len: o.data.len() };
        let h = &mut msgs[i].msg_hdr;
        h.msg_name = &mut addrs[i] as *mut _ as *mut libc::c_void;
        h.msg_namelen = len;
        h.msg_iov = &mut iovs[i];
        h.msg_iovlen = 1;
        let segment = o.segment.filter(|&s| (s as usize) < o.data.len());
        if segment.is_none() && o.ecn == 0 {
            continue;
        }
        h.msg_control = control[i].as_mut_ptr() as *mut libc::c_void;
        h.msg_controllen = std::mem::size_of_val(&control[i]);
        // An IPv4 peer (on a dual-stack socket: an IPv4-mapped address) is sent to by the IPv4 path, which reads
        // IP_TOS and ignores IPV6_TCLASS.
        let v4 = match o.to {
            SocketAddr::V4(_) => true,
            SocketAddr::V6(a) => a.ip().to_ipv4_mapped().is_some(),
        };
        let mut used = 0;
        // SAFETY: msg_control points at CONTROL zeroed, aligned u64s that outlive the call, room for both
        // messages (CMSG_SPACE(2) + CMSG_SPACE(4) = 48 bytes of 64): the first header exists, and NXTHDR of a
        // header whose length is set stays inside msg_controllen while room for the next one remains.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            if let Some(seg) = segment {
                (*c).cmsg_level = SOL_UDP;
                (*c).cmsg_type = UDP_SEGMENT;
                (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as usize;
                std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut u16, seg);
                used += libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize;
                c = libc::CMSG_NXTHDR(h, c);
            }
            if o.ecn != 0 {
                debug_assert!(!c.is_null());
                (*c).cmsg_level = if v4 { libc::IPPROTO_IP } else { libc::IPPROTO_IPV6 };
                (*c).cmsg_type = if v4 { IP_TOS } else { IPV6_TCLASS };
                (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
                std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::c_int, (o.ecn & ECN_MASK) as libc::c_int);
                used += libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
            }
        }
        h.msg_controllen = used;
    }
    // SAFETY: n headers whose names, iovecs (over the callers' slices) and control buffers outlive the call; the
    // kernel only reads them (and writes msg_len).
    let r = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as libc::c_uint, libc::MSG_DONTWAIT) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (RawFd, SocketAddr, RawFd, SocketAddr) {
        let a = socket("127.0.0.1:0".parse().unwrap()).unwrap();
        let b = socket("127.0.0.1:0".parse().unwrap()).unwrap();
        let (aa, ba) = (super::super::socket::local_addr(a).unwrap(), super::super::socket::local_addr(b).unwrap());
        (a, aa, b, ba)
    }

    fn recv_all(fd: RawFd, want: usize) -> Vec<(Vec<u8>, SocketAddr)> {
        recv_all_ecn(fd, want).into_iter().map(|(d, from, _)| (d, from)).collect()
    }

    fn recv_all_ecn(fd: RawFd, want: usize) -> Vec<(Vec<u8>, SocketAddr, u8)> {
        let slot = 2048;
        let mut buf = vec![0u8; slot * MAX_BATCH];
        let mut meta = [Received::default(); MAX_BATCH];
        let mut got = Vec::new();
        for _ in 0..200 {
            let n = recv_batch(fd, &mut buf, slot, &mut meta).unwrap();
            for (i, m) in meta[..n].iter().enumerate() {
                assert!(!m.truncated);
                got.push((buf[i * slot..i * slot + m.len].to_vec(), m.from, m.ecn));
            }
            if got.len() >= want {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        got
    }

    #[test]
    fn a_batch_goes_out_and_comes_back_in_order() {
        let (a, aa, b, ba) = pair();
        let payloads: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; 100 + i as usize]).collect();
        let out: Vec<Outgoing> = payloads.iter().map(|p| Outgoing { to: ba, data: p, segment: None, ecn: 0 }).collect();
        let s = send_batch(a, &out);
        assert_eq!(s, Sent { sent: 40, dropped: 0, gso_failed: false, ecn_failed: false });
        let got = recv_all(b, 40);
        assert_eq!(got.len(), 40);
        for (i, (d, from)) in got.iter().enumerate() {
            assert_eq!(d, &payloads[i]);
            assert_eq!(*from, aa);
        }
        // Nothing more queued: Ok(0), not an error.
        let mut buf = vec![0u8; 4096];
        assert_eq!(recv_batch(b, &mut buf, 2048, &mut [Received::default(); 2]).unwrap(), 0);
        super::super::close(a);
        super::super::close(b);
    }

    #[test]
    fn gso_cuts_one_message_into_datagrams() {
        let (a, _, b, ba) = pair();
        if !gso_supported(a) {
            eprintln!("no UDP GSO on this kernel: skipped");
            return;
        }
        // 3 segments of 1000 and a last one of 500.
        let data: Vec<u8> = (0..3500u32).map(|i| (i / 1000) as u8).collect();
        let s = send_batch(a, &[Outgoing { to: ba, data: &data, segment: Some(1000), ecn: 0 }]);
        assert_eq!((s.sent, s.gso_failed), (1, false));
        let got = recv_all(b, 4);
        let lens: Vec<usize> = got.iter().map(|(d, _)| d.len()).collect();
        assert_eq!(lens, [1000, 1000, 1000, 500]);
        for (k, (d, _)) in got.iter().enumerate() {
            assert!(d.iter().all(|&x| x == k as u8));
        }
        super::super::close(a);
        super::super::close(b);
    }

    /// The ECN bits asked for are the ones the peer reads, per message and per GSO segment, over IPv4, IPv6
    /// and a dual-stack socket's IPv4-mapped peer (sent with IP_TOS, which the IPv4 path reads), both ways.
    #[test]
    fn ecn_bits_go_out_and_come_back() {
        for (a_at, b_at, b_to) in [
            ("127.0.0.1:0", "127.0.0.1:0", "127.0.0.1"),
            ("[::1]:0", "[::1]:0", "::1"),
            ("127.0.0.1:0", "[::]:0", "127.0.0.1"),
        ] {
            let a = socket(a_at.parse().unwrap()).unwrap();
            let b = socket(b_at.parse().unwrap()).unwrap();
            let port = super::super::socket::local_addr(b).unwrap().port();
            let ba = SocketAddr::new(b_to.parse().unwrap(), port);
            let gso = vec![9u8; 2500];
            let mut out: Vec<Outgoing> =
                (0..4u8).map(|e| Outgoing { to: ba, data: &[1, 2, 3], segment: None, ecn: e }).collect();
            out.push(Outgoing { to: ba, data: &gso, segment: Some(1000), ecn: 2 });
            let s = send_batch(a, &out);
            assert_eq!((s.sent, s.ecn_failed), (5, false), "{b_at}");
            let got = recv_all_ecn(b, 7);
            let ecn: Vec<u8> = got.iter().map(|g| g.2).collect();
            assert_eq!(ecn, [0, 1, 2, 3, 2, 2, 2], "{a_at} → {b_at}");
            // Back to where a's datagrams came from (on the dual-stack socket, an IPv4-mapped address).
            let from = got[0].1;
            let s = send_batch(b, &[Outgoing { to: from, data: &[4], segment: None, ecn: 3 }]);
            assert_eq!((s.sent, s.ecn_failed), (1, false));
            assert_eq!(recv_all_ecn(a, 1).iter().map(|g| g.2).collect::<Vec<_>>(), [3], "{b_at} → {a_at}");
            super::super::close(a);
            super::super::close(b);
        }
    }

    #[test]
    fn oversized_datagrams_are_marked_truncated() {
        let (a, _, b, ba) = pair();
        send_batch(a, &[Outgoing { to: ba, data: &[7u8; 3000], segment: None, ecn: 0 }]);
        let mut buf = vec![0u8; 2048];
        let mut meta = [Received::default(); 1];
        let mut n = 0;
        for _ in 0..100 {
            n = recv_batch(b, &mut buf, 2048, &mut meta).unwrap();
            if n > 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(n, 1);
        assert!(meta[0].truncated && meta[0].len == 2048);
        let (r, s) = buffer_sizes(b);
        assert!(r > 0 && s > 0);
        super::super::close(a);
        super::super::close(b);
    }
}
