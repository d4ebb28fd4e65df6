"""The timed probes of `make bench-pool`, on a raw socket (no http.client between the clock and the bytes): one
GET with a chosen Host, read to the end of its body by Content-Length, timed with perf_counter_ns. Run by a
harness pinned to the client CPU at high priority, it is good to a few tens of microseconds, far below the 1 ms
the figures need.

- `first_200`: process start (the spawn) → the first 200 for a site's page, polling about every millisecond.
- `cold`: the first request ever to a site: its first answer (status and time from the first byte sent to the
  last byte read, the connection opened beforehand and not counted), then, when that was not a 200 (the server
  may answer 503 `Retry-After: 1` while it loads the site), the same request again about every millisecond until
  a 200, timed from the first send; then one more request on the same connection (the site now warm). The 200's
  body must be the file's bytes.
"""
import socket
import time
from dataclasses import asdict, dataclass

RETRY_SLEEP = 0.001


class ProbeError(RuntimeError):
    pass


def request_bytes(host: str, path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: hsbench-pool\r\n\r\n".encode()


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lowercase names) and body of one response with a Content-Length (every answer of ours has
    one), or to the close when it has none."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ProbeError(f"connection closed before a full header ({len(buf)} bytes)")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise ProbeError(f"not an HTTP response: {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        want = int(headers["content-length"])
        while len(rest) < want:
            chunk = sock.recv(max(65536, want - len(rest)))
            if not chunk:
                raise ProbeError(f"connection closed after {len(rest)} of {want} body bytes")
            rest += chunk
        return int(parts[1]), headers, rest[:want]
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return int(parts[1]), headers, rest
        rest += chunk


def connect(port: int, timeout: float = 5.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def get(sock: socket.socket, host: str, path: str) -> tuple[int, dict[str, str], bytes, int]:
    """One request on an open connection: (status, headers, body, nanoseconds from send to the body's end)."""
    req = request_bytes(host, path)
    t0 = time.perf_counter_ns()
    sock.sendall(req)
    status, headers, body = read_response(sock)
    return status, headers, body, time.perf_counter_ns() - t0


def first_200(port: int, host: str, path: str, launched_at: float, alive, timeout: float = 120.0) -> tuple[float, int]:
    """Seconds from launched_at (time.monotonic() at spawn) to the first 200 for host+path, and the answers that
    were not 200 before it (refused connections not counted). alive() says whether the process still runs."""
    deadline = launched_at + timeout
    not_200 = 0
    while time.monotonic() < deadline:
        if not alive():
            raise ProbeError("exited before answering")
        try:
            with connect(port, timeout=2.0) as s:
                status, _, _, _ = get(s, host, path)
            if status == 200:
                return time.monotonic() - launched_at, not_200
            not_200 += 1
        except (OSError, ProbeError):
            pass  # not listening yet
        time.sleep(RETRY_SLEEP)
    raise ProbeError(f"no 200 for {host}{path} within {timeout:.0f} s")


@dataclass
class Cold:
    site: str
    host: str
    path: str
    first_status: int
    first_ms: float       # the first answer, whatever its status: send → last byte
    to_200_ms: float      # first send → the first 200's last byte (= first_ms when the first answer was 200)
    tries: int            # requests until the 200, that one included
    warm_ms: float        # the next request on the same connection, the site now loaded
    retry_after: str      # the first answer's Retry-After, when it was not a 200

    def row(self) -> dict:
        return asdict(self)


def cold(port: int, site: str, host: str, path: str, want: bytes, timeout: float = 30.0) -> Cold:
    """The first request ever to a site (see the module documentation)."""
    sock = connect(port)
    try:
        status, headers, body, ns = get(sock, host, path)
        t_first = time.perf_counter_ns() - ns
        first_status, first_ms, retry_after = status, ns / 1e6, headers.get("retry-after", "")
        tries = 1
        deadline = time.monotonic() + timeout
        while status != 200:
            if time.monotonic() > deadline:
                raise ProbeError(f"{host}{path}: no 200 within {timeout:.0f} s (last status {status})")
            time.sleep(RETRY_SLEEP)
            if headers.get("connection", "").lower() == "close":
                sock.close()
                sock = connect(port)
            status, headers, body, _ = get(sock, host, path)
            tries += 1
        to_200_ms = (time.perf_counter_ns() - t_first) / 1e6
        if body != want:
            raise ProbeError(f"{host}{path}: 200 with {len(body)} bytes that are not the file's {len(want)}")
        if headers.get("connection", "").lower() == "close":
            sock.close()
            sock = connect(port)
        status, _, body, ns = get(sock, host, path)
        if status != 200 or body != want:
            raise ProbeError(f"{host}{path}: the second request got {status} with {len(body)} bytes")
        return Cold(site=site, host=host, path=path, first_status=first_status, first_ms=first_ms,
                    to_200_ms=to_200_ms if tries > 1 else first_ms, tries=tries, warm_ms=ns / 1e6,
                    retry_after=retry_after if first_status != 200 else "")
    finally:
        sock.close()


def fetch_until_200(port: int, host: str, path: str, timeout: float = 10.0) -> tuple[int, bytes]:
    """The correctness check's GET: retried while the server answers 503 (a site loading), on new connections."""
    deadline = time.monotonic() + timeout
    while True:
        with connect(port) as s:
            status, _, body, _ = get(s, host, path)
        if status != 503 or time.monotonic() > deadline:
            return status, body
        time.sleep(0.01)
