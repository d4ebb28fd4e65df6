"""What one idle connection costs the server, kernel included: the constants of src/server/budget.rs.

Run as root:  python3 -m hsbench.connmem SERVER_BIN [N]
For each kind (plain HTTP/1.1, HTTPS/1.1, HTTP/2 over TLS with an empty HPACK table, HTTP/2 over TLS with a full
one), a fresh server (one worker, no memory limit so nothing is evicted) runs in a memory cgroup of its own; after
one warm-up request, N connections are opened one after the other, each makes one request and stays open and
silent. Printed per connection: the growth of the cgroup's usage (what the pod is charged: heap and kernel
socket memory) and of the server's RSS (heap only), and what the server's own charge gauge says.
"""
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

CG_V1 = "/sys/fs/cgroup/memory"


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def hpack_int(prefix_bits: int, flags: int, v: int) -> bytes:
    top = (1 << prefix_bits) - 1
    if v < top:
        return bytes([flags | v])
    out = [flags | top]
    v -= top
    while v >= 128:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def hpack_str(s: bytes) -> bytes:
    return hpack_int(7, 0, len(s)) + s


def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    n = len(payload)
    return bytes([n >> 16, (n >> 8) & 0xFF, n & 0xFF, kind, flags]) + stream.to_bytes(4, "big") + payload


def h2_request(fill: bool) -> bytes:
    # :method GET, :scheme https (static 2 and 7); :path and :authority literal with a static name, not indexed.
    block = b"\x82\x87" + b"\x04" + hpack_str(b"/100.html") + b"\x01" + hpack_str(b"localhost")
    if fill:
        # Four entries of 8 + 980 + 32 = 1,020 bytes, incremental indexing: 4,080 of the 4,096-byte table.
        for i in range(4):
            block += b"\x40" + hpack_str(b"x-fill-%d" % i) + hpack_str(b"v" * 980)
    hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + frame(4, 1, 0, b"")
    return hello + frame(1, 0x5, 1, block)


def h2_done(buf: bytes) -> bool:
    while len(buf) >= 9:
        n = int.from_bytes(buf[:3], "big")
        if len(buf) < 9 + n:
            return False
        kind, flags, stream = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
        if stream == 1 and flags & 1 and kind in (0, 1):
            return True
        buf = buf[9 + n:]
    return False


def h1_done(buf: bytes) -> bool:
    return buf.endswith(b"a" * 100)


def one(kind: str, port: int, tls_port: int, ctx_h1, ctx_h2):
    if kind == "http1":
        s = socket.create_connection(("127.0.0.1", port))
    else:
        raw = socket.create_connection(("127.0.0.1", tls_port))
        s = (ctx_h1 if kind == "https1" else ctx_h2).wrap_socket(raw, server_hostname="localhost")
    if kind.startswith("h2"):
        s.sendall(h2_request(kind == "h2-full"))
        done = h2_done
    else:
        s.sendall(b"GET /100.html HTTP/1.1\r\nHost: localhost\r\n\r\n")
        done = h1_done
    buf = b""
    while not done(buf):
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError(f"{kind}: closed after {len(buf)} bytes")
        buf += chunk
    return s


def metric(admin: int, name: str) -> float:
    body = urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=10).read().decode()
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def measure(bin_path: str, kind: str, n: int, site: str, crt: str, key: str) -> str:
    cg = os.path.join(CG_V1, f"hs-connmem-{os.getpid()}-{kind}")
    os.mkdir(cg)
    with open(os.path.join(cg, "memory.limit_in_bytes"), "w") as f:
        f.write(str(2 << 30))
    port, tls_port, admin = free_port(), free_port(), free_port()
    args = [bin_path, "--root", site, "--listen", f"127.0.0.1:{port}", "--tls-listen", f"127.0.0.1:{tls_port}",
            "--admin-listen", f"127.0.0.1:{admin}", "--workers", "1", "--memory-limit", "none",
            "--tls-cert", crt, "--tls-key", key, "--compress=false"]

    def join():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    proc = subprocess.Popen(args, preexec_fn=join, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                metric(admin, "hyperstatic_ready")
                break
            except OSError:
                time.sleep(0.05)
        ctx_h1 = ssl.create_default_context()
        ctx_h1.check_hostname, ctx_h1.verify_mode = False, ssl.CERT_NONE
        ctx_h1.set_alpn_protocols(["http/1.1"])
        ctx_h2 = ssl.create_default_context()
        ctx_h2.check_hostname, ctx_h2.verify_mode = False, ssl.CERT_NONE
        ctx_h2.set_alpn_protocols(["h2"])
        one(kind, port, tls_port, ctx_h1, ctx_h2).close()
        time.sleep(0.5)

        def usage() -> int:
            with open(os.path.join(cg, "memory.usage_in_bytes")) as f:
                return int(f.read())

        def rss() -> int:
            with open(f"/proc/{proc.pid}/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

        u0, r0 = usage(), rss()
        held = [one(kind, port, tls_port, ctx_h1, ctx_h2) for _ in range(n)]
        time.sleep(0.5)
        u1, r1 = usage(), rss()
        charged = metric(admin, "hyperstatic_connection_memory_bytes")
        for s in held:
            s.close()
        return (f"{kind:8} {n} connections: cgroup +{(u1 - u0) / n:,.0f} B each, RSS +{(r1 - r0) / n:,.0f} B each, "
                f"charged {charged / n:,.0f} B each")
    finally:
        proc.kill()
        proc.wait()
        for _ in range(100):
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.05)


def main():
    bin_path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    tmp = tempfile.mkdtemp(prefix="hs-connmem-")
    try:
        site = os.path.join(tmp, "site")
        os.mkdir(site)
        with open(os.path.join(site, "100.html"), "wb") as f:
            f.write(b"a" * 100)
        crt, key = os.path.join(tmp, "crt.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", key, "-out", crt, "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
        for kind in ["http1", "https1", "h2-empty", "h2-full"]:
            print(measure(bin_path, kind, n, site, crt, key), flush=True)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
