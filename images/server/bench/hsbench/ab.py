"""Interleaved A/B trials: variants of our server (other flags, another build) and of the floor (its two ways of
sending 8 KiB bodies) on the bench-server workloads, under the same pin, cap and rotation as make bench-server;
medians, min–max and each variant's ratio to the first. For a change that needs numbers before it is kept.

Usage: python3 -m hsbench.ab --ours PATH   (make bench-ab AB='...')
AB: variants separated by ';', each NAME=KIND[:ARGS], the first the reference:
    NAME=ours[:FLAGS]            our server (PATH) with extra flags, in steady state (measured only once its
                                 background encoder has nothing pending)
    NAME=fresh[:FLAGS]           our server as deployed: started just before each of its runs (its encoder begins
                                 then, on a raw tree) and stopped right after
    NAME=bin:BINARY[:FLAGS]      another hyperstatic-server build (steady state, like ours)
    NAME=freshbin:BINARY[:FLAGS] another build as deployed (like fresh)
    NAME=floor:sendfile|writev|uring  the floor with that body mechanism, or on io_uring (floor_uring.c)
e.g. AB='plain=ours; disk8k=ours:--max-memory-file-size=4KiB; floor=floor:sendfile; floor-writev=floor:writev'
BENCH_PAGES=N adds N compressible 8 KiB pages without siblings to the tree (content.py), work for the encoder.
Environment: as make bench-server (BENCH_WORKLOADS, REPS, BENCH_SECONDS, WARMUP_SECONDS, BENCH_CPU_QUOTA, SERVER_CPU,
CLIENT_CPU); results in BENCH_OUT/ab (summary.md, results.json, runs.csv).
"""
import argparse
import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass

from . import content, report
from .__main__ import Settings, _git_rev, https_clients, load_phase, run_in_workdir, settle_or_park, start
from .cgroup import CgroupError, CpuQuota
from .placement import Client
from .progress import step, warn
from .servers import Floor, Hyperstatic, Server, enable_h2c, enable_h3, free_port


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str  # "ours", "fresh", "bin", "freshbin" or "floor"
    binary: str = ""
    args: tuple[str, ...] = ()
    body_io: str = ""


def parse(spec: str, ours: str) -> list[Variant]:
    """The AB string → variants (see the module documentation); at least two, names unique."""
    out = []
    for item in (p.strip() for p in spec.split(";")):
        if not item:
            continue
        name, sep, rest = item.partition("=")
        kind, _, args = rest.partition(":")
        name, kind = name.strip(), kind.strip()
        if not sep or not name:
            raise SystemExit(f"AB: {item!r} is not NAME=KIND[:ARGS]")
        if kind in ("ours", "fresh"):
            out.append(Variant(name, kind, ours, tuple(shlex.split(args))))
        elif kind in ("bin", "freshbin"):
            binary, _, flags = args.partition(":")
            out.append(Variant(name, kind, binary.strip(), tuple(shlex.split(flags))))
        elif kind == "floor":
            out.append(Variant(name, kind, body_io=args.strip()))
        else:
            raise SystemExit(f"AB: unknown kind {kind!r} in {item!r} (ours, fresh, bin, freshbin, floor)")
    names = [v.name for v in out]
    if len(out) < 2 or len(set(names)) != len(names):
        raise SystemExit(f"AB: need at least two variants with distinct names, got {names}")
    return out


def build(v: Variant, root: str, cfg: Settings, work: str, tag: str) -> Server:
    common = dict(root=root, port=free_port(), cpu=cfg.server_cpu, quota=CpuQuota(f"{tag}-{v.name}", cfg.quota_pct),
                  workdir=os.path.join(work, v.name))
    if v.kind == "floor":
        s = Floor(body_file=os.path.join(root, content.SMALL_PATH.lstrip("/")),
                  set_dir=os.path.join(root, content.SET_DIR.lstrip("/")), body_io=v.body_io, **common)
    else:
        os.makedirs(common["workdir"], exist_ok=True)
        binary = os.path.join(common["workdir"], "hyperstatic-server")
        shutil.copy2(v.binary, binary)  # a private copy: a rebuild during the run cannot swap it underneath
        s = Hyperstatic(binary=binary, admin_port=free_port(), extra_args=list(v.args), **common)
        s.fresh = v.kind in ("fresh", "freshbin")
    s.name = v.name
    return s


def markdown(summary: list[dict], meta: dict, names: list[str]) -> str:
    """One table per trial: each variant's medians and its ratio to the first (req/s and req/CPU-s)."""
    lines = [f"#### A/B: {' vs '.join(names)}; medians of {meta['reps']} × {meta['seconds']} s runs, interleaved",
             "",
             f"{meta['date']}, git {meta['git']}; server on CPU {meta['server_cpu']} at "
             f"{meta['cpu_quota_percent'] or 100}% of a core, wrk on CPU {meta['client_cpu']}; load average "
             f"{meta['loadavg_start']:.1f} → {meta['loadavg_end']:.1f}; "
             + "; ".join(f"{n}: {v}" for n, v in meta["versions"].items()),
             "",
             f"| Workload | Variant | req/s (min–max) | CPU-s | req/CPU-s | ÷ {names[0]} req/s | ÷ {names[0]} req/CPU-s |",
             "|---|---|--:|--:|--:|--:|--:|"]
    for e in summary:
        ref = e["servers"].get(names[0])
        for i, name in enumerate(names):
            s = e["servers"].get(name)
            if s is None:
                continue
            rel = (f"{s['rps'] / ref['rps']:.2f}× | {s['req_per_cpu_s'] / ref['req_per_cpu_s']:.2f}×"
                   if ref and ref["rps"] > 0 and ref["req_per_cpu_s"] > 0 else "– | –")
            errs = f" ⚠ {s['errors']} errors" if s["errors"] else ""
            lines.append(f"| {e['title'] if i == 0 else ''} | {name} | {s['rps']:,.0f} ({s['rps_min']:,.0f}–"
                         f"{s['rps_max']:,.0f}){errs} | {s['cpu_s']:.2f} | {s['req_per_cpu_s']:,.0f} | {rel} |")
    return "\n".join(lines) + "\n"


def encoder_lines(runs: list, names: list[str]) -> str:
    """Per variant of ours: files pending encoding at each measured run's start → end and the encoder's CPU time in
    it, so a row that measured a server still encoding says so."""
    out = []
    for n in names:
        rs = [r for r in runs if r.server == n and r.pending_start >= 0]
        if rs:
            out.append(f"- {n}: encodings pending at run start→end (encoder CPU-s in the run): "
                       + ", ".join(f"{r.pending_start}→{r.pending_end} ({r.encoder_cpu_s:.2f})" for r in rs))
    return ("\n" + "\n".join(out) + "\n") if out else ""


def bench(cfg: Settings, variants: list[Variant], work: str, cleanup: list) -> int:
    site = content.generate(os.path.join(work, "site"), pages=int(os.environ.get("BENCH_PAGES", "") or 0))
    tag = f"hs-ab-{os.getpid()}"
    servers = [build(v, site.root, cfg, work, tag) for v in variants]
    names = [s.name for s in servers]
    client = Client(cfg.client_cpu, CpuQuota(f"{tag}-client", 0))
    cleanup += [s.stop for s in servers] + [client.group.destroy]
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "git": _git_rev(), "seconds": cfg.seconds,
            "reps": cfg.reps, "warmup_seconds": cfg.warmup, "cpu_quota_percent": cfg.quota_pct,
            "server_cpu": cfg.server_cpu, "client_cpu": cfg.client_cpu, "idle_conns": 0,
            "content_bytes": site.bytes, "content_files": site.files, "kernel": os.uname().release, "servers": names,
            "variants": [v.__dict__ for v in variants], "loadavg_start": os.getloadavg()[0],
            "versions": {s.name: " ".join([s.version(), *getattr(s, "extra_args", [])]) for s in servers}}
    if any(w.h2c for w in cfg.workloads):  # h2c rows: every variant of ours takes prior knowledge on its plain port
        enable_h2c(servers)
    if any(w.client == "h3load" for w in cfg.workloads):  # h3 rows: every variant of ours with --http3
        enable_h3(servers)
    clients = https_clients(cfg, servers, work, meta)  # HTTPS rows: every variant's TLS listener, the load client
    client.group.create()
    start(servers, site, meta, clients)
    settle_or_park(servers)
    runs = load_phase(cfg, servers, client, clients, site.samples)
    meta["loadavg_end"] = os.getloadavg()[0]
    summary = report.summarize(runs, cfg.workloads, names)
    os.makedirs(cfg.out, exist_ok=True)
    report.write_files(cfg.out, runs, summary, {}, meta)
    md = markdown(summary, meta, names) + encoder_lines(runs, names)
    with open(os.path.join(cfg.out, "summary.md"), "w") as f:
        f.write(md)
    print(md)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(prog="hsbench.ab", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ours", required=True, help="path of the hyperstatic-server binary")
    ap.add_argument("--out", default=os.path.join(os.environ.get("BENCH_OUT", "_out/bench"), "ab"))
    args = ap.parse_args()
    variants = parse(os.environ.get("AB", ""), args.ours)
    # Settings counts one run per server and workload: the variants are its "peers", the floor is not separate
    cfg = Settings.from_env(args.ours, args.out)
    cfg.peers, cfg.floor = [v.name for v in variants[1:]], False
    missing = [v.binary for v in variants if v.kind != "floor" and not os.access(v.binary, os.X_OK)]
    if missing:
        warn(f"not executable: {missing}")
        return 2
    step(f"A/B: {', '.join(v.name for v in variants)} on {', '.join(w.key for w in cfg.workloads)}, "
         f"{cfg.reps} × {cfg.seconds} s each, interleaved")
    return run_in_workdir("hs-ab-", "A/B trial", lambda work, cleanup: bench(cfg, variants, work, cleanup),
                          (CgroupError, RuntimeError, OSError))


if __name__ == "__main__":
    sys.exit(main())
