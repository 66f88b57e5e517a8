#pragma once

#include <rlock/lock/deployment.hpp>
#include <rlock/lock/store.hpp>
#include <rlock/store/redis_store.hpp>

#include <memory>

namespace rlock::lock {

// The stores on one server for the deployment's lock style: `store` does
// the lock's steps (a RedisStore, or with --compat the style's store over
// one); `redis` is the RedisStore whose session they use, which takes
// ASKING, the replica count and the questions about the server.
struct StyleStores {
  std::unique_ptr<LockStore> store;
  RedisStore* redis = nullptr;
};

// Returns the stores on the one server of `deployment` (a Single or a
// Sentinel master), as a Redis Cluster node when `cluster_node`.
StyleStores style_stores(Deployment deployment, bool cluster_node);

} // namespace rlock::lock
