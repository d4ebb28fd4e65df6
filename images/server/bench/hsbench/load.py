"""Which load client drives a workload against a server: wrk over http:// (the plain rows) or https:// (the
HTTPS keep-alive rows, offering TLS 1.3 with the benchmark's one suite), or tlsload (the HTTPS new-connection
rows). tlsload's runs are checked, the warm-up before any timing: the handshakes must be of the row's kind with the
right suite and, for our server, its own hyperstatic_tls_handshakes_total must agree with what the client counted."""
from dataclasses import dataclass

from . import h2load, h3load, tls, tlsload, wrk
from .placement import Client
from .servers import Hyperstatic, Server, http_get
from .workloads import Workload

HANDSHAKES = 'hyperstatic_tls_handshakes_total{result="success",resumed="%s"}'
WANT_SUITE = "TLS 1.3 " + tls.CIPHER  # as Go names it
H2_PROTOCOL = "h2"  # what h2load must report having negotiated by ALPN
CHECK_URIS = 1000   # the h2 check pass requests at most this many URIs of a row's list, each once


@dataclass
class Clients:
    """What the HTTPS rows need; None for a run with plain rows only."""
    tls_setup: tls.Setup | None = None
    tlsload_bin: str | None = None
    set_uris: str | None = None   # the h2 rows' URI list of the 8 KiB set drawn at random (workload uris="set")
    h3load_bin: str | None = None  # the HTTP/3 rows' load client (h3load.py)


def h2_protocol(wl: Workload) -> str:
    """What h2load must report having negotiated: h2 by ALPN over TLS, h2c with prior knowledge on a plain port."""
    return "h2c" if wl.h2c else H2_PROTOCOL


def _env(wl: Workload, clients: Clients) -> dict | None:
    return tls.client_env(clients.tls_setup) if wl.tls else None


def url(server: Server, wl: Workload) -> str:
    if wl.tls:
        return f"https://127.0.0.1:{server.tls_port}{wl.path}"
    return f"http://127.0.0.1:{server.port}{wl.path}"


def _handshakes(server: Server) -> tuple[float, float] | None:
    if not isinstance(server, Hyperstatic):
        return None
    m = server.metrics()
    return m.get(HANDSHAKES % "false", 0.0), m.get(HANDSHAKES % "true", 0.0)


def _tlsload(server: Server, wl: Workload, seconds: float, client: Client, clients: Clients,
             cross_check: bool) -> wrk.WrkResult:
    """cross_check (the warm-up only: reading /metrics costs our server CPU) compares our server's counters."""
    before = _handshakes(server) if cross_check else None
    res = tlsload.run(clients.tlsload_bin, server.tls_port, wl.path, wl.connections, seconds, client, wl.resume)
    bad = tlsload.problems(res, wl.resume, WANT_SUITE)
    after = _handshakes(server) if cross_check else None
    if before is not None and after is not None:
        bad += counter_disagreement(before, after, res)
    if bad:
        raise RuntimeError(f"{server.name} {wl.key}: " + "; ".join(bad))
    return res


def counter_disagreement(before: tuple[float, float], after: tuple[float, float],
                         res: tlsload.TlsloadResult) -> list[str]:
    """Our server's (full, resumed) handshake counters must have grown by exactly what the client made, its untimed
    first connection per goroutine included. Only meaningful without errors (a failed connection may or may not
    have finished its handshake)."""
    if res.errors:
        return []
    seen = (after[0] - before[0], after[1] - before[1])
    sent = (res.full + res.primer_full, res.resumed + res.primer_resumed)
    return [] if seen == sent else [f"the server counted (full, resumed) handshakes {seen}, the client {sent}"]


def _uri_file(wl: Workload, clients: Clients) -> str | None:
    if wl.uris == "set":
        return clients.set_uris
    return wl.uris or None


def h2_expected_data(server: Server, paths: list[str], headers: list[str]) -> int:
    """The body bytes the server sends over HTTP/1.1 (plain port) for these requests: what h2 must send too."""
    hdrs = dict(h.split(": ", 1) for h in headers)
    total = 0
    for p in paths:
        status, body = http_get(server.port, p, headers=hdrs)
        if status != 200:
            raise RuntimeError(f"{server.name}: GET {p} over HTTP/1.1 -> {status}; the h2 check needs 200")
        total += len(body)
    return total


def h2_check(server: Server, wl: Workload, client: Client, clients: Clients) -> None:
    """Before timing an h2 row: every URI of the row once (up to CHECK_URIS of them), 10 streams on one
    connection, must come back 2xx over h2 with exactly the body bytes the server sends over HTTP/1.1."""
    uri_file = _uri_file(wl, clients)
    paths = h2load.read_uris(uri_file)[:CHECK_URIS] if uri_file else [wl.path] * 100
    want = h2_expected_data(server, paths, wl.headers)
    argv = h2load.argv_for(url(server, wl), 1, 10, requests=len(paths), uri_file=uri_file, headers=wl.headers)
    res = h2load.run(argv, client, _env(wl, clients))
    bad = h2load.problems(res, want_requests=len(paths), want_data=want, want_protocol=h2_protocol(wl))
    if bad:
        raise RuntimeError(f"{server.name} {wl.key} check before timing: " + "; ".join(bad))


def _h2load(server: Server, wl: Workload, seconds: float, client: Client, clients: Clients) -> h2load.H2loadResult:
    env = _env(wl, clients)
    uri_file = _uri_file(wl, clients)
    if wl.per_conn:
        res = h2load.run_new_conns(url(server, wl), wl.connections, wl.streams, wl.per_conn, seconds, client,
                                   uri_file, wl.headers, env)
    else:
        argv = h2load.argv_for(url(server, wl), wl.connections, wl.streams, seconds=seconds, uri_file=uri_file,
                               headers=wl.headers)
        res = h2load.run(argv, client, env)
    bad = h2load.problems(res, want_protocol=h2_protocol(wl))
    if bad:
        raise RuntimeError(f"{server.name} {wl.key}: " + "; ".join(bad))
    return res


def h3_check(server: Server, wl: Workload, client: Client, clients: Clients) -> None:
    """Before timing an h3 row: every URI of the row once (up to CHECK_URIS of them), on one connection, must come
    back 2xx over HTTP/3 with exactly the body bytes the server sends over HTTP/1.1."""
    uri_file = _uri_file(wl, clients)
    paths = h2load.read_uris(uri_file)[:CHECK_URIS] if uri_file else [wl.path] * 100
    want = h2_expected_data(server, paths, wl.headers)
    check_file = None
    if uri_file:
        check_file = uri_file + ".check"
        with open(check_file, "w") as f:
            f.writelines(p + "\n" for p in paths)
    argv = h3load.argv_for(clients.h3load_bin, clients.tls_setup.cert, url(server, wl), 1, 1, requests=len(paths),
                           uri_file=check_file)
    res = h3load.run(argv, client)
    bad = h3load.problems(res, want_requests=len(paths), want_data=want)
    if bad:
        raise RuntimeError(f"{server.name} {wl.key} check before timing: " + "; ".join(bad))


def _h3load(server: Server, wl: Workload, seconds: float, client: Client, clients: Clients) -> h3load.H3loadResult:
    argv = h3load.argv_for(clients.h3load_bin, clients.tls_setup.cert, url(server, wl), wl.connections, wl.streams,
                           seconds=seconds, uri_file=_uri_file(wl, clients), per_conn=wl.per_conn)
    res = h3load.run(argv, client)
    bad = h3load.problems(res)
    if bad:
        raise RuntimeError(f"{server.name} {wl.key}: " + "; ".join(bad))
    return res


def warm(server: Server, wl: Workload, seconds: float, client: Client, clients: Clients) -> None:
    """The warm-up; for tlsload rows also the check, before timing, that the handshakes are the row's kind; for
    h2load rows the check of every response first."""
    if wl.client == "h2load":
        h2_check(server, wl, client, clients)
        if seconds > 0:
            _h2load(server, wl, seconds, client, clients)
    elif wl.client == "h3load":
        h3_check(server, wl, client, clients)
        if seconds > 0:
            _h3load(server, wl, seconds, client, clients)
    elif wl.client == "tlsload":
        _tlsload(server, wl, max(1.0, seconds), client, clients, cross_check=True)
    else:
        wrk.warm(url(server, wl), wl.connections, seconds, client, wl.script, wl.script_args, wl.headers,
                 env=tls.client_env(clients.tls_setup) if wl.tls else None)


def run(server: Server, wl: Workload, seconds: float, client: Client, clients: Clients) -> wrk.WrkResult:
    if wl.client == "h2load":
        return _h2load(server, wl, seconds, client, clients)
    if wl.client == "h3load":
        return _h3load(server, wl, seconds, client, clients)
    if wl.client == "tlsload":
        return _tlsload(server, wl, seconds, client, clients, cross_check=False)
    return wrk.run(url(server, wl), wl.connections, seconds, client, wl.script, wl.script_args, headers=wl.headers,
                   env=tls.client_env(clients.tls_setup) if wl.tls else None)
