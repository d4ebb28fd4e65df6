"""The request mix of the real-site benchmark: every HTML page of the site, each followed by the static assets a
browser fetches to render it (a visit with an empty cache).

What counts as an asset (what a browser loads without a click): <link rel="stylesheet"> and the stylesheets they
@import (always fetched), <link rel="icon"/"shortcut icon"/"preload">, <script src>, <img src>. Not assets:
navigation <link>s (next, prev, index, search, canonical…), <a href>, url() images inside CSS (fetched only when a
rule applies), anything on another host or a data: URI. Query strings and fragments are dropped (a static server
ignores them; Sphinx appends "?2022.1" to its theme CSS). Links to files that do not exist are dropped and counted.
"""
import os
import posixpath
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import quote, unquote, urlsplit

_ASSET_RELS = {"stylesheet", "icon", "shortcut icon", "preload", "apple-touch-icon"}
_IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?["']?([^"')\s;]+)""")

KINDS = {".html": "html", ".css": "css", ".js": "js", ".svg": "image", ".png": "image", ".jpg": "image",
         ".jpeg": "image", ".gif": "image", ".ico": "image", ".webp": "image"}


class _AssetParser(HTMLParser):
    """Collects asset references in document order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        if tag == "link" and a.get("rel", "").strip().lower() in _ASSET_RELS and a.get("href"):
            self.refs.append(a["href"])
        elif tag in ("script", "img") and a.get("src"):
            self.refs.append(a["src"])

    handle_startendtag = handle_starttag


def asset_refs(html: str) -> list[str]:
    p = _AssetParser()
    p.feed(html)
    p.close()
    return p.refs


def css_imports(css: str) -> list[str]:
    return _IMPORT.findall(css)


def resolve(base_url: str, ref: str) -> str | None:
    """The site-absolute path of ref as seen from the page base_url (itself site-absolute), or None when ref
    leaves the site (scheme, other host, data:) or names no path (#fragment). ".." stops at the root, as in a
    browser."""
    parts = urlsplit(ref)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    path = parts.path if parts.path.startswith("/") else posixpath.join(posixpath.dirname(base_url), parts.path)
    return "/" + posixpath.normpath(path).lstrip("/")


def file_of(root: str, url: str) -> str:
    return os.path.join(root, unquote(url).lstrip("/"))


def kind(url: str) -> str:
    return KINDS.get(posixpath.splitext(url)[1].lower(), "other")


@dataclass
class UrlList:
    urls: list[str]                               # the mix, in order: page, its assets, next page, …
    pages: int
    missing: dict[str, int] = field(default_factory=dict)  # linked but absent file -> how often

    def unique(self) -> list[str]:
        return list(dict.fromkeys(self.urls))


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _with_imports(root: str, url: str, seen: set[str]) -> list[str]:
    """url, then every stylesheet it @imports (depth first, each once per page)."""
    out = [url]
    if kind(url) == "css":
        for ref in css_imports(_read(file_of(root, url))):
            sub = resolve(url, ref)
            if sub and sub not in seen and os.path.isfile(file_of(root, sub)):
                seen.add(sub)
                out += _with_imports(root, sub, seen)
    return out


def page_assets(root: str, page_url: str, missing: dict[str, int]) -> list[str]:
    """The assets one visit to page_url fetches, in document order, each once."""
    seen: set[str] = set()
    out = []
    for ref in asset_refs(_read(file_of(root, page_url))):
        url = resolve(page_url, ref)
        if url is None or url in seen:
            continue
        if not os.path.isfile(file_of(root, url)):
            missing[url] = missing.get(url, 0) + 1
            continue
        seen.add(url)
        out += _with_imports(root, url, seen)
    return out


def html_pages(root: str) -> list[str]:
    pages = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".html"):
                rel = os.path.relpath(os.path.join(d, name), root)
                pages.append("/" + quote(rel.replace(os.sep, "/")))
    return pages


def build(root: str) -> UrlList:
    missing: dict[str, int] = {}
    urls: list[str] = []
    pages = html_pages(root)
    for page in pages:
        urls.append(page)
        urls += page_assets(root, page, missing)
    return UrlList(urls=urls, pages=len(pages), missing=missing)


def mix(urls: list[str], root: str) -> dict:
    """Share of requests and of (identity) bytes per kind of file: how the mix is made up."""
    sizes: dict[str, int] = {}
    out: dict[str, dict] = {}
    for u in urls:
        if u not in sizes:
            sizes[u] = os.path.getsize(file_of(root, u))
        k = out.setdefault(kind(u), {"requests": 0, "bytes": 0})
        k["requests"] += 1
        k["bytes"] += sizes[u]
    return {"requests": len(urls), "unique": len(sizes), "bytes": sum(v["bytes"] for v in out.values()),
            "kinds": dict(sorted(out.items()))}


def write(urls: list[str], path: str) -> None:
    """One URL per line: the file lua/site.lua reads."""
    with open(path, "w") as f:
        f.writelines(u + "\n" for u in urls)


def read(path: str) -> list[str]:
    with open(path) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]
