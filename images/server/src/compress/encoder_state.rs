//! What the background encoder (encoder.rs) shares with the rest of the process, held in `Shared::encoder`:
//! the store of encodings the workers serve from, the progress counters behind the encoder's metrics, and the
//! epoch a content install bumps to wake the encoder. It is its own file so that the shared state can hold it
//! without importing the encoder thread, which itself runs over the shared state (state.rs).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::compress::encodings::{self, Store};
use crate::config::Config;
use crate::site::content::Table;

pub struct State {
    /// `--compress`: without it no encoder runs and nothing is ever pending.
    enabled: bool,
    pub store: Store,
    pub pending: AtomicU64,
    /// Encodings read from `--compress-cache` and encodings computed, since start.
    pub from_cache: AtomicU64,
    pub computed: AtomicU64,
    /// CPU time of the encoder thread and wall time it spent paused for serving, in nanoseconds.
    pub cpu_ns: AtomicU64,
    pub paused_ns: AtomicU64,
    /// Files the last pass left without variants because the memory budget could not hold their encoding.
    pub over_budget: AtomicU64,
    /// Bumped with each new content; the encoder waits on it.
    epoch: Mutex<u64>,
    changed: Condvar,
}

impl State {
    pub fn new(cfg: &Config) -> State {
        let dir = if cfg.compress { cfg.compress_cache.as_deref() } else { None };
        State {
            enabled: cfg.compress,
            store: Store::new(dir),
            pending: AtomicU64::new(0),
            from_cache: AtomicU64::new(0),
            computed: AtomicU64::new(0),
            cpu_ns: AtomicU64::new(0),
            paused_ns: AtomicU64::new(0),
            over_budget: AtomicU64::new(0),
            epoch: Mutex::new(0),
            changed: Condvar::new(),
        }
    }

    /// Installs new content: `swap` runs with the new `pending` already set, so no reader sees the new table
    /// with the old content's count; then the encoder is woken.
    pub fn install(&self, t: Table, swap: impl FnOnce(Table)) {
        let mut e = self.epoch.lock().unwrap_or_else(|e| e.into_inner());
        *e += 1;
        let pending = if self.enabled { encodings::pending(&t, &self.store) } else { 0 };
        self.pending.store(pending as u64, Ordering::Relaxed);
        swap(t);
        drop(e);
        self.changed.notify_all();
    }

    pub(super) fn epoch(&self) -> u64 {
        *self.epoch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets `pending` unless new content arrived since `epoch` (its count then stands).
    pub(super) fn set_pending(&self, epoch: u64, n: usize) {
        let e = self.epoch.lock().unwrap_or_else(|e| e.into_inner());
        if *e == epoch {
            self.pending.store(n as u64, Ordering::Relaxed);
        }
    }

    /// Waits at most `d`, returning early when new content arrives; true when the epoch is still `epoch`.
    pub(super) fn pause(&self, epoch: u64, d: Duration) -> bool {
        let e = self.epoch.lock().unwrap_or_else(|e| e.into_inner());
        let (e, _) = self.changed.wait_timeout_while(e, d, |e| *e == epoch).unwrap_or_else(|e| e.into_inner());
        *e == epoch
    }

    /// Waits until the epoch differs from `seen`; returns the new one.
    pub(super) fn wait(&self, seen: u64) -> u64 {
        let mut e = self.epoch.lock().unwrap_or_else(|e| e.into_inner());
        while *e == seen {
            e = self.changed.wait(e).unwrap_or_else(|e| e.into_inner());
        }
        *e
    }
}
