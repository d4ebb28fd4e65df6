"""Where and how the benchmark's processes run, so that other work on the machine (builds, tests of other people)
cannot take the CPU the server and the client need.

- Scheduling priority (BENCH_NICE, default -20) for the server, wrk and the idle client.
- A cgroup for each: with sched_autogroup (on here), nice only ranks tasks within one session's group, and a
  cgroup competes with everything else as ONE entity; so the server's group and the client's group get the
  highest weight (see cgroup.py). The server's group also carries the CPU quota; the client's has none.
"""
import os

from .cgroup import CpuQuota


def boost() -> None:
    """Raise the calling process's priority; called between fork and exec."""
    nice = int(os.environ.get("BENCH_NICE", "-20") or 0)
    if nice:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        except OSError:
            pass  # not root: run at normal priority


class Client:
    """The load side: pinned to one CPU, in an uncapped high-weight cgroup of its own."""

    def __init__(self, cpu: int, group: CpuQuota):
        self.cpu, self.group = cpu, group

    def taskset(self) -> list[str]:
        return ["taskset", "-c", str(self.cpu)]

    def preexec(self) -> None:
        self.group.join_self()
        boost()
