// rlock's exit codes, in one place. Besides these, rlock exits with the
// child's own status (0..125), or 128+N when the child died of signal N.
//
//   64  usage error (bad option, value, NAME or URL)
//   69  Redis unavailable: cannot connect, authentication refused, protocol
//       error or an error reply
//   70  the lock was lost while the child ran; the child was signalled
//   71  a system call failed (fork, pipe, ...)
//   74  output could not be written (status to a full disk)
//   75  not acquired: -n and held, or -w ran out (-E replaces it)
//  126  COMMAND found but not executable
//  127  COMMAND not found
#pragma once

#include <rlock/util/error.hpp>

namespace rlock::exit_code {

inline constexpr int k_success = 0;
inline constexpr int k_failure = 1;
inline constexpr int k_usage = 64;
inline constexpr int k_unavailable = 69;
inline constexpr int k_lock_lost = 70;
inline constexpr int k_os_error = 71;
inline constexpr int k_io_error = 74;
inline constexpr int k_not_acquired = 75;
inline constexpr int k_cannot_execute = 126;
inline constexpr int k_not_found = 127;
inline constexpr int k_signal_base = 128;

// Returns the exit code for an error of `kind`.
constexpr int
for_error(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::bad_input:
    return k_usage;
  case ErrorKind::unavailable:
    return k_unavailable;
  case ErrorKind::system:
    return k_os_error;
  case ErrorKind::output:
    return k_io_error;
  case ErrorKind::not_found:
    return k_not_found;
  case ErrorKind::not_executable:
    return k_cannot_execute;
  }
  return k_os_error;
}

} // namespace rlock::exit_code
