"""Unit tests of the HTTP/3 rows' pure parts (run: make bench-test): h3load's summary parser, the pre-timing and
per-run checks, its argv, which servers the h3 rows run on (enable_h3: ours with --http3, Caddy with protocols h3,
nginx-1.26 with a quic listener, no other peer), and the rows themselves."""
import json
import os
import tempfile
import unittest

from hsbench import h3load, servers
from hsbench.workloads import H3_KEYS, select

SUMMARY = {"requests": 1000, "errors": 0, "status2xx": 1000, "status3xx": 0, "status4xx": 0, "status5xx": 0,
           "bodyBytes": 100000, "seconds": 2.0, "connections": 10, "userCPUSeconds": 1.5, "systemCPUSeconds": 0.4}


class Parse(unittest.TestCase):
    def test_summary(self):
        r = h3load.parse("some log line\n" + json.dumps(SUMMARY) + "\n", client_cpu_s=1.9)
        self.assertEqual((r.requests, r.errors, r.non2xx, r.body_bytes, r.connections), (1000, 0, 0, 100000, 10))
        self.assertEqual(r.status, {"2xx": 1000, "3xx": 0, "4xx": 0, "5xx": 0})
        self.assertAlmostEqual(r.rps, 500.0)
        self.assertEqual(r.client_cpu_s, 1.9)

    def test_no_summary(self):
        with self.assertRaises(ValueError):
            h3load.parse("h3load: -ca-pem holds no certificate\n")


class Problems(unittest.TestCase):
    def test_clean_and_exact(self):
        r = h3load.parse(json.dumps(SUMMARY))
        self.assertEqual(h3load.problems(r), [])
        self.assertEqual(h3load.problems(r, want_requests=1000, want_data=100000), [])

    def test_each_fault_named(self):
        bad = dict(SUMMARY, errors=3, firstError="timeout: no recent network activity", status4xx=2, status2xx=998)
        got = h3load.problems(h3load.parse(json.dumps(bad)), want_requests=1000, want_data=99999)
        self.assertEqual(len(got), 3, got)
        self.assertIn("3 requests failed (first: timeout: no recent network activity)", got[0])
        self.assertIn("not all 2xx", got[1])
        self.assertIn("100000 body bytes, want 99999", got[2])
        self.assertEqual(h3load.problems(h3load.parse(json.dumps(dict(SUMMARY, requests=0)))), ["no request completed"])


class Argv(unittest.TestCase):
    def test_timing_and_new_connections(self):
        self.assertEqual(h3load.argv_for("/h3load", "/ca.pem", "https://127.0.0.1:8443/100.html", 10, 10, seconds=7.5,
                                         per_conn=10),
                         ["/h3load", "-ca-pem", "/ca.pem", "-c", "10", "-m", "10", "-D", "7s", "-new-conn-every", "10",
                          "https://127.0.0.1:8443/100.html"])

    def test_count_mode_with_uris(self):
        self.assertEqual(h3load.argv_for("/h3load", "/ca.pem", "https://127.0.0.1:8443/", 1, 1, requests=1000,
                                         uri_file="/u.txt"),
                         ["/h3load", "-ca-pem", "/ca.pem", "-c", "1", "-m", "1", "-n", "1000", "-i", "/u.txt",
                          "https://127.0.0.1:8443/"])


class Servers(unittest.TestCase):
    def test_enable_h3(self):
        kw = lambda n: dict(root="/r", port=1, cpu=0, quota=None, workdir=os.path.join(tempfile.mkdtemp(), n))
        ours = servers.Hyperstatic(binary="/b", admin_port=2, extra_args=["--x"], **kw("o"))
        ngx, lt, h2o, caddy = (servers.Nginx(**kw("n")), servers.Lighttpd(**kw("l")), servers.H2O(**kw("h")),
                               servers.Caddy(**kw("c")))
        self.assertIn("protocols h1 h2\n", caddy.config())
        self.assertEqual(servers.enable_h3([ours, ngx, lt, h2o, caddy]), ["hyperstatic", "caddy"])
        self.assertEqual(ours.extra_args, ["--x", "--http3"])
        self.assertIn("protocols h1 h2 h3\n", caddy.config())
        servers.enable_h2c([caddy])
        self.assertIn("protocols h1 h2 h2c h3\n", caddy.config())

    def test_nginx_126_serves_h3_through_its_tree(self):
        """nginx-1.26 (Debian 13) is an h3 server; in the h3 rows tls.attach gives it a quic listener of its own
        next to the TCP one, and it runs from the tree's loader, not the host's."""
        from hsbench import tls
        kw = dict(root="/r", port=1, cpu=0, quota=None, workdir=os.path.join(tempfile.mkdtemp(), "n126"))
        ngx126, ngx = servers.NginxTrixie(**kw), servers.Nginx(**{**kw, "workdir": kw["workdir"] + "-old"})
        self.assertEqual(servers.enable_h3([ngx, ngx126]), ["nginx-1.26"])
        tls.attach([ngx, ngx126], tls.Setup(cert="/c.pem", key="/k.pem", openssl_conf="/o.cnf"))
        self.assertIn(f"listen 127.0.0.1:{ngx126.tls_port} quic reuseport;", ngx126.http_extra)
        self.assertIn("http3 on;", ngx126.http_extra)
        self.assertIn(f"listen 127.0.0.1:{ngx126.tls_port} ssl", ngx126.http_extra)
        self.assertNotIn("quic", ngx.http_extra)
        argv = ngx126.argv()
        self.assertEqual(argv[0], os.path.join(servers.NGINX_TRIXIE, "lib64", "ld-linux-x86-64.so.2"))
        self.assertIn(os.path.join(servers.NGINX_TRIXIE, "usr/sbin/nginx"), argv)
        self.assertNotIn("${", open(ngx126.conf).read())

    def test_rows(self):
        rows = select(",".join(H3_KEYS))
        self.assertEqual([w.key for w in rows], ["h3-100b-m10", "h3-8k-set", "h3-new10"])
        self.assertTrue(all(w.tls and w.client == "h3load" and not w.floor for w in rows))
        self.assertEqual([w.per_conn for w in rows], [0, 0, 10])


if __name__ == "__main__":
    unittest.main()
