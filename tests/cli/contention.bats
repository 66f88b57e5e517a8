#!/usr/bin/env bats
#
# Mutual exclusion under contention: 10 processes x 20 runs of one NAME.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

@test "10 processes x 20 runs: no overlap, counter 200, fences increase" {
  local d=$BATS_TEST_TMPDIR/cs
  mkdir "$d"
  echo 0 >"$d/counter"
  : >"$d/overlaps"
  : >"$d/fences"
  : >"$d/errors"
  # The critical section: entering must create "inside" (fails if someone
  # else is inside), the counter is read-modify-written with a pause in
  # between, leaving must remove "inside". Fences are logged in order.
  cat >"$d/cs.sh" <<'EOF'
#!/bin/sh
d=$1
mkdir "$d/inside" 2>/dev/null || echo "enter $RLOCK_FENCE" >>"$d/overlaps"
echo "$RLOCK_FENCE" >>"$d/fences"
n=$(cat "$d/counter")
sleep 0.01
echo $((n + 1)) >"$d/counter"
rmdir "$d/inside" 2>/dev/null || echo "leave $RLOCK_FENCE" >>"$d/overlaps"
EOF
  chmod +x "$d/cs.sh"
  # One bounded foreground command: timeout signals its whole process group
  # (all workers and their rlocks) if the test hangs.
  run -0 timeout -k 10 180 bash -c '
    rlock=$1 d=$2
    for w in 1 2 3 4 5 6 7 8 9 10; do
      (
        for r in $(seq 20); do
          rc=0
          "$rlock" contended "$d/cs.sh" "$d" 2>"$d/stderr.$w" || rc=$?
          [ "$rc" -eq 0 ] || echo "worker $w run $r: exit $rc: $(cat "$d/stderr.$w")" >>"$d/errors"
        done
      ) </dev/null 3>&- &
    done
    wait' _ "$RLOCK" "$d"
  echo "errors:"
  cat "$d/errors"
  echo "overlaps:"
  cat "$d/overlaps"
  [ ! -s "$d/errors" ]
  [ ! -s "$d/overlaps" ]
  [ "$(cat "$d/counter")" -eq 200 ]
  [ "$(wc -l <"$d/fences")" -eq 200 ]
  # In critical-section order, every fence is greater than the one before.
  awk 'NR > 1 && $1 <= prev { print "fence " $1 " after " prev; bad = 1 }
       { prev = $1 } END { exit bad }' "$d/fences"
  key_absent "$(lock_key 'contended')"
}
