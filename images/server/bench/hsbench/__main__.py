"""make bench-server: our server against every peer (nginx, lighttpd, h2o, each tuned as its docs advise) and
the floor (a canned-response loop), interleaved, repeated, medians and min–max reported.

Usage: python3 -m hsbench --ours PATH_TO_hyperstatic-server   (or --ours nginx: nginx against itself,
       a self-check of the harness: every ratio should come out ≈ 1)
Environment: PEERS (nginx,lighttpd,h2o; any subset), BENCH_FLOOR (1; 0 leaves the floor out),
BENCH_SECONDS (7), REPS (3), WARMUP_SECONDS (2), BENCH_CPU_QUOTA (40, percent of a core; 0 = no cap),
SERVER_CPU (0), CLIENT_CPU (1), IDLE_CONNS (10000; 0 skips), BENCH_WORKLOADS (subset, comma-separated),
BENCH_OUT (_out/bench), BENCH_SERVER_ARGS (extra flags for our server), BENCH_NICE (-20), BENCH_KEEP_TMP,
BENCH_DEPLOYED (1; 0 leaves out the row of ours as deployed), BENCH_PAGES (1000: that row's compressible pages).
"""
import argparse
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from . import content, h2load, h3load, load, measure, render, report, tls, tlsload
from .cgroup import CgroupError, CpuQuota
from .placement import Client
from .progress import step, warn
from .servers import (CADDY_BIN, H2O_BIN, LIGHTTPD, NGINX, NGINX_TRIXIE, Hyperstatic, Server, enable_h2c, enable_h3,
                      free_port, lineup, parse_peers)
from .workloads import Workload, select


# the h2 8 KiB row's URI list: this many draws from the 1,000 files (h2load's clients each walk it in order)
H2_SET_URIS = 10000


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, "") or default)


@dataclass
class Settings:
    ours: str
    out: str
    seconds: int
    reps: int
    warmup: int
    quota_pct: int
    server_cpu: int
    client_cpu: int
    idle_n: int
    workloads: list[Workload]
    extra_args: list[str]
    peers: list[str]
    floor: bool
    deployed: bool = False  # the row of ours as deployed (fresh per run, encoder at work on BENCH_PAGES pages)
    pages: int = 0

    @classmethod
    def from_env(cls, ours: str, out: str) -> "Settings":
        return cls(ours=ours, out=out, seconds=_env_int("BENCH_SECONDS", 7), reps=_env_int("REPS", 3),
                   warmup=_env_int("WARMUP_SECONDS", 2), quota_pct=_env_int("BENCH_CPU_QUOTA", 40),
                   server_cpu=_env_int("SERVER_CPU", 0), client_cpu=_env_int("CLIENT_CPU", 1),
                   idle_n=_env_int("IDLE_CONNS", 10000), workloads=select(os.environ.get("BENCH_WORKLOADS", "")),
                   extra_args=shlex.split(os.environ.get("BENCH_SERVER_ARGS", "")),
                   peers=[p for p in parse_peers(os.environ.get("PEERS", "")) if p != "floor"],
                   floor=os.environ.get("BENCH_FLOOR", "1") not in ("0", ""),
                   deployed=ours != "nginx" and os.environ.get("BENCH_DEPLOYED", "1") not in ("0", ""),
                   pages=_env_int("BENCH_PAGES", 1000))

    def runs_per_rep(self) -> int:
        n = len(self.workloads) * (1 + len(self.peers) + (1 if self.deployed else 0))
        return n + (sum(1 for w in self.workloads if w.floor) if self.floor else 0)

    def problems(self) -> list[str]:
        out = []
        cpus = os.sched_getaffinity(0)
        if self.server_cpu == self.client_cpu or not {self.server_cpu, self.client_cpu} <= cpus:
            out.append(f"server CPU {self.server_cpu} and client CPU {self.client_cpu} must be two usable CPUs "
                       f"(usable: {sorted(cpus)})")
        out += [f"{t} not found (run.sh installs it)" for t in ("wrk", "taskset") if not shutil.which(t)]
        out += [f"{p} not found at {b} (run.sh installs it)" for p, b in
                (("nginx", NGINX), ("lighttpd", LIGHTTPD), ("h2o", H2O_BIN), ("caddy", CADDY_BIN))
                if (p in self.peers or (p == "nginx" and self.ours == "nginx")) and not os.access(b, os.X_OK)]
        if "nginx-1.26" in self.peers and not os.path.exists(NGINX_TRIXIE + ".complete"):
            out.append(f"nginx-1.26: no Debian 13 tree at {NGINX_TRIXIE} (make nginx-trixie makes it)")
        if any(w.tls for w in self.workloads) and not shutil.which("openssl"):
            out.append("openssl not found: it makes the HTTPS rows' certificate and checks every server's TLS")
        if any(w.client == "tlsload" for w in self.workloads) and not tlsload.go_binary():
            out.append("go not found: it builds the HTTPS new-connection rows' load client (tlsload/main.go)")
        if any(w.client == "h3load" for w in self.workloads) and not tlsload.go_binary():
            out.append("go not found: it builds the HTTP/3 rows' load client (h3interop/quicgo/h3load)")
        if any(w.client == "h2load" for w in self.workloads) and not shutil.which("h2load"):
            out.append("h2load not found: it drives the HTTP/2 rows (run.sh installs nghttp2-client)")
        if self.floor and not shutil.which(os.environ.get("CC", "gcc")):
            out.append("gcc not found: the floor responder is built from floor.c (BENCH_FLOOR=0 leaves it out)")
        if self.ours != "nginx" and not os.access(self.ours, os.X_OK):
            out.append(f"server binary {self.ours} is not executable")
        return out


def _git_rev() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def start(servers: list[Server], site: content.Content, meta: dict, clients: load.Clients) -> None:
    for s in servers:
        step(f"starting {s.name} ({meta['versions'][s.name]}) on 127.0.0.1:{s.port}, {s.quota.describe()}")
        s.start()
        s.validate(site.samples)
        step(f"{s.name} serves the content correctly; pids {s.pids()}")
        if clients.tls_setup and s.tls_port:
            c = meta["tls"]["servers"][s.name] = tls.check(s, clients.tls_setup, site.samples)
            step(f"{s.name} HTTPS on 127.0.0.1:{s.tls_port}: {c['protocol']} {c['cipher']} ALPN {c['alpn']}, "
                 f"session {c['resumed']} on reconnect, exact bytes (picks {c['cipher_unforced_client']} when the "
                 f"client offers OpenSSL's default list; ALPN {c['alpn_h2_offered'] or 'none'} when offered h2)")


def idle_phase(cfg: Settings, servers: list[Server], client: Client, h2: str = "") -> dict[str, dict]:
    """RSS with cfg.idle_n idle HTTP/1.1 connections on each server's plain port, or HTTP/2 ones over TLS (h2 "tls")
    or with prior knowledge on the plain port (h2 "h2c")."""
    idle = {}
    kind = {"": "keep-alive", "tls": "HTTP/2 (TLS)", "h2c": "h2c"}[h2]
    for s in servers:
        step(f"{s.name}: opening {cfg.idle_n:,} idle {kind} connections")
        r = measure.idle_connections(s, cfg.idle_n, content.SMALL_PATH, client, h2=h2)
        idle[s.name] = r.row()
        step(f"{s.name}: RSS {r.rss_before / 1e6:.1f} MB fresh → {r.rss_idle / 1e6:.1f} MB with "
             f"{r.conns_alive:,} idle connections alive ({r.conns_failed} failed to open)")
        if r.conns_alive < cfg.idle_n:
            warn(f"{s.name}: only {r.conns_alive:,} of {cfg.idle_n:,} idle connections stayed open")
    return idle


def _note(r: measure.Run, quota_pct: int) -> str:
    note = ""
    if r.errors or r.non2xx:
        note += f"  ⚠ {r.errors} socket errors, {r.non2xx} non-2xx"
    if quota_pct and r.cap_use < 0.85:
        note += f"  ⚠ server used only {r.cap_use:.0%} of its CPU cap: not saturated"
        if r.client_cpu_s > 0.9 * r.seconds:
            note += " (wrk was CPU-bound)"
    return note


def round_order(servers: list, rep: int, wi: int, floor_ok: bool) -> list:
    """Every server back to back for one workload; the order rotates by one each round (and workload), so no
    server always goes first or last on a "warmer" machine. The floor runs only where it can stand in."""
    eligible = [s for s in servers if floor_ok or s.name != "floor"]
    k = (rep + wi) % len(eligible) if eligible else 0
    return eligible[k:] + eligible[:k]


def settle_or_park(servers: list[Server]) -> None:
    """After start: ours in steady state waits until its encoder is done; a fresh server stops until its runs."""
    for s in servers:
        if s.fresh:
            s.stop()
        elif isinstance(s, Hyperstatic):
            step(f"{s.name}: steady state after {s.settle():.1f} s (no encodings pending)")


def _encoder_note(r: measure.Run) -> str:
    if r.pending_start < 0:
        return ""
    return f"  encoder: {r.pending_start}→{r.pending_end} pending, {r.encoder_cpu_s:.2f} CPU-s"


def load_phase(cfg: Settings, servers: list[Server], client: Client, clients: load.Clients,
               samples: dict[str, bytes] | None = None) -> list[measure.Run]:
    runs, n, total = [], 0, cfg.reps * cfg.runs_per_rep()
    for rep in range(cfg.reps):
        for wi, wl in enumerate(cfg.workloads):
            for s in round_order(servers, rep, wi, wl.floor):
                if wl.h2c and not s.h2c:
                    continue  # this server takes no h2c on its plain port (the table shows it absent)
                if wl.client == "h3load" and not s.h3:
                    continue  # this server has no HTTP/3 (the table shows it absent)
                n += 1
                s.before_run(samples or {})
                try:
                    r = measure.run_workload(s, wl, rep, cfg.seconds, cfg.warmup, client, cfg.quota_pct, clients)
                finally:
                    s.after_run()
                runs.append(r)
                p99 = "n/a" if math.isnan(r.p99_ms) else f"{r.p99_ms:.2f} ms"
                step(f"[{n}/{total}] rep {rep + 1} {wl.key:12} {s.name:12} {r.rps:10,.0f} req/s  "
                     f"cpu {r.cpu_s:5.2f} s  {r.req_per_cpu_s:9,.0f} req/CPU-s  p99 {p99:>9}  "
                     f"rss {r.rss_bytes / 1e6:5.1f} MB  wrk cpu {r.client_cpu_s:4.1f} s{_note(r, cfg.quota_pct)}"
                     f"{_encoder_note(r)}")
    return runs


def bench(cfg: Settings, work: str, cleanup: list) -> int:
    step(f"generating content in {work}/site (1 × 100 B, {content.SET_COUNT} × {content.SET_SIZE} B)")
    site = content.generate(os.path.join(work, "site"))
    servers = lineup(cfg.ours, cfg.peers, cfg.floor, site.root, cfg.server_cpu, cfg.quota_pct, work,
                     cfg.extra_args, f"hs-bench-{os.getpid()}")
    ours = servers[0]
    if cfg.deployed:
        servers.insert(1, deployed_server(cfg, site, work, f"hs-bench-{os.getpid()}"))
    names = [s.name for s in servers]
    client = Client(cfg.client_cpu, CpuQuota(f"hs-bench-{os.getpid()}-client", 0))
    cleanup += [s.stop for s in servers] + [client.group.destroy]

    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "git": _git_rev(), "seconds": cfg.seconds,
            "reps": cfg.reps, "warmup_seconds": cfg.warmup, "cpu_quota_percent": cfg.quota_pct,
            "server_cpu": cfg.server_cpu, "client_cpu": cfg.client_cpu, "idle_conns": cfg.idle_n,
            "content_bytes": site.bytes, "content_files": site.files, "kernel": os.uname().release,
            "cgroup": ours.quota.describe(), "versions": {s.name: s.version() for s in servers}, "servers": names,
            "server_args": cfg.extra_args, "nice": os.environ.get("BENCH_NICE", "-20"),
            "loadavg_start": os.getloadavg()[0]}
    if any(w.h2c for w in cfg.workloads):
        meta["h2c_servers"] = enable_h2c(servers)
        step(f"h2c rows: with prior knowledge on the plain port, on {', '.join(meta['h2c_servers'])}")
    if any(w.client == "h3load" for w in cfg.workloads):
        meta["h3_servers"] = enable_h3(servers)
        step(f"h3 rows: HTTP/3 on the TLS port's UDP twin, on {', '.join(meta['h3_servers'])}")
    clients = https_clients(cfg, servers, work, meta)
    client.group.create()
    start(servers, site, meta, clients)
    settle_or_park(servers)
    if isinstance(ours, Hyperstatic):
        m = ours.metrics()
        if "hyperstatic_content_bytes" in m:
            meta["ours_content_bytes_metric"] = m["hyperstatic_content_bytes"]
    idle = idle_phase(cfg, [s for s in servers if not s.fresh], client) if cfg.idle_n else {}
    if cfg.idle_n and any(w.h2c for w in cfg.workloads):  # like for like with the HTTP/1.1 phase: plain port
        meta["idle_h2c"] = idle_phase(cfg, [s for s in servers if not s.fresh and s.h2c], client, h2="h2c")
    if cfg.idle_n and any(w.client == "h2load" and w.tls for w in cfg.workloads):
        meta["idle_h2"] = idle_phase(cfg, [s for s in servers if not s.fresh and s.tls_port], client, h2="tls")
    runs = load_phase(cfg, servers, client, clients, site.samples)
    if cfg.deployed:
        meta["deployed"] = {"pages": cfg.pages, "pending": [(r.pending_start, r.pending_end) for r in runs
                                                            if r.server == report.DEPLOYED]}
    meta["loadavg_end"] = os.getloadavg()[0]
    for stop in cleanup:
        stop()
    cleanup.clear()

    summary = report.summarize(runs, cfg.workloads, names)
    paths = report.write_files(cfg.out, runs, summary, idle, meta)
    md = render.render(cfg.out)  # summary.md, ratios.svg (+ ratios.png when rsvg-convert exists)
    step(f"results in {cfg.out}: {', '.join(os.path.basename(p) for p in paths.values())}, summary.md, ratios.svg"
         + (", ratios.png" if os.path.exists(os.path.join(cfg.out, "ratios.png")) else ""))
    print(md)
    return 0


def deployed_server(cfg: Settings, site: content.Content, work: str, tag: str) -> Hyperstatic:
    """Ours as deployed: defaults (the same flags as the steady row) on a copy of the tree plus cfg.pages raw
    compressible pages, started fresh before each run so its encoder is at work while it is measured."""
    root = os.path.join(work, "site-deployed")
    shutil.copytree(site.root, root)
    content.add_pages(root, cfg.pages)
    binary = os.path.join(work, "hyperstatic-server-deployed")
    shutil.copy2(cfg.ours, binary)
    s = Hyperstatic(binary=binary, admin_port=free_port(), extra_args=cfg.extra_args, root=root, port=free_port(),
                    cpu=cfg.server_cpu, quota=CpuQuota(f"{tag}-deployed", cfg.quota_pct),
                    workdir=os.path.join(work, "deployed"))
    s.name, s.fresh = report.DEPLOYED, True
    return s


def https_clients(cfg: Settings, servers: list[Server], work: str, meta: dict) -> load.Clients:
    """For HTTPS rows: the certificate, every server's TLS listener, the load client; their facts in meta."""
    if not any(w.tls for w in cfg.workloads):
        return load.Clients(set_uris=_set_uris(cfg, work))
    setup = tls.setup(os.path.join(work, "tls"))
    tls.attach(servers, setup)
    meta["tls"] = {"protocol": tls.PROTOCOL, "cipher": tls.CIPHER, "certificate": "ECDSA P-256, self-signed, per run",
                   "servers": {}}
    binary = None
    if any(w.client == "tlsload" for w in cfg.workloads):
        step("building the HTTPS new-connection load client (tlsload/main.go)")
        binary = tlsload.build(os.path.join(work, "tlsload"))
    h3_binary = None
    if any(w.client == "h3load" for w in cfg.workloads):
        step("building the HTTP/3 load client (h3interop/quicgo/h3load)")
        h3_binary = h3load.build(os.path.join(work, "h3load"))
    return load.Clients(tls_setup=setup, tlsload_bin=binary, set_uris=_set_uris(cfg, work), h3load_bin=h3_binary)


def _set_uris(cfg: Settings, work: str) -> str | None:
    """The h2 8 KiB rows' URI list, when a row wants it."""
    if not any(w.uris == "set" for w in cfg.workloads):
        return None
    return h2load.write_uris([content.set_path(i) for i in range(content.SET_COUNT)], H2_SET_URIS,
                             os.path.join(work, "h2-set-uris.txt"))


def estimate_seconds(cfg: Settings) -> float:
    """Wall time: every run is warm-up + measured + ~1.5 s of wrk start/stop; the idle phase ~12 s per server."""
    servers = 1 + len(cfg.peers) + (1 if cfg.floor else 0) + (1 if cfg.deployed else 0)
    idle_rounds = 2 if any(w.client == "h2load" for w in cfg.workloads) else 1
    return (cfg.reps * cfg.runs_per_rep() * (cfg.seconds + cfg.warmup + 1.5)
            + (12 * servers * idle_rounds if cfg.idle_n else 0) + 15)


def main() -> int:
    ap = argparse.ArgumentParser(prog="hsbench", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ours", required=True, help="path of the hyperstatic-server binary, or 'nginx'")
    ap.add_argument("--out", default=os.environ.get("BENCH_OUT", "_out/bench"))
    args = ap.parse_args()
    cfg = Settings.from_env(args.ours, args.out)
    problems = cfg.problems()
    for p in problems:
        warn(p)
    if problems:
        return 2
    est = estimate_seconds(cfg)
    step(f"plan: {len(cfg.workloads)} workloads × {1 + len(cfg.peers)} servers{' + floor' if cfg.floor else ''}"
         f" × {cfg.reps} reps of {cfg.seconds} s "
         f"(+{cfg.warmup} s warm-up) ≈ {est / 60:.1f} min; server on CPU {cfg.server_cpu} at "
         f"{cfg.quota_pct or 100}% of a core, wrk on CPU {cfg.client_cpu}")

    return run_in_workdir("hs-bench-", "benchmark", lambda work, cleanup: bench(cfg, work, cleanup),
                          (CgroupError, RuntimeError, OSError))


def run_in_workdir(prefix: str, what: str, run, expected: tuple) -> int:
    """Runs run(work, cleanup) in a fresh world-readable work directory (the peers' workers read configs and
    content there as the invoking user). Every function run appends to cleanup is called afterwards, even when one
    fails; the directory is removed unless BENCH_KEEP_TMP is set. An expected error is reported and gives 1."""
    work = tempfile.mkdtemp(prefix=prefix)
    os.chmod(work, 0o755)
    cleanup: list = []
    try:
        return run(work, cleanup)
    except expected as e:
        warn(f"{what} failed: {e}")
        return 1
    finally:
        for stop in cleanup:
            try:
                stop()
            except Exception as e:  # keep cleaning up the rest
                warn(f"cleanup: {e}")
        if os.environ.get("BENCH_KEEP_TMP"):
            step(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
