"""Unit tests of the HTTPS rows' parts (run: make bench-test): the TLS configuration each server gets, workload
selection, the s_client and tlsload parsers and checks, and, against a real TLS server in this process, the
certificate, the pre-timing check (suite, resumption, bytes) and the Go load client's handshake counting."""
import http.server
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
import unittest

from hsbench import load, report, servers, tls, tlsload
from hsbench.cgroup import CpuQuota
from hsbench.workloads import WORKLOADS, select

S_CLIENT_NEW = """CONNECTED(00000003)
---
No client certificate CA names sent
Peer signing digest: SHA256
Peer signature type: ECDSA
Server Temp Key: X25519, 253 bits
---
SSL handshake has read 1040 bytes and written 311 bytes
Verification error: self-signed certificate
---
New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256
Server public key is 256 bit
ALPN protocol: http/1.1
Early data was not sent
"""

TLSLOAD_OUT = """requests 4200
seconds 5.002
rps 839.7
errors 1
non2xx 0
handshakes_full 4201
handshakes_resumed 0
bytes_read 420000
p50_ms 110.500
p99_ms 250.250
suite TLS 1.3 TLS_AES_128_GCM_SHA256 4201
first_error read: EOF
primer_handshakes_full 100
primer_handshakes_resumed 0
"""

WANT = "TLS 1.3 " + tls.CIPHER


class SClientParse(unittest.TestCase):
    def test_new_and_reused(self):
        h = tls.parse_s_client(S_CLIENT_NEW)
        self.assertEqual((h.outcome, h.protocol, h.cipher, h.alpn), ("New", "TLSv1.3", tls.CIPHER, "http/1.1"))
        r = tls.parse_s_client(S_CLIENT_NEW.replace("New, TLSv1.3", "Reused, TLSv1.3").replace("ALPN protocol: "
                                                                                            "http/1.1\n", ""))
        self.assertEqual((r.outcome, r.alpn), ("Reused", ""))

    def test_no_session_is_an_error(self):
        with self.assertRaises(ValueError):
            tls.parse_s_client("CONNECTED(00000003)\n4007:error:0A000410:SSL routines::sslv3 alert handshake failure\n")


class TlsloadParse(unittest.TestCase):
    def test_fields(self):
        r = tlsload.parse(TLSLOAD_OUT, 1.5)
        self.assertEqual((r.requests, r.errors, r.full, r.resumed), (4200, 1, 4201, 0))
        self.assertEqual((r.primer_full, r.primer_resumed), (100, 0))
        self.assertAlmostEqual(r.rps, 839.7)
        self.assertAlmostEqual(r.p99_ms, 250.25)
        self.assertEqual(r.suites, {WANT: 4201})
        self.assertEqual(r.first_error, "read: EOF")
        self.assertEqual(r.client_cpu_s, 1.5)

    def test_truncated_output_is_an_error(self):
        with self.assertRaises(ValueError):
            tlsload.parse("requests 5\nseconds 1.0\n")

    def test_problems(self):
        full = tlsload.parse(TLSLOAD_OUT)
        self.assertEqual(tlsload.problems(full, resume=False, want_suite=WANT), [])
        self.assertIn("were full in the resumed row", tlsload.problems(full, resume=True, want_suite=WANT)[0])
        mixed = tlsload.parse(TLSLOAD_OUT.replace("handshakes_resumed 0", "handshakes_resumed 3"))
        self.assertIn("3 of 4204 handshakes resumed", tlsload.problems(mixed, resume=False, want_suite=WANT)[0])
        resumed = tlsload.parse(TLSLOAD_OUT.replace("handshakes_full 4201", "handshakes_full 40")
                                .replace("handshakes_resumed 0", "handshakes_resumed 4161"))
        self.assertEqual(tlsload.problems(resumed, resume=True, want_suite=WANT), [])  # under 1% full
        other = tlsload.parse(TLSLOAD_OUT.replace("TLS_AES_128_GCM_SHA256 4201",
                                                  "TLS_AES_128_GCM_SHA256 4000\nsuite TLS 1.3 TLS_AES_256_GCM_SHA384 201"))
        self.assertIn("TLS_AES_256_GCM_SHA384", tlsload.problems(other, resume=False, want_suite=WANT)[0])
        none = tlsload.parse(TLSLOAD_OUT.replace("handshakes_full 4201", "handshakes_full 0"))
        self.assertIn("no handshake completed", tlsload.problems(none, resume=False, want_suite=WANT)[0])

    def test_argv(self):
        self.assertEqual(tlsload.argv_for("/b/tlsload", 443, "/100.html", 100, 5.0, resume=True),
                         ["/b/tlsload", "-addr", "127.0.0.1:443", "-path", "/100.html", "-c", "100", "-d", "5s",
                          "-resume"])
        self.assertNotIn("-resume", tlsload.argv_for("/b/tlsload", 443, "/", 1, 1, resume=False))


class CounterCrossCheck(unittest.TestCase):
    def test_server_counters_must_match_the_client(self):
        clean = tlsload.parse(TLSLOAD_OUT.replace("errors 1", "errors 0"))  # 4201 + 100 full, 0 resumed
        self.assertEqual(load.counter_disagreement((10, 5), (4311, 5), clean), [])
        self.assertIn("server counted (full, resumed) handshakes (4201, 0), the client (4301, 0)",
                      load.counter_disagreement((10, 5), (4211, 5), clean)[0])
        self.assertIn("(4301, 7)", load.counter_disagreement((10, 5), (4311, 12), clean)[0])
        # with errors a connection may have failed before or after its handshake: no exact count to compare
        self.assertEqual(load.counter_disagreement((0, 0), (1, 1), tlsload.parse(TLSLOAD_OUT)), [])


class TlsWorkloads(unittest.TestCase):
    KEYS = ["tls-100b-c100", "tls-8k-set", "tls-new-full", "tls-new-resumed"]

    def test_select_and_kinds(self):
        ws = select(",".join(self.KEYS))
        self.assertEqual([w.key for w in ws], self.KEYS)
        self.assertTrue(all(w.tls and not w.floor and w.target == 1.0 for w in ws))  # no TLS in floor.c
        self.assertEqual([w.client for w in ws], ["wrk", "wrk", "tlsload", "tlsload"])
        self.assertEqual([w.resume for w in ws], [False, False, False, True])
        self.assertTrue(set(self.KEYS) <= {w.key for w in select("")})  # make bench-server runs them by default

    def test_url(self):
        s = servers.Floor.__new__(servers.Floor)
        s.port, s.tls_port = 8080, 8443
        by_key = {w.key: w for w in WORKLOADS}
        self.assertEqual(load.url(s, by_key["tls-100b-c100"]), "https://127.0.0.1:8443/100.html")
        self.assertEqual(load.url(s, by_key["100b-c100"]), "http://127.0.0.1:8080/100.html")


class TlsConfigs(unittest.TestCase):
    """tls.attach: every server gets the same certificate, protocol and suite, each in its own syntax."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.setup = tls.Setup(cert="/t/cert.pem", key="/t/key.pem", openssl_conf="/t/openssl-tls.cnf")

    def _kw(self, name):
        return dict(root="/srv/site", port=12345, cpu=0, quota=CpuQuota("hs-bench-unused", 40),
                    workdir=os.path.join(self.dir, name))

    def test_every_server(self):
        ours = servers.Hyperstatic(binary="/b/hs", admin_port=1, extra_args=["--x"], **self._kw("o"))
        ngx, lt, h2o = servers.Nginx(**self._kw("n")), servers.Lighttpd(**self._kw("l")), servers.H2O(**self._kw("h"))
        caddy = servers.Caddy(file_server_extra="\t\tprecompressed br gzip", **self._kw("c"))
        tls.attach([ours, ngx, lt, h2o, caddy], self.setup)
        ports = {s.tls_port for s in (ours, ngx, lt, h2o, caddy)}
        self.assertEqual(len(ports), 5)
        self.assertNotIn(12345, ports)
        self.assertEqual(ours.extra_args, ["--x", "--tls-cert", "/t/cert.pem", "--tls-key", "/t/key.pem",
                                           "--tls-listen", f"127.0.0.1:{ours.tls_port}"])
        # every peer offers h2 on its TLS port (the HTTP/2 rows), each its own way
        self.assertIn(f"listen 127.0.0.1:{ngx.tls_port} ssl http2 reuseport", ngx.http_extra)
        for line in ("ssl_protocols TLSv1.3;", f"ssl_conf_command Ciphersuites {tls.CIPHER};",
                     "ssl_session_tickets on;", "ssl_session_cache shared:SSL:10m;", "ssl_certificate /t/cert.pem;"):
            self.assertIn(line, ngx.http_extra)
        conf = lt.config(65536)
        self.assertIn(f'$SERVER["socket"] == "127.0.0.1:{lt.tls_port}"', conf)
        self.assertIn(f'"MinProtocol" => "TLSv1.3", "Ciphersuites" => "{tls.CIPHER}"', conf)
        self.assertIn('server.modules += ("mod_openssl")', conf)
        self.assertNotIn('"server.h2proto" => "disable"', conf)  # lighttpd's h2 is on by default (1.4.59+)
        conf = h2o.config(65536)
        self.assertIn(f"port: {h2o.tls_port}\n  ssl:\n    certificate-file: /t/cert.pem", conf)
        self.assertIn("minimum-version: TLSv1.3", conf)
        self.assertIn("ssl-session-resumption:\n  mode: all", conf)
        self.assertEqual(h2o.extra_env, {"OPENSSL_CONF": "/t/openssl-tls.cnf"})
        self.assertEqual(ngx.extra_env, {})
        conf = caddy.config()
        self.assertIn("protocols h1 h2\n", conf)
        self.assertIn(f"https://:{caddy.tls_port} {{\n\tbind 127.0.0.1\n\ttls /t/cert.pem /t/key.pem {{\n"
                      "\t\tprotocols tls1.3\n", conf)
        self.assertEqual(conf.count("precompressed br gzip"), 2)  # the plain site and the HTTPS one
        for line in ("admin off", "auto_https off", "persist_config off"):
            self.assertIn(line, conf)
        self.assertNotIn("\tlog", conf)
        for text in (ngx.http_extra, lt.config(65536), h2o.config(65536), conf):
            self.assertNotIn("${", text)

    def test_floor_gets_none(self):
        f = servers.Floor.__new__(servers.Floor)
        f.name = "floor"
        tls.attach([f], self.setup)
        self.assertIsNone(f.tls_port)

    def test_openssl_conf(self):
        text = servers.render_template("openssl-tls.cnf.in", cipher=tls.CIPHER)
        self.assertIn("MinProtocol = TLSv1.3\nCiphersuites = TLS_AES_128_GCM_SHA256\n", text)


class TlsNote(unittest.TestCase):
    def test_in_markdown(self):
        meta = {"server_cpu": 0, "client_cpu": 1, "cpu_quota_percent": 40, "reps": 1, "seconds": 5,
                "idle_conns": 0, "content_bytes": 1, "date": "today",
                "tls": {"protocol": "TLSv1.3", "cipher": tls.CIPHER, "certificate": "ECDSA P-256",
                        "servers": {"ours": {"cipher_unforced_client": "TLS_AES_256_GCM_SHA384"},
                                    "nginx": {"cipher_unforced_client": tls.CIPHER}}}}
        md = report.markdown([], {}, meta, ["ours", "nginx"])
        self.assertIn("HTTPS rows: TLSv1.3 with TLS_AES_128_GCM_SHA256 for every server", md)
        self.assertIn("ours TLS_AES_256_GCM_SHA384, nginx TLS_AES_128_GCM_SHA256", md)
        self.assertNotIn("HTTPS rows", report.markdown([], {}, {**meta, "tls": None}, ["ours", "nginx"]))


class _Files(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection, then close
    files: dict[str, bytes] = {}

    def do_GET(self):
        body = self.files.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args):
        pass


class RealTls(unittest.TestCase):
    """A real TLS 1.3 server (Python's ssl, OpenSSL underneath: stateless tickets on) with the harness's own
    certificate: the check before timing, and the Go client's full vs resumed handshakes."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.setup = tls.setup(cls.dir)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.load_cert_chain(cls.setup.cert, cls.setup.key)
        ctx.set_alpn_protocols(["http/1.1"])
        handler = type("H", (_Files,), {"files": {"/100.html": b"x" * 100}})
        cls.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        cls.httpd.socket = ctx.wrap_socket(cls.httpd.socket, server_side=True)
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()
        cls.port = cls.httpd.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.httpd.shutdown()
        cls.httpd.server_close()
        shutil.rmtree(cls.dir)

    def _server(self):
        s = servers.Floor.__new__(servers.Floor)  # only what check() asks: name, tls_port, alive, log_tail
        s.name, s.tls_port = "py", self.port
        s.alive, s.log_tail = (lambda: True), (lambda: "")
        return s

    def test_certificate_is_ecdsa_p256_for_127_0_0_1(self):
        text = subprocess.run(["openssl", "x509", "-in", self.setup.cert, "-noout", "-text"], capture_output=True,
                              text=True, check=True).stdout
        self.assertIn("ASN1 OID: prime256v1", text)
        self.assertIn("IP Address:127.0.0.1", text)

    def test_check_passes_and_sees_resumption(self):
        c = tls.check(self._server(), self.setup, {"/100.html": b"x" * 100})
        self.assertEqual((c["protocol"], c["cipher"], c["alpn"], c["resumed"]),
                         ("TLSv1.3", tls.CIPHER, "http/1.1", "Reused"))
        # OpenSSL's server follows the client's order by default: offered AES-256 first, it takes that
        self.assertEqual(c["cipher_unforced_client"], "TLS_AES_256_GCM_SHA384")

    def test_check_rejects_wrong_bytes(self):
        with self.assertRaisesRegex(RuntimeError, "HTTPS GET /100.html -> 200, 100 bytes"):
            tls.check(self._server(), self.setup, {"/100.html": b"y" * 100})

    def test_tlsload_counts_full_and_resumed(self):
        if tlsload.go_binary() is None:
            self.fail("go not found: make bench-test needs it for the HTTPS load client")
        binary = tlsload.build(self.dir)
        for resume in (False, True):
            out = subprocess.run(tlsload.argv_for(binary, self.port, "/100.html", 2, 1, resume),
                                 capture_output=True, text=True, check=True).stdout
            r = tlsload.parse(out)
            self.assertGreater(r.requests, 0, out)
            self.assertEqual(r.errors, 0, out)
            self.assertEqual(r.bytes_read, 100 * r.requests)
            self.assertEqual(r.resumed if resume else r.full, r.full + r.resumed, out)
            # Python's server prefers its own order (AES-256 first) and Go cannot narrow TLS 1.3 suites: the
            # client reports what was negotiated and the check refuses it; the kind of handshake is right
            self.assertEqual(r.suites, {"TLS 1.3 TLS_AES_256_GCM_SHA384": r.full + r.resumed}, out)
            self.assertEqual(len(tlsload.problems(r, resume, WANT)), 1, out)
            self.assertIn("want only 'TLS 1.3 TLS_AES_128_GCM_SHA256'", tlsload.problems(r, resume, WANT)[0])


if __name__ == "__main__":
    unittest.main()
