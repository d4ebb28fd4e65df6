"""The report of make bench-pool, from its results.json: per case (the small-site pool, the docs pool) one table of
the pool server beside the single-site server with the goals beside the figures, one table of the cold sites' first
requests, and whether the client was the limit. Redraw with: python3 -m hsbench.poolreport _out/bench/pool
"""
import json
import math
import os
import statistics
import sys

# The harness's existing thresholds (__main__._note): below this share of its CPU cap a server was not saturated,
# and wrk using more than this share of the run's seconds on its core was the limit.
SATURATED = 0.85
CLIENT_BOUND = 0.9
COLD_GOAL_MS = 50.0  # issue 40: the first request to a site just demoted, ≤ 50 ms (the kind scenario's goal)


def _med(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else float("nan")


def _pct(xs, q: float):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def run_note(run: dict, quota_pct: int) -> str:
    """The progress line's warning for one run (the same tests as bench-server's)."""
    note = ""
    if not run["requests"]:
        note += "  ⚠ no response at all in the run"
    if run["errors"] or run["non2xx"]:
        note += f"  ⚠ {run['errors']} socket errors, {run['non2xx']} non-2xx"
    if quota_pct and run["cap_use"] < SATURATED:
        note += f"  ⚠ server used only {run['cap_use']:.0%} of its CPU cap: not saturated"
        if run["client_cpu_s"] > CLIENT_BOUND * run["seconds"]:
            note += " (wrk was CPU-bound)"
    return note


def ok_per_cpu_s(run: dict) -> float:
    """Answers that were not errors (wrk's "Non-2xx or 3xx" counts statuses ≥ 400) per server CPU-second: the
    goal's measure, so that a pool answering 503 while it loads (or refuses) a site gains nothing by it."""
    return (run["requests"] - run["non2xx"]) / run["cpu_s"] if run["cpu_s"] > 0 else 0.0


def side(runs: list[dict], server: str) -> dict:
    """Medians and min–max of one server's runs."""
    rs = [r for r in runs if r["server"] == server]
    if not rs:
        return {}
    rps = [r["rps"] for r in rs]
    cpu = [r["req_per_cpu_s"] for r in rs]
    ok = [ok_per_cpu_s(r) for r in rs]
    return {"runs": len(rs), "rps": _med(rps), "rps_min": min(rps), "rps_max": max(rps), "req_per_cpu_s": _med(cpu),
            "cpu_min": min(cpu), "cpu_max": max(cpu), "ok_per_cpu_s": _med(ok), "ok_min": min(ok), "ok_max": max(ok),
            "cap_use": _med([r["cap_use"] for r in rs]),
            "client_share": _med([r["client_cpu_s"] / r["seconds"] for r in rs if r["seconds"]]),
            "non2xx_share": _med([r["non2xx"] / r["requests"] for r in rs if r["requests"]]),
            "errors": sum(r["errors"] for r in rs),
            "bytes_per_response": _med([r["bytes_read"] / r["requests"] for r in rs if r["requests"]]),
            "not_saturated": sum(1 for r in rs if r["cap_use"] < SATURATED),
            "client_bound": sum(1 for r in rs if r["seconds"] and r["client_cpu_s"] > CLIENT_BOUND * r["seconds"]),
            "rss_peak": max(r["rss_bytes"] for r in rs)}


def verdicts(case: dict, quota_pct: int) -> dict:
    """The case's ratios, the goal's verdict and the client-limit finding."""
    p, s = side(case["runs"], "pool"), side(case["runs"], "single")
    out = {"pool": p, "single": s, "cpu_ratio": float("nan"), "ok_ratio": float("nan"), "rps_ratio": float("nan"),
           "met": False}
    if p and s and s["req_per_cpu_s"] > 0 and s["rps"] > 0 and s["ok_per_cpu_s"] > 0:
        out["cpu_ratio"] = p["req_per_cpu_s"] / s["req_per_cpu_s"]
        out["ok_ratio"] = p["ok_per_cpu_s"] / s["ok_per_cpu_s"]
        out["rps_ratio"] = p["rps"] / s["rps"]
        out["met"] = out["ok_ratio"] >= case.get("goal", 0.9)
    limited = [n for n, x in (("pool", p), ("single", s)) if x and x["client_bound"]]
    unsat = [n for n, x in (("pool", p), ("single", s)) if x and x["not_saturated"]]
    if not quota_pct:
        out["client"] = "no CPU cap: saturation is not checked; compare req/CPU-s only"
    elif not limited and not unsat:
        out["client"] = (f"not the limit: every run held its server at ≥ {SATURATED:.0%} of its CPU cap, wrk below "
                         f"{CLIENT_BOUND:.0%} of its core")
    else:
        parts = [f"{n}: {x['not_saturated']} of {x['runs']} runs below {SATURATED:.0%} of the cap"
                 for n, x in (("pool", p), ("single", s)) if x and x["not_saturated"]]
        parts += [f"{n}: wrk CPU-bound in {x['client_bound']} runs" for n, x in (("pool", p), ("single", s))
                  if x and x["client_bound"]]
        out["client"] = ("**the client may have been the limit** (" + "; ".join(parts)
                         + "): req/s then says little, compare req/CPU-s")
    return out


def breakdown(runs: list[dict]) -> dict | None:
    """pool ÷ single as three factors (hsbench/pool.py, POOL_BREAKDOWN), from answered requests per server
    CPU-second: serving many sites (pool-hot ÷ single-hot: the same hot files by Host and by path), the hot set's
    size (single-hot ÷ single) and the cold tenth (pool ÷ pool-hot). None when the run had no breakdown."""
    sides = {n: side(runs, n) for n in ("pool", "single", "pool-hot", "single-hot")}
    if not all(x and x["ok_per_cpu_s"] > 0 for x in sides.values()):
        return None
    ok = {n: x["ok_per_cpu_s"] for n, x in sides.items()}
    out = {"sides": sides, "many_sites": ok["pool-hot"] / ok["single-hot"], "hot_set": ok["single-hot"] / ok["single"],
           "cold_tenth": ok["pool"] / ok["pool-hot"]}
    out["product"] = out["many_sites"] * out["hot_set"] * out["cold_tenth"]
    return out


def breakdown_markdown(runs: list[dict], p: dict, s: dict) -> list[str]:
    b = breakdown(runs)
    if not b:
        return []
    ph, sh = b["sides"]["pool-hot"], b["sides"]["single-hot"]

    def ok(x):
        return f"{x['ok_per_cpu_s']:,.0f} ({x['ok_min']:,.0f}–{x['ok_max']:,.0f})"

    lines = ["", "Where pool ÷ single goes (answered requests per server CPU-second, medians; two more servers in the "
             "same rounds: `pool-hot`, this pool given only the mix's hot requests, and `single-hot`, one `--root` "
             "holding the hot sites' files side by side, given the same requests by path):", "",
             "| factor | compares | ratio |", "|---|---|--:|",
             f"| serving many sites | pool-hot {ok(ph)} ÷ single-hot {ok(sh)}: the same files, by Host in the pool, "
             f"by path in one site | **{b['many_sites']:.2f}×** |",
             f"| the hot set's size | single-hot {ok(sh)} ÷ single {ok(s)}: the hot sites' files against one site's, "
             f"both one `--root` | **{b['hot_set']:.2f}×** |",
             f"| the cold tenth | pool {ok(p)} ÷ pool-hot {ok(ph)}: the whole mix against its hot requests | "
             f"**{b['cold_tenth']:.2f}×** |",
             f"| product | = pool ÷ single | {b['product']:.2f}× |"]
    # Every one of their answers must be a 200 (a 404 is fast) and each run must hold its server at its cap.
    non2xx = {n: sum(r["non2xx"] for r in runs if r["server"] == n) for n in ("pool-hot", "single-hot")}
    bad = [f"{n}: {non2xx[n]:,} non-2xx, {x['not_saturated']} of {x['runs']} runs below {SATURATED:.0%} of the cap"
           for n, x in (("pool-hot", ph), ("single-hot", sh)) if non2xx[n] or x["not_saturated"]]
    if bad:
        lines += ["", "⚠ breakdown servers: " + "; ".join(bad) + "."]
    return lines + [""]


def _mb(b) -> str:
    return f"{b / 1e6:,.1f} MB" if b is not None else "–"


def _ms(x) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.2f} ms"


def _startup(rows: list[dict], server: str) -> str:
    xs = [r["seconds"] * 1000 for r in rows if r["server"] == server]
    if not xs:
        return "–"
    return f"{_med(xs):,.1f} ms ({min(xs):,.1f}–{max(xs):,.1f})"


def case_markdown(kind: str, case: dict, meta: dict) -> str:
    case = {**case, "goal": meta.get("goal", 0.9)}
    v = verdicts(case, meta.get("cpu_quota_percent", 40))
    p, s = v["pool"], v["single"]
    pm = case["pool"]
    what = {"small": "small sites", "docs": "copies of the Python docs (hard links)"}.get(kind, kind)
    mix = case["mix"]
    lines = [f"#### {kind}: {pm['sites']:,} {what} × {pm['files_per_site']:,} files "
             f"({pm['bytes_per_site'] / 1e3:,.0f} KB each) in one `--sites` server vs `--root` on {case['single_site']}",
             "",
             f"Mix: {mix['requests']:,} requests per pass, {mix['hot_share']:.0%} on {mix['hot_sites']:,} hot sites, "
             f"the rest on {mix['cold_sites']:,} others; {mix['paths']:,} paths per site walked in order; "
             f"c={meta['connections']}. Medians of {meta['reps']} interleaved rounds × {meta['seconds']} s "
             f"(min–max in brackets).",
             "",
             "| Measure | pool (`--sites`) | single site (`--root`) | pool ÷ single | Goal |",
             "|---|--:|--:|--:|---|"]

    def row(name, a, b, ratio="", goal="–"):
        lines.append(f"| {name} | {a} | {b} | {ratio} | {goal} |")

    row("RSS after start (nothing requested)", _mb(case["rss_start"].get("pool")), _mb(case["rss_start"].get("single")))
    row(f"start → first 200 for `{case['single_site']}/index.html` ({meta['startup_reps']} starts)",
        _startup(case["startup"], "pool"), _startup(case["startup"], "single"))
    if p and s:
        row("req/s", f"{p['rps']:,.0f} ({p['rps_min']:,.0f}–{p['rps_max']:,.0f})",
            f"{s['rps']:,.0f} ({s['rps_min']:,.0f}–{s['rps_max']:,.0f})", f"{v['rps_ratio']:.2f}×")
        row("requests per server CPU-second (any status)",
            f"{p['req_per_cpu_s']:,.0f} ({p['cpu_min']:,.0f}–{p['cpu_max']:,.0f})",
            f"{s['req_per_cpu_s']:,.0f} ({s['cpu_min']:,.0f}–{s['cpu_max']:,.0f})", f"{v['cpu_ratio']:.2f}×")
        row("**answered requests (< 400) per server CPU-second**",
            f"{p['ok_per_cpu_s']:,.0f} ({p['ok_min']:,.0f}–{p['ok_max']:,.0f})",
            f"{s['ok_per_cpu_s']:,.0f} ({s['ok_min']:,.0f}–{s['ok_max']:,.0f})", f"**{v['ok_ratio']:.2f}×**",
            f"≥ {case['goal']}×: **{'met' if v['met'] else 'not met'}**")
        row("non-2xx answers (share of requests)", f"{p['non2xx_share']:.2%}", f"{s['non2xx_share']:.2%}", "",
            "0 once loaded (a cold site's first request may be 503 while it loads)")
        row("bytes read per response", f"{p['bytes_per_response']:,.0f}", f"{s['bytes_per_response']:,.0f}", "",
            "equal (only the server differs)")
        row("server CPU cap used", f"{p['cap_use']:.0%}", f"{s['cap_use']:.0%}", "", f"≥ {SATURATED:.0%} (saturated)")
        row("wrk CPU, share of its core", f"{p['client_share']:.0%}", f"{s['client_share']:.0%}", "",
            f"< {CLIENT_BOUND:.0%} (client not the limit)")
        row("RSS, peak during the runs", _mb(p["rss_peak"]), _mb(s["rss_peak"]))
        b = side(case["runs"], "baseline")
        if b:
            # The same pool on another build (POOL_BASELINE), in the same rounds: what a change to the server did.
            row("pool on the baseline build (POOL_BASELINE): answered requests per server CPU-second",
                f"{b['ok_per_cpu_s']:,.0f} ({b['ok_min']:,.0f}–{b['ok_max']:,.0f})", "",
                f"this build ÷ baseline: **{p['ok_per_cpu_s'] / b['ok_per_cpu_s']:.2f}×**" if b["ok_per_cpu_s"] else "")
    row("RSS after the runs", _mb(case["rss_end"].get("pool")), _mb(case["rss_end"].get("single")))
    fds = case.get("open_files_end") or {}
    if fds:
        def fd(n):
            x = fds.get(n) or {}
            return f"{x.get('open', 0):,} of {x.get('limit') or 0:,}" if x else "–"
        row("open files after the runs (of RLIMIT_NOFILE)", fd("pool"), fd("single"), "",
            "below the limit (each file served from disk holds one)")
    lines.append("")
    lines.append(f"Client: {v['client']}.")
    lines += breakdown_markdown(case["runs"], p, s)
    sa = case.get("sites_after") or {}
    if sa:
        states = ", ".join(f"{k} {n:,}" for k, n in sorted(sa.get("states", {}).items()))
        lines.append(f"Pool after the runs (`/sites`): {sa.get('sites', 0):,} sites ({states}); "
                     f"{sa.get('memory_bytes', 0) / 1e6:,.1f} MB of content in memory; "
                     f"{sa.get('rate_limited', 0):,} rate-limited"
                     + (f"; {sa.get('sites_with_errors', len(sa['errors'])):,} sites with an error, e.g. "
                        f"{'; '.join(sa['errors'][:3])}" if sa.get("errors") else "") + ".")
    cold = case.get("cold") or []
    if cold:
        statuses: dict[int, int] = {}
        for c in cold:
            statuses[c["first_status"]] = statuses.get(c["first_status"], 0) + 1
        st = ", ".join(f"{k} × {n}" for k, n in sorted(statuses.items()))
        first = [c["first_ms"] for c in cold]
        to200 = [c["to_200_ms"] for c in cold]
        warm = [c["warm_ms"] for c in cold]
        tries = [c["tries"] for c in cold]
        all_200 = statuses.keys() == {200}
        lines += ["",
                  f"First request to a cold site ({len(cold)} distinct sites never requested since start, "
                  f"`/index.html`, raw socket, connection opened beforehand):",
                  "",
                  "| | median | p90 | max | Goal |",
                  "|---|--:|--:|--:|---|",
                  f"| first answer ({st}) | {_ms(_med(first))} | {_ms(_pct(first, 0.9))} | {_ms(max(first))} | "
                  f"a 200, from disk without waiting for a full load (pools.md): **{'met' if all_200 else 'not met'}** |",
                  f"| to the first 200 (requests: median {_med(tries):.0f}, max {max(tries)}) | {_ms(_med(to200))} | "
                  f"{_ms(_pct(to200, 0.9))} | {_ms(max(to200))} | ≤ {COLD_GOAL_MS:.0f} ms (issue 40's goal for "
                  f"a just-demoted site in kind): **{'met' if _pct(to200, 0.9) <= COLD_GOAL_MS else 'not met'}** "
                  f"(p90) |",
                  f"| the next request, same site | {_ms(_med(warm))} | {_ms(_pct(warm, 0.9))} | {_ms(max(warm))} | – |"]
        if not all_200:
            lines.append("")
            lines.append("A 503 first answer carries `Retry-After: 1`: a client that obeys it waits a second; the "
                         "probe asks again every millisecond, so its \"to the first 200\" is the server's own delay.")
    return "\n".join(lines) + "\n"


def markdown(data: dict) -> str:
    meta = data["meta"]
    head = [f"### One server, many sites (issue 40): `--sites` vs `--root`",
            "",
            f"{meta['date']}, git {meta['git']}, {meta.get('version', '')}; server on CPU {meta['server_cpu']} at "
            f"{meta['cpu_quota_percent'] or 100}% of a core, wrk and the probes on CPU {meta['client_cpu']}; flags "
            f"beside the benchmark's usual ones: `{' '.join(meta.get('server_args', []))}`; load average "
            f"{meta.get('loadavg_start', 0):.1f} → {meta.get('loadavg_end', 0):.1f}."
            + (f" Baseline build (a second pool in the same rounds): {meta['baseline']['version']}, "
               f"`{meta['baseline']['binary']}`." if meta.get("baseline") else ""),
            "", ""]
    return "\n".join(head) + "\n".join(case_markdown(k, c, meta) + "\n" for k, c in data["cases"].items())


def render(out_dir: str) -> str:
    with open(os.path.join(out_dir, "results.json")) as f:
        data = json.load(f)
    md = markdown(data)
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(md)
    return md


if __name__ == "__main__":
    print(render(sys.argv[1] if len(sys.argv) > 1 else "_out/bench/pool"))
