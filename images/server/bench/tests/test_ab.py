"""The A/B trial's variant list (hsbench.ab.parse): what make bench-ab AB='...' runs."""
import unittest

from hsbench import ab


class ParseVariants(unittest.TestCase):
    def test_every_kind(self):
        vs = ab.parse("plain=ours; disk=ours:--max-memory-file-size=4KiB --workers 1; new=bin:/b/server:--x;"
                      " floor=floor:sendfile; floor-writev=floor:writev", "/ours")
        self.assertEqual([(v.name, v.kind, v.binary, v.args, v.body_io) for v in vs], [
            ("plain", "ours", "/ours", (), ""),
            ("disk", "ours", "/ours", ("--max-memory-file-size=4KiB", "--workers", "1"), ""),
            ("new", "bin", "/b/server", ("--x",), ""),
            ("floor", "floor", "", (), "sendfile"),
            ("floor-writev", "floor", "", (), "writev"),
        ])

    def test_refuses_what_it_cannot_run(self):
        for spec in ("", "a=ours", "a=ours; a=ours:--x", "a=ours; b=nginx", "a=ours; ours"):
            with self.subTest(spec=spec), self.assertRaises(SystemExit):
                ab.parse(spec, "/ours")


class Table(unittest.TestCase):
    def test_ratios_to_the_first_variant(self):
        st = lambda rps, per_cpu: {"rps": rps, "rps_min": rps * 0.9, "rps_max": rps * 1.1, "cpu_s": 2.0,  # noqa: E731
                                   "req_per_cpu_s": per_cpu, "errors": 0}
        summary = [{"title": "8 KiB", "servers": {"a": st(50_000, 125_000), "floor": st(75_000, 150_000)}}]
        meta = {"reps": 5, "seconds": 5, "date": "today", "git": "abc", "server_cpu": 0, "client_cpu": 1,
                "cpu_quota_percent": 40, "loadavg_start": 1.0, "loadavg_end": 2.0, "versions": {"a": "x", "floor": "y"}}
        md = ab.markdown(summary, meta, ["a", "floor"])
        self.assertIn("| 8 KiB | a | 50,000 (45,000–55,000) | 2.00 | 125,000 | 1.00× | 1.00× |", md)
        self.assertIn("|  | floor | 75,000 (67,500–82,500) | 2.00 | 150,000 | 1.50× | 1.20× |", md)


if __name__ == "__main__":
    unittest.main()
