//! The secrets every worker's QUIC endpoint shares, drawn once per process: each worker has its own endpoint and
//! socket (server/h3.rs, sys/steer.rs), and what one issues another must be able to check.
//! * the Retry and NEW_TOKEN token key: a client's next connection, from another port, may reach another worker;
//! * the stateless-reset key: the token a client was given with an ID is the one any worker's reset carries;
//! * the connection-ID hash key (quic/cid.rs): each worker recognizes the others' IDs.

use std::collections::hash_map::RandomState;
use std::sync::Arc;

use quinn_proto::crypto::{HandshakeTokenKey, HmacKey};
use ring::rand::{SecureRandom, SystemRandom};
use ring::{hkdf, hmac};

pub struct Keys {
    pub token: Arc<dyn HandshakeTokenKey>,
    pub reset: Arc<dyn HmacKey>,
    pub cid: RandomState,
}

impl Keys {
    pub fn new() -> Keys {
        let rng = SystemRandom::new();
        let mut secret = [0u8; 64];
        // The system's random source failing leaves nothing safe to do: the process restarts.
        rng.fill(&mut secret).expect("the system random source");
        let token = hkdf::Salt::new(hkdf::HKDF_SHA256, &[]).extract(&secret);
        rng.fill(&mut secret).expect("the system random source");
        let reset = hmac::Key::new(hmac::HMAC_SHA256, &secret);
        Keys { token: Arc::new(token), reset: Arc::new(reset), cid: RandomState::new() }
    }
}

impl Default for Keys {
    fn default() -> Keys {
        Keys::new()
    }
}
