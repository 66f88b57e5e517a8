#pragma once

#include <rlock/util/expected.hpp>

#include <string>
#include <string_view>

namespace rlock::lock {

inline constexpr std::size_t k_max_name_bytes = 1024;

// The Redis keys of one lock. All share the hash tag "{NAME}", so they stay in
// one slot when the layout moves to Redis Cluster.
struct LockKeys {
  std::string name;
  std::string
      lock; // <prefix>{NAME}: hash of the holder, expires with the lease
  std::string fence; // <prefix>{NAME}:fence: counter that never expires
};

// Returns the keys of lock `name` under `prefix`.
LockKeys keys_for(std::string_view prefix, std::string_view name);

// Returns the NAME when the key is a lock key under prefix ("" otherwise).
std::string name_of_lock_key(std::string_view prefix, std::string_view key);

// Returns the SCAN MATCH pattern that finds every lock key under `prefix`.
std::string lock_key_pattern(std::string_view prefix);

// Returns nothing when `name` is a valid lock name (non-empty, printable, at
// most 1024 bytes), else the reason.
Expected<std::string> validate_name(std::string_view name);

} // namespace rlock::lock
