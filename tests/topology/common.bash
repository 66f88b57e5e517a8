# shellcheck shell=bash
#
# Helpers the topology suites share (sentinel.bats, cluster.bats,
# harness.bats). Load with `load common`, after sourcing
# tests/lib/topology.bash.

# note TEXT: a line in the TAP output, for the timings.
note() {
  echo "# $*" >&3
}

# elapsed SINCE: seconds since EPOCHREALTIME was SINCE, to 0.1 s.
elapsed() {
  awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

# exists_on KEY PORT: EXISTS KEY on the server on PORT (1 or 0; MOVED... from
# a cluster node that does not serve KEY's slot).
exists_on() {
  topology_cli "$2" exists "$1"
}

# held_on KEY PORT: KEY exists on the server on PORT.
held_on() {
  [[ $(exists_on "$1" "$2") == 1 ]]
}
