//! The client address quinn-proto is given, and back: IPv4 clients of a dual-stack socket (`[::]`, as the server
//! binds by default) arrive as IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, RFC 4291 §2.5.5.2). quinn-proto 0.11
//! tells a NAT rebinding (same IPv4 address, new port: the path's RTT, congestion window and MTU kept) from a
//! migration to another host (all reset: a 333 ms RTT guess, a 12 kB window, 1,200-byte datagrams) by
//! `remote.is_ipv4()` and the same IP, which a mapped address never passes: so it is handed the plain IPv4 address,
//! and the socket gets the mapped form back.

use std::net::{SocketAddr, SocketAddrV6};

/// The address as quinn-proto (and the access log and fair share) should see it: an IPv4-mapped IPv6 address as
/// the IPv4 address it maps, anything else unchanged.
pub fn canonical(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(ip) => SocketAddr::from((ip, v6.port())),
            None => a,
        },
        SocketAddr::V4(_) => a,
    }
}

/// The address to send to on a socket of the given family: an IPv4 address as its mapped IPv6 form on an IPv6
/// (dual-stack) socket, which takes no IPv4 sockaddr; anything else unchanged.
pub fn for_socket(a: SocketAddr, socket_is_v6: bool) -> SocketAddr {
    match a {
        SocketAddr::V4(v4) if socket_is_v6 => {
            SocketAddr::V6(SocketAddrV6::new(v4.ip().to_ipv6_mapped(), v4.port(), 0, 0))
        }
        _ => a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_addresses_become_ipv4_and_back() {
        let mapped: SocketAddr = "[::ffff:127.0.0.2]:4433".parse().unwrap();
        let v4: SocketAddr = "127.0.0.2:4433".parse().unwrap();
        assert_eq!(canonical(mapped), v4);
        assert_eq!(for_socket(v4, true), mapped);
        assert_eq!(for_socket(v4, false), v4, "an IPv4 socket takes the IPv4 address");
        // Real IPv6 addresses, IPv4 ones, and the IPv4-compatible form (::a.b.c.d, deprecated) are left alone.
        for a in ["[::1]:443", "[2001:db8::1]:443", "192.0.2.1:443", "[::7f00:1]:443"] {
            let a: SocketAddr = a.parse().unwrap();
            assert_eq!(canonical(a), a, "{a}");
            assert_eq!(for_socket(a, a.is_ipv6()), a, "{a}");
        }
    }

    #[test]
    fn a_port_change_keeps_the_ip_equal() {
        // What quinn-proto's rebinding test compares (connection/mod.rs `migrate`): same IPv4 address, new port.
        let before = canonical("[::ffff:10.0.0.7]:50000".parse().unwrap());
        let after = canonical("[::ffff:10.0.0.7]:50001".parse().unwrap());
        assert!(before.is_ipv4() && after.is_ipv4());
        assert_eq!(before.ip(), after.ip());
    }
}
