#include <rlock/lock/timing.hpp>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using namespace rlock::lock;

TEST_CASE("make_timing derives the schedule from the TTL") {
  const auto timing = make_timing(30s, std::nullopt);
  REQUIRE(timing);
  const auto& t = timing.value();
  CHECK(t.renew_interval == 10s);
  CHECK(t.margin == 305ms);
  CHECK(t.kill_after == 5s);
  CHECK(t.retry_delay == 250ms);
}

TEST_CASE("the SIGKILL lands before the lease can expire on the server") {
  for (rlock::Duration ttl : {rlock::Duration(100ms),
                              rlock::Duration(1s),
                              rlock::Duration(30s),
                              rlock::Duration(5min),
                              rlock::Duration(1h)}) {
    INFO(ttl.count());
    const auto timing = make_timing(ttl, std::nullopt);
    REQUIRE(timing);
    const rlock::BootTime sent{1000s};
    const auto sigkill =
        timing.value().kill_deadline(sent) + timing.value().kill_after;
    // At least 1% of the TTL plus a few milliseconds before expiry.
    CHECK(sent + ttl - sigkill >= ttl / 100 + 5ms);
    // And after the first renewal had its chance.
    CHECK(timing.value().kill_deadline(sent)
          > sent + timing.value().renew_interval);
  }
}

TEST_CASE("default_kill_after scales with the TTL, at most 10s") {
  CHECK(default_kill_after(30s) == 5s);
  CHECK(default_kill_after(6s) == 1s);
  CHECK(default_kill_after(10min) == 10s);
}

TEST_CASE("make_timing refuses a kill-after that leaves no time to renew") {
  const auto timing = make_timing(30s, 25s);
  REQUIRE_FALSE(timing);
  CHECK_THAT(timing.error(), Catch::Contains("the kill-after 25s"));
  CHECK_THAT(timing.error(), Catch::Contains("must be under 14.695s"));
  CHECK(make_timing(30s, 14695ms));
  CHECK_FALSE(make_timing(30s, 14696ms));
  CHECK_FALSE(make_timing(3s, 1964ms));
  CHECK(make_timing(30s, 0s));
}

TEST_CASE("make_timing refuses a TTL too short to be safe") {
  const auto timing = make_timing(99ms, std::nullopt);
  REQUIRE_FALSE(timing);
  CHECK_THAT(timing.error(), Catch::Contains("the TTL 0.099s"));
  CHECK(make_timing(100ms, std::nullopt));
}

TEST_CASE("lease_cut_short: a lease as long as rlock counts on holds") {
  const auto timing = make_timing(30s, std::nullopt).value();
  // Renewed 10 s ago: at least 20 s - margin (305 ms) must be left.
  CHECK_FALSE(lease_cut_short(timing, 10s, 20'000));
  CHECK_FALSE(lease_cut_short(timing, 10s, 19'700));
  CHECK_FALSE(lease_cut_short(timing, 0s, 30'000));
  // No expiry at all is not shorter.
  CHECK_FALSE(lease_cut_short(timing, 10s, -1));
}

TEST_CASE("lease_cut_short: a lease shorter by more than the margin is lost") {
  const auto timing = make_timing(30s, std::nullopt).value();
  CHECK(lease_cut_short(timing, 10s, 19'690));
  // A 15 s forward step on the Redis host.
  CHECK(lease_cut_short(timing, 10s, 5'000));
  // `rlock extend -t 200ms` from inside the job, under the old code.
  CHECK(lease_cut_short(timing, 1s, 200));
  // Gone between the check of the token and the PTTL: not held.
  CHECK(lease_cut_short(timing, 1s, -2));
}
