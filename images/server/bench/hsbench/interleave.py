"""Two or more instances of our server compared on the same workloads, interleaved: the knobs every such comparison
reads from the environment, the rounds (the order rotating each round, so no instance always runs first or last
on a machine whose state drifts), the variants started beside one client, the command line, and where the results
go. Used by make bench-rules (hsbench.rules), make bench-sites-mode (hsbench.sitesmode) and make bench-access
(hsbench.access); each keeps its own variants, ratios, goal and table."""
import argparse
import json
import os
import shutil
import time
from dataclasses import dataclass

from . import measure
from .__main__ import _env_int, _git_rev, round_order, run_in_workdir
from .cgroup import CgroupError, CpuQuota
from .placement import Client
from .progress import step, warn
from .servers import free_port


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


def start_variants(ours: str, work: str, tag: str, variants: list, knobs: Knobs, cleanup: list,
                   samples) -> tuple[list, Client]:
    """Starts one server per variant (kind, name, root, extra_args), each a copy of the binary ours in its own CPU
    quota and run directory, and the client's cgroup; each server is checked to serve samples. Everything started
    is appended to cleanup."""
    binary = os.path.join(work, "hyperstatic-server")
    shutil.copy2(ours, binary)
    servers = []
    for kind, name, root, extra_args in variants:
        s = kind(binary=binary, admin_port=free_port(), extra_args=extra_args, port=free_port(),
                 root=root, cpu=knobs.server_cpu, quota=CpuQuota(f"{tag}-{name}", knobs.quota),
                 workdir=os.path.join(work, f"{name}-run"))
        s.name = name
        servers.append(s)
    client = Client(knobs.client_cpu, CpuQuota(f"{tag}-client", 0))
    cleanup += [s.stop for s in servers] + [client.group.destroy]
    client.group.create()
    for s in servers:
        s.start()
        s.validate(samples)
    return servers, client


def main(name: str, doc: str, bench, tools: tuple = ()) -> int:
    """The command line of a variant benchmark hsbench.<name>: --ours (checked executable) and --out (default
    $BENCH_OUT/<name>); each (tool, why) of tools must be on PATH; then bench(ours, out, work, cleanup) runs in a
    fresh work directory. 2 for a bad invocation, 1 for an expected failure."""
    ap = argparse.ArgumentParser(prog=f"hsbench.{name}", description=doc, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ours", required=True, help="path of the hyperstatic-server binary")
    ap.add_argument("--out", default=os.path.join(os.environ.get("BENCH_OUT", "_out/bench"), name))
    args = ap.parse_args()
    problems = [] if os.access(args.ours, os.X_OK) else [f"server binary {args.ours} is not executable"]
    problems += [why for tool, why in tools if shutil.which(tool) is None]
    for p in problems:
        warn(p)
    if problems:
        return 2
    return run_in_workdir(f"hs-{name}-", f"{name} benchmark", lambda work, cleanup: bench(args.ours, args.out, work, cleanup),
                          (CgroupError, RuntimeError, OSError))
