"""Where the time goes, per server and workload: syscalls per request (strace -c) and the hottest functions
(perf record), under the same pinning, priority and CPU cap as the benchmark. A diagnostic, not a benchmark:
strace slows the server down a lot, but the counts *per request* stay true.

Usage: python3 -m hsbench.profile --ours PATH|nginx   (make bench-profile)
Environment: BENCH_WORKLOADS (default 100b-c100,100b-pipe16), PROFILE_SECONDS (3), BENCH_CPU_QUOTA (40).
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import content, wrk
from .cgroup import CpuQuota
from .placement import Client
from .progress import step, warn
from .servers import pair
from .workloads import select


def parse_strace(text: str) -> dict[str, int]:
    """strace -c summary → {syscall: calls}."""
    calls = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) in (5, 6) and re.fullmatch(r"[\d.]+", f[0]) and f[-1] != "total":
            calls[f[-1]] = int(f[3])
    return calls


def _attach(cmd: list[str]) -> subprocess.Popen:
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # let the tracer attach before the load starts
    return p


def _detach(p: subprocess.Popen) -> None:
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def syscalls_per_request(server, wl, client, seconds, out_dir) -> tuple[dict[str, float], int]:
    path = os.path.join(out_dir, f"strace-{server.name}-{wl.key}.txt")
    pids = [a for pid in server.pids() for a in ("-p", str(pid))]
    tracer = _attach(["strace", "-c", "-f", "-o", path, *pids])
    try:
        res = wrk.run(f"http://127.0.0.1:{server.port}{wl.path}", wl.connections, seconds, client,
                      wl.script, wl.script_args)
    finally:
        _detach(tracer)
    with open(path) as f:
        calls = parse_strace(f.read())
    return {k: v / max(1, res.requests) for k, v in calls.items()}, res.requests


def hottest(server, wl, client, seconds, out_dir, top=12) -> list[str]:
    data = os.path.join(out_dir, f"perf-{server.name}-{wl.key}.data")
    pids = ",".join(str(p) for p in server.pids())
    rec = _attach(["perf", "record", "-F", "1999", "-g", "-p", pids, "-o", data])
    try:
        wrk.run(f"http://127.0.0.1:{server.port}{wl.path}", wl.connections, seconds, client, wl.script,
                wl.script_args)
    finally:
        _detach(rec)
    lines = []
    for sort in ("dso", "dso,sym"):
        rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", sort, "--stdio"],
                             capture_output=True, text=True).stdout
        rows = [l.strip() for l in rep.splitlines() if re.match(r"^\s+[\d.]+%", l)]
        lines += rows[:3] if sort == "dso" else rows[:top]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(prog="hsbench.profile", description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--out", default=os.environ.get("BENCH_OUT", "_out/bench"))
    args = ap.parse_args()
    seconds = int(os.environ.get("PROFILE_SECONDS", "3"))
    quota = int(os.environ.get("BENCH_CPU_QUOTA", "40"))
    workloads = select(os.environ.get("BENCH_WORKLOADS", "") or "100b-c100,100b-pipe16")
    if not shutil.which("strace"):
        warn("strace not found (apt-get install -y strace)")
        return 2
    out_dir = os.path.join(args.out, "profile")
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="hs-profile-")
    os.chmod(work, 0o755)
    tag = f"hs-profile-{os.getpid()}"
    servers, client = [], Client(1, CpuQuota(f"{tag}-client", 0))
    report = ["| Server | Workload | syscalls per request (strace -c) |", "|---|---|---|"]
    hot = []
    try:
        site = content.generate(os.path.join(work, "site"))
        servers = list(pair(args.ours, site.root, 0, quota, work, [], tag))
        client.group.create()
        for s in servers:
            s.start()
            s.validate(site.samples)
        for wl in workloads:
            for s in servers:
                step(f"strace -c: {s.name} under {wl.key}")
                per, n = syscalls_per_request(s, wl, client, seconds, out_dir)
                top = sorted(per.items(), key=lambda kv: -kv[1])
                total = sum(per.values())
                report.append(f"| {s.name} | {wl.key} | **{total:.2f}**: "
                              + ", ".join(f"{k} {v:.2f}" for k, v in top if v >= 0.005) + " |")
                if shutil.which("perf"):
                    step(f"perf record: {s.name} under {wl.key}")
                    hot.append((s.name, wl.key, hottest(s, wl, client, seconds, out_dir)))
    finally:
        for s in servers:
            s.stop()
        client.group.destroy()
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(report) + "\n"
    for name, key, lines in hot:
        text += f"\n#### perf: {name}, {key} (self time; kernel vs server, then hottest symbols)\n\n```\n"
        text += "\n".join(lines) + "\n```\n"
    with open(os.path.join(out_dir, "profile.md"), "w") as f:
        f.write(text)
    step(f"profile written to {out_dir}/profile.md (raw strace/perf files beside it)")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
