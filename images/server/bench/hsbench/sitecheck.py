"""Before anything is timed, every server must answer every URL of the mix correctly: status 200, a
Content-Encoding it is configured to send (identity only for files that have no compressed sibling), and a body
that decodes to exactly the file on disk. Also the startup probe: time from spawn to the first 200.
"""
import gzip
import http.client
import os
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field

from . import sitemap

SIBLINGS = {"br": ".br", "gzip": ".gz"}  # what `hyperstatic-server precompress` writes beside a file


def _brotli_decompress(data: bytes) -> bytes:
    import brotli  # Debian's python3-brotli (site.sh installs it and runs Debian's python3)
    return brotli.decompress(data)


DECODERS = {"": lambda b: b, "identity": lambda b: b, "gzip": gzip.decompress, "br": _brotli_decompress,
            "deflate": zlib.decompress}


def fetch(port: int, path: str, accept: str, timeout: float = 10.0) -> tuple[int, str, bytes]:
    """(status, Content-Encoding or "", raw body) of one GET with the given Accept-Encoding."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Accept-Encoding": accept})
        resp = conn.getresponse()
        return resp.status, (resp.getheader("Content-Encoding") or "").strip().lower(), resp.read()
    finally:
        conn.close()


def siblings(root: str, url: str) -> set[str]:
    """The encodings precompress left beside url's file."""
    f = sitemap.file_of(root, url)
    return {enc for enc, ext in SIBLINGS.items() if os.path.isfile(f + ext)}


def problem(status: int, encoding: str, body: bytes, want: bytes, has: set[str], offers: set[str]) -> str | None:
    """Why one response is wrong, or None. offers: the encodings the server is configured to send; has: the
    siblings the file has (a file precompress found worth compressing must not come back as identity)."""
    if status != 200:
        return f"status {status}"
    if encoding and encoding not in offers:
        return f"Content-Encoding {encoding!r}, but it is configured for {sorted(offers) or 'identity only'}"
    if not encoding and has & offers:
        return f"identity, though it has {sorted(has)} siblings and sends {sorted(offers)}"
    decode = DECODERS.get(encoding)
    if decode is None:
        return f"unknown Content-Encoding {encoding!r}"
    try:
        got = decode(body)
    except Exception as e:  # any codec error means the body is not what it claims to be
        return f"body does not decode as {encoding}: {e}"
    if got != want:
        return f"decoded body is {len(got)} bytes, the file {len(want)} (or differs)"
    return None


@dataclass
class CheckResult:
    server: str
    urls: int
    encodings: Counter = field(default_factory=Counter)  # Content-Encoding ("identity" for none) -> responses
    bytes_sent: int = 0                                   # body bytes over the unique URLs, as sent
    problems: list[str] = field(default_factory=list)


def check(name: str, port: int, root: str, urls: list[str], accept: str, offers: set[str]) -> CheckResult:
    res = CheckResult(server=name, urls=len(urls))
    for url in urls:
        with open(sitemap.file_of(root, url), "rb") as f:
            want = f.read()
        try:
            status, enc, body = fetch(port, url, accept)
        except OSError as e:
            res.problems.append(f"{url}: {e}")
            continue
        res.encodings[enc or "identity"] += 1
        res.bytes_sent += len(body)
        why = problem(status, enc, body, want, siblings(root, url), offers)
        if why:
            res.problems.append(f"{url}: {why}")
    return res


def first_200(port: int, path: str, launched_at: float, alive, timeout: float = 120.0) -> float:
    """Seconds from launched_at (time.monotonic() at spawn) to the first 200 for path; polls every millisecond
    or so, so the figure is good to a few ms. alive() tells whether the process still runs."""
    deadline = launched_at + timeout
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError("exited before answering")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2.0)
            try:
                conn.request("GET", path)
                resp = conn.getresponse()
                resp.read()
                if resp.status == 200:
                    return time.monotonic() - launched_at
            finally:
                conn.close()
        except OSError:
            pass  # not listening yet
        time.sleep(0.001)
    raise RuntimeError(f"no 200 for {path} within {timeout:.0f} s")
