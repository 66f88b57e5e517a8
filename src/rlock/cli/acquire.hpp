#pragma once

#include <rlock/cli/command_entry.hpp>

namespace rlock::cli {

// `rlock acquire`: its entry in the command table.
CommandEntry acquire_command();

// Takes the lock for a script and prints its token (or JSON, or shell
// assignments). Returns 0, or the conflict code when not acquired.
int run(const AcquireOptions& options);

} // namespace rlock::cli
