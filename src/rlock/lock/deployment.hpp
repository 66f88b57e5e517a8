#pragma once

#include <rlock/lock/restart_grace.hpp>
#include <rlock/lock/store.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/redis/url.hpp>

#include <memory>
#include <string>

namespace rlock::lock {

// Where the locks live, as parsed from the command line: today one server
// (one URL). A new kind of deployment (Sentinel, Cluster, a quorum of
// servers) adds its description here and its store to open_store().
struct Deployment {
  redis::Endpoint endpoint;
  redis::ConnectOptions connect;
  std::string prefix;
  // A server up less than this grants no lock.
  RestartGrace restart_grace;
};

// Returns the store for `deployment`, not yet connected: the one place that
// decides which store runs.
std::unique_ptr<LockStore> open_store(const Deployment& deployment);

} // namespace rlock::lock
