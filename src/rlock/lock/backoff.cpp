#include <rlock/lock/backoff.hpp>
#include <rlock/util/random.hpp>

#include <algorithm>

namespace rlock::lock {

Backoff::Backoff(Duration base, Duration cap, Duration floor)
    : m_cap(cap), m_floor(floor), m_ceiling(base) {
}

Duration
Backoff::next() {
  const auto span = std::max<Duration>(m_ceiling - m_floor, Duration::zero());
  const auto delay = m_floor + Duration(random_below_or_equal(span.count()));
  m_ceiling = std::min(m_ceiling * 2, m_cap);
  return delay;
}

} // namespace rlock::lock
