# shellcheck shell=bash
#
# Helpers the topology suites share (sentinel.bats, cluster.bats,
# harness.bats, cluster_tools.bats, sentinel_tools.bats). Load with
# `load common`, after sourcing tests/lib/topology.bash.

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

# brought_up RC [WHAT START]: the end of a setup_file that brought its
# topologies up, RC being how that went. 125 (no redis binaries) marks the
# file's tests to be skipped; another failure stops every topology of the
# file and returns RC; success notes how long WHAT took since START.
brought_up() {
  local rc=$1
  if ((rc == 125)); then
    export TOPOLOGY_TEST_SKIP=1
  elif ((rc != 0)); then
    topology_stop "$BATS_FILE_TMPDIR"
    return "$rc"
  elif (($# > 1)); then
    note "$2: $(elapsed "$3") s"
  fi
}

# skip_without_topology: in setup, skip the test when setup_file found no
# redis binaries.
skip_without_topology() {
  if [[ -n ${TOPOLOGY_TEST_SKIP:-} ]]; then
    skip "redis binaries not found (set CI=true or RLOCK_REQUIRE_REDIS=1 to fail instead)"
  fi
}
