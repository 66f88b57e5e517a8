#pragma once

#include <rlock/util/fd.hpp>

namespace rlock {

// A non-blocking, close-on-exec eventfd: one thread signals, another polls
// it among its other descriptors. Throws when the kernel refuses one.
UniqueFd make_eventfd();

// Makes `fd` (an eventfd) readable; never fails.
void signal_eventfd(int fd);

} // namespace rlock
