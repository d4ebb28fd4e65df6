#!/usr/bin/env bash
# Server benchmark entry point (make bench-server calls it).
#   images/server/bench/run.sh PATH/TO/hyperstatic-server     our server vs nginx
#   images/server/bench/run.sh nginx                          nginx vs nginx: the harness's own self-check
#   BENCH_PROFILE=1 images/server/bench/run.sh PATH           syscalls per request and perf hot spots instead
#   BENCH_RULES=1 images/server/bench/run.sh PATH             site with 1,000 redirect + 100 header rules vs none
#   BENCH_SITES_MODE=1 images/server/bench/run.sh PATH        one site under --sites (the previews mode) vs --root
#   BENCH_ACCESS=1 images/server/bench/run.sh PATH            fair share on a million addresses, basic auth, SSO vs none
#   AB='a=ours; b=ours:--flag' images/server/bench/run.sh PATH  interleaved A/B of variants (hsbench/ab.py)
#   BENCH_ENCODE_TIME=1 images/server/bench/run.sh PATH   the encoder's time to finish on an idle pod, by CPU cap
# The HTTPS new-connection rows' load client (tlsload/main.go) is built with Go (PATH or /usr/local/go/bin) into the
# run's temp dir.
# Knobs (environment): PEERS BENCH_FLOOR BENCH_SECONDS REPS WARMUP_SECONDS BENCH_CPU_QUOTA SERVER_CPU CLIENT_CPU IDLE_CONNS
#                      BENCH_WORKLOADS BENCH_OUT BENCH_SERVER_ARGS; see README.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
say() { echo "==> [$(date +%H:%M:%S)] $*" >&2; }

[ $# -eq 1 ] || { echo "usage: $0 <hyperstatic-server binary | nginx>" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "needs root: the server's CPU cap is a cgroup" >&2; exit 2; }

# The load tool and the reference server come from Debian; install them if missing.
need=()
command -v wrk >/dev/null || need+=(wrk)
[ -x /usr/sbin/nginx ] || need+=(nginx-light)
peers="${PEERS:-nginx,lighttpd,h2o,caddy}"
case ",$peers," in *,lighttpd,*) [ -x /usr/sbin/lighttpd ] || need+=(lighttpd) ;; esac
# the HTTPS rows: lighttpd's TLS is a module of its own; openssl makes the certificate and checks every server
case ",$peers," in *,lighttpd,*) [ -e /usr/lib/lighttpd/mod_openssl.so ] || need+=(lighttpd-mod-openssl) ;; esac
command -v openssl >/dev/null || need+=(openssl)
case ",$peers," in *,h2o,*) [ -x /usr/bin/h2o ] || need+=(h2o) ;; esac
[ "${BENCH_FLOOR:-1}" = 0 ] || command -v gcc >/dev/null || need+=(gcc libc6-dev)  # builds floor.c
[ "${BENCH_FLOOR:-1}" = 0 ] || [ -e /usr/include/liburing.h ] || need+=(liburing-dev)  # builds floor_uring.c
command -v taskset >/dev/null || need+=(util-linux)
command -v h2load >/dev/null || need+=(nghttp2-client)  # the HTTP/2 rows' load client
command -v rsvg-convert >/dev/null || need+=(librsvg2-bin)  # only to render the chart to PNG
[ -z "${BENCH_ACCESS:-}" ] || command -v htpasswd >/dev/null || need+=(apache2-utils)  # the bcrypt hash
if [ -n "${BENCH_PROFILE:-}" ]; then
  command -v strace >/dev/null || need+=(strace)
  command -v perf >/dev/null || need+=(linux-perf)
fi
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "${need[@]}" >/dev/null || { apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null; }
  # Debian's packages start a system nginx/lighttpd/h2o on :80 when they can; the benchmark never uses them.
fi

# Caddy is no Debian package of the right age: `make caddy` builds it from the Go module proxy into bin/ (make
# bench-server does that first); CADDY names another binary.
case ",$peers," in *,caddy,*)
  : "${CADDY:=$(cd "$here/../../.." && pwd)/bin/caddy}"
  [ -x "$CADDY" ] || { echo "caddy not found at $CADDY: run make caddy (or leave caddy out of PEERS)" >&2; exit 2; }
  export CADDY ;;
esac

ours="$1"
[ "$ours" = nginx ] || ours="$(realpath "$ours")"
out="$(realpath -m "${BENCH_OUT:-$PWD/_out/bench}")"
cd "$here"
if [ -n "${BENCH_PROFILE:-}" ]; then
  exec python3 -m hsbench.profile --ours "$ours" --out "$out"
fi
if [ -n "${BENCH_RULES:-}" ]; then
  exec python3 -m hsbench.rules --ours "$ours" --out "$out/rules"
fi
if [ -n "${BENCH_SITES_MODE:-}" ]; then
  exec python3 -m hsbench.sitesmode --ours "$ours" --out "$out/sitesmode"
fi
if [ -n "${BENCH_ACCESS:-}" ]; then
  exec python3 -m hsbench.access --ours "$ours" --out "$out/access"
fi
if [ -n "${BENCH_ENCODE_TIME:-}" ]; then
  exec python3 -m hsbench.encodetime --ours "$ours" --out "$out/encodetime"
fi
if [ -n "${AB:-}" ]; then
  exec python3 -m hsbench.ab --ours "$ours" --out "$out/ab"
fi
exec python3 -m hsbench --ours "$ours" --out "$out"
