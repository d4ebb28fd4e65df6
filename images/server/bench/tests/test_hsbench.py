"""Unit tests of the harness's own logic (run: make bench-test). The servers and wrk are exercised by the
benchmark itself; here: parsing, medians and verdicts, the chart, /proc readers, the idle client, the cgroup."""
import http.server
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import unittest
import xml.etree.ElementTree as ET

import math
import socket
import time

from hsbench import chart, content, idle, procstat, profile, report, servers, wrk
from hsbench.__main__ import round_order
from hsbench.cgroup import CpuQuota
from hsbench.measure import Run
from hsbench.workloads import WORKLOADS, select

WRK_OUT = """Running 10s test @ http://127.0.0.1:8080/100.html
  1 threads and 100 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.94ms    1.02ms  52.11ms   91.20%
    Req/Sec    25.12k     1.10k   27.00k    70.00%
  Latency Distribution
     50%    3.77ms
     75%    4.01ms
     90%    4.50ms
     99%  812.00us
  250123 requests in 10.00s, 56.12MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 7
Requests/sec:  25012.30
Transfer/sec:      5.61MB
"""


class WrkParse(unittest.TestCase):
    def test_fields(self):
        r = wrk.parse(WRK_OUT, 1.5)
        self.assertEqual(r.requests, 250123)
        self.assertAlmostEqual(r.seconds, 10.0)
        self.assertAlmostEqual(r.rps, 25012.30)
        self.assertAlmostEqual(r.p50_ms, 3.77)
        self.assertAlmostEqual(r.p99_ms, 0.812)
        self.assertEqual(r.errors, 5)
        self.assertEqual(r.non2xx, 7)
        self.assertAlmostEqual(r.bytes_read, 56.12 * 1024 ** 2)

    def test_seconds_latency_and_clean_run(self):
        out = WRK_OUT.replace("812.00us", "1.20s").replace("  Socket errors: connect 0, read 2, write 0, timeout 3\n", "")
        out = out.replace("  Non-2xx or 3xx responses: 7\n", "")
        r = wrk.parse(out)
        self.assertAlmostEqual(r.p99_ms, 1200.0)
        self.assertEqual((r.errors, r.non2xx), (0, 0))

    def test_wrk_zero_upper_percentile_is_unknown(self):
        import math
        r = wrk.parse(WRK_OUT.replace("812.00us", "0.00us"))
        self.assertTrue(math.isnan(r.p99_ms))

    def test_garbage_is_an_error(self):
        with self.assertRaises(ValueError):
            wrk.parse("unable to connect to 127.0.0.1:1 Connection refused")


def _run(server, rps, rep=0, workload="100b-c100", cpu=4.0):
    return Run(rep=rep, workload=workload, server=server, rps=rps, requests=int(rps * 10), seconds=10.0, cpu_s=cpu,
               req_per_cpu_s=rps * 10 / cpu, p50_ms=1.0, p99_ms=2.0, rss_bytes=5_000_000, errors=0, non2xx=0,
               client_cpu_s=5.0, throttled_periods=60, cap_use=1.0)


class Summary(unittest.TestCase):
    def setUp(self):
        self.runs = [_run("ours", 30000, 0), _run("ours", 10000, 1), _run("ours", 33000, 2),
                     _run("nginx", 25000, 0), _run("nginx", 24000, 1), _run("nginx", 90000, 2)]
        self.summary = report.summarize(self.runs, [WORKLOADS[0]], ["ours", "nginx"])

    def test_medians_not_means(self):
        s = self.summary[0]["servers"]
        self.assertEqual(s["ours"]["rps"], 30000)
        self.assertEqual(s["nginx"]["rps"], 25000)
        self.assertEqual((s["ours"]["rps_min"], s["ours"]["rps_max"]), (10000, 33000))

    def test_ratio_and_target(self):
        e = self.summary[0]
        self.assertAlmostEqual(e["ratio_rps"], 1.2)
        self.assertFalse(e["met"])  # 1.2 < 1.3
        self.assertIn("missed (92% of target)", report.verdict(e["ratio_rps"], e["target"]))
        self.assertIn("met", report.verdict(1.31, 1.3))

    def test_idle_budget(self):
        ok = {"rss_idle": 17_000_000, "conns_alive": 10000, "conns_wanted": 10000}
        self.assertTrue(report.idle_verdict(ok, 8_192_100)["met"])
        self.assertFalse(report.idle_verdict({**ok, "rss_idle": 19_000_000}, 8_192_100)["met"])
        self.assertFalse(report.idle_verdict({**ok, "conns_alive": 9000}, 8_192_100)["met"])

    def test_markdown_and_chart(self):
        meta = {"server_cpu": 0, "client_cpu": 1, "cpu_quota_percent": 40, "reps": 3, "seconds": 10,
                "idle_conns": 10000, "content_bytes": 8_192_100, "date": "today"}
        idle_rows = {n: {"rss_before": 4e6, "rss_idle": 9e6, "conns_alive": 10000, "conns_wanted": 10000}
                     for n in ("ours", "nginx")}
        md = report.markdown(self.summary, idle_rows, meta, ["ours", "nginx"])
        self.assertIn("**1.20×** (nginx", md)
        self.assertIn("| 100 B keep-alive, c=100 | ours | 30.0k (10.0k–33.0k)", md)
        svg = chart.svg(self.summary, idle_rows, meta, ["ours", "nginx"])
        texts = [t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
        self.assertIn("1.20× req/s vs nginx", texts)
        self.assertIn("target 1.3×", texts)


class EveryPeer(unittest.TestCase):
    """Three peers and the floor: ratios to each peer, the best peer per row, % of floor, "–" where no floor."""

    NAMES = ["ours", "nginx", "lighttpd", "h2o", "floor"]

    def setUp(self):
        small, big = WORKLOADS[0], next(w for w in WORKLOADS if w.key == "8k-set")
        rps = {"ours": 40000, "nginx": 25000, "lighttpd": 32000, "h2o": 20000, "floor": 80000}
        self.runs = [_run(n, v * f, rep) for n, v in rps.items() for rep, f in enumerate((1.0, 0.9, 1.1))]
        self.runs += [_run(n, v / 2, rep, workload="8k-set") for n, v in rps.items() if n != "floor"
                      for rep in range(3)]
        self.summary = report.summarize(self.runs, [small, big], self.NAMES)
        self.meta = {"server_cpu": 0, "client_cpu": 1, "cpu_quota_percent": 40, "reps": 3, "seconds": 10,
                     "idle_conns": 10000, "content_bytes": 8_192_100, "date": "today"}

    def test_ratios_best_peer_and_floor(self):
        e = self.summary[0]
        self.assertEqual(e["best_peer"], "lighttpd")
        self.assertAlmostEqual(e["ratio_rps"], 40000 / 32000)
        self.assertAlmostEqual(e["ratios"]["nginx"], 1.6)
        self.assertAlmostEqual(e["ratios"]["h2o"], 2.0)
        self.assertNotIn("floor", e["ratios"])
        self.assertAlmostEqual(e["floor_frac"]["ours"], 0.5)
        self.assertAlmostEqual(e["floor_frac"]["floor"], 1.0)
        self.assertEqual((e["servers"]["ours"]["rps_min"], e["servers"]["ours"]["rps_max"]), (36000, 44000))
        self.assertEqual(self.summary[1]["floor_frac"], {})
        self.assertEqual(self.summary[1]["best_peer"], "lighttpd")

    def test_best_peer_ignores_ours_and_floor(self):
        self.assertEqual(report.best_peer({"ours": {"rps": 9}, "floor": {"rps": 99}, "a": {"rps": 2},
                                           "b": {"rps": 3}}, "ours"), "b")
        self.assertIsNone(report.best_peer({"ours": {"rps": 9}}, "ours"))

    def test_the_row_of_ours_as_deployed_is_no_peer_and_is_explained(self):
        self.assertEqual(report.best_peer({"ours": {"rps": 9}, report.DEPLOYED: {"rps": 50}, "a": {"rps": 2}},
                                          "ours"), "a")
        note = report.deployed_note({"pages": 1000, "pending": [(1000, 988), (1000, 990)]}, "hyperstatic")
        self.assertIn("**hyperstatic**: steady state", note)
        self.assertIn(f"**{report.DEPLOYED}**: as a new pod is deployed", note)
        self.assertIn("1,000 compressible 8 KiB pages", note)
        self.assertIn("1000→988, 1000→990", note)

    def test_markdown_and_chart(self):
        md = report.markdown(self.summary, {}, self.meta, self.NAMES)
        self.assertIn("| 100 B keep-alive, c=100 | ours | 40.0k (36.0k–44.0k)", md)
        self.assertIn("**1.25×** (lighttpd", md)
        self.assertIn("| h2o | 20.0k (18.0k–22.0k) | 4.00 | 50.0k | 2.00 ms | 5.0 MB | 2.00× | 25% |", md)
        self.assertIn("|  | floor | – | – | – | – | – | – | – | | |", md)  # the 8 KiB row has no floor
        svg = chart.svg(self.summary, {}, self.meta, self.NAMES)
        texts = [t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
        self.assertIn("1.25× req/s vs lighttpd", texts)
        self.assertIn("ours 50%", texts)
        self.assertIn("lighttpd 40%", texts)

    def test_round_order_rotates_and_skips_floor(self):
        class S:
            def __init__(self, name):
                self.name = name
        ss = [S(n) for n in self.NAMES]
        firsts = {round_order(ss, rep, 0, True)[0].name for rep in range(5)}
        self.assertEqual(firsts, set(self.NAMES))  # everybody goes first once in five rounds
        self.assertNotIn("floor", [s.name for s in round_order(ss, 0, 2, False)])
        self.assertEqual(len(round_order(ss, 1, 1, False)), 4)


class Configs(unittest.TestCase):
    def _kw(self, d, name):
        return dict(root="/srv/site", port=12345, cpu=0, quota=CpuQuota("hs-bench-unused", 40),
                    workdir=os.path.join(d, name))

    def test_lighttpd(self):
        with tempfile.TemporaryDirectory() as d:
            conf = servers.Lighttpd(**self._kw(d, "l")).config(65536)
        self.assertIn('server.document-root = "/srv/site"', conf)
        self.assertIn("server.port = 12345", conf)
        self.assertIn('server.network-backend = "sendfile"', conf)
        self.assertIn("server.max-keep-alive-requests = 100000000", conf)
        self.assertIn("server.max-fds = 65536", conf)
        self.assertNotIn("accesslog", conf.split("mod_accesslog not loaded")[1])
        self.assertNotIn("${", conf)

    def test_h2o(self):
        with tempfile.TemporaryDirectory() as d:
            conf = servers.H2O(**self._kw(d, "h")).config(65536)
        self.assertIn("num-threads: 1\n", conf)
        self.assertIn("file.dir: /srv/site", conf)
        self.assertIn("port: 12345", conf)
        self.assertIn("max-connections: 20000", conf)
        self.assertNotIn("access-log:", conf)
        self.assertNotIn("${", conf)

    def test_nginx_template_renders(self):
        conf = servers.render_template("nginx.conf.in", user_line="", cpu_mask="1", nofile=1024,
                                       worker_connections=960, dir="/t", port=1, root="/srv/site",
                                       main_extra="", http_extra="")
        self.assertIn("access_log off;", conf)
        self.assertIn("sendfile on;", conf)
        self.assertNotIn("gzip_static", conf)  # make bench-server serves identity only

    def test_peers(self):
        self.assertEqual(servers.parse_peers(""), ["nginx", "lighttpd", "h2o", "caddy"])
        self.assertEqual(servers.parse_peers("nginx"), ["nginx"])
        self.assertEqual(servers.parse_peers("h2o, nginx"), ["h2o", "nginx"])
        with self.assertRaises(SystemExit):
            servers.parse_peers("apache")
        # nginx-1.26 needs a Debian 13 tree made first: only when named, never by default
        self.assertEqual(servers.parse_peers("nginx-1.26,caddy"), ["nginx-1.26", "caddy"])
        self.assertNotIn("nginx-1.26", servers.parse_peers(""))

    def test_close_workload_sends_the_header(self):
        wl = next(w for w in WORKLOADS if w.key == "100b-close")
        argv = wrk.argv_for("http://x/", wl.connections, 5, wl.script, wl.script_args, headers=wl.headers)
        self.assertEqual(argv[argv.index("-H") + 1], "Connection: close")
        self.assertTrue(wl.floor)
        self.assertTrue(next(w for w in WORKLOADS if w.key == "8k-set").floor)  # floor.c answers the 8 KiB set too


class StraceParse(unittest.TestCase):
    def test_calls_by_syscall(self):
        text = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 57.86    0.394658       98664         4           poll
 28.98    0.197677           5     35862           write
 10.10    0.068896           1     35963        11 read
------ ----------- ----------- --------- --------- ----------------
100.00    0.682035           9     71829        11 total
"""
        self.assertEqual(profile.parse_strace(text), {"poll": 4, "write": 35862, "read": 35963})

    def test_context_switches_count_a_processs_sleeps(self):
        # A child of its own, so no thread of this test process (which come and go with other tests) is counted:
        # 30 sleeps are at least 30 voluntary switches, read while the child is still alive.
        child = subprocess.Popen(
            [sys.executable, "-c", "import sys, time\nfor _ in range(30): time.sleep(0.001)\nprint('done', flush=True)\nsys.stdin.read()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(child.stdout.readline().strip(), "done")
            voluntary, involuntary = profile.context_switches([child.pid])
            self.assertGreaterEqual(voluntary, 30, "each sleep is at least one voluntary switch")
            self.assertGreaterEqual(involuntary, 0)
        finally:
            child.stdin.close()
            child.wait(timeout=10)
        self.assertEqual(profile.context_switches([2 ** 22 + 7]), (0, 0), "a process that is gone counts nothing")

    def test_cpu_ticks_split_user_and_system(self):
        u, s = profile.cpu_ticks([os.getpid()])
        self.assertGreaterEqual(u, 0)
        self.assertGreaterEqual(s, 0)
        self.assertEqual(profile.cpu_ticks([2 ** 22 + 7]), (0, 0))


class Workloads(unittest.TestCase):
    def test_select(self):
        self.assertEqual(select(""), WORKLOADS)
        self.assertEqual([w.key for w in select("8k-set, 100b-c100")], ["8k-set", "100b-c100"])
        with self.assertRaises(SystemExit):
            select("nope")

    def test_scripts_exist(self):
        for w in WORKLOADS:
            if w.script:
                self.assertTrue(os.path.exists(w.script), w.script)


class ContentAndProc(unittest.TestCase):
    def test_content_tree(self):
        with tempfile.TemporaryDirectory() as d:
            c = content.generate(d)
            self.assertEqual(c.files, 1001)
            self.assertEqual(os.path.getsize(os.path.join(d, "100.html")), 100)
            sizes = {os.path.getsize(os.path.join(d, "8k", f)) for f in os.listdir(os.path.join(d, "8k"))}
            self.assertEqual(sizes, {8192})
            self.assertEqual(len(os.listdir(os.path.join(d, "8k"))), 1000)
            self.assertEqual(c.bytes, 100 + 1000 * 8192)


    def test_compressible_pages_are_distinct_8k_text_without_siblings(self):
        import zlib
        with tempfile.TemporaryDirectory() as d:
            c = content.generate(d, pages=20)
            names = sorted(os.listdir(os.path.join(d, "pages")))
            self.assertEqual(names, [f"{i:04d}.html" for i in range(20)], "no .br/.gz/.zst siblings")
            bodies = [pathlib.Path(d, "pages", n).read_bytes() for n in names]
            self.assertEqual(c.files, 1 + content.SET_COUNT + 20)
            self.assertEqual(c.samples["/pages/0000.html"], bodies[0])
        self.assertEqual({len(b) for b in bodies}, {content.PAGE_SIZE})
        self.assertEqual(len(set(bodies)), 20, "each page its own digest, its own encoding")
        ratio = content.PAGE_SIZE / len(zlib.compress(bodies[0], 9))
        self.assertTrue(2.5 < ratio < 8, f"compresses like a real page, not like one repeated line: {ratio:.1f}x")

    def test_proc_readers_see_a_child(self):
        child = subprocess.Popen(["sleep", "5"])
        try:
            tree = procstat.process_tree(os.getpid())
            self.assertIn(child.pid, tree)
            self.assertGreater(procstat.rss_bytes([os.getpid()]), 1_000_000)
            before = procstat.cpu_seconds([os.getpid()])
            sum(i * i for i in range(3_000_000))
            self.assertGreater(procstat.cpu_seconds([os.getpid()]), before)
        finally:
            child.kill()
            child.wait()


class _KeepAlive(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *a):
        pass


class IdleClient(unittest.TestCase):
    def test_response_done(self):
        self.assertFalse(idle._response_done(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel"))
        self.assertTrue(idle._response_done(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"))

    def test_opens_and_counts_live_connections(self):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            socks, failed = idle.open_idle(srv.server_address[1], 40, "/x")
            self.assertEqual((len(socks), failed), (40, 0))
            self.assertEqual(idle.count_alive(socks), 40)
            for s in socks[:10]:
                s.close()
            self.assertEqual(idle.count_alive(socks[10:]), 30)
            for s in socks[10:]:
                s.close()
        finally:
            srv.shutdown()
            srv.server_close()


class Cgroup(unittest.TestCase):
    """Real cgroup: needs root, like the benchmark itself."""

    def test_quota_group_lifecycle(self):
        self.assertEqual(os.getuid(), 0, "the benchmark and this test need root (cgroups)")
        q = CpuQuota(f"hs-bench-test-{os.getpid()}", 40)
        q.create()
        try:
            child = subprocess.Popen(["sleep", "5"], preexec_fn=q.join_self)
            self.assertEqual(q.pids(), [child.pid])
            if q.version == 1:
                with open(os.path.join(q.path, "cpu.cfs_quota_us")) as f:
                    self.assertEqual(f.read().strip(), "40000")
            else:
                with open(os.path.join(q.path, "cpu.max")) as f:
                    self.assertEqual(f.read().split(), ["40000", "100000"])
            self.assertIn("nr_throttled", q.throttled())
        finally:
            q.destroy()  # moves the still-running child out first
            child.kill()
            child.wait()
        self.assertFalse(os.path.exists(q.path))


if __name__ == "__main__":
    unittest.main()
