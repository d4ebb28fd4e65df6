"""make bench-site: the Python 3.11 docs (Debian's python3.11-doc) served by our server and every peer, each with
the same precompressed .br/.gz siblings, on one pinned CPU under the same quota as make bench-server.

Measures per server: (a) time from spawn to the first 200, (b) RSS after warm-up and after each run, (c) req/s and
requests per server CPU-second for a browser-like mix (sitemap.py) at a couple of concurrencies. Everything is
checked first (sitecheck.py). Usage: python3 -m hsbench.site --ours PATH --out DIR; knobs in site.sh / README.md.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

from . import load, measure, procstat, report, sitecheck, sitemap, sitepeers, sitereport, tls
from .__main__ import _env_int, _git_rev, round_order, run_in_workdir
from .cgroup import CgroupError, CpuQuota
from .placement import Client, boost
from .progress import step, warn
from .servers import Hyperstatic, parse_peers
from .workloads import LUA, Workload

DOCS = "/usr/share/doc/python3.11/html"
ACCEPT = "gzip, deflate, br"  # what Chrome and Firefox send over plain HTTP


H2_ACCEPT = "br"  # the h2 row: what a browser gets over HTTPS, where every one of them offers br


def workloads(conns: list[int], url_file: str, accept: str, h2: bool = False) -> list[Workload]:
    # no target ratio: this workload reports where we stand, it does not gate anything (target 0)
    out = [Workload(f"site-c{c}", f"Python docs mix, c={c}", "/", c, 0.0, os.path.join(LUA, "site.lua"),
                    [url_file, accept], floor=False) for c in conns]
    if h2:
        # the same mix over HTTP/2 (TLS), h2load walking the URL list with a browser's br; issue 26's goal 1.3×
        out.append(Workload("site-h2", "Python docs mix, h2 with br c=100 m=10", "/", 100, 1.3, floor=False,
                            tls=True, client="h2load", streams=10, uris=url_file,
                            headers=[f"Accept-Encoding: {H2_ACCEPT}"]))
    return out


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
    conns: list[int]
    startup_reps: int
    peers: list[str]
    extra_args: list[str]
    docs: str
    accept: str
    h2: bool = True   # SITE_H2=0 leaves out the h2 row (and the servers' TLS listeners)

    @classmethod
    def from_env(cls, ours: str, out: str) -> "Settings":
        reps = _env_int("REPS", 3)
        return cls(ours=ours, out=out, seconds=_env_int("BENCH_SECONDS", 7), reps=reps,
                   warmup=_env_int("WARMUP_SECONDS", 2), quota_pct=_env_int("BENCH_CPU_QUOTA", 40),
                   server_cpu=_env_int("SERVER_CPU", 0), client_cpu=_env_int("CLIENT_CPU", 1),
                   conns=[int(c) for c in (os.environ.get("SITE_CONNECTIONS") or "10,100").split(",") if c.strip()],
                   startup_reps=_env_int("STARTUP_REPS", reps),
                   peers=[p for p in parse_peers(os.environ.get("PEERS", "")) if p != "floor"],
                   extra_args=shlex.split(os.environ.get("BENCH_SERVER_ARGS", "")),
                   docs=os.environ.get("SITE_DOCS") or DOCS, accept=os.environ.get("SITE_ACCEPT_ENCODING") or ACCEPT,
                   h2=os.environ.get("SITE_H2", "1") not in ("0", ""))

    def estimate_seconds(self) -> float:
        servers = 1 + len(self.peers)
        load = self.reps * (len(self.conns) + self.h2) * servers * (self.seconds + self.warmup + 1.5)
        return load + self.startup_reps * servers * 3 + servers * 20 + 30  # startups, check pass, copy


def prepare(cfg: Settings) -> tuple[str, dict]:
    """Copy the docs (following their symlinks into /usr/share/javascript) and precompress the copy with our
    server, so every server gets the same siblings. The copy stays in OUT/tree between runs: cp -p keeps the
    package's mtimes, so precompress finds its siblings newer and redoes only what changed (the first run encodes
    all of it: about 1.5 min here). Delete the tree to start from scratch. Returns the tree and what was done."""
    root = os.path.join(cfg.out, "tree")
    os.makedirs(root, exist_ok=True)
    step(f"copying {cfg.docs} to {root} (cp -rL: the docs link jquery.js etc. from /usr/share/javascript)")
    subprocess.run(["cp", "-rL", "--preserve=mode,timestamps", cfg.docs + "/.", root], check=True)
    for d in (cfg.out, root):
        os.chmod(d, 0o755)  # every server reads the tree
    t0 = time.monotonic()
    step("precompressing the copy: hyperstatic-server precompress (writes .br/.gz/.zst siblings)")
    res = subprocess.run([cfg.ours, "precompress", root], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"precompress failed ({res.returncode}):\n{res.stdout}")
    said = (res.stdout.strip().splitlines() or [""])[-1]
    step(said)
    files = sum(len(f) for _, _, f in os.walk(root))
    return root, {"docs": cfg.docs, "precompress": said, "precompress_seconds": time.monotonic() - t0,
                  "files_after_precompress": files}


def startup_phase(cfg: Settings, servers) -> list[dict]:
    """(a) spawn → first 200 for /index.html, STARTUP_REPS times per server, order rotating; also the RSS then."""
    rows = []
    for rep in range(cfg.startup_reps):
        for s in round_order(servers, rep, 0, True):
            s.launch()
            try:
                secs = sitecheck.first_200(s.port, sitepeers.PAGE, s.launched_at, s.alive)
            except RuntimeError as e:
                raise RuntimeError(f"{s.name}: {e}\n{s.log_tail()}") from e
            rss = procstat.rss_bytes(s.pids())
            s.wait_ready()
            s.stop()
            rows.append({"rep": rep, "server": s.name, "seconds": secs, "rss_bytes": rss})
            step(f"startup rep {rep + 1} {s.name:12} first 200 after {secs * 1000:7.1f} ms, RSS {rss / 1e6:.1f} MB")
    return rows


def check_phase(cfg: Settings, servers, root: str, urls: list[str]) -> dict:
    """Every unique URL from every server, checked; this also fills lighttpd's compression cache."""
    out = {}
    for s in servers:
        r = sitecheck.check(s.name, s.port, root, urls, cfg.accept, sitepeers.OFFERS[s.name])
        enc = ", ".join(f"{k} {v}" for k, v in sorted(r.encodings.items()))
        step(f"{s.name}: {r.urls} URLs checked ({enc}; {r.bytes_sent / 1e6:.1f} MB of bodies), "
             f"{len(r.problems)} problems")
        if r.problems:
            raise RuntimeError(f"{s.name} serves the site wrongly ({len(r.problems)} URLs), e.g.:\n  "
                               + "\n  ".join(r.problems[:10]))
        out[s.name] = {"urls": r.urls, "encodings": dict(r.encodings), "bytes_sent": r.bytes_sent,
                       "how": sitepeers.HOW[s.name]}
    return out


def load_phase(cfg: Settings, servers, wls: list[Workload], client: Client,
               clients: load.Clients | None = None) -> list[measure.Run]:
    runs, n, total = [], 0, cfg.reps * len(wls) * len(servers)
    for rep in range(cfg.reps):
        for wi, wl in enumerate(wls):
            for s in round_order(servers, rep, wi, True):
                n += 1
                r = measure.run_workload(s, wl, rep, cfg.seconds, cfg.warmup, client, cfg.quota_pct, clients)
                runs.append(r)
                warn_s = f"  ⚠ {r.errors} socket errors, {r.non2xx} non-2xx" if r.errors or r.non2xx else ""
                step(f"[{n}/{total}] rep {rep + 1} {wl.key:9} {s.name:12} {r.rps:9,.0f} req/s  cpu {r.cpu_s:5.2f} s  "
                     f"{r.req_per_cpu_s:8,.0f} req/CPU-s  {r.bytes_read / max(1, r.requests) / 1024:5.1f} KiB/resp  "
                     f"rss {r.rss_warm_bytes / 1e6:.1f}→{r.rss_end_bytes / 1e6:.1f} MB  "
                     f"cap use {r.cap_use:.0%}{warn_s}")
    return runs


def bench(cfg: Settings, work: str, cleanup: list) -> int:
    root, meta_site = prepare(cfg)
    ul = sitemap.build(root)
    url_file = os.path.join(cfg.out, "urls.txt")
    sitemap.write(ul.urls, url_file)
    mix = sitemap.mix(ul.urls, root)
    kinds = ", ".join(f"{k} {v['requests']}" for k, v in mix["kinds"].items())
    step(f"URL list: {ul.pages} pages, {mix['requests']:,} requests per pass over {mix['unique']} files "
         f"({kinds}); {len(ul.missing)} links to "
         f"missing files dropped; written to {url_file}")

    tag = f"hs-site-{os.getpid()}"
    servers = sitepeers.lineup(cfg.ours, cfg.peers, root, cfg.server_cpu, cfg.quota_pct, work, cfg.extra_args, tag)
    client = Client(cfg.client_cpu, CpuQuota(f"{tag}-client", 0))
    cleanup += [s.stop for s in servers] + [client.group.destroy]
    names = [s.name for s in servers]
    clients = load.Clients()
    if cfg.h2:  # every server's TLS listener, set up as for make bench-server's HTTPS rows (tls.py)
        clients = load.Clients(tls_setup=tls.setup(os.path.join(work, "tls")))
        tls.attach(servers, clients.tls_setup)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "git": _git_rev(), "seconds": cfg.seconds,
            "reps": cfg.reps, "warmup_seconds": cfg.warmup, "cpu_quota_percent": cfg.quota_pct,
            "server_cpu": cfg.server_cpu, "client_cpu": cfg.client_cpu, "connections": cfg.conns,
            "startup_reps": cfg.startup_reps, "accept_encoding": cfg.accept, "kernel": os.uname().release,
            "versions": {s.name: s.version() for s in servers}, "servers": names, "server_args": cfg.extra_args,
            "site": meta_site, "pages": ul.pages, "mix": mix, "missing_links": ul.missing, "loadavg_start": os.getloadavg()[0],
            "idle_conns": 0, "content_bytes": 0, "cgroup": servers[0].quota.describe()}
    client.group.create()
    # The harness itself times the startups and checks the servers: it runs like wrk (client CPU, high-weight
    # cgroup, nice -20), or on a busy machine its polling is late and a 20 ms start reads as 200 ms.
    client.group.join_self()
    boost()
    os.sched_setaffinity(0, {cfg.client_cpu})

    step(f"startup: spawn → first 200 for {sitepeers.PAGE}, {cfg.startup_reps} × each server")
    meta["startup"] = startup_phase(cfg, servers)
    for s in servers:
        s.start()
    if isinstance(servers[0], Hyperstatic):  # how much of its RSS is the content it holds (bodies + variants)
        meta["ours_content_metrics"] = {k: v for k, v in servers[0].metrics().items()
                                        if k.startswith("hyperstatic_content_")}
    step(f"checking every one of the {len(ul.unique())} URLs on every server (Accept-Encoding: {cfg.accept})")
    meta["check"] = check_phase(cfg, servers, root, ul.unique())
    if cfg.h2:
        meta["tls"] = {s.name: tls.check(s, clients.tls_setup, {}) for s in servers}
    wls = workloads(cfg.conns, url_file, cfg.accept, cfg.h2)
    runs = load_phase(cfg, servers, wls, client, clients)
    meta["loadavg_end"] = os.getloadavg()[0]
    for stop in cleanup:
        stop()
    cleanup.clear()

    summary = report.summarize(runs, wls, names)
    report.write_files(cfg.out, runs, summary, {}, meta)
    md = sitereport.render(cfg.out)
    step(f"results in {cfg.out}: urls.txt, runs.csv, summary.csv, results.json, summary.md")
    print(md)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(prog="hsbench.site", description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ours", required=True, help="path of the hyperstatic-server binary")
    ap.add_argument("--out", default="_out/bench/site")
    args = ap.parse_args()
    cfg = Settings.from_env(args.ours, args.out)
    tools = ("wrk", "taskset") + (("h2load", "openssl") if cfg.h2 else ())
    problems = [f"{t} not found (site.sh installs it)" for t in tools if not shutil.which(t)]
    if not os.path.isdir(cfg.docs):
        problems.append(f"{cfg.docs} missing (site.sh installs python3.11-doc)")
    if not os.access(cfg.ours, os.X_OK):
        problems.append(f"server binary {cfg.ours} is not executable")
    for p in problems:
        warn(p)
    if problems:
        return 2
    step(f"plan: {len(cfg.conns)} concurrencies ({', '.join(map(str, cfg.conns))}) × {1 + len(cfg.peers)} servers × "
         f"{cfg.reps} reps of {cfg.seconds} s (+{cfg.warmup} s warm-up), {cfg.startup_reps} startups each ≈ "
         f"{cfg.estimate_seconds() / 60:.1f} min; servers on CPU {cfg.server_cpu} at {cfg.quota_pct or 100}% of a "
         f"core, wrk on CPU {cfg.client_cpu}")
    return run_in_workdir("hs-site-", "site benchmark", lambda work, cleanup: bench(cfg, work, cleanup),
                          (CgroupError, RuntimeError, OSError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
