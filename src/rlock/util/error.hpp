#pragma once

#include <stdexcept>
#include <string>

namespace rlock {

// The one error type: a one-line message for stderr and the exit code that
// goes with it. Thrown from setup code, caught once in main().
class Error : public std::runtime_error {
public:
  Error(int exit_code, const std::string& message)
      : std::runtime_error(message), m_exit_code(exit_code) {
  }

  int
  exit_code() const {
    return m_exit_code;
  }

private:
  int m_exit_code;
};

// Throws Error(k_os_error, "<what>: <strerror(errno)>") for a failed libc call.
[[noreturn]] void throw_errno(const std::string& what);

// Throws Error(k_usage, message).
[[noreturn]] void throw_usage(const std::string& message);

} // namespace rlock
