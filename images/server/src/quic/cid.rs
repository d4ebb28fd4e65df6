//! Our connection IDs (RFC 9000 §5.1): 13 bytes, the index of the worker that issued the ID, 8 random bytes and a
//! 4-byte keyed hash of the first nine.
//! * The worker byte is what the kernel steers a short-header packet by (sys/steer.rs): a client whose address
//!   changes still reaches the worker holding its connection. It tells an observer which worker a connection is on
//!   (the QUIC-LB draft's plaintext server-ID trade-off: log2(workers) bits, the same for every ID of the
//!   connection); encrypting it would need an eBPF program, hence privileges a pod should not have.
//! * The 64 random bits are what RFC 9000 §8.1 asks of an ID whose use by a client proves its address
//!   (quic/amplification.rs).
//! * The hash lets an endpoint tell a datagram naming an ID no worker issued (noise, a scan) from one it forgot,
//!   so noise gets no stateless reset back, as with quinn-proto's default generator (whose IDs keep only 24 random
//!   bits). Every worker hashes with the same key (`quic::keys`), so each recognizes the others' IDs.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use quinn_proto::{ConnectionId, ConnectionIdGenerator, InvalidCid};
use rustls::crypto::SecureRandom;

/// The length of our connection IDs.
pub const LEN: usize = 13;
/// The worker byte, then the random ones: what the hash covers.
const HASHED: usize = 1 + 8;
/// Workers an ID can name (one byte); workers past it serve no HTTP/3.
pub const MAX_WORKERS: usize = 256;

/// Makes and recognizes the connection IDs of one worker's endpoint.
pub struct Ids {
    worker: u8,
    /// SipHash keys drawn once per process (`quic::keys`): a stranger cannot compute the tag.
    key: RandomState,
    random: &'static dyn SecureRandom,
}

impl Ids {
    pub fn new(worker: u8, key: RandomState) -> Ids {
        Ids { worker, key, random: rustls::crypto::ring::default_provider().secure_random }
    }

    fn tag(&self, hashed: &[u8]) -> [u8; LEN - HASHED] {
        let mut h = self.key.build_hasher();
        h.write(hashed);
        (h.finish() as u32).to_le_bytes()
    }
}

/// The worker an ID of ours names.
#[cfg(test)]
fn worker(cid: &[u8]) -> Option<u8> {
    (cid.len() == LEN).then(|| cid[0])
}

impl ConnectionIdGenerator for Ids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut id = [0u8; LEN];
        id[0] = self.worker;
        // The system's random source failing leaves nothing safe to do: the process restarts.
        self.random.fill(&mut id[1..HASHED]).expect("the system random source");
        let tag = self.tag(&id[..HASHED]);
        id[HASHED..].copy_from_slice(&tag);
        ConnectionId::new(&id)
    }

    fn validate(&self, cid: &ConnectionId) -> Result<(), InvalidCid> {
        match cid.len() == LEN && cid[HASHED..] == self.tag(&cid[..HASHED]) {
            true => Ok(()),
            false => Err(InvalidCid),
        }
    }

    fn cid_len(&self) -> usize {
        LEN
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_name_their_worker_and_only_ours_validate() {
        let key = RandomState::new();
        let mut ids = Ids::new(3, key.clone());
        let a = ids.generate_cid();
        let b = ids.generate_cid();
        assert_eq!((a.len(), b.len()), (LEN, LEN));
        assert_ne!(a[1..HASHED], b[1..HASHED]);
        assert_eq!((worker(&a), worker(&b)), (Some(3), Some(3)));
        assert!(ids.validate(&a).is_ok() && ids.validate(&b).is_ok());
        // Another worker of the same process recognizes them (a stateless reset for a packet it got by mistake).
        let other = Ids::new(0, key);
        assert!(other.validate(&a).is_ok());
        let mut forged = [0u8; LEN];
        forged.copy_from_slice(&a);
        forged[LEN - 1] ^= 1;
        assert!(ids.validate(&ConnectionId::new(&forged)).is_err());
        // The worker byte is covered by the hash: an ID moved to another worker is not ours.
        forged.copy_from_slice(&a);
        forged[0] = 4;
        assert!(ids.validate(&ConnectionId::new(&forged)).is_err());
        assert!(ids.validate(&ConnectionId::new(&[7; 8])).is_err(), "another length");
        assert_eq!(worker(&[7; 8]), None);
        // Another process's keys: its IDs are not ours.
        assert!(Ids::new(3, RandomState::new()).validate(&a).is_err());
    }
}
