"""CPU time and resident memory of a server's processes, read from /proc (no sampling profiler needed).

A server is "its main process plus every descendant" (nginx: master + worker); threads are already
accounted in their process's /proc/<pid>/stat and VmRSS.
"""
import os

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    # the command name is in parentheses and may hold spaces; fields after it are space-separated
    return data[data.rindex(")") + 2:].split()


def parent_of(pid: int) -> int:
    return int(_stat_fields(pid)[1])  # field 4 (ppid) is index 1 after the name


def process_tree(root: int) -> list[int]:
    """root and all its descendants that are alive now."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            children.setdefault(parent_of(int(name)), []).append(int(name))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue  # exited while we looked
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        if os.path.exists(f"/proc/{pid}"):
            tree.append(pid)
            todo.extend(children.get(pid, []))
    return tree


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of the given processes, in seconds."""
    ticks = 0
    for pid in pids:
        try:
            f = _stat_fields(pid)
        except FileNotFoundError:
            continue
        ticks += int(f[11]) + int(f[12])  # fields 14 (utime) and 15 (stime)
    return ticks / CLK_TCK


def rss_bytes(pids: list[int]) -> int:
    """Sum of VmRSS of the given processes, in bytes."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except FileNotFoundError:
            continue
    return total
