"""Where the time goes, per server and workload: syscalls per request (strace -c), user and system CPU per request
(from /proc, in an untraced run), and the hottest functions (perf record), for our server, every peer and the floor,
under the same pinning and CPU cap as the benchmark. A diagnostic, not a benchmark: strace slows a server down a lot,
but the counts *per request* stay true, and the CPU split comes from a run without a tracer.

Usage: python3 -m hsbench.profile --ours PATH   (make bench-profile)
Environment: BENCH_WORKLOADS (default: all plain-HTTP ones; no HTTPS or HTTP/2 rows here), PEERS (default nginx,lighttpd,h2o,caddy), BENCH_FLOOR (1),
PROFILE_SECONDS (3), BENCH_CPU_QUOTA (40), PROFILE_PERF (1; 0 skips perf).

The floor runs once per way of sending its 8 KiB bodies (floor-sendfile, floor-writev: servers.FLOOR_BODIES) in the
rows that ask for them, so the profile shows which mechanism is cheaper on this kernel; the 100-byte rows, where
both send the same canned bytes with the same syscalls, run only the first.
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
from .procstat import CLK_TCK, _stat_fields
from .content import SMALL_PATH
from .servers import FLOOR_BODIES, Floor, free_port, lineup, parse_peers
from .workloads import select


def parse_strace(text: str) -> dict[str, int]:
    """strace -c summary → {syscall: calls}."""
    calls = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) in (5, 6) and re.fullmatch(r"[\d.]+", f[0]) and f[-1] != "total":
            calls[f[-1]] = int(f[3])
    return calls


def cpu_ticks(pids: list[int]) -> tuple[int, int]:
    """(utime, stime) clock ticks summed over the given processes (threads included)."""
    user = system = 0
    for pid in pids:
        try:
            f = _stat_fields(pid)
        except FileNotFoundError:
            continue
        user, system = user + int(f[11]), system + int(f[12])
    return user, system


def context_switches(pids: list[int]) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of every thread of the given processes: how often a server
    sleeps (and is woken, on a VM by an inter-processor interrupt), and how often it is preempted."""
    vol = invol = 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except FileNotFoundError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    for line in f:
                        if line.startswith("voluntary_ctxt_switches:"):
                            vol += int(line.split()[-1])
                        elif line.startswith("nonvoluntary_ctxt_switches:"):
                            invol += int(line.split()[-1])
            except (FileNotFoundError, ValueError):
                continue
    return vol, invol


def ksoftirqd_pid(cpu: int) -> int | None:
    """The kernel thread that runs deferred softirqs (network receive work among them) on the given CPU."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/comm") as f:
                    if f.read().strip() == f"ksoftirqd/{cpu}":
                        return int(name)
            except OSError:
                continue
    return None


def _load(server, wl, client, seconds):
    return wrk.run(f"http://127.0.0.1:{server.port}{wl.path}", wl.connections, seconds, client, wl.script,
                   wl.script_args, headers=wl.headers)


def cpu_per_request(server, wl, client, seconds, cpu: int = 0):
    """(user µs, system µs, ksoftirqd µs, (voluntary, involuntary) context switches per 1,000 requests, req/s) in an untraced run of the
    workload. Network work the kernel defers to ksoftirqd on the server's CPU is not charged to the server (nor to
    its CPU quota), so it is shown beside the server's own time: a server can look cheap by leaving work there."""
    pids = server.pids()
    kpid = ksoftirqd_pid(cpu)
    kp = [kpid] if kpid else []
    u0, s0 = cpu_ticks(pids)
    k0 = sum(cpu_ticks(kp))
    c0 = context_switches(pids)
    res = _load(server, wl, client, seconds)
    u1, s1 = cpu_ticks(pids)
    k1 = sum(cpu_ticks(kp))
    c1 = context_switches(pids)
    n = max(1, res.requests)
    per = lambda ticks: ticks / CLK_TCK / n * 1e6  # noqa: E731
    return (per(u1 - u0), per(s1 - s0), per(k1 - k0), ((c1[0] - c0[0]) * 1000 / n, (c1[1] - c0[1]) * 1000 / n),
            res.rps)


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
        res = _load(server, wl, client, seconds)
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
        _load(server, wl, client, seconds)
    finally:
        _detach(rec)
    lines = []
    for sort in ("dso", "dso,sym"):
        rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", sort, "--stdio"],
                             capture_output=True, text=True).stdout
        rows = [l.strip() for l in rep.splitlines() if re.match(r"^\s+[\d.]+%", l)]
        lines += rows[:3] if sort == "dso" else rows[:top]
    return lines


def floor_variants(servers: list, quota: int, work: str, tag: str) -> list:
    """The lineup with its floor split into one floor per body mechanism, named floor-<mechanism>."""
    out = []
    for s in servers:
        if not isinstance(s, Floor):
            out.append(s)
            continue
        for io in FLOOR_BODIES:
            f = s if io == s.body_io else Floor(
                body_file=s.body_file, set_dir=s.set_dir, body_io=io, port=free_port(), root=s.root, cpu=s.cpu,
                quota=CpuQuota(f"{tag}-floor-{io}", quota), workdir=os.path.join(work, f"floor-{io}"))
            f.name = f"floor-{io}"
            out.append(f)
    return out


def runs_here(server, wl, bench_io: str) -> bool:
    """Peers always; a floor where the workload lets it stand in, and the epoll body mechanism bench-server does not
    use (bench_io is the one it does) only where the bodies are 8 KiB files: on the 100-byte rows both epoll floors
    send the same canned bytes the same way. The io_uring floor is another kernel interface: every row."""
    if not isinstance(server, Floor):
        return True
    return wl.floor and (server.body_io in (bench_io, "uring") or wl.path != SMALL_PATH)


def main() -> int:
    ap = argparse.ArgumentParser(prog="hsbench.profile", description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--out", default=os.environ.get("BENCH_OUT", "_out/bench"))
    args = ap.parse_args()
    seconds = int(os.environ.get("PROFILE_SECONDS", "3"))
    quota = int(os.environ.get("BENCH_CPU_QUOTA", "40"))
    # plain HTTP only: the profile drives wrk at each server's plain port and knows no TLS setup
    # wrk's plain-HTTP rows only: no HTTPS, no HTTP/2 (h2load; the h2c rows are plain but not HTTP/1.1)
    workloads = [w for w in select(os.environ.get("BENCH_WORKLOADS", "")) if not w.tls and w.client == "wrk"]
    if not workloads:
        warn("make bench-profile has no HTTPS rows; pick plain-HTTP workloads in BENCH_WORKLOADS")
        return 2
    peers = [p for p in parse_peers(os.environ.get("PEERS", "")) if p != "floor"]
    floor = os.environ.get("BENCH_FLOOR", "1") != "0"
    use_perf = os.environ.get("PROFILE_PERF", "1") != "0" and shutil.which("perf")
    if not shutil.which("strace"):
        warn("strace not found (apt-get install -y strace)")
        return 2
    out_dir = os.path.join(args.out, "profile")
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="hs-profile-")
    os.chmod(work, 0o755)
    tag = f"hs-profile-{os.getpid()}"
    servers, client = [], Client(1, CpuQuota(f"{tag}-client", 0))
    report = ["| Workload | Server | req/s (untraced) | user µs/req | system µs/req | ksoftirqd µs/req | context "
              "switches per 1k req (voluntary / involuntary) | syscalls/req | syscalls per request (strace -c) |", "|---|---|--:|--:|--:|--:|--:|--:|---|"]
    hot = []
    try:
        site = content.generate(os.path.join(work, "site"))
        servers = lineup(args.ours, peers, floor, site.root, 0, quota, work, [], tag)
        bench_io = next((s.body_io for s in servers if isinstance(s, Floor)), "")
        servers = floor_variants(servers, quota, work, tag)
        client.group.create()
        for s in servers:
            s.start()
            s.validate(site.samples)
        for wl in workloads:
            for s in servers:
                if not runs_here(s, wl, bench_io):
                    continue
                step(f"CPU split: {s.name} under {wl.key}")
                user_us, sys_us, soft_us, switches, rps = cpu_per_request(s, wl, client, seconds)
                step(f"strace -c: {s.name} under {wl.key}")
                per, n = syscalls_per_request(s, wl, client, seconds, out_dir)
                top = sorted(per.items(), key=lambda kv: -kv[1])
                total = sum(per.values())
                report.append(f"| {wl.key} | {s.name} | {rps:,.0f} | {user_us:.1f} | {sys_us:.1f} | {soft_us:.1f} | "
                              f"{switches[0]:.1f} / {switches[1]:.1f} | "
                              f"**{total:.2f}** | "
                              + ", ".join(f"{k} {v:.2f}" for k, v in top if v >= 0.005) + " |")
                if use_perf:
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
