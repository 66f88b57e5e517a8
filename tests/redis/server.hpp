// What the tests against the real redis-server share: its address (passed
// by tests/lib/with-redis.sh in RLOCK_TEST_URL), a connection to it, fresh
// lock names and a holder record.
#pragma once

#include <rlock/lock/lease.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/store/keys.hpp>
#include <rlock/store/protocol.hpp>
#include <rlock/util/random.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <string>
#include <variant>

namespace rlock::testing {

// Returns the test server's endpoint; with a `login` ("user" or
// "user:password") in its URL, and on `db` when given.
inline redis::Endpoint
test_endpoint(const std::string& login = "", std::optional<int> db = {}) {
  const char* url = std::getenv("RLOCK_TEST_URL");
  if (url == nullptr) {
    FAIL("RLOCK_TEST_URL is not set: run through tests/lib/with-redis.sh");
  }
  std::string text = url;
  if (!login.empty()) {
    text.insert(text.find("//") + 2, login + "@");
  }
  auto endpoint = redis::parse_url(text).value();
  if (db) {
    endpoint.db = *db;
  }
  return endpoint;
}

inline redis::Connection
connect_to_test_server(std::optional<int> db = {}) {
  return redis::Connection::open(test_endpoint("", db), {});
}

// Returns the keys of a lock named `stem` and a random suffix under
// `prefix`, so that tests never see each other's keys.
inline lock::LockKeys
fresh_keys(const std::string& stem, const std::string& prefix = "test:") {
  return lock::keys_for(prefix, stem + "-" + random_token().substr(0, 8));
}

inline const lock::Holder k_test_holder{
    "test-host", 42, "tester", "make check"};

// An answer seen flat, as the tests read it: whether the lock was granted
// (or, for a look, found free), and the fields of both cases, those of the
// other case left at their defaults.
struct Seen : lock::Granted, lock::Busy {
  bool acquired = false;
};

inline Seen
seen(const lock::AcquireAttempt& attempt) {
  Seen flat;
  if (const auto* granted = std::get_if<lock::Granted>(&attempt)) {
    static_cast<lock::Granted&>(flat) = *granted;
    flat.acquired = true;
  } else {
    static_cast<lock::Busy&>(flat) = std::get<lock::Busy>(attempt);
  }
  return flat;
}

inline Seen
seen(const lock::PeekResult& look) {
  Seen flat;
  if (const auto* busy = std::get_if<lock::Busy>(&look)) {
    static_cast<lock::Busy&>(flat) = *busy;
  } else {
    flat.acquired = true;
  }
  return flat;
}

// One acquire attempt of the test holder: for a plain lock, a semaphore or
// a shared hold (`limit`), keeping its place as `entry` says.
inline Seen
take(redis::Connection& c,
     const lock::LockKeys& keys,
     const std::string& token,
     std::int64_t limit,
     const lock::WaiterEntry& entry = {},
     Duration ttl = std::chrono::seconds(30)) {
  return seen(
      lock::try_acquire(c, keys, token, ttl, k_test_holder, entry, limit));
}

} // namespace rlock::testing
