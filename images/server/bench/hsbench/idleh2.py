"""Idle HTTP/2 client: opens N connections to 127.0.0.1:PORT over TLS with ALPN h2 (or h2c with prior knowledge,
--h2c), sends on each the client preface, an empty SETTINGS and one GET on stream 1, reads frames until that
stream ends (acknowledging the server's SETTINGS), then keeps every connection open and silent so the server's
memory per idle h2 connection can be measured. The same protocol as idle.py (the HTTP/1.1 one):

    python3 -m hsbench.idleh2 PORT N PATH [--h2c]

prints "open <n> <failed>" once every connection has its response, then waits; each line "check" on stdin makes
it print "alive <k>" (connections that neither closed nor received a GOAWAY); end of stdin closes everything.
HPACK: the request uses only indexed static-table fields and literals without indexing (RFC 7541 §6.1, §6.2.2),
so no encoder state is needed.
"""
import errno
import resource
import selectors
import socket
import ssl
import struct
import sys
import time

from .idle import BATCH, _abandon, connect_nonblocking

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, GOAWAY = 0x0, 0x1, 0x4, 0x7
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4


def frame(ftype: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def _literal(index: int, value: bytes) -> bytes:
    """Literal header field without indexing, indexed name (4-bit prefix), raw (non-Huffman) value."""
    if index >= 15 or len(value) >= 127:
        raise ValueError("the idle client's request fields must be short")
    return bytes([index, len(value)]) + value


def request_block(path: str, authority: str, tls: bool) -> bytes:
    """GET path: :method GET (static 2), :scheme https/http (7/6), :path (name 4), :authority (name 1)."""
    return bytes([0x82, 0x87 if tls else 0x86]) + _literal(4, path.encode()) + _literal(1, authority.encode())


def opening(path: str, port: int, tls: bool) -> bytes:
    """What each connection sends first: preface, empty SETTINGS, one GET on stream 1 (END_STREAM)."""
    return (PREFACE + frame(SETTINGS, 0, 0) +
            frame(HEADERS, END_STREAM | END_HEADERS, 1, request_block(path, f"127.0.0.1:{port}", tls)))


def frames(buf: bytearray):
    """Complete frames at the front of buf as (type, flags, stream, payload), consumed from buf."""
    while len(buf) >= 9:
        length = int.from_bytes(buf[:3], "big")
        if len(buf) < 9 + length:
            return
        ftype, flags = buf[3], buf[4]
        stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
        payload = bytes(buf[9:9 + length])
        del buf[:9 + length]
        yield ftype, flags, stream, payload


class Conn:
    def __init__(self, sock: socket.socket):
        self.sock, self.state, self.buf, self.preface_seen = sock, "connecting", bytearray(), False
        self.goaway = False

    def feed(self, data: bytes) -> tuple[bool, bytes]:
        """(stream 1 has ended, bytes to send back: SETTINGS ACKs)"""
        self.buf += data
        done, reply = False, b""
        for ftype, flags, stream, _ in frames(self.buf):
            if ftype == SETTINGS and not flags & ACK:
                reply += frame(SETTINGS, ACK, 0)
            elif ftype == GOAWAY:
                self.goaway = True
            elif stream == 1 and ftype in (HEADERS, DATA) and flags & END_STREAM:
                done = True
        return done, reply


def client_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the certificate was checked before (tls.check); this only holds connections
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols(["h2"])
    return ctx


def open_idle(port: int, n: int, path: str, tls: bool, deadline_s: float = 180.0) -> tuple[list[Conn], int]:
    ctx = client_context() if tls else None
    hello = opening(path, port, tls)
    sel = selectors.DefaultSelector()
    done: list[Conn] = []
    failed = started = pending = 0
    deadline = time.monotonic() + deadline_s

    def launch():
        nonlocal started, pending
        s = connect_nonblocking(port)
        sel.register(s, selectors.EVENT_WRITE, Conn(s))
        started += 1
        pending += 1

    def step(c: Conn) -> None:
        """Advance one connection as far as it goes without blocking."""
        nonlocal pending
        if c.state == "connecting":
            err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise OSError(err, errno.errorcode.get(err, str(err)))
            if tls:
                raw = c.sock
                sel.unregister(raw)
                c.sock = ctx.wrap_socket(raw, do_handshake_on_connect=False)
                sel.register(c.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
                c.state = "handshake"
            else:
                c.state = "send"
        if c.state == "handshake":
            try:
                c.sock.do_handshake()
            except ssl.SSLWantReadError:
                sel.modify(c.sock, selectors.EVENT_READ, c)
                return
            except ssl.SSLWantWriteError:
                sel.modify(c.sock, selectors.EVENT_WRITE, c)
                return
            if c.sock.selected_alpn_protocol() != "h2":
                raise ConnectionError(f"ALPN {c.sock.selected_alpn_protocol()}, not h2")
            c.state = "send"
        if c.state == "send":
            c.sock.sendall(hello)  # a few dozen bytes: the socket buffer takes them at once
            c.state = "reading"
            sel.modify(c.sock, selectors.EVENT_READ, c)
            return
        while True:  # reading
            try:
                chunk = c.sock.recv(65536)
            except (ssl.SSLWantReadError, BlockingIOError):
                return
            if not chunk:
                raise ConnectionError("closed before the response")
            finished, reply = c.feed(chunk)
            if reply:
                c.sock.sendall(reply)
            if c.goaway:
                raise ConnectionError("GOAWAY before the response")
            if finished:
                sel.unregister(c.sock)
                done.append(c)
                pending -= 1
                return

    while len(done) + failed < n:
        if time.monotonic() > deadline:  # the rest count as failed, as in idle.py
            return done, failed + _abandon(sel) + (n - started)
        while started < n and pending < BATCH:
            launch()
        for key, _ in sel.select(timeout=1.0):
            c = key.data
            try:
                step(c)
            except (OSError, ValueError):
                try:
                    sel.unregister(c.sock)
                except (KeyError, ValueError):
                    pass
                c.sock.close()
                failed += 1
                pending -= 1
    return done, failed


def count_alive(conns: list[Conn]) -> int:
    """A connection is gone when it reads EOF or a GOAWAY; a live idle one has nothing to read (or only a PING or
    SETTINGS, which the server may send)."""
    sel = selectors.DefaultSelector()
    for c in conns:
        c.sock.setblocking(False)
        sel.register(c.sock, selectors.EVENT_READ, c)
    gone = 0
    for key, _ in sel.select(timeout=0):
        c = key.data
        try:
            while True:
                chunk = c.sock.recv(65536)
                if not chunk:
                    c.goaway = True
                    break
                c.feed(chunk)
        except (ssl.SSLWantReadError, BlockingIOError):
            pass
        except OSError:
            c.goaway = True
        gone += c.goaway
    sel.close()
    return len(conns) - gone


def main() -> None:
    port, n, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    tls = "--h2c" not in sys.argv[4:]
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    conns, failed = open_idle(port, n, path, tls)
    print(f"open {len(conns)} {failed}", flush=True)
    for line in sys.stdin:
        if line.strip() == "check":
            print(f"alive {count_alive(conns)}", flush=True)
    for c in conns:
        c.sock.close()


if __name__ == "__main__":
    main()
