"""Two or more instances of our server compared on the same workloads, interleaved: the knobs every such comparison
reads from the environment, the rounds (the order rotating each round, so no instance always runs first or last
on a machine whose state drifts), and where the results go. Used by make bench-rules (hsbench.rules) and make
bench-sites-mode (hsbench.sitesmode); each keeps its own ratios, goal and table."""
import json
import os
import time
from dataclasses import dataclass

from . import measure
from .__main__ import _env_int, _git_rev, round_order
from .progress import step


@dataclass
class Knobs:
    seconds: int
    reps: int
    warmup: int
    quota: int
    server_cpu: int
    client_cpu: int

    @classmethod
    def from_env(cls) -> "Knobs":
        return cls(seconds=_env_int("BENCH_SECONDS", 7), reps=_env_int("REPS", 3), warmup=_env_int("WARMUP_SECONDS", 2),
                   quota=_env_int("BENCH_CPU_QUOTA", 40), server_cpu=_env_int("SERVER_CPU", 0),
                   client_cpu=_env_int("CLIENT_CPU", 1))

    def meta(self) -> dict:
        """The run's header: date, commit, knobs, and the load average at its start (rounds() adds its end)."""
        return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seconds": self.seconds,
                "reps": self.reps, "warmup_seconds": self.warmup, "cpu_quota_percent": self.quota,
                "server_cpu": self.server_cpu, "client_cpu": self.client_cpu,
                "git": os.environ.get("BENCH_GIT", "") or _git_rev(), "loadavg_start": os.getloadavg()[0]}


def rounds(servers: list, workloads: list, knobs: Knobs, client, meta: dict, strict: bool) -> list[measure.Run]:
    """Every server on every workload, knobs.reps times, the order rotating. strict: an error or a non-2xx answer
    stops the run (a comparison whose instances answer differently compares nothing); otherwise it is flagged."""
    runs, total, n = [], knobs.reps * len(workloads) * len(servers), 0
    for rep in range(knobs.reps):
        for wi, wl in enumerate(workloads):
            for s in round_order(servers, rep, wi, True):
                n += 1
                r = measure.run_workload(s, wl, rep, knobs.seconds, knobs.warmup, client, knobs.quota)
                runs.append(r)
                if strict and (r.errors or r.non2xx):
                    raise RuntimeError(f"{s.name} {wl.key}: {r.errors} errors, {r.non2xx} non-2xx answers")
                note = f"  ⚠ {r.errors} errors, {r.non2xx} non-2xx" if r.errors or r.non2xx else ""
                step(f"[{n}/{total}] rep {rep + 1} {wl.key:10} {s.name:6} {r.rps:10,.0f} req/s  "
                     f"{r.req_per_cpu_s:9,.0f} req/CPU-s  cap use {r.cap_use:.0%}{note}")
    meta["loadavg_end"] = os.getloadavg()[0]
    return runs


def save(out: str, md: str, meta: dict, rows: list[dict], runs: list[measure.Run]) -> None:
    """summary.md (the table) and results.json (the header, the rows and every run) under out; the table printed."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows, "runs": [r.row() for r in runs]}, f, indent=1, default=str)
    print(md)
