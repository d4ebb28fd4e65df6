"""make bench-pool: one server, many sites (issue 40). Our server with `--sites DIR` on a pool of (a) 10,000 small
sites of 20 files and (b) 100 copies of the Python docs, each case measured against the same binary with `--root`
on one of those sites, in the same interleaved run:

- RSS after start (index read, nothing requested) and after the load runs;
- start to first 200: spawn → the first 200 for a site's /index.html (STARTUP_REPS launches of each server);
- first request to a cold site (never requested since start): POOL_COLD_PROBES distinct sites, raw socket
  (poolprobe.py): the first answer's status and time, the time to the first 200, the next request's time;
- req/s and requests per server CPU-second on the mix of poolmix.py (90 % of requests on a tenth of the sites, 10 %
  on the rest) replayed by wrk (lua/pool.lua), the single-site server getting the same paths with one fixed Host;
  REPS rounds with the order rotating, medians and min–max; pool ÷ single per CPU-second against the goal 0.9;
- with POOL_BASELINE=BINARY, that build as a second pool in the same rounds: this build ÷ that one (a change to the
  server measured on the pool mix, not across runs whose machine differs);
- the breakdown of pool ÷ single (POOL_BREAKDOWN, on unless 0), two more servers in the same rounds: a second pool
  given only the mix's hot requests ("pool-hot"), and a single-site server holding the hot sites' files side by
  side under one root, given the same requests by path ("single-hot"). pool-hot ÷ single-hot is what serving many
  sites costs over one site with the same files; single-hot ÷ single what the hot set's size costs any server (the
  CPU's caches); pool ÷ pool-hot what the cold tenth costs (served from disk). Their product is pool ÷ single.

Pinned and capped as every other benchmark here: servers on SERVER_CPU under BENCH_CPU_QUOTA, wrk and this harness
on CLIENT_CPU in a high-weight cgroup at nice -20. Usage: python3 -m hsbench.pool --ours PATH --out DIR; knobs in
pool.sh and README.md ("One server, many sites").
"""
import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

from . import load, measure, poolmix, poolprobe, poolreport, pooltree, procstat, sitemap
from .__main__ import _env_int, _git_rev, round_order, run_in_workdir
from .cgroup import CgroupError, CpuQuota
from .placement import Client, boost
from .progress import step, warn
from .servers import Hyperstatic, free_port, http_get
from .workloads import LUA, Workload

DOCS = "/usr/share/doc/python3.11/html"
PAGE = "/index.html"
GOAL = 0.9  # pool ÷ single-site, requests per server CPU-second (issue 40)
# Both servers: no background encoder (a pool never runs one: its sites serve the siblings their trees hold; the
# single-site server would otherwise spend CPU encoding during the first runs), and the flags every benchmark here
# gives ours (servers.Hyperstatic.argv).
COMMON_ARGS = ["--compress=false"]
# A pool pod has a memory limit, and the pool keeps its sites' trees within the budget derived from it: the coldest
# evicted from memory first, files past it served from disk (site/memory.rs). The benchmark's cgroup caps CPU only,
# so the limit is given as the flag (POOL_MEMORY_LIMIT; empty or 0: none, the server then finds no limit). 2 GiB
# gives an 888 MiB content budget: in both cases the hot tenth fits (small: 1,000 × 166 KB; docs: 10 × 67 MB) and
# the whole pool does not (1.7 GB; 6.7 GB), so the mix meets what the issue describes: hot sites in memory, the
# rest from disk. (With 1 GiB, 440 MiB, the docs pool's hot sites no longer fit and evict one another.)
MEMORY_LIMIT = "2GiB"
# What servers.Hyperstatic gives every server of ours that is a site rule: with --sites the index's value says it.
POOL_REFUSES = ("--security-headers=false",)


@dataclass
class Settings:
    ours: str
    out: str
    seconds: int
    reps: int
    warmup: int
    quota_pct: int
    server_cpu: int
    client_cpu: int
    connections: int
    startup_reps: int
    cold_probes: int
    small_sites: int
    docs_sites: int
    prime_seconds: int
    cases: list[str]
    extra_args: list[str]
    docs: str
    trees: str
    memory_limit: str = ""
    # POOL_BASELINE: another build of the server, run as a second pool in the same rounds (this build ÷ that one).
    baseline: str = ""
    # POOL_BREAKDOWN: the pool-hot and single-hot servers (module documentation).
    breakdown: bool = True

    @classmethod
    def from_env(cls, ours: str, out: str) -> "Settings":
        reps = _env_int("REPS", 3)
        cases = [c.strip() for c in (os.environ.get("POOL_CASES") or "small,docs").split(",") if c.strip()]
        bad = [c for c in cases if c not in ("small", "docs")]
        if bad:
            raise SystemExit(f"POOL_CASES: unknown {bad} (small, docs)")
        return cls(ours=ours, out=out, seconds=_env_int("BENCH_SECONDS", 7), reps=reps,
                   warmup=_env_int("WARMUP_SECONDS", 2), quota_pct=_env_int("BENCH_CPU_QUOTA", 40),
                   server_cpu=_env_int("SERVER_CPU", 0), client_cpu=_env_int("CLIENT_CPU", 1),
                   connections=_env_int("POOL_CONNECTIONS", 100), startup_reps=_env_int("STARTUP_REPS", reps),
                   cold_probes=_env_int("POOL_COLD_PROBES", 50), small_sites=_env_int("POOL_SITES", 10000),
                   docs_sites=_env_int("POOL_DOCS_SITES", 100), prime_seconds=_env_int("POOL_PRIME_SECONDS", 5),
                   cases=cases, extra_args=shlex.split(os.environ.get("BENCH_SERVER_ARGS", "")),
                   docs=os.environ.get("SITE_DOCS") or DOCS,
                   trees=os.environ.get("POOL_TREES") or os.path.join(out, "trees"),
                   memory_limit=os.environ.get("POOL_MEMORY_LIMIT", MEMORY_LIMIT).strip(),
                   baseline=os.environ.get("POOL_BASELINE", "").strip(),
                   breakdown=os.environ.get("POOL_BREAKDOWN", "1").strip() not in ("0", ""))

    def server_args(self) -> list[str]:
        """The flags both servers get beside servers.Hyperstatic's."""
        limit = [f"--memory-limit={self.memory_limit}"] if self.memory_limit not in ("", "0") else []
        return COMMON_ARGS + limit + self.extra_args

    def estimate_seconds(self) -> float:
        servers = 2 + bool(self.baseline) + 2 * self.breakdown
        per_case = (self.reps * servers * (self.seconds + self.warmup + 1.5) + self.startup_reps * 2 * 3
                    + self.cold_probes * 0.1 + servers * self.prime_seconds + 20)
        return len(self.cases) * per_case


# RLIMIT_NOFILE a pod's container gets from containerd (and Docker) by default: a pool serving files from disk holds
# one descriptor per such file, so the benchmark gives both servers what a pod would have, where the kernel lets it
# (raising the hard limit needs root with CAP_SYS_RESOURCE; without it they keep servers.raise_nofile's, the hard
# limit up to 65,536). The report shows the limit each server had and its open descriptors after the runs.
POD_NOFILE = 1 << 20


def raise_nofile_as_a_pod() -> None:
    """Between fork and exec, after Server._preexec: RLIMIT_NOFILE to POD_NOFILE (at most fs.nr_open), if allowed."""
    want = POD_NOFILE
    try:
        with open("/proc/sys/fs/nr_open") as f:
            want = min(want, int(f.read()))
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
    except (OSError, ValueError):
        pass


class SingleServer(Hyperstatic):
    """Ours with `--root` on one site of the pool, with the pool's descriptor limit."""
    name = "single"
    ready_path = PAGE

    def _preexec(self) -> None:
        super()._preexec()
        raise_nofile_as_a_pod()


class PoolServer(Hyperstatic):
    """Ours with `--sites DIR`: ready when its admin port says so (it answers no request without a known Host)."""
    name = "pool"

    def _preexec(self) -> None:
        super()._preexec()
        raise_nofile_as_a_pod()

    def argv(self) -> list[str]:
        """The single-site argv with `--sites` for `--root`, less the site-rule flags a pool refuses (its sites'
        values say the same: pooltree.VALUE)."""
        argv = [a for a in super().argv() if a not in POOL_REFUSES]
        i = argv.index("--root")
        return argv[:i] + ["--sites", self.root] + argv[i + 2:]

    def ready(self) -> bool:
        status, _ = http_get(self.admin_port, "/readyz")
        return status == 200

    def sites_report(self) -> dict:
        status, body = http_get(self.admin_port, "/sites", timeout=30.0)
        if status != 200:
            raise RuntimeError(f"GET /sites on the admin port -> {status}")
        return json.loads(body)


class BaselinePoolServer(PoolServer):
    """Another build with `--sites` (POOL_BASELINE): measured in the same rounds as this build's pool."""
    name = "baseline"


class HotPoolServer(PoolServer):
    """This build's pool again, given only the mix's hot requests (the breakdown)."""
    name = "pool-hot"


class HotSetServer(SingleServer):
    """This build with `--root` on the hot sites' files side by side (pooltree.hot_set_tree; the breakdown)."""
    name = "single-hot"

    def ready(self) -> bool:
        # Its root has no page of its own: ready when its admin port says so.
        status, _ = http_get(self.admin_port, "/readyz")
        return status == 200


def version_of(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=5)
        return ((out.stdout or out.stderr).strip().splitlines() or ["unknown"])[0]
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def servers_for(cfg: Settings, prep: "Prepared", work: str, tag: str) -> list[Hyperstatic]:
    """The pool and the single site, both this build; with POOL_BASELINE, the pool on that build; with
    POOL_BREAKDOWN, pool-hot and single-hot (this build)."""
    pool = prep.pool
    binary = os.path.join(work, "hyperstatic-server")
    if not os.path.exists(binary):
        shutil.copy2(cfg.ours, binary)  # a private copy: a rebuild during the run cannot swap it underneath
    args = cfg.server_args()
    kind = pool.meta["kind"]
    p = PoolServer(binary=binary, admin_port=free_port(), extra_args=args, root=pool.dir, port=free_port(),
                   cpu=cfg.server_cpu, quota=CpuQuota(f"{tag}-{kind}-pool", cfg.quota_pct),
                   workdir=os.path.join(work, kind, "pool"))
    s = SingleServer(binary=binary, admin_port=free_port(), extra_args=args,
                     root=pooltree.tree_of(pool.dir, pool.ids[0]), port=free_port(), cpu=cfg.server_cpu,
                     quota=CpuQuota(f"{tag}-{kind}-single", cfg.quota_pct), workdir=os.path.join(work, kind, "single"))
    out: list[Hyperstatic] = [p, s]
    if cfg.baseline:
        other = os.path.join(work, "baseline-hyperstatic-server")
        if not os.path.exists(other):
            shutil.copy2(cfg.baseline, other)
        out.append(BaselinePoolServer(binary=other, admin_port=free_port(), extra_args=args, root=pool.dir,
                                      port=free_port(), cpu=cfg.server_cpu,
                                      quota=CpuQuota(f"{tag}-{kind}-baseline", cfg.quota_pct),
                                      workdir=os.path.join(work, kind, "baseline")))
    if cfg.breakdown:
        out.append(HotPoolServer(binary=binary, admin_port=free_port(), extra_args=args, root=pool.dir,
                                 port=free_port(), cpu=cfg.server_cpu,
                                 quota=CpuQuota(f"{tag}-{kind}-pool-hot", cfg.quota_pct),
                                 workdir=os.path.join(work, kind, "pool-hot")))
        out.append(HotSetServer(binary=binary, admin_port=free_port(), extra_args=args, root=prep.hot_set_root,
                                port=free_port(), cpu=cfg.server_cpu,
                                quota=CpuQuota(f"{tag}-{kind}-single-hot", cfg.quota_pct),
                                workdir=os.path.join(work, kind, "single-hot")))
    return out


def startup_phase(cfg: Settings, servers, host: str) -> list[dict]:
    """Spawn → first 200 for the first site's page, STARTUP_REPS times per server, order rotating; RSS then."""
    rows = []
    for rep in range(cfg.startup_reps):
        for s in round_order(servers, rep, 0, True):
            s.launch()
            try:
                secs, not_200 = poolprobe.first_200(s.port, host, PAGE, s.launched_at, s.alive)
            except poolprobe.ProbeError as e:
                raise RuntimeError(f"{s.name}: {e}\n{s.log_tail()}") from e
            rss = procstat.rss_bytes(s.pids())
            s.stop()
            rows.append({"rep": rep, "server": s.name, "seconds": secs, "rss_bytes": rss, "answers_before": not_200})
            step(f"startup rep {rep + 1} {s.name:6} first 200 after {secs * 1000:7.1f} ms "
                 f"({not_200} answers before it), RSS {rss / 1e6:.1f} MB")
    return rows


def cold_phase(cfg: Settings, pool: pooltree.Pool, server: PoolServer, cold_ids: list[str]) -> list[dict]:
    """The first request to each of up to POOL_COLD_PROBES sites never asked for since start (the last ones of
    the cold set, spread over the shards by their hash)."""
    rows = []
    for site_id in cold_ids[-cfg.cold_probes:] if cfg.cold_probes else []:
        with open(os.path.join(pooltree.tree_of(pool.dir, site_id), PAGE.lstrip("/")), "rb") as f:
            want = f.read()
        try:
            c = poolprobe.cold(server.port, site_id, pooltree.hosts_of(site_id)[0], PAGE, want)
        except (OSError, poolprobe.ProbeError) as e:
            raise RuntimeError(f"cold site {site_id}: {e}\n{server.log_tail()}") from e
        rows.append(c.row())
    if rows:
        first = [r["first_ms"] for r in rows]
        to200 = [r["to_200_ms"] for r in rows]
        statuses = sorted({r["first_status"] for r in rows})
        step(f"cold sites: {len(rows)} first requests, first answer {statuses} in median "
             f"{statistics.median(first):.2f} ms (max {max(first):.2f}), first 200 after median "
             f"{statistics.median(to200):.2f} ms (max {max(to200):.2f})")
    return rows


def check_phase(pool: pooltree.Pool, servers, entries: list[tuple[str, str]], single_host: str,
                samples: int = 60) -> int:
    """Before timing: evenly spaced requests of the mix, from both servers, must be 200 with the file's bytes
    (the pool: that site's tree; the single server: its one tree, asked with its one Host)."""
    host_to_id = {pooltree.hosts_of(i)[0]: i for i in pool.ids}
    step_n = max(1, len(entries) // samples)
    picked = entries[::step_n][:samples]
    pool_server, single = servers
    for host, path in picked:
        site_id = host_to_id[host]
        with open(sitemap.file_of(pooltree.tree_of(pool.dir, site_id), path), "rb") as f:
            want = f.read()
        status, body = poolprobe.fetch_until_200(pool_server.port, host, path)
        if status != 200 or body != want:
            raise RuntimeError(f"pool: {host}{path} -> {status}, {len(body)} bytes (want 200, {len(want)})")
        with open(sitemap.file_of(single.root, path), "rb") as f:
            want = f.read()
        status, body = poolprobe.fetch_until_200(single.port, single_host, path)
        if status != 200 or body != want:
            raise RuntimeError(f"single: {path} -> {status}, {len(body)} bytes (want 200, {len(want)})")
    return len(picked)


def check_breakdown(pool: pooltree.Pool, pool_hot: PoolServer, single_hot: HotSetServer,
                    hot: list[tuple[str, str]], by_path: list[tuple[str, str]], samples: int = 30) -> int:
    """Before timing: evenly spaced hot requests, by Host from pool-hot and by path from single-hot (the same
    request in both lists at the same place), must be 200 with the file's bytes: a 404 would be fast."""
    host_to_id = {pooltree.hosts_of(i)[0]: i for i in pool.ids}
    step_n = max(1, len(hot) // samples)
    picked = list(range(0, len(hot), step_n))[:samples]
    for k in picked:
        (host, path), (one_host, one_path) = hot[k], by_path[k]
        with open(sitemap.file_of(pooltree.tree_of(pool.dir, host_to_id[host]), path), "rb") as f:
            want = f.read()
        for name, port, h, p in (("pool-hot", pool_hot.port, host, path), ("single-hot", single_hot.port, one_host,
                                                                            one_path)):
            status, body = poolprobe.fetch_until_200(port, h, p)
            if status != 200 or body != want:
                raise RuntimeError(f"{name}: {h}{p} -> {status}, {len(body)} bytes (want 200, {len(want)})")
    return len(picked)


def open_files(pid: int) -> dict:
    """The process's open descriptors and its RLIMIT_NOFILE: a pool serving files from disk keeps them open
    (site/memory.rs charges each), so many sites on disk meet the limit (servers.raise_nofile gives it the hard
    limit, at most 65,536)."""
    soft = None
    try:
        with open(f"/proc/{pid}/limits") as f:
            for line in f:
                if line.startswith("Max open files"):
                    soft = int(line.split()[3])
        n = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError, IndexError):
        return {}
    return {"open": n, "limit": soft}


def sites_summary(report: dict) -> dict:
    """/sites (docs/design/pools.md: one entry per site, `error` the last failure), boiled down: sites by
    state, the totals the report quotes, and the first few distinct errors."""
    sites = report.get("sites", [])
    states: dict[str, int] = {}
    for s in sites:
        states[s.get("state", "?")] = states.get(s.get("state", "?"), 0) + 1
    return {"sites": len(sites), "states": states,
            "requests": sum(s.get("requests", 0) for s in sites),
            "rate_limited": sum(s.get("rateLimited", 0) for s in sites),
            "memory_bytes": sum(s.get("memoryBytes", 0) for s in sites),
            "errors": sorted({s["error"] for s in sites if s.get("error")})[:5],
            "sites_with_errors": sum(1 for s in sites if s.get("error"))}


def paths_of(cfg: Settings, pool: pooltree.Pool, out: str) -> tuple[list[str], dict]:
    """The paths each site's requests walk: the small site's 20 files; for the docs, the browser-like mix of make
    bench-site (every page, then its assets) built from the first copy."""
    if pool.meta["kind"] == "small":
        return pool.paths, {"paths": len(pool.paths)}
    ul = sitemap.build(pooltree.tree_of(pool.dir, pool.ids[0]))
    sitemap.write(ul.urls, os.path.join(out, "docs-urls.txt"))
    return ul.urls, {"paths": len(ul.urls), "unique": len(ul.unique()), "pages": ul.pages}


@dataclass
class Prepared:
    """A case's pool on disk and its request list."""
    kind: str
    pool: pooltree.Pool
    hosts: list[str]      # each site's first host, in the order of pool.ids
    hot: list[str]
    entries: list[tuple[str, str]]
    list_file: str
    mix: dict
    # The breakdown's (POOL_BREAKDOWN): the hot requests by Host, the same by path, and the tree that serves those.
    hot_list_file: str = ""
    hot_set_list_file: str = ""
    hot_set_root: str = ""


def prepare(cfg: Settings, kind: str) -> Prepared:
    """Writes (or keeps) the case's pool and its request list; at the harness's normal priority, before it raises
    itself to the benchmark's."""
    trees = cfg.trees
    t0 = time.monotonic()
    if kind == "small":
        step(f"small pool: {cfg.small_sites:,} sites × {len(pooltree.SMALL_FILES)} files in {trees}/small "
             "(kept between runs)")
        pool = pooltree.small_pool(os.path.join(trees, "small"), cfg.small_sites)
    else:
        src = pooltree.copy_source(cfg.docs, os.path.join(trees, "docs-source"))
        step(f"docs pool: {cfg.docs_sites} copies of {cfg.docs} as hard links in {trees}/docs (kept between runs)")
        pool = pooltree.docs_pool(os.path.join(trees, "docs"), src, cfg.docs_sites)
    pool.meta["generate_seconds"] = time.monotonic() - t0
    step(f"{kind} pool ready in {pool.meta['generate_seconds']:.1f} s{' (kept)' if pool.meta.get('kept') else ''}: "
         f"{len(pool.ids):,} sites, {pool.files:,} files, {pool.bytes / 1e6:,.0f} MB as served")

    paths, paths_meta = paths_of(cfg, pool, cfg.out)
    hosts = [pooltree.hosts_of(i)[0] for i in pool.ids]
    hot, cold = poolmix.split(hosts)
    entries = poolmix.build(hot, cold, paths)
    list_file = poolmix.write(entries, os.path.join(cfg.out, f"{kind}-requests.txt"))
    mix = {**poolmix.shares(entries, hot), **paths_meta}
    step(f"{kind} mix: {mix['requests']:,} requests per pass, {mix['hot_share']:.0%} on {mix['hot_sites']:,} hot "
         f"sites, the rest on {mix['cold_sites']:,} cold ones; {list_file}")
    prep = Prepared(kind, pool, hosts, hot, entries, list_file, mix)
    if cfg.breakdown:
        hot_entries = poolmix.hot_only(entries, hot)
        site_of = dict(zip(hosts, pool.ids))
        prep.hot_list_file = poolmix.write(hot_entries, os.path.join(cfg.out, f"{kind}-hot-requests.txt"))
        prep.hot_set_list_file = poolmix.write(poolmix.in_one_root(hot_entries, site_of, hosts[0]),
                                               os.path.join(cfg.out, f"{kind}-hot-set-requests.txt"))
        t0 = time.monotonic()
        prep.hot_set_root = pooltree.hot_set_tree(os.path.join(trees, f"{kind}-hot-set"), pool, pool.ids[:len(hot)])
        step(f"{kind} breakdown: {len(hot_entries):,} hot requests; the {len(hot):,} hot sites side by side in "
             f"{prep.hot_set_root} ({time.monotonic() - t0:.1f} s)")
    return prep


def case(cfg: Settings, prep: Prepared, client: Client, work: str, cleanup: list) -> dict:
    """One pool and its single-site server, measured from start to the end of the load rounds."""
    kind, pool, hosts, hot, entries, list_file, mix = (prep.kind, prep.pool, prep.hosts, prep.hot, prep.entries,
                                                       prep.list_file, prep.mix)
    tag = f"hs-pool-{os.getpid()}"
    servers = servers_for(cfg, prep, work, tag)
    pool_server, single = servers[0], servers[1]
    cleanup += [s.stop for s in servers]
    single_host = hosts[0]

    step(f"{kind}: spawn → first 200 for {single_host}{PAGE}, {cfg.startup_reps} × each server")
    startup = startup_phase(cfg, [pool_server, single], single_host)

    for s in servers:
        s.start()
    rss_start = {s.name: procstat.rss_bytes(s.pids()) for s in servers}
    step(f"{kind}: RSS after start {', '.join(f'{n} {b / 1e6:.1f} MB' for n, b in rss_start.items())}")
    cold_ids = pool.ids[len(hot):]  # split() keeps the order: the hot sites first
    cold_rows = cold_phase(cfg, pool, pool_server, cold_ids)
    checked = check_phase(pool, (pool_server, single), entries, single_host)
    step(f"{kind}: {checked} requests of the mix checked on both servers (200, the file's bytes)")
    by_name = {x.name: x for x in servers}
    if cfg.breakdown:
        n = check_breakdown(pool, by_name["pool-hot"], by_name["single-hot"], poolmix.read(prep.hot_list_file),
                            poolmix.read(prep.hot_set_list_file))
        step(f"{kind}: {n} hot requests checked on pool-hot and single-hot (200, the file's bytes)")

    wl = {"pool": Workload(f"pool-{kind}", f"{kind} pool mix, c={cfg.connections}", "/", cfg.connections, GOAL,
                           os.path.join(LUA, "pool.lua"), [list_file, "-"], floor=False),
          "single": Workload(f"pool-{kind}", f"{kind} pool mix, c={cfg.connections}", "/", cfg.connections, GOAL,
                             os.path.join(LUA, "pool.lua"), [list_file, single_host], floor=False)}
    wl["baseline"] = wl["pool"]
    if cfg.breakdown:
        wl["pool-hot"] = Workload(f"pool-{kind}", f"{kind} pool mix, hot requests only, c={cfg.connections}", "/",
                                  cfg.connections, GOAL, os.path.join(LUA, "pool.lua"), [prep.hot_list_file, "-"],
                                  floor=False)
        wl["single-hot"] = Workload(f"pool-{kind}", f"{kind} pool mix, hot requests by path, c={cfg.connections}",
                                    "/", cfg.connections, GOAL, os.path.join(LUA, "pool.lua"),
                                    [prep.hot_set_list_file, single_host], floor=False)
    for s in servers:  # untimed: the pool loads its hot sites, both reach their steady state
        if cfg.prime_seconds:
            load.warm(s, wl[s.name], cfg.prime_seconds, client, load.Clients())
    runs: list[measure.Run] = []
    for rep in range(cfg.reps):
        for s in round_order(servers, rep, 0 if kind == "small" else 1, True):
            r = measure.run_workload(s, wl[s.name], rep, cfg.seconds, cfg.warmup, client, cfg.quota_pct)
            runs.append(r)
            step(f"rep {rep + 1} {kind:5} {s.name:6} {r.rps:9,.0f} req/s  cpu {r.cpu_s:5.2f} s  "
                 f"{r.req_per_cpu_s:8,.0f} req/CPU-s  non-2xx {r.non2xx:,}  rss {r.rss_end_bytes / 1e6:6.1f} MB  "
                 f"cap use {r.cap_use:.0%}  wrk cpu {r.client_cpu_s:4.1f} s{poolreport.run_note(r.row(), cfg.quota_pct)}")
    rss_end = {s.name: procstat.rss_bytes(s.pids()) for s in servers}
    fds = {s.name: open_files(s.proc.pid) for s in servers}
    sites = sites_summary(pool_server.sites_report())
    step(f"{kind}: RSS after the runs {', '.join(f'{n} {b / 1e6:.1f} MB' for n, b in rss_end.items())}; "
         f"pool sites by state {sites['states']}")
    for s in servers:
        s.stop()
    return {"pool": pool.meta, "mix": mix, "single_site": pool.ids[0], "startup": startup, "rss_start": rss_start,
            "cold": cold_rows, "checked": checked, "runs": [r.row() for r in runs], "rss_end": rss_end,
            "sites_after": sites, "open_files_end": fds}


def bench(cfg: Settings, work: str, cleanup: list) -> int:
    os.makedirs(cfg.out, exist_ok=True)
    tag = f"hs-pool-{os.getpid()}"
    client = Client(cfg.client_cpu, CpuQuota(f"{tag}-client", 0))
    cleanup.append(client.group.destroy)
    prepared = [prepare(cfg, kind) for kind in cfg.cases]
    client.group.create()
    # The harness times the startups and the cold requests itself: it runs like wrk (client CPU, high-weight
    # cgroup, nice -20), or on a busy machine its polling is late.
    client.group.join_self()
    boost()
    os.sched_setaffinity(0, {cfg.client_cpu})
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "git": _git_rev(), "seconds": cfg.seconds,
            "reps": cfg.reps, "warmup_seconds": cfg.warmup, "prime_seconds": cfg.prime_seconds,
            "cpu_quota_percent": cfg.quota_pct, "server_cpu": cfg.server_cpu, "client_cpu": cfg.client_cpu,
            "connections": cfg.connections, "startup_reps": cfg.startup_reps, "cold_probes": cfg.cold_probes,
            "server_args": cfg.server_args(), "memory_limit": cfg.memory_limit, "kernel": os.uname().release, "goal": GOAL,
            "version": version_of(cfg.ours),
            "loadavg_start": os.getloadavg()[0]}
    if cfg.baseline:
        meta["baseline"] = {"binary": cfg.baseline, "version": version_of(cfg.baseline)}
    cases = {}
    for prep in prepared:
        cases[prep.kind] = case(cfg, prep, client, work, cleanup)
    meta["loadavg_end"] = os.getloadavg()[0]
    data = {"meta": meta, "cases": cases}
    with open(os.path.join(cfg.out, "results.json"), "w") as f:
        json.dump(data, f, indent=1, default=str)
    md = poolreport.render(cfg.out)
    step(f"results in {cfg.out}: results.json, summary.md, *-requests.txt")
    print(md)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(prog="hsbench.pool", description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ours", required=True, help="path of the hyperstatic-server binary")
    ap.add_argument("--out", default=os.path.join(os.environ.get("BENCH_OUT", "_out/bench"), "pool"))
    args = ap.parse_args()
    cfg = Settings.from_env(os.path.abspath(args.ours), os.path.abspath(args.out))
    problems = [f"{t} not found (pool.sh installs it)" for t in ("wrk", "taskset") if not shutil.which(t)]
    if "docs" in cfg.cases and not os.path.isdir(cfg.docs):
        problems.append(f"{cfg.docs} missing (pool.sh installs python3.11-doc)")
    if not os.access(cfg.ours, os.X_OK):
        problems.append(f"server binary {cfg.ours} is not executable")
    for p in problems:
        warn(p)
    if problems:
        return 2
    names = ["pool", "single site"] + ["baseline"] * bool(cfg.baseline) + ["pool-hot", "single-hot"] * cfg.breakdown
    step(f"plan: {', '.join(cfg.cases)} × ({', '.join(names)}) × {cfg.reps} reps of {cfg.seconds} s "
         f"(+{cfg.warmup} s warm-up), {cfg.startup_reps} startups each, {cfg.cold_probes} cold sites ≈ "
         f"{cfg.estimate_seconds() / 60:.1f} min (+ writing the trees on the first run); servers on CPU "
         f"{cfg.server_cpu} at {cfg.quota_pct or 100}% of a core, wrk on CPU {cfg.client_cpu}")
    return run_in_workdir("hs-pool-", "pool benchmark", lambda work, cleanup: bench(cfg, work, cleanup),
                          (CgroupError, RuntimeError, OSError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
