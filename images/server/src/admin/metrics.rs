//! Prometheus text exposition for the admin /metrics endpoint.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use crate::state::{Shared, CODES};
use crate::timing;

/// process_cpu_seconds_total and process_resident_memory_bytes from /proc/self.
pub fn process_stats() -> (f64, u64) {
    let (ticks, page) = crate::sys::process::clk_tck_and_page();
    let ticks = ticks as f64;
    let cpu = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / ticks)
        })
        .unwrap_or(0.0);
    let rss = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |p| p * page);
    (cpu, rss)
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// The site value (site_value/): its loads by result, and the revision serving.
fn site_value_families(out: &mut String, v: &crate::site_value::status::Status) {
    family(
        out,
        "hyperstatic_site_value_loads_total",
        "counter",
        "Site value loads, by result (failure: the value was refused and the last good one keeps serving; GET /load-error says why).",
    );
    let _ = writeln!(
        out,
        "hyperstatic_site_value_loads_total{{result=\"success\"}} {}",
        v.loads_ok.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        out,
        "hyperstatic_site_value_loads_total{{result=\"failure\"}} {}",
        v.loads_failed.load(Ordering::Relaxed)
    );
    family(
        out,
        "hyperstatic_site_value_refused",
        "gauge",
        "1 while the newest site value is refused and the last good one serves (GET /load-error says why).",
    );
    let _ = writeln!(out, "hyperstatic_site_value_refused {}", u8::from(v.refused()));
    if let Some(rev) = v.revision() {
        family(out, "hyperstatic_site_value_info", "gauge", "The site value serving, by revision (always 1).");
        let _ = writeln!(out, "hyperstatic_site_value_info{{revision=\"{rev}\"}} 1");
    }
}

/// HTTPS: certificate expiry and reloads, handshakes by outcome (only present when TLS is on).
fn tls_families(out: &mut String, s: &Shared, t: &crate::tls::TlsState) {
    let sum = |f: &dyn Fn(&crate::state::WorkerStats) -> u64| s.stats.iter().map(f).sum::<u64>();
    family(
        out,
        "hyperstatic_tls_certificate_not_after_timestamp_seconds",
        "gauge",
        "notAfter of the certificate new handshakes are served with, in seconds since the epoch.",
    );
    let _ = writeln!(
        out,
        "hyperstatic_tls_certificate_not_after_timestamp_seconds {}",
        t.not_after.load(Ordering::Relaxed)
    );
    family(
        out,
        "hyperstatic_tls_certificate_reloads_total",
        "counter",
        "Certificate changes noticed on disk, by result (error: the previous certificate kept serving).",
    );
    let ok = t.reloads_ok.load(Ordering::Relaxed);
    let _ = writeln!(out, "hyperstatic_tls_certificate_reloads_total{{result=\"success\"}} {ok}");
    let failed = t.reloads_failed.load(Ordering::Relaxed);
    let _ = writeln!(out, "hyperstatic_tls_certificate_reloads_total{{result=\"error\"}} {failed}");
    family(
        out,
        "hyperstatic_tls_certificate_reload_failed",
        "gauge",
        "1 while the last certificate change on disk was refused (malformed, mismatched key, expired or not yet valid; GET /load-error says why).",
    );
    let _ = writeln!(out, "hyperstatic_tls_certificate_reload_failed {}", u8::from(t.refused.get().is_some()));
    family(
        out,
        "hyperstatic_tls_handshakes_total",
        "counter",
        "TLS handshakes by result; resumed says whether a session was resumed (tickets or session cache).",
    );
    let full = sum(&|w| w.tls_handshakes_full.load(Ordering::Relaxed));
    let resumed = sum(&|w| w.tls_handshakes_resumed.load(Ordering::Relaxed));
    let failed = sum(&|w| w.tls_handshake_failures.load(Ordering::Relaxed));
    let _ = writeln!(out, "hyperstatic_tls_handshakes_total{{result=\"success\",resumed=\"false\"}} {full}");
    let _ = writeln!(out, "hyperstatic_tls_handshakes_total{{result=\"success\",resumed=\"true\"}} {resumed}");
    let _ = writeln!(out, "hyperstatic_tls_handshakes_total{{result=\"error\",resumed=\"false\"}} {failed}");
}

/// The background encoder's cost and its waiting for slack (encoder.rs, slack.rs).
fn encoder_families(out: &mut String, e: &crate::compress::encoder_state::State) {
    family(out, "hyperstatic_encoder_cpu_seconds_total", "counter", "CPU time the background encoder thread used.");
    let _ = writeln!(out, "hyperstatic_encoder_cpu_seconds_total {}", e.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9);
    family(
        out,
        "hyperstatic_encoder_paused_seconds_total",
        "counter",
        "Wall time the background encoder waited with work left, held back to the CPU serving leaves (slack.rs).",
    );
    let _ =
        writeln!(out, "hyperstatic_encoder_paused_seconds_total {}", e.paused_ns.load(Ordering::Relaxed) as f64 / 1e9);
}

/// The connection caps: evictions and refusals by reason (count: `--max-connections-per-worker`; memory: the
/// connection memory budget, server/budget.rs), and the memory connections are charged against that budget.
fn connection_families(out: &mut String, s: &Shared) {
    let sum = |f: &dyn Fn(&crate::state::WorkerStats) -> u64| s.stats.iter().map(f).sum::<u64>();
    for (name, help, count, memory) in [
        (
            "hyperstatic_connections_refused_total",
            "Connections closed at accept, by reason: count (the worker was at --max-connections-per-worker with no connection to evict) or memory (its connections held their memory budget and none was idle).",
            sum(&|w| w.connections_refused.load(Ordering::Relaxed)),
            sum(&|w| w.connections_refused_memory.load(Ordering::Relaxed)),
        ),
        (
            "hyperstatic_connections_evicted_total",
            "Connections closed to make room, by reason: count (one with nothing in flight, for a new one at --max-connections-per-worker) or memory (idle ones, oldest idle first, past the connection memory budget).",
            sum(&|w| w.connections_evicted.load(Ordering::Relaxed)),
            sum(&|w| w.connections_evicted_memory.load(Ordering::Relaxed)),
        ),
    ] {
        family(out, name, "counter", help);
        let _ = writeln!(out, "{name}{{reason=\"count\"}} {count}\n{name}{{reason=\"memory\"}} {memory}");
    }
    family(
        out,
        "hyperstatic_connection_memory_bytes",
        "gauge",
        "Memory the open connections are charged against the connection memory budget (sockets, TLS and HTTP/2 state, HPACK tables, buffers, unsent output).",
    );
    let _ =
        writeln!(out, "hyperstatic_connection_memory_bytes {}", sum(&|w| w.connection_memory.load(Ordering::Relaxed)));
    family(
        out,
        "hyperstatic_connection_memory_budget_bytes",
        "gauge",
        "Memory all workers' connections may hold (an eighth of the memory limit; 0 = no limit, no budget).",
    );
    let budget = s.conn_budget_per_worker.map_or(0, |b| b * s.stats.len() as u64);
    let _ = writeln!(out, "hyperstatic_connection_memory_budget_bytes {budget}");
}

pub fn render(s: &Shared) -> String {
    let mut out = String::with_capacity(4096);
    if let Some(p) = &s.pool {
        let report = p.report.lock().unwrap_or_else(|e| e.into_inner()).clone();
        report.metrics(&mut out);
    }
    let sum = |f: &dyn Fn(&crate::state::WorkerStats) -> u64| s.stats.iter().map(f).sum::<u64>();
    family(&mut out, "hyperstatic_requests_total", "counter", "HTTP responses sent, by status code.");
    for (i, code) in CODES.iter().enumerate() {
        let n = sum(&|w| w.requests[i].load(Ordering::Relaxed));
        if n > 0 || *code == 200 {
            let _ = writeln!(out, "hyperstatic_requests_total{{code=\"{code}\"}} {n}");
        }
    }
    family(
        &mut out,
        "hyperstatic_response_bytes_total",
        "counter",
        "Response bytes queued for sending (headers and bodies).",
    );
    let _ = writeln!(out, "hyperstatic_response_bytes_total {}", sum(&|w| w.response_bytes.load(Ordering::Relaxed)));
    family(
        &mut out,
        "hyperstatic_request_duration_seconds",
        "histogram",
        "Time from a request head parsed to its response handed to the kernel (last byte written or sent).",
    );
    let (buckets, secs) = timing::cumulative(s.stats.iter().map(|w| &w.durations));
    for (le, n) in timing::BUCKETS.iter().zip(&buckets) {
        let _ = writeln!(out, "hyperstatic_request_duration_seconds_bucket{{le=\"{le}\"}} {n}");
    }
    let count = buckets[timing::BUCKETS.len()];
    let _ = writeln!(out, "hyperstatic_request_duration_seconds_bucket{{le=\"+Inf\"}} {count}");
    let _ = writeln!(out, "hyperstatic_request_duration_seconds_sum {secs}");
    let _ = writeln!(out, "hyperstatic_request_duration_seconds_count {count}");
    family(&mut out, "hyperstatic_connections_open", "gauge", "Client connections currently open.");
    let _ = writeln!(out, "hyperstatic_connections_open {}", sum(&|w| w.connections_open.load(Ordering::Relaxed)));
    family(&mut out, "hyperstatic_connections_total", "counter", "Client connections accepted.");
    let _ = writeln!(out, "hyperstatic_connections_total {}", sum(&|w| w.connections_total.load(Ordering::Relaxed)));
    for (name, help, field) in [
        ("hyperstatic_http2_connections_total", "HTTP/2 connections accepted, by transport.", 0),
        ("hyperstatic_http2_streams_total", "HTTP/2 requests (streams) answered, by transport.", 1),
    ] {
        family(&mut out, name, "counter", help);
        for (i, t) in ["tls", "cleartext"].iter().enumerate() {
            let n = sum(&|w| [&w.h2_connections, &w.h2_streams][field][i].load(Ordering::Relaxed));
            let _ = writeln!(out, "{name}{{transport=\"{t}\"}} {n}");
        }
    }
    for (name, help, field) in [
        ("hyperstatic_http3_connections_total", "HTTP/3 connections accepted.", 0),
        ("hyperstatic_http3_streams_total", "HTTP/3 requests (streams) answered.", 1),
        (
            "hyperstatic_http3_retries_total",
            "QUIC Retry packets sent (address validation during a handshake flood).",
            2,
        ),
        ("hyperstatic_http3_refused_total", "HTTP/3 connections refused (at the connection cap, or draining).", 3),
    ] {
        family(&mut out, name, "counter", help);
        let n =
            sum(&|w| [&w.h3_connections, &w.h3_streams, &w.h3_retries, &w.h3_refused][field].load(Ordering::Relaxed));
        let _ = writeln!(out, "{name} {n}");
    }
    family(
        &mut out,
        "hyperstatic_http3_connections_open",
        "gauge",
        "HTTP/3 connections held: handshaking, open, or closing until drained.",
    );
    let _ = writeln!(out, "hyperstatic_http3_connections_open {}", sum(&|w| w.h3_open.load(Ordering::Relaxed)));
    connection_families(&mut out, s);
    let hostile = [
        (
            "hyperstatic_pre_head_connections_evicted_total",
            "Connections closed before their request head completed (TLS handshake in progress or partial head): a newer one took the worker past hyperstatic_pre_head_connections_max_per_worker.",
            sum(&|w| w.pre_head_evicted.load(Ordering::Relaxed)),
        ),
        (
            "hyperstatic_slow_readers_closed_total",
            "Connections closed because their unsent output still held content a newer load replaced.",
            sum(&|w| w.slow_readers_closed.load(Ordering::Relaxed)),
        ),
        (
            "hyperstatic_proxy_protocol_refused_total",
            "Connections closed because, with --proxy-protocol, they did not open with a valid PROXY protocol v2 header.",
            sum(&|w| w.proxy_refused.load(Ordering::Relaxed)),
        ),
    ];
    for (name, help, n) in hostile {
        family(&mut out, name, "counter", help);
        let _ = writeln!(out, "{name} {n}");
    }
    // Fair share (fairshare/): requests refused by a site's limits.perClient and TLS connections closed at accept by
    // its limits.perClientHandshakes, by reason, and buckets forgotten before they were full again.
    family(
        &mut out,
        "hyperstatic_requests_limited_total",
        "counter",
        "Requests refused because their client address was past its share of the site, by reason: per_client (answered 429, limits.perClient), tls_handshake (connection closed before its TLS handshake, limits.perClientHandshakes).",
    );
    let limited = sum(&|w| w.fair.limited.load(Ordering::Relaxed));
    let _ = writeln!(out, "hyperstatic_requests_limited_total{{reason=\"per_client\"}} {limited}");
    let handshakes = sum(&|w| w.fair.handshakes_limited.load(Ordering::Relaxed));
    let _ = writeln!(out, "hyperstatic_requests_limited_total{{reason=\"tls_handshake\"}} {handshakes}");
    family(
        &mut out,
        "hyperstatic_basic_auth_checks_total",
        "counter",
        "Authorization values checked against a site's htpasswd file (a bcrypt verification, or none for an unknown user): each worker's cache misses; a value it has checked is answered from its cache.",
    );
    let checks = sum(&|w| w.basic_auth_checks.load(Ordering::Relaxed));
    let _ = writeln!(out, "hyperstatic_basic_auth_checks_total {checks}");
    family(
        &mut out,
        "hyperstatic_client_table_evictions_total",
        "counter",
        "Per-client buckets forgotten before they were full again: the table (--client-table-size) holds fewer clients than come, or an address flood pushed them out.",
    );
    let _ =
        writeln!(out, "hyperstatic_client_table_evictions_total {}", sum(&|w| w.fair.evicted.load(Ordering::Relaxed)));
    family(
        &mut out,
        "hyperstatic_pre_head_connections_max_per_worker",
        "gauge",
        "Connections waiting for their request head one worker holds at most (a sixteenth of the memory limit over the workers, 32 KiB each; 1024 without a limit).",
    );
    let _ = writeln!(out, "hyperstatic_pre_head_connections_max_per_worker {}", s.pre_head_per_worker);
    family(
        &mut out,
        "hyperstatic_pre_head_memory_budget_bytes",
        "gauge",
        "Memory all workers' connections may hold before their request head completes, at 32 KiB each.",
    );
    let budget = s.pre_head_per_worker as u64 * s.stats.len() as u64 * crate::site::memory::PRE_HEAD_COST;
    let _ = writeln!(out, "hyperstatic_pre_head_memory_budget_bytes {budget}");
    let (table, _) = s.table();
    family(&mut out, "hyperstatic_content_files", "gauge", "Files in the served content table.");
    let _ = writeln!(out, "hyperstatic_content_files {}", table.files());
    family(
        &mut out,
        "hyperstatic_redirect_rules",
        "gauge",
        "Redirect and rewrite rules in force (flags and _redirects).",
    );
    let _ = writeln!(out, "hyperstatic_redirect_rules {}", table.rules.rule_count());
    family(&mut out, "hyperstatic_content_bytes", "gauge", "Total size of the served files (identity encoding).");
    let _ = writeln!(out, "hyperstatic_content_bytes {}", table.bytes);
    family(&mut out, "hyperstatic_content_memory_bytes", "gauge", "Bytes of content held in memory, all encodings.");
    let _ = writeln!(out, "hyperstatic_content_memory_bytes {}", table.memory_bytes);
    let m = table.memory;
    family(
        &mut out,
        "hyperstatic_content_disk_bytes",
        "gauge",
        "Bytes of the files served from disk (identity encoding).",
    );
    let _ = writeln!(out, "hyperstatic_content_disk_bytes {}", m.disk_bytes);
    family(&mut out, "hyperstatic_memory_limit_bytes", "gauge", "The memory limit the server works under (0 = none).");
    let _ = writeln!(out, "hyperstatic_memory_limit_bytes {}", m.limit.unwrap_or(0));
    family(
        &mut out,
        "hyperstatic_content_memory_budget_bytes",
        "gauge",
        "The budget for content held in memory (0 = unlimited).",
    );
    let _ = writeln!(out, "hyperstatic_content_memory_budget_bytes {}", m.budget.unwrap_or(0));
    family(
        &mut out,
        "hyperstatic_content_fit_memory_limit_bytes",
        "gauge",
        "The smallest memory limit under which the whole site with its known variants would be held in memory, its table's cost included.",
    );
    let _ = writeln!(out, "hyperstatic_content_fit_memory_limit_bytes {}", m.fit_limit);
    family(
        &mut out,
        "hyperstatic_content_table_bytes",
        "gauge",
        "What the content table costs besides content (entries, header blocks, names, open files), charged to the budget.",
    );
    let _ = writeln!(out, "hyperstatic_content_table_bytes {}", table.table_bytes);
    family(
        &mut out,
        "hyperstatic_content_table_over_memory_budget",
        "gauge",
        "1 when the content table alone passes the memory budget, every file served from disk (raise the limit).",
    );
    let _ = writeln!(out, "hyperstatic_content_table_over_memory_budget {}", u8::from(m.table_over_budget));
    drop(table);
    let e = &s.encoder;
    family(
        &mut out,
        "hyperstatic_content_encodings_pending",
        "gauge",
        "Files whose compressed variants the background encoder has yet to serve.",
    );
    let _ = writeln!(out, "hyperstatic_content_encodings_pending {}", e.pending.load(Ordering::Relaxed));
    family(
        &mut out,
        "hyperstatic_content_encodings_over_budget",
        "gauge",
        "Files the encoder's last pass left without variants: the memory budget could not hold their encoding.",
    );
    let _ = writeln!(out, "hyperstatic_content_encodings_over_budget {}", e.over_budget.load(Ordering::Relaxed));
    family(
        &mut out,
        "hyperstatic_content_encodings_total",
        "counter",
        "Files given compressed variants in the background, by source (computed, or read from --compress-cache).",
    );
    let _ = writeln!(
        out,
        "hyperstatic_content_encodings_total{{source=\"computed\"}} {}",
        e.computed.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        out,
        "hyperstatic_content_encodings_total{{source=\"cache\"}} {}",
        e.from_cache.load(Ordering::Relaxed)
    );
    encoder_families(&mut out, e);
    family(&mut out, "hyperstatic_reloads_total", "counter", "Content reloads, by result.");
    let _ = writeln!(out, "hyperstatic_reloads_total{{result=\"success\"}} {}", s.reloads_ok.load(Ordering::Relaxed));
    let _ =
        writeln!(out, "hyperstatic_reloads_total{{result=\"failure\"}} {}", s.reloads_failed.load(Ordering::Relaxed));
    family(
        &mut out,
        "hyperstatic_content_load_failed",
        "gauge",
        "1 while the last content load or reload failed (the previous content keeps serving; GET /load-error says why).",
    );
    let _ = writeln!(out, "hyperstatic_content_load_failed {}", u8::from(s.load_error.get().is_some()));
    site_value_families(&mut out, &s.site_value);
    if let Some(t) = &s.tls {
        tls_families(&mut out, s, t);
    }
    family(
        &mut out,
        "hyperstatic_worker_cpus",
        "gauge",
        "Worker threads; label cpus lists the CPUs they run on, pinned says one worker per CPU.",
    );
    let _ =
        writeln!(out, "hyperstatic_worker_cpus{{cpus=\"{}\",pinned=\"{}\"}} {}", s.worker_cpus, s.pinned, s.workers);
    family(&mut out, "hyperstatic_ready", "gauge", "1 when /readyz answers 200.");
    let _ = writeln!(out, "hyperstatic_ready {}", u8::from(s.ready()));
    family(&mut out, "hyperstatic_build_info", "gauge", "Build information.");
    let _ = writeln!(out, "hyperstatic_build_info{{version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"));
    let (cpu, rss) = process_stats();
    family(&mut out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
    let _ = writeln!(out, "process_cpu_seconds_total {cpu}");
    family(&mut out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    let _ = writeln!(out, "process_resident_memory_bytes {rss}");
    family(&mut out, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
    let _ = writeln!(out, "process_start_time_seconds {}", s.start_time);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::counters::bump;
    use crate::state::code_index;

    #[test]
    fn exposition_has_the_contract_names() {
        let s = Shared::new(Config::default(), 2, "0,1".into(), true);
        bump(&s.stats[0].requests[code_index(404)], 3);
        bump(&s.stats[1].requests[code_index(404)], 2);
        s.stats[0].durations.observe(50_000);
        s.stats[1].durations.observe(2_000_000);
        let text = render(&s);
        assert!(text.contains("hyperstatic_requests_total{code=\"200\"} 0\n"));
        assert!(text.contains("# TYPE hyperstatic_request_duration_seconds histogram\n"));
        assert!(text.contains("hyperstatic_request_duration_seconds_bucket{le=\"0.0001\"} 1\n"), "{text}");
        assert!(text.contains("hyperstatic_request_duration_seconds_bucket{le=\"0.001\"} 1\n"));
        assert!(text.contains("hyperstatic_request_duration_seconds_bucket{le=\"0.0025\"} 2\n"));
        assert!(text.contains("hyperstatic_request_duration_seconds_bucket{le=\"10\"} 2\n"));
        assert!(text.contains("hyperstatic_request_duration_seconds_bucket{le=\"+Inf\"} 2\n"));
        assert!(text.contains("hyperstatic_request_duration_seconds_sum 0.00205\n"), "{text}");
        assert!(text.contains("hyperstatic_request_duration_seconds_count 2\n"));
        assert!(text.contains("hyperstatic_requests_total{code=\"404\"} 5\n"));
        assert!(text.contains("hyperstatic_worker_cpus{cpus=\"0,1\",pinned=\"true\"} 2\n"));
        for name in [
            "hyperstatic_response_bytes_total ",
            "hyperstatic_connections_open ",
            "hyperstatic_connections_total ",
            "hyperstatic_connections_evicted_total{reason=\"count\"} 0\n",
            "hyperstatic_connections_evicted_total{reason=\"memory\"} 0\n",
            "hyperstatic_connections_refused_total{reason=\"memory\"} 0\n",
            "hyperstatic_connection_memory_bytes 0\n",
            "hyperstatic_connection_memory_budget_bytes ",
            "hyperstatic_content_files ",
            "hyperstatic_content_bytes ",
            "hyperstatic_content_memory_bytes ",
            "hyperstatic_content_disk_bytes ",
            "hyperstatic_memory_limit_bytes ",
            "hyperstatic_content_memory_budget_bytes ",
            "hyperstatic_content_fit_memory_limit_bytes ",
            "hyperstatic_content_table_bytes ",
            "hyperstatic_content_table_over_memory_budget 0\n",
            "hyperstatic_content_encodings_over_budget 0\n",
            "hyperstatic_reloads_total{result=\"failure\"} ",
            "hyperstatic_content_load_failed 0\n",
            "hyperstatic_encoder_cpu_seconds_total 0\n",
            "hyperstatic_encoder_paused_seconds_total 0\n",
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "hyperstatic_build_info{",
        ] {
            assert!(text.contains(name), "{name}");
        }
        let (_, rss) = process_stats();
        assert!(rss > 0);
    }
}
