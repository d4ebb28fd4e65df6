"""The idle-pod encode-time trial's table (hsbench.encodetime): medians per CPU cap and the ratio to the least wall
time the cap allows."""
import unittest

from hsbench import encodetime


class Table(unittest.TestCase):
    def test_medians_per_cap_and_ratio_to_the_least_possible(self):
        t = lambda pct, wall, cpu: {"quota_pct": pct, "wall_s": wall, "cpu_s": cpu, "paused_s": 0.5}  # noqa: E731
        rows = encodetime.median_rows([t(40, 30.0, 10.0), t(0, 11.0, 10.0), t(40, 26.0, 10.2), t(0, 10.5, 9.8),
                                       t(40, 28.0, 10.1), t(0, 12.0, 10.0)])
        self.assertEqual([r["quota_pct"] for r in rows], [40, 0], "in the order the caps ran")
        self.assertEqual((rows[0]["wall_s"], rows[0]["cpu_s"]), (28.0, 10.1))
        meta = {"pages": 1000, "reps": 3, "date": "today", "git": "abc", "server_cpu": 0, "loadavg_start": 1.0,
                "loadavg_end": 2.0}
        md = encodetime.markdown(rows, meta)
        self.assertIn("| 40 % of a core | 28.0 s | 10.1 s | 25.2 s | 1.11× | 0.5 s |", md)
        self.assertIn("| none (one whole core) | 11.0 s | 10.0 s | 10.0 s | 1.10× | 0.5 s |", md)


if __name__ == "__main__":
    unittest.main()
