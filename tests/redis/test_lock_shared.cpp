// Shared locks (--shared) in the lock scripts, against a real redis-server:
// plain and shared holders take turns, writers first, the --fair queue.
#include <rlock/store/protocol.hpp>
#include <rlock/store/status.hpp>

#include <catch2/catch.hpp>

#include "server.hpp"
#include <thread>

using namespace std::chrono_literals;
using namespace rlock;
using namespace rlock::testing;

namespace {

Seen
shared(redis::Connection& c,
       const lock::LockKeys& keys,
       const std::string& token,
       Duration queue_ttl = Duration::zero()) {
  return take(c, keys, token, lock::k_shared_limit, {queue_ttl, {}});
}

// A plain waiter outside --fair, as the waiter asks: with a place in the
// queue should shared holders hold the lock.
Seen
writer(redis::Connection& c,
       const lock::LockKeys& keys,
       const std::string& token,
       Duration place_ttl = 10s) {
  return take(c, keys, token, 0, {{}, place_ttl});
}

std::int64_t
queued(redis::Connection& c, const lock::LockKeys& keys) {
  return c.command({"ZCARD", keys.queue}).integer;
}

} // namespace

TEST_CASE("shared holders hold together; a plain one waits for them all") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("shared");
  const auto a = shared(c, keys, "a");
  const auto b = shared(c, keys, "b");
  REQUIRE((a.acquired && b.acquired));
  CHECK(a.slot == -1);
  CHECK(a.fence < b.fence);
  const auto plain = take(c, keys, "w", 0);
  CHECK_FALSE(plain.acquired);
  CHECK_FALSE(plain.limit_conflict);
  CHECK(plain.shared_holders);
  CHECK(plain.holders == 2);
  CHECK(plain.holder == "tester@test-host:42");
  CHECK(plain.retry_ms > 0);
  REQUIRE(lock::release(c, keys, "a"));
  CHECK_FALSE(take(c, keys, "w", 0).acquired);
  REQUIRE(lock::release(c, keys, "b"));
  const auto now_plain = take(c, keys, "w", 0);
  REQUIRE(now_plain.acquired);
  CHECK(now_plain.fence > b.fence);
  // And the other way round: shared waits for the plain holder.
  const auto blocked = shared(c, keys, "c");
  CHECK_FALSE(blocked.acquired);
  CHECK_FALSE(blocked.limit_conflict);
  CHECK_FALSE(blocked.shared_holders);
  CHECK(blocked.holders == 1);
  REQUIRE(lock::release(c, keys, "w"));
  CHECK(shared(c, keys, "c").acquired);
}

TEST_CASE("a plain waiter behind shared holders takes a place in the queue: "
          "no shared newcomer passes it") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("shared");
  REQUIRE(shared(c, keys, "r1").acquired);
  const auto w = writer(c, keys, "w");
  CHECK_FALSE(w.acquired);
  CHECK(w.place == 1);
  const auto late = shared(c, keys, "r2");
  CHECK_FALSE(late.acquired);
  // Whom it waits for: the shared holder, behind the queue's head.
  CHECK(late.holder == "tester@test-host:42");
  CHECK(late.shared_holders);
  CHECK(late.retry_ms > 0);
  CHECK(late.retry_ms <= 10'000);
  // Nor a --fair one: it queues behind the writer.
  CHECK(shared(c, keys, "f3", 10s).place == 2);
  CHECK_FALSE(shared(c, keys, "f3", 10s).acquired);
  REQUIRE(lock::release(c, keys, "r1"));
  REQUIRE(writer(c, keys, "w").acquired);
  CHECK(queued(c, keys) == 1);
  REQUIRE(lock::release(c, keys, "w"));
  CHECK(shared(c, keys, "f3", 10s).acquired);
  CHECK(shared(c, keys, "r2").acquired);
}

TEST_CASE("no place for -n (no lifetime), nor behind a plain holder") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("shared");
  REQUIRE(shared(c, keys, "r1").acquired);
  CHECK_FALSE(take(c, keys, "w", 0).acquired);
  CHECK(queued(c, keys) == 0);
  CHECK(shared(c, keys, "r2").acquired);
  const auto other = fresh_keys("shared");
  REQUIRE(take(c, other, "p", 0).acquired);
  const auto w = writer(c, other, "w");
  CHECK_FALSE(w.acquired);
  CHECK(w.place == 0);
  CHECK(queued(c, other) == 0);
}

TEST_CASE("a queued plain waiter keeps its place while a plain holder holds") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("shared");
  REQUIRE(shared(c, keys, "r1").acquired);
  CHECK(take(c, keys, "f", 0, {10s, {}}).place == 1);
  CHECK(writer(c, keys, "w").place == 2);
  REQUIRE(lock::release(c, keys, "r1"));
  REQUIRE(take(c, keys, "f", 0, {10s, {}}).acquired);
  // Plain-held now: the writer's next attempt still refreshes its place.
  const auto again = writer(c, keys, "w", 30s);
  CHECK(again.place == 1);
  const auto expiry = std::stoll(c.command({"ZSCORE", keys.alive, "w"}).text);
  const auto now_ms = std::stoll(c.command({"TIME"}).elements[0].text) * 1000;
  CHECK(expiry > now_ms + 20'000);
}

TEST_CASE("a writer that leaves gives its place back") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("shared");
  REQUIRE(shared(c, keys, "r1").acquired);
  CHECK_FALSE(writer(c, keys, "w").acquired);
  CHECK_FALSE(shared(c, keys, "r2").acquired);
  lock::leave_queue(c, keys, "w");
  CHECK(queued(c, keys) == 0);
  CHECK(shared(c, keys, "r2").acquired);
}

TEST_CASE("a writer's place that is not refreshed ends by itself") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("shared");
  REQUIRE(shared(c, keys, "r1").acquired);
  CHECK_FALSE(writer(c, keys, "w", 100ms).acquired);
  CHECK_FALSE(shared(c, keys, "r2").acquired);
  std::this_thread::sleep_for(150ms);
  CHECK(shared(c, keys, "r2").acquired);
}

TEST_CASE("a nested shared hold gets in beside its live parent, queue or not") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("shared");
  REQUIRE(shared(c, keys, "outer").acquired);
  CHECK_FALSE(writer(c, keys, "w").acquired);
  const auto nested = [&](const std::string& token, const std::string& parent) {
    return seen(lock::try_acquire(
        c, keys, token, 30s, k_test_holder, {}, lock::k_shared_limit, parent));
  };
  CHECK_FALSE(nested("stranger", "not-a-holder").acquired);
  CHECK(nested("inner", "outer").acquired);
  REQUIRE(lock::release(c, keys, "outer"));
  REQUIRE(lock::release(c, keys, "inner"));
  // A plain holder is not passed, parent or not.
  REQUIRE(writer(c, keys, "w").acquired);
  CHECK_FALSE(nested("late", "outer").acquired);
}

TEST_CASE("a waiter outside --fair that finds a queue takes a place at its "
          "end, plain or shared") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("shared");
  REQUIRE(take(c, keys, "p", 0).acquired);
  CHECK(shared(c, keys, "f1", 10s).place == 1);
  // A plain waiter without --fair behind a plain holder and a queue.
  CHECK(writer(c, keys, "w").place == 2);
  REQUIRE(lock::release(c, keys, "p"));
  REQUIRE(shared(c, keys, "f1", 10s).acquired);
  // Later shared runs, with --fair or without, wait behind the writer.
  CHECK(take(c, keys, "s3", lock::k_shared_limit, {{}, 10s}).place == 2);
  CHECK_FALSE(shared(c, keys, "s4").acquired);
  REQUIRE(lock::release(c, keys, "f1"));
  REQUIRE(writer(c, keys, "w").acquired);
  REQUIRE(lock::release(c, keys, "w"));
  CHECK(take(c, keys, "s3", lock::k_shared_limit, {{}, 10s}).acquired);
}

TEST_CASE("a run nested in one that holds the lock: a shared one beside a "
          "shared parent gets in, one its parent excludes takes no place") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("shared");
  const auto nested = [&](const std::string& token,
                          std::int64_t limit,
                          const std::string& parent) {
    return seen(lock::try_acquire(
        c, keys, token, 30s, k_test_holder, {{}, 10s}, limit, parent));
  };
  REQUIRE(shared(c, keys, "outer").acquired);
  const auto child = nested("child", 0, "outer");
  CHECK_FALSE(child.acquired);
  CHECK(child.place == 0);
  CHECK(queued(c, keys) == 0);
  CHECK(shared(c, keys, "other").acquired);
  CHECK(nested("reader", lock::k_shared_limit, "outer").acquired);
  // Without a live parent, an ordinary waiter: it queues.
  CHECK(nested("child", 0, "gone").place == 1);
}

TEST_CASE("--fair: the queue's order; consecutive shared waiters get in") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("shared");
  REQUIRE(take(c, keys, "p", 0).acquired);
  CHECK_FALSE(shared(c, keys, "r1", 10s).acquired);
  CHECK_FALSE(take(c, keys, "w2", 0, {10s, {}}).acquired);
  CHECK_FALSE(shared(c, keys, "r3", 10s).acquired);
  CHECK_FALSE(shared(c, keys, "r4", 10s).acquired);
  REQUIRE(lock::release(c, keys, "p"));
  // Not the head: waits, though the lock is free.
  CHECK_FALSE(shared(c, keys, "r3", 10s).acquired);
  REQUIRE(shared(c, keys, "r1", 10s).acquired);
  // The plain w2 is next; r3, behind it, waits.
  const auto w2 = take(c, keys, "w2", 0, {10s, {}});
  CHECK_FALSE(w2.acquired);
  CHECK(w2.place == 1);
  CHECK_FALSE(shared(c, keys, "r3", 10s).acquired);
  REQUIRE(lock::release(c, keys, "r1"));
  REQUIRE(take(c, keys, "w2", 0, {10s, {}}).acquired);
  REQUIRE(lock::release(c, keys, "w2"));
  // r3 and r4 follow each other: both get in.
  REQUIRE(shared(c, keys, "r3", 10s).acquired);
  CHECK(shared(c, keys, "r4", 10s).acquired);
}

TEST_CASE("shared and semaphore holders refuse each other's limit") {
  auto c = connect_to_test_server();
  const auto reads = fresh_keys("shared");
  REQUIRE(shared(c, reads, "r").acquired);
  const auto semaphore_ask = take(c, reads, "s", 3);
  REQUIRE(semaphore_ask.limit_conflict);
  CHECK(*semaphore_ask.limit_conflict == lock::k_shared_limit);
  const auto permits = fresh_keys("shared");
  REQUIRE(take(c, permits, "s", 3).acquired);
  const auto shared_ask = shared(c, permits, "r");
  REQUIRE(shared_ask.limit_conflict);
  CHECK(*shared_ask.limit_conflict == 3);
}

TEST_CASE("a shared holder renews, checks and releases its own hold; status "
          "lists the holders") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("shared");
  REQUIRE(shared(c, keys, "a").acquired);
  REQUIRE(shared(c, keys, "b").acquired);
  CHECK(lock::renew(c, keys, "a", 60s).held);
  CHECK(lock::check(c, keys, "b"));
  CHECK_FALSE(lock::check(c, keys, "c"));
  const auto snapshot =
      lock::read_locks(c, lock::KeySpace{"test:"}, {keys.name});
  REQUIRE(snapshot.locks.size() == 1);
  const auto& state = snapshot.locks.front();
  CHECK(state.held);
  CHECK(state.limit == lock::k_shared_limit);
  REQUIRE(state.holders.size() == 2);
  CHECK(state.holders[1].token == "a"); // its lease ends last
  CHECK(state.holders[1].ttl_ms > 30'000);
  REQUIRE(lock::release(c, keys, "a"));
  REQUIRE(lock::release(c, keys, "b"));
  CHECK(c.command({"EXISTS", keys.lock, keys.holders}).integer == 0);
}
