//! The control thread: signals (SIGTERM/SIGINT drain, SIGHUP reload) through a signalfd, and live reload
//! through inotify. Kubernetes updates ConfigMap and projected volumes by swapping the `..data` symlink
//! in the root; any event anywhere in the watched tree schedules a rebuild (debounced), built aside and
//! swapped in atomically. A failed rebuild keeps the old table serving.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::log::{self, V};
use crate::site::loader;
use crate::state::{bump, Shared};
use crate::sys::inotify::Inotify;
use crate::sys::signal::{self, PollFd};

const DEBOUNCE: Duration = Duration::from_millis(150);

pub use crate::sys::signal::block_signals;

/// An inotify instance watching the site tree (every directory the last load saw).
pub struct Watcher {
    ino: Inotify,
}

impl Watcher {
    fn new() -> Watcher {
        Watcher { ino: Inotify::new() }
    }

    fn add(&self, p: &Path) {
        let mask = libc::IN_CREATE
            | libc::IN_DELETE
            | libc::IN_MODIFY
            | libc::IN_CLOSE_WRITE
            | libc::IN_MOVED_FROM
            | libc::IN_MOVED_TO
            | libc::IN_ATTRIB
            | libc::IN_DELETE_SELF
            | libc::IN_MOVE_SELF;
        // inotify follows symlinks by default, which is what we want for `..data`.
        self.ino.add(p, mask);
    }

    /// Drains queued events; true when there were any.
    fn drain(&self) -> bool {
        self.ino.drain()
    }
}

/// Loads the site into a new table and installs it. Returns the watcher for the new tree.
pub fn reload(shared: &Shared, why: &str) -> Option<Watcher> {
    let first = !shared.loaded.load(Ordering::Acquire) && shared.reloads_ok.load(Ordering::Relaxed) == 0;
    let started = Instant::now();
    let w = Watcher::new();
    w.add(&shared.cfg.root);
    let store = Some(&shared.encoder.store).filter(|_| shared.cfg.compress);
    shared.retire_below.store(shared.generation(), Ordering::Release);
    let r = loader::load(&shared.cfg, store, &mut |d| w.add(d));
    match r {
        Ok((_, report)) if !first && report.unreadable > 0 => {
            bump(&shared.reloads_failed, 1);
            let more = report.errors.len().saturating_sub(1);
            shared.load_error.set(&format!(
                "the new content has {} unreadable entries: {}{}",
                report.unreadable,
                report.errors.first().map_or("", String::as_str),
                if more > 0 { format!(" (and {more} more problems)") } else { String::new() }
            ));
            for e in &report.errors {
                log::warn("unreadable entry in the new content", &[("problem", V::S(e))]);
            }
            log::error(
                "content reload failed: the new tree has unreadable entries; the previous content keeps serving",
                &[("reason", V::S(why)), ("unreadable", V::U(report.unreadable as u64))],
            );
            Some(w)
        }
        Ok((table, report)) => {
            for e in &report.errors {
                log::warn("file skipped", &[("problem", V::S(e))]);
            }
            let m = report.memory;
            shared.encoder.install(table, |t| shared.swap(t));
            bump(&shared.reloads_ok, 1);
            shared.load_error.clear();
            if m.over_budget_files > 0 {
                log::warn(
                    "content does not fit its memory budget: part of it is served from disk",
                    &[
                        ("disk_bytes", V::U(m.disk_bytes)),
                        ("over_budget_files", V::U(m.over_budget_files as u64)),
                        ("memory_limit_bytes", V::U(m.limit.unwrap_or(0))),
                        ("memory_budget_bytes", V::U(m.budget.unwrap_or(0))),
                        ("fit_memory_limit_bytes", V::U(m.fit_limit)),
                    ],
                );
            }
            log::info(
                "content loaded",
                &[
                    ("reason", V::S(why)),
                    ("files", V::U(report.files as u64)),
                    ("bytes", V::U(report.bytes)),
                    ("memory_bytes", V::U(report.memory_bytes)),
                    ("disk_files", V::U(report.disk_files as u64)),
                    ("compressed_variants", V::U(report.compressed_variants as u64)),
                    ("ms", V::U(started.elapsed().as_millis() as u64)),
                ],
            );
            Some(w)
        }
        Err(e) => {
            bump(&shared.reloads_failed, 1);
            shared.load_error.set(&e);
            log::error(
                "content reload failed; the previous content keeps serving",
                &[("reason", V::S(why)), ("error", V::S(&e))],
            );
            Some(w) // keep watching: the tree may be fixed later
        }
    }
}

/// Runs the control loop until the process should exit; returns after SIGTERM's drain delay has passed
/// and workers were told to stop accepting.
/// `cert_watch` checks the TLS files once a second (tls/watch.rs).
pub fn run(
    shared: Arc<Shared>,
    sigset: signal::SigSet,
    mut watcher: Option<Watcher>,
    mut cert_watch: Option<crate::tls::watch::CertWatch>,
) {
    let sfd = signal::signalfd(&sigset);
    let mut dirty_since: Option<Instant> = None;
    let mut drain_deadline: Option<Instant> = None;
    loop {
        let wfd = watcher.as_ref().map_or(-1, |w| w.ino.fd());
        let mut fds = [
            PollFd { fd: sfd, events: libc::POLLIN, revents: 0 },
            PollFd { fd: wfd, events: libc::POLLIN, revents: 0 },
        ];
        let mut timeout = 1000;
        if let Some(w) = &cert_watch {
            timeout = timeout.min(w.due_in().as_millis() as i32);
        }
        if let Some(t) = dirty_since {
            timeout = DEBOUNCE.saturating_sub(t.elapsed()).as_millis() as i32;
        }
        if let Some(d) = drain_deadline {
            timeout = timeout.min(d.saturating_duration_since(Instant::now()).as_millis() as i32);
        }
        signal::poll(&mut fds, timeout.max(0));
        if fds[0].revents & libc::POLLIN != 0 {
            while let Some(signo) = signal::next_signal(sfd) {
                match signo {
                    libc::SIGHUP => {
                        log::info("SIGHUP: reloading", &[]);
                        watcher = reload(&shared, "SIGHUP");
                    }
                    s => {
                        if drain_deadline.is_some() {
                            log::warn("second termination signal: exiting now", &[]);
                            std::process::exit(0);
                        }
                        shared.draining.store(true, Ordering::Release);
                        let delay = shared.cfg.drain_delay;
                        log::info(
                            "draining: readiness fails now, accepting stops after the drain delay",
                            &[("signal", V::U(s as u64)), ("drain_delay_ms", V::U(delay.as_millis() as u64))],
                        );
                        drain_deadline = Some(Instant::now() + delay);
                    }
                }
            }
        }
        if fds[1].revents & libc::POLLIN != 0 {
            if let Some(w) = &watcher {
                if w.drain() {
                    dirty_since = Some(Instant::now());
                }
            }
        }
        if let Some(t) = dirty_since {
            if t.elapsed() >= DEBOUNCE {
                dirty_since = None;
                watcher = reload(&shared, "inotify");
            }
        }
        if let (Some(w), Some(p)) = (cert_watch.as_mut(), shared.tls.as_ref()) {
            w.poll(p);
        }
        if let Some(d) = drain_deadline {
            if Instant::now() >= d {
                log::info("drain delay over: closing listeners, finishing open connections", &[]);
                shared.stop_accepting.store(true, Ordering::Release);
                return;
            }
        }
    }
}
