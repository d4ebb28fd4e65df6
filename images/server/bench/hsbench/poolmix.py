"""The request mix of `make bench-pool`: hot on a tenth of the sites, the long tail on the rest.

One list of (host, path) that wrk replays in order, round and round (lua/pool.lua): exactly every tenth request
(HOT_SHARE 0.9) goes to the cold sites, the others to the hot ones. Hot requests take the hot sites in turn, each
walking the site's path list in order (page, then its assets); cold requests take the cold sites in turn the same
way, so every cold site is asked for in one pass of the list. The list is long enough that every cold site
appears at least once and every hot site walks its whole path list at least once (capped at MAX_LENGTH).

The single-site server replays the same list with one fixed Host (lua/pool.lua's second argument), so the two
servers get the same paths in the same order and only the server differs. The file holds one request per line,
`host path`; the Lua builds every request string once, in init(), so the client stays cheap.
"""
import math
import os

HOT_SHARE = 0.9
MAX_LENGTH = 200_000


def is_cold(k: int, hot_share: float = HOT_SHARE) -> bool:
    """Whether request k of the list goes to a cold site: spread evenly (k = 9, 19, 29, ... at 0.9)."""
    cold = round(1.0 - hot_share, 9)
    return math.floor((k + 1) * cold + 1e-9) > math.floor(k * cold + 1e-9)


def length_for(hot: int, cold: int, paths: int, hot_share: float = HOT_SHARE, cap: int = MAX_LENGTH) -> int:
    """How many requests the list needs: every cold site once, every hot site through all its paths once."""
    cold_share = round(1.0 - hot_share, 9)  # 1 - 0.9 is 0.0999…98 in binary: 9,000 cold sites would need 90,001
    want = max(math.ceil(cold / cold_share) if cold and cold_share > 0 else 0,
               math.ceil(hot * paths / hot_share) if hot and hot_share > 0 else 0, 1)
    return min(want, cap)


def build(hot_hosts: list[str], cold_hosts: list[str], paths: list[str], hot_share: float = HOT_SHARE,
          length: int | None = None) -> list[tuple[str, str]]:
    """The list of (host, path); see the module documentation. With no cold hosts every request is hot."""
    if not hot_hosts or not paths:
        raise ValueError("the mix needs at least one hot site and one path")
    n = length or length_for(len(hot_hosts), len(cold_hosts), len(paths), hot_share)
    out, h, c = [], 0, 0
    for k in range(n):
        if cold_hosts and is_cold(k, hot_share):
            out.append((cold_hosts[c % len(cold_hosts)], paths[(c // len(cold_hosts)) % len(paths)]))
            c += 1
        else:
            out.append((hot_hosts[h % len(hot_hosts)], paths[(h // len(hot_hosts)) % len(paths)]))
            h += 1
    return out


def hot_only(entries: list[tuple[str, str]], hot_hosts: list[str]) -> list[tuple[str, str]]:
    """The mix without its cold requests: the hot sites' requests, in the same order."""
    hot = set(hot_hosts)
    return [(h, p) for h, p in entries if h in hot]


def in_one_root(entries: list[tuple[str, str]], site_of: dict[str, str], host: str) -> list[tuple[str, str]]:
    """The same requests for one server holding every site under `/<site id>` (pooltree.hot_set_tree), all with
    `host`: the same files asked for in the same order, by path instead of by Host."""
    return [(host, f"/{site_of[h]}{p}") for h, p in entries]


def split(hosts: list[str], hot_share_of_sites: float = 0.1) -> tuple[list[str], list[str]]:
    """The hot sites (the first tenth, at least one) and the rest."""
    n = max(1, round(len(hosts) * hot_share_of_sites))
    return hosts[:n], hosts[n:]


def write(entries: list[tuple[str, str]], path: str) -> str:
    """One `host path` per line: the format lua/pool.lua reads. Neither may hold a space."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        for host, p in entries:
            if " " in host or " " in p or not p.startswith("/"):
                raise ValueError(f"bad request line {host!r} {p!r}")
            f.write(f"{host} {p}\n")
    return path


def read(path: str) -> list[tuple[str, str]]:
    with open(path) as f:
        return [tuple(line.split(" ", 1)) for line in f.read().splitlines() if line]


def shares(entries: list[tuple[str, str]], hot_hosts: list[str]) -> dict:
    """What the list holds: requests, the hot share, distinct hosts of each kind (the report quotes it)."""
    hot = set(hot_hosts)
    n_hot = sum(1 for h, _ in entries if h in hot)
    return {"requests": len(entries), "hot_share": n_hot / len(entries) if entries else 0.0,
            "hot_sites": len({h for h, _ in entries if h in hot}),
            "cold_sites": len({h for h, _ in entries if h not in hot}),
            "paths": len({p for _, p in entries})}
