#pragma once

#include <rlock/util/expected.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace rlock::lock {

inline constexpr std::size_t k_max_name_bytes = 1024;

// The Redis keys of one lock. All share the hash tag "{NAME}", so they stay in
// one slot when the layout moves to Redis Cluster.
struct LockKeys {
  std::string name;
  // <prefix>{NAME}: hash of the holder, expires with the lease
  std::string lock;
  // <prefix>{NAME}:fence: the last fence, kept until the server's clock has
  // passed it (plus a second)
  std::string fence;
  // <prefix>{NAME}:queue: --fair waiters in arrival order
  std::string queue;
  // <prefix>{NAME}:alive: when each queue entry expires
  std::string alive;
  // <prefix>{NAME}:once: --once-per's last slot with a successful run
  std::string once;
  // <prefix>{NAME}: the start of the wake-up channels' names
  std::string channel_prefix;

  // Returns the keys every lock script takes, in order.
  std::vector<std::string>
  script_keys() const {
    return {lock, fence, queue, alive, once};
  }

  // Returns the channel on which a release wakes waiters outside the queue.
  std::string
  released_channel() const {
    return channel_prefix + "released";
  }

  // Returns the channel on which a release wakes the queue's head `token`.
  std::string
  wake_channel(const std::string& token) const {
    return channel_prefix + "wake:" + token;
  }
};

// Returns the keys of lock `name` under `prefix`.
LockKeys keys_for(std::string_view prefix, std::string_view name);

// Returns the NAME when the key is a lock key under prefix ("" otherwise).
std::string name_of_lock_key(std::string_view prefix, std::string_view key);

// Returns the SCAN MATCH pattern that finds the lock keys under `prefix`
// whose NAME matches the glob `match`.
std::string lock_key_pattern(std::string_view prefix,
                             std::string_view match = "*");

// Returns nothing when `name` is a valid lock name (non-empty, printable, at
// most 1024 bytes), else the reason.
Expected<std::string> validate_name(std::string_view name);

} // namespace rlock::lock
