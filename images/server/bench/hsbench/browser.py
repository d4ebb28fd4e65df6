"""make browser-check: headless Chromium loads a page over HTTPS and every resource must have come over h2, and
again with QUIC forced to the origin, over h3.

    /usr/bin/python3 -m hsbench.browser URL [--min-resources 5] [--chromium /usr/bin/chromium]
    /usr/bin/python3 -m hsbench.browser URL --want h3 --spki BASE64_SHA256_OF_THE_CERTIFICATE'S_SPKI

Starts Chromium headless with a throwaway profile, no network but loopback (every host name resolves to nothing,
background networking off), certificate errors ignored (the server's certificate is a self-signed one made for the
check); speaks the DevTools protocol to it over its WebSocket (a small client on Debian's python3-websockets:
asyncio, one connection, flat sessions); navigates to URL; after the load event reads every `performance` entry
(the navigation and each resource) with its `nextHopProtocol`, and what the Network domain saw (each response's
protocol and status, each failed load). Fails unless the navigation and every resource came over h2 with a 2xx,
nothing failed to load, and there are more than --min-resources resources. Prints one line per entry.

With --want h2, QUIC is off (a server run with --http3 advertises it with Alt-Svc, and Chromium would move later
requests to it). With --want h3, QUIC is forced to the URL's origin (`--origin-to-force-quic-on`: the first request
goes over QUIC without waiting for an Alt-Svc), and the certificate is trusted by its public key's hash
(`--ignore-certificate-errors-spki-list`): Chromium's QUIC does not honour --ignore-certificate-errors alone.
"""
import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

CHROMIUM = "/usr/bin/chromium"
# No network but loopback: every name fails to resolve except the loopback address the server listens on (IP URLs
# need no resolution), and Chromium's own background traffic (updates, safe browsing, metrics) is off.
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--ignore-certificate-errors", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-extensions", "--metrics-recording-only", "--mute-audio",
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--remote-debugging-port=0",
         "--disk-cache-size=1", "about:blank"]


def protocol_flags(url: str, want: str, spki: str | None) -> list[str]:
    """The Chromium flags that make it use `want` to the URL's origin: h2 (QUIC off), or h3 (QUIC forced there and
    the certificate trusted by its SPKI hash, which h3 needs)."""
    if want != "h3":
        return ["--disable-quic"]
    if not spki:
        raise ValueError("--want h3 needs --spki (Chromium's QUIC checks the certificate)")
    origin = urllib.parse.urlsplit(url)
    return ["--enable-quic", f"--origin-to-force-quic-on={origin.hostname}:{origin.port or 443}",
            f"--ignore-certificate-errors-spki-list={spki}"]


ENTRIES_JS = """JSON.stringify(
  performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource')).map(e => ({
    name: e.name, type: e.entryType, initiator: e.initiatorType || '', protocol: e.nextHopProtocol,
    status: e.responseStatus === undefined ? null : e.responseStatus, bytes: e.transferSize})))"""


def problems(entries: list[dict], responses: dict[str, dict], failed: list[dict], min_resources: int,
             want: str = "h2") -> list[str]:
    """Why the page does not pass: an entry not over `want` or not 2xx (when the browser reports the status), a
    response the Network domain saw over another protocol, a failed load, too few resources, no navigation."""
    out = []
    nav = [e for e in entries if e["type"] == "navigation"]
    res = [e for e in entries if e["type"] == "resource"]
    if len(nav) != 1:
        out.append(f"{len(nav)} navigation entries, want 1")
    if len(res) <= min_resources:
        out.append(f"{len(res)} resources loaded, want more than {min_resources}")
    for e in entries:
        if e["protocol"] != want:
            out.append(f"{e['name']}: nextHopProtocol {e['protocol']!r}, want {want!r}")
        if e.get("status") is not None and not 200 <= e["status"] < 300:
            out.append(f"{e['name']}: status {e['status']}")
    for url, r in sorted(responses.items()):
        if r["protocol"] != want or not 200 <= r["status"] < 300:
            out.append(f"{url}: Network saw {r['protocol']} {r['status']}")
    for f in failed:
        out.append(f"{f.get('url', '?')}: failed to load ({f.get('errorText', '')})")
    return out


def devtools_address(profile: str, proc: subprocess.Popen, timeout: float = 30.0) -> str:
    """Chromium writes its DevTools port and browser target path into DevToolsActivePort in the profile."""
    path = os.path.join(profile, "DevToolsActivePort")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chromium exited at start (code {proc.returncode})")
        try:
            with open(path) as f:
                port, target = f.read().split()[:2]
            return f"ws://127.0.0.1:{port}{target}"
        except (FileNotFoundError, ValueError):
            time.sleep(0.1)
    raise RuntimeError(f"chromium wrote no {path} in {timeout:.0f} s")


class Cdp:
    """One DevTools WebSocket: commands by id, events kept for whoever waits on them."""

    def __init__(self, ws):
        self.ws, self.next_id, self.events = ws, 0, []

    async def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        await self.ws.send(json.dumps(msg))
        while True:
            m = json.loads(await self.ws.recv())
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    async def wait_event(self, method: str, timeout: float) -> dict:
        async def loop():
            while True:
                for i, e in enumerate(self.events):
                    if e["method"] == method:
                        return self.events.pop(i)
                self.events.append(json.loads(await self.ws.recv()))
        return await asyncio.wait_for(loop(), timeout)

    async def drain(self, quiet_s: float) -> None:
        """Keep reading events until none came for quiet_s (late resources: a script's own fetches)."""
        while True:
            try:
                self.events.append(json.loads(await asyncio.wait_for(self.ws.recv(), quiet_s)))
            except asyncio.TimeoutError:
                return


async def load_page(ws_url: str, url: str, timeout: float) -> tuple[list[dict], dict[str, dict], list[dict]]:
    import websockets  # Debian's python3-websockets (make browser-check installs it)
    async with websockets.connect(ws_url, max_size=None) as ws:
        cdp = Cdp(ws)
        target = (await cdp.call("Target.createTarget", {"url": "about:blank"}))["targetId"]
        session = (await cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True}))["sessionId"]
        for domain in ("Network", "Page"):
            await cdp.call(f"{domain}.enable", session=session)
        await cdp.call("Network.setCacheDisabled", {"cacheDisabled": True}, session=session)
        await cdp.call("Page.navigate", {"url": url}, session=session)
        await cdp.wait_event("Page.loadEventFired", timeout)
        await cdp.drain(1.0)
        value = (await cdp.call("Runtime.evaluate", {"expression": ENTRIES_JS, "returnByValue": True},
                                session=session))["result"]["value"]
        urls, responses, failed = {}, {}, []
        for e in cdp.events:
            p = e.get("params", {})
            if e["method"] == "Network.requestWillBeSent":
                urls[p["requestId"]] = p["request"]["url"]
            elif e["method"] == "Network.responseReceived":
                r = p["response"]
                responses[r["url"]] = {"protocol": r.get("protocol", ""), "status": r["status"]}
            elif e["method"] == "Network.loadingFailed":
                failed.append({"url": urls.get(p["requestId"], p["requestId"]), "errorText": p.get("errorText")})
        return json.loads(value), responses, failed


def main() -> int:
    ap = argparse.ArgumentParser(prog="hsbench.browser", description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("--min-resources", type=int, default=5)
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", CHROMIUM))
    ap.add_argument("--want", default="h2", choices=["h2", "h3"], help="the protocol every entry must report (h2)")
    ap.add_argument("--spki", help="with --want h3: base64 SHA-256 of the server certificate's public key (SPKI)")
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    flags = protocol_flags(args.url, args.want, args.spki)
    profile = tempfile.mkdtemp(prefix="hs-browser-")
    log = open(os.path.join(profile, "chromium.log"), "wb")
    proc = subprocess.Popen([args.chromium, f"--user-data-dir={profile}", *flags, *FLAGS], stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ws_url = devtools_address(profile, proc)
        entries, responses, failed = asyncio.run(load_page(ws_url, args.url, args.timeout))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(profile, ignore_errors=True)
    for e in entries:
        print(f"  {e['type']:10} {e['protocol'] or '-':8} {e.get('status') or '-'} {e['bytes']:>8} B  {e['name']}")
    bad = problems(entries, responses, failed, args.min_resources, args.want)
    n = sum(1 for e in entries if e["type"] == "resource")
    if bad:
        print(f"browser check FAILED: {args.url} ({n} resources)", *bad, sep="\n  ", file=sys.stderr)
        return 1
    print(f"browser check passed: {args.url} and its {n} resources all came over {args.want}, all 2xx, none failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
