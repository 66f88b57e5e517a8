#!/usr/bin/env bats
#
# Signals sent to rlock reach the child's process group.
#
# rlock runs in the foreground under `run`, with default signal dispositions
# (see rl in helpers.bash: background jobs of a non-interactive shell, and
# so possibly this whole test run, start with SIGINT and SIGQUIT ignored).
# The child writes rlock's PID ($PPID) to a file once its trap is set; a
# background signaller then sends the signal to rlock, never to the child.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

setup() {
  common_setup
  ready=$BATS_TEST_TMPDIR/ready
}

# forwarded_and_trapped SIG: the child traps SIG and exits 0, so rlock
# exits 0 and the child's output shows it got SIG.
forwarded_and_trapped() {
  local sig=$1
  signal_when_ready "$ready" "$sig"
  run -0 --separate-stderr rl "trap-$sig" sh -c \
    "trap 'echo got-$sig; exit 0' $sig; $(ready_cmd "$ready"); while :; do sleep 0.1; done"
  [ "$output" = "got-$sig" ]
  key_absent "$(lock_key "trap-$sig")"
}

# forwarded_and_fatal SIG N: the child does not trap SIG and dies of it, so
# rlock exits 128+N.
forwarded_and_fatal() {
  local sig=$1 num=$2
  signal_when_ready "$ready" "$sig"
  # ulimit -c 0: no core files from SIGQUIT.
  run "-$((128 + num))" --separate-stderr rl "fatal-$sig" sh -c \
    "ulimit -c 0; $(ready_cmd "$ready"); exec sleep 30"
  [ -z "$output" ]
  key_absent "$(lock_key "fatal-$sig")"
}

# waiter_signalled SIG N: rlock waits for a held lock and gets SIG: it exits
# 128+N promptly and never runs the command.
waiter_signalled() {
  local sig=$1 num=$2 start elapsed pidfile=$BATS_TEST_TMPDIR/waiter.pid
  bg "$RLOCK" busy sleep 30
  wait_until 10 key_exists "$(lock_key 'busy')"
  # The waiter has had a second to start waiting when the signal comes; if
  # it comes earlier, rlock must still exit 128+N without running anything.
  (
    wait_until 10 file_has "$pidfile" && sleep 1 && kill -s "$sig" "$(<"$pidfile")"
  ) >/dev/null 2>&1 </dev/null 3>&- &
  track $!
  start=$(now_ms)
  # bash writes its PID, then becomes env, which becomes rlock.
  run "-$((128 + num))" --separate-stderr timeout -k 5 "$RL_LIMIT" bash -c \
    'echo $$ >"$1.tmp" && mv "$1.tmp" "$1" && exec env --default-signal "$2" busy touch ran' \
    _ "$pidfile" "$RLOCK"
  elapsed=$(($(now_ms) - start))
  [ ! -e ran ]
  [ -z "$output" ]
  # Bounded, not timed: the holder keeps the lock for 30 s.
  ((elapsed < 20000))
  key_exists "$(lock_key 'busy')"
}

@test "SIGINT is forwarded to the child's group (child traps it)" {
  forwarded_and_trapped INT
}

@test "SIGTERM is forwarded to the child's group (child traps it)" {
  forwarded_and_trapped TERM
}

@test "SIGHUP is forwarded to the child's group (child traps it)" {
  forwarded_and_trapped HUP
}

@test "SIGQUIT is forwarded to the child's group (child traps it)" {
  forwarded_and_trapped QUIT
}

@test "SIGUSR1 is forwarded to the child's group (child traps it)" {
  forwarded_and_trapped USR1
}

@test "SIGUSR2 is forwarded to the child's group (child traps it)" {
  forwarded_and_trapped USR2
}

@test "SIGINT kills an untrapping child: rlock exits 130" {
  forwarded_and_fatal INT 2
}

@test "SIGTERM kills an untrapping child: rlock exits 143" {
  forwarded_and_fatal TERM 15
}

@test "SIGHUP kills an untrapping child: rlock exits 129" {
  forwarded_and_fatal HUP 1
}

@test "SIGQUIT kills an untrapping child: rlock exits 131" {
  forwarded_and_fatal QUIT 3
}

@test "SIGUSR1 kills an untrapping child: rlock exits 138" {
  forwarded_and_fatal USR1 10
}

@test "SIGUSR2 kills an untrapping child: rlock exits 140" {
  forwarded_and_fatal USR2 12
}

@test "the signal reaches the whole group, not just the child" {
  # A grandchild in the child's group reports the signal; the child itself
  # ignores it and waits for the grandchild.
  signal_when_ready "$ready" USR1
  run -0 --separate-stderr rl group sh -c "
    sh -c 'trap \"echo grandchild-got-USR1; exit 0\" USR1; touch gc-ready; while :; do sleep 0.1; done' &
    trap '' USR1
    while [ ! -e gc-ready ]; do sleep 0.05; done
    $(ready_cmd "$ready")
    wait"
  [ "$output" = grandchild-got-USR1 ]
}

@test "SIGTERM while waiting: exit 143, command never ran" {
  waiter_signalled TERM 15
}

@test "SIGINT while waiting: exit 130, command never ran" {
  waiter_signalled INT 2
}
