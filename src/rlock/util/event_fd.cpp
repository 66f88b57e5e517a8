#include <rlock/util/error.hpp>
#include <rlock/util/event_fd.hpp>

#include <sys/eventfd.h>

#include <cstdint>

namespace rlock {

UniqueFd
make_eventfd() {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) {
    throw_errno("eventfd");
  }
  return UniqueFd(fd);
}

void
signal_eventfd(int fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(fd, &one, sizeof(one));
}

} // namespace rlock
