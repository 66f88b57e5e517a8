#pragma once

#include <rlock/lock/deployment.hpp>
#include <rlock/lock/store.hpp>

#include <memory>

namespace rlock::lock {

// Returns the store for `deployment`, not yet connected: the one place that
// decides which store runs. It stands above the stores (store/), so that no
// store includes another to be picked.
std::unique_ptr<LockStore> open_store(const Deployment& deployment);

} // namespace rlock::lock
