# shellcheck shell=bash
#
# Mutual exclusion under contention, for tests/cli/contention.bats and the
# Sentinel and Cluster suites: several processes run a critical section many
# times through one rlock command line, and what they leave behind (not what
# rlock says) shows whether two were ever inside at once. Load with
# `load ../lib/contention`.
#
# The critical section and the workers are single-quoted on purpose.
# shellcheck disable=SC2016

# contend DIR PROCS RUNS CMD...: PROCS processes, each running
# `CMD... DIR/cs.sh DIR` RUNS times (CMD is rlock, its options and the lock's
# name). Creates DIR; leaves in it what contention_ok checks. Fails if the
# workers take longer than 180 s.
contend() {
  local d=$1 procs=$2 runs=$3
  shift 3
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
  timeout -k 10 180 bash -c '
    d=$1 procs=$2 runs=$3
    shift 3
    for w in $(seq "$procs"); do
      (
        for r in $(seq "$runs"); do
          rc=0
          "$@" "$d/cs.sh" "$d" 2>"$d/stderr.$w" || rc=$?
          [ "$rc" -eq 0 ] || echo "worker $w run $r: exit $rc: $(cat "$d/stderr.$w")" >>"$d/errors"
        done
      ) </dev/null 3>&- &
    done
    wait' _ "$d" "$procs" "$runs" "$@"
}

# contention_ok DIR TOTAL: the TOTAL runs contend made in DIR all exited 0,
# none entered or left while another was inside, the counter ends at TOTAL,
# and each run logged a fence, every one greater than the one before.
contention_ok() {
  local d=$1 total=$2 n
  echo "errors:"
  cat "$d/errors"
  echo "overlaps:"
  cat "$d/overlaps"
  [[ ! -s $d/errors && ! -s $d/overlaps ]] || return 1
  n=$(<"$d/counter")
  [[ $n == "$total" ]] || {
    echo "counter $n, expected $total" >&2
    return 1
  }
  n=$(wc -l <"$d/fences")
  [[ $n == "$total" && $(grep -cxE '[0-9]+' "$d/fences") == "$total" ]] || {
    echo "$n lines in the fences file, expected $total fences" >&2
    return 1
  }
  increasing "$d/fences"
}

# increasing FILE: the numbers in FILE (other lines skipped) increase
# strictly, line by line.
increasing() {
  awk '/^[0-9]+$/ { if (n++ && $1 <= prev) { print "fence " $1 " after " prev; bad = 1 } prev = $1 }
       END { exit bad }' "$1"
}
