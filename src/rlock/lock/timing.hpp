#pragma once

#include <rlock/util/clock.hpp>
#include <rlock/util/duration.hpp>
#include <rlock/util/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace rlock::lock {

// When a lease is renewed and when its holder's child must be stopped.
//
// A lease's validity counts from the moment the acquire or renew request was
// sent: the server set its expiry later than that, so locally the lease is
// valid at least until sent + ttl, less `margin` for clock drift between this
// machine and the server. The child gets the kill signal `kill_after` before
// that point and SIGKILL at it, so it is dead before the lease can have
// expired on the server.
struct LeaseTiming {
  Duration ttl;
  Duration margin;         // ttl/100 + 5ms
  Duration kill_after;     // from the kill signal to SIGKILL
  Duration renew_interval; // ttl/3
  Duration retry_delay;    // after a failed renewal: min(ttl/20, 250ms)

  // Returns the last instant at which the lease sent at `sent` is surely valid.
  BootTime
  valid_until(BootTime sent) const {
    return sent + ttl - margin;
  }

  // Returns when the child gets the kill signal, for a lease sent at `sent`.
  BootTime
  kill_deadline(BootTime sent) const {
    return valid_until(sent) - kill_after;
  }
};

// Returns true when a renewal found the lease shorter than rlock's own
// accounting allows: `remaining_ms` (the PTTL the server had before
// extending; -1 without expiry) against the lease renewed `since_sent` ago,
// which must have at least ttl - since_sent - margin left. Redis expires keys
// by its own wall clock, so a forward step on the Redis host shortens the
// lease; so does anything that cut it on the server.
bool lease_cut_short(const LeaseTiming& timing,
                     Duration since_sent,
                     std::int64_t remaining_ms);

// The shortest lease rlock can renew and guard reliably.
inline constexpr Duration k_min_ttl = std::chrono::milliseconds(100);

// A lease is renewed every TTL/k_renew_divisor.
inline constexpr int k_renew_divisor = 3;

// The default kill_after: TTL/6, at most 10s.
inline constexpr int k_default_kill_after_divisor = 6;
inline constexpr Duration k_longest_default_kill_after =
    std::chrono::seconds(10);

// Returns the default --kill-after for a TTL: ttl/6, at most 10s.
Duration default_kill_after(Duration ttl);

// How a refusal names the two settings; cli/ gives its option names.
struct TimingNames {
  std::string ttl = "the TTL";
  std::string kill_after = "the kill-after";
};

// Returns the timing for `ttl` and an optional kill-after, or the reason the
// combination cannot be safe: the TTL is under 100ms, or the kill would come
// before the first renewal had time to extend the lease (it must be
// kill_after + margin <= ttl/2).
Expected<LeaseTiming> make_timing(Duration ttl,
                                  std::optional<Duration> kill_after,
                                  const TimingNames& names = {});

} // namespace rlock::lock
