#!/usr/bin/env bash
# e2e-why-failed.sh LOG...: for each test that failed in a `go test -v` log, the last lines it logged before it
# failed (a t.Fatal's message is its last line). CI keeps only the head and the tail of a long run's output, and a
# scenario's failure message sits in the middle of an e2e log among the lines of the scenarios that ran beside it;
# `make e2e` prints this digest last, so the reason a run failed is where a reader looks.
#
# With -v, Go prints "=== RUN/NAME/CONT/PAUSE <test>" whenever the output switches to another test, and a test's
# own lines are indented under it; "--- FAIL: <test>" says it failed. Only the innermost failed tests are shown (a
# parent fails because a subtest did). What a test logs after a line with POSTMORTEM (e2e/helpers_test.go's
# postmortemMarker: the namespace's state and container logs, written once it failed) is left out: the lines
# before it hold the failure.
set -uo pipefail
if [ $# = 0 ]; then echo "usage: e2e-why-failed.sh LOG..." >&2; exit 2; fi
for log in "$@"; do
  [ -f "$log" ] || continue
  awk -v keep=8 -v logname="$log" '
    /^=== (RUN|NAME|CONT|PAUSE) / { cur = $3; next }
    /^ *--- FAIL: / { name = $3; failed[name] = 1; order[++n] = name; next }
    /^ *--- (PASS|SKIP): / { next }
    /^    / && cur != "" && index($0, "POSTMORTEM") { after[cur] = 1 }
    /^    / && cur != "" && !after[cur] {
      i = count[cur] % keep; last[cur, i] = $0; count[cur]++
    }
    END {
      shown = 0
      for (k = 1; k <= n; k++) {
        t = order[k]; leaf = 1
        for (u in failed) if (index(u, t "/") == 1) { leaf = 0; break }
        if (!leaf) continue
        if (!shown) print "==> why the tests failed (" logname "): each failed test'"'"'s last " keep " lines"
        shown = 1
        print "--- " t ":"
        c = count[t]; from = c > keep ? c - keep : 0
        for (j = from; j < c; j++) print last[t, j % keep]
        if (c == 0) print "    (it logged nothing)"
      }
    }' "$log"
done
