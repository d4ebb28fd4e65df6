"""SVG chart of the results: per workload, our req/s and req/CPU-s as a multiple of the best peer's (log scale, so
1.3× and 8× are both readable), each with its target; then every server's req/s as a % of the floor's, where the
floor ran; below, memory with 10k idle connections against its budget. Plain SVG text, no plotting library."""
import math
from xml.sax.saxutils import escape

from . import report

W = 960
LEFT = 250          # room for workload labels
RIGHT = 150
PLOT_W = W - LEFT - RIGHT
MET, MISSED, EFF, PEER, INK, GRID = "#2e8b57", "#d9822b", "#9bb7d4", "#8c8c8c", "#222", "#ddd"
SERIES = ["#2e8b57", "#4c72b0", "#c44e52", "#8172b2", "#937860", "#8c8c8c"]  # ours first, then peers, floor last


def _text(x, y, s, size=13, anchor="start", weight="normal", fill=INK):
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
            f'fill="{fill}">{escape(s)}</text>')


def _ratio_panel(summary, top, ours):
    entries = [e for e in summary if "ratio_rps" in e]
    values = [v for e in entries for v in (e["ratio_rps"], e["ratio_req_per_cpu_s"], e["target"])] or [1.0]
    lo = 2.0 ** math.floor(math.log2(min(1.0, min(values)) * 0.9))
    hi = 2.0 ** math.ceil(math.log2(max(2.0, max(values)) * 1.15))

    def x(v):
        v = max(v, lo)
        return LEFT + PLOT_W * (math.log2(v) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))

    row_h, bar_h = 62, 20
    parts = [_text(20, top, f"{ours} ÷ best peer of each row (log scale; right of 1× = ahead of every peer): "
                            f"req/s, req per CPU-s", 14, weight="bold")]
    y0 = top + 16
    height = row_h * len(entries) + 30
    tick = lo
    while tick <= hi * 1.0001:
        parts.append(f'<line x1="{x(tick):.1f}" y1="{y0}" x2="{x(tick):.1f}" y2="{y0 + height - 24}" stroke="{GRID}"/>')
        label = f"{tick:g}× = best peer" if tick == 1 else f"{tick:g}×"
        parts.append(_text(x(tick), y0 + height - 8, label, 12, "middle", "bold" if tick == 1 else "normal"))
        tick *= 2
    parts.append(f'<line x1="{x(1):.1f}" y1="{y0}" x2="{x(1):.1f}" y2="{y0 + height - 24}" stroke="{PEER}" '
                 f'stroke-width="2"/>')
    for i, e in enumerate(entries):
        y = y0 + 20 + i * row_h
        color = MET if e["ratio_rps"] >= e["target"] else MISSED
        parts.append(_text(LEFT - 10, y + bar_h - 5, e["title"], 13, "end"))
        parts.append(f'<rect x="{x(lo):.1f}" y="{y}" width="{x(e["ratio_rps"]) - x(lo):.1f}" height="{bar_h}" '
                     f'fill="{color}"/>')
        tx = x(e["target"])
        # value labels start right of both the bar and the target line, so nothing overlaps
        lx = max(x(e["ratio_rps"]), x(e["ratio_req_per_cpu_s"]), tx) + 8
        parts.append(_text(lx, y + bar_h - 5, f"{e['ratio_rps']:.2f}× req/s vs {e.get('best_peer', 'best peer')}", 13, weight="bold"))
        parts.append(f'<rect x="{x(lo):.1f}" y="{y + bar_h + 2}" width="{x(e["ratio_req_per_cpu_s"]) - x(lo):.1f}" '
                     f'height="{bar_h * 0.6:.0f}" fill="{EFF}"/>')
        parts.append(_text(lx, y + bar_h + 13, f"{e['ratio_req_per_cpu_s']:.2f}× req per CPU-s", 11))
        parts.append(f'<line x1="{tx:.1f}" y1="{y - 4}" x2="{tx:.1f}" y2="{y + bar_h * 1.6 + 6:.0f}" stroke="{INK}" '
                     f'stroke-width="2" stroke-dasharray="4,3"/>')
        parts.append(_text(tx, y - 6, f"target {e['target']:g}×", 11, "middle"))
    return parts, height + 24


def _floor_panel(summary, top, names):
    entries = [e for e in summary if e.get("floor_frac")]
    if not entries:
        return [], 0
    shown = [n for n in names if n != "floor"]
    hi = max([1.0] + [f for e in entries for n, f in e["floor_frac"].items() if n != "floor"]) * 1.1
    x = lambda v: LEFT + PLOT_W * min(v, hi) / hi
    bar_h = 12
    row_h = bar_h * len(shown) + 16
    parts = [_text(20, top, "req/s as % of the floor (floor.c, a canned-response loop; 100% = floor)",
                   14, weight="bold")]
    y0 = top + 14
    height = row_h * len(entries) + 26
    for pct in [p / 100 for p in range(0, int(hi * 100) + 1, 25)]:
        parts.append(f'<line x1="{x(pct):.1f}" y1="{y0}" x2="{x(pct):.1f}" y2="{y0 + height - 24}" stroke="{GRID}"/>')
        parts.append(_text(x(pct), y0 + height - 8, f"{pct:.0%}", 12, "middle", "bold" if pct == 1 else "normal"))
    for i, e in enumerate(entries):
        y = y0 + 6 + i * row_h
        parts.append(_text(LEFT - 10, y + bar_h + 4, e["title"], 13, "end"))
        for j, n in enumerate(shown):
            f = e["floor_frac"].get(n)
            if f is None:
                continue
            yy = y + j * bar_h
            parts.append(f'<rect x="{LEFT}" y="{yy}" width="{x(f) - LEFT:.1f}" height="{bar_h - 2}" '
                         f'fill="{SERIES[j % len(SERIES)]}"/>')
            parts.append(_text(x(f) + 5, yy + bar_h - 3, f"{n} {f:.0%}", 10))
    return parts, height + 20


def _idle_panel(idle, meta, top, names):
    ours = names[0]
    rows = [(n, idle[n]) for n in names if n in idle]
    if not rows:
        return [], 0
    budget = 10_000_000 + meta["content_bytes"]
    hi = max([budget] + [r["rss_idle"] for _, r in rows]) * 1.15
    x = lambda v: LEFT + PLOT_W * v / hi
    parts = [_text(LEFT, top, f"RSS with {meta['idle_conns']:,} idle keep-alive connections (MB)", 14, weight="bold")]
    y0 = top + 14
    for i, (name, r) in enumerate(rows):
        y = y0 + i * 30
        color = (MET if r["rss_idle"] <= budget else MISSED) if name == ours else PEER
        parts.append(_text(LEFT - 10, y + 15, name, 13, "end"))
        parts.append(f'<rect x="{LEFT}" y="{y}" width="{x(r["rss_idle"]) - LEFT:.1f}" height="20" fill="{color}"/>')
        parts.append(_text(x(r["rss_idle"]) + 5, y + 15, f"{r['rss_idle'] / 1e6:.1f} MB", 13, weight="bold"))
    bx = x(budget)
    h = 30 * len(rows)
    parts.append(f'<line x1="{bx:.1f}" y1="{y0 - 4}" x2="{bx:.1f}" y2="{y0 + h}" stroke="{INK}" stroke-width="2" '
                 f'stroke-dasharray="4,3"/>')
    parts.append(_text(bx, y0 + h + 14, f"budget {budget / 1e6:.1f} MB (10 MB + content)", 11, "middle"))
    return parts, h + 44


def svg(summary, idle, meta, names) -> str:
    ours = names[0]
    peers = [n for n in names[1:] if report.is_peer(n, ours)]
    title = f"{ours} vs {', '.join(peers)} — static files on loopback"
    sub = (f"server on CPU {meta['server_cpu']} capped at {meta['cpu_quota_percent']}% of a core, wrk on CPU "
           f"{meta['client_cpu']}; medians of {meta['reps']} × {meta['seconds']} s, interleaved; {meta['date']}")
    parts = [_text(20, 30, title, 18, weight="bold"), _text(20, 50, sub, 12, fill="#555")]
    ratio_parts, h1 = _ratio_panel(summary, 84, ours)
    floor_parts, hf = _floor_panel(summary, 84 + h1 + 20, names)
    top2 = 84 + h1 + 20 + (hf + 20 if hf else 0)
    idle_parts, h2 = _idle_panel(idle, meta, top2, names)
    legend_y = top2 + h2 + 6
    legend = [f'<rect x="{LEFT}" y="{legend_y}" width="12" height="12" fill="{MET}"/>',
              _text(LEFT + 18, legend_y + 11, "target met", 12),
              f'<rect x="{LEFT + 110}" y="{legend_y}" width="12" height="12" fill="{MISSED}"/>',
              _text(LEFT + 128, legend_y + 11, "target missed", 12),
              f'<rect x="{LEFT + 240}" y="{legend_y}" width="12" height="12" fill="{EFF}"/>',
              _text(LEFT + 258, legend_y + 11, "req per CPU-second ratio", 12)]
    height = legend_y + 30
    body = "\n".join(parts + ratio_parts + floor_parts + idle_parts + legend)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
            f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">\n'
            f'<rect width="100%" height="100%" fill="white"/>\n{body}\n</svg>\n')
