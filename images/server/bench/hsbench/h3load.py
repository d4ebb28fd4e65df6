"""The load client of the HTTP/3 rows: h3load (images/server/h3interop/quicgo/h3load, quic-go's HTTP/3 client in
h2load's shape; no h2load of Debian 12 or 13 speaks HTTP/3), built with Go into the run's temp dir, run pinned to
the client CPU with GOMAXPROCS=1 like h2load's one thread, its JSON summary read into wrk's result shape, and
checked: every response 2xx, no error, and in the check pass before timing exactly the body bytes the same server
sends over HTTP/1.1 for the same requests. h3load reports its own CPU time as well: the harness's rusage of the
pinned process is what the tables use, as for every client."""
import json
import os
import subprocess
from dataclasses import dataclass

from .placement import Client
from .tlsload import REPO, go_binary
from .wrk import WrkResult, run_pinned

MODULE = os.path.join(REPO, "images", "server", "h3interop", "quicgo")  # h3load's module (quic-go pinned there)


def build(workdir: str) -> str:
    """h3load built into workdir; or H3LOAD_BIN, another client with h3load's flags and summary (make
    h3load-quinn-build: h3interop/quinnload, quinn's client, which honours ACK_FREQUENCY where quic-go does not)."""
    given = os.environ.get("H3LOAD_BIN", "")
    if given:
        if not os.access(given, os.X_OK):
            raise RuntimeError(f"H3LOAD_BIN={given} is not an executable")
        return given
    go = go_binary()
    if go is None:
        raise RuntimeError("go not found: it builds the HTTP/3 rows' load client (h3interop/quicgo/h3load)")
    os.makedirs(workdir, exist_ok=True)
    binary = os.path.join(workdir, "h3load")
    res = subprocess.run([go, "build", "-o", binary, "./h3load"], cwd=MODULE, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"building the HTTP/3 load client failed:\n{res.stderr}")
    return binary


@dataclass
class H3loadResult(WrkResult):
    status: dict[str, int] | None = None   # "2xx" → responses
    body_bytes: int = 0
    connections: int = 0
    first_error: str = ""


def parse(out: str, client_cpu_s: float = 0.0) -> H3loadResult:
    """h3load's one JSON line (the last line of its output)."""
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if not lines:
        raise ValueError(f"h3load printed no summary:\n{out[-3000:]}")
    d = json.loads(lines[-1])
    status = {f"{k}xx": int(d.get(f"status{k}xx", 0)) for k in (2, 3, 4, 5)}
    seconds = float(d["seconds"])
    done = int(d["requests"])
    return H3loadResult(
        requests=done, seconds=seconds, rps=done / seconds if seconds > 0 else 0.0,
        p50_ms=float("nan"), p99_ms=float("nan"),  # h3load keeps no latency histogram
        bytes_read=float(d.get("bodyBytes", 0)), errors=int(d.get("errors", 0)),
        non2xx=sum(v for k, v in status.items() if k != "2xx"), client_cpu_s=client_cpu_s, raw=out,
        status=status, body_bytes=int(d.get("bodyBytes", 0)), connections=int(d.get("connections", 0)),
        first_error=d.get("firstError", ""))


def problems(res: H3loadResult, want_requests: int | None = None, want_data: int | None = None) -> list[str]:
    """What makes a run not measure what its row says; empty when it does."""
    out = []
    if res.requests == 0:
        out.append("no request completed")
    if res.errors:
        out.append(f"{res.errors} requests failed (first: {res.first_error})")
    other = {k: v for k, v in (res.status or {}).items() if k != "2xx" and v}
    if other:
        out.append(f"status codes {res.status}: not all 2xx")
    if want_requests is not None and res.requests != want_requests:
        out.append(f"{res.requests} responses, want {want_requests}")
    if want_data is not None and res.body_bytes != want_data:
        out.append(f"{res.body_bytes} body bytes, want {want_data} (what the server sends over HTTP/1.1)")
    return out


def argv_for(binary: str, ca: str, url: str, connections: int, streams: int, seconds: float | None = None,
             requests: int | None = None, uri_file: str | None = None, per_conn: int = 0) -> list[str]:
    """seconds: -D; requests: -n. uri_file: -i, paths joined to url (each connection walks the list from its own
    offset). per_conn: a new connection (a full handshake) after that many requests."""
    argv = [binary, "-ca-pem", ca, "-c", str(connections), "-m", str(streams)]
    argv += ["-D", f"{max(1, int(seconds))}s"] if seconds is not None else ["-n", str(requests)]
    if per_conn:
        argv += ["-new-conn-every", str(per_conn)]
    if uri_file:
        argv += ["-i", uri_file]
    argv.append(url)
    return argv


def run(argv: list[str], client: Client) -> H3loadResult:
    # one OS thread for Go code, as h2load runs one thread: the client has one CPU
    return parse(*run_pinned(argv, client, {**os.environ, "GOMAXPROCS": "1"}))
