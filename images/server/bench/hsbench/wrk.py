"""Runs wrk pinned to the client CPU and parses what it prints."""
import os
import re
import subprocess
import time
from dataclasses import dataclass

from .placement import Client

_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}
_SIZE = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3, "TB": 1024 ** 4}


@dataclass
class WrkResult:
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p99_ms: float
    bytes_read: float
    errors: int           # socket errors of any kind (connect/read/write/timeout)
    non2xx: int
    client_cpu_s: float   # wrk's own user+system CPU: near `seconds` means the client was the limit
    raw: str


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        raise ValueError(f"unparsable latency {text!r}")
    return float(m.group(1)) * _UNITS_MS[m.group(2)]


def parse(out: str, client_cpu_s: float = 0.0) -> WrkResult:
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m), ([\d.]+)(B|KB|MB|GB|TB) read", out)
    if not m:
        raise ValueError(f"wrk output has no request count:\n{out}")
    requests = int(m.group(1))
    seconds = _ms(m.group(2) + m.group(3)) / 1000.0
    bytes_read = float(m.group(4)) * _SIZE[m.group(5)]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)", out, re.M))
    errors = 0
    e = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if e:
        errors = sum(int(x) for x in e.groups())
    n = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    p50 = _ms(lat["50"]) if "50" in lat else float("nan")
    p99 = _ms(lat["99"]) if "99" in lat else float("nan")
    if p99 == 0.0 and p50 > 0.0:
        # wrk 4.1 prints 0.00us for upper percentiles when it holds few latency samples (with pipelining it records
        # one per batch): that is "unknown", not zero
        p99 = float("nan")
    return WrkResult(
        requests=requests, seconds=seconds, rps=rps,
        p50_ms=p50, p99_ms=p99,
        bytes_read=bytes_read, errors=errors, non2xx=int(n.group(1)) if n else 0,
        client_cpu_s=client_cpu_s, raw=out)


def argv_for(url: str, connections: int, seconds: float, script: str | None = None,
             script_args: list[str] | None = None, threads: int = 1, timeout_s: int = 5,
             headers: list[str] | None = None) -> list[str]:
    argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, int(seconds))}s", f"--timeout={timeout_s}s",
            "--latency"]
    for h in headers or []:
        argv += ["-H", h]
    if script:
        argv += ["-s", script]
    argv.append(url)
    if script_args:
        argv += ["--", *script_args]
    return argv


def run_pinned(argv: list[str], client: Client, env: dict | None = None) -> tuple[str, float]:
    """A load client pinned to the client CPU: its output and its own user+system CPU seconds."""
    proc = subprocess.Popen([*client.taskset(), *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=client.preexec, env=env)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{os.path.basename(argv[0])} failed ({proc.returncode}):\n{out}")
    return out, usage.ru_utime + usage.ru_stime


def run(url: str, connections: int, seconds: float, client: Client, script: str | None = None,
        script_args: list[str] | None = None, threads: int = 1, timeout_s: int = 5,
        headers: list[str] | None = None, env: dict | None = None) -> WrkResult:
    argv = argv_for(url, connections, seconds, script, script_args, threads, timeout_s, headers)
    return parse(*run_pinned(argv, client, env))


def warm(url: str, connections: int, seconds: float, client: Client, script: str | None = None,
         script_args: list[str] | None = None, headers: list[str] | None = None, env: dict | None = None) -> None:
    if seconds > 0:
        run(url, connections, seconds, client, script, script_args, headers=headers, env=env)
        time.sleep(0.2)
