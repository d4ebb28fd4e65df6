"""The site both servers serve: one 100-byte HTML file and 1,000 distinct 8 KiB files.

The 8 KiB files hold random bytes (.bin, application/octet-stream): no server can shrink them, so neither
keeps or negotiates a compressed variant and "content size" means the same for both (8,192,000 bytes).
wrk sends no Accept-Encoding, so every response is the identity body anyway.

With pages > 0 (BENCH_PAGES) the tree also holds that many distinct compressible 8 KiB HTML pages under /pages/,
without .br/.gz siblings (a raw tree, as a site is deployed): nothing requests them, but our server's background
encoder gives each its brotli, zstd and gzip variants after start, so its rows show what encoding costs serving.
"""
import os
from dataclasses import dataclass

SMALL_PATH = "/100.html"
SET_COUNT = 1000
SET_SIZE = 8192
SET_DIR = "/8k"  # floor.c answers "GET /8k/NNNN" from this directory's files
PAGES_DIR = "/pages"
PAGE_SIZE = 8192
# Words for the compressible pages: markup and prose compress 3–5× like real pages, not 100× like a repeated line.
_WORDS = ("the server keeps every file of the site in memory and answers from there with one write while a "
          "background thread encodes each page as brotli zstd and gzip <p> <a href=\"/docs/\"> </a> <li> "
          "<div class=\"section\"> quota worker slack cgroup reload content digest table").split()


def set_path(i: int) -> str:
    return f"{SET_DIR}/{i:04d}.bin"  # lua/random8k.lua builds the same names


@dataclass
class Content:
    root: str
    files: int
    bytes: int
    samples: dict[str, bytes]  # a few paths with their exact bodies, to validate each server


def _small_body() -> bytes:
    head = b"<!doctype html><title>hyperstatic bench</title><p>"
    tail = b"</p>\n"
    body = head + b"x" * (100 - len(head) - len(tail)) + tail
    assert len(body) == 100
    return body


def page(i: int) -> bytes:
    """Compressible page i: PAGE_SIZE bytes of HTML-like text, distinct per i (another digest, another encoding)."""
    x = 0x9E3779B97F4A7C15 ^ (i + 1)
    out = [f"<!doctype html><title>page {i}</title>\n".encode()]
    n = len(out[0])
    while n < PAGE_SIZE:
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        w = (_WORDS[(x >> 33) % len(_WORDS)] + (" " if (x >> 20) % 9 else ".\n")).encode()
        out.append(w)
        n += len(w)
    return b"".join(out)[:PAGE_SIZE]


def add_pages(root: str, pages: int) -> int:
    """Writes pages compressible pages under root/pages (none when 0); returns how many."""
    if pages:
        os.makedirs(os.path.join(root, PAGES_DIR.lstrip("/")), exist_ok=True)
    for i in range(pages):
        with open(os.path.join(root, PAGES_DIR.lstrip("/"), f"{i:04d}.html"), "wb") as f:
            f.write(page(i))
    return pages


def generate(root: str, pages: int = 0) -> Content:
    os.makedirs(os.path.join(root, "8k"), exist_ok=True)
    small = _small_body()
    with open(os.path.join(root, SMALL_PATH.lstrip("/")), "wb") as f:
        f.write(small)
    samples = {SMALL_PATH: small}
    for i in range(SET_COUNT):
        body = os.urandom(SET_SIZE)
        with open(os.path.join(root, set_path(i).lstrip("/")), "wb") as f:
            f.write(body)
        if i in (0, 500, SET_COUNT - 1):
            samples[set_path(i)] = body
    if add_pages(root, pages):
        samples[f"{PAGES_DIR}/0000.html"] = page(0)
    os.chmod(root, 0o755)
    return Content(root=root, files=1 + SET_COUNT + pages, bytes=len(small) + SET_COUNT * SET_SIZE + pages * PAGE_SIZE,
                   samples=samples)
