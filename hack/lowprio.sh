#!/usr/bin/env bash
# lowprio.sh CMD [ARG...]: run CMD so that it gets only the CPU nothing else wants.
#
# `nice -n 19` alone does not do that here: with the kernel's autogroup scheduling (on by default on Debian), nice
# orders tasks only within one session's group, every session's group weighs as much as any other, and the kind
# nodes sit in docker's cpu cgroup, which weighs as much again. So a niced build started by CI still takes up to
# half the machine from the e2e scenarios beside it. This puts CMD in a cpu cgroup of its own with the smallest
# weight and, where the kernel has it, cpu.idle (its tasks run only when no other task wants the CPU):
#   cgroup v1: /sys/fs/cgroup/cpu/hyperstatic-lowprio, cpu.shares 2, cpu.idle 1;
#   cgroup v2: /sys/fs/cgroup/hyperstatic-lowprio, cpu.weight 1, cpu.idle 1.
# Without a writable cgroup (not root, no cpu controller), it falls back to a session of its own whose autogroup is
# niced to 19, and says so. CMD is niced to 19 in every case (for the tasks of its own group).
set -euo pipefail
if [ $# = 0 ]; then echo "usage: lowprio.sh CMD [ARG...]" >&2; exit 2; fi
name=hyperstatic-lowprio
join() { # join DIR WEIGHTFILE WEIGHT: make DIR a low-weight cgroup and move this shell into it
  mkdir -p "$1" 2>/dev/null || return 1
  # An idle group takes no weight (the kernel refuses the write): set it only on a group not idle yet, as a group
  # left by an earlier run on this machine is.
  if [ "$(cat "$1/cpu.idle" 2>/dev/null)" != 1 ]; then
    echo "$3" >"$1/$2" 2>/dev/null || return 1
    [ ! -e "$1/cpu.idle" ] || echo 1 >"$1/cpu.idle" 2>/dev/null || true
  fi
  echo $$ >"$1/cgroup.procs" 2>/dev/null
}
if [ -d /sys/fs/cgroup/cpu ] && join "/sys/fs/cgroup/cpu/$name" cpu.shares 2; then
  :
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers && \
     { grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control || echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; } 2>/dev/null && \
     join "/sys/fs/cgroup/$name" cpu.weight 1; then
  :
else
  echo "lowprio.sh: no writable cpu cgroup: running CMD in a session of its own, its autogroup niced to 19" >&2
  exec setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 "$@"' lowprio "$@"
fi
exec nice -n 19 "$@"
