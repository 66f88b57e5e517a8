#pragma once

#include <rlock/cli/command_entry.hpp>

namespace rlock::cli {

// `rlock status`: its entry in the command table.
CommandEntry status_command();

// Prints who holds which lock. Returns 0 when every named lock is held (or
// for a listing), 1 when a named lock is free. Throws Error when Redis is
// unavailable.
int run(const StatusOptions& options);

} // namespace rlock::cli
