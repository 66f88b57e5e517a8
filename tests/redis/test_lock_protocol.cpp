// The lock protocol against a real redis-server, started by
// tests/lib/with-redis.sh, which passes its URL in RLOCK_TEST_URL.
#include <rlock/cli/exit_codes.hpp>
#include <rlock/lock/deployment.hpp>
#include <rlock/lock/renewer.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/store/open_store.hpp>
#include <rlock/store/protocol.hpp>
#include <rlock/store/status.hpp>
#include <rlock/util/random.hpp>

#include <catch2/catch.hpp>

#include <poll.h>

#include "server.hpp"
#include <cstdlib>
#include <thread>

using namespace std::chrono_literals;
using namespace rlock;
using namespace rlock::testing;

namespace {

// A store of its own, on the test server, for a renewer.
std::unique_ptr<lock::LockStore>
test_store() {
  return lock::open_store(lock::Deployment{
      .topology = lock::Single{test_endpoint()}, .prefix = "test:"});
}

Seen
acquire(redis::Connection& c,
        const lock::LockKeys& keys,
        const std::string& token,
        Duration ttl = 30s) {
  return seen(lock::try_acquire(c, keys, token, ttl, k_test_holder));
}

std::int64_t
pttl(redis::Connection& c, const std::string& key) {
  return c.command({"PTTL", key}).integer;
}

} // namespace

TEST_CASE("acquire is exclusive") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  const auto first = acquire(c, keys, "token-a");
  REQUIRE(first.acquired);
  const auto second = acquire(c, keys, "token-b");
  CHECK_FALSE(second.acquired);
  CHECK(second.retry_ms > 0);
  CHECK(second.retry_ms <= 30'000);
  CHECK(second.holder == "tester@test-host:42");
  CHECK(second.command == "make check");
}

TEST_CASE("peek sees a free lock, then the holder acquire reports") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  CHECK(seen(lock::peek(c, keys)).acquired);
  REQUIRE(acquire(c, keys, "token-a", 20s).acquired);
  const auto busy = acquire(c, keys, "token-b");
  const auto look = seen(lock::peek(c, keys));
  CHECK_FALSE(look.acquired);
  CHECK(look.retry_ms > 0);
  CHECK(look.retry_ms <= 20'000);
  CHECK(look.holder == busy.holder);
  CHECK(look.command == busy.command);
  CHECK(look.place == 0);
  CHECK(look.holder_ttl_ms == 20'000);
  CHECK(busy.holder_ttl_ms == 20'000);
  CHECK(look.held_ms >= 0);
  CHECK(look.held_ms < 20'000);
  // The lock is untouched: its holder still releases it.
  CHECK(lock::release(c, keys, "token-a"));
}

TEST_CASE("the holder's own token acquires again, same fence, full lease") {
  // Tokens are random per run: the same token again is the same waiter,
  // whose earlier attempt took the lock but whose reply was lost.
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  const auto first = acquire(c, keys, "token-a", 1500ms);
  REQUIRE(first.acquired);
  c.command({"PEXPIRE", keys.lock, "200"});
  const auto again = acquire(c, keys, "token-a", 1500ms);
  CHECK(again.acquired);
  CHECK(again.fence == first.fence);
  CHECK(pttl(c, keys.lock) > 1000);
  CHECK_FALSE(acquire(c, keys, "token-b").acquired);
}

TEST_CASE("the holder's own token acquires again above a fence handed out "
          "since") {
  // Redlock: this server kept a stale lease of ours (the undo did not reach
  // it) while another holder's quorum raised its counter (raise_fence). Our
  // next attempt, granted here through our own token, must not hand back
  // the old fence, which is below that holder's.
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  const auto first = acquire(c, keys, "token-b", 1500ms);
  REQUIRE(first.acquired);
  const std::int64_t raised = first.fence + 1'000'000'000;
  c.command({"SET", keys.fence, std::to_string(raised), "PX", "60000"});
  const auto again = acquire(c, keys, "token-b", 1500ms);
  CHECK(again.acquired);
  CHECK(again.fence > raised);
  // The lock's fence, as status reads it, is the one handed out.
  CHECK(c.command({"HGET", keys.lock, "fence"}).text
        == std::to_string(again.fence));
  CHECK(pttl(c, keys.lock) > 1000);
}

TEST_CASE("acquire sets the lease with a millisecond expiry") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  REQUIRE(acquire(c, keys, "t", 1500ms).acquired);
  const auto left = pttl(c, keys.lock);
  CHECK(left > 1000);
  CHECK(left <= 1500);
}

TEST_CASE("a wrong token can neither renew nor release") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  REQUIRE(acquire(c, keys, "right", 2s).acquired);
  CHECK_FALSE(lock::renew(c, keys, "wrong", 60s).held);
  CHECK(pttl(c, keys.lock) <= 2000);
  CHECK_FALSE(lock::release(c, keys, "wrong"));
  CHECK(c.command({"EXISTS", keys.lock}).integer == 1);
  CHECK(lock::renew(c, keys, "right", 60s).held);
  CHECK(pttl(c, keys.lock) > 2000);
  CHECK(lock::release(c, keys, "right"));
  CHECK(c.command({"EXISTS", keys.lock}).integer == 0);
  CHECK_FALSE(lock::release(c, keys, "right"));
}

namespace {

// Acquires the free lock with `token`, checks that its fence is above
// `last`, and returns the fence.
std::int64_t
acquire_above(redis::Connection& c,
              const lock::LockKeys& keys,
              const std::string& token,
              std::int64_t last) {
  const auto attempt = acquire(c, keys, token);
  REQUIRE(attempt.acquired);
  CHECK(attempt.fence > last);
  return attempt.fence;
}

} // namespace

TEST_CASE("the fence strictly increases across releases and expiries") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  std::int64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    const std::string token = "t" + std::to_string(i);
    last = acquire_above(c, keys, token, last);
    REQUIRE(lock::release(c, keys, token));
  }
  const auto expiring = acquire(c, keys, "short", 50ms);
  REQUIRE(expiring.acquired);
  CHECK(expiring.fence > last);
  std::this_thread::sleep_for(150ms);
  const auto after_expiry = acquire(c, keys, "next");
  REQUIRE(after_expiry.acquired);
  CHECK(after_expiry.fence > expiring.fence);
  // The last fence outlives the lock for a bounded time only.
  const auto kept = pttl(c, keys.fence);
  CHECK(kept > 0);
  CHECK(kept <= 1000);
}

namespace {

std::int64_t
server_time_us(redis::Connection& c) {
  const auto time = c.command({"TIME"});
  return std::stoll(time.elements[0].text) * 1'000'000
         + std::stoll(time.elements[1].text);
}

} // namespace

TEST_CASE("the fence strictly increases when Redis loses the fence key") {
  // FLUSHALL, a restart without persistence and a failover to a replica that
  // missed the last acquisition all lose the keys of a NAME.
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  std::int64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    last = acquire_above(c, keys, "t" + std::to_string(i), last);
    c.command({"DEL", keys.lock, keys.fence});
  }
}

TEST_CASE("fences are the server's clock in microseconds, exact in JSON") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  const auto before = server_time_us(c);
  const auto attempt = acquire(c, keys, "t");
  const auto after = server_time_us(c);
  REQUIRE(attempt.acquired);
  CHECK(attempt.fence >= before);
  CHECK(attempt.fence <= after);
  CHECK(attempt.fence < (std::int64_t{1} << 53));
  // status reads the same fence from the lock.
  CHECK(std::stoll(c.command({"HGET", keys.lock, "fence"}).text)
        == attempt.fence);
}

TEST_CASE("a fence ahead of the server's clock is kept until the clock passes "
          "it") {
  // As after the server's clock stepped back: the next fence goes on from the
  // last one, and its key stays until the clock has caught up.
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  const auto ahead = server_time_us(c) + 60'000'000;
  c.command({"SET", keys.fence, std::to_string(ahead)});
  const auto attempt = acquire(c, keys, "t");
  REQUIRE(attempt.acquired);
  CHECK(attempt.fence == ahead + 1);
  const auto kept = pttl(c, keys.fence);
  CHECK(kept > 60'000);
  CHECK(kept <= 61'100);
}

TEST_CASE("a NAME used once leaves no key behind a second after its release") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  REQUIRE(acquire(c, keys, "once").acquired);
  REQUIRE(lock::release(c, keys, "once"));
  std::this_thread::sleep_for(1100ms);
  for (const auto& key : keys.script_keys()) {
    CHECK(c.command({"EXISTS", key}).integer == 0);
  }
}

TEST_CASE("renew: exact sets the lease, at_least only lengthens it") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  REQUIRE(acquire(c, keys, "t", 10s).acquired);
  const auto shorter = lock::renew(c, keys, "t", 1s, lock::RenewMode::at_least);
  CHECK(shorter.held);
  CHECK(shorter.remaining_before_ms > 9000);
  CHECK(pttl(c, keys.lock) > 9000);
  const auto longer = lock::renew(c, keys, "t", 20s, lock::RenewMode::at_least);
  CHECK(longer.held);
  CHECK(pttl(c, keys.lock) > 19'000);
  const auto exact = lock::renew(c, keys, "t", 2s);
  CHECK(exact.held);
  CHECK(exact.remaining_before_ms > 19'000);
  CHECK(pttl(c, keys.lock) <= 2000);
  // Zero is the length it was last set to.
  REQUIRE(c.command({"PEXPIRE", keys.lock, "500"}).integer == 1);
  const auto same = lock::renew(c, keys, "t", 0s);
  CHECK(same.remaining_before_ms <= 500);
  CHECK(pttl(c, keys.lock) > 1500);
  CHECK(c.command({"HGET", keys.lock, "renewals"}).text == "3");
  const auto other = lock::renew(c, keys, "other", 1s);
  CHECK_FALSE(other.held);
  CHECK(other.remaining_before_ms == -2);
}

TEST_CASE("a renewer takes a lease shorter than it set as lost") {
  // Redis expires keys by its wall clock: a forward step there, or a cut from
  // elsewhere, leaves less than rlock counts on.
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  const auto timing = lock::make_timing(600ms, std::nullopt).value();
  const auto attempt = acquire(c, keys, "mine", timing.ttl);
  REQUIRE(attempt.acquired);
  lock::Renewer renewer(test_store(), keys.name, "mine", timing, attempt.sent);
  renewer.start();
  c.command({"PEXPIRE", keys.lock, "350"});
  pollfd wake{renewer.wakeup_fd(), POLLIN, 0};
  const auto give_up = boot_now() + 2s;
  while (!renewer.loss() && boot_now() < give_up) {
    ::poll(&wake, 1, 100);
    renewer.drain_wakeups();
  }
  REQUIRE(renewer.loss());
  CHECK_THAT(*renewer.loss(), Catch::Contains("clock stepped forward"));
}

TEST_CASE("renewal keeps a lock alive well past its TTL") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  const auto timing = lock::make_timing(300ms, std::nullopt).value();
  const auto attempt = acquire(c, keys, "renewed", timing.ttl);
  REQUIRE(attempt.acquired);
  {
    lock::Renewer renewer(
        test_store(), keys.name, "renewed", timing, attempt.sent);
    renewer.start();
    std::this_thread::sleep_for(1200ms); // four TTLs
    CHECK_FALSE(renewer.loss());
    CHECK(renewer.kill_deadline() > boot_now());
    CHECK(c.command({"EXISTS", keys.lock}).integer == 1);
    const auto renewals = c.command({"HGET", keys.lock, "renewals"});
    CHECK(std::stoll(renewals.text) >= 3);
  }
  // Once the renewer is gone the lease runs out by itself.
  std::this_thread::sleep_for(400ms);
  CHECK(c.command({"EXISTS", keys.lock}).integer == 0);
}

TEST_CASE("a renewer reports a deleted lock as lost at its next renewal") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  const auto timing = lock::make_timing(300ms, std::nullopt).value();
  const auto attempt = acquire(c, keys, "mine", timing.ttl);
  REQUIRE(attempt.acquired);
  lock::Renewer renewer(test_store(), keys.name, "mine", timing, attempt.sent);
  renewer.start();
  c.command({"DEL", keys.lock});
  pollfd wake{renewer.wakeup_fd(), POLLIN, 0};
  const auto give_up = boot_now() + 2s;
  while (!renewer.loss() && boot_now() < give_up) {
    ::poll(&wake, 1, 100);
    renewer.drain_wakeups();
  }
  REQUIRE(renewer.loss());
  CHECK_THAT(*renewer.loss(), Catch::Contains("deleted or taken over"));
}

TEST_CASE("SCRIPT FLUSH mid-run does not break renew or release") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  REQUIRE(acquire(c, keys, "flushed").acquired);
  REQUIRE(c.command({"SCRIPT", "FLUSH"}).type == redis::Reply::Type::status);
  CHECK(lock::renew(c, keys, "flushed", 30s).held);
  REQUIRE(c.command({"SCRIPT", "FLUSH"}).type == redis::Reply::Type::status);
  CHECK(lock::release(c, keys, "flushed"));
  REQUIRE(c.command({"SCRIPT", "FLUSH"}).type == redis::Reply::Type::status);
  CHECK(acquire(c, keys, "again").acquired);
}

TEST_CASE("a key of the wrong type is an error, and nothing is deleted") {
  auto c = connect_to_test_server();
  const auto keys = fresh_keys("lock");
  c.command({"SET", keys.lock, "not a hash"});
  CHECK_THROWS_AS(lock::release(c, keys, "x"), Error);
  CHECK_THROWS_AS(lock::renew(c, keys, "x", 1s), Error);
  CHECK(c.command({"GET", keys.lock}).type == redis::Reply::Type::string);
}

TEST_CASE("status reads held and free locks, and lists by prefix") {
  auto c = connect_to_test_server();
  const std::string prefix = "status-" + random_token().substr(0, 6) + ":";
  const auto a = lock::keys_for(prefix, "b-second");
  const auto b = lock::keys_for(prefix, "a-first");
  REQUIRE(seen(lock::try_acquire(c, a, "ta", 30s, k_test_holder)).acquired);
  REQUIRE(seen(lock::try_acquire(c, b, "tb", 30s, k_test_holder)).acquired);
  auto snapshot =
      lock::read_locks(c, lock::KeySpace{prefix}, {"b-second", "free"});
  REQUIRE(snapshot.locks.size() == 2);
  CHECK(snapshot.locks[0].held);
  CHECK(snapshot.locks[0].token == "ta");
  CHECK(snapshot.locks[0].user == "tester");
  CHECK(snapshot.locks[0].pid == 42);
  CHECK(snapshot.locks[0].ttl_ms > 0);
  CHECK(snapshot.locks[0].acquired_ms > 0);
  CHECK(snapshot.server_now_ms >= snapshot.locks[0].acquired_ms);
  CHECK_FALSE(snapshot.locks[1].held);
  snapshot = lock::list_locks(c, lock::KeySpace{prefix});
  REQUIRE(snapshot.locks.size() == 2);
  CHECK(snapshot.locks[0].name == "a-first");
  CHECK(snapshot.locks[1].name == "b-second");
}

TEST_CASE("replicas that do not confirm within a short reply timeout: "
          "unconfirmed, not a connection timed out") {
  lock::Deployment deployment{.topology = lock::Single{test_endpoint()},
                              .prefix = "test:"};
  // WAIT gets 3/4 of the reply timeout (750ms), not the 5s asked; a
  // sanitizer build's slow replies still fit in the quarter left.
  deployment.connect.io_timeout = 1s;
  deployment.replicas.count = 1; // the test server has no replica
  deployment.replicas.timeout = 5s;
  const auto store = lock::open_store(deployment);
  const lock::LockRequest request{"unconfirmed-" + random_token().substr(0, 8),
                                  random_token(),
                                  30s,
                                  k_test_holder};
  try {
    store->acquire(request, lock::WaiterEntry{});
    FAIL("acquired without a replica");
  } catch (const redis::Failure& failure) {
    CHECK(failure.failure_kind() == redis::FailureKind::unconfirmed);
  }
  // The unconfirmed acquire was undone.
  CHECK(seen(store->peek(request.name)).acquired);
}

TEST_CASE("a listing skips a foreign key under the prefix; by name it fails") {
  auto c = connect_to_test_server();
  const std::string prefix = "foreign-" + random_token().substr(0, 6) + ":";
  const lock::KeySpace space{prefix};
  REQUIRE(seen(lock::try_acquire(
                   c, lock::keys_for(space, "mine"), "t", 30s, k_test_holder))
              .acquired);
  c.command({"SET", lock::keys_for(space, "theirs").lock, "a string"});
  const auto listed = lock::list_locks(c, space);
  REQUIRE(listed.locks.size() == 1);
  CHECK(listed.locks[0].name == "mine");
  CHECK_THROWS_AS(lock::read_locks(c, space, {"theirs"}), Error);
}

TEST_CASE("an unreachable server is reported with its address") {
  auto endpoint = redis::parse_url("redis://127.0.0.1:1").value();
  try {
    redis::Connection::open(endpoint, {});
    FAIL("connected to port 1");
  } catch (const Error& e) {
    CHECK(rlock::exit_code::for_error(e.kind()) == 69);
    CHECK_THAT(e.what(), Catch::Contains("127.0.0.1:1"));
  }
}
