#pragma once

#include <rlock/lock/deployment.hpp>
#include <rlock/lock/store.hpp>

#include <memory>

namespace rlock::cli {

// Returns the lock store for `deployment` (lock::open_store), not yet
// connected; warns first when --tls-insecure turns verification off.
std::unique_ptr<lock::LockStore> store_for(const lock::Deployment& deployment);

} // namespace rlock::cli
