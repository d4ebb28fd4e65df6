//! The real client behind trusted proxies (src/guard/forwarded.rs): the `X-Forwarded-For` parser and the walk
//! from its right over the trusted entries must never panic, and must name the client a plain model of the
//! contract names. The model below allocates, splits with `str` and parses entries with std's `IpAddr` and
//! `SocketAddr`, so the server's in-place byte walk is held to a second, simpler reading of the same rules: the
//! right-most untrusted entry behind a trusted peer; the peer for an untrusted peer, an entry that is not an
//! address, or a walk past `MAX_ENTRIES`; the left-most when every entry is trusted.
//!
//! Input: byte 0 picks the peer, byte 1 the trusted blocks (a bit each), the rest is the header's value.
#![no_main]

use std::net::{IpAddr, SocketAddr};

use hyperstatic_server::guard::cidr::{self, Cidr};
use hyperstatic_server::guard::forwarded::{client, MAX_ENTRIES, MAX_ENTRY};
use libfuzzer_sys::fuzz_target;

const PEERS: [&str; 6] = [
    "10.1.1.1:5000",
    "192.0.2.1:5000",
    "[fd00::1]:5000",
    "[::ffff:10.1.1.1]:5000",
    "[2001:db8::1]:443",
    "203.0.113.5:1",
];
const BLOCKS: [&str; 7] =
    ["10.0.0.0/8", "fd00::/8", "203.0.113.0/24", "198.51.100.7/32", "0.0.0.0/0", "::/0", "2001:db8::/32"];

fuzz_target!(|data: &[u8]| {
    let (Some(&p), Some(&t)) = (data.first(), data.get(1)) else { return };
    let peer: SocketAddr = PEERS[p as usize % PEERS.len()].parse().unwrap();
    let trusted: Vec<Cidr> =
        BLOCKS.iter().enumerate().filter(|(i, _)| t & (1 << i) != 0).map(|(_, b)| Cidr::parse(b).unwrap()).collect();
    let xff = &data[2..];
    let got = client(&trusted, Some(peer), Some(xff));
    let want = model(&trusted, peer, xff);
    assert_eq!(got, Some(want), "peer {peer}, trusted {trusted:?}, header {:?}", String::from_utf8_lossy(xff));
    assert_eq!(client(&trusted, None, Some(xff)), None, "no peer, no client");
    assert_eq!(client(&trusted, Some(peer), None), Some(peer), "no header: the peer");
});

fn model(trusted: &[Cidr], peer: SocketAddr, xff: &[u8]) -> SocketAddr {
    let is_trusted = |ip: IpAddr| cidr::any(trusted, cidr::plain(ip));
    if trusted.is_empty() || !is_trusted(peer.ip()) {
        return peer;
    }
    // Split on the byte ',' (not in UTF-8 text: a bad byte elsewhere must not spoil the entries after it).
    let entries: Vec<&[u8]> = xff.split(|&b| b == b',').collect();
    let mut left_most = None;
    for (i, e) in entries.iter().rev().enumerate() {
        if i == MAX_ENTRIES {
            return peer;
        }
        let Some(ip) = entry(e) else { return peer };
        if !is_trusted(ip) {
            return SocketAddr::new(ip, 0);
        }
        left_most = Some(ip);
    }
    left_most.map_or(peer, |ip| SocketAddr::new(ip, 0))
}

/// An entry, trimmed of spaces and tabs: an address, with or without a port of at most 5 digits and 65535 (an
/// IPv6 address with one bracketed). No zone (`%eth0`): no proxy writes one for a remote client.
fn entry(e: &[u8]) -> Option<IpAddr> {
    let s = std::str::from_utf8(e).ok()?.trim_matches([' ', '\t']);
    if s.is_empty() || s.len() > MAX_ENTRY || s.contains('%') {
        return None;
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    // std reads any number of leading zeros in a port (`:0044443`); the contract's port is 1 to 5 digits
    if let (Ok(a), Some((_, p))) = (s.parse::<SocketAddr>(), s.rsplit_once(':')) {
        return (p.len() <= 5).then_some(a.ip());
    }
    s.strip_prefix('[')?.strip_suffix(']')?.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6)
}
