// The keys of a lock kept as one plain string (--compat string, shedlock)
// and rlock's keys beside it (docs/key-layout.md).

#include <rlock/redis/cluster.hpp>
#include <rlock/store/string_keys.hpp>

#include <cstdio>
#include <ctime>

namespace rlock::lock {

namespace {

// True when `name` has a Redis Cluster hash tag: a '{' with a later '}' and
// something between them.
bool
has_hash_tag(std::string_view name) {
  const auto open = name.find('{');
  if (open == std::string_view::npos) {
    return false;
  }
  const auto close = name.find('}', open + 1);
  return close != std::string_view::npos && close > open + 1;
}

} // namespace

StringKeys
string_keys_for(const Compat& compat,
                std::string_view prefix,
                std::string_view name) {
  StringKeys keys;
  keys.name = std::string(name);
  keys.lock = compat.style == LockStyle::shedlock
                  ? "job-lock:" + compat.shedlock_env + ":" + keys.name
                  : keys.name;
  const std::string side = side_key_stem(prefix, keys.lock);
  keys.wake = side + ":wake";
  keys.fence = side + ":fence";
  return keys;
}

std::string
side_key_stem(std::string_view prefix, std::string_view key) {
  // The key's own hash tag: PREFIX then the key keeps the key's first '{'.
  if (has_hash_tag(key)) {
    return std::string(prefix) + std::string(key);
  }
  // The whole key as the tag, unless a '}' in it would end the tag early.
  if (key.find('}') == std::string_view::npos) {
    return std::string(prefix) + "{" + std::string(key) + "}";
  }
  const int slot = redis::key_slot(key);
  for (unsigned n = 0;; ++n) {
    const std::string tag = "slot-" + std::to_string(n);
    if (redis::key_slot(tag) == slot) {
      return std::string(prefix) + "{" + tag + "}";
    }
  }
}

std::string
shedlock_value(std::int64_t epoch_ms, std::string_view host) {
  // ShedLock writes Instant.toString(): ISO-8601 in UTC, milliseconds
  // shown when not zero.
  const std::time_t seconds = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::string value = "ADDED:" + std::string(stamp);
  if (const auto ms = epoch_ms % 1000; ms != 0) {
    char fraction[8];
    std::snprintf(fraction, sizeof fraction, ".%03d", static_cast<int>(ms));
    value += fraction;
  }
  return value + "Z@" + std::string(host);
}

} // namespace rlock::lock
