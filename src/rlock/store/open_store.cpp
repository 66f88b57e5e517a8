#include <rlock/store/cluster_store.hpp>
#include <rlock/store/discovering_store.hpp>
#include <rlock/store/open_store.hpp>
#include <rlock/store/quorum_store.hpp>
#include <rlock/store/redis_store.hpp>
#include <rlock/store/redisson_store.hpp>
#include <rlock/store/string_store.hpp>
#include <rlock/util/error.hpp>

namespace rlock::lock {

std::unique_ptr<LockStore>
open_store(const Deployment& deployment) {
  const auto& topology = deployment.topology;
  // A quorum keeps the lock in its style's layout (LockLayout): rlock's own
  // or --compat string's (the CLI refuses the others on a quorum). On a
  // Cluster, each master's store keeps the style's layout.
  if (std::holds_alternative<Quorum>(topology)) {
    return std::make_unique<QuorumStore>(deployment);
  }
  if (std::holds_alternative<Cluster>(topology)) {
    return std::make_unique<ClusterStore>(deployment);
  }
  switch (deployment.compat.style) {
  case LockStyle::rlock:
    break;
  case LockStyle::string:
  case LockStyle::shedlock:
    return std::make_unique<StringStore>(deployment);
  case LockStyle::redisson:
    return std::make_unique<RedissonStore>(deployment);
  }
  // One server over TCP may be a Cluster node: the store finds out.
  const auto* single = std::get_if<Single>(&topology);
  if (single && !single->endpoint.is_unix()) {
    return std::make_unique<DiscoveringStore>(deployment);
  }
  return std::make_unique<RedisStore>(deployment);
}

} // namespace rlock::lock
