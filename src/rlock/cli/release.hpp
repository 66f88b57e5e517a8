#pragma once

#include <rlock/cli/command_entry.hpp>

namespace rlock::cli {

// `rlock release`: its entry in the command table.
CommandEntry release_command();

// Releases the lock the token holds, or any holder's with --force. Returns
// 0, or 1 when the token does not hold it (or, forced, it was free).
int run(const ReleaseOptions& options);

} // namespace rlock::cli
