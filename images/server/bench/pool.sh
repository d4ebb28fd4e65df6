#!/usr/bin/env bash
# One server, many sites (make bench-pool calls it): our server with --sites on a pool of 10,000 small sites and on
# one of 100 copies of the Python docs, each against the same binary with --root on one of those sites; see README.md
# ("One server, many sites").
#   images/server/bench/pool.sh PATH/TO/hyperstatic-server
# Knobs (environment): POOL_SITES POOL_DOCS_SITES POOL_CASES POOL_COLD_PROBES POOL_CONNECTIONS POOL_PRIME_SECONDS POOL_MEMORY_LIMIT POOL_BASELINE
#                      POOL_BREAKDOWN
#                      POOL_TREES BENCH_SECONDS REPS WARMUP_SECONDS STARTUP_REPS BENCH_CPU_QUOTA SERVER_CPU CLIENT_CPU
#                      BENCH_SERVER_ARGS BENCH_OUT BENCH_KEEP_TMP SITE_DOCS.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
say() { echo "==> [$(date +%H:%M:%S)] $*" >&2; }
# The same as-root pattern as site.sh: root runs it, anyone else goes via sudo.
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

[ $# -eq 1 ] || { echo "usage: $0 <hyperstatic-server binary>" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "needs root: each server's CPU cap is a cgroup" >&2; exit 2; }

# From Debian: the docs (python3.11-doc) for the docs pool, the load tool.
need=()
case ",${POOL_CASES:-small,docs}," in *,docs,*)
  [ -n "${SITE_DOCS:-}" ] || [ -d /usr/share/doc/python3.11/html ] || need+=(python3.11-doc) ;;
esac
command -v wrk >/dev/null || need+=(wrk)
command -v taskset >/dev/null || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} (Debian packages)"
  # Refresh the package lists only when the first attempt fails (a fresh machine has none).
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null ||
    { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; }
fi

ours="$(realpath "$1")"
out="$(realpath -m "${BENCH_OUT:-$PWD/_out/bench}/pool")"
cd "$here"
exec python3 -m hsbench.pool --ours "$ours" --out "$out"
