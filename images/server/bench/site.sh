#!/usr/bin/env bash
# Real-site benchmark entry point (make bench-site calls it): the Python 3.11 docs from Debian, precompressed by
# our server's `precompress`, served by our server and every peer; see site.md in docs/bench/ and README.md here.
#   images/server/bench/site.sh PATH/TO/hyperstatic-server
# Knobs (environment): PEERS BENCH_SECONDS REPS WARMUP_SECONDS BENCH_CPU_QUOTA SERVER_CPU CLIENT_CPU
#                      SITE_CONNECTIONS STARTUP_REPS BENCH_OUT BENCH_SERVER_ARGS BENCH_KEEP_TMP SITE_H2 (1: the h2 row).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
say() { echo "==> [$(date +%H:%M:%S)] $*" >&2; }
# The same as-root pattern as make/verify.mk and hack/docker-engine.sh: root runs it, anyone else goes via sudo.
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

[ $# -eq 1 ] || { echo "usage: $0 <hyperstatic-server binary>" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "needs root: each server's CPU cap is a cgroup" >&2; exit 2; }

# Everything comes from Debian: the content (python3.11-doc), the load tool, the peers and the modules that let
# each peer send the precompressed siblings (nginx: gzip_static is built in, brotli_static is a module; lighttpd:
# mod_deflate), python3-brotli to check br bodies.
need=()
[ -d /usr/share/doc/python3.11/html ] || need+=(python3.11-doc)
command -v wrk >/dev/null || need+=(wrk)
command -v taskset >/dev/null || need+=(util-linux)
if [ "${SITE_H2:-1}" != 0 ]; then  # the h2 row: h2load, and openssl for the TLS listeners' certificate
  command -v h2load >/dev/null || need+=(nghttp2-client)
  command -v openssl >/dev/null || need+=(openssl)
fi
/usr/bin/python3 -c 'import brotli' 2>/dev/null || need+=(python3 python3-brotli)
peers="${PEERS:-nginx,lighttpd,h2o,caddy}"
case ",$peers," in *,nginx,*)
  [ -x /usr/sbin/nginx ] || need+=(nginx-light)
  [ -e /usr/lib/nginx/modules/ngx_http_brotli_static_module.so ] || need+=(libnginx-mod-http-brotli-static) ;;
esac
case ",$peers," in *,lighttpd,*)
  [ -x /usr/sbin/lighttpd ] || need+=(lighttpd)
  [ -e /usr/lib/lighttpd/mod_deflate.so ] || need+=(lighttpd-mod-deflate) ;;
esac
case ",$peers," in *,h2o,*) [ -x /usr/bin/h2o ] || need+=(h2o) ;; esac
# Caddy is built from the Go module proxy (make caddy; make bench-site does it first); CADDY names another binary
case ",$peers," in *,caddy,*)
  : "${CADDY:=$(cd "$here/../../.." && pwd)/bin/caddy}"
  [ -x "$CADDY" ] || { echo "caddy not found at $CADDY: run make caddy (or leave caddy out of PEERS)" >&2; exit 2; }
  export CADDY ;;
esac
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} (Debian packages)"
  # Refresh the package lists only when the first attempt fails (a fresh machine has none).
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null ||
    { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; }
  # Debian's packages may start a system nginx/lighttpd/h2o on :80; the benchmark never uses them.
fi

# Debian's interpreter, not whatever python3 comes first on PATH: python3-brotli (needed to check br bodies) is
# installed for it.
py=/usr/bin/python3
ours="$(realpath "$1")"
out="$(realpath -m "${BENCH_OUT:-$PWD/_out/bench}/site")"
cd "$here"
exec "$py" -m hsbench.site --ours "$ours" --out "$out"
