#pragma once

#include <rlock/lock/replicas.hpp>
#include <rlock/lock/restart_grace.hpp>
#include <rlock/lock/store.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/redis/sentinel.hpp>
#include <rlock/redis/url.hpp>

#include <memory>
#include <string>

namespace rlock::lock {

// Where the locks live, as parsed from the command line: one server, or
// the master a set of sentinels names. A new kind of deployment (Cluster, a
// quorum of servers) adds its description here and its store to
// open_store().
struct Deployment {
  redis::Endpoint endpoint; // one server
  // Set: the master these sentinels name, found anew on every connection.
  std::optional<redis::SentinelMaster> sentinel;
  redis::ConnectOptions connect;
  std::string prefix;
  // A server up less than this grants no lock.
  RestartGrace restart_grace;
  // How many replicas must confirm the acquire and every renewal.
  ReplicaPolicy replicas;
};

// Returns the store for `deployment`, not yet connected: the one place that
// decides which store runs.
std::unique_ptr<LockStore> open_store(const Deployment& deployment);

} // namespace rlock::lock
