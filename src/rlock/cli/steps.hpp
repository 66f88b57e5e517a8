// What the script steps (acquire, extend, release, check, wait) share.
#pragma once

#include <rlock/cli/options.hpp>
#include <rlock/lock/store.hpp>

#include <memory>
#include <string>

namespace rlock::cli {

// Sets the log level and returns the store, connected.
std::unique_ptr<lock::LockStore> connected_store(const lock::Deployment& server,
                                                 log::Level log_level);

// The same for a step that waits: a failover under way at the start is left
// to the wait (see connect_for_waiting).
std::unique_ptr<lock::LockStore> waiting_store(const lock::Deployment& server,
                                               const WaitingOptions& waiting,
                                               log::Level log_level);

// Warns that `name` is not held by the token given, saying whether it is
// free or whose it is now; returns 1.
int not_held(lock::LockSteps& store, const std::string& name);

// Throws the usage error of a `who` ("this run") whose `attempt` at lock
// `name` can never succeed: its live holders took it with another limit
// than `asked` (the limit is part of the lock). Returns otherwise.
void refuse_if_impossible(const std::string& name,
                          const lock::AcquireAttempt& attempt,
                          std::int64_t asked,
                          const std::string& who);

} // namespace rlock::cli
