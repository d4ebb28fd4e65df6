//! The real client address behind trusted proxies (`access.trustedProxies`): when the connection's peer (or
//! the PROXY protocol's source, server/proxy.rs) is in a trusted block, the client is the right-most
//! `X-Forwarded-For` entry that is not itself trusted — each proxy appends the address it received the request
//! from, so entries to the right of the first untrusted one were written by proxies we trust and the ones to its
//! left by whoever that client was (anything it liked). A peer outside the list, or no list, and the header is
//! ignored: anyone may send it.
//!
//! Hostile values cannot cost much or crash: only the last `X-Forwarded-For` field line is read (the one the
//! nearest proxy wrote or appended to; HAProxy's `option forwardfor` adds a new line, nginx and Envoy append to
//! the last), at most `MAX_ENTRIES` entries are walked from its right, each at most `MAX_ENTRY` bytes, parsed
//! without allocating. An entry that is not an address (garbage, `unknown`, an obfuscated RFC 7239 name, an
//! empty one between commas) ends the walk, and so does running out of entries while every one was trusted or
//! passing the bound: then the client is the peer itself, the only address nobody could forge. One exception:
//! when every entry of a short list is trusted, the left-most is the client (a request from inside the trusted
//! network). An entry may carry a port (`192.0.2.1:4711`, `[2001:db8::1]:4711`), which is dropped.

use std::net::{IpAddr, SocketAddr};

use super::cidr::{self, Cidr};

/// Entries walked from the right at most: more hops than any real chain of proxies.
pub const MAX_ENTRIES: usize = 16;
/// The longest entry read: `[` an IPv6 address of 45 characters `]:65535`.
pub const MAX_ENTRY: usize = 53;

/// The client of a request from `peer` that carried `xff` (the last `X-Forwarded-For` line), with `trusted`
/// the site's trusted proxies. An address taken from the header has port 0 (the header says no port worth
/// logging); the peer keeps its own.
#[inline]
pub fn client(trusted: &[Cidr], peer: Option<SocketAddr>, xff: Option<&[u8]>) -> Option<SocketAddr> {
    let peer = peer?;
    let (Some(xff), false) = (xff, trusted.is_empty()) else { return Some(peer) };
    if !cidr::any(trusted, cidr::plain(peer.ip())) {
        return Some(peer);
    }
    let mut left_most = None;
    for (i, entry) in xff.rsplit(|&b| b == b',').enumerate() {
        if i == MAX_ENTRIES {
            return Some(peer);
        }
        let Some(ip) = address(trim(entry)) else { return Some(peer) };
        if !cidr::any(trusted, cidr::plain(ip)) {
            return Some(SocketAddr::new(ip, 0));
        }
        left_most = Some(ip);
    }
    Some(left_most.map_or(peer, |ip| SocketAddr::new(ip, 0)))
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|&c| c != b' ' && c != b'\t').unwrap_or(b.len());
    let end = b.iter().rposition(|&c| c != b' ' && c != b'\t').map_or(start, |e| e + 1);
    &b[start..end.max(start)]
}

/// One entry as an address: `ADDR`, `IPv4:PORT`, `[IPv6]` or `[IPv6]:PORT`; None for anything else.
fn address(e: &[u8]) -> Option<IpAddr> {
    if e.is_empty() || e.len() > MAX_ENTRY {
        return None;
    }
    let text = std::str::from_utf8(e).ok()?;
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || port(after.strip_prefix(':')?)) {
            return None;
        }
        return inside.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6);
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip);
    }
    // IPv4 with a port (an IPv6 address with a port is always bracketed).
    let (a, p) = text.rsplit_once(':')?;
    if !port(p) {
        return None;
    }
    a.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

/// A port: decimal digits, at most 65535 (`99999` is no port, so its entry is not an address).
fn port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trusted() -> Vec<Cidr> {
        ["10.0.0.0/8", "fd00::/8"].iter().map(|s| Cidr::parse(s).unwrap()).collect()
    }

    fn c(peer: &str, xff: Option<&str>) -> String {
        let peer: SocketAddr = peer.parse().unwrap();
        client(&trusted(), Some(peer), xff.map(str::as_bytes)).unwrap().to_string()
    }

    #[test]
    fn the_right_most_untrusted_entry_behind_a_trusted_peer() {
        assert_eq!(c("10.1.1.1:5000", Some("203.0.113.9")), "203.0.113.9:0");
        assert_eq!(
            c("10.1.1.1:5000", Some("198.51.100.1, 203.0.113.9, 10.2.2.2")),
            "203.0.113.9:0",
            "forged left part skipped"
        );
        assert_eq!(c("10.1.1.1:5000", Some("[2001:db8::7]:443 ,\t10.2.2.2")), "[2001:db8::7]:0");
        assert_eq!(c("10.1.1.1:5000", Some("2001:db8::7")), "[2001:db8::7]:0");
        assert_eq!(c("10.1.1.1:5000", Some("203.0.113.9:4711")), "203.0.113.9:0");
        assert_eq!(c("10.1.1.1:5000", Some("203.0.113.9:65535")), "203.0.113.9:0");
        assert_eq!(
            c("10.1.1.1:5000", Some("[2001:db8::7]:00443")),
            "[2001:db8::7]:0",
            "leading zeros, as std reads them"
        );
        assert_eq!(c("[::ffff:10.1.1.1]:5000", Some("203.0.113.9")), "203.0.113.9:0", "a mapped trusted peer");
        assert_eq!(c("10.1.1.1:5000", Some("10.3.3.3, 10.2.2.2")), "10.3.3.3:0", "all trusted: the left-most");
    }

    #[test]
    fn an_untrusted_peer_or_a_hostile_header_leaves_the_peer() {
        assert_eq!(c("192.0.2.1:5000", Some("203.0.113.9")), "192.0.2.1:5000", "anyone may send the header");
        assert_eq!(c("10.1.1.1:5000", None), "10.1.1.1:5000");
        for bad in [
            "",
            "garbage",
            "203.0.113.9, nope",
            "unknown",
            "_hidden",
            "1.2.3.4:99999x",
            "1.2.3.4:65536",
            "1.2.3.4:99999",
            "[2001:db8::7]:70000",
            "[fe80::1%2]:80",
            "[::1",
            "[::1]x",
            ",",
            "1.2.3.4,,",
        ] {
            assert_eq!(c("10.1.1.1:5000", Some(bad)), "10.1.1.1:5000", "{bad:?}");
        }
        // Many entries: at most MAX_ENTRIES are walked.
        let many = vec!["10.9.9.9"; 10_000].join(",");
        assert_eq!(c("10.1.1.1:5000", Some(&format!("203.0.113.9,{many}"))), "10.1.1.1:5000");
        let long = "1".repeat(100_000);
        assert_eq!(c("10.1.1.1:5000", Some(&long)), "10.1.1.1:5000");
        assert_eq!(c("10.1.1.1:5000", Some("\u{fffd}\u{fffd}")), "10.1.1.1:5000");
        // No trusted list: never read.
        let peer: SocketAddr = "10.1.1.1:5000".parse().unwrap();
        assert_eq!(client(&[], Some(peer), Some(b"203.0.113.9")), Some(peer));
        assert_eq!(client(&trusted(), None, Some(b"203.0.113.9")), None);
    }
}
