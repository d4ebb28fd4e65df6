"""A CPU quota for one server: a cgroup of its own, created before the server starts, removed afterwards.

cgroup v1 (this VM): /sys/fs/cgroup/cpu[,cpuacct]/<name> with cpu.cfs_quota_us / cpu.cfs_period_us.
cgroup v2: /sys/fs/cgroup/<name> with cpu.max ("<quota> <period>"); the cpu controller must be enabled in the
parent's cgroup.subtree_control.

The server process joins the group itself between fork and exec (join_self as a preexec hook), so every
process and thread it later creates is capped from its first instruction.
"""
import os
import time

PERIOD_US = 100_000
V2_ROOT = "/sys/fs/cgroup"
V1_CANDIDATES = ("/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu")


class CgroupError(RuntimeError):
    pass


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


class CpuQuota:
    """percent of one core; 0 means no cap (the group still exists, so the code path stays the same)."""

    def __init__(self, name: str, percent: int):
        self.percent = percent
        self.version, base = self._detect()
        self.path = os.path.join(base, name)

    @staticmethod
    def _detect() -> tuple[int, str]:
        if os.path.exists(os.path.join(V2_ROOT, "cgroup.controllers")):
            return 2, V2_ROOT
        for base in V1_CANDIDATES:
            if os.path.exists(os.path.join(base, "cpu.cfs_quota_us")):
                return 1, base
        raise CgroupError("no cgroup cpu controller found (neither v2 cpu.max nor v1 cpu.cfs_quota_us)")

    def describe(self) -> str:
        cap = f"{self.percent}% of a core" if self.percent else "no CPU cap"
        return f"{cap} (cgroup v{self.version} {self.path})"

    def create(self) -> None:
        if os.path.isdir(self.path):
            self.destroy()  # left over from an interrupted run
        try:
            if self.version == 2:
                controllers = _read(os.path.join(V2_ROOT, "cgroup.subtree_control")).split()
                if "cpu" not in controllers:
                    _write(os.path.join(V2_ROOT, "cgroup.subtree_control"), "+cpu")
            os.mkdir(self.path)
            quota = PERIOD_US * self.percent // 100 if self.percent else -1
            # The group competes with every other task of its parent as ONE scheduling entity: with the default
            # weight, five busy compilers on the machine would leave the server a sixth of its CPU, far below its
            # quota. The highest weight lets the server reach its quota whatever else runs; the quota still caps it.
            if self.version == 2:
                _write(os.path.join(self.path, "cpu.max"), f"{quota if quota > 0 else 'max'} {PERIOD_US}")
                _write(os.path.join(self.path, "cpu.weight"), "10000")
            else:
                _write(os.path.join(self.path, "cpu.cfs_period_us"), str(PERIOD_US))
                _write(os.path.join(self.path, "cpu.cfs_quota_us"), str(quota))
                _write(os.path.join(self.path, "cpu.shares"), "262144")
        except OSError as e:
            raise CgroupError(f"cannot create CPU cgroup {self.path}: {e} (run as root)") from e

    def join_self(self) -> None:
        """Move the calling process into the group: used between fork and exec of the server."""
        _write(os.path.join(self.path, "cgroup.procs"), str(os.getpid()))

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in _read(os.path.join(self.path, "cgroup.procs")).split()]
        except FileNotFoundError:
            return []

    def throttled(self) -> dict[str, int]:
        """Kernel's throttling counters (nr_periods, nr_throttled, throttled time): proof the cap bites."""
        try:
            text = _read(os.path.join(self.path, "cpu.stat"))
        except FileNotFoundError:
            return {}
        return {k: int(v) for k, v in (line.split() for line in text.splitlines() if line.strip())}

    def destroy(self) -> None:
        """Move any process still inside back to the parent group, then remove the group."""
        parent_procs = os.path.join(os.path.dirname(self.path), "cgroup.procs")
        for _ in range(50):
            for pid in self.pids():
                try:
                    _write(parent_procs, str(pid))
                except OSError:
                    pass  # exited meanwhile
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)
        raise CgroupError(f"could not remove {self.path}")
