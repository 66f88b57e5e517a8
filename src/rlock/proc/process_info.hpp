#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace rlock::proc {

// Returns the argv of process `pid` from /proc, empty when it cannot be read.
std::vector<std::string> command_line_of(pid_t pid);

} // namespace rlock::proc
