"""The load client of the HTTPS new-connection rows (tlsload/main.go): built with Go into the run's temp dir, run
pinned to the client CPU like wrk, its output parsed into wrk's result shape plus the handshakes it counted, and
checked: the "full" row must have made no resumed handshake, the "resumed" row (almost) no full one, and every
connection must have negotiated TLS 1.3 with the benchmark's cipher suite."""
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from .placement import Client
from .wrk import WrkResult, run_pinned

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # images/server/bench → the repository root
GO_FALLBACK = "/usr/local/go/bin/go"
# a resumed row may see a stray full handshake (a server rotating its ticket key, a ticket lost to a timeout);
# more than this share of full handshakes means resumption is not working and the row would measure the wrong thing
MAX_FULL_SHARE_RESUMED = 0.01


def go_binary() -> str | None:
    return shutil.which("go") or (GO_FALLBACK if os.access(GO_FALLBACK, os.X_OK) else None)


def build(workdir: str) -> str:
    go = go_binary()
    if go is None:
        raise RuntimeError(f"go not found (PATH or {GO_FALLBACK}): it builds the HTTPS rows' load client")
    os.makedirs(workdir, exist_ok=True)
    binary = os.path.join(workdir, "tlsload")
    res = subprocess.run([go, "build", "-o", binary, "./images/server/bench/tlsload"], cwd=REPO,
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"building the TLS load client failed:\n{res.stderr}")
    return binary


@dataclass
class TlsloadResult(WrkResult):
    full: int = 0        # full handshakes in the timed loop
    resumed: int = 0     # resumed handshakes in the timed loop
    primer_full: int = 0     # the untimed first connection of each goroutine (full, unless a ticket was there)
    primer_resumed: int = 0
    suites: dict[str, int] = field(default_factory=dict)   # "TLS 1.3 TLS_AES_128_GCM_SHA256" → handshakes
    first_error: str = ""


def parse(out: str, client_cpu_s: float = 0.0) -> TlsloadResult:
    """tlsload prints "key value" lines; "suite VERSION NAME count" once per negotiated kind."""
    vals, suites, first_error = {}, {}, ""
    for line in out.splitlines():
        if line.startswith("suite "):
            m = re.fullmatch(r"suite (.+) (\d+)", line.strip())
            if m:
                suites[m.group(1)] = int(m.group(2))
        elif line.startswith("first_error "):
            first_error = line[len("first_error "):]
        else:
            parts = line.split()
            if len(parts) == 2:
                vals[parts[0]] = parts[1]
    missing = [k for k in ("requests", "seconds", "rps", "errors", "handshakes_full", "handshakes_resumed")
               if k not in vals]
    if missing:
        raise ValueError(f"tlsload output lacks {missing}:\n{out}")
    p99 = float(vals.get("p99_ms", "nan"))
    return TlsloadResult(
        requests=int(vals["requests"]), seconds=float(vals["seconds"]), rps=float(vals["rps"]),
        p50_ms=float(vals.get("p50_ms", "nan")), p99_ms=p99, bytes_read=float(vals.get("bytes_read", 0)),
        errors=int(vals["errors"]), non2xx=int(vals.get("non2xx", 0)), client_cpu_s=client_cpu_s, raw=out,
        full=int(vals["handshakes_full"]), resumed=int(vals["handshakes_resumed"]), suites=suites,
        primer_full=int(vals.get("primer_handshakes_full", 0)),
        primer_resumed=int(vals.get("primer_handshakes_resumed", 0)),
        first_error=first_error)


def problems(res: TlsloadResult, resume: bool, want_suite: str) -> list[str]:
    """What makes a run not measure what its row says; empty when it does."""
    out = []
    handshakes = res.full + res.resumed
    if handshakes == 0:
        out.append(f"no handshake completed ({res.errors} errors; first: {res.first_error or 'none'})")
        return out
    if not resume and res.resumed:
        out.append(f"{res.resumed} of {handshakes} handshakes resumed in the full-handshake row")
    if resume and res.full > MAX_FULL_SHARE_RESUMED * handshakes:
        out.append(f"{res.full} of {handshakes} handshakes were full in the resumed row (resumption not working)")
    wrong = {k: v for k, v in res.suites.items() if k != want_suite}
    if wrong:
        out.append(f"negotiated {wrong}, want only {want_suite!r}")
    return out


def argv_for(binary: str, port: int, path: str, connections: int, seconds: float, resume: bool) -> list[str]:
    argv = [binary, "-addr", f"127.0.0.1:{port}", "-path", path, "-c", str(connections),
            "-d", f"{max(1, int(seconds))}s"]
    return argv + (["-resume"] if resume else [])


def run(binary: str, port: int, path: str, connections: int, seconds: float, client: Client,
        resume: bool) -> TlsloadResult:
    return parse(*run_pinned(argv_for(binary, port, path, connections, seconds, resume), client))
