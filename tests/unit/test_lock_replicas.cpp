#include <rlock/lock/replicas.hpp>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using rlock::lock::confirmation_timeout;
using rlock::lock::ReplicaPolicy;
using rlock::lock::required_replicas;
using Mode = ReplicaPolicy::Mode;

TEST_CASE("required_replicas: a count stands, all and auto follow the replicas "
          "connected when the lock is taken") {
  CHECK(required_replicas({Mode::count, 0}, 3) == 0);
  CHECK(required_replicas({Mode::count, 2}, 0) == 2);
  CHECK(required_replicas({Mode::all, 0}, 3) == 3);
  CHECK(required_replicas({Mode::all, 0}, 0) == 0);
  CHECK(required_replicas({Mode::automatic, 0}, 3) == 1);
  CHECK(required_replicas({Mode::automatic, 0}, 0) == 0);
}

TEST_CASE("confirmation_timeout: the policy's, cut to the time to spare, never "
          "0 (WAIT 0 waits forever)") {
  const ReplicaPolicy policy{Mode::count, 1, 1s};
  CHECK(confirmation_timeout(policy, 10s) == 1s);
  CHECK(confirmation_timeout(policy, 250ms) == 250ms);
  CHECK(confirmation_timeout(policy, 0s) == 1ms);
  CHECK(confirmation_timeout(policy, -5s) == 1ms);
}
