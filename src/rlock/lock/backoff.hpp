#pragma once

#include <rlock/util/duration.hpp>

namespace rlock::lock {

// Exponential backoff with full jitter: the n-th delay is drawn uniformly from
// [floor, min(cap, base * 2^n)], so waiters spread out instead of retrying in
// step.
class Backoff {
public:
  Backoff(Duration base, Duration cap, Duration floor);

  // Returns the next delay.
  Duration next();

private:
  Duration m_cap;
  Duration m_floor;
  Duration m_ceiling;
};

} // namespace rlock::lock
