#pragma once

#include <rlock/util/duration.hpp>

#include <optional>

namespace rlock::lock {

// How many replicas must confirm each write of a lease (the acquire and
// every renewal) before it counts: a lease the master alone knows of is
// lost when a replica that never saw it is promoted.
struct ReplicaPolicy {
  enum class Mode {
    count,     // exactly `count` (0: no confirmation)
    all,       // every replica connected when the lock is taken
    automatic, // 1 when a replica is connected when the lock is taken, else 0
  };
  Mode mode = Mode::count;
  int count = 0;
  // The longest a write waits for its confirmations (WAIT's timeout).
  Duration timeout = std::chrono::seconds(1);
};

// Returns how many replicas must confirm, fixed when the lock is taken from
// the replicas then connected. It is never lowered later: a zombie or
// isolated master reports fewer replicas, and lowering the bar there would
// accept exactly what WAIT refuses.
int required_replicas(const ReplicaPolicy& policy, int connected);

// Returns how long a write may wait for its confirmations: the policy's
// timeout, cut to `limit` (the lease's time to spare), at least 1ms (WAIT
// with 0 would wait forever).
Duration confirmation_timeout(const ReplicaPolicy& policy, Duration limit);

} // namespace rlock::lock
