//! The per-client limit on TLS handshakes (`limits.perClientHandshakes`): a client address past its share of the
//! site's handshakes has its connection closed the moment it is accepted, before anything is read from it.
//!
//! Why at accept and not later: a full TLS handshake costs the server a key exchange and a signature, the most
//! expensive thing a client can make it do for one round trip, and a flood of handshakes (each a new connection)
//! never gets as far as a request for the per-request limit to see. At accept the only facts are the listener and
//! the client's address, so that is what the bucket is keyed by; nothing has been allocated for the connection
//! (no rustls session), nothing read or decrypted, and the refusal is one `close(2)`. The price: the client gets no
//! answer it can read (no 429, no TLS alert: a TLS alert would mean reading its ClientHello first), only a closed
//! connection, and a resumed handshake (cheap for the server) counts the same as a full one, since which it is
//! is known only from the ClientHello.
//!
//! Why per site is per listener here: the server ends TLS for one site only (the single site's `--tls-cert`; a
//! pool's sites have no in-server TLS, docs/design/pools.md, and a pool refuses the field: pool/index.rs), so the
//! site is known before the handshake without reading SNI. The buckets are the per-request limit's table
//! (table.rs), under a site number of their own, so handshakes and requests of one client are counted apart and
//! share the table's fixed memory.

use std::net::SocketAddr;

use super::{client, table::Counters, Clients, Rate};
use crate::counters::bump;

/// The site number the handshake buckets live under in a worker's table: requests use 0 (the single site) or a
/// pool cell's address (never 1: aligned), so no request bucket shares it.
pub const HANDSHAKES: u64 = 1;

/// Whether a connection from `peer` accepted on the TLS listener at `now_ms` may begin its handshake under
/// `rate` (None: no limit). A refusal is counted in `c.handshakes_limited`. An unknown peer is not limited
/// (there is no one to charge).
#[inline]
pub fn admit(clients: &mut Clients, c: &Counters, rate: Option<&Rate>, peer: Option<SocketAddr>, now_ms: u64) -> bool {
    let (Some(rate), Some(peer)) = (rate, peer) else { return true };
    match clients.take(HANDSHAKES, client::key(peer.ip()), rate, now_ms.saturating_mul(1000), c) {
        Ok(()) => true,
        Err(_) => {
            bump(&c.handshakes_limited, 1);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn past_its_burst_a_client_is_refused_until_a_token_comes_back() {
        let (mut t, c) = (Clients::with_bytes(4096, 5), Counters::default());
        let rate = Rate { requests: 1, period_s: 10, burst: 2 };
        let a: SocketAddr = "198.51.100.7:40000".parse().unwrap();
        let a_other_port: SocketAddr = "198.51.100.7:40001".parse().unwrap();
        let b: SocketAddr = "[2001:db8::1]:40000".parse().unwrap();
        let now = 50_000;
        assert!(admit(&mut t, &c, Some(&rate), Some(a), now));
        assert!(admit(&mut t, &c, Some(&rate), Some(a_other_port), now), "a new connection, the same client");
        assert!(!admit(&mut t, &c, Some(&rate), Some(a), now), "the third handshake in the burst");
        assert!(admit(&mut t, &c, Some(&rate), Some(b), now), "another client has its own bucket");
        assert!(admit(&mut t, &c, None, Some(a), now), "no limit set");
        assert!(admit(&mut t, &c, Some(&rate), None, now), "no address: no one to charge");
        assert!(!admit(&mut t, &c, Some(&rate), Some(a), now + 9_999));
        assert!(admit(&mut t, &c, Some(&rate), Some(a), now + 10_000), "one token back after the interval");
        assert_eq!(c.handshakes_limited.load(Ordering::Relaxed), 2);
        assert_eq!(c.limited.load(Ordering::Relaxed), 0, "requests refused are counted apart");
    }

    #[test]
    fn handshakes_and_requests_of_one_client_have_separate_buckets() {
        let (mut t, c) = (Clients::with_bytes(4096, 5), Counters::default());
        let rate = Rate { requests: 1, period_s: 10, burst: 1 };
        let a: SocketAddr = "198.51.100.7:40000".parse().unwrap();
        let key = client::key(a.ip());
        assert!(t.take(0, key, &rate, 1_000_000, &c).is_ok(), "the single site's request bucket");
        assert!(admit(&mut t, &c, Some(&rate), Some(a), 1_000), "the handshake bucket is still full");
        assert!(t.take(0, key, &rate, 1_000_000, &c).is_err());
    }
}
