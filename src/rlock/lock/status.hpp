#pragma once

#include <rlock/lock/keys.hpp>
#include <rlock/lock/lease.hpp>
#include <rlock/redis/connection.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace rlock::lock {

// Reads the named locks, in the order given. Throws Error (unavailable).
StatusSnapshot read_locks(redis::Connection& connection,
                          std::string_view prefix,
                          const std::vector<std::string>& names);

// Reads every lock held under `prefix` whose NAME matches the glob `match`
// (found with SCAN), sorted by name. Throws Error (unavailable).
StatusSnapshot list_locks(redis::Connection& connection,
                          std::string_view prefix,
                          std::string_view match = "*");

} // namespace rlock::lock
