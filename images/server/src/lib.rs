//! hyperstatic-server: a static HTTP/1.1 server that keeps the whole site in memory with precomputed
//! responses, runs one pinned epoll worker per CPU it may use, and reloads content live.

pub mod access;
pub mod admin;
pub mod compress;
pub mod conditional;
pub mod config;
pub mod content;
pub mod control;
pub mod cpus;
pub mod datecache;
pub mod dates;
pub mod encoder;
pub mod encoding;
pub mod encodings;
pub mod glob;
pub mod headers;
pub mod loader;
pub mod log;
pub mod memory;
pub mod metrics;
pub mod mime;
pub mod out;
pub mod parser;
pub mod path;
pub mod precompress;
pub mod range;
pub mod respond;
pub mod rules;
pub mod state;
pub mod timing;
pub mod worker;

use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use config::Config;
use log::V;
use state::Shared;

/// `--check`: load the site, print a report, fail on any problem.
pub fn check(cfg: &Config) -> i32 {
    match loader::load(cfg, None, &mut |_| {}) {
        Ok((t, r)) => {
            println!(
                "site {}: {} files, {} bytes ({} bytes in memory with encodings, {} files served from disk), {} compressed variants",
                cfg.root.display(),
                r.files,
                r.bytes,
                r.memory_bytes,
                r.disk_files,
                r.compressed_variants
            );
            if r.pending_encodings > 0 {
                println!(
                    "compression: {} files get brotli and gzip variants in the background once serving (none at load; `precompress` makes them at build time)",
                    r.pending_encodings
                );
            }
            if t.rules.rule_count() > 0 {
                println!("redirects: {} rules (--redirect flags, then _redirects)", t.rules.rule_count());
            }
            let m = r.memory;
            println!(
                "memory: limit {}, content budget {}; {} bytes served from disk ({} files over the budget); a memory limit of {} would hold every file",
                m.limit.map_or("none".to_string(), |n| n.to_string()),
                m.budget.map_or("unlimited".to_string(), |n| n.to_string()),
                m.disk_bytes,
                m.over_budget_files,
                m.fit_limit
            );
            for e in &r.errors {
                println!("error: {e}");
            }
            if r.errors.is_empty() {
                println!("ok");
                0
            } else {
                println!("{} problem(s) found", r.errors.len());
                1
            }
        }
        Err(e) => {
            println!("error: {e}");
            1
        }
    }
}

fn raise_fd_limit() {
    // SAFETY: get/setrlimit with a local struct.
    unsafe {
        let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// Runs the server until SIGTERM/SIGINT has drained it. Returns the exit code.
pub fn serve(cfg: Config) -> i32 {
    let sigset = control::block_signals();
    raise_fd_limit();
    let mask = cpus::affinity();
    let quota = cpus::cgroup_quota();
    let workers = if cfg.workers > 0 { cfg.workers } else { cpus::worker_count(mask.len(), quota) };
    let pinned = cpus::should_pin(workers, &mask);
    let worker_cpus = if pinned { cpus::list(&mask[..workers]) } else { cpus::list(&mask) };

    // Listeners first, so a bad address fails fast. With port 0 the first listener picks the port and
    // the others join it.
    let mut listeners = Vec::with_capacity(workers);
    let mut addr = cfg.listen;
    for _ in 0..workers {
        match worker::listen(addr) {
            Ok(fd) => {
                if addr.port() == 0 {
                    addr.set_port(worker::local_port(fd));
                }
                listeners.push(fd);
            }
            Err(e) => {
                log::error("cannot listen", &[("address", V::S(&addr.to_string())), ("error", V::S(&e.to_string()))]);
                return 1;
            }
        }
    }
    let admin = match TcpListener::bind(cfg.admin_listen) {
        Ok(l) => l,
        Err(e) => {
            log::error(
                "cannot listen (admin)",
                &[("address", V::S(&cfg.admin_listen.to_string())), ("error", V::S(&e.to_string()))],
            );
            return 1;
        }
    };
    let admin_addr = admin.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let shared = Arc::new(Shared::new(cfg, workers, worker_cpus.clone(), pinned));
    {
        let s = shared.clone();
        std::thread::Builder::new()
            .name("admin".into())
            .spawn(move || admin::serve(admin, s))
            .expect("spawn admin thread");
    }
    log::info(
        "starting",
        &[
            ("version", V::S(env!("CARGO_PKG_VERSION"))),
            ("root", V::S(&shared.cfg.root.display().to_string())),
            ("workers", V::U(workers as u64)),
            ("cpus", V::S(&worker_cpus)),
            ("pinned", V::Bool(pinned)),
            ("cgroup_quota_cores", quota.map_or(V::S("none"), V::F)),
        ],
    );
    // Initial load: readiness stays false until it is done. A broken root at start is fatal.
    let watcher = control::reload(&shared, "start");
    if shared.reloads_ok.load(Ordering::Relaxed) == 0 {
        log::error("initial content load failed", &[]);
        return 1;
    }
    let mut handles = Vec::with_capacity(workers);
    for (i, fd) in listeners.into_iter().enumerate() {
        let s = shared.clone();
        let cpu = if pinned { Some(mask[i]) } else { None };
        let h = std::thread::Builder::new()
            .name(format!("worker-{i}"))
            .spawn(move || {
                if let Some(c) = cpu {
                    if !cpus::pin(c) {
                        log::warn("could not pin worker", &[("worker", V::U(i as u64)), ("cpu", V::U(c as u64))]);
                    }
                }
                worker::Worker::new(i, s, fd).run();
            })
            .expect("spawn worker thread");
        handles.push(h);
    }
    if shared.cfg.compress {
        encoder::spawn(shared.clone());
    }
    shared.loaded.store(true, Ordering::Release);
    log::info("listening", &[("http", V::S(&addr.to_string())), ("admin", V::S(&admin_addr))]);
    control::run(shared.clone(), sigset, watcher);
    // Drain: workers stop accepting and finish their connections; give them the shutdown timeout.
    let deadline = Instant::now() + shared.cfg.shutdown_timeout;
    for h in handles {
        while !h.is_finished() && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let open: u64 = shared.stats.iter().map(|s| s.connections_open.load(Ordering::Relaxed)).sum();
    log::info("stopped", &[("connections_left", V::U(open))]);
    0
}
