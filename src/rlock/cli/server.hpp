#pragma once

#include <rlock/lock/deployment.hpp>
#include <rlock/lock/store.hpp>
#include <rlock/redis/password_source.hpp>

#include <memory>

namespace rlock::cli {

// Returns the lock store for `deployment` (lock::open_store), not yet
// connected; warns first when --tls-insecure turns verification off.
// Runs the password command first, if any: a failure is an Error
// (unavailable) in its words.
std::unique_ptr<lock::LockStore> store_for(const lock::Deployment& deployment);

// Returns the password that changes (--password-command,
// $RLOCK_PASSWORD_COMMAND) the data nodes of `deployment` log in with; null
// for none.
std::shared_ptr<redis::PasswordSource>
password_source_of(const lock::Deployment& deployment);

} // namespace rlock::cli
