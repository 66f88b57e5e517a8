#include <rlock/store/cluster_store.hpp>
#include <rlock/store/discovering_store.hpp>
#include <rlock/store/open_store.hpp>
#include <rlock/store/quorum_store.hpp>
#include <rlock/store/redis_store.hpp>

namespace rlock::lock {

std::unique_ptr<LockStore>
open_store(const Deployment& deployment) {
  if (!deployment.members.empty()) {
    return std::make_unique<QuorumStore>(deployment);
  }
  if (deployment.cluster) {
    return std::make_unique<ClusterStore>(deployment);
  }
  if (!deployment.sentinel && !deployment.endpoint.is_unix()) {
    return std::make_unique<DiscoveringStore>(deployment);
  }
  return std::make_unique<RedisStore>(deployment);
}

} // namespace rlock::lock
