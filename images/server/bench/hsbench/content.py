"""The site both servers serve: one 100-byte HTML file and 1,000 distinct 8 KiB files.

The 8 KiB files hold random bytes (.bin, application/octet-stream): no server can shrink them, so neither
keeps or negotiates a compressed variant and "content size" means the same for both (8,192,000 bytes).
wrk sends no Accept-Encoding, so every response is the identity body anyway.
"""
import os
from dataclasses import dataclass

SMALL_PATH = "/100.html"
SET_COUNT = 1000
SET_SIZE = 8192
SET_DIR = "/8k"  # floor.c answers "GET /8k/NNNN" from this directory's files


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


def generate(root: str) -> Content:
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
    os.chmod(root, 0o755)
    return Content(root=root, files=1 + SET_COUNT, bytes=len(small) + SET_COUNT * SET_SIZE, samples=samples)
