//! The control thread: signals (SIGTERM/SIGINT drain, SIGHUP reload) through a signalfd, and live reload
//! through inotify. Kubernetes updates ConfigMap and projected volumes by swapping the `..data` symlink
//! in the root; any event anywhere in the watched tree schedules a rebuild (debounced), built aside and
//! swapped in atomically. A failed rebuild keeps the old table serving. A root that is itself a symlink (Git
//! content: `DIR/current`, replaced by a rename for each new commit) is also watched through its parent
//! directory, for that one name; each replacement then gives one reload (success or failure) once the debounce
//! has passed, which the puller waits for before it replaces the link again (images/server/README.md).
//!
//! The site value (`--site FILE`, site_value/) is loaded with the content: its file's directory is watched too
//! (a mounted ConfigMap swaps its `..data` link; a plain file may be replaced by a rename), and a table is always
//! built from (content, value). A refused value — bad JSON, a bad rule, a page the content lacks — keeps the last
//! good (content, value) serving; a content reload while the newest value is refused uses the last good value.
//! A value-only change re-reads the content as any reload does: the encoder's store keeps the encodings by
//! digest, so nothing is compressed again (the cost is the walk, the reads and the hashing; README.md has it).

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::SiteSource;
use crate::log::{self, V};
use crate::site::loader;
use crate::site_value::Revised;
use crate::state::{bump, Shared};
use crate::sys::inotify::Inotify;
use crate::sys::signal::{self, PollFd};

const DEBOUNCE: Duration = Duration::from_millis(150);
/// How often a held drain looks for its release (the admin thread sets a flag; nothing wakes this loop).
const HOLD_POLL: Duration = Duration::from_millis(100);

pub use crate::sys::signal::block_signals;

/// An inotify instance watching the site tree (every directory the last load saw) and, when the root is itself a
/// symlink, the directory holding that link.
pub struct Watcher {
    ino: Inotify,
    /// A root that is a symlink (`DIR/current`, which Git content's puller replaces by a rename to install a new
    /// commit's tree): the watch descriptor of its parent directory and the link's own name. Only events for that
    /// name count there; the puller's other work in the directory (new trees, temporary links, pruned trees)
    /// would otherwise cause a reload each.
    link: Option<(i32, OsString)>,
    /// The site value file's directory and the file's name: only events for that name or `..data` (a ConfigMap
    /// volume's atomic swap) count there.
    site: Option<(i32, OsString)>,
}

impl Watcher {
    fn new() -> Watcher {
        Watcher { ino: Inotify::new(), link: None, site: None }
    }

    /// Watches the root: the tree it resolves to now (the load adds its subdirectories) and, for a symlink root,
    /// its parent for the link being replaced or created.
    fn watch_root(&mut self, root: &Path) {
        self.add(root);
        let is_link = std::fs::symlink_metadata(root).is_ok_and(|m| m.file_type().is_symlink());
        if let (true, Some(parent), Some(name)) = (is_link, root.parent(), root.file_name()) {
            let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
            let wd = self.ino.add(parent, libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_ONLYDIR);
            if wd >= 0 {
                self.link = Some((wd, name.to_os_string()));
            }
        }
    }

    /// Watches the directory of the site value file for the file being written, replaced or swapped in.
    fn watch_site(&mut self, file: &Path) {
        let (Some(parent), Some(name)) = (file.parent(), file.file_name()) else { return };
        let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
        let mask = libc::IN_CREATE
            | libc::IN_MODIFY
            | libc::IN_CLOSE_WRITE
            | libc::IN_MOVED_TO
            | libc::IN_DELETE
            | libc::IN_ATTRIB
            | libc::IN_ONLYDIR;
        let wd = self.ino.add(parent, mask);
        if wd >= 0 {
            self.site = Some((wd, name.to_os_string()));
        }
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

    /// Drains queued events; true when any of them may change what the root holds.
    fn drain(&self) -> bool {
        let named = |w: &Option<(i32, OsString)>, wd: i32, n: &[u8], data: bool| match w {
            Some((d, name)) if *d == wd => Some(!n.is_empty() && (n == name.as_bytes() || (data && n == b"..data"))),
            _ => None,
        };
        self.ino.drain_where(|wd, n| match (named(&self.link, wd, n, false), named(&self.site, wd, n, true)) {
            (None, None) => true,
            (a, b) => a.unwrap_or(false) || b.unwrap_or(false),
        })
    }
}

/// The newest site value: read from its file, or the one the flags built.
fn newest_value(shared: &Shared) -> Result<Revised, String> {
    match &shared.cfg.site {
        SiteSource::File(p) => crate::site_value::read(p, shared.cfg.tls.is_some()),
        SiteSource::Flags(v) => {
            Ok(Revised { value: v.clone(), revision: crate::site_value::revision_of(v.canonical().as_bytes()) })
        }
    }
}

/// A value refused: said in /load-error, counted, logged. The reason is set before the count: a reader (the
/// operator, a test) that sees the failure counted must find why, not the empty /load-error of the moment before
/// the reload installs its table (which sets the same reason again). Seen as a flaky tests/fair_share.rs in CI.
fn refuse_value(shared: &Shared, why: &str, reason: &str) {
    shared.load_error.set(reason);
    shared.site_value.count(false);
    shared.site_value.set_refused(true);
    let serving = shared.site_value.revision().unwrap_or_else(|| "none".into());
    log::error(
        "site value refused; the last good site value keeps serving",
        &[("reason", V::S(why)), ("error", V::S(reason)), ("serving", V::S(&serving))],
    );
}

/// Loads the site — the content with the newest good site value — into a new table and installs it. Returns the
/// watcher for the new tree.
pub fn reload(shared: &Shared, why: &str) -> Option<Watcher> {
    let first = !shared.loaded.load(Ordering::Acquire) && shared.reloads_ok.load(Ordering::Relaxed) == 0;
    let started = Instant::now();
    let mut w = Watcher::new();
    w.watch_root(&shared.cfg.root);
    if let SiteSource::File(p) = &shared.cfg.site {
        w.watch_site(p);
    }
    let store = Some(&shared.encoder.store).filter(|_| shared.cfg.compress);
    shared.retire_below.store(shared.generation(), Ordering::Release);
    let settings = shared.cfg.load_settings();
    let last = shared.site_value.last_good();
    // The value this load uses, and why the newest one was refused (then the last good one is used).
    let (mut value, mut refused) = match newest_value(shared) {
        Ok(v) => (v, None),
        Err(e) => match &last {
            Some(l) => (l.clone(), Some(e)),
            None => return fail_first(shared, why, &e, w),
        },
    };
    let mut r = loader::load(&settings, &value.value, store, &mut |d| w.add(d));
    if refused.is_none() {
        // A new value that names a page the content lacks, or with which the content does not load, is the
        // value's fault when the last good value still loads with this content.
        let problem = match &r {
            Ok((_, rep)) if !rep.missing_pages.is_empty() && matches!(shared.cfg.site, SiteSource::File(_)) => {
                Some(format!("site value: {}", rep.missing_pages.join("; ")))
            }
            Err(e) => Some(format!("site value: {e}")),
            _ => None,
        };
        match (problem, &last) {
            (Some(p), Some(l)) if l.revision != value.revision => {
                // memory: the refused table goes before the next is built (the budget counts two tables: the
                // serving one and the one being loaded).
                drop(std::mem::replace(&mut r, Err(String::new())));
                let again = loader::load(&settings, &l.value, store, &mut |d| w.add(d));
                match again {
                    Ok(_) => (value, refused, r) = (l.clone(), Some(p), again),
                    // The content does not load with the last good value either: a content failure.
                    Err(_) => r = again,
                }
            }
            // Missing pages with no other value to fall back on: a first load fails; otherwise the content
            // lost a page the value names, and the previous content keeps serving.
            (Some(p), _) if r.is_ok() => {
                if last.is_none() {
                    shared.site_value.count(false);
                }
                r = Err(p);
            }
            _ => {}
        }
    }
    if let Some(e) = &refused {
        refuse_value(shared, why, e);
    }
    if let (Ok((table, _)), Some(window)) = (&mut r, value.value.skew_window) {
        table.skew = crate::skew::attach::previous_deploys(&shared.cfg.root, window, why, None);
    }
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
        Ok((_, report)) if !first && report.memory.table_over_budget => {
            // memory: the new table alone passes the budget; installing it beside the old one could pass the limit.
            bump(&shared.reloads_failed, 1);
            let msg = table_over_budget(&report.memory);
            shared.load_error.set(&msg);
            log::error(
                "content reload failed: the new content's table does not fit the memory budget; the previous content keeps serving",
                &memory_fields(&report.memory, why),
            );
            Some(w)
        }
        Ok((table, report)) => {
            for e in &report.errors {
                log::warn("file skipped", &[("problem", V::S(e))]);
            }
            let m = report.memory;
            // The load's outcome is said before its table is installed: a reader that sees the new content must
            // also see the error cleared (tests/tree_caps.rs saw v2 served and the gauge still 1 in a loaded CI
            // run). The revision (`serve` below) is said after: it names what serves.
            match &refused {
                Some(e) => shared.load_error.set(e),
                None => {
                    shared.site_value.count(true);
                    shared.site_value.set_refused(false);
                    shared.load_error.clear();
                }
            }
            shared.encoder.install(table, |t| shared.swap(t));
            bump(&shared.reloads_ok, 1);
            log::info(
                "site value serving",
                &[
                    ("revision", V::S(&value.revision)),
                    ("reason", V::S(why)),
                    ("refused_newest", V::Bool(refused.is_some())),
                ],
            );
            shared.site_value.serve(value);
            if m.table_over_budget {
                // A first load has nothing else to serve: it serves, every body from disk, and says so.
                log::error(
                    "content does not fit its memory budget even with every file served from disk: the table alone passes it; raise the memory limit",
                    &memory_fields(&m, why),
                );
            } else if m.over_budget_files > 0 {
                log::warn(
                    "content does not fit its memory budget: part of it is served from disk",
                    &memory_fields(&m, why),
                );
            } else {
                log::info("content fits its memory budget", &memory_fields(&m, why));
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

/// A first load whose site value was refused: nothing to serve, the process exits (lib.rs writes the reason to
/// the termination log).
fn fail_first(shared: &Shared, why: &str, e: &str, w: Watcher) -> Option<Watcher> {
    refuse_value(shared, why, e);
    bump(&shared.reloads_failed, 1);
    shared.load_error.set(e);
    Some(w)
}

/// The memory side of a load, for the log lines that say whether it fits.
fn memory_fields<'a>(m: &crate::site::memory::Summary, why: &'a str) -> [(&'static str, V<'a>); 8] {
    [
        ("reason", V::S(why)),
        ("table_bytes", V::U(m.table_bytes)),
        ("disk_bytes", V::U(m.disk_bytes)),
        ("over_budget_files", V::U(m.over_budget_files as u64)),
        ("memory_limit_bytes", V::U(m.limit.unwrap_or(0))),
        ("memory_budget_bytes", V::U(m.budget.unwrap_or(0))),
        ("fit_memory_limit_bytes", V::U(m.fit_limit)),
        ("table_over_budget", V::Bool(m.table_over_budget)),
    ]
}

/// /load-error's text for a reload refused because its table alone passes the budget.
fn table_over_budget(m: &crate::site::memory::Summary) -> String {
    format!(
        "the new content's table needs {} bytes besides its content, over the memory budget of {} bytes (memory limit {}); a memory limit of {} bytes would hold the site",
        m.table_bytes,
        m.budget.unwrap_or(0),
        m.limit.unwrap_or(0),
        m.fit_limit
    )
}

/// Runs the control loop until the process should exit; returns after SIGTERM's drain delay has passed
/// and workers were told to stop accepting. With `--drain-hold` the drain delay runs from the drain's release
/// (POST /drain/release, admin/mod.rs), the hold bounding the whole wait: a pool pod is released by the operator
/// once no EndpointSlice lists it (internal/poolplacement/drain.go), however long its sites' N slices take.
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
    // While a held drain waits for its release (--drain-hold): polled every HOLD_POLL.
    let mut holding = false;
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
        if holding {
            timeout = timeout.min(HOLD_POLL.as_millis() as i32);
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
                        let (delay, hold) = (shared.cfg.drain_delay, shared.cfg.drain_hold);
                        holding = !hold.is_zero();
                        if holding {
                            log::info(
                                "draining: readiness fails now, serving goes on until the drain is released (POST /drain/release), then for the drain delay",
                                &[
                                    ("signal", V::U(s as u64)),
                                    ("drain_hold_ms", V::U(hold.as_millis() as u64)),
                                    ("drain_delay_ms", V::U(delay.as_millis() as u64)),
                                ],
                            );
                        } else {
                            log::info(
                                "draining: readiness fails now, accepting stops after the drain delay",
                                &[("signal", V::U(s as u64)), ("drain_delay_ms", V::U(delay.as_millis() as u64))],
                            );
                        }
                        drain_deadline = Some(Instant::now() + if holding { hold } else { delay });
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
        if holding && shared.drain_released.load(Ordering::Acquire) {
            holding = false;
            let delay = shared.cfg.drain_delay;
            log::info(
                "drain released: accepting stops after the drain delay",
                &[("drain_delay_ms", V::U(delay.as_millis() as u64))],
            );
            drain_deadline = drain_deadline.map(|d| d.min(Instant::now() + delay));
        }
        if let Some(d) = drain_deadline {
            if Instant::now() >= d {
                if holding {
                    log::warn("drain hold over without a release: closing listeners", &[]);
                }
                log::info("drain delay over: closing listeners, finishing open connections", &[]);
                shared.stop_accepting.store(true, Ordering::Release);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// The kernel queues inotify events before the call that caused them returns, so each drain below sees
    /// exactly the events of the steps before it.
    #[test]
    fn a_symlink_root_reloads_for_its_own_replacement_only() {
        let dir = std::env::temp_dir().join(format!("hs-watch-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("t0")).unwrap();
        symlink("t0", dir.join("current")).unwrap();
        let mut w = Watcher::new();
        w.watch_root(&dir.join("current"));
        assert!(w.link.is_some(), "the parent of a symlink root is watched");
        assert!(!w.drain());

        // What the puller does around a flip: a new tree, a temporary link, an old tree pruned.
        std::fs::create_dir_all(dir.join("t1/docs")).unwrap();
        std::fs::write(dir.join("t1/index.html"), "t1").unwrap();
        symlink("t1", dir.join(".current-new")).unwrap();
        std::fs::create_dir_all(dir.join("old")).unwrap();
        std::fs::remove_dir_all(dir.join("old")).unwrap();
        assert!(!w.drain(), "other names in the link's directory are not the root");

        std::fs::rename(dir.join(".current-new"), dir.join("current")).unwrap();
        assert!(w.drain(), "the link replaced by a rename");
        std::fs::remove_file(dir.join("current")).unwrap();
        symlink("t0", dir.join("current")).unwrap();
        assert!(w.drain(), "the link created anew");

        // A change inside the tree the root resolved to still counts (the ConfigMap case, and SIGHUP-less edits).
        std::fs::write(dir.join("t0/new.html"), "x").unwrap();
        assert!(w.drain());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The site value file's directory: its own name and a ConfigMap's `..data` swap count, nothing else there.
    #[test]
    fn the_site_value_file_reloads_for_its_own_changes_only() {
        let dir = std::env::temp_dir().join(format!("hs-watch-site-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("..ts1")).unwrap();
        std::fs::write(dir.join("..ts1/site.json"), "{}").unwrap();
        symlink("..ts1", dir.join("..data")).unwrap();
        symlink("..data/site.json", dir.join("site.json")).unwrap();
        let mut w = Watcher::new();
        w.watch_site(&dir.join("site.json"));
        assert!(w.site.is_some());
        assert!(!w.drain());
        std::fs::write(dir.join("other.txt"), "x").unwrap();
        std::fs::create_dir_all(dir.join("..ts2")).unwrap();
        std::fs::write(dir.join("..ts2/site.json"), "{}").unwrap();
        symlink("..ts2", dir.join("..data_tmp")).unwrap();
        assert!(!w.drain(), "other names, the new directory and the temporary link are not the value");
        std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
        assert!(w.drain(), "the kubelet's ..data swap");
        // A plain file: replaced by a rename, or written in place.
        std::fs::remove_file(dir.join("site.json")).unwrap();
        assert!(w.drain(), "the file removed");
        std::fs::write(dir.join(".tmp"), "{}").unwrap();
        assert!(!w.drain());
        std::fs::rename(dir.join(".tmp"), dir.join("site.json")).unwrap();
        assert!(w.drain(), "a file renamed over the name");
        std::fs::write(dir.join("site.json"), "{ }").unwrap();
        assert!(w.drain(), "written in place");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_directory_root_watches_no_parent() {
        let dir = std::env::temp_dir().join(format!("hs-watch-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("site")).unwrap();
        let mut w = Watcher::new();
        w.watch_root(&dir.join("site"));
        assert!(w.link.is_none());
        std::fs::create_dir_all(dir.join("sibling")).unwrap();
        assert!(!w.drain(), "the root's parent is not watched");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
