#!/usr/bin/env python3
"""h3-interop.py: the server's HTTP/3 against an independent client (aioquic), and its answers against HTTP/2's.

Usage: h3-interop.py SERVER_BINARY [--quic-go CLIENT] [--trixie DIR]   (python with aioquic: `make h3-interop` makes a
venv for it; CLIENT: images/server/h3interop/quicgo built, which `make h3-interop` does too; DIR: Debian 13 with curl
and ngtcp2-client, `make h3-trixie-clients`, then `make h3-interop-trixie` runs them too)

It writes a small site (a 6-byte file, a 3 MB one served from memory, a 10 MB one served from disk (over --max-memory-file-size), an index),
a self-signed P-256 certificate (openssl), starts the server with --http3 on loopback, and checks over aioquic:

  small and large GETs byte-exact (memory and disk bodies), 404, HEAD (length, no body), conditional 304 on the
  ETag, range 206 (Content-Range and the slice), 300 requests at once on one connection (3x our stream limit, so
  the client waits for stream credit), a request with a body, then the same requests over HTTP/2 (curl --http2)
  with status, body and the key headers compared, Alt-Svc on the HTTP/2 answers naming the UDP port, a malformed
  head (stream reset) and a dynamic-table QPACK reference (connection closed), and a Retry
  for a client arriving during a flood of half-open handshakes (and none without one).
  Finally SIGTERM: the server must drain and exit 0. Then a second server whose site value limits each client to 2
  requests per 600 s: the third request gets 429 with Retry-After over HTTP/3 too, counted and access-logged. Then
  0-RTT: off by default (no ticket offers early data), and with --http3-early-data GET and HEAD sent in 0-RTT are
  answered, a POST in it gets 425 Too Early, and a ticket used twice resumes only once. Then a third whose /team/ needs a signed-in member of group eng (access.sso): without a session cookie a navigation
  is redirected to sign in and a fetch gets 401, a good cookie (whole or in split cookie fields) gets the page with
  Cache-Control private, an expired, tampered or unknown-key cookie is no session, a wrong group gets 403.

With --quic-go, a second server (on [::], dual-stack, a certificate larger than three Initials, the site plus 200
files under many/) is run against quic-go over the interop runner's cases (the client's own doc says which and
how); each case is one line here, its N/I ("not implemented") lines kept apart from the failures.

Exit status 0 when every check passed; each check prints one line.
"""

import asyncio
import base64
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

from aioquic.asyncio.client import connect
from aioquic.buffer import Buffer, BufferReadError
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection, encode_frame
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import StreamDataReceived, StreamReset

KEY_HEADERS = [
    "content-type",
    "content-length",
    "etag",
    "last-modified",
    "content-range",
    "content-encoding",
    "vary",
    "cache-control",
    "location",
    "allow",
    "accept-ranges",
]

FAILURES = []
REQUESTS = [0]  # requests sent over HTTP/3, to hold the server's counter to


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + (f": {detail}" if detail and not ok else ""))
    if not ok:
        FAILURES.append(name)


class HeadAware(H3Connection):
    """aioquic 1.7.2 checks every response's content-length against its DATA, HEAD responses too (which carry
    the length a GET would get and no body, RFC 9110 §9.3.2) and closes the connection with H3_MESSAGE_ERROR:
    the check is skipped for the streams that carry a HEAD."""

    def __init__(self, quic):
        super().__init__(quic)
        self.head_streams = set()

    def _check_content_length(self, stream):
        if stream.stream_id not in self.head_streams:
            super()._check_content_length(stream)


class Client(QuicConnectionProtocol):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.http = HeadAware(self._quic)
        self.pending = {}
        # The server's control stream (its first unidirectional stream, id 3) as received: aioquic reads GOAWAY
        # and drops it, so the checks below parse it themselves (`goaway_id`).
        self.control = b""
        self.control_changed = asyncio.Event()

    def connection_made(self, transport):
        # A Python client drains its socket slower than the server fills it: the kernel's default receive buffer
        # (net.core.rmem_default) overflows on loopback and the transfer crawls through loss recovery.
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        super().connection_made(transport)

    def quic_event_received(self, event):
        if isinstance(event, StreamDataReceived) and event.stream_id == 3:
            self.control += event.data
            self.control_changed.set()
        if isinstance(event, StreamReset) and event.stream_id in self.pending:
            fut, r = self.pending.pop(event.stream_id)
            if not fut.done():
                fut.set_exception(RuntimeError(f"stream reset, code {event.error_code:#x}"))
            return
        for ev in self.http.handle_event(event):
            entry = self.pending.get(getattr(ev, "stream_id", None))
            if entry is None:
                continue
            fut, r = entry
            if isinstance(ev, HeadersReceived):
                r["headers"].extend(ev.headers)
            elif isinstance(ev, DataReceived):
                r["body"].append(ev.data)
            if getattr(ev, "stream_ended", False):
                self.pending.pop(ev.stream_id, None)
                if not fut.done():
                    fut.set_result(r)

    async def raw(self, data):
        """Sends `data` as a whole request stream, bypassing aioquic's encoder (hostile input)."""
        sid = self._quic.get_next_available_stream_id()
        fut = asyncio.get_running_loop().create_future()
        self.pending[sid] = (fut, {"headers": [], "body": []})
        self._quic.send_stream_data(sid, data, end_stream=True)
        self.transmit()
        return await asyncio.wait_for(fut, 30)

    def goaway_id(self):
        """The id of the server's GOAWAY frame on its control stream (RFC 9114 §7.2.6), or None (yet)."""
        if self.control[:1] != b"\x00":  # the stream type: control
            return None
        buf = Buffer(data=self.control[1:])
        try:
            while not buf.eof():
                kind, length = buf.pull_uint_var(), buf.pull_uint_var()
                payload = buf.pull_bytes(length)
                if kind == 0x7:
                    return Buffer(data=payload).pull_uint_var()
        except BufferReadError:  # a frame not all here yet
            return None
        return None

    async def until_goaway(self, within=30):
        """Waits for the server's GOAWAY; its id."""
        async def wait():
            while self.goaway_id() is None:
                self.control_changed.clear()
                await self.control_changed.wait()
            return self.goaway_id()
        return await asyncio.wait_for(wait(), within)

    async def together(self, asks, files):
        """GETs of (path, priority) sent in one datagram (one transmit); the paths in the order their answers
        completed (a wrong answer is named with its status)."""
        order, futs = [], []
        for path, priority in asks:
            sid = self._quic.get_next_available_stream_id()
            REQUESTS[0] += 1
            fut = asyncio.get_running_loop().create_future()
            self.pending[sid] = (fut, {"headers": [], "body": []})
            fut.add_done_callback(lambda f, p=path: order.append(
                p if f.result()["body"] and b"".join(f.result()["body"]) == files[p[1:]] else p + " (wrong)"))
            self.http.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"localhost"),
                                         (b":path", path.encode()), (b"priority", priority.encode())], end_stream=True)
            futs.append(fut)
        self.transmit()
        await asyncio.wait_for(asyncio.gather(*futs), 60)
        return order

    async def request(self, method, path, headers=(), body=b""):
        sid = self._quic.get_next_available_stream_id()
        REQUESTS[0] += 1
        fields = [(b":method", method.encode()), (b":scheme", b"https"), (b":authority", b"localhost"),
                  (b":path", path.encode())]
        fields += [(k.encode(), v.encode()) for k, v in headers]
        fut = asyncio.get_running_loop().create_future()
        self.pending[sid] = (fut, {"headers": [], "body": []})
        if method == "HEAD":
            self.http.head_streams.add(sid)
        self.http.send_headers(sid, fields, end_stream=not body)
        if body:
            self.http.send_data(sid, body, end_stream=True)
        self.transmit()
        r = await asyncio.wait_for(fut, 60)
        h = {}
        for k, v in r["headers"]:
            h.setdefault(k.decode(), v.decode())
        return int(h.pop(":status")), h, b"".join(r["body"])


def curl_h2(port, method, path, headers=()):
    """One request over HTTP/2 (TLS, ALPN h2) with curl: status, lowercase headers, body."""
    with tempfile.TemporaryDirectory() as d:
        hf, bf = os.path.join(d, "h"), os.path.join(d, "b")
        cmd = ["curl", "-sk", "--http2", "-D", hf, "-o", bf, "--connect-to", f"localhost:{port}:127.0.0.1:{port}"]
        cmd += ["--head"] if method == "HEAD" else ["-X", method]
        for k, v in headers:
            cmd += ["-H", f"{k}: {v}"]
        subprocess.run(cmd + [f"https://localhost:{port}{path}"], check=True)
        lines = open(hf, "rb").read().decode().split("\r\n")
        status = int(lines[0].split()[1])
        h = {}
        for line in lines[1:]:
            if ": " in line:
                k, v = line.split(": ", 1)
                h.setdefault(k.lower(), v)
        # With --head, curl writes the head where the body would go: a HEAD answer's body is empty by definition.
        body = open(bf, "rb").read() if os.path.exists(bf) and method != "HEAD" else b""
        return status, h, body


def make_site(root):
    os.makedirs(os.path.join(root, "docs"))
    files = {
        "small.txt": b"hello\n",
        "index.html": b"<!doctype html><title>h3</title><p>home</p>\n",
        "docs/index.html": b"<p>docs</p>\n",
        "style.css": b"body{color:#123}\n" * 200,
        "medium.bin": os.urandom(400_000),
        "large.bin": os.urandom(3_000_000),
        "huge.bin": os.urandom(10_000_000),
    }
    for name, data in files.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(data)
    return files


def make_cert(work, name, padding_names=0):
    """A self-signed P-256 certificate for localhost (openssl); `padding_names` extra DNS names make it larger
    (the amplification case needs a first flight over 3x the client's Initial)."""
    key, cert = os.path.join(work, name + "-key.pem"), os.path.join(work, name + "-cert.pem")
    san = ",".join(["DNS:localhost"] + [f"DNS:padding-{i:03d}.h3-interop.invalid" for i in range(padding_names)])
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=" + san], check=True, capture_output=True)
    return key, cert


def start(binary, work, site, tls_listen, name="server", padding_names=0, extra=()):
    """Starts the server on `site` with HTTP/3 on `tls_listen`; its process, HTTPS (= UDP) port, admin port,
    certificate and log path once it says it listens."""
    key, cert = make_cert(work, name, padding_names)
    log_path = os.path.join(work, name + ".log")
    log = open(log_path, "wb")
    p = subprocess.Popen([binary, "--root", site, "--listen", "127.0.0.1:0",
                          "--admin-listen", "127.0.0.1:0", "--tls-listen", tls_listen, "--tls-cert", cert,
                          "--tls-key", key, "--http3", "--workers", "2", "--max-memory-file-size", "8MiB",
                          "--access-log", *extra],
                         stdout=log, stderr=log)
    deadline = time.time() + 20
    while time.time() < deadline:
        for line in open(log_path, "rb").read().decode().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("msg") == "listening":
                return p, int(rec["https"].rsplit(":", 1)[1]), int(rec["admin"].rsplit(":", 1)[1]), cert, log_path
        time.sleep(0.05)
    p.kill()
    sys.exit("the server did not start: " + open(log_path).read())


def stop(p, name):
    """SIGTERM: the server must drain and exit 0."""
    p.send_signal(signal.SIGTERM)
    try:
        code = p.wait(15)
    except subprocess.TimeoutExpired:
        p.kill()
        code = None
    check(f"SIGTERM drains and exits 0 ({name})", code == 0, f"exit {code}")


def run_trixie(binary, chroot_dir, work):
    """Debian 13's curl (HTTP/3 over OpenSSL's QUIC and nghttp3) and ngtcp2's gtlsclient (GnuTLS), run in the
    debootstrapped tree `chroot_dir` (make h3-trixie-clients), against a server of their own: bodies byte-exact."""
    site = os.path.join(work, "site-trixie")
    files = make_site(site)
    p, port, admin, cert, log_path = start(binary, work, site, "127.0.0.1:0", "server-trixie",
                                           extra=("--drain-delay", "0s"))
    inside = tempfile.mkdtemp(dir=os.path.join(chroot_dir, "tmp"))
    rel = "/" + os.path.relpath(inside, chroot_dir)
    shutil.copy(cert, os.path.join(inside, "cert.pem"))
    url = f"https://localhost:{port}"
    try:
        for name in ("small.txt", "large.bin", "huge.bin"):
            out = subprocess.run(["chroot", chroot_dir, "curl", "-s", "--http3-only", "--cacert", rel + "/cert.pem",
                                  "--resolve", f"localhost:{port}:127.0.0.1", "-o", f"{rel}/curl-{name}",
                                  "-w", "%{http_version} %{http_code}", f"{url}/{name}"],
                                 capture_output=True, text=True, timeout=60)
            got = open(os.path.join(inside, f"curl-{name}"), "rb").read() if out.returncode == 0 else b""
            check(f"trixie curl --http3-only GET {name} byte-exact", out.stdout == "3 200" and got == files[name],
                  f"rc {out.returncode} {out.stdout!r} {out.stderr[-300:]} {len(got)} bytes")
        out = subprocess.run(["chroot", chroot_dir, "gtlsclient", "--exit-on-all-streams-close", "--quiet",
                              "--download", rel, "127.0.0.1", str(port), f"{url}/large.bin", f"{url}/small.txt"],
                             capture_output=True, text=True, timeout=60)
        ok = all(os.path.exists(os.path.join(inside, n)) and open(os.path.join(inside, n), "rb").read() == files[n]
                 for n in ("large.bin", "small.txt"))
        check("trixie ngtcp2 gtlsclient: two streams byte-exact", out.returncode == 0 and ok,
              f"rc {out.returncode} {out.stderr[-300:]}")
    finally:
        shutil.rmtree(inside, ignore_errors=True)
        stop(p, "the trixie clients' server")


README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "images", "server", "README.md")


def readme_table():
    """The quic-go column of the server README's interop table: case -> pass, fail or n/i (the first word)."""
    rows, inside = {}, False
    for line in open(README).read().splitlines():
        if line.startswith("<!-- h3-interop cases"):
            inside = True
        elif inside and line.startswith("|"):
            cells = [c.strip().strip("*`") for c in line.strip("|").split("|")]
            if len(cells) >= 3 and cells[2]:
                rows[cells[0]] = cells[2].split()[0].lower()
        elif inside and rows:
            break
    return rows


def run_quic_go(binary, client, work):
    """quic-go over the interop cases against a server of its own: one line per case, N/I lines apart."""
    site = os.path.join(work, "site-quic-go")
    make_site(site)
    os.makedirs(os.path.join(site, "many"))
    for i in range(200):
        with open(os.path.join(site, "many", f"f{i:03d}.bin"), "wb") as f:
            f.write(os.urandom(1000 + 97 * i))
    # The drain is aioquic's part. The handshake limit is raised to the client's own (30 s): through 30 % loss each
    # way, PTO backoff can take a handshake past the default 10 s (once in about nine runs, 2026-12-05: connection
    # 5 of handshakeloss closed by the server with an application error after 13.97 s), and those cases test loss
    # recovery, not the slow-handshake defence (tests/h3.rs holds that one). 0-RTT is on for the zerortt case
    # (run_early_data checks it off by default).
    p, port, admin, cert, log_path = start(binary, work, site, "[::]:0", "server-quic-go", padding_names=200,
                                           extra=("--drain-delay", "0s", "--header-timeout", "30s",
                                                  "--http3-early-data"))
    t = time.time()
    try:
        out = subprocess.run([client, "-addr", f"127.0.0.1:{port}", "-addr6", f"[::1]:{port}",
                              "-admin", f"127.0.0.1:{admin}", "-cert", cert, "-root", site],
                             capture_output=True, text=True, timeout=600)
        lines, err = out.stdout.splitlines(), out.stderr
    except subprocess.TimeoutExpired as e:
        lines, err = (e.stdout or b"").decode().splitlines(), "timed out after 600 s"
    table = readme_table()
    cases = 0
    for line in lines:
        status, _, rest = line.partition(" ")
        if status not in ("PASS", "FAIL", "N/I"):
            print("  " + line)
            continue
        cases += 1
        name, _, detail = rest.partition(": ")
        listed = table.get(name, "")
        if status == "FAIL" and listed == "fail":
            # A failure the README's table lists, with its reason: shown, not hidden, and not a regression.
            print(f"KNOWN FAIL quic-go {name} (README's interop table): {detail}")
        elif status == "N/I":
            print(f"N/I  quic-go {name}: {detail}")
            check(f"quic-go {name}: not implemented, as the README's table says", listed == "n/i", f"table: {listed!r}")
        else:
            check(f"quic-go {name}", status == "PASS", detail)
            if status == "PASS":
                print(f"     {detail}")
            if listed not in ("pass", "fail"):
                check(f"quic-go {name} is in the README's interop table", False, f"table: {listed!r}")
    check(f"quic-go ran its cases ({time.time() - t:.1f} s)", cases > 0 and "timed out" not in err, err[-2000:])
    stop(p, "quic-go's server")
    if FAILURES:
        print(open(log_path).read()[-3000:])


async def run(port, cert, files):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name="localhost")
    cfg.load_verify_locations(cert)
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
        s, h, b = await c.request("GET", "/small.txt")
        check("no Retry when few handshakes are in progress", c._quic._retry_source_connection_id is None)
        check("GET small 200 byte-exact", s == 200 and b == files["small.txt"] and h.get("content-length") == "6",
              f"{s} {h} {b!r}")
        check("no Alt-Svc over h3 itself", "alt-svc" not in h, str(h))
        for name in ("large.bin", "huge.bin"):
            t = time.time()
            s, h, b = await c.request("GET", "/" + name)
            print(f"  {name}: {time.time() - t:.2f} s")
            check(f"GET {name} ({len(files[name])} B) byte-exact", s == 200 and b == files[name],
                  f"{s} {len(b)} sha {hashlib.sha256(b).hexdigest()[:12]}")
        s, h, b = await c.request("GET", "/missing")
        check("GET missing 404", s == 404 and b.startswith(b"404"), f"{s} {b!r}")
        s, h, b = await c.request("HEAD", "/large.bin")
        check("HEAD: length, no body", s == 200 and h.get("content-length") == "3000000" and b == b"", f"{s} {h}")
        etag = (await c.request("GET", "/style.css"))[1].get("etag")
        s, h, b = await c.request("GET", "/style.css", [("if-none-match", etag)])
        check("conditional 304 on the ETag", etag is not None and s == 304 and b == b"", f"{etag} {s}")
        s, h, b = await c.request("GET", "/large.bin", [("range", "bytes=1000-1999")])
        check("range 206", s == 206 and b == files["large.bin"][1000:2000]
              and h.get("content-range") == "bytes 1000-1999/3000000", f"{s} {h}")
        s, h, b = await c.request("GET", "/huge.bin", [("range", "bytes=9000000-")])
        check("range 206 from a disk body", s == 206 and b == files["huge.bin"][9000000:], f"{s} {len(b)}")
        s, h, b = await c.request("POST", "/small.txt", body=b"x" * 100_000)
        check("POST with a 100 kB body: 405", s == 405, f"{s}")
        t = time.time()
        paths = ["/small.txt", "/style.css", "/missing", "/docs/", "/index.html"]
        many = await asyncio.gather(*[c.request("GET", paths[i % len(paths)]) for i in range(300)])
        want = {p: (200 if p != "/missing" else 404) for p in paths}
        ok = all(r[0] == want[paths[i % len(paths)]] for i, r in enumerate(many))
        ok = ok and all(r[2] == files["style.css"] for i, r in enumerate(many) if paths[i % len(paths)] == "/style.css")
        check(f"300 concurrent requests on one connection ({time.time() - t:.2f} s)", ok)

    # The same requests over HTTP/2 and HTTP/3: status, body and key headers equal.
    cases = [
        ("GET", "/small.txt", []), ("GET", "/", []), ("GET", "/docs", []), ("GET", "/docs/", []),
        ("GET", "/missing", []), ("HEAD", "/style.css", []), ("GET", "/style.css", [("accept-encoding", "gzip")]),
        ("GET", "/large.bin", [("range", "bytes=0-99")]), ("GET", "/large.bin", [("range", "bytes=99999999-")]),
        ("GET", "/style.css", [("if-modified-since", "Wed, 01 Jan 2098 00:00:00 GMT")]), ("OPTIONS", "/", []),
        ("DELETE", "/small.txt", []), ("GET", "/%2e%2e/etc/passwd", []), ("GET", "/huge.bin", [("range", "bytes=5-9")]),
    ]
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
        same = 0
        for m, p, hd in cases:
            s3, h3, b3 = await c.request(m, p, hd)
            s2, h2, b2 = curl_h2(port, m, p, hd)
            k3 = {k: h3.get(k) for k in KEY_HEADERS}
            k2 = {k: h2.get(k) for k in KEY_HEADERS}
            if (s3, k3, b3) == (s2, k2, b2):
                same += 1
            else:
                print(f"  differs: {m} {p} {hd}: h3 {s3} {k3} {len(b3)} B / h2 {s2} {k2} {len(b2)} B")
        check(f"same answers as HTTP/2 ({same}/{len(cases)} requests)", same == len(cases))
    s, h, _ = curl_h2(port, "GET", "/small.txt")
    check("Alt-Svc on HTTP/2 answers", h.get("alt-svc") == f'h3=":{port}"; ma=86400', str(h.get("alt-svc")))

    # Hostile request heads: a malformed one (no :path) resets its stream with H3_MESSAGE_ERROR and the connection
    # goes on; a QPACK reference to a dynamic table of capacity 0 closes the connection QPACK_DECOMPRESSION_FAILED.
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
        try:
            await c.raw(encode_frame(0x1, b"\x00\x00\xd1\xd7"))  # :method GET, :scheme https, nothing else
            reset = "no reset"
        except RuntimeError as e:
            reset = str(e)
        s, _, _ = await c.request("GET", "/small.txt")
        check("a head without :path: its stream reset H3_MESSAGE_ERROR, the connection goes on",
              reset == "stream reset, code 0x10e" and s == 200, f"{reset}, then {s}")
        c._quic.send_stream_data(c._quic.get_next_available_stream_id(), encode_frame(0x1, b"\x02\x00\x80"), True)
        c.transmit()
        try:
            await asyncio.wait_for(c.wait_closed(), 10)
        except asyncio.TimeoutError:
            pass
        ev = getattr(c._quic, "_close_event", None)
        check("a dynamic-table reference: connection closed QPACK_DECOMPRESSION_FAILED",
              ev is not None and ev.error_code == 0x200, str(ev))

    # Priorities (RFC 9218): two requests in one datagram on one connection, a small file with urgency 7 (the
    # least) first, then 400 kB with urgency 0. Both responses are in the server's send buffer before its first
    # packet leaves, so it is the priority alone that sends the second one first, whole: without it the first one
    # written goes first.
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
        order = await c.together([("/style.css", "u=7"), ("/medium.bin", "u=0")], files)
        check("priority: of two requests in one datagram, the one with urgency 0 is answered first",
              order == ["/medium.bin", "/style.css"], f"completed in the order {order}")

    # Every worker serves HTTP/3 (each its own socket of the port; the kernel spreads clients by address): 24
    # clients, each from its own port, one GET each. main() reads which workers answered from the access log; all
    # 24 on one of the two workers would happen by chance once in 8 million runs.
    for _ in range(24):
        async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
            s, _, b = await c.request("GET", "/small.txt")
            check("spread: one GET from a new client port", s == 200 and b == files["small.txt"], f"{s}")

    # A handshake flood: 200 clients send their Initial and never answer. Past 64 handshakes in progress on its
    # worker the server asks new clients to prove their address first (a Retry); a real client still gets its
    # answer. The kernel spreads the 200 over the two workers (about 100 each: fewer than 64 on the real client's
    # worker is five standard deviations out).
    socks = []
    for _ in range(200):
        q = QuicConnection(configuration=QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN,
                                                           server_name="localhost"))
        q.connect(("127.0.0.1", port), now=time.time())
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for data, _addr in q.datagrams_to_send(now=time.time()):
            sock.sendto(data, ("127.0.0.1", port))
        socks.append(sock)
    await asyncio.sleep(0.5)
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
        s, h, b = await c.request("GET", "/small.txt")
        check("under a handshake flood: a Retry, then the answer",
              c._quic._retry_source_connection_id is not None and s == 200 and b == files["small.txt"], f"{s}")
    for sock in socks:
        sock.close()


async def limited(port, cert):
    """Three GETs and a HEAD on one connection to a site allowing each client 2 requests per 600 s."""
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name="localhost")
    cfg.load_verify_locations(cert)
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
        return [await c.request(m, "/small.txt") for m in ("GET", "GET", "GET", "HEAD")]


async def retired(port, cert, files, gets):
    """`gets` GETs on one connection, then the server's GOAWAY awaited, then one more GET on the same connection
    and one on a new connection: (statuses of the first ones, GOAWAY id, what the next GET got, the new one's)."""
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name="localhost")
    cfg.load_verify_locations(cert)
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
        first = [(await c.request("GET", "/small.txt"))[0] for _ in range(gets)]
        goaway = await c.until_goaway()
        try:
            s, _, b = await c.request("GET", "/small.txt")
            after = f"{s} {b!r}"
        except RuntimeError as e:
            after = str(e)
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
        s, _, b = await c.request("GET", "/small.txt")
        fresh = s == 200 and b == files["small.txt"]
    return first, goaway, after, fresh


def run_retire(binary, work, site, files):
    """--max-requests-per-connection and --max-connection-age over HTTP/3: GOAWAY naming the first stream not
    served (RFC 9114 §5.2), a request after it refused with H3_REQUEST_REJECTED (so a client may retry it), and a new
    connection served: what keeps long-lived connections moving to replicas the autoscaler adds. An age of 0s still
    answers the first request (as HTTP/1.1's "the next response after this age"), 1s retires by the timer."""
    cases = (("--max-requests-per-connection", "2", 2, 8), ("--max-connection-age", "1s", 1, 4),
             ("--max-connection-age", "0s", 1, 4))
    for flag, value, gets, want_id in cases:
        p, port, _, cert, _ = start(binary, work, site, "127.0.0.1:0", name="retire", extra=(flag, value))
        try:
            first, goaway, after, fresh = asyncio.run(retired(port, cert, files, gets))
            check(f"{flag} {value}: GOAWAY {want_id} after {gets} answered, the next request refused, a new "
                  "connection served", first == [200] * gets and goaway == want_id
                  and after == "stream reset, code 0x10b" and fresh, f"{first}, GOAWAY {goaway}, then {after}")
        except Exception as e:
            check(f"{flag} {value}: the exchanges completed", False, repr(e))
        stop(p, f"the {flag} server")


async def resumed_early(port, cert, ticket, asks):
    """A connection resuming `ticket` whose requests `asks` ((method, path) each) go out before its handshake
    ends: in 0-RTT when the ticket allows it. Then one POST after the handshake. ((status, body) of each ask, of the
    POST, whether it resumed, whether the server accepted early data)."""
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name="localhost", session_ticket=ticket)
    cfg.load_verify_locations(cert)
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client, wait_connected=False) as c:
        answers = [(s, b) for s, _, b in await asyncio.gather(*(c.request(m, p) for m, p in asks))]
        # Not c.wait_connected(): aioquic 1.7.2 marks the connection connected only for a waiter present when the
        # handshake completes, and waits forever after it.
        for _ in range(1000):
            if c._quic._handshake_complete:
                break
            await asyncio.sleep(0.01)
        s, _, b = await c.request("POST", "/small.txt")
        return answers, (s, b), c._quic.tls.session_resumed, bool(c._quic.tls.early_data_accepted)


async def ticket_from(port, cert):
    """The session ticket a first connection (one GET) is given."""
    tickets = []
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name="localhost")
    cfg.load_verify_locations(cert)
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client,
                       session_ticket_handler=tickets.append) as c:
        await c.request("GET", "/small.txt")
        for _ in range(100):  # the ticket comes after the handshake, perhaps after the answer
            if tickets:
                break
            await asyncio.sleep(0.05)
    return tickets[0] if tickets else None


def run_early_data(binary, work, site, files):
    """0-RTT: off by default (the ticket offers no early data, a client that tries gets its requests answered
    over 1-RTT); with --http3-early-data, GET and HEAD sent in 0-RTT are answered, a POST in it gets 425 Too Early
    (RFC 8470) and after the handshake the usual 405, and a ticket is good once: a second connection with the same
    ticket (a replay of the first flight) resumes nothing and sends nothing early."""
    asks = (("GET", "/small.txt"), ("HEAD", "/small.txt"), ("POST", "/small.txt"))
    for extra in ((), ("--http3-early-data",)):
        on = bool(extra)
        p, port, admin, cert, log_path = start(binary, work, site, "127.0.0.1:0", name="early" + str(on), extra=extra)
        try:
            ticket = asyncio.run(ticket_from(port, cert))
            offered = ticket is not None and ticket.max_early_data_size is not None
            check(f"0-RTT {'on' if on else 'off by default'}: the session ticket "
                  f"{'offers' if on else 'does not offer'} early data", ticket is not None and offered == on,
                  f"ticket {ticket and ticket.max_early_data_size}")
            answers, post, resumed, early = asyncio.run(resumed_early(port, cert, ticket, asks))
            small = files["small.txt"]
            want = [(200, small), (200, b""), (425, b"425 Too Early\n") if on else (405, b"405 Method Not Allowed\n")]
            check(f"0-RTT {'on' if on else 'off'}: a resumed connection's GET, HEAD and POST sent before its "
                  f"handshake ended {'in 0-RTT: 200, 200, 425' if on else 'over 1-RTT: 200, 200, 405'}; a POST after "
                  "it 405", resumed and early == on and answers == want and post[0] == 405,
                  f"resumed {resumed}, early data accepted {early}, answers {answers}, then POST {post[0]}")
            if on:
                answers, _, resumed, early = asyncio.run(resumed_early(port, cert, ticket, asks[:1]))
                check("0-RTT on: the same ticket again (a replay) resumes nothing and sends nothing early; its GET "
                      "is answered after a full handshake", not resumed and not early and answers == [(200, small)],
                      f"resumed {resumed}, early data accepted {early}, answers {answers}")
                metrics = subprocess.run(["curl", "-s", f"http://127.0.0.1:{admin}/metrics"], capture_output=True,
                                         text=True).stdout
                check("0-RTT on: the 425 counted in hyperstatic_requests_total",
                      'hyperstatic_requests_total{code="425"} 1\n' in metrics,
                      [m for m in metrics.splitlines() if m.startswith("hyperstatic_requests_total")])
        except Exception as e:
            check(f"0-RTT {'on' if on else 'off'}: the exchanges completed", False, repr(e))
        stop(p, f"the 0-RTT {'on' if on else 'off'} server")


def run_limits(binary, work, site):
    """Fair share over HTTP/3 (limits.perClient in the site value): past its burst a client gets 429 with
    Retry-After, the same reply HTTP/1.1 and HTTP/2 give (answer/limit.rs), counted and access-logged as limited."""
    value = os.path.join(work, "limits.json")
    with open(value, "w") as f:
        json.dump({"version": 1, "limits": {"perClient": {"requests": 2, "periodSeconds": 600}}}, f)
    p, port, admin, cert, log_path = start(binary, work, site, "127.0.0.1:0", name="limits", extra=("--site", value))
    try:
        answers = asyncio.run(limited(port, cert))
    except Exception as e:
        answers = []
        check("fair share: the exchanges completed", False, repr(e))
    if answers:
        (s1, _, b1), (s2, _, _), (s3, h3, b3), (s4, h4, b4) = answers
        check("fair share: the burst of 2 is answered", (s1, s2, b1) == (200, 200, b"hello\n"), f"{s1} {s2} {b1!r}")
        # 600 s per 2 requests: the next token is 300 s away (in whole seconds, rounded up; the clock may have
        # moved a little since the burst was taken).
        ra = int(h3.get("retry-after", "0"))
        check("fair share: the third GET gets 429 with Retry-After", s3 == 429 and 290 <= ra <= 300
              and b3 == b"429 Too Many Requests\n", f"{s3} retry-after {h3.get('retry-after')} {b3!r}")
        check("fair share: HEAD gets 429 with Retry-After and no body", s4 == 429 and "retry-after" in h4 and b4 == b"",
              f"{s4} {h4} {b4!r}")
    metrics = subprocess.run(["curl", "-s", f"http://127.0.0.1:{admin}/metrics"], capture_output=True, text=True).stdout
    check("fair share: counted in hyperstatic_requests_limited_total{reason=\"per_client\"}",
          'hyperstatic_requests_limited_total{reason="per_client"} 2\n' in metrics,
          [m for m in metrics.splitlines() if "limited" in m])
    logged = [json.loads(line) for line in open(log_path, "rb").read().decode().splitlines()
              if '"msg":"request"' in line and '"HTTP/3.0"' in line]
    check("fair share: the 429s are access-logged as limited",
          [(r["status"], r.get("limited")) for r in logged] == [(200, None), (200, None), (429, "per_client"),
                                                               (429, "per_client")], logged)
    stop(p, "the fair-share server")


def mint(key, exp, email, groups):
    """A session cookie's value as the content agent mints it (internal/sso/cookie.go; src/guard/session.rs has
    the contract): `1|exp|email|groups|mac`, the MAC the unpadded base64url HMAC-SHA256 of what precedes it."""
    body = f"1|{exp}|{email}|{':'.join(groups)}"
    mac = base64.urlsafe_b64encode(hmac.new(key, body.encode(), hashlib.sha256).digest()).rstrip(b"=").decode()
    return f"{body}|{mac}"


async def signed_in(port, cert, cookies):
    """The SSO site's exchanges on one connection: (name, status, headers, body) each."""
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name="localhost")
    cfg.load_verify_locations(cert)
    nav = ("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
    ask = [("navigation, no cookie", "/team/doc.html?tab=2", [nav]),
           ("fetch, no cookie", "/team/doc.html", []),
           ("good cookie", "/team/doc.html", [nav, ("cookie", f"theme=dark; hs_session={cookies['eng']}; z=1")]),
           ("good cookie again", "/team/doc.html", [("cookie", f"hs_session={cookies['eng']}")]),
           # HTTP/3 may split Cookie into one field per pair (RFC 9114 §4.2.1): each is looked at.
           ("split cookie fields", "/team/doc.html", [("cookie", "a=1"), ("cookie", f"hs_session={cookies['eng']}")]),
           ("expired cookie", "/team/doc.html", [("cookie", f"hs_session={cookies['expired']}")]),
           ("tampered cookie", "/team/doc.html", [("cookie", f"hs_session={cookies['tampered']}")]),
           ("cookie signed by an unknown key", "/team/doc.html", [("cookie", f"hs_session={cookies['unknown key']}")]),
           ("wrong group", "/team/doc.html", [nav, ("cookie", f"hs_session={cookies['ops']}")]),
           ("public page", "/small.txt", [])]
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
        return [(name, *await c.request("GET", path, headers)) for name, path, headers in ask]


def run_sso(binary, work):
    """Single sign-on over HTTP/3 (access.sso and signIn in the site value, src/guard/session.rs): the answers
    tests/sso.rs checks over HTTP/1.1 and HTTP/2 with curl, here from aioquic. HTTP/3 shares HTTP/2's request
    head code (server/h2.rs); this holds it on the wire."""
    key, other = b"0123456789abcdef0123456789abcdef", b"fedcba9876543210fedcba9876543210"
    site = os.path.join(work, "site-sso")
    os.makedirs(os.path.join(site, "team"))
    for name, text in (("small.txt", "hello\n"), ("team/doc.html", "team doc"),
                       ("403.html", "signed in, but not allowed here")):
        with open(os.path.join(site, name), "w") as f:
            f.write(text)
    with open(os.path.join(work, "keys"), "w") as f:
        f.write(base64.b64encode(key).decode() + "\n")
    value = os.path.join(work, "sso.json")
    with open(value, "w") as f:
        json.dump({"version": 1, "cacheControl": [{"glob": "/team/**", "value": "public, max-age=600"}],
                   "errorPages": [{"status": 403, "path": "/403.html"}],
                   "access": {"sso": {"loginURL": "/.hyperstatic/sso/login", "keysFile": "keys"},
                              "rules": [{"pathPrefix": "/team/", "signIn": {"groups": ["eng"]}}]}}, f)
    later = int(time.time()) + 3600
    cookies = {"eng": mint(key, later, "jane@example.com", ["ops", "eng"]),
               "expired": mint(key, int(time.time()) - 1, "jane@example.com", ["eng"]),
               "tampered": mint(key, later, "jane@example.com", ["ops"]).replace("|ops|", "|eng|"),
               "unknown key": mint(other, later, "jane@example.com", ["eng"]),
               "ops": mint(key, later, "joe@example.org", ["ops"])}
    p, port, admin, cert, log_path = start(binary, work, site, "127.0.0.1:0", name="sso", extra=("--site", value))
    try:
        got = {name: (s, h, b) for name, s, h, b in asyncio.run(signed_in(port, cert, cookies))}
    except Exception as e:
        got = {}
        check("sso: the exchanges completed", False, repr(e))
    if got:
        s, h, _ = got["navigation, no cookie"]
        check("sso: a navigation without a cookie is sent to sign in, privately",
              (s, h.get("location"), h.get("cache-control"))
              == (302, "/.hyperstatic/sso/login?rd=/team/doc.html%3Ftab%3D2", "private"), f"{s} {h}")
        s, h, b = got["fetch, no cookie"]
        check("sso: a fetch without a cookie gets 401", s == 401 and b"team doc" not in b
              and h.get("www-authenticate") == 'Session login="/.hyperstatic/sso/login"'
              and h.get("cache-control") == "private", f"{s} {h} {b!r}")
        for name in ("good cookie", "good cookie again", "split cookie fields"):
            s, h, b = got[name]
            check(f"sso: {name}: the page, never stored by shared caches",
                  (s, b, h.get("cache-control")) == (200, b"team doc", "private, max-age=600"), f"{s} {h} {b!r}")
        for name in ("expired cookie", "tampered cookie", "cookie signed by an unknown key"):
            s, h, _ = got[name]
            check(f"sso: {name}: no session, 401", s == 401, f"{s} {h}")
        s, h, b = got["wrong group"]
        check("sso: a wrong group gets 403 with the site's page, private, no redirect",
              s == 403 and b"not allowed here" in b and "location" not in h
              and h.get("cache-control", "").startswith("private"), f"{s} {h} {b!r}")
        s, _, b = got["public page"]
        check("sso: a public page is served", (s, b) == (200, b"hello\n"), f"{s} {b!r}")
    logged = [(r["target"], r["status"]) for r in (json.loads(line) for line in open(log_path, "rb").read().decode()
              .splitlines() if '"msg":"request"' in line and '"HTTP/3.0"' in line)]
    check("sso: access-logged as HTTP/3 with their statuses",
          [st for _, st in logged] == [302, 401, 200, 200, 200, 401, 401, 401, 403, 200], logged)
    stop(p, "the SSO server")


def main():
    args = sys.argv[1:]
    client = trixie = None
    while len(args) >= 3 and args[-2] in ("--quic-go", "--trixie"):
        if args[-2] == "--quic-go":
            client = os.path.abspath(args[-1])
        else:
            trixie = os.path.abspath(args[-1])
        args = args[:-2]
    if len(args) != 1:
        sys.exit(__doc__)
    binary = os.path.abspath(args[0])
    with tempfile.TemporaryDirectory() as work:
        site = os.path.join(work, "site")
        files = make_site(site)
        p, port, admin, cert, log_path = start(binary, work, site, "127.0.0.1:0")
        try:
            asyncio.run(run(port, cert, files))
        except Exception as e:  # a hung or failed exchange is a failure, with the server's log to read
            check("the exchanges completed", False, repr(e))
        metrics = {}
        for line in subprocess.run(["curl", "-s", f"http://127.0.0.1:{admin}/metrics"], capture_output=True,
                                   text=True).stdout.splitlines():
            if line.startswith("hyperstatic_http3_"):
                k, v = line.split()
                metrics[k] = float(v)
        check("metrics: HTTP/3 connections, streams and Retry counted",
              metrics.get("hyperstatic_http3_connections_total", 0) >= 3
              and metrics.get("hyperstatic_http3_streams_total", 0) == REQUESTS[0]
              and metrics.get("hyperstatic_http3_retries_total", 0) >= 1, f"{metrics}, {REQUESTS[0]} requests")
        logged = [json.loads(line) for line in open(log_path, "rb").read().decode().splitlines()
                  if '"msg":"request"' in line and '"HTTP/3.0"' in line]
        check("access log lines for HTTP/3 requests", any(r["target"] == "/small.txt" and r["status"] == 200
                                                           and r["client"].startswith("127.0.0.1:") for r in logged),
              f"{len(logged)} lines")
        workers = sorted({r["worker"] for r in logged})
        on = sorted(json.loads(line)["worker"] for line in open(log_path, "rb").read().decode().splitlines()
                    if '"msg":"http3 on"' in line)
        check("both workers serve HTTP/3: each logged its socket, and each answered some of the clients",
              on == [0, 1] and workers == [0, 1], f"http3 on: workers {on}; answered by workers {workers}")
        stop(p, "aioquic's server")
        if FAILURES:
            print(open(log_path).read()[-3000:])
        run_limits(binary, work, site)
        run_retire(binary, work, site, files)
        run_early_data(binary, work, site, files)
        run_sso(binary, work)
        if client is not None:
            run_quic_go(binary, client, work)
        if trixie is not None:
            run_trixie(binary, trixie, work)
    print(f"{'FAILED: ' + ', '.join(FAILURES) if FAILURES else 'all passed'}")
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
