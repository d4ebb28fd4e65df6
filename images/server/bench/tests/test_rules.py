"""Unit tests of the site-rules comparison (hsbench.rules): the rules it generates and its ratios. The server's
acceptance of the generated `_redirects` is checked by the benchmark itself (the rule-count metric must match)."""
import math
import unittest

from hsbench import rules
from hsbench.measure import Run


def _run(server, rps, workload="100b-c100", cpu=4.0):
    return Run(rep=0, workload=workload, server=server, rps=rps, requests=int(rps * 10), seconds=10.0, cpu_s=cpu,
               req_per_cpu_s=rps * 10 / cpu, p50_ms=1.0, p99_ms=2.0, rss_bytes=1, errors=0, non2xx=0,
               client_cpu_s=1.0, throttled_periods=0, cap_use=1.0)


class Generated(unittest.TestCase):
    def test_redirects_file(self):
        lines = [l for l in rules.redirects_file().splitlines() if l and not l.startswith("#")]
        self.assertEqual(len(lines), rules.REDIRECT_RULES)
        self.assertEqual(sum(l.endswith("!") for l in lines), rules.REDIRECT_RULES // 10)
        for l in lines:
            frm, to, status = l.split()
            self.assertTrue(frm.startswith("/") and to.startswith("/"), l)
            self.assertIn(status.rstrip("!"), {"301", "302", "307", "308"})
            # none names a file of the benchmark site, so both sites serve the same responses
            self.assertFalse(frm.startswith("/8k/") or frm == "/100.html", l)

    def test_header_args(self):
        args = rules.header_args()
        self.assertEqual(len(args), 2 * rules.HEADER_RULES)
        self.assertEqual(args[0::2].count("--header"), rules.HEADER_RULES // 2)
        self.assertEqual(args[0::2].count("--cache-control"), rules.HEADER_RULES // 2)
        for glob in (a.split("=", 1)[0] for a in args[1::2]):
            self.assertFalse(glob.startswith("/8k") or glob.startswith("*"), glob)


class Ratios(unittest.TestCase):
    def test_medians_and_goal(self):
        runs = [_run("plain", 100), _run("plain", 110), _run("plain", 90), _run("rules", 96), _run("rules", 99),
                _run("rules", 80), _run("plain", 50, "8k-set"), _run("rules", 40, "8k-set")]
        rows = {r["workload"]: r for r in rules.ratios(runs, ["100b-c100", "8k-set", "100b-pipe16"])}
        self.assertEqual(set(rows), {"100b-c100", "8k-set"}, "a workload without runs has no row")
        self.assertTrue(math.isclose(rows["100b-c100"]["ratio"], 0.96))
        self.assertTrue(rows["100b-c100"]["met"])
        self.assertEqual(rows["100b-c100"]["plain_range"], [90, 110])
        self.assertFalse(rows["8k-set"]["met"])
        md = rules.markdown(list(rows.values()), {"date": "d", "git": "g", "reps": 3, "seconds": 7, "server_cpu": 0,
                                                  "cpu_quota_percent": 40, "loadavg_start": 1.0, "loadavg_end": 2.0})
        self.assertIn("| 100b-c100 | 100 (90–110) | 96 (80–99) | 0.960 |", md)
        self.assertIn("not met", md)


if __name__ == "__main__":
    unittest.main()
