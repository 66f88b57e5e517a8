#!/usr/bin/env bash
# tests/lint/test_layers.sh: the layering checker fails on each kind of
# violation planted in a copy of src/, and passes on the copy as it is.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$(dirname "$here")")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# plant NAME FILE LINE RULE: appends LINE to FILE in a fresh copy of src/
# and expects the checker to fail naming RULE.
plant() {
  local name=$1 file=$2 line=$3 rule=$4 out
  rm -rf "$tmp/src" && cp -r "$repo/src" "$tmp/src"
  printf '%s\n' "$line" >>"$tmp/src/$file"
  if out=$(python3 "$here/layers.py" "$tmp/src"); then
    echo "FAIL: $name: the checker passed"
    failures=$((failures + 1))
  elif ! grep -q "$rule" <<<"$out"; then
    echo "FAIL: $name: expected '$rule', got: $out"
    failures=$((failures + 1))
  else
    echo "ok: $name"
  fi
}

rm -rf "$tmp/src" && cp -r "$repo/src" "$tmp/src"
if python3 "$here/layers.py" "$tmp/src" >/dev/null; then
  echo "ok: the tree passes"
else
  echo "FAIL: the tree as it is does not pass"
  failures=$((failures + 1))
fi
plant "upward include" rlock/lock/timing.cpp '#include <rlock/cli/run.hpp>' \
  'lock/ may not include cli/'
plant "store include from lock/" rlock/lock/waiter.cpp \
  '#include <rlock/store/redis_store.hpp>' 'lock/ may not include store/'
plant "upward include from store/" rlock/store/keys.cpp '#include <rlock/cli/run.hpp>' \
  'store/ may not include cli/'
plant "exit code in store/" rlock/store/redis_store.cpp \
  'int f() { return exit_code::k_usage; }' 'exit code below cli/'
plant "sibling include" rlock/proc/child.cpp '#include <rlock/redis/url.hpp>' \
  'proc/ may not include redis/'
plant "exit code in lock/" rlock/lock/timing.cpp 'int f() { return exit_code::k_usage; }' \
  'exit code below cli/'
plant "exit codes header in proc/" rlock/proc/child.cpp \
  '#include <rlock/cli/exit_codes.hpp>' 'proc/ may not include cli/'
plant "option name in redis/" rlock/redis/url.cpp \
  'const char* k_bad = "--url: no";' 'option name below cli/'
plant "option name mid-message in lock/" rlock/lock/timing.cpp \
  'const char* k_bad = "allow INFO or set --restart-grace 0";' \
  'option name below cli/'
plant "hiredis in cli/" rlock/cli/run.cpp '#include <hiredis/hiredis.h>' \
  'hiredis header outside redis/'
plant "hiredis in lock/" rlock/lock/timing.cpp '#include <hiredis/read.h>' \
  'hiredis header outside redis/'
plant "include circle" rlock/store/keys.cpp '#include <rlock/store/status.hpp>' \
  'include circle: rlock/store/keys <->.*rlock/store/status'
plant "include circle through a product" rlock/store/redis_store.cpp \
  '#include <rlock/store/quorum_store.hpp>' 'include circle: .*rlock/store/redis_store'
exit $((failures > 0))
