#include <rlock/redis/cluster_map.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/util/log.hpp>

#include <algorithm>

namespace rlock::redis {

namespace {

SlotMap
slot_map_of(Connection& connection, const HostPort& node) {
  const auto reply = connection.command({"CLUSTER", "SLOTS"});
  if (reply.is_error()) {
    const bool no_cluster =
        is_unknown_command(reply.text)
        || reply.text.find("cluster support disabled") != std::string::npos;
    throw_server_error(no_cluster ? node.address()
                                        + " is not a Redis Cluster node "
                                          "(name one server in a redis:// "
                                          "URL)"
                                  : "CLUSTER SLOTS on " + node.address(),
                       reply.text);
  }
  auto map = parse_cluster_slots(reply, node);
  if (!map) {
    throw Failure(FailureKind::unexpected_reply,
                  "malformed CLUSTER SLOTS from " + node.address() + ": "
                      + map.error());
  }
  return std::move(map.value());
}

} // namespace

Endpoint
ClusterSeeds::node(const HostPort& node) const {
  Endpoint result = data_node;
  result.host = node.host;
  result.port = node.port;
  result.socket_path.clear();
  return result;
}

SlotMap
read_slot_map(const ClusterSeeds& cluster,
              const std::vector<HostPort>& first,
              const ConnectOptions& options) {
  std::vector<HostPort> candidates = first;
  for (const auto& seed : cluster.seeds) {
    if (std::find(candidates.begin(), candidates.end(), seed)
        == candidates.end()) {
      candidates.push_back(seed);
    }
  }
  std::string reasons;
  bool timed_out = true;
  for (const auto& node : candidates) {
    try {
      auto connection = Connection::open(cluster.node(node), options);
      return slot_map_of(connection, node);
    } catch (const Failure& failure) {
      // A node that answers but is no cluster node, or refuses the login,
      // says so at once: another seed would say the same.
      if ((failure.failure_kind() == FailureKind::server_error
           && !may_pass(failure))
          || failure.failure_kind() == FailureKind::auth_refused
          || failure.failure_kind() == FailureKind::tls_failed) {
        throw;
      }
      log::info("no slot map from " + node.address() + ": " + failure.what());
      timed_out = timed_out && failure.failure_kind() == FailureKind::timed_out;
      reasons += (reasons.empty() ? "" : "; ") + std::string(failure.what());
    }
  }
  throw Failure(timed_out ? FailureKind::timed_out : FailureKind::refused,
                "no node of the cluster answered (" + reasons + ")");
}

} // namespace rlock::redis
