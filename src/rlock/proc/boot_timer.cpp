#include <rlock/proc/boot_timer.hpp>
#include <rlock/util/error.hpp>

#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace rlock::proc {

BootTimer::BootTimer()
    : m_fd(timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK)) {
  if (m_fd.get() < 0) {
    throw_errno("timerfd_create");
  }
}

void
BootTimer::arm(std::optional<BootTime> when) {
  itimerspec spec{};
  if (when) {
    // An absolute zero would disarm the timer: fire at least at 1ns.
    const auto ns = std::max<std::int64_t>(when->count(), 1);
    spec.it_value.tv_sec = ns / 1'000'000'000;
    spec.it_value.tv_nsec = ns % 1'000'000'000;
  }
  timerfd_settime(m_fd.get(), TFD_TIMER_ABSTIME, &spec, nullptr);
}

void
BootTimer::drain() const {
  std::uint64_t expirations = 0;
  [[maybe_unused]] const auto n =
      ::read(m_fd.get(), &expirations, sizeof(expirations));
}

} // namespace rlock::proc
