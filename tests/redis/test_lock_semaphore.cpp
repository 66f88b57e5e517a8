// Semaphores (--limit N) in the lock scripts, against a real redis-server
// started by tests/lib/with-redis.sh (RLOCK_TEST_URL).
#include <rlock/redis/url.hpp>
#include <rlock/store/protocol.hpp>
#include <rlock/store/status.hpp>
#include <rlock/util/random.hpp>

#include <catch2/catch.hpp>

#include "server.hpp"
#include <cstdlib>
#include <thread>

using namespace std::chrono_literals;
using namespace rlock;
using namespace rlock::testing;

namespace {} // namespace

TEST_CASE("semaphore: N permits, the lowest free slot, increasing fences") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("sem");
  const auto a = take(c, keys, "a", 3);
  const auto b = take(c, keys, "b", 3);
  const auto d = take(c, keys, "d", 3);
  REQUIRE((a.acquired && b.acquired && d.acquired));
  CHECK(a.slot == 0);
  CHECK(b.slot == 1);
  CHECK(d.slot == 2);
  CHECK(a.fence < b.fence);
  CHECK(b.fence < d.fence);
  const auto full = take(c, keys, "e", 3);
  CHECK_FALSE(full.acquired);
  CHECK(full.holder == "tester@test-host:42");
  CHECK(full.retry_ms > 29'000);
  // b gives its permit back; the next holder gets slot 1.
  CHECK(lock::release(c, keys, "b"));
  CHECK_FALSE(lock::release(c, keys, "b"));
  const auto e = take(c, keys, "e", 3);
  REQUIRE(e.acquired);
  CHECK(e.slot == 1);
  // An attempt whose reply was lost, made again, keeps its permit.
  const auto again = take(c, keys, "e", 3);
  CHECK(again.acquired);
  CHECK(again.slot == 1);
  CHECK(again.fence == e.fence);
  CHECK(c.command({"ZCARD", keys.holders}).integer == 3);
}

TEST_CASE("semaphore: the limit is part of the lock") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("sem");
  REQUIRE(take(c, keys, "a", 3).acquired);
  const auto other = take(c, keys, "b", 2);
  CHECK_FALSE(other.acquired);
  CHECK(other.limit_conflict == 3);
  const auto plain = take(c, keys, "b", 0);
  CHECK(plain.limit_conflict == 3);
  REQUIRE(lock::release(c, keys, "a"));
  REQUIRE(take(c, keys, "p", 0).acquired);
  CHECK(take(c, keys, "b", 2).limit_conflict == 0);
  REQUIRE(lock::release(c, keys, "p"));
  CHECK(take(c, keys, "b", 2).acquired);
}

TEST_CASE("semaphore: a lease that ends gives its permit and slot back") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("sem");
  REQUIRE(take(c, keys, "short", 2, {}, 200ms).acquired);
  REQUIRE(take(c, keys, "long", 2, {}, 30s).acquired);
  CHECK_FALSE(take(c, keys, "next", 2).acquired);
  // Renewed, it outlives its first lease; then it stops renewing.
  CHECK(lock::renew(c, keys, "short", 400ms).held);
  std::this_thread::sleep_for(250ms);
  CHECK(lock::check(c, keys, "short").has_value());
  std::this_thread::sleep_for(250ms);
  CHECK_FALSE(lock::check(c, keys, "short").has_value());
  CHECK_FALSE(lock::renew(c, keys, "short", 1s).held);
  const auto next = take(c, keys, "next", 2);
  REQUIRE(next.acquired);
  CHECK(next.slot == 0);
  // The dead holder is gone from both keys once a script wrote.
  CHECK(c.command({"ZSCORE", keys.holders, "short"}).is_nil());
  CHECK(c.command({"HEXISTS", keys.lock, "short:slot"}).integer == 0);
}

TEST_CASE("semaphore: its keys expire with the last lease") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("sem");
  REQUIRE(take(c, keys, "a", 2, {}, 300ms).acquired);
  REQUIRE(take(c, keys, "b", 2, {}, 150ms).acquired);
  CHECK(c.command({"PTTL", keys.lock}).integer > 200);
  CHECK(c.command({"PTTL", keys.holders}).integer > 200);
  std::this_thread::sleep_for(400ms);
  CHECK(c.command({"EXISTS", keys.lock, keys.holders}).integer == 0);
}

TEST_CASE("semaphore: status lists the live holders by slot") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("sem");
  REQUIRE(take(c, keys, "a", 3).acquired);
  REQUIRE(take(c, keys, "b", 3).acquired);
  const auto snapshot =
      lock::read_locks(c, lock::KeySpace{"test:"}, {keys.name});
  REQUIRE(snapshot.locks.size() == 1);
  const auto& state = snapshot.locks.front();
  CHECK(state.held);
  CHECK(state.limit == 3);
  REQUIRE(state.holders.size() == 2);
  CHECK(state.holders[0].token == "a");
  CHECK(state.holders[0].slot == 0);
  CHECK(state.holders[1].token == "b");
  CHECK(state.holders[1].user == "tester");
  CHECK(state.holders[1].ttl_ms > 29'000);
}
