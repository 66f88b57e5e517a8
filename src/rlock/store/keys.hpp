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
  // <prefix>{NAME}:holders: a semaphore's holders, each token scored by the
  // end of its lease (server time, ms)
  std::string holders;
  // <prefix>{NAME}: the start of the wake-up list's, its passers' and the
  // release channel's names
  std::string wake_prefix;

  // Returns the keys every lock script takes, in order: a script touches no
  // other key.
  std::vector<std::string>
  script_keys() const {
    return {
        lock, fence, queue, alive, once, holders, wake_list(), wake_passed()};
  }

  // Returns the channel on which every release is announced (rlock wait).
  std::string
  released_channel() const {
    return wake_prefix + "released";
  }

  // Returns the list on which every waiter blocks (BLPOP) and onto which a
  // release pushes one wake-up: one waiter takes it, and passes it on when
  // it was the queue's head's.
  std::string
  wake_list() const {
    return wake_prefix + "wake";
  }

  // Returns the set of the waiters that passed the current wake-up on.
  std::string
  wake_passed() const {
    return wake_prefix + "wake:passed";
  }
};

// How lock names become keys: PREFIX{TAG}, where TAG is the name itself, or
// on Redis Cluster a tag that holds no brace (redis::cluster_safe_tag), so
// that a name such as "}x" or "a{b}" keeps all its keys in one slot.
struct KeySpace {
  std::string prefix;
  bool cluster = false;
};

// Returns the keys of lock `name` in `space`.
LockKeys keys_for(const KeySpace& space, std::string_view name);

// Returns the keys of lock `name` under `prefix` (one server's layout).
inline LockKeys
keys_for(std::string_view prefix, std::string_view name) {
  return keys_for(KeySpace{std::string(prefix)}, name);
}

// Returns the NAME when the key is a lock key in `space` ("" otherwise).
std::string name_of_lock_key(const KeySpace& space, std::string_view key);

// Returns the SCAN MATCH pattern that finds the lock keys in `space` whose
// NAME matches the glob `match`. On a Cluster an escaped tag is matched by
// "*" alone: a listing filters names again (name_matches).
std::string lock_key_pattern(const KeySpace& space,
                             std::string_view match = "*");

// True when `name` matches the glob `match` as SCAN MATCH does.
bool name_matches(std::string_view match, std::string_view name);

// Returns nothing when `name` is a valid lock name (non-empty, printable, at
// most 1024 bytes), else the reason.
Expected<std::string> validate_name(std::string_view name);

} // namespace rlock::lock
