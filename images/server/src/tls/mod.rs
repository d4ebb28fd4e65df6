//! HTTPS: certificate material and its hot reload (material.rs, watch.rs), the published configuration the
//! workers start new handshakes with (here), and rustls driven over a non-blocking socket (stream.rs).
//!
//! Publication works like the content table's (state.rs): the control thread installs a new configuration
//! under a mutex and bumps a generation; each worker compares the generation once per loop iteration (one
//! atomic load) and clones the Arc only when it changed. Connections keep the configuration they started
//! with, so a rotation never touches an established connection.

pub mod der;
pub mod material;
pub mod stream;
pub mod watch;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustls::ServerConfig;

use material::{Built, Resumption};

pub struct Published {
    config: Mutex<Arc<ServerConfig>>,
    generation: AtomicU64,
    /// The serving certificate's notAfter (Unix seconds).
    pub not_after: AtomicI64,
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
    /// Why the last rotation was refused (None once one is installed): GET /load-error's `tls:` line and
    /// hyperstatic_tls_certificate_reload_failed.
    pub refused: crate::site::load_error::LastLoadError,
    pub resumption: Resumption,
}

impl Published {
    pub fn new(first: Built, resumption: Resumption) -> Published {
        Published {
            config: Mutex::new(first.config),
            generation: AtomicU64::new(0),
            not_after: AtomicI64::new(first.not_after),
            reloads_ok: AtomicU64::new(0),
            reloads_failed: AtomicU64::new(0),
            refused: Default::default(),
            resumption,
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current configuration and its generation (takes the mutex: only when the generation changed).
    pub fn config(&self) -> (Arc<ServerConfig>, u64) {
        let g = self.config.lock().unwrap_or_else(|e| e.into_inner());
        (g.clone(), self.generation.load(Ordering::Acquire))
    }

    pub fn install(&self, b: Built) {
        let mut g = self.config.lock().unwrap_or_else(|e| e.into_inner());
        *g = b.config;
        self.not_after.store(b.not_after, Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.refused.clear();
    }
}
