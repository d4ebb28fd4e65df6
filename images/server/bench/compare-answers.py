#!/usr/bin/env python3
"""compare-answers.py: two hyperstatic-server binaries, the same site, the same requests: are the answers the same?

It generates one site that has every kind of answer the server gives (files of several types and sizes, memory,
table and disk bodies, a directory index and its redirect, precompressed siblings made by the OLD binary's
`precompress`, `_redirects` with redirects, rewrites, splats, placeholders and a forced rule, `_headers`, a 404
page and per-prefix error pages, clean URLs, SPA fallback, CORS), starts both binaries on it with the same flags,
and sends each the same exchanges:

  - HTTP/1.1 as raw bytes on a fresh TCP connection per exchange (the client then shuts its sending side, so the
    server answers what it got and closes; the answer is every byte read until EOF): every method, conditional
    requests (304, 412, If-Range), ranges (206, 416, ignored ones), Accept-Encoding negotiation, CORS preflight
    and simple requests, bad methods, bad paths, bad and oversized heads, pipelined requests;
  - HTTP/2 with prior knowledge (h2c, `--h2c` on both) through `curl --http2-prior-knowledge -i` (needs curl
    with HTTP/2; `which curl`): the same kinds of requests, curl's output and exit status compared;
  - in the TLS pass, that curl list again over HTTPS, once with ALPN h2 and once with http/1.1.

Responses are compared byte for byte after masking only what provably depends on the clock: the `Date` header's
value (HTTP/1.1 `Date:`, curl's `date:` for HTTP/2), which the server takes from the wall clock per second. ETag
and Last-Modified come from the files (content digest, mtime; the generator sets every mtime to one fixed time),
so they are compared. In curl's error text (HTTP/2 exchanges that end in a reset) the port is masked: the two
servers listen on different ports.

Three passes, each a fresh pair of servers: `plain` with `--compress=false` (no background encoder, so nothing
changes while requests run), HTTP/1.1 only; `h2c`, the same with `--h2c`, HTTP/1.1 and HTTP/2; `compress` with
`--h2c`, the encoder on and `--spa-fallback`, after both servers report `hyperstatic_content_encodings_pending 0`
on /metrics (so each serves the same variants), HTTP/1.1 and HTTP/2.

Flags: the site's rule flags (SITE_FLAGS below, printed and written to WORKDIR/site-flags-PASS.txt) go to both
binaries unless `--site-flags-to` says otherwise (a binary that reads its rules from a site file gets it through
`--new-flag=--site --new-flag=FILE`). `--flag` goes to both, `--old-flag`/`--new-flag` to one; `{pass}` in any
of them becomes the pass's name (the `compress` pass adds `--spa-fallback` to the site flags, so a site file per
pass: `--new-flag=/tmp/site-{pass}.json`).

Exit status: 0 when every exchange got the same answer from both, 1 on any difference, 2 when a server did not
start or become ready. Prints the count of exchanges and of differing ones, and a diff of each difference.
"""

import argparse
import email.utils
import gzip
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HOST = "example.test"
# Every file's mtime (Last-Modified): fixed, so the two servers' validators match and If-Modified-Since can be
# written in advance.
MTIME = 1767323045  # 2026-01-02 03:04:05 UTC
LAST_MODIFIED = email.utils.formatdate(MTIME, usegmt=True)
DISK_LIMIT = "256KiB"  # --max-memory-file-size: larger files are served from disk (sendfile)

# Process flags both servers get in every pass: loopback, ports chosen by the kernel, one worker.
BASE_FLAGS = ["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--workers", "1",
              "--max-memory-file-size", DISK_LIMIT, "--drain-delay", "0s", "--shutdown-timeout", "1s"]

# The site's rule flags: every per-site behaviour the command line sets.
SITE_FLAGS = [
    "--clean-urls",
    "--not-found-page", "/404.html",
    "--error-page", "404 /docs/missing.html /docs/",
    "--error-page", "405 /errors/405.html",
    "--error-page", "400 /errors/400.html",
    "--error-page", "414 /errors/414.html",
    "--cache-control", "/assets/**=public, max-age=31536000, immutable",
    "--cache-control", "*.html=no-cache, must-revalidate",
    "--default-cache-control", "public, max-age=60",
    "--header", "X-Site: compare",
    "--header", "*.json=X-Json: yes",
    "--cors", "/fonts/**=*",
    "--cors", "/api/**=https://a.example;methods=GET,HEAD;headers=X-Token;max-age=600",
    "--redirect", "/flag-old /flag-new 302",
    "--redirect", "/flag-rewrite /about.html 200",
]
# (name, flags, protocols). With --h2c a first request that is neither the HTTP/2 preface nor a parseable
# HTTP/1.1 request closes the connection unanswered (server/h2.rs `sniff`), so the HTTP/1.1 error answers (400,
# 414, 431, 505) are compared in a pass without it, and HTTP/1.1 under sniffing in the h2c passes. The TLS pass
# (a self-signed certificate made with `openssl`, skipped without it) sends the curl list over HTTPS with ALPN
# h2 and http/1.1, and the raw HTTP/1.1 list to the plain port, which --https-redirect answers with 308s.
PASSES = [
    ("plain", ["--compress=false"], ("h1",)),
    ("h2c", ["--compress=false", "--h2c"], ("h1", "h2")),
    ("compress", ["--compress=true", "--spa-fallback", "--h2c"], ("h1", "h2")),
    ("tls", ["--compress=false", "--tls-cert", "{cert}", "--tls-key", "{key}", "--tls-listen", "127.0.0.1:0",
             "--https-redirect", "--hsts", "max-age=600; includeSubDomains"], ("h1", "h2tls", "h1tls")),
]


# ------------------------------------------------------------------------------------------------------ the site


def text(n, seed):
    """`n` bytes of compressible, deterministic text."""
    words = ["static", "server", "answer", "layer", "circle", "request", "header", "range", "body", "site"]
    r = random.Random(seed)
    out = []
    size = 0
    while size < n:
        w = r.choice(words)
        out.append(w)
        size += len(w) + 1
    return (" ".join(out))[:n].encode()


def make_site(root, old_bin):
    r = random.Random(39)
    files = {
        "index.html": b"<!doctype html><title>home</title><h1>home</h1>\n" + text(3000, 1),
        "about.html": b"<!doctype html><title>about</title>\n" + text(1500, 2),
        "404.html": b"<!doctype html><title>not found</title><p>nothing here</p>\n",
        "errors/405.html": b"<!doctype html><p>method not allowed here</p>\n",
        "errors/400.html": b"<!doctype html><p>bad request page</p>\n",
        "errors/414.html": b"<!doctype html><p>too long</p>\n",
        "docs/index.html": b"<!doctype html><title>docs</title>\n" + text(2000, 3),
        "docs/guide.html": b"<!doctype html><title>guide</title>\n" + text(900, 4),
        "docs/missing.html": b"<!doctype html><p>no such doc</p>\n",
        "profile.html": b"<!doctype html><p>profile</p>\n",
        "posts/2024/hello.html": b"<!doctype html><p>hello post</p>\n",
        "news/a.html": b"<!doctype html><p>news a</p>\n",
        "app/index.html": b"<!doctype html><p>the app shell</p>\n",
        "assets/style.css": b"body { color: #333; }\n" + text(5000, 5),
        "assets/app.js": b"console.log('app');\n" + text(40000, 6),
        "assets/tiny.js": b"1;\n",
        "data.json": json.dumps({"k": [i for i in range(400)]}).encode(),
        "notes.txt": text(700, 7),
        "image.svg": b'<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>\n' + text(2000, 8),
        "image.png": b"\x89PNG\r\n\x1a\n" + bytes(r.getrandbits(8) for _ in range(30000)),
        "fonts/font.woff2": bytes(r.getrandbits(8) for _ in range(5000)),
        "api/list.json": b'{"items":[1,2,3]}\n',
        "big.bin": bytes(r.getrandbits(8) for _ in range(100 * 1024)),  # in memory, above the copy limit
        "disk/huge.txt": text(600 * 1024, 9),  # over --max-memory-file-size: from disk
        "disk/huge.bin": bytes(r.getrandbits(8) for _ in range(300 * 1024)),
        "empty.txt": b"",
        "caf\u00e9.txt": "caf\u00e9 au lait\n".encode(),
        "a b.txt": b"space in the name\n",
        ".hidden": b"dotfile\n",
        "pre/lib.js": b"var lib = 1;\n" + text(20000, 10),
        "pre/page.html": b"<!doctype html>\n" + text(8000, 11),
        "gz/only.css": b"p { margin: 0 }\n" + text(4000, 12),
        "_redirects": b"\n".join([
            b"# redirects, rewrites, splats, placeholders",
            b"/old /about 301",
            b"/temp /about 302",
            b"/keep /about 307",
            b"/perm /about 308",
            b"/blog/* /news/:splat 302",
            b"/u/:id /profile.html 200",
            b"/p/:year/:slug /posts/:year/:slug.html 200",
            b"/spa/* /app/index.html 200",
            b"/notes.txt /about 301!",
            b"/ext https://other.example/path 301",
            b"",
        ]),
        "_headers": b"\n".join([
            b"/assets/*",
            b"  X-Asset: yes",
            b"/docs/:page",
            b"  X-Doc: :page",
            b"/*",
            b"  X-Frame-Options: DENY",
            b"/data.json",
            b"  ! X-Frame-Options",
            b"",
        ]),
    }
    for rel, data in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    # A gzip-only sibling (mtime 0 in the header: the same bytes every run).
    with open(os.path.join(root, "gz/only.css"), "rb") as f:
        raw = f.read()
    with open(os.path.join(root, "gz/only.css.gz"), "wb") as f:
        f.write(gzip.compress(raw, 9, mtime=0))
    # .br, .zst and .gz siblings, made once by the OLD binary (the same site for both servers).
    subprocess.run([old_bin, "precompress", os.path.join(root, "pre")], check=True, stdout=subprocess.DEVNULL)
    for d, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(d, n), (MTIME, MTIME))
    return files


# ------------------------------------------------------------------------------------------------------ servers


class Server:
    def __init__(self, name, binary, root, flags, workdir):
        self.name, self.binary = name, binary
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.argv = [binary, "--root", root] + BASE_FLAGS + flags
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT)
        self.port = self.admin = self.tls_port = None

    def wait_listening(self, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}); log: {self.log_path}")
            with open(self.log_path, "rb") as f:
                for line in f:
                    try:
                        j = json.loads(line)
                    except ValueError:
                        continue
                    if j.get("msg") == "listening":
                        self.port = int(j["http"].rsplit(":", 1)[1])
                        self.tls_port = int(j["https"].rsplit(":", 1)[1]) if j.get("https", "off") != "off" else None
                        self.admin = j["admin"]
                        return
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not report listening within {timeout}s; log: {self.log_path}")

    def metric(self, name):
        with urllib.request.urlopen(f"http://{self.admin}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
        return None

    def wait_encoded(self, timeout):
        """Until the background encoder has nothing pending (every variant it will make is served)."""
        end = time.time() + timeout
        while time.time() < end:
            if self.metric("hyperstatic_content_encodings_pending") == 0:
                return
            time.sleep(0.2)
        raise RuntimeError(f"{self.name}: encodings still pending after {timeout}s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# ------------------------------------------------------------------------------------------------------ exchanges


def req(method, path, headers=(), version="HTTP/1.1", host=True, body=b""):
    lines = [f"{method} {path} {version}"]
    if host:
        lines.append(f"Host: {HOST}")
    lines += list(headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def h1_exchanges(etags):
    """(name, raw request bytes) for HTTP/1.1."""
    ex = []
    paths = ["/", "/index.html", "/about", "/about.html", "/about/", "/docs", "/docs/", "/docs/index.html",
             "/docs/guide", "/docs/guide.html", "/docs/nope", "/assets/style.css", "/assets/app.js",
             "/assets/tiny.js", "/data.json", "/notes.txt", "/image.svg", "/image.png", "/fonts/font.woff2",
             "/api/list.json", "/big.bin", "/disk/huge.txt", "/disk/huge.bin", "/empty.txt", "/caf%C3%A9.txt",
             "/a%20b.txt", "/.hidden", "/_redirects", "/_headers", "/pre/lib.js", "/pre/page.html",
             "/pre/lib.js.br", "/gz/only.css", "/gz/only.css.gz", "/missing", "/missing.css", "/missing/deep/page",
             "/old", "/temp", "/keep", "/perm", "/blog/2024/x", "/blog/", "/u/42", "/p/2024/hello", "/spa/route/x",
             "/ext", "/gone", "/flag-old", "/flag-rewrite", "/old?x=1&y=2", "/assets/style.css?v=3", "/app/",
             "/app", "/app/deep/link"]
    for p in paths:
        ex.append((f"GET {p}", req("GET", p)))
        ex.append((f"HEAD {p}", req("HEAD", p)))
    enc = ["gzip", "br", "zstd", "br, gzip, zstd", "gzip;q=0.5, br;q=0.9", "br;q=0, gzip", "*", "identity",
           "identity;q=0", "*;q=0", "deflate", "GZIP", "x-gzip", "br;q=1.0, zstd;q=1.0", "gzip, *;q=0"]
    for p in ["/assets/app.js", "/assets/style.css", "/pre/lib.js", "/pre/page.html", "/gz/only.css", "/index.html",
              "/image.png", "/disk/huge.txt", "/data.json", "/missing", "/about"]:
        for e in enc:
            ex.append((f"GET {p} Accept-Encoding: {e}", req("GET", p, [f"Accept-Encoding: {e}"])))
    ex.append(("HEAD /pre/lib.js br", req("HEAD", "/pre/lib.js", ["Accept-Encoding: br"])))
    # Conditional requests.
    for p, tag in sorted(etags.items()):
        weak = "W/" + tag if not tag.startswith("W/") else tag
        for name, h in [
            ("If-None-Match etag", [f"If-None-Match: {tag}"]),
            ("If-None-Match weak", [f"If-None-Match: {weak}"]),
            ("If-None-Match list", [f'If-None-Match: "x", {tag}']),
            ("If-None-Match *", ["If-None-Match: *"]),
            ("If-None-Match other", ['If-None-Match: "other"']),
            ("If-Match etag", [f"If-Match: {tag}"]),
            ("If-Match other", ['If-Match: "other"']),
            ("If-Match *", ["If-Match: *"]),
            ("If-Modified-Since lm", [f"If-Modified-Since: {LAST_MODIFIED}"]),
            ("If-Modified-Since old", ["If-Modified-Since: Mon, 01 Jan 2001 00:00:00 GMT"]),
            ("If-Modified-Since bad", ["If-Modified-Since: yesterday"]),
            ("If-Unmodified-Since old", ["If-Unmodified-Since: Mon, 01 Jan 2001 00:00:00 GMT"]),
            ("If-Unmodified-Since lm", [f"If-Unmodified-Since: {LAST_MODIFIED}"]),
            ("INM + IMS", [f"If-None-Match: \"other\"", f"If-Modified-Since: {LAST_MODIFIED}"]),
            ("If-Range etag", [f"If-Range: {tag}", "Range: bytes=0-9"]),
            ("If-Range other", ['If-Range: "other"', "Range: bytes=0-9"]),
            ("If-Range date", [f"If-Range: {LAST_MODIFIED}", "Range: bytes=0-9"]),
        ]:
            ex.append((f"GET {p} {name}", req("GET", p, h)))
            ex.append((f"HEAD {p} {name}", req("HEAD", p, h)))
    # Ranges.
    for p in ["/assets/app.js", "/big.bin", "/disk/huge.bin", "/disk/huge.txt", "/empty.txt", "/pre/lib.js"]:
        for rg in ["bytes=0-9", "bytes=10-", "bytes=-10", "bytes=0-0", "bytes=5-4", "bytes=0-9,20-29",
                   "bytes=99999999-", "bytes=-0", "bytes=abc", "items=0-9", "bytes=0-99999999", "bytes= 0-9",
                   "bytes=1-1"]:
            ex.append((f"GET {p} Range: {rg}", req("GET", p, [f"Range: {rg}"])))
        ex.append((f"GET {p} Range + br", req("GET", p, ["Range: bytes=0-9", "Accept-Encoding: br, gzip"])))
        ex.append((f"HEAD {p} Range", req("HEAD", p, ["Range: bytes=0-9"])))
    # CORS and OPTIONS.
    for p in ["/fonts/font.woff2", "/api/list.json", "/index.html", "/missing"]:
        for o in ["https://a.example", "https://b.example", "null"]:
            ex.append((f"GET {p} Origin {o}", req("GET", p, [f"Origin: {o}"])))
            for m, hdrs in [("GET", []), ("HEAD", []), ("PUT", []), ("GET", ["Access-Control-Request-Headers: X-Token"]),
                            ("GET", ["Access-Control-Request-Headers: X-Other, X-Token"])]:
                ex.append((f"OPTIONS {p} preflight {o} {m} {hdrs}",
                           req("OPTIONS", p, [f"Origin: {o}", f"Access-Control-Request-Method: {m}"] + hdrs)))
        ex.append((f"OPTIONS {p}", req("OPTIONS", p)))
        ex.append((f"OPTIONS {p} Origin only", req("OPTIONS", p, ["Origin: https://a.example"])))
    ex.append(("OPTIONS *", req("OPTIONS", "*")))
    ex.append(("GET *", req("GET", "*")))
    # Methods.
    for m in ["POST", "PUT", "DELETE", "PATCH", "TRACE", "FOO", "get", "PROPFIND", "CONNECT"]:
        for p in ["/", "/index.html", "/docs/x", "/missing"]:
            ex.append((f"{m} {p}", req(m, p)))
    ex.append(("CONNECT authority", req("CONNECT", "example.test:443")))
    ex.append(("POST with body", req("POST", "/", ["Content-Length: 5"], body=b"hello")))
    # Bad paths and targets.
    for p in ["/../etc/passwd", "/%2e%2e/etc/passwd", "/a/../about.html", "/./about.html", "//about.html",
              "/docs//guide.html", "/%00", "/a%2fb", "/%zz", "/%", "/about.html%00", "/docs/%2e%2e/about.html",
              "/\x7f", "relative", "http://example.test/about.html", "http://other.example/", "/" + "a" * 9000,
              "/" + "a/" * 300, "/index.html#frag", "/?", "/%E2%82%AC", "/caf\xe9.txt"]:
        ex.append((f"GET {p[:60]!r}", req("GET", p)))
    # Versions, hosts and heads.
    ex.append(("HTTP/1.0 no Host", req("GET", "/", version="HTTP/1.0", host=False)))
    ex.append(("HTTP/1.0 keep-alive", req("GET", "/about", ["Connection: keep-alive"], version="HTTP/1.0")))
    ex.append(("HTTP/1.1 no Host", req("GET", "/", host=False)))
    ex.append(("two Hosts", req("GET", "/", ["Host: other.example"])))
    ex.append(("empty Host", b"GET / HTTP/1.1\r\nHost:\r\n\r\n"))
    ex.append(("HTTP/2.0 in h1", req("GET", "/", version="HTTP/2.0")))
    ex.append(("HTTP/1.2", req("GET", "/", version="HTTP/1.2")))
    ex.append(("HTTP/3.0", req("GET", "/", version="HTTP/3.0")))
    ex.append(("lowercase version", req("GET", "/", version="http/1.1")))
    ex.append(("no version", b"GET /\r\n\r\n"))
    ex.append(("bare LF", b"GET / HTTP/1.1\nHost: example.test\n\n"))
    ex.append(("obs-fold", req("GET", "/", ["X-A: 1", " folded"])))
    ex.append(("space before colon", req("GET", "/", ["X-A : 1"])))
    ex.append(("no colon", req("GET", "/", ["NoColon"])))
    ex.append(("CL and TE", req("POST", "/", ["Content-Length: 5", "Transfer-Encoding: chunked"], body=b"0\r\n\r\n")))
    ex.append(("TE chunked GET", req("GET", "/", ["Transfer-Encoding: chunked"], body=b"0\r\n\r\n")))
    ex.append(("two CL", req("GET", "/", ["Content-Length: 1", "Content-Length: 2"])))
    ex.append(("CL on GET", req("GET", "/", ["Content-Length: 3"], body=b"abc")))
    ex.append(("bad CL", req("GET", "/", ["Content-Length: x"])))
    ex.append(("Expect 100", req("GET", "/", ["Expect: 100-continue"])))
    ex.append(("Connection close", req("GET", "/about", ["Connection: close"])))
    ex.append(("Upgrade h2c", req("GET", "/", ["Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c",
                                               "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"])))
    ex.append(("Accept text/html missing", req("GET", "/missing/page", ["Accept: text/html,*/*;q=0.8"])))
    ex.append(("Accept json missing", req("GET", "/missing/page", ["Accept: application/json"])))
    ex.append(("Accept html asset", req("GET", "/missing.css", ["Accept: text/html"])))
    ex.append(("oversized header", req("GET", "/", ["X-Big: " + "b" * 70000])))
    ex.append(("many headers", req("GET", "/", [f"X-H{i}: {i}" for i in range(400)])))
    ex.append(("long header line", req("GET", "/", ["X-Long: " + "c" * 16000])))
    ex.append(("long request line", req("GET", "/" + "d" * 20000)))
    ex.append(("incomplete head", b"GET / HTTP/1.1\r\nHost: example.test\r\n"))
    ex.append(("garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40))
    ex.append(("empty lines first", b"\r\n\r\n" + req("GET", "/about")))
    ex.append(("NUL in header", req("GET", "/", ["X-A: a\x00b"])))
    ex.append(("tab in value", req("GET", "/", ["X-A: a\tb"])))
    # Pipelined: several requests in one write, answered in order on one connection.
    ex.append(("pipelined 3", req("GET", "/about") + req("HEAD", "/assets/app.js") + req("GET", "/missing")))
    ex.append(("pipelined then bad", req("GET", "/about") + b"BAD\r\n\r\n" + req("GET", "/")))
    ex.append(("pipelined close", req("GET", "/", ["Connection: close"]) + req("GET", "/about")))
    ex.append(("pipelined ranges", b"".join(req("GET", "/big.bin", [f"Range: bytes={i}-{i + 3}"]) for i in range(5))))
    ex.append(("pipelined disk", req("GET", "/disk/huge.bin") + req("GET", "/disk/huge.txt",
                                                                       ["Accept-Encoding: gzip"])))
    return ex


def h2_exchanges(etags):
    """(name, curl arguments) for HTTP/2 with prior knowledge."""
    ex = []
    paths = ["/", "/about", "/about.html", "/about/", "/docs", "/docs/", "/docs/guide", "/docs/nope",
             "/assets/style.css", "/assets/app.js", "/data.json", "/image.png", "/big.bin", "/disk/huge.bin",
             "/disk/huge.txt", "/empty.txt", "/caf%C3%A9.txt", "/.hidden", "/_redirects", "/pre/lib.js",
             "/gz/only.css", "/missing", "/missing.css", "/old", "/blog/2024/x", "/u/42", "/p/2024/hello",
             "/spa/route/x", "/ext", "/gone", "/flag-old", "/flag-rewrite", "/old?x=1", "/app/deep/link",
             "/fonts/font.woff2", "/api/list.json"]
    for p in paths:
        ex.append((f"h2 GET {p}", [p]))
        ex.append((f"h2 HEAD {p}", ["-I", p]))
    for p in ["/assets/app.js", "/pre/lib.js", "/gz/only.css", "/disk/huge.txt", "/about"]:
        for e in ["gzip", "br", "zstd", "br, gzip, zstd", "gzip;q=0.5, br;q=0.9", "identity;q=0", "*"]:
            ex.append((f"h2 GET {p} ae {e}", ["-H", f"Accept-Encoding: {e}", p]))
    for p, tag in sorted(etags.items()):
        for name, h in [("INM", [f"If-None-Match: {tag}"]), ("IM other", ['If-Match: "other"']),
                        ("IMS", [f"If-Modified-Since: {LAST_MODIFIED}"]),
                        ("IUS old", ["If-Unmodified-Since: Mon, 01 Jan 2001 00:00:00 GMT"]),
                        ("If-Range", [f"If-Range: {tag}", "Range: bytes=0-9"]),
                        ("If-Range other", ['If-Range: "other"', "Range: bytes=0-9"])]:
            args = []
            for x in h:
                args += ["-H", x]
            ex.append((f"h2 GET {p} {name}", args + [p]))
    for p in ["/assets/app.js", "/big.bin", "/disk/huge.bin", "/empty.txt"]:
        for rg in ["bytes=0-9", "bytes=-10", "bytes=10-", "bytes=99999999-", "bytes=0-9,20-29", "bytes=abc"]:
            ex.append((f"h2 GET {p} Range {rg}", ["-H", f"Range: {rg}", p]))
    for p in ["/fonts/font.woff2", "/api/list.json", "/index.html"]:
        for o in ["https://a.example", "https://b.example"]:
            ex.append((f"h2 GET {p} Origin {o}", ["-H", f"Origin: {o}", p]))
            ex.append((f"h2 OPTIONS {p} preflight {o}", ["-X", "OPTIONS", "-H", f"Origin: {o}", "-H",
                                                         "Access-Control-Request-Method: GET", "-H",
                                                         "Access-Control-Request-Headers: X-Token", p]))
        ex.append((f"h2 OPTIONS {p}", ["-X", "OPTIONS", p]))
    ex.append(("h2 OPTIONS *", ["-X", "OPTIONS", "--request-target", "*", "/"]))
    for m in ["POST", "PUT", "DELETE", "PATCH", "TRACE", "FOO"]:
        for p in ["/", "/docs/x"]:
            ex.append((f"h2 {m} {p}", ["-X", m, p]))
    for p in ["/../etc/passwd", "/%2e%2e/x", "//about.html", "/a/../about.html", "/%00", "/%zz", "/a%2fb",
              "/" + "a" * 9000, "relative"]:
        ex.append((f"h2 GET target {p[:40]!r}", ["--request-target", p, "/"]))
    ex.append(("h2 Accept html missing", ["-H", "Accept: text/html", "/missing/page"]))
    ex.append(("h2 big header", ["-H", "X-Big: " + "b" * 70000, "/"]))
    ex.append(("h2 many headers", sum((["-H", f"X-H{i}: {i}"] for i in range(300)), []) + ["/"]))
    return ex


def h1_send(port, data, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = []
    try:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            # The server closed first (it answered a bad head and stopped reading): what it sent is still read.
            # Not recorded: whether the close beats the last bytes sent is a race, not an answer.
            pass
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                out.append(b"<connection reset>")
                break
            if not b:
                break
            out.append(b)
        return b"".join(out)
    except socket.timeout:
        return b"".join(out) + b"<timeout>"
    finally:
        s.close()


CURL_MODES = {
    # h2c with prior knowledge on the plain port.
    "h2": ["--http2-prior-knowledge"],
    # Over TLS (the generated self-signed certificate, not verified), ALPN h2 or http/1.1.
    "h2tls": ["--http2", "-k"],
    "h1tls": ["--http1.1", "-k"],
}


def curl_send(server, args, mode):
    *opts, path = args
    port = server.tls_port if mode.endswith("tls") else server.port
    url = f"https://{HOST}:{port}{path}" if mode.endswith("tls") else f"http://127.0.0.1:{port}{path}"
    argv = ["curl", "-s", "-S", "-i", "--path-as-is", "-g", "--max-time", "15", "-H", f"Host: {HOST}",
            "--resolve", f"{HOST}:{port}:127.0.0.1"] + CURL_MODES[mode] + opts + [url]
    p = subprocess.run(argv, capture_output=True)
    err = re.sub(rb"(127\.0\.0\.1|%s):\d+" % HOST.encode(), rb"\1:PORT", p.stderr)
    err = re.sub(rb"port \d+", b"port PORT", err)
    return p.stdout + b"\n--- curl exit %d; stderr: " % p.returncode + err


DATE_RE = re.compile(rb"(?im)^(date:)[ \t]*[^\r\n]*")


def mask(b):
    return DATE_RE.sub(rb"\1 <masked>", b)


def show(b, limit=4000):
    """A response as text lines for a diff: printable bytes as they are, others escaped, long bodies cut."""
    s = b[:limit].decode("latin-1")
    s = "".join(c if (c in "\r\n\t" or 32 <= ord(c) < 127) else f"\\x{ord(c):02x}" for c in s)
    lines = s.replace("\r\n", "\\r\n").split("\n")
    if len(b) > limit:
        lines.append(f"... ({len(b)} bytes in all)")
    return lines


def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def etags_of(server):
    """Validators of a few files, read from the old server (over TLS when it has it: the plain port may only
    redirect)."""
    out = {}
    for p in ["/assets/app.js", "/disk/huge.bin", "/about", "/pre/lib.js"]:
        r = curl_send(server, [p], "h1tls") if server.tls_port else h1_send(server.port, req("GET", p))
        m = re.search(rb"(?im)^etag:[ \t]*([^\r\n]*)", r)
        if m:
            out[p] = m.group(1).decode()
    return out


def run_pass(name, protos, flags_old, flags_new, args, root, workdir):
    import difflib
    print(f"== pass {name}")
    print(f"   old: {args.old} {' '.join(flags_old)}")
    print(f"   new: {args.new} {' '.join(flags_new)}")
    old = Server(f"old-{name}", args.old, root, flags_old, workdir)
    new = Server(f"new-{name}", args.new, root, flags_new, workdir)
    try:
        for s in (old, new):
            s.wait_listening()
        if "--compress=true" in flags_old or "--compress=true" in flags_new:
            t0 = time.time()
            for s in (old, new):
                s.wait_encoded(args.encode_timeout)
            print(f"   both report hyperstatic_content_encodings_pending 0 ({time.time() - t0:.1f} s)")
        etags = etags_of(old)
        exchanges = [("h1", n, d) for n, d in h1_exchanges(etags)] if "h1" in protos else []
        for mode in ("h2", "h2tls", "h1tls"):
            if args.h2 and mode in protos:
                exchanges += [(mode, n, d) for n, d in h2_exchanges(etags)]
        diffs = 0
        statuses = {}
        dump = os.path.join(workdir, f"responses-{name}")
        if args.dump:
            os.makedirs(dump, exist_ok=True)
        for i, (proto, n, data) in enumerate(exchanges):
            if proto == "h1":
                a, b = h1_send(old.port, data), h1_send(new.port, data)
            else:
                a, b = curl_send(old, data, proto), curl_send(new, data, proto)
            for st in re.findall(rb"(?m)^HTTP/[0-9.]+ (\d{3})", a):
                statuses[st.decode()] = statuses.get(st.decode(), 0) + 1
            if args.dump:
                with open(os.path.join(dump, f"{i:04d}-{proto}.txt"), "wb") as f:
                    f.write(n.encode("utf-8", "replace") + b"\n" + (data if proto == "h1" else repr(data).encode())
                            + b"\n=====\n" + a)
            ma, mb = mask(a), mask(b)
            if ma != mb:
                diffs += 1
                at = first_diff(ma, mb)
                print(f"-- DIFFERENT [{proto}] {n}: old {len(a)} bytes, new {len(b)} bytes, first difference at byte {at}")
                for line in difflib.unified_diff(show(ma), show(mb), "old", "new", lineterm="", n=2):
                    print("   " + line)
        kinds = {"h1": "raw HTTP/1.1", "h2": "h2c", "h2tls": "HTTP/2 over TLS", "h1tls": "HTTP/1.1 over TLS"}
        counts = ", ".join(f"{sum(1 for e in exchanges if e[0] == k)} {v}" for k, v in kinds.items()
                           if any(e[0] == k for e in exchanges))
        print(f"   pass {name}: {len(exchanges)} exchanges ({counts}), {diffs} differing")
        print("   statuses the old binary answered: " + ", ".join(f"{k} x{v}" for k, v in sorted(statuses.items())))
        for s in (old, new):
            if s.proc.poll() is not None:
                print(f"   {s.name} exited during the pass ({s.proc.returncode}): counted as a difference")
                diffs += 1
        return len(exchanges), diffs
    finally:
        old.stop()
        new.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--old", required=True, help="the reference binary (e.g. main's)")
    ap.add_argument("--new", required=True, help="the binary under test")
    ap.add_argument("--flag", action="append", default=[], help="extra flag for both binaries (repeatable)")
    ap.add_argument("--old-flag", action="append", default=[], help="extra flag for the old binary only")
    ap.add_argument("--new-flag", action="append", default=[], help="extra flag for the new binary only")
    ap.add_argument("--site-flags-to", choices=["both", "old", "new", "none"], default="both",
                    help="which binaries get the site's rule flags (default both)")
    ap.add_argument("--pass", dest="passes", action="append", choices=[p[0] for p in PASSES],
                    help="run only this pass (repeatable; default all)")
    ap.add_argument("--no-h2", dest="h2", action="store_false", help="HTTP/1.1 exchanges only")
    ap.add_argument("--workdir", help="where the site and the logs go (default: a new temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--dump", action="store_true", help="write each request and the old binary's answer to "
                    "WORKDIR/responses-PASS/ (implies --keep)")
    ap.add_argument("--encode-timeout", type=float, default=300, help="seconds to wait for the encoders")
    args = ap.parse_args()
    for b in (args.old, args.new):
        if not os.access(b, os.X_OK):
            ap.error(f"{b}: not an executable")
    if args.h2 and not shutil.which("curl"):
        print("curl not found: HTTP/2 exchanges skipped (--no-h2 to say so explicitly)")
        args.h2 = False
    workdir = args.workdir or tempfile.mkdtemp(prefix="compare-answers-")
    os.makedirs(workdir, exist_ok=True)
    root = os.path.join(workdir, "site")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    make_site(root, args.old)
    cert, key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
    have_tls = shutil.which("openssl") and args.h2 and subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
         "-out", cert, "-days", "30", "-subj", f"/CN={HOST}", "-addext", f"subjectAltName=DNS:{HOST}"],
        capture_output=True).returncode == 0
    total = differing = 0
    try:
        for name, pass_flags, protos in PASSES:
            if args.passes and name not in args.passes:
                continue
            if name == "tls" and not have_tls:
                print("== pass tls skipped: needs openssl (to make a certificate) and curl")
                continue
            pass_flags = [f.format(cert=cert, key=key) for f in pass_flags]
            site = SITE_FLAGS + [f for f in pass_flags if f.startswith("--spa")]
            proc = [f for f in pass_flags if not f.startswith("--spa")]  # process settings: both, always
            with open(os.path.join(workdir, f"site-flags-{name}.txt"), "w") as f:
                f.write("\n".join(site) + "\n")
            each = [f.replace("{pass}", name) for f in args.flag]
            fo = proc + (site if args.site_flags_to in ("both", "old") else []) + each + \
                [f.replace("{pass}", name) for f in args.old_flag]
            fn = proc + (site if args.site_flags_to in ("both", "new") else []) + each + \
                [f.replace("{pass}", name) for f in args.new_flag]
            try:
                n, d = run_pass(name, protos, fo, fn, args, root, workdir)
            except RuntimeError as e:
                print(f"compare-answers: {e}")
                return 2
            total, differing = total + n, differing + d
    finally:
        if not args.keep and not args.dump and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"work directory kept: {workdir}")
    print(f"compare-answers: {total} exchanges, {differing} differing")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
