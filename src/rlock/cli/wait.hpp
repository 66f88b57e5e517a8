#pragma once

#include <rlock/cli/command_entry.hpp>

namespace rlock::cli {

// `rlock wait`: its entry in the command table.
CommandEntry wait_command();

// Waits until the lock is free, without taking it. Returns 0, or the
// conflict code when -w ran out.
int run(const WaitFreeOptions& options);

} // namespace rlock::cli
