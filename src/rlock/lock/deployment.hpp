#pragma once

#include <rlock/lock/replicas.hpp>
#include <rlock/lock/restart_grace.hpp>
#include <rlock/redis/cluster_map.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/redis/sentinel.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/util/clock.hpp>

#include <string>
#include <variant>
#include <vector>

namespace rlock::lock {

// One server, as its URL names it (login, database, TLS).
struct Single {
  redis::Endpoint endpoint;
};

// The master a set of sentinels names, found anew on every connection;
// `master.data_node` holds the data nodes' login, database and TLS.
struct Sentinel {
  redis::SentinelMaster master;
};

// A Redis Cluster, whose slot map (read from the seeds) says which master
// keeps a lock; its keys carry brace-free hash tags (KeySpace::cluster).
struct Cluster {
  redis::ClusterSeeds seeds;
};

// One of a quorum's servers: one server or a Sentinel master, with the
// replica policy of its own kind.
struct QuorumMember {
  std::variant<Single, Sentinel> where;
  ReplicaPolicy replicas{};
};

// A quorum of independent masters (Redlock), of which `quorum` must agree.
struct Quorum {
  std::vector<QuorumMember> members;
  int quorum = 0;
};

using Topology = std::variant<Single, Sentinel, Cluster, Quorum>;

// How a lock is kept: rlock's own layout, or the layout of a library an
// application takes the same lock with (--compat), so that both exclude
// each other (docs/sharing.md).
enum class LockStyle {
  rlock,    // rlock's hash at PREFIX{NAME} and the keys beside it
  string,   // the SET-NX family: a string at NAME, a random token
  shedlock, // ShedLock: a string at job-lock:ENV:NAME
  redisson, // Redisson's RLock: a hash at NAME, one field per holder
};

// The --compat choice: the style and, for ShedLock, its environment.
struct Compat {
  LockStyle style = LockStyle::rlock;
  std::string shedlock_env = "default";
};

// Where the locks live, parsed once from the command line (cli/server.cpp):
// the topology, and what all its servers share. A new kind of deployment
// adds its alternative to Topology and its store to open_store()
// (store/open_store.cpp).
struct Deployment {
  Topology topology;
  redis::ConnectOptions connect{};
  std::string prefix{};
  // A server up less than this grants no lock.
  RestartGrace restart_grace{};
  // How many replicas must confirm the acquire and every renewal (a
  // quorum's members carry their own; this is the first one's).
  ReplicaPolicy replicas{};
  // --compat: whose layout the lock is kept in (rlock's own by default).
  Compat compat{};
};

// Returns `options` with the connect and reply timeouts cut to what is left
// until `deadline`, when one is set.
redis::ConnectOptions bounded_by(redis::ConnectOptions options,
                                 std::optional<BootTime> deadline);

} // namespace rlock::lock
