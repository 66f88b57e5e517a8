#include <rlock/redis/cluster.hpp>
#include <rlock/store/keys.hpp>

#include <catch2/catch.hpp>

using namespace rlock::lock;

TEST_CASE("keys_for shares one hash tag per lock") {
  const auto keys = keys_for("rlock:", "deploy prod");
  CHECK(keys.lock == "rlock:{deploy prod}");
  CHECK(keys.fence == "rlock:{deploy prod}:fence");
  CHECK(keys.name == "deploy prod");
}

TEST_CASE("name_of_lock_key inverts keys_for and skips other keys") {
  const KeySpace space{"rlock:"};
  CHECK(name_of_lock_key(space, "rlock:{a}") == "a");
  CHECK(name_of_lock_key(space, "rlock:{a}}:fence}") == "a}}:fence");
  CHECK(name_of_lock_key(space, "rlock:{a}:fence").empty());
  CHECK(name_of_lock_key(space, "other:{a}").empty());
  CHECK(name_of_lock_key(space, "rlock:{}").empty());
}

TEST_CASE("lock_key_pattern escapes glob characters of the prefix") {
  CHECK(lock_key_pattern(KeySpace{"rlock:"}) == "rlock:{*}");
  CHECK(lock_key_pattern(KeySpace{"rlock:"}, "db-*") == "rlock:{db-*}");
  CHECK(lock_key_pattern(KeySpace{"a*b?[c]:"}) == "a\\*b\\?\\[c\\]:{*}");
}

TEST_CASE("on a Cluster, a name's keys share one slot, braces or not") {
  const KeySpace space{"rlock:", true};
  for (const std::string name : {"deploy", "}lead", "a{b}c", "{", "}", "{}"}) {
    const auto keys = keys_for(space, name);
    CAPTURE(name, keys.lock);
    const int slot = rlock::redis::key_slot(keys.lock);
    for (const auto& key : keys.script_keys()) {
      CHECK(rlock::redis::key_slot(key) == slot);
    }
    CHECK(rlock::redis::key_slot(keys.released_channel()) == slot);
    CHECK(name_of_lock_key(space, keys.lock) == name);
  }
  // A name without braces keeps the one-server layout.
  CHECK(keys_for(space, "deploy").lock == "rlock:{deploy}");
  // One server's layout splits a name that starts with '}' over slots.
  const auto plain = keys_for("rlock:", "}lead");
  CHECK(rlock::redis::key_slot(plain.lock)
        != rlock::redis::key_slot(plain.fence));
}

TEST_CASE("on a Cluster, SCAN matches every lock key and names are filtered") {
  const KeySpace space{"rlock:", true};
  CHECK(lock_key_pattern(space, "db-*") == "rlock:{*}");
  CHECK(name_matches("db-*", "db-{x}"));
  CHECK(name_matches("*", "}lead"));
  CHECK_FALSE(name_matches("db-*", "web"));
  CHECK(name_matches("a?c", "abc"));
}

TEST_CASE("validate_name accepts printable names up to 1024 bytes") {
  CHECK(validate_name("nightly-report"));
  CHECK(validate_name("with spaces and ünïcode ✓"));
  CHECK(validate_name("status"));
  CHECK(validate_name(std::string(1024, 'x')));
}

TEST_CASE("validate_name rejects empty, long and control characters") {
  CHECK_FALSE(validate_name(""));
  CHECK_FALSE(validate_name(std::string(1025, 'x')));
  CHECK_FALSE(validate_name("a\nb"));
  CHECK_FALSE(validate_name("a\tb"));
  CHECK_FALSE(validate_name(std::string("a\x7f")));
  CHECK_THAT(validate_name("a\nb").error(), Catch::Contains("'a\\nb'"));
}
