"""Turns the runs into medians, a Markdown table (stdout), CSV/JSON files and the ratio chart."""
import csv
import json
import math
import os
import statistics

from .workloads import Workload

MB = 1_000_000
RSS_BUDGET = 10 * MB  # issue 2: RSS ≤ 10 MB + content size with 10k idle connections


def _med(values):
    values = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
    return statistics.median(values) if values else float("nan")


def summarize(runs, workloads: list[Workload], ours: str, peer: str) -> list[dict]:
    out = []
    for wl in workloads:
        entry = {"key": wl.key, "title": wl.title, "target": wl.target, "servers": {}}
        for name in (ours, peer):
            rs = [r for r in runs if r.workload == wl.key and r.server == name]
            if not rs:
                continue
            entry["servers"][name] = {
                "runs": len(rs),
                "rps": _med([r.rps for r in rs]),
                "rps_min": min(r.rps for r in rs),
                "rps_max": max(r.rps for r in rs),
                "cpu_s": _med([r.cpu_s for r in rs]),
                "req_per_cpu_s": _med([r.req_per_cpu_s for r in rs]),
                "p50_ms": _med([r.p50_ms for r in rs]),
                "p99_ms": _med([r.p99_ms for r in rs]),
                "rss_bytes": _med([r.rss_bytes for r in rs]),
                "cap_use": _med([r.cap_use for r in rs]),
                "errors": sum(r.errors + r.non2xx for r in rs),
            }
        s = entry["servers"]
        if ours in s and peer in s and s[peer]["rps"] > 0:
            entry["ratio_rps"] = s[ours]["rps"] / s[peer]["rps"]
            entry["ratio_req_per_cpu_s"] = s[ours]["req_per_cpu_s"] / s[peer]["req_per_cpu_s"]
            entry["met"] = entry["ratio_rps"] >= wl.target
        out.append(entry)
    return out


def idle_verdict(idle: dict, content_bytes: int) -> dict:
    budget = RSS_BUDGET + content_bytes
    return {"budget_bytes": budget, "met": idle["rss_idle"] <= budget and idle["conns_alive"] == idle["conns_wanted"]}


def _unknown(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))  # NaN in memory, null once through JSON


def _k(x: float) -> str:
    if _unknown(x):
        return "–"
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e4:
        return f"{x / 1e3:.1f}k"
    if x >= 1e3:
        return f"{x / 1e3:.2f}k"
    return f"{x:.0f}"


def _ms(x: float) -> str:
    return "–" if _unknown(x) else (f"{x:.1f} ms" if x >= 10 else f"{x:.2f} ms")


def _mb(x: float) -> str:
    return f"{x / MB:.1f} MB"


def verdict(ratio: float, target: float) -> str:
    if ratio >= target:
        return f"≥{target:g}× met"
    return f"≥{target:g}× missed ({ratio / target:.0%} of target)"


def markdown(summary: list[dict], idle: dict[str, dict], meta: dict, ours: str, peer: str) -> str:
    lines = [
        f"### {ours} vs {peer}: server on CPU {meta['server_cpu']} capped at {meta['cpu_quota_percent']}% of a core, "
        f"wrk on CPU {meta['client_cpu']}; medians of {meta['reps']} × {meta['seconds']} s runs",
        "",
        f"{meta.get('date', '')}, git {meta.get('git', '?')}; {', '.join(f'{k} {v}' for k, v in meta.get('versions', {}).items())}; "
        f"machine load average {meta.get('loadavg_start', float('nan')):.1f} → {meta.get('loadavg_end', float('nan')):.1f} "
        f"(other work on the 2 cores adds noise: see README)",
        "",
        f"| Workload | Server | req/s (min–max) | CPU-s | req/CPU-s | p99 | RSS | {ours}/{peer} req/s | "
        f"{ours}/{peer} req/CPU-s | Target |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for e in summary:
        for i, name in enumerate((ours, peer)):
            s = e["servers"].get(name)
            if s is None:
                continue
            first = i == 0
            ratio = ratio_eff = target = ""
            if first and "ratio_rps" in e:
                ratio = f"**{e['ratio_rps']:.2f}×**"
                ratio_eff = f"{e['ratio_req_per_cpu_s']:.2f}×"
                target = verdict(e["ratio_rps"], e["target"])
            errs = f" ⚠ {s['errors']} errors" if s["errors"] else ""
            lines.append(
                f"| {e['title'] if first else ''} | {name} | {_k(s['rps'])} ({_k(s['rps_min'])}–{_k(s['rps_max'])})"
                f"{errs} | {s['cpu_s']:.2f} | {_k(s['req_per_cpu_s'])} | {_ms(s['p99_ms'])} | {_mb(s['rss_bytes'])} | "
                f"{ratio} | {ratio_eff} | {target} |")
    if idle:
        lines += ["", f"| Server | RSS fresh | RSS with {meta['idle_conns']:,} idle keep-alive connections | "
                      f"per connection | still open | Target: ≤ 10 MB + {meta['content_bytes'] / MB:.1f} MB content |",
                  "|---|--:|--:|--:|--:|---|"]
        for name in (ours, peer):
            r = idle.get(name)
            if r is None:
                continue
            per = (r["rss_idle"] - r["rss_before"]) / max(1, r["conns_alive"])
            target = ""
            if name == ours:
                v = idle_verdict(r, meta["content_bytes"])
                target = f"{'met' if v['met'] else 'missed'} ({_mb(r['rss_idle'])} of {_mb(v['budget_bytes'])})"
            lines.append(f"| {name} | {_mb(r['rss_before'])} | {_mb(r['rss_idle'])} | {per / 1024:.2f} KiB | "
                         f"{r['conns_alive']:,} | {target} |")
    lines += ["", f"CPU-s: the server's user+system CPU seconds during one run (all its processes, from /proc). "
                  f"RSS: peak summed VmRSS during the run. MB = 10^6 bytes. "
                  f"p99 from wrk; none for pipelining, where wrk's latency statistics do not apply."]
    return "\n".join(lines) + "\n"


def _no_nan(x):
    """JSON has no NaN: unknown values (e.g. a p99 wrk could not give) become null."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _no_nan(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_no_nan(v) for v in x]
    return x


def write_files(out_dir: str, runs, summary, idle, meta) -> dict[str, str]:
    os.makedirs(out_dir, exist_ok=True)
    paths = {"runs_csv": os.path.join(out_dir, "runs.csv"),
             "summary_csv": os.path.join(out_dir, "summary.csv"),
             "json": os.path.join(out_dir, "results.json")}
    rows = [r.row() for r in runs]
    with open(paths["runs_csv"], "w", newline="") as f:
        if rows:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    with open(paths["summary_csv"], "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "server", "rps", "rps_min", "rps_max", "cpu_s", "req_per_cpu_s", "p50_ms", "p99_ms",
                    "rss_bytes", "cap_use", "errors", "ratio_rps", "ratio_req_per_cpu_s", "target", "met"])
        for e in summary:
            for name, s in e["servers"].items():
                w.writerow([e["key"], name, f"{s['rps']:.0f}", f"{s['rps_min']:.0f}", f"{s['rps_max']:.0f}",
                            f"{s['cpu_s']:.3f}", f"{s['req_per_cpu_s']:.0f}", f"{s['p50_ms']:.3f}", f"{s['p99_ms']:.3f}",
                            int(s["rss_bytes"]), f"{s['cap_use']:.2f}", s["errors"],
                            f"{e.get('ratio_rps', float('nan')):.3f}", f"{e.get('ratio_req_per_cpu_s', float('nan')):.3f}",
                            e["target"], e.get("met", "")])
    with open(paths["json"], "w") as f:
        json.dump(_no_nan({"meta": meta, "summary": summary, "idle": idle, "runs": rows}), f, indent=2)
    return paths
