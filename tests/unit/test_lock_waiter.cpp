#include <rlock/lock/waiter.hpp>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using rlock::Duration;
using rlock::lock::safety_span;

TEST_CASE("safety_span is a third of the holder's TTL, within 50ms..10s") {
  CHECK(safety_span(9'000, 30s) == 3s);
  CHECK(safety_span(150, 30s) == 50ms);
  CHECK(safety_span(3'600'000, 30s) == 10s);
}

TEST_CASE("safety_span falls back on the waiter's own TTL") {
  CHECK(safety_span(0, 3s) == 1s);
  CHECK(safety_span(-1, 30s) == 10s);
}
