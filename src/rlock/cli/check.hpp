#pragma once

#include <rlock/cli/command_entry.hpp>

namespace rlock::cli {

// `rlock check`: its entry in the command table.
CommandEntry check_command();

// Returns 0 when the token holds the lock with at least --min-validity
// left, else 1.
int run(const CheckOptions& options);

} // namespace rlock::cli
