// --restart-grace against a real redis-server, started by
// tests/lib/with-redis.sh a moment ago: well within an hour's grace.
#include <rlock/lock/restart_grace.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/random.hpp>

#include <catch2/catch.hpp>

#include "server.hpp"
#include <cstdlib>

using namespace std::chrono_literals;
using namespace rlock;
using namespace rlock::testing;

namespace {

// An acquire behind the grace, undone by a release, as the waiter does it.
Seen
acquire(redis::Connection& c,
        const lock::LockKeys& keys,
        const std::string& token,
        Duration grace) {
  return seen(lock::attempt_after_grace(
      c,
      keys.name,
      {grace, "--restart-grace"},
      [&] { return lock::try_acquire(c, keys, token, 30s, k_test_holder); },
      [&] { lock::release(c, keys, token); }));
}

// How often the server ran `command`, from INFO commandstats.
long
calls(redis::Connection& c, const std::string& command) {
  const auto reply = c.command({"INFO", "commandstats"});
  const std::string& text = reply.text;
  const auto at = text.find("cmdstat_" + command + ":calls=");
  if (at == std::string::npos) {
    return 0;
  }
  return std::stol(text.substr(text.find('=', at) + 1));
}

bool
exists(redis::Connection& c, const std::string& key) {
  return c.command({"EXISTS", key}).integer == 1;
}

} // namespace

TEST_CASE("a fresh server: the first acquire, granted, is undone and busy") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("grace");
  // The first acquire after a restart finds no script cached: EVAL follows
  // EVALSHA, behind the INFO set aside.
  c.command({"SCRIPT", "FLUSH"});
  const auto attempt = acquire(c, keys, "t1", 1h);
  CHECK_FALSE(attempt.acquired);
  CHECK(attempt.retry_ms > 3'500'000);
  CHECK(attempt.retry_ms <= 3'600'000);
  CHECK_THAT(attempt.held_back,
             Catch::Contains("(--restart-grace 1h00m: a holder from before a "
                             "restart may still run)"));
  CHECK(c.server_started().has_value());
  CHECK_FALSE(exists(c, keys.lock));
}

TEST_CASE("the server's start is asked once per connection") {
  auto c = redis::Connection::open(test_endpoint(), {});
  auto probe = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("grace");
  CHECK_FALSE(acquire(c, keys, "t1", 1h).acquired);
  const long info = calls(probe, "info");
  const long evalsha = calls(probe, "evalsha");
  // Held back again: nothing is sent.
  CHECK_FALSE(acquire(c, keys, "t1", 1h).acquired);
  CHECK(calls(probe, "evalsha") == evalsha);
  // Past a grace of a millisecond: the acquire alone.
  CHECK(acquire(c, keys, "t1", 1ms).acquired);
  CHECK(calls(probe, "evalsha") == evalsha + 1);
  // Only probe's own: the first count and the three evalsha counts.
  CHECK(calls(probe, "info") == info + 4);
}

TEST_CASE("the first acquire asks INFO server and INFO replication; a "
          "master started empty is no copy and is held back") {
  auto c = redis::Connection::open(test_endpoint(), {});
  auto probe = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("grace");
  const long before = calls(probe, "info");
  const auto attempt = acquire(c, keys, "t1", 1h);
  CHECK_FALSE(attempt.acquired);
  CHECK_THAT(attempt.held_back,
             Catch::Contains("(--restart-grace 1h00m: a holder from before a "
                             "restart may still run)"));
  // The two sections, and probe's own count.
  CHECK(calls(probe, "info") == before + 3);
  const auto replication = probe.command({"INFO", "replication"});
  CHECK_FALSE(lock::holds_synced_copy(replication.text));
}

TEST_CASE("no grace: the acquire alone, no INFO") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("grace");
  CHECK(acquire(c, keys, "t1", 0s).acquired);
  CHECK_FALSE(c.server_started().has_value());
}

TEST_CASE("a user who may not run INFO: an error naming the remedy, no lock") {
  auto admin = redis::Connection::open(test_endpoint(), {});
  const std::string user = "noinfo" + random_token().substr(0, 6);
  admin.command(
      {"ACL", "SETUSER", user, "on", "nopass", "~*", "&*", "+@all", "-info"});
  const auto keys = fresh_keys("grace");
  try {
    auto c = redis::Connection::open(test_endpoint(user + ":x"), {});
    acquire(c, keys, "t1", 1h);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(),
               Catch::Contains("INFO refused: NOPERM")
                   && Catch::Contains("--restart-grace 0"));
  }
  CHECK_FALSE(exists(admin, keys.lock));
  admin.command({"ACL", "DELUSER", user});
}
