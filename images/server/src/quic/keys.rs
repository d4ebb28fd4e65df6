//! The secrets every worker's QUIC endpoint shares, drawn once per process: each worker has its own endpoint and
//! socket (server/h3.rs, sys/steer.rs), and what one issues another must be able to check.
//! * the Retry and NEW_TOKEN token key: a client's next connection, from another port, may reach another worker;
//! * the stateless-reset key: the token a client was given with an ID is the one any worker's reset carries;
//! * the connection-ID hash key (quic/cid.rs): each worker recognizes the others' IDs;
//! * with `--http3-early-data`, the sessions 0-RTT resumes (`sessions`): a client's next connection may reach
//!   another worker.

use std::collections::hash_map::RandomState;
use std::sync::Arc;

use quinn_proto::crypto::{HandshakeTokenKey, HmacKey};
use ring::rand::{SecureRandom, SystemRandom};
use ring::{hkdf, hmac};
use rustls::server::{ServerSessionMemoryCache, StoresServerSessions};

/// Sessions kept for 0-RTT: the newest 8,192 tickets (one per connection), each a few hundred bytes; a client whose
/// ticket was pushed out resumes nothing and makes a full handshake, as on a replica that never saw it.
const EARLY_DATA_SESSIONS: usize = 8192;

pub struct Keys {
    pub token: Arc<dyn HandshakeTokenKey>,
    pub reset: Arc<dyn HmacKey>,
    pub cid: RandomState,
    /// The sessions HTTP/3 resumes, made only when 0-RTT is on (server/h3.rs says why they are kept here and not
    /// in tickets): rustls reserves the whole cache up front (about 1 MB of address space for 8,192 sessions), which
    /// a process without 0-RTT should not carry.
    pub sessions: Option<Arc<dyn StoresServerSessions>>,
}

impl Keys {
    /// The process's keys; `early_data` (`--http3-early-data`) adds the session cache 0-RTT resumes from.
    pub fn new(early_data: bool) -> Keys {
        let rng = SystemRandom::new();
        let mut secret = [0u8; 64];
        // The system's random source failing leaves nothing safe to do: the process restarts.
        rng.fill(&mut secret).expect("the system random source");
        let token = hkdf::Salt::new(hkdf::HKDF_SHA256, &[]).extract(&secret);
        rng.fill(&mut secret).expect("the system random source");
        let reset = hmac::Key::new(hmac::HMAC_SHA256, &secret);
        Keys {
            token: Arc::new(token),
            reset: Arc::new(reset),
            cid: RandomState::new(),
            sessions: early_data
                .then(|| ServerSessionMemoryCache::new(EARLY_DATA_SESSIONS) as Arc<dyn StoresServerSessions>),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cache_exists_only_with_early_data() {
        assert!(Keys::new(false).sessions.is_none(), "no 0-RTT: no cache of 8,192 sessions reserved");
        assert!(Keys::new(true).sessions.is_some(), "0-RTT resumes from the process's own sessions");
    }
}
