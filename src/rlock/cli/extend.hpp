#pragma once

#include <rlock/cli/command_entry.hpp>

namespace rlock::cli {

// `rlock extend`: its entry in the command table.
CommandEntry extend_command();

// Renews the lease of a lock taken with acquire, never shortening it.
// Returns 0, or 1 when the token does not hold the lock.
int run(const ExtendOptions& options);

} // namespace rlock::cli
