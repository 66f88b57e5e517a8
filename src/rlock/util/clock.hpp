#pragma once

#include <rlock/util/duration.hpp>

#include <cstdint>

namespace rlock {

// A point on CLOCK_BOOTTIME: monotonic and counting time spent in suspend, so a
// lease's validity keeps running out while the machine sleeps.
using BootTime = std::chrono::nanoseconds;

// Returns the current CLOCK_BOOTTIME.
BootTime boot_now();

// Returns the wall-clock time in milliseconds since the Unix epoch.
std::int64_t wall_now_ms();

// Formats milliseconds since the epoch as ISO-8601 UTC:
// 2026-11-21T05:32:47.123Z
std::string format_iso8601_utc(std::int64_t epoch_ms);

} // namespace rlock
