#include <rlock/lock/keys.hpp>

#include <catch2/catch.hpp>

using namespace rlock::lock;

TEST_CASE("keys_for shares one hash tag per lock") {
  const auto keys = keys_for("rlock:", "deploy prod");
  CHECK(keys.lock == "rlock:{deploy prod}");
  CHECK(keys.fence == "rlock:{deploy prod}:fence");
  CHECK(keys.name == "deploy prod");
}

TEST_CASE("name_of_lock_key inverts keys_for and skips other keys") {
  CHECK(name_of_lock_key("rlock:", "rlock:{a}") == "a");
  CHECK(name_of_lock_key("rlock:", "rlock:{a}}:fence}") == "a}}:fence");
  CHECK(name_of_lock_key("rlock:", "rlock:{a}:fence").empty());
  CHECK(name_of_lock_key("rlock:", "other:{a}").empty());
  CHECK(name_of_lock_key("rlock:", "rlock:{}").empty());
}

TEST_CASE("lock_key_pattern escapes glob characters of the prefix") {
  CHECK(lock_key_pattern("rlock:") == "rlock:{*}");
  CHECK(lock_key_pattern("a*b?[c]:") == "a\\*b\\?\\[c\\]:{*}");
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
