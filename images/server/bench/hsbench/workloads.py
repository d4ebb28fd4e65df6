"""The workloads of the classic static-file benchmarks, plain HTTP and HTTPS, and the target ratio (ours ÷ best
peer req/s) each has."""
import os
from dataclasses import dataclass, field

from .content import SET_COUNT, SMALL_PATH

LUA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lua")


@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    path: str
    connections: int
    target: float                 # required ratio of our req/s to nginx's, from issue 2
    script: str | None = None
    script_args: list[str] = field(default_factory=list)
    # wrk's latency statistics assume one request in flight per connection (its coordinated-omission correction
    # divides by completed responses): with pipelining they are wrong, so no p99 is reported
    latency_valid: bool = True
    headers: list[str] = field(default_factory=list)  # extra request headers (wrk -H)
    # whether the floor (floor.c: canned answers, the 8 KiB set or the 100-byte file) runs in this row
    floor: bool = True
    tls: bool = False             # HTTPS rows: the servers' TLS listeners (tls.py); the floor has no TLS
    client: str = "wrk"           # "tlsload": the Go client of the new-connection HTTPS rows (tlsload.py); "h2load";
                                  # "h3load": HTTP/3 (h3load.py), on the servers that serve it (Server.h3)
    resume: bool = False          # tlsload only: resume sessions (True) or make every handshake a full one
    # h2load and h3load (HTTP/2 and HTTP/3 rows): concurrent streams per connection (-m), the URI list (-i; "set" is the
    # 1,000 × 8 KiB files drawn at random, any other value a file path), requests per connection (0: keep-alive)
    streams: int = 1
    uris: str = ""
    per_conn: int = 0
    # h2load only: HTTP/2 with prior knowledge on the plain port (h2c) instead of over TLS; runs only on the servers
    # that accept it there (Server.h2c; enable_h2c turns it on where it is a setting)
    h2c: bool = False


WORKLOADS = [
    Workload("100b-c100", "100 B keep-alive, c=100", SMALL_PATH, 100, 1.3),
    Workload("100b-c1000", "100 B keep-alive, c=1000", SMALL_PATH, 1000, 1.3),
    Workload("8k-set", "1,000 × 8 KiB at random, c=100", "/", 100, 1.3,
             os.path.join(LUA, "random8k.lua"), [str(SET_COUNT)]),
    Workload("100b-pipe16", "100 B pipelined ×16, c=100", SMALL_PATH, 100, 8.0,
             os.path.join(LUA, "pipeline.lua"), ["16", SMALL_PATH], latency_valid=False),
    # one request per connection: the accept path (connect, request, response, close), 100 connections at a time
    Workload("100b-close", "100 B, Connection: close, c=100", SMALL_PATH, 100, 1.0,
             headers=["Connection: close"]),
    # HTTPS (TLS 1.3, TLS_AES_128_GCM_SHA256, ECDSA P-256; tls.py): the goal is to be ahead of the best peer
    Workload("tls-100b-c100", "HTTPS 100 B keep-alive, c=100", SMALL_PATH, 100, 1.0, floor=False, tls=True),
    Workload("tls-8k-set", "HTTPS 8 KiB at random, c=100", "/", 100, 1.0,
             os.path.join(LUA, "random8k.lua"), [str(SET_COUNT)], floor=False, tls=True),
    # one new TLS connection per request, full handshakes or resumed ones (wrk resumes on reconnect and cannot tell:
    # tlsload counts each kind); short titles: the chart's label column is 250 px
    Workload("tls-new-full", "HTTPS new conn., full, c=100", SMALL_PATH, 100, 1.0,
             floor=False, tls=True, client="tlsload"),
    Workload("tls-new-resumed", "HTTPS new conn., resumed, c=100", SMALL_PATH, 100, 1.0,
             floor=False, tls=True, client="tlsload", resume=True),
    # HTTP/2 over TLS (issue 26), h2load on the client CPU; the goal is 1.3× the best peer per server CPU-second
    Workload("h2-100b-m10", "h2 100 B, c=100 m=10", SMALL_PATH, 100, 1.3, floor=False, tls=True, client="h2load",
             streams=10),
    Workload("h2-100b-m100", "h2 100 B, c=100 m=100", SMALL_PATH, 100, 1.3, floor=False, tls=True,
             client="h2load", streams=100),
    Workload("h2-8k-set", "h2 8 KiB at random, c=100 m=10", "/", 100, 1.3, floor=False, tls=True, client="h2load",
             streams=10, uris="set"),
    # a new TLS connection (full handshake) every 10 requests: what many short browser visits look like
    Workload("h2-new10", "h2 100 B, new conn./10 req, c=100", SMALL_PATH, 100, 1.3, floor=False, tls=True,
             client="h2load", streams=10, per_conn=10),
    # h2c with prior knowledge on the plain port (a gateway's way to a backend): ours with --h2c=true, lighttpd by
    # default, h2o with http1-upgrade-to-http2 ON, Caddy with `protocols h1 h2 h2c`; nginx cannot (http2 on a
    # listener makes it h2-only)
    Workload("h2c-100b-m10", "h2c 100 B, c=100 m=10", SMALL_PATH, 100, 1.3, floor=False, client="h2load",
             streams=10, h2c=True),
    Workload("h2c-8k-set", "h2c 8 KiB at random, c=100 m=10", "/", 100, 1.3, floor=False, client="h2load",
             streams=10, uris="set", h2c=True),
    # HTTP/3 (issue 42), h3load (quic-go) on the client CPU; only on the servers that serve it (ours with --http3,
    # Caddy by default). The goals: 1.3× the best peer per server CPU-second, and 0.8× our own h2 at the same shape
    # (h2-100b-c10 and h2-8k-c10 below). 10 connections, not h2's 100: quic-go's client spends per connection what
    # h2load does not, and at c=100 it could not load ours at 40% of a core (2026-12-03: 21.5k req/s, its CPU full)
    Workload("h3-100b-m10", "h3 100 B, c=10 m=10", SMALL_PATH, 10, 1.3, floor=False, tls=True, client="h3load",
             streams=10),
    Workload("h3-8k-set", "h3 8 KiB at random, c=10 m=10", "/", 10, 1.3, floor=False, tls=True, client="h3load",
             streams=10, uris="set"),
    Workload("h3-new10", "h3 100 B, new conn./10 req, c=10", SMALL_PATH, 10, 1.3, floor=False, tls=True,
             client="h3load", streams=10, per_conn=10),
    # h2 at the h3 rows' shape, for the h3 ÷ h2 goal
    Workload("h2-100b-c10", "h2 100 B, c=10 m=10", SMALL_PATH, 10, 1.3, floor=False, tls=True, client="h2load",
             streams=10),
    Workload("h2-8k-c10", "h2 8 KiB at random, c=10 m=10", "/", 10, 1.3, floor=False, tls=True, client="h2load",
             streams=10, uris="set"),
]
H2_KEYS = tuple(w.key for w in WORKLOADS if w.client == "h2load")
H3_KEYS = tuple(w.key for w in WORKLOADS if w.client == "h3load")


def select(keys: str) -> list[Workload]:
    """BENCH_WORKLOADS=100b-c100,8k-set runs a subset; empty means all."""
    if not keys.strip():
        return WORKLOADS
    wanted = [k.strip() for k in keys.split(",") if k.strip()]
    known = {w.key: w for w in WORKLOADS}
    unknown = [k for k in wanted if k not in known]
    if unknown:
        raise SystemExit(f"unknown workload(s) {unknown}; known: {list(known)}")
    return [known[k] for k in wanted]
