#!/usr/bin/env bash
# h2spec (145 cases, RFC 9113 + RFC 7541) against the release server: the TLS port (ALPN h2) and the plain port
# with --h2c. Fails on any failing case that images/server/README.md does not list as an exception, as
# `- h2spec TRANSPORT ID: reason` (TRANSPORT tls or h2c, ID as h2spec's JUnit report names it, e.g.
# http2/6.5.3/2), and on a listed exception that passes again (the list must not go stale).
# Usage: run.sh SERVER_BIN H2SPEC_BIN README
set -euo pipefail
server=$1 h2spec=$2 readme=$3
dir=$(mktemp -d)
pid=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$dir"; }
trap cleanup EXIT

mkdir -p "$dir/site"
printf '<!doctype html><title>h2spec</title><p>h2spec\n' > "$dir/site/index.html"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/tls.key" -out "$dir/tls.crt" \
  -days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null
"$server" --root "$dir/site" --listen 127.0.0.1:0 --tls-listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
  --tls-cert "$dir/tls.crt" --tls-key "$dir/tls.key" --h2c --workers 1 --drain-delay 0s > "$dir/server.log" 2>&1 &
pid=$!
# The ports the server picked, from its `listening` log line.
port() { sed -n 's/.*"msg":"listening".*"'"$1"'":"[^"]*:\([0-9]*\)".*/\1/p' "$dir/server.log"; }
for _ in $(seq 400); do
  grep -q '"msg":"listening"' "$dir/server.log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/server.log"; echo "h2spec: the server did not start"; exit 1; }
  sleep 0.05
done
plain=$(port http) tls=$(port https)
if [ -z "$plain" ] || [ -z "$tls" ]; then cat "$dir/server.log"; echo "h2spec: no listening line"; exit 1; fi

status=0
for transport in tls h2c; do
  if [ "$transport" = tls ]; then args=(-t -k -p "$tls"); else args=(-p "$plain"); fi
  "$h2spec" -h 127.0.0.1 "${args[@]}" -j "$dir/$transport.xml" > "$dir/$transport.out" 2>&1 || true
  summary=$(tail -n 1 "$dir/$transport.out")
  echo "h2spec $transport: $summary"
  python3 - "$dir/$transport.xml" "$readme" "$transport" <<'PY' || { status=1; grep -B1 -A4 '×' "$dir/$transport.out" | head -n 60 || true; }
import re, sys, xml.etree.ElementTree as ET
report, readme, transport = sys.argv[1:]
failed = set()
for suite in ET.parse(report).getroot().iter("testsuite"):
    for i, case in enumerate(suite.iter("testcase"), 1):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(f"{suite.get('package')}/{i}")
listed = set(re.findall(r"^- h2spec " + transport + r" (\S+):", open(readme).read(), re.M))
total = sum(1 for _ in ET.parse(report).getroot().iter("testcase"))
if total != 145:
    sys.exit(f"h2spec {transport}: {total} cases ran, 145 expected")
bad = sorted(failed - listed)
stale = sorted(listed - failed)
for c in bad:
    print(f"h2spec {transport}: {c} failed and is not an exception listed in the README")
for c in stale:
    print(f"h2spec {transport}: {c} is listed as an exception in the README but passes: remove it")
sys.exit(1 if bad or stale else 0)
PY
done
exit $status
