"""Unit tests of the access and fair-share comparison (hsbench.access): the session cookie it mints, the site
values it writes, its medians and per-round ratios. The server's acceptance of each value and the rules being live
are checked by the benchmark itself (check_answers: 200 with the headers, 401 without)."""
import base64
import hashlib
import hmac
import json
import os
import tempfile
import unittest

from hsbench import access
from hsbench.measure import Run


def _run(server, rep, req_per_cpu_s, rss=10 << 20):
    return Run(rep=rep, workload="w", server=server, rps=req_per_cpu_s * 0.4, requests=1000, seconds=10.0,
               cpu_s=4.0, req_per_cpu_s=req_per_cpu_s, p50_ms=1.0, p99_ms=2.0, rss_bytes=rss, errors=0, non2xx=0,
               client_cpu_s=1.0, throttled_periods=0, cap_use=1.0)


class Cookie(unittest.TestCase):
    def test_the_session_contract(self):
        c = access.session_cookie()
        body, mac = c.rsplit("|", 1)
        version, exp, email, groups = body.split("|")
        self.assertEqual((version, email, groups), ("1", "bench@example.com", "eng"))
        self.assertTrue(exp.isdigit())
        want = base64.urlsafe_b64encode(hmac.new(access.KEY, body.encode(), hashlib.sha256).digest()).rstrip(b"=")
        self.assertEqual(mac, want.decode())
        self.assertEqual(len(mac), 43)


def _json(path):
    with open(path) as f:
        return json.load(f)


class Values(unittest.TestCase):
    def test_every_variant_has_its_value(self):
        """Needs htpasswd (Debian's apache2-utils, which run.sh installs for the benchmark)."""
        with tempfile.TemporaryDirectory() as d:
            flags = access.site_values(d)
            names = [n for ns, _ in access.CASES.values() for n in ns]
            self.assertEqual(set(flags), set(names))
            for n in names:
                v = _json(flags[n][1])
                self.assertEqual((v["version"], v["securityHeaders"]), (1, False), n)
            self.assertEqual(flags["limits-32m"][2:], ["--client-table-size", "32MiB"])
            self.assertNotIn("limits", _json(flags["xff"][1]), "xff differs from limits by the limits only")
            self.assertEqual(_json(flags["xff"][1])["access"],
                             _json(flags["limits"][1])["access"])
            with open(os.path.join(d, "htpasswd")) as f:
                self.assertTrue(f.read().startswith(f"{access.USER}:$2y$10$"))


class Summary(unittest.TestCase):
    def test_medians_and_paired_ratios(self):
        runs = [_run("public", r, v) for r, v in enumerate([100, 110, 90])]
        runs += [_run("basic", r, v, rss=11 << 20) for r, v in enumerate([95, 99, 81])]
        rows = access.summarize(runs, ["public", "basic"], 0.90, {"public": 9 << 20, "basic": 9 << 20})
        self.assertEqual([r["variant"] for r in rows], ["public", "basic"])
        self.assertIsNone(rows[0]["met"])
        self.assertAlmostEqual(rows[1]["ratio"], 95 / 100)
        self.assertEqual([round(p, 3) for p in rows[1]["paired"]], [0.9, 0.9, 0.95])
        self.assertTrue(rows[1]["met"])
        md = access.markdown("access", rows, {"reps": 3, "seconds": {"access": 7}, "date": "d", "git": "g",
                                              "server_cpu": 0, "cpu_quota_percent": 40, "client_cpu": 1,
                                              "loadavg_start": 1.0, "loadavg_end": 2.0}, 0.90, ["a check"])
        self.assertIn("| basic | 38 (32–40) | 95 (81–99) | 0.950 | 0.900 (0.900–0.950) | 1,000 | 9.0 → 11.0 MiB (11.0) "
                      "| met |", md)
        self.assertIn("- a check", md)


if __name__ == "__main__":
    unittest.main()
