"""The A/B trial's variant list (hsbench.ab.parse): what make bench-ab AB='...' runs."""
import os
import tempfile
import types
import unittest

from hsbench import ab


class ParseVariants(unittest.TestCase):
    def test_every_kind(self):
        vs = ab.parse("plain=ours; disk=ours:--max-memory-file-size=4KiB --workers 1; new=bin:/b/server:--x;"
                      " floor=floor:sendfile; floor-writev=floor:writev; deployed=fresh:--compress=true;"
                      " old=freshbin:/b/old:--y", "/ours")
        self.assertEqual([(v.name, v.kind, v.binary, v.args, v.body_io) for v in vs], [
            ("plain", "ours", "/ours", (), ""),
            ("disk", "ours", "/ours", ("--max-memory-file-size=4KiB", "--workers", "1"), ""),
            ("new", "bin", "/b/server", ("--x",), ""),
            ("floor", "floor", "", (), "sendfile"),
            ("floor-writev", "floor", "", (), "writev"),
            ("deployed", "fresh", "/ours", ("--compress=true",), ""),
            ("old", "freshbin", "/b/old", ("--y",), ""),
        ])

    def test_only_fresh_variants_restart_around_their_runs(self):
        with tempfile.TemporaryDirectory() as d:
            binary = os.path.join(d, "server")
            open(binary, "w").close()
            vs = ab.parse(f"steady=ours; deployed=fresh; old=freshbin:{binary}", binary)
            cfg = types.SimpleNamespace(server_cpu=0, quota_pct=40)
            steady, deployed, old = (ab.build(v, d, cfg, d, "t") for v in vs)
        self.assertEqual((steady.fresh, deployed.fresh, old.fresh), (False, True, True))

    def test_refuses_what_it_cannot_run(self):
        for spec in ("", "a=ours", "a=ours; a=ours:--x", "a=ours; b=nginx", "a=ours; ours"):
            with self.subTest(spec=spec), self.assertRaises(SystemExit):
                ab.parse(spec, "/ours")


class EncoderLines(unittest.TestCase):
    def test_says_what_was_pending_in_each_run_of_ours_only(self):
        run = lambda server, a, b, cpu: types.SimpleNamespace(server=server, pending_start=a, pending_end=b,  # noqa
                                                             encoder_cpu_s=cpu)
        runs = [run("deployed", 1000, 940, 0.02), run("floor", -1, -1, 0.0), run("deployed", 1000, 951, 0.01),
                run("steady", 0, 0, 0.0)]
        text = ab.encoder_lines(runs, ["steady", "deployed", "floor"])
        self.assertIn("- steady: encodings pending at run start→end (encoder CPU-s in the run): 0→0 (0.00)\n", text)
        self.assertIn("- deployed: encodings pending at run start→end (encoder CPU-s in the run): "
                      "1000→940 (0.02), 1000→951 (0.01)\n", text)
        self.assertNotIn("floor", text)
        self.assertEqual(ab.encoder_lines([run("floor", -1, -1, 0.0)], ["floor"]), "")


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
