//! Our connection IDs (RFC 9000 §5.1): 12 bytes, 8 random ones and a 4-byte keyed hash of them. The 64 random bits
//! are what RFC 9000 §8.1 asks of an ID whose use by a client proves its address (quic/amplification.rs); the hash
//! lets the endpoint tell a datagram naming an ID it never issued (noise, a scan) from one it forgot, so noise gets
//! no stateless reset back, as with quinn-proto's default generator (whose IDs keep only 24 random bits).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use quinn_proto::{ConnectionId, ConnectionIdGenerator, InvalidCid};
use rustls::crypto::SecureRandom;

/// The length of our connection IDs.
pub const LEN: usize = 12;
const RANDOM: usize = 8;

/// Makes and recognizes this endpoint's connection IDs.
pub struct Ids {
    /// SipHash keys drawn at start: a stranger cannot compute the tag.
    key: RandomState,
    random: &'static dyn SecureRandom,
}

impl Ids {
    pub fn new() -> Ids {
        Ids { key: RandomState::new(), random: rustls::crypto::ring::default_provider().secure_random }
    }

    fn tag(&self, random: &[u8]) -> [u8; LEN - RANDOM] {
        let mut h = self.key.build_hasher();
        h.write(random);
        (h.finish() as u32).to_le_bytes()
    }
}

impl Default for Ids {
    fn default() -> Ids {
        Ids::new()
    }
}

impl ConnectionIdGenerator for Ids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut id = [0u8; LEN];
        // The system's random source failing leaves nothing safe to do: the process restarts.
        self.random.fill(&mut id[..RANDOM]).expect("the system random source");
        let tag = self.tag(&id[..RANDOM]);
        id[RANDOM..].copy_from_slice(&tag);
        ConnectionId::new(&id)
    }

    fn validate(&self, cid: &ConnectionId) -> Result<(), InvalidCid> {
        match cid.len() == LEN && cid[RANDOM..] == self.tag(&cid[..RANDOM]) {
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
    fn ids_are_random_and_only_ours_validate() {
        let mut ids = Ids::new();
        let a = ids.generate_cid();
        let b = ids.generate_cid();
        assert_eq!((a.len(), b.len()), (LEN, LEN));
        assert_ne!(a[..RANDOM], b[..RANDOM]);
        assert!(ids.validate(&a).is_ok() && ids.validate(&b).is_ok());
        let mut forged = [0u8; LEN];
        forged.copy_from_slice(&a);
        forged[LEN - 1] ^= 1;
        assert!(ids.validate(&ConnectionId::new(&forged)).is_err());
        assert!(ids.validate(&ConnectionId::new(&[7; 8])).is_err(), "another length");
        // Another endpoint's keys: its IDs are not ours.
        assert!(Ids::new().validate(&a).is_err());
    }
}
