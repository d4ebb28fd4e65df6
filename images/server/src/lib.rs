//! hyperstatic-server: a static HTTP/1.1 server that keeps the whole site in memory with precomputed
//! responses, runs one pinned epoll worker per CPU it may use, and reloads content live.
//!
//! Layers, bottom up: `sys` (every system call and every `unsafe`, behind thin safe wrappers), the transport
//! (`server`: the worker's epoll loop and connections; `tls`), the protocols (`http1`; `http2`, sans-IO, not wired
//! in yet), and the protocol-agnostic core that decides what a request gets (`answer`, `rules`, `headers`,
//! `compress`, `site`). What reload swaps is a `publish::Published<T>`; `admin`, `control` and `state` run the
//! process around the workers. This file starts it: `check` for `--check`, `serve` for everything else.

pub mod access;
pub mod admin;
pub mod answer;
pub mod compress;
pub mod config;
pub mod control;
pub mod counters;
pub mod cpus;
pub mod datecache;
pub mod dates;
pub mod fairshare;
pub mod fxhash;
pub mod guard;
pub mod headers;
pub mod http1;
pub mod http2;
pub mod http3;
pub mod linemap;
pub mod log;
pub mod pool;
pub mod proxy_v2;
pub mod publish;
pub mod quic;
pub mod rules;
pub mod server;
pub mod site;
pub mod site_value;
pub mod skew;
pub mod state;
pub mod sys;
pub mod timing;
pub mod tls;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use config::Config;
use log::V;
use state::Shared;

/// `--check` for the TLS flags: the material must load as it would at start. True when fine (or no TLS).
fn check_tls(cfg: &Config) -> bool {
    let Some(files) = &cfg.tls else { return true };
    match tls::material::load(files) {
        Ok((_, b, _)) => {
            println!(
                "tls: {} and {} load; certificate valid until {} (unix {}); https on {}",
                files.cert.display(),
                files.key.display(),
                dates::format_string(b.not_after),
                b.not_after,
                cfg.tls_listen
            );
            true
        }
        Err(e) => {
            println!("error: {e}");
            false
        }
    }
}

/// `--check --sites DIR`: the pool's index as the server would read it (every shard, every site value), and
/// which sites have a tree; fails when a shard or a site is refused. Trees are loaded when served, not here.
fn check_pool(dir: &std::path::Path, reading: &pool::index::Reading) -> i32 {
    let merged = pool::index::Index::default().read(&dir.join("index"), reading);
    for s in &merged.sites {
        let tree = dir.join("content").join(&s.id).join("current");
        let has = if tree.exists() { "tree present" } else { "no tree yet" };
        println!("site {}: {} hosts, value {}, {has}", s.id, s.hosts.len(), s.value.revision);
    }
    verdict(&merged.problems)
}

/// `--check`'s last lines: each problem, then `ok` (0) or how many were found (1).
fn verdict(problems: &[String]) -> i32 {
    for p in problems {
        println!("error: {p}");
    }
    if problems.is_empty() {
        println!("ok");
        0
    } else {
        println!("{} problem(s) found", problems.len());
        1
    }
}

/// `--check`: load the site and the TLS material, print a report, fail on any problem.
pub fn check(cfg: &Config) -> i32 {
    // What serving would charge (serve below).
    if cfg.tls.as_ref().is_some_and(|t| t.http3) {
        site::footprint::charge_http3_heads();
    }
    if let Some(dir) = &cfg.sites {
        return check_pool(dir, &cfg.index_reading());
    }
    // The load keeps open every file served from disk, as serving does: the same descriptor limit, or a site that
    // serves fine fails its check under a low soft limit.
    raise_fd_limit();
    if !check_tls(cfg) {
        println!("1 problem(s) found");
        return 1;
    }
    let value = match &cfg.site {
        config::SiteSource::File(p) => match site_value::read(p, cfg.tls.is_some()) {
            Ok(v) => {
                println!("site value {}: revision {}", p.display(), v.revision);
                v
            }
            Err(e) => {
                println!("error: {e}");
                println!("1 problem(s) found");
                return 1;
            }
        },
        config::SiteSource::Flags(v) => {
            let v = site_value::SiteValue::clone(v).revised();
            println!("site value (from flags): revision {}", v.revision);
            v
        }
    };
    match site::loader::load(&cfg.load_settings(), &value.value, None, &mut |_| {}) {
        Ok((t, mut r)) => {
            if matches!(cfg.site, config::SiteSource::File(_)) {
                // A value file naming a page the content lacks is refused (site_value/): said by its JSON path.
                r.errors.retain(|e| !e.starts_with("--not-found-page ") && !e.starts_with("--error-page "));
                r.errors.extend(r.missing_pages.iter().map(|m| format!("site value: {m}")));
            }
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
                println!("redirects: {} rules (the site value's, then _redirects)", t.rules.rule_count());
            }
            let m = r.memory;
            println!(
                "memory: limit {}, content budget {}; the table costs {} bytes besides content{}; {} bytes served from disk ({} files over the budget); a memory limit of {} would hold every file",
                m.limit.map_or("none".to_string(), |n| n.to_string()),
                m.budget.map_or("unlimited".to_string(), |n| n.to_string()),
                m.table_bytes,
                if m.table_over_budget { ", more than the budget even with every file on disk" } else { "" },
                m.disk_bytes,
                m.over_budget_files,
                m.fit_limit
            );
            verdict(&r.errors)
        }
        Err(e) => {
            println!("error: {e}");
            1
        }
    }
}

use sys::process::raise_fd_limit;

/// One SO_REUSEPORT listener per worker on `addr` (server/listen.rs). None (after logging `what`) when the address
/// cannot be bound.
fn listen_all(addr: std::net::SocketAddr, workers: usize, what: &str) -> Option<(Vec<i32>, std::net::SocketAddr)> {
    match server::listen::listen_all(addr, workers) {
        Ok(x) => Some(x),
        Err(e) => {
            log::error(what, &[("address", V::S(&addr.to_string())), ("error", V::S(&e.to_string()))]);
            None
        }
    }
}

/// Runs the server until SIGTERM/SIGINT has drained it. Returns the exit code.
pub fn serve(cfg: Config) -> i32 {
    let sigset = control::block_signals();
    raise_fd_limit();
    if cfg.tls.as_ref().is_some_and(|t| t.http3) {
        // Before the first load: every variant may get its HTTP/3 head (site/footprint.rs).
        site::footprint::charge_http3_heads();
    }
    let mask = cpus::affinity();
    let quota = cpus::cgroup_quota();
    let workers = if cfg.workers > 0 { cfg.workers } else { cpus::worker_count(mask.len(), quota) };
    let pinned = cpus::should_pin(workers, &mask);
    let worker_cpus = if pinned { cpus::list(&mask[..workers]) } else { cpus::list(&mask) };

    // Listeners first, so a bad address fails fast. With port 0 the first listener picks the port and
    // the others join it.
    let Some((listeners, addr)) = listen_all(cfg.listen, workers, "cannot listen") else { return 1 };
    // HTTPS: the material must load now (a start failure naming the file otherwise), then its listeners.
    let mut tls_state = None;
    let mut tls_listeners = Vec::new();
    let mut tls_addr = cfg.tls_listen;
    if let Some(files) = &cfg.tls {
        let (material, built, resumption) = match tls::material::load(files) {
            Ok(x) => x,
            Err(e) => {
                log::error("cannot load the TLS certificate", &[("error", V::S(&e))]);
                return 1;
            }
        };
        log::info(
            "tls certificate loaded",
            &[("cert", V::S(&files.cert.display().to_string())), ("not_after", V::U(built.not_after as u64))],
        );
        tls_state = Some((tls::TlsState::new(built, resumption), tls::watch::CertWatch::new(files.clone(), material)));
        let Some((fds, a)) = listen_all(cfg.tls_listen, workers, "cannot listen (https)") else { return 1 };
        (tls_listeners, tls_addr) = (fds, a);
    }
    // HTTP/3: UDP on the TLS port, a socket per worker steered by connection ID (server/h3.rs, sys/steer.rs).
    let mut udp = Vec::new();
    if cfg.tls.as_ref().is_some_and(|t| t.http3) {
        match server::listen::udp_all(tls_addr, workers) {
            Ok(u) => {
                if let Some(e) = &u.unsteered {
                    log::warn(
                        "http3: cannot steer datagrams to their worker, HTTP/3 on one worker only",
                        &[("error", V::S(&e.to_string()))],
                    );
                }
                udp = u.fds;
            }
            Err(e) => {
                log::error(
                    "cannot listen (http3)",
                    &[("address", V::S(&tls_addr.to_string())), ("error", V::S(&e.to_string()))],
                );
                return 1;
            }
        }
    }
    let admin = match server::listen::listen_admin(cfg.admin_listen) {
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
    let pooled = cfg.sites.is_some();
    let mut shared = Shared::new(cfg, workers, worker_cpus.clone(), pinned);
    if pooled {
        shared.pool = Some(Arc::new(pool::Pool::default()));
    }
    let cert_watch = tls_state.map(|(published, watch)| {
        shared.tls = Some(published);
        watch
    });
    let shared = Arc::new(shared);
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
            ("root", V::S(&shared.cfg.sites.as_ref().unwrap_or(&shared.cfg.root).display().to_string())),
            ("workers", V::U(workers as u64)),
            ("cpus", V::S(&worker_cpus)),
            ("pinned", V::Bool(pinned)),
            ("cgroup_quota_cores", quota.map_or(V::S("none"), V::F)),
        ],
    );
    // Initial load: readiness stays false until it is done. A broken root at start is fatal. A pool reads its
    // index now and loads each site when it is first asked for (pool/).
    let watcher = match (&shared.pool, &shared.cfg.sites) {
        (Some(p), Some(dir)) => {
            pool::watch::start(p.clone(), dir, shared.cfg.load_settings(), workers, shared.cfg.index_reading());
            None
        }
        _ => control::reload(&shared, "start"),
    };
    if !pooled && shared.reloads_ok.load(Ordering::Relaxed) == 0 {
        log::error("initial content load failed", &[]);
        if let (Some(path), Some(msg)) = (&shared.cfg.termination_log, shared.load_error.get()) {
            if let Err(e) = site::load_error::write_termination_log(path, &msg) {
                log::warn(
                    "cannot write the termination log",
                    &[("path", V::S(&path.display().to_string())), ("error", V::S(&e.to_string()))],
                );
            }
        }
        return 1;
    }
    // Alt-Svc names the port visitors reach (--alt-svc-port, e.g. a Service's 443), else the TLS listener's.
    let advertised = shared.cfg.alt_svc_port.unwrap_or(tls_addr.port());
    let quic_keys = Arc::new(quic::keys::Keys::new(shared.cfg.http3_early_data));
    let mut handles = Vec::with_capacity(workers);
    for (i, fd) in listeners.into_iter().enumerate() {
        let s = shared.clone();
        let tls_fd = tls_listeners.get(i).copied().unwrap_or(-1);
        let cpu = if pinned { Some(mask[i]) } else { None };
        let (udp_fd, http3, keys) = (udp.get(i).copied(), !udp.is_empty(), quic_keys.clone());
        let h = std::thread::Builder::new()
            .name(format!("worker-{i}"))
            .spawn(move || {
                if let Some(c) = cpu {
                    if !cpus::pin(c) {
                        log::warn("could not pin worker", &[("worker", V::U(i as u64)), ("cpu", V::U(c as u64))]);
                    }
                }
                let w = server::Worker::new(i, s, fd, tls_fd);
                let w = if http3 { w.advertise_http3(advertised) } else { w };
                match udp_fd {
                    Some(fd) => w.with_http3(fd, keys),
                    None => w,
                }
                .run();
            })
            .expect("spawn worker thread");
        handles.push(h);
    }
    // The background encoder works on the single site's table; pool sites serve the siblings their trees hold.
    if shared.cfg.compress && !pooled {
        compress::encoder::spawn(shared.clone());
    }
    shared.loaded.store(true, Ordering::Release);
    let https = if shared.tls.is_some() { tls_addr.to_string() } else { "off".to_string() };
    log::info("listening", &[("http", V::S(&addr.to_string())), ("https", V::S(&https)), ("admin", V::S(&admin_addr))]);
    control::run(shared.clone(), sigset, watcher, cert_watch);
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
