#pragma once

#include <rlock/util/expected.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace rlock {

using Duration = std::chrono::nanoseconds;

// Parses "500ms", "30s", "5m", "1h", "1.5s" or a bare number of seconds
// ("0.5"). Fails on anything else: a sign, white space, exponents, NaN, inf, an
// unknown unit or more than 2^63-1 ns. Zero is accepted; callers that need a
// positive value check it themselves.
Expected<Duration> parse_duration(std::string_view text);

// Returns `duration` in whole milliseconds, cut toward zero.
inline std::int64_t
to_ms(Duration duration) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(duration)
      .count();
}

// Returns `ms` milliseconds, clamped to +-100 years: values read from a
// server are not trusted to fit, and the clamp leaves room to add to them.
Duration from_milliseconds(std::int64_t ms);

// Formats a duration for people: "350ms", "28.1s", "2m10s", "3h05m".
std::string format_duration(Duration duration);

// Formats a duration as seconds with up to three decimals: "19.7s", "0.005s".
std::string format_seconds(Duration duration);

} // namespace rlock
