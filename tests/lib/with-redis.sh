#!/usr/bin/env bash
#
# with-redis.sh CMD [ARG...]: run CMD against a throwaway redis-server.
#
# CMD sees RLOCK_TEST_URL (redis://127.0.0.1:PORT/0) and RLOCK_TEST_SOCKET
# (the server's unix socket). Exits with CMD's status; 125 (skipped) when
# redis-server is missing, unless CI=true or RLOCK_REQUIRE_REDIS=1.
# The server and its directory are removed on exit, INT and TERM.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 1
# shellcheck source-path=SCRIPTDIR source=redis.bash disable=SC1091
source "$here/redis.bash"

if (($# == 0)); then
  echo "usage: with-redis.sh CMD [ARG...]" >&2
  exit 2
fi

dir=
# shellcheck disable=SC2317 # invoked by the traps below
cleanup() {
  if [[ -n $dir ]]; then
    redis_stop "$dir/srv" || echo "with-redis.sh: could not stop redis-server in $dir/srv" >&2
    rm -rf "$dir"
    dir=
  fi
}
trap cleanup EXIT
trap 'cleanup; trap - INT; kill -INT $$' INT
trap 'cleanup; trap - TERM; kill -TERM $$' TERM

dir=$(mktemp -d "${TMPDIR:-/tmp}/rlock-redis.XXXXXX") || exit 1
rc=0
redis_start "$dir/srv" || rc=$?
if ((rc != 0)); then
  exit "$rc"
fi

export RLOCK_TEST_URL=$RLOCK_URL
export RLOCK_TEST_SOCKET=$REDIS_SOCKET

"$@"
exit $?
