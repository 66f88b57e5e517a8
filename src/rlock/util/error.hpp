#pragma once

#include <stdexcept>
#include <string>

namespace rlock {

// What kind of thing failed. Lower layers say which; cli/ alone turns a kind
// into an exit code (cli/exit_codes.hpp).
enum class ErrorKind {
  bad_input,      // a value given to rlock: an option, NAME, URL or file
  unavailable,    // the servers could not be reached or refused a step
  system,         // a system call failed
  output,         // output could not be written
  not_found,      // the command to run was not found
  not_executable, // the command to run was found but could not be executed
};

// The one error type: a one-line message for stderr and what kind of thing
// failed. Thrown from setup code, caught once in main().
class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), m_kind(kind) {
  }

  ErrorKind
  kind() const {
    return m_kind;
  }

private:
  ErrorKind m_kind;
};

// Throws Error(system, "<what>: <strerror(errno)>") for a failed libc call.
[[noreturn]] void throw_errno(const std::string& what);

// Throws Error(bad_input, message).
[[noreturn]] void throw_usage(const std::string& message);

} // namespace rlock
