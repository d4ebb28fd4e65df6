"""make bench-server: our server against a tuned nginx, interleaved, repeated, medians reported.

Usage: python3 -m hsbench --ours PATH_TO_hyperstatic-server   (or --ours nginx: nginx against itself,
       a self-check of the harness: every ratio should come out ≈ 1)
Environment: BENCH_SECONDS (10), REPS (3), WARMUP_SECONDS (2), BENCH_CPU_QUOTA (40, percent of a core; 0 = no cap),
SERVER_CPU (0), CLIENT_CPU (1), IDLE_CONNS (10000; 0 skips), BENCH_WORKLOADS (subset, comma-separated),
BENCH_OUT (_out/bench), BENCH_SERVER_ARGS (extra flags for our server), BENCH_NICE (-20), BENCH_KEEP_TMP.
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

from . import content, measure, render, report
from .cgroup import CgroupError, CpuQuota
from .placement import Client
from .progress import step, warn
from .servers import Hyperstatic, Server
from .servers import pair as servers_pair
from .workloads import Workload, select


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

    @classmethod
    def from_env(cls, ours: str, out: str) -> "Settings":
        return cls(ours=ours, out=out, seconds=_env_int("BENCH_SECONDS", 10), reps=_env_int("REPS", 3),
                   warmup=_env_int("WARMUP_SECONDS", 2), quota_pct=_env_int("BENCH_CPU_QUOTA", 40),
                   server_cpu=_env_int("SERVER_CPU", 0), client_cpu=_env_int("CLIENT_CPU", 1),
                   idle_n=_env_int("IDLE_CONNS", 10000), workloads=select(os.environ.get("BENCH_WORKLOADS", "")),
                   extra_args=shlex.split(os.environ.get("BENCH_SERVER_ARGS", "")))

    def problems(self) -> list[str]:
        out = []
        cpus = os.sched_getaffinity(0)
        if self.server_cpu == self.client_cpu or not {self.server_cpu, self.client_cpu} <= cpus:
            out.append(f"server CPU {self.server_cpu} and client CPU {self.client_cpu} must be two usable CPUs "
                       f"(usable: {sorted(cpus)})")
        out += [f"{t} not found (run.sh installs it)" for t in ("wrk", "taskset") if not shutil.which(t)]
        if self.ours != "nginx" and not os.access(self.ours, os.X_OK):
            out.append(f"server binary {self.ours} is not executable")
        return out


def _git_rev() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def start(servers: list[Server], site: content.Content, meta: dict) -> None:
    for s in servers:
        step(f"starting {s.name} ({meta['versions'][s.name]}) on 127.0.0.1:{s.port}, {s.quota.describe()}")
        s.start()
        s.validate(site.samples)
        step(f"{s.name} serves the content correctly; pids {s.pids()}")


def idle_phase(cfg: Settings, servers: list[Server], client: Client) -> dict[str, dict]:
    idle = {}
    for s in servers:
        step(f"{s.name}: opening {cfg.idle_n:,} idle keep-alive connections")
        r = measure.idle_connections(s, cfg.idle_n, content.SMALL_PATH, client)
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


def load_phase(cfg: Settings, servers: list[Server], client: Client) -> list[measure.Run]:
    runs, n, total = [], 0, cfg.reps * len(cfg.workloads) * len(servers)
    for rep in range(cfg.reps):
        for wi, wl in enumerate(cfg.workloads):
            # back to back, and who goes first alternates: neither server always gets the "warmer" machine
            order = servers if (rep + wi) % 2 == 0 else servers[::-1]
            for s in order:
                n += 1
                r = measure.run_workload(s, wl, rep, cfg.seconds, cfg.warmup, client, cfg.quota_pct)
                runs.append(r)
                p99 = "n/a" if math.isnan(r.p99_ms) else f"{r.p99_ms:.2f} ms"
                step(f"[{n}/{total}] rep {rep + 1} {wl.key:12} {s.name:12} {r.rps:10,.0f} req/s  "
                     f"cpu {r.cpu_s:5.2f} s  {r.req_per_cpu_s:9,.0f} req/CPU-s  p99 {p99:>9}  "
                     f"rss {r.rss_bytes / 1e6:5.1f} MB  wrk cpu {r.client_cpu_s:4.1f} s{_note(r, cfg.quota_pct)}")
    return runs


def bench(cfg: Settings, work: str, cleanup: list) -> int:
    step(f"generating content in {work}/site (1 × 100 B, {content.SET_COUNT} × {content.SET_SIZE} B)")
    site = content.generate(os.path.join(work, "site"))
    ours, peer = servers_pair(cfg.ours, site.root, cfg.server_cpu, cfg.quota_pct, work, cfg.extra_args,
                              f"hs-bench-{os.getpid()}")
    servers = [ours, peer]
    client = Client(cfg.client_cpu, CpuQuota(f"hs-bench-{os.getpid()}-client", 0))
    cleanup += [s.stop for s in servers] + [client.group.destroy]

    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "git": _git_rev(), "seconds": cfg.seconds,
            "reps": cfg.reps, "warmup_seconds": cfg.warmup, "cpu_quota_percent": cfg.quota_pct,
            "server_cpu": cfg.server_cpu, "client_cpu": cfg.client_cpu, "idle_conns": cfg.idle_n,
            "content_bytes": site.bytes, "content_files": site.files, "kernel": os.uname().release,
            "cgroup": ours.quota.describe(), "versions": {s.name: s.version() for s in servers},
            "server_args": cfg.extra_args, "nice": os.environ.get("BENCH_NICE", "-20"),
            "loadavg_start": os.getloadavg()[0]}
    client.group.create()
    start(servers, site, meta)
    if isinstance(ours, Hyperstatic):
        m = ours.metrics()
        if "hyperstatic_content_bytes" in m:
            meta["ours_content_bytes_metric"] = m["hyperstatic_content_bytes"]
    idle = idle_phase(cfg, servers, client) if cfg.idle_n else {}
    runs = load_phase(cfg, servers, client)
    meta["loadavg_end"] = os.getloadavg()[0]
    for stop in cleanup:
        stop()
    cleanup.clear()

    summary = report.summarize(runs, cfg.workloads, ours.name, peer.name)
    paths = report.write_files(cfg.out, runs, summary, idle, meta)
    md = render.render(cfg.out)  # summary.md, ratios.svg (+ ratios.png when rsvg-convert exists)
    step(f"results in {cfg.out}: {', '.join(os.path.basename(p) for p in paths.values())}, summary.md, ratios.svg"
         + (", ratios.png" if os.path.exists(os.path.join(cfg.out, "ratios.png")) else ""))
    print(md)
    return 0


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
    est = cfg.reps * len(cfg.workloads) * 2 * (cfg.seconds + cfg.warmup + 2.5) + (15 if cfg.idle_n else 0) + 10
    step(f"plan: {len(cfg.workloads)} workloads × 2 servers × {cfg.reps} reps of {cfg.seconds} s "
         f"(+{cfg.warmup} s warm-up) ≈ {est / 60:.1f} min; server on CPU {cfg.server_cpu} at "
         f"{cfg.quota_pct or 100}% of a core, wrk on CPU {cfg.client_cpu}")

    work = tempfile.mkdtemp(prefix="hs-bench-")
    os.chmod(work, 0o755)  # nginx's workers read the content as the invoking user
    cleanup: list = []
    try:
        return bench(cfg, work, cleanup)
    except (CgroupError, RuntimeError, OSError) as e:
        warn(f"benchmark failed: {e}")
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
