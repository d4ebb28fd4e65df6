#!/usr/bin/env bash
# server-tests.sh DIR JOBS: the Rust tests of the crate in DIR (what `cargo test` runs: the unit tests, every
# integration test binary, the doc tests), JOBS test binaries at a time instead of one after another.
#
# Why: cargo runs its test binaries one after the other, and most of their time is waiting, not computing (idle
# and drain timeouts, slow clients, floods answered at the server's pace): in the cold CI run of 2026-12-02 the
# server's 39 binaries took 171 s of test time one after the other, the longest 35 s. Each binary's own tests
# already run side by side on its threads, so the tests are written for company; JOBS binaries at a time keep
# the machine's two cores about as busy as one binary's threads do.
#
# Each binary runs as cargo runs it (in DIR, with CARGO_MANIFEST_DIR set, no arguments). Its output is printed
# whole when it ends, in the order cargo lists the binaries, with how long it took; the script fails if any
# failed, naming them. Compiling is cargo's own (`cargo test --no-run`), so a build error reads as usual.
set -euo pipefail
if [ $# != 2 ]; then echo "usage: server-tests.sh DIR JOBS" >&2; exit 2; fi
dir=$1 jobs=$2
cd "$dir"
work=$(mktemp -d "${TMPDIR:-/tmp}/server-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The test binaries cargo built, as "name<TAB>path" lines in cargo's order (the unit tests of the library and the
# binary, then each file under tests/).
cargo test --locked --no-run --message-format=json-render-diagnostics >"$work/build.json"
python3 - "$work/build.json" >"$work/binaries" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        t = m["target"]
        print(f'{"/".join(t["kind"])} {t["name"]}\t{m["executable"]}')
EOF
# The doc tests have no binary of their own: cargo compiles and runs them in one step, so they are one job too.
printf 'doc tests\tcargo test --locked --doc\n' >>"$work/binaries"
count=$(wc -l <"$work/binaries")
echo "==> [$(date +%H:%M:%S)] server tests: $count test binaries, $jobs at a time"

export CARGO_MANIFEST_DIR=$PWD
run_one() { # run_one INDEX: run line INDEX of the list, output and status into files named after it
  local i=$1 name cmd t0
  IFS=$'\t' read -r name cmd < <(sed -n "${i}p" "$work/binaries")
  t0=$(date +%s)
  if $cmd >"$work/$i.out" 2>&1; then echo ok >"$work/$i.rc"; else echo failed >"$work/$i.rc"; fi
  echo "$(( $(date +%s) - t0 ))" >"$work/$i.took"
}
export -f run_one
export work
seq 1 "$count" | xargs -P "$jobs" -I{} bash -c 'run_one {}'

failed=""
for i in $(seq 1 "$count"); do
  IFS=$'\t' read -r name _ < <(sed -n "${i}p" "$work/binaries")
  echo "----- $name ($(cat "$work/$i.took") s, $(cat "$work/$i.rc"))"
  cat "$work/$i.out"
  [ "$(cat "$work/$i.rc")" = ok ] || failed="$failed; $name"
done
if [ -n "$failed" ]; then echo "server tests FAILED:${failed#;}"; exit 1; fi
echo "==> [$(date +%H:%M:%S)] server tests: all $count passed"
