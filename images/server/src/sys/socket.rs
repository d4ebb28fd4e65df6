//! TCP sockets: SO_REUSEPORT listeners (dual-stack on `[::]`), accept4 with the peer's address, half-close,
//! and the options the tests read back.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

pub(super) fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
    let sz = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: setsockopt reads one c_int from a local that outlives the call.
    let rc = unsafe { libc::setsockopt(fd, level, name, &v as *const _ as *const libc::c_void, sz) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An int socket option (tests read back what `listen` set).
pub fn int_opt(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt of an int option into a correctly sized buffer.
    let rc = unsafe { libc::getsockopt(fd, level, name, &mut v as *mut _ as *mut libc::c_void, &mut len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v)
}

/// Segments the kernel has sent on a TCP socket (tcp_info), pure ACKs included.
pub fn tcp_segs_out(fd: RawFd) -> io::Result<u32> {
    // SAFETY: tcp_info is plain data for which all-zero is valid.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: getsockopt into a buffer of the size we pass.
    let r = unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut info as *mut _ as *mut libc::c_void, &mut len)
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info.tcpi_segs_out)
}

/// `addr` as the sockaddr the system calls take, and its length.
pub(super) fn raw_sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data for which all-zero is valid.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sa = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sa) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sa = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sa) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

pub(super) fn bind(fd: RawFd, addr: SocketAddr) -> libc::c_int {
    let (ss, len) = raw_sockaddr(addr);
    // SAFETY: a sockaddr of the length we pass, alive for the call.
    unsafe { libc::bind(fd, &ss as *const _ as *const libc::sockaddr, len) }
}

/// A non-blocking TCP socket of `addr`'s family; on IPv6, dual-stack (IPV6_V6ONLY=0, set explicitly rather than
/// left to the `net.ipv6.bindv6only` sysctl) when `dual_stack`, IPv6 only otherwise.
pub fn tcp_socket(addr: SocketAddr, dual_stack: bool) -> io::Result<RawFd> {
    let family = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: no pointers.
    let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    if addr.is_ipv6() {
        if let Err(e) = set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, !dual_stack as libc::c_int) {
            super::close(fd);
            return Err(e);
        }
    }
    Ok(fd)
}

/// Binds `fd` to `addr` and listens with `backlog`; closes `fd` on failure.
pub fn bind_listen(fd: RawFd, addr: SocketAddr, backlog: i32) -> io::Result<RawFd> {
    // SAFETY: listen(2) takes no pointers.
    if bind(fd, addr) != 0 || unsafe { libc::listen(fd, backlog) } != 0 {
        let e = io::Error::last_os_error();
        super::close(fd);
        return Err(e);
    }
    Ok(fd)
}

/// Sets SO_REUSEADDR and SO_REUSEPORT (one listener per worker on the same port), TCP_NODELAY (inherited by
/// accepted sockets) and TCP_DEFER_ACCEPT (see server/listen.rs for why each).
pub fn worker_listener_options(fd: RawFd) {
    for (level, name) in [
        (libc::SOL_SOCKET, libc::SO_REUSEADDR),
        (libc::SOL_SOCKET, libc::SO_REUSEPORT),
        (libc::IPPROTO_TCP, libc::TCP_NODELAY),
        (libc::IPPROTO_TCP, libc::TCP_DEFER_ACCEPT),
    ] {
        let _ = set_int(fd, level, name, 1);
    }
}

/// SO_REUSEADDR only (the admin listener: one per process).
pub fn reuse_addr(fd: RawFd) {
    let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1);
}

/// The address a socket is bound to.
pub fn local_addr(fd: RawFd) -> Option<SocketAddr> {
    // SAFETY: sockaddr_storage is plain data for which all-zero is valid.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: getsockname into a large enough storage whose size we pass.
    let rc = unsafe { libc::getsockname(fd, &mut ss as *mut _ as *mut libc::sockaddr, &mut len) };
    if rc != 0 {
        return None;
    }
    sockaddr(&ss)
}

/// The socket address a sockaddr_storage holds (None for families other than IPv4/IPv6).
pub(super) fn sockaddr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    // SAFETY: the family field says which sockaddr type the storage holds, and the storage is large enough and
    // aligned for either.
    unsafe {
        match ss.ss_family as i32 {
            libc::AF_INET => {
                let a = &*(ss as *const _ as *const libc::sockaddr_in);
                let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
                Some(SocketAddrV4::new(ip, u16::from_be(a.sin_port)).into())
            }
            libc::AF_INET6 => {
                let a = &*(ss as *const _ as *const libc::sockaddr_in6);
                let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
                Some(SocketAddrV6::new(ip, u16::from_be(a.sin6_port), a.sin6_flowinfo, a.sin6_scope_id).into())
            }
            _ => None,
        }
    }
}

/// Why an accept returned no connection.
pub enum AcceptError {
    /// Nothing queued (EAGAIN).
    Empty,
    /// Interrupted or aborted by the peer: try again.
    Retry,
    /// Anything else (out of descriptors, ...): the errno.
    Other(i32),
}

/// accept4(2) of a non-blocking, close-on-exec connection and its peer's address.
#[inline]
pub fn accept(listener: RawFd) -> Result<(RawFd, Option<SocketAddr>), AcceptError> {
    // SAFETY: sockaddr_storage is plain data for which all-zero is valid.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut sl = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: accept4 into a large enough address buffer whose size we pass.
    let fd = unsafe {
        libc::accept4(
            listener,
            &mut ss as *mut _ as *mut libc::sockaddr,
            &mut sl,
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(match super::errno() {
            libc::EINTR | libc::ECONNABORTED => AcceptError::Retry,
            libc::EAGAIN => AcceptError::Empty,
            e => AcceptError::Other(e),
        });
    }
    Ok((fd, sockaddr(&ss)))
}

/// recv(2) with MSG_PEEK: what the socket holds, copied into `buf` and left there for the next read.
#[inline]
pub fn peek(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: receiving at most buf.len() bytes into a valid buffer.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_PEEK) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// shutdown(SHUT_WR): the peer sees EOF after what was queued.
#[inline]
pub fn shutdown_write(fd: RawFd) {
    // SAFETY: no pointers.
    unsafe { libc::shutdown(fd, libc::SHUT_WR) };
}

/// listen(2) again on a listening socket: only changes its backlog.
pub fn set_backlog(fd: RawFd, backlog: i32) {
    // SAFETY: no pointers.
    unsafe { libc::listen(fd, backlog) };
}

/// Waits up to `timeout_ms` until `fd` is readable; true when it is.
pub fn wait_readable(fd: RawFd, timeout_ms: i32) -> bool {
    let mut p = [super::signal::PollFd { fd, events: libc::POLLIN, revents: 0 }];
    super::signal::poll(&mut p, timeout_ms);
    p[0].revents & libc::POLLIN != 0
}

/// A listening socket made here as a std `TcpListener` (the admin thread uses std's accept and streams).
pub fn into_std_listener(fd: RawFd) -> std::net::TcpListener {
    use std::os::fd::FromRawFd;
    // SAFETY: `fd` is a listening TCP socket the caller just created and hands over: nothing else owns or closes it.
    unsafe { std::net::TcpListener::from_raw_fd(fd) }
}
