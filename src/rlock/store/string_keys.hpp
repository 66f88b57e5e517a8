#pragma once

#include <rlock/lock/deployment.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace rlock::lock {

// The keys of a lock kept as one plain string (--compat string, shedlock):
// the application's key, and the keys of rlock's own beside it, in the same
// Cluster slot (their hash tag is the key's own tag, or the whole key).
struct StringKeys {
  std::string name;  // the lock's NAME
  std::string lock;  // the application's key: NAME, or job-lock:ENV:NAME
  std::string wake;  // rlock's wake-up list: a release pushes onto it
  std::string fence; // rlock's fence counter ($RLOCK_FENCE)
};

// Returns the keys of `name` for `compat`'s style (string or shedlock),
// rlock's own under `prefix`.
StringKeys string_keys_for(const Compat& compat,
                           std::string_view prefix,
                           std::string_view name);

// Returns the start of a key of rlock's own beside an application's `key`,
// under `prefix` (which holds no brace on a Cluster), in `key`'s Cluster
// slot: PREFIX then `key` when `key` has a hash tag, else PREFIX{key}, or,
// for a key hashed whole that holds a '}' (which no tag can hold),
// PREFIX{slot-N} with a brace-free tag of the same slot.
std::string side_key_stem(std::string_view prefix, std::string_view key);

// Returns the value of a ShedLock lock taken now by `host` (ShedLock's
// "ADDED:<ISO-8601 instant>@<host>"), with the instant `epoch_ms`.
std::string shedlock_value(std::int64_t epoch_ms, std::string_view host);

} // namespace rlock::lock
