"""The HTTPS rows' setup: one throwaway ECDSA P-256 certificate for every server, each server's TLS listener
configured its own documented way with the same protocol (TLS 1.3), cipher suite and resumption, and the checks
made before any timing: every server negotiates exactly that, resumes a session when asked, and returns the exact
file bytes over HTTPS.

Why TLS_AES_128_GCM_SHA256: it is the one suite every TLS 1.3 implementation must have (RFC 8446 §9.1), the one
Go's client puts first on CPUs with AES instructions (this machine has them), and the cheapest AEAD there; any
server can be held to it, from the server side (nginx, lighttpd; h2o 2.2 through OPENSSL_CONF) or, for ours, whose
rustls configuration has no suite flag and follows the client's order, from the client side (wrk offers only it).
"""
import http.client
import os
import socket
import ssl
import subprocess
import tempfile
import time
from dataclasses import dataclass

from .servers import H2O, Caddy, Hyperstatic, Lighttpd, Nginx, Server, free_port, render_template

CIPHER = "TLS_AES_128_GCM_SHA256"
PROTOCOL = "TLSv1.3"


@dataclass(frozen=True)
class Setup:
    cert: str           # PEM certificate (self-signed, ECDSA P-256, SAN IP:127.0.0.1)
    key: str            # PEM private key (PKCS#8)
    openssl_conf: str   # OPENSSL_CONF for wrk, s_client and h2o: TLS 1.3 with CIPHER only


def make_cert(workdir: str) -> tuple[str, str]:
    """A self-signed ECDSA P-256 certificate for 127.0.0.1, valid two days, made fresh for every run."""
    os.makedirs(workdir, exist_ok=True)
    cert, key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
    res = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"making the benchmark certificate failed:\n{res.stderr}")
    os.chmod(key, 0o644)  # the peers' workers run as the invoking user and read it
    return cert, key


def setup(workdir: str) -> Setup:
    cert, key = make_cert(workdir)
    conf = os.path.join(workdir, "openssl-tls.cnf")
    with open(conf, "w") as f:
        f.write(render_template("openssl-tls.cnf.in", cipher=CIPHER))
    return Setup(cert=cert, key=key, openssl_conf=conf)


def attach(servers: list[Server], tls: Setup) -> None:
    """Gives every server but the floor (it has no TLS) an HTTPS listener on a port of its own (tls_port)."""
    for s in servers:
        if s.name == "floor":
            continue
        s.tls_port = free_port()
        values = dict(tls_port=s.tls_port, cert=tls.cert, key=tls.key, cipher=CIPHER, root=s.root)
        if isinstance(s, Hyperstatic):
            s.extra_args = [*s.extra_args, "--tls-cert", tls.cert, "--tls-key", tls.key,
                            "--tls-listen", f"127.0.0.1:{s.tls_port}"]
        elif isinstance(s, Nginx):
            s.http_extra += render_template("nginx-tls.conf.in", **values)
            if s.h3:  # nginx-1.26 in the h3 rows (servers.enable_h3 runs first)
                s.http_extra += render_template("nginx-h3.conf.in", **values)
        elif isinstance(s, Lighttpd):
            s.extra_conf += render_template("lighttpd-tls.conf.in", **values)
        elif isinstance(s, H2O):
            s.extra_conf += render_template("h2o-tls.conf.in", **values)
            s.extra_env = {"OPENSSL_CONF": tls.openssl_conf}
        elif isinstance(s, Caddy):
            s.extra_conf += render_template("Caddyfile-tls.in", file_server_extra=s.file_server_extra, **values)
        else:
            raise RuntimeError(f"{s.name}: no TLS configuration known")


def client_env(tls: Setup) -> dict[str, str]:
    """The environment of a TLS client (wrk, s_client) that must offer TLS 1.3 with CIPHER only."""
    return {**os.environ, "OPENSSL_CONF": tls.openssl_conf}


@dataclass(frozen=True)
class Handshake:
    outcome: str     # "New" (full handshake) or "Reused" (resumed session)
    protocol: str    # e.g. TLSv1.3
    cipher: str      # e.g. TLS_AES_128_GCM_SHA256
    alpn: str        # "" when the server chose none


def parse_s_client(out: str) -> Handshake:
    """The session line of `openssl s_client` ("New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256" or "Reused, ...")
    and its "ALPN protocol:" line."""
    outcome = protocol = cipher = alpn = ""
    for line in out.splitlines():
        if (line.startswith("New, ") or line.startswith("Reused, ")) and "Cipher is " in line:
            head, _, cipher = line.partition("Cipher is ")
            outcome, protocol = [p.strip() for p in head.split(",")[:2]]
            cipher = cipher.strip()
        elif line.startswith("ALPN protocol:"):
            alpn = line.split(":", 1)[1].strip()
    if not outcome:
        raise ValueError(f"openssl s_client printed no session line:\n{out[-2000:]}")
    return Handshake(outcome=outcome, protocol=protocol, cipher=cipher, alpn=alpn)


def s_client(port: int, env: dict | None = None, sess_out: str | None = None, sess_in: str | None = None,
             path: str = "/100.html", alpn: str = "http/1.1") -> Handshake:
    """One connection with one GET (so TLS 1.3 tickets arrive before it ends), reported as s_client saw it."""
    argv = ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost",
            "-alpn", alpn, "-ign_eof"]
    argv += ["-sess_out", sess_out] if sess_out else []
    argv += ["-sess_in", sess_in] if sess_in else []
    req = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    res = subprocess.run(argv, input=req, capture_output=True, text=True, env=env, timeout=20, errors="replace")
    return parse_s_client(res.stdout)


def https_get(port: int, path: str, cafile: str, timeout: float = 5.0) -> tuple[int, bytes, tuple]:
    """GET over TLS 1.3, verifying the certificate against the benchmark's own (so the server presents it)."""
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols(["http/1.1"])
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout, context=ctx)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, body, conn.sock.cipher() if conn.sock else ()
    finally:
        conn.close()


def check(server: Server, tls: Setup, files: dict[str, bytes]) -> dict:
    """Before timing: the server must negotiate TLS 1.3 with CIPHER and ALPN http/1.1 for a client offering only
    that, resume the session it issued, and return the exact bytes of every sample file over HTTPS. Also records
    which suite it picks on its own when the client offers OpenSSL's default list (AES-256 first)."""
    port = server.tls_port
    deadline = time.monotonic() + 10
    while not reachable(port):
        if time.monotonic() > deadline or not server.alive():
            raise RuntimeError(f"{server.name}: nothing listens on its HTTPS port {port}:\n{server.log_tail()}")
        time.sleep(0.1)
    free = s_client(port)
    # what a browser's offer gets (h2 rows need "h2"; the HTTP/1.1 rows' clients do not offer it)
    browser = s_client(port, env=client_env(tls), alpn="h2,http/1.1")
    with tempfile.TemporaryDirectory() as d:
        sess = os.path.join(d, "session.pem")
        first = s_client(port, env=client_env(tls), sess_out=sess)
        again = s_client(port, env=client_env(tls), sess_in=sess)
    if (first.protocol, first.cipher, first.alpn) != (PROTOCOL, CIPHER, "http/1.1"):
        raise RuntimeError(f"{server.name}: HTTPS negotiated {first.protocol} {first.cipher} ALPN "
                           f"{first.alpn or 'none'}; want {PROTOCOL} {CIPHER} ALPN http/1.1")
    if first.outcome != "New" or again.outcome != "Reused" or again.cipher != CIPHER:
        raise RuntimeError(f"{server.name}: session resumption failed: first connection {first.outcome}, "
                           f"second with its session {again.outcome} ({again.cipher})")
    for path, body in files.items():
        status, got, _ = https_get(port, path, tls.cert)
        if status != 200 or got != body:
            raise RuntimeError(f"{server.name}: HTTPS GET {path} -> {status}, {len(got)} bytes "
                               f"(want 200, {len(body)} bytes)")
    return {"port": port, "protocol": first.protocol, "cipher": first.cipher, "alpn": first.alpn,
            "resumed": again.outcome, "cipher_unforced_client": free.cipher, "alpn_h2_offered": browser.alpn}


def reachable(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0
