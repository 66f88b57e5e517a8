// Redis Cluster's nodes over sockets: where to start, and the slot map read
// from whichever node answers first.
#pragma once

#include <rlock/redis/cluster.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/redis/url.hpp>

#include <vector>

namespace rlock::redis {

// A Redis Cluster as a URL names it: the seed nodes to read the slot map
// from, and how to log in to every node.
struct ClusterSeeds {
  std::vector<HostPort> seeds;
  Endpoint data_node; // login and TLS; host and port from the slot map

  // Returns the endpoint of the node at `node`, with the login and TLS.
  Endpoint node(const HostPort& node) const;
};

// Reads the slot map (CLUSTER SLOTS) from the first of `first` and then the
// seeds that answers. Throws Failure: refused or timed_out when no node
// answered, naming each and why; server_error when a node answers that it
// is not in cluster mode; unexpected_reply when its slot map is malformed.
SlotMap read_slot_map(const ClusterSeeds& cluster,
                      const std::vector<HostPort>& first,
                      const ConnectOptions& options);

} // namespace rlock::redis
