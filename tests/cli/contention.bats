#!/usr/bin/env bats
#
# Mutual exclusion under contention: 10 processes x 20 runs of one NAME
# (tests/lib/contention.bash).

bats_require_minimum_version 1.5.0

load helpers
load ../lib/contention

@test "10 processes x 20 runs: no overlap, counter 200, fences increase" {
  contend "$BATS_TEST_TMPDIR/cs" 10 20 "$RLOCK" contended
  contention_ok "$BATS_TEST_TMPDIR/cs" 200
  key_absent "$(lock_key 'contended')"
}
