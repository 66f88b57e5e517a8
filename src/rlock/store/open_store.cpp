#include <rlock/store/cluster_store.hpp>
#include <rlock/store/discovering_store.hpp>
#include <rlock/store/open_store.hpp>
#include <rlock/store/quorum_store.hpp>
#include <rlock/store/style_stores.hpp>

namespace rlock::lock {

// Each store keeps the lock in the deployment's style (--compat): a quorum
// through its LockLayout (the CLI refuses the styles it cannot keep), a
// Cluster and one server through style_stores().
std::unique_ptr<LockStore>
open_store(const Deployment& deployment) {
  const auto& topology = deployment.topology;
  if (std::holds_alternative<Quorum>(topology)) {
    return std::make_unique<QuorumStore>(deployment);
  }
  if (std::holds_alternative<Cluster>(topology)) {
    return std::make_unique<ClusterStore>(deployment);
  }
  // One server over TCP may be a Cluster node: the store finds out.
  const auto* single = std::get_if<Single>(&topology);
  if (single && !single->endpoint.is_unix()) {
    return std::make_unique<DiscoveringStore>(deployment);
  }
  return style_stores(deployment, false).store;
}

} // namespace rlock::lock
