"""How long our server's background encoder takes to produce every variant on an idle pod, by CPU cap: the server is
started on a raw tree (BENCH_PAGES compressible 8 KiB pages, no siblings) pinned and capped as in make bench-server,
nothing requests it, and the time from ready to no encodings pending is measured, with the encoder's CPU time and
paused time from /metrics. The least wall time possible is the encoder's CPU time ÷ the cap (a 40 % pod cannot
encode faster than 0.4 of a core); the ratio to it says what the slack governor (src/compress/slack.rs) costs an idle pod.

Usage: python3 -m hsbench.encodetime --ours PATH   (BENCH_ENCODE_TIME=1 images/server/bench/run.sh PATH)
ENCODE_SHARED_CACHE=1 adds two pods sharing one --compress-cache directory at the first cap: what a new replica would
spend if the first pod's variants were on a shared volume.
Environment: BENCH_PAGES (1000), ENCODE_QUOTAS (percent of a core per trial, 0 = none; default "100,40,0"), REPS (3),
SERVER_CPU (0), BENCH_OUT (_out/bench; writes encodetime/summary.md).
"""
import argparse
import os
import statistics
import sys
import time

from . import content
from .__main__ import _git_rev, run_in_workdir
from .cgroup import CgroupError, CpuQuota
from .progress import step
from .servers import Hyperstatic, free_port


def trial(binary: str, root: str, cpu: int, pct: int, work: str, tag: str, args: tuple[str, ...] = ()) -> dict:
    s = Hyperstatic(binary=binary, admin_port=free_port(), extra_args=list(args), root=root, port=free_port(), cpu=cpu,
                    quota=CpuQuota(tag, pct), workdir=os.path.join(work, tag))
    try:
        s.start()
        t0 = time.monotonic()
        waited = s.settle(timeout=1800)
        m = s.metrics()
        return {"quota_pct": pct, "wall_s": waited, "cpu_s": m.get("hyperstatic_encoder_cpu_seconds_total", 0.0),
                "paused_s": m.get("hyperstatic_encoder_paused_seconds_total", 0.0), "t0": t0,
                "from_cache": _labelled(s, 'hyperstatic_content_encodings_total{source="cache"}')}
    finally:
        s.stop()


def _labelled(s: Hyperstatic, sample: str) -> float:
    from .servers import http_get
    _, body = http_get(s.admin_port, "/metrics")
    for line in body.decode(errors="replace").splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[1])
    return 0.0


def shared_cache(binary: str, root: str, cpu: int, pct: int, work: str, tag: str) -> list[dict]:
    """Encode once per site, measured: a first pod fills a --compress-cache directory, a second pod started on the
    same tree with the same directory (what a shared volume would give a new replica) reads instead of encoding."""
    cache = os.path.join(work, f"{tag}-cache")
    first = trial(binary, root, cpu, pct, work, f"{tag}-first", ("--compress-cache", cache))
    second = trial(binary, root, cpu, pct, work, f"{tag}-second", ("--compress-cache", cache))
    return [first, second]


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [f"#### Idle pod: every variant of {meta['pages']} raw 8 KiB pages, by CPU cap; medians of {meta['reps']}",
             "", f"{meta['date']}, git {meta['git']}; server on CPU {meta['server_cpu']}; load average "
             f"{meta['loadavg_start']:.1f} → {meta['loadavg_end']:.1f}", "",
             "| CPU cap | wall, ready → 0 pending | encoder CPU | least wall possible (CPU ÷ cap) | wall ÷ least | "
             "encoder paused |", "|---|--:|--:|--:|--:|--:|"]
    for r in rows:
        if "label" in r:
            lines.append(f"| {r['label']} | {r['wall_s']:.2f} s | {r['cpu_s']:.2f} s | – | – | {r['paused_s']:.1f} s |")
            continue
        cap = r["quota_pct"] / 100 if r["quota_pct"] else 1.0
        least = r["cpu_s"] / cap
        if least <= 0:  # a build without hyperstatic_encoder_cpu_seconds_total
            lines.append(f"| {r['quota_pct'] or 'none'} | {r['wall_s']:.1f} s | – | – | – | – |")
            continue
        lines.append(f"| {str(r['quota_pct']) + ' % of a core' if r['quota_pct'] else 'none (one whole core)'} | "
                     f"{r['wall_s']:.1f} s | {r['cpu_s']:.1f} s | {least:.1f} s | {r['wall_s'] / least:.2f}× | "
                     f"{r['paused_s']:.1f} s |")
    return "\n".join(lines) + "\n"


def median_rows(trials: list[dict]) -> list[dict]:
    out = []
    for pct in dict.fromkeys(t["quota_pct"] for t in trials):
        ts = [t for t in trials if t["quota_pct"] == pct]
        out.append({k: (statistics.median(t[k] for t in ts) if k != "quota_pct" else pct)
                    for k in ("quota_pct", "wall_s", "cpu_s", "paused_s")})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(prog="hsbench.encodetime", description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--out", default=os.path.join(os.environ.get("BENCH_OUT", "_out/bench"), "encodetime"))
    args = ap.parse_args()
    pages = int(os.environ.get("BENCH_PAGES", "") or 1000)
    quotas = [int(q) for q in (os.environ.get("ENCODE_QUOTAS", "") or "100,40,0").split(",")]
    reps, cpu = int(os.environ.get("REPS", "") or 3), int(os.environ.get("SERVER_CPU", "") or 0)

    def bench(work: str, cleanup: list) -> int:
        site = content.generate(os.path.join(work, "site"), pages=pages)
        meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "git": _git_rev(), "pages": pages,
                "reps": reps, "server_cpu": cpu, "loadavg_start": os.getloadavg()[0]}
        trials = []
        for rep in range(reps):
            for pct in quotas:  # interleaved: every cap once per round
                t = trial(args.ours, site.root, cpu, pct, work, f"hs-enc-{os.getpid()}-{rep}-{pct}")
                step(f"round {rep + 1}, cap {pct or 'none'}: {t['wall_s']:.1f} s wall, {t['cpu_s']:.1f} s encoder "
                     f"CPU, {t['paused_s']:.1f} s paused")
                trials.append(t)
        rows = median_rows(trials)
        if os.environ.get("ENCODE_SHARED_CACHE"):
            pct = quotas[0]
            first, second = shared_cache(args.ours, site.root, cpu, pct, work, f"hs-enc-{os.getpid()}-cache")
            for label, t in (("first pod, fills the cache", first), ("second pod, same cache", second)):
                step(f"{label} ({pct or 'no'} % cap): {t['wall_s']:.2f} s wall, {t['cpu_s']:.2f} s encoder CPU, "
                     f"{t['from_cache']:.0f} read from the cache")
                rows.append({**t, "label": f"{label} ({pct or 'no'} % cap; {t['from_cache']:.0f} from cache)"})
        meta["loadavg_end"] = os.getloadavg()[0]
        md = markdown(rows, meta)
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "summary.md"), "w") as f:
            f.write(md)
        print(md)
        return 0

    return run_in_workdir("hs-enc-", "encode-time trial", bench, (CgroupError, RuntimeError, OSError))


if __name__ == "__main__":
    sys.exit(main())
