"""The two servers under test, started the same way: pinned with taskset, inside their own CPU-quota cgroup,
with a raised open-file limit, on 127.0.0.1 ports of their own, serving the same content tree.
"""
import grp
import http.client
import os
import pwd
import random
import resource
import shutil
import signal
import socket
import string
import subprocess
import time

from . import procstat
from .cgroup import CpuQuota
from .placement import boost

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")


def raise_nofile() -> int:
    """Lift RLIMIT_NOFILE as far as allowed (10k idle connections need >10k descriptors); returns the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65536
    if hard != resource.RLIM_INFINITY and hard < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))  # works as root
            return want
        except (ValueError, OSError):
            want = hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return want


def free_port() -> int:
    """A loopback port free now, for a server started a moment later. Not one the kernel picks (port 0): those come
    from the ephemeral range every outgoing connection on the machine draws from, so one of them could take it
    before our server binds it (a CI run lost its browser check that way). Below that range only an explicit bind
    can take it."""
    low, _ = _ephemeral_range()
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(10000, max(10001, low))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in 10000..{low}")


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


def pair(ours: str, root: str, cpu: int, quota_pct: int, work: str, extra_args: list[str], tag: str):
    """(ours, nginx) set up identically. ours is a hyperstatic-server binary, or "nginx" for the self-check."""
    common = dict(root=root, cpu=cpu)
    if ours == "nginx":
        a = Nginx(label="nginx-b", port=free_port(), quota=CpuQuota(f"{tag}-ours", quota_pct),
                  workdir=os.path.join(work, "ours"), **common)
    else:
        binary = os.path.join(work, "hyperstatic-server")
        shutil.copy2(ours, binary)  # a private copy: a rebuild during the run cannot swap it underneath
        a = Hyperstatic(binary=binary, admin_port=free_port(), extra_args=extra_args, port=free_port(),
                        quota=CpuQuota(f"{tag}-ours", quota_pct), workdir=os.path.join(work, "ours"), **common)
    b = Nginx(port=free_port(), quota=CpuQuota(f"{tag}-nginx", quota_pct), workdir=os.path.join(work, "nginx"),
              **common)
    return a, b


def http_get(port: int, path: str, timeout: float = 2.0, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


class Server:
    """Common lifecycle; subclasses provide argv() and readiness details."""

    name = "server"
    # what readiness asks for; the site benchmark has no /100.html and sets its own page
    ready_path = "/100.html"
    tls_port: int | None = None      # the HTTPS listener, when the run has HTTPS rows (tls.attach sets it)
    # Started just before each of its runs and stopped right after (ours "as deployed": every run meets a new pod
    # whose encoder has just begun, and it never runs while another server is measured)
    fresh = False
    extra_env: dict[str, str] = {}   # added to the environment (h2o's OPENSSL_CONF for the HTTPS rows)
    h2c = False   # accepts HTTP/2 with prior knowledge on its plain port (the h2c rows run only where it does)
    h3 = False    # serves HTTP/3 on its TLS port's UDP twin (the h3 rows run only where it does; enable_h3)

    def __init__(self, root: str, port: int, cpu: int, quota: CpuQuota, workdir: str):
        self.root, self.port, self.cpu, self.quota, self.workdir = root, port, cpu, quota, workdir
        self.proc: subprocess.Popen | None = None
        self.launched_at = 0.0  # time.monotonic() just before the process was spawned
        os.makedirs(workdir, exist_ok=True)

    def argv(self) -> list[str]:
        raise NotImplementedError

    def version(self) -> str:
        raise NotImplementedError

    def _preexec(self) -> None:
        self.quota.join_self()
        raise_nofile()
        boost()

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Spawn the process without waiting (start() = launch() + wait_ready(); the site benchmark times the
        gap from here to the first 200)."""
        self.quota.create()
        log = open(os.path.join(self.workdir, "server.log"), "wb")
        self.launched_at = time.monotonic()
        self.proc = subprocess.Popen(
            ["taskset", "-c", str(self.cpu), *self.argv()],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, **self.extra_env} if self.extra_env else None,
            preexec_fn=self._preexec, start_new_session=True,
        )
        log.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def pids(self) -> list[int]:
        return procstat.process_tree(self.proc.pid) if self.alive() else []

    def log_tail(self, n: int = 20) -> str:
        try:
            with open(os.path.join(self.workdir, "server.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except FileNotFoundError:
            return ""

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.name} exited at start (code {self.proc.returncode}):\n{self.log_tail()}")
            try:
                if self.ready():
                    return
            except OSError as e:
                last = str(e)
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {timeout:.0f}s ({last}):\n{self.log_tail()}")

    def ready(self) -> bool:
        status, _ = http_get(self.port, self.ready_path)
        return status == 200

    def validate(self, files: dict[str, bytes]) -> None:
        """The server must return exactly the bytes on disk, or its numbers mean nothing."""
        for path, body in files.items():
            status, got = http_get(self.port, path)
            if status != 200 or got != body:
                raise RuntimeError(f"{self.name}: GET {path} -> {status}, {len(got)} bytes (want 200, {len(body)} bytes)")

    def encoder(self) -> tuple[int, float] | None:
        """(files pending encoding, encoder CPU seconds) for a server with a background encoder; None otherwise."""
        return None

    def before_run(self, samples: dict[str, bytes]) -> None:
        if self.fresh:
            self.start()
            self.validate(samples)

    def after_run(self) -> None:
        if self.fresh:
            self.stop()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        self.quota.destroy()


class Hyperstatic(Server):
    name = "hyperstatic"

    def __init__(self, binary: str, admin_port: int, extra_args: list[str], **kw):
        super().__init__(**kw)
        self.binary, self.admin_port, self.extra_args = binary, admin_port, extra_args

    def argv(self) -> list[str]:
        # No security headers (on by default in the server): no peer sends them, and every server must answer with
        # the same headers for the comparison to be fair. BENCH_SERVER_ARGS=--security-headers measures them.
        # --max-requests-per-connection as high as the peers' (nginx keepalive_requests, lighttpd
        # max-keep-alive-requests: 100,000,000): at its default (10,000) ours ends every h2 connection after 10,000
        # streams, and h2load, unlike wrk, does not reconnect, so an h2 row would stop at 100 × 10,000 requests.
        return [self.binary, "--root", self.root, "--listen", f"127.0.0.1:{self.port}",
                "--admin-listen", f"127.0.0.1:{self.admin_port}", "--workers", "1", "--security-headers=false",
                "--max-requests-per-connection=100000000", *self.extra_args]

    def version(self) -> str:
        try:
            out = subprocess.run([self.binary, "--version"], capture_output=True, text=True, timeout=5)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "unknown"

    def ready(self) -> bool:
        status, _ = http_get(self.admin_port, "/readyz")
        return status == 200 and super().ready()

    def encoder(self) -> tuple[int, float] | None:
        m = self.metrics()
        if "hyperstatic_content_encodings_pending" not in m:
            return None
        return int(m["hyperstatic_content_encodings_pending"]), m.get("hyperstatic_encoder_cpu_seconds_total", 0.0)

    def settle(self, timeout: float = 900.0) -> float:
        """Waits until the background encoder has nothing pending (steady state); returns the seconds waited."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            e = self.encoder()
            if e is not None and e[0] == 0:
                return time.monotonic() - t0
            time.sleep(0.2)
        raise RuntimeError(f"{self.name}: encodings still pending after {timeout:.0f} s")

    def metrics(self) -> dict[str, float]:
        """Unlabelled samples of the admin /metrics endpoint (e.g. hyperstatic_content_bytes)."""
        try:
            status, body = http_get(self.admin_port, "/metrics")
        except OSError:
            return {}
        out = {}
        for line in body.decode(errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 2 and not line.startswith("#"):
                try:
                    out[parts[0]] = float(parts[1])
                except ValueError:
                    pass
        return out


class Nginx(Server):
    name = "nginx"

    def __init__(self, label: str = "nginx", main_extra: str = "", http_extra: str = "", **kw):
        super().__init__(**kw)
        self.name = label
        self.conf = os.path.join(self.workdir, "nginx.conf")
        # extra directives in the main and http contexts (the site benchmark's load_module and *_static)
        self.main_extra, self.http_extra = main_extra, http_extra

    def _write_conf(self) -> None:
        nofile = raise_nofile()
        user_line = ""
        if os.getuid() == 0:  # workers would otherwise drop to "nobody"; run as the invoking user instead
            user_line = f"user {pwd.getpwuid(0).pw_name} {grp.getgrgid(os.getgid()).gr_name};"
        with open(os.path.join(HERE, "nginx.conf.in")) as f:
            tmpl = string.Template(f.read())
        with open(self.conf, "w") as f:
            f.write(tmpl.substitute(
                user_line=user_line, cpu_mask=format(1 << self.cpu, "b"), nofile=nofile,
                worker_connections=min(20000, nofile - 64), dir=self.workdir, port=self.port, root=self.root,
                main_extra=self.main_extra, http_extra=self.http_extra))

    def argv(self) -> list[str]:
        self._write_conf()
        return [NGINX, "-c", self.conf, "-p", self.workdir, "-e", os.path.join(self.workdir, "error.log")]

    def version(self) -> str:
        out = subprocess.run([NGINX, "-v"], capture_output=True, text=True)
        return (out.stderr or out.stdout).strip().replace("nginx version: ", "")


# nginx 1.26 of Debian 13, built with HTTP/3 (make nginx-trixie debootstraps it into the cache; hack/trixie-root.sh):
# run on the host through the tree's own dynamic loader and libraries, not in a chroot, so that the site, the
# certificate and the config are the same host paths as for every other server.
NGINX_TRIXIE = os.environ.get("NGINX_TRIXIE", os.path.expanduser("~/.cache/hyperstatic/trixie-nginx"))


def trixie_argv(tree: str, binary: str) -> list[str]:
    """argv that runs `binary` of a Debian tree with that tree's loader and libraries."""
    libs = ":".join(os.path.join(tree, d) for d in ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu"))
    return [os.path.join(tree, "lib64", "ld-linux-x86-64.so.2"), "--library-path", libs,
            os.path.join(tree, binary.lstrip("/"))]


class NginxTrixie(Nginx):
    """nginx 1.26 (Debian 13), configured as Nginx, and with HTTP/3 in the h3 rows (nginx-h3.conf.in)."""

    def __init__(self, **kw):
        super().__init__(label="nginx-1.26", **kw)

    def argv(self) -> list[str]:
        self._write_conf()
        return [*trixie_argv(NGINX_TRIXIE, "/usr/sbin/nginx"), "-c", self.conf, "-p", self.workdir,
                "-e", os.path.join(self.workdir, "error.log")]

    def version(self) -> str:
        out = subprocess.run([*trixie_argv(NGINX_TRIXIE, "/usr/sbin/nginx"), "-v"], capture_output=True, text=True)
        return (out.stderr or out.stdout).strip().replace("nginx version: ", "") + " (Debian 13)"


LIGHTTPD = os.environ.get("LIGHTTPD", "/usr/sbin/lighttpd")
H2O_BIN = os.environ.get("H2O", "/usr/bin/h2o")
FLOOR_SRC = os.path.join(HERE, "floor.c")
FLOOR_URING_SRC = os.path.join(HERE, "floor_uring.c")


def render_template(name: str, **values) -> str:
    """A config template of this directory (nginx.conf.in, lighttpd.conf.in, h2o.conf.in) with its ${...} filled."""
    with open(os.path.join(HERE, name)) as f:
        return string.Template(f.read()).substitute(**values)


class Lighttpd(Server):
    name = "lighttpd"
    h2c = True  # server.h2proto (on by default since 1.4.59) covers prior knowledge on a plain socket too

    def __init__(self, extra_conf: str = "", **kw):
        super().__init__(**kw)
        self.conf = os.path.join(self.workdir, "lighttpd.conf")
        self.extra_conf = extra_conf  # appended: lighttpd's syntax lets later lines add modules (+=) and settings

    def config(self, nofile: int) -> str:
        return render_template("lighttpd.conf.in", root=self.root, port=self.port, dir=self.workdir, nofile=nofile,
                               max_connections=max(1024, nofile // 2)) + self.extra_conf

    def argv(self) -> list[str]:
        with open(self.conf, "w") as f:
            f.write(self.config(raise_nofile()))
        return [LIGHTTPD, "-D", "-f", self.conf]

    def version(self) -> str:
        out = subprocess.run([LIGHTTPD, "-v"], capture_output=True, text=True)
        return (out.stdout or out.stderr).strip().split(" ")[0]


class H2O(Server):
    name = "h2o"

    def __init__(self, extra_conf: str = "", **kw):
        super().__init__(**kw)
        self.conf = os.path.join(self.workdir, "h2o.conf")
        self.extra_conf = extra_conf  # appended top-level YAML keys (global-level directives)

    def config(self, nofile: int) -> str:
        text = render_template("h2o.conf.in", root=self.root, port=self.port, dir=self.workdir,
                               max_connections=min(20000, nofile - 64), h2c="ON" if self.h2c else "OFF") + self.extra_conf
        if os.getuid() == 0:  # h2o refuses to run as root without a user directive; keep the invoking user
            text = f"user: {pwd.getpwuid(0).pw_name}\n" + text
        return text

    def argv(self) -> list[str]:
        with open(self.conf, "w") as f:
            f.write(self.config(raise_nofile()))
        return [H2O_BIN, "-c", self.conf]

    def version(self) -> str:
        out = subprocess.run([H2O_BIN, "-v"], capture_output=True, text=True)
        return (out.stdout or out.stderr).strip().splitlines()[0].replace("h2o version ", "h2o/")


# Caddy comes from the Go module proxy (make caddy installs it into ./bin; run.sh passes its path as CADDY)
CADDY_BIN = os.environ.get("CADDY", os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "bin",
                                                 "caddy"))


class Caddy(Server):
    name = "caddy"

    def __init__(self, extra_conf: str = "", file_server_extra: str = "", **kw):
        super().__init__(**kw)
        self.conf = os.path.join(self.workdir, "Caddyfile")
        self.extra_conf = extra_conf  # appended site blocks (the HTTPS one, tls.py)
        self.file_server_extra = file_server_extra  # inside every file_server block (make bench-site: precompressed)
        # Caddy keeps data and autosaved config under XDG dirs: keep them in the run's temp dir, not in $HOME
        self.extra_env = {"XDG_DATA_HOME": os.path.join(self.workdir, "data"),
                          "XDG_CONFIG_HOME": os.path.join(self.workdir, "config")}

    def config(self) -> str:
        return render_template("Caddyfile.in", root=self.root, port=self.port, protocols=self.protocols(),
                               file_server_extra=self.file_server_extra) + self.extra_conf

    def protocols(self) -> str:
        return "h1 h2" + (" h2c" if self.h2c else "") + (" h3" if self.h3 else "")

    def argv(self) -> list[str]:
        with open(self.conf, "w") as f:
            f.write(self.config())
        return [CADDY_BIN, "run", "--config", self.conf, "--adapter", "caddyfile"]

    def version(self) -> str:
        # `caddy version` prints "unknown" for a go-install build; its module version is in the build info
        out = subprocess.run([CADDY_BIN, "build-info"], capture_output=True, text=True)
        return "caddy/" + caddy_version(out.stdout)


def caddy_version(build_info: str) -> str:
    """The caddy module's version from `caddy build-info` (Go's build info: "mod<TAB>path<TAB>version<TAB>sum")."""
    for line in build_info.splitlines():
        f = line.split("\t")
        if len(f) >= 3 and f[0] == "mod" and f[1] == "github.com/caddyserver/caddy/v2":
            return f[2]
    return "unknown"


def enable_h2c(servers: list[Server]) -> list[str]:
    """Turns on h2c with prior knowledge where it is a setting (ours: --h2c=true; Caddy: protocols h2c; h2o 2.2:
    http1-upgrade-to-http2 ON, which gates prior knowledge too); returns the names of the servers that then accept
    it."""
    for s in servers:
        if isinstance(s, Hyperstatic):
            s.extra_args = [*s.extra_args, "--h2c=true"]
            s.h2c = True
        elif isinstance(s, (Caddy, H2O)):
            s.h2c = True
    return [s.name for s in servers if s.h2c]


def enable_h3(servers: list[Server]) -> list[str]:
    """Turns on HTTP/3 on the TLS port's UDP twin where the server has it (ours: --http3; Caddy: protocols h3, which
    also makes it send Alt-Svc as ours does; nginx-1.26: a quic listener, tls.attach); returns the names of the
    servers that then serve it. Debian 12's nginx (1.22), lighttpd and h2o (2.2) have no HTTP/3."""
    for s in servers:
        if isinstance(s, Hyperstatic):
            s.extra_args = [*s.extra_args, "--http3"]
            s.h3 = True
        elif isinstance(s, (Caddy, NginxTrixie)):
            s.h3 = True
    return [s.name for s in servers if s.h3]


def build_floor(workdir: str, uring: bool = False) -> str:
    """Compiles floor.c (the canned-response limit reference), or floor_uring.c (the same on io_uring, linked with
    Debian's liburing), into workdir; returns the binary's path."""
    os.makedirs(workdir, exist_ok=True)
    binary = os.path.join(workdir, "floor_uring" if uring else "floor")
    cc = os.environ.get("CC", "gcc")
    src = [FLOOR_URING_SRC, "-luring"] if uring else [FLOOR_SRC]
    res = subprocess.run([cc, "-O2", "-Wall", "-o", binary, *src], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"building the floor responder failed:\n{res.stderr}")
    return binary


# How the floor's 8 KiB bodies reach the socket: "sendfile" from one sealed memfd (no user-to-kernel copy, nginx's
# way) or "writev" from memory (the kernel copies each body, as our server does). sendfile is the default because it
# is the cheaper of the two on this kernel in interleaved runs (make bench-ab; docs/bench/breakdown.md, 2026-11-26);
# BENCH_FLOOR_BODY picks another. "uring" is the other kernel interface rather than another body mechanism:
# floor_uring.c, the same answers through one io_uring per loop (multishot accept and receive, provided buffers,
# batched sends of bodies from memory), to see whether io_uring lowers the floor itself (make bench-ab).
FLOOR_BODIES = ("sendfile", "writev", "uring")


class Floor(Server):
    """Not a server: a canned 200 for every "\\r\\n\\r\\n", with the 8 KiB file whose number follows "GET /8k/" or else
    the 100-byte body, whatever else was asked (see floor.c)."""
    name = "floor"

    def __init__(self, body_file: str, set_dir: str | None = None, body_io: str | None = None, **kw):
        super().__init__(**kw)
        self.body_file, self.set_dir = body_file, set_dir
        self.body_io = body_io or os.environ.get("BENCH_FLOOR_BODY", "") or FLOOR_BODIES[0]
        if self.body_io not in FLOOR_BODIES:
            raise SystemExit(f"BENCH_FLOOR_BODY={self.body_io!r}; known: {list(FLOOR_BODIES)}")
        self.binary = build_floor(self.workdir, uring=self.body_io == "uring")

    def argv(self) -> list[str]:
        mode = ["--sendfile"] if self.body_io == "sendfile" else []
        return [self.binary, *mode, str(self.port), self.body_file, *([self.set_dir] if self.set_dir else [])]

    def version(self) -> str:
        if self.body_io == "uring":
            return "canned-response io_uring loop (floor_uring.c; 8 KiB bodies sent from memory)"
        how = "sendfile from a memfd" if self.body_io == "sendfile" else "writev from memory"
        return f"canned-response epoll loop (floor.c; 8 KiB bodies by {how})"

    def validate(self, files: dict[str, bytes]) -> None:
        from .content import SMALL_PATH  # without the 8 KiB set it can only answer the 100-byte file
        super().validate(files if self.set_dir else {SMALL_PATH: files[SMALL_PATH]})


PEERS = ("nginx", "lighttpd", "h2o", "caddy")
# Peers only when named: nginx-1.26 needs a Debian 13 tree made first (make nginx-trixie, a minute or more).
OPT_IN_PEERS = ("nginx-1.26",)


def parse_peers(text: str) -> list[str]:
    """PEERS=nginx,h2o picks peers; empty means the four default ones; "floor" may be named too (it is on by
    default), and so may the opt-in ones (OPT_IN_PEERS)."""
    names = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()] or list(PEERS)
    unknown = [p for p in names if p not in PEERS + OPT_IN_PEERS + ("floor",)]
    if unknown:
        raise SystemExit(f"unknown peer(s) {unknown}; known: {list(PEERS + OPT_IN_PEERS)} and floor")
    return list(dict.fromkeys(names))


def lineup(ours: str, peers: list[str], floor: bool, root: str, cpu: int, quota_pct: int, work: str,
           extra_args: list[str], tag: str) -> list[Server]:
    """Our server first, then each peer, then the floor: all pinned to the same CPU with the same quota."""
    out = [pair(ours, root, cpu, quota_pct, work, extra_args, tag)[0]]
    kinds = {"nginx": Nginx, "lighttpd": Lighttpd, "h2o": H2O, "caddy": Caddy, "nginx-1.26": NginxTrixie}
    for p in peers:
        if p == "floor":
            continue
        out.append(kinds[p](port=free_port(), quota=CpuQuota(f"{tag}-{p}", quota_pct),
                            workdir=os.path.join(work, p), root=root, cpu=cpu))
    if floor:
        from .content import SET_DIR, SMALL_PATH
        out.append(Floor(body_file=os.path.join(root, SMALL_PATH.lstrip("/")),
                         set_dir=os.path.join(root, SET_DIR.lstrip("/")), port=free_port(),
                         quota=CpuQuota(f"{tag}-floor", quota_pct), workdir=os.path.join(work, "floor"),
                         root=root, cpu=cpu))
    return out
