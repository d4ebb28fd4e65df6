//! HTTPS: certificate material and its hot reload (material.rs, watch.rs), the published configuration the
//! workers start new handshakes with (here), and rustls driven over a non-blocking socket (stream.rs).
//!
//! The configuration is a `Published<ServerConfig>` like the content table (publish.rs): each worker compares its
//! generation once per loop iteration and clones the Arc only when it changed. Connections keep the configuration
//! they started with, so a rotation never touches an established connection.

pub mod der;
pub mod material;
pub mod stream;
pub mod watch;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use rustls::ServerConfig;

use crate::publish::Published;
use material::{Built, Resumption};

/// The serving TLS configuration and its certificate's reload state.
pub struct TlsState {
    /// What new handshakes use.
    pub config: Published<ServerConfig>,
    /// The serving certificate's notAfter (Unix seconds).
    pub not_after: AtomicI64,
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
    /// Why the last rotation was refused (None once one is installed): GET /load-error's `tls:` line and
    /// hyperstatic_tls_certificate_reload_failed.
    pub refused: crate::site::load_error::LastLoadError,
    pub resumption: Resumption,
}

impl TlsState {
    pub fn new(first: Built, resumption: Resumption) -> TlsState {
        TlsState {
            config: Published::new(first.config),
            not_after: AtomicI64::new(first.not_after),
            reloads_ok: AtomicU64::new(0),
            reloads_failed: AtomicU64::new(0),
            refused: Default::default(),
            resumption,
        }
    }

    pub fn install(&self, b: Built) {
        // notAfter first: a reader that sees the new generation also sees its certificate's date.
        self.not_after.store(b.not_after, Ordering::Relaxed);
        self.config.set(b.config);
        self.refused.clear();
    }
}
