//! The pool thread: watches the index directory (the kubelet swaps its `..data` link; any `*.json` written or
//! renamed there counts) and `DIR/content/.ready` (the puller creates `.ready/<id>` after each flip or removal of
//! a site: one watch, whatever the number of sites), loads the sites requests asked for, and looks at the sites'
//! traffic once a second for the eviction order. Every change is published at once (registry.rs `publish`).
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
        if reg.upgrades_pending() {
            // Full loads wait: look for other work (a first request, a flip) without sleeping, then do one.
            timeout = 0;
        }
        poll(&mut fds, timeout.max(0));
        if fds[1].revents & libc::POLLIN != 0 {
            let mut n = [0u8; 8];
            let _ = crate::sys::io::read(pool.wake_fd, &mut n);
        }
        let mut changed = false;
        if fds[0].revents & libc::POLLIN != 0 && w.drain(&mut ready) {
            dirty_since.get_or_insert_with(Instant::now);
        }
        if dirty_since.is_some_and(|t| t.elapsed() >= DEBOUNCE) {
            dirty_since = None;
            reg.read_index();
            changed = true;
        }
        for id in std::mem::take(&mut ready) {
            reg.ready(&id);
            changed = true;
        }
        if pool.wake.swap(false, Ordering::AcqRel) {
            reg.load_wanted();
            changed = true;
        }
        // One full load per turn, when nothing else waited: a site's first (quick) load never queues behind
        // more than one full load.
        if !changed && reg.upgrade_one() {
            changed = true;
        }
        if last_look.elapsed() >= LOOK {
            last_look = Instant::now();
            reg.tick();
            if w.index_wd < 0 || w.ready_wd < 0 {
                reg.read_index();
                changed = true;
            }
        }
        if changed {
            reg.publish(&pool);
        }
    }
}

/// The first read of the index, before the workers start; then the pool thread.
pub fn start(pool: Arc<Pool>, dir: &Path, settings: crate::site::loader::Settings, workers: usize, tls: bool) {
    let mut reg = Registry::new(dir, settings, workers, tls);
    let w = Watches::new(&reg);
    reg.read_index();
    reg.publish(&pool);
    std::thread::Builder::new().name("pool".into()).spawn(move || run(pool, reg, w)).expect("spawn the pool thread");
}
