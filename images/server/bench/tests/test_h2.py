"""Unit tests of the HTTP/2 rows' pure parts (run: make bench-test): h2load's output parser (real outputs of
h2load 1.52 in tests/data, against h2o over h2c), the pre-timing and per-run checks, merging the new-connection
row's runs, h2load's argv, the URI list, the idle h2 client's frames and HPACK block, the idle-h2 table, Caddy's
version from its build info."""
import os
import socket
import tempfile
import unittest

from hsbench import browser, h2load, idle, idleh2, load, report, servers
from hsbench.workloads import H2_KEYS, select

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def _out(name: str) -> str:
    with open(os.path.join(DATA, name)) as f:
        return f.read()


class Parse(unittest.TestCase):
    def test_count_mode(self):
        r = h2load.parse(_out("h2load-count.txt"), client_cpu_s=0.5)
        self.assertEqual((r.requests, r.started, r.succeeded, r.errors), (20, 20, 20, 0))
        self.assertEqual(r.status, {"2xx": 20, "3xx": 0, "4xx": 0, "5xx": 0})
        self.assertEqual((r.data_bytes, r.header_bytes, r.bytes_read), (2000, 418, 2838.0))
        self.assertEqual(r.protocol, "h2c")
        self.assertAlmostEqual(r.seconds, 0.00103)
        self.assertAlmostEqual(r.rps, 19455.25)
        self.assertAlmostEqual(r.p50_ms, 0.066)  # the mean of "time for request"
        self.assertEqual(r.client_cpu_s, 0.5)

    def test_timing_mode(self):
        r = h2load.parse(_out("h2load-timed.txt"))
        self.assertEqual((r.requests, r.started, r.seconds), (65778, 65782, 1.0))
        self.assertEqual(r.data_bytes, 6577800)

    def test_not_found(self):
        r = h2load.parse(_out("h2load-404.txt"))
        self.assertEqual((r.requests, r.failed, r.non2xx), (3, 3, 3))

    def test_no_summary(self):
        with self.assertRaises(ValueError):
            h2load.parse("starting benchmark...\nNo protocol negotiated. Aborted\n")


class Problems(unittest.TestCase):
    def test_check_pass_exact(self):
        r = h2load.parse(_out("h2load-count.txt"))
        self.assertEqual(h2load.problems(r, want_requests=20, want_data=2000, want_protocol="h2c"), [])
        bad = h2load.problems(r, want_requests=20, want_data=2001, want_protocol="h2c")
        self.assertEqual(len(bad), 1)
        self.assertIn("2000 DATA bytes, want 2001", bad[0])
        self.assertIn("20 responses", h2load.problems(r, want_requests=21, want_protocol="h2c")[0])

    def test_protocol(self):
        r = h2load.parse(_out("h2load-count.txt"))
        self.assertEqual(h2load.problems(r), ["negotiated h2c, want h2"])
        r.protocol = ""
        self.assertEqual(h2load.problems(r), ["negotiated no protocol, want h2"])

    def test_non_2xx_and_failures(self):
        bad = h2load.problems(h2load.parse(_out("h2load-404.txt")), want_protocol="h2c")
        self.assertTrue(any("3 failed" in b for b in bad), bad)
        self.assertTrue(any("not all 2xx" in b for b in bad), bad)

    def test_timing_mode_counts_more_statuses_than_done(self):
        # -D: status codes include the warm-up's and stragglers' responses, "done" only the measured window
        r = h2load.parse(_out("h2load-timed.txt"))
        r.status["2xx"] += 70
        self.assertEqual(h2load.problems(r, want_protocol="h2c"), [])


class Merge(unittest.TestCase):
    def test_sums_runs(self):
        a, b = h2load.parse(_out("h2load-count.txt")), h2load.parse(_out("h2load-count.txt"))
        m = h2load.merge([a, b], wall_s=2.0, client_cpu_s=0.3)
        self.assertEqual((m.requests, m.data_bytes, m.runs, m.rps), (40, 4000, 2, 20.0))
        self.assertEqual(m.status["2xx"], 40)
        self.assertEqual((m.protocol, m.client_cpu_s, m.seconds), ("h2c", 0.3, 2.0))
        self.assertEqual(h2load.problems(m, want_protocol="h2c"), [])

    def test_one_bad_run_shows(self):
        m = h2load.merge([h2load.parse(_out("h2load-count.txt")), h2load.parse(_out("h2load-404.txt"))], 1.0, 0)
        self.assertEqual((m.requests, m.errors, m.non2xx), (23, 3, 3))
        self.assertTrue(h2load.problems(m, want_protocol="h2c"))


class Argv(unittest.TestCase):
    def test_timing_mode(self):
        self.assertEqual(h2load.argv_for("https://127.0.0.1:9/100.html", 100, 10, seconds=7),
                         ["h2load", "-t", "1", "-c", "100", "-m", "10", "-D", "7", "https://127.0.0.1:9/100.html"])

    def test_count_mode_with_uris_and_headers(self):
        argv = h2load.argv_for("https://127.0.0.1:9/", 1, 10, requests=1000, uri_file="/u.txt",
                               headers=["Accept-Encoding: br"])
        self.assertEqual(argv, ["h2load", "-t", "1", "-c", "1", "-m", "10", "-n", "1000",
                                "-H", "Accept-Encoding: br", "-i", "/u.txt", "-B", "https://127.0.0.1:9"])

    def test_uri_list(self):
        with tempfile.TemporaryDirectory() as d:
            paths = [f"/8k/{i:04d}.bin" for i in range(10)]
            a = h2load.read_uris(h2load.write_uris(paths, 500, os.path.join(d, "a")))
            b = h2load.read_uris(h2load.write_uris(paths, 500, os.path.join(d, "b")))
        self.assertEqual(len(a), 500)
        self.assertEqual(a, b)  # every server gets the same sequence
        self.assertTrue(set(a) <= set(paths))
        self.assertGreater(len(set(a)), 5)  # drawn at random, not one path over and over

    def test_h2_rows(self):
        rows = select(",".join(H2_KEYS))
        self.assertEqual([w.key for w in rows], ["h2-100b-m10", "h2-100b-m100", "h2-8k-set", "h2-new10",
                                                 "h2c-100b-m10", "h2c-8k-set", "h2-100b-c10", "h2-8k-c10"])
        self.assertTrue(all(w.client == "h2load" and not w.floor and w.tls != w.h2c for w in rows))
        self.assertEqual([w.streams for w in rows], [10, 100, 10, 10, 10, 10, 10, 10])
        self.assertEqual([w.connections for w in rows], [100] * 6 + [10, 10])  # the last two: the h3 rows' shape
        self.assertEqual([w.per_conn for w in rows], [0, 0, 0, 10, 0, 0, 0, 0])
        self.assertEqual([w.uris for w in rows], ["", "", "set", "", "", "set", "", "set"])
        self.assertEqual([load.h2_protocol(w) for w in rows], ["h2"] * 4 + ["h2c"] * 2 + ["h2"] * 2)

    def test_h2c_urls_use_the_plain_port(self):
        s = servers.H2O(root="/r", port=8080, cpu=0, quota=None, workdir=tempfile.mkdtemp())
        s.tls_port = 8443
        h2, h2c = select("h2-100b-m10,h2c-100b-m10")
        self.assertEqual(load.url(s, h2), "https://127.0.0.1:8443/100.html")
        self.assertEqual(load.url(s, h2c), "http://127.0.0.1:8080/100.html")

    def test_enable_h2c(self):
        kw = lambda n: dict(root="/r", port=1, cpu=0, quota=None, workdir=os.path.join(tempfile.mkdtemp(), n))
        ours = servers.Hyperstatic(binary="/b", admin_port=2, extra_args=["--x"], **kw("o"))
        ngx, lt, h2o, caddy = (servers.Nginx(**kw("n")), servers.Lighttpd(**kw("l")), servers.H2O(**kw("h")),
                               servers.Caddy(**kw("c")))
        self.assertIn("protocols h1 h2\n", caddy.config())
        self.assertIn("http1-upgrade-to-http2: OFF\n", h2o.config(1024))
        got = servers.enable_h2c([ours, ngx, lt, h2o, caddy])
        self.assertEqual(got, ["hyperstatic", "lighttpd", "h2o", "caddy"])  # nginx cannot share the port
        self.assertEqual(ours.extra_args, ["--x", "--h2c=true"])
        self.assertIn("protocols h1 h2 h2c\n", caddy.config())
        self.assertIn("http1-upgrade-to-http2: ON\n", h2o.config(1024))


class IdleH2(unittest.TestCase):
    def test_opening(self):
        buf = bytearray(idleh2.opening("/100.html", 8443, tls=True))
        self.assertTrue(buf.startswith(idleh2.PREFACE))
        del buf[:len(idleh2.PREFACE)]
        got = list(idleh2.frames(buf))
        self.assertEqual(buf, b"")
        self.assertEqual(got[0], (idleh2.SETTINGS, 0, 0, b""))
        ftype, flags, stream, block = got[1]
        self.assertEqual((ftype, flags, stream), (idleh2.HEADERS, idleh2.END_STREAM | idleh2.END_HEADERS, 1))
        # :method GET, :scheme https (static 2, 7), :path and :authority as literals with indexed names 4 and 1
        self.assertEqual(block, b"\x82\x87\x04\x09/100.html\x01\x0e127.0.0.1:8443")
        self.assertEqual(idleh2.request_block("/", "a", tls=False), b"\x82\x86\x04\x01/\x01\x01a")

    def test_feed(self):
        c = idleh2.Conn(sock=None)
        server = (idleh2.frame(idleh2.SETTINGS, 0, 0, b"\x00\x03\x00\x00\x00\x64") +
                  idleh2.frame(idleh2.HEADERS, idleh2.END_HEADERS, 1, b"\x88"))
        done, reply = c.feed(server[:5])  # a partial frame waits for the rest
        self.assertEqual((done, reply), (False, b""))
        done, reply = c.feed(server[5:])
        self.assertEqual((done, reply), (False, idleh2.frame(idleh2.SETTINGS, idleh2.ACK, 0)))
        done, reply = c.feed(idleh2.frame(idleh2.SETTINGS, idleh2.ACK, 0) +
                             idleh2.frame(idleh2.DATA, idleh2.END_STREAM, 1, b"x" * 100))
        self.assertEqual((done, reply, c.goaway), (True, b"", False))
        c.feed(idleh2.frame(idleh2.GOAWAY, 0, 0, bytes(8)))
        self.assertTrue(c.goaway)

    def test_a_server_that_stops_accepting_counts_as_failed(self):
        # lighttpd at its connection limit leaves connections in its backlog: both idle clients report them as
        # failed when their deadline passes, instead of ending the benchmark
        with socket.socket() as lsock:
            lsock.bind(("127.0.0.1", 0))
            lsock.listen(16)  # never accepted, never answered
            port = lsock.getsockname()[1]
            self.assertEqual(idle.open_idle(port, 5, "/x", deadline_s=0.3), ([], 5))
            self.assertEqual(idleh2.open_idle(port, 5, "/x", tls=False, deadline_s=0.3), ([], 5))

    def test_long_fields_refused(self):
        with self.assertRaises(ValueError):
            idleh2.request_block("/" + "x" * 200, "a", tls=True)


class Report(unittest.TestCase):
    def test_idle_h2_table(self):
        meta = {"idle_conns": 1000}
        row = {"rss_before": 10_000_000, "rss_idle": 30_480_000, "conns_alive": 1000, "conns_wanted": 1000}
        lines = report.idle_h2_table({"h2o": row}, meta, ["hyperstatic", "h2o"])
        self.assertIn("idle h2 connections (TLS)", lines[1])
        self.assertEqual(lines[-1], "| h2o | 10.0 MB | 30.5 MB | 20.00 KiB | 1,000 of 1,000 |")
        self.assertEqual(report.idle_h2_table({}, meta, ["h2o"]), [])
        plain = report.idle_h2_table({"h2o": row}, meta, ["h2o"], "h2c connections (plain port)")
        self.assertIn("idle h2c connections (plain port)", plain[1])

    def test_caddy_version(self):
        info = ("go\tgo1.26.8\npath\tgithub.com/caddyserver/caddy/v2/cmd/caddy\n"
                "mod\tgithub.com/caddyserver/caddy/v2\tv2.11.9\th1:abc=\ndep\tcel.dev/expr\tv0.25.3\th1:x=\n")
        self.assertEqual(servers.caddy_version(info), "v2.11.9")
        self.assertEqual(servers.caddy_version(""), "unknown")


class Browser(unittest.TestCase):
    """browser.problems: what make browser-check fails on."""

    def _entries(self, protocol="h2", resources=6, status=200):
        nav = {"name": "https://127.0.0.1:1/p.html", "type": "navigation", "protocol": "h2", "status": 200}
        return [nav] + [{"name": f"https://127.0.0.1:1/{i}.css", "type": "resource", "protocol": protocol,
                         "status": status} for i in range(resources)]

    def test_passes(self):
        self.assertEqual(browser.problems(self._entries(), {"https://x/": {"protocol": "h2", "status": 200}}, [], 5),
                         [])

    def test_http11_resources_fail(self):
        bad = browser.problems(self._entries(protocol="http/1.1"), {}, [], 5)
        self.assertEqual(len(bad), 6)
        self.assertIn("nextHopProtocol 'http/1.1', want 'h2'", bad[0])

    def test_too_few_resources(self):
        self.assertEqual(browser.problems(self._entries(resources=5), {}, [], 5),
                         ["5 resources loaded, want more than 5"])

    def test_failures_and_statuses(self):
        bad = browser.problems(self._entries(status=404), {"https://x/a.js": {"protocol": "h2", "status": 404}},
                               [{"url": "https://x/b.png", "errorText": "net::ERR_FAILED"}], 5)
        self.assertEqual(len(bad), 8)
        self.assertIn("https://x/b.png: failed to load (net::ERR_FAILED)", bad)
        self.assertIn("https://x/a.js: Network saw h2 404", bad)
        # a browser that does not report responseStatus (null) is judged by the Network domain alone
        nostatus = self._entries(status=None)
        self.assertEqual(browser.problems(nostatus, {}, [], 5), [])

    def test_no_navigation(self):
        self.assertIn("0 navigation entries, want 1", browser.problems(self._entries()[1:], {}, [], 5))

    def test_protocol_flags(self):
        # h2: QUIC off, so a server's Alt-Svc cannot move later requests to h3
        self.assertEqual(browser.protocol_flags("https://127.0.0.1:8443/p.html", "h2", None), ["--disable-quic"])
        self.assertEqual(browser.protocol_flags("https://127.0.0.1:8443/p.html", "h3", "AAAA="),
                         ["--enable-quic", "--origin-to-force-quic-on=127.0.0.1:8443",
                          "--ignore-certificate-errors-spki-list=AAAA="])
        self.assertIn("--origin-to-force-quic-on=example.org:443",
                      browser.protocol_flags("https://example.org/", "h3", "AAAA="))
        with self.assertRaises(ValueError):
            browser.protocol_flags("https://127.0.0.1:8443/", "h3", None)

    def test_h3_wanted(self):
        bad = browser.problems(self._entries(), {}, [], 5, want="h3")
        self.assertEqual(len(bad), 7)
        self.assertIn("nextHopProtocol 'h2', want 'h3'", bad[0])


if __name__ == "__main__":
    unittest.main()
