#pragma once

#include <rlock/util/duration.hpp>
#include <rlock/util/expected.hpp>

#include <sys/types.h>

#include <functional>
#include <string>

namespace rlock::proc {

// Runs `command` through `/bin/sh -c` and returns the first line of its
// standard output, without its line end (LF, CRLF), the rest read and
// dropped; or why there is none: it could not start, exited with a status
// other than 0, died of a signal, did not finish within `timeout` (it is
// killed, its process group with it), was stopped through `cancel_fd`
// (readable: -1 for none), or printed an empty first line. A reason ends
// with the tail of what the command wrote to stderr, quoted and bounded;
// stderr is dropped on success. The command's stdin is /dev/null, its
// environment this process's, and it runs in a process group of its own
// with default signal dispositions and no signal blocked. It is our child
// while it runs, and the one thread that runs it waits for it:
// reap_children_except() leaves it alone. The output is never logged.
Expected<std::string>
first_line_of(const std::string& command, Duration timeout, int cancel_fd = -1);

// Calls `reap` with whether `pid` is a child that first_line_of() waits for
// itself, under the lock that keeps it from being reaped meanwhile.
void with_command_children(pid_t pid, const std::function<void(bool)>& reap);

} // namespace rlock::proc
