//! The site value the process serves and how its loads went: the last good value (what a content reload uses
//! while the newest one is refused), and the counters behind `hyperstatic_site_value_loads_total` and
//! `hyperstatic_site_value_info` (admin/metrics.rs). Written by the control thread, read by the admin thread;
//! never by a worker (they read the compiled value from their table).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use super::Revised;

#[derive(Default)]
pub struct Status {
    last_good: Mutex<Option<Revised>>,
    pub loads_ok: AtomicU64,
    pub loads_failed: AtomicU64,
    /// The newest value was refused (the last good one serves): `hyperstatic_site_value_refused`, which tells a
    /// refused value from a failed content load when `/load-error` has text.
    refused: AtomicBool,
}

impl Status {
    /// The value serving now (None before the first load).
    pub fn last_good(&self) -> Option<Revised> {
        self.last_good.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The revision serving now.
    pub fn revision(&self) -> Option<String> {
        self.last_good.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|r| r.revision.clone())
    }

    /// `v` serves from now on (its table was installed).
    pub fn serve(&self, v: Revised) {
        *self.last_good.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
    }

    pub fn set_refused(&self, refused: bool) {
        self.refused.store(refused, Ordering::Relaxed);
    }

    pub fn refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    pub fn count(&self, ok: bool) {
        let c = if ok { &self.loads_ok } else { &self.loads_failed };
        c.fetch_add(1, Ordering::Relaxed);
    }
}
