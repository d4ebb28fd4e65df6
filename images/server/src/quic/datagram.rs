//! A received datagram's packets, as far as their unprotected header bytes tell (RFC 9000 §17): where each
//! coalesced packet ends, which ones a client never sends, the first one's Destination Connection ID. The split
//! follows quinn-proto's (`PartialDecode`): a long header is the first byte, a version, two length-prefixed
//! connection IDs of at most 20 bytes, and for versions it speaks an Initial's token and every Initial, 0-RTT and
//! Handshake packet's Length, which ends it; a Retry, a Version Negotiation and a short header run to the end.

use quinn_proto::DEFAULT_SUPPORTED_VERSIONS;

/// The longest connection ID QUIC v1 allows (RFC 9000 §17.2).
const MAX_CID: usize = 20;
const LONG_HEADER: u8 = 0x80;
/// The long packet types of QUIC v1 (and the drafts quinn-proto also speaks), in the first byte's bits 4-5.
const TYPE_INITIAL: u8 = 0;
const TYPE_RETRY: u8 = 3;

/// What one packet at the start of some bytes is.
#[derive(Debug, PartialEq, Eq)]
enum Packet {
    /// A packet only servers send (Retry, Version Negotiation).
    ServerOnly,
    /// A whole packet of this many bytes; another may follow.
    Whole(usize),
    /// A short header, an unsupported version, or a header that does not parse: it takes the rest, and what to do
    /// with it is quinn-proto's call (it drops it, or answers an unknown version with a Version Negotiation).
    Rest,
}

/// How many bytes of the datagram `d`, received by a server, quinn-proto may see: all of it, or the packets before
/// the first one only servers send (0 when that is the first).
pub fn readable_prefix(d: &[u8]) -> usize {
    let mut at = 0;
    while at < d.len() {
        match packet(&d[at..]) {
            Packet::ServerOnly => return at,
            Packet::Whole(n) => at += n,
            Packet::Rest => return d.len(),
        }
    }
    d.len()
}

/// The Destination Connection ID of the first packet of `d`; `short_len` is the length of the server's own IDs,
/// which a short header does not state.
pub fn first_dcid(d: &[u8], short_len: usize) -> Option<&[u8]> {
    let first = *d.first()?;
    if first & LONG_HEADER == 0 {
        return d.get(1..1 + short_len);
    }
    let len = *d.get(5)? as usize;
    if len > MAX_CID {
        return None;
    }
    d.get(6..6 + len)
}

fn packet(p: &[u8]) -> Packet {
    let mut r = Reader { p, at: 0 };
    let Some(first) = r.byte() else { return Packet::Rest };
    if first & LONG_HEADER == 0 {
        return Packet::Rest;
    }
    let Some(version) = r.take(4).map(|v| u32::from_be_bytes([v[0], v[1], v[2], v[3]])) else {
        return Packet::Rest;
    };
    if r.cid().is_none() || r.cid().is_none() {
        return Packet::Rest;
    }
    if version == 0 {
        return Packet::ServerOnly;
    }
    if !DEFAULT_SUPPORTED_VERSIONS.contains(&version) {
        return Packet::Rest;
    }
    let ty = (first >> 4) & 0x03;
    if ty == TYPE_RETRY {
        return Packet::ServerOnly;
    }
    if ty == TYPE_INITIAL {
        let Some(token) = r.varint() else { return Packet::Rest };
        if r.skip(token).is_none() {
            return Packet::Rest;
        }
    }
    let Some(len) = r.varint() else { return Packet::Rest };
    match r.skip(len) {
        Some(()) => Packet::Whole(r.at),
        None => Packet::Rest,
    }
}

/// A cursor over a packet's header bytes; every read fails past the end.
struct Reader<'a> {
    p: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.p.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn skip(&mut self, n: u64) -> Option<()> {
        self.take(usize::try_from(n).ok()?).map(|_| ())
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    /// A length-prefixed connection ID (RFC 9000 §17.2).
    fn cid(&mut self) -> Option<&'a [u8]> {
        let len = self.byte()? as usize;
        if len > MAX_CID {
            return None;
        }
        self.take(len)
    }

    /// A variable-length integer (RFC 9000 §16).
    fn varint(&mut self) -> Option<u64> {
        let first = self.byte()?;
        let extra = (1usize << (first >> 6)) - 1;
        let mut v = u64::from(first & 0x3f);
        for &b in self.take(extra)? {
            v = (v << 8) | u64::from(b);
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long-header packet: `first`, `version`, 8-byte IDs, an Initial's empty token, then a 2-byte Length
    /// covering `payload` bytes (which are 0x5a).
    fn long(first: u8, version: u32, payload: usize) -> Vec<u8> {
        let mut p = vec![first];
        p.extend_from_slice(&version.to_be_bytes());
        p.extend_from_slice(&[8, 1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9]);
        if (first >> 4) & 3 == TYPE_INITIAL {
            p.push(0);
        }
        p.extend_from_slice(&(0x4000u16 | payload as u16).to_be_bytes());
        p.extend_from_slice(&vec![0x5a; payload]);
        p
    }

    const INITIAL: u8 = 0xc0;
    const ZERO_RTT: u8 = 0xd0;
    const HANDSHAKE: u8 = 0xe0;
    const RETRY: u8 = 0xf0;

    #[test]
    fn a_clients_datagrams_are_kept_whole() {
        let initial = long(INITIAL, 1, 1100);
        assert_eq!(readable_prefix(&initial), initial.len());
        let coalesced = [long(INITIAL, 1, 300), long(HANDSHAKE, 1, 200), long(ZERO_RTT, 1, 100)].concat();
        assert_eq!(readable_prefix(&coalesced), coalesced.len());
        // A Handshake packet then a 1-RTT one (a short header runs to the end).
        let with_short = [long(HANDSHAKE, 1, 50), vec![0x41; 60]].concat();
        assert_eq!(readable_prefix(&with_short), with_short.len());
        assert_eq!(readable_prefix(&[0x40; 40]), 40);
        assert_eq!(readable_prefix(&[]), 0);
    }

    #[test]
    fn a_retry_or_version_negotiation_is_cut_with_what_follows() {
        assert_eq!(readable_prefix(&long(RETRY, 1, 40)), 0, "a Retry alone: nothing to read");
        // A draft version quinn-proto speaks has the same types.
        assert_eq!(readable_prefix(&long(RETRY, 0xff00_001d, 40)), 0);
        let vn = long(INITIAL, 0, 40);
        assert_eq!(readable_prefix(&vn), 0, "version 0 is a Version Negotiation, whatever the type bits");
        // A Handshake packet whose first byte was changed into a Retry's, after a whole Initial.
        let initial = long(INITIAL, 1, 1000);
        let damaged = [initial.clone(), long(RETRY, 1, 200)].concat();
        assert_eq!(readable_prefix(&damaged), initial.len(), "the Initial before it is kept");
        let damaged = [initial.clone(), long(HANDSHAKE, 0, 200)].concat();
        assert_eq!(readable_prefix(&damaged), initial.len());
    }

    #[test]
    fn what_quinn_proto_drops_or_answers_itself_is_left_alone() {
        // An unknown version: the endpoint answers it with a Version Negotiation, whatever its type bits say.
        let unknown = long(RETRY, 0x1a2a_3a4a, 1100);
        assert_eq!(readable_prefix(&unknown), unknown.len());
        // Lengths that run past the datagram, a connection ID over 20 bytes, a header cut short.
        let mut past = long(HANDSHAKE, 1, 100);
        past.truncate(80);
        assert_eq!(readable_prefix(&past), past.len());
        let mut long_cid = long(HANDSHAKE, 1, 100);
        long_cid[5] = 21;
        assert_eq!(readable_prefix(&long_cid), long_cid.len());
        assert_eq!(readable_prefix(&[0xc0, 0, 0]), 3);
        // A token length past the end.
        let mut token = long(INITIAL, 1, 10);
        token[23] = 0x7f;
        assert_eq!(readable_prefix(&token), token.len());
    }

    #[test]
    fn varints_of_every_length_are_read() {
        for (bytes, want) in [
            (&[0x25][..], 37u64),
            (&[0x7b, 0xbd], 15_293),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652),
        ] {
            assert_eq!(Reader { p: bytes, at: 0 }.varint(), Some(want));
        }
        assert_eq!(Reader { p: &[0x40], at: 0 }.varint(), None);
    }

    #[test]
    fn the_first_packets_destination_id() {
        let initial = long(INITIAL, 1, 10);
        assert_eq!(first_dcid(&initial, 8), Some(&[1, 2, 3, 4, 5, 6, 7, 8][..]));
        let short = [&[0x40u8][..], &[7; 8], &[0; 30]].concat();
        assert_eq!(first_dcid(&short, 8), Some(&[7; 8][..]));
        assert_eq!(first_dcid(&[0x40, 1, 2], 8), None);
        assert_eq!(first_dcid(&[], 8), None);
        assert_eq!(first_dcid(&[0xc0, 0, 0, 0, 1, 21], 8), None);
    }
}
