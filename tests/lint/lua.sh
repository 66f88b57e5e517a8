#!/usr/bin/env bash
# tests/lint/lua.sh [DIR]: every lock script in DIR (src/rlock/redis/scripts),
# put together as cmake/EmbedScripts.cmake embeds it (the prelude, and the
# strict-key check of test builds, in front), compiles with Lua 5.4
# (luac5.4: Dragonfly runs 5.4, Redis 5.1), and calls none of Lua 5.1's
# functions that 5.4 lacks: a bare unpack (use table.unpack or unpack),
# setfenv, getfenv, loadstring, module, table.getn, math.mod, string.gfind.
# A 5.4 compile does not catch those by itself: they are globals, nil only
# when the script runs.
# tests/lint/lua.sh --self-test: fails unless a planted bare unpack and a
# planted 5.4 syntax error each make the check fail, on a copy of DIR.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$(dirname "$here")")

# check DIR: prints each problem; fails when there is one.
check() {
  local dir=$1 failed=0 script body out
  for script in "$dir"/*.lua "$dir"/checks/*.lua; do
    if grep -nHP '(?<![\w.:])(unpack|setfenv|getfenv|loadstring|module)\s*\(|\btable\.getn\b|\bmath\.mod\b|\bstring\.gfind\b' \
      "$script" >&2; then
      echo "$script: a Lua 5.1 function that Lua 5.4 lacks (for unpack: table.unpack or unpack)" >&2
      failed=1
    fi
  done
  # Line numbers count from the top of what is compiled: the check (if
  # any), then the prelude, then the script.
  for script in "$dir"/*.lua; do
    [[ $(basename "$script") == prelude.lua ]] && continue
    for body in "" "$dir/checks/strict_keys.lua"; do
      # shellcheck disable=SC2086 # body is empty or one path
      if ! out=$(cat $body "$dir/prelude.lua" "$script" | luac5.4 -p - 2>&1); then
        echo "$script${body:+ (behind the strict-key check)}: $out" >&2
        failed=1
      fi
    done
  done
  return "$failed"
}

if [[ ${1:-} != --self-test ]]; then
  check "${1:-$repo/src/rlock/redis/scripts}"
  exit
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
# plant NAME LINE: appends LINE to a copy of release.lua; the check must fail.
plant() {
  rm -rf "$tmp/scripts" && cp -r "$repo/src/rlock/redis/scripts" "$tmp/scripts"
  printf '%s\n' "$2" >>"$tmp/scripts/release.lua"
  if check "$tmp/scripts" 2>/dev/null; then
    echo "FAIL: $1: the check passed"
    failures=$((failures + 1))
  else
    echo "ok: $1"
  fi
}
rm -rf "$tmp/scripts" && cp -r "$repo/src/rlock/redis/scripts" "$tmp/scripts"
if check "$tmp/scripts"; then
  echo "ok: the scripts pass"
else
  echo "FAIL: the scripts as they are fail"
  failures=$((failures + 1))
fi
plant "a bare unpack" "local t = {unpack({1, 2})}"
plant "a bare unpack with a space" "local t = {unpack ({1, 2})}"
plant "setfenv" "setfenv(1, {})"
plant "a 5.4 syntax error (goto is a keyword)" "local goto = 1"
exit $((failures > 0))
