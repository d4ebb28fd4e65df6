"""What private sites and fair share cost per request (issue 44): our server with and without each mechanism, the
same binary on the same site under the harness's pin and CPU cap, interleaved (the order rotates each round),
medians with min–max. Two cases (ACCESS_CASES, default both):

- **fairshare**: a proxy's keep-alive connections (wrk, c=100) whose every request names a new client in
  `X-Forwarded-For` (lua/xff_distinct.lua), each run from a fresh range of addresses, so each run shows the server
  as many distinct addresses as it makes requests (about a million at the default 25 s at 40 % of a core). `xff` trusts the proxy
  (127.0.0.1) and limits nothing; `limits` adds `limits.perClient` (every address a new bucket, so once the table
  is full nearly every request evicts one); `limits-32m` the same with `--client-table-size 32MiB` instead of the
  default 1 MiB. Goal: `limits` within 5 % of `xff` per server CPU-second; memory bounded: peak RSS at most the
  table size above `xff` however many addresses came (fairshare/table.rs: each worker's table is the largest
  power-of-two number of 64-byte sets in `--client-table-size` ÷ workers, allocated once; nothing else grows).
- **access**: 100 B keep-alive (c=100), the same `Authorization` and `Cookie` headers sent to every variant so the
  requests are byte-identical: `public` (no rule), `basic` (a basicAuth rule over the whole site, bcrypt cost 10:
  a verified credential is remembered, guard/verified.rs) and `cookie` (a signIn rule, a good session cookie,
  guard/session.rs). Goal: each within 10 % of `public` per server CPU-second.

Every run must answer only 2xx (a 401 or 429 is cheaper and would flatter the variant); the fairshare variants must
end with no request limited and, with limits, evictions counted (the table was full: the flood case).

Usage: python3 -m hsbench.access --ours PATH   (make bench-access)
Environment: BENCH_SECONDS (access; fairshare: FAIRSHARE_SECONDS, default 25), REPS (default 7), WARMUP_SECONDS,
BENCH_CPU_QUOTA, SERVER_CPU, CLIENT_CPU, BENCH_OUT (results in BENCH_OUT/access), ACCESS_CASES.
"""
import base64
import hashlib
import hmac
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from . import content, interleave, measure, procstat
from .__main__ import _env_int, _git_rev, round_order
from .cgroup import CpuQuota
from .placement import Client
from .progress import step
from .servers import Hyperstatic, free_port, http_get
from .workloads import LUA, Workload

KEY = b"0123456789abcdef0123456789abcdef"  # the session key (a bench secret, nothing to protect)
USER, PASSWORD = "bench", "bench-password"
LIMITED = 'hyperstatic_requests_limited_total{reason="per_client"}'
EVICTED = "hyperstatic_client_table_evictions_total"


def session_cookie() -> str:
    """A session cookie as the content agent mints it (guard/session.rs has the contract), valid for a day."""
    body = f"1|{int(time.time()) + 86400}|bench@example.com|eng"
    mac = base64.urlsafe_b64encode(hmac.new(KEY, body.encode(), hashlib.sha256).digest()).rstrip(b"=").decode()
    return f"{body}|{mac}"


def site_values(conf: str) -> dict[str, list[str]]:
    """Each variant's extra server flags, writing its site value (and the htpasswd and keys files) into `conf`."""
    htpasswd = subprocess.run(["htpasswd", "-nbB", "-C", "10", USER, PASSWORD], check=True, capture_output=True,
                              text=True).stdout.strip()
    with open(os.path.join(conf, "htpasswd"), "w") as f:
        f.write(htpasswd + "\n")
    with open(os.path.join(conf, "keys"), "w") as f:
        f.write(base64.b64encode(KEY).decode() + "\n")
    proxy = {"trustedProxies": ["127.0.0.1"]}
    # 100 per 10 minutes: a bucket used once is full again only 6 s later, so a bucket pushed out sooner counts as
    # an eviction (one already full again would not: hyperstatic_client_table_evictions_total)
    limits = {"perClient": {"requests": 100, "periodSeconds": 600, "burst": 100}}
    values = {
        "xff": {"access": proxy},
        "limits": {"access": proxy, "limits": limits},
        "limits-32m": {"access": proxy, "limits": limits},
        "public": {},
        "basic": {"access": {"htpasswdFile": "htpasswd",
                             "rules": [{"pathPrefix": "/", "basicAuth": {"realm": "bench"}}]}},
        "cookie": {"access": {"sso": {"loginURL": "/.hyperstatic/sso/login", "keysFile": "keys"},
                              "rules": [{"pathPrefix": "/", "signIn": {"groups": ["eng"]}}]}},
    }
    flags = {}
    for name, v in values.items():
        path = os.path.join(conf, f"{name}.json")
        with open(path, "w") as f:
            json.dump({"version": 1, "securityHeaders": False, **v}, f)
        flags[name] = ["--site", path] + (["--client-table-size", "32MiB"] if name == "limits-32m" else [])
    return flags


class SiteValued(Hyperstatic):
    """Ours with a site value file: its rules come from the file alone, so the flag every benchmark of ours passes
    (`--security-headers=false`, servers.Hyperstatic) is said in the value instead (`securityHeaders: false`)."""

    def argv(self) -> list[str]:
        return [a for a in super().argv() if a != "--security-headers=false"]

    def ready(self) -> bool:
        """The admin port's readiness alone: a protected variant answers the plain port 401 without credentials
        (check_answers looks at the content once it is up)."""
        return http_get(self.admin_port, "/readyz")[0] == 200


CASES = {
    "fairshare": (["xff", "limits", "limits-32m"], 0.95),
    "access": (["public", "basic", "cookie"], 0.90),
}


def workload(case: str, offset: int = 0) -> Workload:
    if case == "fairshare":
        return Workload("xff-distinct", "100 B keep-alive, c=100, a new X-Forwarded-For address per request",
                        content.SMALL_PATH, 100, 0.95, os.path.join(LUA, "xff_distinct.lua"),
                        [content.SMALL_PATH, str(offset)])
    auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    return Workload("100b-c100-auth", "100 B keep-alive, c=100, Authorization and Cookie", content.SMALL_PATH, 100,
                    0.90, headers=[f"Authorization: Basic {auth}", f"Cookie: theme=dark; hs_session={session_cookie()}"])


def check_answers(s: SiteValued, wl: Workload, samples: dict[str, bytes]) -> None:
    """The variant answers what it is meant to: the exact bytes on disk with the workload's headers, and a
    protected variant 401 without them (its rule is live: a variant that served everything would measure nothing)."""
    headers = dict(h.split(": ", 1) for h in wl.headers)
    for path, body in samples.items():
        status, got = http_get(s.port, path, headers=headers)
        if (status, got) != (200, body):
            raise RuntimeError(f"{s.name}: GET {path} -> {status}, {len(got)} bytes (want 200, {len(body)} bytes)")
    if s.name in ("basic", "cookie") and http_get(s.port, content.SMALL_PATH)[0] != 401:
        raise RuntimeError(f"{s.name}: {content.SMALL_PATH} without credentials is not refused: the rule is not live")


def summarize(runs: list[measure.Run], names: list[str], goal: float, rss_base: dict) -> list[dict]:
    ref = names[0]
    med = {n: {k: statistics.median(getattr(r, k) for r in runs if r.server == n)
               for k in ("rps", "req_per_cpu_s", "rss_bytes", "requests")} for n in names}
    rows = []
    for n in names:
        mine = [r for r in runs if r.server == n]
        # per round: this variant's req/CPU-s over the reference's in the same round (adjacent in time, so a
        # slow spell of the shared machine hits both sides of a ratio more often than the two medians)
        paired = [r.req_per_cpu_s / x.req_per_cpu_s for r in mine for x in runs
                  if x.server == ref and x.rep == r.rep and x.req_per_cpu_s > 0]
        ratio = med[n]["req_per_cpu_s"] / med[ref]["req_per_cpu_s"]
        rows.append({"variant": n, **med[n], "rps_range": [min(r.rps for r in mine), max(r.rps for r in mine)],
                     "cpu_range": [min(r.req_per_cpu_s for r in mine), max(r.req_per_cpu_s for r in mine)],
                     "rss_max": max(r.rss_bytes for r in mine), "rss_start": rss_base.get(n, 0),
                     "ratio": ratio, "paired": sorted(paired),
                     "paired_median": statistics.median(paired) if paired else float("nan"),
                     "met": None if n == ref else ratio >= goal})
    return rows


def markdown(case: str, rows: list[dict], meta: dict, goal: float, checks: list[str]) -> str:
    ref = rows[0]["variant"]
    out = [f"#### {case}: {' vs '.join(r['variant'] for r in rows)}; medians of {meta['reps']} × "
           f"{meta['seconds'][case]} s runs, interleaved", "",
           f"{meta['date']}, git {meta['git']}; server on CPU {meta['server_cpu']} at "
           f"{meta['cpu_quota_percent'] or 100}% of a core, 1 worker; wrk on CPU {meta['client_cpu']}; load average "
           f"{meta['loadavg_start']:.1f} → {meta['loadavg_end']:.1f} (a shared machine: see the spread)", "",
           f"| Variant | req/s (min–max) | req/CPU-s (min–max) | ÷ {ref} req/CPU-s (medians) | ÷ {ref} per round: median (min–max) | "
           f"requests per run | RSS at start → peak (max) | Goal ≥ {goal:.2f} |",
           "|---|--:|--:|--:|--:|--:|--:|---|"]
    for r in rows:
        paired = (f"{r['paired_median']:.3f} ({r['paired'][0]:.3f}–{r['paired'][-1]:.3f})"
                  if r["paired"] and r["variant"] != ref else "–")
        met = "–" if r["met"] is None else ("met" if r["met"] else "not met")
        out.append(f"| {r['variant']} | {r['rps']:,.0f} ({r['rps_range'][0]:,.0f}–{r['rps_range'][1]:,.0f}) | "
                   f"{r['req_per_cpu_s']:,.0f} ({r['cpu_range'][0]:,.0f}–{r['cpu_range'][1]:,.0f}) | "
                   f"{r['ratio']:.3f} | {paired} | {r['requests']:,.0f} | {r['rss_start'] / 2**20:.1f} → "
                   f"{r['rss_bytes'] / 2**20:.1f} MiB ({r['rss_max'] / 2**20:.1f}) | {met} |")
    return "\n".join(out + [""] + [f"- {c}" for c in checks]) + "\n"


def bench(ours: str, out: str, work: str, cleanup: list) -> int:
    reps, warmup = _env_int("REPS", 7), _env_int("WARMUP_SECONDS", 2)
    seconds = {"access": _env_int("BENCH_SECONDS", 7), "fairshare": _env_int("FAIRSHARE_SECONDS", 25)}
    quota, server_cpu, client_cpu = _env_int("BENCH_CPU_QUOTA", 40), _env_int("SERVER_CPU", 0), _env_int("CLIENT_CPU", 1)
    cases = [c.strip() for c in (os.environ.get("ACCESS_CASES", "") or "fairshare,access").split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        raise RuntimeError(f"ACCESS_CASES: unknown {unknown}; known: {list(CASES)}")
    site = content.generate(os.path.join(work, "site"))
    conf = os.path.join(work, "conf")
    os.makedirs(conf)
    flags = site_values(conf)
    binary = os.path.join(work, "hyperstatic-server")
    shutil.copy2(ours, binary)  # a private copy: a rebuild during the run cannot swap it underneath
    tag = f"hs-access-{os.getpid()}"
    client = Client(client_cpu, CpuQuota(f"{tag}-client", 0))
    cleanup.append(client.group.destroy)
    client.group.create()
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "git": _git_rev(), "reps": reps,
            "seconds": seconds, "warmup_seconds": warmup, "cpu_quota_percent": quota, "server_cpu": server_cpu,
            "client_cpu": client_cpu, "loadavg_start": os.getloadavg()[0], "nproc": os.cpu_count()}
    md, results = [], {}
    offset = 0
    for case in cases:
        names, goal = CASES[case]
        servers = []
        for name in names:
            s = SiteValued(binary=binary, admin_port=free_port(), extra_args=flags[name], port=free_port(),
                            root=site.root, cpu=server_cpu, quota=CpuQuota(f"{tag}-{name}", quota),
                            workdir=os.path.join(work, name))
            s.name = name
            servers.append(s)
            cleanup.append(s.stop)
        rss_base = {}
        for s in servers:
            s.start()
            check_answers(s, workload(case), site.samples)
            rss_base[s.name] = procstat.rss_bytes(s.pids())
        runs, total, n = [], reps * len(servers), 0
        for rep in range(reps):
            for s in round_order(servers, rep, 0, True):
                n += 1
                offset += 1 << 24  # a fresh range of 16.7 M addresses per run (lua/xff_distinct.lua)
                wl = workload(case, offset)
                r = measure.run_workload(s, wl, rep, seconds[case], warmup, client, quota)
                runs.append(r)
                if r.errors or r.non2xx:
                    raise RuntimeError(f"{s.name}: {r.errors} errors, {r.non2xx} non-2xx answers in {wl.key}: "
                                       f"the variant measured something else\n{s.log_tail()}")
                step(f"[{case} {n}/{total}] rep {rep + 1} {s.name:10} {r.rps:9,.0f} req/s  "
                     f"{r.req_per_cpu_s:9,.0f} req/CPU-s  {r.requests:,} requests  rss {r.rss_bytes / 2**20:.1f} MiB"
                     f"  cap use {r.cap_use:.0%}")
        checks = []
        for s in servers:
            m = s.metrics()
            if case == "fairshare":
                limited, evicted = m.get(LIMITED, -1), m.get(EVICTED, -1)
                reqs = sum(r.requests for r in runs if r.server == s.name)
                checks.append(f"{s.name}: {reqs:,} measured requests, each from a new address; "
                              f"limited {limited:.0f}, table evictions {evicted:,.0f}")
                # the 1 MiB table (65,536 buckets) overflows within seconds: it must count evictions; the 32 MiB
                # one holds about 2 M buckets, each pushed out long after it was full again (not counted)
                if limited != 0 or (s.name == "limits" and evicted <= 0):
                    raise RuntimeError(f"{s.name}: limited {limited}, evictions {evicted}: not the case measured")
            s.stop()
        meta["loadavg_end"] = os.getloadavg()[0]
        rows = summarize(runs, names, goal, rss_base)
        md.append(markdown(case, rows, meta, goal, checks))
        results[case] = {"rows": rows, "runs": [r.row() for r in runs], "checks": checks}
    os.makedirs(out, exist_ok=True)
    text = "\n".join(md)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"meta": meta, **results}, f, indent=1, default=str)
    print(text)
    return 0


def main() -> int:
    return interleave.main("access", __doc__, bench, tools=(
        ("htpasswd", "htpasswd (Debian's apache2-utils) is needed for the basic-auth variant's bcrypt hash"),))


if __name__ == "__main__":
    sys.exit(main())
