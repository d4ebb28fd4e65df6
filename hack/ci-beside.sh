#!/usr/bin/env bash
# ci-beside.sh DIR: CI's work that may run beside the e2e suite, in the checks tree DIR (hack/ci-checks-tree.sh):
# every static check (make verify), the builds of every test make test runs (make test-build: compiled, none run),
# and the fuzz targets (make server-fuzz-build). .ci/run starts it through hack/lowprio.sh beside the e2e tests,
# which mostly wait on pods: the scenarios keep the CPU they use and this takes what they leave. Nothing here has a
# deadline of its own (tests are compiled, not run), so starving it only makes it later, never wrong.
#
# Every step runs even when an earlier one fails; the script fails if any did, naming them.
set -uo pipefail
if [ $# != 1 ]; then echo "usage: ci-beside.sh DIR" >&2; exit 2; fi
cd "$1" || exit 2
failed=""
step() {
  local name=$1 t0; shift
  t0=$(date +%s)
  echo "::: beside ${name} started at $(date -u +%H:%M:%S)"
  if "$@"; then echo "::: beside ${name} took $(( $(date +%s) - t0 ))s"
  else echo "::: beside ${name} FAILED after $(( $(date +%s) - t0 ))s"; failed="$failed $name"; fi
}
step verify make verify
step test-build make test-build
step fuzz-build make server-fuzz-build
if [ -n "$failed" ]; then echo "::: beside: failed:$failed"; exit 1; fi
