#include <rlock/util/error.hpp>
#include <rlock/util/exit_codes.hpp>

#include <cerrno>
#include <cstring>

namespace rlock {

void
throw_errno(const std::string& what) {
  throw Error(exit_code::k_os_error, what + ": " + std::strerror(errno));
}

void
throw_usage(const std::string& message) {
  throw Error(exit_code::k_usage, message);
}

} // namespace rlock
