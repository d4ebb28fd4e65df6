"""Unit tests of the real-site benchmark's own logic (make bench-test): the URL list (asset parsing, URL
resolution, the visit mix), the correctness check, the startup probe, the peers' extra config, the report."""
import gzip
import http.server
import json
import os
import tempfile
import threading
import time
import unittest

from hsbench import servers, site, sitecheck, sitemap, sitepeers, sitereport
from hsbench.cgroup import CpuQuota

PAGE = """<!DOCTYPE html><html><head>
<link rel="stylesheet" type="text/css" href="../_static/theme.css?2022.1" />
<link rel="stylesheet" href="../_static/theme.css" />
<script data-url_root="../" src="../_static/app.js"></script>
<link rel="next" title="Next" href="other.html" />
<link rel="canonical" href="https://docs.python.org/3/library/os.html" />
<link rel="shortcut icon" type="image/png" href="../_static/logo.svg" />
<script src="https://cdn.example.com/x.js"></script>
<script>inline()</script>
</head><body><a href="../index.html">home</a><img src="../_static/logo.svg" alt="Logo"/>
<img src="data:image/png;base64,AAAA"><img src="../_static/gone.png"></body></html>
"""


def _tree(d: str) -> str:
    """A small site: two pages, a stylesheet that @imports another (which imports a third), a script, an image."""
    files = {
        "index.html": '<link rel="stylesheet" href="_static/theme.css"><script src="_static/app.js"></script>',
        "library/os.html": PAGE,
        "_static/theme.css": '@import url("base.css");\nbody { background: url(bg.png) }',
        "_static/base.css": "@import 'reset.css';\np { margin: 0 }",
        "_static/reset.css": "* { padding: 0 }",
        "_static/app.js": "console.log(1)",
        "_static/logo.svg": "<svg/>",
        "_static/bg.png": "png",
        "_sources/os.rst.txt": "not linked as an asset",
    }
    for rel, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
        with open(os.path.join(d, rel), "w") as f:
            f.write(text)
    return d


class AssetParsing(unittest.TestCase):
    def test_only_what_a_browser_loads(self):
        self.assertEqual(sitemap.asset_refs(PAGE), [
            "../_static/theme.css?2022.1", "../_static/theme.css", "../_static/app.js", "../_static/logo.svg",
            "https://cdn.example.com/x.js", "../_static/logo.svg", "data:image/png;base64,AAAA", "../_static/gone.png"])

    def test_css_imports_both_spellings(self):
        self.assertEqual(sitemap.css_imports('@import url("a.css");\n@import \'b.css\';\n@import url(c.css);'),
                         ["a.css", "b.css", "c.css"])

    def test_resolve(self):
        self.assertEqual(sitemap.resolve("/library/os.html", "../_static/x.css?v=1#f"), "/_static/x.css")
        self.assertEqual(sitemap.resolve("/library/os.html", "io.html"), "/library/io.html")
        self.assertEqual(sitemap.resolve("/library/os.html", "/abs.js"), "/abs.js")
        self.assertEqual(sitemap.resolve("/index.html", "./_static/./a.js"), "/_static/a.js")
        self.assertEqual(sitemap.resolve("/library/os.html", "../../up.css"), "/up.css")  # clamped at /, as browsers do
        for outside in ("https://x/y.js", "//cdn/y.js", "data:image/png;base64,AA", "#top"):
            self.assertIsNone(sitemap.resolve("/library/os.html", outside), outside)

    def test_kind(self):
        self.assertEqual([sitemap.kind(u) for u in ("/a.html", "/b.CSS", "/c.js", "/d.svg", "/e.txt")],
                         ["html", "css", "js", "image", "other"])


class UrlList(unittest.TestCase):
    def test_each_page_then_its_assets(self):
        with tempfile.TemporaryDirectory() as d:
            ul = sitemap.build(_tree(d))
            mix = sitemap.mix(ul.urls, d)
        css = ["/_static/theme.css", "/_static/base.css", "/_static/reset.css"]  # the @import chain, in order
        self.assertEqual(ul.urls, ["/index.html", *css, "/_static/app.js",
                                   "/library/os.html", *css, "/_static/app.js", "/_static/logo.svg"])
        self.assertEqual(ul.pages, 2)
        self.assertEqual(ul.missing, {"/_static/gone.png": 1})
        self.assertEqual(len(ul.unique()), 7)
        self.assertNotIn("/_static/bg.png", ul.urls)  # url() inside CSS is not fetched unconditionally
        self.assertEqual(mix["requests"], 11)
        self.assertEqual(mix["unique"], 7)
        self.assertEqual(mix["kinds"]["css"]["requests"], 6)
        self.assertEqual(mix["kinds"]["html"]["requests"], 2)
        self.assertEqual(mix["kinds"]["image"], {"requests": 1, "bytes": 6})
        self.assertEqual(mix["bytes"], sum(v["bytes"] for v in mix["kinds"].values()))

    def test_page_names_are_url_quoted(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "a b.html"), "w") as f:
                f.write("<p>")
            self.assertEqual(sitemap.html_pages(d), ["/a%20b.html"])
            self.assertTrue(os.path.isfile(sitemap.file_of(d, "/a%20b.html")))

    def test_list_file_round_trip(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "urls.txt")
            sitemap.write(["/a.html", "/b.css"], p)
            with open(p) as f:
                self.assertEqual(f.read(), "/a.html\n/b.css\n")  # the format lua/site.lua reads
            self.assertEqual(sitemap.read(p), ["/a.html", "/b.css"])


class ResponseCheck(unittest.TestCase):
    BODY = b"<html>" + b"x" * 2000

    def test_good_answers(self):
        p = sitecheck.problem
        self.assertIsNone(p(200, "", self.BODY, self.BODY, set(), {"br", "gzip"}))
        self.assertIsNone(p(200, "gzip", gzip.compress(self.BODY), self.BODY, {"br", "gzip"}, {"br", "gzip"}))

    def test_wrong_answers(self):
        p = sitecheck.problem
        self.assertIn("status 404", p(404, "", b"", self.BODY, set(), {"gzip"}))
        self.assertIn("configured for", p(200, "gzip", gzip.compress(self.BODY), self.BODY, set(), set()))
        self.assertIn("identity, though", p(200, "", self.BODY, self.BODY, {"gzip"}, {"br", "gzip"}))
        self.assertIn("does not decode", p(200, "gzip", self.BODY, self.BODY, {"gzip"}, {"gzip"}))
        self.assertIn("differs", p(200, "", self.BODY[:-1], self.BODY, set(), {"gzip"}))
        self.assertIn("unknown", p(200, "zstd", b"", self.BODY, set(), {"zstd"}))

    def test_identity_is_fine_when_the_server_has_no_matching_variant(self):
        # a server that only sends gzip may answer identity for a file that has only a .br sibling
        self.assertIsNone(sitecheck.problem(200, "", self.BODY, self.BODY, {"br"}, {"gzip"}))

    def test_br_goes_through_its_decoder(self):
        saved = sitecheck.DECODERS["br"]
        sitecheck.DECODERS["br"] = lambda b: b[::-1]  # a stand-in codec: the test need not have brotli
        try:
            self.assertIsNone(sitecheck.problem(200, "br", self.BODY[::-1], self.BODY, {"br"}, {"br"}))
        finally:
            sitecheck.DECODERS["br"] = saved

    def test_siblings(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("a.html", "a.html.br", "a.html.gz", "b.css", "b.css.gz", "c.png"):
                open(os.path.join(d, name), "w").close()
            self.assertEqual(sitecheck.siblings(d, "/a.html"), {"br", "gzip"})
            self.assertEqual(sitecheck.siblings(d, "/b.css"), {"gzip"})
            self.assertEqual(sitecheck.siblings(d, "/c.png"), set())


class _Site(http.server.BaseHTTPRequestHandler):
    """Sends the .gz sibling when the client takes gzip; /broken.html is answered 500."""
    root = ""

    def do_GET(self):
        if self.path == "/broken.html":
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        f = os.path.join(self.root, self.path.lstrip("/"))
        enc = "gzip" if "gzip" in self.headers.get("Accept-Encoding", "") and os.path.exists(f + ".gz") else ""
        with open(f + ".gz" if enc else f, "rb") as fh:
            body = fh.read()
        self.send_response(200)
        if enc:
            self.send_header("Content-Encoding", enc)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class CheckAgainstAServer(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        for name, body in (("a.html", b"a" * 3000), ("b.png", b"png"), ("broken.html", b"x")):
            with open(os.path.join(d, name), "wb") as f:
                f.write(body)
        with open(os.path.join(d, "a.html.gz"), "wb") as f:
            f.write(gzip.compress(b"a" * 3000))
        handler = type("H", (_Site,), {"root": d})
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.port = self.httpd.server_address[1]

    def tearDown(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.dir.cleanup()

    def test_tally_and_problems(self):
        r = sitecheck.check("t", self.port, self.dir.name, ["/a.html", "/b.png"], "gzip, deflate, br", {"gzip"})
        self.assertEqual(r.problems, [])
        self.assertEqual(dict(r.encodings), {"gzip": 1, "identity": 1})
        self.assertEqual(r.bytes_sent, len(gzip.compress(b"a" * 3000)) + 3)
        # the same server held to br only: its gzip answer is not what it claims
        r = sitecheck.check("t", self.port, self.dir.name, ["/a.html", "/broken.html"], "gzip, br", {"br"})
        self.assertEqual(len(r.problems), 2)
        self.assertIn("status 500", r.problems[1])

    def test_first_200(self):
        t0 = time.monotonic()
        self.assertLess(sitecheck.first_200(self.port, "/a.html", t0, lambda: True), 1.0)
        with self.assertRaises(RuntimeError):  # a process that died is reported, not waited for
            sitecheck.first_200(self.port + 1 if self.port < 65535 else 1, "/a.html", time.monotonic(), lambda: False)

    def test_first_200_waits_for_the_listener(self):
        port = servers.free_port()
        httpd = []

        def later():
            time.sleep(0.2)
            h = http.server.ThreadingHTTPServer(("127.0.0.1", port), type("H", (_Site,), {"root": self.dir.name}))
            httpd.append(h)
            h.serve_forever()

        threading.Thread(target=later, daemon=True).start()
        try:
            secs = sitecheck.first_200(port, "/b.png", time.monotonic(), lambda: True, timeout=10)
            self.assertGreaterEqual(secs, 0.2)
        finally:
            while not httpd:
                time.sleep(0.01)
            httpd[0].shutdown()
            httpd[0].server_close()


class PeerConfigs(unittest.TestCase):
    def _kw(self, d, name, **extra):
        return dict(root="/srv/site", port=12345, cpu=0, quota=CpuQuota("hs-bench-unused", 40),
                    workdir=os.path.join(d, name), **extra)

    def test_lighttpd_gets_mod_deflate_and_the_tree_types(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("a.html", "b.css", "c.js", "d.svg", "e.html.gz"):
                open(os.path.join(d, name), "w").close()
            types = sitepeers.lighttpd_mimetypes(d)
            extra = sitepeers.lighttpd_extra(d, "/cache")
            conf = servers.Lighttpd(extra_conf=extra, **self._kw(d, "l")).config(65536)
        self.assertEqual(types[".css"], "text/css")
        self.assertEqual(types[".svg"], "image/svg+xml")
        self.assertNotIn(".html", types)  # the template has it; lighttpd rejects a second assignment
        self.assertNotIn(".gz", types)
        self.assertIn('server.modules += ("mod_deflate")', conf)
        self.assertIn('deflate.cache-dir = "/cache"', conf)
        self.assertIn('"br", "gzip"', conf)
        self.assertLess(conf.index("server.modules = ()"), conf.index("server.modules +="))

    def test_h2o_sends_siblings(self):
        with tempfile.TemporaryDirectory() as d:
            conf = servers.H2O(extra_conf="file.send-compressed: ON\n", **self._kw(d, "h")).config(65536)
        self.assertTrue(conf.endswith("file.send-compressed: ON\n"))
        self.assertIn("\nfile.send-compressed", conf)  # top level (global), not inside the hosts block

    def test_nginx_loads_brotli_static(self):
        conf = servers.render_template("nginx.conf.in", user_line="", cpu_mask="1", nofile=1024,
                                       worker_connections=960, dir="/t", port=1, root="/srv/site",
                                       main_extra="load_module /m.so;", http_extra="    gzip_static on;")
        self.assertLess(conf.index("load_module /m.so;"), conf.index("events {"))
        self.assertLess(conf.index("http {"), conf.index("gzip_static on;"))

    def test_every_peer_declares_what_it_sends(self):
        for name in ("hyperstatic", *servers.PEERS):
            self.assertIn(name, sitepeers.OFFERS)
            self.assertIn(name, sitepeers.HOW)


class Workloads(unittest.TestCase):
    def test_one_per_concurrency(self):
        wls = site.workloads([10, 100], "/o/urls.txt", "gzip, br")
        self.assertEqual([w.key for w in wls], ["site-c10", "site-c100"])
        self.assertEqual([w.connections for w in wls], [10, 100])
        self.assertTrue(wls[0].script.endswith("lua/site.lua") and os.path.isfile(wls[0].script))
        self.assertEqual(wls[0].script_args, ["/o/urls.txt", "gzip, br"])
        self.assertFalse(wls[0].floor)


def _row(server, workload, rps, cpu=2.8, warm=10e6, end=11e6):
    return {"rep": 0, "workload": workload, "server": server, "rps": rps, "requests": int(rps * 7), "seconds": 7.0,
            "cpu_s": cpu, "req_per_cpu_s": rps * 7 / cpu, "p50_ms": 1.0, "p99_ms": 50.0, "rss_bytes": end,
            "errors": 0, "non2xx": 0, "client_cpu_s": 3.0, "throttled_periods": 60, "cap_use": 1.0,
            "rss_warm_bytes": warm, "rss_end_bytes": end, "bytes_read": rps * 7 * 4096}


class Report(unittest.TestCase):
    def test_table(self):
        from hsbench import report
        from hsbench.measure import Run
        runs = [_row("hyperstatic", "site-c10", 30000, warm=120e6, end=121e6), _row("nginx", "site-c10", 20000),
                _row("hyperstatic", "site-c10", 36000, warm=120e6, end=121e6), _row("nginx", "site-c10", 24000)]
        wls = site.workloads([10], "/u", "br")
        summary = report.summarize([Run(**r) for r in runs], wls, ["hyperstatic", "nginx"])
        meta = {"servers": ["hyperstatic", "nginx"], "server_cpu": 0, "client_cpu": 1, "cpu_quota_percent": 40,
                "reps": 2, "seconds": 7, "versions": {}, "loadavg_start": 1.0, "loadavg_end": 2.0, "pages": 2,
                "mix": {"requests": 4, "unique": 2, "bytes": 100,
                        "kinds": {"html": {"requests": 1, "bytes": 75}, "css": {"requests": 3, "bytes": 25}}},
                "startup": [{"rep": 0, "server": "hyperstatic", "seconds": 0.4, "rss_bytes": 5e6},
                            {"rep": 0, "server": "nginx", "seconds": 0.02, "rss_bytes": 2e6}],
                "check": {"nginx": {"encodings": {"br": 2}, "bytes_sent": 2e6, "how": "brotli_static"}},
                "ours_content_metrics": {"hyperstatic_content_files": 3049.0, "hyperstatic_content_bytes": 90e6,
                                         "hyperstatic_content_memory_bytes": 110e6}}
        md = sitereport.markdown(json.loads(json.dumps({"meta": meta, "summary": summary, "runs": runs})))
        self.assertIn("| c=10 | hyperstatic | 33.0k (30.0k–36.0k) |  |", md)
        self.assertIn("| nginx | 22.0k (20.0k–24.0k) | 1.50× |", md)
        self.assertIn("| 120.0 MB | 121.0 MB |", md)
        self.assertIn("4.0 KiB", md)
        self.assertIn("| hyperstatic | 400 ms (400–400 ms) |  | 5.0 MB |", md)
        self.assertIn("| nginx | 20 ms (20–20 ms) | 20.00× |", md)
        self.assertIn("| nginx | brotli_static | br 2 | 2.0 MB |", md)
        self.assertIn("html 25% of requests / 75% of identity bytes", md)
        self.assertIn("3,049 files, 90.0 MB of file bodies", md)
        self.assertIn("110.0 MB held in memory", md)


if __name__ == "__main__":
    unittest.main()
