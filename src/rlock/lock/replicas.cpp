#include <rlock/lock/replicas.hpp>

#include <algorithm>

namespace rlock::lock {

int
required_replicas(const ReplicaPolicy& policy, int connected) {
  switch (policy.mode) {
  case ReplicaPolicy::Mode::count:
    return policy.count;
  case ReplicaPolicy::Mode::all:
    return connected;
  case ReplicaPolicy::Mode::automatic:
    return connected > 0 ? 1 : 0;
  }
  return policy.count;
}

Duration
confirmation_timeout(const ReplicaPolicy& policy, Duration limit) {
  return std::max<Duration>(std::min(policy.timeout, limit),
                            std::chrono::milliseconds(1));
}

} // namespace rlock::lock
