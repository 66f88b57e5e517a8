#pragma once

// A command's status as a POSIX shell reports it ($?): its exit code, 128+N
// when it died of signal N, 127 when it was not found, 126 when it could
// not be executed. What rlock itself exits with is cli/'s choice.
namespace rlock::proc {

inline constexpr int k_shell_signal_base = 128;
inline constexpr int k_shell_not_found = 127;
inline constexpr int k_shell_not_executable = 126;

// The child was reaped by someone else (SIGCHLD ignored): its status is lost.
inline constexpr int k_status_unknown = -1;

} // namespace rlock::proc
