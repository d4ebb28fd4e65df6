#!/usr/bin/env python3
"""server-layers.py: the static server's module structure, measured from its own source (images/server/src).

What it reads: every `*.rs` file under images/server/src. Comments, string and char literals are blanked out
first, so a path in a doc comment or a log message is not an import. What it resolves, to the FILE it names:

  - `use crate::...`, `use super::...`, `use self::...` (grouped trees too: `use crate::{a::b, c::{self, D}}`),
    and `hyperstatic_server::...` in main.rs (the binary's name for the library crate);
  - paths written in code: `crate::site::walk::X`, `super::h2::H2`, `super::super::y`.

A path resolves to the deepest module it names (`crate::site::walk::X` -> site/walk.rs; `crate::state::bump` ->
state.rs); an inline `mod name { ... }` belongs to its file. Not counted: `mod` declarations (they make the
tree: parent -> child, never a dependency on the child's siblings), a module's references to its own
descendants (`use conn::Conn` or `self::conn::X` in server/mod.rs: the containment direction the `mod` tree
already has, which every `super::Worker` in a child would otherwise turn into a circle), and code under
`#[cfg(test)]` (test modules and test-only files build only into the test binary; `--tests` counts them).

It reports, on the file-level import graph:
  1. import circles: strongly connected components of more than one file;
  2. upward imports: a file importing a file of a higher layer (LAYERS below; same layer is fine);
  3. the cfg walk: from lib.rs's `serve`, the calls that pass the `Config` on (see `cfg_walk`), file by file;
     it counts how often the walk returns to a file it had already left.

It exits 1 when a circle or an upward import is not in ALLOWED_CIRCLES / ALLOWED_UPWARD (printed as warnings
when allowed: each entry says why it stays); `--strict` ignores the allow-lists. `--walk` prints the cfg walk step by step, `--edges` every resolved import.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "images", "server", "src")

# The layers, bottom to top. A file's layer is the one that names it ("site/loader"), else its top-level
# module's (lib.rs and main.rs are "lib" and "main"); a file may import its own layer and any below it, never one
# above.
LAYERS = [
    # Every system call and every `unsafe`, behind thin safe wrappers.
    ("sys", ["sys"]),
    # Small leaf utilities with no knowledge of sites or requests, used from every layer above: `log` (the
    # structured log lines), `dates` (HTTP dates), `datecache` (the worker's cached Date header), `timing` (the
    # request-duration clock and histogram), `counters` (the single-writer counter bump), `publish` (the
    # generation-counted swap of a shared value), `cpus` (CPU affinity and cgroup quota, read at start and by
    # the encoder). They import only `sys` and each other. `fairshare` (per-client token buckets: arithmetic over
    # addresses and a fixed table, knowing a site only as a number) is one too: the site value's parser names its
    # rate, the core checks it.
    # `guard` (a site's access rules: path prefixes, address lists, basic-auth checks and their per-worker cache;
    # imports nothing ours: the site value's parser builds them, the core asks them) is one too.
    ("util", ["log", "dates", "datecache", "timing", "counters", "publish", "cpus", "fxhash", "linemap", "fairshare", "guard"]),
    # The content as files: the tree walk, opening beneath the root, MIME types, globs, the memory budget, the
    # last load's failure (everything in site/ but the table and its loader, which are named below); and the
    # request path's normal form (answer/path: percent-decoding and normalising, pure), which the rules'
    # parser shares with the core. `skew` (the previous deploys' trees beside the root that skew protection answers
    # from, read from the puller's deploys.json: content as files too; imports nothing ours).
    ("content", ["site", "answer/path", "skew"]),
    # The site value (the site's settings, docs/design/site-value.md) and what is compiled from it:
    # redirect/rewrite rules, response headers, content codings.
    ("site value", ["site_value", "rules", "headers", "compress"]),
    # The content table and its loader: built from the content and the compiled site value.
    # Also the code that compiles into the table or works on a whole table: rule installation and clean URLs,
    # encodings attached to entries, the encoder's shared state, `precompress` (a loader client).
    ("table", ["site/content", "site/loader", "site/entry", "site/footprint", "rules/install", "rules/clean",
               "compress/encodings", "compress/encoder_state", "compress/precompress"]),
    # The protocol-agnostic core: what a request gets.
    ("core", ["answer"]),
    # Protocols and the transport they write through. `access` (the access log line of one exchange) is
    # written by the protocols' callers from what the core answered, so it sits with them.
    # `proxy_v2` (the PROXY protocol's header, before a connection's first byte) is transport framing beside them,
    # and so is `quic` (what the server checks of QUIC datagrams beside quinn-proto: pure, it imports nothing ours).
    ("protocols", ["http1", "http2", "http3", "tls", "access", "proxy_v2", "quic"]),
    # Shared pools (`--sites`, docs/design/pools.md): the index, the host map, each site's table and counters,
    # and the pool thread that loads them. Built from the content, the site value and the tables below; the
    # shared state holds the pool and the workers route into it, so it sits under `shared`.
    ("pool", ["pool"]),
    # What the process shares between workers, the admin listener and the control thread (`state`: the
    # published table, per-worker counters, encoder progress, the TLS state); the workers read it, so it sits
    # under them and over everything it holds.
    ("shared", ["state"]),
    # The workers: epoll loop, connections, listeners.
    ("server", ["server"]),
    # The process: admin listener, control thread (signals, reload), the command line, the entry points.
    # The background encoder (compress/encoder) is a process thread over the Shared, like control.rs, that
    # lives in compress/ beside the codecs it drives.
    ("process", ["admin", "control", "config", "lib", "main", "compress/encoder"]),
]
LAYER_OF = {m: i for i, (_, ms) in enumerate(LAYERS) for m in ms}
LAYER_NAME = [n for n, _ in LAYERS]

# Known circles and upward imports ("from -> to") that do not fail the check yet: each is being removed by the
# issue-39 work (the site value), and is deleted from here when it goes. A circle found passes when all its files
# lie inside one allowed circle (a knot that shrinks stays green; one that grows or a new one fails); a new
# upward import fails `make verify-server-layers`.
ALLOWED_CIRCLES = []

ALLOWED_UPWARD = [
    # The table precomputes, at load, each protocol's head of a whole file (HTTP/1.1's fields and HTTP/2's HPACK
    # block, next HTTP/3's QPACK block), so that a request copies it instead of encoding it: the loader calls the
    # protocol's encoder once per variant. Inverting it (each protocol registering its head encoder) costs an
    # indirection for no gain while the protocols are known at compile time.
    "site/entry.rs -> http2/respond.rs",
    # Process settings read below the process layer: the shared state holds the whole Config, tls/ takes the
    # certificate paths as config's `TlsFiles`, the encoder's state its settings. Passing the settings they
    # need down (or moving `TlsFiles` to tls/) removes these.
    "state.rs -> config.rs",
    "tls/material.rs -> config.rs",
    "tls/watch.rs -> config.rs",
    "compress/encoder_state.rs -> config.rs",
]

TEST_ONLY_FILES = set()  # filled by scan(): files whose `mod` declaration is under #[cfg(test)]


# ---------------------------------------------------------------------------------------------------- lexing


def blank(src):
    """The source with comments, string literals and char literals replaced by spaces (newlines kept), so
    that offsets and line numbers stay those of the file."""
    out = list(src)
    i, n = 0, len(src)

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif c in "rb" and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'(b?r)(#*)"', src[i:i + 300]) if c in "rb" else None
            if m and (c == "r" or m.group(1) == "br"):
                close = '"' + m.group(2)
                j = src.find(close, i + m.end())
                j = n if j < 0 else j + len(close)
                wipe(i, j)
                i = j
            elif c == "b" and src.startswith('b"', i):
                i = skip_string(src, i + 1, wipe)
            elif c == "b" and src.startswith("b'", i):
                i = skip_char(src, i + 1, wipe) or i + 1
            else:
                i += 1
        elif c == '"':
            i = skip_string(src, i, wipe)
        elif c == "'":
            j = skip_char(src, i, wipe)
            i = j if j else i + 1  # a lifetime or label: left as is
        else:
            i += 1
    return "".join(out)


def skip_string(src, i, wipe):
    j = i + 1
    while j < len(src) and src[j] != '"':
        j += 2 if src[j] == "\\" else 1
    wipe(i, j + 1)
    return j + 1


def skip_char(src, i, wipe):
    """A char literal at `i` ('x', '\\n', '\\u{..}'): wipes it and returns the offset after it; None for a
    lifetime ('a) or a label."""
    if src.startswith("'\\", i):
        j = src.find("'", i + 2 if src[i + 2:i + 3] != "'" else i + 3)
        if j < 0:
            return None
        wipe(i, j + 1)
        return j + 1
    if i + 2 < len(src) and src[i + 2] == "'":
        wipe(i, i + 3)
        return i + 3
    return None


def matching(code, open_at):
    """Offset just past the brace that closes the `{` at `open_at`."""
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(code)


def item_end(code, at):
    """End of the item starting at `at`: its `;` or its closing brace, whichever comes first at depth 0."""
    depth = 0
    for j in range(at, len(code)):
        c = code[j]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ";" and depth == 0:
            return j + 1
        elif c == "{" and depth == 0:
            return matching(code, j)
    return len(code)


# ---------------------------------------------------------------------------------------------------- modules


class File:
    def __init__(self, rel, module, code):
        self.rel = rel  # path under src/
        self.module = module  # tuple of module names; () for lib.rs
        self.code = code  # blanked source
        self.inline = []  # (start, end, module tuple) of inline `mod x { }` blocks
        self.test_spans = []  # (start, end) of items under #[cfg(test)]
        self.uses = []  # (start, end) of use declarations

    def line(self, off):
        return self.code.count("\n", 0, off) + 1

    def module_at(self, off):
        best, depth = self.module, -1
        for s, e, m in self.inline:
            if s <= off < e and len(m) > depth:
                best, depth = m, len(m)
        return best

    def in_test(self, off):
        return self.rel in TEST_ONLY_FILES or any(s <= off < e for s, e in self.test_spans)


def module_of(rel):
    parts = rel[:-3].split("/")
    if parts[-1] == "mod":
        parts = parts[:-1]
    if parts == ["lib"]:
        return ()
    return tuple(parts)


def scan(src_dir):
    TEST_ONLY_FILES.clear()
    files = {}
    for d, _, names in os.walk(src_dir):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(d, name)
                rel = os.path.relpath(path, src_dir).replace(os.sep, "/")
                with open(path, encoding="utf-8") as f:
                    files[rel] = File(rel, module_of(rel), blank(f.read()))
    modules = {}  # module tuple -> file rel
    for f in files.values():
        if f.rel != "main.rs":
            modules[f.module] = f.rel
    test_mods = set()
    for f in files.values():
        for m in re.finditer(r"\bmod\s+(\w+)\s*\{", f.code):
            s = m.start()
            e = matching(f.code, m.end() - 1)
            f.inline.append((s, e, None, m.group(1)))
        for m in re.finditer(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]", f.code):
            at = m.end()
            # Further attributes may sit between #[cfg(test)] and the item.
            while True:
                a = re.match(r"\s*#\s*\[", f.code[at:])
                if not a:
                    break
                at = item_end(f.code, at + a.end() - 1) if False else f.code.index("]", at + a.end()) + 1
            e = item_end(f.code, at)
            f.test_spans.append((m.start(), e))
            d = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", f.code[at:])
            if d:
                test_mods.add(f.module + (d.group(1),))
        for m in re.finditer(r"\b(?:pub(?:\s*\([^)]*\))?\s+)?use\s+[^;]*;", f.code):
            f.uses.append((m.start(), m.end()))
    # Inline module paths, outermost first (a nested block's path extends its parent's).
    for f in files.values():
        f.inline.sort(key=lambda t: (t[0], -t[1]))
        done = []
        for s, e, _, name in f.inline:
            parent = f.module
            for ps, pe, pm in done:
                if ps <= s < pe:
                    parent = pm
            done.append((s, e, parent + (name,)))
            modules.setdefault(parent + (name,), f.rel)
        f.inline = done
    for rel, f in files.items():
        if any(f.module[:len(t)] == t for t in test_mods):
            TEST_ONLY_FILES.add(rel)
    return files, modules


def expand_use(tree, aliases=None):
    """`a::{b, c::{self, D}}` -> [[a, b], [a, c], [a, c, D]] (`*` dropped). With `aliases` (a list), also the
    name each path is known by in the file: its last segment, or the `as` name."""
    if aliases is not None:
        for path in expand_use(re.sub(r"\s+as\s+\w+", "", tree)):
            aliases.append((path, path[-1]))
        for m in re.finditer(r"((?:\w+\s*::\s*)*\w+)\s+as\s+(\w+)", tree):
            aliases.append((None, m.group(2), m.group(1)))
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    toks = re.findall(r"::|\{|\}|,|\*|\w+", tree)
    pos = 0

    def parse(prefix):
        nonlocal pos
        paths, cur = [], list(prefix)
        while pos < len(toks):
            t = toks[pos]
            pos += 1
            if t == "{":
                paths += parse(cur)
                cur = None
            elif t == "}":
                break
            elif t == ",":
                if cur is not None and cur != list(prefix):
                    paths.append(cur)
                cur = list(prefix)
            elif t == "::" or t == "*":
                continue
            elif t == "self" and cur == list(prefix) and prefix:
                cur = list(prefix)
                paths.append(cur)
                cur = None
            else:
                cur = (cur if cur is not None else list(prefix)) + [t]
        if cur is not None and cur != list(prefix):
            paths.append(cur)
        return paths

    return parse([])


def resolve(modules, here, segs, main=False):
    """The file a path names, seen from module `here`; None for paths outside the crate (std, other crates)
    and for bare relative paths."""
    if not segs:
        return None
    first = segs[0]
    if first == "crate" or (main and first == "hyperstatic_server"):
        base, rest = (), segs[1:]
    elif first == "self":
        base, rest = here, segs[1:]
    elif first == "super":
        base, rest = here, segs
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    else:
        return None
    mod = base
    for s in rest:
        if mod + (s,) in modules:
            mod = mod + (s,)
        else:
            break
    return modules.get(mod)


def references(f, modules):
    """(offset, target file, text) for every reference of `f` to a module of the crate."""
    refs = []
    main = f.rel == "main.rs"
    for s, e in f.uses:
        text = f.code[s:e]
        tree = re.sub(r"^(?:pub(?:\s*\([^)]*\))?\s+)?use\s+", "", text).rstrip(";")
        for segs in expand_use(tree):
            t = resolve(modules, f.module_at(s), segs, main)
            if t:
                refs.append((s, t, "use " + "::".join(segs)))
    in_use = lambda off: any(s <= off < e for s, e in f.uses)  # noqa: E731
    # Names a `use` made stand for a module of the crate (`use crate::rules::{self, X}` makes `rules` one), so
    # that `rules::reply::apply(..)` in code names rules/reply.rs. Aliases are per file (a `use` inside an
    # inline module is rare here; it is taken as the file's).
    mods = {}
    for s, e in f.uses:
        tree = re.sub(r"^(?:pub(?:\s*\([^)]*\))?\s+)?use\s+", "", f.code[s:e]).rstrip(";")
        found = []
        expand_use(tree, found)
        for entry in found:
            segs = entry[0] if entry[0] is not None else [x.strip() for x in entry[2].split("::")]
            m = module_named(modules, f.module_at(s), segs, main)
            if m is not None:
                mods[entry[1]] = m
    names = "|".join(sorted(map(re.escape, mods)))
    pat = r"(?<![\w:.])((?:crate|super|self%s%s)(?:\s*::\s*\w+)+)" % (
        "|hyperstatic_server" if main else "", ("|" + names) if names else "")
    for m in re.finditer(pat, f.code):
        if in_use(m.start()):
            continue
        segs = [p.strip() for p in m.group(1).split("::")]
        if segs[0] in mods and segs[0] not in ("crate", "super", "self"):
            t = resolve(modules, mods[segs[0]], ["self"] + segs[1:], main)
        else:
            t = resolve(modules, f.module_at(m.start()), segs, main)
        if t:
            refs.append((m.start(), t, "::".join(segs)))
    return refs


def module_named(modules, here, segs, main):
    """The module a whole `use` path names, or None when it names an item or lies outside the crate."""
    t = resolve(modules, here, segs, main)
    if t is None:
        return None
    first = segs[0]
    base = () if first in ("crate", "hyperstatic_server") else here
    rest = segs[1:]
    while rest and rest[0] == "super":
        base, rest = base[:-1], rest[1:]
    if first == "super":
        base = base[:-1]
    mod = base + tuple(rest)
    return mod if mod in modules else None


def is_descendant(files, a, b):
    """File b's module is strictly inside file a's module (a references its own descendant)."""
    ma, mb = files[a].module, files[b].module
    return a != "main.rs" and len(mb) > len(ma) and mb[:len(ma)] == ma


def graph(files, modules, tests):
    edges = {}  # (from, to) -> [(line, text)]
    for f in files.values():
        if not tests and f.rel in TEST_ONLY_FILES:
            continue
        for off, t, text in references(f, modules):
            if t == f.rel or is_descendant(files, f.rel, t):
                continue
            if not tests and (f.in_test(off) or t in TEST_ONLY_FILES):
                continue
            edges.setdefault((f.rel, t), []).append((f.line(off), text))
    return edges


def circles(nodes, edges):
    """Tarjan's strongly connected components of more than one node, each sorted, the list sorted."""
    adj = {n: [] for n in nodes}
    for a, b in edges:
        adj[a].append(b)
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(adj[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return sorted(out)


def layer(rel):
    # A file named in LAYERS (e.g. "site/loader") has that layer; any other file its top module's.
    if rel[:-3] in LAYER_OF:
        return LAYER_OF[rel[:-3]]
    top = rel[:-3].split("/")[0]
    if top not in LAYER_OF:
        raise SystemExit(f"server-layers: {rel}: module {top!r} is in no layer (add it to LAYERS)")
    return LAYER_OF[top]


# ---------------------------------------------------------------------------------------------------- cfg walk

FN_RE = re.compile(r"\bfn\s+(\w+)\s*(?:<[^{;]*?>)?\s*\(")
IMPL_RE = re.compile(r"\bimpl\b(?:\s*<[^{]*?>)?\s+(?:[\w:]+\s+for\s+)?([\w:]+)(?:<[^{]*?>)?\s*(?:where[^{]*)?\{")
# What carries the Config: the value itself, and the Shared it is moved into by `Shared::new(cfg, ..)`.
CARRIER_TYPE = re.compile(r"\b(?:Config|Shared)\b")


class Fn:
    def __init__(self, f, name, owner, params, body):
        self.file, self.name, self.owner, self.params, self.body = f, name, owner, params, body

    def key(self):
        return (self.file.rel, self.owner, self.name)

    def label(self):
        return f"{self.file.rel}:{(self.owner + '::') if self.owner else ''}{self.name}"


def split_args(s):
    out, depth, cur = [], 0, ""
    for c in s:
        if c in "([{<" and not (c == "<" and depth == 0 and False):
            depth += c in "([{"
        if c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def functions(files):
    fns = []
    for f in files.values():
        if f.rel in TEST_ONLY_FILES:
            continue
        impls = []
        for m in IMPL_RE.finditer(f.code):
            impls.append((m.end() - 1, matching(f.code, m.end() - 1), m.group(1).split("::")[-1]))
        for m in FN_RE.finditer(f.code):
            if f.in_test(m.start()):
                continue
            p_open = m.end() - 1
            depth, j = 0, p_open
            while j < len(f.code):
                depth += {"(": 1, ")": -1}.get(f.code[j], 0)
                if depth == 0:
                    break
                j += 1
            params = f.code[p_open + 1:j]
            k = j
            while k < len(f.code) and f.code[k] not in "{;":
                k += 1
            if k >= len(f.code) or f.code[k] == ";":
                continue
            body = (k, matching(f.code, k))
            owner = None
            for s, e, t in impls:
                if s < m.start() < e:
                    owner = t
            fns.append(Fn(f, m.group(1), owner, params, body))
    return fns


def carriers_of(fn):
    """Names that hold the Config (or the Shared that owns it) inside `fn`: its parameters of those types, `self`
    in impl Shared / impl Config, and locals bound from a carrier (`let s = shared.clone()`, `Arc::new(shared)`,
    `let mut shared = Shared::new(cfg, ..)`)."""
    names = set()
    for p in split_args(fn.params):
        m = re.match(r"(?:mut\s+)?(\w+)\s*:\s*(.*)$", p, re.S)
        if m and CARRIER_TYPE.search(m.group(2)):
            names.add(m.group(1))
        elif re.match(r"&?\s*(?:mut\s+)?self\b", p) and fn.owner in ("Shared", "Config"):
            names.add("self")
    body = fn.file.code[fn.body[0]:fn.body[1]]
    for _ in range(3):  # locals bound from locals
        for m in re.finditer(r"\blet\s+(?:mut\s+)?(\w+)\s*(?::[^=]*)?=\s*([^;]*);", body):
            rhs = re.sub(r"\s+", "", m.group(2))
            rhs = re.sub(r"^Arc::new\((.*)\)$", r"\1", rhs)
            made = re.match(r"^(?:\w+::)*Shared::new\((.*)\)$", rhs)
            if passes_on(rhs, names) or (made and any(passes_on(a, names) for a in split_args(made.group(1)))):
                names.add(m.group(1))
    return names


def passes_on(arg, carriers):
    """The argument expression is a carrier itself (`cfg`, `&cfg`, `shared.clone()`, `&s.cfg`,
    `Arc::clone(&shared)`), not one setting out of it (`cfg.listen`, `&shared.cfg.root`)."""
    a = re.sub(r"\s+", "", arg)
    a = re.sub(r"^Arc::clone\((.*)\)$", r"\1", a)
    a = re.sub(r"\.clone\(\)$", "", a).lstrip("&*").replace("mut", "", 1) if a.startswith("&mut") else \
        re.sub(r"\.clone\(\)$", "", a).lstrip("&*")
    m = re.match(r"^(\w+)(\.cfg)?$", a)
    return bool(m and m.group(1) in carriers)


def resolve_call(fn, path, files, modules, fns_by_name):
    """The definitions a call `path(...)` may reach, best first; path is the text before `(`."""
    segs = [s for s in re.split(r"\s*::\s*", path) if s]
    name = segs[-1]
    cands = fns_by_name.get(name, [])
    if not cands:
        return []
    quals = segs[:-1]
    f = fn.file
    if quals:
        # A module path (crate::, super::, or an alias a `use` brought in), or a type.
        here = f.module_at(fn.body[0])
        t = resolve(modules, here, quals, f.rel == "main.rs")
        if t is None and here + (quals[0],) in modules:  # a child module by its bare name
            t = resolve(modules, here, ["self"] + quals, False)
        if t is None:
            t = use_alias(f, modules, quals)
        if t:
            hit = [c for c in cands if c.file.rel == t and c.owner is None]
            if hit:
                return hit
            # path names a module then a type: `module::Type::f`
        ty = quals[-1]
        hit = [c for c in cands if c.owner == ty]
        return hit
    same = [c for c in cands if c.file is f and c.owner is None]
    if same:
        return same
    # A function a `use` brought in by name.
    t = use_alias(f, modules, [name])
    return [c for c in cands if c.file.rel == t and c.owner is None] if t else []


def use_alias(f, modules, quals):
    """The file a leading path segment stands for through a `use` of `f` (`use crate::site::loader;` makes
    `loader` mean site/loader.rs; `use crate::site::loader::load;` makes `load` come from site/loader.rs)."""
    head = quals[0]
    for s, e in f.uses:
        tree = re.sub(r"^(?:pub(?:\s*\([^)]*\))?\s+)?use\s+", "", f.code[s:e]).rstrip(";")
        for segs in expand_use(tree):
            if segs and segs[-1] == head:
                t = resolve(modules, f.module_at(s), segs, f.rel == "main.rs")
                if t:
                    return t
                t = resolve(modules, f.module_at(s), segs[:-1], f.rel == "main.rs")
                if t:
                    return t
    return None


CALL_RE = re.compile(r"((?:\w+\s*::\s*)*\w+)\s*(?:::\s*<[^()]*?>\s*)?\(")


def calls_passing(fn, carriers, files, modules, fns_by_name):
    """Calls in `fn`'s body that pass a carrier on, in source order: (offset, callee Fn)."""
    code = fn.file.code
    s0, e0 = fn.body
    out = []
    for m in CALL_RE.finditer(code, s0, e0):
        path = m.group(1)
        if re.fullmatch(r"(?:if|while|match|for|return|Some|Ok|Err|fn|move|loop)", path):
            continue
        open_at = m.end() - 1
        depth, j = 0, open_at
        while j < e0:
            depth += {"(": 1, ")": -1}.get(code[j], 0)
            if depth == 0:
                break
            j += 1
        args = split_args(code[open_at + 1:j])
        method_on = None
        dot = re.search(r"(\w+)\s*\.\s*$", code[max(s0, m.start() - 80):m.start()])
        if dot:
            method_on = dot.group(1)
        # Only explicit arguments: a method called on the Shared (`shared.swap(t)`) does not pass the Config on.
        if method_on or not any(passes_on(a, carriers) for a in args):
            continue
        cands = resolve_call(fn, path, files, modules, fns_by_name)
        cands = [c for c in cands if c is not fn]
        if cands:
            out.append((m.start(), cands[0]))
    return out


def cfg_walk(files, modules, start=("lib.rs", None, "serve")):
    """Depth first from `serve`: each function is entered once; the walk is the sequence of files it is in as
    it goes down into a callee and comes back. A return is an arrival in a file the walk had been in and left
    earlier (coming back from a callee in another file counts too: the reader follows the cfg out and back)."""
    fns = functions(files)
    by_key = {fn.key(): fn for fn in fns}
    by_name = {}
    for fn in fns:
        by_name.setdefault(fn.name, []).append(fn)
    first = by_key[start]
    seen, steps = set(), []

    def go(fn, depth):
        seen.add(fn.key())
        steps.append((depth, fn))
        for _, callee in calls_passing(fn, carriers_of(fn), files, modules, by_name):
            if callee.key() in seen:
                continue
            go(callee, depth + 1)
            steps.append((depth, fn))  # back in the caller

    go(first, 0)
    trail, left, returns, visited = [], set(), 0, []
    cur = None
    for depth, fn in steps:
        rel = fn.file.rel
        if rel != cur:
            if cur is not None:
                left.add(cur)
            if rel in left:
                returns += 1
            trail.append((depth, fn, rel in left))
            cur = rel
            if rel not in visited:
                visited.append(rel)
        else:
            trail.append((depth, fn, None))
    return trail, visited, returns


# ---------------------------------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=SRC, help="the crate's src directory (default: images/server/src)")
    ap.add_argument("--strict", action="store_true", help="fail on allowed circles and upward imports too")
    ap.add_argument("--tests", action="store_true", help="count code under #[cfg(test)] too")
    ap.add_argument("--edges", action="store_true", help="print every resolved file-to-file import")
    ap.add_argument("--walk", action="store_true", help="print the cfg walk step by step")
    ap.add_argument("--list-upward", action="store_true", help="print upward imports as ALLOWED_UPWARD lines")
    args = ap.parse_args()

    files, modules = scan(args.src)
    edges = graph(files, modules, args.tests)
    nodes = set(files) - (set() if args.tests else TEST_ONLY_FILES)
    if args.edges:
        for (a, b), where in sorted(edges.items()):
            print(f"{a} -> {b}   ({', '.join(f'{ln}: {t}' for ln, t in where[:3])})")

    failed = 0
    found = circles(nodes, edges)
    allowed = [sorted(c) for c in ALLOWED_CIRCLES] if not args.strict else []
    covered = lambda c: any(set(c) <= set(a) for a in allowed)  # noqa: E731
    print(f"import circles: {len(found)} ({sum(len(c) for c in found)} files; largest {max(map(len, found), default=0)})")
    for c in found:
        tag = "warning (allowed, being removed)" if covered(c) else "ERROR"
        failed += not covered(c)
        print(f"  {tag}: circle of {len(c)}: {' '.join(c)}")
        for a in c:
            for b in c:
                if (a, b) in edges:
                    ln, t = edges[(a, b)][0]
                    print(f"      {a}:{ln} -> {b}  ({t})")

    up = sorted((a, b) for (a, b) in edges if layer(b) > layer(a))
    allowed_up = set(ALLOWED_UPWARD) if not args.strict else set()
    print(f"upward imports: {len(up)} (file pairs; layers bottom up: {' < '.join(LAYER_NAME)})")
    for a, b in up:
        ln, t = edges[(a, b)][0]
        key = f"{a} -> {b}"
        tag = "warning (allowed)" if key in allowed_up else "ERROR"
        failed += key not in allowed_up
        print(f"  {tag}: {a}:{ln} ({LAYER_NAME[layer(a)]}) imports {b} ({LAYER_NAME[layer(b)]}): {t}")
    if args.list_upward:
        for a, b in up:
            print(f'    "{a} -> {b}",')

    trail, visited, returns = cfg_walk(files, modules)
    print(f"cfg walk from lib.rs serve: {len(visited)} files, {returns} returns to a file already left")
    if args.walk:
        for depth, fn, ret in trail:
            mark = "  <- return" if ret else ""
            print(f"  {'  ' * depth}{fn.label()}{mark}")
    stale = [a for a in allowed if not any(set(c) <= set(a) for c in found)] + sorted(allowed_up - {f"{a} -> {b}" for a, b in up})
    for s in stale:
        print(f"  note: allowed but gone (delete it from the allow-list): {s}")
    if failed:
        print(f"server-layers: {failed} circle(s) or upward import(s) not in the allow-list")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
