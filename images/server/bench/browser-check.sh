#!/usr/bin/env bash
# Browser check (make browser-check calls it): our server serves the Python 3.11 docs over HTTPS on loopback and
# headless Chromium loads a real page with its stylesheets, scripts and images; every `performance` entry must
# report nextHopProtocol h2; then, with QUIC forced to the origin (the server runs with --http3), h3
# (hsbench/browser.py says exactly what passes).
#   images/server/bench/browser-check.sh PATH/TO/hyperstatic-server [DOCS_DIR]
# Knobs (environment): BROWSER_PAGE (/howto/logging.html), BROWSER_SERVER_ARGS (extra server flags, e.g.
# --http2=false or --http3=false, which must make the check fail), BROWSER_MIN_RESOURCES (5), BROWSER_PROTOCOLS
# ("h2 h3": the loads, in order).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
say() { echo "==> [$(date +%H:%M:%S)] browser-check: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

[ $# -ge 1 ] || { echo "usage: $0 <hyperstatic-server binary> [docs dir]" >&2; exit 2; }
server="$(realpath "$1")"
docs="${2:-$repo/_out/pydocs}"
page="${BROWSER_PAGE:-/howto/logging.html}"

# Debian's Chromium, and Debian's python3-websockets for the DevTools client (run with Debian's interpreter, for
# which it is installed); openssl makes the certificate, curl waits for the server.
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
/usr/bin/python3 -c 'import websockets' 2>/dev/null || need+=(python3 python3-websockets)
command -v openssl >/dev/null || need+=(openssl)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} (Debian packages)"
  # Refresh the package lists only when the first attempt fails (a fresh machine has none).
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null ||
    { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; }
fi
"$repo/hack/python-docs.sh" "$docs" >&2

work="$(mktemp -d /tmp/hs-browser-check.XXXXXX)"
pid=""
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
  -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
# Every listener on port 0: the server binds them and names them in its "listening" line (the HTTP/3 socket takes
# the TLS port). Ports picked here and bound later could be taken in between by any outgoing connection.
# shellcheck disable=SC2086 # BROWSER_SERVER_ARGS is a list of flags
"$server" --root "$docs" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
  --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" --tls-listen 127.0.0.1:0 --http3 \
  ${BROWSER_SERVER_ARGS:-} >"$work/server.log" 2>&1 &
pid=$!
listening=""
for _ in $(seq 1 300); do
  listening="$(grep -m 1 '"msg":"listening"' "$work/server.log" || true)"
  [ -z "$listening" ] || break
  kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "the server exited at start" >&2; exit 1; }
  sleep 0.1
done
[ -n "$listening" ] || { cat "$work/server.log" >&2; echo "the server did not log \"listening\" in 30 s" >&2; exit 1; }
read -r tls_port admin_port < <(/usr/bin/python3 -c '
import json, sys
line = json.loads(sys.argv[1])
print(line["https"].rsplit(":", 1)[1], line["admin"].rsplit(":", 1)[1])' "$listening")
for _ in $(seq 1 300); do
  curl -fsS -o /dev/null "http://127.0.0.1:$admin_port/readyz" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "the server exited at start" >&2; exit 1; }
  sleep 0.1
done
say "$("$server" --version 2>/dev/null | head -n 1) on https://127.0.0.1:$tls_port${BROWSER_SERVER_ARGS:+ with $BROWSER_SERVER_ARGS}; Chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}') loads $page"
# Chromium's QUIC trusts the self-signed certificate only by its public key's SHA-256 (base64), as
# --ignore-certificate-errors-spki-list wants it.
spki="$(openssl x509 -in "$work/cert.pem" -noout -pubkey | openssl pkey -pubin -outform der |
  openssl dgst -sha256 -binary | base64)"
cd "$here"
for want in ${BROWSER_PROTOCOLS:-h2 h3}; do
  say "load over $want"
  /usr/bin/python3 -m hsbench.browser "https://127.0.0.1:$tls_port$page" --min-resources "${BROWSER_MIN_RESOURCES:-5}" \
    --want "$want" --spki "$spki"
done
