"""Which load client drives a workload against a server: wrk over http:// (the plain rows) or https:// (the
HTTPS keep-alive rows, offering TLS 1.3 with the benchmark's one suite), or tlsload (the HTTPS new-connection
rows). tlsload's runs are checked, the warm-up before any timing: the handshakes must be of the row's kind with the
right suite and, for our server, its own hyperstatic_tls_handshakes_total must agree with what the client counted."""
from dataclasses import dataclass

from . import tls, tlsload, wrk
from .placement import Client
from .servers import Hyperstatic, Server
from .workloads import Workload

HANDSHAKES = 'hyperstatic_tls_handshakes_total{result="success",resumed="%s"}'
WANT_SUITE = "TLS 1.3 " + tls.CIPHER  # as Go names it


@dataclass
class Clients:
    """What the HTTPS rows need; None for a run with plain rows only."""
    tls_setup: tls.Setup | None = None
    tlsload_bin: str | None = None


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


def warm(server: Server, wl: Workload, seconds: float, client: Client, clients: Clients) -> None:
    """The warm-up; for tlsload rows also the check, before timing, that the handshakes are the row's kind."""
    if wl.client == "tlsload":
        _tlsload(server, wl, max(1.0, seconds), client, clients, cross_check=True)
    else:
        wrk.warm(url(server, wl), wl.connections, seconds, client, wl.script, wl.script_args, wl.headers,
                 env=tls.client_env(clients.tls_setup) if wl.tls else None)


def run(server: Server, wl: Workload, seconds: float, client: Client, clients: Clients) -> wrk.WrkResult:
    if wl.client == "tlsload":
        return _tlsload(server, wl, seconds, client, clients, cross_check=False)
    return wrk.run(url(server, wl), wl.connections, seconds, client, wl.script, wl.script_args, headers=wl.headers,
                   env=tls.client_env(clients.tls_setup) if wl.tls else None)
