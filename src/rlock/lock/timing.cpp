#include <rlock/lock/timing.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>

namespace rlock::lock {

using namespace std::chrono_literals;

Duration
default_kill_after(Duration ttl) {
  return std::min<Duration>(ttl / k_default_kill_after_divisor,
                            k_longest_default_kill_after);
}

bool
lease_cut_short(const LeaseTiming& timing,
                Duration since_sent,
                std::int64_t remaining_ms) {
  if (remaining_ms < 0) {
    return remaining_ms != -1;
  }
  const auto expected = timing.ttl - since_sent - timing.margin;
  return std::chrono::milliseconds(remaining_ms) < expected;
}

Expected<LeaseTiming>
make_timing(Duration ttl,
            std::optional<Duration> kill_after,
            const TimingNames& names) {
  LeaseTiming timing{};
  timing.ttl = ttl;
  timing.margin = ttl / 100 + 5ms;
  timing.kill_after = kill_after.value_or(default_kill_after(ttl));
  timing.renew_interval = ttl / k_renew_divisor;
  timing.retry_delay = std::min<Duration>(ttl / 20, 250ms);
  if (ttl < k_min_ttl) {
    return Expected<LeaseTiming>::failure(
        names.ttl + " " + format_seconds(ttl)
        + " is too short to renew safely (at least " + format_seconds(k_min_ttl)
        + ")");
  }
  // The kill must not come before half the TTL: the first renewal, at a
  // third, then has another sixth of the TTL to get through.
  const Duration limit = ttl / 2 - timing.margin;
  if (timing.kill_after > limit) {
    const std::string allowed = limit > Duration::zero()
                                    ? "must be under " + format_seconds(limit)
                                    : "use a longer " + names.ttl;
    return Expected<LeaseTiming>::failure(
        names.kill_after + " " + format_seconds(timing.kill_after)
        + " leaves no time to renew a " + format_seconds(ttl) + " lease ("
        + allowed + ")");
  }
  return timing;
}

} // namespace rlock::lock
