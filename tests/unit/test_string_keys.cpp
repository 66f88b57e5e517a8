#include <rlock/redis/cluster.hpp>
#include <rlock/store/string_keys.hpp>

#include <catch2/catch.hpp>

using namespace rlock::lock;

TEST_CASE("string style: the key is NAME as given, rlock's keys beside it") {
  const Compat string{LockStyle::string, "default"};
  const auto keys = string_keys_for(string, "rlock:", "job");
  CHECK(keys.lock == "job");
  CHECK(keys.wake == "rlock:{job}:wake");
  CHECK(keys.fence == "rlock:{job}:fence");
}

TEST_CASE("shedlock style: job-lock:ENV:NAME") {
  const Compat shed{LockStyle::shedlock, "prod"};
  CHECK(string_keys_for(shed, "rlock:", "report").lock
        == "job-lock:prod:report");
}

TEST_CASE("rlock's keys share the foreign key's Cluster slot") {
  const Compat string{LockStyle::string, "default"};
  const Compat shed{LockStyle::shedlock, "default"};
  // A NAME hashed whole that holds a "}" cannot be a tag: a brace-free tag
  // of its slot stands for it.
  for (const char* name :
       {"job", "a{tag}b", "{x}", "a{b", "a b", "x}y", "a{}b", "}{", "{}"}) {
    INFO(name);
    const auto keys = string_keys_for(string, "rlock:", name);
    CHECK(rlock::redis::key_slot(keys.wake) == rlock::redis::key_slot(name));
    CHECK(rlock::redis::key_slot(keys.fence) == rlock::redis::key_slot(name));
    const auto shed_keys = string_keys_for(shed, "rlock:", name);
    CHECK(rlock::redis::key_slot(shed_keys.fence)
          == rlock::redis::key_slot(shed_keys.lock));
  }
}

TEST_CASE("side_key_stem: the key's tag, the key as the tag, or its slot's") {
  CHECK(side_key_stem("rlock:", "job") == "rlock:{job}");
  CHECK(side_key_stem("rlock:", "a{t}b") == "rlock:a{t}b");
  const auto stem = side_key_stem("rlock:", "x}y");
  CHECK(stem.starts_with("rlock:{slot-"));
  CHECK(rlock::redis::key_slot(stem) == rlock::redis::key_slot("x}y"));
}

TEST_CASE("ShedLock's value: ADDED:<ISO instant>@<host>") {
  CHECK(shedlock_value(0, "h") == "ADDED:1970-01-01T00:00:00Z@h");
  CHECK(shedlock_value(1'700'000'000'123, "web-1")
        == "ADDED:2023-11-14T22:13:20.123Z@web-1");
}
