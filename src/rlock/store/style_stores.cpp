#include <rlock/store/redisson_store.hpp>
#include <rlock/store/string_store.hpp>
#include <rlock/store/style_stores.hpp>

namespace rlock::lock {

namespace {

template <typename Store>
StyleStores
over_redis(std::unique_ptr<Store> store) {
  StyleStores stores;
  stores.redis = &store->redis();
  stores.store = std::move(store);
  return stores;
}

} // namespace

StyleStores
style_stores(Deployment deployment, bool cluster_node) {
  switch (deployment.compat.style) {
  case LockStyle::rlock:
    break;
  case LockStyle::string:
  case LockStyle::shedlock:
    return over_redis(
        std::make_unique<StringStore>(std::move(deployment), cluster_node));
  case LockStyle::redisson:
    return over_redis(
        std::make_unique<RedissonStore>(std::move(deployment), cluster_node));
  }
  auto store =
      std::make_unique<RedisStore>(std::move(deployment), cluster_node);
  StyleStores stores;
  stores.redis = store.get();
  stores.store = std::move(store);
  return stores;
}

} // namespace rlock::lock
