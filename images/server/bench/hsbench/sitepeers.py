"""How each server is set up for the real site: the bench-server configs (servers.py, *.conf.in) plus what each
one's documentation offers for sending precompressed files. Each peer also declares the Content-Encodings it is
set up to send, which sitecheck holds it to.

- ours: loads the .br/.gz siblings `precompress` wrote (nothing to configure).
- nginx: `gzip_static on` (ngx_http_gzip_static_module, built into Debian's nginx) and `brotli_static on`
  (Debian's libnginx-mod-http-brotli-static, loaded with load_module): both send the sibling file.
- h2o 2.2: `file.send-compressed: ON` sends the .br or .gz sibling (h2o's changelog: renamed from send-gzip).
- Caddy: `file_server { precompressed br gzip }` sends the .br or .gz sibling (Caddy's file_server docs).
- lighttpd 1.4.69 cannot send siblings it did not make: its way is mod_deflate with `deflate.cache-dir`, which
  compresses a file on its first request and keeps the result on disk for the next ones. The check pass before
  timing requests every URL once, so the timed runs find every variant cached; its encoder settings are its own
  defaults (brotli quality 4), so its bodies are larger than the siblings the others send.
"""
import mimetypes
import os

from .cgroup import CpuQuota
from .servers import H2O, Caddy, Lighttpd, Nginx, Server, free_port, pair

NGINX_BROTLI_STATIC = "/usr/lib/nginx/modules/ngx_http_brotli_static_module.so"
PAGE = "/index.html"  # readiness and the startup probe ask for the site's front page
# lighttpd compresses by Content-Type; the same kinds of files precompress gives siblings to in this site
LIGHTTPD_DEFLATE_TYPES = ("text/", "application/javascript", "application/json", "application/xml",
                          "image/svg+xml")


def lighttpd_mimetypes(root: str) -> dict[str, str]:
    """Extension -> type for every extension in the tree (lighttpd has no built-in table; the template names only
    .html and .bin), from Python's mimetypes, which reads the system's /etc/mime.types."""
    exts = set()
    for _, _, files in os.walk(root):
        exts.update(os.path.splitext(f)[1].lower() for f in files)
    out = {}
    for ext in sorted(exts - {"", ".html", ".bin"}):
        t, enc = mimetypes.guess_type("x" + ext)
        if t and not enc:
            out[ext] = t
    return out


def lighttpd_extra(root: str, cache_dir: str) -> str:
    types = ", ".join(f'"{e}" => "{t}"' for e, t in lighttpd_mimetypes(root).items())
    deflate = ", ".join(f'"{t}"' for t in LIGHTTPD_DEFLATE_TYPES)
    lines = [
        "# make bench-site: mod_deflate with an on-disk cache is lighttpd's way to serve compressed static files",
        'server.modules += ("mod_deflate")',
        f'deflate.cache-dir = "{cache_dir}"',
        'deflate.allowed-encodings = ("br", "gzip", "deflate")',
        f"deflate.mimetypes = ({deflate})",
    ]
    if types:
        lines.append(f"mimetype.assign += ({types})")
    return "\n" + "\n".join(lines) + "\n"


# what each server is configured to send, besides identity
OFFERS = {"hyperstatic": {"br", "gzip"}, "nginx": {"br", "gzip"}, "h2o": {"br", "gzip"}, "caddy": {"br", "gzip"},
          "lighttpd": {"br", "gzip", "deflate"}}
HOW = {"hyperstatic": "loads the .br/.gz siblings (precompress)",
       "nginx": "gzip_static on + brotli_static on (siblings)",
       "h2o": "file.send-compressed: ON (siblings)",
       "caddy": "file_server { precompressed br gzip } (siblings)",
       "lighttpd": "mod_deflate + deflate.cache-dir (compresses on first request, then from its disk cache)"}


def lineup(ours: str, peers: list[str], root: str, cpu: int, quota_pct: int, work: str, extra_args: list[str],
           tag: str) -> list[Server]:
    """Our server first, then each peer, all pinned to the same CPU under the same quota."""
    out: list[Server] = [pair(ours, root, cpu, quota_pct, work, extra_args, tag)[0]]
    for p in peers:
        common = dict(port=free_port(), quota=CpuQuota(f"{tag}-{p}", quota_pct), workdir=os.path.join(work, p),
                      root=root, cpu=cpu)
        if p == "nginx":
            out.append(Nginx(main_extra=f"load_module {NGINX_BROTLI_STATIC};",
                             http_extra="    gzip_static on;\n    brotli_static on;", **common))
        elif p == "lighttpd":
            cache = os.path.join(work, "lighttpd-deflate-cache")
            os.makedirs(cache, exist_ok=True)
            out.append(Lighttpd(extra_conf=lighttpd_extra(root, cache), **common))
        elif p == "h2o":
            out.append(H2O(extra_conf="file.send-compressed: ON\n", **common))
        elif p == "caddy":
            out.append(Caddy(file_server_extra="\t\tprecompressed br gzip", **common))
    for s in out:
        s.ready_path = PAGE
    return out
