//! The workers' listeners: one SO_REUSEPORT socket per worker on the same port, with the options that save a
//! wake-up and a setsockopt per connection.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::RawFd;

use crate::sys::socket;

/// The admin listener's backlog before admin.rs sets its own.
const ADMIN_BACKLOG: i32 = 128;

/// Whether a failure to listen on `[::]` means the kernel has IPv6 off (socket(AF_INET6) refused with
/// EAFNOSUPPORT, or `::` not an address to bind with EADDRNOTAVAIL): then `0.0.0.0` is what "every address" means.
fn ipv6_off(addr: SocketAddr, e: &io::Error) -> bool {
    addr.ip().is_unspecified()
        && addr.is_ipv6()
        && matches!(e.raw_os_error(), Some(libc::EAFNOSUPPORT) | Some(libc::EADDRNOTAVAIL))
}

/// The IPv4 equivalent of `[::]:port`.
fn ipv4_any(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), addr.port())
}

/// Binds with `make`, and when `addr` is `[::]` on a kernel without IPv6, binds `0.0.0.0` on the same port instead.
/// An explicit address (`0.0.0.0:8080`, `[::1]:8080`) is bound exactly as given. Returns the socket and the address
/// it is bound to.
fn bind_any<T>(addr: SocketAddr, make: impl Fn(SocketAddr) -> io::Result<T>) -> io::Result<(T, SocketAddr)> {
    match make(addr) {
        Ok(s) => Ok((s, addr)),
        Err(e) if ipv6_off(addr, &e) => make(ipv4_any(addr)).map(|s| (s, ipv4_any(addr))),
        Err(e) => Err(e),
    }
}

/// A non-blocking SO_REUSEPORT listener on exactly `addr` (dual-stack when it is an IPv6 address: `[::]` takes
/// IPv4 clients too, whatever the `net.ipv6.bindv6only` sysctl says).
pub fn listen(addr: SocketAddr) -> io::Result<RawFd> {
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

/// One listener per worker on `addr` (`[::]` falling back to `0.0.0.0` without IPv6); with port 0 the first picks
/// the port and the others join it. The descriptors and the address they are bound to.
pub fn listen_all(addr: SocketAddr, workers: usize) -> io::Result<(Vec<RawFd>, SocketAddr)> {
    let (first, mut addr) = bind_any(addr, listen)?;
    if addr.port() == 0 {
        addr.set_port(local_port(first));
    }
    let mut fds = Vec::with_capacity(workers);
    fds.push(first);
    for _ in 1..workers {
        match listen(addr) {
            Ok(fd) => fds.push(fd),
            Err(e) => {
                fds.into_iter().for_each(crate::sys::close);
                return Err(e);
            }
        }
    }
    Ok((fds, addr))
}

/// HTTP/3's UDP sockets on the TLS listener's address (already resolved: `[::]` or its `0.0.0.0` fallback).
pub struct Udp {
    /// Worker i's socket is `fds[i]`, its index in the SO_REUSEPORT group (what sys/steer.rs steers by).
    pub fds: Vec<RawFd>,
    /// Why the steering program could not be attached, when it could not: then only the first worker has a socket.
    pub unsteered: Option<io::Error>,
}

/// One UDP socket per worker (at most `cid::MAX_WORKERS`: an ID names its worker in one byte), bound in worker
/// order, and the steering program on their group. Without the program a client whose address changes would land
/// on a worker that does not know its connection, so where it cannot be attached (an old kernel, a seccomp profile
/// that refuses it) the other sockets are closed and the first worker alone serves HTTP/3.
pub fn udp_all(addr: SocketAddr, workers: usize) -> io::Result<Udp> {
    let n = workers.clamp(1, crate::quic::cid::MAX_WORKERS);
    let mut fds = Vec::with_capacity(n);
    for _ in 0..n {
        match crate::sys::udp::socket(addr) {
            Ok(fd) => fds.push(fd),
            Err(e) => {
                fds.into_iter().for_each(crate::sys::close);
                return Err(e);
            }
        }
    }
    let unsteered = if n > 1 { crate::sys::steer::attach(fds[0], n as u32).err() } else { None };
    if unsteered.is_some() {
        fds.drain(1..).for_each(crate::sys::close);
    }
    Ok(Udp { fds, unsteered })
}

/// The admin listener: same address rules as the workers' (dual-stack `[::]`, `0.0.0.0` without IPv6), one socket.
pub fn listen_admin(addr: SocketAddr) -> io::Result<TcpListener> {
    let make = |a: SocketAddr| {
        let fd = socket::tcp_socket(a, true)?;
        socket::reuse_addr(fd);
        socket::bind_listen(fd, a, ADMIN_BACKLOG)
    };
    bind_any(addr, make).map(|(fd, _)| socket::into_std_listener(fd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{self, socket::AcceptError};
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

    #[test]
    fn ipv6_off_only_for_the_unspecified_address_and_its_two_errors() {
        let any: SocketAddr = "[::]:8080".parse().unwrap();
        let e = io::Error::from_raw_os_error;
        assert!(ipv6_off(any, &e(libc::EAFNOSUPPORT)));
        assert!(ipv6_off(any, &e(libc::EADDRNOTAVAIL)));
        assert!(!ipv6_off(any, &e(libc::EADDRINUSE)), "a taken port is an error, not a reason to fall back");
        assert!(!ipv6_off("[::1]:8080".parse().unwrap(), &e(libc::EADDRNOTAVAIL)), "explicit addresses stay exact");
        assert!(!ipv6_off("0.0.0.0:8080".parse().unwrap(), &e(libc::EAFNOSUPPORT)));
    }

    #[test]
    fn bind_any_falls_back_to_ipv4_any_on_the_same_port() {
        let tried = std::cell::RefCell::new(Vec::new());
        let (v, at) = bind_any("[::]:8080".parse().unwrap(), |a| {
            tried.borrow_mut().push(a);
            if a.is_ipv6() {
                Err(io::Error::from_raw_os_error(libc::EAFNOSUPPORT))
            } else {
                Ok(7)
            }
        })
        .unwrap();
        assert_eq!((v, at), (7, "0.0.0.0:8080".parse().unwrap()));
        assert_eq!(tried.borrow().len(), 2);
        let r = bind_any("[::1]:8080".parse().unwrap(), |_| {
            Err::<(), _>(io::Error::from_raw_os_error(libc::EADDRNOTAVAIL))
        });
        assert!(r.is_err(), "an explicit IPv6 address never falls back");
    }

    #[test]
    fn an_ipv6_listener_is_dual_stack_whatever_the_sysctl() {
        let l = listen("[::]:0".parse().unwrap()).expect("listen on [::] (IPv6 must be on for this test)");
        assert_eq!(int_opt(l, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY), 0, "IPV6_V6ONLY is off, set explicitly");
        // The option is really set, not left to the sysctl: asked for IPv6 only, the socket says so.
        let v6only = socket::tcp_socket("[::]:0".parse().unwrap(), false).unwrap();
        assert_eq!(int_opt(v6only, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY), 1);
        close_all(&[l, v6only]);
    }
}
