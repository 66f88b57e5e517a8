// The strict-key check of the test build (RLOCK_STRICT_KEY_CHECK), against
// a real redis-server: a script fails on a key that is not in KEYS, as on
// Dragonfly or Kvrocks' strict mode, where Redis would let it through.
#include <rlock/redis/script.hpp>

#include <catch2/catch.hpp>

#include "server.hpp"
#include <fstream>
#include <sstream>

using namespace rlock;
using namespace rlock::testing;

namespace {

// The check's source, as the test build puts it in front of every script.
std::string
strict_key_check() {
  std::ifstream file(RLOCK_SCRIPTS_DIR "/checks/strict_keys.lua");
  REQUIRE(file);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// Runs `body` behind the check with `keys` (EVAL), and returns the reply.
redis::Reply
eval_checked(redis::Connection& c,
             const std::string& body,
             const std::vector<std::string>& keys) {
  std::vector<std::string> command{
      "EVAL", strict_key_check() + body, std::to_string(keys.size())};
  command.insert(command.end(), keys.begin(), keys.end());
  return c.command(command);
}

} // namespace

TEST_CASE("the test build's scripts check their keys") {
  REQUIRE(redis::k_scripts_check_keys);
  const auto check = strict_key_check();
  for (const auto* script : {&redis::k_acquire_script,
                             &redis::k_release_script,
                             &redis::k_leave_script,
                             &redis::k_force_release_script}) {
    INFO(script->name);
    CHECK(script->source.starts_with(check));
  }
}

TEST_CASE("the strict-key check refuses a key not in KEYS") {
  auto c = redis::Connection::open(test_endpoint(), {});
  const auto keys = fresh_keys("strict");
  const std::vector<std::string> declared{keys.lock, keys.wake_list()};
  // Declared keys, and channels (not keys), go through.
  CHECK(
      eval_checked(c, "return redis.call('EXISTS', KEYS[1], KEYS[2])", declared)
          .integer
      == 0);
  CHECK_FALSE(eval_checked(c, "return redis.pcall('LLEN', KEYS[2])", declared)
                  .is_error());
  CHECK_FALSE(eval_checked(c,
                           "return redis.call('PUBLISH', KEYS[1] .. "
                           "':released', 'free')",
                           declared)
                  .is_error());
  // A key built from KEYS[1], through call and through pcall alike, and an
  // undeclared key among declared ones.
  for (const char* body :
       {"return redis.call('LLEN', KEYS[1] .. ':wake:token')",
        "return redis.pcall('RPUSH', KEYS[1] .. ':wake:token', 'free')",
        "return redis.call('DEL', KEYS[2], KEYS[1] .. ':other')"}) {
    INFO(body);
    const auto reply = eval_checked(c, body, declared);
    REQUIRE(reply.is_error());
    CHECK_THAT(reply.text, Catch::Contains("not in KEYS"));
  }
  CHECK(c.command({"EXISTS", keys.lock + ":wake:token"}).integer == 0);
  // A command the check does not know is refused until classified.
  const auto unknown =
      eval_checked(c, "return redis.call('LINDEX', KEYS[2], 0)", declared);
  REQUIRE(unknown.is_error());
  CHECK_THAT(unknown.text, Catch::Contains("not classified"));
}
