#pragma once

#include <rlock/lock/lease.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/store/keys.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace rlock::lock {

// Reads the named locks, in the order given. Throws Error (unavailable).
StatusSnapshot read_locks(redis::Connection& connection,
                          const KeySpace& space,
                          const std::vector<std::string>& names);

// Reads every lock held in `space` whose NAME matches the glob `match`
// (found with SCAN), sorted by name. Throws Error (unavailable).
StatusSnapshot list_locks(redis::Connection& connection,
                          const KeySpace& space,
                          std::string_view match = "*");

} // namespace rlock::lock
