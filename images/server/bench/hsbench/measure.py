"""One measured run: wrk against a server while its CPU time, peak RSS and cgroup throttling are recorded,
and the 10k-idle-connections memory probe."""
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass

from . import load, procstat
from .placement import Client
from .servers import Server
from .workloads import Workload


@dataclass
class Run:
    rep: int
    workload: str
    server: str
    rps: float
    requests: int
    seconds: float
    cpu_s: float            # server user+system CPU seconds during the run (all its processes)
    req_per_cpu_s: float
    p50_ms: float
    p99_ms: float
    rss_bytes: int          # peak summed VmRSS during the run
    errors: int
    non2xx: int
    client_cpu_s: float
    throttled_periods: int  # CFS periods in which the quota stopped the server
    cap_use: float          # cpu_s / (seconds × quota): ≈1 means the server was saturated at its cap
    rss_warm_bytes: int = 0     # summed VmRSS right after the warm-up, before the measured run
    rss_end_bytes: int = 0      # summed VmRSS right after the measured run
    bytes_read: float = 0.0     # response bytes wrk read (headers + bodies): shows what encoding was sent
    # ours only (-1 elsewhere): files still waiting for the background encoder when the measured run began and
    # ended, and the encoder's CPU time within the run: > 0 pending means the row measured a server still encoding
    pending_start: int = -1
    pending_end: int = -1
    encoder_cpu_s: float = 0.0

    def row(self) -> dict:
        return asdict(self)


class _RssSampler(threading.Thread):
    def __init__(self, server: Server, every: float = 0.25):
        super().__init__(daemon=True)
        self.server, self.every, self.peak = server, every, 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, procstat.rss_bytes(self.server.pids()))
            self._done.wait(self.every)

    def stop(self) -> int:
        self._done.set()
        self.join()
        self.peak = max(self.peak, procstat.rss_bytes(self.server.pids()))
        return self.peak


def run_workload(server: Server, wl: Workload, rep: int, seconds: float, warmup: float,
                 client: Client, quota_percent: int, clients: load.Clients | None = None) -> Run:
    clients = clients or load.Clients()
    load.warm(server, wl, warmup, client, clients)
    pids = server.pids()
    rss_warm = procstat.rss_bytes(pids)
    throttled0 = server.quota.throttled().get("nr_throttled", 0)
    enc0 = server.encoder()
    cpu0 = procstat.cpu_seconds(pids)
    sampler = _RssSampler(server)
    sampler.start()
    try:
        res = load.run(server, wl, seconds, client, clients)
    finally:
        peak = sampler.stop()
    cpu = procstat.cpu_seconds(server.pids()) - cpu0
    rss_end = procstat.rss_bytes(server.pids())
    throttled = server.quota.throttled().get("nr_throttled", 0) - throttled0
    enc1 = server.encoder()
    if not server.alive():
        raise RuntimeError(f"{server.name} died during {wl.key}:\n{server.log_tail()}")
    cap = (quota_percent / 100.0) if quota_percent else 1.0
    return Run(rep=rep, workload=wl.key, server=server.name, rps=res.rps, requests=res.requests,
               seconds=res.seconds, cpu_s=cpu, req_per_cpu_s=res.requests / cpu if cpu > 0 else float("nan"),
               p50_ms=res.p50_ms if wl.latency_valid else float("nan"),
               p99_ms=res.p99_ms if wl.latency_valid else float("nan"),
               rss_bytes=peak, errors=res.errors, non2xx=res.non2xx,
               client_cpu_s=res.client_cpu_s, throttled_periods=throttled,
               cap_use=cpu / (res.seconds * cap) if res.seconds else 0.0,
               rss_warm_bytes=rss_warm, rss_end_bytes=rss_end, bytes_read=res.bytes_read,
               pending_start=enc0[0] if enc0 else -1, pending_end=enc1[0] if enc1 else -1,
               encoder_cpu_s=enc1[1] - enc0[1] if enc0 and enc1 else 0.0)


@dataclass
class IdleResult:
    server: str
    conns_wanted: int
    conns_open: int
    conns_failed: int
    conns_alive: int        # still open when RSS was read
    rss_before: int
    rss_idle: int

    def row(self) -> dict:
        return asdict(self)


def idle_connections(server: Server, n: int, path: str, client: Client, settle: float = 2.0,
                     h2: str = "") -> IdleResult:
    """Open n keep-alive connections (one request each), let them sit idle, read the server's RSS. h2 "tls": HTTP/2
    connections on the server's TLS port (idleh2.py: preface, SETTINGS, one request each), "h2c": the same with
    prior knowledge on its plain port, "": HTTP/1.1 ones on its plain port (idle.py)."""
    rss_before = procstat.rss_bytes(server.pids())
    pkg_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    argv = {"": ["hsbench.idle", str(server.port)], "tls": ["hsbench.idleh2", str(server.tls_port)],
            "h2c": ["hsbench.idleh2", str(server.port)]}[h2] + [str(n), path] + (["--h2c"] if h2 == "h2c" else [])
    child = subprocess.Popen(
        [*client.taskset(), sys.executable, "-m", *argv],
        cwd=pkg_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=client.preexec)
    try:
        line = child.stdout.readline().split()
        if not line or line[0] != "open":
            raise RuntimeError(f"idle client failed against {server.name} (exit {child.poll()})")
        opened, failed = int(line[1]), int(line[2])
        time.sleep(settle)
        rss = procstat.rss_bytes(server.pids())
        child.stdin.write("check\n")
        child.stdin.flush()
        alive = int(child.stdout.readline().split()[1])
    finally:
        if child.stdin and not child.stdin.closed:
            child.stdin.close()
        child.wait(timeout=60)
    time.sleep(1.0)  # let the server reap the closed connections before the next step
    return IdleResult(server=server.name, conns_wanted=n, conns_open=opened, conns_failed=failed,
                      conns_alive=alive, rss_before=rss_before, rss_idle=rss)
