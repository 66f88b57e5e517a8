#pragma once

#include <rlock/cli/options.hpp>
#include <rlock/lock/deployment.hpp>
#include <rlock/lock/store.hpp>

#include <memory>

namespace rlock::cli {

// Returns the deployment the server options describe.
lock::Deployment deployment_of(const ServerOptions& server);

// Returns the lock store for the server options, not yet connected.
std::unique_ptr<lock::LockStore> open_store(const ServerOptions& server);

} // namespace rlock::cli
