//! The pool thread: watches the index directory (the kubelet swaps its `..data` link; any `*.json` written or
//! renamed there counts) and `DIR/content/.ready` (the puller creates `.ready/<id>` after each flip or removal of
//! a site: one watch, whatever the number of sites), loads the sites requests asked for, and looks at the sites'
//! traffic once a second for the eviction order. Every change of what the workers serve is published at once
//! (registry.rs `publish_snapshot`); the `/sites` report after it, at once for an index change or a flipped tree,
//! within `REPORT` for loads (it holds a pointer per site, and a burst of loads on a 10,000-site pool would
//! rebuild it after each). Full
//! loads run on their own thread (full.rs), which wakes this one through the pool's eventfd when one is done.
//! Index changes are debounced like control.rs's reloads (a shard swap is several events); `.ready` names are
//! handled as they come, each reloading only its site.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::registry::Registry;
use super::Pool;
use crate::log::{self, V};
use crate::sys::inotify::Inotify;
use crate::sys::signal::{poll, PollFd};

const DEBOUNCE: Duration = Duration::from_millis(150);
/// How long the thread sleeps with nothing to do: a request that asks for a load wakes it through the pool's
/// eventfd, inotify through its own; this is the once-a-second look (and, without an eventfd, the wake flag's
/// poll period).
pub const POLL_MS: i32 = 1000;
const POLL_MS_NO_EVENTFD: i32 = 20;
const LOOK: Duration = Duration::from_secs(1);
/// The longest the `/sites` report lags the snapshot.
const REPORT: Duration = Duration::from_millis(100);

/// The watches of the pool thread.
pub struct Watches {
    ino: Inotify,
    index_wd: i32,
    ready_wd: i32,
}

impl Watches {
    pub fn new(reg: &Registry) -> Watches {
        let ino = Inotify::new();
        let mask = libc::IN_CREATE
            | libc::IN_MODIFY
            | libc::IN_CLOSE_WRITE
            | libc::IN_MOVED_TO
            | libc::IN_MOVED_FROM
            | libc::IN_DELETE
            | libc::IN_ATTRIB
            | libc::IN_ONLYDIR;
        let index_wd = ino.add(reg.index_dir(), mask);
        let ready = reg.ready_dir();
        // The puller makes it; made here too so that the one watch exists from the start (an emptyDir both share).
        let _ = std::fs::create_dir_all(&ready);
        let ready_wd = ino.add(&ready, libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_CLOSE_WRITE | libc::IN_ONLYDIR);
        for (wd, p) in [(index_wd, reg.index_dir()), (ready_wd, ready.as_path())] {
            if wd < 0 {
                log::warn(
                    "pool: cannot watch a directory; it is re-read every second",
                    &[("path", V::S(&p.display().to_string()))],
                );
            }
        }
        Watches { ino, index_wd, ready_wd }
    }

    /// Drains the queued events: whether the index may have changed, and the site ids `.ready` named.
    fn drain(&self, ready: &mut BTreeSet<String>) -> bool {
        let mut index = false;
        let (iw, rw) = (self.index_wd, self.ready_wd);
        let overflow = self.ino.drain_where(|wd, name| {
            if wd == iw {
                index |= name.is_empty() || name == b"..data" || name.ends_with(b".json");
            } else if wd == rw && !name.is_empty() && !name.starts_with(b".") {
                ready.insert(String::from_utf8_lossy(name).into_owned());
            }
            false
        });
        index || overflow
    }
}

/// Runs the pool thread forever. The first index read was done before the workers started (`start`).
pub fn run(pool: Arc<Pool>, mut reg: Registry, w: Watches) {
    let mut dirty_since: Option<Instant> = None;
    let mut last_look = Instant::now();
    let mut ready = BTreeSet::new();
    // When the report is behind the snapshot: since when.
    let mut report_due: Option<Instant> = None;
    loop {
        let mut fds = [
            PollFd { fd: w.ino.fd(), events: libc::POLLIN, revents: 0 },
            PollFd { fd: pool.wake_fd, events: libc::POLLIN, revents: 0 },
        ];
        let mut timeout = if pool.wake_fd < 0 { POLL_MS_NO_EVENTFD } else { POLL_MS };
        timeout = timeout.min(LOOK.saturating_sub(last_look.elapsed()).as_millis() as i32);
        if let Some(t) = dirty_since {
            timeout = timeout.min(DEBOUNCE.saturating_sub(t.elapsed()).as_millis() as i32);
        }
        if let Some(t) = report_due {
            timeout = timeout.min(REPORT.saturating_sub(t.elapsed()).as_millis() as i32);
        }
        if reg.upgrades_pending() {
            // Full loads wait: look for other work (a first request, a flip) without sleeping, then do one.
            timeout = 0;
        }
        poll(&mut fds, timeout.max(0));
        if fds[1].revents & libc::POLLIN != 0 {
            let mut n = [0u8; 8];
            let _ = crate::sys::io::read(pool.wake_fd, &mut n);
        }
        let mut changed = reg.finish_full();
        // An index change or a flipped tree is reported with the snapshot (the operator waits for it); loads,
        // which come in bursts, within `REPORT`.
        let mut report_now = false;
        if fds[0].revents & libc::POLLIN != 0 && w.drain(&mut ready) {
            dirty_since.get_or_insert_with(Instant::now);
        }
        if dirty_since.is_some_and(|t| t.elapsed() >= DEBOUNCE) {
            dirty_since = None;
            reg.read_index();
            (changed, report_now) = (true, true);
        }
        for id in std::mem::take(&mut ready) {
            reg.ready(&id);
            (changed, report_now) = (true, true);
        }
        if pool.wake.swap(false, Ordering::AcqRel) {
            reg.load_wanted();
            changed = true;
        }
        // A full load is handed to its thread (one under way at a time): a site's first (quick) load never waits
        // for one.
        if reg.upgrade_one() {
            changed = true;
        }
        if last_look.elapsed() >= LOOK {
            last_look = Instant::now();
            reg.tick();
            if w.index_wd < 0 || w.ready_wd < 0 {
                reg.read_index();
                (changed, report_now) = (true, true);
            }
        }
        if changed {
            reg.publish_snapshot(&pool);
            report_due.get_or_insert_with(Instant::now);
        }
        if report_now || report_due.is_some_and(|t| t.elapsed() >= REPORT) {
            report_due = None;
            reg.publish_report(&pool);
        }
    }
}

/// The first read of the index, before the workers start; then the pool thread.
pub fn start(
    pool: Arc<Pool>,
    dir: &Path,
    settings: crate::site::loader::Settings,
    workers: usize,
    reading: super::index::Reading,
) {
    let mut reg = Registry::new(dir, settings, workers, reading);
    reg.full_loads_on_a_thread(pool.wake_fd);
    let w = Watches::new(&reg);
    reg.read_index();
    reg.publish(&pool);
    std::thread::Builder::new().name("pool".into()).spawn(move || run(pool, reg, w)).expect("spawn the pool thread");
}
