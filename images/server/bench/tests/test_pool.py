"""Unit tests of make bench-pool's own logic (make bench-test): the pool generator (shards as Go's
poolindex.ShardOf, the content layout of docs/design/pools.md, hard-linked copies), the request mix and its Lua
replay (through the real wrk against a recording server), the raw-socket probes, and the report."""
import http.server
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from hsbench import pool, poolmix, poolprobe, poolreport, pooltree, servers
from hsbench.workloads import LUA

# FNV-1a 32 and ShardOf(id, 16) / ShardOf(id, 7), printed by Go's hash/fnv New32a and internal/poolindex.ShardOf
# (a throwaway test in internal/poolindex, go1 toolchain of the repository, 2026-12-02):
GO_VECTORS = [
    ("", 0x811C9DC5, 5, 2),
    ("a", 0xE40C292C, 12, 5),
    ("team-a.docs", 0xB3B3639F, 15, 0),
    ("team-b.landing", 0xAC057BF6, 6, 3),
    ("bench.s00000", 0x4486BF06, 6, 0),
    ("bench.s09999", 0x4693AFF2, 2, 4),
    ("pydocs.p042", 0xE570C6A7, 7, 5),
]
SITE_KEYS = {"id", "hosts", "value", "limits", "content"}


class ShardChoice(unittest.TestCase):
    def test_fnv1a32_matches_go(self):
        for site_id, want, _, _ in GO_VECTORS:
            self.assertEqual(pooltree.fnv1a32(site_id), want, site_id)

    def test_shard_of_matches_poolindex(self):
        for site_id, _, of16, of7 in GO_VECTORS:
            self.assertEqual(pooltree.shard_of(site_id), of16, site_id)
            self.assertEqual(pooltree.shard_of(site_id, 7), of7, site_id)


def _shards(pool_dir: str) -> dict[str, dict]:
    d = os.path.join(pool_dir, "index")
    out = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name)) as f:
            out[name] = json.load(f)
    return out


class SmallPool(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_index_is_the_contract(self):
        p = pooltree.small_pool(os.path.join(self.tmp, "pool"), 40)
        shards = _shards(p.dir)
        self.assertEqual(list(shards), [f"shard-{n:02d}.json" for n in range(16)])
        seen = []
        for name, doc in shards.items():
            self.assertEqual(set(doc), {"version", "shard", "sites"})
            self.assertEqual(doc["version"], 1)
            self.assertEqual(name, f"shard-{doc['shard']:02d}.json")
            ids = [s["id"] for s in doc["sites"]]
            self.assertEqual(ids, sorted(ids))
            for s in doc["sites"]:
                self.assertEqual(set(s), SITE_KEYS)
                self.assertEqual(pooltree.shard_of(s["id"]), doc["shard"], s["id"])
                ns, name_ = s["id"].split(".")
                self.assertEqual(s["hosts"], [f"{s['id']}.bench.test", f"{name_}.{ns}.svc.cluster.local",
                                              f"{name_}.{ns}.svc", f"{name_}.{ns}"])
                self.assertEqual(set(s["limits"]), {"maxFiles", "maxBytes", "requestsPerSecond"})
                self.assertEqual(s["value"], {"version": 1, "securityHeaders": False})
                seen.append(s["id"])
        self.assertEqual(sorted(seen), p.ids)
        self.assertEqual(len(p.ids), 40)

    def test_content_layout_and_sizes(self):
        p = pooltree.small_pool(os.path.join(self.tmp, "pool"), 3)
        sizes = pooltree.small_sizes()
        self.assertEqual(len(p.paths), 20)
        for site_id in p.ids:
            link = os.path.join(p.dir, "content", site_id, "current")
            target = os.readlink(link)
            self.assertRegex(target, r"^[0-9a-f]{16}$")  # relative, as the puller flips it
            for path in p.paths:
                f = os.path.join(link, path.lstrip("/"))
                self.assertEqual(os.path.getsize(f), sizes[path], f)
        kinds = dict(pooltree.SMALL_FILES)
        for path, size in sizes.items():
            lo, hi = pooltree.SIZE_RANGES[kinds[path]]
            self.assertTrue(lo <= size <= hi, (path, size))
        self.assertTrue(all(v <= 51_200 for k, v in sizes.items() if kinds[k] in ("img", "svg")))
        self.assertEqual(sum(1 for k in kinds.values() if k == "html"), 12)
        self.assertTrue(os.path.isdir(os.path.join(p.dir, "content", ".ready")))

    def test_deterministic_and_distinct_per_site(self):
        a = pooltree.small_pool(os.path.join(self.tmp, "a"), 2)
        b = pooltree.small_pool(os.path.join(self.tmp, "b"), 2)

        def read(pool_, i, path):
            with open(os.path.join(pooltree.tree_of(pool_.dir, pool_.ids[i]), path.lstrip("/")), "rb") as f:
                return f.read()

        for path in a.paths:
            self.assertEqual(read(a, 0, path), read(b, 0, path))
            self.assertNotEqual(read(a, 0, path), read(a, 1, path))
        self.assertTrue(read(a, 0, "/index.html").startswith(b"<!DOCTYPE html>"))
        self.assertEqual(_shards(a.dir), _shards(b.dir))

    def test_kept_when_complete_rewritten_when_not(self):
        d = os.path.join(self.tmp, "pool")
        pooltree.small_pool(d, 2)
        self.assertTrue(pooltree.small_pool(d, 2).meta.get("kept"))
        self.assertFalse(pooltree.small_pool(d, 3).meta.get("kept"))
        self.assertEqual(len(os.listdir(os.path.join(d, "content"))), 3 + 1)  # + .ready


class HotSet(unittest.TestCase):
    def test_the_hot_sites_side_by_side_as_hard_links_kept_between_runs(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        p = pooltree.small_pool(os.path.join(tmp, "pool"), 3)
        dest = os.path.join(tmp, "hot")
        self.assertEqual(pooltree.hot_set_tree(dest, p, p.ids[:2]), dest)
        self.assertEqual(sorted(n for n in os.listdir(dest) if not n.startswith(".")), p.ids[:2])
        for site_id in p.ids[:2]:
            for path in p.paths:
                a = os.stat(os.path.join(pooltree.tree_of(p.dir, site_id), path.lstrip("/")))
                b = os.stat(os.path.join(dest, site_id, path.lstrip("/")))
                self.assertEqual(a.st_ino, b.st_ino, path)  # a hard link, not a copy
        marker = os.path.join(dest, p.ids[0], "kept")
        open(marker, "w").close()
        pooltree.hot_set_tree(dest, p, p.ids[:2])
        self.assertTrue(os.path.exists(marker))  # the same pool and sites: kept
        pooltree.hot_set_tree(dest, p, p.ids[:3])
        self.assertFalse(os.path.exists(marker))  # other sites: written again
        self.assertIn(p.ids[2], os.listdir(dest))


class DocsPool(unittest.TestCase):
    def test_copies_are_hard_links(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        src = os.path.join(tmp, "src")
        os.makedirs(os.path.join(src, "_static"))
        for rel, text in {"index.html": "<p>x</p>", "_static/a.css": "p{}"}.items():
            with open(os.path.join(src, rel), "w") as f:
                f.write(text)
        p = pooltree.docs_pool(os.path.join(tmp, "pool"), src, 3)
        self.assertEqual(p.ids, ["pydocs.p000", "pydocs.p001", "pydocs.p002"])
        self.assertEqual(sorted(p.paths), ["/_static/a.css", "/index.html"])
        ino = os.stat(os.path.join(src, "_static/a.css")).st_ino
        for site_id in p.ids:
            st = os.stat(os.path.join(pooltree.tree_of(p.dir, site_id), "_static/a.css"))
            self.assertEqual(st.st_ino, ino)
        self.assertEqual(os.stat(os.path.join(src, "index.html")).st_nlink, 4)
        self.assertEqual(sum(len(d["sites"]) for d in _shards(p.dir).values()), 3)


class Mix(unittest.TestCase):
    def test_every_tenth_request_is_cold(self):
        self.assertEqual([k for k in range(40) if poolmix.is_cold(k)], [9, 19, 29, 39])

    def test_shares_and_coverage(self):
        hosts = [f"h{i}" for i in range(100)]
        hot, cold = poolmix.split(hosts)
        self.assertEqual(hot, hosts[:10])
        paths = [f"/p{i}" for i in range(20)]
        e = poolmix.build(hot, cold, paths)
        self.assertEqual(len(e), poolmix.length_for(10, 90, 20))
        s = poolmix.shares(e, hot)
        self.assertAlmostEqual(s["hot_share"], 0.9, places=2)
        self.assertEqual((s["hot_sites"], s["cold_sites"], s["paths"]), (10, 90, 20))
        for h in hot:  # every hot site walks all its paths, in order
            mine = [p for host, p in e if host == h]
            self.assertEqual(mine[:20], paths)

    def test_long_tail_every_cold_site_once(self):
        hosts = [f"h{i}" for i in range(10_000)]
        hot, cold = poolmix.split(hosts)
        e = poolmix.build(hot, cold, [f"/p{i}" for i in range(20)])
        self.assertEqual(len(e), 90_000)
        self.assertEqual(poolmix.shares(e, hot)["cold_sites"], 9_000)

    def test_the_breakdowns_lists_are_the_hot_requests_by_host_and_by_path(self):
        hosts = [f"h{i}" for i in range(20)]
        hot, cold = poolmix.split(hosts)
        e = poolmix.build(hot, cold, ["/", "/a/b.css"])
        only = poolmix.hot_only(e, hot)
        self.assertEqual(only, [x for x in e if x[0] in ("h0", "h1")])  # the same order, no cold host
        self.assertEqual(len(only), len(e) - sum(1 for k in range(len(e)) if poolmix.is_cold(k)))
        site_of = {h: f"site.{h}" for h in hosts}
        one = poolmix.in_one_root(only, site_of, "h0")
        self.assertEqual(one[:3], [("h0", "/site.h0/"), ("h0", "/site.h1/"), ("h0", "/site.h0/a/b.css")])
        self.assertEqual(len(one), len(only))

    def test_file_round_trip(self):
        with tempfile.TemporaryDirectory() as d:
            e = [("a.bench.test", "/x.html"), ("b.bench.test", "/y/z.css")]
            self.assertEqual(poolmix.read(poolmix.write(e, os.path.join(d, "l.txt"))), e)
            with self.assertRaises(ValueError):
                poolmix.write([("a", "no-slash")], os.path.join(d, "bad.txt"))


class _Quiet(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # wrk resets its connection when its time is up


class _Recorder(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list = []

    def do_GET(self):
        self.seen.append((self.headers.get("Host"), self.path))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *a):
        pass


@unittest.skipUnless(shutil.which("wrk"), "wrk not installed")
class LuaReplay(unittest.TestCase):
    """lua/pool.lua through the real wrk, one connection: the server must see the list's requests in order."""

    def _replay(self, fixed: str) -> tuple[list, list]:
        entries = [(f"s{i}.bench.test", f"/p{i % 3}.html") for i in range(7)]
        seen: list = []
        handler = type("H", (_Recorder,), {"seen": seen})
        srv = _Quiet(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        with tempfile.TemporaryDirectory() as d:
            lst = poolmix.write(entries, os.path.join(d, "list.txt"))
            subprocess.run(["wrk", "-t1", "-c1", "-d1s", "-s", os.path.join(LUA, "pool.lua"),
                            f"http://127.0.0.1:{srv.server_address[1]}/", "--", lst, fixed],
                           check=True, capture_output=True, timeout=30)
        return entries, seen

    @staticmethod
    def _cycle(entries: list, start, n: int) -> list:
        """n requests of the list round and round from entry `start` (wrk takes one request() at its setup that
        it never sends, so the server's first request is the list's second)."""
        k = entries.index(start)
        return [entries[(k + i) % len(entries)] for i in range(n)]

    def test_rotates_hosts_in_order(self):
        entries, seen = self._replay("-")
        self.assertGreater(len(seen), 2 * len(entries))
        self.assertIn(seen[0], entries[:2])
        self.assertEqual(seen[:2 * len(entries)], self._cycle(entries, seen[0], 2 * len(entries)))

    def test_fixed_host(self):
        entries, seen = self._replay("one.bench.test")
        fixed = [("one.bench.test", p) for _, p in entries]
        self.assertEqual({h for h, _ in seen}, {"one.bench.test"})
        self.assertEqual(seen[:len(entries)], self._cycle(fixed, seen[0], len(entries)))


class _Flaky(http.server.BaseHTTPRequestHandler):
    """503 with Retry-After for the first two requests, then the body."""
    protocol_version = "HTTP/1.1"
    count = [0]

    def do_GET(self):
        self.count[0] += 1
        if self.count[0] <= 2:
            self.send_response(503)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"hello " + self.headers.get("Host", "").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class Probes(unittest.TestCase):
    def _server(self):
        handler = type("F", (_Flaky,), {"count": [0]})
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return srv.server_address[1]

    def test_cold_counts_the_503s_and_checks_the_body(self):
        port = self._server()
        c = poolprobe.cold(port, "x.y", "x.bench.test", "/index.html", b"hello x.bench.test")
        self.assertEqual((c.first_status, c.tries, c.retry_after), (503, 3, "1"))
        self.assertGreaterEqual(c.to_200_ms, c.first_ms)
        self.assertGreater(c.warm_ms, 0)

    def test_cold_refuses_wrong_bytes(self):
        port = self._server()
        with self.assertRaises(poolprobe.ProbeError):
            poolprobe.cold(port, "x.y", "x.bench.test", "/index.html", b"other bytes")

    def test_first_200_waits_for_listening_and_200(self):
        port = servers.free_port()
        t0 = time.monotonic()
        handler = type("F", (_Flaky,), {"count": [0]})

        def late():
            time.sleep(0.2)
            srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
            self.addCleanup(srv.server_close)
            self.addCleanup(srv.shutdown)
            srv.serve_forever()

        threading.Thread(target=late, daemon=True).start()
        secs, not_200 = poolprobe.first_200(port, "h", "/", t0, lambda: True, timeout=10)
        self.assertGreaterEqual(secs, 0.2)
        self.assertEqual(not_200, 2)

    def test_read_response_by_content_length(self):
        a, b = socket.socketpair()
        with a, b:
            a.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX: y\r\n\r\nabcHTTP/1.1")
            status, headers, body = poolprobe.read_response(b)
        self.assertEqual((status, headers["x"], body), (200, "y", b"abc"))


def _run(server, rep, rps, cpu_s, cap_use=0.99, client=3.0, non2xx=0):
    return {"rep": rep, "workload": "pool-small", "server": server, "rps": rps, "requests": int(rps * 7),
            "seconds": 7.0, "cpu_s": cpu_s, "req_per_cpu_s": rps * 7 / cpu_s, "p50_ms": 1.0, "p99_ms": 9.0,
            "rss_bytes": 50_000_000, "errors": 0, "non2xx": non2xx, "client_cpu_s": client,
            "throttled_periods": 70, "cap_use": cap_use, "bytes_read": rps * 7 * 9000}


def _data(pool_rps=(9000, 9500, 9400), single_rps=(10000, 10000, 10000), cap_use=0.99, client=3.0):
    runs = [_run("pool", i, r, 2.8, cap_use, client) for i, r in enumerate(pool_rps)]
    runs += [_run("single", i, r, 2.8, cap_use, client) for i, r in enumerate(single_rps)]
    cold = [{"site": f"bench.s{i}", "host": "h", "path": "/index.html", "first_status": 503, "first_ms": 0.2,
             "to_200_ms": 20.0 + i, "tries": 12, "warm_ms": 0.1, "retry_after": "1"} for i in range(10)]
    case = {"pool": {"kind": "small", "sites": 10000, "files_per_site": 20, "bytes_per_site": 200_000},
            "mix": {"requests": 90000, "hot_share": 0.9, "hot_sites": 1000, "cold_sites": 9000, "paths": 20},
            "single_site": "bench.s00000",
            "startup": [{"rep": 0, "server": "pool", "seconds": 0.05, "rss_bytes": 1, "answers_before": 1},
                        {"rep": 0, "server": "single", "seconds": 0.01, "rss_bytes": 1, "answers_before": 0}],
            "rss_start": {"pool": 30e6, "single": 5e6}, "cold": cold, "checked": 60, "runs": runs,
            "rss_end": {"pool": 90e6, "single": 6e6},
            "sites_after": {"sites": 10000, "states": {"memory": 1200, "unloaded": 8800}, "requests": 1,
                            "rate_limited": 0, "memory_bytes": 1, "errors": []},
            "open_files_end": {"pool": {"open": 19_990, "limit": 20_000}, "single": {"open": 40, "limit": 20_000}}}
    meta = {"date": "2026-12-02 09:00 UTC", "git": "abc", "version": "hyperstatic-server x", "server_cpu": 0,
            "client_cpu": 1, "cpu_quota_percent": 40, "server_args": ["--compress=false"], "loadavg_start": 1.0,
            "loadavg_end": 1.0, "connections": 100, "reps": 3, "seconds": 7, "startup_reps": 1, "goal": 0.9}
    return {"meta": meta, "cases": {"small": case}}


class Report(unittest.TestCase):
    def test_ratio_goal_and_cold_table(self):
        d = _data()
        v = poolreport.verdicts({**d["cases"]["small"], "goal": 0.9}, 40)
        self.assertAlmostEqual(v["cpu_ratio"], 0.94, places=2)
        self.assertTrue(v["met"])
        self.assertIn("not the limit", v["client"])
        md = poolreport.markdown(d)
        self.assertIn("**0.94×**", md)
        self.assertIn("≥ 0.9×: **met**", md)
        self.assertIn("first answer (503 × 10)", md)
        self.assertIn("a 200, from disk without waiting for a full load (pools.md): **not met**", md)  # 503 first
        self.assertIn("(p90) |", md)  # p90 21 ms ≤ 50 ms
        self.assertIn("**met** (p90)", md)
        self.assertIn("Retry-After: 1", md)
        self.assertIn("memory 1,200, unloaded 8,800", md)
        self.assertIn("| 19,990 of 20,000 | 40 of 20,000 |", md)

    def test_a_baseline_build_gets_its_ratio_row_and_no_other_changes(self):
        d = _data()
        self.assertNotIn("baseline", poolreport.markdown(d))
        d["cases"]["small"]["runs"] += [_run("baseline", i, r, 2.8) for i, r in enumerate((7000, 8000, 7500))]
        d["meta"]["baseline"] = {"binary": "/tmp/old-server", "version": "hyperstatic-server old"}
        md = poolreport.markdown(d)
        # 9,400 ÷ 7,500 answered per CPU-second (medians; the same CPU time in every run).
        self.assertIn("this build ÷ baseline: **1.25×**", md)
        self.assertIn("Baseline build (a second pool in the same rounds): hyperstatic-server old, `/tmp/old-server`.",
                      md)
        # The pool ÷ single ratio is this build's pool, not the baseline's.
        self.assertIn("**0.94×**", md)

    def test_the_breakdown_multiplies_to_pool_over_single(self):
        d = _data()
        self.assertNotIn("Where pool ÷ single goes", poolreport.markdown(d))
        self.assertIsNone(poolreport.breakdown(d["cases"]["small"]["runs"]))
        # Answered per CPU-second (2.8 s each run): pool 9,400×7/2.8, single 10,000×7/2.8; pool-hot 9,800,
        # single-hot 9,900.
        d["cases"]["small"]["runs"] += [_run("pool-hot", i, 9800, 2.8) for i in range(3)]
        d["cases"]["small"]["runs"] += [_run("single-hot", i, 9900, 2.8) for i in range(3)]
        b = poolreport.breakdown(d["cases"]["small"]["runs"])
        self.assertAlmostEqual(b["many_sites"], 9800 / 9900)
        self.assertAlmostEqual(b["hot_set"], 9900 / 10000)
        self.assertAlmostEqual(b["cold_tenth"], 9400 / 9800)
        self.assertAlmostEqual(b["product"], 0.94)
        md = poolreport.markdown(d)
        self.assertIn("| serving many sites | pool-hot 24,500 (24,500–24,500) ÷ single-hot 24,750", md)
        self.assertIn("**0.99×** |", md)
        self.assertIn("**0.96×** |", md)
        self.assertIn("| product | = pool ÷ single | 0.94× |", md)
        self.assertNotIn("⚠ breakdown servers", md)
        d["cases"]["small"]["runs"][-1]["non2xx"] = 700  # a 404 would be fast: the report says so
        self.assertIn("⚠ breakdown servers: single-hot:", poolreport.markdown(d))

    def test_sites_summary_reads_the_error(self):
        r = {"sites": [{"id": "a.b", "state": "memory", "requests": 5, "rateLimited": 1, "memoryBytes": 10,
                        "error": None},
                       {"id": "a.c", "state": "refused", "requests": 2, "rateLimited": 0, "memoryBytes": 0,
                        "error": "Too many open files (os error 24)"}]}
        s = pool.sites_summary(r)
        self.assertEqual(s["states"], {"memory": 1, "refused": 1})
        self.assertEqual((s["requests"], s["rate_limited"], s["memory_bytes"]), (7, 1, 10))
        self.assertEqual((s["errors"], s["sites_with_errors"]), (["Too many open files (os error 24)"], 1))
        d = _data()
        d["cases"]["small"]["sites_after"] = s
        self.assertIn("1 sites with an error, e.g. Too many open files", poolreport.markdown(d))

    def test_open_files_of_this_process(self):
        x = pool.open_files(os.getpid())
        self.assertGreater(x["open"], 2)
        self.assertGreater(x["limit"], 0)

    def test_goal_counts_only_answered_requests(self):
        d = _data(pool_rps=(10000, 10000, 10000))
        for r in d["cases"]["small"]["runs"]:
            if r["server"] == "pool":
                r["non2xx"] = r["requests"] // 2  # half of them 503 while sites load
        v = poolreport.verdicts({**d["cases"]["small"], "goal": 0.9}, 40)
        self.assertAlmostEqual(v["cpu_ratio"], 1.0, places=2)
        self.assertAlmostEqual(v["ok_ratio"], 0.5, places=2)
        self.assertFalse(v["met"])
        self.assertIn("**0.50×**", poolreport.markdown(d))

    def test_goal_not_met_and_client_limit(self):
        d = _data(pool_rps=(7000, 7000, 7000), cap_use=0.6, client=6.8)
        v = poolreport.verdicts({**d["cases"]["small"], "goal": 0.9}, 40)
        self.assertFalse(v["met"])
        self.assertIn("client may have been the limit", v["client"])
        self.assertIn("wrk CPU-bound in 3 runs", v["client"])
        self.assertIn("≥ 0.9×: **not met**", poolreport.markdown(d))

    def test_run_note(self):
        self.assertEqual(poolreport.run_note(_run("pool", 0, 10000, 2.8), 40), "")
        silent = {**_run("pool", 0, 0, 2.8), "requests": 0}
        self.assertIn("no response at all", poolreport.run_note(silent, 40))
        starved = _run("pool", 0, 10000, 1.0, cap_use=0.5, client=6.9, non2xx=5)
        note = poolreport.run_note(starved, 40)
        self.assertIn("5 non-2xx", note)
        self.assertIn("not saturated (wrk was CPU-bound)", note)

    def test_render_writes_summary(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "results.json"), "w") as f:
                json.dump(_data(), f)
            md = poolreport.render(d)
            with open(os.path.join(d, "summary.md")) as f:
                self.assertEqual(f.read(), md)


class Settings(unittest.TestCase):
    def test_pool_server_argv_swaps_root_for_sites(self):
        from hsbench.cgroup import CpuQuota
        try:
            q = CpuQuota("hs-pool-test", 40)
        except Exception as e:  # no cgroup here: nothing to check
            self.skipTest(str(e))
        with tempfile.TemporaryDirectory() as d:
            s = pool.PoolServer(binary="/bin/hs", admin_port=2, extra_args=["--compress=false"], root="/p", port=1,
                                cpu=0, quota=q, workdir=d)
            argv = s.argv()
        self.assertNotIn("--root", argv)
        self.assertNotIn("--security-headers=false", argv)  # a site rule: the index's value says it
        self.assertEqual(argv[argv.index("--sites") + 1], "/p")
        self.assertIn("--compress=false", argv)

    def test_knobs(self):
        env = {"POOL_SITES": "100", "POOL_CASES": "small", "REPS": "1", "POOL_COLD_PROBES": "5"}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            cfg = pool.Settings.from_env("/bin/hs", "/tmp/out")
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.assertEqual((cfg.small_sites, cfg.cases, cfg.reps, cfg.startup_reps, cfg.cold_probes),
                         (100, ["small"], 1, 1, 5))
        self.assertEqual(cfg.trees, "/tmp/out/trees")
        self.assertTrue(cfg.breakdown)
        os.environ["POOL_BREAKDOWN"] = "0"
        try:
            self.assertFalse(pool.Settings.from_env("/bin/hs", "/tmp/out").breakdown)
        finally:
            os.environ.pop("POOL_BREAKDOWN")
        self.assertEqual(cfg.server_args(), ["--compress=false", "--memory-limit=2GiB"])
        cfg.memory_limit = "0"
        self.assertEqual(cfg.server_args(), ["--compress=false"])


if __name__ == "__main__":
    unittest.main()
