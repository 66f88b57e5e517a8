#include <rlock/lock/restart_grace.hpp>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using namespace rlock;

TEST_CASE("uptime_of reads uptime_in_seconds from INFO server") {
  const std::string info = "# Server\r\nredis_version:7.0.15\r\n"
                           "uptime_in_seconds:42\r\nuptime_in_days:0\r\n";
  CHECK(lock::uptime_of(info) == 42);
  CHECK(lock::uptime_of("uptime_in_seconds:0") == 0);
  // Another field that ends the same way is not it.
  CHECK(lock::uptime_of("x_uptime_in_seconds:5\r\nuptime_in_seconds:7\r\n")
        == 7);
  CHECK_FALSE(lock::uptime_of("# Server\r\nredis_version:7.0.15\r\n"));
  CHECK_FALSE(lock::uptime_of("uptime_in_seconds:\r\n"));
  CHECK_FALSE(lock::uptime_of("uptime_in_seconds:-3\r\n"));
  CHECK_FALSE(lock::uptime_of("uptime_in_seconds:12x\r\n"));
  CHECK_FALSE(lock::uptime_of("uptime_in_seconds:99999999999999999999\r\n"));
}

TEST_CASE("latest_start: whole seconds may count almost one too many") {
  const BootTime received = 100s;
  CHECK(lock::latest_start(10, received) == 91s);
  CHECK(lock::latest_start(1, received) == 100s);
  CHECK(lock::latest_start(0, received) == 100s);
}

TEST_CASE("held_back: until the server has been up for the grace") {
  const BootTime started = 100s;
  const auto busy = lock::held_back(
      "127.0.0.1:7000", started, {30s, "--restart-grace"}, 103s);
  REQUIRE(busy);
  CHECK_FALSE(busy->acquired);
  CHECK(busy->retry_ms == 27'000);
  CHECK(busy->held_back
        == "the Redis server at 127.0.0.1:7000 started 3s ago; no lock is "
           "granted for another 27s (--restart-grace)");
  // The time left is rounded up in words, exact in retry_ms.
  const auto soon = lock::held_back("a:1", started, {30s}, 129s + 500ms);
  REQUIRE(soon);
  CHECK(soon->retry_ms == 500);
  CHECK_THAT(soon->held_back, Catch::Contains("for another 1s"));
  CHECK_FALSE(lock::held_back("a:1", started, {30s}, 130s));
  CHECK_FALSE(lock::held_back("a:1", started, {0s}, 100s));
}
