#include <rlock/util/error.hpp>

#include <cerrno>
#include <cstring>

namespace rlock {

void
throw_errno(const std::string& what) {
  throw Error(ErrorKind::system, what + ": " + std::strerror(errno));
}

void
throw_usage(const std::string& message) {
  throw Error(ErrorKind::bad_input, message);
}

} // namespace rlock
