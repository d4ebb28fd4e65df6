//! CIDR blocks (`192.0.2.0/24`, `2001:db8::/32`, a bare address as its /32 or /128) and whether an address is in
//! one. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what a dual-stack listener sees from IPv4 clients) is
//! matched as its IPv4 address, so one list serves both listeners; an IPv4 block never matches a native IPv6
//! address and the other way round. Checking is a mask and a compare: no allocation.

use std::net::IpAddr;

/// One block: the address with its host bits cleared, and the prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cidr {
    V4 { net: u32, bits: u8 },
    V6 { net: u128, bits: u8 },
}

fn mask4(bits: u8) -> u32 {
    if bits == 0 {
        0
    } else {
        u32::MAX << (32 - bits as u32)
    }
}

fn mask6(bits: u8) -> u128 {
    if bits == 0 {
        0
    } else {
        u128::MAX << (128 - bits as u32)
    }
}

/// `ip` as the address a rule compares: IPv4-mapped IPv6 as IPv4.
#[inline]
pub fn plain(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl Cidr {
    /// Parses `ADDR/BITS` or a bare `ADDR`. Host bits set (`10.0.0.1/8`) are refused: such a block is usually a
    /// typo for something else, and silently widening it would grant more than was written.
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (addr, bits) = match s.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (s, None),
        };
        let ip: IpAddr = addr.parse().map_err(|_| format!("{s:?} is not an IP address or CIDR block"))?;
        let bits = match bits {
            None => None,
            Some(b) if !b.is_empty() && b.len() <= 3 && b.bytes().all(|c| c.is_ascii_digit()) => {
                Some(b.parse::<u8>().map_err(|_| format!("{s:?}: bad prefix length"))?)
            }
            Some(_) => return Err(format!("{s:?}: bad prefix length")),
        };
        match plain(ip) {
            IpAddr::V4(a) => {
                let bits = bits.unwrap_or(32);
                if bits > 32 {
                    return Err(format!("{s:?}: an IPv4 prefix length is at most 32"));
                }
                let v = u32::from(a);
                if v & !mask4(bits) != 0 {
                    return Err(format!(
                        "{s:?}: host bits set (did you mean {}/{bits}?)",
                        IpAddr::from((v & mask4(bits)).to_be_bytes())
                    ));
                }
                Ok(Cidr::V4 { net: v, bits })
            }
            IpAddr::V6(a) => {
                let bits = bits.unwrap_or(128);
                if bits > 128 {
                    return Err(format!("{s:?}: an IPv6 prefix length is at most 128"));
                }
                let v = u128::from(a);
                if v & !mask6(bits) != 0 {
                    return Err(format!(
                        "{s:?}: host bits set (did you mean {}/{bits}?)",
                        IpAddr::from((v & mask6(bits)).to_be_bytes())
                    ));
                }
                Ok(Cidr::V6 { net: v, bits })
            }
        }
    }

    /// Whether `ip` (already `plain`) is in the block.
    #[inline]
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (*self, ip) {
            (Cidr::V4 { net, bits }, IpAddr::V4(a)) => u32::from(a) & mask4(bits) == net,
            (Cidr::V6 { net, bits }, IpAddr::V6(a)) => u128::from(a) & mask6(bits) == net,
            _ => false,
        }
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Cidr::V4 { net, bits } => write!(f, "{}/{bits}", std::net::Ipv4Addr::from(net)),
            Cidr::V6 { net, bits } => write!(f, "{}/{bits}", std::net::Ipv6Addr::from(net)),
        }
    }
}

/// Whether any block of `list` holds `ip` (already `plain`).
#[inline]
pub fn any(list: &[Cidr], ip: IpAddr) -> bool {
    list.iter().any(|c| c.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        plain(s.parse().unwrap())
    }

    #[test]
    fn blocks_match_their_addresses_only() {
        let c = Cidr::parse("192.0.2.0/24").unwrap();
        assert!(c.contains(ip("192.0.2.255")));
        assert!(!c.contains(ip("192.0.3.0")));
        assert!(c.contains(ip("::ffff:192.0.2.7")), "the dual-stack listener's view of an IPv4 client");
        let c6 = Cidr::parse("2001:db8::/32").unwrap();
        assert!(c6.contains(ip("2001:db8:ffff::1")));
        assert!(!c6.contains(ip("2001:db9::1")));
        assert!(!c6.contains(ip("192.0.2.1")), "families never mix");
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("203.0.113.9")));
        assert!(!Cidr::parse("0.0.0.0/0").unwrap().contains(ip("::1")));
        assert!(Cidr::parse("::/0").unwrap().contains(ip("::1")));
        assert!(Cidr::parse("127.0.0.1").unwrap().contains(ip("127.0.0.1")));
        assert!(!Cidr::parse("127.0.0.1").unwrap().contains(ip("127.0.0.2")));
        assert!(Cidr::parse("::ffff:10.0.0.0/8").unwrap().contains(ip("10.1.2.3")), "a mapped block is its IPv4 block");
    }

    #[test]
    fn bad_blocks_are_refused_with_a_reason() {
        for (s, why) in [
            ("10.0.0.1/8", "host bits set (did you mean 10.0.0.0/8?)"),
            ("10.0.0.0/33", "at most 32"),
            ("::/129", "at most 128"),
            ("10.0.0.0/", "bad prefix length"),
            ("10.0.0.0/-1", "bad prefix length"),
            ("10.0.0.0/1000", "bad prefix length"),
            ("example.com", "not an IP address"),
            ("", "not an IP address"),
        ] {
            let e = Cidr::parse(s).unwrap_err();
            assert!(e.contains(why), "{s}: {e}");
        }
        assert_eq!(Cidr::parse("10.0.0.0/8").unwrap().to_string(), "10.0.0.0/8");
    }
}
