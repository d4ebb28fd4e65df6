#!/usr/bin/env bash
# together.sh NAME CMD [NAME CMD ...]: run the commands side by side and wait for all of them; exit 0 only when
# every one exited 0. Used where the steps mostly wait (clusters coming up, images loading, e2e scenarios waiting on
# pods), so that on a 2-CPU machine the waits overlap instead of adding up.
#
# Output stays readable and whole: the first command's output goes to this script's standard output as it comes
# (unprefixed, so a test runner's lines read as they always do); each other command writes to
# $LOG_DIR/NAME.log (default _out/logs), printed here in full, between markers, once it has finished. Each command
# ends with a line saying how long it took and how it exited.
set -uo pipefail
if [ $(($# % 2)) != 0 ] || [ $# -lt 2 ]; then echo "usage: together.sh NAME CMD [NAME CMD ...]" >&2; exit 2; fi
LOG_DIR=${LOG_DIR:-$(cd "$(dirname "$0")/.." && pwd)/_out/logs}
mkdir -p "$LOG_DIR"

names=() pids=() logs=()
t0=$(date +%s)
first=1
while [ $# -gt 0 ]; do
  name=$1 cmd=$2; shift 2
  if [ $first = 1 ]; then
    log=""
    bash -c "$cmd" &
  else
    log="$LOG_DIR/$name.log"
    echo "==> [$(date +%H:%M:%S)] $name: started beside it (log: $log)"
    bash -c "$cmd" >"$log" 2>&1 &
  fi
  first=0
  names+=("$name") pids+=($!) logs+=("$log")
done

# Wait in start order: the first (live) command's end is reported first, then each other command's log follows.
rc=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"; code=$?
  took=$(( $(date +%s) - t0 ))
  if [ -n "${logs[$i]}" ]; then
    echo "----- ${names[$i]} (ran beside the others), its output:"
    cat "${logs[$i]}"
    echo "----- end of ${names[$i]}"
  fi
  echo "==> [$(date +%H:%M:%S)] ${names[$i]}: exit $code, done ${took}s after the start"
  [ "$code" = 0 ] || rc=1
done
exit $rc
