"""The gate of docs/design/deploys.md (step 4): what a site pays for being served in `--sites` mode, the mode its
pods switch to when it has previews (production and its previews chosen by Host). Our server with `--sites DIR` on
an index of one site (the benchmark site, with the Host the load sends) against the same binary with `--root` on the
same tree, under the same pin and CPU cap, interleaved (the order rotates each round), on the 100 B and 8 KiB
workloads. Goal: `--sites` within 5 % of `--root` in requests per server CPU-second.

Before measuring, the pool's report must say the site is held in memory (its full load, not the quick one from disk
a pool site gets first): otherwise the row would compare disk with memory, not the modes.

Usage: python3 -m hsbench.sitesmode --ours PATH_TO_hyperstatic-server   (make bench-sites-mode)
Environment: BENCH_SECONDS, REPS, WARMUP_SECONDS, BENCH_CPU_QUOTA, SERVER_CPU, CLIENT_CPU, BENCH_OUT (results go to
BENCH_OUT/sitesmode), SITESMODE_WORKLOADS (default 100b-c100,8k-set).
"""
import json
import os
import shutil
import statistics
import sys
import time

from . import content, interleave, measure, pooltree
from .pool import PoolServer
from .progress import step
from .servers import Hyperstatic
from .workloads import select

GOAL = 0.95
SITE_ID = "bench.production"


def write_pool(pool_dir: str, tree: str) -> None:
    """The index of one site whose hosts include the address the load tools send as Host (127.0.0.1), and its
    tree laid out as the puller lays it out (content/<id>/<rev>, `current` pointing at it)."""
    rev = pooltree.revision_of(SITE_ID)
    site_dir = os.path.join(pool_dir, "content", SITE_ID)
    os.makedirs(os.path.join(pool_dir, "content", ".ready"), exist_ok=True)
    shutil.copytree(tree, os.path.join(site_dir, rev))
    os.symlink(rev, os.path.join(site_dir, "current"))
    entry = pooltree.index_entry(SITE_ID)
    entry["hosts"] = ["127.0.0.1"] + entry["hosts"]
    os.makedirs(os.path.join(pool_dir, "index"), exist_ok=True)
    for n in range(pooltree.SHARDS):
        doc = {"version": 1, "shard": n, "sites": [entry] if n == pooltree.shard_of(SITE_ID) else []}
        with open(os.path.join(pool_dir, "index", f"shard-{n:02d}.json"), "w") as f:
            json.dump(doc, f)


def in_memory(server: PoolServer, samples: dict) -> str:
    """Asks for the site until the pool holds it in memory (its full load follows the second look at it); returns
    its state."""
    state = ""
    for _ in range(50):
        server.validate(samples)
        sites = server.sites_report().get("sites", [])
        state = sites[0].get("state", "") if sites else ""
        if state == "memory":
            return state
        time.sleep(0.2)
    raise RuntimeError(f"the --sites server holds the site as {state!r} after 10 s of requests, not in memory")


def ratios(runs: list[measure.Run], workloads: list[str]) -> list[dict]:
    """Per workload: median req/s and req/CPU-s of each mode, and --sites ÷ --root."""
    rows = []
    for wl in workloads:
        rps = {m: [r.rps for r in runs if r.workload == wl and r.server == m] for m in ("root", "sites")}
        cpu = {m: [r.req_per_cpu_s for r in runs if r.workload == wl and r.server == m] for m in ("root", "sites")}
        if not rps["root"] or not rps["sites"]:
            continue
        cpu_ratio = statistics.median(cpu["sites"]) / statistics.median(cpu["root"])
        rows.append({"workload": wl, "root_rps": statistics.median(rps["root"]),
                     "sites_rps": statistics.median(rps["sites"]),
                     "root_range": [min(rps["root"]), max(rps["root"])],
                     "sites_range": [min(rps["sites"]), max(rps["sites"])],
                     "rps_ratio": statistics.median(rps["sites"]) / statistics.median(rps["root"]),
                     "cpu_ratio": cpu_ratio, "met": cpu_ratio >= GOAL})
    return rows


def markdown(rows: list[dict], meta: dict) -> str:
    out = ["#### One site under `--sites` (the previews mode) vs `--root`", "",
           f"{meta['date']}, git {meta['git']}; {meta['reps']} × {meta['seconds']} s per mode and workload, "
           f"interleaved; server on CPU {meta['server_cpu']} at {meta['cpu_quota_percent'] or 100}% of a core; "
           f"load average {meta['loadavg_start']:.1f} → {meta['loadavg_end']:.1f}", "",
           "| Workload | --root req/s (min–max) | --sites req/s (min–max) | req/s ratio | req/CPU-s ratio | Goal ≥ 0.95 |",
           "|---|--:|--:|--:|--:|---|"]
    for r in rows:
        out.append(f"| {r['workload']} | {r['root_rps']:,.0f} ({r['root_range'][0]:,.0f}–{r['root_range'][1]:,.0f})"
                   f" | {r['sites_rps']:,.0f} ({r['sites_range'][0]:,.0f}–{r['sites_range'][1]:,.0f})"
                   f" | {r['rps_ratio']:.3f} | {r['cpu_ratio']:.3f} | {'met' if r['met'] else 'not met'} |")
    return "\n".join(out) + "\n"


def bench(ours: str, out: str, work: str, cleanup: list) -> int:
    knobs = interleave.Knobs.from_env()
    workloads = select(os.environ.get("SITESMODE_WORKLOADS", "") or "100b-c100,8k-set")
    root = os.path.join(work, "root")
    site = content.generate(root)
    pool_dir = os.path.join(work, "pool")
    write_pool(pool_dir, root)
    variants = [(Hyperstatic, "root", root, []), (PoolServer, "sites", pool_dir, [])]
    servers, client = interleave.start_variants(ours, work, f"hs-sitesmode-{os.getpid()}", variants, knobs, cleanup,
                                                site.samples)
    step(f"both modes serve the same bytes; the --sites server holds the site {in_memory(servers[1], site.samples)}")
    meta = knobs.meta()
    runs = interleave.rounds(servers, workloads, knobs, client, meta, strict=True)
    rows = ratios(runs, [w.key for w in workloads])
    interleave.save(out, markdown(rows, meta), meta, rows, runs)
    return 0


def main() -> int:
    return interleave.main("sitesmode", __doc__, bench)


if __name__ == "__main__":
    sys.exit(main())
