#pragma once

#include <rlock/lock/keys.hpp>
#include <rlock/redis/connection.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace rlock::lock {

// What Redis says about one lock at one moment.
struct LockState {
  std::string name;
  std::string key;
  bool held = false;
  // The fields below are meaningful only when held.
  std::int64_t ttl_ms = -1; // -1: the key has no expiry
  std::string token;
  std::int64_t fence = 0;
  std::string host;
  std::int64_t pid = 0;
  std::string user;
  std::string command;
  std::int64_t acquired_ms = 0; // server time, ms since the epoch
  std::int64_t renewals = 0;
  // Waiters alive in the --fair queue (others are not counted).
  std::int64_t waiters = 0;
};

struct StatusSnapshot {
  std::int64_t server_now_ms = 0; // to tell how long each lock has been held
  std::vector<LockState> locks;
};

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
