"""The load client of the HTTP/2 rows: nghttp2's h2load (Debian's nghttp2-client), pinned to the client CPU like
wrk, its output parsed into wrk's result shape plus what h2load counts per response (status classes, DATA bytes,
the negotiated protocol), and checked before timing: every response 2xx, over h2, with exactly the DATA bytes the
same server sends over HTTP/1.1 for the same requests (check_argv: each URI of the list once).

Rows: keep-alive (`-D seconds`: each of -c connections carries -m streams at a time for the whole run) and
"a new TLS connection per N requests": h2load has no such knob, so run_new_conns runs it again and again with
-n = c × N (each client makes one connection, N requests on it, and ends), until the row's seconds are up; every
process starts without a session ticket, so each connection is a full handshake.
"""
import random
import re
import time
from dataclasses import dataclass, field

from .placement import Client
from .wrk import WrkResult, run_pinned
from .wrk import _ms as wrk_ms



@dataclass
class H2loadResult(WrkResult):
    started: int = 0
    succeeded: int = 0
    failed: int = 0
    errored: int = 0
    timeout: int = 0
    status: dict[str, int] = field(default_factory=dict)   # "2xx" → responses
    data_bytes: int = 0          # DATA frame payload bytes (bodies)
    header_bytes: int = 0        # HEADERS bytes after HPACK
    protocol: str = ""           # "Application protocol:" (h2, or h2c on a plain port)
    runs: int = 1                # h2load processes summed into this result (run_new_conns)


def _duration_s(text: str) -> float:
    """h2load's durations ("1.03ms", "3.00s", "66us") in seconds, read as wrk's are."""
    return wrk_ms(text) / 1000.0


def parse(out: str, client_cpu_s: float = 0.0) -> H2loadResult:
    """h2load's summary: "finished in 3.00s, 81234.56 req/s, ...", "requests: N total, N started, N done,
    N succeeded, N failed, N errored, N timeout", "status codes: N 2xx, N 3xx, N 4xx, N 5xx",
    "traffic: ... total, ... (HEADER_BYTES) headers ..., ... (DATA_BYTES) data", the "time for request:" row."""
    fin = re.search(r"finished in ([\d.]+(?:us|ms|s)), ([\d.]+) req/s", out)
    req = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                    r"(\d+) errored, (\d+) timeout", out)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    traffic = re.search(r"traffic: \S+ \((\d+)\) total, \S+ \((\d+)\) headers.*?, \S+ \((\d+)\) data", out)
    if not (fin and req and codes and traffic):
        raise ValueError(f"h2load output lacks its summary:\n{out[-3000:]}")
    proto = re.search(r"^Application protocol: (\S+)", out, re.M)
    mean = re.search(r"^time for request:\s+\S+\s+\S+\s+(\S+)", out, re.M)
    _, started, done, ok, failed, errored, timeout = (int(x) for x in req.groups())
    status = dict(zip(("2xx", "3xx", "4xx", "5xx"), (int(x) for x in codes.groups())))
    seconds = _duration_s(fin.group(1))
    return H2loadResult(
        requests=done, seconds=seconds, rps=float(fin.group(2)),
        # h2load prints min/max/mean/sd, no percentiles: p50 carries the mean, p99 is unknown
        p50_ms=_duration_s(mean.group(1)) * 1000 if mean else float("nan"), p99_ms=float("nan"),
        bytes_read=float(traffic.group(1)), errors=failed + errored + timeout,
        non2xx=sum(v for k, v in status.items() if k != "2xx"), client_cpu_s=client_cpu_s, raw=out,
        started=started, succeeded=ok, failed=failed, errored=errored, timeout=timeout, status=status,
        data_bytes=int(traffic.group(3)), header_bytes=int(traffic.group(2)), protocol=proto.group(1) if proto else "")


def merge(results: list[H2loadResult], wall_s: float, client_cpu_s: float) -> H2loadResult:
    """Several h2load processes (run_new_conns) as one run of wall_s seconds."""
    status: dict[str, int] = {}
    for r in results:
        for k, v in r.status.items():
            status[k] = status.get(k, 0) + v
    done = sum(r.requests for r in results)
    protos = sorted({r.protocol for r in results})
    return H2loadResult(
        requests=done, seconds=wall_s, rps=done / wall_s if wall_s > 0 else 0.0, p50_ms=float("nan"),
        p99_ms=float("nan"), bytes_read=sum(r.bytes_read for r in results),
        errors=sum(r.errors for r in results), non2xx=sum(r.non2xx for r in results), client_cpu_s=client_cpu_s,
        raw=results[-1].raw if results else "", started=sum(r.started for r in results),
        succeeded=sum(r.succeeded for r in results), failed=sum(r.failed for r in results),
        errored=sum(r.errored for r in results), timeout=sum(r.timeout for r in results), status=status,
        data_bytes=sum(r.data_bytes for r in results), header_bytes=sum(r.header_bytes for r in results),
        protocol=",".join(protos), runs=len(results))


def problems(res: H2loadResult, want_requests: int | None = None, want_data: int | None = None,
             want_protocol: str = "h2") -> list[str]:
    """What makes a run not measure what its row says; empty when it does. want_requests and want_data (the check
    pass) must match exactly; any run must be all-2xx, error-free, over want_protocol."""
    out = []
    if res.protocol != want_protocol:
        out.append(f"negotiated {res.protocol or 'no protocol'}, want {want_protocol}")
    if res.requests == 0:
        out.append("no request completed")
    if res.errors:
        out.append(f"{res.failed} failed, {res.errored} errored, {res.timeout} timed out")
    # in timing mode (-D) h2load's "done" counts the measured window only and its status codes every response,
    # warm-up and stragglers included: so any non-2xx fails, and the exact count is held in the check pass only
    other = {k: v for k, v in res.status.items() if k != "2xx" and v}
    if other:
        out.append(f"status codes {res.status}: not all 2xx")
    if want_requests is not None and (res.requests, res.status.get("2xx", 0)) != (want_requests, want_requests):
        out.append(f"{res.requests} responses, {res.status.get('2xx', 0)} of them 2xx; want {want_requests}")
    if want_data is not None and res.data_bytes != want_data:
        out.append(f"{res.data_bytes} DATA bytes, want {want_data} (what the server sends over HTTP/1.1)")
    return out


def argv_for(url: str, connections: int, streams: int, seconds: float | None = None, requests: int | None = None,
             uri_file: str | None = None, headers: list[str] | None = None, warmup_s: float = 0) -> list[str]:
    """One h2load thread (the client has one CPU). seconds: timing mode (-D); requests: count mode (-n).
    uri_file: h2load -i, each client walking the list in order (the URL's path is then ignored)."""
    argv = ["h2load", "-t", "1", "-c", str(connections), "-m", str(streams)]
    if seconds is not None:
        argv += ["-D", str(max(1, int(seconds)))]
        if warmup_s:
            argv += ["--warm-up-time", str(max(1, int(warmup_s)))]
    else:
        argv += ["-n", str(requests)]
    for h in headers or []:
        argv += ["-H", h]
    if uri_file:
        argv += ["-i", uri_file, "-B", url.rstrip("/")]
    else:
        argv.append(url)
    return argv


def write_uris(paths: list[str], count: int, dest: str, seed: int = 26) -> str:
    """count paths drawn at random from paths (a fixed seed: every server gets the same sequence), one a line."""
    rng = random.Random(seed)
    with open(dest, "w") as f:
        f.writelines(p + "\n" for p in (rng.choice(paths) for _ in range(count)))
    return dest


def read_uris(path: str) -> list[str]:
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def run(argv: list[str], client: Client, env: dict | None = None) -> H2loadResult:
    return parse(*run_pinned(argv, client, env))


def run_new_conns(url: str, connections: int, streams: int, per_conn: int, seconds: float, client: Client,
                  uri_file: str | None = None, headers: list[str] | None = None,
                  env: dict | None = None) -> H2loadResult:
    """h2load again and again, each process making `connections` connections of per_conn requests, until seconds
    have passed; the sum as one run."""
    argv = argv_for(url, connections, min(streams, per_conn), requests=connections * per_conn,
                    uri_file=uri_file, headers=headers)
    results, cpu = [], 0.0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        out, c = run_pinned(argv, client, env)
        results.append(parse(out))
        cpu += c
    return merge(results, time.monotonic() - t0, cpu)

