#include <rlock/util/clock.hpp>

#include <cstdio>
#include <ctime>

namespace rlock {

BootTime
boot_now() {
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return std::chrono::seconds(now.tv_sec)
         + std::chrono::nanoseconds(now.tv_nsec);
}

std::int64_t
wall_now_ms() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return std::int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1'000'000;
}

std::string
format_iso8601_utc(std::int64_t epoch_ms) {
  const time_t seconds = static_cast<time_t>(epoch_ms / 1000);
  tm utc{};
  gmtime_r(&seconds, &utc);
  char text[80];
  std::snprintf(text,
                sizeof(text),
                "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                utc.tm_year + 1900,
                utc.tm_mon + 1,
                utc.tm_mday,
                utc.tm_hour,
                utc.tm_min,
                utc.tm_sec,
                static_cast<int>(epoch_ms % 1000));
  return text;
}

} // namespace rlock
