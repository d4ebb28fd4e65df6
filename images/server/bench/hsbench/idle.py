"""Idle keep-alive client: opens N connections to 127.0.0.1:PORT, sends one GET on each, reads the full
response, then keeps every connection open and silent so the server's memory can be measured.

Run as a child process (pinned to the client CPU):  python3 -m hsbench.idle PORT N PATH
It prints "open <n> <failed>" once every connection has its response, then waits. Each line "check" on stdin
makes it print "alive <k>" (connections the server has not closed); end of stdin closes everything.
"""
import errno
import resource
import selectors
import socket
import sys
import time

BATCH = 256  # connects in flight at once: keeps the server's accept backlog from overflowing


def _response_done(buf: bytes) -> bool:
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return False
    length = 0
    for line in buf[:head_end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return len(buf) >= head_end + 4 + length


def connect_nonblocking(port: int) -> socket.socket:
    """A non-blocking TCP connect to 127.0.0.1:port under way (writable once it completes)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    err = s.connect_ex(("127.0.0.1", port))
    if err not in (0, errno.EINPROGRESS):
        s.close()
        raise OSError(err, f"connect: {errno.errorcode.get(err, err)}")
    return s


def open_idle(port: int, n: int, path: str, deadline_s: float = 120.0) -> tuple[list[socket.socket], int]:
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    sel = selectors.DefaultSelector()
    done: list[socket.socket] = []
    failed = 0
    started = 0
    pending = 0
    deadline = time.monotonic() + deadline_s

    def launch():
        nonlocal started, pending
        s = connect_nonblocking(port)
        sel.register(s, selectors.EVENT_WRITE, {"state": "connecting", "buf": b""})
        started += 1
        pending += 1

    while len(done) + failed < n:
        if time.monotonic() > deadline:
            # a server that stops accepting (lighttpd at its connection limit) leaves the rest in its backlog:
            # they count as failed, the phase reports it and the benchmark goes on
            return done, failed + _abandon(sel) + (n - started)
        while started < n and pending < BATCH:
            launch()
        for key, _ in sel.select(timeout=1.0):
            s, st = key.fileobj, key.data
            try:
                if st["state"] == "connecting":
                    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        raise OSError(err, errno.errorcode.get(err, str(err)))
                    s.send(request)
                    st["state"] = "reading"
                    sel.modify(s, selectors.EVENT_READ, st)
                else:
                    chunk = s.recv(65536)
                    if not chunk:
                        raise ConnectionError("closed before the response")
                    st["buf"] += chunk
                    if _response_done(st["buf"]):
                        sel.unregister(s)
                        done.append(s)
                        pending -= 1
            except OSError:
                sel.unregister(s)
                s.close()
                failed += 1
                pending -= 1
    return done, failed


def _abandon(sel: selectors.BaseSelector) -> int:
    """Closes every connection still waiting in sel; returns how many."""
    keys = list(sel.get_map().values())
    for key in keys:
        sel.unregister(key.fileobj)
        key.fileobj.close()
    return len(keys)


def count_alive(socks: list[socket.socket]) -> int:
    """A connection the server closed is readable with EOF; a live idle one is not readable at all."""
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    closed = 0
    for key, _ in sel.select(timeout=0):
        try:
            if key.fileobj.recv(1, socket.MSG_PEEK) == b"":
                closed += 1
        except OSError:
            closed += 1
    sel.close()
    return len(socks) - closed


def main() -> None:
    port, n, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks, failed = open_idle(port, n, path)
    print(f"open {len(socks)} {failed}", flush=True)
    for line in sys.stdin:
        if line.strip() == "check":
            print(f"alive {count_alive(socks)}", flush=True)
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
