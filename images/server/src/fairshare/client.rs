//! Which client an address is: the 64-bit key its bucket is found by. IPv4: the address (one NAT'd household or
//! office is one client: the price of limiting by address at all). IPv6: the /64, since one host may use any
//! address of its /64 (RFC 8981 privacy addresses change daily, and nothing stops a host from taking a new one per
//! connection) while a /64 is the smallest network handed to one subscriber or LAN; a /56 or /48 would lump
//! together customers of providers that give each a /64. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what a
//! dual-stack `[::]` listener sees from IPv4 clients) is its IPv4 address, so both listeners agree.

use std::net::IpAddr;

/// IPv4 keys sit under this prefix, the high 32 bits of `ffff:ffff::/32`: a multicast range, never the source
/// of a TCP connection, so no IPv6 /64 has the same key.
const V4: u64 = 0xffff_ffff_0000_0000;

/// The client key of `ip`.
#[inline]
pub fn key(ip: IpAddr) -> u64 {
    match ip {
        IpAddr::V4(a) => V4 | u32::from(a) as u64,
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => V4 | u32::from(v4) as u64,
            None => (u128::from(a) >> 64) as u64,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> u64 {
        key(s.parse().unwrap())
    }

    #[test]
    fn ipv6_is_bucketed_by_its_64_and_ipv4_by_its_address() {
        assert_eq!(k("2001:db8:1:2::1"), k("2001:db8:1:2:ffff:ffff:ffff:ffff"), "one /64, one client");
        assert_ne!(k("2001:db8:1:2::1"), k("2001:db8:1:3::1"), "the next /64 is another client");
        assert_ne!(k("127.0.0.1"), k("127.0.0.2"));
        assert_eq!(k("::ffff:127.0.0.1"), k("127.0.0.1"), "the dual-stack listener's view of an IPv4 client");
        assert_ne!(k("::1"), k("0.0.0.1"));
    }
}
