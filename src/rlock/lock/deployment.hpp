#pragma once

#include <rlock/lock/replicas.hpp>
#include <rlock/lock/restart_grace.hpp>
#include <rlock/redis/cluster_map.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/redis/sentinel.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/util/clock.hpp>

#include <memory>
#include <string>
#include <vector>

namespace rlock::lock {

// Where the locks live, as parsed from the command line: one server, the
// master a set of sentinels names, a Redis Cluster, or a quorum of servers.
// A new kind of deployment adds its description here and its store to
// open_store() (store/open_store.cpp).
struct Deployment {
  redis::Endpoint endpoint; // one server; with a Cluster, one of its masters
  // Set: the master these sentinels name, found anew on every connection.
  std::optional<redis::SentinelMaster> sentinel;
  redis::ConnectOptions connect;
  std::string prefix;
  // Set: a Redis Cluster, whose slot map says which master keeps a lock;
  // its keys carry brace-free hash tags (KeySpace::cluster).
  std::optional<redis::ClusterSeeds> cluster;
  // A server up less than this grants no lock.
  RestartGrace restart_grace;
  // How many replicas must confirm the acquire and every renewal.
  ReplicaPolicy replicas;
  // Not empty: a quorum of independent masters (Redlock), each one server
  // or a Sentinel master, of which `quorum` must agree; the fields above
  // then hold what all share (prefix, timeouts, restart grace).
  std::vector<Deployment> members;
  int quorum = 0;
};

// Returns `options` with the connect and reply timeouts cut to what is left
// until `deadline`, when one is set.
redis::ConnectOptions bounded_by(redis::ConnectOptions options,
                                 std::optional<BootTime> deadline);

} // namespace rlock::lock
