#include <rlock/lock/status.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/exit_codes.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <charconv>

namespace rlock::lock {

namespace {

// Keys read per pipeline round trip.
constexpr std::size_t k_batch = 500;

std::int64_t
to_int(const std::string& text) {
  std::int64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

void
fill_field(LockState& state,
           const std::string& field,
           const std::string& value) {
  if (field == "token") {
    state.token = value;
  } else if (field == "fence") {
    state.fence = to_int(value);
  } else if (field == "host") {
    state.host = value;
  } else if (field == "pid") {
    state.pid = to_int(value);
  } else if (field == "user") {
    state.user = value;
  } else if (field == "command") {
    state.command = value;
  } else if (field == "acquired_ms") {
    state.acquired_ms = to_int(value);
  } else if (field == "renewals") {
    state.renewals = to_int(value);
  }
}

// Fills `state` from HGETALL and PTTL. A key that is not a lock (another
// program's, under our prefix) is an error when asked for by name, and
// skipped with a warning in a listing.
void
read_hash(LockState& state,
          const redis::Reply& hash,
          const redis::Reply& pttl,
          bool listing) {
  const std::string what = "cannot read lock " + state.key;
  if (listing && hash->type == REDIS_REPLY_ERROR) {
    log::warning("skipping " + quote(state.key) + ": not a lock ("
                 + printable(std::string(hash->str, hash->len)) + ")");
    state.held = false;
    return;
  }
  redis::throw_if_error(hash, what);
  redis::throw_if_error(pttl, what);
  const auto ttl = redis::integer_of(pttl.get(), what);
  state.held =
      ttl != -2 && hash->type == REDIS_REPLY_ARRAY && hash->elements > 0;
  if (!state.held) {
    return;
  }
  state.ttl_ms = ttl;
  for (std::size_t i = 0; i + 1 < hash->elements; i += 2) {
    fill_field(state,
               redis::string_of(hash->element[i], what),
               redis::string_of(hash->element[i + 1], what));
  }
}

std::int64_t
server_time_ms(redis::Connection& connection) {
  const auto reply = connection.command({"TIME"});
  redis::throw_if_error(reply, "cannot read the server time");
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
    throw Error(exit_code::k_unavailable, "unexpected reply to TIME");
  }
  const std::int64_t seconds =
      to_int(redis::string_of(reply->element[0], "TIME"));
  const std::int64_t micros =
      to_int(redis::string_of(reply->element[1], "TIME"));
  std::int64_t ms = 0;
  if (__builtin_mul_overflow(seconds, 1000, &ms)
      || __builtin_add_overflow(ms, micros / 1000, &ms)) {
    throw Error(exit_code::k_unavailable, "unexpected reply to TIME");
  }
  return ms;
}

// Reads `states` (names and keys set) in pipelined batches.
void
read_states(redis::Connection& connection,
            std::string_view prefix,
            std::int64_t now_ms,
            std::vector<LockState>& states,
            bool listing) {
  const std::string live_from = "(" + std::to_string(now_ms);
  for (std::size_t start = 0; start < states.size(); start += k_batch) {
    const auto end = std::min(states.size(), start + k_batch);
    for (auto i = start; i < end; ++i) {
      connection.append({"HGETALL", states[i].key});
      connection.append({"PTTL", states[i].key});
      connection.append({"ZCOUNT",
                         keys_for(prefix, states[i].name).alive,
                         live_from,
                         "+inf"});
    }
    for (auto i = start; i < end; ++i) {
      auto hash = connection.read_reply();
      auto pttl = connection.read_reply();
      auto waiters = connection.read_reply();
      read_hash(states[i], hash, pttl, listing);
      redis::throw_if_error(waiters,
                            "cannot read the queue of " + states[i].key);
      states[i].waiters = redis::integer_of(waiters.get(), "ZCOUNT");
    }
  }
}

std::vector<std::string>
scan_lock_names(redis::Connection& connection,
                std::string_view prefix,
                std::string_view match) {
  std::vector<std::string> names;
  std::string cursor = "0";
  do {
    const auto reply = connection.command({"SCAN",
                                           cursor,
                                           "MATCH",
                                           lock_key_pattern(prefix, match),
                                           "COUNT",
                                           "1000"});
    redis::throw_if_error(reply, "cannot list locks");
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
      throw Error(exit_code::k_unavailable, "unexpected reply to SCAN");
    }
    cursor = redis::string_of(reply->element[0], "SCAN");
    const auto* keys = reply->element[1];
    for (std::size_t i = 0; i < keys->elements; ++i) {
      auto name =
          name_of_lock_key(prefix, redis::string_of(keys->element[i], "SCAN"));
      if (!name.empty()) {
        names.push_back(std::move(name));
      }
    }
  } while (cursor != "0");
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Reads the locks `names`; in a listing, foreign keys are skipped.
StatusSnapshot
read_some(redis::Connection& connection,
          std::string_view prefix,
          const std::vector<std::string>& names,
          bool listing) {
  StatusSnapshot snapshot;
  snapshot.server_now_ms = server_time_ms(connection);
  for (const auto& name : names) {
    LockState state;
    state.name = name;
    state.key = keys_for(prefix, name).lock;
    snapshot.locks.push_back(std::move(state));
  }
  read_states(
      connection, prefix, snapshot.server_now_ms, snapshot.locks, listing);
  return snapshot;
}

} // namespace

StatusSnapshot
read_locks(redis::Connection& connection,
           std::string_view prefix,
           const std::vector<std::string>& names) {
  return read_some(connection, prefix, names, false);
}

StatusSnapshot
list_locks(redis::Connection& connection,
           std::string_view prefix,
           std::string_view match) {
  auto snapshot = read_some(
      connection, prefix, scan_lock_names(connection, prefix, match), true);
  // A lock may have been released between SCAN and the read.
  std::erase_if(snapshot.locks,
                [](const LockState& state) { return !state.held; });
  return snapshot;
}

} // namespace rlock::lock
