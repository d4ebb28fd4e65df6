//! The PROXY protocol, version 2 (HAProxy's "The PROXY protocol", section 2.2): the binary header a load balancer
//! puts before a connection's first byte to say whose connection it relays. Issue 44, item 2: the real client
//! address, for the per-client limits (fairshare/) and the access log.
//!
//! This is the parser alone, sans-IO: bytes in, the header's length and the source address out. The transport
//! calls it on the first bytes of every connection when `--proxy-protocol` is on (server/proxy.rs). The contract
//! it keeps:
//!
//! - The 12-byte signature first; a connection whose first bytes differ from it is not PROXY (`NotProxy`): from a
//!   trusted sender that is an error, never a request to parse as HTTP (a client could otherwise claim any
//!   address by sending a header of its own through a sender that does not add one).
//! - Version 2 only; command LOCAL (the proxy's own health check: the connection's own address stands) or PROXY;
//!   families INET and INET6 give a source address, UNIX and UNSPEC none (the connection's own address stands).
//! - The declared length covers the addresses and the TLVs; TLVs are skipped, unchecked. A header longer than
//!   `MAX_LEN` is refused: what a worker holds for a connection before its first request stays bounded.
//! - `Partial` until the whole header is there (the caller keeps the bytes and reads more); never a panic and
//!   never a read past the declared length, whatever the bytes (fuzz/fuzz_targets/proxy_v2.rs).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// `\r\n\r\n\0\r\nQUIT\n`.
pub const SIGNATURE: [u8; 12] = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a];
/// Signature, version and command, family and transport, length.
pub const FIXED: usize = 16;
/// The longest header accepted: the addresses (216 bytes at most, for UNIX) and TLVs such as the cloud load
/// balancers' (an endpoint id, a few hundred bytes). HAProxy itself sends far less.
pub const MAX_LEN: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// Fewer bytes than the header: read more.
    Partial,
    /// The header is the first `used` bytes; `source` the client's address when it carries one.
    Done { used: usize, source: Option<SocketAddr> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The first bytes are not the signature.
    NotProxy,
    /// A version other than 2, or a command other than LOCAL and PROXY.
    Version,
    /// An address family/transport byte this parser does not know, or addresses longer than the header says.
    Family,
    /// The declared length is over `MAX_LEN`.
    TooLong,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(match self {
            Error::NotProxy => "not a PROXY protocol v2 header",
            Error::Version => "PROXY protocol: not version 2 with command LOCAL or PROXY",
            Error::Family => "PROXY protocol: unknown address family or short address block",
            Error::TooLong => "PROXY protocol: header longer than 1024 bytes",
        })
    }
}

/// Parses the PROXY v2 header at the start of `buf`.
pub fn parse(buf: &[u8]) -> Result<Parsed, Error> {
    let n = buf.len().min(SIGNATURE.len());
    if buf[..n] != SIGNATURE[..n] {
        return Err(Error::NotProxy);
    }
    if buf.len() < FIXED {
        return Ok(Parsed::Partial);
    }
    let (ver_cmd, fam) = (buf[12], buf[13]);
    let len = u16::from_be_bytes([buf[14], buf[15]]) as usize;
    if ver_cmd >> 4 != 2 || ver_cmd & 0x0f > 1 {
        return Err(Error::Version);
    }
    if FIXED + len > MAX_LEN {
        return Err(Error::TooLong);
    }
    // The addresses each family needs: (family/transport, bytes). TCP or UDP over IPv4 or IPv6; UNIX; UNSPEC.
    let need = match fam {
        0x00 => 0,
        0x11 | 0x12 => 12,
        0x21 | 0x22 => 36,
        0x31 | 0x32 => 216,
        _ => return Err(Error::Family),
    };
    if len < need {
        return Err(Error::Family);
    }
    if buf.len() < FIXED + len {
        return Ok(Parsed::Partial);
    }
    let a = &buf[FIXED..FIXED + need];
    let local = ver_cmd & 0x0f == 0;
    let source = match fam >> 4 {
        _ if local => None,
        1 => {
            let ip = Ipv4Addr::new(a[0], a[1], a[2], a[3]);
            Some(SocketAddr::new(IpAddr::V4(ip), u16::from_be_bytes([a[8], a[9]])))
        }
        2 => {
            let mut o = [0u8; 16];
            o.copy_from_slice(&a[..16]);
            Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(o)), u16::from_be_bytes([a[32], a[33]])))
        }
        _ => None,
    };
    Ok(Parsed::Done { used: FIXED + len, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header as HAProxy's `send-proxy-v2` writes it: PROXY over TCP, then `tlvs`.
    fn header(fam: u8, addrs: &[u8], tlvs: &[u8]) -> Vec<u8> {
        let mut h = SIGNATURE.to_vec();
        h.push(0x21);
        h.push(fam);
        h.extend_from_slice(&((addrs.len() + tlvs.len()) as u16).to_be_bytes());
        h.extend_from_slice(addrs);
        h.extend_from_slice(tlvs);
        h
    }

    #[test]
    fn ipv4_and_ipv6_sources_are_read_and_tlvs_skipped() {
        let v4 = header(0x11, &[192, 0, 2, 7, 10, 0, 0, 1, 0x1f, 0x90, 0x00, 0x50], &[0x04, 0x00, 0x01, 0xaa]);
        let mut input = v4.clone();
        input.extend_from_slice(b"GET / HTTP/1.1\r\n");
        assert_eq!(parse(&input), Ok(Parsed::Done { used: v4.len(), source: Some("192.0.2.7:8080".parse().unwrap()) }));
        let mut a6 = Vec::new();
        a6.extend_from_slice(&"2001:db8::5".parse::<Ipv6Addr>().unwrap().octets());
        a6.extend_from_slice(&[0; 16]);
        a6.extend_from_slice(&[0xc3, 0x50, 0x01, 0xbb]);
        let v6 = header(0x21, &a6, &[]);
        assert_eq!(parse(&v6), Ok(Parsed::Done { used: 52, source: Some("[2001:db8::5]:50000".parse().unwrap()) }));
    }

    #[test]
    fn every_prefix_is_partial_and_local_keeps_the_connections_address() {
        let h = header(0x11, &[192, 0, 2, 7, 10, 0, 0, 1, 0x1f, 0x90, 0x00, 0x50], &[]);
        for n in 0..h.len() {
            assert_eq!(parse(&h[..n]), Ok(Parsed::Partial), "{n} bytes");
        }
        let mut local = h.clone();
        local[12] = 0x20;
        assert_eq!(parse(&local), Ok(Parsed::Done { used: h.len(), source: None }));
        let unspec = header(0x00, &[], &[]);
        assert_eq!(parse(&unspec), Ok(Parsed::Done { used: 16, source: None }));
    }

    /// The fuzz target's property (fuzz/fuzz_targets/proxy_v2.rs) over every one-byte change of real headers, so
    /// that it is held by `cargo test` too, where the fuzzer does not run.
    #[test]
    fn a_changed_byte_never_panics_nor_claims_bytes_it_was_not_given() {
        let mut a6 = vec![0x20; 36];
        a6.extend_from_slice(&[1, 2, 3, 4]);
        for h in
            [header(0x11, &[192, 0, 2, 7, 10, 0, 0, 1, 0x1f, 0x90, 0x00, 0x50], &[1, 0, 1, 9]), header(0x21, &a6, &[])]
        {
            for i in 0..h.len() {
                for b in [0u8, 1, 0x0f, 0x10, 0x21, 0x7f, 0xff] {
                    let mut m = h.clone();
                    m[i] = b;
                    m.extend_from_slice(b"GET / HTTP/1.1\r\n");
                    if let Ok(Parsed::Done { used, .. }) = parse(&m) {
                        assert!(used <= m.len());
                        assert_eq!(parse(&m[..used]), parse(&m));
                        assert_eq!(parse(&m[..used - 1]), Ok(Parsed::Partial));
                    }
                }
            }
        }
    }

    #[test]
    fn anything_else_is_refused() {
        assert_eq!(parse(b"GET / HTTP/1.1\r\n"), Err(Error::NotProxy));
        assert_eq!(parse(b"PROXY TCP4 192.0.2.1 10.0.0.1 1 2\r\n"), Err(Error::NotProxy), "version 1 is text");
        assert_eq!(parse(&[0x0d, 0x0a, 0x0d, 0x0b]), Err(Error::NotProxy), "refused at the first wrong byte");
        let good = header(0x11, &[0; 12], &[]);
        let mut v1 = good.clone();
        v1[12] = 0x11;
        assert_eq!(parse(&v1), Err(Error::Version));
        let mut cmd = good.clone();
        cmd[12] = 0x22;
        assert_eq!(parse(&cmd), Err(Error::Version));
        let mut fam = good.clone();
        fam[13] = 0x41;
        assert_eq!(parse(&fam), Err(Error::Family));
        let short = header(0x21, &[0; 12], &[]);
        assert_eq!(parse(&short), Err(Error::Family), "INET6 needs 36 bytes of addresses");
        let mut long = good.clone();
        long[14..16].copy_from_slice(&((MAX_LEN - FIXED + 1) as u16).to_be_bytes());
        assert_eq!(parse(&long), Err(Error::TooLong));
        long[14..16].copy_from_slice(&((MAX_LEN - FIXED) as u16).to_be_bytes());
        assert_eq!(parse(&long), Ok(Parsed::Partial), "the longest header accepted waits for its bytes");
    }
}
