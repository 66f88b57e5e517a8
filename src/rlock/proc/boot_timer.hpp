#pragma once

#include <rlock/util/clock.hpp>
#include <rlock/util/fd.hpp>

#include <optional>

namespace rlock::proc {

// A timer on CLOCK_BOOTTIME, to wait on with poll(2): it fires on time even
// after a suspend.
class BootTimer {
public:
  // Throws Error (the system call failed).
  BootTimer();

  int
  fd() const {
    return m_fd.get();
  }

  // Fires at `when`; nothing disarms it.
  void arm(std::optional<BootTime> when);

  // Empties fd() after it fired.
  void drain() const;

private:
  UniqueFd m_fd;
};

} // namespace rlock::proc
