#include <rlock/redis/failure.hpp>
#include <rlock/store/replies.hpp>
#include <rlock/store/status.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>

namespace rlock::lock {

namespace {

// Keys read per pipeline round trip.
constexpr std::size_t k_batch = 500;

// Fills `state` from HGETALL and PTTL. A key that is not a lock (another
// program's, under our prefix: WRONGTYPE) is an error when asked for by
// name, and skipped with a warning in a listing; any other error reply
// (CLUSTERDOWN, MOVED, LOADING...) fails the read.
void
read_hash(LockState& state,
          const redis::Reply& hash,
          const redis::Reply& pttl,
          const redis::Reply& holders,
          std::int64_t now_ms,
          bool listing) {
  if (listing && hash.is_error()
      && redis::server_code_of(hash.text) == "WRONGTYPE") {
    log::warning("skipping " + quote(state.key) + ": not a lock ("
                 + printable(hash.text) + ")");
    state.held = false;
    return;
  }
  decode_lock_state(state, hash, pttl, holders, now_ms);
}

std::int64_t
server_time_ms(redis::Connection& connection) {
  return decode_server_time(connection.command({"TIME"}));
}

// Reads `states` (names and keys set) in pipelined batches.
void
read_states(redis::Connection& connection,
            const KeySpace& space,
            std::int64_t now_ms,
            std::vector<LockState>& states,
            bool listing) {
  const std::string live_from = "(" + std::to_string(now_ms);
  for (std::size_t start = 0; start < states.size(); start += k_batch) {
    const auto end = std::min(states.size(), start + k_batch);
    for (auto i = start; i < end; ++i) {
      connection.append({"HGETALL", states[i].key});
      connection.append({"PTTL", states[i].key});
      const auto keys = keys_for(space, states[i].name);
      connection.append({"ZCOUNT", keys.alive, live_from, "+inf"});
      connection.append({"ZRANGE", keys.holders, "0", "-1", "WITHSCORES"});
    }
    for (auto i = start; i < end; ++i) {
      auto hash = connection.read_reply();
      auto pttl = connection.read_reply();
      auto waiters = connection.read_reply();
      auto holders = connection.read_reply();
      read_hash(states[i], hash, pttl, holders, now_ms, listing);
      states[i].waiters = decode_waiters(waiters, states[i].key);
    }
  }
}

std::vector<std::string>
scan_lock_names(redis::Connection& connection,
                const KeySpace& space,
                std::string_view match) {
  std::vector<std::string> names;
  std::string cursor = "0";
  do {
    const auto reply = connection.command({"SCAN",
                                           cursor,
                                           "MATCH",
                                           lock_key_pattern(space, match),
                                           "COUNT",
                                           "1000"});
    auto page = decode_scan(reply, space);
    cursor = std::move(page.cursor);
    for (auto& name : page.names) {
      if (name_matches(match, name)) {
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
          const KeySpace& space,
          const std::vector<std::string>& names,
          bool listing) {
  StatusSnapshot snapshot;
  snapshot.server_now_ms = server_time_ms(connection);
  for (const auto& name : names) {
    LockState state;
    state.name = name;
    state.key = keys_for(space, name).lock;
    snapshot.locks.push_back(std::move(state));
  }
  read_states(
      connection, space, snapshot.server_now_ms, snapshot.locks, listing);
  return snapshot;
}

} // namespace

StatusSnapshot
read_locks(redis::Connection& connection,
           const KeySpace& space,
           const std::vector<std::string>& names) {
  return read_some(connection, space, names, false);
}

StatusSnapshot
list_locks(redis::Connection& connection,
           const KeySpace& space,
           std::string_view match) {
  auto snapshot = read_some(
      connection, space, scan_lock_names(connection, space, match), true);
  // A lock may have been released between SCAN and the read.
  std::erase_if(snapshot.locks,
                [](const LockState& state) { return !state.held; });
  return snapshot;
}

} // namespace rlock::lock
