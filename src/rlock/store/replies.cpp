#include <rlock/redis/failure.hpp>
#include <rlock/store/keys.hpp>
#include <rlock/store/replies.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/integer.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <map>

namespace rlock::lock {

namespace {

// The integer in a string the scripts wrote (a fence, a pid, a slot, a
// score) or TIME gave; anything else is not a reply of theirs.
std::int64_t
to_int(const std::string& text, const std::string& what) {
  const auto value = parse_integer(text);
  if (!value) {
    throw redis::Failure(redis::FailureKind::unexpected_reply,
                         what + ": unexpected reply (" + quote(text)
                             + " is not an integer)");
  }
  return *value;
}

// Throws unless `reply` is an array of at least `size` elements.
void
expect_array(const redis::Reply& reply,
             std::size_t size,
             const std::string& what) {
  if (!reply.is_array() || reply.elements.size() < size) {
    throw redis::Failure(redis::FailureKind::unexpected_reply,
                         what + ": unexpected reply");
  }
}

// The busy part of acquire's and peek's replies, from retry_ms on.
Busy
decode_busy(const redis::Reply& reply, const std::string& what) {
  const auto& fields = reply.elements;
  Busy busy;
  busy.retry_ms = redis::integer_of(fields[1], what);
  if (fields.size() >= 6) {
    busy.holder = redis::string_of(fields[2], what);
    busy.command = redis::string_of(fields[3], what);
    busy.place = redis::integer_of(fields[4], what);
    busy.holder_ttl_ms = redis::integer_of(fields[5], what);
  }
  if (fields.size() >= 7) {
    busy.held_ms = redis::integer_of(fields[6], what);
  }
  if (fields.size() >= 9) {
    busy.shared_holders = redis::integer_of(fields[7], what) == 1;
    busy.holders = redis::integer_of(fields[8], what);
  }
  return busy;
}

void
fill_field(HolderRecord& state,
           const std::string& field,
           const std::string& value,
           const std::string& what) {
  if (field == "token") {
    state.token = value;
  } else if (field == "fence") {
    state.fence = to_int(value, what);
  } else if (field == "host") {
    state.host = value;
  } else if (field == "pid") {
    state.pid = to_int(value, what);
  } else if (field == "user") {
    state.user = value;
  } else if (field == "command") {
    state.command = value;
  } else if (field == "acquired_ms") {
    state.acquired_ms = to_int(value, what);
  } else if (field == "renewals") {
    state.renewals = to_int(value, what);
  }
}

void
fill_holder_field(PermitHolder& holder,
                  const std::string& field,
                  const std::string& value,
                  const std::string& what) {
  if (field == "slot") {
    holder.slot = to_int(value, what);
  } else if (field != "token") { // the token is the one of its key
    fill_field(holder, field, value, what);
  }
}

// A semaphore's hash: 'limit', and '<token>:<field>' for each holder (see
// prelude.lua); `expiries` is its holders' zset, with scores.
void
fill_semaphore(LockState& state,
               const redis::Reply& hash,
               const redis::Reply& expiries,
               std::int64_t now_ms,
               const std::string& what) {
  std::map<std::string, std::string> fields;
  for (std::size_t i = 0; i + 1 < hash.elements.size(); i += 2) {
    fields[redis::string_of(hash.elements[i], what)] =
        redis::string_of(hash.elements[i + 1], what);
  }
  const auto limit = fields.find("limit");
  state.limit = limit == fields.end() ? 0 : to_int(limit->second, what);
  for (std::size_t i = 0; i + 1 < expiries.elements.size(); i += 2) {
    PermitHolder holder;
    holder.token = redis::string_of(expiries.elements[i], what);
    holder.ttl_ms =
        to_int(redis::string_of(expiries.elements[i + 1], what), what) - now_ms;
    if (holder.ttl_ms <= 0) {
      continue; // its lease ended; the next script drops it
    }
    const std::string prefix = holder.token + ":";
    for (const auto& [field, value] : fields) {
      if (field.starts_with(prefix)) {
        fill_holder_field(holder, field.substr(prefix.size()), value, what);
      }
    }
    state.holders.push_back(std::move(holder));
  }
  // A shared lock's holders have no slot: they stay in lease order.
  std::stable_sort(
      state.holders.begin(),
      state.holders.end(),
      [](const auto& a, const auto& b) { return a.slot < b.slot; });
  state.held = !state.holders.empty();
}

} // namespace

AcquireAttempt
decode_acquire(const redis::Reply& reply, const std::string& what) {
  redis::throw_if_error(reply, what);
  expect_array(reply, 2, what);
  const auto answer = redis::integer_of(reply.elements[0], what);
  if (answer == 1) {
    Granted granted;
    granted.fence = redis::integer_of(reply.elements[1], what);
    if (reply.elements.size() >= 3) {
      granted.slot = redis::integer_of(reply.elements[2], what);
    }
    return granted;
  }
  if (answer == 2) {
    Busy busy;
    busy.limit_conflict = redis::integer_of(reply.elements[1], what);
    return busy;
  }
  return decode_busy(reply, what);
}

PeekResult
decode_peek(const redis::Reply& reply, const std::string& what) {
  redis::throw_if_error(reply, what);
  expect_array(reply, 1, what);
  if (redis::integer_of(reply.elements[0], what) == 1) {
    return Free{};
  }
  if (reply.elements.size() >= 2) {
    return decode_busy(reply, what);
  }
  return Busy{};
}

Renewal
decode_renew(const redis::Reply& reply, const std::string& what) {
  redis::throw_if_error(reply, what);
  if (!reply.is_array() || reply.elements.size() != 2) {
    throw redis::Failure(redis::FailureKind::unexpected_reply,
                         what + ": unexpected reply");
  }
  Renewal renewal;
  renewal.held = redis::integer_of(reply.elements[0], what) == 1;
  renewal.remaining_before_ms = redis::integer_of(reply.elements[1], what);
  return renewal;
}

bool
decode_yes_no(const redis::Reply& reply, const std::string& what) {
  redis::throw_if_error(reply, what);
  return redis::integer_of(reply, what) == 1;
}

std::int64_t
decode_pttl(const redis::Reply& reply, const std::string& what) {
  redis::throw_if_error(reply, what);
  return redis::integer_of(reply, what);
}

std::optional<Duration>
decode_check(const redis::Reply& reply, const std::string& what) {
  const auto pttl = decode_pttl(reply, what);
  if (pttl == -2) {
    return std::nullopt;
  }
  return pttl < 0 ? Duration::max() : from_milliseconds(pttl);
}

std::optional<BrokenLock>
decode_force_release(const redis::Reply& reply, const std::string& what) {
  redis::throw_if_error(reply, what);
  if (!reply.is_array() || reply.elements.size() < 3) {
    return std::nullopt;
  }
  BrokenLock broken{redis::string_of(reply.elements[0], what),
                    redis::string_of(reply.elements[1], what),
                    redis::string_of(reply.elements[2], what)};
  if (reply.elements.size() >= 4) {
    broken.holders = redis::integer_of(reply.elements[3], what);
  }
  if (reply.elements.size() >= 5) {
    broken.shared = redis::integer_of(reply.elements[4], what) == 1;
  }
  return broken;
}

Slot
decode_slot(const redis::Reply& reply, const std::string& what) {
  redis::throw_if_error(reply, what);
  if (!reply.is_array() || reply.elements.size() != 3) {
    throw redis::Failure(redis::FailureKind::unexpected_reply,
                         what + ": unexpected reply");
  }
  return Slot{redis::integer_of(reply.elements[0], what),
              redis::integer_of(reply.elements[1], what) == 1,
              from_milliseconds(redis::integer_of(reply.elements[2], what))};
}

std::int64_t
decode_server_time(const redis::Reply& reply) {
  redis::throw_if_error(reply, "cannot read the server time");
  if (!reply.is_array() || reply.elements.size() != 2) {
    throw redis::Failure(redis::FailureKind::unexpected_reply,
                         "unexpected reply to TIME");
  }
  const std::int64_t seconds =
      to_int(redis::string_of(reply.elements[0], "TIME"), "TIME");
  const std::int64_t micros =
      to_int(redis::string_of(reply.elements[1], "TIME"), "TIME");
  std::int64_t ms = 0;
  if (__builtin_mul_overflow(seconds, 1000, &ms)
      || __builtin_add_overflow(ms, micros / 1000, &ms)) {
    throw redis::Failure(redis::FailureKind::unexpected_reply,
                         "unexpected reply to TIME");
  }
  return ms;
}

void
decode_lock_state(LockState& state,
                  const redis::Reply& hash,
                  const redis::Reply& pttl,
                  const redis::Reply& holders,
                  std::int64_t now_ms) {
  const std::string what = "cannot read lock " + printable(state.key);
  redis::throw_if_error(hash, what);
  redis::throw_if_error(pttl, what);
  redis::throw_if_error(holders, what);
  const auto ttl = redis::integer_of(pttl, what);
  state.held = ttl != -2 && hash.is_array() && !hash.elements.empty();
  if (!state.held) {
    return;
  }
  state.ttl_ms = ttl;
  if (holders.is_array() && !holders.elements.empty()) {
    fill_semaphore(state, hash, holders, now_ms, what);
    return;
  }
  for (std::size_t i = 0; i + 1 < hash.elements.size(); i += 2) {
    fill_field(state,
               redis::string_of(hash.elements[i], what),
               redis::string_of(hash.elements[i + 1], what),
               what);
  }
}

std::int64_t
decode_waiters(const redis::Reply& reply, const std::string& key) {
  redis::throw_if_error(reply, "cannot read the queue of " + printable(key));
  return redis::integer_of(reply, "ZCOUNT");
}

ScanPage
decode_scan(const redis::Reply& reply, const KeySpace& space) {
  redis::throw_if_error(reply, "cannot list locks");
  if (!reply.is_array() || reply.elements.size() != 2) {
    throw redis::Failure(redis::FailureKind::unexpected_reply,
                         "unexpected reply to SCAN");
  }
  ScanPage page;
  page.cursor = redis::string_of(reply.elements[0], "SCAN");
  for (const auto& key : reply.elements[1].elements) {
    auto name = name_of_lock_key(space, redis::string_of(key, "SCAN"));
    if (!name.empty()) {
      page.names.push_back(std::move(name));
    }
  }
  return page;
}

} // namespace rlock::lock
