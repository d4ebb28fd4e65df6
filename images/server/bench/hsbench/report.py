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


FLOOR = "floor"
# Our server as deployed (servers.DEPLOYED_NAME): another row of ours, never a peer.
DEPLOYED = "hyperstatic (as deployed)"


def is_peer(name: str, ours: str) -> bool:
    return name not in (ours, FLOOR, DEPLOYED)


def _stats(rs) -> dict:
    return {
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


def best_peer(servers: dict, ours: str) -> str | None:
    """The peer with the highest median req/s in one workload (never ours, never the floor)."""
    peers = [(s["rps"], n) for n, s in servers.items() if is_peer(n, ours) and s["rps"] > 0]
    return max(peers)[1] if peers else None


def summarize(runs, workloads: list[Workload], names: list[str]) -> list[dict]:
    """names[0] is our server; the others are peers, and "floor" the limit reference. Per workload: medians and
    min–max per server; ours ÷ each peer (ratios); ours ÷ the best peer (ratio_rps, the headline, against the
    target); each server's req/s as a fraction of the floor's (floor_frac), where the floor ran."""
    ours = names[0]
    out = []
    for wl in workloads:
        entry = {"key": wl.key, "title": wl.title, "target": wl.target, "servers": {}, "ratios": {},
                 "floor_frac": {}}
        for name in names:
            rs = [r for r in runs if r.workload == wl.key and r.server == name]
            if rs:
                entry["servers"][name] = _stats(rs)
        s = entry["servers"]
        if ours in s:
            for name in names[1:]:
                if name != FLOOR and name in s and s[name]["rps"] > 0:
                    entry["ratios"][name] = s[ours]["rps"] / s[name]["rps"]
            best = best_peer(s, ours)
            if best is not None:
                entry["best_peer"] = best
                entry["ratio_rps"] = s[ours]["rps"] / s[best]["rps"]
                entry["ratio_req_per_cpu_s"] = s[ours]["req_per_cpu_s"] / s[best]["req_per_cpu_s"]
                entry["met"] = entry["ratio_rps"] >= wl.target
        if FLOOR in s and s[FLOOR]["rps"] > 0:
            for name, st in s.items():
                entry["floor_frac"][name] = st["rps"] / s[FLOOR]["rps"]
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


def _pct(x) -> str:
    return "–" if _unknown(x) else f"{x:.0%}"


def idle_h2_table(idle_h2: dict[str, dict], meta: dict, names: list[str],
                  what: str = "h2 connections (TLS)") -> list[str]:
    """Memory with idle HTTP/2 connections (each sent preface, SETTINGS and one request), per server."""
    if not idle_h2:
        return []
    lines = ["", f"| Server | RSS fresh | RSS with {meta['idle_conns']:,} idle {what} | per connection | "
                 f"still open |", "|---|--:|--:|--:|--:|"]
    for name in names:
        r = idle_h2.get(name)
        if r is None:
            continue
        per = (r["rss_idle"] - r["rss_before"]) / max(1, r["conns_alive"])
        lines.append(f"| {name} | {_mb(r['rss_before'])} | {_mb(r['rss_idle'])} | {per / 1024:.2f} KiB | "
                     f"{r['conns_alive']:,} of {r['conns_wanted']:,} |")
    return lines


def markdown(summary: list[dict], idle: dict[str, dict], meta: dict, names: list[str]) -> str:
    ours, peers = names[0], [n for n in names[1:] if is_peer(n, names[0])]
    lines = [
        f"### {ours} vs {', '.join(peers)}: server on CPU {meta['server_cpu']} capped at "
        f"{meta['cpu_quota_percent']}% of a core, wrk on CPU {meta['client_cpu']}; medians of {meta['reps']} × "
        f"{meta['seconds']} s runs, interleaved",
        "",
        f"{meta.get('date', '')}, git {meta.get('git', '?')}; {', '.join(f'{k} {v}' for k, v in meta.get('versions', {}).items())}; "
        f"machine load average {meta.get('loadavg_start', float('nan')):.1f} → {meta.get('loadavg_end', float('nan')):.1f} "
        f"(other work on the 2 cores adds noise: see README)",
        "",
        f"| Workload | Server | req/s (min–max) | CPU-s | req/CPU-s | p99 | RSS | {ours} ÷ this | % of floor | "
        f"{ours} ÷ best peer | Target |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for e in summary:
        for i, name in enumerate(names):
            first = i == 0
            s = e["servers"].get(name)
            title = e["title"] if first else ""
            if s is None:
                if name == FLOOR:
                    lines.append(f"| {title} | {name} | – | – | – | – | – | – | – | | |")
                continue
            vs = ""
            if name in e.get("ratios", {}):
                vs = f"{e['ratios'][name]:.2f}×"
            best = target = ""
            if first and "ratio_rps" in e:
                best = f"**{e['ratio_rps']:.2f}×** ({e.get('best_peer', names[1])}; {e['ratio_req_per_cpu_s']:.2f}× per CPU-s)"
                target = verdict(e["ratio_rps"], e["target"])
            errs = f" ⚠ {s['errors']} errors" if s["errors"] else ""
            lines.append(
                f"| {title} | {name} | {_k(s['rps'])} ({_k(s['rps_min'])}–{_k(s['rps_max'])})"
                f"{errs} | {s['cpu_s']:.2f} | {_k(s['req_per_cpu_s'])} | {_ms(s['p99_ms'])} | {_mb(s['rss_bytes'])} | "
                f"{vs} | {_pct(e.get('floor_frac', {}).get(name))} | {best} | {target} |")
    if idle:
        lines += ["", f"| Server | RSS fresh | RSS with {meta['idle_conns']:,} idle keep-alive connections | "
                      f"per connection | still open | Target: ≤ 10 MB + {meta['content_bytes'] / MB:.1f} MB content |",
                  "|---|--:|--:|--:|--:|---|"]
        for name in names:
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
    lines += idle_h2_table(meta.get("idle_h2c") or {}, meta, names, "h2c connections (plain port)")
    lines += idle_h2_table(meta.get("idle_h2") or {}, meta, names)
    lines += ["", f"CPU-s: the server's user+system CPU seconds during one run (all its processes, from /proc). "
                  f"RSS: peak summed VmRSS during the run. MB = 10^6 bytes. "
                  f"p99 from wrk; none for pipelining, where wrk's latency statistics do not apply. "
                  f"{ours} ÷ this: our median req/s over that server's. Best peer: the peer with the highest median "
                  f"req/s in that row; the target applies to it. % of floor: req/s as a share of the floor's "
                  f"(floor.c: a canned-response loop that reads nothing of a request but an 8 KiB file's number); "
                  f"– where the floor did not run."]
    if meta.get("deployed"):
        lines += ["", deployed_note(meta["deployed"], ours)]
    if meta.get("tls"):
        lines += ["", tls_note(meta["tls"])]
    return "\n".join(lines) + "\n"


def deployed_note(d: dict, ours: str) -> str:
    """Which row of ours is which (issue 25): steady state, and as deployed with its encoder at work."""
    pending = ", ".join(f"{a}→{b}" for a, b in d.get("pending", [])) or "–"
    return (f"Two rows of ours. **{ours}**: steady state, started once and measured only when its background "
            f"encoder has nothing pending (this tree has nothing compressible in what is requested). "
            f"**{DEPLOYED}**: as a new pod is deployed, with its defaults on a raw tree, the same files plus "
            f"{d['pages']:,} compressible 8 KiB pages without siblings; started just before each of its runs and "
            f"stopped after, so its encoder is at work in every run (files pending at each run's start→end: "
            f"{pending}). Neither row is a peer: the best-peer ratio and the target use the steady row.")


def tls_note(t: dict) -> str:
    """How the HTTPS rows were set up and what every server was seen to negotiate before timing."""
    picks = ", ".join(f"{n} {c.get('cipher_unforced_client', '?')}" for n, c in t.get("servers", {}).items())
    return (f"HTTPS rows: {t['protocol']} with {t['cipher']} for every server, {t['certificate']} certificate, "
            f"HTTP/1.1, session resumption on; no floor (floor.c has no TLS). Checked before timing, per server: "
            f"that suite, ALPN http/1.1, a session resumed on reconnect (`openssl s_client -sess_out/-sess_in`) and "
            f"the exact file bytes over HTTPS. Keep-alive rows: wrk offering only that suite (OPENSSL_CONF). New "
            f"connection rows: tlsload (Go), which counts every handshake; the full row fails on any resumed one, "
            f"the resumed row on more than 1% full, every connection on another suite. Suite each server picks "
            f"when a client offers OpenSSL's default list (AES-256 first): {picks or 'not recorded'}.")


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
                    "rss_bytes", "cap_use", "errors", "ours_over_this", "pct_of_floor", "best_peer",
                    "ours_over_best_rps", "ours_over_best_req_per_cpu_s", "target", "met"])
        for e in summary:
            for name, s in e["servers"].items():
                w.writerow([e["key"], name, f"{s['rps']:.0f}", f"{s['rps_min']:.0f}", f"{s['rps_max']:.0f}",
                            f"{s['cpu_s']:.3f}", f"{s['req_per_cpu_s']:.0f}", f"{s['p50_ms']:.3f}", f"{s['p99_ms']:.3f}",
                            int(s["rss_bytes"]), f"{s['cap_use']:.2f}", s["errors"],
                            f"{e['ratios'].get(name, float('nan')):.3f}",
                            f"{100 * e['floor_frac'].get(name, float('nan')):.1f}", e.get("best_peer", ""),
                            f"{e.get('ratio_rps', float('nan')):.3f}", f"{e.get('ratio_req_per_cpu_s', float('nan')):.3f}",
                            e["target"], e.get("met", "")])
    with open(paths["json"], "w") as f:
        json.dump(_no_nan({"meta": meta, "summary": summary, "idle": idle, "runs": rows}), f, indent=2)
    return paths
