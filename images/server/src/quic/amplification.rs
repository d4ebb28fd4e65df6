//! The anti-amplification limit of one connection, counted by the server's glue (RFC 9000 §8.1): until the
//! client's address is validated, the server sends at most three times the bytes it received from that address.

/// What one connection has received from its client's address and sent back, while that address is unproven.
#[derive(Debug)]
pub struct Budget {
    /// The Destination Connection ID of the client's first Initial: the one ID in use the server did not choose.
    client_chose: [u8; 20],
    client_chose_len: u8,
    received: u64,
    sent: u64,
}

/// What a datagram routed to the connection did to its budget.
#[derive(Debug, PartialEq, Eq)]
pub enum Seen {
    /// Counted: three times its length more may be sent.
    Counted,
    /// It used a connection ID the server chose: the address is validated, the budget no longer applies.
    Validated,
}

impl Budget {
    /// The budget after the client's first datagram (`len` bytes, every coalesced packet and padding included) to
    /// `client_chose`.
    pub fn new(client_chose: &[u8], len: usize) -> Budget {
        let mut id = [0u8; 20];
        let n = client_chose.len().min(id.len());
        id[..n].copy_from_slice(&client_chose[..n]);
        Budget { client_chose: id, client_chose_len: n as u8, received: len as u64, sent: 0 }
    }

    /// A datagram of `len` bytes from the client's address whose first packet names `dcid` (None: not readable;
    /// counted, as every byte of a datagram attributed to the connection is).
    pub fn received(&mut self, len: usize, dcid: Option<&[u8]>) -> Seen {
        if dcid.is_some_and(|d| d != &self.client_chose[..self.client_chose_len as usize]) {
            return Seen::Validated;
        }
        self.received = self.received.saturating_add(len as u64);
        Seen::Counted
    }

    /// Bytes that may still be sent.
    pub fn room(&self) -> u64 {
        self.received.saturating_mul(3).saturating_sub(self.sent)
    }

    /// A datagram of `len` bytes went out.
    pub fn sent(&mut self, len: usize) {
        self.sent = self.sent.saturating_add(len as u64);
    }

    /// Whether a datagram of up to `largest` bytes fits in what is left.
    pub fn fits(&self, largest: usize) -> bool {
        self.room() >= largest as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_times_what_was_received_and_not_a_byte_more() {
        let mut b = Budget::new(&[1; 8], 1280);
        assert_eq!(b.room(), 3840);
        for _ in 0..3 {
            assert!(b.fits(1200));
            b.sent(1200);
        }
        assert_eq!(b.room(), 240);
        assert!(!b.fits(1200), "a fourth datagram would make 4,800 bytes: 3.75x");
        // The client's retransmitted Initial still names the ID it chose: counted, not a proof.
        assert_eq!(b.received(1200, Some(&[1; 8])), Seen::Counted);
        assert_eq!(b.room(), 240 + 3600);
        // A datagram that cannot be read is counted too (RFC 9000 §8.1: all bytes attributed to the connection).
        assert_eq!(b.received(50, None), Seen::Counted);
        assert_eq!(b.room(), 240 + 3600 + 150);
    }

    #[test]
    fn an_id_the_server_chose_validates_the_address() {
        let mut b = Budget::new(&[1; 8], 1200);
        assert_eq!(b.received(1200, Some(&[2; 8])), Seen::Validated);
        // A client ID of another length, or longer than v1 allows, compares as itself.
        let mut b = Budget::new(&[7; 20], 1200);
        assert_eq!(b.received(100, Some(&[7; 20])), Seen::Counted);
        assert_eq!(b.received(100, Some(&[7; 8])), Seen::Validated);
        let mut b = Budget::new(&[], 1200);
        assert_eq!(b.received(100, Some(&[])), Seen::Counted);
    }

    #[test]
    fn nothing_overflows() {
        let mut b = Budget::new(&[1; 8], usize::MAX);
        b.received(usize::MAX, None);
        assert_eq!(b.room(), u64::MAX);
        b.sent(usize::MAX);
        b.sent(usize::MAX);
        assert_eq!(b.room(), 0);
    }
}
