"""The real-site benchmark's Markdown (summary.md), from results.json: the load table (medians, min–max, ours ÷
each peer for req/s and req/CPU-s, bytes per response, RSS after warm-up and after the run), the startup table
and what each server sent in the check pass.  python3 -m hsbench.sitereport _out/bench/site  redraws it."""
import json
import math
import os
import statistics
import sys

from .report import _k, _mb, _ms, _unknown


def _med(xs):
    xs = [x for x in xs if not _unknown(x)]
    return statistics.median(xs) if xs else float("nan")


def _ratio(a, b) -> str:
    return "–" if _unknown(a) or _unknown(b) or not b else f"{a / b:.2f}×"


def run_medians(runs: list[dict], workload: str, server: str) -> dict:
    """Medians of what report.summarize does not keep: RSS after warm-up / after the run, bytes per response."""
    rs = [r for r in runs if r["workload"] == workload and r["server"] == server]
    return {"rss_warm": _med([r.get("rss_warm_bytes", float("nan")) for r in rs]),
            "rss_end": _med([r.get("rss_end_bytes", float("nan")) for r in rs]),
            "bytes_per_resp": _med([r["bytes_read"] / r["requests"] for r in rs if r.get("requests")])}


def startup_medians(rows: list[dict], server: str) -> dict:
    xs = [r["seconds"] for r in rows if r["server"] == server]
    rss = [r["rss_bytes"] for r in rows if r["server"] == server]
    return {"n": len(xs), "median": _med(xs), "min": min(xs) if xs else math.nan, "max": max(xs) if xs else math.nan,
            "rss": _med(rss)}


def _kib(x) -> str:
    return "–" if _unknown(x) else f"{x / 1024:.1f} KiB"


def markdown(data: dict) -> str:
    meta, summary, runs = data["meta"], data["summary"], data["runs"]
    names = meta["servers"]
    ours = names[0]
    mix = meta.get("mix", {})
    kinds = ", ".join(f"{k} {v['requests'] / mix['requests']:.0%} of requests / {v['bytes'] / mix['bytes']:.0%} of "
                      f"identity bytes" for k, v in mix.get("kinds", {}).items())
    lines = [
        f"### {ours} vs {', '.join(names[1:])} on the Python 3.11 docs: every server on CPU {meta['server_cpu']} "
        f"capped at {meta['cpu_quota_percent']}% of a core, wrk on CPU {meta['client_cpu']}; medians of "
        f"{meta['reps']} × {meta['seconds']} s runs, interleaved",
        "",
        f"{meta.get('date', '')}, git {meta.get('git', '?')}; "
        f"{', '.join(f'{k} {v}' for k, v in meta.get('versions', {}).items())}; machine load average "
        f"{meta.get('loadavg_start', math.nan):.1f} → {meta.get('loadavg_end', math.nan):.1f}.",
        "",
        f"Mix: {mix.get('requests', 0):,} requests per pass over {mix.get('unique', 0)} files (each of the "
        f"{meta.get('pages', '?')} pages followed by its assets); {kinds}. "
        f"Accept-Encoding: `{meta.get('accept_encoding', '')}`, keep-alive.",
        "",
        f"| Connections (h2: HTTP/2 over TLS) | Server | req/s (min–max) | {ours} ÷ this | req/CPU-s | {ours} ÷ this per CPU-s | CPU-s | "
        f"bytes/response | p99 | RSS after warm-up | RSS after run |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for e in summary:
        s_ours = e["servers"].get(ours, {})
        for i, name in enumerate(names):
            s = e["servers"].get(name)
            if s is None:
                continue
            m = run_medians(runs, e["key"], name)
            vs = vs_cpu = ""
            if name != ours:
                vs = _ratio(s_ours.get("rps"), s["rps"])
                vs_cpu = _ratio(s_ours.get("req_per_cpu_s"), s["req_per_cpu_s"])
            errs = f" ⚠ {s['errors']} errors" if s["errors"] else ""
            lines.append(
                f"| {e['title'].split(', ')[-1] if i == 0 else ''} | {name} | {_k(s['rps'])} ({_k(s['rps_min'])}–"
                f"{_k(s['rps_max'])}){errs} | {vs} | {_k(s['req_per_cpu_s'])} | {vs_cpu} | {s['cpu_s']:.2f} | "
                f"{_kib(m['bytes_per_resp'])} | {_ms(s['p99_ms'])} | {_mb(m['rss_warm'])} | {_mb(m['rss_end'])} |")
    st = meta.get("startup", [])
    if st:
        so = startup_medians(st, ours)
        lines += ["", f"| Server | spawn → first 200 (median of {so['n']}, min–max) | {ours} ÷ this | RSS at first 200 |",
                  "|---|--:|--:|--:|"]
        for name in names:
            m = startup_medians(st, name)
            if not m["n"]:
                continue
            lines.append(f"| {name} | {m['median'] * 1000:.0f} ms ({m['min'] * 1000:.0f}–{m['max'] * 1000:.0f} ms) | "
                         f"{'' if name == ours else _ratio(so['median'], m['median'])} | {_mb(m['rss'])} |")
        held = meta.get("ours_content_metrics") or {}
        if held.get("hyperstatic_content_memory_bytes"):
            lines += ["", f"{ours} holds the site in its own memory, so it is in its RSS; its /metrics: "
                          f"{held.get('hyperstatic_content_files', 0):,.0f} files, "
                          f"{_mb(held.get('hyperstatic_content_bytes', 0))} of file bodies "
                          f"(hyperstatic_content_bytes), {_mb(held['hyperstatic_content_memory_bytes'])} held in "
                          f"memory (hyperstatic_content_memory_bytes: bodies plus the br/gzip variants attached to "
                          f"them). The peers read files through the kernel's page cache, which no RSS shows."]
    chk = meta.get("check", {})
    if chk:
        lines += ["", "| Server | compressed responses from | Content-Encoding over the unique URLs | body bytes for one "
                      "request per unique URL |", "|---|---|---|--:|"]
        for name in names:
            c = chk.get(name)
            if c:
                enc = ", ".join(f"{k} {v}" for k, v in sorted(c["encodings"].items()))
                lines.append(f"| {name} | {c['how']} | {enc} | {_mb(c['bytes_sent'])} |")
    lines += ["", f"{ours} ÷ this: our median over that server's (above 1× = ours better; for startup, below 1× = ours "
                  f"faster). CPU-s: the server's user+system CPU seconds in one run (/proc). bytes/response: what wrk "
                  f"read (headers + bodies) per response. RSS: summed VmRSS of the server's processes; it counts the "
                  f"content a server holds in its own memory (ours) but not the page cache the others read files "
                  f"through. MB = 10^6 bytes. Spawn → first 200: from just before the process is spawned to the first "
                  f"200 for /index.html, polled every ~1 ms."]
    return "\n".join(lines) + "\n"


def render(out_dir: str) -> str:
    with open(os.path.join(out_dir, "results.json")) as f:
        md = markdown(json.load(f))
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(md)
    return md


if __name__ == "__main__":
    print(render(sys.argv[1] if len(sys.argv) > 1 else "_out/bench/site"))
